//! Declarations matched against the linked program: which drop sites of
//! which drop glues they turn into no-ops, and what in them names nothing.

use std::collections::{BTreeMap, HashMap};

use kmir::visit::{PlaceContext, for_each_place};
use kmir::{AdtKind, BlockId, InstanceKind, Projection, TerminatorKind, TyKind};
use program::{FnId, Program};

use crate::{Declaration, Invariant};

/// The declarations and where they apply.
#[derive(Debug, Default)]
pub struct Resolved {
    pub declarations: Vec<Declaration>,
    /// Drop glue → the blocks whose field drop is elided, each with the
    /// index of the declaration that elides it.
    elided: HashMap<FnId, Vec<(BlockId, usize)>>,
}

/// One application of a declaration: a drop of the field in this drop glue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Use {
    pub glue: FnId,
    pub block: BlockId,
}

/// A declaration that names nothing in the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Index into the declarations given to [`resolve`].
    pub declaration: usize,
    pub message: String,
    pub help: Option<String>,
}

impl Resolved {
    /// No declarations.
    pub fn none() -> Resolved {
        Resolved::default()
    }

    /// Whether the drop at `block` of `f` is elided by a declaration.
    pub fn elides(&self, f: FnId, block: BlockId) -> bool {
        self.elided
            .get(&f)
            .is_some_and(|v| v.iter().any(|(b, _)| *b == block))
    }

    /// The blocks of `f` whose drop is elided.
    pub fn elided_in(&self, f: FnId) -> impl Iterator<Item = BlockId> + '_ {
        self.elided.get(&f).into_iter().flatten().map(|(b, _)| *b)
    }

    /// Where each declaration applies, by declaration index, in a stable
    /// order.
    pub fn uses(&self) -> Vec<Vec<Use>> {
        let mut out = vec![Vec::new(); self.declarations.len()];
        for (&glue, sites) in &self.elided {
            for &(block, d) in sites {
                out[d].push(Use { glue, block });
            }
        }
        for v in &mut out {
            v.sort_by_key(|u| (u.glue, u.block));
        }
        out
    }

    /// The same declarations, applied nowhere.
    pub fn without_all(&self) -> Resolved {
        Resolved {
            declarations: self.declarations.clone(),
            elided: HashMap::new(),
        }
    }

    /// The same, without the declaration at `index` (for measuring what
    /// each one removes).
    pub fn without(&self, index: usize) -> Resolved {
        let mut elided = HashMap::new();
        for (&f, sites) in &self.elided {
            let kept: Vec<_> = sites.iter().copied().filter(|&(_, d)| d != index).collect();
            if !kept.is_empty() {
                elided.insert(f, kept);
            }
        }
        Resolved {
            declarations: self.declarations.clone(),
            elided,
        }
    }
}

/// Matches every declaration against the program. Problems are returned
/// for each declaration that names a struct, field or function the
/// program lacks, or an emptier that never writes the field.
pub fn resolve(
    program: &Program,
    declarations: Vec<Declaration>,
) -> Result<Resolved, Vec<Problem>> {
    // Struct path → its field names, from every dump (a struct is in the
    // dump of each crate that uses it).
    let mut structs: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in &program.crates {
        for adt in &c.dump.adts {
            if adt.kind == AdtKind::Struct
                && let Some(v) = adt.variants.first()
            {
                structs
                    .entry(adt.path.as_str())
                    .or_insert_with(|| v.fields.iter().map(|f| f.name.as_str()).collect());
            }
        }
    }
    let mut problems = Vec::new();
    // (struct path, field index) → declaration indices.
    let mut wanted: HashMap<(&str, u32), Vec<usize>> = HashMap::new();
    for (d, decl) in declarations.iter().enumerate() {
        let Invariant::EmptyAtTeardown {
            ty,
            field,
            emptied_by,
        } = &decl.invariant;
        let Some(fields) = structs.get(ty.as_str()) else {
            let short = ty.rsplit("::").next().unwrap_or(ty);
            let near: Vec<&str> = structs
                .keys()
                .copied()
                .filter(|p| p.rsplit("::").next() == Some(short))
                .take(3)
                .collect();
            problems.push(Problem {
                declaration: d,
                message: format!("no struct `{ty}` in the program"),
                help: Some(if near.is_empty() {
                    "name a struct of a crate whose dump is given, by its canonical path (`kanalyze dump --item` shows paths)".to_string()
                } else {
                    format!("did you mean {}?", quoted(&near))
                }),
            });
            continue;
        };
        let Some(index) = fields.iter().position(|f| f == field) else {
            problems.push(Problem {
                declaration: d,
                message: format!("struct `{ty}` has no field `{field}`"),
                help: Some(format!("its fields are {}", quoted(fields))),
            });
            continue;
        };
        let index = index as u32;
        for emptier in emptied_by {
            match writes_field(program, emptier, ty, index) {
                Emptier::Missing => problems.push(Problem {
                    declaration: d,
                    message: format!("`emptied_by` names `{emptier}`, which has no body in the program"),
                    help: Some("name a function of a crate whose dump is given, by its item path (`kanalyze dump --item` shows paths)".to_string()),
                }),
                Emptier::Silent => problems.push(Problem {
                    declaration: d,
                    message: format!("`{emptier}` never writes `{field}` of `{ty}`"),
                    help: Some("an emptier must empty the field itself: assign it, or pass it by `&mut` (`Option::take`, `mem::take`)".to_string()),
                }),
                Emptier::Writes => {}
            }
        }
        wanted.entry((ty.as_str(), index)).or_default().push(d);
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    // The drop glues of the declared structs, and their field drops.
    let mut elided: HashMap<FnId, Vec<(BlockId, usize)>> = HashMap::new();
    for (f, krate, inst) in program.bodies() {
        let InstanceKind::DropGlue { ty } = inst.kind else {
            continue;
        };
        let Some(TyKind::Adt { path, .. }) = krate.dump.ty(ty).map(|t| &t.kind) else {
            continue;
        };
        let Some(body) = &inst.body else { continue };
        for (block, b) in body.blocks.iter().enumerate() {
            let TerminatorKind::Drop { place, .. } = &b.terminator.kind else {
                continue;
            };
            // The glue's argument is the `&mut T` being torn down; its
            // fields are dropped as `(*_1).N`.
            let [Projection::Deref, Projection::Field { index, .. }] = place.projection.as_slice()
            else {
                continue;
            };
            if place.local != 1 {
                continue;
            }
            for &d in wanted.get(&(path.as_str(), *index)).into_iter().flatten() {
                elided.entry(f).or_default().push((block as BlockId, d));
            }
        }
    }
    Ok(Resolved {
        declarations,
        elided,
    })
}

fn quoted(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether a value of the ADT `path` has interior mutability: it is, or
/// contains (through fields, `depth` levels down), an `UnsafeCell`, as the
/// kernel's locks and the standard cells do.
fn has_unsafe_cell(dump: &kmir::CrateDump, path: &str, depth: u32) -> bool {
    if path == "core::cell::UnsafeCell" || path == "std::cell::UnsafeCell" {
        return true;
    }
    let Some(adt) = dump.adt(path).filter(|_| depth > 0) else {
        return false;
    };
    adt.variants.iter().flat_map(|v| &v.fields).any(|f| {
        // A declared field type: `UnsafeCell<T>`, `kernel::types::Opaque<..>`.
        let head = f.ty.split('<').next().unwrap_or_default().trim();
        has_unsafe_cell(dump, head, depth - 1)
    })
}

enum Emptier {
    Missing,
    Silent,
    Writes,
}

/// Whether some instance of the function `path` writes field `field` of a
/// `ty` (assigns it, or borrows it mutably, as `Option::take` needs).
fn writes_field(program: &Program, path: &str, ty: &str, field: u32) -> Emptier {
    let mut found = false;
    for (_, krate, inst) in program.bodies() {
        if inst.item_path != path {
            continue;
        }
        let Some(body) = &inst.body else { continue };
        found = true;
        let mut writes = false;
        for_each_place(body, |place, ctx, _| {
            let write = ctx.is_write() || matches!(ctx, PlaceContext::Borrow { mutable: true });
            let borrow = matches!(ctx, PlaceContext::Borrow { .. });
            if !(write || borrow) || writes {
                return;
            }
            for (i, p) in place.projection.iter().enumerate() {
                let Projection::Field {
                    index,
                    ty: field_ty,
                } = p
                else {
                    continue;
                };
                if *index != field {
                    continue;
                }
                let base = kmir::Place {
                    local: place.local,
                    projection: place.projection[..i].to_vec(),
                };
                let owner = krate
                    .dump
                    .place_ty(body, &base)
                    .and_then(|t| krate.dump.adt_of(t));
                if owner.is_none_or(|a| a.path != ty) {
                    continue;
                }
                // A field behind a lock or cell is written through a
                // shared borrow of it (`self.allocation.lock().take()`).
                let interior = matches!(
                    krate.dump.ty(*field_ty).map(|t| &t.kind),
                    Some(TyKind::Adt { path, .. }) if has_unsafe_cell(&krate.dump, path, 4)
                );
                if write || interior {
                    writes = true;
                }
            }
        });
        if writes {
            return Emptier::Writes;
        }
    }
    if found {
        Emptier::Silent
    } else {
        Emptier::Missing
    }
}
