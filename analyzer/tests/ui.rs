//! UI tests: each `fixtures/ui/*.rs` is compiled through kextract and
//! `kanalyze check` is run on its dump; the rendered diagnostics are a
//! reviewed snapshot. Files named `fp_*` are false-positive traps: their
//! snapshot must show no finding at all.

use std::process::Command;

use test_harness::{CrateSpec, extract, repo_root};

/// Output with the repository, the temporary directory and the nightly
/// toolchain's sysroot replaced by `$ROOT`, `$TMP` and `$SYSROOT`.
fn clean_paths(b: &[u8], dir: &std::path::Path) -> String {
    let sysroot = test_harness::nightly_rustc();
    let sysroot = sysroot
        .parent()
        .and_then(|p| p.parent())
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    String::from_utf8_lossy(b)
        .replace(repo_root().to_str().unwrap(), "$ROOT")
        .replace(dir.to_str().unwrap(), "$TMP")
        .replace(&sysroot, "$SYSROOT")
}

/// `kanalyze check` on a fixture without the cache; and the same with a
/// cache of its own, filled by one run and recalled by the next (the
/// per-dump cache's entry and the summary pack), which must print the
/// same, byte for byte.
fn check(fixture: &str, opt: &'static str, format: &str) -> (i32, String, String) {
    let out = extract(&[CrateSpec::lib(&format!("ui/{fixture}.rs")).opt(opt)]);
    check_dir(out.dir.path(), fixture, format)
}

/// [`check`] on a fixture in text, and its JSON validated against the
/// schema of docs/output.md.
fn check_ui(fixture: &str, opt: &'static str) -> (i32, String, String) {
    let out = extract(&[CrateSpec::lib(&format!("ui/{fixture}.rs")).opt(opt)]);
    let dir = out.dir.path();
    let text = check_dir(dir, fixture, "text");
    let (code, json, stderr) = check_in(dir, &["--format", "json", "--no-cache"]);
    assert_eq!(code, text.0, "{fixture}: {stderr}");
    assert_valid_output(fixture, &json);
    text
}

/// `kanalyze check` on the dumps in `dir` without the cache, and with a
/// cache as [`check`] says.
fn check_dir(dir: &std::path::Path, fixture: &str, format: &str) -> (i32, String, String) {
    let cold = check_in(dir, &["--format", format, "--no-cache"]);
    let cache = dir.join("fixture-cache");
    let cache = cache.to_str().expect("utf-8");
    for run in ["fills", "recalls"] {
        let warm = check_in(dir, &["--format", format, "--cache-dir", cache]);
        assert_eq!(warm, cold, "{fixture}: the run that {run} the cache");
    }
    let entries = std::fs::read_dir(dir.join("fixture-cache/dumps"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(entries, 1, "{fixture}: one per-dump entry");
    cold
}

macro_rules! ui {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            let fixture = stringify!($name);
            for opt in ["0", "2"] {
                let (code, stdout, stderr) = check_ui(fixture, opt);
                assert!(stderr.is_empty(), "{fixture} at opt-level {opt}: {stderr}");
                if fixture.starts_with("fp_") {
                    assert_eq!(code, 0, "{fixture} at opt-level {opt} must be clean:\n{stdout}");
                    assert!(stdout.starts_with("kanalyze: no errors or warnings"), "{fixture} at opt-level {opt} must be clean:\n{stdout}");
                }
                // The findings do not depend on the optimisation level: the
                // bodies are taken before optimisation.
                insta::assert_snapshot!(fixture, stdout);
            }
        }
    )*};
}

ui!(
    sleep_in_atomic,
    calltrace,
    adjustment,
    annotations,
    annotation_check,
    indirect,
    recursion,
    drops,
    gfp,
    defaults,
    fp_guard_lifetimes,
    fp_control_flow,
    fp_beyond_klint,
    locks_double,
    locks_order,
    locks_leak,
    locks_irq,
    locks_sleep,
    fp_locks,
    core_builtin,
    context_specialised,
    last_reference,
    fp_borrowed_objects,
    borrowed_objects,
    fp_identity,
    identity,
    fp_same_or_none,
    same_or_none,
    fp_variant_payload,
    variant_payload,
    fp_unsized_handles,
    shared_handles,
    fp_flag_decides_result,
    flag_decides_result,
    fp_guarded_container,
    guarded_container,
    fp_guard_data_facts,
    guard_data_facts,
    fp_guarded_iteration,
    guarded_iteration,
    exclusive_fields,
    kept_by_container,
    callbacks,
    dyn_drop,
    limits_heap_fields,
    limits_bounds,
    ops_tables,
    drop_arrays,
    fp_waker,
    known_targets,
    known_dyn_targets,
    fp_moved_out,
    moved_out,
    lock_by_flag,
    locks_unsafe,
    fp_variant_tests,
    fp_guard_variants,
    variant_correlation,
    invariants_misplaced,
    locks_same_object,
    annotation_arity,
    macro_sites,
    fp_field_behind_mut,
    field_behind_mut,
    uninhabited_paths,
    shared_lend,
    drop_flags,
    placement,
    callback_glue,
    callback_paths,
    vtables,
    failure_paths,
);

/// The JSON schema of `check --format json`, from docs/output.md ("JSON
/// schema"): the first `json` block after that heading.
fn output_schema() -> serde_json::Value {
    let doc = std::fs::read_to_string(repo_root().join("docs/output.md")).unwrap();
    let section = doc
        .split("### JSON schema")
        .nth(1)
        .expect("docs/output.md has a `### JSON schema` section");
    let block = section
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a json block in the section");
    serde_json::from_str(block).expect("the schema is JSON")
}

fn output_validator() -> &'static jsonschema::Validator {
    static V: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    V.get_or_init(|| jsonschema::validator_for(&output_schema()).expect("a valid JSON Schema"))
}

/// Fails naming every place where `json` (the output of `check --format
/// json`) breaks the schema.
fn assert_valid_output(what: &str, json: &str) {
    let doc: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{what}: not JSON: {e}\n{json}"));
    let errors: Vec<String> = output_validator()
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: not valid output: {errors:#?}");
}

/// The schema names every finding kind, and only those; and it rejects
/// what is not the output (so that the checks above can fail).
#[test]
fn the_json_schema_knows_every_kind_and_rejects_other_documents() {
    let schema = output_schema();
    let kinds: Vec<&str> = schema["$defs"]["finding"]["properties"]["kind"]["enum"]
        .as_array()
        .expect("a kind enumeration")
        .iter()
        .filter_map(|k| k.as_str())
        .collect();
    let mut ours: Vec<&str> = checks::KINDS.iter().map(|k| k.name).collect();
    let mut theirs = kinds.clone();
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(theirs, ours);
    let (_, json, _) = check("sleep_in_atomic", "0", "json");
    assert_valid_output("sleep_in_atomic", &json);
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    doc["findings"][0]["kind"] = "no-such-kind".into();
    assert!(!output_validator().is_valid(&doc));
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    doc["summary"]["partial"] = "no".into();
    assert!(!output_validator().is_valid(&doc));
}

/// Every JSON document among the UI tests' snapshots is valid output.
#[test]
fn every_json_snapshot_matches_the_schema() {
    let dir = repo_root().join("analyzer/tests/snapshots");
    let mut validated = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        // The snapshot's contents follow insta's `---` header.
        let body = text.splitn(3, "---\n").nth(2).unwrap_or_default();
        // A snapshot may hold several outputs; each JSON document of
        // `check` starts with `{` at the start of a line.
        let mut rest = body;
        while let Some(start) = rest.find("{\n  \"version\"") {
            let mut stream =
                serde_json::Deserializer::from_str(&rest[start..]).into_iter::<serde_json::Value>();
            let Some(Ok(doc)) = stream.next() else { break };
            let used = stream.byte_offset();
            assert_valid_output(&path.display().to_string(), &doc.to_string());
            validated += 1;
            rest = &rest[start + used..];
        }
    }
    assert!(
        validated >= 2,
        "only {validated} JSON documents found in the snapshots"
    );
}

/// With a triage file, every judged finding carries its verdict as data:
/// `bug` and a changed verdict stay shown, `not-a-bug` is listed as
/// suppressed, after the others, and is not counted.
#[test]
fn triage_verdicts_are_data_in_the_json() {
    let out = extract(&[CrateSpec::lib("ui/failure_paths.rs")]);
    let dir = out.dir.path();
    let (code, json, _) = check_in(dir, &["--format", "json", "--no-cache"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let id_of = |function: &str, kind: &str| -> String {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["function"] == function && f["kind"] == kind)
            .and_then(|f| f["id"].as_str())
            .unwrap_or_else(|| panic!("no {kind} in {function}"))
            .to_string()
    };
    let judge = |id: &str, verdict: &str| {
        let o = kanalyze_in(
            dir,
            &[
                "triage",
                "kmir",
                "--no-cache",
                "--file",
                "triage.toml",
                "--id",
                id,
                "--verdict",
                verdict,
                "--reason",
                "judged in the test",
                "--by",
                "the test team",
                "--date",
                "2026-12-06",
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    judge(
        &id_of("failure_paths::assertion", "sleep-on-failure-path"),
        "bug",
    );
    judge(
        &id_of("failure_paths::normal_path", "sleep-in-atomic"),
        "not-a-bug",
    );
    let (code, json, stderr) = check_in(
        dir,
        &["--format", "json", "--no-cache", "--triage", "triage.toml"],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_valid_output("triage", &json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let findings = v["findings"].as_array().unwrap();
    let judged: Vec<(&str, &str, bool)> = findings
        .iter()
        .filter(|f| !f["triage"].is_null())
        .map(|f| {
            (
                f["kind"].as_str().unwrap(),
                f["triage"]["verdict"].as_str().unwrap(),
                f["triage"]["suppressed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        judged,
        [
            ("sleep-on-failure-path", "bug", false),
            ("sleep-in-atomic", "not-a-bug", true)
        ]
    );
    // The suppressed one comes last and is not counted.
    assert_eq!(findings.last().unwrap()["triage"]["suppressed"], true);
    assert_eq!(v["summary"]["errors"], 4);
    assert_eq!(v["summary"]["triage"]["hidden"], 1);
    insta::assert_snapshot!("triage_verdicts_json", json);
}

/// `panic!` is a failure routine where its entry point is one: a
/// `[rust]` spec entry marks the standard library's (not extracted here).
#[test]
fn a_spec_entry_makes_panic_a_failure_routine() {
    let out = extract(&[CrateSpec::lib("ui/failure_paths.rs")]);
    let dir = out.dir.path();
    let kinds = |args: &[&str]| -> Vec<(String, String)> {
        let (_, json, stderr) =
            check_in(dir, &[&["--format", "json", "--no-cache"], args].concat());
        assert!(stderr.is_empty(), "{stderr}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["function"].as_str().unwrap_or_default().to_string(),
                    f["kind"].as_str().unwrap_or_default().to_string(),
                )
            })
            .filter(|(f, _)| f == "failure_paths::panics")
            .collect()
    };
    assert_eq!(
        kinds(&[]),
        [(
            "failure_paths::panics".to_string(),
            "sleep-in-atomic".to_string()
        )]
    );
    std::fs::write(
        dir.join("panic.toml"),
        "[rust]\n\"core::panicking::panic_fmt\" = { failure = true }\n",
    )
    .unwrap();
    assert_eq!(
        kinds(&["--spec", "panic.toml"]),
        [(
            "failure_paths::panics".to_string(),
            "sleep-on-failure-path".to_string()
        )]
    );
}

/// `kanalyze summary` of function `f` in the dumps under `dir/kmir`,
/// which must succeed.
fn summary_in(dir: &std::path::Path, f: &str) -> String {
    let o = kanalyze_in(dir, &["summary", "kmir", f]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `kanalyze ARGS` in `dir`, with the tests' summary cache, not the
/// user's (as in `common::kanalyze`).
fn kanalyze_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache-home"),
        )
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// `kanalyze check kmir ARGS` in `dir`: exit code, stdout and stderr with
/// paths cleaned as `clean_paths` does.
fn check_in(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let o = kanalyze_in(dir, &[&["check", "kmir"], args].concat());
    (
        o.status.code().unwrap_or(-1),
        clean_paths(&o.stdout, dir),
        clean_paths(&o.stderr, dir),
    )
}

/// A file that does not parse stops the run (nothing on stdout); a
/// declaration that parses but matches nothing, or that the program
/// contradicts, is left out and the run goes on without it, and says so.
fn assert_left_out_or_stopped(name: &str, code: i32, stdout: &str, stderr: &str) {
    let resolution = [
        "invariant matches nothing",
        "invariant contradicted",
        "more than one function",
    ]
    .iter()
    .any(|m| stderr.contains(m));
    if resolution {
        assert_eq!(code, 4, "{name}: {stdout}{stderr}");
        assert!(stdout.contains("declaration left out"), "{name}: {stdout}");
    } else {
        assert_eq!(code, 2, "{name}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{name}: {stdout}");
    }
}

/// The instances the findings of a text report are in, in order.
fn instances_in(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("= note: inside instance "))
        .map(str::to_string)
        .collect()
}

/// The functions findings of a run are inside, sorted, once each.
fn reported_functions(text: &str) -> Vec<String> {
    let mut f = instances_in(text);
    f.sort();
    f.dedup();
    f
}

/// What an audited run with the invariants file `file` in `dir` says of
/// each declaration (JSON summary): kind, what it says, the functions it
/// applied in, and how many findings it alone removes (for a holds-last
/// declaration: makes errors).
fn audited_uses(dir: &std::path::Path, file: &str) -> Vec<(String, String, Vec<String>, u64)> {
    let (_, json, _) = check_in(
        dir,
        &[
            "--invariants",
            file,
            "--audit-invariants",
            "--format",
            "json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["summary"]["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap().to_string(),
                i["says"].as_str().unwrap().to_string(),
                i["applied_in"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap().to_string())
                    .collect(),
                // A holds-last declaration removes nothing: it says how
                // many findings it makes errors.
                i["removes"]
                    .as_u64()
                    .or(i["makes_errors"].as_u64())
                    .unwrap(),
            )
        })
        .collect()
}

/// Declared invariants in both forms: `Proc.file` in the source, `Proc.log`
/// in an invariants file. Without the file the teardown of a `Proc` under
/// a spinlock is a warning (through `log`); with it, clean; the audit says
/// what each removes. Declarations that name nothing are errors.
#[test]
fn invariants_in_source_and_in_a_file() {
    let out = extract(&[CrateSpec::lib("ui/invariants.rs")]);
    let dir = out.dir.path();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    let run = |args: &[&str]| check_in(dir, args);
    let entry = |ty: &str, field: &str, emptier: &str| {
        format!(
            "# Proc::release takes it.\n[[empty_at_teardown]]\ntype = \"{ty}\"\nfield = \"{field}\"\nemptied_by = [\"{emptier}\"]\nbecause = \"release() takes it out before the last reference goes\"\n"
        )
    };
    write(
        "good.toml",
        &entry("invariants::Proc", "log", "invariants::Proc::release"),
    );

    let (code, without, _) = run(&[]);
    assert_eq!(code, 1);
    assert!(without.contains("warning: if this"), "{without}");
    assert!(
        without.contains("<invariants::Log as std::ops::Drop>::drop"),
        "{without}"
    );
    assert!(
        !without.contains(
            "<invariants::File as std::ops::Drop>::drop` expects the preemption count to be 0 if"
        ),
        "{without}"
    );

    let (code, with, stderr) = run(&["--invariants", "good.toml", "--audit-invariants"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(!with.contains("warning: if this"), "{with}");
    assert!(with.contains("2 declared invariants trusted, applied in 2 drop glues (removing 1 finding; alone, each removes 1, 1)"), "{with}");
    insta::assert_snapshot!("invariants_with_file", with);

    let (_, json, _) = run(&[
        "--invariants",
        "good.toml",
        "--audit-invariants",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let inv = v["summary"]["invariants"].as_array().unwrap();
    assert_eq!(inv.len(), 2);
    assert_eq!(v["summary"]["removed_by_invariants"], 1);
    for i in inv {
        assert_eq!(
            i["applied_in"][0],
            "std::ptr::drop_glue::<invariants::Proc>"
        );
        assert_eq!(i["removes"], 1);
    }
    assert!(inv.iter().any(|i| i["declared_at"] == "good.toml:2:1"));
    assert!(
        inv.iter().any(|i| i["declared_at"]
            .as_str()
            .unwrap()
            .ends_with("fixtures/ui/invariants.rs:39:5")),
        "{inv:?}"
    );

    // Declarations that name nothing stop the run (exit 2) with the
    // declaration shown in its file.
    let mut errors = String::new();
    for (name, text) in [
        (
            "no_struct.toml",
            entry("invariants::Process", "log", "invariants::Proc::release"),
        ),
        (
            "no_field.toml",
            entry("invariants::Proc", "logs", "invariants::Proc::release"),
        ),
        (
            "no_emptier.toml",
            entry("invariants::Proc", "log", "invariants::Proc::free"),
        ),
        (
            "silent_emptier.toml",
            entry("invariants::Proc", "log", "invariants::forget_current"),
        ),
        (
            "refilling_emptier.toml",
            entry("invariants::Proc", "file", "invariants::Proc::try_release"),
        ),
    ] {
        write(name, &text);
        let (code, stdout, stderr) = run(&["--invariants", name]);
        assert_left_out_or_stopped(name, code, &stdout, &stderr);
        errors.push_str(&format!("== {name}\n{stderr}"));
    }
    write(
        "broken.toml",
        "[[empty_at_teardown]]\ntype = \"invariants::Proc\"\n",
    );
    let (code, _, stderr) = run(&["--invariants", "broken.toml"]);
    assert_eq!(code, 2);
    errors.push_str(&format!("== broken.toml\n{stderr}"));
    let (code, _, stderr) = run(&["--invariants", "missing.toml"]);
    assert_eq!(code, 2);
    errors.push_str(&format!("== missing.toml\n{stderr}"));
    insta::assert_snapshot!("invariants_errors", errors);
}

/// Declared empty-when-stored invariants in both forms: `Inner.file` in the
/// source (every store), `Inner.log` and `Conn.buf` in a file, each for
/// the storer it names. Stores the declarations do not cover stay errors;
/// a declaration whose storer never stores, or that no store matches, stops
/// the run.
#[test]
fn invariants_about_stores() {
    let out = extract(&[CrateSpec::lib("ui/invariants_stored.rs")]);
    let dir = out.dir.path();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    let run = |args: &[&str]| check_in(dir, args);
    let entry = |ty: &str, field: &str, storer: &str| {
        format!(
            "[[empty_when_stored]]\ntype = \"{ty}\"\nfield = \"{field}\"\nstored_by = [\"{storer}\"]\nbecause = \"it stores only into an empty field\"\n"
        )
    };
    write(
        "good.toml",
        &format!(
            "{}\n{}",
            entry(
                "invariants_stored::Inner",
                "log",
                "invariants_stored::set_log"
            ),
            entry(
                "invariants_stored::Conn",
                "buf",
                "invariants_stored::Conn::refill"
            )
        ),
    );
    let (code, without, stderr) = run(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        instances_in(&without),
        [
            "`invariants_stored::set_log`",
            "`invariants_stored::replace_log`",
            "`invariants_stored::Conn::refill`",
            "`invariants_stored::Conn::swap`"
        ],
        "{without}"
    );
    let (code, with, stderr) = run(&["--invariants", "good.toml", "--audit-invariants"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        instances_in(&with),
        [
            "`invariants_stored::replace_log`",
            "`invariants_stored::Conn::swap`"
        ],
        "{with}"
    );
    insta::assert_snapshot!("invariants_stored_with_file", with);

    let applied: Vec<(String, Vec<String>, u64)> = audited_uses(dir, "good.toml")
        .into_iter()
        .map(|(_, says, applied_in, removes)| (says, applied_in, removes))
        .collect();
    assert_eq!(
        applied,
        [
            (
                "`Inner.log` is empty when stored".to_string(),
                vec!["invariants_stored::set_log".to_string()],
                1
            ),
            (
                "`Conn.buf` is empty when stored".to_string(),
                vec!["invariants_stored::Conn::refill".to_string()],
                1
            ),
            (
                "`Inner.file` is empty when stored".to_string(),
                vec![
                    "invariants_stored::attach".to_string(),
                    "invariants_stored::attach_again".to_string()
                ],
                2
            ),
        ]
    );

    let mut errors = String::new();
    for (name, text) in [
        (
            "silent_storer.toml",
            entry("invariants_stored::Inner", "log", "invariants_stored::Conn::swap"),
        ),
        (
            "no_storer.toml",
            entry("invariants_stored::Inner", "log", "invariants_stored::detach"),
        ),
        (
            "never_stored.toml",
            "[[empty_when_stored]]\ntype = \"invariants_stored::Conn\"\nfield = \"id\"\nbecause = \"x\"\n".to_string(),
        ),
        (
            "bad_key.toml",
            "[[empty_when_stored]]\ntype = \"invariants_stored::Conn\"\nfield = \"buf\"\nemptied_by = [\"invariants_stored::Conn::refill\"]\nbecause = \"x\"\n".to_string(),
        ),
    ] {
        write(name, &text);
        let (code, stdout, stderr) = run(&["--invariants", name]);
        assert_left_out_or_stopped(name, code, &stdout, &stderr);
        errors.push_str(&format!("== {name}\n{stderr}"));
    }
    insta::assert_snapshot!("invariants_stored_errors", errors);
}

/// Declared never-fails invariants in both forms: `add_listener` in a
/// file (the callee by its full path), the others in the source (by its
/// last segments; the failure handled by `?`, by hand, by `map_err` and
/// by `if let`), each removing one finding. The failure paths
/// of the covered calls, which drop a listener under the spinlock, are
/// gone; the same shape undeclared, a call through a helper and another
/// fallible call stay warnings. Declarations that name no function, no
/// call of the callee, a callee that cannot fail, or a callee name that
/// matches calls of two functions stop the run.
#[test]
fn invariants_never_fails() {
    let out = extract(&[CrateSpec::lib("ui/invariants_never_fails.rs")]);
    let dir = out.dir.path();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    let run = |args: &[&str]| check_in(dir, args);
    let entry = |function: &str, callee: &str| {
        format!(
            "[[never_fails]]\nfunction = \"invariants_never_fails::{function}\"\ncallee = \"{callee}\"\nbecause = \"the callers pass an empty spare vector with more room than the list\"\n"
        )
    };
    let full = "invariants_never_fails::kvec::KVec::<T>::push_within_capacity";
    write("good.toml", &entry("add_listener", full));
    let (code, without, stderr) = run(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        instances_in(&without),
        [
            "`invariants_never_fails::add_listener`",
            "`invariants_never_fails::add_listener_undeclared`",
            "`invariants_never_fails::add_in_parts`",
            "`invariants_never_fails::add_in_parts`",
            "`invariants_never_fails::add_counted`"
        ],
        "{without}"
    );
    let (code, with, stderr) = run(&["--invariants", "good.toml", "--audit-invariants"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        instances_in(&with),
        [
            "`invariants_never_fails::add_listener_undeclared`",
            "`invariants_never_fails::add_in_parts`",
            "`invariants_never_fails::add_in_parts`",
            "`invariants_never_fails::add_counted`"
        ],
        "{with}"
    );
    insta::assert_snapshot!("invariants_never_fails_with_file", with);

    let applied = audited_uses(dir, "good.toml");
    let never = |function: &str, removes| {
        (
            "never_fails".to_string(),
            format!("`push_within_capacity` never fails in `invariants_never_fails::{function}`"),
            vec![format!("invariants_never_fails::{function}")],
            removes,
        )
    };
    assert_eq!(
        applied,
        [
            never("add_listener", 1),
            never("add_in_parts", 1),
            never("add_listener_declared", 1),
            never("add_or_drop", 1),
            (
                "never_fails".to_string(),
                "`try_lock` never fails in `invariants_never_fails::bump`".to_string(),
                vec!["invariants_never_fails::bump".to_string()],
                0
            ),
            never("move_mapped", 1)
        ]
    );

    let mut errors = String::new();
    for (name, text) in [
        ("no_function.toml", entry("add_listeners", full)),
        (
            "no_call.toml",
            entry("add_listener_undeclared", "KVec::<T>::push"),
        ),
        ("not_fallible.toml", entry("add_listener", "KVec::<T>::len")),
        ("ambiguous.toml", entry("add_counted", "push_within_capacity")),
        (
            "empty_because.toml",
            "[[never_fails]]\nfunction = \"invariants_never_fails::add_listener\"\ncallee = \"push_within_capacity\"\nbecause = \" \"\n".to_string(),
        ),
        (
            "not_a_path.toml",
            "[[never_fails]]\nfunction = \"add listener\"\ncallee = \"push_within_capacity\"\nbecause = \"x\"\n".to_string(),
        ),
        (
            "missing_key.toml",
            "[[never_fails]]\nfunction = \"invariants_never_fails::add_listener\"\nbecause = \"x\"\n".to_string(),
        ),
    ] {
        write(name, &text);
        let (code, stdout, stderr) = run(&["--invariants", name]);
        assert_left_out_or_stopped(name, code, &stdout, &stderr);
        errors.push_str(&format!("== {name}\n{stderr}"));
    }
    insta::assert_snapshot!("invariants_never_fails_errors", errors);
}

/// Declared kept-alive invariants in both forms: `Pool.waiting` in the
/// source, `Pool.parked` in a file. The drops of what is taken out of them
/// (directly, through a guard, through helpers that return it, whole with
/// `mem::take`) are clean; an undeclared field, a value swapped or
/// overwritten before its drop, and a call that may hand back an owned
/// argument stay warnings. A declaration nothing is taken out of, or with
/// a key of another kind, stops the run.
#[test]
fn invariants_kept_alive() {
    let out = extract(&[CrateSpec::lib("ui/invariants_kept.rs")]);
    let dir = out.dir.path();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    let run = |args: &[&str]| check_in(dir, args);
    let entry = |field: &str| {
        format!(
            "[[kept_alive]]\ntype = \"invariants_kept::Pool\"\nfield = \"{field}\"\nbecause = \"whoever parks a device keeps a reference to it\"\n"
        )
    };
    write("good.toml", &entry("parked"));
    let (code, without, stderr) = run(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        instances_in(&without),
        [
            "`invariants_kept::unpark`",
            "`invariants_kept::pop_all`",
            "`invariants_kept::pop_all_kept`",
            "`invariants_kept::swap_with_spare`",
            "`invariants_kept::overwrite`",
            "`invariants_kept::give_back`",
            "`invariants_kept::repark`",
            "`invariants_kept::reset_all`"
        ],
        "{without}"
    );
    let (code, with, stderr) = run(&["--invariants", "good.toml", "--audit-invariants"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        instances_in(&with),
        [
            "`invariants_kept::pop_all`",
            "`invariants_kept::pop_all_kept`",
            "`invariants_kept::swap_with_spare`",
            "`invariants_kept::overwrite`",
            "`invariants_kept::give_back`",
            "`invariants_kept::reset_all`"
        ],
        "{with}"
    );
    insta::assert_snapshot!("invariants_kept_with_file", with);

    // Restricted to one function's takes: that one is clean, the other
    // take of the same field stays a warning.
    write(
        "taken_by.toml",
        &format!(
            "{}[[kept_alive]]\ntype = \"invariants_kept::Pool\"\nfield = \"all\"\ntaken_by = [\"invariants_kept::pop_all_kept\"]\nbecause = \"its caller keeps the device\"\n",
            entry("parked")
        ),
    );
    let (code, restricted, stderr) = run(&["--invariants", "taken_by.toml"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        instances_in(&restricted),
        [
            "`invariants_kept::pop_all`",
            "`invariants_kept::swap_with_spare`",
            "`invariants_kept::overwrite`",
            "`invariants_kept::give_back`",
            "`invariants_kept::reset_all`"
        ],
        "{restricted}"
    );

    let applied = audited_uses(dir, "good.toml");
    let kept = |field: &str, fns: &[&str], removes| {
        (
            "kept_alive".to_string(),
            format!("what `Pool.{field}` holds is kept alive elsewhere"),
            fns.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
            removes,
        )
    };
    assert_eq!(
        applied,
        [
            kept(
                "parked",
                &["invariants_kept::repark", "invariants_kept::unpark"],
                2
            ),
            kept(
                "waiting",
                &[
                    "invariants_kept::pop_through_helpers",
                    "invariants_kept::pop_waiting",
                    "invariants_kept::pop_waiting_in",
                    "invariants_kept::take_all_waiting"
                ],
                4
            ),
        ]
    );

    let mut errors = String::new();
    for (name, text) in [
        (
            "never_taken.toml",
            "[[kept_alive]]\ntype = \"invariants_kept::Device\"\nfield = \"config\"\nbecause = \"x\"\n".to_string(),
        ),
        ("no_field.toml", entry("waiters")),
        (
            "bad_key.toml",
            format!("{}stored_by = [\"invariants_kept::unpark\"]\n", entry("parked")),
        ),
        (
            "taker_missing.toml",
            format!("{}taken_by = [\"invariants_kept::nowhere\"]\n", entry("all")),
        ),
        (
            "taker_takes_nothing.toml",
            format!("{}taken_by = [\"invariants_kept::unpark\"]\n", entry("all")),
        ),
    ] {
        write(name, &text);
        let (code, stdout, stderr) = run(&["--invariants", name]);
        assert_left_out_or_stopped(name, code, &stdout, &stderr);
        errors.push_str(&format!("== {name}\n{stderr}"));
    }
    insta::assert_snapshot!("invariants_kept_errors", errors);
}

/// A fixture whose every function is reported without the spec text
/// `spec` and only the `reported` ones with it (written to `file` in
/// `dir`): the run with it.
fn cleared_by_spec(
    dir: &std::path::Path,
    clean: &[&str],
    reported: &[&str],
    file: &str,
    spec: &str,
) -> String {
    let (code, without, stderr) = check_in(dir, &["--no-cache"]);
    assert_eq!(code, 0, "{stderr}");
    let mut all = [clean, reported].concat();
    all.sort();
    assert_eq!(reported_functions(&without), all, "{without}");
    std::fs::write(dir.join(file), spec).unwrap();
    let (code, with, stderr) = check_in(dir, &["--no-cache", "--spec", file]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(reported_functions(&with), reported, "{with}");
    with
}

/// Each finding of a text report as (severity, instance it is in).
fn severities_in(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut severity = String::new();
    for l in text.lines() {
        if let Some((level, _)) = l.split_once(": ")
            && (level == "error" || level == "warning")
        {
            severity = level.to_string();
        }
        if let Some(i) = l.trim_start().strip_prefix("= note: inside instance ") {
            out.push((severity.clone(), i.to_string()));
        }
    }
    out
}

/// Declared holds-last invariants: a reference taken out of the field can
/// be the last one, so its drop under a spinlock is an error where the
/// teardown sleeps, and stays what it was everywhere else.
#[test]
fn invariants_holds_last() {
    let out = extract(&[CrateSpec::lib("ui/invariants_last.rs")]);
    let dir = out.dir.path();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    let run = |args: &[&str]| check_in(dir, args);
    let entry = "[[holds_last]]\ntype = \"invariants_last::Pool\"\nfield = \"drained\"\ntaken_by = [\"invariants_last::teardown\"]\nbecause = \"teardown runs after every owner let go\"\n";
    write("good.toml", entry);
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(s, f)| (s.to_string(), format!("`invariants_last::{f}`")))
            .collect()
    };
    let (code, without, stderr) = run(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        severities_in(&without),
        pairs(&[
            ("error", "drop_retired_locked"),
            ("error", "retire_one"),
            ("error", "drop_through_helper"),
            ("warning", "swap_with_spare"),
            ("warning", "teardown"),
            ("warning", "drop_drained"),
            ("error", "clear_retired_locked"),
            ("error", "drop_retired_in_helper"),
        ]),
        "{without}"
    );
    let (code, with, stderr) = run(&["--invariants", "good.toml", "--audit-invariants"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        severities_in(&with),
        pairs(&[
            ("error", "drop_retired_locked"),
            ("error", "retire_one"),
            ("error", "drop_through_helper"),
            ("warning", "swap_with_spare"),
            ("error", "teardown"),
            ("warning", "drop_drained"),
            ("error", "clear_retired_locked"),
            ("error", "drop_retired_in_helper"),
        ]),
        "{with}"
    );
    insta::assert_snapshot!("invariants_last_with_file", with);

    // Applied wherever such a reference is dropped, with or without a
    // lock held: it is the analysis that finds the lock.
    let applied = audited_uses(dir, "good.toml");
    assert_eq!(
        applied,
        [
            (
                "holds_last".to_string(),
                "what `teardown` takes out of `Pool.drained` or stores over can be the last reference".to_string(),
                vec!["invariants_last::teardown".to_string()],
                1
            ),
            (
                "holds_last".to_string(),
                "a reference taken out of `Pool.counters` can be the last".to_string(),
                vec!["invariants_last::drop_counter".to_string()],
                0
            ),
            (
                "holds_last".to_string(),
                "a reference taken out of `Pool.retired` can be the last".to_string(),
                vec![
                    "invariants_last::clear_retired_locked".to_string(),
                    "invariants_last::drain_retired".to_string(),
                    "invariants_last::drop_one_retired".to_string(),
                    "invariants_last::drop_retired_after".to_string(),
                    "invariants_last::drop_retired_locked".to_string(),
                    "invariants_last::drop_through_helper".to_string(),
                    "invariants_last::retire_one".to_string(),
                ],
                5
            ),
        ]
    );

    let mut errors = String::new();
    for (name, text) in [
        (
            "never_taken.toml",
            "[[holds_last]]\ntype = \"invariants_last::Device\"\nfield = \"config\"\nbecause = \"x\"\n".to_string(),
        ),
        (
            "taker_takes_nothing.toml",
            entry.replace("invariants_last::teardown", "invariants_last::drain_retired"),
        ),
        (
            "both.toml",
            format!(
                "{entry}[[kept_alive]]\ntype = \"invariants_last::Pool\"\nfield = \"drained\"\nbecause = \"every owner keeps its device\"\n"
            ),
        ),
        (
            "bad_key.toml",
            format!("{entry}emptied_by = [\"invariants_last::teardown\"]\n"),
        ),
    ] {
        write(name, &text);
        let (code, stdout, stderr) = run(&["--invariants", name]);
        assert_left_out_or_stopped(name, code, &stdout, &stderr);
        errors.push_str(&format!("== {name}\n{stderr}"));
    }
    insta::assert_snapshot!("invariants_last_errors", errors);
}

/// Declared same-object invariants: where a function drops a value of a
/// struct, its back pointer names the object an argument path referred to
/// on entry, and the body keeps that object alive (a borrow, or a sharing
/// clone under any name). The last-reference place is followed through the
/// `Arc`'s and the `Box`'s pointers to the field; everything else stays a
/// warning.
#[test]
fn invariants_same_object() {
    let out = extract(&[CrateSpec::lib("ui/invariants_same_object.rs")]);
    let dir = out.dir.path();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    let run = |args: &[&str]| check_in(dir, args);
    let entry = |function: &str| {
        format!(
            "[[same_object]]\nfunction = \"invariants_same_object::{function}\"\ntype = \"invariants_same_object::Node\"\nfield = \"owner\"\nsame_as = \"arg1.to\"\nbecause = \"a transaction's target node belongs to the process it is sent to\"\n"
        )
    };
    let submits = [
        "submit",
        "submit_refactored",
        "submit_borrowed",
        "submit_late",
        "submit_fresh",
        "submit_maybe",
    ];
    write(
        "good.toml",
        &submits
            .iter()
            .map(|f| entry(f))
            .collect::<Vec<_>>()
            .concat(),
    );
    let warnings = |v: &[&str]| -> Vec<(String, String)> {
        v.iter()
            .map(|f| {
                (
                    "warning".to_string(),
                    format!("`invariants_same_object::{f}`"),
                )
            })
            .collect()
    };
    // The attributes alone: `print_nodes` and `scan_peers` are clean.
    let (code, without, stderr) = run(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        severities_in(&without),
        warnings(&[
            "Process::print_links",
            "Process::drop_link",
            "submit",
            "submit_refactored",
            "submit_borrowed",
            "submit_late",
            "submit_fresh",
            "submit_maybe",
            "undeclared",
        ]),
        "{without}"
    );
    // With the file: the `submit`s whose `tx.to` is kept alive at the
    // drop, by a clone under any name or by the borrow; a dropped or
    // fresh `process` keeps nothing alive.
    let (code, with, stderr) = run(&["--invariants", "good.toml"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        severities_in(&with),
        warnings(&[
            "Process::print_links",
            "Process::drop_link",
            "submit_late",
            "submit_fresh",
            "submit_maybe",
            "undeclared",
        ]),
        "{with}"
    );
    // The teardown's place, through the `Arc`'s and the `Box`'s pointers
    // to the back pointer, by field names.
    let o = kanalyze_in(
        dir,
        &[
            "summary",
            "kmir",
            "std::ptr::drop_glue::<invariants_same_object::arc::Arc<invariants_same_object::Node>>",
        ],
    );
    let summary = String::from_utf8_lossy(&o.stdout);
    assert!(
        summary.contains("from dropping `(*(*arg0).0).1.1`")
            && summary.contains("through the fields `Arc.ptr`, `ArcInner.data`, `Node.owner`"),
        "{summary}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Without any declaration, the cleared ones come back.
    let (_, none, _) = run(&["--invariants", "good.toml", "--audit-invariants"]);
    assert!(none.contains("same_object), removes 1 finding"), "{none}");
    let applied = audited_uses(dir, "good.toml");
    let mut removes: Vec<(String, u64)> = applied
        .iter()
        .filter(|(kind, ..)| kind == "same_object")
        .map(|(_, says, _, n)| (says.clone(), *n))
        .collect();
    removes.sort();
    let says = |f: &str, ty: &str, field: &str, path: &str, n: u64| {
        (
            format!("where `{f}` drops a `{ty}`, its `{field}` is `{path}`'s object"),
            n,
        )
    };
    assert_eq!(
        removes,
        [
            says("Process::drop_link", "Node", "owner", "self", 1),
            says("Process::print_links", "Link", "owner", "self", 0),
            says("Process::print_nodes", "Node", "owner", "self", 1),
            says("Process::scan_peers", "Node", "owner", "self", 1),
            says(
                "invariants_same_object::submit_borrowed",
                "Node",
                "owner",
                "arg1.to",
                1
            ),
            says(
                "invariants_same_object::submit_fresh",
                "Node",
                "owner",
                "arg1.to",
                0
            ),
            says(
                "invariants_same_object::submit_late",
                "Node",
                "owner",
                "arg1.to",
                0
            ),
            says(
                "invariants_same_object::submit_maybe",
                "Node",
                "owner",
                "arg1.to",
                0
            ),
            says(
                "invariants_same_object::submit_refactored",
                "Node",
                "owner",
                "arg1.to",
                1
            ),
            // (`` ` `` sorts after `_`.)
            says(
                "invariants_same_object::submit",
                "Node",
                "owner",
                "arg1.to",
                1
            ),
        ]
    );

    let mut errors = String::new();
    let one = entry("submit");
    for (name, text) in [
        // A local's name: what a rename breaks.
        (
            "names_a_local.toml",
            one.replace("type =", "local = \"target_node\"\ntype ="),
        ),
        (
            "not_an_argument_path.toml",
            one.replace("same_as = \"arg1.to\"", "same_as = \"process\""),
        ),
        (
            "no_argument.toml",
            one.replace("same_as = \"arg1.to\"", "same_as = \"arg7.to\""),
        ),
        (
            "self_of_a_function.toml",
            one.replace("same_as = \"arg1.to\"", "same_as = \"self.to\""),
        ),
        // `consume` drops a `Tx`, which holds a node only in a field.
        (
            "never_dropped.toml",
            one.replace("::submit\"", "::consume\"")
                .replace("arg1.to", "arg0.to"),
        ),
        ("no_field.toml", one.replace("\"owner\"", "\"parent\"")),
        (
            "no_function.toml",
            one.replace("::submit\"", "::submit_now\""),
        ),
        (
            "missing_key.toml",
            one.replace("same_as = \"arg1.to\"\n", ""),
        ),
    ] {
        write(name, &text);
        let (code, stdout, stderr) = run(&["--invariants", name]);
        assert_left_out_or_stopped(name, code, &stdout, &stderr);
        errors.push_str(&format!("== {name}\n{stderr}"));
    }
    insta::assert_snapshot!("invariants_same_object_errors", errors);
}

/// The same across crates, at both optimisation levels: the user crate's
/// instances of `Arc::drop` come from the other crate's optimized MIR, where
/// the pointer reaches the `Box` through inlined copies and transmutes.
#[test]
fn invariants_same_object_across_crates() {
    for opt in ["0", "2"] {
        let out = extract(&[
            CrateSpec::lib("ui/crates/kowner.rs").opt(opt),
            CrateSpec::lib("ui/crates/kowner_user.rs")
                .with_extern("kowner")
                .opt(opt),
        ]);
        let (code, stdout, stderr) = check_in(out.dir.path(), &[]);
        assert_eq!(code, 0, "opt {opt}: {stderr}");
        assert_eq!(
            severities_in(&stdout),
            [(
                "warning".to_string(),
                "`kowner_user::count_any`".to_string()
            )],
            "opt {opt}: {stdout}"
        );
    }
}

/// The profiles: the same program as it is (no `kernel` crate for a kernel
/// target: userspace) and as the kernel; findings entirely in the standard
/// library counted, and shown with `--include-upstream`.
#[test]
fn profiles_and_upstream() {
    let out = extract(&[CrateSpec::lib("ui/profiles.rs")]);
    let dir = out.dir.path();
    // Detected, not the harness's `profile = "kernel"`.
    std::fs::remove_file(dir.join("kanalyze.toml")).unwrap();
    let sysroot = test_harness::nightly_rustc();
    let sysroot = sysroot.parent().and_then(|p| p.parent()).unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
            // The tests' summary cache, not the user's (as in `common::kanalyze`).
            .env(
                "XDG_CACHE_HOME",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/cache-home"),
            )
            .args(["check", "kmir"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        format!(
            "== kanalyze check kmir {}\nexit code: {:?}\n{}{}",
            args.join(" "),
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
        .replace(repo_root().to_str().unwrap(), "$ROOT")
        .replace(dir.to_str().unwrap(), "$TMP")
        .replace(sysroot.to_str().unwrap(), "$SYSROOT")
    };
    let userspace = run(&[]);
    assert!(
        userspace.contains("wait_for_event") && !userspace.contains("getpid` is a C function"),
        "{userspace}"
    );
    let mut all = userspace;
    all.push_str(&run(&["--include-upstream"]));
    all.push_str(&run(&["--profile", "kernel"]));
    // A profile that does not exist is a usage error naming the two.
    all.push_str(&run(&["--profile", "linux"]));
    let json = run(&["--format", "json"]);
    assert!(json.contains("\"profile\": \"userspace\""), "{json}");
    assert!(json.contains("\"upstream_hidden\": 2"), "{json}");
    insta::assert_snapshot!("profiles_and_upstream", all);
}

/// A contract broken in a driver is reported at the driver's code, not at
/// the generic trampoline of another crate that every driver shares.
#[test]
fn callback_in_a_driver_crate() {
    let out = extract(&[
        CrateSpec::lib("ui/crates/kbase.rs"),
        CrateSpec::lib("ui/crates/kdriver.rs").with_extern("kbase"),
    ]);
    let dir = out.dir.path();
    let run = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        // The tests' summary cache, not the user's (as in `common::kanalyze`).
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache-home"),
        )
        .args(["check", "kmir"])
        .current_dir(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout)
        .replace(repo_root().to_str().unwrap(), "$ROOT")
        .replace(dir.to_str().unwrap(), "$TMP");
    let first = stdout.lines().nth(1).unwrap_or_default().to_string();
    assert!(
        first.contains("fixtures/ui/crates/kdriver.rs:16:"),
        "the primary span is the driver's call that leads to the sleep: {stdout}"
    );
    assert!(stdout.contains("the callback C calls is"), "{stdout}");
    assert_eq!(
        stdout.matches("\nerror:").count() + usize::from(stdout.starts_with("error:")),
        1,
        "{stdout}"
    );
    insta::assert_snapshot!("callback_in_a_driver_crate", stdout);
}

/// An ops table built by a generic registration of another crate from a
/// constant the optimizer moves through `core`'s inlined `UnsafeCell::new`:
/// the error is at the driver's call, and the registration note at the
/// registration's own code, not in `core`'s `cell.rs`; at both
/// optimisation levels.
#[test]
fn callback_stored_through_inlined_code() {
    for opt in ["0", "2"] {
        let out = extract(&[
            CrateSpec::lib("ui/crates/kfreq.rs").opt(opt),
            CrateSpec::lib("ui/crates/kfreq_driver.rs")
                .with_extern("kfreq")
                .opt(opt),
        ]);
        let (_, stdout, _) = check_in(out.dir.path(), &[]);
        let first = stdout.lines().nth(1).unwrap_or_default().to_string();
        assert!(
            first.contains("fixtures/ui/crates/kfreq_driver.rs:16:"),
            "opt {opt}: the primary span is the driver's call: {stdout}"
        );
        let stored = stdout
            .split("note: stored in `cpufreq_driver.fast_switch` here")
            .nth(1)
            .and_then(|rest| rest.lines().nth(1))
            .unwrap_or_default();
        assert!(
            stored.contains("fixtures/ui/crates/kfreq.rs:52:"),
            "opt {opt}: the registration note is in `Registration::new`: {stdout}"
        );
        assert!(!stdout.contains("cell.rs"), "opt {opt}: {stdout}");
        assert_eq!(stdout.matches("error:").count(), 1, "opt {opt}: {stdout}");
        // The constant's column differs between the levels (the call of
        // `UnsafeCell::new`, or of `Box::new` around the inlined one).
        if opt == "2" {
            insta::assert_snapshot!("callback_stored_through_inlined_code", stdout);
        }
    }
}

/// A violation inside standard library code the compiler inlined into an
/// upstream generic's instance (`Option::map` calling the user's closure
/// under the helper's spinlock) is shown at the helper's own line, with the
/// inlined location as a note; at both optimisation levels.
#[test]
fn violation_in_inlined_library_code() {
    for opt in ["0", "2"] {
        let out = extract(&[
            CrateSpec::lib("ui/crates/kinline.rs").opt(opt),
            CrateSpec::lib("ui/crates/kinline_user.rs")
                .with_extern("kinline")
                .opt(opt),
        ]);
        let (_, stdout, _) = check_in(out.dir.path(), &[]);
        let first = stdout.lines().nth(1).unwrap_or_default().to_string();
        assert!(
            first.contains("fixtures/ui/crates/kinline.rs:14:"),
            "opt {opt}: the primary span is the helper's own line: {stdout}"
        );
        assert_eq!(stdout.matches("error:").count(), 1, "opt {opt}: {stdout}");
        if opt == "2" {
            assert!(stdout.contains("inlined into"), "{stdout}");
            insta::assert_snapshot!("violation_in_inlined_library_code", stdout);
        }
    }
}

#[test]
fn json_output_is_stable_and_complete() {
    let (code, stdout, _) = check("sleep_in_atomic", "0", "json");
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["version"], 3);
    let findings = v["findings"].as_array().unwrap();
    assert!(!findings.is_empty());
    for f in findings {
        assert!(f["id"].as_str().unwrap().starts_with("KA"));
        assert_eq!(f["kind"], "sleep-in-atomic");
        assert!(f["span"]["line"].as_u64().unwrap() > 0);
    }
    // Ids do not depend on the run.
    let (_, again, _) = check("sleep_in_atomic", "2", "json");
    let ids = |s: &str| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(s).unwrap();
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&stdout), ids(&again));
    insta::assert_snapshot!("sleep_in_atomic_json", stdout);
}

/// The official SARIF 2.1.0 schema, as the `serde-sarif` crate ships it
/// (found through `cargo metadata`, so no copy lives in this repository).
fn sarif_schema() -> jsonschema::Validator {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let meta = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(repo_root())
        .output()
        .unwrap();
    let meta: serde_json::Value = serde_json::from_slice(&meta.stdout).unwrap();
    let manifest = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "serde-sarif")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("serde-sarif is a dependency");
    let schema = std::path::Path::new(manifest)
        .parent()
        .unwrap()
        .join("src/schema.json");
    let mut schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema).unwrap()).unwrap();
    // The official schema's `language` patterns are not valid regexes (a
    // stray `]`), which the validator rejects when it checks the schema;
    // they are corrected here, the rest is used as published.
    fn fix(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) if s == "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$" => {
                *s = "^[a-zA-Z]{2}$|^[a-zA-Z]{2}-[a-zA-Z]{2}$".to_string();
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(fix),
            serde_json::Value::Object(o) => o.values_mut().for_each(fix),
            _ => {}
        }
    }
    fix(&mut schema);
    jsonschema::validator_for(&schema).unwrap()
}

/// SARIF 2.1.0: a log the SARIF model reads back, every finding kind as a
/// rule, and one result per finding with the JSON output's kind, level,
/// location and stable id (as the partial fingerprint dashboards track).
#[test]
fn sarif_output_matches_the_json() {
    // The schema check can fail: a log whose tool has no driver is not SARIF.
    assert!(!sarif_schema().is_valid(&serde_json::json!({
        "version": "2.1.0",
        "runs": [{ "tool": {} }]
    })));
    for fixture in ["sleep_in_atomic", "locks_same_object", "calltrace"] {
        let (code, json, _) = check(fixture, "0", "json");
        let (code2, sarif, stderr) = check(fixture, "0", "sarif");
        assert_eq!(code, code2, "{stderr}");
        let raw: serde_json::Value = serde_json::from_str(&sarif).unwrap();
        let errors: Vec<String> = sarif_schema()
            .iter_errors(&raw)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{fixture}: not valid SARIF 2.1.0: {errors:#?}"
        );
        let log: serde_sarif::sarif::Sarif = serde_json::from_str(&sarif).unwrap();
        assert_eq!(log.version, serde_json::json!("2.1.0"));
        let run = &log.runs[0];
        let rules = run.tool.driver.rules.as_ref().unwrap();
        assert_eq!(
            rules.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            checks::KINDS.iter().map(|k| k.name).collect::<Vec<_>>()
        );
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let findings = json["findings"].as_array().unwrap();
        let results = run.results.as_ref().unwrap();
        assert_eq!(results.len(), findings.len(), "{fixture}");
        for (r, f) in results.iter().zip(findings) {
            assert_eq!(r.rule_id.as_deref(), f["kind"].as_str());
            let index = r.rule_index.unwrap() as usize;
            assert_eq!(rules[index].id, f["kind"].as_str().unwrap());
            assert_eq!(
                serde_json::to_value(r.level.as_ref().unwrap()).unwrap(),
                f["severity"]
            );
            assert_eq!(
                r.partial_fingerprints.as_ref().unwrap()[report::FINGERPRINT],
                f["id"].as_str().unwrap()
            );
            let region = r.locations.as_ref().unwrap()[0]
                .physical_location
                .as_ref()
                .unwrap()
                .region
                .as_ref()
                .unwrap();
            assert_eq!(region.start_line, f["span"]["line"].as_i64());
            assert_eq!(region.start_column, f["span"]["column"].as_i64());
            let text = r.message.text.as_deref().unwrap();
            assert!(text.starts_with(f["message"].as_str().unwrap()), "{text}");
        }
    }
}

/// The output does not depend on the order of the inputs: the UI fixtures,
/// the two-crate callback fixture and two crates that share inlined
/// functions (`order_a`, `order_b`) linked into one program give
/// byte-identical text and JSON whether the dumps come from the directory
/// (path order), reversed, or shuffled.
#[test]
fn output_does_not_depend_on_input_order() {
    let mut crates: Vec<CrateSpec> = [
        "sleep_in_atomic",
        "annotations",
        "locks_double",
        "locks_order",
        "locks_irq",
        "callbacks",
        "drops",
        "lock_by_flag",
    ]
    .iter()
    .map(|f| CrateSpec::lib(&format!("ui/{f}.rs")))
    .collect();
    crates.push(CrateSpec::lib("ui/crates/kbase.rs"));
    crates.push(CrateSpec::lib("ui/crates/kdriver.rs").with_extern("kbase"));
    // Copies of `order_a`'s functions in `order_b`'s dump are named through
    // `order_b::m::order_a::…`: the kept copy and the names must not follow
    // the order.
    crates.push(CrateSpec::lib("ui/crates/order_a.rs"));
    crates.push(CrateSpec::lib("ui/crates/order_b.rs").with_extern("order_a"));
    let out = extract(&crates);
    let dir = out.dir.path();
    let run = |paths: &[String], format: &str| {
        let run = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
            // The tests' summary cache, not the user's (as in `common::kanalyze`).
            .env(
                "XDG_CACHE_HOME",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/cache-home"),
            )
            .arg("check")
            .args(paths)
            .args(["--format", format])
            .current_dir(dir)
            .output()
            .unwrap();
        (run.status.code(), run.stdout, run.stderr)
    };
    let files: Vec<String> = out
        .dump_paths()
        .iter()
        .map(|p| {
            p.strip_prefix(dir)
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(files.len(), 12);
    let mut reversed = files.clone();
    reversed.reverse();
    // A fixed interleaving rather than a random one, so a failure can be
    // rerun: odd positions first, then even.
    let shuffled: Vec<String> = files
        .iter()
        .skip(1)
        .step_by(2)
        .chain(files.iter().step_by(2))
        .cloned()
        .collect();
    let rotated: Vec<String> = files[3..].iter().chain(&files[..3]).cloned().collect();
    for format in ["text", "json"] {
        let reference = run(&["kmir".to_string()], format);
        assert_eq!(
            reference.0,
            Some(1),
            "{}",
            String::from_utf8_lossy(&reference.2)
        );
        let text = String::from_utf8_lossy(&reference.1);
        assert!(text.contains("order_a::nap"), "{text}");
        assert!(
            !text.contains("m::order_a::"),
            "{format}: a name printed through `order_b`'s `extern crate`: {text}"
        );
        for (what, order) in [
            ("files in path order", &files),
            ("reversed", &reversed),
            ("shuffled", &shuffled),
            ("rotated", &rotated),
        ] {
            let other = run(order, format);
            assert!(
                other == reference,
                "{format}, {what}: the output differs from the directory run\n{}",
                String::from_utf8_lossy(&other.1)
            );
        }
    }
}

/// A spec file's `[rust]` entry says what a library call returns
/// (`returns_object_of`): the drops it makes clean, the one it leaves, and
/// an argument index past the function's arguments.
#[test]
fn spec_identity() {
    let out = extract(&[CrateSpec::lib("ui/spec_identity.rs")]);
    let dir = out.dir.path();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    let (code, without, stderr) = check_in(dir, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        instances_in(&without),
        [
            "`spec_identity::remove_borrowed`",
            "`spec_identity::remove_field`",
            "`spec_identity::remove_object`",
            "`spec_identity::remove_local`",
            "`spec_identity::remove_local`",
        ],
        "{without}"
    );
    write(
        "identity.toml",
        "[rust]\n\"spec_identity::List::<T>::remove\" = { returns_object_of = 1 }\n",
    );
    let (code, with, stderr) = check_in(dir, &["--spec", "identity.toml"]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("spec_identity", with);
    write(
        "arity.toml",
        "[rust]\n\"spec_identity::List::<T>::remove\" = { returns_object_of = 2 }\n",
    );
    let (code, _, stderr) = check_in(dir, &["--spec", "arity.toml"]);
    assert_eq!(code, 2, "{stderr}");
    insta::assert_snapshot!("spec_identity_arity", stderr);
}

/// `kanalyze summary` shows what object liveness knows of a function:
/// where its result comes from, which arguments its last-reference
/// expectation is about, and whether it is a sharing clone.
#[test]
fn borrowed_objects_summaries() {
    let out = extract(&[CrateSpec::lib("ui/fp_borrowed_objects.rs")]);
    let dir = out.dir.path();
    let summary = |f: &str| summary_in(dir, f);
    let adopt = summary("fp_borrowed_objects::try_adopt");
    assert!(adopt.contains("returns:     what `arg0` holds"), "{adopt}");
    let consume = summary("fp_borrowed_objects::consume");
    assert!(
        consume.contains("only if what `arg0` holds is the last reference"),
        "{consume}"
    );
    let current = summary("fp_borrowed_objects::current_of");
    assert!(
        current.contains("returns:     a sharing clone of what `arg0` points to"),
        "{current}"
    );
    let clone = summary(
        "<fp_borrowed_objects::arc::Arc<fp_borrowed_objects::Device> as std::clone::Clone>::clone",
    );
    assert!(
        clone.contains("a sharing clone: the copy holds counts"),
        "{clone}"
    );
    let derived = summary("<fp_borrowed_objects::Pair as std::clone::Clone>::clone");
    assert!(
        derived.contains("a sharing clone: the copy holds counts"),
        "{derived}"
    );
    // The caller keeps the clone alive: nothing is expected of its callers.
    let twice = summary("fp_borrowed_objects::twice_under_lock");
    assert!(
        !twice.contains("if a reference it drops is the last one"),
        "{twice}"
    );
}

/// The write and pointer summaries object liveness under a held lock reads
/// (`body::writes`): a helper that writes other fields than the container
/// says so, one that takes an entry out writes the container, and the
/// lookup returns a sharing clone found below the container's field.
#[test]
fn guarded_container_summaries() {
    let out = extract(&[CrateSpec::lib("ui/guarded_container.rs")]);
    let dir = out.dir.path();
    let summary = |f: &str| summary_in(dir, f);
    let get = summary("guarded_container::Inner::get_existing");
    assert!(
        get.contains("returns:     a sharing clone of what `arg0` points to (below `(*arg0).0.0`)"),
        "{get}"
    );
    // The clone's count is written inside a cell: not the container.
    assert!(get.contains("(inside a cell)"), "{get}");
    let adopt = summary("guarded_container::Inner::adopt");
    assert!(adopt.contains("writes:      `(*arg0).1`"), "{adopt}");
    let unlink = summary("guarded_container::Inner::unlink");
    assert!(unlink.contains("writes:      below `(*arg0).0"), "{unlink}");
    let lookup = summary(
        "guarded_container::Table::<guarded_container::arc::Arc<guarded_container::Node>>::get",
    );
    // A lookup writes nothing: no `writes` line.
    assert!(!lookup.contains("writes:"), "{lookup}");
    assert!(
        lookup.contains("points to:   below `(*arg0).0`"),
        "{lookup}"
    );
}

/// The summaries iterating a guarded container needs (docs/preemption.md,
/// "Iterating a container under a held lock"): an rbtree iterator's `next`
/// stores into the iterator only what its cursor reaches and returns a
/// reference through the cursor, not into the iterator; a function that
/// stores a pointer to memory none of its arguments reach (a new buffer, a
/// static, what C returned) does not say so.
#[test]
fn guarded_iteration_summaries() {
    let out = extract(&[CrateSpec::lib("ui/guarded_iteration.rs")]);
    let dir = out.dir.path();
    let summary = |f: &str| summary_in(dir, f);
    let stores = "stores:      into what `arg0` points to, only pointers reached from there";
    let raw = summary(
        "<guarded_iteration::rbtree::IterRaw<u64, guarded_iteration::arc::Arc<guarded_iteration::Node>> as std::iter::Iterator>::next",
    );
    assert!(raw.contains(stores), "{raw}");
    assert!(
        raw.contains("returns:     a borrow of what `arg0` borrows (below `(*arg0).0 (through a pointer stored there)`)"),
        "{raw}"
    );
    let iter = summary(
        "<guarded_iteration::rbtree::Iter<'_, u64, guarded_iteration::arc::Arc<guarded_iteration::Node>> as std::iter::Iterator>::next",
    );
    assert!(iter.contains(stores), "{iter}");
    assert!(iter.contains("(through a pointer stored there)"), "{iter}");
    for f in [
        // `krealloc`'s buffer.
        "guarded_iteration::kvec::KVec::<guarded_iteration::arc::Arc<guarded_iteration::Node>>::reserve",
        // A static's pointer.
        "guarded_iteration::Cursor::<'_>::advance",
        // What a C function returned.
        "guarded_iteration::Cursor::<'_>::advance_foreign",
    ] {
        let s = summary(f);
        assert!(s.contains("writes:"), "{s}");
        assert!(!s.contains("stores:"), "{s}");
    }
}

/// A `[rust]` spec fact, `exclusive_to_handle`: without it every function
/// of `exclusive_fields.rs` is reported; with it (the fixture's
/// `ListArcField::assert_mut`/`assert_ref`, as the built-in spec says of
/// the kernel's) the `clean_*` ones are clean, and the `kept_*` ones, where
/// the handle is lent, captured, or another entry's, or where a second
/// getter of the checked field stores into it, stay reported. The getters
/// inherit the fact, and say which field they return.
#[test]
fn exclusive_fields_with_spec() {
    let out = extract(&[CrateSpec::lib("ui/exclusive_fields.rs")]);
    let dir = out.dir.path();
    let (code, without, stderr) = check_in(dir, &["--no-cache"]);
    assert_eq!(code, 0, "{stderr}");
    let all = reported_functions(&without);
    assert!(
        all.iter().any(|f| f.contains("clean_request"))
            && all.iter().any(|f| f.contains("clean_clear"))
            && all.iter().any(|f| f.contains("clean_through_helper"))
            && all.iter().any(|f| f.contains("clean_store_then_consume")),
        "{without}"
    );
    std::fs::write(
        dir.join("fields.toml"),
        "[rust]\n\"exclusive_fields::list::ListArcField::<U, ID>::assert_mut\" = { exclusive_to_handle = true }\n\"exclusive_fields::list::ListArcField::<U, ID>::assert_ref\" = { exclusive_to_handle = true }\n\"<exclusive_fields::list::ListArc<T, ID> as core::ops::deref::Deref>::deref\" = { points_into_object = 0 }\n",
    )
    .unwrap();
    let (code, with, stderr) = check_in(dir, &["--no-cache", "--spec", "fields.toml"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        reported_functions(&with),
        [
            "`exclusive_fields::kept_closure`",
            "`exclusive_fields::kept_handle_lent`",
            "`exclusive_fields::kept_handle_moved`",
            "`exclusive_fields::kept_other_entry`",
            "`exclusive_fields::kept_store_other`",
            "`exclusive_fields::kept_store_then_take`",
            "`exclusive_fields::kept_two_getters`",
        ],
        "{with}"
    );
    // Which field each getter returns: two getters of `death` name one
    // place, `node_ref` and `node_ref2` another.
    let field_of = |f: &str| {
        let o = kanalyze_in(dir, &["summary", "kmir", f, "--spec", "fields.toml"]);
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.lines()
            .find_map(|l| l.trim().strip_prefix("the contents of field "))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("{f}: {text}"))
    };
    let death = field_of("exclusive_fields::Info::death");
    assert!(
        death.starts_with("`.0` of the `exclusive_fields::Info`"),
        "{death}"
    );
    assert_eq!(field_of("exclusive_fields::Info::death_too"), death);
    assert_eq!(field_of("exclusive_fields::death_of"), death);
    let node_ref = field_of("exclusive_fields::Info::node_ref");
    assert!(node_ref.starts_with("`.1` of"), "{node_ref}");
    assert_eq!(field_of("exclusive_fields::Info::node_ref2"), node_ref);
    let o = kanalyze_in(
        dir,
        &[
            "summary",
            "kmir",
            "exclusive_fields::death_of",
            "--spec",
            "fields.toml",
        ],
    );
    let death_of = String::from_utf8_lossy(&o.stdout);
    assert!(
        death_of.contains("only the holder of the handle it is given reaches"),
        "{death_of}"
    );
}

/// A clone of a field of an object that a handle in an exclusive field
/// keeps alive (fixture `exclusive_handle.rs`): with the spec facts
/// `exclusive_to_handle` (the fixture's `ListArcField` getters' contents)
/// and `points_into_object` (its `ListArc::deref` and `Arc::deref`),
/// Binder's `request_death` shape and a clone one struct deeper through the
/// `&mut` getter are clean; the field's handle replaced, swapped,
/// replaced through the field's cell directly, or retargeted by a helper
/// given the handle or by one given the lock's data, the entry taken out
/// of the
/// lock's data, the lock released and taken again, and a clone of the
/// field's handle itself stay reported, and so does a write into another
/// member of the field (not recognised). Without the spec, every function
/// is reported.
#[test]
fn exclusive_handle_with_spec() {
    let out = extract(&[CrateSpec::lib("ui/exclusive_handle.rs")]);
    let dir = out.dir.path();
    let clean = [
        "`exclusive_handle::clean_member_written`",
        "`exclusive_handle::clean_nested`",
        "`exclusive_handle::clean_node_clone`",
        "`exclusive_handle::clean_request`",
    ];
    let reported = [
        "`exclusive_handle::kept_entry_taken`",
        "`exclusive_handle::kept_field_replaced`",
        "`exclusive_handle::kept_handle_lent`",
        "`exclusive_handle::kept_handle_swapped`",
        "`exclusive_handle::kept_helper_given_data`",
        "`exclusive_handle::kept_inline_getter`",
        "`exclusive_handle::kept_relocked`",
    ];
    let with = cleared_by_spec(
        dir,
        &clean,
        &reported,
        "handles.toml",
        concat!(
            "[rust]\n",
            "\"exclusive_handle::list::ListArcField::<U, ID>::assert_mut\" = { exclusive_to_handle = true }\n",
            "\"exclusive_handle::list::ListArcField::<U, ID>::assert_ref\" = { exclusive_to_handle = true }\n",
            "\"<exclusive_handle::list::ListArc<T, ID> as core::ops::deref::Deref>::deref\" = { points_into_object = 0 }\n",
            "\"<exclusive_handle::arc::Arc<T> as core::ops::deref::Deref>::deref\" = { points_into_object = 0 }\n",
        ),
    );
    assert_eq!(instances_in(&with).len(), reported.len(), "{with}");
    insta::assert_snapshot!("exclusive_handle_with_spec", with);
}

/// `[rust]` spec facts `returns_argument` and `keeps_argument`: without
/// them every function of `kept_by_container.rs` is reported; with them
/// (the fixture's `RBTreeNode::new` and `RBTree::insert`, as the built-in
/// spec says of the kernel's) the `clean_*` ones are clean, and the
/// `kept_*` ones, where the entry is removed again, the lock released in
/// between, or a clone of another object inserted, stay reported.
#[test]
fn kept_by_container_with_spec() {
    let out = extract(&[CrateSpec::lib("ui/kept_by_container.rs")]);
    let dir = out.dir.path();
    let (code, without, stderr) = check_in(dir, &["--no-cache"]);
    assert_eq!(code, 0, "{stderr}");
    let all = reported_functions(&without);
    assert!(
        all.iter().any(|f| f.contains("clean_insert_then_adopt"))
            && all.iter().any(|f| f.contains("clean_insert_then_drop")),
        "{without}"
    );
    std::fs::write(
        dir.join("tree.toml"),
        "[rust]\n\"kept_by_container::rbtree::RBTreeNode::<K, V>::new\" = { returns_argument = 1 }\n\"kept_by_container::rbtree::RBTree::<K, V>::insert\" = { keeps_argument = 1 }\n",
    )
    .unwrap();
    let (code, with, stderr) = check_in(dir, &["--no-cache", "--spec", "tree.toml"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        reported_functions(&with),
        [
            "`kept_by_container::kept_other_object`",
            "`kept_by_container::kept_relocked`",
            "`kept_by_container::kept_removed_before`",
        ],
        "{with}"
    );
}

/// An insert of a key a lookup under the same lock found absent displaces
/// nothing (fixture `absent_key.rs`): with the spec facts `looks_up_key`,
/// `node_key` and `displaces_key_of` on the fixture's tree, Binder's shape
/// (a helper's `Result<Option<_>>` and `?`), `match`, `is_none()`,
/// `!contains_key(..)`, a helper returning the lookup's result, a key by
/// reference, a generic key, a reserved node, a map behind `&mut` and one
/// in a local are clean; another key, a key or node changed, the lock released (by
/// another guard or the same one), the tree written by a helper or
/// replaced, another tree, the insert where the key was found or after a
/// lookup on one way only, a helper whose `None` is not a lookup's or that
/// writes the tree after its lookup, a key looked up in one turn of a loop
/// and inserted in a later one, a tree in a local given another between,
/// and a second insert of the key stay reported. Without the spec, every
/// function is reported. The summaries say what each lookup shows.
#[test]
fn absent_key_with_spec() {
    let out = extract(&[CrateSpec::lib("ui/absent_key.rs")]);
    let dir = out.dir.path();
    let clean = [
        "`absent_key::clean_binder`",
        "`absent_key::clean_by_ref`",
        "`absent_key::clean_contains`",
        "`absent_key::clean_generic::<u32>`",
        "`absent_key::clean_is_none`",
        "`absent_key::clean_local_tree`",
        "`absent_key::clean_match`",
        "`absent_key::clean_through_helper`",
    ];
    let reported = [
        "`absent_key::kept_found`",
        "`absent_key::kept_helper_not_a_lookup`",
        "`absent_key::kept_helper_writes_after_lookup`",
        "`absent_key::kept_key_changed`",
        "`absent_key::kept_key_from_a_later_turn`",
        "`absent_key::kept_local_tree_replaced`",
        "`absent_key::kept_node_changed`",
        "`absent_key::kept_one_way`",
        "`absent_key::kept_other_key`",
        "`absent_key::kept_other_map`",
        "`absent_key::kept_pruned`",
        "`absent_key::kept_relocked_same_guard`",
        "`absent_key::kept_relocked`",
        "`absent_key::kept_replaced`",
        "`absent_key::kept_second_insert`",
    ];
    let with = cleared_by_spec(
        dir,
        &clean,
        &reported,
        "keys.toml",
        concat!(
            "[rust]\n",
            "\"absent_key::rbtree::RBTree::<K, V>::get\" = { looks_up_key = 1 }\n",
            "\"absent_key::rbtree::RBTree::<K, V>::get_mut\" = { looks_up_key = 1 }\n",
            "\"absent_key::rbtree::RBTree::<K, V>::contains_key\" = { looks_up_key = 1 }\n",
            "\"absent_key::rbtree::RBTreeNode::<K, V>::new\" = { node_key = 0 }\n",
            "\"absent_key::rbtree::RBTreeNode::<K, V>::try_new\" = { node_key = 0 }\n",
            "\"absent_key::rbtree::RBTreeNodeReservation::<K, V>::into_node\" = { node_key = 1 }\n",
            "\"absent_key::rbtree::RBTree::<K, V>::insert\" = { displaces_key_of = 1 }\n",
        ),
    );
    // Once each, but twice for `kept_pruned` and `kept_helper_not_a_lookup`
    // (the prune's own drop of a node, and the clone `maybe` returns,
    // dropped under the lock) and once for `kept_second_insert` (its first
    // insert displaces nothing).
    assert_eq!(instances_in(&with).len(), 17, "{with}");
    insta::assert_snapshot!("absent_key_with_spec", with);
    // What the summaries say: a spec'd lookup, Binder's helper (its
    // `Ok(None)`), a helper returning the lookup's result, and none for a
    // helper whose `None` is not only the lookup's.
    let summary = |f: &str| {
        let o = kanalyze_in(dir, &["summary", "kmir", f, "--spec", "keys.toml"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let lookup = "a lookup: returns the shape";
    assert!(
        summary("absent_key::Inner::existing")
            .contains("a lookup: returns the shape [0, 0] (discriminants, outside in) only when the map at `(*arg0).0` holds no entry with the key `arg1`"),
    );
    assert!(
        summary("absent_key::Inner::find").contains(
            "a lookup: returns the shape [0] (discriminants, outside in) only when the map at `(*arg0).0` holds no entry with the key `arg1`"
        )
    );
    assert!(!summary("absent_key::Inner::maybe").contains(lookup));
    assert!(!summary("absent_key::Inner::looked_up_then_swapped").contains(lookup));
    assert!(
        summary(
            "absent_key::rbtree::RBTree::<u64, absent_key::arc::Arc<absent_key::Node>>::insert"
        )
        .contains("an insert: returns the entry it displaced")
    );
}

/// A drop glue whose last-reference part comes from one field says so (and
/// so does `mem::drop` of such a value); a glue with two handles, one whose
/// `Drop` impl releases a handle too, and an enum's glue do not.
#[test]
fn last_field_summaries() {
    let out = extract(&[CrateSpec::lib("ui/identity.rs")]);
    let dir = out.dir.path();
    let summary = |f: &str| summary_in(dir, f);
    let field = "and only from its field";
    let devref = summary("drop_glue::<identity::DevRef>");
    assert!(
        !devref.contains(field),
        "two handles in a `DevRef` here: {devref}"
    );
    let holder = summary("drop_glue::<identity::Holder>");
    assert!(!holder.contains(field), "{holder}");
    let handle =
        summary("drop_glue::<std::option::Option<identity::handle::Handle<identity::Device>>>");
    assert!(!handle.contains(field), "{handle}");

    let out = extract(&[CrateSpec::lib("ui/fp_identity.rs")]);
    let dir = out.dir.path();
    for f in [
        "drop_glue::<fp_identity::DevRef>",
        "mem::drop::<fp_identity::DevRef>",
    ] {
        let s = summary_in(dir, f);
        assert!(s.contains("and only from its field `.0`"), "{f}: {s}");
    }
}

/// "Both empty or one object" tests (`Summary::same_or_none`) against a
/// handle in the object a local handle counts: only the spec's
/// `points_into_object` on the handle's `Deref` says the reference points
/// into that object (fixture `same_or_none_objects.rs`). The summary names
/// the two places.
#[test]
fn same_or_none_objects_with_spec() {
    let out = extract(&[CrateSpec::lib("ui/same_or_none_objects.rs")]);
    let dir = out.dir.path();
    let test = summary_in(dir, "same_or_none_objects::Transaction::is_stacked_on");
    assert!(
        test.contains("returns non-zero only if `(*arg0).1` and `(*arg1)` both hold no handle, or handles holding one pointer"),
        "{test}"
    );
    let (_, without, _) = check_in(dir, &["--no-cache"]);
    let traps = [
        "`same_or_none_objects::start_dropped`",
        "`same_or_none_objects::start_given_away`",
        "`same_or_none_objects::start_rewritten`",
    ];
    // Sorted: `start_…` comes before `start`.
    assert_eq!(
        reported_functions(&without),
        [&traps[..], &["`same_or_none_objects::start`"][..]].concat(),
        "{without}"
    );
    std::fs::write(
        dir.join("handles.toml"),
        "[rust]\n\"<same_or_none_objects::handle::Handle<T> as core::ops::deref::Deref>::deref\" = { points_into_object = 0, note = \"a reference into the counted object\" }\n",
    )
    .unwrap();
    let (_, with, _) = check_in(dir, &["--no-cache", "--spec", "handles.toml"]);
    assert_eq!(reported_functions(&with), traps, "{with}");
    // Each trap: the store, not only the drop or write before it.
    let source =
        std::fs::read_to_string(repo_root().join("fixtures/ui/same_or_none_objects.rs")).unwrap();
    for f in traps {
        let name = f
            .trim_matches('`')
            .trim_start_matches("same_or_none_objects::");
        let start = source
            .find(&format!("pub fn {name}("))
            .unwrap_or_else(|| panic!("{name}"));
        let line = source[..start].lines().count()
            + source[start..]
                .lines()
                .position(|l| l.contains("inner.current_transaction = Some(new)"))
                .unwrap_or_else(|| panic!("{name}: no store"))
            + 1;
        let at = format!("same_or_none_objects.rs:{line}:");
        assert!(with.contains(&at), "{name} at {at}: {with}");
    }
}

/// Drops of an iterator its `next` found empty (fixture `exhausted.rs`):
/// with the spec's `empty_after_none` on the fixture's `DrainAll::next`, a
/// drop reached only through the `None` arm of a switch on what `next`
/// returned, with nothing touching the iterator in between, releases no
/// last reference. `for`, `while let`, `loop`/`match`, a generic function
/// and an early exit that forgets the iterator are clean; a `break`, a new
/// iterator in the local (after the loop, or between the `next` and the
/// switch on it), a `None` the function wrote itself, an iterator the
/// spec says nothing of, and a pointer to the iterator that outlives the
/// loop stay reported. Without the spec, every function is reported.
#[test]
fn exhausted_with_spec() {
    let out = extract(&[CrateSpec::lib("ui/exhausted.rs")]);
    let dir = out.dir.path();
    let clean = [
        "`exhausted::move_into`",
        "`exhausted::move_out_generic::<exhausted::arc::Arc<exhausted::Proc>>`",
        "`exhausted::move_out_named`",
        "`exhausted::move_out`",
    ];
    let reported = [
        "`exhausted::drain_twice`",
        "`exhausted::forced_none`",
        "`exhausted::move_first`",
        "`exhausted::move_some`",
        "`exhausted::overwritten_none`",
        "`exhausted::refill_before_match`",
        "`exhausted::refill_through_pointer`",
    ];
    let (_, without, _) = check_in(dir, &["--no-cache"]);
    let mut all = [&clean[..], &reported[..]].concat();
    all.sort();
    assert_eq!(reported_functions(&without), all, "{without}");
    std::fs::write(
        dir.join("exhausted.toml"),
        concat!(
            "[rust]\n",
            "\"<exhausted::kvec::DrainAll<'vec, T> as core::iter::traits::iterator::Iterator>::next\" = { empty_after_none = true, note = \"None only once no element is left\" }\n",
        ),
    )
    .unwrap();
    let (_, with, _) = check_in(dir, &["--no-cache", "--spec", "exhausted.toml"]);
    assert_eq!(reported_functions(&with), reported, "{with}");
    // `drain_twice` once (the new iterator; the old one's drop, which the
    // assignment runs, is clean), `refill_through_pointer` twice (inside
    // `refill`, and at the end), `refill_before_match` three times (the
    // old iterator's drop the assignment runs, the new one given away,
    // and the new one dropped on the `None` way), `overwritten_none` and
    // `forced_none` twice (what `next` returned, dropped by the write of
    // `None` over it, and the iterator).
    assert_eq!(instances_in(&with).len(), 12, "{with}");
    insta::assert_snapshot!("exhausted_with_spec", with);
}

/// A container that drops only what its predicate rejects (the spec's
/// `drops_rejected_by`), given a closure rejecting only the object a
/// reference its caller borrows points to (fixture `rejecting.rs`). The
/// summaries' liveness contracts say each step.
#[test]
fn rejecting_with_spec() {
    let out = extract(&[CrateSpec::lib("ui/rejecting.rs")]);
    let dir = out.dir.path();
    let keep = [
        "`rejecting::keep_by_id`",
        // Sorted: `…_handle` comes before the closing backtick.
        "`rejecting::keep_only_handle`",
        "`rejecting::keep_only`",
        "`rejecting::keep_owned`",
    ];
    let (_, without, _) = check_in(dir, &["--no-cache"]);
    assert_eq!(
        reported_functions(&without),
        [
            &["`rejecting::clean_local`"][..],
            &keep[..],
            &[
                "`rejecting::remove_by_handle`",
                "`rejecting::remove_listener`",
                "`rejecting::remove_owner`"
            ][..]
        ]
        .concat(),
        "{without}"
    );
    std::fs::write(
        dir.join("rejecting.toml"),
        concat!(
            "[rust]\n",
            "\"<rejecting::arc::Arc<T> as core::ops::deref::Deref>::deref\" = { points_into_object = 0, note = \"a reference into the counted object\" }\n",
            "\"rejecting::kvec::KVec::<T>::retain\" = { drops_rejected_by = 1, note = \"drops only the elements the predicate rejects\" }\n",
        ),
    )
    .unwrap();
    let (_, with, _) = check_in(dir, &["--no-cache", "--spec", "rejecting.toml"]);
    assert_eq!(reported_functions(&with), keep, "{with}");
    // Each at its `retain`.
    let source = std::fs::read_to_string(repo_root().join("fixtures/ui/rejecting.rs")).unwrap();
    // The line of the `retain` call in function `name`.
    let retain_line = |name: &str| {
        let start = source
            .find(&format!("pub fn {name}("))
            .unwrap_or_else(|| panic!("{name}"));
        source[..start].lines().count()
            + source[start..]
                .lines()
                .position(|l| l.contains(".retain("))
                .unwrap_or_else(|| panic!("{name}: no retain"))
            + 1
    };
    for f in keep {
        let name = f.trim_matches('`').trim_start_matches("rejecting::");
        let line = retain_line(name);
        assert!(
            with.contains(&format!("rejecting.rs:{line}:")),
            "{name} at {line}: {with}"
        );
    }
    let summary = |f: &str| {
        let o = kanalyze_in(dir, &["summary", "kmir", f, "--spec", "rejecting.toml"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // The address test ties its arguments when it returns true; the
    // predicates that reject one object tie it to the captured reference
    // when they return false (and a predicate keeping one object does not).
    let eq = summary("ptr::eq::<rejecting::Process>");
    assert!(
        eq.contains("when the result is 1: `(*arg0)` held by the object `(*arg1)` is in"),
        "{eq}"
    );
    let by_handle = summary("rejecting::remove_by_handle::{closure#0}");
    assert!(
        by_handle.contains("when the result is 0: `(*(*arg0).0)` held by `(*arg1)`"),
        "{by_handle}"
    );
    let closure = summary("rejecting::remove_listener::{closure#0}");
    assert!(
        closure.contains("when the result is 0: `(*(*arg0).0)` held by `(*arg1)`"),
        "{closure}"
    );
    let kept = summary("rejecting::keep_only::{closure#0}");
    assert!(!kept.contains("when the result is 0"), "{kept}");
    let retain = summary(&format!("rejecting.rs:{}:", retain_line("remove_listener")));
    assert!(
        retain.contains("releases only what its predicate `arg1` rejects"),
        "{retain}"
    );
}

/// `last_place` in the summaries: the glue of an enum whose payload holds
/// the `Option` names the place below both variants; a glue whose `Drop`
/// impl writes the field first names none (fixtures `fp_variant_payload.rs`,
/// `variant_payload.rs`).
#[test]
fn variant_payload_summaries() {
    let out = extract(&[CrateSpec::lib("ui/fp_variant_payload.rs")]);
    let state = summary_in(out.dir.path(), "drop_glue::<fp_variant_payload::State>");
    assert!(
        state.contains("from dropping `(*arg0) as variant 1.0.1 as variant 1.0`"),
        "{state}"
    );
    let out = extract(&[CrateSpec::lib("ui/variant_payload.rs")]);
    let refilling = summary_in(out.dir.path(), "drop_glue::<variant_payload::Refilling>");
    assert!(
        refilling.contains("if a reference it drops is the last one")
            && !refilling.contains("from dropping"),
        "{refilling}"
    );
}

/// A write into the object an entry counts, made through the entry, is
/// not a write of the container holding the entry (fixture
/// `handle_objects.rs`): the handle's `Deref` body shows that it points
/// into the object it counts, so the `[rust]` spec fact that says so
/// (`points_into_object`) is not needed, and changes nothing.
#[test]
fn handle_objects_with_spec() {
    let out = extract(&[CrateSpec::lib("ui/handle_objects.rs")]);
    let dir = out.dir.path();
    let (code, without, stderr) = check_in(dir, &["--no-cache"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(instances_in(&without), Vec::<String>::new(), "{without}");
    std::fs::write(
        dir.join("handles.toml"),
        "[rust]\n\"<handle_objects::arc::Arc<T> as core::ops::deref::Deref>::deref\" = { points_into_object = 0, note = \"a reference into the counted object\" }\n",
    )
    .unwrap();
    let (code, with, stderr) = check_in(dir, &["--no-cache", "--spec", "handles.toml"]);
    assert_eq!(code, 0, "{stderr}");
    // Nothing but summary lines (the files used, the counts).
    assert!(
        with.lines().all(|l| l.starts_with("kanalyze: "))
            && with.contains("kanalyze: no errors or warnings"),
        "{with}"
    );
}

/// A generated body of thousands of branches, each taking a spinlock or
/// dropping a value whose drop may sleep: the analysis finishes with its
/// paths widened and says so; under a small step budget it stops, gives
/// the body an unknown function's summary (a caller in atomic context is
/// then told it may sleep) and names it; and the output is the same on one
/// thread and on several.
#[test]
fn generated_body_is_widened_and_reported_under_a_budget() {
    const BRANCHES: usize = 1500;
    let src = tempfile::tempdir().unwrap();
    let lock = test_harness::fixtures_dir().join("ui/support/lock.rs");
    let mut text = format!(
        "#[path = {:?}]\nmod lock;\nuse lock::*;\n\n\
         pub struct Noisy(pub u32);\n\
         impl Drop for Noisy {{\n    fn drop(&mut self) {{\n        if self.0 == 7 {{\n            sleep();\n        }}\n    }}\n}}\n\n\
         pub fn generated(k: &[u8; {BRANCHES}]) {{\n    let mut raw = 0u32;\n",
        lock.display()
    );
    for i in 0..BRANCHES / 2 {
        text.push_str(&format!("    let d{i} = Noisy({i});\n"));
    }
    for i in 0..BRANCHES / 2 {
        let (a, b) = (2 * i, 2 * i + 1);
        text.push_str(&format!(
            "    if k[{a}] == 1 {{\n        unsafe {{ spin_lock(&mut raw) }};\n    }}\n    if k[{b}] == 1 {{\n        drop(d{i});\n    }}\n"
        ));
    }
    text.push_str(
        "}\n\npub fn caller(k: &[u8; 1500]) {\n    let mut raw = 0u32;\n    unsafe { spin_lock(&mut raw) };\n    generated(k);\n    unsafe { spin_unlock(&mut raw) };\n}\n",
    );
    let path = src.path().join("generated.rs");
    std::fs::write(&path, text).unwrap();
    let out = extract(&[CrateSpec::lib(path.to_str().unwrap())]);
    let dir = out.dir.path();
    let imprecise = |args: &[&str]| -> (serde_json::Value, String) {
        let (_, json, stderr) =
            check_in(dir, &[&["--format", "json", "--no-cache"], args].concat());
        let doc: serde_json::Value =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        (doc["summary"]["imprecise"].clone(), json)
    };
    let body = |v: &serde_json::Value| -> serde_json::Value {
        v["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["function"] == "generated::generated")
            .cloned()
            .unwrap_or_else(|| panic!("`generated` is not named: {v}"))
    };
    // The default budget: widened, finished.
    let (widened, _) = imprecise(&[]);
    let g = body(&widened);
    assert_eq!(g["worst"], "paths", "{widened}");
    assert!(g["bounds"]["steps"].is_null(), "{widened}");
    // A small budget: stopped, named first, and its caller, in atomic
    // context, told that it may sleep.
    let (stopped, json) = imprecise(&["--step-budget", "20000"]);
    assert_eq!(
        stopped["functions"][0]["function"], "generated::generated",
        "{stopped}"
    );
    assert_eq!(stopped["functions"][0]["worst"], "steps", "{stopped}");
    assert!(
        json.contains("\"function\": \"generated::caller\""),
        "the caller of a body over its budget is told it may sleep:\n{json}"
    );
    let (_, text, _) = check_in(dir, &["--no-cache", "--step-budget", "20000"]);
    assert!(
        text.contains("analysed imprecisely: `generated::generated` (steps over the budget"),
        "{text}"
    );
    // Deterministic: the same on one thread and on two.
    let threads = |n: &str| {
        Command::new(env!("CARGO_BIN_EXE_kanalyze"))
            .env("RAYON_NUM_THREADS", n)
            .args([
                "check",
                "kmir",
                "--format",
                "json",
                "--no-cache",
                "--step-budget",
                "20000",
            ])
            .current_dir(dir)
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(threads("1"), threads("2"));
}
