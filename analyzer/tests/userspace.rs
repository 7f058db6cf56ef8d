//! The userspace profile on real lock APIs: `fixtures/userspace`, a cargo
//! project on std, parking_lot and spin, built through `cargo kextract`
//! with its registry dependencies and checked with the built-in userspace
//! spec (detected: the program is not the kernel). Each module of the
//! fixture has a snapshot of the findings shown in it; every line marked
//! `// BUG: <kind>` is the primary location of a finding of that kind, and
//! the `clean_*` modules have none.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use test_harness::{clean_command, fixtures_dir, kextract};

/// What one `kanalyze check` of the fixture printed.
struct Checked {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// The dumps, for the runs of a test of its own.
    dumps: PathBuf,
}

const PROJECT: &str = "userspace";

/// Builds the fixture through `cargo kextract` (once per test process,
/// into a fresh target directory so that every dependency is dumped) and
/// checks it.
fn checked() -> &'static Checked {
    static RUN: OnceLock<Checked> = OnceLock::new();
    RUN.get_or_init(|| {
        let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("userspace-fixture");
        let _ = std::fs::remove_dir_all(&work);
        let dumps = work.join("kmir");
        let output = clean_command(
            kextract()
                .with_file_name("cargo-kextract")
                .to_str()
                .unwrap(),
        )
        .current_dir(fixtures_dir().join(PROJECT))
        .args(["--out", dumps.to_str().unwrap(), "--quiet", "--locked"])
        .env("CARGO_TARGET_DIR", work.join("target"))
        .env("KANALYZE_STRICT", "1")
        .output()
        .expect("run cargo kextract");
        assert!(
            output.status.success(),
            "cargo kextract failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let run = common::kanalyze(
            &fixtures_dir().join(PROJECT),
            &["check", dumps.to_str().unwrap(), "--no-cache"],
        );
        run.assert_no_panic();
        Checked {
            code: run.code,
            stdout: redact(&run.stdout, &dumps),
            stderr: redact(&run.stderr, &dumps),
            dumps,
        }
    })
}

/// Output without the paths of this machine.
fn redact(text: &str, dumps: &Path) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    let mut out = text.replace(dumps.to_str().unwrap(), "$DUMPS");
    if !home.is_empty() {
        out = out.replace(&format!("{home}/.cargo"), "$CARGO_HOME");
        out = out.replace(&format!("{home}/.rustup"), "$RUSTUP_HOME");
    }
    out
}

/// The findings of the text output, each whole, by the file of its primary
/// location (`src/std_aa.rs`); a finding without one under `""`.
fn findings_by_file(stdout: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Vec<&str> = Vec::new();
    let mut flush = |block: &mut Vec<&str>| {
        if block.is_empty() {
            return;
        }
        let file = block
            .iter()
            .find_map(|l| l.trim_start().strip_prefix("--> "))
            .and_then(|at| at.split(':').next())
            .unwrap_or("")
            .to_string();
        out.entry(file).or_default().push(block.join("\n"));
        block.clear();
    };
    for line in stdout.lines() {
        if line.starts_with("error") || line.starts_with("warning") || line.starts_with("kanalyze:")
        {
            flush(&mut current);
        }
        if !line.starts_with("kanalyze:") {
            current.push(line);
        }
    }
    flush(&mut current);
    out
}

/// The modules of the fixture (`std_aa`), from its sources.
fn modules() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir().join(PROJECT).join("src"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".rs").map(str::to_string))
        .filter(|n| n != "lib")
        .collect();
    names.sort();
    names
}

/// (line, kind) of every `// BUG: kind` marker of a module.
fn markers(module: &str) -> Vec<(u32, String)> {
    let text = std::fs::read_to_string(
        fixtures_dir()
            .join(PROJECT)
            .join(format!("src/{module}.rs")),
    )
    .unwrap();
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let kind = l.split("// BUG: ").nth(1)?;
            Some((i as u32 + 1, kind.trim().to_string()))
        })
        .collect()
}

/// The kind of a finding block, from its first line: the kinds this
/// fixture's findings have, by their message.
fn kind_of(block: &str) -> &'static str {
    let first = block.lines().next().unwrap_or("");
    if first.contains("is acquired while it is already held") {
        "double-lock"
    } else if first.contains("lock order inversion") {
        "lock-order-inversion"
    } else if first.contains("may block, but the context is atomic here") {
        "sleep-in-atomic"
    } else if first.contains("returns with lock") {
        "lock-leak"
    } else {
        "other"
    }
}

/// The primary line of a finding block.
fn primary_line(block: &str) -> Option<u32> {
    let at = block
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("--> "))?;
    at.split(':').nth(1)?.parse().ok()
}

#[test]
fn planted_bugs_are_errors_at_their_lines() {
    let run = checked();
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let by_file = findings_by_file(&run.stdout);
    let mut planted = 0;
    for module in modules() {
        let file = format!("src/{module}.rs");
        let found: Vec<(Option<u32>, &str)> = by_file
            .get(&file)
            .map(|blocks| {
                blocks
                    .iter()
                    .map(|b| (primary_line(b), kind_of(b)))
                    .collect()
            })
            .unwrap_or_default();
        let expected = markers(&module);
        planted += expected.len();
        for (line, kind) in &expected {
            assert!(
                found.contains(&(Some(*line), kind.as_str())),
                "{file}:{line}: no {kind} reported there; found {found:?}\n{}",
                run.stdout
            );
        }
        assert_eq!(
            found.len(),
            expected.len(),
            "{file}: {found:?} against the markers {expected:?}\n{}",
            run.stdout
        );
    }
    assert_eq!(planted, 6, "the six planted bugs of the fixture");
    // Nothing is shown outside the fixture's own modules.
    assert_eq!(
        by_file.keys().filter(|f| !f.starts_with("src/")).count(),
        0,
        "{}",
        run.stdout
    );
}

#[test]
fn the_summary_names_the_profile_and_the_lock_apis_seen() {
    let run = checked();
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("kanalyze: userspace profile"))
        .unwrap_or_else(|| panic!("no profile line:\n{}", run.stdout));
    for api in [
        "`std::sync::Mutex`",
        "`lock_api::Mutex`",
        "`spin::mutex::Mutex`",
    ] {
        assert!(line.contains(api), "{api} not in: {line}");
    }
    assert!(line.contains("`std::thread::sleep`"), "{line}");
}

/// A program that uses none of the lock APIs the profile knows is told so:
/// a clean result then proves little.
#[test]
fn a_program_without_known_lock_apis_is_told_so() {
    let out = test_harness::extract(&[test_harness::CrateSpec::lib("ui/profiles.rs")]);
    std::fs::remove_file(out.dir.path().join("kanalyze.toml")).unwrap();
    let run = common::kanalyze(out.dir.path(), &["check", "kmir", "--no-cache"]);
    assert!(
        run.stdout.contains(
            "kanalyze: userspace profile: no lock API the spec describes is used (only locks the program's annotations or `--spec` files describe are checked)"
        ),
        "{}",
        run.stdout
    );
}

/// A `[rust]` entry naming a function by the path the code uses, not its
/// item path, names nothing: the warning says which item it is.
#[test]
fn a_rust_entry_by_its_public_path_is_told_the_item_path() {
    let run = checked();
    let dir = run.dumps.parent().unwrap();
    let spec = dir.join("by-name.toml");
    std::fs::write(
        &spec,
        "[rust]\n\"std::thread::sleep\" = { blocks = true }\n\"std::sync::Mutex::<T>::lock\" = { lock = { op = \"acquire\", arg = 0, kind = \"mutex\" } }\n\"my::own::sleep\" = { blocks = true }\n",
    )
    .unwrap();
    let out = common::kanalyze(
        dir,
        &["check", "kmir", "--no-cache", "--spec", "by-name.toml"],
    );
    insta::assert_snapshot!("rust_entry_by_public_path", redact(&out.stderr, &run.dumps));
}

macro_rules! module_snapshots {
    ($($module:ident),* $(,)?) => {$(
        #[test]
        fn $module() {
            let module = stringify!($module);
            let run = checked();
            let blocks = findings_by_file(&run.stdout)
                .remove(&format!("src/{module}.rs"))
                .unwrap_or_default();
            if module.starts_with("clean_") {
                assert!(blocks.is_empty(), "{module} must stay clean:\n{}", run.stdout);
            }
            insta::assert_snapshot!(module, blocks.join("\n"));
        }
    )*};
}

module_snapshots!(
    std_aa,
    std_abba,
    spin_sleep,
    parking_lot_aa,
    spin_aa,
    clean_order,
    clean_guard_dropped,
    clean_try_lock,
);

/// Every module of the fixture has its snapshot test above.
#[test]
fn every_module_has_a_snapshot() {
    let listed = [
        "std_aa",
        "std_abba",
        "spin_sleep",
        "parking_lot_aa",
        "spin_aa",
        "clean_order",
        "clean_guard_dropped",
        "clean_try_lock",
    ];
    let mut listed: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(modules(), listed);
}

/// The HTML report says which lock APIs the result covers, and when none.
#[test]
fn the_html_report_names_the_lock_apis_seen() {
    let run = checked();
    let dir = run.dumps.parent().unwrap();
    let out = common::kanalyze(
        &fixtures_dir().join(PROJECT),
        &[
            "report",
            run.dumps.to_str().unwrap(),
            "--no-cache",
            "--html",
            dir.join("html").to_str().unwrap(),
        ],
    );
    out.assert_no_panic();
    let page = std::fs::read_to_string(dir.join("html/index.html")).unwrap();
    assert!(page.contains("lock APIs recognised"), "{}", out.stderr);
    assert!(page.contains("std::sync::Mutex"));
    assert!(page.contains("blocking calls recognised"));

    let bare = test_harness::extract(&[test_harness::CrateSpec::lib("ui/profiles.rs")]);
    std::fs::remove_file(bare.dir.path().join("kanalyze.toml")).unwrap();
    let out = common::kanalyze(
        bare.dir.path(),
        &["report", "kmir", "--no-cache", "--html", "html"],
    );
    out.assert_no_panic();
    let page = std::fs::read_to_string(bare.dir.path().join("html/index.html")).unwrap();
    assert!(
        page.contains("none the spec describes (only locks the program&#39;s annotations or --spec files describe are checked)"),
        "{}",
        out.stderr
    );
}
