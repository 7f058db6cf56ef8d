//! The lock results of a function's runs, gathered for its summary and
//! for the lock-state checks.

use crate::body;
use crate::summary;

/// The lock results of a function's runs (one per entry variant).
#[derive(Debug, Default)]
pub struct LockRuns {
    pub takes: Vec<summary::Take>,
    pub events: Vec<body::LockEvent>,
    pub edges: Vec<body::Nesting>,
    /// Locks held at a return: (lock, return span, owned by the return value).
    pub leaks: Vec<(domains::Held, kmir::Span, bool)>,
    pub released: Vec<memory::Location>,
}

impl LockRuns {
    pub(crate) fn absorb(&mut self, run: &body::BodyOutcome) {
        for t in &run.takes {
            if self.takes.len() < summary::MAX_TAKES && !self.takes.contains(t) {
                self.takes.push(t.clone());
            }
        }
        self.events.extend(run.lock_events.iter().cloned());
        self.edges.extend(run.edges.iter().cloned());
        for (p, span) in &run.returns {
            let ret = p.facts.addrs_under(&memory::PlaceKey::local(0));
            for h in p.locks.net_held() {
                if !domains::has_object(h.kind) || h.lock.is_local() {
                    continue;
                }
                let owned = ret
                    .iter()
                    .any(|(_, r)| r.root == h.lock.root && h.lock.steps.starts_with(&r.steps));
                if !self.leaks.iter().any(|(l, _, _)| l.lock == h.lock) {
                    self.leaks.push((h.clone(), *span, owned));
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
