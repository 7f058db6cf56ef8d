//! Helpers shared by the test binaries: running the `kanalyze` binary and
//! taking machine-specific paths out of what it printed. The dumps the tests
//! read are never built here: they come from compiling `fixtures/` through
//! kextract (see `test_harness::extract`).

#![allow(dead_code)] // Each test binary uses a different part of this module.

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod cargo_fixture;
use std::sync::OnceLock;

/// What one run of the `kanalyze` binary did.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Exit code and stderr, for snapshots of error reports.
    pub fn report(&self) -> String {
        format!("exit code: {:?}\n{}", self.code, self.stderr)
    }

    pub fn assert_no_panic(&self) {
        assert!(
            !self.stderr.contains("panicked"),
            "kanalyze panicked:\n{}",
            self.stderr
        );
    }
}

/// Runs `kanalyze ARGS` in `dir`, so that relative paths in the arguments
/// (and so in the messages) do not depend on where the test runs.
pub fn kanalyze(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        .args(args)
        .current_dir(dir)
        // The summary cache of the tests' runs: not the user's, and the
        // same wherever the tests run (docs/output.md, "Incremental re-runs").
        .env("XDG_CACHE_HOME", test_cache_home())
        .output()
        .expect("the kanalyze binary runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Where the tests' runs keep their summary cache.
pub fn test_cache_home() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cache-home")
}

/// `kanalyze ARGS` in `dir`: exit code, stdout and stderr with the
/// machine-specific paths (repository, sysroot, `dir`) redacted.
pub fn kanalyze_redacted(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let run = kanalyze(dir, args);
    let clean = |t: &str| redact(t, &[dir]);
    (
        run.code.unwrap_or(-1),
        clean(&run.stdout),
        clean(&run.stderr),
    )
}

/// The sysroot of the pinned nightly that compiles the fixtures: spans of
/// `core` items point into its `rust-src` component.
fn sysroot() -> &'static Path {
    static SYSROOT: OnceLock<PathBuf> = OnceLock::new();
    SYSROOT.get_or_init(|| {
        let rustc = test_harness::nightly_rustc();
        rustc
            .parent()
            .and_then(Path::parent)
            .expect("rustc lives in <sysroot>/bin")
            .to_path_buf()
    })
}

/// `text` with the paths that differ between machines replaced: the
/// repository root by `$ROOT`, the nightly's sysroot by `$SYSROOT` and each
/// of `temp_dirs` by `$TMP`.
pub fn redact(text: &str, temp_dirs: &[&Path]) -> String {
    let mut text = text.to_string();
    let mut replacements: Vec<(String, &str)> = vec![
        (path_text(&test_harness::repo_root()), "$ROOT"),
        (path_text(sysroot()), "$SYSROOT"),
    ];
    for dir in temp_dirs {
        replacements.push((path_text(dir), "$TMP"));
        if let Ok(real) = dir.canonicalize() {
            replacements.push((path_text(&real), "$TMP"));
        }
    }
    // Longest first, in case one of the paths contains another.
    replacements.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    for (path, name) in replacements {
        text = text.replace(&path, name);
    }
    text
}

fn path_text(path: &Path) -> String {
    path.to_str().expect("test paths are UTF-8").to_string()
}
