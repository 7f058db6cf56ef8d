//! Solving again after a change that reaches only some functions: what
//! a declaration changes (`--audit-invariants` leaves each out in turn).
//!
//! A function's summary and events depend on its own body, the
//! declarations that apply in it, and its callees' summaries. So when the
//! declarations change only in some functions, every function that neither
//! is one of them nor calls one, directly or not, comes out of the solve
//! exactly as before: [`Reuse`] gives those back from the earlier solve
//! (through the solve's [`Recall`] hook, the one the summary cache uses),
//! and the solve analyses the rest.

use std::collections::HashMap;

use program::{FnId, Program};

use crate::{ComponentResults, Input, Recall, Solved};

/// The results of an earlier solve, recalled for every component no
/// changed function reaches.
pub struct Reuse<'a> {
    base: &'a Solved,
    /// Index into `base.events`, by function.
    events: HashMap<FnId, usize>,
    /// The changed functions and their callers, transitively.
    dirty: Vec<bool>,
}

impl<'a> Reuse<'a> {
    /// `changed`: the functions whose analysis may differ from `base`'s.
    pub fn new(program: &Program, base: &'a Solved, changed: &[FnId]) -> Reuse<'a> {
        let mut dirty = vec![false; program.functions.len()];
        let mut stack: Vec<FnId> = changed.to_vec();
        while let Some(f) = stack.pop() {
            let Some(d) = dirty.get_mut(f.index()) else {
                continue;
            };
            if *d {
                continue;
            }
            *d = true;
            stack.extend(program.callers(f).into_iter().map(|(g, _)| g));
        }
        let events = base
            .events
            .iter()
            .enumerate()
            .map(|(i, (f, _))| (*f, i))
            .collect();
        Reuse {
            base,
            events,
            dirty,
        }
    }

    /// How many functions are analysed again.
    pub fn dirty(&self) -> usize {
        self.dirty.iter().filter(|d| **d).count()
    }
}

impl Recall for Reuse<'_> {
    fn recall(&self, members: &[FnId]) -> Option<ComponentResults> {
        if members
            .iter()
            .any(|f| self.dirty.get(f.index()).copied().unwrap_or(true))
        {
            return None;
        }
        members
            .iter()
            .map(|&f| {
                let summary = self.base.summaries.get(f.index())?.clone();
                let events = self
                    .events
                    .get(&f)
                    .and_then(|&i| self.base.events.get(i))
                    .map(|(_, e)| Box::new(e.clone()));
                Some((f, summary, events))
            })
            .collect()
    }

    fn remember(
        &self,
        _members: &[FnId],
        _results: &[(FnId, crate::Summary, Option<Box<crate::Events>>)],
    ) {
    }
}

/// [`crate::solve`] in `schedule`'s order with `input`'s declarations,
/// where they differ from the ones `base` was solved with only in the
/// functions `changed`.
pub fn solve_again(
    input: &Input<'_>,
    schedule: &solver::Schedule,
    base: &Solved,
    changed: &[FnId],
) -> Solved {
    let reuse = Reuse::new(input.program, base, changed);
    let mut solved = crate::solve_with(input, schedule, Some(&reuse));
    // C functions met only in recalled bodies were met all the same.
    solved
        .unknown_foreign
        .extend(base.unknown_foreign.iter().cloned());
    solved
}
