//! Keys a lookup found absent: the insert that follows displaces nothing.
//!
//! Binder's `get_node_inner` looks a node up under the process lock and
//! inserts a new one only when the lookup found none:
//!
//! ```text
//! let mut inner = self.inner.lock();
//! if let Some(node) = inner.get_existing_node(ptr, cookie)? { return … }
//! inner.nodes.insert(rbnode);  // rbnode = RBTreeNode::new(ptr, …)?
//! ```
//!
//! `RBTree::insert` returns the node it displaced, and dropping that node
//! under the spinlock could release a last reference. It displaced none:
//! the lookup found no entry with key `ptr`, the lock was held from the
//! lookup on, nothing wrote the tree in between, and the node holds `ptr`.
//!
//! The facts come from the spec (`looks_up_key`, `node_key`,
//! `displaces_key_of`: crates/spec/README.md) and compose through
//! summaries (`Summary::absent_key`: `get_existing_node` returns `Ok(None)`
//! only when `(*arg0).nodes` holds no entry with key `arg1`). Everything
//! else is read off the body, structurally:
//!
//! * a **lookup** is a call with such a fact, its result a local only it
//!   writes, its map one exact place (a held lock's data, memory behind
//!   an argument, a local), its key a local nothing changes after its one
//!   definition;
//! * the result's **absent edges** are the switch edges taken only when
//!   it has the fact's shape: a switch on the discriminant of the result,
//!   of what `?` made of it (`Try::branch` of a `Result` or an `Option`,
//!   which the language's `?` desugars to), of the payload of the variant
//!   the shape names, or on what `Option::is_none`/`is_some` said of it;
//! * an **insert** displaces nothing when every way from the entry to it
//!   takes an absent edge of a lookup of the same key in the same map, the
//!   node it is given was built with that key (through moves, `?` and the
//!   success variant only), and from each such lookup to the insert
//!   nothing writes the map and the guard of the lock its data is in is
//!   neither released nor moved.
//!
//! Keys are compared as locals, not values: two locals holding equal keys
//! are different keys here, which only loses precision.

use kmir::visit::{Definition, PlaceContext, for_each_place, single_definitions};
use kmir::{
    AggregateKind, BlockId, LocalId, Operand, Place, Projection, Rvalue, StatementKind,
    TerminatorKind, TyKind,
};
use program::FnId;

use super::BodyInputs;
use super::writes::{Root, Target, predecessors};
use crate::summary::{AbsentKey, ArgPlace, FieldPath, KeyArg};

/// `?` on a `Result`: `Ok(v)` becomes `Continue(v)` (both discriminant 0),
/// `Err(e)` becomes `Break(..)` (both 1).
const RESULT_BRANCH: &str = "<core::result::Result<T, E> as core::ops::try_trait::Try>::branch";
/// `?` on an `Option`: `Some(v)` (1) becomes `Continue(v)` (0), `None` (0)
/// becomes `Break(None)` (1).
const OPTION_BRANCH: &str = "<core::option::Option<T> as core::ops::try_trait::Try>::branch";
/// `true` exactly when the option is `None` (discriminant 0).
const OPTION_IS_NONE: &str = "core::option::Option::<T>::is_none";
/// `true` exactly when the option is `Some` (discriminant 1).
const OPTION_IS_SOME: &str = "core::option::Option::<T>::is_some";

/// A key as the body names it: what a local holds, or what it points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    local: LocalId,
    deref: bool,
}

/// A call that says a key is absent from a map when its result has a
/// shape.
#[derive(Debug)]
struct Lookup {
    block: BlockId,
    map: Target,
    key: Key,
}

/// A local whose value depends on what a lookup returned: it has the
/// lookup's shape exactly when it has `shape` (what is left of it).
#[derive(Clone, Debug, PartialEq, Eq)]
enum View {
    /// The local's value (or discriminant) then has shape `shape`.
    Value { lookup: usize, shape: Vec<u128> },
    /// The local is the discriminant of a local with that view.
    Discr { lookup: usize, shape: Vec<u128> },
}

struct Scan<'a, 'k> {
    k: &'k BodyInputs<'a>,
    defs: Vec<Option<Definition<'a>>>,
    /// Locals whose value never changes once defined (arguments never
    /// written), and which nothing borrows mutably.
    fixed: Vec<bool>,
    lookups: Vec<Lookup>,
    /// Per lookup, its absent edges.
    edges: Vec<Vec<(BlockId, BlockId)>>,
}

impl<'a, 'k> Scan<'a, 'k> {
    fn new(k: &'k BodyInputs<'a>) -> Scan<'a, 'k> {
        let body = k.body;
        let n = body.locals.len();
        let defs = single_definitions(body);
        let mut writes = vec![0u32; n];
        let mut changed = vec![false; n];
        for_each_place(body, |place, context, _| {
            let l = place.local as usize;
            if l >= n {
                return;
            }
            match context {
                c if c.is_write() => {
                    if place.projection.is_empty() {
                        writes[l] += 1;
                    } else if place.projection.first() != Some(&Projection::Deref) {
                        changed[l] = true;
                    }
                }
                PlaceContext::Borrow { mutable: true }
                | PlaceContext::AddressOf { mutable: true }
                    if place.projection.first() != Some(&Projection::Deref) =>
                {
                    changed[l] = true;
                }
                _ => {}
            }
        });
        let args = body.arg_count as usize;
        let fixed = (0..n)
            .map(|l| {
                let once = if (1..=args).contains(&l) {
                    writes[l] == 0
                } else {
                    writes[l] == 1 && defs[l].is_some()
                };
                once && !changed[l]
            })
            .collect();
        let mut scan = Scan {
            k,
            defs,
            fixed,
            lookups: Vec::new(),
            edges: Vec::new(),
        };
        scan.find_lookups();
        scan
    }

    /// The block holding the one definition of local `l` (`None` for an
    /// argument, which has none).
    fn definition_block(&self, l: LocalId) -> Option<BlockId> {
        match self.defs.get(l as usize).copied().flatten()? {
            Definition::Call(b) => Some(b),
            Definition::Statement(r) => self.k.body.blocks.iter().position(|b| {
                b.statements.iter().any(|st| {
                    matches!(&st.kind, StatementKind::Assign { place, rvalue }
                        if place.local == l && place.projection.is_empty() && std::ptr::eq(&**rvalue, r))
                })
            }).map(|b| b as BlockId),
        }
    }

    fn callee(&self, block: BlockId) -> Option<FnId> {
        match self.k.sites.get(&block)?.as_slice() {
            [t] => Some(t.callee),
            _ => None,
        }
    }

    fn item_path(&self, f: FnId) -> &str {
        &self.k.program.function(f).item_path
    }

    /// The key an operand holds (by value), through copies and moves of
    /// locals that never change.
    fn key_of_value(&self, op: &Operand) -> Option<Key> {
        let (Operand::Copy(p) | Operand::Move(p)) = op else {
            return None;
        };
        match &*p.projection {
            [] => self.key_of_local(p.local, 0),
            // `*key` of a shared reference: what it points to.
            [Projection::Deref] => {
                let r = Operand::Copy(Place {
                    local: p.local,
                    projection: Vec::new().into(),
                });
                self.key_of_ref(&r)
            }
            _ => None,
        }
    }

    fn key_of_local(&self, l: LocalId, depth: u32) -> Option<Key> {
        if !self.fixed.get(l as usize).copied().unwrap_or(false) || depth > 16 {
            return None;
        }
        match self.defs.get(l as usize).copied().flatten() {
            Some(Definition::Statement(Rvalue::Use(Operand::Copy(q) | Operand::Move(q)))) => {
                match &*q.projection {
                    [] => self.key_of_local(q.local, depth + 1),
                    // A copy of what a shared reference points to: that key,
                    // or else this local's own.
                    [Projection::Deref] => self
                        .key_of_ref(&Operand::Copy(Place {
                            local: q.local,
                            projection: Vec::new().into(),
                        }))
                        .or(Some(Key {
                            local: l,
                            deref: false,
                        })),
                    _ => Some(Key {
                        local: l,
                        deref: false,
                    }),
                }
            }
            _ => Some(Key {
                local: l,
                deref: false,
            }),
        }
    }

    /// The key a reference operand points to: a borrow of a local that
    /// never changes, through reborrows; or what a fixed reference
    /// argument points to.
    fn key_of_ref(&self, op: &Operand) -> Option<Key> {
        let (Operand::Copy(p) | Operand::Move(p)) = op else {
            return None;
        };
        if !p.projection.is_empty() {
            return None;
        }
        let mut l = p.local;
        for _ in 0..16 {
            if !self.fixed.get(l as usize).copied().unwrap_or(false) {
                return None;
            }
            match self.defs.get(l as usize).copied().flatten() {
                Some(Definition::Statement(Rvalue::Ref {
                    mutable: false,
                    place,
                })) => match &*place.projection {
                    [] => return self.key_of_local(place.local, 0),
                    [Projection::Deref] => l = place.local,
                    _ => return None,
                },
                Some(Definition::Statement(Rvalue::Use(Operand::Copy(q) | Operand::Move(q))))
                    if q.projection.is_empty() =>
                {
                    l = q.local
                }
                // A shared-reference argument: the key is what it points to,
                // which cannot change while it is borrowed.
                None if (1..=self.k.body.arg_count).contains(&l) => {
                    let ty = self.k.body.local(l)?.ty;
                    return match self.k.dump.ty(ty).map(|t| &t.kind) {
                        Some(TyKind::Ref { mutable: false, .. }) => Some(Key {
                            local: l,
                            deref: true,
                        }),
                        _ => None,
                    };
                }
                _ => return None,
            }
        }
        None
    }

    /// The one exact place a map operand (a reference) points to, then
    /// `fields` below it.
    fn map_of(&self, op: &Operand, fields: &[u32]) -> Option<Target> {
        let ts = self.k.writes.pointee_fields(self.k.dump, op, fields);
        match ts.as_slice() {
            [t] if t.path.exact() && t.root != Root::Elsewhere => Some(*t),
            _ => None,
        }
    }

    /// The lookups of the body, and the shape of the result each finds
    /// the key absent with.
    fn find_lookups(&mut self) {
        let body = self.k.body;
        let mut views: Vec<Option<View>> = vec![None; body.locals.len()];
        for (bi, b) in body.blocks.iter().enumerate() {
            let TerminatorKind::Call {
                args, destination, ..
            } = &b.terminator.kind
            else {
                continue;
            };
            let Some(callee) = self.callee(bi as BlockId) else {
                continue;
            };
            let Some(fact) = self.k.summary_of.get(callee).absent_key.clone() else {
                continue;
            };
            if !destination.projection.is_empty()
                || !matches!(self.defs.get(destination.local as usize), Some(Some(Definition::Call(c))) if *c as usize == bi)
            {
                continue;
            }
            let (Some(map_op), Some(key_op)) = (
                args.get(fact.map.arg as usize),
                args.get(fact.key.arg as usize),
            ) else {
                continue;
            };
            let key = if fact.key.by_ref {
                self.key_of_ref(key_op)
            } else {
                self.key_of_value(key_op)
            };
            let (Some(map), Some(key)) = (self.map_of(map_op, &fact.map.fields), key) else {
                continue;
            };
            views[destination.local as usize] = Some(View::Value {
                lookup: self.lookups.len(),
                shape: fact.shape.clone(),
            });
            self.lookups.push(Lookup {
                block: bi as BlockId,
                map,
                key,
            });
        }
        if self.lookups.is_empty() {
            return;
        }
        self.propagate(&mut views);
        self.edges = vec![Vec::new(); self.lookups.len()];
        for (bi, b) in body.blocks.iter().enumerate() {
            let TerminatorKind::SwitchInt {
                discr: Operand::Copy(p) | Operand::Move(p),
                targets,
                otherwise,
            } = &b.terminator.kind
            else {
                continue;
            };
            if !p.projection.is_empty() {
                continue;
            }
            // What the switch reads, and the values it may have.
            let (lookup, shape, domain) = match views.get(p.local as usize).cloned().flatten() {
                Some(View::Value { lookup, shape }) => {
                    let bool_ty = body
                        .local(p.local)
                        .and_then(|d| self.k.dump.ty(d.ty))
                        .is_some_and(|t| t.kind == TyKind::Bool);
                    (lookup, shape, bool_ty.then(|| vec![0, 1]))
                }
                Some(View::Discr { lookup, shape }) => {
                    let domain = self.discriminant_domain(p.local);
                    (lookup, shape, domain)
                }
                None => continue,
            };
            let [s] = shape.as_slice() else {
                continue;
            };
            for t in targets.iter().map(|t| t.target).chain([*otherwise]) {
                // The values that lead to `t`.
                let named: Vec<u128> = targets
                    .iter()
                    .filter(|x| x.target == t)
                    .map(|x| x.value)
                    .collect();
                let only_s = if t == *otherwise {
                    domain.as_ref().is_some_and(|d| {
                        d.iter()
                            .filter(|v| !targets.iter().any(|x| x.value == **v))
                            .all(|v| v == s)
                            && d.contains(s)
                            && !targets.iter().any(|x| x.value == *s)
                    })
                } else {
                    named == [*s] && !targets.iter().any(|x| x.value == *s && x.target != t)
                };
                if only_s && let Some(e) = self.edges.get_mut(lookup) {
                    e.push((bi as BlockId, t));
                }
            }
        }
    }

    /// The discriminants of the enum whose discriminant local `d` holds.
    fn discriminant_domain(&self, d: LocalId) -> Option<Vec<u128>> {
        let Some(Definition::Statement(Rvalue::Discriminant(place))) =
            self.defs.get(d as usize).copied().flatten()
        else {
            return None;
        };
        let ty = self.k.dump.place_ty(self.k.body, place)?;
        let adt = self.k.dump.enum_of(ty)?;
        Some(adt.variants.iter().map(|v| v.discr).collect())
    }

    /// Gives views to the locals derived from lookup results, to a fixed
    /// point (the blocks need not be in order).
    fn propagate(&self, views: &mut [Option<View>]) {
        let body = self.k.body;
        for _ in 0..8 {
            let mut changed = false;
            let mut set = |views: &mut [Option<View>], l: LocalId, v: View| {
                if let Some(slot) = views.get_mut(l as usize)
                    && slot.is_none()
                {
                    *slot = Some(v);
                    changed = true;
                }
            };
            for (bi, b) in body.blocks.iter().enumerate() {
                for st in &b.statements {
                    let StatementKind::Assign { place, rvalue } = &st.kind else {
                        continue;
                    };
                    // Only a local given this one value.
                    if !place.projection.is_empty()
                        || !matches!(self.defs.get(place.local as usize), Some(Some(Definition::Statement(r))) if std::ptr::eq(*r, &**rvalue))
                    {
                        continue;
                    }
                    match &**rvalue {
                        Rvalue::Use(Operand::Copy(q) | Operand::Move(q)) => {
                            let Some(Some(View::Value { lookup, shape })) =
                                views.get(q.local as usize).cloned()
                            else {
                                continue;
                            };
                            match &*q.projection {
                                [] => set(views, place.local, View::Value { lookup, shape }),
                                // The payload of the variant the shape names:
                                // it has the rest of the shape.
                                [
                                    Projection::Downcast { variant },
                                    Projection::Field { index: 0, .. },
                                ] if shape.len() > 1 => {
                                    let discr = body
                                        .local(q.local)
                                        .and_then(|d| self.k.dump.enum_of(d.ty))
                                        .and_then(|a| a.variants.get(*variant as usize))
                                        .map(|v| v.discr);
                                    if discr == shape.first().copied() {
                                        set(
                                            views,
                                            place.local,
                                            View::Value {
                                                lookup,
                                                shape: shape[1..].to_vec(),
                                            },
                                        );
                                    }
                                }
                                _ => {}
                            }
                        }
                        // `!found` of a `bool`.
                        Rvalue::UnaryOp {
                            op: kmir::UnOp::Not,
                            operand: Operand::Copy(q) | Operand::Move(q),
                        } if q.projection.is_empty() => {
                            let is_bool = body
                                .local(q.local)
                                .and_then(|d| self.k.dump.ty(d.ty))
                                .is_some_and(|t| t.kind == TyKind::Bool);
                            if let Some(Some(View::Value { lookup, shape })) =
                                views.get(q.local as usize).cloned()
                                && is_bool
                                && let [s @ (0 | 1)] = shape.as_slice()
                            {
                                set(
                                    views,
                                    place.local,
                                    View::Value {
                                        lookup,
                                        shape: vec![1 - s],
                                    },
                                );
                            }
                        }
                        Rvalue::Discriminant(q) if q.projection.is_empty() => {
                            if let Some(Some(View::Value { lookup, shape })) =
                                views.get(q.local as usize).cloned()
                            {
                                set(views, place.local, View::Discr { lookup, shape });
                            }
                        }
                        _ => {}
                    }
                }
                // `?` and `is_none`/`is_some` of a viewed local.
                let TerminatorKind::Call {
                    args, destination, ..
                } = &b.terminator.kind
                else {
                    continue;
                };
                if !destination.projection.is_empty()
                    || !matches!(self.defs.get(destination.local as usize), Some(Some(Definition::Call(c))) if *c as usize == bi)
                {
                    continue;
                }
                let Some(callee) = self.callee(bi as BlockId) else {
                    continue;
                };
                let path = self.item_path(callee);
                let [Operand::Copy(a) | Operand::Move(a)] = args.as_slice() else {
                    continue;
                };
                if !a.projection.is_empty() {
                    continue;
                }
                let viewed = match path {
                    RESULT_BRANCH | OPTION_BRANCH => views.get(a.local as usize).cloned().flatten(),
                    // `&opt`: the local borrowed.
                    OPTION_IS_NONE | OPTION_IS_SOME => match self.defs.get(a.local as usize) {
                        Some(Some(Definition::Statement(Rvalue::Ref { place: q, .. })))
                            if q.projection.is_empty() =>
                        {
                            views.get(q.local as usize).cloned().flatten()
                        }
                        _ => None,
                    },
                    _ => None,
                };
                let Some(View::Value { lookup, shape }) = viewed else {
                    continue;
                };
                let Some((&first, rest)) = shape.split_first() else {
                    continue;
                };
                let mapped = match path {
                    // `Ok(v)` keeps its payload in `Continue(v)`; an `Err`
                    // is wrapped again, so only a shape ending there maps.
                    RESULT_BRANCH => match first {
                        0 => Some(0),
                        1 if rest.is_empty() => Some(1),
                        _ => None,
                    },
                    OPTION_BRANCH => match first {
                        1 => Some(0),
                        0 if rest.is_empty() => Some(1),
                        _ => None,
                    },
                    OPTION_IS_NONE if rest.is_empty() => match first {
                        0 => Some(1),
                        1 => Some(0),
                        _ => None,
                    },
                    OPTION_IS_SOME if rest.is_empty() => match first {
                        0 | 1 => Some(first),
                        _ => None,
                    },
                    _ => None,
                };
                if let Some(m) = mapped {
                    let mut shape = vec![m];
                    shape.extend_from_slice(rest);
                    set(views, destination.local, View::Value { lookup, shape });
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Whether every way from the entry to `block` takes an absent edge of
    /// one of the lookups `which`.
    fn covered(&self, which: &[usize], block: BlockId) -> bool {
        let cut: Vec<(BlockId, BlockId)> = which
            .iter()
            .filter_map(|&i| self.edges.get(i))
            .flatten()
            .copied()
            .collect();
        if cut.is_empty() {
            return false;
        }
        let body = self.k.body;
        let mut seen = vec![false; body.blocks.len()];
        let mut stack: Vec<BlockId> = vec![0];
        while let Some(b) = stack.pop() {
            if b == block {
                return false;
            }
            match seen.get_mut(b as usize) {
                Some(s) if !*s => *s = true,
                _ => continue,
            }
            if let Some(blk) = body.blocks.get(b as usize) {
                for s in blk.terminator.kind.successors() {
                    if !cut.contains(&(b, s)) {
                        stack.push(s);
                    }
                }
            }
        }
        true
    }

    /// Whether the map of `lookup` keeps what the lookup saw up to `block`
    /// (not counting the terminator of `block`): nothing between may write
    /// it (through the pointers in it too), and, for a lock's data, the
    /// guard is not released or moved.
    fn map_kept(&self, lookup: &Lookup, block: BlockId, guard_kills: &[BlockId]) -> bool {
        let body = self.k.body;
        let writes = self.k.writes;
        if !writes.settled() {
            return false;
        }
        let on_the_way = super::origins::between(body, lookup.block, block);
        let between = |b: usize| on_the_way.get(b).copied().unwrap_or(true);
        // The block's own statements: a store through a pointer may be one.
        let stores = body.blocks.get(block as usize).is_none_or(|blk| {
            blk.statements.iter().any(|st| match &st.kind {
                StatementKind::Assign { place, .. }
                | StatementKind::SetDiscriminant { place, .. } => {
                    place.projection.contains(&Projection::Deref)
                        || matches!(lookup.map.root, Root::Local(l) if l == place.local)
                }
                StatementKind::Intrinsic { .. } => true,
                _ => false,
            })
        });
        if stores {
            return false;
        }
        if guard_kills.contains(&block) {
            return false;
        }
        // A map in a local: given a new value in place (the write scan
        // records writes through pointers), or moved out, on the way.
        if let Root::Local(l) = lookup.map.root {
            let mut touched = false;
            for_each_place(body, |place, context, at| {
                let whole_or_part =
                    place.local == l && place.projection.first() != Some(&Projection::Deref);
                let changes = context.is_write()
                    || matches!(
                        context,
                        PlaceContext::Read { moved: true } | PlaceContext::Drop
                    );
                if whole_or_part && changes && between(at.block as usize) {
                    touched = true;
                }
            });
            if touched {
                return false;
            }
        }
        for b in (0..body.blocks.len()).filter(|&b| between(b)) {
            let Some(paths) = writes.written_in_ignoring_escapes(lookup.map.root, b as BlockId)
            else {
                return false;
            };
            // A write in an object a handle in the map counts, or inside a
            // cell reached through the map's pointers (a value's own
            // reference count), changes no key and no link: the spec's maps
            // keep both outside cells.
            let keeps_keys =
                |w: &FieldPath| w.through_handle() || (w.interior() && w.through_pointer());
            if paths
                .iter()
                .any(|w| !keeps_keys(w) && w.overlaps(&lookup.map.path))
            {
                return false;
            }
            if guard_kills.contains(&(b as BlockId)) {
                return false;
            }
        }
        true
    }
}

/// What a body's keyed calls show: the fact it gives its callers
/// (`Summary::absent_key`), and its inserts that displace nothing (call
/// block, the discriminant of the variant without fields of what it
/// returns). Both need a lookup; the body is scanned once for both.
pub(crate) struct Keys {
    pub absent_key: Option<AbsentKey>,
    pub displacing_nothing: Vec<(BlockId, u128)>,
}

/// [`Keys`] of a body. `guard_kills` gives, for a guard local, the blocks
/// whose terminator or statements may release or move it.
pub(crate) fn keys(k: &BodyInputs<'_>, guard_kills: impl Fn(u32) -> Option<Vec<BlockId>>) -> Keys {
    let mut out = Keys {
        absent_key: None,
        displacing_nothing: Vec::new(),
    };
    let calls = |has: fn(&crate::summary::Summary) -> bool| {
        k.sites
            .values()
            .any(|ts| ts.iter().any(|t| has(k.summary_of.get(t.callee))))
    };
    if !calls(|s| s.absent_key.is_some()) {
        return out;
    }
    let scan = Scan::new(k);
    if scan.lookups.is_empty() {
        return out;
    }
    out.absent_key = absent_key_fact(&scan);
    if calls(|s| s.displaces_key_of.is_some()) {
        out.displacing_nothing = displacing_nothing(&scan, guard_kills);
    }
    out
}

/// The inserts of the body that displace nothing: (call block, the
/// discriminant of the variant without fields of what it returns).
/// `guard_kills` gives, for a guard local, the blocks whose terminator or
/// statements may release or move it.
fn displacing_nothing(
    scan: &Scan<'_, '_>,
    guard_kills: impl Fn(u32) -> Option<Vec<BlockId>>,
) -> Vec<(BlockId, u128)> {
    let k = scan.k;
    let body = k.body;
    let mut out = Vec::new();
    for (bi, b) in body.blocks.iter().enumerate() {
        let bi = bi as BlockId;
        let TerminatorKind::Call {
            args, destination, ..
        } = &b.terminator.kind
        else {
            continue;
        };
        let Some(callee) = scan.callee(bi) else {
            continue;
        };
        let Some(n) = k.summary_of.get(callee).displaces_key_of else {
            continue;
        };
        let (Some(map_op), Some(node_op)) = (args.first(), args.get(n as usize)) else {
            continue;
        };
        let (Some(map), Some((key, built))) = (scan.map_of(map_op, &[]), scan.node_key(node_op))
        else {
            continue;
        };
        // The key local keeps the value the node was made with: its one
        // definition does not run again between the making and the insert.
        // (Between a lookup and the insert it cannot: every way to the
        // insert takes the lookup's absent edge after the definition ran.)
        if let Some(d) = scan.definition_block(key.local)
            && super::origins::between(body, built, bi)
                .get(d as usize)
                .copied()
                .unwrap_or(true)
        {
            continue;
        }
        // Only a map this function holds exclusively: a lock's data whose
        // guard it holds, memory behind a `&mut` or owned argument, a local.
        let kills = match map.root {
            // A pointer into the data stored where the scan does not follow
            // it lets code given that memory write the data: only on a way
            // from that store, which must not lead to the insert.
            Root::Guard(g) => match (guard_kills(g), k.writes.escapes_of(g)) {
                (Some(kills), Some(escapes)) => {
                    let before = super::writes::reaching_blocks(&predecessors(body), bi);
                    if escapes
                        .iter()
                        .any(|&e| before.get(e as usize).copied().unwrap_or(true))
                    {
                        continue;
                    }
                    kills
                }
                _ => continue,
            },
            Root::Arg(a) => {
                let shared = body
                    .local(a + 1)
                    .and_then(|d| k.dump.ty(d.ty))
                    .is_some_and(|t| matches!(t.kind, TyKind::Ref { mutable: false, .. }));
                if shared {
                    continue;
                }
                Vec::new()
            }
            Root::Local(_) => Vec::new(),
            Root::Elsewhere => continue,
        };
        let same: Vec<usize> = scan
            .lookups
            .iter()
            .enumerate()
            .filter(|(_, l)| l.map == map && l.key == key)
            .map(|(i, _)| i)
            .collect();
        if same.is_empty() || !scan.covered(&same, bi) {
            continue;
        }
        if !same
            .iter()
            .all(|&i| scan.map_kept(&scan.lookups[i], bi, &kills))
        {
            continue;
        }
        // What the insert returns when it displaced nothing.
        let none = body
            .local(destination.local)
            .and_then(|d| k.dump.enum_of(d.ty))
            .and_then(|a| {
                let mut empty = a.variants.iter().filter(|v| v.fields.is_empty());
                match (empty.next(), empty.next()) {
                    (Some(v), None) => Some(v.discr),
                    _ => None,
                }
            });
        if let Some(d) = none
            && destination.projection.is_empty()
        {
            out.push((bi, d));
        }
    }
    out
}

impl Scan<'_, '_> {
    /// The key of the node operand of an insert: built by a call the spec
    /// says makes a node with that key, and moved to the insert through
    /// locals, `?` and the payload of the success variant only.
    fn node_key(&self, op: &Operand) -> Option<(Key, BlockId)> {
        let body = self.k.body;
        let Operand::Move(p) = op else {
            return None;
        };
        if !p.projection.is_empty() {
            return None;
        }
        let node_ty = body.local(p.local)?.ty;
        let mut l = p.local;
        for _ in 0..16 {
            if !self.fixed.get(l as usize).copied().unwrap_or(false) {
                return None;
            }
            match self.defs.get(l as usize).copied().flatten()? {
                Definition::Statement(Rvalue::Use(Operand::Move(q) | Operand::Copy(q))) => {
                    match &*q.projection {
                        [] => l = q.local,
                        // The payload of a variant of a value of another type:
                        // the node only if it has the node's type (not an
                        // error's).
                        [Projection::Downcast { .. }, Projection::Field { ty, .. }]
                            if *ty == node_ty =>
                        {
                            l = q.local
                        }
                        _ => return None,
                    }
                }
                Definition::Call(c) => {
                    let callee = self.callee(c)?;
                    let TerminatorKind::Call { args, .. } =
                        &body.blocks.get(c as usize)?.terminator.kind
                    else {
                        return None;
                    };
                    let path = self.item_path(callee);
                    if path == RESULT_BRANCH || path == OPTION_BRANCH {
                        let [Operand::Move(a)] = args.as_slice() else {
                            return None;
                        };
                        if !a.projection.is_empty() {
                            return None;
                        }
                        l = a.local;
                        continue;
                    }
                    let k = self.k.summary_of.get(callee).node_key?;
                    return Some((self.key_of_value(args.get(k as usize)?)?, c));
                }
                _ => return None,
            }
        }
        None
    }
}

/// The fact a body gives its callers: it returns `shape` only when the
/// map at an argument's place holds no entry with an argument's key
/// (`Summary::absent_key`). Read from the values it stores in the return
/// place: every store of a value that may have the shape runs only after
/// an absent edge of one lookup of an argument's key in an argument's
/// map, which nothing in the body writes from the lookup to the return.
/// A function returning what such a lookup returned, unchanged, passes
/// its fact on.
fn absent_key_fact(scan: &Scan<'_, '_>) -> Option<AbsentKey> {
    let k = scan.k;
    let body = k.body;
    let arg_of = |key: Key| -> Option<KeyArg> {
        ((1..=body.arg_count).contains(&key.local)).then(|| KeyArg {
            arg: key.local - 1,
            by_ref: key.deref,
        })
    };
    let map_of = |t: &Target| -> Option<ArgPlace> {
        let Root::Arg(a) = t.root else {
            return None;
        };
        // Fields only (no variant), the place itself, not inside a cell.
        let fields = t
            .path
            .steps()
            .iter()
            .map(|&s| (field_path(&[u32::from(s)]).steps() == [s]).then_some(u32::from(s)))
            .collect::<Option<Vec<u32>>>()?;
        (t.path.exact() && !t.path.interior()).then_some(ArgPlace { arg: a, fields })
    };
    let returns: Vec<BlockId> = body
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| matches!(b.terminator.kind, TerminatorKind::Return))
        .map(|(i, _)| i as BlockId)
        .collect();
    // Every write of the return place: a store of a known shape, or the
    // result of a lookup.
    let mut stores: Vec<(BlockId, Option<Vec<u128>>)> = Vec::new();
    let mut forwarded: Option<usize> = None;
    let mut unknown = false;
    for_each_place(body, |place, context, at| {
        if place.local != 0 {
            return;
        }
        // Written through a pointer to it: anything.
        if matches!(
            context,
            PlaceContext::Borrow { mutable: true } | PlaceContext::AddressOf { mutable: true }
        ) {
            unknown = true;
            return;
        }
        if !context.is_write() {
            return;
        }
        if !place.projection.is_empty() {
            unknown = true;
            return;
        }
        match context {
            PlaceContext::CallDestination => {
                match scan.lookups.iter().position(|l| l.block == at.block) {
                    Some(i) if forwarded.is_none_or(|f| f == i) => forwarded = Some(i),
                    _ => unknown = true,
                }
            }
            PlaceContext::Assign => {
                let shape = body
                    .blocks
                    .get(at.block as usize)
                    .and_then(|b| b.statements.get(at.statement))
                    .and_then(|st| match &st.kind {
                        StatementKind::Assign { rvalue, .. } => scan.shape_of(rvalue, 0),
                        _ => None,
                    });
                stores.push((at.block, shape));
            }
            _ => unknown = true,
        }
    });
    if unknown {
        return None;
    }
    let all_returns_kept = |l: &Lookup| returns.iter().all(|&r| scan.map_kept(l, r, &[]));
    if let Some(i) = forwarded {
        // The result of the lookup, returned as it is.
        let l = scan.lookups.get(i)?;
        let fact = k.summary_of.get(scan.callee(l.block)?).absent_key.clone()?;
        if !stores.is_empty() || !all_returns_kept(l) {
            return None;
        }
        return Some(AbsentKey {
            map: map_of(&l.map)?,
            key: arg_of(l.key)?,
            shape: fact.shape,
        });
    }
    // The shape: that of the stores that run only after an absent edge.
    for (i, l) in scan.lookups.iter().enumerate() {
        let (Some(map), Some(key)) = (map_of(&l.map), arg_of(l.key)) else {
            continue;
        };
        let covered: Vec<&Vec<u128>> = stores
            .iter()
            .filter(|(b, _)| scan.covered(&[i], *b))
            .filter_map(|(_, s)| s.as_ref())
            .collect();
        let Some(shape) = covered.first().copied() else {
            continue;
        };
        if covered.iter().any(|s| *s != shape) {
            continue;
        }
        // Every other store has a different shape, known far enough to
        // tell.
        let prefix = |a: &[u128], b: &[u128]| a.iter().zip(b).all(|(x, y)| x == y);
        let others_differ = stores.iter().all(|(b, s)| {
            scan.covered(&[i], *b) && s.as_ref() == Some(shape)
                || s.as_ref().is_some_and(|s| !prefix(s, shape))
        });
        if others_differ && all_returns_kept(l) {
            return Some(AbsentKey {
                map,
                key,
                shape: shape.clone(),
            });
        }
    }
    None
}

impl Scan<'_, '_> {
    /// The discriminants of a value built by `rvalue` from the outside in,
    /// through the first field of each variant, as far as the body builds
    /// it (`Ok(None)` is `[0, 0]`; `Ok(Some(x))` is `[0, 1]`).
    fn shape_of(&self, rvalue: &Rvalue, depth: u32) -> Option<Vec<u128>> {
        let Rvalue::Aggregate {
            kind: AggregateKind::Adt { ty, variant, .. },
            operands,
        } = rvalue
        else {
            return None;
        };
        let discr = self
            .k
            .dump
            .enum_of(*ty)?
            .variants
            .get(*variant as usize)?
            .discr;
        let mut out = vec![discr];
        if let [Operand::Move(p) | Operand::Copy(p)] = operands.as_slice()
            && p.projection.is_empty()
            && depth < 8
            && let Some(Definition::Statement(inner)) =
                self.defs.get(p.local as usize).copied().flatten()
            && let Some(rest) = self.shape_of(inner, depth + 1)
        {
            out.extend(rest);
        }
        Some(out)
    }
}

fn field_path(fields: &[u32]) -> FieldPath {
    fields.iter().fold(FieldPath::AT, |p, &f| p.field(f))
}
