//! The drops a same-object declaration covers: every drop of the declared
//! variable in the declared function, with the variable that names the
//! same object and how that one keeps it alive.

use kmir::{BlockId, Operand, TerminatorKind, TyKind};
use program::{FnId, Program};

/// How the variable a same-object declaration names (`same_as`) keeps the
/// object alive at a drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alive {
    /// A shared-reference argument (`&self`, `self: &Arc<Self>`): what it
    /// borrows outlives the call.
    SharedArg,
    /// A local (by MIR local index): alive where it was given one value by
    /// a sharing clone and nothing since may have moved, dropped or
    /// replaced it (checked by the body analysis at each drop).
    Local(u32),
}

/// One drop a same-object declaration covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// `path::Struct.field`, as a last-reference place names its steps
    /// (`LastPlace::labels`): the back pointer.
    pub field: String,
    pub alive: Alive,
}

/// What the declared function and variables are in the program.
pub(crate) enum Found {
    NoFunction,
    /// The function has a body but no variable of this name (which key,
    /// the name, and whether there are several of that name instead).
    NoVariable(&'static str, String, bool),
    /// `same_as` is an argument that is not a shared reference (its type).
    NotShared(String),
    /// No drop of the declared variable.
    NoDrop,
    Sites(Vec<(FnId, BlockId, Site)>),
}

/// The drops of variable `local` in every instance of `function`.
/// `struct_path` is the resolved struct path of the back pointer's holder.
pub(crate) fn find(
    program: &Program,
    function: &str,
    local: &str,
    struct_path: &str,
    field: &str,
    same_as: &str,
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
        let named = |name: &str| -> Vec<u32> {
            let mut v: Vec<u32> = body
                .var_names
                .iter()
                .filter(|n| n.name.as_str() == name)
                .map(|n| n.local)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut dropped = named(local);
        if dropped.is_empty() {
            return Found::NoVariable("local", local.to_string(), false);
        }
        // Temporaries the value is moved into on its way to a drop
        // (`drop(node)` is `_7 = move node; drop(move _7)`).
        loop {
            let before = dropped.len();
            for blk in &body.blocks {
                for st in &blk.statements {
                    if let kmir::StatementKind::Assign { place, rvalue } = &st.kind
                        && place.projection.is_empty()
                        && !dropped.contains(&place.local)
                        && body.var_names.iter().all(|n| n.local != place.local)
                        && let kmir::Rvalue::Use(Operand::Move(from)) = &**rvalue
                        && from.projection.is_empty()
                        && dropped.contains(&from.local)
                    {
                        dropped.push(place.local);
                    }
                }
            }
            if dropped.len() == before {
                break;
            }
        }
        let alive = match named(same_as)[..] {
            [] => return Found::NoVariable("same_as", same_as.to_string(), false),
            [l] if l >= 1 && l <= body.arg_count => {
                let dump = &krate.dump;
                let ty = body.local(l).and_then(|d| dump.ty(d.ty));
                match ty.map(|t| (&t.kind, t.display.to_string())) {
                    Some((TyKind::Ref { mutable: false, .. }, _)) => Alive::SharedArg,
                    Some((_, display)) => return Found::NotShared(display),
                    None => return Found::NotShared("?".to_string()),
                }
            }
            [l] => Alive::Local(l),
            // Several variables of that name (shadowing): none is the one.
            _ => return Found::NoVariable("same_as", same_as.to_string(), true),
        };
        for (b, blk) in body.blocks.iter().enumerate() {
            let drops = match &blk.terminator.kind {
                TerminatorKind::Drop { place, .. } => {
                    place.projection.is_empty() && dropped.contains(&place.local)
                }
                // `drop(x)`, `mem::drop(x)`: the value moved into the call.
                TerminatorKind::Call { args, .. } => {
                    matches!(
                        args.first(),
                        Some(Operand::Move(p)) if p.projection.is_empty() && dropped.contains(&p.local)
                    ) && args.len() == 1
                        && program
                            .callees(f)
                            .into_iter()
                            .any(|(t, e)| e.block as usize == b && is_mem_drop(program, t))
                }
                _ => false,
            };
            if drops {
                sites.push((
                    f,
                    b as BlockId,
                    Site {
                        field: format!("{struct_path}.{field}"),
                        alive,
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

fn is_mem_drop(program: &Program, f: FnId) -> bool {
    program.function(f).item_path == "core::mem::drop"
}
