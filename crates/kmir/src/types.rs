//! Questions about types that every consumer of a dump asks: the ADT or
//! enum behind a type, a pointer's pointee, the type of a place.

use crate::model::{AdtDef, AdtKind, Body, CrateDump, Place, Projection, TyId, TyKind};

impl CrateDump {
    /// The definition of the ADT `ty` is an instance of, when the dump has it.
    pub fn adt_of(&self, ty: TyId) -> Option<&AdtDef> {
        match &self.ty(ty)?.kind {
            TyKind::Adt { path, .. } => self.adt(path),
            _ => None,
        }
    }

    /// The definition of `ty` when it is an enum.
    pub fn enum_of(&self, ty: TyId) -> Option<&AdtDef> {
        self.adt_of(ty).filter(|a| a.kind == AdtKind::Enum)
    }

    /// What a dereference of a value of type `ty` reaches: the pointee of a
    /// reference or raw pointer, the first generic argument of a smart
    /// pointer ADT (`Box<T>`, `NonNull<T>`).
    pub fn pointee(&self, ty: TyId) -> Option<TyId> {
        match &self.ty(ty)?.kind {
            TyKind::Ref { pointee, .. } | TyKind::RawPtr { pointee, .. } => Some(*pointee),
            TyKind::Adt { args, .. } => args.first().copied(),
            _ => None,
        }
    }

    /// The type of `place` in `body`, following fields, dereferences,
    /// downcasts and opaque casts; `None` through indexing or slicing.
    pub fn place_ty(&self, body: &Body, place: &Place) -> Option<TyId> {
        let mut ty = body.local(place.local)?.ty;
        for p in &place.projection {
            match p {
                Projection::Field { ty: t, .. } | Projection::OpaqueCast(t) => ty = *t,
                Projection::Deref => ty = self.pointee(ty)?,
                Projection::Downcast { .. } => {}
                _ => return None,
            }
        }
        Some(ty)
    }
}

impl AdtDef {
    /// The discriminant of each variant, in declaration order.
    pub fn discriminants(&self) -> Vec<u128> {
        self.variants.iter().map(|v| v.discr).collect()
    }

    /// The discriminant of variant `index`.
    pub fn discriminant(&self, index: u32) -> Option<u128> {
        self.variants.get(index as usize).map(|v| v.discr)
    }
}
