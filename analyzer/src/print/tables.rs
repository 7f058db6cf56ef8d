//! The crate-level tables printed after the instances.

use std::io::{self, Write};

use kmir::{AdtDef, AdtKind, VariantDef, VtableEntry};

use super::{Printer, external_kind};

impl Printer<'_> {
    /// Vtables, statics, attributed items, ADTs and externals, each section
    /// only if the dump has entries for it.
    pub fn tables(&self, out: &mut dyn Write) -> io::Result<()> {
        self.vtables(out)?;
        self.statics(out)?;
        self.items(out)?;
        self.adts(out)?;
        self.externals(out)
    }

    fn vtables(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.dump.vtables.is_empty() {
            return Ok(());
        }
        writeln!(out, "\n// vtables")?;
        for (k, v) in self.dump.vtables.iter().enumerate() {
            let principal = match &v.trait_path {
                Some(t) => format!("trait {t}"),
                None => "auto traits only".to_string(),
            };
            writeln!(
                out,
                "vtable #{k}: {} as {}  // {principal}",
                self.ty(v.concrete),
                self.ty(v.dyn_ty)
            )?;
            for (slot, entry) in v.entries.iter().enumerate() {
                match entry {
                    VtableEntry::DropInPlace { glue: Some(sym) } => writeln!(
                        out,
                        "    [{slot}] drop_in_place: {}  // {}",
                        self.symbol_name(sym),
                        self.symbol_facts(sym)
                    )?,
                    VtableEntry::DropInPlace { glue: None } => {
                        writeln!(out, "    [{slot}] drop_in_place: (no glue)")?
                    }
                    VtableEntry::Size => writeln!(out, "    [{slot}] size")?,
                    VtableEntry::Align => writeln!(out, "    [{slot}] align")?,
                    VtableEntry::Vacant => writeln!(out, "    [{slot}] vacant")?,
                    VtableEntry::Method { method, symbol } => writeln!(
                        out,
                        "    [{slot}] {method}: {}  // {}",
                        self.symbol_name(symbol),
                        self.symbol_facts(symbol)
                    )?,
                    VtableEntry::TraitVptr { trait_path } => {
                        writeln!(out, "    [{slot}] vtable of supertrait {trait_path}")?
                    }
                }
            }
        }
        Ok(())
    }

    fn statics(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.dump.statics.is_empty() {
            return Ok(());
        }
        writeln!(out, "\n// statics")?;
        for s in &self.dump.statics {
            let m = if s.mutable { "mut " } else { "" };
            writeln!(
                out,
                "static {m}{}: {};  // symbol {}, at {}",
                s.path,
                self.ty(s.ty),
                s.symbol,
                self.span(&s.span)
            )?;
            for f in &s.fn_ptrs {
                let fields: Vec<String> = s
                    .fn_fields
                    .iter()
                    .filter(|ff| &ff.symbol == f)
                    .map(|ff| format!(" in {}.{}", ff.owner, ff.field))
                    .collect();
                writeln!(
                    out,
                    "    fn pointer {}{}  // {}",
                    self.symbol_name(f),
                    fields.concat(),
                    self.symbol_facts(f)
                )?;
            }
            for v in &s.vtables {
                writeln!(out, "    vtable #{v}")?;
            }
        }
        Ok(())
    }

    fn items(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.dump.items.is_empty() {
            return Ok(());
        }
        writeln!(out, "\n// items with tool attributes")?;
        for item in &self.dump.items {
            writeln!(
                out,
                "{} {}  // at {}",
                item.kind,
                item.path,
                self.span(&item.span)
            )?;
            for a in &item.attrs {
                writeln!(out, "    {}  // at {}", a.text, self.span(&a.span))?;
            }
        }
        Ok(())
    }

    fn adts(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.dump.adts.is_empty() {
            return Ok(());
        }
        writeln!(out, "\n// ADTs")?;
        for adt in &self.dump.adts {
            self.adt(out, adt)?;
        }
        Ok(())
    }

    fn adt(&self, out: &mut dyn Write, adt: &AdtDef) -> io::Result<()> {
        let at = self.span(&adt.span);
        let keyword = match adt.kind {
            AdtKind::Struct => "struct",
            AdtKind::Enum => "enum",
            AdtKind::Union => "union",
        };
        if adt.kind == AdtKind::Enum {
            writeln!(out, "enum {} {{  // at {at}", adt.path)?;
            for (index, v) in adt.variants.iter().enumerate() {
                // Only discriminants that are not the variant's index are
                // worth a mention, as in the declaration they come from.
                let discr = if v.discr == index as u128 {
                    String::new()
                } else {
                    format!(" = {}", v.discr)
                };
                writeln!(out, "    {}{}{discr},", v.name, variant_fields(v))?;
            }
            return writeln!(out, "}}");
        }
        let Some(v) = adt.variants.first() else {
            return writeln!(out, "{keyword} {};  // at {at}, no variant", adt.path);
        };
        if v.fields.is_empty() || is_tuple_like(v) {
            return writeln!(
                out,
                "{keyword} {}{};  // at {at}",
                adt.path,
                variant_fields(v)
            );
        }
        writeln!(out, "{keyword} {} {{  // at {at}", adt.path)?;
        for f in &v.fields {
            writeln!(out, "    {}: {},", f.name, f.ty)?;
        }
        writeln!(out, "}}")
    }

    fn externals(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.dump.externals.is_empty() {
            return Ok(());
        }
        writeln!(out, "\n// externals")?;
        for e in &self.dump.externals {
            writeln!(
                out,
                "extern {}  // {}, symbol {}, item {}",
                e.name,
                external_kind(&e.kind),
                e.symbol,
                e.item_path
            )?;
        }
        Ok(())
    }
}

/// Tuple structs and tuple variants have fields named `0`, `1`, …
fn is_tuple_like(v: &VariantDef) -> bool {
    v.fields
        .iter()
        .enumerate()
        .all(|(i, f)| f.name.parse::<usize>() == Ok(i))
}

/// `(A, B)`, ` { a: A, b: B }` or nothing, as in a Rust declaration.
fn variant_fields(v: &VariantDef) -> String {
    if v.fields.is_empty() {
        return String::new();
    }
    if is_tuple_like(v) {
        let tys: Vec<&str> = v.fields.iter().map(|f| f.ty.as_str()).collect();
        return format!("({})", tys.join(", "));
    }
    let fields: Vec<String> = v
        .fields
        .iter()
        .map(|f| format!("{}: {}", f.name, f.ty))
        .collect();
    format!(" {{ {} }}", fields.join(", "))
}
