//! Summaries that do not come from a body: annotations, the spec of C
//! functions, klint's defaults.

use std::collections::BTreeSet;

use annotations::{ExpectRange, PreemptCount};
use program::{FnId, FnKind, IndirectKey};

use crate::Input;
use crate::summary::{self, Acquisition, Case, RetFact, Source, Summary};

/// An item's `preempt_count` annotation (with its span), or klint's
/// built-in one for a `core` item (no span).
pub fn annotation_of(input: &Input<'_>, path: &str) -> Option<(PreemptCount, Option<kmir::Span>)> {
    match input.annotations.get(path).and_then(|a| a.preempt.as_ref()) {
        Some((a, span)) => Some((a.clone(), Some(*span))),
        None => annotations::core_out_of_band(path).map(|a| (a, None)),
    }
}

/// Summaries that do not come from a body.
pub(crate) fn external_summary(
    input: &Input<'_>,
    id: FnId,
    f: &program::Function,
    unknown: &mut BTreeSet<String>,
) -> Option<Summary> {
    let annotated = |path: &str| {
        annotation_of(input, path).map(|(a, _)| {
            Summary::fixed(
                a.adjust.unwrap_or(0),
                a.expect.unwrap_or(ExpectRange::TOP),
                Source::Annotation {
                    path: path.to_string(),
                    unchecked: true,
                },
            )
        })
    };
    match &f.kind {
        FnKind::Body { .. } => None,
        FnKind::Foreign => {
            Some(annotated(&f.item_path).unwrap_or_else(|| {
                match input.spec.lookup(&f.symbol) {
                    Some(s) => Summary {
                        cases: spec_cases(s),
                        takes: spec_takes(s, id),
                        sleeps_if_flag: s.sleeps_if_flag.clone(),
                        sleeps_if_zero: s.sleeps_if_zero,
                        last_reference_test: s.last_reference_test,
                        writes: s.reads_only.then(Vec::new),
                        ret_points: s
                            .returns_into
                            .map(|k| vec![(k, crate::summary::FieldPath::BELOW)]),
                        // It returns a pointer into what argument `k` reaches.
                        ret_fresh: s.returns_into.is_none(),
                        ret_from: s.returns_into.map(|k| {
                            vec![crate::summary::Flow::Shared(
                                k,
                                crate::summary::FieldPath::BELOW,
                            )]
                        }),
                        ..Summary::fixed(
                            s.adjust,
                            s.expect,
                            Source::Spec {
                                name: f.symbol.to_string(),
                            },
                        )
                    },
                    None => {
                        // Listed as a C function the spec does not know
                        // when it is one: not a Rust-mangled declaration
                        // (the allocator shims `extern "Rust"` declares,
                        // `alloc::alloc::__rust_alloc`, which the Rust
                        // runtime defines) nor an LLVM intrinsic.
                        if is_c_function(&f.symbol) {
                            unknown.insert(f.symbol.to_string());
                        }
                        match input.spec.unknown {
                            spec::Unknown::MaySleep => Summary::may_sleep(Source::UnknownForeign),
                            spec::Unknown::NoConstraint => {
                                Summary::neutral(Source::UnconstrainedForeign)
                            }
                        }
                    }
                }
            }))
        }
        FnKind::Upstream { .. } => Some(annotated(&f.item_path).unwrap_or_else(|| {
            match input
                .spec
                .rust_item(&f.item_path)
                .filter(|r| r.has_effect())
            {
                Some(r) => crate::rust_spec::without_body(&f.item_path, r, id),
                None => Summary::neutral(Source::NotExtracted),
            }
        })),
        FnKind::Shim => Some(Summary::neutral(Source::Builtin)),
        FnKind::Unknown(IndirectKey::FnPtr { .. }) => {
            Some(Summary::may_sleep(Source::UnknownIndirect))
        }
        FnKind::Unknown(IndirectKey::Virtual { trait_method, .. }) => Some(
            annotated(trait_method).unwrap_or_else(|| Summary::may_sleep(Source::UnknownIndirect)),
        ),
    }
}

/// Whether a foreign function's link name is a C function's: not a Rust
/// symbol (v0 `_R…` or legacy `_ZN…17h<hash>E` mangling) nor an LLVM
/// intrinsic (`llvm.…`).
fn is_c_function(symbol: &str) -> bool {
    !(symbol.starts_with("_R")
        || (symbol.starts_with("_ZN") && symbol.ends_with('E'))
        || symbol.starts_with("llvm."))
}

/// The lock a spec's lock effect is about, in the C function's terms: the
/// pointee of its argument, or a global context.
fn spec_lock_path(effect: &spec::LockEffect) -> memory::Location {
    match effect.arg {
        Some(arg) => memory::Location::from_parts(
            memory::Root::Arg {
                index: arg + 1,
                ty: format!("*mut {}", effect.kind.c_type()),
            },
            vec![memory::Step::Deref {
                to: effect.kind.c_type().to_string(),
            }],
        ),
        None => memory::Location::new(memory::Root::Static(format!("<{}>", effect.kind))),
    }
}

/// The cases of a C function from its spec: a `try_acquire` raises the
/// count (for a spinning kind) and holds the lock only when it succeeds.
fn spec_cases(s: &spec::FnSpec) -> Vec<Case> {
    match &s.lock {
        Some(effect) => effect_cases(effect, spec_lock_path(effect), s.adjust),
        None => vec![Case::always(s.adjust)],
    }
}

/// The cases of a lock effect on `lock` (in the function's terms) by a
/// function whose count moves by `adjust`: a `try_acquire` raises the
/// count further (for a spinning kind) and holds the lock only when it
/// succeeds, which the returned value says.
pub(crate) fn effect_cases(
    effect: &spec::LockEffect,
    lock: memory::Location,
    adjust: i32,
) -> Vec<Case> {
    match effect.op {
        spec::LockOp::Acquire => vec![Case {
            acquire: vec![Acquisition {
                lock,
                kind: effect.kind,
                trylock: false,
            }],
            ..Case::always(adjust)
        }],
        spec::LockOp::Release => vec![Case {
            release: vec![lock],
            ..Case::always(adjust)
        }],
        spec::LockOp::TryAcquire { success } => {
            let raise = i32::from(!effect.kind.may_sleep_while_held());
            let failed = Case::always(adjust);
            let succeeded = Case {
                acquire: vec![Acquisition {
                    lock,
                    kind: effect.kind,
                    trylock: true,
                }],
                ..Case::always(adjust + raise)
            };
            // (the returned value on success, on failure)
            let (on_success, on_failure) = match success {
                spec::TrySuccess::ReturnsNonZero => (RetFact::IsNot(0), RetFact::Is(0)),
                spec::TrySuccess::ReturnsZero => (RetFact::Is(0), RetFact::IsNot(0)),
                // `Result`: `Ok` is discriminant 0; `Option`: `Some` is 1.
                spec::TrySuccess::ReturnsOk => (RetFact::Discr(0), RetFact::Discr(1)),
                spec::TrySuccess::ReturnsSome => (RetFact::Discr(1), RetFact::Discr(0)),
            };
            let mut cases = vec![
                Case {
                    ret: Some(on_success),
                    ..succeeded
                },
                Case {
                    ret: Some(on_failure),
                    ..failed
                },
            ];
            // The order C functions' cases have always had: 0 first.
            cases.sort_by_key(|c| !matches!(c.ret, Some(RetFact::Is(0)) | Some(RetFact::Discr(0))));
            cases
        }
    }
}

/// The acquisitions a C function makes, for the order graph.
fn spec_takes(s: &spec::FnSpec, f: FnId) -> Vec<summary::Take> {
    match &s.lock {
        Some(effect) => effect_takes(effect, spec_lock_path(effect), f),
        None => Vec::new(),
    }
}

/// The acquisition a lock effect on `lock` makes, for the order graph.
pub(crate) fn effect_takes(
    effect: &spec::LockEffect,
    lock: memory::Location,
    f: FnId,
) -> Vec<summary::Take> {
    match effect {
        spec::LockEffect { op, kind, .. }
            if !matches!(op, spec::LockOp::Release) && domains::has_object(*kind) =>
        {
            vec![summary::Take {
                lock,
                kind: *kind,
                trylock: matches!(op, spec::LockOp::TryAcquire { .. }),
                reacquire: false,
                irqs_disabled: kind.disables_irqs(),
                func: f,
                span: kmir::Span::default(),
                via: Vec::new(),
            }]
        }
        _ => Vec::new(),
    }
}
