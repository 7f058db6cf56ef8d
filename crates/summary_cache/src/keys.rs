//! The components' keys: what a component's analysis reads, hashed.

use std::io::Read;

use program::{FnId, Program};
use rayon::prelude::*;
use solver::Schedule;
use twox_hash::XxHash3_128;

use crate::pack::FORMAT_VERSION;

/// A hash of labelled values: the settings a caller adds (the profile, the
/// spec files, the annotations, the invariants), then the ones the cache
/// adds itself. Each value is length-prefixed, so two sequences of values
/// hash alike only if they are the same values.
pub struct Fingerprint(XxHash3_128);

impl Default for Fingerprint {
    fn default() -> Self {
        Fingerprint::new()
    }
}

impl Fingerprint {
    pub fn new() -> Self {
        Fingerprint(XxHash3_128::new())
    }

    /// Adds `bytes`, under `label`.
    pub fn add(&mut self, label: &str, bytes: &[u8]) {
        self.bytes(label.as_bytes());
        self.bytes(bytes);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.0.write(&(b.len() as u64).to_le_bytes());
        self.0.write(b);
    }

    fn u128(&mut self, v: u128) {
        self.0.write(&v.to_le_bytes());
    }

    fn u32(&mut self, v: u32) {
        self.0.write(&v.to_le_bytes());
    }

    pub fn finish(&self) -> u128 {
        self.0.finish_128()
    }
}

/// The hash of a whole file.
fn file_hash(path: &std::path::Path) -> std::io::Result<u128> {
    // The same hash as `XxHash3_128::oneshot` of the whole file.
    let mut file = kmir::open_regular(path)?;
    let mut hasher = XxHash3_128::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.write(&buf[..n]);
    }
    Ok(hasher.finish_128())
}

/// What every key starts from: the cache format, the analyser's version
/// and build (its executable's bytes: the built-in spec, the analysis and
/// its limits are in it), the caller's settings, the linked crates in
/// order (a crate index in a stored span means the same crate), and the
/// traits the program has vtables for (whether dropping a `dyn Trait` is
/// analysed through its glues depends on it).
fn global(program: &Program, settings: &Fingerprint) -> Result<u128, String> {
    let build = build_hash()?;
    let mut h = Fingerprint::new();
    h.u32(FORMAT_VERSION);
    h.add("version", env!("CARGO_PKG_VERSION").as_bytes());
    h.u128(build);
    h.u128(settings.finish());
    h.u32(program.crates.len() as u32);
    for c in &program.crates {
        let header = &c.dump.header;
        h.add("crate", header.crate_name.as_bytes());
        h.add("target", header.target.as_bytes());
        h.add("path", c.path.as_os_str().as_encoded_bytes());
    }
    let mut traits: Vec<&str> = program
        .crates
        .iter()
        .flat_map(|c| {
            c.dump
                .vtables
                .iter()
                .filter_map(|v| v.trait_path.as_deref())
        })
        .collect();
    traits.sort_unstable();
    traits.dedup();
    for t in traits {
        h.add("vtable trait", t.as_bytes());
    }
    Ok(h.finish())
}

/// The hash of the analyser's executable (its build: the built-in spec,
/// the analysis and its limits are in it), computed once per process.
pub(crate) fn build_hash() -> Result<u128, String> {
    static BUILD: std::sync::OnceLock<Result<u128, String>> = std::sync::OnceLock::new();
    BUILD
        .get_or_init(|| {
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot locate the kanalyze executable: {e}"))?;
            file_hash(&exe).map_err(|e| {
                format!(
                    "cannot read the kanalyze executable `{}`: {e}",
                    exe.display()
                )
            })
        })
        .clone()
}

/// The hash of each linked dump's file: the hash of the bytes loaded,
/// where the loader computed it (the bytes the program holds, whatever
/// happened to the file since), else the file's, checked against the time it was
/// last written when it was loaded: a dump rewritten since is not what the
/// program holds.
fn dump_hashes(program: &Program) -> Result<Vec<u128>, String> {
    program
        .crates
        .par_iter()
        .map(|c| {
            if let Some(hash) = c.content_hash {
                return Ok(hash);
            }
            let modified = std::fs::metadata(&c.path).and_then(|m| m.modified()).ok();
            if modified.is_none() || modified != c.modified {
                return Err(format!(
                    "`{}` changed after it was read (or its time cannot be read)",
                    c.path.display()
                ));
            }
            file_hash(&c.path).map_err(|e| format!("cannot read `{}`: {e}", c.path.display()))
        })
        .collect()
}

/// Every component's key, indexed like `schedule.sccs`.
pub(crate) fn component_keys(
    program: &Program,
    schedule: &Schedule,
    settings: &Fingerprint,
) -> Result<Vec<u128>, String> {
    let global = global(program, settings)?;
    let dumps = dump_hashes(program)?;
    let mut keys = vec![0u128; schedule.sccs.len()];
    // A level's components only call lower levels: their keys are known.
    for level in &schedule.levels {
        let computed: Vec<(usize, u128)> = level
            .par_iter()
            .map(|&scc| {
                let scc = scc as usize;
                (scc, key(program, schedule, &keys, &dumps, global, scc))
            })
            .collect();
        for (scc, k) in computed {
            keys[scc] = k;
        }
    }
    Ok(keys)
}

/// One component's key: its members in the schedule's order (the order of
/// the analysis and of a recursive component's rounds depends on it), each
/// with what the analysis reads of it, and its edges in order.
fn key(
    program: &Program,
    schedule: &Schedule,
    keys: &[u128],
    dumps: &[u128],
    global: u128,
    scc: usize,
) -> u128 {
    let members = &schedule.sccs[scc];
    let mut h = Fingerprint::new();
    h.u128(global);
    for &f in members {
        let func = program.function(f);
        h.add("symbol", func.symbol.as_bytes());
        h.add("name", func.name.as_bytes());
        h.add("item", func.item_path.as_bytes());
        h.add("kind", format!("{:?}", func.kind).as_bytes());
        if let program::FnKind::Body { krate, .. } = func.kind {
            h.u128(dumps.get(krate as usize).copied().unwrap_or_default());
        }
        for (g, edge) in program.callees(f) {
            h.u32(edge.kind.index() as u32);
            h.u32(edge.block);
            match member_position(members, g) {
                Some(i) => {
                    h.add("member", &[]);
                    h.u32(i);
                }
                None => h.u128(keys[schedule.scc_of[g.index()] as usize]),
            }
        }
    }
    h.finish()
}

fn member_position(members: &[FnId], g: FnId) -> Option<u32> {
    // Members are sorted (the schedule's order).
    members.binary_search(&g).ok().map(|i| i as u32)
}
