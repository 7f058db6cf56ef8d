//! The common currency of the analyses: a [`Finding`] is one diagnostic with
//! a primary location, notes (some with locations), help, the instance it
//! was found in, and the material of its stable identity. Rendering (text,
//! JSON) lives in `report`; the analyses only fill these in.

use program::FnId;

/// A finding kind: declared once, with its documentation, beside the check
/// that reports it (`declare_kind!`), in the style of clippy's
/// `declare_clippy_lint!`. A [`Finding`] can only be made for a declared
/// kind; `checks::KINDS` lists them all, and `--deny`/`--warn`/`--allow`,
/// `--explain` and docs/output.md read from there.
#[derive(Debug)]
pub struct Kind {
    /// The stable name, e.g. `sleep-in-atomic` (JSON, ids, levels).
    pub name: &'static str,
    /// The severity its findings have unless a level says otherwise.
    pub severity: Severity,
    /// The family of checks that reports it (`sleep`, `lock-state`, …).
    pub family: &'static str,
    /// One line: what a finding of this kind means.
    pub summary: &'static str,
    /// The long explanation: why it matters, what to do, known limits.
    pub explanation: &'static str,
}

/// Declares a finding kind; its doc comment is the long explanation.
///
/// ```
/// findings::declare_kind! {
///     /// Dropping an `Arc` under a spinlock may run its teardown there.
///     pub EXAMPLE, "example", Warning, "demo", "a call whose callee may sleep"
/// }
/// assert_eq!(EXAMPLE.name, "example");
/// assert!(EXAMPLE.explanation.contains("teardown"));
/// ```
#[macro_export]
macro_rules! declare_kind {
    ($(#[doc = $doc:literal])* $vis:vis $ident:ident, $name:literal, $severity:ident, $family:literal, $summary:literal) => {
        $(#[doc = $doc])*
        $vis static $ident: $crate::Kind = $crate::Kind {
            name: $name,
            severity: $crate::Severity::$severity,
            family: $family,
            summary: $summary,
            explanation: concat!($($doc, "\n"),*),
        };
    };
}

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
    /// Where the call trace starts instead, when the notes already lead
    /// from `function` up to it (a double lock proven by a caller: the
    /// trace continues above the caller that proves it).
    pub trace_from: Option<FnId>,
    /// What identifies this finding across runs besides its kind and
    /// function: e.g. the callee's name. Never spans or ids.
    pub subject: String,
}

impl Finding {
    pub fn new(kind: &'static Kind, severity: Severity, message: impl Into<String>) -> Finding {
        Finding {
            kind: kind.name,
            severity,
            message: message.into(),
            primary: None,
            label: None,
            notes: Vec::new(),
            function: None,
            trace_from: None,
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

    pub fn trace_from(mut self, f: FnId) -> Self {
        self.trace_from = Some(f);
        self
    }

    pub fn subject(mut self, s: impl Into<String>) -> Self {
        self.subject = s.into();
        self
    }
}
