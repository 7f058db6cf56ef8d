//! The summary cache: the results of every call-graph component of a solve
//! (its members' summaries and events), kept on disk so that the next run
//! over mostly the same dumps analyses only what changed.
//!
//! A component's **key** is a 128-bit hash of everything its analysis
//! reads ([`keys`]): the analyser's build, the settings that shape
//! summaries (given by the caller as a [`Fingerprint`]), the linked crates
//! and the `dyn` traits the program has vtables for, and for each member its
//! identity, the content hash of the dump its body comes from and its call
//! edges in order, each callee outside the component by the callee's own
//! key. Keys are computed callees first, so a key covers everything below
//! the component: re-extracting one crate changes the keys of its
//! components and of every component that reaches them, and nothing else.
//!
//! The cache never changes a result: it recalls a component only under an
//! equal key, the stored results name functions by symbol
//! ([`program::wire`]) and come back as the same values, and a pack that is
//! not exactly what this build wrote (another file, another format, a
//! checksum that does not match, an entry that does not decode) is
//! ignored, with a warning where the file itself is bad. The solver still
//! checks that a recalled component has the members it would analyse.
//!
//! On disk, one **pack** per program (its inputs' paths) in the cache
//! directory, rewritten whole after each run with that run's components
//! (so its size follows the program's), written to a temporary file and
//! renamed, so a reader sees an old pack or a new one, never a torn one.
//! At most [`MAX_PACKS`] packs are kept, the least recently used go.

pub mod dumps;
mod framed;
mod keys;
mod pack;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use analysis::{ComponentResults, Events, Summary};
use program::{FnId, Program};
use solver::Schedule;

pub use dumps::{DumpCache, DumpFigures, content_hash};
pub use keys::Fingerprint;
pub use pack::{FORMAT_VERSION, MAX_PACKS};

/// What a run did with the cache, for `--timings`.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    /// Hashing the dumps and the binary, and the components' keys.
    pub keys: Duration,
    /// Reading the pack.
    pub load: Duration,
    /// Writing the new pack.
    pub save: Duration,
    /// Components with bodies recalled / analysed.
    pub recalled: usize,
    pub analysed: usize,
    /// Entries of the pack (from the previous run).
    pub entries_read: usize,
    /// Bytes of the pack written (0 when the pack on disk was this run's).
    pub bytes_written: u64,
}

/// One component's results for the next pack.
enum Stored {
    /// Recalled: entry `index` of the previous pack, as it is.
    Recalled(usize),
    /// Analysed: the functions the results name, in the positions
    /// [`program::wire`] gave them, and the encoded results.
    Analysed { ids: Vec<FnId>, bytes: Vec<u8> },
}

/// The cache of one run: the keys of its components, the previous run's
/// entries, and what this run recalls and analyses.
pub struct Cache<'p> {
    program: &'p Program,
    schedule: &'p Schedule,
    pack_path: PathBuf,
    dir: PathBuf,
    keys: Vec<u128>,
    old: pack::Pack,
    /// The previous pack's symbols, as this program's functions.
    old_ids: Vec<Option<FnId>>,
    old_by_key: HashMap<u128, usize>,
    slots: Vec<OnceLock<Stored>>,
    recalled: AtomicUsize,
    analysed: AtomicUsize,
    /// Entries whose key matched but that did not decode, or results that
    /// did not encode.
    unreadable: AtomicUsize,
    figures: Figures,
    warnings: Vec<String>,
}

/// The pack of a program, read (and checked) on a thread of its own from
/// the start of a run, so that reading it overlaps the load and the link.
pub struct Prefetch {
    path: PathBuf,
    read: std::thread::JoinHandle<Result<Option<pack::Pack>, String>>,
}

/// Starts reading the pack of the program read from `inputs` in `dir`.
pub fn prefetch(dir: &Path, inputs: &[PathBuf]) -> Prefetch {
    let path = dir.join(pack::file_name(inputs));
    let at = path.clone();
    Prefetch {
        path,
        read: std::thread::spawn(move || pack::read(&at)),
    }
}

impl<'p> Cache<'p> {
    /// Opens the cache in `dir` for `program` (read from `inputs`, the
    /// paths given on the command line) solved in `schedule`'s order.
    /// `None` (with the reason added to `warnings`) when the cache cannot
    /// be used at all this run: the binary or a dump cannot be read, or a
    /// dump changed since it was loaded. A bad pack only makes the run
    /// cold (with a warning too).
    pub fn open(
        dir: &Path,
        inputs: &[PathBuf],
        program: &'p Program,
        schedule: &'p Schedule,
        settings: &Fingerprint,
        warnings: &mut Vec<String>,
    ) -> Option<Cache<'p>> {
        Cache::open_prefetched(dir, inputs, program, schedule, settings, warnings, None)
    }

    /// [`Cache::open`], with the pack read by `prefetch` if given (for the
    /// same `dir` and `inputs`).
    pub fn open_prefetched(
        dir: &Path,
        inputs: &[PathBuf],
        program: &'p Program,
        schedule: &'p Schedule,
        settings: &Fingerprint,
        warnings: &mut Vec<String>,
        prefetch: Option<Prefetch>,
    ) -> Option<Cache<'p>> {
        let t = Instant::now();
        let keys = match keys::component_keys(program, schedule, settings) {
            Ok(k) => k,
            Err(why) => {
                warnings.push(format!("the summary cache is not used this run: {why}"));
                return None;
            }
        };
        let keys_time = t.elapsed();
        let t = Instant::now();
        let pack_path = dir.join(pack::file_name(inputs));
        let read = match prefetch {
            Some(p) if p.path == pack_path => p
                .read
                .join()
                .unwrap_or_else(|_| Err("the thread reading it failed".to_string())),
            _ => pack::read(&pack_path),
        };
        let old = match read {
            Ok(p) => p.unwrap_or_default(),
            Err(why) => {
                warnings.push(format!(
                    "ignoring the summary cache `{}`: {why}; this run analyses every function",
                    pack_path.display()
                ));
                pack::Pack::default()
            }
        };
        let old_ids = old.symbols.iter().map(|s| program.lookup(s)).collect();
        let old_by_key = old
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.key, i))
            .collect();
        let figures = Figures {
            keys: keys_time,
            load: t.elapsed(),
            entries_read: old.entries.len(),
            ..Figures::default()
        };
        Some(Cache {
            program,
            schedule,
            pack_path,
            dir: dir.to_owned(),
            slots: (0..keys.len()).map(|_| OnceLock::new()).collect(),
            keys,
            old,
            old_ids,
            old_by_key,
            recalled: AtomicUsize::new(0),
            analysed: AtomicUsize::new(0),
            unreadable: AtomicUsize::new(0),
            figures,
            warnings: Vec::new(),
        })
    }

    /// Writes this run's components as the new pack and drops the oldest
    /// packs beyond [`MAX_PACKS`]; returns the figures and the warnings of
    /// the whole run (a pack that could not be written is one).
    pub fn save(mut self) -> (Figures, Vec<String>) {
        let t = Instant::now();
        let unreadable = self.unreadable.load(Ordering::Relaxed);
        if unreadable > 0 {
            self.warnings.push(format!(
                "{unreadable} component(s) could not be decoded from, or encoded into, the summary cache (one that could not be decoded was analysed)"
            ));
        }
        self.figures.recalled = self.recalled.load(Ordering::Relaxed);
        self.figures.analysed = self.analysed.load(Ordering::Relaxed);
        if self.figures.analysed == 0
            && unreadable == 0
            && self.figures.recalled == self.old.entries.len()
        {
            // Every entry was recalled and nothing else analysed: the pack
            // on disk is this run's. Only its time moves (the eviction
            // keeps the most recently used packs).
            let _ = std::fs::File::options()
                .write(true)
                .open(&self.pack_path)
                .and_then(|f| f.set_modified(std::time::SystemTime::now()));
            self.figures.save = t.elapsed();
            return (self.figures, self.warnings);
        }
        let mut symbols: Vec<&str> = Vec::new();
        let mut index: HashMap<FnId, u32> = HashMap::new();
        let mut entries = Vec::new();
        for (scc, slot) in self.slots.iter().enumerate() {
            let (fns, bytes): (Vec<FnId>, &[u8]) = match slot.get() {
                None => continue,
                Some(Stored::Recalled(i)) => {
                    let e = &self.old.entries[*i];
                    // Recalled, so every symbol is one of the program's.
                    let fns: Option<Vec<FnId>> = e
                        .ids
                        .iter()
                        .map(|&i| self.old_ids.get(i as usize).copied().flatten())
                        .collect();
                    let Some(fns) = fns else { continue };
                    (fns, &e.bytes)
                }
                Some(Stored::Analysed { ids, bytes }) => (ids.clone(), bytes),
            };
            let ids = fns
                .iter()
                .map(|&f| {
                    *index.entry(f).or_insert_with(|| {
                        symbols.push(&self.program.function(f).symbol);
                        (symbols.len() - 1) as u32
                    })
                })
                .collect();
            entries.push(pack::EntryRef {
                key: self.keys[scc],
                ids,
                bytes,
            });
        }
        let new = pack::PackRef { symbols, entries };
        match pack::write(&self.dir, &self.pack_path, &new) {
            Ok(n) => self.figures.bytes_written = n,
            Err(why) => self.warnings.push(format!(
                "the summary cache could not be written to `{}`: {why}",
                self.dir.display()
            )),
        }
        pack::evict(&self.dir, &self.pack_path);
        self.figures.save = t.elapsed();
        (self.figures, self.warnings)
    }

    fn scc(&self, members: &[FnId]) -> Option<usize> {
        let first = members.first()?;
        let scc = *self.schedule.scc_of.get(first.index())? as usize;
        // The solver's members are the schedule's; anything else is not a
        // component this cache keyed.
        (self.schedule.sccs.get(scc).map(Vec::as_slice) == Some(members)).then_some(scc)
    }
}

impl analysis::Recall for Cache<'_> {
    fn recall(&self, members: &[FnId]) -> Option<ComponentResults> {
        let scc = self.scc(members)?;
        let index = *self.old_by_key.get(&self.keys[scc])?;
        let entry = &self.old.entries[index];
        let ids: Option<Vec<FnId>> = entry
            .ids
            .iter()
            .map(|&i| self.old_ids.get(i as usize).copied().flatten())
            .collect();
        let Some(ids) = ids else {
            // Equal keys name the same functions; a symbol missing from the
            // program means the entry is not what its key says.
            self.unreadable.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        match program::wire::decode::<ComponentResults>(&entry.bytes, ids) {
            Ok(results) => {
                let _ = self.slots[scc].set(Stored::Recalled(index));
                self.recalled.fetch_add(1, Ordering::Relaxed);
                Some(results)
            }
            Err(_) => {
                self.unreadable.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    fn remember(&self, members: &[FnId], results: &[(FnId, Summary, Option<Box<Events>>)]) {
        let Some(scc) = self.scc(members) else { return };
        self.analysed.fetch_add(1, Ordering::Relaxed);
        match program::wire::encode(&results) {
            Ok((bytes, ids)) => {
                let _ = self.slots[scc].set(Stored::Analysed { ids, bytes });
            }
            Err(_) => {
                self.unreadable.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The default cache directory: `$XDG_CACHE_HOME/kanalyze`, else
/// `$HOME/.cache/kanalyze`; `None` when neither variable is set.
pub fn default_dir() -> Option<PathBuf> {
    let nonempty = |v: &str| std::env::var_os(v).filter(|s| !s.is_empty());
    nonempty("XDG_CACHE_HOME")
        .map(|d| PathBuf::from(d).join("kanalyze"))
        .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".cache").join("kanalyze")))
}

#[cfg(test)]
mod tests;
