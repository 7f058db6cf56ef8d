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
//!
//! # Modules
//!
//! * `body`: the transfer functions of calls, drops and assignments over the
//!   product state (`domains::PcState`); `function` combines one function's
//!   runs; `external` gives the summaries of functions without a body
//!   (annotations, spec, defaults); `declared` applies declarations; `drops`
//!   the array, slice and `dyn` drop glue; `entry_split` splits a summary by
//!   the variant of the first argument (or of a field of it, or by the value
//!   of a `bool` field the body branches on or returns); `context` the
//!   call-site contexts of specialisations; `rust_spec` puts the spec's
//!   `[rust]` lock effects and blocking over a Rust item's summary; `domain`
//!   is this analysis as a `solver::SummaryDomain`; `reuse` solves again
//!   after a change that reaches only some functions (the invariants
//!   audit), recalling the rest from an earlier solve.
//! * A `Summary` has cases with lock effects, `takes`, and the
//!   last-reference expectation `expect_last`; its `last_place` says which
//!   place below the first argument (fields, variants, and pointers:
//!   `PlaceStep::Deref`) that expectation comes from, and for which variants,
//!   each step named by the struct and field it projects (`labels`), so a
//!   caller whose facts say the place holds another variant (an `Option`
//!   `take()`n) drops no last reference there.
//! * `liveness/` is the model of object liveness (docs/architecture.md,
//!   "Object liveness"): `transfer` (statements and calls on the object facts,
//!   the frame rule), `contract` (what a body tells its callers, read at its
//!   returns; part of `Summary`), `discharge` (the one rule and its `Proof`)
//!   and `types` (what the model asks of types: a pointer, a handle around
//!   one, a field's declared type).
//! * `index/` holds the facts computed once per body before the abstract
//!   interpretation and queried by it, as rustc's `MoveData`: `LiveLocals`, a
//!   backward bit-set liveness of locals on `dataflow`.
//!
//! # The flow-insensitive recognisers
//!
//! They run beside the object-liveness model; a release is discharged when
//! the model proves it or one of them does (`body/run.rs`). The structural
//! ones read a body through `body::BodyInputs` (the dump, the body, the call
//! sites, the callees' summaries, the write scan) and share the walks back
//! through a local's one definition (`body/chain.rs`).
//!
//! * `body/origins.rs`: where what each local holds comes from (`Flow`: moved
//!   from an argument, a borrow or bit copy of what a shared-reference
//!   argument borrows, a sharing clone of it), read by the sites'
//!   last-reference expectations: a drop releasing only sharing clones of
//!   borrowed objects is *backed*, and so is one an identity test ties to a
//!   handle a borrow or an unwritten `&mut` keeps, or one whose clone a call
//!   the spec says keeps its argument put into a held lock's data. Summarised
//!   as `ret_from`, `last_from`, `last_field` (a drop glue whose last-reference
//!   part is one field) and `sharing_clone`. A `Flow` carries a field path
//!   (`FieldPath`) below what the argument points to, and `Origin::Guard` what
//!   a lock guard's `Deref` view reaches (tied to the view call, so a guard
//!   released and locked again is a new acquisition); a path's `pointer` flag
//!   says the way goes through a pointer stored there, not into that memory.
//! * `body/writes.rs` is mod/ref: the guards of a body and their views
//!   (`Guards`), and a may-analysis of where each local's pointers point (an
//!   argument's, a guard's data, a local, or memory none of those is: a new
//!   allocation, a static, what C returned) and where the body and its
//!   callees may write, summarised as `writes`, `ret_points`, `ret_fresh` (the
//!   result may point to memory of its own) and `stores_own` (the arguments
//!   whose memory receives only pointers reached from it, such as an
//!   iterator's `next`).
//! * `body/accessors.rs` names the places accessors return
//!   (`memory::ProjKey::Via`: the same place for every call given the same
//!   place) and keeps the facts about contents only a handle the body holds by
//!   `&mut` reaches (`ret_exclusive`, from the spec's `exclusive_to_handle`:
//!   `ListArcField`) across calls and writes that cannot reach them; two
//!   getters' places are disjoint only when their bodies show they return
//!   different fields of the object (`exclusive_field`).
//! * `body/guard_data.rs` keeps the value facts about a held lock's data
//!   (named by one pseudo-local per guard, which every view points at) across
//!   the calls that the write summaries show cannot change them, and forgets
//!   them where the guard is released or lent.
//! * `body/same_or_none.rs` recognises functions whose result says two
//!   optional handles are both empty or hold one object (`same_or_none`:
//!   Binder's `is_stacked_on`) and backs a drop of a held lock's data (or of
//!   what a `&mut` argument points to) on the branch where such a test held
//!   against a handle that outlives the drop.
//! * `body/exhausted.rs` finds the drops of an iterator local that every way
//!   reaches through the `None` arm of a switch on what a `next` the spec
//!   marks `empty_after_none` (`DrainAll`) returned, with nothing touching the
//!   iterator in between: they release no last reference.
//! * `body/exclusive_handle.rs` finds the releases of a sharing clone of a
//!   field of an object that a handle in an exclusive field counts (Binder's
//!   `info.node_ref2().node.owner.clone()`), where nothing between the clone
//!   and the release reaches that field and the root handle stays in a held
//!   lock's unwritten data: they join `not_last`.
//! * `body/absent_key.rs` reads keyed maps: a lookup (the spec's
//!   `looks_up_key`, or a function whose summary's `absent_key` says what
//!   shape of its result shows a key absent) and the switch edges taken only
//!   on that shape; an insert (`displaces_key_of`) of a node made with that
//!   key (`node_key`) that every way reaches through such an edge, with the
//!   map unwritten and held in between, displaces nothing. Such an insert, or
//!   a call a never-fails declaration covers
//!   (`invariants::Resolved::succeeds_in`), leaves its success variant as a
//!   value fact on its result.
//! * `body/pointer_copies.rs`: which locals hold a copy of a pointer stored
//!   below `*_1` (through casts, reborrows, structs built around it, calls
//!   whose result holds only their first argument), so that `Box::drop` and
//!   `Arc::drop` say the expectation comes from the object their pointer
//!   points to.
//! * `body/same_object.rs` reads a same-object declaration
//!   (`invariants::Resolved::same_object_in`) at the drops it was resolved
//!   to: the expectation does not apply when the callee's place passes
//!   through the declared back pointer and the declared variable keeps its
//!   object alive there (a shared-reference argument, or a local holding a
//!   sharing clone no kill point reaches).

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
mod reuse;
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
pub use reuse::{Reuse, solve_again};
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
#[derive(Clone)]
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
