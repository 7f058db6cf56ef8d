//! References as rustc-style diagnostics (annotate-snippets, like
//! `kanalyze check`'s findings): the error at the `build_assert!`, a
//! `which is called from here` note per inlined frame outward, and where
//! in the object the reference is.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use annotate_snippets::{AnnotationKind, Group, Level, Origin, Renderer, Snippet};

use crate::mir::MirNotes;
use crate::{Explanation, Frame, Reference, Scan, SourceLoc};

/// The title every reference gets (klint's wording, so that people who
/// know one tool recognise the other).
pub const TITLE: &str = "this `build_error` reference is not optimized away";

/// Source files, read once, and how to shorten their names.
pub struct Sources {
    files: HashMap<String, Option<String>>,
    /// Tried in order for relative file names, and stripped from absolute
    /// ones for display.
    roots: Vec<PathBuf>,
}

impl Sources {
    /// `roots` are tried in order; the current directory is tried last.
    pub fn new(mut roots: Vec<PathBuf>) -> Sources {
        if let Ok(cwd) = std::env::current_dir() {
            roots.push(cwd);
        }
        Sources {
            files: HashMap::new(),
            roots,
        }
    }

    fn load(&mut self, name: &str) {
        if self.files.contains_key(name) {
            return;
        }
        let path = Path::new(name);
        let text = if path.is_absolute() {
            std::fs::read_to_string(path).ok()
        } else {
            self.roots
                .iter()
                .find_map(|r| std::fs::read_to_string(r.join(path)).ok())
        };
        self.files.insert(name.to_string(), text);
    }

    fn text(&self, name: &str) -> Option<&str> {
        self.files.get(name).and_then(|t| t.as_deref())
    }

    /// A file name as shown: relative to the first root it is under.
    pub fn display(&self, name: &str) -> String {
        let path = Path::new(name);
        for root in &self.roots {
            if let Ok(rest) = path.strip_prefix(root) {
                return rest.display().to_string();
            }
        }
        name.to_string()
    }
}

/// Byte offset of 1-based char column `col` in `line`.
fn byte_of_column(line: &str, col: usize) -> usize {
    line.char_indices()
        .nth(col.saturating_sub(1))
        .map_or(line.len(), |(i, _)| i)
}

/// DWARF gives where a call starts, not where it ends: the end is guessed
/// from the text as a path or method chain (`a.b::<T>`, `m!`) followed by
/// balanced brackets, on the same line. Falls back to the rest of the line.
fn expression_end(line: &str, start: usize) -> usize {
    let bytes = line.as_bytes();
    let path_char = |c: u8| c.is_ascii_alphanumeric() || c >= 0x80 || b"_:.!<>&$".contains(&c);
    let mut i = start;
    loop {
        let from = i;
        while i < bytes.len() && path_char(bytes[i]) {
            // A turbofish's arguments may hold commas and spaces:
            // `f::<A, B>(x)` goes to its `>`.
            if bytes[i] == b'<' && i >= 2 && &bytes[i - 2..i] == b"::" {
                let mut depth = 0usize;
                let close = bytes[i..].iter().position(|&c| {
                    match c {
                        b'<' => depth += 1,
                        b'>' => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                    depth == 0
                });
                match close {
                    Some(j) => {
                        i += j + 1;
                        continue;
                    }
                    None => return line.trim_end().len().max(start),
                }
            }
            i += 1;
        }
        // Arguments or an index, each balanced; a chain goes on after them
        // (`a.b(x).c(y)`, `f(x)?.g()`).
        while i < bytes.len() && matches!(bytes[i], b'(' | b'[') {
            match closing(bytes, i) {
                Some(j) => i = j + 1,
                None => return line.trim_end().len().max(start),
            }
        }
        while i < bytes.len() && bytes[i] == b'?' {
            i += 1;
        }
        if i == from || i >= bytes.len() || bytes[i] != b'.' {
            break;
        }
    }
    if i > start {
        i
    } else {
        // Nothing call-like: one character.
        start + line[start..].chars().next().map_or(0, char::len_utf8)
    }
}

/// The index of the bracket closing the one at `open`, on this line.
fn closing(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, &c) in bytes.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// A snippet for `loc`, or its `file:line:col` when the source is not
/// readable.
fn element<'a>(
    sources: &'a Sources,
    loc: &'a SourceLoc,
    shown: &'a str,
    label: Option<&'a str>,
    kind: AnnotationKind,
) -> Result<Snippet<'a, annotate_snippets::Annotation<'a>>, Origin<'a>> {
    let line_no = loc.line as usize;
    let col = loc.column.unwrap_or(1) as usize;
    if let Some(text) = sources.text(&loc.file)
        && let Some(line) = text.split_inclusive('\n').nth(line_no.saturating_sub(1))
        && line_no >= 1
    {
        let body = line.trim_end_matches(['\n', '\r']);
        let start = if loc.column.is_some() {
            byte_of_column(body, col)
        } else {
            // No column: the line's text, without its indentation.
            body.len() - body.trim_start().len()
        };
        let end = if loc.column.is_some() {
            expression_end(body, start)
        } else {
            body.trim_end().len()
        };
        if start < body.len() {
            let mut annotation = kind.span(start..end.max(start + 1).min(body.len()));
            if let Some(l) = label {
                annotation = annotation.label(l);
            }
            return Ok(Snippet::source(line)
                .line_start(line_no)
                .path(shown)
                .annotation(annotation));
        }
    }
    let origin = Origin::path(shown).line(line_no);
    Err(match loc.column {
        Some(c) => origin.char_column(c as usize),
        None => origin,
    })
}

fn with_location<'a>(
    group: Group<'a>,
    sources: &'a Sources,
    loc: &'a SourceLoc,
    shown: &'a str,
    label: Option<&'a str>,
    kind: AnnotationKind,
) -> Group<'a> {
    match element(sources, loc, shown, label, kind) {
        Ok(s) => group.element(s),
        Err(o) => group.element(o),
    }
}

fn quoted(name: Option<&str>) -> String {
    match name {
        Some(n) => format!("`{n}`"),
        None => "an unnamed function".to_string(),
    }
}

/// Where the reference is in the object.
fn whereabouts(r: &Reference) -> String {
    let mut s = format!(
        "the reference is in `{}`, section `{}`, offset {:#x}",
        r.object, r.section, r.offset
    );
    if let Some(sym) = &r.symbol
        && sym.raw != sym.demangled
    {
        s.push_str(&format!(", symbol `{}`", sym.raw));
    }
    if !r.also_in.is_empty() {
        let shown: Vec<String> = r.also_in.iter().take(3).map(|o| format!("`{o}`")).collect();
        let more = r.also_in.len().saturating_sub(3);
        s.push_str(&format!("; the same code is also in {}", shown.join(", ")));
        if more > 0 {
            s.push_str(&format!(" and {more} more objects"));
        }
    }
    if r.count > 1 {
        s.push_str(&format!(" ({} references with the same chain)", r.count));
    }
    s
}

const HELP: &str = "`build_assert!` must be proven at compile time after inlining: make every \
call on this chain pass values the optimiser can see (constants), or check the value at run \
time instead";

/// One reference as a diagnostic, ending with a newline.
pub fn render(reference: &Reference, sources: &mut Sources) -> String {
    render_with_mir(reference, None, sources)
}

/// The notes `--dumps` adds, as plain lines.
pub fn mir_lines(reference: &Reference, mir: &MirNotes, sources: &Sources) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let f = quoted(mir.function.as_deref().or(reference.function()));
    if !mir.chain_from_graph.is_empty() {
        let chain: Vec<String> = mir
            .chain_from_graph
            .iter()
            .rev()
            .map(|n| format!("`{n}`"))
            .collect();
        out.push((
            false,
            format!(
                "the dumps' call graph leads to `rust_build_error` through {}",
                chain.join(" → ")
            ),
        ));
    }
    if !mir.complete {
        out.push((
            false,
            format!("the dumps lack a function of the chain: what the condition depends on in {f} is not known"),
        ));
        return out;
    }
    if mir.depends_on.is_empty() {
        out.push((
            false,
            if mir.depends_on_runtime {
                format!(
                    "the condition depends on no argument of {f}, but on values computed at run time on the way (a call's result, memory read through a pointer)"
                )
            } else {
                format!(
                    "the condition depends on no argument of {f} and on no run-time value: it is made of the constants passed on the way, and the assertion fails for them"
                )
            },
        ));
        return out;
    }
    let args: Vec<String> = mir.depends_on.iter().map(ToString::to_string).collect();
    let runtime = if mir.depends_on_runtime {
        ", and on values computed on the way"
    } else {
        ""
    };
    out.push((
        false,
        format!(
            "the condition depends on {} of {f}{runtime}",
            args.join(", ")
        ),
    ));
    if !mir.any_callers {
        out.push((
            false,
            format!("nothing in the dumps calls {f}: it is called from C, through a pointer, or not at all"),
        ));
    } else if mir.callers.is_empty() {
        out.push((
            false,
            format!("every caller of {f} in the dumps passes constants there"),
        ));
    }
    for c in mir.callers.iter().take(crate::mir::MAX_CALLERS) {
        let args: Vec<String> = c.args.iter().map(ToString::to_string).collect();
        out.push((
            true,
            format!(
                "`{}` passes a value that is not a constant as {} at {}:{}:{}",
                c.caller,
                args.join(", "),
                sources.display(&c.file),
                c.line,
                c.column
            ),
        ));
    }
    if mir.callers.len() > crate::mir::MAX_CALLERS {
        out.push((
            true,
            format!(
                "… and {} more callers",
                mir.callers.len() - crate::mir::MAX_CALLERS
            ),
        ));
    }
    out
}

/// One reference as a diagnostic with what the dumps add.
pub fn render_with_mir(
    reference: &Reference,
    mir: Option<&MirNotes>,
    sources: &mut Sources,
) -> String {
    let extra = mir
        .map(|m| mir_lines(reference, m, sources))
        .unwrap_or_default();
    if let Explanation::Frames(frames) = &reference.explanation {
        for loc in frames.iter().filter_map(|f| f.location.as_ref()) {
            sources.load(&loc.file);
        }
    }
    let sources: &Sources = sources;
    let groups = match &reference.explanation {
        Explanation::Frames(frames) => {
            return frames_diagnostic(reference, frames, &extra, sources);
        }
        Explanation::NoDebugInfo => without_frames(
            reference,
            &extra,
            format!(
                "`{}` has no debug info, so the `build_assert!` and the calls inlined into {} cannot be shown",
                reference.object,
                quoted(reference.function())
            ),
            Some(
                "rebuild with debug info (`-Cdebuginfo=2`; the kernel's CONFIG_DEBUG_INFO) to see them",
            ),
        ),
        Explanation::NoLineInfo => without_frames(
            reference,
            &extra,
            format!(
                "the debug info of `{}` has no line for this code",
                reference.object
            ),
            None,
        ),
        Explanation::BrokenDebugInfo(why) => without_frames(
            reference,
            &extra,
            format!(
                "the debug info of `{}` cannot be used: {why}",
                reference.object
            ),
            None,
        ),
    };
    let mut out = Renderer::plain().render(&groups);
    out.push('\n');
    out
}

/// The fallback without frames: the function symbol and why there is no more.
fn without_frames<'a>(
    reference: &Reference,
    extra: &'a [(bool, String)],
    why: String,
    help: Option<&'static str>,
) -> Vec<Group<'a>> {
    let title = format!("{TITLE}, in {}", quoted(reference.function()));
    let mut group = Group::with_title(Level::ERROR.primary_title(title))
        .element(Level::NOTE.message(why))
        .element(Level::NOTE.message(whereabouts(reference)));
    for (help, line) in extra {
        let level = if *help { Level::HELP } else { Level::NOTE };
        group = group.element(level.message(line.as_str()));
    }
    if let Some(h) = help {
        group = group.element(Level::HELP.message(h));
    }
    vec![group]
}

fn frames_diagnostic(
    reference: &Reference,
    frames: &[Frame],
    extra: &[(bool, String)],
    sources: &Sources,
) -> String {
    // Names shown for each frame's file, kept alive for the groups.
    let shown: Vec<Option<String>> = frames
        .iter()
        .map(|f| f.location.as_ref().map(|l| sources.display(&l.file)))
        .collect();
    let last = frames.len() - 1;
    let inner = quoted(frames[0].function.as_deref());
    // rustc's debug info places a call made by a macro of the same crate
    // in the macro's definition (only other crates' macros are collapsed
    // to their invocation): a `$crate` or `$name` on the line shows it.
    let in_macro_body = frames[0]
        .location
        .as_ref()
        .and_then(|l| {
            let text = sources.text(&l.file)?;
            text.lines().nth((l.line as usize).checked_sub(1)?)
        })
        .is_some_and(is_macro_body);
    let macro_note = in_macro_body.then(|| {
        format!(
            "this line is in a `macro_rules!` definition: the debug info of a macro used in its own crate points there; the invocation is in {inner}"
        )
    });
    let where_note = if last == 0 {
        format!("in {inner}, which is not inlined: the condition must be known inside it")
    } else {
        format!("in {inner}, inlined")
    };
    let titles: Vec<String> = frames
        .iter()
        .enumerate()
        .map(|(i, frame)| {
            let f = quoted(frame.function.as_deref());
            let inlined = if i == last { "" } else { " (inlined)" };
            format!("which is called from here, in {f}{inlined}")
        })
        .collect();
    // The symbol's name when the DWARF names the outermost function
    // differently (a `#[no_mangle]` function's DWARF name is short).
    let code_in = reference
        .symbol
        .as_ref()
        .filter(|sym| frames[last].function.as_deref() != Some(sym.demangled.as_str()))
        .map(|sym| {
            format!(
                "its code is in `{}`, where the calls above were inlined",
                sym.demangled
            )
        });
    let whereabouts = whereabouts(reference);

    let mut main = Group::with_title(Level::ERROR.primary_title(TITLE));
    if let (Some(loc), Some(name)) = (&frames[0].location, &shown[0]) {
        main = with_location(
            main,
            sources,
            loc,
            name,
            Some("`rust_build_error` is still called here"),
            AnnotationKind::Primary,
        );
    }
    let mut main = main.element(Level::NOTE.message(where_note.as_str()));
    if let Some(m) = &macro_note {
        main = main.element(Level::NOTE.message(m.as_str()));
    }
    let mut groups = vec![main];
    for i in 1..frames.len() {
        let mut g = Group::with_title(Level::NOTE.secondary_title(titles[i].as_str()));
        if let (Some(loc), Some(name)) = (&frames[i].location, &shown[i]) {
            g = with_location(g, sources, loc, name, None, AnnotationKind::Context);
        }
        groups.push(g);
    }
    // The closing notes go with the outermost frame (or the error itself
    // when nothing was inlined).
    if let Some(mut g) = groups.pop() {
        if let Some(c) = &code_in {
            g = g.element(Level::NOTE.message(c.as_str()));
        }
        g = g.element(Level::NOTE.message(whereabouts.as_str()));
        for (help, line) in extra {
            let level = if *help { Level::HELP } else { Level::NOTE };
            g = g.element(level.message(line.as_str()));
        }
        groups.push(g.element(Level::HELP.message(HELP)));
    }
    let mut out = Renderer::plain().render(&groups);
    out.push('\n');
    out
}

/// Whether a source line is in a `macro_rules!` body: it names a
/// metavariable or `$crate`.
fn is_macro_body(line: &str) -> bool {
    line.as_bytes()
        .windows(2)
        .any(|w| w[0] == b'$' && (w[1].is_ascii_alphabetic() || w[1] == b'_'))
}

/// The closing line: what was found and what was read.
pub fn summary_line(scan: &Scan) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let found = match scan.references.len() {
        0 => "no `rust_build_error` reference".to_string(),
        n => plural(n, "error", "errors"),
    };
    let mut read = plural(scan.objects, "object", "objects");
    if scan.members > 0 {
        read.push_str(&format!(
            " ({} of {})",
            plural(scan.members, "archive member", "archive members"),
            plural(scan.archives, "archive", "archives")
        ));
    }
    let mut line = format!("kanalyze: {found}; read {read}");
    if !scan.skipped.is_empty() {
        line.push_str(&format!(
            ", {} skipped",
            plural(scan.skipped.len(), "input", "inputs")
        ));
    }
    if !scan.errors.is_empty() {
        line.push_str(&format!(
            ", {} unreadable",
            plural(scan.errors.len(), "input", "inputs")
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::expression_end;

    fn span(line: &str, start: usize) -> &str {
        &line[start..expression_end(line, start)]
    }

    #[test]
    fn calls_and_macros_end_at_their_closing_bracket() {
        assert_eq!(span("    r.read_at(i * 4)", 4), "r.read_at(i * 4)");
        assert_eq!(
            span("    build_assert!(off < 0x100);", 4),
            "build_assert!(off < 0x100)"
        );
        assert_eq!(span("    check_offset(off);", 4), "check_offset(off)");
        assert_eq!(span("    self.read_n::<3>() + 1", 4), "self.read_n::<3>()");
        assert_eq!(span("    a.b(x).c(y);", 4), "a.b(x).c(y)");
        // Unbalanced on this line: the rest of the line.
        assert_eq!(span("    f(a,   ", 4), "f(a,");
        // Nothing call-like: one character.
        assert_eq!(span("    + x", 4), "+");
        assert_eq!(span("    é(x)", 4), "é(x)");
        assert_eq!(
            span("    let v = f::<Self, L::T>(self, o.offset());", 12),
            "f::<Self, L::T>(self, o.offset())"
        );
        assert_eq!(
            span("            $crate::f(concat!(\"a\", $c));", 12),
            "$crate::f(concat!(\"a\", $c))"
        );
    }

    #[test]
    fn macro_bodies_are_told_by_their_metavariables() {
        assert!(super::is_macro_body("  $crate::build_error(msg);"));
        assert!(super::is_macro_body("  if !$cond {"));
        assert!(!super::is_macro_body("  let price = \"$5\";"));
    }
}
