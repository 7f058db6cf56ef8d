//! `kanalyze report --html`: the page for a UI fixture, checked as text
//! (structure, escaping, summaries) and, where Debian's `chromium` is
//! installed, in headless Chromium: the DOM after the page's script ran
//! (the finding count, a filter from the URL), and a screenshot.

use std::path::{Path, PathBuf};
use std::process::Command;

use test_harness::{CrateSpec, Extracted, extract};

/// `recursion` has four kinds (sleep in atomic context under a held
/// lock, a lock leak, a double lock, an adjustment that cannot be
/// inferred): enough for filters to mean something.
fn fixture() -> Extracted {
    extract(&[CrateSpec::lib("ui/recursion.rs")])
}

fn report(dir: &Path, extra: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        // The tests' summary cache, not the user's (as in `common::kanalyze`).
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache-home"),
        )
        .args(["report", "kmir", "--html", "html"])
        .args(extra)
        .current_dir(dir)
        .output()
        .expect("run kanalyze");
    let page = std::fs::read_to_string(dir.join("html/index.html")).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        page,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How many elements open with `prefix` (e.g. `<details class="finding`).
fn count(html: &str, prefix: &str) -> usize {
    html.matches(prefix).count()
}

#[test]
fn page_has_findings_chains_locks_and_summaries() {
    let out = fixture();
    let dir = out.dir.path();
    let (code, page, stderr) = report(dir, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("wrote html/index.html (4 findings"),
        "{stderr}"
    );
    assert_eq!(count(&page, r#"<details class="finding"#), 4);
    for kind in [
        "sleep-in-atomic",
        "lock-leak",
        "double-lock",
        "cannot-infer-adjustment",
    ] {
        assert!(page.contains(&format!(r#"data-kind="{kind}""#)), "{kind}");
    }
    // Self-contained: nothing is fetched.
    for external in ["<link", "src=\"http", "href=\"http", "@import"] {
        assert!(!page.contains(external), "{external}");
    }
    // Without a baseline there is no new/known filter.
    assert!(!page.contains(r#"data-group="status""#));
    // The lock held at the sleeping call, as a table row.
    assert!(page.contains(r#"<table class="locks">"#));
    assert!(page.contains("<code>static recursion::STATS</code> (spin)"));
    // Chains are drawn, and their nodes link to summaries that exist.
    assert!(count(&page, r#"<svg class="chain""#) >= 4);
    for link in page.split(r##"href="#s-"##).skip(1) {
        let id = link.split('"').next().unwrap_or("");
        assert!(
            page.contains(&format!(r#"id="s-{id}""#)),
            "dangling #s-{id}"
        );
    }
    // A summary says what `kanalyze summary` says, reason included.
    assert!(page.contains("<th>expectation</th>"));
    assert!(page.contains("<th>why</th>"));
    // Source snippets with the span marked; generics escaped.
    assert!(page.contains("<mark>"));
    assert!(page.contains("&lt;"));
    assert!(!page.contains("SpinLock::<u64>"));
}

#[test]
fn baseline_marks_known_findings() {
    let out = fixture();
    let dir = out.dir.path();
    let json = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        // The tests' summary cache, not the user's (as in `common::kanalyze`).
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache-home"),
        )
        .args(["check", "kmir", "--format", "json"])
        .current_dir(dir)
        .output()
        .expect("run kanalyze");
    let mut doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    // Keep one finding: it is known, the other three are new.
    if let Some(list) = doc.get_mut("findings").and_then(|f| f.as_array_mut()) {
        list.truncate(1);
    }
    std::fs::write(dir.join("base.json"), doc.to_string()).expect("write baseline");
    let (code, page, stderr) = report(dir, &["--baseline", "base.json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("4 findings, 1 known"), "{stderr}");
    assert_eq!(count(&page, r#"data-status="known""#), 1);
    assert_eq!(count(&page, r#"data-status="new""#), 3);
    assert!(page.contains(r#"data-group="status""#));

    std::fs::write(dir.join("bad.json"), "{").expect("write");
    let (code, _, stderr) = report(dir, &["--baseline", "bad.json"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("is not JSON"), "{stderr}");
}

/// The fixture's findings' ids and text fingerprints, in the page's order.
fn ids_and_texts(dir: &Path) -> Vec<(String, String, String)> {
    let json = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        // The tests' summary cache, not the user's (as in `common::kanalyze`).
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache-home"),
        )
        .args(["check", "kmir", "--format", "json"])
        .current_dir(dir)
        .output()
        .expect("run kanalyze");
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or("").to_string();
            (s("id"), s("text_fingerprint"), s("kind"))
        })
        .collect()
}

/// A triage file over the fixture's four findings: one `bug`, one
/// `not-a-bug`, one `wont-fix` whose text changed since (re-examine), one
/// untriaged. Every finding is on the page (the report is for triage),
/// each with its state.
fn write_triage(dir: &Path) -> Vec<(String, String)> {
    let found = ids_and_texts(dir);
    assert_eq!(found.len(), 4);
    let entry = |(id, text, _): &(String, String, String), verdict: &str| {
        format!(
            "[[finding]]\nid = \"{id}\"\ntext = \"{text}\"\nverdict = \"{verdict}\"\nreason = \"checked <by hand>\"\nby = \"A. Maintainer\"\nreference = \"lore.kernel.org/x\"\n"
        )
    };
    let changed = (
        found[2].0.clone(),
        "KT0000000000000000".to_string(),
        String::new(),
    );
    let file = [
        entry(&found[0], "bug"),
        entry(&found[1], "not-a-bug"),
        entry(&changed, "wont-fix"),
    ]
    .join("\n");
    std::fs::write(dir.join("triage.toml"), file).expect("write the triage file");
    vec![
        (found[0].0.clone(), "bug".into()),
        (found[1].0.clone(), "not-a-bug".into()),
        (found[2].0.clone(), "re-examine".into()),
        (found[3].0.clone(), "untriaged".into()),
    ]
}

#[test]
fn triage_file_marks_verdicts() {
    let out = fixture();
    let dir = out.dir.path();
    let expected = write_triage(dir);
    let (code, page, stderr) = report(dir, &["--triage", "triage.toml"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("4 findings, 3 triaged"), "{stderr}");
    assert!(page.contains(r#"data-group="triage""#));
    for (id, state) in &expected {
        assert!(
            page.contains(&format!(r#"data-id="{id}""#))
                && page
                    .split(&format!(r#"data-id="{id}""#))
                    .nth(1)
                    .is_some_and(|rest| rest.contains(&format!(r#"data-triage="{state}""#))
                        && rest
                            .split('>')
                            .next()
                            .is_some_and(|tag| tag.contains(state))),
            "{id}: {state}"
        );
    }
    // The verdict, its author and reason (escaped), and its reference.
    assert!(
        page.contains(
            "triaged as <code>not-a-bug</code> by A. Maintainer: checked &lt;by hand&gt;"
        )
    );
    assert!(page.contains("see <code>lore.kernel.org/x</code>"));
    assert!(page.contains("re-examine it"));
    // Without a triage file there is no triage filter.
    let (_, page, _) = report(dir, &[]);
    assert!(!page.contains(r#"data-group="triage""#));
    // A bad triage file is a usage error naming its place.
    std::fs::write(dir.join("bad.toml"), "[[finding]]\nid = 3\n").expect("write");
    let (code, _, stderr) = report(dir, &["--triage", "bad.toml"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("bad.toml"), "{stderr}");
}

/// Debian's Chromium, or `None` when it is not installed (CI without a
/// browser skips the browser checks, saying so).
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
}

fn headless(browser: &Path, profile: &Path, args: &[&str]) -> std::process::Output {
    Command::new(browser)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        // Its own profile: parallel tests must not share Chromium's lock.
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("run chromium")
}

#[test]
fn report_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!(
            "skipped: `chromium` is not installed (Debian: apt-get install chromium); the HTML report was not checked in a browser"
        );
        return;
    };
    let out = fixture();
    let dir = out.dir.path();
    let (code, _, stderr) = report(dir, &[]);
    assert_eq!(code, 0, "{stderr}");
    let page = dir.join("html/index.html");
    let url = format!("file://{}", page.display());
    let profile = tempfile::tempdir().expect("profile dir");

    // The DOM after the script ran: every finding shown.
    let all = headless(&browser, profile.path(), &["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&all.stdout);
    assert_eq!(count(&dom, r#"<details class="finding"#), 4, "{dom}");
    assert!(dom.contains(r#"<b id="shown">4</b>"#), "{dom}");
    assert_eq!(count(&dom, "hidden=\"\""), 0);

    // A filter from the fragment: only the double lock is left.
    let filtered = headless(
        &browser,
        profile.path(),
        &["--dump-dom", &format!("{url}#kind=double-lock")],
    );
    let dom = String::from_utf8_lossy(&filtered.stdout);
    assert!(dom.contains(r#"<b id="shown">1</b>"#), "{dom}");
    let shown: Vec<&str> = dom
        .split(r#"<details class="finding"#)
        .skip(1)
        .filter(|d| !d.split('>').next().unwrap_or("").contains("hidden"))
        .collect();
    assert_eq!(shown.len(), 1);
    assert!(shown[0].contains(r#"data-kind="double-lock""#));

    // The same from the query, with one finding opened.
    let opened = headless(
        &browser,
        profile.path(),
        &["--dump-dom", &format!("{url}?severity=error&open=f0")],
    );
    let dom = String::from_utf8_lossy(&opened.stdout);
    assert!(
        dom.contains(r#"id="f0""#) && dom.contains("open=\"\""),
        "{dom}"
    );

    // A screenshot, for people to look at.
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-ui.png");
    let _ = std::fs::remove_file(&shot);
    let run = headless(
        &browser,
        profile.path(),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,2000",
            &format!("{url}?open=f0"),
        ],
    );
    let png = std::fs::read(&shot).unwrap_or_default();
    assert!(
        png.starts_with(b"\x89PNG"),
        "no screenshot: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    eprintln!("screenshot: {}", shot.display());
}

/// The triage filter in the browser: from the URL, one state, then two.
#[test]
fn triage_filter_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!(
            "skipped: `chromium` is not installed; the triage filter was not checked in a browser"
        );
        return;
    };
    let out = fixture();
    let dir = out.dir.path();
    let expected = write_triage(dir);
    let (code, _, stderr) = report(dir, &["--triage", "triage.toml"]);
    assert_eq!(code, 0, "{stderr}");
    let url = format!("file://{}", dir.join("html/index.html").display());
    let profile = tempfile::tempdir().expect("profile dir");
    let shown_ids = |query: &str| -> Vec<String> {
        let run = headless(
            &browser,
            profile.path(),
            &["--dump-dom", &format!("{url}{query}")],
        );
        let dom = String::from_utf8_lossy(&run.stdout).into_owned();
        dom.split(r#"<details class="finding"#)
            .skip(1)
            .filter_map(|d| d.split('>').next())
            .filter(|tag| !tag.contains("hidden"))
            .filter_map(|tag| tag.split(r#"data-id=""#).nth(1))
            .filter_map(|rest| rest.split('"').next())
            .map(str::to_string)
            .collect()
    };
    let with = |states: &[&str]| -> Vec<String> {
        expected
            .iter()
            .filter(|(_, s)| states.contains(&s.as_str()))
            .map(|(id, _)| id.clone())
            .collect()
    };
    assert_eq!(shown_ids("#triage=untriaged"), with(&["untriaged"]));
    assert_eq!(
        shown_ids("?triage=bug,re-examine"),
        with(&["bug", "re-examine"])
    );
    assert_eq!(shown_ids("").len(), 4);
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-triage.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        profile.path(),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,1100",
            &format!("{url}?open=f1"),
        ],
    );
    let png = std::fs::read(&shot).unwrap_or_default();
    assert!(png.starts_with(b"\x89PNG"), "no screenshot");
    eprintln!("screenshot: {}", shot.display());
}

/// The kernel's report in the browser, where a kernel run's dumps are
/// named (`scripts/kernel.sh` leaves them in `target/kernel/kmir`):
/// `KANALYZE_KERNEL_KMIR=DIR` with `KANALYZE_KERNEL_SRC=DIR` (the source
/// root) and `KANALYZE_KERNEL_INVARIANTS=FILE` as the kernel run uses them,
/// and `KANALYZE_KERNEL_TRIAGE=FILE` (scripts/kernel-triage.toml) for the
/// page's verdicts (the page has every finding, judged or not).
/// The page has as many findings as `check --format json` reports, a
/// filter leaves exactly that kind's, and a screenshot shows the list and
/// one chain (docs/report-kernel.png is one).
#[test]
fn kernel_report_in_headless_chromium() {
    let (Some(kmir), Some(browser)) = (std::env::var_os("KANALYZE_KERNEL_KMIR"), chromium()) else {
        eprintln!(
            "skipped: set KANALYZE_KERNEL_KMIR to a kernel run's dumps (and install `chromium`) to check its HTML report in a browser"
        );
        return;
    };
    // A kernel build's dump directory also holds its host tools' dumps,
    // which are left out (a partial result, exit 3 without this).
    let mut flags: Vec<String> = Vec::new();
    if let Some(src) = std::env::var_os("KANALYZE_KERNEL_SRC") {
        flags.push("--source-root".into());
        flags.push(src.to_string_lossy().into_owned());
    }
    if let Some(inv) = std::env::var_os("KANALYZE_KERNEL_INVARIANTS") {
        flags.push("--invariants".into());
        flags.push(inv.to_string_lossy().into_owned());
    }
    let kmir = kmir.to_string_lossy().into_owned();
    let json = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        // The tests' summary cache, not the user's (as in `common::kanalyze`).
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache-home"),
        )
        .args(["check", &kmir, "--format", "json", "--allow-partial"])
        .args(&flags)
        .output()
        .expect("run kanalyze");
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let findings = doc["findings"].as_array().expect("findings");
    let expected = findings.len();
    let kind = findings
        .first()
        .and_then(|f| f["kind"].as_str())
        .unwrap_or("sleep-in-atomic")
        .to_string();
    let of_kind = findings
        .iter()
        .filter(|f| f["kind"] == kind.as_str())
        .count();

    let out = tempfile::tempdir().expect("tempdir");
    let html = out.path().join("html");
    if let Some(triage) = std::env::var_os("KANALYZE_KERNEL_TRIAGE") {
        flags.push("--triage".into());
        flags.push(triage.to_string_lossy().into_owned());
    }
    let run = Command::new(env!("CARGO_BIN_EXE_kanalyze"))
        // The tests' summary cache, not the user's (as in `common::kanalyze`).
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache-home"),
        )
        .args(["report", &kmir, "--allow-partial", "--html"])
        .arg(&html)
        .args(&flags)
        .output()
        .expect("run kanalyze");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let url = format!("file://{}", html.join("index.html").display());
    let profile = tempfile::tempdir().expect("profile dir");
    let all = headless(&browser, profile.path(), &["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&all.stdout);
    assert_eq!(count(&dom, r#"<details class="finding"#), expected);
    assert!(dom.contains(&format!(r#"<b id="shown">{expected}</b>"#)));
    let filtered = headless(
        &browser,
        profile.path(),
        &["--dump-dom", &format!("{url}#kind={kind}")],
    );
    let dom = String::from_utf8_lossy(&filtered.stdout);
    assert!(
        dom.contains(&format!(r#"<b id="shown">{of_kind}</b>"#)),
        "{kind}: {of_kind} expected"
    );
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-kernel.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        profile.path(),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,1250",
            &format!("{url}?kind={kind}&open=f0"),
        ],
    );
    let png = std::fs::read(&shot).unwrap_or_default();
    assert!(png.starts_with(b"\x89PNG"), "no screenshot");
    eprintln!("screenshot: {}", shot.display());
}
