//! The backward direction of the engine: states flow from a block's
//! successors to its entry, against the edges (liveness: "is this local
//! read later?"). As in the forward engine, an analysis says what a
//! statement and a terminator do, now to the state *after* them, and the
//! engine iterates to a fixed point in postorder.

use kmir::{BlockId, Body, Statement, Terminator};

use crate::lattice::JoinSemiLattice;
use crate::{reverse_postorder, successors};

pub trait BackwardAnalysis {
    type Domain: JoinSemiLattice;

    /// The state after a block no path leads on from (the lattice's
    /// bottom; a return's too).
    fn bottom(&self) -> Self::Domain;

    /// Turns the state after `statement` into the state before it.
    fn apply_statement(
        &self,
        state: &mut Self::Domain,
        statement: &Statement,
        block: BlockId,
        index: usize,
    );

    /// Turns the state after the terminator of `block` (the join of its
    /// successors' entry states) into the state before it.
    fn apply_terminator(&self, state: &mut Self::Domain, terminator: &Terminator, block: BlockId);

    /// Whether unwind edges and cleanup blocks take part.
    fn follows_unwind(&self) -> bool {
        false
    }
}

/// Fixed-point states at block entry (before the first statement).
pub struct BackwardResults<D> {
    pub entry: Vec<D>,
}

/// Runs `analysis` backward to a fixed point over `body`.
pub fn iterate_backward<A: BackwardAnalysis>(
    analysis: &A,
    body: &Body,
) -> BackwardResults<A::Domain> {
    let n = body.blocks.len();
    let follow = analysis.follows_unwind();
    let mut entry: Vec<A::Domain> = (0..n).map(|_| analysis.bottom()).collect();
    // Postorder: successors before predecessors, so most blocks settle in
    // one pass; a loop takes another.
    let mut order = reverse_postorder(body, follow);
    order.reverse();
    let mut rank = vec![usize::MAX; n];
    for (i, b) in order.iter().enumerate() {
        rank[*b as usize] = i;
    }
    let mut preds: Vec<Vec<BlockId>> = vec![Vec::new(); n];
    for &b in &order {
        for s in successors(&body.blocks[b as usize], follow) {
            if (s as usize) < n {
                preds[s as usize].push(b);
            }
        }
    }
    let mut dirty: std::collections::BTreeSet<usize> = (0..order.len()).collect();
    while let Some(r) = dirty.pop_first() {
        let b = order[r];
        let state = exit_state(analysis, body, &entry, b, follow);
        let before = before_block(analysis, body, b, state);
        if entry[b as usize].join(&before) {
            for &p in &preds[b as usize] {
                if rank[p as usize] != usize::MAX {
                    dirty.insert(rank[p as usize]);
                }
            }
        }
    }
    BackwardResults { entry }
}

/// The state after the terminator of `b`: the join of its successors'.
fn exit_state<A: BackwardAnalysis>(
    analysis: &A,
    body: &Body,
    entry: &[A::Domain],
    b: BlockId,
    follow: bool,
) -> A::Domain {
    let mut state = analysis.bottom();
    for s in successors(&body.blocks[b as usize], follow) {
        if let Some(e) = entry.get(s as usize) {
            state.join(e);
        }
    }
    state
}

fn before_block<A: BackwardAnalysis>(
    analysis: &A,
    body: &Body,
    b: BlockId,
    mut state: A::Domain,
) -> A::Domain {
    let block = &body.blocks[b as usize];
    analysis.apply_terminator(&mut state, &block.terminator, b);
    for (i, s) in block.statements.iter().enumerate().rev() {
        analysis.apply_statement(&mut state, s, b, i);
    }
    state
}

/// The state right after statement `index` of `block` (or, for
/// `index == statements.len()`, after the terminator), from the fixed
/// point: a cursor that replays the block backward from its end.
pub fn state_after<A: BackwardAnalysis>(
    analysis: &A,
    body: &Body,
    results: &BackwardResults<A::Domain>,
    block: BlockId,
    index: usize,
) -> A::Domain {
    let follow = analysis.follows_unwind();
    let mut state = exit_state(analysis, body, &results.entry, block, follow);
    let b = &body.blocks[block as usize];
    if index >= b.statements.len() {
        return state;
    }
    analysis.apply_terminator(&mut state, &b.terminator, block);
    for (i, s) in b.statements.iter().enumerate().rev() {
        if i == index {
            break;
        }
        analysis.apply_statement(&mut state, s, block, i);
    }
    state
}
