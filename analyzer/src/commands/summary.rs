//! `kanalyze summary DIR FN`: the inferred summary of one instance and why.

use std::io::{self, BufWriter, Write};

use analysis::Source;
use program::FnKind;

use crate::cli::SummaryArgs;
use crate::pipeline::analyse;
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
        let f = a.program.function(id);
        let s = &a.preempt.summaries[id.index()];
        writeln!(out, "{}", f.name)?;
        writeln!(out, "  symbol:      {}", f.symbol)?;
        if !f.item_path.is_empty() {
            writeln!(out, "  item:        {}", f.item_path)?;
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
        writeln!(out, "  kind:        {kind}")?;
        writeln!(out, "  adjustment:  {}", s.adjust_text())?;
        if s.cases.len() > 1 || s.cases.iter().any(|c| c.has_lock_effect()) {
            for c in &s.cases {
                writeln!(out, "    {}", c.describe())?;
            }
        }
        writeln!(out, "  expectation: {}", s.expect)?;
        for (when, e) in &s.expect_when {
            writeln!(out, "    {e} {}", when_text(when, s.split_field))?;
        }
        if s.expect_last != annotations::ExpectRange::TOP {
            writeln!(
                out,
                "  if a reference it drops is the last one: {}",
                s.expect_last.intersect(&s.expect)
            )?;
        }
        if s.last_reference_test {
            writeln!(
                out,
                "  returns a last-reference test (non-zero: the last reference was dropped)"
            )?;
        }
        if s.context_sensitive {
            writeln!(
                out,
                "  depends on its arguments: call sites passing constants get a specialised summary"
            )?;
        }
        for t in &s.takes {
            writeln!(
                out,
                "  takes:       `{}` ({}){}{}",
                t.lock.class(),
                t.kind,
                if t.trylock { ", trylock" } else { "" },
                if t.irqs_disabled {
                    ", interrupts disabled"
                } else {
                    ""
                }
            )?;
        }
        let source = match &s.source {
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
            Source::UnknownForeign => {
                "default for C functions the spec does not describe: may sleep".into()
            }
            Source::NotExtracted => {
                "default for functions of crates that were not extracted: no constraint".into()
            }
            Source::UnknownIndirect => {
                "default for calls leaving the program through pointers: may sleep".into()
            }
            Source::Builtin => "compiler built-in: no constraint".into(),
            Source::Recursive => "recursion without a fixed point (reported as an error)".into(),
        };
        writeln!(out, "  from:        {source}")?;
        if s.poisoned {
            writeln!(
                out,
                "  note: inference failed for this function; see `kanalyze check`"
            )?;
        }
        if let Some(cond) = &s.sleeps_if_flag {
            writeln!(
                out,
                "  sleeps only if argument {} has a bit of {:#x} set (a GFP flag)",
                cond.arg, cond.mask
            )?;
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
            writeln!(out, "  why:         {}", site(r))?;
        }
        if let Some(r) = &s.reason_last {
            let when = if r.via_last {
                " if a reference it drops is the last one"
            } else {
                ", reached when the reference count drops to zero"
            };
            writeln!(out, "  why last:    {}{when}", site(r))?;
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

/// "when `(*arg0).0` has discriminant 1".
fn when_text(when: &analysis::ArgCond, field: Option<u32>) -> String {
    let field = field.map(|f| format!(".{f}")).unwrap_or_default();
    match when {
        analysis::ArgCond::Pointee(d) => format!("when `(*arg0){field}` has discriminant {d}"),
        analysis::ArgCond::Value(d) => format!("when `arg0{field}` has discriminant {d}"),
    }
}
