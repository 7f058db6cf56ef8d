//! Which dumps make the program: one per crate, all of one target. The
//! rest is left out with a [`LinkProblem`] saying why.

use std::collections::{BTreeMap, HashMap};

use kmir::Name;

use crate::LinkedCrate;

use super::{HostCrate, HostReason, LinkOptions, LinkProblem};

/// Sorts the dumps by crate name, crate id and path, so that every "first
/// wins" rule of the link is the same for any order of the inputs.
pub(super) fn sort(crates: &mut [LinkedCrate]) {
    crates.sort_by(|a, b| {
        (
            &a.dump.header.crate_name,
            a.dump.header.stable_crate_id,
            &a.path,
        )
            .cmp(&(
                &b.dump.header.crate_name,
                b.dump.header.stable_crate_id,
                &b.path,
            ))
    });
}

/// Keeps one dump per crate (name and id): an identical copy is dropped,
/// and of conflicting copies the newer file wins.
pub(super) fn one_dump_per_crate(crates: &mut Vec<LinkedCrate>, problems: &mut Vec<LinkProblem>) {
    let mut seen: HashMap<(Name, u64), usize> = HashMap::new();
    let mut keep = vec![true; crates.len()];
    for i in 0..crates.len() {
        let key = (
            crates[i].dump.header.crate_name.clone(),
            crates[i].dump.header.stable_crate_id,
        );
        match seen.get(&key) {
            Some(&first) => {
                let crate_name = key.0.to_string();
                if crates[first].same_content(&crates[i]) {
                    keep[i] = false;
                    let (kept, skipped) = (crates[first].path.clone(), crates[i].path.clone());
                    problems.push(LinkProblem::IdenticalDuplicate {
                        crate_name,
                        kept,
                        skipped,
                    });
                    continue;
                }
                // Conflicting copies: a stale dump next to a fresh one is the
                // usual cause, so the newer file wins.
                let newer = crates[i].modified > crates[first].modified;
                let (winner, loser) = if newer { (i, first) } else { (first, i) };
                keep[loser] = false;
                seen.insert(key, winner);
                problems.push(LinkProblem::ConflictingDuplicate {
                    crate_name,
                    kept: crates[winner].path.clone(),
                    skipped: crates[loser].path.clone(),
                });
            }
            None => {
                seen.insert(key, i);
            }
        }
    }
    let mut k = keep.iter();
    crates.retain(|_| *k.next().unwrap_or(&true));
}

/// Keeps the dumps of the program's target (a kernel build also compiles
/// host tools and proc-macro dependencies through RUSTC): see
/// [`program_target`].
pub(super) fn only_program_target(
    mut crates: Vec<LinkedCrate>,
    options: &LinkOptions<'_>,
    problems: &mut Vec<LinkProblem>,
) -> Vec<LinkedCrate> {
    let program_target = program_target(&crates, options);
    if crates
        .iter()
        .any(|c| c.dump.header.target != program_target.as_str())
    {
        let reasons = host_reasons(&crates, &program_target);
        let mut hosts: Vec<HostCrate> = Vec::new();
        let mut others: BTreeMap<String, Vec<(String, std::path::PathBuf)>> = BTreeMap::new();
        for (c, why) in crates.iter().zip(reasons) {
            if c.dump.header.target == program_target.as_str() {
                continue;
            }
            match why {
                Some(why) => hosts.push(HostCrate {
                    name: c.dump.header.crate_name.to_string(),
                    path: c.path.clone(),
                    target: c.dump.header.target.to_string(),
                    why,
                }),
                None => others
                    .entry(c.dump.header.target.to_string())
                    .or_default()
                    .push((c.dump.header.crate_name.to_string(), c.path.clone())),
            }
        }
        let (kept, left_out): (Vec<LinkedCrate>, Vec<LinkedCrate>) = crates
            .into_iter()
            .partition(|c| c.dump.header.target == program_target.as_str());
        crates = kept;
        // Freeing their dumps is serial work the link does not wait for.
        rayon::spawn(move || drop(left_out));
        if !hosts.is_empty() {
            hosts.sort_by(|a, b| (&a.name, &a.path).cmp(&(&b.name, &b.path)));
            problems.push(LinkProblem::HostCrates {
                program_target: program_target.clone(),
                crates: hosts,
            });
        }
        for (target, mut left) in others {
            left.sort();
            problems.push(LinkProblem::OtherTarget {
                target,
                program_target: program_target.clone(),
                crates: left.iter().map(|(n, _)| n.clone()).collect(),
                paths: left.into_iter().map(|(_, p)| p).collect(),
            });
        }
    }
    crates
}

/// The program's target: among the dumps whose target the options prefer
/// (all when none is), the target with the most instances (a build's host
/// crates are a small part of it).
fn program_target(crates: &[LinkedCrate], options: &LinkOptions<'_>) -> String {
    let preferred = |c: &&LinkedCrate| {
        options
            .prefer
            .is_none_or(|ok| ok(c.dump.header.target.as_str()))
    };
    let mut candidates: Vec<&LinkedCrate> = crates.iter().filter(preferred).collect();
    if candidates.is_empty() {
        candidates = crates.iter().collect();
    }
    let mut by_target: BTreeMap<&str, usize> = BTreeMap::new();
    for c in candidates {
        *by_target.entry(c.dump.header.target.as_str()).or_default() += c.dump.instances.len() + 1;
    }
    by_target
        .iter()
        .max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t)))
        .map(|(t, _)| t.to_string())
        .unwrap_or_default()
}

/// For each crate of another target than `program_target`, why it is one
/// of the build's host crates, or `None` when it is not one (and `None`
/// for the program's own crates). A crate every dump depending on which is
/// a host crate is one too, found by iterating to a fixed point.
fn host_reasons(crates: &[LinkedCrate], program_target: &str) -> Vec<Option<HostReason>> {
    let mut reasons: Vec<Option<HostReason>> = crates
        .iter()
        .map(|c| {
            let h = &c.dump.header;
            if h.target == program_target {
                None
            } else if h.target == h.host {
                Some(HostReason::BuiltForHost)
            } else if h.crate_types.iter().any(|t| t == "proc-macro") {
                Some(HostReason::ProcMacro)
            } else if c.dump.instances.is_empty()
                && c.dump.statics.is_empty()
                && c.dump.vtables.is_empty()
                && c.dump.items.is_empty()
            {
                Some(HostReason::Empty)
            } else {
                None
            }
        })
        .collect();
    // Who depends on each crate (by name and id).
    let users =
        |i: usize| -> Vec<usize> {
            let h = &crates[i].dump.header;
            crates
                .iter()
                .enumerate()
                .filter(|(j, c)| {
                    *j != i
                        && c.dump.header.dependencies.iter().any(|d| {
                            d.name == h.crate_name && d.stable_crate_id == h.stable_crate_id
                        })
                })
                .map(|(j, _)| j)
                .collect()
        };
    loop {
        let mut changed = false;
        for i in 0..crates.len() {
            if reasons[i].is_some() || crates[i].dump.header.target == program_target {
                continue;
            }
            let by = users(i);
            if !by.is_empty() && by.iter().all(|&j| reasons[j].is_some()) {
                let mut names: Vec<String> = by
                    .iter()
                    .map(|&j| crates[j].dump.header.crate_name.to_string())
                    .collect();
                names.sort();
                names.dedup();
                reasons[i] = Some(HostReason::UsedOnlyBy(names));
                changed = true;
            }
        }
        if !changed {
            return reasons;
        }
    }
}
