//! Replacing a file's contents safely, for every file kanalyze writes (the
//! triage file, the summary cache, the HTML report).
//!
//! * **Locked.** The file is locked (`flock`, exclusive) while it is read,
//!   changed and replaced, so two writers updating one file take turns: the
//!   second reads what the first wrote. The lock is on the file itself:
//!   after it is granted, the writer checks that the path still names the
//!   file it locked (a writer before it may have renamed a new one over
//!   it), and locks the new one if not.
//! * **Never half-written, never through a planted name.** The new contents
//!   go to a temporary file with a random name, created exclusively
//!   (`O_EXCL`: it cannot be a link someone placed there) in the same
//!   directory, which is then renamed over the file.
//! * **Links are followed to their target.** A file that is a symlink (a
//!   triage file linked from a shared checkout) keeps its link: the
//!   target is replaced, not the link.
//! * **Only regular files.** A FIFO, a device or a directory at the path
//!   is an error, found without blocking on it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// How many symlinks are followed before giving up (the kernel's limit).
const MAX_LINKS: usize = 40;

/// `path` with every symlink at its end followed: the file a write through
/// `path` must replace. Links inside the directories are the file system's
/// business (the rename happens in the final directory).
pub fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links to follow from `{}`",
        path.display()
    )))
}

/// Opens `path` for reading and writing without following a link at its
/// end and without blocking (a FIFO would block an open for reading), and
/// checks that it is a regular file. Creates it when `create`.
fn open_regular(path: &Path, create: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(create);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "`{}` is not a regular file",
            path.display()
        )));
    }
    Ok(file)
}

/// Whether `file` is the file `path` names now.
fn still_named(file: &File, path: &Path) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let held = file.metadata()?;
        Ok(match std::fs::symlink_metadata(path) {
            Ok(now) => now.dev() == held.dev() && now.ino() == held.ino(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(e),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        Ok(true)
    }
}

/// Reads the whole of the file at `path` (through its symlinks) as the
/// last writer left it. A writer holds the file `path` names locked from
/// before the new contents exist (creating it empty, when there was none)
/// until it renames them over it; a reader that opened that file waits
/// for the lock, shared, and then reads the file `path` names by then.
/// `open` opens a file for reading (and checks what it is).
pub fn read_settled(path: &Path, open: impl Fn(&Path) -> io::Result<File>) -> io::Result<Vec<u8>> {
    let resolved = resolve(path)?;
    // A file replaced while we waited is opened again; a stream of
    // writers that never lets up gets the last one read as it is.
    for _ in 0..MAX_LINKS {
        let mut file = open(&resolved)?;
        file.lock_shared()?;
        if still_named(&file, &resolved)? {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            return Ok(bytes);
        }
    }
    let mut bytes = Vec::new();
    open(&resolved)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The file `path` resolves to, locked exclusively, and whether it was
/// created for the lock (it did not exist).
struct Locked {
    file: File,
    path: PathBuf,
    created: bool,
}

fn lock(path: &Path) -> io::Result<Locked> {
    let resolved = resolve(path)?;
    loop {
        let existed = std::fs::symlink_metadata(&resolved).is_ok();
        let file = open_regular(&resolved, true)?;
        file.lock()?;
        if still_named(&file, &resolved)? {
            return Ok(Locked {
                file,
                path: resolved,
                created: !existed,
            });
        }
        // Replaced while we waited: lock the file it is now.
    }
}

/// Replaces the file at `path` (through its symlinks) with what `write`
/// puts into a fresh file, under the file's lock. The new file gets the
/// old one's permissions (those of a newly created file when there was
/// none).
pub fn write_with(path: &Path, write: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let locked = lock(path)?;
    replace(&locked, write)
}

/// Replaces the file at `path` with `bytes`, as [`write_with`].
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |f| f.write_all(bytes))
}

/// Reads the file at `path` (through its symlinks; `None` when it does
/// not exist) and replaces it with what `update` returns, all under the
/// file's lock: concurrent updates take turns, each reading what the one
/// before wrote. `update` returning `Ok(None)` leaves the file as it was
/// (a file that did not exist is not created); its error is returned as
/// is, the file untouched.
pub fn update<E>(
    path: &Path,
    update: impl FnOnce(Option<&[u8]>) -> Result<Option<Vec<u8>>, E>,
) -> Result<(), UpdateError<E>> {
    let mut locked = lock(path).map_err(UpdateError::Io)?;
    let mut old = Vec::new();
    locked.file.read_to_end(&mut old).map_err(UpdateError::Io)?;
    let result = update((!locked.created).then_some(old.as_slice()));
    let new = match result {
        Ok(Some(new)) => new,
        Ok(None) => return discard(&locked).map_err(UpdateError::Io),
        Err(e) => {
            discard(&locked).map_err(UpdateError::Io)?;
            return Err(UpdateError::Update(e));
        }
    };
    replace(&locked, |f| f.write_all(&new)).map_err(UpdateError::Io)
}

/// What [`update`] could not do.
#[derive(Debug)]
pub enum UpdateError<E> {
    /// Reading, locking or writing the file failed.
    Io(io::Error),
    /// The update itself refused.
    Update(E),
}

/// Leaves the file as it was before [`lock`]: one created only to be
/// locked is removed (still under the lock, and only if it is still the
/// empty file created).
fn discard(locked: &Locked) -> io::Result<()> {
    if locked.created
        && locked.file.metadata()?.len() == 0
        && still_named(&locked.file, &locked.path)?
    {
        std::fs::remove_file(&locked.path)?;
    }
    Ok(())
}

fn replace(locked: &Locked, write: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let dir = match locked.path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = locked
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    write(tmp.as_file_mut())?;
    tmp.as_file()
        .set_permissions(locked.file.metadata()?.permissions())?;
    tmp.as_file().sync_all()?;
    tmp.persist(&locked.path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests;
