//! The annotations family: `#[klint::preempt_count]` against the body,
//! malformed attributes, and `report_preempt_count`.

use findings::{Finding, Loc, Note, Severity};

use analysis::{DeclaredView, Overlay, Summary};

use crate::text::{Texts, annotation_loc, declaration_note, loc, why_expects};
use crate::{Checks, krate_index};

findings::declare_kind! {
    /// A `#[klint::preempt_count]` annotation (on the function, or on the trait
    /// method it implements) disagrees with what its body does.
    ///
    /// Example:
    ///
    /// ```text
    /// #[klint::preempt_count(expect = 0..)]   // "any context"
    /// fn log(&self) { self.mutex.lock(); }    // error: the body may sleep
    /// ```
    ///
    /// Fix: make the annotation say what the body does, or change the body.
    pub ANNOTATION_MISMATCH, "annotation-mismatch", Error, "annotations",
    "a `#[klint::preempt_count]` annotation (on the function or the trait method it implements) disagrees with the body"
}

findings::declare_kind! {
    /// A malformed `klint::` or `kanalyze::` attribute (klint's messages), or an
    /// ignored duplicate. The annotation is not used.
    ///
    /// Example:
    ///
    /// ```text
    /// #[klint::preempt_count(adjust = one)]   // error: an integer expected
    /// fn f() {}
    /// ```
    ///
    /// Fix: follow the usage in the help (docs/preemption.md lists the attributes).
    pub BAD_ANNOTATION, "bad-annotation", Error, "annotations",
    "a malformed `klint::`/`kanalyze::` attribute (klint's messages), or an ignored duplicate"
}

findings::declare_kind! {
    /// `#[klint::report_preempt_count]` asks for the inferred summary of the
    /// instance: its adjustment and expectation.
    ///
    /// Example:
    ///
    /// ```text
    /// #[klint::report_preempt_count]
    /// fn f() { ... }   // a note with the inferred adjustment and expectation
    /// ```
    ///
    /// Fix: nothing to fix: it is a question, answered.
    pub REPORT, "report", Note, "annotations",
    "`#[klint::report_preempt_count]`: the inferred summary of the instance"
}

impl Texts<'_, '_> {
    pub fn annotation_mismatch(&self, d: &DeclaredView, inferred: &Summary) -> Vec<Finding> {
        let input = self.input;
        let mut out = Vec::new();
        let subject = if d.on_trait {
            "trait method"
        } else {
            "function"
        };
        let primary = if d.on_trait {
            input
                .program
                .body_of(self.f)
                .map(|(_, i)| i.span)
                .unwrap_or_default()
        } else {
            d.span
        };
        let primary_loc = if d.on_trait || d.builtin {
            loc(input, self.f, primary)
        } else {
            annotation_loc(input, &d.path, primary)
        };
        if let Some(a) = d.adjust
            && !inferred.poisoned
            && inferred.uniform_adjust() != Some(a)
        {
            let but = if d.on_trait {
                format!(
                    "but the adjustment of this implementing function is {}",
                    inferred.adjust_text()
                )
            } else {
                format!("but the adjustment inferred is {}", inferred.adjust_text())
            };
            let mut f = Finding::new(
                &ANNOTATION_MISMATCH,
                Severity::Error,
                format!("{subject} annotated to have preemption count adjustment of {a}"),
            )
            .at(primary_loc)
            .note(Note::text(but))
            .in_function(self.f)
            .subject(format!("{} adjust", d.path));
            if let Some(n) = declaration_note(input, d) {
                f = f.note(n);
            }
            out.push(f);
        }
        if let Some(e) = d.expect
            && !inferred.expect.contains(&e)
        {
            let but = if d.on_trait {
                format!(
                    "but the expectation of this implementing function is {}",
                    inferred.expect
                )
            } else {
                format!("but the expectation inferred is {}", inferred.expect)
            };
            let mut f = Finding::new(
                &ANNOTATION_MISMATCH,
                Severity::Error,
                format!("{subject} annotated to have preemption count expectation of {e}"),
            )
            .at(primary_loc)
            .note(Note::text(but))
            .in_function(self.f)
            .subject(format!("{} expect", d.path));
            if let Some(n) = declaration_note(input, d) {
                f = f.note(n);
            }
            let summaries = Overlay {
                base: self.summaries,
                f: self.f,
                summary: inferred,
            };
            for n in why_expects(input, &summaries, self.f) {
                f = f.note(n);
            }
            out.push(f);
        }
        out
    }
}

impl Checks<'_> {
    /// `#[klint::report_preempt_count]`.
    pub(crate) fn reports(&self) -> Vec<Finding> {
        let program = self.input.program;
        let mut out = Vec::new();
        for (id, _, inst) in program.bodies() {
            let f = program.function(id);
            let krate = krate_index(program, id);
            if !self
                .input
                .annotations
                .get(inst.item_path.as_str())
                .is_some_and(|a| a.report)
            {
                continue;
            }
            let s = self.summary(id);
            out.push(
                Finding::new(
                    &REPORT,
                    Severity::Note,
                    format!("reporting preemption count for instance `{}`", f.name),
                )
                .at(Loc {
                    krate,
                    span: inst.span,
                })
                .note(Note::text(format!(
                    "adjustment is inferred to be {}",
                    s.adjust_text()
                )))
                .note(Note::text(format!(
                    "expectation is inferred to be {}",
                    s.expect
                )))
                .in_function(id)
                .subject(f.name.clone()),
            );
        }
        out
    }
}
