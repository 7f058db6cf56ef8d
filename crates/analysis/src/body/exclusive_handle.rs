//! A clone of a field of an object kept alive by a handle in an exclusive
//! field: the release of the clone is not the last.
//!
//! Binder's `request_death` (process.rs:1307-1320), under the `node_refs`
//! lock, with `info: &mut ListArc<NodeRefInfo>` from `refs.by_handle`:
//!
//! ```text
//! let owner = info.node_ref2().node.owner.clone();   // Arc<Process>
//! let mut owner_inner = owner.inner.lock();
//! … *info.death() = …; info.node_ref().node.add_death(…) …
//! }                                                   // owner dropped
//! ```
//!
//! `owner` is a sharing clone of the `owner` field of the `Node` that the
//! `DArc` in `info`'s `node_ref` field counts. The release is not the last
//! while that `DArc` still holds its count and the `Node` its field:
//!
//! * the `Node`'s field lies outside any `UnsafeCell` of an object reached
//!   through a shared handle, so nothing changes it while the node lives;
//! * the `DArc` lies in an exclusive field (`ListArcField`: only the holder
//!   of the `ListArc` reaches it, the spec's `exclusive_to_handle`), which
//!   nothing between the clone and the release writes: no store, drop or
//!   call reaches that field (a getter of another field, or a pointer that a
//!   dereference of a handle inside it took into another object, does not);
//! * the `ListArc` itself stays where it is: it lies in a held lock's data
//!   that nothing writes between the clone and the release, and the guard
//!   is neither released nor moved;
//! * no other way reaches the field: a call given a pointer into the
//!   lock's data (other than one derived from `info`) writes nothing through
//!   it, since a helper could find the same `ListArc` there and write the
//!   field, which the write scan counts as a write of the object the
//!   handle counts, not of the data.
//!
//! Trust assumption, as for `body::accessors`: the contract of what the
//! spec marks `exclusive_to_handle` holds (only the `ListArc`'s holder
//! reaches the field), and what the spec marks `points_into_object` points
//! into the object the handle counts.
//!
//! All of it is read off the body (`backed_drops`); the drops found join
//! those whose last-reference part does not apply
//! (`BodyAnalysis::not_last`), like the drops of an exhausted iterator.

use std::collections::HashMap;

use kmir::visit::{Definition, for_each_place, single_definitions};
use kmir::{
    BlockId, CrateDump, LocalId, Operand, Place, Projection, Rvalue, StatementKind, TerminatorKind,
    TyKind,
};

use super::BodyInputs;
use super::chain::{call_of, operand_local, source};
use super::writes::{Root, predecessors};
use crate::summary::{ExclusiveField, Summary};

/// Where a pointer derived from the root `&mut` handle local may point.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Reach {
    /// Anywhere in the handle, the object it counts, or what those reach.
    Whole,
    /// Into the contents of one exclusive field (`None`: a getter whose
    /// field its body does not show).
    Field(Option<ExclusiveField>),
    /// Into another object, through a counted handle's dereference.
    Outside,
}

/// The drops of the body whose release a handle in an exclusive field
/// keeps alive (see the module doc). `guard_kills` gives, for a guard
/// local, the blocks that may release or move it.
pub(crate) fn backed_drops(
    b: &BodyInputs<'_>,
    guard_kills: impl Fn(u32) -> Option<Vec<BlockId>>,
) -> Vec<BlockId> {
    let body = b.body;
    let callee_of = |block: BlockId| b.only_callee(block);
    // Quick exit: no exclusive getter with a known field is called.
    let any_getter = b.sites.values().flatten().any(|t| {
        let s = b.summary_of.get(t.callee);
        s.ret_exclusive && s.exclusive_field.is_some()
    });
    if !any_getter || !b.writes.settled() {
        return Vec::new();
    }
    let defs = single_definitions(body);
    let mut out = Vec::new();
    for (di, block) in body.blocks.iter().enumerate() {
        let d = di as BlockId;
        // A drop of the local, or a call whose last-reference expectation
        // is about the one local it is given (`mem::drop(owner)`).
        let released = match &block.terminator.kind {
            TerminatorKind::Drop { place, .. } => place,
            TerminatorKind::Call { args, .. } => match args.as_slice() {
                [Operand::Move(p)]
                    if callee_of(d).is_some_and(|s| s.last_from.as_deref() == Some(&[0])) =>
                {
                    p
                }
                _ => continue,
            },
            _ => continue,
        };
        if !released.projection.is_empty() {
            continue;
        }
        // Through moves into a temporary (`drop(owner)` moves `owner` into
        // the argument's).
        let x = source(&defs, released.local);
        if let Some(chain) = clone_chain(b, &defs, &callee_of, x)
            && kept(b, &defs, &callee_of, &chain, d, &guard_kills)
        {
            out.push(d);
        }
    }
    out
}

/// How the released local came to be.
struct Chain {
    /// The block whose call made the clone.
    clone: BlockId,
    /// The `&mut` (or `&`) local holding the root handle.
    root: LocalId,
    /// The exclusive field holding the handle to the object cloned from.
    field: ExclusiveField,
}

/// A call that returns a reference into the object the counted handle its
/// argument points to refers to (the spec's `points_into_object`).
fn into_object(s: &Summary) -> bool {
    s.ret_points.as_ref().is_some_and(|r| {
        !r.is_empty()
            && r.iter()
                .all(|(k, p)| *k == 0 && p.through_handle() && p.steps().is_empty())
    })
}

/// A call that writes nothing and returns a pointer into its argument's
/// own memory (`DTRWrap::deref`: `&self.wrapped`).
fn within(s: &Summary) -> bool {
    s.writes.as_ref().is_some_and(Vec::is_empty)
        && !s.ret_fresh
        && s.ret_points.as_ref().is_some_and(|r| {
            !r.is_empty()
                && r.iter().all(|(k, p)| {
                    *k == 0 && !p.through_handle() && !p.through_pointer() && !p.interior()
                })
        })
}

/// The released local `x` is a sharing clone of a field outside any cell
/// of an object that a handle counts, the handle lying in an exclusive
/// field that a getter with a known field returned given a root handle
/// local.
fn clone_chain<'a>(
    b: &BodyInputs<'_>,
    defs: &[Option<Definition<'_>>],
    callee_of: &impl Fn(BlockId) -> Option<&'a Summary>,
    x: LocalId,
) -> Option<Chain> {
    let body = b.body;
    let (clone, args) = call_of(body, defs, x)?;
    if !callee_of(clone)?.sharing_clone {
        return None;
    }
    // `clone(&(*o).f…)`: the cloned place, below an object pointer.
    let arg = source(defs, operand_local(args.first()?)?);
    let Some(Definition::Statement(Rvalue::Ref { place, .. })) =
        defs.get(arg as usize).copied().flatten()
    else {
        return None;
    };
    let [Projection::Deref, fields @ ..] = &*place.projection else {
        return None;
    };
    if fields.is_empty() || !fields.iter().all(|p| matches!(p, Projection::Field { .. })) {
        return None;
    }
    // Outside any cell: no type on the way (the object's, each field's
    // owner) is an `UnsafeCell`.
    let mut ty = b.dump.pointee(body.local(place.local)?.ty)?;
    for p in fields {
        if is_cell(b.dump, ty) {
            return None;
        }
        if let Projection::Field { ty: t, .. } = p {
            ty = *t;
        }
    }
    // The object: through pointers into one's own memory, to what a
    // dereference of a counted handle returned.
    let mut o = source(defs, place.local);
    let handle = loop {
        let (d, dargs) = call_of(body, defs, o)?;
        let s = callee_of(d)?;
        let a = source(defs, operand_local(dargs.first()?)?);
        if into_object(s) {
            break a;
        }
        if !within(s) {
            return None;
        }
        o = a;
    };
    // The handle: `&(*e).g…`, `e` what a getter of a known exclusive field
    // returned given the root handle.
    let Some(Definition::Statement(Rvalue::Ref { place: h, .. })) =
        defs.get(handle as usize).copied().flatten()
    else {
        return None;
    };
    let [Projection::Deref, rest @ ..] = &*h.projection else {
        return None;
    };
    if !rest.iter().all(|p| matches!(p, Projection::Field { .. })) {
        return None;
    }
    let e = source(defs, h.local);
    let (g, gargs) = call_of(body, defs, e)?;
    let getter = callee_of(g)?;
    if !getter.ret_exclusive {
        return None;
    }
    let field = getter.exclusive_field.clone()?;
    let root = source(defs, operand_local(gargs.first()?)?);
    Some(Chain { clone, root, field })
}

fn is_cell(dump: &CrateDump, ty: kmir::TyId) -> bool {
    dump.adt_of(ty)
        .is_some_and(|a| kmir::UNSAFE_CELLS.contains(&a.path.as_str()))
}

/// Whether nothing between the clone and the drop at `d` can take the
/// handle's count away (see the module doc).
fn kept<'a>(
    b: &BodyInputs<'_>,
    defs: &[Option<Definition<'_>>],
    callee_of: &impl Fn(BlockId) -> Option<&'a Summary>,
    chain: &Chain,
    d: BlockId,
    guard_kills: &impl Fn(u32) -> Option<Vec<BlockId>>,
) -> bool {
    let root = chain.root;
    if !root_holds_one_handle(b, defs, root) {
        return false;
    }
    // The handle lies in a held lock's data.
    let Some(g) = lock_data_holding(b, root) else {
        return false;
    };
    let (Some(kills), Some(escapes)) = (guard_kills(g), b.writes.escapes_of(g)) else {
        return false;
    };
    let on_the_way = super::origins::between(b.body, chain.clone, d);
    if !lock_data_unchanged(b, g, d, &kills, &escapes, &on_the_way) {
        return false;
    }
    // Nothing on the way reaches the exclusive field.
    let reach = FieldReach {
        reach: reaches(b, callee_of, root),
        field: &chain.field,
    };
    nothing_on_the_way_reaches_field(b, callee_of, root, g, d, &on_the_way, &reach)
        && no_call_keeps_a_way_to_field(b, callee_of, &reach)
}

/// Whether the root handle local holds one handle throughout: a
/// reference, given one value (or an argument never written), whose own
/// memory nothing borrows mutably.
fn root_holds_one_handle(
    b: &BodyInputs<'_>,
    defs: &[Option<Definition<'_>>],
    root: LocalId,
) -> bool {
    let body = b.body;
    let is_ref = body
        .local(root)
        .and_then(|l| b.dump.ty(l.ty))
        .is_some_and(|t| matches!(t.kind, TyKind::Ref { .. }));
    let arg = (1..=body.arg_count).contains(&root);
    if !is_ref || (!arg && defs.get(root as usize).copied().flatten().is_none()) {
        return false;
    }
    let mut writes = 0;
    let mut borrowed = false;
    for_each_place(body, |place, context, _| {
        if place.local != root || place.projection.first() == Some(&Projection::Deref) {
            return;
        }
        writes += usize::from(context.is_write());
        borrowed |= matches!(
            context,
            kmir::visit::PlaceContext::Borrow { mutable: true }
                | kmir::visit::PlaceContext::AddressOf { .. }
        );
    });
    !(borrowed || writes > usize::from(!arg))
}

/// The guard whose lock's data the handle the root local points to lies
/// in, when it lies in one held lock's data and nowhere else.
fn lock_data_holding(b: &BodyInputs<'_>, root: LocalId) -> Option<u32> {
    let targets = b.writes.pointee_fields(
        b.dump,
        &Operand::Copy(Place {
            local: root,
            projection: Vec::new().into(),
        }),
        &[],
    );
    let Some(Root::Guard(g)) = targets.first().map(|t| t.root) else {
        return None;
    };
    targets
        .iter()
        .all(|t| t.root == Root::Guard(g))
        .then_some(g)
}

/// Whether the handle stays where it is in the lock's data (guard `g`)
/// until the drop at `d`: no pointer to the data escapes on a way to `d`,
/// the guard is neither released nor moved (`kills`) on the way, and
/// nothing on the way writes the data.
fn lock_data_unchanged(
    b: &BodyInputs<'_>,
    g: u32,
    d: BlockId,
    kills: &[BlockId],
    escapes: &[BlockId],
    on_the_way: &[bool],
) -> bool {
    let body = b.body;
    let between = |x: usize| on_the_way.get(x).copied().unwrap_or(true);
    let reaching_d = super::writes::reaching_blocks(&predecessors(body), d);
    if escapes
        .iter()
        .any(|&e| reaching_d.get(e as usize).copied().unwrap_or(true))
    {
        return false;
    }
    if kills.contains(&d) || kills.iter().any(|&k| between(k as usize)) {
        return false;
    }
    for x in (0..body.blocks.len()).filter(|&x| between(x)) {
        match b
            .writes
            .written_in_ignoring_escapes(Root::Guard(g), x as BlockId)
        {
            Some(paths) if paths.is_empty() => {}
            _ => return false,
        }
    }
    true
}

/// The locals derived from the root handle local, and whether each may
/// reach the exclusive field holding the handle the clone came from.
struct FieldReach<'c> {
    reach: HashMap<LocalId, Reach>,
    field: &'c ExclusiveField,
}

impl FieldReach<'_> {
    /// Whether the pointers local `l` holds may reach the field.
    fn may_reach(&self, l: LocalId) -> bool {
        match self.reach.get(&l) {
            None | Some(Reach::Outside) => false,
            Some(Reach::Whole) | Some(Reach::Field(None)) => true,
            Some(Reach::Field(Some(f))) => !f.disjoint(self.field),
        }
    }

    /// Whether `p` is a place behind such a pointer.
    fn through(&self, p: &Place) -> bool {
        p.projection.first() == Some(&Projection::Deref) && self.may_reach(p.local)
    }
}

/// Whether no store, drop or call from the clone to the drop at `d`
/// reaches the exclusive field, or writes the handle through the lock's
/// data (guard `g`).
fn nothing_on_the_way_reaches_field<'a>(
    b: &BodyInputs<'_>,
    callee_of: &impl Fn(BlockId) -> Option<&'a Summary>,
    root: LocalId,
    g: u32,
    d: BlockId,
    on_the_way: &[bool],
    reach: &FieldReach<'_>,
) -> bool {
    let between = |x: usize| on_the_way.get(x).copied().unwrap_or(true);
    for (x, blk) in b.body.blocks.iter().enumerate() {
        let on_way = between(x);
        if !on_way && x != d as usize {
            continue;
        }
        for st in &blk.statements {
            match &st.kind {
                StatementKind::Assign { place, .. }
                | StatementKind::SetDiscriminant { place, .. }
                    if reach.through(place) || place.local == root =>
                {
                    return false;
                }
                _ => {}
            }
        }
        if !on_way {
            continue;
        }
        // Memory of the lock's data (its own, or what its raw pointers
        // reach: the tree's nodes holding the `ListArc`s). A helper given it
        // may find another entry's `ListArc` there and write that entry's
        // field, which the write scan does not count as a write of the data
        // (it is in the object the handle counts). An object reached through
        // a counted handle is not the data: writing an exclusive field of
        // it takes its `ListArc`, which lies in the data.
        let in_data = |op: &Operand| {
            b.writes
                .pointee_fields(b.dump, op, &[])
                .iter()
                .any(|t| t.root == Root::Guard(g) && !t.path.through_handle())
        };
        match &blk.terminator.kind {
            // Through such a pointer, or a local holding one (its glue may
            // write through it), or one into the lock's data.
            TerminatorKind::Drop { place, .. }
                if reach.through(place)
                    || place.local == root
                    || reach.may_reach(place.local)
                    || in_data(&Operand::Copy(Place {
                        local: place.local,
                        projection: Vec::new().into(),
                    })) =>
            {
                return false;
            }
            TerminatorKind::Call { destination, .. } if reach.through(destination) => {
                return false;
            }
            // A call given a pointer into the lock's data other than one
            // derived from the root handle (those are judged by where they
            // point) writes nothing through it.
            TerminatorKind::Call { args, .. } => {
                let writes = callee_of(x as BlockId).and_then(|s| s.writes.as_ref());
                for (k, a) in args.iter().enumerate() {
                    let derived = operand_local(a).is_some_and(|l| reach.reach.contains_key(&l));
                    if derived || !in_data(a) {
                        continue;
                    }
                    match writes {
                        Some(w) if w.iter().all(|(j, _)| *j as usize != k) => {}
                        _ => return false,
                    }
                }
            }
            _ => {}
        }
    }
    true
}

/// Whether, anywhere in the body, a call given a pointer that may reach
/// the field writes only through the pointers stored there (into other
/// objects: a handle's count), and nothing elsewhere, where it could keep
/// the pointer for a later call to write through; and no statement
/// stores such a pointer in memory.
fn no_call_keeps_a_way_to_field<'a>(
    b: &BodyInputs<'_>,
    callee_of: &impl Fn(BlockId) -> Option<&'a Summary>,
    reach: &FieldReach<'_>,
) -> bool {
    let may_reach_field = |l: LocalId| reach.may_reach(l);
    for (x, blk) in b.body.blocks.iter().enumerate() {
        for st in &blk.statements {
            // An intrinsic given one (a copy of memory) may write or keep it.
            if let StatementKind::Intrinsic { operands, .. } = &st.kind
                && operands
                    .iter()
                    .any(|o| operand_local(o).is_some_and(may_reach_field))
            {
                return false;
            }
            if let StatementKind::Assign { place, rvalue } = &st.kind
                && place.projection.contains(&Projection::Deref)
            {
                let mut stores = false;
                kmir::visit::for_each_rvalue_place(rvalue, |p| {
                    stores |= may_reach_field(p.local) && p.projection.is_empty();
                });
                if stores {
                    return false;
                }
            }
        }
        let TerminatorKind::Call { args, .. } = &blk.terminator.kind else {
            continue;
        };
        let given: Vec<usize> = args
            .iter()
            .enumerate()
            .filter(|(_, a)| operand_local(a).is_some_and(may_reach_field))
            .map(|(k, _)| k)
            .collect();
        if given.is_empty() {
            continue;
        }
        let Some(w) = callee_of(x as BlockId).and_then(|s| s.writes.as_ref()) else {
            return false;
        };
        // A pointer to the handle itself reaches the field through the
        // handle: nothing may be written through it. A pointer into a
        // field's contents reaches other objects through the pointers stored
        // there, which is all that may be written.
        let into_contents = |k: usize| {
            args.get(k)
                .and_then(operand_local)
                .is_some_and(|l| matches!(reach.reach.get(&l), Some(Reach::Field(_))))
        };
        let harmless = w.iter().all(|(j, p)| {
            let j = *j as usize;
            given.contains(&j) && into_contents(j) && (p.through_pointer() || p.through_handle())
        });
        if !harmless {
            return false;
        }
    }
    true
}

/// Where each local derived from the root handle local may point, to a
/// fixed point over the body (flow-insensitive: a local holds all its
/// values).
fn reaches<'a>(
    b: &BodyInputs<'_>,
    callee_of: &impl Fn(BlockId) -> Option<&'a Summary>,
    root: LocalId,
) -> HashMap<LocalId, Reach> {
    let body = b.body;
    let shared_args = |args: &[Operand]| {
        args.iter().all(|a| {
            operand_local(a)
                .and_then(|l| body.local(l))
                .and_then(|d| b.dump.ty(d.ty))
                .is_some_and(|t| matches!(t.kind, TyKind::Ref { mutable: false, .. }))
        })
    };
    let mut reach: HashMap<LocalId, Reach> = HashMap::from([(root, Reach::Whole)]);
    // The widest of two: anything that may reach the field wins.
    fn join(a: Option<&Reach>, b: Reach) -> Reach {
        match (a, b) {
            (None, x) => x,
            (Some(Reach::Whole), _) | (_, Reach::Whole) => Reach::Whole,
            (Some(Reach::Outside), x) => x,
            (Some(x), Reach::Outside) => x.clone(),
            (Some(Reach::Field(f)), Reach::Field(g)) => {
                if *f == g {
                    Reach::Field(g)
                } else {
                    Reach::Whole
                }
            }
        }
    }
    let set = |reach: &mut HashMap<LocalId, Reach>, l: LocalId, r: Reach| -> bool {
        let new = join(reach.get(&l), r);
        if reach.get(&l) == Some(&new) {
            return false;
        }
        reach.insert(l, new);
        true
    };
    for _ in 0..16 {
        let mut changed = false;
        for (bi, blk) in body.blocks.iter().enumerate() {
            for st in &blk.statements {
                let StatementKind::Assign { place, rvalue } = &st.kind else {
                    continue;
                };
                // What the value is derived from.
                let mut from: Option<Reach> = None;
                kmir::visit::for_each_rvalue_place(rvalue, |p| {
                    if let Some(r) = reach.get(&p.local) {
                        from = Some(join(from.as_ref(), r.clone()));
                    }
                });
                // Into a local (or a field of one: a struct holding it). A
                // store behind a pointer does not change where that pointer
                // points (and storing such a pointer in memory is refused
                // by the caller).
                if let Some(r) = from
                    && !place.projection.contains(&Projection::Deref)
                {
                    changed |= set(&mut reach, place.local, r);
                }
            }
            let TerminatorKind::Call {
                args, destination, ..
            } = &blk.terminator.kind
            else {
                continue;
            };
            let mut from: Option<Reach> = None;
            for a in args {
                if let Operand::Copy(p) | Operand::Move(p) = a
                    && let Some(r) = reach.get(&p.local)
                {
                    from = Some(join(from.as_ref(), r.clone()));
                }
            }
            let Some(r) = from else {
                continue;
            };
            let s = callee_of(bi as BlockId);
            let result = match (s, &r) {
                // A getter given the handle: its field.
                (Some(s), Reach::Whole) if s.ret_exclusive => {
                    Reach::Field(s.exclusive_field.clone())
                }
                // A dereference of a counted handle, or a sharing clone of
                // handles (the same pointers, each a count on its object):
                // another object.
                // Only of a handle inside a field's contents (or another
                // object): the root handle's own object holds the field.
                // Only through a shared reference to the handle: a call
                // given `&mut` to it (`get_mut`) may hand out the object for
                // writing.
                (Some(s), Reach::Field(_) | Reach::Outside)
                    if (into_object(s) || s.sharing_clone) && shared_args(args) =>
                {
                    Reach::Outside
                }
                // Into its argument's own memory: the same.
                (Some(s), _) if within(s) => r.clone(),
                // Otherwise by where the result's pointers point: into an
                // object a handle given counts (a clone of the handle) is
                // another object; into a given pointer's own memory, what
                // that pointer reaches; anything else, anywhere.
                (Some(s), _) => match &s.ret_points {
                    Some(points) => {
                        let mut out: Option<Reach> = None;
                        for (k, p) in points {
                            let Some(given) = args
                                .get(*k as usize)
                                .and_then(operand_local)
                                .and_then(|l| reach.get(&l))
                            else {
                                continue;
                            };
                            // Through a handle the root's own object holds
                            // (the root itself) is still that object.
                            let one = if p.through_handle() && *given != Reach::Whole {
                                Reach::Outside
                            } else if p.through_handle() || p.through_pointer() {
                                Reach::Whole
                            } else {
                                given.clone()
                            };
                            out = Some(join(out.as_ref(), one));
                        }
                        match out {
                            Some(x) => x,
                            // Into no given pointer's memory.
                            None => continue,
                        }
                    }
                    None => Reach::Whole,
                },
                (None, _) => Reach::Whole,
            };
            changed |= set(&mut reach, destination.local, result);
        }
        if !changed {
            break;
        }
    }
    reach
}
