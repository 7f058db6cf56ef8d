//! Command-line interface. One subcommand per analysis; each gets its own
//! `Args` struct here and its own module under `commands`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "kanalyze",
    version,
    about = "Whole-program analysis of kernel Rust code from kextract's MIR dumps"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print dumps in a readable, MIR-like form.
    Dump(DumpArgs),
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// `.kmir` files, or directories searched recursively for them.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Print only the instances whose name, item path or symbol contains NAME.
    #[arg(long, value_name = "NAME")]
    pub item: Option<String>,

    /// Print signatures and locals but no basic blocks.
    #[arg(long)]
    pub no_bodies: bool,
}
