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

const PRIMITIVES: &[&str] = &[
    "bool", "char", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128",
    "isize", "f32", "f64", "()", "str", "!",
];

/// The comma-separated parts of a type list, at the top level only.
fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Declared field types that are a pointer or a marker: nothing of their
/// pointee or argument is in the value's own memory.
fn behind_pointer(declared: &str) -> bool {
    let t = declared.trim_start();
    if t.starts_with('*') || t.starts_with('&') || t.starts_with("fn(") {
        return true;
    }
    let head = t.split('<').next().unwrap_or(t);
    let last = head.rsplit("::").next().unwrap_or(head);
    matches!(
        last,
        "NonNull" | "Unique" | "PhantomData" | "PhantomPinned" | "Box" | "Arc" | "Rc" | "ARef"
    )
}

impl CrateDump {
    /// Whether the memory of a `T` itself (not what it points to) may hold
    /// an `UnsafeCell`: a shared borrow of a `T` without one freezes its
    /// bytes, the pointers it holds included. Like
    /// [`CrateDump::may_mutate_behind_shared`] but stopping at pointers
    /// (`NonNull<ArcInner<T>>` in an `Arc` is a pointer; what it points
    /// to is another object's memory).
    pub fn may_mutate_in_place(&self, ty: TyId) -> bool {
        self.in_place(ty, &mut Vec::new())
    }

    fn in_place<'s>(&'s self, ty: TyId, visiting: &mut Vec<&'s str>) -> bool {
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
            | TyKind::Ref { .. }
            | TyKind::FnDef { .. }
            | TyKind::FnPtr { .. } => false,
            TyKind::Array { elem, .. } | TyKind::Slice { elem } => self.in_place(*elem, visiting),
            TyKind::Tuple(elems) => elems.iter().any(|e| self.in_place(*e, visiting)),
            TyKind::Adt { path, args } => {
                if UNSAFE_CELLS.contains(&path.as_str()) {
                    return true;
                }
                let Some(adt) = self.adt(path) else {
                    return true;
                };
                if visiting.contains(&adt.path.as_str()) {
                    return false;
                }
                let fields: Vec<&str> = adt
                    .variants
                    .iter()
                    .flat_map(|v| &v.fields)
                    .map(|f| f.ty.as_str())
                    .collect();
                if fields.iter().all(|f| behind_pointer(f)) {
                    // Nothing of the arguments is in place either.
                    return false;
                }
                visiting.push(adt.path.as_str());
                let found = fields.iter().filter(|f| !behind_pointer(f)).any(|f| {
                    f.contains("dyn ")
                        || f.contains("{closure")
                        || f.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                            .filter(|tok| tok.contains("::"))
                            .any(|tok| {
                                UNSAFE_CELLS.contains(&tok)
                                    || self
                                        .adt(tok)
                                        .is_some_and(|_| self.adt_in_place_path(tok, visiting))
                            })
                }) || args.iter().any(|a| self.in_place(*a, visiting));
                visiting.pop();
                found
            }
            _ => true,
        }
    }

    /// [`CrateDump::may_mutate_in_place`] of a field's declared type (its
    /// generic parameters unknown: a bare parameter may be any argument).
    pub fn declared_may_mutate_in_place(&self, declared: &str) -> bool {
        self.decl_in_place(declared, &[], 0)
    }

    /// Whether the declared type `decl` may hold a cell in place; `args`
    /// are the declared arguments of the ADT `decl` is a field of (a bare
    /// parameter may be any of them).
    fn decl_in_place(&self, decl: &str, args: &[String], depth: u32) -> bool {
        if depth > 6 {
            return true;
        }
        let t = decl.trim();
        if t.is_empty() || behind_pointer(t) || PRIMITIVES.contains(&t) {
            return false;
        }
        if let Some(inner) = t.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
            return split_top(inner)
                .iter()
                .any(|e| self.decl_in_place(e, args, depth + 1));
        }
        if let Some(inner) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            let elem = inner.split(';').next().unwrap_or(inner);
            return self.decl_in_place(elem, args, depth + 1);
        }
        if t.contains("dyn ") || t.contains("{closure") {
            return true;
        }
        let (head, own_args) = match t.find('<') {
            Some(i) if t.ends_with('>') => (&t[..i], split_top(&t[i + 1..t.len() - 1])),
            _ => (t, Vec::new()),
        };
        if !head.contains("::") {
            // A generic parameter: any of the arguments it may stand for.
            return args.is_empty() || args.iter().any(|a| self.decl_in_place(a, &[], depth + 1));
        }
        if UNSAFE_CELLS.contains(&head) {
            return true;
        }
        let Some(adt) = self.adt(head) else {
            return true;
        };
        adt.variants
            .iter()
            .flat_map(|v| &v.fields)
            .any(|f| self.decl_in_place(&f.ty, &own_args, depth + 1))
    }

    /// [`CrateDump::in_place`] for an ADT named in a declared field type,
    /// whose arguments are not known (taken from its own fields only).
    fn adt_in_place_path<'s>(&'s self, path: &str, visiting: &mut Vec<&'s str>) -> bool {
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
        let found = adt
            .variants
            .iter()
            .flat_map(|v| &v.fields)
            .map(|f| f.ty.as_str())
            .filter(|f| !behind_pointer(f))
            .any(|f| {
                f.contains("dyn ")
                    || f.contains("{closure")
                    || f.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                        .filter(|tok| tok.contains("::"))
                        .any(|tok| self.adt_in_place_path(tok, visiting))
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
