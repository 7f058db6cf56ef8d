//! All annotations of a program, by item path.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use kmir::{ItemAttrs, Span};

use crate::{Annotation, AnnotationError, KanalyzeAnnotation, Level, LockRef, PreemptCount, parse};

/// Everything known about one item. As in klint, the first annotation of a
/// kind wins; later ones are reported as warnings.
#[derive(Clone, Debug, Default)]
pub struct ItemAnnotations {
    /// `preempt_count` or one of its shorthands, with the attribute's span.
    pub preempt: Option<(PreemptCount, Span)>,
    pub drop_preempt: Option<(PreemptCount, Span)>,
    /// `report_preempt_count`.
    pub report: bool,
    pub dump_mir: bool,
    pub diagnostic_item: Option<String>,
    pub kanalyze: Vec<(KanalyzeAnnotation, Span)>,
    /// Index of the dump the item (and so every span above) comes from.
    pub crate_index: u32,
    /// The extractor's item kind (`fn`, `assoc fn`, `foreign function`,
    /// `struct`, `trait`, …).
    pub kind: String,
    pub span: Span,
}

impl ItemAnnotations {
    pub fn is_empty(&self) -> bool {
        self.preempt.is_none()
            && self.drop_preempt.is_none()
            && !self.report
            && !self.dump_mir
            && self.diagnostic_item.is_none()
            && self.kanalyze.is_empty()
    }
}

fn warning(span: Span, message: String, note: String) -> AnnotationError {
    AnnotationError {
        span,
        level: Level::Warning,
        message,
        help: None,
        note: Some(note),
    }
}

/// Parses the attributes of every item of every dump: item path →
/// annotations, plus every error, each with the index of the dump (crate)
/// its span belongs to. Items whose attributes all failed to parse are left
/// out of the map.
///
/// An item path is crate-qualified, so it normally appears in one dump; if
/// two dumps list the same path (the same crate dumped twice), the first
/// dump's item is used and the other is ignored, with a warning only when
/// its attributes differ.
pub fn collect<'a>(
    crates: impl Iterator<Item = (u32, &'a [ItemAttrs])>,
) -> (
    HashMap<String, ItemAnnotations>,
    Vec<(u32, AnnotationError)>,
) {
    let mut items: HashMap<String, ItemAnnotations> = HashMap::new();
    let mut errors = Vec::new();
    // Path → (dump, attribute texts) of the item that was used, to recognise
    // the same item coming from another dump.
    let mut seen: HashMap<&'a str, (u32, Vec<&'a str>)> = HashMap::new();
    // (crate name, diagnostic item name) → path of the item that has it.
    let mut diagnostic_items: HashMap<(String, String), String> = HashMap::new();

    for (index, attrs) in crates {
        for item in attrs {
            let texts: Vec<&str> = item.attrs.iter().map(|a| a.text.as_str()).collect();
            match seen.entry(item.path.as_str()) {
                Entry::Occupied(first) => {
                    let (first_index, first_texts) = first.get();
                    if *first_index != index {
                        if *first_texts != texts {
                            errors.push((
                                index,
                                warning(
                                    item.span,
                                    format!(
                                        "annotations of `{}` differ between two dumps; \
                                         this dump's are ignored",
                                        item.path
                                    ),
                                    format!("the annotations of dump #{first_index} are used"),
                                ),
                            ));
                        }
                        continue;
                    }
                    // The same path twice in one dump: treat as one item.
                }
                Entry::Vacant(slot) => {
                    slot.insert((index, texts));
                }
            }
            let entry = items
                .entry(item.path.to_string())
                .or_insert_with(|| ItemAnnotations {
                    crate_index: index,
                    kind: item.kind.to_string(),
                    span: item.span,
                    ..ItemAnnotations::default()
                });
            for attr in &item.attrs {
                match parse(attr) {
                    Ok(annotation) => {
                        if let Some(e) = add(entry, annotation, attr) {
                            errors.push((index, e));
                        }
                    }
                    Err(e) => errors.push((index, e)),
                }
            }
            if let Some(name) = &entry.diagnostic_item {
                let krate = item.path.split("::").next().unwrap_or_default().to_string();
                match diagnostic_items.entry((krate.clone(), name.clone())) {
                    Entry::Vacant(slot) => {
                        slot.insert(item.path.to_string());
                    }
                    Entry::Occupied(other) if *other.get() != item.path => {
                        errors.push((
                            index,
                            AnnotationError {
                                span: item.span,
                                level: Level::Error,
                                message: format!(
                                    "duplicate klint diagnostic item in crate `{krate}`: `{name}`"
                                ),
                                help: None,
                                note: Some(format!("`{}` is also `{name}`", other.get())),
                            },
                        ));
                    }
                    Entry::Occupied(_) => {}
                }
            }
        }
    }
    items.retain(|_, a| !a.is_empty());
    (items, errors)
}

/// Adds one annotation to an item; returns the warning for a duplicate.
fn add(
    item: &mut ItemAnnotations,
    annotation: Annotation,
    attr: &kmir::ToolAttr,
) -> Option<AnnotationError> {
    let span = attr.span;
    let ignored = |what: &str, first: Span| {
        Some(warning(
            span,
            format!("this `#[{}::{}]` is ignored", attr.tool, attr.name),
            format!(
                "only the first {what} of an item is used (line {}), as in klint",
                first.lo_line
            ),
        ))
    };
    match annotation {
        Annotation::PreemptCount(pc) => match &item.preempt {
            Some((_, first)) => return ignored("preemption count annotation", *first),
            None => item.preempt = Some((pc, span)),
        },
        Annotation::DropPreemptCount(pc) => match &item.drop_preempt {
            Some((_, first)) => return ignored("drop preemption count annotation", *first),
            None => item.drop_preempt = Some((pc, span)),
        },
        Annotation::ReportPreemptCount => item.report = true,
        Annotation::DumpMir => item.dump_mir = true,
        Annotation::DiagnosticItem(name) => match &item.diagnostic_item {
            Some(first) if *first != name => {
                return Some(warning(
                    span,
                    "this `#[klint::diagnostic_item]` is ignored".to_string(),
                    format!("the item is already the diagnostic item `{first}`"),
                ));
            }
            Some(_) => {}
            None => item.diagnostic_item = Some(name),
        },
        Annotation::Kanalyze(k) => {
            let singleton = |a: &KanalyzeAnnotation| {
                std::mem::discriminant(a) == std::mem::discriminant(&k)
                    && matches!(
                        a,
                        KanalyzeAnnotation::IrqHandler
                            | KanalyzeAnnotation::Failure
                            | KanalyzeAnnotation::LockClass(_)
                            | KanalyzeAnnotation::NestedLock { .. }
                            | KanalyzeAnnotation::RecursionBound { .. }
                    )
            };
            if let Some((_, first)) = item.kanalyze.iter().find(|(a, _)| *a == k || singleton(a)) {
                return ignored(&format!("`#[kanalyze::{}]`", attr.name), *first);
            }
            item.kanalyze.push((k, span));
        }
    }
    None
}

/// Checks the argument index of every `acquires`/`releases`/`must_hold`
/// against the arity of its function, which only the linked program knows
/// (`arity` gives it by item path; `None` when it is not known, e.g. a
/// foreign function no dump calls). An index past the last argument would
/// make the annotation match no lock at all, silently, so it is an error
/// and the annotation is removed from the item.
pub fn check_arity(
    items: &mut HashMap<String, ItemAnnotations>,
    arity: impl Fn(&str) -> Option<u32>,
) -> Vec<(u32, AnnotationError)> {
    let mut errors = Vec::new();
    for (path, item) in items.iter_mut() {
        let Some(arity) = arity(path) else {
            continue;
        };
        item.kanalyze.retain(|(annotation, span)| {
            let (name, index) = match annotation {
                KanalyzeAnnotation::Acquires(LockRef::Arg(n)) => ("acquires", *n),
                KanalyzeAnnotation::Releases(LockRef::Arg(n)) => ("releases", *n),
                KanalyzeAnnotation::MustHold(LockRef::Arg(n)) => ("must_hold", *n),
                _ => return true,
            };
            if index < arity {
                return true;
            }
            let takes = match arity {
                0 => "takes no arguments".to_string(),
                1 => "takes 1 argument".to_string(),
                n => format!("takes {n} arguments"),
            };
            let help = match (arity, name) {
                (0, "must_hold") => "a lock that must be held is named by an argument".to_string(),
                (0, _) => format!(
                    "if the lock is the one the return value designates, write \
                     `#[kanalyze::{name}(return)]`"
                ),
                (n, _) => format!(
                    "arguments are counted from 0 (`self` is 0), so the last one is {}",
                    n - 1
                ),
            };
            errors.push((
                item.crate_index,
                AnnotationError {
                    span: *span,
                    level: Level::Error,
                    message: format!(
                        "`#[kanalyze::{name}({index})]` names argument {index}, but `{path}` {takes}"
                    ),
                    help: Some(help),
                    note: None,
                },
            ));
            false
        });
    }
    // The map's order is not the program's: sort for stable output.
    errors.sort_by(|a, b| {
        (
            a.0,
            a.1.span.file,
            a.1.span.lo_line,
            a.1.span.lo_col,
            &a.1.message,
        )
            .cmp(&(
                b.0,
                b.1.span.file,
                b.1.span.lo_line,
                b.1.span.lo_col,
                &b.1.message,
            ))
    });
    items.retain(|_, a| !a.is_empty());
    errors
}
