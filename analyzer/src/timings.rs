//! `--timings` (hidden): how long each phase of a run took, printed on
//! stderr at the end of the run. Phases are recorded whether or not the
//! flag is given (a clock read and a push per phase); only printing is
//! conditional.

use std::sync::Mutex;
use std::time::{Duration, Instant};

static PHASES: Mutex<Vec<(&'static str, Duration)>> = Mutex::new(Vec::new());

/// Records that `phase` took `took`; a phase recorded twice adds up.
pub fn record(phase: &'static str, took: Duration) {
    let mut phases = PHASES.lock().unwrap_or_else(|e| e.into_inner());
    match phases.iter_mut().find(|(p, _)| *p == phase) {
        Some((_, d)) => *d += took,
        None => phases.push((phase, took)),
    }
}

/// Runs `f`, recording its time as `phase`.
pub fn time<T>(phase: &'static str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    record(phase, t.elapsed());
    r
}

/// The time `phase` took so far (zero if it never ran).
pub fn get(phase: &str) -> Duration {
    let phases = PHASES.lock().unwrap_or_else(|e| e.into_inner());
    phases
        .iter()
        .find(|(p, _)| *p == phase)
        .map_or(Duration::ZERO, |(_, d)| *d)
}

/// Prints every recorded phase, in the order first recorded, and the
/// wall time since `start`.
pub fn print(start: Instant) {
    let phases = PHASES.lock().unwrap_or_else(|e| e.into_inner());
    eprintln!("timings ({} threads):", rayon::current_num_threads());
    for (phase, took) in phases.iter() {
        eprintln!("  {phase:<12} {:.3}s", took.as_secs_f64());
    }
    eprintln!("  {:<12} {:.3}s", "total", start.elapsed().as_secs_f64());
}
