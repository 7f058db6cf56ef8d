//! What kextract's dumps of the same build add to a reference (`--dumps`):
//! which arguments of the outermost function the assertion's condition
//! depends on, through the calls that were inlined, and which callers in
//! the whole program pass that function a value that is not a constant.
//! Those call sites are where a fix goes.
//!
//! The chain of functions comes from the DWARF frames (their linkage names
//! are the dumps' symbols: both come from the same compilation), or,
//! without debug info, from the shortest call path in the linked program
//! from the function holding the reference to a caller of
//! `rust_build_error`. Dependencies are followed through assignments and
//! call results inside each body, flow-insensitively and without aliasing:
//! a value written through a pointer is not seen.

use std::collections::{HashMap, HashSet, VecDeque};

use kmir::visit::{branch_conditions, operand_locals, value_sources};
use kmir::{Body, Callee, LocalId, Operand, TerminatorKind};
use program::{FnId, Program};

use crate::{BUILD_ERROR_SYMBOL, Explanation, Reference};

/// One argument of a function, by position (0-based) and name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Arg {
    pub index: usize,
    /// The parameter's name when the dump has it (`self` included).
    pub name: Option<String>,
}

impl std::fmt::Display for Arg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(n) => write!(f, "`{n}` (argument {})", self.index + 1),
            None => write!(f, "argument {}", self.index + 1),
        }
    }
}

/// A call site that passes the outermost function a value the optimiser
/// cannot see through.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Caller {
    pub caller: String,
    /// The call, in the caller's source (the file as the dump names it).
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// The arguments (of the callee) that get a value that is not a
    /// constant.
    pub args: Vec<Arg>,
}

/// What the dumps say about one reference.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct MirNotes {
    /// The function the chain ends in, as the program names it.
    pub function: Option<String>,
    /// The chain came from the call graph (no usable DWARF frames).
    pub chain_from_graph: Vec<String>,
    /// Its arguments the condition depends on.
    pub depends_on: Vec<Arg>,
    /// The condition also depends on values computed inside the chain (a
    /// call's result, a local never assigned), not only on arguments.
    pub depends_on_runtime: bool,
    /// The chain could be followed through every frame.
    pub complete: bool,
    /// Callers passing a value that is not a constant to a depended-on
    /// argument, ordered by caller name.
    pub callers: Vec<Caller>,
    /// Callers in the program at all (a function nothing calls is called
    /// from C or not at all).
    pub any_callers: bool,
}

/// How many callers are listed; the rest are counted.
pub const MAX_CALLERS: usize = 8;

fn body(program: &Program, f: FnId) -> Option<program::BodyRef<'_>> {
    program.body(f)
}

/// The chain innermost first: from the DWARF frames when every frame's
/// linkage name is a function of the program, else from the call graph.
fn chain(program: &Program, reference: &Reference) -> Option<(Vec<FnId>, Vec<Option<u32>>, bool)> {
    if let Explanation::Frames(frames) = &reference.explanation {
        let ids: Option<Vec<FnId>> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| {
                // The outermost frame of a `#[no_mangle]` function has only
                // its short name; the symbol table has its symbol.
                let raw = if i + 1 == frames.len() {
                    reference.symbol.as_ref().map(|s| s.raw.as_str())
                } else {
                    None
                }
                .or(f.raw.as_deref())?;
                program.lookup(raw)
            })
            .collect();
        if let Some(ids) = ids {
            // The line each frame's call (or the `build_error` call) is on.
            let lines = frames
                .iter()
                .map(|f| f.location.as_ref().map(|l| l.line))
                .collect();
            return Some((ids, lines, false));
        }
    }
    let outer = program.lookup(&reference.symbol.as_ref()?.raw)?;
    let target = program.lookup(BUILD_ERROR_SYMBOL)?;
    let path = shortest_path(program, outer, target)?;
    let lines = vec![None; path.len()];
    Some((path, lines, true))
}

/// The functions from `from` to the caller of `to`, innermost first.
fn shortest_path(program: &Program, from: FnId, to: FnId) -> Option<Vec<FnId>> {
    let mut prev: HashMap<FnId, FnId> = HashMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = HashSet::from([from]);
    while let Some(f) = queue.pop_front() {
        for (callee, _) in program.callees(f) {
            if callee == to {
                let mut path = vec![f];
                let mut at = f;
                while let Some(p) = prev.get(&at) {
                    path.push(*p);
                    at = *p;
                }
                return Some(path);
            }
            if seen.insert(callee) {
                prev.insert(callee, f);
                queue.push_back(callee);
            }
        }
    }
    None
}

/// The calls in `body` to `callee`, as (block, args), preferring those on
/// `line` (where the DWARF says the call is) when any is.
fn calls_to<'b>(body: &'b Body, callee: &str, line: Option<u32>) -> Vec<&'b [Operand]> {
    let calls: Vec<(u32, &[Operand])> = body
        .blocks
        .iter()
        .filter(|b| !b.is_cleanup)
        .filter_map(|b| match &b.terminator.kind {
            TerminatorKind::Call {
                callee: Callee::Direct { symbol },
                args,
                ..
            } if symbol == callee => Some((b.terminator.span.lo_line, args.as_slice())),
            _ => None,
        })
        .collect();
    let on_line: Vec<&[Operand]> = calls
        .iter()
        .filter(|(l, _)| Some(*l) == line)
        .map(|(_, a)| *a)
        .collect();
    if on_line.is_empty() {
        calls.into_iter().map(|(_, a)| a).collect()
    } else {
        on_line
    }
}

fn arg_name(body: &Body, index: usize) -> Option<String> {
    let local = index as LocalId + 1;
    body.var_names
        .iter()
        .find(|v| v.local == local)
        .map(|v| v.name.to_string())
}

/// What the dumps add to `reference`; `None` when the function holding it
/// is not in the program.
pub fn explain(program: &Program, reference: &Reference) -> Option<MirNotes> {
    let (chain, lines, from_graph) = chain(program, reference)?;
    let mut notes = MirNotes {
        function: chain.last().map(|f| program.function(*f).name.to_string()),
        ..MirNotes::default()
    };
    if from_graph {
        notes.chain_from_graph = chain
            .iter()
            .map(|f| program.function(*f).name.to_string())
            .collect();
    }
    // Innermost: the condition guarding the `rust_build_error` call.
    let inner = *chain.first()?;
    let inner_body = body(program, inner)?;
    let call_blocks: Vec<u32> = inner_body
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| {
            matches!(&b.terminator.kind, TerminatorKind::Call { callee: Callee::Direct { symbol }, .. }
                if symbol == BUILD_ERROR_SYMBOL)
        })
        .map(|(i, _)| i as u32)
        .collect();
    let mut current = {
        let mut seeds = Vec::new();
        for discr in branch_conditions(&inner_body, &call_blocks) {
            operand_locals(discr, &mut seeds);
        }
        value_sources(&inner_body, &seeds)
    };
    notes.depends_on_runtime = current.runtime;
    notes.complete = true;
    // Outward: each frame's arguments become the operands its caller
    // passed at the call that was inlined.
    for step in 1..chain.len() {
        let (callee, caller) = (chain[step - 1], chain[step]);
        let Some(caller_body) = body(program, caller) else {
            notes.complete = false;
            break;
        };
        let calls = calls_to(&caller_body, &program.function(callee).symbol, lines[step]);
        if calls.is_empty() {
            notes.complete = false;
            break;
        }
        // The callee's depended-on arguments are what the caller passed
        // for them; constants end the dependency there.
        let mut seeds = Vec::new();
        for args in calls {
            for &i in &current.args {
                // A closure's body takes its arguments one by one, but
                // its callers pass them as one tuple (the "rust-call"
                // ABI): an index past the operands is in that tuple.
                let operand = args
                    .get(i)
                    .or_else(|| args.last().filter(|_| i >= args.len()));
                if let Some(a) = operand {
                    operand_locals(a, &mut seeds);
                }
            }
        }
        current = value_sources(&caller_body, &seeds);
        notes.depends_on_runtime |= current.runtime;
    }
    if !notes.complete {
        return Some(notes);
    }
    let outer = *chain.last()?;
    let outer_body = body(program, outer)?;
    notes.depends_on = current
        .args
        .iter()
        .map(|&index| Arg {
            index,
            name: arg_name(&outer_body, index),
        })
        .collect();
    let callers = program.callers(outer);
    notes.any_callers = !callers.is_empty();
    for (caller, edge) in callers {
        let Some((krate, _)) = program.body_of(caller) else {
            continue;
        };
        let Some(caller_body) = program.body(caller) else {
            continue;
        };
        let Some(block) = caller_body.blocks.get(edge.block as usize) else {
            continue;
        };
        let TerminatorKind::Call { args, .. } = &block.terminator.kind else {
            continue;
        };
        let runtime: Vec<Arg> = notes
            .depends_on
            .iter()
            .filter(|a| {
                args.get(a.index).is_some_and(|op| {
                    let mut seeds = Vec::new();
                    operand_locals(op, &mut seeds);
                    let f = value_sources(&caller_body, &seeds);
                    !seeds.is_empty() && (f.runtime || !f.args.is_empty())
                })
            })
            .cloned()
            .collect();
        if !runtime.is_empty() {
            notes.callers.push(Caller {
                caller: program.function(caller).name.to_string(),
                file: krate.dump.file(edge.span.file).unwrap_or("").to_string(),
                line: edge.span.lo_line,
                column: edge.span.lo_col,
                args: runtime,
            });
        }
    }
    notes.callers.sort_by(|a, b| {
        (&a.caller, &a.file, a.line, a.column).cmp(&(&b.caller, &b.file, b.line, b.column))
    });
    notes.callers.dedup();
    Some(notes)
}
