//! What `--dumps` adds, on the fixture compiled through kextract (the
//! pinned nightly, v0 mangling) with and without debug info: the arguments
//! of the outermost function the assertion depends on, the callers that
//! pass a value that is not a constant, and, without debug info, the chain
//! from the call graph.

use std::sync::OnceLock;

use build_error::mir::{MirNotes, explain};
use build_error::scan;
use program::Program;
use test_harness::{CrateSpec, Extracted, extract, line_of};

struct Built {
    extracted: Extracted,
    program: Program,
}

fn build(debuginfo: &str) -> Built {
    let flags = [
        "-Ccodegen-units=1".to_string(),
        format!("-Cdebuginfo={debuginfo}"),
    ];
    let spec = |source: &str, externs: &[&str]| {
        let mut s = CrateSpec::lib(source).opt("2");
        for e in externs {
            s = s.with_extern(e);
        }
        for f in &flags {
            s = s.arg(f);
        }
        s
    };
    let extracted = extract(&[
        spec("build_error/build_error.rs", &[]),
        spec("build_error/regs.rs", &["build_error"]),
        spec("build_error/driver.rs", &["build_error", "regs"]),
    ]);
    let crates = extracted
        .dump_paths()
        .into_iter()
        .map(|path| {
            let dump = kmir::read_file_lazy(&path).unwrap_or_else(|e| panic!("{e}"));
            program::LinkedCrate::lazy(path, dump, None)
        })
        .collect();
    let (program, _) = program::link(crates);
    Built { extracted, program }
}

fn with_debug() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| build("2"))
}

fn without_debug() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| build("0"))
}

/// The notes of the reference in `function`.
fn notes(built: &Built, function: &str) -> MirNotes {
    let rlib = built.extracted.dir.path().join("libregs.rlib");
    let scan = scan(&[rlib]);
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    let r = scan
        .references
        .iter()
        .find(|r| r.function() == Some(function))
        .unwrap_or_else(|| panic!("no reference in `{function}`: {:?}", scan.references));
    explain(&built.program, r).expect("the function is in the dumps")
}

fn check_bad(n: &MirNotes) {
    assert!(n.complete, "{n:?}");
    let args: Vec<(usize, Option<&str>)> = n
        .depends_on
        .iter()
        .map(|a| (a.index, a.name.as_deref()))
        .collect();
    assert_eq!(args, [(1, Some("i"))]);
    // `driver::probe` passes `n + 1`; `driver::fixed` passes 2 and is
    // not named.
    let callers: Vec<(&str, u32)> = n
        .callers
        .iter()
        .map(|c| (c.caller.as_str(), c.line))
        .collect();
    assert_eq!(
        callers,
        [(
            "driver::probe",
            line_of("build_error/driver.rs", "bad(r, n + 1)")
        )]
    );
    assert!(n.any_callers);
}

#[test]
fn bad_depends_on_its_index_and_probe_passes_a_runtime_one() {
    let n = notes(with_debug(), "bad");
    assert!(
        n.chain_from_graph.is_empty(),
        "the DWARF frames give the chain"
    );
    check_bad(&n);
}

#[test]
fn without_debug_info_the_call_graph_gives_the_chain() {
    let n = notes(without_debug(), "bad");
    assert_eq!(
        n.chain_from_graph,
        ["regs::check_offset", "regs::Regs::read_at", "regs::bad"]
    );
    check_bad(&n);
}

#[test]
fn a_generic_with_a_constant_out_of_range_depends_on_nothing_at_run_time() {
    let n = notes(with_debug(), "regs::bad_generic");
    assert!(
        n.complete && n.depends_on.is_empty() && !n.depends_on_runtime,
        "{n:?}"
    );
}

#[test]
fn a_closure_chain_through_core_reaches_the_slice_argument() {
    let n = notes(with_debug(), "regs::bad_closure");
    assert!(n.complete, "{n:?}");
    let names: Vec<Option<&str>> = n.depends_on.iter().map(|a| a.name.as_deref()).collect();
    assert!(names.contains(&Some("offsets")), "{n:?}");
    assert!(!n.any_callers);
}
