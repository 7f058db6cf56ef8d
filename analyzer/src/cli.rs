//! Command-line interface. One subcommand per analysis; each gets its own
//! `Args` struct here and its own module under `commands`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "kanalyze",
    version,
    about = "Whole-program lock and atomic-context analysis of Rust programs (the Linux kernel's Rust, or a cargo project) from kextract's MIR dumps"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Analyse the program (the default: `kanalyze DIR` is `kanalyze check DIR`):
    /// blocking in atomic context (a spinlock held), double locks, lock-order
    /// inversions and the other lock-state and preemption-count rules.
    Check(CheckArgs),
    /// Show the inferred summary of one function and why.
    Summary(SummaryArgs),
    /// Print dumps in a readable, MIR-like form.
    Dump(DumpArgs),
    /// Link the dumps into one program and show its call graph: statistics,
    /// the callers or callees of a function, or a Graphviz subgraph.
    Graph(GraphArgs),
    /// Explain a finding kind (`kanalyze --explain KIND` too); without one,
    /// list every kind.
    Explain(ExplainArgs),
    /// Record verdicts on findings of a run in a triage file (docs/output.md,
    /// "Triage").
    Triage(TriageArgs),
    /// Write the findings as one self-contained HTML page (`--html OUT/`):
    /// filters, source snippets, each chain drawn, held locks, summaries.
    Report(ReportArgs),
    /// Explain a `build_assert!` that failed to build: every `rust_build_error`
    /// reference left in object files, at the assertion, with the inlined
    /// calls outward (docs/build-assert.md).
    BuildError(BuildErrorArgs),
    /// The worst-case stack depth of every function C can call, from the
    /// objects' frame sizes (`-Zemit-stack-sizes`) and the whole program's
    /// call graph: the deepest path of each root, frames over the frame
    /// limit, unbounded recursion (docs/stack.md).
    Stack(StackArgs),
}

#[derive(Clone, Debug, Args)]
pub struct StackArgs {
    /// `.kmir` files, or directories searched recursively for them.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// The build's objects: object files, archives (`.a`, `.rlib`), `.su`
    /// files, or directories searched recursively for `.o`, `.a`, `.rlib`
    /// and `.su` files (a kbuild object tree, a cargo target directory).
    /// Rust objects must be built with `-Zemit-stack-sizes`.
    #[arg(long = "objects", value_name = "PATH", required = true, num_args = 1..)]
    pub objects: Vec<PathBuf>,

    /// The depth limit in bytes (default: the configuration file's
    /// `[stack] limit`, else 8192, half of a 16 KiB kernel stack).
    #[arg(long, value_name = "BYTES")]
    pub limit: Option<u64>,

    /// The frame limit in bytes (default: `[stack] frame-limit`, else 2048,
    /// the kernel's `CONFIG_FRAME_WARN` on 64-bit).
    #[arg(long = "frame-limit", value_name = "BYTES")]
    pub frame_limit: Option<u64>,

    /// Bytes a call of a C function no `[stack]` entry of the spec names
    /// uses, its callees included (default: `[stack] c-default`, else the
    /// spec's `[stack] default`; without one such calls are unknown).
    #[arg(long = "c-default", value_name = "BYTES")]
    pub c_default: Option<u64>,

    /// The output format (default: the configuration file's, else text).
    #[arg(long, value_enum)]
    pub format: Option<Format>,

    /// How many of the deepest roots the text output shows with their path.
    #[arg(long = "roots", value_name = "N", default_value_t = 5)]
    pub shown_roots: usize,

    /// Also write the findings and the stack of every root as one HTML page,
    /// `DIR/index.html`.
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,

    /// A previous run's `--format json` output: findings it already has are
    /// not reported, only counted.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// A triage file (docs/output.md, "Triage"), as for `check`.
    #[arg(long, value_name = "FILE")]
    pub triage: Option<PathBuf>,

    /// Spec files (TOML): their `[stack]` tables extend the built-in one
    /// (crates/spec/README.md).
    #[arg(long = "spec", value_name = "FILE")]
    pub specs: Vec<PathBuf>,

    /// The kind of program (default: the configuration file's, else
    /// detected), which decides the built-in spec.
    #[arg(long = "profile", value_enum, value_name = "PROFILE")]
    pub profile: Option<Profile>,

    /// Also report findings that lie entirely in upstream code (the
    /// standard library, registry crates).
    #[arg(long = "include-upstream")]
    pub include_upstream: bool,

    /// Directories to resolve relative source file names against.
    #[arg(long = "source-root", value_name = "DIR")]
    pub source_roots: Vec<PathBuf>,

    /// Report findings of this kind as errors (repeatable).
    #[arg(long = "deny", value_name = "KIND")]
    pub deny: Vec<String>,

    /// Report findings of this kind as warnings (repeatable).
    #[arg(long = "warn", value_name = "KIND")]
    pub warn: Vec<String>,

    /// Do not report findings of this kind (repeatable).
    #[arg(long = "allow", value_name = "KIND")]
    pub allow: Vec<String>,

    /// The configuration file (default: `kanalyze.toml` in the current
    /// directory or its nearest ancestor that has one).
    #[arg(long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BuildErrorArgs {
    /// Object files, archives (`.a`, `.rlib`), or directories searched
    /// recursively for `.o`, `.a` and `.rlib` files (a kbuild object tree).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// `text` or `json` (SARIF is `check`'s).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Directories to resolve relative source file names against (for
    /// snippets) and to shorten absolute ones by; the current directory is
    /// always tried.
    #[arg(long = "source-root", value_name = "DIR")]
    pub source_roots: Vec<PathBuf>,

    /// kextract's dumps of the same build (files or directories): add which
    /// arguments of the outermost function the assertion depends on and
    /// the callers in the whole program that pass it a value that is not
    /// a constant.
    #[arg(long = "dumps", value_name = "PATH")]
    pub dumps: Vec<PathBuf>,
}

#[derive(Clone, Debug, Args)]
pub struct ReportArgs {
    /// `.kmir` files, or directories searched recursively for them.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// The directory to write `index.html` into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub html: PathBuf,

    /// A previous run's `--format json` output: findings it has (same
    /// stable id) are marked known, the others new, and can be filtered.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// A triage file (as `check --triage`): every finding is shown with its
    /// verdict (or `untriaged`, or `re-examine` when its text changed since
    /// it was judged), and the verdicts can be filtered.
    #[arg(long, value_name = "FILE")]
    pub triage: Option<PathBuf>,

    /// Accept a partial result, as `check --allow-partial`: the page still
    /// says how many inputs were skipped, but the exit status is not 3.
    #[arg(long = "allow-partial")]
    pub allow_partial: bool,

    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VerdictArg {
    Bug,
    NotABug,
    Intended,
    WontFix,
}

impl From<VerdictArg> for crate::triage::Verdict {
    fn from(v: VerdictArg) -> Self {
        match v {
            VerdictArg::Bug => crate::triage::Verdict::Bug,
            VerdictArg::NotABug => crate::triage::Verdict::NotABug,
            VerdictArg::Intended => crate::triage::Verdict::Intended,
            VerdictArg::WontFix => crate::triage::Verdict::WontFix,
        }
    }
}

#[derive(Clone, Debug, Args)]
pub struct TriageArgs {
    /// `.kmir` files, or directories searched recursively for them.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// The triage file to write (created if missing).
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,

    /// The findings, by stable id (the JSON `id`).
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,

    /// Every finding of this kind.
    #[arg(long = "kind", value_name = "KIND")]
    pub kinds: Vec<String>,

    #[arg(long, value_enum)]
    pub verdict: VerdictArg,

    /// Why: the code or the discussion that decides it.
    #[arg(long)]
    pub reason: String,

    /// Who judged it.
    #[arg(long)]
    pub by: String,

    /// When (free text, e.g. 2026-12-04).
    #[arg(long)]
    pub date: Option<String>,

    /// A commit, a list message.
    #[arg(long)]
    pub reference: Option<String>,

    /// The build's objects, as `kanalyze stack` takes them: the findings of
    /// `stack` (with the configuration file's `[stack]` limits) can be
    /// judged too.
    #[arg(long = "objects", value_name = "PATH", num_args = 1..)]
    pub objects: Vec<PathBuf>,

    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A finding kind, as findings name it (`sleep-in-atomic`).
    #[arg(value_name = "KIND")]
    pub kind: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// rustc-style diagnostics with source snippets.
    Text,
    /// One JSON document: `{"version", "findings": [...], "summary"}` (docs/output.md).
    Json,
    /// SARIF 2.1.0, for code-scanning dashboards (GitHub, GitLab, VS Code).
    Sarif,
}

/// What kind of program is analysed, which decides the built-in
/// assumptions (docs/preemption.md, "Profiles").
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// The Linux kernel: the built-in kernel spec (spinlocks, GFP flags,
    /// `__rust_alloc` is `GFP_KERNEL`), and C functions the spec does not
    /// describe may sleep.
    Kernel,
    /// Any other program (a cargo project): the
    /// built-in userspace spec (the lock APIs of std, parking_lot and spin,
    /// std's blocking calls), and C functions the spec does not describe
    /// constrain nothing. Annotations, `--spec` files and klint's `core`
    /// annotations still apply.
    Userspace,
    /// A firmware (a Cortex-M or other bare-metal program): the userspace
    /// spec and the built-in embedded one: `cortex-m` and
    /// `critical-section` critical sections run their closure with
    /// interrupts off, WFI/WFE and embedded-hal delays block, and the
    /// handlers of the vector tables run in interrupt context.
    Embedded,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Kernel => "kernel",
            Profile::Userspace => "userspace",
            Profile::Embedded => "embedded",
        }
    }
}

#[derive(Clone, Debug, Args)]
pub struct AnalysisArgs {
    /// Spec files (TOML) describing C functions; they extend and override the
    /// built-in kernel spec (kernel profile) or stand alone (userspace).
    #[arg(long = "spec", value_name = "FILE")]
    pub specs: Vec<PathBuf>,

    /// The kind of program (default: the configuration file's, else
    /// detected: `kernel` when the program has a `kernel` crate built for a
    /// kernel target, `userspace` otherwise).
    #[arg(long = "profile", value_enum, value_name = "PROFILE")]
    pub profile: Option<Profile>,

    /// Where `--profile` came from, for `--print-config` and the summary.
    #[arg(skip)]
    pub profile_origin: Option<String>,

    /// Also report findings that lie entirely in code the user does not
    /// own (the standard library's sources, crates from the cargo
    /// registry or git checkouts); by default they are only counted.
    #[arg(long = "include-upstream")]
    pub include_upstream: bool,

    /// Directories to resolve relative source file names against (for
    /// snippets); the current directory is always tried.
    #[arg(long = "source-root", value_name = "DIR")]
    pub source_roots: Vec<PathBuf>,

    /// Report findings of this kind as errors (repeatable), like rustc's
    /// `-D`: `--deny last-reference-in-atomic`. Kinds: docs/output.md.
    #[arg(long = "deny", value_name = "KIND")]
    pub deny: Vec<String>,

    /// Report findings of this kind as warnings (repeatable).
    #[arg(long = "warn", value_name = "KIND")]
    pub warn: Vec<String>,

    /// Do not report findings of this kind (repeatable).
    #[arg(long = "allow", value_name = "KIND")]
    pub allow: Vec<String>,

    /// Invariants files (TOML, docs/invariants.md): facts no function body
    /// shows, such as a field that is empty whenever its struct is torn
    /// down. Trusted, checked to name something, and audited.
    #[arg(long = "invariants", value_name = "FILE")]
    pub invariants: Vec<PathBuf>,

    /// Measure what each declared invariant removes: the analysis is run
    /// again without each one (and without all), and the JSON summary and
    /// the last line say how many findings each removed.
    #[arg(long = "audit-invariants")]
    pub audit_invariants: bool,

    /// The configuration file (default: `kanalyze.toml` in the current
    /// directory or its nearest ancestor that has one). Flags override it.
    #[arg(long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Finding levels from the configuration file's `[levels]` (flags
    /// override them per kind).
    #[arg(skip)]
    pub configured_levels: Vec<(String, crate::level::Level)>,

    /// Debugging aid: print the body analysis's fixed point (and call-site
    /// specialisations) on stderr for functions whose name contains TEXT.
    #[arg(long = "trace", value_name = "TEXT", hide = true)]
    pub trace: Option<String>,

    /// Testing aid: the step budget of one body's analysis (default: the
    /// analysis's own, `bounds::STEP_BUDGET`). A body past it gets the
    /// summary of an unknown function and is named in the run's summary.
    #[arg(long = "step-budget", value_name = "STEPS", hide = true)]
    pub step_budget: Option<u64>,

    /// Neither read nor write the summary cache: analyse every function
    /// (docs/output.md, "Incremental re-runs").
    #[arg(long = "no-cache")]
    pub no_cache: bool,

    /// The summary cache's directory (default: `$XDG_CACHE_HOME/kanalyze`,
    /// else `~/.cache/kanalyze`).
    #[arg(long = "cache-dir", value_name = "DIR", conflicts_with = "no_cache")]
    pub cache_dir: Option<PathBuf>,

    /// Benchmarking aid (docs/performance.md): print on stderr how long
    /// each phase took (decode, link, spec and annotations, invariants,
    /// solve, checks, output), wall-clock and CPU time of all threads, and
    /// how many bodies it decoded.
    #[arg(long = "timings", hide = true)]
    pub timings: bool,

    /// Benchmarking aid (docs/performance.md): keep every body once it is
    /// decoded, instead of decoding it for each use and freeing it after.
    #[arg(long = "keep-bodies", hide = true)]
    pub keep_bodies: bool,

    /// Draw no progress bar. One is drawn on stderr only when it is a
    /// terminal, `CI` is not set, the output is text and the run lasts
    /// more than a second.
    #[arg(long = "no-progress")]
    pub no_progress: bool,

    /// Testing aid: draw the progress bar from the start, on a terminal
    /// (CI included), whatever the format.
    #[arg(long = "progress-now", hide = true, conflicts_with = "no_progress")]
    pub progress_now: bool,
}

#[derive(Clone, Debug, Args)]
pub struct CheckArgs {
    /// `.kmir` files, or directories searched recursively for them.
    #[arg(required_unless_present = "print_config", value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// The output format (default: the configuration file's, else text).
    #[arg(long, value_enum)]
    pub format: Option<Format>,

    /// Accept a partial result: inputs that could not be used (corrupt,
    /// missing, another target) still make the last line say so, but not
    /// exit status 3.
    #[arg(long = "allow-partial")]
    pub allow_partial: bool,

    /// Print the effective settings (configuration file and flags) and
    /// where each comes from, and exit.
    #[arg(long = "print-config")]
    pub print_config: bool,

    /// A previous run's `--format json` output: findings it already has
    /// (same stable id) are not reported, only counted. For a nightly batch
    /// that wants what is new, or a tree whose old findings were triaged.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// A triage file (docs/output.md, "Triage"): verdicts on findings by
    /// stable id. Findings judged `not-a-bug`, `intended` or `wont-fix` are
    /// not shown while their text is unchanged; a changed one is shown again.
    #[arg(long, value_name = "FILE")]
    pub triage: Option<PathBuf>,

    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

#[derive(Clone, Debug, Args)]
pub struct SummaryArgs {
    /// A directory of dumps (or one dump).
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// The function: a symbol, a full instance name, or part of one.
    #[arg(value_name = "FN")]
    pub function: String,

    #[command(flatten)]
    pub analysis: AnalysisArgs,
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
