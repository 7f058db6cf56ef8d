//! What one body's fixed point observes, as typed data for the summary
//! and the checks.

use annotations::ExpectRange;
use kmir::BlockId;
use program::FnId;

use crate::summary::{Case, Summary, Take};
use domains::Adj;
use domains::Held;

use super::Target;

/// A call or drop whose callee's expectation cannot be met.
#[derive(Clone, Debug, bincode::Encode, bincode::Decode)]
pub struct Violation {
    pub block: BlockId,
    pub span: kmir::Span,
    pub target: Target,
    pub callee_expect: ExpectRange,
    /// The counts possible at the site, given what was required so far.
    pub possible: ExpectRange,
    /// The count is unknown here (the adjustment could not be tracked).
    pub unknown_adjustment: bool,
    /// The locks held on the path that violates the expectation.
    pub held: Vec<Held>,
    /// The callee's summary specialised to this call's constants, when it
    /// was (its reason explains the first step).
    pub specialised: Option<Box<Summary>>,
    /// Only the callee's last-reference expectation is violated: the
    /// finding depends on whether a reference dropped here is the last.
    pub last_reference: bool,
}

/// A lock acquired at a call or drop site while another is held: an edge
/// of the lock-order graph, or, when both are one class, a finding.
#[derive(Clone, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct Nesting {
    pub held: Held,
    pub take: Take,
    /// The call (in this function) during which `take` happens.
    pub site: kmir::Span,
    pub callee: FnId,
}

/// A nesting of one lock class in itself: the same object (a double lock)
/// or possibly two instances.
#[derive(Clone, Debug, bincode::Encode, bincode::Decode)]
pub struct LockEvent {
    pub nesting: Nesting,
    pub same_object: bool,
    /// A nesting of one class observed in a callee (`Proof::origin`) on two
    /// locations the callee cannot tell apart, which this function's call
    /// makes one object: `nesting` is as the origin saw it.
    pub proof: Option<Proof>,
}

/// How a caller proves that a callee's nesting of one lock class is on one
/// object: substituted at its call, both locations are the same.
#[derive(Clone, Debug, bincode::Encode, bincode::Decode)]
pub struct Proof {
    /// The function in which the nesting happens.
    pub origin: FnId,
    /// The calls from the proving function down to `origin`: (function,
    /// call site in it); the first is the proving call.
    pub via: Vec<(FnId, kmir::Span)>,
    /// The one lock object, in the proving function's terms.
    pub lock: memory::Location,
}

/// A nesting of one lock class on two locations rooted at the arguments of
/// the summary's function, that a caller may prove to be one object
/// (`self.inner` held while `thread.process.inner` is taken, and the
/// caller passes `thread.process` as `self`). Kept in summaries
/// ([`Summary::open_nestings`](crate::Summary)), resolved at call sites.
#[derive(Clone, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct OpenNesting {
    /// The held and the taken lock, in the summary's function's terms.
    pub held: memory::Location,
    pub take: memory::Location,
    /// The function in which the nesting happens, and the nesting as it
    /// saw it.
    pub origin: FnId,
    pub nesting: Nesting,
    /// From the summary's function down to `origin`: (function, call site).
    pub via: Vec<(FnId, kmir::Span)>,
}

/// Most open nestings a summary keeps.
pub const MAX_OPEN_NESTINGS: usize = 4;

/// Why the adjustment could not be inferred.
#[derive(Clone, Debug, bincode::Encode, bincode::Decode)]
pub struct AdjustFailure {
    /// The returns reached with each adjustment.
    pub returns: Vec<(Adj, kmir::Span)>,
    /// Sites where the count changes.
    pub changes: Vec<CountChange>,
}

/// A call or drop whose callee moves the preemption count.
#[derive(Clone, Debug, bincode::Encode, bincode::Decode)]
pub struct CountChange {
    pub span: kmir::Span,
    pub callee: FnId,
    /// The callee's cases as the site saw them (specialised where the
    /// call was).
    pub cases: Vec<Case>,
}
