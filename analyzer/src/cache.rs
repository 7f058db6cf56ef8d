//! The summary cache around the solve (`crates/summary_cache`): what the
//! CLI knows that shapes summaries goes into every component's key, and
//! the cache's warnings become the CLI's. Also the per-dump cache
//! (`summary_cache::DumpCache`), which the load asks for each dump's entry
//! and which is saved once every phase that walks the bodies has run.

use std::path::PathBuf;

use crate::cli::{AnalysisArgs, Profile};
use crate::diag::Diagnostic;

/// What a run did with the cache, for `--timings`.
pub type Figures = summary_cache::Figures;

/// Solves `input`'s program (read from `paths`), recalling components from
/// the summary cache and writing this run's back, unless `--no-cache`, or
/// `--trace` (whose output comes from the analysis of each body), or no
/// cache directory is known; then runs `then` on the result (the checks),
/// while the cache's pack is written. `None` figures when the cache was
/// not used.
pub fn solve_then<R>(
    input: &checks::Input<'_>,
    paths: &[PathBuf],
    args: &AnalysisArgs,
    profile: Profile,
    prefetch: Option<summary_cache::Prefetch>,
    then: impl FnOnce(analysis::Solved) -> R,
) -> (R, Option<Figures>) {
    let dir = dir(args);
    let schedule = solver::Schedule::new(input.program);
    let Some(dir) = dir else {
        return (then(analysis::solve_with(input, &schedule, None)), None);
    };
    let mut warnings = Vec::new();
    let cache = settings(input, args, profile, &mut warnings).and_then(|s| {
        summary_cache::Cache::open_prefetched(
            &dir,
            paths,
            input.program,
            &schedule,
            &s,
            &mut warnings,
            prefetch,
        )
    });
    for w in warnings {
        Diagnostic::warning(w).emit();
    }
    let Some(cache) = cache else {
        return (then(analysis::solve_with(input, &schedule, None)), None);
    };
    let solved = analysis::solve_with(input, &schedule, Some(&cache));
    let (out, (figures, warnings)) = std::thread::scope(|s| {
        let saving = s.spawn(move || cache.save());
        let out = then(solved);
        let saved = saving.join().unwrap_or_else(|_| {
            (
                Figures::default(),
                vec!["the summary cache could not be written: its writer failed".to_string()],
            )
        });
        (out, saved)
    });
    for w in warnings {
        Diagnostic::warning(w).emit();
    }
    (out, Some(figures))
}

/// The cache directory of this run: `None` with `--no-cache`, with
/// `--trace` (whose output comes from the analysis of each body), or
/// when no directory is known.
pub fn dir(args: &AnalysisArgs) -> Option<PathBuf> {
    match (&args.cache_dir, args.no_cache || args.trace.is_some()) {
        (_, true) => None,
        (Some(d), false) => Some(d.clone()),
        (None, false) => summary_cache::default_dir(),
    }
}

/// The per-dump cache of this run (docs/output.md, "Incremental
/// re-runs"), in the cache directory; `None` without one.
pub fn dumps(args: &AnalysisArgs) -> Option<summary_cache::DumpCache> {
    dir(args).map(|d| summary_cache::DumpCache::open(&d))
}

/// Emits the per-dump cache's warnings so far (entries it could not use).
pub fn dump_warnings(cache: &summary_cache::DumpCache) {
    for w in cache.take_warnings() {
        Diagnostic::warning(w).emit();
    }
}

/// Writes the per-dump cache's new entries; `--timings` prints what it
/// wrote.
pub fn save_dumps(cache: &summary_cache::DumpCache, program: &program::Program, timings: bool) {
    let t = std::time::Instant::now();
    let (figures, warnings) = cache.save(program);
    for w in warnings {
        Diagnostic::warning(w).emit();
    }
    if timings {
        let (hashed, hashing) = cache.hashed();
        eprintln!(
            "  per-dump cache: {} of {} dumps recalled; {} entries written ({} bytes) in {:.3}s; {} bytes of dumps hashed in {:.3}s",
            program
                .crates
                .iter()
                .filter(|c| c.memo.as_ref().is_some_and(|m| m.on_disk()))
                .count(),
            program.crates.len(),
            figures.written,
            figures.bytes_written,
            t.elapsed().as_secs_f64(),
            hashed,
            hashing.as_secs_f64()
        );
    }
}

/// Everything besides the dumps that shapes a summary: the profile (which
/// built-in spec), the user's spec files, the annotations of the program's
/// items, and the declared invariants with the drops each elides. `None`
/// (with a warning) when a spec file cannot be read again.
fn settings(
    input: &checks::Input<'_>,
    args: &AnalysisArgs,
    profile: Profile,
    warnings: &mut Vec<String>,
) -> Option<summary_cache::Fingerprint> {
    let mut s = summary_cache::Fingerprint::new();
    s.add("profile", format!("{profile:?}").as_bytes());
    s.add("step budget", &input.step_budget.to_le_bytes());
    for path in &args.specs {
        match std::fs::read(path) {
            Ok(bytes) => s.add("spec", &bytes),
            Err(e) => {
                warnings.push(format!(
                    "the summary cache is not used this run: cannot read the spec file `{}` again: {e}",
                    path.display()
                ));
                return None;
            }
        }
    }
    let mut items: Vec<_> = input.annotations.iter().collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
    for (path, a) in items {
        s.add("annotated item", path.as_bytes());
        s.add("annotations", format!("{a:?}").as_bytes());
    }
    let declared = &input.invariants.declarations;
    for (d, uses) in declared.iter().zip(input.invariants.uses()) {
        s.add("invariant", format!("{d:?}").as_bytes());
        let mut sites: Vec<(&str, u32)> = uses
            .iter()
            .map(|u| (input.program.function(u.function).symbol.as_str(), u.block))
            .collect();
        sites.sort_unstable();
        for (symbol, block) in sites {
            s.add("elided in", symbol.as_bytes());
            s.add("block", &block.to_le_bytes());
        }
    }
    Some(s)
}

/// The cache's lines of `--timings` (its time is part of the solve's).
pub fn print_timings(c: &Figures) {
    eprintln!(
        "  cache:     {} of {} components recalled; keys {:.3}s, read {:.3}s ({} entries), write {:.3}s ({} bytes)",
        c.recalled,
        c.recalled + c.analysed,
        c.keys.as_secs_f64(),
        c.load.as_secs_f64(),
        c.entries_read,
        c.save.as_secs_f64(),
        c.bytes_written
    );
}
