//! What annotations (or the type of a drop glue) fix in advance about a
//! function's summary.

use annotations::ExpectRange;
use program::FnId;

use crate::Input;
use crate::external::annotation_of;

/// What annotations or the type of a drop glue fix in advance.
pub(crate) struct Declared {
    pub adjust: Option<i32>,
    pub expect: Option<ExpectRange>,
    pub unchecked: bool,
    pub path: String,
    pub span: kmir::Span,
    /// klint's built-in annotation of a `core` item: no attribute to point at.
    pub builtin: bool,
    /// Declared on the trait method this function implements.
    pub on_trait: bool,
}

pub(crate) fn declared(input: &Input<'_>, f: FnId) -> Option<Declared> {
    let (_, inst) = input.program.body_of(f)?;
    let from = |path: &str, on_trait: bool, drop: bool| {
        let (pc, span) = if drop {
            let (pc, span) = input.annotations.get(path)?.drop_preempt.as_ref()?;
            (pc.clone(), Some(*span))
        } else {
            annotation_of(input, path)?
        };
        Some(Declared {
            adjust: pc.adjust,
            expect: pc.expect,
            unchecked: pc.unchecked,
            path: path.to_string(),
            span: span.unwrap_or(inst.span),
            builtin: span.is_none(),
            on_trait,
        })
    };
    if let kmir::InstanceKind::DropGlue { ty } = inst.kind {
        let crate_dump = &input.program.body_of(f)?.0.dump;
        return match &crate_dump.ty(ty)?.kind {
            kmir::TyKind::Adt { path, .. } => from(path, false, true),
            _ => None,
        };
    }
    from(&inst.item_path, false, false).or_else(|| {
        inst.trait_item
            .as_deref()
            .and_then(|t| from(t, true, false))
    })
}

/// What the text helpers need to know about a declaration.
#[derive(Clone, Debug, bincode::Encode, bincode::Decode)]
pub struct DeclaredView {
    pub adjust: Option<i32>,
    pub expect: Option<ExpectRange>,
    pub path: String,
    pub span: kmir::Span,
    pub builtin: bool,
    pub on_trait: bool,
}

pub(crate) fn d_view(d: &Declared) -> DeclaredView {
    DeclaredView {
        adjust: d.adjust,
        expect: d.expect,
        path: d.path.clone(),
        span: d.span,
        builtin: d.builtin,
        on_trait: d.on_trait,
    }
}
