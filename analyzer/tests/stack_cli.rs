//! `kanalyze stack`: fixtures compiled by the real compiler through kextract
//! at `-Copt-level=2 -Zemit-stack-sizes`, the stack of each root C can call
//! (a chain over the limit, a shallow function, an inlined helper, a `dyn`
//! call, a callback registered with C, recursion bounded and not, C
//! functions with and without a size), the limits, levels, baseline,
//! triage and formats, and objects that cannot be used (truncated, not an
//! object, without `.stack_sizes`, for another architecture). The binary
//! runs in the build directory with relative paths.

mod common;

use std::sync::OnceLock;

use common::{Run, kanalyze, redact};
use test_harness::{CrateSpec, Extracted, extract, fixtures_dir, line_of};

const FIXTURE: &str = "stack/stack_depth.rs";

/// The fixture compiled once per test binary: an rlib and, beside it, the
/// same code as a plain object (`stack_depth.o`) for the tests that cut or
/// patch one.
fn built() -> &'static Extracted {
    static OUT: OnceLock<Extracted> = OnceLock::new();
    OUT.get_or_init(|| {
        extract(&[CrateSpec::lib(FIXTURE)
            .opt("2")
            .arg("-Ccodegen-units=1")
            .arg("-Zemit-stack-sizes")
            .arg("--emit=link,obj")])
    })
}

fn spec() -> String {
    fixtures_dir()
        .join("stack/stack_depth.toml")
        .display()
        .to_string()
}

/// `kanalyze stack kmir --objects OBJECTS --spec <fixture spec> ARGS`.
fn stack(objects: &[&str], args: &[&str]) -> Run {
    let spec = spec();
    let mut all = vec!["stack", "kmir", "--spec", spec.as_str()];
    all.extend_from_slice(args);
    all.push("--objects");
    all.extend_from_slice(objects);
    let run = kanalyze(built().dir.path(), &all);
    run.assert_no_panic();
    run
}

fn json(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", run.stdout, run.stderr))
}

/// The root named `name` of a JSON run.
fn root<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["roots"]
        .as_array()
        .expect("roots")
        .iter()
        .find(|r| r["function"] == format!("stack_depth::{name}"))
        .unwrap_or_else(|| panic!("no root `{name}` in {doc:#}"))
}

/// The functions on a root's path.
fn path_of(root: &serde_json::Value) -> Vec<String> {
    root["path"]
        .as_array()
        .expect("path")
        .iter()
        .map(|s| s["function"].as_str().expect("function").to_string())
        .collect()
}

fn frame_of(root: &serde_json::Value, function: &str) -> serde_json::Value {
    root["path"]
        .as_array()
        .expect("path")
        .iter()
        .find(|s| s["function"] == function)
        .cloned()
        .unwrap_or_else(|| panic!("`{function}` is not on the path: {root:#}"))
}

/// A validator of one finding by the JSON schema of docs/output.md ("JSON
/// schema"): its `finding` definition.
fn finding_validator() -> jsonschema::Validator {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/output.md"),
    )
    .expect("docs/output.md");
    let block = doc
        .split("### JSON schema")
        .nth(1)
        .and_then(|s| s.split("```json").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("the JSON schema block");
    let schema: serde_json::Value = serde_json::from_str(block).expect("the schema is JSON");
    let finding = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "#/$defs/finding",
        "$defs": schema["$defs"].clone(),
    });
    jsonschema::validator_for(&finding).expect("a valid JSON Schema")
}

fn kinds(doc: &serde_json::Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap_or_default().to_string(),
                f["function"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The whole text output, reviewed: the findings rustc-style, then the
/// deepest roots with their paths and the summary line.
#[test]
fn text_output() {
    let run = stack(&["."], &["--roots", "12"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(run.stderr, "");
    insta::assert_snapshot!(redact(&run.stdout, &[built().dir.path()]));
}

#[test]
fn a_chain_of_three_large_frames_is_over_the_limit_and_a_shallow_function_is_not() {
    let doc = json(&stack(&["."], &["--format", "json"]));
    let deep = root(&doc, "deep_entry");
    assert_eq!(
        path_of(deep),
        [
            "stack_depth::deep_entry",
            "stack_depth::level_one",
            "stack_depth::level_two",
            "stack_depth::level_three"
        ]
    );
    let depth = deep["depth"].as_u64().expect("depth");
    assert!(depth > 8192 && deep["over_limit"] == true, "{deep:#}");
    // Each frame about 3 KB; the depth is the frames and a return address
    // per call.
    let frames: Vec<u64> = deep["path"]
        .as_array()
        .expect("path")
        .iter()
        .filter_map(|s| s["frame_bytes"].as_u64())
        .collect();
    for f in &frames[1..] {
        assert!((3000..3200).contains(f), "{frames:?}");
    }
    assert_eq!(depth, frames.iter().sum::<u64>() + 8 * frames.len() as u64);
    let step = frame_of(deep, "stack_depth::level_two");
    assert_eq!(step["span"]["line"], line_of(FIXTURE, "level_two(buf[7])"));
    assert_eq!(step["depth"].as_u64().map(|d| d < depth), Some(true));

    let shallow = root(&doc, "shallow_entry");
    assert!(
        shallow["depth"].as_u64().expect("depth") < 64,
        "{shallow:#}"
    );
    assert_eq!(shallow["over_limit"], false);
    let found = kinds(&doc);
    assert!(found.contains(&(
        "stack-depth-exceeded".into(),
        "stack_depth::deep_entry".into()
    )));
    assert_eq!(
        found
            .iter()
            .filter(|(k, _)| k == "stack-depth-exceeded")
            .count(),
        1,
        "{found:?}"
    );
    // The three frames, and the large trait implementation, are over 2048.
    let mut large: Vec<&str> = doc["large_frames"]
        .as_array()
        .expect("large frames")
        .iter()
        .filter_map(|f| f["function"].as_str())
        .collect();
    large.sort_unstable();
    assert_eq!(
        large,
        [
            "<stack_depth::Large as stack_depth::Work>::run",
            "stack_depth::level_one",
            "stack_depth::level_three",
            "stack_depth::level_two"
        ]
    );
    let one = doc["large_frames"]
        .as_array()
        .expect("large frames")
        .iter()
        .find(|f| f["function"] == "stack_depth::level_one")
        .expect("level_one");
    assert_eq!(one["locals"][0]["name"], "`buf`");
    assert_eq!(one["locals"][0]["type"], "[u8; 3000]");
    assert_eq!(one["locals"][0]["bytes"], 3000);
}

#[test]
fn an_inlined_helper_is_folded_into_its_caller() {
    let doc = json(&stack(&["."], &["--format", "json"]));
    let entry = root(&doc, "inline_entry");
    assert_eq!(
        path_of(entry),
        [
            "stack_depth::inline_entry",
            "stack_depth::fill_helper",
            "stack_depth::sink"
        ]
    );
    let helper = frame_of(entry, "stack_depth::fill_helper");
    assert_eq!(helper["kind"], "inlined");
    assert_eq!(helper["frame_bytes"], 0);
    // What it calls is called from its code, inlined into the caller.
    let sink = frame_of(entry, "stack_depth::sink");
    assert_eq!(sink["span"]["line"], line_of(FIXTURE, "sink(scratch[3])"));
    // Its 1 KiB buffer is in the caller's frame.
    let own = frame_of(entry, "stack_depth::inline_entry");
    assert_eq!(own["kind"], "own");
    let own = own["frame_bytes"].as_u64().expect("bytes");
    assert!(own >= 1024, "{own}");
    let sink = sink["frame_bytes"].as_u64().expect("bytes");
    assert_eq!(entry["depth"].as_u64(), Some(own + 8 + sink + 8));
}

#[test]
fn a_dyn_call_takes_its_worst_implementation() {
    let doc = json(&stack(&["."], &["--format", "json"]));
    let entry = root(&doc, "dyn_entry");
    let path = path_of(entry);
    assert!(
        path.contains(&"<stack_depth::Large as stack_depth::Work>::run".to_string()),
        "{path:?}"
    );
    assert!(!path.iter().any(|f| f.contains("Small")), "{path:?}");
    let large = frame_of(entry, "<stack_depth::Large as stack_depth::Work>::run");
    assert!(large["frame_bytes"].as_u64().expect("bytes") >= 2500);
    assert_eq!(
        large["span"]["line"],
        line_of(FIXTURE, "pick(large).run(seed)")
    );
}

#[test]
fn a_callback_registered_with_c_is_a_root() {
    let doc = json(&stack(&["."], &["--format", "json"]));
    let cb = root(&doc, "on_event");
    assert_eq!(
        cb["reason"],
        "registered with `register_callback`: event callback"
    );
    assert!(cb["depth"].as_u64().expect("depth") >= 1500, "{cb:#}");
    // `register` itself calls the C function, whose `[stack.fn]` entry
    // gives its usage.
    let register = root(&doc, "register");
    let c = frame_of(register, "stack_depth::register_callback");
    assert_eq!(
        (c["kind"].clone(), c["frame_bytes"].clone()),
        ("c".into(), 96.into())
    );
}

#[test]
fn recursion_is_bounded_only_where_annotated() {
    let run = stack(&["."], &["--format", "json"]);
    let doc = json(&run);
    // Direct recursion with `recursion_bound(4)`: four frames of
    // `countdown`.
    let bounded = root(&doc, "bounded_entry");
    assert_eq!(bounded["bounded"], true);
    let rec = frame_of(bounded, "stack_depth::countdown");
    assert_eq!(rec["kind"], "recursion");
    let countdown = rec["frame_bytes"].as_u64().expect("bytes");
    assert_eq!(countdown % 4, 0, "{rec:#}");
    assert!(countdown >= 4 * 208, "{rec:#}");
    // Mutual recursion with a bound on one of the two is bounded too: at
    // most 3 activations of `even` (annotated) and, between and around
    // them, 4 of `odd`: 3·(even + 8) + 4·(odd + 8) bytes.
    let parity = root(&doc, "parity_entry");
    assert_eq!(parity["bounded"], true);
    let all = json(&stack(&["."], &["--format", "json", "--frame-limit", "1"]));
    let frame = |name: &str| -> u64 {
        all["large_frames"]
            .as_array()
            .expect("frames")
            .iter()
            .find(|f| f["function"] == name)
            .and_then(|f| f["frame_bytes"].as_u64())
            .unwrap_or_else(|| panic!("no frame for {name}"))
    };
    let (even, odd) = (frame("stack_depth::even"), frame("stack_depth::odd"));
    let cycle = frame_of(parity, "stack_depth::even");
    assert_eq!(cycle["kind"], "recursion");
    assert_eq!(
        cycle["frame_bytes"].as_u64(),
        Some(3 * (even + 8) + 4 * (odd + 8))
    );
    // And direct recursion: exactly four frames of `countdown`.
    assert_eq!(countdown, 4 * (frame("stack_depth::countdown") + 8));
    // Without a bound, direct and mutual recursion are unbounded, each
    // cycle a warning naming its functions.
    for entry in ["descend_entry", "ping_entry"] {
        assert_eq!(root(&doc, entry)["bounded"], false, "{entry}");
    }
    let warnings: Vec<&serde_json::Value> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == "stack-unbounded-recursion")
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    let notes: Vec<String> = warnings
        .iter()
        .map(|w| {
            w["notes"][0]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(
        notes,
        [
            "the cycle's functions: `stack_depth::descend`",
            "the cycle's functions: `stack_depth::ping`, `stack_depth::pong`"
        ]
    );
    assert!(warnings.iter().all(|w| w["severity"] == "warning"));
}

#[test]
fn c_functions_use_the_spec_the_default_or_are_unknown() {
    let doc = json(&stack(&["."], &["--format", "json"]));
    let entry = root(&doc, "c_entry");
    let measured = frame_of(entry, "stack_depth::c_measured");
    assert_eq!(measured["frame_bytes"], 700);
    assert_eq!(measured["note"], "the spec's [stack] entry");
    assert_eq!(entry["assumed_c_functions"], 1);
    // The default comes from `--c-default` over the spec's.
    let doc = json(&stack(&["."], &["--format", "json", "--c-default", "5000"]));
    let entry = root(&doc, "c_entry");
    let unmeasured = frame_of(entry, "stack_depth::c_unmeasured");
    assert_eq!(unmeasured["frame_bytes"], 5000);
    assert_eq!(unmeasured["note"], "the default for C functions");
    assert_eq!(doc["summary"]["c_default"], 5000);
    // A `.su` file (`-fstack-usage`) gives a C function's own frame; what
    // it calls gets the default.
    let su = tempfile::tempdir().expect("tempdir");
    let good = su.path().join("c.su");
    std::fs::write(&good, "c.c:3:1:c_unmeasured\t48\tstatic\n").expect("write");
    let good = good.display().to_string();
    let doc = json(&stack(
        &[".", &good],
        &["--format", "json", "--c-default", "5000"],
    ));
    let unmeasured = frame_of(root(&doc, "c_entry"), "stack_depth::c_unmeasured");
    assert_eq!(unmeasured["frame_bytes"], 5048);
    assert_eq!(
        unmeasured["note"],
        "own frame 48 from a .su file, and the default 5000 for its callees"
    );
    assert_eq!(doc["summary"]["su_files"], 1);
    // A frame that grows at run time is unknown.
    std::fs::write(
        su.path().join("c.su"),
        "c.c:3:1:c_unmeasured\t48\tdynamic\n",
    )
    .expect("write");
    let doc = json(&stack(&[".", &good], &["--format", "json"]));
    assert_eq!(
        root(&doc, "c_entry")["unknown_frames"],
        serde_json::json!(["stack_depth::c_unmeasured"])
    );
    // A file that is not `-fstack-usage` output is an error naming it.
    std::fs::write(su.path().join("c.su"), "c_unmeasured 48\n").expect("write");
    let run = stack(&[".", &good], &[]);
    assert_eq!(run.code, Some(2));
    assert_eq!(
        redact(&run.stderr, &[su.path()]),
        "error: `$TMP/c.su`: line 1: not a `-fstack-usage` line (`file:line:col:function<TAB>bytes<TAB>static`): `c_unmeasured 48`\n"
    );
    // A userspace program without a spec knows no C function: unknown,
    // never 0, and counted.
    let run = kanalyze(
        built().dir.path(),
        &[
            "stack",
            "kmir",
            "--profile",
            "userspace",
            "--format",
            "json",
            "--objects",
            ".",
        ],
    );
    let doc = json(&run);
    let entry = root(&doc, "c_entry");
    assert_eq!(
        entry["unknown_frames"],
        serde_json::json!(["stack_depth::c_measured", "stack_depth::c_unmeasured"])
    );
    assert_eq!(doc["summary"]["c_default"], serde_json::Value::Null);
}

#[test]
fn limits_levels_and_configuration() {
    // Over both limits: errors, exit 1.
    assert_eq!(stack(&["."], &[]).code, Some(1));
    // A higher depth limit leaves the frames over 2048.
    let run = stack(&["."], &["--limit", "20000", "--format", "json"]);
    assert_eq!(run.code, Some(1));
    let found = kinds(&json(&run));
    assert!(!found.iter().any(|(k, _)| k == "stack-depth-exceeded"));
    assert_eq!(
        found
            .iter()
            .filter(|(k, _)| k == "stack-frame-too-large")
            .count(),
        4
    );
    // Under both: only the recursion warnings, exit 0.
    let run = stack(&["."], &["--limit", "20000", "--frame-limit", "4096"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.stdout.contains("kanalyze: 2 warnings; 11 roots"),
        "{}",
        run.stdout
    );
    // Levels: the frames allowed, the depth a warning.
    let run = stack(
        &["."],
        &[
            "--allow",
            "stack-frame-too-large",
            "--warn",
            "stack-depth-exceeded",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("warning: the stack of `stack_depth::deep_entry` may reach")
    );
    // The configuration file's `[stack]`, under the flags.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("kanalyze.toml");
    std::fs::write(&config, "[stack]\nlimit = 20000\nframe-limit = 4096\n").expect("write");
    let config = config.display().to_string();
    assert_eq!(stack(&["."], &["--config", &config]).code, Some(0));
    assert_eq!(
        stack(&["."], &["--config", &config, "--limit", "4000"]).code,
        Some(1)
    );
    std::fs::write(dir.path().join("kanalyze.toml"), "[stack]\nlimit = 0\n").expect("write");
    let run = stack(&["."], &["--config", &config]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .contains("`[stack] limit` must be a number of bytes from 1 to 1073741824"),
        "{}",
        run.stderr
    );
}

#[test]
fn baseline_triage_sarif_and_html() {
    let dir = built().dir.path();
    let first = stack(&["."], &["--format", "json"]);
    std::fs::write(dir.join("stack-baseline.json"), &first.stdout).expect("write");
    // Every finding is in the baseline: none shown, exit 0.
    let run = stack(&["."], &["--baseline", "stack-baseline.json"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("no errors or warnings; 11 roots, the deepest"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("; 7 known findings in the baseline not shown")
    );
    // A verdict hides the depth finding while its text is unchanged.
    let doc = json(&first);
    let depth = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["kind"] == "stack-depth-exceeded")
        .expect("a depth finding");
    // Recorded by `kanalyze triage`, given the objects.
    let spec = spec();
    let id = depth["id"].as_str().expect("an id");
    let _ = std::fs::remove_file(dir.join("stack-triage.toml"));
    let run = kanalyze(
        dir,
        &[
            "triage",
            "kmir",
            "--spec",
            &spec,
            "--file",
            "stack-triage.toml",
            "--id",
            id,
            "--verdict",
            "intended",
            "--reason",
            "a test's deep chain",
            "--by",
            "stack_cli",
            "--objects",
            ".",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "kanalyze: 1 finding judged `intended` in `stack-triage.toml` (1 added, 0 updated)\n"
    );
    let run = stack(
        &["."],
        &["--triage", "stack-triage.toml", "--format", "json"],
    );
    let after = json(&run);
    // As `check` writes them: the hidden finding is listed last, with its
    // verdict, and not counted as an error.
    let listed = after["findings"].as_array().expect("findings");
    let last = listed.last().expect("a finding");
    assert_eq!(last["kind"], "stack-depth-exceeded");
    assert_eq!(last["id"], id);
    assert_eq!(last["triage"]["verdict"], "intended");
    assert_eq!(last["triage"]["suppressed"], true);
    assert_eq!(last["triage"]["reexamine"], false);
    assert!(
        listed[..listed.len() - 1]
            .iter()
            .all(|f| f["kind"] != "stack-depth-exceeded" && f.get("triage").is_none())
    );
    assert_eq!(after["summary"]["triage"]["hidden"], 1);
    assert_eq!(
        after["summary"]["errors"].as_u64(),
        doc["summary"]["errors"].as_u64().map(|n| n - 1)
    );
    // Each finding is a finding of `check`'s JSON schema (docs/output.md).
    let validator = finding_validator();
    for f in listed {
        let errors: Vec<String> = validator.iter_errors(f).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{f:#}: {errors:#?}");
    }
    // SARIF: the stack kinds are rules, one result per finding.
    let run = stack(&["."], &["--format", "sarif"]);
    let log: serde_sarif::sarif::Sarif = serde_json::from_str(&run.stdout).expect("SARIF");
    let rules = log.runs[0].tool.driver.rules.as_ref().expect("rules");
    for kind in [
        "stack-depth-exceeded",
        "stack-frame-too-large",
        "stack-unbounded-recursion",
    ] {
        assert!(rules.iter().any(|r| r.id == kind), "{kind}");
    }
    assert_eq!(log.runs[0].results.as_ref().map(Vec::len), Some(7));
    // HTML: one page with the findings and every root's stack.
    let run = stack(&["."], &["--html", "stack-html"]);
    assert!(
        run.stderr
            .contains("kanalyze: wrote stack-html/index.html (7 findings, 11 roots"),
        "{}",
        run.stderr
    );
    let page = std::fs::read_to_string(dir.join("stack-html/index.html")).expect("the page");
    assert!(page.contains(r#"<section id="stack"><h2>Stack depth per root</h2>"#));
    assert!(page.contains(r#"<details class="stackroot over" id="r0">"#));
    assert!(page.contains("<code>stack_depth::deep_entry</code>"));
    assert!(page.contains(r#"<tr class="k-inlined">"#));
    assert!(!page.contains(r#"id="summaries""#));
    // What the kinds mean, as for every other kind.
    let run = kanalyze(dir, &["explain", "stack-unbounded-recursion"]);
    assert_eq!(run.code, Some(0));
    assert!(run.stdout.contains("recursion_bound"), "{}", run.stdout);
}

/// A library whose objects have no frame sizes, or were not given: its
/// functions' frames are unknown (counted as a return address, never as a
/// frame of 0), and the run says so.
#[test]
fn unknown_frames_are_counted_and_shown() {
    let out = extract(&[
        CrateSpec::lib("stack/stack_leaf.rs")
            .opt("2")
            .arg("-Ccodegen-units=1"),
        CrateSpec::lib("stack/stack_user.rs")
            .opt("2")
            .arg("-Ccodegen-units=1")
            .arg("-Zemit-stack-sizes")
            .with_extern("stack_leaf"),
    ]);
    let dir = out.dir.path();
    let run = kanalyze(
        dir,
        &["stack", "kmir", "--format", "json", "--objects", "."],
    );
    run.assert_no_panic();
    // An object that defines functions of the program without frame sizes
    // is an error naming it; the rest is still reported.
    assert_eq!(run.code, Some(2));
    let (head, tail) = run
        .stderr
        .split_once(".rcgu.o)`")
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(
        head.starts_with("error: `./libstack_leaf.rlib(stack_leaf."),
        "{}",
        run.stderr
    );
    assert_eq!(
        tail,
        " has no `.stack_sizes` section, but defines 1 function of the program\n  = note: their frames are unknown: the object was built without `-Zemit-stack-sizes`\n  = help: build the Rust code with `-Zemit-stack-sizes` (kernel: `make KRUSTFLAGS=-Zemit-stack-sizes`; cargo: `RUSTFLAGS=-Zemit-stack-sizes`)\n"
    );
    let doc = json(&run);
    let entry = &doc["roots"][0];
    assert_eq!(entry["function"], "stack_user::user_entry");
    let leaf = frame_of(entry, "stack_leaf::leaf_work");
    assert_eq!(leaf["kind"], "unknown");
    assert_eq!(leaf["frame_bytes"], serde_json::Value::Null);
    assert!(
        leaf["note"]
            .as_str()
            .is_some_and(|n| n.ends_with("records no frame size for it")),
        "{leaf:#}"
    );
    assert_eq!(
        entry["unknown_frames"],
        serde_json::json!(["stack_leaf::leaf_work"])
    );
    let user = frame_of(entry, "stack_user::user_entry");
    // Known frame plus two return addresses: the unknown frame adds its
    // return address only.
    assert_eq!(
        entry["depth"].as_u64(),
        user["frame_bytes"].as_u64().map(|b| b + 16)
    );
    assert_eq!(doc["summary"]["input_errors"], 1);
    // Without the library's objects at all, its crate is named.
    let user_only = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("libstack_user"))
        .expect("the user's rlib");
    let run = kanalyze(
        dir,
        &["stack", "kmir", "--format", "json", "--objects", &user_only],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let doc = json(&run);
    let entry = &doc["roots"][0];
    // `leaf_work`, and `black_box`, which only the library's dump has.
    assert_eq!(
        entry["unknown_frames"],
        serde_json::json!([
            "stack_leaf::leaf_work",
            "std::hint::black_box::<&mut [u8; 700]>"
        ])
    );
    assert_eq!(
        frame_of(entry, "stack_leaf::leaf_work")["note"],
        "no object of crate `stack_leaf` was read"
    );
    let run = kanalyze(dir, &["stack", "kmir", "--objects", &user_only]);
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("kanalyze: no errors or warnings; 1 root, the deepest ")
            && last.ends_with(
                " bytes (limit 8192); 0 frames over 2048 bytes; 2 unknown frames reachable; read 1 object (1 archive member of 1 archive)"
            ),
        "{}",
        run.stdout
    );
}

/// Objects that cannot be used: each an error naming it, exit 2, the
/// others still read; never a panic.
#[test]
fn bad_objects_are_errors_naming_them() {
    // In a directory of their own: the other tests read the fixture's.
    let bad = tempfile::tempdir().expect("tempdir");
    let dir = bad.path();
    let good = std::fs::read(built().dir.path().join("stack_depth.o")).expect("the plain object");
    std::fs::write(dir.join("stack_depth.o"), &good).expect("write");
    // Truncated: the section headers are there, a section's data is not.
    std::fs::write(dir.join("truncated.o"), &good[..good.len() / 2]).expect("write");
    // Not an object at all.
    std::fs::write(dir.join("notes.o"), "frame sizes: see the wiki\n").expect("write");
    // Another architecture: the same object with e_machine = EM_AARCH64.
    let mut arm = good.clone();
    assert_eq!(&arm[..4], b"\x7fELF");
    arm[18..20].copy_from_slice(&183u16.to_le_bytes());
    std::fs::write(dir.join("aarch64.o"), &arm).expect("write");
    let at = |name: &str| dir.join(name).display().to_string();
    let (truncated, notes, aarch64, good_o) = (
        at("truncated.o"),
        at("notes.o"),
        at("aarch64.o"),
        at("stack_depth.o"),
    );
    let run = stack(
        &[&truncated, &notes, &aarch64, &good_o],
        &["--format", "json"],
    );
    assert_eq!(run.code, Some(2));
    let stderr = redact(&run.stderr, &[dir]);
    insta::assert_snapshot!("bad_objects", stderr);
    // The good object is still read.
    let doc = json(&run);
    assert_eq!(doc["summary"]["objects"], 1);
    assert_eq!(doc["summary"]["input_errors"], 3);
    assert!(root(&doc, "deep_entry")["depth"].as_u64().expect("depth") > 8192);

    // Built without `-Zemit-stack-sizes` (by the plain compiler: kextract's
    // objects are rustc's): no object has a frame size, nothing to walk.
    let plain = tempfile::tempdir().expect("tempdir");
    let status = test_harness::clean_command(
        test_harness::nightly_rustc()
            .to_str()
            .expect("a UTF-8 rustc path"),
    )
    .arg(fixtures_dir().join(FIXTURE))
    .args([
        "--crate-name",
        "stack_depth",
        "--crate-type",
        "lib",
        "--edition=2024",
        "-Copt-level=2",
        "-Cpanic=abort",
        "-Cdebuginfo=0",
        "-Csymbol-mangling-version=v0",
        "-Ccodegen-units=1",
        // kextract registers its tool namespaces itself; plain rustc is told.
        "-Zcrate-attr=feature(register_tool)",
        "-Zcrate-attr=register_tool(kanalyze)",
        "--emit=obj",
        "-o",
    ])
    .arg(plain.path().join("plain.o"))
    .status()
    .expect("run rustc");
    assert!(status.success());
    let plain_o = plain.path().join("plain.o").display().to_string();
    let run = stack(&[&plain_o], &[]);
    assert_eq!(run.code, Some(2));
    let stderr = redact(&run.stderr, &[plain.path()]);
    insta::assert_snapshot!("no_stack_sizes", stderr);
    assert_eq!(run.stdout, "");
    // Missing: an error naming the path.
    let run = stack(&["missing.o", "stack_depth.o"], &[]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .starts_with("error: `missing.o`: cannot read it:"),
        "{}",
        run.stderr
    );
}
