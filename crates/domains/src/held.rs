//! The held-lock domain: which locks one path holds, which it released
//! without taking them (it needs them held on entry), and how two paths'
//! lock states meet.

use memory::Location;
use spec::LockKind;
/// Where a lock was acquired, in the function whose state holds it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Acquired {
    pub span: kmir::Span,
    /// The callee called there (the lock function, or the function that
    /// returned with the lock held).
    pub callee: program::FnId,
}

/// One lock held on a path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
}
