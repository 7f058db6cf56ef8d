//! One body's run: the fixed point, read off site by site into its
//! expectation, violations, lock events and returns.

use std::borrow::Cow;

use annotations::ExpectRange;
use kmir::{BlockId, Terminator, TerminatorKind};
use program::EdgeKind;

use crate::summary::{Acquisition, ArgCond, Case, Reason, RetFact, Summary, Take};
use domains::Held;
use domains::{Adj, Path, PcState};
use memory::{Aspect, Known, PlaceKey, ProjKey};

use super::calls::call_operands;
use super::observations::{
    AdjustFailure, CountChange, LockEvent, MAX_OPEN_NESTINGS, Nesting, OpenNesting, Proof,
    Violation,
};
use super::{BodyAnalysis, Target};

pub struct BodyOutcome {
    pub expect: ExpectRange,
    pub reason: Option<Reason>,
    /// What the body additionally expects if a reference it drops is the
    /// last one (see `Summary::expect_last`).
    pub expect_last: ExpectRange,
    pub reason_last: Option<Reason>,
    /// The owned arguments `expect_last` is about (`None`: anything).
    pub last_from: Option<std::collections::BTreeSet<u32>>,
    /// The field of `*arg0` every site with a last-reference expectation
    /// drops (see `Summary::last_field`).
    pub last_field: crate::summary::LastField,
    /// The place below `*arg0` those sites drop (`Summary::last_place`).
    pub last_place: crate::summary::LastPlaces,
    /// What those sites may release, in entry terms (`None`: anything).
    pub releases: Option<Vec<memory::Bounds>>,
    pub violations: Vec<Violation>,
    /// The paths reaching a return, with the return's span.
    pub returns: Vec<(Path, kmir::Span)>,
    /// Sites where the count changes.
    pub changes: Vec<CountChange>,
    /// Locks acquired during the body (directly or in callees), in its terms.
    pub takes: Vec<Take>,
    pub lock_events: Vec<LockEvent>,
    pub edges: Vec<Nesting>,
    pub open: Vec<OpenNesting>,
    /// The expectation depends on what callers pass (see `context.rs`).
    pub context_sensitive: bool,
}

/// Runs the analysis of one body to its fixed point and reads the summary
/// and the violations off it.
pub fn analyze(analysis: &BodyAnalysis<'_>) -> BodyOutcome {
    let results = dataflow::iterate(analysis, analysis.body);
    if analysis.trace {
        eprintln!("[kanalyze trace] {}", analysis.origins.describe_guards());
        for l in 0..analysis.body.locals.len() as u32 {
            let v = analysis.origins.local_origins(l);
            if v.as_ref().is_none_or(|s| !s.is_empty()) {
                eprintln!(
                    "[kanalyze trace] _{l} holds {}",
                    analysis.origins.describe(&v)
                );
            }
        }
        for (b, state) in results.entry.iter().enumerate() {
            if results.reached[b] {
                eprintln!("[kanalyze trace] bb{b} (entry {:?}):", analysis.entry);
                for p in &state.paths {
                    eprintln!("    adj {}: {:?}", p.adj, p.facts);
                }
            }
        }
    }
    let mut reader = Reader::new(analysis);
    dataflow::visit(
        analysis,
        analysis.body,
        &results,
        |block, state, terminator| match &terminator.kind {
            TerminatorKind::Return => {
                for p in &state.paths {
                    reader.returns.push((p.clone(), terminator.span));
                }
            }
            TerminatorKind::Call { .. } | TerminatorKind::Drop { .. } => {
                let targets = analysis.sites.get(&block).map(Vec::as_slice).unwrap_or(&[]);
                for t in targets {
                    reader.site(block, state, terminator, *t);
                }
            }
            _ => {}
        },
    );
    if analysis.trace {
        for (p, _) in &reader.returns {
            eprintln!(
                "[kanalyze trace] return: adj {}: {:?} {:?}",
                p.adj, p.facts, p.locks
            );
        }
    }
    reader.finish()
}

/// What a body's fixed point says, read off terminator by terminator: the
/// expectations it needs on entry and why, the violations inside it, the
/// returns, and the lock events of each site.
struct Reader<'r, 'a> {
    analysis: &'r BodyAnalysis<'a>,
    expect: ExpectRange,
    reason: Option<Reason>,
    expect_last: ExpectRange,
    reason_last: Option<Reason>,
    last_from: Option<std::collections::BTreeSet<u32>>,
    last_field: crate::summary::LastField,
    last_place: crate::summary::LastPlaces,
    /// What the sites with a last-reference expectation may release, in
    /// entry terms (`None`: anything).
    releases: Option<Vec<memory::Bounds>>,
    violations: Vec<Violation>,
    returns: Vec<(Path, kmir::Span)>,
    changes: Vec<CountChange>,
    locks: LockSites,
    sensitive: bool,
}

impl<'r, 'a> Reader<'r, 'a> {
    fn new(analysis: &'r BodyAnalysis<'a>) -> Self {
        Reader {
            analysis,
            expect: ExpectRange::TOP,
            reason: None,
            expect_last: ExpectRange::TOP,
            reason_last: None,
            last_from: Some(std::collections::BTreeSet::new()),
            last_field: crate::summary::LastField::Nothing,
            last_place: crate::summary::LastPlaces::Nothing,
            releases: Some(Vec::new()),
            violations: Vec::new(),
            returns: Vec::new(),
            changes: Vec::new(),
            locks: LockSites::default(),
            sensitive: false,
        }
    }

    /// One call or drop target `t` of the terminator of `block`, reached
    /// in `state`.
    fn site(&mut self, block: BlockId, state: &PcState, terminator: &Terminator, t: Target) {
        let analysis = self.analysis;
        let summary = match state.paths.first() {
            Some(p) => analysis.site_summary(t, &terminator.kind, &p.facts),
            None => Cow::Borrowed(analysis.summary_of.get(t.callee)),
        };
        self.locks
            .visit_call(analysis, state, terminator, t, &summary);
        if summary.uniform_adjust() != Some(0) {
            self.changes.push(CountChange {
                span: terminator.span,
                callee: t.callee,
                cases: summary.cases.clone(),
            });
        }
        if summary.poisoned {
            return;
        }
        self.expectations(block, state, terminator, t, &summary);
    }

    /// What the site needs of the count on entry to the body, or the
    /// violation where no entry count can satisfy it.
    fn expectations(
        &mut self,
        block: BlockId,
        state: &PcState,
        terminator: &Terminator,
        t: Target,
        summary: &Summary,
    ) {
        let analysis = self.analysis;
        let mut needs = SiteNeeds::new(summary.expect);
        // What the site releases by the flow-insensitive origins scan: all
        // of it kept alive by a borrow that outlives this function, or tied
        // by an identity test to such a handle, none of it can be the last.
        let from_origins = analysis.released(&terminator.kind, summary);
        let backed = backed_by_origins(analysis, block, &terminator.kind, summary, &from_origins);
        for p in &state.paths {
            let whole = analysis.effective_expect(summary, &terminator.kind, &p.facts);
            let last = last_reference_expect(analysis, block, &terminator.kind, summary, p, backed);
            let tearing_down = analysis.tearing_down(&p.facts);
            let (e, e_last) = if tearing_down {
                needs.via_last = whole == ExpectRange::TOP;
                (ExpectRange::TOP, whole.intersect(&last))
            } else if analysis.can_be_last.contains(&block) {
                // Declared: the reference dropped here can be the last
                // one, so the teardown's expectation is the drop's own.
                needs.declared_last |= whole == ExpectRange::TOP && last != ExpectRange::TOP;
                (whole.intersect(&last), ExpectRange::TOP)
            } else {
                (whole, last)
            };
            if e_last != ExpectRange::TOP {
                self.record_last_release(
                    block,
                    &terminator.kind,
                    summary,
                    p,
                    tearing_down,
                    &from_origins,
                );
            }
            if analysis.trace {
                eprintln!(
                    "[kanalyze trace] bb{block} calls {}: expects {e} (summary {}, last {e_last}), adj {}",
                    analysis.program.function(t.callee).name,
                    summary.expect,
                    p.adj
                );
            }
            needs.narrow(p, e, e_last, self.expect, self.expect_last);
        }
        self.settle(block, state, terminator, t, summary, needs);
    }

    /// What a path's release at a site with a last-reference expectation
    /// tells of the body's own: what it may release, in entry terms, which
    /// owned arguments and which field or place below `*arg0` that is.
    fn record_last_release(
        &mut self,
        block: BlockId,
        terminator: &TerminatorKind,
        summary: &Summary,
        p: &Path,
        tearing_down: bool,
        from_origins: &super::origins::Set,
    ) {
        let analysis = self.analysis;
        // What this site may release, in the function's entry
        // terms: a caller holding it elsewhere discharges it. A
        // teardown of its own is about anything.
        let released = if tearing_down {
            None
        } else {
            analysis.release_in_entry_terms(&p.facts, terminator, summary)
        };
        match (&mut self.releases, released) {
            (Some(all), Some(r)) => all.extend(r),
            (all, _) => *all = None,
        }
        // Which of this function's owned arguments the
        // expectation is about, by the origins scan.
        let about = if tearing_down {
            None
        } else {
            analysis.origins.attributed(from_origins, block)
        };
        match (&mut self.last_from, about) {
            (Some(from), Some(a)) => from.extend(a),
            (from, _) => *from = None,
        }
        self.last_field = self
            .last_field
            .join(dropped_field(analysis, block, terminator, summary));
        let dropped = dropped_place(analysis, block, terminator, summary);
        if analysis.trace {
            eprintln!(
                "[kanalyze trace] bb{block} last place {}",
                match &dropped {
                    crate::summary::LastPlaces::One(p) => p.describe(),
                    other => format!("{other:?}"),
                }
            );
        }
        self.last_place = std::mem::take(&mut self.last_place).join(dropped);
    }

    /// Records what a site needs, gathered over its paths: the violation
    /// where no entry count satisfies it (an ordinary one first, else one
    /// about a last reference), and otherwise the body's expectations
    /// narrowed, with the site as their reason.
    fn settle(
        &mut self,
        block: BlockId,
        state: &PcState,
        terminator: &Terminator,
        t: Target,
        summary: &Summary,
        needs: SiteNeeds,
    ) {
        let first_adj = state
            .paths
            .iter()
            .find_map(|p| match p.adj {
                Adj::Known(a) => Some(a),
                Adj::Top => None,
            })
            .unwrap_or(0);
        let make_violation =
            |(adj, e, held): Shortfall, base: ExpectRange, last_reference: bool| Violation {
                block,
                span: terminator.span,
                target: t,
                callee_expect: e,
                possible: match adj {
                    Adj::Known(a) => base.shift(a),
                    Adj::Top => ExpectRange::TOP,
                },
                unknown_adjustment: adj == Adj::Top,
                held,
                specialised: summary.specialised.then(|| Box::new(summary.clone())),
                last_reference,
            };
        if let Some(w) = needs.worst {
            self.violations.push(make_violation(w, self.expect, false));
            return;
        }
        if let Some(w) = needs.worst_last {
            self.violations.push(make_violation(
                w,
                self.expect.intersect(&self.expect_last),
                true,
            ));
        } else {
            let next = self.expect_last.intersect(&needs.required_last);
            if next != self.expect_last {
                self.reason_last = Some(Reason {
                    block,
                    span: terminator.span,
                    callee: t.callee,
                    kind: t.kind,
                    adj: first_adj,
                    callee_expect: needs.callee_expect_last,
                    callee_summary: None,
                    via_last: needs.via_last,
                });
                self.expect_last = next;
            }
        }
        let next = self.expect.intersect(&needs.required);
        if next != self.expect {
            self.sensitive |= summary.context_sensitive
                || summary.sleeps_if_flag.is_some()
                || summary.sleeps_if_zero.is_some()
                || matches!(t.kind, EdgeKind::Indirect | EdgeKind::Virtual);
            self.reason = Some(Reason {
                block,
                span: terminator.span,
                callee: t.callee,
                kind: t.kind,
                adj: first_adj,
                callee_expect: needs.callee_expect,
                callee_summary: summary.specialised.then(|| Box::new(summary.clone())),
                via_last: needs.declared_last,
            });
            self.expect = next;
        }
    }

    fn finish(self) -> BodyOutcome {
        BodyOutcome {
            expect: self.expect,
            reason: self.reason,
            expect_last: self.expect_last,
            reason_last: self.reason_last,
            last_from: self.last_from,
            last_field: self.last_field,
            last_place: self.last_place,
            releases: self.releases,
            violations: self.violations,
            returns: self.returns,
            changes: self.changes,
            // Locks taken under a condition on an argument: call sites
            // that pass constants may take none of them.
            context_sensitive: self.sensitive
                || (self.analysis.branches_on_args && !self.locks.takes.is_empty()),
            takes: self.locks.takes,
            lock_events: self.locks.events,
            edges: self.locks.edges,
            open: self.locks.open,
        }
    }
}

/// A path's count, the callee's expectation on it, and the locks held
/// there: what a violation at a site reports.
type Shortfall = (Adj, ExpectRange, Vec<Held>);

/// What one site needs of the count on entry to the body, gathered over
/// the paths that reach it.
struct SiteNeeds {
    /// The entry counts every path's expectation allows.
    required: ExpectRange,
    /// The same for the expectations that hold if the reference the site
    /// drops is the last one.
    required_last: ExpectRange,
    /// The callee's expectation on the last path that had one.
    callee_expect: ExpectRange,
    callee_expect_last: ExpectRange,
    /// The last-reference expectation is the callee's own one, not its
    /// whole expectation met on a path that has just dropped a last
    /// reference (see `Reason::via_last`).
    via_last: bool,
    /// The site's own expectation is the callee's last-reference one,
    /// by a holds-last declaration (the explanation goes on in the
    /// teardown's terms).
    declared_last: bool,
    /// The first path on which no entry count satisfies the site.
    worst: Option<Shortfall>,
    /// The same for the last-reference expectation.
    worst_last: Option<Shortfall>,
}

impl SiteNeeds {
    fn new(callee_expect: ExpectRange) -> Self {
        SiteNeeds {
            required: ExpectRange::TOP,
            required_last: ExpectRange::TOP,
            callee_expect,
            callee_expect_last: ExpectRange::TOP,
            via_last: true,
            declared_last: false,
            worst: None,
            worst_last: None,
        }
    }

    /// Narrows the site's needs by what path `p` expects (`e`, and
    /// `e_last` if the reference is the last), noting the path as the
    /// worst when nothing the body expects so far (`expect`,
    /// `expect_last`) satisfies it.
    fn narrow(
        &mut self,
        p: &Path,
        e: ExpectRange,
        e_last: ExpectRange,
        expect: ExpectRange,
        expect_last: ExpectRange,
    ) {
        if e_last != ExpectRange::TOP {
            self.callee_expect_last = e_last;
            let required = match p.adj {
                Adj::Known(a) => e_last.shift_back(a),
                Adj::Top => ExpectRange::EMPTY,
            };
            let narrowed = self.required_last.intersect(&required);
            if expect
                .intersect(&expect_last)
                .intersect(&narrowed)
                .is_empty()
                && self.worst_last.is_none()
            {
                self.worst_last = Some((p.adj, e_last, p.locks.held.clone()));
            }
            self.required_last = narrowed;
        }
        if e == ExpectRange::TOP {
            return;
        }
        self.callee_expect = e;
        let required = match p.adj {
            Adj::Known(a) => e.shift_back(a),
            Adj::Top => ExpectRange::EMPTY,
        };
        let narrowed = self.required.intersect(&required);
        if expect.intersect(&narrowed).is_empty() && self.worst.is_none() {
            self.worst = Some((p.adj, e, p.locks.held.clone()));
        }
        self.required = narrowed;
    }
}

/// Whether all a site releases, by the flow-insensitive origins scan, is
/// kept alive by a borrow that outlives the function, by a clone's
/// backing handle, or tied by an identity test or a same-or-none result
/// to such a handle: then none of it can be the last reference.
fn backed_by_origins(
    analysis: &BodyAnalysis<'_>,
    block: BlockId,
    terminator: &TerminatorKind,
    summary: &Summary,
    from_origins: &super::origins::Set,
) -> bool {
    let backed = analysis.origins.backed(from_origins, block)
        || analysis.origins.kept_clone_backs(
            analysis.body,
            &analysis.sites,
            analysis.summary_of,
            block,
            terminator,
            summary.last_from.as_deref(),
        )
        || analysis.origins.identity_backed(
            analysis.dump,
            analysis.body,
            block,
            terminator,
            summary.last_from.as_deref(),
            summary.last_field,
        )
        || analysis
            .origins
            .same_or_none_backed(analysis.dump, analysis.body, block, terminator);
    if analysis.trace && from_origins.as_ref().is_none_or(|r| !r.is_empty()) {
        eprintln!(
            "[kanalyze trace] bb{block} releases {}: {}",
            analysis.origins.describe(from_origins),
            if backed {
                "kept alive by its origins"
            } else {
                "not shown kept alive by its origins"
            }
        );
    }
    backed
}

/// What the callee expects on path `p` if the reference the site drops is
/// the last one: nothing where the reference is shown held elsewhere, or
/// declared or recognised not to be the last.
fn last_reference_expect(
    analysis: &BodyAnalysis<'_>,
    block: BlockId,
    terminator: &TerminatorKind,
    summary: &Summary,
    p: &Path,
    backed: bool,
) -> ExpectRange {
    // The one rule of object liveness: held elsewhere, or nothing.
    let targets = analysis.sites.get(&block).map(Vec::as_slice).unwrap_or(&[]);
    let exclusive: Vec<PlaceKey> = analysis
        .accessor_facts_kept(&p.facts, terminator, targets)
        .into_iter()
        .map(|k| p.facts.object_key(&k.0))
        .collect();
    let proof = analysis.discharge(&p.facts, terminator, summary, &exclusive);
    if analysis.trace {
        eprintln!(
            "[kanalyze trace] bb{block}: release {}",
            match &proof {
                Some(proof) => format!("not the last: {}", proof.describe()),
                None => format!(
                    "not shown held elsewhere: {}",
                    match analysis.released_bounds(&p.facts, terminator, summary) {
                        None => "it may release anything".to_string(),
                        Some(bs) => bs
                            .iter()
                            .map(crate::liveness::contract::describe_bounds)
                            .collect::<Vec<_>>()
                            .join("; "),
                    }
                ),
            }
        );
    }
    // On a teardown path everything the callee needs is
    // needed only because a reference was the last.
    if analysis.not_last.contains(&block)
        || proof.is_some()
        || backed
        || analysis.stored_clone_backs(&p.facts, terminator, targets, summary.last_from.as_deref())
        || analysis.last_place_inactive(summary, terminator, &p.facts)
        || analysis.same_object_discharges(block, terminator, summary, &p.facts)
    {
        ExpectRange::TOP
    } else {
        analysis.variant_expect_last(summary, terminator, &p.facts)
    }
}

/// The lock findings of one body, gathered site by site.
#[derive(Default)]
struct LockSites {
    takes: Vec<Take>,
    events: Vec<LockEvent>,
    edges: Vec<Nesting>,
    open: Vec<OpenNesting>,
}

impl LockSites {
    fn visit_call(
        &mut self,
        analysis: &BodyAnalysis<'_>,
        state: &PcState,
        terminator: &Terminator,
        target: Target,
        summary: &Summary,
    ) {
        self.resolve_open(analysis, state, terminator, summary);
        if summary.takes.is_empty() {
            return;
        }
        let (args, dropped) = call_operands(&terminator.kind);
        let mut reported = false;
        for p in &state.paths {
            for take in &summary.takes {
                let Some(lock) = analysis
                    .places
                    .substitute(&p.facts, &take.lock, args, dropped)
                else {
                    continue;
                };
                // A lock function's own effect (from the spec or an
                // annotation, not a body) happens at this call.
                let own_effect = !matches!(
                    summary.source,
                    crate::summary::Source::Inferred | crate::summary::Source::Recursive
                );
                let (func, span) = if own_effect {
                    (analysis.func, terminator.span)
                } else {
                    (take.func, take.span)
                };
                let reacquire = take.reacquire || p.locks.released.contains(&lock);
                let mut via = vec![(analysis.func, terminator.span)];
                if !own_effect {
                    via.extend(take.via.iter().take(crate::summary::MAX_VIA - 1).copied());
                }
                let here = Take {
                    lock,
                    kind: take.kind,
                    trylock: take.trylock,
                    reacquire,
                    irqs_disabled: take.irqs_disabled || p.locks.irqs_disabled(),
                    func,
                    span,
                    via,
                };
                if !take.trylock {
                    for h in &p.locks.held {
                        if !domains::has_object(h.kind) {
                            continue;
                        }
                        let nesting = || Nesting {
                            held: h.clone(),
                            take: here.clone(),
                            site: terminator.span,
                            callee: target.callee,
                        };
                        let same_object = h.lock == here.lock;
                        if same_object || h.lock.class() == here.lock.class() {
                            let deadlocks = !same_object
                                || (!domains::recursive_ok(h.kind, here.kind) && !here.reacquire);
                            if deadlocks && !reported {
                                reported = true;
                                self.events.push(LockEvent {
                                    nesting: nesting(),
                                    same_object,
                                    proof: None,
                                });
                                // Two locations of one class, both reached
                                // from the arguments: a caller may know
                                // they are one object.
                                if !same_object
                                    && h.lock.arg().is_some()
                                    && here.lock.arg().is_some()
                                {
                                    self.open_nesting(OpenNesting {
                                        held: h.lock.clone(),
                                        take: here.lock.clone(),
                                        origin: analysis.func,
                                        nesting: nesting(),
                                        via: Vec::new(),
                                    });
                                }
                            }
                        } else if !self.edges.iter().any(|e| {
                            e.held.lock.class() == h.lock.class()
                                && e.take.lock.class() == here.lock.class()
                        }) {
                            self.edges.push(nesting());
                        }
                    }
                }
                if !self.takes.iter().any(|t| {
                    t.lock == here.lock
                        && t.kind == here.kind
                        && t.irqs_disabled == here.irqs_disabled
                }) {
                    if self.takes.len() < crate::summary::MAX_TAKES {
                        self.takes.push(here);
                    } else {
                        bounds::hit(bounds::Bound::Cases);
                    }
                }
            }
        }
    }
}

impl LockSites {
    fn open_nesting(&mut self, o: OpenNesting) {
        if self.open.contains(&o) {
            return;
        }
        if self.open.len() < MAX_OPEN_NESTINGS {
            self.open.push(o);
        } else {
            bounds::hit(bounds::Bound::Cases);
        }
    }

    /// The callee's open nestings at this call: where what this function
    /// passes makes the two locations one object, the callee's nesting is a
    /// double lock (an event with its proof); where they are still two
    /// locations reached from this function's arguments, a caller may
    /// prove it further up.
    fn resolve_open(
        &mut self,
        analysis: &BodyAnalysis<'_>,
        state: &PcState,
        terminator: &Terminator,
        summary: &Summary,
    ) {
        if summary.open_nestings.is_empty() {
            return;
        }
        let (args, dropped) = call_operands(&terminator.kind);
        for o in &summary.open_nestings {
            let mut via = vec![(analysis.func, terminator.span)];
            via.extend(o.via.iter().take(crate::summary::MAX_VIA - 1).copied());
            for p in &state.paths {
                let subst = |l| analysis.places.substitute(&p.facts, l, args, dropped);
                let (Some(held), Some(take)) = (subst(&o.held), subst(&o.take)) else {
                    continue;
                };
                if held == take {
                    let proven = self.events.iter().any(|e| {
                        e.proof.as_ref().is_some_and(|q| q.origin == o.origin)
                            && e.nesting.site == o.nesting.site
                    });
                    if !proven {
                        self.events.push(LockEvent {
                            nesting: o.nesting.clone(),
                            same_object: true,
                            proof: Some(Proof {
                                origin: o.origin,
                                via: via.clone(),
                                lock: held,
                            }),
                        });
                    }
                    break;
                } else if held.arg().is_some() && take.arg().is_some() {
                    self.open_nesting(OpenNesting {
                        held,
                        take,
                        origin: o.origin,
                        nesting: o.nesting.clone(),
                        via: via.clone(),
                    });
                }
            }
        }
    }
}

/// The cases of one run from the paths that reach its returns: per path,
/// its adjustment, what it returns and what it leaves behind `*_1`. Paths
/// that return the same way with different adjustments make the adjustment
/// impossible to infer (`Err`).
pub fn cases_at_return(
    returns: &[(Path, kmir::Span)],
    when: Option<ArgCond>,
    pointee_arg: bool,
    split_field: Option<u32>,
    split_aspect: Aspect,
    ret_field: Option<u32>,
    unwritten_args: &[kmir::LocalId],
) -> Result<Vec<Case>, ()> {
    let field = |k: PlaceKey, f: Option<u32>| match f {
        Some(f) => k.with(ProjKey::Field(f)),
        None => k,
    };
    if returns.is_empty() {
        // Never returns: nothing to adjust for the caller, and, when other
        // entries do return, nothing after the call on this one.
        return Ok(vec![Case {
            when,
            diverges: when.is_some(),
            ..Case::always(0)
        }]);
        // (A function that never returns leaves the caller's locks alone.)
    }
    let mut cases: Vec<Case> = Vec::new();
    for (p, _) in returns {
        let Adj::Known(adjust) = p.adj else {
            return Err(());
        };
        let f = &p.facts;
        let known = |key: &PlaceKey, aspect| match f.value_of(&f.resolve(key, aspect)) {
            Some(Known::Is(v)) => Some(v),
            _ => None,
        };
        let ret = known(&field(PlaceKey::local(0), ret_field), Aspect::Discr)
            .map(RetFact::Discr)
            .or_else(|| known(&PlaceKey::local(0), Aspect::Value).map(RetFact::Is));
        let behind_arg0 = field(
            PlaceKey {
                local: 1,
                proj: vec![memory::ProjKey::Deref],
            },
            split_field,
        );
        let post = if pointee_arg {
            known(&behind_arg0, split_aspect)
        } else {
            None
        };
        // What `*_1` was last assigned from, when that is another argument
        // that still holds what the caller passed.
        let post_arg = match (pointee_arg, post) {
            (true, None) => f
                .holds(&behind_arg0)
                .filter(|l| *l >= 2 && unwritten_args.contains(l)),
            _ => None,
        };
        let keep = |l: &memory::Location| !l.is_local();
        let case = Case {
            when,
            ret,
            post,
            post_arg,
            adjust,
            diverges: false,
            acquire: p
                .locks
                .net_held()
                .filter(|h| keep(&h.lock))
                .map(|h| Acquisition {
                    lock: h.lock.clone(),
                    kind: h.kind,
                    trylock: h.trylock,
                })
                .collect(),
            release: p
                .locks
                .net_released()
                .filter(|l| keep(l))
                .cloned()
                .collect(),
            ret_addrs: f
                .addrs_under(&PlaceKey::local(0))
                .into_iter()
                .filter(|(_, l)| keep(l))
                .collect(),
        };
        if !cases.contains(&case) {
            cases.push(case);
        }
    }
    // Two ways of returning that a caller cannot tell apart must agree:
    // it tells them apart by the value returned, or by the variant left
    // behind the first argument (`arm(&mut s, c)` storing a guard in
    // `s.slot` on one path only).
    let apart = |a: &Case, b: &Case| {
        matches!((a.ret, b.ret), (Some(x), Some(y)) if x != y)
            || matches!((a.post, b.post), (Some(x), Some(y)) if x != y)
    };
    for a in &cases {
        for b in &cases {
            if a.adjust != b.adjust && !apart(a, b) {
                return Err(());
            }
        }
    }
    cases.sort();
    Ok(cases)
}

/// The returns reached with each distinct adjustment, for the report.
pub fn failure(returns: &[(Path, kmir::Span)], changes: Vec<CountChange>) -> AdjustFailure {
    let mut seen: Vec<Adj> = Vec::new();
    let mut shown = Vec::new();
    for (p, span) in returns {
        if !seen.contains(&p.adj) {
            seen.push(p.adj);
            shown.push((p.adj, *span));
        }
    }
    AdjustFailure {
        returns: shown,
        changes,
    }
}

/// The place below what the first argument holds or points to that a
/// site's last-reference expectation is about (`Summary::last_place`):
/// `drop((*_1).f)` in a drop glue, `drop(((*_1) as V).0)` in one split on
/// the variant, followed by the place the callee's expectation is about;
/// a release of the whole first argument, the callee's place.
///
/// The place must hold, where it is dropped, what it held on entry: no
/// write at, above or below it (a `Drop` impl's, a store's) may come
/// before. A caller's facts are about the value on entry.
fn dropped_place(
    analysis: &BodyAnalysis<'_>,
    block: BlockId,
    terminator: &kmir::TerminatorKind,
    summary: &crate::summary::Summary,
) -> crate::summary::LastPlaces {
    use crate::summary::{LastPlace, LastPlaces, PlaceStep};
    use kmir::Projection;
    let (dump, body) = (analysis.dump, analysis.body);
    let fresh = |steps: &[PlaceStep]| unwritten_before(analysis, block, steps);
    let callee = || {
        if fresh(&[]) {
            LastPlaces::One(callee_last_place(summary))
        } else {
            LastPlaces::Any
        }
    };
    match terminator {
        kmir::TerminatorKind::Drop { place, .. } if place.local == 1 => {
            let steps: &[Projection] = match &*place.projection {
                [Projection::Deref, rest @ ..] => rest,
                [] => &[],
                _ => return LastPlaces::Any,
            };
            let mut out = Vec::new();
            let mut labels = Vec::new();
            let mut at = kmir::Place {
                local: place.local,
                projection: place.projection[..place.projection.len() - steps.len()].into(),
            };
            for p in steps {
                labels.push(match p {
                    Projection::Field { index, .. } => {
                        super::pointer_copies::field_label(dump, body, &at, *index)
                    }
                    _ => String::new(),
                });
                match p {
                    Projection::Field { index, .. } => out.push(PlaceStep::Field(*index)),
                    Projection::Downcast { variant } => {
                        // The discriminant of the variant, from the enum's
                        // definition.
                        let discr = dump
                            .place_ty(body, &at)
                            .and_then(|t| match dump.ty(t).map(|t| &t.kind) {
                                Some(kmir::TyKind::Adt { path, .. }) => dump.adt(path),
                                _ => None,
                            })
                            .and_then(|a| a.variants.get(*variant as usize))
                            .map(|v| v.discr);
                        let Some(discr) = discr else {
                            return LastPlaces::Any;
                        };
                        out.push(PlaceStep::Variant {
                            index: *variant,
                            discr,
                        });
                    }
                    _ => return LastPlaces::Any,
                }
                let mut proj = at.projection.to_vec();
                proj.push(p.clone());
                at.projection = proj.into();
            }
            if !fresh(&out) {
                return LastPlaces::Any;
            }
            let below = callee_last_place(summary);
            out.extend(below.steps);
            labels.extend(below.labels);
            LastPlaces::One(LastPlace {
                steps: out,
                variants: below.variants,
                labels,
            })
        }
        // A local holding a pointer stored below `*_1`, or built around one
        // (`Arc::drop`'s `Box`): the callee's place is below that value.
        kmir::TerminatorKind::Drop { place, .. } if place.projection.is_empty() => {
            match analysis.pointer_copies().get(&place.local) {
                Some(super::pointer_copies::Source::Ptr {
                    steps,
                    labels,
                    within,
                }) => through_value(
                    analysis,
                    block,
                    steps,
                    labels,
                    within.as_deref(),
                    callee_last_place(summary),
                ),
                _ => LastPlaces::Any,
            }
        }
        // What a pointer read out of `*_1` points to (`drop((*_6))` in a
        // `Box`'s glue).
        kmir::TerminatorKind::Drop { place, .. }
            if place.projection.len() == 1 && place.projection[0] == Projection::Deref =>
        {
            match analysis.pointer_copies().get(&place.local) {
                Some(super::pointer_copies::Source::Ptr {
                    steps,
                    labels,
                    within: Some(w),
                }) if w.is_empty() => through_pointee(analysis, block, steps, labels, summary),
                _ => LastPlaces::Any,
            }
        }
        kmir::TerminatorKind::Call { args, .. } => {
            // The callee's expectation is about what its first argument
            // holds or points to: all of it, or (its `last_place`) one
            // place there.
            let about_arg0 =
                summary.last_from.as_deref() == Some(&[0][..]) || summary.last_place.is_some();
            match (summary.last_from.as_deref(), args.first()) {
                (_, Some(kmir::Operand::Move(p)))
                    if about_arg0 && p.local == 1 && p.projection.is_empty() =>
                {
                    callee()
                }
                // The callee is given a pointer read out of `*_1`
                // (`drop_glue(&mut *ptr)` in `Box::drop`), and says its
                // expectation is about what that pointer points to.
                (_, Some(kmir::Operand::Move(p) | kmir::Operand::Copy(p)))
                    if about_arg0 && p.projection.is_empty() =>
                {
                    match analysis.pointer_copies().get(&p.local) {
                        // A copy of `_1` itself (`_2 = copy _1` in a glue).
                        Some(super::pointer_copies::Source::Arg) => callee(),
                        // A pointer: the callee's place is below what it
                        // points to.
                        Some(super::pointer_copies::Source::Ptr {
                            steps,
                            labels,
                            within: Some(w),
                        }) if w.is_empty()
                            && analysis.dump.place_ty(analysis.body, p).is_some_and(|t| {
                                matches!(
                                    analysis.dump.ty(t).map(|t| &t.kind),
                                    Some(kmir::TyKind::Ref { .. } | kmir::TyKind::RawPtr { .. })
                                )
                            }) =>
                        {
                            through_pointee(analysis, block, steps, labels, summary)
                        }
                        // A value holding the pointer, moved into the
                        // callee (`mem::drop(box)`): the callee's place is
                        // below that value.
                        Some(super::pointer_copies::Source::Ptr {
                            steps,
                            labels,
                            within,
                        }) if matches!(args.first(), Some(kmir::Operand::Move(_))) => {
                            through_value(
                                analysis,
                                block,
                                steps,
                                labels,
                                within.as_deref(),
                                callee_last_place(summary),
                            )
                        }
                        _ => LastPlaces::Any,
                    }
                }
                _ => LastPlaces::Any,
            }
        }
        _ => LastPlaces::Any,
    }
}

/// A callee's place below what the pointer stored at `steps` below `*_1`
/// points to (the callee is given that pointer).
fn through_pointee(
    analysis: &BodyAnalysis<'_>,
    block: BlockId,
    steps: &[crate::summary::PlaceStep],
    labels: &[String],
    summary: &crate::summary::Summary,
) -> crate::summary::LastPlaces {
    let mut below = callee_last_place(summary);
    below.steps.insert(0, crate::summary::PlaceStep::Deref);
    below.labels.insert(0, String::new());
    through_pointer(analysis, block, steps, labels, below, 0)
}

/// A callee's place `below` in a value that holds the pointer stored at
/// `steps` below `*_1`: at the fields `within` (or, `None`, as its only
/// pointer), then through it. The fields that lead to the pointer inside
/// the value, then the pointer, are that pointer.
fn through_value(
    analysis: &BodyAnalysis<'_>,
    block: BlockId,
    steps: &[crate::summary::PlaceStep],
    labels: &[String],
    within: Option<&[u32]>,
    below: crate::summary::LastPlace,
) -> crate::summary::LastPlaces {
    use crate::summary::PlaceStep;
    let Some(k) = below
        .steps
        .iter()
        .position(|s| !matches!(s, PlaceStep::Field(_)))
        .filter(|&k| below.steps[k] == PlaceStep::Deref)
    else {
        return crate::summary::LastPlaces::Any;
    };
    let prefix: Vec<u32> = below.steps[..k]
        .iter()
        .filter_map(|s| match s {
            PlaceStep::Field(f) => Some(*f),
            _ => None,
        })
        .collect();
    if within.is_some_and(|w| w != prefix.as_slice()) {
        return crate::summary::LastPlaces::Any;
    }
    through_pointer(analysis, block, steps, labels, below, k)
}

/// The place `steps` (a pointer below `*_1`, unwritten before the site)
/// followed by `below` from its step `skip` on (which starts with the
/// `Deref` through that pointer).
fn through_pointer(
    analysis: &BodyAnalysis<'_>,
    block: BlockId,
    steps: &[crate::summary::PlaceStep],
    labels: &[String],
    below: crate::summary::LastPlace,
    skip: usize,
) -> crate::summary::LastPlaces {
    use crate::summary::{LastPlace, LastPlaces};
    if !unwritten_before(analysis, block, steps) {
        return LastPlaces::Any;
    }
    let mut out = steps.to_vec();
    out.extend(below.steps.iter().skip(skip).copied());
    let mut names = labels.to_vec();
    names.resize(steps.len(), String::new());
    names.extend(below.labels.iter().skip(skip).cloned());
    names.resize(out.len(), String::new());
    LastPlaces::One(LastPlace {
        steps: out,
        variants: below.variants,
        labels: names,
    })
}

/// Whether nothing at, above or below the place `steps` below what the first
/// argument holds or points to may be written before the terminator of
/// `block` runs (by a statement of its own, or on a way to it).
fn unwritten_before(
    analysis: &BodyAnalysis<'_>,
    block: BlockId,
    steps: &[crate::summary::PlaceStep],
) -> bool {
    use crate::summary::{FieldPath, PlaceStep};
    let writes = &analysis.origins.writes;
    if !writes.settled() {
        return false;
    }
    // Below a pointer the place is in another object: only the way to the
    // pointer is the argument's own memory (`PlaceStep::Deref`).
    let own = steps
        .iter()
        .position(|s| matches!(s, PlaceStep::Deref))
        .map_or(steps, |i| &steps[..i]);
    let path = own.iter().fold(FieldPath::AT, |p, s| match *s {
        PlaceStep::Field(f) => p.field(f),
        PlaceStep::Variant { index, .. } => p.variant(index),
        PlaceStep::Deref => p,
    });
    let root = super::writes::Root::Arg(0);
    let body = analysis.body;
    let Some(blk) = body.blocks.get(block as usize) else {
        return false;
    };
    // The block's own statements: any store into the argument or through a
    // pointer may be one.
    let stores = blk.statements.iter().any(|st| match &st.kind {
        kmir::StatementKind::Assign { place, .. }
        | kmir::StatementKind::SetDiscriminant { place, .. } => {
            place.local == 1 || place.projection.contains(&kmir::Projection::Deref)
        }
        kmir::StatementKind::Intrinsic { .. } => true,
        _ => false,
    });
    if stores {
        return false;
    }
    // A by-value argument written in place (`_1.f = …`, a mutable borrow of
    // it) anywhere: the write scan records writes through pointers only.
    let in_place =
        |p: &kmir::Place| p.local == 1 && p.projection.first() != Some(&kmir::Projection::Deref);
    let written_in_place = body.blocks.iter().any(|b| {
        b.statements.iter().any(|st| match &st.kind {
            kmir::StatementKind::Assign { place, rvalue } => {
                in_place(place)
                    || matches!(&**rvalue,
                        kmir::Rvalue::Ref { mutable: true, place: q }
                        | kmir::Rvalue::AddressOf { place: q, .. } if in_place(q))
            }
            kmir::StatementKind::SetDiscriminant { place, .. } => in_place(place),
            _ => false,
        }) || matches!(&b.terminator.kind,
            kmir::TerminatorKind::Call { destination, .. } if in_place(destination))
    });
    if written_in_place {
        return false;
    }
    body.blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.terminator.kind.successors().contains(&block))
        .all(|(p, _)| !writes.may_change_before(root, &path, p as BlockId))
}

/// The place below what a callee's first argument holds or points to that
/// its last-reference expectation is about: its own `last_place`, or, for
/// a function analysed per variant of that argument (`Option`'s glue), the
/// variants whose run has the expectation.
pub(super) fn callee_last_place(summary: &crate::summary::Summary) -> crate::summary::LastPlace {
    use crate::summary::{ArgCond, LastPlace, PlaceStep};
    if let Some(p) = &summary.last_place {
        return p.clone();
    }
    let steps: Vec<PlaceStep> = summary
        .split_field
        .map(PlaceStep::Field)
        .into_iter()
        .collect();
    if summary.expect_last_when.is_empty() {
        return LastPlace {
            steps: Vec::new(),
            variants: None,
            labels: Vec::new(),
        };
    }
    let mut variants: Vec<u128> = summary
        .expect_last_when
        .iter()
        .filter(|(_, e)| *e != annotations::ExpectRange::TOP)
        .map(|(c, _)| match c {
            ArgCond::Pointee(d) | ArgCond::Value(d) => *d,
        })
        .collect();
    variants.sort_unstable();
    variants.dedup();
    LastPlace {
        labels: vec![String::new(); steps.len()],
        steps,
        variants: Some(variants),
    }
}

/// The field of the value the first argument holds or points to that a
/// site's last-reference expectation is about (`Summary::last_field`):
/// `drop((*_1).f)` in a drop glue, or a release of the whole first argument
/// (`drop(_1)`, `mem::drop(_1)`) whose own glue or callee is about one field.
///
/// Like [`dropped_place`], the field must hold there what it held on entry
/// (no `Drop` impl or store changed it first).
fn dropped_field(
    analysis: &BodyAnalysis<'_>,
    block: BlockId,
    terminator: &kmir::TerminatorKind,
    summary: &crate::summary::Summary,
) -> crate::summary::LastField {
    use crate::summary::{LastField, PlaceStep};
    use kmir::Projection;
    let callee_field = || {
        if unwritten_before(analysis, block, &[]) {
            summary.last_field.map_or(LastField::Any, LastField::Field)
        } else {
            LastField::Any
        }
    };
    match terminator {
        kmir::TerminatorKind::Drop { place, .. } if place.local == 1 => match &*place.projection {
            [Projection::Deref, Projection::Field { index, .. }, ..]
                if unwritten_before(analysis, block, &[PlaceStep::Field(*index)]) =>
            {
                LastField::Field(*index)
            }
            [] | [Projection::Deref] => callee_field(),
            _ => LastField::Any,
        },
        kmir::TerminatorKind::Call { args, .. } => {
            match (summary.last_from.as_deref(), args.first()) {
                (Some([0]), Some(kmir::Operand::Move(p)))
                    if p.local == 1 && p.projection.is_empty() =>
                {
                    callee_field()
                }
                _ => LastField::Any,
            }
        }
        _ => LastField::Any,
    }
}
