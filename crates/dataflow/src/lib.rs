//! One dataflow engine for every abstract domain, in the style of
//! rustc's `rustc_mir_dataflow`: an [`Analysis`] says what a statement and a
//! terminator do to its [`Domain`](Analysis::Domain), [`iterate`] runs it to a
//! fixpoint over a body's CFG, and [`visit`] replays the fixed states so a
//! client can inspect each terminator once, with the final state before it.
//!
//! The engine knows nothing about preemption counts or locks: all it asks of
//! a domain is a [`JoinSemiLattice`], whose `join` merges the states of two
//! edges and says whether anything changed. The lattice traits live in
//! [`lattice`], with the generic building blocks ([`bool`], [`Option`],
//! pairs, [`FlatSet`]) that make a product of smaller lattices a lattice
//! again; the body analysis plugs in the product of its own domains (the
//! `domains` crate: count offset × value facts × held locks, as a bounded
//! set of paths).
//!
//! The engine runs backward too ([`backward`]: a gen/kill analysis over a
//! [`BitSet`], such as which locals are read later).
//!
//! Edges an analysis proves infeasible are not propagated, so a block only
//! such edges lead to is never reached ([`Results::reached`]). Unwind edges
//! and cleanup blocks are skipped unless [`Analysis::follows_unwind`].

use kmir::{Block, BlockId, Body, Statement, Terminator};

pub mod backward;
pub mod bitset;
pub mod lattice;

pub use backward::{BackwardAnalysis, BackwardResults, iterate_backward, state_after};
pub use bitset::BitSet;
pub use lattice::{FlatSet, JoinSemiLattice, MeetSemiLattice};

#[cfg(test)]
mod tests;

pub trait Analysis {
    type Domain: JoinSemiLattice;

    /// The state of a block not reached yet (the lattice's bottom).
    fn bottom(&self) -> Self::Domain;

    /// The state on entry to the body.
    fn entry_state(&self) -> Self::Domain;

    fn apply_statement(
        &self,
        state: &mut Self::Domain,
        statement: &Statement,
        block: BlockId,
        index: usize,
    );

    /// Applies the terminator of `block` to `state` (the state right before
    /// it) and hands the state of each outgoing edge to `propagate`. An edge
    /// the domain proves infeasible is simply not propagated.
    fn apply_terminator(
        &self,
        state: Self::Domain,
        terminator: &Terminator,
        block: BlockId,
        propagate: &mut dyn FnMut(BlockId, Self::Domain),
    );

    /// Whether unwind edges and cleanup blocks take part. The preemption
    /// analysis follows klint and ignores them.
    fn follows_unwind(&self) -> bool {
        false
    }
}

/// Fixed-point states at block entry.
pub struct Results<D> {
    pub entry: Vec<D>,
    /// Blocks the iteration reached at least once.
    pub reached: Vec<bool>,
}

/// Reverse postorder of the blocks reachable from the entry.
pub fn reverse_postorder(body: &Body, follow_unwind: bool) -> Vec<BlockId> {
    let n = body.blocks.len();
    let mut order = Vec::with_capacity(n);
    let mut state = vec![0u8; n]; // 0 new, 1 on stack, 2 done
    let mut stack: Vec<(BlockId, usize)> = Vec::new();
    if n == 0 {
        return order;
    }
    stack.push((0, 0));
    state[0] = 1;
    while let Some((block, next)) = stack.pop() {
        let succs = successors(&body.blocks[block as usize], follow_unwind);
        if let Some(&s) = succs.get(next) {
            stack.push((block, next + 1));
            if (s as usize) < n && state[s as usize] == 0 {
                state[s as usize] = 1;
                stack.push((s, 0));
            }
        } else {
            state[block as usize] = 2;
            order.push(block);
        }
    }
    order.reverse();
    order
}

/// Successor blocks, without unwind edges unless asked for.
pub fn successors(block: &Block, follow_unwind: bool) -> Vec<BlockId> {
    let mut v = block.terminator.kind.successors();
    if !follow_unwind && let Some(u) = block.terminator.kind.unwind_target() {
        // The unwind edge is always the last successor.
        if v.last() == Some(&u) {
            v.pop();
        }
    }
    v
}

/// Runs `analysis` to a fixed point over `body`.
///
/// Blocks are processed in reverse postorder from a work set, so a loop
/// body is revisited only when its header's state grew. Termination is the
/// domain's business: its `join` must not ascend forever (bounded height or
/// widening inside `join`).
///
/// Each block transferred is charged to the step budget of the analysis
/// running on this thread ([`bounds::step`]); once it is spent the
/// iteration stops short of the fixed point, and the caller, which asks
/// [`bounds::exhausted`], must not trust the states.
pub fn iterate<A: Analysis>(analysis: &A, body: &Body) -> Results<A::Domain> {
    let n = body.blocks.len();
    let follow = analysis.follows_unwind();
    let rpo = reverse_postorder(body, follow);
    let mut rank = vec![usize::MAX; n];
    for (i, b) in rpo.iter().enumerate() {
        rank[*b as usize] = i;
    }
    let mut entry: Vec<A::Domain> = (0..n).map(|_| analysis.bottom()).collect();
    let mut reached = vec![false; n];
    if n == 0 {
        return Results { entry, reached };
    }
    entry[0] = analysis.entry_state();
    reached[0] = true;
    // Dirty blocks by RPO rank: always take the earliest.
    let mut dirty = std::collections::BTreeSet::from([0usize]);
    while let Some(r) = dirty.pop_first() {
        let b = rpo[r];
        let block = &body.blocks[b as usize];
        if block.is_cleanup && !follow {
            continue;
        }
        if !bounds::step(block.statements.len() as u64 + 1) {
            break;
        }
        let mut state = entry[b as usize].clone();
        for (i, s) in block.statements.iter().enumerate() {
            analysis.apply_statement(&mut state, s, b, i);
        }
        analysis.apply_terminator(state, &block.terminator, b, &mut |target, out| {
            let t = target as usize;
            if t >= n || rank[t] == usize::MAX {
                return;
            }
            if body.blocks[t].is_cleanup && !follow {
                return;
            }
            let changed = if reached[t] {
                entry[t].join(&out)
            } else {
                reached[t] = true;
                entry[t] = out;
                true
            };
            if changed {
                dirty.insert(rank[t]);
            }
        });
    }
    Results { entry, reached }
}

/// Replays the fixed point: for every reached block in reverse postorder,
/// calls `at_terminator` with the state right before its terminator.
pub fn visit<A: Analysis>(
    analysis: &A,
    body: &Body,
    results: &Results<A::Domain>,
    mut at_terminator: impl FnMut(BlockId, &A::Domain, &Terminator),
) {
    for b in reverse_postorder(body, analysis.follows_unwind()) {
        if !results.reached[b as usize] {
            continue;
        }
        let block = &body.blocks[b as usize];
        if block.is_cleanup && !analysis.follows_unwind() {
            continue;
        }
        let mut state = results.entry[b as usize].clone();
        for (i, s) in block.statements.iter().enumerate() {
            analysis.apply_statement(&mut state, s, b, i);
        }
        at_terminator(b, &state, &block.terminator);
    }
}
