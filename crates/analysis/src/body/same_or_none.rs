//! Tests that two optional handles are both empty or hold one object
//! (docs/preemption.md, "Identity tests"), and the drops they back.
//!
//! Binder's `Transaction::is_stacked_on(&self, onext: &Option<DArc<Self>>)`
//! returns true when `self.from_parent` and `*onext` are both `None`, or
//! both `Some` and `Arc::ptr_eq`. `transaction_inner` checks it against the
//! thread's `current_transaction` under the thread's spinlock, and then
//! overwrites that field: the value it drops is `None`, or a handle on the
//! object the new transaction's `from_parent` counts, and the new
//! transaction is a live local. The drop cannot be the last reference.
//!
//! Two halves:
//! * [`recognize`] reads a function's body and says which two places
//!   (below its shared-reference arguments) it compares that way
//!   (`Summary::same_or_none`);
//! * [`find`] finds the calls of such functions (and of plain identity
//!   tests, `Arc::ptr_eq`) in a body, and `Origins::same_or_none_backed`
//!   decides whether a drop on a path where one returned true is backed.

use std::collections::{BTreeSet, HashMap};

use kmir::{
    BlockId, Body, ConstValue, CrateDump, Operand, Place, Projection, Rvalue, StatementKind,
    TerminatorKind, TyKind,
};

use super::writes::{Root, Target as Memory};

use super::Target;
use crate::summary::{ArgPlace, Summaries};

/// A step below what an argument points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Field(u32),
    /// The fields of this variant (by index) follow.
    Variant(u32),
}

/// A place below what an argument points to, by steps.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Below {
    arg: u32,
    steps: Vec<Step>,
}

impl Below {
    /// As a summary's place: fields only.
    fn arg_place(&self) -> Option<ArgPlace> {
        let fields = self
            .steps
            .iter()
            .map(|s| match s {
                Step::Field(f) => Some(*f),
                Step::Variant(_) => None,
            })
            .collect::<Option<Vec<u32>>>()?;
        Some(ArgPlace {
            arg: self.arg,
            fields,
        })
    }
}

/// Follows the temporaries of one body back to the arguments they borrow
/// from. Only locals given one whole value, by one statement
/// (`kmir::visit::single_definitions`), are followed.
struct Resolver<'b> {
    dump: &'b CrateDump,
    body: &'b Body,
    defs: Vec<Option<&'b Rvalue>>,
}

impl<'b> Resolver<'b> {
    fn new(dump: &'b CrateDump, body: &'b Body) -> Self {
        // Only statements are followed: a call's result says nothing here.
        let defs = kmir::visit::single_definitions(body)
            .into_iter()
            .map(|d| match d {
                Some(kmir::visit::Definition::Statement(rv)) => Some(rv),
                _ => None,
            })
            .collect();
        Resolver { dump, body, defs }
    }

    /// Whether argument `k` (0-based) is a shared reference.
    fn shared_arg(&self, k: u32) -> bool {
        self.body.local(k + 1).is_some_and(|l| {
            matches!(
                self.dump.ty(l.ty).map(|t| &t.kind),
                Some(TyKind::Ref { mutable: false, .. })
            )
        })
    }

    /// Where the reference `place` holds points, below a shared-reference
    /// argument: the argument itself, a copy, a reborrow, a borrow of a
    /// place below one, or a field of a tuple of such references.
    fn pointee(&self, place: &Place, depth: u32) -> Option<Below> {
        if depth > 12 {
            return None;
        }
        let l = place.local;
        match *place.projection {
            [] => {
                if l >= 1 && l <= self.body.arg_count {
                    return self.shared_arg(l - 1).then(|| Below {
                        arg: l - 1,
                        steps: Vec::new(),
                    });
                }
                match (*self.defs.get(l as usize)?)? {
                    Rvalue::Use(Operand::Copy(p) | Operand::Move(p)) | Rvalue::CopyForDeref(p) => {
                        self.pointee(p, depth + 1)
                    }
                    Rvalue::Ref { place: q, .. } => self.target(q, depth + 1),
                    _ => None,
                }
            }
            [Projection::Field { index, .. }] => match (*self.defs.get(l as usize)?)? {
                Rvalue::Aggregate { operands, .. } => match operands.get(index as usize)? {
                    Operand::Copy(p) | Operand::Move(p) => self.pointee(p, depth + 1),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }

    /// The place `q` designates, when it lies behind a reference
    /// [`Resolver::pointee`] follows.
    fn target(&self, q: &Place, depth: u32) -> Option<Below> {
        let last = q.projection.iter().rposition(|p| *p == Projection::Deref)?;
        let base = Place {
            local: q.local,
            projection: q.projection[..last].into(),
        };
        let mut at = self.pointee(&base, depth)?;
        for p in &q.projection[last + 1..] {
            match p {
                Projection::Field { index, .. } => at.steps.push(Step::Field(*index)),
                Projection::Downcast { variant } => at.steps.push(Step::Variant(*variant)),
                _ => return None,
            }
        }
        Some(at)
    }

    /// The enum read by `discriminant(place)`: each variant's
    /// discriminant value and whether it has no fields; `None` when the
    /// place may lie inside an `UnsafeCell` (what is read there may change
    /// during the call).
    fn variants(&self, place: &Place) -> Option<Vec<(u128, bool)>> {
        let last = place
            .projection
            .iter()
            .rposition(|p| *p == Projection::Deref)?;
        for p in &place.projection[last + 1..] {
            if let Projection::Field { ty, .. } = p
                && super::writes::is_cell(self.dump, *ty)
            {
                return None;
            }
        }
        let ty = self.dump.place_ty(self.body, place)?;
        let Some(TyKind::Adt { path, .. }) = self.dump.ty(ty).map(|t| &t.kind) else {
            return None;
        };
        let adt = self.dump.adt(path)?;
        Some(
            adt.variants
                .iter()
                .map(|v| (v.discr, v.fields.is_empty()))
                .collect(),
        )
    }
}

/// What is known, on every path to a block, about the variants of places
/// below the arguments: `(place, variant index)` pairs.
type Known = BTreeSet<(Below, u32)>;

/// The enums whose discriminant a body reads, by place: each variant's
/// discriminant value, and whether it has no fields.
type Shapes = std::collections::BTreeMap<Below, Vec<(u128, bool)>>;

/// For each block, the variants every path to it saw read (`None`: not
/// reached). The places lie behind shared references, outside any cell
/// (`recognize` checks the places it uses), so what was read stays true
/// for the whole call.
fn known_variants(r: &Resolver<'_>) -> (Vec<Option<Known>>, Shapes) {
    let body = r.body;
    let mut shapes = Shapes::new();
    let n = body.blocks.len();
    let mut known: Vec<Option<Known>> = vec![None; n];
    if n == 0 {
        return (known, shapes);
    }
    known[0] = Some(Known::new());
    let mut work: Vec<BlockId> = vec![0];
    while let Some(b) = work.pop() {
        let Some(here) = known.get(b as usize).cloned().flatten() else {
            continue;
        };
        let Some(blk) = body.blocks.get(b as usize) else {
            continue;
        };
        let mut edges: Vec<(BlockId, Known)> = Vec::new();
        match &blk.terminator.kind {
            TerminatorKind::SwitchInt {
                discr: Operand::Copy(d) | Operand::Move(d),
                targets,
                otherwise,
            } if d.projection.is_empty() => {
                let read = match r.defs.get(d.local as usize).copied().flatten() {
                    Some(Rvalue::Discriminant(p)) => r.target(p, 0).zip(r.variants(p)),
                    _ => None,
                };
                if let Some((at, vs)) = &read {
                    shapes.insert(at.clone(), vs.clone());
                }
                for t in targets.iter() {
                    let mut k = here.clone();
                    if let Some((at, vs)) = &read
                        && let Some(i) = vs.iter().position(|(d, _)| *d == t.value)
                    {
                        k.insert((at.clone(), i as u32));
                    }
                    edges.push((t.target, k));
                }
                edges.push((*otherwise, here.clone()));
            }
            other => {
                for s in other.successors() {
                    edges.push((s, here.clone()));
                }
            }
        }
        for (to, k) in edges {
            let Some(slot) = known.get_mut(to as usize) else {
                continue;
            };
            let next = match slot {
                None => k,
                Some(old) => old.intersection(&k).cloned().collect(),
            };
            if slot.as_ref() != Some(&next) {
                *slot = Some(next);
                work.push(to);
            }
        }
    }
    (known, shapes)
}

fn bool_constant(dump: &CrateDump, op: &Operand) -> Option<bool> {
    let Operand::Constant(c) = op else {
        return None;
    };
    if !matches!(dump.ty(c.ty).map(|t| &t.kind), Some(TyKind::Bool)) {
        return None;
    }
    match c.value {
        ConstValue::Scalar(0) => Some(false),
        ConstValue::Scalar(1) => Some(true),
        _ => None,
    }
}

/// The two places a function compares as "both empty, or one object", if
/// that is all its result says. Its result is written only with `false`;
/// with `true` where every path saw both places hold the variant without
/// fields; or by an identity test (`Arc::ptr_eq`, `Summary::identity_test`)
/// of the payloads of both places, where every path saw both hold the
/// variant with the payload. The places are below shared-reference
/// arguments, each an enum of two variants, one without fields.
pub fn recognize(
    dump: &CrateDump,
    body: &Body,
    sites: &HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
) -> Option<(ArgPlace, ArgPlace)> {
    // Cheap filter first: a `bool` result, and an identity test called
    // straight into it.
    let ret = body.local(0)?;
    if !matches!(dump.ty(ret.ty).map(|t| &t.kind), Some(TyKind::Bool)) {
        return None;
    }
    let calls_test = sites.iter().any(|(b, ts)| {
        matches!(
            body.blocks.get(*b as usize).map(|x| &x.terminator.kind),
            Some(TerminatorKind::Call { destination, .. }) if destination.local == 0
        ) && ts
            .iter()
            .any(|t| summary_of.get(t.callee).identity_test.is_some())
    });
    if !calls_test {
        return None;
    }
    let r = Resolver::new(dump, body);
    let (known, shapes) = known_variants(&r);
    let mut pair: Option<(Below, Below, u32)> = None;
    let mut empty_at: Vec<BlockId> = Vec::new();
    for (bi, b) in body.blocks.iter().enumerate() {
        for st in &b.statements {
            let StatementKind::Assign { place, rvalue } = &st.kind else {
                continue;
            };
            if let Rvalue::Ref {
                mutable: true,
                place: q,
            }
            | Rvalue::AddressOf { place: q, .. } = &**rvalue
                && q.local == 0
            {
                return None;
            }
            if place.local != 0 {
                continue;
            }
            if !place.projection.is_empty() {
                return None;
            }
            match &**rvalue {
                Rvalue::Use(op) => match bool_constant(dump, op)? {
                    false => {}
                    true => empty_at.push(bi as BlockId),
                },
                _ => return None,
            }
        }
        let TerminatorKind::Call {
            args, destination, ..
        } = &b.terminator.kind
        else {
            continue;
        };
        if destination.local != 0 {
            continue;
        }
        if !destination.projection.is_empty() {
            return None;
        }
        let [t] = sites.get(&(bi as BlockId))?.as_slice() else {
            return None;
        };
        let (i, j) = summary_of.get(t.callee).identity_test?;
        let payload = |k: u32| match args.get(k as usize)? {
            Operand::Copy(p) | Operand::Move(p) => r.pointee(p, 0),
            _ => None,
        };
        let (a, b2) = (payload(i)?, payload(j)?);
        // `((*x) as V).0` for both, with the same variant `V`.
        let split = |p: &Below| match p.steps.as_slice() {
            [.., Step::Variant(v), Step::Field(0)] => Some((
                Below {
                    arg: p.arg,
                    steps: p.steps[..p.steps.len() - 2].to_vec(),
                },
                *v,
            )),
            _ => None,
        };
        let ((pa, va), (pb, vb)) = (split(&a)?, split(&b2)?);
        if va != vb || pa == pb {
            return None;
        }
        let here = known.get(bi).cloned().flatten()?;
        if !here.contains(&(pa.clone(), va)) || !here.contains(&(pb.clone(), vb)) {
            return None;
        }
        let (pa, pb) = if pa <= pb { (pa, pb) } else { (pb, pa) };
        match &pair {
            None => pair = Some((pa, pb, va)),
            Some((x, y, v)) if *x == pa && *y == pb && *v == va => {}
            Some(_) => return None,
        }
    }
    let (pa, pb, some) = pair?;
    // Both places: an enum of two variants, `some` with the payload and the
    // other without fields, outside any cell (`Resolver::variants`).
    let none = match some {
        0 => 1,
        1 => 0,
        _ => return None,
    };
    for p in [&pa, &pb] {
        let vs = shapes.get(p)?;
        let [_, _] = vs.as_slice() else { return None };
        if !vs.get(none as usize)?.1 || vs.get(some as usize)?.1 {
            return None;
        }
    }
    for b in empty_at {
        let here = known.get(b as usize).cloned().flatten()?;
        if !here.contains(&(pa.clone(), none)) || !here.contains(&(pb.clone(), none)) {
            return None;
        }
    }
    Some((pa.arg_place()?, pb.arg_place()?))
}

/// A call of a [`recognize`]d test in a body.
#[derive(Clone, Debug)]
pub struct Test {
    /// The call's block.
    pub block: BlockId,
    /// The two places compared, as the call's operands followed by the
    /// summary's fields.
    pub sides: [(Operand, Vec<u32>); 2],
    /// The blocks reached only through a branch taken when it returned
    /// non-zero.
    pub true_at: Vec<bool>,
}

/// The calls of "same or none" tests a body makes, by the callees'
/// summaries, and of plain identity tests (`Summary::identity_test`).
pub fn find(
    body: &Body,
    sites: &HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
) -> Vec<Test> {
    let mut out = Vec::new();
    for (block, args, result, callee) in super::origins::result_calls(body, sites) {
        let summary = summary_of.get(callee);
        // A plain identity test (`Arc::ptr_eq`) is one too: its places are
        // the two handles themselves, never empty.
        let identity;
        let (a, c) = match (&summary.same_or_none, summary.identity_test) {
            (Some((a, c)), _) => (a, c),
            (None, Some((i, j))) => {
                identity = (
                    ArgPlace {
                        arg: i,
                        fields: Vec::new(),
                    },
                    ArgPlace {
                        arg: j,
                        fields: Vec::new(),
                    },
                );
                (&identity.0, &identity.1)
            }
            (None, None) => continue,
        };
        let side = |p: &ArgPlace| {
            args.get(p.arg as usize)
                .map(|op| (op.clone(), p.fields.clone()))
        };
        if let (Some(x), Some(y)) = (side(a), side(c)) {
            out.push(Test {
                block,
                sides: [x, y],
                true_at: super::origins::true_branch_only(body, result),
            });
        }
    }
    out
}

impl super::origins::Origins {
    /// Whether the drop ending `block`, of a place in a held lock's data or
    /// behind a `&mut` argument, releases nothing or an object something
    /// else keeps alive, because every path to it took the true branch of
    /// a [`recognize`]d test comparing that place with a handle that
    /// outlives the drop: one in the object a local handle counts, the
    /// local holding it up to the drop, or one in memory a shared-reference
    /// argument borrows. Neither place may be written between the test and
    /// the drop, nor the guard released.
    pub fn same_or_none_backed(
        &self,
        dump: &CrateDump,
        body: &Body,
        block: BlockId,
        terminator: &TerminatorKind,
    ) -> bool {
        if self.same_or_none_tests.is_empty() || !self.writes.settled() {
            return false;
        }
        let TerminatorKind::Drop { place, .. } = terminator else {
            return false;
        };
        if !place.projection.contains(&Projection::Deref)
            || body
                .blocks
                .iter()
                .any(|b| matches!(b.terminator.kind, TerminatorKind::InlineAsm { .. }))
        {
            return false;
        }
        let [dropped] = self.writes.place_memory(dump, place)[..] else {
            return false;
        };
        let held = match dropped.root {
            Root::Guard(g) => {
                self.guards.locals.contains(&g)
                    && !self.writes.data_escaped(g)
                    && !self.writes.in_cell(g, &dropped.path)
            }
            Root::Arg(k) => self.is_mutref(k),
            Root::Local(_) | Root::Elsewhere => false,
        };
        if !held || !dropped.path.exact() {
            return false;
        }
        self.same_or_none_tests.iter().any(|t| {
            if !t.true_at.get(block as usize).copied().unwrap_or(false) {
                return false;
            }
            let at = |i: usize| {
                let (op, fields) = &t.sides[i];
                self.writes.pointee_fields(dump, op, fields)
            };
            let (a, b) = (at(0), at(1));
            let this_other = if a.as_slice() == [dropped] {
                b
            } else if b.as_slice() == [dropped] {
                a
            } else {
                return false;
            };
            !this_other.is_empty()
                && this_other.iter().all(|o| self.outlives(body, o, block))
                && self.unchanged_between(dump, body, dropped, t.block, block)
        })
    }

    /// Whether the handle at `o` holds its count up to the drop at `to`
    /// (and so from the test on): it lies, outside any cell, in the object a handle
    /// held by a local counts (the local holds that handle up to the drop,
    /// and nothing in the body writes in the object), or in memory a
    /// shared-reference argument borrows.
    fn outlives(&self, body: &Body, o: &Memory, to: BlockId) -> bool {
        if o.path.interior() {
            return false;
        }
        match o.root {
            Root::Local(l) => {
                o.path.through_handle()
                    && !self.writes.may_write(Root::Local(l), &o.path)
                    && super::origins::kill_reach(
                        body,
                        &BTreeSet::from([l]),
                        false,
                        &BTreeSet::new(),
                    )
                    .get(&l)
                    .is_some_and(|r| r.get(to as usize).is_some_and(|reached| !reached))
            }
            Root::Arg(k) => self.is_shared(k) && !self.writes.may_write(Root::Arg(k), &o.path),
            Root::Guard(_) | Root::Elsewhere => false,
        }
    }

    /// Whether the place `d` keeps, up to the drop ending `to`, what the
    /// test ending `from` saw: nothing writes at, above or below it on a
    /// way between (the drop itself aside), and a guard whose data it is
    /// is not released there.
    fn unchanged_between(
        &self,
        dump: &CrateDump,
        body: &Body,
        d: Memory,
        from: BlockId,
        to: BlockId,
    ) -> bool {
        let Some(blk) = body.blocks.get(to as usize) else {
            return false;
        };
        // The statements before the drop, in its own block.
        let touches = |place: &Place| {
            place.projection.contains(&Projection::Deref)
                && self
                    .writes
                    .place_memory(dump, place)
                    .iter()
                    .any(|t| t.root == d.root && !t.path.interior() && t.path.overlaps(&d.path))
        };
        let writes_in_block = blk.statements.iter().any(|st| match &st.kind {
            StatementKind::Assign { place, .. } | StatementKind::SetDiscriminant { place, .. } => {
                touches(place)
            }
            StatementKind::Intrinsic { .. } => true,
            _ => false,
        });
        if writes_in_block {
            return false;
        }
        let preds: Vec<BlockId> = body
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.terminator.kind.successors().contains(&to))
            .map(|(i, _)| i as BlockId)
            .collect();
        if preds
            .iter()
            .any(|&p| p != from && self.writes.may_write_between(d.root, &d.path, from, p))
        {
            return false;
        }
        if preds.contains(&from) && self.writes.may_write_between(d.root, &d.path, from, from) {
            return false;
        }
        match d.root {
            Root::Guard(g) => !self.guard_released_between(body, g, from, to),
            _ => true,
        }
    }
}
