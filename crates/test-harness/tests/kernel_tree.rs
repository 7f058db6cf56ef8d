//! `scripts/kernel.sh --tree DIR --check` on small fake trees: what a
//! developer's own tree is checked for before anything is installed or
//! built (a kernel, with Rust, whose minimum rustc and bindgen versions the
//! pinned nightly and kernel.sh's bindgen meet, not configured in place; a
//! `--config` with Rust), each failure a clear message naming both
//! versions where there are two. Nothing here builds a kernel.

use std::path::{Path, PathBuf};
use std::process::Command;

use test_harness::repo_root;

/// The pinned nightly's rustc release, as scripts/toolchain.sh says.
fn nightly_version() -> String {
    let text =
        std::fs::read_to_string(repo_root().join("scripts/toolchain.sh")).expect("toolchain.sh");
    text.lines()
        .find_map(|l| l.strip_prefix("NIGHTLY_RUSTC_VERSION="))
        .expect("NIGHTLY_RUSTC_VERSION in toolchain.sh")
        .trim()
        .to_string()
}

/// A tree that looks like Linux `version` (`7.3.4`) with Rust, whose
/// scripts/min-tool-version.sh says `rustc` and `bindgen`.
fn fake_tree(root: &Path, version: &str, rustc: &str, bindgen: &str) -> PathBuf {
    let tree = root.join("linux");
    let mut parts = version.split('.');
    let (v, p, s) = (
        parts.next().unwrap_or("0"),
        parts.next().unwrap_or("0"),
        parts.next().unwrap_or("0"),
    );
    std::fs::create_dir_all(tree.join("rust")).unwrap();
    std::fs::create_dir_all(tree.join("init")).unwrap();
    std::fs::create_dir_all(tree.join("scripts")).unwrap();
    std::fs::write(
        tree.join("Makefile"),
        format!("# SPDX-License-Identifier: GPL-2.0\nVERSION = {v}\nPATCHLEVEL = {p}\nSUBLEVEL = {s}\nEXTRAVERSION =\nNAME = Baby Opossum Posse\n"),
    )
    .unwrap();
    std::fs::write(tree.join("Kconfig"), "mainmenu \"Linux\"\n").unwrap();
    std::fs::write(
        tree.join("init/Kconfig"),
        "config CC_IS_GCC\n\tdef_bool y\n\nconfig RUST\n\tbool \"Rust support\"\n",
    )
    .unwrap();
    std::fs::write(
        tree.join("scripts/min-tool-version.sh"),
        format!(
            "#!/bin/sh\ncase \"$1\" in\nrustc) echo {rustc} ;;\nbindgen) echo {bindgen} ;;\n*) echo \"$1: unknown tool\" >&2; exit 1 ;;\nesac\n"
        ),
    )
    .unwrap();
    tree
}

struct Run {
    code: Option<i32>,
    stderr: String,
}

fn kernel_sh(work: &Path, args: &[&str]) -> Run {
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/kernel.sh"))
        .args(args)
        .env("KANALYZE_KERNEL_WORK", work)
        .env("KANALYZE_KERNEL_CACHE", work.join("cache"))
        .output()
        .expect("run bash");
    Run {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `--tree TREE --check` (plus `extra`); the work directory is a
/// sibling of the tree.
fn check(root: &Path, tree: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["--tree", tree.to_str().unwrap(), "--check"];
    args.extend_from_slice(extra);
    kernel_sh(&root.join("work"), &args)
}

fn fails_with(run: &Run, needles: &[&str]) {
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    for n in needles {
        assert!(run.stderr.contains(n), "`{n}` not in:\n{}", run.stderr);
    }
}

#[test]
fn a_tree_that_fits_passes_the_check_and_nothing_is_written() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.3.4", "1.85.0", "0.71.1");
    let run = check(root.path(), &tree, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "Linux 7.3.4 in {}: needs rustc >= 1.85.0 (kextract: {})",
            tree.display(),
            nightly_version()
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("the tree fits"), "{}", run.stderr);
    // `--check` creates nothing, in the tree or beside it.
    assert!(!root.path().join("work").exists());
    let mut names: Vec<String> = std::fs::read_dir(&tree)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["Kconfig", "Makefile", "init", "rust", "scripts"]);
}

#[test]
fn not_a_directory_or_not_a_kernel() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("nowhere");
    fails_with(&check(root.path(), &missing, &[]), &["no such directory"]);
    let file = root.path().join("file");
    std::fs::write(&file, "").unwrap();
    fails_with(&check(root.path(), &file, &[]), &["not a directory"]);
    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    fails_with(
        &check(root.path(), &empty, &[]),
        &["is not a Linux kernel tree"],
    );
}

#[test]
fn a_tree_without_rust() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "5.15.0", "1.85.0", "0.71.1");
    std::fs::remove_dir(tree.join("rust")).unwrap();
    fails_with(
        &check(root.path(), &tree, &[]),
        &[
            "Linux 5.15.0",
            "without Rust support",
            "Linux 6.1 and later",
        ],
    );
}

#[test]
fn a_tree_that_needs_a_newer_rustc_or_bindgen_names_both_versions() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.9.0", "9.99.0", "0.71.1");
    fails_with(
        &check(root.path(), &tree, &[]),
        &[
            "needs rustc >= 9.99.0",
            &format!("rustc {}", nightly_version()),
            "nightly-2026-05-20",
        ],
    );
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.9.0", "1.85.0", "0.99.0");
    fails_with(
        &check(root.path(), &tree, &[]),
        &["needs bindgen >= 0.99.0", "bindgen-cli 0.72.1"],
    );
}

#[test]
fn an_old_tree_pinned_to_one_rustc_is_a_warning() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "6.6.0", "1.73.0", "0.65.1");
    let run = check(root.path(), &tree, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("WARNING: Linux 6.6.0 was written for rustc 1.73.0 exactly"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_tree_configured_in_place_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.3.0", "1.85.0", "0.71.1");
    std::fs::write(tree.join(".config"), "CONFIG_RUST=y\n").unwrap();
    fails_with(
        &check(root.path(), &tree, &[]),
        &[
            "configured or built in place (.config)",
            "make mrproper",
            "--config",
        ],
    );
}

#[test]
fn config_files_must_exist_and_enable_rust() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.3.0", "1.85.0", "0.71.1");
    let missing = root.path().join("missing.config");
    fails_with(
        &check(root.path(), &tree, &["--config", missing.to_str().unwrap()]),
        &["--config", "no such file"],
    );
    let no_rust = root.path().join("no-rust.config");
    std::fs::write(&no_rust, "CONFIG_64BIT=y\n# CONFIG_RUST is not set\n").unwrap();
    fails_with(
        &check(root.path(), &tree, &["--config", no_rust.to_str().unwrap()]),
        &["does not enable Rust", "CONFIG_RUST=y"],
    );
    let rust = root.path().join("rust.config");
    std::fs::write(&rust, "CONFIG_64BIT=y\nCONFIG_RUST=y\n").unwrap();
    let run = check(root.path(), &tree, &["--config", rust.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("no debug info"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("config {}", rust.display())),
        "{}",
        run.stderr
    );
}

#[test]
fn the_work_directory_may_not_be_inside_the_tree() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.3.0", "1.85.0", "0.71.1");
    let run = kernel_sh(
        &tree.join("out"),
        &["--tree", tree.to_str().unwrap(), "--check"],
    );
    fails_with(&run, &["is inside the tree", "KANALYZE_KERNEL_WORK"]);
    assert!(!tree.join("out").exists());
}

#[test]
fn usage_errors() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    for (args, needle) in [
        (&["--config", "x"][..], "--config is for --tree"),
        (&["--check"][..], "--check is for --tree"),
        (&["--targets", "a.o"][..], "--targets is for --tree"),
        (&["--tree"][..], "`--tree` needs a value"),
        (&["--bogus"][..], "unknown argument `--bogus`"),
    ] {
        let run = kernel_sh(&work, args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    assert!(!work.exists());
}
