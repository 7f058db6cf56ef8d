//! klint's rule for functions exported to C: their spec entry, else
//! adjustment 0 and any context.

use annotations::ExpectRange;
use findings::{Finding, Loc, Note, Severity};

use analysis::Final;

use crate::text::{why_expects, why_expects_last};
use crate::{Checks, krate_index};

findings::declare_kind! {
    /// A function exported to C with a C ABI must have adjustment 0 and accept
    /// any context (klint's rule), or match its spec entry. Callbacks registered
    /// with a C API are held to that API's contract instead.
    ///
    /// Example:
    ///
    /// ```text
    /// #[no_mangle]
    /// pub extern "C" fn my_callback() { msleep(1); }   // error: C may call it anywhere
    /// ```
    ///
    /// Fix: give the C function that calls it a spec entry with its context (`--spec`), or make it not sleep.
    pub EXTERN_FUNCTION, "extern-function", Error, "exported functions",
    "a function exported to C with a C ABI does not have adjustment 0 / any-context expectation (klint's rule), or its spec entry; callbacks registered with a C API are held to the API's contract instead"
}

impl Checks<'_> {
    /// klint's check of functions exported to C: the spec entry of their
    /// symbol, else adjustment 0 and any context.
    pub(crate) fn exported(&self) -> Vec<Finding> {
        let program = self.input.program;
        let mut out = Vec::new();
        for (id, _, inst) in program.bodies() {
            let f = program.function(id);
            let krate = krate_index(program, id);
            // C can only call what has a C ABI: a Rust-ABI function given
            // an `#[export_name]` (Binder does it so that `ps` shows a
            // readable name) is still called from Rust only, and its
            // callers are checked against it.
            let c_abi = inst
                .fn_sig
                .as_deref()
                .is_some_and(|s| s.starts_with("extern "));
            // A callback registered with a C API is held to that API's
            // contract instead (see `callbacks.rs`).
            let registered = self.callbacks.iter().any(|r| r.callback == id);
            if !inst.exported
                || !c_abi
                || registered
                || self
                    .input
                    .annotations
                    .get(inst.item_path.as_str())
                    .is_some_and(|a| a.preempt.is_some())
            {
                continue;
            }
            let s = self.summary(id);
            if s.poisoned {
                continue;
            }
            let (adj, expect) = match self.input.spec.lookup(&inst.symbol) {
                Some(spec) => (spec.adjust, spec.expect),
                None => (0, ExpectRange::TOP),
            };
            let loc = Loc {
                krate,
                span: inst.span,
            };
            if s.uniform_adjust() != Some(adj) {
                out.push(
                    Finding::new(
                        &EXTERN_FUNCTION,
                        Severity::Error,
                        format!(
                            "extern function `{}` must have preemption count adjustment {adj}",
                            f.name
                        ),
                    )
                    .at(loc)
                    .note(Note::text(format!(
                        "preemption count adjustment inferred is {}",
                        s.adjust_text()
                    )))
                    .in_function(id)
                    .subject(f.name.clone()),
                );
            } else if !s.expect.contains(&expect) {
                let mut finding = Finding::new(
                    &EXTERN_FUNCTION,
                    Severity::Error,
                    format!(
                        "extern function `{}` must have preemption count expectation {expect}",
                        f.name
                    ),
                )
                .at(loc)
                .note(Note::text(format!(
                    "preemption count expectation inferred is {}",
                    s.expect
                )))
                .in_function(id)
                .subject(f.name.clone());
                for n in why_expects(self.input, &Final(self.summaries), id) {
                    finding = finding.note(n);
                }
                out.push(finding);
            } else if !s.expect_last.contains(&expect) {
                let mut finding = Finding::new(
                    &crate::sleep::LAST_REFERENCE_IN_ATOMIC,
                    Severity::Warning,
                    format!(
                        "extern function `{}` must have preemption count expectation {expect}, but if a reference it drops is the last one it expects {}",
                        f.name,
                        s.expect.intersect(&s.expect_last)
                    ),
                )
                .at(loc)
                .in_function(id)
                .subject(f.name.clone());
                for n in why_expects_last(self.input, &Final(self.summaries), id) {
                    finding = finding.note(n);
                }
                out.push(finding);
            }
        }
        out
    }
}
