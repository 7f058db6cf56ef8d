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
                continue;
            }
            Err(e) => {
                found.errors.push(Diagnostic::error(format!(
                    "cannot read `{}`: {e}",
                    path.display()
                )));
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
                Err(e) => found.errors.push(walk_error(path, &e)),
            }
        }
        if found.files.len() == before {
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
