//! The common currency of the analyses: a [`Finding`] is one diagnostic with
//! a primary location, notes (some with locations), help, the instance it
//! was found in, and the material of its stable identity. Rendering (text,
//! JSON) lives in `report`; the analyses only fill these in.

use program::FnId;

/// Every finding kind, as documented in docs/output.md (a test keeps the
/// two, and the sources, in step). `--deny`/`--warn`/`--allow` take these.
pub const KINDS: &[&str] = &[
    "sleep-in-atomic",
    "last-reference-in-atomic",
    "callback-context",
    "callback-adjustment",
    "cannot-infer-adjustment",
    "annotation-mismatch",
    "extern-function",
    "recursion",
    "array-drop",
    "slice-drop",
    "trait-upcast",
    "bad-annotation",
    "fn-pointer",
    "vtable",
    "double-lock",
    "nested-lock-class",
    "lock-order-inversion",
    "lock-leak",
    "unbalanced-unlock",
    "irq-unsafe-lock",
    "report",
];

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// A source location: a span in the file table of crate `krate`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    pub krate: u32,
    pub span: kmir::Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub loc: Option<Loc>,
    pub text: String,
    /// For located notes: whether it is a `help` rather than a `note`.
    pub is_help: bool,
}

impl Note {
    pub fn text(text: impl Into<String>) -> Note {
        Note {
            loc: None,
            text: text.into(),
            is_help: false,
        }
    }

    pub fn at(loc: Loc, text: impl Into<String>) -> Note {
        Note {
            loc: Some(loc),
            text: text.into(),
            is_help: false,
        }
    }

    pub fn help(text: impl Into<String>) -> Note {
        Note {
            loc: None,
            text: text.into(),
            is_help: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Stable, documented kind, e.g. `sleep-in-atomic` (see docs/output.md).
    pub kind: &'static str,
    pub severity: Severity,
    pub message: String,
    pub primary: Option<Loc>,
    /// Text under the primary span.
    pub label: Option<String>,
    pub notes: Vec<Note>,
    /// The instance being checked; the report adds a call trace to it.
    pub function: Option<FnId>,
    /// What identifies this finding across runs besides its kind and
    /// function: e.g. the callee's name. Never spans or ids.
    pub subject: String,
}

impl Finding {
    pub fn new(kind: &'static str, severity: Severity, message: impl Into<String>) -> Finding {
        Finding {
            kind,
            severity,
            message: message.into(),
            primary: None,
            label: None,
            notes: Vec::new(),
            function: None,
            subject: String::new(),
        }
    }

    pub fn at(mut self, loc: Loc) -> Self {
        self.primary = Some(loc);
        self
    }

    pub fn label(mut self, text: impl Into<String>) -> Self {
        self.label = Some(text.into());
        self
    }

    pub fn note(mut self, note: Note) -> Self {
        self.notes.push(note);
        self
    }

    pub fn in_function(mut self, f: FnId) -> Self {
        self.function = Some(f);
        self
    }

    pub fn subject(mut self, s: impl Into<String>) -> Self {
        self.subject = s.into();
        self
    }
}

#[cfg(test)]
mod kinds_tests {
    use super::KINDS;
    use std::path::Path;

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .and_then(Path::parent)
            .expect("the crate lives in crates/")
    }

    /// The kinds in the first column of docs/output.md's finding table.
    fn documented() -> Vec<String> {
        let doc = std::fs::read_to_string(root().join("docs/output.md")).expect("docs/output.md");
        let table = doc
            .split("## Finding kinds")
            .nth(1)
            .expect("a `## Finding kinds` section");
        let mut kinds = Vec::new();
        for line in table.lines().skip_while(|l| !l.starts_with('|')) {
            if !line.starts_with('|') {
                break;
            }
            let first = line.split('|').nth(1).unwrap_or_default();
            for part in first.split(',') {
                let part = part.trim();
                if let Some(k) = part.strip_prefix('`').and_then(|p| p.strip_suffix('`')) {
                    kinds.push(k.to_string());
                }
            }
        }
        kinds
    }

    #[test]
    fn kinds_match_the_documentation() {
        let mut doc = documented();
        let mut ours: Vec<String> = KINDS.iter().map(|k| k.to_string()).collect();
        doc.sort();
        ours.sort();
        assert_eq!(ours, doc);
    }

    /// Every kind string a finding is created with in the sources is listed.
    #[test]
    fn kinds_cover_the_sources() {
        let mut stack = vec![root().join("crates"), root().join("analyzer/src")];
        let mut seen = 0;
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir)
                .expect("readable source tree")
                .flatten()
            {
                let path = entry.path();
                if path.is_dir() {
                    if !path.ends_with("target") && !path.ends_with("fuzz") {
                        stack.push(path);
                    }
                    continue;
                }
                // This file names the pattern it searches for.
                if path.extension().is_none_or(|e| e != "rs")
                    || path.ends_with("findings/src/lib.rs")
                {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let mut rest = text.as_str();
                while let Some(i) = rest.find("Finding::new(") {
                    rest = &rest[i + "Finding::new(".len()..];
                    let arg = rest.trim_start();
                    if let Some(lit) = arg.strip_prefix('"') {
                        let kind = &lit[..lit.find('"').unwrap_or(0)];
                        assert!(
                            KINDS.contains(&kind),
                            "{}: kind `{kind}` is not in findings::KINDS",
                            path.display()
                        );
                        seen += 1;
                    }
                }
            }
        }
        assert!(seen > 15, "found only {seen} finding kinds in the sources");
    }
}
