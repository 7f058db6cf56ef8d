//! The HTML report (`kanalyze report --html OUT/`): one self-contained
//! page with the findings, client-side filters, each finding's notes and
//! source snippets, its chain from a root drawn as SVG, the locks held at
//! the violating point, and the summaries of the functions on the chains.
//! Everything is inline (CSS, script, SVG) so the page works from
//! `file://` with no server and fetches nothing.

mod layout;
mod stack;
mod summary;

pub use stack::{StackRoot, StackStep, StackView};
pub use summary::SummaryLine;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;

use findings::{Finding, Loc, Note, Severity};
use program::{FnId, Program};

use crate::{Located, Sources, call_trace, krate_of, locate, stable_id};
use layout::{GraphEdge, Node, NodeKind};

const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("script.js");

/// How many summaries the page holds at most: the chains' functions and
/// those their reasons lead to. A bound on the page's size for programs
/// whose chains cross thousands of functions.
const MAX_SUMMARIES: usize = 3000;
/// Source lines shown around a span: one before, the span's own (up to
/// `MAX_SPAN_LINES`).
const MAX_SPAN_LINES: usize = 6;
/// How far the reason chain of a summary is followed.
const MAX_REASON_STEPS: usize = 24;
/// How many steps of a reason chain are named before the last one (the
/// rest are reached by following the links).
const REASON_HEAD: usize = 3;

/// One finding of the page, with whether the baseline already had it and
/// what the triage file says of it.
pub struct Entry<'a> {
    pub finding: &'a Finding,
    pub known: bool,
    /// `None` when no triage file was given.
    pub triage: Option<Triaged>,
}

/// A finding's triage state, for the page's triage filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Triaged {
    /// No entry for the finding.
    Untriaged,
    /// Judged, and its text is the one judged.
    Judged(Verdict),
    /// Judged, but what the finding says changed since.
    Reexamine(Verdict),
}

/// A triage entry as the page shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `bug`, `not-a-bug`, `intended` or `wont-fix`.
    pub verdict: String,
    /// "triaged as `…` by … on …: reason".
    pub judged: String,
    /// A commit or list message where it was discussed.
    pub reference: Option<String>,
}

impl Triaged {
    /// The filter value: the verdict, `re-examine` or `untriaged`.
    pub fn value(&self) -> &str {
        match self {
            Triaged::Untriaged => "untriaged",
            Triaged::Judged(v) => &v.verdict,
            Triaged::Reexamine(_) => "re-examine",
        }
    }
}

/// What the page shows besides the findings.
pub struct Page<'a> {
    pub title: String,
    pub entries: Vec<Entry<'a>>,
    /// Whether a baseline was given: without one every finding is new and
    /// the new/known filter says nothing, so it is left out.
    pub baseline: bool,
    /// Whether a triage file was given (the triage filter is shown then).
    pub triage: bool,
    /// Facts about the run for the header (`crates`, `bodies`, …).
    pub facts: Vec<(String, String)>,
}

/// Escapes text for HTML content and attribute values alike.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Finding text with rustc's `code` spans set as `<code>`, escaped.
fn prose(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in s.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", esc(part));
        } else {
            out.push_str(&esc(part));
        }
    }
    out
}

/// A held lock, from a finding's note: the checks word them
/// "lock `X` (spin) is held here: acquired by `f`" (sleep in atomic
/// context) or "`X` was acquired here by `f` and is still held" (lock
/// state); the note's location is where it was acquired.
#[derive(Debug, PartialEq, Eq)]
struct HeldLock<'n> {
    lock: &'n str,
    by: &'n str,
    loc: Option<Loc>,
}

fn held_lock(note: &Note) -> Option<HeldLock<'_>> {
    let t = note.text.as_str();
    if let Some((lock, by)) = t.split_once(" is held here: acquired by `") {
        let lock = lock.strip_prefix("lock ").unwrap_or(lock);
        return Some(HeldLock {
            lock,
            by: by.strip_suffix('`').unwrap_or(by),
            loc: note.loc,
        });
    }
    let rest = t.strip_prefix('`')?;
    let (lock, rest) = rest.split_once("` was acquired here by `")?;
    let by = rest.strip_suffix("` and is still held")?;
    Some(HeldLock {
        lock,
        by,
        loc: note.loc,
    })
}

/// A finding's filter values: kind, crate, severity, baseline status,
/// triage state.
type Row = [String; 5];

/// One node of a finding's chain, from the root down.
struct Frame {
    f: FnId,
    /// How the frame above reaches this one (`None` for the root).
    edge: Option<(String, Option<Loc>, bool)>,
    kind: NodeKind,
}

/// The finding's chain: the shortest call trace from a root to where it
/// starts, then (when the notes lead from the finding's function up to
/// `trace_from`) the finding's function, then the callee that breaks the
/// rule when the label or subject names one.
fn chain(program: &Program, f: &Finding, by_name: &HashMap<&str, FnId>) -> Vec<Frame> {
    let mut frames = Vec::new();
    let Some(start) = f.trace_from.or(f.function) else {
        return frames;
    };
    let trace = call_trace(program, start);
    let root = trace.first().map_or(start, |s| s.caller);
    frames.push(Frame {
        f: root,
        edge: None,
        kind: NodeKind::Frame,
    });
    for s in &trace {
        let loc = krate_of(program, s.caller).map(|krate| Loc {
            krate,
            span: s.edge.span,
        });
        frames.push(Frame {
            f: s.callee,
            edge: Some((s.edge.kind.name().to_string(), loc, false)),
            kind: NodeKind::Frame,
        });
    }
    if let Some(function) = f.function {
        if function != start {
            frames.push(Frame {
                f: function,
                edge: Some(("calls (see the notes)".into(), None, true)),
                kind: NodeKind::Frame,
            });
        }
        if let Some(last) = frames.last_mut() {
            last.kind = NodeKind::Finding;
        }
        let named = f
            .label
            .as_deref()
            .and_then(|l| l.split('`').nth(1))
            .and_then(|n| by_name.get(n))
            .or_else(|| by_name.get(f.subject.as_str()))
            .copied();
        // A finding shown at the program's call or drop that reaches library
        // code (its label names what runs there, a callee of `start`) has
        // no violating callee of its own to draw below the function.
        let reached_from_start = |c: FnId| {
            function != start
                && f.primary.is_some_and(|p| {
                    Some(p.krate) == krate_of(program, start)
                        && program
                            .callees(start)
                            .iter()
                            .any(|(g, e)| *g == c && e.span == p.span)
                })
        };
        if let Some(callee) = named.filter(|c| *c != function && !reached_from_start(*c)) {
            frames.push(Frame {
                f: callee,
                edge: Some(("violation".into(), f.primary, false)),
                kind: NodeKind::Violation,
            });
        }
    }
    frames
}

/// The crate a finding belongs to: its function's, else its location's.
fn crate_of(program: &Program, f: &Finding) -> String {
    f.function
        .and_then(|g| krate_of(program, g))
        .or(f.primary.map(|l| l.krate))
        .and_then(|k| program.crates.get(k as usize))
        .map(|c| c.dump.header.crate_name.to_string())
        .unwrap_or_else(|| "(none)".into())
}

/// `file:line:col`, the file relative to the source root it was found
/// under: kernel dumps name files by absolute paths into the build tree,
/// whose prefix says nothing and would take half of every line.
fn loc_text(sources: &Sources, l: &Located) -> String {
    let path = std::path::Path::new(&l.path);
    let shown = sources
        .roots
        .iter()
        .find_map(|r| path.strip_prefix(r).ok())
        .map_or(l.path.clone(), |p| p.display().to_string());
    format!("{shown}:{}:{}", l.line, l.column)
}

/// A few lines of source around a location with the span marked, or just
/// `file:line:col` when the file cannot be read.
fn snippet(
    program: &Program,
    sources: &mut Sources,
    loc: Option<Loc>,
    label: Option<&str>,
) -> String {
    let Some(at) = loc.and_then(|l| locate(program, l)) else {
        return String::new();
    };
    let mut out = format!(
        r#"<div class="snippet"><div class="path" title="{}">{}</div>"#,
        esc(&at.path),
        esc(&loc_text(sources, &at))
    );
    if let Some(text) = sources.get(&at.path) {
        let lines: Vec<&str> = text.lines().collect();
        if at.line >= 1 && at.line <= lines.len() {
            let last = at.end_line.clamp(at.line, lines.len());
            let shown_last = last.min(at.line + MAX_SPAN_LINES - 1);
            let first = at.line.saturating_sub(1).max(1);
            out.push_str("<pre>");
            for n in first..=shown_last {
                let line = lines[n - 1];
                let _ = write!(out, r#"<span class="ln">{n:>5}</span> "#);
                if n < at.line {
                    out.push_str(&esc(line));
                } else {
                    let from = if n == at.line {
                        crate::byte_of_column(line, at.column)
                    } else {
                        0
                    };
                    let to = if n == last {
                        crate::byte_of_column(line, at.end_column)
                    } else {
                        line.len()
                    };
                    let to = to.max(from).min(line.len());
                    let from = from.min(to);
                    let _ = write!(
                        out,
                        "{}<mark>{}</mark>{}",
                        esc(&line[..from]),
                        esc(&line[from..to]),
                        esc(&line[to..])
                    );
                }
                out.push('\n');
            }
            if shown_last < last {
                let _ = writeln!(out, "      … {} more lines", last - shown_last);
            }
            out.push_str("</pre>");
        }
    }
    if let Some(l) = label {
        let _ = write!(out, r#"<div class="label">{}</div>"#, prose(l));
    }
    out.push_str("</div>");
    out
}

/// The page. `summary` gives the lines of a function's summary (the CLI
/// builds them from the analysis); the page holds one section per
/// function on any chain, and per function a reason leads to.
pub fn page(
    program: &Program,
    page: &Page<'_>,
    sources: &mut Sources,
    summary: &mut dyn FnMut(FnId) -> Vec<SummaryLine>,
) -> String {
    page_with(program, page, None, sources, summary)
}

/// The page of `kanalyze stack --html`: the findings, then the stack of
/// every root.
pub fn stack_page(
    program: &Program,
    page: &Page<'_>,
    stack: &StackView,
    sources: &mut Sources,
) -> String {
    page_with(program, page, Some(stack), sources, &mut |_| Vec::new())
}

fn page_with(
    program: &Program,
    page: &Page<'_>,
    stack: Option<&StackView>,
    sources: &mut Sources,
    summary: &mut dyn FnMut(FnId) -> Vec<SummaryLine>,
) -> String {
    let by_name: HashMap<&str, FnId> = program
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), FnId(i as u32)))
        .collect();
    let chains: Vec<Vec<Frame>> = page
        .entries
        .iter()
        .map(|e| chain(program, e.finding, &by_name))
        .collect();

    // The summaries: every function on a chain, then what their reasons
    // lead to, breadth first, once each.
    let mut summaries: BTreeMap<FnId, Vec<SummaryLine>> = BTreeMap::new();
    // The functions that acquired the held locks come next: their
    // summaries say what they take.
    let mut queue: VecDeque<FnId> = chains.iter().flatten().map(|fr| fr.f).collect();
    queue.extend(
        page.entries
            .iter()
            .flat_map(|e| e.finding.notes.iter().filter_map(held_lock))
            .filter_map(|l| by_name.get(l.by).copied()),
    );
    while let Some(f) = queue.pop_front() {
        if summaries.contains_key(&f) || summaries.len() >= MAX_SUMMARIES {
            continue;
        }
        let lines = summary(f);
        queue.extend(lines.iter().filter_map(|l| l.link));
        summaries.insert(f, lines);
    }
    let has_summary = |f: FnId| summaries.contains_key(&f);

    // Filter values with their counts.
    let mut groups: [(&str, &str, BTreeMap<String, usize>); 5] = [
        ("kind", "Kind", BTreeMap::new()),
        ("crate", "Crate", BTreeMap::new()),
        ("severity", "Severity", BTreeMap::new()),
        ("status", "Baseline", BTreeMap::new()),
        ("triage", "Triage", BTreeMap::new()),
    ];
    let rows: Vec<Row> = page
        .entries
        .iter()
        .map(|e| {
            [
                e.finding.kind.to_string(),
                crate_of(program, e.finding),
                e.finding.severity.as_str().to_string(),
                if e.known { "known" } else { "new" }.to_string(),
                e.triage
                    .as_ref()
                    .map_or("untriaged", Triaged::value)
                    .to_string(),
            ]
        })
        .collect();
    for row in &rows {
        for (g, v) in groups.iter_mut().zip(row) {
            *g.2.entry(v.clone()).or_default() += 1;
        }
    }

    let mut out = String::new();
    let count = |s: Severity| {
        page.entries
            .iter()
            .filter(|e| e.finding.severity == s)
            .count()
    };
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{title}</title><style>{STYLE}</style></head><body>
{defs}<header><h1>{title}</h1><p class="facts"><span><b id="total">{total}</b> findings</span> <span>{errors} errors</span> <span>{warnings} warnings</span>"#,
        title = esc(&page.title),
        defs = layout::DEFS,
        total = page.entries.len(),
        errors = count(Severity::Error),
        warnings = count(Severity::Warning),
    );
    for (k, v) in &page.facts {
        let _ = write!(out, " <span>{} {}</span>", esc(v), esc(k));
    }
    out.push_str("</p></header>\n<nav id=\"filters\">");
    for (name, title, values) in &groups {
        if (*name == "status" && !page.baseline) || (*name == "triage" && !page.triage) {
            continue;
        }
        let _ = write!(
            out,
            r#"<fieldset data-group="{name}"><legend>{title}</legend>"#
        );
        for (v, n) in values {
            let _ = write!(
                out,
                r#"<label><input type="checkbox" data-group="{name}" value="{v}" checked> {v} <span class="count">{n}</span></label>"#,
                v = esc(v)
            );
        }
        out.push_str("</fieldset>");
    }
    let _ = write!(
        out,
        r#"<p class="shown"><b id="shown">{}</b> of {} shown <button type="button" id="reset">show all</button></p></nav>
<main><section id="findings">"#,
        page.entries.len(),
        page.entries.len()
    );
    for (i, ((e, row), frames)) in page.entries.iter().zip(&rows).zip(&chains).enumerate() {
        finding_html(
            &mut out,
            program,
            sources,
            i,
            e,
            row,
            frames,
            &by_name,
            &has_summary,
        );
    }
    if page.entries.is_empty() {
        out.push_str(r#"<p class="empty">No findings.</p>"#);
    }
    out.push_str("</section>\n");
    if let Some(view) = stack {
        stack::section(&mut out, program, view, sources);
    }
    // The stack's page has no summaries.
    if stack.is_some() {
        let _ = write!(out, "</main>\n<script>{SCRIPT}</script>\n</body></html>\n");
        return out;
    }
    out.push_str("<section id=\"summaries\"><h2>Summaries of the functions on the chains</h2><p class=\"hint\">What each function expects and adjusts, and why: the reason leads to the callee the expectation comes from, down to an annotation, a spec entry or a default.</p>\n");
    for (f, lines) in &summaries {
        summary_html(&mut out, program, *f, lines, &summaries);
    }
    let _ = write!(
        out,
        "</section></main>\n<script>{SCRIPT}</script>\n</body></html>\n"
    );
    out
}

#[allow(clippy::too_many_arguments)]
fn finding_html(
    out: &mut String,
    program: &Program,
    sources: &mut Sources,
    i: usize,
    e: &Entry<'_>,
    row: &Row,
    frames: &[Frame],
    by_name: &HashMap<&str, FnId>,
    has_summary: &dyn Fn(FnId) -> bool,
) {
    let f = e.finding;
    let id = stable_id(program, f);
    let at = f
        .primary
        .and_then(|l| locate(program, l))
        .map(|l| loc_text(sources, &l))
        .unwrap_or_default();
    let _ = write!(
        out,
        r#"<details class="finding sev-{sev}" id="f{i}" data-id="{id}" data-kind="{kind}" data-crate="{krate}" data-severity="{sev}" data-status="{status}" data-triage="{triage}"><summary><span class="sev">{sev}</span> <span class="kind">{kind}</span>{new}{verdict} <span class="msg">{msg}</span> <span class="at">{at}</span></summary>
<div class="body">"#,
        sev = esc(&row[2]),
        id = esc(&id),
        kind = esc(&row[0]),
        krate = esc(&row[1]),
        status = esc(&row[3]),
        triage = esc(&row[4]),
        verdict = match &e.triage {
            Some(t) => format!(
                r#" <span class="verdict v-{v}">{v}</span>"#,
                v = esc(t.value())
            ),
            None => String::new(),
        },
        new = if e.known {
            r#" <span class="known">known</span>"#
        } else {
            ""
        },
        msg = prose(&f.message),
        at = esc(&at),
    );
    if let Some(g) = f.function {
        let name = &program.function(g).name;
        let _ = write!(
            out,
            r#"<p class="inside">inside instance {}"#,
            fn_link(g, name, has_summary(g))
        );
        let _ = write!(
            out,
            r#" · crate <code>{}</code> · id <code>{}</code></p>"#,
            esc(&row[1]),
            esc(&id)
        );
    }
    if let Some(Triaged::Judged(v) | Triaged::Reexamine(v)) = &e.triage {
        let changed = matches!(e.triage, Some(Triaged::Reexamine(_)));
        let _ = write!(
            out,
            r#"<p class="judged v-{}">{}{}{}</p>"#,
            esc(&v.verdict),
            prose(&v.judged),
            v.reference
                .as_ref()
                .map(|r| format!(" · see <code>{}</code>", esc(r)))
                .unwrap_or_default(),
            if changed {
                " · <b>what the finding says changed since: re-examine it</b>"
            } else {
                ""
            }
        );
    }
    out.push_str(&snippet(program, sources, f.primary, f.label.as_deref()));

    let locks: Vec<HeldLock<'_>> = f.notes.iter().filter_map(held_lock).collect();
    if !locks.is_empty() {
        out.push_str(r#"<h3>Locks held here</h3><table class="locks"><tr><th>lock</th><th>acquired by</th><th>where</th></tr>"#);
        for l in &locks {
            let by = by_name_link(by_name, l.by, has_summary);
            let place = l
                .loc
                .and_then(|x| locate(program, x))
                .map(|x| loc_text(sources, &x))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{by}</td><td><code>{}</code></td></tr>",
                prose(l.lock),
                esc(&place)
            );
        }
        out.push_str("</table>");
    }

    if !frames.is_empty() {
        let _ = write!(
            out,
            "<h3>Call chain from a root ({} function{})</h3>",
            frames.len(),
            if frames.len() == 1 { "" } else { "s" }
        );
        chain_svg(out, program, frames, &locks, has_summary);
        out.push_str(r#"<ol class="frames">"#);
        for w in frames.windows(2) {
            let (above, below) = (&w[0], &w[1]);
            let Some((edge, loc, _)) = &below.edge else {
                continue;
            };
            let _ = write!(
                out,
                "<li><details><summary>{} → {} <span class=\"edge\">{}</span></summary>{}</details></li>",
                fn_link(
                    above.f,
                    &program.function(above.f).name,
                    has_summary(above.f)
                ),
                fn_link(
                    below.f,
                    &program.function(below.f).name,
                    has_summary(below.f)
                ),
                esc(edge),
                snippet(program, sources, *loc, None)
            );
        }
        out.push_str("</ol>");
    }

    if !f.notes.is_empty() {
        out.push_str(r#"<h3>Notes</h3><ul class="notes">"#);
        for n in &f.notes {
            let _ = write!(
                out,
                r#"<li class="{}">{}{}</li>"#,
                if n.is_help { "help" } else { "note" },
                prose(&n.text),
                snippet(program, sources, n.loc, None)
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</div></details>\n");
}

/// A function's name, linked to its summary when the page has one.
fn fn_link(f: FnId, name: &str, linked: bool) -> String {
    if linked {
        format!(r##"<a href="#s-{}"><code>{}</code></a>"##, f.0, esc(name))
    } else {
        format!("<code>{}</code>", esc(name))
    }
}

/// A name from a note, linked when it is a function with a summary.
fn by_name_link(
    by_name: &HashMap<&str, FnId>,
    name: &str,
    has_summary: &dyn Fn(FnId) -> bool,
) -> String {
    match by_name.get(name) {
        Some(&f) => fn_link(f, name, has_summary(f)),
        None => format!("<code>{}</code>", esc(name)),
    }
}

fn chain_svg(
    out: &mut String,
    program: &Program,
    frames: &[Frame],
    locks: &[HeldLock<'_>],
    has_summary: &dyn Fn(FnId) -> bool,
) {
    let mut nodes: Vec<Node> = frames
        .iter()
        .enumerate()
        .map(|(layer, fr)| {
            let name = &program.function(fr.f).name;
            Node {
                layer,
                text: layout::short_name(name),
                title: name.to_string(),
                kind: fr.kind,
                href: has_summary(fr.f).then(|| format!("#s-{}", fr.f.0)),
            }
        })
        .collect();
    let mut edges: Vec<GraphEdge> = frames
        .iter()
        .enumerate()
        .skip(1)
        .filter_map(|(i, fr)| {
            let (label, _, dashed) = fr.edge.as_ref()?;
            Some(GraphEdge {
                from: i - 1,
                to: i,
                label: label.clone(),
                dashed: *dashed,
            })
        })
        .collect();
    // The held locks beside the function that holds them.
    if let Some(at) = frames.iter().position(|fr| fr.kind == NodeKind::Finding) {
        for l in locks {
            let text = format!("holds {}", l.lock.replace('`', ""));
            nodes.push(Node {
                layer: at,
                text: layout::short_name(&text),
                title: format!("{text}, acquired by {}", l.by),
                kind: NodeKind::Lock,
                href: None,
            });
            edges.push(GraphEdge {
                from: at,
                to: nodes.len() - 1,
                label: String::new(),
                dashed: true,
            });
        }
    }
    let _ = write!(
        out,
        r#"<div class="graph">{}</div>"#,
        layout::svg(&nodes, &edges)
    );
}

fn summary_html(
    out: &mut String,
    program: &Program,
    f: FnId,
    lines: &[SummaryLine],
    all: &BTreeMap<FnId, Vec<SummaryLine>>,
) {
    let _ = write!(
        out,
        r#"<details class="summary" id="s-{}"><summary><code>{}</code></summary><table>"#,
        f.0,
        esc(&program.function(f).name)
    );
    for l in lines {
        let text = match l.link {
            Some(g) if all.contains_key(&g) => {
                format!(r##"{} <a href="#s-{}">→ summary</a>"##, prose(&l.text), g.0)
            }
            _ => prose(&l.text),
        };
        match (l.key, l.detail) {
            (Some(k), _) => {
                let _ = write!(out, "<tr><th>{}</th><td>{text}</td></tr>", esc(k));
            }
            (None, true) => {
                let _ = write!(out, r#"<tr><th></th><td class="detail">{text}</td></tr>"#);
            }
            (None, false) => {
                let _ = write!(out, r#"<tr><td colspan="2">{text}</td></tr>"#);
            }
        }
    }
    out.push_str("</table>");
    // The reason chains: follow `why` down to where the expectation comes
    // from (an annotation, a spec entry, a default); and `why last`, the
    // expectation if a dropped reference is the last one, whose callee may
    // inherit it through its own `why last` or through its plain `why`
    // (the teardown runs at the count the callee expects).
    let link = |g: &FnId, key: &str| {
        all.get(g)
            .and_then(|ls| ls.iter().find(|l| l.key == Some(key)))
            .and_then(|l| l.link)
    };
    let chains: [(&str, &[&str]); 2] = [
        ("expects this because", &["why"]),
        (
            "if a reference it drops is the last one, expects that because",
            &["why last", "why"],
        ),
    ];
    for (i, (title, keys)) in chains.iter().enumerate() {
        let mut steps = vec![f];
        let mut seen = BTreeSet::from([f]);
        // Whether the chain reached a function without a reason, whose
        // `from` then says where the expectation comes from; a chain cut
        // by the bound or a cycle says it goes on instead.
        let mut ended = false;
        while steps.len() < MAX_REASON_STEPS {
            // The first step takes the chain's own key; below it, the
            // callee's reason in the order of `keys`.
            let Some(at) = steps.last() else { break };
            let next = if steps.len() == 1 {
                link(at, keys[0])
            } else {
                keys.iter().find_map(|k| link(at, k))
            };
            let Some(next) = next else {
                ended = true;
                break;
            };
            if !seen.insert(next) {
                break;
            }
            steps.push(next);
        }
        if steps.len() < 2 {
            continue;
        }
        let _ = write!(
            out,
            r#"<p class="reasons{}">{title}: "#,
            if i == 1 { " last" } else { "" }
        );
        // The head of the chain and where it ends; the middle is one
        // click away through the summaries it links.
        let skipped = steps.len().saturating_sub(REASON_HEAD + 1);
        for (i, g) in steps.iter().enumerate() {
            if skipped > 0 && (REASON_HEAD..steps.len() - 1).contains(&i) {
                if i == REASON_HEAD {
                    let _ = write!(out, " → … {skipped} more");
                }
                continue;
            }
            if i > 0 {
                out.push_str(" → ");
            }
            // Short names: the chains repeat long instance names in
            // every summary they pass through, which would double the
            // page; the link leads to the full one.
            let short = esc(&layout::short_name(&program.function(*g).name));
            if all.contains_key(g) {
                let _ = write!(out, r##"<a href="#s-{}"><code>{short}</code></a>"##, g.0);
            } else {
                let _ = write!(out, "<code>{short}</code>");
            }
        }
        let from = steps
            .last()
            .and_then(|g| all.get(g))
            .and_then(|ls| ls.iter().find(|l| l.key == Some("from")))
            .map(|l| prose(&l.text))
            .unwrap_or_default();
        if !ended {
            out.push_str(" → …");
        } else if !from.is_empty() {
            let _ = write!(out, " ({from})");
        }
        out.push_str("</p>");
    }
    out.push_str("</details>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_is_escaped() {
        assert_eq!(
            esc(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(
            prose("call `f::<T>` here"),
            "call <code>f::&lt;T&gt;</code> here"
        );
    }

    #[test]
    fn held_locks_are_read_from_both_wordings() {
        let n =
            Note::text("lock `static d::STATS` (spin) is held here: acquired by `d::Lock::lock`");
        assert_eq!(
            held_lock(&n),
            Some(HeldLock {
                lock: "`static d::STATS` (spin)",
                by: "d::Lock::lock",
                loc: None
            })
        );
        let n = Note::text("`p.inner` was acquired here by `d::Lock::<T>::lock` and is still held");
        assert_eq!(
            held_lock(&n),
            Some(HeldLock {
                lock: "p.inner",
                by: "d::Lock::<T>::lock",
                loc: None
            })
        );
        assert_eq!(held_lock(&Note::text("the count is raised here")), None);
    }
}
