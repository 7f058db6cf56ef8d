//! Flow-insensitive pre-scans of a body: locals whose address escapes,
//! locals holding a last-reference test's result.

use std::collections::HashMap;

use kmir::visit::PlaceContext;
use kmir::{
    BlockId, Body, Callee, CrateDump, LocalId, Place, Rvalue, StatementKind, TerminatorKind,
};

use program::{EdgeKind, FnId, Program};

use crate::summary::Summaries;

use super::Target;

/// Locals whose address escapes: through a raw pointer, or a `&mut` that
/// lives on after the statement that uses it. Calls may change them.
///
/// The borrow checker makes one common case safe: `_t = &mut _l` moved
/// straight into a call whose result holds no reference (`slot.take()`,
/// `v.push(x)`) cannot be used once the call returns, so `_l` only changes
/// in that call (which its summary describes).
pub(super) fn escaped_locals(dump: &CrateDump, body: &Body) -> Vec<LocalId> {
    let mut out: Vec<LocalId> = Vec::new();
    let mut borrows: Vec<(LocalId, LocalId)> = Vec::new(); // (borrowed, holder)
    kmir::visit::for_each_assign(body, |place, rvalue, _| match rvalue {
        // A borrow of what a pointer the local holds points to (`&mut
        // (*l).f`) cannot change the local itself.
        Rvalue::AddressOf { place: p, .. } | Rvalue::Ref { place: p, .. }
            if p.projection.first() == Some(&kmir::Projection::Deref) => {}
        Rvalue::AddressOf { place: p, .. } => out.push(p.local),
        Rvalue::Ref {
            mutable: true,
            place: p,
        } => {
            if place.projection.is_empty() {
                borrows.push((p.local, place.local));
            } else {
                out.push(p.local);
            }
        }
        _ => {}
    });
    for (borrowed, holder) in borrows {
        let consumed = consumed_by_one_call(dump, body, holder)
            || reborrowed_once(body, holder)
                .is_some_and(|reborrow| consumed_by_one_call(dump, body, reborrow));
        if !consumed {
            out.push(borrowed);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The locals whose own memory is borrowed mutably or by raw pointer
/// (`&mut l`, `&raw const l.f`), as opposed to a borrow of what a pointer
/// they hold points to (`&mut (*l).f`): only these can change other than by
/// an assignment to them. Sorted.
pub(super) fn address_taken(body: &Body) -> Vec<LocalId> {
    let mut out: Vec<LocalId> = Vec::new();
    kmir::visit::for_each_assign(body, |_, rvalue, _| match rvalue {
        Rvalue::AddressOf { place: p, .. }
        | Rvalue::Ref {
            mutable: true,
            place: p,
        } if p.projection.first() != Some(&kmir::Projection::Deref) => out.push(p.local),
        _ => {}
    });
    out.sort_unstable();
    out.dedup();
    out
}

/// The local that reborrows `holder` (`_6 = &mut (*_7)`), when that is the
/// only use of `holder` other than assigning it: the borrow then lives on
/// only through the reborrow (`mem::replace(&mut g, None)` passes one).
fn reborrowed_once(body: &Body, holder: LocalId) -> Option<LocalId> {
    let mut uses = 0usize;
    kmir::visit::for_each_place(body, |place, context, _| {
        let whole_write = context.is_write() && place.projection.is_empty();
        let mentions = place.local == holder
            || place
                .projection
                .iter()
                .any(|q| matches!(q, kmir::Projection::Index(l) if *l == holder));
        if mentions && !whole_write {
            uses += 1;
        }
    });
    if uses != 1 {
        return None;
    }
    let mut reborrow = None;
    kmir::visit::for_each_assign(body, |place, rvalue, _| {
        if let Rvalue::Ref {
            mutable: true,
            place: q,
        } = rvalue
            && q.local == holder
            && *q.projection == [kmir::Projection::Deref]
            && place.projection.is_empty()
        {
            reborrow = Some(place.local);
        }
    });
    reborrow
}

/// Whether `local` is used exactly once, moved into a call whose result
/// cannot hold a reference.
pub(super) fn consumed_by_one_call(dump: &CrateDump, body: &Body, local: LocalId) -> bool {
    let mut uses = 0usize;
    let mut ok = false;
    let mentions = |p: &Place| {
        p.local == local
            || p.projection
                .iter()
                .any(|q| matches!(q, kmir::Projection::Index(l) if *l == local))
    };
    let operand_mentions = |o: &kmir::Operand| matches!(o, kmir::Operand::Copy(p) | kmir::Operand::Move(p) if mentions(p));
    for block in &body.blocks {
        for s in &block.statements {
            match &s.kind {
                StatementKind::Assign { place, rvalue } => {
                    if place.local == local && !place.projection.is_empty() {
                        uses += 1;
                    }
                    uses += rvalue_mentions(rvalue, &mentions);
                }
                StatementKind::SetDiscriminant { place, .. } => {
                    uses += usize::from(mentions(place))
                }
                StatementKind::Intrinsic { operands, .. } => {
                    uses += operands.iter().filter(|o| operand_mentions(o)).count()
                }
                StatementKind::StorageLive(_) | StatementKind::StorageDead(_) => {}
            }
        }
        match &block.terminator.kind {
            TerminatorKind::Call {
                args, destination, ..
            } => {
                for a in args {
                    if operand_mentions(a) {
                        uses += 1;
                        // A result that holds a reference or pointer may keep
                        // the borrow alive. (An ADT holding one only behind
                        // a lifetime parameter, like `IterMut<'_, T>`, is not
                        // seen: lifetimes are erased. A documented
                        // approximation.)
                        let captures = body
                            .local(destination.local)
                            .and_then(|l| dump.ty(l.ty))
                            .is_none_or(|t| {
                                ["&", "*", "fn(", "dyn "]
                                    .iter()
                                    .any(|m| t.display.contains(m))
                            });
                        ok = matches!(a, kmir::Operand::Move(p) if p.local == local && p.projection.is_empty())
                            && destination.projection.is_empty()
                            && !captures;
                    }
                }
                if let Callee::Indirect { operand, .. } = &callee_of(&block.terminator.kind)
                    && operand_mentions(operand)
                {
                    uses += 1;
                }
            }
            TerminatorKind::SwitchInt { discr, .. } => uses += usize::from(operand_mentions(discr)),
            TerminatorKind::Assert { cond, .. } => uses += usize::from(operand_mentions(cond)),
            TerminatorKind::Drop { place, .. } => uses += usize::from(mentions(place)),
            _ => {}
        }
    }
    uses == 1 && ok
}

pub(super) fn callee_of(t: &TerminatorKind) -> Callee {
    match t {
        TerminatorKind::Call { callee, .. } => callee.clone(),
        _ => Callee::Intrinsic {
            name: kmir::Name::default(),
        },
    }
}

pub(super) fn rvalue_mentions(r: &Rvalue, mentions: &dyn Fn(&Place) -> bool) -> usize {
    let op = |o: &kmir::Operand| {
        usize::from(matches!(o, kmir::Operand::Copy(p) | kmir::Operand::Move(p) if mentions(p)))
    };
    match r {
        Rvalue::Use(o)
        | Rvalue::UnaryOp { operand: o, .. }
        | Rvalue::Cast { operand: o, .. }
        | Rvalue::Repeat { operand: o, .. } => op(o),
        Rvalue::Ref { place, .. }
        | Rvalue::AddressOf { place, .. }
        | Rvalue::Discriminant(place)
        | Rvalue::Len(place)
        | Rvalue::CopyForDeref(place) => usize::from(mentions(place)),
        Rvalue::Aggregate { operands, .. } => operands.iter().map(op).sum(),
        Rvalue::BinaryOp { lhs, rhs, .. } | Rvalue::CheckedBinaryOp { lhs, rhs, .. } => {
            op(lhs) + op(rhs)
        }
        Rvalue::ThreadLocalRef { .. } => 0,
    }
}

/// The locals that receive the result of a last-reference test, directly
/// from the call or through plain copies.
pub(super) fn last_reference_tests(
    body: &Body,
    sites: &HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
) -> Vec<LocalId> {
    let mut tests: Vec<LocalId> = Vec::new();
    for (block, b) in body.blocks.iter().enumerate() {
        let TerminatorKind::Call { destination, .. } = &b.terminator.kind else {
            continue;
        };
        if !destination.projection.is_empty() {
            continue;
        }
        let is_test = sites.get(&(block as BlockId)).is_some_and(|ts| {
            ts.iter()
                .any(|t| summary_of.get(t.callee).last_reference_test)
        });
        if is_test && !tests.contains(&destination.local) {
            tests.push(destination.local);
        }
    }
    if tests.is_empty() {
        return tests;
    }
    // Only a local that holds nothing else: one assigned elsewhere too could
    // hold another value where it is tested.
    let mut writes: HashMap<LocalId, usize> = HashMap::new();
    kmir::visit::for_each_place(body, |place, context, _| {
        if matches!(
            context,
            PlaceContext::Assign | PlaceContext::CallDestination
        ) && place.projection.is_empty()
        {
            *writes.entry(place.local).or_default() += 1;
        }
    });
    let once = |l: &LocalId| writes.get(l).copied().unwrap_or(0) == 1;
    tests.retain(once);
    // `let is_zero = …; if is_zero` may copy the result first.
    loop {
        let before = tests.len();
        kmir::visit::for_each_assign(body, |place, rvalue, _| {
            if let Rvalue::Use(kmir::Operand::Copy(src) | kmir::Operand::Move(src)) = rvalue
                && place.projection.is_empty()
                && src.projection.is_empty()
                && tests.contains(&src.local)
                && !tests.contains(&place.local)
                && once(&place.local)
            {
                tests.push(place.local);
            }
        });
        if tests.len() == before {
            return tests;
        }
    }
}

/// Calls through a fn pointer or a `dyn` receiver whose value the body
/// shows reach only what it may hold, not every function of that signature
/// whose address the program takes, nor every implementation of the trait
/// method: a fn pointer from a local assigned once, as a whole, from a
/// function item, a constant or another such local
/// (`context::fn_pointer_source`); a receiver built by an unsizing cast with
/// a known vtable (`context::vtable_source`), whose slot names the method.
/// Targets are narrowed only to ones the call graph has at that site, so
/// that their summaries are final when the body is analysed; where none is
/// left the site keeps the whole-program set.
pub(super) fn narrow_known_targets(
    program: &Program,
    dump: &CrateDump,
    body: &Body,
    sites: &mut HashMap<BlockId, Vec<Target>>,
) {
    for (block, b) in body.blocks.iter().enumerate() {
        let TerminatorKind::Call { callee, args, .. } = &b.terminator.kind else {
            continue;
        };
        let (kind, known): (EdgeKind, Vec<FnId>) = match callee {
            Callee::Indirect { operand, .. } => {
                let Some(symbols) = crate::context::fn_pointer_source(body, operand, 0) else {
                    continue;
                };
                let known = symbols.iter().filter_map(|s| program.lookup(s)).collect();
                (EdgeKind::Indirect, known)
            }
            Callee::Virtual { slot, .. } => {
                let Some(vtable) = args
                    .first()
                    .and_then(|r| crate::context::vtable_source(body, r, 0))
                else {
                    continue;
                };
                let method = dump
                    .vtables
                    .get(vtable as usize)
                    .and_then(|v| v.entries.get(*slot as usize));
                let Some(kmir::VtableEntry::Method { symbol, .. }) = method else {
                    continue;
                };
                (
                    EdgeKind::Virtual,
                    program.lookup(symbol).into_iter().collect(),
                )
            }
            _ => continue,
        };
        let Some(targets) = sites.get_mut(&(block as BlockId)) else {
            continue;
        };
        let narrowed: Vec<Target> = targets
            .iter()
            .copied()
            .filter(|t| t.kind != kind || known.contains(&t.callee))
            .collect();
        if narrowed.iter().any(|t| t.kind == kind) {
            *targets = narrowed;
        }
    }
}

/// The `&mut` arguments whose pointee only this body can reach, call by
/// call. Rust's aliasing rules keep every other function away from the
/// memory behind a `&mut` argument unless this body hands it a pointer
/// derived from it: a call that is given none leaves what is known about
/// that memory alone (`mem::take` calling `Default::default` before it
/// reads `*dest`; `self.cur.take()?` followed by `self.cur = Some(t)`, with
/// `Try::branch` called in between).
///
/// For each `&mut` argument the pre-scan collects, flow-insensitively, the
/// locals that may hold a pointer derived from it: reborrows of places
/// behind it, copies of the reference, and whatever is built or returned
/// from those (an aggregate, a cast, a call's result) when its type can
/// hold a pointer. An argument gives up its privacy everywhere when such a
/// pointer becomes a raw pointer or is written through another pointer:
/// from there it may reach any function.
#[derive(Debug, Default)]
pub struct PrivatePointees {
    /// A `&mut` argument and the locals that may hold a pointer derived
    /// from it.
    args: Vec<(LocalId, Vec<LocalId>)>,
    /// Derived locals that are a borrow of a place behind an argument moved
    /// straight into one call whose result holds no reference
    /// (`(*self).slot.take()`): that call is lent only the place borrowed,
    /// and what is known about the rest survives it (the caller forgets
    /// what is under the lent place).
    lent: Vec<LocalId>,
    /// By block: the arguments private across its call or drop (what
    /// `private_at` says of its terminator), computed once per body.
    at: HashMap<BlockId, Vec<LocalId>>,
}

impl PrivatePointees {
    /// The arguments whose pointee the call or drop ending `block` cannot
    /// reach.
    pub fn at(&self, block: BlockId) -> &[LocalId] {
        self.at.get(&block).map_or(&[], Vec::as_slice)
    }

    /// The locals that may hold a pointer derived from `&mut` argument
    /// `arg` (empty for any other local).
    pub fn derived(&self, arg: LocalId) -> &[LocalId] {
        self.args
            .iter()
            .find(|(a, _)| *a == arg)
            .map_or(&[], |(_, d)| d.as_slice())
    }

    /// The arguments whose pointee a call or drop cannot reach: none of its
    /// operands holds a pointer derived from them.
    fn private_at(
        &self,
        dump: &CrateDump,
        body: &Body,
        terminator: &TerminatorKind,
    ) -> Vec<LocalId> {
        let mut reads = Vec::new();
        match terminator {
            TerminatorKind::Call { args, callee, .. } => {
                // A shared borrow of memory without interior mutability
                // lets the callee read it, not change it.
                for a in args.iter().filter(|a| !read_only_operand(dump, body, a)) {
                    kmir::visit::operand_locals(a, &mut reads);
                }
                if let kmir::Callee::Indirect { operand: o, .. } = callee {
                    kmir::visit::operand_locals(o, &mut reads);
                }
            }
            // Only the drop glue reaches a place dropped behind the
            // argument (the caller forgets what is under that place).
            TerminatorKind::Drop { place, .. } => {
                let behind = place.projection.first() == Some(&kmir::Projection::Deref);
                if !behind {
                    reads.push(place.local);
                }
                reads.extend(place.projection.iter().filter_map(|q| match q {
                    kmir::Projection::Index(l) => Some(*l),
                    _ => None,
                }));
            }
            _ => return Vec::new(),
        }
        reads.retain(|r| !self.lent.contains(r));
        self.args
            .iter()
            .filter(|(arg, derived)| {
                !reads
                    .iter()
                    .any(|r| r == arg || derived.binary_search(r).is_ok())
            })
            .map(|(arg, _)| *arg)
            .collect()
    }
}

pub(super) fn private_pointees(dump: &CrateDump, body: &Body) -> PrivatePointees {
    let mut out = PrivatePointees::default();
    for arg in 1..=body.arg_count {
        let is_mut_ref = body
            .local(arg)
            .and_then(|d| dump.ty(d.ty))
            .is_some_and(|t| matches!(t.kind, kmir::TyKind::Ref { mutable: true, .. }));
        if !is_mut_ref {
            continue;
        }
        if let Some(mut derived) = derived_from(dump, body, arg) {
            derived.sort_unstable();
            derived.dedup();
            out.args.push((arg, derived));
        }
    }
    // Borrows of places behind an argument that end at one call.
    kmir::visit::for_each_assign(body, |place, rvalue, _| {
        let Rvalue::Ref { place: p, .. } = rvalue else {
            return;
        };
        // Behind the argument, or behind a `&mut` derived from it (an
        // element `iter_mut().find(..)` returned, a variant's payload
        // borrowed out of it): a unique pointer, so the call is lent only
        // the place borrowed.
        let unique = |l: LocalId| {
            body.local(l)
                .and_then(|d| dump.ty(d.ty))
                .is_some_and(|t| matches!(t.kind, kmir::TyKind::Ref { mutable: true, .. }))
        };
        let behind_arg = p.projection.first() == Some(&kmir::Projection::Deref)
            && out.args.iter().any(|(a, derived)| {
                *a == p.local || (derived.binary_search(&p.local).is_ok() && unique(p.local))
            });
        if !behind_arg || !place.projection.is_empty() {
            return;
        }
        let holder = place.local;
        if consumed_by_one_call(dump, body, holder) {
            out.lent.push(holder);
        } else if let Some(reborrow) = reborrowed_once(body, holder)
            && consumed_by_one_call(dump, body, reborrow)
        {
            out.lent.extend([holder, reborrow]);
        }
    });
    if !out.args.is_empty() {
        for (block, b) in body.blocks.iter().enumerate() {
            let private = out.private_at(dump, body, &b.terminator.kind);
            if !private.is_empty() {
                out.at.insert(block as BlockId, private);
            }
        }
    }
    out
}

/// Whether passing `operand` lends only read access: it is a shared
/// reference (`&T`) to memory that has no interior mutability
/// ([`CrateDump::may_mutate_behind_shared`]), so the callee cannot change
/// what it points to.
pub(super) fn read_only_operand(dump: &CrateDump, body: &Body, operand: &kmir::Operand) -> bool {
    let (kmir::Operand::Copy(p) | kmir::Operand::Move(p)) = operand else {
        return false;
    };
    dump.place_ty(body, p)
        .and_then(|t| dump.ty(t))
        .is_some_and(|t| match t.kind {
            kmir::TyKind::Ref {
                mutable: false,
                pointee,
            } => !dump.may_mutate_behind_shared(pointee),
            _ => false,
        })
}

/// The locals that may hold a pointer derived from the `&mut` argument
/// `arg`, or `None` when one may escape where no call-by-call check can
/// follow it (a raw pointer, a write through another pointer).
pub(super) fn derived_from(dump: &CrateDump, body: &Body, arg: LocalId) -> Option<Vec<LocalId>> {
    // Whether the type of `local` shows one of `markers` (an unknown type
    // counts as one that may).
    let shows = |local: LocalId, markers: &[&str]| {
        body.local(local)
            .and_then(|d| dump.ty(d.ty))
            .is_none_or(|t| markers.iter().any(|m| t.display.contains(m)))
    };
    // A value built from a derived pointer may hold it: a reference, a raw
    // pointer, `NonNull`, anything with a lifetime, a closure capturing it.
    let may_hold_pointer = |local: LocalId| shows(local, &["&", "*", "'", "NonNull", "closure"]);
    // A call's result can point into the argument's pointee only as a
    // reference, a raw pointer, or a `dyn`/`fn` value holding one; a value
    // moved out of it (`take()` of a guard) points where it pointed before.
    // (An ADT holding a borrow only behind a lifetime parameter is not
    // seen: lifetimes are erased; the approximation `escaped_locals`
    // makes too.)
    let returns_pointer = |local: LocalId| shows(local, &["&", "*", "fn(", "dyn ", "NonNull"]);
    // An ADT with a lifetime (`IterMut<'_, T>` from `iter_mut`) may borrow
    // from what the call was given, unless it is the very type behind a
    // `&mut` the call was given: then it is a value moved out of there
    // (`Option::take` of a guard), which points where it pointed before.
    let ty_display = |local: LocalId| {
        body.local(local)
            .and_then(|d| dump.ty(d.ty))
            .map(|t| t.display.as_str())
    };
    let borrows_from = |dest: LocalId, args: &[kmir::Operand]| {
        shows(dest, &["'"])
            && !args.iter().any(|a| {
                let (kmir::Operand::Copy(p) | kmir::Operand::Move(p)) = a else {
                    return false;
                };
                dump.place_ty(body, p)
                    .and_then(|t| dump.pointee(t))
                    .and_then(|t| dump.ty(t))
                    .is_some_and(|t| Some(t.display.as_str()) == ty_display(dest))
            })
    };
    let is_raw = |local: LocalId| {
        body.local(local)
            .and_then(|d| dump.ty(d.ty))
            .is_none_or(|t| matches!(t.kind, kmir::TyKind::RawPtr { .. }))
    };
    let mut derived: Vec<LocalId> = Vec::new();
    let tainted = |l: LocalId, derived: &[LocalId]| l == arg || derived.contains(&l);
    loop {
        let before = derived.len();
        for b in &body.blocks {
            for st in &b.statements {
                let kmir::StatementKind::Assign { place, rvalue } = &st.kind else {
                    continue;
                };
                let mut reads = Vec::new();
                collect_locals(rvalue, &mut reads);
                if !reads.iter().any(|&r| tainted(r, &derived)) {
                    continue;
                }
                // A pointer derived from it is stored behind another
                // pointer, or turned into a raw pointer (by `&raw`, or a
                // cast): it may reach anything from there.
                if place.projection.contains(&kmir::Projection::Deref)
                    || matches!(&**rvalue, Rvalue::AddressOf { .. })
                    || (is_raw(place.local) && !matches!(&**rvalue, Rvalue::Ref { .. }))
                {
                    return None;
                }
                let pointer =
                    matches!(&**rvalue, Rvalue::Ref { .. }) || may_hold_pointer(place.local);
                if pointer && !tainted(place.local, &derived) {
                    derived.push(place.local);
                }
            }
            if let TerminatorKind::Call {
                args, destination, ..
            } = &b.terminator.kind
            {
                let mut reads = Vec::new();
                for a in args {
                    kmir::visit::operand_locals(a, &mut reads);
                }
                if reads.iter().any(|&r| tainted(r, &derived)) {
                    if destination.projection.contains(&kmir::Projection::Deref) {
                        return None;
                    }
                    if (returns_pointer(destination.local) || borrows_from(destination.local, args))
                        && !tainted(destination.local, &derived)
                    {
                        derived.push(destination.local);
                    }
                }
            }
        }
        if derived.len() == before {
            return Some(derived);
        }
    }
}

/// Whether a branch of the body depends on what the caller passed: a
/// `switchInt` on a value computed (through any chain of assignments) from
/// an argument. Such a body's lock effects may differ per call site
/// (`if !caller_holds { lock }`), so call sites that pass constants get it
/// analysed again for them.
pub(super) fn branches_on_args(body: &Body) -> bool {
    let mut tainted: Vec<LocalId> = (1..=body.arg_count).collect();
    loop {
        let before = tainted.len();
        kmir::visit::for_each_assign(body, |place, rvalue, _| {
            if tainted.contains(&place.local) {
                return;
            }
            let mut reads = Vec::new();
            collect_locals(rvalue, &mut reads);
            if reads.iter().any(|l| tainted.contains(l)) {
                tainted.push(place.local);
            }
        });
        if tainted.len() == before {
            break;
        }
    }
    body.blocks.iter().any(|b| match &b.terminator.kind {
        TerminatorKind::SwitchInt {
            discr: kmir::Operand::Copy(p) | kmir::Operand::Move(p),
            ..
        } => tainted.contains(&p.local),
        _ => false,
    })
}

/// The locals an rvalue reads.
fn collect_locals(rvalue: &Rvalue, out: &mut Vec<LocalId>) {
    struct Reads<'o>(&'o mut Vec<LocalId>);
    impl kmir::visit::Visitor for Reads<'_> {
        fn visit_place(&mut self, place: &Place, _: PlaceContext, _: kmir::visit::Location) {
            self.0.push(place.local);
        }
    }
    kmir::visit::Visitor::visit_rvalue(
        &mut Reads(out),
        rvalue,
        kmir::visit::Location {
            block: 0,
            statement: 0,
        },
    );
}

/// The drop flags of `body`: `bool` locals (not arguments) that are only
/// ever assigned constants and never borrowed, as drop elaboration makes
/// them (`_21 = const true; … switchInt(copy _21)` before a conditional
/// drop). A user's `let mut done = false; … done = true;` has the same
/// shape and is kept apart the same way, which is as precise and as
/// bounded (`domains::MAX_SPLIT`).
pub(super) fn drop_flags(dump: &CrateDump, body: &Body) -> Vec<LocalId> {
    let n = body.locals.len() as LocalId;
    let mut fit: Vec<bool> = (0..n)
        .map(|l| {
            l > body.arg_count
                && body
                    .local(l)
                    .and_then(|d| dump.ty(d.ty))
                    .is_some_and(|t| matches!(t.kind, kmir::TyKind::Bool))
        })
        .collect();
    let mut assigned = vec![false; n as usize];
    kmir::visit::for_each_place(body, |place, ctx, location| {
        let Some(f) = fit.get_mut(place.local as usize) else {
            return;
        };
        use kmir::visit::PlaceContext as C;
        match ctx {
            C::Assign if place.projection.is_empty() => {
                let constant = body
                    .blocks
                    .get(location.block as usize)
                    .and_then(|b| b.statements.get(location.statement))
                    .is_some_and(|st| {
                        matches!(
                            &st.kind,
                            kmir::StatementKind::Assign { rvalue, .. }
                                if matches!(&**rvalue, Rvalue::Use(kmir::Operand::Constant(_)))
                        )
                    });
                *f &= constant;
                assigned[place.local as usize] = true;
            }
            C::Read { .. } | C::Inspect => {}
            _ => *f = false,
        }
    });
    (0..n)
        .filter(|&l| fit[l as usize] && assigned[l as usize])
        .collect()
}
