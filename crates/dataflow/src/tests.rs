//! The engine on small hand-built bodies, with a toy analysis: constant
//! propagation of one counter (a [`FlatSet`]) paired with the set of blocks
//! a state went through (a bit set), so the state is itself a product.

use std::cell::RefCell;

use kmir::{
    Block, BlockId, Body, ConstValue, Constant, Operand, Place, Rvalue, Span, Statement,
    StatementKind, SwitchTarget, Terminator, TerminatorKind, Unwind,
};

use super::*;

/// Blocks a state went through (bit `b` for `bb{b}`); join is union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Visited(u64);

impl JoinSemiLattice for Visited {
    fn join(&mut self, other: &Self) -> bool {
        let old = self.0;
        self.0 |= other.0;
        self.0 != old
    }
}

fn visited(blocks: &[BlockId]) -> Visited {
    Visited(blocks.iter().map(|b| 1u64 << b).sum())
}

type State = (FlatSet<u128>, Visited);

/// The toy analysis. Its "program": `_0` is the counter.
/// * `_0 = const v` sets it, any other assignment makes it unknown;
/// * `StorageLive(n)` stands for `_0 += n`;
/// * `switchInt(copy _0)` follows only the edge the counter selects when
///   it is known (the others are infeasible); a switch on anything else
///   follows every edge;
/// * every other terminator follows all its successors, unwind included
///   (the engine drops those unless `follows_unwind`).
///
/// It records each block whose terminator it applied, in order.
#[derive(Default)]
struct Counter {
    unwind: bool,
    runs: RefCell<Vec<BlockId>>,
}

impl Counter {
    fn runs_of(&self, block: BlockId) -> usize {
        self.runs.borrow().iter().filter(|b| **b == block).count()
    }
}

impl Analysis for Counter {
    type Domain = State;

    fn bottom(&self) -> State {
        (FlatSet::Bottom, Visited(0))
    }

    fn entry_state(&self) -> State {
        (FlatSet::Elem(0), Visited(0))
    }

    fn apply_statement(&self, state: &mut State, statement: &Statement, _: BlockId, _: usize) {
        match &statement.kind {
            StatementKind::Assign { rvalue, .. } => {
                state.0 = match &**rvalue {
                    Rvalue::Use(Operand::Constant(c)) => match c.value {
                        ConstValue::Scalar(v) => FlatSet::Elem(v),
                        _ => FlatSet::Top,
                    },
                    _ => FlatSet::Top,
                }
            }
            StatementKind::StorageLive(n) => {
                if let FlatSet::Elem(v) = &mut state.0 {
                    *v += u128::from(*n);
                }
            }
            _ => {}
        }
    }

    fn apply_terminator(
        &self,
        mut state: State,
        terminator: &Terminator,
        block: BlockId,
        propagate: &mut dyn FnMut(BlockId, State),
    ) {
        self.runs.borrow_mut().push(block);
        state.1.0 |= 1 << block;
        match (&terminator.kind, &state.0) {
            (
                TerminatorKind::SwitchInt {
                    discr: Operand::Copy(Place { local: 0, .. }),
                    targets,
                    otherwise,
                },
                FlatSet::Elem(v),
            ) => {
                let to = targets
                    .iter()
                    .find(|t| t.value == *v)
                    .map_or(*otherwise, |t| t.target);
                propagate(to, state);
            }
            _ => {
                for s in terminator.kind.successors() {
                    propagate(s, state);
                }
            }
        }
    }

    fn follows_unwind(&self) -> bool {
        self.unwind
    }
}

fn place(local: u32) -> Place {
    Place {
        local,
        projection: Box::new([]),
    }
}

fn statement(kind: StatementKind) -> Statement {
    Statement {
        kind,
        span: Span::default(),
    }
}

/// `_0 = const v`.
fn set(v: u128) -> Statement {
    statement(StatementKind::Assign {
        place: place(0),
        rvalue: Box::new(Rvalue::Use(Operand::Constant(Box::new(Constant {
            ty: 0,
            value: ConstValue::Scalar(v),
        })))),
    })
}

/// `_0 = copy _1`: the counter becomes unknown.
fn forget() -> Statement {
    statement(StatementKind::Assign {
        place: place(0),
        rvalue: Box::new(Rvalue::Use(Operand::Copy(place(1)))),
    })
}

/// `_0 += n` (spelt `StorageLive(n)`).
fn add(n: u32) -> Statement {
    statement(StatementKind::StorageLive(n))
}

fn block(statements: Vec<Statement>, kind: TerminatorKind) -> Block {
    Block {
        statements,
        terminator: Terminator {
            kind,
            span: Span::default(),
        },
        is_cleanup: false,
    }
}

fn cleanup(kind: TerminatorKind) -> Block {
    Block {
        is_cleanup: true,
        ..block(vec![], kind)
    }
}

fn body(blocks: Vec<Block>) -> Body {
    Body {
        arg_count: 0,
        locals: vec![],
        blocks,
        var_names: vec![],
        span: Span::default(),
        drop_elaborated: true,
    }
}

fn goto(target: BlockId) -> TerminatorKind {
    TerminatorKind::Goto { target }
}

/// A switch on the counter (`_0`) or, with `local` 1, on an unknown value.
fn switch(local: u32, targets: &[(u128, BlockId)], otherwise: BlockId) -> TerminatorKind {
    TerminatorKind::SwitchInt {
        discr: Operand::Copy(place(local)),
        targets: targets
            .iter()
            .map(|&(value, target)| SwitchTarget { value, target })
            .collect(),
        otherwise,
    }
}

fn call(target: BlockId, unwind: Unwind) -> TerminatorKind {
    TerminatorKind::Call {
        callee: kmir::Callee::Intrinsic { name: "f".into() },
        args: vec![],
        destination: place(2),
        target: Some(target),
        unwind,
    }
}

/// `visit`'s calls: block and the state before its terminator.
fn replay(analysis: &Counter, body: &Body, results: &Results<State>) -> Vec<(BlockId, State)> {
    let mut seen = Vec::new();
    visit(analysis, body, results, |b, state, _| {
        seen.push((b, *state))
    });
    seen
}

#[test]
fn straight_line() {
    let body = body(vec![
        block(vec![set(1)], goto(1)),
        block(vec![add(2), add(3)], goto(2)),
        block(vec![], TerminatorKind::Return),
    ]);
    let a = Counter::default();
    let r = iterate(&a, &body);
    assert_eq!(r.reached, vec![true, true, true]);
    assert_eq!(
        r.entry,
        vec![
            (FlatSet::Elem(0), visited(&[])),
            (FlatSet::Elem(1), visited(&[0])),
            (FlatSet::Elem(6), visited(&[0, 1])),
        ]
    );
    assert_eq!(*a.runs.borrow(), vec![0, 1, 2]);
    assert_eq!(
        replay(&a, &body, &r),
        vec![
            (0, (FlatSet::Elem(1), visited(&[]))),
            (1, (FlatSet::Elem(6), visited(&[0]))),
            (2, (FlatSet::Elem(6), visited(&[0, 1]))),
        ]
    );
}

/// bb0 branches on an unknown value to bb1 and bb2, which meet at bb3.
fn diamond(left: u128, right: u128, after: TerminatorKind, more: Vec<Block>) -> Body {
    let mut blocks = vec![
        block(vec![], switch(1, &[(0, 1)], 2)),
        block(vec![set(left)], goto(3)),
        block(vec![set(right)], goto(3)),
        block(vec![], after),
    ];
    blocks.extend(more);
    body(blocks)
}

#[test]
fn diamond_joins_both_branches() {
    let body = diamond(1, 2, TerminatorKind::Return, vec![]);
    let a = Counter::default();
    let r = iterate(&a, &body);
    assert_eq!(r.reached, vec![true; 4]);
    assert_eq!(r.entry[1], (FlatSet::Elem(0), visited(&[0])));
    assert_eq!(r.entry[2], (FlatSet::Elem(0), visited(&[0])));
    // 1 ⊔ 2 is unknown; the block sets are unioned.
    assert_eq!(r.entry[3], (FlatSet::Top, visited(&[0, 1, 2])));
    // Reverse postorder: the join point runs once, after both branches.
    assert_eq!(a.runs_of(3), 1);
    assert_eq!(a.runs.borrow().last(), Some(&3));
}

#[test]
fn diamond_agreeing_branches_keep_the_constant() {
    // Both branches set 5; bb3 switches on it: only the edge to bb4 is
    // feasible, so bb5 (and bb6, reached only from it) stay unreached.
    let body = diamond(
        5,
        5,
        switch(0, &[(5, 4)], 5),
        vec![
            block(vec![], TerminatorKind::Return),
            block(vec![], goto(6)),
            block(vec![], TerminatorKind::Return),
        ],
    );
    let a = Counter::default();
    let r = iterate(&a, &body);
    assert_eq!(r.entry[3], (FlatSet::Elem(5), visited(&[0, 1, 2])));
    assert_eq!(r.reached, vec![true, true, true, true, true, false, false]);
    assert_eq!(r.entry[4], (FlatSet::Elem(5), visited(&[0, 1, 2, 3])));
    // Unreached blocks keep the bottom state.
    assert_eq!(r.entry[5], a.bottom());
    assert_eq!(r.entry[6], a.bottom());
    assert_eq!(a.runs_of(5), 0);
    let blocks: Vec<BlockId> = replay(&a, &body, &r).iter().map(|(b, _)| *b).collect();
    assert!(!blocks.contains(&5) && !blocks.contains(&6));
    assert_eq!(blocks.len(), 5);
}

#[test]
fn infeasible_edge_leaves_its_target_unreached() {
    // The counter is 1: `switchInt(_0) -> [0: bb1, otherwise: bb2]` can only
    // go to bb2.
    let body = body(vec![
        block(vec![set(1)], switch(0, &[(0, 1)], 2)),
        block(vec![], TerminatorKind::Return),
        block(vec![], TerminatorKind::Return),
    ]);
    let a = Counter::default();
    let r = iterate(&a, &body);
    assert_eq!(r.reached, vec![true, false, true]);
    assert_eq!(r.entry[1], a.bottom());
    assert_eq!(r.entry[2], (FlatSet::Elem(1), visited(&[0])));
    assert_eq!(*a.runs.borrow(), vec![0, 2]);
    // The same switch with the counter 0 goes the other way.
    let mut other = body.clone();
    other.blocks[0].statements = vec![set(0)];
    let r = iterate(&Counter::default(), &other);
    assert_eq!(r.reached, vec![true, true, false]);
}

/// bb0 → bb1 (header) → bb2 (loop body) → bb1; bb1 → bb3 (exit).
fn counting_loop(loop_body: Vec<Statement>) -> Body {
    body(vec![
        block(vec![set(0)], goto(1)),
        block(vec![], switch(1, &[(0, 3)], 2)),
        block(loop_body, goto(1)),
        block(vec![], TerminatorKind::Return),
    ])
}

#[test]
fn loop_reaches_a_fixed_point() {
    // `_0 += 1` each iteration: the header's state grows from 0 to unknown
    // and then stays.
    let body = counting_loop(vec![add(1)]);
    let a = Counter::default();
    let r = iterate(&a, &body);
    assert_eq!(r.reached, vec![true; 4]);
    assert_eq!(r.entry[1], (FlatSet::Top, visited(&[0, 1, 2])));
    assert_eq!(r.entry[2], (FlatSet::Top, visited(&[0, 1, 2])));
    assert_eq!(r.entry[3], (FlatSet::Top, visited(&[0, 1, 2])));
    // Once with 0, once with ⊤; the second pass changes nothing.
    assert_eq!(a.runs_of(1), 2);
    assert_eq!(a.runs_of(2), 2);

    // `visit` replays each reached block once, in reverse postorder, with
    // the fixed state before its terminator.
    let seen = replay(&a, &body, &r);
    let order: Vec<BlockId> = seen.iter().map(|(b, _)| *b).collect();
    assert_eq!(order, reverse_postorder(&body, false));
    assert_eq!(order.len(), 4);
    assert_eq!(seen[0], (0, (FlatSet::Elem(0), visited(&[]))));
    for (b, state) in &seen[1..] {
        assert_eq!(state.0, FlatSet::Top, "bb{b}");
    }
}

#[test]
fn loop_that_changes_nothing_runs_once() {
    // The loop body sets the counter back to 0: the back edge brings the
    // header nothing new, so it is not revisited.
    let body = counting_loop(vec![add(4), set(0)]);
    let a = Counter::default();
    let r = iterate(&a, &body);
    assert_eq!(r.entry[1].0, FlatSet::Elem(0));
    assert_eq!(r.entry[3].0, FlatSet::Elem(0));
    // Only the block set grows along the back edge: the header runs twice
    // for it, then both components are stable.
    assert_eq!(r.entry[1].1, visited(&[0, 1, 2]));
    assert_eq!(a.runs_of(1), 2);

    // With the counter alone, the back edge brings nothing new: one pass.
    struct NoTrace(Counter);
    impl Analysis for NoTrace {
        type Domain = FlatSet<u128>;
        fn bottom(&self) -> Self::Domain {
            FlatSet::Bottom
        }
        fn entry_state(&self) -> Self::Domain {
            FlatSet::Elem(0)
        }
        fn apply_statement(&self, s: &mut Self::Domain, st: &Statement, b: BlockId, i: usize) {
            let mut full = (*s, Visited(0));
            self.0.apply_statement(&mut full, st, b, i);
            *s = full.0;
        }
        fn apply_terminator(
            &self,
            s: Self::Domain,
            t: &Terminator,
            b: BlockId,
            propagate: &mut dyn FnMut(BlockId, Self::Domain),
        ) {
            self.0
                .apply_terminator((s, Visited(0)), t, b, &mut |to, st| propagate(to, st.0));
        }
    }
    let a = NoTrace(Counter::default());
    let r = iterate(&a, &body);
    assert_eq!(r.entry, vec![FlatSet::Elem(0); 4]);
    assert_eq!(a.0.runs_of(1), 1);
    assert_eq!(a.0.runs_of(2), 1);
}

#[test]
fn entry_block_as_loop_header() {
    // bb0 is its own loop header: the entry state joins what the back edge
    // brings.
    let body = body(vec![
        block(vec![add(1)], switch(1, &[(0, 1)], 0)),
        block(vec![], TerminatorKind::Return),
    ]);
    let a = Counter::default();
    let r = iterate(&a, &body);
    assert_eq!(r.entry[0], (FlatSet::Top, visited(&[0])));
    assert_eq!(r.entry[1], (FlatSet::Top, visited(&[0])));
    assert_eq!(a.runs_of(0), 2);
}

/// bb0 calls with an unwind edge to bb2 (cleanup), which goes on to bb3
/// (cleanup); bb1 returns.
fn unwinding() -> Body {
    body(vec![
        block(vec![set(7)], call(1, Unwind::Cleanup(2))),
        block(vec![], TerminatorKind::Return),
        Block {
            statements: vec![add(1)],
            ..cleanup(goto(3))
        },
        cleanup(TerminatorKind::Resume),
    ])
}

#[test]
fn unwind_edges_are_ignored_by_default() {
    let body = unwinding();
    assert_eq!(successors(&body.blocks[0], false), vec![1]);
    assert_eq!(successors(&body.blocks[0], true), vec![1, 2]);
    assert_eq!(reverse_postorder(&body, false), vec![0, 1]);

    let a = Counter::default();
    let r = iterate(&a, &body);
    assert_eq!(r.reached, vec![true, true, false, false]);
    assert_eq!(r.entry[2], a.bottom());
    assert_eq!(*a.runs.borrow(), vec![0, 1]);
    let blocks: Vec<BlockId> = replay(&a, &body, &r).iter().map(|(b, _)| *b).collect();
    assert_eq!(blocks, vec![0, 1]);
}

#[test]
fn unwind_edges_are_followed_when_asked() {
    let body = unwinding();
    let a = Counter {
        unwind: true,
        ..Counter::default()
    };
    let r = iterate(&a, &body);
    assert_eq!(r.reached, vec![true; 4]);
    assert_eq!(r.entry[2], (FlatSet::Elem(7), visited(&[0])));
    assert_eq!(r.entry[3], (FlatSet::Elem(8), visited(&[0, 2])));
    let seen = replay(&a, &body, &r);
    let mut blocks: Vec<BlockId> = seen.iter().map(|(b, _)| *b).collect();
    blocks.sort_unstable();
    assert_eq!(blocks, vec![0, 1, 2, 3]);
}

#[test]
fn cleanup_blocks_are_skipped_even_on_a_normal_edge() {
    // A `goto` into a cleanup block: without `follows_unwind` the block
    // takes no part.
    let body = body(vec![
        block(vec![], goto(1)),
        cleanup(TerminatorKind::Resume),
    ]);
    let r = iterate(&Counter::default(), &body);
    assert_eq!(r.reached, vec![true, false]);
    let a = Counter {
        unwind: true,
        ..Counter::default()
    };
    assert_eq!(iterate(&a, &body).reached, vec![true, true]);
}

#[test]
fn reverse_postorder_of_a_diamond_puts_the_join_last() {
    let body = diamond(1, 2, TerminatorKind::Return, vec![]);
    let rpo = reverse_postorder(&body, false);
    assert_eq!(rpo.len(), 4);
    assert_eq!(rpo[0], 0);
    assert_eq!(rpo[3], 3);
}

#[test]
fn empty_body() {
    let body = body(vec![]);
    let a = Counter::default();
    let r = iterate(&a, &body);
    assert!(r.entry.is_empty() && r.reached.is_empty());
    assert!(replay(&a, &body, &r).is_empty());
}

#[test]
fn unknown_value_makes_every_edge_feasible() {
    let body = body(vec![
        block(vec![forget()], switch(0, &[(0, 1)], 2)),
        block(vec![], TerminatorKind::Return),
        block(vec![], TerminatorKind::Return),
    ]);
    let r = iterate(&Counter::default(), &body);
    assert_eq!(r.reached, vec![true; 3]);
    assert_eq!(r.entry[1].0, FlatSet::Top);
}

/// A toy backward analysis, liveness of locals: `StorageLive(n)` reads
/// `_n`, `StorageDead(n)` writes it whole, a switch reads its operand.
struct ReadLater;

impl BackwardAnalysis for ReadLater {
    type Domain = BitSet;

    fn bottom(&self) -> BitSet {
        BitSet::new(8)
    }

    fn apply_statement(&self, state: &mut BitSet, statement: &Statement, _: BlockId, _: usize) {
        match statement.kind {
            StatementKind::StorageLive(n) => state.insert(n as usize),
            StatementKind::StorageDead(n) => state.remove(n as usize),
            _ => {}
        }
    }

    fn apply_terminator(&self, state: &mut BitSet, terminator: &Terminator, _: BlockId) {
        if let TerminatorKind::SwitchInt {
            discr: Operand::Copy(p),
            ..
        } = &terminator.kind
        {
            state.insert(p.local as usize);
        }
    }
}

fn members(s: &BitSet) -> Vec<usize> {
    s.iter().collect()
}

#[test]
fn bit_sets_grow_join_and_say_when_they_change() {
    let mut a = BitSet::new(4);
    assert!(a.is_empty());
    a.insert(1);
    a.insert(130);
    assert!(a.contains(130) && a.contains(1) && !a.contains(2));
    a.remove(1);
    a.remove(1000);
    assert_eq!(members(&a), [130]);
    let mut b = BitSet::new(1);
    b.insert(3);
    assert!(b.join(&a));
    assert_eq!(members(&b), [3, 130]);
    assert!(!b.join(&a), "nothing new: no change");
}

/// `bb0 → bb1 ⇄ bb2`, `bb1 → bb3 → return`: `_5` is read in the loop and
/// written on the way out; `_3` decides the loop.
#[test]
fn backward_liveness_through_a_loop() {
    let dead = |n| statement(StatementKind::StorageDead(n));
    let body = body(vec![
        block(vec![dead(6)], goto(1)),
        block(vec![], switch(3, &[(0, 2)], 3)),
        block(vec![add(5), add(6)], goto(1)),
        block(vec![dead(5)], TerminatorKind::Return),
    ]);
    let results = iterate_backward(&ReadLater, &body);
    // Read later from the loop's head: the switch's operand, and what the
    // loop body reads (the second round brings `_6` around).
    assert_eq!(members(&results.entry[1]), [3, 5, 6]);
    assert_eq!(members(&results.entry[2]), [3, 5, 6]);
    // `_6` is written before anything reads it on every way from bb0.
    assert_eq!(members(&results.entry[0]), [3, 5]);
    assert!(results.entry[3].is_empty());
    // Cursors inside a block: after `StorageLive(5)`, `_6` is still to be
    // read; after the last statement, the loop head's state.
    assert_eq!(
        members(&state_after(&ReadLater, &body, &results, 2, 0)),
        [3, 5, 6]
    );
    assert_eq!(
        members(&state_after(&ReadLater, &body, &results, 3, 0)),
        Vec::<usize>::new()
    );
    assert_eq!(
        members(&state_after(&ReadLater, &body, &results, 2, 2)),
        [3, 5, 6]
    );
}

#[test]
fn the_step_budget_stops_the_iteration_and_says_so() {
    let body = body(vec![
        block(vec![set(1)], goto(1)),
        block(vec![add(2), add(3)], goto(2)),
        block(vec![], TerminatorKind::Return),
    ]);
    // Enough for the first block (one statement and its terminator) and
    // not the second (three more steps).
    let a = Counter::default();
    let (r, hits) = bounds::measure(4, || {
        let r = iterate(&a, &body);
        assert!(bounds::exhausted());
        r
    });
    assert_eq!(*a.runs.borrow(), vec![0]);
    assert_eq!(r.reached, vec![true, true, false]);
    assert!(hits.exhausted());
    // Within the budget: the whole fixed point, nothing counted.
    let b = Counter::default();
    let (_, hits) = bounds::measure(6, || iterate(&b, &body));
    assert_eq!(*b.runs.borrow(), vec![0, 1, 2]);
    assert!(hits.is_empty());
}
