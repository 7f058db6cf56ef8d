//! Where a finding is shown: in the checked program's own code, where a
//! maintainer can act on it (docs/output.md, "Where a finding is placed").
//!
//! * **Library code** is the Rust standard library: a function whose item
//!   path is in one of its crates (`core`, `alloc`, `std`, …: drop glue,
//!   `mem::drop`, `Box`'s destructor, `Vec`'s), and a span whose file lies
//!   in its sources (the sysroot's `library/<crate>/src/`, which is also
//!   where the kernel builds `core` from). Everything else is the
//!   program's own code, the `kernel` crate included.
//! * A finding whose primary span lies in library code (a slice drop found
//!   in `drop_glue::<[T]>`, a sleeping deallocation in `Box`'s drop glue)
//!   is moved to the innermost step of its call trace whose site is in the
//!   program's own code: the user's drop or call that reaches it. The
//!   library steps below it and the original location become notes; the
//!   call trace goes on above it. Its identity (kind, instance, subject)
//!   does not change.
//! * A site that lies in library code inside a function of the program
//!   (code the compiler inlined from the standard library into an upstream
//!   generic's optimized MIR: the `UnsafeCell { value }` of an inlined
//!   `UnsafeCell::new(Self::VTABLE)`, the call of the closure inside an
//!   inlined `Option::map`) is moved to the nearest statement of the same
//!   block that is the function's own code; the original location is a
//!   note.
//! * A `lock-leak` or `unbalanced-unlock` in a function of the standard
//!   library stays there (counted, shown with `--include-upstream`): it is
//!   about that function's own balance, which no call of the program's
//!   changes.

use findings::{Finding, Loc, Note};
use program::{EdgeKind, FnId, Program};

use crate::Input;
use crate::text::{loc, name};

/// The crates of the Rust standard library, as the first segment of an
/// item path.
const STD_CRATES: &[&str] = &[
    "core",
    "alloc",
    "std",
    "proc_macro",
    "test",
    "compiler_builtins",
    "panic_abort",
    "panic_unwind",
    "unwind",
    "std_detect",
];

/// The kinds about the lock balance of the function they are found in.
const OWN_BALANCE: &[&str] = &[
    crate::lock_state::LOCK_LEAK.name,
    crate::lock_state::UNBALANCED_UNLOCK.name,
];

/// Whether findings of this kind are about the lock balance of the
/// function they are found in (which its callers do not change).
pub fn about_own_balance(kind: &str) -> bool {
    OWN_BALANCE.contains(&kind)
}

/// How many library steps between the program's site and the finding are
/// named in notes.
const MAX_STEPS: usize = 6;

/// The crate an item path belongs to: its first segment, `<` of a
/// qualified path left out (`<kdriver::Slow as kbase::Retire>::retire` is
/// `kdriver`'s).
pub(crate) fn item_crate(path: &str) -> &str {
    path.trim_start_matches('<')
        .split("::")
        .next()
        .unwrap_or("")
}

/// Whether `f` is a function of the Rust standard library.
pub(crate) fn is_library_fn(program: &Program, f: FnId) -> bool {
    program
        .body_of(f)
        .is_some_and(|(_, inst)| STD_CRATES.contains(&item_crate(&inst.item_path)))
}

/// Whether a source file is one of the standard library's: under
/// `library/<crate>/src/` of a Rust source tree (the `rust-src` component,
/// or a remapped `/rustc/<hash>/library/…`).
pub(crate) fn is_library_file(name: &str) -> bool {
    let name = name.replace('\\', "/");
    STD_CRATES.iter().any(|c| {
        let dir = format!("library/{c}/src/");
        name.starts_with(&dir) || name.contains(&format!("/{dir}"))
    })
}

/// Whether a location lies in the standard library's sources.
pub(crate) fn is_library_loc(program: &Program, at: Loc) -> bool {
    let dump = program.crates.get(at.krate as usize).map(|c| &c.dump);
    is_library_span(dump, at.span)
}

/// Whether a span of `dump` lies in the standard library's sources.
pub(crate) fn is_library_span(dump: Option<&kmir::CrateDump>, span: kmir::Span) -> bool {
    !span.is_dummy()
        && dump
            .and_then(|d| d.file(span.file))
            .is_some_and(is_library_file)
}

/// The span to show for a site of `body` at `span` that may lie in code
/// inlined from the standard library: `span` itself when it is the
/// program's own, else the nearest statement or terminator of the same
/// block (after it, then before it) that is, else the body's own span.
pub(crate) fn own_span_near(
    program: &Program,
    krate: u32,
    body: &kmir::Body,
    span: kmir::Span,
) -> kmir::Span {
    let dump = program.crates.get(krate as usize).map(|c| &c.dump);
    own_span_near_in(dump, body, span)
}

/// [`own_span_near`] for a body of `dump`.
pub(crate) fn own_span_near_in(
    dump: Option<&kmir::CrateDump>,
    body: &kmir::Body,
    span: kmir::Span,
) -> kmir::Span {
    let own = |s: kmir::Span| !s.is_dummy() && !is_library_span(dump, s);
    if own(span) {
        return span;
    }
    for block in &body.blocks {
        let spans: Vec<kmir::Span> = block
            .statements
            .iter()
            .map(|s| s.span)
            .chain([block.terminator.span])
            .collect();
        let Some(at) = spans.iter().position(|s| *s == span) else {
            continue;
        };
        if let Some(s) = spans[at..]
            .iter()
            .chain(spans[..at].iter().rev())
            .find(|s| own(**s))
        {
            return *s;
        }
    }
    body.span
}

/// Where the paths through the drop that ends block `block` of `body` come
/// from: a drop at the end of a scope (a closing brace) runs on every path
/// that leaves the scope there, an early `return` included. Each path is
/// followed back through the blocks of the exit (storage markers, gotos,
/// other drops at the same span) to the last statement before it (the
/// returned value, the `return`). Also the name of the variable dropped,
/// when it has one.
pub(crate) fn paths_through_drop(
    body: &kmir::Body,
    block: u32,
) -> (Option<String>, Vec<kmir::Span>) {
    let Some(b) = body.block(block) else {
        return (None, Vec::new());
    };
    let kmir::TerminatorKind::Drop { place, .. } = &b.terminator.kind else {
        return (None, Vec::new());
    };
    let var = if place.projection.is_empty() {
        body.var_name(place.local).map(str::to_string)
    } else {
        None
    };
    let at = b.terminator.span;
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); body.blocks.len()];
    for (i, bl) in body.blocks.iter().enumerate() {
        if bl.is_cleanup {
            continue;
        }
        for t in bl.terminator.kind.successors() {
            if let Some(p) = preds.get_mut(t as usize) {
                p.push(i as u32);
            }
        }
    }
    // The last statement of a block that says where the path was before
    // the exit, if any.
    let exit_point = |bl: &kmir::Block, with_terminator: bool| {
        let statement = bl
            .statements
            .iter()
            .rev()
            .filter(|s| {
                !matches!(
                    s.kind,
                    kmir::StatementKind::StorageLive(_) | kmir::StatementKind::StorageDead(_)
                )
            })
            .map(|s| s.span)
            .find(|s| !s.is_dummy() && *s != at);
        let terminator =
            Some(bl.terminator.span).filter(|s| with_terminator && !s.is_dummy() && *s != at);
        statement.or(terminator)
    };
    let mut out: Vec<kmir::Span> = Vec::new();
    let mut seen = vec![block];
    let mut work = Vec::new();
    match exit_point(b, false) {
        Some(s) => out.push(s),
        None => work.extend(preds[block as usize].iter().copied()),
    }
    while let Some(p) = work.pop() {
        if seen.contains(&p) || seen.len() > 64 {
            continue;
        }
        seen.push(p);
        let Some(bl) = body.block(p) else { continue };
        let through = match &bl.terminator.kind {
            kmir::TerminatorKind::Goto { .. } | kmir::TerminatorKind::Drop { .. } => {
                exit_point(bl, true)
            }
            _ => Some(bl.terminator.span).filter(|s| !s.is_dummy()),
        };
        match through {
            Some(s) => {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
            None => work.extend(preds[p as usize].iter().copied()),
        }
    }
    out.sort_by_key(|s| (s.lo_line, s.lo_col));
    (var, out)
}

/// Moves every finding located in library code to the program's own code
/// (the module's rule).
pub(crate) fn place(input: &Input<'_>, findings: &mut [Finding]) {
    for f in findings.iter_mut() {
        relocate(input, f);
    }
}

fn relocate(input: &Input<'_>, finding: &mut Finding) {
    let program = input.program;
    let (Some(primary), Some(function)) = (finding.primary, finding.function) else {
        return;
    };
    // A finding whose trace is already continued by its notes (a double
    // lock proven by a caller) keeps its place.
    if finding.trace_from.is_some() || !is_library_loc(program, primary) {
        return;
    }
    // A lock a standard library function leaves held or releases without
    // holding is about that function's own balance: no call of the
    // program's makes it or can mend it, so it stays where it is found.
    if about_own_balance(finding.kind) && is_library_fn(program, function) {
        return;
    }
    // Library code inlined into a function of the program (an upstream
    // generic's optimized MIR): the function's own code around it.
    if !is_library_fn(program, function) {
        let Some(body) = program.body(function) else {
            return;
        };
        let krate = crate::krate_index(program, function);
        let own = own_span_near(program, krate, &body, primary.span);
        let at = Loc { krate, span: own };
        if own == primary.span || is_library_loc(program, at) {
            return;
        }
        let original = finding.label.take();
        finding.notes.push(Note::at(
            primary,
            format!(
                "the location in the standard library's code that the compiler inlined into `{}`",
                name(input, function)
            ),
        ));
        finding.primary = Some(at);
        finding.label = Some(match original {
            Some(original) => {
                format!("{original}, inside code inlined here from the standard library")
            }
            None => "inside code inlined here from the standard library".to_string(),
        });
        return;
    }
    let trace = program.call_trace(function);
    let Some(pos) = trace.iter().rposition(|s| {
        !is_library_fn(program, s.caller)
            && !is_library_loc(program, loc(input, s.caller, s.edge.span))
    }) else {
        return;
    };
    let step = trace[pos];
    let here = match step.edge.kind {
        EdgeKind::Drop => format!("`{}` runs here", name(input, step.callee)),
        EdgeKind::Virtual => format!("this dynamic call may reach `{}`", name(input, step.callee)),
        EdgeKind::Indirect => format!(
            "this call through a pointer may reach `{}`",
            name(input, step.callee)
        ),
        EdgeKind::Call => format!("`{}` is called here", name(input, step.callee)),
    };
    let label = if step.callee == function {
        format!("{here}; this is found in its standard library code")
    } else {
        format!(
            "{here} and reaches `{}` (standard library), where this is found",
            name(input, function)
        )
    };
    // The library steps from the program's site down to the function.
    let below = &trace[pos + 1..];
    let mut notes: Vec<Note> = below
        .iter()
        .take(MAX_STEPS)
        .map(|s| {
            let (caller, callee) = (name(input, s.caller), name(input, s.callee));
            Note::text(match s.edge.kind {
                EdgeKind::Drop => format!("`{caller}` drops a value with `{callee}`"),
                EdgeKind::Virtual => {
                    format!("`{caller}` makes a dynamic call that may reach `{callee}`")
                }
                EdgeKind::Indirect => {
                    format!("`{caller}` calls a function pointer that may be `{callee}`")
                }
                EdgeKind::Call => format!("`{caller}` calls `{callee}`"),
            })
        })
        .collect();
    if below.len() > MAX_STEPS {
        notes.push(Note::text(format!(
            "… {} more steps in the standard library",
            below.len() - MAX_STEPS
        )));
    }
    notes.push(Note::at(
        primary,
        match finding.label.take() {
            Some(original) => format!(
                "the location in the standard library, in `{}`: {original}",
                name(input, function)
            ),
            None => format!(
                "the location in the standard library, in `{}`",
                name(input, function)
            ),
        },
    ));
    finding.notes.extend(notes);
    finding.primary = Some(loc(input, step.caller, step.edge.span));
    finding.label = Some(label);
    finding.trace_from = Some(step.caller);
}

#[cfg(test)]
mod tests {
    use super::{is_library_file, item_crate};

    #[test]
    fn library_files() {
        for lib in [
            "/root/.rustup/toolchains/nightly/lib/rustlib/src/rust/library/core/src/ptr/mod.rs",
            "/rustc/0123abcd/library/alloc/src/boxed.rs",
            "library/std/src/io/mod.rs",
            "C:\\rust\\library\\core\\src\\cell.rs",
        ] {
            assert!(is_library_file(lib), "{lib}");
        }
        for own in [
            "rust/kernel/sync/arc.rs",
            "drivers/block/rnull/rnull.rs",
            "/home/me/src/my_library/core/src/lib.rs",
            "/home/me/library/corexx/src/lib.rs",
        ] {
            assert!(!is_library_file(own), "{own}");
        }
    }

    #[test]
    fn item_crates() {
        assert_eq!(item_crate("core::ptr::drop_glue"), "core");
        assert_eq!(
            item_crate("<kdriver::Slow as kbase::Retire>::retire"),
            "kdriver"
        );
        assert_eq!(
            item_crate("<alloc::boxed::Box<T, A> as core::ops::Drop>::drop"),
            "alloc"
        );
    }
}
