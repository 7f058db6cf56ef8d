//! The pack file: one run's components, checked before it is trusted.
//! Framed as [`crate::framed`] says, magic `kanalyze-summary`, payload
//! `Pack`.

use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use twox_hash::XxHash3_128;

use crate::framed::{Frame, HEADER, decode_bounded};

const FRAME: Frame = Frame {
    magic: b"kanalyze-summary",
    version: FORMAT_VERSION,
    what: "a kanalyze summary cache",
    format: "cache format",
};

/// The version of the pack format and of what it stores: bumped whenever
/// the layout of `Summary`, `Events` or anything they hold changes (the
/// build's hash in every key already tells builds apart; this keeps a pack
/// of another layout from being decoded at all).
pub const FORMAT_VERSION: u32 = 12;

/// Packs kept in a cache directory; the least recently used go first.
pub const MAX_PACKS: usize = 8;

const EXTENSION: &str = "kcache";

/// One run's components.
#[derive(Debug, Default, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct Pack {
    /// The symbols of the functions the entries name.
    pub symbols: Vec<String>,
    pub entries: Vec<Entry>,
}

#[derive(Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct Entry {
    pub key: u128,
    /// For each function position of `bytes`, its index in `symbols`.
    pub ids: Vec<u32>,
    /// `analysis::ComponentResults`, encoded by `program::wire`.
    pub bytes: Vec<u8>,
}

/// The pack of a program read from `inputs`: named by a hash of their
/// paths, so that two programs do not overwrite each other's.
pub(crate) fn file_name(inputs: &[PathBuf]) -> String {
    let mut paths: Vec<PathBuf> = inputs
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    paths.sort();
    let mut h = crate::Fingerprint::new();
    for p in &paths {
        h.add("input", p.as_os_str().as_encoded_bytes());
    }
    format!("{:032x}.{EXTENSION}", h.finish())
}

/// The pack at `path`: `Ok(None)` when there is none, `Err` (why) when the
/// file is not a pack this build can read.
pub(crate) fn read(path: &Path) -> Result<Option<Pack>, String> {
    let bytes = match safe_write::read_settled(path, kmir::open_regular) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    decode(&bytes).map(Some)
}

pub(crate) fn decode(bytes: &[u8]) -> Result<Pack, String> {
    let payload = FRAME.payload(bytes)?;
    match decode_bounded::<Pack>(payload) {
        Ok((pack, n)) if n == payload.len() => {
            let symbols = pack.symbols.len();
            if pack
                .entries
                .iter()
                .flat_map(|e| &e.ids)
                .any(|&i| i as usize >= symbols)
            {
                return Err("an entry names a symbol the cache does not hold".into());
            }
            Ok(pack)
        }
        Ok(_) => Err("trailing bytes after its contents".into()),
        Err(e) => Err(format!("its contents do not decode: {e}")),
    }
}

/// Decodes the payload with the decoder's reservations bounded by its
/// size: no container holds more than 32 bytes of memory per byte of file
/// (a `String` is 24 bytes and at least one on the wire). bincode's limit
/// is a type-level constant, hence the buckets.
/// What [`write`] writes: [`Pack`]'s layout, with the entries' bytes
/// borrowed (from the previous pack or this run's results).
#[derive(bincode::Encode)]
pub(crate) struct PackRef<'a> {
    pub symbols: Vec<&'a str>,
    pub entries: Vec<EntryRef<'a>>,
}

#[derive(bincode::Encode)]
pub(crate) struct EntryRef<'a> {
    pub key: u128,
    pub ids: Vec<u32>,
    pub bytes: &'a [u8],
}

/// A whole pack file's bytes.
#[cfg(test)]
pub(crate) fn encode(pack: &impl bincode::Encode) -> Result<Vec<u8>, String> {
    let payload = bincode::encode_to_vec(pack, bincode::config::standard())
        .map_err(|e| format!("cannot encode it: {e}"))?;
    Ok(FRAME.wrap(&payload))
}

/// Passes what is written on to a file, hashing and counting it.
struct Hashing<W> {
    inner: W,
    hasher: XxHash3_128,
    len: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.write(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes `pack` to `path` in `dir` through a temporary file renamed over
/// it, under the pack's lock (`safe_write`): a concurrent reader sees the
/// old pack or the new one. The payload is encoded straight into the file
/// (its header, written last, says how long it is and its hash). Returns
/// the bytes written.
pub(crate) fn write(dir: &Path, path: &Path, pack: &impl bincode::Encode) -> Result<u64, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut written = 0;
    safe_write::write_with(path, |file| {
        // A placeholder: a pack left like this fails its magic check.
        file.write_all(&[0; HEADER])?;
        let mut out = Hashing {
            inner: std::io::BufWriter::with_capacity(1 << 20, &mut *file),
            hasher: XxHash3_128::new(),
            len: 0,
        };
        bincode::encode_into_std_write(pack, &mut out, bincode::config::standard())
            .map_err(|e| std::io::Error::other(format!("cannot encode it: {e}")))?;
        out.flush()?;
        let (len, hash) = (out.len, out.hasher.finish_128());
        drop(out);
        file.seek(std::io::SeekFrom::Start(0))?;
        file.write_all(&FRAME.header(len, hash))?;
        written = HEADER as u64 + len;
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(written)
}

/// Keeps the [`MAX_PACKS`] most recently used (written, or recalled whole) packs of `dir` (`keep`
/// among them) and removes temporary files left by writers that died
/// more than an hour ago. Failures are ignored: another run may be
/// removing the same files.
pub(crate) fn evict(dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    let mut packs = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let modified = e.metadata().and_then(|m| m.modified()).ok();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(".tmp") {
            let old = modified
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|age| age.as_secs() > 3600);
            if old {
                let _ = std::fs::remove_file(&path);
            }
        } else if path.extension().is_some_and(|x| x == EXTENSION) && path != keep {
            packs.push((modified, path));
        }
    }
    // Newest first; `keep` is one of the kept.
    packs.sort_by_key(|p| std::cmp::Reverse(p.0));
    for (_, path) in packs.into_iter().skip(MAX_PACKS - 1) {
        let _ = std::fs::remove_file(path);
    }
}
