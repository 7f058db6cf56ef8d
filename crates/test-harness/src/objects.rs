//! Object files compiled by the real compiler from `fixtures/build_error/`
//! for `kanalyze build-error`'s tests: the `build_error` crate (the kernel's
//! `rust_build_error` and `build_assert!`) and `regs`, whose `bad*`
//! functions keep a `rust_build_error` reference and `good*` do not.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::fixtures_dir;

/// Which compiler builds the fixture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compiler {
    /// The stable `rustc` the workspace is built with (`$RUSTC`, else the
    /// one on `PATH`).
    Stable,
    /// The nightly the extractor is pinned to.
    Nightly,
}

impl Compiler {
    fn command(self) -> Command {
        match self {
            Compiler::Stable => {
                Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
            }
            Compiler::Nightly => crate::clean_command(
                crate::nightly_rustc()
                    .to_str()
                    .expect("the nightly rustc's path is UTF-8"),
            ),
        }
    }
}

/// What `build` wrote into its directory.
pub struct Built {
    /// `regs.o`: `--emit=obj` of the user crate.
    pub object: PathBuf,
    /// `libregs.rlib`: the same crate as an archive.
    pub rlib: PathBuf,
    /// `libbuild_error.rlib`, which defines `rust_build_error`.
    pub build_error: PathBuf,
}

fn run(mut cmd: Command, what: &str) {
    let out = cmd.output().expect("run rustc");
    assert!(
        out.status.success(),
        "compiling {what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles the fixture at `-O` with `-Cdebuginfo=<debuginfo>` into `out`.
/// One codegen unit, so that there is one object and its layout is the
/// same every time.
pub fn build(compiler: Compiler, debuginfo: &str, out: &Path) -> Built {
    build_with(compiler, debuginfo, &[], out)
}

/// `build` with more compiler flags (`-Cdwarf-version=5`).
pub fn build_with(compiler: Compiler, debuginfo: &str, flags: &[&str], out: &Path) -> Built {
    let src = fixtures_dir().join("build_error");
    let common = |cmd: &mut Command| {
        cmd.args(["--edition", "2024", "-O", "-Ccodegen-units=1"])
            .arg(format!("-Cdebuginfo={debuginfo}"))
            .args(flags);
    };
    let build_error = out.join("libbuild_error.rlib");
    let mut cmd = compiler.command();
    common(&mut cmd);
    cmd.args(["--crate-type=rlib", "--crate-name", "build_error"])
        .arg(src.join("build_error.rs"))
        .arg("-o")
        .arg(&build_error);
    run(cmd, "build_error.rs");
    let extern_arg = format!("build_error={}", build_error.display());
    let object = out.join("regs.o");
    let mut cmd = compiler.command();
    common(&mut cmd);
    cmd.args(["--crate-type=lib", "--emit=obj", "--crate-name", "regs"])
        .args(["--extern", &extern_arg])
        .arg(src.join("regs.rs"))
        .arg("-o")
        .arg(&object);
    run(cmd, "regs.rs");
    let rlib = out.join("libregs.rlib");
    let mut cmd = compiler.command();
    common(&mut cmd);
    cmd.args(["--crate-type=rlib", "--crate-name", "regs"])
        .args(["--extern", &extern_arg])
        .arg(src.join("regs.rs"))
        .arg("-o")
        .arg(&rlib);
    run(cmd, "regs.rs as an rlib");
    Built {
        object,
        rlib,
        build_error,
    }
}
