//! Call-site specialisation: a callee whose expectation depends on what it
//! is passed (a GFP flag it hands to `krealloc`, a fn pointer it calls,
//! like the kernel's `ReallocFunc::call`) is analysed again with the
//! constants a call site passes, and the call site is checked against that
//! specialised summary.
//!
//! `Kmalloc::free` calls `realloc(…, Flags(0), …)`, which calls
//! `ReallocFunc::KREALLOC.call(…, flags, …)`, which calls the fn pointer
//! stored in `KREALLOC` — `krealloc_node_align` — with `flags.0`. Without
//! specialisation every free under a spinlock "may sleep" (the pointer
//! could be anything, the flag anything); with it, the flag is 0 and the
//! pointer is `krealloc_node_align`, which does not sleep with that flag.

use kmir::{Body, ConstValue, LocalId, Operand, Rvalue};
use program::{FnId, Program};

use memory::{Aspect, Facts, Known, PlaceKey, ProjKey};

/// How deep specialisations nest (free → realloc → call is 2).
pub const MAX_DEPTH: u8 = 4;

/// What a call site tells its callee: known argument values and the
/// functions fn pointers behind arguments may be.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Context {
    /// (argument local, projection inside it, value).
    pub known: Vec<(LocalId, Vec<ProjKey>, u128)>,
    /// (argument local, the functions a fn pointer in or behind it may be).
    pub fn_ptrs: Vec<(LocalId, Vec<FnId>)>,
    pub depth: u8,
}

impl Context {
    /// What the arguments of a call are known to be; `None` when nothing.
    pub fn at_call(
        program: &Program,
        dump: &kmir::CrateDump,
        body: &Body,
        facts: &Facts,
        args: &[Operand],
        depth: u8,
    ) -> Option<Context> {
        let mut known = Vec::new();
        let mut fn_ptrs = Vec::new();
        for (i, op) in args.iter().enumerate() {
            let local = i as LocalId + 1;
            match op {
                Operand::Constant(c) => match &c.value {
                    ConstValue::Scalar(v) => {
                        known.push((local, Vec::new(), *v));
                        // A newtype's (`Flags(0)`) field is the value too.
                        if matches!(
                            dump.ty(c.ty).map(|t| &t.kind),
                            Some(kmir::TyKind::Adt { .. })
                        ) {
                            known.push((local, vec![ProjKey::Field(0)], *v));
                        }
                    }
                    ConstValue::Memory(m) if !m.fn_ptrs.is_empty() => {
                        let ids: Vec<FnId> =
                            m.fn_ptrs.iter().filter_map(|s| program.lookup(s)).collect();
                        if !ids.is_empty() {
                            fn_ptrs.push((local, ids));
                        }
                    }
                    _ => {}
                },
                Operand::Copy(p) | Operand::Move(p) => {
                    let Some(key) = PlaceKey::of(p) else { continue };
                    if let Some(Known::Is(v)) = facts.value_of(&facts.resolve(&key, Aspect::Value))
                    {
                        known.push((local, Vec::new(), v));
                        let adt = p.projection.is_empty()
                            && body
                                .local(p.local)
                                .and_then(|l| dump.ty(l.ty))
                                .is_some_and(|t| matches!(t.kind, kmir::TyKind::Adt { .. }));
                        if adt {
                            known.push((local, vec![ProjKey::Field(0)], v));
                        }
                    }
                    for (suffix, aspect, k) in facts.known_under(&key) {
                        if let (Aspect::Value, Known::Is(v), false) =
                            (aspect, &k, suffix.is_empty())
                        {
                            known.push((local, suffix, *v));
                        }
                    }
                    if let Some(syms) = fn_pointer_source(body, op, 0) {
                        let ids: Vec<FnId> =
                            syms.iter().filter_map(|s| program.lookup(s)).collect();
                        if !ids.is_empty() {
                            fn_ptrs.push((local, ids));
                        }
                    }
                }
                Operand::RuntimeChecks(_) => {}
            }
        }
        (!known.is_empty() || !fn_ptrs.is_empty()).then_some(Context {
            known,
            fn_ptrs,
            depth,
        })
    }
}

/// The fn pointers a local was made from in `body`: a constant holding
/// them (`const <&ReallocFunc>[fn krealloc_node_align]`), through copies
/// and references.
pub fn fn_pointer_source(body: &Body, op: &Operand, depth: u8) -> Option<Vec<String>> {
    if depth > 8 {
        return None;
    }
    match op {
        Operand::Constant(c) => match &c.value {
            ConstValue::Memory(m) if !m.fn_ptrs.is_empty() => {
                Some(m.fn_ptrs.iter().map(|s| s.to_string()).collect())
            }
            _ => None,
        },
        Operand::Copy(p) | Operand::Move(p) => {
            let local = p.local;
            if local <= body.arg_count {
                return None;
            }
            // Only a local assigned once, as a whole, and never written
            // through a pointer, says what it holds.
            if !kmir::visit::only_assigned_whole(body, local) {
                return None;
            }
            let rvalue = kmir::visit::sole_assignment(body, local)?;
            match rvalue {
                Rvalue::Cast {
                    kind:
                        kmir::CastKind::ReifyFnPointer { symbol }
                        | kmir::CastKind::ClosureFnPointer { symbol },
                    ..
                } => Some(vec![symbol.to_string()]),
                Rvalue::Use(o) | Rvalue::Cast { operand: o, .. } => {
                    fn_pointer_source(body, o, depth + 1)
                }
                // `Some(handler)`: C's nullable function pointer.
                Rvalue::Aggregate { operands, .. } if operands.len() == 1 => {
                    fn_pointer_source(body, &operands[0], depth + 1)
                }
                Rvalue::Ref { place: q, .. } | Rvalue::AddressOf { place: q, .. } => {
                    fn_pointer_source(
                        body,
                        &Operand::Copy(kmir::Place {
                            local: q.local,
                            projection: Box::new([]),
                        }),
                        depth + 1,
                    )
                }
                _ => None,
            }
        }
        Operand::RuntimeChecks(_) => None,
    }
}

/// The vtable a `dyn` receiver operand was built with, where the body shows
/// it: a local assigned once, as a whole (see `fn_pointer_source`), from an
/// unsizing cast that builds a vtable, through copies, casts and reborrows
/// (`&(*_4)`); a part of such a local (`_1.0.0` of a `Box<dyn T>`) carries
/// the same vtable.
pub fn vtable_source(body: &Body, op: &Operand, depth: u8) -> Option<kmir::VtableId> {
    if depth > 8 {
        return None;
    }
    let (Operand::Copy(p) | Operand::Move(p)) = op else {
        return None;
    };
    let local = p.local;
    if local <= body.arg_count || !kmir::visit::only_assigned_whole(body, local) {
        return None;
    }
    match kmir::visit::sole_assignment(body, local)? {
        Rvalue::Cast {
            kind: kmir::CastKind::Unsize { vtable: Some(id) },
            ..
        } => Some(*id),
        Rvalue::Use(o) | Rvalue::Cast { operand: o, .. } => vtable_source(body, o, depth + 1),
        Rvalue::Ref { place: q, .. }
        | Rvalue::AddressOf { place: q, .. }
        | Rvalue::CopyForDeref(q)
            if *q.projection == [kmir::Projection::Deref] =>
        {
            let reborrowed = Operand::Copy(kmir::Place {
                local: q.local,
                projection: Box::new([]),
            });
            vtable_source(body, &reborrowed, depth + 1)
        }
        _ => None,
    }
}

/// The argument a fn-pointer operand is loaded from (`_19 = copy (*_1).0`
/// then `move _19(…)`), following single assignments.
pub fn operand_arg_root(body: &Body, op: &Operand) -> Option<LocalId> {
    let (Operand::Copy(p) | Operand::Move(p)) = op else {
        return None;
    };
    let mut local = p.local;
    for _ in 0..8 {
        if (1..=body.arg_count).contains(&local) {
            return Some(local);
        }
        let next = match kmir::visit::sole_assignment(body, local)? {
            Rvalue::Use(Operand::Copy(q) | Operand::Move(q))
            | Rvalue::Cast {
                operand: Operand::Copy(q) | Operand::Move(q),
                ..
            }
            | Rvalue::CopyForDeref(q) => Some(q.local),
            _ => None,
        };
        local = next?;
    }
    None
}
