//! What a function tells its callers about object liveness: its
//! post-conditions, read off its body at its returns, and what it may
//! release as a last reference. Every place is in the function's entry
//! terms: an argument local (`_1`…) and what is behind it; a caller maps
//! them through what it passes (`BodyAnalysis::map_bounds`).

use kmir::LocalId;
use memory::{Bounds, Guarded, Holder, Objects, PlaceKey, ProjKey};

/// The pseudo-local a release's bounds are parked in while the locals of
/// the body are closed over (see [`close`]).
pub const RELEASED: LocalId = 0xBFFF_FFFF;

/// The liveness part of a summary.
#[derive(Clone, Debug, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct Contract {
    /// Where the objects the result refers to are also held, in entry
    /// terms: `Entry` what the caller passed, `At`/`Within` its memory after
    /// the call. `None`: anything.
    pub ret: Option<Bounds>,
    /// The result holds counts of its own on the objects its `Entry`
    /// holders name below the first argument (a `Clone` implementation
    /// returning bit copies of what it was given: a sharing clone).
    pub sharing: bool,
    /// Facts about the arguments' memory that hold once the result is
    /// known to have a value (an identity test returned true).
    pub ret_if: Vec<Guarded>,
    /// Facts about the arguments' memory that hold when it returns.
    pub post: Vec<(PlaceKey, Bounds)>,
    /// What it may release while it could be the last reference, one
    /// entry per release: a caller that shows each held elsewhere
    /// releases no last reference through the call. `None`: anything.
    pub releases: Option<Vec<Bounds>>,
    /// Arguments whose value it keeps in memory another argument points
    /// to (`vec.push(x)`), and where.
    pub keeps: Vec<(LocalId, Holder)>,
    /// The result is a pointer to this place (an accessor's `&self.f`; a
    /// handle's `deref`, into the object: `(*(*arg0))`).
    pub ret_ref: Option<PlaceKey>,
    /// The result (a sharing clone) refers to every object this place
    /// (the handle its argument points to) refers to: a handle cloned
    /// whole, each keeps the other's object alive.
    pub ret_same: Option<PlaceKey>,
    /// It releases only the elements the predicate it is given as this
    /// argument (a local, `_k`) returns false for (`Vec::retain`, from the
    /// spec): what the predicate's contract says of its element when it
    /// returns false holds of each of them.
    pub releases_rejected_by: Option<LocalId>,
}

impl Contract {
    /// Nothing known (a function without a body).
    pub fn unknown() -> Contract {
        Contract {
            ret: None,
            sharing: false,
            ret_if: Vec::new(),
            post: Vec::new(),
            releases: None,
            keeps: Vec::new(),
            ret_ref: None,
            ret_same: None,
            releases_rejected_by: None,
        }
    }

    /// Nothing released, nothing known of the result.
    pub fn releasing_nothing() -> Contract {
        Contract {
            releases: Some(Vec::new()),
            ..Contract::unknown()
        }
    }

    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(r) = &self.ret {
            out.push(format!(
                "result {}: {}",
                if self.sharing {
                    "(a sharing clone)"
                } else {
                    "held by"
                },
                describe_bounds(r)
            ));
        }
        for g in &self.ret_if {
            let facts: Vec<String> = g
                .bounds
                .iter()
                .map(|(p, b)| format!("{} held by {}", describe_place(p), describe_bounds(b)))
                .collect();
            out.push(format!(
                "when the result {} {}: {}",
                if g.discr { "has discriminant" } else { "is" },
                g.when,
                facts.join("; ")
            ));
        }
        for (p, b) in &self.post {
            out.push(format!(
                "on return {} held by {}",
                describe_place(p),
                describe_bounds(b)
            ));
        }
        match &self.releases {
            None => out.push("may release anything as a last reference".into()),
            Some(r) if r.is_empty() => {}
            Some(r) => {
                let each: Vec<String> = r.iter().map(describe_bounds).collect();
                out.push(format!(
                    "may release as a last reference what is held by {}",
                    each.join("; ")
                ));
            }
        }
        if let Some(p) = &self.ret_ref {
            out.push(format!("returns a pointer to {}", describe_place(p)));
        }
        if let Some(p) = &self.ret_same {
            out.push(format!(
                "the result refers to every object {} refers to",
                describe_place(p)
            ));
        }
        if let Some(k) = self.releases_rejected_by {
            out.push(format!(
                "releases only what its predicate `arg{}` rejects",
                k.saturating_sub(1)
            ));
        }
        for (k, h) in &self.keeps {
            out.push(format!(
                "keeps what `arg{}` held at {}",
                k - 1,
                describe_holder(h)
            ));
        }
        out
    }
}

/// A place in entry terms, as `(*arg0).1`.
pub fn describe_place(p: &PlaceKey) -> String {
    let mut s = if p.local == 0 {
        "result".to_string()
    } else if p.local == RELEASED {
        "released".to_string()
    } else {
        format!("arg{}", p.local.saturating_sub(1))
    };
    for step in &p.proj {
        match step {
            ProjKey::Deref => s = format!("(*{s})"),
            ProjKey::Field(f) => s.push_str(&format!(".{f}")),
            ProjKey::Downcast(v) => s.push_str(&format!(" as variant {v}")),
            ProjKey::Via(n) => s.push_str(&format!(".<via {n}>")),
            ProjKey::Below => s.push_str(".<somewhere below>"),
            ProjKey::Handle => s.push_str(".<in an object a handle there refers to>"),
        }
    }
    format!("`{s}`")
}

pub fn describe_holder(h: &Holder) -> String {
    match h {
        Holder::At(p) => describe_place(p),
        Holder::Within(p) => format!("something within {}", describe_place(p)),
        Holder::Object(p) => format!("the object {} is in", describe_place(p)),
        Holder::Entry(p) => format!("what {} held on entry", describe_place(p)),
        Holder::Taken(f) => format!("field {} of `{}` (taken out)", f.index, f.owner),
    }
}

pub fn describe_bounds(b: &Bounds) -> String {
    let each: Vec<String> = b
        .iter()
        .map(|bound| {
            if bound.is_empty() {
                "nothing (it refers to no object)".to_string()
            } else {
                bound
                    .iter()
                    .map(describe_holder)
                    .collect::<Vec<_>>()
                    .join(" or ")
            }
        })
        .collect();
    each.join(", and also ")
}

/// Whether `p` is memory behind an argument (what a caller can name).
pub fn in_arg_memory(p: &PlaceKey, args: u32) -> bool {
    (1..=args).contains(&p.local) && p.proj.contains(&ProjKey::Deref)
}

/// Whether the bounds name only what a caller can name: arguments (on
/// entry), memory behind them, fields (taken).
fn callers_terms(b: &Bounds, args: u32) -> Bounds {
    b.map(|h| match h {
        Holder::At(p) | Holder::Within(p) | Holder::Object(p) if !in_arg_memory(p, args) => None,
        Holder::Entry(p) if !(1..=args).contains(&p.local) => None,
        other => Some(vec![other.clone()]),
    })
}

/// The facts of a path with every local of the body gone, as at a return:
/// holders naming a local are replaced by what the local held (its
/// bounds), down to what the caller passed and its memory. `_0` and the
/// pseudo-local [`RELEASED`] are kept.
pub fn close(objects: &Objects) -> Objects {
    let mut o = objects.clone();
    let mut locals: Vec<LocalId> = o
        .places()
        .into_iter()
        .map(|p| p.local)
        .filter(|&l| l != 0 && l != RELEASED)
        .collect();
    locals.sort_unstable();
    locals.dedup();
    for l in locals {
        // An argument's own value goes; what it points to is the caller's.
        o.kill_own(&PlaceKey::local(l));
    }
    o
}

/// The bounds of `bounds` (a release at some point of the body, in the
/// body's terms, with `objects` the facts there) in entry terms.
pub fn release_in_entry_terms(objects: &Objects, bounds: &Bounds, args: u32) -> Option<Bounds> {
    let mut o = objects.clone();
    let released = PlaceKey::local(RELEASED);
    o.kill(&released, None);
    o.set(released.clone(), bounds.clone());
    let closed = close(&o);
    let b = callers_terms(&closed.bounds_of(&released)?, args);
    (!b.is_empty()).then_some(b)
}

/// What one return path says: the result's bounds, the arguments' memory
/// bounds, where arguments were kept.
pub struct ReturnFacts {
    pub objects: Objects,
}

impl ReturnFacts {
    /// The facts both return paths share.
    pub fn join(mut self, other: &ReturnFacts) -> ReturnFacts {
        self.objects.join(&other.objects);
        self
    }

    pub fn of(facts: &memory::Facts) -> ReturnFacts {
        let mut objects = facts.objects().clone();
        // The result may be named by the place it was copied from.
        let ret = PlaceKey::local(0);
        let key = facts.object_key(&ret);
        if key != ret
            && let Some(b) = objects.bounds_of(&key)
        {
            objects.set(ret, b);
        }
        ReturnFacts {
            objects: close(&objects),
        }
    }

    pub fn ret(&self, args: u32) -> Option<Bounds> {
        let b = callers_terms(&self.objects.bounds_of(&PlaceKey::local(0))?, args);
        (!b.is_empty()).then_some(b)
    }

    /// The bounds of argument memory that say more than "what it held on
    /// entry".
    pub fn post(&self, args: u32) -> Vec<(PlaceKey, Bounds)> {
        self.objects
            .iter()
            .filter(|(k, _)| in_arg_memory(k, args))
            .filter_map(|(k, b)| {
                // "What it held on entry" says nothing of a place.
                let b = callers_terms(b, args).map(|h| match h {
                    Holder::Entry(q) if q == k => None,
                    other => Some(vec![other.clone()]),
                });
                (!b.is_empty()).then(|| ((*k).clone(), b))
            })
            .collect()
    }

    pub fn kept(&self, args: u32) -> Vec<(LocalId, Holder)> {
        (1..=args)
            .filter_map(|l| {
                let h = self.objects.kept(l)?;
                match h {
                    // In the caller's memory, or in the result.
                    Holder::At(p) | Holder::Within(p) if in_arg_memory(p, args) || p.local == 0 => {
                        Some((l, h.clone()))
                    }
                    _ => None,
                }
            })
            .collect()
    }
}

/// Joins what two return paths say keeps each argument's object alive: the
/// same holder stays; two places of one local become "some value stored
/// below" their longest common definite prefix (the `Ok` and `Err`
/// payloads of a result become the result: one of them holds it on every
/// path); anything else is dropped.
fn join_keeps(
    a: Vec<(LocalId, Holder)>,
    b: &[(LocalId, Holder)],
    args: u32,
) -> Vec<(LocalId, Holder)> {
    a.into_iter()
        .filter_map(|(l, h)| {
            let (_, g) = b.iter().find(|(m, _)| *m == l)?;
            if *g == h {
                return Some((l, h));
            }
            let (p, q) = match (&h, g) {
                (Holder::At(p) | Holder::Within(p), Holder::At(q) | Holder::Within(q))
                    if p.local == q.local =>
                {
                    (memory::objects::definite(p), memory::objects::definite(q))
                }
                _ => return None,
            };
            let n = p
                .proj
                .iter()
                .zip(&q.proj)
                .take_while(|(x, y)| x == y)
                .count();
            let common = PlaceKey {
                local: p.local,
                proj: p.proj[..n].to_vec(),
            };
            (common.local == 0 || in_arg_memory(&common, args))
                .then_some((l, Holder::Within(common)))
        })
        .collect()
}

/// Joins the bounds of two return paths (`None`: anything).
pub fn join_bounds(a: Option<Bounds>, b: Option<Bounds>) -> Option<Bounds> {
    let (a, b) = (a?, b?);
    let mut x = Objects::default();
    let mut y = Objects::default();
    let k = PlaceKey::local(RELEASED);
    x.set(k.clone(), a);
    y.set(k.clone(), b);
    x.join(&y);
    x.bounds_of(&k)
}

/// What the result's value can be, for facts guarded by it: its possible
/// values (a `bool`'s) or discriminants (an enum's).
pub struct Shapes {
    pub values: Vec<u128>,
    pub discr: bool,
}

/// A function's contract, read off the facts of its return paths (of every
/// run), with what its sites may release (`releases`, in entry terms).
pub fn read(
    returns: &[memory::Facts],
    releases: Option<Vec<Bounds>>,
    args: u32,
    shapes: Option<&Shapes>,
    sharing: bool,
    ret_is_pointer: bool,
) -> Contract {
    let mut ret: Option<Option<Bounds>> = None;
    let mut joined: Option<ReturnFacts> = None;
    let mut keeps: Option<Vec<(LocalId, Holder)>> = None;
    let mut ret_ref: Option<Option<PlaceKey>> = None;
    for f in returns {
        let r = f
            .pointee(&kmir::Operand::Copy(kmir::Place {
                local: 0,
                projection: Box::new([]),
            }))
            .filter(|_| ret_is_pointer)
            .map(|p| f.object_key(&p))
            .filter(|p| in_arg_memory(p, args));
        ret_ref = Some(match ret_ref {
            None => r,
            Some(q) => q.filter(|q| Some(q) == r.as_ref()),
        });
        let rf = ReturnFacts::of(f);
        ret = Some(match ret {
            None => rf.ret(args),
            Some(r) => join_bounds(r, rf.ret(args)),
        });
        let k = rf.kept(args);
        keeps = Some(match keeps {
            None => k,
            Some(q) => join_keeps(q, &k, args),
        });
        joined = Some(match joined {
            None => rf,
            Some(j) => j.join(&rf),
        });
    }
    let post = joined.map(|j| j.post(args));
    let post = post.unwrap_or_default();
    let mut ret_if = Vec::new();
    if let Some(shapes) = shapes.filter(|s| s.values.len() >= 2) {
        let aspect = if shapes.discr {
            memory::Aspect::Discr
        } else {
            memory::Aspect::Value
        };
        for &v in &shapes.values {
            let mut joined: Option<ReturnFacts> = None;
            let mut excluded = false;
            for f in returns {
                let mut f = f.clone();
                let r = f.resolve(&PlaceKey::local(0), aspect);
                if !f.assume(&r, Some(v), &[]) {
                    excluded = true;
                    continue;
                }
                let rf = ReturnFacts::of(&f);
                joined = Some(match joined {
                    None => rf,
                    Some(j) => j.join(&rf),
                });
            }
            // Only what the shape adds to what every return says.
            let more: Vec<(PlaceKey, Bounds)> = joined
                .map(|j| j.post(args))
                .unwrap_or_default()
                .into_iter()
                .filter(|e| !post.contains(e))
                .collect();
            if excluded || !more.is_empty() {
                if more.is_empty() {
                    continue;
                }
                ret_if.push(Guarded {
                    when: v,
                    discr: shapes.discr,
                    two_valued: shapes.values.len() == 2,
                    bounds: more,
                });
            }
        }
    }
    Contract {
        ret: ret.flatten(),
        sharing,
        ret_if,
        post,
        releases,
        keeps: keeps.unwrap_or_default(),
        ret_ref: ret_ref.flatten(),
        ret_same: None,
        releases_rejected_by: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(local: LocalId, proj: &[ProjKey]) -> PlaceKey {
        PlaceKey {
            local,
            proj: proj.to_vec(),
        }
    }

    /// `?` on a `Result`: one return keeps the argument in the `Continue`
    /// payload, the other in the `Break`'s `Err`; either way the result
    /// holds it, so the join keeps it below `_0`.
    #[test]
    fn keeps_of_two_payloads_join_below_their_common_prefix() {
        let cont = at(0, &[ProjKey::Downcast(0), ProjKey::Field(0)]);
        let brk = at(
            0,
            &[
                ProjKey::Downcast(1),
                ProjKey::Field(0),
                ProjKey::Downcast(1),
            ],
        );
        let joined = join_keeps(vec![(1, Holder::At(cont))], &[(1, Holder::At(brk))], 1);
        assert_eq!(joined, [(1, Holder::Within(at(0, &[])))]);
    }

    #[test]
    fn equal_keeps_stay_and_one_sided_keeps_go() {
        let mem = at(2, &[ProjKey::Deref, ProjKey::Field(1)]);
        let joined = join_keeps(
            vec![(1, Holder::At(mem.clone())), (2, Holder::At(at(0, &[])))],
            &[(1, Holder::At(mem.clone()))],
            2,
        );
        assert_eq!(joined, [(1, Holder::At(mem))]);
    }

    /// Two places that share only an argument's own local (not memory the
    /// caller can see after the call) keep nothing.
    #[test]
    fn keeps_whose_common_prefix_is_a_local_of_the_callee_go() {
        let a = at(1, &[ProjKey::Field(0)]);
        let b = at(1, &[ProjKey::Field(1)]);
        assert!(join_keeps(vec![(2, Holder::At(a))], &[(2, Holder::At(b))], 2).is_empty());
    }
}
