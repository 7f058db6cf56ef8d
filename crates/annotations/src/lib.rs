//! Typed annotations from the tool attributes the extractor records.
//!
//! The extractor keeps every `#[klint::…]` and `#[kanalyze::…]` attribute of
//! every local item as text ([`kmir::ToolAttr`]); this crate turns them into
//! [`Annotation`]s with klint's exact grammar, defaults and error texts, so
//! that kernel code annotated for klint means the same here.
//!
//! # `klint::` attributes
//!
//! | attribute | annotation |
//! |---|---|
//! | `preempt_count(adjust = A, expect = R, unchecked)` | [`Annotation::PreemptCount`] |
//! | `drop_preempt_count(...)` (ADTs and traits) | [`Annotation::DropPreemptCount`] |
//! | `any_context`, `atomic_context` | `PreemptCount { expect: 0.. }` (no constraint) |
//! | `atomic_context_only` | `PreemptCount { expect: 1.. }` |
//! | `process_context` | `PreemptCount { expect: 0 }` |
//! | `report_preempt_count`, `dump_mir` | debug aids |
//! | `diagnostic_item = "name"` | [`Annotation::DiagnosticItem`] |
//!
//! Property grammar (klint's token parser): `adjust = [-]INT` (`i32`, no
//! suffix), `expect = N | N.. | ..M | N..M | N..=M | ..` (`u32` bounds), the
//! flag `unchecked`; any order, trailing comma allowed; at least one of
//! `adjust`/`expect`; the range
//! must be non-empty; literals above 1024 are rejected (klint's later
//! parser). Errors carry klint's messages and helps verbatim, including its
//! `kint` and `exeeds` typos. One deliberate difference: klint lets a
//! repeated property overwrite the earlier one (`adjust = 1, adjust = 2`
//! means 2); here it is an error (`` `adjust` is specified more than once ``),
//! since which value the author meant cannot be known.
//!
//! # `kanalyze::` attributes
//!
//! Lock facts that a body cannot show (a function that returns with a lock
//! held through a raw pointer, a C callback that runs in IRQ context, …),
//! for the lock analysis. Register the tool with
//! `#![register_tool(kanalyze)]` like klint's.
//!
//! | attribute | meaning |
//! |---|---|
//! | `#[kanalyze::acquires(N)]` | the function returns with the lock that argument `N` (0-based; `self` = 0) is or points to held, and did not hold it at entry; `acquires(return)`: the lock is the one the return value designates |
//! | `#[kanalyze::releases(N)]` | the lock is held at entry and released before return (`return` allowed as for `acquires`) |
//! | `#[kanalyze::must_hold(N)]` | the lock must be held at entry and still is at return |
//! | `#[kanalyze::irq_handler]` | the function runs in hard-IRQ context (IRQs off): locks it takes must be IRQ-safe everywhere |
//! | `#[kanalyze::failure]` | the function is a failure routine: it never returns, and a path that reaches it is a failure (a failed assertion, an oops), so what such a path breaks is a `sleep-on-failure-path` warning, not a `sleep-in-atomic` error (docs/preemption.md, "Failure paths") |
//! | `#[kanalyze::lock_class("name")]` | names the lock class of a static, field, type or returned lock explicitly, instead of the class derived from its path |
//! | `#[kanalyze::nested_lock(subclass = K)]` | the function's acquisition uses lockdep subclass `K` (0–7), like `spin_lock_nested`, so two locks of one class are not an AA deadlock |
//! | `#[kanalyze::empty_at_teardown("why")]` | on a struct field: it holds an empty value whenever the struct is torn down, so the struct's drop glue skips it (a trusted invariant, audited; crates/invariants) |
//! | `#[kanalyze::kept_alive("why")]` | on a struct field: every object it refers to is referred to from elsewhere while it is there, so dropping a reference taken out of it never runs the object's teardown (trusted, audited; crates/invariants) |
//! | `#[kanalyze::holds_last("why")]` | on a struct field: a reference taken out of it can be the last one (the list a teardown drains), so a drop of one under a lock whose teardown may sleep is a `sleep-in-atomic` error (trusted, audited; crates/invariants) |
//! | `#[kanalyze::empty_when_stored("why")]` | on a struct field: it holds an empty value whenever a value is stored into it, so the assignment's drop of the old value skips it (trusted, audited; crates/invariants) |
//! | `#[kanalyze::same_object("Struct.field", "self.path", "why")]` | on a function: where it drops a value of `Struct` (or a handle, option or container of one), the back pointer `Struct.field` refers to the object the argument path (`self`, `argN`, then fields) referred to on entry, so that drop releases no last reference through it where that object is kept alive (trusted, audited; crates/invariants) |
//! | `#[kanalyze::never_fails("callee", "why")]` | on a function: every call it makes of `callee` (an item path or its last segments) returns `Ok`/`Some`, so the failure arm after it never runs (trusted, audited; crates/invariants) |
//! | `#[kanalyze::recursion_bound(N, "why")]` | on a recursive function: it is on one stack at most `N` times at once (1 to 65536), which bounds its cycle's stack depth (`kanalyze stack`, docs/stack.md) |
//!
//! Any other `kanalyze::` name is an error (`unrecognized kanalyze
//! attribute`) listing the known ones. An argument index is checked against
//! the function's arity once the program is known ([`check_arity`]): an
//! index past the last argument is an error and the annotation is dropped.

mod collect;
mod parse;
mod range;
mod token;

use std::fmt;

pub use collect::{ItemAnnotations, check_arity, collect};
pub use parse::{KANALYZE_ATTRIBUTES, parse};
pub use range::{ExpectRange, RangeError};

/// klint's `PreemptionCount`: what a `preempt_count`-like attribute says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreemptCount {
    /// Net change of the preemption count from entry to return.
    pub adjust: Option<i32>,
    /// The entry counts allowed.
    pub expect: Option<ExpectRange>,
    /// Trust the annotated properties without checking them against the body.
    pub unchecked: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Annotation {
    /// `preempt_count(...)` and the shorthands `any_context`/`atomic_context`
    /// (expect `0..`), `atomic_context_only` (`1..`), `process_context` (`0`).
    PreemptCount(PreemptCount),
    /// `drop_preempt_count(...)` on ADTs and traits.
    DropPreemptCount(PreemptCount),
    ReportPreemptCount,
    DumpMir,
    DiagnosticItem(String),
    /// A `kanalyze::…` attribute.
    Kanalyze(KanalyzeAnnotation),
}

/// Which lock a `kanalyze::` attribute is about.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LockRef {
    /// The lock that argument `N` (0-based) is or points to.
    Arg(u32),
    /// The lock the return value designates.
    Return,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KanalyzeAnnotation {
    Acquires(LockRef),
    Releases(LockRef),
    MustHold(LockRef),
    IrqHandler,
    /// On a function: a failure routine (it never returns; reaching it is
    /// a failure, like `panic!` or `BUG()`).
    Failure,
    LockClass(String),
    NestedLock {
        subclass: u32,
    },
    /// On a struct field: the field holds an empty value (`None`, an empty
    /// collection) whenever a value of the struct is torn down, so its drop
    /// in the struct's drop glue releases nothing. A trusted invariant
    /// (crates/invariants), with the reason the source gives for it.
    EmptyAtTeardown {
        because: Option<String>,
    },
    /// On a struct field: the field holds an empty value whenever a value is
    /// stored into it, so the drop of the old value an assignment runs
    /// releases nothing. A trusted invariant (crates/invariants).
    EmptyWhenStored {
        because: Option<String>,
    },
    /// On a struct field: every object the field refers to is also referred
    /// to from elsewhere while it is in the field, so a reference taken out
    /// of it is never the last one. A trusted invariant (crates/invariants).
    KeptAlive {
        because: Option<String>,
    },
    /// On a struct field: a reference taken out of the field can be the
    /// last one, so dropping it can run the object's teardown. A trusted
    /// invariant (crates/invariants).
    HoldsLast {
        because: Option<String>,
    },
    /// On a function: every call it makes of `callee` (an item path, or
    /// its last segments) returns its success variant (`Ok`, `Some`). A
    /// trusted invariant (crates/invariants).
    NeverFails {
        callee: String,
        because: Option<String>,
    },
    /// `#[kanalyze::same_object("Node.owner", "self.to", "why")]` on a
    /// function: where it drops a value of the struct `ty` (or a handle,
    /// option or container of one), the object its field `field` refers
    /// to is the object the argument path `same_as` referred to on entry.
    /// A trusted invariant (crates/invariants).
    SameObject {
        ty: String,
        field: String,
        same_as: String,
        because: Option<String>,
    },
    /// `#[kanalyze::recursion_bound(N)]` on a recursive function: it is on
    /// one stack at most `depth` times at once. Trusted by `kanalyze
    /// stack` to bound the depth of the cycles through it.
    RecursionBound {
        depth: u32,
        because: Option<String>,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    Error,
    /// Something klint silently ignores (a second `preempt_count` on an item).
    Warning,
}

/// A malformed or ignored annotation, as klint would report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotationError {
    /// The attribute's span.
    pub span: kmir::Span,
    pub level: Level,
    pub message: String,
    pub help: Option<String>,
    pub note: Option<String>,
}

/// rustc's layout, without the source snippet:
/// `error: message` / `  = help: …` / `  = note: …`.
impl fmt::Display for AnnotationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Error => "error",
            Level::Warning => "warning",
        };
        write!(f, "{level}: {}", self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        if let Some(note) = &self.note {
            write!(f, "\n  = note: {note}")?;
        }
        Ok(())
    }
}

impl std::error::Error for AnnotationError {}

#[cfg(test)]
mod tests;

/// klint's out-of-band annotations for `core` items
/// (`annotation.rs::core_out_of_band_annotation`): core is not compiled with
/// klint's attributes, so these stand in for them. A `kanalyze` run honours
/// them wherever a dump has no attribute for the item.
pub fn core_out_of_band(path: &str) -> Option<PreemptCount> {
    const FMT_TRAITS: &[&str] = &[
        "Display", "Debug", "Octal", "LowerHex", "UpperHex", "Pointer", "Binary", "LowerExp",
        "UpperExp",
    ];
    let any_context = |unchecked| PreemptCount {
        adjust: Some(0),
        expect: Some(ExpectRange::TOP),
        unchecked,
    };
    let unchecked = matches!(
        path,
        // `Clone` for `Waker` is a trait impl: its item path is the impl's.
        "<core::task::wake::Waker as core::clone::Clone>::clone"
            | "core::task::wake::Waker::wake"
            | "core::task::wake::Waker::wake_by_ref"
            | "core::fmt::write"
            | "core::slice::sort::unstable::quicksort::partition"
    );
    if unchecked {
        return Some(any_context(true));
    }
    let checked = path.starts_with("core::any::Any::")
        || path.starts_with("core::error::Error::")
        || path.starts_with("core::fmt::Write::")
        || FMT_TRAITS
            .iter()
            .any(|t| path == format!("core::fmt::{t}::fmt"));
    checked.then(|| any_context(false))
}

#[cfg(test)]
mod out_of_band_tests {
    use super::*;

    #[test]
    fn klints_core_table() {
        assert!(core_out_of_band("core::fmt::write").is_some_and(|a| a.unchecked));
        assert!(
            core_out_of_band("<core::task::wake::Waker as core::clone::Clone>::clone")
                .is_some_and(|a| a.unchecked)
        );
        assert!(core_out_of_band("core::task::wake::Waker::wake_by_ref").is_some());
        assert!(core_out_of_band("core::fmt::Write::write_fmt").is_some_and(|a| !a.unchecked));
        assert!(core_out_of_band("core::fmt::Display::fmt").is_some());
        assert!(core_out_of_band("core::fmt::Formatter::write_str").is_none());
        assert!(core_out_of_band("alloc::fmt::format").is_none());
    }
}
