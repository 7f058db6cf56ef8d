//! Linking dumps compiled by the real compiler into one program.

use program::{EdgeKind, FnId, FnKind, IndirectKey, LinkedCrate, Program, RootReason};
use solver::Schedule;
use test_harness::{CrateSpec, Extracted, extract};

fn loaded(out: &Extracted) -> Vec<LinkedCrate> {
    out.dump_paths()
        .into_iter()
        .map(|path| {
            let dump = kmir::read_file_lazy(&path).unwrap();
            LinkedCrate::lazy(path, dump, None)
        })
        .collect()
}

fn linked(out: &Extracted) -> Program {
    let crates = loaded(out);
    let (program, problems) = program::link(crates);
    assert!(problems.is_empty(), "{problems:?}");
    program
}

fn id(p: &Program, name: &str) -> FnId {
    let found: Vec<FnId> = p
        .functions
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name == name)
        .map(|(i, _)| FnId(i as u32))
        .collect();
    assert_eq!(found.len(), 1, "`{name}`: {found:?}");
    found[0]
}

fn callee_names(p: &Program, name: &str, kind: EdgeKind) -> Vec<String> {
    let mut v: Vec<String> = p
        .callees(id(p, name))
        .into_iter()
        .filter(|(_, e)| e.kind == kind)
        .map(|(t, _)| p.function(t).name.to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn generic_call_across_crates_is_one_edge_to_a_body() {
    let out = extract(&[
        CrateSpec::lib("extract/twocrate_a.rs"),
        CrateSpec::lib("extract/twocrate_b.rs").with_extern("twocrate_a"),
    ]);
    let p = linked(&out);
    assert_eq!(p.stats.crates, 2);
    let calls = callee_names(&p, "twocrate_b::walk", EdgeKind::Call);
    assert!(
        calls.contains(&"twocrate_a::Counter::<twocrate_b::Meters>::bump".to_string()),
        "{calls:?}"
    );
    // `not_generic` is an external in B's dump but has a body in A's: linked to it.
    let ng = id(&p, "twocrate_a::not_generic");
    assert!(matches!(p.function(ng).kind, FnKind::Body { .. }));
    assert!(
        p.callers(ng)
            .iter()
            .any(|(c, _)| p.function(*c).name == "twocrate_b::walk")
    );
    assert_eq!(p.stats.direct_unresolved, Vec::<(String, String)>::new());
}

#[test]
fn trait_object_call_reaches_both_implementations() {
    let p = linked(&extract(&[CrateSpec::lib("extract/graph.rs")]));
    let targets = callee_names(&p, "graph::dispatch", EdgeKind::Virtual);
    assert_eq!(
        targets,
        [
            "<graph::Fast as graph::Handler>::handle",
            "<graph::Slow as graph::Handler>::handle"
        ]
    );
}

#[test]
fn fn_pointer_in_static_ops_table_is_a_root_and_a_target() {
    let p = linked(&extract(&[CrateSpec::lib("extract/graph.rs")]));
    let open = id(&p, "graph::my_open");
    let read = id(&p, "graph::my_read");
    for f in [open, read] {
        assert!(
            p.roots.iter().any(|(r, why)| *r == f
                && *why
                    == RootReason::InStatic {
                        path: "graph::MY_FOPS".into()
                    }),
            "{:?}",
            p.roots
        );
    }
    // `(ops.open)(x)` may call any `fn(u32) -> u32` whose address is taken.
    let targets = callee_names(&p, "graph::call_open", EdgeKind::Indirect);
    assert_eq!(targets, ["graph::my_open", "graph::my_read"]);
    // The exported static's functions are roots; an exported fn would be too.
    assert!(p.roots.iter().all(|(r, _)| *r != id(&p, "graph::both")));
}

#[test]
fn c_abi_pointer_may_come_from_outside() {
    let p = linked(&extract(&[CrateSpec::lib("extract/graph.rs")]));
    let targets: Vec<(String, FnKind)> = p
        .callees(id(&p, "graph::call_c_pointer"))
        .into_iter()
        .map(|(t, _)| (p.function(t).name.to_string(), p.function(t).kind.clone()))
        .collect();
    // `c_callback` is reified (passed to C), so it is a possible target, and
    // so is anything C registered: the unknown target.
    assert!(
        targets.iter().any(|(n, _)| n == "graph::c_callback"),
        "{targets:?}"
    );
    assert!(
        targets.iter().any(|(_, k)| *k
            == FnKind::Unknown(IndirectKey::FnPtr {
                sig: "extern \"C\" fn(u32) -> u32".into()
            })),
        "{targets:?}"
    );
    // The C function is a foreign external.
    assert_eq!(
        p.function(id(&p, "graph::register_callback")).kind,
        FnKind::Foreign
    );
}

#[test]
fn mutual_recursion_is_one_scc_scheduled_after_its_callees() {
    let p = linked(&extract(&[CrateSpec::lib("extract/graph.rs")]));
    let s = Schedule::new(&p);
    let even = id(&p, "graph::is_even");
    let odd = id(&p, "graph::is_odd");
    assert_eq!(s.scc_of[even.index()], s.scc_of[odd.index()]);
    let scc = s.scc_of[even.index()];
    assert_eq!(s.sccs[scc as usize].len(), 2);
    assert!(s.recursive(&p).contains(&scc));
    // my_read calls is_even: its SCC is on a later level.
    let level = |scc: u32| s.levels.iter().position(|l| l.contains(&scc)).unwrap();
    assert!(level(s.scc_of[id(&p, "graph::my_read").index()]) > level(scc));
    // Every function is in exactly one SCC, every SCC on one level.
    assert_eq!(
        s.sccs.iter().map(Vec::len).sum::<usize>(),
        p.functions.len()
    );
    assert_eq!(s.levels.iter().map(Vec::len).sum::<usize>(), s.sccs.len());
}

#[test]
fn duplicate_dumps_are_reported_and_skipped() {
    let out = extract(&[CrateSpec::lib("extract/graph.rs")]);
    let path = out.dump_paths()[0].clone();
    let dump = kmir::read_file(&path).unwrap();
    let mut changed = dump.clone();
    changed.instances.pop();
    let at = |s| Some(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s));
    let crates = vec![
        LinkedCrate::eager("a/graph.kmir".into(), dump.clone(), at(10)),
        LinkedCrate::eager("b/graph.kmir".into(), dump.clone(), at(20)),
        LinkedCrate::eager("c/graph.kmir".into(), changed.clone(), at(30)),
    ];
    let (p, problems) = program::link(crates);
    assert_eq!(p.stats.crates, 1);
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "`b/graph.kmir` is an identical copy of `a/graph.kmir` (crate `graph`); it is ignored",
            "`c/graph.kmir` and `a/graph.kmir` both claim crate `graph` (same name and crate id) but differ; using the newer `c/graph.kmir` (are they from two builds of the same tree?)",
        ]
    );
    // The newer dump is the one linked.
    assert_eq!(p.crates[0].path, std::path::PathBuf::from("c/graph.kmir"));
    assert_eq!(p.crates[0].dump, changed);
}

#[test]
fn crates_of_another_target_are_left_out() {
    let out = extract(&[
        CrateSpec::lib("extract/twocrate_a.rs"),
        CrateSpec::lib("extract/twocrate_b.rs").with_extern("twocrate_a"),
        CrateSpec::lib("extract/graph.rs"),
    ]);
    let mut crates = loaded(&out);
    for c in &mut crates {
        if c.dump.header.crate_name == "twocrate_a" {
            c.dump.header.target = "host-tools".into();
        }
    }
    let real = crates
        .iter()
        .find(|c| c.dump.header.crate_name == "graph")
        .unwrap()
        .dump
        .header
        .target
        .clone();
    let host = crates
        .iter()
        .find(|c| c.dump.header.crate_name == "twocrate_a")
        .unwrap()
        .path
        .clone();
    let (p, problems) = program::link(crates);
    assert_eq!(p.stats.crates, 2);
    assert_eq!(
        problems,
        [program::LinkProblem::OtherTarget {
            target: "host-tools".into(),
            program_target: real.to_string(),
            crates: vec!["twocrate_a".into()],
            paths: vec![host],
        }]
    );
}

#[test]
fn dyn_drop_glue_reaches_the_glue_of_every_vtable() {
    let p = linked(&extract(&[CrateSpec::lib("ui/dyn_drop.rs")]));
    // Every `dyn Job` is a `Flush`; `Work` objects are `Quick` (no glue:
    // nothing to drop) or `Boxed`.
    assert_eq!(
        callee_names(
            &p,
            "std::ptr::drop_glue::<dyn dyn_drop::Job>",
            EdgeKind::Drop
        ),
        ["std::ptr::drop_glue::<dyn_drop::Flush>"]
    );
    assert_eq!(
        callee_names(
            &p,
            "std::ptr::drop_glue::<dyn dyn_drop::Work>",
            EdgeKind::Drop
        ),
        ["std::ptr::drop_glue::<dyn_drop::Boxed>"]
    );
    // No `Foreign` vtable in the program: the glue keeps its own drop (klint's
    // default applies in the analysis).
    assert_eq!(
        callee_names(
            &p,
            "std::ptr::drop_glue::<dyn dyn_drop::Foreign>",
            EdgeKind::Drop
        ),
        ["std::ptr::drop_glue::<dyn dyn_drop::Foreign>"]
    );
}

/// A program linked from dumps whose bodies are decoded on demand is the
/// program linked from the same dumps decoded whole: the same functions,
/// edges and roots, and every body decoded alone equal to the eagerly
/// decoded one (kept or not, asked once or twice).
#[test]
fn bodies_decoded_on_demand_are_the_eager_ones() {
    let out = extract(&[
        CrateSpec::lib("extract/twocrate_a.rs"),
        CrateSpec::lib("extract/twocrate_b.rs").with_extern("twocrate_a"),
        CrateSpec::lib("extract/graph.rs"),
    ]);
    let eager: Vec<LinkedCrate> = out
        .dump_paths()
        .into_iter()
        .map(|path| {
            let dump = kmir::read_file(&path).unwrap();
            LinkedCrate::eager(path, dump, None)
        })
        .collect();
    let (eager, problems) = program::link(eager);
    assert!(problems.is_empty(), "{problems:?}");
    let lazy = linked(&out);
    assert_eq!(lazy.functions, eager.functions);
    assert_eq!(lazy.roots, eager.roots);
    assert_eq!(lazy.address_taken, eager.address_taken);
    assert_eq!(lazy.call_arities, eager.call_arities);
    assert_eq!(lazy.arities(), eager.arities());
    for i in 0..eager.functions.len() {
        let f = FnId(i as u32);
        assert_eq!(lazy.callees(f), eager.callees(f));
    }
    let mut bodies = 0;
    for keep in [false, true, true, false] {
        lazy.keep_bodies(keep);
        for (f, krate, inst) in eager.bodies() {
            let want = inst.body.as_deref().expect("an eager body");
            let got = lazy.body(f).expect("a lazy body");
            assert_eq!(*got, *want, "{}", inst.name);
            assert_eq!(krate.body_facts(instance_of(&eager, f)), lazy.body_facts(f));
            bodies += 1;
        }
    }
    assert!(bodies > 40, "{bodies} bodies compared");
    // The dumps' own instances: every one, body or not.
    for c in &lazy.crates {
        let dump = kmir::read_file(&c.path).unwrap();
        for (i, inst) in dump.instances.iter().enumerate() {
            assert_eq!(c.has_body(i as u32), inst.body.is_some());
            assert_eq!(c.body(i as u32).as_deref(), inst.body.as_deref());
        }
    }
}

fn instance_of(p: &Program, f: FnId) -> u32 {
    match p.function(f).kind {
        FnKind::Body { instance, .. } => instance,
        _ => panic!("no body"),
    }
}
