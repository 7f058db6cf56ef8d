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
    /// Link the dumps into one program and show its call graph: statistics,
    /// the callers or callees of a function, or a Graphviz subgraph.
    Graph(GraphArgs),
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// `.kmir` files, or directories searched recursively for them.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// List the call sites that call FN (a symbol, a full name, or part of a name).
    #[arg(long, value_name = "FN", conflicts_with_all = ["callees", "dot"])]
    pub callers: Option<String>,

    /// List what FN calls and drops, with the sites.
    #[arg(long, value_name = "FN", conflicts_with = "dot")]
    pub callees: Option<String>,

    /// Print the subgraph around FN in Graphviz dot syntax.
    #[arg(long, value_name = "FN")]
    pub dot: Option<String>,

    /// How many calls away from FN `--dot` goes (callees and callers).
    #[arg(long, default_value_t = 2, value_name = "N", requires = "dot")]
    pub depth: u32,

    /// Also print how long decoding, linking and the SCC schedule took.
    #[arg(long)]
    pub timings: bool,
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
