//! The userspace profile on real lock APIs: `fixtures/userspace`, a cargo
//! project on std, parking_lot and spin, built through `cargo kextract`
//! with its registry dependencies and checked with the built-in userspace
//! spec (detected: the program is not the kernel). Each module of the
//! fixture has a snapshot of the findings shown in it; every line marked
//! `// BUG: <kind>` is the primary location of a finding of that kind, and
//! the `clean_*` modules have none.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::cargo_fixture::{self as fixture, Checked, findings_by_file, redact};
use test_harness::fixtures_dir;

const PROJECT: &str = "userspace";

/// Builds the fixture through `cargo kextract` (once per test process,
/// into a fresh target directory so that every dependency is dumped) and
/// checks it.
fn checked() -> &'static Checked {
    static RUN: OnceLock<Checked> = OnceLock::new();
    RUN.get_or_init(|| {
        let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("userspace-fixture");
        fixture::build_and_check(PROJECT, &work, &[])
    })
}

fn modules() -> Vec<String> {
    fixture::modules(PROJECT, &[])
}

#[test]
fn planted_bugs_are_errors_at_their_lines() {
    let run = checked();
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let planted = fixture::assert_markers_match(PROJECT, &modules(), run);
    assert_eq!(
        planted, 7,
        "the six planted bugs of the issue, and a read under an upgradeable read"
    );
}

#[test]
fn the_summary_names_the_profile_and_the_lock_apis_seen() {
    let run = checked();
    let line = fixture::profile_line(run, "userspace");
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
    spin_upgradeable,
    clean_order,
    clean_guard_dropped,
    clean_try_lock,
    clean_reentrant,
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
        "spin_upgradeable",
        "clean_order",
        "clean_guard_dropped",
        "clean_try_lock",
        "clean_reentrant",
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
