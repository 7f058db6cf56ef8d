//! `kanalyze triage DIR... --file FILE --verdict V --reason R --by WHO
//! (--id ID... | --kind KIND...)`: records verdicts on findings of a run in
//! a triage file, adding entries or updating them (the text fingerprint is
//! refreshed, so an updated verdict is about what the finding says now).

use crate::cli::TriageArgs;
use crate::diag::Diagnostic;
use crate::pipeline::analyse;
use crate::triage::{Verdicts, record};
use crate::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};

pub fn run(args: &TriageArgs) -> u8 {
    if args.ids.is_empty() && args.kinds.is_empty() {
        Diagnostic::error("no findings selected")
            .help("name them with `--id KA…` (the JSON `id`) or `--kind KIND`")
            .emit();
        return EXIT_BAD_INPUT;
    }
    for kind in &args.kinds {
        if checks::kind(kind).is_none() {
            Diagnostic::error(format!(
                "unknown finding kind `{}`",
                crate::diag::clip(kind)
            ))
            .help("`kanalyze explain` lists every kind")
            .emit();
            return EXIT_BAD_INPUT;
        }
    }
    for field in [&args.reason, &args.by] {
        if field.trim().is_empty() {
            Diagnostic::error("`--reason` and `--by` must not be empty")
                .help("a verdict without its reason and author cannot be audited")
                .emit();
            return EXIT_BAD_INPUT;
        }
    }
    let mut args = args.clone();
    let config = match crate::config::resolve(&mut args.analysis) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let Some(a) = analyse(&args.paths, &args.analysis) else {
        return EXIT_BAD_INPUT;
    };
    // With `--objects`, `kanalyze stack`'s findings too, with the limits
    // `stack` would use without flags.
    let stack = if args.objects.is_empty() {
        None
    } else {
        let limits = stack::Limits {
            depth: config
                .stack
                .limit
                .as_ref()
                .map_or(stack::DEFAULT_LIMIT, |(v, _)| *v),
            frame: config
                .stack
                .frame_limit
                .as_ref()
                .map_or(stack::DEFAULT_FRAME_LIMIT, |(v, _)| *v),
        };
        let c_default = config
            .stack
            .c_default
            .as_ref()
            .map(|(v, o)| (*v, o.0.clone()));
        match super::stack::compute(
            &args.paths,
            &args.objects,
            &args.analysis,
            limits,
            c_default,
        ) {
            Some(run) => Some(run),
            None => return EXIT_BAD_INPUT,
        }
    };
    let mut all: Vec<(&program::Program, &findings::Finding)> =
        a.findings().into_iter().map(|f| (&a.program, f)).collect();
    if let Some(run) = &stack {
        all.extend(run.findings.iter().map(|f| (&run.program, f)));
    }
    let mut selected: Vec<(String, String)> = Vec::new();
    let mut missing: Vec<&str> = args.ids.iter().map(String::as_str).collect();
    for (program, f) in all {
        let id = report::stable_id(program, f);
        let by_id = args.ids.contains(&id);
        let by_kind = args.kinds.iter().any(|k| k == f.kind);
        if by_id || by_kind {
            missing.retain(|m| *m != id);
            if !selected.iter().any(|(s, _)| *s == id) {
                selected.push((id, report::text_fingerprint(f)));
            }
        }
    }
    if !missing.is_empty() {
        Diagnostic::error(format!(
            "no finding of this run has the id{} {}",
            if missing.len() == 1 { "" } else { "s" },
            missing
                .iter()
                .map(|m| format!("`{}`", crate::diag::clip(m)))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .help("ids come from `kanalyze check --format json` (or `kanalyze stack --format json`, with `--objects`) on the same dumps and settings")
        .emit();
        return EXIT_BAD_INPUT;
    }
    let verdicts = Verdicts {
        verdict: args.verdict.into(),
        reason: args.reason.trim(),
        by: args.by.trim(),
        date: args.date.as_deref(),
        reference: args.reference.as_deref(),
    };
    // Read, updated and replaced under the file's lock, through a fresh
    // temporary file renamed over it (a symlinked triage file's target is
    // what is replaced): concurrent runs take turns, and a crash never
    // leaves half a triage file.
    let mut counts = (0, 0);
    let result = safe_write::update(&args.file, |old| {
        let text = match old {
            None => String::new(),
            Some(bytes) => String::from_utf8(bytes.to_vec()).map_err(|_| {
                Box::new(Diagnostic::error(format!(
                    "the triage file `{}` is not UTF-8 text",
                    args.file.display()
                )))
            })?,
        };
        // The file must be a valid triage file before and after.
        if !text.is_empty()
            && let Err(e) = crate::triage::parse(&args.file, &text)
        {
            crate::diag::emit_miette(e.as_ref());
            return Err(Box::new(Diagnostic::error(format!(
                "the triage file `{}` is left as it was",
                args.file.display()
            ))));
        }
        let (new_text, added, updated) = record(&text, &selected, &verdicts).map_err(|e| {
            Box::new(Diagnostic::error(format!(
                "cannot update the triage file `{}`: {e}",
                args.file.display()
            )))
        })?;
        counts = (added, updated);
        Ok(Some(new_text.into_bytes()))
    });
    match result {
        Ok(()) => {}
        Err(safe_write::UpdateError::Update(d)) => {
            d.emit();
            return EXIT_BAD_INPUT;
        }
        Err(safe_write::UpdateError::Io(e)) => {
            Diagnostic::error(format!(
                "cannot write the triage file `{}`: {e}",
                args.file.display()
            ))
            .emit();
            return EXIT_FAILURE;
        }
    }
    let (added, updated) = counts;
    eprintln!(
        "kanalyze: {} finding{} judged `{}` in `{}` ({added} added, {updated} updated)",
        selected.len(),
        if selected.len() == 1 { "" } else { "s" },
        verdicts.verdict.as_str(),
        args.file.display()
    );
    EXIT_OK
}
