//! `build_assert!` misuse that the MIR shows (docs/build-assert.md):
//!
//! * an assertion whose condition is made of constants only. Such a
//!   condition is decided when the function is monomorphised, so an
//!   assertion checked by the compiler says the same thing without relying
//!   on the optimiser to remove a `rust_build_error` call, and fails at
//!   compile time with its message instead of at link time with an
//!   undefined symbol;
//! * an assertion whose condition depends on a function's arguments, in a
//!   function that is not `#[inline(always)]` (or that passes its
//!   arguments on to such an assertion): it is proven only where the
//!   function is inlined into a caller that passes constants, which
//!   nothing guarantees without the attribute.
//!
//! `build_error` is recognised by the symbol the kernel exports it as
//! (`#[export_name = "rust_build_error"]`, rust/build_error.rs), which is
//! the callee symbol of every call to it in every dump, never by a crate
//! or path name.

use std::collections::{BTreeMap, BTreeSet};

use findings::{Finding, Loc, Note, Severity};
use kmir::TerminatorKind;
use kmir::visit::{branch_conditions, operand_locals, value_sources, value_sources_with};
use program::{FnId, Program};

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

findings::declare_kind! {
    /// A function whose `build_assert!` (or a `build_assert!` it reaches
    /// through calls it passes its arguments to) depends on one of its
    /// arguments, and that is not marked `#[inline(always)]`. The assertion
    /// is proven only after the function is inlined into a caller that
    /// passes a constant; `#[inline]` is a hint, and without it the
    /// optimiser may keep the function out of line, where the argument is
    /// unknown and the `rust_build_error` reference stays: the build fails
    /// at link time, or passes today and fails with the next compiler.
    /// Every function on the way from an argument to the assertion is
    /// reported, the one holding the assertion at the assertion, its
    /// callers at the call that passes the argument on. A condition on
    /// constants or const generics only, or on values the function computes
    /// without its arguments, is not this kind (see
    /// `build-assert-can-be-const`). klint's `build_assert_not_inlined` lint.
    ///
    /// Example:
    ///
    /// ```text
    /// fn check_offset(off: usize) {            // warning: not #[inline(always)]
    ///     build_assert!(off < 0x100);
    /// }
    /// fn read_at(&self, off: usize) -> u32 {   // warning: passes `off` on
    ///     check_offset(off);
    ///     ..
    /// }
    /// ```
    ///
    /// Fix: mark `check_offset` and `read_at` `#[inline(always)]`, so that
    /// each call with a constant offset is checked where it is inlined; or
    /// make the offset a const generic (`fn check_offset<const OFF: usize>()`
    /// with `const { assert!(OFF < 0x100) }`); or check a run-time value at
    /// run time.
    pub BUILD_ASSERT_NOT_INLINED, "build-assert-not-inlined", Warning, "build_assert",
    "a function whose `build_assert!` depends on its arguments (directly or through the calls it passes them to) is not `#[inline(always)]`"
}

findings::declare_kind! {
    /// A call that passes a run-time value (a call's result, memory read
    /// through a pointer, a static; not an argument of the caller, not a
    /// constant) for an argument that a `build_assert!` of the callee, or of
    /// the `#[inline]` chain it calls, needs to be a constant. However much
    /// is inlined, the optimiser sees no constant there, so the
    /// `rust_build_error` reference stays and the build fails at link time,
    /// unless the value folds to a constant after all (a `const fn`'s
    /// result, which this check takes for a run-time value: hence a
    /// warning). The arguments the assertion needs are found as for
    /// `build-assert-not-inlined`; a caller passing its own arguments on is
    /// that kind, not this one.
    ///
    /// Example:
    ///
    /// ```text
    /// #[inline(always)]
    /// fn read_at(&self, off: usize) -> u32 { build_assert!(off < 0x100); .. }
    ///
    /// fn poll(r: &Regs) -> u32 {
    ///     let off = next_offset();   // a run-time value
    ///     r.read_at(off)             // warning: `off` reaches the build_assert!
    /// }
    /// ```
    ///
    /// Fix: pass a constant (`r.read_at(0x10)`), or use the checked,
    /// run-time variant of the accessor (`try_read`) for values only known
    /// at run time.
    pub BUILD_ASSERT_RUNTIME_VALUE, "build-assert-runtime-value", Warning, "build_assert",
    "a call passes a run-time value for an argument a `build_assert!` of the callee needs to be a constant: the `rust_build_error` reference cannot be optimised away"
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

/// The `build_assert!`s of a body: each `rust_build_error` call behind a
/// branch on a `bool`, by block, with the locals its condition reads.
fn assertions(dump: &kmir::CrateDump, body: &kmir::Body) -> Vec<(usize, Vec<kmir::LocalId>)> {
    let mut out = Vec::new();
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
        if guards.is_empty() || !guards.iter().all(|g| is_bool(dump, body, g)) {
            continue;
        }
        let mut seeds = Vec::new();
        for g in &guards {
            operand_locals(g, &mut seeds);
        }
        out.push((b, seeds));
    }
    out
}

/// The `build_assert!`s of one body, from the walk [`can_be_const`] and
/// [`needs`] share.
pub(crate) struct BodyAsserts {
    id: FnId,
    /// The condition of each assertion made of constants only.
    constant: Vec<kmir::Span>,
    /// The arguments the other assertions' conditions depend on, when the
    /// body is a source body ([`source_body`]).
    needs: BTreeSet<usize>,
}

/// What a body's assertions say, whatever program it is in (kept per
/// dump by the per-dump cache): the condition of each assertion made of
/// constants only, and the arguments the others' conditions depend on.
#[derive(bincode::Encode, bincode::Decode)]
pub(crate) struct AssertFacts {
    constant: Vec<kmir::Span>,
    needs: BTreeSet<usize>,
}

/// One body's assertions (gathered with the callback registrations, in
/// the same walk over the bodies). Only drop-elaborated bodies count:
/// bodies from optimised MIR (upstream items) have had calls inlined and
/// constants propagated, so what their conditions depend on is no longer
/// what the source wrote.
pub(crate) fn scan(dump: &kmir::CrateDump, body: &kmir::Body) -> Option<AssertFacts> {
    if !body.drop_elaborated {
        return None;
    }
    let mut out = AssertFacts {
        constant: Vec::new(),
        needs: BTreeSet::new(),
    };
    for (b, seeds) in assertions(dump, body) {
        let sources = value_sources(body, &seeds);
        if sources.args.is_empty() && !sources.runtime {
            let call = body.blocks[b].terminator.span;
            out.constant.push(condition_span(body, &seeds, call));
        }
        out.needs.extend(sources.args);
    }
    Some(out)
}

/// Function `id`'s [`BodyAsserts`] from its body's [`AssertFacts`]: the
/// arguments count only in a source body ([`source_body`]).
pub(crate) fn body_asserts(program: &Program, id: FnId, facts: AssertFacts) -> BodyAsserts {
    let source = source_body(program, id).is_some();
    BodyAsserts {
        id,
        constant: facts.constant,
        needs: if source { facts.needs } else { BTreeSet::new() },
    }
}

/// Every `build_assert!` of the program whose condition is constant, once
/// per source position.
pub(crate) fn can_be_const(program: &Program, scan: &[BodyAsserts]) -> Vec<Finding> {
    let mut sites: BTreeMap<(u32, kmir::Span), Site> = BTreeMap::new();
    for asserts in scan {
        let id = asserts.id;
        let Some((_, inst)) = program.body_of(id) else {
            continue;
        };
        for &span in &asserts.constant {
            let name = &program.function(id).name;
            // An instance of a generic item has its arguments in its name.
            let generic = name != &inst.item_path;
            let key = (krate_index(program, id), span);
            let site = sites.entry(key).or_insert_with(|| Site {
                name: name.to_string(),
                function: id,
                generic,
            });
            site.generic |= generic;
            if name.as_str() < site.name.as_str() {
                site.name = name.to_string();
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

/// Why a function's arguments must be constants for a `build_assert!` to
/// be proven: its own assertion, or a call that passes them on.
enum Why {
    /// The assertion's condition (as written) depends on `args`.
    Assertion { span: kmir::Span },
    /// The call at `span` passes `args` on to `callee`, which needs them.
    Call { callee: FnId, span: kmir::Span },
}

/// The bodies this check reads: items and closures as the source wrote
/// them (drop-elaborated MIR; optimised MIR has had calls inlined and
/// constants propagated).
fn source_body(program: &Program, f: FnId) -> Option<(&program::LinkedCrate, &kmir::Instance)> {
    let (krate, inst) = program.body_of(f)?;
    let body = program.body_facts(f)?;
    (body.drop_elaborated
        && matches!(
            inst.kind,
            kmir::InstanceKind::Item | kmir::InstanceKind::Closure
        ))
    .then_some((krate, inst))
}

/// The operand a call passes for the callee's argument `index` (0-based).
/// A closure's body takes its arguments one by one, but its callers pass
/// them as one tuple (the "rust-call" ABI): an index past the operands is
/// in that tuple.
fn passed(args: &[kmir::Operand], index: usize) -> Option<&kmir::Operand> {
    args.get(index)
        .or_else(|| args.last().filter(|_| index >= args.len()))
}

/// The arguments of `body` that flow into what a call passes for the
/// callee's arguments `needed`.
fn args_passed(
    body: &kmir::Body,
    args: &[kmir::Operand],
    needed: &BTreeSet<usize>,
) -> BTreeSet<usize> {
    let mut seeds = Vec::new();
    for &i in needed {
        if let Some(op) = passed(args, i) {
            operand_locals(op, &mut seeds);
        }
    }
    if seeds.is_empty() {
        return BTreeSet::new();
    }
    value_sources(body, &seeds).args
}

fn arg_list(body: &kmir::Body, args: &BTreeSet<usize>) -> String {
    let names: Vec<String> = args
        .iter()
        .map(|&i| {
            let local = i as kmir::LocalId + 1;
            match body.var_names.iter().find(|v| v.local == local) {
                Some(v) => format!("`{}` (argument {})", v.name, i + 1),
                None => format!("argument {}", i + 1),
            }
        })
        .collect();
    names.join(", ")
}

/// Which arguments of each function must be constants after inlining for
/// the `build_assert!`s it has or reaches to be proven.
pub(crate) fn needs(program: &Program, scan: &[BodyAsserts]) -> BTreeMap<FnId, BTreeSet<usize>> {
    let mut needs: BTreeMap<FnId, BTreeSet<usize>> = BTreeMap::new();
    for asserts in scan {
        if !asserts.needs.is_empty() {
            needs
                .entry(asserts.id)
                .or_default()
                .extend(asserts.needs.iter().copied());
        }
    }
    // Outward through the callers, to a fixed point: a caller that passes
    // its own arguments for a needed one needs those.
    let mut work: std::collections::VecDeque<FnId> = needs.keys().copied().collect();
    while let Some(callee) = work.pop_front() {
        let needed = needs.get(&callee).cloned().unwrap_or_default();
        for (caller, edge) in program.callers(callee) {
            if edge.kind == program::EdgeKind::Drop {
                continue;
            }
            if source_body(program, caller).is_none() {
                continue;
            }
            let Some(body) = program.body(caller) else {
                continue;
            };
            let Some(TerminatorKind::Call { args, .. }) = body
                .blocks
                .get(edge.block as usize)
                .map(|b| &b.terminator.kind)
            else {
                continue;
            };
            let from = args_passed(&body, args, &needed);
            let have = needs.entry(caller).or_default();
            if !from.is_subset(have) {
                have.extend(from);
                work.push_back(caller);
            }
        }
    }
    needs.retain(|_, args| !args.is_empty());
    needs
}

/// Every function (other than `#[inline(always)]` ones) whose arguments
/// reach the condition of a `build_assert!`, in its own body or, through
/// the calls it passes them to, in a callee's: once per item.
pub(crate) fn not_inlined(
    program: &Program,
    needs: &BTreeMap<FnId, BTreeSet<usize>>,
) -> Vec<Finding> {
    // One finding per item (a generic one has an instance per type): the
    // smallest instance name, so that the output does not depend on order.
    let mut items: BTreeMap<String, (String, FnId, BTreeSet<usize>)> = BTreeMap::new();
    for (&f, args) in needs {
        let Some((_, inst)) = source_body(program, f) else {
            continue;
        };
        if inst.inline == kmir::Inline::Always || !runs(program, f, inst) {
            continue;
        }
        let name = &program.function(f).name.to_string();
        let entry = items
            .entry(inst.item_path.to_string())
            .or_insert_with(|| (name.clone(), f, args.clone()));
        if name < &entry.0 {
            *entry = (name.clone(), f, args.clone());
        }
    }
    items
        .into_values()
        .filter_map(|(name, f, args)| not_inlined_finding(program, needs, f, name, &args))
        .collect()
}

/// Whether `f` has run-time code anywhere: its crate emitted it, it is
/// exported, or something in the program calls it. A `const fn` that only
/// constants' initialisers call (the kernel's `DataDirection::const_cast`)
/// is evaluated by the compiler, where a failing `build_assert!` is a
/// compile error whatever is inlined.
fn runs(program: &Program, f: FnId, inst: &kmir::Instance) -> bool {
    inst.codegenned
        || inst.exported
        || program
            .callers(f)
            .iter()
            .any(|(_, e)| e.kind != program::EdgeKind::Drop)
}

/// The first reason, in block order, `f` needs `args` constant: its own
/// assertion, else the first call that passes them on.
fn why(program: &Program, needs: &BTreeMap<FnId, BTreeSet<usize>>, f: FnId) -> Option<Why> {
    let (krate, _) = source_body(program, f)?;
    let body = program.body(f)?;
    for (b, seeds) in assertions(&krate.dump, &body) {
        if !value_sources(&body, &seeds).args.is_empty() {
            let call = body.blocks[b].terminator.span;
            return Some(Why::Assertion {
                span: condition_span(&body, &seeds, call),
            });
        }
    }
    let mut calls: Vec<(FnId, program::Edge)> = program
        .callees(f)
        .into_iter()
        .filter(|(_, e)| e.kind != program::EdgeKind::Drop)
        .collect();
    calls.sort_by_key(|(callee, e)| (e.block, *callee));
    calls.into_iter().find_map(|(callee, edge)| {
        let needed = needs.get(&callee)?;
        let TerminatorKind::Call { args, .. } =
            &body.blocks.get(edge.block as usize)?.terminator.kind
        else {
            return None;
        };
        (!args_passed(&body, args, needed).is_empty()).then_some(Why::Call {
            callee,
            span: edge.span,
        })
    })
}

fn not_inlined_finding(
    program: &Program,
    needs: &BTreeMap<FnId, BTreeSet<usize>>,
    f: FnId,
    name: String,
    args: &BTreeSet<usize>,
) -> Option<Finding> {
    let (_, inst) = source_body(program, f)?;
    let body = program.body(f)?;
    let krate = krate_index(program, f);
    let list = arg_list(&body, args);
    let (message, note) = match why(program, needs, f)? {
        Why::Assertion { span } => (
            "this function's `build_assert!` depends on its arguments, but the function is not `#[inline(always)]`",
            Note::at(
                Loc { krate, span },
                format!(
                    "the condition depends on {list}: it is proven only where this function is inlined into a caller that passes a constant"
                ),
            ),
        ),
        Why::Call { callee, span } => (
            "this function passes its arguments on to a `build_assert!`, but it is not `#[inline(always)]`",
            Note::at(
                Loc { krate, span },
                format!(
                    "{list} reaches a `build_assert!` through this call to `{}`, which must be inlined here for the assertion to be proven",
                    program.function(callee).name
                ),
            ),
        ),
    };
    let label = match inst.inline {
        kmir::Inline::Hint => {
            "`#[inline]` is only a hint: the optimiser may keep this function out of line"
        }
        kmir::Inline::Never => "`#[inline(never)]` keeps this function out of line",
        _ => "not `#[inline(always)]`: the optimiser may keep this function out of line",
    };
    Some(
        Finding::new(&BUILD_ASSERT_NOT_INLINED, Severity::Warning, message)
            .at(Loc {
                krate,
                span: inst.span,
            })
            .label(label)
            .note(note)
            .note(Note::help(
                "mark it `#[inline(always)]` so that every call with constants is checked where it is inlined, make the value a const generic checked with `const { assert!(..) }`, or check a run-time value at run time",
            ))
            .in_function(f)
            .subject(name),
    )
}

/// The functions from `f` down to the one holding the assertion its
/// needed arguments reach (first reasons, as `why`), and that assertion's
/// condition.
fn chain_to_assertion(
    program: &Program,
    needs: &BTreeMap<FnId, BTreeSet<usize>>,
    f: FnId,
) -> (Vec<FnId>, Option<Loc>) {
    let mut chain = vec![f];
    let mut at = f;
    // A recursive chain ends where it started; the bound keeps it finite.
    for _ in 0..32 {
        match why(program, needs, at) {
            Some(Why::Assertion { span }) => {
                let krate = krate_index(program, at);
                return (chain, Some(Loc { krate, span }));
            }
            Some(Why::Call { callee, .. }) if !chain.contains(&callee) => {
                chain.push(callee);
                at = callee;
            }
            _ => break,
        }
    }
    (chain, None)
}

/// A call passing run-time values: the caller's instance name, the
/// caller, the callee and the callee's arguments that get them.
type RuntimeSite = (String, FnId, FnId, BTreeSet<usize>);

/// Every call that passes a run-time value (not the caller's argument, not
/// a constant) for an argument an assertion needs: once per call site.
pub(crate) fn runtime_values(
    program: &Program,
    needs: &BTreeMap<FnId, BTreeSet<usize>>,
) -> Vec<Finding> {
    // A callee marked for inlining (`#[inline]`, `#[inline(always)]`)
    // whose result comes from its arguments and constants only (a
    // constructor such as `RangeInclusive::new`, behind `21..=39`): given
    // constants, it folds into a constant once inlined. A call to any other
    // function stays a run-time value: nothing asks the optimiser to look
    // into it.
    let computes = |callee: &kmir::Callee| {
        let kmir::Callee::Direct { symbol } = callee else {
            return false;
        };
        // Any body, optimised or not: both compute the same result.
        program
            .lookup(symbol)
            .filter(|&f| {
                program.body_of(f).is_some_and(|(_, inst)| {
                    matches!(inst.inline, kmir::Inline::Hint | kmir::Inline::Always)
                })
            })
            .and_then(|f| program.body(f))
            .is_some_and(|b| !value_sources(&b, &[0]).runtime)
    };
    // By call site: the smallest caller name, the callee and the arguments.
    let mut sites: BTreeMap<(u32, kmir::Span), RuntimeSite> = BTreeMap::new();
    for (&callee, needed) in needs {
        for (caller, edge) in program.callers(callee) {
            if edge.kind == program::EdgeKind::Drop {
                continue;
            }
            let Some((_, inst)) = source_body(program, caller) else {
                continue;
            };
            if !runs(program, caller, inst) {
                continue;
            }
            let Some(body) = program.body(caller) else {
                continue;
            };
            let Some(TerminatorKind::Call { args, .. }) = body
                .blocks
                .get(edge.block as usize)
                .map(|b| &b.terminator.kind)
            else {
                continue;
            };
            let runtime: BTreeSet<usize> = needed
                .iter()
                .copied()
                .filter(|&i| {
                    let mut seeds = Vec::new();
                    if let Some(op) = passed(args, i) {
                        operand_locals(op, &mut seeds);
                    }
                    !seeds.is_empty() && value_sources_with(&body, &seeds, &computes).runtime
                })
                .collect();
            if runtime.is_empty() {
                continue;
            }
            let name = program.function(caller).name.to_string();
            let key = (krate_index(program, caller), edge.span);
            let entry = sites
                .entry(key)
                .or_insert_with(|| (name.clone(), caller, callee, runtime.clone()));
            if name < entry.0 {
                *entry = (name, caller, callee, runtime);
            }
        }
    }
    sites
        .into_iter()
        .filter_map(|((krate, span), (name, caller, callee, args))| {
            source_body(program, callee)?;
            let callee_body = program.body(callee)?;
            let list = arg_list(&callee_body, &args);
            let (chain, assertion) = chain_to_assertion(program, needs, callee);
            let names: Vec<String> = chain
                .iter()
                .map(|f| format!("`{}`", program.function(*f).name))
                .collect();
            let mut finding = Finding::new(
                &BUILD_ASSERT_RUNTIME_VALUE,
                Severity::Warning,
                format!(
                    "this call passes a run-time value to `{}`, whose `build_assert!` needs a constant",
                    program.function(callee).name
                ),
            )
            .at(Loc { krate, span })
            .label(format!("{list} of the callee gets a value only known at run time"));
            if let Some(at) = assertion {
                finding = finding.note(Note::at(
                    at,
                    format!(
                        "the assertion it reaches, through {}: its condition depends on that argument, so the optimiser cannot remove the `rust_build_error` call",
                        names.join(" → ")
                    ),
                ));
            }
            Some(
                finding
                    .note(Note::help(
                        "pass a constant, or check a value only known at run time with a run-time check (the accessor's `try_` variant)",
                    ))
                    .in_function(caller)
                    .subject(format!("{name} → {}", program.function(callee).name)),
            )
        })
        .collect()
}
