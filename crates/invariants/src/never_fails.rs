//! The calls a never-fails declaration covers: every call of the callee in
//! the declared function, with the variant its result is known to hold.

use kmir::{BlockId, TerminatorKind, TyKind};
use program::{EdgeKind, FnId, Program};

/// What the declared function and callee are in the program.
pub(crate) enum Found {
    /// No function with a body has the declared path.
    NoFunction,
    /// The function has a body, but calls no function with the callee's
    /// path.
    NoCall,
    /// The callee returns a type without a failure variant (its display).
    NotFallible(String),
    /// The callee's name matches calls of several functions (their paths):
    /// a declaration names one.
    Ambiguous(Vec<String>),
    /// Each call: the calling instance, its block, and the success
    /// variant (`Ok` is 0, `Some` is 1).
    Sites(Vec<(FnId, BlockId, u128)>),
}

/// Whether `path` is `callee` or ends with it at a segment boundary, with
/// or without generic arguments (`push_within_capacity`,
/// `Vec::push_within_capacity`, `Vec::<T, A>::push_within_capacity`).
pub(crate) fn names(path: &str, callee: &str) -> bool {
    let ends_with = |path: &str, callee: &str| {
        path == callee
            || path
                .strip_suffix(callee)
                .is_some_and(|head| head.ends_with("::"))
    };
    ends_with(path, callee)
        || ends_with(
            &kmir::name::without_generics(path),
            &kmir::name::without_generics(callee),
        )
}

/// The success variant of a `Result` or `Option`, by the enum's path.
fn success_variant(path: &str) -> Option<u128> {
    match path {
        "core::result::Result" => Some(0),
        "core::option::Option" => Some(1),
        _ => None,
    }
}

pub(crate) fn find(program: &Program, function: &str, callee: &str) -> Found {
    let mut any_function = false;
    let mut sites = Vec::new();
    let mut not_fallible = None;
    let mut named = std::collections::BTreeSet::new();
    for (f, krate, inst) in program.bodies() {
        if inst.item_path != function {
            continue;
        }
        any_function = true;
        let Some(body) = program.body(f) else {
            continue;
        };
        for (target, edge) in program.callees(f) {
            let path = &program.function(target).item_path;
            if edge.kind != EdgeKind::Call || !names(path, callee) {
                continue;
            }
            named.insert(path.to_string());
            let Some(TerminatorKind::Call { destination, .. }) = body
                .blocks
                .get(edge.block as usize)
                .map(|b| &b.terminator.kind)
            else {
                continue;
            };
            let dump = &krate.dump;
            let Some(ty) = dump.place_ty(&body, destination).and_then(|t| dump.ty(t)) else {
                continue;
            };
            let success = match &ty.kind {
                TyKind::Adt { path, .. } => success_variant(path),
                _ => None,
            };
            match success {
                Some(v) => sites.push((f, edge.block as BlockId, v)),
                None => not_fallible = Some(ty.display.to_string()),
            }
        }
    }
    if !any_function {
        Found::NoFunction
    } else if named.len() > 1 {
        Found::Ambiguous(named.into_iter().collect())
    } else if let Some(ty) = not_fallible {
        Found::NotFallible(ty)
    } else if sites.is_empty() {
        Found::NoCall
    } else {
        sites.sort_unstable();
        sites.dedup();
        Found::Sites(sites)
    }
}
