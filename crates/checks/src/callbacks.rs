//! Functions C calls back, and the context C calls them in:
//!
//! * a Rust function passed to a C function whose spec entry has a
//!   `callbacks = [...]` contract (an IRQ handler in hard-IRQ context, an RCU
//!   callback in softirq context, a `list_lru` walk callback with the list's
//!   spinlock held);
//! * a Rust function stored in a field of an ops table (a constant or a
//!   static of a C struct type) whose `[field]` spec entry has a contract
//!   (`blk_mq_ops.queue_rq` under `rcu_read_lock()`, `blk_mq_ops.complete`
//!   in interrupt context).
//!
//! The registration is the callback's contract: it must accept every count
//! of the context and make only the adjustments allowed. For an exported
//! `extern "C"` callback the contract replaces klint's blanket rule for
//! exported functions (any context, adjustment 0), which the API's own
//! contract contradicts.

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
}

/// Every callback registration in the program, in a stable order (one per
/// callback and contract; the first registration found names the site).
pub(crate) fn registrations(input: &Input<'_>) -> Vec<Registration> {
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
    for (id, _, inst) in program.bodies() {
        let Some(body) = &inst.body else { continue };
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
            let Some(block) = body.block(edge.block) else {
                continue;
            };
            let kmir::TerminatorKind::Call { args, .. } = &block.terminator.kind else {
                continue;
            };
            for cb in &spec.callbacks {
                let symbols = args
                    .get(cb.arg as usize)
                    .and_then(|op| analysis::fn_pointer_source(body, op, 0))
                    .unwrap_or_default();
                for callback in symbols.iter().filter_map(|s| program.lookup(s)) {
                    add(Registration {
                        callback,
                        contract: cb.contract.clone(),
                        how: format!("registered with `{}`", register.symbol),
                        site: Loc {
                            krate,
                            span: block.terminator.span,
                        },
                        by: Some(id),
                    });
                }
            }
        }
        // Stored in an ops table built as a constant.
        for (c, span) in body.constants() {
            if let kmir::ConstValue::Memory(m) = &c.value {
                for r in stored(input, &m.fn_fields, Loc { krate, span }, Some(id)) {
                    add(r);
                }
            }
        }
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
        }
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
        if !s.expect.contains(&r.contract.context) {
            let mut f = Finding::new(
                &CALLBACK_CONTEXT,
                Severity::Error,
                format!(
                    "`{name}` is called by C with the preemption count {} ({role}), but it expects the preemption count to be {}",
                    r.contract.context, s.expect
                ),
            )
            .in_function(r.callback)
            .subject(name.clone());
            // Where a maintainer looks: the first step of the chain in code
            // of the crate that instantiates it (the driver's call, not the
            // generic trampoline in `kernel` that every driver shares).
            f = match own_site(input, summaries, r.callback) {
                Some((g, reason)) if (g, reason.span) != (r.callback, inst.span) => f
                    .at(loc(input, g, reason.span))
                    .label(format!(
                        "here `{}` {}, which expects {}",
                        program.function(g).name,
                        crate::text::reaches(input, reason),
                        reason.callee_expect
                    ))
                    .note(Note::at(
                        loc(input, r.callback, inst.span),
                        format!("the callback C calls is `{name}`"),
                    )),
                _ => f.at(loc(input, r.callback, inst.span)),
            };
            f = f.note(registered.clone());
            for n in crate::text::why_expects(input, &Final(summaries), r.callback) {
                f = f.note(n);
            }
            let help = if r.contract.context.contains_value(0) {
                "C calls it in process context: it must not rely on running in atomic context"
            } else {
                "C calls it in atomic context: it must not sleep; defer work that may sleep (to a workqueue, for example)"
            };
            out.push(f.note(Note::help(help)));
        }
        let adjustments: Vec<i32> = s.cases.iter().map(|c| c.adjust).collect();
        if adjustments.iter().any(|a| !r.contract.adjust.contains(a)) {
            let allowed: Vec<String> = r.contract.adjust.iter().map(i32::to_string).collect();
            out.push(
                Finding::new(
                    &CALLBACK_ADJUSTMENT,
                    Severity::Error,
                    format!(
                        "`{name}` is called by C ({role}), which allows it to change the preemption count by {} only",
                        allowed.join(" or ")
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

/// The first step of the chain that explains `callback`'s expectation
/// (`Summary::reason`, step by step) that lies in code of the crate whose
/// dump holds the instance: a driver's own function rather than a generic
/// one of another crate instantiated for it. `None` when the chain never
/// reaches such code.
fn own_site<'s>(
    input: &Input<'_>,
    summaries: &'s [Summary],
    callback: FnId,
) -> Option<(FnId, &'s Reason)> {
    let mut current = callback;
    let mut seen = vec![current];
    for _ in 0..64 {
        let reason = summaries.get(current.index())?.reason.as_ref()?;
        let (krate, inst) = input.program.body_of(current)?;
        let own_crate = inst
            .item_path
            .split("::")
            .next()
            .is_some_and(|c| c.trim_start_matches('<') == krate.dump.header.crate_name);
        if own_crate {
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
