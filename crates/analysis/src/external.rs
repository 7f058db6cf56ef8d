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
                        // A C function by its link name; a Rust-mangled
                        // one (the allocator shims `extern "Rust"` declares)
                        // by its path, `alloc::alloc::__rust_alloc`.
                        unknown.insert(if f.symbol.starts_with("_R") {
                            f.name.to_string()
                        } else {
                            f.symbol.to_string()
                        });
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
        FnKind::Upstream { .. } => {
            Some(annotated(&f.item_path).unwrap_or_else(|| Summary::neutral(Source::NotExtracted)))
        }
        FnKind::Shim => Some(Summary::neutral(Source::Builtin)),
        FnKind::Unknown(IndirectKey::FnPtr { .. }) => {
            Some(Summary::may_sleep(Source::UnknownIndirect))
        }
        FnKind::Unknown(IndirectKey::Virtual { trait_method, .. }) => Some(
            annotated(trait_method).unwrap_or_else(|| Summary::may_sleep(Source::UnknownIndirect)),
        ),
    }
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
    let Some(effect) = &s.lock else {
        return vec![Case::always(s.adjust)];
    };
    let lock = spec_lock_path(effect);
    match effect.op {
        spec::LockOp::Acquire => vec![Case {
            acquire: vec![Acquisition {
                lock,
                kind: effect.kind,
                trylock: false,
            }],
            ..Case::always(s.adjust)
        }],
        spec::LockOp::Release => vec![Case {
            release: vec![lock],
            ..Case::always(s.adjust)
        }],
        spec::LockOp::TryAcquire { success } => {
            let raise = i32::from(!effect.kind.may_sleep_while_held());
            let failed = Case::always(s.adjust);
            let succeeded = Case {
                acquire: vec![Acquisition {
                    lock,
                    kind: effect.kind,
                    trylock: true,
                }],
                ..Case::always(s.adjust + raise)
            };
            let (zero, nonzero) = match success {
                spec::TrySuccess::ReturnsNonZero => (failed, succeeded),
                spec::TrySuccess::ReturnsZero => (succeeded, failed),
            };
            vec![
                Case {
                    ret: Some(RetFact::Is(0)),
                    ..zero
                },
                Case {
                    ret: Some(RetFact::IsNot(0)),
                    ..nonzero
                },
            ]
        }
    }
}

/// The acquisitions a C function makes, for the order graph.
fn spec_takes(s: &spec::FnSpec, f: FnId) -> Vec<summary::Take> {
    match &s.lock {
        Some(effect @ spec::LockEffect { op, kind, .. })
            if !matches!(op, spec::LockOp::Release) && domains::has_object(*kind) =>
        {
            vec![summary::Take {
                lock: spec_lock_path(effect),
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
