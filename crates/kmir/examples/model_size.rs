//! Where the memory of decoded dumps goes: decodes every dump of a
//! directory (one thread, in path order), measures the live heap with a
//! counting allocator, and breaks the model down by category: strings by
//! field (bytes, and how many of them are distinct within a dump and across
//! all dumps) and the arrays of the body model by element type.
//!
//! ```text
//! cargo run --release -p kmir --example model_size -- target/kernel/kmir
//! ```
//!
//! A measuring tool for `docs/performance.md` ("Bounded memory"), not a
//! command users should see.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, HashSet};
use std::mem::size_of;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use kmir::*;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        ALLOCS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Counts and heap bytes of one category.
#[derive(Default)]
struct Cat {
    count: usize,
    bytes: usize,
}

/// The strings of one field kind, for the distinct counts.
#[derive(Default)]
struct Strings<'a> {
    count: usize,
    bytes: usize,
    /// Sum over dumps of the bytes of the distinct strings of each dump.
    per_dump_distinct_bytes: usize,
    across: HashSet<&'a str>,
    this_dump: HashSet<&'a str>,
}

#[derive(Default)]
struct Acc<'a> {
    arrays: BTreeMap<&'static str, Cat>,
    strings: BTreeMap<&'static str, Strings<'a>>,
    all_across: HashSet<&'a str>,
    all_count: usize,
    all_bytes: usize,
    statement_kinds: BTreeMap<&'static str, usize>,
    operands: BTreeMap<&'static str, usize>,
}

impl<'a> Acc<'a> {
    fn vec<T>(&mut self, what: &'static str, v: &[T]) {
        let c = self.arrays.entry(what).or_default();
        c.count += v.len();
        c.bytes += std::mem::size_of_val(v);
    }

    fn s(&mut self, field: &'static str, s: &'a str) {
        let e = self.strings.entry(field).or_default();
        e.count += 1;
        e.bytes += s.len();
        e.across.insert(s);
        if e.this_dump.insert(s) {
            e.per_dump_distinct_bytes += s.len();
        }
        self.all_count += 1;
        self.all_bytes += s.len();
        self.all_across.insert(s);
    }

    fn end_dump(&mut self) {
        for s in self.strings.values_mut() {
            s.this_dump.clear();
        }
    }

    fn place(&mut self, p: &'a Place) {
        self.vec("Projection", &p.projection);
    }

    fn operand(&mut self, o: &'a Operand) {
        let kind = match o {
            Operand::Copy(_) | Operand::Move(_) => "place",
            Operand::Constant(c) => match &c.value {
                ConstValue::Scalar(_) => "constant scalar",
                ConstValue::ZeroSized => "constant zero-sized",
                ConstValue::Memory(_) => "constant memory",
                ConstValue::Unevaluated => "constant unevaluated",
            },
            Operand::RuntimeChecks(_) => "runtime checks",
        };
        *self.operands.entry(kind).or_default() += 1;
        match o {
            Operand::Copy(p) | Operand::Move(p) => self.place(p),
            Operand::Constant(c) => {
                let b = self.arrays.entry("Box<Constant>").or_default();
                b.count += 1;
                b.bytes += size_of::<Constant>();
                if let ConstValue::Memory(m) = &c.value {
                    let b = self.arrays.entry("Box<Memory>").or_default();
                    b.count += 1;
                    b.bytes += size_of::<Memory>();
                    self.vec("Memory.fn_ptrs", &m.fn_ptrs);
                    self.vec("Memory.vtables", &m.vtables);
                    self.vec("Memory.statics", &m.statics);
                    self.vec("FnField", &m.fn_fields);
                    for s in &m.fn_ptrs {
                        self.s("symbol (fn ptr)", s);
                    }
                    for s in &m.statics {
                        self.s("static path", s);
                    }
                    for f in &m.fn_fields {
                        self.fn_field(f);
                    }
                }
            }
            Operand::RuntimeChecks(s) => self.s("small names (casts, checks, intrinsics)", s),
        }
    }

    fn fn_field(&mut self, f: &'a FnField) {
        self.s("fn field owner/field", &f.owner);
        self.s("fn field owner/field", &f.field);
        self.s("symbol (fn ptr)", &f.symbol);
    }

    fn body(&mut self, b: &'a Body) {
        self.vec("LocalDecl", &b.locals);
        self.vec("Block", &b.blocks);
        self.vec("VarName", &b.var_names);
        for v in &b.var_names {
            self.s("var name", &v.name);
        }
        for block in &b.blocks {
            self.vec("Statement", &block.statements);
            for s in &block.statements {
                let kind = match &s.kind {
                    StatementKind::Assign { rvalue, .. } => match &**rvalue {
                        Rvalue::Use(_) => "Assign(Use)",
                        Rvalue::Ref { .. } => "Assign(Ref)",
                        Rvalue::AddressOf { .. } => "Assign(AddressOf)",
                        Rvalue::Aggregate { .. } => "Assign(Aggregate)",
                        Rvalue::BinaryOp { .. } | Rvalue::CheckedBinaryOp { .. } => {
                            "Assign(BinaryOp)"
                        }
                        Rvalue::Cast { .. } => "Assign(Cast)",
                        _ => "Assign(other)",
                    },
                    StatementKind::SetDiscriminant { .. } => "SetDiscriminant",
                    StatementKind::StorageLive(_) => "StorageLive",
                    StatementKind::StorageDead(_) => "StorageDead",
                    StatementKind::Intrinsic { .. } => "Intrinsic",
                };
                *self.statement_kinds.entry(kind).or_default() += 1;
                match &s.kind {
                    StatementKind::Assign { place, rvalue } => {
                        let b = self.arrays.entry("Box<Rvalue>").or_default();
                        b.count += 1;
                        b.bytes += size_of::<Rvalue>();
                        self.place(place);
                        self.rvalue(rvalue);
                    }
                    StatementKind::SetDiscriminant { place, .. } => self.place(place),
                    StatementKind::Intrinsic { name, operands } => {
                        self.s("small names (casts, checks, intrinsics)", name);
                        self.vec("Operand (intrinsic, aggregate, call args)", operands);
                        for o in operands {
                            self.operand(o);
                        }
                    }
                    StatementKind::StorageLive(_) | StatementKind::StorageDead(_) => {}
                }
            }
            self.terminator(&block.terminator.kind);
        }
    }

    fn rvalue(&mut self, r: &'a Rvalue) {
        match r {
            Rvalue::Use(o)
            | Rvalue::UnaryOp { operand: o, .. }
            | Rvalue::Repeat { operand: o, .. } => self.operand(o),
            Rvalue::Cast { kind, operand, .. } => {
                self.operand(operand);
                match kind {
                    CastKind::ReifyFnPointer { symbol } | CastKind::ClosureFnPointer { symbol } => {
                        self.s("symbol (fn ptr)", symbol)
                    }
                    CastKind::Other(s) => self.s("small names (casts, checks, intrinsics)", s),
                    _ => {}
                }
            }
            Rvalue::Ref { place, .. }
            | Rvalue::AddressOf { place, .. }
            | Rvalue::Discriminant(place)
            | Rvalue::Len(place)
            | Rvalue::CopyForDeref(place) => self.place(place),
            Rvalue::Aggregate { operands, .. } => {
                self.vec("Operand (intrinsic, aggregate, call args)", operands);
                for o in operands {
                    self.operand(o);
                }
            }
            Rvalue::BinaryOp { lhs, rhs, .. } | Rvalue::CheckedBinaryOp { lhs, rhs, .. } => {
                self.operand(lhs);
                self.operand(rhs);
            }
            Rvalue::ThreadLocalRef { path } => self.s("static path", path),
        }
    }

    fn terminator(&mut self, t: &'a TerminatorKind) {
        match t {
            TerminatorKind::SwitchInt { discr, targets, .. } => {
                self.operand(discr);
                self.vec("SwitchTarget", targets);
            }
            TerminatorKind::Drop { place, glue, .. } => {
                self.place(place);
                if let Some(g) = glue {
                    self.s("symbol (call, drop)", g);
                }
            }
            TerminatorKind::Call {
                callee,
                args,
                destination,
                ..
            } => {
                self.place(destination);
                self.vec("Operand (intrinsic, aggregate, call args)", args);
                for o in args {
                    self.operand(o);
                }
                match callee {
                    Callee::Direct { symbol } => self.s("symbol (call, drop)", symbol),
                    Callee::Virtual {
                        trait_method,
                        trait_path,
                        ..
                    } => {
                        self.s("trait paths (virtual calls, vtables)", trait_method);
                        self.s("trait paths (virtual calls, vtables)", trait_path);
                    }
                    Callee::Indirect { operand, sig, .. } => {
                        self.operand(operand);
                        self.s("fn sig key", sig);
                    }
                    Callee::Intrinsic { name } => {
                        self.s("small names (casts, checks, intrinsics)", name)
                    }
                    Callee::Unresolved { path } => self.s("item path", path),
                }
            }
            TerminatorKind::Assert { cond, .. } => self.operand(cond),
            TerminatorKind::InlineAsm { fn_ptrs, .. } => {
                self.vec("asm fn ptrs", fn_ptrs);
                for s in fn_ptrs {
                    self.s("symbol (fn ptr)", s);
                }
            }
            _ => {}
        }
    }

    fn dump(&mut self, d: &'a CrateDump) {
        let h = &d.header;
        for s in [
            &h.producer,
            &h.rustc_version,
            &h.crate_name,
            &h.target,
            &h.edition,
        ] {
            self.s("header, files", s);
        }
        for s in &h.crate_types {
            self.s("header, files", s);
        }
        self.vec("files", &d.files);
        for s in &d.files {
            self.s("header, files", s);
        }
        self.vec("Ty", &d.types);
        for t in &d.types {
            self.s("type display", &t.display);
            match &t.kind {
                TyKind::Int(s) | TyKind::Uint(s) | TyKind::Float(s) => {
                    self.s("small names (casts, checks, intrinsics)", s)
                }
                TyKind::Adt { path, args }
                | TyKind::FnDef { path, args }
                | TyKind::Closure { path, args } => {
                    self.s("type kind path", path);
                    self.vec("TyId (type args)", args);
                }
                TyKind::Foreign { path } | TyKind::Coroutine { path } => {
                    self.s("type kind path", path)
                }
                TyKind::FnPtr { inputs, .. } | TyKind::Tuple(inputs) => {
                    self.vec("TyId (type args)", inputs)
                }
                TyKind::Dynamic { traits } => {
                    self.vec("dyn traits", traits);
                    for s in traits {
                        self.s("trait paths (virtual calls, vtables)", s);
                    }
                }
                _ => {}
            }
        }
        self.vec("Instance", &d.instances);
        for i in &d.instances {
            self.s("instance symbol", &i.symbol);
            self.s("instance name", &i.name);
            self.s("item path", &i.item_path);
            if let Some(t) = &i.trait_item {
                self.s("trait paths (virtual calls, vtables)", t);
            }
            if let Some(s) = &i.fn_sig {
                self.s("fn sig key", s);
            }
            if let InstanceKind::Shim { kind } = &i.kind {
                self.s("small names (casts, checks, intrinsics)", kind);
            }
            if let Some(b) = &i.body {
                self.body(b);
            }
        }
        self.vec("Vtable", &d.vtables);
        for v in &d.vtables {
            if let Some(t) = &v.trait_path {
                self.s("trait paths (virtual calls, vtables)", t);
            }
            self.vec("VtableEntry", &v.entries);
            for e in &v.entries {
                match e {
                    VtableEntry::DropInPlace { glue: Some(g) } => self.s("symbol (fn ptr)", g),
                    VtableEntry::Method { method, symbol } => {
                        self.s("trait paths (virtual calls, vtables)", method);
                        self.s("symbol (fn ptr)", symbol);
                    }
                    VtableEntry::TraitVptr { trait_path } => {
                        self.s("trait paths (virtual calls, vtables)", trait_path)
                    }
                    _ => {}
                }
            }
        }
        self.vec("StaticItem", &d.statics);
        for s in &d.statics {
            self.s("static path", &s.path);
            self.s("symbol (fn ptr)", &s.symbol);
            self.vec("static fn ptrs, vtables", &s.fn_ptrs);
            self.vec("static fn ptrs, vtables", &s.vtables);
            self.vec("FnField", &s.fn_fields);
            for p in &s.fn_ptrs {
                self.s("symbol (fn ptr)", p);
            }
            for f in &s.fn_fields {
                self.fn_field(f);
            }
        }
        self.vec("ItemAttrs", &d.items);
        for i in &d.items {
            self.s("attributes", &i.path);
            self.s("attributes", &i.kind);
            self.vec("ToolAttr", &i.attrs);
            for a in &i.attrs {
                self.s("attributes", &a.tool);
                self.s("attributes", &a.name);
                self.s("attributes", &a.text);
            }
        }
        self.vec("AdtDef", &d.adts);
        for a in &d.adts {
            self.s("type kind path", &a.path);
            self.vec("VariantDef", &a.variants);
            for v in &a.variants {
                self.s("variant, field names", &v.name);
                self.vec("FieldDef", &v.fields);
                for f in &v.fields {
                    self.s("variant, field names", &f.name);
                    self.s("field type", &f.ty);
                }
            }
        }
        self.vec("External", &d.externals);
        for e in &d.externals {
            self.s("external symbol", &e.symbol);
            self.s("instance name", &e.name);
            self.s("item path", &e.item_path);
            if let ExternalKind::Upstream { krate } = &e.kind {
                self.s("header, files", krate);
            }
        }
        self.end_dump();
    }
}

fn mib(b: usize) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn main() {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: model_size DUMP_DIR");
        std::process::exit(2);
    };
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == kmir::EXTENSION))
            .collect(),
        Err(e) => {
            eprintln!("cannot read `{}`: {e}", dir.display());
            std::process::exit(1);
        }
    };
    paths.sort();
    let before = LIVE.load(Ordering::Relaxed);
    let allocs_before = ALLOCS.load(Ordering::Relaxed);
    let mut file_bytes = 0u64;
    let mut dumps = Vec::new();
    for p in &paths {
        file_bytes += std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        match kmir::read_file(p) {
            Ok(d) => dumps.push(d),
            Err(e) => eprintln!("skipped: {e}"),
        }
    }
    let live = LIVE.load(Ordering::Relaxed) - before;
    let allocs = ALLOCS.load(Ordering::Relaxed) - allocs_before;
    println!(
        "{} dumps, {:.1} MB of files; live heap after decoding: {:.1} MiB ({:.2}x the files) in {} allocations",
        dumps.len(),
        file_bytes as f64 / 1e6,
        mib(live),
        live as f64 / file_bytes as f64,
        allocs
    );
    let mut acc = Acc::default();
    acc.vec("CrateDump", &dumps);
    for d in &dumps {
        acc.dump(d);
    }
    println!(
        "\nstrings (heap bytes are their lengths; every String also has a 24-byte header inline in its parent):"
    );
    println!(
        "{:<44} {:>10} {:>10} {:>14} {:>14}",
        "field", "count", "MiB", "distinct/dump", "distinct all"
    );
    let mut strings: Vec<_> = acc.strings.iter().collect();
    strings.sort_by_key(|(_, s)| std::cmp::Reverse(s.bytes));
    for (name, s) in strings {
        let across: usize = s.across.iter().map(|x| x.len()).sum();
        println!(
            "{:<44} {:>10} {:>10.1} {:>14.1} {:>14.1}",
            name,
            s.count,
            mib(s.bytes),
            mib(s.per_dump_distinct_bytes),
            mib(across)
        );
    }
    let across: usize = acc.all_across.iter().map(|x| x.len()).sum();
    println!(
        "{:<44} {:>10} {:>10.1} {:>14} {:>14.1}   ({} distinct strings)",
        "all strings",
        acc.all_count,
        mib(acc.all_bytes),
        "",
        mib(across),
        acc.all_across.len()
    );
    println!("\narrays (element count x element size; string headers are inside the elements):");
    println!(
        "{:<44} {:>10} {:>6} {:>10}",
        "element", "count", "size", "MiB"
    );
    let mut arrays: Vec<_> = acc.arrays.iter().collect();
    arrays.sort_by_key(|(_, c)| std::cmp::Reverse(c.bytes));
    let mut total = 0;
    for (name, c) in arrays {
        total += c.bytes;
        println!(
            "{:<44} {:>10} {:>6} {:>10.1}",
            name,
            c.count,
            c.bytes.checked_div(c.count).unwrap_or(0),
            mib(c.bytes)
        );
    }
    println!("\nstatements by kind:");
    for (k, n) in &acc.statement_kinds {
        println!("{k:<44} {n:>10}");
    }
    println!("\noperands by kind (everywhere):");
    for (k, n) in &acc.operands {
        println!("{k:<44} {n:>10}");
    }
    println!(
        "\nsizes: Statement {}, StatementKind {}, Rvalue {}, Operand {}, Constant {}, Place {}, Terminator {}, TerminatorKind {}, Callee {}, Block {}, Span {}",
        size_of::<Statement>(),
        size_of::<StatementKind>(),
        size_of::<Rvalue>(),
        size_of::<Operand>(),
        size_of::<Constant>(),
        size_of::<Place>(),
        size_of::<Terminator>(),
        size_of::<TerminatorKind>(),
        size_of::<Callee>(),
        size_of::<Block>(),
        size_of::<Span>(),
    );
    // Strings are interned (`kmir::Name`): each distinct one is stored
    // once, behind a 16-byte reference count header, and has an entry in
    // the interning table.
    println!(
        "\narrays {:.1} MiB + distinct string bytes {:.1} MiB = {:.1} MiB; the rest of the live heap ({:.1} MiB) is the strings' headers, the interning table and spare capacity",
        mib(total),
        mib(across),
        mib(total + across),
        mib(live.saturating_sub(total + across))
    );
}
