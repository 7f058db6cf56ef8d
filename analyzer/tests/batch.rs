//! The nightly batch: what a CI job over a build's dump directory must be
//! able to trust. Host crates are left out without a false alarm, a missing
//! crate is named and the result partial, the configuration files used are
//! named, entries that match nothing are warnings, the triage file is
//! written safely under concurrent runs and through links, nothing hangs on
//! a FIFO, and no message echoes a huge input whole.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use test_harness::{CrateSpec, Extracted, extract};

fn kanalyze(args: &[&str], dir: &Path) -> (i32, String, String) {
    common::kanalyze_redacted(dir, args)
}

fn demo() -> Extracted {
    extract(&[
        CrateSpec::lib("demo/klock.rs"),
        CrateSpec::lib("demo/demo_driver.rs").with_extern("klock"),
    ])
}

/// The dump of crate `name` in `dir/kmir`.
fn dump_of(dir: &Path, name: &str) -> PathBuf {
    std::fs::read_dir(dir.join("kmir"))
        .expect("the dump directory")
        .map(|e| e.expect("an entry").path())
        .find(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with(&format!("{name}-")))
        })
        .unwrap_or_else(|| panic!("no dump of `{name}`"))
}

/// Rewrites the header of the dump at `path` as another build would have
/// written it: built for `target` on a machine whose triple is `host`.
fn rebuild_for(path: &Path, target: &str, host: &str) {
    let mut dump = kmir::read_file(path).expect("a dump");
    dump.header.target = target.into();
    dump.header.host = host.into();
    kmir::write_file(&dump, path).expect("written");
}

/// `kanalyze ARGS` in `dir`, killed (and the test failed) if it does not
/// end within a minute: what a FIFO would do to a reader that blocks.
fn kanalyze_in_time(args: &[&str], dir: &Path) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        .args(args)
        .current_dir(dir)
        .env("XDG_CACHE_HOME", common::test_cache_home())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kanalyze runs");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().expect("waits").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kanalyze {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("a path");
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn a_missing_dump_is_named_and_the_result_is_partial() {
    let out = demo();
    let dir = out.dir.path();
    std::fs::remove_file(dump_of(dir, "klock")).expect("removed");
    let (code, stdout, stderr) = kanalyze(&["check", "kmir", "--no-cache"], dir);
    // The demo's error needs klock's bodies: without them the run must
    // not pass.
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(
        stderr
            .contains("warning: the dump of crate `klock` is missing: `demo_driver` depends on it"),
        "{stderr}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("kanalyze: partial result: 1 input could not be used: crate `klock` (its dump is missing: `demo_driver` depends on it;"),
        "{stdout}"
    );
    insta::assert_snapshot!("missing_dump", stderr);
    let (code, stdout, _) = kanalyze(&["check", "kmir", "--no-cache", "--format", "json"], dir);
    assert_eq!(code, 3);
    let v = json(&stdout);
    assert_eq!(v["summary"]["partial"], true);
    let missing = &v["summary"]["missing_crates"][0];
    assert_eq!(missing["crate"], "klock");
    assert_eq!(missing["needed_by"], serde_json::json!(["demo_driver"]));
    assert!(missing["functions_called"].as_u64().unwrap_or(0) > 0, "{v}");
    // Accepted as partial, the status follows the (incomplete) findings.
    let (code, _, _) = kanalyze(&["check", "kmir", "--no-cache", "--allow-partial"], dir);
    assert_eq!(code, 0);
}

#[test]
fn the_kernel_profile_is_kept_when_the_kernel_crate_is_missing() {
    let out = extract(&[
        CrateSpec::lib("batch/kernel.rs"),
        CrateSpec::lib("batch/kdriver.rs").with_extern("kernel"),
    ]);
    let dir = out.dir.path();
    // Built for a kernel target, as kbuild builds them; then the
    // `kernel` crate's dump is lost. No configuration says which program
    // this is: the profile is detected.
    std::fs::remove_file(dir.join("kanalyze.toml")).expect("removed");
    let host = kmir::read_file(&dump_of(dir, "kdriver"))
        .expect("a dump")
        .header
        .host
        .to_string();
    for name in ["kernel", "kdriver"] {
        rebuild_for(&dump_of(dir, name), "target-5637172677741850002", &host);
    }
    let (code, _, stderr) = kanalyze(&["check", "kmir", "--no-cache"], dir);
    assert_eq!(
        code, 1,
        "with its dump, the driver's sleep is found: {stderr}"
    );
    std::fs::remove_file(dump_of(dir, "kernel")).expect("removed");
    let (code, stdout, stderr) =
        kanalyze(&["check", "kmir", "--no-cache", "--format", "json"], dir);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("warning: the kernel profile is used, but the dump of crate `kernel` is missing: `kdriver` for target `target-5637172677741850002` depends on crate `kernel`"),
        "{stderr}"
    );
    let v = json(&stdout);
    assert_eq!(v["summary"]["profile"], "kernel");
    assert_eq!(v["summary"]["partial"], true);
    assert_eq!(v["summary"]["missing_crates"][0]["crate"], "kernel");
}

#[test]
fn host_crates_are_left_out_without_making_the_result_partial() {
    let out = extract(&[
        CrateSpec::lib("demo/klock.rs"),
        CrateSpec::lib("demo/demo_driver.rs").with_extern("klock"),
        CrateSpec::lib("batch/host_tool.rs"),
        CrateSpec::lib("extract/graph.rs"),
    ]);
    let dir = out.dir.path();
    let host = kmir::read_file(&dump_of(dir, "graph"))
        .expect("a dump")
        .header
        .host
        .to_string();
    // The program is cross-compiled; `host_tool` stays built for the
    // machine that ran the build (a proc macro's dependency).
    for name in ["klock", "demo_driver", "graph"] {
        rebuild_for(&dump_of(dir, name), "aarch64-unknown-none", &host);
    }
    let (code, stdout, stderr) = kanalyze(&["check", "kmir", "--no-cache"], dir);
    assert_eq!(code, 1, "the demo's error, and nothing partial: {stderr}");
    assert!(
        stderr.contains("warning: 1 host crate of the build left out: built for another target than the program (`aarch64-unknown-none`), so no function of the program can call them"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "= note: `host_tool` ({host}, built for the build machine)"
        )),
        "{stderr}"
    );
    assert!(
        stdout.contains("kanalyze: 1 host crate of the build left out"),
        "{stdout}"
    );
    assert!(!stdout.contains("partial result"), "{stdout}");
    // A dump of another target that is no host crate is still a loss.
    rebuild_for(
        &dump_of(dir, "graph"),
        "riscv64imac-unknown-none-elf",
        &host,
    );
    let (code, stdout, _) = kanalyze(&["check", "kmir", "--no-cache", "--format", "json"], dir);
    assert_eq!(code, 3);
    let v = json(&stdout);
    assert_eq!(v["summary"]["host_crates"][0]["crate"], "host_tool");
    let skipped = v["summary"]["skipped_inputs"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(skipped.contains("riscv64imac-unknown-none-elf"), "{v}");
}

#[test]
fn a_kernel_run_over_only_host_crates_is_an_error_naming_them() {
    let out = extract(&[
        CrateSpec::lib("batch/host_tool.rs"),
        CrateSpec::lib("extract/graph.rs"),
    ]);
    let dir = out.dir.path();
    // The harness's kanalyze.toml says `profile = "kernel"`.
    let (code, stdout, stderr) = kanalyze(&["check", "kmir", "--no-cache"], dir);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "error: no dump is built for a kernel target: the 2 dumps are a build's host crates"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("`host_tool` links the compiler's `proc_macro` library"),
        "{stderr}"
    );
    assert!(
        stderr.contains("`graph` ("),
        "every dump is named: {stderr}"
    );
    // Without the kernel profile they are a program of their own.
    let (code, _, stderr) = kanalyze(
        &["check", "kmir", "--no-cache", "--profile", "userspace"],
        dir,
    );
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_configuration_found_in_an_ancestor_is_named() {
    let out = demo();
    let dir = out.dir.path();
    // A stray configuration two levels up turns the error off.
    std::fs::write(
        dir.join("kanalyze.toml"),
        "profile = \"kernel\"\n[levels]\nsleep-in-atomic = \"allow\"\n",
    )
    .expect("written");
    let deeper = dir.join("a/b");
    std::fs::create_dir_all(&deeper).expect("created");
    let run = common::kanalyze(&deeper, &["check", "../../kmir", "--no-cache"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "kanalyze: files used: configuration `{}` (found in `{}`, an ancestor of the current directory)",
            dir.join("kanalyze.toml").display(),
            dir.display()
        )),
        "{}",
        run.stdout
    );
    let (_, stdout, _) = kanalyze(
        &["check", "../../kmir", "--no-cache", "--format", "json"],
        &deeper,
    );
    let v = json(&stdout);
    let used = &v["summary"]["files_used"][0];
    assert_eq!(used["role"], "configuration");
    assert!(
        used["from"]
            .as_str()
            .unwrap_or_default()
            .contains("an ancestor"),
        "{v}"
    );
}

#[test]
fn entries_that_match_nothing_are_warnings_naming_them() {
    let out = demo();
    let dir = out.dir.path();
    std::fs::write(
        dir.join("typo.toml"),
        "[fn]\nmsleeep = { expect = \"0..\" }\n\"clk_*\" = { expect = \"0\" }\n\
         [rust]\n\"klock::no_such_fn\" = { failure = true }\n\
         [field]\n\"no_struct.callback\" = { context = \"0..\", role = \"a callback\" }\n\
         [stack.fn]\nmsleep = 512\nno_such_c_fn = 512\n",
    )
    .expect("written");
    let (code, stdout, stderr) = kanalyze(
        &[
            "check",
            "kmir",
            "--no-cache",
            "--spec",
            "typo.toml",
            "--format",
            "json",
        ],
        dir,
    );
    assert_eq!(code, 1, "the demo's error stays: {stderr}");
    for (entry, at) in [
        ("msleeep", "typo.toml:2:1"),
        ("clk_*", "typo.toml:3:1"),
        ("klock::no_such_fn", "typo.toml:5:1"),
        ("no_struct.callback", "typo.toml:7:1"),
        ("no_such_c_fn", "typo.toml:10:1"),
    ] {
        assert!(
            stderr.contains(&format!("warning: spec entry `{entry}` ({at})")),
            "{entry}: {stderr}"
        );
    }
    let v = json(&stdout);
    let kinds: Vec<&str> = v["summary"]["unmatched_entries"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "spec [fn]",
            "spec [fn]",
            "spec [field]",
            "spec [rust]",
            "spec [stack.fn]"
        ]
    );
    // `msleep`, which the program calls, matches.
    assert!(!stderr.contains("spec entry `msleep`"), "{stderr}");

    // A triage entry of no finding of this run.
    std::fs::write(
        dir.join("triage.toml"),
        "[[finding]]\nid = \"KA0000000000000001\"\ntext = \"KT0000000000000001\"\nverdict = \"bug\"\nreason = \"r\"\nby = \"the test team\"\n",
    )
    .expect("written");
    let (_, _, stderr) = kanalyze(
        &["check", "kmir", "--no-cache", "--triage", "triage.toml"],
        dir,
    );
    assert!(
        stderr.contains("warning: 1 triage entry of `triage.toml` matches no finding of this run: `KA0000000000000001` (triage.toml:2)"),
        "{stderr}"
    );

    // A baseline of another program.
    std::fs::write(
        dir.join("other.json"),
        r#"{"version": 3, "findings": [{"id": "KA0000000000000002", "function": "other_program::probe"}], "summary": {}}"#,
    )
    .expect("written");
    let (code, _, stderr) = kanalyze(
        &["check", "kmir", "--no-cache", "--baseline", "other.json"],
        dir,
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains("warning: 1 of the 1 findings of the baseline `other.json` are in functions this program does not have: `KA0000000000000002` (in `other_program::probe`)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("is it the baseline of another program?"),
        "{stderr}"
    );
}

/// The ids of the findings of the dumps in `dir/kmir`.
fn finding_ids(dir: &Path) -> Vec<String> {
    let (_, stdout, _) = kanalyze(&["check", "kmir", "--no-cache", "--format", "json"], dir);
    json(&stdout)["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["id"].as_str().map(str::to_string))
        .collect()
}

/// `kanalyze triage` of finding `id` into `file`, as a child process.
fn triage(dir: &Path, file: &str, id: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        .args(["triage", "kmir", "--no-cache", "--file", file, "--id", id])
        .args([
            "--verdict",
            "bug",
            "--reason",
            "under the lock",
            "--by",
            "the test team",
        ])
        .current_dir(dir)
        .env("XDG_CACHE_HOME", common::test_cache_home())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kanalyze triage runs")
}

/// The ids a triage file judges.
fn judged(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("the triage file");
    let doc: toml::Value = toml::from_str(&text).expect("TOML");
    let mut ids: Vec<String> = doc["finding"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|f| f["id"].as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

#[test]
fn concurrent_triage_runs_keep_every_entry() {
    let out = extract(&[CrateSpec::lib("batch/many_sleeps.rs")]);
    let dir = out.dir.path();
    let mut ids = finding_ids(dir);
    ids.sort();
    assert_eq!(ids.len(), 24, "{ids:?}");
    let children: Vec<_> = ids
        .iter()
        .map(|id| triage(dir, "triage.toml", id))
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("waited");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(judged(&dir.join("triage.toml")), ids);
    let left: Vec<String> = std::fs::read_dir(dir)
        .expect("the directory")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[cfg(unix)]
#[test]
fn triage_writes_through_links_and_never_through_planted_ones() {
    let out = demo();
    let dir = out.dir.path();
    let id = finding_ids(dir).remove(0);
    // Links planted at the names a writer with a fixed temporary name
    // would open.
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "precious").expect("written");
    for name in ["triage.toml.tmp", ".triage.toml.tmp"] {
        std::os::unix::fs::symlink(&victim, dir.join(name)).expect("linked");
    }
    let run = triage(dir, "triage.toml", &id)
        .wait_with_output()
        .expect("waited");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
    assert_eq!(judged(&dir.join("triage.toml")), std::slice::from_ref(&id));

    // A triage file that is a link to the team's shared one: the shared
    // file is updated, the link stays a link.
    std::fs::create_dir(dir.join("shared")).expect("created");
    std::fs::write(dir.join("shared/triage.toml"), "# the team's verdicts\n").expect("written");
    std::os::unix::fs::symlink("shared/triage.toml", dir.join("linked.toml")).expect("linked");
    let run = triage(dir, "linked.toml", &id)
        .wait_with_output()
        .expect("waited");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let link = std::fs::symlink_metadata(dir.join("linked.toml")).expect("the link");
    assert!(link.file_type().is_symlink());
    let shared = std::fs::read_to_string(dir.join("shared/triage.toml")).expect("read");
    assert!(shared.contains("# the team's verdicts\n"), "{shared}");
    assert_eq!(judged(&dir.join("shared/triage.toml")), [id]);
}

#[cfg(unix)]
#[test]
fn fifos_are_skipped_not_read() {
    let out = demo();
    let dir = out.dir.path();
    mkfifo(&dir.join("kmir/stray.kmir"));
    let (code, _, stderr) = kanalyze_in_time(&["check", "kmir", "--no-cache"], dir);
    assert_eq!(code, 1, "the demo's error, nothing lost: {stderr}");
    assert!(
        stderr.contains("stray.kmir` is not a regular file (a FIFO): skipped"),
        "{stderr}"
    );
    // Named on the command line, it is an input that cannot be used.
    let (code, _, stderr) = kanalyze_in_time(&["check", "kmir/stray.kmir"], dir);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("is not a regular file (a FIFO): it is not read"),
        "{stderr}"
    );

    // The summary cache's pack and a per-dump entry replaced by FIFOs.
    std::fs::remove_file(dir.join("kmir/stray.kmir")).expect("removed");
    let cache = dir.join("cache");
    let args = ["check", "kmir", "--cache-dir", "cache"];
    let (cold, cold_out, _) = kanalyze_in_time(&args, dir);
    let files: Vec<PathBuf> = std::fs::read_dir(&cache)
        .expect("the cache")
        .chain(std::fs::read_dir(cache.join("dumps")).expect("the per-dump cache"))
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.is_file())
        .collect();
    assert!(files.len() >= 2, "{files:?}");
    for f in &files {
        std::fs::remove_file(f).expect("removed");
        mkfifo(f);
    }
    let (code, stdout, stderr) = kanalyze_in_time(&args, dir);
    assert_eq!((code, &stdout), (cold, &cold_out), "{stderr}");
    assert!(stderr.contains("not a regular file (a FIFO)"), "{stderr}");
}

#[test]
fn a_huge_configuration_value_is_not_echoed_whole() {
    let out = demo();
    let dir = out.dir.path();
    let huge = "x".repeat(10 << 20);
    for text in [
        format!("profile = \"{huge}\"\n"),
        format!("include-upstream = \"{huge}\"\n"),
        format!("[levels]\n{huge} = \"deny\"\n"),
        format!("spec = [\"{huge}\"]\n"),
        format!("profile = \"\"\"\n{}\"\"\"\n", "y\n".repeat(100_000)),
    ] {
        std::fs::write(dir.join("kanalyze.toml"), &text).expect("written");
        let (code, _, stderr) = kanalyze(&["check", "kmir", "--no-cache"], dir);
        assert_eq!(code, 2, "{}", &stderr[..stderr.len().min(2000)]);
        assert!(
            stderr.len() < 6000,
            "{} bytes:\n{}",
            stderr.len(),
            &stderr[..2000]
        );
        assert!(stderr.contains("kanalyze.toml"), "{stderr}");
    }
    std::fs::write(dir.join("kanalyze.toml"), format!("profile = \"{huge}\"\n")).expect("written");
    let (_, _, stderr) = kanalyze(&["check", "kmir", "--no-cache"], dir);
    assert!(stderr.contains("unknown profile"), "{stderr}");
    assert!(stderr.contains("… (10485760 bytes)`"), "{stderr}");
    // A huge flag value too.
    std::fs::write(dir.join("kanalyze.toml"), "profile = \"kernel\"\n").expect("written");
    let kind = "k".repeat(100_000);
    let (code, _, stderr) = kanalyze(&["check", "kmir", "--deny", &kind], dir);
    assert_eq!(code, 2);
    assert!(stderr.len() < 3000, "{} bytes", stderr.len());
    assert!(
        stderr.contains("… (100000 bytes)` given to `--deny`"),
        "{stderr}"
    );
}
