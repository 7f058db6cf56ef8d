//! `cargo kextract` on a cargo project: the program's crates are dumped, the
//! crates built only for the host (a proc macro's dependencies) are not.

use std::path::Path;

use test_harness::{clean_command, fixtures_dir, kextract, nightly_rustc};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs `cargo kextract` in a copy of `fixtures/cargo-host` and returns the
/// crate names of the dumps, sorted.
fn dumped_crates(extra: &[&str]) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    copy_dir(&fixtures_dir().join("cargo-host"), &project);
    let dumps = tmp.path().join("dumps");
    let cargo_kextract = kextract().with_file_name("cargo-kextract");
    let output = clean_command(cargo_kextract.to_str().unwrap())
        .current_dir(&project)
        .args(["--out", dumps.to_str().unwrap(), "--offline", "--quiet"])
        .args(extra)
        .env("CARGO_TARGET_DIR", tmp.path().join("target"))
        .env("KANALYZE_STRICT", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cargo kextract failed:\n{stderr}");
    let mut names: Vec<String> = std::fs::read_dir(&dumps)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            kmir::read_file(&path)
                .unwrap_or_else(|e| panic!("{e}"))
                .header
                .crate_name
                .to_string()
        })
        .collect();
    names.sort();
    names
}

fn host() -> String {
    let out = clean_command(nightly_rustc().to_str().unwrap())
        .arg("-vV")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap()
        .to_string()
}

#[test]
fn crates_built_for_the_host_only_are_not_dumped() {
    // `helper` is only a dependency of the proc macro; `shared` is built for
    // both, and only its target build is the program's.
    assert_eq!(dumped_crates(&[]), ["app", "shared"]);
}

#[test]
fn a_target_chosen_by_the_user_is_kept() {
    let host = host();
    assert_eq!(dumped_crates(&["--target", &host]), ["app", "shared"]);
    let config = format!("build.target=\"{host}\"");
    assert_eq!(dumped_crates(&["--config", &config]), ["app", "shared"]);
}
