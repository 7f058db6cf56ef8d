//! Where the references a value holds come from: the facts object liveness
//! needs (docs/preemption.md, "Objects kept alive by a borrow").
//!
//! A drop can release the last reference to an object only if nothing else
//! keeps the object alive. A function given `thread: &Arc<Thread>` can drop
//! `thread.clone()` without releasing the last reference: the `Arc` behind
//! the borrow holds one for the whole call, and nothing can change it (it
//! is behind a shared borrow, and no `UnsafeCell` is on the way). The
//! clone may travel first, through `ListArc::try_from_arc`, a `Result`, a
//! `?` and a `From` impl that drops it, so the fact has to be carried
//! through summaries:
//!
//! * [`Flow`]: where, in a function's own terms, what a value holds comes
//!   from: moved from an argument, a borrow of what an argument borrows, a
//!   bit copy read from behind one, or a sharing clone of something behind
//!   one;
//! * a summary's `ret_from` says where its returned value comes from, and
//!   `last_from` which owned arguments its last-reference expectation is
//!   about (`Result::ok` drops its argument's `Err` payload);
//! * a drop, or a call whose `last_from` arguments are given, of values that
//!   are all sharing clones of what a shared-reference argument holds is
//!   *backed*: it cannot release a last reference.
//!
//! The scan is flow-insensitive (a local holds the union of everything ever
//! written to it) and conservative: whatever it cannot follow (a call
//! without a summary that says, a local written through a `&mut`, data
//! behind an `UnsafeCell`, a pointer made from an integer) is `Top`, which
//! is never backed.

use std::collections::BTreeSet;

use std::collections::HashMap;

use kmir::{
    AggregateKind, BinOp, BlockId, Body, CastKind, CrateDump, Operand, Place, Projection, Rvalue,
    StatementKind, TerminatorKind, TyId, TyKind,
};

use crate::summary::{FieldPath, Flow, Summaries};

use super::Target;
use super::writes::{Guards, Root, Writes};

/// Where part of a value comes from, in one body: an argument's flow, or
/// a local of the body (which never leaves it: a summary names arguments
/// only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    Arg(Flow),
    /// Reached from the data a guard local gives access to (what its
    /// `Deref` returns at one view), at or below the path: backed while
    /// the guard holds its lock from that view on and nothing writes there
    /// (`Origins::guard_backs`).
    Guard(GuardFlow, ViewOf, FieldPath),
    /// A borrow of local `l` itself (`&l`, `&l.f`).
    Local(u32),
    /// A sharing clone of what local `l` holds: backed where `l` surely
    /// still holds it (`Origins::alive_at`).
    CloneLocal(u32),
}

/// Which guard's data, as one view call returned it: what is derived from
/// it was made while the lock was held from that call on (a guard local
/// released and locked again in a loop is a new acquisition).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ViewOf {
    pub guard: u32,
    /// The block whose terminator is the view call.
    pub view: BlockId,
}

/// How a value reached from a guard's data relates to it (like [`Flow`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GuardFlow {
    /// A pointer into it.
    Shared,
    /// A bit copy of memory in it.
    Read,
    /// A sharing clone of a handle in it.
    Clone,
}

/// What a value may hold: `None` is anything (`Top`).
pub type Set = Option<BTreeSet<Origin>>;

/// The origins of every local of one body.
pub struct Origins {
    /// By local; arguments start at their own flow.
    locals: Vec<Set>,
    /// What code may have written through pointers the body holds:
    /// reading through an owned pointer may yield it.
    written: Set,
    /// Which arguments are shared references (by index): what they borrow
    /// outlives the call.
    shared: Vec<bool>,
    /// Which arguments are mutable references: where their pointers point
    /// is known, what is stored there may be replaced by the body.
    mutref: Vec<bool>,
    /// For each local a sharing clone was made of, the blocks whose
    /// terminator a point that may take its value away reaches (absent:
    /// the local may hold several values).
    reached_by_kill: HashMap<u32, Vec<bool>>,
    /// Like `reached_by_kill`, for locals compared by an identity test,
    /// counting the local's own whole drops as no change: a drop that does
    /// drop something finds the value the test saw.
    unchanged_to: HashMap<u32, Vec<bool>>,
    /// The identity tests (`Arc::ptr_eq`) the body calls.
    identity_tests: Vec<IdentityTest>,
    /// The "both empty or one object" tests the body calls
    /// (`is_stacked_on`).
    pub(super) same_or_none_tests: Vec<super::same_or_none::Test>,
    /// The guards of locks the body holds, and the calls viewing their data.
    pub(super) guards: Guards,
    /// For each guard, the blocks whose terminator a point that may release
    /// it (a drop, a move, a mutable borrow for anything but viewing its
    /// data) reaches.
    pub(super) guard_kills: HashMap<u32, Vec<(BlockId, Vec<bool>)>>,
    /// For each view call's block, the blocks a way from its terminator
    /// reaches.
    after: HashMap<BlockId, Vec<bool>>,
    /// Mutable borrows of a local (the temporaries holding them) lent to a
    /// single call that stores into the local only pointers reached from
    /// what it holds (`Summary::stores_own`), and whose result holds no
    /// mutable pointer into the local itself: an iterator given to its
    /// `next`. The local keeps its origins, widened to what they reach.
    own_lends: BTreeSet<u32>,
    /// The call blocks of those lends, with the argument lent.
    own_lend_sites: HashMap<BlockId, Vec<usize>>,
    /// Where the body may write (mod/ref).
    pub writes: Writes,
}

/// How many locals' pointers `Origins::deref` and
/// `Origins::address_through` follow before taking the value as anything.
const MAX_POINTER_DEPTH: u32 = 16;

/// Rounds of the flow-insensitive scan before giving up (every local
/// `Top`): each round only grows the sets, so loops settle in a few.
const MAX_ROUNDS: usize = 32;

fn union(a: &mut Set, b: &Set) -> bool {
    match (a.as_mut(), b) {
        (None, _) => false,
        (Some(_), None) => {
            *a = None;
            true
        }
        (Some(x), Some(y)) => {
            let before = x.len();
            x.extend(y.iter().copied());
            x.len() != before
        }
    }
}

fn one(f: Flow) -> Set {
    Some(BTreeSet::from([Origin::Arg(f)]))
}

fn one_origin(o: Origin) -> Set {
    Some(BTreeSet::from([o]))
}

fn empty() -> Set {
    Some(BTreeSet::new())
}

/// Maps each origin of `s` with `f` (`Top` stays `Top`).
fn map(s: &Set, f: impl Fn(Origin) -> Set) -> Set {
    let mut out = empty();
    for &x in s.as_ref()? {
        union(&mut out, &f(x));
        out.as_ref()?;
    }
    out
}

impl Origins {
    pub fn compute(
        program: &program::Program,
        dump: &CrateDump,
        body: &Body,
        sites: &std::collections::HashMap<kmir::BlockId, Vec<Target>>,
        summary_of: &dyn Summaries,
    ) -> Origins {
        let guards = Guards::find(program, body, sites, summary_of);
        let writes = Writes::compute(dump, body, sites, summary_of, &guards);
        let guard_kills = guards
            .locals
            .iter()
            .map(|&g| {
                let kills = kill_points(body, g, false, &guards.view_borrows);
                let at: Vec<_> = kills
                    .killed_in
                    .iter()
                    .map(|&k| (k, reached_after(body, k)))
                    .collect();
                (g, at)
            })
            .collect();
        let after = guards
            .views
            .keys()
            .map(|&b| (b, reached_after(body, b)))
            .collect();
        let mut o = Origins {
            locals: vec![empty(); body.locals.len()],
            written: empty(),
            shared: vec![false; body.arg_count as usize],
            mutref: vec![false; body.arg_count as usize],
            reached_by_kill: HashMap::new(),
            unchanged_to: HashMap::new(),
            identity_tests: Vec::new(),
            same_or_none_tests: Vec::new(),
            guards,
            guard_kills,
            after,
            writes,
            own_lends: BTreeSet::new(),
            own_lend_sites: HashMap::new(),
        };
        o.find_own_lends(dump, body, sites, summary_of);
        for k in 1..=body.arg_count {
            let i = k as usize;
            let Some(l) = body.locals.get(i) else {
                continue;
            };
            let arg = k - 1;
            o.locals[i] = match dump.ty(l.ty).map(|t| &t.kind) {
                Some(TyKind::Ref { mutable: false, .. }) => {
                    o.shared[arg as usize] = true;
                    one(Flow::Shared(arg, FieldPath::AT))
                }
                // Where a `&mut` argument points is known; what is stored
                // there may be replaced by the body and anyone it lends the
                // pointer to: reading through it yields that too, and a
                // clone of what it holds is never backed by the borrow.
                Some(TyKind::Ref { mutable: true, .. }) => {
                    o.mutref[arg as usize] = true;
                    one(Flow::Shared(arg, FieldPath::AT))
                }
                _ => one(Flow::Own(arg)),
            };
        }
        o.scan_pointer_writes(dump, body, sites, summary_of);
        let round_cost = super::writes::body_size(body);
        for round in 0.. {
            let within = bounds::step(round_cost);
            if round == MAX_ROUNDS || !within {
                if within {
                    bounds::hit(bounds::Bound::Rounds);
                }
                o.locals.iter_mut().for_each(|l| *l = None);
                o.written = None;
                break;
            }
            if !o.round(dump, body, sites, summary_of) {
                break;
            }
        }
        let cloned: BTreeSet<u32> = o
            .locals
            .iter()
            .flatten()
            .flatten()
            .filter_map(|x| match x {
                Origin::CloneLocal(l) => Some(*l),
                _ => None,
            })
            .collect();
        o.reached_by_kill = kill_reach(body, &cloned, false, &BTreeSet::new());
        o.identity_tests = identity_tests(body, sites, summary_of);
        o.same_or_none_tests = super::same_or_none::find(body, sites, summary_of);
        let compared: BTreeSet<u32> = o
            .identity_tests
            .iter()
            .flat_map(|t| [&t.sides.0, &t.sides.1])
            .filter_map(
                |op| match o.operand(dump, op)?.into_iter().collect::<Vec<_>>()[..] {
                    [Origin::Local(l)] => Some(l),
                    _ => None,
                },
            )
            .collect();
        o.unchanged_to = kill_reach(body, &compared, true, &BTreeSet::new());
        o.forget_written_backers(dump, body);
        o
    }

    /// A backer the body itself may change through a pointer (unsafe code
    /// writing through a raw pointer read out of borrowed memory, or
    /// through a pointer to a local it only borrowed shared) keeps nothing
    /// alive: what it held may be gone before the clone is dropped. A
    /// write through a `&mut` cannot reach memory behind a live shared
    /// borrow, so only raw pointers (written through, or given to a call as
    /// `*mut`) and `&mut` made through a pointer count.
    fn forget_written_backers(&mut self, dump: &CrateDump, body: &Body) {
        let mut hit: Vec<Set> = Vec::new();
        let pointer_of = |place: &Place| -> Option<Place> {
            let last = place
                .projection
                .iter()
                .rposition(|p| *p == Projection::Deref)?;
            Some(Place {
                local: place.local,
                projection: place.projection[..last].into(),
            })
        };
        let raw = |p: &Place| {
            dump.place_ty(body, p)
                .and_then(|t| dump.ty(t))
                .is_none_or(|t| matches!(t.kind, TyKind::RawPtr { .. }))
        };
        for b in &body.blocks {
            for st in &b.statements {
                let StatementKind::Assign { place, rvalue } = &st.kind else {
                    continue;
                };
                if let Some(ptr) = pointer_of(place)
                    && raw(&ptr)
                {
                    hit.push(self.place(dump, &ptr));
                }
                if let Rvalue::Ref {
                    mutable: true,
                    place,
                }
                | Rvalue::AddressOf {
                    mutable: true,
                    place,
                } = &**rvalue
                    && let Some(ptr) = pointer_of(place)
                {
                    let through = self.place(dump, &ptr);
                    if raw(&ptr) {
                        hit.push(through);
                    } else if let Some(t) = through {
                        // A `&mut` made through a reference: only one read
                        // out of borrowed memory is a concern (a `&mut`
                        // cannot otherwise reach it).
                        hit.push(Some(t));
                    }
                }
            }
            if let TerminatorKind::Call { args, .. } = &b.terminator.kind {
                for a in args {
                    if let Operand::Copy(p) | Operand::Move(p) = a
                        && dump
                            .place_ty(body, p)
                            .and_then(|t| dump.ty(t))
                            .is_some_and(|t| matches!(t.kind, TyKind::RawPtr { mutable: true, .. }))
                    {
                        hit.push(self.place(dump, p));
                    }
                }
            }
        }
        // A pointer of unknown origin (what an `UnsafeCell` or a C function
        // gave) is not taken to point into a backer: the scan follows every
        // way Rust code makes a pointer to borrowed memory (`&raw`, casts,
        // the summaries' `ret_from`), and what an `UnsafeCell` holds is
        // never a backer.
        for h in hit.into_iter().flatten() {
            for o in h {
                match o {
                    Origin::Arg(Flow::Shared(k, _) | Flow::Read(k, _) | Flow::Clone(k, _)) => {
                        if let Some(s) = self.shared.get_mut(k as usize) {
                            *s = false;
                        }
                    }
                    // The write analysis sees these writes too.
                    Origin::Guard(..) => {}
                    Origin::Local(l) | Origin::CloneLocal(l) => {
                        self.reached_by_kill.remove(&l);
                        self.unchanged_to.remove(&l);
                    }
                    Origin::Arg(Flow::Own(_)) => {}
                }
            }
        }
    }

    /// The mutable borrows of locals lent to a call that stores into them
    /// only what they reach (see `own_lends`).
    fn find_own_lends(
        &mut self,
        dump: &CrateDump,
        body: &Body,
        sites: &std::collections::HashMap<BlockId, Vec<Target>>,
        summary_of: &dyn Summaries,
    ) {
        for b in &body.blocks {
            for st in &b.statements {
                let StatementKind::Assign {
                    place: dest,
                    rvalue,
                } = &st.kind
                else {
                    continue;
                };
                let Rvalue::Ref {
                    mutable: true,
                    place,
                } = &**rvalue
                else {
                    continue;
                };
                if !dest.projection.is_empty() || place.projection.contains(&Projection::Deref) {
                    continue;
                }
                let Some((block, arg)) = lent_to_one_call(body, dest.local) else {
                    continue;
                };
                let Some(TerminatorKind::Call { destination, .. }) =
                    body.blocks.get(block as usize).map(|b| &b.terminator.kind)
                else {
                    continue;
                };
                // A mutable pointer the call returns must not lead into the
                // local itself (through it the caller could change what
                // the local holds): its summary says it goes through a
                // pointer the local holds (`IterMut::next`).
                let result_mut = body
                    .local(destination.local)
                    .and_then(|l| dump.ty(l.ty))
                    .is_none_or(|t| t.display.contains("&mut") || t.display.contains("*mut"));
                let k = arg as u32;
                let own = sites.get(&block).is_some_and(|ts| {
                    !ts.is_empty()
                        && ts.iter().all(|t| {
                            let s = summary_of.get(t.callee);
                            s.writes.is_some()
                                && s.stores_own.contains(&k)
                                && (!result_mut || returns_through_pointer(s, k))
                        })
                });
                if own {
                    self.own_lends.insert(dest.local);
                    self.own_lend_sites.entry(block).or_default().push(arg);
                }
            }
        }
    }

    /// What the body writes through pointers by other means than an
    /// assignment: a `&mut` or `*mut` given to a call, a mutable borrow of
    /// memory behind a pointer, an intrinsic or inline assembly.
    fn scan_pointer_writes(
        &mut self,
        dump: &CrateDump,
        body: &Body,
        sites: &std::collections::HashMap<BlockId, Vec<Target>>,
        summary_of: &dyn Summaries,
    ) {
        let contained = contained_pointers(dump, body);
        let mutable_ptr = |ty: Option<TyId>| {
            ty.and_then(|t| dump.ty(t)).is_none_or(|t| {
                matches!(
                    t.kind,
                    TyKind::Ref { mutable: true, .. } | TyKind::RawPtr { mutable: true, .. }
                )
            })
        };
        for (bi, b) in body.blocks.iter().enumerate() {
            for s in &b.statements {
                match &s.kind {
                    StatementKind::Intrinsic { name, .. } if name.as_str() != "assume" => {
                        self.written = None;
                    }
                    StatementKind::Assign {
                        place: dest,
                        rvalue,
                    } => match &**rvalue {
                        // A mutable borrow used only in ways the scan sees
                        // (`contained_pointers`) stores nothing unknown.
                        Rvalue::Ref {
                            mutable: true,
                            place,
                        }
                        | Rvalue::AddressOf {
                            mutable: true,
                            place,
                        } if place.projection.contains(&Projection::Deref)
                            && !(dest.projection.is_empty()
                                && contained
                                    .get(dest.local as usize)
                                    .copied()
                                    .unwrap_or(false)) =>
                        {
                            self.written = None;
                        }
                        _ => {}
                    },
                    _ => {}
                }
            }
            match &b.terminator.kind {
                TerminatorKind::Call { args, .. } => {
                    let lends_mut = args.iter().any(|a| match a {
                        Operand::Copy(p) | Operand::Move(p) => mutable_ptr(dump.place_ty(body, p)),
                        _ => false,
                    });
                    // A callee whose write summary says it writes nothing
                    // its arguments reach, outside cells (what a cell holds
                    // is never followed), stores nothing through them.
                    let writes_nothing = sites.get(&(bi as BlockId)).is_some_and(|ts| {
                        !ts.is_empty()
                            && ts.iter().all(|t| {
                                summary_of
                                    .get(t.callee)
                                    .writes
                                    .as_ref()
                                    .is_some_and(|w| w.iter().all(|(_, p)| p.interior()))
                            })
                    });
                    // Or writes only into locals lent to it to be moved
                    // along what they reach (their origins are widened).
                    let own = self.own_lend_sites.get(&(bi as BlockId));
                    let writes_own = own.is_some_and(|own| {
                        sites.get(&(bi as BlockId)).is_some_and(|ts| {
                            !ts.is_empty()
                                && ts.iter().all(|t| {
                                    summary_of.get(t.callee).writes.as_ref().is_some_and(|w| {
                                        w.iter().all(|(k, p)| {
                                            p.interior() || own.contains(&(*k as usize))
                                        })
                                    })
                                })
                        })
                    });
                    if lends_mut && !writes_nothing && !writes_own {
                        self.written = None;
                    }
                }
                TerminatorKind::InlineAsm { .. } => self.written = None,
                _ => {}
            }
        }
    }

    /// One pass over every assignment and call; whether anything grew.
    fn round(
        &mut self,
        dump: &CrateDump,
        body: &Body,
        sites: &std::collections::HashMap<kmir::BlockId, Vec<Target>>,
        summary_of: &dyn Summaries,
    ) -> bool {
        let mut changed = false;
        for (bi, b) in body.blocks.iter().enumerate() {
            for s in &b.statements {
                if let StatementKind::Assign { place, rvalue } = &s.kind {
                    changed |= self.borrow_effects(dump, body, place, rvalue);
                    let v = match &**rvalue {
                        // A borrow lent to a call that moves the local along
                        // what it reaches: the local's place.
                        Rvalue::Ref { place: q, .. }
                            if place.projection.is_empty()
                                && self.own_lends.contains(&place.local)
                                && q.projection.is_empty() =>
                        {
                            one_origin(Origin::Local(q.local))
                        }
                        _ => self.rvalue(dump, body, rvalue),
                    };
                    changed |= self.write(place, &v);
                }
            }
            if let TerminatorKind::Call {
                args, destination, ..
            } = &b.terminator.kind
            {
                let v = match sites.get(&(bi as kmir::BlockId)) {
                    _ if self.guards.views.contains_key(&(bi as BlockId)) => {
                        let g = ViewOf {
                            guard: self.guards.views[&(bi as BlockId)],
                            view: bi as BlockId,
                        };
                        one_origin(Origin::Guard(GuardFlow::Shared, g, FieldPath::AT))
                    }
                    Some(ts) if !ts.is_empty() => {
                        let mut v = empty();
                        for t in ts {
                            union(&mut v, &self.call_result(dump, args, t, summary_of));
                        }
                        v
                    }
                    _ => None,
                };
                changed |= self.write(destination, &v);
            }
        }
        changed
    }

    /// Borrowing a local lets whoever gets the pointer change it: a
    /// mutable one, or a shared one of a type with interior mutability
    /// held in place.
    fn borrow_effects(
        &mut self,
        dump: &CrateDump,
        body: &Body,
        dest: &Place,
        rvalue: &Rvalue,
    ) -> bool {
        let (Rvalue::Ref { mutable, place } | Rvalue::AddressOf { mutable, place }) = rvalue else {
            return false;
        };
        if place.projection.contains(&Projection::Deref) {
            return false;
        }
        // Lent to a call that moves it along what it already reaches.
        if dest.projection.is_empty() && self.own_lends.contains(&dest.local) {
            let widened = self.local(place.local).and_then(|s| {
                let mut out = BTreeSet::new();
                for o in &s {
                    match *o {
                        Origin::Arg(Flow::Shared(k, p) | Flow::Read(k, p) | Flow::Clone(k, p)) => {
                            let p = p.below();
                            out.insert(*o);
                            out.insert(Origin::Arg(Flow::Shared(k, p)));
                            out.insert(Origin::Arg(Flow::Read(k, p)));
                            out.insert(Origin::Arg(Flow::Clone(k, p)));
                        }
                        Origin::Guard(_, g, p) => {
                            let p = p.below();
                            out.insert(*o);
                            out.insert(Origin::Guard(GuardFlow::Shared, g, p));
                            out.insert(Origin::Guard(GuardFlow::Read, g, p));
                            out.insert(Origin::Guard(GuardFlow::Clone, g, p));
                        }
                        // What a local or an owned argument reaches is not
                        // described by a path.
                        Origin::Arg(Flow::Own(_)) | Origin::Local(_) | Origin::CloneLocal(_) => {
                            return None;
                        }
                    }
                }
                Some(out)
            });
            let l = &mut self.locals[place.local as usize];
            let before = l.clone();
            *l = widened;
            return *l != before;
        }
        let changes = *mutable
            || dump
                .place_ty(body, place)
                .is_none_or(|t| inline_interior(dump, t));
        if !changes {
            return false;
        }
        let l = &mut self.locals[place.local as usize];
        let grew = l.is_some();
        *l = None;
        grew
    }

    fn write(&mut self, place: &Place, v: &Set) -> bool {
        if place.projection.contains(&Projection::Deref) {
            union(&mut self.written, &inexact(v))
        } else if !place.projection.is_empty() {
            // Part of a local: the whole no longer is one place's value.
            match self.locals.get_mut(place.local as usize) {
                Some(l) => union(l, &inexact(v)),
                None => false,
            }
        } else {
            match self.locals.get_mut(place.local as usize) {
                Some(l) => union(l, v),
                None => false,
            }
        }
    }

    /// What a value read at `place` holds.
    pub fn place(&self, dump: &CrateDump, place: &Place) -> Set {
        let mut v = self.locals.get(place.local as usize).cloned().flatten();
        // A field of a value read from memory is read from the field's
        // place; a field of a local's value is somewhere below where the
        // value came from (a local may hold an aggregate of several).
        let mut read = false;
        for p in place.projection.iter() {
            match p {
                Projection::Deref => {
                    v = self.deref(&v);
                    read = true;
                }
                Projection::Field { ty, .. } if is_unsafe_cell(dump, *ty) => return None,
                Projection::Field { index, .. } if read => v = narrow(&v, |p| p.field(*index)),
                Projection::Downcast { variant } if read => v = narrow(&v, |p| p.variant(*variant)),
                Projection::Field { .. } | Projection::Downcast { .. } => v = inexact(&v),
                Projection::Index(_)
                | Projection::ConstantIndex { .. }
                | Projection::Subslice { .. } => v = narrow(&v, FieldPath::below),
                _ => {}
            }
        }
        v
    }

    /// What reading through a pointer holding `v` yields.
    fn deref(&self, v: &Set) -> Set {
        self.deref_at(v, 0)
    }

    /// [`Origins::deref`], `depth` locals' pointers deep: a local may hold
    /// a clone of what it holds itself (a loop), so the walk is bounded,
    /// and past the bound the value is anything.
    fn deref_at(&self, v: &Set, depth: u32) -> Set {
        if depth > MAX_POINTER_DEPTH {
            return None;
        }
        map(v, |o| match o {
            // The value stored at the place the pointer designates.
            Origin::Arg(Flow::Shared(k, p)) if self.is_mutref(k) => {
                self.with_written(Origin::Arg(Flow::Read(k, p)))
            }
            Origin::Arg(Flow::Read(k, p) | Flow::Clone(k, p)) if self.is_mutref(k) => {
                self.with_written(Origin::Arg(Flow::Read(k, p.pointed())))
            }
            Origin::Arg(Flow::Shared(k, p)) => one(Flow::Read(k, p)),
            Origin::Arg(Flow::Read(k, p) | Flow::Clone(k, p)) => one(Flow::Read(k, p.pointed())),
            Origin::Arg(Flow::Own(_)) => self.with_written(o),
            Origin::Guard(GuardFlow::Shared, g, p) => {
                one_origin(Origin::Guard(GuardFlow::Read, g, p))
            }
            Origin::Guard(_, g, p) => one_origin(Origin::Guard(GuardFlow::Read, g, p.below())),
            // Through a borrow of a local: what the local holds.
            Origin::Local(l) => self.local(l),
            // Through a clone of what a local holds: what the local's
            // pointers reach.
            Origin::CloneLocal(l) => self.deref_at(&self.local(l), depth + 1),
        })
    }

    /// A pointer to data reached through a pointer holding `v`, at `path`
    /// below what it points to.
    fn address_through(&self, v: &Set, path: FieldPath) -> Set {
        self.address_through_at(v, path, 0)
    }

    /// [`Origins::address_through`], bounded like [`Origins::deref_at`].
    fn address_through_at(&self, v: &Set, path: FieldPath, depth: u32) -> Set {
        if depth > MAX_POINTER_DEPTH {
            return None;
        }
        map(v, |o| match o {
            Origin::Arg(Flow::Shared(k, p)) => one(Flow::Shared(k, p.then(path))),
            // The pointer was read out of memory (or is a handle held
            // there): what it points to is reached through it.
            Origin::Arg(Flow::Read(k, p) | Flow::Clone(k, p)) => one(Flow::Shared(k, p.pointed())),
            Origin::Arg(Flow::Own(_)) => self.with_written(o),
            Origin::Guard(GuardFlow::Shared, g, p) => {
                one_origin(Origin::Guard(GuardFlow::Shared, g, p.then(path)))
            }
            Origin::Guard(_, g, p) => one_origin(Origin::Guard(GuardFlow::Shared, g, p.below())),
            // Through a pointer the local holds, not into the local: where
            // its pointers lead, when they lead into what arguments or
            // guards' data reach (a path below one covers any depth).
            Origin::Local(l) if path.through_pointer() => {
                let held = self.local(l)?;
                if !held
                    .iter()
                    .all(|o| matches!(o, Origin::Arg(_) | Origin::Guard(..)))
                {
                    return None;
                }
                self.address_through_at(&Some(held), FieldPath::BELOW, depth + 1)
            }
            Origin::Local(_) => one_origin(o),
            Origin::CloneLocal(l) => {
                let held = self.deref_at(&self.local(l), depth + 1);
                self.address_through_at(&held, FieldPath::BELOW, depth + 1)
            }
        })
    }

    /// A sharing clone of what a reference holding `v` points to: of what
    /// an argument holds or borrows, whatever the path to it, or of what a
    /// local holds.
    fn clone_through(&self, v: &Set) -> Set {
        map(v, |o| match o {
            Origin::Arg(f) => self.clone_of_arg(f),
            Origin::Guard(_, g, p) => one_origin(Origin::Guard(GuardFlow::Clone, g, p.below())),
            Origin::Local(l) | Origin::CloneLocal(l) => one_origin(Origin::CloneLocal(l)),
        })
    }

    /// A sharing clone of what a value flowing from an argument reaches.
    fn clone_of_arg(&self, f: Flow) -> Set {
        match f {
            Flow::Shared(k, p) | Flow::Read(k, p) | Flow::Clone(k, p) if self.is_mutref(k) => {
                self.with_written(Origin::Arg(Flow::Clone(k, p.below())))
            }
            Flow::Shared(k, p) | Flow::Read(k, p) | Flow::Clone(k, p) => {
                one(Flow::Clone(k, p.below()))
            }
            Flow::Own(k) => self.with_written(Origin::Arg(Flow::Clone(k, FieldPath::BELOW))),
        }
    }

    /// `o`, or whatever the body wrote through pointers.
    fn with_written(&self, o: Origin) -> Set {
        let mut s = one_origin(o);
        union(&mut s, &self.written);
        s
    }

    fn local(&self, l: u32) -> Set {
        self.locals.get(l as usize).cloned().flatten()
    }

    /// What a clone of what local `l` holds is, once `l` may be gone: a
    /// sharing clone of what `l` holds.
    fn unrooted(&self, l: u32, depth: u32) -> Set {
        if depth > 4 {
            return None;
        }
        map(&self.local(l), |o| match o {
            Origin::Arg(f) => self.clone_of_arg(f),
            Origin::Guard(_, g, p) => one_origin(Origin::Guard(GuardFlow::Clone, g, p.below())),
            Origin::Local(_) => None,
            Origin::CloneLocal(m) => self.unrooted(m, depth + 1),
        })
    }

    pub(super) fn operand(&self, dump: &CrateDump, op: &Operand) -> Set {
        match op {
            Operand::Copy(p) | Operand::Move(p) => self.place(dump, p),
            // A raw pointer constant may be a `static mut`'s address.
            Operand::Constant(c) => match dump.ty(c.ty).map(|t| &t.kind) {
                // A constant pointer that refers to no static (null, or
                // `NonNull::dangling`) points into nothing the program owns.
                Some(TyKind::RawPtr { .. })
                    if match &c.value {
                        kmir::ConstValue::Scalar(0) => true,
                        kmir::ConstValue::Memory(m) => m.statics.is_empty(),
                        _ => false,
                    } =>
                {
                    empty()
                }
                Some(TyKind::RawPtr { .. }) | None => None,
                _ => empty(),
            },
            Operand::RuntimeChecks(_) => empty(),
        }
    }

    fn rvalue(&self, dump: &CrateDump, body: &Body, rvalue: &Rvalue) -> Set {
        match rvalue {
            Rvalue::Use(op) | Rvalue::Repeat { operand: op, .. } => self.operand(dump, op),
            Rvalue::CopyForDeref(p) => self.place(dump, p),
            Rvalue::Ref { mutable, place } | Rvalue::AddressOf { mutable, place } => {
                // A mutable borrow of a local lets the borrower replace what
                // it holds (`borrow_effects`); one of memory behind a pointer
                // designates that memory, whose writes the write analysis
                // sees (and `forget_written_backers`, for raw pointers).
                if *mutable && !place.projection.contains(&Projection::Deref) {
                    return None;
                }
                self.address(dump, place)
            }
            Rvalue::Aggregate { kind, operands } => {
                if matches!(kind, AggregateKind::Coroutine { .. }) {
                    return None;
                }
                let mut v = empty();
                for op in operands {
                    // A number in the aggregate (a key beside the handle)
                    // holds no reference.
                    if scalar_operand(dump, body, op) {
                        continue;
                    }
                    union(&mut v, &inexact(&self.operand(dump, op)));
                }
                v
            }
            Rvalue::BinaryOp {
                op: BinOp::Offset,
                lhs,
                ..
            } => self.operand(dump, lhs),
            Rvalue::BinaryOp { .. }
            | Rvalue::CheckedBinaryOp { .. }
            | Rvalue::UnaryOp { .. }
            | Rvalue::Discriminant(_)
            | Rvalue::Len(_) => empty(),
            Rvalue::Cast { kind, operand, ty } => {
                if let CastKind::Other(name) = kind
                    && name.contains("Exposed")
                {
                    return None;
                }
                let from = operand_ty(dump, body, operand);
                // `UnsafeCell::get`: a pointer to what may change.
                if from
                    .and_then(|t| dump.pointee(t))
                    .is_none_or(|p| is_unsafe_cell(dump, p))
                    && from.is_some_and(|t| is_pointer(dump, t))
                {
                    return None;
                }
                // A cast may change the type the fields are counted in.
                let v = inexact(&self.operand(dump, operand));
                // A pointer made from what holds no pointer (an integer).
                if v.as_ref().is_some_and(BTreeSet::is_empty)
                    && is_pointer(dump, *ty)
                    && !from.is_some_and(|t| is_pointer(dump, t))
                {
                    return None;
                }
                v
            }
            Rvalue::ThreadLocalRef { .. } => None,
        }
    }

    /// The address of `place` (a shared borrow).
    fn address(&self, dump: &CrateDump, place: &Place) -> Set {
        let Some(last) = place
            .projection
            .iter()
            .rposition(|p| *p == Projection::Deref)
        else {
            // A borrow of a local: reading through it yields the local.
            return one_origin(Origin::Local(place.local));
        };
        let pointer = Place {
            local: place.local,
            projection: place.projection[..last].into(),
        };
        let mut path = FieldPath::AT;
        for p in &place.projection[last + 1..] {
            path = match p {
                Projection::Field { ty, .. } if is_unsafe_cell(dump, *ty) => return None,
                Projection::Field { index, .. } => path.field(*index),
                Projection::Downcast { variant } => path.variant(*variant),
                Projection::Index(_)
                | Projection::ConstantIndex { .. }
                | Projection::Subslice { .. } => path.below(),
                _ => path,
            };
        }
        let v = self.place(dump, &pointer);
        self.address_through(&v, path)
    }

    /// What a call's result holds, by one target's summary.
    fn call_result(
        &self,
        dump: &CrateDump,
        args: &[Operand],
        t: &Target,
        summary_of: &dyn Summaries,
    ) -> Set {
        let summary = summary_of.get(t.callee);
        let arg = |k: u32| match args.get(k as usize) {
            Some(a) => self.operand(dump, a),
            None => None,
        };
        if summary.sharing_clone {
            return self.clone_through(&arg(0));
        }
        let from = summary.ret_from.as_ref()?;
        let mut v = empty();
        for f in from {
            let part = match *f {
                Flow::Own(k) => arg(k),
                Flow::Shared(k, p) => self.address_through(&arg(k), p),
                Flow::Read(k, p) => narrow(&self.deref(&arg(k)), |q| q.then(p)),
                Flow::Clone(k, p) => self.clone_through(&self.address_through(&arg(k), p)),
            };
            union(&mut v, &part);
            v.as_ref()?;
        }
        v
    }

    /// What the values given to a call as arguments `ks` hold.
    pub fn args(&self, dump: &CrateDump, args: &[Operand], ks: &[u32]) -> Set {
        let mut v = empty();
        for &k in ks {
            let a = match args.get(k as usize) {
                Some(a) => self.operand(dump, a),
                None => None,
            };
            union(&mut v, &a);
            v.as_ref()?;
        }
        v
    }

    /// Where the returned value comes from, for the summary: in terms of
    /// the arguments only (a clone of a local's value is a clone of what
    /// the local holds; a borrow of a local cannot be described).
    pub fn returned(&self) -> Option<Vec<Flow>> {
        let mut out = BTreeSet::new();
        for o in self.local(0)? {
            match o {
                Origin::Arg(f) => {
                    out.insert(f);
                }
                Origin::Local(_) | Origin::Guard(..) => return None,
                Origin::CloneLocal(l) => {
                    for o in self.unrooted(l, 0)? {
                        match o {
                            Origin::Arg(f) => {
                                out.insert(f);
                            }
                            _ => return None,
                        }
                    }
                }
            }
        }
        Some(out.into_iter().collect())
    }
}

impl Origins {
    /// What a set of origins says, for `--trace`.
    pub fn describe(&self, v: &Set) -> String {
        let Some(s) = v else {
            return "anything".to_string();
        };
        let parts: Vec<String> = s
            .iter()
            .map(|o| match o {
                Origin::Arg(f) => f.describe(),
                Origin::Guard(k, g, p) => {
                    let how = match k {
                        GuardFlow::Shared => "a borrow of",
                        GuardFlow::Read => "a bit copy of",
                        GuardFlow::Clone => "a sharing clone of",
                    };
                    let v = *g;
                    let g = v.guard;
                    let held = if self.guards.locals.contains(&g) {
                        ""
                    } else {
                        " (not a guard)"
                    };
                    let written = if self.writes.may_write(Root::Guard(g), p) {
                        ", written by the body"
                    } else {
                        ""
                    };
                    format!(
                        "{how} what guard `_{g}`{held} gives access to at bb{} (below `(*_{g}){}`{written})",
                        v.view,
                        p.describe()
                    )
                }
                Origin::Local(l) => format!("a borrow of `_{l}`"),
                Origin::CloneLocal(l) => format!("a sharing clone of what `_{l}` holds"),
            })
            .collect();
        format!("[{}]", parts.join("; "))
    }

    /// The guards and their views, for `--trace`.
    pub fn describe_guards(&self) -> String {
        let mut views: Vec<_> = self.guards.views.iter().collect();
        views.sort();
        let writes: Vec<String> = self
            .guards
            .locals
            .iter()
            .map(|&g| format!("_{g}: [{}]", self.writes.describe(Root::Guard(g))))
            .collect();
        let args: Vec<String> = (0..self.shared.len() as u32)
            .map(|k| format!("arg{k}: [{}]", self.writes.describe(Root::Arg(k))))
            .collect();
        format!(
            "guards {:?}, views (block, guard) {:?}, writes {}; writes {}; pointers {}",
            self.guards.locals,
            views,
            writes.join(", "),
            args.join(", "),
            self.writes.describe_targets()
        )
    }

    /// The guards of locks the body holds, and the calls viewing their data.
    pub fn guards(&self) -> &Guards {
        &self.guards
    }

    /// What local `l` may hold, for `--trace`.
    pub fn local_origins(&self, l: u32) -> Set {
        self.local(l)
    }

    pub(super) fn is_mutref(&self, k: u32) -> bool {
        self.mutref.get(k as usize).copied().unwrap_or(false)
    }

    pub(super) fn is_shared(&self, k: u32) -> bool {
        self.shared.get(k as usize).copied().unwrap_or(false)
    }

    /// A value released at the terminator of `block` holding only sharing
    /// clones of what shared-reference arguments borrow, or of what locals
    /// surely still hold there (or nothing at all), cannot release a last
    /// reference: the borrowed memory outlives the call, the local's
    /// reference outlives the release.
    pub fn backed(&self, v: &Set, block: BlockId) -> bool {
        v.as_ref().is_some_and(|s| {
            s.iter().all(|o| match *o {
                Origin::Arg(Flow::Clone(k, _)) => self.is_shared(k),
                Origin::Guard(GuardFlow::Clone, g, p) => self.guard_backs(g, &p, block),
                Origin::CloneLocal(l) => {
                    self.alive_at(l, block) || self.backed(&self.unrooted(l, 0), block)
                }
                _ => false,
            })
        })
    }

    /// The owned arguments a value released at the terminator of `block`
    /// comes from (what they hold, or sharing clones of what they reach),
    /// or `None` when it comes from anything else: the function is then
    /// expected to be able to drop a last reference whatever it is given.
    pub fn attributed(&self, v: &Set, block: BlockId) -> Option<BTreeSet<u32>> {
        let mut out = BTreeSet::new();
        for o in v.as_ref()? {
            match *o {
                // What a `&mut` argument points to may have been replaced:
                // nothing says whose count it is.
                Origin::Arg(Flow::Shared(k, _) | Flow::Read(k, _) | Flow::Clone(k, _))
                    if self.is_mutref(k) =>
                {
                    return None;
                }
                Origin::Arg(Flow::Clone(k, _)) if self.is_shared(k) => {}
                Origin::Arg(Flow::Own(k) | Flow::Clone(k, _)) => {
                    out.insert(k);
                }
                Origin::Guard(GuardFlow::Clone, g, p) if self.guard_backs(g, &p, block) => {}
                Origin::CloneLocal(l) if self.alive_at(l, block) => {}
                Origin::CloneLocal(l) => {
                    out.extend(self.attributed(&self.unrooted(l, 0), block)?);
                }
                // A bit copy of what a borrowed value holds, released
                // here, or a pointer to it: nothing says whose count
                // that is.
                Origin::Arg(Flow::Shared(..) | Flow::Read(..))
                | Origin::Guard(..)
                | Origin::Local(_) => return None,
            }
        }
        Some(out)
    }

    /// Whether local `l` surely still holds the value it was given when
    /// the terminator of `block` runs: it is given one value at most (an
    /// argument, or one assignment), and no point that may take it away
    /// (a move out of it, a drop, a mutable borrow, a write into it, the
    /// end of its storage) reaches that terminator.
    fn alive_at(&self, l: u32, block: BlockId) -> bool {
        self.reached_by_kill
            .get(&l)
            .is_some_and(|r| r.get(block as usize).is_some_and(|reached| !reached))
    }

    /// Whether a sharing clone of a handle found at or below `path` in the
    /// data of guard `g` cannot be the last reference when released at the
    /// terminator of `block`: `g` is a guard (it holds its lock, so no other
    /// thread changes the data), nothing that may release it reaches that
    /// terminator, and nothing in the body, its callees included, writes at,
    /// below or above `path` in the data. The handle the clone was taken from
    /// is then still there, holding its own count.
    fn guard_backs(&self, v: ViewOf, path: &FieldPath, block: BlockId) -> bool {
        self.guards.locals.contains(&v.guard)
            && !self.released_between(v, block)
            && !self
                .writes
                .may_write_before(Root::Guard(v.guard), path, block)
    }

    /// A value released at the terminator of `block` whose object a
    /// sharing clone of it keeps alive there, the clone having been put into
    /// a container in a held lock's data by a call the spec says keeps its
    /// argument (`keeps_arg`: `inner.nodes.insert(RBTreeNode::new(key,
    /// node.clone()))`, then `node` handed to a helper that may drop it).
    /// Checked on the body: each released local holds, through moves only,
    /// the value of a local given one value; the keeping call is given
    /// sharing clones of that value only, and a pointer into the data of a
    /// guard that holds its lock from its view to the release; every way to
    /// the release passes the call; and nothing writes at, above or below
    /// that place in the data once the call has run.
    pub fn kept_clone_backs(
        &self,
        body: &Body,
        sites: &std::collections::HashMap<BlockId, Vec<Target>>,
        summary_of: &dyn Summaries,
        block: BlockId,
        terminator: &TerminatorKind,
        last_from: Option<&[u32]>,
    ) -> bool {
        let Some(released) = released_locals(terminator, last_from) else {
            return false;
        };
        released.iter().all(|&r| {
            let Some(x) = moved_from(body, r) else {
                return false;
            };
            self.kept_by_a_container(body, sites, summary_of, block, x)
        })
    }

    /// Whether a call that keeps its argument in a held lock's data was
    /// given sharing clones of what local `x` holds, and keeps them there
    /// up to the terminator of `block` (see `kept_clone_backs`).
    fn kept_by_a_container(
        &self,
        body: &Body,
        sites: &std::collections::HashMap<BlockId, Vec<Target>>,
        summary_of: &dyn Summaries,
        block: BlockId,
        x: u32,
    ) -> bool {
        body.blocks.iter().enumerate().any(|(c, b)| {
            let c = c as BlockId;
            let TerminatorKind::Call { args, .. } = &b.terminator.kind else {
                return false;
            };
            let ts = sites.get(&c).map_or(&[][..], Vec::as_slice);
            let Some(j) = ts.first().and_then(|t| summary_of.get(t.callee).keeps_arg) else {
                return false;
            };
            if !ts
                .iter()
                .all(|t| summary_of.get(t.callee).keeps_arg == Some(j))
            {
                return false;
            }
            let clones_of_x = args
                .get(j as usize)
                .and_then(|a| self.operand_set(a))
                .is_some_and(|s| !s.is_empty() && s.iter().all(|o| *o == Origin::CloneLocal(x)));
            let into = args.first().and_then(|a| self.operand_set(a));
            clones_of_x
                && into.is_some_and(|s| {
                    !s.is_empty()
                        && s.iter().all(|o| match *o {
                            Origin::Guard(GuardFlow::Shared, v, p) => {
                                self.guards.locals.contains(&v.guard)
                                    && !self.released_between(v, block)
                                    && !self.writes.may_write_between(
                                        Root::Guard(v.guard),
                                        &p,
                                        c,
                                        block,
                                    )
                            }
                            _ => false,
                        })
                })
                && dominates(body, c, block)
        })
    }

    /// Whether every value local `y` may hold is a sharing clone of what
    /// local `x` holds.
    pub fn holds_only_clones_of(&self, y: u32, x: u32) -> bool {
        self.locals
            .get(y as usize)
            .cloned()
            .flatten()
            .is_some_and(|s| !s.is_empty() && s.iter().all(|o| *o == Origin::CloneLocal(x)))
    }

    /// What an operand holds, when the scan knows (`None`: anything).
    fn operand_set(&self, op: &Operand) -> Option<BTreeSet<Origin>> {
        match op {
            Operand::Copy(p) | Operand::Move(p) if p.projection.is_empty() => {
                self.locals.get(p.local as usize).cloned().flatten()
            }
            _ => None,
        }
    }

    /// Like [`Origins::released_between`], from the terminator of block
    /// `from` rather than a view call.
    pub(super) fn guard_released_between(
        &self,
        body: &Body,
        g: u32,
        from: BlockId,
        block: BlockId,
    ) -> bool {
        let Some(kills) = self.guard_kills.get(&g) else {
            return true;
        };
        let after_from = reached_after(body, from);
        kills.iter().any(|&(k, ref after_kill)| {
            after_from.get(k as usize).copied().unwrap_or(true)
                && (k == block || after_kill.get(block as usize).copied().unwrap_or(true))
        })
    }

    /// Whether a point that may release guard `v.guard` (a drop, a move, a
    /// mutable borrow for anything but a view) lies on a way from the view
    /// call to the terminator of `block`, that terminator included. If not,
    /// the guard holds the lock it held at the view all the way, whatever
    /// happens to it elsewhere (released and locked again in a loop).
    /// The blocks that may release or move guard local `g` (`None`: `g`
    /// is not a guard local).
    pub(crate) fn guard_kill_blocks(&self, g: u32) -> Option<Vec<BlockId>> {
        if !self.guards.locals.contains(&g) {
            return None;
        }
        Some(
            self.guard_kills
                .get(&g)
                .map(|k| k.iter().map(|&(b, _)| b).collect())
                .unwrap_or_default(),
        )
    }

    fn released_between(&self, v: ViewOf, block: BlockId) -> bool {
        let Some(kills) = self.guard_kills.get(&v.guard) else {
            return true;
        };
        let Some(after_view) = self.after.get(&v.view) else {
            return true;
        };
        kills.iter().any(|&(k, ref after_kill)| {
            after_view.get(k as usize).copied().unwrap_or(true)
                && (k == block || after_kill.get(block as usize).copied().unwrap_or(true))
        })
    }
}

/// For each local given at most one value, the blocks whose terminator a
/// point that may take the value away reaches (`Origins::alive_at`).
pub(super) fn kill_reach(
    body: &Body,
    locals: &BTreeSet<u32>,
    own_drops_keep: bool,
    view_borrows: &BTreeSet<u32>,
) -> HashMap<u32, Vec<bool>> {
    let mut out = HashMap::new();
    let n = body.blocks.len();
    for &l in locals {
        let kills = kill_points(body, l, own_drops_keep, view_borrows);
        let (killed_in, killed_by_terminator, defs) =
            (kills.killed_in, kills.killed_by_terminator, kills.defs);
        // A local given several values holds the one it had where no
        // point that takes it away was passed since, only if each new value
        // comes after such a point (guards: `Guards::find`).
        if defs > 1 {
            continue;
        }
        let mut reached = vec![false; n];
        let mut stack: Vec<BlockId> = Vec::new();
        for &b in &killed_in {
            if let Some(r) = reached.get_mut(b as usize) {
                *r = true;
            }
        }
        for &b in killed_in.iter().chain(&killed_by_terminator) {
            if let Some(blk) = body.blocks.get(b as usize) {
                stack.extend(blk.terminator.kind.successors());
            }
        }
        mark_reached(body, &mut reached, stack);
        out.insert(l, reached);
    }
    out
}

/// Where a point that may take local `l`'s value away lies: blocks with
/// such a point in a statement or the terminator (it reaches the block's
/// own terminator), blocks whose terminator is one, and how many values
/// the local is given.
struct KillPoints {
    killed_in: Vec<BlockId>,
    killed_by_terminator: Vec<BlockId>,
    defs: u32,
}

fn kill_points(
    body: &Body,
    l: u32,
    own_drops_keep: bool,
    view_borrows: &BTreeSet<u32>,
) -> KillPoints {
    let mut defs = u32::from(l >= 1 && l <= body.arg_count);
    // Blocks with a kill in a statement (it reaches the block's own
    // terminator) and blocks whose terminator kills (it reaches only
    // what follows).
    let mut killed_in: Vec<BlockId> = Vec::new();
    let mut killed_by_terminator: Vec<BlockId> = Vec::new();
    let takes = |p: &Place| p.local == l && !p.projection.contains(&Projection::Deref);
    // Where the site is a drop of the whole local (`own_drops_keep`), a
    // move of the whole local does not change what that drop finds: if
    // the drop drops anything, the local was not moved on the way
    // (MIR's drop elaboration makes a drop after a move a no-op).
    let moves = |op: &Operand| matches!(op, Operand::Move(p) if takes(p) && !(own_drops_keep && p.projection.is_empty()));
    for (bi, b) in body.blocks.iter().enumerate() {
        let bi = bi as BlockId;
        for st in &b.statements {
            let kills = match &st.kind {
                StatementKind::Assign { place, rvalue } => {
                    if place.local == l && place.projection.is_empty() {
                        defs += 1;
                    }
                    // A borrow given only to a view of a guard's data
                    // (`Deref::deref_mut(&mut guard)`) changes nothing.
                    let viewing =
                        view_borrows.contains(&place.local) && place.projection.is_empty();
                    (takes(place) && !place.projection.is_empty())
                        || (!viewing && rvalue_takes(rvalue, &takes, &moves))
                }
                StatementKind::StorageDead(x) => *x == l,
                StatementKind::SetDiscriminant { place, .. } => takes(place),
                StatementKind::Intrinsic { operands, .. } => operands.iter().any(moves),
                StatementKind::StorageLive(_) => false,
            };
            if kills {
                killed_in.push(bi);
            }
        }
        let kills = match &b.terminator.kind {
            TerminatorKind::Drop { place, .. } => {
                takes(place) && !(own_drops_keep && place.local == l && place.projection.is_empty())
            }
            TerminatorKind::Call {
                args,
                destination,
                callee,
                ..
            } => {
                if destination.local == l && destination.projection.is_empty() {
                    defs += 1;
                }
                args.iter().any(moves)
                    || (takes(destination) && !destination.projection.is_empty())
                    || matches!(callee, kmir::Callee::Indirect { operand, .. } if moves(operand))
            }
            TerminatorKind::SwitchInt { discr, .. } => moves(discr),
            TerminatorKind::InlineAsm { .. } => true,
            _ => false,
        };
        if kills {
            // The site itself may be the call that takes it.
            killed_in.push(bi);
            killed_by_terminator.push(bi);
        }
    }
    KillPoints {
        killed_in,
        killed_by_terminator,
        defs,
    }
}

/// Whether everything a function returns that comes from argument `k`
/// is reached through a pointer stored in what `k` points to, never in
/// that memory itself (an iterator's `next` returns a reference to an
/// element, not into the iterator).
fn returns_through_pointer(s: &crate::summary::Summary, k: u32) -> bool {
    s.ret_from.as_ref().is_some_and(|from| {
        from.iter().all(|f| match *f {
            Flow::Own(j) => j != k,
            Flow::Shared(j, p) | Flow::Read(j, p) | Flow::Clone(j, p) => {
                j != k || p.through_pointer()
            }
        })
    })
}

/// Whether `op` is a number, a `bool` or a `char`: a value that holds no
/// reference.
fn scalar_operand(dump: &CrateDump, body: &Body, op: &Operand) -> bool {
    let ty = match op {
        Operand::Copy(p) | Operand::Move(p) => dump.place_ty(body, p),
        Operand::Constant(c) => Some(c.ty),
        Operand::RuntimeChecks(_) => return true,
    };
    ty.and_then(|t| dump.ty(t)).is_some_and(|t| {
        matches!(
            t.kind,
            TyKind::Bool | TyKind::Char | TyKind::Int(_) | TyKind::Uint(_) | TyKind::Float(_)
        )
    })
}

/// The locals whose values the call or drop `terminator` releases, when
/// they are whole locals: the arguments its summary's `last_from` names, or
/// the local dropped. `None` when something else is released.
pub(super) fn released_locals(
    terminator: &TerminatorKind,
    last_from: Option<&[u32]>,
) -> Option<Vec<u32>> {
    let out: Vec<u32> = match terminator {
        TerminatorKind::Call { args, .. } => last_from?
            .iter()
            .map(|&k| match args.get(k as usize) {
                Some(Operand::Move(p) | Operand::Copy(p)) if p.projection.is_empty() => {
                    Some(p.local)
                }
                _ => None,
            })
            .collect::<Option<_>>()?,
        TerminatorKind::Drop { place, .. } if place.projection.is_empty() => vec![place.local],
        _ => return None,
    };
    (!out.is_empty()).then_some(out)
}

/// The local whose value `r` holds through moves and copies only (`_102 =
/// move _37`), each local on the way given one value, the last one too.
pub(super) fn moved_from(body: &Body, r: u32) -> Option<u32> {
    let mut cur = r;
    for _ in 0..8 {
        if kill_points(body, cur, false, &BTreeSet::new()).defs != 1 {
            return None;
        }
        let mut source = None;
        for b in &body.blocks {
            for st in &b.statements {
                if let StatementKind::Assign { place, rvalue } = &st.kind
                    && place.local == cur
                    && place.projection.is_empty()
                    && let Rvalue::Use(Operand::Move(p) | Operand::Copy(p)) = &**rvalue
                    && p.projection.is_empty()
                {
                    source = Some(p.local);
                }
            }
        }
        match source {
            Some(s) => cur = s,
            None => return Some(cur),
        }
    }
    None
}

/// Whether every way from the entry to the terminator of `to` passes the
/// terminator of `via` (or `to` is `via`).
pub(crate) fn dominates(body: &Body, via: BlockId, to: BlockId) -> bool {
    if via == to {
        return true;
    }
    let mut seen = vec![false; body.blocks.len()];
    let mut stack: Vec<BlockId> = vec![0];
    while let Some(b) = stack.pop() {
        if b == to {
            return false;
        }
        match seen.get_mut(b as usize) {
            Some(s) if !*s => *s = true,
            _ => continue,
        }
        if b == via {
            continue;
        }
        if let Some(blk) = body.blocks.get(b as usize) {
            stack.extend(blk.terminator.kind.successors());
        }
    }
    true
}

/// The blocks a way from the terminator of `from` reaches.
pub(crate) fn reached_after(body: &Body, from: BlockId) -> Vec<bool> {
    let mut reached = vec![false; body.blocks.len()];
    let start = body
        .blocks
        .get(from as usize)
        .map(|b| b.terminator.kind.successors())
        .unwrap_or_default();
    mark_reached(body, &mut reached, start);
    reached
}

/// The blocks on a way from the terminator of `from` to the terminator of
/// `to` (`to` itself only on a loop back to it).
pub(crate) fn between(body: &Body, from: BlockId, to: BlockId) -> Vec<bool> {
    let after = reached_after(body, from);
    let before = super::writes::reaching_blocks(&super::writes::predecessors(body), to);
    let loops = reached_after(body, to)
        .get(to as usize)
        .copied()
        .unwrap_or(true);
    (0..body.blocks.len())
        .map(|x| {
            after.get(x).copied().unwrap_or(true)
                && before.get(x).copied().unwrap_or(true)
                && (x != to as usize || loops)
        })
        .collect()
}

/// Marks in `reached` every block a way from the blocks in `stack`
/// reaches (those included).
fn mark_reached(body: &Body, reached: &mut [bool], mut stack: Vec<BlockId>) {
    while let Some(b) = stack.pop() {
        let Some(r) = reached.get_mut(b as usize) else {
            continue;
        };
        if *r {
            continue;
        }
        *r = true;
        if let Some(blk) = body.blocks.get(b as usize) {
            stack.extend(blk.terminator.kind.successors());
        }
    }
}

/// Whether an rvalue moves out of, or mutably borrows, what `takes` says.
pub(super) fn rvalue_takes(
    rvalue: &Rvalue,
    takes: &impl Fn(&Place) -> bool,
    moves: &impl Fn(&Operand) -> bool,
) -> bool {
    match rvalue {
        Rvalue::Use(op) | Rvalue::Repeat { operand: op, .. } | Rvalue::Cast { operand: op, .. } => {
            moves(op)
        }
        Rvalue::UnaryOp { operand, .. } => moves(operand),
        Rvalue::BinaryOp { lhs, rhs, .. } | Rvalue::CheckedBinaryOp { lhs, rhs, .. } => {
            moves(lhs) || moves(rhs)
        }
        Rvalue::Aggregate { operands, .. } => operands.iter().any(moves),
        Rvalue::Ref {
            mutable: true,
            place,
        }
        | Rvalue::AddressOf {
            mutable: true,
            place,
        } => takes(place) || place.local == place_root_local(place, takes),
        _ => false,
    }
}

fn place_root_local(place: &Place, takes: &impl Fn(&Place) -> bool) -> u32 {
    // A mutable borrow of any part of the local, or through a pointer
    // stored in it, may replace what it holds.
    if takes(&Place {
        local: place.local,
        projection: Box::new([]),
    }) {
        place.local
    } else {
        u32::MAX
    }
}

fn operand_ty(dump: &CrateDump, body: &Body, op: &Operand) -> Option<TyId> {
    match op {
        Operand::Copy(p) | Operand::Move(p) => dump.place_ty(body, p),
        Operand::Constant(c) => Some(c.ty),
        Operand::RuntimeChecks(_) => None,
    }
}

fn is_pointer(dump: &CrateDump, ty: TyId) -> bool {
    matches!(
        dump.ty(ty).map(|t| &t.kind),
        Some(TyKind::RawPtr { .. } | TyKind::Ref { .. })
    )
}

fn is_unsafe_cell(dump: &CrateDump, ty: TyId) -> bool {
    match dump.ty(ty).map(|t| &t.kind) {
        Some(TyKind::Adt { path, .. }) => kmir::UNSAFE_CELLS.contains(&path.as_str()),
        _ => false,
    }
}

/// Whether a value of `ty` may change through a shared borrow of it: an
/// `UnsafeCell` held in place, not behind a pointer. Types whose declared
/// fields are all pointers (`Arc`, `ListArc`, `NonNull`) hold none in place
/// whatever their arguments; every other type is asked the conservative
/// question (`CrateDump::may_mutate_behind_shared`).
pub(super) fn inline_interior(dump: &CrateDump, ty: TyId) -> bool {
    match dump.ty(ty).map(|t| &t.kind) {
        Some(TyKind::RawPtr { .. } | TyKind::Ref { .. }) => false,
        Some(TyKind::Adt { path, .. }) if pointers_only(dump, path, 0) => false,
        _ => dump.may_mutate_behind_shared(ty),
    }
}

/// Whether the ADT `path` holds, in place, only pointers, markers, and
/// ADTs that do (its declared field types, looked up by their head path).
fn pointers_only(dump: &CrateDump, path: &str, depth: u32) -> bool {
    if depth > 4 || kmir::UNSAFE_CELLS.contains(&path) {
        return false;
    }
    let Some(adt) = dump.adt(path) else {
        return false;
    };
    adt.variants.iter().flat_map(|v| &v.fields).all(|f| {
        let t = f.ty.trim();
        if t.starts_with('*') || t.starts_with('&') {
            return true;
        }
        let head = t.split('<').next().unwrap_or(t).trim();
        matches!(
            head,
            "core::ptr::non_null::NonNull" | "core::ptr::NonNull" | "core::marker::PhantomData"
        ) || (head.contains("::") && pointers_only(dump, head, depth + 1))
    })
}

/// The arguments `(i, j)` whose handles a function compares for identity:
/// its body is `_0 = Eq(a, b)`, the only write to its result, where `a` and
/// `b` are the pointer fields read straight from behind arguments `i` and
/// `j`, both references to one handle type that holds nothing but that
/// pointer (and markers): `Arc::ptr_eq`. Equal pointers are one object.
pub fn identity_test(dump: &CrateDump, body: &Body) -> Option<(u32, u32)> {
    let mut result = None;
    let mut writes = 0;
    for b in &body.blocks {
        for st in &b.statements {
            if let StatementKind::Assign { place, rvalue } = &st.kind
                && place.local == 0
            {
                writes += 1;
                if let Rvalue::BinaryOp {
                    op: BinOp::Eq,
                    lhs,
                    rhs,
                } = &**rvalue
                {
                    result = Some((lhs.clone(), rhs.clone()));
                }
            }
        }
        if let TerminatorKind::Call { destination, .. } = &b.terminator.kind
            && destination.local == 0
        {
            writes += 1;
        }
    }
    if writes != 1 {
        return None;
    }
    let (lhs, rhs) = result?;
    let i = handle_pointer_of(dump, body, &lhs)?;
    let j = handle_pointer_of(dump, body, &rhs)?;
    let ty = |k: u32| body.local(k + 1).map(|l| l.ty);
    (i != j && ty(i).is_some() && ty(i) == ty(j)).then_some((i, j))
}

/// The argument whose handle's pointer `op` is: a copy (through casts) of
/// `(*_k).f`, where `_k: &H` and `H` holds that pointer and only markers
/// besides.
fn handle_pointer_of(dump: &CrateDump, body: &Body, op: &Operand) -> Option<u32> {
    let mut place = match op {
        Operand::Copy(p) | Operand::Move(p) => p.clone(),
        _ => return None,
    };
    // Follow `_3 = copy _4 as *const T (Transmute)` and plain copies back
    // to their single definition.
    for _ in 0..4 {
        if place.projection.len() == 2
            && place.projection[0] == Projection::Deref
            && matches!(place.projection[1], Projection::Field { .. })
            && place.local >= 1
            && place.local <= body.arg_count
        {
            let arg_ty = body.local(place.local)?.ty;
            let TyKind::Ref { pointee, .. } = dump.ty(arg_ty)?.kind else {
                return None;
            };
            return single_pointer_handle(dump, pointee).then_some(place.local - 1);
        }
        if !place.projection.is_empty() {
            return None;
        }
        place = single_def(body, place.local)?;
    }
    None
}

/// What the only assignment to `local` copies or casts, if that is all it
/// is.
fn single_def(body: &Body, local: u32) -> Option<Place> {
    let mut found = None;
    for b in &body.blocks {
        for st in &b.statements {
            if let StatementKind::Assign { place, rvalue } = &st.kind
                && place.local == local
            {
                if found.is_some() || !place.projection.is_empty() {
                    return None;
                }
                found = Some(match &**rvalue {
                    Rvalue::Use(Operand::Copy(p) | Operand::Move(p))
                    | Rvalue::Cast {
                        operand: Operand::Copy(p) | Operand::Move(p),
                        ..
                    } => p.clone(),
                    _ => return None,
                });
            }
        }
    }
    found
}

/// A handle type holding exactly one pointer and markers (`Arc<T>`:
/// `ptr: NonNull<ArcInner<T>>`, `_p: PhantomData<..>`).
fn single_pointer_handle(dump: &CrateDump, ty: TyId) -> bool {
    let Some(TyKind::Adt { path, .. }) = dump.ty(ty).map(|t| &t.kind) else {
        return false;
    };
    let Some(adt) = dump.adt(path) else {
        return false;
    };
    if adt.variants.len() != 1 {
        return false;
    }
    let mut pointers = 0;
    for f in adt.variants.iter().flat_map(|v| &v.fields) {
        let t = f.ty.trim();
        let head = t.split('<').next().unwrap_or(t).trim();
        if head == "core::marker::PhantomData" {
            continue;
        }
        if t.starts_with('*')
            || matches!(head, "core::ptr::non_null::NonNull" | "core::ptr::NonNull")
        {
            pointers += 1;
        } else {
            return false;
        }
    }
    pointers == 1
}

impl Origins {
    /// Whether the drop ending `block`, of a local as a whole, releases a
    /// handle that an identity test said equals a handle in borrowed
    /// memory (`Arc::ptr_eq(borrowed, &l)`), on every path to the drop: it
    /// is reached only through the test's true branch, and the local holds
    /// the value it had at the test (given one value, and nothing but its
    /// own drops and moves may take it away).
    pub fn identity_backed(
        &self,
        dump: &CrateDump,
        body: &Body,
        block: BlockId,
        terminator: &TerminatorKind,
        last_from: Option<&[u32]>,
        last_field: Option<u32>,
    ) -> bool {
        if self.identity_tests.is_empty() {
            return false;
        }
        // A drop whose last-reference part comes from one field only (the
        // glue's `last_field`) is backed where that field is.
        let field = last_field;
        // The local released as a whole: dropped, or moved into a call
        // whose last-reference expectation is about that argument only
        // (`drop(old)`).
        let released = match terminator {
            TerminatorKind::Drop { place, .. } => Some(place),
            TerminatorKind::Call { args, .. } => match last_from {
                Some(&[k]) => match args.get(k as usize) {
                    Some(Operand::Move(p)) => Some(p),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        };
        let Some(dropped) = released.filter(|p| p.projection.is_empty()) else {
            return false;
        };
        // A temporary moved into right before the release (`_12 = move _2;
        // drop(move _12)`): the local it was moved from.
        let l = body
            .blocks
            .get(block as usize)
            .and_then(|b| {
                b.statements.iter().rev().find_map(|st| match &st.kind {
                    StatementKind::Assign { place, rvalue }
                        if place.local == dropped.local && place.projection.is_empty() =>
                    {
                        match &**rvalue {
                            Rvalue::Use(Operand::Move(from)) if from.projection.is_empty() => {
                                Some(from.local)
                            }
                            _ => Some(u32::MAX),
                        }
                    }
                    _ => None,
                })
            })
            .filter(|&l| l != u32::MAX)
            .unwrap_or(dropped.local);
        let unchanged = self
            .unchanged_to
            .get(&l)
            .is_some_and(|r| r.get(block as usize).is_some_and(|reached| !reached));
        let field_unchanged = field.is_some_and(|f| field_kept(body, l, f, block));
        if !unchanged && !field_unchanged {
            return false;
        }
        self.identity_tests.iter().any(|t| {
            // The handle tested is `l` itself, or the field the release's
            // last-reference part comes from.
            let whole =
                |op: &Operand| unchanged && self.operand(dump, op) == one_origin(Origin::Local(l));
            let in_field = |op: &Operand| {
                field.is_some_and(|f| {
                    borrowed_place(body, op).is_some_and(|p| {
                        p.local == l
                            && matches!(*p.projection, [Projection::Field { index, .. }] if index == f)
                    })
                })
            };
            // Memory a shared-reference argument borrows, or a place behind
            // a `&mut` argument that nothing writes in the body (the caller's
            // value is still there, holding its count).
            let borrowed = |op: &Operand| {
                self.operand(dump, op).is_some_and(|s| {
                    !s.is_empty()
                        && s.iter().all(|o| match *o {
                            Origin::Arg(Flow::Shared(k, _)) if self.is_shared(k) => true,
                            Origin::Arg(Flow::Shared(k, p)) if self.is_mutref(k) => {
                                p.exact() && !self.writes.may_write_before(Root::Arg(k), &p, block)
                            }
                            _ => false,
                        })
                })
            };
            let (a, b) = (&t.sides.0, &t.sides.1);
            let pair_whole = (whole(a) && borrowed(b)) || (whole(b) && borrowed(a));
            let pair_field = (in_field(a) && borrowed(b)) || (in_field(b) && borrowed(a));
            let pointees: Vec<Option<TyId>> = [a, b]
                .iter()
                .map(|op| operand_ty(dump, body, op).and_then(|r| dump.pointee(r)))
                .collect();
            let whole_type = body
                .local(l)
                .map(|d| d.ty)
                .is_some_and(|ty| pointees.iter().all(|p| *p == Some(ty)));
            let field_type = pointees[0].is_some() && pointees[0] == pointees[1];
            ((pair_whole && whole_type) || (pair_field && field_type))
                && t.true_at.get(block as usize).copied().unwrap_or(false)
        })
    }
}

/// Whether field `f` of local `l` keeps the one value it was given up to
/// the drop ending `block`, whatever the path: `l` is an argument or is
/// given its value once, and no other point of the body writes, moves out
/// of, drops or lends (mutably or by raw pointer) anything in its field `f`
/// or `l` as a whole (its other fields may change: `absorb` zeroes counts
/// next to the handle it compared; a move or drop of all of `l` leaves
/// nothing for a later release to find).
fn field_kept(body: &Body, l: u32, f: u32, block: BlockId) -> bool {
    let touches = |p: &Place| {
        p.local == l
            && !p.projection.contains(&Projection::Deref)
            && match p.projection.first() {
                None => true,
                Some(Projection::Field { index, .. }) => *index == f,
                Some(_) => true,
            }
    };
    // A move of `l` as a whole does not change what a release of `l` finds
    // either: after it, there is nothing left to release (or the code
    // would not compile).
    let moves = |op: &Operand| matches!(op, Operand::Move(p) if touches(p) && !(p.local == l && p.projection.is_empty()));
    let mut defs = u32::from(l >= 1 && l <= body.arg_count);
    for (bi, b) in body.blocks.iter().enumerate() {
        for st in &b.statements {
            match &st.kind {
                StatementKind::Assign { place, rvalue } => {
                    if place.local == l && place.projection.is_empty() {
                        defs += 1;
                    } else if touches(place) {
                        return false;
                    }
                    let lends = match &**rvalue {
                        Rvalue::Ref {
                            mutable: true,
                            place,
                        }
                        | Rvalue::AddressOf { place, .. } => touches(place),
                        _ => false,
                    };
                    if lends || rvalue_takes(rvalue, &|_: &Place| false, &moves) {
                        return false;
                    }
                }
                StatementKind::SetDiscriminant { place, .. } if touches(place) => return false,
                StatementKind::Intrinsic { operands, .. } if operands.iter().any(moves) => {
                    return false;
                }
                _ => {}
            }
        }
        if bi as BlockId == block {
            continue;
        }
        let kills = match &b.terminator.kind {
            // A drop of `l` as a whole ends it: a drop that does drop
            // something finds the value the test saw (drop elaboration
            // makes a drop after another one a no-op).
            TerminatorKind::Drop { place, .. } => {
                touches(place) && !(place.local == l && place.projection.is_empty())
            }
            TerminatorKind::Call {
                args, destination, ..
            } => args.iter().any(moves) || touches(destination),
            TerminatorKind::InlineAsm { .. } => true,
            _ => false,
        };
        if kills {
            return false;
        }
    }
    defs == 1
}

/// The call (its block) and the argument a borrow held by `holder` is given
/// to, when that is its only use: directly, or through one reborrow
/// (`_95 = &mut (*_96)`) that is itself used only there.
fn lent_to_one_call(body: &Body, holder: u32) -> Option<(BlockId, usize)> {
    use kmir::visit::PlaceContext as C;
    let mut current = holder;
    for _ in 0..3 {
        let mut uses: Vec<(Place, C, kmir::visit::Location)> = Vec::new();
        kmir::visit::for_each_place(body, |p, cx, loc| {
            let mentions = p.local == current
                || p.projection
                    .iter()
                    .any(|q| matches!(q, Projection::Index(l) if *l == current));
            let def = matches!(cx, C::Assign) && p.local == current && p.projection.is_empty();
            if mentions && !def {
                uses.push((p.clone(), cx, loc));
            }
        });
        let [(p, cx, loc)] = uses.as_slice() else {
            return None;
        };
        let b = body.blocks.get(loc.block as usize)?;
        if loc.statement < b.statements.len() {
            // A reborrow through it, `_95 = &mut (*_96)`.
            let StatementKind::Assign { place, rvalue } = &b.statements[loc.statement].kind else {
                return None;
            };
            match &**rvalue {
                Rvalue::Ref {
                    mutable: true,
                    place: q,
                } if *cx == C::Borrow { mutable: true }
                    && q.local == current
                    && *q.projection == [Projection::Deref]
                    && place.projection.is_empty() =>
                {
                    current = place.local;
                }
                _ => return None,
            }
        } else {
            let TerminatorKind::Call { args, .. } = &b.terminator.kind else {
                return None;
            };
            if !p.projection.is_empty() {
                return None;
            }
            let i = args.iter().position(
                |a| matches!(a, Operand::Move(q) | Operand::Copy(q) if q.local == current && q.projection.is_empty()),
            )?;
            return Some((loc.block, i));
        }
    }
    None
}

/// The place an operand holding a borrow borrows (`_5` given `_5 = &_2.0`,
/// through copies and reborrows of temporaries assigned once).
fn borrowed_place(body: &Body, op: &Operand) -> Option<Place> {
    let (Operand::Copy(p) | Operand::Move(p)) = op else {
        return None;
    };
    let mut local = p.local;
    if !p.projection.is_empty() {
        return None;
    }
    for _ in 0..8 {
        match kmir::visit::sole_assignment(body, local)? {
            Rvalue::Ref { place, .. } => {
                // A reborrow of what another temporary points to.
                if let [Projection::Deref] = *place.projection {
                    local = place.local;
                    continue;
                }
                return Some(place.clone());
            }
            Rvalue::Use(Operand::Copy(q) | Operand::Move(q)) if q.projection.is_empty() => {
                local = q.local;
            }
            _ => return None,
        }
    }
    None
}

/// A call of an identity test in a body: the two handles it compares (the
/// call's operands) and where its result is known true.
#[derive(Clone, Debug)]
pub struct IdentityTest {
    pub sides: (Operand, Operand),
    /// The blocks reached only through a branch taken when the test
    /// returned non-zero.
    pub true_at: Vec<bool>,
}

/// The identity tests a body calls (by the callees' summaries).
pub fn identity_tests(
    body: &Body,
    sites: &std::collections::HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
) -> Vec<IdentityTest> {
    let mut out = Vec::new();
    for (_, args, result, callee) in result_calls(body, sites) {
        let Some((i, j)) = summary_of.get(callee).identity_test else {
            continue;
        };
        if let (Some(a), Some(b)) = (args.get(i as usize), args.get(j as usize)) {
            out.push(IdentityTest {
                sides: (a.clone(), b.clone()),
                true_at: true_branch_only(body, result),
            });
        }
    }
    out
}

/// The calls of a body with one known callee whose result goes to a whole
/// local: block, operands, that local and the callee (what a test's
/// branches can be read from).
pub(super) fn result_calls<'b>(
    body: &'b Body,
    sites: &'b std::collections::HashMap<BlockId, Vec<Target>>,
) -> impl Iterator<Item = (BlockId, &'b [Operand], u32, program::FnId)> + 'b {
    body.blocks.iter().enumerate().filter_map(move |(bi, b)| {
        let TerminatorKind::Call {
            args, destination, ..
        } = &b.terminator.kind
        else {
            return None;
        };
        let [t] = sites.get(&(bi as BlockId))?.as_slice() else {
            return None;
        };
        destination.projection.is_empty().then_some((
            bi as BlockId,
            args.as_slice(),
            destination.local,
            t.callee,
        ))
    })
}

/// The blocks every path to which takes a branch of a `switchInt` on local
/// `t` for a non-zero value: not reachable from the entry once those edges
/// are removed.
pub(super) fn true_branch_only(body: &Body, t: u32) -> Vec<bool> {
    let n = body.blocks.len();
    // Edges (from, to) taken only when `t` is non-zero.
    let mut true_edges: Vec<(BlockId, BlockId)> = Vec::new();
    for (bi, b) in body.blocks.iter().enumerate() {
        if let TerminatorKind::SwitchInt {
            discr: Operand::Copy(p) | Operand::Move(p),
            targets,
            otherwise,
        } = &b.terminator.kind
            && p.local == t
            && p.projection.is_empty()
            && targets.iter().all(|x| x.value == 0)
            && targets.iter().all(|x| x.target != *otherwise)
        {
            true_edges.push((bi as BlockId, *otherwise));
        }
    }
    if true_edges.is_empty() {
        return vec![false; n];
    }
    let mut reached = vec![false; n];
    let mut stack: Vec<BlockId> = vec![0];
    while let Some(b) = stack.pop() {
        let Some(r) = reached.get_mut(b as usize) else {
            continue;
        };
        if *r {
            continue;
        }
        *r = true;
        if let Some(blk) = body.blocks.get(b as usize) {
            for s in blk.terminator.kind.successors() {
                if !true_edges.contains(&(b, s)) {
                    stack.push(s);
                }
            }
        }
    }
    reached.iter().map(|r| !r).collect()
}

/// `v` with the paths of reads of memory changed by `f` (a field of the
/// value read there).
fn narrow(v: &Set, f: impl Fn(FieldPath) -> FieldPath) -> Set {
    let s = v.as_ref()?;
    Some(
        s.iter()
            .map(|o| match *o {
                Origin::Arg(Flow::Read(k, p)) => Origin::Arg(Flow::Read(k, f(p))),
                Origin::Guard(GuardFlow::Read, g, p) => Origin::Guard(GuardFlow::Read, g, f(p)),
                _ => *o,
            })
            .collect(),
    )
}

/// `v` with every path made "somewhere below".
fn inexact(v: &Set) -> Set {
    let s = v.as_ref()?;
    Some(
        s.iter()
            .map(|o| match *o {
                Origin::Arg(Flow::Read(k, p)) => Origin::Arg(Flow::Read(k, p.below())),
                Origin::Arg(Flow::Shared(k, p)) => Origin::Arg(Flow::Shared(k, p.below())),
                Origin::Guard(f, g, p) => Origin::Guard(f, g, p.below()),
                _ => *o,
            })
            .collect(),
    )
}

/// The locals whose pointer can be written through only in ways the scan
/// sees itself: used only through a dereference (an assignment through it
/// is a write the scan records, a read reads), compared or cast to an
/// integer, copied into such locals, or handed back in the return place (the
/// caller's business). A mutable borrow held only by them
/// (`OccupiedEntry::into_mut`'s result, a cursor walking a tree) stores
/// nothing unknown; one given to a call, stored in memory or borrowed may.
fn contained_pointers(dump: &CrateDump, body: &Body) -> Vec<bool> {
    use kmir::visit::PlaceContext as C;
    let n = body.locals.len();
    let mut ok = vec![true; n];
    // The whole locals each local's value is copied into.
    let mut flows: Vec<Vec<u32>> = vec![Vec::new(); n];
    let stmt = |loc: kmir::visit::Location| {
        body.blocks
            .get(loc.block as usize)
            .and_then(|b| b.statements.get(loc.statement))
    };
    kmir::visit::for_each_place(body, |p, cx, loc| {
        if p.projection.first() == Some(&Projection::Deref) {
            return;
        }
        let fine = match cx {
            C::Assign | C::CallDestination | C::SetDiscriminant => p.projection.is_empty(),
            C::Read { .. } | C::Inspect if p.projection.is_empty() => match stmt(loc) {
                Some(kmir::Statement {
                    kind: StatementKind::Assign { place, rvalue },
                    ..
                }) => match &**rvalue {
                    Rvalue::Use(_) | Rvalue::Aggregate { .. } | Rvalue::Cast { .. } => {
                        let to_int = matches!(&**rvalue, Rvalue::Cast { ty, .. }
                            if matches!(dump.ty(*ty).map(|t| &t.kind), Some(TyKind::Int(_) | TyKind::Uint(_))));
                        if to_int {
                            true
                        } else if place.projection.is_empty() {
                            if let Some(f) = flows.get_mut(p.local as usize) {
                                f.push(place.local);
                            }
                            true
                        } else {
                            false
                        }
                    }
                    Rvalue::BinaryOp { .. }
                    | Rvalue::CheckedBinaryOp { .. }
                    | Rvalue::UnaryOp { .. }
                    | Rvalue::Discriminant(_)
                    | Rvalue::Len(_) => true,
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        };
        if !fine && let Some(o) = ok.get_mut(p.local as usize) {
            *o = false;
        }
    });
    if let Some(o) = ok.get_mut(0) {
        *o = true;
    }
    loop {
        let mut changed = false;
        for l in 1..n {
            if ok[l]
                && flows[l]
                    .iter()
                    .any(|&d| !ok.get(d as usize).copied().unwrap_or(false))
            {
                ok[l] = false;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    ok
}
