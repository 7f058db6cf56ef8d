use std::path::Path;

use crate::file::parse;
use crate::{Invariant, Origin};

/// The error as a user sees it: miette's graphical rendering, without colour.
fn render(text: &str) -> String {
    let e = match parse(Path::new("kernel-invariants.toml"), text) {
        Ok(d) => panic!("expected an error, got {d:?}"),
        Err(e) => e,
    };
    let mut out = String::new();
    miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        .with_width(100)
        .render_report(&mut out, e.as_ref())
        .expect("rendering into a string cannot fail");
    out
}

#[test]
fn a_declaration_is_read_with_its_position() {
    let text = "# Binder\n\n[[empty_at_teardown]]\ntype = \"b::P\"\nfield = \"file\"\nemptied_by = [\"b::P::release\"]\nbecause = \"release() takes it\"\n";
    let d = parse(Path::new("inv.toml"), text).expect("valid");
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].invariant,
        Invariant::EmptyAtTeardown {
            ty: "b::P".into(),
            field: "file".into(),
            emptied_by: vec!["b::P::release".into()],
        }
    );
    let Origin::File { line, .. } = &d[0].origin else {
        panic!("a file origin")
    };
    assert_eq!(*line, 3);
    assert_eq!(d[0].because.as_deref(), Some("release() takes it"));
    assert_eq!(d[0].describe(), "`P.file` is empty at teardown");
}

#[test]
fn both_kinds_are_read_in_file_order() {
    let text = "[[empty_when_stored]]\ntype = \"b::P\"\nfield = \"file\"\nstored_by = [\"b::open\"]\nbecause = \"stored once, into a new P\"\n\n[[empty_at_teardown]]\ntype = \"b::P\"\nfield = \"file\"\nbecause = \"taken in release()\"\n";
    let d = parse(Path::new("inv.toml"), text).expect("valid");
    assert_eq!(
        d.iter().map(|d| d.invariant.clone()).collect::<Vec<_>>(),
        [
            Invariant::EmptyWhenStored {
                ty: "b::P".into(),
                field: "file".into(),
                stored_by: vec!["b::open".into()],
            },
            Invariant::EmptyAtTeardown {
                ty: "b::P".into(),
                field: "file".into(),
                emptied_by: vec![],
            },
        ]
    );
    assert_eq!(d[0].describe(), "`P.file` is empty when stored");
    let Origin::File { line, .. } = &d[1].origin else {
        panic!("a file origin")
    };
    assert_eq!(*line, 7);
    let e = render(
        "[[empty_when_stored]]\ntype = \"b::P\"\nfield = \"f\"\nstored_by = [\" \"]\nbecause = \"x\"\n",
    );
    assert!(e.contains("an empty function path in `stored_by`"), "{e}");
}

#[test]
fn kept_alive_entries_are_read_among_the_others() {
    let text = "[[kept_alive]]\ntype = \"b::Inner\"\nfield = \"waiting\"\nbecause = \"each waiter holds its own reference\"\n\n[[empty_at_teardown]]\ntype = \"b::P\"\nfield = \"file\"\nbecause = \"taken in release()\"\n";
    let d = parse(Path::new("inv.toml"), text).expect("valid");
    assert_eq!(
        d.iter().map(|d| d.invariant.clone()).collect::<Vec<_>>(),
        [
            Invariant::KeptAlive {
                ty: "b::Inner".into(),
                field: "waiting".into(),
                taken_by: vec![],
            },
            Invariant::EmptyAtTeardown {
                ty: "b::P".into(),
                field: "file".into(),
                emptied_by: vec![],
            },
        ]
    );
    assert_eq!(
        d[0].describe(),
        "what `Inner.waiting` holds is kept alive elsewhere"
    );
    // It names the functions whose takes it covers, if any, and no others.
    let e = render(
        "[[kept_alive]]\ntype = \"b::Inner\"\nfield = \"waiting\"\nemptied_by = [\"b::f\"]\nbecause = \"x\"\n",
    );
    assert!(e.contains("unknown field `emptied_by`"), "{e}");
    let d = parse(
        Path::new("inv.toml"),
        "[[kept_alive]]\ntype = \"b::Inner\"\nfield = \"threads\"\ntaken_by = [\"b::Proc::remove_thread\"]\nbecause = \"the caller holds it\"\n",
    )
    .expect("valid");
    assert_eq!(
        d[0].invariant,
        Invariant::KeptAlive {
            ty: "b::Inner".into(),
            field: "threads".into(),
            taken_by: vec!["b::Proc::remove_thread".into()],
        }
    );
    assert_eq!(
        d[0].describe(),
        "what `remove_thread` takes out of `Inner.threads` or stores over is kept alive elsewhere"
    );
    let e = render(
        "[[kept_alive]]\ntype = \"b::Inner\"\nfield = \"threads\"\ntaken_by = [\"\"]\nbecause = \"x\"\n",
    );
    assert!(e.contains("an empty function path in `taken_by`"), "{e}");
    let e = render("[[kept_alive]]\ntype = \"b::Inner\"\nfield = \"waiting\"\nbecause = \" \"\n");
    assert!(e.contains("`because` is empty"), "{e}");
}

#[test]
fn holds_last_entries_are_read_in_file_order() {
    let text = "[[holds_last]]\ntype = \"b::Inner\"\nfield = \"delivered\"\ntaken_by = [\"b::Proc::release\"]\nbecause = \"release drains it after every other holder let go\"\n\n[[kept_alive]]\ntype = \"b::Inner\"\nfield = \"ready\"\nbecause = \"each waiter holds its own\"\n\n[[holds_last]]\ntype = \"b::Inner\"\nfield = \"retired\"\nbecause = \"only retired objects\"\n";
    let d = parse(Path::new("inv.toml"), text).expect("valid");
    assert_eq!(
        d.iter().map(|d| d.invariant.clone()).collect::<Vec<_>>(),
        [
            Invariant::HoldsLast {
                ty: "b::Inner".into(),
                field: "delivered".into(),
                taken_by: vec!["b::Proc::release".into()],
            },
            Invariant::KeptAlive {
                ty: "b::Inner".into(),
                field: "ready".into(),
                taken_by: vec![],
            },
            Invariant::HoldsLast {
                ty: "b::Inner".into(),
                field: "retired".into(),
                taken_by: vec![],
            },
        ]
    );
    assert_eq!(
        d[0].describe(),
        "what `release` takes out of `Inner.delivered` or stores over can be the last reference"
    );
    assert_eq!(
        d[2].describe(),
        "a reference taken out of `Inner.retired` can be the last"
    );
    let e = render("[[holds_last]]\ntype = \"b::Inner\"\nfield = \"retired\"\n");
    assert!(e.contains("missing field `because`"), "{e}");
    let e =
        render("[[holds_last]]\ntype = \"b::Inner<T>\"\nfield = \"retired\"\nbecause = \"x\"\n");
    assert!(e.contains("is not a struct path"), "{e}");
    let e = render("[[holds_last]]\ntype = \"b::Inner\"\nfield = \"a.b\"\nbecause = \"x\"\n");
    assert!(e.contains("is not a field name"), "{e}");
}

#[test]
fn same_object_entries_are_read_in_file_order() {
    let text = "[[kept_alive]]\ntype = \"b::Inner\"\nfield = \"ready\"\nbecause = \"each waiter holds its own\"\n\n[[same_object]]\nfunction = \"b::Proc::debug_print\"\ntype = \"b::Node\"\nfield = \"owner\"\nsame_as = \"self\"\nbecause = \"a process lists its own nodes\"\n";
    let d = parse(Path::new("inv.toml"), text).expect("valid");
    assert_eq!(
        d[1].invariant,
        Invariant::SameObject {
            function: "b::Proc::debug_print".into(),
            ty: "b::Node".into(),
            field: "owner".into(),
            same_as: crate::same_object::ArgPath::parse("self").expect("a path"),
        }
    );
    let Origin::File { line, .. } = &d[1].origin else {
        panic!("a file origin")
    };
    assert_eq!(*line, 6);
    assert_eq!(
        d[1].describe(),
        "where `Proc::debug_print` drops a `Node`, its `owner` is `self`'s object"
    );
    let entry = |ty: &str, same_as: &str| {
        format!(
            "[[same_object]]\nfunction = \"b::f\"\ntype = \"{ty}\"\nfield = \"owner\"\nsame_as = \"{same_as}\"\nbecause = \"x\"\n"
        )
    };
    let d = parse(Path::new("inv.toml"), &entry("b::Tx", "arg1.to.owner")).expect("valid");
    assert!(
        matches!(&d[0].invariant, Invariant::SameObject { same_as, .. } if same_as.to_string() == "arg1.to.owner")
    );
    // A local's name, as a key or as the path's start, is what a rename
    // breaks: each has its message.
    let e = render(&entry("b::Node", "self").replace("type =", "local = \"node\"\ntype ="));
    assert!(
        e.contains("`local = \"node\"` names a local variable"),
        "{e}"
    );
    assert!(e.contains("remove `local`"), "{e}");
    let e = render(&entry("b::Node", "process"));
    assert!(e.contains("`process` is not an argument path"), "{e}");
    assert!(e.contains("`self` or `argN`"), "{e}");
    let e = render(&entry("b::Node", "*self"));
    assert!(e.contains("`*self` is not an argument path"), "{e}");
    let e = render(&entry("b::Node", "self..to"));
    assert!(e.contains("`self..to` is not an argument path"), "{e}");
    let e = render(&entry("b::Node<T>", "self"));
    assert!(e.contains("`b::Node<T>` is not a struct path"), "{e}");
    let e = render(&entry("b::Node", "self").replace("function = \"b::f\"", "function = \"b f\""));
    assert!(e.contains("`b f` is not a function path"), "{e}");
    let e = render(&entry("b::Node", "self").replace("because = \"x\"", "because = \"\""));
    assert!(e.contains("`because` is empty"), "{e}");
    let e = render(&format!(
        "{}taken_by = [\"b::g\"]\n",
        entry("b::Node", "self")
    ));
    assert!(e.contains("unknown field `taken_by`"), "{e}");
    let e =
        render(&entry("b::Node", "self").replace("field = \"owner\"", "field = \"owner.process\""));
    assert!(e.contains("`owner.process` is not a field name"), "{e}");
    let tuple = parse(
        Path::new("inv.toml"),
        &entry("b::Handle", "self").replace("field = \"owner\"", "field = \"0\""),
    )
    .expect("a tuple struct's field");
    assert!(matches!(&tuple[0].invariant, Invariant::SameObject { field, .. } if field == "0"));
}

#[test]
fn an_empty_file_declares_nothing() {
    assert_eq!(parse(Path::new("inv.toml"), "").expect("valid"), vec![]);
}

#[test]
fn unknown_key() {
    insta::assert_snapshot!(render(
        "[[empty_at_teardown]]\ntype = \"b::P\"\nfield = \"f\"\nbecause = \"x\"\nemptied = [\"b::g\"]\n"
    ));
}

#[test]
fn unknown_table() {
    insta::assert_snapshot!(render("[[empty_at_drop]]\ntype = \"b::P\"\n"));
}

#[test]
fn missing_because() {
    insta::assert_snapshot!(render(
        "[[empty_at_teardown]]\ntype = \"b::P\"\nfield = \"f\"\n"
    ));
}

#[test]
fn empty_because() {
    insta::assert_snapshot!(render(
        "[[empty_at_teardown]]\ntype = \"b::P\"\nfield = \"f\"\nbecause = \"  \"\n"
    ));
}

#[test]
fn generic_type() {
    insta::assert_snapshot!(render(
        "[[empty_at_teardown]]\ntype = \"b::P<u32>\"\nfield = \"f\"\nbecause = \"x\"\n"
    ));
}

#[test]
fn field_path() {
    insta::assert_snapshot!(render(
        "[[empty_at_teardown]]\ntype = \"b::P\"\nfield = \"inner.f\"\nbecause = \"x\"\n"
    ));
}

#[test]
fn wrong_type() {
    insta::assert_snapshot!(render(
        "[[empty_at_teardown]]\ntype = \"b::P\"\nfield = 3\nbecause = \"x\"\n"
    ));
}

#[test]
fn empty_emptier() {
    insta::assert_snapshot!(render(
        "[[empty_at_teardown]]\ntype = \"b::P\"\nfield = \"f\"\nemptied_by = [\"\"]\nbecause = \"x\"\n"
    ));
}

#[test]
fn unreadable_file() {
    let e = crate::load(Path::new("/nonexistent/inv.toml")).expect_err("no such file");
    assert!(
        e.message
            .starts_with("cannot read invariants file `/nonexistent/inv.toml`: "),
        "{}",
        e.message
    );
}

/// A never-fails table between two others keeps its place in the file, and
/// says what it declares with the callee's last segment.
#[test]
fn never_fails_is_read_in_file_order() {
    let text = "[[kept_alive]]\ntype = \"b::P\"\nfield = \"ready\"\nbecause = \"x\"\n\n[[never_fails]]\nfunction = \"b::node::Node::add\"\ncallee = \"kernel::alloc::kvec::Vec::<T, A>::push_within_capacity\"\nbecause = \"room was checked\"\n\n[[empty_at_teardown]]\ntype = \"b::P\"\nfield = \"file\"\nbecause = \"y\"\n";
    let d = parse(Path::new("inv.toml"), text).expect("valid");
    assert_eq!(d.len(), 3);
    assert_eq!(
        d[1].invariant,
        Invariant::NeverFails {
            function: "b::node::Node::add".into(),
            callee: "kernel::alloc::kvec::Vec::<T, A>::push_within_capacity".into(),
        }
    );
    assert_eq!(
        d[1].describe(),
        "`push_within_capacity` never fails in `Node::add`"
    );
    assert!(matches!(d[2].invariant, Invariant::EmptyAtTeardown { .. }));
}

/// A callee is named by its path or its last segments, never by a part of
/// a segment.
#[test]
fn a_callee_is_named_at_segment_boundaries() {
    use crate::never_fails::names;
    let path = "kernel::alloc::kvec::Vec::<T, A>::push_within_capacity";
    assert!(names(path, path));
    assert!(names(path, "push_within_capacity"));
    assert!(names(path, "Vec::<T, A>::push_within_capacity"));
    assert!(!names(path, "within_capacity"));
    assert!(names(path, "Vec::push_within_capacity"));
    assert!(names(path, "kvec::Vec::push_within_capacity"));
    assert!(!names(path, "vec::Vec::push_within_capacity"));
    assert!(!names(path, "Vec::push"));
    assert_eq!(
        crate::last_segments(path, 2),
        "Vec::<T, A>::push_within_capacity"
    );
    assert_eq!(crate::last_segments("f", 2), "f");
}
