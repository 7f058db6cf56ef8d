//! The wording of the lock-state findings of one function: double
//! acquisition, nesting within one class, locks leaked across a return and
//! locks released without being held.

use findings::{Finding, Loc, Note, Severity};
use program::FnId;
use spec::LockKind;

use crate::body::{LockEvent, Nesting};
use crate::summary::Take;
use crate::{Input, krate_index};
use domains::{Held, has_object};
use memory::Location;

fn name(input: &Input<'_>, f: FnId) -> String {
    input.program.function(f).name.clone()
}

/// A lock path as text in the terms of function `f`.
fn describe(input: &Input<'_>, f: FnId, lock: &Location) -> String {
    let body = input.program.body_of(f).and_then(|(_, i)| i.body.as_ref());
    lock.describe_in(body)
}

pub(crate) fn loc(input: &Input<'_>, f: FnId, span: kmir::Span) -> Loc {
    Loc {
        krate: krate_index(input.program, f),
        span,
    }
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
pub(crate) fn locks_on_return(s: &crate::summary::Summary) -> bool {
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
    lookup: &dyn Fn(FnId) -> crate::summary::Summary,
) -> Finding {
    let is_lock_fn = |g: FnId| locks_on_return(&lookup(g));
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
            "double-lock",
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
            "nested-lock-class",
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
        .subject(class.0.clone())
        .note(Note::at(
            loc(input, f, held.at.span),
            format!(
                "`{held_text}` was acquired here by `{}` and is still held",
                name(input, held.at.callee)
            ),
        ));
    for n in chain_notes(input, take, 1, &is_lock_fn) {
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

/// A lock still held when the function returns.
pub(crate) fn leak(input: &Input<'_>, f: FnId, held: &Held, ret: kmir::Span) -> Finding {
    let class = held.lock.class();
    Finding::new(
        "lock-leak",
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
    ))
    .note(Note::help(
        "release it on every path (drop the guard), return the guard, or, if the caller is meant to release it, declare it with `#[kanalyze::acquires(N)]` (the kernel's `__acquires`)",
    ))
}

/// A lock released that the function did not acquire.
pub(crate) fn unbalanced(
    input: &Input<'_>,
    f: FnId,
    lock: &Location,
    site: Option<(kmir::Span, FnId)>,
) -> Finding {
    let class = lock.class();
    let span = site
        .map(|(s, _)| s)
        .or_else(|| input.program.body_of(f).map(|(_, i)| i.span))
        .unwrap_or_default();
    let mut finding = Finding::new(
        "unbalanced-unlock",
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
    finding
        .note(Note::text(format!(
            "`{}` is not held by the function on this path, and no guard passed to it owns it",
            describe(input, f, lock)
        )))
        .note(Note::help(
            "if callers must hold the lock, make the function `unsafe` with that safety contract, or declare it with `#[kanalyze::releases(N)]` (the kernel's `__releases`)",
        ))
}
