//! The file format around the bincode payload, and the bounded decoder.
//!
//! ```text
//! offset  size  field
//!      0     8  magic  b"KANAKMIR"
//!      8     4  format version, u32 little endian
//!     12     8  payload length in bytes, u64 little endian
//!     20     4  CRC-32 of the payload, u32 little endian
//!     24     …  payload: `CrateDump`, bincode 2 standard configuration
//! ```
//!
//! The fixed prefix lets a reader say "not a dump", "written by format
//! version X" and "truncated" before it decodes anything; the checksum turns
//! random corruption into one clear error instead of a confusing decode
//! failure. Decoding itself is still bounded (see [`decode_payload`]) so that
//! a crafted file with a valid checksum cannot make us allocate gigabytes.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use bincode::de::read::Reader;
use bincode::error::DecodeError;

use crate::model::CrateDump;
use crate::validate::validate;

pub const MAGIC: [u8; 8] = *b"KANAKMIR";
/// Bump on every change of `model.rs` that changes the encoding.
pub const FORMAT_VERSION: u32 = 9;
pub const PREFIX_LEN: usize = 24;

/// What is wrong with a dump's bytes (without the file name; see [`LoadError`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The file has no bytes at all.
    Empty,
    /// The file does not start with the dump magic.
    NotADump,
    /// Starts like a dump but ends inside the fixed prefix, before the
    /// header could say how long the file is.
    TruncatedPrefix { actual: u64 },
    /// Shorter than its header says.
    Truncated { expected: u64, actual: u64 },
    /// Written by another version of the format.
    Version { found: u32, supported: u32 },
    /// The payload's CRC does not match the header.
    Checksum { expected: u32, actual: u32 },
    /// The payload does not decode.
    Corrupt { offset: u64, reason: String },
    /// Decoded, but the content breaks an invariant of the format.
    Invalid { reason: String },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Empty => write!(
                f,
                "empty file (0 bytes): not a kanalyze dump; was its compiler stopped before it wrote anything?"
            ),
            Problem::TruncatedPrefix { actual } => write!(
                f,
                "truncated: the file has {actual} bytes, fewer than the {PREFIX_LEN}-byte dump header, so it ends before saying how long it is (was it copied while the compiler was still writing it?)"
            ),
            Problem::NotADump => write!(
                f,
                "not a kanalyze dump (it does not start with the `KANAKMIR` magic; dumps are the `.kmir` files `kextract` writes)"
            ),
            Problem::Truncated { expected, actual } => write!(
                f,
                "truncated: the header announces {expected} bytes but the file has {actual} (was it copied while the compiler was still writing it?)"
            ),
            Problem::Version { found, supported } => write!(
                f,
                "written by dump format version {found}, but this kanalyze reads version {supported}; re-extract the crate with a matching kextract"
            ),
            Problem::Checksum { expected, actual } => write!(
                f,
                "corrupt: payload checksum is {actual:#010x} but the header says {expected:#010x}"
            ),
            Problem::Corrupt { offset, reason } => {
                write!(f, "corrupt at byte offset {offset}: {reason}")
            }
            Problem::Invalid { reason } => write!(f, "inconsistent dump: {reason}"),
        }
    }
}

/// A dump that could not be read, with the file it came from.
#[derive(Debug)]
pub enum LoadError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    Bad {
        path: PathBuf,
        problem: Problem,
    },
}

impl LoadError {
    pub fn path(&self) -> &Path {
        match self {
            LoadError::Io { path, .. } | LoadError::Bad { path, .. } => path,
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io { path, source } => {
                write!(f, "cannot read `{}`: {source}", path.display())
            }
            LoadError::Bad { path, problem } => write!(f, "`{}`: {problem}", path.display()),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Io { source, .. } => Some(source),
            LoadError::Bad { .. } => None,
        }
    }
}

pub(crate) fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encodes a dump with its prefix.
pub fn encode(dump: &CrateDump) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(&[0; PREFIX_LEN]);
    // Encoding into a Vec only fails if a type's Encode impl fails, and ours
    // are all derived over plain data.
    if let Err(e) = bincode::encode_into_std_write(dump, &mut out, config()) {
        unreachable!("encoding a dump into memory cannot fail: {e}");
    }
    let payload_len = (out.len() - PREFIX_LEN) as u64;
    let crc = crc32fast::hash(&out[PREFIX_LEN..]);
    out[0..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out[12..20].copy_from_slice(&payload_len.to_le_bytes());
    out[20..24].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Writes a dump so that readers and concurrent writers never see a partial
/// file: write to a unique temporary file in the same directory, then rename.
pub fn write_file(dump: &CrateDump, path: &Path) -> std::io::Result<()> {
    let bytes = encode(dump);
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let result = (|| {
        // Created exclusively: a link planted at the name is never written
        // through. A file left there by a dead writer of the same pid is
        // removed (a link is removed, not followed) and the name taken again.
        let create = || {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
        };
        let mut f = match create() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::remove_file(&tmp)?;
                create()?
            }
            other => other?,
        };
        f.write_all(&bytes)?;
        f.sync_data()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Reads the fixed prefix and returns the payload slice.
pub fn check_prefix(bytes: &[u8]) -> Result<&[u8], Problem> {
    check_prefix_with(bytes, true)
}

/// [`check_prefix`], with the payload's CRC-32 checked only if `crc`
/// (bytes known to be ones that passed it: `decode_lazy_indexed`).
pub(crate) fn check_prefix_with(bytes: &[u8], crc: bool) -> Result<&[u8], Problem> {
    if bytes.is_empty() {
        return Err(Problem::Empty);
    }
    // A file shorter than the magic that starts like it is a cut-off dump,
    // not some other file.
    let magic_len = bytes.len().min(MAGIC.len());
    if bytes[..magic_len] != MAGIC[..magic_len] {
        return Err(Problem::NotADump);
    }
    if bytes.len() < PREFIX_LEN {
        // The length field is not (entirely) there: no total to announce.
        return Err(Problem::TruncatedPrefix {
            actual: bytes.len() as u64,
        });
    }
    let word = |r: std::ops::Range<usize>| -> [u8; 8] {
        let mut w = [0u8; 8];
        w[..r.len()].copy_from_slice(&bytes[r]);
        w
    };
    let version = u64::from_le_bytes(word(8..12)) as u32;
    if version != FORMAT_VERSION {
        return Err(Problem::Version {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let payload_len = u64::from_le_bytes(word(12..20));
    let expected_crc = u64::from_le_bytes(word(20..24)) as u32;
    let actual_len = (bytes.len() - PREFIX_LEN) as u64;
    if actual_len < payload_len {
        return Err(Problem::Truncated {
            expected: payload_len.saturating_add(PREFIX_LEN as u64),
            actual: bytes.len() as u64,
        });
    }
    if actual_len > payload_len {
        return Err(Problem::Corrupt {
            offset: PREFIX_LEN as u64 + payload_len,
            reason: format!(
                "{} unexpected bytes after the end of the payload",
                actual_len - payload_len
            ),
        });
    }
    let payload = &bytes[PREFIX_LEN..];
    if !crc {
        return Ok(payload);
    }
    let actual_crc = crc32fast::hash(payload);
    if actual_crc != expected_crc {
        return Err(Problem::Checksum {
            expected: expected_crc,
            actual: actual_crc,
        });
    }
    Ok(payload)
}

/// Decodes a whole file's bytes: prefix, checksum, payload, invariants.
pub fn decode(bytes: &[u8]) -> Result<CrateDump, Problem> {
    let payload = check_prefix(bytes)?;
    let dump = decode_payload(payload).map_err(|p| match p {
        Problem::Corrupt { offset, reason } => Problem::Corrupt {
            offset: offset + PREFIX_LEN as u64,
            reason,
        },
        other => other,
    })?;
    validate(&dump).map_err(|reason| Problem::Invalid { reason })?;
    Ok(dump)
}

/// Reads and decodes one dump file.
pub fn read_file(path: &Path) -> Result<CrateDump, LoadError> {
    let bytes = crate::regular::read_regular(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    decode(&bytes).map_err(|problem| LoadError::Bad {
        path: path.to_owned(),
        problem,
    })
}

/// A slice reader that remembers how far it got, so a decode error can say
/// at which offset the payload stopped making sense.
pub(crate) struct TrackingReader<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) pos: usize,
}

impl Reader for TrackingReader<'_> {
    fn read(&mut self, bytes: &mut [u8]) -> Result<(), DecodeError> {
        let remaining = self.data.len() - self.pos;
        if bytes.len() > remaining {
            return Err(DecodeError::UnexpectedEnd {
                additional: bytes.len() - remaining,
            });
        }
        let end = self.pos + bytes.len();
        bytes.copy_from_slice(&self.data[self.pos..end]);
        self.pos = end;
        Ok(())
    }
}

/// Decodes the bincode payload (no prefix), bounding what the decoder may
/// allocate.
///
/// bincode counts, against its limit, every byte it reserves for a container
/// before reading it; strings stay counted. Our payload's strings are at most
/// the payload's size and the largest outstanding reservation of valid data
/// is far below it, so a limit of four times the payload plus 64 MiB never
/// rejects a real dump, while a corrupt length prefix in a small file fails
/// with "limit exceeded" instead of allocating gigabytes. The limit is a
/// type-level constant in bincode, hence the few buckets.
pub fn decode_payload(payload: &[u8]) -> Result<CrateDump, Problem> {
    const MIB: usize = 1 << 20;
    let needed = payload.len().saturating_mul(4).saturating_add(64 * MIB);
    if needed <= 128 * MIB {
        decode_limited::<{ 128 * MIB }>(payload)
    } else if needed <= 512 * MIB {
        decode_limited::<{ 512 * MIB }>(payload)
    } else if needed <= 2048 * MIB {
        decode_limited::<{ 2048 * MIB }>(payload)
    } else {
        decode_limited::<{ 8192 * MIB }>(payload)
    }
}

fn decode_limited<const LIMIT: usize>(payload: &[u8]) -> Result<CrateDump, Problem> {
    let mut reader = TrackingReader {
        data: payload,
        pos: 0,
    };
    let cfg = config().with_limit::<LIMIT>();
    let result: Result<CrateDump, DecodeError> = bincode::decode_from_reader(&mut reader, cfg);
    match result {
        Ok(dump) if reader.pos == payload.len() => Ok(dump),
        Ok(_) => Err(Problem::Corrupt {
            offset: reader.pos as u64,
            reason: format!(
                "{} bytes left over after the dump",
                payload.len() - reader.pos
            ),
        }),
        Err(e) => Err(Problem::Corrupt {
            offset: reader.pos as u64,
            reason: describe(&e),
        }),
    }
}

pub(crate) fn describe(e: &DecodeError) -> String {
    match e {
        DecodeError::LimitExceeded => {
            "a length field claims more data than the file can hold".to_string()
        }
        DecodeError::UnexpectedEnd { .. } => {
            "the payload ends in the middle of a value".to_string()
        }
        DecodeError::UnexpectedVariant {
            type_name, found, ..
        } => {
            format!("invalid tag {found} for `{type_name}`")
        }
        DecodeError::Utf8 { .. } => "a string is not valid UTF-8".to_string(),
        // bincode's own `Display` of these is its `Debug` text
        // (`InvalidIntegerType { expected: U64, found: U128 }`): worded here.
        DecodeError::InvalidIntegerType { expected, found } => format!(
            "an integer is encoded as {}, where {} was expected",
            integer_type(found),
            integer_type(expected)
        ),
        DecodeError::NonZeroTypeIsZero { .. } => "a value that cannot be zero is zero".to_string(),
        DecodeError::InvalidCharEncoding(_) => "a character is not valid UTF-8".to_string(),
        DecodeError::InvalidBooleanValue(v) => {
            format!("a boolean is {v}, neither 0 nor 1")
        }
        DecodeError::ArrayLengthMismatch { required, found } => {
            format!("an array has {found} elements where {required} were expected")
        }
        DecodeError::OutsideUsizeRange(v) => {
            format!("a length of {v} does not fit in this machine's address space")
        }
        DecodeError::EmptyEnum { type_name } => {
            format!("a value of `{type_name}`, which has no values")
        }
        DecodeError::InvalidDuration { .. } | DecodeError::InvalidSystemTime { .. } => {
            "a time value is out of range".to_string()
        }
        DecodeError::Other(why) => why.to_string(),
        DecodeError::OtherString(why) => why.clone(),
        _ => "a value does not decode".to_string(),
    }
}

/// bincode's integer encodings, as a reader of the message would say them.
fn integer_type(t: &bincode::error::IntegerType) -> &'static str {
    use bincode::error::IntegerType as T;
    match t {
        T::U8 => "an 8-bit unsigned integer",
        T::U16 => "a 16-bit unsigned integer",
        T::U32 => "a 32-bit unsigned integer",
        T::U64 => "a 64-bit unsigned integer",
        T::U128 => "a 128-bit unsigned integer",
        T::Usize => "a pointer-sized unsigned integer",
        T::I8 => "an 8-bit signed integer",
        T::I16 => "a 16-bit signed integer",
        T::I32 => "a 32-bit signed integer",
        T::I64 => "a 64-bit signed integer",
        T::I128 => "a 128-bit signed integer",
        T::Isize => "a pointer-sized signed integer",
        T::Reserved => "a reserved marker",
        // `IntegerType` is `non_exhaustive`.
        _ => "an integer of another width",
    }
}
