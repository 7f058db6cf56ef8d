//! Command line, configuration and the compiler callbacks.

use std::ffi::OsString;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use rustc_driver::Callbacks;
use rustc_interface::interface;
use rustc_middle::ty::TyCtxt;
use rustc_session::config::{CrateType, Input, OutputType};

use crate::timings::{self, Phase};

use crate::out_dir::OUT_VAR;

/// `1`/`true`: a failed extraction fails the compilation.
pub const STRICT_VAR: &str = "KANALYZE_STRICT";
/// Set by `cargo kextract` when the build has an explicit `--target`: cargo
/// then passes `--target` to every unit of the program and none to the units
/// it builds for the host only (build scripts, proc macros and their
/// dependencies, such as `syn`), which therefore are not dumped.
pub const HOST_UNITS_VAR: &str = "KEXTRACT_SKIP_HOST_UNITS";

/// Turns our argv into rustc's argv.
///
/// Under cargo's `RUSTC_WRAPPER`/`RUSTC_WORKSPACE_WRAPPER` the first argument
/// is the real compiler (`…/rustc`); kextract is a compiler itself, so that
/// argument is dropped. Non-UTF-8 arguments are passed on lossily only if
/// rustc would reject them anyway: rustc itself requires UTF-8 arguments.
pub fn compiler_args(args: impl Iterator<Item = OsString>) -> Vec<String> {
    let mut args: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    if args.len() > 1 && is_wrapped_rustc(&args[1]) {
        args.remove(1);
    }
    args
}

fn is_wrapped_rustc(arg: &str) -> bool {
    if arg.starts_with('-') {
        return false;
    }
    let stem = Path::new(arg)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("");
    // `rustc`, `rustc.exe`, `rustc-1.97`, clippy-driver style names are not
    // accepted: only something that is unmistakably a compiler binary.
    (stem == "rustc" || stem.starts_with("rustc-") || stem == "kextract") && !arg.ends_with(".rs")
}

pub fn run(args: Vec<String>) -> i32 {
    let mut callbacks = ExtractCallbacks::from_env();
    let code = rustc_driver::catch_with_exit_code(|| {
        if let Some(extraction) = &mut callbacks.extraction
            && std::env::var_os(HOST_UNITS_VAR).is_some()
        {
            extraction.host_unit = !has_target(&args);
        }
        rustc_driver::run_compiler(&args, &mut callbacks);
    });
    // `ExitCode` is opaque; rustc only ever exits with success or failure.
    if code == std::process::ExitCode::SUCCESS {
        0
    } else {
        1
    }
}

pub struct ExtractCallbacks {
    extraction: Option<Extraction>,
}

/// What a dumping compilation does after its codegen (see `backend.rs`).
#[derive(Clone)]
pub struct Extraction {
    out_dir: PathBuf,
    strict: bool,
    /// A unit cargo builds for the host only (see [`HOST_UNITS_VAR`]).
    host_unit: bool,
}

/// Whether the command line (with `@file` arguments expanded as rustc
/// expands them: cargo uses them for long command lines) names a target.
fn has_target(args: &[String]) -> bool {
    let early = rustc_session::EarlyDiagCtxt::new(Default::default());
    rustc_driver::args::arg_expand_all(&early, args)
        .iter()
        .any(|a| a == "--target" || a.starts_with("--target="))
}

impl ExtractCallbacks {
    fn from_env() -> Self {
        let out_dir = std::env::var_os(OUT_VAR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let strict = std::env::var(STRICT_VAR)
            .map(|v| matches!(v.as_str(), "1" | "true" | "yes"))
            .unwrap_or(false);
        ExtractCallbacks {
            extraction: out_dir.map(|out_dir| Extraction {
                out_dir,
                strict,
                host_unit: false,
            }),
        }
    }
}

impl Callbacks for ExtractCallbacks {
    fn config(&mut self, config: &mut interface::Config) {
        // Tool registration is a query override, so it applies whether or
        // not we dump (without `KANALYZE_OUT` kextract still compiles
        // klint-annotated code that plain rustc would need flags for).
        let Some(extraction) = self.extraction.clone() else {
            config.override_queries = Some(crate::tools::override_queries);
            return;
        };
        // Units that will not be dumped (see `skip_reason` and `host_unit`)
        // are told apart from the command line here, so that they do not pay
        // for the copies of their MIR either.
        let dumped = !extraction.host_unit && !never_dumped(&config.opts);
        config.override_queries = Some(if dumped {
            |sess, providers| {
                crate::tools::override_queries(sess, providers);
                crate::stash::override_queries(sess, providers);
            }
        } else {
            crate::tools::override_queries
        });
        config.make_codegen_backend = Some(Box::new(move |sess| {
            let extraction = extraction.clone();
            Box::new(crate::backend::ExtractingBackend::new(
                sess,
                Box::new(move |tcx| extraction.run(tcx)),
            ))
        }));
    }
}

impl Extraction {
    /// Dumps the crate being compiled, unless it is one that is not dumped.
    /// Runs once the crate's codegen units are with LLVM.
    pub fn run(&self, tcx: TyCtxt<'_>) {
        let out_dir = &self.out_dir;
        let crate_name = tcx.crate_name(rustc_span::def_id::LOCAL_CRATE).to_string();
        let host_only = self
            .host_unit
            .then_some("it is built for the host only (a build script, a proc macro or one of their dependencies)");
        if let Some(reason) = host_only.or_else(|| skip_reason(tcx, &crate_name)) {
            if std::env::var_os("KANALYZE_VERBOSE").is_some() {
                eprintln!("kextract: not dumping crate `{crate_name}`: {reason}");
            }
            return;
        }
        if let Some(problem) = crate::out_dir::unusable(out_dir) {
            self.report(tcx, &crate_name, &problem);
            return;
        }
        let mut instances = 0;
        match extract_guarded(tcx) {
            Ok(dump) => {
                instances = dump.instances.len();
                for name in crate::out_dir::remove_stale_temporaries(out_dir) {
                    if std::env::var_os("KANALYZE_VERBOSE").is_some() {
                        eprintln!(
                            "kextract: removed `{name}`, left in `{}` by a writer that died",
                            out_dir.display()
                        );
                    }
                }
                let path = out_dir.join(dump.file_name());
                if let Err(e) = timings::time(Phase::Write, || kmir::write_file(&dump, &path)) {
                    self.report(
                        tcx,
                        &crate_name,
                        &format!("cannot write `{}`: {e}", path.display()),
                    );
                }
            }
            Err(message) => self.report(tcx, &crate_name, &message),
        }
        timings::report(&crate_name, instances);
    }

    fn report(&self, tcx: TyCtxt<'_>, crate_name: &str, message: &str) {
        if self.strict {
            tcx.dcx().err(format!(
                "kextract: extraction of crate `{crate_name}` failed: {message} ({STRICT_VAR} is set)"
            ));
        } else {
            // Not through the compiler's diagnostics: `-Dwarnings` builds
            // (the kernel's) must not fail because the analysis side failed.
            eprintln!(
                "warning: kextract: extraction of crate `{crate_name}` failed, no dump written: {message}\n  \
                 = note: the compilation itself is unaffected; set {STRICT_VAR}=1 to make this an error"
            );
        }
    }
}

/// Whether the command line alone says that the crate will not be dumped:
/// the cases of [`skip_reason`] known before the compilation starts.
fn never_dumped(opts: &rustc_session::config::Options) -> bool {
    opts.crate_name
        .as_deref()
        .is_some_and(|name| name.starts_with("build_script_"))
        || opts.crate_types.contains(&CrateType::ProcMacro)
        || !opts.output_types.should_codegen()
}

/// Crates that are compiled normally but not dumped, and why.
fn skip_reason(tcx: TyCtxt<'_>, crate_name: &str) -> Option<&'static str> {
    if crate_name.starts_with("build_script_") {
        return Some("it is a build script");
    }
    if tcx.crate_types().contains(&CrateType::ProcMacro) {
        return Some("it is a proc-macro crate (runs inside the compiler, never in the kernel)");
    }
    if !tcx.sess.opts.output_types.should_codegen() {
        return Some("nothing is codegenned (metadata-only or check build)");
    }
    // Build scripts probe the compiler by feeding it a test program on
    // standard input and reading back IR or assembly (autocfg does this,
    // inheriting RUSTC_WRAPPER and KANALYZE_OUT), and kbuild's `rustc-option`
    // compiles one to an object on standard output: such a probe is no crate
    // of the program, and writes no object or executable to a file.
    if matches!(tcx.sess.io.input, Input::Str { .. }) && !writes_code(&tcx.sess.opts.output_types) {
        return Some(
            "it is a compiler probe (read from standard input, no object or executable written to a file)",
        );
    }
    None
}

/// Whether the compilation writes an object or an executable to a file
/// (not to standard output): something a build could link.
fn writes_code(outputs: &rustc_session::config::OutputTypes) -> bool {
    outputs.iter().any(|(kind, file)| {
        matches!(kind, OutputType::Object | OutputType::Exe)
            && !matches!(file, Some(rustc_session::config::OutFileName::Stdout))
    })
}

/// Runs the extraction; a panic inside it (an unexpected compiler state)
/// becomes an error message instead of an ICE of the whole compilation.
///
/// A compiler bug (`bug!`, an ICE) is a diagnostic first and a panic second:
/// rustc prints it and counts it as an error of the session before it
/// unwinds, so catching the panic alone would still fail the build. While
/// extraction runs, [`swallow_bugs`] therefore keeps bug-level diagnostics
/// away from the diagnostic context (nothing printed, nothing counted) and
/// keeps their text for our own message. Every other diagnostic — an error
/// or lint of a query that codegen would run anyway — goes through as usual.
fn extract_guarded(tcx: TyCtxt<'_>) -> Result<kmir::CrateDump, String> {
    // The mono item collection is the compiler's own work that codegen needs
    // too (its errors and lints are the build's): run it outside the guard.
    timings::time(Phase::Collect, || tcx.collect_and_partition_mono_items(()));
    // Extraction runs while LLVM's worker threads compile the crate: only
    // this thread's panics are ours, the others' go to the hook as before.
    let previous_hook: std::sync::Arc<dyn Fn(&panic::PanicHookInfo<'_>) + Send + Sync> =
        std::sync::Arc::from(panic::take_hook());
    let others = previous_hook.clone();
    let extracting = std::thread::current().id();
    let location = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let sink = location.clone();
    panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() != extracting {
            return others(info);
        }
        // The payload is examined after unwinding; only the hook sees where.
        if let (Some(l), Ok(mut slot)) = (info.location(), sink.lock()) {
            *slot = Some(l.to_string());
        }
    }));
    if let Ok(mut bugs) = BUGS.lock() {
        bugs.clear();
    }
    let previous_track = rustc_errors::TRACK_DIAGNOSTIC.swap(&(swallow_bugs as _));
    if let Ok(mut slot) = PREVIOUS_TRACK.lock() {
        *slot = Some(previous_track);
    }
    crate::extract::clear_current_item();
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        rustc_public::rustc_internal::run(tcx, || crate::extract::extract_crate(tcx))
    }));
    rustc_errors::TRACK_DIAGNOSTIC.swap(previous_track);
    panic::set_hook(Box::new(move |info| previous_hook(info)));
    match result {
        Ok(Ok(Ok(dump))) => Ok(dump),
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(e)) => Err(format!("rustc_public could not run: {e:?}")),
        Err(payload) => {
            let what = describe_panic(payload.as_ref());
            // A compiler bug's text already says where it was raised.
            let at = location
                .lock()
                .ok()
                .and_then(|l| l.clone())
                .filter(|_| !payload.is::<rustc_errors::ExplicitBug>())
                .map(|l| format!(" (panicked at {l})"))
                .unwrap_or_default();
            let item = crate::extract::current_item(tcx)
                .map(|i| format!(" while translating {i}"))
                .unwrap_or_default();
            Err(format!("internal error{item}: {what}{at}"))
        }
    }
}

type TrackDiagnostic = fn(
    rustc_errors::DiagInner,
    &mut dyn FnMut(rustc_errors::DiagInner) -> Option<rustc_errors::ErrorGuaranteed>,
) -> Option<rustc_errors::ErrorGuaranteed>;

/// The diagnostic tracker that was installed before extraction (rustc's,
/// for incremental replay); [`swallow_bugs`] hands everything else to it.
static PREVIOUS_TRACK: std::sync::Mutex<Option<&'static TrackDiagnostic>> =
    std::sync::Mutex::new(None);
/// The text of the compiler bugs swallowed during the current extraction.
static BUGS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// `TRACK_DIAGNOSTIC` during extraction: a bug-level diagnostic is recorded
/// and dropped — not passed to `emit`, so it is neither printed nor counted —
/// after which the compiler unwinds with `ExplicitBug` as usual and
/// `extract_guarded` catches it.
fn swallow_bugs(
    diag: rustc_errors::DiagInner,
    emit: &mut dyn FnMut(rustc_errors::DiagInner) -> Option<rustc_errors::ErrorGuaranteed>,
) -> Option<rustc_errors::ErrorGuaranteed> {
    if diag.level() == rustc_errors::Level::Bug {
        let text: Vec<String> = diag
            .messages
            .iter()
            .map(|(m, _)| match m {
                rustc_errors::DiagMessage::Str(s) | rustc_errors::DiagMessage::Inline(s) => {
                    s.to_string()
                }
            })
            .collect();
        if let Ok(mut bugs) = BUGS.lock() {
            bugs.push(text.join(" "));
        }
        return None;
    }
    let previous = PREVIOUS_TRACK.lock().ok().and_then(|p| *p);
    match previous {
        Some(track) => track(diag, emit),
        // Only installed after the previous tracker was stored; emitting
        // directly is what rustc's default tracker does.
        None => emit(diag),
    }
}

/// What a caught panic was, from its payload.
fn describe_panic(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panic: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panic: {s}")
    } else if payload.is::<rustc_errors::ExplicitBug>() {
        let bugs = BUGS.lock().map(|b| b.join("; ")).unwrap_or_default();
        if bugs.is_empty() {
            "the compiler reported a bug (ICE)".to_string()
        } else {
            format!("the compiler reported a bug (ICE): {bugs}")
        }
    } else if payload.is::<rustc_span::fatal_error::FatalErrorMarker>() {
        "the compiler raised a fatal error (reported above)".to_string()
    } else {
        "a panic whose payload is neither a message nor a compiler error marker".to_string()
    }
}
