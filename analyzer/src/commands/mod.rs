//! One module per subcommand. Each `run` prints its own diagnostics and
//! returns the process exit code.

pub mod build_error;
pub mod check;
pub mod dump;
pub mod explain;
pub mod graph;
pub mod report;
pub mod stack;
pub mod summary;
pub mod triage;

/// Whether writing the output failed in a way worth reporting: a closed pipe
/// (`kanalyze … | head`) is not, the reader has all it wants. Reports the
/// failure and says so.
pub fn output_failed(result: std::io::Result<()>) -> bool {
    match result {
        Ok(()) => false,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => false,
        Err(e) => {
            crate::diag::Diagnostic::error(format!("cannot write the output: {e}")).emit();
            true
        }
    }
}

/// One function of the program for a user's query (`summary FN`,
/// `graph --callers/--callees/--dot FN`), or `None` after a diagnostic:
/// no match (with the closest names, as `dump --item` gives them) or
/// several (listed).
pub(crate) fn resolve_function(program: &program::Program, query: &str) -> Option<program::FnId> {
    use crate::diag::Diagnostic;
    let found = program.find(query);
    match found.as_slice() {
        [one] => Some(*one),
        [] => {
            let mut near = dump::NearNames::new(query);
            for f in &program.functions {
                near.candidate(&f.name);
                if !f.item_path.is_empty() && f.item_path != f.name {
                    near.candidate(&f.item_path);
                }
            }
            let names = near.into_names();
            let d = Diagnostic::error(format!(
                "no function matches `{}`",
                crate::diag::clip(query)
            ));
            let d = if names.is_empty() {
                d.help(
                    "give a symbol, a full instance name like `my_crate::f::<u32>`, or part of one",
                )
            } else {
                let list: Vec<String> = names.iter().map(|n| format!("  {n}")).collect();
                d.help(format!("similar names:\n{}", list.join("\n")))
            };
            d.emit();
            None
        }
        many => {
            let mut d = Diagnostic::error(format!(
                "`{}` matches {} functions; be more specific",
                crate::diag::clip(query),
                many.len()
            ));
            for id in many.iter().take(10) {
                let f = program.function(*id);
                d = d.note(format!("`{}` ({})", f.name, f.symbol));
            }
            if many.len() > 10 {
                d = d.note(format!("… and {} more", many.len() - 10));
            }
            d.emit();
            None
        }
    }
}
