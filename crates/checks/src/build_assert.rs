//! `build_assert!` misuse that the MIR shows (docs/build-assert.md): an
//! assertion whose condition is made of constants only. Such a condition
//! is decided when the function is monomorphised, so an assertion checked
//! by the compiler says the same thing without relying on the optimiser to
//! remove a `rust_build_error` call, and fails at compile time with its
//! message instead of at link time with an undefined symbol.
//!
//! `build_error` is recognised by the symbol the kernel exports it as
//! (`#[export_name = "rust_build_error"]`, rust/build_error.rs), which is
//! the callee symbol of every call to it in every dump, never by a crate
//! or path name.

use std::collections::BTreeMap;

use findings::{Finding, Loc, Note, Severity};
use kmir::TerminatorKind;
use kmir::visit::{branch_conditions, operand_locals, value_sources};
use program::Program;

use crate::krate_index;

/// The symbol of the kernel's `build_error` (rust/build_error.rs).
pub const BUILD_ERROR_SYMBOL: &str = "rust_build_error";

findings::declare_kind! {
    /// A `build_assert!` whose condition depends on no run-time value: only
    /// constants and generic constants reach it (followed through the
    /// function's assignments), so it is decided when the function is
    /// monomorphised. `const { assert!(..) }` (the kernel's `const_assert!`),
    /// or `static_assert!` when the function is not generic, checks the same
    /// at compile time, with the assertion's message, instead of relying on
    /// the optimiser to remove a `rust_build_error` call and failing at link
    /// time with an undefined symbol. klint's `build_assert_can_be_const`
    /// and `assert_hierarchy` lints. A condition that calls a function (even
    /// a `const fn` with constant arguments) is not reported.
    ///
    /// Example:
    ///
    /// ```text
    /// fn u32_into_u8<const N: u32>() -> u8 {
    ///     build_assert!(N <= u8::MAX as u32);   // warning: only N decides it
    ///     N as u8
    /// }
    /// ```
    ///
    /// Fix: `const { assert!(N <= u8::MAX as u32) }`, which fails at compile
    /// time with the message instead of at link time with an undefined symbol.
    pub BUILD_ASSERT_CAN_BE_CONST, "build-assert-can-be-const", Warning, "build_assert",
    "a `build_assert!` whose condition depends on no run-time value; `const { assert!(..) }` or `static_assert!` checks it at compile time"
}

/// One assertion site: the smallest instance name that has it (so the
/// output does not depend on which instance was seen first) and whether
/// any instance is generic.
struct Site {
    name: String,
    function: program::FnId,
    generic: bool,
}

/// Whether an operand is a `bool`.
fn is_bool(dump: &kmir::CrateDump, body: &kmir::Body, operand: &kmir::Operand) -> bool {
    let ty = match operand {
        kmir::Operand::Copy(p) | kmir::Operand::Move(p) if p.projection.is_empty() => {
            body.locals.get(p.local as usize).map(|l| l.ty)
        }
        kmir::Operand::Constant(c) => Some(c.ty),
        _ => None,
    };
    ty.and_then(|t| dump.ty(t))
        .is_some_and(|t| matches!(t.kind, kmir::TyKind::Bool))
}

/// Where the condition is written. The `build_error` call and the branch
/// come from `build_assert!`'s body, in the file that defines the macro;
/// the condition's tokens come from the invocation. The first assignment
/// feeding the condition (outward from the branch) whose span is in another
/// file than the call is the invocation's condition; without one (the
/// macro used in its own file, or no macro at all), the call's span.
fn condition_span(body: &kmir::Body, seeds: &[kmir::LocalId], call: kmir::Span) -> kmir::Span {
    let mut assigns: BTreeMap<kmir::LocalId, Vec<(kmir::Span, Vec<kmir::LocalId>)>> =
        BTreeMap::new();
    for block in &body.blocks {
        for statement in &block.statements {
            if let kmir::StatementKind::Assign { place, rvalue } = &statement.kind {
                let mut reads = Vec::new();
                kmir::visit::for_each_rvalue_place(rvalue, |p| {
                    kmir::visit::place_locals(p, &mut reads)
                });
                assigns
                    .entry(place.local)
                    .or_default()
                    .push((statement.span, reads));
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut queue: std::collections::VecDeque<kmir::LocalId> = seeds.iter().copied().collect();
    while let Some(l) = queue.pop_front() {
        if !seen.insert(l) {
            continue;
        }
        for (span, reads) in assigns.get(&l).map(Vec::as_slice).unwrap_or(&[]) {
            if !span.is_dummy() && span.file != call.file {
                return *span;
            }
            queue.extend(reads.iter().copied());
        }
    }
    call
}

/// Every `build_assert!` of the program whose condition is constant, once
/// per source position.
pub(crate) fn can_be_const(program: &Program) -> Vec<Finding> {
    let mut sites: BTreeMap<(u32, kmir::Span), Site> = BTreeMap::new();
    for (id, krate, inst) in program.bodies() {
        let Some(body) = &inst.body else { continue };
        // Bodies from optimised MIR (upstream items) have had calls
        // inlined and constants propagated: what their conditions depend
        // on is no longer what the source wrote.
        if !body.drop_elaborated {
            continue;
        }
        for (b, block) in body.blocks.iter().enumerate() {
            let TerminatorKind::Call {
                callee: kmir::Callee::Direct { symbol },
                ..
            } = &block.terminator.kind
            else {
                continue;
            };
            if symbol != BUILD_ERROR_SYMBOL || block.is_cleanup {
                continue;
            }
            let guards = branch_conditions(body, &[b as u32]);
            // `build_assert!` is an `if` on a `bool`; a `build_error!()`
            // that nothing guards, or one in a `match` arm (the kernel's
            // atomics reject an ordering that way), is not an assertion.
            if guards.is_empty() || !guards.iter().all(|g| is_bool(&krate.dump, body, g)) {
                continue;
            }
            let mut seeds = Vec::new();
            for g in &guards {
                operand_locals(g, &mut seeds);
            }
            let sources = value_sources(body, &seeds);
            if !sources.args.is_empty() || sources.runtime {
                continue;
            }
            let name = &program.function(id).name;
            // An instance of a generic item has its arguments in its name.
            let generic = name != &inst.item_path;
            let span = condition_span(body, &seeds, block.terminator.span);
            let key = (krate_index(program, id), span);
            let site = sites.entry(key).or_insert_with(|| Site {
                name: name.clone(),
                function: id,
                generic,
            });
            site.generic |= generic;
            if name < &site.name {
                site.name = name.clone();
                site.function = id;
            }
        }
    }
    sites
        .into_iter()
        .map(|((krate, span), site)| {
            let (form, why) = if site.generic {
                (
                    "`const { assert!(..) }`",
                    "its condition is made of constants and generic constants only, so it is decided when the function is monomorphised",
                )
            } else {
                (
                    "`static_assert!` (or `const { assert!(..) }` where it reads locals)",
                    "its condition is made of constants only",
                )
            };
            Finding::new(
                &BUILD_ASSERT_CAN_BE_CONST,
                Severity::Warning,
                format!("this `build_assert!` does not depend on run-time values; prefer {form}"),
            )
            .at(Loc { krate, span })
            .label("this condition is decided at compile time")
            .note(Note::text(why))
            .note(Note::help(
                "a compile-time assertion fails with its message where it is written; `build_assert!` fails at link time, with `undefined symbol: rust_build_error`",
            ))
            .in_function(site.function)
            .subject(site.name)
        })
        .collect()
}
