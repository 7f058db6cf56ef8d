//! The common currency of the analyses: a [`Finding`] is one diagnostic with
//! a primary location, notes (some with locations), help, the instance it
//! was found in, and the material of its stable identity. Rendering (text,
//! JSON) lives in `report`; the analyses only fill these in.

use program::FnId;

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
