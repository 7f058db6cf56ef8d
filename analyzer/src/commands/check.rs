//! `kanalyze check PATH... [--format text|json] [--baseline FILE] [--spec FILE]...
//! [--deny|--warn|--allow KIND]...`

use std::io::{self, BufWriter, Write};

use findings::Severity;
use serde::Serialize;

use crate::cli::{CheckArgs, Format};
use crate::config;
use crate::diag::Diagnostic;
use crate::pipeline::{Analysed, analyse};
use crate::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};

/// Exit status when an error-level finding was reported.
pub const EXIT_FINDINGS: u8 = 1;

/// Bumped when the JSON output changes incompatibly (docs/output.md): 2
/// made `summary.skipped_inputs` objects with a reason; 3 lists the
/// findings a triage verdict hides, each finding with its `triage`.
pub const JSON_VERSION: u32 = 3;

/// JSON output versions a baseline may have: the findings' ids (what a
/// baseline reads) have not changed since version 1.
const BASELINE_VERSIONS: &[u64] = &[1, 2, 3];

/// Exit status when inputs were skipped and `--allow-partial` was not given.
pub const EXIT_PARTIAL: u8 = 3;

/// Exit status when a declaration was left out because it matches nothing
/// or the program contradicts it (the code moved on): a CI job can tell it
/// from a finding and from a bad flag.
pub const EXIT_STALE_DECLARATION: u8 = 4;

/// How many unknown C functions the summary names.
const UNKNOWN_SHOWN: usize = 8;

/// Bodies analysed imprecisely named in the summary line, the worst first.
const IMPRECISE_SHOWN: usize = 3;

pub fn run(args: &CheckArgs) -> u8 {
    let mut args = args.clone();
    let config = match config::resolve(&mut args.analysis) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (format, format_origin) = match (args.format, &config.format) {
        (Some(f), _) => (f, "--format".to_string()),
        (None, Some((f, o))) => (*f, o.0.clone()),
        (None, None) => (Format::Text, "default".to_string()),
    };
    // JSON and SARIF runs are read by programs: no bar, even on a terminal.
    if format != Format::Text {
        args.analysis.no_progress = true;
        args.analysis.progress_now = false;
    }
    let baseline_path = match (&args.baseline, &config.baseline) {
        (Some(p), _) => Some((p.clone(), "--baseline".to_string())),
        (None, Some((p, o))) => Some((p.clone(), o.0.clone())),
        (None, None) => None,
    };
    let triage_path = match (&args.triage, &config.triage) {
        (Some(p), _) => Some((p.clone(), "--triage".to_string())),
        (None, Some((p, o))) => Some((p.clone(), o.0.clone())),
        (None, None) => None,
    };
    if args.print_config {
        let stdout = io::stdout();
        let mut out = stdout.lock();
        let result = config::print(
            &config,
            &args.analysis,
            format,
            &format_origin,
            baseline_path
                .as_ref()
                .map(|(p, o)| (p.as_path(), o.as_str())),
            triage_path.as_ref().map(|(p, o)| (p.as_path(), o.as_str())),
            &mut out,
        );
        return if super::output_failed(result) {
            EXIT_FAILURE
        } else {
            EXIT_OK
        };
    }
    let allow_partial = args.allow_partial || config.allow_partial;
    let args = &args;
    // Read before the analysis: a bad baseline is a usage error, found fast.
    let baseline = match baseline_path.as_ref().map(|(p, _)| p) {
        Some(path) => match Baseline::load(path) {
            Ok(b) => Some(b),
            Err(d) => {
                d.emit();
                return EXIT_BAD_INPUT;
            }
        },
        None => None,
    };
    let triage = match triage_path.as_ref().map(|(p, _)| p) {
        Some(path) => match crate::triage::load(path) {
            Ok(t) => Some(t),
            Err(e) => {
                crate::diag::emit_miette(e.as_ref());
                return EXIT_BAD_INPUT;
            }
        },
        None => None,
    };
    let Some(mut analysed) = analyse(&args.paths, &args.analysis) else {
        return EXIT_BAD_INPUT;
    };
    analysed.files_used = crate::pipeline::files_used(
        &config,
        &args.analysis,
        triage_path.as_ref().map(|(p, o)| (p.as_path(), o.as_str())),
        baseline_path
            .as_ref()
            .map(|(p, o)| (p.as_path(), o.as_str())),
    );
    if let (Some(b), Some((path, _))) = (&baseline, &baseline_path) {
        let unmatched = b.foreign_entries(&analysed.program, path);
        analysed.unmatched.extend(unmatched);
    }
    let t = crate::timings::mark();
    let all = analysed.findings();
    let (findings, known_list): (Vec<&findings::Finding>, Vec<&findings::Finding>) = match &baseline
    {
        Some(b) => all
            .into_iter()
            .partition(|f| !b.ids.contains(&report::stable_id(&analysed.program, f))),
        None => (all, Vec::new()),
    };
    let known = known_list.len();
    let mut stale = Vec::new();
    let (findings, triaged, suppressed) = match (&triage, &triage_path) {
        (Some(t), Some((path, _))) => {
            let (f, o, s) = apply_triage(&analysed.program, findings, t);
            stale = stale_entries(t, &o.stale, path, baseline.is_some());
            (f, Some(o), s)
        }
        _ => (Judged::none(findings), None, Vec::new()),
    };
    let shown = Shown {
        findings,
        known,
        triaged,
        baseline: baseline.is_some(),
        known_list: known_list.into_iter().cloned().collect(),
        suppressed,
    };
    analysed.unmatched.extend(stale);
    crate::timings::record("findings", t);
    let t = crate::timings::mark();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = match format {
        Format::Text => text(&analysed, &shown, args, &mut out),
        Format::Json => json(&analysed, &shown, &mut out),
        Format::Sarif => sarif(&analysed, &shown, &mut out),
    }
    .and_then(|()| out.flush());
    crate::timings::record("output", t);
    let code = if super::output_failed(result) {
        EXIT_FAILURE
    } else if analysed.declarations_left_out > 0 {
        // A declaration that no longer names what it did is a bad input:
        // the findings it covered are shown, and the run cannot pass.
        EXIT_STALE_DECLARATION
    } else if analysed.load.partial() && !allow_partial {
        // A run over an incomplete program cannot pass: what the skipped
        // or missing crates would have shown is missing.
        EXIT_PARTIAL
    } else if shown
        .findings
        .iter()
        .any(|f| f.finding.severity == Severity::Error)
    {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    };
    // The process ends here: freeing the linked program and the summaries
    // one allocation at a time is serial work with no result (about a
    // sixth of the kernel run's wall time); the OS takes the memory back
    // at exit.
    std::mem::forget(shown);
    std::mem::forget(analysed);
    code
}

/// A finding to report, and the triage entry that judged it.
pub(crate) struct Judged {
    pub(crate) finding: findings::Finding,
    pub(crate) triage: Option<Verdict>,
}

impl Judged {
    /// Findings no triage entry judged (a run without a triage file).
    pub(crate) fn none(findings: Vec<&findings::Finding>) -> Vec<Judged> {
        findings
            .into_iter()
            .map(|f| Judged {
                finding: f.clone(),
                triage: None,
            })
            .collect()
    }
}

/// A triage entry that matched a finding of the run.
#[derive(Clone)]
pub(crate) struct Verdict {
    pub(crate) entry: crate::triage::Entry,
    /// What the finding says now differs from what was judged.
    reexamine: bool,
    /// The verdict hides the finding (`not-a-bug`, `intended`,
    /// `wont-fix`, unchanged since judged).
    suppressed: bool,
}

impl Verdict {
    /// The note text output and SARIF show for it.
    fn note(&self, now: &str) -> String {
        let judged = self.entry.judged();
        if self.reexamine {
            format!(
                "{judged}; but what the finding says changed since ({} then, {now} now): re-examine it",
                self.entry.text
            )
        } else {
            judged
        }
    }

    pub(crate) fn json(&self) -> report::JsonTriage {
        report::JsonTriage {
            verdict: self.entry.verdict.as_str(),
            reason: self.entry.reason.clone(),
            by: self.entry.by.clone(),
            date: self.entry.date.clone(),
            reference: self.entry.reference.clone(),
            judged_text: self.entry.text.clone(),
            reexamine: self.reexamine,
            suppressed: self.suppressed,
        }
    }
}

impl Judged {
    /// The finding with its verdict as a note (text and SARIF).
    pub(crate) fn noted(&self) -> findings::Finding {
        let mut f = self.finding.clone();
        if let Some(v) = &self.triage {
            f.notes.push(findings::Note::text(
                v.note(&report::text_fingerprint(&self.finding)),
            ));
        }
        f
    }
}

/// The findings to report, after the baseline and the triage.
struct Shown {
    findings: Vec<Judged>,
    /// Findings left out because the baseline has them.
    known: usize,
    triaged: Option<crate::triage::Outcome>,
    /// A baseline was given (SARIF marks results new or unchanged).
    baseline: bool,
    /// The findings the baseline has (only SARIF lists them, as unchanged).
    known_list: Vec<findings::Finding>,
    /// The findings a triage verdict hides (SARIF lists them as
    /// suppressed, JSON with their `triage`).
    suppressed: Vec<Judged>,
}

/// The triage's verdicts applied: judged findings whose text is unchanged
/// are hidden (`not-a-bug`, `intended`, `wont-fix`) or kept with their verdict
/// (`bug`); changed ones are kept, to be re-examined.
pub(crate) fn apply_triage(
    program: &program::Program,
    findings: Vec<&findings::Finding>,
    triage: &crate::triage::Triage,
) -> (Vec<Judged>, crate::triage::Outcome, Vec<Judged>) {
    let mut suppressed = Vec::new();
    let mut outcome = crate::triage::Outcome::default();
    let mut matched = std::collections::HashSet::new();
    let mut kept = Vec::new();
    for f in findings {
        let id = report::stable_id(program, f);
        let Some(entry) = triage.entries.get(&id) else {
            kept.push(Judged {
                finding: f.clone(),
                triage: None,
            });
            continue;
        };
        matched.insert(id);
        let reexamine = report::text_fingerprint(f) != entry.text;
        let suppressed_now = !reexamine && entry.verdict.hides();
        let judged = Judged {
            finding: f.clone(),
            triage: Some(Verdict {
                entry: entry.clone(),
                reexamine,
                suppressed: suppressed_now,
            }),
        };
        if reexamine {
            outcome.reexamine += 1;
            kept.push(judged);
        } else if suppressed_now {
            outcome.hidden += 1;
            suppressed.push(judged);
        } else {
            outcome.bugs += 1;
            kept.push(judged);
        }
    }
    let mut stale: Vec<String> = triage
        .entries
        .keys()
        .filter(|id| !matched.contains(*id))
        .cloned()
        .collect();
    stale.sort();
    outcome.stale = stale;
    (kept, outcome, suppressed)
}

/// The triage entries that match no finding of the run, each a warning
/// naming it. With a baseline, a judged finding the baseline has is not
/// shown and so not matched: the entries are then only counted.
fn stale_entries(
    t: &crate::triage::Triage,
    stale: &[String],
    path: &std::path::Path,
    baselined: bool,
) -> Vec<crate::pipeline::Unmatched> {
    if stale.is_empty() || baselined {
        return Vec::new();
    }
    let shown: Vec<String> = stale
        .iter()
        .take(5)
        .map(|id| {
            let at = t.entries.get(id).map_or(0, |e| e.line);
            format!("`{id}` ({}:{at})", path.display())
        })
        .collect();
    Diagnostic::warning(format!(
        "{} triage entr{} of `{}` match{} no finding of this run: {}{}",
        stale.len(),
        if stale.len() == 1 { "y" } else { "ies" },
        path.display(),
        if stale.len() == 1 { "es" } else { "" },
        shown.join(", "),
        if stale.len() > 5 {
            format!(", … {} more", stale.len() - 5)
        } else {
            String::new()
        }
    ))
    .note("the finding was fixed, its function renamed, or the entry is of another program or other settings (`--spec`, `--invariants`, levels)")
    .help("remove the entries of fixed findings from the triage file")
    .emit();
    stale
        .iter()
        .map(|id| crate::pipeline::Unmatched {
            kind: "triage".to_string(),
            entry: id.clone(),
            at: format!(
                "{}:{}",
                path.display(),
                t.entries.get(id).map_or(0, |e| e.line)
            ),
        })
        .collect()
}

/// The stable ids of a previous run's findings, with the function each is
/// in.
pub(crate) struct Baseline {
    pub(crate) ids: std::collections::HashSet<String>,
    /// `(id, function)` of every finding that names its function.
    functions: Vec<(String, String)>,
}

impl Baseline {
    pub(crate) fn load(path: &std::path::Path) -> Result<Baseline, Diagnostic> {
        let shown = path.display();
        let text = crate::user_file::read_text(path)
            .map_err(|e| Diagnostic::error(format!("cannot read the baseline `{shown}`: {e}")))?;
        let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            Diagnostic::error(format!("the baseline `{shown}` is not JSON: {e}"))
                .help("a baseline is the output of `kanalyze check --format json`")
        })?;
        match doc.get("version").and_then(serde_json::Value::as_u64) {
            Some(v) if BASELINE_VERSIONS.contains(&v) => {}
            Some(v) => {
                return Err(Diagnostic::error(format!(
                    "the baseline `{shown}` is JSON output version {v}; this kanalyze writes version {JSON_VERSION} and reads baselines of versions 1, 2 and 3"
                ))
                .help("regenerate it with this kanalyze: `kanalyze check --format json DIR > FILE`"));
            }
            None => {
                return Err(Diagnostic::error(format!(
                    "the baseline `{shown}` has no `version`: it is not `kanalyze check --format json` output"
                )));
            }
        }
        let Some(list) = doc.get("findings").and_then(serde_json::Value::as_array) else {
            return Err(Diagnostic::error(format!(
                "the baseline `{shown}` has no `findings` array"
            )));
        };
        let mut ids = std::collections::HashSet::new();
        let mut functions = Vec::new();
        for (i, f) in list.iter().enumerate() {
            let Some(id) = f.get("id").and_then(serde_json::Value::as_str) else {
                return Err(Diagnostic::error(format!(
                    "finding {i} of the baseline `{shown}` has no string `id`"
                )));
            };
            ids.insert(id.to_string());
            if let Some(function) = f.get("function").and_then(serde_json::Value::as_str) {
                functions.push((id.to_string(), function.to_string()));
            }
        }
        Ok(Baseline { ids, functions })
    }

    /// The baseline's findings in functions this program does not have
    /// (a baseline of another program, or of code since removed), as a
    /// warning naming them.
    fn foreign_entries(
        &self,
        program: &program::Program,
        path: &std::path::Path,
    ) -> Vec<crate::pipeline::Unmatched> {
        let names: std::collections::HashSet<&str> =
            program.functions.iter().map(|f| f.name.as_str()).collect();
        let foreign: Vec<&(String, String)> = self
            .functions
            .iter()
            .filter(|(_, f)| !names.contains(f.as_str()))
            .collect();
        if foreign.is_empty() {
            return Vec::new();
        }
        let shown: Vec<String> = foreign
            .iter()
            .take(5)
            .map(|(id, f)| format!("`{id}` (in `{}`)", crate::diag::clip(f)))
            .collect();
        let all = foreign.len() == self.functions.len();
        let mut d = Diagnostic::warning(format!(
            "{} of the {} findings of the baseline `{}` are in functions this program does not have: {}{}",
            foreign.len(),
            self.functions.len(),
            path.display(),
            shown.join(", "),
            if foreign.len() > 5 {
                format!(", … {} more", foreign.len() - 5)
            } else {
                String::new()
            }
        ));
        d = if all {
            d.note("none of its findings is in a function of this program: is it the baseline of another program?")
        } else {
            d.note("their functions were removed or renamed since the baseline was written")
        };
        d.emit();
        foreign
            .iter()
            .map(|(id, f)| crate::pipeline::Unmatched {
                kind: "baseline".to_string(),
                entry: id.clone(),
                at: format!("{} (in `{}`)", path.display(), crate::diag::clip(f)),
            })
            .collect()
    }
}

fn text(a: &Analysed, shown: &Shown, args: &CheckArgs, out: &mut dyn Write) -> io::Result<()> {
    let mut sources = report::Sources::default();
    sources.roots = args.analysis.source_roots.clone();
    if let Ok(cwd) = std::env::current_dir() {
        sources.roots.push(cwd);
    }
    let findings: Vec<findings::Finding> = shown.findings.iter().map(Judged::noted).collect();
    for f in &findings {
        write!(out, "{}", report::render(&a.program, f, &mut sources))?;
    }
    // An audited run names what each declaration did, one line each, so
    // that a reader of the log need not match the summary's numbers to
    // the file's order.
    if a.removed_by_invariants.is_some() {
        write!(out, "{}", audit_text(a))?;
    }
    let bodies = a.program.stats.bodies;
    let crates = a.program.crates.len();
    let mut line = format!(
        "kanalyze: {} in {crates} crate{} ({bodies} function bodies analysed)",
        report::summary_line(&findings),
        if crates == 1 { "" } else { "s" }
    );
    if shown.known > 0 {
        line.push_str(&format!(
            "; {} known finding{} in the baseline not shown",
            shown.known,
            if shown.known == 1 { "" } else { "s" }
        ));
    }
    if let Some(t) = &shown.triaged {
        line.push_str(&triage_text(t));
    }
    if !a.invariants.is_empty() {
        line.push_str(&invariants_text(a));
    }
    let upstream = a.upstream_hidden();
    if upstream > 0 {
        line.push_str(&format!(
            "; {upstream} finding{} entirely in upstream code (the standard library, registry crates) not shown (--include-upstream)",
            if upstream == 1 { "" } else { "s" }
        ));
    }
    let unknown = &a.preempt.unknown_foreign;
    if !unknown.is_empty() {
        let shown: Vec<&str> = unknown
            .iter()
            .take(UNKNOWN_SHOWN)
            .map(String::as_str)
            .collect();
        let more = unknown.len().saturating_sub(UNKNOWN_SHOWN);
        line.push_str(&format!(
            "; {} C function{} not in the spec, {}: {}{}",
            unknown.len(),
            if unknown.len() == 1 { "" } else { "s" },
            match a.spec.unknown {
                spec::Unknown::MaySleep => "assumed to sleep".to_string(),
                spec::Unknown::NoConstraint => format!(
                    "taken to constrain nothing ({} profile)",
                    a.profile.0.as_str()
                ),
            },
            shown.join(", "),
            if more > 0 {
                format!(", … {more} more")
            } else {
                String::new()
            }
        ));
    }
    if let Some(text) = imprecise_text(a) {
        line.push_str(&text);
    }
    // What the run read and left out, before the summary line (the last
    // line, but for the partial result's).
    let hosts = &a.load.host_crates;
    if !hosts.is_empty() {
        writeln!(
            out,
            "kanalyze: {} host crate{} of the build left out (built for another target than the program, so no function of it can call them): {}",
            hosts.len(),
            if hosts.len() == 1 { "" } else { "s" },
            hosts
                .iter()
                .map(program::HostCrate::describe)
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    }
    if let Some(used) = crate::pipeline::files_used_text(&a.files_used) {
        writeln!(out, "kanalyze: {used}")?;
    }
    let recognised = crate::lock_apis::recognised(&a.program, &a.spec);
    if let Some(apis) = crate::lock_apis::text(a.profile.0.as_str(), &a.spec, &recognised) {
        writeln!(out, "kanalyze: {apis}")?;
    }
    writeln!(out, "{line}")?;
    if a.declarations_left_out > 0 {
        let n = a.declarations_left_out;
        writeln!(
            out,
            "kanalyze: {n} declaration{} left out (matching nothing, or contradicted by the program; see the errors above): the findings {} covered are shown",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "they" },
        )?;
    }
    // The last line says when the result is partial: a nightly batch that
    // keeps only the tail of the log must see it.
    let skipped = &a.load.skipped;
    let missing: Vec<&crate::input::MissingCrate> = a
        .load
        .missing
        .iter()
        .filter(|m| m.functions_called > 0)
        .collect();
    if a.load.partial() {
        let mut named: Vec<String> = skipped
            .iter()
            .map(|s| format!("`{}` ({})", s.path.display(), s.reason))
            .chain(missing.iter().map(|m| {
                format!(
                    "crate `{}` (its dump is missing: {}; {} of its functions called)",
                    m.name,
                    m.needed_by_text(),
                    m.functions_called
                )
            }))
            .collect();
        let total = named.len();
        let more = total.saturating_sub(3);
        named.truncate(3);
        writeln!(
            out,
            "kanalyze: partial result: {total} input{} could not be used: {}{}",
            if total == 1 { "" } else { "s" },
            named.join(", "),
            if more > 0 {
                format!(", … {more} more")
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

/// "; 3 bodies analysed imprecisely: `a::f` (paths over 8), `b::g`
/// (fixed-point rounds over their limit), … 1 more": the bodies where a
/// bound of the analysis widened what it computed, the worst first.
fn imprecise_text(a: &Analysed) -> Option<String> {
    let imprecise = &a.preempt.imprecise;
    if imprecise.is_empty() {
        return None;
    }
    let shown: Vec<String> = imprecise
        .iter()
        .take(IMPRECISE_SHOWN)
        .map(|(f, hits)| {
            let why: Vec<&str> = hits.bounds().map(analysis::Bound::describe).collect();
            format!(
                "`{}` ({})",
                crate::diag::clip(&a.program.function(*f).name),
                why.join(", ")
            )
        })
        .collect();
    let more = imprecise.len().saturating_sub(IMPRECISE_SHOWN);
    Some(format!(
        "; {} bod{} analysed imprecisely: {}{}",
        imprecise.len(),
        if imprecise.len() == 1 { "y" } else { "ies" },
        shown.join(", "),
        if more > 0 {
            format!(", … {more} more")
        } else {
            String::new()
        }
    ))
}

/// "; 52 judged not shown, 1 judged a bug, 2 changed since judged (re-examine), 3 triage entries match nothing".
fn triage_text(t: &crate::triage::Outcome) -> String {
    let mut parts = vec![format!("{} judged findings not shown", t.hidden)];
    if t.bugs > 0 {
        parts.push(format!("{} judged a bug", t.bugs));
    }
    if t.reexamine > 0 {
        parts.push(format!("{} changed since judged (re-examine)", t.reexamine));
    }
    if !t.stale.is_empty() {
        parts.push(format!(
            "{} triage entr{} match nothing (fixed, or renamed): {}",
            t.stale.len(),
            if t.stale.len() == 1 { "y" } else { "ies" },
            t.stale.join(", ")
        ));
    }
    format!("; {}", parts.join(", "))
}

/// "; 2 declared invariants trusted, applied in 3 drop glues (they
/// remove 60 findings: 52, 8)".
/// One line per declared invariant of an audited run: where it was
/// declared, its kind, what leaving it out alone changes, what it says and
/// where it applied.
fn audit_text(a: &Analysed) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut text = String::from("audit of the declared invariants (each left out alone):\n");
    for u in &a.invariants {
        let effect = match (u.removes, u.makes_errors) {
            (_, Some(n)) => format!("makes {}", plural(n, "error", "errors")),
            (Some(n), None) => format!("removes {}", plural(n, "finding", "findings")),
            (None, None) => "not measured".to_string(),
        };
        text.push_str(&format!(
            "  {}: {} ({}), {effect}; applied in {}\n",
            u.declared_at,
            u.says,
            u.kind,
            plural(u.applied_in.len(), "function", "functions")
        ));
    }
    text
}

fn invariants_text(a: &Analysed) -> String {
    let n = a.invariants.len();
    let count = |kind: &str| -> usize {
        a.invariants
            .iter()
            .filter(|u| u.kind == kind)
            .map(|u| u.applied_in.len())
            .sum()
    };
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let glues = count("empty_at_teardown");
    let stores = count("empty_when_stored");
    let kept = count("kept_alive");
    let calls = count("never_fails");
    let last = count("holds_last");
    let same = count("same_object");
    let mut places = Vec::new();
    if glues > 0 || (stores == 0 && kept == 0 && calls == 0 && last == 0 && same == 0) {
        places.push(plural(glues, "drop glue", "drop glues"));
    }
    if stores > 0 {
        places.push(plural(stores, "storing function", "storing functions"));
    }
    if kept > 0 {
        places.push(plural(
            kept,
            "function dropping kept-alive references",
            "functions dropping kept-alive references",
        ));
    }
    if last > 0 {
        places.push(plural(
            last,
            "function dropping references that can be the last",
            "functions dropping references that can be the last",
        ));
    }
    if calls > 0 {
        places.push(plural(
            calls,
            "function making calls that never fail",
            "functions making calls that never fail",
        ));
    }
    if same > 0 {
        places.push(plural(
            same,
            "function dropping objects whose back pointer names a live one",
            "functions dropping objects whose back pointer names a live one",
        ));
    }
    let mut text = format!(
        "; {n} declared invariant{} trusted, applied in {}",
        if n == 1 { "" } else { "s" },
        places.join(" and ")
    );
    if let Some(all) = a.removed_by_invariants {
        let each: Vec<String> = a
            .invariants
            .iter()
            .filter_map(|u| u.removes.map(|r| r.to_string()))
            .collect();
        if !each.is_empty() {
            text.push_str(&format!(
                " (removing {all} finding{}; alone, each removes {})",
                if all == 1 { "" } else { "s" },
                each.join(", ")
            ));
        }
        let made: Vec<usize> = a.invariants.iter().filter_map(|u| u.makes_errors).collect();
        if !made.is_empty() {
            let n: usize = made.iter().sum();
            text.push_str(&format!(
                "; holds-last declarations make {}",
                plural(n, "finding an error", "findings errors")
            ));
        }
    }
    let unused: Vec<&str> = a
        .invariants
        .iter()
        .filter(|u| u.applied_in.is_empty())
        .map(|u| u.declared_at.as_str())
        .collect();
    if !unused.is_empty() {
        text.push_str(&format!(
            "; never applied (the program tears no such struct down, or stores into no such field): {}",
            unused.join(", ")
        ));
    }
    text
}

#[derive(Serialize)]
struct JsonSummary {
    crates: usize,
    bodies: usize,
    errors: usize,
    warnings: usize,
    unknown_c_functions: Vec<String>,
    /// `kernel` or `userspace`, and where it came from.
    profile: &'static str,
    profile_origin: String,
    /// Findings left out because they lie entirely in upstream code.
    upstream_hidden: usize,
    /// Every input that could not be used, with why.
    skipped_inputs: Vec<JsonSkipped>,
    /// Inputs were skipped, or a crate the program calls into has no
    /// dump: findings that needed them are missing.
    partial: bool,
    /// The build's host crates, left out (not part of the program).
    host_crates: Vec<JsonHost>,
    /// Crates the dumps depend on that have no dump.
    missing_crates: Vec<crate::input::MissingCrate>,
    /// The configuration, spec, invariants, triage and baseline files the
    /// run read, and why each.
    files_used: Vec<crate::pipeline::FileUsed>,
    /// Entries of the user's spec, triage and baseline files that match
    /// nothing in the program or the run.
    unmatched_entries: Vec<crate::pipeline::Unmatched>,
    /// Rust functions handed to C APIs whose spec has a callback contract.
    callbacks_checked: usize,
    /// Findings left out because the `--baseline` has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    baselined: Option<usize>,
    /// What the `--triage` file did.
    #[serde(skip_serializing_if = "Option::is_none")]
    triage: Option<crate::triage::Outcome>,
    /// The declared invariants the run trusted (docs/invariants.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    invariants: Vec<crate::pipeline::InvariantUse>,
    /// With `--audit-invariants`: findings all invariants together remove.
    #[serde(skip_serializing_if = "Option::is_none")]
    removed_by_invariants: Option<usize>,
    /// The bodies a bound of the analysis made imprecise.
    imprecise: JsonImprecise,
}

/// The bodies whose analysis hit a bound (it widened, or ran out of its
/// step budget), the worst first.
#[derive(Serialize)]
struct JsonImprecise {
    bodies: usize,
    functions: Vec<JsonImpreciseBody>,
}

#[derive(Serialize)]
struct JsonImpreciseBody {
    function: String,
    /// The most consequential bound hit, by name (`steps`, `rounds`, …).
    worst: &'static str,
    /// How often each bound was hit, by name; bounds not hit are left out.
    bounds: std::collections::BTreeMap<&'static str, u32>,
}

fn json_imprecise(a: &Analysed) -> JsonImprecise {
    let imprecise = &a.preempt.imprecise;
    JsonImprecise {
        bodies: imprecise.len(),
        functions: imprecise
            .iter()
            .map(|(f, hits)| JsonImpreciseBody {
                function: a.program.function(*f).name.to_string(),
                worst: hits.worst().map_or("", analysis::Bound::name),
                bounds: hits.bounds().map(|b| (b.name(), hits.count(b))).collect(),
            })
            .collect(),
    }
}

#[derive(Serialize)]
struct JsonHost {
    #[serde(rename = "crate")]
    krate: String,
    path: String,
    target: String,
    why: String,
}

#[derive(Serialize)]
struct JsonSkipped {
    path: String,
    reason: String,
}

#[derive(Serialize)]
struct JsonReport {
    version: u32,
    findings: Vec<report::JsonFinding>,
    summary: JsonSummary,
}

fn sarif(a: &Analysed, shown: &Shown, out: &mut dyn Write) -> io::Result<()> {
    // Shown findings (new, when a baseline was given), then the baseline's
    // (unchanged) and the triaged ones (suppressed): a dashboard shows the
    // first and keeps the others' history.
    let state = |s: &'static str| shown.baseline.then_some(s);
    let noted: Vec<findings::Finding> = shown.findings.iter().map(Judged::noted).collect();
    let mut items: Vec<report::SarifItem<'_>> = noted
        .iter()
        .map(|f| report::SarifItem {
            finding: f,
            baseline: state("new"),
            suppression: None,
        })
        .collect();
    items.extend(shown.known_list.iter().map(|f| report::SarifItem {
        finding: f,
        baseline: state("unchanged"),
        suppression: None,
    }));
    items.extend(shown.suppressed.iter().filter_map(|j| {
        let v = j.triage.as_ref()?;
        Some(report::SarifItem {
            finding: &j.finding,
            baseline: state("new"),
            suppression: Some((v.entry.verdict.as_str().to_string(), v.entry.judged())),
        })
    }));
    let log = report::to_sarif(&a.program, &items, checks::KINDS, env!("CARGO_PKG_VERSION"));
    serde_json::to_writer_pretty(&mut *out, &log).map_err(io::Error::other)?;
    writeln!(out)
}

fn json(a: &Analysed, shown: &Shown, out: &mut dyn Write) -> io::Result<()> {
    let findings = &shown.findings;
    let count = |s| findings.iter().filter(|f| f.finding.severity == s).count();
    // The findings shown, then those a verdict hides (as SARIF lists them
    // suppressed), each with its verdict.
    let doc = JsonReport {
        version: JSON_VERSION,
        findings: findings
            .iter()
            .chain(&shown.suppressed)
            .map(|j| {
                let mut f = report::to_json(&a.program, &j.finding);
                f.triage = j.triage.as_ref().map(Verdict::json);
                f
            })
            .collect(),
        summary: JsonSummary {
            crates: a.program.crates.len(),
            bodies: a.program.stats.bodies,
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            unknown_c_functions: a.preempt.unknown_foreign.iter().cloned().collect(),
            profile: a.profile.0.as_str(),
            profile_origin: a.profile.1.clone(),
            upstream_hidden: a.upstream_hidden(),
            skipped_inputs: a
                .load
                .skipped
                .iter()
                .map(|s| JsonSkipped {
                    path: s.path.display().to_string(),
                    reason: s.reason.clone(),
                })
                .collect(),
            partial: a.load.partial(),
            host_crates: a
                .load
                .host_crates
                .iter()
                .map(|h| JsonHost {
                    krate: h.name.clone(),
                    path: h.path.display().to_string(),
                    target: h.target.clone(),
                    why: h.why.to_string(),
                })
                .collect(),
            missing_crates: a.load.missing.clone(),
            files_used: a.files_used.clone(),
            unmatched_entries: a.unmatched.clone(),
            baselined: (shown.known > 0).then_some(shown.known),
            callbacks_checked: a.preempt.locks.callbacks,
            triage: shown.triaged.clone(),
            invariants: a.invariants.clone(),
            removed_by_invariants: a.removed_by_invariants,
            imprecise: json_imprecise(a),
        },
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
    writeln!(out)
}
