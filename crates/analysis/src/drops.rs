//! Drop glues whose body the analysis does not read.

use annotations::ExpectRange;
use program::{EdgeKind, FnId};

use crate::Input;
use crate::events::DropProblem;
use crate::summary::{Reason, Source, Summaries, Summary};

/// Drop glues whose body the analysis does not read: `dyn Trait`, arrays and
/// slices (whose glue loops over the elements).
pub(crate) fn special_drop(
    input: &Input<'_>,
    f: FnId,
    summaries: &dyn Summaries,
) -> Option<(Summary, Option<DropProblem>)> {
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
                .get(principal.as_str())
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
                            path: principal.to_string(),
                            unchecked: true,
                        },
                    ),
                    None if resolved => return None,
                    // klint's VDROP_DEFAULT: dropping a `dyn` may sleep.
                    None => Summary::may_sleep(Source::UnknownIndirect),
                },
                None,
            ))
        }
        kmir::TyKind::Array { .. } | kmir::TyKind::Slice { .. } => {
            // Current compilers drop an array's elements through the glue of
            // the slice `[T]` (`drop_glue::<[T; N]>` unsizes its argument and
            // calls `drop_glue::<[T]>`): the elements' own glue is one step
            // further, and klint's rule for arrays (N times the element)
            // applies to it, not the slice rule.
            let through_slice = matches!(t.kind, kmir::TyKind::Array { .. })
                .then(|| {
                    input
                        .program
                        .callees(f)
                        .into_iter()
                        .find_map(|(g, _)| slice_glue_elements(input, g))
                })
                .flatten();
            let elem_glue = match through_slice {
                Some(g) => g,
                None => dropped_by(input, f)?,
            };
            let elem = summaries.get(elem_glue);
            let elem_adj = elem.uniform_adjust().unwrap_or(0);
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
                        return Some((Summary::neutral(Source::Inferred), None));
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
                    let problem = expect.is_empty().then(|| DropProblem::Array {
                        elem_expect: elem.expect,
                        last: elem
                            .expect
                            .shift(i32::try_from((n - 1) * i64::from(elem_adj)).unwrap_or(0)),
                        ty: t.display.to_string(),
                    });
                    Some((
                        Summary {
                            poisoned: expect.is_empty(),
                            ..elementwise(Summary::fixed(total, expect, Source::Inferred))
                        },
                        problem,
                    ))
                }
                _ => {
                    let problem = (elem_adj != 0).then(|| DropProblem::Slice {
                        elem_glue,
                        elem_adjust: elem_adj,
                        ty: t.display.to_string(),
                    });
                    Some((
                        Summary {
                            poisoned: elem_adj != 0,
                            ..elementwise(Summary::fixed(0, elem.expect, Source::Inferred))
                        },
                        problem,
                    ))
                }
            }
        }
        _ => None,
    }
}

/// The drop glue that `f`'s body drops (for an array or slice glue: the
/// elements').
fn dropped_by(input: &Input<'_>, f: FnId) -> Option<FnId> {
    input
        .program
        .callees(f)
        .into_iter()
        .find(|(_, e)| e.kind == EdgeKind::Drop)
        .map(|(g, _)| g)
}

/// When `g` is the drop glue of a slice `[T]`, the glue of its elements.
pub(crate) fn slice_glue_elements(input: &Input<'_>, g: FnId) -> Option<FnId> {
    let (krate, inst) = input.program.body_of(g)?;
    let kmir::InstanceKind::DropGlue { ty } = inst.kind else {
        return None;
    };
    match krate.dump.ty(ty)?.kind {
        kmir::TyKind::Slice { .. } => dropped_by(input, g),
        _ => None,
    }
}
