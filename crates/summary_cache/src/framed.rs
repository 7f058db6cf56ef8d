//! The framing both cache files share: a fixed header that says what the
//! file is, which format it is in, and how long and what hash its payload
//! has, checked before a byte of the payload is decoded.
//!
//! ```text
//! offset  size  field
//!      0    16  magic
//!     16     4  format version (u32 LE)
//!     20     8  payload length (u64 LE)
//!     28    16  payload hash (xxh3-128, LE)
//!     44     …  payload: bincode 2 standard configuration
//! ```

use twox_hash::XxHash3_128;

/// Bytes before the payload.
pub(crate) const HEADER: usize = 44;

/// One kind of framed file.
pub(crate) struct Frame {
    pub magic: &'static [u8; 16],
    pub version: u32,
    /// What a file with another magic is not ("a kanalyze summary cache").
    pub what: &'static str,
    /// How its versions are called in messages ("cache format").
    pub format: &'static str,
}

impl Frame {
    /// The header of a payload of `len` bytes hashing to `hash`.
    pub(crate) fn header(&self, len: u64, hash: u128) -> Vec<u8> {
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(self.magic);
        header.extend_from_slice(&self.version.to_le_bytes());
        header.extend_from_slice(&len.to_le_bytes());
        header.extend_from_slice(&hash.to_le_bytes());
        header
    }

    /// The whole file for `payload`.
    pub(crate) fn wrap(&self, payload: &[u8]) -> Vec<u8> {
        let mut out = self.header(payload.len() as u64, XxHash3_128::oneshot(payload));
        out.extend_from_slice(payload);
        out
    }

    /// The payload of a file, once its header says it is one of these in
    /// this format and its length and hash match; else why not.
    pub(crate) fn payload<'a>(&self, bytes: &'a [u8]) -> Result<&'a [u8], String> {
        if bytes.len() < HEADER || &bytes[..16] != self.magic {
            return Err(format!("not {}", self.what));
        }
        let u32_at =
            |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default());
        let version = u32_at(16);
        if version != self.version {
            return Err(format!(
                "written in {} {version}, this kanalyze reads format {}",
                self.format, self.version
            ));
        }
        let len = u64::from_le_bytes(bytes[20..28].try_into().unwrap_or_default());
        let hash = u128::from_le_bytes(bytes[28..44].try_into().unwrap_or_default());
        let payload = &bytes[HEADER..];
        if payload.len() as u64 != len {
            return Err(format!(
                "truncated or extended: {} payload byte(s), the header says {len}",
                payload.len()
            ));
        }
        if XxHash3_128::oneshot(payload) != hash {
            return Err("its checksum does not match its contents".into());
        }
        Ok(payload)
    }
}

/// Decodes a checked payload with a memory limit that follows its size: no
/// container holds more than 32 bytes of memory per byte of file, so a
/// corrupt length cannot ask for more.
pub(crate) fn decode_bounded<T: bincode::Decode<()>>(
    payload: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    let need = payload.len().saturating_mul(32);
    let standard = bincode::config::standard();
    if need <= 1 << 24 {
        bincode::decode_from_slice(payload, standard.with_limit::<{ 1 << 24 }>())
    } else if need <= 1 << 28 {
        bincode::decode_from_slice(payload, standard.with_limit::<{ 1 << 28 }>())
    } else if need <= 1 << 32 {
        bincode::decode_from_slice(payload, standard.with_limit::<{ 1 << 32 }>())
    } else {
        bincode::decode_from_slice(payload, standard.with_limit::<{ 1 << 36 }>())
    }
}
