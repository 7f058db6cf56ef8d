//! rustc-style diagnostics on stderr: `error: message` followed by
//! `  = note: …` / `  = help: …` lines.

use std::fmt;
use std::io::Write;

use kmir::{LoadError, Problem};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub level: Level,
    pub message: String,
    /// `("note", text)` or `("help", text)`, printed in order.
    pub children: Vec<(&'static str, String)>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            level: Level::Error,
            message: message.into(),
            children: Vec::new(),
        }
    }

    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            level: Level::Warning,
            message: message.into(),
            children: Vec::new(),
        }
    }

    /// The same message at warning level: for inputs that are skipped
    /// while the analysis goes on with the rest.
    pub fn as_warning(mut self) -> Self {
        self.level = Level::Warning;
        self
    }

    pub fn note(mut self, text: impl Into<String>) -> Self {
        self.children.push(("note", text.into()));
        self
    }

    pub fn help(mut self, text: impl Into<String>) -> Self {
        self.children.push(("help", text.into()));
        self
    }

    /// Writes the diagnostic to stderr. Failing to write to stderr is
    /// ignored on purpose: there is nowhere left to report it, and `eprintln!`
    /// would panic instead.
    pub fn emit(&self) {
        let _ = write!(std::io::stderr().lock(), "{self}");
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Error => "error",
            Level::Warning => "warning",
        };
        writeln!(f, "{level}: {}", self.message)?;
        for (kind, text) in &self.children {
            // Continuation lines line up under the text of the first one.
            let indent = " ".repeat("  = : ".len() + kind.len());
            let mut lines = text.lines();
            writeln!(f, "  = {kind}: {}", lines.next().unwrap_or(""))?;
            for line in lines {
                writeln!(f, "{indent}{line}")?;
            }
        }
        Ok(())
    }
}

/// The diagnostic for a dump that could not be loaded, with advice that
/// depends on what went wrong.
pub fn load_error(e: &LoadError) -> Diagnostic {
    let d = Diagnostic::error(e.to_string());
    match e {
        LoadError::Io { source, .. } => match source.kind() {
            std::io::ErrorKind::PermissionDenied => {
                d.help("check the file's permissions or run as a user that can read it")
            }
            _ => d,
        },
        LoadError::Bad { problem, .. } => match problem {
            Problem::NotADump => d.help(
                "pass the `.kmir` files that `kextract` writes into `$KANALYZE_OUT`, \
                 or a directory that contains them",
            ),
            Problem::Empty => d.help(
                "rebuild the crate with kextract to write its dump again, or remove the file",
            ),
            Problem::Truncated { .. } | Problem::TruncatedPrefix { .. } => {
                d.help("rebuild the crate with kextract to write its dump again")
            }
            Problem::Version { found, supported } if found < supported => d
                .note(format!(
                    "the dump is older than this kanalyze: its analysis reads what a \
                     version {supported} kextract records (docs/dump-format.md)"
                ))
                .help(
                    "rebuild kextract from this source tree and rebuild the crates \
                     (for a kernel: `scripts/kernel.sh`, or `make … KANALYZE_OUT=…` again)",
                ),
            Problem::Version { .. } => d
                .note("the dump is newer than this kanalyze")
                .help("rebuild kanalyze from the same source tree as the kextract that wrote it"),
            Problem::Checksum { .. } => d
                .note("the file changed after kextract wrote it (disk or copy error)")
                .help("rebuild the crate with kextract to write its dump again"),
            Problem::Corrupt { .. } => d
                .note(
                    "the bytes are not what this kanalyze expects: the kextract that \
                     wrote them may use a different format without a version change, \
                     or the file was altered after it was written",
                )
                .help("rebuild kextract and kanalyze from the same source tree and re-extract"),
            Problem::Invalid { .. } => d.note(
                "the dump decodes but breaks an invariant of the format; \
                 this is a bug in the kextract that wrote it",
            ),
        },
    }
}

/// Prints a miette diagnostic (a config, spec or invariants file error,
/// with a labelled span into the file) on stderr: in colour on a terminal,
/// plain otherwise (so that logs and tests see stable text).
pub fn emit_miette(d: &dyn miette::Diagnostic) {
    use std::io::IsTerminal;
    let theme = if std::io::stderr().is_terminal() {
        miette::GraphicalTheme::unicode()
    } else {
        miette::GraphicalTheme::unicode_nocolor()
    };
    let mut out = String::new();
    match miette::GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .render_report(&mut out, d)
    {
        Ok(()) => eprint!("{out}"),
        // Rendering into a String only fails on a formatter error; the
        // message itself must still reach the user.
        Err(_) => eprintln!("error: {d}"),
    }
}

/// An error in a TOML input file the user wrote (`kanalyze.toml`, a
/// triage file), pointing into it; rendered by [`emit_miette`].
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct FileError {
    /// `kanalyze::config`, `kanalyze::triage`: which file kind.
    code: &'static str,
    message: String,
    source_code: miette::NamedSource<String>,
    span: Option<miette::SourceSpan>,
    label: String,
    help: Option<String>,
}

impl FileError {
    /// An error at `span` (a byte range) of the file `path` whose text is
    /// `text`; no span for a file that could not be read.
    pub fn at(
        code: &'static str,
        path: &std::path::Path,
        text: &str,
        span: Option<std::ops::Range<usize>>,
        message: impl Into<String>,
        label: &str,
        help: Option<String>,
    ) -> Box<FileError> {
        Box::new(FileError {
            code,
            message: message.into(),
            source_code: miette::NamedSource::new(path.display().to_string(), text.to_string()),
            span: span.map(miette::SourceSpan::from),
            label: label.to_string(),
            help,
        })
    }
}

impl miette::Diagnostic for FileError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display + 'a>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source_code)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let span = self.span?;
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_with_span(Some(self.label.clone()), span),
        )))
    }
}
