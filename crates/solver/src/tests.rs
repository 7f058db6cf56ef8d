//! The engine on toy graphs and toy domains: no program, no nightly.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A call graph given as adjacency lists.
struct Graph(Vec<Vec<u32>>);

impl CallGraph for Graph {
    fn function_count(&self) -> usize {
        self.0.len()
    }

    fn callees(&self, f: FnId) -> Vec<FnId> {
        self.0[f.index()].iter().map(|&g| FnId(g)).collect()
    }
}

/// The leaves (functions without a body) a function may reach. Records
/// the order of analyses.
struct Reach<'g> {
    graph: &'g Graph,
    leaves: Vec<u32>,
    order: Mutex<Vec<u32>>,
}

impl<'g> Reach<'g> {
    fn new(graph: &'g Graph, leaves: &[u32]) -> Self {
        Reach {
            graph,
            leaves: leaves.to_vec(),
            order: Mutex::new(Vec::new()),
        }
    }

    fn order(&self) -> Vec<u32> {
        self.order.lock().map(|o| o.clone()).unwrap_or_default()
    }
}

impl SummaryDomain for Reach<'_> {
    type Summary = BTreeSet<u32>;
    type Events = usize;
    type Context = ();

    fn external(&self, f: FnId) -> Option<BTreeSet<u32>> {
        self.leaves.contains(&f.0).then(|| BTreeSet::from([f.0]))
    }

    fn has_body(&self, f: FnId) -> bool {
        !self.leaves.contains(&f.0)
    }

    fn fallback(&self) -> BTreeSet<u32> {
        BTreeSet::new()
    }

    fn provisional(&self, _: FnId) -> BTreeSet<u32> {
        BTreeSet::new()
    }

    fn analyze(&self, f: FnId, env: &Env<'_, Self>) -> (BTreeSet<u32>, usize) {
        if let Ok(mut o) = self.order.lock() {
            o.push(f.0);
        }
        let mut out = BTreeSet::new();
        for g in self.graph.callees(f) {
            out.extend(env.summary(g).iter().copied());
        }
        let n = out.len();
        (out, n)
    }

    fn analyze_in_context(&self, _: FnId, _: &(), _: &Env<'_, Self>) -> Option<BTreeSet<u32>> {
        None
    }

    fn settles(&self, before: &BTreeSet<u32>, after: &BTreeSet<u32>) -> bool {
        before == after
    }

    fn unsettled(&self, _: FnId, _: &mut BTreeSet<u32>, events: &mut usize) {
        *events = usize::MAX;
    }
}

#[test]
fn a_chain_is_solved_callees_first_once_each() {
    // 0 → 1 → 2 → 3 (leaf)
    let g = Graph(vec![vec![1], vec![2], vec![3], vec![]]);
    let d = Reach::new(&g, &[3]);
    let s = Schedule::new(&g);
    assert_eq!(s.levels.len(), 4);
    let sol = solve(&g, &s, &d, Limits::default());
    assert_eq!(d.order(), vec![2, 1, 0]);
    for i in 0..3 {
        assert_eq!(sol.summaries[i], BTreeSet::from([3]));
    }
    assert_eq!(
        sol.summaries[3],
        BTreeSet::from([3]),
        "the leaf keeps its external summary"
    );
    let ids: Vec<u32> = sol.events.iter().map(|(f, _)| f.0).collect();
    assert_eq!(ids, vec![2, 1, 0]);
    assert_eq!(sol.stats.components, 3);
    assert_eq!(sol.stats.recursive_components, 0);
    assert_eq!(sol.stats.analyses, 3);
}

#[test]
fn a_cycle_converges_gauss_seidel_in_callee_first_order() {
    // 0 → 1 → 2 → 0, and 2 → 3 (leaf): callee-first order is 2, 1, 0
    // from root 0, so the leaf travels around in the first round; the
    // second round confirms the fixed point.
    let g = Graph(vec![vec![1], vec![2], vec![0, 3], vec![]]);
    let d = Reach::new(&g, &[3]);
    let sol = solve(&g, &Schedule::new(&g), &d, Limits::default());
    assert_eq!(d.order(), vec![2, 1, 0, 2, 1, 0]);
    for i in 0..3 {
        assert_eq!(sol.summaries[i], BTreeSet::from([3]));
    }
    assert_eq!(sol.stats.max_rounds, 2);
    assert_eq!(sol.stats.recursive_components, 1);
    assert_eq!(sol.stats.unsettled_components, 0);
    assert!(sol.events.iter().all(|(_, e)| *e == 1));
}

#[test]
fn a_self_call_is_recursive_and_iterates() {
    // 0 → 0, 0 → 1 (leaf)
    let g = Graph(vec![vec![0, 1], vec![]]);
    let d = Reach::new(&g, &[1]);
    let s = Schedule::new(&g);
    assert_eq!(s.recursive(&g), vec![s.scc_of[0]]);
    let sol = solve(&g, &s, &d, Limits::default());
    assert_eq!(d.order(), vec![0, 0]);
    assert_eq!(sol.summaries[0], BTreeSet::from([1]));
}

/// A summary that grows by one per analysis around a cycle: no fixed point.
struct Growing {
    /// Whether the domain calls the growth a settling change.
    settles: bool,
    graph: Graph,
}

impl SummaryDomain for Growing {
    type Summary = u32;
    type Events = Vec<&'static str>;
    type Context = ();

    fn external(&self, _: FnId) -> Option<u32> {
        None
    }

    fn has_body(&self, _: FnId) -> bool {
        true
    }

    fn fallback(&self) -> u32 {
        0
    }

    fn provisional(&self, _: FnId) -> u32 {
        0
    }

    fn analyze(&self, f: FnId, env: &Env<'_, Self>) -> (u32, Vec<&'static str>) {
        let deepest = self
            .graph
            .callees(f)
            .into_iter()
            .map(|g| *env.summary(g))
            .max()
            .unwrap_or(0);
        (deepest + 1, vec!["analysed"])
    }

    fn analyze_in_context(&self, _: FnId, _: &(), _: &Env<'_, Self>) -> Option<u32> {
        None
    }

    fn settles(&self, before: &u32, after: &u32) -> bool {
        self.settles || before == after
    }

    fn unsettled(&self, _: FnId, summary: &mut u32, events: &mut Vec<&'static str>) {
        *summary = u32::MAX;
        events.push("given up");
    }
}

#[test]
fn a_cycle_without_fixed_point_stops_at_the_round_limit() {
    let d = Growing {
        settles: false,
        graph: Graph(vec![vec![1], vec![0]]),
    };
    let limits = Limits {
        rounds: 5,
        settling_rounds: 50,
    };
    let sol = solve(&d.graph, &Schedule::new(&d.graph), &d, limits);
    assert_eq!(sol.stats.max_rounds, 5);
    assert_eq!(sol.stats.unsettled_components, 1);
    assert_eq!(sol.summaries, vec![u32::MAX, u32::MAX]);
    for (_, e) in &sol.events {
        assert_eq!(e, &vec!["analysed", "given up"]);
    }
}

#[test]
fn changes_that_settle_get_the_longer_limit() {
    let d = Growing {
        settles: true,
        graph: Graph(vec![vec![1], vec![0]]),
    };
    let limits = Limits {
        rounds: 5,
        settling_rounds: 12,
    };
    let sol = solve(&d.graph, &Schedule::new(&d.graph), &d, limits);
    assert_eq!(sol.stats.max_rounds, 12);
    // Settling changes are not given up: the last round's values stand.
    assert_eq!(sol.stats.unsettled_components, 0);
    // Members in order 0, 1, each seeing the other's newest value: round k
    // gives 0 the value 2k - 1 and 1 the value 2k.
    assert_eq!(sol.summaries, vec![23, 24]);
}

#[test]
fn schedule_levels_only_call_lower_levels() {
    // 0 → {1, 2}, 1 → 3, 2 → 3, 3 ↔ 4
    let g = Graph(vec![vec![1, 2], vec![3], vec![3], vec![4], vec![3]]);
    let s = Schedule::new(&g);
    assert_eq!(s.sccs.len(), 4);
    assert_eq!(s.scc_of[3], s.scc_of[4]);
    let level_of = |f: usize| s.levels.iter().position(|l| l.contains(&s.scc_of[f]));
    assert_eq!(level_of(3), Some(0));
    assert_eq!(level_of(1), Some(1));
    assert_eq!(level_of(2), Some(1));
    assert_eq!(level_of(0), Some(2));
    assert_eq!(s.recursive(&g), vec![s.scc_of[3]]);
}

/// Functions specialised to a constant a caller passes: a callee's summary
/// for context `k` is `k + its own id`.
struct Specialising {
    graph: Graph,
    computed: AtomicUsize,
}

impl SummaryDomain for Specialising {
    type Summary = u32;
    type Events = Vec<Option<u32>>;
    type Context = u32;

    fn external(&self, _: FnId) -> Option<u32> {
        None
    }

    fn has_body(&self, _: FnId) -> bool {
        true
    }

    fn fallback(&self) -> u32 {
        0
    }

    fn provisional(&self, _: FnId) -> u32 {
        0
    }

    fn analyze(&self, f: FnId, env: &Env<'_, Self>) -> (u32, Vec<Option<u32>>) {
        let seen = self
            .graph
            .callees(f)
            .into_iter()
            .map(|g| env.specialized(g, &7))
            .collect();
        (f.0, seen)
    }

    fn analyze_in_context(&self, f: FnId, ctx: &u32, _: &Env<'_, Self>) -> Option<u32> {
        self.computed.fetch_add(1, Ordering::Relaxed);
        Some(ctx + f.0)
    }

    fn settles(&self, before: &u32, after: &u32) -> bool {
        before == after
    }

    fn unsettled(&self, _: FnId, _: &mut u32, _: &mut Vec<Option<u32>>) {}
}

#[test]
fn specialisations_are_cached_and_never_of_a_member() {
    // 0 → 2, 1 → 2: two callers of 2 with the same context; 3 ↔ 4.
    let d = Specialising {
        graph: Graph(vec![vec![2], vec![2], vec![], vec![4], vec![3]]),
        computed: AtomicUsize::new(0),
    };
    let sol = solve(&d.graph, &Schedule::new(&d.graph), &d, Limits::default());
    assert_eq!(d.computed.load(Ordering::Relaxed), 1);
    assert_eq!(sol.stats.specialisations, 1);
    let events = |i: u32| {
        sol.events
            .iter()
            .filter(|(g, _)| g.0 == i)
            .map(|(_, e)| e.clone())
            .next_back()
    };
    assert_eq!(events(0), Some(vec![Some(9)]));
    assert_eq!(events(1), Some(vec![Some(9)]));
    // Members of one component do not specialise each other.
    assert_eq!(events(3), Some(vec![None]));
}

#[test]
fn one_thread_and_many_give_the_same_solution() {
    // A wider graph: two independent cycles under a common caller.
    let edges = vec![
        vec![1, 4],
        vec![2],
        vec![3, 8],
        vec![1],
        vec![5],
        vec![6, 9],
        vec![4],
        vec![],
        vec![],
        vec![7],
    ];
    let run = |threads: usize| {
        let g = Graph(edges.clone());
        let d = Reach::new(&g, &[7, 8]);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        let sol = pool.install(|| solve(&g, &Schedule::new(&g), &d, Limits::default()));
        let events: Vec<(u32, usize)> = sol.events.iter().map(|(f, e)| (f.0, *e)).collect();
        (sol.summaries, events, sol.stats)
    };
    let one = run(1);
    assert_eq!(one, run(4));
    assert_eq!(one.0[0], BTreeSet::from([7, 8]));
    assert_eq!(one.0[4], BTreeSet::from([7]));
}
