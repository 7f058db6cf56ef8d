//! `kanalyze`: whole-program analyses over the per-crate MIR dumps that
//! `kextract` writes.
//!
//! The binary is a thin shell over this library so that integration tests
//! (and later subcommands) can reach the loader and the printer directly.

pub mod cli;
pub mod commands;
pub mod diag;
pub mod input;
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
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // `Error::exit` would print with `print!`, which panics on a
            // closed stdout (`kanalyze --help | head -0`).
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let code = match &cli.command {
        cli::Command::Dump(args) => commands::dump::run(args),
        cli::Command::Graph(args) => commands::graph::run(args),
    };
    ExitCode::from(code)
}
