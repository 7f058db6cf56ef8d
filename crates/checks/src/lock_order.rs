//! Whole-program lock checks that need every function's results: the
//! lock-order graph and its cycles, and IRQ safety.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use findings::{Finding, Note, Severity};
use petgraph::graph::{DiGraph, NodeIndex};
use program::FnId;

use analysis::{Nesting, Summary};
use memory::LockClass;

use crate::Input;
use crate::lock_state::{chain_notes, locks_on_return};
use crate::text::{loc, name};

findings::declare_kind! {
    /// A cycle in the whole-program lock-order graph (ABBA): two paths take the
    /// same locks in different orders, and can deadlock against each other. The
    /// notes give the acquisition path of each edge.
    ///
    /// Example:
    ///
    /// ```text
    /// fn f(p: &Proc) { let _a = p.refs.lock(); let _b = p.inner.lock(); }
    /// fn g(p: &Proc) { let _b = p.inner.lock(); let _a = p.refs.lock(); }   // error
    /// ```
    ///
    /// Fix: take the two locks in one order everywhere.
    pub LOCK_ORDER_INVERSION, "lock-order-inversion", Error, "lock order",
    "a cycle in the whole-program lock-order graph, with the acquisition path of each edge"
}

/// Every cycle of the class graph, once (one per strongly connected set of
/// classes, the shortest cycle through its first class), with the witness
/// of each edge.
pub(crate) fn cycles(
    input: &Input<'_>,
    edges: &[(FnId, Nesting)],
    summaries: &[Summary],
) -> Vec<Finding> {
    // The first witness of each class edge, in a deterministic order.
    let mut witness: BTreeMap<(LockClass, LockClass), (FnId, &Nesting)> = BTreeMap::new();
    for (f, e) in edges {
        let key = (e.held.lock.class().clone(), e.take.lock.class().clone());
        witness.entry(key).or_insert((*f, e));
    }
    let mut graph: DiGraph<LockClass, ()> = DiGraph::new();
    let mut nodes: BTreeMap<LockClass, NodeIndex> = BTreeMap::new();
    for (a, b) in witness.keys() {
        for c in [a, b] {
            if !nodes.contains_key(c) {
                nodes.insert(c.clone(), graph.add_node(c.clone()));
            }
        }
        graph.add_edge(nodes[a], nodes[b], ());
    }
    let mut out = Vec::new();
    for scc in petgraph::algo::tarjan_scc(&graph) {
        if scc.len() < 2 {
            continue;
        }
        let members: BTreeSet<NodeIndex> = scc.iter().copied().collect();
        let Some(&start) = scc.iter().min_by_key(|n| graph[**n].clone()) else {
            continue;
        };
        let Some(cycle) = shortest_cycle(&graph, start, &members) else {
            continue;
        };
        out.push(cycle_finding(
            input, &graph, &cycle, &witness, &members, summaries,
        ));
    }
    out
}

/// The shortest cycle through `start` inside `members` (breadth first).
fn shortest_cycle(
    graph: &DiGraph<LockClass, ()>,
    start: NodeIndex,
    members: &BTreeSet<NodeIndex>,
) -> Option<Vec<NodeIndex>> {
    let mut parent: BTreeMap<NodeIndex, NodeIndex> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(n) = queue.pop_front() {
        let mut next: Vec<NodeIndex> = graph.neighbors(n).collect();
        next.sort_by_key(|m| graph[*m].clone());
        for m in next {
            if !members.contains(&m) {
                continue;
            }
            if m == start {
                let mut cycle = vec![n];
                let mut cur = n;
                while cur != start {
                    cur = parent[&cur];
                    cycle.push(cur);
                }
                cycle.reverse();
                return Some(cycle);
            }
            if let std::collections::btree_map::Entry::Vacant(e) = parent.entry(m) {
                e.insert(n);
                queue.push_back(m);
            }
        }
    }
    None
}

fn cycle_finding(
    input: &Input<'_>,
    graph: &DiGraph<LockClass, ()>,
    cycle: &[NodeIndex],
    witness: &BTreeMap<(LockClass, LockClass), (FnId, &Nesting)>,
    members: &BTreeSet<NodeIndex>,
    summaries: &[Summary],
) -> Finding {
    let is_lock_fn = |g: FnId| locks_on_return(&summaries[g.index()]);
    let classes: Vec<&LockClass> = cycle.iter().map(|n| &graph[*n]).collect();
    let order: Vec<String> = classes
        .iter()
        .chain(classes.first())
        .map(|c| format!("`{c}`"))
        .collect();
    let first = (classes[0].clone(), classes[1 % classes.len()].clone());
    let (f0, e0) = witness[&first];
    let mut finding = Finding::new(
        &LOCK_ORDER_INVERSION,
        Severity::Error,
        format!(
            "lock order inversion: {} are acquired in a cycle",
            order.join(" → ")
        ),
    )
    .at(loc(input, f0, e0.site))
    .label(format!(
        "`{}` is acquired here while `{}` is held",
        first.1, first.0
    ))
    .in_function(f0)
    .subject(
        classes
            .iter()
            .map(|c| c.0.as_str())
            .collect::<Vec<_>>()
            .join(" -> "),
    );
    for i in 0..classes.len() {
        let a = classes[i].clone();
        let b = classes[(i + 1) % classes.len()].clone();
        let (f, e) = witness[&(a.clone(), b.clone())];
        finding = finding.note(Note::at(
            loc(input, f, e.held.at.span),
            format!(
                "path {}: `{}` holds `{a}`, acquired here by `{}`…",
                i + 1,
                name(input, f),
                name(input, e.held.at.callee)
            ),
        ));
        finding = finding.note(Note::at(
            loc(input, f, e.site),
            format!(
                "…then acquires `{b}` here, through `{}`",
                name(input, e.callee)
            ),
        ));
        for n in chain_notes(input, &e.take, 1, &is_lock_fn) {
            finding = finding.note(n);
        }
    }
    if members.len() > cycle.len() {
        let others: Vec<String> = members
            .iter()
            .filter(|n| !cycle.contains(n))
            .map(|n| format!("`{}`", graph[*n]))
            .collect();
        finding = finding.note(Note::text(format!(
            "the classes {} are part of further cycles with these",
            others.join(", ")
        )));
    }
    finding
        .note(Note::text(
            "two CPUs that each run one of these paths can each hold the lock the other waits for",
        ))
        .note(Note::help(
            "acquire these locks in one global order everywhere",
        ))
}
