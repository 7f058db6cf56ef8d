//! Linking: one function per symbol, edges from the chosen bodies, and
//! targets for indirect calls. [`link_with`] runs the steps, each in a
//! module of its own: which dumps make the program (`dumps`), canonical
//! names (`names`), one function per symbol (`symbols`), the roots
//! (`roots`), the call sites resolved (`sites`) and the call graph
//! (`graph`).

mod dumps;
mod graph;
mod names;
mod roots;
mod sites;
mod symbols;

use std::path::PathBuf;

use crate::{FnKind, LinkStats, LinkedCrate, Program};

use names::Canonical;

/// Something wrong with the set of dumps; the program is linked without the
/// offending file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkProblem {
    /// Two dumps of the same crate (name and id) with different contents:
    /// the more recently written one was kept (the first in path order if
    /// neither time is known).
    ConflictingDuplicate {
        crate_name: String,
        kept: PathBuf,
        skipped: PathBuf,
    },
    /// The same crate dumped twice with identical contents: harmless.
    IdenticalDuplicate {
        crate_name: String,
        kept: PathBuf,
        skipped: PathBuf,
    },
    /// Crates built for another target than the program's that are not
    /// host crates of the build: left out, and the program may need them.
    OtherTarget {
        target: String,
        program_target: String,
        crates: Vec<String>,
        /// The dumps left out, in the order of `crates`.
        paths: Vec<std::path::PathBuf>,
    },
    /// The build's host crates (build tools, proc macros, the crates only
    /// they use): built for another target than the program's, so no
    /// function of the program can call them. Left out; nothing is lost.
    HostCrates {
        program_target: String,
        crates: Vec<HostCrate>,
    },
}

/// A dump left out because of its target, and why it cannot be needed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCrate {
    pub name: String,
    pub path: PathBuf,
    pub target: String,
    pub why: HostReason,
}

/// Why a dump of another target is one of the build's host crates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostReason {
    /// Built for the machine the compiler ran on (`Header::host`): a build
    /// tool, a proc macro's dependency.
    BuiltForHost,
    /// A proc-macro crate: it runs inside the compiler.
    ProcMacro,
    /// It has no function, static, vtable or attributed item: nothing of
    /// it can be needed (a compiler probe).
    Empty,
    /// Every dump that depends on it is a host crate (named).
    UsedOnlyBy(Vec<String>),
}

impl std::fmt::Display for HostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostReason::BuiltForHost => write!(f, "built for the build machine"),
            HostReason::ProcMacro => write!(f, "a proc macro"),
            HostReason::Empty => write!(f, "has no functions (a compiler probe)"),
            HostReason::UsedOnlyBy(users) => {
                write!(f, "used only by host crates ({})", users.join(", "))
            }
        }
    }
}

impl HostCrate {
    /// "`syn` (x86_64-unknown-linux-gnu, built for the build machine)".
    pub fn describe(&self) -> String {
        format!("`{}` ({}, {})", self.name, self.target, self.why)
    }
}

/// A test a target name must pass.
pub type TargetTest<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// How [`link_with`] picks the program's target.
#[derive(Clone, Copy, Default)]
pub struct LinkOptions<'a> {
    /// When some dump's target passes this test, the program's target is
    /// one that does (the kernel profile: a kernel target).
    pub prefer: Option<TargetTest<'a>>,
}

impl std::fmt::Display for LinkProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkProblem::ConflictingDuplicate {
                crate_name,
                kept,
                skipped,
            } => write!(
                f,
                "`{}` and `{}` both claim crate `{crate_name}` (same name and crate id) but differ; using the newer `{}` (are they from two builds of the same tree?)",
                kept.display(),
                skipped.display(),
                kept.display()
            ),
            LinkProblem::OtherTarget {
                target,
                program_target,
                crates,
                ..
            } => write!(
                f,
                "{} crate(s) built for target `{target}` are left out of the program, which is built for `{program_target}`: {}",
                crates.len(),
                crates.join(", ")
            ),
            LinkProblem::HostCrates {
                program_target,
                crates,
            } => write!(
                f,
                "{} of the build's host crate(s) left out: they are built for another target than the program (`{program_target}`), so no function of the program can call them: {}",
                crates.len(),
                crates
                    .iter()
                    .map(HostCrate::describe)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            LinkProblem::IdenticalDuplicate {
                crate_name,
                kept,
                skipped,
            } => write!(
                f,
                "`{}` is an identical copy of `{}` (crate `{crate_name}`); it is ignored",
                skipped.display(),
                kept.display()
            ),
        }
    }
}

/// Links the dumps. The result does not depend on the order of `crates`:
/// they are sorted by crate name, crate id and path first, so crate
/// indices, which copy of a duplicated dump or instance is kept, and every
/// "first wins" rule downstream are the same for any order of the inputs.
pub fn link(crates: Vec<LinkedCrate>) -> (Program, Vec<LinkProblem>) {
    link_with(crates, &LinkOptions::default())
}

/// [`link`], with the program's target chosen as `options` say.
pub fn link_with(
    mut crates: Vec<LinkedCrate>,
    options: &LinkOptions<'_>,
) -> (Program, Vec<LinkProblem>) {
    let mut problems = Vec::new();
    dumps::sort(&mut crates);
    dumps::one_dump_per_crate(&mut crates, &mut problems);
    let crates = dumps::only_program_target(crates, options, &mut problems);

    let mut stats = LinkStats {
        crates: crates.len(),
        instances_total: crates.iter().map(|c| c.dump.instances.len()).sum(),
        ..LinkStats::default()
    };
    let canonical = Canonical::new(&crates);
    let mut functions = symbols::defined_functions(&crates, &canonical, stats.instances_total);
    stats.bodies = functions
        .iter()
        .filter(|f| matches!(f.kind, FnKind::Body { .. }))
        .count();
    let mut by_symbol = symbols::by_symbol(&functions);
    symbols::add_externals(&crates, &canonical, &mut functions, &mut by_symbol);

    // What indirect calls can reach: functions whose address the program
    // takes (by signature), and vtable slots (by trait method and slot).
    let vtables = sites::Vtables::new(&crates, &by_symbol);
    let (mut roots, mut address_taken) = roots::in_statics(&crates, &by_symbol);
    roots::add_exported(&crates, &functions, &mut roots);
    let (taken, sites) = sites::gather(&crates, &functions, &by_symbol, &vtables);
    address_taken.extend(taken);
    let by_sig = sites::by_signature(&crates, &functions, &address_taken);
    let sites = sites::resolve_indirect(sites, &by_sig);

    let (graph, call_arities) = graph::build(&mut functions, &mut by_symbol, sites, &mut stats);

    roots.sort_by_key(|r| r.0);
    roots.dedup_by(|a, b| a.0 == b.0);

    (
        Program {
            crates,
            functions,
            by_symbol,
            graph,
            roots,
            address_taken,
            call_arities,
            stats,
        },
        problems,
    )
}
