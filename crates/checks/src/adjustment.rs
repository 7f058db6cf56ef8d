//! The adjustment family: paths returning with different counts, and
//! recursion without a fixed point.

use findings::{Finding, Note, Severity};
use program::FnId;

use analysis::{AdjustFailure, Summary};
use domains::Adj;

use crate::Input;
use crate::text::{Texts, loc, name};

findings::declare_kind! {
    /// Paths reach a return with different preemption counts: a lock released on
    /// some paths only, or taken in a loop. klint reports the same; annotate the
    /// function with `#[klint::preempt_count(adjust = N, unchecked)]` if it is
    /// deliberate.
    ///
    /// Example:
    ///
    /// ```text
    /// fn maybe_lock(l: &SpinLock<u32>, keep: bool) {
    ///     let g = l.lock();
    ///     if keep { core::mem::forget(g) }   // error: returns with count 1 or 0
    /// }
    /// ```
    ///
    /// Fix: make every path leave the count the same, or split the function; declare a deliberate effect with `#[klint::preempt_count(adjust = …)]`.
    pub CANNOT_INFER_ADJUSTMENT, "cannot-infer-adjustment", Error, "adjustment",
    "paths reach a return with different preemption counts (a lock released on some paths only, or taken in a loop)"
}

findings::declare_kind! {
    /// A recursive function whose adjustment has no fixed point, e.g. one that
    /// takes a lock per recursion level. The summary is given up, and callers
    /// are not checked against it.
    ///
    /// Example:
    ///
    /// ```text
    /// fn walk(l: &SpinLock<u32>, n: u32) {
    ///     core::mem::forget(l.lock());   // one more each level
    ///     if n > 0 { walk(l, n - 1) }    // error: no fixed adjustment
    /// }
    /// ```
    ///
    /// Fix: take the lock once, outside the recursion.
    pub RECURSION, "recursion", Error, "adjustment",
    "a recursive function whose adjustment has no fixed point (e.g. takes a lock per level)"
}

impl Texts<'_, '_> {
    pub fn adjust_failure(&self, failure: &AdjustFailure) -> Finding {
        let input = self.input;
        let primary = failure.returns.first().map(|(_, s)| *s).unwrap_or_default();
        let mut finding = Finding::new(
            &CANNOT_INFER_ADJUSTMENT,
            Severity::Error,
            "cannot infer preemption count adjustment at this point",
        )
        .at(loc(input, self.f, primary))
        .label("the function returns here with different preemption counts")
        .in_function(self.f)
        .subject(name(input, self.f));
        for (i, (adj, span)) in failure.returns.iter().enumerate() {
            let lead = match i {
                0 => "",
                1 => "while ",
                _ => "and ",
            };
            let text = match adj {
                Adj::Known(a) => format!(
                    "{lead}preemption count adjustment is {a} on a path reaching this return"
                ),
                Adj::Top => format!(
                    "{lead}preemption count adjustment is changed in the previous iteration of the loop"
                ),
            };
            finding = finding.note(Note::at(loc(input, self.f, *span), text));
        }
        for change in failure.changes.iter().take(6) {
            finding = finding.note(Note::at(
                loc(input, self.f, change.span),
                format!(
                    "`{}` adjusts the count by {}",
                    name(input, change.callee),
                    analysis::adjust_text(&change.cases)
                ),
            ));
        }
        finding.note(Note::help(
            "release what is acquired on every path, or annotate the function with `#[klint::preempt_count(adjust = N, unchecked)]` if the imbalance is intended",
        ))
    }
}

pub(crate) fn recursion_failure(input: &Input<'_>, f: FnId, s: &Summary) -> Finding {
    let span = input
        .program
        .body_of(f)
        .map(|(_, i)| i.span)
        .unwrap_or_default();
    Finding::new(
        &RECURSION,
        Severity::Error,
        "this function is recursive but its preemption count adjustment does not reach a fixed point",
    )
    .at(loc(input, f, span))
    .note(Note::text(format!("the adjustment is {} after the last round of inference", s.adjust_text())))
    .note(Note::text(format!("instance being checked is `{}`", name(input, f))))
    .note(Note::help(format!(
        "if the recursion is bounded, annotate the function with `#[klint::preempt_count(adjust = {}, unchecked)]`",
        s.uniform_adjust().unwrap_or(0)
    )))
    .in_function(f)
    .subject(name(input, f))
}
