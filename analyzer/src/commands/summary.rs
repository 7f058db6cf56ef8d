//! `kanalyze summary DIR FN`: the inferred summary of one instance and why.
//! `describe` is also what the HTML report shows for the functions on a
//! finding's chain, so both say the same.

use std::io::{self, BufWriter, Write};

use analysis::{Source, Summary};
use program::{FnId, FnKind};
use report::html::SummaryLine;

use crate::cli::SummaryArgs;
use crate::pipeline::{Analysed, analyse};
use crate::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};

pub fn run(args: &SummaryArgs) -> u8 {
    let mut args = args.clone();
    if let Err(code) = crate::config::resolve(&mut args.analysis) {
        return code;
    }
    let args = &args;
    let Some(a) = analyse(std::slice::from_ref(&args.path), &args.analysis) else {
        return EXIT_BAD_INPUT;
    };
    let Some(id) = super::resolve_function(&a.program, &args.function) else {
        return EXIT_BAD_INPUT;
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = (|| -> io::Result<()> {
        writeln!(out, "{}", a.program.function(id).name)?;
        for line in describe(&a, id) {
            writeln!(out, "{}", line.text_line())?;
        }
        Ok(())
    })()
    .and_then(|()| out.flush());
    if super::output_failed(result) {
        EXIT_FAILURE
    } else {
        EXIT_OK
    }
}

/// The summary of `id` and why it is what it is, one line per fact, in
/// the order `kanalyze summary` prints them (after the name). A `why`
/// line links to the callee whose expectation it inherits.
pub fn describe(a: &Analysed, id: FnId) -> Vec<SummaryLine> {
    let mut lines = Vec::new();
    let s = &a.preempt.summaries[id.index()];
    what_it_is(a, id, &mut lines);
    count_and_expectation(s, &mut lines);
    if s.expect_last != annotations::ExpectRange::TOP {
        if_last_reference(s, &mut lines);
    }
    memory(s, &mut lines);
    recognised(s, &mut lines);
    locks_taken(s, &mut lines);
    lines.push(SummaryLine::keyed("from", source_text(&s.source)));
    why(a, id, s, &mut lines);
    lines
}

/// The function's symbol, item path and kind.
fn what_it_is(a: &Analysed, id: FnId, lines: &mut Vec<SummaryLine>) {
    let f = a.program.function(id);
    lines.push(SummaryLine::keyed("symbol", f.symbol.clone()));
    if !f.item_path.is_empty() {
        lines.push(SummaryLine::keyed("item", f.item_path.clone()));
    }
    let kind = match &f.kind {
        FnKind::Body { krate, .. } => format!(
            "body in crate `{}`",
            a.program.crates[*krate as usize].dump.header.crate_name
        ),
        FnKind::Foreign => "C function".into(),
        FnKind::Upstream { krate } => {
            format!("Rust function of crate `{krate}` (not extracted)")
        }
        FnKind::Shim => "compiler shim without body".into(),
        FnKind::Unknown(_) => "code outside the program".into(),
    };
    lines.push(SummaryLine::keyed("kind", kind));
}

/// What it does to the preemption count (per case, when it has several
/// or takes locks) and what it expects of it.
fn count_and_expectation(s: &Summary, lines: &mut Vec<SummaryLine>) {
    lines.push(SummaryLine::keyed("adjustment", s.adjust_text()));
    if s.cases.len() > 1 || s.cases.iter().any(|c| c.has_lock_effect()) {
        for c in &s.cases {
            lines.push(SummaryLine::detail(
                c.describe_split(s.split_field, s.split_value),
            ));
        }
    }
    lines.push(SummaryLine::keyed("expectation", s.expect.to_string()));
    for (when, e) in &s.expect_when {
        lines.push(SummaryLine::detail(format!(
            "{e} {}",
            when_text(when, s.split_field)
        )));
    }
}

/// What it expects when a reference it drops is the last one, and from
/// what it drops it.
fn if_last_reference(s: &Summary, lines: &mut Vec<SummaryLine>) {
    lines.push(SummaryLine::plain(format!(
        "if a reference it drops is the last one: {}",
        s.expect_last.intersect(&s.expect)
    )));
    if let Some(from) = &s.last_from {
        let args: Vec<String> = from.iter().map(|k| format!("`arg{k}`")).collect();
        lines.push(SummaryLine::detail(format!(
            "only if what {} holds is the last reference (a caller keeping it alive needs nothing)",
            args.join(", ")
        )));
    }
    if let Some(f) = s.last_field {
        lines.push(SummaryLine::detail(format!(
            "and only from its field `.{f}` (of what `arg0` holds or points to: the other fields and the `Drop` impl release no last reference)"
        )));
    }
    if let Some(p) = &s.last_place
        && (p.variants.is_some() || !p.steps.is_empty())
    {
        lines.push(SummaryLine::detail(format!(
            "from dropping {} (`*arg0`: what `arg0` holds or points to)",
            p.describe()
        )));
        // The fields on the way, by name (what a same-object declaration
        // matches its back pointer against).
        let named: Vec<&str> = p
            .labels
            .iter()
            .filter(|l| !l.is_empty())
            .map(|l| l.rsplit("::").next().unwrap_or(l))
            .collect();
        if !named.is_empty() {
            lines.push(SummaryLine::detail(format!(
                "through the fields {}",
                named
                    .iter()
                    .map(|l| format!("`{l}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
}

/// What it returns, writes and points to, and what its memory holds.
fn memory(s: &Summary, lines: &mut Vec<SummaryLine>) {
    if s.ret_exclusive {
        lines.push(SummaryLine::keyed(
            "returns",
            "a reference to contents only the holder of the handle it is given reaches (`exclusive_to_handle`)",
        ));
        if let Some(f) = &s.exclusive_field {
            let path: String = f.fields.iter().map(|i| format!(".{i}")).collect();
            lines.push(SummaryLine::detail(format!(
                "the contents of field `{path}` of the `{}` the handle counts (another accessor of that field returns the same place)",
                f.object
            )));
        }
    }
    for line in s.liveness.describe() {
        lines.push(SummaryLine::keyed("liveness", line));
    }
    if let Some(from) = &s.ret_from
        && !from.is_empty()
    {
        let parts: Vec<String> = from.iter().map(analysis::Flow::describe).collect();
        lines.push(SummaryLine::keyed("returns", parts.join(", ")));
    }
    let places = |list: &[(u32, analysis::FieldPath)]| -> String {
        list.iter()
            .map(|(k, p)| {
                let at = format!("(*arg{k}){}", p.describe());
                if p.exact() {
                    format!("`{at}`")
                } else {
                    format!("below `{at}`")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(w) = &s.writes
        && !w.is_empty()
    {
        lines.push(SummaryLine::keyed("writes", places(w)));
    }
    if let Some(r) = &s.ret_points
        && (!r.is_empty() || s.ret_fresh)
    {
        let mut parts = places(r);
        if s.ret_fresh {
            if !parts.is_empty() {
                parts.push_str(", ");
            }
            parts.push_str("memory none of its arguments reach (a new allocation, a static)");
        }
        lines.push(SummaryLine::keyed("points to", parts));
    }
    // The written arguments whose memory receives only pointers reached
    // from it (what lets a caller keep an iterator's origins across `next`).
    let own: Vec<String> = s
        .stores_own
        .iter()
        .filter(|k| s.writes.iter().flatten().any(|(w, _)| w == *k))
        .map(|k| format!("`arg{k}`"))
        .collect();
    if !own.is_empty() {
        lines.push(SummaryLine::keyed(
            "stores",
            format!(
                "into what {} points to, only pointers reached from there",
                own.join(", ")
            ),
        ));
    }
}

/// The shapes the analysis recognised in it: tests, lookups, inserts,
/// clones.
fn recognised(s: &Summary, lines: &mut Vec<SummaryLine>) {
    if let Some((i, j)) = s.identity_test {
        lines.push(SummaryLine::plain(format!(
            "an identity test: returns non-zero only if the handles behind `arg{i}` and `arg{j}` hold one pointer"
        )));
    }
    if let Some((a, b)) = &s.same_or_none {
        lines.push(SummaryLine::plain(format!(
            "a test that both are empty or one object: returns non-zero only if `{}` and `{}` both hold no handle, or handles holding one pointer",
            a.describe(),
            b.describe()
        )));
    }
    if let Some(a) = &s.absent_key {
        lines.push(SummaryLine::plain(format!("a lookup: {}", a.describe())));
    }
    if let Some(k) = s.node_key {
        lines.push(SummaryLine::plain(format!(
            "makes a map node whose key is `arg{k}`"
        )));
    }
    if let Some(k) = s.displaces_key_of {
        lines.push(SummaryLine::plain(format!(
            "an insert: returns the entry it displaced, the variant without fields when the map `*arg0` held no entry with the key of the node `arg{k}`"
        )));
    }
    if s.sharing_clone {
        lines.push(SummaryLine::plain(
            "a sharing clone: the copy holds counts on the objects its argument holds",
        ));
    }
    if s.last_reference_test {
        lines.push(SummaryLine::plain(
            "returns a last-reference test (non-zero: the last reference was dropped)",
        ));
    }
    if s.context_sensitive {
        lines.push(SummaryLine::plain(
            "depends on its arguments: call sites passing constants get a specialised summary",
        ));
    }
}

/// The locks it takes.
fn locks_taken(s: &Summary, lines: &mut Vec<SummaryLine>) {
    for t in &s.takes {
        lines.push(SummaryLine::keyed(
            "takes",
            format!(
                "`{}` ({}){}{}",
                t.lock.class(),
                t.kind,
                if t.trylock { ", trylock" } else { "" },
                if t.irqs_disabled {
                    ", interrupts disabled"
                } else {
                    ""
                }
            ),
        ));
    }
}

/// Where the summary comes from.
fn source_text(source: &Source) -> String {
    match source {
        Source::Inferred => "inferred from its body".to_string(),
        Source::Annotation { path, unchecked } => {
            format!(
                "annotation on `{path}`{}",
                if *unchecked {
                    " (unchecked)"
                } else {
                    " (checked against the body)"
                }
            )
        }
        Source::Spec { name } => format!("the spec entry of `{name}`"),
        Source::RustSpec { path } => format!(
            "the spec's `[rust]` entry of `{path}` (its lock effect and blocking), over its body where it has one"
        ),
        Source::UnknownForeign => {
            "default for C functions the spec does not describe: may sleep".into()
        }
        Source::UnconstrainedForeign => {
            "default for C functions the spec does not describe, outside the kernel profile: no constraint".into()
        }
        Source::NotExtracted => {
            "default for functions of crates that were not extracted: no constraint".into()
        }
        Source::UnknownIndirect => {
            "default for calls leaving the program through pointers: may sleep".into()
        }
        Source::Builtin => "compiler built-in: no constraint".into(),
        Source::Recursive => "recursion without a fixed point (reported as an error)".into(),
        Source::OverBudget => {
            "its analysis ran out of its step budget: treated as an unknown function (named in the run's summary)".into()
        }
    }
}

/// Why it expects what it does: the callee's site it inherits from, and
/// the notes on a failed inference or a flag-dependent sleep.
fn why(a: &Analysed, id: FnId, s: &Summary, lines: &mut Vec<SummaryLine>) {
    if s.poisoned {
        lines.push(SummaryLine::plain(
            "note: inference failed for this function; see `kanalyze check`",
        ));
    }
    if let Some(cond) = &s.sleeps_if_flag {
        lines.push(SummaryLine::plain(format!(
            "sleeps only if argument {} has a bit of {:#x} set (a GFP flag)",
            cond.arg, cond.mask
        )));
    }
    let site = |r: &analysis::Reason| {
        format!(
            "the {} of `{}` at {} (count offset {}) expects {}",
            r.kind.name(),
            a.program.function(r.callee).name,
            a.program.span_text(id, r.span),
            r.adj,
            r.callee_expect
        )
    };
    if let Some(r) = &s.reason {
        lines.push(SummaryLine::keyed("why", site(r)).linked(r.callee));
    }
    if let Some(r) = &s.reason_last {
        let when = if r.via_last {
            " if a reference it drops is the last one"
        } else {
            ", reached when the reference count drops to zero"
        };
        lines.push(SummaryLine::keyed("why last", format!("{}{when}", site(r))).linked(r.callee));
    }
}

/// "when `(*arg0).0` has discriminant 1".
fn when_text(when: &analysis::ArgCond, field: Option<u32>) -> String {
    let field = field.map(|f| format!(".{f}")).unwrap_or_default();
    match when {
        analysis::ArgCond::Pointee(d) => format!("when `(*arg0){field}` has discriminant {d}"),
        analysis::ArgCond::Value(d) => format!("when `arg0{field}` has discriminant {d}"),
    }
}
