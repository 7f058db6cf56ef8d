//! The preemption-count domain plugged into the dataflow engine, and what
//! one body's fixed point says: its summary and the violations inside it.

use std::borrow::Cow;
use std::collections::HashMap;

use annotations::ExpectRange;
use dataflow::Analysis;
use kmir::visit::PlaceContext;
use kmir::{
    AggregateKind, BlockId, Body, Callee, CrateDump, LocalId, Place, Rvalue, Statement,
    StatementKind, Terminator, TerminatorKind,
};
use program::{EdgeKind, FnId, Program};

use crate::context::Context;
use crate::summary::{ArgCond, Case, Reason, RetFact, Summaries, Summary, Take};
use domains::{Acquired, Held};
use domains::{Adj, Path, PcState};
use memory::Places;
use memory::{Aspect, Facts, Known, PlaceKey, ProjKey, Resolved, Val};

/// A pseudo-local that keeps the entry value of `*_1` (the value a drop
/// glue or `&mut self` method was called on) after `*_1` changes, so that a
/// summary can depend on the variant it had on entry.
pub use memory::ENTRY_ARG0;

/// A call or drop target at one site.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub callee: FnId,
    pub kind: EdgeKind,
}

pub struct BodyAnalysis<'a> {
    pub program: &'a Program,
    pub func: FnId,
    pub places: Places<'a>,
    pub dump: &'a CrateDump,
    pub body: &'a Body,
    /// Targets by block, from the call graph.
    pub sites: HashMap<BlockId, Vec<Target>>,
    /// Locals whose address escapes (`&mut`, raw pointers): calls may change them.
    pub escaped: Vec<LocalId>,
    pub summary_of: &'a dyn Summaries,
    /// The variant the first argument has on entry, for one run of a
    /// function split by it.
    pub entry: Option<ArgCond>,
    /// Print the fixed point on stderr (the CLI's `--trace`).
    pub trace: bool,
    /// The entry condition is about this field of the first argument (or
    /// of its pointee).
    pub split_field: Option<u32>,
    /// The call-site context of a specialised run.
    pub context: Option<Context>,
    /// Whether call sites passing constants get their callees' summaries
    /// specialised (through [`Summaries::specialized`]).
    pub specialize: bool,
    /// Locals holding the result of a last-reference test
    /// (`refcount_dec_and_test`): on a path where one is known non-zero,
    /// this function is tearing an object down.
    pub last_reference_tests: Vec<LocalId>,
}

impl<'a> BodyAnalysis<'a> {
    pub fn new(
        program: &'a Program,
        caller: FnId,
        dump: &'a CrateDump,
        body: &'a Body,
        summary_of: &'a dyn Summaries,
    ) -> Self {
        let mut sites: HashMap<BlockId, Vec<Target>> = HashMap::new();
        for (callee, edge) in program.callees(caller) {
            sites.entry(edge.block).or_default().push(Target {
                callee,
                kind: edge.kind,
            });
        }
        let last_reference_tests = last_reference_tests(body, &sites, summary_of);
        BodyAnalysis {
            program,
            func: caller,
            places: Places::new(dump, body, &program.function(caller).name),
            dump,
            body,
            sites,
            escaped: escaped_locals(dump, body),
            summary_of,
            entry: None,
            trace: false,
            split_field: None,
            context: None,
            specialize: false,
            last_reference_tests,
        }
    }

    /// On this path the function has just dropped a last reference: a
    /// last-reference test it called is known to have returned non-zero.
    pub fn tearing_down(&self, facts: &Facts) -> bool {
        self.last_reference_tests.iter().any(|&l| {
            let r = facts.resolve(&PlaceKey::local(l), Aspect::Value);
            match facts.value_of(&r) {
                Some(Known::Is(v)) => v != 0,
                Some(Known::IsNot(vs)) => vs.contains(&0),
                None => false,
            }
        })
    }

    /// A specialised run: what the call site passes is known on entry, and
    /// calls through fn pointers taken from arguments go where the site's
    /// pointers go.
    pub fn in_context(&mut self, ctx: Context) {
        for (block, b) in self.body.blocks.iter().enumerate() {
            let TerminatorKind::Call {
                callee: Callee::Indirect { operand, .. },
                ..
            } = &b.terminator.kind
            else {
                continue;
            };
            let Some(arg) = crate::context::operand_arg_root(self.body, operand) else {
                continue;
            };
            if let Some((_, ids)) = ctx.fn_ptrs.iter().find(|(a, _)| *a == arg) {
                if self.trace {
                    let names: Vec<&str> = ids
                        .iter()
                        .map(|&i| self.program.function(i).symbol.as_str())
                        .collect();
                    eprintln!(
                        "[kanalyze context] bb{block} of {} calls {names:?}",
                        self.program.function(self.func).name
                    );
                }
                self.sites.insert(
                    block as BlockId,
                    ids.iter()
                        .map(|&callee| Target {
                            callee,
                            kind: EdgeKind::Indirect,
                        })
                        .collect(),
                );
            }
        }
        self.context = Some(ctx);
    }

    /// The summary to check a call against: specialised to what this
    /// call passes when the callee depends on its arguments.
    pub fn site_summary(
        &self,
        t: Target,
        terminator: &TerminatorKind,
        facts: &Facts,
    ) -> Cow<'a, Summary> {
        let summary = self.summary_of.get(t.callee);
        if !summary.context_sensitive {
            return Cow::Borrowed(summary);
        }
        let (true, TerminatorKind::Call { args, .. }) = (self.specialize, terminator) else {
            return Cow::Borrowed(summary);
        };
        let depth = self.context.as_ref().map_or(0, |c| c.depth) + 1;
        if depth > crate::context::MAX_DEPTH {
            return Cow::Borrowed(summary);
        }
        let ctx = Context::at_call(self.program, self.dump, self.body, facts, args, depth);
        if self.trace {
            eprintln!(
                "[kanalyze context] {} -> {}: {ctx:?}",
                self.program.function(self.func).name,
                self.program.function(t.callee).name
            );
        }
        match ctx.and_then(|ctx| self.summary_of.specialized(t.callee, &ctx)) {
            Some(s) => {
                if self.trace {
                    eprintln!(
                        "[kanalyze context]   specialised expect {} (general {})",
                        s.expect, summary.expect
                    );
                }
                Cow::Owned(s)
            }
            None => Cow::Borrowed(summary),
        }
    }

    /// The discriminant an aggregate or enum constant gives its destination.
    fn adt_discr(&self, rvalue: &Rvalue) -> Option<u128> {
        let (ty, variant) = match rvalue {
            Rvalue::Aggregate {
                kind: AggregateKind::Adt { ty, variant, .. },
                ..
            } => (*ty, *variant),
            Rvalue::Use(kmir::Operand::Constant(c)) => match &c.value {
                kmir::ConstValue::Memory(m) => (c.ty, m.variant?),
                _ => return None,
            },
            _ => return None,
        };
        self.dump.enum_of(ty)?.discriminant(variant)
    }

    fn apply_facts(&self, facts: &mut Facts, statement: &Statement) {
        match &statement.kind {
            StatementKind::Assign { place, rvalue } => {
                // Pointers in the new value, read before the write.
                let addrs = self.rvalue_addrs(facts, rvalue);
                if let Rvalue::Discriminant(p) = rvalue
                    && let (Some(key), Some(discrs)) = (
                        PlaceKey::of(p),
                        self.place_ty(p).and_then(|t| self.enum_discrs(t)),
                    )
                {
                    facts.set_domain(&key, discrs);
                }
                let carried = self.aggregate_known(facts, rvalue);
                facts.assign(place, rvalue, |r| self.adt_discr(r), &self.escaped);
                if !carried.is_empty() {
                    facts.set_known_under(place, carried);
                }
                if !addrs.is_empty() {
                    facts.set_addrs(place, addrs);
                }
            }
            StatementKind::SetDiscriminant { place, variant } => {
                let discr = self.place_variant_discr(place, *variant);
                facts.set_discriminant(place, discr, &self.escaped);
            }
            StatementKind::StorageLive(l) | StatementKind::StorageDead(l) => {
                facts.write_unknown(
                    &Place {
                        local: *l,
                        projection: vec![],
                    },
                    &self.escaped,
                );
            }
            StatementKind::Intrinsic { name, operands } => {
                // `copy_nonoverlapping` writes through its destination pointer.
                if name == "copy_nonoverlapping" && operands.len() == 3 {
                    facts.forget_memory(&self.escaped);
                }
            }
        }
    }

    /// The pointers an rvalue's value holds: a reference's target, a cast
    /// pointer's, and those inside the operands of an aggregate.
    fn rvalue_addrs(
        &self,
        facts: &Facts,
        rvalue: &Rvalue,
    ) -> Vec<(Vec<ProjKey>, memory::Location)> {
        match rvalue {
            Rvalue::Ref { place, .. } | Rvalue::AddressOf { place, .. } => self
                .places
                .location(facts, place)
                .map(|l| vec![(Vec::new(), l)])
                .unwrap_or_default(),
            Rvalue::Use(op) => self.places.operand_addrs(facts, op),
            Rvalue::Cast { operand, .. } => self
                .places
                .operand_addrs(facts, operand)
                .into_iter()
                .filter(|(suffix, _)| suffix.is_empty())
                .collect(),
            Rvalue::Aggregate { kind, operands } => {
                let variant = self.enum_variant(kind);
                let mut out = Vec::new();
                for (i, op) in operands.iter().enumerate() {
                    for (suffix, l) in self.places.operand_addrs(facts, op) {
                        out.push((aggregate_field(variant, i, &suffix), l));
                    }
                }
                out
            }
            _ => Vec::new(),
        }
    }

    /// The pointers inside `*args[0]` before the call, when the call
    /// returns a value of the pointee's type.
    fn returned_pointee(
        &self,
        facts: &Facts,
        args: &[kmir::Operand],
        destination: &Place,
    ) -> Vec<(Vec<ProjKey>, memory::Location)> {
        let Some(kmir::Operand::Copy(arg) | kmir::Operand::Move(arg)) = args.first() else {
            return Vec::new();
        };
        let (Some(arg_ty), Some(dest_ty)) =
            (self.places.place_ty(arg), self.places.place_ty(destination))
        else {
            return Vec::new();
        };
        let pointee = match self.dump.ty(arg_ty).map(|t| &t.kind) {
            Some(kmir::TyKind::Ref { pointee, .. } | kmir::TyKind::RawPtr { pointee, .. }) => {
                *pointee
            }
            _ => return Vec::new(),
        };
        if pointee != dest_ty {
            return Vec::new();
        }
        let Some(target) = facts.pointee(&args[0]) else {
            return Vec::new();
        };
        facts.addrs_under(&target)
    }

    /// What is known about an aggregate's operands, as facts about its
    /// fields (`ScopeGuard(Some(..))` knows its field is `Some`).
    fn aggregate_known(
        &self,
        facts: &Facts,
        rvalue: &Rvalue,
    ) -> Vec<(Vec<ProjKey>, Aspect, Known)> {
        let Rvalue::Aggregate { kind, operands } = rvalue else {
            return Vec::new();
        };
        let variant = self.enum_variant(kind);
        let mut out = Vec::new();
        for (i, op) in operands.iter().enumerate() {
            let (kmir::Operand::Copy(p) | kmir::Operand::Move(p)) = op else {
                // `Flags(0)`: a constant field is a known value.
                if let kmir::Operand::Constant(kmir::Constant {
                    value: kmir::ConstValue::Scalar(v),
                    ..
                }) = op
                {
                    out.push((
                        aggregate_field(variant, i, &[]),
                        Aspect::Value,
                        Known::Is(*v),
                    ));
                }
                continue;
            };
            let Some(key) = PlaceKey::of(p) else { continue };
            for (suffix, aspect, known) in facts.known_under(&key) {
                out.push((aggregate_field(variant, i, &suffix), aspect, known));
            }
        }
        out
    }

    /// The variant an aggregate builds, when it builds an enum.
    fn enum_variant(&self, kind: &AggregateKind) -> Option<u32> {
        match kind {
            AggregateKind::Adt { ty, variant, .. } if self.is_enum(*ty) => Some(*variant),
            _ => None,
        }
    }

    fn is_enum(&self, ty: kmir::TyId) -> bool {
        let Some(kmir::TyKind::Adt { path, .. }) = self.dump.ty(ty).map(|t| &t.kind) else {
            return false;
        };
        self.dump
            .adt(path)
            .is_some_and(|a| a.kind == kmir::AdtKind::Enum)
    }

    /// The discriminant values of an enum type.
    fn enum_discrs(&self, ty: kmir::TyId) -> Option<Vec<u128>> {
        self.dump.enum_of(ty).map(kmir::AdtDef::discriminants)
    }

    fn place_ty(&self, place: &Place) -> Option<kmir::TyId> {
        self.dump.place_ty(self.body, place)
    }

    fn place_variant_discr(&self, place: &Place, variant: u32) -> Option<u128> {
        let ty = self.place_ty(place)?;
        self.dump.adt_of(ty)?.discriminant(variant)
    }

    /// The place a callee's first argument points to (a drop's place).
    fn arg0_pointee(&self, facts: &Facts, terminator: &TerminatorKind) -> Option<PlaceKey> {
        match terminator {
            TerminatorKind::Drop { place, .. } => PlaceKey::of(place),
            TerminatorKind::Call { args, .. } => facts.pointee(args.first()?),
            _ => None,
        }
    }

    /// The places a callee's split condition is about: the first argument's
    /// pointee and value, or their field when the callee splits on a field
    /// (a newtype around an enum, like the kernel's `ScopeGuard`).
    fn split_keys(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        summary: &Summary,
    ) -> (Option<PlaceKey>, Option<PlaceKey>) {
        let pointee = self.arg0_pointee(facts, terminator);
        let arg0 = Self::arg0_place(terminator);
        match summary.split_field {
            Some(f) => (
                pointee.map(|k| k.with(ProjKey::Field(f))),
                arg0.map(|k| k.with(ProjKey::Field(f))),
            ),
            None => (pointee, arg0),
        }
    }

    /// The place a callee's first argument is moved or copied from.
    fn arg0_place(terminator: &TerminatorKind) -> Option<PlaceKey> {
        match terminator {
            TerminatorKind::Call { args, .. } => match args.first()? {
                kmir::Operand::Copy(p) | kmir::Operand::Move(p) => PlaceKey::of(p),
                kmir::Operand::Constant(_) | kmir::Operand::RuntimeChecks(_) => None,
            },
            _ => None,
        }
    }

    /// The discriminant of a constant first argument (`drop(None)`).
    fn const_arg0_discr(&self, terminator: &TerminatorKind) -> Option<u128> {
        let TerminatorKind::Call { args, .. } = terminator else {
            return None;
        };
        let op @ kmir::Operand::Constant(_) = args.first()? else {
            return None;
        };
        self.adt_discr(&Rvalue::Use(op.clone()))
    }

    /// The paths after a call or drop of `targets` from `path`.
    fn call_effect(
        &self,
        path: &Path,
        terminator: &TerminatorKind,
        span: kmir::Span,
        targets: &[Target],
        out: &mut PcState,
    ) {
        for t in targets {
            let summary = self.summary_of.get(t.callee);
            let (pointee, arg0) = self.split_keys(&path.facts, terminator, summary);
            for case in &summary.cases {
                let mut facts = path.facts.clone();
                let feasible = match (case.when, &pointee, &arg0) {
                    (Some(ArgCond::Pointee(d)), Some(p), _) => {
                        let r = facts.resolve(p, Aspect::Discr);
                        facts.assume(&r, Some(d), &[])
                    }
                    (Some(ArgCond::Value(d)), _, Some(p)) => {
                        let r = facts.resolve(p, Aspect::Discr);
                        facts.assume(&r, Some(d), &[])
                    }
                    (Some(ArgCond::Value(d)), _, None) if summary.split_field.is_none() => {
                        self.const_arg0_discr(terminator).is_none_or(|c| c == d)
                    }
                    _ => true,
                };
                if !feasible {
                    continue;
                }
                // Where the pointee is, before the call forgets it.
                let pointee_key = pointee
                    .as_ref()
                    .map(|p| match facts.resolve(p, Aspect::Discr) {
                        Resolved::Key(k, _) => k,
                        Resolved::Const(_) => p.clone(),
                    });
                // The callee may write anything reachable through pointers.
                facts.forget_memory(&self.escaped);
                match terminator {
                    TerminatorKind::Call { destination, .. } => {
                        facts.write_unknown(destination, &self.escaped);
                        if let (Some(key), Some(ret)) = (PlaceKey::of(destination), case.ret) {
                            match ret {
                                RetFact::Discr(d) => {
                                    let key = match summary.ret_field {
                                        Some(f) => key.with(ProjKey::Field(f)),
                                        None => key,
                                    };
                                    facts.set_known(key, Aspect::Discr, d)
                                }
                                RetFact::Is(v) => facts.set_known(key, Aspect::Value, v),
                                RetFact::IsNot(v) => {
                                    facts.assume(&Resolved::Key(key, Aspect::Value), None, &[v]);
                                }
                            }
                        }
                        if let (Some(key), Some(p)) = (pointee_key, case.post) {
                            facts.set_known(key, Aspect::Discr, p);
                        }
                    }
                    TerminatorKind::Drop { place, .. } => facts.write_unknown(place, &self.escaped),
                    _ => {}
                }
                let mut locks = path.locks.clone();
                if case.ret_addrs.is_empty()
                    && let TerminatorKind::Call {
                        args, destination, ..
                    } = terminator
                {
                    // `Option::take`, `mem::replace`, `ptr::read`, `clone`:
                    // a function that returns a `T` from a `&T`/`&mut T`
                    // whose body shows no pointer of its own returns (a copy
                    // of) what the pointer points to.
                    let copied = self.returned_pointee(&path.facts, args, destination);
                    if !copied.is_empty() {
                        facts.set_addrs(destination, copied);
                    }
                }
                if case.has_lock_effect() {
                    let (args, dropped) = call_operands(terminator);
                    let subst = |l| self.places.substitute(&path.facts, l, args, dropped);
                    for l in &case.release {
                        if let Some(l) = subst(l) {
                            locks.release(&l);
                        }
                    }
                    for (l, kind, trylock) in &case.acquire {
                        if let Some(l) = subst(l) {
                            locks.acquire(Held {
                                lock: l,
                                kind: *kind,
                                trylock: *trylock,
                                at: Acquired {
                                    span,
                                    callee: t.callee,
                                },
                            });
                        }
                    }
                    if let TerminatorKind::Call { destination, .. } = terminator {
                        let addrs: Vec<_> = case
                            .ret_addrs
                            .iter()
                            .filter_map(|(suffix, l)| Some((suffix.clone(), subst(l)?)))
                            .collect();
                        facts.set_addrs(destination, addrs);
                    }
                }
                out.add(Path {
                    adj: path.adj.shifted(case.adjust),
                    facts,
                    locks,
                });
            }
        }
    }

    /// The expectation a callee has at this site, given what the path knows
    /// about the arguments (a GFP flag known not to allow sleeping).
    /// The state after a call or drop terminator at `block`.
    fn after_call(&self, state: &PcState, terminator: &Terminator, block: BlockId) -> PcState {
        let span = terminator.span;
        let terminator = &terminator.kind;
        let targets = self.sites.get(&block).map(Vec::as_slice).unwrap_or(&[]);
        let mut out = PcState::default();
        for p in &state.paths {
            if targets.is_empty() {
                // Intrinsics, unresolved callees, drops of nothing: no count
                // effect, but the callee may still write through pointers.
                let mut facts = p.facts.clone();
                match terminator {
                    TerminatorKind::Call { destination, .. } => {
                        facts.forget_memory(&self.escaped);
                        facts.write_unknown(destination, &self.escaped);
                    }
                    TerminatorKind::Drop { place, .. } => facts.write_unknown(place, &self.escaped),
                    _ => {}
                }
                out.add(p.with(p.adj, facts));
            } else {
                self.call_effect(p, terminator, span, targets, &mut out);
            }
        }
        out
    }

    /// The expectation for the variants of the first argument this path
    /// allows (all of them when it knows nothing).
    fn variant_expect(
        &self,
        summary: &Summary,
        terminator: &TerminatorKind,
        facts: &Facts,
    ) -> ExpectRange {
        if summary.expect_when.is_empty() {
            return summary.expect;
        }
        let (pointee, arg0) = self.split_keys(facts, terminator, summary);
        let mut e = ExpectRange::TOP;
        let mut any = false;
        for (when, expect) in &summary.expect_when {
            let key = match when {
                ArgCond::Pointee(_) => pointee.as_ref(),
                ArgCond::Value(_) => arg0.as_ref(),
            };
            let d = match when {
                ArgCond::Pointee(d) | ArgCond::Value(d) => *d,
            };
            let feasible = key.is_none_or(|k| {
                facts
                    .clone()
                    .assume(&facts.resolve(k, Aspect::Discr), Some(d), &[])
            });
            if feasible {
                e = e.intersect(expect);
                any = true;
            }
        }
        if any { e } else { summary.expect }
    }

    pub fn effective_expect(
        &self,
        summary: &Summary,
        terminator: &TerminatorKind,
        facts: &Facts,
    ) -> ExpectRange {
        let base = self.variant_expect(summary, terminator, facts);
        let summary = &Summary {
            expect: base,
            ..summary.clone()
        };
        let TerminatorKind::Call { args, .. } = terminator else {
            return summary.expect;
        };
        let arg = |i: u32| {
            args.get(i as usize)
                .and_then(|a| facts.resolve_operand(a))
                .and_then(|r| facts.value_of(&r))
        };
        if let Some(cond) = &summary.sleeps_if_flag {
            return match arg(cond.arg) {
                Some(Known::Is(v)) if v & u128::from(cond.mask) == 0 => summary.expect,
                // Known to allow sleeping, or unknown: assume it sleeps.
                _ => cond.expect_if_set,
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
            let pointee = PlaceKey {
                local: 1,
                proj: vec![memory::ProjKey::Deref],
            };
            facts.alias_entry(ENTRY_ARG0, Val::Copy(pointee.clone()));
            let field = |k: PlaceKey| match self.split_field {
                Some(f) => k.with(ProjKey::Field(f)),
                None => k,
            };
            match self.entry {
                Some(ArgCond::Pointee(d)) => facts.set_known(field(pointee), Aspect::Discr, d),
                Some(ArgCond::Value(d)) => {
                    facts.set_known(field(PlaceKey::local(1)), Aspect::Discr, d)
                }
                None => {}
            }
        }
        if let Some(ctx) = &self.context {
            for (local, proj, v) in &ctx.known {
                facts.set_known(
                    PlaceKey {
                        local: *local,
                        proj: proj.clone(),
                    },
                    Aspect::Value,
                    *v,
                );
            }
        }
        PcState::single(Adj::Known(0), facts)
    }

    fn apply_statement(
        &self,
        state: &mut PcState,
        statement: &Statement,
        _block: BlockId,
        _index: usize,
    ) {
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
            TerminatorKind::SwitchInt {
                discr,
                targets,
                otherwise,
            } => {
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
                            out.add(p.with(p.adj, facts));
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
                        out.add(p.with(p.adj, facts));
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
            TerminatorKind::Drop { target, .. } => {
                propagate_nonempty(
                    *target,
                    self.after_call(&state, terminator, block),
                    propagate,
                );
            }
            TerminatorKind::Call { target, .. } => {
                if let Some(target) = target {
                    propagate_nonempty(
                        *target,
                        self.after_call(&state, terminator, block),
                        propagate,
                    );
                }
            }
            TerminatorKind::Assert {
                cond,
                expected,
                target,
                ..
            } => {
                // Past the assert the condition held.
                let mut out = PcState::default();
                for p in &state.paths {
                    let mut facts = p.facts.clone();
                    let feasible = match facts.resolve_operand(cond) {
                        Some(r) => facts.assume(&r, Some(u128::from(*expected)), &[]),
                        None => true,
                    };
                    if feasible {
                        out.add(p.with(p.adj, facts));
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

/// Where operand `i` of an aggregate lands in the built value (under
/// `variant` for an enum), followed by `suffix`.
fn aggregate_field(variant: Option<u32>, i: usize, suffix: &[ProjKey]) -> Vec<ProjKey> {
    let mut proj = Vec::with_capacity(2 + suffix.len());
    proj.extend(variant.map(ProjKey::Downcast));
    proj.push(ProjKey::Field(i as u32));
    proj.extend_from_slice(suffix);
    proj
}

/// The arguments of a call, or the place a drop drops.
pub fn call_operands(terminator: &TerminatorKind) -> (&[kmir::Operand], Option<&Place>) {
    match terminator {
        TerminatorKind::Call { args, .. } => (args, None),
        TerminatorKind::Drop { place, .. } => (&[], Some(place)),
        _ => (&[], None),
    }
}

fn propagate_nonempty(
    target: BlockId,
    state: PcState,
    propagate: &mut dyn FnMut(BlockId, PcState),
) {
    if !state.is_unreachable() {
        propagate(target, state);
    }
}

/// Locals whose address escapes: through a raw pointer, or a `&mut` that
/// lives on after the statement that uses it. Calls may change them.
///
/// The borrow checker makes one common case safe: `_t = &mut _l` moved
/// straight into a call whose result holds no reference (`slot.take()`,
/// `v.push(x)`) cannot be used once the call returns, so `_l` only changes
/// in that call (which its summary describes).
fn escaped_locals(dump: &CrateDump, body: &Body) -> Vec<LocalId> {
    let mut out: Vec<LocalId> = Vec::new();
    let mut borrows: Vec<(LocalId, LocalId)> = Vec::new(); // (borrowed, holder)
    kmir::visit::for_each_assign(body, |place, rvalue, _| match rvalue {
        Rvalue::AddressOf { place: p, .. } => out.push(p.local),
        Rvalue::Ref {
            mutable: true,
            place: p,
        } => {
            if place.projection.is_empty() {
                borrows.push((p.local, place.local));
            } else {
                out.push(p.local);
            }
        }
        _ => {}
    });
    for (borrowed, holder) in borrows {
        if !consumed_by_one_call(dump, body, holder) {
            out.push(borrowed);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `local` is used exactly once, moved into a call whose result
/// cannot hold a reference.
fn consumed_by_one_call(dump: &CrateDump, body: &Body, local: LocalId) -> bool {
    let mut uses = 0usize;
    let mut ok = false;
    let mentions = |p: &Place| {
        p.local == local
            || p.projection
                .iter()
                .any(|q| matches!(q, kmir::Projection::Index(l) if *l == local))
    };
    let operand_mentions = |o: &kmir::Operand| matches!(o, kmir::Operand::Copy(p) | kmir::Operand::Move(p) if mentions(p));
    for block in &body.blocks {
        for s in &block.statements {
            match &s.kind {
                StatementKind::Assign { place, rvalue } => {
                    if place.local == local && !place.projection.is_empty() {
                        uses += 1;
                    }
                    uses += rvalue_mentions(rvalue, &mentions);
                }
                StatementKind::SetDiscriminant { place, .. } => {
                    uses += usize::from(mentions(place))
                }
                StatementKind::Intrinsic { operands, .. } => {
                    uses += operands.iter().filter(|o| operand_mentions(o)).count()
                }
                StatementKind::StorageLive(_) | StatementKind::StorageDead(_) => {}
            }
        }
        match &block.terminator.kind {
            TerminatorKind::Call {
                args, destination, ..
            } => {
                for a in args {
                    if operand_mentions(a) {
                        uses += 1;
                        // A result that holds a reference or pointer may keep
                        // the borrow alive. (An ADT holding one only behind
                        // a lifetime parameter, like `IterMut<'_, T>`, is not
                        // seen: lifetimes are erased. A documented
                        // approximation.)
                        let captures = body
                            .local(destination.local)
                            .and_then(|l| dump.ty(l.ty))
                            .is_none_or(|t| {
                                ["&", "*", "fn(", "dyn "]
                                    .iter()
                                    .any(|m| t.display.contains(m))
                            });
                        ok = matches!(a, kmir::Operand::Move(p) if p.local == local && p.projection.is_empty())
                            && destination.projection.is_empty()
                            && !captures;
                    }
                }
                if let Callee::Indirect { operand, .. } = &callee_of(&block.terminator.kind)
                    && operand_mentions(operand)
                {
                    uses += 1;
                }
            }
            TerminatorKind::SwitchInt { discr, .. } => uses += usize::from(operand_mentions(discr)),
            TerminatorKind::Assert { cond, .. } => uses += usize::from(operand_mentions(cond)),
            TerminatorKind::Drop { place, .. } => uses += usize::from(mentions(place)),
            _ => {}
        }
    }
    uses == 1 && ok
}

fn callee_of(t: &TerminatorKind) -> Callee {
    match t {
        TerminatorKind::Call { callee, .. } => callee.clone(),
        _ => Callee::Intrinsic {
            name: String::new(),
        },
    }
}

fn rvalue_mentions(r: &Rvalue, mentions: &dyn Fn(&Place) -> bool) -> usize {
    let op = |o: &kmir::Operand| {
        usize::from(matches!(o, kmir::Operand::Copy(p) | kmir::Operand::Move(p) if mentions(p)))
    };
    match r {
        Rvalue::Use(o)
        | Rvalue::UnaryOp { operand: o, .. }
        | Rvalue::Cast { operand: o, .. }
        | Rvalue::Repeat { operand: o, .. } => op(o),
        Rvalue::Ref { place, .. }
        | Rvalue::AddressOf { place, .. }
        | Rvalue::Discriminant(place)
        | Rvalue::Len(place)
        | Rvalue::CopyForDeref(place) => usize::from(mentions(place)),
        Rvalue::Aggregate { operands, .. } => operands.iter().map(op).sum(),
        Rvalue::BinaryOp { lhs, rhs, .. } | Rvalue::CheckedBinaryOp { lhs, rhs, .. } => {
            op(lhs) + op(rhs)
        }
        Rvalue::ThreadLocalRef { .. } => 0,
    }
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
    /// The locks held on the path that violates the expectation.
    pub held: Vec<Held>,
    /// The callee's summary specialised to this call's constants, when it
    /// was (its reason explains the first step).
    pub specialised: Option<Box<Summary>>,
    /// Only the callee's last-reference expectation is violated: the
    /// finding depends on whether a reference dropped here is the last.
    pub last_reference: bool,
}

/// A lock acquired at a call or drop site while another is held: an edge
/// of the lock-order graph, or, when both are one class, a finding.
#[derive(Clone, Debug)]
pub struct Nesting {
    pub held: Held,
    pub take: Take,
    /// The call (in this function) during which `take` happens.
    pub site: kmir::Span,
    pub callee: FnId,
}

/// A nesting of one lock class in itself: the same object (a double lock)
/// or possibly two instances.
#[derive(Clone, Debug)]
pub struct LockEvent {
    pub nesting: Nesting,
    pub same_object: bool,
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
    pub expect: ExpectRange,
    pub reason: Option<Reason>,
    /// What the body additionally expects if a reference it drops is the
    /// last one (see `Summary::expect_last`).
    pub expect_last: ExpectRange,
    pub reason_last: Option<Reason>,
    pub violations: Vec<Violation>,
    /// The paths reaching a return, with the return's span.
    pub returns: Vec<(Path, kmir::Span)>,
    /// Sites where the count changes (callee, adjustment text).
    pub changes: Vec<(kmir::Span, FnId, String)>,
    /// Locks acquired during the body (directly or in callees), in its terms.
    pub takes: Vec<Take>,
    pub lock_events: Vec<LockEvent>,
    pub edges: Vec<Nesting>,
    /// The expectation depends on what callers pass (see `context.rs`).
    pub context_sensitive: bool,
}

/// Runs the analysis of one body to its fixed point and reads the summary
/// and the violations off it.
pub fn analyze(analysis: &BodyAnalysis<'_>) -> BodyOutcome {
    let results = dataflow::iterate(analysis, analysis.body);
    if analysis.trace {
        for (b, state) in results.entry.iter().enumerate() {
            if results.reached[b] {
                eprintln!("[kanalyze trace] bb{b} (entry {:?}):", analysis.entry);
                for p in &state.paths {
                    eprintln!("    adj {}: {:?}", p.adj, p.facts);
                }
            }
        }
    }
    let mut expect = ExpectRange::TOP;
    let mut reason: Option<Reason> = None;
    let mut expect_last = ExpectRange::TOP;
    let mut reason_last: Option<Reason> = None;
    let mut violations = Vec::new();
    let mut returns: Vec<(Path, kmir::Span)> = Vec::new();
    let mut changes = Vec::new();
    let mut locks = LockSites::default();
    let mut sensitive = false;
    dataflow::visit(
        analysis,
        analysis.body,
        &results,
        |block, state, terminator| match &terminator.kind {
            TerminatorKind::Return => {
                for p in &state.paths {
                    returns.push((p.clone(), terminator.span));
                }
            }
            TerminatorKind::Call { .. } | TerminatorKind::Drop { .. } => {
                let targets = analysis.sites.get(&block).map(Vec::as_slice).unwrap_or(&[]);
                for t in targets {
                    let summary = match state.paths.first() {
                        Some(p) => analysis.site_summary(*t, &terminator.kind, &p.facts),
                        None => Cow::Borrowed(analysis.summary_of.get(t.callee)),
                    };
                    locks.visit_call(analysis, state, terminator, *t, &summary);
                    if summary.uniform_adjust() != Some(0) {
                        changes.push((terminator.span, t.callee, summary.adjust_text()));
                    }
                    if summary.poisoned {
                        continue;
                    }
                    let mut site_required = ExpectRange::TOP;
                    let mut site_required_last = ExpectRange::TOP;
                    let mut callee_expect = summary.expect;
                    let mut callee_expect_last = ExpectRange::TOP;
                    let mut via_last = true;
                    let mut worst: Option<(Adj, ExpectRange, Vec<Held>)> = None;
                    let mut worst_last: Option<(Adj, ExpectRange, Vec<Held>)> = None;
                    for p in &state.paths {
                        let whole = analysis.effective_expect(&summary, &terminator.kind, &p.facts);
                        // On a teardown path everything the callee needs is
                        // needed only because a reference was the last.
                        let (e, e_last) = if analysis.tearing_down(&p.facts) {
                            via_last = whole == ExpectRange::TOP;
                            (ExpectRange::TOP, whole.intersect(&summary.expect_last))
                        } else {
                            (whole, summary.expect_last)
                        };
                        if analysis.trace {
                            eprintln!(
                                "[kanalyze trace] bb{block} calls {}: expects {e} (summary {}, last {e_last}), adj {}",
                                analysis.program.function(t.callee).name,
                                summary.expect,
                                p.adj
                            );
                        }
                        if e_last != ExpectRange::TOP {
                            callee_expect_last = e_last;
                            let required = match p.adj {
                                Adj::Known(a) => e_last.shift_back(a),
                                Adj::Top => ExpectRange::EMPTY,
                            };
                            let narrowed = site_required_last.intersect(&required);
                            if expect
                                .intersect(&expect_last)
                                .intersect(&narrowed)
                                .is_empty()
                                && worst_last.is_none()
                            {
                                worst_last = Some((p.adj, e_last, p.locks.held.clone()));
                            }
                            site_required_last = narrowed;
                        }
                        if e == ExpectRange::TOP {
                            continue;
                        }
                        callee_expect = e;
                        let required = match p.adj {
                            Adj::Known(a) => e.shift_back(a),
                            Adj::Top => ExpectRange::EMPTY,
                        };
                        let narrowed = site_required.intersect(&required);
                        if expect.intersect(&narrowed).is_empty() && worst.is_none() {
                            worst = Some((p.adj, e, p.locks.held.clone()));
                        }
                        site_required = narrowed;
                    }
                    let first_adj = state
                        .paths
                        .iter()
                        .find_map(|p| match p.adj {
                            Adj::Known(a) => Some(a),
                            Adj::Top => None,
                        })
                        .unwrap_or(0);
                    let make_violation =
                        |(adj, e, held): (Adj, ExpectRange, Vec<Held>),
                         base: ExpectRange,
                         last_reference: bool| {
                            Violation {
                                block,
                                span: terminator.span,
                                target: *t,
                                callee_expect: e,
                                possible: match adj {
                                    Adj::Known(a) => base.shift(a),
                                    Adj::Top => ExpectRange::TOP,
                                },
                                unknown_adjustment: adj == Adj::Top,
                                held,
                                specialised: summary
                                    .specialised
                                    .then(|| Box::new(Summary::clone(&summary))),
                                last_reference,
                            }
                        };
                    if let Some(w) = worst {
                        violations.push(make_violation(w, expect, false));
                        continue;
                    }
                    if let Some(w) = worst_last {
                        violations.push(make_violation(w, expect.intersect(&expect_last), true));
                    } else {
                        let next = expect_last.intersect(&site_required_last);
                        if next != expect_last {
                            reason_last = Some(Reason {
                                block,
                                span: terminator.span,
                                callee: t.callee,
                                kind: t.kind,
                                adj: first_adj,
                                callee_expect: callee_expect_last,
                                callee_summary: None,
                                via_last,
                            });
                            expect_last = next;
                        }
                    }
                    let next = expect.intersect(&site_required);
                    if next != expect {
                        sensitive |= summary.context_sensitive
                            || summary.sleeps_if_flag.is_some()
                            || summary.sleeps_if_zero.is_some()
                            || matches!(t.kind, EdgeKind::Indirect | EdgeKind::Virtual);
                        reason = Some(Reason {
                            block,
                            span: terminator.span,
                            callee: t.callee,
                            kind: t.kind,
                            adj: first_adj,
                            callee_expect,
                            callee_summary: summary
                                .specialised
                                .then(|| Box::new(Summary::clone(&summary))),
                            via_last: false,
                        });
                        expect = next;
                    }
                }
            }
            _ => {}
        },
    );
    if analysis.trace {
        for (p, _) in &returns {
            eprintln!(
                "[kanalyze trace] return: adj {}: {:?} {:?}",
                p.adj, p.facts, p.locks
            );
        }
    }
    BodyOutcome {
        expect,
        reason,
        expect_last,
        reason_last,
        violations,
        returns,
        changes,
        takes: locks.takes,
        lock_events: locks.events,
        edges: locks.edges,
        context_sensitive: sensitive,
    }
}

/// The lock findings of one body, gathered site by site.
#[derive(Default)]
struct LockSites {
    takes: Vec<Take>,
    events: Vec<LockEvent>,
    edges: Vec<Nesting>,
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
                                });
                            }
                        } else if !self.edges.iter().any(|e| {
                            e.held.lock.class() == h.lock.class()
                                && e.take.lock.class() == here.lock.class()
                        }) {
                            self.edges.push(nesting());
                        }
                    }
                }
                if self.takes.len() < crate::summary::MAX_TAKES
                    && !self.takes.iter().any(|t| {
                        t.lock == here.lock
                            && t.kind == here.kind
                            && t.irqs_disabled == here.irqs_disabled
                    })
                {
                    self.takes.push(here);
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
    ret_field: Option<u32>,
) -> Result<Vec<Case>, ()> {
    let field = |k: PlaceKey, f: Option<u32>| match f {
        Some(f) => k.with(ProjKey::Field(f)),
        None => k,
    };
    if returns.is_empty() {
        // Never returns: nothing to adjust for the caller.
        return Ok(vec![Case {
            when,
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
        let post = if pointee_arg {
            known(
                &field(
                    PlaceKey {
                        local: 1,
                        proj: vec![memory::ProjKey::Deref],
                    },
                    split_field,
                ),
                Aspect::Discr,
            )
        } else {
            None
        };
        let keep = |l: &memory::Location| !l.is_local();
        let case = Case {
            when,
            ret,
            post,
            adjust,
            acquire: p
                .locks
                .net_held()
                .filter(|h| keep(&h.lock))
                .map(|h| (h.lock.clone(), h.kind, h.trylock))
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
    // Two ways of returning that a caller cannot tell apart must agree.
    for a in &cases {
        for b in &cases {
            if a.adjust != b.adjust && (a.ret.is_none() || b.ret.is_none() || a.ret == b.ret) {
                return Err(());
            }
        }
    }
    cases.sort();
    Ok(cases)
}

/// The returns reached with each distinct adjustment, for the report.
pub fn failure(
    returns: &[(Path, kmir::Span)],
    changes: Vec<(kmir::Span, FnId, String)>,
) -> AdjustFailure {
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

/// The locals that receive the result of a last-reference test, directly
/// from the call or through plain copies.
fn last_reference_tests(
    body: &Body,
    sites: &HashMap<BlockId, Vec<Target>>,
    summary_of: &dyn Summaries,
) -> Vec<LocalId> {
    let mut tests: Vec<LocalId> = Vec::new();
    for (block, b) in body.blocks.iter().enumerate() {
        let TerminatorKind::Call { destination, .. } = &b.terminator.kind else {
            continue;
        };
        if !destination.projection.is_empty() {
            continue;
        }
        let is_test = sites.get(&(block as BlockId)).is_some_and(|ts| {
            ts.iter()
                .any(|t| summary_of.get(t.callee).last_reference_test)
        });
        if is_test && !tests.contains(&destination.local) {
            tests.push(destination.local);
        }
    }
    if tests.is_empty() {
        return tests;
    }
    // Only a local that holds nothing else: one assigned elsewhere too could
    // hold another value where it is tested.
    let mut writes: HashMap<LocalId, usize> = HashMap::new();
    kmir::visit::for_each_place(body, |place, context, _| {
        if matches!(
            context,
            PlaceContext::Assign | PlaceContext::CallDestination
        ) && place.projection.is_empty()
        {
            *writes.entry(place.local).or_default() += 1;
        }
    });
    let once = |l: &LocalId| writes.get(l).copied().unwrap_or(0) == 1;
    tests.retain(once);
    // `let is_zero = …; if is_zero` may copy the result first.
    loop {
        let before = tests.len();
        kmir::visit::for_each_assign(body, |place, rvalue, _| {
            if let Rvalue::Use(kmir::Operand::Copy(src) | kmir::Operand::Move(src)) = rvalue
                && place.projection.is_empty()
                && src.projection.is_empty()
                && tests.contains(&src.local)
                && !tests.contains(&place.local)
                && once(&place.local)
            {
                tests.push(place.local);
            }
        });
        if tests.len() == before {
            return tests;
        }
    }
}
