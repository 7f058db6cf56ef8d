//! The worst-case depth below every function, bottom-up over the call
//! graph's strongly connected components.
//!
//! A function's depth is what a call of it costs ([`Frame::cost`]) plus the
//! deepest of its callees: every call, drop, `dyn` and fn-pointer edge, so
//! an indirect call takes its worst target in the program. A recursive
//! component (a cycle) is bounded only when every cycle in it passes
//! through a function annotated `#[kanalyze::recursion_bound(N)]` (one on
//! a stack at most `N` times at once): then a stack holds at most
//! `D = ΣN` activations of annotated members, and between them paths
//! through the others, which are acyclic, so at most `D + 1` times each of
//! those; the component costs `Σ N·cost(a) + (D + 1)·Σ cost(g)`, and then
//! its deepest exit. An unbounded component has no worst case: its members
//! get the depth of the deepest path that visits each of them once (a
//! depth-first search's tree, cross and forward edges; the back edges that
//! close a cycle are left out), a lower bound, and are marked unbounded.

use std::collections::HashMap;

use petgraph::graph::NodeIndex;
use program::{Edge, FnId, Program};

use crate::frames::{Frame, walks_into};

/// A recursive component of the call graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    /// Sorted.
    pub members: Vec<FnId>,
    pub bound: Bound,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Every cycle passes through an annotated member.
    Bounded {
        /// The annotated members with their bounds.
        annotated: Vec<(FnId, u32)>,
        /// What the component costs at most, its exits not included.
        bytes: u64,
        /// The deepest exit: the member, the callee outside, the site.
        exit: Option<(FnId, FnId, Edge)>,
    },
    /// Some cycle passes through no annotated member.
    Unbounded {
        /// The annotated members (their bounds do not cover every cycle).
        annotated: Vec<(FnId, u32)>,
    },
}

impl Cycle {
    pub fn is_bounded(&self) -> bool {
        matches!(self.bound, Bound::Bounded { .. })
    }
}

/// The result of the walk for one function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// Bytes from the call of the function to the deepest point below it;
    /// for a member of an unbounded cycle, of the deepest path that visits
    /// each member once.
    pub depth: u64,
    /// The callee the worst path goes on to, and the site.
    pub next: Option<(FnId, Edge)>,
    /// Its recursive component, as an index of [`Walk::cycles`].
    pub cycle: Option<u32>,
}

pub struct Walk {
    /// The bytes each call pushes besides the callee's frame.
    pub ret: u64,
    pub frames: Vec<Frame>,
    /// By `FnId`.
    pub nodes: Vec<Node>,
    pub cycles: Vec<Cycle>,
}

/// One step of a root's worst path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `f` is called; by `from` at `edge` (`None` for the root).
    Call { f: FnId, from: Option<(FnId, Edge)> },
    /// A bounded cycle, entered at `f` (from `from`), costing at most what
    /// its bound allows.
    Cycle {
        cycle: u32,
        f: FnId,
        from: Option<(FnId, Edge)>,
    },
}

impl Step {
    pub fn function(&self) -> FnId {
        match self {
            Step::Call { f, .. } | Step::Cycle { f, .. } => *f,
        }
    }

    pub fn from(&self) -> Option<(FnId, Edge)> {
        match self {
            Step::Call { from, .. } | Step::Cycle { from, .. } => *from,
        }
    }
}

/// Walks the whole program. `bounds` gives each function's
/// `recursion_bound`, if it has one.
pub fn walk(program: &Program, frames: Vec<Frame>, ret: u64, bounds: &HashMap<FnId, u32>) -> Walk {
    let n = program.functions.len();
    let mut nodes = vec![Node::default(); n];
    let mut cycles: Vec<Cycle> = Vec::new();
    let cost = |f: FnId| frames[f.index()].cost(ret);
    // Callees first: petgraph's Tarjan gives the components in reverse
    // topological order.
    let components = petgraph::algo::tarjan_scc(&program.graph);
    let mut component_of: Vec<u32> = vec![0; n];
    for (i, c) in components.iter().enumerate() {
        for node in c {
            component_of[node.index()] = i as u32;
        }
    }
    let out_edges = |f: FnId| -> Vec<(FnId, Edge)> {
        if walks_into(program, f) {
            program.callees(f)
        } else {
            Vec::new()
        }
    };
    for (ci, component) in components.iter().enumerate() {
        let mut members: Vec<FnId> = component.iter().map(|n| FnId(n.index() as u32)).collect();
        members.sort();
        let recursive =
            members.len() > 1 || out_edges(members[0]).iter().any(|(g, _)| *g == members[0]);
        if !recursive {
            let f = members[0];
            let (depth, next) = deepest(&nodes, &out_edges(f));
            nodes[f.index()] = Node {
                depth: cost(f).saturating_add(depth),
                next,
                cycle: None,
            };
            continue;
        }
        let inside = |g: FnId| component_of[g.index()] == ci as u32;
        let edges: HashMap<FnId, Vec<(FnId, Edge)>> =
            members.iter().map(|&f| (f, out_edges(f))).collect();
        let annotated: Vec<(FnId, u32)> = members
            .iter()
            .filter_map(|f| bounds.get(f).map(|b| (*f, *b)))
            .collect();
        let cycle_index = cycles.len() as u32;
        // Bounded when the members without a bound form no cycle.
        let unannotated: Vec<FnId> = members
            .iter()
            .copied()
            .filter(|f| !bounds.contains_key(f))
            .collect();
        let bounded = !annotated.is_empty()
            && !has_cycle(&unannotated, |f| {
                edges[&f]
                    .iter()
                    .map(|(g, _)| *g)
                    .filter(|g| inside(*g) && !bounds.contains_key(g))
                    .collect()
            });
        if bounded {
            let activations: u64 = annotated.iter().map(|(_, b)| u64::from(*b)).sum();
            let mut bytes: u64 = 0;
            for (a, b) in &annotated {
                bytes = bytes.saturating_add(u64::from(*b).saturating_mul(cost(*a)));
            }
            for g in &unannotated {
                bytes = bytes.saturating_add((activations + 1).saturating_mul(cost(*g)));
            }
            let mut exit: Option<(FnId, FnId, Edge)> = None;
            let mut exit_depth = 0;
            for &m in &members {
                for &(g, e) in &edges[&m] {
                    if inside(g) {
                        continue;
                    }
                    let d = nodes[g.index()].depth;
                    if exit.is_none() || d > exit_depth {
                        exit = Some((m, g, e));
                        exit_depth = d;
                    }
                }
            }
            for &m in &members {
                nodes[m.index()] = Node {
                    depth: bytes.saturating_add(exit_depth),
                    next: exit.map(|(_, g, e)| (g, e)),
                    cycle: Some(cycle_index),
                };
            }
            cycles.push(Cycle {
                members,
                bound: Bound::Bounded {
                    annotated,
                    bytes,
                    exit,
                },
            });
        } else {
            // Depth-first from each member in order; a member finishes
            // after every callee it reaches without closing a cycle.
            let mut state: HashMap<FnId, Color> =
                members.iter().map(|f| (*f, Color::White)).collect();
            for &start in &members {
                if state[&start] != Color::White {
                    continue;
                }
                let mut stack: Vec<(FnId, usize)> = vec![(start, 0)];
                state.insert(start, Color::Gray);
                while let Some(&mut (f, ref mut i)) = stack.last_mut() {
                    let list = &edges[&f];
                    if let Some(&(g, _)) = list.get(*i) {
                        *i += 1;
                        if inside(g) && state[&g] == Color::White {
                            state.insert(g, Color::Gray);
                            stack.push((g, 0));
                        }
                        continue;
                    }
                    // Every callee is done: outside ones earlier, inside
                    // ones black now, or gray (a back edge, left out).
                    let usable: Vec<(FnId, Edge)> = list
                        .iter()
                        .copied()
                        .filter(|(g, _)| !inside(*g) || state[g] == Color::Black)
                        .collect();
                    let (depth, next) = deepest(&nodes, &usable);
                    nodes[f.index()] = Node {
                        depth: cost(f).saturating_add(depth),
                        next,
                        cycle: Some(cycle_index),
                    };
                    state.insert(f, Color::Black);
                    stack.pop();
                }
            }
            cycles.push(Cycle {
                members,
                bound: Bound::Unbounded { annotated },
            });
        }
    }
    Walk {
        ret,
        frames,
        nodes,
        cycles,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Color {
    White,
    Gray,
    Black,
}

/// The deepest of `edges`' targets (all finished): its depth and the edge.
/// The first of equally deep ones, in the order given (site order).
/// Callees that add nothing (inlined leaves) are no step of a path.
fn deepest(nodes: &[Node], edges: &[(FnId, Edge)]) -> (u64, Option<(FnId, Edge)>) {
    let mut best: Option<(FnId, Edge)> = None;
    let mut depth = 0;
    for &(g, e) in edges {
        let d = nodes[g.index()].depth;
        if d > depth {
            best = Some((g, e));
            depth = d;
        }
    }
    (depth, best)
}

/// Whether the graph over `nodes` given by `succ` has a cycle.
fn has_cycle(nodes: &[FnId], succ: impl Fn(FnId) -> Vec<FnId>) -> bool {
    let mut state: HashMap<FnId, Color> = nodes.iter().map(|f| (*f, Color::White)).collect();
    for &start in nodes {
        if state[&start] != Color::White {
            continue;
        }
        let mut stack: Vec<(FnId, Vec<FnId>, usize)> = vec![(start, succ(start), 0)];
        state.insert(start, Color::Gray);
        while let Some((f, list, i)) = stack.last_mut() {
            if let Some(&g) = list.get(*i) {
                *i += 1;
                match state.get(&g) {
                    Some(Color::Gray) => return true,
                    Some(Color::White) => {
                        state.insert(g, Color::Gray);
                        let next = succ(g);
                        stack.push((g, next, 0));
                    }
                    _ => {}
                }
                continue;
            }
            state.insert(*f, Color::Black);
            stack.pop();
        }
    }
    false
}

impl Walk {
    /// The worst path from `root`, outermost first.
    pub fn path(&self, root: FnId) -> Vec<Step> {
        let mut out = Vec::new();
        let mut at = root;
        let mut from: Option<(FnId, Edge)> = None;
        // Each step goes to a component finished before the current one
        // (or, in an unbounded cycle, to a member finished before it), so
        // this ends; the limit only guards against a bug.
        for _ in 0..=self.nodes.len() {
            let node = &self.nodes[at.index()];
            if let Some(c) = node.cycle
                && let Bound::Bounded { exit, .. } = &self.cycles[c as usize].bound
            {
                out.push(Step::Cycle {
                    cycle: c,
                    f: at,
                    from,
                });
                match exit {
                    Some((m, g, e)) => {
                        from = Some((*m, *e));
                        at = *g;
                        continue;
                    }
                    None => break,
                }
            }
            out.push(Step::Call { f: at, from });
            match node.next {
                Some((g, e)) => {
                    from = Some((at, e));
                    at = g;
                }
                None => break,
            }
        }
        out
    }

    /// What a step adds to the depth.
    pub fn step_bytes(&self, step: &Step) -> u64 {
        match step {
            Step::Call { f, .. } => self.frames[f.index()].cost(self.ret),
            Step::Cycle { cycle, .. } => match &self.cycles[*cycle as usize].bound {
                Bound::Bounded { bytes, .. } => *bytes,
                Bound::Unbounded { .. } => 0,
            },
        }
    }

    pub fn depth(&self, f: FnId) -> u64 {
        self.nodes[f.index()].depth
    }

    /// Every function reachable from `root` (itself included), in `FnId`
    /// order, through the functions the walk goes into.
    pub fn reachable(&self, program: &Program, root: FnId) -> Vec<FnId> {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![root];
        seen[root.index()] = true;
        let mut out = Vec::new();
        while let Some(f) = stack.pop() {
            out.push(f);
            if !walks_into(program, f) {
                continue;
            }
            for e in program.graph.edges(NodeIndex::new(f.index())) {
                let g = petgraph::visit::EdgeRef::target(&e).index();
                if !seen[g] {
                    seen[g] = true;
                    stack.push(FnId(g as u32));
                }
            }
        }
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::has_cycle;
    use program::FnId;

    #[test]
    fn cycles_are_found_and_dags_are_not() {
        let f = FnId;
        let succ = |edges: &'static [(u32, u32)]| {
            move |n: FnId| {
                edges
                    .iter()
                    .filter(|(a, _)| *a == n.0)
                    .map(|(_, b)| FnId(*b))
                    .collect::<Vec<_>>()
            }
        };
        let nodes = [f(0), f(1), f(2), f(3)];
        assert!(!has_cycle(&nodes, succ(&[(0, 1), (1, 2), (0, 2), (3, 2)])));
        assert!(has_cycle(&nodes, succ(&[(0, 1), (1, 2), (2, 0)])));
        assert!(has_cycle(&nodes, succ(&[(3, 3)])));
        assert!(!has_cycle(&[], succ(&[])));
    }
}
