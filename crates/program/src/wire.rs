//! [`FnId`]s on the wire: the summary cache stores results that name
//! functions, but a `FnId` is only an index into one linked program and
//! another link of other dumps numbers the same function differently.
//!
//! Inside [`encode`] a `FnId` is written as its position in a table of the
//! ids the value names (in order of first appearance), which comes back
//! beside the bytes; the caller stores the table in its own terms (the
//! functions' symbols). [`decode`] reads the positions back through a table
//! of the current program's ids. Outside those two a `FnId` cannot be
//! encoded or decoded at all, so no raw index can leak into stored bytes.

use std::cell::RefCell;
use std::collections::HashMap;

use bincode::de::Decoder;
use bincode::enc::Encoder;
use bincode::error::{DecodeError, EncodeError};
use bincode::{Decode, Encode};

use crate::FnId;

struct Table {
    index: HashMap<FnId, u32>,
    ids: Vec<FnId>,
}

thread_local! {
    static ENCODING: RefCell<Option<Table>> = const { RefCell::new(None) };
    static DECODING: RefCell<Option<Vec<FnId>>> = const { RefCell::new(None) };
}

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encodes `value`; returns its bytes and the functions it names, in the
/// order their positions refer to.
pub fn encode<T: Encode>(value: &T) -> Result<(Vec<u8>, Vec<FnId>), EncodeError> {
    let previous = ENCODING.with(|t| {
        t.borrow_mut().replace(Table {
            index: HashMap::new(),
            ids: Vec::new(),
        })
    });
    let mut bytes = Vec::new();
    let result = bincode::encode_into_std_write(value, &mut bytes, config());
    let table = ENCODING.with(|t| std::mem::replace(&mut *t.borrow_mut(), previous));
    result?;
    Ok((bytes, table.map(|t| t.ids).unwrap_or_default()))
}

/// Decodes a value [`encode`] wrote, its function positions read through
/// `ids` (the same functions in the current program). The whole slice must
/// be one value; a position outside `ids` is an error.
pub fn decode<T: Decode<()>>(bytes: &[u8], ids: Vec<FnId>) -> Result<T, DecodeError> {
    let previous = DECODING.with(|t| t.borrow_mut().replace(ids));
    let cfg = config().with_limit::<{ 1 << 30 }>();
    let result = bincode::decode_from_slice::<T, _>(bytes, cfg);
    DECODING.with(|t| *t.borrow_mut() = previous);
    let (value, read) = result?;
    if read != bytes.len() {
        return Err(DecodeError::OtherString(format!(
            "{} trailing byte(s) after the value",
            bytes.len() - read
        )));
    }
    Ok(value)
}

impl Encode for FnId {
    fn encode<E: Encoder>(&self, encoder: &mut E) -> Result<(), EncodeError> {
        let position = ENCODING.with(|t| {
            let mut t = t.borrow_mut();
            let t = t.as_mut()?;
            let next = t.ids.len() as u32;
            let p = *t.index.entry(*self).or_insert(next);
            if p == next {
                t.ids.push(*self);
            }
            Some(p)
        });
        match position {
            Some(p) => p.encode(encoder),
            None => Err(EncodeError::Other(
                "a function id can only be encoded through `program::wire::encode`",
            )),
        }
    }
}

impl<Context> Decode<Context> for FnId {
    fn decode<D: Decoder<Context = Context>>(decoder: &mut D) -> Result<Self, DecodeError> {
        let p = u32::decode(decoder)?;
        DECODING.with(|t| match t.borrow().as_ref() {
            Some(ids) => ids.get(p as usize).copied().ok_or_else(|| {
                DecodeError::OtherString(format!(
                    "function position {p} outside a table of {}",
                    ids.len()
                ))
            }),
            None => Err(DecodeError::Other(
                "a function id can only be decoded through `program::wire::decode`",
            )),
        })
    }
}

bincode::impl_borrow_decode!(FnId);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_not_indices() {
        let value = vec![(FnId(40), 1u8), (FnId(7), 2), (FnId(40), 3)];
        let (bytes, ids) = encode(&value).unwrap();
        assert_eq!(ids, vec![FnId(40), FnId(7)]);
        // The same value with other indices encodes to the same bytes.
        let renumbered = vec![(FnId(1), 1u8), (FnId(2), 2), (FnId(1), 3)];
        assert_eq!(encode(&renumbered).unwrap().0, bytes);
        let back: Vec<(FnId, u8)> = decode(&bytes, vec![FnId(5), FnId(6)]).unwrap();
        assert_eq!(back, vec![(FnId(5), 1), (FnId(6), 2), (FnId(5), 3)]);
    }

    #[test]
    fn bad_positions_and_trailing_bytes_are_errors() {
        let (bytes, _) = encode(&vec![FnId(3), FnId(4)]).unwrap();
        assert!(decode::<Vec<FnId>>(&bytes, vec![FnId(0)]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode::<Vec<FnId>>(&longer, vec![FnId(0), FnId(1)]).is_err());
    }

    #[test]
    fn no_raw_ids_outside_the_scope() {
        let cfg = bincode::config::standard();
        assert!(bincode::encode_to_vec(FnId(1), cfg).is_err());
        assert!(bincode::decode_from_slice::<FnId, _>(&[1], cfg).is_err());
    }
}
