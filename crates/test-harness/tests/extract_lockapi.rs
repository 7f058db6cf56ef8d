//! What kextract writes for `fixtures/extract/lockapi.rs`, compiled by the
//! real compiler, at opt-level 0 and at the kernel's opt-level 2.

use kmir::{
    Callee, CastKind, ConstValue, InstanceKind, Rvalue, StatementKind, TerminatorKind, TyKind,
};
use test_harness::{CrateSpec, DumpExt, extract, line_of};

const SRC: &str = "extract/lockapi.rs";

fn dump_at(opt: &'static str) -> kmir::CrateDump {
    extract(&[CrateSpec::lib(SRC).opt(opt)]).dump("lockapi")
}

#[test]
fn header_names_the_crate_and_compiler() {
    let dump = dump_at("0");
    assert_eq!(dump.header.crate_name, "lockapi");
    assert_eq!(dump.header.crate_types, vec!["rlib".to_string()]);
    assert!(
        dump.header.rustc_version.contains("1.97.0-nightly"),
        "{}",
        dump.header.rustc_version
    );
    assert!(dump.header.producer.starts_with("kextract "));
    assert_eq!(dump.header.edition, "2024");
    assert!(
        dump.header.target.contains("x86_64"),
        "{}",
        dump.header.target
    );
}

#[test]
fn generic_call_instantiated_two_ways_resolves_to_two_instances() {
    for opt in ["0", "2"] {
        let dump = dump_at(opt);
        let calls: Vec<&kmir::Name> = dump
            .calls_in("lockapi::uses_generic")
            .into_iter()
            .filter_map(|c| match c {
                Callee::Direct { symbol } => Some(symbol),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), 2, "opt-level {opt}: {calls:?}");
        assert_ne!(calls[0], calls[1]);
        let names: Vec<String> = calls.iter().map(|s| dump.name_of(s)).collect();
        assert_eq!(
            names,
            ["lockapi::generic_id::<u32>", "lockapi::generic_id::<u64>"]
        );
        for s in calls {
            let callee = dump
                .instance(s)
                .expect("generic instance has a body in the dump");
            assert_eq!(callee.item_path, "lockapi::generic_id");
            assert!(callee.body.is_some());
        }
    }
}

#[test]
fn drop_of_option_guard_resolves_to_its_drop_glue() {
    let dump = dump_at("0");
    // `drop(g)` moves the `Option<Guard>` into `mem::drop`, whose body drops it.
    let drop_fn =
        dump.instance_named("std::mem::drop::<std::option::Option<lockapi::Guard<'_, u32>>>");
    let body = drop_fn.body.as_ref().unwrap();
    let glue = body
        .blocks
        .iter()
        .find_map(|b| match &b.terminator.kind {
            TerminatorKind::Drop { glue: Some(g), .. } => Some(g.clone()),
            _ => None,
        })
        .expect("mem::drop drops its argument");
    let glue_instance = dump
        .instance(&glue)
        .expect("drop glue is an instance of the dump");
    let InstanceKind::DropGlue { ty } = glue_instance.kind else {
        panic!("{:?}", glue_instance.kind)
    };
    assert_eq!(
        dump.ty(ty).unwrap().display,
        "core::option::Option<lockapi::Guard<'_, u32>>"
    );
    // The glue switches on the discriminant and drops the guard in `Some`.
    let inner: Vec<String> = glue_instance
        .body
        .as_ref()
        .unwrap()
        .blocks
        .iter()
        .filter_map(|b| match &b.terminator.kind {
            TerminatorKind::Drop { glue: Some(g), .. } => Some(dump.name_of(g)),
            _ => None,
        })
        .collect();
    assert!(
        inner
            .iter()
            .any(|n| n == "std::ptr::drop_glue::<lockapi::Guard<'_, u32>>"),
        "{inner:?}"
    );
    // And the guard's glue calls `<Guard as Drop>::drop`, which calls `spin_unlock`.
    assert_eq!(
        dump.direct_callees("std::ptr::drop_glue::<lockapi::Guard<'_, u32>>"),
        ["<lockapi::Guard<'_, u32> as std::ops::Drop>::drop"]
    );
    assert!(
        dump.direct_callees("<lockapi::Guard<'_, u32> as std::ops::Drop>::drop")
            .contains(&"lockapi::spin_unlock".to_string())
    );
}

#[test]
fn dyn_coercion_builds_a_vtable_with_the_impl_methods() {
    let dump = dump_at("0");
    let body = dump
        .instance_named("lockapi::probe_all")
        .body
        .as_ref()
        .unwrap();
    let mut vtables = Vec::new();
    for b in &body.blocks {
        for s in &b.statements {
            if let StatementKind::Assign { rvalue, .. } = &s.kind
                && let Rvalue::Cast {
                    kind: CastKind::Unsize { vtable: Some(v) },
                    ..
                } = &**rvalue
            {
                vtables.push(*v);
            }
        }
    }
    assert_eq!(vtables.len(), 2, "two `&dyn Device` coercions");
    let mut seen = Vec::new();
    for v in vtables {
        let vt = &dump.vtables[v as usize];
        assert_eq!(vt.trait_path.as_deref(), Some("lockapi::Device"));
        assert!(matches!(
            dump.ty(vt.dyn_ty).unwrap().kind,
            TyKind::Dynamic { .. }
        ));
        let methods: Vec<(String, String)> = vt
            .entries
            .iter()
            .filter_map(|e| match e {
                kmir::VtableEntry::Method { method, symbol } => {
                    Some((method.to_string(), dump.name_of(symbol)))
                }
                _ => None,
            })
            .collect();
        assert_eq!(methods.len(), 1);
        assert_eq!(methods[0].0, "lockapi::Device::probe");
        seen.push((
            dump.ty(vt.concrete).unwrap().display.to_string(),
            methods[0].1.clone(),
        ));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                "lockapi::Ahci".to_string(),
                "<lockapi::Ahci as lockapi::Device>::probe".to_string()
            ),
            (
                "lockapi::Nvme".to_string(),
                "<lockapi::Nvme as lockapi::Device>::probe".to_string()
            ),
        ]
    );
}

#[test]
fn trait_object_call_is_virtual_with_its_slot() {
    let dump = dump_at("0");
    let calls = dump.calls_in("lockapi::probe_dyn");
    let virt = calls
        .iter()
        .find_map(|c| match c {
            Callee::Virtual {
                trait_method,
                trait_path,
                slot,
            } => Some((trait_method, trait_path, *slot)),
            _ => None,
        })
        .expect("a virtual call");
    assert_eq!(virt.0, "lockapi::Device::probe");
    assert_eq!(virt.1, "lockapi::Device");
    // Slots 0..3 are drop, size and align.
    assert_eq!(virt.2, 3);
}

#[test]
fn annotation_is_attached_to_the_item_its_instances_name() {
    let dump = dump_at("0");
    let lock = dump.instance_named("lockapi::SpinLock::<u32>::lock");
    let item = dump
        .items
        .iter()
        .find(|i| i.path == lock.item_path)
        .expect("attributes of SpinLock::lock");
    assert_eq!(item.attrs.len(), 1);
    let attr = &item.attrs[0];
    assert_eq!(
        (attr.tool.as_str(), attr.name.as_str()),
        ("klint", "preempt_count")
    );
    assert_eq!(
        attr.text,
        "#[klint::preempt_count(adjust = 1, expect = 0..)]"
    );
    assert_eq!(
        attr.span.lo_line,
        line_of(SRC, "#[klint::preempt_count(adjust = 1, expect = 0..)]")
    );
    assert_eq!(
        dump.file(attr.span.file).unwrap(),
        test_harness::fixtures_dir().join(SRC).to_str().unwrap()
    );
    // Foreign functions' annotations are kept too, under their own path.
    let spin_lock = dump
        .items
        .iter()
        .find(|i| i.path == "lockapi::spin_lock")
        .unwrap();
    assert_eq!(spin_lock.kind, "foreign function");
    assert!(
        spin_lock.attrs[0]
            .text
            .contains("adjust = 1, expect = 0.., unchecked")
    );
    // Unannotated items are not listed.
    assert!(!dump.items.iter().any(|i| i.path == "lockapi::generic_id"));
}

#[test]
fn spans_point_at_the_source_lines() {
    let dump = dump_at("0");
    let body = dump
        .instance_named("lockapi::SpinLock::<u32>::lock")
        .body
        .as_ref()
        .unwrap();
    let call_line = body
        .blocks
        .iter()
        .find_map(|b| match &b.terminator.kind {
            TerminatorKind::Call {
                callee: Callee::Direct { symbol },
                ..
            } if symbol == "spin_lock" => Some(b.terminator.span.lo_line),
            _ => None,
        })
        .expect("SpinLock::lock calls spin_lock");
    assert_eq!(
        call_line,
        line_of(SRC, "unsafe { spin_lock(self.raw.get()) };")
    );
    let guard_local = body.locals[0].span;
    assert_eq!(
        guard_local.lo_line,
        line_of(SRC, "pub fn lock(&self) -> Guard<'_, T> {")
    );
    let inst = dump.instance_named("lockapi::maybe_guard");
    assert_eq!(inst.span.lo_line, line_of(SRC, "pub fn maybe_guard("));
    let g = inst.body.as_ref().unwrap();
    let local = g
        .var_names
        .iter()
        .find(|v| v.name == "g")
        .expect("user variable `g`");
    assert_eq!(
        g.locals[local.local as usize].span.lo_line,
        line_of(SRC, "let g: Option<Guard<'_, u32>>")
    );
}

#[test]
fn static_ops_table_lists_its_function_pointers() {
    let dump = dump_at("2");
    let ops = dump
        .statics
        .iter()
        .find(|s| s.path == "lockapi::DEVICE_OPS")
        .unwrap();
    assert_eq!(ops.symbol, "DEVICE_OPS");
    let names: Vec<String> = ops.fn_ptrs.iter().map(|s| dump.name_of(s)).collect();
    assert_eq!(names, ["lockapi::callback_a", "lockapi::callback_b"]);
    for s in &ops.fn_ptrs {
        assert!(dump.instance(s).is_some_and(|i| i.body.is_some()));
    }
    // And which field of the table each one is in.
    let fields: Vec<(String, String, String)> = ops
        .fn_fields
        .iter()
        .map(|f| {
            (
                f.owner.to_string(),
                f.field.to_string(),
                dump.name_of(&f.symbol),
            )
        })
        .collect();
    assert_eq!(
        fields,
        [
            (
                "lockapi::Ops".into(),
                "open".into(),
                "lockapi::callback_a".into()
            ),
            (
                "lockapi::Ops".into(),
                "release".into(),
                "lockapi::callback_b".into()
            )
        ]
    );
}

#[test]
fn fn_pointer_reification_names_the_function() {
    let dump = dump_at("0");
    let body = dump.instance_named("lockapi::reify").body.as_ref().unwrap();
    let reified: Vec<String> = body
        .blocks
        .iter()
        .flat_map(|b| &b.statements)
        .filter_map(|s| match &s.kind {
            StatementKind::Assign { rvalue, .. } => match &**rvalue {
                Rvalue::Cast {
                    kind: CastKind::ReifyFnPointer { symbol },
                    ..
                } => Some(dump.name_of(symbol)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(reified, ["lockapi::callback_a"]);
    let indirect = dump.calls_in("lockapi::call_ptr");
    assert!(
        matches!(indirect[..], [Callee::Indirect { .. }]),
        "{indirect:?}"
    );
}

#[test]
fn closures_exported_items_and_foreign_externals() {
    let dump = dump_at("0");
    let closure = dump.instance_named("lockapi::with_closure::{closure#0}");
    assert_eq!(closure.kind, InstanceKind::Closure);
    assert!(
        dump.direct_callees("lockapi::with_closure::{closure#0}")
            .contains(&"lockapi::SpinLock::<u32>::lock".to_string())
    );
    let entry = dump.instance_named("lockapi::exported_entry");
    assert!(entry.exported && entry.symbol == "exported_entry");
    assert!(!dump.instance_named("lockapi::reify").exported);
    let mut foreign: Vec<&str> = dump
        .externals
        .iter()
        .filter(|e| e.kind == kmir::ExternalKind::Foreign)
        .map(|e| e.symbol.as_str())
        .collect();
    foreign.sort();
    assert_eq!(foreign, ["msleep", "spin_lock", "spin_unlock"]);
}

#[test]
fn call_structure_survives_optimisation() {
    // At opt-level 2 the MIR inliner would inline `sleep` and `SpinLock::lock`;
    // the dump keeps the drop-elaborated bodies, so the calls are still there.
    let dump = dump_at("2");
    assert!(
        dump.direct_callees("<lockapi::Nvme as lockapi::Device>::probe")
            .contains(&"lockapi::sleep".to_string())
    );
    let entry = dump.direct_callees("lockapi::exported_entry");
    assert!(
        entry.contains(&"lockapi::SpinLock::<u32>::lock".to_string()),
        "{entry:?}"
    );
    let lock = dump.instance_named("lockapi::SpinLock::<u32>::lock");
    assert!(lock.body.as_ref().unwrap().drop_elaborated);
    // Not emitted by codegen (inlined), still dumped because it is called.
    assert!(!lock.codegenned);
    assert!(dump.instance_named("lockapi::exported_entry").codegenned);
    // Every direct callee is either an instance or an external of the dump.
    for inst in &dump.instances {
        for b in &inst.body.as_ref().unwrap().blocks {
            if let TerminatorKind::Call {
                callee: Callee::Direct { symbol },
                ..
            } = &b.terminator.kind
            {
                let _ = dump.name_of(symbol);
            }
        }
    }
}

#[test]
fn constants_keep_their_values() {
    let dump = dump_at("0");
    let body = dump.instance_named("lockapi::sleep").body.as_ref().unwrap();
    assert!(body.drop_elaborated);
    let callb = dump
        .instance_named("lockapi::callback_b")
        .body
        .as_ref()
        .unwrap();
    let five = callb.blocks.iter().find_map(|b| match &b.terminator.kind {
        TerminatorKind::Call { args, .. } => args.iter().find_map(|a| match a {
            kmir::Operand::Constant(c) => match c.value {
                ConstValue::Scalar(v) => Some(v),
                _ => None,
            },
            _ => None,
        }),
        _ => None,
    });
    assert_eq!(five, Some(5));
}
