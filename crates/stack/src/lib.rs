//! `kanalyze stack`: the worst-case stack depth of every function C can
//! call, over the whole program (docs/stack.md).
//!
//! Each function's frame comes from the objects (`objects`: the
//! `.stack_sizes` sections of `-Zemit-stack-sizes`, `.su` files of
//! `-fstack-usage`); functions no object defines were inlined and are
//! walked through (`frames`); the linked call graph is walked bottom-up
//! over its strongly connected components, every indirect call to its
//! worst target, recursion bounded only by `#[kanalyze::recursion_bound]`
//! (`depth`); the large locals behind a large frame are named from the
//! dumps' types (`locals`). This module turns the walk into the roots'
//! depths and the findings; `json` is the machine form.
//!
//! Modules: `objects` reads the `.stack_sizes` sections through each entry's
//! relocation to the function symbol and the `.su` files (inputs found by
//! `build_error::inputs`; truncated, foreign and other-architecture objects
//! are errors naming them); `frames` gives each function its frame (its own,
//! inlined into its callers when no object defines it but its crate's objects
//! were read, a C function's from the spec's `[stack]` table, a `.su` file or
//! the default, or unknown); `depth` is the deepest path below every
//! function, bottom-up over the call graph's components, a cycle bounded only
//! by `#[kanalyze::recursion_bound]` on every cycle and otherwise marked
//! unbounded with a lower bound; `locals` names the large MIR locals behind a
//! frame, its own and its inlined callees', by `kmir::Ty::size`. The three
//! stack finding kinds are declared here and listed in `checks::KINDS`. The
//! roots come from the CLI: `checks::callback_roots` (the callback
//! registrations), `Program::roots`, and functions whose address leaves the
//! program.

pub mod depth;
pub mod frames;
pub mod json;
pub mod locals;
pub mod objects;

use std::collections::{BTreeMap, HashMap};

use annotations::{ItemAnnotations, KanalyzeAnnotation};
use findings::{Finding, Loc, Note, Severity};
use program::{FnId, FnKind, Program};

use depth::{Bound, Step, Walk};
use frames::{CSource, Frame, Unknown};

findings::declare_kind! {
    /// A function C calls (an exported function, a callback registered with C,
    /// an IRQ handler, a `module_init`) may use more stack, with everything it
    /// calls, than the limit (`--limit`, `[stack] limit` in `kanalyze.toml`;
    /// 8192 bytes by default, half of a 16 KiB kernel stack).
    ///
    /// The depth is the sum of the frames on the deepest path below it: each
    /// function's frame from the objects' `.stack_sizes` sections
    /// (`-Zemit-stack-sizes`), functions inlined into their callers folded into
    /// them, calls through `dyn` and function pointers to their worst target,
    /// and C functions from the spec's `[stack]` table or `.su` files
    /// (docs/stack.md).
    ///
    /// Example:
    ///
    /// ```text
    /// fn probe(pdev: &mut PlatformDevice) -> Result {
    ///     let table = [0u32; 1024];        // 4 KiB on the stack
    ///     configure(&table)?;              // and configure's frame below it
    ///     ...
    /// }
    /// ```
    ///
    /// Fix: shrink the largest frames on the path (the finding names them and
    /// their large locals): move big buffers and structs to the heap
    /// (`KBox::new`, `KVec`), or initialise them in place (`pin_init!`) rather
    /// than building them on the stack and moving them.
    pub STACK_DEPTH_EXCEEDED, "stack-depth-exceeded", Error, "stack",
    "a function C calls may use more stack, with everything it calls, than the limit"
}

findings::declare_kind! {
    /// A single function's stack frame is larger than the frame limit
    /// (`--frame-limit`, `[stack] frame-limit`; 2048 bytes by default, the
    /// kernel's `CONFIG_FRAME_WARN` on 64-bit). The kernel warns about such
    /// frames in C (`-Wframe-larger-than`), but not in Rust. The frame is the
    /// compiler's (`.stack_sizes`) and includes the functions inlined into
    /// it; the finding names the largest locals, from the dumps' types.
    ///
    /// Example:
    ///
    /// ```text
    /// fn new() -> Result<KBox<Self>> {
    ///     let cmdq = Cmdq { buffer: [0u8; 8192], .. };   // built on the stack,
    ///     KBox::new(cmdq, GFP_KERNEL)                     // then moved to the heap
    /// }
    /// ```
    ///
    /// Fix: build the value where it lives (`KBox::pin_init`, `init!`), or
    /// allocate the buffer separately.
    pub STACK_FRAME_TOO_LARGE, "stack-frame-too-large", Error, "stack",
    "a function's stack frame is larger than the frame limit"
}

findings::declare_kind! {
    /// Functions call each other in a cycle that nothing bounds, so the stack
    /// depth of the functions C calls that reach it has no worst case. The
    /// reported depth is then the deepest path that goes round no cycle, a
    /// lower bound.
    ///
    /// A recursion that is bounded by the data (a tree of known depth, a
    /// retry that happens once) can say so: `#[kanalyze::recursion_bound(N,
    /// "why")]` on a function of the cycle says it is on one stack at most `N`
    /// times; when every cycle of the component passes through such a
    /// function, the depth is bounded (docs/stack.md).
    ///
    /// Example:
    ///
    /// ```text
    /// fn walk(node: &Node) -> u32 {
    ///     node.children.iter().map(walk).sum()   // as deep as the tree
    /// }
    /// ```
    ///
    /// Fix: make the recursion a loop with an explicit stack on the heap, or
    /// bound it and annotate the bound.
    pub STACK_UNBOUNDED_RECURSION, "stack-unbounded-recursion", Warning, "stack",
    "a cycle of calls that nothing bounds: the stack depth of the functions that reach it has no worst case"
}

/// The kinds of this module, for `checks::KINDS`.
pub static KINDS: &[&findings::Kind] = &[
    &STACK_DEPTH_EXCEEDED,
    &STACK_FRAME_TOO_LARGE,
    &STACK_UNBOUNDED_RECURSION,
];

/// The default depth limit: half of a 16 KiB kernel stack.
pub const DEFAULT_LIMIT: u64 = 8192;
/// The default frame limit: the kernel's `CONFIG_FRAME_WARN` on 64-bit.
pub const DEFAULT_FRAME_LIMIT: u64 = 2048;

/// How many steps of a path a finding shows as located notes.
const PATH_NOTES: usize = 16;
/// How many large locals a frame finding names.
const LOCALS_SHOWN: usize = 3;
/// How many members of a cycle are named.
const CYCLE_NAMED: usize = 8;

/// A function C can call, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    pub f: FnId,
    /// "exported", "registered with `request_irq` (hard-IRQ handler)", …
    pub why: String,
    /// Where it is handed to C, when that is a place in the program.
    pub site: Option<Loc>,
    /// C calls it in hard-IRQ context.
    pub irq: bool,
}

/// The limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub depth: u64,
    pub frame: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            depth: DEFAULT_LIMIT,
            frame: DEFAULT_FRAME_LIMIT,
        }
    }
}

/// One root's result.
#[derive(Clone, Debug)]
pub struct RootDepth {
    pub root: Root,
    /// Bytes; for a root that reaches an unbounded cycle, a lower bound.
    pub depth: u64,
    pub path: Vec<Step>,
    /// Functions reachable from it whose frame is not known (they add only
    /// their return address).
    pub unknown: Vec<FnId>,
    /// Unbounded cycles reachable from it (indices of `Walk::cycles`).
    pub unbounded: Vec<u32>,
    /// C functions reachable from it that are costed by the default.
    pub assumed: Vec<FnId>,
}

/// The whole result.
pub struct Analysis {
    pub walk: Walk,
    /// Deepest first (then by name).
    pub roots: Vec<RootDepth>,
    pub findings: Vec<Finding>,
    pub limits: Limits,
    /// `recursion_bound` annotations on functions in no cycle: the
    /// annotated item paths.
    pub unused_bounds: Vec<String>,
}

/// Every function's `recursion_bound`, and the annotated items that are
/// on no cycle of the program.
fn bounds(program: &Program, annotations: &HashMap<String, ItemAnnotations>) -> HashMap<FnId, u32> {
    let mut out = HashMap::new();
    for (i, f) in program.functions.iter().enumerate() {
        if !matches!(f.kind, FnKind::Body { .. }) {
            continue;
        }
        let Some(a) = annotations.get(f.item_path.as_str()) else {
            continue;
        };
        for (k, _) in &a.kanalyze {
            if let KanalyzeAnnotation::RecursionBound { depth, .. } = k {
                out.insert(FnId(i as u32), *depth);
            }
        }
    }
    out
}

/// Walks the program from `roots` with the frames of `frames` (see
/// `frames::frames`), `ret` bytes of return address per call.
pub fn analyse(
    program: &Program,
    annotations: &HashMap<String, ItemAnnotations>,
    frames: Vec<Frame>,
    ret: u64,
    roots: Vec<Root>,
    limits: Limits,
) -> Analysis {
    use rayon::prelude::*;
    let bounds = bounds(program, annotations);
    let walk = depth::walk(program, frames, ret, &bounds);
    let mut unused_bounds: Vec<String> = bounds
        .keys()
        .filter(|f| walk.nodes[f.index()].cycle.is_none())
        .map(|f| program.function(*f).item_path.to_string())
        .collect();
    unused_bounds.sort();
    unused_bounds.dedup();
    let mut results: Vec<RootDepth> = roots
        .into_par_iter()
        .map(|root| {
            let reachable = walk.reachable(program, root.f);
            let mut unbounded: Vec<u32> = reachable
                .iter()
                .filter_map(|g| walk.nodes[g.index()].cycle)
                .filter(|c| !walk.cycles[*c as usize].is_bounded())
                .collect();
            unbounded.sort_unstable();
            unbounded.dedup();
            RootDepth {
                depth: walk.depth(root.f),
                path: walk.path(root.f),
                unknown: reachable
                    .iter()
                    .copied()
                    .filter(|g| walk.frames[g.index()].is_unknown())
                    .collect(),
                assumed: reachable
                    .iter()
                    .copied()
                    .filter(|g| {
                        matches!(
                            walk.frames[g.index()],
                            Frame::C {
                                source: CSource::Default | CSource::Su { .. },
                                ..
                            }
                        )
                    })
                    .collect(),
                unbounded,
                root,
            }
        })
        .collect();
    results.sort_by(|a, b| {
        b.depth.cmp(&a.depth).then_with(|| {
            program
                .function(a.root.f)
                .name
                .cmp(&program.function(b.root.f).name)
        })
    });
    let mut analysis = Analysis {
        walk,
        roots: results,
        findings: Vec::new(),
        limits,
        unused_bounds,
    };
    analysis.findings = findings(program, &analysis);
    analysis
}

fn loc(program: &Program, f: FnId, span: kmir::Span) -> Option<Loc> {
    match program.function(f).kind {
        FnKind::Body { krate, .. } => Some(Loc { krate, span }),
        _ => None,
    }
}

/// The definition's span of a function with a body.
fn def_loc(program: &Program, f: FnId) -> Option<Loc> {
    let (_, inst) = program.body_of(f)?;
    loc(program, f, inst.span)
}

/// `3032 bytes`, or `an unknown frame`, for the frame of `f`.
pub fn frame_text(frame: &Frame) -> String {
    match frame {
        Frame::Own(b) => format!("a frame of {b} bytes"),
        Frame::Inlined => "no frame of its own (inlined)".to_string(),
        Frame::C { bytes, source } => match source {
            CSource::Spec => format!("{bytes} bytes (C, the spec's `[stack]` entry)"),
            CSource::Su { frame, default } => format!(
                "{bytes} bytes (C: its own frame of {frame} bytes from a `.su` file, and the default of {default} for what it calls)"
            ),
            CSource::Default => {
                format!("{bytes} bytes (C, the default for C functions no `[stack]` entry names)")
            }
        },
        Frame::Unknown(why) => format!("an unknown frame ({})", unknown_text(why)),
    }
}

pub fn unknown_text(why: &Unknown) -> String {
    match why {
        Unknown::NoSize { object } => {
            format!("`{object}` defines it, but records no frame size for it")
        }
        Unknown::NoObject { krate } => format!("no object of crate `{krate}` was read"),
        Unknown::Foreign => "a C function no `[stack]` entry or `.su` file names".to_string(),
        Unknown::DynamicC { at } => format!("its C frame grows at run time, `{at}`"),
        Unknown::Outside => "a function of a crate without dumps".to_string(),
        Unknown::Shim => "a compiler shim with no body in the dumps".to_string(),
    }
}

/// Members of a cycle as text: the first few names, then how many more.
fn cycle_names(program: &Program, members: &[FnId]) -> String {
    let mut names: Vec<String> = members
        .iter()
        .take(CYCLE_NAMED)
        .map(|f| format!("`{}`", program.function(*f).name))
        .collect();
    if members.len() > CYCLE_NAMED {
        names.push(format!("… {} more", members.len() - CYCLE_NAMED));
    }
    names.join(", ")
}

/// The notes that walk a root's worst path: one per step, at the call.
fn path_notes(program: &Program, analysis: &Analysis, path: &[Step]) -> Vec<Note> {
    let walk = &analysis.walk;
    let mut notes = Vec::new();
    let mut total: u64 = 0;
    for (i, step) in path.iter().enumerate() {
        total = total.saturating_add(walk.step_bytes(step));
        if i == 0 && step.from().is_none() && matches!(step, Step::Call { .. }) {
            // The root itself: said by the finding's label.
            continue;
        }
        if notes.len() >= PATH_NOTES {
            notes.push(Note::text(format!(
                "… {} more calls down to {total} bytes",
                path.len() - i
            )));
            break;
        }
        let f = step.function();
        let name = &program.function(f).name;
        let text = match step {
            // Inlined: it adds nothing, and the next call is made in its
            // code, so that call's note says where.
            Step::Call { .. } if walk.frames[f.index()] == Frame::Inlined => continue,
            Step::Call { .. } => format!(
                "`{name}` is called here: {}; {total} bytes deep",
                frame_text(&walk.frames[f.index()])
            ),
            Step::Cycle { cycle, .. } => {
                let c = &walk.cycles[*cycle as usize];
                let Bound::Bounded {
                    annotated, bytes, ..
                } = &c.bound
                else {
                    continue;
                };
                let bounds: Vec<String> = annotated
                    .iter()
                    .map(|(a, n)| format!("`{}` at most {n} deep", program.function(*a).name))
                    .collect();
                format!(
                    "`{name}` is called here, in a recursion through {} ({}, annotated): at most {bytes} bytes; {total} bytes deep",
                    cycle_names(program, &c.members),
                    bounds.join(", ")
                )
            }
        };
        let at = step
            .from()
            .and_then(|(caller, edge)| loc(program, caller, edge.span));
        notes.push(match at {
            Some(l) => Note::at(l, text),
            None => Note::text(text),
        });
    }
    notes
}

/// The largest frame on a path (a function with a frame of its own).
fn largest_on(analysis: &Analysis, path: &[Step]) -> Option<(FnId, u64)> {
    let mut best: Option<(FnId, u64)> = None;
    for step in path {
        let f = step.function();
        if let Frame::Own(b) = analysis.walk.frames[f.index()]
            && best.is_none_or(|(_, d)| b > d)
        {
            best = Some((f, b));
        }
    }
    best
}

/// The text naming a large local: "`buf` of type `[u8; 4096]` (4096
/// bytes)", with where it is inlined from.
fn local_text(program: &Program, frame_of: FnId, l: &locals::Local) -> String {
    let what = match &l.name {
        Some(n) => format!("{n} of type `{}`", l.ty),
        None => format!("a temporary of type `{}`", l.ty),
    };
    if l.function == frame_of {
        format!("{what} takes {} bytes", l.bytes)
    } else {
        format!(
            "{what} takes {} bytes, in `{}`, inlined into `{}`",
            l.bytes,
            program.function(l.function).name,
            program.function(frame_of).name
        )
    }
}

fn findings(program: &Program, analysis: &Analysis) -> Vec<Finding> {
    let limits = analysis.limits;
    let walk = &analysis.walk;
    let mut out = Vec::new();
    // Depths over the limit; one per root name (the deepest: the roots are
    // deepest first), since the instances of one generic root in several
    // crates have one name.
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for r in &analysis.roots {
        if r.depth <= limits.depth || !seen.insert(program.function(r.root.f).name.as_str()) {
            continue;
        }
        let name = &program.function(r.root.f).name;
        let unbounded = !r.unbounded.is_empty();
        let message = if unbounded {
            format!(
                "the stack of `{name}` is unbounded, and at least {} bytes deep without going round a cycle, over the limit of {} bytes",
                r.depth, limits.depth
            )
        } else {
            format!(
                "the stack of `{name}` may reach {} bytes, over the limit of {} bytes",
                r.depth, limits.depth
            )
        };
        let mut f = Finding::new(&STACK_DEPTH_EXCEEDED, Severity::Error, message)
            .in_function(r.root.f)
            .subject("depth")
            .label(format!(
                "C calls `{name}` ({}): {}",
                r.root.why,
                frame_text(&walk.frames[r.root.f.index()])
            ));
        if let Some(l) = def_loc(program, r.root.f) {
            f = f.at(l);
        }
        if let Some(site) = r.root.site {
            f = f.note(Note::at(site, format!("`{name}` is handed to C here")));
        }
        for n in path_notes(program, analysis, &r.path) {
            f = f.note(n);
        }
        f = unknown_notes(program, analysis, r, f);
        if let Some((g, bytes)) = largest_on(analysis, &r.path) {
            let big = locals::largest(program, &walk.frames, g, bytes / 8, 1);
            let local = big
                .first()
                .map(|l| format!(": {}", local_text(program, g, l)))
                .unwrap_or_default();
            f = f.note(Note::help(format!(
                "the largest frame on the path is `{}`'s, {bytes} bytes{local}; move large locals to the heap (`KBox`, `KVec`) or initialise them in place",
                program.function(g).name
            )));
        }
        out.push(f);
    }
    out.extend(frame_findings(program, analysis));
    out.extend(recursion_findings(program, analysis));
    out
}

/// Notes on what the depth does not include: unknown frames and C
/// functions costed by the default, reachable from the root.
fn unknown_notes(program: &Program, analysis: &Analysis, r: &RootDepth, mut f: Finding) -> Finding {
    if !r.unknown.is_empty() {
        let named: Vec<String> = r
            .unknown
            .iter()
            .take(4)
            .map(|g| {
                format!(
                    "`{}` ({})",
                    program.function(*g).name,
                    match &analysis.walk.frames[g.index()] {
                        Frame::Unknown(why) => unknown_text(why),
                        _ => String::new(),
                    }
                )
            })
            .collect();
        f = f.note(Note::text(format!(
            "{} function{} it may call {} an unknown frame, counted as its return address only: {}{}",
            r.unknown.len(),
            if r.unknown.len() == 1 { "" } else { "s" },
            if r.unknown.len() == 1 { "has" } else { "have" },
            named.join(", "),
            if r.unknown.len() > 4 {
                format!(", … {} more", r.unknown.len() - 4)
            } else {
                String::new()
            }
        )));
    }
    f
}

/// Frames over the frame limit, one finding per item and place (the
/// largest instance of a generic function), at the function's definition.
fn frame_findings(program: &Program, analysis: &Analysis) -> Vec<Finding> {
    let limits = analysis.limits;
    let walk = &analysis.walk;
    // (item path, span) → the largest instance's (bytes, FnId), and how
    // many instances there are.
    type Item = (String, Option<(u32, kmir::Span)>);
    let mut by_item: BTreeMap<Item, (u64, FnId, usize)> = BTreeMap::new();
    for (i, frame) in walk.frames.iter().enumerate() {
        let Frame::Own(bytes) = *frame else { continue };
        let f = FnId(i as u32);
        if bytes <= limits.frame || program.body_of(f).is_none() {
            continue;
        }
        let func = program.function(f);
        let item = if func.item_path.is_empty() {
            func.name.to_string()
        } else {
            func.item_path.to_string()
        };
        let key = (item, def_loc(program, f).map(|l| (l.krate, l.span)));
        let entry = by_item.entry(key).or_insert((bytes, f, 0));
        entry.2 += 1;
        if bytes > entry.0 || (bytes == entry.0 && func.name < program.function(entry.1).name) {
            entry.0 = bytes;
            entry.1 = f;
        }
    }
    let mut out = Vec::new();
    for ((item, at), (bytes, f, instances)) in by_item {
        let name = &program.function(f).name;
        let mut finding = Finding::new(
            &STACK_FRAME_TOO_LARGE,
            Severity::Error,
            format!(
                "the stack frame of `{name}` is {bytes} bytes, over the frame limit of {} bytes",
                limits.frame
            ),
        )
        .in_function(f)
        .subject(format!("frame of {item}"))
        .label(format!("{bytes} bytes of stack for this function's frame"));
        if let Some((krate, span)) = at {
            finding = finding.at(Loc { krate, span });
        }
        if instances > 1 {
            finding = finding.note(Note::text(format!(
                "the largest of {instances} instances of `{item}` over the limit"
            )));
        }
        let big = locals::largest(program, &walk.frames, f, (bytes / 8).max(64), LOCALS_SHOWN);
        for l in &big {
            let text = local_text(program, f, l);
            finding = finding.note(match loc(program, l.function, l.span) {
                Some(at) if !l.span.is_dummy() => Note::at(at, text),
                _ => Note::text(text),
            });
        }
        if big.is_empty() {
            finding = finding.note(Note::text(
                "no single local of the function or of what is inlined into it is large: the frame is many locals, or the optimiser's copies of them".to_string(),
            ));
        }
        finding = finding.note(Note::help(
            "build large values where they live (`KBox::pin_init`, `init!`) or allocate them (`KBox`, `KVec`) instead of keeping them on the stack".to_string(),
        ));
        out.push(finding);
    }
    out
}

/// One warning per unbounded cycle that a root reaches. The instances of
/// one generic cycle in several crates (the same functions by name, each
/// crate's copy) are one warning, reached from the roots of all.
fn recursion_findings(program: &Program, analysis: &Analysis) -> Vec<Finding> {
    let walk = &analysis.walk;
    let mut reached: BTreeMap<u32, Vec<FnId>> = BTreeMap::new();
    for r in &analysis.roots {
        for c in &r.unbounded {
            reached.entry(*c).or_default().push(r.root.f);
        }
    }
    let names = |c: u32| -> Vec<String> {
        let mut n: Vec<String> = walk.cycles[c as usize]
            .members
            .iter()
            .map(|f| program.function(*f).name.to_string())
            .collect();
        n.sort();
        n
    };
    let mut merged: BTreeMap<Vec<String>, (u32, Vec<FnId>)> = BTreeMap::new();
    for (c, roots) in reached {
        let entry = merged.entry(names(c)).or_insert((c, Vec::new()));
        entry.1.extend(roots);
    }
    let mut by_first: Vec<(u32, Vec<FnId>)> = merged.into_values().collect();
    by_first.sort_by_key(|(c, _)| *c);
    let mut out = Vec::new();
    for (c, mut roots) in by_first {
        roots.sort_by(|a, b| program.function(*a).name.cmp(&program.function(*b).name));
        roots.dedup_by(|a, b| program.function(*a).name == program.function(*b).name);
        let cycle = &walk.cycles[c as usize];
        let Bound::Unbounded { annotated } = &cycle.bound else {
            continue;
        };
        // Shown at the first member with a body, by name.
        let mut members = cycle.members.clone();
        members.sort_by(|a, b| program.function(*a).name.cmp(&program.function(*b).name));
        let Some(&first) = members.first() else {
            continue;
        };
        let names: Vec<String> = members
            .iter()
            .map(|f| program.function(*f).name.to_string())
            .collect();
        let mut f = Finding::new(
            &STACK_UNBOUNDED_RECURSION,
            Severity::Warning,
            format!(
                "a cycle of {} function{} that nothing bounds: the stack depth of {} function{} C calls is unbounded",
                members.len(),
                if members.len() == 1 { "" } else { "s" },
                roots.len(),
                if roots.len() == 1 { "" } else { "s" }
            ),
        )
        .in_function(first)
        .subject(format!("cycle {}", names.join(", ")))
        .label("a function of the cycle".to_string());
        if let Some(l) = def_loc(program, first) {
            f = f.at(l);
        }
        f = f.note(Note::text(format!(
            "the cycle's functions: {}",
            cycle_names(program, &members)
        )));
        for (g, e) in cycle_edges(program, &cycle.members, first)
            .into_iter()
            .take(CYCLE_NAMED)
        {
            let text = format!(
                "`{}` calls `{}` here",
                program.function(g).name,
                program.function(e.1).name
            );
            f = f.note(match loc(program, g, e.0.span) {
                Some(l) => Note::at(l, text),
                None => Note::text(text),
            });
        }
        let named: Vec<String> = roots
            .iter()
            .take(3)
            .map(|r| format!("`{}`", program.function(*r).name))
            .collect();
        f = f.note(Note::text(format!(
            "reached from {}{}",
            named.join(", "),
            if roots.len() > 3 {
                format!(", … {} more", roots.len() - 3)
            } else {
                String::new()
            }
        )));
        if !annotated.is_empty() {
            let a: Vec<String> = annotated
                .iter()
                .map(|(g, n)| format!("`{}` ({n})", program.function(*g).name))
                .collect();
            f = f.note(Note::text(format!(
                "annotated with a bound: {}, but a cycle passes through none of them",
                a.join(", ")
            )));
        }
        f = f.note(Note::help(
            "if the recursion is bounded, say how deep on a function of every cycle: `#[kanalyze::recursion_bound(N, \"why\")]`".to_string(),
        ));
        out.push(f);
    }
    out
}

/// One cycle through `start` inside the component `members`, as the calls
/// that make it (caller, (edge, callee)), found breadth first.
fn cycle_edges(
    program: &Program,
    members: &[FnId],
    start: FnId,
) -> Vec<(FnId, (program::Edge, FnId))> {
    use std::collections::VecDeque;
    let inside: std::collections::HashSet<FnId> = members.iter().copied().collect();
    let mut prev: HashMap<FnId, (FnId, program::Edge)> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(f) = queue.pop_front() {
        for (g, e) in program.callees(f) {
            if !inside.contains(&g) {
                continue;
            }
            if g == start {
                // Back at the start: the chain from start to f, then f → start.
                let mut chain = vec![(f, (e, g))];
                let mut at = f;
                while at != start {
                    let Some(&(p, pe)) = prev.get(&at) else { break };
                    chain.push((p, (pe, at)));
                    at = p;
                }
                chain.reverse();
                return chain;
            }
            if g != start && !prev.contains_key(&g) {
                prev.insert(g, (f, e));
                queue.push_back(g);
            }
        }
    }
    Vec::new()
}
