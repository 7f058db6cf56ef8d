//! The lock-state family, per function: double
//! acquisition, nesting within one class, locks leaked across a return and
//! locks released without being held.

use findings::{Finding, Note, Severity};
use program::FnId;
use spec::LockKind;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use analysis::{Events, LockEvent, LockRuns, Nesting, Summaries, Summary, Take};
use annotations::{KanalyzeAnnotation, LockRef};
use domains::{Held, has_object};
use memory::{Location, LockClass};
use program::FnKind;

use crate::Input;
use crate::text::{loc, name};

findings::declare_kind! {
    /// A lock acquired while the same lock object is already held, here or in a
    /// callee: a self-deadlock (AA).
    ///
    /// "The same object" is proven, not guessed: both acquisitions name one
    /// abstract location (`self.inner` twice), or a caller proves it. A
    /// function that holds `self.inner` and calls code taking
    /// `thread.process.inner` cannot tell whether the two are one lock; when
    /// a caller passes `thread.process` as `self`, the two become one location
    /// in the caller's terms, and the nesting is reported here as a double
    /// lock, with the call that proves it (docs/locks.md, "Same-object
    /// proofs"). Trylocks, read-read nesting and re-acquisition after a
    /// callee released the lock (`CondVar::wait`) are not double locks.
    ///
    /// Example:
    ///
    /// ```text
    /// let a = self.inner.lock();
    /// let n = self.inner.lock().len();   // error: the same lock, still held
    /// ```
    ///
    /// Fix: use the guard you hold (`a.len()`), or drop it first.
    pub DOUBLE_LOCK, "double-lock", Error, "lock state",
    "a lock acquired while the same lock object is already held, here or in a callee (see docs/locks.md)"
}

findings::declare_kind! {
    /// A second lock of one class acquired while one of that class is held. Two
    /// instances nested deliberately (parent, then child) are declared with
    /// `#[kanalyze::nested_lock(subclass = K)]`; otherwise this is a likely
    /// self-deadlock that the analysis cannot prove is on one object.
    ///
    /// Where a caller passes arguments that make the two locks one object,
    /// the warning is replaced by a `double-lock` error at the same place;
    /// what stays a warning is a nesting no caller in the program proves
    /// (two instances are possible, and then another path nesting them the
    /// other way round would deadlock against this one).
    ///
    /// Example:
    ///
    /// ```text
    /// let a = parent.inner.lock();
    /// let b = child.inner.lock();   // warning: two locks of class `Node.inner`
    /// ```
    ///
    /// Fix: declare an order with `#[kanalyze::nested_lock(subclass = 1)]` if the nesting is parent-then-child by design; otherwise take one at a time.
    pub NESTED_LOCK_CLASS, "nested-lock-class", Warning, "lock state",
    "a second lock of one class acquired while one is held; `#[kanalyze::nested_lock(subclass = K)]` declares deliberate nesting"
}

findings::declare_kind! {
    /// A function returns holding a lock it acquired, and no guard in its
    /// return value owns it. Declare it with `#[kanalyze::acquires(..)]` if the
    /// caller is meant to release it. An `unsafe fn` may leave the lock to its
    /// caller by its safety contract, but only where a caller in the program
    /// takes it over (releases it, or keeps it in a guard, as the kernel's
    /// `Lock::lock` does with what `Backend::lock` takes); one that nothing
    /// calls, or whose callers all leave the lock held too, is reported.
    ///
    /// Example:
    ///
    /// ```text
    /// pub fn exit(&self) {
    ///     let g = self.inner.lock();
    ///     core::mem::forget(g);   // error: returns with the lock held
    /// }
    /// ```
    ///
    /// Fix: drop the guard; if the caller is meant to release the lock, declare `#[kanalyze::acquires(0)]`.
    pub LOCK_LEAK, "lock-leak", Error, "lock state",
    "a function returns holding a lock it acquired and no guard in its return value owns (an `unsafe fn` only where no caller takes it over)"
}

findings::declare_kind! {
    /// A function releases a lock it did not acquire and no guard passed to
    /// it owns. Declare `#[kanalyze::releases(..)]` or `must_hold` if that is its
    /// contract. An `unsafe fn` may release a lock its callers hold by
    /// contract, but only where some caller in the program holds a lock of
    /// that class when it calls it; for a static lock that means a caller
    /// that acquired it (a release with no acquire on any caller's path is
    /// unbalanced).
    ///
    /// Example:
    ///
    /// ```text
    /// pub fn done(l: &SpinLock<u32>) {
    ///     unsafe { l.unlock_raw() }   // error: not acquired here, no guard passed
    /// }
    /// ```
    ///
    /// Fix: release through the guard that acquired it; if callers hold the lock by contract, make the function `unsafe` or declare `#[kanalyze::releases(0)]`.
    pub UNBALANCED_UNLOCK, "unbalanced-unlock", Error, "lock state",
    "a function releases a lock it did not acquire and no guard passed to it owns (an `unsafe fn` only where no caller holds it)"
}

/// A lock path as text in the terms of function `f`.
fn describe(input: &Input<'_>, f: FnId, lock: &Location) -> String {
    let body = input.program.body(f);
    lock.describe_in(body.as_deref())
}

/// "lock `Binder.inner` (spin)", or the global context a kind stands for.
pub(crate) fn lock_phrase(lock: &Location, kind: LockKind) -> String {
    if has_object(kind) {
        format!("lock `{}` ({kind})", lock.class())
    } else {
        match kind {
            LockKind::Rcu => "the RCU read-side critical section".to_string(),
            LockKind::Irq => "the interrupts-disabled section".to_string(),
            LockKind::Bh => "the bottom-halves-disabled section".to_string(),
            _ => "the preemption-disabled section".to_string(),
        }
    }
}

pub(crate) fn held_phrase(h: &Held) -> String {
    lock_phrase(&h.lock, h.kind)
}

/// Notes following a take down its call chain, from `via[start]`: where
/// each function calls the next, until the call of a locking function
/// (one that returns holding a lock, like `Lock::lock`: its insides are the
/// lock API's business, not the reader's).
pub(crate) fn chain_notes(
    input: &Input<'_>,
    take: &Take,
    start: usize,
    locks_on_return: &dyn Fn(FnId) -> bool,
) -> Vec<Note> {
    const SHOWN: usize = 6;
    let via = &take.via;
    let mut notes = Vec::new();
    if via.get(start).is_some_and(|(g, _)| locks_on_return(*g)) {
        return notes;
    }
    for i in start..via.len().min(start + SHOWN) {
        let (g, span) = via[i];
        let class = take.lock.class();
        let (text, stop) = match via.get(i + 1) {
            None => (
                format!("`{}` acquires `{class}` here", name(input, g)),
                true,
            ),
            Some((n, _)) if locks_on_return(*n) => (
                format!(
                    "`{}` acquires `{class}` here, by calling `{}`",
                    name(input, g),
                    name(input, *n)
                ),
                true,
            ),
            Some((n, _)) => (
                format!("`{}` calls `{}` here", name(input, g), name(input, *n)),
                false,
            ),
        };
        notes.push(Note::at(loc(input, g, span), text));
        if stop {
            break;
        }
    }
    notes
}

/// Whether a summary says the function returns holding a lock it took.
pub(crate) fn locks_on_return(s: &Summary) -> bool {
    s.cases.iter().any(|c| !c.acquire.is_empty())
}

/// Where a take happens in the function whose summary holds it.
pub(crate) fn take_site(take: &Take) -> (FnId, kmir::Span) {
    take.via.first().copied().unwrap_or((take.func, take.span))
}

pub(crate) fn event(
    input: &Input<'_>,
    f: FnId,
    e: &LockEvent,
    summaries: &dyn Summaries,
) -> Finding {
    let is_lock_fn = |g: FnId| locks_on_return(summaries.get(g));
    let Nesting {
        held,
        take,
        site,
        callee,
    } = &e.nesting;
    let class = held.lock.class();
    let held_text = describe(input, f, &held.lock);
    let (kind, severity, message, label, closing) = if e.same_object {
        (
            &DOUBLE_LOCK,
            Severity::Error,
            format!("lock `{class}` is acquired while it is already held"),
            format!("`{}` acquires it again here", name(input, *callee)),
            Note::text(format!(
                "both acquisitions name the same lock object, `{held_text}`: a {} lock is not recursive, so this deadlocks",
                held.kind
            )),
        )
    } else {
        (
            &NESTED_LOCK_CLASS,
            Severity::Warning,
            format!("a second lock of class `{class}` is acquired while one is held"),
            format!(
                "`{}` acquires `{}`",
                name(input, *callee),
                describe(input, f, &take.lock)
            ),
            Note::text(
                "if both are the same object this deadlocks; if they are two instances, another path that nests them the other way round deadlocks against this one",
            ),
        )
    };
    let mut finding = Finding::new(kind, severity, message)
        .at(loc(input, f, *site))
        .label(label)
        .in_function(f)
        .subject(class.0.clone());
    for n in nesting_notes(input, f, &held_text, held, take, &is_lock_fn) {
        finding = finding.note(n);
    }
    finding = finding.note(closing);
    if !e.same_object {
        finding = finding.note(Note::help(
            "if the nesting follows an order (parent before child), say so with `#[kanalyze::nested_lock(subclass = 1)]` on this function",
        ));
    }
    finding
}

/// The notes of a nesting, in the terms of `f`: where the held lock was
/// acquired, then the chain down to the second acquisition.
fn nesting_notes(
    input: &Input<'_>,
    f: FnId,
    held_text: &str,
    held: &Held,
    take: &Take,
    is_lock_fn: &dyn Fn(FnId) -> bool,
) -> Vec<Note> {
    let mut notes = vec![Note::at(
        loc(input, f, held.at.span),
        format!(
            "`{held_text}` was acquired here by `{}` and is still held",
            name(input, held.at.callee)
        ),
    )];
    notes.extend(chain_notes(input, take, 1, is_lock_fn));
    notes
}

/// A callee's nesting of one lock class proven to be on one object by a
/// caller: a double lock, reported where the nesting happens (in
/// `proof.origin`), with the call that makes the two locations one object.
pub(crate) fn proven(
    input: &Input<'_>,
    prover: FnId,
    e: &LockEvent,
    summaries: &dyn Summaries,
) -> Option<Finding> {
    let proof = e.proof.as_ref()?;
    let origin = proof.origin;
    let is_lock_fn = |g: FnId| locks_on_return(summaries.get(g));
    let Nesting {
        held,
        take,
        site,
        callee,
    } = &e.nesting;
    let class = held.lock.class();
    let held_text = describe(input, origin, &held.lock);
    let take_text = describe(input, origin, &take.lock);
    let one = describe(input, prover, &proof.lock);
    let mut finding = Finding::new(
        &DOUBLE_LOCK,
        Severity::Error,
        format!("lock `{class}` is acquired while it is already held"),
    )
    .at(loc(input, origin, *site))
    .label(format!(
        "`{}` acquires `{take_text}`, which is `{held_text}` itself",
        name(input, *callee)
    ))
    .in_function(origin)
    .trace_from(prover)
    .subject(class.0.clone());
    for n in nesting_notes(input, origin, &held_text, held, take, &is_lock_fn) {
        finding = finding.note(n);
    }
    // From the origin up to the call that proves it.
    let last = proof.via.len().saturating_sub(1);
    for (i, (g, span)) in proof.via.iter().enumerate().rev() {
        let text = if i == 0 {
            format!(
                "`{}` makes them one object: both are `{one}` at this call",
                name(input, *g)
            )
        } else if i == last {
            format!(
                "`{}` is called from here, in `{}`",
                name(input, origin),
                name(input, *g)
            )
        } else {
            format!("which is called from here, in `{}`", name(input, *g))
        };
        finding = finding.note(Note::at(loc(input, *g, *span), text));
    }
    Some(finding.note(Note::text(format!(
        "`{held_text}` and `{take_text}` are two paths to one lock object: a {} lock is not recursive, so this deadlocks",
        held.kind
    ))))
}

/// A lock still held when the function returns.
pub(crate) fn leak(
    input: &Input<'_>,
    f: FnId,
    held: &Held,
    ret: kmir::Span,
    unsafe_fn: bool,
) -> Finding {
    let class = held.lock.class();
    let finding = Finding::new(
        &LOCK_LEAK,
        Severity::Error,
        format!("`{}` returns with {} held", name(input, f), held_phrase(held)),
    )
    .at(loc(input, f, held.at.span))
    .label(format!(
        "acquired here by `{}`",
        name(input, held.at.callee)
    ))
    .in_function(f)
    .subject(class.0.clone())
    .note(Note::at(
        loc(input, f, ret),
        "the function returns here with the lock held, and no guard in its return value releases it",
    ));
    let finding = if unsafe_fn {
        finding.note(handover_note(input, f, false))
    } else {
        finding
    };
    finding.note(Note::help(
        "release it on every path (drop the guard), return the guard, or, if the caller is meant to release it, declare it with `#[kanalyze::acquires(N)]` (the kernel's `__acquires`)",
    ))
}

/// A lock released that the function did not acquire.
pub(crate) fn unbalanced(
    input: &Input<'_>,
    f: FnId,
    lock: &Location,
    site: Option<(kmir::Span, FnId)>,
    unsafe_fn: bool,
) -> Finding {
    let class = lock.class();
    let span = site
        .map(|(s, _)| s)
        .or_else(|| input.program.body_of(f).map(|(_, i)| i.span))
        .unwrap_or_default();
    let mut finding = Finding::new(
        &UNBALANCED_UNLOCK,
        Severity::Error,
        format!(
            "`{}` releases lock `{class}`, which it did not acquire",
            name(input, f)
        ),
    )
    .at(loc(input, f, span))
    .in_function(f)
    .subject(class.0.clone());
    if let Some((_, callee)) = site {
        finding = finding.label(format!("released here by `{}`", name(input, callee)));
    }
    let finding = finding.note(Note::text(format!(
        "`{}` is not held by the function on this path, and no guard passed to it owns it",
        describe(input, f, lock)
    )));
    if unsafe_fn {
        finding
            .note(handover_note(input, f, true))
            .note(Note::help(
                "release the lock the function acquired; if callers must hold this one, declare it with `#[kanalyze::releases(N)]` (the kernel's `__releases`)",
            ))
    } else {
        finding.note(Note::help(
            "if callers must hold the lock, make the function `unsafe` with that safety contract, or declare it with `#[kanalyze::releases(N)]` (the kernel's `__releases`)",
        ))
    }
}

/// What a function's own declarations and shape excuse about its lock
/// balance: `kanalyze::acquires/releases/must_hold`, a klint adjustment,
/// a guard stored through an argument, a closure's environment.
struct Excuses<'a> {
    declared: Vec<&'a KanalyzeAnnotation>,
    stores_guard: bool,
    closure: bool,
    declares_adjust: bool,
}

impl<'a> Excuses<'a> {
    fn of(input: &'a Input<'_>, f: FnId, declares_adjust: bool) -> Option<Excuses<'a>> {
        let (_, inst) = input.program.body_of(f)?;
        let body = input.program.body(f)?;
        Some(Excuses {
            declared: input
                .annotations
                .get(inst.item_path.as_str())
                .into_iter()
                .flat_map(|a| a.kanalyze.iter().map(|(k, _)| k))
                .collect(),
            stores_guard: stores_guard_through_args(input, f, &body),
            closure: inst.kind == kmir::InstanceKind::Closure,
            declares_adjust,
        })
    }

    fn declares(&self, lock: &Location, what: fn(&KanalyzeAnnotation) -> Option<LockRef>) -> bool {
        self.declared.iter().any(|a| match what(a) {
            Some(LockRef::Arg(n)) => lock.arg() == Some(n + 1),
            Some(LockRef::Return) => true,
            None => false,
        })
    }

    /// A lock held at a return that the function may leave held.
    fn leak(&self, held: &Held, owned: bool) -> bool {
        let acquires = self.declares(&held.lock, |a| match a {
            KanalyzeAnnotation::Acquires(r) => Some(*r),
            _ => None,
        });
        // A klint annotation that the function moves the preemption
        // count says it returns holding a spinning lock on purpose.
        let declared_by_klint = self.declares_adjust && !held.kind.may_sleep_while_held();
        // A closure's environment holds what its creator lent it: a
        // relock in a cleanup closure (`do_unlocked`) restores the
        // creator's guard.
        let env_lock = self.closure && held.lock.arg() == Some(1);
        owned || env_lock || acquires || self.stores_guard || declared_by_klint
    }

    /// A lock released that the function did not acquire, which it may.
    fn release(&self, lock: &Location) -> bool {
        // The global contexts' balance is the preemption count's (and
        // an RCU guard's `Drop` ends a section its creator began).
        lock.is_global()
            || lock.through_stored_pointer()
            || (self.closure && lock.arg() == Some(1))
            || self.declares_adjust
            || self.declares(lock, |a| match a {
                KanalyzeAnnotation::Releases(r) | KanalyzeAnnotation::MustHold(r) => Some(*r),
                _ => None,
            })
    }
}

/// How deep [`Handover`] follows chains of `unsafe fn`s up their callers.
const MAX_HANDOVER_DEPTH: usize = 8;

/// Whether the lock state an `unsafe fn` leaves (a lock held on return, a
/// lock released that it did not take) is taken over by a caller, as the
/// kernel's `Lock::lock` takes over what `Backend::lock` acquires: a safety
/// contract is only trusted where the program shows a caller keeping it.
/// An `unsafe fn` nothing in the program calls (and C cannot call: not
/// exported, not in a static), or whose every caller leaves the same state
/// behind, is held to the rules of a safe function.
pub(crate) struct Handover<'a> {
    input: &'a Input<'a>,
    events: HashMap<FnId, &'a Events>,
    /// Functions code outside the program can call: exported, stored in a
    /// static, or turned into a pointer (passed to C as a callback); and
    /// trait methods nothing calls, which generic code the program does not
    /// instantiate calls under the trait's contract (`Backend::lock`).
    c_callable: HashSet<FnId>,
    leaks: RefCell<HashMap<FnId, bool>>,
    releases: RefCell<HashMap<(FnId, LockClass), bool>>,
}

impl<'a> Handover<'a> {
    pub(crate) fn new(input: &'a Input<'a>, events: &'a [(FnId, Events)]) -> Handover<'a> {
        Handover {
            input,
            events: events.iter().map(|(f, e)| (*f, e)).collect(),
            c_callable: input
                .program
                .roots
                .iter()
                .map(|(f, _)| *f)
                .chain(input.program.address_taken.iter().copied())
                .collect(),
            leaks: RefCell::default(),
            releases: RefCell::default(),
        }
    }

    /// Whether callers outside the program may take `f`'s lock state over.
    fn outside_callers(&self, f: FnId) -> bool {
        self.c_callable.contains(&f)
            || (self
                .input
                .program
                .body_of(f)
                .is_some_and(|(_, i)| i.trait_item.is_some())
                && self.callers(f).is_empty())
    }

    fn is_unsafe(&self, f: FnId) -> bool {
        self.input
            .program
            .body_of(f)
            .is_some_and(|(_, i)| i.unsafe_fn && !matches!(i.kind, kmir::InstanceKind::Shim { .. }))
    }

    /// The callers of `f` in the program (not `f` itself).
    fn callers(&self, f: FnId) -> Vec<FnId> {
        let mut v: Vec<FnId> = self
            .input
            .program
            .callers(f)
            .into_iter()
            .map(|(g, _)| g)
            .filter(|g| *g != f)
            .collect();
        v.dedup();
        v
    }

    /// Whether some caller takes over the locks the `unsafe fn` `f`
    /// returns holding: releases them, or owns them in a guard it returns
    /// or stores, or declares them, or hands them on to its own caller the
    /// same way.
    pub(crate) fn leak_taken_over(&self, f: FnId) -> bool {
        self.leak_taken_over_at(f, 0)
    }

    fn leak_taken_over_at(&self, f: FnId, depth: usize) -> bool {
        if depth > MAX_HANDOVER_DEPTH || self.outside_callers(f) {
            return true;
        }
        if let Some(v) = self.leaks.borrow().get(&f) {
            return *v;
        }
        // A cycle of callers is assumed to take it over until it settles.
        self.leaks.borrow_mut().insert(f, true);
        let v = self
            .callers(f)
            .into_iter()
            .any(|g| !self.keeps_leak_from(g, f, depth));
        self.leaks.borrow_mut().insert(f, v);
        v
    }

    /// Whether caller `g` also returns holding, unexcused, a lock that a
    /// call to `f` acquired.
    fn keeps_leak_from(&self, g: FnId, f: FnId, depth: usize) -> bool {
        let Some(events) = self.events.get(&g) else {
            return false;
        };
        let excuses = Excuses::of(self.input, g, events.declares_adjust);
        events.locks.leaks.iter().any(|l| {
            l.held.at.callee == f
                && !excuses.as_ref().is_some_and(|e| e.leak(&l.held, l.owned))
                && !(self.is_unsafe(g) && self.leak_taken_over_at(g, depth + 1))
        })
    }

    /// Whether some caller of the `unsafe fn` `f` holds a lock of `class`
    /// when `f` releases one: it does not itself release one it did not
    /// take, or that release is excused there.
    pub(crate) fn release_covered(&self, f: FnId, class: &LockClass) -> bool {
        self.release_covered_at(f, class, 0)
    }

    fn release_covered_at(&self, f: FnId, class: &LockClass, depth: usize) -> bool {
        if depth > MAX_HANDOVER_DEPTH || self.outside_callers(f) {
            return true;
        }
        let key = (f, class.clone());
        if let Some(v) = self.releases.borrow().get(&key) {
            return *v;
        }
        self.releases.borrow_mut().insert(key.clone(), true);
        let v = self
            .callers(f)
            .into_iter()
            .any(|g| !self.releases_unheld(g, class, depth));
        self.releases.borrow_mut().insert(key, v);
        v
    }

    /// Whether `g` releases, unexcused, a lock of `class` it did not take.
    fn releases_unheld(&self, g: FnId, class: &LockClass, depth: usize) -> bool {
        let Some(events) = self.events.get(&g) else {
            return false;
        };
        let excuses = Excuses::of(self.input, g, events.declares_adjust);
        events.locks.released.iter().any(|l| {
            l.class() == class
                && !excuses.as_ref().is_some_and(|e| e.release(l))
                && !(self.is_unsafe(g) && self.release_covered_at(g, class, depth + 1))
        })
    }

    /// Whether an unexcused release of `lock` in `g` comes from a callee
    /// `unsafe fn` that is reported for it already.
    fn released_by_reported_callee(&self, g: FnId, lock: &Location) -> bool {
        let class = lock.class();
        self.input.program.callees(g).into_iter().any(|(h, _)| {
            h != g
                && self.is_unsafe(h)
                && self.events.get(&h).is_some_and(|e| {
                    let excuses = Excuses::of(self.input, h, e.declares_adjust);
                    e.locks.released.iter().any(|l| {
                        l.class() == class && !excuses.as_ref().is_some_and(|x| x.release(l))
                    })
                })
                && !self.release_covered(h, class)
        })
    }
}

/// Why an `unsafe fn` is held to a safe function's balance.
fn handover_note(input: &Input<'_>, f: FnId, released: bool) -> Note {
    let what = if released {
        "releases a lock it did not take"
    } else {
        "returns holding a lock"
    };
    let why = if input.program.callers(f).iter().all(|(g, _)| *g == f) {
        "nothing in the program calls it".to_string()
    } else if released {
        "no caller in the program holds that lock when it calls it".to_string()
    } else {
        "no caller in the program releases that lock or keeps it in a guard".to_string()
    };
    Note::text(format!(
        "`{}` is an `unsafe fn` that {what}, which its safety contract may leave to its caller, but {why}",
        name(input, f)
    ))
}

/// The lock-state findings of one function from its runs' lock results.
pub(crate) fn findings(
    input: &Input<'_>,
    f: FnId,
    runs: &LockRuns,
    summaries: &dyn Summaries,
    declares_adjust: bool,
    proven: &[(FnId, kmir::Span)],
    handover: &Handover<'_>,
) -> Vec<Finding> {
    let Some((_, inst)) = input.program.body_of(f) else {
        return Vec::new();
    };
    let Some(excuses) = Excuses::of(input, f, declares_adjust) else {
        return Vec::new();
    };
    let nested = excuses
        .declared
        .iter()
        .any(|a| matches!(a, KanalyzeAnnotation::NestedLock { .. }));
    let mut out = Vec::new();
    let mut seen_sites = Vec::new();
    for e in &runs.events {
        let site = e.nesting.site;
        // Proven nestings are reported once for the whole program
        // (`proven`), and replace the class warning at their site.
        if e.proof.is_some() || proven.contains(&(f, site)) {
            continue;
        }
        if (!e.same_object && nested) || seen_sites.contains(&site) {
            continue;
        }
        seen_sites.push(site);
        out.push(event(input, f, e, summaries));
    }
    // Balance: not for glue; an `unsafe fn` may leave lock state to its
    // caller by contract where a caller takes it over (`Handover`).
    if matches!(inst.kind, kmir::InstanceKind::Shim { .. }) {
        return out;
    }
    let unsafe_fn = inst.unsafe_fn;
    if !unsafe_fn || !handover.leak_taken_over(f) {
        for held_at_return in &runs.leaks {
            let (held, ret, owned) = (
                &held_at_return.held,
                &held_at_return.ret,
                held_at_return.owned,
            );
            // An `unsafe fn` whose return value says whether it took the
            // lock (the kernel's `Backend::try_lock`) hands it over through
            // that value, like C's `spin_trylock`.
            let by_return = unsafe_fn && acquired_per_return(summaries.get(f), &held.lock);
            if !excuses.leak(held, owned)
                && !by_return
                && leak_starts_here(input, held, summaries, handover)
            {
                out.push(leak(input, f, held, *ret, unsafe_fn));
            }
        }
    }
    for lock in &runs.released {
        if excuses.release(lock) {
            continue;
        }
        if unsafe_fn {
            if !handover.release_covered(f, lock.class()) {
                out.push(unbalanced(input, f, lock, release_site(input, f), true));
            }
        } else if !handover.released_by_reported_callee(f, lock) {
            out.push(unbalanced(input, f, lock, release_site(input, f), false));
        }
    }
    out
}

/// Whether the summary's cases tell by the returned value whether `lock`
/// is held on return: one case acquires it, another with a different
/// returned value does not.
fn acquired_per_return(summary: &Summary, lock: &Location) -> bool {
    let takes = |c: &analysis::Case| c.acquire.iter().any(|a| &a.lock == lock);
    summary.cases.iter().any(|a| {
        takes(a)
            && a.ret.is_some()
            && summary
                .cases
                .iter()
                .any(|b| !takes(b) && b.ret.is_some() && b.ret != a.ret)
    })
}

/// Whether a lock still held at a return was lost here: taken by a C lock
/// function or an `unsafe fn` (whose contract hands it over), or returned
/// inside a guard that this function then forgot. A lock a safe callee
/// already leaked is reported in that callee, not again in every caller.
fn leak_starts_here(
    input: &Input<'_>,
    held: &Held,
    summaries: &dyn Summaries,
    handover: &Handover<'_>,
) -> bool {
    let callee = held.at.callee;
    match input.program.body_of(callee) {
        None => true,
        // Unless no caller takes it over: then it is reported there.
        Some((_, inst)) if inst.unsafe_fn => handover.leak_taken_over(callee),
        Some(_) => summaries.get(callee).cases.iter().any(|c| {
            !c.acquire.is_empty()
                && c.acquire.iter().all(|a| {
                    let l = &a.lock;
                    c.ret_addrs
                        .iter()
                        .any(|(_, r)| r.root == l.root && l.steps.starts_with(&r.steps))
                })
        }),
    }
}

/// The first call in `f` whose callee releases a lock.
fn release_site(input: &Input<'_>, f: FnId) -> Option<(kmir::Span, FnId)> {
    let summaries_release = |g: FnId| match &input.program.function(g).kind {
        FnKind::Foreign => input
            .spec
            .lookup(&input.program.function(g).symbol)
            .and_then(|s| s.lock.as_ref())
            .is_some_and(|l| l.op == spec::LockOp::Release),
        _ => false,
    };
    input
        .program
        .callees(f)
        .into_iter()
        .find(|(g, _)| summaries_release(*g))
        .map(|(g, e)| (e.span, g))
}

/// Whether `f` stores a guard-like value through one of its arguments
/// (`self.guard = Some(lock.lock())`): the lock then stays held on return
/// by design, owned by the caller's memory.
fn stores_guard_through_args(input: &Input<'_>, f: FnId, body: &kmir::Body) -> bool {
    let Some((krate, _)) = input.program.body_of(f) else {
        return false;
    };
    let dump = &krate.dump;
    let guardish = |ty: kmir::TyId| dump.ty(ty).is_some_and(|t| t.display.contains("Guard"));
    let mut stores = false;
    kmir::visit::for_each_assign(body, |place, rvalue, _| {
        if stores
            || !(1..=body.arg_count).contains(&place.local)
            || !place.projection.contains(&kmir::Projection::Deref)
        {
            return;
        }
        stores = match rvalue {
            kmir::Rvalue::Use(kmir::Operand::Move(p) | kmir::Operand::Copy(p)) => body
                .local(p.local)
                .is_some_and(|l| p.projection.is_empty() && guardish(l.ty)),
            kmir::Rvalue::Aggregate { operands, .. } => operands.iter().any(|o| match o {
                kmir::Operand::Move(p) | kmir::Operand::Copy(p) => {
                    body.local(p.local).is_some_and(|l| guardish(l.ty))
                }
                _ => false,
            }),
            _ => false,
        };
    });
    stores
}
