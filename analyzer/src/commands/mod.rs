//! One module per subcommand. Each `run` prints its own diagnostics and
//! returns the process exit code.

pub mod check;
pub mod dump;
pub mod graph;
pub mod summary;
