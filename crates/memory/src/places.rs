//! Abstract locations of places in one body, and the translation of a
//! callee's lock paths into the caller's terms at a call site.

use kmir::{Body, ConstValue, CrateDump, LocalId, Operand, Place, Projection, TyId};

use crate::facts::{Facts, PlaceKey, ProjKey};
use crate::location::{Location, Root, Step};

/// Library types that are a pointer (their one field is, or wraps, the
/// raw pointer): following them is following the pointer.
const POINTER_NEWTYPES: &[&str] = &[
    "core::ptr::non_null::NonNull",
    "core::ptr::unique::Unique",
    "alloc::boxed::Box",
    "kernel::alloc::kbox::Box",
];

/// What a body needs to name the memory its places denote.
pub struct Places<'a> {
    pub dump: &'a CrateDump,
    pub body: &'a Body,
    pub func: &'a str,
    /// Arguments never overwritten in the body: what they point to on entry
    /// is what they point to everywhere.
    stable_args: Vec<LocalId>,
}

impl<'a> Places<'a> {
    pub fn new(dump: &'a CrateDump, body: &'a Body, func: &'a str) -> Self {
        // A `&mut` borrow of an argument does not count: a guard lent out
        // (`access_mut(&mut guard)`) keeps pointing to its lock (the same
        // assumption as for escaped locals in `Facts::forget_memory`).
        let stable_args = kmir::visit::unwritten_args(body);
        Places {
            dump,
            body,
            func,
            stable_args,
        }
    }

    fn ty_display(&self, ty: TyId) -> String {
        self.dump
            .ty(ty)
            .map_or_else(|| "?".to_string(), |t| t.display.to_string())
    }

    /// The memory of local `local` itself.
    pub fn root(&self, local: LocalId) -> Option<Location> {
        let ty = self.body.local(local)?.ty;
        let ty = self.ty_display(ty);
        let root = if (1..=self.body.arg_count).contains(&local) {
            Root::Arg { index: local, ty }
        } else {
            Root::Local {
                func: self.func.to_string(),
                local,
                ty,
            }
        };
        Some(Location::new(root))
    }

    fn pointee_ty(&self, ty: TyId) -> Option<TyId> {
        self.dump.pointee(ty)
    }

    fn field_step(&self, owner: TyId, variant: Option<u32>, index: u32) -> Step {
        let owner_display = self.ty_display(owner);
        let name = match self.dump.ty(owner).map(|t| &t.kind) {
            Some(kmir::TyKind::Adt { path, .. }) => self
                .dump
                .adt(path)
                .and_then(|a| a.variants.get(variant.unwrap_or(0) as usize))
                .and_then(|v| v.fields.get(index as usize))
                .map(|f| f.name.to_string()),
            _ => None,
        };
        Step::Field {
            index,
            owner: owner_display,
            name: name.unwrap_or_else(|| index.to_string()),
        }
    }

    /// Where the pointer stored at `key` (whose own location is `loc`)
    /// points: a recorded fact, or for an argument that never changes, "its
    /// pointee on entry".
    pub fn pointee(
        &self,
        facts: &Facts,
        key: &PlaceKey,
        loc: Option<&Location>,
        deref: Step,
    ) -> Option<Location> {
        if let Some(l) = facts.addr(key) {
            return Some(l.clone());
        }
        let loc = loc?;
        match loc.root {
            Root::Arg { index, .. } if self.stable_args.contains(&index) => {
                return loc.with(deref);
            }
            _ => {}
        }
        // A copy of an argument (`_6 = move _2`): the argument's pointee.
        let canon = facts.normalize_fully(key);
        if canon.local != key.local
            && self.stable_args.contains(&canon.local)
            && canon.proj.ends_with(&key.proj)
        {
            let prefix = &canon.proj[..canon.proj.len() - key.proj.len()];
            let mut path = self.root(canon.local)?;
            for p in prefix {
                path = path.with(match p {
                    ProjKey::Field(i) => Step::Field {
                        index: *i,
                        owner: "?".to_string(),
                        name: i.to_string(),
                    },
                    ProjKey::Downcast(v) => Step::Downcast(*v),
                    ProjKey::Deref | ProjKey::Via(_) | ProjKey::Below | ProjKey::Handle => {
                        return None;
                    }
                })?;
            }
            return path.extended(&loc.steps)?.with(deref);
        }
        None
    }

    /// The abstract location of `place`'s memory.
    pub fn location(&self, facts: &Facts, place: &Place) -> Option<Location> {
        if place.local == crate::ENTRY_ARG0 {
            return None;
        }
        let mut key = PlaceKey::local(place.local);
        let mut loc = self.root(place.local)?;
        let mut ty = self.body.local(place.local)?.ty;
        let mut variant = None;
        for p in &place.projection {
            match p {
                Projection::Deref => {
                    let to = self.pointee_ty(ty)?;
                    let step = Step::Deref {
                        to: self.ty_display(to),
                    };
                    loc = self.pointee(facts, &key, Some(&loc), step)?;
                    key.proj.push(ProjKey::Deref);
                    ty = to;
                    variant = None;
                }
                Projection::Field { index, ty: fty } => {
                    loc = loc.with(self.field_step(ty, variant, *index))?;
                    key.proj.push(ProjKey::Field(*index));
                    ty = *fty;
                    variant = None;
                }
                Projection::Downcast { variant: v } => {
                    loc = loc.with(Step::Downcast(*v))?;
                    key.proj.push(ProjKey::Downcast(*v));
                    variant = Some(*v);
                }
                Projection::OpaqueCast(t) => ty = *t,
                Projection::Index(_)
                | Projection::ConstantIndex { .. }
                | Projection::Subslice { .. } => return None,
            }
        }
        Some(loc)
    }

    /// Where the pointer value of `operand` points.
    pub fn operand_pointee(&self, facts: &Facts, operand: &Operand) -> Option<Location> {
        match operand {
            Operand::Copy(p) | Operand::Move(p) => {
                let key = PlaceKey::of(p)?;
                let loc = self.location(facts, p);
                let ty = self.place_ty(p)?;
                let to = self.pointee_ty(ty)?;
                self.pointee(
                    facts,
                    &key,
                    loc.as_ref(),
                    Step::Deref {
                        to: self.ty_display(to),
                    },
                )
            }
            Operand::Constant(c) => match &c.value {
                ConstValue::Memory(m) if m.statics.len() == 1 => {
                    Some(Location::new(Root::Static(m.statics[0].to_string())))
                }
                _ => None,
            },
            Operand::RuntimeChecks(_) => None,
        }
    }

    pub fn place_ty(&self, place: &Place) -> Option<TyId> {
        self.dump.place_ty(self.body, place)
    }

    /// The pointers stored inside the value of `operand`, by projection.
    pub fn operand_addrs(&self, facts: &Facts, operand: &Operand) -> Vec<(Vec<ProjKey>, Location)> {
        match operand {
            Operand::Copy(p) | Operand::Move(p) => {
                let Some(key) = PlaceKey::of(p) else {
                    return Vec::new();
                };
                let mut out = facts.addrs_under(&key);
                // A pointer-typed operand with no recorded fact may still
                // have a known pointee (a stable argument).
                if !out.iter().any(|(s, _)| s.is_empty())
                    && let Some(ty) = self.place_ty(p)
                    && self.is_pointer(ty)
                    && let Some(l) = self.operand_pointee(facts, operand)
                {
                    out.push((Vec::new(), l));
                }
                out
            }
            Operand::Constant(_) => self
                .operand_pointee(facts, operand)
                .map(|l| vec![(Vec::new(), l)])
                .unwrap_or_default(),
            Operand::RuntimeChecks(_) => Vec::new(),
        }
    }

    /// References, raw pointers, and the library's pointer newtypes
    /// (`NonNull`, `Box`, `Unique`), which hold one.
    fn is_pointer(&self, ty: TyId) -> bool {
        match self.dump.ty(ty).map(|t| &t.kind) {
            Some(kmir::TyKind::Ref { .. } | kmir::TyKind::RawPtr { .. }) => true,
            Some(kmir::TyKind::Adt { path, .. }) => POINTER_NEWTYPES.contains(&path.as_str()),
            _ => false,
        }
    }

    /// A callee's lock path in the caller's terms, at a call (`args`) or a
    /// drop of `dropped` (whose glue gets a pointer to it as argument 1).
    pub fn substitute(
        &self,
        facts: &Facts,
        path: &Location,
        args: &[Operand],
        dropped: Option<&Place>,
    ) -> Option<Location> {
        let index = match &path.root {
            Root::Static(_) => return Some(path.clone()),
            // The callee's own stack: nothing the caller can name.
            Root::Local { .. } => return None,
            Root::Arg { index, .. } => *index,
        };
        let steps = &path.steps;
        // Where the walk is: at a caller place (its key and location), or at
        // an abstract location.
        let (mut key, mut loc, rest): (Option<PlaceKey>, Option<Location>, &[Step]) =
            match (dropped, args.get(index as usize - 1)) {
                (Some(place), _) if index == 1 => {
                    // Argument 1 of a drop glue points to the dropped place.
                    let (Step::Deref { .. }, rest) = steps.split_first()? else {
                        return None;
                    };
                    (PlaceKey::of(place), self.location(facts, place), rest)
                }
                (None, Some(op)) => match op {
                    Operand::Copy(p) | Operand::Move(p) => {
                        (PlaceKey::of(p), self.location(facts, p), &steps[..])
                    }
                    Operand::Constant(_) => {
                        let (Step::Deref { .. }, rest) = steps.split_first()? else {
                            return None;
                        };
                        (None, Some(self.operand_pointee(facts, op)?), rest)
                    }
                    Operand::RuntimeChecks(_) => return None,
                },
                _ => return None,
            };
        for (i, step) in rest.iter().enumerate() {
            let Some(k) = &key else {
                // At an abstract location: the rest is symbolic.
                return loc?.extended(&rest[i..]);
            };
            match step {
                Step::Deref { .. } => {
                    loc = Some(self.pointee(facts, k, loc.as_ref(), step.clone())?);
                    key = None;
                }
                Step::Field { index, .. } => {
                    loc = loc.and_then(|l| l.with(step.clone()));
                    key = Some(k.with(ProjKey::Field(*index)));
                }
                Step::Downcast(v) => {
                    loc = loc.and_then(|l| l.with(step.clone()));
                    key = Some(k.with(ProjKey::Downcast(*v)));
                }
            }
        }
        loc
    }
}
