//! `kanalyze stack DUMPS... --objects PATH... [--limit BYTES] [--frame-limit
//! BYTES] [--format text|json|sarif]`: the worst-case stack depth of every
//! function C can call (crates/stack, docs/stack.md).

use std::collections::HashSet;
use std::io::{self, BufWriter, Write};

use findings::{Finding, Severity};
use program::{FnId, FnKind, Program, RootReason};
use stack::depth::Step;
use stack::frames::{CStack, Frame};
use stack::objects::{Frames, arch_name, return_address_bytes, target_arch};
use stack::{Analysis, Limits, Root};

use super::check::{Judged, Verdict};
use crate::cli::{AnalysisArgs, Format, Profile, StackArgs};
use crate::diag::Diagnostic;
use crate::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};

/// Exit status when a limit is exceeded (an error-level finding).
pub const EXIT_EXCEEDED: u8 = 1;

/// The analysis settings `config` and the levels read, made from the
/// stack command's own flags (`AnalysisArgs` with its defaults otherwise).
fn analysis_args(args: &StackArgs) -> AnalysisArgs {
    #[derive(clap::Parser)]
    struct Defaults {
        #[command(flatten)]
        analysis: AnalysisArgs,
    }
    let mut a = <Defaults as clap::Parser>::parse_from(["kanalyze"]).analysis;
    a.specs = args.specs.clone();
    a.profile = args.profile;
    a.include_upstream = args.include_upstream;
    a.source_roots = args.source_roots.clone();
    a.deny = args.deny.clone();
    a.warn = args.warn.clone();
    a.allow = args.allow.clone();
    a.config = args.config.clone();
    a
}

/// Everything a run computed.
pub(crate) struct StackRun {
    pub program: Program,
    pub objects: Frames,
    pub analysis: Analysis,
    /// After the levels, without those entirely in upstream code unless
    /// `--include-upstream`, in a stable order.
    pub findings: Vec<Finding>,
    pub upstream_hidden: usize,
    /// Inputs (objects, dumps) that could not be used: the result is incomplete.
    pub input_errors: usize,
    /// What a C function no `[stack]` entry names was taken to use, and
    /// where that came from.
    pub c_default: Option<(u64, String)>,
    /// Functions that would be roots but that no object defines (their
    /// crate's objects were read): left out.
    pub not_emitted: usize,
}

pub fn run(args: &StackArgs) -> u8 {
    let mut analysis = analysis_args(args);
    let config = match crate::config::resolve(&mut analysis) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let format = args
        .format
        .or(config.format.as_ref().map(|(f, _)| *f))
        .unwrap_or(Format::Text);
    let baseline_path = args
        .baseline
        .clone()
        .or_else(|| config.baseline.as_ref().map(|(p, _)| p.clone()));
    let triage_path = args
        .triage
        .clone()
        .or_else(|| config.triage.as_ref().map(|(p, _)| p.clone()));
    // Read before the analysis: a bad baseline or triage file is a usage
    // error, found fast.
    let baseline = match &baseline_path {
        Some(p) => match super::check::Baseline::load(p) {
            Ok(b) => Some(b),
            Err(d) => {
                d.emit();
                return EXIT_BAD_INPUT;
            }
        },
        None => None,
    };
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
    let limits = Limits {
        depth: args
            .limit
            .or(config.stack.limit.as_ref().map(|(v, _)| *v))
            .unwrap_or(stack::DEFAULT_LIMIT),
        frame: args
            .frame_limit
            .or(config.stack.frame_limit.as_ref().map(|(v, _)| *v))
            .unwrap_or(stack::DEFAULT_FRAME_LIMIT),
    };
    let c_default = match (args.c_default, &config.stack.c_default) {
        (Some(v), _) => Some((v, "--c-default".to_string())),
        (None, Some((v, o))) => Some((*v, o.0.clone())),
        (None, None) => None,
    };
    let Some(run) = compute(&args.paths, &args.objects, &analysis, limits, c_default) else {
        return EXIT_BAD_INPUT;
    };
    let all: Vec<&Finding> = run.findings.iter().collect();
    let (shown, known): (Vec<&Finding>, Vec<&Finding>) = match &baseline {
        Some(b) => all
            .into_iter()
            .partition(|f| !b.ids.contains(&report::stable_id(&run.program, f))),
        None => (all, Vec::new()),
    };
    let (shown, triaged, suppressed) = match &triage {
        Some(t) => {
            let (f, o, s) = super::check::apply_triage(&run.program, shown, t);
            (f, Some(o), s)
        }
        None => (Judged::none(shown), None, Vec::new()),
    };
    // Text and SARIF show a verdict as a note of its finding (the page
    // shows it apart).
    let noted: Vec<Finding> = shown.iter().map(Judged::noted).collect();
    if let Some(dir) = &args.html
        && let Err(code) = html(
            &run,
            &shown,
            dir,
            &analysis,
            baseline.as_ref().map(|b| &b.ids),
            &triage,
        )
    {
        return code;
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = match format {
        Format::Text => text(
            &run,
            &noted,
            known.len(),
            &triaged,
            args,
            &analysis,
            &mut out,
        ),
        Format::Json => json(&run, &shown, &suppressed, known.len(), &triaged, &mut out),
        Format::Sarif => {
            let state = |s: &'static str| baseline.is_some().then_some(s);
            let mut items: Vec<report::SarifItem<'_>> = noted
                .iter()
                .map(|f| report::SarifItem {
                    finding: f,
                    baseline: state("new"),
                    suppression: None,
                })
                .collect();
            items.extend(known.iter().map(|f| report::SarifItem {
                finding: f,
                baseline: state("unchanged"),
                suppression: None,
            }));
            items.extend(suppressed.iter().filter_map(|j| {
                let v = j.triage.as_ref()?;
                Some(report::SarifItem {
                    finding: &j.finding,
                    baseline: state("new"),
                    suppression: Some((v.entry.verdict.as_str().to_string(), v.entry.judged())),
                })
            }));
            let log = report::to_sarif(
                &run.program,
                &items,
                checks::KINDS,
                env!("CARGO_PKG_VERSION"),
            );
            serde_json::to_writer_pretty(&mut out, &log)
                .map_err(io::Error::other)
                .and_then(|()| writeln!(out))
        }
    }
    .and_then(|()| out.flush());
    let code = if super::output_failed(result) {
        EXIT_FAILURE
    } else if run.input_errors > 0 {
        // An object that could not be read makes the result inconclusive,
        // which must not read as "under the limits".
        EXIT_BAD_INPUT
    } else if shown.iter().any(|j| j.finding.severity == Severity::Error) {
        EXIT_EXCEEDED
    } else {
        EXIT_OK
    };
    // The process ends here: the OS takes the memory back.
    std::mem::forget(run);
    code
}

/// Loads the dumps and the objects and walks the program; `None` after a
/// diagnostic when the dumps, the spec files or the settings are unusable
/// or no object has frame sizes. Unreadable objects are reported and
/// counted (`input_errors`); the rest are used.
pub(crate) fn compute(
    paths: &[std::path::PathBuf],
    object_paths: &[std::path::PathBuf],
    args: &AnalysisArgs,
    limits: Limits,
    c_default: Option<(u64, String)>,
) -> Option<StackRun> {
    let (levels, user_specs) = crate::pipeline::levels_and_specs(args)?;
    // As `check` loads them: host crates are left out, and `--profile
    // kernel` prefers the kernel target's dumps.
    let (program, load) = crate::input::load_program_with(
        paths,
        &crate::progress::Progress::none(),
        None,
        args.profile == Some(Profile::Kernel),
    )?;
    // The objects are read while the spec, the annotations and the
    // callbacks are made.
    let (objects, (spec, annotations)) = rayon::join(
        || stack::objects::read(object_paths),
        || {
            let profile = match args.profile {
                Some(p) => p,
                None => crate::pipeline::detect_profile(&program).0,
            };
            let mut spec = match profile {
                Profile::Kernel => spec::Spec::builtin_kernel(),
                Profile::Userspace => spec::Spec::userspace(),
                Profile::Embedded => spec::Spec::embedded(),
            };
            for extra in user_specs {
                spec.extend(extra);
            }
            let (annotations, errors) = annotations::collect(
                program
                    .crates
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (i as u32, c.dump.items.as_slice())),
            );
            // `check` reports malformed annotations; here only the one
            // this command reads matters.
            for (_, e) in errors {
                if e.message.contains("kanalyze::recursion_bound") {
                    Diagnostic::warning(format!("{}: the annotation is ignored", e.message))
                        .help(e.help.clone().unwrap_or_default())
                        .emit();
                }
            }
            (spec, annotations)
        },
    );
    let mut objects = objects;
    // A dump that could not be used (reported as it was read) leaves its
    // functions unknown: the result is incomplete, like an unusable object's.
    let mut input_errors = objects.errors.len() + load.skipped.len();
    for e in &objects.errors {
        Diagnostic::error(format!("`{}`: {}", e.name, e.message)).emit();
    }
    // The architecture: the dumps' target's, else (a target JSON) that of
    // most objects defining a function of the program. An object for
    // another one measures another build.
    // Rust functions with a body: a C function of the program (`kmalloc`)
    // may be defined by any C object of the tree, host tools' included.
    let defines = |o: &stack::objects::ObjectFrames| defines(&program, o);
    let arch = program_arch(&program, &objects.objects);
    if let Some((expected, why)) = &arch {
        objects.objects.retain(|o| {
            if o.arch == *expected {
                return true;
            }
            Diagnostic::error(format!(
                "`{}`: an object for {}, but the program is built for {} ({why})",
                o.name,
                arch_name(o.arch),
                arch_name(*expected)
            ))
            .note("its frames are not those of this build; it is not used")
            .emit();
            input_errors += 1;
            false
        });
    }
    // An object that defines functions of the program without frame sizes
    // was built without `-Zemit-stack-sizes`: every one of its frames
    // would be unknown.
    for o in &objects.objects {
        if o.has_sizes {
            continue;
        }
        let n = defines(o);
        if n == 0 {
            continue;
        }
        Diagnostic::error(format!(
            "`{}` has no `{}` section, but defines {n} function{} of the program",
            o.name,
            stack::objects::SECTION,
            if n == 1 { "" } else { "s" }
        ))
        .note("their frames are unknown: the object was built without `-Zemit-stack-sizes`")
        .help("build the Rust code with `-Zemit-stack-sizes` (kernel: `make KRUSTFLAGS=-Zemit-stack-sizes`; cargo: `RUSTFLAGS=-Zemit-stack-sizes`)")
        .emit();
        input_errors += 1;
    }
    if !objects
        .objects
        .iter()
        .any(|o| o.has_sizes && defines(o) > 0)
    {
        let d = Diagnostic::error(format!(
            "no object read defines a function of the program with a frame size ({} object{} read)",
            objects.objects.len(),
            if objects.objects.len() == 1 { "" } else { "s" }
        ));
        let d = if objects.objects.is_empty() {
            d.help("`--objects` names object files, archives or directories of them")
        } else {
            d.help("give the objects of the build the dumps come from, compiled with `-Zemit-stack-sizes`")
        };
        d.emit();
        return None;
    }
    let ret = arch.as_ref().map_or(0, |(a, _)| return_address_bytes(*a));
    let c_default = c_default.or_else(|| {
        spec.stack_default()
            .map(|v| (v, "the spec's `[stack] default`".to_string()))
    });
    let c = CStack {
        spec: Some(&spec),
        default: c_default.as_ref().map(|(v, _)| *v),
        su: Some(&objects.su),
    };
    let frames = stack::frames::frames(&program, &objects, &c);
    let mut roots = roots(&program, &annotations, &spec);
    // A root that no object defines is not in the machine code (the code
    // that took its address was optimised away): C cannot call it.
    let before = roots.len();
    roots.retain(|r| frames[r.f.index()] != Frame::Inlined);
    let not_emitted = before - roots.len();
    let analysis = stack::analyse(&program, &annotations, frames, ret, roots, limits);
    for path in &analysis.unused_bounds {
        Diagnostic::warning(format!(
            "`#[kanalyze::recursion_bound]` on `{path}`, which is on no cycle of calls"
        ))
        .note("the bound bounds nothing: remove it, or put it on a function of the recursion")
        .emit();
    }
    let mut findings = analysis.findings.clone();
    levels.apply(&mut findings);
    let before = findings.len();
    if !args.include_upstream {
        findings.retain(|f| !crate::pipeline::entirely_upstream(&program, f));
    }
    let upstream_hidden = before - findings.len();
    sort(&program, &mut findings);
    Some(StackRun {
        program,
        objects,
        analysis,
        findings,
        upstream_hidden,
        input_errors,
        c_default,
        not_emitted,
    })
}

/// The number of the program's Rust functions with a body that object `o`
/// defines (a C function of the program, `kmalloc`, may be defined by any
/// C object of the tree, host tools' included).
fn defines(program: &Program, o: &stack::objects::ObjectFrames) -> usize {
    o.functions
        .iter()
        .filter(|(s, _)| {
            program
                .lookup(s)
                .is_some_and(|f| matches!(program.function(f).kind, FnKind::Body { .. }))
        })
        .count()
}

/// The architecture the program is built for, and why: the dumps'
/// target's, else (a target JSON) that of most objects defining a function
/// of the program.
fn program_arch(
    program: &Program,
    objects: &[stack::objects::ObjectFrames],
) -> Option<(stack::objects::Architecture, String)> {
    let target = program
        .crates
        .iter()
        .map(|c| c.dump.header.target.as_str())
        .find(|t| target_arch(t).is_some());
    match target.and_then(target_arch) {
        Some(a) => Some((
            a,
            format!("the dumps are for `{}`", target.unwrap_or_default()),
        )),
        None => {
            let mut counts: Vec<(stack::objects::Architecture, usize)> = Vec::new();
            for o in objects {
                let n = defines(program, o);
                if n == 0 {
                    continue;
                }
                match counts.iter_mut().find(|(a, _)| *a == o.arch) {
                    Some(c) => c.1 += n,
                    None => counts.push((o.arch, n)),
                }
            }
            counts
                .iter()
                .max_by_key(|(_, n)| *n)
                .map(|(a, _)| (*a, "most objects are".to_string()))
                .map(|(a, why)| (a, format!("{why} for {}", arch_name(a))))
        }
    }
}

/// File, line, column, kind, message: the order the findings are shown in.
fn sort(program: &Program, findings: &mut [Finding]) {
    findings.sort_by_cached_key(|f| {
        let (file, line, col) = match f.primary {
            Some(l) => (
                program
                    .crates
                    .get(l.krate as usize)
                    .and_then(|c| c.dump.file(l.span.file))
                    .unwrap_or("")
                    .to_string(),
                l.span.lo_line,
                l.span.lo_col,
            ),
            None => (String::new(), 0, 0),
        };
        (file, line, col, f.kind, f.message.clone())
    });
}

/// The functions C can call: callbacks registered with C (an IRQ handler
/// among them), exported functions, functions whose address is in a
/// static, and functions whose address leaves the program with nothing in
/// it calling them. The first reason found names a root.
fn roots(
    program: &Program,
    annotations: &std::collections::HashMap<String, annotations::ItemAnnotations>,
    spec: &spec::Spec,
) -> Vec<Root> {
    let invariants = invariants::Resolved::default();
    let input = checks::Input {
        program,
        annotations,
        spec,
        invariants: &invariants,
        trace: None,
        progress: None,
        step_budget: analysis::STEP_BUDGET,
    };
    let mut out: Vec<Root> = Vec::new();
    let mut seen: HashSet<FnId> = HashSet::new();
    let has_body = |f: FnId| matches!(program.function(f).kind, FnKind::Body { .. });
    for cb in checks::callback_roots(&input) {
        if has_body(cb.callback) && seen.insert(cb.callback) {
            out.push(Root {
                f: cb.callback,
                why: format!("{}: {}", cb.how, cb.role),
                site: Some(cb.site),
                irq: cb.hardirq,
            });
        }
    }
    for (f, why) in &program.roots {
        if !has_body(*f) || !seen.insert(*f) {
            continue;
        }
        out.push(Root {
            f: *f,
            why: match why {
                RootReason::Exported => "exported".to_string(),
                RootReason::InStatic { path } => format!("its address is in static `{path}`"),
                RootReason::VtableInStatic { path } => {
                    format!("a method of the vtable in static `{path}`")
                }
            },
            site: None,
            irq: false,
        });
    }
    for &f in &program.address_taken {
        if has_body(f) && program.callers(f).is_empty() && seen.insert(f) {
            out.push(Root {
                f,
                why: "its address is taken and nothing in the program calls it".to_string(),
                site: None,
                irq: false,
            });
        }
    }
    out
}

/// One line per path step of the text output that adds to the depth (a
/// function inlined into its caller adds nothing: the calls below it are
/// its caller's), with where it is called, the file relative to a source
/// root.
fn path_lines(run: &StackRun, r: &stack::RootDepth, roots: &[std::path::PathBuf]) -> Vec<String> {
    let program = &run.program;
    let walk = &run.analysis.walk;
    let mut depth: u64 = 0;
    let mut out = Vec::new();
    for step in &r.path {
        depth = depth.saturating_add(walk.step_bytes(step));
        let f = step.function();
        if matches!(step, Step::Call { .. })
            && walk.frames[f.index()] == Frame::Inlined
            && step.from().is_some()
        {
            continue;
        }
        let frame = match step {
            Step::Cycle { .. } => format!("≤{} recursion", walk.step_bytes(step)),
            Step::Call { .. } => match &walk.frames[f.index()] {
                Frame::Own(b) => format!("{b}"),
                Frame::Inlined => "inlined".to_string(),
                Frame::C { bytes, .. } => format!("{bytes} C"),
                Frame::Unknown(_) => "unknown".to_string(),
            },
        };
        let at = match step.from() {
            Some((caller, edge)) => program.span_text(caller, edge.span),
            None => program
                .body_of(f)
                .map(|(_, inst)| program.span_text(f, inst.span))
                .unwrap_or_default(),
        };
        let at = roots
            .iter()
            .find_map(|root| {
                std::path::Path::new(&at)
                    .strip_prefix(root)
                    .ok()
                    .map(|p| p.display().to_string())
            })
            .unwrap_or(at);
        out.push(format!(
            "  {depth:>8}  {frame:>16}  {}  {at}",
            program.function(f).name
        ));
    }
    out
}

fn text(
    run: &StackRun,
    shown: &[Finding],
    known: usize,
    triaged: &Option<crate::triage::Outcome>,
    args: &StackArgs,
    analysis: &AnalysisArgs,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut sources = report::Sources::default();
    sources.roots = analysis.source_roots.clone();
    if let Ok(cwd) = std::env::current_dir() {
        sources.roots.push(cwd);
    }
    for f in shown {
        write!(out, "{}", report::render(&run.program, f, &mut sources))?;
    }
    let a = &run.analysis;
    let n = a.roots.len().min(args.shown_roots);
    if n > 0 {
        writeln!(
            out,
            "the {n} deepest of {} root{} (limit {} bytes; depth, frame and function, where it is called):",
            a.roots.len(),
            if a.roots.len() == 1 { "" } else { "s" },
            a.limits.depth
        )?;
        for r in a.roots.iter().take(n) {
            let name = &run.program.function(r.root.f).name;
            let mut extra = Vec::new();
            if !r.unbounded.is_empty() {
                extra.push("unbounded: reaches a cycle".to_string());
            }
            if !r.unknown.is_empty() {
                extra.push(format!(
                    "{} unknown frame{} reachable",
                    r.unknown.len(),
                    if r.unknown.len() == 1 { "" } else { "s" }
                ));
            }
            writeln!(
                out,
                "{:>10} bytes  {name} ({}){}",
                r.depth,
                r.root.why,
                if extra.is_empty() {
                    String::new()
                } else {
                    format!("; {}", extra.join("; "))
                }
            )?;
            for line in path_lines(run, r, &sources.roots) {
                writeln!(out, "{line}")?;
            }
        }
    }
    writeln!(out, "{}", summary_line(run, shown, known, triaged))
}

/// The last line: findings, roots, the deepest, frames over the limit,
/// unknown frames, what was read.
fn summary_line(
    run: &StackRun,
    shown: &[Finding],
    known: usize,
    triaged: &Option<crate::triage::Outcome>,
) -> String {
    let a = &run.analysis;
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut line = format!(
        "kanalyze: {}; {}",
        report::summary_line(shown),
        plural(a.roots.len(), "root", "roots")
    );
    if run.not_emitted > 0 {
        line.push_str(&format!(
            " ({} no object defines left out)",
            plural(run.not_emitted, "function", "functions")
        ));
    }
    if let Some(r) = a.roots.first() {
        line.push_str(&format!(
            ", the deepest {} bytes (limit {})",
            r.depth, a.limits.depth
        ));
    }
    let over = a
        .walk
        .frames
        .iter()
        .filter(|f| matches!(f, Frame::Own(b) if *b > a.limits.frame))
        .count();
    line.push_str(&format!(
        "; {} over {} bytes",
        plural(over, "frame", "frames"),
        a.limits.frame
    ));
    let mut unknown: Vec<FnId> = a
        .roots
        .iter()
        .flat_map(|r| r.unknown.iter().copied())
        .collect();
    unknown.sort();
    unknown.dedup();
    if !unknown.is_empty() {
        line.push_str(&format!(
            "; {} reachable",
            plural(unknown.len(), "unknown frame", "unknown frames")
        ));
    }
    if let Some((bytes, from)) = &run.c_default {
        let mut assumed: Vec<FnId> = a
            .roots
            .iter()
            .flat_map(|r| r.assumed.iter().copied())
            .collect();
        assumed.sort();
        assumed.dedup();
        if !assumed.is_empty() {
            line.push_str(&format!(
                "; {} taken to use {bytes} bytes ({from})",
                plural(assumed.len(), "C function", "C functions")
            ));
        }
    }
    if known > 0 {
        line.push_str(&format!(
            "; {} in the baseline not shown",
            plural(known, "known finding", "known findings")
        ));
    }
    if let Some(t) = triaged {
        line.push_str(&format!("; {} judged findings not shown", t.hidden));
        if t.bugs > 0 {
            line.push_str(&format!(", {} judged a bug", t.bugs));
        }
        if t.reexamine > 0 {
            line.push_str(&format!(
                ", {} changed since judged (re-examine)",
                t.reexamine
            ));
        }
    }
    if run.upstream_hidden > 0 {
        line.push_str(&format!(
            "; {} entirely in upstream code not shown (--include-upstream)",
            plural(run.upstream_hidden, "finding", "findings")
        ));
    }
    let o = &run.objects;
    let members = o.objects.iter().filter(|x| x.name.ends_with(')')).count();
    line.push_str(&format!(
        "; read {}",
        plural(o.objects.len(), "object", "objects")
    ));
    if members > 0 {
        line.push_str(&format!(
            " ({} of {})",
            plural(members, "archive member", "archive members"),
            plural(o.archives, "archive", "archives")
        ));
    }
    if o.su_files > 0 {
        line.push_str(&format!(
            ", {}",
            plural(o.su_files, ".su file", ".su files")
        ));
    }
    if run.input_errors > 0 {
        line.push_str(&format!(
            ", {} could not be used",
            plural(run.input_errors, "input", "inputs")
        ));
    }
    line
}

#[derive(serde::Serialize)]
struct JsonSummary {
    roots: usize,
    /// Functions that would be roots but are not in the objects (the code
    /// that took their address was optimised away).
    roots_not_emitted: usize,
    deepest: Option<u64>,
    limit: u64,
    frame_limit: u64,
    errors: usize,
    warnings: usize,
    frames_over_limit: usize,
    objects: usize,
    su_files: usize,
    /// Objects and other inputs that could not be used.
    input_errors: usize,
    /// What a C function no `[stack]` entry names was taken to use.
    c_default: Option<u64>,
    /// The bytes each call adds for its return address.
    return_address_bytes: u64,
    /// The program's functions by what their call adds: a frame of their
    /// own, nothing (inlined), a C function's usage, an unknown frame.
    functions: JsonFrameKinds,
    upstream_hidden: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    baselined: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    triage: Option<crate::triage::Outcome>,
}

#[derive(serde::Serialize, Default)]
struct JsonFrameKinds {
    own: usize,
    inlined: usize,
    c: usize,
    unknown: usize,
}

#[derive(serde::Serialize)]
struct JsonDoc {
    /// The version of `check --format json` whose findings this shares, so
    /// that a run's output is a baseline for the next.
    version: u32,
    findings: Vec<report::JsonFinding>,
    roots: Vec<stack::json::JsonRoot>,
    /// Every frame over the frame limit, whatever the levels, baseline
    /// and triage hide of the findings.
    large_frames: Vec<stack::json::LargeFrame>,
    summary: JsonSummary,
}

fn json(
    run: &StackRun,
    shown: &[Judged],
    suppressed: &[Judged],
    known: usize,
    triaged: &Option<crate::triage::Outcome>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let a = &run.analysis;
    let count = |s| shown.iter().filter(|j| j.finding.severity == s).count();
    // The findings shown, then those a verdict hides, each with its
    // verdict (as `check` writes them).
    let doc = JsonDoc {
        version: super::check::JSON_VERSION,
        findings: shown
            .iter()
            .chain(suppressed)
            .map(|j| {
                let mut f = report::to_json(&run.program, &j.finding);
                f.triage = j.triage.as_ref().map(Verdict::json);
                f
            })
            .collect(),
        roots: stack::json::roots(&run.program, a),
        large_frames: stack::json::large_frames(&run.program, a),
        summary: JsonSummary {
            roots: a.roots.len(),
            roots_not_emitted: run.not_emitted,
            deepest: a.roots.first().map(|r| r.depth),
            limit: a.limits.depth,
            frame_limit: a.limits.frame,
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            frames_over_limit: a
                .walk
                .frames
                .iter()
                .filter(|f| matches!(f, Frame::Own(b) if *b > a.limits.frame))
                .count(),
            objects: run.objects.objects.len(),
            su_files: run.objects.su_files,
            input_errors: run.input_errors,
            c_default: run.c_default.as_ref().map(|(v, _)| *v),
            return_address_bytes: a.walk.ret,
            functions: a
                .walk
                .frames
                .iter()
                .fold(JsonFrameKinds::default(), |mut k, f| {
                    match f {
                        Frame::Own(_) => k.own += 1,
                        Frame::Inlined => k.inlined += 1,
                        Frame::C { .. } => k.c += 1,
                        Frame::Unknown(_) => k.unknown += 1,
                    }
                    k
                }),
            upstream_hidden: run.upstream_hidden,
            baselined: (known > 0).then_some(known),
            triage: triaged.clone(),
        },
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
    writeln!(out)
}

/// `--html DIR`: the findings and each root's stack as one page.
fn html(
    run: &StackRun,
    shown: &[Judged],
    dir: &std::path::Path,
    analysis: &AnalysisArgs,
    baseline: Option<&std::collections::HashSet<String>>,
    triage: &Option<crate::triage::Triage>,
) -> Result<(), u8> {
    use report::html::{Entry, Page, StackRoot, StackStep, StackView};
    let program = &run.program;
    let a = &run.analysis;
    let entries: Vec<Entry<'_>> = shown
        .iter()
        .map(|j| {
            let f = &j.finding;
            let id = report::stable_id(program, f);
            Entry {
                finding: f,
                known: baseline.is_some_and(|ids| ids.contains(&id)),
                triage: triage.as_ref().map(|t| super::report::triaged(t, &id, f)),
            }
        })
        .collect();
    let roots = a
        .roots
        .iter()
        .map(|r| {
            let mut depth = 0u64;
            let steps = r
                .path
                .iter()
                .map(|step| {
                    let adds = a.walk.step_bytes(step);
                    depth = depth.saturating_add(adds);
                    let f = step.function();
                    let (kind, adds) = match step {
                        Step::Cycle { .. } => ("recursion", Some(adds)),
                        Step::Call { .. } => {
                            let frame = &a.walk.frames[f.index()];
                            (frame.kind(), (!frame.is_unknown()).then_some(adds))
                        }
                    };
                    let at = match step.from() {
                        Some((caller, edge)) => match program.function(caller).kind {
                            FnKind::Body { krate, .. } => Some(findings::Loc {
                                krate,
                                span: edge.span,
                            }),
                            _ => None,
                        },
                        None => program.body_of(f).and_then(|(_, inst)| {
                            match program.function(f).kind {
                                FnKind::Body { krate, .. } => Some(findings::Loc {
                                    krate,
                                    span: inst.span,
                                }),
                                _ => None,
                            }
                        }),
                    };
                    StackStep {
                        function: f,
                        adds,
                        depth,
                        kind,
                        at,
                    }
                })
                .collect();
            StackRoot {
                function: r.root.f,
                why: r.root.why.clone(),
                depth: r.depth,
                unbounded: !r.unbounded.is_empty(),
                unknown: r.unknown.len(),
                steps,
            }
        })
        .collect();
    let view = StackView {
        limit: a.limits.depth,
        frame_limit: a.limits.frame,
        roots,
    };
    let mut facts = vec![
        ("roots".to_string(), a.roots.len().to_string()),
        (
            "bytes at the deepest".to_string(),
            a.roots.first().map_or(0, |r| r.depth).to_string(),
        ),
        (
            "bytes of depth limit".to_string(),
            a.limits.depth.to_string(),
        ),
        (
            "objects read".to_string(),
            run.objects.objects.len().to_string(),
        ),
    ];
    if run.input_errors > 0 {
        facts.push((
            "inputs not usable (the result is incomplete)".to_string(),
            run.input_errors.to_string(),
        ));
    }
    facts.push((
        "kanalyze".to_string(),
        env!("CARGO_PKG_VERSION").to_string(),
    ));
    let page = Page {
        title: "kanalyze stack".to_string(),
        entries,
        baseline: baseline.is_some(),
        triage: triage.is_some(),
        facts,
    };
    let mut sources = report::Sources::default();
    sources.roots = analysis.source_roots.clone();
    if let Ok(cwd) = std::env::current_dir() {
        sources.roots.push(cwd);
    }
    let text = report::html::stack_page(program, &page, &view, &mut sources);
    let out = dir.join("index.html");
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&out, &text)) {
        Diagnostic::error(format!("cannot write `{}`: {e}", out.display())).emit();
        return Err(EXIT_FAILURE);
    }
    eprintln!(
        "kanalyze: wrote {} ({} findings, {} roots, {} KiB)",
        out.display(),
        page.entries.len(),
        a.roots.len(),
        text.len().div_ceil(1024)
    );
    Ok(())
}
