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

/// The standard library's primitive of interior mutability: every cell and
/// lock is built on it.
pub const UNSAFE_CELLS: &[&str] = &["core::cell::UnsafeCell", "core::cell::SyncUnsafeCell"];

impl CrateDump {
    /// Whether code given a `&T` (`ty` is `T`) may change the memory of the
    /// `T` itself: `T` is or contains, through fields and type arguments,
    /// an `UnsafeCell` (every cell, lock and atomic), a trait object or a
    /// closure (which may hide one), or a type the dump does not define
    /// (which might). Memory the `T` reaches through raw pointers is not
    /// the `T`'s own and is not considered (writing there through a shared
    /// borrow's copy of the pointer cannot change the `T`).
    pub fn may_mutate_behind_shared(&self, ty: TyId) -> bool {
        // Asked for every operand of every call the body analysis meets:
        // remembered per dump and type, on each thread (the answer depends
        // only on the dump's type table).
        thread_local! {
            static KNOWN: std::cell::RefCell<std::collections::HashMap<(usize, usize, TyId), bool>> =
                std::cell::RefCell::new(std::collections::HashMap::new());
        }
        // The type table's length too: a dump freed and another decoded
        // at the same address in one process must not match.
        let key = (std::ptr::from_ref(self) as usize, self.types.len(), ty);
        if let Some(v) = KNOWN.with(|k| k.borrow().get(&key).copied()) {
            return v;
        }
        let v = self.interior(ty, &mut Vec::new());
        KNOWN.with(|k| k.borrow_mut().insert(key, v));
        v
    }

    fn interior<'s>(&'s self, ty: TyId, visiting: &mut Vec<&'s str>) -> bool {
        let Some(t) = self.ty(ty) else { return true };
        match &t.kind {
            TyKind::Bool
            | TyKind::Char
            | TyKind::Int(_)
            | TyKind::Uint(_)
            | TyKind::Float(_)
            | TyKind::Str
            | TyKind::Never
            | TyKind::RawPtr { .. }
            | TyKind::FnDef { .. }
            | TyKind::FnPtr { .. } => false,
            TyKind::Ref { pointee, .. } => self.interior(*pointee, visiting),
            TyKind::Array { elem, .. } | TyKind::Slice { elem } => self.interior(*elem, visiting),
            TyKind::Adt { path, args } => {
                self.adt_interior(path, visiting)
                    || args.iter().any(|a| self.interior(*a, visiting))
            }
            TyKind::Tuple(elems) => elems.iter().any(|e| self.interior(*e, visiting)),
            _ => true,
        }
    }

    /// Whether the ADT `path`'s declared fields may hold interior
    /// mutability (its type arguments are checked by the caller). An ADT
    /// already being looked at (a recursive type) adds nothing new.
    fn adt_interior<'s>(&'s self, path: &str, visiting: &mut Vec<&'s str>) -> bool {
        if UNSAFE_CELLS.contains(&path) {
            return true;
        }
        let Some(adt) = self.adt(path) else {
            return true;
        };
        if visiting.contains(&adt.path.as_str()) {
            return false;
        }
        visiting.push(adt.path.as_str());
        let found = adt.variants.iter().flat_map(|v| &v.fields).any(|f| {
            // Every path the declared type names: its head and the paths
            // in its arguments (generic parameters are the instantiation's
            // arguments, checked by the caller).
            f.ty.contains("dyn ")
                || f.ty.contains("{closure")
                || f.ty
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .filter(|tok| tok.contains("::"))
                    .any(|tok| self.adt_interior(tok, visiting))
        });
        visiting.pop();
        found
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
