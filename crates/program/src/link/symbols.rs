//! Symbol resolution: one function per symbol, from the best copy of its
//! instance among the dumps, then one per external symbol no dump defines.

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use kmir::Name;

use crate::{FnId, FnKind, Function, LinkedCrate};

use super::names::Canonical;

/// The functions with an instance in some dump, in symbol order, each
/// named canonically. Naming is per function, in parallel.
pub(super) fn defined_functions(
    crates: &[LinkedCrate],
    canonical: &Canonical<'_>,
    instances_total: usize,
) -> Vec<Function> {
    best_copies(crates, instances_total)
        .par_iter()
        .map(|&(_, ci, ii)| {
            let inst = &crates[ci as usize].dump.instances[ii as usize];
            let kind = if crates[ci as usize].has_body(ii) {
                FnKind::Body {
                    krate: ci,
                    instance: ii,
                }
            } else {
                FnKind::Shim
            };
            let dump_crate = &crates[ci as usize].dump.header.crate_name;
            Function {
                symbol: inst.symbol.clone(),
                name: canonical
                    .name(&inst.name, &inst.item_path, dump_crate)
                    .into(),
                item_path: inst.item_path.clone(),
                kind,
            }
        })
        .collect()
}

/// The best copy of every instance, by symbol, as (symbol, crate index,
/// instance index): every copy sorted by symbol, crate and index (in
/// parallel), then the best of each symbol's run, met in crate order
/// (strictly better only: on a tie the earlier crate stays).
fn best_copies(crates: &[LinkedCrate], instances_total: usize) -> Vec<(&str, u32, u32)> {
    let mut copies: Vec<(&str, u32, u32)> = Vec::with_capacity(instances_total);
    for (ci, c) in crates.iter().enumerate() {
        for (ii, inst) in c.dump.instances.iter().enumerate() {
            copies.push((inst.symbol.as_str(), ci as u32, ii as u32));
        }
    }
    copies.par_sort_unstable();
    let mut best: Vec<(&str, u32, u32)> = Vec::new();
    for copy in copies {
        match best.last_mut() {
            Some(current) if current.0 == copy.0 => {
                if rank(&crates[copy.1 as usize], copy.2)
                    > rank(&crates[current.1 as usize], current.2)
                {
                    *current = copy;
                }
            }
            _ => best.push(copy),
        }
    }
    best
}

/// Rank of a copy of an instance in the dump of crate `krate`: higher is
/// better. The body's quality first; then the copy of the crate that
/// defines the item (the first segment of its item path), which names it
/// canonically where another crate's copy may not (a doctest crate's copy
/// of `kernel::f` is named `doctests_…::rust_doctest_…::kernel::f`).
/// Among equal ranks the crate that sorts first wins (see [`super::link`]).
fn rank(c: &LinkedCrate, ii: u32) -> (bool, bool, bool, bool) {
    let inst = &c.dump.instances[ii as usize];
    let krate = c.dump.header.crate_name.as_str();
    let facts = c.body_facts(ii);
    let elaborated = facts.is_some_and(|b| b.drop_elaborated);
    let defining = inst.item_path.split("::").next() == Some(krate);
    (facts.is_some(), elaborated, inst.codegenned, defining)
}

/// The symbol table of `functions`.
pub(super) fn by_symbol(functions: &[Function]) -> HashMap<Name, FnId> {
    let mut by_symbol = HashMap::with_capacity(functions.len());
    for (i, f) in functions.iter().enumerate() {
        by_symbol.insert(f.symbol.clone(), FnId(i as u32));
    }
    by_symbol
}

/// Adds the externals: symbols the dumps reference that no dump has an
/// instance of.
pub(super) fn add_externals(
    crates: &[LinkedCrate],
    canonical: &Canonical<'_>,
    functions: &mut Vec<Function>,
    by_symbol: &mut HashMap<Name, FnId>,
) {
    let mut externals: BTreeMap<&str, (Name, &kmir::External)> = BTreeMap::new();
    for c in crates {
        for e in &c.dump.externals {
            if by_symbol.contains_key(&e.symbol) {
                continue;
            }
            // Many crates declare the same C function (every doctest crate
            // re-declares the kernel's bindings): name it by the shortest
            // canonical path, `kernel::bindings::…` rather than a doctest's
            // copy, then by the text so that no order decides.
            let name: Name = canonical
                .name(&e.name, &e.item_path, &c.dump.header.crate_name)
                .into();
            externals
                .entry(e.symbol.as_str())
                .and_modify(|cur| {
                    if (name.len(), &name) < (cur.0.len(), &cur.0) {
                        *cur = (name.clone(), e);
                    }
                })
                .or_insert((name, e));
        }
    }
    for (_, (name, e)) in externals {
        by_symbol.insert(e.symbol.clone(), FnId(functions.len() as u32));
        functions.push(Function {
            symbol: e.symbol.clone(),
            name,
            item_path: e.item_path.clone(),
            kind: match &e.kind {
                kmir::ExternalKind::Foreign => FnKind::Foreign,
                kmir::ExternalKind::Upstream { krate } => FnKind::Upstream {
                    krate: krate.clone(),
                },
                kmir::ExternalKind::Shim => FnKind::Shim,
            },
        });
    }
}
