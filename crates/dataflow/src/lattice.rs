//! Lattices, and the generic ways to build one out of others.
//!
//! An abstract domain is a lattice of its own, and the state the engine
//! carries is usually a product of several: that is why these traits are
//! small and compose. [`bool`] (a one-bit "reached"/"may" fact), [`Option`]
//! (adds a bottom below any lattice), pairs (the product lattice, ordered
//! componentwise) and [`FlatSet`] (a value known exactly, or not) build a
//! domain out of smaller ones, and the product keeps each component's
//! `changed` answer, so the engine still knows when a fixed point is reached.
//!
//! The engine ([`iterate`](crate::iterate)) only ever calls
//! [`JoinSemiLattice::join`]: it knows no domain. What a join means (keeping
//! paths apart, collapsing them, forgetting facts) is each domain's business.
//!
//! Every `join`/`meet` returns whether `self` changed; an implementation
//! must return `false` when (and only when) `self` stays the same, or the
//! iteration stops early or never stops.

/// A join-semilattice: `join` moves `self` up to the least upper bound of
/// `self` and `other` and says whether `self` changed.
pub trait JoinSemiLattice: Clone {
    fn join(&mut self, other: &Self) -> bool;
}

/// A meet-semilattice: `meet` moves `self` down to the greatest lower bound
/// of `self` and `other` and says whether `self` changed.
pub trait MeetSemiLattice: Clone {
    fn meet(&mut self, other: &Self) -> bool;
}

/// `false` below `true`: join is `||`.
impl JoinSemiLattice for bool {
    fn join(&mut self, other: &Self) -> bool {
        let changed = !*self && *other;
        *self |= *other;
        changed
    }
}

/// `false` below `true`: meet is `&&`.
impl MeetSemiLattice for bool {
    fn meet(&mut self, other: &Self) -> bool {
        let changed = *self && !*other;
        *self &= *other;
        changed
    }
}

/// `None` is a new bottom below every `Some`: joining `None` changes
/// nothing, joining into `None` takes the other side.
impl<T: JoinSemiLattice> JoinSemiLattice for Option<T> {
    fn join(&mut self, other: &Self) -> bool {
        match (self.as_mut(), other) {
            (_, None) => false,
            (None, Some(o)) => {
                *self = Some(o.clone());
                true
            }
            (Some(s), Some(o)) => s.join(o),
        }
    }
}

/// `None` is the bottom: meeting with it gives `None`.
impl<T: MeetSemiLattice> MeetSemiLattice for Option<T> {
    fn meet(&mut self, other: &Self) -> bool {
        match (self.as_mut(), other) {
            (None, _) => false,
            (Some(_), None) => {
                *self = None;
                true
            }
            (Some(s), Some(o)) => s.meet(o),
        }
    }
}

/// The product lattice, ordered componentwise: both components join, and
/// the pair changed if either did.
impl<A: JoinSemiLattice, B: JoinSemiLattice> JoinSemiLattice for (A, B) {
    fn join(&mut self, other: &Self) -> bool {
        // Not `||`: the second component must join even if the first changed.
        let a = self.0.join(&other.0);
        let b = self.1.join(&other.1);
        a | b
    }
}

impl<A: MeetSemiLattice, B: MeetSemiLattice> MeetSemiLattice for (A, B) {
    fn meet(&mut self, other: &Self) -> bool {
        let a = self.0.meet(&other.0);
        let b = self.1.meet(&other.1);
        a | b
    }
}

/// The flat lattice over `T`: nothing known yet (`Bottom`), exactly one
/// value (`Elem`), or more than one (`Top`). Height 3, so a loop over it
/// always stabilises; constant propagation is the classic use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlatSet<T> {
    Bottom,
    Elem(T),
    Top,
}

impl<T: Clone + Eq> JoinSemiLattice for FlatSet<T> {
    fn join(&mut self, other: &Self) -> bool {
        let joined = match (&*self, other) {
            (FlatSet::Top, _) | (_, FlatSet::Bottom) => return false,
            (FlatSet::Elem(a), FlatSet::Elem(b)) if a == b => return false,
            (FlatSet::Bottom, o) => o.clone(),
            (FlatSet::Elem(_), _) => FlatSet::Top,
        };
        *self = joined;
        true
    }
}

impl<T: Clone + Eq> MeetSemiLattice for FlatSet<T> {
    fn meet(&mut self, other: &Self) -> bool {
        let met = match (&*self, other) {
            (FlatSet::Bottom, _) | (_, FlatSet::Top) => return false,
            (FlatSet::Elem(a), FlatSet::Elem(b)) if a == b => return false,
            (FlatSet::Top, o) => o.clone(),
            (FlatSet::Elem(_), _) => FlatSet::Bottom,
        };
        *self = met;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `join` and `meet` of every pair of `values`, checked against the
    /// laws: idempotent, commutative, `changed` exactly when `self` moved,
    /// and the result an upper (lower) bound of both sides.
    fn check_laws<T>(values: &[T])
    where
        T: JoinSemiLattice + MeetSemiLattice + PartialEq + std::fmt::Debug,
    {
        for a in values {
            let mut x = a.clone();
            assert!(!x.join(a), "{a:?} ⊔ itself changed");
            assert_eq!(&x, a);
            assert!(!x.meet(a), "{a:?} ⊓ itself changed");
            assert_eq!(&x, a);
            for b in values {
                let mut ab = a.clone();
                let changed = ab.join(b);
                assert_eq!(changed, &ab != a, "{a:?} ⊔ {b:?}: changed flag");
                let mut ba = b.clone();
                ba.join(a);
                assert_eq!(ab, ba, "{a:?} ⊔ {b:?} not commutative");
                // An upper bound: joining either side again changes nothing.
                assert!(!ab.clone().join(a) && !ab.clone().join(b));

                let mut ab = a.clone();
                let changed = ab.meet(b);
                assert_eq!(changed, &ab != a, "{a:?} ⊓ {b:?}: changed flag");
                let mut ba = b.clone();
                ba.meet(a);
                assert_eq!(ab, ba, "{a:?} ⊓ {b:?} not commutative");
                assert!(!ab.clone().meet(a) && !ab.clone().meet(b));
            }
        }
    }

    #[test]
    fn bool_is_or_and() {
        let mut x = false;
        assert!(x.join(&true));
        assert!(x);
        assert!(!x.join(&false));
        assert!(x);
        assert!(x.meet(&false));
        assert!(!x);
        check_laws(&[false, true]);
    }

    #[test]
    fn flat_set() {
        use FlatSet::*;
        let mut x = Bottom;
        assert!(x.join(&Elem(3)));
        assert_eq!(x, Elem(3));
        assert!(!x.join(&Elem(3)));
        assert!(!x.join(&Bottom));
        assert!(x.join(&Elem(4)));
        assert_eq!(x, Top);
        assert!(!x.join(&Elem(5)));
        assert_eq!(x, Top);

        let mut y = Top;
        assert!(y.meet(&Elem(1)));
        assert_eq!(y, Elem(1));
        assert!(y.meet(&Elem(2)));
        assert_eq!(y, Bottom);
        assert!(!y.meet(&Top));

        check_laws(&[Bottom, Elem(1), Elem(2), Top]);
    }

    #[test]
    fn option_adds_a_bottom() {
        use FlatSet::*;
        let mut x: Option<FlatSet<u8>> = None;
        assert!(!x.join(&None));
        assert!(x.join(&Some(Bottom)), "Some(⊥) is above None");
        assert_eq!(x, Some(Bottom));
        assert!(x.join(&Some(Elem(7))));
        assert_eq!(x, Some(Elem(7)));
        assert!(!x.join(&None));
        assert!(x.meet(&None));
        assert_eq!(x, None);
        check_laws(&[None, Some(Bottom), Some(Elem(1)), Some(Elem(2)), Some(Top)]);
    }

    #[test]
    fn pairs_are_the_product() {
        use FlatSet::*;
        let mut x = (false, Elem(1u8));
        // Only the second component moves: still a change.
        assert!(x.join(&(false, Elem(2))));
        assert_eq!(x, (false, Top));
        // Only the first moves.
        assert!(x.join(&(true, Elem(1))));
        assert_eq!(x, (true, Top));
        assert!(!x.join(&(false, Bottom)));
        // Both move at once.
        let mut y = (false, Bottom);
        assert!(y.join(&(true, Elem(9u8))));
        assert_eq!(y, (true, Elem(9)));
        assert!(y.meet(&(false, Top)));
        assert_eq!(y, (false, Elem(9)));

        let mut values = Vec::new();
        for b in [false, true] {
            for f in [Bottom, Elem(1u8), Elem(2), Top] {
                values.push((b, f));
            }
        }
        check_laws(&values);
    }
}
