//! The `dump` subcommand's printer: a dump rendered like rustc's
//! `-Zunpretty=mir`, with what kextract resolved (callees, drop glue,
//! vtables, spans) spelled out next to it.
//!
//! The printer never trusts the dump beyond what `kmir::validate` checks,
//! and not even that: tests and future callers may hand it a dump that did
//! not go through `kmir::decode`, so every table lookup has a fallback text
//! instead of an index that could panic.

mod body;
mod tables;

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use kmir::{AdtDef, CrateDump, External, ExternalKind, Instance, InstanceKind, Span, TyId};

/// What to print of each instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Print the basic blocks; without them only signatures and locals.
    pub bodies: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { bodies: true }
    }
}

/// Prints a whole dump: header, every instance, then the tables.
pub fn print_dump(
    out: &mut dyn Write,
    dump: &CrateDump,
    source: Option<&Path>,
    options: Options,
) -> io::Result<()> {
    let p = Printer::new(dump);
    p.header(out, source)?;
    for inst in &dump.instances {
        writeln!(out)?;
        p.instance(out, inst, options)?;
    }
    p.tables(out)
}

/// Whether `--item needle` selects `inst`: a substring of its name, item
/// path or symbol, where names also match with their turbofish generic
/// arguments left out (`SpinLock::lock` selects `SpinLock::<u32>::lock`).
pub fn instance_matches(inst: &Instance, needle: &str) -> bool {
    inst.name.contains(needle)
        || inst.item_path.contains(needle)
        || inst.symbol.contains(needle)
        || without_generic_args(&inst.name).contains(needle)
        || without_generic_args(&inst.item_path).contains(needle)
}

/// `a::B::<T, C<U>>::f::<V>` as `a::B::f`; `<A as B>::f` is left alone,
/// since only `::<` starts generic arguments in a path.
pub fn without_generic_args(path: &str) -> Cow<'_, str> {
    if !path.contains("::<") {
        return Cow::Borrowed(path);
    }
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(start) = rest.find("::<") {
        out.push_str(&rest[..start]);
        let mut depth = 0usize;
        let mut end = rest.len();
        let mut prev = ' ';
        for (i, c) in rest[start + 2..].char_indices() {
            // The `>` of `->` in a fn pointer type closes nothing.
            let arrow = prev == '-';
            prev = c;
            match c {
                '<' => depth += 1,
                '>' if !arrow => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + 2 + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// What a symbol refers to in one dump.
#[derive(Clone, Copy)]
enum Target<'d> {
    Instance(&'d Instance),
    External(&'d External),
}

/// A dump with the indices the printer needs to resolve cross references.
pub struct Printer<'d> {
    dump: &'d CrateDump,
    symbols: HashMap<&'d str, Target<'d>>,
    adts: HashMap<&'d str, &'d AdtDef>,
    /// Width of `isize`/`usize`, to print negative `isize` constants.
    pointer_bits: u32,
}

impl<'d> Printer<'d> {
    pub fn new(dump: &'d CrateDump) -> Self {
        let mut symbols = HashMap::with_capacity(dump.instances.len() + dump.externals.len());
        // Externals first so that an instance of the same symbol wins: the
        // body in this dump is the more useful thing to point at.
        for e in &dump.externals {
            symbols.insert(e.symbol.as_str(), Target::External(e));
        }
        for i in &dump.instances {
            symbols.insert(i.symbol.as_str(), Target::Instance(i));
        }
        let adts = dump.adts.iter().map(|a| (a.path.as_str(), a)).collect();
        Printer {
            dump,
            symbols,
            adts,
            pointer_bits: pointer_bits(&dump.header.target),
        }
    }

    /// The crate-level summary printed before anything else.
    pub fn header(&self, out: &mut dyn Write, source: Option<&Path>) -> io::Result<()> {
        let d = self.dump;
        let h = &d.header;
        match source {
            Some(path) => writeln!(out, "// crate `{}` from {}", h.crate_name, path.display())?,
            None => writeln!(out, "// crate `{}`", h.crate_name)?,
        }
        writeln!(out, "// stable crate id: {:016x}", h.stable_crate_id)?;
        writeln!(out, "// producer: {}", h.producer)?;
        writeln!(out, "// rustc: {}", h.rustc_version)?;
        writeln!(out, "// target: {}", h.target)?;
        writeln!(out, "// edition: {}", h.edition)?;
        writeln!(out, "// crate types: {}", h.crate_types.join(", "))?;
        let bodies = d.instances.iter().filter_map(|i| i.body.as_ref());
        let (total, optimized) = bodies.fold((0usize, 0usize), |(t, o), b| {
            (t + 1, o + usize::from(!b.drop_elaborated))
        });
        let mir = if h.drop_elaborated_mir {
            "drop-elaborated MIR"
        } else {
            "optimized MIR (drop elaboration was not available)"
        };
        if h.drop_elaborated_mir && optimized > 0 {
            writeln!(
                out,
                "// bodies: {mir}; {optimized} of {total} from optimized MIR"
            )?;
        } else {
            writeln!(out, "// bodies: {mir}")?;
        }
        writeln!(
            out,
            "// contents: {}, {}, {}, {}, {}, {}, {}, {}",
            count(d.instances.len(), "instance", "instances"),
            count(d.types.len(), "type", "types"),
            count(d.vtables.len(), "vtable", "vtables"),
            count(d.statics.len(), "static", "statics"),
            count(d.externals.len(), "external", "externals"),
            count(
                d.items.len(),
                "item with tool attributes",
                "items with tool attributes"
            ),
            count(d.adts.len(), "ADT", "ADTs"),
            count(d.files.len(), "source file", "source files"),
        )
    }

    /// One instance: signature, resolution facts, locals and (if asked) blocks.
    pub fn instance(
        &self,
        out: &mut dyn Write,
        inst: &Instance,
        options: Options,
    ) -> io::Result<()> {
        let Some(body) = &inst.body else {
            writeln!(out, "fn {};", inst.name)?;
            return writeln!(out, "    // {}, no body", self.instance_facts(inst));
        };
        let args = (1..=body.arg_count)
            .map(|l| format!("_{l}: {}", self.local_ty(body, l)))
            .collect::<Vec<_>>()
            .join(", ");
        writeln!(
            out,
            "fn {}({args}) -> {} {{",
            inst.name,
            self.local_ty(body, 0)
        )?;
        let mir = if body.drop_elaborated {
            "drop-elaborated MIR"
        } else {
            "optimized MIR"
        };
        writeln!(out, "    // {}, {mir}", self.instance_facts(inst))?;
        self.locals(out, body)?;
        if options.bodies {
            self.blocks(out, body)?;
        }
        writeln!(out, "}}")
    }

    fn instance_facts(&self, inst: &Instance) -> String {
        let kind = match &inst.kind {
            InstanceKind::Item => Cow::Borrowed("item"),
            InstanceKind::Closure => Cow::Borrowed("closure"),
            InstanceKind::DropGlue { ty } => Cow::Owned(format!("drop glue of {}", self.ty(*ty))),
            InstanceKind::Shim { kind } => Cow::Owned(format!("shim {kind}")),
        };
        let mut facts = format!(
            "symbol {}, item {}, kind {kind}, span {}",
            inst.symbol,
            inst.item_path,
            self.span(&inst.span)
        );
        if let Some(sig) = &inst.fn_sig {
            facts.push_str(", signature key ");
            facts.push_str(sig);
        }
        if inst.exported {
            facts.push_str(", exported");
        }
        if let Some(attr) = inst.inline.attribute() {
            facts.push_str(", ");
            facts.push_str(attr);
        }
        if !inst.codegenned {
            facts.push_str(", not codegenned (inlined everywhere)");
        }
        if let Some(t) = &inst.trait_item {
            facts.push_str(", implements ");
            facts.push_str(t);
        }
        facts
    }

    fn ty(&self, id: TyId) -> Cow<'d, str> {
        match self.dump.ty(id) {
            Some(t) => Cow::Borrowed(t.display.as_str()),
            None => Cow::Owned(format!("<bad type #{id}>")),
        }
    }

    fn span(&self, s: &Span) -> String {
        if s.is_dummy() {
            return "<no span>".to_string();
        }
        match self.dump.file(s.file) {
            Some(f) => format!("{f}:{}:{}", s.lo_line, s.lo_col),
            None => format!("<bad file #{}>:{}:{}", s.file, s.lo_line, s.lo_col),
        }
    }

    /// The human name of what `symbol` refers to, or the symbol itself.
    fn symbol_name<'a>(&'a self, symbol: &'a str) -> &'a str {
        match self.symbols.get(symbol) {
            Some(Target::Instance(i)) => &i.name,
            Some(Target::External(e)) => &e.name,
            None => symbol,
        }
    }

    /// `symbol …` plus where its body is, for the comment after a call.
    fn symbol_facts(&self, symbol: &str) -> String {
        match self.symbols.get(symbol) {
            Some(Target::Instance(_)) => format!("symbol {symbol}"),
            Some(Target::External(e)) => {
                format!("symbol {symbol}, external {}", external_kind(&e.kind))
            }
            None => format!("symbol {symbol}, not in this dump"),
        }
    }
}

fn external_kind(kind: &ExternalKind) -> Cow<'_, str> {
    match kind {
        ExternalKind::Foreign => Cow::Borrowed("foreign"),
        ExternalKind::Upstream { krate } => Cow::Owned(format!("upstream in crate {krate}")),
        ExternalKind::Shim => Cow::Borrowed("shim"),
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The pointer width of a target, from its name: kernel targets are either
/// a triple or a target JSON named after one.
fn pointer_bits(target: &str) -> u32 {
    let name = target.rsplit('/').next().unwrap_or(target);
    let arch = name.split('-').next().unwrap_or(name);
    let bits32 = matches!(arch, "i386" | "i486" | "i586" | "i686" | "riscv32" | "arm")
        || arch.starts_with("armv")
        || arch.starts_with("thumb")
        || arch.starts_with("riscv32");
    if bits32 { 32 } else { 64 }
}

#[cfg(test)]
mod tests {
    use super::without_generic_args;

    #[test]
    fn generic_args_are_left_out_of_paths() {
        let cases = [
            ("a::SpinLock::<u32>::lock", "a::SpinLock::lock"),
            ("a::f::<Vec<u8>, B<C<D>>>", "a::f"),
            ("<a::X<T> as b::Y>::f::<u8>", "<a::X<T> as b::Y>::f"),
            ("plain::path", "plain::path"),
            ("a::call::<fn(u8) -> u8>::g", "a::call::g"),
            // Unbalanced input from a damaged dump must not panic.
            ("a::f::<u8", "a::f"),
            ("a::f::<u8>>", "a::f>"),
        ];
        for (path, stripped) in cases {
            assert_eq!(without_generic_args(path), stripped, "{path}");
        }
    }
}
