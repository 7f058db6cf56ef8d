//! `kanalyze check PATH... [--format text|json] [--spec FILE]...`

use std::io::{self, BufWriter, Write};

use findings::Severity;
use serde::Serialize;

use crate::analysis::{Analysed, analyse};
use crate::cli::{CheckArgs, Format};
use crate::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};

/// Exit status when an error-level finding was reported.
pub const EXIT_FINDINGS: u8 = 1;

/// Bumped when the JSON output changes incompatibly (docs/output.md).
pub const JSON_VERSION: u32 = 1;

/// How many unknown C functions the summary names.
const UNKNOWN_SHOWN: usize = 8;

pub fn run(args: &CheckArgs) -> u8 {
    let Some(analysed) = analyse(&args.paths, &args.analysis) else {
        return EXIT_BAD_INPUT;
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = match args.format {
        Format::Text => text(&analysed, args, &mut out),
        Format::Json => json(&analysed, &mut out),
    }
    .and_then(|()| out.flush());
    if super::output_failed(result) {
        return EXIT_FAILURE;
    }
    if analysed.errors() > 0 {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    }
}

fn text(a: &Analysed, args: &CheckArgs, out: &mut dyn Write) -> io::Result<()> {
    let mut sources = report::Sources::default();
    sources.roots = args.analysis.source_roots.clone();
    if let Ok(cwd) = std::env::current_dir() {
        sources.roots.push(cwd);
    }
    let findings = a.findings();
    for f in &findings {
        write!(out, "{}", report::render(&a.program, f, &mut sources))?;
    }
    let bodies = a.program.stats.bodies;
    let crates = a.program.crates.len();
    let mut line = format!(
        "kanalyze: {} in {crates} crate{} ({bodies} function bodies analysed)",
        report::summary_line(&findings.iter().map(|f| (*f).clone()).collect::<Vec<_>>()),
        if crates == 1 { "" } else { "s" }
    );
    let unknown = &a.preempt.unknown_foreign;
    if !unknown.is_empty() {
        let shown: Vec<&str> = unknown
            .iter()
            .take(UNKNOWN_SHOWN)
            .map(String::as_str)
            .collect();
        let more = unknown.len().saturating_sub(UNKNOWN_SHOWN);
        line.push_str(&format!(
            "; {} C function{} not in the spec, assumed to sleep: {}{}",
            unknown.len(),
            if unknown.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if more > 0 {
                format!(", … {more} more")
            } else {
                String::new()
            }
        ));
    }
    writeln!(out, "{line}")
}

#[derive(Serialize)]
struct JsonSummary {
    crates: usize,
    bodies: usize,
    errors: usize,
    warnings: usize,
    unknown_c_functions: Vec<String>,
    skipped_inputs: Vec<String>,
}

#[derive(Serialize)]
struct JsonReport {
    version: u32,
    findings: Vec<report::JsonFinding>,
    summary: JsonSummary,
}

fn json(a: &Analysed, out: &mut dyn Write) -> io::Result<()> {
    let findings = a.findings();
    let count = |s| findings.iter().filter(|f| f.severity == s).count();
    let doc = JsonReport {
        version: JSON_VERSION,
        findings: findings
            .iter()
            .map(|f| report::to_json(&a.program, f))
            .collect(),
        summary: JsonSummary {
            crates: a.program.crates.len(),
            bodies: a.program.stats.bodies,
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            unknown_c_functions: a.preempt.unknown_foreign.iter().cloned().collect(),
            skipped_inputs: a
                .load
                .skipped
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
        },
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
    writeln!(out)
}
