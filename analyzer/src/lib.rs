//! `kanalyze`: whole-program analyses over the per-crate MIR dumps that
//! `kextract` writes.
//!
//! The binary is a thin shell over this library so that integration tests
//! (and later subcommands) can reach the loader and the printer directly.
//!
//! Modules:
//!
//! * `cli` and `commands/`: the subcommands. `check` (the default; finding
//!   levels `--deny/--warn/--allow KIND` applied to the checks' findings,
//!   `--baseline` filtering by stable id), `build-error` (crates/build_error),
//!   `stack` (crates/stack: the dumps, the objects' frame sizes, the spec's
//!   `[stack]` table, `kanalyze.toml`'s `[stack]` limits; levels, baseline and
//!   triage as `check`'s), `summary` (`summary::describe`, also the HTML
//!   report's summaries), `report --html OUT/`, `graph`, `dump`, `triage`,
//!   `explain`.
//! * `input`: finds and loads the dumps (lazily, largest first on every
//!   thread, one buffer per thread; with the cache, each dump's bytes hashed
//!   and its per-dump entry recalled), and names the build's host crates the
//!   link left out and the missing crates (a dependency a dump records, not
//!   from the sysroot, without a dump), which make the result partial when the
//!   program calls into them.
//! * `pipeline`: links the dumps (then hands the heap memory the load freed
//!   back to the system) and runs the checks; the profile (`kernel` or
//!   `userspace`, detected or given) decides the built-in spec; findings
//!   entirely in upstream code are counted, shown with `--include-upstream`.
//! * `cache`: the solve through the summary cache unless `--no-cache`, and the
//!   per-dump cache.
//! * `config`: `kanalyze.toml` (miette errors), merged under the flags, saying
//!   how it was found.
//! * `diag`: bounds every error printed (quoted input clipped, snippets
//!   windowed, lines and line counts cut).
//! * `triage` (with `commands/triage.rs`): reads and updates the triage file
//!   through `safe_write`.
//! * `progress`: the progress bar (indicatif; fed by `solver::solve_observed`
//!   through `analysis::Input::progress`); `timings`: the hidden `--timings`
//!   (each phase's wall-clock and CPU time); `print`: the output formats.
//! * Leaves the others share, importing nothing of the crate: `level` (a
//!   finding kind's level), `edit_distance` (did-you-mean suggestions),
//!   `kernel_target` (whether a dump was built for the kernel),
//!   `user_file` (reading a file the user names).
//! * `lock_apis`: the lock APIs and blocking calls of the profile's spec
//!   the program uses, named in the summary (or that none was seen).
//!
//! `pipeline`'s audit (`--audit-invariants`) reruns the analysis once per
//! declaration left out, side by side; each solves again only what the
//! declaration reaches (`analysis::solve_again`) and reads the program
//! through one walk (`checks::check_walked`).

pub mod cache;
pub mod cli;
pub mod commands;
pub mod config;
pub mod diag;
pub mod edit_distance;
pub mod input;
pub mod kernel_target;
pub mod level;
pub mod lock_apis;
pub mod pipeline;
pub mod print;
pub mod progress;
pub mod timings;
pub mod triage;
pub mod user_file;

use std::process::ExitCode;

use clap::Parser;

/// Everything went fine.
pub const EXIT_OK: u8 = 0;
/// Writing the output failed for a reason other than a closed pipe.
pub const EXIT_FAILURE: u8 = 1;
/// Bad input: usage errors (clap uses 2 too), unreadable or invalid dumps,
/// nothing matched.
pub const EXIT_BAD_INPUT: u8 = 2;

/// The entry point of the `kanalyze` binary.
pub fn run() -> ExitCode {
    let start = timings::mark();
    let cli = match cli::Cli::try_parse_from(with_default_command(std::env::args_os().collect())) {
        Ok(cli) => cli,
        Err(e) => {
            // `Error::exit` would print with `print!`, which panics on a
            // closed stdout (`kanalyze --help | head -0`).
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let code = match &cli.command {
        cli::Command::Check(args) => commands::check::run(args),
        cli::Command::Summary(args) => commands::summary::run(args),
        cli::Command::Dump(args) => commands::dump::run(args),
        cli::Command::Graph(args) => commands::graph::run(args),
        cli::Command::Explain(args) => commands::explain::run(args),
        cli::Command::Triage(args) => commands::triage::run(args),
        cli::Command::Report(args) => commands::report::run(args),
        cli::Command::BuildError(args) => commands::build_error::run(args),
        cli::Command::Stack(args) => commands::stack::run(args),
    };
    let timings = match &cli.command {
        cli::Command::Check(args) => args.analysis.timings,
        cli::Command::Summary(args) => args.analysis.timings,
        cli::Command::Triage(args) => args.analysis.timings,
        cli::Command::Report(args) => args.analysis.timings,
        _ => false,
    };
    if timings {
        timings::print(start);
    }
    ExitCode::from(code)
}

/// `kanalyze DIR…` means `kanalyze check DIR…`: insert the subcommand when
/// no subcommand is given. Check's own flags may come before the path
/// (`kanalyze --format json DIR`) as well as after it, so the first
/// argument that is not an option (or an option's value) decides: a
/// subcommand's name leaves the arguments as they are, with options
/// before it moved after it; anything else gets `check` in front.
/// `--help` and `--version` first are the top-level ones.
fn with_default_command(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    const COMMANDS: &[&str] = &[
        "check",
        "summary",
        "dump",
        "graph",
        "explain",
        "triage",
        "report",
        "build-error",
        "stack",
        "help",
    ];
    const TOP_LEVEL: &[&str] = &["-h", "--help", "-V", "--version"];
    // The options of `check` that take a value as the next argument.
    const TAKES_VALUE: &[&str] = &[
        "--format",
        "--baseline",
        "--spec",
        "--source-root",
        "--deny",
        "--warn",
        "--allow",
        "--trace",
        "--invariants",
        "--config",
        "--triage",
        "--profile",
    ];
    let Some(first) = args.get(1).and_then(|a| a.to_str()) else {
        return args;
    };
    if TOP_LEVEL.contains(&first) {
        return args;
    }
    // rustc's spelling: `kanalyze --explain KIND`.
    if first == "--explain" {
        args[1] = "explain".into();
        return args;
    }
    if let Some(kind) = first.strip_prefix("--explain=") {
        let kind = kind.to_string();
        args.splice(1..2, ["explain".into(), kind.into()]);
        return args;
    }
    let mut i = 1;
    while let Some(arg) = args.get(i).and_then(|a| a.to_str()) {
        if arg == "--" || !arg.starts_with('-') {
            break;
        }
        i += if TAKES_VALUE.contains(&arg) { 2 } else { 1 };
    }
    match args.get(i).and_then(|a| a.to_str()) {
        Some(command) if COMMANDS.contains(&command) => {
            if i > 1 {
                // `kanalyze --format json check DIR`: the options belong
                // to the subcommand.
                let command = args.remove(i);
                args.insert(1, command);
            }
        }
        _ => args.insert(1, "check".into()),
    }
    args
}

#[cfg(test)]
mod tests {
    use super::with_default_command;

    fn with_default(args: &[&str]) -> Vec<String> {
        let args = std::iter::once("kanalyze")
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        with_default_command(args)
            .into_iter()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn explain_in_rustc_spelling() {
        assert_eq!(
            with_default(&["--explain", "double-lock"]),
            ["explain", "double-lock"]
        );
        assert_eq!(
            with_default(&["--explain=double-lock"]),
            ["explain", "double-lock"]
        );
        assert_eq!(with_default(&["explain"]), ["explain"]);
        assert_eq!(
            with_default(&["--invariants", "inv.toml", "d"]),
            ["check", "--invariants", "inv.toml", "d"]
        );
    }

    #[test]
    fn check_is_the_default_with_flags_anywhere() {
        assert_eq!(with_default(&["d"]), ["check", "d"]);
        assert_eq!(
            with_default(&["--format", "json", "d"]),
            ["check", "--format", "json", "d"]
        );
        assert_eq!(
            with_default(&["d", "--format", "json"]),
            ["check", "d", "--format", "json"]
        );
        assert_eq!(
            with_default(&["--format=json", "--deny", "x", "d"]),
            ["check", "--format=json", "--deny", "x", "d"]
        );
        // A value that is a subcommand's name is still a value.
        assert_eq!(
            with_default(&["--spec", "dump", "d"]),
            ["check", "--spec", "dump", "d"]
        );
        assert_eq!(
            with_default(&["--format", "json", "check", "d"]),
            ["check", "--format", "json", "d"]
        );
        assert_eq!(with_default(&["graph", "d"]), ["graph", "d"]);
        assert_eq!(with_default(&["--help"]), ["--help"]);
        assert_eq!(with_default(&["-V"]), ["-V"]);
        assert!(with_default(&[]).is_empty());
    }
}
