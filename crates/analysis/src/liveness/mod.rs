//! Object liveness: whether a drop under a lock can release the last
//! reference to an object, decided by one model.
//!
//! * **Facts** (`memory::objects`, one per path, inside the value facts):
//!   for a place, an upper bound of the objects its value refers to,
//!   written as the places that also hold them (`Holder`), learnt from
//!   moves, copies, aggregates, identity tests and callees' contracts, and
//!   killed by every change of a place they name (substituted by what that
//!   place held), so a fact present at a point is true there.
//! * **Transfer** ([`transfer`]): what statements and calls do to them; at
//!   a call, the frame rule (the callee's write summary says what changes;
//!   nothing else does) and the callee's [`Contract`] in the caller's
//!   terms.
//! * **Contracts** ([`contract`]): what a function tells its callers, read
//!   off its body at its returns: where its result's objects are held,
//!   facts guarded by its result's value (an identity test), facts about
//!   its arguments' memory, where it keeps what it is given, and what it
//!   may release as a last reference.
//! * **The rule** ([`discharge`]): a release is not the last reference when
//!   every object it refers to is held by another place, alive and
//!   unchanged since; the [`Proof`](discharge::Proof) says which places, or that it refers
//!   to nothing, or which declaration covered it.
//!
//! Types ([`types`]) answer what the model asks of them: a place's type,
//! a struct around one pointer, whether a reference or a handle keeps
//! memory alive.

pub mod contract;
pub mod discharge;
pub mod transfer;
pub mod types;

pub use contract::Contract;
