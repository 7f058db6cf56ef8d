//! The wording of the preemption findings: klint's messages, plus the
//! explanation chain of why a callee expects what it expects.

use annotations::ExpectRange;
use findings::{Finding, Loc, Note, Severity};
use program::{EdgeKind, FnId, FnKind};

use crate::body::{AdjustFailure, Violation};
use crate::summary::{Source, Summary};
use crate::{DeclaredView, Input, krate_index};
use domains::Adj;

/// How many "because it calls …" notes a chain shows at most.
const MAX_CHAIN: usize = 12;

/// How far the chain is followed to find what finally sleeps.
const MAX_WALK: usize = 256;

pub(crate) struct Texts<'a, 'b> {
    pub input: &'a Input<'b>,
    pub lookup: &'a (dyn Fn(FnId) -> Summary + Sync),
    pub f: FnId,
}

fn name(input: &Input<'_>, f: FnId) -> String {
    input.program.function(f).name.clone()
}

pub(crate) fn loc(input: &Input<'_>, f: FnId, span: kmir::Span) -> Loc {
    Loc {
        krate: krate_index(input.program, f),
        span,
    }
}

/// Notes explaining why `f` has the expectation it has, down to where it
/// comes from: a spec entry, an annotation, a default.
pub(crate) fn why_expects(
    input: &Input<'_>,
    lookup: &dyn Fn(FnId) -> Summary,
    f: FnId,
) -> Vec<Note> {
    shorten(why_chain(input, lookup, f))
}

/// How a reason's site reaches its callee, as a verb phrase.
fn reaches(input: &Input<'_>, r: &crate::summary::Reason) -> String {
    let callee = name(input, r.callee);
    match r.kind {
        EdgeKind::Drop => format!("drops a value here (its drop glue is `{callee}`)"),
        EdgeKind::Virtual => format!("makes a dynamic call that may reach `{callee}`"),
        EdgeKind::Indirect => format!("calls a function pointer that may be `{callee}`"),
        EdgeKind::Call => format!("calls `{callee}`"),
    }
}

/// A note at a reason's site; drop glue has no source of its own (its span
/// is core's `drop_in_place`, which would only distract).
fn site_note(input: &Input<'_>, current: FnId, span: kmir::Span, text: String) -> Note {
    let is_glue = input
        .program
        .body_of(current)
        .is_some_and(|(_, i)| matches!(i.kind, kmir::InstanceKind::DropGlue { .. }));
    if is_glue {
        Note::text(text)
    } else {
        Note::at(loc(input, current, span), text)
    }
}

/// Notes explaining why `f` needs what it needs if a reference it drops is
/// the last one: down through the destructors to the function that tears
/// the object down, then on as an ordinary chain.
pub(crate) fn why_expects_last(
    input: &Input<'_>,
    lookup: &dyn Fn(FnId) -> Summary,
    f: FnId,
) -> Vec<Note> {
    let mut notes = Vec::new();
    let mut current = f;
    let mut seen = vec![f];
    for _ in 0..MAX_WALK {
        let s = lookup(current);
        let Some(r) = &s.reason_last else { break };
        let who = name(input, current);
        let verb = reaches(input, r);
        if r.via_last {
            let text = format!(
                "`{who}` expects the preemption count to be {} if a reference it drops is the last one, because it {verb}",
                s.expect_last
            );
            notes.push(site_note(input, current, r.span, text));
            if seen.contains(&r.callee) {
                break;
            }
            seen.push(r.callee);
            current = r.callee;
        } else {
            let text = format!(
                "when the reference count reaches zero, `{who}` tears the object down: it {verb}, which expects {}",
                r.callee_expect
            );
            notes.push(site_note(input, current, r.span, text));
            notes.extend(why_chain(input, lookup, r.callee));
            break;
        }
    }
    shorten(notes)
}

/// The whole chain of why `f` expects what it expects.
fn why_chain(input: &Input<'_>, lookup: &dyn Fn(FnId) -> Summary, f: FnId) -> Vec<Note> {
    let mut notes = Vec::new();
    let mut current = f;
    let mut seen = vec![f];
    // A specialised step's callee is explained by its specialisation.
    let mut next_summary: Option<Summary> = None;
    for _ in 0..MAX_WALK {
        let s = next_summary.take().unwrap_or_else(|| lookup(current));
        let who = name(input, current);
        match &s.source {
            Source::Inferred | Source::Recursive => {
                let Some(r) = &s.reason else { break };
                let verb = reaches(input, r);
                let at = if r.adj == 0 {
                    String::new()
                } else {
                    format!(
                        " with the preemption count raised by {} since its entry",
                        r.adj
                    )
                };
                let text = format!(
                    "`{who}` expects the preemption count to be {} because it {verb}{at}, which expects {}",
                    s.expect, r.callee_expect
                );
                notes.push(site_note(input, current, r.span, text));
                if seen.contains(&r.callee) {
                    break;
                }
                seen.push(r.callee);
                next_summary = r.callee_summary.as_deref().cloned();
                current = r.callee;
            }
            Source::Annotation { path, .. } => {
                let span = input
                    .annotations
                    .get(path)
                    .and_then(|a| a.preempt.as_ref().or(a.drop_preempt.as_ref()))
                    .map(|(_, s)| *s);
                let builtin = if span.is_none() && annotations::core_out_of_band(path).is_some() {
                    " (klint's built-in annotation for `core`)"
                } else {
                    ""
                };
                let text = format!(
                    "`{who}` is annotated to expect the preemption count to be {}{builtin}",
                    s.expect
                );
                notes.push(match span {
                    Some(sp) => Note::at(annotation_loc(input, path, sp), text),
                    None => Note::text(text),
                });
                break;
            }
            Source::Spec { name: c } => {
                let why = input
                    .spec
                    .lookup(c)
                    .and_then(|s| s.note.clone())
                    .unwrap_or_default();
                let why = if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                };
                let flagged = match &s.sleeps_if_flag {
                    Some(cond) => format!(
                        ", or {} when its {} argument may have a bit of {:#x} set",
                        cond.expect_if_set,
                        ordinal(cond.arg + 1),
                        cond.mask
                    ),
                    None => String::new(),
                };
                notes.push(Note::text(format!(
                    "`{c}` is a C function that expects the preemption count to be {}{flagged} (kernel spec{why})",
                    s.expect
                )));
                break;
            }
            Source::UnknownForeign => {
                notes.push(Note::text(format!(
                    "`{}` is a C function the spec does not describe, so it is assumed to sleep",
                    input.program.function(current).symbol
                )));
                notes.push(Note::help("describe it in a spec file (`--spec FILE`) or annotate its `extern` declaration with `#[klint::preempt_count(...)]`"));
                break;
            }
            Source::UnknownIndirect => {
                notes.push(Note::text(format!(
                    "`{who}` stands for code reached through a pointer or vtable from outside the program; it is assumed to sleep"
                )));
                break;
            }
            Source::NotExtracted | Source::Builtin => break,
        }
    }
    notes
}

/// A long chain keeps its start (where the call is) and its end (what
/// finally sleeps); the drops and calls in between are counted.
fn shorten(mut notes: Vec<Note>) -> Vec<Note> {
    if notes.len() > MAX_CHAIN {
        let tail = notes.split_off(notes.len() - 4);
        let omitted = notes.len() - (MAX_CHAIN - 5);
        notes.truncate(MAX_CHAIN - 5);
        notes.push(Note::text(format!(
            "… {omitted} more drops and calls in between (`kanalyze summary` on a function shows its step) …"
        )));
        notes.extend(tail);
    }
    notes
}

/// The crate whose file table holds an annotation's span: the first crate
/// that has an item with that path.
/// Where the annotation a function is checked against comes from, when
/// the primary span does not show it.
fn declaration_note(input: &Input<'_>, d: &DeclaredView) -> Option<Note> {
    if d.builtin {
        Some(Note::text(format!(
            "`{}` has klint's built-in annotation for `core` (adjustment 0, any context): code reached from it must not sleep",
            d.path
        )))
    } else if d.on_trait {
        Some(Note::at(
            annotation_loc(input, &d.path, d.span),
            "the trait method is defined here",
        ))
    } else {
        None
    }
}

fn annotation_loc(input: &Input<'_>, path: &str, span: kmir::Span) -> Loc {
    let krate = input
        .program
        .crates
        .iter()
        .position(|c| c.dump.items.iter().any(|i| i.path == path))
        .unwrap_or(0) as u32;
    Loc { krate, span }
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
        let mut finding = if v.last_reference {
            Finding::new(
                "last-reference-in-atomic",
                Severity::Warning,
                format!(
                    "if this {what} releases the last reference to an object, its teardown expects the preemption count to be {}",
                    v.callee_expect
                ),
            )
        } else {
            Finding::new(
                "sleep-in-atomic",
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
        finding = finding.note(Note::text(if v.unknown_adjustment {
            "but the preemption count is not known at this point (it changes differently on different paths or loop iterations)".to_string()
        } else if v.possible.is_empty() {
            "but no preemption count here is consistent with what the function needs before this point".to_string()
        } else {
            format!("but the possible preemption count at this point is {}", v.possible)
        }));
        // Where the count was raised in this function.
        let raised: Vec<Note> = input
            .program
            .callees(self.f)
            .into_iter()
            .filter(|(g, e)| {
                e.block != v.block && (self.lookup)(*g).uniform_adjust().is_some_and(|a| a > 0)
            })
            .filter(|(_, e)| (e.span.lo_line, e.span.lo_col) <= (v.span.lo_line, v.span.lo_col))
            .take(3)
            .map(|(g, e)| {
                Note::at(
                    loc(input, self.f, e.span),
                    format!(
                        "the preemption count is raised by {} here by `{}`",
                        (self.lookup)(g).adjust_text(),
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
                    crate::lock_text::held_phrase(h),
                    name(input, h.at.callee)
                ),
            ));
        }
        // A specialised callee: its own first step, then the general chain.
        let lookup = |g: FnId| match &v.specialised {
            Some(s) if g == v.target.callee => (**s).clone(),
            _ => (self.lookup)(g),
        };
        if v.specialised.is_some() {
            finding = finding.note(Note::text(format!(
                "`{callee}` was analysed again with the constant arguments of this call (flags, fn pointers); it still expects {}",
                v.callee_expect
            )));
        }
        if v.last_reference {
            for n in why_expects_last(input, &lookup, v.target.callee) {
                finding = finding.note(n);
            }
            finding = finding
                .note(Note::text(
                    "the teardown runs only when a reference count reaches zero; the analysis does not track reference counts, so it cannot tell whether a reference dropped here is the last one",
                ))
                .note(Note::help(
                    "if another reference is alive here on every path (for example one owned by the object whose lock is held), this is not a bug; otherwise let the value be dropped after the lock is released (bind it to a variable declared before the guard)",
                ));
        } else {
            for n in why_expects(input, &lookup, v.target.callee) {
                finding = finding.note(n);
            }
        }
        finding
    }

    pub fn adjust_failure(&self, failure: &AdjustFailure) -> Finding {
        let input = self.input;
        let primary = failure.returns.first().map(|(_, s)| *s).unwrap_or_default();
        let mut finding = Finding::new(
            "cannot-infer-adjustment",
            Severity::Error,
            "cannot infer preemption count adjustment at this point",
        )
        .at(loc(input, self.f, primary))
        .label("the function returns here with different preemption counts")
        .in_function(self.f)
        .subject(name(input, self.f));
        for (i, (adj, span)) in failure.returns.iter().enumerate() {
            let lead = match i {
                0 => "",
                1 => "while ",
                _ => "and ",
            };
            let text = match adj {
                Adj::Known(a) => format!(
                    "{lead}preemption count adjustment is {a} on a path reaching this return"
                ),
                Adj::Top => format!(
                    "{lead}preemption count adjustment is changed in the previous iteration of the loop"
                ),
            };
            finding = finding.note(Note::at(loc(input, self.f, *span), text));
        }
        for (span, g, adj) in failure.changes.iter().take(6) {
            finding = finding.note(Note::at(
                loc(input, self.f, *span),
                format!("`{}` adjusts the count by {adj}", name(input, *g)),
            ));
        }
        finding.note(Note::help(
            "release what is acquired on every path, or annotate the function with `#[klint::preempt_count(adjust = N, unchecked)]` if the imbalance is intended",
        ))
    }

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
                "annotation-mismatch",
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
                "annotation-mismatch",
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
            let lookup = |g: FnId| {
                if g == self.f {
                    inferred.clone()
                } else {
                    (self.lookup)(g)
                }
            };
            for n in why_expects(input, &lookup, self.f) {
                f = f.note(n);
            }
            out.push(f);
        }
        out
    }
}

pub(crate) fn recursion_failure(input: &Input<'_>, f: FnId, s: &Summary) -> Finding {
    let span = input
        .program
        .body_of(f)
        .map(|(_, i)| i.span)
        .unwrap_or_default();
    Finding::new(
        "recursion",
        Severity::Error,
        "this function is recursive but its preemption count adjustment does not reach a fixed point",
    )
    .at(loc(input, f, span))
    .note(Note::text(format!("the adjustment is {} after the last round of inference", s.adjust_text())))
    .note(Note::text(format!("instance being checked is `{}`", name(input, f))))
    .note(Note::help(format!(
        "if the recursion is bounded, annotate the function with `#[klint::preempt_count(adjust = {}, unchecked)]`",
        s.uniform_adjust().unwrap_or(0)
    )))
    .in_function(f)
    .subject(name(input, f))
}

pub(crate) fn fn_pointer(
    input: &Input<'_>,
    user: FnId,
    target: FnId,
    s: &Summary,
    at: Loc,
) -> Finding {
    Finding::new(
        "fn-pointer",
        Severity::Warning,
        "converting this function to pointer may result in preemption count rule violation",
    )
    .at(at)
    .label(format!(
        "`{}` is being converted to a pointer",
        name(input, target)
    ))
    .note(Note::text(format!(
        "adjustment of this function is inferred to be {} and expectation is inferred to be {}",
        s.adjust_text(),
        s.expect
    )))
    .note(Note::text(
        "while the adjustment for function pointers is assumed to be 0 and the expectation be 0",
    ))
    .in_function(user)
    .subject(name(input, target))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn vtable(
    input: &Input<'_>,
    user: FnId,
    target: FnId,
    s: &Summary,
    expected: (i32, ExpectRange),
    trait_path: &str,
    drop_of: Option<&str>,
    at: Loc,
) -> Finding {
    let part = match drop_of {
        Some(ty) => format!("drop glue of `{ty}` is constructed as part of `dyn {trait_path}`"),
        None => format!(
            "`{}` is constructed as part of `dyn {trait_path}`",
            name(input, target)
        ),
    };
    let _ = FnKind::Shim;
    Finding::new(
        "vtable",
        Severity::Warning,
        "constructing this vtable may result in preemption count rule violation",
    )
    .at(at)
    .label(part)
    .note(Note::text(format!(
        "adjustment is inferred to be {} and expectation is inferred to be {}",
        s.adjust_text(),
        s.expect
    )))
    .note(Note::text(format!(
        "while the expected adjustment for vtable is {} and the expectation is {}",
        expected.0, expected.1
    )))
    .in_function(user)
    .subject(format!("{} as dyn {trait_path}", name(input, target)))
}

/// "1st", "2nd", "3rd", "4th", …, "11th", "21st".
fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn ordinals() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101]
            .map(super::ordinal)
            .to_vec();
        assert_eq!(
            got,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"
            ]
        );
    }
}
