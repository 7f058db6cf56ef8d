//! The invariants file: strict TOML (unknown keys are errors), every error
//! a miette diagnostic with a labelled span into the file.

use std::ops::Range;
use std::path::{Path, PathBuf};

use miette::{Diagnostic, NamedSource, SourceSpan};
use serde::Deserialize;
use toml::Spanned;

use crate::{Declaration, Invariant, Origin};

/// A problem with an invariants file, pointing into it.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{message}")]
#[diagnostic(code(kanalyze::invariants))]
pub struct FileError {
    pub message: String,
    #[source_code]
    pub source_code: NamedSource<String>,
    #[label("{label}")]
    pub span: Option<SourceSpan>,
    pub label: String,
    #[help]
    pub help: Option<String>,
}

impl FileError {
    /// An error at `span` of the file `path` whose text is `text`.
    pub fn at(
        path: &Path,
        text: &str,
        span: Option<Range<usize>>,
        message: impl Into<String>,
        label: impl Into<String>,
        help: Option<String>,
    ) -> FileError {
        FileError {
            message: message.into(),
            source_code: NamedSource::new(path.display().to_string(), text.to_string()),
            span: span.map(SourceSpan::from),
            label: label.into(),
            help,
        }
    }
}

const FORMAT_HELP: &str = "an invariants file is a list of `[[empty_at_teardown]]` tables with the keys `type`, `field`, `because` and optionally `emptied_by` (docs/invariants.md)";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    empty_at_teardown: Vec<Spanned<RawEmpty>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ type = \"crate::Struct\", field = \"name\", because = \"…\" }`"
)]
struct RawEmpty {
    #[serde(rename = "type")]
    ty: Spanned<String>,
    field: Spanned<String>,
    #[serde(default)]
    emptied_by: Vec<Spanned<String>>,
    because: Spanned<String>,
}

/// Reads and checks an invariants file.
pub fn load(path: &Path) -> Result<Vec<Declaration>, Box<FileError>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Box::new(FileError::at(
            path,
            "",
            None,
            format!("cannot read invariants file `{}`: {e}", path.display()),
            "",
            None,
        ))
    })?;
    parse(path, &text)
}

/// Parses the text of an invariants file named `path`.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Declaration>, Box<FileError>> {
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        Box::new(FileError::at(
            path,
            text,
            e.span(),
            format!("invalid invariants file: {}", e.message().trim_end()),
            "here",
            Some(FORMAT_HELP.to_string()),
        ))
    })?;
    let err = |span: Range<usize>, message: String, label: &str, help: Option<String>| {
        Box::new(FileError::at(path, text, Some(span), message, label, help))
    };
    let mut out = Vec::new();
    for entry in raw.empty_at_teardown {
        let span = entry.span();
        let e = entry.into_inner();
        let ty = e.ty.get_ref().trim();
        if ty.is_empty() || ty.contains('<') || ty.contains(char::is_whitespace) {
            return Err(err(
                e.ty.span(),
                format!("`{}` is not a struct path", e.ty.get_ref()),
                "expected a path like `crate::module::Struct`",
                Some("give the struct's canonical path without generic arguments; the invariant covers every instantiation".to_string()),
            ));
        }
        let field = e.field.get_ref().trim();
        if field.is_empty() || !field.chars().all(|c| c == '_' || c.is_alphanumeric()) {
            return Err(err(
                e.field.span(),
                format!("`{}` is not a field name", e.field.get_ref()),
                "expected one field name",
                Some("name a field of the struct itself; for a field of a nested struct, declare it on that struct".to_string()),
            ));
        }
        if e.because.get_ref().trim().is_empty() {
            return Err(err(
                e.because.span(),
                "`because` is empty".to_string(),
                "say what upholds the invariant",
                Some("every invariant is trusted; `because` cites the code that upholds it, for whoever audits it".to_string()),
            ));
        }
        let mut emptied_by = Vec::new();
        for f in &e.emptied_by {
            if f.get_ref().trim().is_empty() {
                return Err(err(
                    f.span(),
                    "an empty function path in `emptied_by`".to_string(),
                    "expected a function path",
                    None,
                ));
            }
            emptied_by.push(f.get_ref().trim().to_string());
        }
        let (line, col) = line_col(text, span.start);
        out.push(Declaration {
            invariant: Invariant::EmptyAtTeardown {
                ty: ty.to_string(),
                field: field.to_string(),
                emptied_by,
            },
            origin: Origin::File {
                path: PathBuf::from(path),
                line,
                col,
                span,
            },
            because: Some(e.because.into_inner().trim().to_string()),
        });
    }
    Ok(out)
}

/// 1-based line and column of byte `offset`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
