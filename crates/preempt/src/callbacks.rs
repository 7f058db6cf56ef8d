//! Functions C calls back: a Rust function passed to a C API whose spec
//! says how it calls its callbacks (`callbacks = [...]`: an IRQ handler in
//! hard-IRQ context, an RCU callback in softirq context, a `list_lru` walk
//! callback with the list's spinlock held). The registration is the
//! callback's contract: it must accept every count of the context and make
//! only the adjustments allowed. For an exported `extern "C"` callback the
//! contract replaces klint's blanket rule for exported functions (any
//! context, adjustment 0), which the API's own contract contradicts.

use findings::{Finding, Loc, Note, Severity};
use program::{FnId, FnKind};

use crate::summary::Summary;
use crate::{Input, krate_index};

/// One Rust function handed to C as a callback.
#[derive(Clone, Debug)]
pub(crate) struct Registration {
    pub callback: FnId,
    pub contract: spec::Callback,
    /// The C function it was passed to.
    pub register: String,
    /// Where: the function making the call, and the call's span.
    pub by: FnId,
    pub span: kmir::Span,
}

/// Every callback registration in the program, in a stable order (one per
/// callback and contract; the first registration found names the site).
pub(crate) fn registrations(input: &Input<'_>) -> Vec<Registration> {
    let program = input.program;
    let mut out: Vec<Registration> = Vec::new();
    for (id, _, inst) in program.bodies() {
        let Some(body) = &inst.body else { continue };
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
            for contract in &spec.callbacks {
                let symbols = args
                    .get(contract.arg as usize)
                    .and_then(|op| crate::context::fn_pointer_source(body, op, 0))
                    .unwrap_or_default();
                for callback in symbols.iter().filter_map(|s| program.lookup(s)) {
                    if out
                        .iter()
                        .any(|r| r.callback == callback && r.contract == *contract)
                    {
                        continue;
                    }
                    out.push(Registration {
                        callback,
                        contract: contract.clone(),
                        register: register.symbol.clone(),
                        by: id,
                        span: block.terminator.span,
                    });
                }
            }
        }
    }
    out
}

fn loc(input: &Input<'_>, f: FnId, span: kmir::Span) -> Loc {
    Loc {
        krate: krate_index(input.program, f),
        span,
    }
}

/// The contract violations: a callback that cannot run in the context it
/// is called in, or that changes the count in a way the API does not allow.
pub(crate) fn check(
    input: &Input<'_>,
    registrations: &[Registration],
    summary: &dyn Fn(FnId) -> Summary,
) -> Vec<Finding> {
    let program = input.program;
    let mut out = Vec::new();
    for r in registrations {
        let Some((_, inst)) = program.body_of(r.callback) else {
            continue;
        };
        let s = summary(r.callback);
        if s.poisoned {
            continue;
        }
        let name = &program.function(r.callback).name;
        let role = &r.contract.role;
        let registered = Note::at(
            loc(input, r.by, r.span),
            format!(
                "registered here with `{}`, in `{}`",
                r.register,
                program.function(r.by).name
            ),
        );
        if !s.expect.contains(&r.contract.context) {
            let mut f = Finding::new(
                "callback-context",
                Severity::Error,
                format!(
                    "`{name}` is called by C with the preemption count {} ({role}), but it expects the preemption count to be {}",
                    r.contract.context, s.expect
                ),
            )
            .at(loc(input, r.callback, inst.span))
            .in_function(r.callback)
            .subject(name.clone())
            .note(registered.clone());
            for n in crate::findings_text::why_expects(input, summary, r.callback) {
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
                    "callback-adjustment",
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
