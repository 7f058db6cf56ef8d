//! Call-site gathering: each body's calls and drops, read once (through
//! the per-dump memo) and resolved to the functions they reach; calls
//! through fn pointers once every address taken is known.

use std::collections::{BTreeSet, HashMap};

use rayon::prelude::*;

use kmir::{Callee, CastKind, ConstValue, Name, Rvalue, StatementKind, TerminatorKind};

use crate::{Edge, EdgeKind, FnId, FnKind, Function, IndirectKey, LinkStats, LinkedCrate};

/// What a virtual call or the drop of a `dyn Trait` can reach, from the
/// vtables the program builds.
pub(super) struct Vtables<'a> {
    /// The methods in each slot of a trait method's vtables.
    slots: HashMap<(&'a str, u32), BTreeSet<FnId>>,
    /// What dropping a `dyn Trait` can run: the drop glue in slot 0 of
    /// every `Trait` vtable (empty for types without glue).
    dyn_glues: HashMap<&'a str, BTreeSet<FnId>>,
}

impl<'a> Vtables<'a> {
    pub(super) fn new(crates: &'a [LinkedCrate], by_symbol: &HashMap<Name, FnId>) -> Self {
        let mut slots: HashMap<(&str, u32), BTreeSet<FnId>> = HashMap::new();
        let mut dyn_glues: HashMap<&str, BTreeSet<FnId>> = HashMap::new();
        for c in crates {
            for vt in &c.dump.vtables {
                if let Some(trait_path) = &vt.trait_path {
                    let glues = dyn_glues.entry(trait_path.as_str()).or_default();
                    for entry in &vt.entries {
                        if let kmir::VtableEntry::DropInPlace { glue: Some(glue) } = entry
                            && let Some(&id) = by_symbol.get(glue)
                        {
                            glues.insert(id);
                        }
                    }
                }
                for (slot, entry) in vt.entries.iter().enumerate() {
                    if let kmir::VtableEntry::Method { method, symbol } = entry
                        && let Some(&id) = by_symbol.get(symbol)
                    {
                        slots
                            .entry((method.as_str(), slot as u32))
                            .or_default()
                            .insert(id);
                    }
                }
            }
        }
        Vtables { slots, dyn_glues }
    }
}

/// The call sites of every function with a body, in function order, and
/// the functions those bodies take the address of. One pass over the
/// bodies, in parallel: what a body says is by symbol, whatever the other
/// dumps hold (kept per dump by the per-dump cache, so an unchanged dump's
/// bodies are not decoded; each body is decoded once for both); the
/// symbols are resolved here, on every run. Calls through fn pointers are
/// left as [`Target::Indirect`] for [`resolve_indirect`].
pub(super) fn gather(
    crates: &[LinkedCrate],
    functions: &[Function],
    by_symbol: &HashMap<Name, FnId>,
    vtables: &Vtables<'_>,
) -> (Vec<FnId>, Vec<(FnId, FnSites)>) {
    let with_body: Vec<FnId> = functions
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f.kind, FnKind::Body { .. }))
        .map(|(i, _)| FnId(i as u32))
        .collect();
    let walked = crate::memo::per_body(crates, functions, BODY_SITES, &with_body, |_, _, body| {
        body_sites(body)
    });
    let resolver = Resolver {
        functions,
        by_symbol,
        vtables,
    };
    let per_body: Vec<(Vec<FnId>, (FnId, FnSites))> = with_body
        .par_iter()
        .zip(walked)
        .filter_map(|(&caller, walked)| {
            let walked = walked?;
            let f = &functions[caller.index()];
            let FnKind::Body { krate, instance } = f.kind else {
                return None;
            };
            let dump = &crates[krate as usize].dump;
            let inst = &dump.instances[instance as usize];
            let taken: Vec<FnId> = walked
                .taken
                .iter()
                .filter_map(|s| by_symbol.get(s).copied())
                .collect();
            let mut out = FnSites::default();
            for site in walked.sites {
                resolver.site(&mut out, site, f, dump, inst);
            }
            Some((taken, (caller, out)))
        })
        .collect();
    let mut taken = Vec::new();
    let mut sites: Vec<(FnId, FnSites)> = Vec::with_capacity(per_body.len());
    for (body_taken, body_sites) in per_body {
        taken.extend(body_taken);
        sites.push(body_sites);
    }
    (taken, sites)
}

/// Resolves one body's sites, by symbol, to functions of the program.
struct Resolver<'a> {
    functions: &'a [Function],
    by_symbol: &'a HashMap<Name, FnId>,
    vtables: &'a Vtables<'a>,
}

impl Resolver<'_> {
    /// Adds `site` of `caller` (its instance `inst` in `dump`) to `out`:
    /// its edges, its counts, a direct call's arity.
    fn site(
        &self,
        out: &mut FnSites,
        site: Site,
        caller: &Function,
        dump: &kmir::CrateDump,
        inst: &kmir::Instance,
    ) {
        let edge = |kind| Edge {
            kind,
            block: site.block,
            span: site.span,
        };
        match site.kind {
            SiteKind::Drop { glue } => {
                // The drop glue of `dyn Trait` drops `*self` through the
                // vtable: it reaches the glue of every type the program
                // makes a `Trait` object of.
                if glue == inst.symbol
                    && let Some(principal) = dyn_principal(dump, inst)
                    && let Some(glues) = self.vtables.dyn_glues.get(principal)
                {
                    for &t in glues {
                        out.edges.push((Target::Fn(t), edge(EdgeKind::Drop)));
                    }
                    return;
                }
                if let Some(&t) = self.by_symbol.get(&glue) {
                    out.edges.push((Target::Fn(t), edge(EdgeKind::Drop)));
                }
            }
            SiteKind::Direct { symbol, args } => {
                out.stats.direct_sites += 1;
                match self.by_symbol.get(&symbol) {
                    Some(&t) => {
                        out.arities.push((t, args));
                        if matches!(self.functions[t.index()].kind, FnKind::Body { .. }) {
                            out.stats.direct_to_body += 1;
                        } else {
                            out.stats.direct_to_external += 1;
                        }
                        out.edges.push((Target::Fn(t), edge(EdgeKind::Call)));
                    }
                    None => out.stats.direct_unresolved.push((
                        caller.name.to_string(),
                        format!("symbol `{symbol}` is in no dump"),
                    )),
                }
            }
            SiteKind::Unresolved { path } => out.stats.direct_unresolved.push((
                caller.name.to_string(),
                format!("the compiler could not resolve `{path}`"),
            )),
            SiteKind::Intrinsic => out.stats.intrinsic_sites += 1,
            SiteKind::Virtual { trait_method, slot } => {
                out.stats.virtual_sites += 1;
                let targets = self.vtables.slots.get(&(trait_method.as_str(), slot));
                match targets {
                    Some(ts) if !ts.is_empty() => {
                        if ts.len() > 1 {
                            out.stats.ambiguous_indirect += 1;
                        }
                        for &t in ts {
                            out.edges.push((Target::Fn(t), edge(EdgeKind::Virtual)));
                        }
                    }
                    _ => {
                        out.stats.unresolved_indirect += 1;
                        let key = IndirectKey::Virtual { trait_method, slot };
                        out.edges
                            .push((Target::Unknown(key), edge(EdgeKind::Virtual)));
                    }
                }
            }
            SiteKind::Indirect { sig } => {
                out.stats.indirect_sites += 1;
                // Resolved once every address taken is known.
                out.edges
                    .push((Target::Indirect(sig), edge(EdgeKind::Indirect)));
            }
        }
    }
}

/// The functions whose address is taken, by signature: the targets of a
/// call through a fn pointer of that signature.
pub(super) fn by_signature<'a>(
    crates: &'a [LinkedCrate],
    functions: &[Function],
    address_taken: &BTreeSet<FnId>,
) -> HashMap<&'a str, Vec<FnId>> {
    let mut by_sig: HashMap<&str, Vec<FnId>> = HashMap::new();
    for &id in address_taken {
        if let FnKind::Body { krate, instance } = functions[id.index()].kind
            && let Some(sig) = &crates[krate as usize].dump.instances[instance as usize].fn_sig
        {
            by_sig.entry(sig.as_str()).or_default().push(id);
        }
    }
    by_sig
}

/// The targets of indirect calls, now that every address taken is
/// known, in place (so in the order of the sites).
pub(super) fn resolve_indirect(
    sites: Vec<(FnId, FnSites)>,
    by_sig: &HashMap<&str, Vec<FnId>>,
) -> Vec<(FnId, FnSites)> {
    sites
        .into_par_iter()
        .map(|(caller, mut out)| {
            let deferred = std::mem::take(&mut out.edges);
            for (target, edge) in deferred {
                let Target::Indirect(sig) = target else {
                    out.edges.push((target, edge));
                    continue;
                };
                let targets = by_sig.get(sig.as_str()).map(Vec::as_slice).unwrap_or(&[]);
                for &t in targets {
                    out.edges.push((Target::Fn(t), edge));
                }
                // A pointer with a C ABI may come from C; one nothing
                // in the program matches certainly does.
                let from_outside = sig.starts_with("extern ") || targets.is_empty();
                if targets.is_empty() {
                    out.stats.unresolved_indirect += 1;
                } else if targets.len() + usize::from(from_outside) > 1 {
                    out.stats.ambiguous_indirect += 1;
                }
                if from_outside {
                    out.edges
                        .push((Target::Unknown(IndirectKey::FnPtr { sig }), edge));
                }
            }
            (caller, out)
        })
        .collect()
}

/// The phase label of the link's per-body results ([`BodySites`]).
const BODY_SITES: &str = "link: body sites, v1";

/// What the link reads of one body, by symbol: the functions it turns
/// into pointers and its call and drop sites in block order. A function of
/// the body alone (kept per dump by the per-dump cache).
#[derive(bincode::Encode, bincode::Decode)]
struct BodySites {
    taken: Vec<Name>,
    sites: Vec<Site>,
}

#[derive(bincode::Encode, bincode::Decode)]
struct Site {
    block: u32,
    /// The terminator's span.
    span: kmir::Span,
    kind: SiteKind,
}

#[derive(bincode::Encode, bincode::Decode)]
enum SiteKind {
    /// A drop of a type with drop glue.
    Drop {
        glue: Name,
    },
    /// A call of a known instance, with its number of arguments.
    Direct {
        symbol: Name,
        args: u32,
    },
    Unresolved {
        path: Name,
    },
    Intrinsic,
    Virtual {
        trait_method: Name,
        slot: u32,
    },
    Indirect {
        sig: Name,
    },
}

/// A body's [`BodySites`].
fn body_sites(body: &kmir::Body) -> BodySites {
    let mut taken = Vec::new();
    collect_address_taken(body, &mut taken);
    let mut sites = Vec::new();
    for (bi, block) in body.blocks.iter().enumerate() {
        let kind = match &block.terminator.kind {
            TerminatorKind::Drop {
                glue: Some(glue), ..
            } => SiteKind::Drop { glue: glue.clone() },
            TerminatorKind::Call { callee, args, .. } => match callee {
                Callee::Direct { symbol } => SiteKind::Direct {
                    symbol: symbol.clone(),
                    args: args.len() as u32,
                },
                Callee::Unresolved { path } => SiteKind::Unresolved { path: path.clone() },
                Callee::Intrinsic { .. } => SiteKind::Intrinsic,
                Callee::Virtual {
                    trait_method, slot, ..
                } => SiteKind::Virtual {
                    trait_method: trait_method.clone(),
                    slot: *slot,
                },
                Callee::Indirect { sig, .. } => SiteKind::Indirect { sig: sig.clone() },
            },
            _ => continue,
        };
        sites.push(Site {
            block: bi as u32,
            span: block.terminator.span,
            kind,
        });
    }
    BodySites { taken, sites }
}

/// The target of a call site before the link names the `Unknown`
/// functions standing for what no function of the program matches.
pub(super) enum Target {
    Fn(FnId),
    Unknown(IndirectKey),
    /// A call through a fn pointer of this signature, not resolved yet.
    Indirect(Name),
}

/// One body's call sites: their targets, and their counts.
#[derive(Default)]
pub(super) struct FnSites {
    pub(super) edges: Vec<(Target, Edge)>,
    pub(super) stats: LinkStats,
    /// Each direct call's callee with its number of arguments.
    pub(super) arities: Vec<(FnId, u32)>,
}

impl LinkStats {
    /// Adds one body's call-site counts (and moves its unresolved sites).
    pub(super) fn add_sites(&mut self, other: &mut LinkStats) {
        self.direct_sites += other.direct_sites;
        self.direct_to_body += other.direct_to_body;
        self.direct_to_external += other.direct_to_external;
        self.direct_unresolved.append(&mut other.direct_unresolved);
        self.intrinsic_sites += other.intrinsic_sites;
        self.virtual_sites += other.virtual_sites;
        self.indirect_sites += other.indirect_sites;
        self.unresolved_indirect += other.unresolved_indirect;
        self.ambiguous_indirect += other.ambiguous_indirect;
    }
}

/// Functions a body turns into pointers: reified fn items and closures,
/// and code pointers inside constants and inline asm operands, by symbol.
fn collect_address_taken(body: &kmir::Body, out: &mut Vec<Name>) {
    for (c, _) in body.constants() {
        if let ConstValue::Memory(m) = &c.value {
            out.extend(m.fn_ptrs.iter().cloned());
        }
    }
    for block in &body.blocks {
        for s in &block.statements {
            if let StatementKind::Assign { rvalue, .. } = &s.kind
                && let Rvalue::Cast {
                    kind:
                        CastKind::ReifyFnPointer { symbol } | CastKind::ClosureFnPointer { symbol },
                    ..
                } = &**rvalue
            {
                out.push(symbol.clone());
            }
        }
        if let TerminatorKind::InlineAsm { fn_ptrs, .. } = &block.terminator.kind {
            out.extend(fn_ptrs.iter().cloned());
        }
    }
}

/// The principal trait of the `dyn` type a drop glue instance drops.
fn dyn_principal<'a>(dump: &'a kmir::CrateDump, inst: &kmir::Instance) -> Option<&'a str> {
    let kmir::InstanceKind::DropGlue { ty } = inst.kind else {
        return None;
    };
    match &dump.ty(ty)?.kind {
        kmir::TyKind::Dynamic { traits } => traits.first().map(Name::as_str),
        _ => None,
    }
}
