//! The memory model: what the analyses know about places and the memory
//! they denote, apart from any abstract domain that uses it.
//!
//! * [`location`]: abstract locations ([`Location`]) — an argument, a static
//!   or a local, then fields and dereferences — and their lockdep-like
//!   classes;
//! * [`facts`]: value facts of one program point (drop flags, enum
//!   discriminants, copies, which location a pointer holds), with the
//!   transfer of each MIR assignment;
//! * [`places`]: the location of a place in one body, and the substitution
//!   of a callee's locations into a caller's terms at a call site.
//!
//! Architecture invariant: nothing here knows about preemption counts,
//! locks held or findings; a location in a summary is in the callee's
//! terms, and [`Places::substitute`] is the only conversion into a caller's.

pub mod facts;
pub mod location;
pub mod objects;
pub mod place;
pub mod places;

pub use facts::{
    Aspect, Facts, Known, PlaceKey, ProjKey, Resolved, Val, guard_data, is_guard_data,
};
pub use location::{Location, LocationData, LockClass, MAX_STEPS, Root, Step, short_type};
pub use objects::{Bound, Bounds, FieldId, Guarded, Holder, Objects};
pub use places::Places;

/// The pseudo-local that stands for `*arg0` on entry, when a function is
/// analysed once per variant of the enum its first argument points to: facts
/// about it describe the caller's value, and it has no location of its own.
pub const ENTRY_ARG0: kmir::LocalId = u32::MAX;
