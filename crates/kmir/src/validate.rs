//! Invariant checks run on every decoded dump, so that consumers can index
//! tables without bounds checks turning into panics on a crafted file.

use crate::model::*;

pub(crate) struct Check {
    /// The sizes of the dump's tables.
    types: usize,
    files: usize,
    /// `usize::MAX` while the vtable table is not known yet (a body checked
    /// as it is decoded, before the table): `vtable_seen` then records
    /// that the body refers to one, so it is checked again once it is.
    vtables: usize,
    vtable_seen: std::cell::Cell<bool>,
    /// Where we are, for the error message.
    context: String,
}

type Result<T = ()> = std::result::Result<T, String>;

impl Check {
    fn of(dump: &CrateDump) -> Check {
        Check {
            types: dump.types.len(),
            files: dump.files.len(),
            vtables: dump.vtables.len(),
            vtable_seen: std::cell::Cell::new(false),
            context: String::new(),
        }
    }

    fn fail<T>(&self, what: String) -> Result<T> {
        Err(format!("{} (in {})", what, self.context))
    }

    fn ty(&self, id: TyId) -> Result {
        if (id as usize) < self.types {
            Ok(())
        } else {
            self.fail(format!("type id {id} out of range ({} types)", self.types))
        }
    }

    fn span(&self, span: &Span) -> Result {
        if span.is_dummy() || (span.file as usize) < self.files {
            Ok(())
        } else {
            self.fail(format!(
                "file id {} out of range ({} files)",
                span.file, self.files
            ))
        }
    }

    fn vtable(&self, id: VtableId) -> Result {
        self.vtable_seen.set(true);
        if (id as usize) < self.vtables {
            Ok(())
        } else {
            self.fail(format!(
                "vtable id {id} out of range ({} vtables)",
                self.vtables
            ))
        }
    }

    fn ty_kind(&self, kind: &TyKind) -> Result {
        match kind {
            TyKind::Adt { args, .. }
            | TyKind::FnDef { args, .. }
            | TyKind::Closure { args, .. }
            | TyKind::Tuple(args) => args.iter().try_for_each(|t| self.ty(*t)),
            TyKind::Array { elem, .. } | TyKind::Slice { elem } => self.ty(*elem),
            TyKind::RawPtr { pointee, .. } | TyKind::Ref { pointee, .. } => self.ty(*pointee),
            TyKind::FnPtr { inputs, output } => {
                inputs.iter().try_for_each(|t| self.ty(*t))?;
                self.ty(*output)
            }
            _ => Ok(()),
        }
    }
}

struct BodyCheck<'b> {
    c: &'b Check,
    body: &'b Body,
}

impl BodyCheck<'_> {
    fn block(&self, b: BlockId) -> Result {
        if (b as usize) < self.body.blocks.len() {
            Ok(())
        } else {
            self.c.fail(format!(
                "block bb{b} out of range ({} blocks)",
                self.body.blocks.len()
            ))
        }
    }

    fn local(&self, l: LocalId) -> Result {
        if (l as usize) < self.body.locals.len() {
            Ok(())
        } else {
            self.c.fail(format!(
                "local _{l} out of range ({} locals)",
                self.body.locals.len()
            ))
        }
    }

    fn unwind(&self, u: &Unwind) -> Result {
        match u {
            Unwind::Cleanup(b) => self.block(*b),
            _ => Ok(()),
        }
    }

    fn place(&self, p: &Place) -> Result {
        self.local(p.local)?;
        for proj in &p.projection {
            match proj {
                Projection::Field { ty, .. } | Projection::OpaqueCast(ty) => self.c.ty(*ty)?,
                Projection::Index(l) => self.local(*l)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn operand(&self, o: &Operand) -> Result {
        match o {
            Operand::Copy(p) | Operand::Move(p) => self.place(p),
            Operand::Constant(c) => {
                self.c.ty(c.ty)?;
                if let ConstValue::Memory(m) = &c.value {
                    m.vtables.iter().try_for_each(|v| self.c.vtable(*v))?;
                }
                Ok(())
            }
            Operand::RuntimeChecks(_) => Ok(()),
        }
    }

    fn rvalue(&self, r: &Rvalue) -> Result {
        match r {
            Rvalue::Use(o) | Rvalue::UnaryOp { operand: o, .. } => self.operand(o),
            Rvalue::Repeat { operand, .. } => self.operand(operand),
            Rvalue::Ref { place, .. }
            | Rvalue::AddressOf { place, .. }
            | Rvalue::Discriminant(place)
            | Rvalue::Len(place)
            | Rvalue::CopyForDeref(place) => self.place(place),
            Rvalue::Aggregate { kind, operands } => {
                match kind {
                    AggregateKind::Array { elem: t }
                    | AggregateKind::Adt { ty: t, .. }
                    | AggregateKind::Closure { ty: t }
                    | AggregateKind::Coroutine { ty: t }
                    | AggregateKind::RawPtr { ty: t, .. } => self.c.ty(*t)?,
                    AggregateKind::Tuple => {}
                }
                operands.iter().try_for_each(|o| self.operand(o))
            }
            Rvalue::BinaryOp { lhs, rhs, .. } | Rvalue::CheckedBinaryOp { lhs, rhs, .. } => {
                self.operand(lhs)?;
                self.operand(rhs)
            }
            Rvalue::Cast { kind, operand, ty } => {
                self.c.ty(*ty)?;
                match kind {
                    CastKind::Unsize { vtable: Some(v) } => self.c.vtable(*v)?,
                    CastKind::TraitUpcast { from, to } => {
                        self.c.ty(*from)?;
                        self.c.ty(*to)?
                    }
                    _ => {}
                }
                self.operand(operand)
            }
            Rvalue::ThreadLocalRef { .. } => Ok(()),
        }
    }

    fn run(&self) -> Result {
        if self.body.locals.len() <= self.body.arg_count as usize {
            return self.c.fail(format!(
                "{} locals cannot hold the return place and {} arguments",
                self.body.locals.len(),
                self.body.arg_count
            ));
        }
        if self.body.blocks.is_empty() {
            return self.c.fail("body has no blocks".to_string());
        }
        self.c.span(&self.body.span)?;
        for l in &self.body.locals {
            self.c.ty(l.ty)?;
            self.c.span(&l.span)?;
        }
        for v in &self.body.var_names {
            self.local(v.local)?;
        }
        for block in &self.body.blocks {
            for s in &block.statements {
                self.c.span(&s.span)?;
                match &s.kind {
                    StatementKind::Assign { place, rvalue } => {
                        self.place(place)?;
                        self.rvalue(rvalue)?;
                    }
                    StatementKind::SetDiscriminant { place, .. } => self.place(place)?,
                    StatementKind::StorageLive(l) | StatementKind::StorageDead(l) => {
                        self.local(*l)?
                    }
                    StatementKind::Intrinsic { operands, .. } => {
                        operands.iter().try_for_each(|o| self.operand(o))?
                    }
                }
            }
            let t = &block.terminator;
            self.c.span(&t.span)?;
            for s in t.kind.successors() {
                self.block(s)?;
            }
            match &t.kind {
                TerminatorKind::SwitchInt { discr, .. } => self.operand(discr)?,
                TerminatorKind::Drop { place, unwind, .. } => {
                    self.place(place)?;
                    self.unwind(unwind)?;
                }
                TerminatorKind::Call {
                    callee,
                    args,
                    destination,
                    ..
                } => {
                    if let Callee::Indirect { operand, fn_ty, .. } = callee {
                        self.operand(operand)?;
                        self.c.ty(*fn_ty)?;
                    }
                    args.iter().try_for_each(|o| self.operand(o))?;
                    self.place(destination)?;
                }
                TerminatorKind::Assert { cond, .. } => self.operand(cond)?,
                _ => {}
            }
        }
        Ok(())
    }
}

/// Checks every cross reference of a dump.
pub fn validate(dump: &CrateDump) -> Result {
    validate_with(dump, |c, _, inst| {
        inst.body
            .as_ref()
            .map_or(Ok(()), |body| check_body(c, body))
    })
}

/// [`validate`], with the check of instance `i`'s body left to `body`
/// (run where `validate` checks the body, so the first problem found is
/// the same).
pub(crate) fn validate_with(
    dump: &CrateDump,
    mut body: impl FnMut(&Check, usize, &Instance) -> Result,
) -> Result {
    let mut c = Check::of(dump);
    c.context = "type table".to_string();
    for t in &dump.types {
        c.ty_kind(&t.kind)?;
    }
    c.context = "vtable table".to_string();
    for v in &dump.vtables {
        c.ty(v.concrete)?;
        c.ty(v.dyn_ty)?;
    }
    for s in &dump.statics {
        c.context = format!("static `{}`", s.path);
        c.ty(s.ty)?;
        c.span(&s.span)?;
        s.vtables.iter().try_for_each(|v| c.vtable(*v))?;
    }
    for i in &dump.items {
        c.context = format!("attributes of `{}`", i.path);
        c.span(&i.span)?;
        i.attrs.iter().try_for_each(|a| c.span(&a.span))?;
    }
    for (i, a) in dump.adts.iter().enumerate() {
        c.context = format!("ADT `{}`", a.path);
        c.span(&a.span)?;
        // `CrateDump::adt` looks ADTs up by binary search.
        if i > 0 && dump.adts[i - 1].path >= a.path {
            return c
                .fail("the ADT table is not sorted by path, or lists a path twice".to_string());
        }
    }
    for (i, inst) in dump.instances.iter().enumerate() {
        c.context = format!("instance `{}`", inst.name);
        c.span(&inst.span)?;
        if let InstanceKind::DropGlue { ty } = inst.kind {
            c.ty(ty)?;
        }
        body(&c, i, inst)?;
    }
    Ok(())
}

/// What checking a body as it is decoded, before the vtable table is
/// known, found.
pub(crate) enum Early {
    /// Fine, and it refers to no vtable: nothing left to check.
    Done,
    /// Fine so far, but it refers to vtables: check it again with the table.
    Again,
    /// Its first problem, which refers to no vtable (one found before any
    /// vtable reference, so the full check finds it first too).
    Failed(String),
}

/// Checks a body against the type and file tables, as it is decoded.
pub(crate) fn check_body_early(types: usize, files: usize, name: &str, body: &Body) -> Early {
    let c = Check {
        types,
        files,
        vtables: usize::MAX,
        vtable_seen: std::cell::Cell::new(false),
        context: format!("instance `{name}`"),
    };
    let result = BodyCheck { c: &c, body }.run();
    match result {
        _ if c.vtable_seen.get() => Early::Again,
        Ok(()) => Early::Done,
        Err(e) => Early::Failed(e),
    }
}

/// Checks a body with every table known (see [`validate_with`]).
pub(crate) fn check_body(c: &Check, body: &Body) -> Result {
    BodyCheck { c, body }.run()
}
