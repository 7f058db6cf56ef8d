//! `kanalyze`: whole-program analyses over the per-crate MIR dumps that
//! `kextract` writes.
//!
//! The binary is a thin shell over this library so that integration tests
//! (and later subcommands) can reach the loader and the printer directly.

pub mod cli;
pub mod commands;
pub mod diag;
pub mod input;
pub mod pipeline;
pub mod print;

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
    };
    ExitCode::from(code)
}

/// `kanalyze DIR…` means `kanalyze check DIR…`: insert the subcommand when
/// the first argument is neither a subcommand nor an option.
fn with_default_command(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    const COMMANDS: &[&str] = &["check", "summary", "dump", "graph", "help"];
    if let Some(first) = args.get(1).and_then(|a| a.to_str())
        && !first.starts_with('-')
        && !COMMANDS.contains(&first)
    {
        args.insert(1, "check".into());
    }
    args
}
