//! Drops a same-object declaration covers (crates/invariants): where the
//! callee's last-reference expectation comes only from a back pointer that
//! names an object kept alive here, it does not apply.
//!
//! The declaration says which function, which struct's values dropped
//! there, which field (a back pointer such as `Node.owner`) and which
//! argument path (`self.to`) names the same object on entry. The analysis
//! checks the rest:
//!
//! * the callee's expectation is about what its first argument holds or
//!   points to, and its last-reference place (`Summary::last_place`,
//!   followed through pointers) reaches the declared field: the
//!   expectation arises only if the reference in that field is the last
//!   one, or from what that reference's object drops when it is;
//! * the object is kept alive at the drop, by the object facts of the
//!   path there: memory a borrow lends for the whole call, or a handle
//!   whose objects are what the path held on entry (the argument itself
//!   while unwritten, or a sharing clone of it under any name, in a handle
//!   of the path's type that cannot be empty), alive and not released by
//!   this drop.
//!
//! So a drop whose expectation comes from anywhere else (another field, a
//! teardown that is not the object's) is left as it was.

use invariants::same_object::Site;
use kmir::{BlockId, TerminatorKind};
use memory::{Facts, Holder, PlaceKey, ProjKey};

use super::BodyAnalysis;
use crate::liveness::types::{POINTER_NEWTYPES, is_plain_pointer, is_reference, sole_field};
use crate::summary::{PlaceStep, Summary};

impl BodyAnalysis<'_> {
    /// Whether a same-object declaration discharges the last-reference
    /// expectation of the site at `block`.
    pub(super) fn same_object_discharges(
        &self,
        block: BlockId,
        terminator: &TerminatorKind,
        summary: &Summary,
        facts: &Facts,
    ) -> bool {
        let sites: Vec<&Site> = self
            .same_objects
            .iter()
            .filter(|(b, _)| *b == block)
            .map(|(_, s)| s)
            .collect();
        if sites.is_empty()
            || !matches!(
                terminator,
                TerminatorKind::Drop { .. } | TerminatorKind::Call { .. }
            )
        {
            return false;
        }
        if summary.last_from.as_deref() != Some(&[0][..]) && summary.last_place.is_none() {
            return false;
        }
        let place = super::run::callee_last_place(summary);
        if self.trace {
            eprintln!(
                "[kanalyze trace] bb{block} same-object declarations: callee place {} {:?}",
                place.describe(),
                place.labels
            );
        }
        let released = self.released_places(facts, terminator);
        sites.iter().any(|s| {
            let Some(j) = place.labels.iter().position(|l| *l == s.field) else {
                return false;
            };
            // After the field: nothing (the reference in it is dropped), or
            // the fields of the handle stored there and then its pointer
            // (what the reference's object drops when it is the last).
            let rest = place.steps.get(j + 1..).unwrap_or(&[]);
            let through_handle = rest.is_empty()
                || rest
                    .iter()
                    .position(|s| !matches!(s, PlaceStep::Field(_)))
                    .is_some_and(|k| rest[k] == PlaceStep::Deref);
            matches!(place.steps.get(j), Some(PlaceStep::Field(_)))
                && through_handle
                && self.entry_object_alive(s, facts, &released)
        })
    }

    /// Whether the object the argument path of `site` referred to on
    /// entry is kept alive at this release, read off the object facts of
    /// the path: memory a borrow lends for the whole call, or a handle (the
    /// argument's own, while unwritten, or a sharing clone of it in a
    /// handle that cannot be empty, whatever the local is called) alive
    /// and not released here.
    fn entry_object_alive(&self, site: &Site, facts: &Facts, released: &[PlaceKey]) -> bool {
        let routes = self.resolve_arg_path(site.arg, &site.fields);
        if routes.is_empty() {
            if self.trace {
                eprintln!(
                    "[kanalyze trace]   same-object path arg{}.{} names no place here",
                    site.arg.saturating_sub(1),
                    site.fields.join(".")
                );
            }
            return false;
        }
        routes
            .into_iter()
            .any(|r| self.route_kept_alive(r, facts, released))
    }

    /// Whether the object at the end of one route of an argument path is
    /// kept alive at this release.
    fn route_kept_alive(&self, route: Resolved, facts: &Facts, released: &[PlaceKey]) -> bool {
        let Resolved {
            place: mut at,
            mut ty,
            declared,
        } = route;
        // Through references: the object is what they point to.
        while let Some(t) = ty.filter(|t| is_reference(self.dump, *t)) {
            at.proj.push(ProjKey::Deref);
            ty = self.dump.pointee(t);
        }
        // (A field no body here projects has no known type: a handle, or
        // memory, the witnesses below decide.)
        if ty
            .or_else(|| self.object_place_ty(&at))
            .is_some_and(|t| !counted(self.dump, t))
        {
            // The object's own memory, reached through borrows: alive while
            // the way to it is (which object it is cannot change).
            return self.alive(&at);
        }
        let target = self.lift(&at);
        if self.trace {
            eprintln!(
                "[kanalyze trace]   same-object path's object: what {} held on entry",
                crate::liveness::contract::describe_place(&at)
            );
        }
        let mut candidates = facts.objects().places();
        candidates.push(at.clone());
        candidates.into_iter().any(|w| {
            let names_it = facts.objects().bounds_of(&w).is_some_and(|b| {
                b.iter().any(|alt| {
                    matches!(alt.as_slice(), [Holder::Entry(p)] if *p == at || self.lift(p) == target)
                })
            });
            let ok = names_it
                && !released
                    .iter()
                    .any(|r| w.starts_with(r) || r.starts_with(&w))
                && if w == at {
                    // The path's own place holds what it held on entry
                    // while unwritten (its bound says so); of a type no
                    // body here projects, as declared.
                    match self.object_place_ty(&w).or(ty) {
                        Some(t) => counted(self.dump, t),
                        None => declared_counted(&declared),
                    }
                } else {
                    // Another place holds at most that object; it holds it
                    // only if it cannot be empty: a handle (not an
                    // `Option`, not a vector) of the path's own type.
                    self.object_place_ty(&w)
                        .is_some_and(|t| self.handle_of_path_type(t, ty, &declared))
                }
                && self.alive(&w);
            if ok && self.trace {
                eprintln!(
                    "[kanalyze trace]   same-object path's object kept alive by {}",
                    crate::liveness::contract::describe_place(&w)
                );
            }
            ok
        })
    }

    /// The places an argument path names, in the object facts' terms: each
    /// field found from the places before it through dereferences and the
    /// fields of wrapper structs, as auto-dereference finds `self.to`
    /// through an `Arc`. Every route is kept (a handle's data is
    /// `(*h)` to one fact and `(*h.ptr).data` to another); none when no
    /// field has the name, or fields of different structs do (two
    /// objects, not two routes to one).
    fn resolve_arg_path(&self, arg: u32, fields: &[String]) -> Vec<Resolved> {
        let start = PlaceKey {
            local: arg,
            proj: Vec::new(),
        };
        let mut at = vec![Resolved {
            ty: self.object_place_ty(&start),
            place: start,
            declared: String::new(),
        }];
        for name in fields {
            // Past the last step only the places are needed.
            let mut layer: Vec<(PlaceKey, kmir::TyId)> = at
                .iter()
                .filter_map(|r| Some((r.place.clone(), r.ty?)))
                .collect();
            let mut hits: Vec<Resolved> = Vec::new();
            let mut owners = Vec::new();
            // A field is a few wrappers deep at most (`ListArc` → `Arc.ptr`
            // → `ArcInner.data` → `DTRWrap.wrapped` → `Transaction.to`).
            for _ in 0..6 {
                let mut next = Vec::new();
                for (p, ty) in &layer {
                    if let Some(adt) = self.dump.adt_of(*ty)
                        && adt.kind == kmir::AdtKind::Struct
                        && let Some(v) = adt.variants.first()
                    {
                        for (j, f) in v.fields.iter().enumerate() {
                            let mut q = p.clone();
                            q.proj.push(ProjKey::Field(j as u32));
                            let t = self.field_ty(&q, *ty, &f.ty);
                            if f.name.as_str() == name {
                                owners.push((adt.path.clone(), j));
                                hits.push(Resolved {
                                    place: q,
                                    ty: t,
                                    declared: f.ty.to_string(),
                                });
                            } else if let Some(t) = t {
                                next.push((q, t));
                            }
                        }
                    }
                    if let Some(t) = self.dump.pointee(*ty) {
                        let mut q = p.clone();
                        q.proj.push(ProjKey::Deref);
                        next.push((q, t));
                    }
                }
                layer = next;
                if layer.is_empty() {
                    break;
                }
            }
            owners.sort();
            owners.dedup();
            if owners.len() != 1 {
                return Vec::new();
            }
            at = hits;
        }
        at
    }

    /// The type of field place `q` of a struct of type `owner`: as the
    /// body projects it, or, for a field the body never names, its
    /// declared type when that is the struct's one type argument (a
    /// wrapper's `wrapped: T`).
    fn field_ty(&self, q: &PlaceKey, owner: kmir::TyId, declared: &str) -> Option<kmir::TyId> {
        if let Some(t) = self.object_place_ty(q) {
            return Some(t);
        }
        let Some(kmir::TyKind::Adt { args, .. }) = self.dump.ty(owner).map(|t| &t.kind) else {
            return None;
        };
        let generic = !declared.is_empty()
            && declared.chars().all(|c| c == '_' || c.is_alphanumeric())
            && self.dump.adt(declared).is_none();
        match args.as_slice() {
            [only] if generic => Some(*only),
            _ => None,
        }
    }
}

impl BodyAnalysis<'_> {
    /// Whether a value of type `t` always holds one object, and is of the
    /// path's type (`path_ty`, or as the path's field is `declared` where
    /// no body here projects it): a struct around one pointer (`Arc`,
    /// `ListArc`), not an enum or a container that can hold none.
    fn handle_of_path_type(
        &self,
        t: kmir::TyId,
        path_ty: Option<kmir::TyId>,
        declared: &str,
    ) -> bool {
        let same_type = match path_ty {
            Some(p) => p == t,
            None => self
                .dump
                .ty(t)
                .is_some_and(|d| d.display.as_str() == declared.trim()),
        };
        same_type
            && self
                .dump
                .adt_of(t)
                .is_some_and(|a| a.kind == kmir::AdtKind::Struct)
            && sole_field(self.dump, t).is_some()
            && counted(self.dump, t)
    }
}

/// Where an argument path leads: the place, its type where known, and
/// the type its last field is declared with (generic parameters as
/// written).
struct Resolved {
    place: PlaceKey,
    ty: Option<kmir::TyId>,
    declared: String,
}

/// Whether a field declared with type `declared` holds a counted handle
/// (`Arc<T>`, `Box<T>`), not a reference, a raw pointer or `NonNull`.
fn declared_counted(declared: &str) -> bool {
    let t = declared.trim();
    let head = t.split('<').next().unwrap_or(t);
    t.contains('<')
        && !t.starts_with(['&', '*'])
        && !POINTER_NEWTYPES
            .iter()
            .any(|p| p.ends_with(head) || head.ends_with(p))
}

/// A handle that counts its object (an `Arc`, a `Box`), not a borrow or a
/// raw pointer.
fn counted(dump: &kmir::CrateDump, ty: kmir::TyId) -> bool {
    matches!(dump.ty(ty).map(|t| &t.kind), Some(kmir::TyKind::Adt { .. }))
        && dump.pointee(ty).is_some()
        && !is_plain_pointer(dump, ty)
}
