//! The held-lock domain: which locks one path holds, which it released
//! without taking them (it needs them held on entry), and how two paths'
//! lock states meet.
//!
//! As a lattice, a [`LockState`] is ordered by inclusion of its held and
//! released locks (kind included, acquisition site ignored), and
//! [`LockState::meet`] is the greatest lower bound: what two paths agree
//! on. The path state only meets lock states when it collapses paths into
//! one (see [`PcState`](crate::PcState)); otherwise paths with different
//! lock states are kept apart.

use dataflow::MeetSemiLattice;
use memory::Location;
use spec::LockKind;
/// Where a lock was acquired, in the function whose state holds it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub struct Acquired {
    pub span: kmir::Span,
    /// The callee called there (the lock function, or the function that
    /// returned with the lock held).
    pub callee: program::FnId,
}

/// One lock held on a path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub struct Held {
    pub lock: Location,
    pub kind: LockKind,
    /// Taken by a trylock: it cannot deadlock by itself.
    pub trylock: bool,
    /// Not part of a path's identity: paths that differ only in where a lock
    /// was taken are merged, keeping the first site.
    pub at: Acquired,
}

/// The lock state of one path: locks held since entry, and locks released
/// that the function did not acquire (it needs them held on entry).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockState {
    /// Sorted by lock path.
    pub held: Vec<Held>,
    /// Sorted, deduplicated.
    pub released: Vec<Location>,
}

/// Most locks one path tracks at once.
pub const MAX_HELD: usize = 16;

impl LockState {
    /// The order of paths' lock states: by held locks (and kinds), then
    /// released ones; where each was taken does not count. Runs for every
    /// path merge, so it compares in place.
    pub fn cmp_key(&self, other: &LockState) -> std::cmp::Ordering {
        fn held(s: &LockState) -> impl Iterator<Item = (&Location, LockKind)> {
            s.held.iter().map(|h| (&h.lock, h.kind))
        }
        held(self)
            .cmp(held(other))
            .then_with(|| self.released.cmp(&other.released))
    }

    pub fn same_as(&self, other: &LockState) -> bool {
        self.cmp_key(other).is_eq()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty() && self.released.is_empty()
    }

    pub fn acquire(&mut self, held: Held) {
        if self.held.len() >= MAX_HELD {
            bounds::hit(bounds::Bound::Facts);
            return;
        }
        let i = self
            .held
            .partition_point(|h| (&h.lock, h.kind) <= (&held.lock, held.kind));
        self.held.insert(i, held);
    }

    /// Releases `lock`; a lock not held is recorded as needed on entry.
    pub fn release(&mut self, lock: &Location) {
        if let Some(i) = self.held.iter().rposition(|h| &h.lock == lock) {
            self.held.remove(i);
        } else if !lock.is_local()
            && let Err(i) = self.released.binary_search(lock)
        {
            self.released.insert(i, lock.clone());
        }
    }

    /// Locks held now that were not held on entry: a lock released and
    /// taken again (`do_unlocked`) is back where it was.
    pub fn net_held(&self) -> impl Iterator<Item = &Held> {
        self.held
            .iter()
            .filter(|h| !self.released.contains(&h.lock))
    }

    /// Locks held on entry and released since, not taken again.
    pub fn net_released(&self) -> impl Iterator<Item = &Location> {
        self.released
            .iter()
            .filter(|l| !self.held.iter().any(|h| &h.lock == *l))
    }

    /// Keeps what both states agree on (paths collapsed into one).
    pub fn meet(&mut self, other: &LockState) {
        self.held.retain(|h| {
            other
                .held
                .iter()
                .any(|o| o.lock == h.lock && o.kind == h.kind)
        });
        self.released.retain(|r| other.released.contains(r));
    }

    /// Whether interrupts are disabled by a lock held on this path.
    pub fn irqs_disabled(&self) -> bool {
        self.held.iter().any(|h| h.kind.disables_irqs())
    }
}

/// [`LockState::meet`], saying whether it dropped anything. `meet` only
/// removes entries, so comparing the lengths is exact.
///
/// The held locks are a multiset (a read lock taken twice is held twice):
/// `self` keeps every copy of a lock `other` holds at least once, so the
/// meet is commutative on states without such repeats.
impl MeetSemiLattice for LockState {
    fn meet(&mut self, other: &Self) -> bool {
        let before = (self.held.len(), self.released.len());
        LockState::meet(self, other);
        before != (self.held.len(), self.released.len())
    }
}

/// Whether a kind of lock has an object (a class); the global contexts
/// (RCU, IRQs off, preemption off) do not.
pub fn has_object(kind: LockKind) -> bool {
    !matches!(
        kind,
        LockKind::Rcu | LockKind::Irq | LockKind::Bh | LockKind::Preempt
    )
}

/// Readers of the same lock do not exclude each other: taking a read lock
/// twice is not a self-deadlock (for `rwlock_t`; `rw_semaphore` readers can
/// still deadlock with a waiting writer, which lockdep reports too).
pub fn recursive_ok(first: LockKind, second: LockKind) -> bool {
    (first.is_read_lock() && second.is_read_lock())
        || (first == LockKind::Rcu && second == LockKind::Rcu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory::{Root, Step};

    fn arg(ty: &str) -> Location {
        Location::new(Root::Arg {
            index: 1,
            ty: ty.into(),
        })
    }

    #[test]
    fn releasing_an_unheld_lock_is_a_requirement() {
        let mut s = LockState::default();
        let l = arg("&L").with(Step::Deref { to: "L".into() }).unwrap();
        s.release(&l);
        assert_eq!(s.released, vec![l.clone()]);
        s.acquire(Held {
            lock: l.clone(),
            kind: LockKind::Spin,
            trylock: false,
            at: Acquired {
                span: kmir::Span::default(),
                callee: program::FnId(0),
            },
        });
        s.release(&l);
        assert!(s.held.is_empty());
    }

    fn lock(name: &str) -> Location {
        Location::new(Root::Static(name.into()))
    }

    fn held(name: &str, kind: LockKind, callee: u32) -> Held {
        Held {
            lock: lock(name),
            kind,
            trylock: false,
            at: Acquired {
                span: kmir::Span::default(),
                callee: program::FnId(callee),
            },
        }
    }

    fn state(held_locks: &[(&str, LockKind)], released: &[&str]) -> LockState {
        let mut s = LockState::default();
        for (name, kind) in held_locks {
            s.acquire(held(name, *kind, 0));
        }
        for name in released {
            s.release(&lock(name));
        }
        s
    }

    /// Calls the trait's `meet` (the inherent one returns nothing).
    fn meet(s: &mut LockState, other: &LockState) -> bool {
        MeetSemiLattice::meet(s, other)
    }

    #[test]
    fn meet_keeps_what_both_agree_on() {
        use LockKind::{Mutex, Spin};
        let mut a = state(&[("A", Spin), ("B", Mutex)], &["R", "S"]);
        let b = state(&[("A", Spin), ("C", Spin)], &["S"]);
        assert!(meet(&mut a, &b));
        assert_eq!(a, state(&[("A", Spin)], &["S"]));
        // Already below `b`: nothing changes.
        assert!(!meet(&mut a, &b));
        // Only the released locks differ: still a change.
        let mut c = state(&[("A", Spin)], &["S", "T"]);
        assert!(meet(&mut c, &a));
        assert_eq!(c, a);
    }

    #[test]
    fn meet_compares_kinds_not_sites() {
        use LockKind::{ReadLock, Spin, WriteLock};
        // The same lock taken as reader on one path, writer on the other.
        let mut a = state(&[("L", ReadLock)], &[]);
        assert!(meet(&mut a, &state(&[("L", WriteLock)], &[])));
        assert!(a.is_empty());
        // Taken at different sites: the same lock state; `self` keeps its site.
        let mut a = LockState::default();
        a.acquire(held("L", Spin, 1));
        let mut b = LockState::default();
        b.acquire(held("L", Spin, 2));
        assert!(a.same_as(&b));
        assert!(!meet(&mut a, &b));
        assert_eq!(a.held[0].at.callee, program::FnId(1));
    }

    #[test]
    fn meet_laws() {
        use LockKind::{Mutex, ReadLock, Spin};
        let values = [
            LockState::default(),
            state(&[("A", Spin)], &[]),
            state(&[("A", Mutex)], &[]),
            state(&[("A", Spin), ("B", ReadLock)], &["R"]),
            state(&[("B", ReadLock)], &["R", "S"]),
            state(&[], &["S"]),
        ];
        for a in &values {
            let mut x = a.clone();
            assert!(!meet(&mut x, a), "{a:?} ⊓ itself changed");
            assert_eq!(&x, a);
            for b in &values {
                let mut ab = a.clone();
                let changed = meet(&mut ab, b);
                assert_eq!(changed, &ab != a, "{a:?} ⊓ {b:?}: changed flag");
                let mut ba = b.clone();
                meet(&mut ba, a);
                assert_eq!(ab, ba, "{a:?} ⊓ {b:?} not commutative");
                // A lower bound of both.
                assert!(!meet(&mut ab.clone(), a) && !meet(&mut ab.clone(), b));
                for c in &values {
                    let mut l = ab.clone();
                    meet(&mut l, c);
                    let mut bc = b.clone();
                    meet(&mut bc, c);
                    let mut r = a.clone();
                    meet(&mut r, &bc);
                    assert_eq!(l, r, "({a:?} ⊓ {b:?}) ⊓ {c:?} not associative");
                }
            }
        }
    }

    #[test]
    fn meet_of_a_lock_held_twice_keeps_both_copies() {
        // Recursive read locks: the multiset case where order matters.
        use LockKind::ReadLock;
        let twice = state(&[("L", ReadLock), ("L", ReadLock)], &[]);
        let once = state(&[("L", ReadLock)], &[]);
        let mut a = twice.clone();
        assert!(!meet(&mut a, &once));
        assert_eq!(a, twice);
        let mut b = once.clone();
        assert!(!meet(&mut b, &twice));
        assert_eq!(b, once);
    }
}
