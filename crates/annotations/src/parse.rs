//! Attribute text to [`Annotation`], with klint's grammar and error texts.

use kmir::{Span, ToolAttr};

use crate::range::{self, ANNOTATION_LIMIT, ExpectRange};
use crate::token::{self, Cursor, Delim, Punct, Tok, Tree};
use crate::{Annotation, AnnotationError, KanalyzeAnnotation, Level, LockRef, PreemptCount};

// klint prints `kint` (sic) in these two; users grep for the exact text, so
// it is kept.
pub(crate) const MSG_PREEMPT_COUNT: &str = "incorrect usage of `#[kint::preempt_count]`";
const MSG_DIAGNOSTIC_ITEM: &str = "incorrect usage of `#[kint::diagnostic_item]`";
const MSG_UNRECOGNIZED_KLINT: &str = "unrecognized klint attribute";
const MSG_INVALID_KLINT: &str = "invalid klint attribute";
const MSG_UNRECOGNIZED_KANALYZE: &str = "unrecognized kanalyze attribute";
const MSG_INVALID_KANALYZE: &str = "invalid kanalyze attribute";

const HELP_CORRECT_USAGE: &str = "correct usage looks like `#[kint::preempt_count(...)]`";
const HELP_DIAGNOSTIC_ITEM: &str =
    r#"correct usage looks like `#[kint::diagnostic_item = "name"]`"#;
const HELP_COMMA: &str = "`,` expected between property values";
const HELP_IDENT: &str = "identifier expected";
const HELP_EQ_EXPECTED: &str = "`=` expected after property name";
const HELP_EQ_UNEXPECTED: &str = "unexpected `=` after property name";
const HELP_INTEGER: &str = "an integer expected";
const HELP_UNKNOWN_PROPERTY: &str = "unknown property, expected `adjust`, `expect` or `unchecked`";
const HELP_AT_LEAST_ONE: &str = "at least one of `adjust` or `expect` property must be specified";

/// The `kanalyze::` attribute names, for the "unrecognized" help.
pub const KANALYZE_ATTRIBUTES: &[&str] = &[
    "acquires",
    "releases",
    "must_hold",
    "irq_handler",
    "failure",
    "lock_class",
    "nested_lock",
    "empty_at_teardown",
    "empty_when_stored",
    "kept_alive",
    "holds_last",
    "never_fails",
    "same_object",
    "recursion_bound",
];

/// The largest `recursion_bound` accepted: a deeper recursion on a kernel
/// stack is a bug whatever its frames are.
const MAX_RECURSION_BOUND: u128 = 1 << 16;

/// lockdep's `MAX_LOCKDEP_SUBCLASSES`.
const MAX_SUBCLASSES: u128 = 8;

fn error(span: Span, message: &str, help: Option<&str>) -> AnnotationError {
    AnnotationError {
        span,
        level: Level::Error,
        message: message.to_string(),
        help: help.map(str::to_string),
        note: None,
    }
}

/// What follows the path in `#[path …]`.
enum Args<'a> {
    None,
    Delimited(&'a [Tree]),
    Eq(&'a [Tree]),
}

/// Splits `#[path args]` (or `#![…]`) into its arguments. The path itself
/// is taken from the extractor's `tool`/`name` fields, which come from the
/// compiler's parsed path; the text only supplies the arguments.
fn split_attribute(trees: &[Tree]) -> Option<Args<'_>> {
    let mut cursor = Cursor::new(trees);
    if !cursor.peek_is(Punct::Pound) {
        return None;
    }
    cursor.next();
    if cursor.peek_is(Punct::Not) {
        cursor.next();
    }
    let Some(Tree::Group(Delim::Bracket, inner)) = cursor.next() else {
        return None;
    };
    if !cursor.is_eof() {
        return None;
    }
    let mut inner = Cursor::new(inner);
    let Some(Tree::Tok(Tok::Ident(_))) = inner.next() else {
        return None;
    };
    while inner.peek_is(Punct::PathSep) {
        inner.next();
        let Some(Tree::Tok(Tok::Ident(_))) = inner.next() else {
            return None;
        };
    }
    match inner.rest() {
        [] => Some(Args::None),
        [Tree::Group(_, args)] => Some(Args::Delimited(args)),
        [Tree::Tok(Tok::Punct(Punct::Eq)), value @ ..] => Some(Args::Eq(value)),
        _ => None,
    }
}

/// Parses one attribute recorded by the extractor.
pub fn parse(attr: &ToolAttr) -> Result<Annotation, AnnotationError> {
    let span = attr.span;
    let (invalid, is_klint) = match attr.tool.as_str() {
        "klint" => (MSG_INVALID_KLINT, true),
        "kanalyze" => (MSG_INVALID_KANALYZE, false),
        other => {
            return Err(error(
                span,
                &format!("unrecognized tool attribute namespace `{other}`"),
                Some("only `klint::` and `kanalyze::` attributes are annotations"),
            ));
        }
    };
    // klint: "A path that is not `klint::X` with exactly 2 segments".
    if attr.name.is_empty() || attr.name.contains("::") {
        return Err(error(span, invalid, None));
    }
    let trees = token::tokenize(&attr.text);
    let args = match &trees {
        Ok(trees) => split_attribute(trees),
        Err(_) => None,
    };
    let Some(args) = args else {
        // Not reachable with rustc's pretty printer; reported rather than
        // guessed at.
        let mut e = error(span, invalid, None);
        e.note = Some(match &trees {
            Err(why) => format!("cannot read the attribute text `{}`: {why}", attr.text),
            Ok(_) => format!("cannot read the attribute text `{}`", attr.text),
        });
        return Err(e);
    };
    if is_klint {
        parse_klint(&attr.name, args, span)
    } else {
        parse_kanalyze(&attr.name, args, span).map(Annotation::Kanalyze)
    }
}

fn parse_klint(name: &str, args: Args<'_>, span: Span) -> Result<Annotation, AnnotationError> {
    let shorthand = |expect| {
        Ok(Annotation::PreemptCount(PreemptCount {
            adjust: None,
            expect: Some(expect),
            unchecked: false,
        }))
    };
    // As in klint, the shorthands and the debug attributes ignore any
    // arguments they are given.
    match name {
        // `atomic_context` means "may be called from atomic context": no constraint.
        "any_context" | "atomic_context" => shorthand(ExpectRange::TOP),
        "atomic_context_only" => shorthand(ExpectRange::at_least(1)),
        "process_context" => shorthand(ExpectRange::exactly(0)),
        "preempt_count" => parse_preempt_count(args, span).map(Annotation::PreemptCount),
        "drop_preempt_count" => parse_preempt_count(args, span).map(Annotation::DropPreemptCount),
        "report_preempt_count" => Ok(Annotation::ReportPreemptCount),
        "dump_mir" => Ok(Annotation::DumpMir),
        "diagnostic_item" => match args {
            Args::Eq([Tree::Tok(Tok::Str(value))]) => Ok(Annotation::DiagnosticItem(value.clone())),
            _ => Err(error(span, MSG_DIAGNOSTIC_ITEM, Some(HELP_DIAGNOSTIC_ITEM))),
        },
        _ => Err(error(span, MSG_UNRECOGNIZED_KLINT, None)),
    }
}

/// klint's `parse_preempt_count` (token parser), plus its later parser's
/// 1024 limit.
fn parse_preempt_count(args: Args<'_>, span: Span) -> Result<PreemptCount, AnnotationError> {
    let err = |help: &str| error(span, MSG_PREEMPT_COUNT, Some(help));
    let Args::Delimited(trees) = args else {
        return Err(err(HELP_CORRECT_USAGE));
    };
    let mut adjust = None;
    let mut expect = None;
    let mut unchecked = false;
    let mut seen: Vec<&str> = Vec::new();
    let mut cursor = Cursor::new(trees);
    // `parse_comma_delimited`: props separated by `,`, trailing `,` allowed.
    while !cursor.is_eof() {
        let Some(Tree::Tok(Tok::Ident(prop))) = cursor.next() else {
            return Err(err(HELP_IDENT));
        };
        let need_eq = match prop.as_str() {
            "adjust" | "expect" => true,
            "unchecked" => false,
            _ => return Err(err(HELP_UNKNOWN_PROPERTY)),
        };
        // klint lets a repeated property overwrite the earlier one, so
        // `adjust = 1, adjust = 2` silently means 2; which one the author
        // meant cannot be known, so it is an error here (klint has no
        // wording for it: the help follows its other helps).
        if seen.contains(&prop.as_str()) {
            return Err(err(&format!("`{prop}` is specified more than once")));
        }
        seen.push(prop.as_str());
        let is_eq = cursor.peek_is(Punct::Eq);
        if need_eq && !is_eq {
            return Err(err(HELP_EQ_EXPECTED));
        }
        if !need_eq && is_eq {
            return Err(err(HELP_EQ_UNEXPECTED));
        }
        if is_eq {
            cursor.next();
        }
        match prop.as_str() {
            "adjust" => adjust = Some(parse_i32(&mut cursor).map_err(err)?),
            "expect" => {
                expect = Some(
                    range::parse_range(&mut cursor, Some(ANNOTATION_LIMIT))
                        .map_err(|e| err(e.help))?,
                )
            }
            _ => unchecked = true,
        }
        if cursor.is_eof() {
            break;
        }
        if !cursor.peek_is(Punct::Comma) {
            return Err(err(HELP_COMMA));
        }
        cursor.next();
    }
    if adjust.is_none() && expect.is_none() {
        return Err(err(HELP_AT_LEAST_ONE));
    }
    Ok(PreemptCount {
        adjust,
        expect,
        unchecked,
    })
}

/// `["-"] INT`: an integer literal with no suffix.
fn parse_i32(cursor: &mut Cursor<'_>) -> Result<i32, &'static str> {
    let negative = cursor.peek_is(Punct::Minus);
    if negative {
        cursor.next();
    }
    let Some(Tree::Tok(Tok::Int {
        value: Some(value),
        suffix: None,
    })) = cursor.next()
    else {
        return Err(HELP_INTEGER);
    };
    if *value > ANNOTATION_LIMIT {
        return Err(range::HELP_VALUE_EXCEEDS);
    }
    // Lossless: the value is at most 1024.
    let value = *value as i32;
    Ok(if negative { -value } else { value })
}

/// The arguments as a list of string literals separated by commas (a
/// trailing comma allowed); `None` for anything else.
fn string_list<'a>(args: &Args<'a>) -> Option<Vec<&'a String>> {
    let Args::Delimited(trees) = args else {
        return None;
    };
    let mut out = Vec::new();
    let mut want_string = true;
    for t in trees.iter() {
        match t {
            Tree::Tok(Tok::Str(v)) if want_string => out.push(v),
            Tree::Tok(Tok::Punct(Punct::Comma)) if !want_string => {}
            _ => return None,
        }
        want_string = !want_string;
    }
    Some(out)
}

fn same_object_usage(name: &str, span: Span) -> AnnotationError {
    error(
        span,
        &format!("incorrect usage of `#[kanalyze::{name}]`"),
        Some(
            r#"correct usage looks like `#[kanalyze::same_object("Node.owner", "self.to", "why it holds")]`, on a function: the back pointer's struct and field (the struct's last path segments are enough; every value of the struct the function drops is covered), the argument path naming the same object (`self` or `argN`, the argument at position N from 0, then field names), and an optional reason"#,
        ),
    )
}

fn never_fails_usage(name: &str, span: Span) -> AnnotationError {
    error(
        span,
        &format!("incorrect usage of `#[kanalyze::{name}]`"),
        Some(
            r#"correct usage looks like `#[kanalyze::never_fails("Vec::push_within_capacity", "why it holds")]`, on a function, with the path of the function it calls (its last segments are enough) and an optional reason"#,
        ),
    )
}

fn parse_kanalyze(
    name: &str,
    args: Args<'_>,
    span: Span,
) -> Result<KanalyzeAnnotation, AnnotationError> {
    let usage = |example: &str, what: &str| {
        error(
            span,
            &format!("incorrect usage of `#[kanalyze::{name}]`"),
            Some(&format!("correct usage looks like `{example}`{what}")),
        )
    };
    let lock_ref = |allow_return: bool| -> Result<LockRef, AnnotationError> {
        let usage = || {
            usage(
                &format!("#[kanalyze::{name}(0)]"),
                if allow_return {
                    ", with the 0-based index of the argument that is (or points to) the lock, or `return`"
                } else {
                    ", with the 0-based index of the argument that is (or points to) the lock"
                },
            )
        };
        let Args::Delimited(trees) = args else {
            return Err(usage());
        };
        let value = match trees {
            [value] | [value, Tree::Tok(Tok::Punct(Punct::Comma))] => value,
            _ => return Err(usage()),
        };
        match value {
            Tree::Tok(Tok::Int {
                value: Some(n),
                suffix: None,
            }) => u32::try_from(*n).map(LockRef::Arg).map_err(|_| usage()),
            // `self` is argument 0 of a method.
            Tree::Tok(Tok::Ident(id)) if id == "self" => Ok(LockRef::Arg(0)),
            Tree::Tok(Tok::Ident(id)) if id == "return" && allow_return => Ok(LockRef::Return),
            _ => Err(usage()),
        }
    };
    match name {
        "acquires" => lock_ref(true).map(KanalyzeAnnotation::Acquires),
        "releases" => lock_ref(true).map(KanalyzeAnnotation::Releases),
        "must_hold" => lock_ref(false).map(KanalyzeAnnotation::MustHold),
        "irq_handler" => match args {
            Args::None => Ok(KanalyzeAnnotation::IrqHandler),
            _ => Err(usage("#[kanalyze::irq_handler]", ": it takes no arguments")),
        },
        "failure" => match args {
            Args::None => Ok(KanalyzeAnnotation::Failure),
            _ => Err(usage("#[kanalyze::failure]", ": it takes no arguments")),
        },
        "lock_class" => {
            let value = match args {
                Args::Delimited([Tree::Tok(Tok::Str(v))])
                | Args::Delimited([Tree::Tok(Tok::Str(v)), Tree::Tok(Tok::Punct(Punct::Comma))])
                | Args::Eq([Tree::Tok(Tok::Str(v))]) => Some(v),
                _ => None,
            };
            match value {
                Some(v) if !v.trim().is_empty() => Ok(KanalyzeAnnotation::LockClass(v.clone())),
                _ => Err(usage(
                    r#"#[kanalyze::lock_class("name")]"#,
                    ", with a non-empty class name",
                )),
            }
        }
        "nested_lock" => {
            let bad = || {
                usage(
                    "#[kanalyze::nested_lock(subclass = 1)]",
                    ", with a lockdep subclass from 0 to 7",
                )
            };
            let Args::Delimited(trees) = args else {
                return Err(bad());
            };
            // `subclass = 1, subclass = 2`: say what is wrong rather than
            // only show the right form.
            let keys = trees
                .iter()
                .filter(|t| matches!(t, Tree::Tok(Tok::Ident(k)) if k == "subclass"))
                .count();
            if keys > 1 {
                return Err(error(
                    span,
                    &format!("incorrect usage of `#[kanalyze::{name}]`"),
                    Some("`subclass` is specified more than once"),
                ));
            }
            match trees {
                [
                    Tree::Tok(Tok::Ident(key)),
                    Tree::Tok(Tok::Punct(Punct::Eq)),
                    Tree::Tok(Tok::Int {
                        value: Some(k),
                        suffix: None,
                    }),
                    rest @ ..,
                ] if key == "subclass"
                    && *k < MAX_SUBCLASSES
                    && matches!(rest, [] | [Tree::Tok(Tok::Punct(Punct::Comma))]) =>
                {
                    // Lossless: below MAX_SUBCLASSES.
                    Ok(KanalyzeAnnotation::NestedLock {
                        subclass: *k as u32,
                    })
                }
                _ => Err(bad()),
            }
        }
        "empty_at_teardown" | "empty_when_stored" | "kept_alive" | "holds_last" => {
            let because =
                match args {
                    Args::None => None,
                    Args::Delimited([Tree::Tok(Tok::Str(v))])
                    | Args::Delimited(
                        [Tree::Tok(Tok::Str(v)), Tree::Tok(Tok::Punct(Punct::Comma))],
                    ) if !v.trim().is_empty() => Some(v.clone()),
                    _ => {
                        return Err(usage(
                            &format!(r#"#[kanalyze::{name}("why it holds")]"#),
                            ", on a struct field, with an optional reason",
                        ));
                    }
                };
            Ok(match name {
                "empty_at_teardown" => KanalyzeAnnotation::EmptyAtTeardown { because },
                "empty_when_stored" => KanalyzeAnnotation::EmptyWhenStored { because },
                "kept_alive" => KanalyzeAnnotation::KeptAlive { because },
                _ => KanalyzeAnnotation::HoldsLast { because },
            })
        }
        "same_object" => {
            let strings = string_list(&args);
            let word = |s: &str| {
                let s = s.trim();
                !s.is_empty() && s.chars().all(|c| c == '_' || c.is_alphanumeric())
            };
            let (field, same_as, because) = match strings.as_deref() {
                Some([f, a]) => (f, a, None),
                Some([f, a, b]) if !b.trim().is_empty() => (f, a, Some(b.to_string())),
                _ => return Err(same_object_usage(name, span)),
            };
            let Some((ty, fname)) = field.trim().rsplit_once('.') else {
                return Err(same_object_usage(name, span));
            };
            // `self` or `argN`, then field names (crates/invariants parses
            // it): never a local's name, which a rename breaks.
            let mut steps = same_as.trim().split('.');
            let root_ok = steps.next().is_some_and(|r| {
                r == "self"
                    || r.strip_prefix("arg")
                        .is_some_and(|n| n.parse::<u32>().is_ok())
            });
            if !root_ok
                || !steps.all(word)
                || !word(fname)
                || ty.is_empty()
                || ty.contains(['<', '>', ' '])
            {
                return Err(same_object_usage(name, span));
            }
            Ok(KanalyzeAnnotation::SameObject {
                ty: ty.to_string(),
                field: fname.to_string(),
                same_as: same_as.trim().to_string(),
                because,
            })
        }
        "recursion_bound" => recursion_bound(args, &usage),
        "never_fails" => never_fails(name, args, span),
        _ => Err(error(
            span,
            MSG_UNRECOGNIZED_KANALYZE,
            Some(&format!(
                "known kanalyze attributes are {}",
                KANALYZE_ATTRIBUTES
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        )),
    }
}

/// `#[kanalyze::recursion_bound(N, "why")]`.
fn recursion_bound(
    args: Args<'_>,
    usage: &dyn Fn(&str, &str) -> AnnotationError,
) -> Result<KanalyzeAnnotation, AnnotationError> {
    let bad = || {
        usage(
            r#"#[kanalyze::recursion_bound(8, "why it holds")]"#,
            &format!(
                ", on a recursive function: the most times it is on one stack at once (1 to {MAX_RECURSION_BOUND}), and an optional reason"
            ),
        )
    };
    let Args::Delimited(trees) = args else {
        return Err(bad());
    };
    let (depth, because) = match trees {
        [
            Tree::Tok(Tok::Int {
                value: Some(n),
                suffix: None,
            }),
        ]
        | [
            Tree::Tok(Tok::Int {
                value: Some(n),
                suffix: None,
            }),
            Tree::Tok(Tok::Punct(Punct::Comma)),
        ] => (*n, None),
        [
            Tree::Tok(Tok::Int {
                value: Some(n),
                suffix: None,
            }),
            Tree::Tok(Tok::Punct(Punct::Comma)),
            Tree::Tok(Tok::Str(why)),
            rest @ ..,
        ] if matches!(rest, [] | [Tree::Tok(Tok::Punct(Punct::Comma))])
            && !why.trim().is_empty() =>
        {
            (*n, Some(why.clone()))
        }
        _ => return Err(bad()),
    };
    if depth == 0 || depth > MAX_RECURSION_BOUND {
        return Err(bad());
    }
    // Lossless: at most MAX_RECURSION_BOUND.
    Ok(KanalyzeAnnotation::RecursionBound {
        depth: depth as u32,
        because,
    })
}

/// `#[kanalyze::never_fails("callee", "why")]`.
fn never_fails(
    name: &str,
    args: Args<'_>,
    span: Span,
) -> Result<KanalyzeAnnotation, AnnotationError> {
    let strings = string_list(&args);
    match strings.as_deref() {
        Some([callee]) if !callee.trim().is_empty() => Ok(KanalyzeAnnotation::NeverFails {
            callee: callee.trim().to_string(),
            because: None,
        }),
        Some([callee, because]) if !callee.trim().is_empty() && !because.trim().is_empty() => {
            Ok(KanalyzeAnnotation::NeverFails {
                callee: callee.trim().to_string(),
                because: Some(because.to_string()),
            })
        }
        _ => Err(never_fails_usage(name, span)),
    }
}
