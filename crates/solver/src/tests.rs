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

/// What [`Reach`] gives a function with neither a body nor an external
/// summary.
const FALLBACK: u32 = 1000;

/// The leaves (functions without a body) a function may reach. Records
/// the order of analyses.
struct Reach<'g> {
    graph: &'g Graph,
    /// Functions without a body whose external summary is themselves.
    leaves: Vec<u32>,
    /// Functions with neither a body nor an external summary.
    opaque: Vec<u32>,
    order: Mutex<Vec<u32>>,
}

impl<'g> Reach<'g> {
    fn new(graph: &'g Graph, leaves: &[u32]) -> Self {
        Reach {
            graph,
            leaves: leaves.to_vec(),
            opaque: Vec::new(),
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
        !self.leaves.contains(&f.0) && !self.opaque.contains(&f.0)
    }

    fn fallback(&self) -> BTreeSet<u32> {
        BTreeSet::from([FALLBACK])
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
/// for context `k` is `k + its own id`, plus its callees' summaries for
/// context `k + 1` (specialisations that need others).
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

    fn analyze_in_context(&self, f: FnId, ctx: &u32, env: &Env<'_, Self>) -> Option<u32> {
        self.computed.fetch_add(1, Ordering::Relaxed);
        let nested: u32 = self
            .graph
            .callees(f)
            .into_iter()
            .filter_map(|g| env.specialized(g, &(ctx + 1)))
            .sum();
        Some(ctx + f.0 + nested)
    }

    fn settles(&self, before: &u32, after: &u32) -> bool {
        before == after
    }

    fn unsettled(&self, _: FnId, _: &mut u32, _: &mut Vec<Option<u32>>) {}
}

/// The events of function `f` in a solution (there is one entry per
/// analysed function).
fn events_of<D: SummaryDomain>(sol: &Solution<D>, f: u32) -> Option<&D::Events> {
    let mut of_f = sol.events.iter().filter(|(g, _)| g.0 == f);
    let first = of_f.next().map(|(_, e)| e);
    assert!(of_f.next().is_none(), "{f} has one entry");
    first
}

/// `solve` on a pool of `threads` threads.
fn solve_on<D: SummaryDomain>(threads: usize, graph: &Graph, d: &D, limits: Limits) -> Solution<D> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    pool.install(|| solve(graph, &Schedule::new(graph), d, limits))
}

#[test]
fn specialisations_are_cached_and_never_of_a_member() {
    // 0 → 2, 1 → 2: two callers of 2 with the same context; 3 ↔ 4.
    let d = Specialising {
        graph: Graph(vec![vec![2], vec![2], vec![], vec![4], vec![3]]),
        computed: AtomicUsize::new(0),
    };
    // One thread: 0 and 1 (one level) cannot both miss the cache.
    let sol = solve_on(1, &d.graph, &d, Limits::default());
    assert_eq!(d.computed.load(Ordering::Relaxed), 1);
    assert_eq!(sol.stats.specialisations, 1);
    assert_eq!(events_of(&sol, 0), Some(&vec![Some(9)]));
    assert_eq!(events_of(&sol, 1), Some(&vec![Some(9)]));
    // Members of one component do not specialise each other.
    assert_eq!(events_of(&sol, 3), Some(&vec![None]));
    assert_eq!(events_of(&sol, 4), Some(&vec![None]));
    // Specialisations are not summaries.
    assert_eq!(sol.summaries, vec![0, 1, 2, 3, 4]);
}

#[test]
fn specialisations_nest_and_share_one_cache() {
    // 0 → 1 → 2, 3 → 1: 1's specialisation needs 2's for the next context
    // (the cache is not locked while one is computed, or this would hang).
    let d = Specialising {
        graph: Graph(vec![vec![1], vec![2], vec![], vec![1]]),
        computed: AtomicUsize::new(0),
    };
    let sol = solve_on(1, &d.graph, &d, Limits::default());
    // (2, 7) for 1's analysis; (1, 7) and, inside it, (2, 8) for 0's; 3
    // finds (1, 7) cached.
    assert_eq!(d.computed.load(Ordering::Relaxed), 3);
    assert_eq!(sol.stats.specialisations, 3);
    assert_eq!(events_of(&sol, 1), Some(&vec![Some(9)]));
    assert_eq!(events_of(&sol, 0), Some(&vec![Some(7 + 1 + (8 + 2))]));
    assert_eq!(events_of(&sol, 3), Some(&vec![Some(18)]));
    // With more threads, 0 and 3 may both miss the cache; the count of
    // distinct specialisations does not change.
    let d4 = Specialising {
        graph: Graph(vec![vec![1], vec![2], vec![], vec![1]]),
        computed: AtomicUsize::new(0),
    };
    let sol4 = solve_on(4, &d4.graph, &d4, Limits::default());
    assert_eq!(sol4.stats, sol.stats);
    assert_eq!(events_of(&sol4, 3), Some(&vec![Some(18)]));
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
        let sol = solve_on(threads, &g, &d, Limits::default());
        let events: Vec<(u32, usize)> = sol.events.iter().map(|(f, e)| (f.0, *e)).collect();
        (sol.summaries, events, sol.stats)
    };
    let one = run(1);
    assert_eq!(one, run(4));
    assert_eq!(one.0[0], BTreeSet::from([7, 8]));
    assert_eq!(one.0[4], BTreeSet::from([7]));
}

/// A domain that records, for each function, when its analysis started
/// and ended on one clock shared by all threads, and that takes a little
/// time per analysis so that threads overlap.
struct Timed<'g> {
    inner: Reach<'g>,
    clock: AtomicUsize,
    spans: Mutex<Vec<(u32, usize, usize)>>,
}

impl SummaryDomain for Timed<'_> {
    type Summary = BTreeSet<u32>;
    type Events = usize;
    type Context = ();

    fn external(&self, f: FnId) -> Option<BTreeSet<u32>> {
        self.inner.external(f)
    }

    fn has_body(&self, f: FnId) -> bool {
        self.inner.has_body(f)
    }

    fn cost(&self, f: FnId) -> u64 {
        // The chain's bottom is the costliest, so that it goes first.
        u64::from(f.0 == 6) * 100 + 1
    }

    fn fallback(&self) -> BTreeSet<u32> {
        self.inner.fallback()
    }

    fn provisional(&self, f: FnId) -> BTreeSet<u32> {
        self.inner.provisional(f)
    }

    fn analyze(&self, f: FnId, env: &Env<'_, Self>) -> (BTreeSet<u32>, usize) {
        let start = self.clock.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(3));
        let mut out = BTreeSet::new();
        for g in self.inner.graph.callees(f) {
            out.extend(env.summary(g).iter().copied());
        }
        let end = self.clock.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut s) = self.spans.lock() {
            s.push((f.0, start, end));
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

    fn unsettled(&self, _: FnId, _: &mut BTreeSet<u32>, _: &mut usize) {}
}

#[test]
fn a_diamond_and_a_chain_are_solved_each_after_its_callees_on_any_number_of_threads() {
    // Diamond 0 → {1, 2} → 3 → leaf 9; chain 4 → 5 → 6 → 7 → leaf 10;
    // 8 calls the top of both, and 11 → 12 hang apart. Without level
    // barriers, 5 (level 2) may run while 1 (level 1) has not; what must
    // hold is that every function is analysed once, after its callees.
    let edges = vec![
        vec![1, 2],
        vec![3],
        vec![3],
        vec![9],
        vec![5],
        vec![6],
        vec![7],
        vec![10],
        vec![0, 4],
        vec![],
        vec![],
        vec![12],
        vec![],
    ];
    let run = |threads: usize| {
        let g = Graph(edges.clone());
        let d = Timed {
            inner: Reach::new(&g, &[9, 10]),
            clock: AtomicUsize::new(0),
            spans: Mutex::new(Vec::new()),
        };
        let sol = solve_on(threads, &g, &d, Limits::default());
        let spans = d.spans.into_inner().unwrap_or_default();
        let span = |f: u32| {
            let of_f: Vec<_> = spans.iter().filter(|(g, _, _)| *g == f).collect();
            assert_eq!(of_f.len(), 1, "{threads} threads: {f} analysed once");
            (of_f[0].1, of_f[0].2)
        };
        for (f, callees) in edges.iter().enumerate() {
            if [9, 10].contains(&f) {
                assert!(spans.iter().all(|(g, _, _)| *g as usize != f));
                continue;
            }
            let (start, _) = span(f as u32);
            for &c in callees {
                if [9, 10].contains(&c) {
                    continue;
                }
                let (_, end) = span(c);
                assert!(
                    end < start,
                    "{threads} threads: {f} started ({start}) before its callee {c} ended ({end})"
                );
            }
        }
        let events: Vec<(u32, usize)> = sol.events.iter().map(|(f, e)| (f.0, *e)).collect();
        (sol.summaries, events, sol.stats)
    };
    let one = run(1);
    for threads in [2, 3, 8] {
        assert_eq!(
            one,
            run(threads),
            "{threads} threads give one thread's solution"
        );
    }
    // Events come level by level, whatever the order of the work.
    let s = Schedule::new(&Graph(edges.clone()));
    let by_level: Vec<u32> = s
        .levels
        .iter()
        .flatten()
        .flat_map(|&c| s.sccs[c as usize].iter().map(|f| f.0))
        .filter(|f| ![9, 10].contains(f))
        .collect();
    assert_eq!(one.1.iter().map(|(f, _)| *f).collect::<Vec<_>>(), by_level);
    assert_eq!(one.0[8], BTreeSet::from([9, 10]));
    assert_eq!(one.0[11], BTreeSet::new());
}

#[test]
fn externals_and_the_fallback_are_read_and_bodiless_components_yield_nothing() {
    // 0 → {1, 2}: 1 has an external summary, 2 neither that nor a body.
    // 3 ↔ 4 where 4 has no body: only 3 is analysed, reading 4's fallback.
    let g = Graph(vec![vec![1, 2], vec![], vec![], vec![4], vec![3]]);
    let mut d = Reach::new(&g, &[1]);
    d.opaque = vec![2, 4];
    let sol = solve(&g, &Schedule::new(&g), &d, Limits::default());
    assert_eq!(sol.summaries[0], BTreeSet::from([1, FALLBACK]));
    assert_eq!(sol.summaries[1], BTreeSet::from([1]));
    assert_eq!(sol.summaries[2], BTreeSet::from([FALLBACK]));
    assert_eq!(sol.summaries[3], BTreeSet::from([FALLBACK]));
    assert_eq!(sol.summaries[4], BTreeSet::from([FALLBACK]));
    let mut order = d.order();
    order.sort();
    // 3 twice: its component is recursive, and its first result differs
    // from the provisional (empty) one.
    assert_eq!(order, vec![0, 3, 3]);
    let mut analysed: Vec<u32> = sol.events.iter().map(|(f, _)| f.0).collect();
    analysed.sort();
    assert_eq!(analysed, vec![0, 3]);
    assert_eq!(sol.stats.components, 2);
    assert_eq!(sol.stats.recursive_components, 1);
    assert_eq!(sol.stats.analyses, 3);
}

#[test]
fn members_are_analysed_callees_first_from_three_members_on() {
    // 0 → 3 → 1 → 2 → 0: depth-first post-order from 0 is 2, 1, 3, 0.
    // Nothing reaches a leaf, so the provisional (empty) summaries are the
    // fixed point and one round confirms it.
    let g = Graph(vec![vec![3], vec![2], vec![0], vec![1]]);
    let d = Reach::new(&g, &[]);
    let sol = solve(&g, &Schedule::new(&g), &d, Limits::default());
    assert_eq!(d.order(), vec![2, 1, 3, 0]);
    let ids: Vec<u32> = sol.events.iter().map(|(f, _)| f.0).collect();
    assert_eq!(ids, vec![2, 1, 3, 0]);
    assert_eq!(sol.stats.max_rounds, 1);
    assert_eq!(sol.stats.recursive_components, 1);

    // Two members keep their sorted order although 1 is 0's callee.
    let g = Graph(vec![vec![1], vec![0, 2], vec![]]);
    let d = Reach::new(&g, &[2]);
    let sol = solve(&g, &Schedule::new(&g), &d, Limits::default());
    // Round 1: 0 sees 1's provisional {}, 1 sees 0's new {} and the leaf;
    // round 2: 0 gets {2}; round 3 confirms.
    assert_eq!(d.order(), vec![0, 1, 0, 1, 0, 1]);
    assert_eq!(sol.stats.max_rounds, 3);
    assert_eq!(sol.summaries[0], BTreeSet::from([2]));
    assert_eq!(sol.summaries[1], BTreeSet::from([2]));
}

/// Each function's summary is one more than its callees' largest, up to a
/// cap; members may start from a given provisional value. The events are
/// the callee values the analysis saw.
struct Capped {
    graph: Graph,
    cap: u32,
    start: Vec<(u32, u32)>,
}

impl SummaryDomain for Capped {
    type Summary = u32;
    type Events = Vec<u32>;
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

    fn provisional(&self, f: FnId) -> u32 {
        self.start
            .iter()
            .find(|(g, _)| *g == f.0)
            .map_or(0, |(_, v)| *v)
    }

    fn analyze(&self, f: FnId, env: &Env<'_, Self>) -> (u32, Vec<u32>) {
        let seen: Vec<u32> = self
            .graph
            .callees(f)
            .into_iter()
            .map(|g| *env.summary(g))
            .collect();
        let deepest = seen.iter().copied().max().unwrap_or(0);
        ((deepest + 1).min(self.cap), seen)
    }

    fn analyze_in_context(&self, _: FnId, _: &(), _: &Env<'_, Self>) -> Option<u32> {
        None
    }

    fn settles(&self, before: &u32, after: &u32) -> bool {
        before == after
    }

    fn unsettled(&self, _: FnId, summary: &mut u32, _: &mut Vec<u32>) {
        *summary = u32::MAX;
    }
}

#[test]
fn rounds_start_from_the_provisional_summaries_and_keep_the_last_events() {
    // 0 ↔ 1, capped at 5, analysed 0 then 1.
    let rounds = |start: Vec<(u32, u32)>| {
        let d = Capped {
            graph: Graph(vec![vec![1], vec![0]]),
            cap: 5,
            start,
        };
        let sol = solve(&d.graph, &Schedule::new(&d.graph), &d, Limits::default());
        assert_eq!(sol.summaries, vec![5, 5]);
        // One entry per member, from the last round: each saw the other
        // at the cap.
        let events: Vec<(u32, Vec<u32>)> = sol.events.into_iter().map(|(f, e)| (f.0, e)).collect();
        assert_eq!(events, vec![(0, vec![5]), (1, vec![5])]);
        assert_eq!(sol.stats.analyses, 2 * sol.stats.max_rounds);
        sol.stats.max_rounds
    };
    // From 0: (1, 2), (3, 4), (5, 5), (5, 5).
    assert_eq!(rounds(vec![]), 4);
    // 1 starting at 3: (4, 5), (5, 5), (5, 5).
    assert_eq!(rounds(vec![(1, 3)]), 3);
    // 0's provisional value is never read: 1 is analysed after 0.
    assert_eq!(rounds(vec![(0, 4)]), 4);
}

/// A summary `(cases, expect)`: function 0's cases grow every round and
/// never settle, function 1's expectation narrows from 100 by one a round
/// and settles.
struct Mixed;

impl SummaryDomain for Mixed {
    type Summary = (u32, u32);
    type Events = Vec<&'static str>;
    type Context = ();

    fn external(&self, _: FnId) -> Option<(u32, u32)> {
        None
    }

    fn has_body(&self, _: FnId) -> bool {
        true
    }

    fn fallback(&self) -> (u32, u32) {
        (0, 0)
    }

    fn provisional(&self, _: FnId) -> (u32, u32) {
        (0, 100)
    }

    fn analyze(&self, f: FnId, env: &Env<'_, Self>) -> ((u32, u32), Vec<&'static str>) {
        let (cases, expect) = *env.summary(f);
        let other = env.summary(FnId(1 - f.0));
        assert!(env.is_member(FnId(1 - f.0)));
        let s = if f.0 == 0 {
            (cases + other.0 + 1, expect)
        } else {
            (cases, expect - 1)
        };
        (s, vec!["analysed"])
    }

    fn analyze_in_context(&self, _: FnId, _: &(), _: &Env<'_, Self>) -> Option<(u32, u32)> {
        None
    }

    fn settles(&self, before: &(u32, u32), after: &(u32, u32)) -> bool {
        before.0 == after.0
    }

    fn unsettled(&self, _: FnId, summary: &mut (u32, u32), events: &mut Vec<&'static str>) {
        summary.0 = u32::MAX;
        events.push("unsettled");
    }
}

#[test]
fn only_members_whose_change_need_not_settle_are_given_up() {
    let g = Graph(vec![vec![1], vec![0]]);
    let sol = solve(&g, &Schedule::new(&g), &Mixed, Limits::default());
    // 0's cases change every round: the short limit applies.
    assert_eq!(sol.stats.max_rounds, 8);
    assert_eq!(sol.stats.unsettled_components, 1);
    assert_eq!(sol.summaries, vec![(u32::MAX, 100), (0, 92)]);
    assert_eq!(events_of(&sol, 0), Some(&vec!["analysed", "unsettled"]));
    assert_eq!(events_of(&sol, 1), Some(&vec!["analysed"]));
}

/// A [`program::Program`] of `n` bodiless functions and the given
/// `(caller, callee, block)` call edges, added in that order.
fn program_of(n: usize, edges: &[(u32, u32, u32)]) -> program::Program {
    use petgraph::graph::NodeIndex;
    let mut graph = program::CallGraph::default();
    for i in 0..n {
        graph.add_node(FnId(i as u32));
    }
    for &(from, to, block) in edges {
        graph.add_edge(
            NodeIndex::new(from as usize),
            NodeIndex::new(to as usize),
            program::Edge {
                kind: program::EdgeKind::Call,
                block,
                span: Default::default(),
            },
        );
    }
    program::Program {
        crates: Vec::new(),
        functions: (0..n)
            .map(|i| program::Function {
                symbol: format!("f{i}").into(),
                name: format!("f{i}").into(),
                item_path: format!("f{i}").into(),
                kind: program::FnKind::Shim,
            })
            .collect(),
        by_symbol: Default::default(),
        graph,
        roots: Vec::new(),
        address_taken: Default::default(),
        call_arities: Vec::new(),
        stats: Default::default(),
    }
}

#[test]
fn a_program_is_scheduled_over_its_own_graph() {
    // 0 calls 2 at block 0 and 1 at block 1, the edge to 1 added first;
    // 2 ↔ 3, and 3 → 3.
    let p = program_of(4, &[(0, 1, 1), (0, 2, 0), (2, 3, 0), (3, 2, 0), (3, 3, 1)]);
    assert_eq!(p.function_count(), 4);
    assert_eq!(CallGraph::callees(&p, FnId(0)), vec![FnId(2), FnId(1)]);
    assert_eq!(
        CallGraph::callees(&p, FnId(3)),
        vec![FnId(2), FnId(3)],
        "in site order"
    );
    let s = Schedule::new(&p);
    // The numbering Tarjan gives over the program's graph, whose edges it
    // visits latest first, not over one rebuilt from the callees.
    assert_eq!(s, Schedule::of_graph(&p.graph));
    assert_eq!(
        s.sccs,
        vec![vec![FnId(2), FnId(3)], vec![FnId(1)], vec![FnId(0)]]
    );
    // Rebuilt from the callees (site order), 0's edges are visited 1 first.
    assert_eq!(
        Schedule::from_callees(&p).sccs,
        vec![vec![FnId(1)], vec![FnId(2), FnId(3)], vec![FnId(0)]]
    );
    assert_eq!(s.scc_of, vec![2, 1, 0, 0]);
    assert_eq!(s.levels, vec![vec![0, 1], vec![2]]);
    assert_eq!(s.recursive(&p), vec![0]);
    assert!(!s.is_recursive(&p, 1));
}

#[test]
fn progress_counts_every_function_with_a_body_and_each_level_once_in_order() {
    // The diamond and chain of the test above, plus a bodiless component
    // (leaves 9 and 10) that is never handed to a worker.
    let g = Graph(vec![
        vec![1, 2],
        vec![3],
        vec![3],
        vec![9],
        vec![5],
        vec![6],
        vec![7],
        vec![10],
        vec![0, 4],
        vec![],
        vec![],
    ]);
    let s = Schedule::new(&g);
    for threads in [1, 3] {
        let d = Reach::new(&g, &[9, 10]);
        let seen = Mutex::new(Vec::new());
        let observe = |p: Progress| seen.lock().unwrap().push(p);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        pool.install(|| solve_observed(&g, &s, &d, Limits::default(), &observe));
        let seen = seen.into_inner().unwrap();
        assert_eq!(
            seen[0],
            Progress::Start {
                levels: s.levels.len(),
                functions: 9
            }
        );
        let solved: usize = seen
            .iter()
            .map(|p| match p {
                Progress::Component { functions, .. } => *functions,
                _ => 0,
            })
            .sum();
        assert_eq!(solved, 9, "{threads} threads: the bar reaches its total");
        let levels: Vec<usize> = seen
            .iter()
            .filter_map(|p| match p {
                Progress::Level { level } => Some(*level),
                _ => None,
            })
            .collect();
        assert_eq!(levels, (0..s.levels.len()).collect::<Vec<_>>());
        // Every component solved was started first, once.
        let mut started: Vec<FnId> = seen
            .iter()
            .filter_map(|p| match p {
                Progress::Started { function, .. } => Some(*function),
                _ => None,
            })
            .collect();
        let mut finished: Vec<FnId> = seen
            .iter()
            .filter_map(|p| match p {
                Progress::Component { function, .. } => Some(*function),
                _ => None,
            })
            .collect();
        started.sort();
        finished.sort();
        assert_eq!(started, finished, "{threads} threads");
    }
}
