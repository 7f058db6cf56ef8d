//! The bottom-up interprocedural engine.
//!
//! Functions are summarised callees first: each of the call graph's
//! strongly connected components ([`Schedule`]) is solved as soon as every
//! component it calls has finished, on as many threads as rayon's current
//! pool has, the ready component with the costliest chain of callers above
//! it first ([`SummaryDomain::cost`]); there is no barrier between the
//! schedule's levels. A component without recursion is
//! analysed once, with every callee's summary final. A recursive component
//! iterates: its members start from a [`SummaryDomain::provisional`]
//! summary and are re-analysed, in callee-first order and each seeing the
//! summaries computed earlier in the same round (Gauss-Seidel), until no
//! summary changes or a round limit ([`Limits`]) is reached.
//!
//! Like rustc's `rustc_mir_dataflow` engine, this one knows no domain: a
//! [`SummaryDomain`] says what a function's summary is without a body, how
//! to analyse one body given read access to other summaries ([`Env`]), and
//! when a change can only settle. Summaries are read by reference; the
//! engine clones none to answer a lookup. Call-site specialisations (a
//! callee analysed again for what one call passes) are cached here too, per
//! function and context, for the whole solve.
//!
//! The results are deterministic whatever the number of threads and the
//! timing: a component reads exactly what a level-by-level solve would give
//! it (every callee's final summary; see [`Env::summary`] for reads without
//! a call edge), results are merged in schedule order (level by level, the
//! components of a level in schedule order), and a component's members are
//! analysed in an order that only depends on the call graph. Only the
//! cache of specialisations is shared between threads, and a
//! specialisation depends on final summaries alone, so whichever thread
//! computes one first computes the same thing.

#![warn(missing_docs)]

mod dispatch;
mod engine;
mod schedule;

#[cfg(test)]
mod recall_tests;
#[cfg(test)]
mod tests;

pub use engine::{
    Env, Limits, Progress, Results, Solution, Stats, SummaryDomain, solve, solve_observed,
};
pub use program::FnId;
pub use schedule::{CallGraph, SccId, Schedule};
