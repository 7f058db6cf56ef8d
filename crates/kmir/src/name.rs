//! [`Name`]: the model's strings, interned.
//!
//! Every symbol, path, type display and other string of a decoded dump is a
//! `Name`: a shared, immutable string. Decoding interns each one in one
//! table for the whole process, so a string that occurs many times (a
//! callee's symbol at each of its call sites, a type display in every dump
//! that uses the type, the path of `core`'s items in every crate) is stored
//! once however many dumps hold it, and cloning a `Name` (the call graph's
//! functions, maps keyed by symbol) copies a pointer.
//!
//! A `Name` behaves as the `str` it holds: it dereferences to `&str`,
//! compares, orders and hashes as that string (so a map keyed by `Name`
//! can be queried with a `&str`), prints as it (`Display` and `Debug`),
//! and is encoded exactly as a `String` (the dump format does not know
//! about interning). Equality never depends on interning: two `Name`s of
//! the same text are equal whether or not they share storage.
//!
//! The table keeps every distinct string decoded or created in the process
//! until the process ends (at most one copy of each; a process that loads
//! dumps holds their strings until it exits anyway).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bincode::de::read::Reader;
use bincode::de::{Decode, Decoder};
use bincode::enc::{Encode, Encoder};
use bincode::error::{DecodeError, EncodeError};
use hashbrown::HashTable;

/// An interned, immutable string (see the module documentation).
#[derive(Clone)]
pub struct Name(Arc<str>);

impl Name {
    /// The interned copy of `s`.
    pub fn new(s: &str) -> Name {
        Name(intern(s))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The interning table: shards selected by the string's hash, so that
/// dumps decoded on several threads rarely wait for one another. Each
/// entry keeps its hash: growing a shard and probing it compare hashes
/// before they read a string.
const SHARDS: usize = 64;

type Shard = Mutex<HashTable<(u64, Arc<str>)>>;

fn table() -> &'static [Shard; SHARDS] {
    static TABLE: OnceLock<[Shard; SHARDS]> = OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(|_| Mutex::new(HashTable::new())))
}

fn intern(s: &str) -> Arc<str> {
    let hash = hash(s.as_bytes());
    // Bits the shard's own table does not use (it takes the low bits for
    // the bucket and the top seven for the tag).
    let shard = (hash >> 32) as usize % SHARDS;
    // A panic while the lock was held cannot leave the table inconsistent
    // (`find` and `insert_unique` are the only operations): ignore
    // poisoning.
    let mut set = table()[shard]
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some((_, found)) = set.find(hash, |(h, a)| *h == hash && **a == *s) {
        return Arc::clone(found);
    }
    let new: Arc<str> = Arc::from(s);
    set.insert_unique(hash, (hash, Arc::clone(&new)), |(h, _)| *h);
    new
}

/// The multiply-rotate hash rustc uses for its own tables, eight bytes at a
/// time, with a final multiply that folds the high half into the low bits:
/// fast on short strings. The table's contents are not chosen by an
/// attacker who could exploit its collisions (a crafted dump can only make
/// its own decode slower, and is bounded in size).
fn hash(bytes: &[u8]) -> u64 {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let add = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(SEED);
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = add(h, u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = add(h, u64::from_le_bytes(w));
    }
    let m = u128::from(h) * u128::from(SEED);
    (m as u64) ^ ((m >> 64) as u64)
}

impl Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl AsRef<std::path::Path> for Name {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(&*self.0)
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl Default for Name {
    fn default() -> Name {
        Name::new("")
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
    }
}

impl Eq for Name {}

impl Hash for Name {
    /// As the `str` hashes: `Borrow<str>` requires it.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

macro_rules! eq_str {
    ($($t:ty),*) => {$(
        impl PartialEq<$t> for Name {
            fn eq(&self, other: &$t) -> bool {
                self.as_str() == AsRef::<str>::as_ref(other)
            }
        }
        impl PartialEq<Name> for $t {
            fn eq(&self, other: &Name) -> bool {
                AsRef::<str>::as_ref(self) == other.as_str()
            }
        }
    )*};
}

eq_str!(str, String);

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name::new(s)
    }
}

impl From<&String> for Name {
    fn from(s: &String) -> Name {
        Name::new(s)
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name::new(&s)
    }
}

impl From<&Name> for Name {
    fn from(s: &Name) -> Name {
        s.clone()
    }
}

impl From<Name> for String {
    fn from(s: Name) -> String {
        s.as_str().to_owned()
    }
}

impl From<&Name> for String {
    fn from(s: &Name) -> String {
        s.as_str().to_owned()
    }
}

/// Encoded as a `String`: a length, then the UTF-8 bytes.
impl Encode for Name {
    fn encode<E: Encoder>(&self, encoder: &mut E) -> Result<(), EncodeError> {
        self.as_str().encode(encoder)
    }
}

/// Decoded as a `String` is (same errors, same offsets), and interned.
/// Short strings are read into a buffer the thread reuses, so a string the
/// table already has costs no allocation.
impl<Context> Decode<Context> for Name {
    fn decode<D: Decoder<Context = Context>>(decoder: &mut D) -> Result<Name, DecodeError> {
        /// Longer strings get a buffer of their own, so that a large one
        /// does not stay allocated in the thread's buffer.
        const REUSED: usize = 4096;
        thread_local! {
            static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let len = u64::decode(decoder)?;
        let len: usize = len
            .try_into()
            .map_err(|_| DecodeError::OutsideUsizeRange(len))?;
        // Counted against the decoder's limit as a `String` would be.
        decoder.claim_container_read::<u8>(len)?;
        let intern = |bytes: &[u8]| match std::str::from_utf8(bytes) {
            Ok(s) => Ok(Name::new(s)),
            Err(inner) => Err(DecodeError::Utf8 { inner }),
        };
        if len > REUSED {
            let mut bytes = vec![0u8; len];
            decoder.reader().read(&mut bytes)?;
            return intern(&bytes);
        }
        BUFFER.with_borrow_mut(|buffer| {
            buffer.clear();
            buffer.resize(len, 0);
            decoder.reader().read(buffer)?;
            intern(buffer)
        })
    }
}

bincode::impl_borrow_decode!(Name);

#[cfg(feature = "serde")]
impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Name {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Name, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(Name::new(&s))
    }
}

/// An item path without its segments' generic arguments:
/// `Vec::<T, A>::push` is `Vec::push`, `std::sync::Mutex::<u32>::lock` is
/// `std::sync::Mutex::lock` (for matching a path a user wrote against the
/// instances of a generic item).
pub fn without_generics(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut depth = 0u32;
    for c in path.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    // `Vec::<T, A>::push` has lost `<T, A>`, leaving `Vec::::push`.
    out.replace("::::", "::")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn interned_names_share_storage_and_behave_as_str() {
        let a = Name::new("kernel::sync::SpinLock::<T>::lock");
        let b = Name::from(String::from("kernel::sync::SpinLock::<T>::lock"));
        assert!(Arc::ptr_eq(&a.0, &b.0), "one copy of each distinct string");
        assert_eq!(a, b);
        assert_eq!(a, "kernel::sync::SpinLock::<T>::lock");
        assert_eq!("kernel::sync::SpinLock::<T>::lock", a);
        assert_ne!(a, Name::new("kernel::sync::SpinLock::<T>::unlock"));
        assert!(a < Name::new("kernel::sync::SpinLock::<T>::unlock"));
        assert_eq!(format!("{a}"), "kernel::sync::SpinLock::<T>::lock");
        assert_eq!(format!("{a:?}"), format!("{:?}", a.as_str()));
        let mut map: HashMap<Name, u32> = HashMap::new();
        map.insert(a.clone(), 1);
        assert_eq!(map.get("kernel::sync::SpinLock::<T>::lock"), Some(&1));
        assert_eq!(a.len(), 33);
    }

    #[test]
    fn encodes_as_a_string() {
        let cfg = bincode::config::standard();
        for s in [
            "",
            "spin_lock",
            "€ and ü",
            &"x".repeat(300),
            &"y".repeat(5000),
        ] {
            let name = Name::new(s);
            let as_name = bincode::encode_to_vec(&name, cfg).unwrap();
            let as_string = bincode::encode_to_vec(s.to_string(), cfg).unwrap();
            assert_eq!(as_name, as_string);
            let (back, n): (Name, usize) = bincode::decode_from_slice(&as_string, cfg).unwrap();
            assert_eq!((back.as_str(), n), (s, as_string.len()));
        }
    }

    #[test]
    fn bad_bytes_are_decode_errors() {
        let cfg = bincode::config::standard();
        // Length 2, then an invalid UTF-8 sequence.
        let r: Result<(Name, usize), _> = bincode::decode_from_slice(&[2, 0xff, 0xfe], cfg);
        assert!(matches!(r, Err(DecodeError::Utf8 { .. })), "{r:?}");
        // Length 5, 2 bytes.
        let r: Result<(Name, usize), _> = bincode::decode_from_slice(&[5, b'a', b'b'], cfg);
        assert!(matches!(r, Err(DecodeError::UnexpectedEnd { .. })), "{r:?}");
    }
}
