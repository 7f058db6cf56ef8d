//! The whole program: every crate's dump linked into one symbol table and
//! one call graph, with indirect calls resolved to the targets the program
//! makes possible (the solve's schedule over its strongly connected
//! components is `solver::Schedule`).
//!
//! Invariants (relied upon by the analyses):
//! * `FnId(i)` is node `i` of `Program::graph`; every function, body or not,
//!   has exactly one node.
//! * A symbol that several crates codegen has one function whose body is
//!   the best copy (drop-elaborated over optimized, codegenned over
//!   included-for-inlining, then the first crate in path order); edges come
//!   from that body only.
//! * Every call site with a callee gets at least one edge: an indirect call
//!   nothing in the program can satisfy goes to an `Unknown` function that
//!   stands for "code outside the program".

mod link;
pub mod wire;

use std::collections::HashMap;
use std::path::PathBuf;

pub use kmir::Name;
pub use link::{LinkProblem, link};

/// Index of a function; also its node index in [`Program::graph`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FnId(pub u32);

impl FnId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index into [`Program::crates`].
pub type CrateIdx = u32;

/// A loaded dump and where it came from.
#[derive(Debug)]
pub struct LinkedCrate {
    pub path: PathBuf,
    pub dump: kmir::CrateDump,
    /// When the file was last written, to prefer the newer of two
    /// conflicting dumps of one crate.
    pub modified: Option<std::time::SystemTime>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub symbol: Name,
    /// Human name with generic arguments.
    pub name: Name,
    /// Crate-qualified item path, the key for annotations.
    pub item_path: Name,
    pub kind: FnKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FnKind {
    /// Instance `instance` of crate `krate` holds the body.
    Body { krate: CrateIdx, instance: u32 },
    /// A C function (declared in an `extern` block), by link name.
    Foreign,
    /// A Rust function of a crate that was not extracted.
    Upstream { krate: Name },
    /// A compiler shim without a body in any dump.
    Shim,
    /// Whatever an indirect call may reach outside the program.
    Unknown(IndirectKey),
}

/// What an indirect call goes through.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndirectKey {
    /// A fn pointer of this signature key (see `kmir::Instance::fn_sig`).
    FnPtr { sig: Name },
    /// Slot `slot` of a `dyn` vtable, holding trait method `trait_method`.
    Virtual { trait_method: Name, slot: u32 },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, bincode::Encode, bincode::Decode)]
pub enum EdgeKind {
    /// A statically resolved call.
    Call,
    /// A drop terminator: a call to the drop glue of the dropped type.
    Drop,
    /// One possible target of a `dyn Trait` method call.
    Virtual,
    /// One possible target of a call through a fn pointer.
    Indirect,
}

/// A call or drop site: block `block` of the caller's body.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    pub kind: EdgeKind,
    pub block: u32,
    /// In the caller's crate's file table.
    pub span: kmir::Span,
}

/// One step of a call trace: `caller` reaches `callee` at `edge`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceStep {
    pub caller: FnId,
    pub callee: FnId,
    pub edge: Edge,
}

/// Why C (or anything outside the program) may call a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootReason {
    /// `#[no_mangle]`/`#[export_name]`.
    Exported,
    /// Its address is stored in static `path` (an ops table).
    InStatic { path: Name },
    /// It is a method of a vtable stored in static `path`.
    VtableInStatic { path: Name },
}

/// Counts for `kanalyze graph` and the performance record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub crates: usize,
    /// Instances in all dumps, before deduplication.
    pub instances_total: usize,
    /// Distinct instances with a body.
    pub bodies: usize,
    pub edges_by_kind: [usize; 4],
    pub direct_sites: usize,
    pub direct_to_body: usize,
    pub direct_to_external: usize,
    /// Direct call sites whose callee could not be named, by reason.
    pub direct_unresolved: Vec<(String, String)>,
    pub intrinsic_sites: usize,
    pub virtual_sites: usize,
    pub indirect_sites: usize,
    /// Indirect or virtual sites with no target in the program.
    pub unresolved_indirect: usize,
    /// Indirect or virtual sites with more than one target.
    pub ambiguous_indirect: usize,
}

impl EdgeKind {
    pub const ALL: [EdgeKind; 4] = [
        EdgeKind::Call,
        EdgeKind::Drop,
        EdgeKind::Virtual,
        EdgeKind::Indirect,
    ];

    pub fn index(self) -> usize {
        match self {
            EdgeKind::Call => 0,
            EdgeKind::Drop => 1,
            EdgeKind::Virtual => 2,
            EdgeKind::Indirect => 3,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Call => "call",
            EdgeKind::Drop => "drop",
            EdgeKind::Virtual => "virtual",
            EdgeKind::Indirect => "indirect",
        }
    }
}

/// Records that `path` takes `n` arguments; a second, different count
/// makes it unknown.
fn add_arity<'a>(seen: &mut HashMap<&'a str, Option<u32>>, path: &'a str, n: u32) {
    let slot = seen.entry(path).or_insert(Some(n));
    if *slot != Some(n) {
        *slot = None;
    }
}

pub type CallGraph = petgraph::graph::DiGraph<FnId, Edge, u32>;

#[derive(Debug)]
pub struct Program {
    pub crates: Vec<LinkedCrate>,
    pub functions: Vec<Function>,
    pub by_symbol: HashMap<Name, FnId>,
    pub graph: CallGraph,
    pub roots: Vec<(FnId, RootReason)>,
    /// Functions whose address the program takes (reified fn items and
    /// closures, fn pointers in statics): code outside the program, or
    /// calls through pointers, may call them.
    pub address_taken: std::collections::BTreeSet<FnId>,
    pub stats: LinkStats,
}

impl Program {
    pub fn function(&self, id: FnId) -> &Function {
        &self.functions[id.index()]
    }

    pub fn lookup(&self, symbol: &str) -> Option<FnId> {
        self.by_symbol.get(symbol).copied()
    }

    /// The instance holding `id`'s body, with its crate.
    pub fn body_of(&self, id: FnId) -> Option<(&LinkedCrate, &kmir::Instance)> {
        match self.function(id).kind {
            FnKind::Body { krate, instance } => {
                let c = &self.crates[krate as usize];
                Some((c, &c.dump.instances[instance as usize]))
            }
            _ => None,
        }
    }

    /// Every function with a body, with its crate and instance.
    pub fn bodies(&self) -> impl Iterator<Item = (FnId, &LinkedCrate, &kmir::Instance)> {
        (0..self.functions.len()).filter_map(|i| {
            let id = FnId(i as u32);
            self.body_of(id).map(|(c, inst)| (id, c, inst))
        })
    }

    /// Outgoing edges of `id` with their targets, in site order.
    pub fn callees(&self, id: FnId) -> Vec<(FnId, Edge)> {
        let mut v: Vec<(FnId, Edge)> = self
            .graph
            .edges(petgraph::graph::NodeIndex::new(id.index()))
            .map(|e| {
                (
                    FnId(petgraph::visit::EdgeRef::target(&e).index() as u32),
                    *e.weight(),
                )
            })
            .collect();
        v.sort_by_key(|(f, e)| (e.block, *f));
        v
    }

    /// Incoming edges of `id` with their callers.
    pub fn callers(&self, id: FnId) -> Vec<(FnId, Edge)> {
        let mut v: Vec<(FnId, Edge)> = self
            .graph
            .edges_directed(
                petgraph::graph::NodeIndex::new(id.index()),
                petgraph::Direction::Incoming,
            )
            .map(|e| {
                (
                    FnId(petgraph::visit::EdgeRef::source(&e).index() as u32),
                    *e.weight(),
                )
            })
            .collect();
        v.sort_by_key(|(f, e)| (*f, e.block));
        v
    }

    /// A shortest chain of calls from a root (a function C may call, or
    /// one nothing in the program calls) down to `f`, outermost first.
    pub fn call_trace(&self, f: FnId) -> Vec<TraceStep> {
        let roots: std::collections::HashSet<FnId> = self.roots.iter().map(|(r, _)| *r).collect();
        let mut prev: HashMap<FnId, TraceStep> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([f]);
        let mut seen = std::collections::HashSet::from([f]);
        let mut top = f;
        while let Some(g) = queue.pop_front() {
            top = g;
            if roots.contains(&g) && g != f {
                break;
            }
            let callers = self.callers(g);
            if callers.is_empty() && g != f {
                break;
            }
            for (caller, edge) in callers {
                if seen.insert(caller) {
                    prev.insert(
                        caller,
                        TraceStep {
                            caller,
                            callee: g,
                            edge,
                        },
                    );
                    queue.push_back(caller);
                }
            }
        }
        let mut steps = Vec::new();
        let mut at = top;
        while let Some(step) = prev.get(&at) {
            steps.push(*step);
            at = step.callee;
            if steps.len() > self.functions.len() {
                break;
            }
        }
        steps
    }

    /// `file:line:col` of a span of function `caller`'s crate.
    pub fn span_text(&self, caller: FnId, span: kmir::Span) -> String {
        let krate = match self.function(caller).kind {
            FnKind::Body { krate, .. } => krate,
            _ => return "<no span>".to_string(),
        };
        let dump = &self.crates[krate as usize].dump;
        match dump.file(span.file) {
            Some(file) if !span.is_dummy() => format!("{file}:{}:{}", span.lo_line, span.lo_col),
            _ => "<no span>".to_string(),
        }
    }

    /// The number of arguments of each function item, by item path (the
    /// key of annotations): from the bodies of its instances (a trait
    /// method's implementations give the trait method's), and for a
    /// function without a body from the direct calls to it. Closures,
    /// shims and drop glue are not items an annotation can be on. A path
    /// seen with two different counts (a C variadic) is left out, since no
    /// single arity holds for it.
    pub fn arities(&self) -> HashMap<String, u32> {
        let mut seen: HashMap<&str, Option<u32>> = HashMap::new();
        for (_, _, inst) in self.bodies() {
            let (kmir::InstanceKind::Item, Some(body)) = (&inst.kind, &inst.body) else {
                continue;
            };
            add_arity(&mut seen, &inst.item_path, body.arg_count);
            if let Some(t) = &inst.trait_item {
                add_arity(&mut seen, t, body.arg_count);
            }
        }
        for (f, n) in self.called_arities() {
            let f = self.function(f);
            if matches!(f.kind, FnKind::Foreign | FnKind::Upstream { .. }) {
                add_arity(&mut seen, &f.item_path, n);
            }
        }
        seen.into_iter()
            .filter_map(|(path, n)| Some((path.to_string(), n?)))
            .collect()
    }

    /// The number of arguments of each C function the program calls, by
    /// link name, from the calls (the dumps have no C prototypes). A
    /// variadic called with different counts is left out.
    pub fn foreign_arities(&self) -> HashMap<String, u32> {
        let mut seen: HashMap<&str, Option<u32>> = HashMap::new();
        for (f, n) in self.called_arities() {
            let f = self.function(f);
            if f.kind == FnKind::Foreign {
                add_arity(&mut seen, &f.symbol, n);
            }
        }
        seen.into_iter()
            .filter_map(|(name, n)| Some((name.to_string(), n?)))
            .collect()
    }

    /// Every direct call's callee with its number of arguments.
    /// Gathered in parallel, in the order of the functions and their sites.
    fn called_arities(&self) -> Vec<(FnId, u32)> {
        use rayon::prelude::*;
        (0..self.functions.len())
            .into_par_iter()
            .filter_map(|i| self.body_of(FnId(i as u32))?.1.body.as_ref())
            .flat_map_iter(|body| &body.blocks)
            .filter_map(|block| match &block.terminator.kind {
                kmir::TerminatorKind::Call {
                    callee: kmir::Callee::Direct { symbol },
                    args,
                    ..
                } => Some((self.lookup(symbol)?, args.len() as u32)),
                _ => None,
            })
            .collect()
    }

    /// Functions whose symbol equals `query`, else whose name equals it,
    /// else whose item path's last segment equals it (`go` is `b::go`, not
    /// also its closure `b::go::{closure#0}`, whose last segment is the
    /// closure's), else whose name or item path contains it.
    pub fn find(&self, query: &str) -> Vec<FnId> {
        if let Some(id) = self.lookup(query) {
            return vec![id];
        }
        let exact: Vec<FnId> = (0..self.functions.len() as u32)
            .map(FnId)
            .filter(|id| self.function(*id).name == query)
            .collect();
        if !exact.is_empty() {
            return exact;
        }
        let last_segment: Vec<FnId> = (0..self.functions.len() as u32)
            .map(FnId)
            .filter(|id| {
                let path = &self.function(*id).item_path;
                // A trait impl's method is `<T as Trait>::m`: the segment
                // after the last `::` is still the method's name.
                path.rsplit("::").next() == Some(query)
            })
            .collect();
        if !last_segment.is_empty() {
            return last_segment;
        }
        (0..self.functions.len() as u32)
            .map(FnId)
            .filter(|id| {
                let f = self.function(*id);
                f.name.contains(query) || f.item_path.contains(query)
            })
            .collect()
    }
}
