//! The printer on dumps of fixture crates compiled through kextract,
//! snapshotted with the machine-specific paths redacted (see `common`).
//! Symbols keep their crate hashes: they are deterministic for the pinned
//! compiler.

mod common;

use std::io::Write;

use kanalyze::print::{Options, Printer, print_dump};
use kmir::CrateDump;
use test_harness::{CrateSpec, DumpExt, extract};

/// The dump of the single-crate fixture `extract/<name>.rs` at opt-level 0.
fn dump_of(name: &str) -> CrateDump {
    extract(&[CrateSpec::lib(&format!("extract/{name}.rs"))]).dump(name)
}

fn text(out: Vec<u8>) -> String {
    let text = String::from_utf8(out).expect("the printer writes UTF-8");
    common::redact(&text, &[])
}

/// The instances of `lockapi` whose bodies show each thing the printer
/// spells out; the others differ from them only in names.
const LOCKAPI_SELECTION: &[&str] = &[
    // A call to a foreign C function (an external), a struct aggregate.
    "lockapi::SpinLock::<u32>::lock",
    // Enum aggregates and a call that moves an `Option<Guard>` away.
    "lockapi::maybe_guard",
    // A drop terminator with its glue ...
    "std::mem::drop::<std::option::Option<lockapi::Guard<'_, u32>>>",
    // ... the glue of `Option<Guard>` (a downcast to `Some`, then the
    // glue of `Guard`) ...
    "std::ptr::drop_glue::<std::option::Option<lockapi::Guard<'_, u32>>>",
    // ... which calls the `Drop` impl, which unlocks.
    "std::ptr::drop_glue::<lockapi::Guard<'_, u32>>",
    "<lockapi::Guard<'_, u32> as std::ops::Drop>::drop",
    // A virtual call, and the unsize coercions that build its vtables.
    "lockapi::probe_dyn",
    "lockapi::probe_all",
    // A fn item reified into a pointer, and the indirect call through it.
    "lockapi::reify",
    "lockapi::call_ptr",
    // A closure: what it captured is a field of its first argument.
    "lockapi::with_closure::{closure#0}",
    // Exported, and reads a static.
    "lockapi::exported_entry",
];

#[test]
fn prints_selected_lockapi_instances_and_the_tables() {
    let dump = dump_of("lockapi");
    let p = Printer::new(&dump);
    let mut out = Vec::new();
    p.header(&mut out, None).unwrap();
    for name in LOCKAPI_SELECTION {
        writeln!(out).unwrap();
        p.instance(&mut out, dump.instance_named(name), Options::default())
            .unwrap();
    }
    p.tables(&mut out).unwrap();
    let text = text(out);
    // What the snapshot must show, should it ever be accepted blindly.
    assert!(
        text.contains(
            "_2 = call lockapi::spin_lock(move _3) -> [return: bb2, unwind unreachable];  \
             // symbol spin_lock, external foreign"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "drop(((*_1) as Some).0) glue std::ptr::drop_glue::<lockapi::Guard<'_, u32>>"
        )
    );
    assert!(text.contains("[3] lockapi::Device::probe: <lockapi::Nvme as lockapi::Device>::probe"));
    insta::assert_snapshot!(text);
}

#[test]
fn prints_lockapi_without_bodies() {
    let dump = dump_of("lockapi");
    let mut out = Vec::new();
    print_dump(&mut out, &dump, None, Options { bodies: false }).unwrap();
    let text = text(out);
    assert!(!text.contains("bb0"), "no blocks without bodies");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("fn ")).count(),
        dump.instances.len(),
        "every instance keeps its signature"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn prints_enum_discriminants_that_are_not_the_variant_index() {
    let dump = dump_of("enums");
    let mut out = Vec::new();
    print_dump(&mut out, &dump, None, Options::default()).unwrap();
    let text = text(out);
    // The values the `match` compares against are the declared ones.
    assert!(text.contains("switchInt(move _2) -> [5: bb4, 10: bb3, 11: bb2, otherwise: bb1];"));
    assert!(text.contains("    Idle = 5,\n    Busy = 10,\n    Done = 11,\n"));
    assert!(text.contains("    Tick,\n    Data(u32),\n"));
    insta::assert_snapshot!(text);
}

#[test]
fn round_trips_through_the_codec() {
    let out = extract(&[CrateSpec::lib("extract/lockapi.rs")]);
    let [path] = out.dump_paths().try_into().expect("one dump");
    let bytes = std::fs::read(&path).unwrap();
    let dump = kmir::decode(&bytes).unwrap_or_else(|e| panic!("{e}"));
    // kextract writes exactly what `encode` makes of the dump it decodes to.
    assert_eq!(kmir::encode(&dump), bytes);
    assert_eq!(kmir::decode(&kmir::encode(&dump)).unwrap(), dump);
}
