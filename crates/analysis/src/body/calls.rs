//! What a call or drop does to a path: the callee's cases applied in the
//! caller's terms, and what the callee expects at the site.

use annotations::ExpectRange;
use kmir::{BlockId, LocalId, Place, Rvalue, Terminator, TerminatorKind};

use crate::summary::{ArgCond, Case, RetFact, Summary};
use domains::{Acquired, Held, LockState};
use domains::{Path, PcState};
use memory::{Aspect, Facts, Known, PlaceKey, ProjKey, Resolved};

use super::prescan::read_only_operand;
use super::{BodyAnalysis, PlaceFacts, Target, restore_facts};

impl BodyAnalysis<'_> {
    /// The place a callee's first argument points to (a drop's place).
    pub(super) fn arg0_pointee(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
    ) -> Option<PlaceKey> {
        match terminator {
            TerminatorKind::Drop { place, .. } => PlaceKey::of(place),
            TerminatorKind::Call { args, .. } => facts.pointee(args.first()?),
            _ => None,
        }
    }

    /// The places a callee's split condition is about: the first argument's
    /// pointee and value, or their field when the callee splits on a field
    /// (a newtype around an enum, like the kernel's `ScopeGuard`).
    pub(super) fn split_keys(
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
    pub(super) fn arg0_place(terminator: &TerminatorKind) -> Option<PlaceKey> {
        match terminator {
            TerminatorKind::Call { args, .. } => match args.first()? {
                kmir::Operand::Copy(p) | kmir::Operand::Move(p) => PlaceKey::of(p),
                kmir::Operand::Constant(_) | kmir::Operand::RuntimeChecks(_) => None,
            },
            _ => None,
        }
    }

    /// The discriminant of a constant first argument (`drop(None)`).
    pub(super) fn const_arg0_discr(&self, terminator: &TerminatorKind) -> Option<u128> {
        let TerminatorKind::Call { args, .. } = terminator else {
            return None;
        };
        let op @ kmir::Operand::Constant(_) = args.first()? else {
            return None;
        };
        self.adt_discr(&Rvalue::Use(op.clone()))
    }

    /// The discriminant the operand a call passes for the callee's MIR local
    /// `local` (an argument) is known to have.
    pub(super) fn arg_discr(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        local: u32,
    ) -> Option<u128> {
        let TerminatorKind::Call { args, .. } = terminator else {
            return None;
        };
        match args.get(local.checked_sub(1)? as usize)? {
            op @ kmir::Operand::Constant(_) => self.adt_discr(&Rvalue::Use(op.clone())),
            kmir::Operand::Copy(p) | kmir::Operand::Move(p) => {
                match facts.value_of(&facts.resolve(&PlaceKey::of(p)?, Aspect::Discr))? {
                    Known::Is(d) => Some(d),
                    Known::IsNot(_) => None,
                }
            }
            kmir::Operand::RuntimeChecks(_) => None,
        }
    }

    /// The place a call passes for the callee's MIR local `local` (an
    /// argument), when it passes one (not a constant).
    pub(super) fn arg_place(&self, terminator: &TerminatorKind, local: u32) -> Option<PlaceKey> {
        let TerminatorKind::Call { args, .. } = terminator else {
            return None;
        };
        match args.get(local.checked_sub(1)? as usize)? {
            kmir::Operand::Copy(p) | kmir::Operand::Move(p) => PlaceKey::of(p),
            _ => None,
        }
    }

    /// What is known about the pointees of the private `&mut` arguments,
    /// one dereference deep.
    fn private_facts(&self, facts: &Facts, block: BlockId) -> Vec<PlaceFacts> {
        // The argument's pointee, and what the references derived from it
        // point to (an element `iter_mut().find(..)` returned): a `&mut`
        // is unique, and memory behind a `&` without interior mutability
        // cannot change while it is borrowed. Each under the place it
        // aliases, so that what the call is lent is recognised.
        let unique_or_frozen = |l: LocalId| {
            self.body
                .local(l)
                .and_then(|d| self.dump.ty(d.ty))
                .is_some_and(|t| match t.kind {
                    kmir::TyKind::Ref { mutable: true, .. } => true,
                    kmir::TyKind::Ref {
                        mutable: false,
                        pointee,
                    } => !self.dump.may_mutate_behind_shared(pointee),
                    _ => false,
                })
        };
        let mut keys: Vec<PlaceKey> = self
            .private
            .at(block)
            .iter()
            .flat_map(|&arg| {
                std::iter::once(arg).chain(
                    self.private
                        .derived(arg)
                        .iter()
                        .copied()
                        .filter(move |&l| unique_or_frozen(l)),
                )
            })
            .map(|l| {
                facts.normalize_fully(&PlaceKey {
                    local: l,
                    proj: vec![ProjKey::Deref],
                })
            })
            .collect();
        keys.sort();
        keys.dedup();
        // A key under another one is covered by it.
        let covered: Vec<PlaceKey> = keys
            .iter()
            .filter(|k| keys.iter().any(|o| o != *k && k.starts_with(o)))
            .cloned()
            .collect();
        keys.retain(|k| !covered.contains(k));
        keys.into_iter()
            .map(|key| {
                let shallow = |s: &Vec<ProjKey>| {
                    !s.iter()
                        .any(|p| matches!(p, ProjKey::Deref | ProjKey::Via(_)))
                };
                let known = facts
                    .known_under(&key)
                    .into_iter()
                    .filter(|(s, _, _)| shallow(s))
                    .collect();
                let addrs = facts
                    .addrs_under(&key)
                    .into_iter()
                    .filter(|(s, _)| shallow(s))
                    .collect();
                (key, known, addrs, None)
            })
            .collect()
    }

    /// The paths after a call or drop of `targets` from `path`.
    pub(super) fn call_effect(
        &self,
        path: &Path,
        terminator: &TerminatorKind,
        block: BlockId,
        span: kmir::Span,
        targets: &[Target],
        out: &mut PcState,
    ) {
        let site = CallSite {
            path,
            terminator,
            block,
            span,
            targets,
            // The variant a never-fails declaration gives this call's
            // result (crates/invariants).
            declared_success: self
                .succeeds
                .iter()
                .find(|(b, _)| *b == block)
                .map(|&(_, v)| v),
        };
        for t in targets {
            let summary = self.summary_of.get(t.callee);
            let split = self.callee_split(&path.facts, terminator, summary);
            for case in &summary.cases {
                if let Some(after) = self.case_effect(&site, t, summary, &split, case) {
                    out.add(after);
                }
            }
        }
    }

    /// Where the argument a callee's cases are split on is in the caller's
    /// terms, and what the callee's result says about its variant: read
    /// once from the facts before the call, for all of the callee's cases.
    fn callee_split(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        summary: &Summary,
    ) -> CalleeSplit {
        let (pointee, arg0) = self.split_keys(facts, terminator, summary);
        // A callee that only tests its argument's variant: its result is
        // tied to that variant on every path, merged or not.
        // (Only for splits by a discriminant: a flag's value is no
        // variant.)
        let by_discr = !summary.split_value;
        let test = discr_test(summary).and_then(|(on_pointee, c, eq)| {
            let place = if on_pointee { &pointee } else { &arg0 };
            match facts.resolve(place.as_ref()?, summary.split_aspect()) {
                Resolved::Key(k, _) => Some((k, c, eq)),
                Resolved::Const(_) => None,
            }
        });
        let same_variant = same_variant(summary)
            .filter(|_| by_discr)
            .and_then(|on_pointee| {
                let place = if on_pointee { &pointee } else { &arg0 };
                match facts.resolve(place.as_ref()?, Aspect::Discr) {
                    Resolved::Key(k, _) => Some(k),
                    Resolved::Const(_) => None,
                }
            });
        CalleeSplit {
            pointee,
            arg0,
            test,
            same_variant,
        }
    }

    /// The path after one case of the callee `t` at a call or drop site:
    /// what the callee may write, its result, its count adjustment and its
    /// lock changes, in the caller's terms. `None` when the case cannot
    /// happen there: its entry condition contradicts the path, it does not
    /// return, or it is a failure the call is declared never to have.
    fn case_effect(
        &self,
        site: &CallSite,
        t: &Target,
        summary: &Summary,
        split: &CalleeSplit,
        case: &Case,
    ) -> Option<Path> {
        let (path, terminator, block) = (site.path, site.terminator, site.block);
        let mut facts = path.facts.clone();
        let feasible = self.case_feasible(&mut facts, terminator, summary, split, case);
        // The callee does not come back on this entry.
        if !feasible || case.diverges {
            return None;
        }
        // A way the callee fails, where it is declared never to
        // (crates/invariants): not taken.
        if let Some(variant) = site.declared_success
            && summary.ret_field.is_none()
            && matches!(case.ret, Some(RetFact::Discr(d)) if d != variant)
        {
            return None;
        }
        let behind_pointee = self.left_behind_pointee(&facts, terminator, summary, split, case);
        let kept = self.forget_what_the_call_may_write(&mut facts, site, t, summary);
        match terminator {
            TerminatorKind::Call { destination, .. } => {
                facts.write_unknown(destination, &self.escaped);
                self.point_result_at(&mut facts, block, destination, kept.accessed);
                self.set_result_fact(&mut facts, destination, summary, case);
                // Declared never to fail here (crates/invariants):
                // the failure variant's paths cannot run.
                if let Some(variant) = site.declared_success
                    && let Some(key) = PlaceKey::of(destination)
                {
                    facts.set_known(key, Aspect::Discr, variant);
                }
                self.tie_result_to_variant(&mut facts, destination, summary, split);
                behind_pointee.set(&mut facts, summary.split_aspect());
            }
            TerminatorKind::Drop { place, .. } => match PlaceKey::of(place) {
                // Dropped behind a private `&mut`: only that place
                // changes.
                Some(key) if self.private.at(block).contains(&key.local) => {
                    facts.forget_place(&key)
                }
                _ => facts.write_unknown(place, &self.escaped),
            },
            _ => {}
        }
        // What only a handle this body holds reaches, and the
        // pointers to it, as they were before the call or drop.
        restore_facts(&mut facts, kept.exclusive);
        for (l, key) in kept.refs {
            facts.set_points_at(l, key);
        }
        // Object liveness: the frame rule, what the call moves
        // away or keeps, and the result's contract.
        // (What only a handle this body holds reaches survives, as
        // for the value facts.)
        let exclusive: Vec<PlaceKey> = kept
            .exclusive_keys
            .iter()
            .map(|k| path.facts.object_key(k))
            .collect();
        self.objects_call(
            &path.facts,
            &mut facts,
            terminator,
            summary,
            block,
            &exclusive,
        );
        let mut locks = path.locks.clone();
        self.set_returned_pointers(&path.facts, &mut facts, terminator, summary, case);
        if case.has_lock_effect() {
            self.apply_lock_effect(site, t, case, &mut facts, &mut locks);
        }
        Some(Path {
            adj: path.adj.shifted(case.adjust),
            facts,
            locks,
        })
    }

    /// Whether a case's entry condition can hold on the path, assumed in
    /// `facts` when it can; a condition on a constant first argument is
    /// checked against the constant.
    fn case_feasible(
        &self,
        facts: &mut Facts,
        terminator: &TerminatorKind,
        summary: &Summary,
        split: &CalleeSplit,
        case: &Case,
    ) -> bool {
        match (case.when, &split.pointee, &split.arg0) {
            (Some(ArgCond::Pointee(d)), Some(p), _) => {
                let r = facts.resolve(p, summary.split_aspect());
                facts.assume(&r, Some(d), &[])
            }
            (Some(ArgCond::Value(d)), _, Some(p)) => {
                let r = facts.resolve(p, summary.split_aspect());
                facts.assume(&r, Some(d), &[])
            }
            (Some(ArgCond::Value(d)), _, None) if summary.split_field.is_none() => {
                self.const_arg0_discr(terminator).is_none_or(|c| c == d)
            }
            _ => true,
        }
    }

    /// What a case leaves behind the first argument's pointee, read before
    /// the call forgets where that pointee is.
    fn left_behind_pointee(
        &self,
        facts: &Facts,
        terminator: &TerminatorKind,
        summary: &Summary,
        split: &CalleeSplit,
        case: &Case,
    ) -> LeftBehindPointee {
        // Where the pointee is, before the call forgets it.
        let key = split
            .pointee
            .as_ref()
            .map(|p| match facts.resolve(p, summary.split_aspect()) {
                Resolved::Key(k, _) => k,
                Resolved::Const(_) => p.clone(),
            });
        // The variant the callee leaves behind the pointee when it moves
        // an argument there: that argument's, known before the call.
        let post = case
            .post
            .or_else(|| self.arg_discr(facts, terminator, case.post_arg?));
        // And the pointers inside it (the lock a guard moved in refers
        // to).
        let addrs = case
            .post_arg
            .and_then(|k| self.arg_place(terminator, k))
            .map(|p| facts.addrs_under(&p))
            .unwrap_or_default();
        LeftBehindPointee { key, post, addrs }
    }

    /// Forgets the values the call or drop ending the site's block may
    /// write through pointers, and puts back those it cannot reach: the
    /// data of the locks held, and what is under the private `&mut`
    /// arguments outside the places it is lent. Returns what the call's
    /// own writes may not change either, and the place the callee `t`
    /// returns a reference to, all read before the forgetting.
    fn forget_what_the_call_may_write(
        &self,
        facts: &mut Facts,
        site: &CallSite,
        t: &Target,
        summary: &Summary,
    ) -> KeptAcrossCall {
        let (terminator, block) = (site.terminator, site.block);
        // The callee may write anything reachable through pointers,
        // except what only this body can reach.
        let private = self.private_facts(facts, block);
        if self.trace {
            eprintln!(
                "[kanalyze trace] bb{block}: private {:?} ({:?}), read-only operands {:?}",
                self.private.at(block),
                private.iter().map(|p| p.0.local).collect::<Vec<_>>(),
                call_operands(terminator)
                    .0
                    .iter()
                    .map(|a| read_only_operand(self.dump, self.body, a))
                    .collect::<Vec<_>>()
            );
        }
        // Places behind them that this call is lent may change.
        let (lent_args, dropped) = call_operands(terminator);
        let lent: Vec<PlaceKey> = lent_args
            .iter()
            .filter(|a| !read_only_operand(self.dump, self.body, a))
            .filter_map(|a| facts.pointee(a))
            .chain(dropped.and_then(PlaceKey::of))
            .map(|k| facts.normalize_fully(&k))
            .collect();
        // What the call cannot change in the data of locks held,
        // and in contents only a handle this body holds reaches.
        let kept_data = self.guard_data_kept(facts, block, terminator);
        let exclusive = self.accessor_facts_kept(facts, terminator, site.targets);
        let exclusive_keys: Vec<PlaceKey> = exclusive.iter().map(|k| k.0.clone()).collect();
        let refs = self.accessor_refs_kept(facts, terminator, site.targets);
        // The place an accessor returns, named before the call
        // forgets where its argument points.
        let accessed = self.accessor_place(facts, terminator, t, summary);
        facts.forget_memory_values(&self.escaped);
        if self.trace {
            eprintln!("[kanalyze trace] bb{block}: kept of guards' data {kept_data:?}");
        }
        restore_facts(facts, kept_data);
        restore_unlent_private_facts(facts, private, &lent);
        KeptAcrossCall {
            exclusive,
            exclusive_keys,
            refs,
            accessed,
        }
    }

    /// What the call's result points to: its lock's data for a view of a
    /// guard, or the place an exclusive accessor returns.
    fn point_result_at(
        &self,
        facts: &mut Facts,
        block: BlockId,
        destination: &Place,
        accessed: Option<PlaceKey>,
    ) {
        // A view of a guard points at its lock's data.
        if let Some(g) = self.view_of(block)
            && destination.projection.is_empty()
            && !self.address_taken.contains(&destination.local)
        {
            facts.set_view(destination.local, g);
        }
        // (A view's result is named by its guard.)
        if let Some(key) = accessed
            && self.view_of(block).is_none()
        {
            facts.set_points_at(destination.local, key);
        }
    }

    /// What a case says its result is: a variant, a value, or a value it
    /// is not.
    fn set_result_fact(
        &self,
        facts: &mut Facts,
        destination: &Place,
        summary: &Summary,
        case: &Case,
    ) {
        let (Some(key), Some(ret)) = (PlaceKey::of(destination), case.ret) else {
            return;
        };
        match ret {
            RetFact::Discr(d) => {
                let key = match summary.ret_field {
                    Some(f) => key.with(ProjKey::Field(f)),
                    None => key,
                };
                // The variants it may have: cases that return different
                // ones, merged, still exclude the rest (`Ok` or
                // `OkNotifyPoll`, never `FailedDead`).
                if summary.ret_field.is_none()
                    && let Some(discrs) =
                        self.place_ty(destination).and_then(|t| self.enum_discrs(t))
                {
                    facts.set_domain(&key, discrs);
                }
                facts.set_known(key, Aspect::Discr, d)
            }
            RetFact::Is(v) => facts.set_known(key, Aspect::Value, v),
            RetFact::IsNot(v) => {
                facts.assume(&Resolved::Key(key, Aspect::Value), None, &[v]);
            }
        }
    }

    /// Ties the call's result, when it is a local of its own, to the
    /// variant of the argument the callee tests or passes through, so that
    /// a branch on the result later tells that argument's variant.
    fn tie_result_to_variant(
        &self,
        facts: &mut Facts,
        destination: &Place,
        summary: &Summary,
        split: &CalleeSplit,
    ) {
        if let Some((key, c, eq)) = &split.test
            && let Some(dest) = PlaceKey::of(destination)
            && dest.proj.is_empty()
            && !self.escaped.contains(&dest.local)
        {
            facts.set_discr_test(dest.local, key.clone(), summary.split_aspect(), *c, *eq);
        }
        if let Some(key) = &split.same_variant
            && let Some(dest) = PlaceKey::of(destination)
            && dest.proj.is_empty()
            && !self.escaped.contains(&dest.local)
        {
            facts.set_same_variant(dest.local, key.clone());
        }
    }

    /// The pointers in the call's result when the case names none.
    fn set_returned_pointers(
        &self,
        before: &Facts,
        facts: &mut Facts,
        terminator: &TerminatorKind,
        summary: &Summary,
        case: &Case,
    ) {
        if case.ret_addrs.is_empty()
            && let TerminatorKind::Call {
                args, destination, ..
            } = terminator
        {
            // `Option::take`, `mem::replace`, `ptr::read`, `clone`: a
            // function that returns a `T` from a `&T`/`&mut T` whose body
            // shows no pointer of its own returns (a copy of) what the
            // pointer points to.
            let copied = self.returned_pointee(before, args, destination);
            if !copied.is_empty() {
                facts.set_addrs(destination, copied);
            } else {
                // `Result::unwrap`, `Option::unwrap`: a function that
                // returns what a by-value argument held (its contract says
                // so) returns the pointers stored in it: a guard keeps
                // pointing to its lock.
                let moved = self.returned_payload(before, args, summary);
                if !moved.is_empty() {
                    facts.set_addrs(destination, moved);
                }
            }
        }
    }

    /// The locks a case of the callee `t` releases and acquires, and the
    /// locks its result points to, in the caller's terms.
    fn apply_lock_effect(
        &self,
        site: &CallSite,
        t: &Target,
        case: &Case,
        facts: &mut Facts,
        locks: &mut LockState,
    ) {
        let (args, dropped) = call_operands(site.terminator);
        let subst = |l| self.places.substitute(&site.path.facts, l, args, dropped);
        for l in &case.release {
            if let Some(l) = subst(l) {
                locks.release(&l);
            }
        }
        for a in &case.acquire {
            if let Some(l) = subst(&a.lock) {
                locks.acquire(Held {
                    lock: l,
                    kind: a.kind,
                    trylock: a.trylock,
                    at: Acquired {
                        span: site.span,
                        callee: t.callee,
                    },
                });
            }
        }
        if let TerminatorKind::Call { destination, .. } = site.terminator {
            let addrs: Vec<_> = case
                .ret_addrs
                .iter()
                .filter_map(|(suffix, l)| Some((suffix.clone(), subst(l)?)))
                .collect();
            facts.set_addrs(destination, addrs);
        }
    }

    /// The expectation a callee has at this site, given what the path knows
    /// about the arguments (a GFP flag known not to allow sleeping).
    /// The state after a call or drop terminator at `block`.
    pub(super) fn after_call(
        &self,
        state: &PcState,
        terminator: &Terminator,
        block: BlockId,
    ) -> PcState {
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
                    TerminatorKind::Drop { place, .. } => {
                        if let Some(k) = PlaceKey::of(place) {
                            let k = facts.object_key(&k);
                            facts.objects_mut().kill(&k, None);
                        }
                        facts.write_unknown(place, &self.escaped)
                    }
                    _ => {}
                }
                for g in self.guards_released_at(block, terminator) {
                    facts.forget_guard_data(g);
                }
                out.add(p.with(p.adj, facts));
            } else {
                self.call_effect(p, terminator, block, span, targets, &mut out);
            }
        }
        out
    }

    /// The expectation for the variants of the first argument this path
    /// allows (all of them when it knows nothing).
    pub(super) fn variant_expect(
        &self,
        summary: &Summary,
        terminator: &TerminatorKind,
        facts: &Facts,
    ) -> ExpectRange {
        self.per_variant(
            summary,
            &summary.expect_when,
            summary.expect,
            terminator,
            facts,
        )
    }

    /// What the call additionally expects if a reference it drops is the
    /// last one, for the variants the split argument may have here.
    pub(super) fn variant_expect_last(
        &self,
        summary: &Summary,
        terminator: &TerminatorKind,
        facts: &Facts,
    ) -> ExpectRange {
        self.per_variant(
            summary,
            &summary.expect_last_when,
            summary.expect_last,
            terminator,
            facts,
        )
    }

    /// The meet of the expectations `when` gives for the variants the
    /// split argument may have at this call (`whole` if it says nothing).
    fn per_variant(
        &self,
        summary: &Summary,
        when: &[(ArgCond, ExpectRange)],
        whole: ExpectRange,
        terminator: &TerminatorKind,
        facts: &Facts,
    ) -> ExpectRange {
        if when.is_empty() {
            return whole;
        }
        let (pointee, arg0) = self.split_keys(facts, terminator, summary);
        let mut e = ExpectRange::TOP;
        let mut any = false;
        for (when, expect) in when {
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
                    .assume(&facts.resolve(k, summary.split_aspect()), Some(d), &[])
            });
            if feasible {
                e = e.intersect(expect);
                any = true;
            }
        }
        if any { e } else { whole }
    }

    /// Whether the facts say the place a callee's last-reference
    /// expectation comes from (`Summary::last_place`, below what its first
    /// argument holds or points to) holds none of the variants that carry
    /// it here: `allocation.take()` left `None` in the field whose drop
    /// would release a reference.
    pub(super) fn last_place_inactive(
        &self,
        summary: &Summary,
        terminator: &TerminatorKind,
        facts: &Facts,
    ) -> bool {
        let place = super::run::callee_last_place(summary);
        if place.variants.is_none()
            && !place
                .steps
                .iter()
                .any(|s| matches!(s, crate::summary::PlaceStep::Variant { .. }))
        {
            return false;
        }
        let Some(mut key) = self
            .arg0_pointee(facts, terminator)
            .or_else(|| Self::arg0_place(terminator))
        else {
            return false;
        };
        // Whether the place at `key` may hold variant `d`.
        let may_be = |key: &PlaceKey, d: u128| {
            facts
                .clone()
                .assume(&facts.resolve(key, Aspect::Discr), Some(d), &[])
        };
        for s in &place.steps {
            match *s {
                // The facts are about the argument's own memory, not
                // what a pointer there points to.
                crate::summary::PlaceStep::Deref => return false,
                crate::summary::PlaceStep::Field(f) => key = key.with(ProjKey::Field(f)),
                crate::summary::PlaceStep::Variant { index, discr } => {
                    // The payload of a variant the place cannot hold: the
                    // drop that carries the expectation does not happen.
                    if !may_be(&key, discr) {
                        return true;
                    }
                    key = key.with(ProjKey::Downcast(index));
                }
            }
        }
        place
            .variants
            .as_ref()
            .is_some_and(|vs| !vs.iter().any(|&d| may_be(&key, d)))
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

/// A call or drop site as one path reaches it: what each case of each
/// callee is applied to.
struct CallSite<'p> {
    path: &'p Path,
    terminator: &'p TerminatorKind,
    block: BlockId,
    span: kmir::Span,
    targets: &'p [Target],
    /// The variant a never-fails declaration gives the call's result.
    declared_success: Option<u128>,
}

/// Where a callee's split argument is in the caller's terms, and what the
/// callee's result says about its variant (see [`discr_test`] and
/// [`same_variant`]).
struct CalleeSplit {
    /// The first argument's pointee (or its split field).
    pointee: Option<PlaceKey>,
    /// The place the first argument is passed from (or its split field).
    arg0: Option<PlaceKey>,
    /// The result is "this place's variant is (`eq`) or is not `c`":
    /// `(place, c, eq)`.
    test: Option<(PlaceKey, u128, bool)>,
    /// The result has this place's variant.
    same_variant: Option<PlaceKey>,
}

/// What a case leaves behind the first argument's pointee, named before
/// the call forgets where that pointee is.
struct LeftBehindPointee {
    /// Where the pointee is.
    key: Option<PlaceKey>,
    /// The variant (or split value) it holds after the call.
    post: Option<u128>,
    /// The pointers inside it after the call: those of the argument moved
    /// there.
    addrs: Vec<(Vec<ProjKey>, memory::Location)>,
}

impl LeftBehindPointee {
    /// Sets what the pointee holds after the call.
    fn set(self, facts: &mut Facts, aspect: Aspect) {
        if let Some(key) = &self.key
            && !self.addrs.is_empty()
        {
            facts.set_addrs_under(key, self.addrs);
        }
        if let (Some(key), Some(p)) = (self.key, self.post) {
            facts.set_known(key, aspect, p);
        }
    }
}

/// What a call's forgetting of memory values leaves to be put back or
/// named afterwards, read before it.
struct KeptAcrossCall {
    /// The facts only an exclusive handle this body holds reaches: put
    /// back after the call's own writes.
    exclusive: Vec<PlaceFacts>,
    /// Their places.
    exclusive_keys: Vec<PlaceKey>,
    /// The locals pointing at exclusive places the call cannot change.
    refs: Vec<(LocalId, PlaceKey)>,
    /// The place an exclusive accessor returns a reference to.
    accessed: Option<PlaceKey>,
}

/// Puts back what was known under the private `&mut` arguments' pointees
/// (read with `private_facts`) outside the places the call is `lent`: no
/// other pointer reaches them.
fn restore_unlent_private_facts(facts: &mut Facts, private: Vec<PlaceFacts>, lent: &[PlaceKey]) {
    for (key, known, addrs, _) in private {
        let full = |suffix: &Vec<ProjKey>| PlaceKey {
            local: key.local,
            proj: key.proj.iter().chain(suffix).copied().collect(),
        };
        let kept = |suffix: &Vec<ProjKey>| {
            let full = full(suffix);
            !lent
                .iter()
                .any(|l| full.starts_with(l) || l.starts_with(&full))
        };
        // A call lent only memory strictly inside an enum (the payload of
        // one of its variants: the only way below an enum place) cannot
        // change its variant: the values it may write are valid ones,
        // never a niche.
        let variant_kept = |suffix: &Vec<ProjKey>| {
            let full = full(suffix);
            !lent.iter().any(|l| {
                full.starts_with(l)
                    || (l.starts_with(&full)
                        && !matches!(l.proj.get(full.proj.len()), Some(ProjKey::Downcast(_))))
            })
        };
        let known = known
            .into_iter()
            .filter(|(s, aspect, _)| match aspect {
                Aspect::Discr => variant_kept(s),
                Aspect::Value => kept(s),
            })
            .collect();
        let addrs = addrs.into_iter().filter(|(s, _)| kept(s)).collect();
        facts.set_known_under_key(&key, known);
        facts.set_addrs_under(&key, addrs);
    }
}

/// Whether a summary is a test of its first argument's variant: every case
/// is conditioned on a variant, returns a boolean, and does nothing else
/// (`Option::is_none`, `Result::is_ok`, a helper returning `matches!(..)`).
/// Then `(on the pointee, c, eq)`: the result is "the variant is `c`" when
/// `eq`, "is not `c`" otherwise; `None` for a test no single variant
/// describes (true for two of four variants).
fn discr_test(summary: &Summary) -> Option<(bool, u128, bool)> {
    let first = summary.cases.first()?;
    let mut yes = Vec::new();
    let mut no = Vec::new();
    let mut on_pointee = None;
    for c in &summary.cases {
        let (pointee, d) = match c.when? {
            ArgCond::Pointee(d) => (true, d),
            ArgCond::Value(d) => (false, d),
        };
        if *on_pointee.get_or_insert(pointee) != pointee
            || c.adjust != first.adjust
            || c.has_lock_effect()
            || c.post_arg.is_some()
            || c.post.is_some_and(|p| p != d)
        {
            return None;
        }
        match c.ret? {
            RetFact::Is(1) => yes.push(d),
            RetFact::Is(0) => no.push(d),
            _ => return None,
        }
    }
    if yes.iter().any(|d| no.contains(d)) {
        return None;
    }
    match (yes.as_slice(), no.as_slice()) {
        ([c], [_, ..]) => Some((on_pointee?, *c, true)),
        ([_, ..], [c]) => Some((on_pointee?, *c, false)),
        _ => None,
    }
}

/// Whether a summary returns an enum of the same variant as its first
/// argument's, whatever it is, and changes no lock (`Option::as_ref`,
/// `as_mut`, `Result::as_ref`): then whether the condition is on the
/// pointee.
fn same_variant(summary: &Summary) -> Option<bool> {
    if summary.ret_field.is_some() || summary.cases.len() < 2 {
        return None;
    }
    let first = summary.cases.first()?;
    let mut on_pointee = None;
    for c in &summary.cases {
        let (pointee, d) = match c.when? {
            ArgCond::Pointee(d) => (true, d),
            ArgCond::Value(d) => (false, d),
        };
        if *on_pointee.get_or_insert(pointee) != pointee
            || c.adjust != first.adjust
            || !c.acquire.is_empty()
            || !c.release.is_empty()
            || c.post_arg.is_some()
            || c.post.is_some_and(|p| p != d)
            || c.ret != Some(RetFact::Discr(d))
        {
            return None;
        }
    }
    on_pointee
}

/// The arguments of a call, or the place a drop drops.
pub fn call_operands(terminator: &TerminatorKind) -> (&[kmir::Operand], Option<&Place>) {
    match terminator {
        TerminatorKind::Call { args, .. } => (args, None),
        TerminatorKind::Drop { place, .. } => (&[], Some(place)),
        _ => (&[], None),
    }
}

pub(super) fn propagate_nonempty(
    target: BlockId,
    state: PcState,
    propagate: &mut dyn FnMut(BlockId, PcState),
) {
    if !state.is_unreachable() {
        propagate(target, state);
    }
}
