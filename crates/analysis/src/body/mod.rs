//! The body analysis: the product state of `domains` (count offset, held
//! locks, value facts per path) plugged into the `dataflow` engine.
//!
//! * this module: the analysis of one body (`BodyAnalysis`), its entry
//!   state and the transfer of each statement and terminator;
//! * `statements`: what an assignment does to the value facts;
//! * `calls`: what a call or drop does to a path (the callee's cases in the
//!   caller's terms) and what the callee expects at the site;
//! * `guard_data`: which facts about a held lock's data survive a call;
//! * `prescan`: flow-insensitive scans made once per body;
//! * `run`: the fixed point read off site by site (`analyze`);
//! * `observations`: what a run observed, as typed data for the checks.

use std::borrow::Cow;
use std::collections::HashMap;

use dataflow::Analysis;
use kmir::{BlockId, Body, Callee, CrateDump, LocalId, Statement, Terminator, TerminatorKind};
use program::{EdgeKind, FnId, Program};

use crate::context::Context;
use crate::summary::{ArgCond, Summaries, Summary};
use domains::{Adj, PcState};
use memory::Places;
use memory::{Aspect, Facts, Known, PlaceKey, ProjKey, Val};

pub(crate) mod absent_key;
pub mod accessors;
mod calls;
mod chain;
pub(crate) mod exclusive_handle;
pub(crate) mod exhausted;
mod guard_data;
mod observations;
pub mod origins;
mod pointer_copies;
mod prescan;
mod run;
mod same_object;
pub mod same_or_none;
mod statements;
pub mod writes;

use calls::propagate_nonempty;
pub use observations::{
    AdjustFailure, CountChange, LockEvent, MAX_OPEN_NESTINGS, Nesting, OpenNesting, Proof,
    Violation,
};
use prescan::{
    PrivatePointees, branches_on_args, escaped_locals, last_reference_tests, narrow_known_targets,
    private_pointees,
};
pub use run::{BodyOutcome, analyze, cases_at_return, failure};

/// A pseudo-local that keeps the entry value of `*_1` (the value a drop
/// glue or `&mut self` method was called on) after `*_1` changes, so that a
/// summary can depend on the variant it had on entry.
pub use memory::ENTRY_ARG0;

/// What is known at a place and below it (values, and pointers stored
/// there), read before a call or a write forgets it, to put back what that
/// call or write cannot change.
type PlaceFacts = (
    memory::PlaceKey,
    Vec<(Vec<memory::ProjKey>, memory::Aspect, memory::Known)>,
    Vec<(Vec<memory::ProjKey>, memory::Location)>,
    // The local whose value a store put at the place, if kept.
    Option<LocalId>,
);

/// Puts back facts read with [`PlaceFacts`].
fn restore_facts(facts: &mut memory::Facts, kept: Vec<PlaceFacts>) {
    for (key, known, addrs, holds) in kept {
        facts.set_known_under_key(&key, known);
        facts.set_addrs_under(&key, addrs);
        if let Some(l) = holds {
            facts.set_holds(key, l);
        }
    }
}

/// A call or drop target at one site.
#[derive(Clone, Copy, Debug, bincode::Encode, bincode::Decode)]
pub struct Target {
    pub callee: FnId,
    pub kind: EdgeKind,
}

/// What the structural recognisers that run once per function before the
/// body analysis (`absent_key`, `exclusive_handle`) read a body with.
pub(crate) struct BodyInputs<'a> {
    pub dump: &'a kmir::CrateDump,
    pub body: &'a kmir::Body,
    pub program: &'a Program,
    pub sites: &'a HashMap<BlockId, Vec<Target>>,
    pub summary_of: &'a dyn Summaries,
    pub writes: &'a writes::Writes,
}

impl<'a> BodyInputs<'a> {
    /// The summary of the one function the call ending `block` calls.
    pub fn only_callee(&self, block: BlockId) -> Option<&'a Summary> {
        match self.sites.get(&block)?.as_slice() {
            [t] => Some(self.summary_of.get(t.callee)),
            _ => None,
        }
    }
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
    /// Locals whose own address is taken mutably or as a raw pointer (not a
    /// borrow through the pointer they hold): only an assignment changes
    /// what the others hold.
    pub address_taken: Vec<LocalId>,
    /// `&mut` arguments whose pointee no call can reach unless given a
    /// pointer derived from it (see `PrivatePointees`).
    pub private: PrivatePointees,
    /// Statements that read a value of an uninhabited type, by block and
    /// index (sorted): never reached.
    pub uninhabited_reads: Vec<(BlockId, usize)>,
    /// A branch depends on an argument's value (see `branches_on_args`).
    pub branches_on_args: bool,
    pub summary_of: &'a dyn Summaries,
    /// The variant the first argument has on entry, for one run of a
    /// function split by it.
    pub entry: Option<ArgCond>,
    /// Print the fixed point on stderr (the CLI's `--trace`).
    pub trace: bool,
    /// The entry condition is about this field of the first argument (or
    /// of its pointee).
    pub split_field: Option<u32>,
    /// What `entry` is about (a `bool` split field's value, or a
    /// discriminant).
    pub split_aspect: Aspect,
    /// The call-site context of a specialised run.
    pub context: Option<Context>,
    /// Whether call sites passing constants get their callees' summaries
    /// specialised (through [`Summaries::specialized`]).
    pub specialize: bool,
    /// Locals holding the result of a last-reference test
    /// (`refcount_dec_and_test`): on a path where one is known non-zero,
    /// this function is tearing an object down.
    pub last_reference_tests: Vec<LocalId>,
    /// Drops (and `mem::drop` calls) of a reference that a declared
    /// invariant says is not the last one (kept alive elsewhere): the
    /// callee's last-reference expectation does not apply there.
    pub not_last: Vec<BlockId>,
    /// Drops (and `mem::drop` calls) of a reference that a declared
    /// invariant says can be the last one (holds last): the callee's
    /// last-reference expectation joins its own there, unless the
    /// analysis shows the reference is not the last.
    pub can_be_last: Vec<BlockId>,
    /// Drops a same-object declaration covers: (block, the back pointer
    /// and what keeps its object alive).
    pub same_objects: Vec<(BlockId, invariants::same_object::Site)>,
    /// Calls whose result a never-fails declaration says holds its
    /// success variant (`Ok`, `Some`): (block, variant).
    pub succeeds: Vec<(BlockId, u128)>,
    /// Drop flags (see `prescan::drop_flags`): paths that differ in them
    /// are kept apart.
    pub drop_flags: Vec<LocalId>,
    /// Where what each local holds comes from (object liveness): the
    /// same for every run of one body, so shared between them.
    pub origins: std::sync::Arc<origins::Origins>,
    /// `derived_from`'s answers, by local.
    derived: std::sync::Mutex<HashMap<LocalId, Option<Vec<LocalId>>>>,
    /// Locals holding copies of pointers stored below `*_1`
    /// (`pointer_copies`), scanned on first use.
    pointer_copies: std::sync::OnceLock<HashMap<u32, pointer_copies::Source>>,
    /// The field types the body's places project (object liveness asks
    /// for the types of the places its facts name), gathered on first use.
    field_types: std::sync::OnceLock<crate::liveness::types::FieldTypes>,
    live_locals: std::sync::OnceLock<crate::index::LiveLocals>,
    /// Fields declared to keep the objects taken out of them alive
    /// elsewhere: a value taken out of one is not a last reference.
    pub kept_alive: Vec<memory::FieldId>,
}

impl<'a> BodyAnalysis<'a> {
    pub fn new(
        program: &'a Program,
        caller: FnId,
        dump: &'a CrateDump,
        body: &'a Body,
        summary_of: &'a dyn Summaries,
        origins: Option<std::sync::Arc<origins::Origins>>,
    ) -> Self {
        let mut sites: HashMap<BlockId, Vec<Target>> = HashMap::new();
        for (callee, edge) in program.callees(caller) {
            sites.entry(edge.block).or_default().push(Target {
                callee,
                kind: edge.kind,
            });
        }
        narrow_known_targets(program, dump, body, &mut sites);
        let last_reference_tests = last_reference_tests(body, &sites, summary_of);
        let origins = origins.unwrap_or_else(|| {
            std::sync::Arc::new(origins::Origins::compute(
                program, dump, body, &sites, summary_of,
            ))
        });
        BodyAnalysis {
            program,
            func: caller,
            places: Places::new(dump, body, &program.function(caller).name),
            dump,
            body,
            sites,
            escaped: escaped_locals(dump, body),
            address_taken: prescan::address_taken(body),
            private: private_pointees(dump, body),
            uninhabited_reads: statements::uninhabited_reads(dump, body),
            branches_on_args: branches_on_args(body),
            summary_of,
            entry: None,
            trace: false,
            split_field: None,
            split_aspect: Aspect::Discr,
            context: None,
            specialize: false,
            last_reference_tests,
            not_last: Vec::new(),
            can_be_last: Vec::new(),
            same_objects: Vec::new(),
            succeeds: Vec::new(),
            drop_flags: prescan::drop_flags(dump, body),
            origins,
            derived: Default::default(),
            pointer_copies: Default::default(),
            field_types: Default::default(),
            live_locals: Default::default(),
            kept_alive: Vec::new(),
        }
    }

    /// The functions the callees of this body's call sites call with a
    /// pointer to a value of type `env` (by its display) first: the
    /// closures a callee given that closure runs.
    pub(crate) fn predicates(&self, env: &str) -> Vec<FnId> {
        let mut out: Vec<FnId> = Vec::new();
        for targets in self.sites.values() {
            for t in targets {
                for (g, _) in self.program.callees(t.callee) {
                    let f = self.program.function(g);
                    let Some((krate, inst)) = self.program.body_of(g) else {
                        continue;
                    };
                    let _ = inst;
                    let Some(body) = self.program.body(g) else {
                        continue;
                    };
                    let first = body
                        .local(1)
                        .and_then(|l| krate.dump.ty(l.ty))
                        .and_then(|t| match &t.kind {
                            kmir::TyKind::Ref { pointee, .. } => krate.dump.ty(*pointee),
                            _ => None,
                        });
                    if first.is_some_and(|t| *t.display == *env) && !out.contains(&g) {
                        let _ = f;
                        out.push(g);
                    }
                }
            }
        }
        out
    }

    /// Which locals are read later (computed on first use).
    pub(crate) fn live_locals(&self) -> &crate::index::LiveLocals {
        self.live_locals
            .get_or_init(|| crate::index::LiveLocals::compute(self.body))
    }

    /// The field types of the body's places.
    pub(crate) fn field_types(&self) -> &crate::liveness::types::FieldTypes {
        self.field_types.get_or_init(|| {
            let mut types = crate::liveness::types::FieldTypes::of_body(self.dump, self.body);
            // What each callee returns a reference to, from this body's
            // calls (an accessor's step names it by callee).
            for (block, targets) in &self.sites {
                let Some(kmir::TerminatorKind::Call { destination, .. }) = self
                    .body
                    .blocks
                    .get(*block as usize)
                    .map(|b| &b.terminator.kind)
                else {
                    continue;
                };
                let Some(to) = self
                    .dump
                    .place_ty(self.body, destination)
                    .and_then(|t| self.dump.pointee(t))
                else {
                    continue;
                };
                for t in targets {
                    types.set_via(t.callee.0, to);
                }
                // A view of a guard: what it points to is the lock's data.
                if let Some(g) = self.view_of(*block) {
                    types.set_data(memory::guard_data(g), to);
                }
            }
            types
        })
    }

    /// Locals holding copies of pointers stored below `*_1`.
    pub(super) fn pointer_copies(&self) -> &HashMap<u32, pointer_copies::Source> {
        self.pointer_copies.get_or_init(|| {
            pointer_copies::scan(self.dump, self.body, &self.sites, self.summary_of)
        })
    }

    /// The locals that may hold a pointer derived from `&mut` local `l`
    /// (sorted), or `None` when such a pointer may reach anything
    /// (`prescan`), computed once per local.
    pub(super) fn derived_from(&self, l: LocalId) -> Option<Vec<LocalId>> {
        let mut cache = self.derived.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(l)
            .or_insert_with(|| {
                prescan::derived_from(self.dump, self.body, l).map(|mut d| {
                    d.sort_unstable();
                    d.dedup();
                    d
                })
            })
            .clone()
    }

    /// What a call or drop releases, if it releases a last reference: the
    /// dropped place, or the arguments the callee's last-reference
    /// expectation is about (`Top` when it is about anything).
    pub fn released(&self, terminator: &TerminatorKind, summary: &Summary) -> origins::Set {
        match terminator {
            TerminatorKind::Drop { place, .. } => self.origins.place(self.dump, place),
            TerminatorKind::Call { args, .. } => match &summary.last_from {
                Some(ks) => self.origins.args(self.dump, args, ks),
                None => None,
            },
            _ => None,
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
                Some(ArgCond::Pointee(d)) => facts.set_known(field(pointee), self.split_aspect, d),
                Some(ArgCond::Value(d)) => {
                    facts.set_known(field(PlaceKey::local(1)), self.split_aspect, d)
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
        // Paths returning different values of a test's result stay apart
        // (the facts each knows are what the result stands for).
        let mut split = self.drop_flags.clone();
        if crate::function::result_shapes(self.dump, self.body).is_some() {
            split.push(0);
        }
        facts.set_split_locals(split);
        facts.set_object_entry(self.body.arg_count, self.frozen_places());
        PcState::single(Adj::Known(0), facts)
    }

    fn apply_statement(
        &self,
        state: &mut PcState,
        statement: &Statement,
        block: BlockId,
        index: usize,
    ) {
        // A value of an uninhabited type (`!`, `Infallible`, an empty
        // enum) cannot exist, so a statement that reads one (the payload of
        // `Err` in a `Result<T, Infallible>`) is never reached.
        if self
            .uninhabited_reads
            .binary_search(&(block, index))
            .is_ok()
        {
            state.paths.clear();
            return;
        }
        for p in &mut state.paths {
            self.apply_facts(&mut p.facts, statement, (block, index));
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
                            Some(r) => {
                                let ok = facts.assume(&r, Some(t.value), &[]);
                                if let memory::Resolved::Key(k, Aspect::Discr) = &r {
                                    self.learn_variant(&mut facts, k);
                                }
                                ok
                            }
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
                        Some(r) => {
                            let ok = facts.assume(&r, None, &values);
                            if let memory::Resolved::Key(k, Aspect::Discr) = &r {
                                self.learn_variant(&mut facts, k);
                            }
                            ok
                        }
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
