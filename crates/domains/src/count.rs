//! The preemption-count domain: how far the count moved since a function's
//! entry, a known offset or unknown.
//!
//! As a lattice, [`Adj`] is flat: the known offsets are incomparable, and
//! [`Adj::Top`] is above them all (there is no bottom: an unreached point has
//! no path at all, see [`PcState`](crate::PcState)). The body analysis does
//! not join offsets: it keeps one path per offset, and only collapses them
//! into `Top` past [`MAX_PATHS`](crate::MAX_PATHS).

use dataflow::JoinSemiLattice;

/// How far the preemption count moved since the function's entry.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode,
)]
pub enum Adj {
    Known(i32),
    /// Different on different iterations or paths that could not be kept
    /// apart (too many distinct values).
    Top,
}

impl Adj {
    pub fn shifted(self, delta: i32) -> Adj {
        match self {
            Adj::Known(a) => a.checked_add(delta).map_or(Adj::Top, Adj::Known),
            Adj::Top => Adj::Top,
        }
    }
}

/// The flat join: `Known(a) ⊔ Known(a) = Known(a)`, two different offsets
/// give `Top`, and `Top` absorbs.
impl JoinSemiLattice for Adj {
    fn join(&mut self, other: &Self) -> bool {
        if *self == Adj::Top || self == other {
            return false;
        }
        *self = Adj::Top;
        true
    }
}

impl std::fmt::Display for Adj {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Adj::Known(a) => write!(f, "{a}"),
            Adj::Top => write!(f, "unknown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUES: [Adj; 4] = [Adj::Known(0), Adj::Known(1), Adj::Known(-1), Adj::Top];

    #[test]
    fn join_is_flat() {
        let mut a = Adj::Known(2);
        assert!(!a.join(&Adj::Known(2)));
        assert_eq!(a, Adj::Known(2));
        assert!(a.join(&Adj::Known(3)));
        assert_eq!(a, Adj::Top);
        assert!(!a.join(&Adj::Known(2)));
        assert!(!a.join(&Adj::Top));
        assert_eq!(a, Adj::Top);
        let mut b = Adj::Known(0);
        assert!(b.join(&Adj::Top));
        assert_eq!(b, Adj::Top);
    }

    #[test]
    fn join_laws() {
        for a in VALUES {
            let mut x = a;
            assert!(!x.join(&a), "{a} ⊔ itself changed");
            assert_eq!(x, a);
            for b in VALUES {
                let mut ab = a;
                let changed = ab.join(&b);
                assert_eq!(changed, ab != a, "{a} ⊔ {b}: changed flag");
                let mut ba = b;
                ba.join(&a);
                assert_eq!(ab, ba, "{a} ⊔ {b} not commutative");
                // An upper bound of both.
                let (mut up_a, mut up_b) = (ab, ab);
                assert!(!up_a.join(&a) && !up_b.join(&b));
                for c in VALUES {
                    let (mut l, mut r) = (ab, b);
                    l.join(&c);
                    r.join(&c);
                    let mut r2 = a;
                    r2.join(&r);
                    assert_eq!(l, r2, "({a} ⊔ {b}) ⊔ {c} not associative");
                }
            }
        }
    }

    #[test]
    fn shifting_overflows_to_top() {
        assert_eq!(Adj::Known(1).shifted(-2), Adj::Known(-1));
        assert_eq!(Adj::Known(i32::MAX).shifted(1), Adj::Top);
        assert_eq!(Adj::Top.shifted(1), Adj::Top);
    }
}
