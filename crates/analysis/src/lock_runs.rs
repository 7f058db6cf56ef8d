//! The lock results of a function's runs, gathered for its summary and
//! for the lock-state checks.

use crate::body;
use crate::summary;

/// The lock results of a function's runs (one per entry variant).
#[derive(Clone, Debug, Default, bincode::Encode, bincode::Decode)]
pub struct LockRuns {
    pub takes: Vec<summary::Take>,
    pub events: Vec<body::LockEvent>,
    pub edges: Vec<body::Nesting>,
    /// Nestings of one class a caller may prove to be on one object.
    pub open: Vec<body::OpenNesting>,
    /// Locks held at a return, at most one per lock.
    pub leaks: Vec<Leak>,
    pub released: Vec<memory::Location>,
}

impl LockRuns {
    /// Whether the runs observed nothing the lock checks report on.
    pub fn is_empty(&self) -> bool {
        self.takes.is_empty()
            && self.events.is_empty()
            && self.edges.is_empty()
            && self.leaks.is_empty()
            && self.released.is_empty()
    }

    pub(crate) fn absorb(&mut self, run: &body::BodyOutcome) {
        for t in &run.takes {
            if self.takes.contains(t) {
                continue;
            }
            if self.takes.len() < summary::MAX_TAKES {
                self.takes.push(t.clone());
            } else {
                bounds::hit(bounds::Bound::Cases);
            }
        }
        self.events.extend(run.lock_events.iter().cloned());
        self.edges.extend(run.edges.iter().cloned());
        for o in &run.open {
            if self.open.contains(o) {
                continue;
            }
            if self.open.len() < body::MAX_OPEN_NESTINGS {
                self.open.push(o.clone());
            } else {
                bounds::hit(bounds::Bound::Cases);
            }
        }
        for (p, span) in &run.returns {
            let ret = p.facts.addrs_under(&memory::PlaceKey::local(0));
            for h in p.locks.net_held() {
                if !domains::has_object(h.kind) || h.lock.is_local() {
                    continue;
                }
                let owned = ret
                    .iter()
                    .any(|(_, r)| r.root == h.lock.root && h.lock.steps.starts_with(&r.steps));
                if !self.leaks.iter().any(|l| l.held.lock == h.lock) {
                    self.leaks.push(Leak {
                        held: h.clone(),
                        ret: *span,
                        owned,
                    });
                }
            }
            for l in p.locks.net_released() {
                if !self.released.contains(l) {
                    self.released.push(l.clone());
                }
            }
        }
    }
}

/// A lock still held at a return that the function did not hold on entry.
#[derive(Clone, Debug, bincode::Encode, bincode::Decode)]
pub struct Leak {
    pub held: domains::Held,
    /// The return.
    pub ret: kmir::Span,
    /// A pointer in the returned value leads to the lock: a guard returned
    /// to the caller owns it.
    pub owned: bool,
}
