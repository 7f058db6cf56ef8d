//! Predicates that reject only one object, and the calls that drop only
//! what their predicate rejects (docs/preemption.md, "Identity tests").
//!
//! Binder's `Node::remove_freeze_listener(&self, p: &Process)` runs
//! `inner.freeze_list.retain(|proc| !ptr::eq(&**proc, p))` under the
//! owner's spinlock. `retain` drops exactly the elements the closure
//! rejects (the spec's `drops_rejected_by`), and the closure rejects only
//! an `Arc<Process>` whose object is where `p` points. `p` is valid for
//! the whole call, so that object outlives every drop `retain` makes: none
//! is the last reference.
//!
//! Three summary facts, each read off a body:
//! * [`address_test`]: `core::ptr::eq`, `_0 = Eq(a, b)` of two pointer
//!   arguments;
//! * [`rejects_only_object_at`]: a predicate (closure) returning the
//!   negation of such a test between the object its element's handle
//!   counts and the reference a field of its environment holds;
//! * [`last_only_at`]: a function the spec says drops only what its
//!   predicate argument rejects, whose body calls that argument as such a
//!   predicate.
//!
//! `Origins::rejected_only_backed` then backs a call of the last, at a site
//! whose closure captured a reference a shared-reference argument of the
//! caller borrows.

use std::collections::HashMap;

use kmir::visit::{Definition, single_definitions};
use kmir::{
    AggregateKind, BinOp, BlockId, Body, CrateDump, Operand, Place, Projection, Rvalue,
    StatementKind, TerminatorKind, TyKind, UnOp,
};

use super::Target;
use super::origins::Origin;
use crate::summary::{Flow, Summaries};

/// The local `op` copies or moves as a whole.
fn whole_local(op: &Operand) -> Option<u32> {
    match op {
        Operand::Copy(p) | Operand::Move(p) if p.projection.is_empty() => Some(p.local),
        _ => None,
    }
}

/// The arguments `(i, j)` a function compares as addresses: its body's only
/// write to its result is `_0 = Eq(a, b)`, `a` and `b` copies (through
/// casts) of arguments `i` and `j`, both pointers (`core::ptr::eq`).
pub fn address_test(dump: &CrateDump, body: &Body) -> Option<(u32, u32)> {
    if body.arg_count != 2 {
        return None;
    }
    let mut found = None;
    for b in &body.blocks {
        for st in &b.statements {
            if let StatementKind::Assign { place, rvalue } = &st.kind
                && place.local == 0
            {
                let Rvalue::BinaryOp {
                    op: BinOp::Eq,
                    lhs,
                    rhs,
                } = &**rvalue
                else {
                    return None;
                };
                if found.is_some() || !place.projection.is_empty() {
                    return None;
                }
                found = Some((lhs, rhs));
            }
        }
        if let TerminatorKind::Call { destination, .. } = &b.terminator.kind
            && destination.local == 0
        {
            return None;
        }
    }
    let (lhs, rhs) = found?;
    let defs = single_definitions(body);
    let arg_of = |op: &Operand| -> Option<u32> {
        let mut l = whole_local(op)?;
        for _ in 0..4 {
            if l >= 1 && l <= body.arg_count {
                let ty = body.local(l)?.ty;
                let pointer = matches!(
                    dump.ty(ty).map(|t| &t.kind),
                    Some(TyKind::RawPtr { .. } | TyKind::Ref { .. })
                );
                return pointer.then_some(l - 1);
            }
            l = match defs.get(l as usize)?.as_ref()? {
                Definition::Statement(Rvalue::Use(op) | Rvalue::Cast { operand: op, .. }) => {
                    whole_local(op)?
                }
                _ => return None,
            };
        }
        None
    };
    let (i, j) = (arg_of(lhs)?, arg_of(rhs)?);
    (i != j).then_some((i, j))
}

/// What the address a local holds is, as [`rejects_only_object_at`] needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Address {
    /// A place in the object the handle argument 1 points to counts.
    InObjectOfElement,
    /// The handle argument 1 points to, itself (what an identity test
    /// compares).
    ElementHandle,
    /// The reference field `F` of what argument 0 (the environment) points
    /// to holds.
    EnvironmentField(u32),
}

/// The field `F` when a predicate `fn(&mut Env, &mut H) -> bool` returns
/// zero only if the object the handle behind its argument 1 counts is
/// where the reference in field `F` of its environment points: its only
/// write to its result is `_0 = Not(t)`, `t` an [`address_test`] (or
/// `Eq`) of a pointer into that object (a call whose summary says its
/// result points into the object its handle argument counts, `Arc::deref`,
/// given argument 1) and a copy of that field; or an identity test
/// (`Arc::ptr_eq`) of argument 1's handle and the handle that field
/// points to.
pub fn rejects_only_object_at(
    dump: &CrateDump,
    body: &Body,
    sites: &HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
) -> Option<u32> {
    if body.arg_count != 2
        || !matches!(
            body.local(0).and_then(|l| dump.ty(l.ty)).map(|t| &t.kind),
            Some(TyKind::Bool)
        )
    {
        return None;
    }
    let Some(Definition::Statement(Rvalue::UnaryOp {
        op: UnOp::Not,
        operand,
    })) = result_def(body)
    else {
        return None;
    };
    let t = whole_local(operand)?;
    let defs = single_definitions(body);
    let (a, b) = match defs.get(t as usize)?.as_ref()? {
        Definition::Statement(Rvalue::BinaryOp {
            op: BinOp::Eq,
            lhs,
            rhs,
        }) => (lhs.clone(), rhs.clone()),
        Definition::Call(block) => {
            let (args, callee) = call_at(body, sites, summary_of, *block)?;
            // `ptr::eq(&**elem, p)` compares addresses; `Arc::ptr_eq(elem,
            // p)` the pointers two handles hold.
            let (i, j, element) = match (callee.address_test, callee.identity_test) {
                (Some((i, j)), _) => (i, j, Address::InObjectOfElement),
                (None, Some((i, j))) => (i, j, Address::ElementHandle),
                (None, None) => return None,
            };
            let addr = |k: u32| {
                address_of(
                    dump,
                    body,
                    &defs,
                    sites,
                    summary_of,
                    whole_local(args.get(k as usize)?)?,
                    0,
                )
            };
            return match (addr(i)?, addr(j)?) {
                (e, Address::EnvironmentField(f)) | (Address::EnvironmentField(f), e)
                    if e == element =>
                {
                    Some(f)
                }
                _ => None,
            };
        }
        _ => return None,
    };
    let addr = |op: &Operand| address_of(dump, body, &defs, sites, summary_of, whole_local(op)?, 0);
    match (addr(&a)?, addr(&b)?) {
        (Address::InObjectOfElement, Address::EnvironmentField(f))
        | (Address::EnvironmentField(f), Address::InObjectOfElement) => Some(f),
        _ => None,
    }
}

/// The operands of the call ending `block` and its one callee's summary.
fn call_at<'b, 's>(
    body: &'b Body,
    sites: &HashMap<BlockId, Vec<Target>>,
    summary_of: &'s dyn Summaries,
    block: BlockId,
) -> Option<(&'b [Operand], &'s crate::summary::Summary)> {
    let TerminatorKind::Call { args, .. } = &body.blocks.get(block as usize)?.terminator.kind
    else {
        return None;
    };
    let [target] = sites.get(&block)?.as_slice() else {
        return None;
    };
    Some((args, summary_of.get(target.callee)))
}

/// The only write to `_0`, as a definition.
fn result_def(body: &Body) -> Option<Definition<'_>> {
    let mut found = None;
    for (bi, b) in body.blocks.iter().enumerate() {
        for st in &b.statements {
            if let StatementKind::Assign { place, rvalue } = &st.kind
                && place.local == 0
            {
                if found.is_some() || !place.projection.is_empty() {
                    return None;
                }
                found = Some(Definition::Statement(rvalue));
            }
        }
        if let TerminatorKind::Call { destination, .. } = &b.terminator.kind
            && destination.local == 0
        {
            if found.is_some() {
                return None;
            }
            found = Some(Definition::Call(bi as BlockId));
        }
    }
    found
}

/// What address local `l` holds: through reborrows (`&(*x)`, `&raw const
/// (*x)`), copies and casts, to a call returning a pointer into the object
/// of the handle argument 1 points to, or a copy of a reference field of
/// the environment.
fn address_of(
    dump: &CrateDump,
    body: &Body,
    defs: &[Option<Definition<'_>>],
    sites: &HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
    l: u32,
    depth: u32,
) -> Option<Address> {
    if depth > 8 {
        return None;
    }
    let next = |m: u32| address_of(dump, body, defs, sites, summary_of, m, depth + 1);
    // Argument 1, the element's handle (`&mut H`).
    if l == 2 {
        return Some(Address::ElementHandle);
    }
    match defs.get(l as usize)?.as_ref()? {
        Definition::Statement(rv) => match rv {
            Rvalue::Ref { place, .. } | Rvalue::AddressOf { place, .. }
                if *place.projection == [Projection::Deref] =>
            {
                next(place.local)
            }
            Rvalue::Use(op) | Rvalue::Cast { operand: op, .. } => match op {
                Operand::Copy(p) | Operand::Move(p) if p.projection.is_empty() => next(p.local),
                // `copy (*_1).F`: a reference captured by value.
                Operand::Copy(Place {
                    local: 1,
                    projection,
                }) => match **projection {
                    [Projection::Deref, Projection::Field { index, ty }]
                        if matches!(
                            dump.ty(ty).map(|t| &t.kind),
                            Some(TyKind::Ref { mutable: false, .. })
                        ) =>
                    {
                        Some(Address::EnvironmentField(index))
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        },
        Definition::Call(block) => {
            let (args, s) = call_at(body, sites, summary_of, *block)?;
            // Into the object the handle its argument 0 points to counts.
            let into_object = !s.ret_fresh
                && s.ret_points.as_deref().is_some_and(|ps| {
                    !ps.is_empty() && ps.iter().all(|(k, p)| *k == 0 && p.through_handle())
                });
            if !into_object {
                return None;
            }
            // Given a pointer to the handle argument 1 points to.
            let given = whole_local(args.first()?)?;
            match defs.get(given as usize)?.as_ref()? {
                Definition::Statement(Rvalue::Ref { place, .. })
                    if place.local == 2 && *place.projection == [Projection::Deref] =>
                {
                    Some(Address::InObjectOfElement)
                }
                Definition::Statement(Rvalue::Use(Operand::Copy(p) | Operand::Move(p)))
                    if p.local == 2 && p.projection.is_empty() =>
                {
                    Some(Address::InObjectOfElement)
                }
                _ => None,
            }
        }
    }
}

/// The `(argument, field)` of a function the spec says drops only the
/// elements its predicate argument `k` rejects (`drops_rejected_by`),
/// when its body calls that argument directly as a predicate that rejects
/// only the object field `F` of its environment points to, and never
/// drops the predicate (its environment holds nothing to release).
pub fn last_only_at(
    body: &Body,
    k: u32,
    sites: &HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
) -> Option<(u32, u32)> {
    let predicate = k + 1;
    let defs = single_definitions(body);
    let mut field = None;
    for (bi, b) in body.blocks.iter().enumerate() {
        match &b.terminator.kind {
            // A drop of the predicate that runs glue may release what it
            // captured.
            TerminatorKind::Drop {
                place,
                glue: Some(_),
                ..
            } if place.local == predicate => return None,
            TerminatorKind::Call { args, .. } => {
                let lends = args.iter().any(|op| {
                    whole_local(op).is_some_and(|l| {
                        l == predicate
                            || matches!(defs.get(l as usize), Some(Some(Definition::Statement(Rvalue::Ref { place, .. })))
                                if place.local == predicate)
                    })
                });
                if !lends {
                    continue;
                }
                let [target] = sites.get(&(bi as BlockId))?.as_slice() else {
                    return None;
                };
                let f = summary_of.get(target.callee).rejects_only_object_at?;
                if field.is_some_and(|g| g != f) {
                    return None;
                }
                field = Some(f);
            }
            _ => {}
        }
    }
    field.map(|f| (k, f))
}

impl super::origins::Origins {
    /// Whether the call ending `block` drops only objects that outlive it:
    /// the callee drops only what its predicate argument rejects
    /// (`last_only_at`), and the closure given there captured, in that
    /// field, a reference to memory a shared-reference argument of this
    /// function borrows.
    pub fn rejected_only_backed(
        &self,
        dump: &CrateDump,
        body: &Body,
        terminator: &TerminatorKind,
        last_only_at: Option<(u32, u32)>,
    ) -> bool {
        let (Some((k, f)), TerminatorKind::Call { args, .. }) = (last_only_at, terminator) else {
            return false;
        };
        let Some(closure) = args.get(k as usize).and_then(whole_local) else {
            return false;
        };
        let Some(Rvalue::Aggregate {
            kind: AggregateKind::Closure { .. },
            operands,
        }) = kmir::visit::sole_assignment(body, closure)
        else {
            return false;
        };
        let Some(captured) = operands.get(f as usize) else {
            return false;
        };
        self.operand(dump, captured).is_some_and(|s| {
            !s.is_empty()
                && s.iter()
                    .all(|o| matches!(*o, Origin::Arg(Flow::Shared(j, _)) if self.is_shared(j)))
        })
    }
}
