//! The kernel's way of compiling Rust, in small: `core` compiled from the
//! nightly's `rust-src` with `--sysroot=/dev/null`, the kernel's empty
//! `compiler_builtins`, and a `no_std` crate (`-Zcrate-attr=no_std`) against
//! them, all through kextract with `RUSTC_BOOTSTRAP=1`.

use std::path::Path;

use test_harness::{DumpExt, clean_command, fixtures_dir, kextract, nightly_rustc};

fn compile(dir: &Path, out: &Path, args: &[&str]) {
    let output = clean_command(kextract().to_str().unwrap())
        .current_dir(dir)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("KANALYZE_OUT", out)
        .args(args)
        .args([
            "--sysroot=/dev/null",
            "-Cpanic=abort",
            "-Csymbol-mangling-version=v0",
            "--emit=obj,metadata",
        ])
        .arg("--out-dir")
        .arg(dir)
        .arg("-L")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{args:?}:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn no_std_crate_against_core_from_source() {
    let sysroot = nightly_rustc()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let core_src = sysroot.join("lib/rustlib/src/rust/library/core/src/lib.rs");
    assert!(
        core_src.exists(),
        "rust-src component missing: {}",
        core_src.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = dir.join("kmir");
    let core_meta = format!("core={}", dir.join("libcore.rmeta").display());

    compile(
        dir,
        &out,
        &[
            "--edition=2024",
            "--crate-type=rlib",
            "--crate-name=core",
            core_src.to_str().unwrap(),
            "--cfg=no_fp_fmt_parse",
        ],
    );
    let builtins = fixtures_dir().join("kernel/compiler_builtins.rs");
    compile(
        dir,
        &out,
        &[
            "--edition=2021",
            "--crate-type=rlib",
            builtins.to_str().unwrap(),
            "--extern",
            &core_meta,
        ],
    );
    let tiny = fixtures_dir().join("kernel/tiny.rs");
    compile(
        dir,
        &out,
        &[
            "--edition=2021",
            "--crate-type=rlib",
            "-Zcrate-attr=no_std",
            tiny.to_str().unwrap(),
            "--extern",
            &core_meta,
            "-Copt-level=2",
        ],
    );

    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .split('-')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    names.sort();
    assert_eq!(names, ["compiler_builtins", "core", "tiny"]);

    let load = |name: &str| {
        let path = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{name}-"))
            })
            .unwrap();
        kmir::read_file(&path).unwrap_or_else(|e| panic!("{e}"))
    };
    let core = load("core");
    assert!(
        core.instances.len() > 1000,
        "core has {} instances",
        core.instances.len()
    );
    assert!(core.header.drop_elaborated_mir);

    let tiny = load("tiny");
    let callees: Vec<String> = tiny.direct_callees("tiny::bump");
    assert_eq!(
        callees.first().map(String::as_str),
        Some("tiny::spin_lock"),
        "{callees:?}"
    );
    assert_eq!(
        callees.last().map(String::as_str),
        Some("tiny::spin_unlock"),
        "{callees:?}"
    );
    assert!(
        tiny.items
            .iter()
            .any(|i| i.path == "tiny::bump" && i.attrs[0].name == "preempt_count")
    );
    // Items of `core` used by `tiny` have canonical `core::` paths.
    assert!(
        tiny.instances
            .iter()
            .any(|i| i.item_path.starts_with("core::sync::atomic::")),
        "no core atomics instance"
    );
}
