//! The roots in machine form: each root's depth and its worst path, every
//! step with its function, the bytes its frame adds and the source span of
//! the call (docs/stack.md, "JSON").

use findings::Loc;
use program::{FnId, FnKind, Program};
use serde::Serialize;

use crate::depth::{Bound, Step};
use crate::frames::{CSource, Frame};
use crate::{Analysis, RootDepth, unknown_text};

#[derive(Serialize)]
pub struct Span {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// One step of a path.
#[derive(Serialize)]
pub struct PathStep {
    pub function: String,
    /// The frame's bytes (without the return address): 0 for an inlined
    /// function, `null` when unknown; for a bounded recursion, what the
    /// whole recursion may take.
    pub frame_bytes: Option<u64>,
    /// `own`, `inlined`, `c`, `unknown`, or `recursion`.
    pub kind: &'static str,
    /// Where it is called (in the caller); for the root, its definition.
    pub span: Option<Span>,
    /// The depth after this step.
    pub depth: u64,
    /// Why the frame is unknown, or where a C function's usage comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Serialize)]
pub struct JsonRoot {
    pub function: String,
    pub symbol: String,
    /// Why C can call it.
    pub reason: String,
    /// C calls it in hard-IRQ context.
    pub irq: bool,
    /// Bytes; a lower bound when `bounded` is false.
    pub depth: u64,
    pub over_limit: bool,
    /// It reaches no cycle that nothing bounds.
    pub bounded: bool,
    /// Functions it may reach whose frame is unknown, by name.
    pub unknown_frames: Vec<String>,
    /// C functions it may reach that are costed by the default.
    pub assumed_c_functions: usize,
    pub path: Vec<PathStep>,
}

pub fn span(program: &Program, loc: Option<Loc>) -> Option<Span> {
    let loc = loc?;
    if loc.span.is_dummy() {
        return None;
    }
    let file = program
        .crates
        .get(loc.krate as usize)?
        .dump
        .file(loc.span.file)?;
    Some(Span {
        file: file.to_string(),
        line: loc.span.lo_line,
        column: loc.span.lo_col,
        end_line: loc.span.hi_line,
        end_column: loc.span.hi_col,
    })
}

fn loc_of(program: &Program, f: FnId, span: kmir::Span) -> Option<Loc> {
    match program.function(f).kind {
        FnKind::Body { krate, .. } => Some(Loc { krate, span }),
        _ => None,
    }
}

/// The steps of a root's path, with the running depth.
pub fn path(program: &Program, analysis: &Analysis, r: &RootDepth) -> Vec<PathStep> {
    let walk = &analysis.walk;
    let mut depth: u64 = 0;
    r.path
        .iter()
        .map(|step| {
            depth = depth.saturating_add(walk.step_bytes(step));
            let f = step.function();
            let at = match step.from() {
                Some((caller, edge)) => loc_of(program, caller, edge.span),
                None => program
                    .body_of(f)
                    .and_then(|(_, inst)| loc_of(program, f, inst.span)),
            };
            let (frame_bytes, kind, note) = match step {
                Step::Cycle { cycle, .. } => {
                    let c = &walk.cycles[*cycle as usize];
                    let bytes = match &c.bound {
                        Bound::Bounded { bytes, .. } => Some(*bytes),
                        Bound::Unbounded { .. } => None,
                    };
                    let names: Vec<String> = c
                        .members
                        .iter()
                        .map(|g| program.function(*g).name.to_string())
                        .collect();
                    (
                        bytes,
                        "recursion",
                        Some(format!("bounded recursion through {}", names.join(", "))),
                    )
                }
                Step::Call { .. } => {
                    let frame = &walk.frames[f.index()];
                    let note = match frame {
                        Frame::Unknown(why) => Some(unknown_text(why)),
                        Frame::C { source, .. } => Some(
                            match source {
                                CSource::Spec => "the spec's [stack] entry".to_string(),
                                CSource::Su { frame, default } => format!(
                                    "own frame {frame} from a .su file, and the default {default} for its callees"
                                ),
                                CSource::Default => "the default for C functions".to_string(),
                            },
                        ),
                        _ => None,
                    };
                    (frame.bytes(), frame.kind(), note)
                }
            };
            PathStep {
                function: program.function(f).name.to_string(),
                frame_bytes,
                kind,
                span: span(program, at),
                depth,
                note,
            }
        })
        .collect()
}

pub fn roots(program: &Program, analysis: &Analysis) -> Vec<JsonRoot> {
    analysis
        .roots
        .iter()
        .map(|r| {
            let func = program.function(r.root.f);
            JsonRoot {
                function: func.name.to_string(),
                symbol: func.symbol.to_string(),
                reason: r.root.why.clone(),
                irq: r.root.irq,
                depth: r.depth,
                over_limit: r.depth > analysis.limits.depth,
                bounded: r.unbounded.is_empty(),
                unknown_frames: {
                    let mut names: Vec<String> = r
                        .unknown
                        .iter()
                        .map(|g| program.function(*g).name.to_string())
                        .collect();
                    names.sort();
                    names
                },
                assumed_c_functions: r.assumed.len(),
                path: path(program, analysis, r),
            }
        })
        .collect()
}

/// A frame over the frame limit.
#[derive(Serialize)]
pub struct LargeFrame {
    pub function: String,
    pub frame_bytes: u64,
    /// The function's definition.
    pub span: Option<Span>,
    /// Its largest locals (its own and those inlined into it), largest
    /// first: `{name, type, bytes}`.
    pub locals: Vec<JsonLocal>,
}

#[derive(Serialize)]
pub struct JsonLocal {
    /// `` `buf` ``, `argument `x``, `the return value`; `null` for a
    /// temporary.
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub ty: String,
    pub bytes: u64,
    /// The function that declares it (an inlined one, or the frame's own).
    pub function: String,
    pub span: Option<Span>,
}

/// Every function whose frame is over the frame limit, largest first (then
/// by name).
pub fn large_frames(program: &Program, analysis: &Analysis) -> Vec<LargeFrame> {
    let mut out: Vec<(u64, FnId)> = analysis
        .walk
        .frames
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match f {
            Frame::Own(b) if *b > analysis.limits.frame => Some((*b, FnId(i as u32))),
            _ => None,
        })
        .filter(|(_, f)| program.body_of(*f).is_some())
        .collect();
    out.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| program.function(a.1).name.cmp(&program.function(b.1).name))
    });
    out.into_iter()
        .map(|(bytes, f)| LargeFrame {
            function: program.function(f).name.to_string(),
            frame_bytes: bytes,
            span: span(
                program,
                program
                    .body_of(f)
                    .and_then(|(_, inst)| loc_of(program, f, inst.span)),
            ),
            locals: crate::locals::largest(
                program,
                &analysis.walk.frames,
                f,
                (bytes / 8).max(64),
                3,
            )
            .into_iter()
            .map(|l| JsonLocal {
                name: l.name,
                ty: l.ty,
                bytes: l.bytes,
                function: program.function(l.function).name.to_string(),
                span: span(program, loc_of(program, l.function, l.span)),
            })
            .collect(),
        })
        .collect()
}
