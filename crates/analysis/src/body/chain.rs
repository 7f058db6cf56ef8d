//! Following a local back through its one definition
//! (`kmir::visit::single_definitions`): the walks the structural
//! recognisers share (`accessors::exclusive_field`, `exclusive_handle`).

use kmir::visit::Definition;
use kmir::{BlockId, Body, LocalId, Operand, Projection, Rvalue, TerminatorKind};

/// Through moves and reborrows (`&mut (*x)`, `&(*x)`) to a local not
/// defined so.
pub(crate) fn source(defs: &[Option<Definition<'_>>], mut l: LocalId) -> LocalId {
    for _ in 0..16 {
        match defs.get(l as usize).copied().flatten() {
            Some(Definition::Statement(Rvalue::Use(Operand::Copy(p) | Operand::Move(p))))
                if p.projection.is_empty() =>
            {
                l = p.local
            }
            Some(Definition::Statement(Rvalue::Ref { place, .. }))
                if *place.projection == [Projection::Deref] =>
            {
                l = place.local
            }
            _ => break,
        }
    }
    l
}

/// The local a copy or move of a whole local reads.
pub(crate) fn operand_local(op: &Operand) -> Option<LocalId> {
    match op {
        Operand::Copy(p) | Operand::Move(p) if p.projection.is_empty() => Some(p.local),
        _ => None,
    }
}

/// The call ending the block that defines `l`, with its arguments.
pub(crate) fn call_of<'b>(
    body: &'b Body,
    defs: &[Option<Definition<'_>>],
    l: LocalId,
) -> Option<(BlockId, &'b [Operand])> {
    let Some(Definition::Call(c)) = defs.get(l as usize).copied().flatten() else {
        return None;
    };
    match &body.blocks.get(c as usize)?.terminator.kind {
        TerminatorKind::Call { args, .. } => Some((c, args.as_slice())),
        _ => None,
    }
}
