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
    /// directory without dumps).
    pub bad_paths: Vec<PathBuf>,
}

/// Expands `paths`: a file is taken as is (whatever its extension, since the
/// user named it), a directory is searched recursively for `*.kmir`. Files
/// of one directory come sorted by path so that output does not depend on
/// the file system's listing order.
pub fn find_dumps(paths: &[PathBuf]) -> Found {
    let mut found = Found::default();
    for path in paths {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                found.errors.push(
                    Diagnostic::error(format!("`{}` does not exist", path.display()))
                        .help("pass a `.kmir` dump or a directory that contains dumps"),
                );
                found.bad_paths.push(path.clone());
                continue;
            }
            Err(e) => {
                found.errors.push(Diagnostic::error(format!(
                    "cannot read `{}`: {e}",
                    path.display()
                )));
                found.bad_paths.push(path.clone());
                continue;
            }
        };
        if !meta.is_dir() {
            found.files.push(path.clone());
            continue;
        }
        let before = found.files.len();
        // Symlinks are not followed: a kernel build tree links back into the
        // source tree, and following links could loop or find dumps twice.
        for entry in WalkDir::new(path).sort_by_file_name() {
            match entry {
                Ok(entry) => {
                    if !entry.file_type().is_dir() && is_dump_name(entry.path()) {
                        found.files.push(entry.into_path());
                    }
                }
                Err(e) => {
                    found.errors.push(walk_error(path, &e));
                    found.bad_paths.push(e.path().unwrap_or(path).to_path_buf());
                }
            }
        }
        if found.files.len() == before {
            found.bad_paths.push(path.clone());
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

/// The program of every readable dump among `paths`, or `None` when nothing
/// usable remains. Unreadable files and duplicate crates are reported as
/// they are found and counted in the returned summary; the other crates are
/// still linked.
pub fn load_program(paths: &[PathBuf]) -> Option<(program::Program, LoadSummary)> {
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
    let t = std::time::Instant::now();
    let loaded: Vec<(PathBuf, Result<CrateDump, LoadError>)> = found
        .files
        .par_iter()
        .map(|p| (p.clone(), kmir::read_file(p)))
        .collect();
    summary.decode_time = t.elapsed();
    let mut crates = Vec::with_capacity(loaded.len());
    for (path, result) in loaded {
        match result {
            Ok(dump) => {
                let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
                crates.push(program::LinkedCrate {
                    path,
                    dump,
                    modified,
                })
            }
            Err(e) => {
                crate::diag::load_error(&e)
                    .as_warning()
                    .note("this crate is left out; the others are analysed without it")
                    .emit();
                summary.skipped.push(path);
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
    let t = std::time::Instant::now();
    let (program, problems) = program::link(crates);
    summary.link_time = t.elapsed();
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
            program::LinkProblem::IdenticalDuplicate { .. } if identical.len() > IDENTICAL_LISTED => {
                continue;
            }
            program::LinkProblem::IdenticalDuplicate { .. } => Diagnostic::warning(p.to_string()),
            program::LinkProblem::OtherTarget { .. } => Diagnostic::warning(p.to_string())
                .note("a build's host tools and proc-macro dependencies are compiled by the same RUSTC, so their dumps land in the same directory"),
            program::LinkProblem::ConflictingDuplicate { .. } => Diagnostic::warning(p.to_string())
                .help(
                    "remove stale dumps from the directory, or point kanalyze at one build's dumps",
                ),
        };
        d.emit();
    }
    summary.duplicates = problems.len();
    if !summary.skipped.is_empty() {
        Diagnostic::error(format!(
            "{} of {} input(s) could not be used and were skipped; the analysis covers the other {} crate(s)",
            summary.skipped.len(),
            summary.files + found.bad_paths.len(),
            program.crates.len()
        ))
        .note("a finding that needs a skipped crate's functions is missing from this run, so it cannot pass: the exit status is 2 whatever is found")
        .emit();
    }
    Some((program, summary))
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
    /// Every input that could not be used: paths that named no dump and
    /// dumps that could not be read.
    pub skipped: Vec<PathBuf>,
    pub duplicates: usize,
    pub decode_time: std::time::Duration,
    pub link_time: std::time::Duration,
}
