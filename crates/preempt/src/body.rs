//! The preemption-count domain plugged into the dataflow engine, and what
//! one body's fixed point says: its summary and the violations inside it.

use std::collections::HashMap;

use annotations::ExpectRange;
use dataflow::Analysis;
use kmir::{
    AggregateKind, BlockId, Body, CrateDump, LocalId, Place, Rvalue, Statement, StatementKind, Terminator,
    TerminatorKind,
};
use program::{EdgeKind, FnId, Program};

use crate::facts::{Aspect, Facts, Known, PlaceKey, Resolved, Val};
use crate::state::{Adj, Path, PcState};
use crate::summary::{Case, CaseCond, Reason, Source, Summary};

/// A pseudo-local that keeps the entry value of `*_1` (the value a drop
/// glue or `&mut self` method was called on) after `*_1` changes, so that a
/// summary can depend on the variant it had on entry.
pub const ENTRY_ARG0: LocalId = u32::MAX;

/// A call or drop target at one site.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub callee: FnId,
    pub kind: EdgeKind,
}

pub struct BodyAnalysis<'a> {
    pub dump: &'a CrateDump,
    pub body: &'a Body,
    /// Targets by block, from the call graph.
    pub sites: HashMap<BlockId, Vec<Target>>,
    /// Locals whose address escapes (`&mut`, raw pointers): calls may change them.
    pub escaped: Vec<LocalId>,
    pub summary_of: &'a (dyn Fn(FnId) -> Summary + Sync),
}

impl<'a> BodyAnalysis<'a> {
    pub fn new(
        program: &'a Program,
        caller: FnId,
        dump: &'a CrateDump,
        body: &'a Body,
        summary_of: &'a (dyn Fn(FnId) -> Summary + Sync),
    ) -> Self {
        let mut sites: HashMap<BlockId, Vec<Target>> = HashMap::new();
        for (callee, edge) in program.callees(caller) {
            sites.entry(edge.block).or_default().push(Target { callee, kind: edge.kind });
        }
        BodyAnalysis { dump, body, sites, escaped: escaped_locals(body), summary_of }
    }

    fn adt_discr(&self, rvalue: &Rvalue) -> Option<u128> {
        let Rvalue::Aggregate { kind: AggregateKind::Adt { ty, variant, .. }, .. } = rvalue else { return None };
        let kmir::TyKind::Adt { path, .. } = &self.dump.ty(*ty)?.kind else { return None };
        let adt = self.dump.adts.iter().find(|a| &a.path == path)?;
        if adt.kind != kmir::AdtKind::Enum {
            return None;
        }
        adt.variants.get(*variant as usize).map(|v| v.discr)
    }

    fn apply_facts(&self, facts: &mut Facts, statement: &Statement) {
        match &statement.kind {
            StatementKind::Assign { place, rvalue } => {
                if let Rvalue::Discriminant(p) = rvalue
                    && let (Some(key), Some(discrs)) = (PlaceKey::of(p), self.place_ty(p).and_then(|t| self.enum_discrs(t)))
                {
                    facts.set_domain(&key, discrs);
                }
                facts.assign(place, rvalue, |r| self.adt_discr(r), &self.escaped);
            }
            StatementKind::SetDiscriminant { place, variant } => {
                let discr = self.place_variant_discr(place, *variant);
                facts.set_discriminant(place, discr, &self.escaped);
            }
            StatementKind::StorageLive(l) | StatementKind::StorageDead(l) => {
                facts.write_unknown(&Place { local: *l, projection: vec![] }, &self.escaped);
            }
            StatementKind::Intrinsic { name, operands } => {
                // `copy_nonoverlapping` writes through its destination pointer.
                if name == "copy_nonoverlapping" && operands.len() == 3 {
                    facts.forget_memory(&self.escaped);
                }
            }
        }
    }

    /// The discriminant values of an enum type.
    fn enum_discrs(&self, ty: kmir::TyId) -> Option<Vec<u128>> {
        let kmir::TyKind::Adt { path, .. } = &self.dump.ty(ty)?.kind else { return None };
        let adt = self.dump.adts.iter().find(|a| &a.path == path)?;
        (adt.kind == kmir::AdtKind::Enum).then(|| adt.variants.iter().map(|v| v.discr).collect())
    }

    fn place_ty(&self, place: &Place) -> Option<kmir::TyId> {
        let mut ty = self.body.local(place.local)?.ty;
        for p in &place.projection {
            match p {
                kmir::Projection::Field { ty: t, .. } | kmir::Projection::OpaqueCast(t) => ty = *t,
                kmir::Projection::Deref => match &self.dump.ty(ty)?.kind {
                    kmir::TyKind::Ref { pointee, .. } | kmir::TyKind::RawPtr { pointee, .. } => ty = *pointee,
                    kmir::TyKind::Adt { args, .. } => ty = *args.first()?,
                    _ => return None,
                },
                kmir::Projection::Downcast { .. } => {}
                _ => return None,
            }
        }
        Some(ty)
    }

    fn place_variant_discr(&self, place: &Place, variant: u32) -> Option<u128> {
        let mut ty = self.body.local(place.local)?.ty;
        for p in &place.projection {
            match p {
                kmir::Projection::Field { ty: t, .. } | kmir::Projection::OpaqueCast(t) => ty = *t,
                kmir::Projection::Deref => match &self.dump.ty(ty)?.kind {
                    kmir::TyKind::Ref { pointee, .. } | kmir::TyKind::RawPtr { pointee, .. } => ty = *pointee,
                    kmir::TyKind::Adt { args, .. } => ty = *args.first()?,
                    _ => return None,
                },
                _ => return None,
            }
        }
        let kmir::TyKind::Adt { path, .. } = &self.dump.ty(ty)?.kind else { return None };
        let adt = self.dump.adts.iter().find(|a| &a.path == path)?;
        adt.variants.get(variant as usize).map(|v| v.discr)
    }

    /// The discriminant of the value a callee's first argument points to.
    fn arg0_pointee(&self, facts: &Facts, terminator: &TerminatorKind) -> Option<Resolved> {
        match terminator {
            TerminatorKind::Drop { place, .. } => {
                PlaceKey::of(place).map(|k| facts.resolve(&k, Aspect::Discr))
            }
            TerminatorKind::Call { args, .. } => {
                let target = facts.pointee(args.first()?)?;
                Some(facts.resolve(&target, Aspect::Discr))
            }
            _ => None,
        }
    }

    /// The paths after a call or drop of `targets` from `path`.
    fn call_effect(&self, path: &Path, terminator: &TerminatorKind, targets: &[Target], out: &mut PcState) {
        let arg0 = self.arg0_pointee(&path.facts, terminator);
        for t in targets {
            let summary = (self.summary_of)(t.callee);
            for case in &summary.cases {
                let mut facts = path.facts.clone();
                let feasible = match (case.cond, &arg0) {
                    (CaseCond::ArgDiscr(d), Some(r)) => facts.assume(r, Some(d), &[]),
                    _ => true,
                };
                if !feasible {
                    continue;
                }
                // The callee may write anything reachable through pointers.
                facts.forget_memory(&self.escaped);
                match terminator {
                    TerminatorKind::Call { destination, .. } => {
                        facts.write_unknown(destination, &self.escaped);
                        if let Some(key) = PlaceKey::of(destination) {
                            match case.cond {
                                CaseCond::ReturnDiscr(d) => facts.set_known(key, Aspect::Discr, d),
                                CaseCond::ReturnIs(v) => facts.set_known(key, Aspect::Value, v),
                                CaseCond::ReturnIsNot(v) => {
                                    facts.assume(&Resolved::Key(key, Aspect::Value), None, &[v]);
                                }
                                CaseCond::Always | CaseCond::ArgDiscr(_) => {}
                            }
                        }
                    }
                    TerminatorKind::Drop { place, .. } => facts.write_unknown(place, &self.escaped),
                    _ => {}
                }
                out.add(Path { adj: path.adj.add(case.adjust), facts });
            }
        }
    }

    /// The expectation a callee has at this site, given what the path knows
    /// about the arguments (a GFP flag known not to allow sleeping).
    pub fn effective_expect(&self, summary: &Summary, terminator: &TerminatorKind, facts: &Facts) -> ExpectRange {
        let TerminatorKind::Call { args, .. } = terminator else { return summary.expect };
        let arg = |i: u32| args.get(i as usize).and_then(|a| facts.resolve_operand(a)).and_then(|r| facts.value_of(&r));
        if let Some(cond) = &summary.sleeps_if_flag {
            return match arg(cond.arg) {
                Some(Known::Is(v)) if v & u128::from(cond.mask) == 0 => summary.expect,
                // Known to allow sleeping, or unknown: assume it sleeps.
                _ => ExpectRange::exactly(0),
            };
        }
        if let Some(i) = summary.sleeps_if_zero {
            return match arg(i) {
                // Reallocating to size 0 frees, which may sleep.
                Some(Known::Is(0)) => ExpectRange::exactly(0),
                _ => summary.expect,
            };
        }
        summary.expect
    }
}

impl Analysis for BodyAnalysis<'_> {
    type Domain = PcState;

    fn bottom(&self) -> PcState {
        PcState::default()
    }

    fn entry_state(&self) -> PcState {
        let mut facts = Facts::default();
        if self.body.arg_count >= 1 {
            facts.alias_entry(ENTRY_ARG0, Val::Copy(PlaceKey { local: 1, proj: vec![crate::facts::ProjKey::Deref] }));
        }
        PcState::single(Adj::Known(0), facts)
    }

    fn apply_statement(&self, state: &mut PcState, statement: &Statement, _block: BlockId, _index: usize) {
        for p in &mut state.paths {
            self.apply_facts(&mut p.facts, statement);
        }
        // Facts may have become equal: keep one path per adjustment.
        let paths = std::mem::take(&mut state.paths);
        for p in paths {
            state.add(p);
        }
    }

    fn apply_terminator(
        &self,
        state: PcState,
        terminator: &Terminator,
        block: BlockId,
        propagate: &mut dyn FnMut(BlockId, PcState),
    ) {
        match &terminator.kind {
            TerminatorKind::Goto { target } => propagate(*target, state),
            TerminatorKind::SwitchInt { discr, targets, otherwise } => {
                let values: Vec<u128> = targets.iter().map(|t| t.value).collect();
                for t in targets {
                    let mut out = PcState::default();
                    for p in &state.paths {
                        let mut facts = p.facts.clone();
                        let feasible = match facts.resolve_operand(discr) {
                            Some(r) => facts.assume(&r, Some(t.value), &[]),
                            None => true,
                        };
                        if feasible {
                            out.add(Path { adj: p.adj, facts });
                        }
                    }
                    if !out.is_unreachable() {
                        propagate(t.target, out);
                    }
                }
                let mut out = PcState::default();
                for p in &state.paths {
                    let mut facts = p.facts.clone();
                    let feasible = match facts.resolve_operand(discr) {
                        Some(r) => facts.assume(&r, None, &values),
                        None => true,
                    };
                    if feasible {
                        out.add(Path { adj: p.adj, facts });
                    }
                }
                if !out.is_unreachable() {
                    propagate(*otherwise, out);
                }
            }
            TerminatorKind::Return
            | TerminatorKind::Resume
            | TerminatorKind::Abort
            | TerminatorKind::Unreachable => {}
            TerminatorKind::Drop { place, target, .. } => {
                let targets = self.sites.get(&block).map(Vec::as_slice).unwrap_or(&[]);
                let mut out = PcState::default();
                for p in &state.paths {
                    if targets.is_empty() {
                        let mut facts = p.facts.clone();
                        facts.write_unknown(place, &self.escaped);
                        out.add(Path { adj: p.adj, facts });
                    } else {
                        self.call_effect(p, &terminator.kind, targets, &mut out);
                    }
                }
                if !out.is_unreachable() {
                    propagate(*target, out);
                }
            }
            TerminatorKind::Call { destination, target, .. } => {
                let Some(target) = target else { return };
                let targets = self.sites.get(&block).map(Vec::as_slice).unwrap_or(&[]);
                let mut out = PcState::default();
                for p in &state.paths {
                    if targets.is_empty() {
                        // Intrinsics and unresolved callees: no count effect.
                        let mut facts = p.facts.clone();
                        facts.forget_memory(&self.escaped);
                        facts.write_unknown(destination, &self.escaped);
                        out.add(Path { adj: p.adj, facts });
                    } else {
                        self.call_effect(p, &terminator.kind, targets, &mut out);
                    }
                }
                if !out.is_unreachable() {
                    propagate(*target, out);
                }
            }
            TerminatorKind::Assert { cond, expected, target, .. } => {
                // Past the assert the condition held.
                let mut out = PcState::default();
                for p in &state.paths {
                    let mut facts = p.facts.clone();
                    let feasible = match facts.resolve_operand(cond) {
                        Some(r) => facts.assume(&r, Some(u128::from(*expected)), &[]),
                        None => true,
                    };
                    if feasible {
                        out.add(Path { adj: p.adj, facts });
                    }
                }
                if !out.is_unreachable() {
                    propagate(*target, out);
                }
            }
            TerminatorKind::InlineAsm { target, .. } => {
                if let Some(t) = target {
                    let mut state = state;
                    for p in &mut state.paths {
                        p.facts.forget_memory(&self.escaped);
                    }
                    propagate(*t, state);
                }
            }
        }
    }
}

/// Locals whose address is taken mutably or as a raw pointer anywhere in
/// the body: through that pointer any call may change them.
fn escaped_locals(body: &Body) -> Vec<LocalId> {
    let mut out: Vec<LocalId> = Vec::new();
    for block in &body.blocks {
        for s in &block.statements {
            if let StatementKind::Assign { rvalue, .. } = &s.kind {
                match rvalue {
                    Rvalue::Ref { mutable: true, place } | Rvalue::AddressOf { place, .. } => out.push(place.local),
                    _ => {}
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// A call or drop whose callee's expectation cannot be met.
#[derive(Clone, Debug)]
pub struct Violation {
    pub block: BlockId,
    pub span: kmir::Span,
    pub target: Target,
    pub callee_expect: ExpectRange,
    /// The counts possible at the site, given what was required so far.
    pub possible: ExpectRange,
    /// The count is unknown here (the adjustment could not be tracked).
    pub unknown_adjustment: bool,
}

/// Why the adjustment could not be inferred.
#[derive(Clone, Debug)]
pub struct AdjustFailure {
    /// The returns reached with each adjustment.
    pub returns: Vec<(Adj, kmir::Span)>,
    /// Sites where the count changes (callee, adjustment text).
    pub changes: Vec<(kmir::Span, FnId, String)>,
}

pub struct BodyOutcome {
    pub summary: Summary,
    pub violations: Vec<Violation>,
    pub adjust_failure: Option<AdjustFailure>,
}

/// Runs the analysis of one body to its fixed point and reads the summary
/// and the violations off it.
pub fn analyze(analysis: &BodyAnalysis<'_>) -> BodyOutcome {
    let results = dataflow::iterate(analysis, analysis.body);
    let mut expect = ExpectRange::TOP;
    let mut reason: Option<Reason> = None;
    let mut violations = Vec::new();
    let mut returns: Vec<(Path, kmir::Span)> = Vec::new();
    let mut changes = Vec::new();
    dataflow::visit(analysis, analysis.body, &results, |block, state, terminator| {
        match &terminator.kind {
            TerminatorKind::Return => {
                for p in &state.paths {
                    returns.push((p.clone(), terminator.span));
                }
            }
            TerminatorKind::Call { .. } | TerminatorKind::Drop { .. } => {
                let targets = analysis.sites.get(&block).map(Vec::as_slice).unwrap_or(&[]);
                for t in targets {
                    let summary = (analysis.summary_of)(t.callee);
                    if summary.uniform_adjust() != Some(0) {
                        changes.push((terminator.span, t.callee, summary.adjust_text()));
                    }
                    if summary.poisoned {
                        continue;
                    }
                    let mut site_required = ExpectRange::TOP;
                    let mut callee_expect = summary.expect;
                    let mut worst: Option<(Adj, ExpectRange)> = None;
                    for p in &state.paths {
                        let e = analysis.effective_expect(&summary, &terminator.kind, &p.facts);
                        callee_expect = e;
                        if e == ExpectRange::TOP {
                            continue;
                        }
                        let required = match p.adj {
                            Adj::Known(a) => e.shift_back(a),
                            Adj::Top => ExpectRange::EMPTY,
                        };
                        let narrowed = site_required.intersect(&required);
                        if expect.intersect(&narrowed).is_empty() && worst.is_none() {
                            worst = Some((p.adj, e));
                        }
                        site_required = narrowed;
                    }
                    if let Some((adj, e)) = worst {
                        let possible = match adj {
                            Adj::Known(a) => expect.shift(a),
                            Adj::Top => ExpectRange::TOP,
                        };
                        violations.push(Violation {
                            block,
                            span: terminator.span,
                            target: *t,
                            callee_expect: e,
                            possible,
                            unknown_adjustment: adj == Adj::Top,
                        });
                        continue;
                    }
                    let next = expect.intersect(&site_required);
                    if next != expect {
                        let adj = state
                            .paths
                            .iter()
                            .find_map(|p| match p.adj {
                                Adj::Known(a) => Some(a),
                                Adj::Top => None,
                            })
                            .unwrap_or(0);
                        reason = Some(Reason {
                            block,
                            span: terminator.span,
                            callee: t.callee,
                            kind: t.kind,
                            adj,
                            callee_expect,
                        });
                        expect = next;
                    }
                }
            }
            _ => {}
        }
    });
    let (cases, adjust_failure) = cases_at_return(&returns, changes);
    let poisoned = adjust_failure.is_some();
    BodyOutcome {
        summary: Summary {
            cases,
            expect,
            sleeps_if_flag: None,
            sleeps_if_zero: None,
            source: Source::Inferred,
            reason,
            poisoned,
        },
        violations,
        adjust_failure,
    }
}

/// The summary's cases from the paths that reach a return: one adjustment,
/// or one per returned variant, or one per variant of `*_1` on entry.
fn cases_at_return(
    returns: &[(Path, kmir::Span)],
    changes: Vec<(kmir::Span, FnId, String)>,
) -> (Vec<Case>, Option<AdjustFailure>) {
    if returns.is_empty() {
        // Never returns: nothing to adjust for the caller.
        return (vec![Case { cond: CaseCond::Always, adjust: 0 }], None);
    }
    let mut adjs: Vec<Adj> = returns.iter().map(|(p, _)| p.adj).collect();
    adjs.sort();
    adjs.dedup();
    if let [Adj::Known(a)] = adjs.as_slice() {
        return (vec![Case { cond: CaseCond::Always, adjust: *a }], None);
    }
    if !adjs.contains(&Adj::Top) {
        let by = |key: &PlaceKey, cond: fn(u128) -> CaseCond| -> Option<Vec<Case>> {
            let mut cases: Vec<Case> = Vec::new();
            for (p, _) in returns {
                let Adj::Known(a) = p.adj else { return None };
                let resolved = p.facts.resolve(key, Aspect::Discr);
                let Some(Known::Is(d)) = p.facts.value_of(&resolved) else { return None };
                match cases.iter().find(|c| c.cond == cond(d)) {
                    Some(c) if c.adjust != a => return None,
                    Some(_) => {}
                    None => cases.push(Case { cond: cond(d), adjust: a }),
                }
            }
            cases.sort();
            Some(cases)
        };
        if let Some(cases) = by(&PlaceKey::local(0), CaseCond::ReturnDiscr) {
            return (cases, None);
        }
        if let Some(cases) = by(&PlaceKey::local(ENTRY_ARG0), CaseCond::ArgDiscr) {
            return (cases, None);
        }
        // A returned integer or bool that says which way it went.
        let mut cases: Vec<Case> = Vec::new();
        let mut ok = true;
        for (p, _) in returns {
            let (Adj::Known(a), Some(Known::Is(v))) =
                (p.adj, p.facts.value_of(&p.facts.resolve(&PlaceKey::local(0), Aspect::Value)))
            else {
                ok = false;
                break;
            };
            match cases.iter().find(|c| c.cond == CaseCond::ReturnIs(v)) {
                Some(c) if c.adjust != a => ok = false,
                Some(_) => {}
                None => cases.push(Case { cond: CaseCond::ReturnIs(v), adjust: a }),
            }
        }
        if ok {
            cases.sort();
            return (cases, None);
        }
    }
    let mut seen: Vec<Adj> = Vec::new();
    let mut shown = Vec::new();
    for (p, span) in returns {
        if !seen.contains(&p.adj) {
            seen.push(p.adj);
            shown.push((p.adj, *span));
        }
    }
    let first = match shown.iter().find_map(|(a, _)| match a {
        Adj::Known(a) => Some(*a),
        Adj::Top => None,
    }) {
        Some(a) => a,
        None => 0,
    };
    (vec![Case { cond: CaseCond::Always, adjust: first }], Some(AdjustFailure { returns: shown, changes }))
}
