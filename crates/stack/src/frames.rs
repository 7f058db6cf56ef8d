//! What each function of the program adds to the stack when it is called.
//!
//! * A function whose symbol an object defines has a frame of its own: the
//!   `.stack_sizes` entry, or, without one, an unknown frame (never 0).
//! * A function with a body that no object defines, of a crate whose
//!   objects were read, was inlined into every caller: its frame is part of
//!   theirs, and its callees are theirs.
//! * A function of a crate none of whose objects was read is unknown: its
//!   frame was not measured.
//! * A C function uses what the spec's `[stack]` table says (its callees
//!   included), else its `.su` frame plus the default for what it calls,
//!   else the default; with no default it is unknown.
//! * An indirect call nothing in the program satisfies goes to C: the
//!   default for C functions.
//! * A Rust function of a crate without dumps, or a compiler shim with no
//!   body, that no object defines, is unknown.

use std::collections::{HashMap, HashSet};

use program::{CrateIdx, FnId, FnKind, Program};

use crate::objects::{Frames, SuFrame, SymbolFrame};

/// Where a C function's usage comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CSource {
    /// The spec's `[stack.fn]` table.
    Spec,
    /// Its own frame from a `.su` file, plus the default for its callees.
    Su { frame: u64, default: u64 },
    /// The default for C functions no entry names.
    Default,
}

/// Why a function's frame is not known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unknown {
    /// An object defines it, but no `.stack_sizes` entry gives its frame
    /// (a dynamic stack allocation; an object built without
    /// `-Zemit-stack-sizes`).
    NoSize { object: String },
    /// None of the objects read defines a function of its crate.
    NoObject { krate: String },
    /// A C function no `[stack]` entry or `.su` file names, with no default.
    Foreign,
    /// A C function whose `.su` frame grows at run time.
    DynamicC { at: String },
    /// A Rust function of a crate without dumps, no object defines.
    Outside,
    /// A compiler shim with no body in the dumps, no object defines: what
    /// it calls is not known.
    Shim,
}

/// What a call of one function puts on the stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A frame of its own, in bytes (the return address not included).
    Own(u64),
    /// Inlined into its callers: nothing of its own.
    Inlined,
    /// A C function's usage, its callees included.
    C {
        bytes: u64,
        source: CSource,
    },
    Unknown(Unknown),
}

impl Frame {
    /// Bytes the call adds: the frame and, unless it was inlined, the
    /// return address (`ret`). An unknown frame adds only what is certain:
    /// the return address.
    pub fn cost(&self, ret: u64) -> u64 {
        match self {
            Frame::Own(b) => b.saturating_add(ret),
            Frame::C { bytes, .. } => bytes.saturating_add(ret),
            Frame::Inlined => 0,
            Frame::Unknown(_) => ret,
        }
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Frame::Unknown(_))
    }

    /// The frame's bytes as the JSON and the text show them (`None` when
    /// unknown; 0 when inlined).
    pub fn bytes(&self) -> Option<u64> {
        match self {
            Frame::Own(b) | Frame::C { bytes: b, .. } => Some(*b),
            Frame::Inlined => Some(0),
            Frame::Unknown(_) => None,
        }
    }

    /// A short word for the kind, for the JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            Frame::Own(_) => "own",
            Frame::Inlined => "inlined",
            Frame::C { .. } => "c",
            Frame::Unknown(_) => "unknown",
        }
    }
}

/// How C functions are costed.
#[derive(Clone, Debug, Default)]
pub struct CStack<'a> {
    /// The `[stack]` table of the spec.
    pub spec: Option<&'a spec::Spec>,
    /// What a C function no entry names uses (`--c-default`, else the
    /// spec's `[stack] default`).
    pub default: Option<u64>,
    pub su: Option<&'a HashMap<String, SuFrame>>,
}

impl CStack<'_> {
    /// An indirect call that nothing in the program satisfies goes to
    /// code outside it, C: the default.
    fn outside(&self) -> Frame {
        match self.default {
            Some(bytes) => Frame::C {
                bytes,
                source: CSource::Default,
            },
            None => Frame::Unknown(Unknown::Foreign),
        }
    }

    fn frame(&self, name: &str) -> Frame {
        if let Some(bytes) = self.spec.and_then(|s| s.stack(name)) {
            return Frame::C {
                bytes,
                source: CSource::Spec,
            };
        }
        if let Some(su) = self.su.and_then(|su| su.get(name)) {
            if su.dynamic {
                return Frame::Unknown(Unknown::DynamicC { at: su.at.clone() });
            }
            if let Some(default) = self.default {
                return Frame::C {
                    bytes: su.bytes.saturating_add(default),
                    source: CSource::Su {
                        frame: su.bytes,
                        default,
                    },
                };
            }
            return Frame::Unknown(Unknown::Foreign);
        }
        match self.default {
            Some(bytes) => Frame::C {
                bytes,
                source: CSource::Default,
            },
            None => Frame::Unknown(Unknown::Foreign),
        }
    }
}

/// Every function's frame, by `FnId`.
pub fn frames(program: &Program, objects: &Frames, c: &CStack<'_>) -> Vec<Frame> {
    let symbols: HashMap<&str, SymbolFrame> = objects.symbols();
    // The crates whose objects were read: one of their codegenned
    // instances is defined by an object. A function no object defines was
    // inlined if one of them has it (its own crate may have no code at
    // all: `pin_init`'s functions are all generic or inline, and the
    // crates using them have them).
    let mut read: HashSet<CrateIdx> = HashSet::new();
    for (i, krate) in program.crates.iter().enumerate() {
        if krate
            .dump
            .instances
            .iter()
            .any(|inst| inst.codegenned && symbols.contains_key(inst.symbol.as_str()))
        {
            read.insert(i as CrateIdx);
        }
    }
    let mut in_read: HashSet<&str> = HashSet::new();
    for &i in &read {
        for inst in &program.crates[i as usize].dump.instances {
            in_read.insert(inst.symbol.as_str());
        }
    }
    (0..program.functions.len())
        .map(|i| {
            let f = program.function(FnId(i as u32));
            if let Some(s) = symbols.get(f.symbol.as_str()) {
                if let FnKind::Foreign = f.kind {
                    // A C function defined by an object read (the kernel's
                    // helpers): `.stack_sizes` only if it was built with
                    // clang's `-fstack-size-section`; else as any C function.
                    if let Some(bytes) = s.bytes {
                        return Frame::Own(bytes);
                    }
                    return c.frame(&f.symbol);
                }
                return match s.bytes {
                    Some(bytes) => Frame::Own(bytes),
                    None => Frame::Unknown(Unknown::NoSize {
                        object: s.object.clone(),
                    }),
                };
            }
            match &f.kind {
                FnKind::Body { krate, .. } => {
                    if in_read.contains(f.symbol.as_str()) {
                        Frame::Inlined
                    } else {
                        Frame::Unknown(Unknown::NoObject {
                            krate: program.crates[*krate as usize]
                                .dump
                                .header
                                .crate_name
                                .to_string(),
                        })
                    }
                }
                FnKind::Foreign => c.frame(&f.symbol),
                FnKind::Unknown(_) => c.outside(),
                FnKind::Shim => Frame::Unknown(Unknown::Shim),
                FnKind::Upstream { .. } => Frame::Unknown(Unknown::Outside),
            }
        })
        .collect()
}

/// Whether the walk goes on below `f`: the program knows its callees.
pub fn walks_into(program: &Program, f: FnId) -> bool {
    matches!(program.function(f).kind, FnKind::Body { .. })
}
