//! Rendering findings for people (rustc-style text with source snippets,
//! notes and the call trace from a root) and for machines (JSON, with a
//! stable identity per finding).
//!
//! `html` is the HTML report: one self-contained page (inline CSS, script and
//! SVG) with client-side filters, snippets, held locks, each chain drawn by its
//! own layered layout (`html/layout.rs`, no Graphviz), and the summaries of
//! the chains' functions. A summary comes in as `SummaryLine`s, which the CLI
//! builds from the analysis (this crate does not depend on it).

pub mod html;
mod sarif;
pub use sarif::{FINGERPRINT, SarifItem, to_sarif};

use std::collections::HashMap;
use std::fmt::Write as _;

use annotate_snippets::{AnnotationKind, Group, Level, Origin, Renderer, Snippet};
use findings::{Finding, Loc, Severity};
use program::{EdgeKind, FnId, Program};
use serde::Serialize;

/// How many frames of call trace a finding shows.
pub const MAX_TRACE: usize = 8;

/// Source files, read once, by the name the dump gives them.
#[derive(Default)]
pub struct Sources {
    files: HashMap<String, Option<String>>,
    /// Tried, in order, for relative file names.
    pub roots: Vec<std::path::PathBuf>,
}

impl Sources {
    fn get(&mut self, name: &str) -> Option<&str> {
        if !self.files.contains_key(name) {
            let path = std::path::Path::new(name);
            let text = if path.is_absolute() {
                std::fs::read_to_string(path).ok()
            } else {
                self.roots
                    .iter()
                    .find_map(|r| std::fs::read_to_string(r.join(path)).ok())
            };
            self.files.insert(name.to_string(), text);
        }
        self.files.get(name).and_then(|t| t.as_deref())
    }
}

pub use program::TraceStep;

/// A shortest chain of calls from a root (a function C may call, or one
/// nothing in the program calls) down to `f`, outermost first
/// (`Program::call_trace`).
pub fn call_trace(program: &Program, f: FnId) -> Vec<TraceStep> {
    program.call_trace(f)
}

/// A finding's identity across runs: its kind, the instance it is in and
/// its subject, never spans or internal ids.
pub fn stable_id(program: &Program, finding: &Finding) -> String {
    let function = finding
        .function
        .map(|f| program.function(f).name.as_str())
        .unwrap_or("");
    let function = without_directories(function);
    let subject = without_directories(&finding.subject);
    // FNV-1a: tiny, dependency-free and fixed forever.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [finding.kind, function.as_str(), subject.as_str()] {
        for b in part.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("KA{:016x}", h)
}

/// A fingerprint of what a finding says (message, label, notes), with
/// closures' directories left out like the id: a triage verdict is about
/// this text, and a finding whose text changed is looked at again.
pub fn text_fingerprint(finding: &Finding) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |s: &str| {
        for b in without_directories(s).bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(finding.kind);
    eat(&finding.message);
    eat(finding.label.as_deref().unwrap_or(""));
    for n in &finding.notes {
        eat(&n.text);
    }
    format!("KT{:016x}", h)
}

/// Closure names carry the path of their file (`{closure@/src/x.rs:4:9}`):
/// an identity must not depend on where the tree is checked out, so only
/// the file name is kept.
fn without_directories(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('@') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let end = rest.find([':', '}']).unwrap_or(rest.len());
        let path = &rest[..end];
        out.push_str(path.rsplit('/').next().unwrap_or(path));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod id_tests {
    use super::without_directories;

    #[test]
    fn closure_paths_lose_their_directories() {
        assert_eq!(
            without_directories("a::b::{closure@/work/x/src/lib.rs:4:9}::{closure@src/m.rs:1:2}"),
            "a::b::{closure@lib.rs:4:9}::{closure@m.rs:1:2}"
        );
        assert_eq!(without_directories("plain::path"), "plain::path");
        assert_eq!(without_directories("odd@"), "odd@");
    }
}

struct Located {
    path: String,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
}

fn locate(program: &Program, loc: Loc) -> Option<Located> {
    if loc.span.is_dummy() {
        return None;
    }
    let dump = &program.crates.get(loc.krate as usize)?.dump;
    Some(Located {
        path: dump.file(loc.span.file)?.to_string(),
        line: loc.span.lo_line as usize,
        column: loc.span.lo_col as usize,
        end_line: loc.span.hi_line as usize,
        end_column: loc.span.hi_col as usize,
    })
}

/// Byte offset of 1-based char column `col` in `line`.
fn byte_of_column(line: &str, col: usize) -> usize {
    line.char_indices()
        .nth(col.saturating_sub(1))
        .map_or(line.len(), |(i, _)| i)
}

enum SnippetOrOrigin<'a> {
    Snippet(Snippet<'a, annotate_snippets::Annotation<'a>>),
    Origin(Origin<'a>),
}

fn level(sev: Severity) -> Level<'static> {
    match sev {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Note => Level::NOTE,
    }
}

/// Renders one finding like rustc: the message, the primary snippet, plain
/// notes, located notes as their own snippets, then the call trace.
pub fn render(program: &Program, finding: &Finding, sources: &mut Sources) -> String {
    let trace = finding
        .trace_from
        .or(finding.function)
        .map(|f| call_trace(program, f))
        .unwrap_or_default();
    let primary = finding.primary.and_then(|l| locate(program, l));
    let located_notes: Vec<(Option<Located>, &findings::Note)> = finding
        .notes
        .iter()
        .map(|n| (n.loc.and_then(|l| locate(program, l)), n))
        .collect();
    let trace_locs: Vec<(Located, String)> = trace
        .iter()
        .rev()
        .take(MAX_TRACE)
        .filter_map(|s| {
            let loc = Loc {
                krate: krate_of(program, s.caller)?,
                span: s.edge.span,
            };
            let what = match s.edge.kind {
                EdgeKind::Drop => "which is dropped here",
                EdgeKind::Virtual => "which is called through a vtable here",
                EdgeKind::Indirect => "which is called through a function pointer here",
                EdgeKind::Call => "which is called from here",
            };
            Some((
                locate(program, loc)?,
                format!("{what}, in `{}`", program.function(s.caller).name),
            ))
        })
        .collect();

    // The source texts must outlive the groups: read them all first.
    let mut keep = Vec::new();
    if let Some(p) = &primary {
        keep.push(p.path.clone());
    }
    keep.extend(
        located_notes
            .iter()
            .filter_map(|(l, _)| l.as_ref().map(|l| l.path.clone())),
    );
    keep.extend(trace_locs.iter().map(|(l, _)| l.path.clone()));
    for k in &keep {
        sources.get(k);
    }
    let sources: &Sources = sources;
    let mut ro = ReadOnly { sources };

    let mut main =
        Group::with_title(level(finding.severity).primary_title(finding.message.as_str()));
    if let Some(p) = &primary {
        main = match ro.snippet(p, finding.label.as_deref(), AnnotationKind::Primary) {
            SnippetOrOrigin::Snippet(s) => main.element(s),
            SnippetOrOrigin::Origin(o) => main.element(o),
        };
    }
    if let Some(f) = finding.function {
        main = main.element(
            Level::NOTE.message(format!("inside instance `{}`", program.function(f).name)),
        );
    }
    // Notes in order: a located note opens a group of its own, a plain note
    // joins the group before it, so a chain reads top to bottom.
    let mut groups = vec![main];
    for (l, n) in &located_notes {
        let lvl = if n.is_help { Level::HELP } else { Level::NOTE };
        match l {
            Some(l) => {
                let g = Group::with_title(lvl.secondary_title(n.text.as_str()));
                groups.push(match ro.snippet(l, None, AnnotationKind::Context) {
                    SnippetOrOrigin::Snippet(s) => g.element(s),
                    SnippetOrOrigin::Origin(o) => g.element(o),
                });
            }
            None => {
                if let Some(last) = groups.pop() {
                    groups.push(last.element(lvl.message(n.text.as_str())));
                }
            }
        }
    }
    for (l, text) in &trace_locs {
        let g = Group::with_title(Level::NOTE.secondary_title(text.as_str()));
        groups.push(match ro.snippet(l, None, AnnotationKind::Context) {
            SnippetOrOrigin::Snippet(s) => g.element(s),
            SnippetOrOrigin::Origin(o) => g.element(o),
        });
    }
    if trace.len() > MAX_TRACE {
        groups.push(Group::with_title(Level::NOTE.secondary_title(format!(
            "… {} more callers up to the root",
            trace.len() - MAX_TRACE
        ))));
    }
    let mut out = Renderer::plain().render(&groups);
    out.push('\n');
    out
}

struct ReadOnly<'s> {
    sources: &'s Sources,
}

impl<'s> ReadOnly<'s> {
    fn snippet<'a>(
        &mut self,
        at: &'a Located,
        label: Option<&'a str>,
        kind: AnnotationKind,
    ) -> SnippetOrOrigin<'a>
    where
        's: 'a,
    {
        let path = at.path.as_str();
        if let Some(Some(text)) = self.sources.files.get(path) {
            let text: &'a str = text.as_str();
            let lines: Vec<&'a str> = text.split_inclusive('\n').collect();
            if at.line >= 1 && at.end_line >= at.line && at.end_line <= lines.len() {
                let first = lines[at.line - 1];
                let chunk_start = first.as_ptr() as usize - text.as_ptr() as usize;
                let last = lines[at.end_line - 1];
                let chunk_end = last.as_ptr() as usize - text.as_ptr() as usize + last.len();
                let chunk = &text[chunk_start..chunk_end];
                let start = byte_of_column(first, at.column);
                let last_offset = last.as_ptr() as usize - first.as_ptr() as usize;
                let end =
                    (last_offset + byte_of_column(last, at.end_column)).min(chunk.trim_end().len());
                let end = if end <= start {
                    (start + 1).min(chunk.len())
                } else {
                    end
                };
                let mut ann = kind.span(start..end);
                if let Some(l) = label {
                    ann = ann.label(l);
                }
                return SnippetOrOrigin::Snippet(
                    Snippet::source(chunk)
                        .line_start(at.line)
                        .path(path)
                        .fold(true)
                        .annotation(ann),
                );
            }
        }
        SnippetOrOrigin::Origin(Origin::path(path).line(at.line).char_column(at.column))
    }
}

fn krate_of(program: &Program, f: FnId) -> Option<u32> {
    match program.function(f).kind {
        program::FnKind::Body { krate, .. } => Some(krate),
        _ => None,
    }
}

// ------------------------------------------------------------------ JSON

#[derive(Serialize)]
pub struct JsonSpan {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

#[derive(Serialize)]
pub struct JsonNote {
    pub kind: &'static str,
    pub message: String,
    pub span: Option<JsonSpan>,
}

#[derive(Serialize)]
pub struct JsonFrame {
    pub caller: String,
    pub callee: String,
    pub edge: &'static str,
    pub span: Option<JsonSpan>,
}

#[derive(Serialize)]
pub struct JsonFinding {
    pub id: String,
    /// What the finding says, as a fingerprint (`text_fingerprint`).
    pub text_fingerprint: String,
    pub kind: &'static str,
    pub severity: &'static str,
    pub message: String,
    pub span: Option<JsonSpan>,
    pub label: Option<String>,
    pub function: Option<String>,
    pub notes: Vec<JsonNote>,
    /// From the outermost caller down to `function`.
    pub trace: Vec<JsonFrame>,
    /// The triage entry that judged this finding (`check --triage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triage: Option<JsonTriage>,
}

/// A finding's verdict, from the triage file.
#[derive(Clone, Debug, Serialize)]
pub struct JsonTriage {
    /// `bug`, `not-a-bug`, `intended` or `wont-fix`.
    pub verdict: &'static str,
    pub reason: String,
    pub by: String,
    pub date: Option<String>,
    pub reference: Option<String>,
    /// The finding's `text_fingerprint` when it was judged.
    pub judged_text: String,
    /// What the finding says changed since it was judged: look again.
    pub reexamine: bool,
    /// The verdict hides the finding: the run does not count it (SARIF
    /// lists it with a suppression).
    pub suppressed: bool,
}

fn json_span(program: &Program, loc: Option<Loc>) -> Option<JsonSpan> {
    let l = locate(program, loc?)?;
    Some(JsonSpan {
        file: l.path,
        line: l.line,
        column: l.column,
        end_line: l.end_line,
        end_column: l.end_column,
    })
}

pub fn to_json(program: &Program, finding: &Finding) -> JsonFinding {
    let trace = finding
        .trace_from
        .or(finding.function)
        .map(|f| call_trace(program, f))
        .unwrap_or_default();
    JsonFinding {
        id: stable_id(program, finding),
        text_fingerprint: text_fingerprint(finding),
        kind: finding.kind,
        severity: finding.severity.as_str(),
        message: finding.message.clone(),
        span: json_span(program, finding.primary),
        label: finding.label.clone(),
        function: finding
            .function
            .map(|f| program.function(f).name.to_string()),
        notes: finding
            .notes
            .iter()
            .map(|n| JsonNote {
                kind: if n.is_help { "help" } else { "note" },
                message: n.text.clone(),
                span: json_span(program, n.loc),
            })
            .collect(),
        triage: None,
        trace: trace
            .iter()
            .map(|s| JsonFrame {
                caller: program.function(s.caller).name.to_string(),
                callee: program.function(s.callee).name.to_string(),
                edge: s.edge.kind.name(),
                span: json_span(
                    program,
                    krate_of(program, s.caller).map(|krate| Loc {
                        krate,
                        span: s.edge.span,
                    }),
                ),
            })
            .collect(),
    }
}

/// `N errors, M warnings` in rustc's words.
pub fn summary_line(findings: &[Finding]) -> String {
    let count = |s| findings.iter().filter(|f| f.severity == s).count();
    let (e, w) = (count(Severity::Error), count(Severity::Warning));
    let mut out = String::new();
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    match (e, w) {
        (0, 0) => out.push_str("no errors or warnings"),
        (e, 0) => out.push_str(&plural(e, "error")),
        (0, w) => out.push_str(&plural(w, "warning")),
        (e, w) => {
            let _ = write!(out, "{}, {}", plural(e, "error"), plural(w, "warning"));
        }
    }
    out
}
