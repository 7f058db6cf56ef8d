//! Each declaration matched by name against the program: the struct and
//! field it names, the functions its keys name. A name that matches
//! nothing, or more than one thing, is a [`Problem`]; what matches is what
//! the passes over the bodies look for.

use std::collections::{BTreeMap, HashMap};

use kmir::{AdtKind, BlockId};
use program::{FnId, Program};

use super::{Emptier, Problem, ProblemKind, missing, quoted, store_sites, writes_field};
use crate::{Declaration, Invariant, never_fails, same_object};

/// What the declarations name in the program, by declaration index.
#[derive(Default)]
pub(super) struct Matched<'a> {
    /// Empty-at-teardown: (struct path, field index) → declaration indices.
    pub(super) wanted: HashMap<(&'a str, u32), Vec<usize>>,
    /// Empty-when-stored: (declaration, struct path, field index, the
    /// functions it covers; empty = all).
    pub(super) stores: Vec<(usize, &'a str, u32, &'a [String])>,
    /// Kept-alive and holds-last: (declaration, struct path, field index,
    /// the functions it covers, whether it says "can be the last").
    pub(super) kept: Vec<(usize, &'a str, u32, &'a [String], bool)>,
    /// Never-fails: function → (call block, declaration, success variant).
    pub(super) succeeds: HashMap<FnId, Vec<(BlockId, usize, u128)>>,
    /// Same-object: function → (drop block, declaration, site).
    pub(super) same: HashMap<FnId, Vec<(BlockId, usize, same_object::Site)>>,
}

/// Matches each declaration, in order, pushing a problem for each name
/// that matches nothing or more than one thing.
pub(super) fn match_declarations<'a>(
    program: &'a Program,
    declarations: &'a [Declaration],
    problems: &mut Vec<Problem>,
) -> Matched<'a> {
    let structs = struct_fields(program);
    let mut m = Matched::default();
    for (d, decl) in declarations.iter().enumerate() {
        match &decl.invariant {
            Invariant::SameObject {
                function,
                ty,
                field,
                same_as,
            } => {
                let Some(holder) = holder(&structs, d, ty, field, problems) else {
                    continue;
                };
                let found = same_object::find(program, function, holder, field, same_as);
                same_object_sites(found, d, function, holder, &mut m.same, problems);
            }
            Invariant::NeverFails { function, callee } => {
                never_fails_sites(program, d, function, callee, &mut m.succeeds, problems);
            }
            Invariant::EmptyAtTeardown {
                ty,
                field,
                emptied_by,
            } => {
                let Some(index) = field_index(&structs, d, ty, field, problems) else {
                    continue;
                };
                check_emptiers(program, d, ty, field, index, emptied_by, problems);
                m.wanted.entry((ty.as_str(), index)).or_default().push(d);
            }
            Invariant::EmptyWhenStored {
                ty,
                field,
                stored_by,
            } => {
                let Some(index) = field_index(&structs, d, ty, field, problems) else {
                    continue;
                };
                check_storers(program, d, ty, field, index, stored_by, problems);
                m.stores.push((d, ty.as_str(), index, stored_by.as_slice()));
            }
            Invariant::KeptAlive {
                ty,
                field,
                taken_by,
            }
            | Invariant::HoldsLast {
                ty,
                field,
                taken_by,
            } => {
                let Some(index) = field_index(&structs, d, ty, field, problems) else {
                    continue;
                };
                check_takers(program, d, taken_by, problems);
                let last = matches!(decl.invariant, Invariant::HoldsLast { .. });
                m.kept
                    .push((d, ty.as_str(), index, taken_by.as_slice(), last));
            }
        }
    }
    m
}

/// Struct path → its field names, from every dump (a struct is in the
/// dump of each crate that uses it).
fn struct_fields(program: &Program) -> BTreeMap<&str, Vec<&str>> {
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
    structs
}

/// The struct holding the back pointer of a same-object declaration.
fn holder<'a>(
    structs: &BTreeMap<&'a str, Vec<&str>>,
    d: usize,
    ty: &str,
    field: &str,
    problems: &mut Vec<Problem>,
) -> Option<&'a str> {
    // The struct by its path, or its last segments (the attribute form
    // writes `Node.owner`).
    let holders: Vec<&str> = structs
        .iter()
        .filter(|(p, fields)| {
            (**p == ty || p.strip_suffix(ty).is_some_and(|h| h.ends_with("::")))
                && fields.contains(&field)
        })
        .map(|(p, _)| *p)
        .collect();
    match holders[..] {
        [h] => Some(h),
        [] => {
            problems.push(Problem {
                declaration: d,
                kind: ProblemKind::NoMatch,
                message: format!("no struct `{ty}` with a field `{field}` in the program"),
                help: Some("name the struct that holds the back pointer, by its canonical path or its last segments, and the field as declared (`kanalyze dump --item` shows paths)".to_string()),
            });
            None
        }
        _ => {
            problems.push(Problem {
                declaration: d,
                kind: ProblemKind::Ambiguous,
                message: format!(
                    "`{ty}.{field}` names fields of {} structs: {}",
                    holders.len(),
                    quoted(&holders)
                ),
                help: Some("give more of the struct's path, so that it names one".to_string()),
            });
            None
        }
    }
}

/// Records the drops a same-object declaration covers, or its problem.
fn same_object_sites(
    found: same_object::Found,
    d: usize,
    function: &str,
    holder: &str,
    same: &mut HashMap<FnId, Vec<(BlockId, usize, same_object::Site)>>,
    problems: &mut Vec<Problem>,
) {
    match found {
        same_object::Found::NoFunction => problems.push(missing(d, "function", function)),
        same_object::Found::NoArgument(path, count) => problems.push(Problem {
            declaration: d,
            kind: ProblemKind::NoMatch,
            message: format!(
                "`same_as = \"{path}\"` starts at an argument `{function}` does not have (it has {count})"
            ),
            help: Some("`same_as` starts at `self` (a method's receiver) or `argN`, the argument at position N counted from 0, `self` included".to_string()),
        }),
        same_object::Found::NoDrop => problems.push(Problem {
            declaration: d,
            kind: ProblemKind::NoMatch,
            message: format!("`{function}` never drops a value of `{holder}`"),
            help: Some("a same-object invariant is about the drops of values of the struct, of handles to it or of containers of it (at the end of a scope, or `drop(x)`); one moved elsewhere is dropped there".to_string()),
        }),
        same_object::Found::Sites(sites) => {
            for (f, block, site) in sites {
                same.entry(f).or_default().push((block, d, site));
            }
        }
    }
}

/// Records the calls a never-fails declaration covers, or its problem.
fn never_fails_sites(
    program: &Program,
    d: usize,
    function: &str,
    callee: &str,
    succeeds: &mut HashMap<FnId, Vec<(BlockId, usize, u128)>>,
    problems: &mut Vec<Problem>,
) {
    match never_fails::find(program, function, callee) {
        never_fails::Found::NoFunction => {
            problems.push(missing(d, "function", function));
        }
        never_fails::Found::NoCall => problems.push(Problem {
            declaration: d,
            kind: ProblemKind::NoMatch,
            message: format!("`{function}` never calls `{callee}`"),
            help: Some("name a function the declared function calls, by its item path or its last segments (`kanalyze dump --item` shows the calls of a body)".to_string()),
        }),
        never_fails::Found::NotFallible(ty) => problems.push(Problem {
            declaration: d,
            kind: ProblemKind::NoMatch,
            message: format!("`{callee}` returns `{ty}`, which cannot fail"),
            help: Some("a never-fails invariant is about a call that returns a `Result` (its `Ok`) or an `Option` (its `Some`)".to_string()),
        }),
        never_fails::Found::Ambiguous(paths) => problems.push(Problem {
            declaration: d,
            kind: ProblemKind::Ambiguous,
            message: format!(
                "`{callee}` names calls of {} functions in `{function}`: {}",
                paths.len(),
                quoted(&paths.iter().map(String::as_str).collect::<Vec<_>>())
            ),
            help: Some("give more of the callee's path, so that it names one function".to_string()),
        }),
        never_fails::Found::Sites(sites) => {
            for (f, block, variant) in sites {
                succeeds.entry(f).or_default().push((block, d, variant));
            }
        }
    }
}

/// The index of `field` in the struct `ty`, or `None` with a problem.
fn field_index(
    structs: &BTreeMap<&str, Vec<&str>>,
    d: usize,
    ty: &str,
    field: &str,
    problems: &mut Vec<Problem>,
) -> Option<u32> {
    let Some(fields) = structs.get(ty) else {
        let short = ty.rsplit("::").next().unwrap_or(ty);
        let near: Vec<&str> = structs
            .keys()
            .copied()
            .filter(|p| p.rsplit("::").next() == Some(short))
            .take(3)
            .collect();
        problems.push(Problem {
            declaration: d,
            kind: ProblemKind::NoMatch,
            message: format!("no struct `{ty}` in the program"),
            help: Some(if near.is_empty() {
                "name a struct of a crate whose dump is given, by its canonical path (`kanalyze dump --item` shows paths)".to_string()
            } else {
                format!("did you mean {}?", quoted(&near))
            }),
        });
        return None;
    };
    let Some(index) = fields.iter().position(|f| *f == field) else {
        problems.push(Problem {
            declaration: d,
            kind: ProblemKind::NoMatch,
            message: format!("struct `{ty}` has no field `{field}`"),
            help: Some(format!("its fields are {}", quoted(fields))),
        });
        return None;
    };
    Some(index as u32)
}

/// Checks that each emptier of an empty-at-teardown declaration exists
/// and empties the field for good.
fn check_emptiers(
    program: &Program,
    d: usize,
    ty: &str,
    field: &str,
    index: u32,
    emptied_by: &[String],
    problems: &mut Vec<Problem>,
) {
    for emptier in emptied_by {
        match writes_field(program, emptier, ty, index) {
            Emptier::Missing => problems.push(missing(d, "emptied_by", emptier)),
            Emptier::Silent => problems.push(Problem {
                declaration: d,
                kind: ProblemKind::NoMatch,
                message: format!("`{emptier}` never writes `{field}` of `{ty}`"),
                help: Some("an emptier must empty the field itself: assign it, or pass it by `&mut` (`Option::take`, `mem::take`)".to_string()),
            }),
            Emptier::Refills(at) => problems.push(Problem {
                declaration: d,
                kind: ProblemKind::Contradiction,
                message: format!("`{emptier}` empties `{field}`, then stores a value into it again before it returns (line {})", at.lo_line),
                help: Some("an emptier must leave the field empty on every path to its return; if it puts the value back, it is not the function that empties the field before teardown".to_string()),
            }),
            Emptier::Writes => {}
        }
    }
}

/// Checks that each storer of an empty-when-stored declaration exists and
/// stores into the field.
fn check_storers(
    program: &Program,
    d: usize,
    ty: &str,
    field: &str,
    index: u32,
    stored_by: &[String],
    problems: &mut Vec<Problem>,
) {
    for storer in stored_by {
        let mut found = false;
        let mut stores_it = false;
        for (id, krate, inst) in program.bodies() {
            if inst.item_path != *storer {
                continue;
            }
            let Some(body) = program.body(id) else {
                continue;
            };
            found = true;
            stores_it |= !store_sites(&krate.dump, &body, ty, index).is_empty();
        }
        if !found {
            problems.push(missing(d, "stored_by", storer));
        } else if !stores_it {
            problems.push(Problem {
                declaration: d,
                kind: ProblemKind::NoMatch,
                message: format!("`{storer}` never stores into `{field}` of `{ty}`"),
                help: Some("a storer must assign the field (`x.field = value`), or the data of the lock or cell the field is (`*x.field.lock() = value`)".to_string()),
            });
        }
    }
}

/// Checks that each function a kept-alive or holds-last declaration names
/// has a body.
fn check_takers(program: &Program, d: usize, taken_by: &[String], problems: &mut Vec<Problem>) {
    for taker in taken_by {
        if !program
            .bodies()
            .any(|(_, _, inst)| inst.item_path == *taker)
        {
            problems.push(missing(d, "taken_by", taker));
        }
    }
}
