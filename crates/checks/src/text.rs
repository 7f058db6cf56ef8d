//! Wording shared by the checks: names, locations, and the chain of why a
//! callee expects the preemption count it expects.

use std::borrow::Cow;

use findings::{Loc, Note};
use program::{EdgeKind, FnId};

use analysis::{DeclaredView, Reason, Source, Summaries, Summary};

use crate::{Input, krate_index};

/// How many "because it calls …" notes a chain shows at most.
const MAX_CHAIN: usize = 12;

/// How far the chain is followed to find what finally sleeps.
const MAX_WALK: usize = 256;

pub(crate) struct Texts<'a, 'b> {
    pub input: &'a Input<'b>,
    pub summaries: &'a dyn Summaries,
    pub f: FnId,
}

pub(crate) fn name(input: &Input<'_>, f: FnId) -> String {
    input.program.function(f).name.to_string()
}

pub(crate) fn loc(input: &Input<'_>, f: FnId, span: kmir::Span) -> Loc {
    Loc {
        krate: krate_index(input.program, f),
        span,
    }
}

/// Notes explaining why `f` has the expectation it has, down to where it
/// comes from: a spec entry, an annotation, a default.
pub(crate) fn why_expects(input: &Input<'_>, summaries: &dyn Summaries, f: FnId) -> Vec<Note> {
    shorten(why_chain(input, summaries, f))
}

/// How a reason's site reaches its callee, as a verb phrase.
pub(crate) fn reaches(input: &Input<'_>, r: &Reason) -> String {
    reaches_edge(input, r.kind, r.callee)
}

/// How an edge reaches its callee, as a verb phrase.
fn reaches_edge(input: &Input<'_>, kind: EdgeKind, callee: FnId) -> String {
    let callee = name(input, callee);
    match kind {
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
pub(crate) fn why_expects_last(input: &Input<'_>, summaries: &dyn Summaries, f: FnId) -> Vec<Note> {
    let mut notes = Vec::new();
    let mut current = f;
    let mut seen = vec![f];
    for _ in 0..MAX_WALK {
        let s = summaries.get(current);
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
            notes.extend(why_chain(input, summaries, r.callee));
            break;
        }
    }
    shorten(notes)
}

/// The whole chain of why `f` expects what it expects.
fn why_chain(input: &Input<'_>, summaries: &dyn Summaries, f: FnId) -> Vec<Note> {
    let mut notes = Vec::new();
    let mut current = f;
    let mut seen = vec![f];
    // A specialised step's callee is explained by its specialisation.
    let mut next_summary: Option<Summary> = None;
    for _ in 0..MAX_WALK {
        let s: Cow<Summary> = next_summary
            .take()
            .map_or_else(|| Cow::Borrowed(summaries.get(current)), Cow::Owned);
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
                if r.via_last {
                    // A declaration made the callee's last-reference
                    // expectation this site's own: the chain goes on in
                    // the teardown's terms.
                    let declared =
                        input
                            .invariants
                            .last_at(current, r.block)
                            .map_or(String::new(), |d| {
                                format!(
                                    " ({}, declared at {})",
                                    d.describe(),
                                    d.declared_at(input.program)
                                )
                            });
                    let text = format!(
                        "`{who}` expects the preemption count to be {} because it {verb}{at}, which expects {} if a reference it drops is the last one, and that reference can be the last{declared}",
                        s.expect, r.callee_expect
                    );
                    notes.push(site_note(input, current, r.span, text));
                    notes.extend(why_expects_last(input, summaries, r.callee));
                    break;
                }
                let text = match section_of(input, current) {
                    Some((path, section)) => format!(
                        "`{who}` {verb} with {} (a section, which the spec says of `{path}`), which expects {}",
                        context_phrase(section.kind),
                        r.callee_expect
                    ),
                    None => format!(
                        "`{who}` expects the preemption count to be {} because it {verb}{at}, which expects {}",
                        s.expect, r.callee_expect
                    ),
                };
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
            Source::RustSpec { path } => {
                let why = input
                    .spec
                    .rust_item(path)
                    .and_then(|r| r.note.clone())
                    .map_or(String::new(), |n| format!(": {n}"));
                let what = if s.expect == annotations::ExpectRange::exactly(0) {
                    "may block"
                } else {
                    "takes or releases a lock"
                };
                notes.push(Note::text(format!(
                    "`{who}` {what}, which the spec says of `{path}`{why}, so it needs the count of atomic contexts held to be {}",
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
            Source::OverBudget => {
                notes.push(Note::text(format!(
                    "the analysis of `{who}` ran out of its step budget, so it is treated as a function nothing is known of (it may sleep)"
                )));
                break;
            }
            Source::NotExtracted | Source::UnconstrainedForeign | Source::Builtin => break,
        }
    }
    notes
}

/// The section `f` is by the spec (`[rust]` `section`: it runs its
/// closure with a context entered), with the item path that says so.
pub(crate) fn section_of(input: &Input<'_>, f: FnId) -> Option<(String, spec::Section)> {
    let (_, inst) = input.program.body_of(f)?;
    let section = input.spec.rust_item(&inst.item_path)?.section?;
    Some((inst.item_path.to_string(), section))
}

/// The context a section enters, in words.
pub(crate) fn context_phrase(kind: spec::LockKind) -> &'static str {
    match kind {
        spec::LockKind::Irq => "interrupts disabled",
        spec::LockKind::Preempt => "preemption disabled",
        spec::LockKind::Bh => "bottom halves disabled",
        _ => "an RCU read-side section entered",
    }
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
pub(crate) fn declaration_note(input: &Input<'_>, d: &DeclaredView) -> Option<Note> {
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

pub(crate) fn annotation_loc(input: &Input<'_>, path: &str, span: kmir::Span) -> Loc {
    let krate = input
        .program
        .crates
        .iter()
        .position(|c| c.dump.items.iter().any(|i| i.path == path))
        .unwrap_or(0) as u32;
    Loc { krate, span }
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
