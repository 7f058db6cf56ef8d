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
    assert!(
        err.contains(&format!(
            "no dump written: `{}` (KANALYZE_OUT) is not a directory\n",
            blocker.display()
        )),
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

/// Uses both tool namespaces, as kernel code annotated for klint and
/// kanalyze does.
const BOTH_TOOLS: &str = "
#[klint::preempt_count(adjust = 0)]
pub fn f() {}
#[kanalyze::acquires(0)]
pub fn g(_l: &u8) {}
";

/// Uses only `klint`, for crates that register just that one.
const KLINT_ONLY: &str = "
#[klint::preempt_count(adjust = 0)]
pub fn f() {}
";

/// One spelling of tool registration: the crate root, kextract's extra
/// arguments, the body, and what plain rustc additionally needs to compile
/// the same crate (the registrations kextract provides by itself).
struct Registration {
    name: &'static str,
    header: &'static str,
    args: &'static [&'static str],
    body: &'static str,
    plain_needs: &'static [&'static str],
}

const REGISTRATIONS: &[Registration] = &[
    Registration {
        name: "both tools in one attribute",
        header: "#![feature(register_tool)]\n#![register_tool(klint, kanalyze)]\n",
        args: &[],
        body: BOTH_TOOLS,
        plain_needs: &[],
    },
    Registration {
        name: "spaces inside the parentheses",
        header: "#![feature( register_tool )]\n#![register_tool( klint )]\n",
        args: &[],
        body: BOTH_TOOLS,
        plain_needs: &["-Zcrate-attr=register_tool(kanalyze)"],
    },
    Registration {
        name: "a comment that mentions the registration",
        header: "// the kernel passes register_tool(klint) and feature(register_tool)\n",
        args: &[],
        body: BOTH_TOOLS,
        plain_needs: &[
            "-Zcrate-attr=feature(register_tool)",
            "-Zcrate-attr=register_tool(klint)",
            "-Zcrate-attr=register_tool(kanalyze)",
        ],
    },
    Registration {
        name: "both tools in one -Zcrate-attr",
        header: "",
        args: &[
            "-Zcrate-attr=feature(register_tool)",
            "-Zcrate-attr=register_tool(klint,kanalyze)",
        ],
        body: BOTH_TOOLS,
        plain_needs: &[],
    },
    Registration {
        name: "the kernel's flags",
        header: "",
        args: &[
            "-Zcrate-attr=feature(register_tool)",
            "-Zcrate-attr=register_tool(klint)",
        ],
        body: BOTH_TOOLS,
        plain_needs: &["-Zcrate-attr=register_tool(kanalyze)"],
    },
    Registration {
        name: "the feature among others, one tool in the source, one on the command line",
        header: "#![feature(rustc_attrs, register_tool)]\n#![register_tool(kanalyze)]\n",
        args: &["-Zcrate-attr=register_tool(klint)"],
        body: BOTH_TOOLS,
        plain_needs: &[],
    },
    Registration {
        name: "registration under cfg_attr",
        header: "#![cfg_attr(all(), feature(register_tool), register_tool(klint))]\n",
        args: &[],
        body: BOTH_TOOLS,
        plain_needs: &["-Zcrate-attr=register_tool(kanalyze)"],
    },
    Registration {
        name: "a registration without the feature is rustc's error",
        header: "#![register_tool(klint)]\n",
        args: &[],
        body: KLINT_ONLY,
        plain_needs: &[],
    },
    Registration {
        name: "a tool registered twice by the crate is rustc's error",
        header: "#![feature(register_tool)]\n#![register_tool(klint, klint)]\n",
        args: &[],
        body: KLINT_ONLY,
        plain_needs: &[],
    },
];

#[test]
fn tool_registration_behaves_like_rustc_for_every_spelling() {
    let rustc = nightly_rustc();
    for case in REGISTRATIONS {
        let tmp = tempfile::tempdir().unwrap();
        let run_in = |sub: &str, program: &Path, extra: &[&str], out: Option<&Path>| {
            let dir = tmp.path().join(sub);
            std::fs::create_dir_all(&dir).unwrap();
            // The same relative file name everywhere, so diagnostics match.
            std::fs::write(dir.join("reg.rs"), format!("{}{}", case.header, case.body)).unwrap();
            let mut args = vec!["reg.rs", "--crate-type=lib", "--edition=2024"];
            args.extend_from_slice(case.args);
            args.extend_from_slice(extra);
            let env: Vec<(&str, &Path)> = out.map(|o| ("KANALYZE_OUT", o)).into_iter().collect();
            run(program, &dir, &args, &env)
        };
        let plain = run_in("plain", &rustc, case.plain_needs, None);
        let dumps = tmp.path().join("dumps");
        for (label, out) in [
            ("without KANALYZE_OUT", None),
            ("with KANALYZE_OUT", Some(&*dumps)),
        ] {
            let ours = run_in(label, kextract(), &[], out);
            let context = format!(
                "{} ({label}):\nrustc: {:?}\n{}\nkextract: {:?}\n{}",
                case.name,
                plain.status,
                String::from_utf8_lossy(&plain.stderr),
                ours.status,
                String::from_utf8_lossy(&ours.stderr)
            );
            assert_eq!(ours.status.code(), plain.status.code(), "{context}");
            assert_eq!(ours.stdout, plain.stdout, "{context}");
            assert_eq!(ours.stderr, plain.stderr, "{context}");
        }
        let expected = usize::from(plain.status.success());
        assert_eq!(kmir_files(&dumps).len(), expected, "{}", case.name);
    }
}

#[test]
fn nested_statics_are_dumped_without_touching_the_build() {
    let tmp = tempfile::tempdir().unwrap();
    let dumps = tmp.path().join("dumps");
    let src = fixtures_dir()
        .join("extract/nested_static.rs")
        .display()
        .to_string();
    let args = [src.as_str(), "--crate-type=lib", "--edition=2021"];
    let plain = run(&nightly_rustc(), tmp.path(), &args, &[]);
    assert!(plain.status.success());
    // Strict: any extraction failure would fail the build.
    let mut cmd = clean_command(kextract().to_str().unwrap());
    let out = cmd
        .current_dir(tmp.path())
        .args(args)
        .env("KANALYZE_OUT", &dumps)
        .env("KANALYZE_STRICT", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(out.stderr, plain.stderr, "{err}");
    let files = kmir_files(&dumps);
    assert_eq!(files.len(), 1, "{files:?}");
    let dump = kmir::read_file(&dumps.join(&files[0])).unwrap();
    let describe = |s: &kmir::StaticItem| {
        format!(
            "{} : {} fns {:?}",
            s.path, dump.types[s.ty as usize].display, s.fn_ptrs
        )
    };
    let statics: Vec<String> = dump.statics.iter().map(describe).collect();
    let items = dump
        .statics
        .iter()
        .find(|s| s.path == "nested_static::ITEMS")
        .unwrap_or_else(|| panic!("no ITEMS in {statics:#?}"));
    assert_eq!(
        dump.types[items.ty as usize].display, "&[nested_static::Item<'_>]",
        "{statics:#?}"
    );
    // The function pointer lives in the nested memory, and is still the
    // parent's (as it was when such memory was not a static of its own).
    assert_eq!(items.fn_ptrs.len(), 1, "{statics:#?}");
    let nested = dump
        .statics
        .iter()
        .find(|s| s.path.starts_with("nested_static::ITEMS::"))
        .unwrap_or_else(|| panic!("no nested static in {statics:#?}"));
    assert_eq!(
        dump.types[nested.ty as usize].display, "[nested_static::Item<'_>; 4]",
        "{statics:#?}"
    );
    assert_eq!(nested.fn_ptrs, items.fn_ptrs, "{statics:#?}");
}

#[test]
fn a_compiler_bug_during_extraction_is_kept_out_of_the_build() {
    let tmp = tempfile::tempdir().unwrap();
    let dumps = tmp.path().join("dumps");
    let src = lockapi();
    let kx = |strict: bool| {
        let mut cmd = clean_command(kextract().to_str().unwrap());
        cmd.current_dir(tmp.path())
            .args([&src, "--crate-type=lib", "--edition=2024"])
            .env("KANALYZE_OUT", &dumps)
            // A real `bug!` raised through the compiler's diagnostic context
            // while `lockapi::sleep` is translated.
            .env("KEXTRACT_INJECT_BUG", "lockapi::sleep");
        if strict {
            cmd.env("KANALYZE_STRICT", "1");
        }
        cmd.output().unwrap()
    };
    let out = kx(false);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(tmp.path().join("liblockapi.rlib").exists(), "{err}");
    assert!(!err.contains("internal compiler error"), "{err}");
    assert!(!err.contains("aborting"), "{err}");
    assert!(
        err.starts_with(
            "warning: kextract: extraction of crate `lockapi` failed, no dump written: \
             internal error while translating function `lockapi::sleep` (symbol `_R"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "the compiler reported a bug (ICE): KEXTRACT_INJECT_BUG: injected compiler bug at `lockapi::sleep`\n"
        ),
        "{err}"
    );
    assert!(kmir_files(&dumps).is_empty());

    let out = kx(true);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error: kextract: extraction of crate `lockapi` failed: internal error while translating function `lockapi::sleep`"),
        "{err}"
    );
    assert!(!err.contains("internal compiler error"), "{err}");
}

#[test]
fn temporaries_of_dead_writers_are_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dumps = tmp.path().join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    // A pid that is certainly gone: a child we waited for.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let alive = std::process::id();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let make = |name: &str, old: bool| {
        let path = dumps.join(name);
        let f = std::fs::File::create(&path).unwrap();
        if old {
            f.set_modified(hour_ago).unwrap();
        }
        path
    };
    let stale = make(&format!(".lockapi-00000000deadbeef.kmir.{dead}.tmp"), true);
    let fresh = make(&format!(".other-0000000000000001.kmir.{dead}.tmp"), false);
    let live = make(&format!(".other-0000000000000002.kmir.{alive}.tmp"), true);
    let unrelated = make(&format!(".notes.txt.{dead}.tmp"), true);
    let src = lockapi();
    let out = run(
        kextract(),
        tmp.path(),
        &[&src, "--crate-type=lib", "--edition=2024"],
        &[("KANALYZE_OUT", &dumps)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stale.exists(), "{:?}", kmir_files(&dumps));
    assert!(fresh.exists(), "a recent temporary may still be renamed");
    assert!(live.exists(), "a live writer's temporary is its own");
    assert!(unrelated.exists(), "only temporary dumps are ours");
}

#[test]
fn compiler_probes_on_stdin_are_not_dumped() {
    let tmp = tempfile::tempdir().unwrap();
    let dumps = tmp.path().join("dumps");
    let compile = |name: &str, emit: &str| {
        let mut cmd = clean_command(kextract().to_str().unwrap());
        let mut child = cmd
            .current_dir(tmp.path())
            .args(["--crate-name", name, "--crate-type=lib", "--edition=2021"])
            .arg(format!("--emit={emit}"))
            .args(["--out-dir", tmp.path().to_str().unwrap(), "-"])
            .env("KANALYZE_OUT", &dumps)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"pub fn probe() -> u32 { 1 }\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // What autocfg does from a build script, inheriting KANALYZE_OUT.
    compile("autocfg_0123_0", "llvm-ir");
    assert!(kmir_files(&dumps).is_empty(), "{:?}", kmir_files(&dumps));
    // What kbuild's `rustc-option` does: an object, on standard output.
    compile("rust_out", "obj=-");
    assert!(kmir_files(&dumps).is_empty(), "{:?}", kmir_files(&dumps));
    // A crate read from stdin that is linked is still a crate.
    compile("from_stdin", "link");
    let files = kmir_files(&dumps);
    assert!(
        files.len() == 1 && files[0].starts_with("from_stdin-"),
        "{files:?}"
    );
}
