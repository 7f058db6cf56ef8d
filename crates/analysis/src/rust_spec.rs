//! What the spec's `[rust]` table says of a Rust item's locking and
//! blocking (`lock`, `blocks`): the lock in the item's own terms (what its
//! argument points to, then the fields the entry names), and the summary
//! that follows — over the body's, which still says what the returned
//! value points to (the guard's pointer to its lock), or alone for an item
//! the program has no body of (`std::thread::sleep`).

use annotations::ExpectRange;
use memory::{Location, Root, Step};
use program::FnId;
use spec::{LockOp, RustLock, RustSpec};

use crate::external::{effect_cases, effect_takes};
use crate::summary::{Source, Summary};

/// Types whose values are pointers a field path goes through (Rust's
/// auto-deref): references, raw pointers, `NonNull`.
fn declared_pointee(declared: &str) -> Option<&str> {
    let t = declared.trim();
    if let Some(rest) = t.strip_prefix('&') {
        // `&'a mut T`, `&T`.
        let rest = rest.trim_start();
        let rest = match rest.strip_prefix('\'') {
            Some(r) => r.split_once(' ').map_or("", |(_, r)| r),
            None => rest,
        };
        return Some(rest.strip_prefix("mut ").unwrap_or(rest).trim());
    }
    if let Some(rest) = t
        .strip_prefix("*const ")
        .or_else(|| t.strip_prefix("*mut "))
    {
        return Some(rest.trim());
    }
    let base = t.split('<').next().unwrap_or(t);
    if base == "core::ptr::non_null::NonNull" || base == "std::ptr::NonNull" {
        let inner = t.get(base.len() + 1..t.len().saturating_sub(1))?;
        return Some(inner.trim());
    }
    None
}

/// The path of the ADT a declared type names (`spin::rwlock::RwLock<T, R>`
/// → `spin::rwlock::RwLock`).
fn adt_path(declared: &str) -> &str {
    declared.split('<').next().unwrap_or(declared).trim()
}

/// The lock `lock` names, in the terms of the function whose body is
/// `body`: argument `arg`'s pointee, then each field of the entry's path
/// (dereferenced where it holds a pointer). `None` when the argument or a
/// field does not exist: the entry is then ignored for this function (the
/// spec's arity check reports an argument past the last).
pub(crate) fn lock_location(
    dump: &kmir::CrateDump,
    body: &kmir::Body,
    lock: &RustLock,
) -> Option<Location> {
    let Some(arg) = lock.effect.arg else {
        return Some(global(lock.effect.kind));
    };
    let local = body.local(arg + 1)?;
    let display = |id| {
        dump.ty(id)
            .map_or_else(|| "?".to_string(), |t| t.display.to_string())
    };
    let root = Root::Arg {
        index: arg + 1,
        ty: display(local.ty),
    };
    // A reference is followed to what it points to; a value passed by
    // value (a guard handed to `Condvar::wait` or consumed by
    // `downgrade`) is the place its fields are looked up in.
    let (mut loc, owner_ty) = match dump.pointee(local.ty) {
        Some(pointee) => (
            Location::from_parts(
                root,
                vec![Step::Deref {
                    to: display(pointee),
                }],
            ),
            pointee,
        ),
        None if !lock.fields.is_empty() => (Location::from_parts(root, Vec::new()), local.ty),
        None => return None,
    };
    // The ADT the next field is looked up in.
    let mut owner = dump.adt_of(owner_ty)?;
    let mut fields = lock.fields.iter().peekable();
    while let Some(name) = fields.next() {
        let variant = owner.variants.first()?;
        let index = variant
            .fields
            .iter()
            .position(|f| f.name.as_str() == name)?;
        let field = &variant.fields[index];
        loc = loc.with(Step::Field {
            index: u32::try_from(index).ok()?,
            owner: owner.path.to_string(),
            name: name.clone(),
        })?;
        let declared = field.ty.as_str();
        let target = match declared_pointee(declared) {
            Some(to) => {
                loc = loc.with(Step::Deref { to: to.to_string() })?;
                to
            }
            None => declared,
        };
        if fields.peek().is_some() {
            owner = dump.adt(adt_path(target))?;
        }
    }
    Some(loc)
}

/// Where the guard a lock function returns points to its lock, as the
/// entry's `guard` says: at the guard's field of that name, the guard
/// being the returned value or, for a `try_acquire`, the payload of the
/// success variant (`Ok(guard)`, `Some(guard)`).
pub(crate) fn guard_pointer(
    dump: &kmir::CrateDump,
    body: &kmir::Body,
    lock: &RustLock,
    loc: &Location,
) -> Option<(Vec<memory::ProjKey>, Location)> {
    use memory::ProjKey;
    let field = lock.guard.as_deref()?;
    let ret = body.local(0)?.ty;
    let (mut proj, guard_ty) = match lock.effect.op {
        LockOp::TryAcquire {
            success: spec::TrySuccess::ReturnsOk,
        } => (
            vec![ProjKey::Downcast(0), ProjKey::Field(0)],
            payload(dump, ret)?,
        ),
        LockOp::TryAcquire {
            success: spec::TrySuccess::ReturnsSome,
        } => (
            vec![ProjKey::Downcast(1), ProjKey::Field(0)],
            payload(dump, ret)?,
        ),
        // A lock that cannot fail but reports poisoning returns its guard
        // in `Ok` (`Condvar::wait`'s `LockResult`).
        _ if dump
            .adt_of(ret)
            .is_some_and(|a| a.path.as_str() == "core::result::Result") =>
        {
            (
                vec![ProjKey::Downcast(0), ProjKey::Field(0)],
                payload(dump, ret)?,
            )
        }
        _ => (Vec::new(), ret),
    };
    // Down the guard's fields to the one holding the pointer, each but the
    // last held inline (`spin::MutexGuard { inner: SpinMutexGuard { lock } }`).
    let mut adt = dump.adt_of(guard_ty)?;
    let mut names = field.split('.').peekable();
    while let Some(name) = names.next() {
        let fields = &adt.variants.first()?.fields;
        let index = fields.iter().position(|f| f.name.as_str() == name)?;
        proj.push(ProjKey::Field(u32::try_from(index).ok()?));
        if names.peek().is_some() {
            let declared = fields[index].ty.as_str();
            if declared_pointee(declared).is_some() {
                return None;
            }
            adt = dump.adt(adt_path(declared))?;
        }
    }
    Some((proj, loc.clone()))
}

/// The payload type of a `Result<T, E>` or an `Option<T>`: its first
/// generic argument.
fn payload(dump: &kmir::CrateDump, ty: kmir::TyId) -> Option<kmir::TyId> {
    match &dump.ty(ty)?.kind {
        kmir::TyKind::Adt { args, .. } => args.first().copied(),
        _ => None,
    }
}

/// The "lock" of a global context (interrupts off, a critical section).
fn global(kind: spec::LockKind) -> Location {
    Location::new(Root::Static(format!("<{kind}>")))
}

/// The count change of taking (or releasing) a lock of `kind`: a lock
/// that spins, or a context without preemption, makes the context atomic
/// while held; a sleeping lock does not.
fn spin_adjust(kind: spec::LockKind, op: LockOp) -> i32 {
    if kind.may_sleep_while_held() {
        return 0;
    }
    match op {
        LockOp::Acquire => 1,
        LockOp::Release => -1,
        // Raised on success only (`effect_cases`).
        LockOp::TryAcquire { .. } => 0,
    }
}

/// The summary of a Rust item the spec describes and the program has no
/// body of.
pub(crate) fn without_body(path: &str, rust: &RustSpec, f: FnId) -> Summary {
    let mut summary = Summary::fixed(
        0,
        ExpectRange::TOP,
        Source::RustSpec {
            path: path.to_string(),
        },
    );
    // Without a body there are no argument types to follow fields with:
    // only a lock that is the argument's pointee, or a global context.
    let lock = rust.lock.as_ref().filter(|l| l.fields.is_empty()).map(|l| {
        let loc = match l.effect.arg {
            Some(arg) => Location::from_parts(
                Root::Arg {
                    index: arg + 1,
                    ty: "?".to_string(),
                },
                vec![Step::Deref {
                    to: "?".to_string(),
                }],
            ),
            None => global(l.effect.kind),
        };
        (l, loc)
    });
    apply(
        &mut summary,
        path,
        rust,
        lock.as_ref().map(|(l, loc)| (*l, loc)),
        None,
        f,
    );
    summary
}

/// Puts what the spec says over a summary: the cases become the lock
/// effect's (each keeping every pointer the body's cases return, so that a
/// guard still points to its lock), the acquisition joins the takes, and a
/// blocking item expects the count to be 0.
pub(crate) fn apply(
    summary: &mut Summary,
    path: &str,
    rust: &RustSpec,
    lock: Option<(&RustLock, &Location)>,
    guard: Option<(Vec<memory::ProjKey>, Location)>,
    f: FnId,
) {
    if let Some((lock, loc)) = lock {
        let mut ret_addrs: Vec<_> = guard.into_iter().collect();
        for case in &summary.cases {
            for a in &case.ret_addrs {
                if !ret_addrs.contains(a) {
                    ret_addrs.push(a.clone());
                }
            }
        }
        let base = summary.cases.first().map_or(0, |c| c.adjust);
        let base = if summary.cases.iter().all(|c| c.adjust == base) {
            base
        } else {
            0
        };
        match lock.across {
            None => {
                let adjust = base + spin_adjust(lock.effect.kind, lock.effect.op);
                summary.cases = effect_cases(&lock.effect, loc.clone(), adjust)
                    .into_iter()
                    .map(|mut c| {
                        c.ret_addrs = ret_addrs.clone();
                        c
                    })
                    .collect();
            }
            // Held on entry and on return: what the body shows of the lock
            // (a release through the guard it consumes, a wait's own
            // locking) is replaced by nothing, the count is as it was, and
            // the returned guard points to the lock.
            Some(_) => {
                for c in &mut summary.cases {
                    c.acquire.clear();
                    c.release.clear();
                    c.adjust = 0;
                    c.ret_addrs = ret_addrs.clone();
                }
            }
        }
        let retakes = lock.across == Some(spec::Across::Retakes);
        summary
            .takes
            .extend(
                effect_takes(&lock.effect, loc.clone(), f)
                    .into_iter()
                    .map(|mut t| {
                        t.reacquire = retakes;
                        t
                    }),
            );
        summary.source = Source::RustSpec {
            path: path.to_string(),
        };
        summary.reason = None;
    }
    if rust.blocks {
        summary.expect = summary.expect.intersect(&ExpectRange::exactly(0));
        summary.source = Source::RustSpec {
            path: path.to_string(),
        };
        summary.reason = None;
    }
    if let Some(section) = rust.section {
        enter_section(summary, section);
    }
}

/// A section around the closure the body calls: whatever the body expects
/// (the closure's expectation, through the call) is expected one context
/// deeper, and every lock taken inside is taken with the section's
/// context held. The body's own adjustment stays: the section leaves the
/// context as it found it, which the body (an `asm!` pair, or a restore
/// of a saved register) cannot show. The reason stays the body's, the
/// call of the closure, so that the chain to what blocks is still there.
fn enter_section(summary: &mut Summary, section: spec::Section) {
    let depth = spin_adjust(section.kind, LockOp::Acquire);
    summary.expect = summary.expect.shift_back(depth);
    summary.expect_last = summary.expect_last.shift_back(depth);
    for (_, e) in summary
        .expect_when
        .iter_mut()
        .chain(summary.expect_last_when.iter_mut())
    {
        *e = e.shift_back(depth);
    }
    if section.kind.disables_irqs() {
        for t in &mut summary.takes {
            t.irqs_disabled = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_pointers_are_followed() {
        assert_eq!(
            declared_pointee("&'a core::sync::atomic::AtomicBool"),
            Some("core::sync::atomic::AtomicBool")
        );
        assert_eq!(
            declared_pointee("&'a mut spin::rwlock::RwLock<T, R>"),
            Some("spin::rwlock::RwLock<T, R>")
        );
        assert_eq!(declared_pointee("*mut T"), Some("T"));
        assert_eq!(
            declared_pointee("core::ptr::non_null::NonNull<T>"),
            Some("T")
        );
        assert_eq!(declared_pointee("core::cell::UnsafeCell<T>"), None);
        assert_eq!(
            adt_path("spin::rwlock::RwLock<T, R>"),
            "spin::rwlock::RwLock"
        );
    }
}
