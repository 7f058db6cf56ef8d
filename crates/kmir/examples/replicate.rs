//! Replicates a program's dumps for the scale benchmark (`scripts/scale.sh`,
//! docs/performance.md): real code, N times, as one program.
//!
//! ```text
//! cargo run --release -p kmir --example replicate -- SRC_DIR OUT_DIR COPIES [--shared a,b]
//! ```
//!
//! Writes copies `1..COPIES` of every dump in `SRC_DIR` that is built for the
//! program's target (the most common target among the dumps: host tools and
//! probes are left out, as the analyser leaves them out) into
//! `OUT_DIR/c<k>/`; copy 0 is the input itself, which the script links in
//! unchanged. In copy k:
//!
//! * every crate name `c` becomes `c__k<k>` — in the header, and as a path
//!   segment (`c::` preceded by no identifier character) in every item path,
//!   instance name, type display, trait path, signature key and field type —
//!   and the stable crate id is changed, so the file names differ;
//! * every symbol *defined* in a replicated dump (an instance or a static)
//!   gets the suffix `.k<k>` wherever it occurs (calls, drops, vtables, fn
//!   pointers, statics, externals); C link names and what the shared crates
//!   define keep their names, so all copies call the same C functions;
//! * a few direct calls of each dump (`--cross`, default 8) are rewritten to
//!   call copy k-1's instance of the same function, declared as an upstream
//!   external, so that the copies form one program with calls between them.
//!
//! * `OUT_DIR/c0.txt` lists the input's dumps of the program's target;
//! * `OUT_DIR/unmangled.txt` lists the renamed symbols that are link names
//!   (`#[no_mangle]`), which the spec may describe: the script writes a spec
//!   giving each renamed copy its original's entry.
//!
//! The shared crates (`--shared`, default `core,compiler_builtins,build_error`)
//! are not replicated: a larger kernel still links one `core` and one
//! `build_error`, and the analyser knows some of their items by name —
//! `core`'s by path (out-of-band annotations of `core::fmt`, the pointer
//! newtypes), `build_error`'s `rust_build_error` by its link name (the
//! `build_assert!` checks) — which a renamed copy would lose: a copy's
//! `build_assert!`s would call `rust_build_error.k1`, which is no assertion
//! to the analyser. Everything else
//! keeps its meaning: each copy is the original program under other names,
//! so N copies must give N times the original's findings modulo the names
//! (`scripts/scale.sh` checks it).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::process::ExitCode;

use kmir::{
    Callee, CastKind, ConstValue, CrateDump, ExternalKind, Name, Operand, Rvalue, StatementKind,
    TerminatorKind, TyKind, VtableEntry,
};

/// The crates shared by every copy unless `--shared` says otherwise.
const SHARED: &[&str] = &["core", "compiler_builtins", "build_error"];

struct Args {
    src: PathBuf,
    out: PathBuf,
    copies: u32,
    shared: Vec<String>,
    cross: usize,
}

fn parse_args() -> Result<Args, String> {
    let usage = "usage: replicate SRC_DIR OUT_DIR COPIES [--shared a,b] [--cross N]";
    let mut positional = Vec::new();
    let mut shared: Vec<String> = SHARED.iter().map(|s| s.to_string()).collect();
    let mut cross = 8;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--shared" => {
                let v = it.next().ok_or(usage)?;
                shared = v
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
            "--cross" => {
                let v = it.next().ok_or(usage)?;
                cross = v
                    .parse()
                    .map_err(|_| format!("--cross: not a number: {v}"))?;
            }
            _ => positional.push(a),
        }
    }
    let [src, out, copies] = <[String; 3]>::try_from(positional).map_err(|_| usage.to_string())?;
    let copies = copies
        .parse()
        .map_err(|_| format!("COPIES: not a number: {copies}"))?;
    Ok(Args {
        src: src.into(),
        out: out.into(),
        copies,
        shared,
        cross,
    })
}

/// Renames the names of one copy.
struct Renamer<'a> {
    /// Crate names to rename, and the suffix of this copy (`__k3`).
    crates: &'a HashSet<String>,
    crate_suffix: String,
    /// Symbols to rename, and their suffix in this copy (`.k3`).
    symbols: &'a HashSet<String>,
    symbol_suffix: String,
}

impl Renamer<'_> {
    /// `c::` becomes `c__k<k>::` for every replicated crate `c` appearing as
    /// a whole path segment: a crate name is only ever the first segment of
    /// a path, and paths are embedded in displays (`&mut kernel::sync::…`,
    /// `<T as kernel::Foo>`), so the segment is found by what precedes it.
    fn path(&self, s: &mut Name) {
        if !s.contains("::") {
            return;
        }
        let bytes = s.as_bytes();
        let mut out = String::with_capacity(s.len() + 8);
        let mut start = 0; // start of the identifier run being scanned
        let mut copied = 0; // how much of `s` is in `out`
        let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let mut i = 0;
        while i < bytes.len() {
            if !is_ident(bytes[i]) {
                if bytes[i] == b':'
                    && bytes.get(i + 1) == Some(&b':')
                    && start < i
                    && self.crates.contains(&s[start..i])
                {
                    out.push_str(&s[copied..i]);
                    out.push_str(&self.crate_suffix);
                    copied = i;
                }
                start = i + 1;
            }
            i += 1;
        }
        if copied > 0 {
            out.push_str(&s[copied..]);
            *s = out.into();
        }
    }

    fn symbol(&self, s: &mut Name) {
        if self.symbols.contains(s.as_str()) {
            *s = format!("{s}{}", self.symbol_suffix).into();
        }
    }

    fn operand(&self, o: &mut Operand) {
        if let Operand::Constant(c) = o
            && let ConstValue::Memory(m) = &mut c.value
        {
            m.fn_ptrs.iter_mut().for_each(|s| self.symbol(s));
            m.statics.iter_mut().for_each(|s| self.path(s));
            for f in &mut m.fn_fields {
                self.path(&mut f.owner);
                self.symbol(&mut f.symbol);
            }
        }
    }

    fn dump(&self, d: &mut CrateDump) {
        for t in &mut d.types {
            self.path(&mut t.display);
            match &mut t.kind {
                TyKind::Adt { path, .. }
                | TyKind::Foreign { path }
                | TyKind::FnDef { path, .. }
                | TyKind::Closure { path, .. }
                | TyKind::Coroutine { path } => self.path(path),
                TyKind::Dynamic { traits } => traits.iter_mut().for_each(|t| self.path(t)),
                _ => {}
            }
        }
        for a in &mut d.adts {
            self.path(&mut a.path);
            for v in &mut a.variants {
                v.fields.iter_mut().for_each(|f| self.path(&mut f.ty));
            }
        }
        // Renaming can reorder paths of different crates (`a::x` vs `a_b::y`);
        // the table must stay sorted (`validate`, `CrateDump::adt`).
        d.adts.sort_by(|a, b| a.path.cmp(&b.path));
        for v in &mut d.vtables {
            if let Some(t) = &mut v.trait_path {
                self.path(t);
            }
            for e in &mut v.entries {
                match e {
                    VtableEntry::DropInPlace { glue: Some(g) } => self.symbol(g),
                    VtableEntry::Method { method, symbol } => {
                        self.path(method);
                        self.symbol(symbol);
                    }
                    VtableEntry::TraitVptr { trait_path } => self.path(trait_path),
                    _ => {}
                }
            }
        }
        for s in &mut d.statics {
            self.path(&mut s.path);
            self.symbol(&mut s.symbol);
            s.fn_ptrs.iter_mut().for_each(|f| self.symbol(f));
            for f in &mut s.fn_fields {
                self.path(&mut f.owner);
                self.symbol(&mut f.symbol);
            }
        }
        for i in &mut d.items {
            self.path(&mut i.path);
        }
        for e in &mut d.externals {
            self.symbol(&mut e.symbol);
            self.path(&mut e.name);
            self.path(&mut e.item_path);
            if let ExternalKind::Upstream { krate } = &mut e.kind
                && self.crates.contains(krate.as_str())
            {
                *krate = format!("{krate}{}", self.crate_suffix).into();
            }
        }
        for inst in &mut d.instances {
            self.symbol(&mut inst.symbol);
            self.path(&mut inst.name);
            self.path(&mut inst.item_path);
            if let Some(t) = &mut inst.trait_item {
                self.path(t);
            }
            if let Some(s) = &mut inst.fn_sig {
                self.path(s);
            }
            let Some(body) = &mut inst.body else { continue };
            for b in &mut body.blocks {
                for st in &mut b.statements {
                    match &mut st.kind {
                        StatementKind::Assign { rvalue, .. } => match &mut **rvalue {
                            Rvalue::Use(o)
                            | Rvalue::UnaryOp { operand: o, .. }
                            | Rvalue::Repeat { operand: o, .. } => self.operand(o),
                            Rvalue::Cast { kind, operand, .. } => {
                                self.operand(operand);
                                match kind {
                                    CastKind::ReifyFnPointer { symbol }
                                    | CastKind::ClosureFnPointer { symbol } => self.symbol(symbol),
                                    _ => {}
                                }
                            }
                            Rvalue::Aggregate { operands, .. } => {
                                operands.iter_mut().for_each(|o| self.operand(o))
                            }
                            Rvalue::BinaryOp { lhs, rhs, .. }
                            | Rvalue::CheckedBinaryOp { lhs, rhs, .. } => {
                                self.operand(lhs);
                                self.operand(rhs);
                            }
                            Rvalue::ThreadLocalRef { path } => self.path(path),
                            _ => {}
                        },
                        StatementKind::Intrinsic { operands, .. } => {
                            operands.iter_mut().for_each(|o| self.operand(o))
                        }
                        _ => {}
                    }
                }
                match &mut b.terminator.kind {
                    TerminatorKind::SwitchInt { discr, .. } => self.operand(discr),
                    TerminatorKind::Drop { glue: Some(g), .. } => self.symbol(g),
                    TerminatorKind::Call { callee, args, .. } => {
                        args.iter_mut().for_each(|o| self.operand(o));
                        match callee {
                            Callee::Direct { symbol } => self.symbol(symbol),
                            Callee::Virtual {
                                trait_method,
                                trait_path,
                                ..
                            } => {
                                self.path(trait_method);
                                self.path(trait_path);
                            }
                            Callee::Indirect { operand, sig, .. } => {
                                self.operand(operand);
                                self.path(sig);
                            }
                            Callee::Unresolved { path } => self.path(path),
                            Callee::Intrinsic { .. } => {}
                        }
                    }
                    TerminatorKind::Assert { cond, .. } => self.operand(cond),
                    TerminatorKind::InlineAsm { fn_ptrs, .. } => {
                        fn_ptrs.iter_mut().for_each(|s| self.symbol(s))
                    }
                    _ => {}
                }
            }
        }
        if self.crates.contains(d.header.crate_name.as_str()) {
            d.header.crate_name = format!("{}{}", d.header.crate_name, self.crate_suffix).into();
        }
    }
}

/// Rewrites up to `limit` direct calls of copy k (`dump`, already renamed)
/// to instances of the same dump so that they call copy k-1's instance
/// instead, declared as an upstream external of copy k-1's crate. The
/// callee's body is the same code, so the caller's result is the same.
fn cross_link(dump: &mut CrateDump, limit: usize, this: &str, prev: &str, prev_crate: &str) {
    let defined: HashMap<Name, (Name, Name)> = dump
        .instances
        .iter()
        .filter(|i| i.body.is_some())
        .map(|i| (i.symbol.clone(), (i.name.clone(), i.item_path.clone())))
        .collect();
    let to_prev = |s: &str| s.strip_suffix(this).map(|base| format!("{base}{prev}"));
    // Names carry the crate suffix before a `::` (`kernel__k3::sync::…`).
    let crate_this = format!("{}::", this.replace(".k", "__k"));
    let crate_prev = format!("{}::", prev.replace(".k", "__k"));
    let mut added: BTreeMap<String, kmir::External> = BTreeMap::new();
    'bodies: for inst in &mut dump.instances {
        let Some(body) = &mut inst.body else { continue };
        for b in &mut body.blocks {
            if added.len() >= limit {
                break 'bodies;
            }
            let TerminatorKind::Call {
                callee: Callee::Direct { symbol },
                ..
            } = &mut b.terminator.kind
            else {
                continue;
            };
            let Some((name, item_path)) = defined.get(symbol.as_str()) else {
                continue;
            };
            let Some(new) = to_prev(symbol) else { continue };
            // The name copy k-1 gives the callee: this copy's crate suffix
            // replaced by the previous one's.
            let external = kmir::External {
                symbol: new.as_str().into(),
                name: name.replace(&crate_this, &crate_prev).into(),
                item_path: item_path.replace(&crate_this, &crate_prev).into(),
                kind: ExternalKind::Upstream {
                    krate: prev_crate.into(),
                },
            };
            *symbol = new.as_str().into();
            added.entry(new).or_insert(external);
        }
    }
    dump.externals.extend(added.into_values());
}

fn run(args: &Args) -> Result<(), String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&args.src)
        .map_err(|e| format!("{}: {e}", args.src.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == kmir::EXTENSION))
        .collect();
    paths.sort();
    let mut dumps = Vec::new();
    for p in &paths {
        dumps.push(kmir::read_file(p).map_err(|e| e.to_string())?);
    }
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect::<Option<_>>()
        .ok_or("a dump path without a file name")?;
    // The program's target: the most common one (ties: the smallest name).
    let mut by_target: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &dumps {
        *by_target.entry(d.header.target.as_str()).or_default() += 1;
    }
    let target = by_target
        .iter()
        .max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t)))
        .map(|(t, _)| t.to_string())
        .ok_or("no dumps in SRC_DIR")?;
    // Copy 0 is the input: the script links in the dumps of the program's
    // target, listed here.
    let copy0: Vec<&str> = names
        .iter()
        .zip(&dumps)
        .filter(|(_, d)| d.header.target == target)
        .map(|(n, _)| n.as_str())
        .collect();
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let list = args.out.join("c0.txt");
    std::fs::write(&list, copy0.join("\n") + "\n")
        .map_err(|e| format!("{}: {e}", list.display()))?;
    let shared: HashSet<&str> = args.shared.iter().map(String::as_str).collect();
    let (replicated, rest): (Vec<CrateDump>, Vec<CrateDump>) = dumps
        .into_iter()
        .filter(|d| d.header.target == target)
        .partition(|d| !shared.contains(d.header.crate_name.as_str()));
    let crates: HashSet<String> = replicated
        .iter()
        .map(|d| d.header.crate_name.to_string())
        .collect();
    // Symbols the shared crates define stay shared even where a replicated
    // crate has its own copy of the instance (a generic `core` function
    // instantiated with `core` types only).
    let shared_defined: HashSet<&str> = rest
        .iter()
        .flat_map(|d| {
            d.instances
                .iter()
                .map(|i| i.symbol.as_str())
                .chain(d.statics.iter().map(|s| s.symbol.as_str()))
        })
        .collect();
    let symbols: HashSet<String> = replicated
        .iter()
        .flat_map(|d| {
            d.instances
                .iter()
                .map(|i| &i.symbol)
                .chain(d.statics.iter().map(|s| &s.symbol))
        })
        .filter(|s| !shared_defined.contains(s.as_str()))
        .map(|s| s.to_string())
        .collect();
    // Unmangled symbols (`#[no_mangle]` functions C calls, like
    // `rust_binder_state_show`) are what the spec describes by link name:
    // the script gives their renamed copies the original's spec entry.
    let mut unmangled: Vec<&str> = symbols
        .iter()
        .map(String::as_str)
        .filter(|s| !s.starts_with("_R") && !s.starts_with("_ZN"))
        .collect();
    unmangled.sort_unstable();
    let list = args.out.join("unmangled.txt");
    std::fs::write(&list, unmangled.join("\n") + "\n")
        .map_err(|e| format!("{}: {e}", list.display()))?;
    eprintln!(
        "replicating {} dumps for target `{target}` ({} shared, {} symbols renamed per copy)",
        replicated.len(),
        rest.len(),
        symbols.len()
    );
    for k in 1..args.copies {
        let dir = args.out.join(format!("c{k}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let renamer = Renamer {
            crates: &crates,
            crate_suffix: format!("__k{k}"),
            symbols: &symbols,
            symbol_suffix: format!(".k{k}"),
        };
        for original in &replicated {
            let mut d = original.clone();
            renamer.dump(&mut d);
            d.header.stable_crate_id ^= u64::from(k).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            if k > 1 {
                let prev_crate = format!("{}__k{}", original.header.crate_name, k - 1);
                cross_link(
                    &mut d,
                    args.cross,
                    &format!(".k{k}"),
                    &format!(".k{}", k - 1),
                    &prev_crate,
                );
            } else {
                // Copy 0's symbols have no suffix: strip ".k1" instead.
                cross_link(&mut d, args.cross, ".k1", "", &original.header.crate_name);
            }
            kmir::validate(&d).map_err(|e| format!("copy {k} of {}: {e}", d.header.crate_name))?;
            let path = dir.join(d.file_name());
            kmir::write_file(&d, &path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match parse_args().and_then(|a| run(&a)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
