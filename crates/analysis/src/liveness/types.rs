//! The types object liveness asks about: the type of a place named by a
//! [`PlaceKey`], whether a struct is a handle around one pointer, whether
//! memory reached by a place is still alive.
//!
//! A `PlaceKey`'s field steps carry no type; the body's own places do. The
//! field types a body projects are gathered once per body (`FieldTypes`),
//! which covers every field an object fact names: facts are made from the
//! body's places, and from its callees' summaries mapped through them.

use std::collections::HashMap;

use kmir::{Body, CrateDump, Place, Projection, TyId, TyKind};
use memory::{PlaceKey, ProjKey};

/// The field types a body's places project, by (owner type, variant,
/// index), and the type an accessor step (`ProjKey::Via`, by callee)
/// leads to: what the references its calls here return point to.
#[derive(Debug, Default)]
pub struct FieldTypes(
    HashMap<(TyId, Option<u32>, u32), TyId>,
    HashMap<u32, TyId>,
    /// The type of a lock's data, by its pseudo-local (`memory::guard_data`).
    HashMap<u32, TyId>,
);

impl FieldTypes {
    pub fn of_body(dump: &CrateDump, body: &Body) -> FieldTypes {
        let mut out = HashMap::new();
        kmir::visit::for_each_place(body, |place: &Place, _, _| {
            let Some(mut ty) = body.local(place.local).map(|l| l.ty) else {
                return;
            };
            let mut variant = None;
            for p in place.projection.iter() {
                match p {
                    Projection::Field { index, ty: t } => {
                        out.insert((ty, variant, *index), *t);
                        ty = *t;
                        variant = None;
                    }
                    Projection::Downcast { variant: v } => variant = Some(*v),
                    Projection::Deref => match dump.pointee(ty) {
                        Some(t) => {
                            ty = t;
                            variant = None;
                        }
                        None => return,
                    },
                    Projection::OpaqueCast(t) => ty = *t,
                    _ => return,
                }
            }
        });
        FieldTypes(out, HashMap::new(), HashMap::new())
    }

    /// Records that the data pseudo-local `data` names a `ty`.
    pub fn set_data(&mut self, data: u32, ty: TyId) {
        self.2.insert(data, ty);
    }

    /// Records that accessor `callee`'s result points to a `ty`.
    pub fn set_via(&mut self, callee: u32, ty: TyId) {
        self.1.insert(callee, ty);
    }

    /// The fields of a struct of type `ty` the body projects, with their
    /// types.
    pub fn fields_of(&self, ty: TyId) -> Vec<(u32, TyId)> {
        let mut out: Vec<(u32, TyId)> = self
            .0
            .iter()
            .filter(|((t, v, _), _)| *t == ty && v.is_none())
            .map(|((_, _, i), f)| (*i, *f))
            .collect();
        out.sort_unstable();
        out
    }

    /// The type of the place `key` names in `body`, when every step is
    /// known.
    /// (Somewhere below a place, the type is known again after an
    /// accessor's step.)
    pub fn ty_of(&self, dump: &CrateDump, body: &Body, key: &PlaceKey) -> Option<TyId> {
        let mut ty = match self.2.get(&key.local) {
            Some(t) => Some(*t),
            None => body.local(key.local).map(|l| l.ty),
        };
        let mut variant = None;
        for p in &key.proj {
            match p {
                ProjKey::Field(i) => {
                    ty = Some(*self.0.get(&(ty?, variant, *i))?);
                    variant = None;
                }
                ProjKey::Downcast(v) => variant = Some(*v),
                ProjKey::Deref => {
                    ty = Some(dump.pointee(ty?)?);
                    variant = None;
                }
                ProjKey::Via(f) => {
                    ty = Some(*self.1.get(f)?);
                    variant = None;
                }
                ProjKey::Below | ProjKey::Handle => ty = None,
            }
        }
        ty
    }
}

/// The largest place `key` is the value of: through fields that are a
/// struct's only one (`(*_1).0` of an `Arc` is `*_1`).
pub fn lift(dump: &CrateDump, body: &Body, types: &FieldTypes, key: &PlaceKey) -> PlaceKey {
    let mut key = key.clone();
    while let Some(ProjKey::Field(i)) = key.proj.last().copied() {
        let owner = PlaceKey {
            local: key.local,
            proj: key.proj[..key.proj.len() - 1].to_vec(),
        };
        match types.ty_of(dump, body, &owner) {
            Some(t) if sole_field(dump, t) == Some(i) => key = owner,
            _ => break,
        }
    }
    key
}

/// Library types that are a pointer and nothing else.
pub(crate) const POINTER_NEWTYPES: &[&str] =
    &["core::ptr::non_null::NonNull", "core::ptr::unique::Unique"];

/// Whether a value of `ty` is a pointer that holds no count of its own: a
/// reference, a raw pointer, `NonNull`.
pub fn is_plain_pointer(dump: &CrateDump, ty: TyId) -> bool {
    match dump.ty(ty).map(|t| &t.kind) {
        Some(TyKind::Ref { .. } | TyKind::RawPtr { .. }) => true,
        Some(TyKind::Adt { path, .. }) => POINTER_NEWTYPES.contains(&path.as_str()),
        _ => false,
    }
}

/// Whether `ty` is a reference (what it points to is borrowed for as long
/// as the reference lives).
pub fn is_reference(dump: &CrateDump, ty: TyId) -> bool {
    matches!(dump.ty(ty).map(|t| &t.kind), Some(TyKind::Ref { .. }))
}

/// Whether a declared field type is a marker that holds no value.
fn is_marker(ty: &str) -> bool {
    let head = ty.split('<').next().unwrap_or(ty).trim();
    matches!(
        head,
        "core::marker::PhantomData"
            | "PhantomData"
            | "core::marker::PhantomPinned"
            | "PhantomPinned"
            | "()"
    )
}

/// The one field of a struct that holds its value, when every other field
/// is a marker (`Arc { ptr, _p: PhantomData }`: field 0): the struct is
/// that field, and two of them are the same object when those fields are.
pub fn sole_field(dump: &CrateDump, ty: TyId) -> Option<u32> {
    let adt = dump.adt_of(ty)?;
    if adt.kind != kmir::AdtKind::Struct {
        return None;
    }
    let fields = &adt.variants.first()?.fields;
    let mut real = fields.iter().enumerate().filter(|(_, f)| !is_marker(&f.ty));
    let (i, _) = real.next()?;
    real.next().is_none().then_some(i as u32)
}

/// The declared type (as the dump writes it, generic parameters not
/// substituted) at `steps` below a place of type `from` (its display):
/// how the facts' places that no body projects are typed, from the ADT
/// definitions. `None` where a step leads through a generic parameter or
/// a pointer that is not a reference or raw pointer.
pub fn declared_ty_below(dump: &CrateDump, from: &str, steps: &[ProjKey]) -> Option<String> {
    let mut cur = from.trim().to_string();
    let mut variant: Option<u32> = None;
    for s in steps {
        match s {
            ProjKey::Field(i) => {
                let head = cur.split('<').next().unwrap_or(&cur).trim();
                let adt = dump.adt(head)?;
                let v = adt.variants.get(variant.unwrap_or(0) as usize)?;
                cur = v.fields.get(*i as usize)?.ty.to_string();
                variant = None;
            }
            ProjKey::Downcast(v) => variant = Some(*v),
            ProjKey::Deref => {
                let t = cur.trim_start();
                let rest = t
                    .strip_prefix("*mut ")
                    .or_else(|| t.strip_prefix("*const "))
                    .or_else(|| t.strip_prefix("&mut "))
                    .or_else(|| t.strip_prefix('&'))?;
                // (A lifetime after `&`.)
                let rest = match rest.strip_prefix('\'') {
                    Some(r) => r.split_once(' ').map(|(_, t)| t)?,
                    None => rest,
                };
                cur = rest.trim().to_string();
                variant = None;
            }
            ProjKey::Via(_) | ProjKey::Below | ProjKey::Handle => return None,
        }
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::is_marker;

    #[test]
    fn markers_are_the_zero_sized_wrappers() {
        assert!(is_marker("core::marker::PhantomData<ArcInner<T>>"));
        assert!(is_marker("PhantomPinned"));
        assert!(is_marker("()"));
        assert!(!is_marker("core::ptr::non_null::NonNull<ArcInner<T>>"));
        assert!(!is_marker("u32"));
    }
}
