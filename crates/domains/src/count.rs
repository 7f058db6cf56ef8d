//! The preemption-count domain: how far the count moved since a function's
//! entry, a known offset or unknown.

/// How far the preemption count moved since the function's entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

impl std::fmt::Display for Adj {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Adj::Known(a) => write!(f, "{a}"),
            Adj::Top => write!(f, "unknown"),
        }
    }
}
