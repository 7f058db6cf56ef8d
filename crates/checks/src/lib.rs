//! The checks: every finding kanalyze reports is made here, from the
//! analysis's summaries and typed events, one module per family of kinds.
//!
//! Each family module declares its kinds once (`findings::declare_kind!`,
//! with the long explanation as the doc comment) beside the code that
//! detects and words them; [`KINDS`] lists them all. Per-function families
//! (sleep, adjustment, annotations, drops, lock state) read the events the
//! analysis recorded for that function; whole-program ones (pointers and
//! vtables, exported functions, callbacks, lock order, IRQ safety) read
//! every summary.
//!
//! Architecture invariant: the analysis (`crates/analysis`, `domains`,
//! `memory`) does not depend on `findings`; only this crate makes a
//! [`Finding`], and only `report` renders one.
//!
//! The families: `sleep`, `adjustment`, `annotation`, `exported`,
//! `pointers` (fn pointers, vtables, upcasts), `drops`, `callbacks` (C API
//! contracts), `lock_state`, `lock_order`, `irq_safety`, `build_assert`
//! (constant conditions, arguments in functions not `#[inline(always)]`,
//! run-time values into assertions), and `failure` (a `sleep-in-atomic`
//! violation on a path that can only end in a failure routine becomes
//! `sleep-on-failure-path`: the failure routines to a fixed point, and the
//! one-body CFG question `ends_in_failure`). `text` holds the shared wording
//! (why a callee expects what it expects); `placement` decides where a
//! finding is shown (library code vs the program's own, docs/output.md
//! "Where a finding is placed") and moves findings found in the standard
//! library's code to the program's site that reaches them.
//!
//! `run` solves the summaries and runs every check; `check` runs the
//! independent checks side by side (rayon) and appends their findings in a
//! fixed order, so they do not depend on the number of threads. What the
//! whole-program checks read in every body (callback registrations, the casts
//! `pointers` checks, the `build_assert!`s) is gathered in one walk
//! (`BodyWalk`), so each body is decoded once for all of them; what it reads
//! of a body alone (casts, `build_assert!` facts, and in a body that holds a
//! code pointer the functions each call passes and the ops-table fields of its
//! constants) goes through `Program::per_body`, and the registrations, which
//! depend on the spec and the call graph, are made from these on every run.

mod adjustment;
mod annotation;
mod build_assert;
mod callbacks;
mod drops;
mod exported;
mod failure;
mod irq_safety;
mod lock_order;
mod lock_state;
mod placement;
mod pointers;
mod sleep;
mod text;

use std::collections::{BTreeSet, HashMap};

use analysis::{Events, Final, Summary};
use findings::{Finding, Kind};
use program::{FnId, FnKind, Program};

pub use analysis::{Input, STEP_BUDGET};
pub use annotation::BAD_ANNOTATION;
pub use placement::about_own_balance;

/// Every finding kind, in docs/output.md's order. `--deny`/`--warn`/`--allow` and
/// `--explain` take these names; docs/output.md documents each (a test
/// keeps the two in step).
pub static KINDS: &[&Kind] = &[
    &sleep::SLEEP_IN_ATOMIC,
    &sleep::LAST_REFERENCE_IN_ATOMIC,
    &failure::SLEEP_ON_FAILURE_PATH,
    &callbacks::CALLBACK_CONTEXT,
    &callbacks::CALLBACK_ADJUSTMENT,
    &adjustment::CANNOT_INFER_ADJUSTMENT,
    &annotation::ANNOTATION_MISMATCH,
    &exported::EXTERN_FUNCTION,
    &adjustment::RECURSION,
    &drops::ARRAY_DROP,
    &drops::SLICE_DROP,
    &pointers::TRAIT_UPCAST,
    &annotation::BAD_ANNOTATION,
    &pointers::FN_POINTER,
    &pointers::VTABLE,
    &lock_state::DOUBLE_LOCK,
    &lock_state::NESTED_LOCK_CLASS,
    &lock_order::LOCK_ORDER_INVERSION,
    &lock_state::LOCK_LEAK,
    &lock_state::UNBALANCED_UNLOCK,
    &irq_safety::IRQ_UNSAFE_LOCK,
    &build_assert::BUILD_ASSERT_CAN_BE_CONST,
    &build_assert::BUILD_ASSERT_NOT_INLINED,
    &build_assert::BUILD_ASSERT_RUNTIME_VALUE,
    &stack::STACK_DEPTH_EXCEEDED,
    &stack::STACK_FRAME_TOO_LARGE,
    &stack::STACK_UNBOUNDED_RECURSION,
    &annotation::REPORT,
];

/// A Rust function handed to C with a callback contract (an argument of a
/// C function whose spec entry has `callbacks`, or a field of an ops table
/// with a `[field]` contract): what `kanalyze stack` takes as a root.
#[derive(Clone, Debug)]
pub struct CallbackRoot {
    pub callback: FnId,
    /// "registered with `request_irq`", "stored in `blk_mq_ops.queue_rq`".
    pub how: String,
    /// The contract's role: "hard-IRQ handler".
    pub role: String,
    pub hardirq: bool,
    /// Where it is handed to C.
    pub site: findings::Loc,
}

/// Every callback registration of the program (as `callback-context`
/// checks them), one per callback and contract, in a stable order.
pub fn callback_roots(input: &Input<'_>) -> Vec<CallbackRoot> {
    callbacks::registrations(input)
        .0
        .into_iter()
        .map(|r| CallbackRoot {
            callback: r.callback,
            how: r.how,
            role: r.contract.role,
            hardirq: r.contract.hardirq,
            site: r.site,
        })
        .collect()
}

/// The kind called `name`.
pub fn kind(name: &str) -> Option<&'static Kind> {
    KINDS.iter().copied().find(|k| k.name == name)
}

/// Summaries and findings of the whole program.
pub struct Output {
    pub summaries: Vec<Summary>,
    pub findings: Vec<Finding>,
    /// C functions called that neither the spec nor an annotation describes.
    pub unknown_foreign: BTreeSet<String>,
    pub locks: LockStats,
    pub solver: solver::Stats,
    /// The functions whose analysis hit a bound of the analysis (it
    /// widened there, or ran out of its step budget), the worst first
    /// (`Hits::severity`, then the order of the events).
    pub imprecise: Vec<(FnId, analysis::Hits)>,
}

/// Figures of the whole-program lock checks.
#[derive(Clone, Debug, Default)]
pub struct LockStats {
    /// "B acquired while A held" witnesses found in bodies.
    pub order_edges: usize,
    /// Distinct classes in the order graph.
    pub classes: usize,
    pub irq_handlers: usize,
    /// Rust functions registered with a C API that has a callback contract.
    pub callbacks: usize,
}

/// Solves the program's summaries and runs every check.
pub fn run(input: &Input<'_>) -> Output {
    check(input, analysis::solve(input))
}

/// What the checks read of the program alone, whatever the solve found:
/// the callback registrations and one walk over every body. Gathered once,
/// it serves any number of [`check_walked`] runs on other solves of the
/// same program (the invariants audit's).
pub struct ProgramWalk {
    registrations: Vec<callbacks::Registration>,
    walk: BodyWalk,
}

/// A walk gathered by this run, or given to it.
enum Walked<'a> {
    Gathered(ProgramWalk),
    Given(&'a ProgramWalk),
}

impl Walked<'_> {
    fn get(&self) -> &ProgramWalk {
        match self {
            Walked::Gathered(w) => w,
            Walked::Given(w) => w,
        }
    }
}

/// Gathers [`ProgramWalk`].
pub fn walk_program(input: &Input<'_>) -> ProgramWalk {
    let (registrations, walk) = callbacks::registrations(input);
    ProgramWalk {
        registrations,
        walk,
    }
}

/// Runs every check on the solved summaries and events.
pub fn check(input: &Input<'_>, solved: analysis::Solved) -> Output {
    check_with(input, solved, None)
}

/// [`check`] reading the program through a walk gathered before.
pub fn check_walked(input: &Input<'_>, solved: analysis::Solved, walked: &ProgramWalk) -> Output {
    check_with(input, solved, Some(walked))
}

fn check_with(input: &Input<'_>, solved: analysis::Solved, walked: Option<&ProgramWalk>) -> Output {
    let summaries = solved.summaries;
    let mut imprecise: Vec<(FnId, analysis::Hits)> = solved
        .events
        .iter()
        .filter(|(_, e)| !e.bounds.is_empty())
        .map(|(f, e)| (*f, e.bounds))
        .collect();
    // Stable: bodies of equal severity keep the events' order.
    imprecise.sort_by_key(|(_, h)| std::cmp::Reverse(h.severity()));
    let mut findings = Vec::new();
    // Nestings of one class that a caller proved to be on one object: each
    // is one double-lock error, in place of the class warning.
    let mut proven: Vec<(FnId, kmir::Span)> = Vec::new();
    for (f, events) in &solved.events {
        for e in &events.locks.events {
            let Some(p) = &e.proof else { continue };
            if proven.contains(&(p.origin, e.nesting.site)) {
                continue;
            }
            proven.push((p.origin, e.nesting.site));
            findings.extend(lock_state::proven(input, *f, e, &Final(&summaries)));
        }
    }
    // The per-function findings and the whole-program inputs below are
    // independent: on two threads they run side by side. Every list is
    // collected in a fixed order (the events', then each check's), so the
    // findings do not depend on the number of threads.
    let (per_function, (gathered, (order_edges, bodies_against_trait))) = rayon::join(
        || {
            // `Handover` caches its answers: one thread walks the events.
            let handover = lock_state::Handover::new(input, &solved.events);
            let failures = failure::FailurePaths::new(input, &summaries);
            let mut out = Vec::new();
            for (f, events) in &solved.events {
                out.extend(function_findings(
                    input, &summaries, *f, events, &proven, &handover, &failures,
                ));
            }
            out
        },
        || {
            rayon::join(
                || match walked {
                    Some(w) => Walked::Given(w),
                    None => Walked::Gathered(walk_program(input)),
                },
                || {
                    let order_edges: Vec<(FnId, analysis::Nesting)> = solved
                        .events
                        .iter()
                        .flat_map(|(f, e)| e.locks.edges.iter().map(|n| (*f, n.clone())))
                        .collect();
                    // Implementations whose body disagrees with the
                    // annotation of the trait method they implement: their
                    // summary is the annotation, but a vtable built from
                    // them is checked against what the body does.
                    let bodies_against_trait: HashMap<FnId, Summary> = solved
                        .events
                        .iter()
                        .filter_map(|(f, e)| {
                            let (declared, inferred) = e.declared.as_ref()?;
                            declared.on_trait.then(|| (*f, (**inferred).clone()))
                        })
                        .collect();
                    (order_edges, bodies_against_trait)
                },
            )
        },
    );
    findings.extend(per_function);
    let ProgramWalk {
        registrations,
        walk,
    } = gathered.get();
    let checks = Checks {
        input,
        summaries: &summaries,
        callbacks: registrations,
        casts: &walk.casts,
        bodies_against_trait: &bodies_against_trait,
    };
    // The whole-program checks, side by side, appended in this order.
    let program = input.program;
    let ((vtables, reports, exported), (build_asserts, (callbacks, cycles, irq))) = rayon::join(
        || {
            (
                checks.pointers_and_vtables(),
                checks.reports(),
                checks.exported(),
            )
        },
        || {
            rayon::join(
                || {
                    let mut out = build_assert::can_be_const(program, &walk.asserts);
                    let needs = build_assert::needs(program, &walk.asserts);
                    out.extend(build_assert::not_inlined(program, &needs));
                    out.extend(build_assert::runtime_values(program, &needs));
                    out
                },
                || {
                    (
                        callbacks::check(input, registrations, &summaries),
                        lock_order::cycles(input, &order_edges, &summaries),
                        irq_safety::irq_safety(input, &summaries, registrations),
                    )
                },
            )
        },
    );
    let (irq_findings, irq_handlers) = irq;
    findings.extend(vtables);
    findings.extend(reports);
    findings.extend(exported);
    findings.extend(build_asserts);
    findings.extend(callbacks);
    findings.extend(cycles);
    findings.extend(irq_findings);
    placement::place(input, &mut findings);
    let classes: BTreeSet<&memory::LockClass> = order_edges
        .iter()
        .flat_map(|(_, e)| [e.held.lock.class(), e.take.lock.class()])
        .collect();
    let locks = LockStats {
        order_edges: order_edges.len(),
        classes: classes.len(),
        irq_handlers,
        callbacks: registrations.len(),
    };
    Output {
        summaries,
        findings,
        unknown_foreign: solved.unknown_foreign,
        locks,
        solver: solved.stats,
        imprecise,
    }
}

/// The findings of one function's events, in the order its analysis met
/// them.
fn function_findings(
    input: &Input<'_>,
    summaries: &[Summary],
    f: FnId,
    events: &Events,
    proven: &[(FnId, kmir::Span)],
    handover: &lock_state::Handover<'_>,
    failures: &failure::FailurePaths<'_>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(problem) = &events.drop {
        out.extend(drops::finding(input, f, problem));
    }
    let all = Final(summaries);
    let texts = text::Texts {
        input,
        summaries: &all,
        f,
    };
    for v in &events.violations {
        // On a path that can only end in a failure routine, the error is
        // a warning of its own kind.
        out.push(failures.reclassify(f, v, texts.violation(v)));
    }
    if let Some(failure) = &events.adjust_failure {
        out.push(texts.adjust_failure(failure));
    }
    out.extend(lock_state::findings(
        input,
        f,
        &events.locks,
        &all,
        events.declares_adjust,
        proven,
        handover,
    ));
    if let Some((declared, inferred)) = &events.declared {
        out.extend(texts.annotation_mismatch(declared, inferred));
    }
    if let Some(last_round) = &events.unsettled {
        out.push(adjustment::recursion_failure(input, f, last_round));
    }
    out
}

/// What the whole-program checks read.
/// What the checks read in every body, gathered in one walk over them
/// (with the callback registrations), so that each body is decoded once
/// for all of them (docs/performance.md, "Bodies decoded on demand").
pub(crate) struct BodyWalk {
    /// Every body's casts, for `pointers_and_vtables`.
    pub casts: Vec<pointers::BodyCasts>,
    /// Every drop-elaborated body's `build_assert!`s.
    pub asserts: Vec<build_assert::BodyAsserts>,
}

pub(crate) struct Checks<'a> {
    input: &'a Input<'a>,
    summaries: &'a [Summary],
    callbacks: &'a [callbacks::Registration],
    /// Every body's casts, gathered with the registrations.
    casts: &'a [pointers::BodyCasts],
    /// The inferred summaries of trait implementations whose body
    /// disagrees with the trait method's annotation.
    bodies_against_trait: &'a HashMap<FnId, Summary>,
}

impl Checks<'_> {
    fn summary(&self, f: FnId) -> &Summary {
        &self.summaries[f.index()]
    }
}

/// The index of the crate whose dump holds `f`'s body (0 for functions
/// without one).
pub(crate) fn krate_index(program: &Program, f: FnId) -> u32 {
    match program.function(f).kind {
        FnKind::Body { krate, .. } => krate,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::KINDS;
    use std::path::Path;

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .and_then(Path::parent)
            .expect("the crate lives in crates/")
    }

    /// The rows of docs/output.md's finding table: (kinds, severity).
    fn documented() -> Vec<(String, String)> {
        let doc = std::fs::read_to_string(root().join("docs/output.md")).expect("docs/output.md");
        let table = doc
            .split("## Finding kinds")
            .nth(1)
            .expect("a `## Finding kinds` section");
        let mut kinds = Vec::new();
        for line in table.lines().skip_while(|l| !l.starts_with('|')) {
            if !line.starts_with('|') {
                break;
            }
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            for part in cells.get(1).unwrap_or(&"").split(',') {
                if let Some(k) = part
                    .trim()
                    .strip_prefix('`')
                    .and_then(|p| p.strip_suffix('`'))
                {
                    kinds.push((k.to_string(), cells.get(2).unwrap_or(&"").to_string()));
                }
            }
        }
        kinds
    }

    #[test]
    fn every_kind_is_documented_with_its_severity() {
        let mut doc = documented();
        let mut ours: Vec<(String, String)> = KINDS
            .iter()
            .map(|k| {
                let severity = k.severity.as_str().to_string();
                // `bad-annotation` keeps klint's levels: errors and warnings.
                let doc_severity = doc
                    .iter()
                    .find(|(d, _)| d == k.name)
                    .map(|(_, s)| s.clone())
                    .filter(|s| s.split('/').any(|part| part == severity))
                    .unwrap_or(severity);
                (k.name.to_string(), doc_severity)
            })
            .collect();
        doc.sort();
        ours.sort();
        assert_eq!(ours, doc);
    }

    #[test]
    fn kinds_are_unique_and_explained() {
        let mut names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KINDS.len(), "a kind is listed twice");
        for k in KINDS {
            assert!(!k.summary.is_empty(), "{} has no summary", k.name);
            assert!(
                k.explanation.trim().len() > 40,
                "{} has no long explanation",
                k.name
            );
            assert!(!k.family.is_empty(), "{} has no family", k.name);
        }
        assert_eq!(
            super::kind("lock-leak").map(|k| k.family),
            Some("lock state")
        );
        assert!(super::kind("lock_leak").is_none());
    }
}
