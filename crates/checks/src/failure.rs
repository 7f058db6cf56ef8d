//! Failure paths: a call or drop that breaks its callee's expectation on a
//! path that can only end in a failure routine (`panic!`, `BUG()`, a failed
//! KUnit assertion's `__kunit_abort`, anything the spec or
//! `#[kanalyze::failure]` marks) is reported as `sleep-on-failure-path`, a
//! warning, instead of a `sleep-in-atomic` error. The same call on a path
//! that can return normally stays an error.
//!
//! Two questions, both about one body's control flow ([`ends_in_failure`],
//! on a body reduced to [`Step`]s):
//!
//! * the violation's own site: does every path from it reach a call of a
//!   failure routine before the function could return?
//! * a violation inherited from a callee (the callee expects 0 because of
//!   something deep inside it): does the callee need that only on its own
//!   failure paths? That holds when every site of its body whose callee
//!   could bound the count the same way is on a failure path there, or
//!   calls a function of which the same holds ([`FailurePaths::fail_only`]).
//!   A count too high for the callee (a sleep under a lock) can only come
//!   from sites whose callee's expectation has an upper bound (or depends
//!   on the arguments): shifting a range by an adjustment keeps it
//!   unbounded, and meets of unbounded ranges are unbounded. A count too
//!   low can only come from a lower bound above 0.
//!
//! Failure routines are those marked, and every function every path of
//! whose body ends in a call of one before it could return (the kernel's
//! `core::panicking::panic_fmt` ends in its panic handler, which ends in
//! `BUG()`).

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};

use analysis::{Summary, Violation};
use findings::{Finding, Note, Severity};
use kmir::{Callee, TerminatorKind};
use program::{EdgeKind, FnId, FnKind};

use crate::Input;
use crate::text::name;

findings::declare_kind! {
    /// A call or drop whose callee expects a preemption count that the count
    /// at this point cannot have (what `sleep-in-atomic` reports), on a path
    /// that can only end in a failure routine: `panic!`, `BUG()`, a failed
    /// KUnit assertion's `__kunit_abort`, or a function the spec
    /// (`failure = true`) or `#[kanalyze::failure]` marks as one. The call
    /// runs only when something has already failed: an assertion of a test,
    /// an invariant the code checks. It is true in a narrow sense (the
    /// failure path sleeps with the lock held before it ends the thread or
    /// the system), but it is not the bug a maintainer is looking for in the
    /// error list, so it is a warning of its own kind.
    ///
    /// A violation inherited from a callee counts too when the callee needs
    /// the count only on its own failure paths (a helper whose only sleep is
    /// the report of a failed `assert!`). The message names the failure
    /// routine the path ends in; a note says why it is one.
    ///
    /// Example:
    ///
    /// ```text
    /// let guard = dev.state.lock();   // a SpinLock: preemption is off
    /// assert_eq!(guard.count, 1);     // warning: a failed KUnit assertion
    ///                                 // allocates and ends the test thread
    /// ```
    ///
    /// Fix: check the condition after the lock is released, or accept it:
    /// the path only runs once the test has failed. A CI that wants these to
    /// fail passes `--deny sleep-on-failure-path`.
    pub SLEEP_ON_FAILURE_PATH, "sleep-on-failure-path", Warning, "sleep",
    "a call or drop whose callee's expectation cannot be met, on a path that can only end in a failure routine (`panic!`, `BUG()`, a failed KUnit assertion)"
}

/// How a block of a body goes on, for the failure-path question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Returns to the caller: a normal path.
    Return,
    /// Calls a failure routine, aborts, or goes on unwinding: the path is
    /// a failure path from here.
    Failure,
    /// Never returns, but not through a failure routine (a call of a
    /// diverging function that is not one): not a failure path.
    Diverges,
    /// Cannot run (`unreachable`).
    Unreachable,
    /// Goes on to these blocks.
    Next(Vec<u32>),
}

/// Whether every path from block `from` reaches a [`Step::Failure`] before
/// it could return or diverge otherwise: the blocks reachable from `from`
/// (following [`Step::Next`], stopping at failures) hold no
/// [`Step::Return`] and no [`Step::Diverges`], and at least one failure.
/// Unwind edges are not followed (a path that unwinds is already a
/// failure). Returns the failure block met first (in breadth-first order
/// from `from`), or `None`.
pub(crate) fn ends_in_failure(steps: &[Step], from: u32) -> Option<u32> {
    let mut seen = vec![false; steps.len()];
    let mut queue = VecDeque::from([from]);
    let mut first = None;
    while let Some(b) = queue.pop_front() {
        let Some(step) = steps.get(b as usize) else {
            // A block the body does not have: nothing can be said.
            return None;
        };
        if std::mem::replace(&mut seen[b as usize], true) {
            continue;
        }
        match step {
            Step::Return | Step::Diverges => return None,
            Step::Failure => {
                first.get_or_insert(b);
            }
            Step::Unreachable => {}
            Step::Next(next) => queue.extend(next.iter().copied()),
        }
    }
    first
}

/// What a failure path ends in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// A call of this failure routine.
    Routine(FnId),
    /// An abort, or unwinding that goes on (a panic in progress).
    Abort,
}

/// Why a function is a failure routine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    /// The spec's `failure = true`.
    Spec,
    /// `#[kanalyze::failure]`.
    Attribute,
    /// Every path of its body ends in this.
    Through(Ending),
}

/// The failure routines of a program, and the answers to the two
/// questions, computed on demand.
pub(crate) struct FailurePaths<'a> {
    input: &'a Input<'a>,
    summaries: &'a [Summary],
    routines: std::cell::OnceCell<HashMap<FnId, Why>>,
    /// Per function and bound: `Some(ending)` when that bound of its
    /// expectation arises only on its failure paths; `None` while being
    /// computed (a recursion is not failure-only).
    fail_only: RefCell<HashMap<(FnId, Bound), Option<Ending>>>,
}

/// Which side of a callee's expectation a violation breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Bound {
    /// The count may be above what the callee allows (a sleep in atomic
    /// context).
    Upper,
    /// The count may be below it (atomic-only code in process context).
    Lower,
    /// Either, or the count is not known.
    Any,
}

impl Bound {
    /// The side `v` breaks.
    fn of(v: &Violation) -> Bound {
        let (e, p) = (v.callee_expect, v.possible);
        if v.unknown_adjustment || p.is_empty() || e.is_empty() {
            return Bound::Any;
        }
        let high = match (e.hi, p.hi) {
            (Some(eh), Some(ph)) => ph > eh,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let low = p.lo < e.lo;
        match (high, low) {
            (true, false) => Bound::Upper,
            (false, true) => Bound::Lower,
            _ => Bound::Any,
        }
    }

    /// Whether a callee with summary `s` can impose this bound on its
    /// caller's expectation.
    fn imposed_by(self, s: &Summary) -> bool {
        let conditional =
            s.sleeps_if_flag.is_some() || s.sleeps_if_zero.is_some() || s.context_sensitive;
        let ranges = std::iter::once(s.expect).chain(s.expect_when.iter().map(|(_, e)| *e));
        match self {
            Bound::Upper => conditional || ranges.into_iter().any(|e| e.hi.is_some()),
            Bound::Lower => conditional || ranges.into_iter().any(|e| e.lo > 0),
            Bound::Any => {
                conditional
                    || ranges
                        .into_iter()
                        .any(|e| e != annotations::ExpectRange::TOP)
            }
        }
    }
}

impl<'a> FailurePaths<'a> {
    pub(crate) fn new(input: &'a Input<'a>, summaries: &'a [Summary]) -> Self {
        FailurePaths {
            input,
            summaries,
            routines: std::cell::OnceCell::new(),
            fail_only: RefCell::new(HashMap::new()),
        }
    }

    /// The failure routines: marked ones, then every function whose every
    /// path ends in a call of one, to a fixed point (only the callers of a
    /// routine found are looked at again).
    fn routines(&self) -> &HashMap<FnId, Why> {
        self.routines.get_or_init(|| {
            let program = self.input.program;
            let mut routines: HashMap<FnId, Why> = HashMap::new();
            for (i, f) in program.functions.iter().enumerate() {
                let id = FnId(i as u32);
                let attributed = self
                    .input
                    .annotations
                    .get(f.item_path.as_str())
                    .is_some_and(|a| {
                        a.kanalyze
                            .iter()
                            .any(|(k, _)| *k == annotations::KanalyzeAnnotation::Failure)
                    });
                if attributed {
                    routines.insert(id, Why::Attribute);
                } else if self.input.spec.is_failure(
                    &f.symbol,
                    &f.item_path,
                    matches!(f.kind, FnKind::Foreign),
                ) {
                    routines.insert(id, Why::Spec);
                }
            }
            let mut work: Vec<FnId> = routines.keys().copied().collect();
            work.sort();
            while let Some(g) = work.pop() {
                for (caller, edge) in program.callers(g) {
                    if edge.kind != EdgeKind::Call || routines.contains_key(&caller) {
                        continue;
                    }
                    let Some(steps) = steps(self.input, caller, &routines) else {
                        continue;
                    };
                    if let Some(b) = ends_in_failure(&steps, 0) {
                        let ending = ending_at(self.input, caller, b, &routines);
                        routines.insert(caller, Why::Through(ending));
                        work.push(caller);
                    }
                }
            }
            routines
        })
    }

    /// Whether the violation `v` in `f` is on a failure path: its site's
    /// every path ends in a failure routine, or the callee needs the count
    /// only on its own failure paths. `Some` names what the path ends in.
    pub(crate) fn classify(&self, f: FnId, v: &Violation) -> Option<Ending> {
        if v.last_reference {
            return None;
        }
        let routines = self.routines();
        if routines.is_empty() {
            return None;
        }
        if let Some(steps) = steps(self.input, f, routines)
            && let Some(b) = ends_in_failure(&steps, v.block)
        {
            return Some(ending_at(self.input, f, b, routines));
        }
        // The site can return normally: the callee's own reason.
        match v.target.kind {
            EdgeKind::Call | EdgeKind::Drop => self.fail_only(v.target.callee, Bound::of(v)),
            EdgeKind::Virtual | EdgeKind::Indirect => None,
        }
    }

    /// Whether `bound` of `g`'s expectation arises only on its failure
    /// paths: it has an inferred summary, and every site of its body whose
    /// callee can impose that bound is on a failure path, or calls a
    /// function of which this holds.
    fn fail_only(&self, g: FnId, bound: Bound) -> Option<Ending> {
        if let Some(known) = self.fail_only.borrow().get(&(g, bound)) {
            return *known;
        }
        self.fail_only.borrow_mut().insert((g, bound), None);
        let answer = self.compute_fail_only(g, bound);
        self.fail_only.borrow_mut().insert((g, bound), answer);
        answer
    }

    fn compute_fail_only(&self, g: FnId, bound: Bound) -> Option<Ending> {
        let routines = self.routines();
        if routines.contains_key(&g) {
            return Some(Ending::Routine(g));
        }
        if self.summaries.get(g.index())?.source != analysis::Source::Inferred {
            return None;
        }
        let steps = steps(self.input, g, routines)?;
        let mut first = None;
        for (h, edge) in self.input.program.callees(g) {
            let summary = self.summaries.get(h.index())?;
            if !bound.imposed_by(summary) {
                continue;
            }
            let ending = match ends_in_failure(&steps, edge.block) {
                Some(b) => ending_at(self.input, g, b, routines),
                None => match edge.kind {
                    EdgeKind::Call | EdgeKind::Drop => self.fail_only(h, bound)?,
                    EdgeKind::Virtual | EdgeKind::Indirect => return None,
                },
            };
            first.get_or_insert(ending);
        }
        first
    }

    /// The notes that say why `ending` is a failure routine, and, for a
    /// violation inherited from its callee, that the callee needs the
    /// count only on its failure paths.
    fn why_notes(&self, f: FnId, v: &Violation, ending: Ending) -> Vec<Note> {
        let input = self.input;
        let mut notes = Vec::new();
        let on_site = steps(input, f, self.routines())
            .is_some_and(|s| ends_in_failure(&s, v.block).is_some());
        if !on_site {
            notes.push(Note::text(format!(
                "`{}` needs this count only on paths that end in a failure routine: every call in it that could need it is followed, on every path, by one",
                name(input, v.target.callee)
            )));
        }
        let mut routine = ending;
        // The chain of routines down to the one marked (at most a few).
        for _ in 0..8 {
            let Ending::Routine(r) = routine else {
                notes.push(Note::text(
                    "the path ends in an abort, or goes on unwinding a panic".to_string(),
                ));
                break;
            };
            let text = match self.routines().get(&r) {
                Some(Why::Spec) => format!(
                    "`{}` is a failure routine: the spec marks it (`failure = true`)",
                    name(input, r)
                ),
                Some(Why::Attribute) => format!(
                    "`{}` is a failure routine: it is annotated `#[kanalyze::failure]`",
                    name(input, r)
                ),
                Some(Why::Through(next)) => {
                    let what = match next {
                        Ending::Routine(n) => format!("`{}`", name(input, *n)),
                        Ending::Abort => "an abort".to_string(),
                    };
                    notes.push(Note::text(format!(
                        "`{}` is a failure routine: every path through it ends in {what}",
                        name(input, r)
                    )));
                    routine = *next;
                    continue;
                }
                None => break,
            };
            notes.push(Note::text(text));
            break;
        }
        notes
    }

    /// `finding` (a `sleep-in-atomic` error of violation `v` in `f`) as a
    /// `sleep-on-failure-path` warning, when it is one.
    pub(crate) fn reclassify(&self, f: FnId, v: &Violation, finding: Finding) -> Finding {
        let Some(ending) = self.classify(f, v) else {
            return finding;
        };
        let what = match ending {
            Ending::Routine(r) => format!("the failure routine `{}`", name(self.input, r)),
            Ending::Abort => "an abort".to_string(),
        };
        let mut out = Finding::new(
            &SLEEP_ON_FAILURE_PATH,
            Severity::Warning,
            format!("{}, on a path that ends in {what}", finding.message),
        );
        out.primary = finding.primary;
        out.label = finding.label;
        out.function = finding.function;
        out.trace_from = finding.trace_from;
        out.subject = finding.subject;
        out.notes = finding.notes;
        out.notes.extend(self.why_notes(f, v, ending));
        out.notes.push(Note::help(
            "this runs only once something has failed (an assertion, a checked invariant): it is reported apart from `sleep-in-atomic` (docs/preemption.md, \"Failure paths\"); `--deny sleep-on-failure-path` makes it an error",
        ));
        out
    }
}

/// `f`'s body as [`Step`]s, a call of one of `routines` a failure.
fn steps(input: &Input<'_>, f: FnId, routines: &HashMap<FnId, Why>) -> Option<Vec<Step>> {
    let program = input.program;
    if !matches!(program.function(f).kind, FnKind::Body { .. }) {
        return None;
    }
    let body = program.body(f)?;
    let routine = |symbol: &str| {
        program
            .lookup(symbol)
            .is_some_and(|g| routines.contains_key(&g))
    };
    Some(
        body.blocks
            .iter()
            .map(|block| match &block.terminator.kind {
                TerminatorKind::Return => Step::Return,
                TerminatorKind::Abort | TerminatorKind::Resume => Step::Failure,
                TerminatorKind::Unreachable => Step::Unreachable,
                TerminatorKind::Goto { target } => Step::Next(vec![*target]),
                TerminatorKind::SwitchInt {
                    targets, otherwise, ..
                } => Step::Next(
                    targets
                        .iter()
                        .map(|t| t.target)
                        .chain([*otherwise])
                        .collect(),
                ),
                TerminatorKind::Drop { target, .. } | TerminatorKind::Assert { target, .. } => {
                    Step::Next(vec![*target])
                }
                TerminatorKind::Call { callee, target, .. } => match callee {
                    Callee::Direct { symbol } if routine(symbol) => Step::Failure,
                    _ => match target {
                        Some(t) => Step::Next(vec![*t]),
                        None => Step::Diverges,
                    },
                },
                TerminatorKind::InlineAsm { target, .. } => match target {
                    Some(t) => Step::Next(vec![*t]),
                    None => Step::Diverges,
                },
            })
            .collect(),
    )
}

/// What the failure step at block `b` of `f` is.
fn ending_at(input: &Input<'_>, f: FnId, b: u32, routines: &HashMap<FnId, Why>) -> Ending {
    let Some(body) = input.program.body(f) else {
        return Ending::Abort;
    };
    match body.blocks.get(b as usize).map(|bb| &bb.terminator.kind) {
        Some(TerminatorKind::Call {
            callee: Callee::Direct { symbol },
            ..
        }) => match input.program.lookup(symbol) {
            Some(g) if routines.contains_key(&g) => Ending::Routine(g),
            _ => Ending::Abort,
        },
        _ => Ending::Abort,
    }
}

#[cfg(test)]
mod tests {
    use super::{Step, ends_in_failure};

    use Step::{Diverges, Failure, Next, Return, Unreachable};

    #[test]
    fn a_failure_call_ends_its_own_path() {
        // 0: the failing call itself.
        assert_eq!(ends_in_failure(&[Failure], 0), Some(0));
    }

    #[test]
    fn every_path_must_end_in_a_failure() {
        // 0 → {1, 2}; 1 fails, 2 returns.
        let steps = [Next(vec![1, 2]), Failure, Return];
        assert_eq!(ends_in_failure(&steps, 0), None);
        assert_eq!(ends_in_failure(&steps, 1), Some(1));
        // Both branches fail: the first met (breadth-first) is named.
        let steps = [Next(vec![2, 1]), Failure, Failure];
        assert_eq!(ends_in_failure(&steps, 0), Some(2));
    }

    #[test]
    fn the_failure_path_of_an_assertion() {
        // kunit_assert!: 0 tests, 1 reports the failure (a call that
        // returns), 2 aborts the test; 3 goes on to return.
        let steps = [Next(vec![3, 1]), Next(vec![2]), Failure, Return];
        assert_eq!(ends_in_failure(&steps, 1), Some(2));
        assert_eq!(ends_in_failure(&steps, 0), None);
    }

    #[test]
    fn other_divergence_is_not_a_failure() {
        // A call that never returns but is no failure routine.
        assert_eq!(ends_in_failure(&[Next(vec![1]), Diverges], 0), None);
        // After a failure, nothing else matters.
        assert_eq!(
            ends_in_failure(&[Next(vec![1]), Failure, Return], 0),
            Some(1)
        );
    }

    #[test]
    fn unreachable_blocks_and_loops() {
        // An unreachable arm does not make a path normal.
        let steps = [Next(vec![1, 2]), Unreachable, Failure];
        assert_eq!(ends_in_failure(&steps, 0), Some(2));
        // A loop whose only exit fails.
        let steps = [Next(vec![1]), Next(vec![0, 2]), Failure];
        assert_eq!(ends_in_failure(&steps, 0), Some(2));
        // A loop with no exit at all: no failure is ever reached.
        let steps = [Next(vec![1]), Next(vec![0])];
        assert_eq!(ends_in_failure(&steps, 0), None);
        // Only unreachable code after the site: nothing fails either.
        assert_eq!(ends_in_failure(&[Next(vec![1]), Unreachable], 0), None);
    }

    #[test]
    fn a_block_out_of_range_says_nothing() {
        assert_eq!(ends_in_failure(&[Next(vec![7])], 0), None);
        assert_eq!(ends_in_failure(&[], 0), None);
    }
}
