//! The bounds of the analysis, counted per body.
//!
//! Every part of the analysis that could grow with its input is bounded
//! (paths per program point, facts per path, summary entries, rounds of a
//! fixed point, the length of access paths, the size of provenance sets),
//! and past its bound it widens towards "unknown": the result covers more
//! than the body can do, so that a finding may appear but none is lost.
//! Where that happens is counted here, so that a run can say which bodies
//! were analysed less precisely than their code allows, and why.
//!
//! The counts live in a thread-local record for the analysis running on
//! the current thread ([`measure`]): the code that widens calls [`hit`]
//! and needs no handle to pass around, and an analysis nested inside
//! another (a callee specialised to a call site, computed on the caller's
//! thread or found in a cache depending on timing) is measured apart, so
//! that what is counted for a body never depends on the thread count or
//! the timing.
//!
//! The last resort is a step budget ([`step`]): an abstract cost
//! (a block transferred, a statement visited by a scan), the same on every
//! machine and under any load, so the same input always gives the same
//! output. Past it the analysis stops, and its caller replaces what it
//! would have computed by what an unknown function gets.

#![warn(missing_docs)]

use std::cell::Cell;
use std::fmt;

/// One of the analysis's bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bound {
    /// The body's step budget ([`STEP_BUDGET`]): its analysis stopped and
    /// its summary is an unknown function's.
    Steps,
    /// Rounds of a flow-insensitive scan (where pointers point, where the
    /// body writes): past them the scan gives up (pointers point anywhere,
    /// every argument is written).
    Rounds,
    /// Distinct paths at one program point: past them they collapse into
    /// one path whose preemption count is unknown.
    Paths,
    /// Places one pointer may point to below one root: past them they are
    /// replaced by one place "somewhere below" their common prefix.
    Provenance,
    /// Facts one path keeps (held locks): past them a new one is not
    /// recorded.
    Facts,
    /// Entries of one summary (locks taken, nestings left open): past them
    /// new ones are not recorded.
    Cases,
    /// Steps of one access path: past them the path stands for everything
    /// below its prefix.
    AccessPath,
}

impl Bound {
    /// Every bound, the most consequential first (the order in which a
    /// body's worst bound is chosen).
    pub const ALL: [Bound; 7] = [
        Bound::Steps,
        Bound::Rounds,
        Bound::Paths,
        Bound::Provenance,
        Bound::Facts,
        Bound::Cases,
        Bound::AccessPath,
    ];

    /// The name of the bound in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Steps => "steps",
            Bound::Rounds => "rounds",
            Bound::Paths => "paths",
            Bound::Provenance => "provenance",
            Bound::Facts => "facts",
            Bound::Cases => "cases",
            Bound::AccessPath => "access_path",
        }
    }

    /// What was over the bound, for a reader: "paths over 8".
    pub fn describe(self) -> &'static str {
        match self {
            Bound::Steps => "steps over the budget",
            Bound::Rounds => "fixed-point rounds over their limit",
            Bound::Paths => "paths over 8",
            Bound::Provenance => "places per pointer over 8",
            Bound::Facts => "held locks over 16",
            Bound::Cases => "summary entries over their bound",
            Bound::AccessPath => "access paths over 6 steps",
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// The step budget of one body's analysis (blocks transferred, statements
/// visited by a scan, places visited by the write scan): above what any
/// body of the kernel, the crates.io corpus, the sweep or the ten-crate
/// project needs (docs/performance.md, "Bounded analysis time": the most
/// is about 19 million, a few seconds), so that only a pathological body
/// reaches it.
pub const STEP_BUDGET: u64 = 50_000_000;

/// How often each bound was hit while analysing one body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, bincode::Encode, bincode::Decode)]
pub struct Hits {
    counts: [u32; Bound::ALL.len()],
}

impl Hits {
    /// Whether no bound was hit.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }

    /// How often `b` was hit.
    pub fn count(&self, b: Bound) -> u32 {
        self.counts[b as usize]
    }

    /// Counts one more hit of `b`.
    pub fn add(&mut self, b: Bound) {
        let c = &mut self.counts[b as usize];
        *c = c.saturating_add(1);
    }

    /// The bounds hit, the most consequential first.
    pub fn bounds(&self) -> impl Iterator<Item = Bound> + '_ {
        Bound::ALL.into_iter().filter(|&b| self.count(b) > 0)
    }

    /// The most consequential bound hit.
    pub fn worst(&self) -> Option<Bound> {
        self.bounds().next()
    }

    /// Whether the body ran out of its step budget.
    pub fn exhausted(&self) -> bool {
        self.count(Bound::Steps) > 0
    }

    /// The order of two bodies' imprecision: the worse bound first, then
    /// the more hits of it, then the more hits in all.
    pub fn severity(&self) -> (std::cmp::Reverse<usize>, u32, u64) {
        let worst = self.worst();
        let rank = worst.map_or(Bound::ALL.len(), |b| b as usize);
        (
            std::cmp::Reverse(rank),
            worst.map_or(0, |b| self.count(b)),
            self.counts.iter().map(|&c| u64::from(c)).sum(),
        )
    }
}

/// The record of the analysis running on one thread.
#[derive(Clone, Copy)]
struct Record {
    hits: Hits,
    steps: u64,
    budget: u64,
}

const UNMEASURED: Record = Record {
    hits: Hits {
        counts: [0; Bound::ALL.len()],
    },
    steps: 0,
    budget: u64::MAX,
};

thread_local! {
    static CURRENT: Cell<Record> = const { Cell::new(UNMEASURED) };
}

/// Runs `f` as one analysis with a budget of `budget` steps, and returns
/// what it gave with the bounds it hit. The record of an analysis that was
/// running on this thread (the caller of a nested one) is put back
/// afterwards, unchanged by `f`.
pub fn measure<R>(budget: u64, f: impl FnOnce() -> R) -> (R, Hits) {
    let outer = CURRENT.with(|c| {
        c.replace(Record {
            budget,
            ..UNMEASURED
        })
    });
    // Put back even if `f` unwinds, so that a caught panic does not leave
    // this thread's later analyses counted against a spent budget.
    struct Restore(Record);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let restore = Restore(outer);
    let out = f();
    let hits = CURRENT.with(|c| c.get().hits);
    drop(restore);
    (out, hits)
}

/// Records that the analysis running on this thread hit `b`. Outside
/// [`measure`] it is counted nowhere.
pub fn hit(b: Bound) {
    CURRENT.with(|c| {
        let mut r = c.get();
        r.hits.add(b);
        c.set(r);
    });
}

/// Charges `n` steps to the analysis running on this thread; `false` once
/// its budget is spent (the first time, [`Bound::Steps`] is counted). The
/// caller then stops and widens.
pub fn step(n: u64) -> bool {
    CURRENT.with(|c| {
        let mut r = c.get();
        if r.steps > r.budget {
            return false;
        }
        r.steps = r.steps.saturating_add(n);
        let within = r.steps <= r.budget;
        if !within {
            r.hits.add(Bound::Steps);
        }
        c.set(r);
        within
    })
}

/// Whether the analysis running on this thread has spent its budget.
pub fn exhausted() -> bool {
    CURRENT.with(|c| {
        let r = c.get();
        r.steps > r.budget
    })
}

/// The steps charged so far to the analysis running on this thread.
pub fn steps() -> u64 {
    CURRENT.with(|c| c.get().steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_are_counted_per_measure() {
        let ((), hits) = measure(u64::MAX, || {
            hit(Bound::Paths);
            hit(Bound::Paths);
            hit(Bound::AccessPath);
        });
        assert_eq!(hits.count(Bound::Paths), 2);
        assert_eq!(hits.count(Bound::AccessPath), 1);
        assert_eq!(hits.worst(), Some(Bound::Paths));
        assert!(!hits.exhausted());
    }

    #[test]
    fn a_nested_measure_leaves_the_outer_record_alone() {
        let (inner, outer) = measure(10, || {
            hit(Bound::Rounds);
            assert!(step(4));
            let ((), inner) = measure(100, || {
                hit(Bound::Paths);
                assert!(step(50));
            });
            // The inner analysis's steps are not the outer one's.
            assert_eq!(steps(), 4);
            inner
        });
        assert_eq!(inner.bounds().collect::<Vec<_>>(), [Bound::Paths]);
        assert_eq!(outer.bounds().collect::<Vec<_>>(), [Bound::Rounds]);
        // Outside any measure nothing is counted against a budget.
        assert!(step(u64::MAX / 2));
        assert!(!exhausted());
    }

    #[test]
    fn the_budget_stops_and_is_counted_once() {
        let (seen, hits) = measure(10, || {
            let a = step(6);
            let b = step(6);
            let c = step(1);
            (a, b, c, exhausted())
        });
        assert_eq!(seen, (true, false, false, true));
        assert_eq!(hits.count(Bound::Steps), 1);
        assert!(hits.exhausted());
        assert_eq!(hits.worst(), Some(Bound::Steps));
    }

    #[test]
    fn severity_orders_by_the_worst_bound_first() {
        let mut paths = Hits::default();
        for _ in 0..5 {
            paths.add(Bound::Paths);
        }
        let mut rounds = Hits::default();
        rounds.add(Bound::Rounds);
        assert!(rounds.severity() > paths.severity());
        let mut more_paths = paths;
        more_paths.add(Bound::Paths);
        assert!(more_paths.severity() > paths.severity());
        assert!(paths.severity() > Hits::default().severity());
    }
}
