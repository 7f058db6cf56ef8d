//! One crate's dump: which instances, statics and items go in, and the header.

use std::cell::RefCell;
use std::collections::BTreeMap;

use rustc_hir::def::DefKind;
use rustc_middle::mono::MonoItem;
use rustc_middle::ty::{self, TyCtxt};
use rustc_span::def_id::{DefId, LOCAL_CRATE};

use crate::timings::{self, Phase};
use crate::translate::{Translator, def_path};

/// Bound on the instances added beyond codegen's mono items; the compiler's
/// own recursion limit keeps real programs far below it.
const MAX_EXTRA_INSTANCES: usize = 200_000;

/// Set to a definition path, extraction raises a real compiler bug (`bug!`)
/// when it reaches that item: the end-to-end tests use it to check that a
/// compiler bug during extraction leaves the build alone.
pub const INJECT_BUG_VAR: &str = "KEXTRACT_INJECT_BUG";

thread_local! {
    /// The item being translated (what, which definition, its symbol), so a
    /// failure can name it after the translator has unwound.
    static CURRENT: RefCell<Option<(&'static str, Option<DefId>, String)>> =
        const { RefCell::new(None) };
}

pub fn clear_current_item() {
    CURRENT.with(|c| *c.borrow_mut() = None);
}

/// The item extraction was working on, for a failure message.
pub fn current_item(tcx: TyCtxt<'_>) -> Option<String> {
    CURRENT.with(|c| {
        c.borrow().as_ref().map(|(what, def, symbol)| match def {
            Some(def) => format!("{what} `{}` (symbol `{symbol}`)", def_path(tcx, *def)),
            None => what.to_string(),
        })
    })
}

/// Records the item about to be translated; raises the injected bug there.
fn enter(
    tcx: TyCtxt<'_>,
    inject: Option<&str>,
    what: &'static str,
    def: Option<DefId>,
    symbol: &str,
) {
    CURRENT.with(|c| *c.borrow_mut() = Some((what, def, symbol.to_string())));
    if let (Some(target), Some(def)) = (inject, def)
        && def_path(tcx, def) == target
    {
        tcx.dcx().bug(format!(
            "{INJECT_BUG_VAR}: injected compiler bug at `{target}`"
        ));
    }
}

/// Builds the dump of the crate being compiled. Must run inside
/// `rustc_internal::run` (the rustc_public context).
pub fn extract_crate(tcx: TyCtxt<'_>) -> Result<kmir::CrateDump, String> {
    // Exactly the items codegen will emit: the compiler's own collector and
    // partitioner (the query result is cached, so codegen reuses it).
    let inject = std::env::var(INJECT_BUG_VAR).ok();
    let inject = inject.as_deref();
    let partitions = tcx.collect_and_partition_mono_items(());
    let mut fns = BTreeMap::new();
    let mut statics = BTreeMap::new();
    for cgu in partitions.codegen_units {
        for item in cgu.items().keys() {
            match *item {
                MonoItem::Fn(instance) => {
                    fns.insert(tcx.symbol_name(instance).name.to_string(), instance);
                }
                MonoItem::Static(def_id) => {
                    let instance = ty::Instance::mono(tcx, def_id);
                    statics.insert(tcx.symbol_name(instance).name.to_string(), def_id);
                }
                MonoItem::GlobalAsm(_) => {}
            }
        }
    }

    let mut tr = Translator::new(tcx);
    let mut instances = Vec::with_capacity(fns.len());
    for symbol in fns.keys() {
        tr.mark_defined(symbol);
    }
    timings::time(Phase::Codegenned, || -> Result<(), String> {
        for (symbol, instance) in fns {
            enter(tcx, inject, "function", Some(instance.def_id()), &symbol);
            instances.push(tr.instance(symbol, instance, true)?);
        }
        Ok(())
    })?;
    let added_start = std::time::Instant::now();
    // Small non-generic functions are cross-crate inlinable: codegen emits
    // them only where they are used. Their callers' dumps would carry only
    // their optimized MIR, so dump every local monomorphic function here too.
    for local in tcx.hir_body_owners() {
        let def_id = local.to_def_id();
        if !matches!(tcx.def_kind(def_id), DefKind::Fn | DefKind::AssocFn)
            || tcx.generics_of(def_id).requires_monomorphization(tcx)
            || !tcx.is_mir_available(def_id)
        {
            continue;
        }
        let instance = ty::Instance::mono(tcx, def_id);
        tr.enqueue(tcx.symbol_name(instance).name.to_string(), instance);
    }
    // Our bodies are taken before inlining, so they may call instances that
    // codegen never emitted (inlined everywhere): add those too, transitively.
    let mut extra = 0usize;
    while let Some((symbol, instance)) = tr.next_pending() {
        extra += 1;
        if extra > MAX_EXTRA_INSTANCES {
            return Err(format!(
                "more than {MAX_EXTRA_INSTANCES} instances reachable only through inlined calls (unbounded polymorphic recursion?)"
            ));
        }
        enter(tcx, inject, "function", Some(instance.def_id()), &symbol);
        instances.push(tr.instance(symbol, instance, false)?);
    }
    timings::add(Phase::Added, added_start);
    let rest_start = std::time::Instant::now();
    instances.sort_by(|a, b| a.symbol.cmp(&b.symbol));
    let mut static_items = Vec::with_capacity(statics.len());
    for (symbol, def_id) in statics {
        enter(tcx, inject, "static", Some(def_id), &symbol);
        static_items.push(tr.static_item(symbol, def_id)?);
    }
    enter(tcx, inject, "the tool attributes", None, "");
    let items = tr.tool_attributes();
    clear_current_item();
    timings::add(Phase::Rest, rest_start);

    let header = kmir::Header {
        producer: format!("kextract {}", env!("CARGO_PKG_VERSION")).into(),
        rustc_version: env!("KEXTRACT_RUSTC_VERSION").to_string().into(),
        crate_name: tcx.crate_name(LOCAL_CRATE).to_string().into(),
        crate_types: tcx
            .crate_types()
            .iter()
            .map(|t| t.to_string().into())
            .collect(),
        target: tcx.sess.opts.target_triple.to_string().into(),
        stable_crate_id: tcx.stable_crate_id(LOCAL_CRATE).as_u64(),
        edition: tcx.sess.edition().to_string().into(),
        drop_elaborated_mir: true,
        host: rustc_session::config::host_tuple().into(),
        dependencies: dependencies(tcx),
    };
    Ok(tr.finish(header, instances, static_items, items))
}

/// Every crate of the crate graph whose code the crate may link: all but
/// proc macros (and crates loaded only for their macros), each with whether
/// the compiler found it in its sysroot (a prebuilt standard library crate,
/// which no build compiles and so never dumps).
fn dependencies(tcx: TyCtxt<'_>) -> Vec<kmir::Dependency> {
    let sysroot_lib = &tcx.sess.target_tlib_path.dir;
    tcx.crates(())
        .iter()
        .filter(|&&cnum| !tcx.crate_dep_kind(cnum).macros_only())
        .map(|&cnum| {
            let source = tcx.used_crate_source(cnum);
            let mut paths = source.paths().peekable();
            let sysroot = paths.peek().is_some() && paths.all(|p| p.starts_with(sysroot_lib));
            kmir::Dependency {
                name: tcx.crate_name(cnum).to_string().into(),
                stable_crate_id: tcx.stable_crate_id(cnum).as_u64(),
                sysroot,
            }
        })
        .collect()
}
