//! `kanalyze build-error PATH... [--format text|json] [--source-root DIR]...`:
//! the `rust_build_error` references left in object files, explained
//! (crates/build_error, docs/build-assert.md).

use std::io::{self, BufWriter, Write};

use build_error::render::{Sources, render_with_mir, summary_line};

use crate::cli::{BuildErrorArgs, Format};
use crate::diag::Diagnostic;
use crate::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};

/// Exit status when a reference was found.
pub const EXIT_FOUND: u8 = 1;

/// How many skipped inputs the warning names.
const SKIPPED_SHOWN: usize = 10;

pub fn run(args: &BuildErrorArgs) -> u8 {
    // The dumps first: a bad `--dumps` is a usage error, found before the
    // objects are read.
    let program = if args.dumps.is_empty() {
        None
    } else {
        match crate::input::load_program(&args.dumps) {
            Some((program, _)) => Some(program),
            None => return EXIT_BAD_INPUT,
        }
    };
    let scan = build_error::scan(&args.paths);
    let mir: Vec<Option<build_error::mir::MirNotes>> = match &program {
        Some(p) => scan
            .references
            .iter()
            .map(|r| build_error::mir::explain(p, r))
            .collect(),
        None => Vec::new(),
    };
    // Unreadable inputs first, on stderr: the result below is incomplete.
    for e in &scan.errors {
        Diagnostic::error(format!("`{}`: {}", e.name, e.message)).emit();
    }
    // What was passed over, and why: a run that read nothing usable must
    // not look like one that found nothing.
    if !scan.skipped.is_empty() {
        let mut d = Diagnostic::warning(format!(
            "{} input{} skipped",
            scan.skipped.len(),
            if scan.skipped.len() == 1 { "" } else { "s" }
        ));
        for (name, why) in scan.skipped.iter().take(SKIPPED_SHOWN) {
            d = d.note(format!("`{}`: {why}", crate::diag::clip(name)));
        }
        if scan.skipped.len() > SKIPPED_SHOWN {
            d = d.note(format!("… and {} more", scan.skipped.len() - SKIPPED_SHOWN));
        }
        d.emit();
    }
    let nothing = scan.objects == 0;
    if nothing {
        Diagnostic::error("no object with machine code was read: nothing usable was given")
            .help("pass the relocatable objects (`.o`), archives (`.a`, `.rlib`) or the object directory of the build that failed")
            .emit();
    }
    if args.format == Format::Sarif {
        Diagnostic::error("`build-error` writes text or JSON; SARIF is `check`'s format")
            .help("use `--format json`")
            .emit();
        return crate::EXIT_BAD_INPUT;
    }
    let mut sources = Sources::new(args.source_roots.clone());
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = match args.format {
        Format::Text => (|| {
            for (i, r) in scan.references.iter().enumerate() {
                let notes = mir.get(i).and_then(Option::as_ref);
                // A blank line between diagnostics, as rustc prints them.
                writeln!(out, "{}", render_with_mir(r, notes, &mut sources))?;
            }
            writeln!(out, "{}", summary_line(&scan))
        })(),
        Format::Json | Format::Sarif => {
            let doc = build_error::json::document(&scan, &mir, &sources);
            serde_json::to_writer_pretty(&mut out, &doc)
                .map_err(io::Error::other)
                .and_then(|()| writeln!(out))
        }
    }
    .and_then(|()| out.flush());
    if super::output_failed(result) {
        return EXIT_FAILURE;
    }
    // An unreadable input makes the run inconclusive, which must not read
    // as "no reference": it wins over the references found elsewhere; so
    // does a run that read no object at all.
    if !scan.errors.is_empty() || nothing {
        EXIT_BAD_INPUT
    } else if !scan.references.is_empty() {
        EXIT_FOUND
    } else {
        EXIT_OK
    }
}
