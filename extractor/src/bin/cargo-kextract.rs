//! `cargo kextract [--out DIR] [CARGO BUILD ARGS…]`: builds a cargo project
//! and its whole dependency graph through `kextract`, one dump per crate.
//!
//! It runs `cargo build` with `RUSTC_WRAPPER` pointing at the `kextract`
//! next to this binary (so every crate, dependencies included, is compiled by
//! it), `KANALYZE_OUT` set to the dump directory, and a separate target
//! directory (`target/kextract` unless `CARGO_TARGET_DIR` is set) so that
//! artefacts of ordinary builds are never reused without being extracted.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

const USAGE: &str = "\
usage: cargo kextract [--out DIR] [ARGS…]

Builds the current cargo project with `cargo build ARGS…`, compiling every
crate (dependencies included) through kextract, and writes one kanalyze dump
per crate into DIR (default: <target dir>/kanalyze).

Build scripts and proc-macro crates are compiled normally and not dumped.";

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
    let status = Command::new(cargo)
        .arg("build")
        .args(&rest)
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
