//! Bodies decoded on demand.
//!
//! The format has no offset table: a body is its bincode bytes in the
//! middle of its instance, and its length is only known by decoding it.
//! [`decode_lazy`] therefore decodes a file once, as [`crate::decode`] does
//! (prefix, checksum, the bounded decode, [`crate::validate`]), noting where
//! each instance's body starts and ends, and then drops the bodies: the dump
//! it returns has every `Instance::body` set to `None`, and its
//! [`BodyTable`] holds the file's bytes and the range of every body in them,
//! so that one body can be decoded again alone, whenever it is needed, as
//! often as it is needed. A body decoded from the table is equal to the one
//! the eager decode gives (tested on every fixture and dump the tests can
//! reach).
//!
//! The bytes are the file's as read and checked at load; nothing writes to
//! them afterwards, so a body decoded from them later is one that was
//! already decoded and validated. Decoding one still goes through the
//! bounded decoder and says what is wrong rather than panicking, should a
//! table ever be built from other bytes.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bincode::de::{Decode, Decoder, DecoderImpl};
use bincode::error::{AllowedEnumVariants, DecodeError};

use crate::codec::{
    LoadError, PREFIX_LEN, Problem, TrackingReader, check_prefix_with, config, describe,
};
use crate::model::*;
use crate::validate::{Early, check_body, check_body_early, validate_with};

/// The bodies of one dump, each decodable alone.
#[derive(Clone)]
pub struct BodyTable {
    /// The whole file, prefix included (offsets in `ranges` and in errors
    /// are file offsets, as in every other message about a dump).
    bytes: Source,
    /// The length of the file.
    file_len: usize,
    /// Per instance, in `CrateDump::instances` order: where its body's
    /// encoding lies in `bytes`, or `None` for an instance without a body.
    ranges: Vec<Option<Range<u32>>>,
    /// Per instance: what linking needs of a body without decoding it.
    facts: Vec<BodyFacts>,
    /// Per instance: the CRC-32 of its body's bytes, to tell, when they
    /// are read again from the file, that they are still the ones checked.
    crcs: Vec<u32>,
}

/// Where the bodies' bytes are read from.
#[derive(Clone)]
enum Source {
    /// The file's bytes, kept in memory.
    Memory(Arc<Vec<u8>>),
    /// The file, still open: each body is read again when it is decoded,
    /// so the process does not hold the file's bytes (the operating
    /// system's page cache does). A writer that replaces the file (as
    /// `write_file` does, by renaming) leaves this one as it was; one that
    /// writes into it is caught by the body's CRC-32.
    #[cfg(unix)]
    File(Arc<std::fs::File>),
}

/// What is known of a body without decoding it again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct BodyFacts {
    /// `Body::arg_count`.
    pub arg_count: u32,
    /// `Body::drop_elaborated`.
    pub drop_elaborated: bool,
    /// Blocks plus statements: what analysing the body roughly costs (the
    /// solve starts the costliest chains first).
    pub size: u32,
}

impl BodyFacts {
    pub fn of(body: &crate::Body) -> BodyFacts {
        BodyFacts {
            arg_count: body.arg_count,
            drop_elaborated: body.drop_elaborated,
            size: body
                .blocks
                .iter()
                .map(|b| 1 + b.statements.len() as u32)
                .fold(0u32, u32::saturating_add),
        }
    }
}

impl std::fmt::Debug for BodyTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyTable")
            .field("file_bytes", &self.file_len)
            .field("bodies", &self.ranges.iter().flatten().count())
            .finish()
    }
}

/// A dump whose bodies are decoded on demand: `dump` has no bodies (every
/// `Instance::body` is `None`), `bodies` decodes them.
#[derive(Debug)]
pub struct LazyDump {
    pub dump: CrateDump,
    pub bodies: BodyTable,
}

/// What the load learns of a dump's bodies by decoding them: where each
/// lies in the file, its CRC-32 and its [`BodyFacts`]. Kept (by the
/// analyser's per-dump cache, under the hash of the file's bytes), it lets
/// [`read_file_lazy_with`] load the same bytes again without decoding a
/// single body.
#[derive(Clone, Debug, Default, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct BodyIndex {
    /// Per instance: the file range of its body, `None` without one.
    pub ranges: Vec<Option<(u32, u32)>>,
    pub facts: Vec<BodyFacts>,
    pub crcs: Vec<u32>,
}

impl BodyTable {
    /// The table's index: what [`read_file_lazy_with`] needs to load the
    /// same file again without decoding its bodies.
    pub fn index(&self) -> BodyIndex {
        BodyIndex {
            ranges: self
                .ranges
                .iter()
                .map(|r| r.as_ref().map(|r| (r.start, r.end)))
                .collect(),
            facts: self.facts.clone(),
            crcs: self.crcs.clone(),
        }
    }

    /// The number of instances the table describes (those of its dump).
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether instance `instance` has a body.
    pub fn has(&self, instance: usize) -> bool {
        matches!(self.ranges.get(instance), Some(Some(_)))
    }

    /// What is known of instance `instance`'s body without decoding it,
    /// if it has one.
    pub fn facts(&self, instance: usize) -> Option<BodyFacts> {
        self.has(instance).then(|| self.facts[instance])
    }

    /// The bytes of the file the bodies are decoded from.
    pub fn file_len(&self) -> usize {
        self.file_len
    }

    /// The encoded size of instance `instance`'s body, if it has one.
    pub fn encoded_len(&self, instance: usize) -> Option<usize> {
        let r = self.ranges.get(instance)?.as_ref()?;
        Some((r.end - r.start) as usize)
    }

    /// Decodes instance `instance`'s body: `Ok(None)` for an instance
    /// without one (or past the end of the table).
    pub fn decode(&self, instance: usize) -> Result<Option<Body>, Problem> {
        let Some(Some(range)) = self.ranges.get(instance) else {
            return Ok(None);
        };
        let (start, end) = (range.start as usize, range.end as usize);
        if start < PREFIX_LEN || start > end || end > self.file_len {
            return Err(Problem::Corrupt {
                offset: start as u64,
                reason: format!(
                    "the body of instance {instance} is said to lie at bytes {start}..{end}, outside the payload of this {}-byte file",
                    self.file_len
                ),
            });
        }
        let expected = self.crcs.get(instance).copied().unwrap_or_default();
        let checked = |bytes: &[u8]| {
            if crc32fast::hash(bytes) == expected {
                decode_body(bytes)
            } else {
                Err(Problem::Corrupt {
                    offset: 0,
                    reason: "its bytes are not the ones read when the dump was loaded: the file was written to since".to_string(),
                })
            }
        };
        let decoded = match &self.bytes {
            Source::Memory(bytes) => checked(&bytes[start..end]),
            #[cfg(unix)]
            Source::File(file) => BUFFER.with(|buffer| {
                use std::os::unix::fs::FileExt;
                let mut buffer = buffer.borrow_mut();
                buffer.clear();
                buffer.resize(end - start, 0);
                match file.read_exact_at(&mut buffer, start as u64) {
                    Ok(()) => checked(&buffer),
                    Err(e) => Err(Problem::Corrupt {
                        offset: 0,
                        reason: format!("it cannot be read again: {e}"),
                    }),
                }
            }),
        };
        decoded.map(Some).map_err(|p| match p {
            Problem::Corrupt { offset, reason } => Problem::Corrupt {
                offset: offset + start as u64,
                reason: format!("in the body of instance {instance}: {reason}"),
            },
            other => other,
        })
    }

    /// A table over other bytes and ranges, for the tests of what a bad
    /// table does.
    #[cfg(test)]
    fn from_parts(bytes: Arc<Vec<u8>>, ranges: Vec<Option<Range<u32>>>) -> BodyTable {
        let facts = vec![BodyFacts::default(); ranges.len()];
        let crcs = ranges
            .iter()
            .map(|r| {
                r.as_ref()
                    .and_then(|r| bytes.get(r.start as usize..r.end as usize))
                    .map_or(0, crc32fast::hash)
            })
            .collect();
        BodyTable {
            file_len: bytes.len(),
            bytes: Source::Memory(bytes),
            ranges,
            facts,
            crcs,
        }
    }
}

thread_local! {
    /// The bytes of the body being read from a file, reused.
    #[cfg(unix)]
    static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl BodyTable {
    /// Whether the table reads its bodies from the file rather than from
    /// bytes in memory.
    pub fn reads_file(&self) -> bool {
        !matches!(self.bytes, Source::Memory(_))
    }
}

/// Decodes one body's bytes (exactly one `Body`, nothing left over),
/// bounding what the decoder may allocate as `decode_payload` does.
fn decode_body(bytes: &[u8]) -> Result<Body, Problem> {
    const MIB: usize = 1 << 20;
    let needed = bytes.len().saturating_mul(4).saturating_add(64 * MIB);
    if needed <= 128 * MIB {
        decode_exactly::<Body, { 128 * MIB }>(bytes)
    } else if needed <= 512 * MIB {
        decode_exactly::<Body, { 512 * MIB }>(bytes)
    } else if needed <= 2048 * MIB {
        decode_exactly::<Body, { 2048 * MIB }>(bytes)
    } else {
        decode_exactly::<Body, { 8192 * MIB }>(bytes)
    }
}

fn decode_exactly<T: Decode<()>, const LIMIT: usize>(bytes: &[u8]) -> Result<T, Problem> {
    let reader = TrackingReader {
        data: bytes,
        pos: 0,
    };
    let mut d = DecoderImpl::new(reader, config().with_limit::<LIMIT>(), ());
    let result = T::decode(&mut d);
    let pos = d.reader().pos;
    match result {
        Ok(v) if pos == bytes.len() => Ok(v),
        Ok(_) => Err(Problem::Corrupt {
            offset: pos as u64,
            reason: format!("{} bytes left over after the value", bytes.len() - pos),
        }),
        Err(e) => Err(Problem::Corrupt {
            offset: pos as u64,
            reason: describe(&e),
        }),
    }
}

/// Decodes a whole file's bytes as [`crate::decode`] does (prefix,
/// checksum, bounded decode, `validate`: the same checks in the same order,
/// so the same errors), but returns the dump without its bodies and the
/// table that decodes each of them alone.
pub fn decode_lazy(bytes: Vec<u8>) -> Result<LazyDump, Problem> {
    decode_lazy_indexed(bytes, None)
}

/// [`decode_lazy`], or, given the [`BodyIndex`] of these very bytes (the
/// caller has checked that they are the ones the index was made from:
/// the analyser keys it by the hash of the whole file), the same dump
/// without decoding or checking any body again: each body's bytes are
/// stepped over by its range. Everything else is decoded and checked as
/// [`decode_lazy`] does. An index that does not fit the bytes (a body
/// where it says none is, or elsewhere) is an error, never a wrong dump.
pub fn decode_lazy_indexed(bytes: Vec<u8>, index: Option<&BodyIndex>) -> Result<LazyDump, Problem> {
    decode_lazy_owned(bytes, index).map_err(|(problem, _)| problem)
}

/// [`decode_lazy_indexed`], giving the bytes back with the problem.
fn decode_lazy_owned(
    bytes: Vec<u8>,
    index: Option<&BodyIndex>,
) -> Result<LazyDump, (Problem, Vec<u8>)> {
    match decode_parts(&bytes, index) {
        Ok((dump, ranges, facts, crcs)) => Ok(LazyDump {
            dump,
            bodies: BodyTable {
                file_len: bytes.len(),
                bytes: Source::Memory(Arc::new(bytes)),
                ranges,
                facts,
                crcs,
            },
        }),
        Err(problem) => Err((problem, bytes)),
    }
}

/// The dump without its bodies, and the ranges, facts and checksums of
/// its bodies.
#[allow(clippy::type_complexity)]
fn decode_parts(
    bytes: &[u8],
    index: Option<&BodyIndex>,
) -> Result<(CrateDump, Vec<Option<Range<u32>>>, Vec<BodyFacts>, Vec<u32>), Problem> {
    // Bytes an index was made from passed the checksum then (the caller
    // matched them by a hash of the whole file): the prefix is checked,
    // the payload's CRC-32 is not computed again.
    let payload = check_prefix_with(bytes, index.is_none())?;
    if bytes.len() > u32::MAX as usize {
        return Err(Problem::Corrupt {
            offset: 0,
            reason: format!(
                "the file has {} bytes; dumps of 4 GiB or more cannot be read",
                bytes.len()
            ),
        });
    }
    const MIB: usize = 1 << 20;
    let needed = payload.len().saturating_mul(4).saturating_add(64 * MIB);
    let decoded = if needed <= 128 * MIB {
        decode_tracking::<{ 128 * MIB }>(payload, index)
    } else if needed <= 512 * MIB {
        decode_tracking::<{ 512 * MIB }>(payload, index)
    } else if needed <= 2048 * MIB {
        decode_tracking::<{ 2048 * MIB }>(payload, index)
    } else {
        decode_tracking::<{ 8192 * MIB }>(payload, index)
    };
    let (dump, decoded) = decoded.map_err(|p| match p {
        Problem::Corrupt { offset, reason } => Problem::Corrupt {
            offset: offset + PREFIX_LEN as u64,
            reason,
        },
        other => other,
    })?;
    // The checks `validate` makes, in its order: each body was checked as
    // it was decoded, against the type and file tables; the few that
    // refer to vtables were kept and are checked now, with the table.
    // Bodies stepped over by an index were checked when it was made.
    let mut again = decoded.again.iter().peekable();
    validate_with(&dump, |c, i, _| {
        if let Some((_, body)) = again.next_if(|(k, _)| *k == i) {
            return check_body(c, body);
        }
        match &decoded.failed {
            Some((k, reason)) if *k == i => Err(reason.clone()),
            _ => Ok(()),
        }
    })
    .map_err(|reason| Problem::Invalid { reason })?;
    if let Some(index) = index {
        // The ranges were checked against the file as it was stepped
        // through; the facts and checksums come with them.
        if index.facts.len() != dump.instances.len() || index.crcs.len() != dump.instances.len() {
            return Err(Problem::Corrupt {
                offset: 0,
                reason: "the body index does not describe this dump's instances".to_string(),
            });
        }
        let ranges = index
            .ranges
            .iter()
            .map(|r| r.map(|(start, end)| start..end))
            .collect();
        return Ok((dump, ranges, index.facts.clone(), index.crcs.clone()));
    }
    let Decoded {
        ranges: payload_ranges,
        facts,
        ..
    } = decoded;
    // Payload offsets to file offsets (the file is below 4 GiB, checked above).
    let crcs = payload_ranges
        .iter()
        .map(|r| {
            r.as_ref()
                .map_or(0, |r| crc32fast::hash(&payload[r.clone()]))
        })
        .collect();
    let ranges = payload_ranges
        .into_iter()
        .map(|r| r.map(|r| (r.start + PREFIX_LEN) as u32..(r.end + PREFIX_LEN) as u32))
        .collect();
    Ok((dump, ranges, facts, crcs))
}

/// Reads one dump file with its bodies left to decode on demand: read
/// again from the file, which stays open, when one is decoded (on Unix;
/// elsewhere, from the file's bytes kept in memory).
pub fn read_file_lazy(path: &Path) -> Result<LazyDump, LoadError> {
    read_file_lazy_with(path, |_| None).map(|(lazy, _)| lazy)
}

/// [`read_file_lazy`], asking `known` for the [`BodyIndex`] of the file's
/// bytes (it sees them all, to hash them): with one, no body is decoded
/// (`decode_lazy_indexed`). Also returns whether an index was used. An
/// index that does not fit the bytes is dropped and the file decoded in
/// full; `known` is then told why (`Err`), so that the caller can say so.
pub fn read_file_lazy_with(
    path: &Path,
    known: impl FnOnce(&[u8]) -> Option<BodyIndex>,
) -> Result<(LazyDump, Result<bool, Problem>), LoadError> {
    read_file_lazy_into(path, &mut Vec::new(), known)
}

/// [`read_file_lazy_with`], reading the file into `buffer` (on Unix,
/// where the bodies are read again from the open file, the bytes are not
/// kept: a caller that loads many files reuses one buffer, and the memory
/// of each is not mapped and cleared afresh).
pub fn read_file_lazy_into(
    path: &Path,
    buffer: &mut Vec<u8>,
    known: impl FnOnce(&[u8]) -> Option<BodyIndex>,
) -> Result<(LazyDump, Result<bool, Problem>), LoadError> {
    use std::io::Read;
    let io = |source| LoadError::Io {
        path: path.to_owned(),
        source,
    };
    let bad = |problem| LoadError::Bad {
        path: path.to_owned(),
        problem,
    };
    let mut file = crate::regular::open_regular(path).map_err(io)?;
    buffer.clear();
    file.read_to_end(buffer).map_err(io)?;
    let index = known(buffer);
    #[cfg(unix)]
    {
        let (parts, used) = match index {
            None => (decode_parts(buffer, None).map_err(bad)?, Ok(false)),
            Some(index) => match decode_parts(buffer, Some(&index)) {
                Ok(parts) => (parts, Ok(true)),
                // The bytes decode without it, or fail as they would have.
                Err(why) => (decode_parts(buffer, None).map_err(bad)?, Err(why)),
            },
        };
        let (dump, ranges, facts, crcs) = parts;
        let lazy = LazyDump {
            dump,
            bodies: BodyTable {
                file_len: buffer.len(),
                bytes: Source::File(Arc::new(file)),
                ranges,
                facts,
                crcs,
            },
        };
        Ok((lazy, used))
    }
    #[cfg(not(unix))]
    {
        let bytes = buffer.clone();
        match index {
            None => Ok((decode_lazy(bytes).map_err(bad)?, Ok(false))),
            Some(index) => match decode_lazy_owned(bytes, Some(&index)) {
                Ok(lazy) => Ok((lazy, Ok(true))),
                Err((why, bytes)) => Ok((decode_lazy(bytes).map_err(bad)?, Err(why))),
            },
        }
    }
}

/// What decoding the bodies found, besides the dump without them.
struct Decoded {
    /// Per instance, the payload range of its body.
    ranges: Vec<Option<Range<usize>>>,
    facts: Vec<BodyFacts>,
    /// The bodies to check again once the vtable table is known, by
    /// instance, in order.
    again: Vec<(usize, Body)>,
    /// The first body (by instance) whose check failed, and why.
    failed: Option<(usize, String)>,
}

/// The payload decoded as `CrateDump`'s derived `Decode` decodes it, field
/// by field, with each body's payload range noted on the way.
fn decode_tracking<const LIMIT: usize>(
    payload: &[u8],
    index: Option<&BodyIndex>,
) -> Result<(CrateDump, Decoded), Problem> {
    let reader = TrackingReader {
        data: payload,
        pos: 0,
    };
    let mut d = DecoderImpl::new(reader, config().with_limit::<LIMIT>(), ());
    let result = decode_dump(&mut d, index);
    let pos = d.reader().pos;
    match result {
        Ok(v) if pos == payload.len() => Ok(v),
        Ok(_) => Err(Problem::Corrupt {
            offset: pos as u64,
            reason: format!("{} bytes left over after the dump", payload.len() - pos),
        }),
        Err(e) => Err(Problem::Corrupt {
            offset: pos as u64,
            reason: describe(&e),
        }),
    }
}

fn decode_dump<'a, C>(
    d: &mut DecoderImpl<TrackingReader<'a>, C, ()>,
    index: Option<&BodyIndex>,
) -> Result<(CrateDump, Decoded), DecodeError>
where
    C: bincode::config::Config,
{
    let header = Header::decode(d)?;
    let files = Vec::<Name>::decode(d)?;
    let types = Vec::<Ty>::decode(d)?;
    let n = u64::decode(d)?;
    let n: usize = n
        .try_into()
        .map_err(|_| DecodeError::OutsideUsizeRange(n))?;
    d.claim_container_read::<Instance>(n)?;
    if let Some(index) = index
        && index.ranges.len() != n
    {
        return Err(DecodeError::Other(
            "the body index does not describe this dump's instances",
        ));
    }
    let mut instances = Vec::with_capacity(n);
    let mut decoded = Decoded {
        ranges: Vec::with_capacity(n),
        facts: Vec::with_capacity(n),
        again: Vec::new(),
        failed: None,
    };
    for i in 0..n {
        d.unclaim_bytes_read(std::mem::size_of::<Instance>());
        let skip = index.map(|index| index.ranges[i]);
        let (inst, body) = decode_instance(d, skip)?;
        let (range, facts) = match body {
            None => (None, BodyFacts::default()),
            Some((range, body)) => {
                // Checked now and dropped (the allocator reuses its memory
                // for the next one), unless it refers to vtables.
                match check_body_early(types.len(), files.len(), &inst.name, &body) {
                    Early::Done => {}
                    Early::Again => decoded.again.push((i, body.clone())),
                    Early::Failed(reason) => {
                        if decoded.failed.is_none() {
                            decoded.failed = Some((i, reason));
                        }
                    }
                }
                let facts = BodyFacts::of(&body);
                (Some(range), facts)
            }
        };
        instances.push(inst);
        decoded.ranges.push(range);
        decoded.facts.push(facts);
    }
    let vtables = Vec::<Vtable>::decode(d)?;
    let statics = Vec::<StaticItem>::decode(d)?;
    let items = Vec::<ItemAttrs>::decode(d)?;
    let adts = Vec::<AdtDef>::decode(d)?;
    let externals = Vec::<External>::decode(d)?;
    // Every field named: a field added to `CrateDump` must be decoded here.
    let dump = CrateDump {
        header,
        files,
        types,
        instances,
        vtables,
        statics,
        items,
        adts,
        externals,
    };
    Ok((dump, decoded))
}

/// One `Instance`, its fields in declaration order as the derived `Decode`
/// reads them, without its body; the body apart, with its payload range.
#[allow(clippy::type_complexity)]
fn decode_instance<'a, C>(
    d: &mut DecoderImpl<TrackingReader<'a>, C, ()>,
    skip: Option<Option<(u32, u32)>>,
) -> Result<(Instance, Option<(Range<usize>, Body)>), DecodeError>
where
    C: bincode::config::Config,
{
    let symbol = Name::decode(d)?;
    let name = Name::decode(d)?;
    let item_path = Name::decode(d)?;
    let trait_item = Option::<Name>::decode(d)?;
    let kind = InstanceKind::decode(d)?;
    let span = Span::decode(d)?;
    let exported = bool::decode(d)?;
    let fn_sig = Option::<Name>::decode(d)?;
    let unsafe_fn = bool::decode(d)?;
    let inline = Inline::decode(d)?;
    let codegenned = bool::decode(d)?;
    // `Option<Body>`: a tag byte, then the body.
    let body = match (u8::decode(d)?, skip) {
        (0, None | Some(None)) => None,
        // Known from the index: stepped over, not decoded. Its file range
        // must start here (payload offsets are file offsets less the
        // prefix) and end inside the payload.
        (1, Some(Some((start, end)))) => {
            let reader = d.reader();
            let (start, end) = (start as usize, end as usize);
            if start != reader.pos + PREFIX_LEN
                || end < start
                || end - PREFIX_LEN > reader.data.len()
            {
                return Err(DecodeError::Other(
                    "the body index does not fit this dump's bytes",
                ));
            }
            reader.pos = end - PREFIX_LEN;
            None
        }
        (0 | 1, Some(_)) => {
            return Err(DecodeError::Other(
                "the body index does not fit this dump's bytes",
            ));
        }
        (1, None) => {
            let start = d.reader().pos;
            let body = Body::decode(d)?;
            Some((start..d.reader().pos, body))
        }
        (found, _) => {
            return Err(DecodeError::UnexpectedVariant {
                type_name: std::any::type_name::<Option<Box<Body>>>(),
                allowed: &AllowedEnumVariants::Range { min: 0, max: 1 },
                found: found as u32,
            });
        }
    };
    // Every field named: a field added to `Instance` must be decoded here.
    let inst = Instance {
        symbol,
        name,
        item_path,
        trait_item,
        kind,
        span,
        exported,
        fn_sig,
        unsafe_fn,
        inline,
        codegenned,
        body: None,
    };
    Ok((inst, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span() -> Span {
        Span::DUMMY
    }

    fn body(blocks: usize) -> Body {
        Body {
            arg_count: 0,
            locals: vec![LocalDecl {
                ty: 0,
                span: span(),
                mutable: true,
            }],
            blocks: (0..blocks)
                .map(|_| Block {
                    statements: vec![Statement {
                        kind: StatementKind::StorageLive(0),
                        span: span(),
                    }],
                    terminator: Terminator {
                        kind: TerminatorKind::Return,
                        span: span(),
                    },
                    is_cleanup: false,
                })
                .collect(),
            var_names: vec![],
            span: span(),
            drop_elaborated: true,
        }
    }

    fn dump() -> CrateDump {
        let inst = |symbol: &str, body: Option<Body>| Instance {
            symbol: symbol.into(),
            name: symbol.into(),
            item_path: symbol.into(),
            trait_item: None,
            kind: InstanceKind::Item,
            span: span(),
            exported: false,
            fn_sig: None,
            unsafe_fn: false,
            inline: Inline::None,
            codegenned: true,
            body: body.map(Box::new),
        };
        CrateDump {
            header: Header {
                producer: "test".into(),
                rustc_version: "rustc".into(),
                crate_name: "t".into(),
                crate_types: vec!["lib".into()],
                target: "x".into(),
                stable_crate_id: 1,
                edition: "2024".into(),
                drop_elaborated_mir: true,
                host: "x".into(),
                dependencies: Vec::new(),
            },
            files: vec!["a.rs".into()],
            types: vec![Ty {
                kind: TyKind::Tuple(vec![]),
                display: "()".into(),
                size: Some(0),
            }],
            instances: vec![
                inst("a", Some(body(1))),
                inst("b", None),
                inst("c", Some(body(3))),
            ],
            vtables: vec![],
            statics: vec![],
            items: vec![],
            adts: vec![],
            externals: vec![],
        }
    }

    #[test]
    fn bodies_decoded_alone_equal_the_eager_ones() {
        let eager = dump();
        let lazy = decode_lazy(crate::encode(&eager)).expect("decodes");
        assert_eq!(lazy.bodies.len(), 3);
        assert!(lazy.dump.instances.iter().all(|i| i.body.is_none()));
        for (i, inst) in eager.instances.iter().enumerate() {
            assert_eq!(lazy.bodies.has(i), inst.body.is_some());
            assert_eq!(
                lazy.bodies.facts(i),
                inst.body.as_ref().map(|b| BodyFacts::of(b))
            );
            assert_eq!(
                lazy.bodies.decode(i).expect("decodes"),
                inst.body.as_deref().cloned()
            );
            // Twice: decoding does not consume anything.
            assert_eq!(
                lazy.bodies.decode(i).expect("decodes"),
                inst.body.as_deref().cloned()
            );
        }
        let mut without = eager.clone();
        for i in &mut without.instances {
            i.body = None;
        }
        assert_eq!(lazy.dump, without);
    }

    #[test]
    fn an_index_steps_over_the_bodies_and_gives_the_same_dump() {
        let bytes = crate::encode(&dump());
        let full = decode_lazy(bytes.clone()).expect("decodes");
        let index = full.bodies.index();
        let indexed = decode_lazy_indexed(bytes.clone(), Some(&index)).expect("decodes");
        assert_eq!(indexed.dump, full.dump);
        assert_eq!(indexed.bodies.index(), index);
        for i in 0..full.bodies.len() {
            assert_eq!(
                indexed.bodies.decode(i).expect("decodes"),
                full.bodies.decode(i).expect("decodes")
            );
        }
        // An index of other bytes: an error, never another dump.
        let mut shifted = index.clone();
        if let Some(Some(r)) = shifted.ranges.get_mut(0) {
            r.0 += 1;
        }
        assert!(decode_lazy_indexed(bytes.clone(), Some(&shifted)).is_err());
        let mut none = index.clone();
        none.ranges[0] = None;
        assert!(decode_lazy_indexed(bytes.clone(), Some(&none)).is_err());
        let mut some = index.clone();
        some.ranges[1] = Some((0, 0));
        assert!(decode_lazy_indexed(bytes.clone(), Some(&some)).is_err());
        let mut short = index.clone();
        short.ranges.pop();
        assert!(decode_lazy_indexed(bytes.clone(), Some(&short)).is_err());
        let mut past = index.clone();
        if let Some(Some(r)) = past.ranges.get_mut(2) {
            r.1 = u32::MAX;
        }
        assert!(decode_lazy_indexed(bytes.clone(), Some(&past)).is_err());
        let mut facts = index;
        facts.facts.pop();
        assert!(decode_lazy_indexed(bytes, Some(&facts)).is_err());
    }

    #[test]
    fn a_bad_file_fails_lazily_as_it_fails_eagerly() {
        let bytes = crate::encode(&dump());
        // Every truncation, and every byte flipped with the checksum kept
        // right: the same `Problem` as the eager decode, never a panic.
        for len in 0..bytes.len() {
            let cut = &bytes[..len];
            assert_eq!(
                decode_lazy(cut.to_vec()).err(),
                crate::decode(cut).err(),
                "cut at {len}"
            );
        }
        for at in PREFIX_LEN..bytes.len() {
            let mut b = bytes.clone();
            b[at] ^= 0x5a;
            let crc = crc32fast::hash(&b[PREFIX_LEN..]);
            b[20..24].copy_from_slice(&crc.to_le_bytes());
            assert_eq!(
                decode_lazy(b.clone()).err(),
                crate::decode(&b).err(),
                "byte {at} flipped"
            );
        }
    }

    /// A body that refers to vtable `v` (an unsizing cast).
    fn with_vtable(v: VtableId) -> Body {
        let mut b = body(1);
        let place = Place {
            local: 0,
            projection: Box::new([]),
        };
        b.blocks[0].statements.push(Statement {
            kind: StatementKind::Assign {
                place: place.clone(),
                rvalue: Box::new(Rvalue::Cast {
                    kind: CastKind::Unsize { vtable: Some(v) },
                    operand: Operand::Copy(place),
                    ty: 0,
                }),
            },
            span: span(),
        });
        b
    }

    #[test]
    fn the_first_problem_is_the_eager_decodes_first() {
        // Bodies are checked as they are decoded, before the vtable table:
        // the problem reported is still the one `validate` finds first.
        let mut bad_ty = body(1);
        bad_ty.locals[0].ty = 99;
        let cases = [
            vec![with_vtable(5), bad_ty.clone()],
            vec![bad_ty.clone(), with_vtable(5)],
            vec![with_vtable(0), bad_ty.clone()],
            vec![with_vtable(0), body(2)],
        ];
        for bodies in cases {
            let mut d = dump();
            for (inst, b) in d.instances.iter_mut().zip(bodies) {
                inst.body = Some(Box::new(b));
            }
            let bytes = crate::encode(&d);
            let eager = crate::decode(&bytes).err();
            assert_eq!(decode_lazy(bytes).err(), eager);
        }
        let mut d = dump();
        d.instances[0].body = Some(Box::new(with_vtable(5)));
        d.instances[1].body = Some(Box::new(bad_ty));
        let err = decode_lazy(crate::encode(&d)).expect_err("invalid");
        assert_eq!(
            err.to_string(),
            "inconsistent dump: vtable id 5 out of range (0 vtables) (in instance `a`)"
        );
    }

    #[cfg(unix)]
    #[test]
    fn bodies_read_again_from_the_file() {
        let dir = std::env::temp_dir().join(format!("kmir-lazy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("t.kmir");
        let eager = dump();
        crate::write_file(&eager, &path).expect("written");
        let lazy = read_file_lazy(&path).expect("reads");
        assert!(lazy.bodies.reads_file());
        for (i, inst) in eager.instances.iter().enumerate() {
            assert_eq!(
                lazy.bodies.decode(i).expect("decodes"),
                inst.body.as_deref().cloned()
            );
        }
        // Replaced (a new file renamed over it, as kextract writes): the
        // open file is still the one loaded.
        let mut other = dump();
        other.instances[0].body = Some(Box::new(body(7)));
        crate::write_file(&other, &path).expect("rewritten");
        assert_eq!(
            lazy.bodies.decode(0).expect("decodes"),
            eager.instances[0].body.as_deref().cloned()
        );
        // Written into: the body's checksum tells.
        let lazy = read_file_lazy(&path).expect("reads");
        let range = lazy.bodies.ranges[0].clone().expect("a body");
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[range.end as usize - 1] ^= 1;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
            .expect("written in place");
        let err = lazy.bodies.decode(0).expect_err("changed");
        assert!(
            err.to_string().contains("the file was written to since"),
            "{err}"
        );
        assert_eq!(
            lazy.bodies.decode(2).expect("untouched"),
            eager.instances[2].body.as_deref().cloned()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_bad_table_is_an_error_not_a_panic() {
        let lazy = decode_lazy(crate::encode(&dump())).expect("decodes");
        let Source::Memory(bytes) = lazy.bodies.bytes.clone() else {
            panic!("decoded from memory")
        };
        let good = lazy.bodies.ranges[2].clone().expect("has a body");
        let outside = BodyTable::from_parts(bytes.clone(), vec![Some(good.start..u32::MAX)]);
        let err = outside.decode(0).expect_err("out of the file");
        assert!(err.to_string().contains("outside the payload"), "{err}");
        let truncated = BodyTable::from_parts(bytes.clone(), vec![Some(good.start..good.end - 1)]);
        let err = truncated.decode(0).expect_err("cut short");
        assert!(
            err.to_string()
                .contains("in the body of instance 0: the payload ends in the middle of a value"),
            "{err}"
        );
        let shifted = BodyTable::from_parts(bytes.clone(), vec![Some(good.start + 1..good.end)]);
        assert!(shifted.decode(0).is_err());
        let reversed = BodyTable::from_parts(bytes, vec![Some(good.end..good.start)]);
        let err = reversed.decode(0).expect_err("reversed");
        assert!(err.to_string().contains("outside the payload"), "{err}");
    }
}
