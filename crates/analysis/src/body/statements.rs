//! What a statement does to the value facts, and the type questions it asks.

use kmir::{AggregateKind, BlockId, Place, Rvalue, Statement, StatementKind};

use memory::{Aspect, Facts, Known, PlaceKey, ProjKey, Resolved};

use super::BodyAnalysis;

impl BodyAnalysis<'_> {
    /// The discriminant an aggregate or enum constant gives its destination.
    pub(super) fn adt_discr(&self, rvalue: &Rvalue) -> Option<u128> {
        let (ty, variant) = match rvalue {
            Rvalue::Aggregate {
                kind: AggregateKind::Adt { ty, variant, .. },
                ..
            } => (*ty, *variant),
            Rvalue::Use(kmir::Operand::Constant(c)) => match &c.value {
                kmir::ConstValue::Memory(m) => (c.ty, m.variant?),
                _ => return None,
            },
            _ => return None,
        };
        self.dump.enum_of(ty)?.discriminant(variant)
    }

    /// (`at`: the statement's block and index.)
    pub(super) fn apply_facts(
        &self,
        facts: &mut Facts,
        statement: &Statement,
        at: (BlockId, usize),
    ) {
        match &statement.kind {
            StatementKind::Assign { place, rvalue } => {
                // Pointers in the new value, read before the write.
                let addrs = self.rvalue_addrs(facts, rvalue);
                if let Rvalue::Discriminant(p) = &**rvalue
                    && let (Some(key), Some(discrs)) = (
                        PlaceKey::of(p),
                        self.place_ty(p).and_then(|t| self.enum_discrs(t)),
                    )
                {
                    facts.set_domain(&key, discrs);
                }
                let carried = self.aggregate_known(facts, rvalue);
                // `!b` of a known boolean is known (`if !caller_holds`).
                let negated = self.negated_bool(facts, place, rvalue);
                let rvalue = negated.as_ref().unwrap_or(rvalue);
                // A write through a pointer forgets memory; what only a
                // handle this body holds reaches is kept unless the write
                // may land there.
                let (kept, kept_refs) = if place.projection.contains(&kmir::Projection::Deref) {
                    (
                        self.accessor_facts_kept_at(facts, place),
                        self.accessor_refs_kept_at(facts, place),
                    )
                } else {
                    (Vec::new(), Vec::new())
                };
                let objects = self.objects_plan(facts, place, rvalue, at);
                // A store through references the body can name changes only
                // that place's object facts (a `&mut` is unique, and
                // different places behind it do not overlap).
                let exact = self.exact_store(facts, place);
                let saved = exact.as_ref().map(|_| facts.objects().clone());
                // Where a store through a pointer lands, named before the
                // write forgets what the pointer points to.
                let through = place
                    .projection
                    .contains(&kmir::Projection::Deref)
                    .then(|| PlaceKey::of(place).map(|k| facts.object_key(&k)))
                    .flatten();
                facts.assign(place, rvalue, |r| self.adt_discr(r), &self.escaped);
                if let (Some(key), Some(saved)) = (exact, saved) {
                    let taken = self.field_id(&key);
                    *facts.objects_mut() = saved;
                    facts
                        .objects_mut()
                        .kill_apart(&key, taken, &|a, b| self.apart(a, b));
                }
                let dest = through.or_else(|| PlaceKey::of(place).map(|k| facts.object_key(&k)));
                self.objects_apply(facts, dest, objects);
                super::restore_facts(facts, kept);
                // (The pointer written through keeps its value.)
                for (l, key) in kept_refs {
                    facts.set_points_at(l, key);
                }
                if !carried.is_empty() {
                    facts.set_known_under(place, carried);
                }
                if !addrs.is_empty() {
                    facts.set_addrs(place, addrs);
                }
            }
            StatementKind::SetDiscriminant { place, variant } => {
                let discr = self.place_variant_discr(place, *variant);
                facts.set_discriminant(place, discr, &self.escaped);
            }
            StatementKind::StorageLive(l) | StatementKind::StorageDead(l) => {
                facts.end_storage(*l);
            }
            StatementKind::Intrinsic { name, operands } => {
                // `copy_nonoverlapping` writes through its destination pointer.
                if name == "copy_nonoverlapping" && operands.len() == 3 {
                    facts.forget_memory(&self.escaped);
                }
            }
        }
        // A guard released, moved or lent: its data is no longer this
        // path's to know.
        for g in self.guards_released_by(statement) {
            facts.forget_guard_data(g);
        }
    }

    /// `!b` of a boolean whose value is known, as that constant's negation.
    /// (On integers `!` is bitwise, so only `bool` destinations qualify.)
    pub(super) fn negated_bool(
        &self,
        facts: &Facts,
        place: &Place,
        rvalue: &Rvalue,
    ) -> Option<Rvalue> {
        let Rvalue::UnaryOp {
            op: kmir::UnOp::Not,
            operand,
        } = rvalue
        else {
            return None;
        };
        let ty = self.place_ty(place)?;
        if !matches!(self.dump.ty(ty)?.kind, kmir::TyKind::Bool) {
            return None;
        }
        // A constant, or a place whose value the facts know (a flag a
        // split run fixed on entry).
        let c = match facts.resolve_operand(operand)? {
            Resolved::Const(c) => c,
            r @ Resolved::Key(..) => match facts.value_of(&r)? {
                memory::Known::Is(c) => c,
                _ => return None,
            },
        };
        Some(Rvalue::Use(kmir::Operand::Constant(Box::new(
            kmir::Constant {
                ty,
                value: kmir::ConstValue::Scalar(u128::from(c == 0)),
            },
        ))))
    }

    /// The pointers an rvalue's value holds: a reference's target, a cast
    /// pointer's, and those inside the operands of an aggregate.
    pub(super) fn rvalue_addrs(
        &self,
        facts: &Facts,
        rvalue: &Rvalue,
    ) -> Vec<(Vec<ProjKey>, memory::Location)> {
        match rvalue {
            Rvalue::Ref { place, .. } | Rvalue::AddressOf { place, .. } => self
                .places
                .location(facts, place)
                .map(|l| vec![(Vec::new(), l)])
                .unwrap_or_default(),
            Rvalue::Use(op) => self.places.operand_addrs(facts, op),
            Rvalue::Cast { operand, .. } => self
                .places
                .operand_addrs(facts, operand)
                .into_iter()
                .filter(|(suffix, _)| suffix.is_empty())
                .collect(),
            Rvalue::Aggregate { kind, operands } => {
                let variant = self.enum_variant(kind);
                let mut out = Vec::new();
                for (i, op) in operands.iter().enumerate() {
                    for (suffix, l) in self.places.operand_addrs(facts, op) {
                        out.push((aggregate_field(variant, i, &suffix), l));
                    }
                }
                out
            }
            _ => Vec::new(),
        }
    }

    /// The pointers inside `*args[0]` before the call, when the call
    /// returns a value of the pointee's type.
    pub(super) fn returned_pointee(
        &self,
        facts: &Facts,
        args: &[kmir::Operand],
        destination: &Place,
    ) -> Vec<(Vec<ProjKey>, memory::Location)> {
        let Some(kmir::Operand::Copy(arg) | kmir::Operand::Move(arg)) = args.first() else {
            return Vec::new();
        };
        let (Some(arg_ty), Some(dest_ty)) =
            (self.places.place_ty(arg), self.places.place_ty(destination))
        else {
            return Vec::new();
        };
        let pointee = match self.dump.ty(arg_ty).map(|t| &t.kind) {
            Some(kmir::TyKind::Ref { pointee, .. } | kmir::TyKind::RawPtr { pointee, .. }) => {
                *pointee
            }
            _ => return Vec::new(),
        };
        if pointee != dest_ty {
            return Vec::new();
        }
        let Some(target) = facts.pointee(&args[0]) else {
            return Vec::new();
        };
        facts.addrs_under(&target)
    }

    /// The pointers stored in what a callee returns when its contract says
    /// the result is what a by-value argument held on entry, below fields
    /// and variants only (`Result::unwrap` returns `arg0 as variant 0.0`):
    /// the pointers the caller's facts know below that part of the
    /// argument it passed.
    pub(super) fn returned_payload(
        &self,
        facts: &Facts,
        args: &[kmir::Operand],
        summary: &crate::summary::Summary,
    ) -> Vec<(Vec<ProjKey>, memory::Location)> {
        let Some(ret) = &summary.liveness.ret else {
            return Vec::new();
        };
        let bounds: Vec<_> = ret.iter().collect();
        let [bound] = bounds.as_slice() else {
            return Vec::new();
        };
        let [memory::Holder::Entry(q)] = bound.as_slice() else {
            return Vec::new();
        };
        if q.local == 0
            || !q
                .proj
                .iter()
                .all(|p| matches!(p, ProjKey::Field(_) | ProjKey::Downcast(_)))
        {
            return Vec::new();
        }
        let Some(kmir::Operand::Copy(arg) | kmir::Operand::Move(arg)) =
            args.get(q.local as usize - 1)
        else {
            return Vec::new();
        };
        let Some(mut key) = PlaceKey::of(arg) else {
            return Vec::new();
        };
        key.proj.extend(q.proj.iter().cloned());
        facts.addrs_under(&key)
    }

    /// What is known about an aggregate's operands, as facts about its
    /// fields (`ScopeGuard(Some(..))` knows its field is `Some`).
    pub(super) fn aggregate_known(
        &self,
        facts: &Facts,
        rvalue: &Rvalue,
    ) -> Vec<(Vec<ProjKey>, Aspect, Known)> {
        let Rvalue::Aggregate { kind, operands } = rvalue else {
            return Vec::new();
        };
        let variant = self.enum_variant(kind);
        let mut out = Vec::new();
        for (i, op) in operands.iter().enumerate() {
            let (kmir::Operand::Copy(p) | kmir::Operand::Move(p)) = op else {
                // `Flags(0)`: a constant field is a known value.
                if let kmir::Operand::Constant(c) = op
                    && let kmir::ConstValue::Scalar(v) = c.value
                {
                    out.push((
                        aggregate_field(variant, i, &[]),
                        Aspect::Value,
                        Known::Is(v),
                    ));
                }
                continue;
            };
            let Some(key) = PlaceKey::of(p) else { continue };
            for (suffix, aspect, known) in facts.known_under(&key) {
                out.push((aggregate_field(variant, i, &suffix), aspect, known));
            }
        }
        out
    }

    /// The variant an aggregate builds, when it builds an enum.
    pub(crate) fn enum_variant(&self, kind: &AggregateKind) -> Option<u32> {
        match kind {
            AggregateKind::Adt { ty, variant, .. } if self.is_enum(*ty) => Some(*variant),
            _ => None,
        }
    }

    pub(super) fn is_enum(&self, ty: kmir::TyId) -> bool {
        let Some(kmir::TyKind::Adt { path, .. }) = self.dump.ty(ty).map(|t| &t.kind) else {
            return false;
        };
        self.dump
            .adt(path)
            .is_some_and(|a| a.kind == kmir::AdtKind::Enum)
    }

    /// The discriminant values of an enum type.
    pub(super) fn enum_discrs(&self, ty: kmir::TyId) -> Option<Vec<u128>> {
        self.dump.enum_of(ty).map(kmir::AdtDef::discriminants)
    }

    pub(super) fn place_ty(&self, place: &Place) -> Option<kmir::TyId> {
        self.dump.place_ty(self.body, place)
    }

    pub(super) fn place_variant_discr(&self, place: &Place, variant: u32) -> Option<u128> {
        let ty = self.place_ty(place)?;
        self.dump.adt_of(ty)?.discriminant(variant)
    }
}

/// Where operand `i` of an aggregate lands in the built value (under
/// `variant` for an enum), followed by `suffix`.
pub(super) fn aggregate_field(variant: Option<u32>, i: usize, suffix: &[ProjKey]) -> Vec<ProjKey> {
    let mut proj = Vec::with_capacity(2 + suffix.len());
    proj.extend(variant.map(ProjKey::Downcast));
    proj.push(ProjKey::Field(i as u32));
    proj.extend_from_slice(suffix);
    proj
}

/// The statements of `body` that read a field whose type has no values
/// (`!`, or an enum without variants such as `core::convert::Infallible`),
/// by block and index, sorted: no path reaches past them.
pub(super) fn uninhabited_reads(
    dump: &kmir::CrateDump,
    body: &kmir::Body,
) -> Vec<(BlockId, usize)> {
    let uninhabited = |ty: kmir::TyId| match dump.ty(ty).map(|t| &t.kind) {
        Some(kmir::TyKind::Never) => true,
        Some(kmir::TyKind::Adt { path, .. }) => dump
            .adt(path)
            .is_some_and(|a| a.kind == kmir::AdtKind::Enum && a.variants.is_empty()),
        _ => false,
    };
    let mut out = Vec::new();
    for (block, b) in body.blocks.iter().enumerate() {
        for (index, statement) in b.statements.iter().enumerate() {
            let StatementKind::Assign { rvalue, .. } = &statement.kind else {
                continue;
            };
            let mut found = false;
            kmir::visit::for_each_rvalue_place(rvalue, |place| {
                found |= place.projection.iter().any(|p| match p {
                    kmir::Projection::Field { ty, .. } => uninhabited(*ty),
                    _ => false,
                });
            });
            if found {
                out.push((block as BlockId, index));
            }
        }
    }
    out
}
