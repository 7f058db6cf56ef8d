//! The one rule that discharges a release: a drop (or a call that may
//! drop what it is given) is not the last reference to an object when
//! another place holds the same object, with a count of its own, and is
//! alive and unchanged from where that was learnt to the release.
//!
//! "Unchanged" is the object facts' business (a change of a place kills
//! every fact naming it, `memory::objects`); "alive" is decided here from
//! how the place is reached: a local or argument of the function, the data
//! of a lock a guard still holds, memory a reference argument borrows, an
//! object a live handle counts. Each discharge says why ([`Proof`]).

use kmir::{TerminatorKind, TyKind};
use memory::{Bounds, Facts, FieldId, Holder, PlaceKey, ProjKey};

use super::transfer::Frame;
use super::types::is_reference;
use crate::body::BodyAnalysis;
use crate::summary::Summary;

/// Why a release cannot be the last reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Proof {
    /// What is released refers to no object (a `None`, a value moved out).
    Nothing,
    /// Every object it refers to is held by one of these places, each
    /// alive and unchanged since.
    HeldBy(Vec<Holder>),
    /// It was taken out of a field declared to keep its objects alive.
    Declared(FieldId),
}

impl Proof {
    pub fn describe(&self) -> String {
        match self {
            Proof::Nothing => "it refers to no object here".to_string(),
            Proof::HeldBy(hs) => format!(
                "every object it refers to is also held by {}",
                hs.iter()
                    .map(super::contract::describe_holder)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            Proof::Declared(f) => format!(
                "it was taken out of field {} of `{}`, declared to keep its objects alive elsewhere",
                f.index, f.owner
            ),
        }
    }
}

impl BodyAnalysis<'_> {
    /// Whether the place a holder names is alive here: reached from a
    /// local, an argument, a held lock's data, through references an
    /// argument lends and handles that count their objects.
    pub(crate) fn alive(&self, q: &PlaceKey) -> bool {
        if memory::is_guard_data(q.local) {
            // Only `Deref`s of handles inside the data.
            return self.alive_below(q, 0, true);
        }
        if q.local >= super::contract::RELEASED {
            return false;
        }
        let arg = (1..=self.body.arg_count).contains(&q.local);
        self.alive_below(q, 0, arg)
    }

    /// `q`'s dereferences from step `from` on, starting in memory that is
    /// alive (`lent`: memory an argument lends, where a reference stored
    /// lives as long as the call).
    fn alive_below(&self, q: &PlaceKey, from: usize, lent: bool) -> bool {
        let mut lent = lent;
        for i in from..q.proj.len() {
            if q.proj[i] != ProjKey::Deref {
                continue;
            }
            let pointer = PlaceKey {
                local: q.local,
                proj: q.proj[..i].to_vec(),
            };
            // A pointer in a held lock's data (an `RBTree`'s, a `KVec`'s)
            // leads to memory the data owns: alive while the data holds it
            // (the lock protects it; see `body::guard_data`).
            if memory::is_guard_data(q.local) && lent && self.is_raw_pointer(&pointer) {
                continue;
            }
            let Some(ty) = self.object_place_ty(&pointer) else {
                return false;
            };
            if is_reference(self.dump, ty) {
                // A reference the caller lends (an argument, or stored in
                // memory it lends): borrowed for the whole call.
                if !(lent || (i == 0 && (1..=self.body.arg_count).contains(&q.local))) {
                    return false;
                }
                lent = true;
                continue;
            }
            // An object counted by a handle the facts still name (a change
            // of the handle ends them): the handle itself, or its one
            // pointer (`(*(*h).ptr)`).
            let handle = self.lift(&pointer);
            let counted = |t: kmir::TyId| {
                matches!(self.dump.ty(t).map(|t| &t.kind), Some(TyKind::Adt { .. }))
                    && !super::types::is_plain_pointer(self.dump, t)
            };
            if !(counted(ty)
                || (handle != pointer && self.object_place_ty(&handle).is_some_and(counted)))
            {
                return false;
            }
        }
        true
    }

    /// Whether holder `h` keeps what it holds alive across the release of
    /// the values at `released` (and, for a call, across the call).
    fn backs(
        &self,
        h: &Holder,
        released: &[PlaceKey],
        frame: Option<&Frame>,
        facts: &Facts,
    ) -> bool {
        match h {
            // The object's own memory: alive while the way to it is (its
            // contents may change; which object it is does not).
            Holder::Object(q) => {
                !released
                    .iter()
                    .any(|r| q.starts_with(r) || r.starts_with(q))
                    && self.alive(q)
            }
            Holder::At(q) | Holder::Within(q) => {
                let why = if released
                    .iter()
                    .any(|r| r.starts_with(q) || q.starts_with(r))
                {
                    "it is released too"
                } else if frame.is_some_and(|f| {
                    f.may_change(q, facts, &self.escaped, &|a, b| self.apart(a, b))
                }) {
                    "the call may change it"
                } else if !self.alive(q) {
                    "its memory is not known to stay alive"
                } else {
                    return true;
                };
                if self.trace {
                    eprintln!(
                        "[kanalyze trace]   holder {} does not back the release: {why}{}",
                        super::contract::describe_holder(h),
                        match frame {
                            Some(f) => format!(
                                " (the call writes {:?}, through pointers in {:?})",
                                f.writes, f.through
                            ),
                            None => String::new(),
                        }
                    );
                }
                false
            }
            Holder::Taken(f) => self.kept_alive.contains(f),
            Holder::Entry(_) => false,
        }
    }

    /// A proof that releasing values bounded by `bounds` releases no last
    /// reference.
    fn discharge_bounds(
        &self,
        bounds: &Bounds,
        released: &[PlaceKey],
        frame: Option<&Frame>,
        facts: &Facts,
    ) -> Option<Proof> {
        for b in bounds.iter() {
            if b.is_empty() {
                return Some(Proof::Nothing);
            }
            if b.iter().all(|h| self.backs(h, released, frame, facts)) {
                if let [Holder::Taken(f)] = b.as_slice() {
                    return Some(Proof::Declared(f.clone()));
                }
                return Some(Proof::HeldBy(b.clone()));
            }
        }
        None
    }

    /// What the call or drop at this site may release as a last
    /// reference, in this function's terms: each entry must be held
    /// elsewhere. `None`: anything.
    pub(crate) fn released_bounds(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        summary: &Summary,
    ) -> Option<Vec<Bounds>> {
        match terminator {
            // A drop releases at most what the value holds, and only what
            // its glue's contract says (a field of it, say).
            TerminatorKind::Drop { place, .. } => {
                let k = facts.object_key(&PlaceKey::of(place)?);
                // An enum that can only hold variants without fields (its
                // variant tested, or known from the callee that made it,
                // on every path merged here).
                if self.no_payload(facts, &k) {
                    return Some(vec![Bounds::nothing()]);
                }
                if let Some(releases) = &summary.liveness.releases {
                    let mapped: Option<Vec<Bounds>> = releases
                        .iter()
                        .map(|b| {
                            let m = self.map_bounds_at(facts, &k, b);
                            (!m.is_empty()).then_some(m)
                        })
                        .collect();
                    if mapped.is_some() {
                        return mapped;
                    }
                }
                Some(vec![facts.objects().bounds_of(&k)?])
            }
            TerminatorKind::Call { args, .. } => {
                // The elements its predicate rejects, and the predicate
                // itself, which it drops.
                if let Some(k) = summary.liveness.releases_rejected_by {
                    let env = match args.get(k.checked_sub(1)? as usize)? {
                        kmir::Operand::Move(p) | kmir::Operand::Copy(p) => facts
                            .objects()
                            .bounds_of(&facts.object_key(&PlaceKey::of(p)?))?,
                        kmir::Operand::Constant(_) | kmir::Operand::RuntimeChecks(_) => {
                            Bounds::nothing()
                        }
                    };
                    return Some(vec![self.rejected(facts, args, k)?, env]);
                }
                let releases = summary.liveness.releases.as_ref()?;
                releases
                    .iter()
                    .map(|b| {
                        let m = self.map_bounds(facts, args, b, false);
                        (!m.is_empty()).then_some(m)
                    })
                    .collect()
            }
            _ => None,
        }
    }

    /// The proof that this site releases no last reference, if the object
    /// facts of the path give one.
    pub(crate) fn discharge(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        summary: &Summary,
        exclusive: &[PlaceKey],
    ) -> Option<Proof> {
        let released = self.released_bounds(facts, terminator, summary)?;
        let places = self.released_places(facts, terminator);
        let frame = match terminator {
            TerminatorKind::Call { args, .. } => {
                let mut f = self.frame(facts, args, summary);
                f.exclusive = exclusive.to_vec();
                Some(f)
            }
            _ => None,
        };
        let mut held = Vec::new();
        for b in &released {
            match self.discharge_bounds(b, &places, frame.as_ref(), facts)? {
                Proof::HeldBy(hs) => held.extend(hs),
                Proof::Nothing => {}
                Proof::Declared(f) => return Some(Proof::Declared(f)),
            }
        }
        Some(if held.is_empty() {
            Proof::Nothing
        } else {
            held.sort();
            held.dedup();
            Proof::HeldBy(held)
        })
    }

    /// What this site may release, in the function's entry terms (for its
    /// contract): `None` when it names something a caller cannot.
    pub(crate) fn release_in_entry_terms(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        summary: &Summary,
    ) -> Option<Vec<Bounds>> {
        let released = self.released_bounds(facts, terminator, summary)?;
        released
            .iter()
            .map(|b| {
                super::contract::release_in_entry_terms(facts.objects(), b, self.body.arg_count)
            })
            .collect()
    }

    /// What the elements a predicate passed as argument local `k` rejects
    /// refer to, in this function's terms: its contract's facts about its
    /// element (`*_2`) when it returns false, its environment (`*_1`) being
    /// the value passed.
    fn rejected(&self, facts: &Facts, args: &[kmir::Operand], k: u32) -> Option<Bounds> {
        let (kmir::Operand::Move(env) | kmir::Operand::Copy(env)) =
            args.get(k.checked_sub(1)? as usize)?
        else {
            return None;
        };
        let env_ty = self.dump.place_ty(self.body, env)?;
        let env_ty = self.dump.ty(env_ty)?.display.clone();
        let env = facts.object_key(&PlaceKey::of(env)?);
        // The predicate: what the callee calls with a pointer to a value of
        // the environment's type first.
        let mut found: Option<Bounds> = None;
        for t in self.predicates(&env_ty) {
            let c = &self.summary_of.get(t).liveness;
            let element = PlaceKey {
                local: 2,
                proj: vec![ProjKey::Deref],
            };
            let g = c.ret_if.iter().find(|g| g.when == 0 && !g.discr)?;
            let (_, b) = g.bounds.iter().find(|(p, _)| *p == element)?;
            let mapped = b.expand(|h| {
                let at = |p: &PlaceKey| -> Option<PlaceKey> {
                    if p.local != 1 || p.proj.first() != Some(&ProjKey::Deref) {
                        return None;
                    }
                    let mut q = env.clone();
                    q.proj.extend_from_slice(&p.proj[1..]);
                    Some(facts.object_key(&q))
                };
                match h {
                    Holder::At(p) => Some(Bounds::holder(Holder::At(at(p)?))),
                    Holder::Within(p) => Some(Bounds::holder(Holder::Within(at(p)?))),
                    Holder::Object(p) => Some(Bounds::holder(self.object_holder(&at(p)?))),
                    Holder::Taken(_) => Some(Bounds::holder(h.clone())),
                    Holder::Entry(_) => None,
                }
            });
            if mapped.is_empty() {
                return None;
            }
            found = Some(match found {
                None => mapped,
                Some(f) => super::contract::join_bounds(Some(f), Some(mapped))?,
            });
        }
        found
    }
}
