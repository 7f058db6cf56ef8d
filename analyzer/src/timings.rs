//! `--timings` (hidden): how long each phase of a run took, wall-clock and
//! CPU time of the whole process (all threads), printed on stderr at the
//! end of the run. Phases are recorded whether or not the flag is given (two
//! clock reads and a push per phase); only printing is conditional.
//!
//! The CPU column is what makes the figures usable on a loaded machine:
//! with one thread, a phase's CPU time is its work whatever else runs, so
//! the serial fraction can be computed from it (docs/performance.md).

use std::sync::Mutex;
use std::time::{Duration, Instant};

struct Phase {
    name: &'static str,
    wall: Duration,
    cpu: Duration,
    /// Bodies decoded on demand during the phase (`program::bodies_decoded`).
    decoded: u64,
}

static PHASES: Mutex<Vec<Phase>> = Mutex::new(Vec::new());

/// A point in time, wall-clock and CPU.
#[derive(Clone, Copy)]
pub struct Mark {
    wall: Instant,
    cpu: Duration,
    decoded: u64,
}

/// Now.
pub fn mark() -> Mark {
    Mark {
        wall: Instant::now(),
        cpu: cpu_time(),
        decoded: program::bodies_decoded(),
    }
}

impl Mark {
    /// Wall-clock time since the mark.
    pub fn elapsed(&self) -> Duration {
        self.wall.elapsed()
    }
}

/// Records that `phase` ran from `since` until now; a phase recorded twice
/// adds up. Returns the wall-clock time it took.
pub fn record(phase: &'static str, since: Mark) -> Duration {
    let wall = since.wall.elapsed();
    let cpu = cpu_time().saturating_sub(since.cpu);
    let decoded = program::bodies_decoded().saturating_sub(since.decoded);
    let mut phases = PHASES.lock().unwrap_or_else(|e| e.into_inner());
    match phases.iter_mut().find(|p| p.name == phase) {
        Some(p) => {
            p.wall += wall;
            p.cpu += cpu;
            p.decoded += decoded;
        }
        None => phases.push(Phase {
            name: phase,
            wall,
            cpu,
            decoded,
        }),
    }
    wall
}

/// Prints every recorded phase, in the order first recorded, and the
/// whole run since `start`.
pub fn print(start: Mark) {
    let phases = PHASES.lock().unwrap_or_else(|e| e.into_inner());
    eprintln!(
        "timings ({} threads; wall, cpu of all threads, bodies decoded):",
        rayon::current_num_threads()
    );
    let line = |name: &str, wall: Duration, cpu: Duration, decoded: u64| {
        eprintln!(
            "  {name:<12} {:>7.3}s {:>7.3}s {decoded:>9}",
            wall.as_secs_f64(),
            cpu.as_secs_f64()
        );
    };
    for p in phases.iter() {
        line(p.name, p.wall, p.cpu, p.decoded);
    }
    line(
        "total",
        start.wall.elapsed(),
        cpu_time().saturating_sub(start.cpu),
        program::bodies_decoded().saturating_sub(start.decoded),
    );
}

/// CPU time (user and system) of the whole process so far.
#[cfg(unix)]
fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` fills the struct it is given, which is zeroed
    // (valid for this plain C struct) and lives until the call returns.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0;
    if !ok {
        return Duration::ZERO;
    }
    // SAFETY: zero-initialised and possibly written by `getrusage`: valid.
    let usage = unsafe { usage.assume_init() };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

#[cfg(not(unix))]
fn cpu_time() -> Duration {
    Duration::ZERO
}
