//! A cargo project of `fixtures/` built through `cargo kextract` with its
//! registry dependencies, checked with `kanalyze check`, and read back by
//! module: each module's findings by the file of their primary location,
//! and the `// BUG: <kind>` markers they must match.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use test_harness::{clean_command, fixtures_dir, kextract};

/// What one `kanalyze check` of a fixture printed.
pub struct Checked {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The dumps, for the runs of a test of its own.
    pub dumps: PathBuf,
}

/// Builds `fixtures/<project>` through `cargo kextract` (into a fresh
/// target directory under `work`, so that every dependency is dumped),
/// with `cargo_args` after the dump directory (`--target …`), and checks
/// it from the project's directory.
pub fn build_and_check(project: &str, work: &Path, cargo_args: &[&str]) -> Checked {
    let _ = std::fs::remove_dir_all(work);
    let dumps = work.join("kmir");
    let output = clean_command(
        kextract()
            .with_file_name("cargo-kextract")
            .to_str()
            .unwrap(),
    )
    .current_dir(fixtures_dir().join(project))
    .args(["--out", dumps.to_str().unwrap(), "--quiet", "--locked"])
    .args(cargo_args)
    .env("CARGO_TARGET_DIR", work.join("target"))
    .env("KANALYZE_STRICT", "1")
    .output()
    .expect("run cargo kextract");
    assert!(
        output.status.success(),
        "cargo kextract failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run = super::kanalyze(
        &fixtures_dir().join(project),
        &["check", dumps.to_str().unwrap(), "--no-cache"],
    );
    run.assert_no_panic();
    Checked {
        code: run.code,
        stdout: redact(&run.stdout, &dumps),
        stderr: redact(&run.stderr, &dumps),
        dumps,
    }
}

/// Output without the paths of this machine.
pub fn redact(text: &str, dumps: &Path) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    let mut out = text.replace(dumps.to_str().unwrap(), "$DUMPS");
    if !home.is_empty() {
        out = out.replace(&format!("{home}/.cargo"), "$CARGO_HOME");
        out = out.replace(&format!("{home}/.rustup"), "$RUSTUP_HOME");
    }
    out
}

/// The summary line a run prints for `profile` (`kanalyze: embedded
/// profile …`): it names the lock APIs and contexts recognised.
pub fn profile_line<'a>(run: &'a Checked, profile: &str) -> &'a str {
    let prefix = format!("kanalyze: {profile} profile");
    run.stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {profile} profile line:\n{}", run.stdout))
}

/// The findings of the text output, each whole, by the file of its primary
/// location (`src/std_aa.rs`); a finding without one under `""`.
pub fn findings_by_file(stdout: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Vec<&str> = Vec::new();
    let mut flush = |block: &mut Vec<&str>| {
        if block.is_empty() {
            return;
        }
        let file = block
            .iter()
            .find_map(|l| l.trim_start().strip_prefix("--> "))
            .and_then(|at| at.split(':').next())
            .unwrap_or("")
            .to_string();
        out.entry(file).or_default().push(block.join("\n"));
        block.clear();
    };
    for line in stdout.lines() {
        if line.starts_with("error") || line.starts_with("warning") || line.starts_with("kanalyze:")
        {
            flush(&mut current);
        }
        if !line.starts_with("kanalyze:") {
            current.push(line);
        }
    }
    flush(&mut current);
    out
}

/// The modules of a fixture (`std_aa`), from its sources, but `lib` and
/// the support modules named in `support`.
pub fn modules(project: &str, support: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir().join(project).join("src"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".rs").map(str::to_string))
        .filter(|n| n != "lib" && !support.contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

/// (line, kind) of every `// BUG: kind` marker of a module.
pub fn markers(project: &str, module: &str) -> Vec<(u32, String)> {
    let text = std::fs::read_to_string(
        fixtures_dir()
            .join(project)
            .join(format!("src/{module}.rs")),
    )
    .unwrap();
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let kind = l.split("// BUG: ").nth(1)?;
            Some((i as u32 + 1, kind.trim().to_string()))
        })
        .collect()
}

/// The kind of a finding block, from its first line: the kinds these
/// fixtures' findings have, by their message.
pub fn kind_of(block: &str) -> &'static str {
    let first = block.lines().next().unwrap_or("");
    if first.contains("is acquired while it is already held") {
        "double-lock"
    } else if first.contains("lock order inversion") {
        "lock-order-inversion"
    } else if first.contains("may block, but the context is atomic here")
        || first.contains("may block")
    {
        "sleep-in-atomic"
    } else if first.contains("returns with lock") {
        "lock-leak"
    } else if first.contains("in hard-IRQ context and, elsewhere, with interrupts enabled") {
        "irq-unsafe-lock"
    } else if first.contains("is called by") && first.contains("but it expects") {
        "callback-context"
    } else {
        "other"
    }
}

/// The primary line of a finding block.
pub fn primary_line(block: &str) -> Option<u32> {
    let at = block
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("--> "))?;
    at.split(':').nth(1)?.parse().ok()
}

/// Every marked line of every module is the primary location of a finding
/// of its kind, and no module has a finding that is not marked; returns
/// how many markers there are.
pub fn assert_markers_match(project: &str, modules: &[String], run: &Checked) -> usize {
    let by_file = findings_by_file(&run.stdout);
    let mut planted = 0;
    for module in modules {
        let file = format!("src/{module}.rs");
        let found: Vec<(Option<u32>, &str)> = by_file
            .get(&file)
            .map(|blocks| {
                blocks
                    .iter()
                    .map(|b| (primary_line(b), kind_of(b)))
                    .collect()
            })
            .unwrap_or_default();
        let expected = markers(project, module);
        planted += expected.len();
        for (line, kind) in &expected {
            assert!(
                found.contains(&(Some(*line), kind.as_str())),
                "{file}:{line}: no {kind} reported there; found {found:?}\n{}",
                run.stdout
            );
        }
        assert_eq!(
            found.len(),
            expected.len(),
            "{file}: {found:?} against the markers {expected:?}\n{}",
            run.stdout
        );
    }
    // Nothing is shown outside the fixture's own modules.
    assert_eq!(
        by_file.keys().filter(|f| !f.starts_with("src/")).count(),
        0,
        "{}",
        run.stdout
    );
    planted
}
