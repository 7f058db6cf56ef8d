//! The per-path state of the body analysis, the product of the domains: a
//! small set of paths, each with the adjustment since entry and the value
//! facts that hold on it.
//!
//! Keeping one path per distinct adjustment (instead of joining them into an
//! interval or `Top`, as klint does) is what makes locks taken and released
//! under the same condition, and a checked `try_lock`, come out exact: the
//! facts of each path say which branch it took.
//!
//! As a lattice, [`PcState`] is a bounded powerset of the product
//! `Adj × LockState`, each element carrying its [`Facts`]: the join
//! ([`JoinSemiLattice`]) adds the other state's paths one by one; a path
//! whose offset and lock state are already there merges its facts into that
//! path's (`Facts::intersect`, the join of facts), a new one is inserted in
//! order. Past [`MAX_PATHS`] paths, or once a `Top` offset appears, all
//! paths collapse into one `Top` path: the offsets join to `Top` (the flat
//! join of [`Adj`]), the facts intersect and the lock states meet
//! ([`LockState::meet`]). The empty state (unreachable) is the bottom.

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

/// Below this many paths, paths that differ only in a drop flag are kept
/// apart; from it on they merge.
pub const MAX_SPLIT: usize = 4;

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
        // A collapse can give back the state there was before the path came
        // in: "changed" must then be false, or a loop's fixed point is never
        // reached (found by fuzzing the analyser).
        let before =
            (target == Adj::Top || self.paths.len() >= MAX_PATHS).then(|| self.paths.clone());
        let same = |p: &Path| p.adj == target && p.locks.same_as(&path.locks);
        // Paths that differ in a drop flag stay apart while there are few
        // paths (`Facts::same_split`); past `MAX_SPLIT` they merge.
        let at = self
            .paths
            .iter()
            .position(|p| same(p) && p.facts.same_split(&path.facts))
            .or_else(|| {
                (self.paths.len() >= MAX_SPLIT)
                    .then(|| self.paths.iter().position(same))
                    .flatten()
            });
        let mut changed = match at {
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
        if self.paths.len() > MAX_PATHS {
            self.merge_splits();
        }
        if self.paths.len() > MAX_PATHS || (target == Adj::Top && self.paths.len() > 1) {
            // Only the bound is an imprecision: a `Top` offset already
            // says the count is unknown.
            if self.paths.len() > MAX_PATHS {
                bounds::hit(bounds::Bound::Paths);
            }
            self.collapse();
            if let Some(before) = before {
                changed = self.paths != before;
            }
        }
        changed
    }

    /// Merges the paths kept apart only by drop flags (same adjustment and
    /// lock state) before distinct adjustments have to collapse.
    fn merge_splits(&mut self) {
        let mut out: Vec<Path> = Vec::with_capacity(self.paths.len());
        for p in std::mem::take(&mut self.paths) {
            match out
                .iter_mut()
                .find(|q| q.adj == p.adj && q.locks.same_as(&p.locks))
            {
                Some(q) => {
                    q.facts.intersect(&p.facts);
                }
                None => out.push(p),
            }
        }
        self.paths = out;
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
    use crate::held::{Acquired, Held};
    use memory::{Aspect, Location, PlaceKey, Root};
    use spec::LockKind;

    fn path(a: i32) -> Path {
        Path::new(Adj::Known(a), Facts::default())
    }

    /// Facts `_l == v` for each `(l, v)`.
    fn facts(known: &[(u32, u128)]) -> Facts {
        let mut f = Facts::default();
        for &(l, v) in known {
            f.set_known(PlaceKey::local(l), Aspect::Value, v);
        }
        f
    }

    fn locks(names: &[&str]) -> LockState {
        let mut s = LockState::default();
        for name in names {
            s.acquire(Held {
                lock: Location::new(Root::Static((*name).into())),
                kind: LockKind::Spin,
                trylock: false,
                at: Acquired {
                    span: kmir::Span::default(),
                    callee: program::FnId(0),
                },
            });
        }
        s
    }

    fn p(adj: Adj, known: &[(u32, u128)], held: &[&str]) -> Path {
        Path {
            adj,
            facts: facts(known),
            locks: locks(held),
        }
    }

    fn state(paths: Vec<Path>) -> PcState {
        let mut s = PcState::default();
        for path in paths {
            s.add(path);
        }
        s
    }

    fn joined(a: &PcState, b: &PcState) -> (PcState, bool) {
        let mut s = a.clone();
        let changed = s.join(b);
        (s, changed)
    }

    #[test]
    fn different_adjustments_stay_apart_in_order() {
        let a = PcState::single(Adj::Known(2), facts(&[(1, 1)]));
        let b = PcState::single(Adj::Known(-1), facts(&[(1, 0)]));
        let (ab, changed) = joined(&a, &b);
        assert!(changed);
        assert_eq!(
            ab.paths,
            vec![
                p(Adj::Known(-1), &[(1, 0)], &[]),
                p(Adj::Known(2), &[(1, 1)], &[]),
            ]
        );
        // The other order gives the same state.
        assert_eq!(joined(&b, &a), (ab.clone(), true));
        // Joining either side again changes nothing.
        assert!(!ab.clone().join(&a) && !ab.clone().join(&b));
    }

    #[test]
    fn same_adjustment_and_locks_merge_facts() {
        let a = state(vec![p(Adj::Known(1), &[(1, 1), (2, 2)], &["A"])]);
        let b = state(vec![p(Adj::Known(1), &[(1, 1), (2, 3)], &["A"])]);
        let (ab, changed) = joined(&a, &b);
        assert!(changed);
        assert_eq!(ab.paths, vec![p(Adj::Known(1), &[(1, 1)], &["A"])]);
        assert_eq!(joined(&b, &a), (ab.clone(), true));
        // Fewer facts on the other side than here: nothing to lose.
        assert_eq!(joined(&ab, &a), (ab.clone(), false));
        // Facts only `self` lacks are not added: the join never learns.
        let c = state(vec![p(Adj::Known(1), &[(1, 1), (3, 0)], &["A"])]);
        assert_eq!(joined(&ab, &c), (ab.clone(), false));
    }

    #[test]
    fn same_adjustment_different_locks_stay_apart() {
        let a = state(vec![p(Adj::Known(1), &[(1, 1)], &["A"])]);
        let b = state(vec![p(Adj::Known(1), &[(1, 0)], &[])]);
        let (ab, changed) = joined(&a, &b);
        assert!(changed);
        // Sorted by offset, then lock state: holding nothing comes first.
        assert_eq!(
            ab.paths,
            vec![
                p(Adj::Known(1), &[(1, 0)], &[]),
                p(Adj::Known(1), &[(1, 1)], &["A"]),
            ]
        );
        assert_eq!(joined(&b, &a).0, ab);
    }

    #[test]
    fn join_is_idempotent() {
        let s = state(vec![
            p(Adj::Known(0), &[(1, 1)], &[]),
            p(Adj::Known(0), &[(1, 2)], &["A"]),
            p(Adj::Known(3), &[], &["A", "B"]),
        ]);
        assert_eq!(s.paths.len(), 3);
        assert_eq!(joined(&s, &s), (s.clone(), false));
        let top = PcState::single(Adj::Top, facts(&[(1, 1)]));
        assert_eq!(joined(&top, &top), (top.clone(), false));
    }

    #[test]
    fn unreachable_is_the_identity() {
        let empty = PcState::default();
        assert!(empty.is_unreachable());
        let s = state(vec![
            p(Adj::Known(0), &[(1, 1)], &[]),
            p(Adj::Known(2), &[], &["A"]),
        ]);
        assert_eq!(joined(&s, &empty), (s.clone(), false));
        assert_eq!(joined(&empty, &s), (s.clone(), true));
        assert_eq!(joined(&empty, &empty), (empty.clone(), false));
    }

    #[test]
    fn too_many_adjustments_collapse_into_one_top_path() {
        // Ten distinct offsets, five on each side, all holding `A` and
        // knowing `_1 == 1`; some hold `B` or know more.
        let side = |offsets: std::ops::Range<i32>| {
            state(
                offsets
                    .map(|a| {
                        let held: &[&str] = if a == 3 { &["A", "B"] } else { &["A"] };
                        p(Adj::Known(a), &[(1, 1), (2, a as u128)], held)
                    })
                    .collect(),
            )
        };
        let (a, b) = (side(0..5), side(5..10));
        assert_eq!((a.paths.len(), b.paths.len()), (5, 5));
        let (ab, changed) = joined(&a, &b);
        assert!(changed);
        // What every path agrees on: `_1 == 1`, holding `A`.
        assert_eq!(ab.paths, vec![p(Adj::Top, &[(1, 1)], &["A"])]);
        assert_eq!(joined(&b, &a), (ab.clone(), true));
        // Exactly `MAX_PATHS` distinct offsets do not collapse.
        let (eight, _) = joined(&a, &side(5..MAX_PATHS as i32));
        assert_eq!(eight.paths.len(), MAX_PATHS);
        assert!(eight.paths.iter().all(|p| p.adj != Adj::Top));
    }

    #[test]
    fn top_absorbs_on_join() {
        let top = state(vec![p(Adj::Top, &[(1, 1)], &["A"])]);
        // A known offset joins the `Top` path, whatever its lock state.
        let known = state(vec![p(Adj::Known(3), &[(1, 1)], &["A"])]);
        assert_eq!(joined(&top, &known), (top.clone(), false));
        let other_locks = state(vec![p(Adj::Known(3), &[(1, 1), (2, 0)], &["A", "B"])]);
        let (t, changed) = joined(&top, &other_locks);
        // The collapse gives back the very same state: nothing changed.
        // (Reporting a change here made a loop's fixed point unreachable:
        // its header was queued again forever; found by the analyser's
        // fuzz target.)
        assert_eq!(t, top);
        assert!(!changed);
        // The other way round: the `Top` path collapses the known ones.
        let known = state(vec![
            p(Adj::Known(0), &[(1, 1), (2, 0)], &["A"]),
            p(Adj::Known(1), &[(1, 1), (2, 1)], &["A", "B"]),
        ]);
        let (t, changed) = joined(&known, &top);
        assert!(changed);
        assert_eq!(t.paths, vec![p(Adj::Top, &[(1, 1)], &["A"])]);
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

    #[test]
    fn a_collapse_past_the_bound_is_counted_and_a_top_one_is_not() {
        let ((), hits) = bounds::measure(u64::MAX, || {
            let mut s = PcState::default();
            for a in 0..=MAX_PATHS as i32 {
                s.add(path(a));
            }
            assert_eq!(s.paths.len(), 1);
        });
        assert_eq!(hits.count(bounds::Bound::Paths), 1);
        // A `Top` offset joining known ones says the count is unknown
        // already: no bound was needed.
        let ((), hits) = bounds::measure(u64::MAX, || {
            let mut s = PcState::default();
            s.add(path(0));
            s.add(Path::new(Adj::Top, Facts::default()));
            assert_eq!(s.paths.len(), 1);
        });
        assert!(hits.is_empty());
    }
}
