//! `kextract`: rustc, plus one kanalyze dump per compiled crate.
//!
//! It is the compiler itself (linked from the pinned nightly), so it accepts
//! exactly rustc's arguments, prints rustc's diagnostics and exits with
//! rustc's status. Three ways to plug it in:
//!
//! * `RUSTC=/path/to/kextract` (kernel `make`, or anything expecting rustc);
//! * cargo's `RUSTC_WORKSPACE_WRAPPER`/`RUSTC_WRAPPER`: the first argument is
//!   then the path of the real rustc, which kextract drops (it *is* rustc);
//! * `cargo kextract`, which sets `RUSTC_WRAPPER` for a whole dependency graph.
//!
//! Dumps go to the directory named by `KANALYZE_OUT`; without it kextract is
//! plain rustc. `KANALYZE_STRICT=1` turns a failed extraction into a failed
//! compilation (by default the compilation still succeeds and the failure is
//! reported on stderr, and a compiler bug raised while extracting is kept
//! out of the build).
//!
//! `klint` and `kanalyze` are registered tools whether or not the crate
//! registers them (`tools.rs`). Under `cargo kextract` units built for the
//! host only are not dumped (`KEXTRACT_SKIP_HOST_UNITS`, `driver.rs`).

#![feature(rustc_private)]

extern crate rustc_abi;
extern crate rustc_codegen_ssa;
extern crate rustc_data_structures;
extern crate rustc_driver;
extern crate rustc_errors;
extern crate rustc_hir;
extern crate rustc_hir_pretty;
extern crate rustc_interface;
extern crate rustc_metadata;
extern crate rustc_middle;
extern crate rustc_public;
extern crate rustc_public_bridge;
extern crate rustc_session;
extern crate rustc_span;

mod backend;
mod driver;
mod extract;
mod out_dir;
mod stash;
mod timings;
mod tools;
mod translate;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = driver::compiler_args(std::env::args_os());
    rustc_driver::install_ice_hook(
        "https://github.com/kanalyze/kanalyze/issues (kextract is a rustc driver: include the crate that failed)",
        |_| (),
    );
    timings::init();
    let code = driver::run(args);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
