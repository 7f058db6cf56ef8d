//! Object liveness at one program point: for the values the body holds,
//! *where else* the objects they refer to are held.
//!
//! A drop can release the last reference to an object only when nothing
//! else keeps the object alive. The facts here say, for a place, an upper
//! bound of the objects its value refers to, written as the places that
//! hold them too:
//!
//! * [`Holder::At`]`(q)`: the value now at place `q` refers to each of them
//!   and holds its own count on it (a sharing clone was made of `q`, or `q`
//!   was compared equal with an identity test);
//! * [`Holder::Within`]`(q)`: some value stored at or below `q` does (a
//!   clone of a container's element);
//! * [`Holder::Object`]`(q)`: `q` is memory of the object itself (what a
//!   reference to it points to): the object is alive while that memory is
//!   (a lookup that returns the count held on the object it is given);
//! * [`Holder::Entry`]`(q)`: the value `q` held when the function was
//!   entered (`q` is an argument or memory behind one); in a summary it is
//!   how a result is tied to what the caller passed;
//! * [`Holder::Taken`]`(f)`: the value was taken out of field `f` of a
//!   struct (provenance only: the field no longer holds it; declarations
//!   about the field speak of such values).
//!
//! A [`Bound`] is a set of holders (the objects are among theirs; the empty
//! set: the value refers to nothing, a `None` or a moved-out place), and a
//! place may have several bounds at once ([`Bounds`], each alone true: a
//! clone of `x` that an identity test also found equal to `y`).
//!
//! The facts are *must* facts of one path: the join keeps, for a place
//! both sides bound, the union of one bound of each side (the value on
//! either path is among its holders on that path); a place only one side
//! bounds is forgotten.
//!
//! **Substitution on change.** Every change of a place goes through
//! [`Objects::kill`]: a holder naming it (or a place overlapping it) is
//! replaced by the killed place's own bounds (what it referred to is still
//! referred to by whatever held those objects), so a holder present at a
//! point always names a place whose value is the one the fact was learnt
//! about. "Unchanged since" needs no walk over the body: it is the absence
//! of a kill on the path. A move renames ([`Objects::moved`]): the value now
//! lives at the destination.
//!
//! Architecture invariant: this module knows nothing of types, locks or
//! summaries; which places a write or a call may change, and whether a
//! holder can keep an object alive (it is live, it counts), is decided by
//! the analysis, which calls in with normalised [`PlaceKey`]s (see
//! `Facts`, which owns one `Objects` and keeps its keys in step with its
//! aliases).

use std::collections::{BTreeMap, BTreeSet};

use kmir::{LocalId, Name};

use crate::place::{PlaceKey, ProjKey};

/// Whether two places are known apart (a write to one leaves the other).
pub type Apart<'a> = &'a dyn Fn(&PlaceKey, &PlaceKey) -> bool;

/// Most holders in one bound; a bigger bound is dropped (the value is
/// then unknown: never taken as kept alive).
pub const MAX_HOLDERS: usize = 6;
/// Most bounds of one place; beyond it the largest are dropped.
pub const MAX_BOUNDS: usize = 3;
/// Most places with bounds at one point; beyond it the facts of the
/// places last in order are dropped (a bound on the state of one path).
pub const MAX_PLACES: usize = 96;
/// Longest place kept in a fact; a longer one is unknown.
pub const MAX_PROJ: usize = 12;

/// A field of a struct: its canonical path and index (a declaration about
/// it names the same).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub struct FieldId {
    pub owner: Name,
    pub index: u32,
}

/// Where the objects a value refers to are also held.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub enum Holder {
    /// The current value of this place.
    At(PlaceKey),
    /// Some value currently stored at or below this place.
    Within(PlaceKey),
    /// The object whose memory this place is (or is in).
    Object(PlaceKey),
    /// The value this place (an argument, or memory behind one) held on
    /// entry to the function.
    Entry(PlaceKey),
    /// Taken out of this field (the field no longer holds it).
    Taken(FieldId),
}

impl Holder {
    /// The place the holder names, if it names one.
    pub fn place(&self) -> Option<&PlaceKey> {
        match self {
            Holder::At(p) | Holder::Within(p) | Holder::Object(p) | Holder::Entry(p) => Some(p),
            Holder::Taken(_) => None,
        }
    }

    /// Whether a change of `place` changes what the holder holds: a place
    /// it is in, or a place in its own memory (a write behind a pointer
    /// it holds changes another object, not which object it refers to).
    fn overlaps(&self, place: &PlaceKey) -> bool {
        match self {
            Holder::At(p) | Holder::Within(p) if p.proj.iter().any(vague) => {
                let d = definite(p);
                place.starts_with(&d) || d.starts_with(place)
            }
            Holder::Object(p) if p.proj.iter().any(vague) => {
                let d = definite(p);
                d.starts_with(place) || place.starts_with(&d)
            }
            Holder::At(p) | Holder::Within(p) => {
                p.starts_with(place)
                    || (place.starts_with(p)
                        && !place.proj[p.proj.len()..].contains(&ProjKey::Deref))
            }
            // Only a new value of a pointer on the way names another
            // object: the object's own memory may change.
            Holder::Object(p) => {
                p.starts_with(place) && p.proj[place.proj.len()..].contains(&ProjKey::Deref)
            }
            Holder::Entry(_) | Holder::Taken(_) => false,
        }
    }
}

/// An upper bound of the objects a value refers to: every one is held by
/// one of these (sorted, without duplicates). Empty: it refers to nothing.
pub type Bound = Vec<Holder>;

/// Bounds that each hold of one value (sorted; none a superset of
/// another, at most [`MAX_BOUNDS`]).
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode,
)]
pub struct Bounds(Vec<Bound>);

impl Bounds {
    /// One bound.
    pub fn one(bound: Bound) -> Bounds {
        let mut b = Bounds(Vec::new());
        b.add(bound);
        b
    }

    /// The value refers to nothing.
    pub fn nothing() -> Bounds {
        Bounds(vec![Vec::new()])
    }

    /// Held by exactly `h`.
    pub fn holder(h: Holder) -> Bounds {
        Bounds(vec![vec![h]])
    }

    pub fn iter(&self) -> impl Iterator<Item = &Bound> {
        self.0.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether one of the bounds is empty: the value refers to nothing.
    pub fn holds_nothing(&self) -> bool {
        self.0.iter().any(Vec::is_empty)
    }

    /// Adds a bound (the value also satisfies it).
    pub fn add(&mut self, mut bound: Bound) {
        bound.sort();
        bound.dedup();
        if bound.len() > MAX_HOLDERS {
            return;
        }
        // A bound implied by one already there adds nothing; one that
        // implies others replaces them.
        if self.0.iter().any(|b| b.iter().all(|h| bound.contains(h))) {
            return;
        }
        self.0.retain(|b| !bound.iter().all(|h| b.contains(h)));
        let at = self
            .0
            .partition_point(|b| (b.len(), b) < (bound.len(), &bound));
        self.0.insert(at, bound);
        self.0.truncate(MAX_BOUNDS);
    }

    /// Every bound of `other` too.
    pub fn add_all(&mut self, other: &Bounds) {
        for b in &other.0 {
            self.add(b.clone());
        }
    }

    /// The join: on either path the value is among the holders of one
    /// bound of that path, so among the union of two.
    fn join(&self, other: &Bounds) -> Bounds {
        let mut out = Bounds::default();
        for a in &self.0 {
            for b in &other.0 {
                let mut u = a.clone();
                u.extend(b.iter().cloned());
                out.add(u);
            }
        }
        out
    }

    /// Each bound with holder `h` replaced by each bound of `by` (`None`:
    /// nothing is known of what `h` held, and the bounds naming it go).
    fn substitute(&self, h: &Holder, by: Option<&Bounds>) -> Bounds {
        let mut out = Bounds::default();
        for b in &self.0 {
            if !b.contains(h) {
                out.add(b.clone());
                continue;
            }
            let Some(by) = by else { continue };
            for r in &by.0 {
                let mut n: Bound = b.iter().filter(|x| *x != h).cloned().collect();
                n.extend(r.iter().cloned());
                out.add(n);
            }
        }
        out
    }

    /// The bounds with every holder replaced by the bounds `f` gives it
    /// (each combination of one bound per holder; `None` drops the bound).
    pub fn expand(&self, mut f: impl FnMut(&Holder) -> Option<Bounds>) -> Bounds {
        let mut out = Bounds::default();
        for b in &self.0 {
            let mut partial: Vec<Bound> = vec![Vec::new()];
            let mut dropped = false;
            for h in b {
                let Some(by) = f(h) else {
                    dropped = true;
                    break;
                };
                let mut next = Vec::new();
                for p in &partial {
                    for r in &by.0 {
                        let mut n = p.clone();
                        n.extend(r.iter().cloned());
                        if n.len() <= MAX_HOLDERS {
                            next.push(n);
                        }
                    }
                }
                next.sort();
                next.dedup();
                next.truncate(MAX_BOUNDS * 2);
                partial = next;
                if partial.is_empty() {
                    dropped = true;
                    break;
                }
            }
            if !dropped {
                for p in partial {
                    out.add(p);
                }
            }
        }
        out
    }

    /// The bounds with every holder mapped by `f` (`None` drops the bound).
    pub fn map(&self, mut f: impl FnMut(&Holder) -> Option<Bound>) -> Bounds {
        let mut out = Bounds::default();
        'bounds: for b in &self.0 {
            let mut n = Vec::new();
            for h in b {
                match f(h) {
                    Some(m) => n.extend(m),
                    None => continue 'bounds,
                }
            }
            out.add(n);
        }
        out
    }
}

/// Facts the analysis learns when a local turns out to hold a value: an
/// identity test returned true, a lookup returned `None`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub struct Guarded {
    /// The discriminant (for an enum) or value the local must have.
    pub when: u128,
    /// Whether `when` is a discriminant (else the local's own value).
    pub discr: bool,
    /// The local has two values only (a `bool`, an `Option`'s
    /// discriminant): "not the other one" is `when` too.
    pub two_valued: bool,
    /// Then these places have these bounds too.
    pub bounds: Vec<(PlaceKey, Bounds)>,
}

/// What a path knows of a guarding local's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Is(u128),
    IsNot(Vec<u128>),
}

/// One side of a join of guarded facts.
enum Side {
    /// The guard's facts, when the local has the value.
    Facts(Vec<(PlaceKey, Bounds)>),
    /// The local surely has the value here: the current facts hold.
    Current,
    /// The local cannot have the value here.
    Never,
    Unknown,
}

/// The object-liveness facts of one path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Objects {
    bounds: BTreeMap<PlaceKey, Bounds>,
    /// Places at an argument or behind one that may have been written on
    /// this path: their entry value is gone (the others still hold it).
    /// `false`: only the value of the place itself, not what its pointers
    /// point to (a pointer moved away, not reassigned).
    written: BTreeMap<PlaceKey, bool>,
    /// Facts that hold once a local is known to hold a value.
    guarded: BTreeMap<LocalId, Vec<Guarded>>,
    /// Where the entry value of an argument moved away whole now is.
    kept: BTreeMap<LocalId, Holder>,
    /// Locals `1..=args` are the arguments.
    args: u32,
}

/// A step that names no one place: somewhere below, or in some object a
/// handle there refers to.
pub fn vague(s: &ProjKey) -> bool {
    matches!(s, ProjKey::Below | ProjKey::Handle)
}

/// Whether a holder may name `p`: short enough (a holder may name a place
/// somewhere below another: it stands for the one place a pointer
/// pointed to, and a write anywhere there kills it).
fn holder_keepable(p: &PlaceKey) -> bool {
    p.proj.len() <= MAX_PROJ
}

/// Whether `p` is short enough to be kept in a fact, and one place (not
/// "somewhere below").
fn keepable(p: &PlaceKey) -> bool {
    p.proj.len() <= MAX_PROJ && !p.proj.iter().any(vague)
}

/// `h` named canonically: "the value at somewhere below `P`" is "something
/// within `P`". What follows the `Below` stays, up to the first pointer
/// crossed: a holder in the memory of another object (behind a pointer
/// stored somewhere in `P`) is not one the data of `P` protects, and the
/// kept `Deref` says so.
fn canonical(h: &Holder) -> Holder {
    // (After an accessor's step, the place is kept whole: it names one
    // place in what the accessor returns, whose type is known again.)
    let cut = |p: &PlaceKey| -> PlaceKey {
        let i = p.proj.iter().position(vague).unwrap_or(0);
        if p.proj[i] == ProjKey::Handle {
            return PlaceKey {
                local: p.local,
                proj: p.proj[..=i].to_vec(),
            };
        }
        let rest = &p.proj[i..];
        let end = if rest.iter().any(|s| matches!(s, ProjKey::Via(_))) {
            // The place is named from the accessor on: all of it.
            p.proj.len()
        } else {
            match rest.iter().position(|s| *s == ProjKey::Deref) {
                Some(j) => i + j + 1,
                None => i,
            }
        };
        PlaceKey {
            local: p.local,
            proj: p.proj[..end].to_vec(),
        }
    };
    match h {
        Holder::At(p) | Holder::Within(p) if p.proj.iter().any(vague) => Holder::Within(cut(p)),
        Holder::Object(p) if p.proj.iter().any(vague) => Holder::Object(cut(p)),
        other => other.clone(),
    }
}

/// The part of `p` that names one place: up to a `Below` (a write
/// anywhere there may be the one it stands for).
pub fn definite(p: &PlaceKey) -> PlaceKey {
    match p.proj.iter().position(vague) {
        Some(i) => PlaceKey {
            local: p.local,
            proj: p.proj[..i].to_vec(),
        },
        None => p.clone(),
    }
}

impl Objects {
    /// The facts on entry to a body with `args` arguments: every argument
    /// (and what it points to) holds what the caller passed.
    pub fn entry(args: u32) -> Objects {
        Objects {
            args,
            ..Objects::default()
        }
    }

    /// Whether the place is an argument or behind one.
    pub fn at_arg(&self, p: &PlaceKey) -> bool {
        (1..=self.args).contains(&p.local)
    }

    /// The bounds known of the value at `p`: its own, its entry value's
    /// while unwritten, or those of a value it is part of.
    pub fn bounds_of(&self, p: &PlaceKey) -> Option<Bounds> {
        if p.proj.iter().any(vague) {
            return None;
        }
        if let Some(b) = self.bounds.get(p) {
            return Some(b.clone());
        }
        // A part of a value refers only to objects the value refers to, up
        // to a dereference (what a pointer in it points to is not part of
        // the value).
        let mut whole = None;
        let mut q = p.clone();
        while let Some(last) = q.proj.pop() {
            if last == ProjKey::Deref {
                break;
            }
            if let Some(b) = self.bounds.get(&q) {
                whole = Some(b.clone());
                break;
            }
        }
        if self.at_arg(p) && !self.was_written(p) {
            let mut b = whole.unwrap_or_default();
            b.add(vec![Holder::Entry(p.clone())]);
            return Some(b);
        }
        whole
    }

    fn was_written(&self, p: &PlaceKey) -> bool {
        self.written.iter().any(|(w, deep)| {
            // A write in `p`'s own memory (not behind a pointer it holds),
            // or of a place `p` is in or reached through.
            (w.starts_with(p) && !w.proj[p.proj.len()..].contains(&ProjKey::Deref))
                || (p.starts_with(w)
                    && (*deep || !p.proj[w.proj.len()..].contains(&ProjKey::Deref)))
        })
    }

    fn mark_written(&mut self, p: &PlaceKey, deep: bool) {
        let d = self.written.entry(p.clone()).or_insert(deep);
        *d |= deep;
    }

    /// Every place a fact names (keys, holders, guarded facts), once.
    pub fn places(&self) -> Vec<PlaceKey> {
        let mut out: BTreeSet<PlaceKey> = BTreeSet::new();
        let mut add = |b: &Bounds| {
            for bound in b.iter() {
                for h in bound {
                    if let Holder::At(q) | Holder::Within(q) | Holder::Object(q) = h {
                        out.insert(q.clone());
                    }
                }
            }
        };
        for b in self.bounds.values() {
            add(b);
        }
        for g in self.guarded.values() {
            for f in g {
                for (_, b) in &f.bounds {
                    add(b);
                }
            }
        }
        out.extend(self.bounds.keys().cloned());
        for g in self.guarded.values() {
            for f in g {
                out.extend(f.bounds.iter().map(|(k, _)| k.clone()));
            }
        }
        out.into_iter().collect()
    }

    /// The bounds under `from` hold under `to` too (`to` got a copy of the
    /// value).
    pub fn copied(&mut self, from: &PlaceKey, to: &PlaceKey) {
        if from == to {
            return;
        }
        if let Some(w) = self.bounds_of(from) {
            self.set(to.clone(), w);
        }
        let own: Vec<(PlaceKey, Bounds)> = self
            .bounds
            .iter()
            .filter(|(k, _)| k.starts_with(from))
            .map(|(k, b)| {
                let mut proj = to.proj.clone();
                proj.extend_from_slice(&k.proj[from.proj.len()..]);
                (
                    PlaceKey {
                        local: to.local,
                        proj,
                    },
                    b.clone(),
                )
            })
            .collect();
        for (k, b) in own {
            if keepable(&k) {
                self.bounds.insert(k, b);
            }
        }
        self.cap();
    }

    /// The places with bounds, and their bounds.
    pub fn iter(&self) -> impl Iterator<Item = (&PlaceKey, &Bounds)> {
        self.bounds.iter()
    }

    /// `p` now holds a value with these bounds (after [`Objects::kill`]).
    pub fn set(&mut self, p: PlaceKey, bounds: Bounds) {
        if !keepable(&p) || bounds.is_empty() {
            return;
        }
        let bounds = bounds.map(|h| {
            let h = canonical(h);
            match h.place() {
                Some(q) if !holder_keepable(q) => None,
                _ => Some(vec![h]),
            }
        });
        if bounds.is_empty() {
            return;
        }
        self.bounds.insert(p, bounds);
        self.cap();
    }

    /// `p` also satisfies these bounds (a fact learnt about its current
    /// value, like an identity test's).
    pub fn learn(&mut self, p: PlaceKey, more: &Bounds) {
        if !keepable(&p) {
            return;
        }
        let mut b = self.bounds_of(&p).unwrap_or_default();
        b.add_all(&more.map(|h| Some(vec![canonical(h)])));
        if !b.is_empty() {
            self.bounds.insert(p, b);
            self.cap();
        }
    }

    /// The values at `a` and `b` refer to the same objects, each with its
    /// own count (an identity test returned true).
    pub fn same(&mut self, a: &PlaceKey, b: &PlaceKey) {
        if a.starts_with(b) || b.starts_with(a) {
            return;
        }
        self.learn(a.clone(), &Bounds::holder(Holder::At(b.clone())));
        self.learn(b.clone(), &Bounds::holder(Holder::At(a.clone())));
    }

    fn cap(&mut self) {
        while self.bounds.len() > MAX_PLACES {
            self.bounds.pop_last();
        }
    }

    /// The value at `p` (and everything in it) is about to change or end;
    /// `taken` is the field `p` is, if it is one (provenance for what is
    /// taken out of it). Holders naming it are replaced by its bounds.
    pub fn kill(&mut self, p: &PlaceKey, taken: Option<FieldId>) {
        self.kill_with(p, taken, true, None);
    }

    /// The value of `p` itself ends (a local going out of scope), but not
    /// the memory its pointers point to: facts named through a `Deref`
    /// below `p` stay (an argument's pointee is the caller's).
    pub fn kill_own(&mut self, p: &PlaceKey) {
        self.kill_with(p, None, false, None);
    }

    /// [`Objects::kill`] where `p` or a holder names a place somewhere
    /// below another: `apart(p, q)` says when the two cannot overlap (the
    /// analysis knows which accessors return which fields).
    pub fn kill_apart(
        &mut self,
        p: &PlaceKey,
        taken: Option<FieldId>,
        apart: &dyn Fn(&PlaceKey, &PlaceKey) -> bool,
    ) {
        self.kill_with(p, taken, true, Some(apart));
    }

    fn kill_with(
        &mut self,
        p: &PlaceKey,
        taken: Option<FieldId>,
        deep: bool,
        apart: Option<Apart<'_>>,
    ) {
        let original = p.clone();
        // A write somewhere below a place may change anything there.
        let cut;
        let p = match p.proj.iter().position(vague) {
            Some(i) => {
                cut = PlaceKey {
                    local: p.local,
                    proj: p.proj[..i].to_vec(),
                };
                &cut
            }
            None => p,
        };
        // Whether `q`, inside `p`, is reached through a pointer in it.
        let behind = |q: &PlaceKey| {
            !deep && q.starts_with(p) && q.proj[p.proj.len()..].contains(&ProjKey::Deref)
        };
        // The holders that name `p` or a place overlapping it, and what
        // each stands for now.
        let mut named: BTreeSet<Holder> = BTreeSet::new();
        let hit = |h: &Holder| {
            h.overlaps(p)
                && !h.place().is_some_and(|q| {
                    behind(q)
                        || apart.is_some_and(|a| {
                            (q.proj.iter().any(vague) || original.proj.iter().any(vague))
                                && a(&original, q)
                        })
                })
        };
        for b in self.bounds.values() {
            for bound in b.iter() {
                named.extend(bound.iter().filter(|h| hit(h)).cloned());
            }
        }
        for g in self.guarded.values() {
            for f in g {
                for (_, b) in &f.bounds {
                    for bound in b.iter() {
                        named.extend(bound.iter().filter(|h| hit(h)).cloned());
                    }
                }
            }
        }
        let replacement: Vec<(Holder, Option<Bounds>)> = named
            .into_iter()
            .map(|h| {
                let q = h.place().cloned().unwrap_or_else(|| p.clone());
                // What the holder referred to: the bounds of its place (the
                // whole when it contains `p`), plus where it came from.
                let mut by = self.bounds_of(&q).filter(|b| !b.is_empty());
                if let Some(f) = &taken {
                    let t = Bounds::holder(Holder::Taken(f.clone()));
                    by = Some(match by {
                        Some(mut b) => {
                            b.add_all(&t);
                            b
                        }
                        None => t,
                    });
                }
                (h, by)
            })
            .collect();
        // The facts about `p` and what is inside it go.
        let inside: Vec<PlaceKey> = self
            .bounds
            .keys()
            .filter(|k| k.starts_with(p) && !behind(k))
            .cloned()
            .collect();
        for k in inside {
            self.bounds.remove(&k);
        }
        if self.at_arg(p) {
            self.mark_written(p, deep);
        }
        for (h, by) in &replacement {
            for (k, b) in self.bounds.iter_mut() {
                *b = b.substitute(h, by.as_ref());
                // A value is not held by itself: such a bound says nothing.
                if b.iter().any(|bound| bound.iter().any(|x| x.overlaps(k))) {
                    *b = b.map(|x| (!x.overlaps(k)).then(|| vec![x.clone()]));
                }
            }
            self.bounds.retain(|_, b| !b.is_empty());
        }
        // Guarded facts about `p`, or naming it, are about a value gone.
        for g in self.guarded.values_mut() {
            g.retain(|f| {
                f.bounds.iter().all(|(k, b)| {
                    ((!k.starts_with(p) || behind(k)) && !p.starts_with(k))
                        && b.iter().all(|bound| bound.iter().all(|h| !hit(h)))
                })
            });
        }
        self.guarded.retain(|_, g| !g.is_empty());
        if p.proj.is_empty() {
            self.guarded.remove(&p.local);
        }
        self.kept.retain(|_, h| !hit(h));
    }

    /// The value at `from` moved to `to` (`to = move from`, with `to`
    /// already killed): its bounds go with it, and holders naming `from` (or
    /// a place in it) now name `to`.
    pub fn moved(&mut self, from: &PlaceKey, to: &PlaceKey) {
        if from == to {
            return;
        }
        let rename = |k: &PlaceKey| -> Option<PlaceKey> {
            k.starts_with(from).then(|| {
                let mut proj = to.proj.clone();
                proj.extend_from_slice(&k.proj[from.proj.len()..]);
                PlaceKey {
                    local: to.local,
                    proj,
                }
            })
        };
        // What the value is known to be: its own facts, or those of the
        // value it is part of, or its entry value.
        let whole = self.bounds_of(from);
        let entry = self.at_arg(from) && !self.was_written(from);
        let own: Vec<(PlaceKey, Bounds)> = self
            .bounds
            .iter()
            .filter_map(|(k, b)| Some((rename(k)?, b.clone())))
            .collect();
        self.bounds.retain(|k, _| !k.starts_with(from));
        for (k, b) in own {
            if keepable(&k) {
                self.bounds.insert(k, b);
            }
        }
        if !self.bounds.contains_key(to)
            && let Some(w) = whole
        {
            self.set(to.clone(), w);
        }
        // The entry value of an argument moved out is now at `to`.
        if entry && from.proj.is_empty() {
            self.kept.insert(from.local, Holder::At(to.clone()));
        }
        // An argument's value kept at `from` moves along.
        for h in self.kept.values_mut() {
            if let Holder::At(q) | Holder::Within(q) = h
                && let Some(n) = rename(q)
            {
                *q = n;
            }
        }
        if self.at_arg(from) {
            self.mark_written(from, true);
        }
        // A value containing `from` (inline): what it held may now be in
        // the part moved out.
        let contains = |q: &PlaceKey| {
            from.starts_with(q) && from != q && !from.proj[q.proj.len()..].contains(&ProjKey::Deref)
        };
        let map = |h: &Holder| -> Option<Bound> {
            Some(match h {
                Holder::At(q) | Holder::Within(q) if contains(q) => {
                    vec![Holder::Within(q.clone()), Holder::Within(to.clone())]
                }
                Holder::At(q) => vec![Holder::At(rename(q).unwrap_or_else(|| q.clone()))],
                Holder::Within(q) => vec![Holder::Within(rename(q).unwrap_or_else(|| q.clone()))],
                Holder::Object(q) => vec![Holder::Object(rename(q).unwrap_or_else(|| q.clone()))],
                other => vec![other.clone()],
            })
        };
        for b in self.bounds.values_mut() {
            *b = b.map(map);
        }
        for g in self.guarded.values_mut() {
            for f in g.iter_mut() {
                for (k, b) in f.bounds.iter_mut() {
                    if let Some(n) = rename(k) {
                        *k = n;
                    }
                    *b = b.map(map);
                }
            }
        }
        self.bounds.retain(|k, b| keepable(k) && !b.is_empty());
        self.cap();
    }

    /// The value at `from`, all that `container` (a place containing it
    /// inline) holds, moved to `to`: what the container held is now at
    /// `to`, and the container holds nothing (an enum's only payload moved
    /// out of it, `(_3 as Some).0`).
    pub fn moved_out_of(&mut self, from: &PlaceKey, container: &PlaceKey, to: &PlaceKey) {
        // An argument's entry value, all of it, is now at `to`.
        if container.proj.is_empty() && self.at_arg(container) && !self.was_written(container) {
            self.kept.insert(container.local, Holder::At(to.clone()));
        }
        let map = |h: &Holder| -> Option<Bound> {
            Some(vec![match h {
                Holder::At(q) if q == container => Holder::At(to.clone()),
                Holder::Within(q) | Holder::At(q) if q == container => Holder::Within(to.clone()),
                other => other.clone(),
            }])
        };
        for b in self.bounds.values_mut() {
            *b = b.map(map);
        }
        for g in self.guarded.values_mut() {
            for f in g.iter_mut() {
                for (_, b) in f.bounds.iter_mut() {
                    *b = b.map(map);
                }
            }
        }
        self.moved(from, to);
        if keepable(container) {
            self.bounds.insert(container.clone(), Bounds::nothing());
        }
    }

    /// The value at `from` moved into some place at or below `into` (a
    /// container kept it): holders naming it now name that container.
    pub fn moved_into(&mut self, from: &PlaceKey, into: &PlaceKey) {
        let within = |q: &PlaceKey| q.starts_with(from);
        let map = |h: &Holder| -> Option<Bound> {
            Some(vec![match h {
                Holder::At(q) | Holder::Within(q) if within(q) => Holder::Within(into.clone()),
                other => other.clone(),
            }])
        };
        for b in self.bounds.values_mut() {
            *b = b.map(map);
        }
        if self.at_arg(from) && from.proj.is_empty() && !self.was_written(from) {
            self.kept.insert(from.local, Holder::Within(into.clone()));
        }
        self.bounds.retain(|k, _| !k.starts_with(from));
        if self.at_arg(from) {
            self.mark_written(from, true);
        }
    }

    /// Where the entry value of argument local `l` is kept now, if it was
    /// moved whole into a place.
    pub fn kept(&self, l: LocalId) -> Option<&Holder> {
        self.kept.get(&l)
    }

    /// Local `l` (just written) holds a value that, once known to be
    /// `when`, brings these facts.
    pub fn guard(&mut self, l: LocalId, facts: Vec<Guarded>) {
        let facts: Vec<Guarded> = facts.into_iter().filter(|g| !g.bounds.is_empty()).collect();
        if facts.is_empty() {
            self.guarded.remove(&l);
        } else {
            self.guarded.insert(l, facts);
        }
    }

    /// Local `l` is known to hold `value` (its discriminant when `discr`;
    /// `exact`: learnt as that value, else as "not the other one"): the
    /// facts guarded by it hold.
    pub fn assume(&mut self, l: LocalId, value: u128, discr: bool, exact: bool) {
        let Some(facts) = self.guarded.get(&l) else {
            return;
        };
        let learnt: Vec<(PlaceKey, Bounds)> = facts
            .iter()
            .filter(|g| g.when == value && g.discr == discr && (exact || g.two_valued))
            .flat_map(|g| g.bounds.iter().cloned())
            .collect();
        for (p, b) in learnt {
            self.learn(p, &b);
        }
    }

    /// The guarded facts of local `l`.
    pub fn guarded(&self, l: LocalId) -> &[Guarded] {
        self.guarded.get(&l).map_or(&[], Vec::as_slice)
    }

    /// Keeps what holds on both paths; says whether `self` changed.
    pub fn join(&mut self, other: &Objects) -> bool {
        let mut changed = false;
        let mut joined = BTreeMap::new();
        for (k, a) in &self.bounds {
            let Some(b) = other.bounds.get(k).cloned().or_else(|| other.bounds_of(k)) else {
                changed = true;
                continue;
            };
            let j = a.join(&b);
            if j.is_empty() {
                changed = true;
                continue;
            }
            changed |= &j != a;
            joined.insert(k.clone(), j);
        }
        // A place only the other side bounds explicitly may be bounded here
        // implicitly (an argument's entry value, a part of a value).
        for (k, b) in &other.bounds {
            if self.bounds.contains_key(k) {
                continue;
            }
            if let Some(a) = self.bounds_of(k) {
                let j = a.join(b);
                if !j.is_empty() {
                    changed = true;
                    joined.insert(k.clone(), j);
                }
            }
        }
        self.bounds = joined;
        for (w, deep) in &other.written {
            let before = self.written.get(w).copied();
            self.mark_written(w, *deep);
            changed |= before != self.written.get(w).copied();
        }
        let kept = self.kept.len();
        self.kept.retain(|l, h| other.kept.get(l) == Some(h));
        changed |= kept != self.kept.len();
        changed
    }

    /// The guarded facts of both paths joined, knowing what each path
    /// knows of the guarding locals (`value_here`, `value_there`: the
    /// value or discriminant a local surely has on that path, or values it
    /// surely has not): a path on which the local cannot have the guard's
    /// value does not weaken it; one on which it surely has it brings its
    /// current facts.
    pub fn join_guarded(
        &self,
        other: &Objects,
        value_here: impl Fn(LocalId, bool) -> Option<Value>,
        value_there: impl Fn(LocalId, bool) -> Option<Value>,
    ) -> BTreeMap<LocalId, Vec<Guarded>> {
        let mut out: BTreeMap<LocalId, Vec<Guarded>> = BTreeMap::new();
        let locals: BTreeSet<LocalId> = self
            .guarded
            .keys()
            .chain(other.guarded.keys())
            .copied()
            .collect();
        for l in locals {
            let mut whens: Vec<(u128, bool, bool)> = self
                .guarded(l)
                .iter()
                .chain(other.guarded(l))
                .map(|g| (g.when, g.discr, g.two_valued))
                .collect();
            whens.sort();
            whens.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
            let mut gs = Vec::new();
            for (when, discr, two) in whens {
                let side = |o: &Objects, value: &dyn Fn(LocalId, bool) -> Option<Value>| {
                    if let Some(g) = o
                        .guarded(l)
                        .iter()
                        .find(|g| g.when == when && g.discr == discr)
                    {
                        return Side::Facts(g.bounds.clone());
                    }
                    match value(l, discr) {
                        Some(Value::Is(v)) if v == when => Side::Current,
                        Some(Value::Is(_)) => Side::Never,
                        Some(Value::IsNot(vs)) if vs.contains(&when) => Side::Never,
                        _ => Side::Unknown,
                    }
                };
                let here = side(self, &value_here);
                let there = side(other, &value_there);
                let keys: Vec<PlaceKey> = [&here, &there]
                    .iter()
                    .filter_map(|s| match s {
                        Side::Facts(b) => Some(b.iter().map(|(k, _)| k.clone())),
                        _ => None,
                    })
                    .flatten()
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                let facts_of = |s: &Side, o: &Objects, k: &PlaceKey| -> Option<Option<Bounds>> {
                    match s {
                        Side::Facts(b) => Some(
                            b.iter()
                                .find(|(q, _)| q == k)
                                .map(|(_, x)| x.clone())
                                .or_else(|| o.bounds_of(k)),
                        ),
                        Side::Current => Some(o.bounds_of(k)),
                        Side::Never => None,
                        Side::Unknown => Some(None),
                    }
                };
                let mut bounds = Vec::new();
                for k in keys {
                    let b = match (facts_of(&here, self, &k), facts_of(&there, other, &k)) {
                        (None, None) => None,
                        (None, Some(b)) | (Some(b), None) => b,
                        (Some(Some(a)), Some(Some(b))) => {
                            let j = a.join(&b);
                            (!j.is_empty()).then_some(j)
                        }
                        _ => None,
                    };
                    if let Some(b) = b {
                        bounds.push((k, b));
                    }
                }
                if !bounds.is_empty() {
                    gs.push(Guarded {
                        when,
                        discr,
                        two_valued: two,
                        bounds,
                    });
                }
            }
            if !gs.is_empty() {
                out.insert(l, gs);
            }
        }
        out
    }

    /// Replaces the guarded facts (with [`Objects::join_guarded`]'s);
    /// says whether they changed.
    pub fn set_guarded(&mut self, g: BTreeMap<LocalId, Vec<Guarded>>) -> bool {
        let changed = self.guarded != g;
        self.guarded = g;
        changed
    }

    /// Renames local `from` to `to` in every key and holder (the value
    /// named by `from` is now named by `to`: an alias took over).
    pub fn rename_local(&mut self, from: LocalId, to: &PlaceKey) {
        self.moved(
            &PlaceKey {
                local: from,
                proj: Vec::new(),
            },
            to,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(n: LocalId) -> PlaceKey {
        PlaceKey::local(n)
    }
    fn deref(n: LocalId) -> PlaceKey {
        PlaceKey {
            local: n,
            proj: vec![ProjKey::Deref],
        }
    }
    fn field(p: &PlaceKey, f: u32) -> PlaceKey {
        p.with(ProjKey::Field(f))
    }
    fn at(p: PlaceKey) -> Bounds {
        Bounds::holder(Holder::At(p))
    }

    #[test]
    fn arguments_hold_their_entry_values_until_written() {
        let mut o = Objects::entry(2);
        assert_eq!(
            o.bounds_of(&field(&deref(1), 3)),
            Some(Bounds::holder(Holder::Entry(field(&deref(1), 3))))
        );
        o.kill(&field(&deref(1), 3), None);
        assert_eq!(o.bounds_of(&field(&deref(1), 3)), None);
        // A sibling field keeps its entry value.
        assert!(o.bounds_of(&field(&deref(1), 2)).is_some());
        // Not an argument: nothing known.
        assert_eq!(o.bounds_of(&l(5)), None);
    }

    #[test]
    fn a_clone_is_held_while_its_source_is_unchanged() {
        let mut o = Objects::entry(1);
        let src = field(&deref(1), 0);
        o.set(l(4), at(src.clone()));
        assert_eq!(o.bounds_of(&l(4)), Some(at(src.clone())));
        // A part of the clone is held by the same.
        assert_eq!(o.bounds_of(&field(&l(4), 0)), Some(at(src.clone())));
        // Writing the source replaces the holder by the source's entry
        // value: still a bound, but no longer a live place.
        o.kill(&src, None);
        assert_eq!(o.bounds_of(&l(4)), Some(Bounds::holder(Holder::Entry(src))));
    }

    #[test]
    fn a_kill_substitutes_what_the_holder_held() {
        let mut o = Objects::entry(0);
        // _4 is a clone of _3, itself a clone of what _2 holds.
        o.set(l(3), at(l(2)));
        o.set(l(4), at(l(3)));
        o.kill(&l(3), None);
        assert_eq!(o.bounds_of(&l(4)), Some(at(l(2))));
        // Once _2 goes too, with nothing known of it, nothing is known.
        o.kill(&l(2), None);
        assert_eq!(o.bounds_of(&l(4)), None);
    }

    #[test]
    fn taking_out_of_a_field_records_the_field() {
        let mut o = Objects::entry(0);
        let f = FieldId {
            owner: "a::Inner".into(),
            index: 2,
        };
        o.set(l(5), Bounds::holder(Holder::Within(field(&l(9), 2))));
        o.kill(&field(&l(9), 2), Some(f.clone()));
        assert_eq!(o.bounds_of(&l(5)), Some(Bounds::holder(Holder::Taken(f))));
    }

    #[test]
    fn a_move_renames() {
        let mut o = Objects::entry(1);
        o.set(l(3), at(field(&deref(1), 0)));
        o.set(l(6), at(l(3)));
        o.kill(&l(4), None);
        o.moved(&l(3), &l(4));
        assert_eq!(o.bounds_of(&l(4)), Some(at(field(&deref(1), 0))));
        assert_eq!(o.bounds_of(&l(3)), None);
        assert_eq!(o.bounds_of(&l(6)), Some(at(l(4))));
        // An argument moved away takes its entry value along.
        o.kill(&l(7), None);
        o.moved(&l(1), &l(7));
        assert_eq!(
            o.bounds_of(&l(7)),
            Some(Bounds::holder(Holder::Entry(l(1))))
        );
        assert_eq!(o.bounds_of(&l(1)), None);
    }

    #[test]
    fn identity_bounds_both_sides() {
        let mut o = Objects::entry(2);
        o.same(&deref(1), &deref(2));
        let b1 = o.bounds_of(&deref(1)).unwrap();
        assert!(b1.iter().any(|b| b == &vec![Holder::At(deref(2))]));
        assert!(b1.iter().any(|b| b == &vec![Holder::Entry(deref(1))]));
    }

    #[test]
    fn join_unions_one_bound_of_each_side() {
        let mut a = Objects::entry(0);
        a.set(l(3), at(l(1)));
        a.set(l(4), at(l(1)));
        let mut b = Objects::entry(0);
        b.set(l(3), at(l(2)));
        b.set(l(4), Bounds::nothing());
        assert!(a.join(&b));
        assert_eq!(
            a.bounds_of(&l(3)),
            Some(Bounds::one(vec![Holder::At(l(1)), Holder::At(l(2))]))
        );
        // Nothing on one side: the other side's bound.
        assert_eq!(a.bounds_of(&l(4)), Some(at(l(1))));
        // Joining again changes nothing.
        let again = a.clone();
        assert!(!a.join(&again));
        // A place only one side knows is forgotten.
        let mut c = Objects::entry(0);
        c.set(l(8), at(l(1)));
        assert!(c.join(&Objects::entry(0)));
        assert_eq!(c.bounds_of(&l(8)), None);
    }

    #[test]
    fn join_keeps_entry_holders_but_not_implicit_entry_values() {
        // An explicit `Entry` holder names the value on entry, whatever
        // happened to the place since.
        let mut a = Objects::entry(1);
        a.set(l(3), Bounds::holder(Holder::Entry(deref(1))));
        let mut b = a.clone();
        b.kill(&deref(1), None);
        // (What was written changed.)
        assert!(a.join(&b));
        assert_eq!(
            a.bounds_of(&l(3)),
            Some(Bounds::holder(Holder::Entry(deref(1))))
        );
        // The place itself, written on one side, no longer holds it.
        assert_eq!(a.bounds_of(&deref(1)), None);
    }

    #[test]
    fn guarded_facts_hold_once_the_value_is_known() {
        let mut o = Objects::entry(2);
        o.guard(
            5,
            vec![Guarded {
                when: 1,
                discr: false,
                two_valued: true,
                bounds: vec![(deref(1), at(deref(2)))],
            }],
        );
        let mut no = o.clone();
        no.assume(5, 0, false, true);
        assert_eq!(
            no.bounds_of(&deref(1)),
            Some(Bounds::holder(Holder::Entry(deref(1))))
        );
        o.assume(5, 1, false, true);
        assert!(
            o.bounds_of(&deref(1))
                .unwrap()
                .iter()
                .any(|b| b == &vec![Holder::At(deref(2))])
        );
        // A write to a place the guard names ends it.
        let mut w = Objects::entry(2);
        w.guard(
            5,
            vec![Guarded {
                when: 1,
                discr: false,
                two_valued: true,
                bounds: vec![(deref(1), at(deref(2)))],
            }],
        );
        w.kill(&deref(2), None);
        assert!(w.guarded(5).is_empty());
    }

    #[test]
    fn bounds_stay_small() {
        let mut b = Bounds::default();
        for i in 0..10 {
            b.add(vec![Holder::At(l(i)), Holder::At(l(i + 100))]);
        }
        assert_eq!(b.iter().count(), MAX_BOUNDS);
        // A bound with too many holders is not kept.
        let mut c = Bounds::default();
        c.add((0..=MAX_HOLDERS as u32).map(|i| Holder::At(l(i))).collect());
        assert!(c.is_empty());
        // A smaller bound replaces the larger ones it implies.
        let mut d = Bounds::one(vec![Holder::At(l(1)), Holder::At(l(2))]);
        d.add(vec![Holder::At(l(1))]);
        assert_eq!(d, at(l(1)));
        let mut o = Objects::entry(0);
        for i in 0..(MAX_PLACES as u32 + 10) {
            o.set(l(i), at(l(1000)));
        }
        assert_eq!(o.iter().count(), MAX_PLACES);
    }
}
