//! `KEXTRACT_TIMINGS=1`: what extraction adds to a compilation, phase by
//! phase, printed on stderr once per dumped crate (docs/performance.md,
//! "Extraction: where the time goes"). Off, it costs one relaxed atomic load
//! per phase.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

pub const TIMINGS_VAR: &str = "KEXTRACT_TIMINGS";

static ENABLED: AtomicBool = AtomicBool::new(false);

/// The phases, in the order they are printed.
#[derive(Clone, Copy)]
pub enum Phase {
    /// Copying each local body's drop-elaborated MIR (`stash.rs`).
    Stash,
    /// The compiler's mono item collection, forced before extraction
    /// (codegen would run it anyway, after).
    Collect,
    /// Translating the instances codegen emits.
    Codegenned,
    /// Translating the other instances (local monomorphic functions, and
    /// what the drop-elaborated bodies call that codegen inlined).
    Added,
    /// Statics and the tool attributes.
    Rest,
    /// Encoding the dump and writing it (a temporary file, then a rename).
    Write,
}

const PHASES: [(&str, Phase); 6] = [
    ("stash", Phase::Stash),
    ("collect", Phase::Collect),
    ("codegenned", Phase::Codegenned),
    ("added", Phase::Added),
    ("rest", Phase::Rest),
    ("write", Phase::Write),
];

static NANOS: [AtomicU64; PHASES.len()] = [const { AtomicU64::new(0) }; PHASES.len()];

pub fn init() {
    let on = std::env::var_os(TIMINGS_VAR).is_some_and(|v| !v.is_empty() && v != "0");
    ENABLED.store(on, Ordering::Relaxed);
}

/// Runs `f`, adding its time to `phase` when timings are on.
pub fn time<T>(phase: Phase, f: impl FnOnce() -> T) -> T {
    if !ENABLED.load(Ordering::Relaxed) {
        return f();
    }
    let start = Instant::now();
    let result = f();
    let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    NANOS[phase as usize].fetch_add(nanos, Ordering::Relaxed);
    result
}

/// Adds the time since `start` to `phase` (for phases that return early
/// on errors, where a closure would be awkward).
pub fn add(phase: Phase, start: Instant) {
    if ENABLED.load(Ordering::Relaxed) {
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        NANOS[phase as usize].fetch_add(nanos, Ordering::Relaxed);
    }
}

/// Prints one line for `crate_name`: seconds per phase and the total.
pub fn report(crate_name: &str, instances: usize) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let mut line = format!("kextract-timings: {crate_name} instances={instances}");
    let mut total = 0.0;
    for (name, phase) in PHASES {
        let secs = NANOS[phase as usize].load(Ordering::Relaxed) as f64 / 1e9;
        total += secs;
        line.push_str(&format!(" {name}={secs:.3}"));
    }
    line.push_str(&format!(" total={total:.3}"));
    eprintln!("{line}");
}
