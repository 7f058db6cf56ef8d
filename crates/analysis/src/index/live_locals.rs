//! Which locals are read later: the backward gen/kill analysis of local
//! liveness over the body's CFG (`dataflow::iterate_backward` on a
//! [`BitSet`]). Object liveness asks it whether the source of a bit copy
//! is used again: a `copy` of a value that holds a count, whose source is
//! never read or dropped afterwards, hands the count over as a move does
//! (optimized MIR writes moves of temporaries as copies).

use dataflow::{BackwardAnalysis, BackwardResults, BitSet, iterate_backward, state_after};
use kmir::visit::{Location, PlaceContext, Visitor};
use kmir::{BlockId, Body, LocalId, Place, Statement, StatementKind, Terminator, TerminatorKind};

/// The locals a statement or terminator defines whole and those it uses.
#[derive(Default)]
struct DefUse {
    defs: Vec<LocalId>,
    uses: Vec<LocalId>,
}

impl Visitor for DefUse {
    fn visit_place(&mut self, place: &Place, context: PlaceContext, _: Location) {
        // A whole local written is defined; a write into part of it, or
        // through a pointer it holds, reads it.
        if context.is_write() && place.projection.is_empty() {
            self.defs.push(place.local);
        } else {
            self.uses.push(place.local);
        }
    }
}

struct MaybeLive {
    locals: usize,
}

impl MaybeLive {
    fn apply(state: &mut BitSet, du: DefUse) {
        for d in du.defs {
            state.remove(d as usize);
        }
        for u in du.uses {
            state.insert(u as usize);
        }
    }
}

impl BackwardAnalysis for MaybeLive {
    type Domain = BitSet;

    fn bottom(&self) -> BitSet {
        BitSet::new(self.locals)
    }

    fn apply_statement(
        &self,
        state: &mut BitSet,
        statement: &Statement,
        block: BlockId,
        index: usize,
    ) {
        if let StatementKind::StorageDead(l) = &statement.kind {
            state.remove(*l as usize);
            return;
        }
        let mut du = DefUse::default();
        du.visit_statement(
            statement,
            Location {
                block,
                statement: index,
            },
        );
        Self::apply(state, du);
    }

    fn apply_terminator(&self, state: &mut BitSet, terminator: &Terminator, block: BlockId) {
        let mut du = DefUse::default();
        du.visit_terminator(
            terminator,
            Location {
                block,
                statement: usize::MAX,
            },
        );
        // The return place is read by the caller.
        if matches!(terminator.kind, TerminatorKind::Return) {
            du.uses.push(0);
        }
        Self::apply(state, du);
    }
}

/// Local liveness of one body, computed once.
pub struct LiveLocals {
    analysis: MaybeLive,
    results: BackwardResults<BitSet>,
}

impl LiveLocals {
    pub fn compute(body: &Body) -> LiveLocals {
        let analysis = MaybeLive {
            locals: body.locals.len(),
        };
        let results = iterate_backward(&analysis, body);
        LiveLocals { analysis, results }
    }

    /// Whether `local` may be read (or dropped) after statement `index` of
    /// `block` (`index` past the statements: after the terminator).
    pub fn live_after(&self, body: &Body, block: BlockId, index: usize, local: LocalId) -> bool {
        state_after(&self.analysis, body, &self.results, block, index).contains(local as usize)
    }
}
