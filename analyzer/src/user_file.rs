//! Reading a user's settings files, apart from the dumps' loader: the
//! configuration and triage read them before any dump is loaded.

use std::path::Path;

/// The text of a user's file (configuration, triage, baseline), read only
/// if it is a regular file: a FIFO given as one would block the run.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    let bytes = kmir::read_regular(path)?;
    String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}
