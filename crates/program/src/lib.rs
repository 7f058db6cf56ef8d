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
//!
//! How the link works:
//!
//! * The dumps are sorted by crate name, id and path first, and per-function
//!   work (best copies, names, address-taken sets, call sites) runs in
//!   parallel and is merged in function order, so the result depends neither
//!   on the order of the inputs nor on the number of threads.
//! * One function per symbol: the best body copy wins, then the defining
//!   crate's, then the first crate's. Every name is canonical (`Canonical`: a
//!   path a dump printed through a module of its own or of another crate, such
//!   as `extern crate alloc` in `proc_macro2`, starts at the crate that
//!   defines the item, never cut at a real module of the program such as
//!   `kernel::alloc`).
//! * A `dyn Trait` drop glue gets drop edges to the glue of every `Trait`
//!   vtable; calls through fn pointers are resolved once every address taken
//!   (`address_taken`) is known.
//! * The link reads each body once (call sites and addresses taken in one
//!   parallel walk, by symbol; the symbols are resolved afterwards).
//! * `call_trace` gives the shortest call trace from a root to a function
//!   (the checks' placement and the report use it); `arities` the argument
//!   counts by item path, or by link name for C functions, from bodies and
//!   calls, for checking annotations and spec entries.
//! * A `LinkedCrate` holds its bodies (`eager`) or decodes them on demand
//!   (`lazy`); every body is read through `LinkedCrate::body`/`Program::body`,
//!   a `BodyRef` dropped after use unless `Program::keep_bodies`; `body_facts`
//!   gives a body's argument count and drop elaboration without decoding it.
//! * `memo` (`Program::per_body`): a computation run on every body that reads
//!   only the body and its dump, its result taken from the crate's `Memo`
//!   (recalled by the per-dump cache, under a label naming the computation
//!   and its settings) instead of decoding the body. The link's sites, the
//!   invariants' facts and the checks' walk go through it; `content_hash` is
//!   a dump's key there.
//! * The program's target is the one with the most functions among the dumps
//!   (kernel targets first under the kernel profile, `LinkOptions::prefer`); a
//!   dump of another target is a host crate of the build
//!   (`LinkProblem::HostCrates`: built for its own build machine,
//!   `Header::host`; a proc macro; no function at all; or used only by host
//!   crates, by the dumps' recorded dependencies) or else a lost input
//!   (`LinkProblem::OtherTarget`).

mod link;
pub mod memo;
pub mod wire;

use std::collections::HashMap;
use std::path::PathBuf;

pub use kmir::Name;
pub use link::{HostCrate, HostReason, LinkOptions, LinkProblem, TargetTest, link, link_with};
pub use memo::{Memo, PhaseResults};

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
///
/// Its bodies are read through [`LinkedCrate::body`], never through
/// `dump.instances[i].body`: a crate loaded with [`LinkedCrate::lazy`] keeps
/// them encoded (`kmir::BodyTable`) and decodes one when it is asked for.
#[derive(Debug)]
pub struct LinkedCrate {
    pub path: PathBuf,
    pub dump: kmir::CrateDump,
    /// When the file was last written, to prefer the newer of two
    /// conflicting dumps of one crate.
    pub modified: Option<std::time::SystemTime>,
    /// The bodies, when they are not in `dump` (decoded on demand).
    pub lazy: Option<LazyBodies>,
    /// The hash of the file's bytes as they were loaded (xxh3-128), when
    /// the loader computed it (the caches key a dump by it).
    pub content_hash: Option<u128>,
    /// The per-body results of the phases that walk every body, recalled
    /// from and kept for the per-dump cache ([`memo`]); `None` when no
    /// cache is used.
    pub memo: Option<Memo>,
}

/// The encoded bodies of a crate loaded lazily, and the decoded ones kept
/// while [`Program::keep_bodies`] says so.
#[derive(Debug)]
pub struct LazyBodies {
    table: kmir::BodyTable,
    kept: Vec<std::sync::Mutex<Option<std::sync::Arc<kmir::Body>>>>,
    keep: std::sync::atomic::AtomicBool,
}

/// A body: borrowed from a dump that holds its bodies, or decoded on
/// demand (and freed when the last reference to it goes, unless kept).
#[derive(Clone, Debug)]
pub enum BodyRef<'a> {
    Borrowed(&'a kmir::Body),
    Decoded(std::sync::Arc<kmir::Body>),
}

impl std::ops::Deref for BodyRef<'_> {
    type Target = kmir::Body;
    fn deref(&self) -> &kmir::Body {
        match self {
            BodyRef::Borrowed(b) => b,
            BodyRef::Decoded(b) => b,
        }
    }
}

impl LinkedCrate {
    /// A crate whose dump holds its bodies.
    pub fn eager(
        path: PathBuf,
        dump: kmir::CrateDump,
        modified: Option<std::time::SystemTime>,
    ) -> LinkedCrate {
        LinkedCrate {
            path,
            dump,
            modified,
            lazy: None,
            content_hash: None,
            memo: None,
        }
    }

    /// A crate whose bodies are decoded when they are asked for.
    pub fn lazy(
        path: PathBuf,
        dump: kmir::LazyDump,
        modified: Option<std::time::SystemTime>,
    ) -> LinkedCrate {
        let kept = (0..dump.bodies.len())
            .map(|_| std::sync::Mutex::new(None))
            .collect();
        LinkedCrate {
            path,
            dump: dump.dump,
            modified,
            lazy: Some(LazyBodies {
                table: dump.bodies,
                kept,
                keep: std::sync::atomic::AtomicBool::new(false),
            }),
            content_hash: None,
            memo: None,
        }
    }

    /// The crate with the hash of its file's bytes and its memo (the
    /// per-dump cache's).
    pub fn with_cache(mut self, content_hash: u128, memo: Option<Memo>) -> LinkedCrate {
        self.content_hash = Some(content_hash);
        self.memo = memo;
        self
    }

    /// The index of the crate's bodies in its file, when it is loaded
    /// lazily (what the per-dump cache keeps to load it again without
    /// decoding them).
    pub fn body_index(&self) -> Option<kmir::BodyIndex> {
        self.lazy.as_ref().map(|l| l.table.index())
    }

    /// Whether instance `instance` has a body.
    pub fn has_body(&self, instance: u32) -> bool {
        match &self.lazy {
            Some(l) => l.table.has(instance as usize),
            None => self
                .dump
                .instances
                .get(instance as usize)
                .is_some_and(|i| i.body.is_some()),
        }
    }

    /// What is known of instance `instance`'s body without decoding it.
    pub fn body_facts(&self, instance: u32) -> Option<kmir::BodyFacts> {
        match &self.lazy {
            Some(l) => l.table.facts(instance as usize),
            None => {
                let b = self.dump.instances.get(instance as usize)?.body.as_ref()?;
                Some(kmir::BodyFacts::of(b))
            }
        }
    }

    /// Instance `instance`'s body, decoded if it has to be.
    pub fn body(&self, instance: u32) -> Option<BodyRef<'_>> {
        let Some(l) = &self.lazy else {
            return self
                .dump
                .instances
                .get(instance as usize)?
                .body
                .as_deref()
                .map(BodyRef::Borrowed);
        };
        let i = instance as usize;
        let keep = l.keep.load(std::sync::atomic::Ordering::Relaxed);
        if keep
            && let Some(slot) = l.kept.get(i)
            && let Some(b) = &*lock(slot)
        {
            return Some(BodyRef::Decoded(b.clone()));
        }
        BODIES_DECODED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let body = match l.table.decode(i) {
            Ok(body) => body?,
            // The bytes were checked and decoded once at load
            // (`kmir::decode_lazy`); read again, they fail only if the
            // file was written into since (their CRC-32 differs) or can no
            // longer be read. No result can be given from a dump that is
            // not the one loaded: the run stops, saying why.
            Err(problem) => {
                eprintln!(
                    "error: `{}`: cannot read the body of `{}` again: {problem}\n  = note: kanalyze reads a body from its dump whenever it needs it; a dump must not be written into while kanalyze runs (kextract replaces dumps, which is safe)",
                    self.path.display(),
                    self.dump
                        .instances
                        .get(i)
                        .map_or("?", |inst| inst.name.as_str()),
                );
                std::process::exit(2);
            }
        };
        let body = std::sync::Arc::new(body);
        if keep && let Some(slot) = l.kept.get(i) {
            *lock(slot) = Some(body.clone());
        }
        Some(BodyRef::Decoded(body))
    }

    /// Whether two crates hold the same dump, bodies included.
    pub fn same_content(&self, other: &LinkedCrate) -> bool {
        self.dump == other.dump
            && (0..self.dump.instances.len() as u32).all(|i| match (self.body(i), other.body(i)) {
                (Some(a), Some(b)) => *a == *b,
                (None, None) => true,
                _ => false,
            })
    }

    /// Keeps the bodies decoded from now on (`true`), or drops every kept
    /// one and decodes each use afresh (`false`).
    fn keep_bodies(&self, keep: bool) {
        if let Some(l) = &self.lazy {
            l.keep.store(keep, std::sync::atomic::Ordering::Relaxed);
            if !keep {
                for slot in &l.kept {
                    *lock(slot) = None;
                }
            }
        }
    }
}

static BODIES_DECODED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many bodies this process has decoded on demand so far (for
/// `--timings`; the decode at load is not counted).
pub fn bodies_decoded() -> u64 {
    BODIES_DECODED.load(std::sync::atomic::Ordering::Relaxed)
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while the slot was held cannot leave it half-written.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
    /// Every direct call's callee with its number of arguments, in the
    /// order of the functions and their sites (gathered by the link, so
    /// that the arities need no other pass over the bodies).
    pub call_arities: Vec<(FnId, u32)>,
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

    /// `id`'s body, decoded if it has to be.
    pub fn body(&self, id: FnId) -> Option<BodyRef<'_>> {
        match self.function(id).kind {
            FnKind::Body { krate, instance } => self.crates[krate as usize].body(instance),
            _ => None,
        }
    }

    /// What is known of `id`'s body without decoding it.
    pub fn body_facts(&self, id: FnId) -> Option<kmir::BodyFacts> {
        match self.function(id).kind {
            FnKind::Body { krate, instance } => self.crates[krate as usize].body_facts(instance),
            _ => None,
        }
    }

    /// Keeps every body decoded from now on (`true`), or drops the kept
    /// ones and decodes each use afresh (`false`, the default). Only
    /// crates loaded lazily are concerned.
    pub fn keep_bodies(&self, keep: bool) {
        use rayon::prelude::*;
        self.crates.par_iter().for_each(|c| c.keep_bodies(keep));
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
        for (id, krate, inst) in self.bodies() {
            let FnKind::Body { instance, .. } = self.function(id).kind else {
                continue;
            };
            let (kmir::InstanceKind::Item, Some(body)) = (&inst.kind, krate.body_facts(instance))
            else {
                continue;
            };
            add_arity(&mut seen, &inst.item_path, body.arg_count);
            if let Some(t) = &inst.trait_item {
                add_arity(&mut seen, t, body.arg_count);
            }
        }
        for &(f, n) in &self.call_arities {
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
        for &(f, n) in &self.call_arities {
            let f = self.function(f);
            if f.kind == FnKind::Foreign {
                add_arity(&mut seen, &f.symbol, n);
            }
        }
        seen.into_iter()
            .filter_map(|(name, n)| Some((name.to_string(), n?)))
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
