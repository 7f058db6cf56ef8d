//! The pointers family: functions turned into fn pointers and vtables
//! built from methods that do not match klint's defaults, and `dyn`
//! upcasts.

use std::collections::BTreeSet;

use annotations::ExpectRange;
use findings::{Finding, Loc, Note, Severity};
use program::{FnId, FnKind};

use analysis::Summary;

use crate::Checks;
use crate::Input;
use crate::text::name;
use analysis::annotation_of;

findings::declare_kind! {
    /// A `dyn A` to `dyn B` cast where `B`'s `drop_preempt_count` allows drops
    /// that `A`'s forbids (klint's check).
    ///
    /// Example:
    ///
    /// ```text
    /// let a: &dyn Sleeper = &x;
    /// let b: &dyn Quiet = a;   // error: Quiet's drop_preempt_count allows less
    /// ```
    ///
    /// Fix: upcast only to traits whose annotation admits the source's drops.
    pub TRAIT_UPCAST, "trait-upcast", Error, "pointers and vtables",
    "a `dyn A` → `dyn B` cast where `B`'s `drop_preempt_count` allows drops `A` forbids (klint's check)"
}

findings::declare_kind! {
    /// A function that changes the count, or needs atomic context, is turned into
    /// a fn pointer: callers through the pointer assume klint's default
    /// (adjustment 0, may sleep) and cannot be checked against it.
    ///
    /// Example:
    ///
    /// ```text
    /// let f: fn() = take_lock_and_return;   // warning: callers cannot see the adjustment
    /// f();
    /// ```
    ///
    /// Fix: call the function directly, or annotate it so that the pointer's users know.
    pub FN_POINTER, "fn-pointer", Warning, "pointers and vtables",
    "a function that changes the count, or needs atomic context, is turned into a fn pointer (klint's check)"
}

findings::declare_kind! {
    /// A vtable is built from a method or drop glue that does not match the
    /// trait's annotation or klint's default (adjustment 0, may sleep).
    ///
    /// Example:
    ///
    /// ```text
    /// let w: &dyn Work = &Sleepy;   // warning: Sleepy::run may sleep, the trait says any context
    /// ```
    ///
    /// Fix: annotate the trait method with what its implementations need, or do not make such a type into that trait object.
    pub VTABLE, "vtable", Warning, "pointers and vtables",
    "a vtable is built from a method or drop glue that does not match the trait's annotation or klint's default (adjust 0, may sleep)"
}

pub(crate) fn fn_pointer(
    input: &Input<'_>,
    user: FnId,
    target: FnId,
    s: &Summary,
    at: Loc,
) -> Finding {
    Finding::new(
        &FN_POINTER,
        Severity::Warning,
        "converting this function to pointer may result in preemption count rule violation",
    )
    .at(at)
    .label(format!(
        "`{}` is being converted to a pointer",
        name(input, target)
    ))
    .note(Note::text(format!(
        "adjustment of this function is inferred to be {} and expectation is inferred to be {}",
        s.adjust_text(),
        s.expect
    )))
    .note(Note::text(
        "while the adjustment for function pointers is assumed to be 0 and the expectation be 0",
    ))
    .in_function(user)
    .subject(name(input, target))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn vtable(
    input: &Input<'_>,
    user: FnId,
    target: FnId,
    s: &Summary,
    expected: (i32, ExpectRange),
    trait_path: &str,
    drop_of: Option<&str>,
    at: Loc,
) -> Finding {
    let part = match drop_of {
        Some(ty) => format!("drop glue of `{ty}` is constructed as part of `dyn {trait_path}`"),
        None => format!(
            "`{}` is constructed as part of `dyn {trait_path}`",
            name(input, target)
        ),
    };
    let _ = FnKind::Shim;
    Finding::new(
        &VTABLE,
        Severity::Warning,
        "constructing this vtable may result in preemption count rule violation",
    )
    .at(at)
    .label(part)
    .note(Note::text(format!(
        "adjustment is inferred to be {} and expectation is inferred to be {}",
        s.adjust_text(),
        s.expect
    )))
    .note(Note::text(format!(
        "while the expected adjustment for vtable is {} and the expectation is {}",
        expected.0, expected.1
    )))
    .in_function(user)
    .subject(format!("{} as dyn {trait_path}", name(input, target)))
}

/// The casts of one body that `pointers_and_vtables` checks, in
/// statement order: to fn pointers, unsizing with a vtable, trait upcasts.
pub(crate) struct BodyCasts {
    pub(crate) f: FnId,
    pub(crate) casts: Vec<(kmir::Span, kmir::CastKind)>,
}

/// `f`'s [`BodyCasts`] (gathered with the callback registrations, in the
/// same walk over the bodies).
pub(crate) fn casts(body: &kmir::Body) -> Vec<(kmir::Span, kmir::CastKind)> {
    let mut casts = Vec::new();
    for block in &body.blocks {
        for s in &block.statements {
            let kmir::StatementKind::Assign { rvalue, .. } = &s.kind else {
                continue;
            };
            let kmir::Rvalue::Cast { kind, .. } = &**rvalue else {
                continue;
            };
            if matches!(
                kind,
                kmir::CastKind::ReifyFnPointer { .. }
                    | kmir::CastKind::ClosureFnPointer { .. }
                    | kmir::CastKind::Unsize { vtable: Some(_) }
                    | kmir::CastKind::TraitUpcast { .. }
            ) {
                casts.push((s.span, kind.clone()));
            }
        }
    }
    casts
}

impl Checks<'_> {
    /// klint's function-pointer and vtable construction warnings.
    pub(crate) fn pointers_and_vtables(&self) -> Vec<Finding> {
        let program = self.input.program;
        let mut findings = Vec::new();
        let mut seen_fns: BTreeSet<FnId> = BTreeSet::new();
        let mut seen_vtables: BTreeSet<(String, String)> = BTreeSet::new();
        for body_casts in self.casts {
            let i = body_casts.f.index();
            let FnKind::Body { krate, .. } = program.functions[i].kind else {
                continue;
            };
            let dump = &program.crates[krate as usize].dump;
            {
                for (span, kind) in &body_casts.casts {
                    let loc = Loc { krate, span: *span };
                    match kind {
                        kmir::CastKind::ReifyFnPointer { symbol }
                        | kmir::CastKind::ClosureFnPointer { symbol } => {
                            let Some(target) = program.lookup(symbol) else {
                                continue;
                            };
                            // A callback handed to a C API with a contract
                            // is checked against that contract instead.
                            if !seen_fns.insert(target)
                                || self.callbacks.iter().any(|r| r.callback == target)
                            {
                                continue;
                            }
                            let s = self.summary(target);
                            if s.poisoned {
                                continue;
                            }
                            if s.uniform_adjust() != Some(0) || !s.expect.contains_value(0) {
                                findings.push(fn_pointer(
                                    self.input,
                                    FnId(i as u32),
                                    target,
                                    s,
                                    loc,
                                ));
                            }
                        }
                        kmir::CastKind::Unsize { vtable: Some(v) } => {
                            let Some(vt) = dump.vtables.get(*v as usize) else {
                                continue;
                            };
                            let (Some(concrete), Some(trait_path)) =
                                (dump.ty(vt.concrete), &vt.trait_path)
                            else {
                                continue;
                            };
                            if !seen_vtables
                                .insert((concrete.display.to_string(), trait_path.to_string()))
                            {
                                continue;
                            }
                            findings.extend(self.vtable(
                                FnId(i as u32),
                                vt,
                                &concrete.display,
                                trait_path,
                                loc,
                            ));
                        }
                        kmir::CastKind::TraitUpcast { from, to } => {
                            findings.extend(self.upcast(FnId(i as u32), dump, *from, *to, loc));
                        }
                        _ => {}
                    }
                }
            }
        }
        findings
    }

    fn vtable(
        &self,
        user: FnId,
        vt: &kmir::Vtable,
        concrete: &str,
        trait_path: &str,
        loc: Loc,
    ) -> Vec<Finding> {
        let program = self.input.program;
        let mut out = Vec::new();
        for entry in &vt.entries {
            let (symbol, expected, what) = match entry {
                kmir::VtableEntry::Method { method, symbol } => {
                    let declared = annotation_of(self.input, method).map(|(a, _)| {
                        (a.adjust.unwrap_or(0), a.expect.unwrap_or(ExpectRange::TOP))
                    });
                    (
                        symbol,
                        declared.unwrap_or((0, ExpectRange::exactly(0))),
                        None,
                    )
                }
                kmir::VtableEntry::DropInPlace { glue: Some(glue) } => {
                    let declared = self
                        .input
                        .annotations
                        .get(trait_path)
                        .and_then(|a| a.drop_preempt.as_ref())
                        .map(|(a, _)| {
                            (a.adjust.unwrap_or(0), a.expect.unwrap_or(ExpectRange::TOP))
                        });
                    (
                        glue,
                        declared.unwrap_or((0, ExpectRange::exactly(0))),
                        Some(concrete),
                    )
                }
                _ => continue,
            };
            let Some(target) = program.lookup(symbol) else {
                continue;
            };
            // A method whose body disagrees with the trait's annotation
            // has the annotation as its summary; the vtable is checked
            // against the body (klint warns at the coercion as well as
            // at the method).
            let s = self
                .bodies_against_trait
                .get(&target)
                .unwrap_or_else(|| self.summary(target));
            if s.poisoned {
                continue;
            }
            if s.uniform_adjust() != Some(expected.0) || !s.expect.contains(&expected.1) {
                out.push(vtable(
                    self.input, user, target, s, expected, trait_path, what, loc,
                ));
            }
        }
        out
    }

    /// klint's trait-upcasting check: dropping through the new `dyn` type
    /// must be allowed wherever dropping through the old one was.
    fn upcast(
        &self,
        user: FnId,
        dump: &kmir::CrateDump,
        from: kmir::TyId,
        to: kmir::TyId,
        loc: Loc,
    ) -> Option<Finding> {
        let principal = |t: kmir::TyId| match &dump.ty(t)?.kind {
            kmir::TyKind::Dynamic { traits } => traits.first().cloned(),
            _ => None,
        };
        let (src, tgt) = (principal(from)?, principal(to)?);
        let drop_of = |path: &str| {
            self.input
                .annotations
                .get(path)
                .and_then(|a| a.drop_preempt.as_ref())
                .map(|(a, _)| {
                    (
                        a.adjust.unwrap_or(0),
                        a.expect.unwrap_or(ExpectRange::exactly(0)),
                    )
                })
                // klint's VDROP_DEFAULT.
                .unwrap_or((0, ExpectRange::exactly(0)))
        };
        let (sa, se) = drop_of(&src);
        let (ta, te) = drop_of(&tgt);
        if sa == ta && se.contains(&te) {
            return None;
        }
        Some(
            Finding::new(
                &TRAIT_UPCAST,
                Severity::Error,
                "casting between traits with incompatible preemption count properties",
            )
            .at(loc)
            .note(Note::help(format!(
                "adjustment of `dyn {src}` is {sa} and expectation is {se}"
            )))
            .note(Note::help(format!(
                "while the expected adjustment of `dyn {tgt}` is {ta} and the expectation is {te}"
            )))
            .in_function(user)
            .subject(format!("dyn {src} as dyn {tgt}")),
        )
    }
}
