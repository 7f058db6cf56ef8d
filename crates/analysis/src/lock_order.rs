//! Whole-program lock checks that need every function's results: the
//! lock-order graph and its cycles, and IRQ safety.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use findings::{Finding, Note, Severity};
use petgraph::graph::{DiGraph, NodeIndex};
use program::FnId;
use spec::LockKind;

use crate::Input;
use crate::body::Nesting;
use crate::lock_text::{chain_notes, loc, locks_on_return, take_site};
use crate::summary::{Summary, Take};
use memory::LockClass;

fn name(input: &Input<'_>, f: FnId) -> String {
    input.program.function(f).name.clone()
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
        "lock-order-inversion",
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

/// The hard-IRQ handlers: annotated `#[kanalyze::irq_handler]`, or
/// registered with a C function whose spec calls the callback in hard-IRQ
/// context (`request_irq`, `request_threaded_irq` and their `devm_` forms).
pub(crate) fn irq_handlers(
    input: &Input<'_>,
    registrations: &[crate::callbacks::Registration],
) -> Vec<(FnId, String)> {
    let program = input.program;
    let mut out: Vec<(FnId, String)> = Vec::new();
    for (id, _, inst) in program.bodies() {
        let annotated = input.annotations.get(&inst.item_path).is_some_and(|a| {
            a.kanalyze
                .iter()
                .any(|(k, _)| *k == annotations::KanalyzeAnnotation::IrqHandler)
        });
        if annotated {
            out.push((id, "annotated `#[kanalyze::irq_handler]`".to_string()));
        }
    }
    for r in registrations {
        if r.contract.hardirq && !out.iter().any(|(g, _)| *g == r.callback) {
            out.push((
                r.callback,
                match r.by {
                    Some(by) => format!("{} by `{}`", r.how, program.function(by).name),
                    None => r.how.clone(),
                },
            ));
        }
    }
    out
}

fn spinning(kind: LockKind) -> bool {
    matches!(
        kind,
        LockKind::Spin
            | LockKind::SpinIrq
            | LockKind::SpinBh
            | LockKind::RawSpin
            | LockKind::ReadLock
            | LockKind::WriteLock
            | LockKind::RawSpinIrq
            | LockKind::ReadLockIrq
            | LockKind::WriteLockIrq
    )
}

/// A spinning lock class taken in hard-IRQ context and, elsewhere, with
/// interrupts enabled: the interrupt can arrive while the lock is held on
/// the same CPU, and its handler then spins forever.
/// The findings, and how many handlers there are.
pub(crate) fn irq_safety(
    input: &Input<'_>,
    summaries: &[Summary],
    registrations: &[crate::callbacks::Registration],
) -> (Vec<Finding>, usize) {
    let handlers = irq_handlers(input, registrations);
    let is_lock_fn = |g: FnId| locks_on_return(&summaries[g.index()]);
    if handlers.is_empty() {
        return (Vec::new(), 0);
    }
    let program = input.program;
    let mut in_irq: BTreeMap<LockClass, (FnId, &Take, &str)> = BTreeMap::new();
    for (h, why) in &handlers {
        for t in &summaries[h.index()].takes {
            if spinning(t.kind) {
                in_irq
                    .entry(t.lock.class().clone())
                    .or_insert((*h, t, why.as_str()));
            }
        }
    }
    // Process context: every function nothing in the program calls (entry
    // points, callbacks from C), except the handlers themselves.
    let mut out = Vec::new();
    let mut reported: BTreeSet<LockClass> = BTreeSet::new();
    for (id, _, _) in program.bodies() {
        if handlers.iter().any(|(h, _)| *h == id) || !program.callers(id).is_empty() {
            continue;
        }
        for t in &summaries[id.index()].takes {
            if t.irqs_disabled || t.trylock || !spinning(t.kind) {
                continue;
            }
            let class = t.lock.class();
            let Some((h, irq_take, why)) = in_irq.get(class) else {
                continue;
            };
            if !reported.insert(class.clone()) {
                continue;
            }
            let (root_fn, root_site) = take_site(t);
            let (irq_fn, irq_site) = take_site(irq_take);
            let mut finding = Finding::new(
                "irq-unsafe-lock",
                Severity::Error,
                format!(
                    "lock `{class}` is acquired in hard-IRQ context and, elsewhere, with interrupts enabled"
                ),
            )
            .at(loc(input, root_fn, root_site))
            .label("acquired here with interrupts enabled")
            .in_function(id)
            .subject(class.0.clone());
            for n in chain_notes(input, t, 1, &is_lock_fn) {
                finding = finding.note(n);
            }
            finding = finding.note(Note::at(
                loc(input, irq_fn, irq_site),
                format!(
                    "it is acquired here in hard-IRQ context: `{}` is an interrupt handler ({why})",
                    name(input, *h)
                ),
            ));
            for n in chain_notes(input, irq_take, 1, &is_lock_fn) {
                finding = finding.note(n);
            }
            finding = finding
            .note(Note::text(
                "if the interrupt arrives on this CPU while the lock is held here, the handler spins on it forever",
            ))
            .note(Note::help(
                "take the lock with interrupts disabled outside the handler (`spin_lock_irqsave`, `SpinLockIrq`)",
            ));
            out.push(finding);
        }
    }
    (out, handlers.len())
}
