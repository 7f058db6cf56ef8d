//! What callers need to know about a function: how it moves the preemption
//! count (its adjustment, possibly depending on a discriminant) and which
//! entry counts it accepts (its expectation), with where each came from.

use annotations::ExpectRange;
use program::{EdgeKind, FnId};

/// When a case of a summary applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CaseCond {
    Always,
    /// The returned enum has this discriminant (`try_lock` returning `Some`).
    ReturnDiscr(u128),
    /// The enum behind the first argument had this discriminant on entry
    /// (the drop glue of `Option<Guard>`).
    ArgDiscr(u128),
    /// The returned integer is this value (`spin_trylock` returning 0).
    ReturnIs(u128),
    /// The returned integer is not this value (`spin_trylock` succeeding).
    ReturnIsNot(u128),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Case {
    pub cond: CaseCond,
    pub adjust: i32,
}

/// Where a summary comes from; shown by `kanalyze summary`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Inferred from the body.
    Inferred,
    /// From a `#[klint::preempt_count]`/`drop_preempt_count` annotation on `path`.
    Annotation { path: String, unchecked: bool },
    /// From the spec of C function `name`.
    Spec { name: String },
    /// A C function the spec does not know: klint's default, "may sleep".
    UnknownForeign,
    /// A Rust function of a crate that was not extracted: klint's optimistic default.
    NotExtracted,
    /// A call through a pointer or vtable that may reach code outside the program.
    UnknownIndirect,
    /// A compiler shim or intrinsic without a body.
    Builtin,
    /// The recursion could not be resolved; an error was reported.
    Recursive,
}

/// The call or drop that determined a function's expectation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    pub block: u32,
    pub span: kmir::Span,
    pub callee: FnId,
    pub kind: EdgeKind,
    /// The adjustment since entry at that site.
    pub adj: i32,
    pub callee_expect: ExpectRange,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Never empty; one `Always` case for ordinary functions.
    pub cases: Vec<Case>,
    pub expect: ExpectRange,
    /// From the spec: the call sleeps only if this argument has this flag.
    pub sleeps_if_flag: Option<spec::FlagCondition>,
    /// From the spec: the call sleeps only if this argument is zero (a
    /// reallocation to size 0 frees, and `vfree` may sleep).
    pub sleeps_if_zero: Option<u32>,
    pub source: Source,
    pub reason: Option<Reason>,
    /// Inference failed and was reported: callers use the summary without
    /// reporting anything more about it.
    pub poisoned: bool,
}

impl Summary {
    pub fn fixed(adjust: i32, expect: ExpectRange, source: Source) -> Summary {
        Summary {
            cases: vec![Case { cond: CaseCond::Always, adjust }],
            expect,
            sleeps_if_flag: None,
            sleeps_if_zero: None,
            source,
            reason: None,
            poisoned: false,
        }
    }

    /// klint's "no assumption": adjustment 0, any context.
    pub fn neutral(source: Source) -> Summary {
        Summary::fixed(0, ExpectRange::TOP, source)
    }

    /// klint's default for what it cannot see: adjustment 0, may sleep.
    pub fn may_sleep(source: Source) -> Summary {
        Summary::fixed(0, ExpectRange::exactly(0), source)
    }

    /// The adjustment when it does not depend on anything.
    pub fn adjust(&self) -> Option<i32> {
        match self.cases.as_slice() {
            [Case { cond: CaseCond::Always, adjust }] => Some(*adjust),
            _ => None,
        }
    }

    /// The adjustment for every case, or `None` if they differ.
    pub fn uniform_adjust(&self) -> Option<i32> {
        let first = self.cases.first()?.adjust;
        self.cases.iter().all(|c| c.adjust == first).then_some(first)
    }

    pub fn adjust_text(&self) -> String {
        if let Some(a) = self.uniform_adjust() {
            return a.to_string();
        }
        let parts: Vec<String> = self
            .cases
            .iter()
            .map(|c| match c.cond {
                CaseCond::Always => c.adjust.to_string(),
                CaseCond::ReturnDiscr(d) => format!("{} if it returns variant #{d}", c.adjust),
                CaseCond::ArgDiscr(d) => format!("{} if the value is variant #{d}", c.adjust),
                CaseCond::ReturnIs(v) => format!("{} if it returns {v}", c.adjust),
                CaseCond::ReturnIsNot(v) => format!("{} if it does not return {v}", c.adjust),
            })
            .collect();
        parts.join(", ")
    }
}
