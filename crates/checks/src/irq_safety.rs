//! IRQ safety: a spinning lock class taken in hard-IRQ context and
//! elsewhere with interrupts enabled.

use std::collections::{BTreeMap, BTreeSet};

use findings::{Finding, Note, Severity};
use program::FnId;
use spec::LockKind;

use analysis::{Summary, Take};
use memory::LockClass;

use crate::Input;
use crate::callbacks::Registration;
use crate::lock_state::{chain_notes, locks_on_return, take_site};
use crate::text::{loc, name};

findings::declare_kind! {
    /// A spinning lock class taken in hard-IRQ context and, elsewhere, with
    /// interrupts enabled: the interrupt can arrive while the lock is held on the
    /// same CPU, and its handler then spins forever. Take it with the `_irqsave`
    /// variant outside the handler.
    ///
    /// Example:
    ///
    /// ```text
    /// fn handler(&self) { let _g = self.stats.lock(); }   // in hard-IRQ context
    /// pub fn read(&self) -> u32 { *self.stats.lock() }    // error: interrupts enabled here
    /// ```
    ///
    /// Fix: take the lock with interrupts off everywhere (`SpinLockIrq`, `lock_irqsave`).
    pub IRQ_UNSAFE_LOCK, "irq-unsafe-lock", Error, "IRQ safety",
    "a spinning lock class taken in hard-IRQ context and elsewhere with interrupts enabled"
}

/// The hard-IRQ handlers: annotated `#[kanalyze::irq_handler]`, or
/// registered with a C function whose spec calls the callback in hard-IRQ
/// context (`request_irq`, `request_threaded_irq` and their `devm_` forms).
pub(crate) fn irq_handlers(
    input: &Input<'_>,
    registrations: &[Registration],
) -> Vec<(FnId, String)> {
    let program = input.program;
    let mut out: Vec<(FnId, String)> = Vec::new();
    for (id, _, inst) in program.bodies() {
        let annotated = input
            .annotations
            .get(inst.item_path.as_str())
            .is_some_and(|a| {
                a.kanalyze
                    .iter()
                    .any(|(k, _)| *k == annotations::KanalyzeAnnotation::IrqHandler)
            });
        if annotated {
            out.push((id, "annotated `#[kanalyze::irq_handler]`".to_string()));
        }
    }
    for r in registrations {
        if r.contract.hardirq && !out.iter().any(|(g, _)| *g == r.callback) {
            out.push((
                r.callback,
                match r.by {
                    Some(by) => format!("{} by `{}`", r.how, program.function(by).name),
                    None => r.how.clone(),
                },
            ));
        }
    }
    out
}

/// How to take a lock with interrupts disabled, in the spec's terms: the
/// sections that disable them (a firmware's critical sections), or the
/// kernel's `_irqsave` locks.
fn masking_help(spec: &spec::Spec) -> String {
    let sections: Vec<String> = spec
        .rust_lock_entries()
        .filter(|(_, r)| r.section.is_some_and(|s| s.kind.disables_irqs()))
        .map(|(path, _)| format!("`{path}`"))
        .collect();
    if sections.is_empty() {
        "take the lock with interrupts disabled outside the handler (`spin_lock_irqsave`, `SpinLockIrq`)".to_string()
    } else {
        format!(
            "outside the handler, take the lock only inside a critical section ({})",
            sections.join(", ")
        )
    }
}

fn spinning(kind: LockKind) -> bool {
    matches!(
        kind,
        LockKind::Spin
            | LockKind::SpinIrq
            | LockKind::SpinBh
            | LockKind::RawSpin
            | LockKind::ReadLock
            | LockKind::WriteLock
            | LockKind::RawSpinIrq
            | LockKind::ReadLockIrq
            | LockKind::WriteLockIrq
    )
}

/// A spinning lock class taken in hard-IRQ context and, elsewhere, with
/// interrupts enabled: the interrupt can arrive while the lock is held on
/// the same CPU, and its handler then spins forever.
/// The findings, and how many handlers there are.
pub(crate) fn irq_safety(
    input: &Input<'_>,
    summaries: &[Summary],
    registrations: &[Registration],
) -> (Vec<Finding>, usize) {
    let handlers = irq_handlers(input, registrations);
    let is_lock_fn = |g: FnId| locks_on_return(&summaries[g.index()]);
    if handlers.is_empty() {
        return (Vec::new(), 0);
    }
    let program = input.program;
    let fix = masking_help(input.spec);
    let mut in_irq: BTreeMap<LockClass, (FnId, &Take, &str)> = BTreeMap::new();
    for (h, why) in &handlers {
        for t in &summaries[h.index()].takes {
            if spinning(t.kind) {
                in_irq
                    .entry(t.lock.class().clone())
                    .or_insert((*h, t, why.as_str()));
            }
        }
    }
    // Process context: every function nothing in the program calls (entry
    // points, callbacks from C), except the handlers themselves.
    let mut out = Vec::new();
    let mut reported: BTreeSet<LockClass> = BTreeSet::new();
    for (id, _, _) in program.bodies() {
        if handlers.iter().any(|(h, _)| *h == id) || !program.callers(id).is_empty() {
            continue;
        }
        for t in &summaries[id.index()].takes {
            if t.irqs_disabled || t.trylock || !spinning(t.kind) {
                continue;
            }
            let class = t.lock.class();
            let Some((h, irq_take, why)) = in_irq.get(class) else {
                continue;
            };
            if !reported.insert(class.clone()) {
                continue;
            }
            let (root_fn, root_site) = take_site(t);
            let (irq_fn, irq_site) = take_site(irq_take);
            let mut finding = Finding::new(
                &IRQ_UNSAFE_LOCK,
                Severity::Error,
                format!(
                    "lock `{class}` is acquired in hard-IRQ context and, elsewhere, with interrupts enabled"
                ),
            )
            .at(loc(input, root_fn, root_site))
            .label("acquired here with interrupts enabled")
            .in_function(id)
            .subject(class.0.clone());
            for n in chain_notes(input, t, 1, &is_lock_fn) {
                finding = finding.note(n);
            }
            finding = finding.note(Note::at(
                loc(input, irq_fn, irq_site),
                format!(
                    "it is acquired here in hard-IRQ context: `{}` is an interrupt handler ({why})",
                    name(input, *h)
                ),
            ));
            for n in chain_notes(input, irq_take, 1, &is_lock_fn) {
                finding = finding.note(n);
            }
            finding = finding
            .note(Note::text(
                "if the interrupt arrives on this CPU while the lock is held here, the handler spins on it forever",
            ))
            .note(Note::help(fix.clone()));
            out.push(finding);
        }
    }
    (out, handlers.len())
}
