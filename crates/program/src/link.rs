//! Linking: one function per symbol, edges from the chosen bodies, and
//! targets for indirect calls.

use std::collections::HashSet;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use rayon::prelude::*;

use kmir::{Callee, CastKind, ConstValue, Name, Rvalue, StatementKind, TerminatorKind};

use crate::{
    CallGraph, Edge, EdgeKind, FnId, FnKind, Function, IndirectKey, LinkStats, LinkedCrate,
    Program, RootReason,
};

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

/// The program's target: among the dumps whose target the options prefer
/// (all when none is), the target with the most instances (a build's host
/// crates are a small part of it).
fn program_target(crates: &[LinkedCrate], options: &LinkOptions<'_>) -> String {
    let preferred = |c: &&LinkedCrate| {
        options
            .prefer
            .is_none_or(|ok| ok(c.dump.header.target.as_str()))
    };
    let mut candidates: Vec<&LinkedCrate> = crates.iter().filter(preferred).collect();
    if candidates.is_empty() {
        candidates = crates.iter().collect();
    }
    let mut by_target: BTreeMap<&str, usize> = BTreeMap::new();
    for c in candidates {
        *by_target.entry(c.dump.header.target.as_str()).or_default() += c.dump.instances.len() + 1;
    }
    by_target
        .iter()
        .max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t)))
        .map(|(t, _)| t.to_string())
        .unwrap_or_default()
}

/// For each crate of another target than `program_target`, why it is one
/// of the build's host crates, or `None` when it is not one (and `None`
/// for the program's own crates). A crate every dump depending on which is
/// a host crate is one too, found by iterating to a fixed point.
fn host_reasons(crates: &[LinkedCrate], program_target: &str) -> Vec<Option<HostReason>> {
    let mut reasons: Vec<Option<HostReason>> = crates
        .iter()
        .map(|c| {
            let h = &c.dump.header;
            if h.target == program_target {
                None
            } else if h.target == h.host {
                Some(HostReason::BuiltForHost)
            } else if h.crate_types.iter().any(|t| t == "proc-macro") {
                Some(HostReason::ProcMacro)
            } else if c.dump.instances.is_empty()
                && c.dump.statics.is_empty()
                && c.dump.vtables.is_empty()
                && c.dump.items.is_empty()
            {
                Some(HostReason::Empty)
            } else {
                None
            }
        })
        .collect();
    // Who depends on each crate (by name and id).
    let users =
        |i: usize| -> Vec<usize> {
            let h = &crates[i].dump.header;
            crates
                .iter()
                .enumerate()
                .filter(|(j, c)| {
                    *j != i
                        && c.dump.header.dependencies.iter().any(|d| {
                            d.name == h.crate_name && d.stable_crate_id == h.stable_crate_id
                        })
                })
                .map(|(j, _)| j)
                .collect()
        };
    loop {
        let mut changed = false;
        for i in 0..crates.len() {
            if reasons[i].is_some() || crates[i].dump.header.target == program_target {
                continue;
            }
            let by = users(i);
            if !by.is_empty() && by.iter().all(|&j| reasons[j].is_some()) {
                let mut names: Vec<String> = by
                    .iter()
                    .map(|&j| crates[j].dump.header.crate_name.to_string())
                    .collect();
                names.sort();
                names.dedup();
                reasons[i] = Some(HostReason::UsedOnlyBy(names));
                changed = true;
            }
        }
        if !changed {
            return reasons;
        }
    }
}

/// Rank of a copy of an instance in the dump of crate `krate`: higher is
/// better. The body's quality first; then the copy of the crate that
/// defines the item (the first segment of its item path), which names it
/// canonically where another crate's copy may not (a doctest crate's copy
/// of `kernel::f` is named `doctests_…::rust_doctest_…::kernel::f`).
/// Among equal ranks the crate that sorts first wins (see [`link`]).
fn rank(c: &LinkedCrate, ii: u32) -> (bool, bool, bool, bool) {
    let inst = &c.dump.instances[ii as usize];
    let krate = c.dump.header.crate_name.as_str();
    let facts = c.body_facts(ii);
    let elaborated = facts.is_some_and(|b| b.drop_elaborated);
    let defining = inst.item_path.split("::").next() == Some(krate);
    (facts.is_some(), elaborated, inst.codegenned, defining)
}

/// Names as every dump would print them. A crate prints an item of another
/// crate by its visible path, which can go through an `extern crate` item
/// of a third crate: `proc_macro2::alloc::vec::Vec::<u8>::reserve` for
/// `alloc::vec::Vec::<u8>::reserve` (proc_macro2 has `extern crate alloc`),
/// rustdoc's merged doctests print
/// `doctests_kernel_generated::rust_doctest_…::kernel::f` for `kernel::f`,
/// also inside generic arguments. The canonical path starts at the crate
/// that defines the item, so a path that starts with a crate's name and
/// later reaches a segment naming another crate of the program (or the
/// item's own crate) is cut to start there, unless the path up to that
/// segment is a real module of the program (`kernel::alloc` is the
/// kernel's module, not the `alloc` crate): one that the definition path
/// of some instance, external or ADT runs through. Paths that start at a
/// standard library crate are left alone (`core::alloc`, `std::alloc` are
/// modules, and the standard library prints no other crate through its
/// own).
struct Canonical<'a> {
    /// Crate names: the linked crates, the crates of upstream externals and
    /// the standard library's.
    crates: BTreeSet<&'a str>,
    /// Every module (and type) path that a definition path runs through:
    /// `kernel`, `kernel::alloc`, `kernel::alloc::kvec`, ….
    modules: HashSet<&'a str>,
}

/// The standard library's crates: paths starting at them are canonical.
const STD_CRATES: [&str; 4] = ["core", "alloc", "std", "compiler_builtins"];

impl<'a> Canonical<'a> {
    fn new(crates: &'a [LinkedCrate]) -> Self {
        let mut names: BTreeSet<&str> = STD_CRATES.into();
        let first = |path: &'a str| path.split("::").next().unwrap_or_default();
        for c in crates {
            names.insert(&c.dump.header.crate_name);
            for e in &c.dump.externals {
                if let kmir::ExternalKind::Upstream { krate } = &e.kind {
                    names.insert(krate);
                }
            }
        }
        // A definition path starts with its crate's name: every instance's,
        // gathered in parallel (a set is the same in any order).
        let of_instances = crates
            .par_iter()
            .flat_map(|c| c.dump.instances.par_iter())
            .fold(BTreeSet::new, |mut set, i| {
                let krate = first(&i.item_path);
                if !krate.is_empty() && krate.chars().all(ident) {
                    set.insert(krate);
                }
                set
            })
            .reduce(BTreeSet::new, union);
        names.extend(of_instances);
        // Only modules named like a crate are ever asked about (`name`
        // asks whether a path up to a crate's name is a module), so only
        // those are kept: the set stays small on the kernel's dumps.
        let paths = |c: &'a LinkedCrate| {
            let externals = c.dump.externals.par_iter().map(|e| (&*e.item_path, false));
            let instances = c.dump.instances.par_iter().map(|i| (&*i.item_path, false));
            // The ADT itself is a path other paths run through.
            let adts = c.dump.adts.par_iter().map(|a| (&*a.path, true));
            externals.chain(instances).chain(adts)
        };
        let modules = crates
            .par_iter()
            .flat_map(paths)
            .fold(HashSet::new, |mut modules, (path, whole)| {
                record_modules(&names, path, whole, &mut modules);
                modules
            })
            .reduce(HashSet::new, union);
        Canonical {
            crates: names,
            modules,
        }
    }

    /// `name`, printed by `dump_crate`, for an item of `item_path`.
    fn name(&self, name: &str, item_path: &str, dump_crate: &str) -> String {
        let item_crate = item_path.split("::").next().unwrap_or_default();
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        let mut out = String::with_capacity(name.len());
        let mut rest = name;
        // Each path in `name` that starts at a boundary with a crate's name.
        while let Some(at) = rest.find("::") {
            let first_start = rest[..at].rfind(|c: char| !ident(c)).map_or(0, |i| i + 1);
            let first = &rest[first_start..at];
            let starts_path = if first_start == 0 {
                !out.ends_with("::")
            } else {
                !rest[..first_start].ends_with("::")
            };
            let is_start = starts_path
                && !first.is_empty()
                && !STD_CRATES.contains(&first)
                && (first == dump_crate || self.crates.contains(first));
            if !is_start {
                out.push_str(&rest[..at + 2]);
                rest = &rest[at + 2..];
                continue;
            }
            out.push_str(&rest[..first_start]);
            let path = &rest[first_start..];
            // The segments after the first, and the offset of the first that
            // names another crate and is not a module of the program.
            let mut cut = None;
            let mut offset = first.len() + 2;
            while let Some(len) = path[offset..]
                .find(|c: char| !ident(c))
                .filter(|&len| len > 0 && path[offset + len..].starts_with("::"))
            {
                let seg = &path[offset..offset + len];
                if seg != first
                    && (seg == item_crate || self.crates.contains(seg))
                    && !self.modules.contains(&path[..offset + len])
                {
                    cut = Some(offset);
                    break;
                }
                offset += len + 2;
            }
            match cut {
                // Go on from the crate's name: the rest of the path may go
                // through another `extern crate` again.
                Some(offset) => rest = &path[offset..],
                None => {
                    out.push_str(&path[..first.len() + 2]);
                    rest = &path[first.len() + 2..];
                }
            }
        }
        out.push_str(rest);
        out
    }
}

fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The union of two sets, into the larger.
fn union<S: IntoIterator + Extend<S::Item> + Len>(mut a: S, mut b: S) -> S {
    if a.len() < b.len() {
        std::mem::swap(&mut a, &mut b);
    }
    a.extend(b);
    a
}

/// The length of a set, for [`union`].
trait Len {
    fn len(&self) -> usize;
}

impl<T> Len for BTreeSet<T> {
    fn len(&self) -> usize {
        BTreeSet::len(self)
    }
}

impl<T> Len for HashSet<T> {
    fn len(&self) -> usize {
        HashSet::len(self)
    }
}

/// Records into `modules` the module paths a definition path runs
/// through that end in a crate's name: the proper prefixes of the simple
/// path it starts with (`a::b::C` of `a::b::C::<T>::f`), and the simple
/// path itself if `whole`.
fn record_modules<'a>(
    names: &BTreeSet<&str>,
    path: &'a str,
    whole: bool,
    modules: &mut HashSet<&'a str>,
) {
    let end = path
        .find(|c: char| !(ident(c) || c == ':'))
        .unwrap_or(path.len());
    let simple = &path[..end];
    let mut at = 0;
    let mut ends = Vec::new();
    while let Some(i) = simple[at..].find("::") {
        ends.push(at + i);
        at += i + 2;
    }
    if whole {
        ends.push(simple.len());
    }
    for end in ends {
        let prefix = &simple[..end];
        let last = prefix.rsplit("::").next().unwrap_or_default();
        if prefix.contains("::") && names.contains(last) {
            modules.insert(prefix);
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
    crates.sort_by(|a, b| {
        (
            &a.dump.header.crate_name,
            a.dump.header.stable_crate_id,
            &a.path,
        )
            .cmp(&(
                &b.dump.header.crate_name,
                b.dump.header.stable_crate_id,
                &b.path,
            ))
    });

    // 1. One dump per crate.
    let mut seen: HashMap<(Name, u64), usize> = HashMap::new();
    let mut keep = vec![true; crates.len()];
    for i in 0..crates.len() {
        let key = (
            crates[i].dump.header.crate_name.clone(),
            crates[i].dump.header.stable_crate_id,
        );
        match seen.get(&key) {
            Some(&first) => {
                let crate_name = key.0.to_string();
                if crates[first].same_content(&crates[i]) {
                    keep[i] = false;
                    let (kept, skipped) = (crates[first].path.clone(), crates[i].path.clone());
                    problems.push(LinkProblem::IdenticalDuplicate {
                        crate_name,
                        kept,
                        skipped,
                    });
                    continue;
                }
                // Conflicting copies: a stale dump next to a fresh one is the
                // usual cause, so the newer file wins.
                let newer = crates[i].modified > crates[first].modified;
                let (winner, loser) = if newer { (i, first) } else { (first, i) };
                keep[loser] = false;
                seen.insert(key, winner);
                problems.push(LinkProblem::ConflictingDuplicate {
                    crate_name,
                    kept: crates[winner].path.clone(),
                    skipped: crates[loser].path.clone(),
                });
            }
            None => {
                seen.insert(key, i);
            }
        }
    }
    let mut k = keep.iter();
    crates.retain(|_| *k.next().unwrap_or(&true));

    // 1b. One target (a kernel build also compiles host tools and
    // proc-macro dependencies through RUSTC): see `program_target`.
    let program_target = program_target(&crates, options);
    if crates
        .iter()
        .any(|c| c.dump.header.target != program_target.as_str())
    {
        let reasons = host_reasons(&crates, &program_target);
        let mut hosts: Vec<HostCrate> = Vec::new();
        let mut others: BTreeMap<String, Vec<(String, std::path::PathBuf)>> = BTreeMap::new();
        for (c, why) in crates.iter().zip(reasons) {
            if c.dump.header.target == program_target.as_str() {
                continue;
            }
            match why {
                Some(why) => hosts.push(HostCrate {
                    name: c.dump.header.crate_name.to_string(),
                    path: c.path.clone(),
                    target: c.dump.header.target.to_string(),
                    why,
                }),
                None => others
                    .entry(c.dump.header.target.to_string())
                    .or_default()
                    .push((c.dump.header.crate_name.to_string(), c.path.clone())),
            }
        }
        let (kept, left_out): (Vec<LinkedCrate>, Vec<LinkedCrate>) = crates
            .into_iter()
            .partition(|c| c.dump.header.target == program_target.as_str());
        crates = kept;
        // Freeing their dumps is serial work the link does not wait for.
        rayon::spawn(move || drop(left_out));
        if !hosts.is_empty() {
            hosts.sort_by(|a, b| (&a.name, &a.path).cmp(&(&b.name, &b.path)));
            problems.push(LinkProblem::HostCrates {
                program_target: program_target.clone(),
                crates: hosts,
            });
        }
        for (target, mut left) in others {
            left.sort();
            problems.push(LinkProblem::OtherTarget {
                target,
                program_target: program_target.clone(),
                crates: left.iter().map(|(n, _)| n.clone()).collect(),
                paths: left.into_iter().map(|(_, p)| p).collect(),
            });
        }
    }

    let mut stats = LinkStats {
        crates: crates.len(),
        ..LinkStats::default()
    };

    // 2. The best copy of every instance: every copy sorted by symbol,
    //    crate and index (in parallel), then the best of each symbol's run,
    //    met in crate order (strictly better only: on a tie the earlier
    //    crate stays).
    stats.instances_total = crates.iter().map(|c| c.dump.instances.len()).sum();
    let mut copies: Vec<(&str, u32, u32)> = Vec::with_capacity(stats.instances_total);
    for (ci, c) in crates.iter().enumerate() {
        for (ii, inst) in c.dump.instances.iter().enumerate() {
            copies.push((inst.symbol.as_str(), ci as u32, ii as u32));
        }
    }
    copies.par_sort_unstable();
    let mut best: Vec<(&str, u32, u32)> = Vec::new();
    for copy in copies {
        match best.last_mut() {
            Some(current) if current.0 == copy.0 => {
                if rank(&crates[copy.1 as usize], copy.2)
                    > rank(&crates[current.1 as usize], current.2)
                {
                    *current = copy;
                }
            }
            _ => best.push(copy),
        }
    }

    let canonical = Canonical::new(&crates);
    // Naming is per function, in parallel; the symbol table follows.
    let mut functions: Vec<Function> = best
        .par_iter()
        .map(|&(_, ci, ii)| {
            let inst = &crates[ci as usize].dump.instances[ii as usize];
            let kind = if crates[ci as usize].has_body(ii) {
                FnKind::Body {
                    krate: ci,
                    instance: ii,
                }
            } else {
                FnKind::Shim
            };
            let dump_crate = &crates[ci as usize].dump.header.crate_name;
            Function {
                symbol: inst.symbol.clone(),
                name: canonical
                    .name(&inst.name, &inst.item_path, dump_crate)
                    .into(),
                item_path: inst.item_path.clone(),
                kind,
            }
        })
        .collect();
    stats.bodies = functions
        .iter()
        .filter(|f| matches!(f.kind, FnKind::Body { .. }))
        .count();
    let mut by_symbol = HashMap::with_capacity(functions.len());
    for (i, f) in functions.iter().enumerate() {
        by_symbol.insert(f.symbol.clone(), FnId(i as u32));
    }

    // 3. Externals: referenced, no body anywhere.
    let mut externals: BTreeMap<&str, (Name, &kmir::External)> = BTreeMap::new();
    for c in &crates {
        for e in &c.dump.externals {
            if by_symbol.contains_key(&e.symbol) {
                continue;
            }
            // Many crates declare the same C function (every doctest crate
            // re-declares the kernel's bindings): name it by the shortest
            // canonical path, `kernel::bindings::…` rather than a doctest's
            // copy, then by the text so that no order decides.
            let name: Name = canonical
                .name(&e.name, &e.item_path, &c.dump.header.crate_name)
                .into();
            externals
                .entry(e.symbol.as_str())
                .and_modify(|cur| {
                    if (name.len(), &name) < (cur.0.len(), &cur.0) {
                        *cur = (name.clone(), e);
                    }
                })
                .or_insert((name, e));
        }
    }
    for (_, (name, e)) in externals {
        by_symbol.insert(e.symbol.clone(), FnId(functions.len() as u32));
        functions.push(Function {
            symbol: e.symbol.clone(),
            name,
            item_path: e.item_path.clone(),
            kind: match &e.kind {
                kmir::ExternalKind::Foreign => FnKind::Foreign,
                kmir::ExternalKind::Upstream { krate } => FnKind::Upstream {
                    krate: krate.clone(),
                },
                kmir::ExternalKind::Shim => FnKind::Shim,
            },
        });
    }

    // 4. What indirect calls can reach: functions whose address the program
    //    takes (by signature), and vtable slots (by trait method and slot).
    let mut address_taken: BTreeSet<FnId> = BTreeSet::new();
    let mut roots: Vec<(FnId, RootReason)> = Vec::new();
    let mut vtable_slots: HashMap<(&str, u32), BTreeSet<FnId>> = HashMap::new();
    // What dropping a `dyn Trait` can run: the drop glue in slot 0 of every
    // `Trait` vtable the program builds (empty for types without glue).
    let mut dyn_glues: HashMap<&str, BTreeSet<FnId>> = HashMap::new();
    for c in &crates {
        for vt in &c.dump.vtables {
            if let Some(trait_path) = &vt.trait_path {
                let glues = dyn_glues.entry(trait_path.as_str()).or_default();
                for entry in &vt.entries {
                    if let kmir::VtableEntry::DropInPlace { glue: Some(glue) } = entry
                        && let Some(&id) = by_symbol.get(glue)
                    {
                        glues.insert(id);
                    }
                }
            }
            for (slot, entry) in vt.entries.iter().enumerate() {
                if let kmir::VtableEntry::Method { method, symbol } = entry
                    && let Some(&id) = by_symbol.get(symbol)
                {
                    vtable_slots
                        .entry((method.as_str(), slot as u32))
                        .or_default()
                        .insert(id);
                }
            }
        }
        for s in &c.dump.statics {
            for f in &s.fn_ptrs {
                if let Some(&id) = by_symbol.get(f) {
                    address_taken.insert(id);
                    roots.push((
                        id,
                        RootReason::InStatic {
                            path: s.path.clone(),
                        },
                    ));
                }
            }
            for &v in &s.vtables {
                for entry in &c.dump.vtables[v as usize].entries {
                    if let kmir::VtableEntry::Method { symbol, .. } = entry
                        && let Some(&id) = by_symbol.get(symbol)
                    {
                        roots.push((
                            id,
                            RootReason::VtableInStatic {
                                path: s.path.clone(),
                            },
                        ));
                    }
                }
            }
        }
    }
    for (i, f) in functions.iter().enumerate() {
        if let FnKind::Body { krate, instance } = f.kind
            && crates[krate as usize].dump.instances[instance as usize].exported
        {
            roots.push((FnId(i as u32), RootReason::Exported));
        }
    }
    // One pass over the bodies, in parallel: the functions each turns into
    // pointers, and its call sites, by symbol (what a body says, whatever
    // the other dumps hold: kept per dump by the per-dump cache, so an
    // unchanged dump's bodies are not decoded). Each body is decoded once
    // for both. The symbols are resolved below, on every run.
    let with_body: Vec<FnId> = functions
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f.kind, FnKind::Body { .. }))
        .map(|(i, _)| FnId(i as u32))
        .collect();
    let walked =
        crate::memo::per_body(&crates, &functions, BODY_SITES, &with_body, |_, _, body| {
            body_sites(body)
        });
    let per_body: Vec<(Vec<FnId>, (FnId, FnSites))> = with_body
        .par_iter()
        .zip(walked)
        .filter_map(|(&caller, walked)| {
            let walked = walked?;
            let f = &functions[caller.index()];
            let FnKind::Body { krate, instance } = f.kind else {
                return None;
            };
            let inst = &crates[krate as usize].dump.instances[instance as usize];
            let taken: Vec<FnId> = walked
                .taken
                .iter()
                .filter_map(|s| by_symbol.get(s).copied())
                .collect();
            let mut out = FnSites::default();
            for site in walked.sites {
                let edge = |kind| Edge {
                    kind,
                    block: site.block,
                    span: site.span,
                };
                match site.kind {
                    SiteKind::Drop { glue } => {
                        // The drop glue of `dyn Trait` drops `*self` through the
                        // vtable: it reaches the glue of every type the program
                        // makes a `Trait` object of.
                        if glue == inst.symbol
                            && let Some(principal) =
                                dyn_principal(&crates[krate as usize].dump, inst)
                            && let Some(glues) = dyn_glues.get(principal)
                        {
                            for &t in glues {
                                out.edges.push((Target::Fn(t), edge(EdgeKind::Drop)));
                            }
                            continue;
                        }
                        if let Some(&t) = by_symbol.get(&glue) {
                            out.edges.push((Target::Fn(t), edge(EdgeKind::Drop)));
                        }
                    }
                    SiteKind::Direct { symbol, args } => {
                        out.stats.direct_sites += 1;
                        match by_symbol.get(&symbol) {
                            Some(&t) => {
                                out.arities.push((t, args));
                                if matches!(functions[t.index()].kind, FnKind::Body { .. }) {
                                    out.stats.direct_to_body += 1;
                                } else {
                                    out.stats.direct_to_external += 1;
                                }
                                out.edges.push((Target::Fn(t), edge(EdgeKind::Call)));
                            }
                            None => out.stats.direct_unresolved.push((
                                f.name.to_string(),
                                format!("symbol `{symbol}` is in no dump"),
                            )),
                        }
                    }
                    SiteKind::Unresolved { path } => out.stats.direct_unresolved.push((
                        f.name.to_string(),
                        format!("the compiler could not resolve `{path}`"),
                    )),
                    SiteKind::Intrinsic => out.stats.intrinsic_sites += 1,
                    SiteKind::Virtual { trait_method, slot } => {
                        out.stats.virtual_sites += 1;
                        let targets = vtable_slots.get(&(trait_method.as_str(), slot));
                        match targets {
                            Some(ts) if !ts.is_empty() => {
                                if ts.len() > 1 {
                                    out.stats.ambiguous_indirect += 1;
                                }
                                for &t in ts {
                                    out.edges.push((Target::Fn(t), edge(EdgeKind::Virtual)));
                                }
                            }
                            _ => {
                                out.stats.unresolved_indirect += 1;
                                let key = IndirectKey::Virtual { trait_method, slot };
                                out.edges
                                    .push((Target::Unknown(key), edge(EdgeKind::Virtual)));
                            }
                        }
                    }
                    SiteKind::Indirect { sig } => {
                        out.stats.indirect_sites += 1;
                        // Resolved once every address taken is known.
                        out.edges
                            .push((Target::Indirect(sig), edge(EdgeKind::Indirect)));
                    }
                }
            }
            Some((taken, (caller, out)))
        })
        .collect();
    let mut sites: Vec<(FnId, FnSites)> = Vec::with_capacity(per_body.len());
    for (taken, body_sites) in per_body {
        address_taken.extend(taken);
        sites.push(body_sites);
    }
    let mut by_sig: HashMap<&str, Vec<FnId>> = HashMap::new();
    for &id in &address_taken {
        if let FnKind::Body { krate, instance } = functions[id.index()].kind
            && let Some(sig) = &crates[krate as usize].dump.instances[instance as usize].fn_sig
        {
            by_sig.entry(sig.as_str()).or_default().push(id);
        }
    }

    // 5. Edges.
    let mut graph = CallGraph::with_capacity(functions.len(), functions.len() * 4);
    for i in 0..functions.len() {
        graph.add_node(FnId(i as u32));
    }
    let mut unknown: BTreeMap<IndirectKey, FnId> = BTreeMap::new();
    let mut new_unknowns: Vec<Function> = Vec::new();
    let mut unknown_id = |key: IndirectKey, base: usize, new: &mut Vec<Function>| -> FnId {
        *unknown.entry(key.clone()).or_insert_with(|| {
            let id = FnId((base + new.len()) as u32);
            let (symbol, name) = match &key {
                IndirectKey::FnPtr { sig } => (
                    format!("<unknown {sig}>"),
                    format!("<any function of type `{sig}`>"),
                ),
                IndirectKey::Virtual { trait_method, slot } => (
                    format!("<unknown {trait_method}#{slot}>"),
                    format!("<any implementation of `{trait_method}`>"),
                ),
            };
            let item_path = match &key {
                IndirectKey::Virtual { trait_method, .. } => trait_method.to_string(),
                IndirectKey::FnPtr { .. } => String::new(),
            };
            new.push(Function {
                symbol: symbol.into(),
                name: name.into(),
                item_path: item_path.into(),
                kind: FnKind::Unknown(key),
            });
            id
        })
    };
    let base = functions.len();
    // The targets of indirect calls, now that every address taken is
    // known, in place (so in the order of the sites).
    let sites: Vec<(FnId, FnSites)> = sites
        .into_par_iter()
        .map(|(caller, mut out)| {
            let deferred = std::mem::take(&mut out.edges);
            for (target, edge) in deferred {
                let Target::Indirect(sig) = target else {
                    out.edges.push((target, edge));
                    continue;
                };
                let targets = by_sig.get(sig.as_str()).map(Vec::as_slice).unwrap_or(&[]);
                for &t in targets {
                    out.edges.push((Target::Fn(t), edge));
                }
                // A pointer with a C ABI may come from C; one nothing
                // in the program matches certainly does.
                let from_outside = sig.starts_with("extern ") || targets.is_empty();
                if targets.is_empty() {
                    out.stats.unresolved_indirect += 1;
                } else if targets.len() + usize::from(from_outside) > 1 {
                    out.stats.ambiguous_indirect += 1;
                }
                if from_outside {
                    out.edges
                        .push((Target::Unknown(IndirectKey::FnPtr { sig }), edge));
                }
            }
            (caller, out)
        })
        .collect();
    let mut pending_edges: Vec<(FnId, FnId, Edge)> = Vec::new();
    let mut call_arities = Vec::new();
    for (caller, mut sites) in sites {
        stats.add_sites(&mut sites.stats);
        call_arities.append(&mut sites.arities);
        for (target, edge) in sites.edges {
            let t = match target {
                Target::Fn(t) => t,
                Target::Unknown(key) => unknown_id(key, base, &mut new_unknowns),
                // Replaced by its targets above: none is left here.
                Target::Indirect(_) => continue,
            };
            pending_edges.push((caller, t, edge));
        }
    }
    for u in new_unknowns {
        graph.add_node(FnId(functions.len() as u32));
        by_symbol.insert(u.symbol.clone(), FnId(functions.len() as u32));
        functions.push(u);
    }
    for (from, to, edge) in pending_edges {
        stats.edges_by_kind[edge.kind.index()] += 1;
        graph.add_edge(
            petgraph::graph::NodeIndex::new(from.index()),
            petgraph::graph::NodeIndex::new(to.index()),
            edge,
        );
    }

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

/// The phase label of the link's per-body results ([`BodySites`]).
const BODY_SITES: &str = "link: body sites, v1";

/// What the link reads of one body, by symbol: the functions it turns
/// into pointers and its call and drop sites in block order. A function of
/// the body alone (kept per dump by the per-dump cache).
#[derive(bincode::Encode, bincode::Decode)]
struct BodySites {
    taken: Vec<Name>,
    sites: Vec<Site>,
}

#[derive(bincode::Encode, bincode::Decode)]
struct Site {
    block: u32,
    /// The terminator's span.
    span: kmir::Span,
    kind: SiteKind,
}

#[derive(bincode::Encode, bincode::Decode)]
enum SiteKind {
    /// A drop of a type with drop glue.
    Drop {
        glue: Name,
    },
    /// A call of a known instance, with its number of arguments.
    Direct {
        symbol: Name,
        args: u32,
    },
    Unresolved {
        path: Name,
    },
    Intrinsic,
    Virtual {
        trait_method: Name,
        slot: u32,
    },
    Indirect {
        sig: Name,
    },
}

/// A body's [`BodySites`].
fn body_sites(body: &kmir::Body) -> BodySites {
    let mut taken = Vec::new();
    collect_address_taken(body, &mut taken);
    let mut sites = Vec::new();
    for (bi, block) in body.blocks.iter().enumerate() {
        let kind = match &block.terminator.kind {
            TerminatorKind::Drop {
                glue: Some(glue), ..
            } => SiteKind::Drop { glue: glue.clone() },
            TerminatorKind::Call { callee, args, .. } => match callee {
                Callee::Direct { symbol } => SiteKind::Direct {
                    symbol: symbol.clone(),
                    args: args.len() as u32,
                },
                Callee::Unresolved { path } => SiteKind::Unresolved { path: path.clone() },
                Callee::Intrinsic { .. } => SiteKind::Intrinsic,
                Callee::Virtual {
                    trait_method, slot, ..
                } => SiteKind::Virtual {
                    trait_method: trait_method.clone(),
                    slot: *slot,
                },
                Callee::Indirect { sig, .. } => SiteKind::Indirect { sig: sig.clone() },
            },
            _ => continue,
        };
        sites.push(Site {
            block: bi as u32,
            span: block.terminator.span,
            kind,
        });
    }
    BodySites { taken, sites }
}

/// The target of a call site before the link names the `Unknown`
/// functions standing for what no function of the program matches.
enum Target {
    Fn(FnId),
    Unknown(IndirectKey),
    /// A call through a fn pointer of this signature, not resolved yet.
    Indirect(Name),
}

/// One body's call sites: their targets, and their counts.
#[derive(Default)]
struct FnSites {
    edges: Vec<(Target, Edge)>,
    stats: LinkStats,
    /// Each direct call's callee with its number of arguments.
    arities: Vec<(FnId, u32)>,
}

impl LinkStats {
    /// Adds one body's call-site counts (and moves its unresolved sites).
    fn add_sites(&mut self, other: &mut LinkStats) {
        self.direct_sites += other.direct_sites;
        self.direct_to_body += other.direct_to_body;
        self.direct_to_external += other.direct_to_external;
        self.direct_unresolved.append(&mut other.direct_unresolved);
        self.intrinsic_sites += other.intrinsic_sites;
        self.virtual_sites += other.virtual_sites;
        self.indirect_sites += other.indirect_sites;
        self.unresolved_indirect += other.unresolved_indirect;
        self.ambiguous_indirect += other.ambiguous_indirect;
    }
}

/// Functions a body turns into pointers: reified fn items and closures,
/// and code pointers inside constants and inline asm operands, by symbol.
fn collect_address_taken(body: &kmir::Body, out: &mut Vec<Name>) {
    for (c, _) in body.constants() {
        if let ConstValue::Memory(m) = &c.value {
            out.extend(m.fn_ptrs.iter().cloned());
        }
    }
    for block in &body.blocks {
        for s in &block.statements {
            if let StatementKind::Assign { rvalue, .. } = &s.kind
                && let Rvalue::Cast {
                    kind:
                        CastKind::ReifyFnPointer { symbol } | CastKind::ClosureFnPointer { symbol },
                    ..
                } = &**rvalue
            {
                out.push(symbol.clone());
            }
        }
        if let TerminatorKind::InlineAsm { fn_ptrs, .. } = &block.terminator.kind {
            out.extend(fn_ptrs.iter().cloned());
        }
    }
}

/// The principal trait of the `dyn` type a drop glue instance drops.
fn dyn_principal<'a>(dump: &'a kmir::CrateDump, inst: &kmir::Instance) -> Option<&'a str> {
    let kmir::InstanceKind::DropGlue { ty } = inst.kind else {
        return None;
    };
    match &dump.ty(ty)?.kind {
        kmir::TyKind::Dynamic { traits } => traits.first().map(Name::as_str),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_printed_through_another_crate_are_canonical() {
        let c = Canonical {
            crates: ["core", "alloc", "kernel", "doctests", "drv", "heck"].into(),
            modules: [
                "kernel",
                "kernel::alloc",
                "kernel::alloc::kvec",
                "doctests",
                "doctests::t",
                "heck",
            ]
            .into(),
        };
        let d = "doctests";
        // The path of an upstream item, and the same inside generic args.
        assert_eq!(
            c.name("doctests::rust_doctest_x::kernel::f", "kernel::f", d),
            "kernel::f"
        );
        assert_eq!(
            c.name(
                "doctests::t::kernel::Lock::<i32, doctests::t::kernel::B>::lock",
                "kernel::Lock::lock",
                d
            ),
            "kernel::Lock::<i32, kernel::B>::lock"
        );
        assert_eq!(
            c.name(
                "<doctests::t::kernel::X as doctests::t::core::Tr>::m",
                "",
                d
            ),
            "<kernel::X as core::Tr>::m"
        );
        // The crate's own items, and a crate name inside an identifier.
        assert_eq!(
            c.name("doctests::t::f", "doctests::t::f", d),
            "doctests::t::f"
        );
        assert_eq!(
            c.name(
                "doctests::t::f::<mydoctests::kernel::X>",
                "doctests::t::f",
                d
            ),
            "doctests::t::f::<mydoctests::kernel::X>"
        );
        // The item's own crate counts even when it is not linked.
        assert_eq!(c.name("drv::m::up::g", "up::g", "drv"), "up::g");
        assert_eq!(c.name("kernel::f", "kernel::f", "kernel"), "kernel::f");
        // Through another crate's `extern crate alloc`, in a third crate's
        // dump, and inside a trait path.
        assert_eq!(
            c.name(
                "heck::alloc::vec::Vec::<u8>::reserve",
                "alloc::vec::Vec::reserve",
                "drv"
            ),
            "alloc::vec::Vec::<u8>::reserve"
        );
        assert_eq!(
            c.name(
                "<heck::alloc::string::String as core::fmt::Write>::write_str",
                "alloc::string::String::write_str",
                "heck"
            ),
            "<alloc::string::String as core::fmt::Write>::write_str"
        );
        // A module of the program named like a crate is the module.
        assert_eq!(
            c.name(
                "kernel::alloc::kvec::Vec::<u8>::push",
                "kernel::alloc::kvec::Vec::push",
                "drv"
            ),
            "kernel::alloc::kvec::Vec::<u8>::push"
        );
        assert_eq!(
            c.name("f::<kernel::alloc::kvec::Vec<u8>>", "drv::f", "drv"),
            "f::<kernel::alloc::kvec::Vec<u8>>"
        );
        // The standard library's own modules named like crates.
        assert_eq!(
            c.name(
                "core::alloc::Layout::new::<u8>",
                "core::alloc::layout::Layout::new",
                "drv"
            ),
            "core::alloc::Layout::new::<u8>"
        );
    }
}
