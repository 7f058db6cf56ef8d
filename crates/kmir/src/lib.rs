//! `kmir`: the dump format shared by `kextract` (writer) and `kanalyze` (reader).
//!
//! One file per crate: a fixed prefix (magic, format version, payload length,
//! CRC-32) followed by a bincode-encoded [`CrateDump`]. See
//! `docs/dump-format.md` for the layout and the compatibility rules.
//!
//! Modules besides the model and the codec:
//!
//! * `name`: every string of the model is a `Name`, interned in one
//!   process-wide table; it compares, orders, hashes, prints and encodes
//!   exactly as the string.
//! * `lazy` (`decode_lazy`/`read_file_lazy`): a dump without its bodies and a
//!   `BodyTable` that decodes one body alone, from the open file or the
//!   file's bytes, each checked by its CRC-32; its `BodyIndex` (ranges,
//!   CRC-32s, facts) lets `decode_lazy_indexed`/`read_file_lazy_with` load
//!   the same bytes again without decoding a body (docs/dump-format.md,
//!   "Reading bodies on demand").
//! * `types`: the ADT or enum behind a type, a pointer's pointee, a place's
//!   type, whether memory behind a shared borrow may change (interior
//!   mutability).
//! * `visit`: a read-only MIR `Visitor` and the flow-insensitive questions
//!   built on it: sole assignments, locals written only whole, arguments never
//!   written, which arguments and run-time values flow into a local, the
//!   conditions of the branches leading to a block.

pub mod codec;
pub mod lazy;
pub mod model;
pub mod name;
pub mod regular;
mod types;
mod validate;
pub mod visit;

pub use codec::{
    FORMAT_VERSION, LoadError, MAGIC, Problem, decode, decode_payload, encode, read_file,
    write_file,
};
pub use lazy::{
    BodyFacts, BodyIndex, BodyTable, LazyDump, decode_lazy, decode_lazy_indexed, read_file_lazy,
    read_file_lazy_into, read_file_lazy_with,
};
pub use model::*;
pub use name::Name;
pub use regular::{open_regular, read_regular};
pub use types::UNSAFE_CELLS;
pub use validate::validate;

/// The file extension of dumps.
pub const EXTENSION: &str = "kmir";
