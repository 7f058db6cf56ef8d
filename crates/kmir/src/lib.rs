//! `kmir`: the dump format shared by `kextract` (writer) and `kanalyze` (reader).
//!
//! One file per crate: a fixed prefix (magic, format version, payload length,
//! CRC-32) followed by a bincode-encoded [`CrateDump`]. See
//! `docs/dump-format.md` for the layout and the compatibility rules.

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
