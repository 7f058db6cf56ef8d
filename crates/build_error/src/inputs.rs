//! What to read: the paths given on the command line turned into object
//! files and archive members, each with a name for messages.
//!
//! A directory is searched recursively for `.o`, `.a` and `.rlib` files (a
//! kbuild object tree, a cargo target directory); a file named on the
//! command line is read whatever its name. Thin archives (kbuild's
//! `built-in.a`) hold only the paths of their members: named explicitly,
//! their members are read from disk; found in a directory, they are skipped,
//! because the same search finds their members as plain `.o` files and
//! reading them twice would report every reference twice.

use std::path::{Path, PathBuf};

use object::read::archive::ArchiveFile;

/// Extensions a directory search picks up.
const SEARCHED: &[&str] = &["o", "a", "rlib"];

/// One file found from the command line's paths.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Found {
    pub path: PathBuf,
    /// Found by a directory search rather than named on the command line.
    pub searched: bool,
}

/// Every file the paths stand for, sorted, each once; a path that does not
/// exist or a directory that cannot be read is an error naming it. The
/// third list is what a search passed over, with why: a directory with no
/// object in it, a file of a searched extension that is not a regular
/// file (a FIFO would block the read).
pub fn find(paths: &[PathBuf]) -> (Vec<Found>, Vec<InputError>, Vec<(String, &'static str)>) {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    let mut passed = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Err(e) => errors.push(InputError::new(
                path.display(),
                format!("cannot read it: {e}"),
            )),
            Ok(meta) if meta.is_dir() => {
                let before = found.len();
                for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
                    match entry {
                        Ok(entry) if entry.file_type().is_file() && is_searched(entry.path()) => {
                            found.push(Found {
                                path: entry.into_path(),
                                searched: true,
                            });
                        }
                        Ok(entry)
                            if is_searched(entry.path())
                                && !entry.file_type().is_dir()
                                && !entry.file_type().is_symlink() =>
                        {
                            passed.push((entry.path().display().to_string(), NOT_REGULAR));
                        }
                        Ok(_) => {}
                        Err(e) => {
                            let at = e.path().map_or_else(
                                || path.display().to_string(),
                                |p| p.display().to_string(),
                            );
                            errors.push(InputError::new(at, format!("cannot read it: {e}")));
                        }
                    }
                }
                if found.len() == before {
                    passed.push((
                        path.display().to_string(),
                        "a directory with no `.o`, `.a` or `.rlib` file in it",
                    ));
                }
            }
            Ok(_) => found.push(Found {
                path: path.clone(),
                searched: false,
            }),
        }
    }
    found.sort();
    // The same file given twice (or found by two overlapping directories)
    // is read once; an explicit mention wins over a search, since it
    // decides how a thin archive is treated.
    found.dedup_by(|later, earlier| {
        if later.path == earlier.path {
            earlier.searched &= later.searched;
            true
        } else {
            false
        }
    });
    (found, errors, passed)
}

/// Why a FIFO, a socket or a device is not read.
const NOT_REGULAR: &str =
    "not a regular file (a FIFO, a socket or a device): reading it could block forever";

fn is_searched(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SEARCHED.contains(&e))
}

/// An input that could not be read, by its display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub name: String,
    pub message: String,
}

impl InputError {
    pub fn new(name: impl std::fmt::Display, message: impl Into<String>) -> Self {
        InputError {
            name: name.to_string(),
            message: message.into(),
        }
    }
}

/// One object file's bytes and the name it is reported under:
/// `dir/x.o`, or `lib.a(member.o)` for an archive member.
pub struct ObjectData {
    pub name: String,
    pub data: Vec<u8>,
    pub in_archive: bool,
}

/// What reading one found file gave.
#[derive(Default)]
pub struct Read {
    pub objects: Vec<ObjectData>,
    pub errors: Vec<InputError>,
    /// Files or members that are not objects with machine code, with why
    /// (LLVM bitcode, rlib metadata, a thin archive found by a search).
    pub skipped: Vec<(String, &'static str)>,
    /// Archives opened (members are counted by `objects`).
    pub archives: usize,
}

/// The magic of LLVM bitcode, raw and in its wrapper: an LTO build's `.o`
/// files are bitcode and hold no machine code yet.
fn is_bitcode(data: &[u8]) -> bool {
    data.starts_with(b"BC\xC0\xDE") || data.starts_with(&[0xDE, 0xC0, 0x17, 0x0B])
}

/// Reads one found file: an object, or an archive's members.
pub fn read(found: &Found) -> Read {
    let mut out = Read::default();
    let name = found.path.display().to_string();
    let data = match kmir::read_regular(&found.path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            out.skipped.push((name, NOT_REGULAR));
            return out;
        }
        Err(e) => {
            out.errors
                .push(InputError::new(&name, format!("cannot read it: {e}")));
            return out;
        }
    };
    if data.starts_with(b"!<arch>\n") || data.starts_with(b"!<thin>\n") {
        read_archive(found, &name, &data, &mut out);
    } else if is_bitcode(&data) {
        out.skipped
            .push((name, "LLVM bitcode (an LTO object) has no machine code"));
    } else if let Some(why) = linked(&data) {
        out.skipped.push((name, why));
    } else {
        out.objects.push(ObjectData {
            name,
            data,
            in_archive: false,
        });
    }
    out
}

/// Why a file that `object` reads as a linked executable or shared object
/// is of no use: the link resolved its calls, and it keeps no relocation
/// against `rust_build_error` (a build that failed on one never made it).
fn linked(data: &[u8]) -> Option<&'static str> {
    match object::File::parse(data).map(|f| object::Object::kind(&f)) {
        Ok(object::ObjectKind::Executable | object::ObjectKind::Dynamic) => Some(
            "a linked file (an executable or a shared object): its calls are resolved, so it has no relocation to read; pass the objects (`.o`) or archives it was linked from",
        ),
        _ => None,
    }
}

fn read_archive(found: &Found, name: &str, data: &[u8], out: &mut Read) {
    let archive = match ArchiveFile::parse(data) {
        Ok(a) => a,
        Err(e) => {
            out.errors.push(InputError::new(
                name,
                format!("not a readable archive: {e}"),
            ));
            return;
        }
    };
    if archive.is_thin() && found.searched {
        out.skipped.push((
            name.to_string(),
            "a thin archive found by a directory search: its members are read as files",
        ));
        return;
    }
    out.archives += 1;
    let dir = found.path.parent().unwrap_or(Path::new(""));
    if archive.members().next().is_none() {
        out.skipped
            .push((name.to_string(), "an archive with no members"));
        return;
    }
    for member in archive.members() {
        let member = match member {
            Ok(m) => m,
            Err(e) => {
                out.errors.push(InputError::new(
                    name,
                    format!("a member cannot be read: {e}"),
                ));
                // The member table is one run of headers: after a broken
                // one the rest cannot be found.
                return;
            }
        };
        let member_name = String::from_utf8_lossy(member.name()).into_owned();
        let shown = format!("{name}({member_name})");
        // rlibs also hold the crate's metadata (`lib.rmeta`); only object
        // members carry machine code.
        if !(member_name.ends_with(".o") || member_name.ends_with(".obj")) {
            out.skipped.push((shown, "not an object file member"));
            continue;
        }
        let bytes = if member.is_thin() {
            // A thin archive names its members relative to itself.
            match kmir::read_regular(&dir.join(&member_name)) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                    out.skipped.push((shown, NOT_REGULAR));
                    continue;
                }
                Err(e) => {
                    out.errors
                        .push(InputError::new(&shown, format!("cannot read it: {e}")));
                    continue;
                }
            }
        } else {
            match member.data(data) {
                Ok(b) => b.to_vec(),
                Err(e) => {
                    out.errors
                        .push(InputError::new(&shown, format!("cannot read it: {e}")));
                    continue;
                }
            }
        };
        if is_bitcode(&bytes) {
            out.skipped
                .push((shown, "LLVM bitcode (an LTO object) has no machine code"));
            continue;
        }
        out.objects.push(ObjectData {
            name: shown,
            data: bytes,
            in_archive: true,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_searched_by_extension_and_files_taken_as_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).expect("mkdir");
        for f in ["a.o", "b.rlib", "c.a", "d.rs", "e.ko"] {
            std::fs::write(sub.join(f), b"x").expect("write");
        }
        let named = sub.join("e.ko");
        let (found, errors, _) = find(&[dir.path().to_path_buf(), named.clone(), sub.join("a.o")]);
        assert!(errors.is_empty());
        let names: Vec<(String, bool)> = found
            .iter()
            .map(|f| {
                let n = f.path.file_name().map(|n| n.to_string_lossy().into_owned());
                (n.unwrap_or_default(), f.searched)
            })
            .collect();
        assert_eq!(
            names,
            [
                ("a.o".to_string(), false),
                ("b.rlib".to_string(), true),
                ("c.a".to_string(), true),
                ("e.ko".to_string(), false),
            ]
        );
    }

    #[test]
    fn a_missing_path_is_an_error_naming_it() {
        let (found, errors, _) = find(&[PathBuf::from("/nonexistent/kanalyze.o")]);
        assert!(found.is_empty());
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].name, "/nonexistent/kanalyze.o");
    }

    #[test]
    fn bitcode_is_skipped_not_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("lto.o");
        std::fs::write(&path, b"BC\xC0\xDE rest").expect("write");
        let read = read(&Found {
            path,
            searched: true,
        });
        assert!(read.objects.is_empty() && read.errors.is_empty());
        assert_eq!(read.skipped.len(), 1);
    }
}
