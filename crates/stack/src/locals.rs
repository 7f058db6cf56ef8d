//! The large locals behind a large frame: a function's own MIR locals and
//! those of the functions inlined into it (they share its frame), by the
//! size of their type (`kmir::Ty::size`, the compiler's layout).

use std::collections::HashSet;

use program::{FnId, Program};

use crate::frames::Frame;

/// One local of a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Local {
    /// The function whose body declares it (the frame's own function, or
    /// one inlined into it).
    pub function: FnId,
    /// `buf`, `the return value`, `argument `x``, or `None` for a
    /// temporary.
    pub name: Option<String>,
    pub ty: String,
    pub bytes: u64,
    pub span: kmir::Span,
}

/// How many levels of inlined callees are searched.
const INLINED_DEPTH: u32 = 4;

/// The `limit` largest locals of at least `min` bytes in `f`'s body and
/// in the bodies of the functions inlined into it, largest first (then by
/// function and position, for a stable order).
pub fn largest(program: &Program, frames: &[Frame], f: FnId, min: u64, limit: usize) -> Vec<Local> {
    let mut out = Vec::new();
    let mut seen: HashSet<FnId> = HashSet::new();
    let mut todo = vec![(f, 0u32)];
    while let Some((g, depth)) = todo.pop() {
        if !seen.insert(g) {
            continue;
        }
        let Some((krate, _)) = program.body_of(g) else {
            continue;
        };
        let Some(body) = program.body(g) else {
            continue;
        };
        let dump = &krate.dump;
        for (i, local) in body.locals.iter().enumerate() {
            let Some(ty) = dump.ty(local.ty) else {
                continue;
            };
            let Some(bytes) = ty.size else { continue };
            if bytes < min {
                continue;
            }
            let i = i as u32;
            let name = if i == 0 {
                Some("the return value".to_string())
            } else if let Some(n) = body.var_name(i) {
                Some(if i <= body.arg_count {
                    format!("argument `{n}`")
                } else {
                    format!("`{n}`")
                })
            } else if i <= body.arg_count {
                Some(format!("argument {i}"))
            } else {
                None
            };
            out.push(Local {
                function: g,
                name,
                ty: ty.display.to_string(),
                bytes,
                span: local.span,
            });
        }
        if depth < INLINED_DEPTH {
            for (h, _) in program.callees(g) {
                if frames[h.index()] == Frame::Inlined {
                    todo.push((h, depth + 1));
                }
            }
        }
    }
    out.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(a.function.cmp(&b.function))
            .then(a.span.cmp(&b.span))
    });
    out.truncate(limit);
    out
}
