//! The body analysis and the summary domain: klint's preemption-count
//! semantics and the lock effects of every function instance, whole-program.
//!
//! Every function gets a [`Summary`]: how it moves the preemption count,
//! which entry counts it accepts, which locks it takes and releases.
//! Summaries of functions without a body come from annotations, the spec of
//! C functions, or klint's defaults (`external`); the others are inferred
//! from their bodies (`function`, over the per-body engine in `body`) by
//! the bottom-up interprocedural engine (`solver`), for which this crate is
//! one [`solver::SummaryDomain`] (`domain`).
//!
//! What the analysis observes on the way leaves as typed [`Events`]; this
//! crate does not depend on `findings` and cannot make a finding. The
//! checks (`crates/checks`) turn events and summaries into findings.

mod body;
mod context;
mod declared;
mod domain;
mod drops;
mod entry_split;
mod events;
mod external;
mod function;
mod index;
mod liveness;
mod lock_runs;
mod rust_spec;
mod summary;

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use annotations::ItemAnnotations;
use program::{FnId, Program};

pub use body::{
    AdjustFailure, CountChange, LockEvent, Nesting, OpenNesting, Proof, Target, Violation,
};
pub use bounds::{Bound, Hits, STEP_BUDGET};
pub use context::{Context, fn_pointer_source};
pub use declared::DeclaredView;
pub use events::{DropProblem, Events};
pub use external::annotation_of;
pub use liveness::Contract;
pub use lock_runs::{Leak, LockRuns};
pub use solver::Progress;
pub use summary::{
    Acquisition, ArgCond, Case, FieldPath, Final, Flow, Overlay, Reason, RetFact, Source,
    Summaries, Summary, Take, adjust_text,
};

/// What the analysis reads: the linked program, the annotations of its
/// items, and the spec of C functions.
pub struct Input<'a> {
    pub program: &'a Program,
    pub annotations: &'a HashMap<String, ItemAnnotations>,
    pub spec: &'a spec::Spec,
    /// Declared invariants, resolved against the program (the drops they
    /// turn into no-ops).
    pub invariants: &'a invariants::Resolved,
    /// Print the body fixed point of functions whose name contains this
    /// text (a debugging aid of the CLI's `--trace`).
    pub trace: Option<&'a str>,
    /// The step budget of one body's analysis (`bounds::STEP_BUDGET`
    /// unless a test asks for less): past it the body gets the summary of
    /// an unknown function.
    pub step_budget: u64,
    /// Told how far the solve is (the CLI's progress bar); the results do
    /// not depend on it.
    pub progress: Option<&'a (dyn Fn(solver::Progress) + Sync)>,
}

/// Every function's summary and the events of every analysed function.
pub struct Solved {
    pub summaries: Vec<Summary>,
    /// Of the functions that observed anything, in schedule order (level
    /// by level, each component's members callees first), whatever order
    /// the threads analysed them in.
    pub events: Vec<(FnId, Events)>,
    /// C functions called that neither the spec nor an annotation describes.
    pub unknown_foreign: BTreeSet<String>,
    pub stats: solver::Stats,
}

/// Summarises the whole program bottom-up.
pub fn solve(input: &Input<'_>) -> Solved {
    solve_with(input, &solver::Schedule::new(input.program), None)
}

/// The results of one component of the solve, its members callees first
/// (as [`Recall::recall`] gives them back).
pub type ComponentResults = Vec<(FnId, Summary, Option<Box<Events>>)>;

/// Results of earlier solves, by component (the CLI's summary cache).
///
/// An implementation must only recall, for a component, what analysing it
/// again would give: the same summaries and events, to the byte. The solve
/// uses what it recalls as it comes.
pub trait Recall: Sync {
    /// The results of the component of `members` (sorted, as in the
    /// schedule); `None` to analyse it.
    fn recall(&self, members: &[FnId]) -> Option<ComponentResults>;
    /// The results of the component of `members`, just analysed.
    fn remember(&self, members: &[FnId], results: &[(FnId, Summary, Option<Box<Events>>)]);
}

/// [`solve`] in `schedule`'s order (`solver::Schedule::new(input.program)`),
/// recalling components from `recall` where it can.
pub fn solve_with(
    input: &Input<'_>,
    schedule: &solver::Schedule,
    recall: Option<&dyn Recall>,
) -> Solved {
    let program = input.program;
    let domain = domain::PreemptDomain {
        input,
        unknown_foreign: Mutex::new(BTreeSet::new()),
        recall,
    };
    let solution = solver::solve_observed(
        program,
        schedule,
        &domain,
        solver::Limits::default(),
        input.progress.unwrap_or(&|_| {}),
    );
    Solved {
        summaries: solution.summaries,
        events: solution
            .events
            .into_iter()
            .filter_map(|(f, e)| Some((f, *e?)))
            .collect(),
        unknown_foreign: domain
            .unknown_foreign
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
        stats: solution.stats,
    }
}
