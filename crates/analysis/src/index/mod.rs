//! Facts about one body computed once, before any abstract interpretation,
//! and queried by the analyses (as rustc's `MoveData`): which locals are
//! read later.

pub(crate) mod live_locals;

pub(crate) use live_locals::LiveLocals;
