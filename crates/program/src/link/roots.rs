//! The roots, the functions C can call: those a static points to (as a
//! fn pointer or through a vtable) and the exported ones; and the
//! addresses the statics take.

use std::collections::{BTreeSet, HashMap};

use kmir::Name;

use crate::{FnId, FnKind, Function, LinkedCrate, RootReason};

/// The functions the statics point to, as roots in crate order, and the
/// functions whose address they take (through a fn pointer; a vtable's
/// methods are reached by slot instead).
pub(super) fn in_statics(
    crates: &[LinkedCrate],
    by_symbol: &HashMap<Name, FnId>,
) -> (Vec<(FnId, RootReason)>, BTreeSet<FnId>) {
    let mut address_taken: BTreeSet<FnId> = BTreeSet::new();
    let mut roots: Vec<(FnId, RootReason)> = Vec::new();
    for c in crates {
        for s in &c.dump.statics {
            for f in &s.fn_ptrs {
                if let Some(&id) = by_symbol.get(f) {
                    address_taken.insert(id);
                    roots.push((
                        id,
                        RootReason::InStatic {
                            path: s.path.clone(),
                        },
                    ));
                }
            }
            for &v in &s.vtables {
                for entry in &c.dump.vtables[v as usize].entries {
                    if let kmir::VtableEntry::Method { symbol, .. } = entry
                        && let Some(&id) = by_symbol.get(symbol)
                    {
                        roots.push((
                            id,
                            RootReason::VtableInStatic {
                                path: s.path.clone(),
                            },
                        ));
                    }
                }
            }
        }
    }
    (roots, address_taken)
}

/// Adds the exported functions to `roots`, in function order.
pub(super) fn add_exported(
    crates: &[LinkedCrate],
    functions: &[Function],
    roots: &mut Vec<(FnId, RootReason)>,
) {
    for (i, f) in functions.iter().enumerate() {
        if let FnKind::Body { krate, instance } = f.kind
            && crates[krate as usize].dump.instances[instance as usize].exported
        {
            roots.push((FnId(i as u32), RootReason::Exported));
        }
    }
}
