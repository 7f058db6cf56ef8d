//! The progress bar of `check`, `report`, `summary` and `triage` on a
//! terminal: loading the dumps (by dump), linking, the analysis (by
//! function, with the level of the schedule) and the checks, drawn on
//! stderr with `indicatif` and cleared before the results are printed.
//!
//! It is drawn only where someone watches: stderr is a terminal, `CI` is
//! not set (CI logs are not terminals, but some runners fake one), the
//! output format is text (`--format json|sarif` leave the terminal alone
//! even when stdout is a file), `--no-progress` is not given, and the run
//! has lasted a second: a short run draws nothing at all.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run goes before the bar appears.
const DELAY: Duration = Duration::from_secs(1);

/// A progress bar, or nothing when none is to be drawn.
pub struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
    shown: AtomicBool,
    /// Levels of the schedule, for the analysis's message.
    levels: AtomicUsize,
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

    /// What the solver reports, as the analysis phase.
    pub fn solver(&self, p: analysis::Progress) {
        if self.bar.is_none() {
            return;
        }
        match p {
            analysis::Progress::Start { levels, functions } => {
                self.levels.store(levels, Ordering::Relaxed);
                self.phase(&format!("analysing: level 1/{levels}"), functions as u64);
            }
            analysis::Progress::Component { functions } => self.inc(functions as u64),
            analysis::Progress::Level { level } => {
                if let Some(bar) = &self.bar {
                    let levels = self.levels.load(Ordering::Relaxed);
                    bar.set_message(format!(
                        "analysing: level {}/{levels}",
                        (level + 2).min(levels)
                    ));
                }
            }
        }
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
