//! The abstract domains of the body analysis, each a lattice of its own, and
//! their product, the state of one program point.
//!
//! * [`count`]: the preemption-count offset since entry ([`Adj`]);
//! * [`held`]: the locks a path holds and releases ([`LockState`]);
//! * value facts live in the memory model (`memory::Facts`);
//! * [`path`]: the product — a small set of [`Path`]s, one per distinct
//!   offset and lock state, each with its facts ([`PcState`]).
//!
//! Each domain is a lattice in the sense of `dataflow::lattice`: [`Adj`] is a
//! flat [`JoinSemiLattice`](dataflow::JoinSemiLattice) (offsets that differ
//! join to `Top`), [`LockState`] a [`MeetSemiLattice`](dataflow::MeetSemiLattice)
//! (what two paths both hold and released), and facts join by
//! `Facts::intersect` (fewer facts is higher). The engine only sees the
//! product, [`PcState`], whose join keeps paths with different offsets or
//! lock states apart, merges the facts of paths that agree on both, and past
//! [`MAX_PATHS`] collapses everything into one path whose components are
//! the component-wise join (offset `Top`, intersected facts, met lock
//! states). The unreachable state (no path) is the bottom.
//!
//! Architecture invariant: a domain cannot emit a finding (this crate does
//! not depend on `findings`). What the analysis observes leaves as typed
//! events, and only the checks turn those into findings.

pub mod count;
pub mod held;
pub mod path;

pub use count::Adj;
pub use held::{Acquired, Held, LockState, MAX_HELD, has_object, recursive_ok};
pub use path::{MAX_PATHS, Path, PcState};
