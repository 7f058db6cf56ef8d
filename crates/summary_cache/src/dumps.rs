//! The per-dump cache: what the load and the phases that walk every body
//! learn of one dump from its bytes alone, kept under the hash of those
//! bytes, so that the next run over the same file decodes none of its
//! bodies (docs/output.md, "Incremental re-runs").
//!
//! An entry holds the dump's body index (`kmir::BodyIndex`: each body's
//! range in the file, CRC-32 and facts) and the per-body results of the
//! phases that walk every body (`program::Memo`, by phase label). Each is
//! a function of the dump's bytes, the analyser's build and the settings
//! its label names, never of another dump: what depends on other dumps
//! (symbol resolution, which copy of an instance the link takes) is
//! computed on every run from these results.
//!
//! One file per dump, `dumps/<hash>.kdump` in the cache directory:
//!
//! ```text
//! offset  size  field
//!      0    16  magic `kanalyze-dump-fx`
//!     16     4  format version (u32 LE)
//!     20     8  payload length (u64 LE)
//!     28    16  payload hash (xxh3-128, LE)
//!     44     …  payload: `Entry`, bincode 2 standard configuration
//! ```
//!
//! An entry is used only if the file is exactly what was written (magic,
//! version, length, checksum), it decodes, it names the dump's hash (the
//! one in its file name) and it was written by this build; a file that
//! fails is ignored with a warning (another build's is replaced
//! silently), and the dump is decoded in full.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use program::{PhaseResults, Program};
use rayon::prelude::*;
use twox_hash::XxHash3_128;

use crate::framed::{Frame, decode_bounded};

const FRAME: Frame = Frame {
    magic: b"kanalyze-dump-fx",
    version: DUMP_FORMAT_VERSION,
    what: "a kanalyze per-dump cache entry",
    format: "per-dump cache format",
};
const EXTENSION: &str = "kdump";

/// The version of the entry format: bumped whenever `Entry` or anything
/// it holds changes its encoding (a phase's results are versioned by
/// their label, and every entry by the build).
pub const DUMP_FORMAT_VERSION: u32 = 1;

/// The subdirectory of the cache directory that holds the entries.
pub const SUBDIR: &str = "dumps";

/// Entries kept: this many, or four times the dumps of the last run if
/// that is more, and no more bytes than four times the last run's own
/// entries (or [`MIN_KEPT_BYTES`]); the least recently used go first.
pub const MIN_KEPT: usize = 64;

/// The bytes of entries always allowed (see [`MIN_KEPT`]).
pub const MIN_KEPT_BYTES: u64 = 64 << 20;

#[derive(Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
struct Entry {
    /// The analyser's build (the hash of its executable).
    build: u128,
    /// The xxh3-128 of the dump's bytes.
    dump: u128,
    index: kmir::BodyIndex,
    /// Phase label → per instance: the encoded result.
    phases: Vec<(String, Vec<Option<Vec<u8>>>)>,
}

/// What an entry gives back for one dump.
#[derive(Debug)]
pub struct Recalled {
    pub index: kmir::BodyIndex,
    pub phases: BTreeMap<String, PhaseResults>,
}

/// The hash the per-dump cache keys a dump by: xxh3-128 of its bytes.
pub fn content_hash(bytes: &[u8]) -> u128 {
    XxHash3_128::oneshot(bytes)
}

/// The per-dump cache of one run.
pub struct DumpCache {
    dir: PathBuf,
    /// The analyser's build, `None` until it is known (hashed on a thread
    /// of its own while the first dump is read).
    build: std::sync::OnceLock<Result<u128, String>>,
    warnings: Mutex<Vec<String>>,
    /// The dumps hashed so far: bytes, and nanoseconds of all threads.
    hashed: std::sync::atomic::AtomicU64,
    hashing: std::sync::atomic::AtomicU64,
}

/// What the per-dump cache did in one run, for `--timings`.
#[derive(Clone, Debug, Default)]
pub struct DumpFigures {
    /// Entries written, and their bytes.
    pub written: usize,
    pub bytes_written: u64,
}

impl DumpCache {
    /// The per-dump cache in `dir` (the cache directory; entries live in
    /// its `dumps/`). The analyser's build is identified (its executable
    /// hashed) on a thread of its own meanwhile; if it cannot be, no entry
    /// is read or written, with a warning.
    pub fn open(dir: &Path) -> DumpCache {
        std::thread::spawn(|| {
            let _ = crate::keys::build_hash();
        });
        DumpCache {
            dir: dir.join(SUBDIR),
            build: std::sync::OnceLock::new(),
            warnings: Mutex::new(Vec::new()),
            hashed: Default::default(),
            hashing: Default::default(),
        }
    }

    /// [`content_hash`] of a dump's bytes, timed for `--timings`.
    pub fn hash(&self, bytes: &[u8]) -> u128 {
        use std::sync::atomic::Ordering::Relaxed;
        let t = std::time::Instant::now();
        let h = content_hash(bytes);
        self.hashing
            .fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
        self.hashed.fetch_add(bytes.len() as u64, Relaxed);
        h
    }

    /// The bytes hashed so far and the time it took (all threads).
    pub fn hashed(&self) -> (u64, std::time::Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.hashed.load(Relaxed),
            std::time::Duration::from_nanos(self.hashing.load(Relaxed)),
        )
    }

    /// The analyser's build (waiting for its hash), or `None` after a
    /// warning (once) when it cannot be identified.
    fn build(&self) -> Option<u128> {
        let mut first = false;
        let build = self.build.get_or_init(|| {
            first = true;
            crate::keys::build_hash()
        });
        match build {
            Ok(b) => Some(*b),
            Err(why) => {
                if first {
                    let mut w = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
                    w.push(format!("the per-dump cache is not used this run: {why}"));
                }
                None
            }
        }
    }

    fn path(&self, hash: u128) -> PathBuf {
        self.dir.join(format!("{hash:032x}.{EXTENSION}"))
    }

    /// The entry of the dump whose bytes hash to `hash`, if this build
    /// wrote one. A file that is not a good entry for it is ignored (with
    /// a warning, unless it is only another build's).
    pub fn lookup(&self, hash: u128) -> Option<Recalled> {
        let build = self.build()?;
        let path = self.path(hash);
        let entry = match self.read(hash, build) {
            Ok(e) => e,
            Err(Some(why)) => {
                self.warn(&path, &why);
                return None;
            }
            Err(None) => return None,
        };
        // Used: the eviction keeps the most recently used entries.
        let _ = std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        Some(Recalled {
            index: entry.index,
            phases: entry
                .phases
                .into_iter()
                .map(|(label, results)| {
                    let results = results
                        .into_iter()
                        .map(|r| r.map(Vec::into_boxed_slice))
                        .collect();
                    (label, results)
                })
                .collect(),
        })
    }

    /// The entry of the dump whose bytes hash to `hash`, written by build
    /// `build`: `Err(None)` when there is none (or another build's),
    /// `Err(Some(why))` when the file is not a good entry for it.
    fn read(&self, hash: u128, build: u128) -> Result<Entry, Option<String>> {
        let bytes = match safe_write::read_settled(&self.path(hash), kmir::open_regular) {
            Ok(b) => b,
            // No entry, or no directory for entries (a cache directory
            // that cannot be created says so when the run writes).
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Err(None);
            }
            Err(e) => return Err(Some(format!("cannot read it: {e}"))),
        };
        let entry = decode(&bytes).map_err(Some)?;
        if entry.dump != hash {
            return Err(Some("it is the entry of another dump".to_string()));
        }
        if entry.build != build {
            // Written by another build of kanalyze: replaced this run.
            return Err(None);
        }
        Ok(entry)
    }

    /// Adds a warning about a bad entry (`why`), for the caller to show.
    fn warn(&self, path: &Path, why: &str) {
        let mut w = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        w.push(format!(
            "ignoring the per-dump cache entry `{}`: {why}; its dump is decoded in full",
            path.display()
        ));
    }

    /// Notes that the entry of the dump at `dump` did not fit its bytes
    /// (`why`): the dump was decoded in full.
    pub fn misfit(&self, dump: &Path, why: &str) {
        let mut w = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        w.push(format!(
            "ignoring the per-dump cache entry of `{}`: {why}; the dump is decoded in full",
            dump.display()
        ));
    }

    /// The warnings so far (bad entries), taken.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Writes the entry of every crate of `program` loaded with a memo
    /// whose results are not all on disk yet (a dump seen for the first
    /// time, or one for which this run computed something new), then
    /// keeps only the most recently used entries. Failures are warnings.
    pub fn save(&self, program: &Program) -> (DumpFigures, Vec<String>) {
        let Some(build) = self.build() else {
            return (DumpFigures::default(), self.take_warnings());
        };
        let written: Vec<Result<Option<u64>, String>> = program
            .crates
            .par_iter()
            .map(|c| {
                let (Some(hash), Some(memo), Some(index)) =
                    (c.content_hash, &c.memo, c.body_index())
                else {
                    return Ok(None);
                };
                if memo.on_disk() && !memo.computed() {
                    return Ok(None);
                }
                // What this run computed, over what the entry on disk holds
                // (read again: the memo freed each phase's results once
                // the phase had run).
                let mut phases = memo.computed_results();
                let old = if memo.on_disk() {
                    self.read(hash, build).map(|e| e.phases).unwrap_or_default()
                } else {
                    Vec::new()
                };
                for (label, old) in old {
                    let Some(fresh) = phases.get_mut(&label) else {
                        continue;
                    };
                    if fresh.is_empty() {
                        *fresh = old
                            .into_iter()
                            .map(|r| r.map(Vec::into_boxed_slice))
                            .collect();
                    } else {
                        for (slot, old) in fresh.iter_mut().zip(old) {
                            if slot.is_none() {
                                *slot = old.map(Vec::into_boxed_slice);
                            }
                        }
                    }
                }
                let entry = Entry {
                    build,
                    dump: hash,
                    index,
                    phases: phases
                        .into_iter()
                        .filter(|(_, results)| !results.is_empty())
                        .map(|(label, results)| {
                            let results = results.into_iter().map(|r| r.map(Vec::from)).collect();
                            (label, results)
                        })
                        .collect(),
                };
                write(&self.dir, &self.path(hash), &entry)
                    .map(Some)
                    .map_err(|why| format!("`{}`: {why}", c.path.display()))
            })
            .collect();
        let mut figures = DumpFigures::default();
        let mut warnings = self.take_warnings();
        let mut failed = Vec::new();
        for w in written {
            match w {
                Ok(Some(n)) => {
                    figures.written += 1;
                    figures.bytes_written += n;
                }
                Ok(None) => {}
                Err(why) => failed.push(why),
            }
        }
        // One warning for all the entries that could not be written (they
        // usually fail for one reason: the directory).
        if let Some(first) = failed.first() {
            warnings.push(format!(
                "{} per-dump cache entr{} could not be written to `{}` (the first, of {first})",
                failed.len(),
                if failed.len() == 1 { "y" } else { "ies" },
                self.dir.display()
            ));
        }
        let own: u64 = program
            .crates
            .iter()
            .filter_map(|c| std::fs::metadata(self.path(c.content_hash?)).ok())
            .map(|m| m.len())
            .sum();
        evict(
            &self.dir,
            MIN_KEPT.max(4 * program.crates.len()),
            MIN_KEPT_BYTES.max(own.saturating_mul(4)),
        );
        (figures, warnings)
    }
}

fn encode(entry: &Entry) -> Result<Vec<u8>, String> {
    let payload = bincode::encode_to_vec(entry, bincode::config::standard())
        .map_err(|e| format!("cannot encode it: {e}"))?;
    Ok(FRAME.wrap(&payload))
}

fn decode(bytes: &[u8]) -> Result<Entry, String> {
    let payload = FRAME.payload(bytes)?;
    let decoded = decode_bounded::<Entry>(payload);
    match decoded {
        Ok((entry, n)) if n == payload.len() => Ok(entry),
        Ok(_) => Err("trailing bytes after its contents".into()),
        Err(e) => Err(format!("its contents do not decode: {e}")),
    }
}

/// Writes `entry` to `path` in `dir` through a temporary file renamed over
/// it, under the entry's lock (`safe_write`). Returns the bytes written.
fn write(dir: &Path, path: &Path, entry: &Entry) -> Result<u64, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let bytes = encode(entry)?;
    safe_write::write(path, &bytes).map_err(|e| e.to_string())?;
    Ok(bytes.len() as u64)
}

/// Keeps the most recently used entries of `dir`, at most `keep` of them
/// and `bytes` bytes together (the most recent one always), and removes
/// temporary files left by writers that died more than an hour ago.
/// Failures are ignored: another run may be removing the same files.
fn evict(dir: &Path, keep: usize, bytes: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    let mut kept = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let modified = e.metadata().and_then(|m| m.modified()).ok();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(".tmp") {
            let old = modified
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|age| age.as_secs() > 3600);
            if old {
                let _ = std::fs::remove_file(&path);
            }
        } else if path.extension().is_some_and(|x| x == EXTENSION) {
            let len = e.metadata().map_or(0, |m| m.len());
            kept.push((modified, len, path));
        }
    }
    kept.sort_by_key(|p| std::cmp::Reverse(p.0));
    let mut total = 0u64;
    for (i, (_, len, path)) in kept.into_iter().enumerate() {
        total = total.saturating_add(len);
        if i > 0 && (i >= keep || total > bytes) {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(build: u128, dump: u128) -> Entry {
        Entry {
            build,
            dump,
            index: kmir::BodyIndex {
                ranges: vec![Some((44, 50)), None],
                facts: vec![kmir::BodyFacts::default(); 2],
                crcs: vec![7, 0],
            },
            phases: vec![("phase".to_string(), vec![Some(vec![1, 2, 3]), None])],
        }
    }

    fn cache(dir: &Path) -> DumpCache {
        DumpCache {
            dir: dir.join(SUBDIR),
            build: std::sync::OnceLock::from(Ok(5)),
            warnings: Mutex::new(Vec::new()),
            hashed: Default::default(),
            hashing: Default::default(),
        }
    }

    #[test]
    fn an_entry_comes_back_as_written() {
        let dir = tempfile::tempdir().expect("temp dir");
        let c = cache(dir.path());
        write(&c.dir, &c.path(9), &entry(5, 9)).expect("written");
        let r = c.lookup(9).expect("recalled");
        assert_eq!(r.index, entry(5, 9).index);
        assert_eq!(
            r.phases.get("phase").map(|v| v.len()),
            Some(2),
            "{:?}",
            r.phases
        );
        assert_eq!(r.phases["phase"][0].as_deref(), Some(&[1u8, 2, 3][..]));
        assert!(c.take_warnings().is_empty());
        assert!(c.lookup(10).is_none(), "no entry for another dump");
        assert!(c.take_warnings().is_empty());
    }

    #[test]
    fn a_bad_entry_is_ignored_with_a_warning() {
        let dir = tempfile::tempdir().expect("temp dir");
        let c = cache(dir.path());
        let good = encode(&entry(5, 9)).expect("encodes");
        std::fs::create_dir_all(&c.dir).expect("dir");
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"not an entry at all".to_vec(), "not a kanalyze per-dump"),
            (good[..good.len() - 1].to_vec(), "truncated"),
            (
                {
                    let mut b = good.clone();
                    let last = b.len() - 1;
                    b[last] ^= 1;
                    b
                },
                "checksum",
            ),
            (
                {
                    let mut b = good.clone();
                    b[16] = 99;
                    b
                },
                "format 99",
            ),
            // Another dump's entry under this dump's name.
            (encode(&entry(5, 10)).expect("encodes"), "another dump"),
            // Well-formed, but its payload is not an entry.
            (
                {
                    let payload = vec![0xff; 12];
                    let mut b = FRAME.header(12, XxHash3_128::oneshot(&payload));
                    b.extend_from_slice(&payload);
                    b
                },
                "do not decode",
            ),
        ];
        for (bytes, why) in cases {
            std::fs::write(c.path(9), &bytes).expect("written");
            assert!(c.lookup(9).is_none(), "{why}");
            let w = c.take_warnings();
            assert_eq!(w.len(), 1, "{why}: {w:?}");
            assert!(w[0].contains(why), "{why}: {w:?}");
        }
        // Another build's entry: not used, and no warning (it is replaced).
        std::fs::write(c.path(9), encode(&entry(6, 9)).expect("encodes")).expect("written");
        assert!(c.lookup(9).is_none());
        assert!(c.take_warnings().is_empty());
    }

    #[test]
    fn the_least_recently_used_entries_go() {
        let dir = tempfile::tempdir().expect("temp dir");
        let c = cache(dir.path());
        for d in 0..5u128 {
            write(&c.dir, &c.path(d), &entry(5, d)).expect("written");
            let t =
                std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + d as u64);
            std::fs::File::options()
                .write(true)
                .open(c.path(d))
                .and_then(|f| f.set_modified(t))
                .expect("time set");
        }
        // Recalling an entry makes it the most recently used.
        assert!(c.lookup(0).is_some());
        evict(&c.dir, 2, u64::MAX);
        let left: Vec<bool> = (0..5).map(|d| c.path(d).exists()).collect();
        assert_eq!(left, [true, false, false, false, true]);
        // A bound on the bytes: the most recent entry stays whatever its size.
        let len = std::fs::metadata(c.path(0)).expect("an entry").len();
        evict(&c.dir, 2, len - 1);
        let left: Vec<bool> = (0..5).map(|d| c.path(d).exists()).collect();
        assert_eq!(left, [true, false, false, false, false]);
    }
}
