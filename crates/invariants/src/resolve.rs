//! Declarations matched against the linked program: which drop sites of
//! which drop glues they turn into no-ops, and what in them names nothing.

use std::collections::HashMap;

use kmir::visit::{PlaceContext, for_each_place};
use kmir::{BlockId, InstanceKind, Projection, TerminatorKind, TyKind};
use program::{FnId, Program};

use crate::same_object;
use crate::{Declaration, Invariant};

mod matching;

use matching::Matched;

/// The declarations and where they apply.
#[derive(Debug, Default)]
pub struct Resolved {
    pub declarations: Vec<Declaration>,
    /// Drop glue → the blocks whose field drop is elided, each with the
    /// index of the declaration that elides it.
    elided: HashMap<FnId, Vec<(BlockId, usize)>>,
    /// Function → the blocks that drop (or `mem::drop`) a reference taken
    /// out of a kept-alive field, which is therefore not the last one.
    not_last: HashMap<FnId, Vec<(BlockId, usize)>>,
    /// Function → the blocks that drop (or `mem::drop`) a reference taken
    /// out of a holds-last field, which can therefore be the last one.
    last: HashMap<FnId, Vec<(BlockId, usize)>>,
    /// Function → the call blocks whose result a never-fails declaration
    /// says holds its success variant: (block, declaration, variant).
    succeeds: HashMap<FnId, Vec<(BlockId, usize, u128)>>,
    /// Function → the drops a same-object declaration covers: (block,
    /// declaration, the back pointer and what keeps its object alive).
    same: HashMap<FnId, Vec<(BlockId, usize, same_object::Site)>>,
}

/// One application of a declaration: a drop it elides, in a drop glue (empty
/// at teardown) or a storing function (empty when stored), or a drop of a
/// reference it says is not the last (kept alive), or can be (holds last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Use {
    pub function: FnId,
    pub block: BlockId,
}

/// A declaration that names nothing in the program, names more than one
/// thing, or that the program contradicts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Index into the declarations given to [`resolve`].
    pub declaration: usize,
    pub kind: ProblemKind,
    pub message: String,
    pub help: Option<String>,
}

/// What is wrong with a declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// The program lacks what it names.
    NoMatch,
    /// What it names matches more than one thing.
    Ambiguous,
    /// The program contradicts it.
    Contradiction,
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

    /// The blocks of `f` that drop a reference a kept-alive declaration
    /// says is not the last one.
    pub fn not_last_in(&self, f: FnId) -> impl Iterator<Item = BlockId> + '_ {
        self.not_last.get(&f).into_iter().flatten().map(|(b, _)| *b)
    }

    /// The blocks of `f` that drop a reference a holds-last declaration
    /// says can be the last one.
    pub fn last_in(&self, f: FnId) -> impl Iterator<Item = BlockId> + '_ {
        self.last.get(&f).into_iter().flatten().map(|(b, _)| *b)
    }

    /// The holds-last declaration that covers the drop at `block` of `f`.
    pub fn last_at(&self, f: FnId, block: BlockId) -> Option<&Declaration> {
        let &(_, d) = self.last.get(&f)?.iter().find(|(b, _)| *b == block)?;
        self.declarations.get(d)
    }

    /// The calls of `f` whose result a never-fails declaration says holds
    /// its success variant: (block, variant).
    pub fn succeeds_in(&self, f: FnId) -> impl Iterator<Item = (BlockId, u128)> + '_ {
        self.succeeds
            .get(&f)
            .into_iter()
            .flatten()
            .map(|&(b, _, v)| (b, v))
    }

    /// The drops of `f` a same-object declaration covers: (block, the back
    /// pointer's `path::Struct.field`, what keeps its object alive).
    pub fn same_object_in(
        &self,
        f: FnId,
    ) -> impl Iterator<Item = (BlockId, &same_object::Site)> + '_ {
        self.same
            .get(&f)
            .into_iter()
            .flatten()
            .map(|(b, _, s)| (*b, s))
    }

    /// Where each declaration applies, by declaration index, in a stable
    /// order.
    pub fn uses(&self) -> Vec<Vec<Use>> {
        let mut out = vec![Vec::new(); self.declarations.len()];
        for (&glue, sites) in self.elided.iter().chain(&self.not_last).chain(&self.last) {
            for &(block, d) in sites {
                out[d].push(Use {
                    function: glue,
                    block,
                });
            }
        }
        for (&function, sites) in &self.succeeds {
            for &(block, d, _) in sites {
                out[d].push(Use { function, block });
            }
        }
        for (&function, sites) in &self.same {
            for &(block, d, _) in sites {
                out[d].push(Use { function, block });
            }
        }
        for v in &mut out {
            v.sort_by_key(|u| (u.function, u.block));
        }
        out
    }

    /// The same declarations, applied nowhere.
    pub fn without_all(&self) -> Resolved {
        Resolved {
            declarations: self.declarations.clone(),
            elided: HashMap::new(),
            not_last: HashMap::new(),
            last: HashMap::new(),
            succeeds: HashMap::new(),
            same: HashMap::new(),
        }
    }

    /// The same, with only the holds-last declarations applied (for
    /// measuring what the others remove together).
    pub fn without_removing(&self) -> Resolved {
        Resolved {
            declarations: self.declarations.clone(),
            elided: HashMap::new(),
            not_last: HashMap::new(),
            last: self.last.clone(),
            succeeds: HashMap::new(),
            same: HashMap::new(),
        }
    }

    /// The same, without the declaration at `index` (for measuring what
    /// each one removes).
    pub fn without(&self, index: usize) -> Resolved {
        let filter = |map: &HashMap<FnId, Vec<(BlockId, usize)>>| {
            let mut out = HashMap::new();
            for (&f, sites) in map {
                let kept: Vec<_> = sites.iter().copied().filter(|&(_, d)| d != index).collect();
                if !kept.is_empty() {
                    out.insert(f, kept);
                }
            }
            out
        };
        let mut succeeds = HashMap::new();
        for (&f, sites) in &self.succeeds {
            let kept: Vec<_> = sites
                .iter()
                .copied()
                .filter(|&(_, d, _)| d != index)
                .collect();
            if !kept.is_empty() {
                succeeds.insert(f, kept);
            }
        }
        let mut same = HashMap::new();
        for (&f, sites) in &self.same {
            let kept: Vec<_> = sites
                .iter()
                .filter(|(_, d, _)| *d != index)
                .cloned()
                .collect();
            if !kept.is_empty() {
                same.insert(f, kept);
            }
        }
        Resolved {
            declarations: self.declarations.clone(),
            elided: filter(&self.elided),
            not_last: filter(&self.not_last),
            last: filter(&self.last),
            succeeds,
            same,
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
    let mut problems = Vec::new();
    let Matched {
        wanted,
        stores,
        kept,
        succeeds,
        same,
    } = matching::match_declarations(program, &declarations, &mut problems);
    let mut elided = elided_field_drops(program, &wanted);
    let mut not_last: HashMap<FnId, Vec<(BlockId, usize)>> = HashMap::new();
    let mut last: HashMap<FnId, Vec<(BlockId, usize)>> = HashMap::new();
    let mut borrowers: Vec<Vec<FnId>> = vec![Vec::new(); kept.len()];
    for facts in body_facts(program, &stores, &kept) {
        let BodyFacts {
            function: f,
            covered,
            borrowing,
            replaced,
        } = facts;
        if !covered.is_empty() {
            elided.entry(f).or_default().extend(covered);
        }
        for (block, d) in replaced {
            let map = if matches!(declarations[d].invariant, Invariant::HoldsLast { .. }) {
                &mut last
            } else {
                &mut not_last
            };
            map.entry(f).or_default().push((block, d));
        }
        for k in borrowing {
            borrowers[k].push(f);
        }
    }
    // The drops of what is taken out of the kept-alive and holds-last
    // fields.
    for (&(d, ty, index, taken_by, is_last), borrowers) in kept.iter().zip(borrowers) {
        for (f, block) in kept_alive_drops(program, ty, index, borrowers) {
            // Restricted to the drops in the functions named.
            if !taken_by.is_empty() && !taken_by.iter().any(|t| *t == program.function(f).item_path)
            {
                continue;
            }
            let map = if is_last { &mut last } else { &mut not_last };
            map.entry(f).or_default().push((block, d));
        }
    }
    check_kept_applied(&declarations, &not_last, &last, &mut problems);
    check_never_both(program, &declarations, &not_last, &last, &mut problems);
    check_stores_applied(&declarations, &elided, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    for v in elided
        .values_mut()
        .chain(not_last.values_mut())
        .chain(last.values_mut())
    {
        v.sort_unstable();
        v.dedup();
    }
    Ok(Resolved {
        declarations,
        elided,
        not_last,
        last,
        succeeds,
        same,
    })
}

/// The drop glues of the declared structs, and their field drops: each
/// glue's drops of `(*_1).N` (a fact of its body alone, kept per dump by
/// the per-dump cache), matched against the empty-at-teardown
/// declarations.
fn elided_field_drops(
    program: &Program,
    wanted: &HashMap<(&str, u32), Vec<usize>>,
) -> HashMap<FnId, Vec<(BlockId, usize)>> {
    let mut elided: HashMap<FnId, Vec<(BlockId, usize)>> = HashMap::new();
    if wanted.is_empty() {
        return elided;
    }
    let glues: Vec<(FnId, &str)> = program
        .bodies()
        .filter_map(|(f, krate, inst)| {
            let InstanceKind::DropGlue { ty } = inst.kind else {
                return None;
            };
            let Some(TyKind::Adt { path, .. }) = krate.dump.ty(ty).map(|t| &t.kind) else {
                return None;
            };
            Some((f, path.as_str()))
        })
        .collect();
    let ids: Vec<FnId> = glues.iter().map(|(f, _)| *f).collect();
    let drops = program.per_body(GLUE_FIELD_DROPS, &ids, |_, _, body| field_drops(body));
    for ((f, path), drops) in glues.into_iter().zip(drops) {
        for (block, index) in drops.into_iter().flatten() {
            for &d in wanted.get(&(path, index)).into_iter().flatten() {
                elided.entry(f).or_default().push((block, d));
            }
        }
    }
    elided
}

/// What one body holds for the empty-when-stored, kept-alive and
/// holds-last declarations.
struct BodyFacts {
    function: FnId,
    /// The stores an empty-when-stored declaration covers: (block,
    /// declaration).
    covered: Vec<(BlockId, usize)>,
    /// The kept-alive or holds-last declarations (by index among them)
    /// whose field the body borrows.
    borrowing: Vec<usize>,
    /// The stores into a kept-alive or holds-last field the declaration
    /// covers (the old value a store drops was in the field until then,
    /// so what the declaration says of the field's references holds of
    /// it): (block, declaration).
    replaced: Vec<(BlockId, usize)>,
}

/// One pass over the bodies, in parallel (each is decoded once, and only
/// when a declaration asks for it), for each body's [`BodyFacts`]. All are
/// facts of a body and its dump (the functions a declaration covers are
/// chosen by the instance's own item path), kept per dump under a label
/// naming the declarations' fields and functions.
fn body_facts(
    program: &Program,
    stores: &[(usize, &str, u32, &[String])],
    kept: &[(usize, &str, u32, &[String], bool)],
) -> Vec<BodyFacts> {
    if stores.is_empty() && kept.is_empty() {
        return Vec::new();
    }
    let label = format!(
        "invariants: stores into {:?}, borrows of {:?}, v2",
        stores
            .iter()
            .map(|&(_, ty, index, stored_by)| (ty, index, stored_by))
            .collect::<Vec<_>>(),
        kept.iter()
            .map(|&(_, ty, index, taken_by, _)| (ty, index, taken_by))
            .collect::<Vec<_>>()
    );
    let ids: Vec<FnId> = program.bodies().map(|(f, _, _)| f).collect();
    let found = program.per_body(&label, &ids, |krate, instance, body| {
        let inst = &krate.dump.instances[instance as usize];
        let stores: Vec<Vec<BlockId>> = stores
            .iter()
            .map(|&(_, ty, index, stored_by)| {
                if !stored_by.is_empty() && !stored_by.iter().any(|p| *p == inst.item_path) {
                    return Vec::new();
                }
                store_sites(&krate.dump, body, ty, index)
            })
            .collect();
        let borrowing: Vec<bool> = kept
            .iter()
            .map(|&(_, ty, index, ..)| borrows_field(&krate.dump, body, ty, index))
            .collect();
        let kept_stores: Vec<Vec<BlockId>> = kept
            .iter()
            .map(|&(_, ty, index, taken_by, _)| {
                if !taken_by.is_empty() && !taken_by.iter().any(|p| *p == inst.item_path) {
                    return Vec::new();
                }
                store_sites(&krate.dump, body, ty, index)
            })
            .collect();
        (stores, borrowing, kept_stores)
    });
    ids.into_iter()
        .zip(found)
        .filter_map(|(f, found)| {
            let (stores_found, borrowing, kept_stores) = found?;
            let mut covered = Vec::new();
            for (&(d, ..), blocks) in stores.iter().zip(stores_found) {
                for block in blocks {
                    covered.push((block, d));
                }
            }
            let borrowing: Vec<usize> = borrowing
                .iter()
                .enumerate()
                .filter(|(_, b)| **b)
                .map(|(k, _)| k)
                .collect();
            let mut replaced = Vec::new();
            for (&(d, ..), blocks) in kept.iter().zip(kept_stores) {
                for block in blocks {
                    replaced.push((block, d));
                }
            }
            Some(BodyFacts {
                function: f,
                covered,
                borrowing,
                replaced,
            })
        })
        .collect()
}

/// Checks that every kept-alive and holds-last declaration applies
/// somewhere (unless it has a problem already).
fn check_kept_applied(
    declarations: &[Declaration],
    not_last: &HashMap<FnId, Vec<(BlockId, usize)>>,
    last: &HashMap<FnId, Vec<(BlockId, usize)>>,
    problems: &mut Vec<Problem>,
) {
    for (d, decl) in declarations.iter().enumerate() {
        let (ty, field, taken_by, applied, kind) = match &decl.invariant {
            Invariant::KeptAlive {
                ty,
                field,
                taken_by,
            } => (ty, field, taken_by, not_last, "a kept-alive"),
            Invariant::HoldsLast {
                ty,
                field,
                taken_by,
            } => (ty, field, taken_by, last, "a holds-last"),
            _ => continue,
        };
        if !applied.values().flatten().any(|&(_, e)| e == d)
            && !problems.iter().any(|p| p.declaration == d)
        {
            let who = if taken_by.is_empty() {
                "nothing".to_string()
            } else {
                format!("none of `{}`", taken_by.join("`, `"))
            };
            problems.push(Problem {
                declaration: d,
                kind: ProblemKind::NoMatch,
                message: format!("{who} takes a reference out of `{field}` of `{ty}` and drops it, or stores over one"),
                help: Some(format!("{kind} invariant is about references taken out of the field (the result of a call that borrows it, such as `pop_front`, `remove` or `mem::take`) and dropped, and about the old value a store into the field drops; the program has neither")),
            });
        }
    }
}

/// Checks that no drop is both: the reference it drops is never the last
/// one, and it can be the last one.
fn check_never_both(
    program: &Program,
    declarations: &[Declaration],
    not_last: &HashMap<FnId, Vec<(BlockId, usize)>>,
    last: &HashMap<FnId, Vec<(BlockId, usize)>>,
    problems: &mut Vec<Problem>,
) {
    for (f, sites) in last {
        for &(block, d) in sites {
            let Some(&(_, k)) = not_last
                .get(f)
                .and_then(|v| v.iter().find(|(b, _)| *b == block))
            else {
                continue;
            };
            if problems.iter().any(|p| p.declaration == d) {
                continue;
            }
            problems.push(Problem {
                declaration: d,
                kind: ProblemKind::Contradiction,
                message: format!(
                    "`{}` drops a reference{} that this declaration says can be the last, and another says is kept alive ({})",
                    program.function(*f).item_path,
                    program
                        .body(*f)
                        .and_then(|b| b.blocks.get(block as usize).map(|b| b.terminator.span.lo_line))
                        .map_or(String::new(), |line| format!(" at line {line}")),
                    declarations[k].describe()
                ),
                help: Some("a reference taken out of a field cannot be both kept alive elsewhere and the last one; narrow one of the two with `taken_by`".to_string()),
            });
        }
    }
}

/// Checks that every empty-when-stored declaration covers some store
/// (unless it has a problem already).
fn check_stores_applied(
    declarations: &[Declaration],
    elided: &HashMap<FnId, Vec<(BlockId, usize)>>,
    problems: &mut Vec<Problem>,
) {
    for (d, decl) in declarations.iter().enumerate() {
        if let Invariant::EmptyWhenStored { ty, field, .. } = &decl.invariant
            && !elided.values().flatten().any(|&(_, e)| e == d)
            && !problems.iter().any(|p| p.declaration == d)
        {
            problems.push(Problem {
                declaration: d,
                kind: ProblemKind::NoMatch,
                message: format!("no store into `{field}` of `{ty}` drops an old value"),
                help: Some("an empty-when-stored invariant is about assignments that drop the field's old value (its type has a destructor); the program has none".to_string()),
            });
        }
    }
}

/// The phase label of [`field_drops`]' results.
const GLUE_FIELD_DROPS: &str = "invariants: drop glue field drops, v1";

/// The field drops of a drop glue's body: its blocks that drop `(*_1).N`
/// (the glue's argument is the `&mut T` being torn down), with `N`.
fn field_drops(body: &kmir::Body) -> Vec<(BlockId, u32)> {
    let mut out = Vec::new();
    for (block, b) in body.blocks.iter().enumerate() {
        let TerminatorKind::Drop { place, .. } = &b.terminator.kind else {
            continue;
        };
        let [Projection::Deref, Projection::Field { index, .. }] = &place.projection[..] else {
            continue;
        };
        if place.local != 1 {
            continue;
        }
        out.push((block as BlockId, *index));
    }
    out
}

fn missing(d: usize, key: &str, path: &str) -> Problem {
    Problem {
        declaration: d,
        kind: ProblemKind::NoMatch,
        message: format!("`{key}` names `{path}`, which has no body in the program"),
        help: Some("name a function of a crate whose dump is given, by its item path (`kanalyze dump --item` shows paths)".to_string()),
    }
}

/// The blocks of `body` that drop the old value of field `field` of a
/// `ty` just before a new value is stored over it.
///
/// A store is a `Drop` of a place whose target block next assigns that same
/// place. The place is the field itself (`x.f = v`, `(*p).f = v`), or the
/// data behind a pointer that the body derives from a borrow of the field
/// through calls and copies (a lock guard's `deref_mut`: `*x.f.lock() = v`)
/// whose type is one of the field type's type arguments (the lock's data).
fn store_sites(dump: &kmir::CrateDump, body: &kmir::Body, ty: &str, field: u32) -> Vec<BlockId> {
    let mut out = Vec::new();
    for (block, b) in body.blocks.iter().enumerate() {
        let TerminatorKind::Drop { place, target, .. } = &b.terminator.kind else {
            continue;
        };
        // The target block assigns the place before anything else touches
        // its local (drop flags and storage markers may come first).
        let assigned = body.blocks.get(*target as usize).is_some_and(|t| {
            for s in &t.statements {
                if let kmir::StatementKind::Assign { place: p, .. } = &s.kind
                    && p == place
                {
                    return true;
                }
                if mentions(s, place.local) {
                    return false;
                }
            }
            false
        });
        if !assigned {
            continue;
        }
        let direct = match place.projection.split_last() {
            Some((Projection::Field { index, .. }, base)) if *index == field => {
                let base = kmir::Place {
                    local: place.local,
                    projection: base.to_vec().into(),
                };
                dump.place_ty(body, &base)
                    .and_then(|t| dump.adt_of(t))
                    .is_some_and(|a| a.path == ty)
            }
            _ => false,
        };
        let through_pointer = !direct
            && *place.projection == [Projection::Deref]
            && dump
                .place_ty(body, place)
                .and_then(|t| dump.ty(t))
                .is_some_and(|data| {
                    borrowed_field(dump, body, place.local, ty, field)
                        .is_some_and(|f| type_argument_of(&f.display, &data.display))
                });
        if direct || through_pointer {
            out.push(block as BlockId);
        }
    }
    out
}

/// The type of field `field` of a `ty` when `local` is derived, through
/// copies, moves, casts and the arguments of calls, from a borrow of that
/// field.
fn borrowed_field<'d>(
    dump: &'d kmir::CrateDump,
    body: &kmir::Body,
    local: kmir::LocalId,
    ty: &str,
    field: u32,
) -> Option<&'d kmir::Ty> {
    let mut work = vec![(local, 0u32)];
    let mut seen = std::collections::HashSet::new();
    while let Some((l, depth)) = work.pop() {
        if depth > 8 || !seen.insert(l) {
            continue;
        }
        let mut sources: Vec<kmir::LocalId> = Vec::new();
        for b in &body.blocks {
            for s in &b.statements {
                let kmir::StatementKind::Assign { place, rvalue } = &s.kind else {
                    continue;
                };
                if place.local != l || !place.projection.is_empty() {
                    continue;
                }
                match &**rvalue {
                    kmir::Rvalue::Ref { place: r, .. }
                    | kmir::Rvalue::AddressOf { place: r, .. } => {
                        if let Some((Projection::Field { index, ty: fty }, base)) =
                            r.projection.split_last()
                            && *index == field
                        {
                            let base = kmir::Place {
                                local: r.local,
                                projection: base.to_vec().into(),
                            };
                            if dump
                                .place_ty(body, &base)
                                .and_then(|t| dump.adt_of(t))
                                .is_some_and(|a| a.path == ty)
                            {
                                return dump.ty(*fty);
                            }
                        }
                        sources.push(r.local);
                    }
                    kmir::Rvalue::Use(o) | kmir::Rvalue::Cast { operand: o, .. } => {
                        kmir::visit::operand_locals(o, &mut sources);
                    }
                    _ => {}
                }
            }
            if let TerminatorKind::Call {
                args, destination, ..
            } = &b.terminator.kind
                && destination.local == l
                && destination.projection.is_empty()
            {
                for a in args {
                    kmir::visit::operand_locals(a, &mut sources);
                }
            }
        }
        work.extend(sources.into_iter().map(|s| (s, depth + 1)));
    }
    None
}

/// Whether the type displayed as `inner` is one of the type arguments of
/// the type displayed as `outer` (`Option<A>` in `Lock<Option<A>, B>`).
fn type_argument_of(outer: &str, inner: &str) -> bool {
    let Some(open) = outer.find('<') else {
        return false;
    };
    // Split the top-level argument list of `outer` by its commas.
    let args = &outer[open + 1..outer.len().saturating_sub(1)];
    let mut depth = 0i32;
    let mut start = 0;
    let mut found = false;
    for (i, c) in args.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                found |= args[start..i].trim() == inner;
                start = i + 1;
            }
            _ => {}
        }
    }
    found || args[start..].trim() == inner
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
    /// It empties the field and stores a value into it again before it
    /// can return (where).
    Refills(kmir::Span),
}

/// Whether some instance of the function `path` writes field `field` of a
/// `ty` (assigns it, or borrows it mutably, as `Option::take` needs), and,
/// if one does, whether it contradicts emptying it: a store of a non-empty
/// value over the field after a point where it empties it, from which the
/// function can return without emptying it again.
fn writes_field(program: &Program, path: &str, ty: &str, field: u32) -> Emptier {
    let mut found = false;
    let mut writes = false;
    for (id, krate, inst) in program.bodies() {
        if inst.item_path != path {
            continue;
        }
        let Some(body) = program.body(id) else {
            continue;
        };
        found = true;
        let points = emptying_points(&krate.dump, &body, ty, field);
        if points.is_empty() {
            continue;
        }
        writes = true;
        if let Some(store) = store_after_emptying(&krate.dump, &body, ty, field, &points) {
            return Emptier::Refills(store);
        }
    }
    match (found, writes) {
        (false, _) => Emptier::Missing,
        (true, false) => Emptier::Silent,
        (true, true) => Emptier::Writes,
    }
}

/// Where `body` empties (or may empty) field `field` of a `ty`: assigns it
/// an empty variant, borrows it mutably (`Option::take`), or borrows a
/// field with interior mutability (`self.allocation.lock().take()`).
/// Stores of other values are not emptying points.
fn emptying_points(
    dump: &kmir::CrateDump,
    body: &kmir::Body,
    ty: &str,
    field: u32,
) -> Vec<kmir::visit::Location> {
    let mut out = Vec::new();
    for_each_place(body, |place, ctx, location| {
        let write = ctx.is_write() || matches!(ctx, PlaceContext::Borrow { mutable: true });
        let borrow = matches!(ctx, PlaceContext::Borrow { .. });
        if !(write || borrow) || matches!(ctx, PlaceContext::Drop) {
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
                projection: place.projection[..i].to_vec().into(),
            };
            let owner = dump.place_ty(body, &base).and_then(|t| dump.adt_of(t));
            if owner.is_none_or(|a| a.path != ty) {
                continue;
            }
            // A field behind a lock or cell is written through a
            // shared borrow of it (`self.allocation.lock().take()`).
            let interior = matches!(
                dump.ty(*field_ty).map(|t| &t.kind),
                Some(TyKind::Adt { path, .. }) if has_unsafe_cell(dump, path, 4)
            );
            let assigned_value = matches!(ctx, PlaceContext::Assign)
                && i + 1 == place.projection.len()
                && !assigns_empty(body, location);
            if (write || interior) && !assigned_value {
                out.push(location);
            }
        }
    });
    out
}

/// Whether the statement at `location` assigns an enum variant without
/// fields (`None`), directly or through a local assigned one.
fn assigns_empty(body: &kmir::Body, location: kmir::visit::Location) -> bool {
    let Some(kmir::StatementKind::Assign { rvalue, .. }) = body
        .blocks
        .get(location.block as usize)
        .and_then(|b| b.statements.get(location.statement))
        .map(|s| &s.kind)
    else {
        return false;
    };
    empty_variant(body, rvalue, 0)
}

fn empty_variant(body: &kmir::Body, rvalue: &kmir::Rvalue, depth: u32) -> bool {
    match rvalue {
        kmir::Rvalue::Aggregate {
            kind: kmir::AggregateKind::Adt { .. },
            operands,
        } => operands.is_empty(),
        kmir::Rvalue::Use(kmir::Operand::Move(p) | kmir::Operand::Copy(p))
            if p.projection.is_empty() && depth < 4 =>
        {
            kmir::visit::sole_assignment(body, p.local)
                .is_some_and(|r| empty_variant(body, r, depth + 1))
        }
        _ => false,
    }
}

/// A store of a non-empty value over field `field` that `body` can reach
/// from one of its emptying `points` and after which it can return without
/// passing another emptying point: the function empties the field and then
/// fills it again on a path to its return.
fn store_after_emptying(
    dump: &kmir::CrateDump,
    body: &kmir::Body,
    ty: &str,
    field: u32,
    points: &[kmir::visit::Location],
) -> Option<kmir::Span> {
    let emptying_blocks: std::collections::HashSet<BlockId> =
        points.iter().map(|l| l.block).collect();
    let reach = |from: &[BlockId], avoid: &std::collections::HashSet<BlockId>| {
        let mut seen = std::collections::HashSet::new();
        let mut work: Vec<BlockId> = from.to_vec();
        while let Some(b) = work.pop() {
            if !seen.insert(b) {
                continue;
            }
            if avoid.contains(&b) {
                continue;
            }
            if let Some(block) = body.blocks.get(b as usize) {
                work.extend(block.terminator.kind.successors());
            }
        }
        seen
    };
    for store in store_sites(dump, body, ty, field) {
        let Some(TerminatorKind::Drop {
            target,
            place: dropped,
            ..
        }) = body.blocks.get(store as usize).map(|b| &b.terminator.kind)
        else {
            continue;
        };
        let stored = body.blocks.get(*target as usize).and_then(|t| {
            t.statements.iter().find_map(|s| match &s.kind {
                kmir::StatementKind::Assign { place, rvalue } if place == dropped => {
                    Some(&**rvalue)
                }
                _ => None,
            })
        });
        if stored.is_none_or(|r| empty_variant(body, r, 0)) {
            continue;
        }
        // From an emptying point: a later statement of its block, or a
        // successor.
        let starts: Vec<BlockId> = points
            .iter()
            .flat_map(|l| {
                let succ = body
                    .blocks
                    .get(l.block as usize)
                    .map(|b| b.terminator.kind.successors())
                    .unwrap_or_default();
                std::iter::once(l.block).filter(|b| *b == store).chain(succ)
            })
            .collect();
        if !reach(&starts, &std::collections::HashSet::new()).contains(&store) {
            continue;
        }
        let after = reach(&[*target], &emptying_blocks);
        let returns = after.iter().any(|b| {
            body.blocks
                .get(*b as usize)
                .is_some_and(|blk| matches!(blk.terminator.kind, TerminatorKind::Return))
        });
        if returns {
            return body.blocks.get(store as usize).map(|b| b.terminator.span);
        }
    }
    None
}

/// `core::mem::drop` and its re-exports: a call that drops its argument.
/// Whether `body` borrows field `field` of a `ty` (or takes its address).
fn borrows_field(dump: &kmir::CrateDump, body: &kmir::Body, ty: &str, field: u32) -> bool {
    let mut borrows = false;
    kmir::visit::for_each_assign(body, |_, rvalue, _| {
        if let kmir::Rvalue::Ref { place: r, .. } | kmir::Rvalue::AddressOf { place: r, .. } =
            rvalue
        {
            borrows |= is_field_of(dump, body, r, ty, field);
        }
    });
    borrows
}

const MEM_DROP: &[&str] = &["core::mem::drop", "std::mem::drop", "alloc::mem::drop"];

/// Every drop in the program of a value taken out of field `field` of a
/// `ty` (see [`taken_out`]): a `Drop` of it (or of a part of it), or a call
/// to `mem::drop` that moves it. Functions that return such a value
/// (`fn next(&mut self) -> Option<Arc<T>> { self.list.pop_front() }`) are
/// found first, to a fixed point, so that their callers' results count as
/// taken out too.
///
/// `borrowers` are the functions whose bodies borrow the field, in
/// function order ([`borrows_field`]).
fn kept_alive_drops(
    program: &Program,
    ty: &str,
    field: u32,
    borrowers: Vec<FnId>,
) -> Vec<(FnId, BlockId)> {
    use std::collections::HashSet;
    let body_of = |f: FnId| {
        let (krate, _) = program.body_of(f)?;
        Some((&krate.dump, program.body(f)?))
    };
    // Only bodies that borrow the field, and (transitively) the callers of
    // functions found to return what was taken out of it, can take
    // anything out: a worklist, re-examining a function's callers each
    // time it joins `returning`.
    let mut relevant: HashSet<FnId> = borrowers.iter().copied().collect();
    let mut work: Vec<FnId> = borrowers;
    let mut returning: HashSet<FnId> = HashSet::new();
    while let Some(f) = work.pop() {
        if returning.contains(&f) {
            continue;
        }
        let Some((dump, body)) = body_of(f) else {
            continue;
        };
        let returns_taken = |symbol: &str| {
            program
                .lookup(symbol)
                .is_some_and(|g| returning.contains(&g))
        };
        if taken_out(dump, &body, ty, field, &returns_taken).contains(&0) {
            returning.insert(f);
            for (caller, _) in program.callers(f) {
                relevant.insert(caller);
                work.push(caller);
            }
        }
    }
    let returns_taken = |symbol: &str| {
        program
            .lookup(symbol)
            .is_some_and(|g| returning.contains(&g))
    };
    let is_drop = |symbol: &str| {
        program
            .lookup(symbol)
            .is_some_and(|f| MEM_DROP.contains(&program.function(f).item_path.as_str()))
    };
    let mut relevant: Vec<FnId> = relevant.into_iter().collect();
    relevant.sort_unstable();
    let mut out = Vec::new();
    for f in relevant {
        let Some((dump, body)) = body_of(f) else {
            continue;
        };
        let taken = taken_out(dump, &body, ty, field, &returns_taken);
        if taken.is_empty() {
            continue;
        }
        for (i, b) in body.blocks.iter().enumerate() {
            let hit = match &b.terminator.kind {
                TerminatorKind::Drop { place, .. } => {
                    taken.contains(&place.local) && !place.projection.contains(&Projection::Deref)
                }
                TerminatorKind::Call {
                    callee: kmir::Callee::Direct { symbol },
                    args,
                    ..
                } => {
                    matches!(args.as_slice(), [kmir::Operand::Move(p)]
                        if p.projection.is_empty() && taken.contains(&p.local))
                        && is_drop(symbol)
                }
                _ => false,
            };
            if hit {
                out.push((f, i as BlockId));
            }
        }
    }
    out
}

/// The locals of `body` (the return place included) that hold a value
/// taken out of field `field` of a `ty`.
///
/// A value is taken out of the field when it is the result of a call one of
/// whose arguments is a borrow of the field (`&mut x.f`, `&x.f`, also
/// through a guard: `&mut (*guard.deref_mut()).f`), or of a function known
/// to return such a value (`returns_taken`, by symbol), and whose
/// arguments otherwise carry no owned value (references, raw pointers,
/// numbers, constants), so what the call returns can only come from the
/// field (or from what those references reach, which the caller's borrows
/// keep alive). Locals moved or copied out of such a value
/// (`t = move (r as Some).0`) are taken out too. A local counts only if
/// every write to it is one of those, and it is never borrowed mutably or
/// by address (`mem::swap` could put anything into it).
fn taken_out(
    dump: &kmir::CrateDump,
    body: &kmir::Body,
    ty: &str,
    field: u32,
    returns_taken: &dyn Fn(&str) -> bool,
) -> std::collections::HashSet<kmir::LocalId> {
    use std::collections::HashSet;
    let n = body.locals.len();
    let field_borrow = |l: kmir::LocalId| field_borrow(dump, body, l, ty, field, 0);
    let no_owned = |o: &kmir::Operand| match o {
        kmir::Operand::Constant(_) | kmir::Operand::RuntimeChecks(_) => true,
        kmir::Operand::Copy(p) | kmir::Operand::Move(p) => dump
            .place_ty(body, p)
            .and_then(|t| dump.ty(t))
            .is_some_and(|t| {
                matches!(
                    t.kind,
                    TyKind::Ref { .. }
                        | TyKind::RawPtr { .. }
                        | TyKind::Bool
                        | TyKind::Char
                        | TyKind::Int(_)
                        | TyKind::Uint(_)
                        | TyKind::Float(_)
                )
            }),
    };
    // Each local's writes, and which of them take out of the field: the
    // call itself, or a move from a local that is taken out.
    let mut sources: Vec<Vec<Option<kmir::LocalId>>> = vec![Vec::new(); n];
    let mut roots: HashSet<kmir::LocalId> = HashSet::new();
    let mut unfit: HashSet<kmir::LocalId> = HashSet::new();
    for b in &body.blocks {
        for s in &b.statements {
            let kmir::StatementKind::Assign { place, rvalue } = &s.kind else {
                continue;
            };
            if !place.projection.is_empty() {
                unfit.insert(place.local);
                continue;
            }
            let from = match &**rvalue {
                kmir::Rvalue::Use(kmir::Operand::Move(p) | kmir::Operand::Copy(p))
                    if !p.projection.contains(&Projection::Deref) =>
                {
                    Some(p.local)
                }
                _ => None,
            };
            if let Some(v) = sources.get_mut(place.local as usize) {
                v.push(from);
            }
        }
        if let TerminatorKind::Call {
            callee,
            args,
            destination,
            ..
        } = &b.terminator.kind
        {
            if !destination.projection.is_empty() {
                unfit.insert(destination.local);
                continue;
            }
            let borrows = args.iter().any(|a| {
                matches!(a, kmir::Operand::Copy(p) | kmir::Operand::Move(p)
                    if p.projection.is_empty() && field_borrow(p.local))
            });
            let helper = matches!(callee, kmir::Callee::Direct { symbol } if returns_taken(symbol));
            if (borrows || helper) && args.iter().all(no_owned) {
                roots.insert(destination.local);
            } else if let Some(v) = sources.get_mut(destination.local as usize) {
                v.push(None);
            }
        }
    }
    for_each_place(body, |place, ctx, _| {
        if matches!(
            ctx,
            PlaceContext::Borrow { mutable: true }
                | PlaceContext::AddressOf { mutable: true }
                | PlaceContext::SetDiscriminant
        ) {
            unfit.insert(place.local);
        }
    });
    // Taken out: a root, or every write moves from a taken-out local. The
    // greatest such set: start from every candidate, drop until stable.
    // Arguments hold what the caller passed.
    let mut taken: HashSet<kmir::LocalId> = (0..n as kmir::LocalId)
        .filter(|l| {
            !unfit.contains(l)
                && (roots.contains(l) || !sources[*l as usize].is_empty())
                && (*l == 0 || *l > body.arg_count)
        })
        .collect();
    loop {
        let before = taken.len();
        let now = taken.clone();
        taken.retain(|l| {
            sources[*l as usize]
                .iter()
                .all(|s| s.is_some_and(|s| now.contains(&s)))
                && (roots.contains(l) || sources[*l as usize].iter().any(Option::is_some))
        });
        if taken.len() == before {
            break;
        }
    }
    taken
}

/// Whether `local` holds a borrow of field `field` of a `ty`: `&mut x.f`,
/// or a reborrow, copy or cast of one (`&mut *b`, as `mem::take(&mut x.f)`
/// is compiled).
fn field_borrow(
    dump: &kmir::CrateDump,
    body: &kmir::Body,
    local: kmir::LocalId,
    ty: &str,
    field: u32,
    depth: u32,
) -> bool {
    if depth > 8 {
        return false;
    }
    match kmir::visit::sole_assignment(body, local) {
        Some(kmir::Rvalue::Ref { place: r, .. } | kmir::Rvalue::AddressOf { place: r, .. }) => {
            is_field_of(dump, body, r, ty, field)
                || (*r.projection == [Projection::Deref]
                    && field_borrow(dump, body, r.local, ty, field, depth + 1))
        }
        Some(
            kmir::Rvalue::Use(kmir::Operand::Copy(p) | kmir::Operand::Move(p))
            | kmir::Rvalue::Cast {
                operand: kmir::Operand::Copy(p) | kmir::Operand::Move(p),
                ..
            },
        ) if p.projection.is_empty() => field_borrow(dump, body, p.local, ty, field, depth + 1),
        _ => false,
    }
}

/// Whether `place` is field `field` of a `ty` (`x.f`, `(*p).f`).
fn is_field_of(
    dump: &kmir::CrateDump,
    body: &kmir::Body,
    place: &kmir::Place,
    ty: &str,
    field: u32,
) -> bool {
    match place.projection.split_last() {
        Some((Projection::Field { index, .. }, base)) if *index == field => {
            let base = kmir::Place {
                local: place.local,
                projection: base.into(),
            };
            dump.place_ty(body, &base)
                .and_then(|t| dump.adt_of(t))
                .is_some_and(|a| a.path == ty)
        }
        _ => false,
    }
}

/// Whether statement `s` reads or writes any place of `local`.
fn mentions(s: &kmir::Statement, local: kmir::LocalId) -> bool {
    struct Mentions(kmir::LocalId, bool);
    impl kmir::visit::Visitor for Mentions {
        fn visit_place(&mut self, place: &kmir::Place, _: PlaceContext, _: kmir::visit::Location) {
            self.1 |= place.local == self.0;
        }
    }
    let mut v = Mentions(local, false);
    kmir::visit::walk_statement(
        &mut v,
        s,
        kmir::visit::Location {
            block: 0,
            statement: 0,
        },
    );
    v.1
}
