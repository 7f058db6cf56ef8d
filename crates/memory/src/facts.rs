//! Value facts: the little an analysis needs to know about values to follow
//! drop elaboration and correlated branches precisely.
//!
//! * drop flags are booleans set from constants and tested by `switchInt`;
//! * enum discriminants are learnt from aggregates, `SetDiscriminant`,
//!   `switchInt` on `discriminant(_x)`, and from callee summaries whose
//!   adjustment depends on the returned variant (`try_lock`);
//! * a local copied into a temporary and tested twice (`if c { lock }`,
//!   `if c { unlock }`) gives both tests the same answer.
//!
//! Facts are keyed by *places* rooted at locals. A local may alias another
//! place (`_4 = copy _2`), hold the discriminant of one (`_5 =
//! discriminant(_3)`), or point to one (`_6 = &mut _3`). Every write to a
//! place first hands its facts to the aliases that still hold the old value,
//! then forgets them, so no fact ever outlives the value it describes.
//! Memory behind pointers and locals whose address escapes (`&mut`, raw
//! pointers) are forgotten at every call and every write through a pointer.
//!
//! The data of a lock a guard local holds is named by a pseudo-local of its
//! own ([`guard_data`]): every pointer a view of the guard returns
//! (`DerefMut::deref_mut(&mut guard)`) is set to point at it
//! ([`Facts::set_view`]), so that two views of one guard read and write one
//! key, and a fact outlives the temporary that held the first view. Such
//! facts are memory like any other (forgotten at a call or a write through a
//! pointer); the body analysis keeps them across a call that cannot write
//! the data (see `body::guard_data`).

use std::collections::BTreeMap;

use kmir::{BinOp, ConstValue, LocalId, Operand, Place, Rvalue, UnOp};

use crate::location::Location;
use crate::objects::{Bounds, Objects};
pub use crate::place::{PlaceKey, ProjKey, guard_data, is_guard_data};

/// What a local holds, as far as facts go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    Const(u128),
    /// The current value of another place.
    Copy(PlaceKey),
    /// The discriminant of another place.
    Discr(PlaceKey),
    /// An enum whose variant is that of the enum at another place: what a
    /// callee mapping each variant to the same one returns
    /// (`Option::as_ref`).
    Variant(PlaceKey),
    /// The address of another place.
    Ref(PlaceKey),
    /// The boolean `(key.aspect == c) == eq`: a comparison with a constant,
    /// so that testing it teaches something about `key`.
    Cmp {
        key: PlaceKey,
        aspect: Aspect,
        c: u128,
        eq: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Aspect {
    /// The place's own (integer, bool) value.
    Value,
    /// The discriminant of the enum stored there.
    Discr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Known {
    Is(u128),
    /// Sorted, deduplicated.
    IsNot(Vec<u128>),
}

/// What an operand or place is, once aliases are followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    Const(u128),
    Key(PlaceKey, Aspect),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    vals: BTreeMap<LocalId, Val>,
    known: BTreeMap<(PlaceKey, Aspect), Known>,
    /// The discriminants an enum place can have (from its type): lets
    /// "not `None`" become "`Some`".
    domains: BTreeMap<PlaceKey, Vec<u128>>,
    /// The pointer stored at a place points to this abstract location (the
    /// lock analysis names locks by them).
    addrs: BTreeMap<PlaceKey, Location>,
    /// A place that is not a local (a field, memory behind a pointer) holds
    /// what this local held when it was written there (`(*_1) = move _2`),
    /// as long as neither is written again: what a summary needs to say
    /// "leaves `*arg0` holding `arg1`".
    holds: BTreeMap<PlaceKey, LocalId>,
    /// A place that is not a local (a field of an aggregate) holds a
    /// pointer to this place: a dereference of it is that place.
    refs: BTreeMap<PlaceKey, PlaceKey>,
    /// Every pointer the value at a place holds points somewhere at or
    /// below this place (a reference into a container a call returned):
    /// object facts name what it points to `target.Below`.
    within: BTreeMap<PlaceKey, PlaceKey>,
    /// Locals whose constant values keep paths apart (drop flags: see
    /// [`Facts::same_split`]); the same for every path of a body.
    split: Option<std::sync::Arc<[LocalId]>>,
    /// Where the objects the values refer to are also held (object
    /// liveness, [`crate::objects`]), keyed by the same normalised places.
    objects: Objects,
    /// Places behind pointers that no write of this body or its callees
    /// can change (memory a shared reference argument borrows, outside
    /// any cell): their object facts survive unknown writes.
    frozen: Option<std::sync::Arc<[PlaceKey]>>,
}

impl Facts {
    /// Paths whose facts give one of `locals` different constant values
    /// are kept apart when they meet (`PcState::add`). The body analysis
    /// passes its drop flags: joining a path where a value was moved out
    /// (flag cleared) with one where it was not loses what each knows about
    /// the value, and the conditional drop after the join then looks
    /// reachable with the moved-out value's old contents.
    pub fn set_split_locals(&mut self, locals: Vec<LocalId>) {
        self.split = (!locals.is_empty()).then(|| locals.into());
    }

    /// Whether no split local has a known constant value here that differs
    /// from its value in `other`.
    pub fn same_split(&self, other: &Facts) -> bool {
        let Some(split) = &self.split else {
            return true;
        };
        split.iter().all(|l| {
            let same_value = match (self.vals.get(l), other.vals.get(l)) {
                (Some(Val::Const(a)), Some(Val::Const(b))) => a == b,
                _ => true,
            };
            // An enum (a function's result) known to hold two variants.
            let key = (PlaceKey::local(*l), Aspect::Discr);
            let same_variant = match (self.known.get(&key), other.known.get(&key)) {
                (Some(Known::Is(a)), Some(Known::Is(b))) => a == b,
                _ => true,
            };
            same_value && same_variant
        })
    }

    /// Follows a local's alias through the first projection of `place`,
    /// then pointers stored in fields of aggregates (`(*_3.0)` where `_3 =
    /// (&x, ..)` is `x`).
    fn normalize(&self, place: &PlaceKey) -> PlaceKey {
        let mut p = match (self.vals.get(&place.local), place.proj.first()) {
            (Some(Val::Ref(target)), Some(ProjKey::Deref)) => target.with_suffix(&place.proj[1..]),
            (Some(Val::Copy(source)), Some(_)) => source.with_suffix(&place.proj),
            _ => place.clone(),
        };
        if self.refs.is_empty() {
            return p;
        }
        // A few steps at most: each one removes a dereference.
        for _ in 0..4 {
            let Some(i) = p.proj.iter().position(|s| *s == ProjKey::Deref) else {
                break;
            };
            let base = PlaceKey {
                local: p.local,
                proj: p.proj[..i].to_vec(),
            };
            let Some(target) = self.refs.get(&base) else {
                break;
            };
            p = target.with_suffix(&p.proj[i + 1..]);
        }
        p
    }

    /// The object-liveness facts of this point.
    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    pub fn objects_mut(&mut self) -> &mut Objects {
        &mut self.objects
    }

    /// The object facts on entry to a body with `args` arguments, and the
    /// places no write can change there (see `frozen`).
    pub fn set_object_entry(&mut self, args: u32, frozen: Vec<PlaceKey>) {
        self.objects = Objects::entry(args);
        self.frozen = (!frozen.is_empty()).then(|| frozen.into());
    }

    /// Whether no write of this body or its callees can change `key`
    /// (behind a frozen pointer, and not behind another one below it).
    pub fn is_frozen(&self, key: &PlaceKey) -> bool {
        self.frozen.as_ref().is_some_and(|f| {
            f.iter().any(|z| {
                key.starts_with(z)
                    && !key.proj[z.proj.len()..]
                        .iter()
                        .any(|s| matches!(s, ProjKey::Deref | ProjKey::Via(_)))
            })
        })
    }

    /// The canonical name of `key` for object facts: through aliases and
    /// tracked pointers, and `P.Below.rest` for `(*p).rest` with `p` known
    /// only to point somewhere at or below `P`.
    pub fn object_key(&self, key: &PlaceKey) -> PlaceKey {
        let k = self.normalize_fully(key);
        if self.within.is_empty() {
            return k;
        }
        let Some(i) = k.proj.iter().position(|s| *s == ProjKey::Deref) else {
            return k;
        };
        // The pointer dereferenced, or a value holding it.
        let mut base = PlaceKey {
            local: k.local,
            proj: k.proj[..i].to_vec(),
        };
        loop {
            if let Some(t) = self.within.get(&base) {
                // Somewhere below the target, then what follows the
                // dereference (an accessor's step, a field, another
                // pointer).
                let mut proj = t.proj.clone();
                proj.push(ProjKey::Below);
                proj.extend_from_slice(&k.proj[i + 1..]);
                return PlaceKey {
                    local: t.local,
                    proj,
                };
            }
            if base.proj.pop().is_none() {
                return k;
            }
        }
    }

    /// Where the pointers stored at `k` (or in a value containing it)
    /// point somewhere below, through aliases.
    fn effective_within(&self, k: &PlaceKey) -> Option<PlaceKey> {
        let mut base = self.normalize_fully(k);
        loop {
            if let Some(t) = self.within.get(&base) {
                return Some(t.clone());
            }
            base.proj.pop()?;
        }
    }

    /// The pointers stored at or in `place` no longer point where they did
    /// (an object fact, like the rest of `objects`).
    pub fn forget_within(&mut self, place: &PlaceKey) {
        // (A write behind a pointer stored at `k` leaves where it points.)
        self.within.retain(|k, _| {
            !k.starts_with(place)
                && (!place.starts_with(k) || place.proj[k.proj.len()..].contains(&ProjKey::Deref))
        });
    }

    /// The places whose pointers point somewhere at or below a place, and
    /// that place.
    pub fn within_entries(&self) -> Vec<(PlaceKey, PlaceKey)> {
        self.within
            .iter()
            .map(|(k, t)| (k.clone(), t.clone()))
            .collect()
    }

    /// The value now at `dest` is (part of) the one at `src`: its pointers
    /// point where `src`'s did.
    pub fn carry_within(&mut self, src: &PlaceKey, dest: &PlaceKey) {
        if let Some(t) = self.effective_within(src) {
            self.within.insert(dest.clone(), t);
        }
    }

    /// Every pointer the value at `ptr` holds points somewhere at or below
    /// `target` (`target` itself may end in `Below`).
    pub fn set_points_within(&mut self, ptr: PlaceKey, mut target: PlaceKey) {
        // Somewhere below the part before the first `Below`; through a
        // pointer stored there if one is crossed after it (`X.Below.Deref`:
        // in the memory of another object).
        if let Some(i) = target.proj.iter().position(|s| *s == ProjKey::Handle) {
            // Behind a handle: which object is not known, nor where in it.
            target.proj.truncate(i + 1);
        } else if let Some(i) = target.proj.iter().position(|s| *s == ProjKey::Below) {
            let crosses = target.proj[i..].contains(&ProjKey::Deref);
            target.proj.truncate(i);
            if crosses {
                target.proj.push(ProjKey::Below);
                target.proj.push(ProjKey::Deref);
            }
        }
        self.within.insert(ptr, target);
    }

    /// The bounds of the value at `key` (normalised).
    pub fn object_bounds(&self, key: &PlaceKey) -> Option<Bounds> {
        self.objects.bounds_of(&self.object_key(key))
    }

    pub fn resolve(&self, place: &PlaceKey, aspect: Aspect) -> Resolved {
        if place.proj.is_empty() {
            match (self.vals.get(&place.local), aspect) {
                (Some(Val::Const(c)), Aspect::Value) => return Resolved::Const(*c),
                (Some(Val::Copy(source)), _) => return Resolved::Key(source.clone(), aspect),
                (Some(Val::Variant(of)), Aspect::Discr) => {
                    return Resolved::Key(of.clone(), Aspect::Discr);
                }
                (Some(Val::Discr(of)), Aspect::Value) => {
                    return Resolved::Key(of.clone(), Aspect::Discr);
                }
                _ => {}
            }
            return Resolved::Key(place.clone(), aspect);
        }
        Resolved::Key(self.normalize(place), aspect)
    }

    pub fn resolve_operand(&self, op: &Operand) -> Option<Resolved> {
        match op {
            Operand::Constant(c) => match c.value {
                ConstValue::Scalar(v) => Some(Resolved::Const(v)),
                _ => None,
            },
            Operand::Copy(p) | Operand::Move(p) => {
                PlaceKey::of(p).map(|k| self.resolve(&k, Aspect::Value))
            }
            Operand::RuntimeChecks(_) => None,
        }
    }

    /// The place an operand points to, if it is a tracked reference (or,
    /// for a pointer in a field, what that field's pointer points to).
    pub fn pointee(&self, op: &Operand) -> Option<PlaceKey> {
        let (Operand::Copy(p) | Operand::Move(p)) = op else {
            return None;
        };
        let key = PlaceKey::of(p)?;
        if !key.proj.is_empty() {
            return Some(self.normalize(&key.with(ProjKey::Deref)));
        }
        match self.vals.get(&key.local) {
            Some(Val::Ref(target)) => Some(target.clone()),
            // A copy of a pointer points where the pointer does.
            Some(Val::Copy(source)) if !source.has_deref() => Some(source.with(ProjKey::Deref)),
            _ => None,
        }
    }

    pub fn known(&self, key: &PlaceKey, aspect: Aspect) -> Option<&Known> {
        self.known.get(&(key.clone(), aspect))
    }

    /// What `resolved` is known to be: a constant, or a fact.
    pub fn value_of(&self, resolved: &Resolved) -> Option<Known> {
        match resolved {
            Resolved::Const(c) => Some(Known::Is(*c)),
            Resolved::Key(k, a) => {
                if let Some(known) = self.known.get(&(k.clone(), *a)) {
                    return Some(known.clone());
                }
                // A comparison whose operand is known.
                if *a == Aspect::Value
                    && k.proj.is_empty()
                    && let Some(Val::Cmp { key, aspect, c, eq }) = self.vals.get(&k.local)
                {
                    return self
                        .comparison(key, *aspect, *c, *eq)
                        .map(|t| Known::Is(u128::from(t)));
                }
                None
            }
        }
    }

    /// The value of `(key.aspect == c) == eq`, if the facts decide it.
    fn comparison(&self, key: &PlaceKey, aspect: Aspect, c: u128, eq: bool) -> Option<bool> {
        match self.known.get(&(key.clone(), aspect))? {
            Known::Is(x) => Some((*x == c) == eq),
            Known::IsNot(not) if not.contains(&c) => Some(!eq),
            Known::IsNot(_) => None,
        }
    }

    /// Records that `resolved` equals `value` (or is none of `values` when
    /// `value` is `None`); returns false when that contradicts what is known.
    pub fn assume(&mut self, resolved: &Resolved, value: Option<u128>, values: &[u128]) -> bool {
        // A tested comparison says something about what was compared.
        if let Resolved::Key(key, Aspect::Value) = resolved
            && key.proj.is_empty()
            && let Some(Val::Cmp {
                key: of,
                aspect,
                c,
                eq,
            }) = self.vals.get(&key.local).cloned()
        {
            let truth = match value {
                Some(v) => Some(v != 0),
                None if values.contains(&0) => Some(true),
                None => None,
            };
            if let Some(t) = truth {
                let target = Resolved::Key(of, aspect);
                let feasible = if t == eq {
                    self.assume(&target, Some(c), &[])
                } else {
                    self.assume(&target, None, &[c])
                };
                if !feasible {
                    return false;
                }
            }
        }
        // A local whose value brings object facts (an identity test's
        // result, a lookup's).
        if let Resolved::Key(key, aspect) = resolved
            && key.proj.is_empty()
        {
            let discr = *aspect == Aspect::Discr;
            let known = match value {
                Some(v) => Some(v),
                // The other of two values.
                None => match values {
                    [0] => Some(1),
                    [1] => Some(0),
                    _ => None,
                },
            };
            if let Some(v) = known {
                self.objects.assume(key.local, v, discr, value.is_some());
            }
        }
        let consistent = |k: &Known| match (k, value) {
            (Known::Is(x), Some(v)) => *x == v,
            (Known::Is(x), None) => !values.contains(x),
            (Known::IsNot(not), Some(v)) => !not.contains(&v),
            (Known::IsNot(_), None) => true,
        };
        match resolved {
            Resolved::Const(c) => consistent(&Known::Is(*c)),
            Resolved::Key(key, aspect) => {
                let slot = (key.clone(), *aspect);
                if let Some(k) = self.known.get(&slot)
                    && !consistent(k)
                {
                    return false;
                }
                let mut new = match (value, self.known.get(&slot)) {
                    (Some(v), _) => Known::Is(v),
                    (None, Some(Known::Is(x))) => Known::Is(*x),
                    (None, Some(Known::IsNot(not))) => {
                        let mut all: Vec<u128> = not.iter().chain(values).copied().collect();
                        all.sort_unstable();
                        all.dedup();
                        Known::IsNot(all)
                    }
                    (None, None) => {
                        let mut all = values.to_vec();
                        all.sort_unstable();
                        all.dedup();
                        Known::IsNot(all)
                    }
                };
                if let (Known::IsNot(not), Aspect::Discr, Some(domain)) =
                    (&new, aspect, self.domains.get(key))
                {
                    let left: Vec<u128> = domain
                        .iter()
                        .filter(|d| !not.contains(d))
                        .copied()
                        .collect();
                    match left.as_slice() {
                        [] => return false,
                        [only] => new = Known::Is(*only),
                        _ => {}
                    }
                }
                self.known.insert(slot, new);
                true
            }
        }
    }

    /// Records the discriminants the enum at `key` can have.
    pub fn set_domain(&mut self, key: &PlaceKey, discrs: Vec<u128>) {
        let key = self.normalize(key);
        self.domains.entry(key).or_insert(discrs);
    }

    /// Makes pseudo-local `pseudo` an alias from the start (see
    /// `body::ENTRY_ARG0`).
    pub fn alias_entry(&mut self, pseudo: LocalId, val: Val) {
        self.vals.insert(pseudo, val);
    }

    /// Local `local` (just written) holds the boolean "the enum at `key`
    /// has discriminant `c`" (`eq`) or "has not" (`!eq`): a callee that
    /// tests its argument's variant (`is_none`, `matches!`). Testing the
    /// local later teaches the variant, even where the paths of the two
    /// answers have been merged.
    pub fn set_discr_test(
        &mut self,
        local: LocalId,
        key: PlaceKey,
        aspect: Aspect,
        c: u128,
        eq: bool,
    ) {
        let key = self.normalize(&key);
        self.vals.insert(local, Val::Cmp { key, aspect, c, eq });
    }

    /// Local `local` (just written) holds an enum whose variant is that of
    /// the enum at `key`.
    pub fn set_same_variant(&mut self, local: LocalId, key: PlaceKey) {
        let key = self.normalize(&key);
        self.vals.insert(local, Val::Variant(key));
    }

    pub fn set_known(&mut self, key: PlaceKey, aspect: Aspect, value: u128) {
        self.known.insert((key, aspect), Known::Is(value));
    }

    /// Before `place` changes: aliases holding its old value (or the old
    /// value of something inside it) become independent and keep its facts;
    /// then every fact about `place` and what is inside it is forgotten.
    fn forget(&mut self, place: &PlaceKey) {
        self.forget_but(place, false, true);
    }

    /// `forget`, optionally keeping the pointers stored in the place (see
    /// `forget_memory`), and the object facts (which a call's frame rule
    /// decides about: aliases only get a copy of them).
    fn forget_but(&mut self, place: &PlaceKey, keep_addrs: bool, objects: bool) {
        let aliases: Vec<(LocalId, Val)> = self
            .vals
            .iter()
            .filter(|(l, v)| {
                **l != place.local
                    && match v {
                        Val::Copy(k)
                        | Val::Discr(k)
                        | Val::Variant(k)
                        // Memory behind a pointer the aliased value holds
                        // is not part of that value.
                        | Val::Cmp { key: k, .. } => {
                            k.starts_with(place)
                                || (place.starts_with(k)
                                    && !PlaceKey {
                                        local: place.local,
                                        proj: place.proj[k.proj.len()..].to_vec(),
                                    }
                                    .has_deref())
                        }
                        Val::Const(_) | Val::Ref(_) => false,
                    }
            })
            .map(|(l, v)| (*l, v.clone()))
            .collect();
        for (alias, val) in aliases {
            self.vals.remove(&alias);
            let root = PlaceKey::local(alias);
            match val {
                Val::Copy(source) => {
                    // The alias keeps the old value: its object facts go
                    // with it (all of them when the whole source changes).
                    if objects && source.starts_with(place) {
                        self.objects.moved(&source, &root);
                    } else {
                        self.objects.copied(&source, &root);
                    }
                    // And where its pointers point.
                    let within: Vec<(PlaceKey, PlaceKey)> = self
                        .within
                        .iter()
                        .filter(|(k, _)| k.starts_with(&source))
                        .map(|(k, t)| (root.with_suffix(&k.proj[source.proj.len()..]), t.clone()))
                        .collect();
                    self.carry_within(&source, &root);
                    self.within.extend(within);
                    let moved: Vec<((PlaceKey, Aspect), Known)> = self
                        .known
                        .iter()
                        .filter(|((k, _), _)| k.starts_with(&source))
                        .map(|((k, a), v)| {
                            (
                                (root.with_suffix(&k.proj[source.proj.len()..]), *a),
                                v.clone(),
                            )
                        })
                        .collect();
                    self.known.extend(moved);
                    let domains: Vec<(PlaceKey, Vec<u128>)> = self
                        .domains
                        .iter()
                        .filter(|(k, _)| k.starts_with(&source))
                        .map(|(k, d)| (root.with_suffix(&k.proj[source.proj.len()..]), d.clone()))
                        .collect();
                    self.domains.extend(domains);
                    let addrs: Vec<(PlaceKey, Location)> = self
                        .addrs
                        .iter()
                        .filter(|(k, _)| k.starts_with(&source))
                        .map(|(k, l)| (root.with_suffix(&k.proj[source.proj.len()..]), l.clone()))
                        .collect();
                    self.addrs.extend(addrs);
                }
                Val::Discr(of) => {
                    if let Some(k) = self.known.get(&(of, Aspect::Discr)).cloned() {
                        self.known.insert((root, Aspect::Value), k);
                    }
                }
                Val::Variant(of) => {
                    if let Some(k) = self.known.get(&(of, Aspect::Discr)).cloned() {
                        self.known.insert((root, Aspect::Discr), k);
                    }
                }
                Val::Cmp { key, aspect, c, eq } => {
                    if let Some(t) = self.comparison(&key, aspect, c, eq) {
                        self.known
                            .insert((root, Aspect::Value), Known::Is(u128::from(t)));
                    }
                }
                Val::Const(_) | Val::Ref(_) => {}
            }
        }
        // A pointer to what an accessor returned for the old value of the
        // place (or of something containing it) is not one to what it
        // would return now.
        self.vals.retain(|_, v| match v {
            Val::Ref(k) => k
                .via_base()
                .is_none_or(|b| !b.starts_with(place) && !place.starts_with(&b)),
            _ => true,
        });
        self.known.retain(|(k, _), _| !k.starts_with(place));
        self.holds.retain(|k, source| {
            !k.starts_with(place) && !place.starts_with(k) && *source != place.local
        });
        self.refs
            .retain(|k, _| !k.starts_with(place) && !place.starts_with(k));
        if objects {
            // A reference through the pointer that ends here still points
            // where it did: somewhere within the pointer's target.
            let rehomed: Vec<(PlaceKey, PlaceKey)> = self
                .vals
                .iter()
                .filter_map(|(l, v)| {
                    let Val::Ref(r) = v else { return None };
                    let i = r.proj.iter().position(|s| *s == ProjKey::Deref)?;
                    let base = PlaceKey {
                        local: r.local,
                        proj: r.proj[..i].to_vec(),
                    };
                    (*l != place.local && base.starts_with(place))
                        .then(|| Some((PlaceKey::local(*l), self.effective_within(&base)?)))
                        .flatten()
                })
                .collect();
            self.forget_within(place);
            for (l, _) in &rehomed {
                self.vals.remove(&l.local);
            }
            self.within.extend(rehomed);
        }
        if !keep_addrs {
            self.addrs.retain(|k, _| !k.starts_with(place));
        }
        if place.proj.is_empty() {
            self.vals.remove(&place.local);
        }
        if objects {
            self.objects.kill(place, None);
        }
    }

    /// Memory behind pointers, and the locals whose address escaped, may
    /// have changed (a call, a write through a pointer).
    pub fn forget_memory(&mut self, escaped: &[LocalId]) {
        self.forget_memory_values(escaped);
        self.forget_memory_objects(escaped);
    }

    /// The object facts of memory a write through an unknown pointer may
    /// change: behind pointers (but frozen memory), in locks' data, and in
    /// the locals whose address escaped.
    pub fn forget_memory_objects(&mut self, escaped: &[LocalId]) {
        self.forget_memory_objects_except(escaped, &[]);
    }

    /// [`Facts::forget_memory_objects`], but for the places at or below
    /// `kept` (memory only a handle the caller holds reaches).
    pub fn forget_memory_objects_except(&mut self, escaped: &[LocalId], kept: &[PlaceKey]) {
        let kept_place = |p: &PlaceKey| kept.iter().any(|k| p.starts_with(k));
        self.within
            .retain(|k, _| kept_place(k) || !(k.is_memory() || escaped.contains(&k.local)));
        let mut places = self.objects.places();
        places.retain(|p| {
            !kept_place(p) && ((p.is_memory() && !self.is_frozen(p)) || escaped.contains(&p.local))
        });
        // The outermost ones: a kill covers what is inside.
        places.sort();
        let mut outer: Vec<PlaceKey> = Vec::new();
        for p in places {
            if !outer.iter().any(|o| p.starts_with(o)) {
                outer.push(p);
            }
        }
        for p in outer {
            self.objects.kill(&p, None);
        }
    }

    /// [`Facts::forget_memory`] for the value facts only: a call's effect
    /// on the object facts is its frame rule's business.
    pub fn forget_memory_values(&mut self, escaped: &[LocalId]) {
        // Facts about memory behind pointers, and aliases that read it.
        self.forget_matching(PlaceKey::is_memory, false);
        // Pointers to what accessors returned for memory that may have
        // changed.
        self.vals.retain(|_, v| match v {
            Val::Ref(k) => k.via_base().is_none_or(|b| !b.is_memory()),
            _ => true,
        });
        // A local whose address escaped keeps the pointers stored in it: a
        // guard lent out by `&mut` (`guard.get()`, `CondVar::wait(&mut g)`)
        // still points to its lock afterwards. Code that changes which lock
        // a guard refers to through a `&mut` does not exist in practice; the
        // value facts (drop flags, variants) are forgotten as before.
        for &l in escaped {
            self.forget_but(&PlaceKey::local(l), true, false);
        }
    }

    /// Memory behind pointers the facts do not follow may have changed (a
    /// write into a lock's data): its value facts, and its object facts
    /// but those of frozen memory.
    fn forget_pointed(&mut self) {
        self.forget_matching(PlaceKey::has_deref, false);
        let mut places = self.objects.places();
        places.retain(|p| p.has_deref() && !self.is_frozen(p));
        for p in places {
            self.objects.kill(&p, None);
        }
    }

    /// Forgets every fact about a place `which` says may have changed, and
    /// aliases' reads of it (and, with `objects`, its object facts).
    fn forget_matching(&mut self, which: fn(&PlaceKey) -> bool, objects: bool) {
        let mut behind: Vec<PlaceKey> = self
            .known
            .keys()
            .filter(|(k, _)| which(k))
            .map(|(k, _)| k.clone())
            .collect();
        behind.extend(self.addrs.keys().filter(|k| which(k)).cloned());
        behind.extend(self.holds.keys().filter(|k| which(k)).cloned());
        behind.extend(self.vals.values().filter_map(|v| match v {
            Val::Copy(k) | Val::Discr(k) | Val::Variant(k) | Val::Cmp { key: k, .. }
                if which(k) =>
            {
                Some(k.clone())
            }
            _ => None,
        }));
        behind.sort();
        behind.dedup();
        for k in behind {
            self.forget_but(&k, false, objects);
        }
    }

    /// Local `local` (just written) points at the data of the lock guard
    /// local `g` holds: it is what a view of the guard returned.
    pub fn set_view(&mut self, local: LocalId, g: LocalId) {
        self.vals
            .insert(local, Val::Ref(PlaceKey::local(guard_data(g))));
    }

    /// Local `local` (just written) points at `key`: what an accessor
    /// returned for the place before its last projection.
    pub fn set_points_at(&mut self, local: LocalId, key: PlaceKey) {
        self.vals.insert(local, Val::Ref(key));
    }

    /// The places with facts (values, pointers, what a store put there) that end a `Via`
    /// projection, once each: `(*_5).Via(n)` for a fact at `(*_5).Via(n).1`.
    pub fn via_places(&self) -> Vec<PlaceKey> {
        let mut out: Vec<PlaceKey> = self
            .known
            .keys()
            .map(|(k, _)| k)
            .chain(self.addrs.keys())
            .chain(self.holds.keys())
            .filter_map(|k| {
                let end = k.proj.iter().rposition(|p| matches!(p, ProjKey::Via(_)))?;
                Some(PlaceKey {
                    local: k.local,
                    proj: k.proj[..=end].to_vec(),
                })
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The locals pointing at what an accessor returned (`Val::Ref` to a
    /// place with a `Via`), with that place.
    pub fn via_refs(&self) -> Vec<(LocalId, PlaceKey)> {
        self.vals
            .iter()
            .filter_map(|(l, v)| match v {
                Val::Ref(k) if k.via_base().is_some() => Some((*l, k.clone())),
                _ => None,
            })
            .collect()
    }

    /// The guard local `g` no longer holds its lock as it did (released,
    /// moved, lent to something that may release it): nothing is known
    /// about the data any more.
    pub fn forget_guard_data(&mut self, g: LocalId) {
        self.forget(&PlaceKey::local(guard_data(g)));
    }

    /// The place at `key` (possibly behind a pointer) gets a value nothing
    /// is known about, and nothing else changes: a drop in place behind a
    /// `&mut` only this body can reach.
    pub fn forget_place(&mut self, key: &PlaceKey) {
        let key = self.normalize(key);
        self.forget(&key);
    }

    /// `place` gets a value nothing is known about (a call's destination,
    /// `StorageDead`, a drop).
    pub fn write_unknown(&mut self, place: &Place, escaped: &[LocalId]) {
        match PlaceKey::of(place) {
            Some(key) if !key.has_deref() => self.forget(&self.normalize(&key)),
            // A place in a lock's data, through a view of its guard: that
            // place changes, and what other pointers may reach.
            Some(key) if is_guard_data(self.normalize(&key).local) => {
                let key = self.normalize(&key);
                self.forget_pointed();
                self.forget(&key);
            }
            _ => self.forget_memory(escaped),
        }
    }

    /// Forgets what a write to `place` invalidates; the place written, if
    /// facts can name it.
    fn prepare_write(&mut self, place: &Place, escaped: &[LocalId]) -> Option<PlaceKey> {
        let Some(key) = PlaceKey::of(place) else {
            self.forget_memory(escaped);
            return None;
        };
        let key = self.normalize(&key);
        if key.has_deref() {
            // Another pointer may alias it: everything behind pointers goes.
            self.forget_memory(escaped);
        } else if is_guard_data(key.local) {
            // A pointer the facts do not follow may point into the data.
            self.forget_pointed();
        }
        self.forget(&key);
        Some(key)
    }

    pub fn set_discriminant(&mut self, place: &Place, discr: Option<u128>, escaped: &[LocalId]) {
        let Some(key) = self.prepare_write(place, escaped) else {
            return;
        };
        if let Some(d) = discr {
            self.set_known(key, Aspect::Discr, d);
        }
    }

    /// `place = rvalue`. `adt_discr` gives the discriminant value of an
    /// aggregate's variant.
    pub fn assign(
        &mut self,
        place: &Place,
        rvalue: &Rvalue,
        adt_discr: impl Fn(&Rvalue) -> Option<u128>,
        escaped: &[LocalId],
    ) {
        // What the new value is, read before the place is forgotten (the
        // right side may mention it).
        let new = match rvalue {
            Rvalue::Use(Operand::Constant(c)) => match c.value {
                ConstValue::Scalar(v) => Some(Val::Const(v)),
                _ => None,
            },
            Rvalue::Use(Operand::Copy(p) | Operand::Move(p)) | Rvalue::CopyForDeref(p) => {
                PlaceKey::of(p)
                    .map(|k| self.resolve(&k, Aspect::Value))
                    .map(|r| match r {
                        Resolved::Const(c) => Val::Const(c),
                        Resolved::Key(k, Aspect::Value) => Val::Copy(k),
                        Resolved::Key(k, Aspect::Discr) => Val::Discr(k),
                    })
            }
            Rvalue::Discriminant(p) => {
                PlaceKey::of(p).and_then(|k| match self.resolve(&k, Aspect::Discr) {
                    Resolved::Key(k, Aspect::Discr) => Some(Val::Discr(k)),
                    _ => None,
                })
            }
            Rvalue::Ref { place: p, .. } | Rvalue::AddressOf { place: p, .. } => {
                PlaceKey::of(p).map(|k| Val::Ref(self.normalize(&k)))
            }
            // A pointer cast to another pointer type: the same pointer.
            Rvalue::Cast {
                kind: kmir::CastKind::Other(name),
                operand: Operand::Copy(p) | Operand::Move(p),
                ..
            } if **name == *"PtrToPtr" || name.starts_with("PointerCoercion(MutToConstPointer") => {
                PlaceKey::of(p).map(|k| match self.resolve(&k, Aspect::Value) {
                    Resolved::Const(c) => Val::Const(c),
                    Resolved::Key(k, Aspect::Value) => Val::Copy(k),
                    Resolved::Key(k, Aspect::Discr) => Val::Discr(k),
                })
            }
            Rvalue::BinaryOp {
                op: op @ (BinOp::Eq | BinOp::Ne),
                lhs,
                rhs,
            } => match (self.resolve_operand(lhs), self.resolve_operand(rhs)) {
                (Some(Resolved::Key(key, aspect)), Some(Resolved::Const(c)))
                | (Some(Resolved::Const(c)), Some(Resolved::Key(key, aspect))) => Some(Val::Cmp {
                    key,
                    aspect,
                    c,
                    eq: *op == BinOp::Eq,
                }),
                (Some(Resolved::Const(a)), Some(Resolved::Const(b))) => {
                    Some(Val::Const(u128::from((a == b) == (*op == BinOp::Eq))))
                }
                _ => None,
            },
            // `!(x == c)`: only comparisons are known to be booleans.
            Rvalue::UnaryOp {
                op: UnOp::Not,
                operand: Operand::Copy(p) | Operand::Move(p),
            } => match PlaceKey::of(p)
                .filter(|k| k.proj.is_empty())
                .and_then(|k| self.vals.get(&k.local))
            {
                Some(Val::Cmp { key, aspect, c, eq }) => Some(Val::Cmp {
                    key: key.clone(),
                    aspect: *aspect,
                    c: *c,
                    eq: !*eq,
                }),
                _ => None,
            },
            _ => None,
        };
        let discr = match rvalue {
            Rvalue::Aggregate { .. } | Rvalue::Use(Operand::Constant(_)) => adt_discr(rvalue),
            _ => None,
        };
        // What is known about the new value, for destinations that cannot
        // hold an alias (fields, memory behind pointers).
        let carried: Vec<(Aspect, Known)> = match &new {
            Some(Val::Const(c)) => vec![(Aspect::Value, Known::Is(*c))],
            Some(Val::Copy(k)) => [Aspect::Value, Aspect::Discr]
                .into_iter()
                .filter_map(|a| self.known.get(&(k.clone(), a)).map(|v| (a, v.clone())))
                .collect(),
            Some(Val::Discr(k)) => self
                .known
                .get(&(k.clone(), Aspect::Discr))
                .map(|v| (Aspect::Value, v.clone()))
                .into_iter()
                .collect(),
            _ => Vec::new(),
        };
        let carried_addrs = match &new {
            Some(Val::Copy(k)) => self.addrs_under(k),
            _ => Vec::new(),
        };
        let held_local = match (&new, rvalue) {
            (Some(Val::Copy(k)), Rvalue::Use(_)) if k.proj.is_empty() => Some(k.local),
            _ => None,
        };
        // Pointers the aggregate's fields hold, by where they point.
        let field_refs: Vec<(u32, PlaceKey)> = match rvalue {
            Rvalue::Aggregate { operands, .. } => operands
                .iter()
                .enumerate()
                .filter_map(|(i, op)| {
                    let (Operand::Copy(p) | Operand::Move(p)) = op else {
                        return None;
                    };
                    let k = PlaceKey::of(p)?;
                    // Where the pointer it holds points (if it is one).
                    match (k.proj.is_empty(), self.vals.get(&k.local)) {
                        (true, Some(Val::Ref(t))) => Some((i as u32, t.clone())),
                        _ => Some((i as u32, self.normalize_fully(&k).with(ProjKey::Deref))),
                    }
                })
                .collect(),
            _ => Vec::new(),
        };
        let Some(key) = self.prepare_write(place, escaped) else {
            return;
        };
        if !key.has_deref() {
            // An enum's fields are its variant's.
            let base = match (rvalue, discr) {
                (
                    Rvalue::Aggregate {
                        kind: kmir::AggregateKind::Adt { variant, .. },
                        ..
                    },
                    Some(_),
                ) => key.with(ProjKey::Downcast(*variant)),
                _ => key.clone(),
            };
            for (i, target) in field_refs {
                self.refs.insert(base.with(ProjKey::Field(i)), target);
            }
        }
        if let Some(source) = held_local
            && !key.proj.is_empty()
            && source != key.local
        {
            self.holds.insert(key.clone(), source);
        }
        for (suffix, l) in carried_addrs {
            self.addrs.insert(key.with_suffix(&suffix), l);
        }
        if key.proj.is_empty() && !key.has_deref() {
            if let Some(v) = new {
                // A copy of a copy names the original; never an alias chain.
                self.vals.insert(key.local, v);
            }
        } else {
            for (aspect, known) in carried {
                self.known.insert((key.clone(), aspect), known);
            }
        }
        if let Some(d) = discr {
            self.set_known(key, Aspect::Discr, d);
        }
    }

    /// The local whose value the place at `key` (not a local itself) was
    /// last written with, while neither has been written since.
    pub fn holds(&self, key: &PlaceKey) -> Option<LocalId> {
        self.holds.get(&self.normalize(key)).copied()
    }

    /// The storage of local `l` ends (or starts): nothing is known about
    /// it any more, but a place a store filled from it still holds what it
    /// held then (a later write to `l` ends that too).
    pub fn end_storage(&mut self, l: LocalId) {
        let filled: Vec<PlaceKey> = self
            .holds
            .iter()
            .filter(|(_, s)| **s == l)
            .map(|(k, _)| k.clone())
            .collect();
        self.forget(&PlaceKey::local(l));
        for k in filled {
            self.holds.insert(k, l);
        }
    }

    /// `key` (a place, not a local) holds what `local` held when it was
    /// written there: put back after a call that could not change either.
    pub fn set_holds(&mut self, key: PlaceKey, local: LocalId) {
        if !key.proj.is_empty() {
            self.holds.insert(key, local);
        }
    }

    /// Where the pointer stored at `key` points, if known.
    pub fn addr(&self, key: &PlaceKey) -> Option<&Location> {
        self.addrs.get(&self.normalize_fully(key))
    }

    /// A place's canonical name: through the alias of its local, also for
    /// the local itself (`_7` copied from `_5` is `_5`).
    pub fn normalize_fully(&self, key: &PlaceKey) -> PlaceKey {
        match self.vals.get(&key.local) {
            Some(Val::Copy(source)) => source.with_suffix(&key.proj),
            _ => self.normalize(key),
        }
    }

    /// The pointers stored inside the value at `key`: (projection below
    /// `key`, location).
    pub fn addrs_under(&self, key: &PlaceKey) -> Vec<(Vec<ProjKey>, Location)> {
        let key = self.normalize_fully(key);
        self.addrs
            .range(key.clone()..)
            .take_while(|(k, _)| k.starts_with(&key))
            .map(|(k, l)| (k.proj[key.proj.len()..].to_vec(), l.clone()))
            .collect()
    }

    /// What is known about the value at `key` and inside it: (projection
    /// below `key`, aspect, fact).
    pub fn known_under(&self, key: &PlaceKey) -> Vec<(Vec<ProjKey>, Aspect, Known)> {
        let key = self.normalize_fully(key);
        self.known
            .iter()
            .filter(|((k, _), _)| k.starts_with(&key))
            .map(|((k, a), v)| (k.proj[key.proj.len()..].to_vec(), *a, v.clone()))
            .collect()
    }

    /// Records facts about the parts of the value just written to `place`.
    pub fn set_known_under(&mut self, place: &Place, entries: Vec<(Vec<ProjKey>, Aspect, Known)>) {
        if let Some(key) = PlaceKey::of(place) {
            self.set_known_under_key(&key, entries);
        }
    }

    /// Records facts about the parts of the value at `key`.
    pub fn set_known_under_key(
        &mut self,
        key: &PlaceKey,
        entries: Vec<(Vec<ProjKey>, Aspect, Known)>,
    ) {
        let key = self.normalize(key);
        for (suffix, aspect, known) in entries {
            self.known.insert((key.with_suffix(&suffix), aspect), known);
        }
    }

    /// Records pointers stored inside the value just written to `place`.
    pub fn set_addrs(&mut self, place: &Place, entries: Vec<(Vec<ProjKey>, Location)>) {
        if let Some(key) = PlaceKey::of(place) {
            self.set_addrs_under(&key, entries);
        }
    }

    /// The pointers stored inside the value at `key`, by projection below it.
    pub fn set_addrs_under(&mut self, key: &PlaceKey, entries: Vec<(Vec<ProjKey>, Location)>) {
        let key = self.normalize_fully(key);
        for (suffix, l) in entries {
            self.addrs.insert(key.with_suffix(&suffix), l);
        }
    }

    /// Keeps only what both sides know; says whether `self` lost anything.
    pub fn intersect(&mut self, other: &Facts) -> bool {
        let before = (
            self.vals.len(),
            self.known.len(),
            self.addrs.len(),
            self.holds.len(),
        );
        let value = |f: &Facts, l: LocalId, discr: bool| -> Option<crate::objects::Value> {
            let aspect = if discr { Aspect::Discr } else { Aspect::Value };
            match f.value_of(&f.resolve(&PlaceKey::local(l), aspect))? {
                Known::Is(v) => Some(crate::objects::Value::Is(v)),
                Known::IsNot(vs) => Some(crate::objects::Value::IsNot(vs)),
            }
        };
        let guarded = self.objects.join_guarded(
            &other.objects,
            |l, d| value(self, l, d),
            |l, d| value(other, l, d),
        );
        // A pointer one side names by an alias of a place the other names.
        let within: BTreeMap<PlaceKey, PlaceKey> = self
            .within
            .keys()
            .chain(other.within.keys())
            .filter_map(|k| {
                let a = self.effective_within(k)?;
                (other.effective_within(k)? == a).then(|| (k.clone(), a))
            })
            .collect();
        let within_changed = within != self.within;
        self.within = within;
        self.vals.retain(|l, v| other.vals.get(l) == Some(v));
        self.addrs.retain(|k, l| other.addrs.get(k) == Some(l));
        self.holds.retain(|k, l| other.holds.get(k) == Some(l));
        let refs = self.refs.len();
        self.refs.retain(|k, l| other.refs.get(k) == Some(l));
        let mut changed = refs != self.refs.len() || within_changed;

        changed |= self.objects.join(&other.objects);
        changed |= self.objects.set_guarded(guarded);
        // The values neither side can have stay excluded: one variant on
        // each side (`Ok` here, `OkNotifyPoll` there) is "neither of the
        // others" of the enum's variants after the merge.
        let domains = &self.domains;
        let other_domains = &other.domains;
        self.known.retain(|slot, k| {
            let excluded = |x: &Known, domain: Option<&Vec<u128>>| -> Option<Vec<u128>> {
                match x {
                    Known::IsNot(v) => Some(v.clone()),
                    Known::Is(v) => Some(domain?.iter().filter(|d| *d != v).copied().collect()),
                }
            };
            let Some(b) = other.known.get(slot) else {
                return false;
            };
            if &*k == b {
                return true;
            }
            let domain = match slot.1 {
                Aspect::Discr => domains.get(&slot.0).or_else(|| other_domains.get(&slot.0)),
                Aspect::Value => None,
            };
            let (Some(a), Some(b)) = (excluded(k, domain), excluded(b, domain)) else {
                return false;
            };
            let common: Vec<u128> = a.iter().filter(|x| b.contains(x)).copied().collect();
            if common.is_empty() {
                return false;
            }
            let new = Known::IsNot(common);
            changed |= *k != new;
            *k = new;
            true
        });
        changed
            || before
                != (
                    self.vals.len(),
                    self.known.len(),
                    self.addrs.len(),
                    self.holds.len(),
                )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kmir::{Constant, TyId};

    fn local(l: LocalId) -> Place {
        Place {
            local: l,
            projection: Box::new([]),
        }
    }
    fn konst(v: u128) -> Rvalue {
        Rvalue::Use(Operand::Constant(Box::new(Constant {
            ty: 0 as TyId,
            value: ConstValue::Scalar(v),
        })))
    }
    fn copy(l: LocalId) -> Rvalue {
        Rvalue::Use(Operand::Copy(local(l)))
    }
    fn none(_: &Rvalue) -> Option<u128> {
        None
    }

    #[test]
    fn copies_share_what_is_learnt() {
        let mut f = Facts::default();
        f.assign(&local(4), &copy(2), none, &[]);
        let r = f.resolve_operand(&Operand::Move(local(4))).unwrap();
        assert!(f.assume(&r, Some(1), &[]));
        f.assign(&local(7), &copy(2), none, &[]);
        let r7 = f.resolve_operand(&Operand::Copy(local(7))).unwrap();
        assert_eq!(f.value_of(&r7), Some(Known::Is(1)));
        assert!(!f.clone().assume(&r7, Some(0), &[]));
    }

    #[test]
    fn overwriting_the_source_keeps_the_alias_facts() {
        let mut f = Facts::default();
        f.assign(&local(4), &copy(2), none, &[]);
        let r = f.resolve_operand(&Operand::Copy(local(2))).unwrap();
        assert!(f.assume(&r, Some(3), &[]));
        f.assign(&local(2), &konst(9), none, &[]);
        let r4 = f.resolve_operand(&Operand::Copy(local(4))).unwrap();
        assert_eq!(f.value_of(&r4), Some(Known::Is(3)));
        let r2 = f.resolve_operand(&Operand::Copy(local(2))).unwrap();
        assert_eq!(f.value_of(&r2), Some(Known::Is(9)));
    }

    #[test]
    fn discriminant_tests_and_escapes() {
        let mut f = Facts::default();
        f.assign(&local(5), &Rvalue::Discriminant(local(3)), none, &[]);
        let r = f.resolve_operand(&Operand::Move(local(5))).unwrap();
        assert_eq!(r, Resolved::Key(PlaceKey::local(3), Aspect::Discr));
        assert!(f.assume(&r, None, &[1]));
        assert_eq!(
            f.known(&PlaceKey::local(3), Aspect::Discr),
            Some(&Known::IsNot(vec![1]))
        );
        // `_3` escapes through `&mut`: a call forgets it.
        f.forget_memory(&[3]);
        assert_eq!(f.known(&PlaceKey::local(3), Aspect::Discr), None);
    }

    /// `is_none`'s answer survives the merge of its two paths: testing it
    /// afterwards still teaches the variant.
    #[test]
    fn variant_test_survives_a_merge() {
        let key = PlaceKey::local(1);
        let branch = |variant: u128| {
            let mut f = Facts::default();
            f.set_known(key.clone(), Aspect::Discr, variant);
            f.set_known(PlaceKey::local(2), Aspect::Value, u128::from(variant == 0));
            f.set_discr_test(2, key.clone(), Aspect::Discr, 0, true);
            f
        };
        let mut merged = branch(0);
        assert!(merged.intersect(&branch(1)));
        assert_eq!(merged.known(&key, Aspect::Discr), None);
        let test = merged.resolve_operand(&Operand::Copy(local(2))).unwrap();
        let mut on_none = merged.clone();
        assert!(on_none.assume(&test, Some(1), &[]));
        assert_eq!(on_none.known(&key, Aspect::Discr), Some(&Known::Is(0)));
        let mut on_some = merged.clone();
        assert!(on_some.assume(&test, Some(0), &[]));
        assert_eq!(
            on_some.known(&key, Aspect::Discr),
            Some(&Known::IsNot(vec![0]))
        );
        // Overwriting the tested place ends the relation.
        merged.assign(&local(1), &konst(1), none, &[]);
        let test = merged.resolve_operand(&Operand::Copy(local(2))).unwrap();
        assert!(merged.assume(&test, Some(1), &[]));
    }

    #[test]
    fn intersection_keeps_agreement() {
        let mut a = Facts::default();
        a.assign(&local(1), &konst(1), none, &[]);
        a.assign(&local(2), &konst(0), none, &[]);
        let mut b = Facts::default();
        b.assign(&local(1), &konst(1), none, &[]);
        b.assign(&local(2), &konst(1), none, &[]);
        assert!(a.intersect(&b));
        assert_eq!(
            a.resolve_operand(&Operand::Copy(local(1))),
            Some(Resolved::Const(1))
        );
        assert_eq!(
            a.value_of(&a.resolve_operand(&Operand::Copy(local(2))).unwrap()),
            None
        );
        assert!(!a.intersect(&b));
    }

    /// `intersect` is the join of facts (fewer facts = higher): idempotent,
    /// commutative, an upper bound of both sides, with no facts the top.
    #[test]
    fn intersection_laws() {
        let key = PlaceKey::local;
        let not = |f: &mut Facts, l, values: &[u128]| {
            assert!(f.assume(&Resolved::Key(key(l), Aspect::Discr), None, values));
        };
        let mut a = Facts::default();
        a.set_known(key(1), Aspect::Value, 1);
        a.set_known(key(2), Aspect::Discr, 0);
        a.assign(&local(3), &konst(5), none, &[]);
        not(&mut a, 4, &[1, 2]);
        not(&mut a, 5, &[1]);
        let mut b = Facts::default();
        b.set_known(key(1), Aspect::Value, 1);
        b.set_known(key(2), Aspect::Discr, 1);
        b.assign(&local(3), &konst(5), none, &[]);
        not(&mut b, 4, &[2, 3]);
        not(&mut b, 5, &[2]);

        for f in [&a, &b] {
            let mut x = f.clone();
            assert!(!x.intersect(f));
            assert_eq!(&x, f);
        }

        let mut ab = a.clone();
        assert!(ab.intersect(&b));
        let mut ba = b.clone();
        assert!(ba.intersect(&a));
        assert_eq!(ab, ba);
        // What both know, and only that.
        assert_eq!(ab.known(&key(1), Aspect::Value), Some(&Known::Is(1)));
        assert_eq!(ab.known(&key(2), Aspect::Discr), None);
        assert_eq!(
            ab.resolve_operand(&Operand::Copy(local(3))),
            Some(Resolved::Const(5))
        );
        // "Neither 1 nor 2" and "neither 2 nor 3" agree on "not 2".
        assert_eq!(
            ab.known(&key(4), Aspect::Discr),
            Some(&Known::IsNot(vec![2]))
        );
        assert_eq!(ab.known(&key(5), Aspect::Discr), None);
        // An upper bound: intersecting with either side loses nothing more.
        for f in [&a, &b] {
            assert!(!ab.clone().intersect(f));
        }
        // Only narrowing an `IsNot` is still a change.
        let mut c = ab.clone();
        not(&mut c, 4, &[7]);
        let mut narrowed = c.clone();
        assert!(narrowed.intersect(&ab));
        assert_eq!(narrowed, ab);

        // No facts is the top.
        let mut top = Facts::default();
        assert!(!top.intersect(&a));
        assert_eq!(top, Facts::default());
        let mut x = a.clone();
        assert!(x.intersect(&Facts::default()));
        assert_eq!(x, Facts::default());
    }
}

#[cfg(test)]
mod is_none_tests {
    use super::*;
    use kmir::Projection;
    use kmir::{Constant, TyId};

    #[test]
    fn negated_comparison_of_a_discriminant() {
        let deref1 = Place {
            local: 1,
            projection: Box::new([Projection::Deref]),
        };
        let l = |n| Place {
            local: n,
            projection: Box::new([]),
        };
        let mut f = Facts::default();
        f.set_known(
            PlaceKey {
                local: 1,
                proj: vec![ProjKey::Deref],
            },
            Aspect::Discr,
            0,
        );
        f.assign(&l(3), &Rvalue::Discriminant(deref1), |_| None, &[]);
        let one = Operand::Constant(Box::new(Constant {
            ty: 0 as TyId,
            value: ConstValue::Scalar(1),
        }));
        f.assign(
            &l(2),
            &Rvalue::BinaryOp {
                op: BinOp::Eq,
                lhs: Operand::Copy(l(3)),
                rhs: one,
            },
            |_| None,
            &[],
        );
        f.write_unknown(&l(3), &[]);
        f.assign(
            &l(0),
            &Rvalue::UnaryOp {
                op: UnOp::Not,
                operand: Operand::Move(l(2)),
            },
            |_| None,
            &[],
        );
        f.write_unknown(&l(2), &[]);
        let r = f.resolve(&PlaceKey::local(0), Aspect::Value);
        assert_eq!(f.value_of(&r), Some(Known::Is(1)), "{f:?}");
    }
}

#[cfg(test)]
mod guard_data_tests {
    use super::*;
    use kmir::Projection;

    fn place(local: LocalId, proj: Vec<Projection>) -> Place {
        Place {
            local,
            projection: proj.into_boxed_slice(),
        }
    }

    fn field(i: u32) -> Projection {
        Projection::Field {
            index: i,
            ty: 0 as kmir::TyId,
        }
    }

    fn data(g: LocalId, proj: Vec<ProjKey>) -> PlaceKey {
        PlaceKey {
            local: guard_data(g),
            proj,
        }
    }

    /// Two views of one guard name one place: a fact learnt through the
    /// first is read through the second, after the first is dead.
    #[test]
    fn views_of_one_guard_share_their_facts() {
        let mut f = Facts::default();
        f.set_view(9, 4);
        let through_first = PlaceKey::of(&place(9, vec![Projection::Deref, field(7)])).unwrap();
        let r = f.resolve(&through_first, Aspect::Discr);
        assert_eq!(
            r,
            Resolved::Key(data(4, vec![ProjKey::Field(7)]), Aspect::Discr)
        );
        assert!(f.assume(&r, Some(0), &[]));
        // The first view's storage ends; a second view is made.
        f.write_unknown(&place(9, vec![]), &[]);
        f.set_view(18, 4);
        let through_second = PlaceKey::of(&place(18, vec![Projection::Deref, field(7)])).unwrap();
        let r = f.resolve(&through_second, Aspect::Discr);
        assert_eq!(f.value_of(&r), Some(Known::Is(0)));
        // The guards' data of another guard is another place.
        f.set_view(20, 5);
        let other = PlaceKey::of(&place(20, vec![Projection::Deref, field(7)])).unwrap();
        assert_eq!(f.value_of(&f.resolve(&other, Aspect::Discr)), None);
    }

    /// The data is memory: a call, a write through an unknown pointer and
    /// the guard's release forget it; a write to it forgets what other
    /// pointers may see.
    #[test]
    fn guard_data_is_forgotten_like_memory() {
        let key = data(4, vec![ProjKey::Field(1)]);
        let fresh = || {
            let mut f = Facts::default();
            f.set_known(key.clone(), Aspect::Discr, 0);
            f
        };
        let mut f = fresh();
        f.forget_memory(&[]);
        assert_eq!(f.known(&key, Aspect::Discr), None);

        let mut f = fresh();
        f.assign(
            &place(3, vec![Projection::Deref]),
            &Rvalue::Use(Operand::Constant(Box::new(kmir::Constant {
                ty: 0 as kmir::TyId,
                value: ConstValue::Scalar(1),
            }))),
            |_| None,
            &[],
        );
        assert_eq!(
            f.known(&key, Aspect::Discr),
            None,
            "a write through a pointer"
        );

        let mut f = fresh();
        f.forget_guard_data(4);
        assert_eq!(f.known(&key, Aspect::Discr), None, "the guard released");

        let mut f = fresh();
        f.forget_guard_data(5);
        assert_eq!(
            f.known(&key, Aspect::Discr),
            Some(&Known::Is(0)),
            "another guard"
        );

        // A store into the data through a view forgets facts behind other
        // pointers, and the place stored, but not the rest of the data.
        let mut f = fresh();
        let behind = PlaceKey {
            local: 6,
            proj: vec![ProjKey::Deref],
        };
        f.set_known(behind.clone(), Aspect::Value, 3);
        f.set_view(9, 4);
        f.write_unknown(&place(9, vec![Projection::Deref, field(2)]), &[]);
        assert_eq!(f.known(&behind, Aspect::Value), None);
        assert_eq!(f.known(&key, Aspect::Discr), Some(&Known::Is(0)));
        f.write_unknown(&place(9, vec![Projection::Deref, field(1)]), &[]);
        assert_eq!(f.known(&key, Aspect::Discr), None);
    }

    #[test]
    fn pseudo_locals_are_told_apart() {
        assert!(is_guard_data(guard_data(0)));
        assert!(is_guard_data(guard_data(70_000)));
        assert!(!is_guard_data(70_000));
        assert!(!is_guard_data(crate::ENTRY_ARG0));
        assert_ne!(guard_data(1), guard_data(2));
    }
}

#[cfg(test)]
mod accessor_tests {
    use super::*;
    use kmir::Projection;

    fn place(local: LocalId, proj: Vec<Projection>) -> Place {
        Place {
            local,
            projection: proj.into_boxed_slice(),
        }
    }

    fn key(local: LocalId, proj: Vec<ProjKey>) -> PlaceKey {
        PlaceKey { local, proj }
    }

    /// Two results of one accessor on one place are one place: a fact
    /// learnt through the first is read through the second. The place is
    /// memory: a call forgets it.
    #[test]
    fn results_of_one_accessor_share_their_facts() {
        let at = key(12, vec![ProjKey::Deref, ProjKey::Via(36)]);
        let mut f = Facts::default();
        f.set_points_at(15, at.clone());
        let first = f.resolve(
            &PlaceKey::of(&place(15, vec![Projection::Deref])).unwrap(),
            Aspect::Discr,
        );
        assert_eq!(first, Resolved::Key(at.clone(), Aspect::Discr));
        assert!(f.assume(&first, Some(0), &[]));
        f.write_unknown(&place(15, vec![]), &[]);
        f.set_points_at(22, at.clone());
        let second = f.resolve(
            &PlaceKey::of(&place(22, vec![Projection::Deref])).unwrap(),
            Aspect::Discr,
        );
        assert_eq!(f.value_of(&second), Some(Known::Is(0)));
        assert_eq!(f.via_places(), vec![at.clone()]);
        // Another accessor's place on the same place is another place.
        let other = key(12, vec![ProjKey::Deref, ProjKey::Via(78)]);
        assert_eq!(f.known(&other, Aspect::Discr), None);
        f.forget_memory(&[]);
        assert_eq!(f.known(&at, Aspect::Discr), None);
    }

    /// A new value of the place an accessor was given ends what is known
    /// through the pointers to what it returned for the old one.
    #[test]
    fn a_new_value_of_the_accessed_place_ends_the_pointers() {
        let at = key(12, vec![ProjKey::Deref, ProjKey::Via(36)]);
        let mut f = Facts::default();
        f.set_points_at(15, at);
        f.write_unknown(&place(12, vec![]), &[]);
        let through = f.resolve(
            &PlaceKey::of(&place(15, vec![Projection::Deref])).unwrap(),
            Aspect::Discr,
        );
        assert_eq!(
            through,
            Resolved::Key(key(15, vec![ProjKey::Deref]), Aspect::Discr)
        );
    }

    /// An alias of a value that holds a pointer survives a write to the
    /// memory behind that pointer (it is not part of the value), and still
    /// names the same place afterwards.
    #[test]
    fn an_alias_survives_a_write_behind_its_pointer() {
        let mut f = Facts::default();
        let payload = place(
            6,
            vec![
                Projection::Downcast { variant: 1 },
                Projection::Field {
                    index: 0,
                    ty: 0 as kmir::TyId,
                },
            ],
        );
        f.assign(
            &place(12, vec![]),
            &Rvalue::Use(Operand::Move(payload)),
            |_| None,
            &[],
        );
        let behind = key(
            6,
            vec![ProjKey::Downcast(1), ProjKey::Field(0), ProjKey::Deref],
        );
        f.set_known(behind.clone(), Aspect::Discr, 1);
        f.forget_place(&key(
            6,
            vec![ProjKey::Downcast(1), ProjKey::Field(0), ProjKey::Deref],
        ));
        let through_alias = f.resolve(
            &PlaceKey::of(&place(12, vec![Projection::Deref])).unwrap(),
            Aspect::Discr,
        );
        assert_eq!(through_alias, Resolved::Key(behind, Aspect::Discr));
    }
}
