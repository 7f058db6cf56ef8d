//! Everything `check` and `summary` share: the linked program, the
//! annotations, the spec, and the analyses' results.

use std::collections::HashMap;

use annotations::ItemAnnotations;
use findings::{Finding, Loc, Note, Severity};
use program::Program;

use crate::cli::{AnalysisArgs, Profile};
use crate::diag::Diagnostic;
use crate::input::{self, LoadSummary};

pub struct Analysed {
    pub program: Program,
    pub load: LoadSummary,
    pub annotations: HashMap<String, ItemAnnotations>,
    pub spec: spec::Spec,
    /// The profile the run used, and why (`--profile`, the configuration
    /// file's line, or what detected it).
    pub profile: (Profile, String),
    /// `--include-upstream`: findings that lie entirely in upstream code
    /// are shown, not only counted.
    pub include_upstream: bool,
    pub preempt: checks::Output,
    /// Malformed annotations, as findings.
    pub annotation_findings: Vec<Finding>,
    /// The declared invariants, where each applied and what each removed.
    pub invariants: Vec<InvariantUse>,
    /// With `--audit-invariants`: how many findings all of them together
    /// remove.
    pub removed_by_invariants: Option<usize>,
    /// The configuration, spec, invariants, triage and baseline files the
    /// run read (set by the command, which knows them all).
    pub files_used: Vec<FileUsed>,
    /// Entries of the user's files that match nothing: spec entries here,
    /// triage and baseline entries added by `check`.
    pub unmatched: Vec<Unmatched>,
    /// Declarations left out because they match nothing or the program
    /// contradicts them (each reported as an error of its file, and in
    /// `unmatched`): the run's exit status is then 4.
    pub declarations_left_out: usize,
}

/// A file a run read, for the summary: its role, path and why it was read.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FileUsed {
    /// `configuration`, `spec`, `invariants`, `triage` or `baseline`.
    pub role: &'static str,
    pub path: String,
    /// How it was chosen: a flag, the configuration file's line, or
    /// "found in an ancestor of the current directory".
    pub from: String,
}

/// An entry of a user's file that matches nothing.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Unmatched {
    /// `spec [fn]`, `spec [rust]`, `spec [field]`, `invariants` (a
    /// declaration left out: it matches nothing, or the program
    /// contradicts it), `triage` or `baseline`.
    pub kind: String,
    /// The entry: a function name or glob, an item path, `struct.field`,
    /// a finding id.
    pub entry: String,
    /// Where it is (`file:line:col`, or the file).
    pub at: String,
}

/// "files used: configuration `x` (found …), spec `a`, …", or `None` when
/// the run read none but the `kanalyze.toml` of the current directory,
/// which is in plain sight (the JSON lists it all the same).
pub fn files_used_text(files: &[FileUsed]) -> Option<String> {
    if let [only] = files
        && only.role == "configuration"
        && only.from == crate::config::CURRENT_DIRECTORY
    {
        return None;
    }
    if files.is_empty() {
        return None;
    }
    Some(format!(
        "files used: {}",
        files
            .iter()
            .map(|f| format!("{} `{}` ({})", f.role, f.path, f.from))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The files a run reads, in the order the summary lists them.
pub fn files_used(
    config: &crate::config::Config,
    args: &AnalysisArgs,
    triage: Option<(&std::path::Path, &str)>,
    baseline: Option<(&std::path::Path, &str)>,
) -> Vec<FileUsed> {
    let mut out = Vec::new();
    if let (Some(path), Some(found)) = (&config.path, &config.found) {
        out.push(FileUsed {
            role: "configuration",
            path: path.display().to_string(),
            from: found.clone(),
        });
    }
    let from = |p: &std::path::Path,
                configured: &[(std::path::PathBuf, crate::config::Origin)],
                flag: &str| {
        configured
            .iter()
            .find(|(c, _)| c == p)
            .map_or_else(|| flag.to_string(), |(_, o)| o.0.clone())
    };
    for p in &args.specs {
        out.push(FileUsed {
            role: "spec",
            path: p.display().to_string(),
            from: from(p, &config.specs, "--spec"),
        });
    }
    for p in &args.invariants {
        out.push(FileUsed {
            role: "invariants",
            path: p.display().to_string(),
            from: from(p, &config.invariants, "--invariants"),
        });
    }
    if let Some((p, o)) = triage {
        out.push(FileUsed {
            role: "triage",
            path: p.display().to_string(),
            from: o.to_string(),
        });
    }
    if let Some((p, o)) = baseline {
        out.push(FileUsed {
            role: "baseline",
            path: p.display().to_string(),
            from: o.to_string(),
        });
    }
    out
}

/// One declared invariant, for the summary: what it says, where it was
/// declared, the drop glues it applied to and (audited) what it removed.
#[derive(Clone, Debug, serde::Serialize)]
pub struct InvariantUse {
    /// `empty_at_teardown`, `empty_when_stored`, `kept_alive`, `holds_last`
    /// or `never_fails`.
    pub kind: &'static str,
    pub says: String,
    /// `file:line:col` of the declaration.
    pub declared_at: String,
    pub because: Option<String>,
    /// The functions in which a drop was elided: drop glues (empty at
    /// teardown), storing functions (empty when stored), or in which a
    /// dropped reference is not the last (kept alive).
    pub applied_in: Vec<String>,
    /// With `--audit-invariants`: the findings that appear when only this
    /// declaration is left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removes: Option<usize>,
    /// With `--audit-invariants`, for a holds-last declaration: the
    /// findings that go (back to warnings) when only it is left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub makes_errors: Option<usize>,
}

/// The finding levels the flags and configuration give, and the user's
/// spec files, each read and checked (an error is reported, and `None`
/// returned, for a bad level or a spec file that does not parse).
pub(crate) fn levels_and_specs(args: &AnalysisArgs) -> Option<(Levels, Vec<spec::Spec>)> {
    let levels = match Levels::new(args) {
        Ok(l) => l,
        Err(d) => {
            d.emit();
            return None;
        }
    };
    let mut user_specs = Vec::new();
    for path in &args.specs {
        match spec::Spec::load(path) {
            Ok(extra) => user_specs.push(extra),
            Err(e) => {
                Diagnostic::error(format!("invalid spec file: {e}"))
                    .help("the format is described in crates/spec/README.md; `kanalyze` refuses to guess what a broken spec meant")
                    .emit();
                return None;
            }
        }
    }
    Some((levels, user_specs))
}

/// Loads, links and analyses; `None` (after reporting why) when the input
/// is unusable or a spec file is bad.
pub fn analyse(paths: &[std::path::PathBuf], args: &AnalysisArgs) -> Option<Analysed> {
    // The user's spec files are read (and a broken one refused) before the
    // dumps are; the built-in spec they extend depends on the program.
    let (levels, user_specs) = levels_and_specs(args)?;
    let mut declarations = invariant_files(args)?;
    let progress = crate::progress::Progress::for_args(args);
    // The summary cache's pack is read while the dumps load.
    let prefetch = crate::cache::dir(args).map(|d| summary_cache::prefetch(&d, paths));
    let dump_cache = crate::cache::dumps(args);
    let (program, load) = input::load_program_with(
        paths,
        &progress,
        dump_cache.as_ref(),
        args.profile == Some(Profile::Kernel),
    )?;
    if let Some(c) = &dump_cache {
        crate::cache::dump_warnings(c);
    }
    program.keep_bodies(args.keep_bodies);
    release_free_memory();
    let t = crate::timings::mark();
    let profile = match (args.profile, &args.profile_origin) {
        (Some(p), origin) => (p, origin.clone().unwrap_or_else(|| "--profile".into())),
        (None, _) => detect_profile(&program),
    };
    let (spec, annotations, errors) = spec_and_annotations(&program, profile.0, &user_specs)?;
    let unmatched = unmatched_spec_entries(&program, &user_specs);
    let mut annotation_findings: Vec<Finding> = errors
        .into_iter()
        .map(|(krate, e)| annotation_finding(krate, &e))
        .collect();
    crate::timings::record("spec+annots", t);
    let t = crate::timings::mark();
    annotation_findings.extend(invariants_in_source(&annotations, &mut declarations));
    let (resolved, dropped_declarations) = resolve_invariants(&program, &mut declarations)?;
    crate::timings::record("invariants", t);
    // The solve and the checks are timed apart for `--timings`; the
    // audit's extra runs (below) are not part of the figures.
    let name = |f: program::FnId| program.function(f).name.to_string();
    let observe = |p: analysis::Progress| progress.solver(p, &name);
    let cache_figures = std::cell::RefCell::new(None);
    let prefetch = std::cell::RefCell::new(prefetch);
    let base: std::cell::RefCell<Option<analysis::Solved>> = std::cell::RefCell::new(None);
    // The first run (the one with the progress observer) is timed.
    let run = |resolved: &invariants::Resolved,
               observe: Option<&(dyn Fn(analysis::Progress) + Sync)>| {
        let input = checks::Input {
            program: &program,
            annotations: &annotations,
            spec: &spec,
            invariants: resolved,
            trace: args.trace.as_deref(),
            step_budget: args.step_budget.unwrap_or(analysis::STEP_BUDGET),
            progress: observe,
        };
        let t = crate::timings::mark();
        let check = |solved: analysis::Solved| {
            // The audit's reruns start from what this run solved.
            if observe.is_some() && args.audit_invariants {
                base.replace(Some(solved.clone()));
            }
            if observe.is_some() {
                crate::timings::record("solve", t);
                progress.phase("checking", 1);
            }
            let t = crate::timings::mark();
            let mut out = checks::check(&input, solved);
            levels.apply(&mut out.findings);
            if observe.is_some() {
                crate::timings::record("checks", t);
            }
            out
        };
        // The summary cache serves the run itself, not the audit's reruns
        // (it writes its pack while the checks run).
        if observe.is_some() {
            let (out, figures) =
                crate::cache::solve_then(&input, paths, args, profile.0, prefetch.take(), check);
            cache_figures.replace(figures);
            out
        } else {
            check(analysis::solve(&input))
        }
    };
    let preempt = run(&resolved, Some(&observe));
    if args.timings
        && let Some(c) = cache_figures.borrow().as_ref()
    {
        crate::cache::print_timings(c);
    }
    // Every phase that walks the bodies has run: what they computed for
    // dumps the per-dump cache did not know is kept for the next run.
    if let Some(c) = &dump_cache {
        crate::cache::save_dumps(c, &program, args.timings);
    }
    levels.apply(&mut annotation_findings);
    let mut invariant_uses = invariant_uses(&program, &declarations, &resolved);
    let removed_by_invariants = match base.into_inner() {
        Some(base) if !declarations.is_empty() => {
            // Each rerun solves again only what the declarations it leaves
            // out reach, and reads the program through one walk.
            let input = checks::Input {
                program: &program,
                annotations: &annotations,
                spec: &spec,
                invariants: &resolved,
                trace: args.trace.as_deref(),
                step_budget: args.step_budget.unwrap_or(analysis::STEP_BUDGET),
                progress: None,
            };
            let schedule = solver::Schedule::new(&program);
            let walked = checks::walk_program(&input);
            let rerun = |resolved: &invariants::Resolved, changed: &[program::FnId]| {
                let input = checks::Input {
                    invariants: resolved,
                    ..input
                };
                let solved = analysis::solve_again(&input, &schedule, &base, changed);
                let mut out = checks::check_walked(&input, solved, &walked);
                levels.apply(&mut out.findings);
                out
            };
            Some(audit_invariants(
                &program,
                &resolved,
                &preempt,
                &mut invariant_uses,
                &rerun,
            ))
        }
        _ => None,
    };
    progress.finish();
    Some(Analysed {
        program,
        load,
        annotations,
        spec,
        profile,
        include_upstream: args.include_upstream,
        preempt,
        annotation_findings,
        invariants: invariant_uses,
        removed_by_invariants,
        files_used: Vec::new(),
        declarations_left_out: dropped_declarations.len(),
        unmatched: [unmatched, dropped_declarations].concat(),
    })
}

/// The declarations of the invariants files (`--invariants`, `invariants
/// =`), each file read and checked; `None` after reporting a bad one.
fn invariant_files(args: &AnalysisArgs) -> Option<Vec<invariants::Declaration>> {
    let mut declarations = Vec::new();
    for path in &args.invariants {
        match invariants::load(path) {
            Ok(d) => declarations.extend(d),
            Err(e) => {
                crate::diag::emit_miette(e.as_ref());
                return None;
            }
        }
    }
    Some(declarations)
}

/// Errors in annotations, each with the index of its crate.
type AnnotationErrors = Vec<(u32, annotations::AnnotationError)>;

/// The spec of the profile extended by the user's, and the program's
/// annotations with the errors found in them. The spec, the annotations
/// and the arities that check both read only the program: they are made
/// side by side, then checked in order. `None` after reporting a user's
/// spec entry that does not fit the program.
fn spec_and_annotations(
    program: &Program,
    profile: Profile,
    user_specs: &[spec::Spec],
) -> Option<(
    spec::Spec,
    HashMap<String, ItemAnnotations>,
    AnnotationErrors,
)> {
    let ((spec, foreign), ((mut annotations, mut errors), arities)) = rayon::join(
        || {
            rayon::join(
                || {
                    let mut spec = match profile {
                        Profile::Kernel => spec::Spec::builtin_kernel(),
                        Profile::Userspace => spec::Spec::userspace(),
                        Profile::Embedded => spec::Spec::embedded(),
                    };
                    for extra in user_specs {
                        spec.extend(extra.clone());
                    }
                    spec
                },
                || program.foreign_arities(),
            )
        },
        || {
            rayon::join(
                || {
                    annotations::collect(
                        program
                            .crates
                            .iter()
                            .enumerate()
                            .map(|(i, c)| (i as u32, c.dump.items.as_slice())),
                    )
                },
                || program.arities(),
            )
        },
    );
    check_spec_arity(&spec, &foreign, &arities)?;
    errors.extend(annotations::check_arity(&mut annotations, |path| {
        arities.get(path).copied()
    }));
    Some((spec, annotations, errors))
}

/// Checks the argument indices of the spec, which can only be checked
/// once the program is linked: the calls say how many arguments each C
/// function takes. A built-in entry that does not fit is a warning; a
/// user's is an error (reported, and `None` returned).
fn check_spec_arity(
    spec: &spec::Spec,
    foreign: &HashMap<String, u32>,
    arities: &HashMap<String, u32>,
) -> Option<()> {
    let mut broken = Vec::new();
    let rust_arity = spec.check_rust_arity(arities.iter().map(|(path, n)| (path.as_str(), *n)));
    for e in spec
        .check_arity(foreign.iter().map(|(name, n)| (name.as_str(), *n)))
        .into_iter()
        .chain(rust_arity)
    {
        if e.origin.starts_with(spec::BUILTIN_ORIGIN) {
            // The program's function of that name is not the kernel's (the
            // built-in spec is the kernel's API): the user cannot fix the
            // built-in file, so this does not stop the run.
            Diagnostic::warning(format!("built-in spec entry does not fit: {e}"))
                .help("override the entry with a `--spec` file if this program's function is meant")
                .emit();
        } else {
            broken.push(e);
        }
    }
    if let Some((last, rest)) = broken.split_last() {
        for e in rest {
            Diagnostic::error(format!("invalid spec file: {e}")).emit();
        }
        // The help once, after the last error, not after each.
        Diagnostic::error(format!("invalid spec file: {last}"))
            .help("the format is described in crates/spec/README.md; `kanalyze` refuses to guess what a broken spec meant")
            .emit();
        return None;
    }
    Some(())
}

/// The finding for an error in an annotation.
fn annotation_finding(krate: u32, e: &annotations::AnnotationError) -> Finding {
    let severity = match e.level {
        annotations::Level::Error => Severity::Error,
        annotations::Level::Warning => Severity::Warning,
    };
    let mut f = Finding::new(&checks::BAD_ANNOTATION, severity, e.message.clone())
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
}

/// The invariants declared by annotations in the source, added to
/// `declarations`; the findings for those put where they mean nothing.
fn invariants_in_source(
    annotations: &HashMap<String, ItemAnnotations>,
    declarations: &mut Vec<invariants::Declaration>,
) -> Vec<Finding> {
    let (in_source, misplaced) =
        invariants::from_annotations(annotations.iter().map(|(p, a)| (p.as_str(), a)));
    declarations.extend(in_source);
    let mut findings = Vec::new();
    for m in misplaced {
        findings.push(
            Finding::new(&checks::BAD_ANNOTATION, Severity::Error, m.message.clone())
                .at(Loc {
                    krate: m.krate,
                    span: m.span,
                })
                .subject(m.message)
                .note(Note::help(m.help)),
        );
    }
    findings
}

/// The declarations resolved against the program. A declaration that
/// matches nothing (a local renamed, a function moved) or that the program
/// contradicts is an error of its file, but not of the run: it is reported
/// and left out of `declarations` (and returned), so the findings it
/// covered come back, and the exit status says the input was bad.
fn resolve_invariants(
    program: &Program,
    declarations: &mut Vec<invariants::Declaration>,
) -> Option<(invariants::Resolved, Vec<Unmatched>)> {
    let mut dropped_declarations = Vec::new();
    let resolved = loop {
        match invariants::resolve(program, declarations.clone()) {
            Ok(r) => break r,
            Err(problems) => {
                let mut bad: Vec<usize> = problems.iter().map(|p| p.declaration).collect();
                bad.sort_unstable();
                bad.dedup();
                if bad.iter().any(|&i| i >= declarations.len()) {
                    return None;
                }
                for p in &problems {
                    report_problem(program, declarations, p);
                }
                for &i in bad.iter().rev() {
                    let d = declarations.remove(i);
                    dropped_declarations.push(Unmatched {
                        kind: "invariants".to_string(),
                        entry: crate::diag::clip(&d.describe()).into_owned(),
                        at: d.declared_at(program),
                    });
                }
            }
        }
    };
    Some((resolved, dropped_declarations))
}

/// What each declaration says, where, and where it applied, for the
/// summary.
fn invariant_uses(
    program: &Program,
    declarations: &[invariants::Declaration],
    resolved: &invariants::Resolved,
) -> Vec<InvariantUse> {
    let uses = resolved.uses();
    declarations
        .iter()
        .zip(&uses)
        .map(|(d, u)| {
            let mut applied_in: Vec<String> = u
                .iter()
                .map(|u| program.function(u.function).name.to_string())
                .collect();
            applied_in.sort();
            applied_in.dedup();
            InvariantUse {
                kind: match d.invariant {
                    invariants::Invariant::EmptyAtTeardown { .. } => "empty_at_teardown",
                    invariants::Invariant::EmptyWhenStored { .. } => "empty_when_stored",
                    invariants::Invariant::KeptAlive { .. } => "kept_alive",
                    invariants::Invariant::HoldsLast { .. } => "holds_last",
                    invariants::Invariant::NeverFails { .. } => "never_fails",
                    invariants::Invariant::SameObject { .. } => "same_object",
                },
                says: d.describe(),
                declared_at: d.declared_at(program),
                because: d.because.clone(),
                applied_in,
                removes: None,
                makes_errors: None,
            }
        })
        .collect()
}

/// `--audit-invariants`: leave-one-out. What appears without a
/// declaration is what it removes (findings two declarations both remove
/// count for neither alone, but for all together), recorded in its
/// `uses` entry; returns what all the declarations but the holds-last
/// ones remove together.
///
/// `rerun` analyses the program again with other declarations, which
/// differ from `resolved` only in the functions it is given (where a
/// declaration left out applied). The reruns are independent: they run
/// side by side.
fn audit_invariants(
    program: &Program,
    resolved: &invariants::Resolved,
    preempt: &checks::Output,
    uses: &mut [InvariantUse],
    rerun: &(dyn Fn(&invariants::Resolved, &[program::FnId]) -> checks::Output + Sync),
) -> usize {
    use rayon::prelude::*;
    let ids = |o: &checks::Output| -> std::collections::HashSet<String> {
        o.findings
            .iter()
            .map(|f| report::stable_id(program, f))
            .collect()
    };
    let with_all = ids(preempt);
    let applies: Vec<Vec<program::FnId>> = resolved
        .uses()
        .iter()
        .map(|u| u.iter().map(|u| u.function).collect())
        .collect();
    // A holds-last declaration removes nothing: it turns a warning
    // into an error, which leaving it out turns back. It stays in
    // when measuring what the others remove.
    let removing: Vec<program::FnId> = uses
        .iter()
        .zip(&applies)
        .filter(|(u, _)| u.kind != "holds_last")
        .flat_map(|(_, a)| a.iter().copied())
        .collect();
    // Without the removing ones together, then without each alone.
    let runs: Vec<Option<usize>> = std::iter::once(None)
        .chain((0..uses.len()).map(Some))
        .collect();
    let mut without: Vec<std::collections::HashSet<String>> = runs
        .par_iter()
        .map(|run| match run {
            None => ids(&rerun(&resolved.without_removing(), &removing)),
            Some(i) => ids(&rerun(
                &resolved.without(*i),
                applies.get(*i).map_or(&[][..], Vec::as_slice),
            )),
        })
        .collect();
    let alone = without.split_off(1);
    let removed = without
        .first()
        .map_or(0, |w| w.difference(&with_all).count());
    for (u, without) in uses.iter_mut().zip(alone) {
        if u.kind == "holds_last" {
            u.makes_errors = Some(with_all.difference(&without).count());
        } else {
            u.removes = Some(without.difference(&with_all).count());
        }
    }
    removed
}

/// The entries of the user's spec files that match nothing in the
/// program, each a warning naming it (the built-in kernel spec describes
/// the whole kernel's API, of which a program uses a part).
fn unmatched_spec_entries(program: &Program, specs: &[spec::Spec]) -> Vec<Unmatched> {
    if specs.is_empty() {
        return Vec::new();
    }
    let symbols: Vec<&str> = program
        .functions
        .iter()
        .map(|f| f.symbol.as_str())
        .collect();
    let paths: std::collections::HashSet<&str> = program
        .functions
        .iter()
        .map(|f| f.item_path.as_str())
        .collect();
    let mut fields: std::collections::HashSet<(&str, &str)> = std::collections::HashSet::new();
    for c in &program.crates {
        for adt in &c.dump.adts {
            let owner = adt.path.rsplit("::").next().unwrap_or(adt.path.as_str());
            for v in &adt.variants {
                for field in &v.fields {
                    fields.insert((owner, field.name.as_str()));
                }
            }
        }
    }
    let statics: std::collections::HashSet<&str> = program
        .crates
        .iter()
        .flat_map(|c| c.dump.statics.iter().map(|s| s.symbol.as_str()))
        .collect();
    let mut out = Vec::new();
    for spec in specs {
        for e in spec.unmatched(&symbols, &paths, &fields, &statics) {
            let (what, help) = match e.table {
                "fn" => (
                    "names no function of the program",
                    "a `[fn]` entry is a link name (or a glob) of a function the program calls; check its spelling (`kanalyze graph DIR` lists the program's C functions)",
                ),
                "rust" => (
                    "names no function of the program",
                    "a `[rust]` entry is an item path as `kanalyze dump` prints it after `item`",
                ),
                "static" => (
                    "names no static of the program",
                    "a `[static]` entry is the link name of a static holding code pointers (a vector table: `__INTERRUPTS`)",
                ),
                "stack.fn" => (
                    "names no function of the program",
                    "a `[stack.fn]` entry is a link name (or a glob) of a C function the program calls; check its spelling (`kanalyze graph DIR` lists the program's C functions)",
                ),
                _ => (
                    "names no struct field of the program",
                    "a `[field]` entry is `struct.field` of a struct the program's types use",
                ),
            };
            let mut d = Diagnostic::warning(format!(
                "spec entry `{}` ({}) {what}: it applies to nothing",
                crate::diag::clip(&e.key),
                e.origin
            ))
            .help(help);
            if e.table == "rust"
                && let Some(item) = crate::lock_apis::item_named(program, &e.key)
            {
                // `std::thread::sleep` is the item `std::thread::functions::sleep`.
                d = d.help(format!(
                    "the program's `{}` is the item `{}`",
                    crate::diag::clip(&e.key),
                    crate::diag::clip(&item)
                ));
            }
            d.emit();
            out.push(Unmatched {
                kind: format!("spec [{}]", e.table),
                entry: crate::diag::clip(&e.key).into_owned(),
                at: e.origin,
            });
        }
    }
    out
}

/// A declaration that names nothing: into its file with miette, or at the
/// attribute.
fn report_problem(
    program: &Program,
    declarations: &[invariants::Declaration],
    p: &invariants::Problem,
) {
    let Some(d) = declarations.get(p.declaration) else {
        return;
    };
    let what = match p.kind {
        invariants::ProblemKind::Contradiction => "invariant contradicted by the program",
        invariants::ProblemKind::Ambiguous => "invariant matches more than one function",
        invariants::ProblemKind::NoMatch => "invariant matches nothing",
    };
    match &d.origin {
        invariants::Origin::File { path, span, .. } => {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let span = (span.end <= text.len()).then(|| span.clone());
            let e = invariants::FileError::at(
                path,
                &text,
                span,
                format!("{what}: {}", p.message),
                "declared here",
                p.help.clone(),
            );
            crate::diag::emit_miette(&e);
        }
        _ => {
            let mut diag = Diagnostic::error(format!("{what}: {}", p.message))
                .note(format!("declared at {}", d.declared_at(program)));
            if let Some(h) = &p.help {
                diag = diag.help(h.clone());
            }
            diag.emit();
        }
    }
}

impl Analysed {
    /// Every finding to report, in a deterministic order (file, line,
    /// column, kind): without `--include-upstream`, not those entirely in
    /// upstream code.
    pub fn findings(&self) -> Vec<&Finding> {
        let mut all = self.all_findings();
        if !self.include_upstream {
            all.retain(|f| !entirely_upstream(&self.program, f));
        }
        all
    }

    /// How many findings (one per item and place, as reported) lie entirely
    /// in upstream code and are not shown.
    pub fn upstream_hidden(&self) -> usize {
        if self.include_upstream {
            return 0;
        }
        self.all_findings()
            .iter()
            .filter(|f| entirely_upstream(&self.program, f))
            .count()
    }

    /// Every finding, upstream ones included, in a deterministic order
    /// (file, line, column, kind).
    ///
    /// Files are ranked before they are compared so that the order does not
    /// depend on where the checkout, the cargo registry or the toolchain
    /// happen to live: the user's own code first, then dependencies from the
    /// registry, then the standard library.
    fn all_findings(&self) -> Vec<&Finding> {
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
            // The item, not the instance: the instances of one generic
            // function give one report; two functions whose findings land
            // in one macro body (`kunit_assert!` in two tests) give two.
            let item = f
                .function
                .map(|g| {
                    let func = self.program.function(g);
                    if func.item_path.is_empty() {
                        func.name.clone()
                    } else {
                        func.item_path.clone()
                    }
                })
                .unwrap_or_default();
            (
                file_rank(file),
                file.to_string(),
                line,
                col,
                f.kind,
                f.message.clone(),
                f.subject.clone(),
                item,
            )
        };
        // Findings of one item at one place with one text (its generic
        // instances) are one report; which instance it names must not
        // depend on the order the analysis met them, so the smallest
        // instance name is kept.
        let instance = |f: &Finding| {
            f.function
                .map(|g| self.program.function(g).name.clone())
                .unwrap_or_default()
        };
        all.sort_by_cached_key(|f| (key(f), instance(f)));
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

/// Where a source file comes from: 0 the user's own code, 1 a dependency
/// from the cargo registry or a git checkout, 2 the standard library (the
/// toolchain's `rust-src`, or its remapped `/rustc/<hash>/` paths). For the
/// order of findings, and for what is upstream.
fn file_rank(path: &str) -> u8 {
    if path.contains("/lib/rustlib/src/rust/") || path.starts_with("/rustc/") {
        2
    } else if path.contains("/registry/src/") || path.contains("/git/checkouts/") {
        1
    } else {
        0
    }
}

/// A finding all of whose locations lie in upstream code: the standard
/// library's sources or a crate from the registry or a git checkout. Its
/// locations are the primary one, every note's, and every frame of the
/// call trace from a root that the report prints ("which is called from
/// here, in …"): a finding that the user's code reaches is theirs, even
/// when it is located inside `core`'s drop glue. The user cannot act on
/// the others, so they are counted, not shown, unless `--include-upstream`
/// (docs/preemption.md, "Findings in upstream code"). A finding without
/// any location is shown.
pub fn entirely_upstream(program: &Program, f: &Finding) -> bool {
    let upstream = |l: &Loc| {
        let file = program
            .crates
            .get(l.krate as usize)
            .and_then(|c| c.dump.file(l.span.file))
            .unwrap_or("");
        file_rank(file) > 0
    };
    let mut locs = f
        .primary
        .iter()
        .chain(f.notes.iter().filter_map(|n| n.loc.as_ref()))
        .peekable();
    if locs.peek().is_none() || !locs.all(upstream) {
        return false;
    }
    // A lock a library function leaves held (or releases without holding)
    // is its own balance, whoever calls it.
    if checks::about_own_balance(f.kind) {
        return true;
    }
    let trace = f
        .trace_from
        .or(f.function)
        .map(|g| report::call_trace(program, g))
        .unwrap_or_default();
    trace
        .iter()
        .all(|step| match program.function(step.caller).kind {
            program::FnKind::Body { krate, .. } => upstream(&Loc {
                krate,
                span: step.edge.span,
            }),
            _ => true,
        })
}

/// The profile of a program without `--profile` or `profile =`: the kernel
/// when a `kernel` crate built for a kernel target is linked (the kernel's
/// Rust always has one; a cargo project of that name for a hosted triple is
/// not the kernel), userspace otherwise.
pub(crate) fn detect_profile(program: &Program) -> (Profile, String) {
    if let Some(c) = program.crates.iter().find(|c| {
        c.dump.header.crate_name == "kernel"
            && crate::kernel_target::is_kernel_target(&c.dump.header.target)
    }) {
        return (
            Profile::Kernel,
            format!(
                "detected: crate `kernel` for target `{}`",
                c.dump.header.target
            ),
        );
    }
    // The `kernel` crate's dump is missing, but crates built for a kernel
    // target were compiled against it: the program is still the kernel.
    let mut dependents: Vec<&str> = program
        .crates
        .iter()
        .filter(|c| {
            crate::kernel_target::is_kernel_target(&c.dump.header.target)
                && c.dump
                    .header
                    .dependencies
                    .iter()
                    .any(|d| d.name == "kernel" && !d.sysroot)
        })
        .map(|c| c.dump.header.crate_name.as_str())
        .collect();
    dependents.sort_unstable();
    if let Some(first) = dependents.first() {
        let target = program
            .crates
            .iter()
            .find(|c| c.dump.header.crate_name == *first)
            .map_or("", |c| c.dump.header.target.as_str());
        let who = format!(
            "{} for target `{target}` depend{} on crate `kernel`",
            dependents
                .iter()
                .take(3)
                .map(|d| format!("`{d}`"))
                .collect::<Vec<_>>()
                .join(", ")
                + &if dependents.len() > 3 {
                    format!(" (and {} more)", dependents.len() - 3)
                } else {
                    String::new()
                },
            if dependents.len() == 1 { "s" } else { "" }
        );
        let origin = format!("detected: {who}, whose dump is missing");
        Diagnostic::warning(format!(
            "the kernel profile is used, but the dump of crate `kernel` is missing: {who}"
        ))
        .note("every function of the `kernel` crate that the program calls is unknown to this run: the result is partial")
        .emit();
        return (Profile::Kernel, origin);
    }
    // A firmware: built for a target without an operating system. The
    // first such crate by name, for a stable origin.
    let mut bare: Vec<(&str, &str)> = program
        .crates
        .iter()
        .filter(|c| is_bare_metal(&c.dump.header.target))
        .map(|c| {
            (
                c.dump.header.crate_name.as_str(),
                c.dump.header.target.as_str(),
            )
        })
        .collect();
    bare.sort_unstable();
    if let Some((krate, target)) = bare.first() {
        return (
            Profile::Embedded,
            format!("detected: crate `{krate}` built for the bare-metal target `{target}`"),
        );
    }
    (
        Profile::Userspace,
        "detected: no `kernel` crate built for a kernel target".to_string(),
    )
}

/// A target triple without an operating system (`thumbv7em-none-eabihf`,
/// `riscv32imac-unknown-none-elf`): its OS component is `none`.
pub(crate) fn is_bare_metal(target: &str) -> bool {
    let parts: Vec<&str> = target.split('-').collect();
    parts.len() >= 3 && parts[1..].contains(&"none")
}

/// `--deny`/`--warn`/`--allow`: the severity a finding kind is reported
/// with, or `None` to drop it.
pub(crate) struct Levels(HashMap<&'static str, Option<Severity>>);

impl Levels {
    pub(crate) fn new(args: &AnalysisArgs) -> Result<Levels, Diagnostic> {
        let mut levels: HashMap<&'static str, Option<Severity>> = HashMap::new();
        // The configuration file's levels first; a flag for the same kind
        // replaces its level (the configuration was checked when read).
        for (kind, level) in &args.configured_levels {
            if let Some(k) = checks::kind(kind) {
                levels.insert(
                    k.name,
                    match level {
                        crate::level::Level::Allow => None,
                        crate::level::Level::Warn => Some(Severity::Warning),
                        crate::level::Level::Deny => Some(Severity::Error),
                    },
                );
            }
        }
        let mut given: HashMap<&'static str, &'static str> = HashMap::new();
        for (flag, kinds, level) in [
            ("--deny", &args.deny, Some(Severity::Error)),
            ("--warn", &args.warn, Some(Severity::Warning)),
            ("--allow", &args.allow, None),
        ] {
            for kind in kinds {
                let Some(known) = checks::kind(kind).map(|k| k.name) else {
                    let mut d = Diagnostic::error(format!(
                        "unknown finding kind `{}` given to `{flag}`",
                        crate::diag::clip(kind)
                    ));
                    if let Some(near) = checks::KINDS
                        .iter()
                        .map(|k| (crate::edit_distance::edit_distance(k.name, kind), k.name))
                        .filter(|(d, _)| *d <= 3)
                        .min()
                    {
                        d = d.help(format!("did you mean `{}`?", near.1));
                    }
                    return Err(d.help(format!(
                        "the kinds are: {} (docs/output.md)",
                        checks::KINDS
                            .iter()
                            .map(|k| k.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                };
                if let Some(other) = given.insert(known, flag)
                    && other != flag
                {
                    return Err(Diagnostic::error(format!(
                        "finding kind `{kind}` is given to both `{other}` and `{flag}`"
                    ))
                    .help("give each kind one level"));
                }
                levels.insert(known, level);
            }
        }
        Ok(Levels(levels))
    }

    pub(crate) fn apply(&self, findings: &mut Vec<Finding>) {
        if self.0.is_empty() {
            return;
        }
        findings.retain_mut(|f| match self.0.get(f.kind) {
            None => true,
            Some(None) => false,
            Some(Some(severity)) => {
                f.severity = *severity;
                true
            }
        });
    }
}

/// Hands the heap's free memory back to the operating system. Decoding
/// and linking free most of what they allocate (every body is decoded,
/// checked and dropped, twice), but the C allocator keeps freed memory in
/// its arenas: trimmed, the analysis that follows starts from the memory
/// the program holds, which lowers the run's peak (docs/performance.md,
/// "Bodies decoded on demand").
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free memory of the allocator's
    // arenas to the system; it takes no pointer and is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}
