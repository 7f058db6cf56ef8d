//! The embedded profile on a firmware: `fixtures/embedded`, a cargo project
//! on `cortex-m`, `cortex-m-rt`, `critical-section`, `embedded-hal` and
//! `spin`, built for `thumbv7em-none-eabihf` through `cargo kextract` and
//! checked with the built-in embedded spec (detected: the program is built
//! for a bare-metal target). Each module of the fixture has a snapshot of
//! the findings shown in it; every line marked `// BUG: <kind>` is the
//! primary location of a finding of that kind, and the `clean_*` modules
//! have none.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::cargo_fixture::{self as fixture, Checked, findings_by_file};
use test_harness::fixtures_dir;

const PROJECT: &str = "embedded";

/// The target the fixture is built for: a Cortex-M4F, the most common
/// firmware target (`scripts/toolchain.sh` installs its `core`).
const TARGET: &str = "thumbv7em-none-eabihf";

/// Modules that support the others (the device crate's part) and have no
/// findings of their own.
const SUPPORT: &[&str] = &["device"];

fn checked() -> &'static Checked {
    static RUN: OnceLock<Checked> = OnceLock::new();
    RUN.get_or_init(|| {
        let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("embedded-fixture");
        fixture::build_and_check(PROJECT, &work, &["--target", TARGET])
    })
}

fn modules() -> Vec<String> {
    fixture::modules(PROJECT, SUPPORT)
}

#[test]
fn planted_bugs_are_errors_at_their_lines() {
    let run = checked();
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let planted = fixture::assert_markers_match(PROJECT, &modules(), run);
    assert_eq!(planted, 5, "the five planted bugs of the fixture");
    assert!(
        !findings_by_file(&run.stdout).contains_key("src/device.rs"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_profile_is_detected_and_names_what_it_recognised() {
    let run = checked();
    let line = fixture::profile_line(run, "embedded");
    for api in [
        "`spin::mutex::Mutex`",
        "`cortex_m::asm::wfi`",
        "critical sections recognised: `cortex_m::interrupt::free`, `critical_section::with`",
    ] {
        assert!(line.contains(api), "{api} not in: {line}");
    }
    // `cortex_m::asm::delay` is a busy loop of a few cycles, not a wait.
    assert!(!line.contains("`cortex_m::asm::delay`"), "{line}");
    assert!(
        run.stdout
            .contains("taken to constrain nothing (embedded profile)"),
        "{}",
        run.stdout
    );
}

/// The userspace profile knows no critical section: the same firmware,
/// checked with it, has only the lock bug that needs no section to see.
#[test]
fn the_userspace_profile_knows_no_critical_section() {
    let run = checked();
    let out = common::kanalyze(
        &fixtures_dir().join(PROJECT),
        &[
            "check",
            run.dumps.to_str().unwrap(),
            "--no-cache",
            "--profile",
            "userspace",
        ],
    );
    out.assert_no_panic();
    assert!(
        !out.stdout.contains("with interrupts disabled may block"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.starts_with("kanalyze: userspace profile")
            || out.stdout.contains("\nkanalyze: userspace profile"),
        "{}",
        out.stdout
    );
}

/// A profile name that does not exist is a usage error naming the three,
/// on the command line and in `kanalyze.toml`.
#[test]
fn an_unknown_profile_is_an_error_naming_the_profiles() {
    let run = checked();
    let dir = run.dumps.parent().unwrap();
    let out = common::kanalyze(
        dir,
        &["check", "kmir", "--no-cache", "--profile", "firmware"],
    );
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("firmware") && out.stderr.contains("embedded"),
        "{}",
        out.stderr
    );
    let config = dir.join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("kanalyze.toml"), "profile = \"embeded\"\n").unwrap();
    let out = common::kanalyze(
        &config,
        &["check", run.dumps.to_str().unwrap(), "--no-cache"],
    );
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    insta::assert_snapshot!(
        "unknown_profile",
        fixture::redact(&out.stderr, &run.dumps).replace(config.to_str().unwrap(), "$DIR")
    );
}

macro_rules! module_snapshots {
    ($($module:ident),* $(,)?) => {
        $(
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
        )*

        /// Every module of the fixture has its snapshot test.
        #[test]
        fn every_module_has_a_snapshot() {
            let mut listed: Vec<String> = [$(stringify!($module)),*]
                .iter()
                .map(|s| s.to_string())
                .collect();
            listed.sort();
            assert_eq!(modules(), listed);
        }
    };
}

module_snapshots!(
    cs_delay,
    cs_wfi,
    cs_blocking_lock,
    irq_unsafe,
    handler_wait,
    clean_critical_section,
    clean_masked,
);
