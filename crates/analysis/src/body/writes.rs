//! Where a function may write, and where the pointers it returns point:
//! the mod/ref facts object liveness needs to show that a container under a
//! held lock still holds an object (docs/preemption.md, "Objects kept alive
//! by a container under a held lock").
//!
//! A function holding `inner`, the guard of a lock, takes a clone of an
//! entry of `inner.nodes`, calls helpers given `&mut *inner`, and drops the
//! clone while the lock is still held. The drop cannot release the last
//! reference if the entry is still in the tree: nothing the function or
//! its helpers do writes to `inner.nodes` (the lock keeps every other
//! thread out). Saying so needs, for each function, where it may write in
//! terms of its arguments (`(*arg0).work` but not `(*arg0).nodes`), and
//! where the pointers it returns point (`LockedBy::access_mut` returns a
//! pointer into its first argument, not into the owner it is given).
//!
//! The scan is flow-insensitive and a may-analysis: each local holds the
//! set of places its pointers may point at or below ([`Target`]), rooted at
//! an argument, the data a guard local gives access to, or a local. A write
//! through a pointer is recorded at every place it may point to; a call
//! writes where its summary says, mapped through what it is given, or, for
//! a callee without a summary (a C function, a function pointer nothing is
//! known of), below everything its arguments reach.
//!
//! Trust assumption (documented in docs/preemption.md): memory reached from
//! a place is only written through pointers derived from that place (its
//! borrows, what calls given them return, pointers read out of it), and a
//! pointer read out of memory reached from a place points to memory reached
//! from it. The borrow rules make this true of safe code that holds a
//! `&mut` or a lock guard; unsafe code that keeps a raw pointer into a
//! sibling structure can break it. A pointer made from an integer, a static
//! or a thread-local points elsewhere.

use std::collections::{BTreeSet, HashMap};

use kmir::{
    BlockId, Body, CrateDump, Operand, Place, Projection, Rvalue, StatementKind, TerminatorKind,
    TyKind,
};
use program::Program;

use crate::summary::{FieldPath, Flow, Summaries};

use super::Target as CallTarget;

/// What a pointer may point to is rooted at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Root {
    /// What argument `k` (0-based) points to, or reaches when it is not a
    /// pointer itself.
    Arg(u32),
    /// The data guard local `g` gives access to (what its `Deref` returns).
    Guard(u32),
    /// Local `l` itself.
    Local(u32),
    /// Memory none of those is: a new allocation, a static, what a C
    /// function returned. Writes there are not tracked; a pointer there
    /// matters only to say that a function stores into an argument, or
    /// returns, something not reached from its arguments.
    Elsewhere,
}

/// A pointer into memory the scan does not name.
const ELSEWHERE: Target = Target {
    root: Root::Elsewhere,
    path: FieldPath::BELOW,
};

/// A place a pointer may point at (exact path) or below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target {
    pub root: Root,
    pub path: FieldPath,
}

type Set = BTreeSet<Target>;

/// Rounds of the scan before it gives up (every argument written).
const MAX_ROUNDS: usize = 32;

/// The guards of one body and the calls that view their data.
#[derive(Debug, Default)]
pub struct Guards {
    /// Locals given every value they hold by a call that returns holding a
    /// lock on every way it returns (`Lock::lock`, not a trylock), or by a
    /// move of another guard.
    pub locals: BTreeSet<u32>,
    /// Call blocks that view a guard's data: `Deref::deref(&g)` or
    /// `DerefMut::deref_mut(&mut g)` of a guard local, by block.
    pub views: HashMap<BlockId, u32>,
    /// The temporaries that borrow a guard only to give it to a view call
    /// (`_19 = &mut _5`): not a change of the guard.
    pub view_borrows: BTreeSet<u32>,
}

impl Guards {
    pub fn find(
        program: &Program,
        body: &Body,
        sites: &HashMap<BlockId, Vec<CallTarget>>,
        summary_of: &dyn Summaries,
    ) -> Guards {
        let mut g = Guards::default();
        // Most bodies take no lock: look at the calls' summaries first.
        let acquires = |bi: usize| {
            sites.get(&(bi as BlockId)).is_some_and(|ts| {
                ts.iter()
                    .any(|t| summary_of.get(t.callee).has_acquisition())
            })
        };
        if !(0..body.blocks.len()).any(acquires) {
            return g;
        }
        // How each local is given its value: by a call that returns holding
        // a lock on every way it returns, by a move of another local, or
        // otherwise. A guard is given its value only by the first kind, or
        // by moves of guards (`refs = relocked`): a guard has a destructor,
        // so before it is given a new value the old one was dropped or
        // moved away, and both are points that release it.
        #[derive(Clone, Copy, PartialEq)]
        enum Def {
            Acquire,
            MoveFrom(u32),
            Other,
        }
        let mut defs: HashMap<u32, Vec<Def>> = HashMap::new();
        let mut def_count: HashMap<u32, u32> = HashMap::new();
        for (bi, b) in body.blocks.iter().enumerate() {
            for st in &b.statements {
                if let StatementKind::Assign { place, rvalue } = &st.kind {
                    *def_count.entry(place.local).or_default() += 1;
                    let d = match &**rvalue {
                        Rvalue::Use(Operand::Move(p))
                            if place.projection.is_empty() && p.projection.is_empty() =>
                        {
                            Def::MoveFrom(p.local)
                        }
                        _ => Def::Other,
                    };
                    defs.entry(place.local).or_default().push(d);
                }
            }
            if let TerminatorKind::Call { destination, .. } = &b.terminator.kind {
                *def_count.entry(destination.local).or_default() += 1;
                let acquiring = destination.projection.is_empty()
                    && match sites.get(&(bi as BlockId)).map(Vec::as_slice) {
                        Some([t]) => {
                            let summary = summary_of.get(t.callee);
                            let returning: Vec<_> =
                                summary.cases.iter().filter(|c| !c.diverges).collect();
                            !returning.is_empty()
                                && returning.iter().all(|c| {
                                    !c.acquire.is_empty() && c.acquire.iter().all(|a| !a.trylock)
                                })
                        }
                        _ => false,
                    };
                defs.entry(destination.local)
                    .or_default()
                    .push(if acquiring { Def::Acquire } else { Def::Other });
            }
        }
        let mut candidates: BTreeSet<u32> = defs
            .iter()
            .filter(|(l, ds)| {
                **l > body.arg_count
                    && ds.contains(&Def::Acquire)
                    && ds.iter().all(|d| *d != Def::Other)
            })
            .map(|(l, _)| *l)
            .collect();
        loop {
            let before = candidates.len();
            let keep: BTreeSet<u32> = candidates
                .iter()
                .copied()
                .filter(|l| {
                    defs[l].iter().all(|d| match d {
                        Def::MoveFrom(m) => candidates.contains(m),
                        _ => true,
                    })
                })
                .collect();
            candidates = keep;
            if candidates.len() == before {
                break;
            }
        }
        g.locals = candidates;
        let defs = def_count;
        if g.locals.is_empty() {
            return g;
        }
        // The borrows of a guard, by the temporary holding them, and their
        // reborrows (`_40 = &mut _22; _39 = &mut (*_40)`): each temporary
        // with the borrow it holds (a guard's, directly or not).
        let mut borrow_of: HashMap<u32, (u32, Option<u32>)> = HashMap::new();
        for _ in 0..4 {
            for b in &body.blocks {
                for st in &b.statements {
                    let StatementKind::Assign { place, rvalue } = &st.kind else {
                        continue;
                    };
                    let Rvalue::Ref { place: p, .. } = &**rvalue else {
                        continue;
                    };
                    if !place.projection.is_empty() || borrow_of.contains_key(&place.local) {
                        continue;
                    }
                    if p.projection.is_empty() && g.locals.contains(&p.local) {
                        borrow_of.insert(place.local, (p.local, None));
                    } else if *p.projection == [Projection::Deref]
                        && let Some(&(guard, _)) = borrow_of.get(&p.local)
                    {
                        borrow_of.insert(place.local, (guard, Some(p.local)));
                    }
                }
            }
        }
        // How often each local is used other than by being assigned.
        let mut uses: HashMap<u32, u32> = HashMap::new();
        kmir::visit::for_each_place(body, |p, cx, _| {
            use kmir::visit::PlaceContext as C;
            if !matches!(cx, C::Assign | C::CallDestination) || !p.projection.is_empty() {
                *uses.entry(p.local).or_default() += 1;
            }
        });
        for (bi, b) in body.blocks.iter().enumerate() {
            let TerminatorKind::Call { args, .. } = &b.terminator.kind else {
                continue;
            };
            let Some([t]) = sites.get(&(bi as BlockId)).map(Vec::as_slice) else {
                continue;
            };
            let is_view = program.body_of(t.callee).is_some_and(|(_, inst)| {
                matches!(
                    inst.trait_item.as_deref(),
                    Some(
                        "core::ops::deref::Deref::deref" | "core::ops::deref::DerefMut::deref_mut"
                    )
                )
            }) && summary_of
                .get(t.callee)
                .cases
                .iter()
                .all(|c| c.adjust == 0 && c.acquire.is_empty() && c.release.is_empty());
            if !is_view {
                continue;
            }
            let [Operand::Move(p) | Operand::Copy(p)] = args.as_slice() else {
                continue;
            };
            if !p.projection.is_empty() {
                continue;
            }
            // Every temporary of the chain is given its value once and used
            // once, by the next link or the view call.
            let mut chain = Vec::new();
            let mut t = p.local;
            let guard = loop {
                let Some(&(guard, from)) = borrow_of.get(&t) else {
                    break None;
                };
                if defs.get(&t) != Some(&1) || uses.get(&t) != Some(&1) {
                    break None;
                }
                chain.push(t);
                match from {
                    Some(f) => t = f,
                    None => break Some(guard),
                }
            };
            if let Some(guard) = guard {
                g.views.insert(bi as BlockId, guard);
                g.view_borrows.extend(chain);
            }
        }
        g
    }
}

/// Where one body may write, and where its locals' pointers may point.
pub struct Writes {
    /// The scan did not settle: where pointers point is not known.
    gave_up: bool,
    /// Locals whose type holds no pointer: nothing to track.
    scalar: Vec<bool>,
    targets: Vec<Set>,
    /// Places below arguments and guards' data the body may write.
    /// Places below arguments and guards' data the body may write, with
    /// the blocks whose statements or terminator write there
    /// ([`ANYWHERE`]: any block).
    written: std::collections::BTreeMap<Target, BTreeSet<BlockId>>,
    /// Guards a pointer into whose data the body stores into memory other
    /// than its own locals and that data (an argument's, another guard's):
    /// code given that memory later may write the data without this scan
    /// seeing it.
    data_escaped: BTreeSet<u32>,
    /// For each guard in `data_escaped`, the blocks where a pointer into
    /// its data was stored so (`ANYWHERE`: the scan cannot say).
    escaped_in: std::collections::BTreeMap<u32, BTreeSet<BlockId>>,
    /// Arguments into whose memory the body may store a pointer not reached
    /// from that argument (another argument's, a guard's data, a local, or
    /// one nothing says where it points).
    foreign_stores: BTreeSet<u32>,
    /// The places in guards' data the body's places designate (by guard
    /// and path), and whether each lies inside an `UnsafeCell`.
    named_in_data: std::collections::BTreeMap<(u32, Vec<u16>), bool>,
    /// Each block's predecessors, unwind edges included.
    preds: Vec<Vec<BlockId>>,
}

/// A write the scan cannot place (it gave up).
const ANYWHERE: BlockId = BlockId::MAX;

/// Most places below one root, with one set of marks, that a set keeps
/// apart; past it they become one place "somewhere below" their common
/// prefix (a widening: the set only grows in what it designates, so the
/// scan still settles, in few rounds).
const MAX_PER_ROOT: usize = 8;

/// A target's marks (inside a cell, through a counted handle, through a
/// stored pointer), as one key.
fn marks(p: &FieldPath) -> u8 {
    u8::from(p.interior())
        | (u8::from(p.through_handle()) << 1)
        | (u8::from(p.through_pointer()) << 2)
}

/// Whether `set` holds a target that covers `t`: `t` itself, or "below" a
/// prefix of its path, with the same marks.
///
/// Only a target with the same marks covers: a mark narrows what a path
/// designates, but the readers of these sets do not only ask "may it be
/// there" (where a wider set is the safe answer); object liveness also
/// asks whether a pointer reaches a lock's data only through a counted
/// handle, and a clone's provenance widened past its mark would back a
/// drop that the marked path leaves unbacked.
fn covered(set: &Set, t: &Target) -> bool {
    if set.contains(t) {
        return true;
    }
    let p = t.path;
    let (i, h, q) = (p.interior(), p.through_handle(), p.through_pointer());
    (0..=p.steps().len()).any(|len| {
        let c = Target {
            root: t.root,
            path: p.prefix_below(len, i, h, q),
        };
        c != *t && set.contains(&c)
    })
}

/// Drops the targets others cover, then widens the places of one root and
/// marks past [`MAX_PER_ROOT`].
fn normalize(set: &mut Set) {
    let all: Vec<Target> = set.iter().copied().collect();
    for t in all {
        set.remove(&t);
        if !covered(set, &t) {
            set.insert(t);
        }
    }
    let groups: Vec<(Root, u8)> = set.iter().map(|t| (t.root, marks(&t.path))).collect();
    widen(set, &groups);
}

/// Whether `c`, "below" a path, covers `t` (same root and marks, `t`'s
/// path under `c`'s).
fn covers(c: &Target, t: &Target) -> bool {
    !c.path.exact()
        && c != t
        && c.root == t.root
        && marks(&c.path) == marks(&t.path)
        && t.path.steps().starts_with(c.path.steps())
}

/// Widens each group of `groups` (root and marks) holding more than
/// [`MAX_PER_ROOT`] places into one place "somewhere below" their common
/// prefix (counted: [`bounds::Bound::Provenance`]).
fn widen(set: &mut Set, groups: &[(Root, u8)]) {
    let mut groups = groups.to_vec();
    groups.sort_unstable();
    groups.dedup();
    for (root, m) in groups {
        let ts: Vec<Target> = set
            .iter()
            .filter(|t| t.root == root && marks(&t.path) == m)
            .copied()
            .collect();
        if ts.len() <= MAX_PER_ROOT {
            continue;
        }
        bounds::hit(bounds::Bound::Provenance);
        for t in &ts {
            set.remove(t);
        }
        set.insert(Target {
            root,
            path: common_below(&ts),
        });
    }
}

/// "Somewhere below" the longest common prefix of the paths of `ts` (one
/// root, one set of marks, at least one target), with their marks.
fn common_below(ts: &[Target]) -> FieldPath {
    let first = ts[0].path;
    let mut lcp = first.steps().len();
    for t in ts {
        let s = t.path.steps();
        lcp = lcp.min(s.len());
        while lcp > 0 && s[..lcp] != first.steps()[..lcp] {
            lcp -= 1;
        }
    }
    first.prefix_below(
        lcp,
        first.interior(),
        first.through_handle(),
        first.through_pointer(),
    )
}

/// Adds what `from` has that `into` does not cover, dropping what the new
/// places cover; whether `into` grew. Kept normal incrementally: only a
/// new "below" place can cover an old one, and only the groups of new
/// places can pass the bound.
fn union(into: &mut Set, from: &Set) -> bool {
    let mut touched: Vec<(Root, u8)> = Vec::new();
    for t in from {
        if covered(into, t) {
            continue;
        }
        if !t.path.exact() {
            into.retain(|u| !covers(t, u));
        }
        into.insert(*t);
        touched.push((t.root, marks(&t.path)));
    }
    if touched.is_empty() {
        return false;
    }
    widen(into, &touched);
    true
}

fn below(s: &Set) -> Set {
    s.iter()
        .map(|t| Target {
            root: t.root,
            path: t.path.below(),
        })
        .collect()
}

fn then(s: &Set, p: FieldPath) -> Set {
    s.iter()
        .map(|t| Target {
            root: t.root,
            path: t.path.then(p),
        })
        .collect()
}

impl Writes {
    pub fn compute(
        dump: &CrateDump,
        body: &Body,
        sites: &HashMap<BlockId, Vec<CallTarget>>,
        summary_of: &dyn Summaries,
        guards: &Guards,
    ) -> Writes {
        let scalar = body
            .locals
            .iter()
            .map(|l| {
                matches!(
                    dump.ty(l.ty).map(|t| &t.kind),
                    Some(
                        TyKind::Bool
                            | TyKind::Char
                            | TyKind::Int(_)
                            | TyKind::Uint(_)
                            | TyKind::Float(_)
                            | TyKind::Never
                    )
                )
            })
            .collect();
        let mut w = Writes {
            gave_up: false,
            scalar,
            targets: vec![Set::new(); body.locals.len()],
            written: Default::default(),
            data_escaped: BTreeSet::new(),
            escaped_in: Default::default(),
            foreign_stores: BTreeSet::new(),
            named_in_data: Default::default(),
            preds: predecessors(body),
        };
        for k in 1..=body.arg_count {
            let Some(l) = body.locals.get(k as usize) else {
                continue;
            };
            let pointer = matches!(
                dump.ty(l.ty).map(|t| &t.kind),
                Some(TyKind::Ref { .. } | TyKind::RawPtr { .. })
            );
            w.targets[k as usize].insert(Target {
                root: Root::Arg(k - 1),
                path: if pointer {
                    FieldPath::AT
                } else {
                    FieldPath::BELOW
                },
            });
        }
        // A round visits every statement and terminator once.
        let round_cost = body_size(body);
        for round in 0.. {
            let within = bounds::step(round_cost);
            if round == MAX_ROUNDS || !within {
                if within {
                    bounds::hit(bounds::Bound::Rounds);
                }
                // Give up: anything the arguments and guards reach.
                w.gave_up = true;
                for k in 0..body.arg_count {
                    w.written
                        .entry(Target {
                            root: Root::Arg(k),
                            path: FieldPath::BELOW,
                        })
                        .or_default()
                        .insert(ANYWHERE);
                }
                for &g in &guards.locals {
                    w.written
                        .entry(Target {
                            root: Root::Guard(g),
                            path: FieldPath::BELOW,
                        })
                        .or_default()
                        .insert(ANYWHERE);
                }
                break;
            }
            if !w.round(dump, body, sites, summary_of, guards) {
                break;
            }
        }
        // Which places of guards' data the body names lie inside a cell,
        // read off the types of its places' projections.
        kmir::visit::for_each_place(body, |place, _, _| {
            for t in w.memory(dump, place) {
                if let Root::Guard(g) = t.root
                    && t.path.exact()
                {
                    w.named_in_data
                        .entry((g, t.path.steps().to_vec()))
                        .and_modify(|cell| *cell |= t.path.interior())
                        .or_insert(t.path.interior());
                }
            }
        });
        w
    }

    fn round(
        &mut self,
        dump: &CrateDump,
        body: &Body,
        sites: &HashMap<BlockId, Vec<CallTarget>>,
        summary_of: &dyn Summaries,
        guards: &Guards,
    ) -> bool {
        let mut changed = false;
        for (bi, b) in body.blocks.iter().enumerate() {
            let block = bi as BlockId;
            for st in &b.statements {
                match &st.kind {
                    StatementKind::Assign { place, rvalue } => {
                        if self.scalar.get(place.local as usize) == Some(&true)
                            && !place.projection.contains(&Projection::Deref)
                        {
                            continue;
                        }
                        let v = self.rvalue(dump, body, rvalue);
                        changed |= self.store(dump, block, place, &v);
                    }
                    StatementKind::SetDiscriminant { place, .. } => {
                        changed |= self.store(dump, block, place, &Set::new());
                    }
                    StatementKind::Intrinsic { operands, .. } => {
                        let mut all = Set::new();
                        for op in operands.iter() {
                            union(&mut all, &self.operand(dump, op));
                        }
                        changed |= self.write_all(block, &below(&all), &all);
                    }
                    _ => {}
                }
            }
            match &b.terminator.kind {
                TerminatorKind::Drop { place, .. }
                    if place.projection.contains(&Projection::Deref) =>
                {
                    changed |= self.store(dump, block, place, &Set::new());
                }
                TerminatorKind::Call {
                    args, destination, ..
                } => {
                    let bi = bi as BlockId;
                    let result = if let Some(&g) = guards.views.get(&bi) {
                        Set::from([Target {
                            root: Root::Guard(g),
                            path: FieldPath::AT,
                        }])
                    } else {
                        let ops: Vec<Set> = args.iter().map(|a| self.operand(dump, a)).collect();
                        let mut all = Set::new();
                        for o in &ops {
                            union(&mut all, o);
                        }
                        let mut result = Set::new();
                        let ts = sites.get(&bi).map(Vec::as_slice).unwrap_or(&[]);
                        let summaries: Vec<_> =
                            ts.iter().map(|t| summary_of.get(t.callee)).collect();
                        // Whether a callee may store into what each
                        // operand points to itself (not behind it).
                        let storable: Vec<bool> =
                            args.iter().map(|a| !frozen_borrow(dump, body, a)).collect();
                        // What a callee may store: any of the pointers it
                        // is given, and, unless its summary says it stores
                        // only what the argument reaches, pointers to
                        // memory of its own (`Vec::reserve`'s new buffer).
                        let mut any = all.clone();
                        any.insert(ELSEWHERE);
                        let everywhere = |w: &mut Self, changed: &mut bool| {
                            for (o, &st) in ops.iter().zip(&storable) {
                                *changed |= w.write_all_from(block, &below(o), &any, st);
                            }
                        };
                        if summaries.is_empty() {
                            everywhere(self, &mut changed);
                            union(&mut result, &below(&all));
                            result.insert(ELSEWHERE);
                        }
                        for s in summaries {
                            match &s.writes {
                                Some(list) => {
                                    for &(k, p) in list {
                                        if let Some(o) = ops.get(k as usize) {
                                            let st =
                                                storable.get(k as usize).copied().unwrap_or(true);
                                            // A callee that stores into the
                                            // argument only what the argument
                                            // reaches through its pointers.
                                            let own: Set;
                                            let stored = if s.stores_own.contains(&k) {
                                                own = o
                                                    .iter()
                                                    .map(|t| Target {
                                                        root: t.root,
                                                        path: t.path.pointed(),
                                                    })
                                                    .collect();
                                                &own
                                            } else {
                                                &any
                                            };
                                            changed |=
                                                self.write_all_from(block, &then(o, p), stored, st);
                                        }
                                    }
                                }
                                None => everywhere(self, &mut changed),
                            }
                            // A result holding only sharing clones (a
                            // count on an object: `Arc::clone` itself, or a
                            // lookup returning a clone) points into those
                            // objects' allocations.
                            let clones = s.sharing_clone
                                || s.ret_from.as_ref().is_some_and(|fs| {
                                    !fs.is_empty()
                                        && fs.iter().all(|f| matches!(f, Flow::Clone(..)))
                                });
                            let mut points = Set::new();
                            match &s.ret_points {
                                Some(list) => {
                                    for &(k, p) in list {
                                        if let Some(o) = ops.get(k as usize) {
                                            union(&mut points, &then(o, p));
                                        }
                                    }
                                }
                                None => {
                                    union(&mut points, &below(&all));
                                }
                            }
                            if s.ret_fresh {
                                points.insert(ELSEWHERE);
                            }
                            if clones {
                                points = points
                                    .into_iter()
                                    .map(|t| Target {
                                        root: t.root,
                                        path: t.path.handle(),
                                    })
                                    .collect();
                            }
                            union(&mut result, &points);
                        }
                        result
                    };
                    changed |= self.store(dump, block, destination, &result);
                }
                TerminatorKind::InlineAsm { .. } => {
                    // Its operands are not in the dump: anything the body's
                    // arguments and guards reach.
                    let mut all = Set::new();
                    for k in 0..body.arg_count {
                        all.insert(Target {
                            root: Root::Arg(k),
                            path: FieldPath::BELOW,
                        });
                    }
                    for &g in &guards.locals {
                        all.insert(Target {
                            root: Root::Guard(g),
                            path: FieldPath::BELOW,
                        });
                    }
                    changed |= self.write_all(block, &all, &Set::new());
                    for k in 0..body.arg_count {
                        changed |= self.foreign_stores.insert(k);
                    }
                }
                _ => {}
            }
        }
        changed
    }

    /// Records writes at `at`; what is stored into a local's memory through
    /// a pointer joins what the local holds (a callee may store any of the
    /// call's pointers there).
    fn write_all(&mut self, block: BlockId, at: &Set, stored: &Set) -> bool {
        self.write_all_from(block, at, stored, true)
    }

    /// [`Writes::write_all`], for a write through a pointer that lets the
    /// writer store into the local it points to only if `storable` (a
    /// shared borrow of a value without cells in place does not).
    fn write_all_from(&mut self, block: BlockId, at: &Set, stored: &Set, storable: bool) -> bool {
        let mut changed = false;
        let mut work: Vec<(Target, bool)> = at.iter().map(|t| (*t, storable)).collect();
        // The places written so far, kept like a pointer's set: a place
        // below one already written is written with it (the same root and
        // marks lead to the same stores and the same further places), and
        // past the bound the places of one root and marks are written as
        // one place below their common prefix. Without it, pointers held in
        // locals that point into each other's memory make this walk visit
        // every path through them.
        let mut seen = Set::new();
        while let Some((t, storable)) = work.pop() {
            // Each place visited is a step of the body's budget: once it
            // is spent the scan gives up at its next round.
            if !bounds::step(1) {
                break;
            }
            if covered(&seen, &t) {
                continue;
            }
            let m = marks(&t.path);
            let mut group: Vec<Target> = seen
                .iter()
                .filter(|u| u.root == t.root && marks(&u.path) == m)
                .copied()
                .collect();
            let t = if group.len() >= MAX_PER_ROOT {
                bounds::hit(bounds::Bound::Provenance);
                group.push(t);
                Target {
                    root: t.root,
                    path: common_below(&group),
                }
            } else {
                t
            };
            if !t.path.exact() {
                seen.retain(|u| !covers(&t, u));
            }
            seen.insert(t);
            match t.root {
                Root::Local(l) => {
                    // A write in the object a handle the local holds refers
                    // to stores nothing into the local itself (and a
                    // borrow of a lock's data, which lives no longer than
                    // its guard, cannot be stored into a counted object in
                    // safe code).
                    if storable
                        && !t.path.through_handle()
                        && let Some(ts) = self.targets.get_mut(l as usize)
                    {
                        changed |= union(ts, stored);
                    }
                    // Recorded too: what the body writes through a pointer
                    // into a local, or into the object a handle it holds
                    // counts, is what may change there.
                    changed |= self.written.entry(t).or_default().insert(block);
                    // Somewhere below the local: also through the pointers
                    // it holds (a closure's captured `&mut`, a struct of
                    // borrows lent to a callee that writes through them).
                    if !t.path.exact()
                        && let Some(ts) = self.targets.get(l as usize)
                    {
                        // What is reached from the object a handle refers
                        // to stays in that object's world: the flag is kept
                        // (a write there is not one in a lock's data).
                        let interior = t.path.interior();
                        let handle = t.path.through_handle();
                        work.extend(below(ts).into_iter().map(|u| {
                            let path = if interior { u.path.cell() } else { u.path };
                            let path = if handle { path.handle() } else { path };
                            (Target { root: u.root, path }, true)
                        }));
                    }
                }
                // Through a counted handle the data of a held lock holds:
                // the object it refers to, not the data.
                Root::Guard(_) if t.path.through_handle() => {}
                Root::Elsewhere => {}
                Root::Arg(_) | Root::Guard(_) => {
                    changed |= self.written.entry(t).or_default().insert(block);
                    // Not reached from the argument's contents: another
                    // root, or a pointer that may lead into the argument's
                    // own memory rather than through a pointer it holds
                    // (an iterator made to point into itself).
                    if let Root::Arg(k) = t.root
                        && stored
                            .iter()
                            .any(|s| s.root != Root::Arg(k) || !s.path.through_pointer())
                    {
                        changed |= self.foreign_stores.insert(k);
                    }
                    // A pointer read back out of the guard's own data is
                    // taken to point into it again (`load`): only a store
                    // elsewhere loses track of it.
                    for s in stored {
                        if let Root::Guard(g) = s.root
                            && t.root != Root::Guard(g)
                        {
                            changed |= self.data_escaped.insert(g);
                            changed |= self.escaped_in.entry(g).or_default().insert(block);
                        }
                    }
                }
            }
        }
        changed
    }

    /// An assignment of a value holding `v` to `place`.
    fn store(&mut self, dump: &CrateDump, block: BlockId, place: &Place, v: &Set) -> bool {
        if place.projection.contains(&Projection::Deref) {
            let at = self.memory(dump, place);
            self.write_all(block, &at, v)
        } else if v.is_empty() || self.scalar.get(place.local as usize) == Some(&true) {
            false
        } else {
            match self.targets.get_mut(place.local as usize) {
                Some(ts) => union(ts, v),
                None => false,
            }
        }
    }

    /// The memory `place` designates.
    fn memory(&self, dump: &CrateDump, place: &Place) -> Set {
        let mut cur = Set::from([Target {
            root: Root::Local(place.local),
            path: FieldPath::AT,
        }]);
        for p in place.projection.iter() {
            cur = match p {
                Projection::Deref => self.load(&cur),
                Projection::Field { index, ty } => {
                    let cell = is_cell(dump, *ty);
                    cur.iter()
                        .map(|t| Target {
                            root: t.root,
                            path: if cell {
                                t.path.field(*index).cell()
                            } else {
                                t.path.field(*index)
                            },
                        })
                        .collect()
                }
                Projection::Downcast { variant } => cur
                    .iter()
                    .map(|t| Target {
                        root: t.root,
                        path: t.path.variant(*variant),
                    })
                    .collect(),
                Projection::Index(_)
                | Projection::ConstantIndex { .. }
                | Projection::Subslice { .. } => below(&cur),
                _ => cur,
            };
        }
        cur
    }

    /// The pointers stored in the memory `at` designates.
    fn load(&self, at: &Set) -> Set {
        let mut out = Set::new();
        for t in at {
            match t.root {
                Root::Local(l) => {
                    if let Some(ts) = self.targets.get(l as usize) {
                        // A local's fields are not told apart.
                        union(&mut out, ts);
                    }
                }
                // A pointer read out of an argument's memory or a guard's
                // data points to what is reached through it.
                Root::Arg(_) | Root::Guard(_) => {
                    out.insert(Target {
                        root: t.root,
                        path: t.path.pointed(),
                    });
                }
                Root::Elsewhere => {
                    out.insert(ELSEWHERE);
                }
            }
        }
        out
    }

    fn place(&self, dump: &CrateDump, place: &Place) -> Set {
        self.load(&self.memory(dump, place))
    }

    fn operand(&self, dump: &CrateDump, op: &Operand) -> Set {
        match op {
            Operand::Copy(p) | Operand::Move(p) => self.place(dump, p),
            Operand::Constant(c) if constant_points(dump, c) => Set::from([ELSEWHERE]),
            _ => Set::new(),
        }
    }

    fn rvalue(&self, dump: &CrateDump, body: &Body, rvalue: &Rvalue) -> Set {
        match rvalue {
            // A pointer to an `UnsafeCell` cast to one to what it holds
            // (`UnsafeCell::get`): what it points to is inside the cell.
            Rvalue::Cast { operand: op, .. } if points_to_cell(dump, body, op) => self
                .operand(dump, op)
                .into_iter()
                .map(|t| Target {
                    root: t.root,
                    path: t.path.cell(),
                })
                .collect(),
            // A pointer made from an integer points anywhere.
            Rvalue::Cast {
                operand: op, ty, ..
            } if pointer_type(dump, *ty) && integer_operand(dump, body, op) => {
                Set::from([ELSEWHERE])
            }
            Rvalue::Use(op)
            | Rvalue::Repeat { operand: op, .. }
            | Rvalue::Cast { operand: op, .. } => self.operand(dump, op),
            Rvalue::CopyForDeref(p) => self.place(dump, p),
            Rvalue::Ref { place, .. } | Rvalue::AddressOf { place, .. } => self.memory(dump, place),
            Rvalue::Aggregate { operands, .. } => {
                let mut v = Set::new();
                for op in operands.iter() {
                    union(&mut v, &self.operand(dump, op));
                }
                v
            }
            Rvalue::BinaryOp {
                op: kmir::BinOp::Offset,
                lhs,
                ..
            } => below(&self.operand(dump, lhs)),
            Rvalue::ThreadLocalRef { .. } => Set::from([ELSEWHERE]),
            _ => Set::new(),
        }
    }

    /// The places below `root` the statements or the terminator of `block`
    /// may write (interior writes included), or `None` when the scan cannot
    /// say: it gave up, or a pointer into a guard's data was stored where
    /// the scan does not follow it.
    pub fn written_in(&self, root: Root, block: BlockId) -> Option<Vec<FieldPath>> {
        if matches!(root, Root::Guard(g) if self.data_escaped.contains(&g)) {
            return None;
        }
        self.written_in_ignoring_escapes(root, block)
    }

    /// Like [`Writes::written_in`], but also where a pointer into a guard's
    /// data escaped: the caller sees to the escapes itself
    /// ([`Writes::escapes_of`]). `None` only when the scan gave up.
    pub fn written_in_ignoring_escapes(
        &self,
        root: Root,
        block: BlockId,
    ) -> Option<Vec<FieldPath>> {
        if self.gave_up {
            return None;
        }
        Some(
            self.written
                .iter()
                .filter(|(t, blocks)| {
                    t.root == root && (blocks.contains(&block) || blocks.contains(&ANYWHERE))
                })
                .map(|(t, _)| t.path)
                .collect(),
        )
    }

    /// The blocks where a pointer into the data of guard `g` was stored
    /// where the scan does not follow it (`None`: somewhere it cannot
    /// say). Code given that memory may write the data only on a way that
    /// passes one of them.
    pub fn escapes_of(&self, g: u32) -> Option<Vec<BlockId>> {
        let blocks = self
            .escaped_in
            .get(&g)
            .map(|b| b.iter().copied().collect::<Vec<_>>());
        match blocks {
            Some(b) if b.contains(&ANYWHERE) => None,
            Some(b) => Some(b),
            None => Some(Vec::new()),
        }
    }

    /// Whether the scan settled: where pointers point is known.
    pub fn settled(&self) -> bool {
        !self.gave_up
    }

    /// Whether a pointer into the data of guard `g` was stored where the
    /// scan does not follow it: code given that memory may write the data.
    pub fn data_escaped(&self, g: u32) -> bool {
        self.data_escaped.contains(&g)
    }

    /// The memory `place` designates.
    pub fn place_memory(&self, dump: &CrateDump, place: &Place) -> Vec<Target> {
        self.memory(dump, place).into_iter().collect()
    }

    /// Where the pointer `op` holds may point, then `fields` below that.
    pub fn pointee_fields(&self, dump: &CrateDump, op: &Operand, fields: &[u32]) -> Vec<Target> {
        self.operand(dump, op)
            .into_iter()
            .map(|t| Target {
                root: t.root,
                path: fields.iter().fold(t.path, |p, &f| p.field(f)),
            })
            .collect()
    }

    /// Whether the place at `path` in the data of guard `g` may lie inside
    /// an `UnsafeCell` (a write there through a shared borrow can change
    /// it): as the body's own places with that path say, and `true` for a
    /// path none of them designates.
    pub fn in_cell(&self, g: u32, path: &FieldPath) -> bool {
        !path.exact()
            || path.interior()
            || self
                .named_in_data
                .get(&(g, path.steps().to_vec()))
                .copied()
                .unwrap_or(true)
    }

    /// Whether the value of `op` may hold a pointer to local `l` itself (or
    /// the scan cannot say).
    pub fn may_point_to_local(&self, dump: &CrateDump, op: &Operand, l: u32) -> bool {
        self.gave_up
            || self
                .operand(dump, op)
                .iter()
                .any(|t| t.root == Root::Local(l))
    }

    /// The arguments into whose memory the body stores only pointers
    /// reached from that same argument (`Summary::stores_own`).
    pub fn stores_own(&self, arg_count: u32) -> Vec<u32> {
        if self.gave_up {
            return Vec::new();
        }
        (0..arg_count)
            .filter(|k| !self.foreign_stores.contains(k))
            .collect()
    }

    /// Where each local's pointers may point, for `--trace`.
    pub fn describe_targets(&self) -> String {
        let mut out = Vec::new();
        for (l, ts) in self.targets.iter().enumerate() {
            if ts.is_empty() {
                continue;
            }
            let parts: Vec<String> = ts
                .iter()
                .map(|t| {
                    let root = match t.root {
                        Root::Arg(k) => format!("arg{k}"),
                        Root::Guard(g) => format!("guard _{g}"),
                        Root::Local(m) => format!("_{m}"),
                        Root::Elsewhere => "memory of its own".to_string(),
                    };
                    let at = if t.path.exact() { "at" } else { "below" };
                    format!("{at} {root}{}", t.path.describe())
                })
                .collect();
            out.push(format!("_{l} -> {}", parts.join(", ")));
        }
        out.join("; ")
    }

    /// Whether the body may write at or below what `t` designates, or
    /// above it.
    ///
    /// A write inside an `UnsafeCell` changes only what the cell holds:
    /// never a place reached without going through a cell, which is all
    /// object liveness asks about (a clone's refcount, a node's own lock).
    pub fn may_write(&self, root: Root, path: &FieldPath) -> bool {
        self.written
            .keys()
            .any(|w| w.root == root && !w.path.interior() && w.path.overlaps(path))
    }

    /// Like [`Writes::may_write`], counting only writes that may happen
    /// before the terminator of `block` runs, or by it: in a block from
    /// which `block` is reachable (itself included).
    pub fn may_write_before(&self, root: Root, path: &FieldPath, block: BlockId) -> bool {
        let mut reaching: Option<Vec<bool>> = None;
        self.written.iter().any(|(w, blocks)| {
            if w.root != root || w.path.interior() || !w.path.overlaps(path) {
                return false;
            }
            let r = reaching.get_or_insert_with(|| reaching_blocks(&self.preds, block));
            blocks
                .iter()
                .any(|&b| b == ANYWHERE || r.get(b as usize).copied().unwrap_or(true))
        })
    }

    /// Whether the body may change the bytes of the place `path` below
    /// `root` (at, above or below it, inside a cell too) before the
    /// terminator of `block` runs, or by it. A write through a pointer or a
    /// counted handle stored there changes other memory, not the place.
    pub fn may_change_before(&self, root: Root, path: &FieldPath, block: BlockId) -> bool {
        let mut reaching: Option<Vec<bool>> = None;
        self.written.iter().any(|(w, blocks)| {
            if w.root != root
                || w.path.through_pointer()
                || w.path.through_handle()
                || !w.path.overlaps(path)
            {
                return false;
            }
            let r = reaching.get_or_insert_with(|| reaching_blocks(&self.preds, block));
            blocks
                .iter()
                .any(|&b| b == ANYWHERE || r.get(b as usize).copied().unwrap_or(true))
        })
    }

    /// Like [`Writes::may_write_before`], counting only writes in blocks
    /// a way from the terminator of `after` reaches (`after` itself only
    /// on a loop): what may be written once that terminator has run.
    pub fn may_write_between(
        &self,
        root: Root,
        path: &FieldPath,
        after: BlockId,
        block: BlockId,
    ) -> bool {
        let reaching = reaching_blocks(&self.preds, block);
        let mut later = vec![false; self.preds.len()];
        let mut stack: Vec<BlockId> = (0..self.preds.len())
            .filter(|&b| self.preds[b].contains(&after))
            .map(|b| b as BlockId)
            .collect();
        while let Some(b) = stack.pop() {
            match later.get_mut(b as usize) {
                Some(s) if !*s => *s = true,
                _ => continue,
            }
            stack.extend(
                (0..self.preds.len())
                    .filter(|&n| self.preds[n].contains(&b))
                    .map(|n| n as BlockId),
            );
        }
        self.written.iter().any(|(w, blocks)| {
            w.root == root
                && !w.path.interior()
                && w.path.overlaps(path)
                && blocks.iter().any(|&b| {
                    b == ANYWHERE
                        || (later.get(b as usize).copied().unwrap_or(true)
                            && reaching.get(b as usize).copied().unwrap_or(true))
                })
        })
    }

    /// The writes below `root`, with their blocks, for `--trace`.
    pub fn describe(&self, root: Root) -> String {
        let parts: Vec<String> = self
            .written
            .iter()
            .filter(|(t, _)| t.root == root)
            .map(|(t, blocks)| {
                let blocks: Vec<String> = blocks
                    .iter()
                    .map(|b| {
                        if *b == ANYWHERE {
                            "anywhere".into()
                        } else {
                            format!("bb{b}")
                        }
                    })
                    .collect();
                format!(
                    "{}{} at {}",
                    if t.path.exact() { "" } else { "below " },
                    t.path.describe(),
                    blocks.join(" ")
                )
            })
            .collect();
        parts.join("; ")
    }

    /// The summary's `writes`: in the arguments' terms. A guard's data is
    /// what its lock protects, reached from what the guard points to.
    pub fn summary(&self) -> Vec<(u32, FieldPath)> {
        let mut out = BTreeSet::new();
        for t in self.written.keys() {
            self.in_arg_terms(t, &mut out);
        }
        arg_terms_normalized(out)
    }

    /// The summary's `ret_points`; `None` when the scan gave up.
    pub fn returned(&self) -> Option<Vec<(u32, FieldPath)>> {
        if self.gave_up {
            return None;
        }
        let mut out = BTreeSet::new();
        for t in self.targets.first().into_iter().flatten() {
            self.in_arg_terms(t, &mut out);
        }
        Some(arg_terms_normalized(out))
    }

    /// The summary's `ret_fresh`: whether the result may hold a pointer
    /// to memory none of the arguments reach.
    pub fn returns_elsewhere(&self) -> bool {
        self.gave_up
            || self
                .targets
                .first()
                .is_none_or(|ts| ts.iter().any(|t| t.root == Root::Elsewhere))
    }

    fn in_arg_terms(&self, t: &Target, out: &mut BTreeSet<(u32, FieldPath)>) {
        match t.root {
            Root::Arg(k) => {
                out.insert((k, t.path));
            }
            Root::Guard(g) => {
                for u in self.targets.get(g as usize).into_iter().flatten() {
                    if let Root::Arg(k) = u.root {
                        out.insert((k, u.path.below()));
                    }
                }
            }
            // A local of the body dies with it; other memory is not the
            // arguments'.
            Root::Local(_) | Root::Elsewhere => {}
        }
    }
}

/// A summary's list of places below arguments through [`normalize`]:
/// without it a body writing many fields of an argument would hand every
/// caller as many places to map and store.
fn arg_terms_normalized(out: BTreeSet<(u32, FieldPath)>) -> Vec<(u32, FieldPath)> {
    let mut set: Set = out
        .into_iter()
        .map(|(k, path)| Target {
            root: Root::Arg(k),
            path,
        })
        .collect();
    normalize(&mut set);
    set.into_iter()
        .filter_map(|t| match t.root {
            Root::Arg(k) => Some((k, t.path)),
            _ => None,
        })
        .collect()
}

/// The statements and terminators of a body: what one round of a
/// flow-insensitive scan visits, charged to its step budget.
pub(crate) fn body_size(body: &Body) -> u64 {
    body.blocks
        .iter()
        .map(|b| b.statements.len() as u64 + 1)
        .sum()
}

/// Whether a constant may hold a pointer to memory that can change: one
/// that refers to a static, or an address made from a number. Other
/// constants hold no pointer (null is none), or pointers into immutable
/// constant memory only (a promoted `&"…"`), where no counted handle can
/// be.
fn constant_points(dump: &CrateDump, c: &kmir::Constant) -> bool {
    match &c.value {
        kmir::ConstValue::Memory(m) => !m.statics.is_empty(),
        kmir::ConstValue::Scalar(0) | kmir::ConstValue::ZeroSized => false,
        kmir::ConstValue::Scalar(_) => pointer_type(dump, c.ty),
        kmir::ConstValue::Unevaluated => true,
    }
}

fn pointer_type(dump: &CrateDump, ty: kmir::TyId) -> bool {
    matches!(
        dump.ty(ty).map(|t| &t.kind),
        Some(TyKind::Ref { .. } | TyKind::RawPtr { .. })
    )
}

/// Whether `op` is an integer (cast to a pointer: its provenance is lost).
fn integer_operand(dump: &CrateDump, body: &Body, op: &Operand) -> bool {
    let ty = match op {
        Operand::Copy(p) | Operand::Move(p) => dump.place_ty(body, p),
        Operand::Constant(c) => Some(c.ty),
        Operand::RuntimeChecks(_) => None,
    };
    ty.and_then(|t| dump.ty(t))
        .is_some_and(|t| matches!(t.kind, TyKind::Int(_) | TyKind::Uint(_)))
}

/// Whether `op` is a pointer to an `UnsafeCell`.
fn points_to_cell(dump: &CrateDump, body: &Body, op: &Operand) -> bool {
    let (Operand::Copy(p) | Operand::Move(p)) = op else {
        return false;
    };
    dump.place_ty(body, p)
        .and_then(|t| dump.pointee(t))
        .is_some_and(|t| is_cell(dump, t))
}

/// Whether `op` is a shared reference to a value that holds no
/// `UnsafeCell` in place: a callee given it cannot write the referent's
/// own bytes (only memory behind pointers stored there), so it cannot
/// store a pointer into it either.
fn frozen_borrow(dump: &CrateDump, body: &Body, op: &Operand) -> bool {
    let (Operand::Copy(p) | Operand::Move(p)) = op else {
        return false;
    };
    dump.place_ty(body, p)
        .and_then(|t| dump.ty(t))
        .is_some_and(|t| match t.kind {
            TyKind::Ref {
                mutable: false,
                pointee,
            } => !super::origins::inline_interior(dump, pointee),
            _ => false,
        })
}

pub(super) fn is_cell(dump: &CrateDump, ty: kmir::TyId) -> bool {
    match dump.ty(ty).map(|t| &t.kind) {
        Some(TyKind::Adt { path, .. }) => kmir::UNSAFE_CELLS.contains(&path.as_str()),
        _ => false,
    }
}

pub(crate) fn predecessors(body: &Body) -> Vec<Vec<BlockId>> {
    let mut preds: Vec<Vec<BlockId>> = vec![Vec::new(); body.blocks.len()];
    for (bi, b) in body.blocks.iter().enumerate() {
        for s in b.terminator.kind.successors() {
            if let Some(p) = preds.get_mut(s as usize) {
                p.push(bi as BlockId);
            }
        }
    }
    preds
}

/// The blocks from which `to` is reachable (itself included).
pub(crate) fn reaching_blocks(preds: &[Vec<BlockId>], to: BlockId) -> Vec<bool> {
    let mut seen = vec![false; preds.len()];
    let mut stack = vec![to];
    while let Some(b) = stack.pop() {
        match seen.get_mut(b as usize) {
            Some(s) if !*s => *s = true,
            _ => continue,
        }
        stack.extend(preds[b as usize].iter().copied());
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(path: FieldPath) -> Target {
        Target {
            root: Root::Arg(0),
            path,
        }
    }

    #[test]
    fn a_place_below_a_prefix_covers_the_places_under_it_with_its_marks() {
        let f1 = FieldPath::AT.field(1);
        let f1_2 = f1.field(2);
        let mut set = Set::from([arg(f1.below())]);
        assert!(covered(&set, &arg(f1_2)));
        assert!(covered(&set, &arg(f1_2.below())));
        assert!(!covered(&set, &arg(FieldPath::AT.field(3))));
        // A marked place is not covered by an unmarked one: the readers
        // tell "reached through a counted handle" apart.
        assert!(!covered(&set, &arg(f1_2.handle())));
        // Adding a covered place changes nothing; adding a wider one
        // drops the places it covers.
        assert!(!union(&mut set, &Set::from([arg(f1_2)])));
        assert!(union(&mut set, &Set::from([arg(FieldPath::BELOW)])));
        assert_eq!(set, Set::from([arg(FieldPath::BELOW)]));
    }

    #[test]
    fn past_the_bound_places_of_one_root_widen_to_their_common_prefix() {
        let base = FieldPath::AT.field(4);
        let many: Set = (0..=MAX_PER_ROOT as u32)
            .map(|i| arg(base.field(i)))
            .collect();
        let marked = arg(FieldPath::AT.field(9).handle());
        let other = Target {
            root: Root::Arg(1),
            path: FieldPath::AT.field(0),
        };
        let mut set = Set::from([marked, other]);
        let ((), hits) = bounds::measure(u64::MAX, || {
            assert!(union(&mut set, &many));
        });
        assert_eq!(hits.count(bounds::Bound::Provenance), 1);
        // Somewhere below `.4`: every place it replaced, and nothing of
        // the marked place or of the other root.
        assert_eq!(set, Set::from([arg(base.below()), marked, other]));
        assert!(many.iter().all(|t| covered(&set, t)));
        // Exactly the bound is kept apart.
        let mut set = Set::new();
        let eight: Set = many.iter().take(MAX_PER_ROOT).copied().collect();
        let ((), hits) = bounds::measure(u64::MAX, || {
            union(&mut set, &eight);
        });
        assert!(hits.is_empty());
        assert_eq!(set, eight);
    }

    #[test]
    fn summaries_list_each_place_once_under_what_covers_it() {
        let f1 = FieldPath::AT.field(1);
        let out = BTreeSet::from([(0, f1.below()), (0, f1.field(2)), (1, FieldPath::AT)]);
        assert_eq!(
            arg_terms_normalized(out),
            vec![(0, f1.below()), (1, FieldPath::AT)]
        );
    }
}
