//! Drops of an iterator its `next` has just found empty.
//!
//! A `for` loop over a draining iterator (`for e in v.drain_all()`) drops
//! the iterator where the loop ends, with whatever lock the loop runs under
//! still held. The iterator's drop destroys the elements it still holds,
//! and one of them may be a last reference; but the loop ends only when
//! `next` returned `None`. For an iterator whose `next` returns `None`
//! only once no element is left, and whose drop destroys only the elements
//! left (the spec's `empty_after_none`: the kernel's `DrainAll`), the drop
//! on that way destroys nothing, so it releases no last reference.
//!
//! The shape is recognised in the body alone: a call of such a `next` on
//! `&mut it`, a switch on the discriminant of what it returned, and a drop
//! of `it` that every way from the entry reaches only through that
//! switch's `None` arm, with nothing touching `it` in between. `it` is
//! borrowed only to be lent to such `next` calls, so no pointer to it
//! outlives them and nothing else can put elements back.

use std::collections::HashSet;

use kmir::visit::{Definition, PlaceContext, for_each_place, single_definitions};
use kmir::{BlockId, Body, LocalId, Operand, Rvalue, StatementKind, TerminatorKind};

use super::origins::dominates;
use super::writes::predecessors;

/// A call of a `next` the spec marks `empty_after_none`, on `&mut it`.
struct NextCall {
    /// The block the call ends.
    block: BlockId,
    /// The block it returns to.
    returns_to: BlockId,
    /// The iterator local.
    it: LocalId,
    /// The `&mut` locals lending it (reborrows of one another).
    lenders: Vec<LocalId>,
    /// The local the call returns into.
    result: LocalId,
}

/// The blocks of `body` whose drop drops an iterator its `next` found
/// empty on every way to it. `empty_after_none(block)` says whether the
/// call ending `block` is to a `next` the spec marks `empty_after_none`.
pub(crate) fn exhausted_drops(
    body: &Body,
    empty_after_none: impl Fn(BlockId) -> bool,
) -> Vec<BlockId> {
    let defs = single_definitions(body);
    let predecessors = predecessors(body);
    let n = body.blocks.len();
    let mut calls: Vec<NextCall> = Vec::new();
    for (b, block) in body.blocks.iter().enumerate() {
        let TerminatorKind::Call {
            args,
            destination,
            target: Some(target),
            ..
        } = &block.terminator.kind
        else {
            continue;
        };
        // The result holds what this call returned, and nothing else.
        if !matches!(defs.get(destination.local as usize), Some(Some(Definition::Call(c))) if *c as usize == b)
        {
            continue;
        }
        let [Operand::Copy(p) | Operand::Move(p)] = args.as_slice() else {
            continue;
        };
        if !p.projection.is_empty()
            || !destination.projection.is_empty()
            || !empty_after_none(b as BlockId)
        {
            continue;
        }
        // `&mut it`, through reborrows (`_43 = &mut (*_44); _44 = &mut it`).
        let mut chain = vec![p.local];
        let it = loop {
            let Some(&last) = chain.last() else {
                break None;
            };
            let Some(Some(Definition::Statement(Rvalue::Ref {
                mutable: true,
                place,
            }))) = defs.get(last as usize)
            else {
                break None;
            };
            match &place.projection[..] {
                [] => break Some(place.local),
                [kmir::Projection::Deref] if chain.len() < 8 => chain.push(place.local),
                _ => break None,
            }
        };
        // The block it returns to is entered from the call alone: the
        // switch below reads what this call just returned.
        let entered_from_call = predecessors
            .get(*target as usize)
            .is_some_and(|p| p.iter().all(|&o| o as usize == b));
        if let Some(it) = it
            && entered_from_call
        {
            calls.push(NextCall {
                block: b as BlockId,
                returns_to: *target,
                it,
                lenders: chain,
                result: destination.local,
            });
        }
    }
    if calls.is_empty() {
        return Vec::new();
    }
    let lenders: HashSet<LocalId> = calls
        .iter()
        .flat_map(|c| c.lenders.iter().copied())
        .collect();
    let next_blocks: HashSet<BlockId> = calls.iter().map(|c| c.block).collect();
    // Where each local is mentioned (statements, and terminators other than
    // drops), and the locals a borrow of each iterator is stored in.
    let mut mentioned: Vec<HashSet<LocalId>> = vec![HashSet::new(); n];
    let mut borrowed_into_other = HashSet::new();
    let mut lender_uses_elsewhere = HashSet::new();
    for_each_place(body, |place, context, at| {
        let terminator = body
            .blocks
            .get(at.block as usize)
            .is_some_and(|b| at.statement >= b.statements.len());
        if context == PlaceContext::Drop && terminator {
            return;
        }
        if let Some(m) = mentioned.get_mut(at.block as usize) {
            m.insert(place.local);
        }
        // A lender used anywhere but as the argument of a `next` call, in
        // its own definition, or reborrowed into another lender.
        if lenders.contains(&place.local) && !(terminator && next_blocks.contains(&at.block)) {
            let is_its_definition = context == PlaceContext::Assign && place.projection.is_empty();
            let reborrowed = context == (PlaceContext::Borrow { mutable: true })
                && place.projection[..] == [kmir::Projection::Deref]
                && body
                    .blocks
                    .get(at.block as usize)
                    .and_then(|b| b.statements.get(at.statement))
                    .is_some_and(|st| {
                        matches!(&st.kind, StatementKind::Assign { place: to, .. }
                            if to.projection.is_empty() && lenders.contains(&to.local))
                    });
            if !is_its_definition && !reborrowed {
                lender_uses_elsewhere.insert(place.local);
            }
        }
    });
    for block in &body.blocks {
        for s in &block.statements {
            if let StatementKind::Assign { place, rvalue } = &s.kind
                && let Rvalue::Ref { place: r, .. } | Rvalue::AddressOf { place: r, .. } = &**rvalue
                && r.projection.first() != Some(&kmir::Projection::Deref)
                && !lenders.contains(&place.local)
            {
                borrowed_into_other.insert(r.local);
            }
        }
    }
    let mut out = Vec::new();
    for call in &calls {
        let it = call.it;
        if borrowed_into_other.contains(&it)
            || call
                .lenders
                .iter()
                .any(|l| lender_uses_elsewhere.contains(l))
        {
            continue;
        }
        let mut watched = call.lenders.clone();
        watched.push(it);
        for (switch, none) in none_arms(body, &defs, &predecessors, call.result) {
            // Nothing touches the iterator between the call and the switch.
            if !straight_after(
                body,
                &predecessors,
                &mentioned,
                call.returns_to,
                switch,
                &watched,
            ) {
                continue;
            }
            for (d, block) in body.blocks.iter().enumerate() {
                let d = d as BlockId;
                let TerminatorKind::Drop { place, .. } = &block.terminator.kind else {
                    continue;
                };
                if place.local != it
                    || !place.projection.is_empty()
                    || !dominates(body, none, d)
                    || touched_between(body, &predecessors, &mentioned, none, d, &watched)
                {
                    continue;
                }
                out.push(d);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether the switch ending block `switch` runs straight after the call
/// returning to `returns_to`: a chain of `goto`s, each block entered only
/// from the one before, none of which mentions a `watched` local.
fn straight_after(
    body: &Body,
    preds: &[Vec<BlockId>],
    mentioned: &[HashSet<LocalId>],
    returns_to: BlockId,
    switch: BlockId,
    watched: &[LocalId],
) -> bool {
    let mut b = returns_to;
    for _ in 0..body.blocks.len() {
        let touched = mentioned
            .get(b as usize)
            .is_none_or(|m| watched.iter().any(|l| m.contains(l)));
        if touched {
            return false;
        }
        if b == switch {
            return true;
        }
        match body.blocks.get(b as usize).map(|blk| &blk.terminator.kind) {
            Some(TerminatorKind::Goto { target })
                if preds.get(*target as usize).is_some_and(|p| p[..] == [b]) =>
            {
                b = *target
            }
            _ => return false,
        }
    }
    false
}

/// The switches on the discriminant of `result`, each with the block
/// entered only through its `None` arm (value 0).
fn none_arms(
    body: &Body,
    defs: &[Option<Definition<'_>>],
    preds: &[Vec<BlockId>],
    result: LocalId,
) -> Vec<(BlockId, BlockId)> {
    let mut out = Vec::new();
    for (s, block) in body.blocks.iter().enumerate() {
        let TerminatorKind::SwitchInt {
            discr: Operand::Copy(d) | Operand::Move(d),
            targets,
            otherwise,
        } = &block.terminator.kind
        else {
            continue;
        };
        let Some(Some(Definition::Statement(Rvalue::Discriminant(of)))) =
            defs.get(d.local as usize)
        else {
            continue;
        };
        if !d.projection.is_empty() || of.local != result || !of.projection.is_empty() {
            continue;
        }
        // `None` is 0: an arm of its own, or the `otherwise` of a switch
        // that names only `Some` (1), the one other variant of `Option`,
        // which `Iterator::next` returns.
        let none = match targets.iter().find(|t| t.value == 0) {
            Some(t) => t.target,
            None if targets.iter().all(|t| t.value == 1) && !targets.is_empty() => *otherwise,
            None => continue,
        };
        let entries =
            targets.iter().filter(|t| t.target == none).count() + usize::from(*otherwise == none);
        let only_from_here = preds
            .get(none as usize)
            .is_some_and(|p| p.iter().all(|&b| b == s as BlockId));
        if entries == 1 && only_from_here {
            out.push((s as BlockId, none));
        }
    }
    out
}

/// Whether a block on a way from the start of `from` to the drop ending
/// `to` mentions one of `locals` (the drop itself aside).
fn touched_between(
    body: &Body,
    predecessors: &[Vec<BlockId>],
    mentioned: &[HashSet<LocalId>],
    from: BlockId,
    to: BlockId,
    locals: &[LocalId],
) -> bool {
    // Forward from `from`, and backward from `to`: the blocks on a way
    // between them.
    let mut after = vec![false; body.blocks.len()];
    let mut stack = vec![from];
    while let Some(b) = stack.pop() {
        match after.get_mut(b as usize) {
            Some(s) if !*s => *s = true,
            _ => continue,
        }
        if b != to
            && let Some(blk) = body.blocks.get(b as usize)
        {
            stack.extend(blk.terminator.kind.successors());
        }
    }
    let mut before = vec![false; body.blocks.len()];
    let mut stack = vec![to];
    while let Some(b) = stack.pop() {
        match before.get_mut(b as usize) {
            Some(s) if !*s => *s = true,
            _ => continue,
        }
        if b != from {
            stack.extend(predecessors.get(b as usize).into_iter().flatten().copied());
        }
    }
    (0..body.blocks.len())
        .any(|b| after[b] && before[b] && locals.iter().any(|l| mentioned[b].contains(l)))
}
