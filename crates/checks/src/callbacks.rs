//! Functions C calls back, and the context C calls them in:
//!
//! * a Rust function passed to a C function whose spec entry has a
//!   `callbacks = [...]` contract (an IRQ handler in hard-IRQ context, an RCU
//!   callback in softirq context, a `list_lru` walk callback with the list's
//!   spinlock held);
//! * a Rust function stored in a field of an ops table (a constant or a
//!   static of a C struct type) whose `[field]` spec entry has a contract
//!   (`blk_mq_ops.queue_rq` under `rcu_read_lock()`, `blk_mq_ops.complete`
//!   in interrupt context);
//! * a function whose address is in a static whose `[static]` spec entry
//!   has a contract: the handlers of a firmware's vector table, which the
//!   hardware calls in interrupt context.
//!
//! The registration is the callback's contract: it must accept every count
//! of the context and make only the adjustments allowed. For an exported
//! `extern "C"` callback the contract replaces klint's blanket rule for
//! exported functions (any context, adjustment 0), which the API's own
//! contract contradicts.

use std::collections::HashSet;

use findings::{Finding, Loc, Note, Severity};
use program::{FnId, FnKind};

use analysis::{Final, Reason, Summary};

use crate::text::loc;
use crate::{Input, krate_index};

findings::declare_kind! {
    /// A function handed to a C API (IRQ handler, RCU callback, timer, `list_lru`
    /// walk, ops table field, ...) cannot run in the context the API's spec entry
    /// says it is called in, e.g. it may sleep but is called in hard-IRQ context.
    ///
    /// Example:
    ///
    /// ```text
    /// fn queue_rq(data: &QueueData, rq: ARef<Request<Self>>, _last: bool) -> Result {
    ///     fsleep(Delta::from_micros(10));   // error: blk-mq may call queue_rq in atomic context
    ///     ...
    /// }
    /// ```
    ///
    /// Fix: do only what the C API's contract allows in the callback (`udelay` instead of `fsleep`), or defer the work (a workqueue).
    pub CALLBACK_CONTEXT, "callback-context", Error, "callbacks",
    "a function handed to a C API (IRQ handler, RCU callback, `list_lru` isolate callback, …) cannot run in the context the API's spec entry says it is called in"
}

findings::declare_kind! {
    /// A callback handed to a C API changes the preemption count in a way the
    /// API's contract does not allow (it returns with a lock held, or releases
    /// one it was not given).
    ///
    /// Example:
    ///
    /// ```text
    /// fn handle(&self) -> IrqReturn {
    ///     core::mem::forget(self.lock.lock());   // error: returns with preemption disabled
    ///     IrqReturn::Handled
    /// }
    /// ```
    ///
    /// Fix: release in the callback everything it takes.
    pub CALLBACK_ADJUSTMENT, "callback-adjustment", Error, "callbacks",
    "such a callback changes the count in a way the API does not allow"
}

/// One Rust function handed to C as a callback.
#[derive(Clone, Debug)]
pub(crate) struct Registration {
    pub callback: FnId,
    pub contract: spec::Contract,
    /// How it reaches C: "registered with `call_rcu`", "stored in
    /// `blk_mq_ops.queue_rq`".
    pub how: String,
    /// Where: a call in a function, or a constant or static's definition.
    pub site: Loc,
    /// The function making the call or using the constant, if any.
    pub by: Option<FnId>,
    /// Who calls it: C (an API's callback, an ops table), or the hardware
    /// (an entry of a vector table).
    pub caller: &'static str,
}

/// Every callback registration in the program, in a stable order (one per
/// callback and contract; the first registration found names the site),
/// and, from the same walk (each body is decoded once for all), the casts
/// that `pointers_and_vtables` checks and the `build_assert!`s.
pub(crate) fn registrations(input: &Input<'_>) -> (Vec<Registration>, crate::BodyWalk) {
    use rayon::prelude::*;
    let program = input.program;
    let mut out: Vec<Registration> = Vec::new();
    let mut add = |r: Registration| {
        if !out
            .iter()
            .any(|o| o.callback == r.callback && o.contract == r.contract)
        {
            out.push(r);
        }
    };
    // Each body's registrations in parallel, then kept in body order: the
    // first registration of a callback and contract names the site, as
    // with a serial walk. What the walk reads of a body alone (its casts,
    // its assertions, whether it holds a code pointer at all) is kept per
    // dump by the per-dump cache; the registrations depend on the spec
    // and the call graph, so they are found on every run, in the bodies
    // that hold a code pointer (a registration needs one).
    let ids: Vec<FnId> = program.bodies().map(|(id, _, _)| id).collect();
    // Each crate's external symbols, made when a body of it is walked.
    let externals: Vec<std::sync::OnceLock<HashSet<&str>>> = program
        .crates
        .iter()
        .map(|_| std::sync::OnceLock::new())
        .collect();
    let facts = program.per_body(BODY_WALK, &ids, |krate, _, body| {
        let pointers = holds_code_pointer(body).then(|| {
            let at = program.crates.iter().position(|c| std::ptr::eq(c, krate));
            let externals = at.map(|at| {
                externals[at].get_or_init(|| {
                    program.crates[at]
                        .dump
                        .externals
                        .iter()
                        .map(|e| e.symbol.as_str())
                        .collect()
                })
            });
            CodePointers::of(&krate.dump, body, externals)
        });
        WalkFacts {
            casts: crate::pointers::casts(body),
            pointers,
            asserts: crate::build_assert::scan(&krate.dump, body),
        }
    });
    #[allow(clippy::type_complexity)]
    let found: Vec<(
        Vec<Registration>,
        crate::pointers::BodyCasts,
        Option<crate::build_assert::BodyAsserts>,
    )> = ids
        .into_par_iter()
        .zip(facts)
        .filter_map(|(id, facts)| {
            let facts = facts?;
            let registrations = facts
                .pointers
                .map(|p| body_registrations(input, id, &p))
                .unwrap_or_default();
            Some((
                registrations,
                crate::pointers::BodyCasts {
                    f: id,
                    casts: facts.casts,
                },
                facts
                    .asserts
                    .map(|a| crate::build_assert::body_asserts(program, id, a)),
            ))
        })
        .collect();
    let mut walk = crate::BodyWalk {
        casts: Vec::with_capacity(found.len()),
        asserts: Vec::new(),
    };
    for (found, body_casts, asserts) in found {
        for r in found {
            add(r);
        }
        walk.casts.push(body_casts);
        walk.asserts.extend(asserts);
    }
    // Stored in an ops table built as a static.
    for (krate, c) in program.crates.iter().enumerate() {
        for s in &c.dump.statics {
            let site = Loc {
                krate: krate as u32,
                span: s.span,
            };
            for r in stored(input, &s.fn_fields, site, None) {
                add(r);
            }
            // A table the hardware calls through (a vector table), by the
            // static's link name: every code pointer in it.
            if let Some(contract) = input.spec.static_contract(&s.symbol) {
                for symbol in &s.fn_ptrs {
                    if let Some(callback) = program.lookup(symbol) {
                        add(Registration {
                            callback,
                            contract: contract.clone(),
                            how: format!("in `{}`", s.symbol),
                            site,
                            by: None,
                            caller: "the hardware",
                        });
                    }
                }
            }
        }
    }
    (out, walk)
}

/// The phase label of [`WalkFacts`].
const BODY_WALK: &str = "checks: body walk, v3";

/// What the checks' walk reads of one body, whatever program it is in.
#[derive(bincode::Encode, bincode::Decode)]
struct WalkFacts {
    casts: Vec<(kmir::Span, kmir::CastKind)>,
    /// Where the body passes code pointers, if it holds one at all: a
    /// function reified or a closure turned into a pointer, or a constant
    /// holding code pointers. Without one it registers no callback
    /// ([`body_registrations`] finds every callback in one of these).
    pointers: Option<CodePointers>,
    asserts: Option<crate::build_assert::AssertFacts>,
}

/// The code pointers of one body that a registration can be made of,
/// whatever program it is in: the functions each call that may reach a C
/// function passes as each argument (`analysis::fn_pointer_source`), and
/// the ops-table fields of the constants it uses. A call may reach a C
/// function if it calls a symbol of the dump's externals (a C function has
/// a body in no dump, and a dump lists every symbol it calls that it does
/// not define) or goes through a `dyn` vtable; a call through a fn pointer
/// reaches only functions with bodies, or code outside the program.
#[derive(bincode::Encode, bincode::Decode)]
struct CodePointers {
    /// Per call (its block and span): per argument that is a code
    /// pointer, its index and the symbols it may be.
    calls: Vec<(u32, kmir::Span, Vec<Passed>)>,
    /// Per constant with code pointers in fields, in the body's order:
    /// where it is shown (the program's own code around it) and the
    /// fields.
    stored: Vec<(kmir::Span, Vec<kmir::FnField>)>,
}

/// An argument of a call that is a code pointer: its index and the
/// symbols it may be.
type Passed = (u32, Vec<kmir::Name>);

impl CodePointers {
    /// `externals`: the dump's external symbols (`None`: every call is
    /// taken as one that may reach C).
    fn of(
        dump: &kmir::CrateDump,
        body: &kmir::Body,
        externals: Option<&HashSet<&str>>,
    ) -> CodePointers {
        let mut calls = Vec::new();
        for (b, block) in body.blocks.iter().enumerate() {
            let kmir::TerminatorKind::Call { args, callee, .. } = &block.terminator.kind else {
                continue;
            };
            let may_reach_c = match callee {
                kmir::Callee::Direct { symbol } => {
                    externals.is_none_or(|e| e.contains(symbol.as_str()))
                }
                kmir::Callee::Virtual { .. } => true,
                _ => false,
            };
            if !may_reach_c {
                continue;
            }
            let passed: Vec<Passed> = args
                .iter()
                .enumerate()
                .filter_map(|(i, op)| {
                    let symbols = analysis::fn_pointer_source(body, op, 0)?;
                    (!symbols.is_empty()).then(|| {
                        (
                            i as u32,
                            symbols.iter().map(|s| kmir::Name::new(s)).collect(),
                        )
                    })
                })
                .collect();
            if !passed.is_empty() {
                calls.push((b as u32, block.terminator.span, passed));
            }
        }
        let mut stored = Vec::new();
        for (c, span) in body.constants() {
            if let kmir::ConstValue::Memory(m) = &c.value
                && !m.fn_fields.is_empty()
            {
                // A constant that an inlined standard library function
                // moves (`UnsafeCell::new(Self::VTABLE)` in optimized MIR)
                // is shown at the function's own code around it.
                let span = crate::placement::own_span_near_in(Some(dump), body, span);
                stored.push((span, m.fn_fields.clone()));
            }
        }
        CodePointers { calls, stored }
    }
}

/// Whether `body` holds a code pointer (see [`WalkFacts::code_pointers`]).
fn holds_code_pointer(body: &kmir::Body) -> bool {
    let reified = body.blocks.iter().flat_map(|b| &b.statements).any(|s| {
        matches!(&s.kind, kmir::StatementKind::Assign { rvalue, .. }
        if matches!(&**rvalue, kmir::Rvalue::Cast {
            kind: kmir::CastKind::ReifyFnPointer { .. } | kmir::CastKind::ClosureFnPointer { .. },
            ..
        }))
    });
    reified
        || body.constants().iter().any(|(c, _)| {
            matches!(&c.value, kmir::ConstValue::Memory(m)
                if !m.fn_ptrs.is_empty() || !m.fn_fields.is_empty())
        })
}

/// The registrations one body makes (its [`CodePointers`]): function
/// pointers passed to C functions with a contract, and those stored in
/// constants it uses.
fn body_registrations(input: &Input<'_>, id: FnId, body: &CodePointers) -> Vec<Registration> {
    let program = input.program;
    let mut out = Vec::new();
    let krate = krate_index(program, id);
    // Passed as an argument of a C function with a contract.
    for (g, edge) in program.callees(id) {
        let register = program.function(g);
        if !matches!(register.kind, FnKind::Foreign) {
            continue;
        }
        let Some(spec) = input.spec.lookup(&register.symbol) else {
            continue;
        };
        let Some((_, span, passed)) = body.calls.iter().find(|(b, ..)| *b == edge.block) else {
            continue;
        };
        for cb in &spec.callbacks {
            let symbols = passed
                .iter()
                .find(|(arg, _)| *arg == cb.arg)
                .map(|(_, s)| s.as_slice())
                .unwrap_or_default();
            for callback in symbols.iter().filter_map(|s| program.lookup(s)) {
                out.push(Registration {
                    callback,
                    contract: cb.contract.clone(),
                    how: format!("registered with `{}`", register.symbol),
                    site: Loc { krate, span: *span },
                    by: Some(id),
                    caller: "C",
                });
            }
        }
    }
    // Stored in an ops table built as a constant.
    for (span, fields) in &body.stored {
        out.extend(stored(input, fields, Loc { krate, span: *span }, Some(id)));
    }
    out
}

/// The registrations of the code pointers of one constant or static whose
/// fields have contracts.
fn stored(
    input: &Input<'_>,
    fields: &[kmir::FnField],
    site: Loc,
    by: Option<FnId>,
) -> Vec<Registration> {
    fields
        .iter()
        .filter_map(|f| {
            let contract = input.spec.field(&f.owner, &f.field)?;
            let callback = input.program.lookup(&f.symbol)?;
            let owner = f.owner.rsplit("::").next().unwrap_or(&f.owner);
            Some(Registration {
                callback,
                contract: contract.clone(),
                how: format!("stored in `{owner}.{}`", f.field),
                site,
                by,
                caller: "C",
            })
        })
        .collect()
}

/// The contract violations: a callback that cannot run in the context it
/// is called in, or that changes the count in a way the API does not allow.
pub(crate) fn check(
    input: &Input<'_>,
    registrations: &[Registration],
    summaries: &[Summary],
) -> Vec<Finding> {
    let program = input.program;
    let mut out = Vec::new();
    for r in registrations {
        let Some((_, inst)) = program.body_of(r.callback) else {
            continue;
        };
        let s = &summaries[r.callback.index()];
        if s.poisoned {
            continue;
        }
        let name = &program.function(r.callback).name;
        let role = &r.contract.role;
        let registered = Note::at(
            r.site,
            match r.by {
                Some(by) => format!("{} here, in `{}`", r.how, program.function(by).name),
                None => format!("{} here", r.how),
            },
        );
        let adjustments: Vec<i32> = s.cases.iter().map(|c| c.adjust).collect();
        let bad_adjust = adjustments.iter().any(|a| !r.contract.adjust.contains(a));
        let allowed: Vec<String> = r.contract.adjust.iter().map(i32::to_string).collect();
        let allowed = allowed.join(" or ");
        if !s.expect.contains(&r.contract.context) {
            // A callback that breaks both halves of the contract is one
            // finding that names both.
            let also = if bad_adjust {
                format!(
                    ", and it changes the count by {} where the API allows {allowed} only",
                    s.adjust_text()
                )
            } else {
                String::new()
            };
            let mut f = Finding::new(
                &CALLBACK_CONTEXT,
                Severity::Error,
                format!(
                    "`{name}` is called by {} with the preemption count {} ({role}), but it expects the preemption count to be {}{also}",
                    r.caller, r.contract.context, s.expect
                ),
            )
            .in_function(r.callback)
            .subject(name.clone());
            // Where a maintainer looks: the first step of the chain in code
            // of the crate that instantiates it (the driver's call, not the
            // generic trampoline in `kernel` that every driver shares).
            let site = own_site(input, summaries, r.callback).or_else(|| {
                // No step in the program's own code that is not shared glue:
                // the callback's own step, unless it is the standard library's.
                let reason = s.reason.as_ref()?;
                (!crate::placement::is_library_fn(program, r.callback))
                    .then_some((r.callback, reason))
            });
            f = match site {
                Some((g, reason)) if (g, reason.span) != (r.callback, inst.span) => {
                    f = f
                        .at(loc(input, g, reason.span))
                        .label(format!(
                            "`{}` {}, which expects {}",
                            program.function(g).name,
                            crate::text::reaches(input, reason),
                            reason.callee_expect
                        ))
                        .note(Note::at(
                            loc(input, r.callback, inst.span),
                            format!("the callback {} calls is `{name}`", r.caller),
                        ));
                    // A drop at a closing brace does not say by itself why
                    // the count is what it is, nor which path it is on.
                    if g == r.callback
                        && (reason.kind == program::EdgeKind::Drop || reason.adj != 0)
                    {
                        for n in why_here(input, r, name, reason) {
                            f = f.note(n);
                        }
                    }
                    f
                }
                _ => f.at(loc(input, r.callback, inst.span)),
            };
            f = f.note(registered.clone());
            for n in crate::text::why_expects(input, &Final(summaries), r.callback) {
                f = f.note(n);
            }
            if let Some((g, _)) = site {
                for n in deeper_drop_paths(input, summaries, g) {
                    f = f.note(n);
                }
            }
            let help = if r.contract.context.contains_value(0) {
                "C calls it in process context: it must not rely on running in atomic context"
            } else if r.caller == "C" {
                "C calls it in atomic context: it must not sleep; defer work that may sleep (to a workqueue, for example)"
            } else {
                "the hardware calls it in atomic context: it must not wait; leave the waiting to thread code (set a flag, pend a lower-priority interrupt)"
            };
            if bad_adjust {
                f = f.note(Note::text(format!(
                    "preemption count adjustment inferred is {}, while C allows {allowed} only",
                    s.adjust_text()
                )));
            }
            out.push(f.note(Note::help(help)));
        } else if bad_adjust {
            out.push(
                Finding::new(
                    &CALLBACK_ADJUSTMENT,
                    Severity::Error,
                    format!(
                        "`{name}` is called by {} ({role}), which allows it to change the preemption count by {allowed} only",
                        r.caller
                    ),
                )
                .at(loc(input, r.callback, inst.span))
                .in_function(r.callback)
                .subject(name.clone())
                .note(Note::text(format!(
                    "preemption count adjustment inferred is {}",
                    s.adjust_text()
                )))
                .note(registered),
            );
        }
    }
    out
}

/// Why the count is what it is at `reason`'s site in the callback itself:
/// the contract C calls it under and what the callback did to the count
/// on the way; for a drop at the end of a scope, the paths that lead to
/// it (an early `return`, the value returned at the end).
fn why_here(input: &Input<'_>, r: &Registration, name: &str, reason: &Reason) -> Vec<Note> {
    let context = &r.contract.context;
    let called = format!(
        "{} calls `{name}` with the count {context} ({}: {})",
        r.caller, r.how, r.contract.role
    );
    let mut notes = vec![Note::text(if reason.adj == 0 {
        format!(
            "the preemption count is {context} here: {called}, and `{name}` has not changed it on the way here"
        )
    } else {
        format!(
            "the preemption count is {} here: {called}, and `{name}` has changed it by {} on the way here",
            context.shift(reason.adj),
            reason.adj
        )
    })];
    if reason.kind == program::EdgeKind::Drop {
        notes.extend(path_notes(input, r.callback, reason, "this drop"));
    }
    notes
}

/// One located note per path that leads to the drop of `reason` in `f`
/// (at most 3): where the path leaves the function.
fn path_notes(input: &Input<'_>, f: FnId, reason: &Reason, the_drop: &str) -> Vec<Note> {
    let mut notes = Vec::new();
    let Some(body) = input.program.body(f) else {
        return notes;
    };
    let name = &input.program.function(f).name;
    let (var, exits) = crate::placement::paths_through_drop(&body, reason.block);
    let what = var.map_or_else(|| "the value".to_string(), |v| format!("`{v}`"));
    let many = exits.len() > 1;
    for (i, e) in exits.iter().take(3).enumerate() {
        let text = if many {
            format!(
                "path {} of {} to {the_drop}: `{name}` leaves from here, and {what} is dropped on the way out",
                i + 1,
                exits.len()
            )
        } else {
            format!(
                "the path to {the_drop}: `{name}` leaves from here, and {what} is dropped on the way out"
            )
        };
        notes.push(Note::at(loc(input, f, *e), text));
    }
    if exits.len() > 3 {
        notes.push(Note::text(format!(
            "… and {} more paths to {the_drop}",
            exits.len() - 3
        )));
    }
    notes
}

/// For a chain that goes on below `site` to a drop at the end of a scope
/// in a function of the program (a helper returning early with `?`): the
/// paths that lead to that drop.
fn deeper_drop_paths(input: &Input<'_>, summaries: &[Summary], site: FnId) -> Vec<Note> {
    let program = input.program;
    let mut current = site;
    let mut seen = vec![current];
    for _ in 0..64 {
        let Some(reason) = summaries
            .get(current.index())
            .and_then(|s| s.reason.as_ref())
        else {
            break;
        };
        if crate::placement::is_library_fn(program, current) {
            break;
        }
        if reason.kind == program::EdgeKind::Drop {
            if current == site {
                break;
            }
            let the_drop = format!(
                "the drop at the end of `{}`",
                program.function(current).name
            );
            return path_notes(input, current, reason, &the_drop);
        }
        if seen.contains(&reason.callee) {
            break;
        }
        seen.push(reason.callee);
        current = reason.callee;
    }
    Vec::new()
}

/// The step of the chain that explains `callback`'s expectation
/// (`Summary::reason`, step by step) where a maintainer can fix it: the
/// first one in a function that is
///
/// * the program's own code, not the standard library's
///   (`placement::is_library_fn`);
/// * code of the crate whose dump holds the instance: a driver's own
///   function rather than a generic one of another crate instantiated for
///   it (the `kernel` crate's `OperationsVTable::<T>::queue_rq_callback`
///   in a driver's dump);
/// * not generic glue: an instance of a generic item whose step calls the
///   implementation of one of its own type arguments (`T::handle(..)` in
///   `handle_irq_callback::<T>`, whichever crate defines it): the step
///   that matters is in that implementation.
///
/// `None` when the chain never reaches such code.
fn own_site<'s>(
    input: &Input<'_>,
    summaries: &'s [Summary],
    callback: FnId,
) -> Option<(FnId, &'s Reason)> {
    let program = input.program;
    let mut current = callback;
    let mut seen = vec![current];
    for _ in 0..64 {
        let reason = summaries.get(current.index())?.reason.as_ref()?;
        let (krate, inst) = program.body_of(current)?;
        let own_crate =
            crate::placement::item_crate(&inst.item_path) == krate.dump.header.crate_name;
        if own_crate
            && !crate::placement::is_library_fn(program, current)
            && !dispatches_to_type_argument(program, current, reason.callee)
        {
            return Some((current, reason));
        }
        if seen.contains(&reason.callee) {
            return None;
        }
        seen.push(reason.callee);
        current = reason.callee;
    }
    None
}

/// Whether `glue`, an instance of a generic item, calls in `callee` the
/// implementation of a trait for one of its type arguments: `callee` is
/// `<X as Trait>::m`, and `X` is in `glue`'s generic arguments but not in
/// its item's path (`kbase::retire_callback::<kdriver::Slow>` calling
/// `<kdriver::Slow as kbase::Retire>::retire`).
fn dispatches_to_type_argument(program: &program::Program, glue: FnId, callee: FnId) -> bool {
    let Some((_, inst)) = program.body_of(glue) else {
        return false;
    };
    let Some(self_ty) = impl_self_type(&program.function(callee).name) else {
        return false;
    };
    let name = &program.function(glue).name;
    name.len() > inst.item_path.len() && name.contains(self_ty) && !inst.item_path.contains(self_ty)
}

/// `X` of a trait method's instance name `<X as Trait>::m`.
fn impl_self_type(name: &str) -> Option<&str> {
    let rest = name.strip_prefix('<')?;
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ' ' if depth == 0 && rest[i..].starts_with(" as ") => return Some(&rest[..i]),
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::impl_self_type;

    #[test]
    fn self_types() {
        assert_eq!(
            impl_self_type("<kdriver::Slow as kbase::Retire>::retire"),
            Some("kdriver::Slow")
        );
        assert_eq!(
            impl_self_type("<a::W<b::X as c::T> as d::U>::m"),
            Some("a::W<b::X as c::T>")
        );
        assert_eq!(
            impl_self_type("kbase::retire_callback::<kdriver::Slow>"),
            None
        );
        assert_eq!(impl_self_type("<[u8] as a::T>::m"), Some("[u8]"));
    }
}
