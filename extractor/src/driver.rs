//! Command line, configuration and the compiler callbacks.

use std::ffi::OsString;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use rustc_driver::{Callbacks, Compilation};
use rustc_interface::interface;
use rustc_middle::ty::TyCtxt;
use rustc_session::config::CrateType;

/// Where dumps go; unset means "behave as plain rustc".
pub const OUT_VAR: &str = "KANALYZE_OUT";
/// `1`/`true`: a failed extraction fails the compilation.
pub const STRICT_VAR: &str = "KANALYZE_STRICT";

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
    out_dir: Option<PathBuf>,
    strict: bool,
}

impl ExtractCallbacks {
    fn from_env() -> Self {
        let out_dir = std::env::var_os(OUT_VAR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let strict = std::env::var(STRICT_VAR)
            .map(|v| matches!(v.as_str(), "1" | "true" | "yes"))
            .unwrap_or(false);
        ExtractCallbacks { out_dir, strict }
    }
}

impl Callbacks for ExtractCallbacks {
    fn config(&mut self, config: &mut interface::Config) {
        // Tool registration is a query override, so it applies whether or
        // not we dump (without `KANALYZE_OUT` kextract still compiles
        // klint-annotated code that plain rustc would need flags for).
        config.override_queries = Some(if self.out_dir.is_some() {
            |sess, providers| {
                crate::tools::override_queries(sess, providers);
                crate::stash::override_queries(sess, providers);
            }
        } else {
            crate::tools::override_queries
        });
    }

    fn after_analysis<'tcx>(
        &mut self,
        _compiler: &interface::Compiler,
        tcx: TyCtxt<'tcx>,
    ) -> Compilation {
        let Some(out_dir) = self.out_dir.clone() else {
            return Compilation::Continue;
        };
        let crate_name = tcx.crate_name(rustc_span::def_id::LOCAL_CRATE).to_string();
        if let Some(reason) = skip_reason(tcx, &crate_name) {
            if std::env::var_os("KANALYZE_VERBOSE").is_some() {
                eprintln!("kextract: not dumping crate `{crate_name}`: {reason}");
            }
            return Compilation::Continue;
        }
        match extract_guarded(tcx) {
            Ok(dump) => {
                let path = out_dir.join(dump.file_name());
                if let Err(e) = kmir::write_file(&dump, &path) {
                    self.report(
                        tcx,
                        &crate_name,
                        &format!("cannot write `{}`: {e}", path.display()),
                    );
                }
            }
            Err(message) => self.report(tcx, &crate_name, &message),
        }
        Compilation::Continue
    }
}

impl ExtractCallbacks {
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
    None
}

/// Runs the extraction; a panic inside it (an unexpected compiler state)
/// becomes an error message instead of an ICE of the whole compilation.
fn extract_guarded(tcx: TyCtxt<'_>) -> Result<kmir::CrateDump, String> {
    let previous_hook = panic::take_hook();
    let message = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let sink = message.clone();
    panic::set_hook(Box::new(move |info| {
        let text = if let Some(s) = info.payload().downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "unknown panic".to_string()
        };
        let location = info
            .location()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        if let Ok(mut slot) = sink.lock() {
            *slot = Some(format!("{text}{location}"));
        }
    }));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        rustc_public::rustc_internal::run(tcx, || crate::extract::extract_crate(tcx))
    }));
    panic::set_hook(previous_hook);
    match result {
        Ok(Ok(Ok(dump))) => Ok(dump),
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(e)) => Err(format!("rustc_public could not run: {e:?}")),
        Err(_) => {
            let detail = message.lock().ok().and_then(|m| m.clone());
            Err(format!(
                "internal error while reading the compiler's MIR: {}",
                detail.unwrap_or_else(|| "panic".into())
            ))
        }
    }
}
