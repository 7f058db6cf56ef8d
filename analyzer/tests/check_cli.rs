//! `kanalyze check` and `kanalyze summary`: flags, spec files and bad input.

use std::path::Path;

mod common;

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

#[test]
fn default_command_is_check_and_exit_status_says_findings() {
    let out = demo();
    let (code, stdout, stderr) = kanalyze(&["kmir"], out.dir.path());
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.contains("error: this call expects the preemption count to be 0"),
        "{stdout}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("kanalyze: 1 error in 2 crates ("),
        "{stdout}"
    );
    let (code2, stdout2, _) = kanalyze(&["check", "kmir"], out.dir.path());
    assert_eq!((code, &stdout), (code2, &stdout2));
}

/// In the implicit `check` form, check's flags may come before the path
/// too (clap alone said "unexpected argument").
#[test]
fn default_command_takes_flags_before_the_path() {
    let out = demo();
    let dir = out.dir.path();
    let (code, stdout, stderr) = kanalyze(&["check", "kmir", "--format", "json"], dir);
    assert_eq!(code, 1, "{stderr}");
    for args in [
        &["--format", "json", "kmir"][..],
        &["kmir", "--format", "json"],
        &["--format=json", "kmir"],
        &["--format", "json", "check", "kmir"],
    ] {
        let (code2, stdout2, stderr2) = kanalyze(args, dir);
        assert_eq!((code2, &stdout2), (code, &stdout), "{args:?}: {stderr2}");
    }
}

#[test]
fn summary_of_an_unknown_name_suggests_similar_names() {
    let out = demo();
    let (code, _, stderr) = kanalyze(&["summary", "kmir", "msleap"], out.dir.path());
    assert_eq!(code, 2);
    assert!(stderr.contains("similar names:"), "{stderr}");
    insta::assert_snapshot!("summary_unknown_name", stderr);
}

#[test]
fn spec_file_overrides_the_builtin() {
    let out = demo();
    let dir = out.dir.path();
    // Declare msleep harmless: the annotation on `klock::msleep` still says
    // it may sleep, so the finding stays — annotations win over the spec.
    std::fs::write(
        dir.join("extra.toml"),
        "[fn.msleep]\nexpect = \"0..\"\nnote = \"test override\"\n",
    )
    .unwrap();
    let (code, _, stderr) = kanalyze(&["kmir", "--spec", "extra.toml"], dir);
    assert_eq!(code, 1, "{stderr}");
}

#[test]
fn bad_spec_files_are_usage_errors() {
    let out = demo();
    let dir = out.dir.path();
    std::fs::write(
        dir.join("broken.toml"),
        "[fn.spin_lock]\nadjust = \"one\"\n",
    )
    .unwrap();
    let (code, stdout, stderr) = kanalyze(&["kmir", "--spec", "broken.toml"], dir);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    insta::assert_snapshot!("bad_spec", stderr);
    let (code, _, stderr) = kanalyze(&["kmir", "--spec", "missing.toml"], dir);
    assert_eq!(code, 2);
    insta::assert_snapshot!("missing_spec", stderr);
}

/// An argument index past the C function's arguments (known from the
/// program's calls) is a spec error at the key's position; the built-in
/// spec fits the calls.
#[test]
fn spec_argument_index_checked_against_the_calls() {
    let out = demo();
    let dir = out.dir.path();
    std::fs::write(
        dir.join("arity.toml"),
        "[fn]\n\
         spin_lock = { lock = { op = \"acquire\", arg = 99, kind = \"spin\" } }\n\
         msleep = { sleeps_if_flag = { arg = 77, mask = 1 } }\n\
         mutex_lock = { callbacks = [{ arg = 33, context = \"0\", role = \"r\" }] }\n",
    )
    .unwrap();
    let (code, stdout, stderr) = kanalyze(&["kmir", "--spec", "arity.toml"], dir);
    assert_eq!(code, 2, "{stdout}");
    assert!(stdout.is_empty());
    insta::assert_snapshot!("spec_arity", stderr);
    let (_, _, stderr) = kanalyze(&["kmir"], dir);
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, stderr) = kanalyze(&[], tmp.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("Usage: kanalyze <COMMAND>"), "{stderr}");
    let (code, _, stderr) = kanalyze(&["check", "x", "--format", "xml"], tmp.path());
    assert_eq!(code, 2);
    assert!(
        stderr.contains("invalid value 'xml' for '--format <FORMAT>'"),
        "{stderr}"
    );
    let (code, _, stderr) = kanalyze(&["nothing-here"], tmp.path());
    assert_eq!(code, 2);
    insta::assert_snapshot!("missing_input", stderr);
}

#[test]
fn summary_explains_where_an_expectation_comes_from() {
    let out = demo();
    let (code, stdout, stderr) = kanalyze(
        &["summary", "kmir", "demo_driver::wait_for_hardware"],
        out.dir.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("summary_wait_for_hardware", stdout);
    let (code, stdout, _) = kanalyze(&["summary", "kmir", "klock::msleep"], out.dir.path());
    assert_eq!(code, 0);
    assert!(
        stdout.contains("from:        annotation on `klock::msleep` (checked against the body)"),
        "{stdout}"
    );
    let (code, _, stderr) = kanalyze(&["summary", "kmir", "lock"], out.dir.path());
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: `lock` matches"), "{stderr}");
    let (code, _, stderr) = kanalyze(&["summary", "kmir", "no_such_fn"], out.dir.path());
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: no function matches `no_such_fn`"),
        "{stderr}"
    );
}

#[test]
fn spec_functions_and_unknown_c_functions_in_summaries() {
    let out = demo();
    let (_, stdout, _) = kanalyze(
        &["summary", "kmir", "klock::bindings::spin_lock"],
        out.dir.path(),
    );
    assert!(stdout.contains("adjustment:  1"), "{stdout}");
    assert!(
        stdout.contains("from:        the spec entry of `spin_lock`"),
        "{stdout}"
    );
}

#[test]
fn finding_levels_deny_warn_allow() {
    let out = extract(&[CrateSpec::lib("ui/last_reference.rs")]);
    let dir = out.dir.path();
    let last = |s: &str| s.lines().last().unwrap_or_default().to_string();
    // By default: two errors (code that runs whatever the count), five warnings.
    let (code, stdout, _) = kanalyze(&["kmir"], dir);
    assert_eq!(code, 1);
    assert!(
        last(&stdout).starts_with("kanalyze: 2 errors, 5 warnings"),
        "{stdout}"
    );
    // Denied, the last-reference warnings are errors.
    let (code, stdout, _) = kanalyze(&["kmir", "--deny", "last-reference-in-atomic"], dir);
    assert_eq!(code, 1);
    assert!(
        last(&stdout).starts_with("kanalyze: 7 errors in"),
        "{stdout}"
    );
    // Allowed, they are gone; the error demoted to a warning leaves exit 0.
    let (code, stdout, _) = kanalyze(
        &[
            "kmir",
            "--allow",
            "last-reference-in-atomic",
            "--warn",
            "sleep-in-atomic",
        ],
        dir,
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(
        last(&stdout).starts_with("kanalyze: 2 warnings in"),
        "{stdout}"
    );
    // The JSON output agrees.
    let (_, json, _) = kanalyze(
        &[
            "kmir",
            "--format",
            "json",
            "--deny",
            "last-reference-in-atomic",
        ],
        dir,
    );
    assert_eq!(json.matches("\"severity\": \"error\"").count(), 7, "{json}");
}

#[test]
fn bad_finding_levels_are_usage_errors() {
    let out = demo();
    let dir = out.dir.path();
    let (code, stdout, stderr) = kanalyze(&["kmir", "--deny", "sleep-in-atomc"], dir);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    insta::assert_snapshot!("unknown_finding_kind", stderr);
    let (code, _, stderr) = kanalyze(
        &["kmir", "--deny", "lock-leak", "--allow", "lock-leak"],
        dir,
    );
    assert_eq!(code, 2);
    insta::assert_snapshot!("finding_kind_given_twice", stderr);
}

#[test]
fn baseline_shows_only_new_findings() {
    let out = extract(&[CrateSpec::lib("ui/last_reference.rs")]);
    let dir = out.dir.path();
    let (_, json, _) = kanalyze(&["kmir", "--format", "json"], dir);
    std::fs::write(dir.join("all.json"), &json).unwrap();
    // Everything is known: nothing to report, exit 0.
    let (code, stdout, stderr) = kanalyze(&["kmir", "--baseline", "all.json"], dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        // Nothing but summary lines (the files used, the counts).
        stdout.lines().all(|l| l.starts_with("kanalyze: "))
            && stdout.contains("kanalyze: no errors or warnings in 1 crate (")
            && stdout.contains("; 7 known findings in the baseline not shown"),
        "{stdout}"
    );
    // A baseline without the errors: they are new again.
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let findings = doc["findings"].as_array_mut().unwrap();
    findings.retain(|f| f["severity"] != "error");
    std::fs::write(dir.join("warnings.json"), doc.to_string()).unwrap();
    let (code, stdout, _) = kanalyze(&["kmir", "--baseline", "warnings.json"], dir);
    assert_eq!(code, 1);
    assert_eq!(
        stdout.matches("\nerror: ").count() + usize::from(stdout.starts_with("error: ")),
        2,
        "{stdout}"
    );
    assert!(
        stdout.contains("; 5 known findings in the baseline not shown"),
        "{stdout}"
    );
    let (_, json2, _) = kanalyze(
        &["kmir", "--format", "json", "--baseline", "warnings.json"],
        dir,
    );
    let doc2: serde_json::Value = serde_json::from_str(&json2).unwrap();
    assert_eq!(doc2["summary"]["baselined"], 5);
    assert_eq!(doc2["findings"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_baselines_are_usage_errors() {
    let out = demo();
    let dir = out.dir.path();
    std::fs::write(dir.join("text.json"), "error: not json\n").unwrap();
    std::fs::write(dir.join("v9.json"), r#"{"version": 9, "findings": []}"#).unwrap();
    std::fs::write(dir.join("noversion.json"), r#"{"findings": []}"#).unwrap();
    std::fs::write(dir.join("nofindings.json"), r#"{"version": 1}"#).unwrap();
    std::fs::write(
        dir.join("noid.json"),
        r#"{"version": 1, "findings": [{"kind": "x"}]}"#,
    )
    .unwrap();
    let mut all = String::new();
    for file in [
        "missing.json",
        "text.json",
        "v9.json",
        "noversion.json",
        "nofindings.json",
        "noid.json",
    ] {
        let (code, stdout, stderr) = kanalyze(&["kmir", "--baseline", file], dir);
        assert_eq!(code, 2, "{file}: {stderr}");
        assert!(stdout.is_empty(), "{file}: {stdout}");
        all.push_str(&stderr);
    }
    insta::assert_snapshot!("bad_baselines", all);
}

#[test]
fn summary_shows_last_reference_expectations() {
    let out = extract(&[CrateSpec::lib("ui/last_reference.rs")]);
    let dir = out.dir.path();
    let (code, stdout, stderr) =
        kanalyze(&["summary", "kmir", "last_reference::Counted::put"], dir);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("summary_counted_put", stdout);
    let (code, stdout, _) = kanalyze(
        &[
            "summary",
            "kmir",
            "last_reference::arc::Refcount::dec_and_test",
        ],
        dir,
    );
    assert_eq!(code, 0);
    assert!(stdout.contains("returns a last-reference test"), "{stdout}");
}

/// A broken input never lets a run pass: a corrupt dependency dump next to
/// good ones, or a mistyped path next to a valid one, still shows what the
/// rest gives, but the exit status is 2 and the JSON summary names the
/// input, whatever the findings.
#[test]
fn a_broken_input_fails_the_run() {
    let out = demo();
    let dir = out.dir.path();
    let klock = out
        .dump_paths()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("klock"))
        .unwrap();
    // With every dump readable and the finding allowed, the run passes.
    let (code, _, stderr) = kanalyze(&["check", "kmir", "--allow", "sleep-in-atomic"], dir);
    assert_eq!(code, 0, "{stderr}");

    // A mistyped path next to the real directory.
    let (code, stdout, stderr) = kanalyze(
        &[
            "check",
            "kmir",
            "kmri",
            "--allow",
            "sleep-in-atomic",
            "--format",
            "json",
        ],
        dir,
    );
    assert_eq!(code, 3, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        v["summary"]["skipped_inputs"],
        serde_json::json!([{"path": "kmri", "reason": "does not exist"}])
    );
    assert_eq!(v["summary"]["partial"], true);
    assert!(stderr.contains("error: `kmri` does not exist"), "{stderr}");
    assert!(
        stderr.contains("warning: 1 of 3 input(s) could not be used and were skipped"),
        "{stderr}"
    );
    // `--allow-partial` accepts it; the last line still says so.
    let (code, stdout, _) = kanalyze(
        &[
            "check",
            "kmir",
            "kmri",
            "--allow-partial",
            "--allow",
            "sleep-in-atomic",
        ],
        dir,
    );
    assert_eq!(code, 0);
    assert!(
        stdout.lines().last().unwrap_or_default().starts_with(
            "kanalyze: partial result: 1 input could not be used: `kmri` (does not exist)"
        ),
        "{stdout}"
    );
    // `report` too: exit 3 over a partial program, 0 with `--allow-partial`;
    // the page is written either way and says how many inputs were skipped.
    for (flag, expected) in [(None, 3), (Some("--allow-partial"), 0)] {
        let mut args = vec!["report", "kmir", "kmri", "--html", "html"];
        args.extend(flag);
        let (code, _, stderr) = kanalyze(&args, dir);
        assert_eq!(code, expected, "{flag:?}: {stderr}");
        let page = std::fs::read_to_string(dir.join("html/index.html")).unwrap();
        assert!(
            page.contains("inputs skipped (the result is partial)"),
            "{flag:?}"
        );
        std::fs::remove_dir_all(dir.join("html")).unwrap();
    }
    // A path named twice, or a file and its directory, is one input.
    let (code, stdout, stderr) = kanalyze(
        &[
            "check",
            "kmir",
            "kmir",
            "kmir/../kmir",
            "--allow",
            "sleep-in-atomic",
        ],
        dir,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("in 2 crates"), "{stdout}");
    assert!(!stderr.contains("identical"), "{stderr}");

    // The dependency's dump corrupt: the driver is still analysed (its
    // finding is printed), but the run fails.
    let bytes = std::fs::read(&klock).unwrap();
    std::fs::write(&klock, &bytes[..bytes.len() / 3]).unwrap();
    let (code, stdout, stderr) = kanalyze(&["check", "kmir"], dir);
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(stdout.contains("in 1 crate ("), "{stdout}");
    assert!(stderr.contains("truncated"), "{stderr}");
    assert!(
        stdout.contains("kanalyze: partial result: 1 input could not be used: `kmir/klock-"),
        "{stdout}"
    );
}

/// `kanalyze explain`: the index of every kind, one kind's explanation
/// (also as rustc's `--explain KIND`), and an unknown kind with a
/// suggestion.
#[test]
fn explain_kinds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (code, index, stderr) = kanalyze(&["explain"], dir);
    assert_eq!(code, 0, "{stderr}");
    for kind in checks::KINDS {
        assert!(
            index.contains(&format!("  {} ", kind.name)),
            "{} missing from the index:\n{index}",
            kind.name
        );
    }
    // Each family is one heading, its kinds under it.
    for kind in checks::KINDS {
        let heading = format!("\n{}:\n", kind.family);
        assert_eq!(
            index.matches(&heading).count(),
            1,
            "{} is not one heading:\n{index}",
            kind.family
        );
    }
    // Every kind explains itself with an example and a fix, and says its
    // first sentence once.
    for kind in checks::KINDS {
        let (_, text, _) = kanalyze(&["explain", kind.name], dir);
        let paragraphs: Vec<&str> = text.split("\n\n").collect();
        let opening = |p: &str| p.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
        assert_ne!(
            opening(paragraphs[1]),
            opening(paragraphs[2]),
            "{}: says its first sentence twice:\n{text}",
            kind.name
        );
    }
    for kind in checks::KINDS {
        let (code, text, _) = kanalyze(&["explain", kind.name], dir);
        assert_eq!(code, 0);
        assert!(
            text.contains("\nExample:\n\n    ") && text.contains("\nFix: "),
            "{}: {text}",
            kind.name
        );
    }
    let (code, one, _) = kanalyze(&["explain", "double-lock"], dir);
    assert_eq!(code, 0);
    let (code2, same, _) = kanalyze(&["--explain", "double-lock"], dir);
    let (code3, same2, _) = kanalyze(&["--explain=double-lock"], dir);
    assert_eq!((code, &one), (code2, &same));
    assert_eq!((code, &one), (code3, &same2));
    insta::assert_snapshot!("explain_double_lock", one);
    let (code, stdout, stderr) = kanalyze(&["explain", "dobule-lock"], dir);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    insta::assert_snapshot!("explain_unknown", stderr);
}

/// `kanalyze.toml`: found in the current directory or an ancestor (or named
/// with `--config`), its settings applied, flags overriding it, the effective
/// settings printed with their origin, and every mistake an error into the
/// file.
#[test]
fn configuration_file() {
    let out = demo();
    let dir = out.dir.path();
    let sub = dir.join("work/deeper");
    std::fs::create_dir_all(&sub).unwrap();
    let kmir = dir.join("kmir");
    let kmir = kmir.to_str().unwrap();
    let write = |text: &str| std::fs::write(dir.join("kanalyze.toml"), text).unwrap();

    // Found from a subdirectory; its format and levels apply.
    write("format = \"json\"\nprofile = \"kernel\"\n\n[levels]\nsleep-in-atomic = \"warn\"\n");
    let (code, stdout, stderr) = kanalyze(&["check", kmir], &sub);
    assert_eq!(code, 0, "the error is a warning by the file: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["findings"][0]["severity"], "warning");
    // Flags override it.
    let (code, stdout, _) = kanalyze(
        &[
            "check",
            kmir,
            "--format",
            "text",
            "--deny",
            "sleep-in-atomic",
        ],
        &sub,
    );
    assert_eq!(code, 1);
    assert!(stdout.starts_with("error: "), "{stdout}");
    let (code, printed, _) = kanalyze(&["check", "--print-config", "--allow", "fn-pointer"], &sub);
    assert_eq!(code, 0);
    insta::assert_snapshot!(
        "print_config",
        printed.replace(dir.to_str().unwrap(), "$TMP")
    );

    // Mistakes, each an error into the file (exit 2, nothing analysed).
    std::fs::write(dir.join("extra.toml"), "").unwrap();
    let mut errors = String::new();
    for text in [
        "fromat = \"json\"\n",
        "format = \"yaml\"\n",
        "format = 1\n",
        "spec = \"extra.toml\"\n",
        "spec = [\"extra.toml\", \"missing.toml\"]\n",
        "source-root = [\"extra.toml\"]\n",
        "[levels]\nsleep-in-atmoic = \"deny\"\n",
        "[levels]\nsleep-in-atomic = \"error\"\n",
        "[levels\n",
        "profile = \"kern\"\n",
        "profile = 1\n",
        "include-upstream = \"yes\"\n",
    ] {
        write(text);
        let (code, stdout, stderr) = kanalyze(&["check", kmir], &sub);
        assert_eq!(code, 2, "{text}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{text}: {stdout}");
        errors.push_str(&format!(
            "== {text}{}\n",
            stderr.replace(dir.to_str().unwrap(), "$TMP")
        ));
    }
    insta::assert_snapshot!("config_errors", errors);

    // `--config` names another file; a missing one is an error.
    std::fs::remove_file(dir.join("kanalyze.toml")).unwrap();
    std::fs::write(
        dir.join("other.toml"),
        "format = \"json\"\nprofile = \"kernel\"\n",
    )
    .unwrap();
    let (code, stdout, _) = kanalyze(&["check", kmir, "--config", "../../other.toml"], &sub);
    assert_eq!(code, 1);
    assert!(stdout.starts_with('{'), "{stdout}");
    let (code, _, stderr) = kanalyze(&["check", kmir, "--config", "nope.toml"], &sub);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("cannot read the configuration file `nope.toml`"),
        "{stderr}"
    );
}

/// `--triage FILE`: a finding judged `not-a-bug` is not shown while its text
/// is the one judged; judged `bug`, it stays with the verdict; with another
/// text recorded, it is shown to be re-examined; an entry that matches
/// nothing is counted; mistakes are errors into the file.
#[test]
fn triage_file() {
    let out = demo();
    let dir = out.dir.path();
    let (_, json, _) = kanalyze(&["check", "kmir", "--format", "json"], dir);
    std::fs::write(dir.join("base.json"), &json).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let f = &v["findings"][0];
    let id = f["id"].as_str().unwrap();
    let text = f["text_fingerprint"].as_str().unwrap();
    assert!(text.starts_with("KT") && text.len() == 18, "{text}");
    let entry = |id: &str, text: &str, verdict: &str| {
        format!(
            "[[finding]]\nid = \"{id}\"\ntext = \"{text}\"\nverdict = \"{verdict}\"\nreason = \"the sleep is in a test helper\"\nby = \"A. Maintainer\"\ndate = \"2026-12-04\"\n"
        )
    };
    let run = |triage: &str| {
        std::fs::write(dir.join("triage.toml"), triage).unwrap();
        kanalyze(&["check", "kmir", "--triage", "triage.toml"], dir)
    };

    let (code, stdout, stderr) = run(&entry(id, text, "not-a-bug"));
    assert_eq!(code, 0, "the one error is judged not a bug: {stderr}");
    assert!(
        stdout.contains("no errors or warnings in 2 crates")
            && stdout.contains("1 judged findings not shown"),
        "{stdout}"
    );

    let (code, stdout, stderr) = run(&entry(id, text, "wont-fix"));
    assert_eq!(
        code, 0,
        "a bug that will not be fixed is not shown: {stderr}"
    );
    assert!(stdout.contains("1 judged findings not shown"), "{stdout}");

    let (code, stdout, _) = run(&entry(id, text, "bug"));
    assert_eq!(code, 1);
    assert!(
        stdout.contains(
            "= note: triaged as `bug` by A. Maintainer on 2026-12-04: the sleep is in a test helper"
        ),
        "{stdout}"
    );

    let (code, stdout, _) = run(&entry(id, "KT0000000000000000", "not-a-bug"));
    assert_eq!(code, 1, "a changed finding is shown again");
    assert!(stdout.contains("re-examine it"), "{stdout}");
    assert!(
        stdout.contains("1 changed since judged (re-examine)"),
        "{stdout}"
    );

    let (code, stdout, _) = run(&format!(
        "{}\n{}",
        entry(id, text, "intended"),
        entry("KA0123456789abcdef", text, "not-a-bug")
    ));
    assert_eq!(code, 0);
    assert!(
        stdout.contains("1 triage entry match nothing (fixed, or renamed): KA0123456789abcdef"),
        "{stdout}"
    );
    let (_, json, _) = kanalyze(
        &[
            "check",
            "kmir",
            "--triage",
            "triage.toml",
            "--format",
            "json",
        ],
        dir,
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["summary"]["triage"]["hidden"], 1);
    assert_eq!(v["summary"]["triage"]["stale"][0], "KA0123456789abcdef");

    // In SARIF the judged finding is there, suppressed with its verdict;
    // with a baseline that has it, it is `unchanged`.
    let (_, sarif, _) = kanalyze(
        &[
            "check",
            "kmir",
            "--triage",
            "triage.toml",
            "--format",
            "sarif",
        ],
        dir,
    );
    let log: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    let r = &log["runs"][0]["results"][0];
    assert_eq!(r["partialFingerprints"]["kanalyzeId/v1"], id);
    assert_eq!(r["suppressions"][0]["kind"], "external");
    assert_eq!(r["suppressions"][0]["properties"]["verdict"], "intended");
    let (code, sarif, _) = kanalyze(
        &[
            "check",
            "kmir",
            "--baseline",
            "base.json",
            "--format",
            "sarif",
        ],
        dir,
    );
    assert_eq!(code, 0);
    let log: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    assert_eq!(log["runs"][0]["results"][0]["baselineState"], "unchanged");

    let mut errors = String::new();
    for bad in [
        entry("KA12", text, "bug"),
        entry(id, "d00d", "bug"),
        entry(id, text, "wontfix"),
        entry(id, text, "bug").replace("A. Maintainer", " "),
        format!("{}{}", entry(id, text, "bug"), entry(id, text, "bug")),
        "[[findings]]\nid = \"x\"\n".to_string(),
    ] {
        let (code, stdout, stderr) = run(&bad);
        assert_eq!(code, 2, "{bad}: {stdout}{stderr}");
        errors.push_str(&format!(
            "== {}\n{stderr}\n",
            bad.lines().next().unwrap_or_default()
        ));
    }
    insta::assert_snapshot!(
        "triage_errors",
        errors.replace(id, "KA[ID]").replace(text, "KT[TEXT]")
    );
}

/// `kanalyze triage` writes entries `check --triage` reads: a new file, an
/// update that keeps other entries and comments, selection by kind, and
/// unknown ids refused.
#[test]
fn triage_command_records_verdicts() {
    let out = demo();
    let dir = out.dir.path();
    let (_, json, _) = kanalyze(&["check", "kmir", "--format", "json"], dir);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let id = v["findings"][0]["id"].as_str().unwrap().to_string();
    let triage = |args: &[&str]| {
        let mut all = vec!["triage", "kmir", "--file", "t.toml"];
        all.extend_from_slice(args);
        kanalyze(&all, dir)
    };
    let (code, _, stderr) = triage(&[
        "--id",
        &id,
        "--verdict",
        "bug",
        "--reason",
        "real",
        "--by",
        "me",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("1 finding judged `bug` in `t.toml` (1 added, 0 updated)"),
        "{stderr}"
    );
    let (code, stdout, _) = kanalyze(&["check", "kmir", "--triage", "t.toml"], dir);
    assert_eq!(code, 1);
    assert!(stdout.contains("triaged as `bug` by me: real"), "{stdout}");

    // An update keeps a comment and another entry.
    let text = std::fs::read_to_string(dir.join("t.toml")).unwrap();
    let other = "\n# kept\n[[finding]]\nid = \"KA0123456789abcdef\"\ntext = \"KT0123456789abcdef\"\nverdict = \"bug\"\nreason = \"x\"\nby = \"y\"\n";
    std::fs::write(dir.join("t.toml"), format!("{text}{other}")).unwrap();
    let (code, _, stderr) = triage(&[
        "--kind",
        "sleep-in-atomic",
        "--verdict",
        "intended",
        "--reason",
        "on purpose",
        "--by",
        "me",
        "--reference",
        "commit 1234",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("(0 added, 1 updated)"), "{stderr}");
    let text = std::fs::read_to_string(dir.join("t.toml")).unwrap();
    assert!(
        text.contains("# kept") && text.contains("KA0123456789abcdef"),
        "{text}"
    );
    assert!(
        text.contains("verdict = \"intended\"") && text.contains("reference = \"commit 1234\""),
        "{text}"
    );
    let (code, stdout, _) = kanalyze(&["check", "kmir", "--triage", "t.toml"], dir);
    assert_eq!(code, 0, "{stdout}");

    let (code, _, stderr) = triage(&[
        "--id",
        "KAffffffffffffffff",
        "--verdict",
        "bug",
        "--reason",
        "r",
        "--by",
        "b",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no finding of this run has the id `KAffffffffffffffff`"),
        "{stderr}"
    );
    let (code, _, stderr) = triage(&["--verdict", "bug", "--reason", "r", "--by", "b"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no findings selected"), "{stderr}");
}

/// The progress bar: drawn on a terminal (here a pseudo-terminal made by
/// util-linux's `script`) with the phases, never when stderr is a pipe,
/// never with `--format json`, and not for a run shorter than a second
/// (`--progress-now` draws from the start, so a fixture is long enough).
#[test]
fn progress_bar_only_on_a_terminal_for_text() {
    let out = demo();
    let dir = out.dir.path();
    // Piped: nothing but the results.
    let (_, _, stderr) = kanalyze(&["check", "kmir", "--progress-now"], dir);
    assert!(
        !stderr.contains('\r') && !stderr.contains("analysing"),
        "{stderr}"
    );
    let Some(script) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("script"))
            .find(|p| p.is_file())
    }) else {
        eprintln!(
            "skipped: util-linux's `script` is not installed; the bar was not drawn on a terminal"
        );
        return;
    };
    let on_terminal = |args: &str| {
        let run = std::process::Command::new(&script)
            .args(["-qec"])
            .arg(format!("{} {args}", env!("CARGO_BIN_EXE_kanalyze")))
            .arg("/dev/null")
            .current_dir(dir)
            .env_remove("CI")
            .output()
            .expect("run script");
        String::from_utf8_lossy(&run.stdout).into_owned()
    };
    let drawn = on_terminal("check kmir --progress-now");
    for phase in ["loading dumps", "linking", "analysing: level 1/"] {
        assert!(drawn.contains(phase), "{phase}: {drawn}");
    }
    // Cleared (erase line) before the results: the findings' lines are
    // whole, and the last thing drawn is the clearing.
    assert!(drawn.contains("\u{1b}[2Kerror: "), "{drawn}");
    assert!(
        !drawn
            .rsplit("\u{1b}[2K")
            .next()
            .unwrap_or("")
            .contains("analysing")
    );
    let json = on_terminal("check kmir --progress-now --format json");
    assert!(!json.contains("analysing"), "{json}");
    assert!(json.trim_start().starts_with('{'), "{json}");
    // Without `--progress-now`, a run this short draws nothing.
    let short = on_terminal("check kmir");
    assert!(!short.contains("analysing"), "{short}");
    let off = on_terminal("check kmir --no-progress");
    assert!(!off.contains("analysing"), "{off}");
}
