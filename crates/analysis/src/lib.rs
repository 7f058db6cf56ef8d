//! The preemption-count analysis (klint's semantics, whole-program).
//!
//! Every function gets a [`Summary`]: how it moves the preemption count and
//! which entry counts it accepts. Summaries of functions without a body come
//! from annotations, the spec of C functions, or klint's defaults; the others
//! are inferred from their bodies bottom-up over the call graph's SCCs, level
//! by level in parallel, recursive SCCs iterating to a fixed point. Then the
//! checks that need every summary run: annotations against bodies, function
//! pointers and vtables against their defaults.

mod body;
mod callbacks;
mod context;
mod findings_text;
mod lock_order;
mod lock_text;
pub mod summary;

use std::collections::{BTreeSet, HashMap, HashSet};

use annotations::{ExpectRange, ItemAnnotations, KanalyzeAnnotation, LockRef, PreemptCount};
use findings::{Finding, Loc, Note, Severity};
use program::{EdgeKind, FnId, FnKind, IndirectKey, Program, Schedule};
use rayon::prelude::*;

pub use body::{AdjustFailure, Violation};
pub use summary::{ArgCond, Case, Reason, RetFact, Source, Summary};

/// How often a recursive SCC is re-analysed before its adjustment is
/// declared not inferable.
const MAX_SCC_ROUNDS: usize = 8;

/// How often a recursive SCC whose adjustments are settled is re-analysed
/// while expectations still narrow around its cycles.
const MAX_EXPECT_ROUNDS: usize = 64;

pub struct Input<'a> {
    pub program: &'a Program,
    pub annotations: &'a HashMap<String, ItemAnnotations>,
    pub spec: &'a spec::Spec,
}

pub struct Output {
    pub summaries: Vec<Summary>,
    pub findings: Vec<Finding>,
    /// C functions called that neither the spec nor an annotation describes.
    pub unknown_foreign: BTreeSet<String>,
    pub locks: LockStats,
}

/// Figures of the whole-program lock checks, for benchmarks.
#[derive(Clone, Debug, Default)]
pub struct LockStats {
    /// "B acquired while A held" witnesses found in bodies.
    pub order_edges: usize,
    /// Distinct classes in the order graph.
    pub classes: usize,
    pub irq_handlers: usize,
    /// Rust functions registered with a C API that has a callback contract.
    pub callbacks: usize,
    /// Building the order graph, finding its cycles, and the IRQ check.
    pub whole_program_time: std::time::Duration,
}

pub fn run(input: &Input<'_>) -> Output {
    let program = input.program;
    let mut summaries: Vec<Option<Summary>> = vec![None; program.functions.len()];
    let mut unknown_foreign = BTreeSet::new();
    for (i, f) in program.functions.iter().enumerate() {
        summaries[i] = external_summary(input, FnId(i as u32), f, &mut unknown_foreign);
    }
    let schedule = Schedule::new(program);
    let mut findings = Vec::new();
    let mut order_edges = Vec::new();
    let specs = context::Specializations::default();
    for level in &schedule.levels {
        let done = &summaries;
        let results: Vec<SccOutcome> = level
            .par_iter()
            .map(|&scc| analyze_scc(input, &schedule.sccs[scc as usize], done, &specs))
            .collect();
        for r in results {
            for (f, s) in r.summaries {
                summaries[f.index()] = Some(s);
            }
            findings.extend(r.findings);
            order_edges.extend(r.edges);
        }
    }
    let summaries: Vec<Summary> = summaries
        .into_iter()
        .map(|s| s.unwrap_or_else(|| Summary::neutral(Source::Builtin)))
        .collect();
    let registrations = callbacks::registrations(input);
    let checks = Checks {
        input,
        summaries: &summaries,
        callbacks: &registrations,
    };
    findings.extend(checks.pointers_and_vtables());
    findings.extend(checks.reports());
    findings.extend(checks.exported());
    findings.extend(callbacks::check(input, &registrations, &|f: FnId| {
        summaries[f.index()].clone()
    }));
    let t = std::time::Instant::now();
    findings.extend(lock_order::cycles(input, &order_edges, &summaries));
    let (irq_findings, irq_handlers) = lock_order::irq_safety(input, &summaries, &registrations);
    findings.extend(irq_findings);
    let classes: BTreeSet<memory::LockClass> = order_edges
        .iter()
        .flat_map(|(_, e)| [e.held.lock.class().clone(), e.take.lock.class().clone()])
        .collect();
    let locks = LockStats {
        order_edges: order_edges.len(),
        classes: classes.len(),
        irq_handlers,
        callbacks: registrations.len(),
        whole_program_time: t.elapsed(),
    };
    Output {
        summaries,
        findings,
        unknown_foreign,
        locks,
    }
}

/// An item's `preempt_count` annotation (with its span), or klint's
/// built-in one for a `core` item (no span).
fn annotation_of(input: &Input<'_>, path: &str) -> Option<(PreemptCount, Option<kmir::Span>)> {
    match input.annotations.get(path).and_then(|a| a.preempt.as_ref()) {
        Some((a, span)) => Some((a.clone(), Some(*span))),
        None => annotations::core_out_of_band(path).map(|a| (a, None)),
    }
}

/// Summaries that do not come from a body.
fn external_summary(
    input: &Input<'_>,
    id: FnId,
    f: &program::Function,
    unknown: &mut BTreeSet<String>,
) -> Option<Summary> {
    let annotated = |path: &str| {
        annotation_of(input, path).map(|(a, _)| {
            Summary::fixed(
                a.adjust.unwrap_or(0),
                a.expect.unwrap_or(ExpectRange::TOP),
                Source::Annotation {
                    path: path.to_string(),
                    unchecked: true,
                },
            )
        })
    };
    match &f.kind {
        FnKind::Body { .. } => None,
        FnKind::Foreign => {
            Some(
                annotated(&f.item_path).unwrap_or_else(|| match input.spec.lookup(&f.symbol) {
                    Some(s) => Summary {
                        cases: spec_cases(s),
                        takes: spec_takes(s, id),
                        sleeps_if_flag: s.sleeps_if_flag.clone(),
                        sleeps_if_zero: s.sleeps_if_zero,
                        last_reference_test: s.last_reference_test,
                        ..Summary::fixed(
                            s.adjust,
                            s.expect,
                            Source::Spec {
                                name: f.symbol.clone(),
                            },
                        )
                    },
                    None => {
                        unknown.insert(f.symbol.clone());
                        Summary::may_sleep(Source::UnknownForeign)
                    }
                }),
            )
        }
        FnKind::Upstream { .. } => {
            Some(annotated(&f.item_path).unwrap_or_else(|| Summary::neutral(Source::NotExtracted)))
        }
        FnKind::Shim => Some(Summary::neutral(Source::Builtin)),
        FnKind::Unknown(IndirectKey::FnPtr { .. }) => {
            Some(Summary::may_sleep(Source::UnknownIndirect))
        }
        FnKind::Unknown(IndirectKey::Virtual { trait_method, .. }) => Some(
            annotated(trait_method).unwrap_or_else(|| Summary::may_sleep(Source::UnknownIndirect)),
        ),
    }
}

/// The lock a spec's lock effect is about, in the C function's terms: the
/// pointee of its argument, or a global context.
fn spec_lock_path(effect: &spec::LockEffect) -> memory::Location {
    match effect.arg {
        Some(arg) => memory::Location::from_parts(
            memory::Root::Arg {
                index: arg + 1,
                ty: format!("*mut {}", effect.kind.c_type()),
            },
            vec![memory::Step::Deref {
                to: effect.kind.c_type().to_string(),
            }],
        ),
        None => memory::Location::new(memory::Root::Static(format!("<{}>", effect.kind))),
    }
}

/// The cases of a C function from its spec: a `try_acquire` raises the
/// count (for a spinning kind) and holds the lock only when it succeeds.
fn spec_cases(s: &spec::FnSpec) -> Vec<Case> {
    let Some(effect) = &s.lock else {
        return vec![Case::always(s.adjust)];
    };
    let lock = spec_lock_path(effect);
    match effect.op {
        spec::LockOp::Acquire => vec![Case {
            acquire: vec![(lock, effect.kind, false)],
            ..Case::always(s.adjust)
        }],
        spec::LockOp::Release => vec![Case {
            release: vec![lock],
            ..Case::always(s.adjust)
        }],
        spec::LockOp::TryAcquire { success } => {
            let raise = i32::from(!effect.kind.may_sleep_while_held());
            let failed = Case::always(s.adjust);
            let succeeded = Case {
                acquire: vec![(lock, effect.kind, true)],
                ..Case::always(s.adjust + raise)
            };
            let (zero, nonzero) = match success {
                spec::TrySuccess::ReturnsNonZero => (failed, succeeded),
                spec::TrySuccess::ReturnsZero => (succeeded, failed),
            };
            vec![
                Case {
                    ret: Some(RetFact::Is(0)),
                    ..zero
                },
                Case {
                    ret: Some(RetFact::IsNot(0)),
                    ..nonzero
                },
            ]
        }
    }
}

/// The acquisitions a C function makes, for the order graph.
fn spec_takes(s: &spec::FnSpec, f: FnId) -> Vec<summary::Take> {
    match &s.lock {
        Some(effect @ spec::LockEffect { op, kind, .. })
            if !matches!(op, spec::LockOp::Release) && domains::has_object(*kind) =>
        {
            vec![summary::Take {
                lock: spec_lock_path(effect),
                kind: *kind,
                trylock: matches!(op, spec::LockOp::TryAcquire { .. }),
                reacquire: false,
                irqs_disabled: kind.disables_irqs(),
                func: f,
                span: kmir::Span::default(),
                via: Vec::new(),
            }]
        }
        _ => Vec::new(),
    }
}

struct SccOutcome {
    summaries: Vec<(FnId, Summary)>,
    findings: Vec<Finding>,
    edges: Vec<(FnId, body::Nesting)>,
}

/// What annotations or the type of a drop glue fix in advance.
struct Declared {
    adjust: Option<i32>,
    expect: Option<ExpectRange>,
    unchecked: bool,
    path: String,
    span: kmir::Span,
    /// klint's built-in annotation of a `core` item: no attribute to point at.
    builtin: bool,
    /// Declared on the trait method this function implements.
    on_trait: bool,
}

fn declared(input: &Input<'_>, f: FnId) -> Option<Declared> {
    let (_, inst) = input.program.body_of(f)?;
    let from = |path: &str, on_trait: bool, drop: bool| {
        let (pc, span) = if drop {
            let (pc, span) = input.annotations.get(path)?.drop_preempt.as_ref()?;
            (pc.clone(), Some(*span))
        } else {
            annotation_of(input, path)?
        };
        Some(Declared {
            adjust: pc.adjust,
            expect: pc.expect,
            unchecked: pc.unchecked,
            path: path.to_string(),
            span: span.unwrap_or(inst.span),
            builtin: span.is_none(),
            on_trait,
        })
    };
    if let kmir::InstanceKind::DropGlue { ty } = inst.kind {
        let crate_dump = &input.program.body_of(f)?.0.dump;
        return match &crate_dump.ty(ty)?.kind {
            kmir::TyKind::Adt { path, .. } => from(path, false, true),
            _ => None,
        };
    }
    from(&inst.item_path, false, false).or_else(|| {
        inst.trait_item
            .as_deref()
            .and_then(|t| from(t, true, false))
    })
}

/// Drop glues whose body the analysis does not read: `dyn Trait`, arrays and
/// slices (whose glue loops over the elements).
fn special_drop(
    input: &Input<'_>,
    f: FnId,
    lookup: &dyn Fn(FnId) -> Summary,
) -> Option<(Summary, Vec<Finding>)> {
    let (krate, inst) = input.program.body_of(f)?;
    let kmir::InstanceKind::DropGlue { ty } = inst.kind else {
        return None;
    };
    let dump = &krate.dump;
    let t = dump.ty(ty)?;
    match &t.kind {
        kmir::TyKind::Dynamic { traits } => {
            let principal = traits.first()?;
            let declared = input
                .annotations
                .get(principal)
                .and_then(|a| a.drop_preempt.as_ref());
            // Beyond klint: the program's `Trait` vtables say which drop
            // glues a `dyn Trait` drop reaches (linked as drop edges); the
            // body is then analysed like any other.
            let resolved = input.program.crates.iter().any(|c| {
                c.dump
                    .vtables
                    .iter()
                    .any(|v| v.trait_path.as_deref() == Some(principal.as_str()))
            });
            Some((
                match declared {
                    Some((pc, _)) => Summary::fixed(
                        pc.adjust.unwrap_or(0),
                        pc.expect.unwrap_or(ExpectRange::TOP),
                        Source::Annotation {
                            path: principal.clone(),
                            unchecked: true,
                        },
                    ),
                    None if resolved => return None,
                    // klint's VDROP_DEFAULT: dropping a `dyn` may sleep.
                    None => Summary::may_sleep(Source::UnknownIndirect),
                },
                vec![],
            ))
        }
        kmir::TyKind::Array { .. } | kmir::TyKind::Slice { .. } => {
            let elem_glue = input
                .program
                .callees(f)
                .into_iter()
                .find(|(_, e)| e.kind == EdgeKind::Drop)?
                .0;
            let elem = lookup(elem_glue);
            let elem_adj = elem.uniform_adjust().unwrap_or(0);
            let loc = Loc {
                krate: krate_index(input.program, f),
                span: inst.span,
            };
            let elem_name = &input.program.function(elem_glue).name;
            // The elements' drop explains the whole drop, teardown included.
            let elementwise = |mut s: Summary| {
                let reason = |callee_expect, via_last| Reason {
                    block: 0,
                    span: inst.span,
                    callee: elem_glue,
                    kind: EdgeKind::Drop,
                    adj: 0,
                    callee_expect,
                    callee_summary: None,
                    via_last,
                };
                if s.expect != ExpectRange::TOP {
                    s.reason = Some(reason(elem.expect, false));
                }
                if elem.expect_last != ExpectRange::TOP {
                    s.expect_last = elem.expect_last;
                    s.reason_last = Some(reason(elem.expect_last, true));
                }
                s
            };
            match &t.kind {
                kmir::TyKind::Array { len: Some(n), .. } => {
                    let n = *n as i64;
                    if n == 0 {
                        return Some((Summary::neutral(Source::Inferred), vec![]));
                    }
                    let total = i32::try_from(n * i64::from(elem_adj)).unwrap_or(i32::MAX);
                    let expect = if elem.expect == ExpectRange::TOP {
                        ExpectRange::TOP
                    } else if elem_adj == 0 {
                        elem.expect
                    } else {
                        let last = (n - 1) * i64::from(elem_adj);
                        elem.expect
                            .shift_back(i32::try_from(last).unwrap_or(i32::MAX))
                            .intersect(&elem.expect)
                    };
                    let mut fs = vec![];
                    if expect.is_empty() {
                        fs.push(
                            Finding::new(
                                "array-drop",
                                Severity::Error,
                                format!("dropping element of array expects the preemption count to be {}", elem.expect),
                            )
                            .at(loc)
                            .note(Note::text(format!(
                                "but the possible preemption count when dropping the last element is {}",
                                elem.expect.shift(i32::try_from((n - 1) * i64::from(elem_adj)).unwrap_or(0))
                            )))
                            .note(Note::text(format!("array being dropped is `{}`", t.display)))
                            .in_function(f)
                            .subject(t.display.clone()),
                        );
                    }
                    Some((
                        Summary {
                            poisoned: expect.is_empty(),
                            ..elementwise(Summary::fixed(total, expect, Source::Inferred))
                        },
                        fs,
                    ))
                }
                _ => {
                    let mut fs = vec![];
                    if elem_adj != 0 {
                        fs.push(
                            Finding::new(
                                "slice-drop",
                                Severity::Error,
                                "dropping element of slice causes non-zero preemption count adjustment",
                            )
                            .at(loc)
                            .note(Note::text(format!("adjustment for dropping `{elem_name}` is {elem_adj}")))
                            .note(Note::text(
                                "because slice can contain variable number of elements, adjustment for dropping the slice cannot be computed statically",
                            ))
                            .in_function(f)
                            .subject(t.display.clone()),
                        );
                    }
                    Some((
                        Summary {
                            poisoned: elem_adj != 0,
                            ..elementwise(Summary::fixed(0, elem.expect, Source::Inferred))
                        },
                        fs,
                    ))
                }
            }
        }
        _ => None,
    }
}

pub(crate) fn krate_index(program: &Program, f: FnId) -> u32 {
    match program.function(f).kind {
        FnKind::Body { krate, .. } => krate,
        _ => 0,
    }
}

/// The members of a component in depth-first post-order over its call
/// edges: callees before their callers wherever the cycle allows, so that
/// one round of the fixed point carries a callee's summary to its callers.
fn callees_first(program: &Program, members: &[FnId]) -> Vec<FnId> {
    if members.len() < 3 {
        return members.to_vec();
    }
    let inside: HashSet<FnId> = members.iter().copied().collect();
    let mut seen: HashSet<FnId> = HashSet::new();
    let mut order = Vec::with_capacity(members.len());
    for &root in members {
        if !seen.insert(root) {
            continue;
        }
        // (function, its callees inside the component, next one to visit)
        let mut stack: Vec<(FnId, Vec<FnId>, usize)> = Vec::new();
        let inner = |f: FnId| -> Vec<FnId> {
            program
                .callees(f)
                .into_iter()
                .map(|(g, _)| g)
                .filter(|g| inside.contains(g))
                .collect()
        };
        stack.push((root, inner(root), 0));
        while let Some((f, next, i)) = stack.last_mut() {
            if let Some(&g) = next.get(*i) {
                *i += 1;
                if seen.insert(g) {
                    let n = inner(g);
                    stack.push((g, n, 0));
                }
            } else {
                order.push(*f);
                stack.pop();
            }
        }
    }
    order
}

fn analyze_scc(
    input: &Input<'_>,
    members: &[FnId],
    done: &[Option<Summary>],
    specs: &context::Specializations,
) -> SccOutcome {
    let program = input.program;
    let bodies: Vec<FnId> = callees_first(program, members)
        .into_iter()
        .filter(|f| program.body_of(*f).is_some())
        .collect();
    if bodies.is_empty() {
        return SccOutcome {
            summaries: vec![],
            findings: vec![],
            edges: vec![],
        };
    }
    let recursive = members.len() > 1
        || program
            .callees(members[0])
            .iter()
            .any(|(t, _)| *t == members[0]);
    let mut provisional: HashMap<FnId, Summary> = HashMap::new();
    for &f in &bodies {
        let start = match declared(input, f) {
            Some(d) if d.adjust.is_some() && d.expect.is_some() => Summary::fixed(
                d.adjust.unwrap_or(0),
                d.expect.unwrap_or(ExpectRange::TOP),
                Source::Annotation {
                    path: d.path.clone(),
                    unchecked: d.unchecked,
                },
            ),
            // klint's provisional value for recursion: adjustment 0, any context.
            _ => Summary::neutral(Source::Inferred),
        };
        provisional.insert(f, start);
    }
    let mut rounds = 0;
    loop {
        rounds += 1;
        let snapshot = provisional.clone();
        let mut outcomes = Vec::new();
        for &f in &bodies {
            // Members see the summaries computed earlier in this round
            // (Gauss-Seidel): what a member learns travels around the
            // cycle in one round rather than one edge per round.
            let outcome = {
                let lookup = |g: FnId| -> Summary {
                    if let Some(s) = provisional.get(&g) {
                        return s.clone();
                    }
                    done[g.index()]
                        .clone()
                        .unwrap_or_else(|| Summary::neutral(Source::Builtin))
                };
                // Callees outside the component have their final summaries,
                // so their specialisations can be shared.
                let specialize = |g: FnId, c: &context::Context| {
                    if members.contains(&g) {
                        return None;
                    }
                    specs.get(g, c, || specialized(input, g, c, &lookup, specs))
                };
                analyze_function(input, f, &lookup, None, Some(&specialize))
            };
            provisional.insert(f, outcome.summary.clone());
            outcomes.push((f, outcome));
        }
        let stable = outcomes
            .iter()
            .all(|(f, o)| snapshot.get(f) == Some(&o.summary));
        // Adjustments that keep changing have no fixed point (a lock taken
        // per recursion level); expectations only narrow, so they always
        // settle, but travelling around a long cycle takes a round per
        // member: keep going while only they change.
        let cases_stable = outcomes
            .iter()
            .all(|(f, o)| snapshot.get(f).map(|s| &s.cases) == Some(&o.summary.cases));
        let limit = if cases_stable {
            MAX_EXPECT_ROUNDS
        } else {
            MAX_SCC_ROUNDS
        };
        if !recursive || stable || rounds >= limit {
            let mut findings = Vec::new();
            let mut summaries = Vec::new();
            let mut edges = Vec::new();
            for (f, o) in outcomes {
                findings.extend(o.findings);
                edges.extend(o.edges.into_iter().map(|e| (f, e)));
                let mut summary = o.summary;
                if recursive
                    && !stable
                    && snapshot.get(&f).map(|s| &s.cases) != Some(&summary.cases)
                {
                    findings.push(findings_text::recursion_failure(input, f, &summary));
                    summary.poisoned = true;
                    summary.source = Source::Recursive;
                }
                summaries.push((f, summary));
            }
            return SccOutcome {
                summaries,
                findings,
                edges,
            };
        }
    }
}

struct FunctionOutcome {
    summary: Summary,
    findings: Vec<Finding>,
    edges: Vec<body::Nesting>,
}

/// One function: its body's fixed point, combined with what is declared.
/// `f`'s summary for one call-site context (its findings are the unspecialised
/// run's business).
fn specialized(
    input: &Input<'_>,
    f: FnId,
    ctx: &context::Context,
    lookup: &(dyn Fn(FnId) -> Summary + Sync),
    specs: &context::Specializations,
) -> Option<Summary> {
    input.program.body_of(f)?;
    let nested =
        |g: FnId, c: &context::Context| specs.get(g, c, || specialized(input, g, c, lookup, specs));
    let mut summary = analyze_function(input, f, lookup, Some(ctx), Some(&nested)).summary;
    summary.specialised = true;
    Some(summary)
}

fn analyze_function(
    input: &Input<'_>,
    f: FnId,
    lookup: &(dyn Fn(FnId) -> Summary + Sync),
    ctx: Option<&context::Context>,
    specialize: Option<context::Specialize<'_>>,
) -> FunctionOutcome {
    let program = input.program;
    if let Some((summary, findings)) = special_drop(input, f, lookup) {
        return FunctionOutcome {
            summary,
            findings,
            edges: vec![],
        };
    }
    let Some((krate, inst)) = program.body_of(f) else {
        return FunctionOutcome {
            summary: Summary::neutral(Source::Builtin),
            findings: vec![],
            edges: vec![],
        };
    };
    let Some(body) = &inst.body else {
        return FunctionOutcome {
            summary: Summary::neutral(Source::Builtin),
            findings: vec![],
            edges: vec![],
        };
    };
    let declared = declared(input, f);
    if let Some(d) = &declared
        && d.unchecked
        && let (Some(adjust), Some(expect)) = (d.adjust, d.expect)
    {
        // klint trusts a complete `unchecked` annotation without reading the body.
        let source = Source::Annotation {
            path: d.path.clone(),
            unchecked: true,
        };
        return FunctionOutcome {
            summary: Summary::fixed(adjust, expect, source),
            findings: vec![],
            edges: vec![],
        };
    }
    // A function whose first argument is (or points to) an enum is analysed
    // once per variant of it: what it returns and leaves behind can then
    // depend on that variant (`Option::take`, `is_some`, drop glue).
    let split = entry_split(&krate.dump, body).or_else(|| split_like_callee(input, f, lookup));
    let ret_field = body
        .local(0)
        .and_then(|l| newtype_enum_field(&krate.dump, body, l.ty))
        .map(|(field, _)| field)
        .or_else(|| {
            // Returned straight from a callee that returns such a struct
            // (`ScopeGuard::new` returning `new_with_data(..)`).
            program.callees(f).into_iter().find_map(|(g, e)| {
                let block = body.block(e.block)?;
                match &block.terminator.kind {
                    kmir::TerminatorKind::Call { destination, .. }
                        if destination.local == 0 && destination.projection.is_empty() =>
                    {
                        lookup(g).ret_field
                    }
                    _ => None,
                }
            })
        });
    let runs: Vec<Option<ArgCond>> = match &split {
        Some(EntrySplit {
            pointee, variants, ..
        }) => variants
            .iter()
            .map(|&d| {
                Some(if *pointee {
                    ArgCond::Pointee(d)
                } else {
                    ArgCond::Value(d)
                })
            })
            .collect(),
        None => vec![None],
    };
    let mut expect = ExpectRange::TOP;
    let mut reason = None;
    let mut expect_last = ExpectRange::TOP;
    let mut reason_last = None;
    let mut last_reference_test = false;
    let mut violations: Vec<Violation> = Vec::new();
    let mut cases: Vec<Case> = Vec::new();
    let mut failed: Option<body::AdjustFailure> = None;
    let mut expect_when = Vec::new();
    let mut lock_runs = LockRuns::default();
    let mut context_sensitive = false;
    for when in runs {
        let mut analysis = body::BodyAnalysis::new(program, f, &krate.dump, body, lookup);
        analysis.entry = when;
        analysis.split_field = split.as_ref().and_then(|s| s.field);
        analysis.specialize = specialize;
        if let Some(c) = ctx {
            analysis.in_context(c.clone());
        }
        let run = body::analyze(&analysis);
        last_reference_test |= analysis.last_reference_tests.contains(&0);
        context_sensitive |= run.context_sensitive;
        if let Some(w) = when {
            expect_when.push((w, run.expect));
        }
        let next = expect.intersect(&run.expect);
        if next != expect {
            expect = next;
            reason = run.reason.clone();
        }
        let next = expect_last.intersect(&run.expect_last);
        if next != expect_last {
            expect_last = next;
            reason_last = run.reason_last.clone();
        }
        lock_runs.absorb(&run);
        for v in run.violations {
            if !violations.iter().any(|w| {
                w.block == v.block
                    && w.target.callee == v.target.callee
                    && w.last_reference == v.last_reference
            }) {
                violations.push(v);
            }
        }
        match body::cases_at_return(
            &run.returns,
            when,
            split.as_ref().is_some_and(|s| s.pointee),
            split.as_ref().and_then(|s| s.field),
            ret_field,
        ) {
            Ok(c) => cases.extend(c),
            Err(()) => {
                if failed.is_none() {
                    failed = Some(body::failure(&run.returns, run.changes));
                }
            }
        }
    }
    let cases = simplify(cases);
    let cases_with_locks = cases.clone();
    let mut findings = Vec::new();
    let texts = findings_text::Texts { input, lookup, f };
    for v in &violations {
        findings.push(texts.violation(v));
    }
    if let Some(failure) = &failed {
        findings.push(texts.adjust_failure(failure));
    }
    let declares_adjust = declared
        .as_ref()
        .is_some_and(|d| d.adjust.is_some_and(|a| a != 0));
    findings.extend(lock_runs.findings(input, f, inst, body, lookup, declares_adjust));
    let first_adjust = failure_adjust(&failed);
    let mut summary = Summary {
        cases: if failed.is_some() {
            vec![Case::always(first_adjust)]
        } else {
            cases
        },
        expect,
        sleeps_if_flag: None,
        sleeps_if_zero: None,
        // Only worth keeping when the variants differ.
        expect_when: if expect_when.iter().all(|(_, e)| *e == expect) {
            Vec::new()
        } else {
            expect_when
        },
        source: Source::Inferred,
        reason,
        poisoned: failed.is_some(),
        takes: std::mem::take(&mut lock_runs.takes),
        split_field: split.as_ref().and_then(|s| s.field),
        ret_field,
        context_sensitive,
        specialised: false,
        expect_last,
        reason_last,
        last_reference_test,
    };
    if let Some(d) = declared {
        if !d.unchecked {
            findings.extend(texts.annotation_mismatch(&d_view(&d), &summary));
        }
        if let Some(a) = d.adjust {
            summary.cases = vec![Case::always(a)];
            summary.poisoned = false;
            // The lock effects of the body still hold.
            if let Some(first) = cases_with_locks.first() {
                summary.cases[0].acquire = first.acquire.clone();
                summary.cases[0].release = first.release.clone();
                summary.cases[0].ret_addrs = first.ret_addrs.clone();
            }
        }
        if let Some(e) = d.expect {
            summary.expect = e;
            summary.expect_when.clear();
            // klint's annotations say nothing about last references: a
            // checked one keeps what the body's teardowns need, so callers
            // are still warned (an unchecked one never reads the body).
            if d.unchecked {
                summary.expect_last = ExpectRange::TOP;
                summary.reason_last = None;
            }
        }
        summary.source = Source::Annotation {
            path: d.path,
            unchecked: d.unchecked,
        };
    }
    FunctionOutcome {
        summary,
        findings,
        edges: std::mem::take(&mut lock_runs.edges),
    }
}

/// The lock results of a function's runs (one per entry variant).
#[derive(Default)]
struct LockRuns {
    takes: Vec<summary::Take>,
    events: Vec<body::LockEvent>,
    edges: Vec<body::Nesting>,
    /// Locks held at a return: (lock, return span, owned by the return value).
    leaks: Vec<(domains::Held, kmir::Span, bool)>,
    released: Vec<memory::Location>,
}

impl LockRuns {
    fn absorb(&mut self, run: &body::BodyOutcome) {
        for t in &run.takes {
            if self.takes.len() < summary::MAX_TAKES && !self.takes.contains(t) {
                self.takes.push(t.clone());
            }
        }
        self.events.extend(run.lock_events.iter().cloned());
        self.edges.extend(run.edges.iter().cloned());
        for (p, span) in &run.returns {
            let ret = p.facts.addrs_under(&memory::PlaceKey::local(0));
            for h in p.locks.net_held() {
                if !domains::has_object(h.kind) || h.lock.is_local() {
                    continue;
                }
                let owned = ret
                    .iter()
                    .any(|(_, r)| r.root == h.lock.root && h.lock.steps.starts_with(&r.steps));
                if !self.leaks.iter().any(|(l, _, _)| l.lock == h.lock) {
                    self.leaks.push((h.clone(), *span, owned));
                }
            }
            for l in p.locks.net_released() {
                if !self.released.contains(l) {
                    self.released.push(l.clone());
                }
            }
        }
    }

    fn findings(
        &self,
        input: &Input<'_>,
        f: FnId,
        inst: &kmir::Instance,
        body: &kmir::Body,
        lookup: &dyn Fn(FnId) -> Summary,
        declares_adjust: bool,
    ) -> Vec<Finding> {
        let declared: Vec<&KanalyzeAnnotation> = input
            .annotations
            .get(&inst.item_path)
            .into_iter()
            .flat_map(|a| a.kanalyze.iter().map(|(k, _)| k))
            .collect();
        let nested = declared
            .iter()
            .any(|a| matches!(a, KanalyzeAnnotation::NestedLock { .. }));
        let mut out = Vec::new();
        let mut seen_sites = Vec::new();
        for e in &self.events {
            let site = e.nesting.site;
            if (!e.same_object && nested) || seen_sites.contains(&site) {
                continue;
            }
            seen_sites.push(site);
            out.push(lock_text::event(input, f, e, lookup));
        }
        // Balance: only for safe functions that are not glue; an `unsafe fn`
        // may leave lock state to its caller by contract.
        if inst.unsafe_fn || matches!(inst.kind, kmir::InstanceKind::Shim { .. }) {
            return out;
        }
        let declares = |lock: &memory::Location,
                        what: fn(&KanalyzeAnnotation) -> Option<LockRef>| {
            declared.iter().any(|a| match what(a) {
                Some(LockRef::Arg(n)) => lock.arg() == Some(n + 1),
                Some(LockRef::Return) => true,
                None => false,
            })
        };
        let stores_guard = stores_guard_through_args(input, f, body);
        for (held, ret, owned) in &self.leaks {
            let acquires = declares(&held.lock, |a| match a {
                KanalyzeAnnotation::Acquires(r) => Some(*r),
                _ => None,
            });
            // A klint annotation that the function moves the preemption
            // count says it returns holding a spinning lock on purpose.
            let declared_by_klint = declares_adjust && !held.kind.may_sleep_while_held();
            // A closure's environment holds what its creator lent it: a
            // relock in a cleanup closure (`do_unlocked`) restores the
            // creator's guard.
            let env_lock = inst.kind == kmir::InstanceKind::Closure && held.lock.arg() == Some(1);
            if !owned
                && !env_lock
                && !acquires
                && !stores_guard
                && !declared_by_klint
                && leak_starts_here(input, held, lookup)
            {
                out.push(lock_text::leak(input, f, held, *ret));
            }
        }
        for lock in &self.released {
            // The global contexts' balance is the preemption count's (and
            // an RCU guard's `Drop` ends a section its creator began).
            let allowed = lock.is_global()
                || lock.through_stored_pointer()
                || (inst.kind == kmir::InstanceKind::Closure && lock.arg() == Some(1))
                || declares_adjust
                || declares(lock, |a| match a {
                    KanalyzeAnnotation::Releases(r) | KanalyzeAnnotation::MustHold(r) => Some(*r),
                    _ => None,
                });
            if !allowed {
                out.push(lock_text::unbalanced(
                    input,
                    f,
                    lock,
                    release_site(input, f),
                ));
            }
        }
        out
    }
}

/// Whether a lock still held at a return was lost here: taken by a C lock
/// function or an `unsafe fn` (whose contract hands it over), or returned
/// inside a guard that this function then forgot. A lock a safe callee
/// already leaked is reported in that callee, not again in every caller.
fn leak_starts_here(
    input: &Input<'_>,
    held: &domains::Held,
    lookup: &dyn Fn(FnId) -> Summary,
) -> bool {
    let callee = held.at.callee;
    match input.program.body_of(callee) {
        None => true,
        Some((_, inst)) if inst.unsafe_fn => true,
        Some(_) => lookup(callee).cases.iter().any(|c| {
            !c.acquire.is_empty()
                && c.acquire.iter().all(|(l, _, _)| {
                    c.ret_addrs
                        .iter()
                        .any(|(_, r)| r.root == l.root && l.steps.starts_with(&r.steps))
                })
        }),
    }
}

/// The first call in `f` whose callee releases a lock.
fn release_site(input: &Input<'_>, f: FnId) -> Option<(kmir::Span, FnId)> {
    let summaries_release = |g: FnId| match &input.program.function(g).kind {
        FnKind::Foreign => input
            .spec
            .lookup(&input.program.function(g).symbol)
            .and_then(|s| s.lock.as_ref())
            .is_some_and(|l| l.op == spec::LockOp::Release),
        _ => false,
    };
    input
        .program
        .callees(f)
        .into_iter()
        .find(|(g, _)| summaries_release(*g))
        .map(|(g, e)| (e.span, g))
}

/// Whether `f` stores a guard-like value through one of its arguments
/// (`self.guard = Some(lock.lock())`): the lock then stays held on return
/// by design, owned by the caller's memory.
fn stores_guard_through_args(input: &Input<'_>, f: FnId, body: &kmir::Body) -> bool {
    let Some((krate, _)) = input.program.body_of(f) else {
        return false;
    };
    let dump = &krate.dump;
    let guardish = |ty: kmir::TyId| dump.ty(ty).is_some_and(|t| t.display.contains("Guard"));
    body.blocks.iter().flat_map(|b| &b.statements).any(|s| {
        let kmir::StatementKind::Assign { place, rvalue } = &s.kind else {
            return false;
        };
        if !(1..=body.arg_count).contains(&place.local)
            || !place.projection.contains(&kmir::Projection::Deref)
        {
            return false;
        }
        match rvalue {
            kmir::Rvalue::Use(kmir::Operand::Move(p) | kmir::Operand::Copy(p)) => body
                .local(p.local)
                .is_some_and(|l| p.projection.is_empty() && guardish(l.ty)),
            kmir::Rvalue::Aggregate { operands, .. } => operands.iter().any(|o| match o {
                kmir::Operand::Move(p) | kmir::Operand::Copy(p) => {
                    body.local(p.local).is_some_and(|l| guardish(l.ty))
                }
                _ => false,
            }),
            _ => false,
        }
    })
}

/// Most variants a function is split by; beyond, one run for all.
const MAX_SPLIT: usize = 8;

/// How a function's analysis is split by the variant of its first
/// argument.
struct EntrySplit {
    /// The argument points to the value (`&mut self`, drop glue).
    pointee: bool,
    /// The variant is that of this field of the value (a struct wrapping
    /// an enum), not of the value itself.
    field: Option<u32>,
    variants: Vec<u128>,
}

/// The discriminants of an enum type that is worth splitting by.
fn split_variants(dump: &kmir::CrateDump, ty: kmir::TyId) -> Option<Vec<u128>> {
    let kmir::TyKind::Adt { path, .. } = &dump.ty(ty)?.kind else {
        return None;
    };
    let adt = dump.adt(path)?;
    if adt.kind != kmir::AdtKind::Enum || adt.variants.len() < 2 || adt.variants.len() > MAX_SPLIT {
        return None;
    }
    Some(adt.variants.iter().map(|v| v.discr).collect())
}

/// For a struct type whose field 0 is an enum worth splitting by: that
/// field and its type. Field types are only known substituted where the
/// body uses them, so they are looked up there.
fn newtype_enum_field(
    dump: &kmir::CrateDump,
    body: &kmir::Body,
    ty: kmir::TyId,
) -> Option<(u32, kmir::TyId)> {
    let kmir::TyKind::Adt { path, .. } = &dump.ty(ty)?.kind else {
        return None;
    };
    let adt = dump.adt(path)?;
    if adt.kind != kmir::AdtKind::Struct {
        return None;
    }
    // Most structs are not wrappers of an enum: the declared type of the
    // first field says so without reading the body (a generic parameter
    // could be anything, so it is read).
    let declared = &adt.variants.first()?.fields.first()?.ty;
    let head = declared.split('<').next().unwrap_or(declared);
    let maybe_enum = match dump.adt(head) {
        Some(a) => a.kind == kmir::AdtKind::Enum,
        None => !head.starts_with(['&', '*', '[', '(']) && !head.contains("::"),
    };
    if !maybe_enum {
        return None;
    }
    // Type ids are per dump but not unique per type: compare the text.
    let display = &dump.ty(ty)?.display;
    let same_ty = |t: kmir::TyId| t == ty || dump.ty(t).is_some_and(|t| &t.display == display);
    let place_ty = |p: &kmir::Place| -> Option<kmir::TyId> {
        let mut t = body.local(p.local)?.ty;
        for proj in &p.projection {
            match proj {
                kmir::Projection::Field { index: 0, ty: f } if same_ty(t) => return Some(*f),
                kmir::Projection::Field { ty: f, .. } | kmir::Projection::OpaqueCast(f) => t = *f,
                kmir::Projection::Deref => match &dump.ty(t)?.kind {
                    kmir::TyKind::Ref { pointee, .. } | kmir::TyKind::RawPtr { pointee, .. } => {
                        t = *pointee
                    }
                    _ => return None,
                },
                kmir::Projection::Downcast { .. } => {}
                _ => return None,
            }
        }
        None
    };
    let mut found = None;
    'blocks: for block in &body.blocks {
        for s in &block.statements {
            let kmir::StatementKind::Assign { place, rvalue } = &s.kind else {
                continue;
            };
            let mut places = vec![place];
            match rvalue {
                kmir::Rvalue::Ref { place: p, .. }
                | kmir::Rvalue::AddressOf { place: p, .. }
                | kmir::Rvalue::Discriminant(p)
                | kmir::Rvalue::Use(kmir::Operand::Copy(p) | kmir::Operand::Move(p)) => {
                    places.push(p)
                }
                kmir::Rvalue::Aggregate {
                    kind: kmir::AggregateKind::Adt { ty: agg, .. },
                    operands,
                } if same_ty(*agg) => {
                    if let Some(kmir::Operand::Copy(p) | kmir::Operand::Move(p)) = operands.first()
                        && let Some(l) = body.local(p.local)
                        && p.projection.is_empty()
                    {
                        found = Some(l.ty);
                        break 'blocks;
                    }
                }
                _ => {}
            }
            if let Some(t) = places.into_iter().find_map(&place_ty) {
                found = Some(t);
                break 'blocks;
            }
        }
        if let kmir::TerminatorKind::Drop { place, .. } = &block.terminator.kind
            && let Some(t) = place_ty(place)
        {
            found = Some(t);
            break;
        }
    }
    let field_ty = found?;
    split_variants(dump, field_ty).map(|_| (0, field_ty))
}

/// A drop glue whose optimised body only calls `Drop::drop` does not show
/// the field its type wraps; when a callee splits on a field of its
/// pointee, split the same way.
fn split_like_callee(
    input: &Input<'_>,
    f: FnId,
    lookup: &dyn Fn(FnId) -> Summary,
) -> Option<EntrySplit> {
    let (_, inst) = input.program.body_of(f)?;
    if !matches!(inst.kind, kmir::InstanceKind::DropGlue { .. }) {
        return None;
    }
    input.program.callees(f).into_iter().find_map(|(g, _)| {
        let s = lookup(g);
        let field = s.split_field?;
        let mut variants: Vec<u128> = s
            .cases
            .iter()
            .filter_map(|c| match c.when {
                Some(ArgCond::Pointee(d)) => Some(d),
                _ => None,
            })
            .chain(s.expect_when.iter().filter_map(|(w, _)| match w {
                ArgCond::Pointee(d) => Some(*d),
                ArgCond::Value(_) => None,
            }))
            .collect();
        variants.sort_unstable();
        variants.dedup();
        (variants.len() >= 2).then_some(EntrySplit {
            pointee: true,
            field: Some(field),
            variants,
        })
    })
}

/// Whether to split a function's analysis by the variant of its first
/// argument (or of that argument's first field).
fn entry_split(dump: &kmir::CrateDump, body: &kmir::Body) -> Option<EntrySplit> {
    if body.arg_count == 0 {
        return None;
    }
    let ty = body.locals.get(1)?.ty;
    let (pointee, ty) = match &dump.ty(ty)?.kind {
        kmir::TyKind::Ref { pointee, .. } | kmir::TyKind::RawPtr { pointee, .. } => {
            (true, *pointee)
        }
        _ => (false, ty),
    };
    if let Some(variants) = split_variants(dump, ty) {
        return Some(EntrySplit {
            pointee,
            field: None,
            variants,
        });
    }
    let (field, field_ty) = newtype_enum_field(dump, body, ty)?;
    Some(EntrySplit {
        pointee,
        field: Some(field),
        variants: split_variants(dump, field_ty)?,
    })
}

/// Drops what callers cannot use: the per-variant split when every variant
/// behaves the same, and duplicate cases.
fn simplify(mut cases: Vec<Case>) -> Vec<Case> {
    cases.sort();
    cases.dedup();
    let informative = cases
        .iter()
        .any(|c| c.ret.is_some() || c.post.is_some() || c.has_lock_effect());
    let uniform = cases.windows(2).all(|w| w[0].adjust == w[1].adjust);
    if uniform && !informative {
        return vec![Case::always(cases.first().map_or(0, |c| c.adjust))];
    }
    // The same outcome for every variant: the condition says nothing.
    let outcomes: Vec<Case> = cases
        .iter()
        .map(|c| Case {
            when: None,
            ..c.clone()
        })
        .collect();
    if outcomes.windows(2).all(|w| w[0] == w[1]) {
        return vec![outcomes[0].clone()];
    }
    cases
}

fn failure_adjust(failed: &Option<body::AdjustFailure>) -> i32 {
    failed
        .as_ref()
        .and_then(|f| {
            f.returns.iter().find_map(|(a, _)| match a {
                domains::Adj::Known(a) => Some(*a),
                domains::Adj::Top => None,
            })
        })
        .unwrap_or(0)
}

/// What the text helpers need to know about a declaration.
pub(crate) struct DeclaredView {
    pub adjust: Option<i32>,
    pub expect: Option<ExpectRange>,
    pub path: String,
    pub span: kmir::Span,
    pub builtin: bool,
    pub on_trait: bool,
}

fn d_view(d: &Declared) -> DeclaredView {
    DeclaredView {
        adjust: d.adjust,
        expect: d.expect,
        path: d.path.clone(),
        span: d.span,
        builtin: d.builtin,
        on_trait: d.on_trait,
    }
}

/// Checks that need every summary.
struct Checks<'a> {
    input: &'a Input<'a>,
    summaries: &'a [Summary],
    callbacks: &'a [callbacks::Registration],
}

impl Checks<'_> {
    fn summary(&self, f: FnId) -> &Summary {
        &self.summaries[f.index()]
    }

    /// klint's function-pointer and vtable construction warnings.
    fn pointers_and_vtables(&self) -> Vec<Finding> {
        let program = self.input.program;
        let mut findings = Vec::new();
        let mut seen_fns: BTreeSet<FnId> = BTreeSet::new();
        let mut seen_vtables: BTreeSet<(String, String)> = BTreeSet::new();
        for (i, f) in program.functions.iter().enumerate() {
            let FnKind::Body { krate, instance } = f.kind else {
                continue;
            };
            let dump = &program.crates[krate as usize].dump;
            let Some(body) = &dump.instances[instance as usize].body else {
                continue;
            };
            for block in &body.blocks {
                for s in &block.statements {
                    let kmir::StatementKind::Assign {
                        rvalue: kmir::Rvalue::Cast { kind, .. },
                        ..
                    } = &s.kind
                    else {
                        continue;
                    };
                    let loc = Loc {
                        krate,
                        span: s.span,
                    };
                    match kind {
                        kmir::CastKind::ReifyFnPointer { symbol }
                        | kmir::CastKind::ClosureFnPointer { symbol } => {
                            let Some(target) = program.lookup(symbol) else {
                                continue;
                            };
                            // A callback handed to a C API with a contract
                            // is checked against that contract instead.
                            if !seen_fns.insert(target)
                                || self.callbacks.iter().any(|r| r.callback == target)
                            {
                                continue;
                            }
                            let s = self.summary(target);
                            if s.poisoned {
                                continue;
                            }
                            if s.uniform_adjust() != Some(0) || !s.expect.contains_value(0) {
                                findings.push(findings_text::fn_pointer(
                                    self.input,
                                    FnId(i as u32),
                                    target,
                                    s,
                                    loc,
                                ));
                            }
                        }
                        kmir::CastKind::Unsize { vtable: Some(v) } => {
                            let Some(vt) = dump.vtables.get(*v as usize) else {
                                continue;
                            };
                            let (Some(concrete), Some(trait_path)) =
                                (dump.ty(vt.concrete), &vt.trait_path)
                            else {
                                continue;
                            };
                            if !seen_vtables.insert((concrete.display.clone(), trait_path.clone()))
                            {
                                continue;
                            }
                            findings.extend(self.vtable(
                                FnId(i as u32),
                                vt,
                                &concrete.display,
                                trait_path,
                                loc,
                            ));
                        }
                        kmir::CastKind::TraitUpcast { from, to } => {
                            findings.extend(self.upcast(FnId(i as u32), dump, *from, *to, loc));
                        }
                        _ => {}
                    }
                }
            }
        }
        findings
    }

    fn vtable(
        &self,
        user: FnId,
        vt: &kmir::Vtable,
        concrete: &str,
        trait_path: &str,
        loc: Loc,
    ) -> Vec<Finding> {
        let program = self.input.program;
        let mut out = Vec::new();
        for entry in &vt.entries {
            let (symbol, expected, what) = match entry {
                kmir::VtableEntry::Method { method, symbol } => {
                    let declared = annotation_of(self.input, method).map(|(a, _)| {
                        (a.adjust.unwrap_or(0), a.expect.unwrap_or(ExpectRange::TOP))
                    });
                    (
                        symbol,
                        declared.unwrap_or((0, ExpectRange::exactly(0))),
                        None,
                    )
                }
                kmir::VtableEntry::DropInPlace { glue: Some(glue) } => {
                    let declared = self
                        .input
                        .annotations
                        .get(trait_path)
                        .and_then(|a| a.drop_preempt.as_ref())
                        .map(|(a, _)| {
                            (a.adjust.unwrap_or(0), a.expect.unwrap_or(ExpectRange::TOP))
                        });
                    (
                        glue,
                        declared.unwrap_or((0, ExpectRange::exactly(0))),
                        Some(concrete),
                    )
                }
                _ => continue,
            };
            let Some(target) = program.lookup(symbol) else {
                continue;
            };
            let s = self.summary(target);
            if s.poisoned {
                continue;
            }
            if s.uniform_adjust() != Some(expected.0) || !s.expect.contains(&expected.1) {
                out.push(findings_text::vtable(
                    self.input, user, target, s, expected, trait_path, what, loc,
                ));
            }
        }
        out
    }

    /// klint's trait-upcasting check: dropping through the new `dyn` type
    /// must be allowed wherever dropping through the old one was.
    fn upcast(
        &self,
        user: FnId,
        dump: &kmir::CrateDump,
        from: kmir::TyId,
        to: kmir::TyId,
        loc: Loc,
    ) -> Option<Finding> {
        let principal = |t: kmir::TyId| match &dump.ty(t)?.kind {
            kmir::TyKind::Dynamic { traits } => traits.first().cloned(),
            _ => None,
        };
        let (src, tgt) = (principal(from)?, principal(to)?);
        let drop_of = |path: &str| {
            self.input
                .annotations
                .get(path)
                .and_then(|a| a.drop_preempt.as_ref())
                .map(|(a, _)| {
                    (
                        a.adjust.unwrap_or(0),
                        a.expect.unwrap_or(ExpectRange::exactly(0)),
                    )
                })
                // klint's VDROP_DEFAULT.
                .unwrap_or((0, ExpectRange::exactly(0)))
        };
        let (sa, se) = drop_of(&src);
        let (ta, te) = drop_of(&tgt);
        if sa == ta && se.contains(&te) {
            return None;
        }
        Some(
            Finding::new(
                "trait-upcast",
                Severity::Error,
                "casting between traits with incompatible preemption count properties",
            )
            .at(loc)
            .note(Note::help(format!(
                "adjustment of `dyn {src}` is {sa} and expectation is {se}"
            )))
            .note(Note::help(format!(
                "while the expected adjustment of `dyn {tgt}` is {ta} and the expectation is {te}"
            )))
            .in_function(user)
            .subject(format!("dyn {src} as dyn {tgt}")),
        )
    }

    /// `#[klint::report_preempt_count]`.
    fn reports(&self) -> Vec<Finding> {
        let program = self.input.program;
        let mut out = Vec::new();
        for (id, _, inst) in program.bodies() {
            let f = program.function(id);
            let krate = krate_index(program, id);
            if !self
                .input
                .annotations
                .get(&inst.item_path)
                .is_some_and(|a| a.report)
            {
                continue;
            }
            let s = self.summary(id);
            out.push(
                Finding::new(
                    "report",
                    Severity::Note,
                    format!("reporting preemption count for instance `{}`", f.name),
                )
                .at(Loc {
                    krate,
                    span: inst.span,
                })
                .note(Note::text(format!(
                    "adjustment is inferred to be {}",
                    s.adjust_text()
                )))
                .note(Note::text(format!(
                    "expectation is inferred to be {}",
                    s.expect
                )))
                .in_function(id)
                .subject(f.name.clone()),
            );
        }
        out
    }

    /// klint's check of functions exported to C: the spec entry of their
    /// symbol, else adjustment 0 and any context.
    fn exported(&self) -> Vec<Finding> {
        let program = self.input.program;
        let mut out = Vec::new();
        for (id, _, inst) in program.bodies() {
            let f = program.function(id);
            let krate = krate_index(program, id);
            // C can only call what has a C ABI: a Rust-ABI function given
            // an `#[export_name]` (Binder does it so that `ps` shows a
            // readable name) is still called from Rust only, and its
            // callers are checked against it.
            let c_abi = inst
                .fn_sig
                .as_deref()
                .is_some_and(|s| s.starts_with("extern "));
            // A callback registered with a C API is held to that API's
            // contract instead (see `callbacks.rs`).
            let registered = self.callbacks.iter().any(|r| r.callback == id);
            if !inst.exported
                || !c_abi
                || registered
                || self
                    .input
                    .annotations
                    .get(&inst.item_path)
                    .is_some_and(|a| a.preempt.is_some())
            {
                continue;
            }
            let s = self.summary(id);
            if s.poisoned {
                continue;
            }
            let (adj, expect) = match self.input.spec.lookup(&inst.symbol) {
                Some(spec) => (spec.adjust, spec.expect),
                None => (0, ExpectRange::TOP),
            };
            let loc = Loc {
                krate,
                span: inst.span,
            };
            if s.uniform_adjust() != Some(adj) {
                out.push(
                    Finding::new(
                        "extern-function",
                        Severity::Error,
                        format!(
                            "extern function `{}` must have preemption count adjustment {adj}",
                            f.name
                        ),
                    )
                    .at(loc)
                    .note(Note::text(format!(
                        "preemption count adjustment inferred is {}",
                        s.adjust_text()
                    )))
                    .in_function(id)
                    .subject(f.name.clone()),
                );
            } else if !s.expect.contains(&expect) {
                let mut finding = Finding::new(
                    "extern-function",
                    Severity::Error,
                    format!(
                        "extern function `{}` must have preemption count expectation {expect}",
                        f.name
                    ),
                )
                .at(loc)
                .note(Note::text(format!(
                    "preemption count expectation inferred is {}",
                    s.expect
                )))
                .in_function(id)
                .subject(f.name.clone());
                for n in findings_text::why_expects(self.input, &|g| self.summary(g).clone(), id) {
                    finding = finding.note(n);
                }
                out.push(finding);
            } else if !s.expect_last.contains(&expect) {
                let mut finding = Finding::new(
                    "last-reference-in-atomic",
                    Severity::Warning,
                    format!(
                        "extern function `{}` must have preemption count expectation {expect}, but if a reference it drops is the last one it expects {}",
                        f.name,
                        s.expect.intersect(&s.expect_last)
                    ),
                )
                .at(loc)
                .in_function(id)
                .subject(f.name.clone());
                for n in
                    findings_text::why_expects_last(self.input, &|g| self.summary(g).clone(), id)
                {
                    finding = finding.note(n);
                }
                out.push(finding);
            }
        }
        out
    }
}
