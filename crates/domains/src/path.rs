//! The per-path state of the body analysis, the product of the domains: a
//! small set of paths, each with the adjustment since entry and the value
//! facts that hold on it.
//!
//! Keeping one path per distinct adjustment (instead of joining them into an
//! interval or `Top`, as klint does) is what makes locks taken and released
//! under the same condition, and a checked `try_lock`, come out exact: the
//! facts of each path say which branch it took.

use dataflow::JoinSemiLattice;

use memory::Facts;

use crate::count::Adj;
use crate::held::LockState;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    pub adj: Adj,
    pub facts: Facts,
    /// The locks held and released since entry.
    pub locks: LockState,
}

impl Path {
    pub fn new(adj: Adj, facts: Facts) -> Self {
        Path {
            adj,
            facts,
            locks: LockState::default(),
        }
    }

    /// The same locks, other facts and adjustment.
    pub fn with(&self, adj: Adj, facts: Facts) -> Self {
        Path {
            adj,
            facts,
            locks: self.locks.clone(),
        }
    }
}

/// Distinct adjustments kept apart at one program point; beyond this the
/// paths collapse into one `Top` path (this also bounds loops whose every
/// iteration changes the count).
pub const MAX_PATHS: usize = 8;

/// Paths sorted by adjustment, at most one per adjustment and lock state;
/// empty means the point is unreachable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PcState {
    pub paths: Vec<Path>,
}

impl PcState {
    pub fn single(adj: Adj, facts: Facts) -> Self {
        PcState {
            paths: vec![Path::new(adj, facts)],
        }
    }

    pub fn is_unreachable(&self) -> bool {
        self.paths.is_empty()
    }

    /// Adds a path, merging it with the path of the same adjustment.
    pub fn add(&mut self, path: Path) -> bool {
        // A `Top` path absorbs every other: once the count is unknown here,
        // distinguishing known values again would not terminate in loops.
        let target = if self.paths.iter().any(|p| p.adj == Adj::Top) {
            Adj::Top
        } else {
            path.adj
        };
        let changed = match self
            .paths
            .iter()
            .position(|p| p.adj == target && p.locks.same_as(&path.locks))
        {
            Some(i) => self.paths[i].facts.intersect(&path.facts),
            None => {
                let i = self.paths.partition_point(|p| {
                    p.adj
                        .cmp(&target)
                        .then_with(|| p.locks.cmp_key(&path.locks))
                        .is_lt()
                });
                self.paths.insert(
                    i,
                    Path {
                        adj: target,
                        facts: path.facts,
                        locks: path.locks,
                    },
                );
                true
            }
        };
        if self.paths.len() > MAX_PATHS || (target == Adj::Top && self.paths.len() > 1) {
            self.collapse();
        }
        changed
    }

    fn collapse(&mut self) {
        let mut paths = std::mem::take(&mut self.paths).into_iter();
        let Some(first) = paths.next() else { return };
        let mut facts = first.facts;
        let mut locks = first.locks;
        for p in paths {
            facts.intersect(&p.facts);
            locks.meet(&p.locks);
        }
        self.paths = vec![Path {
            adj: Adj::Top,
            facts,
            locks,
        }];
    }
}

impl JoinSemiLattice for PcState {
    fn join(&mut self, other: &Self) -> bool {
        let mut changed = false;
        for p in &other.paths {
            changed |= self.add(p.clone());
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(a: i32) -> Path {
        Path::new(Adj::Known(a), Facts::default())
    }

    #[test]
    fn keeps_distinct_adjustments_apart_up_to_the_bound() {
        let mut s = PcState::default();
        for a in 0..MAX_PATHS as i32 {
            assert!(s.add(path(a)));
        }
        assert_eq!(s.paths.len(), MAX_PATHS);
        assert!(!s.add(path(3)));
        assert!(s.add(path(100)));
        assert_eq!(s.paths, vec![Path::new(Adj::Top, Facts::default())]);
        // Top absorbs.
        assert!(!s.add(path(1)));
        assert_eq!(s.paths.len(), 1);
    }
}
