//! [`ExpectRange`]: klint's `ExpectationRange`, a set of allowed entry
//! preemption counts.

use std::fmt;
use std::str::FromStr;

use crate::token::{self, Cursor, Punct, Tok, Tree};

/// A set of allowed entry preemption counts: `[lo, hi)` with `hi = None`
/// unbounded.
///
/// Every operation that can produce an empty range returns the canonical
/// empty range [`ExpectRange::EMPTY`] (`0..0`, klint's own "unsatisfiable"
/// value), so that derived equality agrees with set equality.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, bincode::Encode, bincode::Decode)]
pub struct ExpectRange {
    pub lo: u32,
    pub hi: Option<u32>,
}

impl ExpectRange {
    /// `0..`: any context.
    pub const TOP: ExpectRange = ExpectRange { lo: 0, hi: None };
    /// The canonical empty range (displayed `unsatisfiable`).
    pub const EMPTY: ExpectRange = ExpectRange { lo: 0, hi: Some(0) };

    /// `{n}`. `n = u32::MAX` cannot be represented with an exclusive `u32`
    /// bound; it becomes `u32::MAX..`, which no real count distinguishes.
    pub fn exactly(n: u32) -> Self {
        ExpectRange {
            lo: n,
            hi: n.checked_add(1),
        }
    }

    /// `lo..`.
    pub fn at_least(lo: u32) -> Self {
        ExpectRange { lo, hi: None }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self.hi, Some(hi) if self.lo >= hi)
    }

    /// `other ⊆ self`, as sets (so the empty range is contained in every range).
    pub fn contains(&self, other: &ExpectRange) -> bool {
        if other.is_empty() {
            return true;
        }
        if self.is_empty() || other.lo < self.lo {
            return false;
        }
        match (self.hi, other.hi) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(a), Some(b)) => b <= a,
        }
    }

    pub fn contains_value(&self, n: u32) -> bool {
        n >= self.lo && self.hi.is_none_or(|hi| n < hi)
    }

    /// The meet (klint's `MeetSemiLattice::meet`).
    pub fn intersect(&self, other: &ExpectRange) -> ExpectRange {
        let lo = self.lo.max(other.lo);
        let hi = match (self.hi, other.hi) {
            (None, h) | (h, None) => h,
            (Some(a), Some(b)) => Some(a.min(b)),
        };
        ExpectRange { lo, hi }.canonical()
    }

    /// Entry counts `e` such that `e + adj ∈ self` (klint's `E − A` for a
    /// known adjustment `A`): both bounds move by `−adj`, saturating at 0
    /// (a count is never negative) and at `u32::MAX`; empty if impossible.
    pub fn shift_back(&self, adj: i32) -> ExpectRange {
        self.offset(-i64::from(adj))
    }

    /// `{ e + adj | e ∈ self }`, keeping only non-negative counts (klint's
    /// `E + A`, used for "the possible preemption count at this point").
    pub fn shift(&self, adj: i32) -> ExpectRange {
        self.offset(i64::from(adj))
    }

    fn offset(&self, by: i64) -> ExpectRange {
        if self.is_empty() {
            return ExpectRange::EMPTY;
        }
        // i64 holds every u32 ± i32, so nothing here can overflow.
        let clamp = |v: i64| v.clamp(0, i64::from(u32::MAX)) as u32;
        ExpectRange {
            lo: clamp(i64::from(self.lo) + by),
            hi: self.hi.map(|hi| clamp(i64::from(hi) + by)),
        }
        .canonical()
    }

    fn canonical(self) -> ExpectRange {
        if self.is_empty() {
            ExpectRange::EMPTY
        } else {
            self
        }
    }
}

/// klint's format: `N..`, `N` (single value), `lo..hi` (exclusive `hi`),
/// `unsatisfiable` (empty). Every output parses back with [`FromStr`] to the
/// same value (empty ranges to [`ExpectRange::EMPTY`]).
impl fmt::Display for ExpectRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.lo, self.hi) {
            (lo, None) => write!(f, "{lo}.."),
            (lo, Some(hi)) if lo >= hi => write!(f, "unsatisfiable"),
            (lo, Some(hi)) if lo + 1 == hi => write!(f, "{lo}"),
            (lo, Some(hi)) => write!(f, "{lo}..{hi}"),
        }
    }
}

/// Why a range did not parse. `help` is one of klint's help texts for
/// `#[klint::preempt_count]` so that annotation errors and spec-file errors
/// read the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeError {
    pub help: &'static str,
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.help)
    }
}

impl std::error::Error for RangeError {}

pub(crate) const HELP_RANGE_EXPECTED: &str = "a range expected";
pub(crate) const HELP_RANGE_EMPTY: &str =
    "the preemption count expectation range must be non-empty";
pub(crate) const HELP_VALUE_EXCEEDS: &str = "value exeeds range";
// Not klint's: klint's 1024 limit (`HELP_VALUE_EXCEEDS`) catches these
// first in annotations; only spec files and `ExpectRange::from_str`, which
// have no such limit, can reach `u32`'s.
pub(crate) const HELP_BOUND_OVERFLOWS: &str =
    "a bound overflows: a preemption count is a `u32`, at most 4294967295";
pub(crate) const HELP_END_OVERFLOWS: &str =
    "the end overflows: in `N` and `..=N`, N must be below 4294967295";

/// klint's later parser (`src/preempt_count/attribute.rs`) rejects literals
/// above this in annotations; preemption counts never get near it.
pub(crate) const ANNOTATION_LIMIT: u128 = 1024;

/// The annotation range grammar: `N`, `N..`, `..M`, `N..M`, `N..=M`, `..`;
/// also `unsatisfiable` (so that [`Display`](fmt::Display) round trips).
/// Unlike annotations, there is no 1024 limit here: only `u32` overflow is
/// an error.
impl FromStr for ExpectRange {
    type Err = RangeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim() == "unsatisfiable" {
            return Ok(ExpectRange::EMPTY);
        }
        let trees = token::tokenize(s).map_err(|_| RangeError {
            help: HELP_RANGE_EXPECTED,
        })?;
        let mut cursor = Cursor::new(&trees);
        let range = parse_range(&mut cursor, None)?;
        if !cursor.is_eof() {
            return Err(RangeError {
                help: HELP_RANGE_EXPECTED,
            });
        }
        Ok(range)
    }
}

/// Parses a range at the cursor, the way klint's token parser does
/// (`parse_expectation_range`): stops before a `,` or the end.
///
/// `limit` is the largest literal allowed (klint's `value exeeds range`).
/// Differences from klint's token parser, both matching its later
/// expression-based parser: `N..=` with no end is an error (klint's token
/// parser read it as `N..`), and a bound so large that the exclusive end
/// overflows `u32` is an error (klint would overflow).
pub(crate) fn parse_range(
    cursor: &mut Cursor<'_>,
    limit: Option<u128>,
) -> Result<ExpectRange, RangeError> {
    let expected = RangeError {
        help: HELP_RANGE_EXPECTED,
    };
    let literal = |tree: Option<&Tree>| -> Result<u32, RangeError> {
        // The suffix is not checked, as in klint (`1u32..` is accepted).
        let Some(Tree::Tok(Tok::Int { value, .. })) = tree else {
            return Err(expected.clone());
        };
        let value = value.ok_or(expected.clone())?;
        if limit.is_some_and(|limit| value > limit) {
            return Err(RangeError {
                help: HELP_VALUE_EXCEEDS,
            });
        }
        u32::try_from(value).map_err(|_| RangeError {
            help: HELP_BOUND_OVERFLOWS,
        })
    };

    let mut lo = 0;
    if !matches!(
        cursor.peek(),
        Some(Tree::Tok(Tok::Punct(Punct::DotDot | Punct::DotDotEq)))
    ) {
        lo = literal(cursor.next())?;
    }
    let hi = match cursor.peek() {
        Some(Tree::Tok(Tok::Punct(Punct::DotDot))) => {
            cursor.next();
            if cursor.is_eof() || cursor.peek_is(Punct::Comma) {
                None
            } else {
                Some(literal(cursor.next())?)
            }
        }
        Some(Tree::Tok(Tok::Punct(Punct::DotDotEq))) => {
            cursor.next();
            let end = literal(cursor.next())?;
            Some(end.checked_add(1).ok_or(RangeError {
                help: HELP_END_OVERFLOWS,
            })?)
        }
        _ => Some(lo.checked_add(1).ok_or(RangeError {
            help: HELP_END_OVERFLOWS,
        })?),
    };
    let range = ExpectRange { lo, hi };
    if range.is_empty() {
        return Err(RangeError {
            help: HELP_RANGE_EMPTY,
        });
    }
    Ok(range)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> ExpectRange {
        s.parse().unwrap()
    }

    #[test]
    fn grammar() {
        assert_eq!(r("0"), ExpectRange::exactly(0));
        assert_eq!(r("0.."), ExpectRange::TOP);
        assert_eq!(r(".."), ExpectRange::TOP);
        assert_eq!(r("..3"), ExpectRange { lo: 0, hi: Some(3) });
        assert_eq!(r("1..3"), ExpectRange { lo: 1, hi: Some(3) });
        assert_eq!(r("1..=2"), ExpectRange { lo: 1, hi: Some(3) });
        assert_eq!(r(" 1 ..= 2 "), ExpectRange { lo: 1, hi: Some(3) });
        assert_eq!(r("1u32.."), ExpectRange::at_least(1));
        assert_eq!(r("unsatisfiable"), ExpectRange::EMPTY);
        for bad in [
            "",
            "a",
            "1..a",
            "-1",
            "1,",
            "1..=",
            "2..1",
            "1..1",
            "1.5",
            "4294967295",
        ] {
            assert!(bad.parse::<ExpectRange>().is_err(), "{bad:?} parsed");
        }
        assert_eq!(
            "2..1".parse::<ExpectRange>().unwrap_err().help,
            HELP_RANGE_EMPTY
        );
        // A bound too large for the count is an overflow, not a syntax error.
        for (text, help) in [
            ("0..=99999999999999999999", HELP_BOUND_OVERFLOWS),
            ("4294967296..", HELP_BOUND_OVERFLOWS),
            ("..4294967296", HELP_BOUND_OVERFLOWS),
            ("4294967295", HELP_END_OVERFLOWS),
            ("0..=4294967295", HELP_END_OVERFLOWS),
        ] {
            assert_eq!(
                text.parse::<ExpectRange>().unwrap_err().help,
                help,
                "{text}"
            );
        }
    }

    #[test]
    fn display_is_klints_and_round_trips() {
        let cases = [
            (ExpectRange::TOP, "0.."),
            (ExpectRange::at_least(1), "1.."),
            (ExpectRange::exactly(0), "0"),
            (ExpectRange { lo: 1, hi: Some(3) }, "1..3"),
            (ExpectRange::EMPTY, "unsatisfiable"),
            (
                ExpectRange {
                    lo: 0,
                    hi: Some(u32::MAX),
                },
                "0..4294967295",
            ),
            (ExpectRange::exactly(u32::MAX - 1), "4294967294"),
        ];
        for (range, text) in cases {
            assert_eq!(range.to_string(), text);
            assert_eq!(r(text), range);
        }
        assert_eq!(r("1..=2").to_string(), "1..3");
        assert_eq!(
            ExpectRange { lo: 5, hi: Some(2) }.to_string(),
            "unsatisfiable"
        );
    }

    #[test]
    fn set_operations() {
        let top = ExpectRange::TOP;
        let zero = ExpectRange::exactly(0);
        let atomic = ExpectRange::at_least(1);
        assert!(top.contains(&zero) && top.contains(&atomic) && !zero.contains(&top));
        assert!(!atomic.contains(&zero) && atomic.contains(&r("2..5")));
        assert!(zero.contains(&ExpectRange::EMPTY) && !ExpectRange::EMPTY.contains(&zero));
        assert!(atomic.contains_value(7) && !atomic.contains_value(0));
        assert!(!ExpectRange::EMPTY.contains_value(0));
        assert_eq!(zero.intersect(&atomic), ExpectRange::EMPTY);
        assert_eq!(top.intersect(&r("1..3")), r("1..3"));
        assert_eq!(r("0..5").intersect(&r("3..")), r("3..5"));
    }

    #[test]
    fn shifts() {
        // A callee expecting 0, called after one spin_lock: no entry count works.
        assert_eq!(ExpectRange::exactly(0).shift_back(1), ExpectRange::EMPTY);
        // A callee expecting 1.. after one spin_lock: any entry count.
        assert_eq!(ExpectRange::at_least(1).shift_back(1), ExpectRange::TOP);
        assert_eq!(
            ExpectRange::at_least(2).shift_back(1),
            ExpectRange::at_least(1)
        );
        assert_eq!(
            ExpectRange::exactly(0).shift_back(-1),
            ExpectRange::exactly(1)
        );
        assert_eq!(r("1..3").shift_back(1), r("0..2"));
        assert_eq!(ExpectRange::TOP.shift(1), ExpectRange::at_least(1));
        assert_eq!(ExpectRange::exactly(0).shift(2), ExpectRange::exactly(2));
        assert_eq!(r("0..3").shift(-5), ExpectRange::EMPTY);
        assert_eq!(r("2..10").shift(-5), r("0..5"));
        assert_eq!(ExpectRange::EMPTY.shift(3), ExpectRange::EMPTY);
        assert_eq!(ExpectRange::at_least(u32::MAX).shift(i32::MAX).lo, u32::MAX);
        assert_eq!(ExpectRange::exactly(0).shift_back(i32::MIN).lo, 1 << 31);
    }
}
