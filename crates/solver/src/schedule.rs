//! The order of the solve: the call graph's SCCs, numbered callees first,
//! grouped into levels that only call lower levels.

use petgraph::graph::{DiGraph, NodeIndex};
use program::FnId;

/// What the engine needs of a call graph.
pub trait CallGraph: Sync {
    /// Functions are `FnId(0)..FnId(function_count())`.
    fn function_count(&self) -> usize;

    /// The call edges out of `f` (calls, drops, virtual and indirect
    /// targets), in a stable order; duplicates are allowed.
    fn callees(&self, f: FnId) -> Vec<FnId>;

    /// The graph's SCCs and levels. A graph already held as a petgraph
    /// graph gives its own (`Schedule::of_graph`), so that the numbering of
    /// components follows its edge order.
    fn schedule(&self) -> Schedule
    where
        Self: Sized,
    {
        Schedule::from_callees(self)
    }
}

impl CallGraph for program::Program {
    fn function_count(&self) -> usize {
        self.functions.len()
    }

    fn callees(&self, f: FnId) -> Vec<FnId> {
        program::Program::callees(self, f)
            .into_iter()
            .map(|(g, _)| g)
            .collect()
    }

    fn schedule(&self) -> Schedule {
        Schedule::of_graph(&self.graph)
    }
}

/// Index of an SCC in [`Schedule::sccs`].
pub type SccId = u32;

/// The order of the solve: the call graph's strongly connected components
/// and the levels they fall into. Every component comes after the ones it
/// calls, and the components of one level are independent of each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Members of each SCC, sorted; SCCs are numbered callees-first.
    pub sccs: Vec<Vec<FnId>>,
    /// The SCC of each function.
    pub scc_of: Vec<SccId>,
    /// `levels[0]` calls nothing outside itself; `levels[n]` only calls
    /// levels `< n` (and itself).
    pub levels: Vec<Vec<SccId>>,
}

impl Schedule {
    /// The schedule of `graph`.
    pub fn new(graph: &impl CallGraph) -> Schedule {
        graph.schedule()
    }

    /// The schedule of a graph known only by its callees.
    pub fn from_callees(graph: &impl CallGraph) -> Schedule {
        let n = graph.function_count();
        let mut g: DiGraph<(), ()> = DiGraph::with_capacity(n, n);
        for _ in 0..n {
            g.add_node(());
        }
        for i in 0..n {
            for c in graph.callees(FnId(i as u32)) {
                if c.index() < n {
                    g.add_edge(NodeIndex::new(i), NodeIndex::new(c.index()), ());
                }
            }
        }
        Schedule::of_graph(&g)
    }

    /// The schedule of a petgraph graph whose node `i` is `FnId(i)`.
    pub fn of_graph<N, E>(graph: &DiGraph<N, E>) -> Schedule {
        // Tarjan's algorithm emits SCCs in post-order: callees first.
        let raw = petgraph::algo::tarjan_scc(graph);
        let mut scc_of = vec![0; graph.node_count()];
        let mut sccs = Vec::with_capacity(raw.len());
        for (i, members) in raw.into_iter().enumerate() {
            let mut members: Vec<FnId> = members
                .into_iter()
                .map(|m| FnId(m.index() as u32))
                .collect();
            members.sort();
            for m in &members {
                scc_of[m.index()] = i as SccId;
            }
            sccs.push(members);
        }
        let mut level = vec![0usize; sccs.len()];
        for (i, members) in sccs.iter().enumerate() {
            let mut l = 0;
            for m in members {
                for c in graph.neighbors(NodeIndex::new(m.index())) {
                    let callee = scc_of[c.index()] as usize;
                    if callee != i {
                        // Post-order guarantees the callee's level is final.
                        l = l.max(level[callee] + 1);
                    }
                }
            }
            level[i] = l;
        }
        let depth = level.iter().copied().max().map_or(0, |m| m + 1);
        let mut levels = vec![Vec::new(); depth];
        for (i, l) in level.iter().enumerate() {
            levels[*l].push(i as SccId);
        }
        Schedule {
            sccs,
            scc_of,
            levels,
        }
    }

    /// Whether component `scc` is recursive: more than one member, or a
    /// member that calls itself.
    pub fn is_recursive(&self, graph: &impl CallGraph, scc: SccId) -> bool {
        let members = &self.sccs[scc as usize];
        members.len() > 1 || graph.callees(members[0]).contains(&members[0])
    }

    /// The recursive components.
    pub fn recursive(&self, graph: &impl CallGraph) -> Vec<SccId> {
        (0..self.sccs.len() as SccId)
            .filter(|&s| self.is_recursive(graph, s))
            .collect()
    }
}
