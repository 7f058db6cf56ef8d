//! The places facts are keyed by: a local and the projections an analysis
//! can follow (fields, variants, dereferences, and the canonical steps of
//! places named through unknown pointers, handles and accessors), and the
//! pseudo-locals that name a held lock's data. A leaf of the crate: the
//! value facts (`facts`) and the object facts (`objects`) both speak of
//! places.

use kmir::{LocalId, Place, Projection};

/// A place facts can follow: a local and field/downcast/deref projections.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub struct PlaceKey {
    pub local: LocalId,
    pub proj: Vec<ProjKey>,
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode,
)]
pub enum ProjKey {
    Deref,
    Field(u32),
    Downcast(u32),
    /// The place the function with this id (an accessor: it writes
    /// nothing) returns a reference to, given a reference to the place
    /// before it: two calls of it on one place return one place
    /// (`body::accessors`).
    Via(u32),
    /// Some place at or below the place before it (what a pointer into a
    /// container points to): only object facts name such places, as the
    /// holder of something within the container.
    Below,
    /// Memory of some object a counted handle stored at or below the
    /// place before it refers to (an `Arc` in a container's element): not
    /// the container's own memory, nor memory it owns through raw
    /// pointers.
    Handle,
}

/// The first pseudo-local that names a guard's data (see [`guard_data`]).
const GUARD_DATA_BASE: LocalId = 0xC000_0000;

/// The pseudo-local naming the data of the lock guard local `g` holds:
/// what its `Deref`/`DerefMut` return, whichever call returned it.
pub fn guard_data(g: LocalId) -> LocalId {
    GUARD_DATA_BASE.saturating_add(g).min(crate::ENTRY_ARG0 - 1)
}

/// Whether `local` is a pseudo-local naming a guard's data.
pub fn is_guard_data(local: LocalId) -> bool {
    (GUARD_DATA_BASE..crate::ENTRY_ARG0).contains(&local)
}

impl PlaceKey {
    pub fn local(local: LocalId) -> Self {
        PlaceKey {
            local,
            proj: Vec::new(),
        }
    }

    /// `None` for places through indices or slices: facts never name them.
    pub fn of(place: &Place) -> Option<Self> {
        let mut proj = Vec::with_capacity(place.projection.len());
        for p in &place.projection {
            proj.push(match p {
                Projection::Deref => ProjKey::Deref,
                Projection::Field { index, .. } => ProjKey::Field(*index),
                Projection::Downcast { variant } => ProjKey::Downcast(*variant),
                // A cast of an opaque type is the same memory.
                Projection::OpaqueCast(_) => continue,
                Projection::Index(_)
                | Projection::ConstantIndex { .. }
                | Projection::Subslice { .. } => {
                    return None;
                }
            });
        }
        Some(PlaceKey {
            local: place.local,
            proj,
        })
    }

    /// Behind a pointer: a dereference, or what an accessor returned.
    pub fn has_deref(&self) -> bool {
        self.proj.iter().any(|p| {
            matches!(
                p,
                ProjKey::Deref | ProjKey::Via(_) | ProjKey::Below | ProjKey::Handle
            )
        })
    }

    /// The place an accessor was given, for a place it returned (the
    /// projections before the first `Via`).
    pub(crate) fn via_base(&self) -> Option<PlaceKey> {
        let i = self
            .proj
            .iter()
            .position(|p| matches!(p, ProjKey::Via(_)))?;
        Some(PlaceKey {
            local: self.local,
            proj: self.proj[..i].to_vec(),
        })
    }

    /// Memory that calls and writes through pointers may change: behind a
    /// pointer, or in a lock's data.
    pub fn is_memory(&self) -> bool {
        self.has_deref() || is_guard_data(self.local)
    }

    pub fn starts_with(&self, prefix: &PlaceKey) -> bool {
        self.local == prefix.local && self.proj.starts_with(&prefix.proj)
    }

    pub fn with(&self, proj: ProjKey) -> PlaceKey {
        self.with_suffix(&[proj])
    }

    pub(crate) fn with_suffix(&self, suffix: &[ProjKey]) -> PlaceKey {
        let mut proj = self.proj.clone();
        proj.extend_from_slice(suffix);
        PlaceKey {
            local: self.local,
            proj,
        }
    }
}
