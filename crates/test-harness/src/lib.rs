//! End-to-end test support: build `kextract` with its pinned nightly and
//! compile fixture crates through it, like a real build would.
//!
//! Tests never hand-write dumps: they compile Rust sources from `fixtures/`
//! with the real compiler and read what the extractor wrote.

pub mod objects;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The toolchain `extractor/rust-toolchain.toml` pins.
pub const NIGHTLY: &str = "nightly-2026-05-20";

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

pub fn fixtures_dir() -> PathBuf {
    repo_root().join("fixtures")
}

/// A `Command` for the pinned nightly's tools, free of the variables the
/// outer (stable) cargo and rustup set for the test process.
pub fn clean_command(program: &str) -> Command {
    let mut cmd = Command::new(program);
    for var in [
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
        "RUSTDOC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_MAKEFLAGS",
        "KANALYZE_OUT",
        "KANALYZE_STRICT",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Builds `kextract` (once per test process; cargo's lock serialises
/// concurrent test binaries) and returns its path.
pub fn kextract() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = repo_root().join("extractor");
        // Release test runs (the corpus) get a release extractor.
        let profile = if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        };
        let mut cmd = clean_command("cargo");
        cmd.current_dir(&dir).args(["build", "--quiet", "--bins"]);
        if profile == "release" {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo for the extractor");
        assert!(status.success(), "building kextract failed");
        dir.join("target").join(profile).join("kextract")
    })
}

/// The pinned nightly's plain `rustc`, to compare against.
pub fn nightly_rustc() -> PathBuf {
    let out = clean_command("rustup")
        .args(["which", "rustc", "--toolchain", NIGHTLY])
        .output()
        .expect("run rustup");
    assert!(out.status.success(), "rustup which rustc failed");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// One crate of a fixture program.
#[derive(Clone, Debug)]
pub struct CrateSpec {
    /// Path relative to `fixtures/`.
    pub source: String,
    pub crate_type: &'static str,
    pub opt_level: &'static str,
    pub edition: &'static str,
    /// Names of earlier crates of the same program it depends on.
    pub externs: Vec<String>,
    pub extra_args: Vec<String>,
}

impl CrateSpec {
    pub fn lib(source: &str) -> Self {
        CrateSpec {
            source: source.to_string(),
            crate_type: "lib",
            opt_level: "0",
            edition: "2024",
            externs: vec![],
            extra_args: vec![],
        }
    }

    pub fn opt(mut self, level: &'static str) -> Self {
        self.opt_level = level;
        self
    }

    pub fn with_extern(mut self, name: &str) -> Self {
        self.externs.push(name.to_string());
        self
    }

    pub fn arg(mut self, arg: &str) -> Self {
        self.extra_args.push(arg.to_string());
        self
    }

    pub fn crate_name(&self) -> String {
        Path::new(&self.source)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("fixture")
            .to_string()
    }
}

/// The result of compiling a fixture program through kextract.
pub struct Extracted {
    pub dir: tempfile::TempDir,
    pub stderr: String,
}

impl Extracted {
    pub fn out_dir(&self) -> PathBuf {
        self.dir.path().join("kmir")
    }

    pub fn dump_paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.out_dir())
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        paths.retain(|p| p.extension().is_some_and(|e| e == kmir::EXTENSION));
        paths.sort();
        paths
    }

    /// The dump of crate `name`.
    pub fn dump(&self, name: &str) -> kmir::CrateDump {
        let prefix = format!("{name}-");
        let path = self
            .dump_paths()
            .into_iter()
            .find(|p| {
                p.file_name()
                    .and_then(|f| f.to_str())
                    .is_some_and(|f| f.starts_with(&prefix))
            })
            .unwrap_or_else(|| panic!("no dump for crate `{name}`; stderr:\n{}", self.stderr));
        kmir::read_file(&path).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Compiles the crates in order with kextract (`KANALYZE_OUT` set), each
/// seeing the earlier ones as `--extern`. Panics with the compiler's output
/// if a compilation fails.
pub fn extract(crates: &[CrateSpec]) -> Extracted {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("kmir");
    let mut stderr = String::new();
    for spec in crates {
        let name = spec.crate_name();
        let mut cmd = clean_command(kextract().to_str().expect("utf-8 path"));
        cmd.current_dir(dir.path())
            .env("KANALYZE_OUT", &out)
            .arg(fixtures_dir().join(&spec.source))
            .args(["--crate-name", &name, "--crate-type", spec.crate_type])
            .arg(format!("--edition={}", spec.edition))
            .arg(format!("-Copt-level={}", spec.opt_level))
            .args([
                "-Cpanic=abort",
                "-Cdebuginfo=0",
                "-Csymbol-mangling-version=v0",
            ])
            .arg("--out-dir")
            .arg(dir.path())
            .arg("-L")
            .arg(dir.path());
        for ext in &spec.externs {
            cmd.arg("--extern").arg(format!(
                "{ext}={}",
                dir.path().join(format!("lib{ext}.rlib")).display()
            ));
        }
        cmd.args(&spec.extra_args);
        let output = cmd.output().expect("run kextract");
        let err = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success(),
            "kextract failed on {}:\n{err}",
            spec.source
        );
        stderr.push_str(&err);
    }
    // The fixtures are kernel code (spinlocks, GFP flags, the kernel's C
    // functions) compiled for the host, so nothing in the program says
    // "kernel" and `kanalyze` would detect a userspace program. The
    // configuration it finds in its working directory says which it is;
    // a test about the configuration file replaces it.
    std::fs::write(
        dir.path().join("kanalyze.toml"),
        "# Written by test_harness::extract: the fixtures model kernel code.\nprofile = \"kernel\"\n",
    )
    .expect("write kanalyze.toml");
    Extracted { dir, stderr }
}

/// 1-based line of the first line of `fixtures/<source>` containing `needle`.
pub fn line_of(source: &str, needle: &str) -> u32 {
    let text = std::fs::read_to_string(fixtures_dir().join(source)).expect("fixture source");
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i as u32 + 1)
        .unwrap_or_else(|| panic!("`{needle}` not in {source}"))
}

/// Convenience lookups over a dump for assertions.
pub trait DumpExt {
    fn instance_named(&self, name: &str) -> &kmir::Instance;
    fn name_of(&self, symbol: &str) -> String;
    fn calls_in(&self, name: &str) -> Vec<&kmir::Callee>;
    /// The names of the functions `name` calls directly, in block order.
    fn direct_callees(&self, name: &str) -> Vec<String>;
}

impl DumpExt for kmir::CrateDump {
    fn instance_named(&self, name: &str) -> &kmir::Instance {
        self.instances
            .iter()
            .find(|i| i.name == name)
            .unwrap_or_else(|| {
                let names: Vec<&str> = self.instances.iter().map(|i| i.name.as_str()).collect();
                panic!("no instance `{name}` in dump; instances: {names:#?}")
            })
    }

    fn name_of(&self, symbol: &str) -> String {
        if let Some(i) = self.instance(symbol) {
            return i.name.to_string();
        }
        if let Some(e) = self.external(symbol) {
            return e.name.to_string();
        }
        panic!("symbol `{symbol}` is neither an instance nor an external of the dump")
    }

    fn calls_in(&self, name: &str) -> Vec<&kmir::Callee> {
        let body = self
            .instance_named(name)
            .body
            .as_ref()
            .expect("instance has a body");
        body.blocks
            .iter()
            .filter_map(|b| match &b.terminator.kind {
                kmir::TerminatorKind::Call { callee, .. } => Some(callee),
                _ => None,
            })
            .collect()
    }

    fn direct_callees(&self, name: &str) -> Vec<String> {
        self.calls_in(name)
            .into_iter()
            .filter_map(|c| match c {
                kmir::Callee::Direct { symbol } => Some(self.name_of(symbol)),
                _ => None,
            })
            .collect()
    }
}
