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
    LoadError, PREFIX_LEN, Problem, TrackingReader, check_prefix, config, describe,
};
use crate::model::*;
use crate::validate::validate;

/// The bodies of one dump, each decodable alone.
#[derive(Clone)]
pub struct BodyTable {
    /// The whole file, prefix included (offsets in `ranges` and in errors
    /// are file offsets, as in every other message about a dump).
    bytes: Arc<[u8]>,
    /// Per instance, in `CrateDump::instances` order: where its body's
    /// encoding lies in `bytes`, or `None` for an instance without a body.
    ranges: Vec<Option<Range<u32>>>,
    /// Per instance: what linking needs of a body without decoding it.
    facts: Vec<BodyFacts>,
}

/// What is known of a body without decoding it again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BodyFacts {
    /// `Body::arg_count`.
    pub arg_count: u32,
    /// `Body::drop_elaborated`.
    pub drop_elaborated: bool,
}

impl std::fmt::Debug for BodyTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyTable")
            .field("file_bytes", &self.bytes.len())
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

impl BodyTable {
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
        self.bytes.len()
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
        if start < PREFIX_LEN || start > end || end > self.bytes.len() {
            return Err(Problem::Corrupt {
                offset: start as u64,
                reason: format!(
                    "the body of instance {instance} is said to lie at bytes {start}..{end}, outside the payload of this {}-byte file",
                    self.bytes.len()
                ),
            });
        }
        decode_body(&self.bytes[start..end])
            .map(Some)
            .map_err(|p| match p {
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
    fn from_parts(bytes: Arc<[u8]>, ranges: Vec<Option<Range<u32>>>) -> BodyTable {
        let facts = vec![BodyFacts::default(); ranges.len()];
        BodyTable {
            bytes,
            ranges,
            facts,
        }
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
pub fn decode_lazy(bytes: Arc<[u8]>) -> Result<LazyDump, Problem> {
    let payload = check_prefix(&bytes)?;
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
        decode_tracking::<{ 128 * MIB }>(payload)
    } else if needed <= 512 * MIB {
        decode_tracking::<{ 512 * MIB }>(payload)
    } else if needed <= 2048 * MIB {
        decode_tracking::<{ 2048 * MIB }>(payload)
    } else {
        decode_tracking::<{ 8192 * MIB }>(payload)
    };
    let (mut dump, payload_ranges) = decoded.map_err(|p| match p {
        Problem::Corrupt { offset, reason } => Problem::Corrupt {
            offset: offset + PREFIX_LEN as u64,
            reason,
        },
        other => other,
    })?;
    validate(&dump).map_err(|reason| Problem::Invalid { reason })?;
    let facts = dump
        .instances
        .iter_mut()
        .map(|inst| {
            inst.body
                .take()
                .map_or_else(BodyFacts::default, |b| BodyFacts {
                    arg_count: b.arg_count,
                    drop_elaborated: b.drop_elaborated,
                })
        })
        .collect();
    // Payload offsets to file offsets (the file is below 4 GiB, checked above).
    let ranges = payload_ranges
        .into_iter()
        .map(|r| r.map(|r| (r.start + PREFIX_LEN) as u32..(r.end + PREFIX_LEN) as u32))
        .collect();
    Ok(LazyDump {
        dump,
        bodies: BodyTable {
            bytes,
            ranges,
            facts,
        },
    })
}

/// Reads one dump file with its bodies left to decode on demand.
pub fn read_file_lazy(path: &Path) -> Result<LazyDump, LoadError> {
    let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    decode_lazy(bytes.into()).map_err(|problem| LoadError::Bad {
        path: path.to_owned(),
        problem,
    })
}

type Ranges = Vec<Option<Range<usize>>>;

/// The payload decoded as `CrateDump`'s derived `Decode` decodes it, field
/// by field, with each body's payload range noted on the way.
fn decode_tracking<const LIMIT: usize>(payload: &[u8]) -> Result<(CrateDump, Ranges), Problem> {
    let reader = TrackingReader {
        data: payload,
        pos: 0,
    };
    let mut d = DecoderImpl::new(reader, config().with_limit::<LIMIT>(), ());
    let result = decode_dump(&mut d);
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
) -> Result<(CrateDump, Ranges), DecodeError>
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
    let mut instances = Vec::with_capacity(n);
    let mut ranges = Vec::with_capacity(n);
    for _ in 0..n {
        d.unclaim_bytes_read(std::mem::size_of::<Instance>());
        let (inst, range) = decode_instance(d)?;
        instances.push(inst);
        ranges.push(range);
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
    Ok((dump, ranges))
}

/// One `Instance`, its fields in declaration order as the derived `Decode`
/// reads them, and the payload range of its body.
fn decode_instance<'a, C>(
    d: &mut DecoderImpl<TrackingReader<'a>, C, ()>,
) -> Result<(Instance, Option<Range<usize>>), DecodeError>
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
    let (body, range) = match u8::decode(d)? {
        0 => (None, None),
        1 => {
            let start = d.reader().pos;
            let body = Body::decode(d)?;
            (Some(body), Some(start..d.reader().pos))
        }
        found => {
            return Err(DecodeError::UnexpectedVariant {
                type_name: std::any::type_name::<Option<Body>>(),
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
        body,
    };
    Ok((inst, range))
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
            body,
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
            },
            files: vec!["a.rs".into()],
            types: vec![Ty {
                kind: TyKind::Tuple(vec![]),
                display: "()".into(),
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
        let lazy = decode_lazy(crate::encode(&eager).into()).expect("decodes");
        assert_eq!(lazy.bodies.len(), 3);
        assert!(lazy.dump.instances.iter().all(|i| i.body.is_none()));
        for (i, inst) in eager.instances.iter().enumerate() {
            assert_eq!(lazy.bodies.has(i), inst.body.is_some());
            assert_eq!(
                lazy.bodies.facts(i),
                inst.body.as_ref().map(|b| BodyFacts {
                    arg_count: b.arg_count,
                    drop_elaborated: b.drop_elaborated
                })
            );
            assert_eq!(lazy.bodies.decode(i).expect("decodes"), inst.body);
            // Twice: decoding does not consume anything.
            assert_eq!(lazy.bodies.decode(i).expect("decodes"), inst.body);
        }
        let mut without = eager.clone();
        for i in &mut without.instances {
            i.body = None;
        }
        assert_eq!(lazy.dump, without);
    }

    #[test]
    fn a_bad_file_fails_lazily_as_it_fails_eagerly() {
        let bytes = crate::encode(&dump());
        // Every truncation, and every byte flipped with the checksum kept
        // right: the same `Problem` as the eager decode, never a panic.
        for len in 0..bytes.len() {
            let cut = &bytes[..len];
            assert_eq!(
                decode_lazy(cut.into()).err(),
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
                decode_lazy(b.as_slice().into()).err(),
                crate::decode(&b).err(),
                "byte {at} flipped"
            );
        }
    }

    #[test]
    fn a_bad_table_is_an_error_not_a_panic() {
        let lazy = decode_lazy(crate::encode(&dump()).into()).expect("decodes");
        let bytes = lazy.bodies.bytes.clone();
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
