//! Finding and loading dumps named on the command line.

use std::path::{Path, PathBuf};

use kmir::{CrateDump, LoadError};
use rayon::prelude::*;
use walkdir::WalkDir;

use crate::diag::Diagnostic;

/// The dump files named by `paths`, in a deterministic order, and a
/// diagnostic for every path that named none.
#[derive(Debug, Default)]
pub struct Found {
    pub files: Vec<PathBuf>,
    pub errors: Vec<Diagnostic>,
    /// The paths that named no readable dump (missing, unreadable, a
    /// directory without dumps), with why.
    pub bad_paths: Vec<Skipped>,
}

/// An input the analysis could not use, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// Expands `paths`: a file is taken as is (whatever its extension, since the
/// user named it), a directory is searched recursively for `*.kmir`. Files
/// of one directory come sorted by path so that output does not depend on
/// the file system's listing order.
pub fn find_dumps(paths: &[PathBuf]) -> Found {
    let mut found = Found::default();
    // A file named twice, or reached through two of the paths given (a
    // directory and a file in it), is one input.
    let mut seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let mut dirs_seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    for path in paths {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                found.errors.push(
                    Diagnostic::error(format!("`{}` does not exist", path.display()))
                        .help("pass a `.kmir` dump or a directory that contains dumps"),
                );
                found.bad_paths.push(Skipped {
                    path: path.clone(),
                    reason: "does not exist".to_string(),
                });
                continue;
            }
            Err(e) => {
                found.errors.push(Diagnostic::error(format!(
                    "cannot read `{}`: {e}",
                    path.display()
                )));
                found.bad_paths.push(Skipped {
                    path: path.clone(),
                    reason: format!("cannot be read: {e}"),
                });
                continue;
            }
        };
        if !meta.is_dir() {
            if !meta.is_file() {
                // A FIFO would block the read forever, a device never end.
                let what = kmir::regular::describe(&meta.file_type());
                found.errors.push(
                    Diagnostic::error(format!(
                        "`{}` is not a regular file ({what}): it is not read",
                        path.display()
                    ))
                    .help("pass the `.kmir` files that kextract writes, or a directory that contains them"),
                );
                found.bad_paths.push(Skipped {
                    path: path.clone(),
                    reason: format!("not a regular file ({what})"),
                });
                continue;
            }
            push_once(&mut found.files, &mut seen, path);
            continue;
        }
        // A directory named twice is searched once.
        if !dirs_seen.insert(canonical(path)) {
            continue;
        }
        let mut dumps_here = 0;
        // Symlinks are not followed: a kernel build tree links back into the
        // source tree, and following links could loop or find dumps twice.
        for entry in WalkDir::new(path).sort_by_file_name() {
            match entry {
                Ok(entry) => {
                    if entry.file_type().is_dir() || !is_dump_name(entry.path()) {
                        continue;
                    }
                    // Only regular files (or links to one) are read: a FIFO
                    // named like a dump would block the run forever. It is
                    // no dump kextract wrote, so it is skipped, not lost.
                    match std::fs::metadata(entry.path()) {
                        Ok(m) if m.is_file() => {
                            dumps_here += 1;
                            push_once(&mut found.files, &mut seen, entry.path());
                        }
                        Ok(m) => Diagnostic::warning(format!(
                            "`{}` is not a regular file ({}): skipped",
                            entry.path().display(),
                            kmir::regular::describe(&m.file_type())
                        ))
                        .note("kextract writes dumps as regular files; this one is not a dump")
                        .emit(),
                        // A dangling link: the read says why it fails, and
                        // the input counts as lost.
                        Err(_) => {
                            dumps_here += 1;
                            push_once(&mut found.files, &mut seen, entry.path());
                        }
                    }
                }
                Err(e) => {
                    found.errors.push(walk_error(path, &e));
                    found.bad_paths.push(Skipped {
                        path: e.path().unwrap_or(path).to_path_buf(),
                        reason: format!("cannot be read: {e}"),
                    });
                }
            }
        }
        if dumps_here == 0 {
            found.bad_paths.push(Skipped {
                path: path.clone(),
                reason: "no dumps in it".to_string(),
            });
            found.errors.push(
                Diagnostic::error(format!(
                    "no `.{}` dumps found in `{}`",
                    kmir::EXTENSION,
                    path.display()
                ))
                .help(
                    "kextract writes one dump per crate into the directory named by \
                     `KANALYZE_OUT`; build with it set, then pass that directory",
                ),
            );
        }
    }
    found
}

/// The path with symlinks and `..` resolved, where it can be.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Adds `path` to `files` unless the same file is already there.
fn push_once(files: &mut Vec<PathBuf>, seen: &mut std::collections::HashSet<PathBuf>, path: &Path) {
    if seen.insert(canonical(path)) {
        files.push(path.to_path_buf());
    }
}

fn is_dump_name(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == kmir::EXTENSION)
}

fn walk_error(root: &Path, e: &walkdir::Error) -> Diagnostic {
    let at = e.path().unwrap_or(root);
    match e.io_error() {
        Some(io) => Diagnostic::error(format!("cannot read `{}`: {io}", at.display())),
        None => Diagnostic::error(format!("cannot walk `{}`: {e}", root.display())),
    }
}

/// Loads `files` in parallel but yields them in order, a batch of about one
/// file per thread at a time, so that a directory of many large dumps is not
/// held in memory at once.
pub fn load_in_order<F>(files: &[PathBuf], mut each: F) -> std::io::Result<()>
where
    F: FnMut(&Path, Result<CrateDump, LoadError>) -> std::io::Result<()>,
{
    let batch = rayon::current_num_threads().max(1);
    for chunk in files.chunks(batch) {
        let loaded: Vec<_> = chunk.par_iter().map(|p| kmir::read_file(p)).collect();
        for (path, result) in chunk.iter().zip(loaded) {
            each(path, result)?;
        }
    }
    Ok(())
}

/// Decodes `files` on every thread, the largest first (each thread takes
/// the largest file left), so that the decode does not end waiting for one
/// large dump started last; the results come back in the order of `files`.
fn decode_largest_first(
    files: &[PathBuf],
    progress: &crate::progress::Progress,
    cache: Option<&summary_cache::DumpCache>,
) -> Vec<(PathBuf, Result<Loaded, LoadError>)> {
    let mut order: Vec<(u64, usize)> = files
        .iter()
        .enumerate()
        .map(|(i, p)| (std::fs::metadata(p).map_or(0, |m| m.len()), i))
        .collect();
    order.sort_by_key(|&(size, i)| (std::cmp::Reverse(size), i));
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Every thread of the pool takes files until none is left.
    let mut decoded: Vec<(usize, Result<Loaded, LoadError>)> = rayon::broadcast(|_| {
        let mut mine = Vec::new();
        // One buffer per thread for the files' bytes (largest first: it
        // is allocated once).
        let mut buffer = Vec::new();
        loop {
            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(&(_, i)) = order.get(k) else { break };
            mine.push((i, read(&files[i], &mut buffer, cache)));
            progress.inc(1);
        }
        mine
    })
    .into_iter()
    .flatten()
    .collect();
    decoded.sort_by_key(|(i, _)| *i);
    decoded
        .into_iter()
        .map(|(i, read)| (files[i].clone(), read))
        .collect()
}

/// One dump as loaded: with the per-dump cache, the hash of its bytes and
/// the per-body results recalled for them (`None`: no entry).
struct Loaded {
    dump: kmir::LazyDump,
    hash: Option<u128>,
    recalled: Option<std::collections::BTreeMap<String, program::PhaseResults>>,
}

/// Reads one dump; with the per-dump cache, its bytes are hashed and, if
/// the cache has an entry for them, its bodies are not decoded.
fn read(
    path: &Path,
    buffer: &mut Vec<u8>,
    cache: Option<&summary_cache::DumpCache>,
) -> Result<Loaded, LoadError> {
    let Some(cache) = cache else {
        return kmir::read_file_lazy_into(path, buffer, |_| None).map(|(dump, _)| Loaded {
            dump,
            hash: None,
            recalled: None,
        });
    };
    let mut hash = None;
    let mut phases = None;
    let (dump, used) = kmir::read_file_lazy_into(path, buffer, |bytes| {
        let h = cache.hash(bytes);
        hash = Some(h);
        let recalled = cache.lookup(h)?;
        phases = Some(recalled.phases);
        Some(recalled.index)
    })?;
    if let Err(why) = used {
        // The entry's index does not fit the bytes it was stored under:
        // the dump was decoded in full, and the entry is not used.
        cache.misfit(path, &why.to_string());
        phases = None;
    }
    Ok(Loaded {
        dump,
        hash,
        recalled: phases,
    })
}

/// The program of every readable dump among `paths`, or `None` when nothing
/// usable remains. Unreadable files and duplicate crates are reported as
/// they are found and counted in the returned summary; the other crates are
/// still linked.
pub fn load_program(paths: &[PathBuf]) -> Option<(program::Program, LoadSummary)> {
    load_program_with(paths, &crate::progress::Progress::none(), None, false)
}

/// [`load_program`], drawing its progress (dumps loaded, then the link),
/// with the per-dump cache if one is given (docs/output.md, "Incremental
/// re-runs").
///
/// With `kernel`, the program is the kernel (`--profile kernel`): its
/// target is a kernel target, and a directory without a dump for one is an
/// error naming the dumps it has.
pub fn load_program_with(
    paths: &[PathBuf],
    progress: &crate::progress::Progress,
    cache: Option<&summary_cache::DumpCache>,
    kernel: bool,
) -> Option<(program::Program, LoadSummary)> {
    let found = find_dumps(paths);
    let mut summary = LoadSummary {
        files: found.files.len(),
        ..LoadSummary::default()
    };
    for e in &found.errors {
        e.emit();
    }
    summary.input_errors = found.errors.len();
    summary.skipped.extend(found.bad_paths.iter().cloned());
    let named = found.files.len() + found.bad_paths.len();
    let t = crate::timings::mark();
    progress.phase("loading dumps", found.files.len() as u64);
    let loaded = decode_largest_first(&found.files, progress, cache);
    summary.decode_time = crate::timings::record("decode", t);
    let mut crates = Vec::with_capacity(loaded.len());
    for (path, result) in loaded {
        match result {
            Ok(loaded) => {
                let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
                let instances = loaded.dump.dump.instances.len();
                let mut c = program::LinkedCrate::lazy(path, loaded.dump, modified);
                if let Some(hash) = loaded.hash {
                    let memo = program::Memo::new(loaded.recalled, instances);
                    c = c.with_cache(hash, Some(memo));
                }
                crates.push(c)
            }
            Err(e) => {
                let d = crate::diag::load_error(&e);
                let reason = d.message.clone();
                d.as_warning()
                    .note("this crate is left out; the others are analysed without it")
                    .emit();
                summary.skipped.push(Skipped { path, reason });
            }
        }
    }
    if crates.is_empty() {
        if found.files.is_empty() && found.errors.is_empty() {
            Diagnostic::error("no dumps to analyse").emit();
        } else if !found.files.is_empty() {
            Diagnostic::error(format!(
                "none of the {} dump(s) could be read; nothing to analyse",
                found.files.len()
            ))
            .emit();
        }
        return None;
    }
    progress.phase("linking", 1);
    let t = crate::timings::mark();
    let filter = |t: &str| crate::kernel_target::is_kernel_target(t);
    let options = program::LinkOptions {
        prefer: kernel.then_some(&filter as program::TargetTest<'_>),
    };
    let (program, problems) = program::link_with(crates, &options);
    summary.link_time = crate::timings::record("link", t);
    // Identical copies are harmless and can come by the thousand (a build
    // tree copied into itself): a few are listed, many are counted.
    let identical: Vec<&program::LinkProblem> = problems
        .iter()
        .filter(|p| matches!(p, program::LinkProblem::IdenticalDuplicate { .. }))
        .collect();
    if identical.len() > IDENTICAL_LISTED {
        let mut d = Diagnostic::warning(format!(
            "{} dumps are identical copies of other dumps; they are ignored",
            identical.len()
        ));
        for p in identical.iter().take(IDENTICAL_EXAMPLES) {
            d = d.note(p.to_string());
        }
        d.note(format!(
            "… and {} more",
            identical.len() - IDENTICAL_EXAMPLES
        ))
        .help("point kanalyze at one build's dumps to leave the copies out")
        .emit();
    }
    for p in &problems {
        let d = match p {
            program::LinkProblem::IdenticalDuplicate { .. }
                if identical.len() > IDENTICAL_LISTED =>
            {
                continue;
            }
            program::LinkProblem::IdenticalDuplicate { .. } => Diagnostic::warning(p.to_string()),
            program::LinkProblem::OtherTarget {
                target,
                program_target,
                paths,
                ..
            } => {
                for path in paths {
                    summary.skipped.push(Skipped {
                        path: path.clone(),
                        reason: format!(
                            "built for target `{target}`; the program is built for `{program_target}`"
                        ),
                    });
                }
                Diagnostic::warning(p.to_string())
                    .note("a build's host tools and proc-macro dependencies are compiled by the same RUSTC, so their dumps land in the same directory")
            }
            program::LinkProblem::HostCrates {
                crates,
                program_target,
            } => {
                summary.host_crates.extend(crates.iter().cloned());
                let mut d = Diagnostic::warning(format!(
                    "{} host crate{} of the build left out: built for another target than the program (`{program_target}`), so no function of the program can call them",
                    crates.len(),
                    if crates.len() == 1 { "" } else { "s" }
                ));
                for c in crates {
                    d = d.note(format!("{}: `{}`", c.describe(), c.path.display()));
                }
                d.note("a build compiles its host tools and proc macros with the same RUSTC as the program, so their dumps land in the same directory; they are not part of the program, and the result is not partial for them")
            }
            program::LinkProblem::ConflictingDuplicate { .. } => Diagnostic::warning(p.to_string())
                .help(
                    "remove stale dumps from the directory, or point kanalyze at one build's dumps",
                ),
        };
        d.emit();
    }
    summary.duplicates = problems.len();
    if kernel && let Some(d) = only_host_crates(&program, &summary.host_crates) {
        d.emit();
        return None;
    }
    summary.missing = missing_crates(&program);
    // A crate whose dump is among the inputs that could not be used is
    // not missing too: that loss is counted once, as the unusable input.
    summary.missing.retain(|m| {
        let file = format!("{}-{}.{}", m.name, m.stable_crate_id, kmir::EXTENSION);
        !summary
            .skipped
            .iter()
            .any(|s| s.path.file_name().is_some_and(|f| f == file.as_str()))
    });
    for m in &summary.missing {
        let d = Diagnostic::warning(format!(
            "the dump of crate `{}` is missing: {}",
            m.name,
            m.needed_by_text()
        ));
        if m.functions_called > 0 {
            d.note(format!(
                "the program calls {} of its function{} without a body: what they do is unknown, and a finding that needs them is missing from this run",
                m.functions_called,
                if m.functions_called == 1 { "" } else { "s" }
            ))
            .help("build the crate with kextract into the same directory (the whole build, not only the crates that changed), or pass the directory that has its dump")
            .emit();
        } else {
            d.note("the program calls none of its functions that no other dump has, so nothing is lost").emit();
        }
    }
    if !summary.skipped.is_empty() {
        Diagnostic::warning(format!(
            "{} of {named} input(s) could not be used and were skipped; the analysis covers the other {} crate(s)",
            summary.skipped.len(),
            program.crates.len()
        ))
        .note("a finding that needs a skipped crate's functions is missing from this run: `check` reports the result as partial (exit status 3 unless `--allow-partial`)")
        .emit();
    }
    Some((program, summary))
}

/// The error for a kernel run (`--profile kernel`) over a directory that
/// has no dump built for a kernel target but the build's host crates: the
/// dumps of crates that link the compiler's `proc_macro` library (which
/// only runs inside the compiler: proc macros and the crates they use)
/// say that this is a kernel build's directory before its kernel crates
/// were built, not kernel code compiled for the host.
fn only_host_crates(
    program: &program::Program,
    left_out: &[program::HostCrate],
) -> Option<Diagnostic> {
    let kernel_target = program
        .crates
        .iter()
        .any(|c| crate::kernel_target::is_kernel_target(&c.dump.header.target));
    let tools: Vec<&str> = program
        .crates
        .iter()
        .filter(|c| {
            c.dump
                .header
                .dependencies
                .iter()
                .any(|d| d.name == "proc_macro" && d.sysroot)
        })
        .map(|c| c.dump.header.crate_name.as_str())
        .collect();
    if kernel_target || tools.is_empty() {
        return None;
    }
    let mut d = Diagnostic::error(format!(
        "no dump is built for a kernel target: the {} dump{} are a build's host crates",
        program.crates.len() + left_out.len(),
        if program.crates.len() + left_out.len() == 1 {
            ""
        } else {
            "s"
        }
    ));
    for c in &program.crates {
        d = d.note(format!(
            "`{}` ({}): `{}`",
            c.dump.header.crate_name,
            c.dump.header.target,
            c.path.display()
        ));
    }
    for c in left_out {
        d = d.note(format!("{}: `{}`", c.describe(), c.path.display()));
    }
    Some(
        d.note(format!(
            "{} link{} the compiler's `proc_macro` library: {} run{} inside the build, not in the kernel",
            tools
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if tools.len() == 1 { "s" } else { "" },
            if tools.len() == 1 { "it" } else { "they" },
            if tools.len() == 1 { "s" } else { "" },
        ))
        .help("the kernel's crates are missing: did the build stop before them, or write their dumps elsewhere? Pass the directory of the kernel build's dumps"),
    )
}

/// Up to this many identical copies get a warning each; more are one
/// warning with a count.
const IDENTICAL_LISTED: usize = 3;
/// How many of them that one warning names.
const IDENTICAL_EXAMPLES: usize = 3;

/// What loading left out, and how long it took.
#[derive(Debug, Default)]
pub struct LoadSummary {
    pub files: usize,
    pub input_errors: usize,
    /// Every input that could not be used, with why: paths that named no
    /// dump, dumps that could not be read, dumps of another target that
    /// are not host crates of the build.
    pub skipped: Vec<Skipped>,
    /// The build's host crates, left out: not part of the program.
    pub host_crates: Vec<program::HostCrate>,
    /// Crates the program's dumps depend on whose dumps are missing.
    pub missing: Vec<MissingCrate>,
    pub duplicates: usize,
    pub decode_time: std::time::Duration,
    pub link_time: std::time::Duration,
}

impl LoadSummary {
    /// Whether the result lacks something the program needs: an input that
    /// could not be used, or a crate it calls into whose dump is missing.
    pub fn partial(&self) -> bool {
        !self.skipped.is_empty() || self.missing.iter().any(|m| m.functions_called > 0)
    }
}

/// A crate that dumps of the program were compiled against, whose own dump
/// is not among the inputs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MissingCrate {
    #[serde(rename = "crate")]
    pub name: String,
    /// Its stable crate id, as the dependents recorded it (hex).
    pub stable_crate_id: String,
    /// The crates whose dumps depend on it.
    pub needed_by: Vec<String>,
    /// How many of its functions the program calls, drops or points to
    /// without a body anywhere: what the run could not analyse.
    pub functions_called: usize,
    /// A crate of this name is linked, but of another build (another
    /// stable crate id).
    pub other_build: bool,
}

impl MissingCrate {
    /// "`demo_driver` depends on it (and 2 more)".
    pub fn needed_by_text(&self) -> String {
        let named: Vec<String> = self
            .needed_by
            .iter()
            .take(3)
            .map(|n| format!("`{n}`"))
            .collect();
        let more = self.needed_by.len().saturating_sub(3);
        let mut text = format!(
            "{} depend{} on it",
            named.join(", "),
            if self.needed_by.len() == 1 { "s" } else { "" }
        );
        if more > 0 {
            text.push_str(&format!(" (and {more} more)"));
        }
        if self.other_build {
            text.push_str(", and the dump of that name is of another build (another crate id)");
        }
        text
    }
}

/// The crates the linked dumps were compiled against (their recorded
/// dependencies, less the prebuilt crates of the compiler's sysroot) that
/// are not linked, with the functions of each that the program reaches
/// without a body.
pub fn missing_crates(program: &program::Program) -> Vec<MissingCrate> {
    use std::collections::{BTreeMap, BTreeSet, HashSet};
    let linked: HashSet<(&str, u64)> = program
        .crates
        .iter()
        .map(|c| {
            (
                c.dump.header.crate_name.as_str(),
                c.dump.header.stable_crate_id,
            )
        })
        .collect();
    let names: HashSet<&str> = linked.iter().map(|(n, _)| *n).collect();
    let mut missing: BTreeMap<(&str, u64), BTreeSet<&str>> = BTreeMap::new();
    for c in &program.crates {
        for d in &c.dump.header.dependencies {
            if d.sysroot || linked.contains(&(d.name.as_str(), d.stable_crate_id)) {
                continue;
            }
            missing
                .entry((d.name.as_str(), d.stable_crate_id))
                .or_default()
                .insert(c.dump.header.crate_name.as_str());
        }
    }
    if missing.is_empty() {
        return Vec::new();
    }
    let mut called: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &program.functions {
        if let program::FnKind::Upstream { krate } = &f.kind {
            *called.entry(krate.as_str()).or_default() += 1;
        }
    }
    missing
        .into_iter()
        .map(|((name, id), by)| MissingCrate {
            name: name.to_string(),
            stable_crate_id: format!("{id:016x}"),
            needed_by: by.into_iter().map(str::to_string).collect(),
            functions_called: called.get(name).copied().unwrap_or(0),
            other_build: names.contains(name),
        })
        .collect()
}
