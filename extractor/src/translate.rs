//! Translation of the compiler's MIR (through `rustc_public`) into `kmir`.
//!
//! Everything session-local (types, spans, alloc ids) is turned into indices
//! of the dump's own tables or into linker symbols here, on the compiler
//! thread; the analyser never sees a compiler handle.

use std::collections::{BTreeMap, HashMap, HashSet};

use rustc_hir::def::DefKind;
use rustc_middle::mir::visit::MutVisitor;
use rustc_middle::ty::print::{
    with_no_trimmed_paths, with_no_visible_paths, with_resolve_crate_name,
};
use rustc_middle::ty::{self, TyCtxt, TypingEnv};
use rustc_middle::{bug, mir as imir};
use rustc_public::CrateDef;
use rustc_public::mir as smir;
use rustc_public::mir::alloc::GlobalAlloc;
use rustc_public::mir::mono::{Instance as SInstance, InstanceKind as SInstanceKind};
use rustc_public::rustc_internal;
use rustc_public::ty as sty;
use rustc_public_bridge::IndexedVal;
use rustc_span::def_id::DefId;

use kmir::{TyId, VtableId};

/// What we know about a symbol referenced from this crate, to describe it
/// as an external if it has no body here.
struct SymbolInfo {
    name: String,
    item_path: String,
    kind: kmir::ExternalKind,
}

pub struct Translator<'tcx> {
    tcx: TyCtxt<'tcx>,
    files: Vec<String>,
    file_ids: HashMap<String, u32>,
    spans: HashMap<sty::Span, kmir::Span>,
    types: Vec<kmir::Ty>,
    type_ids: HashMap<sty::Ty, TyId>,
    adts: BTreeMap<String, kmir::AdtDef>,
    vtables: Vec<kmir::Vtable>,
    vtable_ids: HashMap<(ty::Ty<'tcx>, ty::Ty<'tcx>), VtableId>,
    defined: HashSet<String>,
    referenced: BTreeMap<String, SymbolInfo>,
    /// Referenced instances with a body that are not (yet) in the dump.
    pending: Vec<(String, ty::Instance<'tcx>)>,
    /// Types of nested statics (the memory a static's initializer points
    /// to, interned by rustc as a separate static that has no type of its
    /// own), as seen from the pointer to them in their parent's value.
    nested_tys: HashMap<DefId, ty::Ty<'tcx>>,
    /// Nested statics already walked by the current pointer walk, so shared
    /// memory is walked once.
    nested_seen: HashSet<DefId>,
}

/// Crate-qualified, untrimmed path of a definition: the key under which
/// annotations are found, identical for the defining and the using crate:
/// the definition's own path, never a re-export (`core::cell::…`, not
/// `std::cell::…`; `kernel::sync::lock::Lock`, not `kernel::sync::Lock`).
pub fn def_path(tcx: TyCtxt<'_>, def_id: DefId) -> String {
    with_no_visible_paths!(with_resolve_crate_name!(with_no_trimmed_paths!(
        tcx.def_path_str(def_id)
    )))
}

impl<'tcx> Translator<'tcx> {
    pub fn new(tcx: TyCtxt<'tcx>) -> Self {
        Translator {
            tcx,
            files: Vec::new(),
            file_ids: HashMap::new(),
            spans: HashMap::new(),
            types: Vec::new(),
            type_ids: HashMap::new(),
            adts: BTreeMap::new(),
            vtables: Vec::new(),
            vtable_ids: HashMap::new(),
            defined: HashSet::new(),
            referenced: BTreeMap::new(),
            pending: Vec::new(),
            nested_tys: HashMap::new(),
            nested_seen: HashSet::new(),
        }
    }

    pub fn mark_defined(&mut self, symbol: &str) {
        self.defined.insert(symbol.to_string());
    }

    /// Queues an instance to be dumped unless it already is.
    pub fn enqueue(&mut self, symbol: String, instance: ty::Instance<'tcx>) {
        if !self.defined.contains(&symbol) {
            self.pending.push((symbol, instance));
        }
    }

    /// Takes the next referenced instance that has a body but is not in the
    /// dump yet, and marks it defined.
    pub fn next_pending(&mut self) -> Option<(String, ty::Instance<'tcx>)> {
        while let Some((symbol, instance)) = self.pending.pop() {
            if self.defined.insert(symbol.clone()) {
                return Some((symbol, instance));
            }
        }
        None
    }

    pub fn finish(
        self,
        header: kmir::Header,
        instances: Vec<kmir::Instance>,
        statics: Vec<kmir::StaticItem>,
        items: Vec<kmir::ItemAttrs>,
    ) -> kmir::CrateDump {
        let externals = self
            .referenced
            .into_iter()
            .filter(|(symbol, _)| !self.defined.contains(symbol))
            .map(|(symbol, info)| kmir::External {
                symbol: symbol.into(),
                name: info.name.into(),
                item_path: info.item_path.into(),
                kind: info.kind,
            })
            .collect();
        kmir::CrateDump {
            header,
            files: self.files.into_iter().map(Into::into).collect(),
            types: self.types,
            instances,
            vtables: self.vtables,
            statics,
            items,
            adts: self.adts.into_values().collect(),
            externals,
        }
    }

    // ---------------------------------------------------------------- spans

    fn span(&mut self, span: sty::Span) -> kmir::Span {
        if let Some(s) = self.spans.get(&span) {
            return *s;
        }
        let file = span.get_filename();
        let lines = span.get_lines();
        let result = if file.is_empty() || lines.start_line == 0 {
            kmir::Span::DUMMY
        } else {
            let next = self.files.len() as u32;
            let id = *self.file_ids.entry(file.clone()).or_insert_with(|| {
                self.files.push(file);
                next
            });
            kmir::Span {
                file: id,
                lo_line: lines.start_line as u32,
                lo_col: lines.start_col as u32,
                hi_line: lines.end_line as u32,
                hi_col: lines.end_col as u32,
            }
        };
        self.spans.insert(span, result);
        result
    }

    fn internal_span(&mut self, span: rustc_span::Span) -> kmir::Span {
        let stable: sty::Span = rustc_internal::stable(span);
        self.span(stable)
    }

    /// The canonical path of a definition (never a re-export), like
    /// `def_path`; `CrateDef::name()` would give the visible path.
    fn canon(&self, def: impl CrateDef) -> String {
        let internal = rustc_internal::internal(self.tcx, def.def_id());
        def_path(self.tcx, internal)
    }

    // ---------------------------------------------------------------- types

    pub fn ty(&mut self, ty: sty::Ty) -> TyId {
        if let Some(id) = self.type_ids.get(&ty) {
            return *id;
        }
        // Types outside bodies (a static's type) may still hold projections
        // (`IdArray<<D as Driver>::IdInfo, N>`, the kernel's device tables):
        // normalize first, and never ask rustc_public for the kind of an
        // alias it cannot convert.
        let internal = rustc_internal::internal(self.tcx, ty);
        let normalized = self
            .tcx
            .try_normalize_erasing_regions(
                TypingEnv::fully_monomorphized(),
                rustc_middle::ty::Unnormalized::new(internal),
            )
            .unwrap_or(internal);
        if normalized != internal {
            let stable: sty::Ty = rustc_internal::stable(normalized);
            let id = self.ty(stable);
            self.type_ids.insert(ty, id);
            return id;
        }
        let kind = if rustc_middle::ty::TypeVisitableExt::has_aliases(&internal) {
            kmir::TyKind::Other
        } else {
            match ty.kind() {
                sty::TyKind::RigidTy(rigid) => self.rigid_ty(rigid),
                _ => kmir::TyKind::Other,
            }
        };
        let id = self.types.len() as TyId;
        let display = canonical_ty_string(self.tcx, ty);
        let size = self.size_of(internal);
        self.types.push(kmir::Ty {
            kind,
            display: display.into(),
            size,
        });
        self.type_ids.insert(ty, id);
        id
    }

    /// The size of a value of `ty` from its layout, for a sized type with
    /// nothing generic left in it; `None` otherwise (no layout is asked
    /// for a type the compiler cannot lay out).
    fn size_of(&self, ty: ty::Ty<'tcx>) -> Option<u64> {
        use rustc_middle::ty::TypeVisitableExt;
        // Inside a binder (a fn pointer's `&'a dyn Write` argument) a type
        // has escaping bound variables: no layout query may see it.
        if ty.has_param()
            || ty.has_aliases()
            || ty.has_infer()
            || ty.has_placeholders()
            || ty.has_escaping_bound_vars()
        {
            return None;
        }
        let env = TypingEnv::fully_monomorphized();
        if !ty.is_sized(self.tcx, env) {
            return None;
        }
        self.tcx
            .layout_of(env.as_query_input(ty))
            .ok()
            .map(|l| l.size.bytes())
    }

    fn type_args(&mut self, args: &sty::GenericArgs) -> Vec<TyId> {
        args.0
            .iter()
            .filter_map(|a| match a {
                sty::GenericArgKind::Type(t) => Some(self.ty(*t)),
                _ => None,
            })
            .collect()
    }

    fn rigid_ty(&mut self, rigid: sty::RigidTy) -> kmir::TyKind {
        use kmir::TyKind as K;
        use sty::RigidTy as R;
        match rigid {
            R::Bool => K::Bool,
            R::Char => K::Char,
            R::Int(i) => K::Int(format!("{i:?}").to_lowercase().into()),
            R::Uint(u) => K::Uint(format!("{u:?}").to_lowercase().into()),
            R::Float(f) => K::Float(format!("{f:?}").to_lowercase().into()),
            R::Str => K::Str,
            R::Never => K::Never,
            R::Adt(adt, args) => {
                self.adt(adt);
                K::Adt {
                    path: self.canon(adt).into(),
                    args: self.type_args(&args),
                }
            }
            R::Foreign(def) => K::Foreign {
                path: self.canon(def).into(),
            },
            R::Array(elem, len) => K::Array {
                elem: self.ty(elem),
                len: len.eval_target_usize().ok(),
            },
            R::Pat(inner, _) => self.ty_kind_of(inner),
            R::Slice(elem) => K::Slice {
                elem: self.ty(elem),
            },
            R::RawPtr(p, m) => K::RawPtr {
                pointee: self.ty(p),
                mutable: is_mut(m),
            },
            R::Ref(_, p, m) => K::Ref {
                pointee: self.ty(p),
                mutable: is_mut(m),
            },
            R::FnDef(def, args) => K::FnDef {
                path: self.canon(def).into(),
                args: self.type_args(&args),
            },
            R::FnPtr(sig) => {
                let io = &sig.value.inputs_and_output;
                let (output, inputs) = io
                    .split_last()
                    .map_or((None, &[][..]), |(o, i)| (Some(*o), i));
                let inputs = inputs.iter().map(|t| self.ty(*t)).collect();
                let output = match output {
                    Some(o) => self.ty(o),
                    None => self.unit_ty(),
                };
                K::FnPtr { inputs, output }
            }
            R::Closure(def, args) => K::Closure {
                path: self.canon(def).into(),
                args: self.type_args(&args),
            },
            R::Coroutine(def, _) => K::Coroutine {
                path: self.canon(def).into(),
            },
            R::CoroutineClosure(def, _) => K::Closure {
                path: self.canon(def).into(),
                args: vec![],
            },
            R::Dynamic(preds, _) => {
                let mut traits = Vec::new();
                for p in &preds {
                    match &p.value {
                        sty::ExistentialPredicate::Trait(t) => {
                            traits.insert(0, self.canon(t.def_id))
                        }
                        sty::ExistentialPredicate::AutoTrait(t) => traits.push(self.canon(*t)),
                        sty::ExistentialPredicate::Projection(_) => {}
                    }
                }
                K::Dynamic {
                    traits: traits.into_iter().map(Into::into).collect(),
                }
            }
            R::Tuple(elems) => K::Tuple(elems.iter().map(|t| self.ty(*t)).collect()),
            R::CoroutineWitness(..) => K::Other,
        }
    }

    fn ty_kind_of(&mut self, ty: sty::Ty) -> kmir::TyKind {
        let id = self.ty(ty);
        self.types[id as usize].kind.clone()
    }

    fn unit_ty(&mut self) -> TyId {
        let unit = sty::Ty::new_tuple(&[]);
        self.ty(unit)
    }

    fn adt(&mut self, adt: sty::AdtDef) {
        let path = self.canon(adt);
        if self.adts.contains_key(&path) {
            return;
        }
        let kind = match adt.kind() {
            sty::AdtKind::Enum => kmir::AdtKind::Enum,
            sty::AdtKind::Union => kmir::AdtKind::Union,
            sty::AdtKind::Struct => kmir::AdtKind::Struct,
        };
        let internal = rustc_internal::internal(self.tcx, adt);
        let discrs: Vec<u128> = if internal.is_enum() {
            internal
                .discriminants(self.tcx)
                .map(|(_, d)| d.val)
                .collect()
        } else {
            vec![0]
        };
        let variants = adt
            .variants_iter()
            .enumerate()
            .map(|(i, v)| kmir::VariantDef {
                name: v.name().into(),
                discr: discrs.get(i).copied().unwrap_or(i as u128),
                fields: v
                    .fields()
                    .into_iter()
                    .map(|f| kmir::FieldDef {
                        name: f.name.clone().into(),
                        ty: canonical_ty_string(self.tcx, f.ty()).into(),
                    })
                    .collect(),
            })
            .collect();
        let span = self.span(adt.span());
        self.adts.insert(
            path.clone(),
            kmir::AdtDef {
                path: path.into(),
                kind,
                variants,
                span,
            },
        );
    }

    // ------------------------------------------------------------ instances

    fn reference(&mut self, instance: &SInstance) -> String {
        let symbol = instance.mangled_name();
        if !self.referenced.contains_key(&symbol) {
            let internal = rustc_internal::internal(self.tcx, *instance);
            let def_id = internal.def_id();
            let kind = if instance.is_foreign_item() {
                kmir::ExternalKind::Foreign
            } else if !matches!(internal.def, ty::InstanceKind::Item(_)) {
                kmir::ExternalKind::Shim
            } else {
                kmir::ExternalKind::Upstream {
                    krate: self.tcx.crate_name(def_id.krate).to_string().into(),
                }
            };
            self.referenced.insert(
                symbol.clone(),
                SymbolInfo {
                    name: instance.name(),
                    item_path: def_path(self.tcx, def_id),
                    kind,
                },
            );
            if !self.defined.contains(&symbol)
                && !instance.is_foreign_item()
                && !matches!(
                    internal.def,
                    ty::InstanceKind::Intrinsic(_) | ty::InstanceKind::Virtual(..)
                )
                && instance.has_body()
            {
                self.pending.push((symbol.clone(), internal));
            }
        }
        symbol
    }

    pub fn instance(
        &mut self,
        symbol: String,
        internal: ty::Instance<'tcx>,
        codegenned: bool,
    ) -> Result<kmir::Instance, String> {
        let tcx = self.tcx;
        let stable: SInstance = rustc_internal::stable(internal);
        let def_id = internal.def_id();
        let kind = match internal.def {
            ty::InstanceKind::Item(_) if tcx.is_closure_like(def_id) => kmir::InstanceKind::Closure,
            ty::InstanceKind::Item(_) => kmir::InstanceKind::Item,
            ty::InstanceKind::DropGlue(_, ty) => {
                let ty = ty.unwrap_or_else(|| tcx.types.unit);
                let s: sty::Ty = rustc_internal::stable(ty);
                kmir::InstanceKind::DropGlue { ty: self.ty(s) }
            }
            other => {
                let debug = format!("{other:?}");
                let name = debug
                    .split(['(', ' ', '{'])
                    .next()
                    .unwrap_or("Shim")
                    .to_string();
                kmir::InstanceKind::Shim { kind: name.into() }
            }
        };
        let body = self.instance_body(internal, &stable)?;
        let span = self.internal_span(tcx.def_span(def_id));
        let exported = def_id.is_local()
            && matches!(internal.def, ty::InstanceKind::Item(_))
            && tcx.def_kind(def_id).is_fn_like()
            && tcx.codegen_fn_attrs(def_id).contains_extern_indicator();
        let trait_item = match internal.def {
            ty::InstanceKind::Item(_) => tcx.trait_item_of(def_id).map(|d| def_path(tcx, d)),
            _ => None,
        };
        let fn_sig = match internal.def {
            ty::InstanceKind::Item(_) => instance_sig(tcx, internal),
            _ => None,
        };
        let fn_ty = internal.ty(tcx, TypingEnv::fully_monomorphized());
        let unsafe_fn = matches!(internal.def, ty::InstanceKind::Item(_))
            && matches!(fn_ty.kind(), ty::FnDef(..))
            && fn_ty.fn_sig(tcx).safety().is_unsafe();
        // The attribute written on the item (a closure's own): shims and
        // drop glue have none of their own.
        let inline = match internal.def {
            ty::InstanceKind::Item(_) if tcx.def_kind(def_id).is_fn_like() => {
                inline_attr(&tcx.codegen_fn_attrs(def_id).inline)
            }
            _ => kmir::Inline::None,
        };
        Ok(kmir::Instance {
            symbol: symbol.into(),
            name: stable.name().into(),
            item_path: def_path(tcx, def_id).into(),
            trait_item: trait_item.map(Into::into),
            kind,
            span,
            exported,
            fn_sig: fn_sig.map(Into::into),
            unsafe_fn,
            inline,
            codegenned,
            body: body.map(Box::new),
        })
    }

    /// The monomorphic body: the stashed drop-elaborated MIR for local items,
    /// else what `Instance::body()` gives (optimized MIR, shims).
    fn instance_body(
        &mut self,
        internal: ty::Instance<'tcx>,
        stable: &SInstance,
    ) -> Result<Option<kmir::Body>, String> {
        let tcx = self.tcx;
        let stashed = match internal.def {
            // The stash is filled as the compiler builds optimized MIR. A
            // local function nothing has built it for yet (an inlinable one
            // that this crate never calls, in a crate that encodes no MIR
            // for others: a binary) is built now, so that every local body
            // is drop-elaborated, whatever ran before the extraction.
            ty::InstanceKind::Item(def) => def.as_local().and_then(|local| {
                if tcx.is_mir_available(def) {
                    let _ = tcx.optimized_mir(def);
                }
                crate::stash::get(tcx, local)
            }),
            _ => None,
        };
        let (body, drop_elaborated) = match stashed {
            Some(generic) => {
                let mut mono = internal.instantiate_mir_and_normalize_erasing_regions(
                    tcx,
                    TypingEnv::fully_monomorphized(),
                    ty::EarlyBinder::bind(generic.clone()),
                );
                ConstEvaluator { tcx }.visit_body(&mut mono);
                let remapped = remap_const_eval_select(tcx, mono);
                let body: smir::Body = rustc_internal::stable(&remapped);
                (body, true)
            }
            None => match stable.body() {
                Some(b) => (b, false),
                None => return Ok(None),
            },
        };
        Ok(Some(self.body(&body, drop_elaborated)))
    }

    fn body(&mut self, body: &smir::Body, drop_elaborated: bool) -> kmir::Body {
        let locals_decl = body.locals();
        let locals = locals_decl
            .iter()
            .map(|l| kmir::LocalDecl {
                ty: self.ty(l.ty),
                span: self.span(l.span),
                mutable: matches!(l.mutability, smir::Mutability::Mut),
            })
            .collect();
        let var_names = body
            .var_debug_info
            .iter()
            .filter_map(|v| match &v.value {
                smir::VarDebugInfoContents::Place(p) if p.projection.is_empty() => {
                    Some(kmir::VarName {
                        name: v.name.clone().into(),
                        local: p.local as u32,
                    })
                }
                _ => None,
            })
            .collect();
        let cleanup = cleanup_blocks(body);
        let blocks = body
            .blocks
            .iter()
            .enumerate()
            .map(|(i, b)| kmir::Block {
                statements: b
                    .statements
                    .iter()
                    .filter_map(|s| self.statement(s, locals_decl))
                    .collect(),
                terminator: self.terminator(&b.terminator, locals_decl),
                is_cleanup: cleanup[i],
            })
            .collect();
        kmir::Body {
            arg_count: body.arg_locals().len() as u32,
            locals,
            blocks,
            var_names,
            span: self.span(body.span),
            drop_elaborated,
        }
    }

    fn statement(
        &mut self,
        s: &smir::Statement,
        locals: &[smir::LocalDecl],
    ) -> Option<kmir::Statement> {
        use smir::StatementKind as S;
        let kind = match &s.kind {
            S::Assign(place, rvalue) => kmir::StatementKind::Assign {
                place: self.place(place),
                rvalue: Box::new(self.rvalue(rvalue, locals)),
            },
            S::SetDiscriminant {
                place,
                variant_index,
            } => kmir::StatementKind::SetDiscriminant {
                place: self.place(place),
                variant: variant_index.to_index() as u32,
            },
            S::StorageLive(l) => kmir::StatementKind::StorageLive(*l as u32),
            S::StorageDead(l) => kmir::StatementKind::StorageDead(*l as u32),
            S::Intrinsic(smir::NonDivergingIntrinsic::Assume(op)) => {
                kmir::StatementKind::Intrinsic {
                    name: "assume".into(),
                    operands: Box::new([self.operand(op)]),
                }
            }
            S::Intrinsic(smir::NonDivergingIntrinsic::CopyNonOverlapping(c)) => {
                kmir::StatementKind::Intrinsic {
                    name: "copy_nonoverlapping".into(),
                    operands: Box::new([
                        self.operand(&c.src),
                        self.operand(&c.dst),
                        self.operand(&c.count),
                    ]),
                }
            }
            // Borrowck and debugging artefacts: no runtime effect.
            S::FakeRead(..)
            | S::PlaceMention(_)
            | S::AscribeUserType { .. }
            | S::Coverage(_)
            | S::ConstEvalCounter
            | S::Nop => return None,
        };
        Some(kmir::Statement {
            kind,
            span: self.span(s.span),
        })
    }

    fn place(&mut self, p: &smir::Place) -> kmir::Place {
        use smir::ProjectionElem as P;
        kmir::Place {
            local: p.local as u32,
            projection: p
                .projection
                .iter()
                .map(|e| match e {
                    P::Deref => kmir::Projection::Deref,
                    P::Field(i, ty) => kmir::Projection::Field {
                        index: *i as u32,
                        ty: self.ty(*ty),
                    },
                    P::Index(l) => kmir::Projection::Index(*l as u32),
                    P::ConstantIndex {
                        offset,
                        min_length,
                        from_end,
                    } => kmir::Projection::ConstantIndex {
                        offset: *offset,
                        min_length: *min_length,
                        from_end: *from_end,
                    },
                    P::Subslice { from, to, from_end } => kmir::Projection::Subslice {
                        from: *from,
                        to: *to,
                        from_end: *from_end,
                    },
                    P::Downcast(v) => kmir::Projection::Downcast {
                        variant: v.to_index() as u32,
                    },
                    P::OpaqueCast(ty) => kmir::Projection::OpaqueCast(self.ty(*ty)),
                })
                .collect(),
        }
    }

    fn operand(&mut self, o: &smir::Operand) -> kmir::Operand {
        match o {
            smir::Operand::Copy(p) => kmir::Operand::Copy(self.place(p)),
            smir::Operand::Move(p) => kmir::Operand::Move(self.place(p)),
            smir::Operand::Constant(c) => {
                kmir::Operand::Constant(Box::new(self.constant(&c.const_)))
            }
            smir::Operand::RuntimeChecks(r) => {
                kmir::Operand::RuntimeChecks(format!("{r:?}").into())
            }
        }
    }

    fn constant(&mut self, c: &sty::MirConst) -> kmir::Constant {
        let ty = self.ty(c.ty());
        let value = match c.kind() {
            sty::ConstantKind::ZeroSized => kmir::ConstValue::ZeroSized,
            sty::ConstantKind::Allocated(alloc) => {
                let mut v = self.allocation_value(c.ty(), alloc);
                if let kmir::ConstValue::Memory(m) = &mut v {
                    m.variant = self.enum_variant(c);
                }
                v
            }
            sty::ConstantKind::Ty(tc) => match tc.kind() {
                sty::TyConstKind::Value(t, alloc) => self.allocation_value(*t, alloc),
                sty::TyConstKind::ZSTValue(_) => kmir::ConstValue::ZeroSized,
                _ => kmir::ConstValue::Unevaluated,
            },
            sty::ConstantKind::Unevaluated(_) | sty::ConstantKind::Param(_) => {
                kmir::ConstValue::Unevaluated
            }
        };
        kmir::Constant { ty, value }
    }

    /// The variant an enum constant holds, read the way rustc's MIR printer
    /// reads it.
    fn enum_variant(&self, c: &sty::MirConst) -> Option<u32> {
        let internal = rustc_internal::internal(self.tcx, c.clone());
        let imir::Const::Val(val, ty) = internal else {
            return None;
        };
        if !matches!(ty.kind(), ty::Adt(def, _) if def.is_enum()) {
            return None;
        }
        let destructured = self
            .tcx
            .try_destructure_mir_constant_for_user_output(val, ty)?;
        destructured.variant.map(|v| v.as_u32())
    }

    fn allocation_value(&mut self, ty: sty::Ty, alloc: &sty::Allocation) -> kmir::ConstValue {
        let scalar = matches!(
            ty.kind().rigid(),
            Some(
                sty::RigidTy::Bool
                    | sty::RigidTy::Char
                    | sty::RigidTy::Int(_)
                    | sty::RigidTy::Uint(_)
            )
        );
        // A single-field struct around an integer (`Flags(0)`, the
        // kernel's GFP flags) has the field's layout: its value is the
        // field's, which the analysis needs as much as a plain integer's.
        let newtype = match ty.kind().rigid() {
            Some(sty::RigidTy::Adt(def, _)) => {
                def.kind() == sty::AdtKind::Struct
                    && def
                        .variants()
                        .first()
                        .is_some_and(|v| v.fields().len() == 1)
                    && alloc.bytes.len() <= 16
            }
            _ => false,
        };
        if (scalar || newtype)
            && alloc.provenance.ptrs.is_empty()
            && let Ok(v) = alloc.read_uint()
        {
            return kmir::ConstValue::Scalar(v);
        }
        let mut pointers = Pointers::default();
        let internal = rustc_internal::internal(self.tcx, ty);
        self.collect_pointers(alloc, &mut pointers, 0, Some(internal));
        kmir::ConstValue::Memory(Box::new(kmir::Memory {
            fn_ptrs: pointers.fns.into_iter().map(Into::into).collect(),
            vtables: pointers.vtables,
            statics: pointers.statics.into_iter().map(Into::into).collect(),
            variant: None,
            fn_fields: pointers.fields,
        }))
    }

    /// Every function, vtable and static an allocation points to, through
    /// nested memory (e.g. a `&[&dyn Trait]` constant or an ops table).
    ///
    /// `ty` is the type of the memory when known: a code pointer's struct
    /// field is then recorded too (an ops table's `queue_rq`).
    fn collect_pointers(
        &mut self,
        alloc: &sty::Allocation,
        out: &mut Pointers,
        depth: u32,
        ty: Option<ty::Ty<'tcx>>,
    ) {
        // Constant memory is a DAG (statics, the only way back, are not
        // followed), but bound the walk anyway.
        if depth > 64 {
            return;
        }
        for (offset, prov) in &alloc.provenance.ptrs {
            let id = prov.0;
            let leaf = ty.and_then(|t| self.leaf_at(t, *offset as u64, 0));
            match GlobalAlloc::from(id) {
                GlobalAlloc::Function(instance) => {
                    let symbol = self.reference(&instance);
                    if let Some(Leaf {
                        owner: Some((owner, field)),
                        ..
                    }) = &leaf
                    {
                        let f = kmir::FnField {
                            owner: owner.clone().into(),
                            field: field.clone().into(),
                            symbol: symbol.clone().into(),
                        };
                        if !out.fields.contains(&f) {
                            out.fields.push(f);
                        }
                    }
                    if !out.fns.contains(&symbol) {
                        out.fns.push(symbol);
                    }
                }
                GlobalAlloc::VTable(ty, trait_ref) => {
                    let concrete = rustc_internal::internal(self.tcx, ty);
                    let principal = trait_ref.map(|t| rustc_internal::internal(self.tcx, t));
                    let dyn_ty = ty::Ty::new_dynamic(
                        self.tcx,
                        self.tcx.mk_poly_existential_predicates_from_iter(
                            principal
                                .map(|p| p.map_bound(ty::ExistentialPredicate::Trait))
                                .into_iter(),
                        ),
                        self.tcx.lifetimes.re_erased,
                    );
                    if let Some(v) = self.vtable(concrete, dyn_ty) {
                        out.vtables.push(v);
                    }
                }
                GlobalAlloc::Static(def) => {
                    out.statics.push(self.canon(def));
                    // A nested static is part of this value (rustc interns
                    // the memory a static's initializer points to as one,
                    // where a constant's would be plain memory): walk it like
                    // memory, and remember its type, which it has nowhere
                    // else. Real statics are not followed (they are items of
                    // their own, and the only way to form a cycle).
                    let internal = rustc_internal::internal(self.tcx, def.def_id());
                    // Local only: an upstream nested static is its own
                    // crate's, walked (and typed) when that crate is dumped.
                    if internal.is_local()
                        && is_nested_static(self.tcx, internal)
                        && self.nested_seen.insert(internal)
                    {
                        let pointee = leaf.and_then(|l| pointee(l.ty));
                        if let Some(p) = pointee {
                            self.nested_tys.entry(internal).or_insert(p);
                        }
                        if let Ok(inner) = def.eval_initializer() {
                            let sized =
                                pointee.map(|p| self.sized_view(p, inner.bytes.len() as u64));
                            self.collect_pointers(&inner, out, depth + 1, sized);
                        }
                    }
                }
                GlobalAlloc::Memory(inner) => {
                    let pointee = leaf.and_then(|l| pointee(l.ty));
                    self.collect_pointers(&inner, out, depth + 1, pointee)
                }
                GlobalAlloc::TypeId { .. } => {}
            }
        }
    }

    /// The scalar-like part of a `ty` value that contains byte `offset`
    /// (a pointer, an `Option<fn>`): its type and the innermost struct field
    /// it is, through nested structs, wrapper unions (`MaybeUninit`) and
    /// arrays.
    fn leaf_at(&self, ty: ty::Ty<'tcx>, offset: u64, depth: u32) -> Option<Leaf<'tcx>> {
        if depth > 16 {
            return None;
        }
        let tcx = self.tcx;
        let layout_of = |t: ty::Ty<'tcx>| {
            tcx.layout_of(TypingEnv::fully_monomorphized().as_query_input(t))
                .ok()
        };
        match ty.kind() {
            ty::Adt(adt, args) if adt.is_struct() || adt.is_union() => {
                let layout = layout_of(ty)?;
                let variant = adt.non_enum_variant();
                for (i, f) in variant.fields.iter().enumerate() {
                    let fty = tcx
                        .try_normalize_erasing_regions(
                            TypingEnv::fully_monomorphized(),
                            f.ty(tcx, args),
                        )
                        .ok()?;
                    let start = layout.fields.offset(i).bytes();
                    let size = layout_of(fty)?.size.bytes();
                    if offset < start || offset >= start + size {
                        continue;
                    }
                    let inner = self.leaf_at(fty, offset - start, depth + 1);
                    match inner {
                        Some(Leaf { owner: Some(_), .. }) => return inner,
                        // A union's fields overlap: try the next one.
                        None if adt.is_union() => continue,
                        _ => {}
                    }
                    if adt.is_union() {
                        return inner;
                    }
                    return Some(Leaf {
                        ty: inner.map_or(fty, |l| l.ty),
                        owner: Some((def_path(tcx, adt.did()), f.name.to_string())),
                    });
                }
                None
            }
            ty::Array(elem, _) => {
                let size = layout_of(*elem)?.size.bytes();
                if size == 0 {
                    return None;
                }
                self.leaf_at(*elem, offset % size, depth + 1)
            }
            _ => Some(Leaf { ty, owner: None }),
        }
    }

    fn rvalue(&mut self, r: &smir::Rvalue, locals: &[smir::LocalDecl]) -> kmir::Rvalue {
        use smir::Rvalue as R;
        match r {
            R::Use(o, _) => kmir::Rvalue::Use(self.operand(o)),
            R::Reborrow(_, m, p) => kmir::Rvalue::Ref {
                mutable: is_mut(*m),
                place: self.place(p),
            },
            R::Ref(_, kind, p) => kmir::Rvalue::Ref {
                mutable: matches!(kind, smir::BorrowKind::Mut { .. }),
                place: self.place(p),
            },
            R::AddressOf(kind, p) => kmir::Rvalue::AddressOf {
                mutable: matches!(kind, smir::RawPtrKind::Mut),
                place: self.place(p),
            },
            R::Aggregate(kind, ops) => {
                let kind = match kind {
                    smir::AggregateKind::Array(t) => {
                        kmir::AggregateKind::Array { elem: self.ty(*t) }
                    }
                    smir::AggregateKind::Tuple => kmir::AggregateKind::Tuple,
                    smir::AggregateKind::Adt(adt, variant, args, _, active) => {
                        let ty = sty::Ty::from_rigid_kind(sty::RigidTy::Adt(*adt, args.clone()));
                        kmir::AggregateKind::Adt {
                            ty: self.ty(ty),
                            variant: variant.to_index() as u32,
                            active_field: active.map(|f| f as u32),
                        }
                    }
                    smir::AggregateKind::Closure(def, args) => {
                        let ty =
                            sty::Ty::from_rigid_kind(sty::RigidTy::Closure(*def, args.clone()));
                        kmir::AggregateKind::Closure { ty: self.ty(ty) }
                    }
                    smir::AggregateKind::Coroutine(def, args) => {
                        let ty =
                            sty::Ty::from_rigid_kind(sty::RigidTy::Coroutine(*def, args.clone()));
                        kmir::AggregateKind::Coroutine { ty: self.ty(ty) }
                    }
                    smir::AggregateKind::CoroutineClosure(def, args) => {
                        let ty = sty::Ty::from_rigid_kind(sty::RigidTy::CoroutineClosure(
                            *def,
                            args.clone(),
                        ));
                        kmir::AggregateKind::Closure { ty: self.ty(ty) }
                    }
                    smir::AggregateKind::RawPtr(t, m) => kmir::AggregateKind::RawPtr {
                        ty: self.ty(*t),
                        mutable: is_mut(*m),
                    },
                };
                kmir::Rvalue::Aggregate {
                    kind,
                    operands: ops.iter().map(|o| self.operand(o)).collect(),
                }
            }
            R::BinaryOp(op, a, b) => kmir::Rvalue::BinaryOp {
                op: bin_op(*op),
                lhs: self.operand(a),
                rhs: self.operand(b),
            },
            R::CheckedBinaryOp(op, a, b) => kmir::Rvalue::CheckedBinaryOp {
                op: bin_op(*op),
                lhs: self.operand(a),
                rhs: self.operand(b),
            },
            R::UnaryOp(op, o) => kmir::Rvalue::UnaryOp {
                op: match op {
                    smir::UnOp::Not => kmir::UnOp::Not,
                    smir::UnOp::Neg => kmir::UnOp::Neg,
                    smir::UnOp::PtrMetadata => kmir::UnOp::PtrMetadata,
                },
                operand: self.operand(o),
            },
            R::Cast(kind, o, target) => {
                let kind = self.cast_kind(kind, o, *target, locals);
                kmir::Rvalue::Cast {
                    kind,
                    operand: self.operand(o),
                    ty: self.ty(*target),
                }
            }
            R::Discriminant(p) => kmir::Rvalue::Discriminant(self.place(p)),
            R::Len(p) => kmir::Rvalue::Len(self.place(p)),
            R::Repeat(o, count) => kmir::Rvalue::Repeat {
                operand: self.operand(o),
                count: count.eval_target_usize().ok(),
            },
            R::CopyForDeref(p) => kmir::Rvalue::CopyForDeref(self.place(p)),
            R::ThreadLocalRef(item) => kmir::Rvalue::ThreadLocalRef {
                path: self.canon(*item).into(),
            },
        }
    }

    fn cast_kind(
        &mut self,
        kind: &smir::CastKind,
        operand: &smir::Operand,
        target: sty::Ty,
        locals: &[smir::LocalDecl],
    ) -> kmir::CastKind {
        use smir::{CastKind as C, PointerCoercion as PC};
        let source = operand.ty(locals).ok();
        match kind {
            C::PointerCoercion(PC::ReifyFnPointer(_)) => {
                if let Some(sty::RigidTy::FnDef(def, args)) =
                    source.and_then(|t| t.kind().rigid().cloned())
                    && let Ok(instance) = SInstance::resolve_for_fn_ptr(def, &args)
                {
                    return kmir::CastKind::ReifyFnPointer {
                        symbol: self.reference(&instance).into(),
                    };
                }
                kmir::CastKind::Other("ReifyFnPointer".into())
            }
            C::PointerCoercion(PC::ClosureFnPointer(_)) => {
                if let Some(sty::RigidTy::Closure(def, args)) =
                    source.and_then(|t| t.kind().rigid().cloned())
                    && let Ok(instance) =
                        SInstance::resolve_closure(def, &args, sty::ClosureKind::FnOnce)
                {
                    return kmir::CastKind::ClosureFnPointer {
                        symbol: self.reference(&instance).into(),
                    };
                }
                kmir::CastKind::Other("ClosureFnPointer".into())
            }
            C::PointerCoercion(PC::Unsize) => {
                let Some(source) = source else {
                    return kmir::CastKind::Unsize { vtable: None };
                };
                let src = rustc_internal::internal(self.tcx, source);
                let dst = rustc_internal::internal(self.tcx, target);
                match unsize_tails(self.tcx, src, dst) {
                    Some((a, b)) if a.is_trait() && b.is_trait() => {
                        let from: sty::Ty = rustc_internal::stable(a);
                        let to: sty::Ty = rustc_internal::stable(b);
                        kmir::CastKind::TraitUpcast {
                            from: self.ty(from),
                            to: self.ty(to),
                        }
                    }
                    Some((concrete, dyn_ty)) if dyn_ty.is_trait() => kmir::CastKind::Unsize {
                        vtable: self.vtable(concrete, dyn_ty),
                    },
                    _ => kmir::CastKind::Unsize { vtable: None },
                }
            }
            other => kmir::CastKind::Other(format!("{other:?}").into()),
        }
    }

    /// The vtable of `concrete` as `dyn_ty`, built once per pair.
    fn vtable(&mut self, concrete: ty::Ty<'tcx>, dyn_ty: ty::Ty<'tcx>) -> Option<VtableId> {
        if let Some(id) = self.vtable_ids.get(&(concrete, dyn_ty)) {
            return Some(*id);
        }
        let tcx = self.tcx;
        let ty::Dynamic(preds, ..) = dyn_ty.kind() else {
            return None;
        };
        let principal = preds.principal();
        let drop_glue = ty::Instance::resolve_drop_glue(tcx, concrete);
        let mut entries = Vec::new();
        let glue = if matches!(drop_glue.def, ty::InstanceKind::DropGlue(_, None)) {
            None
        } else {
            let s: SInstance = rustc_internal::stable(drop_glue);
            Some(self.reference(&s))
        };
        let vtbl_entries: Vec<ty::vtable::VtblEntry<'tcx>> = match principal {
            Some(p) => {
                let trait_ref = tcx
                    .instantiate_bound_regions_with_erased(p)
                    .with_self_ty(tcx, concrete);
                tcx.vtable_entries(trait_ref).to_vec()
            }
            None => TyCtxt::COMMON_VTABLE_ENTRIES.to_vec(),
        };
        for e in vtbl_entries {
            entries.push(match e {
                ty::vtable::VtblEntry::MetadataDropInPlace => kmir::VtableEntry::DropInPlace {
                    glue: glue.clone().map(Into::into),
                },
                ty::vtable::VtblEntry::MetadataSize => kmir::VtableEntry::Size,
                ty::vtable::VtblEntry::MetadataAlign => kmir::VtableEntry::Align,
                ty::vtable::VtblEntry::Vacant => kmir::VtableEntry::Vacant,
                ty::vtable::VtblEntry::Method(instance) => {
                    let def = instance.def_id();
                    let method = tcx.trait_item_of(def).unwrap_or(def);
                    let s: SInstance = rustc_internal::stable(instance);
                    kmir::VtableEntry::Method {
                        method: def_path(tcx, method).into(),
                        symbol: self.reference(&s).into(),
                    }
                }
                ty::vtable::VtblEntry::TraitVPtr(tr) => kmir::VtableEntry::TraitVptr {
                    trait_path: def_path(tcx, tr.def_id).into(),
                },
            });
        }
        let c: sty::Ty = rustc_internal::stable(concrete);
        let d: sty::Ty = rustc_internal::stable(dyn_ty);
        let vt = kmir::Vtable {
            concrete: self.ty(c),
            trait_path: principal.map(|p| def_path(tcx, p.def_id())).map(Into::into),
            dyn_ty: self.ty(d),
            entries,
        };
        let id = self.vtables.len() as VtableId;
        self.vtables.push(vt);
        self.vtable_ids.insert((concrete, dyn_ty), id);
        Some(id)
    }

    fn unwind(&self, u: &smir::UnwindAction) -> kmir::Unwind {
        match u {
            smir::UnwindAction::Continue => kmir::Unwind::Continue,
            smir::UnwindAction::Unreachable => kmir::Unwind::Unreachable,
            smir::UnwindAction::Terminate => kmir::Unwind::Terminate,
            smir::UnwindAction::Cleanup(b) => kmir::Unwind::Cleanup(*b as u32),
        }
    }

    fn terminator(&mut self, t: &smir::Terminator, locals: &[smir::LocalDecl]) -> kmir::Terminator {
        use smir::TerminatorKind as T;
        let kind = match &t.kind {
            T::Goto { target } => kmir::TerminatorKind::Goto {
                target: *target as u32,
            },
            T::SwitchInt { discr, targets } => kmir::TerminatorKind::SwitchInt {
                discr: self.operand(discr),
                targets: targets
                    .branches()
                    .map(|(value, target)| kmir::SwitchTarget {
                        value,
                        target: target as u32,
                    })
                    .collect(),
                otherwise: targets.otherwise() as u32,
            },
            T::Resume => kmir::TerminatorKind::Resume,
            T::Abort => kmir::TerminatorKind::Abort,
            T::Return => kmir::TerminatorKind::Return,
            T::Unreachable => kmir::TerminatorKind::Unreachable,
            T::Drop {
                place,
                target,
                unwind,
            } => {
                let glue = place.ty(locals).ok().and_then(|ty| {
                    let glue = SInstance::resolve_drop_in_place(ty);
                    (!glue.is_empty_shim()).then(|| self.reference(&glue))
                });
                kmir::TerminatorKind::Drop {
                    place: self.place(place),
                    glue: glue.map(Into::into),
                    target: *target as u32,
                    unwind: self.unwind(unwind),
                }
            }
            T::Call {
                func,
                args,
                destination,
                target,
                unwind,
            } => kmir::TerminatorKind::Call {
                callee: self.callee(func, locals),
                args: args.iter().map(|a| self.operand(a)).collect(),
                destination: self.place(destination),
                target: target.map(|t| t as u32),
                unwind: self.unwind(unwind),
            },
            T::Assert {
                cond,
                expected,
                target,
                unwind,
                ..
            } => kmir::TerminatorKind::Assert {
                cond: self.operand(cond),
                expected: *expected,
                target: *target as u32,
                unwind: self.unwind(unwind),
            },
            T::InlineAsm {
                operands,
                destination,
                unwind,
                ..
            } => {
                let mut fn_ptrs = Vec::new();
                for op in operands {
                    if let Some(smir::Operand::Constant(c)) = &op.in_value
                        && let kmir::ConstValue::Memory(m) = self.constant(&c.const_).value
                    {
                        fn_ptrs.extend(m.fn_ptrs);
                    }
                }
                kmir::TerminatorKind::InlineAsm {
                    target: destination.map(|t| t as u32),
                    unwind: self.unwind(unwind),
                    fn_ptrs,
                }
            }
        };
        kmir::Terminator {
            kind,
            span: self.span(t.span),
        }
    }

    fn callee(&mut self, func: &smir::Operand, locals: &[smir::LocalDecl]) -> kmir::Callee {
        let Ok(fn_ty) = func.ty(locals) else {
            return kmir::Callee::Unresolved {
                path: "<callee of unknown type>".into(),
            };
        };
        match fn_ty.kind().rigid().cloned() {
            Some(sty::RigidTy::FnDef(def, args)) => match SInstance::resolve(def, &args) {
                Ok(instance) => match instance.kind {
                    SInstanceKind::Virtual { idx } => {
                        let internal = rustc_internal::internal(self.tcx, instance);
                        let method = internal.def_id();
                        let trait_def = self.tcx.trait_of_assoc(method).unwrap_or(method);
                        kmir::Callee::Virtual {
                            trait_method: def_path(self.tcx, method).into(),
                            trait_path: def_path(self.tcx, trait_def).into(),
                            slot: idx as u32,
                        }
                    }
                    SInstanceKind::Intrinsic => kmir::Callee::Intrinsic {
                        name: instance
                            .intrinsic_name()
                            .unwrap_or_else(|| instance.name())
                            .into(),
                    },
                    _ => kmir::Callee::Direct {
                        symbol: self.reference(&instance).into(),
                    },
                },
                Err(_) => kmir::Callee::Unresolved {
                    path: self.canon(def).into(),
                },
            },
            _ => {
                let internal = rustc_internal::internal(self.tcx, fn_ty);
                let sig = match internal.kind() {
                    ty::FnPtr(..) => sig_key(self.tcx, internal.fn_sig(self.tcx)),
                    _ => canonical_ty_string(self.tcx, fn_ty),
                };
                kmir::Callee::Indirect {
                    operand: self.operand(func),
                    fn_ty: self.ty(fn_ty),
                    sig: sig.into(),
                }
            }
        }
    }

    // -------------------------------------------------------------- statics

    pub fn static_item(
        &mut self,
        symbol: String,
        def_id: DefId,
    ) -> Result<kmir::StaticItem, String> {
        let tcx = self.tcx;
        // Checked before anything else is asked about the item: queries such
        // as `type_of` or `def_span` are compiler bugs (ICEs) on kinds they
        // do not expect, and an ICE counts as an error of the whole build.
        let DefKind::Static { nested, .. } = tcx.def_kind(def_id) else {
            return Err(format!(
                "static item `{symbol}` is a {:?}, not a static",
                tcx.def_kind(def_id)
            ));
        };
        let item: rustc_public::mir::mono::MonoItem =
            rustc_internal::stable(rustc_middle::mono::MonoItem::Static(def_id));
        let rustc_public::mir::mono::MonoItem::Static(def) = item else {
            bug!("a static mono item converted to something else");
        };
        let mut pointers = Pointers::default();
        self.nested_seen.clear();
        let alloc = def.eval_initializer().ok();
        let (ty, span) = if nested {
            // A nested static has no type (`type_of` ICEs) and no source of
            // its own (`def_span` ICEs): it is memory its parent points to.
            let parent = tcx.parent(def_id);
            let size = alloc.as_ref().map_or(0, |a| a.bytes.len() as u64);
            (
                self.nested_static_ty(def_id, parent, size),
                tcx.def_span(parent),
            )
        } else {
            (static_ty(tcx, def_id), tcx.def_span(def_id))
        };
        if let Some(alloc) = &alloc {
            self.collect_pointers(alloc, &mut pointers, 0, Some(ty));
        }
        let ty = self.ty(rustc_internal::stable(ty));
        Ok(kmir::StaticItem {
            path: def_path(tcx, def_id).into(),
            symbol: symbol.into(),
            ty,
            span: self.internal_span(span),
            mutable: tcx.is_mutable_static(def_id),
            fn_ptrs: pointers.fns.into_iter().map(Into::into).collect(),
            vtables: pointers.vtables,
            fn_fields: pointers.fields,
        })
    }

    /// The type of nested static `def_id` of size `size`: what the pointer
    /// to it in its parent's value points to, found by walking the parent's
    /// value; bytes (`[u8; size]`) where no typed pointer leads to it (a
    /// pointer stored as an integer, a `dyn` pointee).
    fn nested_static_ty(&mut self, def_id: DefId, parent: DefId, size: u64) -> ty::Ty<'tcx> {
        let tcx = self.tcx;
        if !self.nested_tys.contains_key(&def_id)
            && matches!(tcx.def_kind(parent), DefKind::Static { nested: false, .. })
        {
            let item: rustc_public::mir::mono::MonoItem =
                rustc_internal::stable(rustc_middle::mono::MonoItem::Static(parent));
            if let rustc_public::mir::mono::MonoItem::Static(parent_def) = item
                && let Ok(alloc) = parent_def.eval_initializer()
            {
                let ty = static_ty(tcx, parent);
                // Only for the types it records: the parent's own item
                // collects its pointers when it is dumped.
                self.nested_seen.clear();
                self.collect_pointers(&alloc, &mut Pointers::default(), 0, Some(ty));
                self.nested_seen.clear();
            }
        }
        match self.nested_tys.get(&def_id) {
            Some(&pointee) => self.sized_view(pointee, size),
            None => ty::Ty::new_array(tcx, tcx.types.u8, size),
        }
    }

    /// `pointee` as the sized type of an allocation of `size` bytes: a slice
    /// or `str` becomes the array it is, a sized type stays, anything else
    /// unsized (`dyn Trait`, a struct with an unsized tail) is bytes.
    fn sized_view(&self, pointee: ty::Ty<'tcx>, size: u64) -> ty::Ty<'tcx> {
        let tcx = self.tcx;
        let bytes = || ty::Ty::new_array(tcx, tcx.types.u8, size);
        match pointee.kind() {
            ty::Slice(elem) => {
                let elem_size = tcx
                    .layout_of(TypingEnv::fully_monomorphized().as_query_input(*elem))
                    .map(|l| l.size.bytes())
                    .unwrap_or(0);
                if elem_size == 0 || !size.is_multiple_of(elem_size) {
                    bytes()
                } else {
                    ty::Ty::new_array(tcx, *elem, size / elem_size)
                }
            }
            ty::Str => bytes(),
            _ if pointee.is_sized(tcx, TypingEnv::fully_monomorphized()) => pointee,
            _ => bytes(),
        }
    }

    // ---------------------------------------------------------- annotations

    /// Every local item carrying a `klint::` or `kanalyze::` tool attribute.
    pub fn tool_attributes(&mut self) -> Vec<kmir::ItemAttrs> {
        let tcx = self.tcx;
        let mut out = Vec::new();
        // Items, and the fields of local structs and unions: an invariant
        // like `#[kanalyze::empty_at_teardown]` is written on a field, and
        // fields are not among the crate's item definitions.
        let mut defs: Vec<rustc_span::def_id::LocalDefId> =
            tcx.hir_crate_items(()).definitions().collect();
        for local in tcx.hir_crate_items(()).definitions() {
            if matches!(
                tcx.def_kind(local),
                rustc_hir::def::DefKind::Struct | rustc_hir::def::DefKind::Union
            ) {
                defs.extend(
                    tcx.adt_def(local)
                        .all_fields()
                        .filter_map(|f| f.did.as_local()),
                );
            }
        }
        for local in defs {
            let attrs = tcx.hir_attrs(tcx.local_def_id_to_hir_id(local));
            let mut found = Vec::new();
            for attr in attrs {
                let path = attr.path();
                let Some(tool) = path.first().map(|s| s.to_string()) else {
                    continue;
                };
                if tool != "klint" && tool != "kanalyze" {
                    continue;
                }
                let name = path
                    .iter()
                    .skip(1)
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join("::");
                found.push(kmir::ToolAttr {
                    tool: tool.into(),
                    name: name.into(),
                    text: rustc_hir_pretty::attribute_to_string(&tcx, attr)
                        .trim()
                        .into(),
                    span: self.internal_span(attr.span()),
                });
            }
            if found.is_empty() {
                continue;
            }
            let def_id = local.to_def_id();
            out.push(kmir::ItemAttrs {
                path: def_path(tcx, def_id).into(),
                kind: if tcx.is_foreign_item(def_id) {
                    format!("foreign {}", tcx.def_descr(def_id)).into()
                } else {
                    tcx.def_descr(def_id).into()
                },
                span: self.internal_span(tcx.def_span(def_id)),
                attrs: found,
            });
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }
}

#[derive(Default)]
struct Pointers {
    fns: Vec<String>,
    vtables: Vec<VtableId>,
    statics: Vec<String>,
    fields: Vec<kmir::FnField>,
}

/// What a byte of constant memory is part of (see `Translator::leaf_at`).
struct Leaf<'tcx> {
    ty: ty::Ty<'tcx>,
    /// The innermost struct and field holding it.
    owner: Option<(String, String)>,
}

/// What a pointer of type `ty` points to, for walking nested memory: the
/// pointee of a reference or raw pointer, also inside an `Option`.
/// A static rustc created for memory a static's initializer points to.
fn is_nested_static(tcx: TyCtxt<'_>, def_id: DefId) -> bool {
    matches!(tcx.def_kind(def_id), DefKind::Static { nested: true, .. })
}

/// The declared type of a (non-nested) static, normalized: types outside
/// bodies may still hold projections (`IdArray<<D as Driver>::IdInfo, N>`).
fn static_ty(tcx: TyCtxt<'_>, def_id: DefId) -> ty::Ty<'_> {
    let declared = tcx.type_of(def_id).instantiate_identity();
    tcx.try_normalize_erasing_regions(TypingEnv::fully_monomorphized(), declared)
        .unwrap_or_else(|_| declared.skip_norm_wip())
}

fn pointee<'tcx>(ty: ty::Ty<'tcx>) -> Option<ty::Ty<'tcx>> {
    match ty.kind() {
        ty::Ref(_, t, _) | ty::RawPtr(t, _) => Some(*t),
        ty::Adt(adt, args) if adt.is_enum() => args.types().find_map(pointee),
        _ => None,
    }
}

/// A type rendered with canonical paths (`core::option::Option<k::Guard<'_, u32>>`),
/// identical whichever crate prints it, so it can identify types across dumps.
fn canonical_ty_string(tcx: TyCtxt<'_>, ty: sty::Ty) -> String {
    let internal = rustc_internal::internal(tcx, ty);
    with_no_visible_paths!(with_resolve_crate_name!(with_no_trimmed_paths!(
        internal.to_string()
    )))
}

/// The key under which fn pointers and their possible targets are matched:
/// `[extern "ABI" ]fn(inputs) -> output` in canonical paths, regions erased.
fn sig_key<'tcx>(tcx: TyCtxt<'tcx>, sig: ty::PolyFnSig<'tcx>) -> String {
    let sig = tcx.instantiate_bound_regions_with_erased(sig);
    let show = |t: ty::Ty<'tcx>| {
        let t = tcx.erase_and_anonymize_regions(t);
        with_no_visible_paths!(with_resolve_crate_name!(with_no_trimmed_paths!(
            t.to_string()
        )))
    };
    let inputs: Vec<String> = sig.inputs().iter().map(|t| show(*t)).collect();
    let abi = if sig.abi() == rustc_abi::ExternAbi::Rust {
        String::new()
    } else {
        format!("extern \"{}\" ", sig.abi().name())
    };
    format!("{abi}fn({}) -> {}", inputs.join(", "), show(sig.output()))
}

/// The fn-pointer signature of a function or closure instance.
fn instance_sig<'tcx>(tcx: TyCtxt<'tcx>, instance: ty::Instance<'tcx>) -> Option<String> {
    let fn_ty = instance.ty(tcx, TypingEnv::fully_monomorphized());
    match fn_ty.kind() {
        ty::FnDef(..) => Some(sig_key(tcx, fn_ty.fn_sig(tcx))),
        ty::Closure(_, args) => {
            let sig = tcx.signature_unclosure(args.as_closure().sig(), rustc_hir::Safety::Safe);
            Some(sig_key(tcx, sig))
        }
        _ => None,
    }
}

fn is_mut(m: smir::Mutability) -> bool {
    matches!(m, smir::Mutability::Mut)
}

fn bin_op(op: smir::BinOp) -> kmir::BinOp {
    use kmir::BinOp as K;
    use smir::BinOp as B;
    match op {
        B::Add => K::Add,
        B::AddUnchecked => K::AddUnchecked,
        B::Sub => K::Sub,
        B::SubUnchecked => K::SubUnchecked,
        B::Mul => K::Mul,
        B::MulUnchecked => K::MulUnchecked,
        B::Div => K::Div,
        B::Rem => K::Rem,
        B::BitXor => K::BitXor,
        B::BitAnd => K::BitAnd,
        B::BitOr => K::BitOr,
        B::Shl => K::Shl,
        B::ShlUnchecked => K::ShlUnchecked,
        B::Shr => K::Shr,
        B::ShrUnchecked => K::ShrUnchecked,
        B::Eq => K::Eq,
        B::Lt => K::Lt,
        B::Le => K::Le,
        B::Ne => K::Ne,
        B::Ge => K::Ge,
        B::Gt => K::Gt,
        B::Cmp => K::Cmp,
        B::Offset => K::Offset,
    }
}

/// Blocks only reachable through unwind edges. MIR keeps cleanup code
/// separate: a cleanup block only ever continues to cleanup blocks.
fn cleanup_blocks(body: &smir::Body) -> Vec<bool> {
    let mut cleanup = vec![false; body.blocks.len()];
    let mut work = Vec::new();
    for b in &body.blocks {
        use smir::TerminatorKind as T;
        let unwind = match &b.terminator.kind {
            T::Drop { unwind, .. }
            | T::Call { unwind, .. }
            | T::Assert { unwind, .. }
            | T::InlineAsm { unwind, .. } => Some(unwind),
            _ => None,
        };
        if let Some(smir::UnwindAction::Cleanup(target)) = unwind {
            work.push(*target);
        }
    }
    while let Some(b) = work.pop() {
        if b >= cleanup.len() || cleanup[b] {
            continue;
        }
        cleanup[b] = true;
        work.extend(body.blocks[b].terminator.successors());
    }
    cleanup
}

/// For an unsize coercion from `src` to `dst` (pointers, references, or
/// smart pointers such as `Box`/`Arc`/`Pin<&mut _>`), the pair of pointee
/// tails that differ: `(Concrete, dyn Trait)` builds a vtable,
/// `(dyn A, dyn B)` is an upcast, `([T; N], [T])` needs nothing.
fn unsize_tails<'tcx>(
    tcx: TyCtxt<'tcx>,
    src: ty::Ty<'tcx>,
    dst: ty::Ty<'tcx>,
) -> Option<(ty::Ty<'tcx>, ty::Ty<'tcx>)> {
    let env = TypingEnv::fully_monomorphized();
    match (src.kind(), dst.kind()) {
        (ty::Ref(_, a, _) | ty::RawPtr(a, _), ty::Ref(_, b, _) | ty::RawPtr(b, _)) => {
            Some(tcx.struct_lockstep_tails_for_codegen(*a, *b, env))
        }
        (ty::Adt(da, aa), ty::Adt(db, ab)) if da == db => {
            for (x, y) in aa.types().zip(ab.types()) {
                if x == y {
                    continue;
                }
                if matches!(x.kind(), ty::Ref(..) | ty::RawPtr(..) | ty::Adt(..))
                    && let Some(pair) = unsize_tails(tcx, x, y)
                {
                    return Some(pair);
                }
                return Some(tcx.struct_lockstep_tails_for_codegen(x, y, env));
            }
            None
        }
        _ => Some(tcx.struct_lockstep_tails_for_codegen(src, dst, env)),
    }
}

/// Evaluates the constants of a freshly instantiated body, as rustc_public's
/// own body builder does for `Instance::body()`.
struct ConstEvaluator<'tcx> {
    tcx: TyCtxt<'tcx>,
}

impl<'tcx> MutVisitor<'tcx> for ConstEvaluator<'tcx> {
    fn visit_const_operand(
        &mut self,
        constant: &mut imir::ConstOperand<'tcx>,
        location: imir::Location,
    ) {
        let const_ = constant.const_;
        if let Ok(val) = const_.eval(self.tcx, TypingEnv::fully_monomorphized(), constant.span) {
            constant.const_ = imir::Const::Val(val, constant.ty());
        }
        self.super_const_operand(constant, location);
    }

    fn tcx(&self) -> TyCtxt<'tcx> {
        self.tcx
    }
}

/// `const_eval_select(args, const_fn, runtime_fn)` runs `runtime_fn` in
/// compiled code; the optimized MIR has it replaced, the elaborated MIR not
/// yet. Do the same replacement so the runtime callee is a plain call.
fn remap_const_eval_select<'tcx>(
    tcx: TyCtxt<'tcx>,
    mut body: imir::Body<'tcx>,
) -> imir::Body<'tcx> {
    for block in body.basic_blocks.as_mut() {
        let Some(term) = &mut block.terminator else {
            continue;
        };
        let imir::TerminatorKind::Call { func, args, .. } = &mut term.kind else {
            continue;
        };
        let func_ty = func.ty(&body.local_decls, tcx);
        let ty::FnDef(def_id, _) = *func_ty.kind() else {
            continue;
        };
        if !tcx.is_intrinsic(def_id, rustc_span::sym::const_eval_select) || args.len() != 3 {
            continue;
        }
        let runtime = args[2].node.clone();
        let tuple = args[0].node.clone();
        // The runtime function takes the tuple's fields as its arguments;
        // keep the tuple as one argument: the analysis only needs the callee.
        *func = runtime;
        let span = args[0].span;
        *args = Box::new([rustc_span::Spanned { node: tuple, span }]);
    }
    body
}

/// The dump's form of the compiler's inline attribute.
fn inline_attr(attr: &rustc_hir::attrs::InlineAttr) -> kmir::Inline {
    use rustc_hir::attrs::InlineAttr;
    match attr {
        InlineAttr::None => kmir::Inline::None,
        InlineAttr::Hint => kmir::Inline::Hint,
        InlineAttr::Always | InlineAttr::Force { .. } => kmir::Inline::Always,
        InlineAttr::Never => kmir::Inline::Never,
    }
}
