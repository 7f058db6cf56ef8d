//! Per-body results of the phases that walk every body, kept per dump.
//!
//! The link, the invariants and the checks each read every body once for
//! something that depends on that body and its dump alone (the link's
//! call sites by symbol, the invariants' stores of a field, the checks'
//! casts). [`Program::per_body`] runs such a computation on every body it
//! is given, or takes its result from the crate's [`Memo`]: results a
//! previous run computed from the same dump's bytes (the analyser's
//! per-dump cache recalls them under the hash of the file), so that an
//! unchanged dump's bodies are not decoded at all.
//!
//! What makes this sound is what a phase may put in a memo: a function of
//! the body and its dump only (never of another dump, of the linked
//! program's symbol table or of which copy of an instance the link chose),
//! stored under a label naming the computation and every setting it reads.
//! Whatever depends on other dumps is computed on every run from these
//! results.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use bincode::{Decode, Encode};
use rayon::prelude::*;

use crate::{FnId, FnKind, Function, LinkedCrate, Program, lock};

/// One phase's results for every instance of a dump, encoded
/// (`None`: not computed, or no body).
pub type PhaseResults = Vec<Option<Box<[u8]>>>;

/// A crate's per-body results: those recalled from the cache, and those
/// this run computed (what the cache adds for the next run).
#[derive(Debug, Default)]
pub struct Memo {
    /// By phase label: recalled from the cache, until the phase has run
    /// (then freed: the cache reads its entry again if it must rewrite it).
    recalled: Mutex<BTreeMap<String, std::sync::Arc<PhaseResults>>>,
    /// By phase label: the phases this run went through, with the results
    /// it computed (empty when it computed none).
    used: Mutex<BTreeMap<String, PhaseResults>>,
    /// Whether this run computed a result that was not recalled.
    computed: AtomicBool,
    /// Whether the cache held an entry for the dump.
    on_disk: bool,
}

impl Memo {
    /// A memo holding `recalled` (phase label → per-instance results,
    /// `None` when the cache held no entry for the dump) for a dump of
    /// `instances` instances; a phase whose vector has another length is
    /// not this dump's and is dropped.
    pub fn new(recalled: Option<BTreeMap<String, PhaseResults>>, instances: usize) -> Memo {
        Memo {
            on_disk: recalled.is_some(),
            recalled: Mutex::new(
                recalled
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(_, v)| v.len() == instances)
                    .map(|(phase, v)| (phase, std::sync::Arc::new(v)))
                    .collect(),
            ),
            used: Mutex::new(BTreeMap::new()),
            computed: AtomicBool::new(false),
        }
    }

    /// Whether the cache held an entry for the dump.
    pub fn on_disk(&self) -> bool {
        self.on_disk
    }

    /// The results recalled for `phase`, taken: a phase runs once.
    fn take_recalled(&self, phase: &str) -> Option<std::sync::Arc<PhaseResults>> {
        lock(&self.recalled).remove(phase)
    }

    /// Whether this run computed results the memo did not hold.
    pub fn computed(&self) -> bool {
        self.computed.load(Ordering::Relaxed)
    }

    /// The phases this run went through, each with the results it
    /// computed (a vector per instance, or empty when it computed none):
    /// what the cache adds to the dump's entry.
    pub fn computed_results(&self) -> BTreeMap<String, PhaseResults> {
        lock(&self.used).clone()
    }
}

/// The bincode configuration of memo entries: bounded, since they are read
/// back from a file (whose checksum has been checked).
fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ 1 << 26 }>()
}

impl Program {
    /// `compute` on the body of each of `ids` (in parallel), in the order
    /// of `ids` (`None` for a function without a body). For a crate with a
    /// memo, a result recalled under `phase` is decoded instead of the
    /// body, and each result computed is kept for the cache.
    ///
    /// `compute` must read nothing but the body and its crate's dump, and
    /// `phase` must name everything else it depends on (a setting): a
    /// result is recalled for any run over the same dump's bytes. The
    /// recalled results of `phase` are freed once it has run: a phase run
    /// again in the same process (the invariants audit's reruns of the
    /// checks) decodes the bodies, as without the cache.
    pub fn per_body<T, F>(&self, phase: &str, ids: &[FnId], compute: F) -> Vec<Option<T>>
    where
        T: Encode + Decode<()> + Send,
        F: Fn(&LinkedCrate, u32, &kmir::Body) -> T + Sync,
    {
        per_body(&self.crates, &self.functions, phase, ids, compute)
    }
}

/// One body's result: its value, and its encoding when it was computed
/// (for the cache).
type Found<T> = (T, Option<Box<[u8]>>);

/// [`Program::per_body`] over the crates and functions of a program
/// being linked.
pub(crate) fn per_body<T, F>(
    crates: &[LinkedCrate],
    functions: &[Function],
    phase: &str,
    ids: &[FnId],
    compute: F,
) -> Vec<Option<T>>
where
    T: Encode + Decode<()> + Send,
    F: Fn(&LinkedCrate, u32, &kmir::Body) -> T + Sync,
{
    // Each crate's recalled results of this phase, freed once it has run.
    let recalled: Vec<Option<std::sync::Arc<PhaseResults>>> = crates
        .iter()
        .map(|c| c.memo.as_ref().and_then(|m| m.take_recalled(phase)))
        .collect();
    let results: Vec<Option<Found<T>>> = ids
        .par_iter()
        .map(|&id| {
            let FnKind::Body { krate, instance } = functions[id.index()].kind else {
                return None;
            };
            let c = &crates[krate as usize];
            if let Some(Some(r)) = recalled.get(krate as usize)
                && let Some(Some(bytes)) = r.get(instance as usize)
                && let Ok((value, n)) = bincode::decode_from_slice::<T, _>(bytes, config())
                && n == bytes.len()
            {
                return Some((value, None));
            }
            let body = c.body(instance)?;
            let value = compute(c, instance, &body);
            let bytes = c.memo.as_ref().and_then(|_| {
                bincode::encode_to_vec(&value, config())
                    .ok()
                    .map(Vec::into_boxed_slice)
            });
            Some((value, bytes))
        })
        .collect();
    // Every crate with a memo notes the phase; what was computed is kept,
    // serially, crate by crate.
    let mut fresh: Vec<Vec<(u32, Box<[u8]>)>> = (0..crates.len()).map(|_| Vec::new()).collect();
    let values = ids
        .iter()
        .zip(results)
        .map(|(&id, r)| {
            let (value, bytes) = r?;
            if let (Some(bytes), FnKind::Body { krate, instance }) =
                (bytes, &functions[id.index()].kind)
                && let Some(v) = fresh.get_mut(*krate as usize)
            {
                v.push((*instance, bytes));
            }
            Some(value)
        })
        .collect();
    for (c, fresh) in crates.iter().zip(fresh) {
        let Some(memo) = &c.memo else { continue };
        let mut used = lock(&memo.used);
        let slots = used.entry(phase.to_string()).or_default();
        if fresh.is_empty() {
            continue;
        }
        memo.computed.store(true, Ordering::Relaxed);
        if slots.is_empty() {
            slots.resize(c.dump.instances.len(), None);
        }
        for (instance, bytes) in fresh {
            if let Some(slot) = slots.get_mut(instance as usize) {
                *slot = Some(bytes);
            }
        }
    }
    values
}
