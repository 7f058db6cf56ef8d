//! `kanalyze build-error`: why a `build_assert!` failed to build.
//!
//! The kernel's `build_assert!(cond)` expands to `if !cond { build_error(msg) }`,
//! and `build_error` is exported as `rust_build_error`, a symbol the kernel
//! does not link. When the optimiser cannot prove `cond`, a reference to it
//! stays in the machine code and the link fails naming only the symbol.
//! This crate reads the objects (files, archive members, directories of
//! them), finds every relocation against `rust_build_error` left in code or
//! data, and explains it from the object's DWARF: the source line of the
//! `build_assert!` (the innermost inlined frame), the calls it was inlined
//! through, and the real function the code is in. Without debug info it
//! falls back to the function symbol holding the reference.
//!
//! Modules, one job each: `inputs` (paths → objects and archive members),
//! `layout` (section addresses and relocated DWARF of a relocatable
//! object), `frames` (the inline chain at an address), `scan` (one object's
//! references), `render` (rustc-style text), `json` (the machine form).
//!
//! With `--dumps`, `mir` finds the chain's functions in the linked
//! `program`, which arguments of the outermost one the condition depends on,
//! and the callers passing run-time values.

pub mod frames;
pub mod inputs;
pub mod json;
pub mod layout;
pub mod mir;
pub mod render;
pub mod scan;

use std::path::PathBuf;

use rayon::prelude::*;

pub use inputs::InputError;

/// The symbol `build_error` is exported as (rust/build_error.rs).
pub const BUILD_ERROR_SYMBOL: &str = "rust_build_error";

/// A source position from DWARF.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceLoc {
    /// As the DWARF gives it: usually absolute (the compilation directory
    /// joined with the file name).
    pub file: String,
    pub line: u32,
    /// 1-based; `None` when the compiler recorded no column.
    pub column: Option<u32>,
}

/// One inline frame: a function and the position in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Demangled, without the hash.
    pub function: Option<String>,
    /// The linkage name as the DWARF gives it (the symbol of the instance,
    /// which kextract's dumps use too); a short name when there is none.
    pub raw: Option<String>,
    /// In the innermost frame, where the `build_error` call is; in the
    /// others, where the next inner frame was called (and inlined).
    pub location: Option<SourceLoc>,
}

/// What the DWARF says about one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Explanation {
    /// Innermost first; the last is the function the code is in.
    Frames(Vec<Frame>),
    /// The object has no debug info.
    NoDebugInfo,
    /// It has debug info, but none covers this address.
    NoLineInfo,
    /// Its debug info cannot be read; why.
    BrokenDebugInfo(String),
}

/// A symbol from the symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FnSymbol {
    pub raw: String,
    /// Demangled without the hash (`{:#}`); the raw name when not mangled.
    pub demangled: String,
}

/// A `rust_build_error` reference left in an object (or several identical
/// ones: same function, same chain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// `path` or `archive(member)`.
    pub object: String,
    pub section: String,
    /// Of the (first) relocation in `section`.
    pub offset: u64,
    /// The function (or data) symbol that holds the reference.
    pub symbol: Option<FnSymbol>,
    pub explanation: Explanation,
    /// How many relocations this report stands for.
    pub count: usize,
    /// Other objects with the same function's code and the same chain:
    /// what a kbuild tree holds twice (`vmlinux.o`, a module's composite
    /// `.o` linked from its parts with `ld -r`).
    pub also_in: Vec<String>,
}

impl Reference {
    fn same_report(&self, other: &Reference) -> bool {
        self.object == other.object
            && self.symbol == other.symbol
            && self.explanation == other.explanation
    }

    /// The position of the `build_error` call, when the DWARF gives one.
    pub fn assertion(&self) -> Option<&SourceLoc> {
        match &self.explanation {
            Explanation::Frames(frames) => frames.iter().find_map(|f| f.location.as_ref()),
            _ => None,
        }
    }

    /// The name of the function the code is in: the symbol's demangled
    /// name, else the outermost DWARF frame's.
    pub fn function(&self) -> Option<&str> {
        if let Some(s) = &self.symbol {
            return Some(&s.demangled);
        }
        match &self.explanation {
            Explanation::Frames(frames) => frames.last().and_then(|f| f.function.as_deref()),
            _ => None,
        }
    }
}

/// One report per function and chain: the same code found in several
/// objects is reported at the first object (by name) and lists the others.
fn merge_copies(mut references: Vec<Reference>) -> Vec<Reference> {
    references.sort_by(|a, b| a.object.cmp(&b.object).then(a.offset.cmp(&b.offset)));
    let mut out: Vec<Reference> = Vec::new();
    for r in references {
        let copy = out.iter_mut().find(|o| {
            o.object != r.object
                && o.symbol.is_some()
                && o.symbol == r.symbol
                && o.explanation == r.explanation
        });
        match copy {
            Some(o) => {
                if !o.also_in.contains(&r.object) {
                    o.also_in.push(r.object);
                }
            }
            None => out.push(r),
        }
    }
    out
}

/// `{:#}`: rustc-demangle's form without the hash, for legacy and v0
/// names alike; other names are returned as they are.
pub fn demangle(raw: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(raw))
}

/// Everything a run found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Objects read: plain files plus archive members.
    pub objects: usize,
    /// Of `objects`, how many were archive members.
    pub members: usize,
    pub archives: usize,
    /// Inputs that are not objects with machine code, with why.
    pub skipped: Vec<(String, &'static str)>,
    /// Inputs that could not be read; the run's result is incomplete.
    pub errors: Vec<InputError>,
    /// Ordered by the assertion's position, then function and object.
    pub references: Vec<Reference>,
}

/// Reads every object the paths stand for and finds its references.
/// The result does not depend on the order of the paths or the number of
/// threads: inputs are sorted and read in parallel into ordered results.
pub fn scan(paths: &[PathBuf]) -> Scan {
    let (found, errors, passed) = inputs::find(paths);
    let mut out = Scan {
        errors,
        skipped: passed,
        ..Scan::default()
    };
    type Scanned = Vec<Result<Vec<Reference>, InputError>>;
    let per_file: Vec<(inputs::Read, Scanned)> = found
        .par_iter()
        .map(|f| {
            let read = inputs::read(f);
            let scanned = read.objects.iter().map(scan::scan).collect();
            (read, scanned)
        })
        .collect();
    for (read, scanned) in per_file {
        out.objects += read.objects.len();
        out.members += read.objects.iter().filter(|o| o.in_archive).count();
        out.archives += read.archives;
        out.skipped.extend(read.skipped);
        out.errors.extend(read.errors);
        for result in scanned {
            match result {
                Ok(refs) => out.references.extend(refs),
                Err(e) => out.errors.push(e),
            }
        }
    }
    out.references = merge_copies(std::mem::take(&mut out.references));
    out.references.sort_by(|a, b| {
        (a.assertion(), a.function(), &a.object, a.offset).cmp(&(
            b.assertion(),
            b.function(),
            &b.object,
            b.offset,
        ))
    });
    out
}
