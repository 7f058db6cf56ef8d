//! What analysing one function observed that the checks report on: typed
//! data, never a finding. Only the checks (`crates/checks`) turn events into
//! findings, and only `report` renders those.

use program::FnId;

use crate::body::{AdjustFailure, Violation};
use crate::declared::DeclaredView;
use crate::lock_runs::LockRuns;
use crate::summary::Summary;

/// The events of one function's analysis.
#[derive(Clone, Debug, Default, bincode::Encode, bincode::Decode)]
pub struct Events {
    /// Calls and drops whose callee's expectation the preemption count at
    /// the site violates (sleep family).
    pub violations: Vec<Violation>,
    /// Paths that return with different adjustments (adjustment family).
    pub adjust_failure: Option<AdjustFailure>,
    /// The lock results of the function's runs (lock-state and lock-order
    /// families).
    pub locks: LockRuns,
    /// An annotation declares a non-zero adjustment: the function returns
    /// holding a spinning lock on purpose.
    pub declares_adjust: bool,
    /// A checked annotation and the summary inferred from the body, before
    /// the annotation replaced it (annotations family).
    pub declared: Option<(DeclaredView, Box<Summary>)>,
    /// An array or slice drop glue whose elements' drops do not add up
    /// (drops family).
    pub drop: Option<DropProblem>,
    /// The function's recursive component reached no fixed point: its
    /// summary in the last round, before it was given up (adjustment family).
    pub unsettled: Option<Box<Summary>>,
    /// The bounds its analysis hit (`crates/bounds`): where it widened,
    /// and whether it ran out of its step budget (its summary is then an
    /// unknown function's, and its other events are dropped).
    pub bounds: bounds::Hits,
}

impl Events {
    /// Whether there is nothing to report on.
    pub fn is_empty(&self) -> bool {
        self.violations.is_empty()
            && self.adjust_failure.is_none()
            && self.locks.is_empty()
            && self.declared.is_none()
            && self.drop.is_none()
            && self.unsettled.is_none()
            && self.bounds.is_empty()
    }
}

/// Why an array's or slice's drop glue cannot be summarised from its
/// elements' drop.
#[derive(Clone, Debug, bincode::Encode, bincode::Decode)]
pub enum DropProblem {
    /// Dropping the elements one after another leaves no count at which
    /// the last one may be dropped.
    Array {
        /// Expectation of one element's drop.
        elem_expect: annotations::ExpectRange,
        /// The count possible when the last element is dropped.
        last: annotations::ExpectRange,
        /// The array type.
        ty: String,
    },
    /// The elements' drop moves the count, and a slice's length is unknown.
    Slice {
        /// The elements' drop glue.
        elem_glue: FnId,
        elem_adjust: i32,
        /// The slice type.
        ty: String,
    },
}
