//! The dump directory: checked before writing, and kept free of the
//! temporary files of writers that died.
//!
//! `kmir::write_file` writes `.<file>.<pid>.tmp` next to the dump and renames
//! it into place, so readers never see a partial dump. A kextract killed
//! between the two (the build interrupted, the OOM killer) leaves the
//! temporary behind, megabytes each, and nothing else would ever remove it.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// Where dumps go; unset means "behave as plain rustc".
pub const OUT_VAR: &str = "KANALYZE_OUT";

/// A temporary this old whose writer is gone is garbage. Writing one dump
/// takes well under a second; the margin covers clocks and slow disks.
const STALE_AFTER: Duration = Duration::from_secs(5 * 60);

/// Why `dir` cannot take dumps, if it cannot: it exists but is not a
/// directory (creating it would fail with a bare "File exists").
pub fn unusable(dir: &Path) -> Option<String> {
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => Some(format!(
            "`{}` ({}) is not a directory",
            dir.display(),
            OUT_VAR
        )),
        _ => None,
    }
}

/// Removes `.<name>.kmir.<pid>.tmp` files in `dir` older than
/// [`STALE_AFTER`] whose writer process no longer exists. Returns the names
/// removed. Does nothing where liveness cannot be checked (no `/proc`): a
/// live writer's file must never be removed.
pub fn remove_stale_temporaries(dir: &Path) -> Vec<String> {
    let proc_root = Path::new("/proc");
    if !proc_root.join("self").exists() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let now = SystemTime::now();
    let me = std::process::id();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let Some(pid) = writer_pid(name) else {
            continue;
        };
        if pid == me || proc_root.join(pid.to_string()).exists() {
            continue;
        }
        // Age from the last write: a file without a readable time is kept.
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if !old {
            continue;
        }
        // Another kextract may be sweeping the same directory: losing the
        // race (NotFound) is fine, and any other failure only leaves garbage.
        if std::fs::remove_file(entry.path()).is_ok() {
            removed.push(name.to_string());
        }
    }
    removed
}

/// The writer's pid of a temporary dump named `.<stem>.kmir.<pid>.tmp`.
fn writer_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (file, pid) = rest.rsplit_once('.')?;
    if !file.ends_with(&format!(".{}", kmir::EXTENSION)) || pid.is_empty() {
        return None;
    }
    if !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::writer_pid;

    #[test]
    fn temporary_names() {
        assert_eq!(writer_pid(".lockapi-0123abcd.kmir.4242.tmp"), Some(4242));
        assert_eq!(writer_pid(".a.b.kmir.7.tmp"), Some(7));
        assert_eq!(writer_pid(".lockapi.kmir.tmp"), None);
        assert_eq!(writer_pid(".lockapi.kmir.-1.tmp"), None);
        assert_eq!(writer_pid(".lockapi.kmir.12x.tmp"), None);
        assert_eq!(writer_pid("lockapi.kmir.12.tmp"), None);
        assert_eq!(writer_pid(".notes.txt.12.tmp"), None);
        assert_eq!(writer_pid(".x.kmir.99999999999999999999.tmp"), None);
    }
}
