//! The solve: each component as soon as its callees are done, recursion
//! to a fixed point.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use program::FnId;

use crate::schedule::{CallGraph, SccId, Schedule};

/// What the engine solves: a domain of function summaries.
pub trait SummaryDomain: Sync {
    /// A function's summary.
    type Summary: Clone + PartialEq + Send + Sync;
    /// What analysing one function yields besides its summary, for later
    /// checks (typed observations, never rendered text).
    type Events: Send;
    /// A call-site context a callee's summary can be specialised to.
    type Context: Clone + Eq + Hash + Send + Sync;

    /// The summary of a function that is not analysed from a body
    /// (annotation, spec, default); `None` when it has a body to analyse.
    /// Asked once per function before the solve.
    fn external(&self, f: FnId) -> Option<Self::Summary>;

    /// Whether `f` has a body to analyse; members of a component without
    /// one keep their external summary (or the fallback).
    fn has_body(&self, f: FnId) -> bool;

    /// The summary of a function with neither an external summary nor a
    /// result.
    fn fallback(&self) -> Self::Summary;

    /// The summary a member of a recursive component starts from.
    fn provisional(&self, f: FnId) -> Self::Summary;

    /// Analyses `f`, reading other functions' summaries through `env`.
    fn analyze(&self, f: FnId, env: &Env<'_, Self>) -> (Self::Summary, Self::Events)
    where
        Self: Sized;

    /// `f`'s summary specialised to one call site's context; `None` when
    /// `f` cannot be specialised.
    fn analyze_in_context(
        &self,
        f: FnId,
        ctx: &Self::Context,
        env: &Env<'_, Self>,
    ) -> Option<Self::Summary>
    where
        Self: Sized;

    /// Whether a change from `before` to `after` (one member, two
    /// successive rounds) can only narrow, so that it always settles and
    /// the longer round limit applies.
    fn settles(&self, before: &Self::Summary, after: &Self::Summary) -> bool;

    /// A member of a recursive component whose summary had not settled
    /// when the round limit was reached: mark the summary as given up and
    /// record why.
    fn unsettled(&self, f: FnId, summary: &mut Self::Summary, events: &mut Self::Events);
}

/// How long a recursive component iterates.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Rounds before a component whose summaries keep changing in a way
    /// that need not settle (an adjustment growing per recursion level) is
    /// given up.
    pub rounds: usize,
    /// Rounds while only changes that always settle remain (expectations
    /// narrowing around a long cycle take a round per member).
    pub settling_rounds: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            rounds: 8,
            settling_rounds: 64,
        }
    }
}

/// Figures of one solve.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Components with at least one body.
    pub components: usize,
    /// Of those, the recursive ones.
    pub recursive_components: usize,
    /// The most rounds one component needed.
    pub max_rounds: usize,
    /// Recursive components given up at a round limit.
    pub unsettled_components: usize,
    /// Function analyses run (every round of every member).
    pub analyses: usize,
    /// Distinct call-site specialisations, by (function, context), asked
    /// for during the solve (those the domain declined included). Two
    /// threads that miss the cache at once both compute one; it counts
    /// once, so that the figure does not depend on the number of threads.
    pub specialisations: usize,
}

/// The result of a solve.
pub struct Solution<D: SummaryDomain> {
    /// Every function's summary: its result, else its external summary,
    /// else the fallback.
    pub summaries: Vec<D::Summary>,
    /// The events of every analysed function: level by level, the
    /// components of a level in schedule order, a component's members in
    /// callee-first order (of its final round).
    pub events: Vec<(FnId, D::Events)>,
    /// Figures of the solve.
    pub stats: Stats,
}

/// What an analysis reads while the engine solves one component.
pub struct Env<'a, D: SummaryDomain> {
    solver: &'a Solver<'a, D>,
    members: &'a [FnId],
    provisional: &'a HashMap<FnId, D::Summary>,
    /// The level of the component being solved: results of lower levels
    /// only are visible (see [`Solver::result`]).
    level: u32,
}

impl<D: SummaryDomain> Env<'_, D> {
    /// `g`'s summary: provisional while `g` is a member of the component
    /// being solved, otherwise final (or external, or the fallback).
    pub fn summary(&self, g: FnId) -> &D::Summary {
        if let Some(s) = self.provisional.get(&g) {
            return s;
        }
        let solver = self.solver;
        let summary = if solver.body.get(g.index()).copied().unwrap_or(false) {
            solver
                .result(g, self.level)
                .or_else(|| solver.body_external.get(&g))
        } else {
            solver.results.get(g.index()).and_then(OnceLock::get)
        };
        summary.unwrap_or(&solver.fallback)
    }

    /// Whether `g` belongs to the component being solved.
    pub fn is_member(&self, g: FnId) -> bool {
        self.members.contains(&g)
    }

    /// `g`'s summary specialised to `ctx`, computed once per solve. `None`
    /// for a member of the component being solved (its summary is not
    /// final, so no specialisation of it could be shared) and for a
    /// function the domain does not specialise.
    pub fn specialized(&self, g: FnId, ctx: &D::Context) -> Option<D::Summary> {
        if self.is_member(g) {
            return None;
        }
        let cache = &self.solver.specialisations;
        let key = (g, ctx.clone());
        if let Ok(map) = cache.lock()
            && let Some(s) = map.get(&key)
        {
            return s.clone();
        }
        // Computed outside the lock: a specialisation may need others.
        let s = self.solver.domain.analyze_in_context(g, ctx, self);
        if let Ok(mut map) = cache.lock() {
            map.insert(key, s.clone());
        }
        s
    }
}

/// Specialised summaries by (function, context); `None` where the domain
/// declined to specialise.
type SpecialisationCache<D> =
    HashMap<(FnId, <D as SummaryDomain>::Context), Option<<D as SummaryDomain>::Summary>>;

struct Solver<'a, D: SummaryDomain> {
    domain: &'a D,
    limits: Limits,
    /// The level of each component, and the component of each function.
    level_of: Vec<u32>,
    scc_of: &'a [SccId],
    /// Whether each function has a body to analyse.
    body: Vec<bool>,
    /// Each function's summary: a function without a body's external one
    /// from the start, a function with a body's result once its component
    /// is done (set once).
    results: Vec<OnceLock<D::Summary>>,
    /// External summaries of functions that also have a body, seen until
    /// the result is (none in practice: kept apart so that `results` holds
    /// one summary per function, not two).
    body_external: HashMap<FnId, D::Summary>,
    fallback: D::Summary,
    specialisations: Mutex<SpecialisationCache<D>>,
}

/// One component's results.
struct Component<D: SummaryDomain> {
    results: Vec<(FnId, D::Summary, D::Events)>,
    recursive: bool,
    rounds: usize,
    unsettled: bool,
}

/// Solves every function of `graph` in `schedule`'s order.
///
/// `schedule` must be `graph`'s ([`Schedule::new`]). A component is solved
/// (on rayon's current pool) as soon as the components it calls are done,
/// not when its whole level is: a level with few components would leave
/// threads idle at the barrier. What a component sees is nevertheless what
/// the level-by-level order gives it — its callees' results, and for any
/// other function the result only if it is of a lower level (waiting for
/// it if need be), else the external summary — so the solution does not
/// depend on timing. Events are merged in schedule order: level by level,
/// the components of a level in schedule order.
pub fn solve<G: CallGraph, D: SummaryDomain>(
    graph: &G,
    schedule: &Schedule,
    domain: &D,
    limits: Limits,
) -> Solution<D> {
    let n = graph.function_count();
    let sccs = schedule.sccs.len();
    let mut level_of = vec![0u32; sccs];
    for (l, level) in schedule.levels.iter().enumerate() {
        for &scc in level {
            level_of[scc as usize] = l as u32;
        }
    }
    let body: Vec<bool> = (0..n).map(|i| domain.has_body(FnId(i as u32))).collect();
    let mut body_external = HashMap::new();
    let results = (0..n)
        .map(|i| {
            let f = FnId(i as u32);
            let slot = OnceLock::new();
            match domain.external(f) {
                Some(s) if body[i] => {
                    body_external.insert(f, s);
                }
                Some(s) => {
                    let _ = slot.set(s);
                }
                None => {}
            }
            slot
        })
        .collect();
    let solver = Solver {
        domain,
        limits,
        level_of,
        scc_of: &schedule.scc_of,
        body,
        results,
        body_external,
        fallback: domain.fallback(),
        specialisations: Mutex::new(HashMap::new()),
    };
    // Each component waits for its distinct callee components; each lists
    // its callers, to release them.
    let mut callers: Vec<Vec<SccId>> = vec![Vec::new(); sccs];
    let waiting: Vec<AtomicUsize> = schedule
        .sccs
        .iter()
        .enumerate()
        .map(|(i, members)| {
            let mut callees: Vec<SccId> = members
                .iter()
                .flat_map(|&m| graph.callees(m))
                .filter(|c| c.index() < n)
                .map(|c| schedule.scc_of[c.index()])
                .filter(|&c| c as usize != i)
                .collect();
            callees.sort_unstable();
            callees.dedup();
            for &c in &callees {
                callers[c as usize].push(i as SccId);
            }
            AtomicUsize::new(callees.len())
        })
        .collect();
    let run = Run {
        graph,
        schedule,
        solver: &solver,
        callers,
        waiting,
        slots: (0..sccs).map(|_| Mutex::new(None)).collect(),
    };
    rayon::scope(|s| {
        for (i, w) in run.waiting.iter().enumerate() {
            if w.load(Ordering::Acquire) == 0 {
                run.spawn(s, i as SccId);
            }
        }
    });
    let Run { slots, .. } = run;
    let mut slots: Vec<Option<Done<D>>> = slots
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect();
    let mut events = Vec::new();
    let mut stats = Stats::default();
    for level in &schedule.levels {
        for &scc in level {
            let Some(c) = slots[scc as usize].take() else {
                continue;
            };
            if c.events.is_empty() {
                continue;
            }
            stats.components += 1;
            stats.recursive_components += usize::from(c.recursive);
            stats.unsettled_components += usize::from(c.unsettled);
            stats.max_rounds = stats.max_rounds.max(c.rounds);
            stats.analyses += c.rounds * c.events.len();
            events.extend(c.events);
        }
    }
    stats.specialisations = match solver.specialisations.into_inner() {
        Ok(cache) => cache.len(),
        Err(poisoned) => poisoned.into_inner().len(),
    };
    let fallback = solver.fallback;
    let mut body_external = solver.body_external;
    let summaries = solver
        .results
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.into_inner()
                .or_else(|| body_external.remove(&FnId(i as u32)))
                .unwrap_or_else(|| fallback.clone())
        })
        .collect();
    Solution {
        summaries,
        events,
        stats,
    }
}

/// A component once solved, without its summaries (they are in
/// `Solver::results`).
struct Done<D: SummaryDomain> {
    events: Vec<(FnId, D::Events)>,
    recursive: bool,
    rounds: usize,
    unsettled: bool,
}

/// The state of one dependency-driven solve.
struct Run<'a, G, D: SummaryDomain> {
    graph: &'a G,
    schedule: &'a Schedule,
    solver: &'a Solver<'a, D>,
    /// The components that call each component.
    callers: Vec<Vec<SccId>>,
    /// How many callee components each component still waits for.
    waiting: Vec<AtomicUsize>,
    /// Each component's result, written once (a mutex, not a `OnceLock`:
    /// events need only be `Send`).
    slots: Vec<Mutex<Option<Done<D>>>>,
}

impl<'a, G: CallGraph, D: SummaryDomain> Run<'a, G, D> {
    /// Solves `scc` on the pool, then releases the callers it was the last
    /// callee of.
    fn spawn<'s>(&'s self, s: &rayon::Scope<'s>, scc: SccId)
    where
        'a: 's,
    {
        s.spawn(move |s| {
            let level = self.solver.level_of[scc as usize];
            let c = self
                .solver
                .component(self.graph, &self.schedule.sccs[scc as usize], level);
            let mut events = Vec::with_capacity(c.results.len());
            for (f, summary, e) in c.results {
                // Each function with a body is in one component, solved
                // once, and its slot was left empty.
                let _ = self.solver.results[f.index()].set(summary);
                events.push((f, e));
            }
            let done = Done {
                events,
                recursive: c.recursive,
                rounds: c.rounds,
                unsettled: c.unsettled,
            };
            // A panic elsewhere poisons nothing here that matters: the slot
            // is only ever written by this task.
            match self.slots[scc as usize].lock() {
                Ok(mut slot) => *slot = Some(done),
                Err(p) => *p.into_inner() = Some(done),
            }
            for &caller in &self.callers[scc as usize] {
                // AcqRel: the caller's thread sees every result set above.
                if self.waiting[caller as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
                    self.spawn(s, caller);
                }
            }
        });
    }
}

impl<D: SummaryDomain> Solver<'_, D> {
    /// `g`'s result as a component of level `level` sees it: the level
    /// order makes every result of a lower level visible and none of the
    /// same or a higher level. A callee's component is always done before
    /// its caller starts; any other function of a lower level (a summary
    /// read without a call edge) may still be in progress, and is waited
    /// for — it cannot be waiting for this component, whose level is
    /// higher — doing other work of the pool meanwhile.
    fn result(&self, g: FnId, level: u32) -> Option<&D::Summary> {
        let scc = *self.scc_of.get(g.index())?;
        if self.level_of[scc as usize] >= level {
            return None;
        }
        // Only called for functions with a body: their result will come.
        let slot = &self.results[g.index()];
        loop {
            if let Some(s) = slot.get() {
                return Some(s);
            }
            if rayon::yield_now().is_none() {
                std::thread::yield_now();
            }
        }
    }

    fn component(&self, graph: &impl CallGraph, members: &[FnId], level: u32) -> Component<D> {
        let bodies: Vec<FnId> = callees_first(graph, members)
            .into_iter()
            .filter(|f| self.domain.has_body(*f))
            .collect();
        let recursive = members.len() > 1 || graph.callees(members[0]).contains(&members[0]);
        if bodies.is_empty() {
            return Component {
                results: Vec::new(),
                recursive,
                rounds: 0,
                unsettled: false,
            };
        }
        let mut provisional: HashMap<FnId, D::Summary> = bodies
            .iter()
            .map(|&f| (f, self.domain.provisional(f)))
            .collect();
        let mut rounds = 0;
        loop {
            rounds += 1;
            let snapshot = provisional.clone();
            let mut outcomes = Vec::with_capacity(bodies.len());
            for &f in &bodies {
                // Members see the summaries computed earlier in this round
                // (Gauss-Seidel): what a member learns travels around the
                // cycle in one round rather than one edge per round.
                let (summary, events) = {
                    let env = Env {
                        solver: self,
                        members,
                        provisional: &provisional,
                        level,
                    };
                    self.domain.analyze(f, &env)
                };
                provisional.insert(f, summary.clone());
                outcomes.push((f, summary, events));
            }
            let stable = outcomes.iter().all(|(f, s, _)| snapshot.get(f) == Some(s));
            let settling = outcomes
                .iter()
                .all(|(f, s, _)| snapshot.get(f).is_some_and(|b| self.domain.settles(b, s)));
            let limit = if settling {
                self.limits.settling_rounds
            } else {
                self.limits.rounds
            };
            if !recursive || stable || rounds >= limit {
                let mut unsettled = false;
                for (f, summary, events) in &mut outcomes {
                    if recursive
                        && !stable
                        && !snapshot
                            .get(f)
                            .is_some_and(|b| self.domain.settles(b, summary))
                    {
                        self.domain.unsettled(*f, summary, events);
                        unsettled = true;
                    }
                }
                return Component {
                    results: outcomes,
                    recursive,
                    rounds,
                    unsettled,
                };
            }
        }
    }
}

/// The members of a component in depth-first post-order over its call
/// edges: callees before their callers wherever the cycle allows, so that
/// one round of the fixed point carries a callee's summary to its callers.
/// Components of one or two members keep their order.
pub(crate) fn callees_first(graph: &impl CallGraph, members: &[FnId]) -> Vec<FnId> {
    if members.len() < 3 {
        return members.to_vec();
    }
    let inside: HashSet<FnId> = members.iter().copied().collect();
    let inner = |f: FnId| -> Vec<FnId> {
        graph
            .callees(f)
            .into_iter()
            .filter(|g| inside.contains(g))
            .collect()
    };
    let mut seen: HashSet<FnId> = HashSet::new();
    let mut order = Vec::with_capacity(members.len());
    for &root in members {
        if !seen.insert(root) {
            continue;
        }
        // (function, its callees inside the component, next one to visit)
        let mut stack: Vec<(FnId, Vec<FnId>, usize)> = vec![(root, inner(root), 0)];
        while let Some((f, next, i)) = stack.last_mut() {
            if let Some(&g) = next.get(*i) {
                *i += 1;
                if seen.insert(g) {
                    let n = inner(g);
                    stack.push((g, n, 0));
                }
            } else {
                order.push(*f);
                stack.pop();
            }
        }
    }
    order
}
