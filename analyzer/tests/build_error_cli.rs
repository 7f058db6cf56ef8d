//! The `kanalyze build-error` command line: the "done when" on an
//! object compiled by stable rustc at `-O -Cdebuginfo=2`, exit statuses
//! (1 found, 0 none, 2 unreadable input) and `--format json`. The binary
//! runs in the build directory with relative paths, so messages do not
//! depend on where the test runs.

mod common;

use std::sync::OnceLock;

use common::{Run, kanalyze};
use tempfile::TempDir;
use test_harness::objects::{Compiler, build};
use test_harness::{line_of, repo_root};

/// The fixture compiled once per test binary, in its own directory.
fn built() -> &'static TempDir {
    static DIR: OnceLock<TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        build(Compiler::Stable, "2", dir.path());
        dir
    })
}

fn run(args: &[&str]) -> Run {
    let root = repo_root();
    let root = root.to_str().expect("a UTF-8 repository path");
    let mut all = vec!["build-error", "--source-root", root];
    all.extend_from_slice(args);
    let run = kanalyze(built().path(), &all);
    run.assert_no_panic();
    run
}

#[test]
fn bad_is_reported_at_the_assertion_with_its_call_as_a_note() {
    let run = run(&["regs.o"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let assertion = line_of("build_error/regs.rs", "build_assert!(off < 0x100)");
    let call = line_of("build_error/regs.rs", "r.read_at(i * 4)");
    let first = run
        .stdout
        .split("\n\n")
        .find(|d| d.contains("in `bad`"))
        .expect("a diagnostic ending in `bad`");
    assert!(
        first.starts_with(&format!(
            "error: this `build_error` reference is not optimized away\n  --> fixtures/build_error/regs.rs:{assertion}:5\n"
        )),
        "{first}"
    );
    assert!(
        first.contains(&format!(
            "note: which is called from here, in `bad`\n  --> fixtures/build_error/regs.rs:{call}:"
        )),
        "{first}"
    );
    assert!(!run.stdout.contains("`good"), "{}", run.stdout);
    assert!(run.stdout.ends_with("kanalyze: 3 errors; read 1 object\n"));
}

#[test]
fn an_object_without_references_exits_0() {
    // The crate that defines `rust_build_error` refers to it legitimately.
    let run = run(&["libbuild_error.rlib"]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout,
        "kanalyze: no `rust_build_error` reference; read 1 object (1 archive member of 1 archive), 1 input skipped\n"
    );
}

#[test]
fn an_unreadable_input_exits_2_and_the_others_are_still_read() {
    let dir = built().path();
    std::fs::write(dir.join("truncated.bin"), b"\x7fELF\x02\x01").expect("write");
    let run = run(&["truncated.bin", "regs.o", "missing.o"]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("error: `missing.o`: cannot read it:"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("error: `truncated.bin`: not a readable object file:"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("in `bad`"));
    assert!(
        run.stdout.ends_with(", 2 inputs unreadable\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn json_is_one_document_with_the_summary() {
    let run = run(&["--format", "json", "regs.o"]);
    assert_eq!(run.code, Some(1));
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["summary"]["errors"], 3);
    assert_eq!(doc["summary"]["objects"], 1);
    let functions: Vec<&str> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["function"].as_str())
        .collect();
    assert_eq!(functions, ["bad", "regs::bad_closure", "regs::bad_generic"]);
}

/// `--dumps`: the fixture compiled through kextract, the rlib's object
/// explained with the dumps of the same build.
#[test]
fn dumps_name_the_argument_and_the_caller_passing_a_runtime_value() {
    use test_harness::{CrateSpec, extract};
    let spec = |source: &str, externs: &[&str]| {
        let mut s = CrateSpec::lib(source)
            .opt("2")
            .arg("-Ccodegen-units=1")
            .arg("-Cdebuginfo=2");
        for e in externs {
            s = s.with_extern(e);
        }
        s
    };
    let out = extract(&[
        spec("build_error/build_error.rs", &[]),
        spec("build_error/regs.rs", &["build_error"]),
        spec("build_error/driver.rs", &["build_error", "regs"]),
    ]);
    let root = repo_root();
    let root = root.to_str().expect("a UTF-8 repository path");
    let run = kanalyze(
        out.dir.path(),
        &[
            "build-error",
            "libregs.rlib",
            "--dumps",
            "kmir",
            "--source-root",
            root,
        ],
    );
    run.assert_no_panic();
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let probe = line_of("build_error/driver.rs", "bad(r, n + 1)");
    assert!(
        run.stdout.contains(&format!(
            "= help: `driver::probe` passes a value that is not a constant as `i` (argument 2) at fixtures/build_error/driver.rs:{probe}:5"
        )),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("driver::fixed"), "{}", run.stdout);

    let missing = kanalyze(
        out.dir.path(),
        &["build-error", "libregs.rlib", "--dumps", "nowhere"],
    );
    assert_eq!(missing.code, Some(2), "{}", missing.stderr);
}

/// `kanalyze check`'s `build-assert-can-be-const` on `asserts.rs`: the
/// assertions on constants, each once; none on an argument, a call's
/// result, a static, or an unconditional `build_error`.
#[test]
fn check_reports_build_asserts_on_constants() {
    use test_harness::{CrateSpec, extract};
    let out = extract(&[
        CrateSpec::lib("build_error/build_error.rs"),
        CrateSpec::lib("build_error/asserts.rs").with_extern("build_error"),
    ]);
    let run = kanalyze(out.dir.path(), &["check", "kmir", "--format", "json"]);
    run.assert_no_panic();
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let found: Vec<(String, u64, String)> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == "build-assert-can-be-const")
        .map(|f| {
            (
                f["function"].as_str().unwrap_or("?").to_string(),
                f["span"]["line"].as_u64().unwrap_or(0),
                f["message"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    let line = |needle| u64::from(line_of("build_error/asserts.rs", needle));
    let static_form = "this `build_assert!` does not depend on run-time values; prefer `static_assert!` (or `const { assert!(..) }` where it reads locals)";
    let const_form =
        "this `build_assert!` does not depend on run-time values; prefer `const { assert!(..) }`";
    assert_eq!(
        found,
        [
            (
                "asserts::constant".to_string(),
                line("build_assert!(1 < LIMIT)"),
                static_form.to_string()
            ),
            (
                "asserts::generic::<1>".to_string(),
                line("build_assert!(N < LIMIT"),
                const_form.to_string()
            ),
            (
                "asserts::through_local".to_string(),
                line("build_assert!(twice > LIMIT)"),
                static_form.to_string()
            ),
        ],
        "{}",
        run.stdout
    );
}

/// `kanalyze check`'s `build-assert-not-inlined` on `not_inlined.rs`: every
/// function that is not `#[inline(always)]` and whose arguments reach an
/// assertion (directly, through a local, through a call it passes them to,
/// in a generic or a closure) once; none for `#[inline(always)]` helpers,
/// const generics, callers passing constants, run-time values that do not
/// come from an argument, or a `const fn` only constants call. At the
/// kernel's opt-level 2, where that `const fn` has a drop-elaborated body
/// (as in the kernel) and the closure is still a call.
#[test]
fn check_reports_build_asserts_on_arguments_in_functions_not_inlined() {
    use test_harness::{CrateSpec, extract};
    let out = extract(&[
        CrateSpec::lib("build_error/build_error.rs"),
        CrateSpec::lib("build_error/not_inlined.rs")
            .with_extern("build_error")
            .opt("2"),
    ]);
    let run = kanalyze(out.dir.path(), &["check", "kmir", "--format", "json"]);
    run.assert_no_panic();
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let found: Vec<(String, u64, u64)> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == "build-assert-not-inlined")
        .map(|f| {
            let note_line = f["notes"]
                .as_array()
                .and_then(|n| n.first())
                .and_then(|n| n["span"]["line"].as_u64())
                .unwrap_or(0);
            (
                f["function"].as_str().unwrap_or("?").to_string(),
                f["span"]["line"].as_u64().unwrap_or(0),
                note_line,
            )
        })
        .collect();
    let line = |needle| u64::from(line_of("build_error/not_inlined.rs", needle));
    let expected = [
        ("direct", "pub fn direct(", "build_assert!(off < LIMIT);"),
        (
            "through_local",
            "pub fn through_local(",
            "build_assert!(off < LIMIT, \"offset",
        ),
        ("hinted", "pub fn hinted(", "build_assert!(off < LIMIT);"),
        ("never", "pub fn never(", "build_assert!(off < LIMIT);"),
        ("Regs::read_at", "pub fn read_at(", "self.check(off);"),
        (
            "generic::<u16>",
            "pub fn generic<T>(",
            "build_assert!(off < LIMIT);",
        ),
        (
            "closure::{closure#0}",
            "let check = |off",
            "let check = |off",
        ),
        (
            "caller_of_direct",
            "pub fn caller_of_direct(",
            "direct(index + 1);",
        ),
    ];
    let expected: Vec<(String, u64, u64)> = expected
        .iter()
        .map(|(f, def, note)| {
            // The first match after the definition, for notes on a
            // line that is spelled the same in several functions.
            let def_line = line(def);
            let note_line =
                std::fs::read_to_string(repo_root().join("fixtures/build_error/not_inlined.rs"))
                    .expect("the fixture")
                    .lines()
                    .enumerate()
                    .skip(def_line as usize - 1)
                    .find(|(_, l)| l.contains(note))
                    .map_or(0, |(i, _)| i as u64 + 1);
            (format!("not_inlined::{f}"), def_line, note_line)
        })
        .collect();
    assert_eq!(found, expected, "{}", run.stdout);
    // Run-time values into assertions: at the call, with the assertion.
    let runtime: Vec<(String, u64, u64)> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == "build-assert-runtime-value")
        .map(|f| {
            (
                f["function"].as_str().unwrap_or("?").to_string(),
                f["span"]["line"].as_u64().unwrap_or(0),
                f["notes"][0]["span"]["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        runtime,
        [
            (
                "not_inlined::poll".to_string(),
                line("r.read_at(off)"),
                line("fn check(&self") + 1
            ),
            (
                "not_inlined::from_static".to_string(),
                line("outer(OFFSET.load"),
                line("fn inner(off") + 1
            ),
        ],
        "{}",
        run.stdout
    );
    // What the text says, for the assertions and for the calls passing
    // the argument on.
    let text = kanalyze(
        out.dir.path(),
        &["check", "kmir", "--allow", "build-assert-can-be-const"],
    );
    text.assert_no_panic();
    let root = repo_root();
    let root = root.to_str().expect("a UTF-8 repository path");
    insta::assert_snapshot!(text.stdout.replace(root, "[ROOT]"));
}

/// Inputs with nothing to read: a linked executable, a shared object, LLVM
/// bitcode, an empty archive, a directory without objects. Each is named
/// with why it was skipped, and a run that read no object is an error.
#[test]
fn inputs_with_nothing_usable_are_named_and_exit_2() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path();
    // LLVM bitcode, compiled from a fixture.
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let status = std::process::Command::new(rustc)
        .args([
            "--edition",
            "2024",
            "--crate-type=lib",
            "--emit=llvm-bc",
            "-o",
        ])
        .arg(d.join("lto.o"))
        .arg(repo_root().join("fixtures/batch/kernel.rs"))
        .status()
        .expect("rustc runs");
    assert!(status.success());
    // An empty archive, and a directory with no object in it.
    std::fs::write(d.join("empty.a"), b"!<arch>\n").expect("written");
    std::fs::create_dir(d.join("nothing")).expect("created");
    std::fs::write(d.join("nothing/notes.txt"), b"no objects here").expect("written");
    // The compiler's own shared library, and this test's kanalyze.
    let sysroot_lib = test_harness::nightly_rustc()
        .parent()
        .and_then(|bin| bin.parent())
        .expect("the sysroot")
        .join("lib");
    let shared = std::fs::read_dir(&sysroot_lib)
        .expect("the sysroot's lib")
        .filter_map(|e| Some(e.ok()?.path()))
        .find(|p| p.extension().is_some_and(|e| e == "so"))
        .expect("a shared object in the sysroot");
    let exe = env!("CARGO_BIN_EXE_kanalyze");
    let shared = shared.to_str().expect("a UTF-8 path");
    let run = kanalyze(
        d,
        &["build-error", "lto.o", "empty.a", "nothing", shared, exe],
    );
    run.assert_no_panic();
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    for (input, why) in [
        ("lto.o", "LLVM bitcode (an LTO object) has no machine code"),
        ("empty.a", "an archive with no members"),
        (
            "nothing",
            "a directory with no `.o`, `.a` or `.rlib` file in it",
        ),
        (shared, "a linked file (an executable or a shared object)"),
        (exe, "a linked file (an executable or a shared object)"),
    ] {
        assert!(
            run.stderr.contains(&format!("`{input}`: {why}")),
            "{input}: {}",
            run.stderr
        );
    }
    assert!(
        run.stderr
            .contains("error: no object with machine code was read: nothing usable was given"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stdout,
        "kanalyze: no `rust_build_error` reference; read 0 objects, 5 inputs skipped\n"
    );
}
