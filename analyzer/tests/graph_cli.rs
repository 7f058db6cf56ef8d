//! `kanalyze graph` on dumps of fixture crates compiled through kextract.

use std::path::Path;

mod common;

use test_harness::{CrateSpec, Extracted, extract};

fn kanalyze(args: &[&str], dir: &Path) -> (i32, String, String) {
    common::kanalyze_redacted(dir, args)
}

fn graph_fixture() -> Extracted {
    extract(&[CrateSpec::lib("extract/graph.rs")])
}

#[test]
fn statistics() {
    let out = graph_fixture();
    let (code, stdout, stderr) = kanalyze(&["graph", "kmir"], out.dir.path());
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!(stdout);
}

#[test]
fn callers_and_callees() {
    let out = graph_fixture();
    let (code, stdout, stderr) = kanalyze(
        &["graph", "kmir", "--callees", "graph::dispatch"],
        out.dir.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("callees_dispatch", stdout);
    let (code, stdout, stderr) = kanalyze(
        &["graph", "kmir", "--callers", "graph::is_even"],
        out.dir.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("callers_is_even", stdout);
}

#[test]
fn dot_subgraph() {
    let out = graph_fixture();
    let (code, stdout, stderr) = kanalyze(
        &["graph", "kmir", "--dot", "graph::call_open", "--depth", "1"],
        out.dir.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!(stdout);
}

#[test]
fn ambiguous_and_missing_queries() {
    let out = graph_fixture();
    let (code, _, stderr) = kanalyze(&["graph", "kmir", "--callers", "handle"], out.dir.path());
    assert_eq!(code, 2);
    insta::assert_snapshot!("ambiguous_query", stderr);
    let (code, _, stderr) = kanalyze(
        &["graph", "kmir", "--callers", "no_such_function"],
        out.dir.path(),
    );
    assert_eq!(code, 2);
    insta::assert_snapshot!("missing_query", stderr);
}

#[test]
fn bad_crates_are_skipped_with_a_warning() {
    let out = extract(&[
        CrateSpec::lib("extract/twocrate_a.rs"),
        CrateSpec::lib("extract/twocrate_b.rs").with_extern("twocrate_a"),
    ]);
    let dir = out.dir.path();
    // A truncated dump, another format version, and something that is no dump.
    let a = out
        .dump_paths()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("twocrate_a"))
        .unwrap();
    let bytes = std::fs::read(&a).unwrap();
    std::fs::write(
        dir.join("kmir/truncated-0000000000000001.kmir"),
        &bytes[..bytes.len() / 2],
    )
    .unwrap();
    let mut other = bytes.clone();
    other[8..12].copy_from_slice(&99u32.to_le_bytes());
    std::fs::write(dir.join("kmir/future-0000000000000002.kmir"), other).unwrap();
    std::fs::write(dir.join("kmir/notes.kmir"), "just text").unwrap();
    // The same crate dumped twice with different contents.
    std::fs::create_dir_all(dir.join("kmir/stale")).unwrap();
    let mut dump = kmir::read_file(&a).unwrap();
    dump.instances.pop();
    let stale = dir.join("kmir/stale").join(a.file_name().unwrap());
    kmir::write_file(&dump, &stale).unwrap();
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();

    let (code, stdout, stderr) = kanalyze(&["graph", "kmir"], dir);
    assert_eq!(code, 0, "the good crates are still analysed: {stderr}");
    assert!(stdout.starts_with("crates:      2\n"), "{stdout}");
    // Stable across format bumps, and across checkouts: the dump holds the
    // source paths, so its length depends on where the repository lives.
    let stderr = stderr
        .replace(
            &format!("reads version {}", kmir::FORMAT_VERSION),
            "reads version [CURRENT]",
        )
        .replace(
            &format!(
                "announces {} bytes but the file has {}",
                bytes.len(),
                bytes.len() / 2
            ),
            "announces [LEN] bytes but the file has [LEN/2]",
        );
    insta::assert_snapshot!("skipped_inputs", stderr);
}

#[test]
fn nothing_usable_is_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("empty")).unwrap();
    let (code, _, stderr) = kanalyze(&["graph", "empty"], tmp.path());
    assert_eq!(code, 2);
    insta::assert_snapshot!("empty_dir", stderr);
    std::fs::write(tmp.path().join("empty/x.kmir"), "KANAKMIR").unwrap();
    let (code, _, stderr) = kanalyze(&["graph", "empty"], tmp.path());
    assert_eq!(code, 2);
    insta::assert_snapshot!("only_bad_dumps", stderr);
    let (code, _, stderr) = kanalyze(&["graph", "does/not/exist"], tmp.path());
    assert_eq!(code, 2);
    insta::assert_snapshot!("missing_path", stderr);
}

/// A name equal to one function's last path segment picks it: its closures
/// (`closures::go::{closure#0}`) and names that merely contain it
/// (`closures::going`) are not rivals.
#[test]
fn last_segment_picks_the_function_not_its_closures() {
    let out = extract(&[CrateSpec::lib("extract/closures.rs")]);
    let dir = out.dir.path();
    let (_, dump, _) = kanalyze(&["dump", "kmir", "--item", "go::{closure#0}"], dir);
    assert!(dump.contains("closures::go::{closure#0}"), "{dump}");
    let (code, stdout, stderr) = kanalyze(&["graph", "kmir", "--callees", "go"], dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("closures::go "), "{stdout}");
    let (code, stdout, stderr) = kanalyze(&["graph", "kmir", "--callers", "go"], dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("closures::going"), "{stdout}");
}

/// An unknown name gets the closest names, as `dump --item` gives them.
#[test]
fn unknown_names_get_similar_names() {
    let out = graph_fixture();
    let dir = out.dir.path();
    for flag in ["--callers", "--callees", "--dot"] {
        let (code, stdout, stderr) = kanalyze(&["graph", "kmir", flag, "is_evn"], dir);
        assert_eq!(code, 2, "{stdout}");
        insta::assert_snapshot!("unknown_name_similar", stderr);
    }
}

/// Thousands of identical copies (a build tree copied into itself) are one
/// warning with a count and a few examples, not one line each.
#[test]
fn identical_copies_are_counted() {
    let out = graph_fixture();
    let dir = out.dir.path();
    let dump = &out.dump_paths()[0];
    for i in 0..40 {
        let copy = dir.join(format!("copy{i:02}"));
        std::fs::create_dir_all(&copy).unwrap();
        std::fs::copy(dump, copy.join("graph.kmir")).unwrap();
    }
    let (code, _, stderr) = kanalyze(&["graph", "."], dir);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr.matches("warning:").count(), 1, "{stderr}");
    insta::assert_snapshot!("identical_copies", stderr);
}
