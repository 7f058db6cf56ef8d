//! The engine's recall hooks (`SummaryDomain::recall`/`remember`) on a toy
//! domain: what was remembered comes back in place of an analysis, and a
//! recall that is not the component's own results is not used.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use super::*;

struct Graph(Vec<Vec<u32>>);

impl CallGraph for Graph {
    fn function_count(&self) -> usize {
        self.0.len()
    }

    fn callees(&self, f: FnId) -> Vec<FnId> {
        self.0[f.index()].iter().map(|&g| FnId(g)).collect()
    }
}

type Component = Vec<(FnId, BTreeSet<u32>, u32)>;
type Stored = HashMap<Vec<FnId>, Component>;

/// Summary: the functions a function reaches (itself included); events:
/// how many callees it has. Remembers what it analyses; recalls what
/// `recall` holds, altered by `tamper`.
struct Memo<'g> {
    graph: &'g Graph,
    remembered: Mutex<Stored>,
    recall: Stored,
    tamper: fn(&mut Component),
}

impl<'g> Memo<'g> {
    fn new(graph: &'g Graph, recall: Stored) -> Self {
        Memo {
            graph,
            remembered: Mutex::new(HashMap::new()),
            recall,
            tamper: |_| {},
        }
    }
}

impl SummaryDomain for Memo<'_> {
    type Summary = BTreeSet<u32>;
    type Events = u32;
    type Context = ();

    fn external(&self, _: FnId) -> Option<BTreeSet<u32>> {
        None
    }

    fn has_body(&self, _: FnId) -> bool {
        true
    }

    fn fallback(&self) -> BTreeSet<u32> {
        BTreeSet::new()
    }

    fn provisional(&self, _: FnId) -> BTreeSet<u32> {
        BTreeSet::new()
    }

    fn analyze(&self, f: FnId, env: &Env<'_, Self>) -> (BTreeSet<u32>, u32) {
        let mut out = BTreeSet::from([f.0]);
        let callees = self.graph.callees(f);
        for g in &callees {
            out.extend(env.summary(*g).iter().copied());
        }
        (out, callees.len() as u32)
    }

    fn analyze_in_context(&self, _: FnId, _: &(), _: &Env<'_, Self>) -> Option<BTreeSet<u32>> {
        None
    }

    fn settles(&self, _: &BTreeSet<u32>, _: &BTreeSet<u32>) -> bool {
        true
    }

    fn unsettled(&self, _: FnId, _: &mut BTreeSet<u32>, _: &mut u32) {}

    fn recall(&self, members: &[FnId]) -> Option<Results<Self>> {
        let mut r = self.recall.get(members)?.clone();
        (self.tamper)(&mut r);
        Some(r)
    }

    fn remember(&self, members: &[FnId], results: &[(FnId, BTreeSet<u32>, u32)]) {
        if let Ok(mut m) = self.remembered.lock() {
            m.insert(members.to_vec(), results.to_vec());
        }
    }
}

/// 0 → 1 → {2, 3}, 2 ↔ 3 (a recursive component), 3 → 4; 5 alone.
fn graph() -> Graph {
    Graph(vec![
        vec![1],
        vec![2, 3],
        vec![3],
        vec![2, 4],
        vec![],
        vec![],
    ])
}

fn solve_memo(d: &Memo<'_>) -> Solution<Memo<'static>> {
    let s = solve(d.graph, &Schedule::new(d.graph), d, Limits::default());
    // The same figures, under a domain type that outlives `d`.
    Solution {
        summaries: s.summaries,
        events: s.events,
        stats: s.stats,
    }
}

#[test]
fn remembered_results_come_back_without_an_analysis() {
    let g = graph();
    let cold = Memo::new(&g, HashMap::new());
    let first = solve_memo(&cold);
    assert_eq!(first.stats.recalled_components, 0);
    let stored = cold.remembered.into_inner().unwrap_or_default();
    assert_eq!(stored.len(), first.stats.components);
    let warm = Memo::new(&g, stored);
    let second = solve_memo(&warm);
    assert_eq!(second.summaries, first.summaries);
    assert_eq!(second.events, first.events);
    assert_eq!(second.stats.recalled_components, first.stats.components);
    assert_eq!(second.stats.analyses, 0);
    // Nothing was analysed, so nothing new was remembered.
    assert!(warm.remembered.into_inner().unwrap_or_default().is_empty());
}

#[test]
fn part_recalled_part_analysed_is_the_same_solve() {
    let g = graph();
    let cold = Memo::new(&g, HashMap::new());
    let first = solve_memo(&cold);
    let mut stored = cold.remembered.into_inner().unwrap_or_default();
    // Only the recursive component and the leaf below it are kept.
    stored.retain(|members, _| members.contains(&FnId(2)) || members == &[FnId(4)]);
    let warm = Memo::new(&g, stored);
    let second = solve_memo(&warm);
    assert_eq!(second.summaries, first.summaries);
    assert_eq!(second.events, first.events);
    assert_eq!(second.stats.recalled_components, 2);
    assert!(second.stats.analyses > 0);
}

#[test]
fn a_recall_for_other_members_is_not_used() {
    let g = graph();
    let cold = Memo::new(&g, HashMap::new());
    let first = solve_memo(&cold);
    let stored = cold.remembered.into_inner().unwrap_or_default();
    for tamper in [
        (|r: &mut Component| {
            r.pop();
        }) as fn(&mut _),
        |r| {
            let first = r[0].clone();
            r.push(first);
        },
        |r| {
            for (f, _, _) in r.iter_mut() {
                f.0 += 1;
            }
        },
    ] {
        let mut warm = Memo::new(&g, stored.clone());
        warm.tamper = tamper;
        let second = solve_memo(&warm);
        assert_eq!(second.summaries, first.summaries);
        assert_eq!(second.events, first.events);
        assert!(second.stats.recalled_components < first.stats.components);
    }
}

#[test]
fn a_recall_in_another_order_is_put_in_the_analysis_order() {
    let g = graph();
    let cold = Memo::new(&g, HashMap::new());
    let first = solve_memo(&cold);
    let stored = cold.remembered.into_inner().unwrap_or_default();
    let mut warm = Memo::new(&g, stored);
    warm.tamper = |r| r.reverse();
    let second = solve_memo(&warm);
    assert_eq!(second.summaries, first.summaries);
    assert_eq!(second.events, first.events);
    assert_eq!(second.stats.recalled_components, first.stats.components);
    assert_eq!(second.stats.analyses, 0);
}
