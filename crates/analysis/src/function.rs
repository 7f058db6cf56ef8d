//! One function: its body's runs (one per entry variant), combined with
//! what is declared, into a summary and the events the checks report.

use annotations::ExpectRange;
use program::FnId;

use crate::body::{self, Violation};
use crate::declared::{d_view, declared};
use crate::drops::special_drop;
use crate::entry_split::{EntrySplit, entry_split, newtype_enum_field, split_like_callee};
use crate::events::Events;
use crate::lock_runs::LockRuns;
use crate::summary::{ArgCond, Case, Source, Summaries, Summary};
use crate::{Input, context};

/// A function's summary and what its analysis observed.
pub(crate) struct Analyzed {
    pub summary: Summary,
    pub events: Events,
}

impl Analyzed {
    fn quiet(summary: Summary) -> Analyzed {
        Analyzed {
            summary,
            events: Events::default(),
        }
    }
}

/// `f`'s summary for one call-site context (its events are the
/// unspecialised run's business).
pub(crate) fn analyze_in_context(
    input: &Input<'_>,
    f: FnId,
    ctx: &context::Context,
    summaries: &dyn Summaries,
) -> Option<Summary> {
    input.program.body_of(f)?;
    let mut summary = analyze_function(input, f, summaries, Some(ctx)).summary;
    summary.specialised = true;
    Some(summary)
}

/// One function: its body's fixed point (once per entry variant), combined
/// with what is declared.
pub(crate) fn analyze_function(
    input: &Input<'_>,
    f: FnId,
    summaries: &dyn Summaries,
    ctx: Option<&context::Context>,
) -> Analyzed {
    let program = input.program;
    if let Some((summary, problem)) = special_drop(input, f, summaries) {
        return Analyzed {
            summary,
            events: Events {
                drop: problem,
                ..Events::default()
            },
        };
    }
    let Some((krate, inst)) = program.body_of(f) else {
        return Analyzed::quiet(Summary::neutral(Source::Builtin));
    };
    let Some(body) = &inst.body else {
        return Analyzed::quiet(Summary::neutral(Source::Builtin));
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
        return Analyzed::quiet(Summary::fixed(adjust, expect, source));
    }
    // A function whose first argument is (or points to) an enum is analysed
    // once per variant of it: what it returns and leaves behind can then
    // depend on that variant (`Option::take`, `is_some`, drop glue).
    let split = entry_split(&krate.dump, body).or_else(|| split_like_callee(input, f, summaries));
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
                        summaries.get(g).ret_field
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
        let mut analysis = body::BodyAnalysis::new(program, f, &krate.dump, body, summaries);
        analysis.entry = when;
        analysis.split_field = split.as_ref().and_then(|s| s.field);
        analysis.specialize = true;
        analysis.trace = input
            .trace
            .is_some_and(|t| !t.is_empty() && program.function(f).name.contains(t));
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
    let declares_adjust = declared
        .as_ref()
        .is_some_and(|d| d.adjust.is_some_and(|a| a != 0));
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
    let mut checked_declaration = None;
    if let Some(d) = declared {
        if !d.unchecked {
            checked_declaration = Some((d_view(&d), Box::new(summary.clone())));
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
    Analyzed {
        summary,
        events: Events {
            violations,
            adjust_failure: failed,
            locks: lock_runs,
            declares_adjust,
            declared: checked_declaration,
            drop: None,
            unsettled: None,
        },
    }
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
