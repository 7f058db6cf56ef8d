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
pub mod facts;
mod findings_text;
pub mod state;
pub mod summary;

use std::collections::{BTreeSet, HashMap};

use annotations::{ExpectRange, ItemAnnotations, PreemptCount};
use findings::{Finding, Loc, Note, Severity};
use program::{EdgeKind, FnId, FnKind, IndirectKey, Program, Schedule};
use rayon::prelude::*;

pub use body::{AdjustFailure, Violation};
pub use summary::{ArgCond, Case, Reason, RetFact, Source, Summary};

/// How often a recursive SCC is re-analysed before its adjustment is
/// declared not inferable.
const MAX_SCC_ROUNDS: usize = 8;

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
}

pub fn run(input: &Input<'_>) -> Output {
    let program = input.program;
    let mut summaries: Vec<Option<Summary>> = vec![None; program.functions.len()];
    let mut unknown_foreign = BTreeSet::new();
    for (i, f) in program.functions.iter().enumerate() {
        summaries[i] = external_summary(input, f, &mut unknown_foreign);
    }
    let schedule = Schedule::new(program);
    let mut findings = Vec::new();
    for level in &schedule.levels {
        let done = &summaries;
        let results: Vec<SccOutcome> = level
            .par_iter()
            .map(|&scc| analyze_scc(input, &schedule.sccs[scc as usize], done))
            .collect();
        for r in results {
            for (f, s) in r.summaries {
                summaries[f.index()] = Some(s);
            }
            findings.extend(r.findings);
        }
    }
    let summaries: Vec<Summary> = summaries
        .into_iter()
        .map(|s| s.unwrap_or_else(|| Summary::neutral(Source::Builtin)))
        .collect();
    let checks = Checks {
        input,
        summaries: &summaries,
    };
    findings.extend(checks.pointers_and_vtables());
    findings.extend(checks.reports());
    findings.extend(checks.exported());
    Output {
        summaries,
        findings,
        unknown_foreign,
    }
}

fn annotation_of<'a>(input: &'a Input<'_>, path: &str) -> Option<&'a (PreemptCount, kmir::Span)> {
    input.annotations.get(path).and_then(|a| a.preempt.as_ref())
}

/// Summaries that do not come from a body.
fn external_summary(
    input: &Input<'_>,
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
                        sleeps_if_flag: s.sleeps_if_flag.clone(),
                        sleeps_if_zero: s.sleeps_if_zero,
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

/// A spinning `try_acquire` raises the count only when it succeeds.
fn spec_cases(s: &spec::FnSpec) -> Vec<Case> {
    match &s.lock {
        Some(spec::LockEffect {
            op: spec::LockOp::TryAcquire { success },
            kind,
            ..
        }) if !kind.may_sleep_while_held() => {
            let on_success = s.adjust + 1;
            match success {
                spec::TrySuccess::ReturnsNonZero => vec![
                    Case {
                        ret: Some(RetFact::Is(0)),
                        ..Case::always(s.adjust)
                    },
                    Case {
                        ret: Some(RetFact::IsNot(0)),
                        ..Case::always(on_success)
                    },
                ],
                spec::TrySuccess::ReturnsZero => vec![
                    Case {
                        ret: Some(RetFact::Is(0)),
                        ..Case::always(on_success)
                    },
                    Case {
                        ret: Some(RetFact::IsNot(0)),
                        ..Case::always(s.adjust)
                    },
                ],
            }
        }
        _ => vec![Case::always(s.adjust)],
    }
}

struct SccOutcome {
    summaries: Vec<(FnId, Summary)>,
    findings: Vec<Finding>,
}

/// What annotations or the type of a drop glue fix in advance.
struct Declared {
    adjust: Option<i32>,
    expect: Option<ExpectRange>,
    unchecked: bool,
    path: String,
    span: kmir::Span,
    /// Declared on the trait method this function implements.
    on_trait: bool,
}

fn declared(input: &Input<'_>, f: FnId) -> Option<Declared> {
    let (_, inst) = input.program.body_of(f)?;
    let from = |path: &str, on_trait: bool, drop: bool| {
        let a = input.annotations.get(path)?;
        let (pc, span) = if drop {
            a.drop_preempt.as_ref()?
        } else {
            a.preempt.as_ref()?
        };
        Some(Declared {
            adjust: pc.adjust,
            expect: pc.expect,
            unchecked: pc.unchecked,
            path: path.to_string(),
            span: *span,
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
                            ..Summary::fixed(total, expect, Source::Inferred)
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
                            ..Summary::fixed(0, elem.expect, Source::Inferred)
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

fn analyze_scc(input: &Input<'_>, members: &[FnId], done: &[Option<Summary>]) -> SccOutcome {
    let program = input.program;
    let bodies: Vec<FnId> = members
        .iter()
        .copied()
        .filter(|f| program.body_of(*f).is_some())
        .collect();
    if bodies.is_empty() {
        return SccOutcome {
            summaries: vec![],
            findings: vec![],
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
        let lookup = |g: FnId| -> Summary {
            if let Some(s) = snapshot.get(&g) {
                return s.clone();
            }
            done[g.index()]
                .clone()
                .unwrap_or_else(|| Summary::neutral(Source::Builtin))
        };
        let mut outcomes = Vec::new();
        for &f in &bodies {
            let outcome = analyze_function(input, f, &lookup);
            provisional.insert(f, outcome.summary.clone());
            outcomes.push((f, outcome));
        }
        let stable = outcomes
            .iter()
            .all(|(f, o)| snapshot.get(f) == Some(&o.summary));
        if !recursive || stable || rounds >= MAX_SCC_ROUNDS {
            let mut findings = Vec::new();
            let mut summaries = Vec::new();
            for (f, o) in outcomes {
                findings.extend(o.findings);
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
            };
        }
    }
}

struct FunctionOutcome {
    summary: Summary,
    findings: Vec<Finding>,
}

/// One function: its body's fixed point, combined with what is declared.
fn analyze_function(
    input: &Input<'_>,
    f: FnId,
    lookup: &(dyn Fn(FnId) -> Summary + Sync),
) -> FunctionOutcome {
    let program = input.program;
    if let Some((summary, findings)) = special_drop(input, f, lookup) {
        return FunctionOutcome { summary, findings };
    }
    let Some((krate, inst)) = program.body_of(f) else {
        return FunctionOutcome {
            summary: Summary::neutral(Source::Builtin),
            findings: vec![],
        };
    };
    let Some(body) = &inst.body else {
        return FunctionOutcome {
            summary: Summary::neutral(Source::Builtin),
            findings: vec![],
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
        };
    }
    // A function whose first argument is (or points to) an enum is analysed
    // once per variant of it: what it returns and leaves behind can then
    // depend on that variant (`Option::take`, `is_some`, drop glue).
    let split = entry_split(&krate.dump, body);
    let runs: Vec<Option<ArgCond>> = match &split {
        Some((pointee, variants)) => variants
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
    let mut violations: Vec<Violation> = Vec::new();
    let mut cases: Vec<Case> = Vec::new();
    let mut failed: Option<body::AdjustFailure> = None;
    let mut expect_when = Vec::new();
    for when in runs {
        let mut analysis = body::BodyAnalysis::new(program, f, &krate.dump, body, lookup);
        analysis.entry = when;
        let run = body::analyze(&analysis);
        if let Some(w) = when {
            expect_when.push((w, run.expect));
        }
        let next = expect.intersect(&run.expect);
        if next != expect {
            expect = next;
            reason = run.reason.clone();
        }
        for v in run.violations {
            if !violations
                .iter()
                .any(|w| w.block == v.block && w.target.callee == v.target.callee)
            {
                violations.push(v);
            }
        }
        match body::cases_at_return(&run.returns, when, split.as_ref().is_some_and(|(p, _)| *p)) {
            Ok(c) => cases.extend(c),
            Err(()) => {
                if failed.is_none() {
                    failed = Some(body::failure(&run.returns, run.changes));
                }
            }
        }
    }
    let cases = simplify(cases);
    let mut findings = Vec::new();
    let texts = findings_text::Texts { input, lookup, f };
    for v in &violations {
        findings.push(texts.violation(v));
    }
    if let Some(failure) = &failed {
        findings.push(texts.adjust_failure(failure));
    }
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
    };
    if let Some(d) = declared {
        if !d.unchecked {
            findings.extend(texts.annotation_mismatch(&d_view(&d), &summary));
        }
        if let Some(a) = d.adjust {
            summary.cases = vec![Case::always(a)];
            summary.poisoned = false;
        }
        if let Some(e) = d.expect {
            summary.expect = e;
            summary.expect_when.clear();
        }
        summary.source = Source::Annotation {
            path: d.path,
            unchecked: d.unchecked,
        };
    }
    FunctionOutcome { summary, findings }
}

/// Most variants a function is split by; beyond, one run for all.
const MAX_SPLIT: usize = 8;

/// Whether to split a function's analysis by the variant of its first
/// argument: `(behind a pointer, the variants' discriminants)`.
fn entry_split(dump: &kmir::CrateDump, body: &kmir::Body) -> Option<(bool, Vec<u128>)> {
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
    let kmir::TyKind::Adt { path, .. } = &dump.ty(ty)?.kind else {
        return None;
    };
    let adt = dump.adts.iter().find(|a| &a.path == path)?;
    if adt.kind != kmir::AdtKind::Enum || adt.variants.len() < 2 || adt.variants.len() > MAX_SPLIT {
        return None;
    }
    Some((pointee, adt.variants.iter().map(|v| v.discr).collect()))
}

/// Drops what callers cannot use: the per-variant split when every variant
/// behaves the same, and duplicate cases.
fn simplify(mut cases: Vec<Case>) -> Vec<Case> {
    cases.sort();
    cases.dedup();
    let informative = cases.iter().any(|c| c.ret.is_some() || c.post.is_some());
    let uniform = cases.windows(2).all(|w| w[0].adjust == w[1].adjust);
    if uniform && !informative {
        return vec![Case::always(cases.first().map_or(0, |c| c.adjust))];
    }
    // The same outcome for every variant: the condition says nothing.
    let outcomes: Vec<(Option<RetFact>, Option<u128>, i32)> =
        cases.iter().map(|c| (c.ret, c.post, c.adjust)).collect();
    if outcomes.windows(2).all(|w| w[0] == w[1]) {
        return vec![Case {
            when: None,
            ..cases[0]
        }];
    }
    cases
}

fn failure_adjust(failed: &Option<body::AdjustFailure>) -> i32 {
    failed
        .as_ref()
        .and_then(|f| {
            f.returns.iter().find_map(|(a, _)| match a {
                state::Adj::Known(a) => Some(*a),
                state::Adj::Top => None,
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
    pub on_trait: bool,
}

fn d_view(d: &Declared) -> DeclaredView {
    DeclaredView {
        adjust: d.adjust,
        expect: d.expect,
        path: d.path.clone(),
        span: d.span,
        on_trait: d.on_trait,
    }
}

/// Checks that need every summary.
struct Checks<'a> {
    input: &'a Input<'a>,
    summaries: &'a [Summary],
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
                            if !seen_fns.insert(target) {
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
        for (i, f) in program.functions.iter().enumerate() {
            let FnKind::Body { krate, instance } = f.kind else {
                continue;
            };
            let inst = &program.crates[krate as usize].dump.instances[instance as usize];
            if !self
                .input
                .annotations
                .get(&inst.item_path)
                .is_some_and(|a| a.report)
            {
                continue;
            }
            let s = self.summary(FnId(i as u32));
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
                .in_function(FnId(i as u32))
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
        for (i, f) in program.functions.iter().enumerate() {
            let FnKind::Body { krate, instance } = f.kind else {
                continue;
            };
            let inst = &program.crates[krate as usize].dump.instances[instance as usize];
            if !inst.exported
                || self
                    .input
                    .annotations
                    .get(&inst.item_path)
                    .is_some_and(|a| a.preempt.is_some())
            {
                continue;
            }
            let s = self.summary(FnId(i as u32));
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
                    .in_function(FnId(i as u32))
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
                .in_function(FnId(i as u32))
                .subject(f.name.clone());
                for n in findings_text::why_expects(
                    self.input,
                    &|g| self.summary(g).clone(),
                    FnId(i as u32),
                ) {
                    finding = finding.note(n);
                }
                out.push(finding);
            }
        }
        out
    }
}
