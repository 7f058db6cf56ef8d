//! References as JSON, in the style of `kanalyze check --format json`
//! (docs/output.md): a versioned document with `findings` and a `summary`.

use serde::Serialize;

use crate::mir::MirNotes;
use crate::render::{Sources, TITLE};
use crate::{Explanation, Reference, Scan};

/// Bumped when this document changes incompatibly (docs/build-assert.md).
pub const JSON_VERSION: u32 = 1;

/// The kind every reference is reported as.
pub const KIND: &str = "build-error-reference";

#[derive(Serialize)]
pub struct Document {
    pub version: u32,
    pub findings: Vec<Finding>,
    pub summary: Summary,
}

#[derive(Serialize)]
pub struct Span {
    pub file: String,
    pub line: u32,
    pub column: Option<u32>,
}

/// One inline frame, innermost first, like the text's notes.
#[derive(Serialize)]
pub struct JsonFrame {
    pub function: Option<String>,
    /// Where the `build_error` call is (the first frame) or where the
    /// frame before it was called and inlined (the others).
    pub span: Option<Span>,
    pub inlined: bool,
}

#[derive(Serialize)]
pub struct Finding {
    pub id: String,
    pub kind: &'static str,
    pub severity: &'static str,
    pub message: &'static str,
    /// The `build_assert!`/`build_error` call, when the debug info gives it.
    pub span: Option<Span>,
    /// The function the code is in (demangled).
    pub function: Option<String>,
    pub symbol: Option<String>,
    pub object: String,
    pub section: String,
    pub offset: u64,
    pub references: usize,
    /// Other objects holding the same code with the same chain.
    pub also_in: Vec<String>,
    /// `frames` (DWARF gave the chain), `no-debug-info`, `no-line-info`
    /// or `broken-debug-info`.
    pub debug_info: &'static str,
    pub debug_info_error: Option<String>,
    pub frames: Vec<JsonFrame>,
    /// What `--dumps` added; `null` without dumps or when the function is
    /// not in them.
    pub mir: Option<MirNotes>,
}

#[derive(Serialize)]
pub struct Summary {
    pub objects: usize,
    pub archive_members: usize,
    pub archives: usize,
    pub errors: usize,
    pub skipped_inputs: Vec<Skipped>,
    pub unreadable_inputs: Vec<Unreadable>,
}

#[derive(Serialize)]
pub struct Skipped {
    pub input: String,
    pub reason: &'static str,
}

#[derive(Serialize)]
pub struct Unreadable {
    pub input: String,
    pub message: String,
}

/// A reference's identity across runs: the function it is in and the
/// assertion's file name and line, never offsets, directories or the
/// object's name (which a build renames with every codegen-unit split).
pub fn stable_id(r: &Reference) -> String {
    let file_line = r.assertion().map(|l| {
        let base = l.file.rsplit(['/', '\\']).next().unwrap_or(&l.file);
        format!("{base}:{}", l.line)
    });
    // FNV-1a, as `report::stable_id`: tiny and fixed forever.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [
        KIND,
        r.function().unwrap_or(""),
        file_line.as_deref().unwrap_or(""),
    ] {
        for b in part.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("KA{h:016x}")
}

/// The document; `mir[i]` is what the dumps say about reference `i`
/// (empty without `--dumps`).
pub fn document(scan: &Scan, mir: &[Option<MirNotes>], sources: &Sources) -> Document {
    let span = |l: &crate::SourceLoc| Span {
        file: sources.display(&l.file),
        line: l.line,
        column: l.column,
    };
    let findings = scan
        .references
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (debug_info, error, frames) = match &r.explanation {
                Explanation::Frames(frames) => {
                    let last = frames.len().saturating_sub(1);
                    let frames = frames
                        .iter()
                        .enumerate()
                        .map(|(i, f)| JsonFrame {
                            function: f.function.clone(),
                            span: f.location.as_ref().map(span),
                            inlined: i < last,
                        })
                        .collect();
                    ("frames", None, frames)
                }
                Explanation::NoDebugInfo => ("no-debug-info", None, Vec::new()),
                Explanation::NoLineInfo => ("no-line-info", None, Vec::new()),
                Explanation::BrokenDebugInfo(e) => {
                    ("broken-debug-info", Some(e.clone()), Vec::new())
                }
            };
            Finding {
                id: stable_id(r),
                kind: KIND,
                severity: "error",
                message: TITLE,
                span: r.assertion().map(span),
                function: r.function().map(str::to_string),
                symbol: r.symbol.as_ref().map(|s| s.raw.clone()),
                object: r.object.clone(),
                section: r.section.clone(),
                offset: r.offset,
                references: r.count,
                also_in: r.also_in.clone(),
                debug_info,
                debug_info_error: error,
                frames,
                mir: mir.get(i).cloned().flatten(),
            }
        })
        .collect();
    Document {
        version: JSON_VERSION,
        findings,
        summary: Summary {
            objects: scan.objects,
            archive_members: scan.members,
            archives: scan.archives,
            errors: scan.references.len(),
            skipped_inputs: scan
                .skipped
                .iter()
                .map(|(input, reason)| Skipped {
                    input: input.clone(),
                    reason,
                })
                .collect(),
            unreadable_inputs: scan
                .errors
                .iter()
                .map(|e| Unreadable {
                    input: e.name.clone(),
                    message: e.message.clone(),
                })
                .collect(),
        },
    }
}
