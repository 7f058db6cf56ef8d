//! The summary cache (docs/output.md, "Incremental re-runs"): after an edit
//! to a leaf, a middle and a core crate, a run that recalls what did not
//! change prints, to the byte, what a run without the cache prints; what
//! the cache's key covers is proven by runs that must recall nothing; a
//! corrupt, foreign or unwritable cache costs a warning, never a result.
//! The same holds of the per-dump cache (a dump's body index and the
//! per-body results of the phases that walk every body, under the hash of
//! its bytes): its entries are recalled for the dumps that did not change,
//! and a bad or foreign entry, or one of another build, is not used.

use std::path::{Path, PathBuf};

mod common;

use test_harness::{CrateSpec, Extracted, extract};

/// The three-crate program, each crate from `fixtures/cache/` or, when
/// named in `edited`, from `fixtures/cache/edited/`.
fn program(edited: &[&str]) -> Extracted {
    let src = |name: &str| {
        if edited.contains(&name) {
            format!("cache/edited/{name}.rs")
        } else {
            format!("cache/{name}.rs")
        }
    };
    extract(&[
        CrateSpec::lib(&src("kcore")),
        CrateSpec::lib(&src("kmiddle")).with_extern("kcore"),
        CrateSpec::lib(&src("kleaf"))
            .with_extern("kcore")
            .with_extern("kmiddle"),
    ])
}

/// A directory the runs read their dumps from (`kmir/`), re-extracted in
/// place as a build would, with its own cache directory.
struct Work {
    dir: tempfile::TempDir,
    cache: PathBuf,
}

impl Work {
    fn new() -> Work {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = dir.path().join("cache");
        std::fs::create_dir(dir.path().join("kmir")).expect("kmir dir");
        // The fixtures model kernel code (as `test_harness::extract` says).
        std::fs::write(dir.path().join("kanalyze.toml"), "profile = \"kernel\"\n")
            .expect("kanalyze.toml");
        Work { dir, cache }
    }

    /// Replaces the dumps with `program`'s.
    fn install(&self, program: &Extracted) {
        let kmir = self.dir.path().join("kmir");
        for e in std::fs::read_dir(&kmir).expect("kmir dir").flatten() {
            std::fs::remove_file(e.path()).expect("remove a dump");
        }
        for p in program.dump_paths() {
            std::fs::copy(&p, kmir.join(p.file_name().expect("a file name"))).expect("copy a dump");
        }
    }

    fn pack(&self) -> PathBuf {
        let packs: Vec<PathBuf> = std::fs::read_dir(&self.cache)
            .expect("the cache directory exists")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "kcache"))
            .collect();
        assert_eq!(packs.len(), 1, "{packs:?}");
        packs[0].clone()
    }

    /// `kanalyze check kmir --format FORMAT EXTRA…` with the cache: the
    /// run, and (recalled, all) components from `--timings`.
    fn cached(&self, format: &str, extra: &[&str]) -> (Out, (usize, usize)) {
        let cache = self.cache.to_str().expect("utf-8");
        let mut args = vec!["check", "kmir", "--format", format, "--timings"];
        args.extend(["--cache-dir", cache]);
        args.extend(extra);
        let (run, raw) = run_raw(self.dir.path(), &args);
        let line = raw
            .lines()
            .find(|l| l.trim_start().starts_with("cache:"))
            .unwrap_or_else(|| panic!("no cache line in --timings:\n{raw}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        let recalled = words[1].parse().expect("recalled count");
        let all = words[3].parse().expect("component count");
        (run, (recalled, all))
    }

    /// [`Work::cached`], and (recalled, all) dumps of the per-dump cache
    /// from `--timings`.
    fn cached_dumps(&self, format: &str, extra: &[&str]) -> (Out, (usize, usize)) {
        let cache = self.cache.to_str().expect("utf-8");
        let mut args = vec!["check", "kmir", "--format", format, "--timings"];
        args.extend(["--cache-dir", cache]);
        args.extend(extra);
        let (run, raw) = run_raw(self.dir.path(), &args);
        (run, dump_counts(&raw))
    }

    /// The per-dump cache's entries.
    fn dump_entries(&self) -> Vec<PathBuf> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(self.cache.join("dumps"))
            .expect("the per-dump cache directory exists")
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        entries
    }

    /// The same run without the cache.
    fn cold(&self, format: &str, extra: &[&str]) -> Out {
        let mut args = vec!["check", "kmir", "--format", format, "--no-cache"];
        args.extend(extra);
        run(self.dir.path(), &args)
    }
}

/// (recalled, all) dumps from the per-dump cache's `--timings` line.
fn dump_counts(stderr: &str) -> (usize, usize) {
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with("per-dump cache:"))
        .unwrap_or_else(|| panic!("no per-dump cache line in --timings:\n{stderr}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let recalled = words[2].parse().expect("recalled count");
    let all = words[4].parse().expect("dump count");
    (recalled, all)
}

/// Exit status, stdout and stderr without `--timings`' lines.
#[derive(Debug, PartialEq, Eq)]
struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(dir: &Path, args: &[&str]) -> Out {
    run_raw(dir, args).0
}

/// [`run`], and the whole stderr.
fn run_raw(dir: &Path, args: &[&str]) -> (Out, String) {
    let r = common::kanalyze(dir, args);
    r.assert_no_panic();
    let timing = |l: &&str| l.starts_with("timings") || l.starts_with("  ");
    let out = Out {
        code: r.code,
        stdout: r.stdout,
        stderr: r
            .stderr
            .lines()
            .filter(|l| !timing(l))
            .map(|l| format!("{l}\n"))
            .collect(),
    };
    (out, r.stderr)
}

#[test]
fn warm_runs_print_what_cold_runs_print_after_each_edit() {
    let work = Work::new();
    let original = program(&[]);
    work.install(&original);
    let formats = ["text", "json"];
    let before: Vec<Out> = formats.iter().map(|f| work.cold(f, &[])).collect();
    assert_eq!(before[0].code, Some(1), "{:?}", before[0]);
    for (f, cold) in formats.iter().zip(&before) {
        let (first, (recalled, all)) = work.cached(f, &[]);
        assert_eq!(&first, cold, "{f}: the run that fills the cache");
        assert!(all > 0);
        let (again, counts) = work.cached(f, &[]);
        assert_eq!(&again, cold, "{f}: nothing changed");
        assert_eq!(counts, (all, all), "{f}: nothing changed, all recalled");
        let _ = recalled;
    }
    // Each edit, then back to the original: every step starts from the
    // previous step's cache.
    for edited in [&["kleaf"][..], &["kmiddle"], &["kcore"], &[]] {
        let changed = program(edited);
        work.install(&changed);
        for (f, before) in formats.iter().zip(&before) {
            let cold = work.cold(f, &[]);
            if !edited.is_empty() {
                assert_ne!(
                    cold.stdout, before.stdout,
                    "{f}: the edit of {edited:?} changes the findings, so stale summaries would show"
                );
            }
            let (warm, (recalled, all)) = work.cached(f, &[]);
            assert_eq!(warm, cold, "{f}: warm run after editing {edited:?}");
            if f == &"text" {
                // The first format's run after the change re-analyses what
                // changed and nothing else.
                assert!(recalled < all, "{edited:?}: {recalled} of {all}");
                if edited == ["kleaf"] || edited == ["kmiddle"] {
                    assert!(
                        recalled > 0,
                        "{edited:?}: the core's own functions are recalled"
                    );
                }
            } else {
                assert_eq!(recalled, all, "{f}: the same dumps as the text run");
            }
        }
    }
}

#[test]
fn the_per_dump_cache_recalls_the_dumps_that_did_not_change() {
    let work = Work::new();
    work.install(&program(&[]));
    let (first, counts) = work.cached_dumps("json", &[]);
    assert_eq!(counts, (0, 3), "an empty cache");
    assert_eq!(first, work.cold("json", &[]));
    assert_eq!(work.dump_entries().len(), 3, "one entry per dump");
    let (again, counts) = work.cached_dumps("json", &[]);
    assert_eq!(counts, (3, 3), "nothing changed");
    assert_eq!(again, first);
    // An edit of one crate: the entries of the dumps whose bytes did not
    // change serve (a crate built on the edited one is a new dump too),
    // and the output is the cold run's (a leaf, a middle and a core crate).
    let dumps = |p: &Extracted| -> Vec<Vec<u8>> {
        let mut d: Vec<Vec<u8>> = p
            .dump_paths()
            .iter()
            .map(|p| std::fs::read(p).expect("a dump"))
            .collect();
        d.sort();
        d
    };
    let original = dumps(&program(&[]));
    for edited in ["kleaf", "kmiddle", "kcore"] {
        let changed = program(&[edited]);
        let same = dumps(&changed)
            .iter()
            .filter(|d| original.contains(d))
            .count();
        if edited != "kcore" {
            assert_eq!(same, 2, "{edited}: only its own dump changes");
        }
        work.install(&changed);
        let (warm, counts) = work.cached_dumps("json", &[]);
        assert_eq!(counts, (same, 3), "{edited} edited");
        assert_eq!(warm, work.cold("json", &[]), "{edited} edited");
        // And the text output, from the same entries.
        let (warm, counts) = work.cached_dumps("text", &[]);
        assert_eq!(counts, (3, 3), "{edited} edited, text");
        assert_eq!(warm, work.cold("text", &[]), "{edited} edited, text");
        work.install(&program(&[]));
        let (back, counts) = work.cached_dumps("json", &[]);
        assert_eq!(counts, (3, 3), "back from {edited}: every entry is kept");
        assert_eq!(back, first, "back from {edited}");
    }
    // The settings the per-body results depend on are in their labels:
    // invariants declared on the core's field, over the same entries, then
    // others on the same field.
    let invariants = work.dir.path().join("inv.toml");
    let declare = |stored_by: &str| {
        std::fs::write(
            &invariants,
            format!(
                "[[empty_when_stored]]\ntype = \"kcore::State\"\nfield = \"pending\"\n{stored_by}because = \"test\"\n\n[[empty_at_teardown]]\ntype = \"kcore::State\"\nfield = \"pending\"\nemptied_by = []\nbecause = \"test\"\n"
            ),
        )
        .expect("invariants")
    };
    let with = ["--invariants", "inv.toml", "--allow-partial"];
    for stored_by in ["stored_by = [\"kcore::arm\"]\n", ""] {
        declare(stored_by);
        let cold = work.cold("json", &with);
        assert!(
            cold.stdout.contains("empty_when_stored"),
            "{stored_by}: the invariants apply: {cold:?}"
        );
        let (warm, counts) = work.cached_dumps("json", &with);
        assert_eq!(counts, (3, 3), "{stored_by}");
        assert_eq!(warm, cold, "{stored_by}: with invariants");
        let (warm, _) = work.cached_dumps("json", &with);
        assert_eq!(warm, cold, "{stored_by}: with invariants, again");
    }
}

#[test]
fn a_bad_per_dump_entry_is_ignored_with_a_warning() {
    let work = Work::new();
    work.install(&program(&[]));
    let cold = work.cold("json", &[]);
    work.cached_dumps("json", &[]);
    let entries = work.dump_entries();
    assert_eq!(entries.len(), 3);
    let good = std::fs::read(&entries[0]).expect("an entry");
    let other = std::fs::read(&entries[1]).expect("another entry");
    let mut flipped = good.clone();
    let middle = good.len() / 2;
    flipped[middle] ^= 0x10;
    let mut other_format = good.clone();
    other_format[16] ^= 0x01;
    for (what, bytes, says) in [
        (
            "foreign",
            b"GIF89a, not a cache".to_vec(),
            "not a kanalyze per-dump cache entry",
        ),
        ("empty", Vec::new(), "not a kanalyze per-dump cache entry"),
        ("corrupt", flipped, "checksum does not match"),
        ("truncated", good[..good.len() - 3].to_vec(), "truncated"),
        ("another format", other_format, "per-dump cache format"),
        ("another dump's", other.clone(), "the entry of another dump"),
    ] {
        std::fs::write(&entries[0], &bytes).expect("write the entry");
        let (run, counts) = work.cached_dumps("json", &[]);
        assert_eq!(counts, (2, 3), "{what}");
        assert_eq!(run.stdout, cold.stdout, "{what}");
        assert_eq!(run.code, cold.code, "{what}");
        let warning = run
            .stderr
            .lines()
            .find(|l| l.contains("ignoring the per-dump cache entry"))
            .unwrap_or_else(|| panic!("{what}: no warning:\n{}", run.stderr));
        assert!(warning.starts_with("warning: "), "{warning}");
        assert!(warning.contains(says), "{what}: {warning}");
        // The run wrote a good entry back.
        let (run, counts) = work.cached_dumps("json", &[]);
        assert_eq!(counts, (3, 3), "{what}: rewritten");
        assert_eq!(run, cold, "{what}: rewritten");
        assert_eq!(std::fs::read(&entries[0]).expect("the entry"), good);
    }
}

#[test]
fn another_build_recalls_no_per_dump_entry() {
    let work = Work::new();
    work.install(&program(&[]));
    let cold = work.cold("json", &[]);
    work.cached_dumps("json", &[]);
    // The same analyser with other bytes: another build.
    let other = work.dir.path().join("kanalyze-other");
    let mut exe = std::fs::read(env!("CARGO_BIN_EXE_kanalyze")).expect("the binary");
    exe.extend_from_slice(b"another build");
    std::fs::write(&other, &exe).expect("a copy");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755))
            .expect("executable");
    }
    let cache = work.cache.to_str().expect("utf-8");
    let out = std::process::Command::new(&other)
        .args(["check", "kmir", "--format", "json", "--timings"])
        .args(["--cache-dir", cache])
        .current_dir(work.dir.path())
        .output()
        .expect("the other build runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(dump_counts(&stderr), (0, 3), "{stderr}");
    assert!(!stderr.contains("ignoring"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), cold.stdout);
    // Its entries replaced this build's: this build recalls none either,
    // and says nothing.
    let (run, counts) = work.cached_dumps("json", &[]);
    assert_eq!(counts, (0, 3));
    assert_eq!(run, cold);
}

#[test]
fn settings_that_shape_summaries_are_in_the_key() {
    let work = Work::new();
    work.install(&program(&[]));
    let (_, (_, all)) = work.cached("json", &[]);
    assert_eq!(work.cached("json", &[]).1, (all, all));
    // A spec file that says the core's waiting never sleeps: nothing may
    // be recalled, and the result is the cold one with that spec.
    let spec = work.dir.path().join("quiet.toml");
    std::fs::write(&spec, "[fn]\nmsleep = { expect = \"0..\" }\n").expect("spec");
    let with_spec = ["--spec", "quiet.toml"];
    let (warm, counts) = work.cached("json", &with_spec);
    assert_eq!(counts, (0, all), "a new spec file");
    let cold = work.cold("json", &with_spec);
    assert_eq!(warm, cold);
    assert_ne!(
        cold.stdout,
        work.cold("json", &[]).stdout,
        "the spec matters"
    );
    assert_eq!(work.cached("json", &with_spec).1, (all, all));
    // The same file name with other contents.
    std::fs::write(
        &spec,
        "[fn]\nmsleep = { expect = \"0..\", note = \"edited\" }\n",
    )
    .expect("spec");
    assert_eq!(
        work.cached("json", &with_spec).1,
        (0, all),
        "an edited spec file"
    );
    // Another profile.
    let (warm, counts) = work.cached("json", &["--profile", "userspace"]);
    assert_eq!(counts, (0, all), "another profile");
    assert_eq!(warm, work.cold("json", &["--profile", "userspace"]));
}

#[test]
fn a_bad_cache_is_ignored_with_a_warning() {
    let work = Work::new();
    work.install(&program(&[]));
    let cold = work.cold("text", &[]);
    let (_, (_, all)) = work.cached("text", &[]);
    let pack = work.pack();
    let good = std::fs::read(&pack).expect("the pack");
    let mut flipped = good.clone();
    let middle = good.len() / 2;
    flipped[middle] ^= 0x10;
    let mut other_format = good.clone();
    other_format[16] ^= 0x01;
    for (what, bytes, says) in [
        (
            "foreign",
            b"GIF89a, not a cache".to_vec(),
            "not a kanalyze summary cache",
        ),
        ("empty", Vec::new(), "not a kanalyze summary cache"),
        ("corrupt", flipped, "checksum does not match"),
        ("truncated", good[..good.len() - 3].to_vec(), "truncated"),
        ("another format", other_format, "cache format"),
    ] {
        std::fs::write(&pack, &bytes).expect("write the pack");
        let (run, counts) = work.cached("text", &[]);
        assert_eq!(counts, (0, all), "{what}");
        assert_eq!(run.stdout, cold.stdout, "{what}");
        assert_eq!(run.code, cold.code, "{what}");
        let warning = run
            .stderr
            .lines()
            .find(|l| l.contains("ignoring the summary cache"))
            .unwrap_or_else(|| panic!("{what}: no warning:\n{}", run.stderr));
        assert!(warning.starts_with("warning: "), "{warning}");
        assert!(warning.contains(says), "{what}: {warning}");
        // The run wrote a good pack back.
        let (run, counts) = work.cached("text", &[]);
        assert_eq!(counts, (all, all), "{what}: rewritten");
        assert_eq!(run, cold, "{what}: rewritten");
    }
}

#[test]
fn no_cache_writes_nothing_and_an_unwritable_cache_only_warns() {
    let work = Work::new();
    work.install(&program(&[]));
    let cold = work.cold("json", &[]);
    assert!(!work.cache.exists(), "--no-cache wrote a cache");
    // The cache directory is a file: the run warns and its result stands.
    std::fs::write(&work.cache, b"a file").expect("write");
    let (run, (recalled, _)) = work.cached("json", &[]);
    assert_eq!(recalled, 0);
    assert_eq!(run.stdout, cold.stdout);
    assert!(
        run.stderr
            .contains("warning: the summary cache could not be written"),
        "{}",
        run.stderr
    );
    // The per-dump cache says so once, for its three entries, and reads
    // nothing.
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("per-dump"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with("warning: 3 per-dump cache entries could not be written"),
        "{}",
        run.stderr
    );
}

#[test]
fn concurrent_runs_leave_a_whole_cache() {
    let work = Work::new();
    work.install(&program(&[]));
    let cold = work.cold("json", &[]);
    let cache = work.cache.to_str().expect("utf-8");
    let runs: Vec<std::process::Child> = (0..4)
        .map(|_| {
            std::process::Command::new(env!("CARGO_BIN_EXE_kanalyze"))
                .args(["check", "kmir", "--format", "json", "--cache-dir", cache])
                .current_dir(work.dir.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("kanalyze starts")
        })
        .collect();
    for child in runs {
        let out = child.wait_with_output().expect("kanalyze runs");
        assert_eq!(out.status.code(), cold.code);
        assert_eq!(String::from_utf8_lossy(&out.stdout), cold.stdout);
        assert_eq!(String::from_utf8_lossy(&out.stderr), cold.stderr);
    }
    // One whole pack, no temporary file left, and it serves the next run;
    // one whole entry per dump.
    let names: Vec<String> = std::fs::read_dir(&work.cache)
        .expect("the cache directory")
        .flatten()
        .filter(|e| e.file_name() != "dumps")
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let entries = work.dump_entries();
    assert_eq!(entries.len(), 3, "{entries:?}");
    assert!(
        entries
            .iter()
            .all(|e| e.extension().is_some_and(|x| x == "kdump")),
        "{entries:?}"
    );
    let (run, (recalled, all)) = work.cached("json", &[]);
    assert_eq!(recalled, all);
    assert_eq!(run, cold);
    assert_eq!(work.cached_dumps("json", &[]).1, (3, 3));
}

/// `cache = false` and `cache-dir = "…"` in `kanalyze.toml`, and the flags
/// over them.
#[test]
fn the_configuration_file_places_or_turns_off_the_cache() {
    let work = Work::new();
    work.install(&program(&[]));
    let dir = work.dir.path();
    let toml = |extra: &str| {
        std::fs::write(
            dir.join("kanalyze.toml"),
            format!("profile = \"kernel\"\n{extra}"),
        )
        .expect("kanalyze.toml")
    };
    let packs = |d: &Path| -> usize {
        std::fs::read_dir(d)
            .map(|r| {
                r.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "kcache"))
                    .count()
            })
            .unwrap_or(0)
    };
    let cold = work.cold("json", &[]);
    // Relative to the file; created on demand.
    toml("cache-dir = \"here/cache\"\n");
    assert_eq!(run(dir, &["check", "kmir", "--format", "json"]), cold);
    assert_eq!(packs(&dir.join("here/cache")), 1);
    // `--no-cache` over the file's directory.
    std::fs::remove_dir_all(dir.join("here")).expect("remove");
    assert_eq!(
        run(dir, &["check", "kmir", "--format", "json", "--no-cache"]),
        cold
    );
    assert!(!dir.join("here").exists());
    // Off in the file; `--cache-dir` turns it on again.
    toml("cache = false\ncache-dir = \"here/cache\"\n");
    assert_eq!(run(dir, &["check", "kmir", "--format", "json"]), cold);
    assert!(!dir.join("here").exists());
    let elsewhere = dir.join("elsewhere");
    let flag = elsewhere.to_str().expect("utf-8");
    assert_eq!(
        run(
            dir,
            &["check", "kmir", "--format", "json", "--cache-dir", flag]
        ),
        cold
    );
    assert_eq!(packs(&elsewhere), 1);
    assert!(!dir.join("here").exists());
}
