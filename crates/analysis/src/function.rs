//! One function: its body's runs (one per entry variant), combined with
//! what is declared, into a summary and the events the checks report.

use annotations::ExpectRange;
use program::FnId;

use crate::body::{self, Violation};
use crate::declared::{Declared, DeclaredView, d_view, declared};
use crate::drops::special_drop;
use crate::entry_split::{EntrySplit, entry_split, newtype_enum_field, split_like_callee};
use crate::events::Events;
use crate::lock_runs::LockRuns;
use crate::summary::{
    ArgCond, Case, FieldPath, Flow, Reason, Source, Summaries, Summary, split_aspect,
};
use crate::{Input, context};

/// A function's summary and what its analysis observed.
pub(crate) struct Analyzed {
    pub summary: Summary,
    pub events: Events,
}

impl Analyzed {
    fn quiet(summary: Summary) -> Analyzed {
        Analyzed {
            summary,
            events: Events::default(),
        }
    }
}

/// `f`'s summary for one call-site context (its events are the
/// unspecialised run's business).
pub(crate) fn analyze_in_context(
    input: &Input<'_>,
    f: FnId,
    ctx: &context::Context,
    summaries: &dyn Summaries,
) -> Option<Summary> {
    input.program.body_of(f)?;
    let mut summary = analyze_function(input, f, summaries, Some(ctx)).summary;
    summary.specialised = true;
    Some(summary)
}

/// One function: its body's fixed point (once per entry variant), combined
/// with what is declared.
pub(crate) fn analyze_function(
    input: &Input<'_>,
    f: FnId,
    summaries: &dyn Summaries,
    ctx: Option<&context::Context>,
) -> Analyzed {
    let program = input.program;
    if let Some((summary, problem)) = special_drop(input, f, summaries) {
        return Analyzed {
            summary,
            events: Events {
                drop: problem,
                ..Events::default()
            },
        };
    }
    let Some((krate, inst)) = program.body_of(f) else {
        return Analyzed::quiet(Summary::neutral(Source::Builtin));
    };
    let Some(body) = program.body(f) else {
        return Analyzed::quiet(Summary::neutral(Source::Builtin));
    };
    let body: &kmir::Body = &body;
    let declared = declared(input, f);
    if let Some(summary) = summary_without_reading_body(input, f, inst, declared.as_ref()) {
        return Analyzed::quiet(summary);
    }
    let subject = Subject {
        input,
        f,
        dump: &krate.dump,
        body,
        summaries,
    };
    // A function whose first argument is (or points to) an enum is analysed
    // once per variant of it: what it returns and leaves behind can then
    // depend on that variant (`Option::take`, `is_some`, drop glue).
    let split =
        entry_split(&krate.dump, body).or_else(|| split_like_callee(input, f, body, summaries));
    let ret_field = ret_field(input, f, &krate.dump, body, summaries);
    let (runs, origins, mut scans) = run_each_entry(&subject, ctx, split.as_ref(), ret_field);
    let declares_adjust = declared
        .as_ref()
        .is_some_and(|d| d.adjust.is_some_and(|a| a != 0));
    let (mut summary, mut events, body_effects, releases, return_facts) =
        runs.finish(split.as_ref(), ret_field);
    let clone_impl = inst.trait_item.as_deref() == Some("core::clone::Clone::clone");
    let from_shared = returns_handle_from_shared(&krate.dump, body);
    let sharing = clone_impl || from_shared;
    summary.liveness = crate::liveness::contract::read(
        &return_facts,
        if summary.expect_last == ExpectRange::TOP {
            Some(Vec::new())
        } else {
            releases
        },
        body.arg_count,
        result_shapes(&krate.dump, body).as_ref(),
        sharing,
        body.local(0)
            .is_some_and(|l| crate::liveness::types::is_plain_pointer(&krate.dump, l.ty)),
    );
    if let Some(o) = &origins {
        summary.writes = Some(o.writes.summary());
        summary.ret_points = o.writes.returned();
        summary.stores_own = o.writes.stores_own(body.arg_count);
        summary.ret_fresh = o.writes.returns_elsewhere();
    }
    // A handle returned from behind a shared reference is a second owner
    // only when the place it was copied from still holds it: the body
    // does not write that place in place (a `take()` through a cell moves
    // the only count out).
    if sharing && !clone_impl && !copied_and_counted(&summary) {
        summary.liveness.sharing = false;
    }
    summary.ret_from = origins.and_then(|o| o.returned());
    let spec = input.spec.rust_item(&inst.item_path);
    if let Some(r) = spec {
        apply_spec_flows(&mut summary, r, body.arg_count);
        if let Some(key) = spec_absent_key(r, body.arg_count) {
            scans.absent_key = Some(key);
        }
    }
    if let Some(handle) = handle_the_result_shares(&summary, from_shared, &krate.dump, body) {
        summary.liveness.ret_same = Some(handle);
    }
    if let Some(r) = spec {
        apply_spec_contract(&mut summary.liveness, r, body.arg_count);
    }
    summary.absent_key = scans.absent_key;
    summary.ret_exclusive = spec.is_some_and(|r| r.exclusive_to_handle) || scans.ret_exclusive;
    summary.exclusive_field = scans.exclusive_field.filter(|_| summary.ret_exclusive);
    summary.sharing_clone = inst.trait_item.as_deref() == Some("core::clone::Clone::clone")
        && summary.ret_from.as_ref().is_some_and(|from| {
            from.iter()
                .all(|f| matches!(f, Flow::Read(0, _) | Flow::Clone(0, _)))
        });
    summary.identity_test = body::origins::identity_test(&krate.dump, body);
    summary.same_or_none = scans.same_or_none;
    if let Some(r) = spec.filter(|r| r.has_effect()) {
        apply_spec_locking(&mut summary, &krate.dump, body, &inst.item_path, r, f);
    }
    events.declares_adjust = declares_adjust;
    if let Some(d) = declared {
        events.declared = apply_declaration(&mut summary, d, body_effects);
    }
    Analyzed { summary, events }
}

/// The summary of a function whose body is not read, because what is
/// declared of it says everything a caller needs: a complete `unchecked`
/// annotation, or a `[rust]` spec entry that says only that the item
/// blocks.
fn summary_without_reading_body(
    input: &Input<'_>,
    f: FnId,
    inst: &kmir::Instance,
    declared: Option<&Declared>,
) -> Option<Summary> {
    if let Some(d) = declared
        && d.unchecked
        && let (Some(adjust), Some(expect)) = (d.adjust, d.expect)
    {
        // klint trusts a complete `unchecked` annotation without reading the body.
        let source = Source::Annotation {
            path: d.path.clone(),
            unchecked: true,
        };
        return Some(Summary::fixed(adjust, expect, source));
    }
    // A `[rust]` entry that says only that the item blocks describes the
    // call as an `unchecked` annotation would: the body (a channel's wait,
    // the OS underneath) is not read.
    input
        .spec
        .rust_item(&inst.item_path)
        .filter(|r| r.blocks && r.lock.is_none())
        .map(|r| crate::rust_spec::without_body(&inst.item_path, r, f))
}

/// The function whose body is analysed, with what its analysis reads.
struct Subject<'s, 'i> {
    input: &'s Input<'i>,
    f: FnId,
    dump: &'s kmir::CrateDump,
    body: &'s kmir::Body,
    summaries: &'s dyn Summaries,
}

/// What the body's structural recognisers find: flow-insensitive, so read
/// once, before the first run, for every run.
#[derive(Default)]
struct BodyScans {
    /// Drops of a reference that is not the last one: of an exhausted
    /// iterator, or of a clone a handle in an exclusive field keeps alive.
    not_last_drops: Vec<kmir::BlockId>,
    /// A key a lookup found absent (`body::absent_key`).
    absent_key: Option<crate::summary::AbsentKey>,
    /// Inserts of that key, which displace nothing: (block, variant).
    displacing_nothing: Vec<(kmir::BlockId, u128)>,
    /// The body returns an exclusive accessor's result.
    ret_exclusive: bool,
    /// The field of the first argument that result is in.
    exclusive_field: Option<crate::summary::ExclusiveField>,
    /// The body returns `Some` of one place or `None` (`body::same_or_none`).
    same_or_none: Option<(crate::summary::ArgPlace, crate::summary::ArgPlace)>,
}

/// The body's runs, one per entry condition, combined; with where what its
/// locals hold comes from and what its recognisers found, which are the
/// same for every run and so read in the first.
fn run_each_entry(
    subject: &Subject<'_, '_>,
    ctx: Option<&context::Context>,
    split: Option<&EntrySplit>,
    ret_field: Option<u32>,
) -> (
    Runs,
    Option<std::sync::Arc<body::origins::Origins>>,
    BodyScans,
) {
    let Subject {
        input,
        f,
        dump,
        body,
        summaries,
    } = *subject;
    let unwritten_args = kmir::visit::unwritten_args(body);
    let mut runs = Runs::default();
    let mut origins = None;
    let mut scans = BodyScans::default();
    for when in entry_conditions(split) {
        let mut analysis =
            body::BodyAnalysis::new(input.program, f, dump, body, summaries, origins.clone());
        if origins.is_none() {
            scans = scan_body(subject, &analysis);
        }
        apply_declared_sites(&mut analysis, input, f, &scans);
        analysis.entry = when;
        analysis.split_field = split.and_then(|s| s.field);
        analysis.split_aspect = split_aspect(split.is_some_and(|s| s.value));
        analysis.specialize = true;
        analysis.trace = analysis_trace(input, f);
        if let Some(c) = ctx {
            analysis.in_context(c.clone());
        }
        let run = body::analyze(&analysis);
        runs.last_reference_test |= analysis.last_reference_tests.contains(&0);
        // The scan is flow-insensitive: every run finds the same.
        origins.get_or_insert_with(|| analysis.origins.clone());
        runs.absorb(run, when, split, ret_field, &unwritten_args);
    }
    (runs, origins, scans)
}

/// What the body's structural recognisers find, read with the first run's
/// analysis (its call sites before declarations change them).
fn scan_body(subject: &Subject<'_, '_>, analysis: &body::BodyAnalysis<'_>) -> BodyScans {
    let Subject {
        input,
        f,
        dump,
        body,
        summaries,
    } = *subject;
    let program = input.program;
    let mut not_last_drops =
        exhausted_drops(input, f, body, &analysis.sites, analysis_trace(input, f));
    // Keys a lookup found absent (`body::absent_key`).
    let inputs = body::BodyInputs {
        dump,
        body,
        program,
        sites: &analysis.sites,
        summary_of: summaries,
        writes: &analysis.origins.writes,
    };
    let keys = body::absent_key::keys(&inputs, |g| analysis.origins.guard_kill_blocks(g));
    let absent_key = keys.absent_key;
    let displacing_nothing = keys.displacing_nothing;
    // Clones kept alive by a handle in an exclusive field.
    let kept =
        body::exclusive_handle::backed_drops(&inputs, |g| analysis.origins.guard_kill_blocks(g));
    if analysis_trace(input, f) && !kept.is_empty() {
        eprintln!(
            "[kanalyze trace] `{}`: releases kept alive by a handle in an exclusive field at {kept:?}",
            program.function(f).name
        );
    }
    not_last_drops.extend(kept);
    if analysis_trace(input, f) && (absent_key.is_some() || !displacing_nothing.is_empty()) {
        eprintln!(
            "[kanalyze trace] `{}`: absent key: {}; inserts displacing nothing (block, variant): {displacing_nothing:?}",
            program.function(f).name,
            absent_key
                .as_ref()
                .map_or_else(|| "none".to_string(), |a| a.describe()),
        );
    }
    let ret_exclusive = body::accessors::returns_exclusive(body, &analysis.sites, summaries);
    // Only a body that returns an exclusive accessor's result says
    // which field (a walk over its definitions, done for few).
    let exclusive_field = ret_exclusive
        .then(|| body::accessors::exclusive_field(dump, body, &analysis.sites, summaries))
        .flatten();
    let same_or_none = body::same_or_none::recognize(dump, body, &analysis.sites, summaries);
    BodyScans {
        not_last_drops,
        absent_key,
        displacing_nothing,
        ret_exclusive,
        exclusive_field,
        same_or_none,
    }
}

/// What the declared invariants, and the recognisers' findings, say of the
/// body's call and drop sites, set on one run's analysis.
fn apply_declared_sites(
    analysis: &mut body::BodyAnalysis<'_>,
    input: &Input<'_>,
    f: FnId,
    scans: &BodyScans,
) {
    // A field declared empty at teardown releases nothing when the
    // struct's drop glue drops it (crates/invariants).
    for block in input.invariants.elided_in(f) {
        analysis.sites.remove(&block);
    }
    // A reference taken out of a field declared kept alive is not the
    // last one where it is dropped.
    analysis.not_last = input.invariants.not_last_in(f).collect();
    // A reference taken out of a field declared to hold the last one
    // can be the last where it is dropped.
    analysis.can_be_last = input.invariants.last_in(f).collect();
    // A back pointer declared to name an object kept alive here.
    analysis.same_objects = input
        .invariants
        .same_object_in(f)
        .map(|(b, s)| (b, s.clone()))
        .collect();
    // Exhausted iterators, clones an exclusive field's handle keeps.
    analysis
        .not_last
        .extend(scans.not_last_drops.iter().copied());
    // A call declared never to fail returns its success variant.
    analysis.succeeds = input.invariants.succeeds_in(f).collect();
    // An insert of a key a lookup found absent displaces nothing.
    analysis
        .succeeds
        .extend(scans.displacing_nothing.iter().copied());
}

/// What the spec says of where the result comes from and points, and of
/// the keys the item looks up, that the body cannot show: the list's
/// pointer juggling returns the count of the object it was given.
fn apply_spec_flows(summary: &mut Summary, r: &spec::RustSpec, arg_count: u32) {
    if let Some(k) = r.returns_object_of.filter(|&k| k < arg_count) {
        summary.ret_from = Some(vec![Flow::Clone(k, FieldPath::BELOW)]);
    }
    // `Arc::deref`: the result points into the counted object, not
    // into the memory holding the handle.
    if let Some(k) = r.points_into_object.filter(|&k| k < arg_count) {
        summary.ret_points = Some(vec![(k, FieldPath::BELOW.handle())]);
    }
    // `RBTreeNode::new(key, value)`: the value moved into the node.
    if let Some(k) = r.returns_argument.filter(|&k| k < arg_count) {
        summary.ret_from = Some(vec![Flow::Own(k)]);
    }
    summary.keeps_arg = r.keeps_argument.filter(|&k| k < arg_count);
    summary.node_key = r.node_key.filter(|&k| k < arg_count);
    summary.displaces_key_of = r.displaces_key_of.filter(|&k| k < arg_count && k > 0);
}

/// The key the spec says the item looks up in the map its first argument
/// points to. `RBTree::get(&self, key: &K)`: `None` only for a key absent
/// from the tree.
fn spec_absent_key(r: &spec::RustSpec, arg_count: u32) -> Option<crate::summary::AbsentKey> {
    let k = r.looks_up_key.filter(|&k| k < arg_count && k > 0)?;
    Some(crate::summary::AbsentKey {
        map: crate::summary::ArgPlace {
            arg: 0,
            fields: Vec::new(),
        },
        key: crate::summary::KeyArg {
            arg: k,
            by_ref: true,
        },
        shape: vec![0],
    })
}

/// The handle behind the first argument that the result is a second owner
/// of what it holds, so that the caller learns that the place's objects
/// are held by the result too.
///
/// A sharing clone of a handle copying its only pointer: the result
/// refers to what the handle does, and the handle to what it does.
/// A handle returned as a second owner of what a place behind the
/// first argument holds: a sharing copy of that place's value (`Entry`,
/// a bit copy the body counted), or a handle the place itself still
/// holds with a count of its own (`At`: two owners of one object, since
/// both will be dropped).
fn handle_the_result_shares(
    summary: &Summary,
    from_shared: bool,
    dump: &kmir::CrateDump,
    body: &kmir::Body,
) -> Option<memory::PlaceKey> {
    if let Some(ret) = &summary.liveness.ret
        && let [bound] = ret.iter().collect::<Vec<_>>().as_slice()
        && let [holder] = bound.as_slice()
        && let Some(q) = match holder {
            memory::Holder::Entry(q) if summary.liveness.sharing => Some(q),
            memory::Holder::At(q) if from_shared => Some(q),
            _ => None,
        }
        && q.local == 1
        && q.proj.first() == Some(&memory::ProjKey::Deref)
    {
        let types = crate::liveness::types::FieldTypes::of_body(dump, body);
        let handle = crate::liveness::types::lift(dump, body, &types, q);
        if handle.proj.first() == Some(&memory::ProjKey::Deref)
            && !handle.proj.iter().any(memory::objects::vague)
        {
            return Some(handle);
        }
    }
    None
}

/// What the spec says the body cannot show, in the object-liveness
/// contract's terms: what the result holds or points into, and what the
/// item keeps or drops of its arguments.
fn apply_spec_contract(c: &mut crate::liveness::Contract, r: &spec::RustSpec, arg_count: u32) {
    let arg = |k: u32| (k < arg_count).then_some(k + 1);
    if let Some(l) = r.returns_object_of.and_then(arg) {
        c.ret = Some(memory::Bounds::holder(memory::Holder::Object(
            memory::PlaceKey {
                local: l,
                proj: vec![memory::ProjKey::Deref],
            },
        )));
    }
    if let Some(l) = r.returns_argument.and_then(arg) {
        c.ret = Some(memory::Bounds::holder(memory::Holder::Entry(
            memory::PlaceKey::local(l),
        )));
        // The value moved into the result.
        c.keeps.retain(|(k, _)| *k != l);
        c.keeps
            .push((l, memory::Holder::Within(memory::PlaceKey::local(0))));
    }
    if let Some(l) = r.points_into_object.and_then(arg) {
        c.ret_ref = Some(memory::PlaceKey {
            local: l,
            proj: vec![memory::ProjKey::Deref, memory::ProjKey::Deref],
        });
    }
    if let Some(l) = r.drops_rejected_by.and_then(arg) {
        c.releases_rejected_by = Some(l);
    }
    if let Some(l) = r.keeps_argument.and_then(arg) {
        c.keeps.retain(|(k, _)| *k != l);
        c.keeps.push((
            l,
            memory::Holder::Within(memory::PlaceKey {
                local: 1,
                proj: vec![memory::ProjKey::Deref],
            }),
        ));
    }
}

/// What the spec says of the item's locking and blocking, over what the
/// body shows (`std::sync::Mutex::lock`: the lock is taken in code the
/// body reaches only through atomics and the OS).
fn apply_spec_locking(
    summary: &mut Summary,
    dump: &kmir::CrateDump,
    body: &kmir::Body,
    item_path: &str,
    r: &spec::RustSpec,
    f: FnId,
) {
    let lock = r
        .lock
        .as_ref()
        .and_then(|l| Some((l, crate::rust_spec::lock_location(dump, body, l)?)));
    let guard = lock
        .as_ref()
        .and_then(|(l, loc)| crate::rust_spec::guard_pointer(dump, body, l, loc));
    crate::rust_spec::apply(
        summary,
        item_path,
        r,
        lock.as_ref().map(|(l, loc)| (*l, loc)),
        guard,
        f,
    );
}

/// The values of the result a contract's guarded facts can be about: a
/// `bool`'s two, or the discriminants of a small enum.
pub(crate) fn result_shapes(
    dump: &kmir::CrateDump,
    body: &kmir::Body,
) -> Option<crate::liveness::contract::Shapes> {
    let ty = body.local(0)?.ty;
    match dump.ty(ty).map(|t| &t.kind) {
        Some(kmir::TyKind::Bool) => Some(crate::liveness::contract::Shapes {
            values: vec![0, 1],
            discr: false,
        }),
        _ => {
            let values = dump.enum_of(ty)?.discriminants();
            (values.len() <= 4).then_some(crate::liveness::contract::Shapes {
                values,
                discr: true,
            })
        }
    }
}

/// The field of the return value whose variant the summary's cases speak
/// of: field 0 of a struct wrapping an enum, or what a callee returning
/// such a struct straight into the return place says.
fn ret_field(
    input: &Input<'_>,
    f: FnId,
    dump: &kmir::CrateDump,
    body: &kmir::Body,
    summaries: &dyn Summaries,
) -> Option<u32> {
    body.local(0)
        .and_then(|l| newtype_enum_field(dump, body, l.ty))
        .map(|(field, _)| field)
        .or_else(|| {
            // Returned straight from a callee that returns such a struct
            // (`ScopeGuard::new` returning `new_with_data(..)`).
            input.program.callees(f).into_iter().find_map(|(g, e)| {
                let block = body.block(e.block)?;
                match &block.terminator.kind {
                    kmir::TerminatorKind::Call { destination, .. }
                        if destination.local == 0 && destination.projection.is_empty() =>
                    {
                        summaries.get(g).ret_field
                    }
                    _ => None,
                }
            })
        })
}

/// The entry condition of each run: one per variant of a split function,
/// else one run without a condition.
fn entry_conditions(split: Option<&EntrySplit>) -> Vec<Option<ArgCond>> {
    match split {
        Some(EntrySplit {
            pointee, variants, ..
        }) => variants
            .iter()
            .map(|&d| {
                Some(if *pointee {
                    ArgCond::Pointee(d)
                } else {
                    ArgCond::Value(d)
                })
            })
            .collect(),
        None => vec![None],
    }
}

/// The runs of one function combined: the narrowest expectations (with the
/// reason of the run that narrowed them), the cases of every run, the
/// violations of any, the lock results.
struct Runs {
    expect: ExpectRange,
    reason: Option<Reason>,
    expect_last: ExpectRange,
    reason_last: Option<Reason>,
    /// The owned arguments the runs' `expect_last` is about.
    last_from: Option<std::collections::BTreeSet<u32>>,
    /// The field of `*arg0` the runs' `expect_last` comes from.
    last_field: crate::summary::LastField,
    /// The place below `*arg0` it comes from.
    last_place: crate::summary::LastPlaces,
    /// The body tests whether it dropped a last reference and returns it.
    last_reference_test: bool,
    violations: Vec<Violation>,
    cases: Vec<Case>,
    /// The first run whose returns disagree on the adjustment.
    failed: Option<body::AdjustFailure>,
    /// Each split run's expectation.
    expect_when: Vec<(ArgCond, ExpectRange)>,
    /// Each split run's last-reference expectation.
    expect_last_when: Vec<(ArgCond, ExpectRange)>,
    locks: LockRuns,
    context_sensitive: bool,
    /// What the runs' sites may release, in entry terms (`None`: anything).
    releases: Option<Vec<memory::Bounds>>,
    /// The facts at every return of every run.
    return_facts: Vec<memory::Facts>,
}

impl Default for Runs {
    fn default() -> Self {
        Runs {
            expect: ExpectRange::TOP,
            reason: None,
            expect_last: ExpectRange::TOP,
            reason_last: None,
            last_from: Some(std::collections::BTreeSet::new()),
            last_field: crate::summary::LastField::Nothing,
            last_place: crate::summary::LastPlaces::Nothing,
            last_reference_test: false,
            violations: Vec::new(),
            cases: Vec::new(),
            failed: None,
            expect_when: Vec::new(),
            expect_last_when: Vec::new(),
            locks: LockRuns::default(),
            context_sensitive: false,
            releases: Some(Vec::new()),
            return_facts: Vec::new(),
        }
    }
}

impl Runs {
    fn absorb(
        &mut self,
        run: body::BodyOutcome,
        when: Option<ArgCond>,
        split: Option<&EntrySplit>,
        ret_field: Option<u32>,
        unwritten_args: &[kmir::LocalId],
    ) {
        self.context_sensitive |= run.context_sensitive;
        match (&mut self.releases, &run.releases) {
            (Some(all), Some(r)) => {
                for b in r {
                    if !all.contains(b) {
                        all.push(b.clone());
                    }
                }
            }
            (all, _) => *all = None,
        }
        self.return_facts
            .extend(run.returns.iter().map(|(p, _)| p.facts.clone()));
        if let Some(w) = when {
            self.expect_when.push((w, run.expect));
            self.expect_last_when.push((w, run.expect_last));
        }
        let next = self.expect.intersect(&run.expect);
        if next != self.expect {
            self.expect = next;
            self.reason = run.reason.clone();
        }
        match (&mut self.last_from, &run.last_from) {
            (Some(from), Some(r)) => from.extend(r.iter().copied()),
            (from, _) => *from = None,
        }
        self.last_field = self.last_field.join(run.last_field);
        self.last_place = std::mem::take(&mut self.last_place).join(run.last_place.clone());
        let next = self.expect_last.intersect(&run.expect_last);
        if next != self.expect_last {
            self.expect_last = next;
            self.reason_last = run.reason_last.clone();
        }
        self.locks.absorb(&run);
        for v in run.violations {
            if !self.violations.iter().any(|w| {
                w.block == v.block
                    && w.target.callee == v.target.callee
                    && w.last_reference == v.last_reference
            }) {
                self.violations.push(v);
            }
        }
        match body::cases_at_return(
            &run.returns,
            when,
            split.is_some_and(|s| s.pointee),
            split.and_then(|s| s.field),
            split_aspect(split.is_some_and(|s| s.value)),
            ret_field,
            unwritten_args,
        ) {
            Ok(c) => self.cases.extend(c),
            Err(()) => {
                if self.failed.is_none() {
                    self.failed = Some(body::failure(&run.returns, run.changes));
                }
            }
        }
    }

    /// The inferred summary, the events of the runs, and the first case the
    /// body's returns give (its lock effects, kept even where the
    /// adjustment could not be inferred).
    fn finish(
        mut self,
        split: Option<&EntrySplit>,
        ret_field: Option<u32>,
    ) -> (
        Summary,
        Events,
        Option<Case>,
        Option<Vec<memory::Bounds>>,
        Vec<memory::Facts>,
    ) {
        let releases = std::mem::take(&mut self.releases);
        let return_facts = std::mem::take(&mut self.return_facts);
        let cases = simplify(self.cases);
        let body_effects = cases.first().cloned();
        let expect = self.expect;
        let summary = Summary {
            cases: if self.failed.is_some() {
                vec![Case::always(failure_adjust(&self.failed))]
            } else {
                cases
            },
            expect,
            sleeps_if_flag: None,
            sleeps_if_zero: None,
            // Only worth keeping when the variants differ.
            expect_when: if self.expect_when.iter().all(|(_, e)| *e == expect) {
                Vec::new()
            } else {
                self.expect_when
            },
            source: Source::Inferred,
            reason: self.reason,
            poisoned: self.failed.is_some(),
            takes: std::mem::take(&mut self.locks.takes),
            split_field: split.and_then(|s| s.field),
            split_value: split.is_some_and(|s| s.value),
            ret_field,
            context_sensitive: self.context_sensitive,
            specialised: false,
            expect_last: self.expect_last,
            reason_last: self.reason_last,
            expect_last_when: if self
                .expect_last_when
                .iter()
                .all(|(_, e)| *e == self.expect_last)
            {
                Vec::new()
            } else {
                self.expect_last_when
            },
            last_reference_test: self.last_reference_test,
            open_nestings: std::mem::take(&mut self.locks.open),
            ret_from: None,
            // Only meaningful where something is expected.
            last_from: if self.expect_last == ExpectRange::TOP {
                Some(Vec::new())
            } else {
                self.last_from.map(|f| f.into_iter().collect())
            },
            last_field: if self.expect_last == ExpectRange::TOP {
                None
            } else {
                self.last_field.field()
            },
            last_place: if self.expect_last == ExpectRange::TOP {
                None
            } else {
                self.last_place.place()
            },
            sharing_clone: false,
            identity_test: None,
            same_or_none: None,
            writes: None,
            ret_points: None,
            ret_fresh: true,
            ret_exclusive: false,
            exclusive_field: None,
            keeps_arg: None,
            absent_key: None,
            node_key: None,
            displaces_key_of: None,
            stores_own: Vec::new(),
            liveness: crate::liveness::Contract::unknown(),
        };
        let events = Events {
            violations: self.violations,
            adjust_failure: self.failed,
            locks: self.locks,
            ..Events::default()
        };
        (summary, events, body_effects, releases, return_facts)
    }
}

/// Applies an annotation to the summary inferred from the body; a checked
/// one is returned, with the inferred summary, to be checked against it.
fn apply_declaration(
    summary: &mut Summary,
    d: Declared,
    body_effects: Option<Case>,
) -> Option<(DeclaredView, Box<Summary>)> {
    let checked = (!d.unchecked).then(|| (d_view(&d), Box::new(summary.clone())));
    if let Some(a) = d.adjust {
        // The lock effects of the body still hold.
        let mut case = Case::always(a);
        if let Some(first) = body_effects {
            case.acquire = first.acquire;
            case.release = first.release;
            case.ret_addrs = first.ret_addrs;
        }
        summary.cases = vec![case];
        summary.poisoned = false;
    }
    if let Some(e) = d.expect {
        summary.expect = e;
        summary.expect_when.clear();
        // klint's annotations say nothing about last references: a checked
        // one keeps what the body's teardowns need, so callers are still
        // warned (an unchecked one never reads the body).
        if d.unchecked {
            summary.expect_last = ExpectRange::TOP;
            summary.reason_last = None;
            summary.expect_last_when.clear();
        }
    }
    summary.source = Source::Annotation {
        path: d.path,
        unchecked: d.unchecked,
    };
    checked
}

/// Drops what callers cannot use: the per-variant split when every variant
/// behaves the same, and duplicate cases.
fn simplify(mut cases: Vec<Case>) -> Vec<Case> {
    cases.sort();
    cases.dedup();
    // A function that returns for no entry is taken as returning (klint's
    // view of a call: what follows it is analysed); only a split whose
    // other entries return keeps its diverging cases.
    if cases.iter().all(|c| c.diverges) {
        for c in &mut cases {
            c.diverges = false;
        }
    }
    let informative = cases.iter().any(|c| {
        c.ret.is_some()
            || c.post.is_some()
            || c.post_arg.is_some()
            || c.has_lock_effect()
            || c.diverges
    });
    let uniform = cases.windows(2).all(|w| w[0].adjust == w[1].adjust);
    if uniform && !informative {
        return vec![Case::always(cases.first().map_or(0, |c| c.adjust))];
    }
    // The same outcome for every variant: the condition says nothing.
    let outcomes: Vec<Case> = cases
        .iter()
        .map(|c| Case {
            when: None,
            ..c.clone()
        })
        .collect();
    if outcomes.windows(2).all(|w| w[0] == w[1]) {
        return vec![outcomes[0].clone()];
    }
    cases
}

fn failure_adjust(failed: &Option<body::AdjustFailure>) -> i32 {
    failed
        .as_ref()
        .and_then(|f| {
            f.returns.iter().find_map(|(a, _)| match a {
                domains::Adj::Known(a) => Some(*a),
                domains::Adj::Top => None,
            })
        })
        .unwrap_or(0)
}

/// Whether `--trace` asks for this function's body analysis.
fn analysis_trace(input: &Input<'_>, f: FnId) -> bool {
    input
        .trace
        .is_some_and(|t| !t.is_empty() && input.program.function(f).name.contains(t))
}

/// The drops of an iterator its `next` found empty (the spec's
/// `empty_after_none`): nothing is left in it to release.
fn exhausted_drops(
    input: &Input<'_>,
    f: FnId,
    body: &kmir::Body,
    sites: &std::collections::HashMap<kmir::BlockId, Vec<body::Target>>,
    trace: bool,
) -> Vec<kmir::BlockId> {
    let mut nexts: Vec<kmir::BlockId> = sites
        .iter()
        .filter(|(_, targets)| {
            targets.iter().any(|t| {
                t.kind == program::EdgeKind::Call
                    && input
                        .spec
                        .rust_item(&input.program.function(t.callee).item_path)
                        .is_some_and(|r| r.empty_after_none)
            })
        })
        .map(|(&block, _)| block)
        .collect();
    if nexts.is_empty() {
        return Vec::new();
    }
    nexts.sort_unstable();
    let exhausted = body::exhausted::exhausted_drops(body, |block| nexts.contains(&block));
    if trace {
        eprintln!(
            "[kanalyze trace] `{}`: `next` calls found empty after `None` at {nexts:?}; drops of an exhausted iterator at {exhausted:?}",
            input.program.function(f).name
        );
    }
    exhausted
}

/// Whether the function takes a shared reference first and returns a
/// handle (a struct around a pointer, not a reference): when what it
/// returns is a bit copy of a handle stored behind that reference, it holds
/// a count of its own, as a `Clone::clone` does, since safe code cannot
/// otherwise give out a second owner of what it only borrows
/// (`ListArc::clone_arc` returning a clone of the `Arc` inside).
fn returns_handle_from_shared(dump: &kmir::CrateDump, body: &kmir::Body) -> bool {
    let shared_first = body.arg_count >= 1
        && body.local(1).is_some_and(|l| {
            matches!(
                dump.ty(l.ty).map(|t| &t.kind),
                Some(kmir::TyKind::Ref { mutable: false, .. })
            )
        });
    shared_first
        && body.local(0).is_some_and(|l| {
            matches!(
                dump.ty(l.ty).map(|t| &t.kind),
                Some(kmir::TyKind::Adt { .. })
            ) && !crate::liveness::types::is_plain_pointer(dump, l.ty)
                && crate::liveness::types::sole_field(dump, l.ty).is_some()
        })
}

/// Whether the result is a bit copy of one place behind the first
/// argument (its contract's only holder is that place's entry value) that
/// the body's write summary never writes in place, while it writes into
/// the object the copied pointer points to (the count).
fn copied_and_counted(summary: &crate::summary::Summary) -> bool {
    let Some(ret) = &summary.liveness.ret else {
        return false;
    };
    let [bound] = ret.iter().collect::<Vec<_>>()[..] else {
        return false;
    };
    let [memory::Holder::Entry(q)] = bound.as_slice() else {
        return false;
    };
    if q.local != 1 || q.proj.first() != Some(&memory::ProjKey::Deref) {
        return false;
    }
    let steps: Option<Vec<u16>> = q.proj[1..]
        .iter()
        .map(|s| match s {
            memory::ProjKey::Field(i) => u16::try_from(*i).ok(),
            memory::ProjKey::Downcast(v) => u16::try_from(*v).ok().map(|v| v | 0x8000),
            _ => None,
        })
        .collect();
    let (Some(steps), Some(writes)) = (steps, &summary.writes) else {
        return false;
    };
    let behind = |path: &crate::summary::FieldPath| path.through_pointer() || path.through_handle();
    // Not written in place…
    let unwritten = !writes.iter().any(|(arg, path)| {
        let w = path.steps();
        *arg == 0 && !behind(path) && (w.starts_with(&steps) || steps.starts_with(w))
    });
    // …and the object the copied handle points to is written: its count
    // goes up (`refcount_inc`). A bit copy made with nothing written there
    // (`ptr::read`) is no second owner.
    let counted = writes
        .iter()
        .any(|(arg, path)| *arg == 0 && behind(path) && path.steps().starts_with(&steps));
    unwritten && counted
}
