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

const FORMAT_HELP: &str = "an invariants file is a list of `[[empty_at_teardown]]` tables with the keys `type`, `field`, `because` and optionally `emptied_by`, of `[[empty_when_stored]]` tables with the keys `type`, `field`, `because` and optionally `stored_by`, of `[[kept_alive]]` and `[[holds_last]]` tables with the keys `type`, `field`, `because` and optionally `taken_by`, of `[[never_fails]]` tables with the keys `function`, `callee` and `because`, and of `[[same_object]]` tables with the keys `function`, `type`, `field`, `same_as` (an argument path: `self.to`, `arg1`) and `because` (docs/invariants.md)";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    empty_at_teardown: Vec<Spanned<RawEmpty>>,
    #[serde(default)]
    empty_when_stored: Vec<Spanned<RawStored>>,
    #[serde(default)]
    kept_alive: Vec<Spanned<RawKept>>,
    #[serde(default)]
    holds_last: Vec<Spanned<RawKept>>,
    #[serde(default)]
    never_fails: Vec<Spanned<RawNeverFails>>,
    #[serde(default)]
    same_object: Vec<Spanned<RawSameObject>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ function = \"crate::f\", type = \"crate::Struct\", field = \"name\", same_as = \"self.field\", because = \"…\" }`"
)]
struct RawSameObject {
    function: Spanned<String>,
    /// Rejected with its own message: a local's name is what a rename
    /// breaks.
    #[serde(default)]
    local: Option<Spanned<String>>,
    #[serde(rename = "type")]
    ty: Spanned<String>,
    field: Spanned<String>,
    same_as: Spanned<String>,
    because: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ function = \"crate::f\", callee = \"crate::g\", because = \"…\" }`"
)]
struct RawNeverFails {
    function: Spanned<String>,
    callee: Spanned<String>,
    because: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ type = \"crate::Struct\", field = \"name\", because = \"…\" }`"
)]
struct RawKept {
    #[serde(rename = "type")]
    ty: Spanned<String>,
    field: Spanned<String>,
    #[serde(default)]
    taken_by: Vec<Spanned<String>>,
    because: Spanned<String>,
}

/// Which table an entry of the file is in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Table {
    EmptyAtTeardown,
    EmptyWhenStored,
    KeptAlive,
    HoldsLast,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ type = \"crate::Struct\", field = \"name\", because = \"…\" }`"
)]
struct RawStored {
    #[serde(rename = "type")]
    ty: Spanned<String>,
    field: Spanned<String>,
    #[serde(default)]
    stored_by: Vec<Spanned<String>>,
    because: Spanned<String>,
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

/// Parses the text of an invariants file named `path`: the TOML read
/// into its tables, then each entry checked and made a declaration. The
/// first error is returned, in the order the tables are checked.
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
    let entries = Entries { path, text };
    // (offset of the entry, declaration): sorted into the file's order at
    // the end, whichever table an entry is in.
    let mut out: Vec<(usize, Declaration)> = Vec::new();
    for entry in raw.never_fails {
        out.push(entries.never_fails(entry)?);
    }
    for entry in raw.same_object {
        out.push(entries.same_object(entry)?);
    }
    let stored = raw.empty_when_stored.into_iter().map(|entry| {
        let span = entry.span();
        let e = entry.into_inner();
        FieldEntry {
            span,
            ty: e.ty,
            field: e.field,
            because: e.because,
            functions: e.stored_by,
            key: "stored_by",
            table: Table::EmptyWhenStored,
        }
    });
    let torn = raw.empty_at_teardown.into_iter().map(|entry| {
        let span = entry.span();
        let e = entry.into_inner();
        FieldEntry {
            span,
            ty: e.ty,
            field: e.field,
            because: e.because,
            functions: e.emptied_by,
            key: "emptied_by",
            table: Table::EmptyAtTeardown,
        }
    });
    // The two tables about references taken out of a field share a shape.
    let taken = |entries: Vec<Spanned<RawKept>>, table: Table| {
        entries.into_iter().map(move |entry| {
            let span = entry.span();
            let e = entry.into_inner();
            FieldEntry {
                span,
                ty: e.ty,
                field: e.field,
                because: e.because,
                functions: e.taken_by,
                key: "taken_by",
                table,
            }
        })
    };
    let kept = taken(raw.kept_alive, Table::KeptAlive);
    let last = taken(raw.holds_last, Table::HoldsLast);
    let mut fields: Vec<FieldEntry> = torn.chain(stored).chain(kept).chain(last).collect();
    // In the file's order, whichever table an entry is in.
    fields.sort_by_key(|e| e.span.start);
    for entry in fields {
        out.push(entries.about_field(entry)?);
    }
    out.sort_by_key(|(start, _)| *start);
    Ok(out.into_iter().map(|(_, d)| d).collect())
}

/// An entry of one of the four tables about a struct's field.
struct FieldEntry {
    span: Range<usize>,
    ty: Spanned<String>,
    field: Spanned<String>,
    because: Spanned<String>,
    /// The functions it covers, under `key`.
    functions: Vec<Spanned<String>>,
    key: &'static str,
    table: Table,
}

/// Checks the entries of the file `path` whose text is `text`, each made
/// a declaration with the offset of its entry.
struct Entries<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Entries<'_> {
    fn err(
        &self,
        span: Range<usize>,
        message: String,
        label: &str,
        help: Option<String>,
    ) -> Box<FileError> {
        Box::new(FileError::at(
            self.path,
            self.text,
            Some(span),
            message,
            label,
            help,
        ))
    }

    /// Every declaration is trusted: its reason is what an audit reads.
    fn check_because(&self, because: &Spanned<String>) -> Result<(), Box<FileError>> {
        if because.get_ref().trim().is_empty() {
            return Err(self.err(
                because.span(),
                "`because` is empty".to_string(),
                "say what upholds the invariant",
                Some("every invariant is trusted; `because` cites the code that upholds it, for whoever audits it".to_string()),
            ));
        }
        Ok(())
    }

    /// A declaration of the entry at `span`, with its reason.
    fn declared(
        &self,
        invariant: Invariant,
        span: Range<usize>,
        because: Spanned<String>,
    ) -> (usize, Declaration) {
        let (line, col) = line_col(self.text, span.start);
        (
            span.start,
            Declaration {
                invariant,
                origin: Origin::File {
                    path: PathBuf::from(self.path),
                    line,
                    col,
                    span,
                },
                because: Some(because.into_inner().trim().to_string()),
            },
        )
    }

    /// The function path `value` of `key`, trimmed.
    fn function_path(&self, key: &str, value: &Spanned<String>) -> Result<String, Box<FileError>> {
        let text = value.get_ref().trim();
        // Whitespace only inside generic arguments (`Vec::<T, A>::push`).
        if text.is_empty() || (text.contains(char::is_whitespace) && !text.contains('<')) {
            return Err(self.err(
                value.span(),
                format!("`{}` is not a function path", value.get_ref()),
                "expected a path like `crate::module::function`",
                Some(format!(
                    "`{key}` names a function by its item path (`kanalyze dump --item` shows paths)"
                )),
            ));
        }
        Ok(text.to_string())
    }

    /// The argument path `value` of `key` (`self.to`, `arg1`).
    fn arg_path(
        &self,
        key: &str,
        value: &Spanned<String>,
    ) -> Result<crate::same_object::ArgPath, Box<FileError>> {
        crate::same_object::ArgPath::parse(value.get_ref()).ok_or_else(|| {
            self.err(
                value.span(),
                format!("`{}` is not an argument path", value.get_ref()),
                "expected `self` or `argN` (the argument at position N, from 0), then field names: `self`, `self.to`, `arg1.owner`",
                Some(format!(
                    "`{key}` names an object through the function's arguments, which survive renaming its locals"
                )),
            )
        })
    }

    /// A `[[never_fails]]` entry.
    fn never_fails(
        &self,
        entry: Spanned<RawNeverFails>,
    ) -> Result<(usize, Declaration), Box<FileError>> {
        let span = entry.span();
        let e = entry.into_inner();
        let function = self.function_path("function", &e.function)?;
        let callee = self.function_path("callee", &e.callee)?;
        self.check_because(&e.because)?;
        Ok(self.declared(Invariant::NeverFails { function, callee }, span, e.because))
    }

    /// A `[[same_object]]` entry.
    fn same_object(
        &self,
        entry: Spanned<RawSameObject>,
    ) -> Result<(usize, Declaration), Box<FileError>> {
        let span = entry.span();
        let e = entry.into_inner();
        let function = self.function_path("function", &e.function)?;
        if let Some(local) = &e.local {
            return Err(self.err(
                local.span(),
                format!("`local = \"{}\"` names a local variable", local.get_ref()),
                "remove `local`: the declaration covers every value of `type` the function drops",
                Some(
                    "a declaration keyed on a local's name stops matching when the local is renamed or the code moves into a helper; `type`, `field` and the argument path `same_as` survive both"
                        .to_string(),
                ),
            ));
        }
        let same_as = self.arg_path("same_as", &e.same_as)?;
        let ty = e.ty.get_ref().trim();
        if ty.is_empty() || ty.contains(['<', '>', ' ']) {
            return Err(self.err(
                e.ty.span(),
                format!("`{}` is not a struct path", e.ty.get_ref()),
                "expected a path like `crate::module::Struct`, without generic arguments",
                None,
            ));
        }
        // A field is a name, or a tuple struct's index (`0`).
        let field = e.field.get_ref().trim();
        if field.is_empty() || !field.chars().all(|c| c == '_' || c.is_alphanumeric()) {
            return Err(self.err(
                e.field.span(),
                format!("`{}` is not a field name", e.field.get_ref()),
                "expected one field of the struct, like `owner` (or `0` for a tuple struct)",
                None,
            ));
        }
        let field = field.to_string();
        self.check_because(&e.because)?;
        Ok(self.declared(
            Invariant::SameObject {
                function,
                ty: ty.to_string(),
                field,
                same_as,
            },
            span,
            e.because,
        ))
    }

    /// An entry of the tables about a struct's field.
    fn about_field(&self, entry: FieldEntry) -> Result<(usize, Declaration), Box<FileError>> {
        let FieldEntry {
            span,
            ty,
            field,
            because,
            functions,
            key,
            table,
        } = entry;
        let ty_text = ty.get_ref().trim();
        if ty_text.is_empty() || ty_text.contains('<') || ty_text.contains(char::is_whitespace) {
            return Err(self.err(
                ty.span(),
                format!("`{}` is not a struct path", ty.get_ref()),
                "expected a path like `crate::module::Struct`",
                Some("give the struct's canonical path without generic arguments; the invariant covers every instantiation".to_string()),
            ));
        }
        let field_text = field.get_ref().trim();
        if field_text.is_empty() || !field_text.chars().all(|c| c == '_' || c.is_alphanumeric()) {
            return Err(self.err(
                field.span(),
                format!("`{}` is not a field name", field.get_ref()),
                "expected one field name",
                Some("name a field of the struct itself; for a field of a nested struct, declare it on that struct".to_string()),
            ));
        }
        self.check_because(&because)?;
        let mut names = Vec::new();
        for f in &functions {
            if f.get_ref().trim().is_empty() {
                return Err(self.err(
                    f.span(),
                    format!("an empty function path in `{key}`"),
                    "expected a function path",
                    None,
                ));
            }
            names.push(f.get_ref().trim().to_string());
        }
        let (ty, field) = (ty_text.to_string(), field_text.to_string());
        Ok(self.declared(
            match table {
                Table::EmptyAtTeardown => Invariant::EmptyAtTeardown {
                    ty,
                    field,
                    emptied_by: names,
                },
                Table::EmptyWhenStored => Invariant::EmptyWhenStored {
                    ty,
                    field,
                    stored_by: names,
                },
                Table::KeptAlive => Invariant::KeptAlive {
                    ty,
                    field,
                    taken_by: names,
                },
                Table::HoldsLast => Invariant::HoldsLast {
                    ty,
                    field,
                    taken_by: names,
                },
            },
            span,
            because,
        ))
    }
}

/// 1-based line and column of byte `offset`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
