//! What callers need to know about a function: how it moves the preemption
//! count (its adjustment, possibly depending on a discriminant) and which
//! entry counts it accepts (its expectation), with where each came from.

use annotations::ExpectRange;
use program::{EdgeKind, FnId};
use spec::LockKind;

use memory::Location;
use memory::ProjKey;

/// A condition on the first argument at entry: the discriminant of the
/// enum it points to (`&mut self` methods, drop glue) or is (by value).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode,
)]
pub enum ArgCond {
    Pointee(u128),
    Value(u128),
}

/// A place below what an argument points to, as a path of fields (and
/// variants): `(*arg).nodes` is `.3`. A pointer described with a path
/// points *at* that place when the path is `exact`, and otherwise somewhere
/// in the memory reached from it (through any pointer stored below it): a
/// reference a tree's `get` returns into the tree's nodes is below the
/// tree's field, not at it. Paths longer than [`FieldPath::MAX`] are cut
/// short and no longer exact, which keeps every claim true.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode,
)]
pub struct FieldPath {
    len: u8,
    exact: bool,
    /// The way to the place goes through an `UnsafeCell` (interior
    /// mutability): a write there changes only memory inside that cell.
    interior: bool,
    /// The way to the place goes through a counted handle to a shared
    /// object (a sharing clone, `Arc::clone`): the place is in that
    /// object's own allocation, never in the memory of a lock's data that
    /// held the handle (that data is written only through its guard).
    handle: bool,
    /// The way to the place goes through a pointer stored at (or below)
    /// the path: the place is reached from that memory, never in it (an
    /// iterator's `next` returns a reference to an element its cursor
    /// points to, not into the iterator).
    pointer: bool,
    steps: [u16; FieldPath::MAX],
}

impl FieldPath {
    /// "Somewhere below" the first `n` steps of this path, with the given
    /// marks (each mark narrows what the path designates).
    pub fn prefix_below(&self, n: usize, interior: bool, handle: bool, pointer: bool) -> FieldPath {
        let mut steps = [0; FieldPath::MAX];
        let n = n.min(self.len as usize);
        steps[..n].copy_from_slice(&self.steps[..n]);
        FieldPath {
            len: n as u8,
            exact: false,
            interior,
            handle,
            pointer,
            steps,
        }
    }

    /// Longest path kept.
    pub const MAX: usize = 6;
    /// What the argument points to, exactly.
    pub const AT: FieldPath = FieldPath {
        len: 0,
        exact: true,
        interior: false,
        handle: false,
        pointer: false,
        steps: [0; FieldPath::MAX],
    };
    /// Anywhere in what the argument reaches.
    pub const BELOW: FieldPath = FieldPath {
        len: 0,
        exact: false,
        interior: false,
        handle: false,
        pointer: false,
        steps: [0; FieldPath::MAX],
    };
    /// A variant marker among the steps (a field of a variant is numbered
    /// within it).
    const VARIANT: u16 = 0x8000;

    pub fn exact(&self) -> bool {
        self.exact
    }

    pub fn interior(&self) -> bool {
        self.interior
    }

    /// The same place, reached through an `UnsafeCell`.
    pub fn cell(mut self) -> FieldPath {
        self.interior = true;
        self
    }

    pub fn through_handle(&self) -> bool {
        self.handle
    }

    /// Somewhere in the object a counted handle at this place refers to
    /// (what a sharing clone of it points to).
    pub fn handle(mut self) -> FieldPath {
        self.handle = true;
        self.exact = false;
        self
    }

    pub fn through_pointer(&self) -> bool {
        self.pointer
    }

    /// Somewhere reached through a pointer stored at or below this place
    /// (not in its own memory).
    pub fn pointed(mut self) -> FieldPath {
        self.pointer = true;
        self.exact = false;
        self
    }

    pub fn steps(&self) -> &[u16] {
        &self.steps[..self.len as usize]
    }

    /// The same place, described as "somewhere below it".
    pub fn below(mut self) -> FieldPath {
        self.exact = false;
        self
    }

    fn push(mut self, step: u16) -> FieldPath {
        if !self.exact {
            return self;
        }
        if self.len as usize == Self::MAX {
            bounds::hit(bounds::Bound::AccessPath);
            self.exact = false;
            return self;
        }
        self.steps[self.len as usize] = step;
        self.len += 1;
        self
    }

    /// Field `index` of the place (only an exact path goes down).
    pub fn field(self, index: u32) -> FieldPath {
        match u16::try_from(index) {
            Ok(i) if i & Self::VARIANT == 0 => self.push(i),
            _ => self.below(),
        }
    }

    /// The place viewed as variant `v` of its enum.
    pub fn variant(self, v: u32) -> FieldPath {
        match u16::try_from(v) {
            Ok(i) if i & Self::VARIANT == 0 => self.push(i | Self::VARIANT),
            _ => self.below(),
        }
    }

    /// `other`, a path below what this one designates: appended where this
    /// one is exact, else this one (below).
    pub fn then(self, other: FieldPath) -> FieldPath {
        let mut out = self;
        out.interior |= other.interior;
        out.handle |= other.handle;
        out.pointer |= other.pointer;
        if !out.exact {
            return out;
        }
        for &s in other.steps() {
            out = out.push(s);
        }
        if !other.exact {
            out = out.below();
        }
        out
    }

    /// Whether writing at one may change what the other designates: one
    /// path is a prefix of the other.
    pub fn overlaps(&self, other: &FieldPath) -> bool {
        let n = self.len.min(other.len) as usize;
        self.steps[..n] == other.steps[..n]
    }

    pub fn describe(&self) -> String {
        let mut s = String::new();
        for &step in self.steps() {
            if step & Self::VARIANT != 0 {
                s.push_str(&format!(" as variant {}", step & !Self::VARIANT));
            } else {
                s.push_str(&format!(".{step}"));
            }
        }
        if self.interior {
            s.push_str(" (inside a cell)");
        }
        if self.handle {
            s.push_str(" (in an object a handle there refers to)");
        }
        if self.pointer {
            s.push_str(" (through a pointer stored there)");
        }
        s
    }
}

/// Where the last-reference expectations of a body's sites come from, in
/// terms of the fields of what its first argument points to (see
/// [`Summary::last_field`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LastField {
    /// No site has one.
    #[default]
    Nothing,
    /// Every one drops (part of) this field.
    Field(u32),
    /// Some other site.
    Any,
}

/// A step below a place: a field, or a variant's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub enum PlaceStep {
    Field(u32),
    /// The payload of the variant with this index, whose discriminant is
    /// `discr`.
    Variant {
        index: u32,
        discr: u128,
    },
    /// What the pointer held at the place so far points to: the place is
    /// in another object (`Box::drop` dropping `*self.0`, `Arc::drop`
    /// releasing `*self.ptr`). Writes through pointers are not tracked as
    /// changes of the argument's own memory, so only the part before the
    /// first such step is checked unwritten.
    Deref,
}

/// Where a function's last-reference expectation comes from, below what its
/// first argument holds or points to: only from dropping the place at
/// `steps`, and (`variants`) only while that place holds one of these
/// variants. `Allocation`'s glue: `.1` (its `Option<T>` field), only when
/// it is `Some`. A caller that knows the place holds another variant (the
/// field was `take()`n) drops no last reference there.
#[derive(Clone, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct LastPlace {
    pub steps: Vec<PlaceStep>,
    /// The discriminants for which the expectation holds; `None`: any.
    pub variants: Option<Vec<u128>>,
    /// For each step, the field it names, as `path::Struct.field` (no
    /// generic arguments), where the body that made the step knew the
    /// type it projects from; empty otherwise. A same-object declaration
    /// finds the back pointer it is about by this name.
    pub labels: Vec<String>,
}

impl LastPlace {
    /// `` `(*arg0) as variant 1.0.1`, only while it has discriminant 1 ``:
    /// the place below what the first argument holds or points to.
    pub fn describe(&self) -> String {
        let mut out = String::from("(*arg0)");
        for s in &self.steps {
            match s {
                PlaceStep::Field(f) => out.push_str(&format!(".{f}")),
                PlaceStep::Variant { index, .. } => out.push_str(&format!(" as variant {index}")),
                PlaceStep::Deref => out = format!("(*{out})"),
            }
        }
        let out = format!("`{out}`");
        match &self.variants {
            Some(vs) => format!(
                "{out}, only while it has discriminant {}",
                vs.iter()
                    .map(u128::to_string)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            None => out,
        }
    }
}

/// The places the sites of a body that carry a last-reference expectation
/// drop, joined (like [`LastField`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LastPlaces {
    #[default]
    Nothing,
    One(LastPlace),
    Any,
}

impl LastPlaces {
    pub fn join(self, other: LastPlaces) -> LastPlaces {
        match (self, other) {
            (LastPlaces::Nothing, x) | (x, LastPlaces::Nothing) => x,
            (LastPlaces::One(a), LastPlaces::One(b)) if a.steps == b.steps => {
                let variants = match (a.variants, b.variants) {
                    (Some(mut x), Some(y)) => {
                        x.extend(y);
                        x.sort_unstable();
                        x.dedup();
                        Some(x)
                    }
                    _ => None,
                };
                let labels = if a.labels == b.labels {
                    a.labels
                } else {
                    a.labels
                        .iter()
                        .zip(&b.labels)
                        .map(|(x, y)| if x == y { x.clone() } else { String::new() })
                        .collect()
                };
                LastPlaces::One(LastPlace {
                    steps: a.steps,
                    variants,
                    labels,
                })
            }
            _ => LastPlaces::Any,
        }
    }

    pub fn place(self) -> Option<LastPlace> {
        match self {
            LastPlaces::One(p) => Some(p),
            _ => None,
        }
    }
}

impl LastField {
    pub fn join(self, other: LastField) -> LastField {
        match (self, other) {
            (LastField::Nothing, x) | (x, LastField::Nothing) => x,
            (LastField::Field(a), LastField::Field(b)) if a == b => LastField::Field(a),
            _ => LastField::Any,
        }
    }

    pub fn field(self) -> Option<u32> {
        match self {
            LastField::Field(f) => Some(f),
            _ => None,
        }
    }
}

/// Where what a value holds comes from, in one function's terms (object
/// liveness, `body::origins`). The number is an argument index (0-based);
/// the path says where below what the argument points to.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode,
)]
pub enum Flow {
    /// Moved or copied from argument `k` (or read through it, when it is an
    /// owned pointer).
    Own(u32),
    /// A shared borrow of memory that shared-reference argument `k` borrows
    /// (at or below the path).
    Shared(u32, FieldPath),
    /// A bit copy of memory behind shared-reference argument `k` (a pointer
    /// read out of the `Arc` it borrows): no count of its own.
    Read(u32, FieldPath),
    /// A sharing clone (`Arc::clone`) of what argument `k` borrows or
    /// holds, whatever the path to it: a count on an object that a
    /// shared-reference argument keeps alive for the whole call, and that
    /// an owned argument keeps alive while the caller keeps it alive. The
    /// path (never exact) says below which place it was found.
    Clone(u32, FieldPath),
}

impl Flow {
    pub fn describe(&self) -> String {
        let at = |k: &u32, p: &FieldPath| {
            if p.steps().is_empty() {
                String::new()
            } else if p.exact() {
                format!(" (at `(*arg{k}){}`)", p.describe())
            } else {
                format!(" (below `(*arg{k}){}`)", p.describe())
            }
        };
        match self {
            Flow::Own(k) => format!("what `arg{k}` holds"),
            Flow::Shared(k, p) => format!("a borrow of what `arg{k}` borrows{}", at(k, p)),
            Flow::Read(k, p) => format!("a bit copy of what `arg{k}` points to{}", at(k, p)),
            Flow::Clone(k, p) => {
                format!("a sharing clone of what `arg{k}` points to{}", at(k, p))
            }
        }
    }

    pub fn arg(&self) -> u32 {
        match *self {
            Flow::Own(k) | Flow::Shared(k, _) | Flow::Read(k, _) | Flow::Clone(k, _) => k,
        }
    }
}

/// What is known about the returned value on a case.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode,
)]
pub enum RetFact {
    /// The returned enum has this discriminant (`try_lock` returning `Some`).
    Discr(u128),
    /// The returned integer is this value (`spin_trylock` returning 0).
    Is(u128),
    /// The returned integer is not this value (`spin_trylock` succeeding).
    IsNot(u128),
}

/// One way a call can go: under `when`, the count moves by `adjust`, the
/// result satisfies `ret`, and the enum behind the first argument is left
/// with discriminant `post` (`Option::take` leaves `None`) or holding what
/// argument `post_arg` held (`mem::replace(dest, src)` leaves `*dest` with
/// `src`'s variant). Lock paths are in the callee's terms (rooted at its
/// arguments or statics).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub struct Case {
    pub when: Option<ArgCond>,
    pub ret: Option<RetFact>,
    pub post: Option<u128>,
    /// The MIR local (an argument the body never writes) whose value the
    /// enum behind the first argument holds on return.
    pub post_arg: Option<u32>,
    pub adjust: i32,
    /// Locks held on return that were not held on entry.
    pub acquire: Vec<Acquisition>,
    /// Locks released that were held on entry (the caller must hold them).
    pub release: Vec<Location>,
    /// Pointers in the returned value: (projection inside it, location).
    pub ret_addrs: Vec<(Vec<ProjKey>, Location)>,
    /// The function never returns when `when` holds (no return is reachable
    /// from that entry: the payload of an impossible variant, a panic), while
    /// it does for other entries: a caller's path on which `when` holds does
    /// not continue after the call.
    pub diverges: bool,
}

/// A lock a function returns holding.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub struct Acquisition {
    /// In the function's terms.
    pub lock: Location,
    pub kind: LockKind,
    /// Taken by a trylock: it cannot deadlock by itself.
    pub trylock: bool,
}

impl Case {
    pub fn always(adjust: i32) -> Case {
        Case {
            when: None,
            ret: None,
            post: None,
            post_arg: None,
            adjust,
            acquire: Vec::new(),
            release: Vec::new(),
            ret_addrs: Vec::new(),
            diverges: false,
        }
    }

    /// Whether the case changes or designates locks.
    pub fn has_lock_effect(&self) -> bool {
        !self.acquire.is_empty() || !self.release.is_empty() || !self.ret_addrs.is_empty()
    }

    pub fn describe(&self) -> String {
        self.describe_split(None, false)
    }

    /// [`Case::describe`], naming the split field of the function's
    /// summary (`split_field`, a `bool` when `value`).
    pub fn describe_split(&self, field: Option<u32>, value: bool) -> String {
        let mut parts = Vec::new();
        if self.diverges {
            parts.push("never returns".to_string());
        }
        let place = |base: &str| match field {
            Some(f) => format!("({base}).{f}"),
            None => base.to_string(),
        };
        let what = if value { "is" } else { "has discriminant" };
        match self.when {
            Some(ArgCond::Pointee(d)) => {
                parts.push(format!("when `{}` {what} {d}", place("*arg0")))
            }
            Some(ArgCond::Value(d)) => parts.push(format!("when `{}` {what} {d}", place("arg0"))),
            None => {}
        }
        match self.ret {
            Some(RetFact::Discr(d)) => parts.push(format!("returns discriminant {d}")),
            Some(RetFact::Is(v)) => parts.push(format!("returns {v}")),
            Some(RetFact::IsNot(v)) => parts.push(format!("returns other than {v}")),
            None => {}
        }
        if let Some(p) = self.post {
            let what = if value { " at" } else { " with discriminant" };
            parts.push(format!("leaves `{}`{what} {p}", place("*arg0")));
        }
        if let Some(a) = self.post_arg {
            parts.push(format!("leaves `*arg0` holding `arg{}`", a - 1));
        }
        for a in &self.acquire {
            parts.push(format!("acquires `{}` ({})", a.lock.describe(), a.kind));
        }
        for l in &self.release {
            parts.push(format!("releases `{}`", l.describe()));
        }
        for (proj, l) in &self.ret_addrs {
            let at = if proj.is_empty() {
                "returns".to_string()
            } else {
                format!("returns, at {proj:?},")
            };
            parts.push(format!("{at} a pointer to `{}`", l.describe()));
        }
        if parts.is_empty() {
            format!("{:+}", self.adjust)
        } else {
            format!("{:+} ({})", self.adjust, parts.join(", "))
        }
    }
}

/// Where a summary comes from; shown by `kanalyze summary`.
#[derive(Clone, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub enum Source {
    /// Inferred from the body.
    Inferred,
    /// From a `#[klint::preempt_count]`/`drop_preempt_count` annotation on `path`.
    Annotation { path: String, unchecked: bool },
    /// From the spec of C function `name`.
    Spec { name: String },
    /// From the spec's `[rust]` entry of the Rust item `path` (its lock
    /// effect or its blocking).
    RustSpec { path: String },
    /// A C function the spec does not know: klint's default, "may sleep".
    UnknownForeign,
    /// A C function the spec does not know, in a program that is not the
    /// kernel (`spec::Unknown::NoConstraint`): no constraint.
    UnconstrainedForeign,
    /// A Rust function of a crate that was not extracted: klint's optimistic default.
    NotExtracted,
    /// A call through a pointer or vtable that may reach code outside the program.
    UnknownIndirect,
    /// A compiler shim or intrinsic without a body.
    Builtin,
    /// The recursion could not be resolved; an error was reported.
    Recursive,
    /// The body's analysis ran out of its step budget: what an unknown
    /// function gets under the profile (may sleep in the kernel).
    OverBudget,
}

/// A lock acquired somewhere during a call (not necessarily still held on
/// return): what the lock-order graph and the IRQ-safety check need.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub struct Take {
    /// In the terms of the function whose summary holds it.
    pub lock: Location,
    pub kind: LockKind,
    pub trylock: bool,
    /// Taken again after the function released it (`CondVar::wait`'s
    /// relock): not a second acquisition of a lock the caller holds.
    pub reacquire: bool,
    /// Interrupts were disabled by the function itself at that point.
    pub irqs_disabled: bool,
    /// The innermost function that called the lock function, and where.
    pub func: FnId,
    pub span: kmir::Span,
    /// The calls that lead there, from the summary's own function down:
    /// `(function, call site in it)`, at most [`MAX_VIA`].
    pub via: Vec<(FnId, kmir::Span)>,
}

/// Longest call chain a take remembers.
pub const MAX_VIA: usize = 8;

/// Most takes a summary keeps.
pub const MAX_TAKES: usize = 64;

/// The call or drop that determined a function's expectation.
#[derive(Clone, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct Reason {
    pub block: u32,
    pub span: kmir::Span,
    pub callee: FnId,
    pub kind: EdgeKind,
    /// The adjustment since entry at that site.
    pub adj: i32,
    pub callee_expect: ExpectRange,
    /// The callee's summary specialised to that call's constants, when it
    /// was: the explanation continues with it.
    pub callee_summary: Option<Box<Summary>>,
    /// For `reason_last`: the requirement is the callee's own last-reference
    /// expectation (the explanation goes on in the callee's teardown terms);
    /// otherwise it is the callee's whole expectation, met on a path where
    /// this function has just dropped a last reference. For `reason`: the
    /// requirement is the callee's last-reference expectation, which a
    /// holds-last declaration made this site's own.
    pub via_last: bool,
}

/// A place below what an argument points to: `(*argN).f.g`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, bincode::Encode, bincode::Decode)]
pub struct ArgPlace {
    /// The argument (0-based), a shared reference.
    pub arg: u32,
    /// The fields from what it points to.
    pub fields: Vec<u32>,
}

impl ArgPlace {
    pub fn describe(&self) -> String {
        let mut out = format!("(*arg{})", self.arg);
        for f in &self.fields {
            out.push_str(&format!(".{f}"));
        }
        out
    }
}

/// Which field of the object a counted handle refers to an exclusive
/// accessor returns the contents of (`body::accessors::exclusive_field`):
/// two accessors of one field return one place, two of different fields
/// disjoint ones.
#[derive(Clone, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct ExclusiveField {
    /// The object's type, as the dump writes it.
    pub object: String,
    /// The fields from the object to the field's cell.
    pub fields: Vec<u32>,
}

impl ExclusiveField {
    /// Whether the two fields share no memory: same object type, and
    /// neither path is a prefix of the other.
    pub fn disjoint(&self, other: &ExclusiveField) -> bool {
        let n = self.fields.len().min(other.fields.len());
        self.object == other.object && self.fields[..n] != other.fields[..n]
    }
}

/// A key argument: the argument (0-based) holding it, or pointing to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct KeyArg {
    pub arg: u32,
    /// The argument is a shared reference to the key.
    pub by_ref: bool,
}

/// The function returns a value of shape `shape` only when the map at
/// `map` holds no entry whose key equals `key` (`body::absent_key`).
#[derive(Clone, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct AbsentKey {
    pub map: ArgPlace,
    pub key: KeyArg,
    /// The discriminants (or the value, for an integer or a `bool`) from
    /// the outside in, through the first field of each variant: `None` or
    /// `false` is `[0]`, `Ok(None)` is `[0, 0]`.
    pub shape: Vec<u128>,
}

impl AbsentKey {
    pub fn describe(&self) -> String {
        let key = if self.key.by_ref {
            format!("`*arg{}`", self.key.arg)
        } else {
            format!("`arg{}`", self.key.arg)
        };
        let shape = self
            .shape
            .iter()
            .map(u128::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "returns the shape [{shape}] (discriminants, outside in) only when the map at `{}` holds no entry with the key {key}",
            self.map.describe()
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct Summary {
    /// Never empty; one `Always` case for ordinary functions.
    pub cases: Vec<Case>,
    pub expect: ExpectRange,
    /// From the spec: the call sleeps only if this argument has this flag.
    pub sleeps_if_flag: Option<spec::FlagCondition>,
    /// From the spec: the call sleeps only if this argument is zero (a
    /// reallocation to size 0 frees, and `vfree` may sleep).
    pub sleeps_if_zero: Option<u32>,
    /// For a function analysed once per variant of its first argument: the
    /// expectation of each variant (`expect` is their intersection). A
    /// caller that knows the variant needs only that one.
    pub expect_when: Vec<(ArgCond, ExpectRange)>,
    pub source: Source,
    pub reason: Option<Reason>,
    /// Inference failed and was reported: callers use the summary without
    /// reporting anything more about it.
    pub poisoned: bool,
    /// Every lock with an object acquired during a call, in the callee's
    /// terms (for the order graph and IRQ safety).
    pub takes: Vec<Take>,
    /// The cases' `ArgCond` is about this field of the first argument (a
    /// struct whose field is the enum, like the kernel's `ScopeGuard`).
    pub split_field: Option<u32>,
    /// The split field is a `bool` (the cases' `ArgCond` is its value),
    /// not an enum.
    pub split_value: bool,
    /// `RetFact::Discr` is about this field of the returned struct.
    pub ret_field: Option<u32>,
    /// The expectation comes from a call that depends on the arguments (a
    /// GFP flag, a fn pointer): call sites passing constants get a
    /// specialised summary (see `context.rs`).
    pub context_sensitive: bool,
    /// This is a call-site specialisation, not the function's own summary.
    pub specialised: bool,
    /// What the call additionally expects if a reference it drops is the
    /// last one: the teardown an `Arc`'s destructor runs only when
    /// `refcount_dec_and_test` says so. Kept apart from `expect` because
    /// whether a reference is the last depends on counts the analysis does
    /// not track; violations of it alone are reported as
    /// `last-reference-in-atomic` warnings (see docs/preemption.md).
    pub expect_last: ExpectRange,
    /// Where `expect_last` comes from.
    pub reason_last: Option<Reason>,
    /// `expect_last` per variant of the split argument, like `expect_when`
    /// (empty when it does not depend on the variant): dropping a `None`
    /// releases no reference.
    pub expect_last_when: Vec<(ArgCond, ExpectRange)>,
    /// The function returns the result of a last-reference test
    /// (`Refcount::dec_and_test` wrapping `refcount_dec_and_test`).
    pub last_reference_test: bool,
    /// Nestings of one lock class on two locations rooted at the
    /// arguments, which a caller may prove to be one object.
    pub open_nestings: Vec<crate::body::OpenNesting>,
    /// Where every reference the returned value holds comes from (sorted);
    /// `None`: it may hold anything (a fresh allocation, a read through a
    /// `&mut`, what an unknown callee returned).
    pub ret_from: Option<Vec<Flow>>,
    /// `expect_last` arises only from releasing what these owned
    /// arguments hold (sorted): a caller passing values another reference
    /// keeps alive discharges it. `None`: from anything.
    pub last_from: Option<Vec<u32>>,
    /// `expect_last` arises only from dropping field `F` of what the first
    /// argument points to (a drop glue whose other fields and `Drop` impl
    /// release nothing that can be a last reference): `NodeRef`'s glue,
    /// whose only counted field is `node`. A drop of a value whose field
    /// `F` is shown to be kept alive is then backed.
    pub last_field: Option<u32>,
    /// The place (and variants) `expect_last` comes from, below what the
    /// first argument holds or points to (`LastPlace`).
    pub last_place: Option<LastPlace>,
    /// A `Clone::clone` whose result holds only bit copies of what its
    /// argument points to, and sharing clones of it: the clone shares the
    /// objects and holds counts of the same kind (`Arc`, `ARef`, a derived
    /// clone of a struct of them). An allocation in it (a deep copy) makes
    /// the result `Top` and the clone not sharing.
    pub sharing_clone: bool,
    /// The function returns non-zero only if the handles its two arguments
    /// point to (references to one single-pointer handle type, `&Arc<T>`)
    /// hold the same pointer: `Arc::ptr_eq`. On a path where it did, a
    /// handle compared with one a borrow keeps alive is not the last.
    pub identity_test: Option<(u32, u32)>,
    /// The function returns non-zero only if the two places hold no handle
    /// (both the variant without fields), or handles holding the same
    /// pointer (`body::same_or_none`): Binder's `is_stacked_on`, for an
    /// `Option<DArc<_>>` field and an `&Option<DArc<_>>` argument.
    pub same_or_none: Option<(ArgPlace, ArgPlace)>,
    /// Where the function may write, below what its arguments point to
    /// (`body::writes`, sorted); `None`: anywhere its arguments reach.
    pub writes: Option<Vec<(u32, FieldPath)>>,
    /// Where the pointers its result holds point, below what its arguments
    /// point to (sorted); `None`: anywhere its arguments reach.
    pub ret_points: Option<Vec<(u32, FieldPath)>>,
    /// Its result may hold a pointer to memory none of its arguments
    /// reach (a new allocation, a static, what C returned): `ret_points`
    /// does not describe it. `true` without a body.
    pub ret_fresh: bool,
    /// Its result is a reference to contents only the holder of a unique
    /// handle may reach (`ListArcField::assert_mut`, by the spec's
    /// `exclusive_to_handle`, and the getters returning what it returns):
    /// `body::accessors`.
    pub ret_exclusive: bool,
    /// For an exclusive accessor: the field of the object its handle
    /// argument counts whose contents it returns, when its body shows it
    /// (`None`: it may be any).
    pub exclusive_field: Option<ExclusiveField>,
    /// When it returns, what this argument held is kept in the memory
    /// argument 0 points to (the spec's `keeps_argument`: `RBTree::insert`
    /// links the node it is given into the tree).
    pub keeps_arg: Option<u32>,
    /// A lookup: what it returns in one shape says a key is absent from a
    /// map (the spec's `looks_up_key`, and functions returning such a
    /// result, or a value built only after one: `body::absent_key`).
    pub absent_key: Option<AbsentKey>,
    /// It returns a map node whose key is this argument, by value (the
    /// spec's `node_key`: `RBTreeNode::new`).
    pub node_key: Option<u32>,
    /// It inserts the node this argument holds into the map argument 0
    /// points to and returns the entry it displaced, the variant without
    /// fields when no entry had the node's key (the spec's
    /// `displaces_key_of`: `RBTree::insert`).
    pub displaces_key_of: Option<u32>,
    /// The arguments (sorted) into whose memory the function stores only
    /// pointers reached from that same argument, or none: an iterator's
    /// `next` moves its cursor along the nodes its cursor reaches. Empty
    /// for a function without a body.
    pub stores_own: Vec<u32>,
    /// What callers need to know about object liveness (`liveness`).
    pub liveness: crate::liveness::Contract,
}

/// What a split's condition is about: a discriminant, or a `bool`'s value.
pub fn split_aspect(value: bool) -> memory::Aspect {
    if value {
        memory::Aspect::Value
    } else {
        memory::Aspect::Discr
    }
}

impl Summary {
    /// What the cases' `ArgCond` is about.
    pub fn split_aspect(&self) -> memory::Aspect {
        split_aspect(self.split_value)
    }

    /// Whether some way it returns holds a lock it did not hold on entry.
    pub fn has_acquisition(&self) -> bool {
        self.cases.iter().any(|c| !c.acquire.is_empty())
    }

    pub fn fixed(adjust: i32, expect: ExpectRange, source: Source) -> Summary {
        Summary {
            cases: vec![Case::always(adjust)],
            expect,
            sleeps_if_flag: None,
            sleeps_if_zero: None,
            expect_when: Vec::new(),
            source,
            reason: None,
            poisoned: false,
            takes: Vec::new(),
            split_field: None,
            split_value: false,
            ret_field: None,
            context_sensitive: false,
            specialised: false,
            expect_last: ExpectRange::TOP,
            reason_last: None,
            expect_last_when: Vec::new(),
            last_reference_test: false,
            open_nestings: Vec::new(),
            ret_from: None,
            last_from: None,
            last_field: None,
            sharing_clone: false,
            identity_test: None,
            same_or_none: None,
            last_place: None,
            writes: None,
            ret_points: None,
            ret_fresh: true,
            ret_exclusive: false,
            exclusive_field: None,
            keeps_arg: None,
            absent_key: None,
            node_key: None,
            displaces_key_of: None,
            stores_own: Vec::new(),
            liveness: crate::liveness::Contract::unknown(),
        }
    }

    /// klint's "no assumption": adjustment 0, any context.
    pub fn neutral(source: Source) -> Summary {
        Summary::fixed(0, ExpectRange::TOP, source)
    }

    /// klint's default for what it cannot see: adjustment 0, may sleep.
    pub fn may_sleep(source: Source) -> Summary {
        Summary::fixed(0, ExpectRange::exactly(0), source)
    }

    /// The adjustment for every case, or `None` if they differ.
    pub fn uniform_adjust(&self) -> Option<i32> {
        let first = self.cases.first()?.adjust;
        self.cases
            .iter()
            .all(|c| c.adjust == first)
            .then_some(first)
    }

    pub fn adjust_text(&self) -> String {
        adjust_text(&self.cases)
    }
}

/// How cases move the count: one number when they agree, else each case.
pub fn adjust_text(cases: &[Case]) -> String {
    match cases.first() {
        Some(first) if cases.iter().all(|c| c.adjust == first.adjust) => first.adjust.to_string(),
        _ => {
            let parts: Vec<String> = cases.iter().map(Case::describe).collect();
            parts.join("; ")
        }
    }
}

/// Read access to the summaries of other functions while one is analysed or
/// reported: by reference, never cloned per lookup.
pub trait Summaries: Sync {
    /// `f`'s summary (provisional while `f`'s recursive component is being
    /// solved, final afterwards).
    fn get(&self, f: FnId) -> &Summary;

    /// `f`'s summary specialised to what one call site passes; `None` where
    /// `f` is not specialised (a member of the component being solved, or
    /// no specialisation at all).
    fn specialized(&self, _f: FnId, _ctx: &crate::context::Context) -> Option<Summary> {
        None
    }
}

/// The final summaries of every function, indexed by [`FnId`].
#[derive(Clone, Copy)]
pub struct Final<'a>(pub &'a [Summary]);

impl Summaries for Final<'_> {
    fn get(&self, f: FnId) -> &Summary {
        &self.0[f.index()]
    }
}

/// Other summaries with one function's replaced (a call site's specialised
/// view of its callee).
pub struct Overlay<'a> {
    pub base: &'a dyn Summaries,
    pub f: FnId,
    pub summary: &'a Summary,
}

impl Summaries for Overlay<'_> {
    fn get(&self, f: FnId) -> &Summary {
        if f == self.f {
            self.summary
        } else {
            self.base.get(f)
        }
    }
}

#[cfg(test)]
mod field_path_tests {
    use super::FieldPath;

    #[test]
    fn exact_paths_go_down_and_below_stops_them() {
        let nodes = FieldPath::AT.field(4);
        assert!(nodes.exact());
        assert_eq!(nodes.steps(), &[4]);
        let entry = nodes.below().field(0);
        assert!(!entry.exact());
        assert_eq!(entry.steps(), &[4], "a path below a place does not go down");
        assert_eq!(FieldPath::BELOW.field(3).steps(), &[] as &[u16]);
    }

    #[test]
    fn then_appends_only_to_exact_paths_and_keeps_cells() {
        let a = FieldPath::AT.field(1);
        let b = FieldPath::AT.field(2).below();
        let ab = a.then(b);
        assert_eq!(ab.steps(), &[1, 2]);
        assert!(!ab.exact());
        assert_eq!(a.below().then(b).steps(), &[1]);
        assert!(a.then(FieldPath::AT.cell()).interior());
        assert!(!a.then(FieldPath::AT).interior());
    }

    #[test]
    fn overlap_is_a_prefix_either_way() {
        let nodes = FieldPath::AT.field(4);
        let work = FieldPath::AT.field(3);
        let entry = nodes.field(0).field(2);
        assert!(nodes.overlaps(&entry) && entry.overlaps(&nodes));
        assert!(!work.overlaps(&nodes));
        assert!(
            FieldPath::BELOW.overlaps(&nodes),
            "the whole overlaps every part"
        );
        assert!(!nodes.variant(1).overlaps(&nodes.field(1)));
    }

    #[test]
    fn long_paths_are_cut_short_and_inexact() {
        let mut p = FieldPath::AT;
        for i in 0..(FieldPath::MAX as u32 + 2) {
            p = p.field(i);
        }
        assert_eq!(p.steps().len(), FieldPath::MAX);
        assert!(!p.exact());
        // An index too large for a step is "below", not wrapped.
        assert_eq!(FieldPath::AT.field(70_000).steps(), &[] as &[u16]);
        assert!(!FieldPath::AT.field(70_000).exact());
    }
}
