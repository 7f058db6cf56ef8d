//! The sleep family: a call or drop whose callee's expectation the
//! preemption count at the site cannot meet.

use findings::{Finding, Note, Severity};
use program::EdgeKind;

use analysis::{Overlay, Summaries, Violation};

use crate::text::{Texts, loc, name, why_expects, why_expects_last};

findings::declare_kind! {
    /// A call or drop whose callee expects a preemption count that the count at
    /// this point cannot have: typically something that may sleep (expects 0)
    /// reached while a spinlock is held, preemption or interrupts are disabled,
    /// or inside an RCU read-side section. The notes say where the count was
    /// raised and the chain of calls that makes the callee expect what it
    /// expects. Release the lock first, move the sleeping work out of the atomic
    /// section, or use a non-sleeping variant (e.g. `GFP_ATOMIC`).
    ///
    /// Example:
    ///
    /// ```text
    /// let guard = dev.state.lock();   // a SpinLock: preemption is off
    /// msleep(10);                      // error: msleep may sleep
    /// ```
    ///
    /// Fix: release the lock before sleeping (`drop(guard)`), or use the non-sleeping variant (`udelay`, `GFP_ATOMIC`).
    pub SLEEP_IN_ATOMIC, "sleep-in-atomic", Error, "sleep",
    "a call or drop whose callee's expectation (e.g. \"may sleep\": count 0) cannot be met at that point"
}

findings::declare_kind! {
    /// A call or drop that needs another count only if a reference it drops is
    /// the last one: the object's teardown (behind `refcount_dec_and_test`) may
    /// sleep, and would run under the lock held here. Whether this reference can
    /// be the last one depends on invariants the code does not state; make sure
    /// another reference outlives this point, or drop it after the lock is
    /// released.
    ///
    /// The analysis keeps these apart from `sleep-in-atomic` because it does
    /// not track reference counts: an `Arc` dropped under a spinlock is a bug
    /// only if it can be the last reference there. The chain in the notes
    /// ends at the teardown step that needs the count (a mutex, an allocation,
    /// a C function that sleeps).
    ///
    /// When a field is what makes the teardown sleep and the program empties
    /// that field before the last reference can go (a file taken out in a
    /// release function), declare it: `#[kanalyze::empty_at_teardown]` on the
    /// field, or an entry of an invariants file (`--invariants FILE`,
    /// docs/invariants.md). Declarations are trusted, checked to name real
    /// code, and audited (`--audit-invariants`). A CI that wants these to fail
    /// the build passes `--deny last-reference-in-atomic`.
    ///
    /// The opposite declaration, `#[kanalyze::holds_last]` (or a
    /// `[[holds_last]]` entry), says a reference taken out of a field can
    /// be the last one (the list a teardown drains after every other holder
    /// let go): its drop under such a lock is then a `sleep-in-atomic` error
    /// citing the declaration.
    ///
    /// Example:
    ///
    /// ```text
    /// let mut cur = reg.current.lock();   // SpinLock<Option<Arc<Device>>>
    /// drop(cur.take());                   // warning: Device::drop takes a mutex
    /// ```
    ///
    /// Fix: take the value out under the lock and drop it after: `let old = reg.current.lock().take(); drop(old);`.
    pub LAST_REFERENCE_IN_ATOMIC, "last-reference-in-atomic", Warning, "sleep",
    "a call or drop whose callee needs another count only if a reference it drops is the last one (an `Arc` teardown behind `refcount_dec_and_test`); see docs/preemption.md"
}

impl Texts<'_, '_> {
    pub fn violation(&self, v: &Violation) -> Finding {
        let input = self.input;
        let callee = name(input, v.target.callee);
        let what = if v.target.kind == EdgeKind::Drop {
            "drop"
        } else {
            "call"
        };
        // The userspace profile (its spec leaves C functions unconstrained).
        let userspace = input.spec.unknown == spec::Unknown::NoConstraint;
        let section = crate::text::section_of(input, v.target.callee).filter(|_| !v.last_reference);
        let mut finding = if let Some((_, sec)) = &section {
            // What the closure of a section expects is expected one context
            // deeper: the callee's own expectation says less than the
            // closure's, so the message is about the closure.
            Finding::new(
                &SLEEP_IN_ATOMIC,
                Severity::Error,
                format!(
                    "the closure this call runs with {} may block",
                    crate::text::context_phrase(sec.kind)
                ),
            )
        } else if v.last_reference {
            Finding::new(
                &LAST_REFERENCE_IN_ATOMIC,
                Severity::Warning,
                format!(
                    "if this {what} releases the last reference to an object, its teardown expects the preemption count to be {}",
                    v.callee_expect
                ),
            )
        } else if userspace && v.callee_expect == annotations::ExpectRange::exactly(0) {
            // Outside the kernel there is no preemption count to speak
            // of: what is counted is the atomic contexts held.
            Finding::new(
                &SLEEP_IN_ATOMIC,
                Severity::Error,
                format!("this {what} may block, but the context is atomic here"),
            )
        } else {
            Finding::new(
                &SLEEP_IN_ATOMIC,
                Severity::Error,
                format!(
                    "this {what} expects the preemption count to be {}",
                    v.callee_expect
                ),
            )
        }
        .at(loc(input, self.f, v.span))
        .label(match v.target.kind {
            EdgeKind::Drop => format!("`{callee}` runs here"),
            EdgeKind::Virtual => format!("this dynamic call may reach `{callee}`"),
            EdgeKind::Indirect => format!("this call through a pointer may reach `{callee}`"),
            EdgeKind::Call => format!("`{callee}` is called here"),
        })
        .in_function(self.f)
        .subject(callee.clone());
        finding = finding.note(Note::text(if let Some((path, sec)) = &section {
            let needs = self
                .summaries
                .get(v.target.callee)
                .reason
                .as_ref()
                .map_or(String::new(), |r| format!(", and the closure needs {}", r.callee_expect));
            format!(
                "`{path}` runs its closure with {}: the count of atomic contexts held inside is {}{needs}",
                crate::text::context_phrase(sec.kind),
                v.possible.shift(1),
            )
        } else if v.unknown_adjustment {
            "but the preemption count is not known at this point (it changes differently on different paths or loop iterations)".to_string()
        } else if v.possible.is_empty() {
            "but no preemption count here is consistent with what the function needs before this point".to_string()
        } else if userspace {
            format!(
                "the count of atomic contexts held here (spinning locks, sections annotated atomic) is {}, and the callee needs {}",
                v.possible, v.callee_expect
            )
        } else {
            format!("but the possible preemption count at this point is {}", v.possible)
        }));
        // Where the count was raised in this function.
        let raised: Vec<Note> = input
            .program
            .callees(self.f)
            .into_iter()
            .filter(|(g, e)| {
                e.block != v.block
                    && self
                        .summaries
                        .get(*g)
                        .uniform_adjust()
                        .is_some_and(|a| a > 0)
            })
            .filter(|(_, e)| (e.span.lo_line, e.span.lo_col) <= (v.span.lo_line, v.span.lo_col))
            .take(3)
            .map(|(g, e)| {
                Note::at(
                    loc(input, self.f, e.span),
                    format!(
                        "the preemption count is raised by {} here by `{}`",
                        self.summaries.get(g).adjust_text(),
                        name(input, g)
                    ),
                )
            })
            .collect();
        if v.held.is_empty() {
            for n in raised {
                finding = finding.note(n);
            }
        }
        // The locks held, each where it was taken (the preemption count is
        // raised by taking a spinning one).
        for h in &v.held {
            finding = finding.note(Note::at(
                loc(input, self.f, h.at.span),
                format!(
                    "{} is held here: acquired by `{}`",
                    crate::lock_state::held_phrase(h),
                    name(input, h.at.callee)
                ),
            ));
        }
        // A specialised callee: its own first step, then the general chain.
        let overlay;
        let summaries: &dyn Summaries = match &v.specialised {
            Some(s) => {
                overlay = Overlay {
                    base: self.summaries,
                    f: v.target.callee,
                    summary: s,
                };
                &overlay
            }
            None => self.summaries,
        };
        if v.specialised.is_some() {
            finding = finding.note(Note::text(format!(
                "`{callee}` was analysed again with the constant arguments of this call (flags, fn pointers); it still expects {}",
                v.callee_expect
            )));
        }
        if v.last_reference {
            for n in why_expects_last(input, summaries, v.target.callee) {
                finding = finding.note(n);
            }
            finding = finding
                .note(Note::text(
                    "the teardown runs only when a reference count reaches zero; the analysis does not track reference counts: it takes a drop as not the last one only where what it releases is provably kept alive past it (a clone of what a borrow that outlives the function, a local dropped later, or a container in the data of a lock still held, still holds), and found no such reference here",
                ))
                .note(Note::help(
                    "if another reference is alive here on every path (for example one owned by the object whose lock is held), this is not a bug; otherwise let the value be dropped after the lock is released (bind it to a variable declared before the guard). If the reference was taken out of a field whose every object is kept alive elsewhere, declare it: `#[kanalyze::kept_alive(\"why\")]` on the field (docs/invariants.md); if a library call returns a count on the object one of its arguments refers to, say so in a spec file (`[rust]`, `returns_object_of`, crates/spec/README.md). If instead the reference can be the last one (taken off a list that a teardown drains after every other holder let go), declare `#[kanalyze::holds_last(\"why\")]` on the field, and this becomes an error",
                ));
        } else if let Some(d) = input.invariants.last_at(self.f, v.block) {
            // The teardown's expectation is this drop's own by a
            // declaration: the chain that reaches it is the teardown's,
            // unless the drop needs the count even when not the last.
            let plain = why_expects(input, summaries, v.target.callee);
            let notes = if plain.is_empty() {
                why_expects_last(input, summaries, v.target.callee)
            } else {
                plain
            };
            for n in notes {
                finding = finding.note(n);
            }
            finding = finding
                .note(Note::text(format!(
                    "the reference dropped here can be the last one: {} (declared at {}{})",
                    d.describe(),
                    d.declared_at(input.program),
                    d.because
                        .as_deref()
                        .map_or(String::new(), |b| format!(": {b}"))
                )))
                .note(Note::help(
                    "let the value be dropped after the lock is released: take it out under the lock into a variable declared before the guard, and drop it once the guard is gone",
                ));
        } else {
            for n in why_expects(input, summaries, v.target.callee) {
                finding = finding.note(n);
            }
        }
        finding
    }
}
