//! What statements and calls do to the object facts of a path
//! (`memory::objects`): the transfer functions of object liveness.
//!
//! * an assignment moves or copies a value's facts to its destination
//!   (`Facts` already names a local copy by its source), builds an
//!   aggregate's from its operands', and ties an identity test's result
//!   to what it compared;
//! * a call applies the callee's [`Contract`](super::Contract) in the
//!   caller's terms: the frame rule first (the object facts of every place
//!   the callee may write go, per its write summary; nothing else does),
//!   then the values moved into the call leave (or are kept where the
//!   callee keeps them), then the result gets the callee's bounds, and its
//!   guarded facts wait for a test of the result.

use kmir::{AggregateKind, BlockId, CastKind, Operand, Place, Rvalue, TerminatorKind, TyKind};
use memory::{Bounds, Facts, FieldId, Guarded, Holder, PlaceKey, ProjKey};

use super::Contract;
use super::types::{is_plain_pointer, sole_field};
use crate::body::BodyAnalysis;
use crate::summary::Summary;

/// What a call may change, in the caller's terms.
pub(crate) struct Frame {
    /// `None`: anything a pointer reaches (no write summary).
    pub writes: Option<Vec<PlaceKey>>,
    /// It writes through pointers stored at or below these places (in
    /// other objects' memory).
    pub through: Vec<PlaceKey>,
    /// Places only a handle this body holds reaches, and the call is not
    /// given a way to (`exclusive_to_handle` contents): unchanged whatever
    /// the callee writes.
    pub exclusive: Vec<PlaceKey>,
}

impl Frame {
    /// Whether the call may change the value at `q` (`facts` before it,
    /// `escaped` the locals whose address left the body).
    /// (`apart`: whether two places, one of them named vaguely, surely
    /// share no memory.)
    pub(crate) fn may_change(
        &self,
        q: &PlaceKey,
        facts: &Facts,
        escaped: &[kmir::LocalId],
        apart: &dyn Fn(&PlaceKey, &PlaceKey) -> bool,
    ) -> bool {
        if self.exclusive.iter().any(|e| q.starts_with(e)) {
            return false;
        }
        let overlap = |w: &PlaceKey| {
            let (dw, dq) = (memory::objects::definite(w), memory::objects::definite(q));
            let vague = |k: &PlaceKey| k.proj.iter().any(memory::objects::vague);
            if vague(w) || vague(q) {
                (dw.starts_with(&dq) || dq.starts_with(&dw)) && !apart(w, q)
            } else {
                w.starts_with(q) || q.starts_with(w)
            }
        };
        match &self.writes {
            Some(ws) => {
                ws.iter().any(overlap)
                    || self.through.iter().any(|b| {
                        q.starts_with(b)
                            && crosses_pointer(&q.proj[b.proj.len()..])
                            && !facts.is_frozen(q)
                    })
            }
            None => (q.is_memory() && !facts.is_frozen(q)) || escaped.contains(&q.local),
        }
    }
}

/// Whether a place's steps go through a pointer: a dereference, an
/// accessor's step, or somewhere below (which may be behind one).
pub(crate) fn crosses_pointer(steps: &[ProjKey]) -> bool {
    steps.iter().any(|s| {
        matches!(
            s,
            ProjKey::Deref | ProjKey::Via(_) | ProjKey::Below | ProjKey::Handle
        )
    })
}

/// Where one part of a new value comes from.
#[derive(Debug)]
pub(crate) enum Src {
    Move(PlaceKey),
    Copy(PlaceKey),
    /// A constant: it refers to no object.
    Nothing,
    Unknown,
    /// A reference (counts nothing) read from this place.
    Borrow(PlaceKey),
}

/// What an assignment does to the object facts, worked out before the
/// value facts change (its operands are named as they were).
#[derive(Debug)]
pub(crate) enum Plan {
    None,
    Whole(Src),
    /// An aggregate's operands, with the variant of an enum.
    Aggregate(Vec<Src>, Option<u32>),
    /// The destination (a `bool`) is true exactly when `a` and `b` are the
    /// same object (`==` of two pointers), or false (`!=`).
    Identity {
        a: Holder,
        b: Holder,
        eq: bool,
    },
    /// The destination (a local) brings these facts once tested.
    Guards(Vec<Guarded>),
    /// The destination is a pointer to somewhere at or below this place.
    Within(PlaceKey),
}

impl BodyAnalysis<'_> {
    /// Whether a value of the place's type is copied by a move: a
    /// pointer or a scalar (moving it leaves its source as it was).
    pub(crate) fn copied_by_move(&self, p: &Place) -> bool {
        self.dump.place_ty(self.body, p).is_some_and(|t| {
            is_plain_pointer(self.dump, t)
                || matches!(
                    self.dump.ty(t).map(|t| &t.kind),
                    Some(
                        TyKind::Bool
                            | TyKind::Char
                            | TyKind::Int(_)
                            | TyKind::Uint(_)
                            | TyKind::Float(_)
                            | TyKind::FnPtr { .. }
                            | TyKind::FnDef { .. }
                    )
                )
        })
    }

    /// (A copy of a local's own memory that is never read again hands its
    /// value over as a move does: optimized MIR writes such moves as
    /// copies.)
    fn src(&self, facts: &Facts, op: &Operand, at: (BlockId, usize)) -> Src {
        // A reference holds no count: releasing it releases nothing.
        if let Operand::Copy(p) | Operand::Move(p) = op
            && self
                .dump
                .place_ty(self.body, p)
                .is_some_and(|t| super::types::is_reference(self.dump, t))
        {
            return match PlaceKey::of(p) {
                Some(k) => Src::Borrow(facts.object_key(&k)),
                None => Src::Nothing,
            };
        }
        match op {
            Operand::Move(p) if self.copied_by_move(p) => {
                PlaceKey::of(p).map_or(Src::Unknown, |k| Src::Copy(facts.object_key(&k)))
            }
            Operand::Move(p) => {
                PlaceKey::of(p).map_or(Src::Unknown, |k| Src::Move(facts.object_key(&k)))
            }
            // (The place it aliases, if another, must be dead too.)
            Operand::Copy(p) if self.last_use(facts, p, at) => {
                PlaceKey::of(p).map_or(Src::Unknown, |k| Src::Move(facts.object_key(&k)))
            }
            Operand::Copy(p) => {
                PlaceKey::of(p).map_or(Src::Unknown, |k| Src::Copy(facts.object_key(&k)))
            }
            Operand::Constant(_) => Src::Nothing,
            Operand::RuntimeChecks(_) => Src::Nothing,
        }
    }

    /// The type of an operand's value.
    fn operand_ty(&self, op: &Operand) -> Option<kmir::TyId> {
        match op {
            Operand::Copy(p) | Operand::Move(p) => self.dump.place_ty(self.body, p),
            Operand::Constant(c) => Some(c.ty),
            Operand::RuntimeChecks(_) => None,
        }
    }

    /// Whether a value of `ty` is a pointer, or a struct around one
    /// pointer (`Arc`, `NonNull`): what two of them refer to is the same
    /// object when their bits are equal.
    fn pointer_like(&self, ty: kmir::TyId) -> bool {
        if is_plain_pointer(self.dump, ty) {
            return true;
        }
        // A handle around a pointer to its first argument.
        matches!(
            (sole_field(self.dump, ty), self.dump.ty(ty).map(|t| &t.kind)),
            (Some(_), Some(TyKind::Adt { args, .. })) if !args.is_empty()
        )
    }

    /// What one side of a pointer comparison is: a counted handle (`At`,
    /// its bits are the pointer compared) or the memory of an object a
    /// plain pointer points into (`Object`, or the handle counting it).
    fn identity_side(&self, facts: &Facts, p: &PlaceKey) -> Holder {
        let lifted = self.lift(&facts.object_key(p));
        match self.object_place_ty(&lifted) {
            Some(t) if !is_plain_pointer(self.dump, t) => Holder::At(lifted),
            _ => self.object_holder(&facts.object_key(&lifted.with(ProjKey::Deref))),
        }
    }

    /// The place before the first index of `q` (an element of an array
    /// or slice), as the facts name it.
    fn indexed_prefix(&self, facts: &Facts, q: &Place) -> Option<PlaceKey> {
        let i = q.projection.iter().position(|p| {
            matches!(
                p,
                kmir::Projection::Index(_)
                    | kmir::Projection::ConstantIndex { .. }
                    | kmir::Projection::Subslice { .. }
            )
        })?;
        let prefix = Place {
            local: q.local,
            projection: q.projection[..i].into(),
        };
        Some(facts.object_key(&PlaceKey::of(&prefix)?))
    }

    /// The object part of `place = rvalue`, before the value facts change.
    pub(crate) fn objects_plan(
        &self,
        facts: &Facts,
        place: &Place,
        rvalue: &Rvalue,
        at: (BlockId, usize),
    ) -> Plan {
        let _ = place;
        match rvalue {
            Rvalue::Use(op) => Plan::Whole(self.src(facts, op, at)),
            // A pointer to an element of an array or slice: somewhere
            // within it.
            Rvalue::Ref { place: q, .. } | Rvalue::AddressOf { place: q, .. }
                if PlaceKey::of(q).is_none() =>
            {
                match self.indexed_prefix(facts, q) {
                    Some(p) => Plan::Within(p),
                    None => Plan::None,
                }
            }
            Rvalue::CopyForDeref(p) => Plan::Whole(
                PlaceKey::of(p).map_or(Src::Unknown, |k| Src::Copy(facts.object_key(&k))),
            ),
            Rvalue::Cast {
                kind: CastKind::Other(_),
                operand,
                ty,
            } if self
                .operand_ty(operand)
                .is_some_and(|t| self.pointer_like(t))
                && self.pointer_like(*ty) =>
            {
                Plan::Whole(self.src(facts, operand, at))
            }
            // An unsizing coercion (`ListArc<T>` to `ListArc<dyn Trait>`,
            // `Box<T>` to `Box<[T]>`) or a trait upcast: the same pointer,
            // with metadata; it refers to what its operand refers to.
            Rvalue::Cast {
                kind: CastKind::Unsize { .. } | CastKind::TraitUpcast { .. },
                operand,
                ..
            } => Plan::Whole(self.src(facts, operand, at)),
            Rvalue::Aggregate { kind, operands } => {
                let variant = self.enum_variant(kind);
                // A closure's captures are its fields.
                let _ = matches!(kind, AggregateKind::Closure { .. });
                Plan::Aggregate(
                    operands.iter().map(|op| self.src(facts, op, at)).collect(),
                    variant,
                )
            }
            // `!b` of a tested `bool`: its facts, for the other value.
            Rvalue::UnaryOp {
                op: kmir::UnOp::Not,
                operand: Operand::Copy(p) | Operand::Move(p),
            } if p.projection.is_empty()
                && self.dump.place_ty(self.body, p).is_some_and(|t| {
                    matches!(self.dump.ty(t).map(|t| &t.kind), Some(TyKind::Bool))
                }) =>
            {
                let l = match facts.object_key(&PlaceKey::local(p.local)) {
                    k if k.proj.is_empty() => k.local,
                    _ => return Plan::None,
                };
                let flipped: Vec<Guarded> = facts
                    .objects()
                    .guarded(l)
                    .iter()
                    .filter(|g| !g.discr && g.when <= 1)
                    .map(|g| Guarded {
                        when: 1 - g.when,
                        ..g.clone()
                    })
                    .collect();
                Plan::Guards(flipped)
            }
            Rvalue::BinaryOp {
                op: op @ (kmir::BinOp::Eq | kmir::BinOp::Ne),
                lhs: Operand::Copy(a) | Operand::Move(a),
                rhs: Operand::Copy(b) | Operand::Move(b),
            } => {
                let pointers = [a, b].iter().all(|p| {
                    self.dump
                        .place_ty(self.body, p)
                        .is_some_and(|t| self.pointer_like(t))
                });
                match (pointers, PlaceKey::of(a), PlaceKey::of(b)) {
                    (true, Some(a), Some(b)) => Plan::Identity {
                        a: self.identity_side(facts, &a),
                        b: self.identity_side(facts, &b),
                        eq: *op == kmir::BinOp::Eq,
                    },
                    _ => Plan::None,
                }
            }
            _ => Plan::None,
        }
    }

    /// The object part of `place = rvalue`, after the value facts changed.
    /// `dest`: the written place's canonical name.
    pub(crate) fn objects_apply(&self, facts: &mut Facts, dest: Option<PlaceKey>, plan: Plan) {
        let Some(dest) = dest else {
            return;
        };
        match plan {
            Plan::None => {}
            Plan::Whole(src) => self.put(facts, &dest, src),
            Plan::Aggregate(srcs, variant) => {
                let base = match variant {
                    Some(v) => dest.with(ProjKey::Downcast(v)),
                    None => dest.clone(),
                };
                let mut whole = Some(Bounds::nothing());
                for (i, src) in srcs.into_iter().enumerate() {
                    let sub = base.with(ProjKey::Field(i as u32));
                    self.put(facts, &sub, src);
                    let b = facts.objects().bounds_of(&sub);
                    whole = super::contract::join_bounds(whole, b);
                }
                if let Some(w) = whole {
                    facts.objects_mut().set(dest, w);
                }
            }
            Plan::Within(p) => {
                if dest.proj.is_empty() {
                    facts.set_points_within(dest, p);
                }
            }
            Plan::Guards(g) => {
                if dest.proj.is_empty() {
                    facts.objects_mut().guard(dest.local, g);
                }
            }
            Plan::Identity { a, b, eq } => {
                if dest.proj.is_empty() {
                    // Each handle compared is held by the other side.
                    // (An object's memory too: a caller may name the handle
                    // counting it.)
                    let mut facts_of = Vec::new();
                    for (this, other) in [(&a, &b), (&b, &a)] {
                        if let Holder::At(h) | Holder::Object(h) = this {
                            facts_of.push((h.clone(), Bounds::holder(other.clone())));
                        }
                    }
                    facts.objects_mut().guard(
                        dest.local,
                        vec![Guarded {
                            when: u128::from(eq),
                            discr: false,
                            two_valued: true,
                            bounds: facts_of,
                        }],
                    );
                }
            }
        }
    }

    /// `dest` (already written) gets the value `src` gives.
    fn put(&self, facts: &mut Facts, dest: &PlaceKey, src: Src) {
        match src {
            Src::Move(q) if q != *dest => {
                facts.carry_within(&q, dest);
                match self.sole_payload_of(&q) {
                    Some(container) => facts.objects_mut().moved_out_of(&q, &container, dest),
                    None => facts.objects_mut().moved(&q, dest),
                }
            }
            Src::Copy(q) if q != *dest => {
                facts.carry_within(&q, dest);
                facts.objects_mut().copied(&q, dest)
            }
            Src::Nothing => facts.objects_mut().set(dest.clone(), Bounds::nothing()),
            // A reference copied: it counts nothing, and points where the
            // one copied did.
            Src::Borrow(q) => {
                facts.carry_within(&q, dest);
                facts.objects_mut().set(dest.clone(), Bounds::nothing())
            }
            _ => {}
        }
    }

    /// The largest place `key` is the value of: through fields that are a
    /// struct's only one (`(*_1).0` of an `Arc` is `*_1`).
    pub(crate) fn lift(&self, key: &PlaceKey) -> PlaceKey {
        if key.local >= super::contract::RELEASED && !memory::is_guard_data(key.local) {
            return key.clone();
        }
        super::types::lift(self.dump, self.body, self.field_types(), key)
    }

    /// After a test of `key`'s discriminant: if every variant it may still
    /// have has no fields, it refers to no object (a `None`).
    pub(crate) fn learn_variant(&self, facts: &mut Facts, key: &PlaceKey) {
        let key = facts.object_key(key);
        if self.no_payload(facts, &key) {
            facts.objects_mut().learn(key, &Bounds::nothing());
        }
    }

    /// Whether the enum at `key` (an object key) can only hold variants
    /// without fields, by what the facts know of its discriminant.
    pub(crate) fn no_payload(&self, facts: &Facts, key: &PlaceKey) -> bool {
        let Some(adt) = self.object_place_ty(key).and_then(|t| self.dump.enum_of(t)) else {
            return false;
        };
        match facts.known(key, memory::Aspect::Discr) {
            Some(memory::Known::Is(d)) => adt
                .variants
                .iter()
                .any(|v| v.discr == *d && v.fields.is_empty()),
            Some(memory::Known::IsNot(not)) => adt
                .variants
                .iter()
                .filter(|v| !not.contains(&v.discr))
                .all(|v| v.fields.is_empty()),
            None => false,
        }
    }

    /// Whether the value at `p` (a local's own memory), and at the place
    /// it aliases, is never read again after the statement at `at`.
    fn last_use(&self, facts: &Facts, p: &Place, at: (BlockId, usize)) -> bool {
        let Some(k) = PlaceKey::of(p) else {
            return false;
        };
        let canonical = facts.object_key(&k);
        let dead = |l: kmir::LocalId| {
            (l as usize) < self.body.locals.len()
                && !self.address_taken.contains(&l)
                && !self.live_locals().live_after(self.body, at.0, at.1, l)
        };
        !p.projection.contains(&kmir::Projection::Deref)
            && !canonical.proj.contains(&ProjKey::Deref)
            && dead(p.local)
            && dead(canonical.local)
    }

    /// The enum `q` is the only field of a variant of (`(_3 as Some).0`):
    /// moving `q` out leaves it holding nothing.
    fn sole_payload_of(&self, q: &PlaceKey) -> Option<PlaceKey> {
        let n = q.proj.len();
        let (ProjKey::Downcast(v), ProjKey::Field(0)) =
            (q.proj.get(n.checked_sub(2)?)?, q.proj.get(n - 1)?)
        else {
            return None;
        };
        let container = PlaceKey {
            local: q.local,
            proj: q.proj[..n - 2].to_vec(),
        };
        let adt = self.dump.enum_of(self.object_place_ty(&container)?)?;
        let variant = adt.variants.get(*v as usize)?;
        // (MIR moves out of `(x as V)` only where `x` is a `V`: its one
        // field is all it holds.)
        (variant.fields.len() == 1).then_some(container)
    }

    /// Whether the places `p` and `q`, one of them named somewhere below a
    /// container, surely share no memory: below the same place, each
    /// through an accessor of an exclusive field, and the two fields, or
    /// two fields reached the same way from them, differ.
    pub(crate) fn apart(&self, p: &PlaceKey, q: &PlaceKey) -> bool {
        if let Some(x) = self.handle_apart(p, q).or_else(|| self.handle_apart(q, p)) {
            return x;
        }
        let split = |k: &PlaceKey| -> Option<(PlaceKey, Vec<ProjKey>)> {
            let i = k.proj.iter().position(|s| *s == ProjKey::Below)?;
            Some((
                PlaceKey {
                    local: k.local,
                    proj: k.proj[..i].to_vec(),
                },
                k.proj[i + 1..].to_vec(),
            ))
        };
        let (Some((dp, sp)), Some((dq, sq))) = (split(p), split(q)) else {
            return false;
        };
        if dp != dq || !matches!(sp.first(), Some(ProjKey::Via(_))) {
            return false;
        }
        let field = |id: u32| {
            self.summary_of
                .get(program::FnId(id))
                .exclusive_field
                .clone()
        };
        for (a, b) in sp.iter().zip(sq.iter()) {
            match (a, b) {
                _ if a == b => {}
                (ProjKey::Field(_), ProjKey::Field(_)) => return true,
                (ProjKey::Via(x), ProjKey::Via(y)) => match (field(*x), field(*y)) {
                    (Some(f), Some(g)) if f.disjoint(&g) => return true,
                    (Some(f), Some(g)) if f == g => {}
                    _ => return false,
                },
                _ => return false,
            }
        }
        false
    }

    /// `apart` when `p` is in some object a handle stored below `X`
    /// refers to (`X.Handle...`): `q` below `X` is apart from it when it
    /// is the container's own memory, inline or behind raw pointers it
    /// owns (an object a counted handle refers to is separate memory, and
    /// a reference may point into one). `None`: `p` is not such a place.
    fn handle_apart(&self, p: &PlaceKey, q: &PlaceKey) -> Option<bool> {
        let i = p.proj.iter().position(|s| *s == ProjKey::Handle)?;
        let x = PlaceKey {
            local: p.local,
            proj: p.proj[..i].to_vec(),
        };
        if !q.starts_with(&x)
            || q.proj[i..]
                .iter()
                .any(|s| !matches!(s, ProjKey::Deref | ProjKey::Field(_) | ProjKey::Downcast(_)))
        {
            return Some(false);
        }
        for j in i..q.proj.len() {
            if q.proj[j] != ProjKey::Deref {
                continue;
            }
            let pointer = PlaceKey {
                local: q.local,
                proj: q.proj[..j].to_vec(),
            };
            let raw = self.is_raw_pointer(&pointer);
            if !raw {
                return Some(false);
            }
        }
        Some(true)
    }

    /// Whether the place holds a raw pointer: by its type where the body
    /// tells, else by the declared types of the fields on the way.
    pub(crate) fn is_raw_pointer(&self, key: &PlaceKey) -> bool {
        if let Some(t) = self.object_place_ty(key) {
            return matches!(
                self.dump.ty(t).map(|t| &t.kind),
                Some(TyKind::RawPtr { .. })
            );
        }
        // The longest prefix whose type is known, then the declarations.
        for n in (0..key.proj.len()).rev() {
            let prefix = PlaceKey {
                local: key.local,
                proj: key.proj[..n].to_vec(),
            };
            if let Some(t) = self.object_place_ty(&prefix) {
                let Some(from) = self.dump.ty(t).map(|t| t.display.clone()) else {
                    return false;
                };
                return super::types::declared_ty_below(self.dump, &from, &key.proj[n..])
                    .is_some_and(|d| d.starts_with('*'));
            }
        }
        false
    }

    /// The place a store into `place` writes, when it is reached through
    /// references only (from an argument, a local, or a lock's data):
    /// nothing else can alias it.
    pub(crate) fn exact_store(&self, facts: &Facts, place: &Place) -> Option<PlaceKey> {
        if !place.projection.contains(&kmir::Projection::Deref) {
            return None;
        }
        let key = facts.object_key(&PlaceKey::of(place)?);
        if key.local >= super::contract::RELEASED && !memory::is_guard_data(key.local) {
            return None;
        }
        for (i, step) in key.proj.iter().enumerate() {
            match step {
                // Into what only a handle reaches: as exact as the handle.
                ProjKey::Via(f) if self.summary_of.get(program::FnId(*f)).ret_exclusive => continue,
                ProjKey::Via(_) => return None,
                ProjKey::Deref => {}
                // (Inline: a pointer crossed below is written `Below.Deref`.)
                _ => continue,
            }
            let pointer = PlaceKey {
                local: key.local,
                proj: key.proj[..i].to_vec(),
            };
            let ty = self.object_place_ty(&pointer)?;
            if !super::types::is_reference(self.dump, ty) {
                return None;
            }
        }
        Some(key)
    }

    /// What keeps the object whose memory `q` is alive, as a holder: the
    /// handle whose pointer leads there (it counts the object), or that
    /// memory itself (reached through a borrow).
    pub(crate) fn object_holder(&self, q: &PlaceKey) -> Holder {
        match self.handle_of_object(q) {
            Some(h) => Holder::At(h),
            None => Holder::Object(q.clone()),
        }
    }

    /// The handle counting the object `q` is memory of: `h` for `(*h.ptr)`
    /// or `(*h)` with `h` a counted handle (not a borrow or raw pointer).
    pub(crate) fn handle_of_object(&self, q: &PlaceKey) -> Option<PlaceKey> {
        let i = q.proj.iter().rposition(|s| *s == ProjKey::Deref)?;
        let pointer = PlaceKey {
            local: q.local,
            proj: q.proj[..i].to_vec(),
        };
        let handle = self.lift(&pointer);
        let ty = self.object_place_ty(&handle)?;
        (matches!(self.dump.ty(ty).map(|t| &t.kind), Some(TyKind::Adt { .. }))
            && !is_plain_pointer(self.dump, ty))
        .then_some(handle)
    }

    /// The handle counting the object whose whole memory `q` is (`q` ends
    /// in the dereference): what a fact about that object is a fact of.
    pub(crate) fn handle_of_memory(&self, q: &PlaceKey) -> Option<PlaceKey> {
        (q.proj.last() == Some(&ProjKey::Deref))
            .then(|| self.handle_of_object(q))
            .flatten()
    }

    /// The type of the place a key names, where the body tells.
    pub(crate) fn object_place_ty(&self, key: &PlaceKey) -> Option<kmir::TyId> {
        if key.local >= super::contract::RELEASED && !memory::is_guard_data(key.local) {
            return None;
        }
        self.field_types().ty_of(self.dump, self.body, key)
    }

    /// The field `key` is, if its last step is a struct's field.
    pub(crate) fn field_id(&self, key: &PlaceKey) -> Option<FieldId> {
        let Some(ProjKey::Field(index)) = key.proj.last() else {
            return None;
        };
        let owner = PlaceKey {
            local: key.local,
            proj: key.proj[..key.proj.len() - 1].to_vec(),
        };
        let adt = self.dump.adt_of(self.object_place_ty(&owner)?)?;
        (adt.kind == kmir::AdtKind::Struct).then(|| FieldId {
            owner: adt.path.clone(),
            index: *index,
        })
    }

    /// The places no write of this body's can change through a pointer
    /// the facts do not follow: what a shared-reference argument borrows,
    /// outside any cell (the whole pointee, or its fields without one).
    pub(crate) fn frozen_places(&self) -> Vec<PlaceKey> {
        let mut out = Vec::new();
        for k in 1..=self.body.arg_count {
            let Some(ty) = self.body.local(k).map(|l| l.ty) else {
                continue;
            };
            let Some(TyKind::Ref {
                mutable: false,
                pointee,
            }) = self.dump.ty(ty).map(|t| &t.kind)
            else {
                continue;
            };
            let at = PlaceKey {
                local: k,
                proj: vec![ProjKey::Deref],
            };
            if !self.dump.may_mutate_in_place(*pointee) {
                out.push(at);
                continue;
            }
            // Its fields without a cell (of a struct).
            let Some(adt) = self.dump.adt_of(*pointee) else {
                continue;
            };
            if adt.kind != kmir::AdtKind::Struct {
                continue;
            }
            let known = self.field_types().fields_of(*pointee);
            for (i, f) in adt.variants.iter().flat_map(|v| &v.fields).enumerate() {
                let i = i as u32;
                let frozen = match known.iter().find(|(k, _)| *k == i) {
                    Some((_, t)) => !self.dump.may_mutate_in_place(*t),
                    None => !self.dump.declared_may_mutate_in_place(&f.ty),
                };
                if frozen {
                    out.push(at.with(ProjKey::Field(i)));
                }
            }
        }
        out
    }

    /// What a call may change, from the callee's write summary, in the
    /// caller's terms (`pre`: the facts before the call).
    pub(crate) fn frame(&self, pre: &Facts, args: &[Operand], summary: &Summary) -> Frame {
        let unknown = Frame {
            writes: None,
            through: Vec::new(),
            exclusive: Vec::new(),
        };
        let Some(writes) = summary.writes.as_ref() else {
            return unknown;
        };
        let mut out = Vec::new();
        let mut through = Vec::new();
        for (k, path) in writes {
            let Some(base) = args.get(*k as usize).and_then(|op| pre.pointee(op)) else {
                return unknown;
            };
            let mut p = pre.object_key(&base);
            for &s in path.steps() {
                p = p.with(if s & 0x8000 != 0 {
                    ProjKey::Downcast(u32::from(s & !0x8000))
                } else {
                    ProjKey::Field(u32::from(s))
                });
            }
            if path.through_pointer() || path.through_handle() {
                // Into other objects, through pointers stored there: not
                // the memory the argument points to.
                through.push(p);
            } else {
                out.push(p);
            }
        }
        Frame {
            writes: Some(out),
            through,
            exclusive: Vec::new(),
        }
    }

    /// Where every pointer a call's result holds points, from the callee's
    /// summary (`ret_points`): somewhere at or below one place the caller
    /// can name, or through a pointer stored there.
    fn points_within(&self, pre: &Facts, args: &[Operand], summary: &Summary) -> Option<PlaceKey> {
        if summary.ret_fresh {
            return None;
        }
        let [(k, path)] = summary.ret_points.as_deref()? else {
            return None;
        };
        // What the argument points to, or, for a value holding pointers
        // (an iterator), what they point to.
        let op = args.get(*k as usize)?;
        let base = match pre.pointee(op) {
            Some(p) => p,
            None => match op {
                Operand::Copy(q) | Operand::Move(q) => PlaceKey::of(q)?.with(ProjKey::Deref),
                _ => return None,
            },
        };
        let mut base = pre.object_key(&base);
        for &s in path.steps() {
            base = base.with(if s & 0x8000 != 0 {
                ProjKey::Downcast(u32::from(s & !0x8000))
            } else {
                ProjKey::Field(u32::from(s))
            });
        }
        if path.through_handle() {
            // Into objects the handles stored there refer to.
            base = base.with(ProjKey::Handle);
        } else if path.through_pointer() {
            // Where the pointers stored there point.
            base = pre.object_key(&base.with(ProjKey::Deref));
        }
        Some(base)
    }

    /// A callee's bounds (in its entry terms) in the caller's, before the
    /// call (`pre`): `Entry` is what the caller held there, `At` and
    /// `Within` name the caller's memory the arguments point to. With
    /// `sharing`, what the callee read from behind its first argument is
    /// held by that memory with a count of its own.
    pub(crate) fn map_bounds(
        &self,
        pre: &Facts,
        args: &[Operand],
        bounds: &Bounds,
        sharing: bool,
    ) -> Bounds {
        bounds.expand(|h| self.map_holder(pre, args, h, sharing))
    }

    /// A drop glue's bounds (its argument points to the value dropped) in
    /// the terms of the function dropping the value at `place`.
    pub(crate) fn map_bounds_at(&self, pre: &Facts, place: &PlaceKey, bounds: &Bounds) -> Bounds {
        let at = |p: &PlaceKey| -> Option<PlaceKey> {
            if p.local != 1 || p.proj.first() != Some(&ProjKey::Deref) {
                return None;
            }
            let mut q = place.clone();
            q.proj.extend_from_slice(&p.proj[1..]);
            Some(pre.object_key(&q))
        };
        bounds.expand(|h| match h {
            Holder::Taken(_) => Some(Bounds::holder(h.clone())),
            Holder::At(p) => Some(Bounds::holder(Holder::At(at(p)?))),
            Holder::Within(p) => Some(Bounds::holder(Holder::Within(at(p)?))),
            Holder::Object(p) => Some(Bounds::holder(self.object_holder(&at(p)?))),
            Holder::Entry(p) => pre.objects().bounds_of(&at(p)?),
        })
    }

    fn callee_place(&self, pre: &Facts, args: &[Operand], p: &PlaceKey) -> Option<PlaceKey> {
        let op = args.get(p.local.checked_sub(1)? as usize)?;
        match p.proj.first() {
            Some(ProjKey::Deref) => {
                let base = pre.object_key(&pre.pointee(op)?);
                let mut out = base;
                out.proj.extend_from_slice(&p.proj[1..]);
                Some(pre.object_key(&out))
            }
            _ => match op {
                Operand::Copy(q) | Operand::Move(q) => {
                    let mut out = pre.object_key(&PlaceKey::of(q)?);
                    out.proj.extend_from_slice(&p.proj);
                    Some(pre.object_key(&out))
                }
                _ => None,
            },
        }
    }

    fn map_holder(
        &self,
        pre: &Facts,
        args: &[Operand],
        h: &Holder,
        sharing: bool,
    ) -> Option<Bounds> {
        match h {
            Holder::Taken(_) => Some(Bounds::holder(h.clone())),
            Holder::Object(p) => {
                if !p.proj.contains(&ProjKey::Deref) {
                    return None;
                }
                Some(Bounds::holder(
                    self.object_holder(&self.callee_place(pre, args, p)?),
                ))
            }
            Holder::At(p) | Holder::Within(p) => {
                // Memory behind a pointer the caller passes: its own.
                if !p.proj.contains(&ProjKey::Deref) {
                    return None;
                }
                let q = self.callee_place(pre, args, p)?;
                Some(Bounds::holder(match h {
                    Holder::At(_) => Holder::At(q),
                    _ => Holder::Within(q),
                }))
            }
            Holder::Entry(p) => {
                let op = args.get(p.local.checked_sub(1)? as usize)?;
                if p.proj.is_empty() && matches!(op, Operand::Constant(_)) {
                    return Some(Bounds::nothing());
                }
                let q = self.callee_place(pre, args, p)?;
                if sharing && p.local == 1 && p.proj.first() == Some(&ProjKey::Deref) {
                    return Some(Bounds::holder(Holder::At(self.lift(&q))));
                }
                pre.objects().bounds_of(&q)
            }
        }
    }

    /// What a call or drop does to the object facts: `pre` the facts
    /// before it, `facts` after the value facts' own update.
    pub(crate) fn objects_call(
        &self,
        pre: &Facts,
        facts: &mut Facts,
        terminator: &TerminatorKind,
        summary: &Summary,
        block: BlockId,
        exclusive: &[PlaceKey],
    ) {
        let contract = &summary.liveness;
        match terminator {
            TerminatorKind::Drop { place, .. } => {
                // The glue ends the value (and writes nothing else a
                // caller can name: what it reaches is the value's own).
                if let Some(k) = PlaceKey::of(place) {
                    let k = pre.object_key(&k);
                    facts.objects_mut().kill(&k, None);
                }
            }
            TerminatorKind::Call {
                args, destination, ..
            } => {
                self.apply_frame_rule(pre, facts, args, summary, exclusive);
                self.keep_own_stores(pre, facts, args, summary);
                self.move_arguments(pre, facts, args, destination, contract);
                // What the callee leaves in the arguments' memory.
                for (p, b) in &contract.post {
                    if let Some(q) = self.callee_place(pre, args, p) {
                        let q = self.handle_of_memory(&q).unwrap_or(q);
                        let b = self.map_bounds(pre, args, b, false);
                        if !b.is_empty() {
                            facts.objects_mut().learn(q, &b);
                        }
                    }
                }
                let Some(dest) = PlaceKey::of(destination) else {
                    return;
                };
                self.point_result(pre, facts, args, summary, block, &dest);
                self.result_objects(pre, facts, args, contract, block, dest);
            }
            _ => {}
        }
    }

    /// The frame rule: only what the callee may write changes, by its
    /// write summary (or anything a pointer reaches without one), except
    /// the places only a handle this body holds reaches (`exclusive`).
    fn apply_frame_rule(
        &self,
        pre: &Facts,
        facts: &mut Facts,
        args: &[Operand],
        summary: &Summary,
        exclusive: &[PlaceKey],
    ) {
        let mut frame = self.frame(pre, args, summary);
        frame.exclusive = exclusive.to_vec();
        match &frame.writes {
            Some(places) => {
                for p in places
                    .iter()
                    .filter(|p| !exclusive.iter().any(|e| p.starts_with(e)))
                {
                    let taken = self.field_id(p);
                    facts
                        .objects_mut()
                        .kill_apart(p, taken, &|a, b| self.apart(a, b));
                    facts.forget_within(p);
                }
                // Writes through pointers stored in what the callee is
                // given land in other objects' memory: what the facts name
                // behind those pointers.
                for base in &frame.through {
                    let mut behind = facts.objects().places();
                    behind.retain(|p| {
                        p.starts_with(base)
                            && crosses_pointer(&p.proj[base.proj.len()..])
                            && !facts.is_frozen(p)
                            && !exclusive.iter().any(|e| p.starts_with(e))
                    });
                    for p in behind {
                        facts.objects_mut().kill(&p, None);
                    }
                }
            }
            None => facts.forget_memory_objects_except(&self.escaped, exclusive),
        }
    }

    /// A callee that stores into what an argument points to only pointers
    /// reached from there (an iterator's `next`) leaves its pointers
    /// pointing where they did.
    fn keep_own_stores(&self, pre: &Facts, facts: &mut Facts, args: &[Operand], summary: &Summary) {
        for &k in &summary.stores_own {
            let Some(raw) = args.get(k as usize).and_then(|op| pre.pointee(op)) else {
                continue;
            };
            let p = pre.object_key(&raw);
            for (ptr, target) in pre.within_entries() {
                if ptr.starts_with(&p) || p.starts_with(&ptr) {
                    // Under the name the argument had too (a copy the call
                    // may have changed is no alias now).
                    if ptr == p && raw != p {
                        facts.set_points_within(raw.clone(), target.clone());
                    }
                    facts.set_points_within(ptr, target);
                }
            }
        }
    }

    /// Values moved into the call leave, unless the callee's contract
    /// keeps them (at or within a place of an argument or of the result).
    fn move_arguments(
        &self,
        pre: &Facts,
        facts: &mut Facts,
        args: &[Operand],
        destination: &Place,
        contract: &Contract,
    ) {
        let facts_dest = PlaceKey::of(destination).map(|d| facts.object_key(&d));
        for (i, op) in args.iter().enumerate() {
            let Operand::Move(q) = op else { continue };
            if self.copied_by_move(q) {
                continue;
            }
            let Some(q) = PlaceKey::of(q).map(|k| pre.object_key(&k)) else {
                continue;
            };
            // (Into the result: the destination, or a place in it.)
            let place_of = |p: &PlaceKey| -> Option<PlaceKey> {
                if p.local == 0 {
                    let mut d = facts_dest.clone()?;
                    d.proj.extend_from_slice(&p.proj);
                    Some(d)
                } else {
                    self.callee_place(pre, args, p)
                }
            };
            let kept = contract
                .keeps
                .iter()
                .find(|(k, _)| *k as usize == i + 1)
                .and_then(|(_, h)| match h {
                    Holder::At(p) => Some((true, place_of(p)?)),
                    Holder::Within(p) => Some((false, place_of(p)?)),
                    _ => None,
                });
            match kept {
                Some((true, to)) => {
                    facts.objects_mut().kill(&to, None);
                    facts.objects_mut().moved(&q, &to);
                }
                Some((false, into)) => facts.objects_mut().moved_into(&q, &into),
                // The value leaves, and with it the objects it owns
                // (what its pointers point to may be freed).
                None => facts.objects_mut().kill(&q, None),
            }
        }
    }

    /// Where the result points, when it is a local of its own: at a place
    /// the caller can name, or somewhere within one (into a container).
    fn point_result(
        &self,
        pre: &Facts,
        facts: &mut Facts,
        args: &[Operand],
        summary: &Summary,
        block: BlockId,
        dest: &PlaceKey,
    ) {
        if !dest.proj.is_empty() || self.view_of(block).is_some() {
            return;
        }
        match &summary.liveness.ret_ref {
            Some(p) => {
                // (Unless the value facts already name where it points:
                // an accessor's result.)
                let named = facts
                    .pointee(&Operand::Copy(Place {
                        local: dest.local,
                        projection: Box::new([]),
                    }))
                    .is_some();
                if !named
                    && !self.address_taken.contains(&dest.local)
                    && let Some(q) = self.callee_place(pre, args, p)
                {
                    facts.set_points_at(dest.local, q);
                }
            }
            None => {
                let within = self.points_within(pre, args, summary);
                if self.trace {
                    eprintln!("[kanalyze trace] bb{block}: the result points within {within:?}");
                }
                if let Some(q) = within {
                    facts.set_points_within(dest.clone(), q);
                }
            }
        }
    }

    /// What the result holds by the callee's contract: its bounds, the
    /// handle it shares with an argument, and the facts that wait for a
    /// test of it.
    fn result_objects(
        &self,
        pre: &Facts,
        facts: &mut Facts,
        args: &[Operand],
        contract: &Contract,
        block: BlockId,
        dest: PlaceKey,
    ) {
        let dest = facts.object_key(&dest);
        if let Some(ret) = &contract.ret {
            let b = self.map_bounds(pre, args, ret, contract.sharing);
            if !b.is_empty() {
                facts.objects_mut().set(dest.clone(), b);
            }
        }
        // A whole handle cloned: it refers to what the clone does.
        if let Some(p) = &contract.ret_same
            && let Some(q) = self.callee_place(pre, args, p)
        {
            facts
                .objects_mut()
                .learn(q, &Bounds::holder(Holder::At(dest.clone())));
        }
        if dest.proj.is_empty() && !contract.ret_if.is_empty() {
            let guarded = self.guarded_result_facts(pre, args, contract, &dest);
            if self.trace {
                eprintln!("[kanalyze trace] bb{block}: the result's guarded facts {guarded:?}");
            }
            facts.objects_mut().guard(dest.local, guarded);
        }
    }

    /// The contract's facts that hold for some values of the result
    /// (`ret_if`), in the caller's terms, `dest` the result's place.
    fn guarded_result_facts(
        &self,
        pre: &Facts,
        args: &[Operand],
        contract: &Contract,
        dest: &PlaceKey,
    ) -> Vec<Guarded> {
        contract
            .ret_if
            .iter()
            .map(|g| Guarded {
                when: g.when,
                discr: g.discr,
                two_valued: g.two_valued,
                bounds: g
                    .bounds
                    .iter()
                    .filter_map(|(p, b)| {
                        let q = if p.local == 0 {
                            let mut d = dest.clone();
                            d.proj.extend_from_slice(&p.proj);
                            d
                        } else {
                            self.callee_place(pre, args, p)?
                        };
                        // An object's memory: the handle counting it,
                        // where there is one.
                        let q = self.handle_of_memory(&q).unwrap_or(q);
                        let b = self.map_bounds(pre, args, b, false);
                        (!b.is_empty()).then_some((q, b))
                    })
                    .collect(),
            })
            .collect()
    }

    /// The places of a `Drop` terminator or of the operands a call moves:
    /// what it may release, as the facts name them.
    pub(crate) fn released_places(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
    ) -> Vec<PlaceKey> {
        match terminator {
            TerminatorKind::Drop { place, .. } => PlaceKey::of(place)
                .map(|k| vec![facts.object_key(&k)])
                .unwrap_or_default(),
            TerminatorKind::Call { args, .. } => args
                .iter()
                .filter_map(|op| match op {
                    Operand::Move(p) => PlaceKey::of(p).map(|k| facts.object_key(&k)),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}
