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
    pub variants: Vec<u128>,
}

/// The discriminants of an enum type that is worth splitting by.
pub(crate) fn split_variants(dump: &kmir::CrateDump, ty: kmir::TyId) -> Option<Vec<u128>> {
    let adt = dump.enum_of(ty)?;
    (2..=MAX_SPLIT)
        .contains(&adt.variants.len())
        .then(|| adt.discriminants())
}

/// For a struct type whose field 0 is an enum worth splitting by: that
/// field and its type. Field types are only known substituted where the
/// body uses them, so they are looked up there.
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
pub(crate) fn split_like_callee(
    input: &Input<'_>,
    f: FnId,
    summaries: &dyn Summaries,
) -> Option<EntrySplit> {
    let (_, inst) = input.program.body_of(f)?;
    if !matches!(inst.kind, kmir::InstanceKind::DropGlue { .. }) {
        return None;
    }
    input.program.callees(f).into_iter().find_map(|(g, _)| {
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
            pointee: true,
            field: Some(field),
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
