//! The analyser's hot paths on a directory of real dumps: decode (parallel),
//! link, schedule, and the preemption and lock analysis.
//!
//! ```text
//! cargo test --release -p test-harness --test corpus -- --ignored   # makes target/corpus/kmir
//! cargo bench -p kanalyze --bench pipeline
//! KMIR_BENCH_DIR=/path/to/dumps cargo bench -p kanalyze --bench pipeline
//! ```

use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use rayon::prelude::*;

fn bench_dir() -> PathBuf {
    std::env::var_os("KMIR_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/corpus/kmir"))
}

fn dump_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "kmir"));
    files.sort();
    files
}

fn load(files: &[PathBuf]) -> Vec<program::LinkedCrate> {
    files
        .par_iter()
        .filter_map(|p| {
            kmir::read_file_lazy(p)
                .ok()
                .map(|dump| program::LinkedCrate::lazy(p.clone(), dump, None))
        })
        .collect()
}

fn pipeline(c: &mut Criterion) {
    let dir = bench_dir();
    let files = dump_files(&dir);
    if files.is_empty() {
        eprintln!(
            "no dumps in {} (set KMIR_BENCH_DIR, or run the corpus test first)",
            dir.display()
        );
        return;
    }
    let mut g = c.benchmark_group("pipeline");
    g.sample_size(10);
    g.bench_function("decode", |b| b.iter(|| load(&files)));
    g.bench_function("decode+link", |b| b.iter(|| program::link(load(&files))));
    let (program, _) = program::link(load(&files));
    g.bench_function("schedule", |b| b.iter(|| solver::Schedule::new(&program)));
    let spec = spec::Spec::builtin_kernel();
    let (annotations, _) = annotations::collect(
        program
            .crates
            .iter()
            .enumerate()
            .map(|(i, c)| (i as u32, c.dump.items.as_slice())),
    );
    // The checks run once after the solve; their share is printed rather
    // than benched on its own.
    let input = checks::Input {
        program: &program,
        annotations: &annotations,
        invariants: &invariants::Resolved::none(),
        spec: &spec,
        trace: None,
        step_budget: analysis::STEP_BUDGET,
        progress: None,
    };
    let solved = analysis::solve(&input);
    let t = std::time::Instant::now();
    let once = checks::check(&input, solved);
    eprintln!(
        "checks after the solve: {:.1} ms ({} order edges, {} classes, {} IRQ handlers, {} callbacks, {} lock findings)",
        t.elapsed().as_secs_f64() * 1e3,
        once.locks.order_edges,
        once.locks.classes,
        once.locks.irq_handlers,
        once.locks.callbacks,
        once.findings
            .iter()
            .filter(|f| {
                matches!(
                    f.kind,
                    "double-lock"
                        | "nested-lock-class"
                        | "lock-order-inversion"
                        | "lock-leak"
                        | "unbalanced-unlock"
                        | "irq-unsafe-lock"
                )
            })
            .count()
    );
    g.bench_function("preempt+locks", |b| b.iter(|| checks::run(&input)));
    g.finish();
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
