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

    /// Writes the diagnostic to stderr, bounded ([`bounded`]). Failing to
    /// write to stderr is ignored on purpose: there is nowhere left to
    /// report it, and `eprintln!` would panic instead.
    pub fn emit(&self) {
        let clipped = Diagnostic {
            level: self.level,
            message: clip_quoted(&self.message).into_owned(),
            children: self
                .children
                .iter()
                .map(|(k, t)| (*k, clip_quoted(t).into_owned()))
                .collect(),
        };
        let _ = write!(
            std::io::stderr().lock(),
            "{}",
            bounded(&clipped.to_string(), LINE_LIMIT)
        );
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

/// At most this many bytes of a user's input are shown in a message.
pub const SHOWN_INPUT: usize = 200;
/// The most [`clip`] adds: `… (N bytes)`.
const CLIP_SUFFIX: usize = 32;

/// `text` as a message shows it: whole when it is short, else its first
/// [`SHOWN_INPUT`] bytes (at a character boundary) and how long it was.
/// Every message that echoes a user's input goes through it, so that a
/// huge value cannot flood the output.
pub fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= SHOWN_INPUT {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = SHOWN_INPUT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}… ({} bytes)", &text[..end], text.len()))
}

/// A message that quotes a user's input (a parser's: ``invalid type:
/// string "…", expected a boolean``) with every quoted part clipped
/// ([`clip`]); the rest is kept.
pub fn clip_quoted(message: &str) -> std::borrow::Cow<'_, str> {
    if message.len() <= SHOWN_INPUT {
        return std::borrow::Cow::Borrowed(message);
    }
    let mut out = String::new();
    let mut rest = message;
    // Inside a quote: the quote character that closes it.
    let mut open: Option<char> = None;
    while !rest.is_empty() {
        let next = match open {
            Some(q) => rest.find(q),
            None => rest.find(['`', '"']),
        };
        let (part, tail) = match next {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        // A part [`clip`] already cut is left as it is.
        let long = part.len() > SHOWN_INPUT + CLIP_SUFFIX;
        out.push_str(
            if open.is_some() && long {
                clip(part)
            } else {
                part.into()
            }
            .as_ref(),
        );
        let Some(q) = tail.chars().next() else { break };
        out.push(q);
        rest = &tail[q.len_utf8()..];
        open = match open {
            Some(_) => None,
            None => Some(q),
        };
    }
    std::borrow::Cow::Owned(out)
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
        .render_report(&mut out, &Clipped(d))
    {
        Ok(()) => eprint!("{}", bounded(&out, SNIPPET_LINE_LIMIT)),
        // Rendering into a String only fails on a formatter error; the
        // message itself must still reach the user.
        Err(_) => eprintln!(
            "error: {}",
            bounded(&clip_quoted(&d.to_string()), LINE_LIMIT)
        ),
    }
}

/// A miette diagnostic whose message, help and labels have what they
/// quote of a user's input clipped ([`clip_quoted`]); everything else is
/// the diagnostic's own.
struct Clipped<'a>(&'a dyn miette::Diagnostic);

impl fmt::Debug for Clipped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

impl fmt::Display for Clipped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&clip_quoted(&self.0.to_string()))
    }
}

impl std::error::Error for Clipped<'_> {}

impl miette::Diagnostic for Clipped<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.0.code()
    }

    fn severity(&self) -> Option<miette::Severity> {
        self.0.severity()
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        let help = self.0.help()?.to_string();
        Some(Box::new(clip_quoted(&help).into_owned()))
    }

    fn url<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.0.url()
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.0.source_code()
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let labels = self.0.labels()?;
        Some(Box::new(labels.map(|l| {
            let text = l.label().map(|t| clip_quoted(t).into_owned());
            miette::LabeledSpan::new_with_span(text, *l.inner())
        })))
    }

    fn related<'b>(&'b self) -> Option<Box<dyn Iterator<Item = &'b dyn miette::Diagnostic> + 'b>> {
        self.0.related()
    }

    fn diagnostic_source(&self) -> Option<&dyn miette::Diagnostic> {
        self.0.diagnostic_source()
    }
}

/// The longest line a rustc-style error prints (a message, a list of the
/// finding kinds); longer ones are cut, saying how much was left out.
const LINE_LIMIT: usize = 1000;
/// The longest line a miette error prints: its text is wrapped at 100
/// columns, so only a source line of a snippet is longer.
const SNIPPET_LINE_LIMIT: usize = 400;
/// The most lines an error prints (a snippet of a value that spans many
/// lines); the middle of a longer one is left out.
const LINES_LIMIT: usize = 80;

/// `text` (a rendered error) with every line cut to `line_limit` bytes
/// and at most [`LINES_LIMIT`] lines: the last defence against a huge
/// value in a user's file flooding the terminal, whatever message echoes
/// it. The messages themselves clip what they quote ([`clip`]).
pub fn bounded(text: &str, line_limit: usize) -> std::borrow::Cow<'_, str> {
    let lines = text.split_inclusive('\n').count();
    if text.len() <= line_limit && lines <= LINES_LIMIT {
        return std::borrow::Cow::Borrowed(text);
    }
    let cut = |line: &str| -> String {
        let body = line.strip_suffix('\n').unwrap_or(line);
        if body.len() <= line_limit {
            return line.to_string();
        }
        let mut end = line_limit;
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… ({} more bytes)\n", &body[..end], body.len() - end)
    };
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::new();
    if all.len() <= LINES_LIMIT {
        all.iter().for_each(|l| out.push_str(&cut(l)));
    } else {
        let head = LINES_LIMIT - 10;
        all[..head].iter().for_each(|l| out.push_str(&cut(l)));
        out.push_str(&format!(
            "… ({} lines not shown)\n",
            all.len() - LINES_LIMIT
        ));
        all[all.len() - 10..]
            .iter()
            .for_each(|l| out.push_str(&cut(l)));
    }
    std::borrow::Cow::Owned(out)
}

/// The text a snippet of `text` at `span` needs: the whole file when it
/// is small, else only the span's first line, cut to a window around it
/// (earlier lines left empty, so that line numbers stay right). A 10 MB
/// value is not rendered whole.
fn window(
    text: &str,
    span: Option<std::ops::Range<usize>>,
) -> (String, Option<std::ops::Range<usize>>) {
    const WHOLE: usize = 16 * 1024;
    const AROUND: usize = 120;
    if text.len() <= WHOLE {
        return (text.to_string(), span);
    }
    let Some(span) = span else {
        return (String::new(), None);
    };
    let floor = |mut i: usize| {
        i = i.min(text.len());
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start = floor(span.start);
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let end = floor(span.end.max(start).min(line_end).min(start + SHOWN_INPUT));
    let from = floor(start.saturating_sub(AROUND).max(line_start));
    let to = floor((end + AROUND).min(line_end));
    let mut out = "\n".repeat(text[..line_start].matches('\n').count());
    if from > line_start {
        out.push('…');
    }
    let new_start = out.len() + (start - from);
    out.push_str(&text[from..to]);
    if to < line_end {
        out.push('…');
    }
    out.push('\n');
    (out, Some(new_start..new_start + (end - start)))
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
        let (text, span) = window(text, span);
        Box::new(FileError {
            code,
            message: message.into(),
            source_code: miette::NamedSource::new(path.display().to_string(), text),
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

#[cfg(test)]
mod tests {
    use super::{SHOWN_INPUT, bounded, clip, clip_quoted, window};

    #[test]
    fn clipped_input_says_how_long_it_was() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(1000);
        let c = clip(&long);
        assert!(c.len() < SHOWN_INPUT + 20, "{c}");
        assert!(c.ends_with("… (2000 bytes)"), "{c}");
    }

    #[test]
    fn only_the_quoted_parts_are_clipped() {
        let value = "x".repeat(10_000);
        let m = format!("invalid type: string \"{value}\", expected a boolean");
        let c = clip_quoted(&m);
        assert!(c.starts_with("invalid type: string \"xxx"), "{c}");
        assert!(c.ends_with("… (10000 bytes)\", expected a boolean"), "{c}");
        // A long message without long quotes is kept.
        let list = (0..60)
            .map(|i| format!("`k{i}`"))
            .collect::<Vec<_>>()
            .join(", ");
        assert_eq!(clip_quoted(&list), list);
    }

    #[test]
    fn rendered_errors_are_bounded() {
        let huge = format!("error: {}\n", "y".repeat(1 << 20));
        let b = bounded(&huge, 500);
        assert!(b.len() < 600, "{}", b.len());
        let many = "line\n".repeat(10_000);
        let b = bounded(&many, 500);
        assert_eq!(b.lines().count(), 81);
        assert!(b.contains("(9920 lines not shown)"));
    }

    #[test]
    fn a_snippet_of_a_huge_line_is_a_window_around_the_span() {
        let text = format!("a = 1\nprofile = \"{}\"\n", "z".repeat(1 << 20));
        let start = text.find('"').unwrap();
        let (w, span) = window(&text, Some(start..text.len() - 1));
        assert!(w.len() < 1000, "{}", w.len());
        let span = span.unwrap();
        assert!(w[span.clone()].starts_with("\"zzz"));
        // The line keeps its number: one empty line before it.
        assert!(w.starts_with("\nprofile = \""), "{}", &w[..40]);
    }
}
