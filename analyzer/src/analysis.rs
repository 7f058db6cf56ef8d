//! Everything `check` and `summary` share: the linked program, the
//! annotations, the spec, and the analyses' results.

use std::collections::HashMap;

use annotations::ItemAnnotations;
use findings::{Finding, Loc, Note, Severity};
use program::Program;

use crate::cli::AnalysisArgs;
use crate::diag::Diagnostic;
use crate::input::{self, LoadSummary};

pub struct Analysed {
    pub program: Program,
    pub load: LoadSummary,
    pub annotations: HashMap<String, ItemAnnotations>,
    pub spec: spec::Spec,
    pub preempt: preempt::Output,
    /// Malformed annotations, as findings.
    pub annotation_findings: Vec<Finding>,
}

/// Loads, links and analyses; `None` (after reporting why) when the input
/// is unusable or a spec file is bad.
pub fn analyse(paths: &[std::path::PathBuf], args: &AnalysisArgs) -> Option<Analysed> {
    let mut spec = spec::Spec::builtin_kernel();
    for path in &args.specs {
        match spec::Spec::load(path) {
            Ok(extra) => spec.extend(extra),
            Err(e) => {
                Diagnostic::error(format!("invalid spec file: {e}"))
                    .help("the format is described in crates/spec/README.md; `kanalyze` refuses to guess what a broken spec meant")
                    .emit();
                return None;
            }
        }
    }
    let (program, load) = input::load_program(paths)?;
    let (annotations, errors) = annotations::collect(
        program
            .crates
            .iter()
            .enumerate()
            .map(|(i, c)| (i as u32, c.dump.items.as_slice())),
    );
    let annotation_findings = errors
        .into_iter()
        .map(|(krate, e)| {
            let severity = match e.level {
                annotations::Level::Error => Severity::Error,
                annotations::Level::Warning => Severity::Warning,
            };
            let mut f = Finding::new("bad-annotation", severity, e.message.clone())
                .at(Loc {
                    krate,
                    span: e.span,
                })
                .subject(e.message.clone());
            if let Some(n) = &e.note {
                f = f.note(Note::text(n.clone()));
            }
            if let Some(h) = &e.help {
                f = f.note(Note::help(h.clone()));
            }
            f
        })
        .collect();
    let preempt = preempt::run(&preempt::Input {
        program: &program,
        annotations: &annotations,
        spec: &spec,
    });
    Some(Analysed {
        program,
        load,
        annotations,
        spec,
        preempt,
        annotation_findings,
    })
}

impl Analysed {
    /// Every finding, in a deterministic order (file, line, column, kind).
    ///
    /// Files are ranked before they are compared so that the order does not
    /// depend on where the checkout, the cargo registry or the toolchain
    /// happen to live: the user's own code first, then dependencies from the
    /// registry, then the standard library.
    pub fn findings(&self) -> Vec<&Finding> {
        let mut all: Vec<&Finding> = self
            .annotation_findings
            .iter()
            .chain(&self.preempt.findings)
            .collect();
        let key = |f: &Finding| {
            let (file, line, col) = match f.primary {
                Some(l) => (
                    self.program
                        .crates
                        .get(l.krate as usize)
                        .and_then(|c| c.dump.file(l.span.file))
                        .unwrap_or(""),
                    l.span.lo_line,
                    l.span.lo_col,
                ),
                None => ("", 0, 0),
            };
            (
                file_rank(file),
                file.to_string(),
                line,
                col,
                f.kind,
                f.message.clone(),
                f.subject.clone(),
            )
        };
        all.sort_by_cached_key(|f| key(f));
        all.dedup_by(|a, b| key(a) == key(b));
        all
    }

    pub fn errors(&self) -> usize {
        self.findings()
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count()
    }
}

/// Where a source file comes from, for ordering only.
fn file_rank(path: &str) -> u8 {
    if path.contains("/lib/rustlib/src/rust/") || path.starts_with("/rustc/") {
        2
    } else if path.contains("/.cargo/registry/") || path.contains("/.cargo/git/") {
        1
    } else {
        0
    }
}
