//! The stack view of the page (`kanalyze stack --html`): one entry per
//! root, deepest first, with its depth against the limit drawn as a bar,
//! and its worst path as a table and as a stacked bar of the frames, each
//! step linked to its source. The CLI builds the view from crates/stack
//! (this crate does not depend on it), as it builds the summaries.

use std::fmt::Write as _;

use findings::Loc;
use program::{FnId, Program};

use super::{esc, loc_text, snippet};
use crate::{Sources, locate};

/// Roots drawn with their path; the others are listed in one table.
const DETAILED: usize = 200;

/// One step of a root's worst path.
pub struct StackStep {
    pub function: FnId,
    /// What the step adds, in bytes; `None` when the frame is unknown.
    pub adds: Option<u64>,
    /// The depth after the step.
    pub depth: u64,
    /// `own`, `inlined`, `c`, `unknown` or `recursion`.
    pub kind: &'static str,
    /// Where it is called, or for the root its definition.
    pub at: Option<Loc>,
}

/// One root.
pub struct StackRoot {
    pub function: FnId,
    /// Why C calls it.
    pub why: String,
    pub depth: u64,
    /// It reaches a cycle nothing bounds: `depth` is a lower bound.
    pub unbounded: bool,
    /// Functions it may reach whose frame is unknown.
    pub unknown: usize,
    pub steps: Vec<StackStep>,
}

/// The view: the limits and every root, deepest first.
pub struct StackView {
    pub limit: u64,
    pub frame_limit: u64,
    pub roots: Vec<StackRoot>,
}

/// A bar of `value` against `scale`, red past `limit`.
fn bar(value: u64, scale: u64, limit: u64) -> String {
    let width = if scale == 0 {
        0.0
    } else {
        (value as f64 / scale as f64 * 100.0).min(100.0)
    };
    let mark = if scale == 0 {
        100.0
    } else {
        (limit as f64 / scale as f64 * 100.0).min(100.0)
    };
    format!(
        r#"<span class="depthbar"><span class="fill{}" style="width:{width:.1}%"></span><span class="limit" style="left:{mark:.1}%"></span></span>"#,
        if value > limit { " over" } else { "" }
    )
}

/// The section.
pub(super) fn section(
    out: &mut String,
    program: &Program,
    view: &StackView,
    sources: &mut Sources,
) {
    let scale = view
        .roots
        .iter()
        .map(|r| r.depth)
        .max()
        .unwrap_or(0)
        .max(view.limit);
    let over = view.roots.iter().filter(|r| r.depth > view.limit).count();
    let _ = write!(
        out,
        r#"<section id="stack"><h2>Stack depth per root</h2><p class="hint">{} roots, {over} over the limit of {} bytes (the line in each bar); frames over {} bytes are findings above. Each path is the deepest below its root: the running depth, what each step adds, and where it is called.</p>"#,
        view.roots.len(),
        view.limit,
        view.frame_limit
    );
    for (i, r) in view.roots.iter().enumerate() {
        let name = &program.function(r.function).name;
        let mut flags = String::new();
        if r.unbounded {
            flags.push_str(r#" <span class="verdict v-re-examine">unbounded</span>"#);
        }
        if r.unknown > 0 {
            let _ = write!(
                flags,
                r#" <span class="verdict">{} unknown frame{}</span>"#,
                r.unknown,
                if r.unknown == 1 { "" } else { "s" }
            );
        }
        if i >= DETAILED {
            if i == DETAILED {
                let _ = write!(
                    out,
                    r#"<h3>The other {} roots</h3><table class="stackpath"><tr><th>depth</th><th>root</th><th>why C calls it</th></tr>"#,
                    view.roots.len() - DETAILED
                );
            }
            let _ = write!(
                out,
                "<tr><td>{}</td><td><code>{}</code>{flags}</td><td>{}</td></tr>",
                r.depth,
                esc(name),
                esc(&r.why)
            );
            continue;
        }
        let _ = write!(
            out,
            r#"<details class="stackroot{}" id="r{i}"><summary>{} <b>{}</b> bytes <code>{}</code> <span class="at">{}</span>{flags}</summary><div class="body">"#,
            if r.depth > view.limit { " over" } else { "" },
            bar(r.depth, scale, view.limit),
            r.depth,
            esc(name),
            esc(&r.why)
        );
        // The frames side by side, in path order, as wide as their bytes.
        out.push_str(r#"<div class="frames-bar">"#);
        for s in &r.steps {
            let adds = s.adds.unwrap_or(0);
            if adds == 0 {
                continue;
            }
            let width = adds as f64 / scale as f64 * 100.0;
            let f = &program.function(s.function).name;
            let _ = write!(
                out,
                r#"<span class="seg k-{}" style="width:{width:.2}%" title="{} bytes: {}"></span>"#,
                s.kind,
                adds,
                esc(f)
            );
        }
        out.push_str("</div>");
        out.push_str(r#"<table class="stackpath"><tr><th>depth</th><th>adds</th><th>kind</th><th>function</th><th>where</th></tr>"#);
        for s in &r.steps {
            let at =
                s.at.and_then(|l| locate(program, l))
                    .map(|l| loc_text(sources, &l))
                    .unwrap_or_default();
            let _ = write!(
                out,
                "<tr class=\"k-{kind}\"><td>{}</td><td>{}</td><td>{kind}</td><td><code>{}</code></td><td><details><summary><code>{}</code></summary>{}</details></td></tr>",
                s.depth,
                s.adds.map_or("?".to_string(), |b| b.to_string()),
                esc(&program.function(s.function).name),
                esc(&at),
                snippet(program, sources, s.at, None),
                kind = s.kind,
            );
        }
        out.push_str("</table></div></details>\n");
    }
    if view.roots.len() > DETAILED {
        out.push_str("</table>");
    }
    if view.roots.is_empty() {
        out.push_str(r#"<p class="empty">No function C can call.</p>"#);
    }
    out.push_str("</section>\n");
}
