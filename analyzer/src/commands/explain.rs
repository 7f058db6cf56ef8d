//! `kanalyze explain [KIND]` (also `kanalyze --explain KIND`): the long
//! explanation of a finding kind, like `rustc --explain E0xxx`; without a
//! kind, the index of every kind.

use std::io::{self, BufWriter, Write};

use crate::cli::ExplainArgs;
use crate::diag::Diagnostic;
use crate::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};

pub fn run(args: &ExplainArgs) -> u8 {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = match &args.kind {
        None => index(&mut out),
        Some(name) => match checks::kind(name) {
            Some(kind) => explain(kind, &mut out),
            None => {
                unknown(name).emit();
                return EXIT_BAD_INPUT;
            }
        },
    }
    .and_then(|()| out.flush());
    if super::output_failed(result) {
        EXIT_FAILURE
    } else {
        EXIT_OK
    }
}

fn index(out: &mut dyn Write) -> io::Result<()> {
    let width = checks::KINDS
        .iter()
        .map(|k| k.name.len())
        .max()
        .unwrap_or(0);
    writeln!(
        out,
        "Finding kinds (`kanalyze explain KIND` for one; levels with --deny/--warn/--allow KIND):\n"
    )?;
    // Each family once, in the order its first kind comes in.
    let mut families: Vec<&str> = Vec::new();
    for k in checks::KINDS {
        if !families.contains(&k.family) {
            families.push(k.family);
        }
    }
    for family in families {
        writeln!(out, "{family}:")?;
        for k in checks::KINDS.iter().filter(|k| k.family == family) {
            writeln!(
                out,
                "  {:width$}  {:7}  {}",
                k.name,
                k.severity.as_str(),
                k.summary
            )?;
        }
    }
    Ok(())
}

fn explain(kind: &findings::Kind, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{} ({} by default; family: {})\n",
        kind.name,
        kind.severity.as_str(),
        kind.family
    )?;
    // The one-line summary, unless the explanation opens with the long
    // form of the same sentence (its first words are the summary's).
    let summary = capitalised(kind.summary);
    if !restates(kind.explanation, &summary) {
        writeln!(out, "{summary}.\n")?;
    }
    // The declaration's doc comment, one line per source line: rejoin it
    // into paragraphs; a fenced block (an example) keeps its lines,
    // indented.
    for paragraph in kind.explanation.split("\n\n") {
        let lines: Vec<&str> = paragraph.lines().collect();
        if lines
            .first()
            .is_some_and(|l| l.trim_start().starts_with("```"))
        {
            for l in lines.iter().filter(|l| !l.trim_start().starts_with("```")) {
                // Doc comments keep the space after `///`.
                writeln!(out, "    {}", l.strip_prefix(' ').unwrap_or(l))?;
            }
            writeln!(out)?;
            continue;
        }
        let text: Vec<&str> = lines
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect();
        if !text.is_empty() {
            writeln!(out, "{}\n", text.join(" "))?;
        }
    }
    writeln!(
        out,
        "Report it as an error, a warning or not at all with `--deny {0}`, `--warn {0}` or `--allow {0}` (docs/output.md).",
        kind.name
    )
}

/// Whether `explanation` opens with the sentence `summary` says, in its
/// long form: their first four words are the same.
fn restates(explanation: &str, summary: &str) -> bool {
    const WORDS: usize = 4;
    let words = |t: &str| -> Vec<String> {
        t.split_whitespace()
            .take(WORDS)
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .collect()
    };
    let (a, b) = (words(explanation), words(summary));
    a.len() == WORDS && a == b
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn unknown(name: &str) -> Diagnostic {
    let mut d = Diagnostic::error(format!(
        "unknown finding kind `{}`",
        crate::diag::clip(name)
    ));
    if let Some((_, near)) = checks::KINDS
        .iter()
        .map(|k| (crate::edit_distance::edit_distance(k.name, name), k.name))
        .filter(|(d, _)| *d <= 3)
        .min()
    {
        d = d.help(format!("did you mean `{near}`?"));
    }
    d.help("`kanalyze explain` lists every kind")
}
