//! `cargo kextract [--out DIR] [CARGO BUILD ARGS…]`: builds a cargo project
//! and its whole dependency graph through `kextract`, one dump per crate.
//!
//! It runs `cargo build` with `RUSTC_WRAPPER` pointing at the `kextract`
//! next to this binary (so every crate, dependencies included, is compiled by
//! it), `KANALYZE_OUT` set to the dump directory, and a separate target
//! directory (`target/kextract` unless `CARGO_TARGET_DIR` is set) so that
//! artefacts of ordinary builds are never reused without being extracted.
//!
//! Crates built only to run on the host — build scripts, proc macros and
//! their dependencies (`syn`, `proc-macro2`, …) — are not part of the
//! program and are not dumped. Cargo keeps them apart only when the build has
//! an explicit target: then it passes `--target` to the program's units and
//! nothing to the host's. So unless the user chose a target (`--target`,
//! `CARGO_BUILD_TARGET`, `build.target` in cargo's configuration) we pass
//! `--target <host>` — the same machine code, in `<target dir>/<host>/` — and
//! tell kextract (`KEXTRACT_SKIP_HOST_UNITS`) to skip units without one.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

const USAGE: &str = "\
usage: cargo kextract [--out DIR] [ARGS…]

Builds the current cargo project with `cargo build ARGS…`, compiling every
crate (dependencies included) through kextract, and writes one kanalyze dump
per crate into DIR (default: <target dir>/kanalyze).

Build scripts, proc-macro crates and crates built only for them (for the
host) are compiled normally and not dumped. Without a target of your own
(`--target`, CARGO_BUILD_TARGET, build.target), the build is for
`--target <host>`, so its artefacts are under <target dir>/<host triple>/.";

/// Tells kextract to skip the units cargo builds for the host (kept equal to
/// `driver::HOST_UNITS_VAR`).
const HOST_UNITS_VAR: &str = "KEXTRACT_SKIP_HOST_UNITS";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // As a cargo subcommand, cargo passes our own name first.
    if args.first().map(String::as_str) == Some("kextract") {
        args.remove(0);
    }
    let mut out: Option<PathBuf> = None;
    let mut rest = Vec::new();
    let mut iter = args.into_iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--out" => match iter.next() {
                Some(dir) => out = Some(PathBuf::from(dir)),
                None => {
                    eprintln!("error: `--out` needs a directory\n\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            _ if arg.starts_with("--out=") => out = Some(PathBuf::from(&arg["--out=".len()..])),
            _ => rest.push(arg),
        }
    }

    let kextract = match std::env::current_exe() {
        Ok(me) => me.with_file_name(format!("kextract{}", std::env::consts::EXE_SUFFIX)),
        Err(e) => {
            eprintln!("error: cannot locate this executable to find `kextract` next to it: {e}");
            return ExitCode::from(2);
        }
    };
    if !kextract.is_file() {
        eprintln!(
            "error: `{}` does not exist: build the extractor (`cargo build --manifest-path extractor/Cargo.toml`) so both binaries sit side by side",
            kextract.display()
        );
        return ExitCode::from(2);
    }

    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target").join("kextract"));
    let out = out.unwrap_or_else(|| target_dir.join("kanalyze"));
    let out = match std::path::absolute(&out) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: invalid output directory `{}`: {e}", out.display());
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!(
            "error: cannot create the dump directory `{}`: {e}",
            out.display()
        );
        return ExitCode::from(2);
    }

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut extra = Vec::new();
    let separate_host = match chosen_target(&cargo, &rest) {
        Ok(true) => true,
        Ok(false) => match host_triple(&kextract) {
            Ok(host) => {
                extra = vec!["--target".to_string(), host];
                true
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        },
        Err(e) => {
            eprintln!(
                "warning: cargo kextract: cannot tell whether the build has a target of its own ({e}); \
                 building without an explicit target, so crates built only for proc macros and build \
                 scripts are dumped with the program's"
            );
            false
        }
    };
    let mut command = Command::new(&cargo);
    command.arg("build").args(&extra).args(&rest);
    if separate_host {
        command.env(HOST_UNITS_VAR, "1");
    } else {
        command.env_remove(HOST_UNITS_VAR);
    }
    let status = command
        .env("RUSTC_WRAPPER", &kextract)
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env("KANALYZE_OUT", &out)
        .env("CARGO_TARGET_DIR", &target_dir)
        .status();
    match status {
        Ok(s) if s.success() => {
            eprintln!("kextract: dumps are in {}", out.display());
            ExitCode::SUCCESS
        }
        Ok(s) => ExitCode::from(u8::try_from(s.code().unwrap_or(1)).unwrap_or(1)),
        Err(e) => {
            eprintln!("error: cannot run cargo: {e}");
            ExitCode::from(2)
        }
    }
}

/// Whether the user chose a target: on the command line, or in cargo's
/// configuration as cargo itself resolves it (files, `CARGO_BUILD_TARGET`,
/// `--config`). `Err` when cargo cannot answer.
fn chosen_target(cargo: &std::ffi::OsStr, args: &[String]) -> Result<bool, String> {
    // Arguments after `--` belong to the program run by some cargo commands,
    // never to `cargo build`'s options.
    let options = args.iter().take_while(|a| a.as_str() != "--");
    let mut config_args = Vec::new();
    let mut iter = options.peekable();
    while let Some(arg) = iter.next() {
        if arg == "--target" || arg.starts_with("--target=") {
            return Ok(true);
        }
        if arg == "--config" {
            if let Some(value) = iter.next() {
                config_args.push("--config".to_string());
                config_args.push(value.clone());
            }
        } else if arg.starts_with("--config=") {
            config_args.push(arg.clone());
        }
    }
    // `cargo config get` is unstable; `RUSTC_BOOTSTRAP=1` lets a stable
    // cargo answer it. It reads the configuration exactly as the build will
    // (same directory, environment and `--config` values).
    let output = Command::new(cargo)
        .args(["-Zunstable-options", "config", "get", "build.target"])
        .args(["--format", "json-value"])
        .args(&config_args)
        .env("RUSTC_BOOTSTRAP", "1")
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if output.status.success() {
        return Ok(true);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("is not set") {
        Ok(false)
    } else {
        Err(format!(
            "`cargo config get build.target` failed: {}",
            stderr.trim()
        ))
    }
}

/// The host triple of the compiler kextract is (`kextract -vV`, as cargo
/// asks rustc).
fn host_triple(kextract: &std::path::Path) -> Result<String, String> {
    let output = Command::new(kextract)
        .arg("-vV")
        .output()
        .map_err(|e| format!("cannot run `{} -vV`: {e}", kextract.display()))?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("`{} -vV` names no host", kextract.display()))
}
