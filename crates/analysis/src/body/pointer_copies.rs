//! Locals that hold a copy of a pointer stored below what the first
//! argument points to: how a last-reference place goes on through a
//! pointer (`PlaceStep::Deref`).
//!
//! `Box::drop` reads its pointer (`_20 = copy (*_1).0`), casts it and
//! drops what it points to (`drop_glue(&mut (*_19))`); `Arc::drop` reads
//! its pointer the same way and builds a `Box` around it (`_5 = Box(move
//! _16, ..)`) to drop. What those drops release is the object behind the
//! pointer at `(*arg0).0`, and a caller that knows something of that
//! object (a back pointer in it names an object alive elsewhere) can use
//! the callee's place only if it says so.
//!
//! The scan is flow-insensitive and keeps only locals given exactly one
//! value: MIR writes such temporaries once. Only copies, moves, casts that
//! keep the address (transmutes, pointer-to-pointer casts), reborrows of
//! the pointee and calls whose result holds only what their first argument
//! holds (`Summary::ret_from`: `NonNull::as_ptr`, `Box::from_raw`, where
//! they are not inlined) count; anything else (pointer arithmetic, another
//! call) leaves the local out.

use std::collections::HashMap;

use kmir::{
    BlockId, Body, CastKind, CrateDump, Operand, Place, Projection, Rvalue, StatementKind,
    TerminatorKind,
};

use super::Target;
use crate::summary::{Flow, PlaceStep, Summaries};

/// Where a local's pointer comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A copy of the first argument itself, or a reborrow of what it
    /// points to (`_2 = copy _1` in a drop glue).
    Arg,
    /// The value holds the pointer stored at `steps` below what the first
    /// argument points to: a copy, a cast, `&mut *p` of one (`within` is
    /// empty), a struct built around one (`Box(Unique { pointer: p, .. },
    /// Global)`: `within` is the fields to it), or, where `within` is
    /// `None`, a value whose only pointer it is, wherever (what
    /// `Box::from_raw(p)` returns).
    Ptr {
        steps: Vec<PlaceStep>,
        labels: Vec<String>,
        within: Option<Vec<u32>>,
    },
}

impl Source {
    /// The same pointer, one field further in (`within` of an aggregate
    /// built around this value at field `i`).
    fn at_field(self, i: u32) -> Source {
        match self {
            Source::Ptr {
                steps,
                labels,
                within,
            } => Source::Ptr {
                steps,
                labels,
                within: within.map(|w| {
                    let mut out = vec![i];
                    out.extend(w);
                    out
                }),
            },
            Source::Arg => Source::Arg,
        }
    }
}

/// The sources of the locals of `body` that have one.
pub(super) fn scan(
    dump: &CrateDump,
    body: &Body,
    sites: &HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
) -> HashMap<u32, Source> {
    let mut defs: HashMap<u32, u32> = HashMap::new();
    for b in &body.blocks {
        for st in &b.statements {
            if let StatementKind::Assign { place, .. } = &st.kind {
                *defs.entry(place.local).or_default() += 1;
                if !place.projection.is_empty() {
                    // A write into part of it: more than one value.
                    *defs.entry(place.local).or_default() += 1;
                }
            }
        }
        if let kmir::TerminatorKind::Call { destination, .. } = &b.terminator.kind {
            *defs.entry(destination.local).or_default() += 1;
            if !destination.projection.is_empty() {
                *defs.entry(destination.local).or_default() += 1;
            }
        }
    }
    // A local whose address is taken may be written through the pointer.
    for b in &body.blocks {
        for st in &b.statements {
            if let StatementKind::Assign {
                rvalue: rv,
                place: _,
            } = &st.kind
                && let Rvalue::Ref {
                    mutable: true,
                    place: q,
                }
                | Rvalue::AddressOf {
                    mutable: true,
                    place: q,
                } = &**rv
                && q.projection.first() != Some(&Projection::Deref)
            {
                *defs.entry(q.local).or_default() += 2;
            }
        }
    }
    let once = |l: u32| l != 1 && defs.get(&l) == Some(&1);
    let mut out: HashMap<u32, Source> = HashMap::new();
    // Each round can only add locals; the chains are short.
    for _ in 0..8 {
        let mut changed = false;
        for (bi, b) in body.blocks.iter().enumerate() {
            for st in &b.statements {
                let StatementKind::Assign { place, rvalue } = &st.kind else {
                    continue;
                };
                if !place.projection.is_empty() || !once(place.local) {
                    continue;
                }
                if out.contains_key(&place.local) {
                    continue;
                }
                let found = match &**rvalue {
                    Rvalue::Use(op) => operand_ptr(dump, body, &out, op),
                    Rvalue::CopyForDeref(p) => place_ptr(dump, body, &out, p),
                    // A cast of the pointer itself (not of a struct
                    // around it, whose fields a transmute may reorder).
                    Rvalue::Cast { kind, operand, .. } if address_kept(kind) => {
                        operand_ptr(dump, body, &out, operand).filter(|s| {
                            matches!(s, Source::Ptr { within, .. } if within.as_deref() == Some(&[]))
                        })
                    }
                    Rvalue::Ref { place: q, .. } | Rvalue::AddressOf { place: q, .. } => {
                        match &*q.projection {
                            [Projection::Deref] if q.local == 1 => Some(Source::Arg),
                            [Projection::Deref] => match out.get(&q.local) {
                                Some(s @ Source::Arg) => Some(s.clone()),
                                // `&mut *p`: points where `p` does.
                                Some(s @ Source::Ptr { within, .. })
                                    if within.as_deref() == Some(&[]) =>
                                {
                                    Some(s.clone())
                                }
                                _ => None,
                            },
                            _ => None,
                        }
                    }
                    // A struct around one such pointer, every other field
                    // a constant (`PhantomData`, an allocator): its only
                    // pointer is that one.
                    Rvalue::Aggregate { operands, .. } => {
                        let found: Vec<(usize, Source)> = operands
                            .iter()
                            .enumerate()
                            .filter_map(|(i, op)| {
                                operand_ptr(dump, body, &out, op)
                                    .filter(|s| matches!(s, Source::Ptr { .. }))
                                    .map(|s| (i, s))
                            })
                            .collect();
                        let others_constant = operands
                            .iter()
                            .enumerate()
                            .all(|(i, op)| {
                                found.iter().any(|(j, _)| *j == i)
                                    || matches!(op, Operand::Constant(_))
                            });
                        match <[_; 1]>::try_from(found) {
                            Ok([(i, s)]) if others_constant => Some(s.at_field(i as u32)),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                if let Some(s) = found {
                    out.insert(place.local, s);
                    changed = true;
                }
            }
            // A call whose result holds only what its first argument holds.
            if let TerminatorKind::Call {
                args, destination, ..
            } = &b.terminator.kind
                && destination.projection.is_empty()
                && once(destination.local)
                && !out.contains_key(&destination.local)
            {
                let passes_arg0 = sites.get(&(bi as BlockId)).is_some_and(|ts| {
                    !ts.is_empty()
                        && ts.iter().all(|t| {
                            summary_of.get(t.callee).ret_from.as_deref()
                                == Some(&[Flow::Own(0)][..])
                        })
                });
                // The result is one pointer, or a box around one: a
                // result with room for two (a pair, a pointer and an
                // offset one) could hold another pointer derived from
                // the argument, and "its only pointer" would name neither.
                let dest_ty = dump.place_ty(body, destination);
                let one_pointer = dest_ty.is_some_and(|t| pointer_like(dump, t));
                let boxed = dest_ty.is_some_and(|t| {
                    matches!(dump.ty(t).map(|t| &t.kind),
                        Some(kmir::TyKind::Adt { path, .. })
                            if matches!(path.as_str(), "alloc::boxed::Box" | "kernel::alloc::kbox::Box"))
                });
                if passes_arg0
                    && (one_pointer || boxed)
                    && let Some(Source::Ptr { steps, labels, .. }) = args
                        .first()
                        .and_then(|op| operand_ptr(dump, body, &out, op))
                        .filter(|s| {
                            matches!(s, Source::Ptr { within, .. } if within.as_deref() == Some(&[]))
                        })
                {
                    out.insert(
                        destination.local,
                        Source::Ptr {
                            steps,
                            labels,
                            within: if one_pointer { Some(Vec::new()) } else { None },
                        },
                    );
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    out
}

/// Casts that keep the address: a transmute between pointer-sized
/// wrappers (`NonNull` to `*mut`), a pointer-to-pointer cast.
fn address_kept(kind: &CastKind) -> bool {
    matches!(kind, CastKind::Other(n) if &**n == "Transmute" || &**n == "PtrToPtr")
}

fn operand_ptr(
    dump: &CrateDump,
    body: &Body,
    known: &HashMap<u32, Source>,
    op: &Operand,
) -> Option<Source> {
    match op {
        Operand::Copy(p) | Operand::Move(p) => place_ptr(dump, body, known, p),
        _ => None,
    }
}

/// The pointer a read of `p` yields: one stored below `*_1` (fields only),
/// or a copy of a local already known.
fn place_ptr(
    dump: &CrateDump,
    body: &Body,
    known: &HashMap<u32, Source>,
    p: &Place,
) -> Option<Source> {
    if p.local == 1 {
        let [Projection::Deref, rest @ ..] = &*p.projection else {
            return p.projection.is_empty().then_some(Source::Arg);
        };
        let mut steps = Vec::new();
        let mut labels = Vec::new();
        let mut at = Place {
            local: 1,
            projection: vec![Projection::Deref].into(),
        };
        for proj in rest {
            let Projection::Field { index, .. } = proj else {
                return None;
            };
            steps.push(PlaceStep::Field(*index));
            labels.push(field_label(dump, body, &at, *index));
            let mut v = at.projection.to_vec();
            v.push(proj.clone());
            at.projection = v.into();
        }
        // One pointer, so that "what it points to" names one place.
        if !dump
            .place_ty(body, p)
            .is_some_and(|t| pointer_like(dump, t))
        {
            return None;
        }
        return Some(Source::Ptr {
            steps,
            labels,
            within: Some(Vec::new()),
        });
    }
    if !p.projection.is_empty() {
        return None;
    }
    match known.get(&p.local) {
        Some(s @ (Source::Ptr { .. } | Source::Arg)) => Some(s.clone()),
        _ => None,
    }
}

/// A raw pointer, a reference, or one of the standard library's wrappers
/// around exactly one (`NonNull`, `Unique`): a value holding one pointer.
fn pointer_like(dump: &CrateDump, ty: kmir::TyId) -> bool {
    match dump.ty(ty).map(|t| &t.kind) {
        Some(kmir::TyKind::RawPtr { .. } | kmir::TyKind::Ref { .. }) => true,
        Some(kmir::TyKind::Adt { path, .. }) => {
            matches!(
                path.as_str(),
                "core::ptr::non_null::NonNull" | "core::ptr::unique::Unique"
            )
        }
        _ => false,
    }
}

/// `path::Struct.field` for field `index` of the struct at `at`; empty
/// for anything else (an enum, a tuple, an unknown type).
pub(super) fn field_label(dump: &CrateDump, body: &Body, at: &Place, index: u32) -> String {
    let Some(t) = dump.place_ty(body, at) else {
        return String::new();
    };
    let Some(kmir::TyKind::Adt { path, .. }) = dump.ty(t).map(|t| &t.kind) else {
        return String::new();
    };
    let Some(adt) = dump.adt(path) else {
        return String::new();
    };
    match &adt.variants[..] {
        [v] if adt.kind == kmir::AdtKind::Struct => v
            .fields
            .get(index as usize)
            .map(|f| format!("{}.{}", adt.path, f.name))
            .unwrap_or_default(),
        _ => String::new(),
    }
}
