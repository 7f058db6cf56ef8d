//! Facts about a lock's data while its guard holds it.
//!
//! `inner.current.take()` leaves `None` in the data of the lock `inner`
//! guards; `inner.current = next` a few calls later drops what the field
//! holds. Memory reached through pointers is forgotten at every call, so
//! without more the store looks like it may drop a reference, under the
//! lock (Binder's `Thread::transaction_inner`, thread.rs:1391-1392).
//!
//! While a guard holds its lock, no other thread can change the data (each
//! needs the lock), and this thread changes it only through pointers
//! derived from the guard: its views (`Deref::deref(&g)`,
//! `DerefMut::deref_mut(&mut g)`) and what is derived from them, or the
//! guard itself lent to a callee. So the facts about the data (kept under a
//! pseudo-local of their own, `memory::guard_data`, which every view points
//! at) survive a call when
//!
//! * the call is given neither the guard nor a pointer to it (except a view
//!   of it): `CondVar::wait(&mut g)` and `do_unlocked` release the lock
//!   while they run, and a helper given the guard may write through it;
//! * the write summary of the call (the mod/ref scan of `writes`, which
//!   maps each callee's writes through the pointers it is given) does not
//!   write the place a fact is about, at, above or below it, inside a cell
//!   or not;
//! * no pointer into the data was stored into memory the scan does not
//!   follow (an argument's), from where a later callee could write it.
//!
//! The facts are forgotten where the guard stops holding the lock as it
//! did: a drop, a move or a new value of the guard local, the end of its
//! storage, a mutable borrow of it that is not a view's, inline assembly.
//! Facts about memory behind a pointer stored in the data are not kept:
//! the lock protects the data, not what it points to.
//!
//! Trust assumption (docs/preemption.md, "Facts about a lock's data while
//! its guard holds it"): code holding no guard of a lock does not write its
//! data (unsafe code could, through a raw pointer kept from before, which
//! the kernel's lock types forbid).

use kmir::{BlockId, Operand, Place, Projection, Rvalue, Statement, StatementKind, TerminatorKind};
use memory::{Facts, PlaceKey, ProjKey, guard_data};

use super::BodyAnalysis;
use super::writes::Root;
use crate::summary::FieldPath;

impl BodyAnalysis<'_> {
    /// The guard local a call ending `block` views (its destination points
    /// at that guard's data).
    pub(crate) fn view_of(&self, block: BlockId) -> Option<kmir::LocalId> {
        self.origins.guards().views.get(&block).copied()
    }

    /// The guards whose data statement `st` stops describing: it writes,
    /// moves, mutably borrows (for anything but a view) or ends the guard.
    pub(super) fn guards_released_by(&self, st: &Statement) -> Vec<kmir::LocalId> {
        let guards = self.origins.guards();
        if guards.locals.is_empty() {
            return Vec::new();
        }
        guards
            .locals
            .iter()
            .copied()
            .filter(|&g| match &st.kind {
                StatementKind::Assign { place, rvalue } => {
                    place.local == g
                        || (!guards.view_borrows.contains(&place.local)
                            || !place.projection.is_empty())
                            && rvalue_releases(rvalue, g)
                }
                StatementKind::StorageDead(l) | StatementKind::StorageLive(l) => *l == g,
                StatementKind::SetDiscriminant { place, .. } => place.local == g,
                StatementKind::Intrinsic { operands, .. } => {
                    operands.iter().any(|o| operand_mentions(o, g))
                }
            })
            .collect()
    }

    /// The guards whose data the call or drop ending `block` may change in
    /// ways the write summaries do not describe: it is given the guard (or
    /// a pointer to it) for anything but a view, or it is inline assembly.
    pub(super) fn guards_released_at(
        &self,
        block: BlockId,
        terminator: &TerminatorKind,
    ) -> Vec<kmir::LocalId> {
        let guards = self.origins.guards();
        if guards.locals.is_empty() {
            return Vec::new();
        }
        let view = self.view_of(block);
        guards
            .locals
            .iter()
            .copied()
            .filter(|&g| match terminator {
                TerminatorKind::Drop { place, .. } => {
                    place.local == g
                        || self.origins.writes.may_point_to_local(
                            self.dump,
                            &Operand::Copy(place.clone()),
                            g,
                        )
                }
                TerminatorKind::Call {
                    args,
                    callee,
                    destination,
                    ..
                } => {
                    if view == Some(g) {
                        return false;
                    }
                    let indirect = match callee {
                        kmir::Callee::Indirect { operand, .. } => Some(operand),
                        _ => None,
                    };
                    destination.local == g
                        || args.iter().chain(indirect).any(|op| {
                            operand_mentions(op, g)
                                || self.origins.writes.may_point_to_local(self.dump, op, g)
                        })
                }
                TerminatorKind::InlineAsm { .. } => true,
                _ => false,
            })
            .collect()
    }

    /// The facts about guards' data that the call or drop ending `block`
    /// leaves true, read before it runs: those of every guard it does not
    /// release, outside the places the block's writes (its statements', and
    /// the call's by its write summary) may change, and not behind a pointer
    /// stored in the data.
    pub(super) fn guard_data_kept(
        &self,
        facts: &Facts,
        block: BlockId,
        terminator: &TerminatorKind,
    ) -> Vec<super::PlaceFacts> {
        let guards = self.origins.guards();
        if guards.locals.is_empty() {
            return Vec::new();
        }
        let released = self.guards_released_at(block, terminator);
        let mut out = Vec::new();
        for &g in &guards.locals {
            if released.contains(&g) {
                continue;
            }
            let written = self
                .origins
                .writes
                .written_in(Root::Guard(g), block)
                .or_else(|| self.written_before_escapes(g, block));
            if self.trace {
                eprintln!(
                    "[kanalyze trace] bb{block}: guard _{g}'s data may be written at {:?}",
                    written
                        .as_ref()
                        .map(|w| w.iter().map(FieldPath::describe).collect::<Vec<_>>())
                );
            }
            let Some(written) = written else {
                continue;
            };
            let root = PlaceKey::local(guard_data(g));
            // What the call is lent of the data it may write only where its
            // write summary says (mapped through the pointers it is given).
            // A write inside a cell changes only a place inside that cell.
            let keep = |suffix: &[ProjKey]| {
                let at = field_path(suffix);
                !suffix
                    .iter()
                    .any(|p| matches!(p, ProjKey::Deref | ProjKey::Via(_)))
                    && !written.iter().any(|w| {
                        w.overlaps(&at) && (!w.interior() || self.origins.writes.in_cell(g, &at))
                    })
            };
            let known: Vec<_> = facts
                .known_under(&root)
                .into_iter()
                .filter(|(s, _, _)| keep(s))
                .collect();
            let addrs: Vec<_> = facts
                .addrs_under(&root)
                .into_iter()
                .filter(|(s, _)| keep(s))
                .collect();
            if !known.is_empty() || !addrs.is_empty() {
                out.push((root, known, addrs, None));
            }
        }
        out
    }
}

impl BodyAnalysis<'_> {
    /// Where the call ending `block` may write guard `g`'s data when a
    /// pointer into it escaped somewhere in the body, but on no way to
    /// `block`: the stores that let a callee write the data behind the
    /// scan's back come later, so here the write summaries still say all.
    fn written_before_escapes(&self, g: kmir::LocalId, block: BlockId) -> Option<Vec<FieldPath>> {
        let escapes = self.origins.writes.escapes_of(g)?;
        let later = escapes.iter().all(|&e| {
            !super::origins::reached_after(self.body, e)
                .get(block as usize)
                .copied()
                .unwrap_or(true)
        });
        if !later {
            return None;
        }
        self.origins
            .writes
            .written_in_ignoring_escapes(Root::Guard(g), block)
    }
}

/// The path of a place below a guard's data, as the write summaries spell
/// it (exact; cut short, and then "below", past `FieldPath::MAX` steps).
fn field_path(suffix: &[ProjKey]) -> FieldPath {
    let mut p = FieldPath::AT;
    for s in suffix {
        p = match s {
            ProjKey::Field(i) => p.field(*i),
            ProjKey::Downcast(v) => p.variant(*v),
            ProjKey::Deref | ProjKey::Via(_) | ProjKey::Below | ProjKey::Handle => p.below(),
        };
    }
    p
}

/// Whether an operand reads or moves local `g` itself (not through a
/// pointer stored in it).
fn operand_mentions(op: &Operand, g: kmir::LocalId) -> bool {
    matches!(op, Operand::Copy(p) | Operand::Move(p) if on_local(p, g))
}

fn on_local(p: &Place, g: kmir::LocalId) -> bool {
    p.local == g && !p.projection.contains(&Projection::Deref)
}

/// Whether an rvalue moves guard `g`, or borrows it mutably or by raw
/// pointer (a shared borrow lends nothing that can release the lock or
/// write the data, but it is given to calls, which the terminator check
/// sees). The mutable cases are object liveness's own test of a kill.
fn rvalue_releases(rvalue: &Rvalue, g: kmir::LocalId) -> bool {
    let on_g = |p: &Place| on_local(p, g);
    let moves = |op: &Operand| matches!(op, Operand::Move(p) if on_g(p));
    super::origins::rvalue_takes(rvalue, &on_g, &moves)
        || matches!(rvalue, Rvalue::AddressOf { place, .. } if on_g(place))
}
