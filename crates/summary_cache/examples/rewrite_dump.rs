//! Rewrites a dump as a re-extraction would leave it when nothing the
//! analysis reads changed: the same contents under another producer
//! string, so its content hash, and so the keys of its components and of
//! every component that reaches them, change. docs/performance.md
//! ("Incremental re-runs") uses it to time a warm run after "one driver
//! re-extracted" without rebuilding the kernel.
//!
//! `cargo run --release -p summary_cache --example rewrite_dump -- FILE.kmir`

fn main() -> std::process::ExitCode {
    let Some(path) = std::env::args_os().nth(1).map(std::path::PathBuf::from) else {
        eprintln!("usage: rewrite_dump FILE.kmir");
        return std::process::ExitCode::from(2);
    };
    let mut dump = match kmir::read_file(&path) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    dump.header.producer = format!("{} (rewritten {nanos})", dump.header.producer).into();
    if let Err(e) = kmir::write_file(&dump, &path) {
        eprintln!("error: cannot write `{}`: {e}", path.display());
        return std::process::ExitCode::from(1);
    }
    std::process::ExitCode::SUCCESS
}
