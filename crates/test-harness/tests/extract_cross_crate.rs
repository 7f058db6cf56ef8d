//! Two crates: B instantiates A's generics; the instances live in B's dump,
//! A's annotations in A's dump, both keyed by the same item path.

use test_harness::{CrateSpec, DumpExt, extract};

#[test]
fn generic_of_crate_a_instantiated_in_crate_b() {
    let out = extract(&[
        CrateSpec::lib("extract/twocrate_a.rs"),
        CrateSpec::lib("extract/twocrate_b.rs").with_extern("twocrate_a"),
    ]);
    assert_eq!(out.dump_paths().len(), 2);
    let a = out.dump("twocrate_a");
    let b = out.dump("twocrate_b");
    assert_ne!(a.header.stable_crate_id, b.header.stable_crate_id);

    let callees: Vec<String> = b.direct_callees("twocrate_b::walk");
    assert!(
        callees.contains(&"twocrate_a::Counter::<twocrate_b::Meters>::bump".to_string()),
        "{callees:?}"
    );
    assert!(
        callees.contains(&"twocrate_a::not_generic".to_string()),
        "{callees:?}"
    );

    // The generic instance has its body in B's dump (from A's metadata) ...
    let bump = b.instance_named("twocrate_a::Counter::<twocrate_b::Meters>::bump");
    assert!(bump.body.is_some());
    assert_eq!(bump.item_path, "twocrate_a::Counter::<T>::bump");
    // ... and its call to B's `Add` impl is resolved.
    let inner: Vec<String> = b.direct_callees("twocrate_a::Counter::<twocrate_b::Meters>::bump");
    assert!(
        inner.contains(&"<twocrate_b::Meters as core::ops::Add>::add".to_string())
            || inner.iter().any(|n| n.ends_with("as std::ops::Add>::add")),
        "{inner:?}"
    );

    // The annotation is in A's dump under the same item path.
    assert!(
        a.items
            .iter()
            .any(|i| i.path == bump.item_path && i.attrs[0].name == "preempt_count")
    );

    // A's non-generic function is codegenned by A: an upstream external in B.
    let ng = b
        .externals
        .iter()
        .find(|e| e.name == "twocrate_a::not_generic")
        .expect("external");
    assert_eq!(
        ng.kind,
        kmir::ExternalKind::Upstream {
            krate: "twocrate_a".into()
        }
    );
    assert!(
        a.instances
            .iter()
            .any(|i| i.symbol == ng.symbol && i.codegenned)
    );

    // The closure passed to A's `apply` is B's.
    assert!(
        b.instances
            .iter()
            .any(|i| i.name.starts_with("twocrate_b::walk::{closure#0}"))
    );
}

#[test]
fn static_whose_type_is_a_projection() {
    let out = extract(&[CrateSpec::lib("extract/aliases.rs").arg("-Dwarnings")]);
    assert!(
        !out.stderr.contains("extraction of crate"),
        "{}",
        out.stderr
    );
    let dump = out.dump("aliases");
    let table = dump
        .statics
        .iter()
        .find(|s| s.path == "aliases::TABLE")
        .expect("the static");
    assert_eq!(
        dump.ty(table.ty).unwrap().display,
        "aliases::IdArray<u8, 2>"
    );
}

/// Each instance carries its item's inline attribute (dump format 7):
/// local items, a closure, and an upstream item of another crate
/// (`build_error`'s `#[inline(never)]` function) and of `core`.
#[test]
fn inline_attributes_are_recorded_per_instance() {
    use kmir::Inline;
    let out = extract(&[
        CrateSpec::lib("build_error/build_error.rs"),
        CrateSpec::lib("build_error/not_inlined.rs").with_extern("build_error"),
    ]);
    let dump = out.dump("not_inlined");
    for (name, inline) in [
        ("not_inlined::direct", Inline::None),
        ("not_inlined::hinted", Inline::Hint),
        ("not_inlined::never", Inline::Never),
        ("not_inlined::always", Inline::Always),
        ("not_inlined::Regs::check", Inline::Always),
        ("not_inlined::generic::<u8>", Inline::None),
        ("not_inlined::closure::{closure#0}", Inline::None),
        ("core::mem::size_of::<u8>", Inline::Always),
    ] {
        assert_eq!(dump.instance_named(name).inline, inline, "{name}");
    }
    let build_error = out.dump("build_error");
    let never = build_error
        .instances
        .iter()
        .find(|i| i.symbol == "rust_build_error")
        .expect("`build_error` is in its crate's dump");
    assert_eq!(never.inline, Inline::Never);
    // Drop glue and shims have no attribute of their own.
    assert!(
        dump.instances
            .iter()
            .filter(|i| !matches!(
                i.kind,
                kmir::InstanceKind::Item | kmir::InstanceKind::Closure
            ))
            .all(|i| i.inline == Inline::None)
    );
}

/// A local function that codegen does not emit here (inlinable, never called
/// by its own crate) still has its drop-elaborated body in the dump, in a
/// library and in a binary alike, and at every optimisation level: the MIR
/// inliner must not have erased its calls.
#[test]
fn uncalled_inlinable_functions_are_drop_elaborated() {
    for crate_type in ["lib", "bin"] {
        for opt in ["0", "2", "3"] {
            let spec = CrateSpec {
                crate_type,
                ..CrateSpec::lib("extract/inline_unused.rs").opt(opt)
            };
            let dump = extract(&[spec]).dump("inline_unused");
            for f in ["inline_unused::helper", "inline_unused::small"] {
                let inst = dump.instance_named(f);
                let body = inst.body.as_ref().expect("a body");
                assert!(
                    body.drop_elaborated,
                    "{f} ({crate_type}, -Copt-level={opt}): optimized MIR"
                );
                let callees = dump.direct_callees(f);
                assert!(
                    callees.contains(&"inline_unused::bump".to_string()),
                    "{f} ({crate_type}, -Copt-level={opt}): {callees:?}"
                );
            }
            let helper = dump.direct_callees("inline_unused::helper");
            assert_eq!(helper.len(), 2, "{crate_type} {opt}: {helper:?}");
        }
    }
}
