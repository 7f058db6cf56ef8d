//! Canonical names: every function named as the crate that defines it
//! would print it, whichever dump it was read from.

use std::collections::{BTreeSet, HashSet};

use rayon::prelude::*;

use crate::LinkedCrate;

/// Names as every dump would print them. A crate prints an item of another
/// crate by its visible path, which can go through an `extern crate` item
/// of a third crate: `proc_macro2::alloc::vec::Vec::<u8>::reserve` for
/// `alloc::vec::Vec::<u8>::reserve` (proc_macro2 has `extern crate alloc`),
/// rustdoc's merged doctests print
/// `doctests_kernel_generated::rust_doctest_…::kernel::f` for `kernel::f`,
/// also inside generic arguments. The canonical path starts at the crate
/// that defines the item, so a path that starts with a crate's name and
/// later reaches a segment naming another crate of the program (or the
/// item's own crate) is cut to start there, unless the path up to that
/// segment is a real module of the program (`kernel::alloc` is the
/// kernel's module, not the `alloc` crate): one that the definition path
/// of some instance, external or ADT runs through. Paths that start at a
/// standard library crate are left alone (`core::alloc`, `std::alloc` are
/// modules, and the standard library prints no other crate through its
/// own).
pub(super) struct Canonical<'a> {
    /// Crate names: the linked crates, the crates of upstream externals and
    /// the standard library's.
    crates: BTreeSet<&'a str>,
    /// Every module (and type) path that a definition path runs through:
    /// `kernel`, `kernel::alloc`, `kernel::alloc::kvec`, ….
    modules: HashSet<&'a str>,
}

/// The standard library's crates: paths starting at them are canonical.
const STD_CRATES: [&str; 4] = ["core", "alloc", "std", "compiler_builtins"];

impl<'a> Canonical<'a> {
    pub(super) fn new(crates: &'a [LinkedCrate]) -> Self {
        let mut names: BTreeSet<&str> = STD_CRATES.into();
        let first = |path: &'a str| path.split("::").next().unwrap_or_default();
        for c in crates {
            names.insert(&c.dump.header.crate_name);
            for e in &c.dump.externals {
                if let kmir::ExternalKind::Upstream { krate } = &e.kind {
                    names.insert(krate);
                }
            }
        }
        // A definition path starts with its crate's name: every instance's,
        // gathered in parallel (a set is the same in any order).
        let of_instances = crates
            .par_iter()
            .flat_map(|c| c.dump.instances.par_iter())
            .fold(BTreeSet::new, |mut set, i| {
                let krate = first(&i.item_path);
                if !krate.is_empty() && krate.chars().all(ident) {
                    set.insert(krate);
                }
                set
            })
            .reduce(BTreeSet::new, union);
        names.extend(of_instances);
        // Only modules named like a crate are ever asked about (`name`
        // asks whether a path up to a crate's name is a module), so only
        // those are kept: the set stays small on the kernel's dumps.
        let paths = |c: &'a LinkedCrate| {
            let externals = c.dump.externals.par_iter().map(|e| (&*e.item_path, false));
            let instances = c.dump.instances.par_iter().map(|i| (&*i.item_path, false));
            // The ADT itself is a path other paths run through.
            let adts = c.dump.adts.par_iter().map(|a| (&*a.path, true));
            externals.chain(instances).chain(adts)
        };
        let modules = crates
            .par_iter()
            .flat_map(paths)
            .fold(HashSet::new, |mut modules, (path, whole)| {
                record_modules(&names, path, whole, &mut modules);
                modules
            })
            .reduce(HashSet::new, union);
        Canonical {
            crates: names,
            modules,
        }
    }

    /// `name`, printed by `dump_crate`, for an item of `item_path`.
    pub(super) fn name(&self, name: &str, item_path: &str, dump_crate: &str) -> String {
        let item_crate = item_path.split("::").next().unwrap_or_default();
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        let mut out = String::with_capacity(name.len());
        let mut rest = name;
        // Each path in `name` that starts at a boundary with a crate's name.
        while let Some(at) = rest.find("::") {
            let first_start = rest[..at].rfind(|c: char| !ident(c)).map_or(0, |i| i + 1);
            let first = &rest[first_start..at];
            let starts_path = if first_start == 0 {
                !out.ends_with("::")
            } else {
                !rest[..first_start].ends_with("::")
            };
            let is_start = starts_path
                && !first.is_empty()
                && !STD_CRATES.contains(&first)
                && (first == dump_crate || self.crates.contains(first));
            if !is_start {
                out.push_str(&rest[..at + 2]);
                rest = &rest[at + 2..];
                continue;
            }
            out.push_str(&rest[..first_start]);
            let path = &rest[first_start..];
            // The segments after the first, and the offset of the first that
            // names another crate and is not a module of the program.
            let mut cut = None;
            let mut offset = first.len() + 2;
            while let Some(len) = path[offset..]
                .find(|c: char| !ident(c))
                .filter(|&len| len > 0 && path[offset + len..].starts_with("::"))
            {
                let seg = &path[offset..offset + len];
                if seg != first
                    && (seg == item_crate || self.crates.contains(seg))
                    && !self.modules.contains(&path[..offset + len])
                {
                    cut = Some(offset);
                    break;
                }
                offset += len + 2;
            }
            match cut {
                // Go on from the crate's name: the rest of the path may go
                // through another `extern crate` again.
                Some(offset) => rest = &path[offset..],
                None => {
                    out.push_str(&path[..first.len() + 2]);
                    rest = &path[first.len() + 2..];
                }
            }
        }
        out.push_str(rest);
        out
    }
}

fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The union of two sets, into the larger.
fn union<S: IntoIterator + Extend<S::Item> + Len>(mut a: S, mut b: S) -> S {
    if a.len() < b.len() {
        std::mem::swap(&mut a, &mut b);
    }
    a.extend(b);
    a
}

/// The length of a set, for [`union`].
trait Len {
    fn len(&self) -> usize;
}

impl<T> Len for BTreeSet<T> {
    fn len(&self) -> usize {
        BTreeSet::len(self)
    }
}

impl<T> Len for HashSet<T> {
    fn len(&self) -> usize {
        HashSet::len(self)
    }
}

/// Records into `modules` the module paths a definition path runs
/// through that end in a crate's name: the proper prefixes of the simple
/// path it starts with (`a::b::C` of `a::b::C::<T>::f`), and the simple
/// path itself if `whole`.
fn record_modules<'a>(
    names: &BTreeSet<&str>,
    path: &'a str,
    whole: bool,
    modules: &mut HashSet<&'a str>,
) {
    let end = path
        .find(|c: char| !(ident(c) || c == ':'))
        .unwrap_or(path.len());
    let simple = &path[..end];
    let mut at = 0;
    let mut ends = Vec::new();
    while let Some(i) = simple[at..].find("::") {
        ends.push(at + i);
        at += i + 2;
    }
    if whole {
        ends.push(simple.len());
    }
    for end in ends {
        let prefix = &simple[..end];
        let last = prefix.rsplit("::").next().unwrap_or_default();
        if prefix.contains("::") && names.contains(last) {
            modules.insert(prefix);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_printed_through_another_crate_are_canonical() {
        let c = Canonical {
            crates: ["core", "alloc", "kernel", "doctests", "drv", "heck"].into(),
            modules: [
                "kernel",
                "kernel::alloc",
                "kernel::alloc::kvec",
                "doctests",
                "doctests::t",
                "heck",
            ]
            .into(),
        };
        let d = "doctests";
        // The path of an upstream item, and the same inside generic args.
        assert_eq!(
            c.name("doctests::rust_doctest_x::kernel::f", "kernel::f", d),
            "kernel::f"
        );
        assert_eq!(
            c.name(
                "doctests::t::kernel::Lock::<i32, doctests::t::kernel::B>::lock",
                "kernel::Lock::lock",
                d
            ),
            "kernel::Lock::<i32, kernel::B>::lock"
        );
        assert_eq!(
            c.name(
                "<doctests::t::kernel::X as doctests::t::core::Tr>::m",
                "",
                d
            ),
            "<kernel::X as core::Tr>::m"
        );
        // The crate's own items, and a crate name inside an identifier.
        assert_eq!(
            c.name("doctests::t::f", "doctests::t::f", d),
            "doctests::t::f"
        );
        assert_eq!(
            c.name(
                "doctests::t::f::<mydoctests::kernel::X>",
                "doctests::t::f",
                d
            ),
            "doctests::t::f::<mydoctests::kernel::X>"
        );
        // The item's own crate counts even when it is not linked.
        assert_eq!(c.name("drv::m::up::g", "up::g", "drv"), "up::g");
        assert_eq!(c.name("kernel::f", "kernel::f", "kernel"), "kernel::f");
        // Through another crate's `extern crate alloc`, in a third crate's
        // dump, and inside a trait path.
        assert_eq!(
            c.name(
                "heck::alloc::vec::Vec::<u8>::reserve",
                "alloc::vec::Vec::reserve",
                "drv"
            ),
            "alloc::vec::Vec::<u8>::reserve"
        );
        assert_eq!(
            c.name(
                "<heck::alloc::string::String as core::fmt::Write>::write_str",
                "alloc::string::String::write_str",
                "heck"
            ),
            "<alloc::string::String as core::fmt::Write>::write_str"
        );
        // A module of the program named like a crate is the module.
        assert_eq!(
            c.name(
                "kernel::alloc::kvec::Vec::<u8>::push",
                "kernel::alloc::kvec::Vec::push",
                "drv"
            ),
            "kernel::alloc::kvec::Vec::<u8>::push"
        );
        assert_eq!(
            c.name("f::<kernel::alloc::kvec::Vec<u8>>", "drv::f", "drv"),
            "f::<kernel::alloc::kvec::Vec<u8>>"
        );
        // The standard library's own modules named like crates.
        assert_eq!(
            c.name(
                "core::alloc::Layout::new::<u8>",
                "core::alloc::layout::Layout::new",
                "drv"
            ),
            "core::alloc::Layout::new::<u8>"
        );
    }
}
