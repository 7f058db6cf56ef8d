//! `build_error` over objects compiled by the real compiler from
//! `fixtures/build_error/`: stable rustc and the pinned nightly at
//! `-O -Cdebuginfo=2`, without debug info, as an rlib, and broken copies.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use build_error::render::{Sources, render, summary_line};
use build_error::{Explanation, Scan, scan};
use tempfile::TempDir;
use test_harness::objects::{Built, Compiler, build, build_with};
use test_harness::{line_of, repo_root};

struct Fixture {
    dir: TempDir,
    built: Built,
}

/// Each build once per test binary.
fn fixture(compiler: Compiler, debuginfo: &'static str) -> &'static Fixture {
    static STABLE: OnceLock<Fixture> = OnceLock::new();
    static NIGHTLY: OnceLock<Fixture> = OnceLock::new();
    static NO_DEBUG: OnceLock<Fixture> = OnceLock::new();
    let cell = match (compiler, debuginfo) {
        (Compiler::Stable, "0") => &NO_DEBUG,
        (Compiler::Stable, _) => &STABLE,
        (Compiler::Nightly, _) => &NIGHTLY,
    };
    cell.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let built = build(compiler, debuginfo, dir.path());
        Fixture { dir, built }
    })
}

const REGS: &str = "build_error/regs.rs";

/// Everything the command prints on stdout, as text.
fn text(scan: &Scan) -> String {
    let mut sources = Sources::new(vec![repo_root()]);
    let mut out = String::new();
    for r in &scan.references {
        out.push_str(&render(r, &mut sources));
        out.push('\n');
    }
    out.push_str(&summary_line(scan));
    out
}

/// Replaces what changes between runs and machines: the temporary
/// directory, the hashes in legacy symbol names and the standard
/// library's source path, and code offsets.
fn normalise(text: &str, dir: &Path) -> String {
    let text = text.replace(&dir.display().to_string(), "[OUT]");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    loop {
        let next = [
            rest.find("17h").map(|i| (i, 0)),
            rest.find("/rustc/").map(|i| (i, 1)),
            rest.find("offset 0x").map(|i| (i, 2)),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some((at, what)) = next else {
            out.push_str(rest);
            return out;
        };
        let (prefix, len, replacement) = match what {
            0 => ("17h", 16, "17h[HASH]"),
            1 => ("/rustc/", 40, "/rustc/[HASH]"),
            _ => ("offset 0x", 0, "offset [OFFSET]"),
        };
        out.push_str(&rest[..at]);
        let after = &rest[at + prefix.len()..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        // A legacy hash is followed by `E`, itself a hex digit.
        let take = if len == 0 { hex } else { len };
        if hex > 0 && hex >= take {
            out.push_str(replacement);
            rest = &after[take..];
        } else {
            out.push_str(prefix);
            rest = after;
        }
    }
}

/// The functions the references are in, in order.
fn functions(scan: &Scan) -> Vec<&str> {
    scan.references
        .iter()
        .map(|r| r.function().unwrap_or("?"))
        .collect()
}

#[test]
fn stable_bad_is_reported_at_the_assertion_and_good_is_not() {
    let f = fixture(Compiler::Stable, "2");
    let scan = scan(std::slice::from_ref(&f.built.object));
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    assert_eq!(scan.objects, 1);
    let mut names = functions(&scan);
    names.sort();
    assert_eq!(names, ["bad", "regs::bad_closure", "regs::bad_generic"]);

    let assertion = line_of(REGS, "build_assert!(off < 0x100)");
    let bad = scan
        .references
        .iter()
        .find(|r| r.function() == Some("bad"))
        .expect("a reference in `bad`");
    let Explanation::Frames(frames) = &bad.explanation else {
        panic!("no frames: {:?}", bad.explanation);
    };
    let lines: Vec<(Option<&str>, u32)> = frames
        .iter()
        .map(|f| {
            (
                f.function.as_deref(),
                f.location.as_ref().map_or(0, |l| l.line),
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            (Some("regs::check_offset"), assertion),
            (
                Some("regs::Regs::read_at"),
                line_of(REGS, "check_offset(off);")
            ),
            (Some("bad"), line_of(REGS, "r.read_at(i * 4)")),
        ]
    );

    let text = text(&scan);
    assert!(!text.contains("`good"), "{text}");
    insta::assert_snapshot!("stable", normalise(&text, f.dir.path()));
}

#[test]
fn nightly_gives_the_same_chains() {
    let f = fixture(Compiler::Nightly, "2");
    let scan = scan(std::slice::from_ref(&f.built.object));
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    let mut names = functions(&scan);
    names.sort();
    assert_eq!(names, ["bad", "regs::bad_closure", "regs::bad_generic"]);
    let assertion = line_of(REGS, "build_assert!(off < 0x100)");
    for r in &scan.references {
        assert_eq!(r.assertion().map(|l| l.line), Some(assertion), "{r:?}");
    }
    let generic = scan
        .references
        .iter()
        .find(|r| r.function() == Some("regs::bad_generic"))
        .expect("the generic instance");
    let Explanation::Frames(frames) = &generic.explanation else {
        panic!("no frames: {:?}", generic.explanation);
    };
    let chain: Vec<&str> = frames
        .iter()
        .filter_map(|f| f.function.as_deref())
        .collect();
    // The nightly mangles with v0, whose names carry generic arguments.
    assert_eq!(
        chain,
        [
            "regs::check_offset",
            "<regs::Regs>::read_at",
            "<regs::Regs>::read_n::<128>",
            "regs::bad_generic"
        ]
    );
    assert!(!text(&scan).contains("`good"));
}

#[test]
fn without_debug_info_the_function_symbol_is_named() {
    let f = fixture(Compiler::Stable, "0");
    let scan = scan(std::slice::from_ref(&f.built.object));
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    assert!(
        scan.references
            .iter()
            .all(|r| r.explanation == Explanation::NoDebugInfo)
    );
    let mut names = functions(&scan);
    names.sort();
    assert_eq!(names, ["bad", "regs::bad_closure", "regs::bad_generic"]);
    insta::assert_snapshot!("no_debug_info", normalise(&text(&scan), f.dir.path()));
}

#[test]
fn archives_and_directories_are_read_member_by_member() {
    let f = fixture(Compiler::Stable, "2");
    // The rlib alone: one object member, the metadata skipped.
    let scan_rlib = scan(std::slice::from_ref(&f.built.rlib));
    assert!(scan_rlib.errors.is_empty(), "{:?}", scan_rlib.errors);
    assert_eq!(
        (scan_rlib.objects, scan_rlib.members, scan_rlib.archives),
        (1, 1, 1)
    );
    assert_eq!(scan_rlib.references.len(), 3);
    let rlib = f.built.rlib.display().to_string();
    let member = &scan_rlib.references[0].object;
    assert!(
        member.starts_with(&format!("{rlib}(")) && member.ends_with(".rcgu.o)"),
        "{member}"
    );
    assert!(
        scan_rlib
            .skipped
            .iter()
            .any(|(n, _)| n.ends_with("(lib.rmeta)"))
    );

    // The directory: regs.o, libregs.rlib and libbuild_error.rlib (which
    // defines the symbol and so reports nothing). The rlib's member is the
    // same code as regs.o: each reference is reported once, at the first
    // object by name, naming the other (as a kbuild tree's `vmlinux.o` or
    // a module's composite object would be).
    let all = scan(&[f.dir.path().to_path_buf()]);
    assert!(all.errors.is_empty(), "{:?}", all.errors);
    assert_eq!((all.objects, all.members, all.archives), (3, 2, 2));
    assert_eq!(all.references.len(), 3);
    for r in &all.references {
        assert!(r.object.starts_with(&format!("{rlib}(")), "{r:?}");
        assert_eq!(r.also_in, [f.built.object.display().to_string()], "{r:?}");
    }
    assert!(
        summary_line(&all)
            .starts_with("kanalyze: 3 errors; read 3 objects (2 archive members of 2 archives)")
    );

    // The order of the paths does not matter.
    let reversed = scan(&[
        f.built.rlib.clone(),
        f.built.object.clone(),
        f.built.build_error.clone(),
    ]);
    let forward = scan(&[
        f.built.build_error.clone(),
        f.built.object.clone(),
        f.built.rlib.clone(),
    ]);
    assert_eq!(reversed.references, forward.references);
}

/// kbuild's `built-in.a` is a thin archive: named, its members are read
/// from disk; found in a directory, it is skipped, since the search finds
/// its members anyway.
#[test]
fn thin_archives_are_read_when_named_and_skipped_when_searched() {
    let f = fixture(Compiler::Stable, "2");
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::copy(&f.built.object, dir.path().join("regs.o")).expect("copy");
    let status = std::process::Command::new("ar")
        .current_dir(dir.path())
        .args(["rcT", "built-in.a", "regs.o"])
        .status()
        .expect("run ar");
    assert!(status.success());
    let thin = dir.path().join("built-in.a");
    let named = scan(std::slice::from_ref(&thin));
    assert!(named.errors.is_empty(), "{:?}", named.errors);
    assert_eq!(
        (named.objects, named.members, named.references.len()),
        (1, 1, 3)
    );
    let searched = scan(&[dir.path().to_path_buf()]);
    assert!(searched.errors.is_empty(), "{:?}", searched.errors);
    assert_eq!(
        (
            searched.objects,
            searched.members,
            searched.references.len()
        ),
        (1, 0, 3)
    );
    assert_eq!(searched.skipped.len(), 1);
}

/// DWARF 5 (`CONFIG_DEBUG_INFO_DWARF5`) puts addresses in `.debug_addr`
/// and ranges in `.debug_rnglists`, relocated like the rest.
#[test]
fn dwarf5_gives_the_same_chain() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let built = build_with(Compiler::Stable, "2", &["-Cdwarf-version=5"], dir.path());
    let v5 = scan(std::slice::from_ref(&built.object));
    let v4 = scan(std::slice::from_ref(
        &fixture(Compiler::Stable, "2").built.object,
    ));
    let explanations = |s: &Scan| -> Vec<Explanation> {
        s.references.iter().map(|r| r.explanation.clone()).collect()
    };
    assert_eq!(v5.references.len(), 3);
    assert_eq!(explanations(&v5), explanations(&v4));
}

/// A corrupt and a truncated copy of the object: each an error naming the
/// file, and the good object beside them is still read.
#[test]
fn broken_objects_are_errors_naming_the_file() {
    let f = fixture(Compiler::Stable, "2");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bytes = std::fs::read(&f.built.object).expect("regs.o");
    let truncated = dir.path().join("truncated.o");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).expect("write");
    let corrupt = dir.path().join("corrupt.o");
    let mut garbage = b"\x7fELF\x02\x01\x01".to_vec();
    garbage.extend((0..200u8).map(|i| i.wrapping_mul(37)));
    std::fs::write(&corrupt, &garbage).expect("write");
    let empty = dir.path().join("empty.o");
    std::fs::write(&empty, b"").expect("write");
    // A corrupt archive member.
    let archive = dir.path().join("broken.a");
    let mut ar = b"!<arch>\n".to_vec();
    ar.extend(
        format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            "x.o/", 0, 0, 0, 644, 4
        )
        .bytes(),
    );
    ar.extend(b"\x7fELF");
    std::fs::write(&archive, &ar).expect("write");

    let paths: Vec<PathBuf> = vec![
        truncated.clone(),
        corrupt.clone(),
        empty.clone(),
        archive.clone(),
        f.built.object.clone(),
    ];
    let scan = scan(&paths);
    let named: Vec<&str> = scan.errors.iter().map(|e| e.name.as_str()).collect();
    let shown = |p: &Path| p.display().to_string();
    assert_eq!(
        named,
        [
            format!("{}(x.o)", shown(&archive)),
            shown(&corrupt),
            shown(&empty),
            shown(&truncated),
        ],
        "{:?}",
        scan.errors
    );
    for e in &scan.errors {
        assert!(e.message.contains("not a readable object file"), "{e:?}");
    }
    assert_eq!(scan.references.len(), 3, "the good object is still read");
    assert!(summary_line(&scan).ends_with(", 4 inputs unreadable"));
}

/// A relocation section moved past the end of the file: `object` would
/// skip it silently, and with it the reference in `bad`.
#[test]
fn a_relocation_section_outside_the_file_is_an_error() {
    let f = fixture(Compiler::Stable, "2");
    let mut bytes = std::fs::read(&f.built.object).expect("regs.o");
    let index = {
        use object::{Object, ObjectSection};
        let file = object::File::parse(bytes.as_slice()).expect("regs.o parses");
        file.section_by_name(".rela.text.bad")
            .expect("the relocations of `bad`")
            .index()
            .0
    };
    // ELF64: e_shoff at 0x28, e_shentsize at 0x3a; sh_offset at 0x18 of a
    // section header.
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let shoff = word(0x28) as usize;
    let shentsize = u16::from_le_bytes([bytes[0x3a], bytes[0x3b]]) as usize;
    let at = shoff + index * shentsize + 0x18;
    bytes[at..at + 8].copy_from_slice(&0xFFFF_FF00u64.to_le_bytes());
    let dir = tempfile::tempdir().expect("a temporary directory");
    let moved = dir.path().join("moved.o");
    std::fs::write(&moved, &bytes).expect("write");
    let scan = scan(std::slice::from_ref(&moved));
    assert_eq!(scan.errors.len(), 1, "{:?}", scan.references);
    assert_eq!(scan.errors[0].name, moved.display().to_string());
    assert!(
        scan.errors[0].message.contains("`.rela.text.bad`"),
        "{:?}",
        scan.errors[0]
    );
}

#[test]
fn json_names_the_chain() {
    let f = fixture(Compiler::Stable, "2");
    let scan = scan(std::slice::from_ref(&f.built.object));
    let sources = Sources::new(vec![repo_root()]);
    let doc =
        serde_json::to_value(build_error::json::document(&scan, &[], &sources)).expect("json");
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["summary"]["objects"], 1);
    assert_eq!(doc["summary"]["errors"], 3);
    let bad = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["function"] == "bad")
        .expect("bad");
    assert_eq!(bad["kind"], "build-error-reference");
    assert_eq!(bad["debug_info"], "frames");
    assert_eq!(bad["span"]["file"], "fixtures/build_error/regs.rs");
    let frames: Vec<(&str, bool)> = bad["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| (f["function"].as_str().unwrap_or("?"), f["inlined"] == true))
        .collect();
    assert_eq!(
        frames,
        [
            ("regs::check_offset", true),
            ("regs::Regs::read_at", true),
            ("bad", false)
        ]
    );
    assert!(bad["id"].as_str().is_some_and(|id| id.starts_with("KA")));
}

/// A thin archive's member is read from disk: a FIFO there is skipped
/// (reading it would block forever), not read.
#[cfg(unix)]
#[test]
fn a_thin_archive_member_that_is_a_fifo_is_skipped() {
    let f = fixture(Compiler::Stable, "2");
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::copy(&f.built.object, dir.path().join("regs.o")).expect("copy");
    std::fs::write(dir.path().join("pipe.o"), b"placeholder").expect("write");
    let status = std::process::Command::new("ar")
        .current_dir(dir.path())
        .args(["rcT", "built-in.a", "regs.o", "pipe.o"])
        .status()
        .expect("run ar");
    assert!(status.success());
    let pipe = dir.path().join("pipe.o");
    std::fs::remove_file(&pipe).expect("remove");
    let c = std::ffi::CString::new(pipe.to_str().expect("a UTF-8 path")).expect("a path");
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let thin = dir.path().join("built-in.a");
    let named = scan(std::slice::from_ref(&thin));
    assert!(named.errors.is_empty(), "{:?}", named.errors);
    assert_eq!((named.objects, named.references.len()), (1, 3));
    assert_eq!(named.skipped.len(), 1, "{:?}", named.skipped);
    assert!(named.skipped[0].0.ends_with("built-in.a(pipe.o)"));
    assert!(named.skipped[0].1.starts_with("not a regular file"));
}
