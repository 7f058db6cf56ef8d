//! The `kanalyze dump` command line: exit codes and messages for every kind
//! of bad input, several inputs at once, `--item`, `--no-bodies`, and a
//! closed stdout. The binary runs inside a temporary directory with relative
//! paths so that messages (and so snapshots) do not depend on where it is.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use kmir::{FORMAT_VERSION, MAGIC};
use tempfile::TempDir;

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Exit code and stderr, for snapshots of error reports.
    fn report(&self) -> String {
        format!("exit code: {:?}\n{}", self.code, self.stderr)
    }
}

fn kanalyze(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the kanalyze binary runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn tempdir() -> TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parent directories");
    }
    std::fs::write(path, bytes).expect("write a test file");
}

fn good_bytes() -> Vec<u8> {
    kmir::encode(&common::sample_dump())
}

/// A prefix announcing `payload` with a correct length and checksum.
fn framed(version: u32, payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::from(MAGIC);
    bytes.extend_from_slice(&version.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

fn assert_no_panic(run: &Run) {
    assert!(
        !run.stderr.contains("panicked"),
        "kanalyze panicked:\n{}",
        run.stderr
    );
}

/// Runs `kanalyze dump NAME` on a single file with `bytes`, which must be
/// rejected with exit code 2 and nothing on stdout.
fn rejected(name: &str, bytes: &[u8]) -> Run {
    let dir = tempdir();
    write(dir.path(), name, bytes);
    let run = kanalyze(dir.path(), &["dump", name]);
    assert_no_panic(&run);
    assert_eq!(run.code, Some(2), "stderr:\n{}", run.stderr);
    assert_eq!(run.stdout, "", "nothing is printed for a bad dump");
    run
}

#[test]
fn nonexistent_path() {
    let dir = tempdir();
    let run = kanalyze(dir.path(), &["dump", "missing.kmir"]);
    assert_no_panic(&run);
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!(run.report());
}

#[test]
fn directory_without_dumps() {
    let dir = tempdir();
    write(dir.path(), "out/notes.txt", b"no dumps here");
    write(
        dir.path(),
        "out/sub/.fixture-0123456789abcdef.kmir.42.tmp",
        b"partial",
    );
    let run = kanalyze(dir.path(), &["dump", "out"]);
    assert_no_panic(&run);
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!(run.report());
}

#[test]
fn not_a_dump() {
    let run = rejected("notes.kmir", b"these are my notes, not a dump\n");
    insta::assert_snapshot!(run.report());
}

#[test]
fn empty_file() {
    let run = rejected("empty.kmir", b"");
    insta::assert_snapshot!(run.report());
}

// The damaged files below frame a fixed payload rather than the sample
// dump, so that the byte counts and checksums in the snapshots do not change
// whenever the sample (or the format) does.

#[test]
fn truncated_payload() {
    let bytes = framed(FORMAT_VERSION, &[7; 100]);
    let run = rejected("cut.kmir", &bytes[..bytes.len() - 40]);
    insta::assert_snapshot!(run.report());
}

#[test]
fn truncated_real_dump() {
    let bytes = good_bytes();
    let run = rejected("cut.kmir", &bytes[..bytes.len() / 2]);
    assert!(
        run.stderr.starts_with("error: `cut.kmir`: truncated: "),
        "{}",
        run.stderr
    );
}

#[test]
fn truncated_prefix() {
    let run = rejected("cut.kmir", &framed(FORMAT_VERSION, b"")[..12]);
    insta::assert_snapshot!(run.report());
}

#[test]
fn wrong_format_version() {
    let run = rejected("old.kmir", &framed(FORMAT_VERSION + 6, b"payload"));
    // Stable across format bumps.
    let report = run
        .report()
        .replace(
            &format!("version {}", FORMAT_VERSION + 6),
            "version [CURRENT+6]",
        )
        .replace(&format!("version {FORMAT_VERSION}"), "version [CURRENT]");
    insta::assert_snapshot!(report);
}

#[test]
fn wrong_format_version_of_a_real_dump() {
    let mut bytes = good_bytes();
    bytes[8..12].copy_from_slice(&0u32.to_le_bytes());
    let run = rejected("old.kmir", &bytes);
    assert!(run.stderr.contains("version 0,"), "{}", run.stderr);
}

#[test]
fn checksum_mismatch() {
    let mut bytes = framed(FORMAT_VERSION, b"a payload of some length");
    bytes[30] ^= 0x40;
    let run = rejected("flipped.kmir", &bytes);
    insta::assert_snapshot!(run.report());
}

#[test]
fn checksum_mismatch_of_a_real_dump() {
    let mut bytes = good_bytes();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    let run = rejected("flipped.kmir", &bytes);
    assert!(run.stderr.contains("payload checksum is"), "{}", run.stderr);
}

#[test]
fn corrupt_payload_with_valid_checksum() {
    // A length prefix claiming far more string than the payload holds.
    let run = rejected(
        "garbage.kmir",
        &framed(FORMAT_VERSION, &[0xfc, 0xff, 0xff, 0xff, 0x7f, b'k']),
    );
    insta::assert_snapshot!(run.report());
}

#[test]
fn bytes_after_the_payload() {
    let mut bytes = framed(FORMAT_VERSION, b"payload");
    bytes.extend_from_slice(b"trailing");
    let run = rejected("long.kmir", &bytes);
    insta::assert_snapshot!(run.report());
}

#[test]
fn dump_that_breaks_an_invariant() {
    let mut dump = common::sample_dump();
    if let Some(body) = &mut dump.instances[0].body {
        body.locals[2].ty = 999;
    }
    let run = rejected("invalid.kmir", &kmir::encode(&dump));
    insta::assert_snapshot!(run.report());
}

#[test]
fn missing_paths_are_a_usage_error() {
    let dir = tempdir();
    let run = kanalyze(dir.path(), &["dump"]);
    assert_no_panic(&run);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("PATH"), "{}", run.stderr);
}

#[test]
fn prints_a_good_dump() {
    let dir = tempdir();
    write(dir.path(), "fixture.kmir", &good_bytes());
    let run = kanalyze(dir.path(), &["dump", "fixture.kmir"]);
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    assert_eq!(run.stderr, "");
    assert!(
        run.stdout
            .starts_with("// crate `fixture` from fixture.kmir\n")
    );
    // The CLI prints what the library prints.
    let mut lib = Vec::new();
    kanalyze::print::print_dump(
        &mut lib,
        &common::sample_dump(),
        Some(Path::new("fixture.kmir")),
        kanalyze::print::Options::default(),
    )
    .expect("printing into memory");
    assert_eq!(run.stdout, String::from_utf8_lossy(&lib));
}

#[test]
fn bad_files_are_skipped_and_the_others_printed() {
    let dir = tempdir();
    write(dir.path(), "out/a/first.kmir", &good_bytes());
    write(dir.path(), "out/b/broken.kmir", b"not a dump");
    write(dir.path(), "out/c/last.kmir", &good_bytes());
    let run = kanalyze(dir.path(), &["dump", "out", "gone.kmir"]);
    assert_no_panic(&run);
    let headers: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("// crate `"))
        .collect();
    assert_eq!(
        headers,
        [
            "// crate `fixture` from out/a/first.kmir",
            "// crate `fixture` from out/c/last.kmir"
        ]
    );
    insta::assert_snapshot!(run.report());
}

#[test]
fn directories_are_searched_recursively_in_sorted_order() {
    let dir = tempdir();
    for name in [
        "out/z.kmir",
        "out/b/deep/y.kmir",
        "out/a.kmir",
        "out/b/x.kmir",
    ] {
        write(dir.path(), name, &good_bytes());
    }
    let run = kanalyze(dir.path(), &["dump", "out", "--no-bodies"]);
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    let sources: Vec<&str> = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("// crate `fixture` from "))
        .collect();
    assert_eq!(
        sources,
        [
            "out/a.kmir",
            "out/b/deep/y.kmir",
            "out/b/x.kmir",
            "out/z.kmir"
        ]
    );
}

#[test]
fn no_bodies_keeps_signatures_and_locals() {
    let dir = tempdir();
    write(dir.path(), "fixture.kmir", &good_bytes());
    let run = kanalyze(dir.path(), &["dump", "--no-bodies", "fixture.kmir"]);
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    assert!(
        run.stdout
            .contains("fn fixture::is_even(_1: u32) -> bool {")
    );
    assert!(run.stdout.contains("let mut _2: u32;"));
    assert!(!run.stdout.contains("bb0"));
}

#[test]
fn item_selects_instances_by_name_path_or_symbol() {
    let dir = tempdir();
    write(dir.path(), "fixture.kmir", &good_bytes());
    for needle in ["is_even", "fixture::is_ev", common::IS_EVEN] {
        let run = kanalyze(dir.path(), &["dump", "fixture.kmir", "--item", needle]);
        assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
        let fns: Vec<&str> = run
            .stdout
            .lines()
            .filter(|l| l.starts_with("fn "))
            .collect();
        assert_eq!(
            fns,
            ["fn fixture::is_even(_1: u32) -> bool {"],
            "--item {needle}"
        );
        assert!(
            run.stdout
                .contains(&format!("// --item `{needle}`: 1 of 6 instances"))
        );
    }
    // Generic arguments may be left out.
    let run = kanalyze(
        dir.path(),
        &["dump", "fixture.kmir", "--item", "SpinLock::lock"],
    );
    let fns: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("fn "))
        .collect();
    assert_eq!(fns.len(), 1, "{fns:?}");
    assert!(fns[0].starts_with("fn kernel::sync::SpinLock::<u32>::lock("));
    // Matching on the item path: both the probe method and its shim.
    let run = kanalyze(
        dir.path(),
        &["dump", "fixture.kmir", "--item", "impl fixture::Device"],
    );
    assert_eq!(
        run.stdout.lines().filter(|l| l.starts_with("fn ")).count(),
        2
    );
}

#[test]
fn item_without_match_suggests_close_names() {
    let dir = tempdir();
    write(dir.path(), "fixture.kmir", &good_bytes());
    let run = kanalyze(dir.path(), &["dump", "fixture.kmir", "--item", "spinlokc"]);
    assert_no_panic(&run);
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!(run.report());
}

#[test]
fn item_without_any_close_name() {
    let dir = tempdir();
    write(dir.path(), "fixture.kmir", &good_bytes());
    let run = kanalyze(dir.path(), &["dump", "fixture.kmir", "--item", "qqqqqqqq"]);
    assert_no_panic(&run);
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!(run.report());
}

#[test]
fn closed_stdout_ends_quietly() {
    let dir = tempdir();
    write(
        dir.path(),
        "big.kmir",
        &kmir::encode(&common::big_dump(3000)),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        .args(["dump", "big.kmir"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the kanalyze binary runs");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).expect("some output");
    // Like `| head`: stop reading long before the end.
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = child.wait().expect("kanalyze exits");
    assert_eq!(stderr, "", "a closed pipe is not an error");
    assert_eq!(status.code(), Some(0));
    assert!(first.starts_with(b"// crate `fixture`"));
}
