//! The drops a same-object declaration covers: every drop, in the declared
//! function, of a value of the declared struct (or of a handle, option or
//! container of it), with the argument path naming the object its back
//! pointer refers to.
//!
//! The declaration is keyed on what survives a refactor: the function's
//! path, a struct and its field, and an argument path (`self.to`, `arg1`).
//! Which local holds the value, or keeps the named object alive at the
//! drop, is the body analysis's business (the object facts at the drop),
//! so renaming a local or moving a clone into a helper changes nothing.

use kmir::{BlockId, CrateDump, Operand, TerminatorKind, TyId, TyKind};
use program::{FnId, Program};

/// Where an argument path starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgRoot {
    /// `self`: the first argument of a method.
    SelfArg,
    /// `argN`: the argument at position `N` (0-based, `self` included).
    Position(u32),
}

/// An argument path as a declaration writes it: `self`, `self.to`,
/// `arg1.owner`. The object it names is what that place refers to at the
/// function's entry, through references and handles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgPath {
    pub root: ArgRoot,
    /// Field names, each found from the place before it through
    /// references, handles and the fields of wrapper structs (as Rust's
    /// auto-dereference finds `self.to` through an `Arc`).
    pub fields: Vec<String>,
}

impl ArgPath {
    /// Parses `self`, `argN` and either followed by `.field` steps; `None`
    /// for anything else (a local's name among them).
    pub fn parse(s: &str) -> Option<ArgPath> {
        let mut parts = s.trim().split('.');
        let root = match parts.next()?.trim() {
            "self" => ArgRoot::SelfArg,
            r => ArgRoot::Position(r.strip_prefix("arg")?.parse().ok()?),
        };
        let fields = parts
            .map(|p| {
                let p = p.trim();
                (!p.is_empty() && p.chars().all(|c| c == '_' || c.is_alphanumeric()))
                    .then(|| p.to_string())
            })
            .collect::<Option<Vec<_>>>()?;
        Some(ArgPath { root, fields })
    }

    /// The argument's local in a body with `arg_count` arguments whose
    /// first local is named `first_name`.
    pub fn local(&self, arg_count: u32, first_name: Option<&str>) -> Option<u32> {
        match self.root {
            ArgRoot::SelfArg => (arg_count >= 1 && first_name == Some("self")).then_some(1),
            ArgRoot::Position(n) => (n < arg_count).then_some(n + 1),
        }
    }
}

impl std::fmt::Display for ArgPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.root {
            ArgRoot::SelfArg => write!(f, "self")?,
            ArgRoot::Position(n) => write!(f, "arg{n}")?,
        }
        for field in &self.fields {
            write!(f, ".{field}")?;
        }
        Ok(())
    }
}

/// One drop a same-object declaration covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// `path::Struct.field`, as a last-reference place names its steps
    /// (`LastPlace::labels`): the back pointer.
    pub field: String,
    /// The argument local the object's path starts at, and the field
    /// names after it.
    pub arg: u32,
    pub fields: Vec<String>,
}

/// What the declared function and argument are in the program.
pub(crate) enum Found {
    NoFunction,
    /// The function has no such argument (the path as written, and how
    /// many arguments it has).
    NoArgument(String, u32),
    /// No drop of a value of the struct.
    NoDrop,
    Sites(Vec<(FnId, BlockId, Site)>),
}

/// The drops of values of `struct_path` in every instance of `function`.
pub(crate) fn find(
    program: &Program,
    function: &str,
    struct_path: &str,
    field: &str,
    same_as: &ArgPath,
) -> Found {
    let mut any_function = false;
    let mut sites = Vec::new();
    for (f, krate, inst) in program.bodies() {
        if inst.item_path != function {
            continue;
        }
        any_function = true;
        let Some(body) = program.body(f) else {
            continue;
        };
        let first_name = body
            .var_names
            .iter()
            .find(|n| n.local == 1)
            .map(|n| n.name.as_str());
        let Some(arg) = same_as.local(body.arg_count, first_name) else {
            return Found::NoArgument(same_as.to_string(), body.arg_count);
        };
        let dump = &krate.dump;
        let holds = |ty: Option<TyId>| ty.is_some_and(|t| holds_struct(dump, t, struct_path, 0));
        for (b, blk) in body.blocks.iter().enumerate() {
            let drops = match &blk.terminator.kind {
                TerminatorKind::Drop { place, .. } => holds(dump.place_ty(&body, place)),
                // `drop(x)`, `mem::drop(x)`: the value moved into the call.
                TerminatorKind::Call { args, .. } => match args.as_slice() {
                    [Operand::Move(p)] => {
                        holds(dump.place_ty(&body, p))
                            && program
                                .callees(f)
                                .into_iter()
                                .any(|(t, e)| e.block as usize == b && is_mem_drop(program, t))
                    }
                    _ => false,
                },
                _ => false,
            };
            if drops {
                sites.push((
                    f,
                    b as BlockId,
                    Site {
                        field: format!("{struct_path}.{field}"),
                        arg,
                        fields: same_as.fields.clone(),
                    },
                ));
            }
        }
    }
    if !any_function {
        Found::NoFunction
    } else if sites.is_empty() {
        Found::NoDrop
    } else {
        Found::Sites(sites)
    }
}

/// Whether a value of type `ty` is a `struct_path`, or holds one through
/// its type arguments (`Arc<T>`, `Option<Arc<T>>`, `KVec<Arc<T>>`): not
/// through another struct's fields, whose objects the declaration does not
/// speak of.
fn holds_struct(dump: &CrateDump, ty: TyId, struct_path: &str, depth: u32) -> bool {
    // Type arguments nest a few levels in practice (`Option<Arc<DTRWrap<T>>>`).
    if depth > 8 {
        return false;
    }
    match dump.ty(ty).map(|t| &t.kind) {
        Some(TyKind::Adt { path, args }) => {
            path.as_str() == struct_path
                || args
                    .iter()
                    .any(|a| holds_struct(dump, *a, struct_path, depth + 1))
        }
        Some(TyKind::Array { elem, .. } | TyKind::Slice { elem }) => {
            holds_struct(dump, *elem, struct_path, depth + 1)
        }
        Some(TyKind::Tuple(fields)) => fields
            .iter()
            .any(|a| holds_struct(dump, *a, struct_path, depth + 1)),
        _ => false,
    }
}

fn is_mem_drop(program: &Program, f: FnId) -> bool {
    program.function(f).item_path == "core::mem::drop"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_paths() {
        let p = ArgPath::parse("self.to").expect("parses");
        assert_eq!(p.root, ArgRoot::SelfArg);
        assert_eq!(p.fields, vec!["to".to_string()]);
        assert_eq!(p.to_string(), "self.to");
        let p = ArgPath::parse(" arg2 ").expect("parses");
        assert_eq!(p.root, ArgRoot::Position(2));
        assert!(p.fields.is_empty());
        assert_eq!(p.local(3, None), Some(3));
        assert_eq!(p.local(2, Some("self")), None);
        let s = ArgPath::parse("self").expect("parses");
        assert_eq!(s.local(1, Some("self")), Some(1));
        assert_eq!(s.local(1, Some("this")), None);
        for bad in [
            "process",
            "",
            "self.",
            "self..to",
            "argx",
            "arg-1",
            "self.to<T>",
        ] {
            assert_eq!(ArgPath::parse(bad), None, "{bad}");
        }
    }
}
