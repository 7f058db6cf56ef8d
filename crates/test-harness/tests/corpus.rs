//! The crates.io corpus: `fixtures/corpus` (≈55 crates: tokio, regex,
//! serde_json, syn, parking_lot, spin, crossbeam, hashbrown, rayon, …) built
//! through `cargo kextract` with `KANALYZE_STRICT=1`, so any failed crate fails
//! the build. Takes minutes, hence ignored by default:
//!
//! ```text
//! cargo test --release -p test-harness --test corpus -- --ignored --nocapture
//! ```
//!
//! Prints the numbers recorded in `docs/performance.md`. The same for the
//! sweep, `fixtures/sweep` (`sweep_extracts_every_crate`).

use std::time::Instant;

use test_harness::{clean_command, fixtures_dir, kextract, nightly_rustc};

#[test]
#[ignore = "builds ~55 crates from crates.io twice (minutes); run explicitly"]
fn corpus_extracts_every_crate() {
    extract_project("corpus", 40);
}

/// The sweep: `fixtures/sweep`, 36 popular crates disjoint from the corpus's
/// direct dependencies (chrono, nom, time, toml, url, http, hyper, axum,
/// clap, serde_yaml, ron, dashmap, tracing, …; ~200 packages in all).
///
/// ```text
/// cargo test --release -p test-harness --test corpus -- --ignored --nocapture sweep
/// ```
#[test]
#[ignore = "builds ~200 crates from crates.io twice (many minutes); run explicitly"]
fn sweep_extracts_every_crate() {
    extract_project("sweep", 100);
}

/// Builds `fixtures/<name>` plainly and through `cargo kextract` with
/// `KANALYZE_STRICT=1`, decodes every dump and prints the figures.
fn extract_project(name: &str, min_crates: usize) {
    let project = fixtures_dir().join(name);
    // Under the workspace's target/ (not a temp dir): the dumps stay for the
    // wire-format benchmark; both builds start from scratch every run.
    let work = test_harness::repo_root().join("target").join(name);
    let _ = std::fs::remove_dir_all(&work);
    let plain_target = work.join("plain");
    let kx_target = work.join("kextract");
    let out = work.join("kmir");
    let cargo_kextract = kextract().with_file_name("cargo-kextract");

    // Plain build with the same nightly, for the time ratio; for the host
    // as an explicit target, as `cargo kextract` builds (crates used both by
    // proc macros and by the program are then compiled twice in both).
    let host = host_triple();
    let t = Instant::now();
    let status = clean_command("cargo")
        .current_dir(&project)
        .args(["+nightly-2026-05-20", "build", "--release", "--quiet"])
        .args(["--target", &host])
        .env("CARGO_TARGET_DIR", &plain_target)
        .status()
        .unwrap();
    assert!(status.success());
    let plain = t.elapsed();

    let t = Instant::now();
    let output = clean_command(cargo_kextract.to_str().unwrap())
        .current_dir(&project)
        .args(["--out", out.to_str().unwrap(), "--release", "--quiet"])
        .env("CARGO_TARGET_DIR", &kx_target)
        .env("KANALYZE_STRICT", "1")
        .output()
        .unwrap();
    let extracted = t.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cargo kextract failed:\n{stderr}");
    assert!(
        !stderr.contains("extraction of crate"),
        "a crate failed to extract:\n{stderr}"
    );

    let mut crates = 0;
    let mut instances = 0;
    let mut codegenned = 0;
    let mut bytes = 0u64;
    let mut names = Vec::new();
    let t = Instant::now();
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        bytes += std::fs::metadata(&path).unwrap().len();
        let dump = kmir::read_file(&path).unwrap_or_else(|e| panic!("{e}"));
        crates += 1;
        instances += dump.instances.len();
        codegenned += dump.instances.iter().filter(|i| i.codegenned).count();
        names.push(dump.header.crate_name);
    }
    let decode = t.elapsed();
    names.sort();
    println!("crates dumped: {crates}");
    println!("crates: {}", names.join(" "));
    println!(
        "instances: {instances} ({codegenned} codegenned, {} added for inlined calls)",
        instances - codegenned
    );
    println!(
        "dump bytes: {bytes} ({:.1} MiB)",
        bytes as f64 / (1 << 20) as f64
    );
    println!(
        "plain build: {:.1}s, kextract build: {:.1}s, ratio {:.2}",
        plain.as_secs_f64(),
        extracted.as_secs_f64(),
        extracted.as_secs_f64() / plain.as_secs_f64()
    );
    println!("decode all dumps (1 thread): {:.2}s", decode.as_secs_f64());
    assert!(crates >= min_crates, "only {crates} crates dumped");
}

fn host_triple() -> String {
    let out = clean_command(nightly_rustc().to_str().unwrap())
        .arg("-vV")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}
