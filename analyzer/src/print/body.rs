//! Locals, blocks, statements, terminators, places, operands and rvalues,
//! in the notation of rustc's MIR printer where there is one.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

use kmir::{
    AdtKind, AggregateKind, BinOp, Block, BlockId, Body, Callee, CastKind, ConstValue, Constant,
    LocalId, Operand, Place, Projection, Rvalue, Statement, StatementKind, Terminator,
    TerminatorKind, TyId, TyKind, UnOp, Unwind,
};

use super::Printer;

/// Comments after declarations line up at this column unless a declaration
/// is longer; beyond it alignment costs more width than it buys.
const MAX_ALIGN: usize = 48;

impl<'d> Printer<'d> {
    pub(super) fn local_ty(&self, body: &Body, local: LocalId) -> Cow<'d, str> {
        match body.local(local) {
            Some(decl) => self.ty(decl.ty),
            None => Cow::Owned(format!("<bad local _{local}>")),
        }
    }

    pub(super) fn locals(&self, out: &mut dyn Write, body: &Body) -> io::Result<()> {
        let decls: Vec<(String, String)> = body
            .locals
            .iter()
            .enumerate()
            .map(|(i, decl)| {
                let l = i as LocalId;
                let m = if decl.mutable { "mut " } else { "" };
                let text = format!("let {m}_{l}: {};", self.ty(decl.ty));
                let mut comment = String::new();
                if l == 0 {
                    comment.push_str("return place ");
                } else if l <= body.arg_count {
                    comment.push_str("arg ");
                }
                let names: Vec<&str> = body
                    .var_names
                    .iter()
                    .filter(|v| v.local == l)
                    .map(|v| v.name.as_str())
                    .collect();
                for n in &names {
                    let _ = write!(comment, "`{n}` ");
                }
                let _ = write!(comment, "at {}", self.span(&decl.span));
                (text, comment)
            })
            .collect();
        let width = decls
            .iter()
            .map(|(t, _)| t.len())
            .filter(|&w| w <= MAX_ALIGN)
            .max()
            .unwrap_or(0);
        for (text, comment) in decls {
            writeln!(out, "    {text:width$}  // {comment}")?;
        }
        Ok(())
    }

    pub(super) fn blocks(&self, out: &mut dyn Write, body: &Body) -> io::Result<()> {
        for (i, block) in body.blocks.iter().enumerate() {
            writeln!(out)?;
            self.block(out, body, i as BlockId, block)?;
        }
        Ok(())
    }

    fn block(&self, out: &mut dyn Write, body: &Body, id: BlockId, b: &Block) -> io::Result<()> {
        let cleanup = if b.is_cleanup { " (cleanup)" } else { "" };
        writeln!(out, "    bb{id}{cleanup}: {{")?;
        for s in &b.statements {
            writeln!(out, "        {}", self.statement(body, s))?;
        }
        let (text, comment) = self.terminator(body, &b.terminator);
        match comment {
            Some(c) => writeln!(out, "        {text}  // {c}")?,
            None => writeln!(out, "        {text}")?,
        }
        writeln!(out, "    }}")
    }

    fn statement(&self, body: &Body, s: &Statement) -> String {
        match &s.kind {
            StatementKind::Assign { place, rvalue } => {
                format!(
                    "{} = {};",
                    self.place(body, place),
                    self.rvalue(body, rvalue)
                )
            }
            StatementKind::SetDiscriminant { place, variant } => {
                format!("discriminant({}) = {variant};", self.place(body, place))
            }
            StatementKind::StorageLive(l) => format!("StorageLive(_{l});"),
            StatementKind::StorageDead(l) => format!("StorageDead(_{l});"),
            StatementKind::Intrinsic { name, operands } => {
                format!("{name}({});", self.operands(body, operands))
            }
        }
    }

    /// The terminator's text and the comment that goes after it.
    fn terminator(&self, body: &Body, t: &Terminator) -> (String, Option<String>) {
        let at = format!("at {}", self.span(&t.span));
        match &t.kind {
            TerminatorKind::Goto { target } => (format!("goto -> bb{target};"), None),
            TerminatorKind::SwitchInt {
                discr,
                targets,
                otherwise,
            } => {
                let mut arms: String = targets
                    .iter()
                    .map(|t| format!("{}: bb{}, ", t.value, t.target))
                    .collect();
                let _ = write!(arms, "otherwise: bb{otherwise}");
                (
                    format!("switchInt({}) -> [{arms}];", self.operand(body, discr)),
                    None,
                )
            }
            TerminatorKind::Resume => ("resume;".to_string(), None),
            TerminatorKind::Abort => ("abort;".to_string(), None),
            TerminatorKind::Return => ("return;".to_string(), None),
            TerminatorKind::Unreachable => ("unreachable;".to_string(), None),
            TerminatorKind::Drop {
                place,
                glue,
                target,
                unwind,
            } => {
                let edges = edges(&[("return", *target)], Some(unwind));
                let place = self.place(body, place);
                match glue {
                    Some(sym) => (
                        format!("drop({place}) glue {}{edges};", self.symbol_name(sym)),
                        Some(format!("{}, {at}", self.symbol_facts(sym))),
                    ),
                    None => (format!("drop({place}) (no glue){edges};"), Some(at)),
                }
            }
            TerminatorKind::Call {
                callee,
                args,
                destination,
                target,
                unwind,
            } => {
                let returns: Vec<_> = target.iter().map(|&b| ("return", b)).collect();
                let edges = edges(&returns, Some(unwind));
                let (callee, facts) = self.callee(body, callee);
                let text = format!(
                    "{} = call {callee}({}){edges};",
                    self.place(body, destination),
                    self.operands(body, args)
                );
                let comment = match facts {
                    Some(f) => format!("{f}, {at}"),
                    None => at,
                };
                (text, Some(comment))
            }
            TerminatorKind::Assert {
                cond,
                expected,
                target,
                unwind,
            } => {
                let not = if *expected { "" } else { "!" };
                let edges = edges(&[("success", *target)], Some(unwind));
                (
                    format!("assert({not}{}){edges};", self.operand(body, cond)),
                    Some(at),
                )
            }
            TerminatorKind::InlineAsm {
                target,
                unwind,
                fn_ptrs,
            } => {
                let returns: Vec<_> = target.iter().map(|&b| ("return", b)).collect();
                let edges = edges(&returns, Some(unwind));
                let comment = if fn_ptrs.is_empty() {
                    at
                } else {
                    let names: Vec<_> = fn_ptrs.iter().map(|s| self.symbol_name(s)).collect();
                    format!("fn pointers: {}, {at}", names.join(", "))
                };
                (format!("asm!(…){edges};"), Some(comment))
            }
        }
    }

    /// How a call names its callee, and what to say about it in the comment.
    fn callee(&self, body: &Body, callee: &Callee) -> (String, Option<String>) {
        match callee {
            Callee::Direct { symbol } => (
                self.symbol_name(symbol).to_string(),
                Some(self.symbol_facts(symbol)),
            ),
            Callee::Virtual {
                trait_method,
                trait_path,
                slot,
            } => (
                format!("(virtual {trait_method} slot {slot})"),
                Some(format!("dyn {trait_path}")),
            ),
            Callee::Indirect {
                operand,
                fn_ty,
                sig,
            } => (
                format!(
                    "(indirect {}: {})",
                    self.operand(body, operand),
                    self.ty(*fn_ty)
                ),
                Some(format!("signature key {sig}")),
            ),
            Callee::Intrinsic { name } => (format!("intrinsic {name}"), None),
            Callee::Unresolved { path } => (
                format!("(unresolved {path})"),
                Some("kextract could not resolve this callee".to_string()),
            ),
        }
    }

    pub(super) fn place(&self, body: &Body, p: &Place) -> String {
        let mut text = format!("_{}", p.local);
        // The type of the projected place so far, to name downcast variants.
        let mut ty = body.local(p.local).map(|d| d.ty);
        for proj in &p.projection {
            match proj {
                Projection::Deref => {
                    text = format!("(*{text})");
                    ty = ty.and_then(|t| self.pointee(t));
                }
                Projection::Field { index, ty: field } => {
                    let _ = write!(text, ".{index}");
                    ty = Some(*field);
                }
                Projection::Index(l) => {
                    let _ = write!(text, "[_{l}]");
                    ty = ty.and_then(|t| self.element(t));
                }
                Projection::ConstantIndex {
                    offset,
                    min_length,
                    from_end,
                } => {
                    let minus = if *from_end { "-" } else { "" };
                    let _ = write!(text, "[{minus}{offset} of {min_length}]");
                    ty = ty.and_then(|t| self.element(t));
                }
                Projection::Subslice { from, to, from_end } => {
                    let _ = match (from_end, from, to) {
                        (true, _, 0) => write!(text, "[{from}:]"),
                        (true, 0, _) => write!(text, "[:-{to}]"),
                        (true, _, _) => write!(text, "[{from}:-{to}]"),
                        (false, _, _) => write!(text, "[{from}..{to}]"),
                    };
                }
                Projection::Downcast { variant } => {
                    text = format!("({text} as {})", self.variant_name(ty, *variant));
                }
                Projection::OpaqueCast(t) => {
                    text = format!("({text} as {})", self.ty(*t));
                    ty = Some(*t);
                }
            }
        }
        text
    }

    fn pointee(&self, ty: TyId) -> Option<TyId> {
        match &self.dump.ty(ty)?.kind {
            TyKind::Ref { pointee, .. } | TyKind::RawPtr { pointee, .. } => Some(*pointee),
            TyKind::Adt { path, args } if path.ends_with("::Box") => args.first().copied(),
            _ => None,
        }
    }

    fn element(&self, ty: TyId) -> Option<TyId> {
        match &self.dump.ty(ty)?.kind {
            TyKind::Array { elem, .. } | TyKind::Slice { elem } => Some(*elem),
            _ => None,
        }
    }

    fn variant_name(&self, ty: Option<TyId>, variant: u32) -> Cow<'d, str> {
        let name = ty
            .and_then(|t| match &self.dump.ty(t)?.kind {
                TyKind::Adt { path, .. } => self.adts.get(path.as_str()),
                _ => None,
            })
            .and_then(|adt| adt.variants.get(variant as usize));
        match name {
            Some(v) => Cow::Borrowed(v.name.as_str()),
            None => Cow::Owned(format!("variant#{variant}")),
        }
    }

    fn operands(&self, body: &Body, ops: &[Operand]) -> String {
        ops.iter()
            .map(|o| self.operand(body, o))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(super) fn operand(&self, body: &Body, o: &Operand) -> String {
        match o {
            Operand::Copy(p) => format!("copy {}", self.place(body, p)),
            Operand::Move(p) => format!("move {}", self.place(body, p)),
            Operand::Constant(c) => self.constant(c),
            Operand::RuntimeChecks(name) => format!("{name}()"),
        }
    }

    fn constant(&self, c: &Constant) -> String {
        let kind = self.dump.ty(c.ty).map(|t| &t.kind);
        match &c.value {
            ConstValue::Scalar(bits) => format!("const {}", self.scalar(*bits, c.ty)),
            ConstValue::ZeroSized => match kind {
                Some(TyKind::FnDef { path, args }) => {
                    format!("const {path}{}", self.generic_args(args))
                }
                Some(TyKind::Tuple(elems)) if elems.is_empty() => "const ()".to_string(),
                Some(TyKind::Adt { .. } | TyKind::Closure { .. }) => {
                    format!("const {}", self.ty(c.ty))
                }
                _ => format!("const ZeroSized: {}", self.ty(c.ty)),
            },
            ConstValue::Memory(m) => {
                let kmir::Memory {
                    fn_ptrs,
                    vtables,
                    statics,
                    variant,
                    fn_fields,
                } = &**m;
                let field_of = |s: &kmir::Name| {
                    fn_fields
                        .iter()
                        .filter(|f| &f.symbol == s)
                        .map(|f| format!(" in {}.{}", f.owner, f.field))
                        .collect::<String>()
                };
                let refs: Vec<String> = variant
                    .iter()
                    .map(|v| format!("variant #{v}"))
                    .chain(
                        fn_ptrs
                            .iter()
                            .map(|s| format!("fn {}{}", self.symbol_name(s), field_of(s))),
                    )
                    .chain(vtables.iter().map(|v| format!("vtable #{v}")))
                    .chain(statics.iter().map(|s| format!("static {s}")))
                    .collect();
                if refs.is_empty() {
                    format!("const <{}>", self.ty(c.ty))
                } else {
                    format!("const <{}>[{}]", self.ty(c.ty), refs.join(", "))
                }
            }
            ConstValue::Unevaluated => format!("const <unevaluated {}>", self.ty(c.ty)),
        }
    }

    /// An integer, `bool`, `char` or float in rustc's `5_i32` notation.
    fn scalar(&self, bits: u128, ty: TyId) -> String {
        let Some(t) = self.dump.ty(ty) else {
            return format!("{bits:#x}: {}", self.ty(ty));
        };
        match &t.kind {
            TyKind::Bool if bits <= 1 => (bits == 1).to_string(),
            TyKind::Char => match char::from_u32(bits as u32).filter(|_| bits <= 0x10_ffff) {
                Some(ch) => format!("'{}'", ch.escape_debug()),
                None => format!("{bits:#x}: char"),
            },
            TyKind::Int(name) => {
                let width = match name.as_str() {
                    "i8" => 8,
                    "i16" => 16,
                    "i32" => 32,
                    "i64" => 64,
                    "isize" => self.pointer_bits,
                    _ => 128,
                };
                let shift = 128 - width;
                format!("{}_{name}", ((bits << shift) as i128) >> shift)
            }
            TyKind::Uint(name) => format!("{bits}_{name}"),
            TyKind::Float(name) if name == "f32" => {
                format!("{:?}_{name}", f32::from_bits(bits as u32))
            }
            TyKind::Float(name) if name == "f64" => {
                format!("{:?}_{name}", f64::from_bits(bits as u64))
            }
            _ => format!("{bits:#x}: {}", t.display),
        }
    }

    fn generic_args(&self, args: &[TyId]) -> String {
        if args.is_empty() {
            return String::new();
        }
        let args: Vec<_> = args.iter().map(|a| self.ty(*a)).collect();
        format!("::<{}>", args.join(", "))
    }

    fn rvalue(&self, body: &Body, r: &Rvalue) -> String {
        match r {
            Rvalue::Use(o) => self.operand(body, o),
            Rvalue::Ref { mutable, place } => {
                let m = if *mutable { "mut " } else { "" };
                format!("&{m}{}", self.place(body, place))
            }
            Rvalue::AddressOf { mutable, place } => {
                let m = if *mutable { "mut" } else { "const" };
                format!("&raw {m} {}", self.place(body, place))
            }
            Rvalue::Aggregate { kind, operands } => self.aggregate(body, kind, operands),
            Rvalue::BinaryOp { op, lhs, rhs } => format!(
                "{}({}, {})",
                bin_op(op),
                self.operand(body, lhs),
                self.operand(body, rhs)
            ),
            Rvalue::CheckedBinaryOp { op, lhs, rhs } => format!(
                "{}WithOverflow({}, {})",
                bin_op(op),
                self.operand(body, lhs),
                self.operand(body, rhs)
            ),
            Rvalue::UnaryOp { op, operand } => {
                let op = match op {
                    UnOp::Not => "Not",
                    UnOp::Neg => "Neg",
                    UnOp::PtrMetadata => "PtrMetadata",
                };
                format!("{op}({})", self.operand(body, operand))
            }
            Rvalue::Cast { kind, operand, ty } => {
                let how = match kind {
                    CastKind::ReifyFnPointer { symbol } => {
                        format!("ReifyFnPointer to {}", self.symbol_name(symbol))
                    }
                    CastKind::ClosureFnPointer { symbol } => {
                        format!("ClosureFnPointer to {}", self.symbol_name(symbol))
                    }
                    CastKind::Unsize { vtable: Some(v) } => format!("Unsize, vtable #{v}"),
                    CastKind::Unsize { vtable: None } => "Unsize".to_string(),
                    CastKind::TraitUpcast { from, to } => {
                        format!("TraitUpcast {} to {}", self.ty(*from), self.ty(*to))
                    }
                    CastKind::Other(name) => name.to_string(),
                };
                format!(
                    "{} as {} ({how})",
                    self.operand(body, operand),
                    self.ty(*ty)
                )
            }
            Rvalue::Discriminant(p) => format!("discriminant({})", self.place(body, p)),
            Rvalue::Len(p) => format!("Len({})", self.place(body, p)),
            Rvalue::Repeat { operand, count } => {
                let o = self.operand(body, operand);
                match count {
                    Some(n) => format!("[{o}; {n}]"),
                    None => format!("[{o}; _]"),
                }
            }
            Rvalue::CopyForDeref(p) => format!("CopyForDeref({})", self.place(body, p)),
            Rvalue::ThreadLocalRef { path } => format!("&/*tls*/ {path}"),
        }
    }

    fn aggregate(&self, body: &Body, kind: &AggregateKind, operands: &[Operand]) -> String {
        let ops = self.operands(body, operands);
        match kind {
            AggregateKind::Array { .. } => format!("[{ops}]"),
            AggregateKind::Tuple if operands.len() == 1 => format!("({ops},)"),
            AggregateKind::Tuple => format!("({ops})"),
            AggregateKind::Closure { ty } | AggregateKind::Coroutine { ty } => {
                format!("{} {{ {ops} }}", self.ty(*ty))
            }
            AggregateKind::RawPtr { ty, mutable } => {
                let m = if *mutable { "mut" } else { "const" };
                format!("*{m} {} from ({ops})", self.ty(*ty))
            }
            AggregateKind::Adt {
                ty,
                variant,
                active_field,
            } => self.adt_aggregate(body, *ty, *variant, *active_field, operands),
        }
    }

    fn adt_aggregate(
        &self,
        body: &Body,
        ty: TyId,
        variant: u32,
        active_field: Option<u32>,
        operands: &[Operand],
    ) -> String {
        let name = self.ty(ty);
        let adt = match self.dump.ty(ty).map(|t| &t.kind) {
            Some(TyKind::Adt { path, .. }) => self.adts.get(path.as_str()).copied(),
            _ => None,
        };
        let def = adt.and_then(|a| a.variants.get(variant as usize).map(|v| (a, v)));
        let Some((adt, var)) = def else {
            let ops = self.operands(body, operands);
            return if variant == 0 {
                format!("{name}({ops})")
            } else {
                format!("{name}::variant#{variant}({ops})")
            };
        };
        let head = match adt.kind {
            AdtKind::Enum => format!("{name}::{}", var.name),
            AdtKind::Struct | AdtKind::Union => name.into_owned(),
        };
        if operands.is_empty() {
            return head;
        }
        // A union aggregate sets one field; everything else sets them all, in order.
        let field_names: Vec<Cow<'_, str>> = match active_field {
            Some(f) => vec![
                var.fields
                    .get(f as usize)
                    .map_or(Cow::Owned(f.to_string()), |fd| {
                        Cow::Borrowed(fd.name.as_str())
                    }),
            ],
            None => (0..operands.len())
                .map(|i| {
                    var.fields.get(i).map_or(Cow::Owned(i.to_string()), |fd| {
                        Cow::Borrowed(fd.name.as_str())
                    })
                })
                .collect(),
        };
        let positional = field_names
            .iter()
            .enumerate()
            .all(|(i, n)| n.parse::<usize>() == Ok(i));
        if positional {
            format!("{head}({})", self.operands(body, operands))
        } else {
            let fields: Vec<String> = field_names
                .iter()
                .zip(operands)
                .map(|(n, o)| format!("{n}: {}", self.operand(body, o)))
                .collect();
            format!("{head} {{ {} }}", fields.join(", "))
        }
    }
}

/// rustc's names for binary operators in MIR (`Add(copy _1, const 1_i32)`).
fn bin_op(op: &BinOp) -> &'static str {
    match op {
        BinOp::Add => "Add",
        BinOp::AddUnchecked => "AddUnchecked",
        BinOp::Sub => "Sub",
        BinOp::SubUnchecked => "SubUnchecked",
        BinOp::Mul => "Mul",
        BinOp::MulUnchecked => "MulUnchecked",
        BinOp::Div => "Div",
        BinOp::Rem => "Rem",
        BinOp::BitXor => "BitXor",
        BinOp::BitAnd => "BitAnd",
        BinOp::BitOr => "BitOr",
        BinOp::Shl => "Shl",
        BinOp::ShlUnchecked => "ShlUnchecked",
        BinOp::Shr => "Shr",
        BinOp::ShrUnchecked => "ShrUnchecked",
        BinOp::Eq => "Eq",
        BinOp::Lt => "Lt",
        BinOp::Le => "Le",
        BinOp::Ne => "Ne",
        BinOp::Ge => "Ge",
        BinOp::Gt => "Gt",
        BinOp::Cmp => "Cmp",
        BinOp::Offset => "Offset",
    }
}

/// rustc's successor list: ` -> bb1`, ` -> [return: bb1, unwind: bb4]`,
/// ` -> [return: bb1, unwind continue]`, ` -> unwind unreachable`.
fn edges(targets: &[(&str, BlockId)], unwind: Option<&Unwind>) -> String {
    let unwind = unwind.map(|u| match u {
        Unwind::Continue => "unwind continue".to_string(),
        Unwind::Unreachable => "unwind unreachable".to_string(),
        Unwind::Terminate => "unwind terminate".to_string(),
        Unwind::Cleanup(b) => format!("unwind: bb{b}"),
    });
    match (targets, unwind) {
        ([], None) => String::new(),
        ([], Some(u)) => format!(" -> {u}"),
        ([(_, b)], None) => format!(" -> bb{b}"),
        (ts, u) => {
            let mut parts: Vec<String> = ts.iter().map(|(l, b)| format!("{l}: bb{b}")).collect();
            parts.extend(u);
            format!(" -> [{}]", parts.join(", "))
        }
    }
}
