//! The drops family: array and slice drop glues whose elements' drops do
//! not add up (klint's checks; the analysis computes the problem, this
//! module words it).

use findings::{Finding, Loc, Note, Severity};
use program::FnId;

use analysis::DropProblem;

use crate::{Input, krate_index};

findings::declare_kind! {
    /// Dropping an array drops its elements one after another: an element drop
    /// that moves the count leaves the last element at a count its drop does not
    /// allow.
    ///
    /// Example:
    ///
    /// ```text
    /// let guards: [LockOnDrop; 2] = ...;   // each drop releases a lock
    /// drop(guards);                       // error if the count does not allow it
    /// ```
    ///
    /// Fix: drop the elements where each one's expectation is met.
    pub ARRAY_DROP, "array-drop", Error, "drops",
    "dropping an array whose last element runs at a count its drop does not allow"
}

findings::declare_kind! {
    /// A slice has a length unknown statically: dropping it cannot be summarised
    /// when dropping one element changes the preemption count.
    ///
    /// Example:
    ///
    /// ```text
    /// let guards: Box<[LockOnDrop]> = ...;
    /// drop(guards);   // error: the adjustment depends on the slice's length
    /// ```
    ///
    /// Fix: use a fixed-size array, or drop the elements one by one.
    pub SLICE_DROP, "slice-drop", Error, "drops",
    "dropping a slice whose element's drop changes the count"
}

/// The finding for a drop glue's problem.
pub(crate) fn finding(input: &Input<'_>, f: FnId, problem: &DropProblem) -> Option<Finding> {
    let (_, inst) = input.program.body_of(f)?;
    let loc = Loc {
        krate: krate_index(input.program, f),
        span: inst.span,
    };
    Some(match problem {
        DropProblem::Array {
            elem_expect,
            last,
            ty,
        } => Finding::new(
            &ARRAY_DROP,
            Severity::Error,
            format!("dropping element of array expects the preemption count to be {elem_expect}"),
        )
        .at(loc)
        .note(Note::text(format!(
            "but the possible preemption count when dropping the last element is {last}"
        )))
        .note(Note::text(format!("array being dropped is `{ty}`")))
        .in_function(f)
        .subject(ty.clone()),
        DropProblem::Slice {
            elem_glue,
            elem_adjust,
            ty,
        } => {
            // The slice glue that an array's glue drops its elements
            // through is summarised by the array rule in its caller; it is
            // a slice drop only where a real slice is dropped.
            if only_for_arrays(input, f) {
                return None;
            }
            let elem_name = &input.program.function(*elem_glue).name;
            Finding::new(
                &SLICE_DROP,
                Severity::Error,
                "dropping element of slice causes non-zero preemption count adjustment",
            )
            .at(loc)
            .note(Note::text(format!(
                "adjustment for dropping `{elem_name}` is {elem_adjust}"
            )))
            .note(Note::text(
                "because slice can contain variable number of elements, adjustment for dropping the slice cannot be computed statically",
            ))
            .in_function(f)
            .subject(ty.clone())
        }
    })
}

/// Whether every caller of the slice glue `f` is the drop glue of an array.
fn only_for_arrays(input: &Input<'_>, f: FnId) -> bool {
    let callers = input.program.callers(f);
    !callers.is_empty()
        && callers.iter().all(|(g, _)| {
            input
                .program
                .body_of(*g)
                .is_some_and(|(krate, inst)| match inst.kind {
                    kmir::InstanceKind::DropGlue { ty } => krate
                        .dump
                        .ty(ty)
                        .is_some_and(|t| matches!(t.kind, kmir::TyKind::Array { .. })),
                    _ => false,
                })
        })
}
