//! This analysis as a domain of the interprocedural engine.

use std::collections::BTreeSet;
use std::sync::Mutex;

use annotations::ExpectRange;
use program::FnId;
use solver::{Env, SummaryDomain};

use crate::Input;
use crate::context::Context;
use crate::declared::declared;
use crate::events::Events;
use crate::external::external_summary;
use crate::function::{analyze_function, analyze_in_context};
use crate::summary::{Source, Summaries, Summary};

pub(crate) struct PreemptDomain<'a> {
    pub input: &'a Input<'a>,
    /// C functions called that neither the spec nor an annotation
    /// describes, found while giving external summaries.
    pub unknown_foreign: Mutex<BTreeSet<String>>,
    /// Results of earlier solves (the CLI's summary cache).
    pub recall: Option<&'a dyn crate::Recall>,
}

/// What a function being analysed reads: the engine's view of the
/// component's provisional and every callee's final summaries.
struct View<'e, 'a> {
    env: &'e Env<'e, PreemptDomain<'a>>,
}

impl Summaries for View<'_, '_> {
    fn get(&self, f: FnId) -> &Summary {
        self.env.summary(f)
    }

    fn specialized(&self, f: FnId, ctx: &Context) -> Option<Summary> {
        self.env.specialized(f, ctx)
    }
}

impl PreemptDomain<'_> {
    /// The summary of a body whose analysis ran out of its step budget:
    /// the profile's summary of a function nothing is known of (klint's
    /// "may sleep" in the kernel), which writes everywhere its arguments
    /// reach and keeps nothing alive.
    fn over_budget(&self) -> Summary {
        match self.input.spec.unknown {
            spec::Unknown::MaySleep => Summary::may_sleep(Source::OverBudget),
            spec::Unknown::NoConstraint => Summary::neutral(Source::OverBudget),
        }
    }
}

impl SummaryDomain for PreemptDomain<'_> {
    type Summary = Summary;
    /// Most functions observe nothing worth reporting: only the others
    /// keep their events (boxed) until the checks run.
    type Events = Option<Box<Events>>;
    type Context = Context;

    fn external(&self, f: FnId) -> Option<Summary> {
        let function = self.input.program.function(f);
        match self.unknown_foreign.lock() {
            Ok(mut unknown) => external_summary(self.input, f, function, &mut unknown),
            Err(poisoned) => external_summary(self.input, f, function, &mut poisoned.into_inner()),
        }
    }

    fn has_body(&self, f: FnId) -> bool {
        self.input.program.body_of(f).is_some()
    }

    /// A body's analysis costs about its blocks and statements.
    fn cost(&self, f: FnId) -> u64 {
        // From what the load recorded: the body is not decoded for this.
        self.input
            .program
            .body_facts(f)
            .map_or(0, |facts| u64::from(facts.size))
    }

    fn fallback(&self) -> Summary {
        Summary::neutral(Source::Builtin)
    }

    fn provisional(&self, f: FnId) -> Summary {
        match declared(self.input, f) {
            Some(d) if d.adjust.is_some() && d.expect.is_some() => Summary::fixed(
                d.adjust.unwrap_or(0),
                d.expect.unwrap_or(ExpectRange::TOP),
                Source::Annotation {
                    path: d.path.clone(),
                    unchecked: d.unchecked,
                },
            ),
            // klint's provisional value for recursion: adjustment 0, any context.
            _ => Summary::neutral(Source::Inferred),
        }
    }

    fn analyze(&self, f: FnId, env: &Env<'_, Self>) -> (Summary, Option<Box<Events>>) {
        let (mut analyzed, hits) = bounds::measure(self.input.step_budget, || {
            analyze_function(self.input, f, &View { env }, None)
        });
        if hits.exhausted() {
            // A run stopped short of its fixed point proves nothing: its
            // states miss what the remaining paths bring.
            analyzed.summary = self.over_budget();
            analyzed.events = Events::default();
        }
        analyzed.events.bounds = hits;
        let events = (!analyzed.events.is_empty()).then(|| Box::new(analyzed.events));
        (analyzed.summary, events)
    }

    fn analyze_in_context(&self, f: FnId, ctx: &Context, env: &Env<'_, Self>) -> Option<Summary> {
        // Measured apart from the body that asked for it: whether this
        // thread computes it or finds it cached depends on timing.
        let (summary, hits) = bounds::measure(self.input.step_budget, || {
            analyze_in_context(self.input, f, ctx, &View { env })
        });
        if hits.exhausted() {
            let mut s = self.over_budget();
            s.specialised = true;
            return summary.map(|_| s);
        }
        summary
    }

    /// Adjustments that keep changing have no fixed point (a lock taken per
    /// recursion level); expectations only narrow, so they always settle.
    fn settles(&self, before: &Summary, after: &Summary) -> bool {
        before.cases == after.cases
    }

    fn recall(&self, members: &[FnId]) -> Option<Vec<(FnId, Summary, Option<Box<Events>>)>> {
        // `--trace` prints what the analysis of a body does: never skip it.
        if self.input.trace.is_some() {
            return None;
        }
        self.recall?.recall(members)
    }

    fn remember(&self, members: &[FnId], results: &[(FnId, Summary, Option<Box<Events>>)]) {
        if let Some(r) = self.recall {
            r.remember(members, results);
        }
    }

    fn unsettled(&self, _f: FnId, summary: &mut Summary, events: &mut Option<Box<Events>>) {
        let events = events.get_or_insert_default();
        events.bounds.add(bounds::Bound::Rounds);
        events.unsettled = Some(Box::new(summary.clone()));
        summary.poisoned = true;
        summary.source = Source::Recursive;
    }
}
