//! Places an exclusive accessor returns, and what is known about them
//! across calls.
//!
//! Binder's `Process::request_death` checks `info.death().is_some()` and
//! returns if so, makes a death notification with a few calls (clones, a
//! constructor, another lock), and then stores `*info.death() = Some(..)`.
//! The store drops the `None` the check saw. `info` is a `&mut
//! ListArc<NodeRefInfo>` the lookup in the held lock's data returned, and
//! `death()` is a getter `define_list_arc_field_getter!` generates: it
//! returns `ListArcField::assert_mut(&(&**info).death)`, a reference into
//! the object the handle counts. Two things are needed to see that the
//! store drops nothing (process.rs:1312, :1317, :1350):
//!
//! * **One place for both calls.** A call of a function whose summary says
//!   its result is exclusive to a handle (`ret_exclusive`: the spec's
//!   `exclusive_to_handle`, `ListArcField::assert_mut`/`assert_ref`, and
//!   the functions returning only what such a call returned) is given a
//!   reference to a place; its result points at a place of its own below
//!   that one, `(*info).Via(death)` (`memory::ProjKey::Via`, by callee).
//!   Two calls given the same place return the same place: the getter reads
//!   the handle's pointer and takes a field's address, nothing else. A
//!   function that only computes where its one argument leads (it writes
//!   nothing, and returns a pointer reached from it: `Arc::deref`) is
//!   named the same way when given a place below such a place, so that a
//!   pointer derived from another exclusive field (`info.node_ref2()
//!   .node.owner`) is told from the checked one.
//! * **Facts that outlive calls.** The place is reached through a counted
//!   handle, so calls forget facts about it like any memory behind a
//!   pointer. But `ListArcField`'s contract says only the holder of the
//!   `ListArc` with the field's ID may reach the contents: while the
//!   caller holds that handle by `&mut` (the root local of the place is a
//!   `&mut`, neither reassigned nor with its address taken), only code
//!   given it, or a pointer to the place, can write there. So the facts
//!   about the place survive a call unless an operand of the call
//!   designates the handle, memory containing it, or the place itself, and
//!   the callee's write summary says it may write through that operand; a
//!   pointer derived from the handle that the facts cannot place (stored
//!   in a struct, a closure) also ends them. A pointer into another
//!   exclusive field of the same handle (`info.node_ref()`) reaches only
//!   that field, when both getters' bodies show which field they return
//!   (`exclusive_field`) and the two differ: two getters of one field
//!   (`node_ref()` and `node_ref2()`) name two places that are one memory.
//!
//! Trust assumption (docs/preemption.md, "Facts about a field only one
//! handle reaches"): the contract of every function the spec marks
//! `exclusive_to_handle` holds: nothing reaches the contents but through
//! the handle (unsafe code that keeps a pointer to them breaks it).

use kmir::{BlockId, Body, LocalId, Operand, Rvalue, StatementKind, TerminatorKind, TyKind};
use memory::{Facts, PlaceKey, ProjKey};

use super::prescan::read_only_operand;
use super::{BodyAnalysis, PlaceFacts, Target};
use crate::summary::{Summaries, Summary};

/// Whether every value a body returns is the result of a call to
/// functions whose results are exclusive to a handle, moved or reborrowed
/// (`&mut *r`) on the way: a getter returning what
/// `ListArcField::assert_mut` returned.
pub fn returns_exclusive(
    body: &Body,
    sites: &std::collections::HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
) -> bool {
    let mut todo: Vec<LocalId> = vec![0];
    let mut seen: Vec<LocalId> = Vec::new();
    let mut defs = 0;
    while let Some(l) = todo.pop() {
        if seen.contains(&l) {
            continue;
        }
        seen.push(l);
        for (bi, b) in body.blocks.iter().enumerate() {
            for st in &b.statements {
                let StatementKind::Assign { place, rvalue } = &st.kind else {
                    continue;
                };
                if place.local != l {
                    continue;
                }
                if !place.projection.is_empty() {
                    return false;
                }
                defs += 1;
                match &**rvalue {
                    Rvalue::Use(Operand::Copy(p) | Operand::Move(p)) if p.projection.is_empty() => {
                        todo.push(p.local)
                    }
                    Rvalue::Ref { place: p, .. } if *p.projection == [kmir::Projection::Deref] => {
                        todo.push(p.local)
                    }
                    _ => return false,
                }
            }
            if let TerminatorKind::Call { destination, .. } = &b.terminator.kind
                && destination.local == l
            {
                if !destination.projection.is_empty() {
                    return false;
                }
                defs += 1;
                let ts = sites.get(&(bi as BlockId)).map_or(&[][..], Vec::as_slice);
                if ts.is_empty() || !ts.iter().all(|t| summary_of.get(t.callee).ret_exclusive) {
                    return false;
                }
            }
        }
        // Any other way a local gets a value (an argument, a write
        // through a pointer to it) is not the accessor's result.
        if l >= 1 && l <= body.arg_count {
            return false;
        }
    }
    defs > 0
}

/// The field of the object its handle argument counts whose contents an
/// exclusive accessor returns (`Summary::exclusive_field`), read off its
/// body: the value returned is, through moves and reborrows, what an
/// exclusive call returned (`ListArcField::assert_mut`) given a borrow of
/// `(*o).f…`, where `o` is what a dereference of the handle behind argument
/// 0 returned (a call the spec marks `points_into_object`: `ListArc::deref`);
/// or what another accessor with a known field returned given argument 0.
/// Two accessors of one field (a `&mut` getter and a `&` one) then name
/// one place, and only accessors of different fields are disjoint.
pub fn exclusive_field(
    dump: &kmir::CrateDump,
    body: &Body,
    sites: &std::collections::HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
) -> Option<crate::summary::ExclusiveField> {
    use super::chain::{call_of, operand_local, source};
    use kmir::Projection;
    use kmir::visit::{Definition, single_definitions};
    let defs = single_definitions(body);
    let only_callee = |b: BlockId| -> Option<&Summary> {
        match sites.get(&b)?.as_slice() {
            [t] => Some(summary_of.get(t.callee)),
            _ => None,
        }
    };
    let source = |l: LocalId| source(&defs, l);
    let call_of = |l: LocalId| call_of(body, &defs, l);
    let (b, args) = call_of(source(0))?;
    let callee = only_callee(b)?;
    if !callee.ret_exclusive {
        return None;
    }
    let arg = source(operand_local(args.first()?)?);
    // Another accessor given argument 0: its field.
    if arg == 1 {
        return callee.exclusive_field.clone();
    }
    // `assert_mut(&(*o).f…)`.
    let Some(Definition::Statement(Rvalue::Ref { place, .. })) =
        defs.get(arg as usize).copied().flatten()
    else {
        return None;
    };
    let [Projection::Deref, rest @ ..] = &*place.projection else {
        return None;
    };
    let fields = rest
        .iter()
        .map(|p| match p {
            Projection::Field { index, .. } => Some(*index),
            _ => None,
        })
        .collect::<Option<Vec<u32>>>()?;
    let object = source(place.local);
    let object_ty = dump.pointee(body.local(object)?.ty)?;
    let (d, deref_args) = call_of(object)?;
    let deref = only_callee(d)?;
    // A dereference of the handle argument 0 points to: a reference into
    // the object it counts.
    let into_object = deref.ret_points.as_ref().is_some_and(|r| {
        !r.is_empty()
            && r.iter()
                .all(|(k, p)| *k == 0 && p.through_handle() && p.steps().is_empty())
    });
    if !into_object || source(operand_local(deref_args.first()?)?) != 1 {
        return None;
    }
    Some(crate::summary::ExclusiveField {
        object: dump.ty(object_ty)?.display.to_string(),
        fields,
    })
}

impl BodyAnalysis<'_> {
    /// Whether the exclusive accessors `x` and `y` return disjoint fields:
    /// both bodies show which field, and the fields differ. Two accessors
    /// of one field (or of a field the body does not show) may return one
    /// place.
    fn disjoint_accessors(&self, x: u32, y: u32) -> bool {
        let field = |id: u32| {
            self.summary_of
                .get(program::FnId(id))
                .exclusive_field
                .clone()
        };
        match (field(x), field(y)) {
            (Some(a), Some(b)) => a.disjoint(&b),
            _ => false,
        }
    }

    /// The place the call `t` ending a block returns a reference to, when
    /// it is an exclusive accessor given a reference to a place under a
    /// `&mut` local of this body (see the module doc).
    pub(super) fn accessor_place(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        t: &Target,
        summary: &Summary,
    ) -> Option<PlaceKey> {
        // An exclusive accessor, or one that only computes where its
        // argument leads (`Arc::deref`): named so that what is derived from
        // an exclusive place is told from the place itself.
        let pure = summary.writes.as_ref().is_some_and(Vec::is_empty)
            && !summary.ret_fresh
            && summary
                .ret_points
                .as_ref()
                .is_some_and(|r| !r.is_empty() && r.iter().all(|(k, _)| *k == 0));
        if !summary.ret_exclusive && !pure {
            return None;
        }
        let TerminatorKind::Call {
            args, destination, ..
        } = terminator
        else {
            return None;
        };
        let is_ref = |ty: kmir::TyId| {
            self.dump
                .ty(ty)
                .is_some_and(|t| matches!(t.kind, TyKind::Ref { .. }))
        };
        if !destination.projection.is_empty()
            || self.address_taken.contains(&destination.local)
            || !self
                .body
                .local(destination.local)
                .is_some_and(|d| is_ref(d.ty))
        {
            return None;
        }
        if args.len() != 1 {
            return None;
        }
        let base = facts.normalize_fully(&facts.pointee(args.first()?)?);
        if self.trace {
            eprintln!(
                "[kanalyze trace] accessor {:?}: base {base:?}, root {:?}",
                t.callee,
                self.exclusive_root(&base)
            );
        }
        if summary.ret_exclusive {
            self.exclusive_root(&base)?;
        } else if !base.proj.iter().any(|p| matches!(p, ProjKey::Via(_))) {
            // Only what is derived from an exclusive place needs naming
            // (to be told from that place); elsewhere the result stays as
            // unknown as before.
            return None;
        }
        Some(base.with(ProjKey::Via(t.callee.0)))
    }

    /// The local holding the `&mut` a place is behind, if facts about it
    /// can be kept: the place is behind a `&mut` the local holds (itself,
    /// or as the payload of an `Option` or `Result`, what a lookup
    /// returns), and the local's own address is never taken (only
    /// assignments change what it holds).
    fn exclusive_root(&self, base: &PlaceKey) -> Option<LocalId> {
        let l = base.local;
        let deref = base.proj.iter().position(|p| *p == ProjKey::Deref)?;
        let pointer = self.key_ty(l, &base.proj[..deref])?;
        let unique = self
            .dump
            .ty(pointer)
            .is_some_and(|t| matches!(t.kind, TyKind::Ref { mutable: true, .. }));
        (unique && !self.address_taken.contains(&l) && !self.escaped.contains(&l)).then_some(l)
    }

    /// The type of local `l` through field and variant projections, as far
    /// as the dump's types show it without a definition's generic
    /// parameters: the payload of `Option::Some`, `Result::Ok`/`Err`, and
    /// tuple fields.
    fn key_ty(&self, l: LocalId, proj: &[ProjKey]) -> Option<kmir::TyId> {
        let mut ty = self.body.local(l)?.ty;
        let mut variant = None;
        for p in proj {
            match *p {
                ProjKey::Downcast(v) => variant = Some(v),
                ProjKey::Field(i) => {
                    ty = match &self.dump.ty(ty)?.kind {
                        TyKind::Tuple(elems) => *elems.get(i as usize)?,
                        TyKind::Adt { path, args } => {
                            let arg = match (path.as_str(), variant, i) {
                                ("core::option::Option", Some(1), 0) => 0,
                                ("core::result::Result", Some(0), 0) => 0,
                                ("core::result::Result", Some(1), 0) => 1,
                                _ => return None,
                            };
                            *args.get(arg)?
                        }
                        _ => return None,
                    };
                    variant = None;
                }
                ProjKey::Deref | ProjKey::Via(_) | ProjKey::Below | ProjKey::Handle => return None,
            }
        }
        Some(ty)
    }

    /// The facts about exclusive accessor places that the call or drop
    /// ending `block` leaves true, read before it runs.
    pub(super) fn accessor_facts_kept(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        targets: &[Target],
    ) -> Vec<PlaceFacts> {
        let kept = self.exclusive_facts(facts, |root, handle, place| {
            self.call_keeps(facts, terminator, targets, root, handle, Some(place))
        });
        if self.trace && !facts.via_places().is_empty() {
            eprintln!(
                "[kanalyze trace] exclusive places {:?}, kept {:?}",
                facts.via_places(),
                kept.iter().map(|k| (&k.0, k.3)).collect::<Vec<_>>()
            );
        }
        kept
    }

    /// The facts about exclusive accessor places that an assignment to
    /// `written` (through a pointer) leaves true, read before it runs: a
    /// write into another exclusive field of the handle, or into memory no
    /// pointer derived from the handle reaches, cannot change them.
    pub(super) fn accessor_facts_kept_at(
        &self,
        facts: &Facts,
        written: &kmir::Place,
    ) -> Vec<PlaceFacts> {
        let Some(w) = PlaceKey::of(written).map(|k| facts.normalize_fully(&k)) else {
            return Vec::new();
        };
        self.exclusive_facts(facts, |root, handle, place| {
            match relation(&w, root, handle, Some(place), &|x, y| {
                self.disjoint_accessors(x, y)
            }) {
                Some(reaches) => !reaches,
                None => self
                    .derived_from(root)
                    .is_some_and(|d| !d.contains(&written.local)),
            }
        })
    }

    /// The locals pointing at exclusive places (or at places an accessor
    /// returned below one) whose handle the call or drop ending a block
    /// cannot change: they still point at what the accessor would return.
    pub(super) fn accessor_refs_kept(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        targets: &[Target],
    ) -> Vec<(LocalId, PlaceKey)> {
        // A local the terminator gives a new value (not one it writes
        // through).
        let written = match terminator {
            TerminatorKind::Call { destination: p, .. } | TerminatorKind::Drop { place: p, .. }
                if !p.projection.contains(&kmir::Projection::Deref) =>
            {
                Some(p.local)
            }
            _ => None,
        };
        facts
            .via_refs()
            .into_iter()
            .filter(|(l, _)| Some(*l) != written)
            .filter(|(_, k)| {
                self.first_exclusive(k).is_some_and(|(root, handle)| {
                    self.call_keeps(facts, terminator, targets, root, &handle, None)
                })
            })
            .collect()
    }

    /// [`Self::accessor_refs_kept`] for an assignment to `written` through
    /// a pointer.
    pub(super) fn accessor_refs_kept_at(
        &self,
        facts: &Facts,
        written: &kmir::Place,
    ) -> Vec<(LocalId, PlaceKey)> {
        let Some(w) = PlaceKey::of(written).map(|k| facts.normalize_fully(&k)) else {
            return Vec::new();
        };
        facts
            .via_refs()
            .into_iter()
            .filter(|(_, k)| {
                self.first_exclusive(k).is_some_and(|(root, handle)| {
                    match relation(&w, root, &handle, None, &|x, y| {
                        self.disjoint_accessors(x, y)
                    }) {
                        Some(reaches) => !reaches,
                        None => self
                            .derived_from(root)
                            .is_some_and(|d| !d.contains(&written.local)),
                    }
                })
            })
            .collect()
    }

    /// The `&mut` local and the handle of the exclusive place a place is
    /// at or below (its first `Via` is an exclusive accessor's).
    fn first_exclusive(&self, k: &PlaceKey) -> Option<(LocalId, PlaceKey)> {
        let at = k.proj.iter().position(|p| matches!(p, ProjKey::Via(_)))?;
        self.exclusive_place(&PlaceKey {
            local: k.local,
            proj: k.proj[..=at].to_vec(),
        })
    }

    /// Whether, on a path with `facts`, what the call or drop ending a block
    /// releases is kept alive by a sharing clone of it stored in an
    /// exclusive place the release cannot reach: `*info.death() =
    /// Some(death.clone())`, then `death` handed to `set_dead` (Binder's
    /// `request_death`, process.rs:1312-1314). Each released local holds,
    /// through moves only, the value of a local given one value; the place
    /// holds what a store put there from a local whose every value is a
    /// sharing clone of that value, and the facts kept it since.
    pub(super) fn stored_clone_backs(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        targets: &[Target],
        last_from: Option<&[u32]>,
    ) -> bool {
        let Some(released) = super::origins::released_locals(terminator, last_from) else {
            return false;
        };
        let places = facts.via_places();
        released.iter().all(|&r| {
            let Some(x) = super::origins::moved_from(self.body, r) else {
                return false;
            };
            places.iter().any(|place| {
                let Some((root, handle)) = self.exclusive_place(place) else {
                    return false;
                };
                facts
                    .holds(place)
                    .is_some_and(|y| self.origins.holds_only_clones_of(y, x))
                    && self.call_keeps(facts, terminator, targets, root, &handle, Some(place))
            })
        })
    }

    /// The `&mut` local and the handle an exclusive place (what an exclusive
    /// accessor returned, one step below the handle) is under.
    fn exclusive_place(&self, place: &PlaceKey) -> Option<(LocalId, PlaceKey)> {
        let vias: Vec<usize> = place
            .proj
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p, ProjKey::Via(_)))
            .map(|(i, _)| i)
            .collect();
        let [at] = vias[..] else {
            return None;
        };
        let Some(ProjKey::Via(id)) = place.proj.get(at) else {
            return None;
        };
        if at + 1 != place.proj.len() || !self.summary_of.get(program::FnId(*id)).ret_exclusive {
            return None;
        }
        let handle = PlaceKey {
            local: place.local,
            proj: place.proj[..at].to_vec(),
        };
        Some((self.exclusive_root(&handle)?, handle))
    }

    /// The facts under each exclusive accessor place (one step from a handle
    /// behind a `&mut` local) for which `keep(root, handle, place)` holds.
    fn exclusive_facts(
        &self,
        facts: &Facts,
        keep: impl Fn(LocalId, &PlaceKey, &PlaceKey) -> bool,
    ) -> Vec<PlaceFacts> {
        let places = facts.via_places();
        if places.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for place in places {
            let Some((root, handle)) = self.exclusive_place(&place) else {
                continue;
            };
            if !keep(root, &handle, &place) {
                continue;
            }
            // Facts behind pointers stored in the place are about other
            // memory.
            let shallow = |s: &[ProjKey]| !s.iter().any(|p| matches!(p, ProjKey::Deref));
            let known: Vec<_> = facts
                .known_under(&place)
                .into_iter()
                .filter(|(s, _, _)| shallow(s))
                .collect();
            let addrs: Vec<_> = facts
                .addrs_under(&place)
                .into_iter()
                .filter(|(s, _)| shallow(s))
                .collect();
            // What a store put there, unless a call may change that local.
            let holds = facts
                .holds(&place)
                .filter(|l| !self.escaped.contains(l) && !self.address_taken.contains(l));
            if !known.is_empty() || !addrs.is_empty() || holds.is_some() {
                out.push((place, known, addrs, holds));
            }
        }
        out
    }

    /// Whether the call or drop ending a block cannot write `place` (an
    /// exclusive place below `handle`, which is behind the `&mut` local
    /// `root`).
    fn call_keeps(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        targets: &[Target],
        root: LocalId,
        handle: &PlaceKey,
        place: Option<&PlaceKey>,
    ) -> bool {
        let derived = self.derived_from(root);
        let Some(derived) = derived.as_deref() else {
            // A pointer derived from the handle may be anywhere.
            return false;
        };
        let from_root = |op: &Operand| {
            let mut ls = Vec::new();
            kmir::visit::operand_locals(op, &mut ls);
            ls.iter().any(|l| *l == root || derived.contains(l))
        };
        // What an operand lets the callee reach of the place: nothing, or
        // something only the write summary can tell.
        let reaches = |op: &Operand| -> bool {
            if read_only_operand(self.dump, self.body, op) {
                return false;
            }
            match facts.pointee(op).and_then(|k| {
                relation(&facts.normalize_fully(&k), root, handle, place, &|x, y| {
                    self.disjoint_accessors(x, y)
                })
            }) {
                Some(reaches) => reaches,
                // A pointer the facts place elsewhere, or none.
                None => from_root(op),
            }
        };
        match terminator {
            TerminatorKind::Call {
                args,
                destination,
                callee,
                ..
            } => {
                if destination.local == root {
                    return false;
                }
                // A result written through a pointer.
                if destination.projection.contains(&kmir::Projection::Deref)
                    && PlaceKey::of(destination)
                        .and_then(|k| {
                            relation(&facts.normalize_fully(&k), root, handle, place, &|x, y| {
                                self.disjoint_accessors(x, y)
                            })
                        })
                        .unwrap_or(true)
                {
                    return false;
                }
                if let kmir::Callee::Indirect { operand, .. } = callee
                    && reaches(operand)
                {
                    return false;
                }
                args.iter().enumerate().all(|(k, op)| {
                    !reaches(op)
                        || (!targets.is_empty()
                            && targets.iter().all(|t| {
                                self.summary_of
                                    .get(t.callee)
                                    .writes
                                    .as_ref()
                                    .is_some_and(|w| w.iter().all(|(j, _)| *j as usize != k))
                            }))
                })
            }
            TerminatorKind::Drop { place: dropped, .. } => {
                let Some(k) = PlaceKey::of(dropped).map(|k| facts.normalize_fully(&k)) else {
                    return false;
                };
                // The `&mut` itself, a local derived from it, or the handle,
                // the place, or what contains them.
                !((k.local == root && k.proj.is_empty())
                    || (derived.contains(&k.local) && !k.starts_with(handle))
                    || relation(&k, root, handle, place, &|x, y| {
                        self.disjoint_accessors(x, y)
                    })
                    .unwrap_or(false))
            }
            _ => false,
        }
    }
}

/// Whether a pointer to `k` reaches the exclusive `place` one step below
/// `handle` (behind the `&mut` local `root`), when the keys can tell: the
/// place itself or memory inside it, the handle or memory containing it,
/// part of the handle, or the local itself do; another exclusive field of
/// the handle (`Via` another accessor) does not. `None`: `k` is not placed
/// relative to the handle.
///
/// Without a place: whether it reaches the handle's own memory (what makes
/// the places below it other places).
fn relation(
    k: &PlaceKey,
    root: LocalId,
    handle: &PlaceKey,
    place: Option<&PlaceKey>,
    disjoint: &dyn Fn(u32, u32) -> bool,
) -> Option<bool> {
    if let Some(place) = place
        && (k.starts_with(place) || place.starts_with(k))
    {
        return Some(true);
    }
    if handle.starts_with(k) {
        return Some(true);
    }
    if k.starts_with(handle) {
        let Some(ProjKey::Via(x)) = k.proj.get(handle.proj.len()) else {
            return Some(true);
        };
        // Below another accessor's place: that field, which is the place's
        // own unless the two accessors are known to return different ones.
        return Some(match place.and_then(|p| p.proj.get(handle.proj.len())) {
            Some(ProjKey::Via(y)) => !disjoint(*x, *y),
            _ => false,
        });
    }
    (k.local == root).then_some(true)
}
