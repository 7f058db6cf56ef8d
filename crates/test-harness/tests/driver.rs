//! kextract behaves like rustc: same outputs, same failures, same probes;
//! dumps go where `KANALYZE_OUT` says, safely under concurrency.

use std::path::Path;
use std::process::Output;

use test_harness::{clean_command, fixtures_dir, kextract, nightly_rustc};

fn lockapi() -> String {
    fixtures_dir()
        .join("extract/lockapi.rs")
        .display()
        .to_string()
}

fn run(program: &Path, dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = clean_command(program.to_str().unwrap());
    cmd.current_dir(dir).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn kmir_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

const OBJ_ARGS: &[&str] = &[
    "--crate-type=lib",
    "--edition=2024",
    "-Copt-level=2",
    "-Ccodegen-units=1",
    "-Cpanic=abort",
    "-Csymbol-mangling-version=v0",
    "--emit=obj",
];

#[test]
fn objects_are_identical_to_plain_rustc() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    let extracted = tmp.path().join("kx");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::create_dir_all(&extracted).unwrap();
    let src = lockapi();
    // Plain rustc needs the tool registrations kextract adds by itself.
    let mut plain_args: Vec<&str> = vec![
        &src,
        "-Zcrate-attr=feature(register_tool)",
        "-Zcrate-attr=register_tool(klint)",
        "-Zcrate-attr=register_tool(kanalyze)",
    ];
    plain_args.extend_from_slice(OBJ_ARGS);
    let out = run(&nightly_rustc(), &plain, &plain_args, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut kx_args: Vec<&str> = vec![&src];
    kx_args.extend_from_slice(OBJ_ARGS);
    let dumps = tmp.path().join("dumps");
    let out = run(
        kextract(),
        &extracted,
        &kx_args,
        &[("KANALYZE_OUT", &dumps)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(kmir_files(&dumps).len(), 1);
    let a = std::fs::read(plain.join("lockapi.o")).unwrap();
    let b = std::fs::read(extracted.join("lockapi.o")).unwrap();
    assert!(a == b, "objects differ ({} vs {} bytes)", a.len(), b.len());
}

#[test]
fn answers_probes_like_rustc() {
    let tmp = tempfile::tempdir().unwrap();
    let ours = run(kextract(), tmp.path(), &["-vV"], &[]);
    let theirs = run(&nightly_rustc(), tmp.path(), &["-vV"], &[]);
    assert!(ours.status.success());
    assert_eq!(ours.stdout, theirs.stdout);
    let ours = run(kextract(), tmp.path(), &["--print", "sysroot"], &[]);
    let theirs = run(&nightly_rustc(), tmp.path(), &["--print", "sysroot"], &[]);
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout)
    );
}

#[test]
fn works_as_cargo_wrapper_with_the_real_rustc_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dumps = tmp.path().join("dumps");
    let rustc = nightly_rustc();
    let src = lockapi();
    let args = [
        rustc.to_str().unwrap(),
        &src,
        "--crate-type=lib",
        "--edition=2024",
    ];
    let out = run(kextract(), tmp.path(), &args, &[("KANALYZE_OUT", &dumps)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = kmir_files(&dumps);
    assert_eq!(files.len(), 1);
    assert!(
        files[0].starts_with("lockapi-") && files[0].ends_with(".kmir"),
        "{files:?}"
    );
}

#[test]
fn compile_errors_are_rustc_errors_and_write_no_dump() {
    let tmp = tempfile::tempdir().unwrap();
    let dumps = tmp.path().join("dumps");
    let src = fixtures_dir()
        .join("extract/broken.rs")
        .display()
        .to_string();
    let out = run(
        kextract(),
        tmp.path(),
        &[&src, "--crate-type=lib", "--edition=2024"],
        &[("KANALYZE_OUT", &dumps)],
    );
    let theirs = run(
        &nightly_rustc(),
        tmp.path(),
        &[&src, "--crate-type=lib", "--edition=2024"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.status.code(), theirs.status.code());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[E0308]: mismatched types"), "{err}");
    assert!(kmir_files(&dumps).is_empty());
}

#[test]
fn failed_extraction_warns_but_compiles_unless_strict() {
    let tmp = tempfile::tempdir().unwrap();
    // A file where the dump directory should be: the dump cannot be written.
    let blocker = tmp.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let src = lockapi();
    let out = run(
        kextract(),
        tmp.path(),
        &[&src, "--crate-type=lib", "--edition=2024"],
        &[("KANALYZE_OUT", &blocker)],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: kextract: extraction of crate `lockapi` failed, no dump written"),
        "{err}"
    );
    assert!(tmp.path().join("liblockapi.rlib").exists());

    let mut cmd = clean_command(kextract().to_str().unwrap());
    let out = cmd
        .current_dir(tmp.path())
        .args([&src, "--crate-type=lib", "--edition=2024"])
        .env("KANALYZE_OUT", &blocker)
        .env("KANALYZE_STRICT", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: kextract: extraction of crate `lockapi` failed"),
        "{err}"
    );
}

#[test]
fn without_kanalyze_out_it_is_plain_rustc() {
    let tmp = tempfile::tempdir().unwrap();
    let src = lockapi();
    let out = run(
        kextract(),
        tmp.path(),
        &[&src, "--crate-type=lib", "--edition=2024"],
        &[],
    );
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<String> = kmir_files(tmp.path());
    assert_eq!(files, ["liblockapi.rlib"]);
}

#[test]
fn proc_macros_and_build_scripts_are_not_dumped() {
    let tmp = tempfile::tempdir().unwrap();
    let dumps = tmp.path().join("dumps");
    let pm = fixtures_dir()
        .join("extract/pmacro.rs")
        .display()
        .to_string();
    let out = run(
        kextract(),
        tmp.path(),
        &[&pm, "--crate-type=proc-macro", "--edition=2021"],
        &[("KANALYZE_OUT", &dumps)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let src = lockapi();
    let out = run(
        kextract(),
        tmp.path(),
        &[
            &src,
            "--crate-type=lib",
            "--edition=2024",
            "--crate-name=build_script_build",
        ],
        &[("KANALYZE_OUT", &dumps)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(kmir_files(&dumps).is_empty(), "{:?}", kmir_files(&dumps));
}

#[test]
fn same_name_different_metadata_and_concurrent_writers() {
    let tmp = tempfile::tempdir().unwrap();
    let dumps = tmp.path().join("dumps");
    let src = lockapi();
    let mut children = Vec::new();
    for (i, meta) in ["one", "two", "one", "two"].iter().enumerate() {
        let dir = tmp.path().join(format!("build{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = clean_command(kextract().to_str().unwrap());
        cmd.current_dir(&dir)
            .args([
                src.as_str(),
                "--crate-type=lib",
                "--edition=2024",
                &format!("-Cmetadata={meta}"),
            ])
            .env("KANALYZE_OUT", &dumps)
            .stderr(std::process::Stdio::piped());
        children.push(cmd.spawn().unwrap());
    }
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let files = kmir_files(&dumps);
    assert_eq!(
        files.len(),
        2,
        "one dump per (name, metadata), no temp files left: {files:?}"
    );
    for f in files {
        kmir::read_file(&dumps.join(f)).unwrap();
    }
}
