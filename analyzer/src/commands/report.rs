//! `kanalyze report DIR... --html OUT/`: the findings of `check` as one
//! self-contained HTML page for offline triage (docs/output.md, "HTML
//! report"): filters, snippets, the chains drawn, the locks held, and the
//! summaries of the functions on the chains (`summary::describe`, so the
//! page says what `kanalyze summary` says).

use std::collections::HashSet;
use std::path::Path;

use report::html::{Entry, Page, Triaged, Verdict};

use crate::cli::ReportArgs;
use crate::diag::Diagnostic;
use crate::pipeline::analyse;
use crate::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};

pub fn run(args: &ReportArgs) -> u8 {
    let mut args = args.clone();
    let config = match crate::config::resolve(&mut args.analysis) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // The flag wins over the configuration file's baseline, as in `check`.
    let baseline_path = args
        .baseline
        .clone()
        .or_else(|| config.baseline.as_ref().map(|(p, _)| p.clone()));
    // Read before the analysis: a bad baseline is a usage error, found fast.
    let baseline = match &baseline_path {
        Some(p) => match baseline_ids(p) {
            Ok(ids) => Some(ids),
            Err(d) => {
                d.emit();
                return EXIT_BAD_INPUT;
            }
        },
        None => None,
    };
    // The triage file likewise (flag, else configuration file); a bad one
    // is a usage error, with its place in the file.
    let triage_path = args
        .triage
        .clone()
        .or_else(|| config.triage.as_ref().map(|(p, _)| p.clone()));
    let triage = match &triage_path {
        Some(p) => match crate::triage::load(p) {
            Ok(t) => Some(t),
            Err(e) => {
                crate::diag::emit_miette(e.as_ref());
                return EXIT_BAD_INPUT;
            }
        },
        None => None,
    };
    let Some(a) = analyse(&args.paths, &args.analysis) else {
        return EXIT_BAD_INPUT;
    };
    let findings = a.findings();
    let entries: Vec<Entry<'_>> = findings
        .iter()
        .map(|f| {
            let id = report::stable_id(&a.program, f);
            Entry {
                finding: f,
                known: baseline.as_ref().is_some_and(|ids| ids.contains(&id)),
                triage: triage.as_ref().map(|t| triaged(t, &id, f)),
            }
        })
        .collect();
    let known = entries.iter().filter(|e| e.known).count();
    let judged = entries
        .iter()
        .filter(|e| !matches!(e.triage, None | Some(Triaged::Untriaged)))
        .count();

    let mut sources = report::Sources::default();
    sources.roots = args.analysis.source_roots.clone();
    if let Ok(cwd) = std::env::current_dir() {
        sources.roots.push(cwd);
    }
    let inputs: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
    let crates = a.program.crates.len();
    let mut facts = vec![
        (
            if crates == 1 { "crate" } else { "crates" }.to_string(),
            crates.to_string(),
        ),
        (
            "function bodies analysed".to_string(),
            a.program.stats.bodies.to_string(),
        ),
    ];
    facts.push(("profile".to_string(), a.profile.0.as_str().to_string()));
    // Which lock APIs the result covers: a clean page over a program whose
    // locks kanalyze does not know proves little, and says so.
    if a.spec.rust_lock_entries().next().is_some() {
        let recognised = crate::lock_apis::recognised(&a.program, &a.spec);
        facts.push((
            "lock APIs recognised".to_string(),
            if recognised.locks.is_empty() {
                "none the spec describes (only locks the program's annotations or --spec files describe are checked)".to_string()
            } else {
                recognised.locks.join(", ")
            },
        ));
        if !recognised.blocking.is_empty() {
            facts.push((
                "blocking calls recognised".to_string(),
                recognised.blocking.join(", "),
            ));
        }
        if !recognised.sections.is_empty() {
            facts.push((
                "critical sections recognised".to_string(),
                recognised.sections.join(", "),
            ));
        }
    }
    if baseline.is_some() {
        facts.push(("known in the baseline".to_string(), known.to_string()));
    }
    if triage.is_some() {
        facts.push(("triaged".to_string(), judged.to_string()));
    }
    if !a.load.skipped.is_empty() {
        facts.push((
            "inputs skipped (the result is partial)".to_string(),
            a.load.skipped.len().to_string(),
        ));
    }
    let missing: Vec<&str> = a
        .load
        .missing
        .iter()
        .filter(|m| m.functions_called > 0)
        .map(|m| m.name.as_str())
        .collect();
    if !missing.is_empty() {
        facts.push((
            "crates called into without a dump (the result is partial)".to_string(),
            missing.join(", "),
        ));
    }
    facts.push((
        "kanalyze".to_string(),
        env!("CARGO_PKG_VERSION").to_string(),
    ));
    let page = Page {
        title: format!("kanalyze report: {}", inputs.join(" ")),
        entries,
        baseline: baseline.is_some(),
        triage: triage.is_some(),
        facts,
    };
    let html = report::html::page(&a.program, &page, &mut sources, &mut |f| {
        super::summary::describe(&a, f)
    });

    let out = args.html.join("index.html");
    let written =
        std::fs::create_dir_all(&args.html).and_then(|()| safe_write::write(&out, html.as_bytes()));
    if let Err(e) = written {
        Diagnostic::error(format!("cannot write `{}`: {e}", out.display())).emit();
        return EXIT_FAILURE;
    }
    eprintln!(
        "kanalyze: wrote {} ({} findings{}{}, {} KiB)",
        out.display(),
        page.entries.len(),
        if page.baseline {
            format!(", {known} known")
        } else {
            String::new()
        },
        if page.triage {
            format!(", {judged} triaged")
        } else {
            String::new()
        },
        html.len().div_ceil(1024)
    );
    // Like `check`: a report over an incomplete program is not a result
    // a batch may take for complete.
    if !a.load.partial() || args.allow_partial {
        EXIT_OK
    } else {
        super::check::EXIT_PARTIAL
    }
}

/// What the triage file says of the finding with stable id `id`.
pub(crate) fn triaged(triage: &crate::triage::Triage, id: &str, f: &findings::Finding) -> Triaged {
    let Some(entry) = triage.entries.get(id) else {
        return Triaged::Untriaged;
    };
    let verdict = Verdict {
        verdict: entry.verdict.as_str().to_string(),
        judged: entry.judged(),
        reference: entry.reference.clone(),
    };
    if report::text_fingerprint(f) == entry.text {
        Triaged::Judged(verdict)
    } else {
        Triaged::Reexamine(verdict)
    }
}

/// The stable ids of a previous run's `--format json` output, read as
/// `check` reads baselines (every malformation a usage error naming the
/// file).
fn baseline_ids(path: &Path) -> Result<HashSet<String>, Diagnostic> {
    super::check::Baseline::load(path).map(|b| b.ids)
}
