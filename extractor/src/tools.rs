//! The `klint` and `kanalyze` tool namespaces, registered through the
//! compiler's own list of registered tools.
//!
//! klint-annotated code (`#[klint::preempt_count(…)]`) needs `klint` to be a
//! registered tool. Plain rustc gets it from `#![feature(register_tool)]` and
//! `#![register_tool(klint)]` (in the source or via `-Zcrate-attr`), and
//! registering a tool twice is an error. So instead of adding attributes —
//! which would have to guess from text whether the crate already has them —
//! we wrap the `registered_tools` query: rustc's own provider computes the
//! list from the parsed, cfg-expanded crate attributes (after `-Zcrate-attr`
//! injection) and reports the crate's own mistakes exactly as rustc would;
//! we then add the two tools if they are not already there, the way rustc
//! itself adds `clippy`, `rustfmt` and its other predefined tools. Nothing
//! is added to the crate, so no feature gate is involved and every spelling
//! the crate or command line uses behaves as under plain rustc.

use std::sync::OnceLock;

use rustc_middle::ty::{RegisteredTools, TyCtxt};
use rustc_middle::util::Providers;
use rustc_session::Session;
use rustc_span::{Ident, Symbol};

/// The tools kanalyze's annotations live in.
const TOOLS: [&str; 2] = ["klint", "kanalyze"];

type RegisteredToolsProvider = for<'tcx> fn(TyCtxt<'tcx>, ()) -> RegisteredTools;

static ORIGINAL: OnceLock<RegisteredToolsProvider> = OnceLock::new();

pub fn override_queries(_sess: &Session, providers: &mut Providers) {
    let _ = ORIGINAL.set(providers.queries.registered_tools);
    providers.queries.registered_tools = registered_tools;
}

fn registered_tools(tcx: TyCtxt<'_>, (): ()) -> RegisteredTools {
    let mut tools = match ORIGINAL.get() {
        Some(original) => original(tcx, ()),
        // `override_queries` stores the original before installing us.
        None => unreachable!("kextract: registered_tools wrapper installed without the original"),
    };
    for tool in TOOLS {
        // `Ident` compares by name and hygiene context, not span, so a tool
        // the crate registered itself is found and kept with its own span.
        let ident = Ident::with_dummy_span(Symbol::intern(tool));
        if !tools.contains(&ident) {
            tools.insert(ident);
        }
    }
    tools
}
