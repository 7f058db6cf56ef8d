//! Splitting a function's analysis by the variant of its first argument.

use program::FnId;

use crate::Input;
use crate::summary::{ArgCond, Summaries};

/// Most variants a function is split by; beyond, one run for all.
const MAX_SPLIT: usize = 8;

/// How a function's analysis is split by the variant of its first
/// argument.
pub(crate) struct EntrySplit {
    /// The argument points to the value (`&mut self`, drop glue).
    pub pointee: bool,
    /// The variant is that of this field of the value (a struct wrapping
    /// an enum), not of the value itself.
    pub field: Option<u32>,
    /// The field is a `bool` the body branches on, not an enum: the runs
    /// are by its value (0 and 1), not by a discriminant.
    pub value: bool,
    pub variants: Vec<u128>,
}

/// The discriminants of an enum type that is worth splitting by.
pub(crate) fn split_variants(dump: &kmir::CrateDump, ty: kmir::TyId) -> Option<Vec<u128>> {
    let adt = dump.enum_of(ty)?;
    (2..=MAX_SPLIT)
        .contains(&adt.variants.len())
        .then(|| adt.discriminants())
}

/// For a struct type with a field that is an enum worth splitting by (a
/// wrapper like the kernel's `ScopeGuard`, or a struct keeping an
/// `Option<Guard>` beside other fields): that field and its type, the
/// first such field the body uses. Field types are only known substituted
/// where the body uses them, so they are looked up there.
pub(crate) fn newtype_enum_field(
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
    // Most structs hold no enum: the declared types of the fields say so
    // without reading the body (a generic parameter could be anything, so
    // it is read).
    let candidates: Vec<u32> = adt
        .variants
        .first()?
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            let head = f.ty.split('<').next().unwrap_or(&f.ty);
            match dump.adt(head) {
                Some(a) => a.kind == kmir::AdtKind::Enum,
                None => !head.starts_with(['&', '*', '[', '(']) && !head.contains("::"),
            }
        })
        .map(|(i, _)| i as u32)
        .collect();
    if candidates.is_empty() {
        return None;
    }
    // Type ids are per dump but not unique per type: compare the text.
    let display = &dump.ty(ty)?.display;
    let same_ty = |t: kmir::TyId| t == ty || dump.ty(t).is_some_and(|t| &t.display == display);
    let splittable = |t: kmir::TyId| split_variants(dump, t).is_some();
    let place_ty = |p: &kmir::Place| -> Option<(u32, kmir::TyId)> {
        let mut t = body.local(p.local)?.ty;
        for proj in &p.projection {
            match proj {
                kmir::Projection::Field { index, ty: f }
                    if candidates.contains(index) && same_ty(t) && splittable(*f) =>
                {
                    return Some((*index, *f));
                }
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
    for block in &body.blocks {
        for s in &block.statements {
            let kmir::StatementKind::Assign { place, rvalue } = &s.kind else {
                continue;
            };
            let mut places = vec![place];
            match &**rvalue {
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
                    let found = candidates
                        .iter()
                        .find_map(|&i| match operands.get(i as usize) {
                            Some(kmir::Operand::Copy(p) | kmir::Operand::Move(p))
                                if p.projection.is_empty() =>
                            {
                                let t = body.local(p.local)?.ty;
                                splittable(t).then_some((i, t))
                            }
                            _ => None,
                        });
                    if found.is_some() {
                        return found;
                    }
                }
                _ => {}
            }
            if let Some(found) = places.into_iter().find_map(&place_ty) {
                return Some(found);
            }
        }
        if let kmir::TerminatorKind::Drop { place, .. } = &block.terminator.kind
            && let Some(found) = place_ty(place)
        {
            return Some(found);
        }
    }
    None
}

/// A drop glue whose optimised body only calls `Drop::drop` does not show
/// the field its type wraps; when a callee splits on a field of its
/// pointee, split the same way.
pub(crate) fn split_like_callee(
    input: &Input<'_>,
    f: FnId,
    body: &kmir::Body,
    summaries: &dyn Summaries,
) -> Option<EntrySplit> {
    let (_, inst) = input.program.body_of(f)?;
    // Also a function that drops its first argument, taken by value, whole
    // (`mem::drop::<S>`): split by value on the field its drop glue splits
    // on.
    let by_value_drop = body.blocks.iter().position(|b| {
        matches!(&b.terminator.kind, kmir::TerminatorKind::Drop { place, .. }
            if place.local == 1 && place.projection.is_empty())
    });
    let glue = matches!(inst.kind, kmir::InstanceKind::DropGlue { .. });
    if !glue && by_value_drop.is_none() {
        return None;
    }
    input.program.callees(f).into_iter().find_map(|(g, e)| {
        if !glue && Some(e.block as usize) != by_value_drop {
            return None;
        }
        let s = summaries.get(g);
        let field = s.split_field?;
        let mut variants: Vec<u128> =
            s.cases
                .iter()
                .filter_map(|c| match c.when {
                    Some(ArgCond::Pointee(d)) => Some(d),
                    _ => None,
                })
                .chain(s.expect_when.iter().chain(&s.expect_last_when).filter_map(
                    |(w, _)| match w {
                        ArgCond::Pointee(d) => Some(*d),
                        ArgCond::Value(_) => None,
                    },
                ))
                .collect();
        variants.sort_unstable();
        variants.dedup();
        (variants.len() >= 2).then_some(EntrySplit {
            pointee: glue,
            field: Some(field),
            value: s.split_value,
            variants,
        })
    })
}

/// Whether to split a function's analysis by the variant of its first
/// argument (or of that argument's first field).
pub(crate) fn entry_split(dump: &kmir::CrateDump, body: &kmir::Body) -> Option<EntrySplit> {
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
            value: false,
            variants,
        });
    }
    if let Some((field, field_ty)) = newtype_enum_field(dump, body, ty) {
        return Some(EntrySplit {
            pointee,
            field: Some(field),
            value: false,
            variants: split_variants(dump, field_ty)?,
        });
    }
    let field = pointee.then(|| result_decided_by_flag(dump, body))??;
    Some(EntrySplit {
        pointee,
        field: Some(field),
        value: true,
        variants: vec![0, 1],
    })
}

/// For a function returning an enum whose variant can carry what it was
/// given back (`Result<(), T>`, a `FailedDead(work)`), a `bool` field of
/// what its first argument points to that the body branches on (`if
/// self.is_dead`): analysed once per value of the flag, the result's
/// variant becomes a function of it, so a caller that tested the flag
/// (`if !inner.is_dead { inner.push_work(w) }`) knows which variant it gets
/// back and what dropping it releases. The first such field in the body.
fn result_decided_by_flag(dump: &kmir::CrateDump, body: &kmir::Body) -> Option<u32> {
    let ret = body.local(0)?.ty;
    // A test that returns the flag (or its negation): split, its result is
    // the flag's value, so a caller branching on it knows the flag.
    let returns_bool = matches!(dump.ty(ret).map(|t| &t.kind), Some(kmir::TyKind::Bool));
    if !returns_bool {
        let adt = dump.enum_of(ret)?;
        // A variant without fields beside one with: which one comes back
        // decides whether the caller holds anything.
        if !(2..=MAX_SPLIT).contains(&adt.variants.len())
            || !adt.variants.iter().any(|v| v.fields.is_empty())
            || !adt.variants.iter().any(|v| !v.fields.is_empty())
        {
            return None;
        }
    }
    let flag = |p: &kmir::Place| -> Option<u32> {
        match &*p.projection {
            [
                kmir::Projection::Deref,
                kmir::Projection::Field { index, ty },
            ] if p.local == 1
                && matches!(dump.ty(*ty).map(|t| &t.kind), Some(kmir::TyKind::Bool)) =>
            {
                Some(*index)
            }
            _ => None,
        }
    };
    if returns_bool {
        // The result is the flag or its negation: `_0 = (!)copy (*_1).f`,
        // or through one local, `_k = copy (*_1).f; _0 = (!)move _k`.
        let operand_of = |r: &kmir::Rvalue| match r {
            kmir::Rvalue::Use(kmir::Operand::Copy(p) | kmir::Operand::Move(p))
            | kmir::Rvalue::UnaryOp {
                op: kmir::UnOp::Not,
                operand: kmir::Operand::Copy(p) | kmir::Operand::Move(p),
            } => Some(p.clone()),
            _ => None,
        };
        let assigns = || {
            body.blocks
                .iter()
                .flat_map(|b| &b.statements)
                .filter_map(|s| match &s.kind {
                    kmir::StatementKind::Assign { place, rvalue }
                        if place.projection.is_empty() =>
                    {
                        Some((place.local, operand_of(rvalue)?))
                    }
                    _ => None,
                })
        };
        for (_, from) in assigns().filter(|(d, _)| *d == 0) {
            if let Some(f) = flag(&from) {
                return Some(f);
            }
            if from.projection.is_empty()
                && let Some(f) = assigns()
                    .filter(|(d, _)| *d == from.local)
                    .find_map(|(_, p)| flag(&p))
            {
                return Some(f);
            }
        }
    }
    for block in &body.blocks {
        let kmir::TerminatorKind::SwitchInt {
            discr: kmir::Operand::Copy(d) | kmir::Operand::Move(d),
            ..
        } = &block.terminator.kind
        else {
            continue;
        };
        if let Some(f) = flag(d) {
            return Some(f);
        }
        // `_k = copy (*_1).f; switchInt(move _k)`, in the same block.
        if !d.projection.is_empty() {
            continue;
        }
        let copied = block.statements.iter().rev().find_map(|s| match &s.kind {
            kmir::StatementKind::Assign { place, rvalue }
                if place.local == d.local && place.projection.is_empty() =>
            {
                Some(match &**rvalue {
                    kmir::Rvalue::Use(kmir::Operand::Copy(p) | kmir::Operand::Move(p)) => flag(p),
                    _ => None,
                })
            }
            _ => None,
        });
        if let Some(Some(f)) = copied {
            return Some(f);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use kmir::*;

    use super::*;

    const BOOL: TyId = 0;
    const QUEUE: TyId = 1;
    const QUEUE_MUT: TyId = 2;
    const PUSHED: TyId = 3;
    const U32: TyId = 4;

    fn ty(kind: TyKind, display: &str) -> Ty {
        Ty {
            kind,
            display: display.into(),
            size: None,
        }
    }

    fn adt(path: &str, kind: AdtKind, variants: Vec<(u128, Vec<&str>)>) -> AdtDef {
        AdtDef {
            path: path.into(),
            kind,
            variants: variants
                .into_iter()
                .map(|(discr, fields)| VariantDef {
                    name: "v".into(),
                    discr,
                    fields: fields
                        .into_iter()
                        .map(|t| FieldDef {
                            name: "f".into(),
                            ty: t.into(),
                        })
                        .collect(),
                })
                .collect(),
            span: Span::DUMMY,
        }
    }

    /// `struct Queue { dead: bool, count: u32 }` and `enum Pushed { Taken,
    /// Refused(u32) }`.
    fn dump() -> CrateDump {
        let adt_ty = |path: &str| TyKind::Adt {
            path: path.into(),
            args: vec![],
        };
        CrateDump {
            header: Header {
                producer: "test".into(),
                rustc_version: "rustc".into(),
                crate_name: "t".into(),
                crate_types: vec!["lib".into()],
                target: "x".into(),
                stable_crate_id: 1,
                edition: "2024".into(),
                drop_elaborated_mir: true,
                host: "x".into(),
                dependencies: Vec::new(),
            },
            files: vec!["a.rs".into()],
            types: vec![
                ty(TyKind::Bool, "bool"),
                ty(adt_ty("t::Queue"), "t::Queue"),
                ty(
                    TyKind::Ref {
                        pointee: QUEUE,
                        mutable: true,
                    },
                    "&mut t::Queue",
                ),
                ty(adt_ty("t::Pushed"), "t::Pushed"),
                ty(TyKind::Uint("u32".into()), "u32"),
            ],
            instances: vec![],
            vtables: vec![],
            statics: vec![],
            items: vec![],
            adts: vec![
                adt(
                    "t::Pushed",
                    AdtKind::Enum,
                    vec![(0, vec![]), (1, vec!["u32"])],
                ),
                adt("t::Queue", AdtKind::Struct, vec![(0, vec!["bool", "u32"])]),
            ],
            externals: vec![],
        }
    }

    fn block(statements: Vec<StatementKind>, terminator: TerminatorKind) -> Block {
        Block {
            statements: statements
                .into_iter()
                .map(|kind| Statement {
                    kind,
                    span: Span::DUMMY,
                })
                .collect(),
            terminator: Terminator {
                kind: terminator,
                span: Span::DUMMY,
            },
            is_cleanup: false,
        }
    }

    /// `fn push(_1: &mut Queue) -> RET { _2 = copy (*_1).FIELD; switchInt(move _2) … }`
    fn push(ret: TyId, field: u32, field_ty: TyId, switch: bool) -> Body {
        let local = |ty| LocalDecl {
            ty,
            span: Span::DUMMY,
            mutable: true,
        };
        let read = StatementKind::Assign {
            place: Place {
                local: 2,
                projection: Box::new([]),
            },
            rvalue: Box::new(Rvalue::Use(Operand::Copy(Place {
                local: 1,
                projection: Box::new([
                    Projection::Deref,
                    Projection::Field {
                        index: field,
                        ty: field_ty,
                    },
                ]),
            }))),
        };
        let first = if switch {
            TerminatorKind::SwitchInt {
                discr: Operand::Move(Place {
                    local: 2,
                    projection: Box::new([]),
                }),
                targets: vec![SwitchTarget {
                    value: 0,
                    target: 1,
                }],
                otherwise: 2,
            }
        } else {
            TerminatorKind::Goto { target: 1 }
        };
        Body {
            arg_count: 1,
            locals: vec![local(ret), local(QUEUE_MUT), local(field_ty)],
            blocks: vec![
                block(vec![read], first),
                block(vec![], TerminatorKind::Return),
                block(vec![], TerminatorKind::Return),
            ],
            var_names: vec![],
            span: Span::DUMMY,
            drop_elaborated: true,
        }
    }

    #[test]
    fn a_result_decided_by_a_flag_of_the_pointee_splits_by_its_value() {
        let split = entry_split(&dump(), &push(PUSHED, 0, BOOL, true)).expect("splits");
        assert!(split.pointee && split.value);
        assert_eq!(split.field, Some(0));
        assert_eq!(split.variants, vec![0, 1]);
    }

    #[test]
    fn a_test_helper_returning_the_flag_splits_without_a_branch() {
        // `_2 = copy (*_1).0; _0 = Not(move _2)`.
        let mut helper = push(BOOL, 0, BOOL, false);
        helper.blocks[0].statements.push(Statement {
            kind: StatementKind::Assign {
                place: Place {
                    local: 0,
                    projection: Box::new([]),
                },
                rvalue: Box::new(Rvalue::UnaryOp {
                    op: UnOp::Not,
                    operand: Operand::Move(Place {
                        local: 2,
                        projection: Box::new([]),
                    }),
                }),
            },
            span: Span::DUMMY,
        });
        let split = entry_split(&dump(), &helper).expect("splits");
        assert!(split.value);
        assert_eq!(split.field, Some(0));
    }

    #[test]
    fn no_split_on_a_field_that_is_not_a_flag_or_a_result_it_cannot_decide() {
        // Branching on a `u32` field.
        assert!(entry_split(&dump(), &push(PUSHED, 1, U32, true)).is_none());
        // Returning a `u32`.
        assert!(entry_split(&dump(), &push(U32, 0, BOOL, true)).is_none());
        // An enum result, but the flag is read without a branch on it.
        assert!(entry_split(&dump(), &push(PUSHED, 0, BOOL, false)).is_none());
        // A `bool` result the flag does not flow into.
        assert!(entry_split(&dump(), &push(BOOL, 0, BOOL, false)).is_none());
    }
}
