//! Strongly connected components of the call graph and a bottom-up
//! schedule over them: every SCC comes after the SCCs it calls, and the SCCs
//! of one level are independent of each other (they can run in parallel).

use petgraph::graph::NodeIndex;

use crate::{FnId, Program};

pub type SccId = u32;

#[derive(Debug, Clone)]
pub struct Schedule {
    /// Members of each SCC; SCCs are numbered callees-first.
    pub sccs: Vec<Vec<FnId>>,
    /// The SCC of each function.
    pub scc_of: Vec<SccId>,
    /// `levels[0]` calls nothing outside itself; `levels[n]` only calls
    /// levels `< n` (and itself).
    pub levels: Vec<Vec<SccId>>,
}

impl Schedule {
    pub fn new(program: &Program) -> Schedule {
        let graph = &program.graph;
        // Tarjan's algorithm emits SCCs in post-order: callees first.
        let raw = petgraph::algo::tarjan_scc(graph);
        let mut scc_of = vec![0; graph.node_count()];
        let mut sccs = Vec::with_capacity(raw.len());
        for (i, members) in raw.into_iter().enumerate() {
            let mut members: Vec<FnId> = members
                .into_iter()
                .map(|n| FnId(n.index() as u32))
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
                for n in graph.neighbors(NodeIndex::new(m.index())) {
                    let callee = scc_of[n.index()] as usize;
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

    /// SCCs with more than one member or a self call: the recursive ones.
    pub fn recursive(&self, program: &Program) -> Vec<SccId> {
        (0..self.sccs.len() as SccId)
            .filter(|&s| {
                let members = &self.sccs[s as usize];
                members.len() > 1
                    || program.graph.contains_edge(
                        NodeIndex::new(members[0].index()),
                        NodeIndex::new(members[0].index()),
                    )
            })
            .collect()
    }
}
