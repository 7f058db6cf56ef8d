//! The triage record: verdicts on findings, kept next to the tree
//! (`--triage FILE`, or `triage = "…"` in `kanalyze.toml`), so that a nightly
//! batch shows only what nobody has looked at, and a finding whose text
//! changed since it was judged is looked at again.
//!
//! ```toml
//! [[finding]]
//! id = "KAd30163f880c99011"       # the finding's stable id (JSON `id`)
//! text = "KT0f3a…"                # its text when judged (JSON `text_fingerprint`)
//! verdict = "not-a-bug"           # bug, not-a-bug, intended or wont-fix
//! reason = "the list holds another reference (freeze.rs:381)"
//! by = "A. Maintainer"
//! date = "2026-12-04"             # optional
//! reference = "lore.kernel.org/…" # optional: a commit, a list message
//! ```
//!
//! A finding judged `not-a-bug`, `intended` or `wont-fix` (a real bug that
//! will not be fixed) is not shown while its text is the one judged; one
//! judged `bug` stays, with the verdict as a note; one
//! whose text changed is shown with the old verdict and "re-examine". Entries
//! that match no finding any more are counted (fixed, or renamed).

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::Path;

use crate::diag::{FileError, clip};
use serde::Deserialize;
use toml::Spanned;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Bug,
    NotABug,
    Intended,
    /// A real bug that will not be fixed (not shown, like `not-a-bug`).
    WontFix,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [
        Verdict::Bug,
        Verdict::NotABug,
        Verdict::Intended,
        Verdict::WontFix,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Bug => "bug",
            Verdict::NotABug => "not-a-bug",
            Verdict::Intended => "intended",
            Verdict::WontFix => "wont-fix",
        }
    }

    /// Whether `check` leaves a finding with this verdict out (while its
    /// text is the one judged).
    pub fn hides(self) -> bool {
        !matches!(self, Verdict::Bug)
    }
}

impl Entry {
    /// "triaged as `not-a-bug` by A. Maintainer on 2026-12-04: reason".
    pub fn judged(&self) -> String {
        let when = self
            .date
            .as_ref()
            .map(|d| format!(" on {d}"))
            .unwrap_or_default();
        format!(
            "triaged as `{}` by {}{when}: {}",
            self.verdict.as_str(),
            self.by,
            self.reason
        )
    }
}

/// One judged finding.
#[derive(Clone, Debug)]
pub struct Entry {
    pub id: String,
    pub text: String,
    pub verdict: Verdict,
    pub reason: String,
    pub by: String,
    pub date: Option<String>,
    /// A commit, a list message: where the verdict was discussed.
    pub reference: Option<String>,
    /// The line of the file its `id` is on (0 when not read from a file).
    pub line: usize,
}

/// A triage file, read and checked.
#[derive(Debug, Default)]
pub struct Triage {
    pub entries: HashMap<String, Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    finding: Vec<Spanned<RawEntry>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ id = \"KA…\", text = \"KT…\", verdict = \"not-a-bug\", reason = \"…\", by = \"…\" }`"
)]
struct RawEntry {
    id: Spanned<String>,
    text: Spanned<String>,
    verdict: Spanned<String>,
    reason: Spanned<String>,
    by: Spanned<String>,
    date: Option<String>,
    reference: Option<String>,
}

const FORMAT_HELP: &str = "a triage file is a list of `[[finding]]` tables with `id`, `text`, `verdict`, `reason`, `by` and optionally `date` and `reference` (docs/output.md, \"Triage\")";

/// Reads and checks a triage file.
pub fn load(path: &Path) -> Result<Triage, Box<FileError>> {
    let text = crate::user_file::read_text(path).map_err(|e| {
        FileError::at(
            "kanalyze::triage",
            path,
            "",
            None,
            format!("cannot read the triage file `{}`: {e}", path.display()),
            "",
            None,
        )
    })?;
    parse(path, &text)
}

fn is_hash(s: &str, prefix: &str) -> bool {
    s.len() == prefix.len() + 16
        && s.starts_with(prefix)
        && s[prefix.len()..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// Parses the text of the triage file `path`.
pub fn parse(path: &Path, text: &str) -> Result<Triage, Box<FileError>> {
    let err = |span: Option<Range<usize>>, message: String, label: &str, help: Option<String>| {
        FileError::at("kanalyze::triage", path, text, span, message, label, help)
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        err(
            e.span(),
            format!(
                "invalid triage file: {}",
                crate::diag::clip_quoted(e.message().trim_end())
            ),
            "here",
            Some(FORMAT_HELP.to_string()),
        )
    })?;
    let mut triage = Triage::default();
    let mut seen: HashSet<String> = HashSet::new();
    for entry in raw.finding {
        let e = entry.into_inner();
        if !is_hash(e.id.get_ref(), "KA") {
            return Err(err(
                Some(e.id.span()),
                format!("`{}` is not a finding id", clip(e.id.get_ref())),
                "expected `KA` and 16 hex digits",
                Some(
                    "copy the `id` of the finding from `kanalyze check --format json`".to_string(),
                ),
            ));
        }
        if !is_hash(e.text.get_ref(), "KT") {
            return Err(err(
                Some(e.text.span()),
                format!("`{}` is not a text fingerprint", clip(e.text.get_ref())),
                "expected `KT` and 16 hex digits",
                Some("copy the `text_fingerprint` of the finding from `kanalyze check --format json`: it is how a changed finding is noticed".to_string()),
            ));
        }
        let Some(verdict) = Verdict::ALL
            .into_iter()
            .find(|v| v.as_str() == e.verdict.get_ref())
        else {
            return Err(err(
                Some(e.verdict.span()),
                format!("unknown verdict `{}`", clip(e.verdict.get_ref())),
                "not a verdict",
                Some("the verdicts are `bug`, `not-a-bug`, `intended` and `wont-fix`".to_string()),
            ));
        };
        for (field, name) in [(&e.reason, "reason"), (&e.by, "by")] {
            if field.get_ref().trim().is_empty() {
                return Err(err(
                    Some(field.span()),
                    format!("`{name}` is empty"),
                    "say it",
                    Some("a verdict without its reason and author cannot be audited".to_string()),
                ));
            }
        }
        if !seen.insert(e.id.get_ref().clone()) {
            return Err(err(
                Some(e.id.span()),
                format!("finding `{}` is judged twice", e.id.get_ref()),
                "a second entry",
                Some("keep one entry per finding".to_string()),
            ));
        }
        let line = text[..e.id.span().start.min(text.len())]
            .matches('\n')
            .count()
            + 1;
        triage.entries.insert(
            e.id.get_ref().clone(),
            Entry {
                line,
                id: e.id.into_inner(),
                text: e.text.into_inner(),
                verdict,
                reason: e.reason.into_inner().trim().to_string(),
                by: e.by.into_inner().trim().to_string(),
                date: e.date,
                reference: e.reference,
            },
        );
    }
    Ok(triage)
}

/// What the triage did to a run's findings.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Outcome {
    /// Findings not shown, by verdict (`not-a-bug`, `intended`, `wont-fix`).
    pub hidden: usize,
    /// Findings shown with a `bug` verdict.
    pub bugs: usize,
    /// Findings whose text changed since they were judged: shown again.
    pub reexamine: usize,
    /// Entries that match no finding of this run.
    pub stale: Vec<String>,
}

/// What `kanalyze triage` records for each selected finding.
pub struct Verdicts<'a> {
    pub verdict: Verdict,
    pub reason: &'a str,
    pub by: &'a str,
    pub date: Option<&'a str>,
    pub reference: Option<&'a str>,
}

/// Writes or updates the entries of `findings` (`(id, text fingerprint)`)
/// in the triage file `text` (empty for a new file), keeping every other
/// entry, comment and the order; returns the new text and how many entries
/// were added and updated.
pub fn record(
    text: &str,
    findings: &[(String, String)],
    v: &Verdicts<'_>,
) -> Result<(String, usize, usize), String> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    if !doc.contains_key("finding") {
        doc.insert(
            "finding",
            toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()),
        );
    }
    let entries = doc["finding"]
        .as_array_of_tables_mut()
        .ok_or_else(|| "`finding` is not a list of `[[finding]]` tables".to_string())?;
    let (mut added, mut updated) = (0, 0);
    for (id, fingerprint) in findings {
        let existing = entries
            .iter_mut()
            .find(|t| t.get("id").and_then(|i| i.as_str()) == Some(id.as_str()));
        let table = match existing {
            Some(t) => {
                updated += 1;
                t
            }
            None => {
                added += 1;
                let mut t = toml_edit::Table::new();
                t.insert("id", toml_edit::value(id.as_str()));
                entries.push(t);
                entries
                    .iter_mut()
                    .last()
                    .ok_or_else(|| "the entry just added is missing".to_string())?
            }
        };
        table.insert("text", toml_edit::value(fingerprint.as_str()));
        table.insert("verdict", toml_edit::value(v.verdict.as_str()));
        table.insert("reason", toml_edit::value(v.reason));
        table.insert("by", toml_edit::value(v.by));
        match v.date {
            Some(d) => {
                table.insert("date", toml_edit::value(d));
            }
            None => {
                table.remove("date");
            }
        }
        match v.reference {
            Some(r) => {
                table.insert("reference", toml_edit::value(r));
            }
            None => {
                table.remove("reference");
            }
        }
    }
    Ok((doc.to_string(), added, updated))
}
