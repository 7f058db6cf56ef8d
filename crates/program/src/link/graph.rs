//! The call graph: a node per function, an edge per resolved site, and
//! an `Unknown` function standing for what an unresolved indirect call
//! reaches (one per signature or trait method slot).

use std::collections::{BTreeMap, HashMap};

use kmir::Name;

use crate::{CallGraph, Edge, FnId, FnKind, Function, IndirectKey, LinkStats};

use super::sites::{FnSites, Target};

/// The call graph of `functions` with the edges of `sites`, and every
/// direct call's callee with its number of arguments. The `Unknown`
/// functions the edges need are added to `functions` and `by_symbol`;
/// each site's counts are added to `stats`.
pub(super) fn build(
    functions: &mut Vec<Function>,
    by_symbol: &mut HashMap<Name, FnId>,
    sites: Vec<(FnId, FnSites)>,
    stats: &mut LinkStats,
) -> (CallGraph, Vec<(FnId, u32)>) {
    let mut graph = CallGraph::with_capacity(functions.len(), functions.len() * 4);
    for i in 0..functions.len() {
        graph.add_node(FnId(i as u32));
    }
    let mut unknown: BTreeMap<IndirectKey, FnId> = BTreeMap::new();
    let mut new_unknowns: Vec<Function> = Vec::new();
    let mut unknown_id = |key: IndirectKey, base: usize, new: &mut Vec<Function>| -> FnId {
        *unknown.entry(key.clone()).or_insert_with(|| {
            let id = FnId((base + new.len()) as u32);
            new.push(unknown_function(key));
            id
        })
    };
    let base = functions.len();
    let mut pending_edges: Vec<(FnId, FnId, Edge)> = Vec::new();
    let mut call_arities = Vec::new();
    for (caller, mut sites) in sites {
        stats.add_sites(&mut sites.stats);
        call_arities.append(&mut sites.arities);
        for (target, edge) in sites.edges {
            let t = match target {
                Target::Fn(t) => t,
                Target::Unknown(key) => unknown_id(key, base, &mut new_unknowns),
                // Replaced by its targets (`sites::resolve_indirect`): none is
                // left here.
                Target::Indirect(_) => continue,
            };
            pending_edges.push((caller, t, edge));
        }
    }
    for u in new_unknowns {
        graph.add_node(FnId(functions.len() as u32));
        by_symbol.insert(u.symbol.clone(), FnId(functions.len() as u32));
        functions.push(u);
    }
    for (from, to, edge) in pending_edges {
        stats.edges_by_kind[edge.kind.index()] += 1;
        graph.add_edge(
            petgraph::graph::NodeIndex::new(from.index()),
            petgraph::graph::NodeIndex::new(to.index()),
            edge,
        );
    }
    (graph, call_arities)
}

/// The function standing for whatever an unresolved indirect call of
/// `key` reaches.
fn unknown_function(key: IndirectKey) -> Function {
    let (symbol, name) = match &key {
        IndirectKey::FnPtr { sig } => (
            format!("<unknown {sig}>"),
            format!("<any function of type `{sig}`>"),
        ),
        IndirectKey::Virtual { trait_method, slot } => (
            format!("<unknown {trait_method}#{slot}>"),
            format!("<any implementation of `{trait_method}`>"),
        ),
    };
    let item_path = match &key {
        IndirectKey::Virtual { trait_method, .. } => trait_method.to_string(),
        IndirectKey::FnPtr { .. } => String::new(),
    };
    Function {
        symbol: symbol.into(),
        name: name.into(),
        item_path: item_path.into(),
        kind: FnKind::Unknown(key),
    }
}
