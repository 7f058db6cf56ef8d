//! Keeping the MIR the analysis needs: a copy of each local body right after
//! drop elaboration, before the optimisation passes (inlining above all) that
//! could erase a call to an annotated function or merge drops.
//!
//! `rustc_public` only offers the optimized MIR (`Instance::body()`), so this
//! is the one narrow use of compiler internals that changes how we get MIR
//! (the approach klint takes): the `optimized_mir` query is wrapped so that,
//! just before the original provider steals `mir_drops_elaborated_and_const_checked`,
//! we clone it into the compiler's arena. The original provider then runs
//! unchanged, so the objects the build produces are exactly rustc's.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use rustc_middle::mir::Body;
use rustc_middle::ty::TyCtxt;
use rustc_middle::util::Providers;
use rustc_session::Session;
use rustc_span::def_id::LocalDefId;

type OptimizedMir = for<'tcx> fn(TyCtxt<'tcx>, LocalDefId) -> &'tcx Body<'tcx>;

static ORIGINAL: OnceLock<OptimizedMir> = OnceLock::new();

/// Arena addresses of the stashed bodies. The arena lives as long as the one
/// `TyCtxt` of this process, which outlives every reader (`get`).
static STASH: Mutex<Option<HashMap<LocalDefId, usize>>> = Mutex::new(None);

pub fn override_queries(_sess: &Session, providers: &mut Providers) {
    let _ = ORIGINAL.set(providers.queries.optimized_mir);
    providers.queries.optimized_mir = optimized_mir;
}

fn optimized_mir<'tcx>(tcx: TyCtxt<'tcx>, def: LocalDefId) -> &'tcx Body<'tcx> {
    // Constructors never had pre-optimisation MIR (rustc builds them directly).
    if !tcx.is_constructor(def.to_def_id()) {
        let elaborated = tcx.mir_drops_elaborated_and_const_checked(def);
        let copy: &'tcx Body<'tcx> = crate::timings::time(crate::timings::Phase::Stash, || {
            tcx.arena.alloc(elaborated.borrow().clone())
        });
        if let Ok(mut stash) = STASH.lock() {
            stash
                .get_or_insert_with(HashMap::new)
                .insert(def, copy as *const Body<'tcx> as usize);
        }
    }
    match ORIGINAL.get() {
        Some(original) => original(tcx, def),
        // `override_queries` stores the original before installing us.
        None => unreachable!("kextract: optimized_mir wrapper installed without the original"),
    }
}

/// The drop-elaborated body of a local item, if the compiler built its
/// optimized MIR in this session (not when it came from the incremental cache).
pub fn get<'tcx>(_tcx: TyCtxt<'tcx>, def: LocalDefId) -> Option<&'tcx Body<'tcx>> {
    let stash = STASH.lock().ok()?;
    let addr = *stash.as_ref()?.get(&def)?;
    // SAFETY: `addr` is a `&'tcx Body<'tcx>` allocated in this process's only
    // `TyCtxt` arena (see `optimized_mir`); the caller's `tcx` proves that
    // context is still alive.
    Some(unsafe { &*(addr as *const Body<'tcx>) })
}
