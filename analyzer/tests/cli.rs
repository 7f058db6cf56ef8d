//! The `kanalyze dump` command line: exit codes and messages for every kind
//! of bad input, several inputs at once, `--item`, `--no-bodies`, and a
//! closed stdout. The binary runs inside a temporary directory with relative
//! paths so that messages (and so snapshots) do not depend on where it is.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use common::{Run, kanalyze};
use kmir::{CrateDump, FORMAT_VERSION, MAGIC};
use tempfile::TempDir;
use test_harness::{CrateSpec, DumpExt, extract};

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

/// The files kextract wrote for `fixtures/extract/lockapi.rs` and
/// `graph.rs`, compiled once per test binary.
struct Dumps {
    lockapi: Vec<u8>,
    graph: Vec<u8>,
}

fn dumps() -> &'static Dumps {
    static DUMPS: OnceLock<Dumps> = OnceLock::new();
    DUMPS.get_or_init(|| {
        let out = extract(&[
            CrateSpec::lib("extract/lockapi.rs"),
            CrateSpec::lib("extract/graph.rs"),
        ]);
        let bytes = |name: &str| {
            let path = out
                .dump_paths()
                .into_iter()
                .find(|p| {
                    p.file_name()
                        .and_then(|f| f.to_str())
                        .is_some_and(|f| f.starts_with(&format!("{name}-")))
                })
                .unwrap_or_else(|| panic!("no dump of `{name}`; stderr:\n{}", out.stderr));
            std::fs::read(path).expect("read a dump")
        };
        // The temporary directory goes away with `out`: only the bytes stay.
        Dumps {
            lockapi: bytes("lockapi"),
            graph: bytes("graph"),
        }
    })
}

fn lockapi_bytes() -> &'static [u8] {
    &dumps().lockapi
}

fn graph_bytes() -> &'static [u8] {
    &dumps().graph
}

fn decoded(bytes: &[u8]) -> CrateDump {
    kmir::decode(bytes).unwrap_or_else(|e| panic!("{e}"))
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

/// Runs `kanalyze dump NAME` on a single file with `bytes`, which must be
/// rejected with exit code 2 and nothing on stdout.
fn rejected(name: &str, bytes: &[u8]) -> Run {
    let dir = tempdir();
    write(dir.path(), name, bytes);
    let run = kanalyze(dir.path(), &["dump", name]);
    run.assert_no_panic();
    assert_eq!(run.code, Some(2), "stderr:\n{}", run.stderr);
    assert_eq!(run.stdout, "", "nothing is printed for a bad dump");
    run
}

/// The `fn …` lines of a printout: one per instance printed.
fn fn_lines(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.starts_with("fn ")).collect()
}

#[test]
fn nonexistent_path() {
    let dir = tempdir();
    let run = kanalyze(dir.path(), &["dump", "missing.kmir"]);
    run.assert_no_panic();
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
    run.assert_no_panic();
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

// The damaged files below whose reports are snapshotted frame a fixed
// payload of arbitrary bytes rather than a real dump, so that the byte
// counts and checksums in the snapshots do not change whenever the
// extractor (or the format) does. The `…_of_a_real_dump` tests damage what
// kextract wrote and check the kind of report only.

#[test]
fn truncated_payload() {
    let bytes = framed(FORMAT_VERSION, &[7; 100]);
    let run = rejected("cut.kmir", &bytes[..bytes.len() - 40]);
    insta::assert_snapshot!(run.report());
}

#[test]
fn truncated_real_dump() {
    let bytes = lockapi_bytes();
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
    // Cut inside the magic: still a cut-off dump, not "not a dump".
    let run = rejected("cut.kmir", b"KANA");
    assert!(
        run.stderr
            .starts_with("error: `cut.kmir`: truncated: the file has 4 bytes, fewer than"),
        "{}",
        run.stderr
    );
}

#[test]
fn u128_length_marker() {
    // bincode's marker of a 128-bit varint where the first string's length
    // (a u64) is read.
    let mut payload = vec![0xfe];
    payload.extend_from_slice(&[1; 16]);
    let run = rejected("wide.kmir", &framed(FORMAT_VERSION, &payload));
    assert!(!run.stderr.contains("InvalidIntegerType"), "{}", run.stderr);
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

/// A dump of the previous format version (what an existing build
/// directory holds after a kanalyze upgrade) says it is older and how to
/// re-extract; a newer one says to rebuild kanalyze instead.
#[test]
fn older_and_newer_format_versions_say_which_side_to_rebuild() {
    let mut bytes = lockapi_bytes().to_vec();
    bytes[8..12].copy_from_slice(&(FORMAT_VERSION - 1).to_le_bytes());
    let run = rejected("old.kmir", &bytes);
    let expected = format!(
        "written by dump format version {}, but this kanalyze reads version {FORMAT_VERSION}; \
         re-extract the crate with a matching kextract",
        FORMAT_VERSION - 1
    );
    assert!(run.stderr.contains(&expected), "{}", run.stderr);
    assert!(
        run.stderr.contains("the dump is older than this kanalyze"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("= help: rebuild kextract"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);

    bytes[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let run = rejected("new.kmir", &bytes);
    assert!(
        run.stderr.contains("the dump is newer than this kanalyze"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("= help: rebuild kanalyze"),
        "{}",
        run.stderr
    );
}

#[test]
fn wrong_format_version_of_a_real_dump() {
    let mut bytes = lockapi_bytes().to_vec();
    bytes[8..12].copy_from_slice(&0u32.to_le_bytes());
    let run = rejected("old.kmir", &bytes);
    assert!(
        run.stderr.contains(&format!(
            "version 0, but this kanalyze reads version {FORMAT_VERSION};"
        )),
        "{}",
        run.stderr
    );
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
    let mut bytes = lockapi_bytes().to_vec();
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
    // A real dump, decoded, with one type index pointed past the type
    // table, and encoded again with a valid prefix and checksum.
    let mut dump = decoded(lockapi_bytes());
    let lock = dump
        .instances
        .iter_mut()
        .find(|i| i.name == "lockapi::SpinLock::<u32>::lock")
        .expect("the fixture has `SpinLock::<u32>::lock`");
    let body = lock.body.as_mut().expect("a local instance has a body");
    body.locals[2].ty = 999;
    let run = rejected("invalid.kmir", &kmir::encode(&dump));
    insta::assert_snapshot!(run.report());
}

#[test]
fn dump_with_an_unsorted_adt_table() {
    // ADTs are found by binary search: a table out of order is rejected.
    let mut dump = decoded(lockapi_bytes());
    assert!(dump.adts.len() >= 2, "the fixture defines several ADTs");
    dump.adts.reverse();
    let run = rejected("unsorted.kmir", &kmir::encode(&dump));
    insta::assert_snapshot!(run.report());
}

#[test]
fn missing_paths_are_a_usage_error() {
    let dir = tempdir();
    let run = kanalyze(dir.path(), &["dump"]);
    run.assert_no_panic();
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("PATH"), "{}", run.stderr);
}

#[test]
fn prints_a_good_dump() {
    let dir = tempdir();
    write(dir.path(), "lockapi.kmir", lockapi_bytes());
    let run = kanalyze(dir.path(), &["dump", "lockapi.kmir"]);
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    assert_eq!(run.stderr, "");
    assert!(
        run.stdout
            .starts_with("// crate `lockapi` from lockapi.kmir\n")
    );
    // The lock's call to C, resolved to the foreign external.
    assert!(
        run.stdout.contains(
            "_2 = call lockapi::spin_lock(move _3) -> [return: bb2, unwind unreachable];  \
             // symbol spin_lock, external foreign"
        ),
        "{}",
        run.stdout
    );
    // The CLI prints what the library prints.
    let mut lib = Vec::new();
    kanalyze::print::print_dump(
        &mut lib,
        &decoded(lockapi_bytes()),
        Some(Path::new("lockapi.kmir")),
        kanalyze::print::Options::default(),
    )
    .expect("printing into memory");
    assert_eq!(run.stdout, String::from_utf8_lossy(&lib));
}

#[test]
fn bad_files_are_skipped_and_the_others_printed() {
    let dir = tempdir();
    write(dir.path(), "out/a/first.kmir", lockapi_bytes());
    write(dir.path(), "out/b/broken.kmir", b"not a dump");
    write(dir.path(), "out/c/last.kmir", graph_bytes());
    let run = kanalyze(dir.path(), &["dump", "out", "gone.kmir"]);
    run.assert_no_panic();
    assert_eq!(run.code, Some(2), "bad inputs are an error");
    let headers: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("// crate `"))
        .collect();
    assert_eq!(
        headers,
        [
            "// crate `lockapi` from out/a/first.kmir",
            "// crate `graph` from out/c/last.kmir"
        ]
    );
    assert!(run.stdout.contains("fn lockapi::SpinLock::<u32>::lock("));
    assert!(run.stdout.contains("fn graph::is_even(_1: u32) -> bool {"));
    insta::assert_snapshot!(run.report());
}

#[test]
fn directories_are_searched_recursively_in_sorted_order() {
    let dir = tempdir();
    for (name, bytes) in [
        ("out/z.kmir", lockapi_bytes()),
        ("out/b/deep/y.kmir", graph_bytes()),
        ("out/a.kmir", graph_bytes()),
        ("out/b/x.kmir", lockapi_bytes()),
    ] {
        write(dir.path(), name, bytes);
    }
    let run = kanalyze(dir.path(), &["dump", "out", "--no-bodies"]);
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    let sources: Vec<&str> = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("// crate `"))
        .collect();
    assert_eq!(
        sources,
        [
            "graph` from out/a.kmir",
            "graph` from out/b/deep/y.kmir",
            "lockapi` from out/b/x.kmir",
            "lockapi` from out/z.kmir"
        ]
    );
}

#[test]
fn no_bodies_keeps_signatures_and_locals() {
    let dir = tempdir();
    write(dir.path(), "graph.kmir", graph_bytes());
    let run = kanalyze(dir.path(), &["dump", "--no-bodies", "graph.kmir"]);
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    assert!(run.stdout.contains("fn graph::is_even(_1: u32) -> bool {"));
    assert!(run.stdout.contains("let mut _6: (u32, bool);"));
    assert!(run.stdout.contains("let _1: u32;"));
    assert!(!run.stdout.contains("bb0"));
    assert_eq!(
        fn_lines(&run.stdout).len(),
        decoded(graph_bytes()).instances.len()
    );
}

#[test]
fn item_selects_instances_by_name_path_or_symbol() {
    let dir = tempdir();
    write(dir.path(), "graph.kmir", graph_bytes());
    write(dir.path(), "lockapi.kmir", lockapi_bytes());
    let graph = decoded(graph_bytes());
    let is_even = graph.instance_named("graph::is_even").symbol.as_str();
    for needle in ["is_even", "graph::is_ev", is_even] {
        let run = kanalyze(dir.path(), &["dump", "graph.kmir", "--item", needle]);
        assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
        assert_eq!(
            fn_lines(&run.stdout),
            ["fn graph::is_even(_1: u32) -> bool {"],
            "--item {needle}"
        );
        let count = format!(
            "// --item `{needle}`: 1 of {} instances",
            graph.instances.len()
        );
        assert!(run.stdout.contains(&count), "{}", run.stdout);
    }
    // Generic arguments may be left out.
    let run = kanalyze(
        dir.path(),
        &["dump", "lockapi.kmir", "--item", "SpinLock::lock"],
    );
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    assert_eq!(
        fn_lines(&run.stdout),
        [
            "fn lockapi::SpinLock::<u32>::lock(_1: &lockapi::SpinLock<u32>) -> lockapi::Guard<'_, u32> {"
        ]
    );
    // Matching on the item path: drop glue is named after the `std`
    // re-export but its item is `core::ptr::drop_glue`.
    let run = kanalyze(
        dir.path(),
        &["dump", "lockapi.kmir", "--item", "core::ptr::drop_glue"],
    );
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    assert_eq!(
        fn_lines(&run.stdout),
        [
            "fn std::ptr::drop_glue::<lockapi::Guard<'_, u32>>(_1: &mut lockapi::Guard<'_, u32>) -> () {",
            "fn std::ptr::drop_glue::<std::option::Option<lockapi::Guard<'_, u32>>>(_1: &mut core::option::Option<lockapi::Guard<'_, u32>>) -> () {",
        ]
    );
    // Several dumps at once: only those with a match are printed.
    let run = kanalyze(
        dir.path(),
        &[
            "dump",
            "graph.kmir",
            "lockapi.kmir",
            "--item",
            "as lockapi::Device>::probe",
        ],
    );
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    assert!(!run.stdout.contains("// crate `graph`"), "{}", run.stdout);
    assert_eq!(
        fn_lines(&run.stdout),
        [
            "fn <lockapi::Nvme as lockapi::Device>::probe(_1: &lockapi::Nvme) -> u32 {",
            "fn <lockapi::Ahci as lockapi::Device>::probe(_1: &lockapi::Ahci) -> u32 {",
        ]
    );
}

#[test]
fn item_without_match_suggests_close_names() {
    let dir = tempdir();
    write(dir.path(), "lockapi.kmir", lockapi_bytes());
    let run = kanalyze(dir.path(), &["dump", "lockapi.kmir", "--item", "spinlokc"]);
    run.assert_no_panic();
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("            lockapi::SpinLock::<u32>::lock\n"),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!(run.report());
}

#[test]
fn item_without_any_close_name() {
    let dir = tempdir();
    write(dir.path(), "lockapi.kmir", lockapi_bytes());
    let run = kanalyze(dir.path(), &["dump", "lockapi.kmir", "--item", "qqqqqqqq"]);
    run.assert_no_panic();
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!(run.report());
}

#[test]
fn closed_stdout_ends_quietly() {
    let dir = tempdir();
    write(dir.path(), "lockapi.kmir", lockapi_bytes());
    // The same dump named many times: far more output than a pipe holds.
    let args: Vec<&str> = std::iter::once("dump")
        .chain(std::iter::repeat_n("lockapi.kmir", 200))
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        .args(&args)
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
    assert!(first.starts_with(b"// crate `lockapi`"));
}
