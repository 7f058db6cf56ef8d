//! `kanalyze dump PATH... [--item NAME] [--no-bodies]`.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use kmir::{CrateDump, Instance, LoadError};

use crate::cli::DumpArgs;
use crate::diag::{self, Diagnostic};
use crate::input;
use crate::print::{self, Options, Printer};
use crate::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};

/// How many near misses `--item` suggests when nothing matched.
const MAX_SUGGESTIONS: usize = 10;

pub fn run(args: &DumpArgs) -> u8 {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut state = State::default();
    let result = dump(args, &mut out, &mut state).and_then(|()| out.flush());
    if super::output_failed(result) {
        return EXIT_FAILURE;
    }
    if state.errors > 0 {
        EXIT_BAD_INPUT
    } else {
        EXIT_OK
    }
}

#[derive(Default)]
struct State {
    errors: usize,
}

fn dump(args: &DumpArgs, out: &mut dyn Write, state: &mut State) -> io::Result<()> {
    let found = input::find_dumps(&args.paths);
    for e in &found.errors {
        e.emit();
    }
    state.errors += found.errors.len();
    if found.files.is_empty() {
        // Every path failed and each failure has been reported already.
        return Ok(());
    }

    let options = Options {
        bodies: !args.no_bodies,
    };
    let mut printed = 0usize;
    let mut loaded = 0usize;
    let mut skipped = 0usize;
    let mut searched = 0usize;
    let mut near = args.item.as_deref().map(NearNames::new);

    input::load_in_order(&found.files, |path, result| {
        let dump = match result {
            Ok(dump) => dump,
            Err(e) => {
                report_load_error(out, &e)?;
                skipped += 1;
                return Ok(());
            }
        };
        loaded += 1;
        match &args.item {
            None => {
                if printed > 0 {
                    writeln!(out)?;
                }
                print::print_dump(out, &dump, Some(path), options)?;
                printed += 1;
            }
            Some(needle) => {
                searched += dump.instances.len();
                let hits: Vec<&Instance> = dump
                    .instances
                    .iter()
                    .filter(|i| print::instance_matches(i, needle))
                    .collect();
                if hits.is_empty() {
                    if let Some(near) = &mut near {
                        near.consider(&dump);
                    }
                    return Ok(());
                }
                if printed > 0 {
                    writeln!(out)?;
                }
                print_selected(out, &dump, path, needle, &hits, options)?;
                printed += 1;
            }
        }
        Ok(())
    })?;

    if let (Some(needle), Some(near), 0, 1..) = (&args.item, near, printed, loaded) {
        out.flush()?;
        no_match(needle, near, searched, loaded).emit();
        state.errors += 1;
    }
    state.errors += skipped;
    let failed_inputs = skipped + found.errors.len();
    let inputs = found.files.len() + found.errors.len();
    if failed_inputs > 0 && inputs > 1 {
        out.flush()?;
        let verb = if failed_inputs == 1 { "was" } else { "were" };
        Diagnostic::error(format!(
            "{failed_inputs} of {inputs} inputs could not be read and {verb} skipped"
        ))
        .emit();
    }
    Ok(())
}

fn report_load_error(out: &mut dyn Write, e: &LoadError) -> io::Result<()> {
    // Keep stdout and stderr in order when both go to a terminal.
    out.flush()?;
    diag::load_error(e).emit();
    Ok(())
}

fn print_selected(
    out: &mut dyn Write,
    dump: &CrateDump,
    path: &Path,
    needle: &str,
    hits: &[&Instance],
    options: Options,
) -> io::Result<()> {
    let p = Printer::new(dump);
    p.header(out, Some(path))?;
    writeln!(
        out,
        "// --item `{needle}`: {} of {} instances",
        hits.len(),
        dump.instances.len()
    )?;
    for inst in hits {
        writeln!(out)?;
        p.instance(out, inst, options)?;
    }
    Ok(())
}

fn no_match(needle: &str, near: NearNames, searched: usize, dumps: usize) -> Diagnostic {
    let what = if dumps == 1 { "dump" } else { "dumps" };
    let d = Diagnostic::error(format!(
        "no instance's name, item path or symbol contains `{needle}`"
    ))
    .note(format!("searched {searched} instances in {dumps} {what}"));
    let names = near.into_names();
    if names.is_empty() {
        d.help(
            "the match is a case-sensitive substring; run without `--item` to list every instance",
        )
    } else {
        let list: Vec<String> = names.iter().map(|n| format!("  {n}")).collect();
        d.help(format!("similar names:\n{}", list.join("\n")))
    }
}

/// The names closest to a needle that matched nothing, by edit distance to
/// the best-matching substring: `--item` matches substrings, so a name is
/// close if a few edits would have made it match.
pub(crate) struct NearNames {
    needle: Vec<char>,
    max_distance: usize,
    /// Best first; at most `MAX_SUGGESTIONS`.
    best: Vec<(usize, String)>,
}

impl NearNames {
    pub(crate) fn new(needle: &str) -> Self {
        let needle: Vec<char> = needle.to_lowercase().chars().collect();
        // Very short needles are within one edit of nearly everything, so
        // they only get case-insensitive matches.
        let max_distance = if needle.len() < 3 {
            0
        } else {
            (needle.len() / 4).max(1)
        };
        NearNames {
            needle,
            max_distance,
            best: Vec::new(),
        }
    }

    fn consider(&mut self, dump: &CrateDump) {
        for inst in &dump.instances {
            self.candidate(&inst.name);
            if inst.item_path != inst.name {
                self.candidate(&inst.item_path);
            }
        }
    }

    pub(crate) fn candidate(&mut self, name: &str) {
        let plain = print::without_generic_args(name);
        let d =
            substring_distance(&self.needle, name).min(substring_distance(&self.needle, &plain));
        if d > self.max_distance {
            return;
        }
        let key = (d, name.len(), name);
        let pos = self
            .best
            .partition_point(|(bd, bn)| (*bd, bn.len(), bn.as_str()) < key);
        if self.best.get(pos).is_some_and(|(_, bn)| bn == name) || pos >= MAX_SUGGESTIONS {
            return;
        }
        self.best.insert(pos, (d, name.to_string()));
        self.best.truncate(MAX_SUGGESTIONS);
    }

    pub(crate) fn into_names(self) -> Vec<String> {
        self.best.into_iter().map(|(_, n)| n).collect()
    }
}

/// Edit distance between `needle` (lowercased) and the substring of
/// `haystack` it is closest to, case-insensitively: Sellers' algorithm with
/// adjacent transpositions counted as one edit (the commonest typo).
fn substring_distance(needle: &[char], haystack: &str) -> usize {
    let m = needle.len();
    // Columns of the DP table for the current and the two previous haystack
    // characters; row i is the distance of needle[..i].
    let mut prev2: Vec<usize> = (0..=m).collect();
    let mut prev: Vec<usize> = (0..=m).collect();
    let mut cur: Vec<usize> = vec![0; m + 1];
    let mut best = m;
    let mut last: Option<char> = None;
    for h in haystack.chars().flat_map(char::to_lowercase) {
        // A match may start anywhere in the haystack for free.
        cur[0] = 0;
        for i in 1..=m {
            let n = needle[i - 1];
            let mut d = (prev[i - 1] + usize::from(n != h))
                .min(cur[i - 1] + 1)
                .min(prev[i] + 1);
            if i > 1 && last == Some(n) && needle[i - 2] == h {
                d = d.min(prev2[i - 2] + 1);
            }
            cur[i] = d;
        }
        best = best.min(cur[m]);
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
        last = Some(h);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(needle: &str, haystack: &str) -> usize {
        let needle: Vec<char> = needle.to_lowercase().chars().collect();
        substring_distance(&needle, haystack)
    }

    #[test]
    fn substring_distance_is_zero_for_substrings_in_any_case() {
        assert_eq!(dist("lock", "fixture::SpinLock::lock"), 0);
        assert_eq!(dist("SPIN", "fixture::SpinLock::lock"), 0);
    }

    #[test]
    fn substring_distance_counts_edits_against_the_best_window() {
        assert_eq!(dist("lokc", "fixture::lock"), 1);
        assert_eq!(dist("spinlok", "fixture::SpinLock"), 1);
        assert_eq!(dist("xyz", "ab"), 3);
        assert_eq!(dist("", "anything"), 0);
    }

    #[test]
    fn near_names_keeps_the_closest_without_duplicates() {
        let mut near = NearNames::new("spinlok");
        for name in [
            "a::SpinLock",
            "b::spinlock",
            "a::SpinLock",
            "unrelated::thing",
        ] {
            near.candidate(name);
        }
        assert_eq!(near.into_names(), vec!["a::SpinLock", "b::spinlock"]);
    }
}
