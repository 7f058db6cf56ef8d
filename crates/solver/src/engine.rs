//! The solve: each component once its callees are done, recursion to a
//! fixed point.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Mutex, OnceLock};

use program::FnId;
use rayon::prelude::*;

use crate::dispatch::Dispatch;
use crate::schedule::{CallGraph, Schedule};

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

    /// What analysing `f` (a function with a body) is expected to cost,
    /// in any unit as long as it is the same for every function; the
    /// schedule starts first the components with the costliest chain of
    /// callers above them. Only the order of the work depends on it, never
    /// its results.
    fn cost(&self, _f: FnId) -> u64 {
        1
    }

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

    /// The results of the component of `members` (sorted, as in the
    /// schedule) from an earlier solve, in the order its analysis would
    /// give them; `None` to analyse it. The domain must only recall what
    /// analysing the component again would give, to the byte: results are
    /// used as they come. Asked before a component with bodies is analysed.
    fn recall(&self, _members: &[FnId]) -> Option<Results<Self>>
    where
        Self: Sized,
    {
        None
    }

    /// The final results of the component of `members`, just analysed, for
    /// a later [`SummaryDomain::recall`].
    fn remember(&self, _members: &[FnId], _results: &[(FnId, Self::Summary, Self::Events)]) {}
}

/// A component's results: each member analysed, callees first, with its
/// summary and events.
pub type Results<D> = Vec<(
    FnId,
    <D as SummaryDomain>::Summary,
    <D as SummaryDomain>::Events,
)>;

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
    /// Components whose results the domain recalled
    /// ([`SummaryDomain::recall`]) instead of analysing them; their rounds,
    /// analyses and specialisations are not counted.
    pub recalled_components: usize,
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
    /// The level of the component being solved.
    level: u32,
    /// The call graph, for the check of what a summary read may read
    /// (debug builds).
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    graph: &'a dyn CallGraph,
    /// How many call-site specialisations are being computed below this
    /// component (debug builds' read check): a specialisation's context
    /// may name the targets of fn pointers read from a static, which the
    /// call graph need not connect to the component (a thread-local's
    /// accessor behind `LocalKey::try_with`); reading their summaries is
    /// what a level-by-level solve gives, only not checked.
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    specialising: std::sync::atomic::AtomicU32,
}

impl<D: SummaryDomain> Env<'_, D> {
    /// `g`'s summary: provisional while `g` is a member of the component
    /// being solved, otherwise what a level-by-level solve would give: the
    /// final summary of a function of a lower level (every callee's), and
    /// for any other function with a body its external summary or the
    /// fallback (nothing calls into a higher level, so only a read without
    /// a call edge can see one).
    pub fn summary(&self, g: FnId) -> &D::Summary {
        if let Some(s) = self.provisional.get(&g) {
            return s;
        }
        #[cfg(debug_assertions)]
        self.check_read(g);
        self.solver.summary(g, self.level)
    }

    /// Debug builds: a summary read beyond the component must be of a
    /// function without a body (its summary is fixed before the solve) or
    /// of one the component calls, directly or through other functions.
    /// The dependency-driven schedule has finished exactly those when a
    /// component starts; a read of any other lower-level function would
    /// have to wait for it ([`crate::dispatch::Dispatch::wait`]), which is
    /// correct but serialises the solve: this keeps the analysis within
    /// what the schedule gives without waiting.
    #[cfg(debug_assertions)]
    fn check_read(&self, g: FnId) {
        if !self.solver.domain.has_body(g)
            || self.members.contains(&g)
            || self.specialising.load(std::sync::atomic::Ordering::Relaxed) > 0
        {
            return;
        }
        let mut seen: HashSet<FnId> = self.members.iter().copied().collect();
        let mut stack: Vec<FnId> = self.members.to_vec();
        while let Some(f) = stack.pop() {
            for h in self.graph.callees(f) {
                if h == g {
                    return;
                }
                if seen.insert(h) {
                    stack.push(h);
                }
            }
        }
        panic!(
            "the summary of {g:?} was read while solving the component {:?}, which does not call it: \
             only callees (direct or transitive) may be read",
            self.members
        );
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
        self.specialising
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let s = self.solver.domain.analyze_in_context(g, ctx, self);
        self.specialising
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
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
    graph: &'a dyn CallGraph,
    schedule: &'a Schedule,
    /// The lowest level from which each function's result is read: one
    /// above its component's for a function with a body (0 without one:
    /// its external summary is read from the start), so that one lookup
    /// decides a read.
    visible_from: Vec<u32>,
    /// Each function's summary as other components read it: a function
    /// without a body's external one from the start, a function with a
    /// body's result once its component has finished (set once).
    done: Vec<OnceLock<D::Summary>>,
    /// External summaries of functions that also have a body (in practice
    /// none), read as a level-by-level solve reads them until their
    /// component is solved.
    body_external: HashMap<FnId, D::Summary>,
    fallback: D::Summary,
    specialisations: Mutex<SpecialisationCache<D>>,
    /// The order of the work: each component once its callees' have
    /// finished.
    dispatch: Dispatch<'a>,
    /// Each component's results once solved, until they are merged in
    /// schedule order (a mutex, not a `OnceLock`: events need only be
    /// `Send`).
    finished: Vec<Mutex<Option<Finished<D>>>>,
    observe: &'a (dyn Fn(Progress) + Sync),
}

/// One component's results.
struct Component<D: SummaryDomain> {
    results: Vec<(FnId, D::Summary, D::Events)>,
    recursive: bool,
    rounds: usize,
    unsettled: bool,
    recalled: bool,
}

/// A component once solved: its summaries are in [`Solver::done`], its
/// members' events here, callees first.
struct Finished<D: SummaryDomain> {
    events: Vec<(FnId, D::Events)>,
    recursive: bool,
    rounds: usize,
    unsettled: bool,
    recalled: bool,
}

/// What [`solve_observed`] reports while it works, for a progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Before any work: how many levels and functions (members of the
    /// components with a body to analyse) there are.
    Start {
        /// Levels of the schedule.
        levels: usize,
        /// Members of the components with a body.
        functions: usize,
    },
    /// A component with a body starts to be solved, on the worker thread
    /// that solves it: a display can name the work in flight (the slowest
    /// is the one that started first and has not finished).
    Started {
        /// Its first member, which names the component.
        function: FnId,
        /// Its level in the schedule (0-based).
        level: usize,
    },
    /// A component with a body, of `functions` functions, is solved.
    /// Reported from the worker thread that solved it; components are not
    /// solved level by level, so one of a higher level may come before
    /// one of a lower level.
    Component {
        /// Its members.
        functions: usize,
        /// Its first member, as [`Progress::Started`] named it.
        function: FnId,
    },
    /// Every component of levels `0..=level` (0-based) is solved; reported
    /// once per level, in order.
    Level {
        /// Its index.
        level: usize,
    },
}

/// Solves every function of `graph` in `schedule`'s order.
///
/// `schedule` must be `graph`'s ([`Schedule::new`]). A component is solved
/// as soon as every component it calls has finished (on as many threads
/// as rayon's current pool has), the components with the longest chain of
/// work above them first; there is no barrier between levels. What a
/// component reads is what the level-by-level order gives it (see
/// [`Env::summary`]), and results are merged in schedule order, so the
/// solution does not depend on the number of threads or on timing.
pub fn solve<G: CallGraph, D: SummaryDomain>(
    graph: &G,
    schedule: &Schedule,
    domain: &D,
    limits: Limits,
) -> Solution<D> {
    solve_observed(graph, schedule, domain, limits, &|_| {})
}

/// [`solve`], telling `observe` how far it is ([`Progress`]). The order
/// and results of the work do not depend on it.
pub fn solve_observed<G: CallGraph, D: SummaryDomain>(
    graph: &G,
    schedule: &Schedule,
    domain: &D,
    limits: Limits,
    observe: &(dyn Fn(Progress) + Sync),
) -> Solution<D> {
    let n = graph.function_count();
    let has_body: Vec<bool> = (0..n)
        .into_par_iter()
        .map(|i| domain.has_body(FnId(i as u32)))
        .collect();
    let mut body_external = HashMap::new();
    let done: Vec<OnceLock<D::Summary>> = (0..n)
        .map(|i| {
            let slot = OnceLock::new();
            match domain.external(FnId(i as u32)) {
                Some(s) if has_body[i] => {
                    body_external.insert(FnId(i as u32), s);
                }
                Some(s) => {
                    let _ = slot.set(s);
                }
                None => {}
            }
            slot
        })
        .collect();
    // A component depends on the components its members call; its weight
    // is what the domain expects its bodies to cost (0 without a body:
    // nothing to analyse). Gathered per component in parallel, in order.
    let (deps, weight): (Vec<Vec<u32>>, Vec<u64>) = schedule
        .sccs
        .par_iter()
        .map(|members| {
            let deps = members
                .iter()
                .flat_map(|&m| graph.callees(m))
                .filter(|c| c.index() < n)
                .map(|c| schedule.scc_of[c.index()])
                .collect();
            let weight = members
                .iter()
                .filter(|m| has_body[m.index()])
                .map(|&m| domain.cost(m).max(1))
                .fold(0u64, u64::saturating_add);
            (deps, weight)
        })
        .unzip();
    let functions = schedule
        .sccs
        .iter()
        .zip(&weight)
        .filter(|(_, w)| **w > 0)
        .map(|(members, _)| members.len())
        .sum();
    let level_done = |level| observe(Progress::Level { level });
    let dispatch = Dispatch::new(&deps, weight, &level_done);
    drop(deps);
    let visible_from = (0..n)
        .into_par_iter()
        .map(|i| {
            if has_body[i] {
                dispatch.level(schedule.scc_of[i]) + 1
            } else {
                0
            }
        })
        .collect();
    drop(has_body);
    let solver = Solver {
        domain,
        limits,
        graph,
        schedule,
        visible_from,
        done,
        body_external,
        fallback: domain.fallback(),
        specialisations: Mutex::new(HashMap::new()),
        dispatch,
        finished: (0..schedule.sccs.len()).map(|_| Mutex::new(None)).collect(),
        observe,
    };
    observe(Progress::Start {
        levels: schedule.levels.len(),
        functions,
    });
    solver
        .dispatch
        .run(rayon::current_num_threads(), &|scc| solver.run(scc));
    let Solver {
        done,
        mut body_external,
        fallback,
        specialisations,
        finished,
        ..
    } = solver;
    let mut finished: Vec<Option<Finished<D>>> = finished
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect();
    let mut events = Vec::new();
    let mut stats = Stats::default();
    for level in &schedule.levels {
        for &scc in level {
            let Some(c) = finished[scc as usize].take() else {
                continue;
            };
            if c.events.is_empty() {
                continue;
            }
            stats.components += 1;
            stats.recalled_components += usize::from(c.recalled);
            stats.recursive_components += usize::from(c.recursive);
            stats.unsettled_components += usize::from(c.unsettled);
            stats.max_rounds = stats.max_rounds.max(c.rounds);
            stats.analyses += c.rounds * c.events.len();
            events.extend(c.events);
        }
    }
    stats.specialisations = match specialisations.into_inner() {
        Ok(cache) => cache.len(),
        Err(poisoned) => poisoned.into_inner().len(),
    };
    let summaries = done
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.into_inner()
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

impl<D: SummaryDomain> Solver<'_, D> {
    /// `g`'s summary as a component of level `level` reads it (`g` not a
    /// member): see [`Env::summary`].
    fn summary(&self, g: FnId, level: u32) -> &D::Summary {
        let from = self.visible_from[g.index()];
        if level < from {
            // A function with a body of this level or above: not solved
            // yet in level order.
            return self.body_external.get(&g).unwrap_or(&self.fallback);
        }
        let slot = &self.done[g.index()];
        if let Some(s) = slot.get() {
            return s;
        }
        if from == 0 {
            // No body and no external summary.
            return &self.fallback;
        }
        // A lower-level function that is no callee (a callee's component
        // has always finished): its result will come, and a level-by-level
        // solve would read it.
        self.dispatch
            .wait(self.schedule.scc_of[g.index()], &|k| self.run(k));
        slot.get().unwrap_or(&self.fallback)
    }

    /// Solves component `scc` and keeps its results.
    fn run(&self, scc: u32) {
        let members = &self.schedule.sccs[scc as usize];
        let level = self.dispatch.level(scc);
        (self.observe)(Progress::Started {
            function: members[0],
            level: level as usize,
        });
        let c = self.component(members, level);
        let mut events = Vec::with_capacity(c.results.len());
        for (f, summary, e) in c.results {
            // Each function with a body is in one component, solved once,
            // and its slot was left empty.
            let _ = self.done[f.index()].set(summary);
            events.push((f, e));
        }
        *self.finished[scc as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Finished {
            events,
            recursive: c.recursive,
            rounds: c.rounds,
            unsettled: c.unsettled,
            recalled: c.recalled,
        });
        (self.observe)(Progress::Component {
            functions: members.len(),
            function: members[0],
        });
    }

    fn component(&self, members: &[FnId], level: u32) -> Component<D> {
        let graph = self.graph;
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
                recalled: false,
            };
        }
        if let Some(results) = self.domain.recall(members)
            && let Some(results) = in_body_order(results, &bodies)
        {
            return Component {
                results,
                recursive,
                rounds: 0,
                unsettled: false,
                recalled: true,
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
                        graph,
                        specialising: std::sync::atomic::AtomicU32::new(0),
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
                self.domain.remember(members, &outcomes);
                return Component {
                    results: outcomes,
                    recursive,
                    rounds,
                    unsettled,
                    recalled: false,
                };
            }
        }
    }
}

/// The members of a component in depth-first post-order over its call
/// edges: callees before their callers wherever the cycle allows, so that
/// one round of the fixed point carries a callee's summary to its callers.
/// Components of one or two members keep their order.
/// Recalled results in the order the component's bodies are analysed
/// (results for members without a body are dropped); `None` unless every
/// body has exactly one.
fn in_body_order<S, E>(results: Vec<(FnId, S, E)>, bodies: &[FnId]) -> Option<Vec<(FnId, S, E)>> {
    if results
        .iter()
        .map(|(f, _, _)| *f)
        .eq(bodies.iter().copied())
    {
        return Some(results);
    }
    let mut by_fn: HashMap<FnId, (FnId, S, E)> = HashMap::with_capacity(results.len());
    for r in results {
        if by_fn.insert(r.0, r).is_some() {
            return None;
        }
    }
    bodies.iter().map(|f| by_fn.remove(f)).collect()
}

pub(crate) fn callees_first(graph: &(impl CallGraph + ?Sized), members: &[FnId]) -> Vec<FnId> {
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
