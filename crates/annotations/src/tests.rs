use kmir::{ItemAttrs, Span, ToolAttr};

use super::*;

fn span(line: u32) -> Span {
    Span {
        file: 0,
        lo_line: line,
        lo_col: 1,
        hi_line: line,
        hi_col: 40,
    }
}

/// A `ToolAttr` as the extractor records it, from its text.
fn attr(text: &str) -> ToolAttr {
    attr_at(text, 1)
}

fn attr_at(text: &str, line: u32) -> ToolAttr {
    let path = text
        .trim_start_matches("#!")
        .trim_start_matches('#')
        .trim_start_matches('[');
    let end = path
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(path.len());
    let path = &path[..end];
    let (tool, name) = path.split_once("::").unwrap_or((path, ""));
    ToolAttr {
        tool: tool.into(),
        name: name.into(),
        text: text.into(),
        span: span(line),
    }
}

fn pc(text: &str) -> PreemptCount {
    match parse(&attr(text)) {
        Ok(Annotation::PreemptCount(pc)) => pc,
        other => panic!("{text}: {other:?}"),
    }
}

fn range(s: &str) -> ExpectRange {
    s.parse().unwrap()
}

/// The error as `message | help`.
fn err(text: &str) -> String {
    match parse(&attr(text)) {
        Err(e) => {
            assert_eq!(e.level, Level::Error);
            format!("{} | {}", e.message, e.help.unwrap_or_default())
        }
        Ok(a) => panic!("{text} parsed as {a:?}"),
    }
}

const BAD_PC: &str = "incorrect usage of `#[kint::preempt_count]`";

#[test]
fn preempt_count_forms() {
    assert_eq!(
        pc("#[klint::preempt_count(adjust = 1, expect = 0..)]"),
        PreemptCount {
            adjust: Some(1),
            expect: Some(ExpectRange::TOP),
            unchecked: false
        }
    );
    assert_eq!(
        pc("#[klint::preempt_count(adjust = -1, expect = 1.., unchecked)]"),
        PreemptCount {
            adjust: Some(-1),
            expect: Some(range("1..")),
            unchecked: true
        }
    );
    assert_eq!(
        pc("#[klint::preempt_count(expect = 1..=2)]").expect,
        Some(range("1..3"))
    );
    assert_eq!(
        pc("#[klint::preempt_count(expect = ..)]").expect,
        Some(ExpectRange::TOP)
    );
    assert_eq!(
        pc("#[klint::preempt_count(expect = ..2)]").expect,
        Some(range("0..2"))
    );
    assert_eq!(
        pc("#[klint::preempt_count(expect = 0)]").expect,
        Some(range("0"))
    );
    assert_eq!(
        pc("#[klint::preempt_count(expect = 1u32..)]").expect,
        Some(range("1.."))
    );
    // Any order, trailing comma, spacing free.
    assert_eq!(
        pc("#[klint::preempt_count(unchecked, expect=0, adjust = 3,)]"),
        PreemptCount {
            adjust: Some(3),
            expect: Some(range("0")),
            unchecked: true
        }
    );
    assert_eq!(pc("#[klint::preempt_count(adjust = 0)]").expect, None);
    assert_eq!(
        pc("#[klint::preempt_count(adjust = 1024)]").adjust,
        Some(1024)
    );
    assert_eq!(
        pc("#[klint::preempt_count(adjust = -1024)]").adjust,
        Some(-1024)
    );
    assert_eq!(
        pc("#[klint::preempt_count(expect = 1024..)]").expect,
        Some(range("1024.."))
    );
    // Any delimiter, as klint's `DelimArgs`.
    assert_eq!(pc("#[klint::preempt_count[adjust = 1]]").adjust, Some(1));
    // Inner attributes.
    assert_eq!(pc("#![klint::preempt_count(adjust = 1)]").adjust, Some(1));
}

/// klint lets a repeated property overwrite the earlier one; here it is an
/// error, since which value was meant cannot be known.
#[test]
fn repeated_property() {
    for (text, prop) in [
        ("#[klint::preempt_count(adjust = 1, adjust = 2)]", "adjust"),
        (
            "#[klint::preempt_count(expect = 0, adjust = 1, expect = 1..)]",
            "expect",
        ),
        (
            "#[klint::preempt_count(adjust = 0, unchecked, unchecked)]",
            "unchecked",
        ),
        (
            "#[klint::drop_preempt_count(adjust = -1, adjust = -1)]",
            "adjust",
        ),
    ] {
        assert_eq!(
            err(text),
            format!("{BAD_PC} | `{prop}` is specified more than once"),
            "{text}"
        );
    }
    assert_eq!(
        err("#[kanalyze::nested_lock(subclass = 1, subclass = 2)]"),
        "incorrect usage of `#[kanalyze::nested_lock]` | `subclass` is specified more than once"
    );
}

#[test]
fn drop_preempt_count() {
    assert_eq!(
        parse(&attr(
            "#[klint::drop_preempt_count(adjust = -1, expect = 1.., unchecked)]"
        )),
        Ok(Annotation::DropPreemptCount(PreemptCount {
            adjust: Some(-1),
            expect: Some(range("1..")),
            unchecked: true
        }))
    );
    // Same grammar, same (klint) message.
    assert_eq!(
        err("#[klint::drop_preempt_count(unchecked)]"),
        format!("{BAD_PC} | at least one of `adjust` or `expect` property must be specified")
    );
}

#[test]
fn shorthands_and_other_klint_attributes() {
    let expect = |text| pc(text).expect;
    assert_eq!(expect("#[klint::any_context]"), Some(ExpectRange::TOP));
    assert_eq!(expect("#[klint::atomic_context]"), Some(ExpectRange::TOP));
    assert_eq!(expect("#[klint::atomic_context_only]"), Some(range("1..")));
    assert_eq!(expect("#[klint::process_context]"), Some(range("0")));
    assert_eq!(pc("#[klint::process_context]").adjust, None);
    assert!(!pc("#[klint::process_context]").unchecked);
    assert_eq!(
        parse(&attr("#[klint::report_preempt_count]")),
        Ok(Annotation::ReportPreemptCount)
    );
    assert_eq!(parse(&attr("#[klint::dump_mir]")), Ok(Annotation::DumpMir));
    assert_eq!(
        parse(&attr(r#"#[klint::diagnostic_item = "build_error"]"#)),
        Ok(Annotation::DiagnosticItem("build_error".into()))
    );
    assert_eq!(
        err("#[klint::diagnostic_item]"),
        r#"incorrect usage of `#[kint::diagnostic_item]` | correct usage looks like `#[kint::diagnostic_item = "name"]`"#
    );
    assert_eq!(
        err("#[klint::diagnostic_item = 1]"),
        err("#[klint::diagnostic_item]")
    );
    assert_eq!(
        err("#[klint::preemptcount(adjust = 1)]"),
        "unrecognized klint attribute | "
    );
    assert_eq!(err("#[klint::a::b]"), "invalid klint attribute | ");
}

/// The errors of klint's `tests/ui/annotation.rs`, and every other help text.
#[test]
fn preempt_count_errors_are_klints() {
    let cases = [
        (
            "#[klint::preempt_count]",
            "correct usage looks like `#[kint::preempt_count(...)]`",
        ),
        (
            "#[klint::preempt_count = 1]",
            "correct usage looks like `#[kint::preempt_count(...)]`",
        ),
        (
            "#[klint::preempt_count()]",
            "at least one of `adjust` or `expect` property must be specified",
        ),
        ("#[klint::preempt_count(adjust = )]", "an integer expected"),
        ("#[klint::preempt_count(expect = )]", "a range expected"),
        (
            "#[klint::preempt_count(unchecked)]",
            "at least one of `adjust` or `expect` property must be specified",
        ),
        (
            "#[klint::preempt_count(adjust = 1 expect = 0)]",
            "`,` expected between property values",
        ),
        (
            "#[klint::preempt_count(adjust = 1; expect = 0)]",
            "`,` expected between property values",
        ),
        ("#[klint::preempt_count(1)]", "identifier expected"),
        ("#[klint::preempt_count(,)]", "identifier expected"),
        (
            "#[klint::preempt_count(adjust = 1,,)]",
            "identifier expected",
        ),
        (
            "#[klint::preempt_count((adjust = 1))]",
            "identifier expected",
        ),
        (
            "#[klint::preempt_count(adjust 1)]",
            "`=` expected after property name",
        ),
        (
            "#[klint::preempt_count(adjust)]",
            "`=` expected after property name",
        ),
        (
            "#[klint::preempt_count(adjust == 1)]",
            "`=` expected after property name",
        ),
        (
            "#[klint::preempt_count(adjust = 1, unchecked = true)]",
            "unexpected `=` after property name",
        ),
        (
            "#[klint::preempt_count(adjustment = 1)]",
            "unknown property, expected `adjust`, `expect` or `unchecked`",
        ),
        (
            "#[klint::preempt_count(adjust = 1u32)]",
            "an integer expected",
        ),
        (
            "#[klint::preempt_count(adjust = 1.0)]",
            "an integer expected",
        ),
        (
            "#[klint::preempt_count(adjust = --1)]",
            "an integer expected",
        ),
        ("#[klint::preempt_count(adjust = x)]", "an integer expected"),
        (
            "#[klint::preempt_count(adjust = \"1\")]",
            "an integer expected",
        ),
        (
            "#[klint::preempt_count(adjust = 1025)]",
            "value exeeds range",
        ),
        (
            "#[klint::preempt_count(adjust = -99999999999999)]",
            "value exeeds range",
        ),
        (
            "#[klint::preempt_count(expect = 1025)]",
            "value exeeds range",
        ),
        (
            "#[klint::preempt_count(expect = 0..2000)]",
            "value exeeds range",
        ),
        ("#[klint::preempt_count(expect = -1)]", "a range expected"),
        ("#[klint::preempt_count(expect = 1..x)]", "a range expected"),
        (
            "#[klint::preempt_count(expect = 1.. unchecked)]",
            "a range expected",
        ),
        ("#[klint::preempt_count(expect = 1..=)]", "a range expected"),
        ("#[klint::preempt_count(expect = 0.5)]", "a range expected"),
        (
            "#[klint::preempt_count(expect = 1..1)]",
            "the preemption count expectation range must be non-empty",
        ),
        (
            "#[klint::preempt_count(expect = 2..1)]",
            "the preemption count expectation range must be non-empty",
        ),
        (
            "#[klint::preempt_count(expect = ..0)]",
            "the preemption count expectation range must be non-empty",
        ),
        (
            "#[klint::preempt_count(expect = 3..=1)]",
            "the preemption count expectation range must be non-empty",
        ),
        (
            "#[klint::preempt_count(expect = 0 1)]",
            "`,` expected between property values",
        ),
    ];
    for (text, help) in cases {
        assert_eq!(err(text), format!("{BAD_PC} | {help}"), "{text}");
    }
}

/// The kanalyze annotation `text` parses to (a panic saying what it
/// gave instead, for the test to show).
fn kanalyze(text: &str) -> KanalyzeAnnotation {
    match parse(&attr(text)) {
        Ok(Annotation::Kanalyze(k)) => k,
        other => panic!("{text}: {other:?}"),
    }
}

/// The lock attributes (`acquires`, `releases`, `must_hold`,
/// `irq_handler`, `failure`, `lock_class`, `nested_lock`) and their
/// errors.
#[test]
fn kanalyze_lock_attributes() {
    use KanalyzeAnnotation::*;
    assert_eq!(
        kanalyze("#[kanalyze::acquires(0)]"),
        Acquires(LockRef::Arg(0))
    );
    assert_eq!(
        kanalyze("#[kanalyze::acquires(self)]"),
        Acquires(LockRef::Arg(0))
    );
    assert_eq!(
        kanalyze("#[kanalyze::acquires(return)]"),
        Acquires(LockRef::Return)
    );
    assert_eq!(
        kanalyze("#[kanalyze::releases(2,)]"),
        Releases(LockRef::Arg(2))
    );
    assert_eq!(
        kanalyze("#[kanalyze::must_hold(1)]"),
        MustHold(LockRef::Arg(1))
    );
    assert_eq!(kanalyze("#[kanalyze::irq_handler]"), IrqHandler);
    assert_eq!(kanalyze("#[kanalyze::failure]"), Failure);
    assert_eq!(
        kanalyze(r#"#[kanalyze::lock_class("dev->lock")]"#),
        LockClass("dev->lock".into())
    );
    assert_eq!(
        kanalyze(r#"#[kanalyze::lock_class = "x"]"#),
        LockClass("x".into())
    );
    assert_eq!(
        kanalyze("#[kanalyze::nested_lock(subclass = 1)]"),
        NestedLock { subclass: 1 }
    );

    assert_eq!(
        err("#[kanalyze::must_hold(return)]"),
        "incorrect usage of `#[kanalyze::must_hold]` | correct usage looks like \
         `#[kanalyze::must_hold(0)]`, with the 0-based index of the argument that is (or points to) the lock"
    );
    for bad in [
        "#[kanalyze::acquires]",
        "#[kanalyze::acquires()]",
        "#[kanalyze::acquires(0, 1)]",
        "#[kanalyze::acquires(-1)]",
        "#[kanalyze::acquires(x)]",
        "#[kanalyze::acquires = 0]",
        "#[kanalyze::acquires(99999999999)]",
    ] {
        assert!(
            err(bad).starts_with("incorrect usage of `#[kanalyze::acquires]` | "),
            "{bad}"
        );
    }
    assert_eq!(
        err("#[kanalyze::irq_handler(1)]"),
        "incorrect usage of `#[kanalyze::irq_handler]` | correct usage looks like `#[kanalyze::irq_handler]`: it takes no arguments"
    );
    assert_eq!(
        err(r#"#[kanalyze::failure("x")]"#),
        "incorrect usage of `#[kanalyze::failure]` | correct usage looks like `#[kanalyze::failure]`: it takes no arguments"
    );
    assert!(err(r#"#[kanalyze::lock_class("")]"#).contains("non-empty class name"));
    assert!(err("#[kanalyze::lock_class(x)]").contains("non-empty class name"));
    assert!(err("#[kanalyze::nested_lock(subclass = 8)]").contains("from 0 to 7"));
    assert!(err("#[kanalyze::nested_lock(1)]").contains("from 0 to 7"));
}

/// An unknown kanalyze attribute names the known ones; a path of more
/// than one segment after `kanalyze` is none.
#[test]
fn kanalyze_unknown_attributes() {
    assert_eq!(
        err("#[kanalyze::acquire(0)]"),
        "unrecognized kanalyze attribute | known kanalyze attributes are `acquires`, `releases`, \
         `must_hold`, `irq_handler`, `failure`, `lock_class`, `nested_lock`, `empty_at_teardown`, \
         `empty_when_stored`, `kept_alive`, `holds_last`, `never_fails`, `same_object`, \
         `recursion_bound`"
    );
    assert_eq!(err("#[kanalyze::a::b]"), "invalid kanalyze attribute | ");
}

/// `recursion_bound`: a depth from 1 to 65536 and an optional reason.
#[test]
fn kanalyze_recursion_bound() {
    use KanalyzeAnnotation::*;
    assert_eq!(
        kanalyze("#[kanalyze::recursion_bound(4)]"),
        RecursionBound {
            depth: 4,
            because: None
        }
    );
    assert_eq!(
        kanalyze(r#"#[kanalyze::recursion_bound(2, "a tree of depth 2",)]"#),
        RecursionBound {
            depth: 2,
            because: Some("a tree of depth 2".to_string())
        }
    );
    for bad in [
        "#[kanalyze::recursion_bound]",
        "#[kanalyze::recursion_bound(0)]",
        "#[kanalyze::recursion_bound(65537)]",
        "#[kanalyze::recursion_bound(depth = 4)]",
        "#[kanalyze::recursion_bound(4u32)]",
        r#"#[kanalyze::recursion_bound(4, "")]"#,
        r#"#[kanalyze::recursion_bound("4")]"#,
    ] {
        assert_eq!(
            err(bad),
            "incorrect usage of `#[kanalyze::recursion_bound]` | correct usage looks like \
             `#[kanalyze::recursion_bound(8, \"why it holds\")]`, on a recursive function: the most \
             times it is on one stack at once (1 to 65536), and an optional reason",
            "{bad}"
        );
    }
}

/// The struct field declarations (`empty_at_teardown`,
/// `empty_when_stored`, `kept_alive`, `holds_last`): an optional reason.
#[test]
fn kanalyze_field_declarations() {
    use KanalyzeAnnotation::*;
    assert_eq!(
        kanalyze("#[kanalyze::empty_at_teardown]"),
        EmptyAtTeardown { because: None }
    );
    assert_eq!(
        kanalyze(r#"#[kanalyze::empty_at_teardown("taken in release()")]"#),
        EmptyAtTeardown {
            because: Some("taken in release()".to_string())
        }
    );
    assert!(err("#[kanalyze::empty_at_teardown(1)]").contains("on a struct field"));
    assert!(err(r#"#[kanalyze::empty_at_teardown("")]"#).contains("on a struct field"));
    assert_eq!(
        kanalyze(r#"#[kanalyze::empty_when_stored("stored once, into a new object")]"#),
        EmptyWhenStored {
            because: Some("stored once, into a new object".to_string())
        }
    );
    assert_eq!(
        kanalyze("#[kanalyze::empty_when_stored]"),
        EmptyWhenStored { because: None }
    );
    assert_eq!(
        err("#[kanalyze::empty_when_stored(x = 1)]"),
        "incorrect usage of `#[kanalyze::empty_when_stored]` | correct usage looks like \
         `#[kanalyze::empty_when_stored(\"why it holds\")]`, on a struct field, with an optional reason"
    );
    assert_eq!(
        kanalyze(r#"#[kanalyze::kept_alive("each waiter holds its own reference")]"#),
        KeptAlive {
            because: Some("each waiter holds its own reference".to_string())
        }
    );
    assert_eq!(
        kanalyze("#[kanalyze::kept_alive]"),
        KeptAlive { because: None }
    );
    assert_eq!(
        kanalyze(r#"#[kanalyze::holds_last("drained after every owner let go")]"#),
        HoldsLast {
            because: Some("drained after every owner let go".to_string())
        }
    );
    assert_eq!(
        kanalyze("#[kanalyze::holds_last]"),
        HoldsLast { because: None }
    );
    assert_eq!(
        err(r#"#[kanalyze::holds_last("a", "b")]"#),
        "incorrect usage of `#[kanalyze::holds_last]` | correct usage looks like \
         `#[kanalyze::holds_last(\"why it holds\")]`, on a struct field, with an optional reason"
    );
    assert_eq!(
        err("#[kanalyze::kept_alive(0)]"),
        "incorrect usage of `#[kanalyze::kept_alive]` | correct usage looks like \
         `#[kanalyze::kept_alive(\"why it holds\")]`, on a struct field, with an optional reason"
    );
}

/// `never_fails`: the callee's path and an optional reason.
#[test]
fn kanalyze_never_fails() {
    use KanalyzeAnnotation::*;
    assert_eq!(
        kanalyze(r#"#[kanalyze::never_fails("Vec::push_within_capacity", "room was checked")]"#),
        NeverFails {
            callee: "Vec::push_within_capacity".to_string(),
            because: Some("room was checked".to_string())
        }
    );
    assert_eq!(
        kanalyze(r#"#[kanalyze::never_fails(" push ",)]"#),
        NeverFails {
            callee: "push".to_string(),
            because: None
        }
    );
    for bad in [
        "#[kanalyze::never_fails]",
        r#"#[kanalyze::never_fails = "push"]"#,
        r#"#[kanalyze::never_fails("")]"#,
        r#"#[kanalyze::never_fails("push", "")]"#,
        r#"#[kanalyze::never_fails("push" "why")]"#,
        r#"#[kanalyze::never_fails(callee = "push")]"#,
        r#"#[kanalyze::never_fails("push", "why", "more")]"#,
    ] {
        assert!(err(bad).contains("on a function, with the path"), "{bad}");
    }
}

/// `same_object`, and the forms it rejects.
#[test]
fn kanalyze_same_object() {
    use KanalyzeAnnotation::*;
    assert_eq!(
        kanalyze(
            r#"#[kanalyze::same_object("Node.owner", "self", "a process lists its own nodes")]"#
        ),
        SameObject {
            ty: "Node".to_string(),
            field: "owner".to_string(),
            same_as: "self".to_string(),
            because: Some("a process lists its own nodes".to_string())
        }
    );
    assert_eq!(
        kanalyze(r#"#[kanalyze::same_object("crate::node::Node.owner", " arg1.to ",)]"#),
        SameObject {
            ty: "crate::node::Node".to_string(),
            field: "owner".to_string(),
            same_as: "arg1.to".to_string(),
            because: None
        }
    );
    for bad in [
        "#[kanalyze::same_object]",
        r#"#[kanalyze::same_object("Node.owner")]"#,
        r#"#[kanalyze::same_object("owner", "self")]"#,
        r#"#[kanalyze::same_object("Node.owner", "process")]"#,
        r#"#[kanalyze::same_object("Node.owner", "self..to")]"#,
        r#"#[kanalyze::same_object("Node.owner", "argx")]"#,
        r#"#[kanalyze::same_object("Node<T>.owner", "self")]"#,
        r#"#[kanalyze::same_object("Node.owner", "self", "")]"#,
        r#"#[kanalyze::same_object("Node.owner", "self", "why", "more")]"#,
        r#"#[kanalyze::same_object("node", "Node.owner", "self", "why")]"#,
        r#"#[kanalyze::same_object(local = "node")]"#,
    ] {
        assert!(
            err(bad).contains("the back pointer's struct and field"),
            "{bad}"
        );
    }
}

#[test]
fn foreign_tools_and_unreadable_text() {
    let mut a = attr("#[clippy::foo]");
    assert!(parse(&a).unwrap_err().message.contains("`clippy`"));
    a = attr("#[klint::preempt_count(adjust = 1]");
    let e = parse(&a).unwrap_err();
    assert_eq!(e.message, "invalid klint attribute");
    assert!(e.note.unwrap().contains("cannot read the attribute text"));
}

/// Generated malformed attributes: every prefix of valid ones, every
/// mutation with a token from a small alphabet, and pseudo-random token
/// soups. None may panic, and each must either parse or give an error.
#[test]
fn never_panics_on_malformed_input() {
    let seeds = [
        "#[klint::preempt_count(adjust = -1, expect = 1..=2, unchecked)]",
        "#[klint::drop_preempt_count(expect = ..3,)]",
        r#"#[klint::diagnostic_item = "x\u{41}"]"#,
        "#[kanalyze::nested_lock(subclass = 1)]",
        r##"#[kanalyze::lock_class(r#"a"#)]"##,
        "#[kanalyze::acquires(return)]",
    ];
    let alphabet = [
        "",
        " ",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        "=",
        "-",
        ".",
        "..",
        "..=",
        "...",
        "::",
        "#",
        "!",
        "\"",
        "'",
        "\\",
        "r#",
        "0",
        "1",
        "4294967296",
        "99999999999999999999999999999999999999999",
        "0x",
        "1e",
        "1.",
        "adjust",
        "expect",
        "unchecked",
        "return",
        "é",
        "\u{0}",
        "/*",
        "//",
        "\n",
        "b'",
        "c\"",
    ];
    let mut count = 0usize;
    let mut check = |text: &str| {
        for tool_name in [
            ("klint", "preempt_count"),
            ("kanalyze", "acquires"),
            ("klint", "diagnostic_item"),
        ] {
            let a = ToolAttr {
                tool: tool_name.0.into(),
                name: tool_name.1.into(),
                text: text.into(),
                span: span(1),
            };
            let _ = parse(&a);
        }
        let _ = text.parse::<ExpectRange>();
        count += 1;
    };
    for seed in seeds {
        let chars: Vec<char> = seed.chars().collect();
        for end in 0..=chars.len() {
            let prefix: String = chars[..end].iter().collect();
            check(&prefix);
            for piece in alphabet {
                let suffix: String = chars[end..].iter().collect();
                check(&format!("{prefix}{piece}{suffix}"));
                // Replace the char at `end` instead of inserting.
                let rest: String = chars.iter().skip(end + 1).collect();
                check(&format!("{prefix}{piece}{rest}"));
            }
        }
    }
    // A xorshift generator: deterministic, no dependency.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000 {
        let len = (next() % 16) as usize;
        let mut text = String::from("#[klint::preempt_count(");
        for _ in 0..len {
            text.push_str(alphabet[(next() % alphabet.len() as u64) as usize]);
        }
        if next() % 2 == 0 {
            text.push_str(")]");
        }
        check(&text);
    }
    assert!(count > 30_000);
}

fn item(path: &str, attrs: &[ToolAttr]) -> ItemAttrs {
    ItemAttrs {
        path: path.into(),
        kind: "fn".into(),
        span: span(100),
        attrs: attrs.to_vec(),
    }
}

#[test]
fn collect_keeps_the_first_and_warns() {
    let a = [
        item(
            "k::lock",
            &[
                attr_at("#[klint::preempt_count(adjust = 1, expect = 0..)]", 10),
                attr_at("#[klint::process_context]", 11),
                attr_at("#[klint::report_preempt_count]", 12),
                attr_at("#[kanalyze::acquires(0)]", 13),
                attr_at("#[kanalyze::acquires(0)]", 14),
                attr_at("#[kanalyze::must_hold(1)]", 15),
            ],
        ),
        item(
            "k::Guard",
            &[attr_at("#[klint::drop_preempt_count(adjust = -1)]", 20)],
        ),
        item("k::bad", &[attr_at("#[klint::preempt_count]", 30)]),
    ];
    let b = [
        item(
            "k::lock",
            &[attr_at("#[klint::preempt_count(adjust = 2)]", 1)],
        ),
        item("m::f", &[attr_at("#[klint::dump_mir]", 2)]),
        item("m::g", &[attr_at(r#"#[klint::diagnostic_item = "x"]"#, 3)]),
        item("m::h", &[attr_at(r#"#[klint::diagnostic_item = "x"]"#, 4)]),
    ];
    let (items, errors) = collect([(0u32, &a[..]), (1u32, &b[..])].into_iter());

    let lock = &items["k::lock"];
    assert_eq!(lock.preempt.as_ref().unwrap().0.adjust, Some(1));
    assert_eq!(lock.preempt.as_ref().unwrap().1.lo_line, 10);
    assert!(lock.report && !lock.dump_mir);
    assert_eq!(lock.crate_index, 0);
    assert_eq!(
        lock.kanalyze
            .iter()
            .map(|k| k.0.clone())
            .collect::<Vec<_>>(),
        vec![
            KanalyzeAnnotation::Acquires(LockRef::Arg(0)),
            KanalyzeAnnotation::MustHold(LockRef::Arg(1))
        ]
    );
    assert_eq!(
        items["k::Guard"].drop_preempt.as_ref().unwrap().0.adjust,
        Some(-1)
    );
    assert!(!items.contains_key("k::bad"));
    assert!(items["m::f"].dump_mir);
    assert_eq!(items["m::g"].diagnostic_item.as_deref(), Some("x"));

    let rendered: Vec<String> = errors
        .iter()
        .map(|(i, e)| format!("#{i} line {}: {e}", e.span.lo_line))
        .collect();
    assert_eq!(
        rendered,
        vec![
            "#0 line 11: warning: this `#[klint::process_context]` is ignored\n  = note: only the first \
             preemption count annotation of an item is used (line 10), as in klint",
            "#0 line 14: warning: this `#[kanalyze::acquires]` is ignored\n  = note: only the first \
             `#[kanalyze::acquires]` of an item is used (line 13), as in klint",
            "#0 line 30: error: incorrect usage of `#[kint::preempt_count]`\n  = help: correct usage \
             looks like `#[kint::preempt_count(...)]`",
            "#1 line 100: warning: annotations of `k::lock` differ between two dumps; this dump's are \
             ignored\n  = note: the annotations of dump #0 are used",
            "#1 line 100: error: duplicate klint diagnostic item in crate `m`: `x`\n  = note: `m::g` is also `x`",
        ]
    );
}

#[test]
fn collect_is_silent_for_an_identical_second_dump() {
    let a = [item("k::f", &[attr("#[klint::process_context]")])];
    let (items, errors) = collect([(0u32, &a[..]), (3u32, &a[..])].into_iter());
    assert!(errors.is_empty());
    assert_eq!(items["k::f"].crate_index, 0);
}

/// An argument index past the function's arity is an error and the
/// annotation is dropped; `return`, `self` and indices in range stay.
#[test]
fn argument_index_checked_against_arity() {
    let a = [
        item(
            "k::one",
            &[
                attr_at("#[kanalyze::acquires(9)]", 10),
                attr_at("#[kanalyze::releases(0)]", 11),
                attr_at("#[kanalyze::must_hold(7)]", 12),
            ],
        ),
        item("k::none", &[attr_at("#[kanalyze::acquires(0)]", 20)]),
        item(
            "k::ret",
            &[
                attr_at("#[kanalyze::acquires(return)]", 30),
                attr_at("#[kanalyze::must_hold(self)]", 31),
            ],
        ),
        item("k::unknown", &[attr_at("#[kanalyze::releases(5)]", 40)]),
    ];
    let (mut items, errors) = collect([(0u32, &a[..])].into_iter());
    assert!(errors.is_empty());
    let errors = check_arity(&mut items, |path| match path {
        "k::one" | "k::ret" => Some(1),
        "k::none" => Some(0),
        _ => None,
    });
    let rendered: Vec<String> = errors
        .iter()
        .map(|(i, e)| format!("#{i} line {}: {e}", e.span.lo_line))
        .collect();
    assert_eq!(
        rendered,
        vec![
            "#0 line 10: error: `#[kanalyze::acquires(9)]` names argument 9, but `k::one` takes \
             1 argument\n  = help: arguments are counted from 0 (`self` is 0), so the last one is 0",
            "#0 line 12: error: `#[kanalyze::must_hold(7)]` names argument 7, but `k::one` takes \
             1 argument\n  = help: arguments are counted from 0 (`self` is 0), so the last one is 0",
            "#0 line 20: error: `#[kanalyze::acquires(0)]` names argument 0, but `k::none` takes \
             no arguments\n  = help: if the lock is the one the return value designates, write \
             `#[kanalyze::acquires(return)]`",
        ]
    );
    assert_eq!(
        items["k::one"]
            .kanalyze
            .iter()
            .map(|k| k.0.clone())
            .collect::<Vec<_>>(),
        vec![KanalyzeAnnotation::Releases(LockRef::Arg(0))]
    );
    assert!(!items.contains_key("k::none"));
    assert_eq!(items["k::ret"].kanalyze.len(), 2);
    assert_eq!(items["k::unknown"].kanalyze.len(), 1);
}
