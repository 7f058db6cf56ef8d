//! The progress bar of `check`, `report`, `summary` and `triage` on a
//! terminal: loading the dumps (by dump), linking, the analysis (by
//! function, with the level of the schedule and, once one has run for a
//! while, the body in flight that started first) and the checks, drawn on
//! stderr with `indicatif` and cleared before the results are printed.
//!
//! It is drawn only where someone watches: stderr is a terminal, `CI` is
//! not set (CI logs are not terminals, but some runners fake one), the
//! output format is text (`--format json|sarif` leave the terminal alone
//! even when stdout is a file), `--no-progress` is not given, and the run
//! has lasted a second: a short run draws nothing at all.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run goes before the bar appears.
const DELAY: Duration = Duration::from_secs(1);

/// How long a body is in flight before the bar names it: a user can then
/// tell a slow run (the name changes) from a stuck one (it does not).
const SLOW: Duration = Duration::from_secs(2);

/// A progress bar, or nothing when none is to be drawn.
pub struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
    shown: AtomicBool,
    /// Levels of the schedule, for the analysis's message.
    levels: AtomicUsize,
    /// The level every lower one of which is done (1-based, for the
    /// message).
    level: AtomicUsize,
    /// The components being solved, by first member: when each started,
    /// and its level.
    in_flight: Mutex<HashMap<program::FnId, (Instant, usize)>>,
}

/// Whether a bar may be drawn: `wanted` (text output, no `--no-progress`),
/// stderr a terminal, not in CI.
pub fn enabled(wanted: bool) -> bool {
    wanted && std::io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}

impl Progress {
    /// The bar the analysis flags ask for.
    pub fn for_args(args: &crate::cli::AnalysisArgs) -> Progress {
        if args.progress_now {
            let mut p = Progress::new(true);
            p.start -= DELAY;
            return p;
        }
        Progress::new(enabled(!args.no_progress))
    }

    /// A bar that draws once the run has lasted [`DELAY`], if `enabled`.
    pub fn new(enabled: bool) -> Progress {
        let bar = enabled.then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
            let style =
                ProgressStyle::with_template("{spinner} {elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        Progress {
            bar,
            start: Instant::now(),
            shown: AtomicBool::new(false),
            levels: AtomicUsize::new(0),
            level: AtomicUsize::new(1),
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    /// No bar.
    pub fn none() -> Progress {
        Progress::new(false)
    }

    /// Draws from now on if the run has lasted long enough.
    fn reveal(&self, bar: &ProgressBar) {
        if !self.shown.load(Ordering::Relaxed)
            && self.start.elapsed() >= DELAY
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// A new phase of `len` steps.
    pub fn phase(&self, message: &str, len: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(0);
            bar.set_length(len);
            bar.set_message(message.to_string());
            self.reveal(bar);
        }
    }

    /// `n` steps of the phase done.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
            self.reveal(bar);
        }
    }

    /// What the solver reports, as the analysis phase; `name` names a
    /// function.
    pub fn solver(&self, p: analysis::Progress, name: &dyn Fn(program::FnId) -> String) {
        let Some(bar) = &self.bar else {
            return;
        };
        match p {
            analysis::Progress::Start { levels, functions } => {
                self.levels.store(levels, Ordering::Relaxed);
                self.phase(&format!("analysing: level 1/{levels}"), functions as u64);
            }
            analysis::Progress::Started { function, level } => {
                if let Ok(mut m) = self.in_flight.lock() {
                    m.insert(function, (Instant::now(), level));
                }
            }
            analysis::Progress::Component {
                functions,
                function,
            } => {
                if let Ok(mut m) = self.in_flight.lock() {
                    m.remove(&function);
                }
                self.inc(functions as u64);
                bar.set_message(self.analysing(name));
            }
            analysis::Progress::Level { level } => {
                let levels = self.levels.load(Ordering::Relaxed);
                self.level
                    .store((level + 2).min(levels.max(1)), Ordering::Relaxed);
                bar.set_message(self.analysing(name));
            }
        }
    }

    /// "analysing: level 3/97; slowest in flight: `f` (level 5, 12 s)".
    fn analysing(&self, name: &dyn Fn(program::FnId) -> String) -> String {
        let levels = self.levels.load(Ordering::Relaxed);
        let mut msg = format!(
            "analysing: level {}/{levels}",
            self.level.load(Ordering::Relaxed)
        );
        let oldest = self.in_flight.lock().ok().and_then(|m| {
            m.iter()
                .min_by_key(|(f, (t, _))| (*t, **f))
                .map(|(f, v)| (*f, *v))
        });
        if let Some((f, (since, level))) = oldest {
            let running = since.elapsed();
            if running >= SLOW {
                msg.push_str(&format!(
                    "; slowest in flight: `{}` (level {}, {} s)",
                    crate::diag::clip(&name(f)),
                    level + 1,
                    running.as_secs()
                ));
            }
        }
        msg
    }

    /// Clears the bar (before the results are printed).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
