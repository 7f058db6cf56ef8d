//! Dependency-driven dispatch: each job (a call-graph component) runs as
//! soon as every job it depends on (the components it calls) has finished,
//! on a fixed set of worker threads, the most urgent ready job first.
//!
//! The dispatcher knows nothing of summaries: a job is a number, its
//! dependencies are other numbers, and the caller gives the work to do for
//! one job. Each job runs exactly once, after all its dependencies, on one
//! of the workers; a job of weight 0 has no work and finishes as soon as it
//! is ready, without being handed to a worker.
//!
//! A worker in the middle of a job can wait for another job that is not a
//! dependency ([`Dispatch::wait`]); while it waits it runs ready jobs of a
//! level no higher than the one awaited. Every job depends only on jobs of
//! lower levels, so a job run while waiting can never need the one that is
//! waiting (it sits below it on the same stack), and the lowest unfinished
//! job is always ready or running: waiting cannot deadlock.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// A job, by index.
pub(crate) type Job = u32;

/// The graph of jobs and the state of one run over it.
pub(crate) struct Dispatch<'a> {
    /// The jobs that depend on each job.
    dependents: Vec<Vec<Job>>,
    /// Each job's level: 0 for a job without dependencies, else one more
    /// than its highest dependency's.
    level: Vec<u32>,
    /// Each job's weight (0: nothing to run).
    weight: Vec<u64>,
    /// Each job's urgency: its weight plus the highest urgency among the
    /// jobs that depend on it, so that the longest chain of work left
    /// above a job decides how early it runs.
    urgency: Vec<u64>,
    /// Whether each job has finished (read without the lock by
    /// [`Dispatch::is_finished`], written under it).
    finished: Vec<AtomicBool>,
    state: Mutex<State>,
    /// Signalled when a job finishes or becomes ready while a worker
    /// sleeps.
    changed: Condvar,
    /// Told, in order, when every job of levels `0..=l` has finished.
    level_done: &'a (dyn Fn(usize) + Sync),
}

struct State {
    /// Unfinished dependencies of each job.
    waiting: Vec<usize>,
    /// Ready jobs not yet taken, the most urgent first (ties: the lower
    /// index first).
    ready: BTreeSet<(Reverse<u64>, Job)>,
    /// Finished jobs.
    done: usize,
    /// Unfinished jobs per level, and the lowest level with one.
    left_per_level: Vec<usize>,
    lowest_open_level: usize,
    /// Workers asleep on [`Dispatch::changed`].
    sleeping: usize,
    /// A job's work panicked: the run stops (every worker returns and the
    /// panic reaches the caller of [`Dispatch::run`]), where waiting for
    /// the job that never finishes would hang.
    aborted: bool,
}

/// Stops the run if the worker holding it unwinds from a panic.
struct AbortOnPanic<'d, 'a>(&'d Dispatch<'a>);

impl Drop for AbortOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut state = self.0.lock();
            state.aborted = true;
            self.0.changed.notify_all();
        }
    }
}

impl<'a> Dispatch<'a> {
    /// The dispatch of jobs `0..deps.len()`, job `j` depending on each of
    /// `deps[j]` (duplicates and `j` itself are ignored), with the given
    /// weights. `deps` must be acyclic, every dependency of a job having a
    /// lower index (a callees-first numbering). `level_done(l)` is told, in
    /// order, when every job of levels `0..=l` has finished.
    pub(crate) fn new(
        deps: &[Vec<Job>],
        weight: Vec<u64>,
        level_done: &'a (dyn Fn(usize) + Sync),
    ) -> Dispatch<'a> {
        let n = deps.len();
        assert_eq!(weight.len(), n, "one weight per job");
        let mut dependents: Vec<Vec<Job>> = vec![Vec::new(); n];
        let mut waiting = vec![0usize; n];
        let mut level = vec![0u32; n];
        for (j, ds) in deps.iter().enumerate() {
            let mut ds: Vec<Job> = ds.iter().copied().filter(|&d| d as usize != j).collect();
            ds.sort_unstable();
            ds.dedup();
            for &d in &ds {
                assert!(
                    (d as usize) < j,
                    "job {j} depends on job {d}: dependencies come first"
                );
                dependents[d as usize].push(j as Job);
                level[j] = level[j].max(level[d as usize] + 1);
            }
            waiting[j] = ds.len();
        }
        let mut urgency = vec![0u64; n];
        for j in (0..n).rev() {
            let above = dependents[j]
                .iter()
                .map(|&k| urgency[k as usize])
                .max()
                .unwrap_or(0);
            urgency[j] = weight[j].saturating_add(above);
        }
        let depth = level.iter().map(|&l| l as usize + 1).max().unwrap_or(0);
        let mut left_per_level = vec![0usize; depth];
        for &l in &level {
            left_per_level[l as usize] += 1;
        }
        let dispatch = Dispatch {
            dependents,
            level,
            weight,
            urgency,
            finished: (0..n).map(|_| AtomicBool::new(false)).collect(),
            state: Mutex::new(State {
                waiting,
                ready: BTreeSet::new(),
                done: 0,
                left_per_level,
                lowest_open_level: 0,
                sleeping: 0,
                aborted: false,
            }),
            changed: Condvar::new(),
            level_done,
        };
        {
            let mut state = dispatch.lock();
            let roots: Vec<Job> = (0..n as Job)
                .filter(|&j| state.waiting[j as usize] == 0)
                .collect();
            for j in roots {
                dispatch.make_ready(&mut state, j);
            }
        }
        dispatch
    }

    /// The number of jobs.
    pub(crate) fn len(&self) -> usize {
        self.level.len()
    }

    /// Job `j`'s level.
    pub(crate) fn level(&self, j: Job) -> u32 {
        self.level[j as usize]
    }

    /// Whether job `j` has finished.
    pub(crate) fn is_finished(&self, j: Job) -> bool {
        self.finished[j as usize].load(Ordering::Acquire)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent between any two statements that hold the
        // lock; a panic in a job's work (not under the lock) poisons nothing.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs every job: `work(j)` once per job of nonzero weight, on
    /// `threads` workers (the caller's thread and `threads - 1` scoped
    /// ones), each job after all its dependencies. A panic in `work` stops
    /// the run and is resumed here once every worker has returned.
    pub(crate) fn run(&self, threads: usize, work: &(dyn Fn(Job) + Sync)) {
        {
            // Levels made of weightless jobs only are already done.
            let mut state = self.lock();
            self.report_levels(&mut state);
        }
        let worker = || {
            let _abort = AbortOnPanic(self);
            let mut next = None;
            loop {
                let Some(j) = next.take().or_else(|| self.take(|_| true)) else {
                    return;
                };
                work(j);
                next = self.finish(j, true);
            }
        };
        std::thread::scope(|s| {
            for _ in 1..threads.max(1) {
                s.spawn(worker);
            }
            worker();
        });
    }

    /// Waits until job `j` has finished, running meanwhile (through `work`)
    /// ready jobs whose level is at most `j`'s. To be called from within
    /// `work` by a job that needs `j`'s results but does not depend on it
    /// (a dependency has always finished before its dependents start);
    /// `j` must be of a lower level than that job, or the two could wait
    /// for each other.
    pub(crate) fn wait(&self, j: Job, work: &(dyn Fn(Job) + Sync)) {
        let bound = self.level[j as usize];
        while !self.is_finished(j) {
            // `None`: `j` has finished, or the run stopped on a panic.
            let Some(k) = self.take_or_wait(j, |k| self.level[k as usize] <= bound) else {
                return;
            };
            work(k);
            // Not taking another: the loop checks `j` first.
            let _ = self.finish(k, false);
        }
    }

    /// The most urgent ready job that `eligible` accepts, once there is
    /// one; `None` when every job has finished or the run stopped.
    fn take(&self, eligible: impl Fn(Job) -> bool) -> Option<Job> {
        let mut state = self.lock();
        loop {
            if state.aborted {
                return None;
            }
            if let Some(j) = Self::pop(&mut state, &eligible) {
                return Some(j);
            }
            if state.done == self.len() {
                return None;
            }
            state = self.sleep(state);
        }
    }

    /// [`Dispatch::take`] for a worker waiting for `j`: `None` as soon as
    /// `j` has finished (or the run stopped).
    fn take_or_wait(&self, j: Job, eligible: impl Fn(Job) -> bool) -> Option<Job> {
        let mut state = self.lock();
        loop {
            // Under the lock, where `finish` sets the flag before it wakes
            // sleepers: this check cannot miss the wake-up.
            if state.aborted || self.is_finished(j) {
                return None;
            }
            if let Some(k) = Self::pop(&mut state, &eligible) {
                return Some(k);
            }
            state = self.sleep(state);
        }
    }

    fn sleep<'s>(&self, mut state: MutexGuard<'s, State>) -> MutexGuard<'s, State> {
        state.sleeping += 1;
        let mut state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        state.sleeping -= 1;
        state
    }

    fn pop(state: &mut State, eligible: &impl Fn(Job) -> bool) -> Option<Job> {
        let key = *state.ready.iter().find(|(_, j)| eligible(*j))?;
        state.ready.remove(&key);
        Some(key.1)
    }

    /// Marks `j` finished and makes ready the jobs that waited for it
    /// alone; with `take_next`, takes the most urgent ready job for the
    /// caller in the same critical section.
    fn finish(&self, j: Job, take_next: bool) -> Option<Job> {
        let mut state = self.lock();
        self.complete(&mut state, j);
        self.report_levels(&mut state);
        let next = if take_next {
            Self::pop(&mut state, &|_| true)
        } else {
            None
        };
        if state.sleeping > 0 {
            self.changed.notify_all();
        }
        next
    }

    /// `j` and every weightless job it releases, transitively, finished.
    fn complete(&self, state: &mut State, j: Job) {
        let mut stack = vec![j];
        while let Some(j) = stack.pop() {
            self.finished[j as usize].store(true, Ordering::Release);
            state.done += 1;
            state.left_per_level[self.level[j as usize] as usize] -= 1;
            for &k in &self.dependents[j as usize] {
                let w = &mut state.waiting[k as usize];
                *w -= 1;
                if *w == 0 {
                    if self.weight[k as usize] == 0 {
                        stack.push(k);
                    } else {
                        state.ready.insert((Reverse(self.urgency[k as usize]), k));
                    }
                }
            }
        }
    }

    /// A job whose dependencies have all finished: queued, or finished at
    /// once if it has no work.
    fn make_ready(&self, state: &mut State, j: Job) {
        if self.weight[j as usize] == 0 {
            self.complete(state, j);
        } else {
            state.ready.insert((Reverse(self.urgency[j as usize]), j));
        }
    }

    fn report_levels(&self, state: &mut State) {
        while state.lowest_open_level < state.left_per_level.len()
            && state.left_per_level[state.lowest_open_level] == 0
        {
            (self.level_done)(state.lowest_open_level);
            state.lowest_open_level += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// What one run did: each job's start and end on one clock, and how
    /// often it ran.
    struct Trace {
        clock: AtomicUsize,
        start: Vec<AtomicUsize>,
        end: Vec<AtomicUsize>,
        runs: Vec<AtomicUsize>,
    }

    impl Trace {
        fn new(n: usize) -> Trace {
            let slots = || (0..n).map(|_| AtomicUsize::new(usize::MAX)).collect();
            Trace {
                clock: AtomicUsize::new(0),
                start: slots(),
                end: slots(),
                runs: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            }
        }

        fn tick(&self) -> usize {
            self.clock.fetch_add(1, Ordering::SeqCst)
        }

        fn record(&self, j: Job, body: impl FnOnce()) {
            self.runs[j as usize].fetch_add(1, Ordering::SeqCst);
            self.start[j as usize].store(self.tick(), Ordering::SeqCst);
            body();
            self.end[j as usize].store(self.tick(), Ordering::SeqCst);
        }

        fn at(v: &[AtomicUsize], j: usize) -> usize {
            v[j].load(Ordering::SeqCst)
        }
    }

    /// Runs `f` on another thread and fails the test if it takes longer
    /// than a generous bound (a scheduler that deadlocks hangs).
    fn within_bound<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(t) => t,
            Err(e) => panic!("the dispatch did not finish: {e}"),
        }
    }

    /// Runs every job of `deps` on `threads` workers, each job taking a
    /// little time so that workers overlap, and checks that each job with
    /// work ran once, after every job it depends on (transitively, through
    /// jobs without work), and that jobs without work never ran.
    fn check_order(deps: Vec<Vec<Job>>, weight: Vec<u64>, threads: usize) {
        within_bound(move || {
            let n = deps.len();
            let trace = Trace::new(n);
            let levels = Mutex::new(Vec::new());
            let level_done = |l| levels.lock().unwrap().push(l);
            let d = Dispatch::new(&deps, weight.clone(), &level_done);
            d.run(threads, &|j| {
                trace.record(j, || std::thread::sleep(Duration::from_millis(2)))
            });
            // A job's start comes after the end of every job it depends
            // on; a job without work "ends" when its dependencies have.
            let mut end = vec![0usize; n];
            for j in 0..n {
                let after = deps[j].iter().map(|&d| end[d as usize]).max().unwrap_or(0);
                if weight[j] == 0 {
                    assert_eq!(Trace::at(&trace.runs, j), 0, "job {j} has no work");
                    end[j] = after;
                    continue;
                }
                assert_eq!(Trace::at(&trace.runs, j), 1, "job {j} runs exactly once");
                let start = Trace::at(&trace.start, j);
                assert!(
                    start >= after,
                    "job {j} started at {start}, before a dependency ended ({after}), {threads} threads"
                );
                end[j] = Trace::at(&trace.end, j) + 1;
            }
            let depth = (0..n)
                .map(|j| d.level(j as Job) as usize + 1)
                .max()
                .unwrap_or(0);
            assert_eq!(
                *levels.lock().unwrap(),
                (0..depth).collect::<Vec<_>>(),
                "every level reported once, in order"
            );
        });
    }

    #[test]
    fn a_diamond_and_a_chain_run_each_job_once_after_its_dependencies() {
        // Diamond 0 ← {1, 2} ← 3; chain 4 ← 5 ← 6 ← 7; 8 calls the top
        // of both; 9 and 10 are independent leaves, 11 waits on 9 and 10.
        let deps: Vec<Vec<Job>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1, 2],
            vec![],
            vec![4],
            vec![5],
            vec![6, 6, 5],
            vec![3, 7, 8],
            vec![],
            vec![],
            vec![9, 10],
        ];
        for threads in [1, 2, 3, 8] {
            check_order(deps.clone(), vec![1; deps.len()], threads);
        }
    }

    #[test]
    fn jobs_without_work_still_order_their_dependents() {
        // 0 ← 1 (no work) ← 2; 3 (no work, no dependency) ← 4.
        let deps: Vec<Vec<Job>> = vec![vec![], vec![0], vec![1], vec![], vec![3]];
        for threads in [1, 2, 4] {
            check_order(deps.clone(), vec![1, 0, 1, 0, 1], threads);
        }
    }

    #[test]
    fn a_wide_random_graph_runs_in_dependency_order() {
        // 300 jobs, each depending on up to three earlier ones (a fixed
        // linear congruential sequence), some without work.
        let mut x: u64 = 12345;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as usize
        };
        let n = 300;
        let mut deps = Vec::with_capacity(n);
        let mut weight = Vec::with_capacity(n);
        for j in 0..n {
            let k = if j == 0 { 0 } else { next() % 4 };
            deps.push((0..k).map(|_| (next() % j) as Job).collect());
            weight.push(if next() % 5 == 0 {
                0
            } else {
                1 + next() as u64 % 9
            });
        }
        for threads in [1, 2, 5] {
            check_order(deps.clone(), weight.clone(), threads);
        }
    }

    #[test]
    fn a_panicking_job_stops_the_run_instead_of_hanging_it() {
        // 1 panics; 2 depends on it and would wait forever, 3 waits for it
        // without depending on it.
        for threads in [1, 2, 4] {
            let stopped = within_bound(move || {
                let deps: Vec<Vec<Job>> = vec![vec![], vec![0], vec![1], vec![0]];
                let d = Dispatch::new(&deps, vec![1, 1, 1, 1], &|_| {});
                let work = |j: Job| {
                    if j == 1 {
                        std::thread::sleep(Duration::from_millis(5));
                        panic!("job 1 fails");
                    }
                    if j == 3 {
                        d.wait(1, &|_| panic!("job 1 fails"));
                    }
                };
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.run(threads, &work)))
                    .is_err()
            });
            assert!(stopped, "{threads} threads: the panic reaches the caller");
        }
    }

    #[test]
    fn one_worker_takes_the_longest_chain_first() {
        // The chain 0 ← 1 ← 2 and the lone job 3 (weight 2): 0 has the
        // most work above it; then 1 and 3 tie (2 each) and the lower index
        // goes first. Level by level would have run 3 before 1.
        let deps: Vec<Vec<Job>> = vec![vec![], vec![0], vec![1], vec![]];
        let order = Mutex::new(Vec::new());
        let d = Dispatch::new(&deps, vec![1, 1, 1, 2], &|_| {});
        d.run(1, &|j| order.lock().unwrap().push(j));
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 3, 2]);
    }

    #[test]
    fn waiting_for_a_job_that_is_no_dependency_runs_it_rather_than_hang() {
        // 0 ← 1 ← 2 carries the most work, so one worker runs 2 before the
        // light leaf 3; 2 needs 3's result without depending on it. With
        // one worker, 2 must run 3 itself while it waits; with several, 3
        // may run elsewhere. Either way 3 has finished when 2 reads it.
        for threads in [1, 2, 4] {
            within_bound(move || {
                let deps: Vec<Vec<Job>> = vec![vec![], vec![0], vec![1], vec![]];
                let runs: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
                let seen = AtomicUsize::new(0);
                let d = Dispatch::new(&deps, vec![10, 10, 10, 1], &|_| {});
                let work = |j: Job| {
                    if j == 2 {
                        d.wait(3, &|k| {
                            runs[k as usize].fetch_add(1, Ordering::SeqCst);
                        });
                        seen.store(runs[3].load(Ordering::SeqCst), Ordering::SeqCst);
                    }
                    runs[j as usize].fetch_add(1, Ordering::SeqCst);
                };
                d.run(threads, &work);
                assert_eq!(
                    seen.load(Ordering::SeqCst),
                    1,
                    "{threads} threads: 3 ran before 2 read it"
                );
                for (j, r) in runs.iter().enumerate() {
                    assert_eq!(
                        r.load(Ordering::SeqCst),
                        1,
                        "{threads} threads: job {j} ran once"
                    );
                }
            });
        }
    }
}
