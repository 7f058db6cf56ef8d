//! One module per subcommand. Each `run` prints its own diagnostics and
//! returns the process exit code.

pub mod check;
pub mod dump;
pub mod graph;
pub mod summary;

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
