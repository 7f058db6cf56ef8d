//! A read-only walk over a body's MIR, in the style of rustc's
//! `mir::visit::Visitor`: override the `visit_*` methods for what a scan
//! looks at; each default hands the parts to the `walk_*` function that
//! visits them, so an override can still call it to go deeper.
//!
//! Flow-insensitive pre-scans (which locals are ever written, borrowed
//! mutably, copied from a call's result) are visitors; flow-sensitive
//! analyses use the `dataflow` engine instead.

use crate::model::{
    Block, BlockId, Body, Callee, LocalId, Operand, Place, Projection, Rvalue, Statement,
    StatementKind, Terminator, TerminatorKind,
};

/// Where in a body something is: a statement of a block, or its terminator
/// (`statement == block.statements.len()`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    pub block: BlockId,
    pub statement: usize,
}

/// How a place is used where it is visited.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PlaceContext {
    /// Assigned by a statement (`place = rvalue`).
    Assign,
    /// Its enum variant set (`SetDiscriminant`).
    SetDiscriminant,
    /// Written with a call's return value.
    CallDestination,
    /// Read by value (`copy`/`move` operands).
    Read { moved: bool },
    /// Borrowed (`&place`, `&mut place`).
    Borrow { mutable: bool },
    /// Its address taken as a raw pointer (`&raw const`/`&raw mut`).
    AddressOf { mutable: bool },
    /// Inspected without being read as a whole (`discriminant`, `len`,
    /// `CopyForDeref`).
    Inspect,
    /// Dropped by a `Drop` terminator.
    Drop,
}

impl PlaceContext {
    /// Whether the place's value may change here.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            PlaceContext::Assign | PlaceContext::SetDiscriminant | PlaceContext::CallDestination
        )
    }
}

/// A read-only MIR visitor. Every method has a default that walks deeper.
pub trait Visitor {
    fn visit_body(&mut self, body: &Body) {
        walk_body(self, body)
    }

    fn visit_block(&mut self, id: BlockId, block: &Block) {
        walk_block(self, id, block)
    }

    fn visit_statement(&mut self, statement: &Statement, location: Location) {
        walk_statement(self, statement, location)
    }

    fn visit_assign(&mut self, place: &Place, rvalue: &Rvalue, location: Location) {
        self.visit_place(place, PlaceContext::Assign, location);
        self.visit_rvalue(rvalue, location);
    }

    fn visit_terminator(&mut self, terminator: &Terminator, location: Location) {
        walk_terminator(self, terminator, location)
    }

    fn visit_rvalue(&mut self, rvalue: &Rvalue, location: Location) {
        walk_rvalue(self, rvalue, location)
    }

    fn visit_operand(&mut self, operand: &Operand, location: Location) {
        walk_operand(self, operand, location)
    }

    fn visit_place(&mut self, _place: &Place, _context: PlaceContext, _location: Location) {}
}

pub fn walk_body<V: Visitor + ?Sized>(v: &mut V, body: &Body) {
    for (id, block) in body.blocks.iter().enumerate() {
        v.visit_block(id as BlockId, block);
    }
}

pub fn walk_block<V: Visitor + ?Sized>(v: &mut V, id: BlockId, block: &Block) {
    for (i, s) in block.statements.iter().enumerate() {
        v.visit_statement(
            s,
            Location {
                block: id,
                statement: i,
            },
        );
    }
    v.visit_terminator(
        &block.terminator,
        Location {
            block: id,
            statement: block.statements.len(),
        },
    );
}

pub fn walk_statement<V: Visitor + ?Sized>(v: &mut V, statement: &Statement, location: Location) {
    match &statement.kind {
        StatementKind::Assign { place, rvalue } => v.visit_assign(place, rvalue, location),
        StatementKind::SetDiscriminant { place, .. } => {
            v.visit_place(place, PlaceContext::SetDiscriminant, location)
        }
        StatementKind::Intrinsic { operands, .. } => {
            for o in operands {
                v.visit_operand(o, location);
            }
        }
        StatementKind::StorageLive(_) | StatementKind::StorageDead(_) => {}
    }
}

pub fn walk_terminator<V: Visitor + ?Sized>(
    v: &mut V,
    terminator: &Terminator,
    location: Location,
) {
    match &terminator.kind {
        TerminatorKind::SwitchInt { discr, .. } => v.visit_operand(discr, location),
        TerminatorKind::Drop { place, .. } => v.visit_place(place, PlaceContext::Drop, location),
        TerminatorKind::Call {
            callee,
            args,
            destination,
            ..
        } => {
            if let Callee::Indirect { operand, .. } = callee {
                v.visit_operand(operand, location);
            }
            for a in args {
                v.visit_operand(a, location);
            }
            v.visit_place(destination, PlaceContext::CallDestination, location);
        }
        TerminatorKind::Assert { cond, .. } => v.visit_operand(cond, location),
        TerminatorKind::Goto { .. }
        | TerminatorKind::Resume
        | TerminatorKind::Abort
        | TerminatorKind::Return
        | TerminatorKind::Unreachable
        | TerminatorKind::InlineAsm { .. } => {}
    }
}

pub fn walk_rvalue<V: Visitor + ?Sized>(v: &mut V, rvalue: &Rvalue, location: Location) {
    match rvalue {
        Rvalue::Use(o)
        | Rvalue::UnaryOp { operand: o, .. }
        | Rvalue::Cast { operand: o, .. }
        | Rvalue::Repeat { operand: o, .. } => v.visit_operand(o, location),
        Rvalue::BinaryOp { lhs, rhs, .. } | Rvalue::CheckedBinaryOp { lhs, rhs, .. } => {
            v.visit_operand(lhs, location);
            v.visit_operand(rhs, location);
        }
        Rvalue::Aggregate { operands, .. } => {
            for o in operands {
                v.visit_operand(o, location);
            }
        }
        Rvalue::Ref { mutable, place } => {
            v.visit_place(place, PlaceContext::Borrow { mutable: *mutable }, location)
        }
        Rvalue::AddressOf { mutable, place } => v.visit_place(
            place,
            PlaceContext::AddressOf { mutable: *mutable },
            location,
        ),
        Rvalue::Discriminant(p) | Rvalue::Len(p) | Rvalue::CopyForDeref(p) => {
            v.visit_place(p, PlaceContext::Inspect, location)
        }
        Rvalue::ThreadLocalRef { .. } => {}
    }
}

pub fn walk_operand<V: Visitor + ?Sized>(v: &mut V, operand: &Operand, location: Location) {
    match operand {
        Operand::Copy(p) => v.visit_place(p, PlaceContext::Read { moved: false }, location),
        Operand::Move(p) => v.visit_place(p, PlaceContext::Read { moved: true }, location),
        Operand::Constant(_) | Operand::RuntimeChecks(_) => {}
    }
}

/// Every place a closure is given, with how it is used and where.
pub fn for_each_place(body: &Body, f: impl FnMut(&Place, PlaceContext, Location)) {
    struct Places<F>(F);
    impl<F: FnMut(&Place, PlaceContext, Location)> Visitor for Places<F> {
        fn visit_place(&mut self, place: &Place, context: PlaceContext, location: Location) {
            (self.0)(place, context, location)
        }
    }
    Places(f).visit_body(body);
}

/// Every assignment `place = rvalue` of a body, with where it is.
pub fn for_each_assign(body: &Body, f: impl FnMut(&Place, &Rvalue, Location)) {
    struct Assigns<F>(F);
    impl<F: FnMut(&Place, &Rvalue, Location)> Visitor for Assigns<F> {
        fn visit_assign(&mut self, place: &Place, rvalue: &Rvalue, location: Location) {
            (self.0)(place, rvalue, location)
        }
        fn visit_terminator(&mut self, _: &Terminator, _: Location) {}
    }
    Assigns(f).visit_body(body);
}

/// The rvalue of the one statement that assigns `local` as a whole
/// (`_5 = …`), when exactly one does; call destinations are not counted.
/// What such a local holds is what that statement put there.
pub fn sole_assignment(body: &Body, local: LocalId) -> Option<&Rvalue> {
    let mut found = None;
    let mut count = 0usize;
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        if let StatementKind::Assign { place, rvalue } = &s.kind
            && place.local == local
            && place.projection.is_empty()
        {
            count += 1;
            found = Some(&**rvalue);
        }
    }
    if count == 1 { found } else { None }
}

/// The only definition of a local ([`single_definitions`]).
#[derive(Clone, Copy, Debug)]
pub enum Definition<'b> {
    /// `_l = rvalue`.
    Statement(&'b Rvalue),
    /// The destination of the call ending this block.
    Call(BlockId),
}

/// For each local, its definition when it has exactly one (a whole
/// assignment or a call's destination), is not an argument, and only ever
/// holds what that definition put there ([`only_assigned_whole`], for every
/// local in one pass).
pub fn single_definitions(body: &Body) -> Vec<Option<Definition<'_>>> {
    let n = body.locals.len();
    let mut count = vec![0u32; n];
    let mut defs: Vec<Option<Definition<'_>>> = vec![None; n];
    for (bi, b) in body.blocks.iter().enumerate() {
        for st in &b.statements {
            if let StatementKind::Assign { place, rvalue } = &st.kind
                && place.projection.is_empty()
                && let Some(c) = count.get_mut(place.local as usize)
            {
                *c += 1;
                defs[place.local as usize] = Some(Definition::Statement(rvalue));
            }
        }
        if let crate::model::TerminatorKind::Call { destination, .. } = &b.terminator.kind
            && destination.projection.is_empty()
            && let Some(c) = count.get_mut(destination.local as usize)
        {
            *c += 1;
            defs[destination.local as usize] = Some(Definition::Call(bi as BlockId));
        }
    }
    // Written in part, borrowed mutably or by address: not what the one
    // definition put there.
    let mut whole = vec![true; n];
    for_each_place(body, |place, context, _| {
        if place.projection.first() == Some(&Projection::Deref) {
            return;
        }
        let partial_write = context.is_write() && !place.projection.is_empty();
        let escapes = matches!(
            context,
            PlaceContext::Borrow { mutable: true } | PlaceContext::AddressOf { .. }
        );
        if (partial_write || escapes)
            && let Some(w) = whole.get_mut(place.local as usize)
        {
            *w = false;
        }
    });
    for (l, d) in defs.iter_mut().enumerate() {
        let arg = l >= 1 && l <= body.arg_count as usize;
        if count[l] != 1 || arg || !whole[l] {
            *d = None;
        }
    }
    defs
}

/// Whether `local` only ever holds what whole assignments put there: no
/// statement or call writes a part of it (`_5.0 = …`), and it is never
/// borrowed mutably or has its address taken (which would let a write
/// through a pointer change it). Writes through a pointer stored in it
/// (`(*_5).0 = …`) do not change the local itself.
pub fn only_assigned_whole(body: &Body, local: LocalId) -> bool {
    let mut whole = true;
    for_each_place(body, |place, context, _| {
        if place.local != local || place.projection.first() == Some(&Projection::Deref) {
            return;
        }
        let partial_write = context.is_write() && !place.projection.is_empty();
        let escapes = matches!(
            context,
            PlaceContext::Borrow { mutable: true } | PlaceContext::AddressOf { .. }
        );
        if partial_write || escapes {
            whole = false;
        }
    });
    whole
}

/// The arguments a body never writes (as a whole or in part; writes
/// through a pointer an argument holds do not count): each holds what the
/// caller passed for the whole call.
pub fn unwritten_args(body: &Body) -> Vec<LocalId> {
    let mut written = Vec::new();
    for_each_place(body, |place, context, _| {
        if context.is_write() && !place.projection.contains(&Projection::Deref) {
            written.push(place.local);
        }
    });
    (1..=body.arg_count)
        .filter(|l| !written.contains(l))
        .collect()
}

/// The locals a place reads: its base and any index.
pub fn place_locals(place: &Place, out: &mut Vec<LocalId>) {
    out.push(place.local);
    for p in &place.projection {
        if let Projection::Index(l) = p {
            out.push(*l);
        }
    }
}

/// The locals an operand reads (none for a constant).
pub fn operand_locals(operand: &Operand, out: &mut Vec<LocalId>) {
    if let Operand::Copy(p) | Operand::Move(p) = operand {
        place_locals(p, out);
    }
}

/// Every place an rvalue reads, borrows or inspects.
pub fn for_each_rvalue_place(rvalue: &Rvalue, f: impl FnMut(&Place)) {
    struct Places<F>(F);
    impl<F: FnMut(&Place)> Visitor for Places<F> {
        fn visit_place(&mut self, place: &Place, _: PlaceContext, _: Location) {
            (self.0)(place)
        }
    }
    let nowhere = Location {
        block: 0,
        statement: 0,
    };
    Places(f).visit_rvalue(rvalue, nowhere);
}

/// What values flow into some locals of a body (see [`value_sources`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueSources {
    /// The arguments (0-based) whose values flow in.
    pub args: std::collections::BTreeSet<usize>,
    /// A value decided at run time other than an argument flows in: the
    /// result of a call that takes no local (nothing the caller could make
    /// constant), a static, a thread-local, or a local nothing assigns.
    pub runtime: bool,
}

/// The locals an rvalue reads, and whether it reads a static or a
/// thread-local (values no constant propagation sees through).
struct Reads {
    locals: Vec<LocalId>,
    runtime: bool,
}

impl Visitor for Reads {
    fn visit_place(&mut self, place: &Place, _: PlaceContext, _: Location) {
        place_locals(place, &mut self.locals);
    }

    fn visit_operand(&mut self, operand: &Operand, location: Location) {
        if let Operand::Constant(c) = operand
            && let crate::model::ConstValue::Memory(m) = &c.value
            && !m.statics.is_empty()
        {
            self.runtime = true;
        }
        walk_operand(self, operand, location)
    }

    fn visit_rvalue(&mut self, rvalue: &Rvalue, location: Location) {
        if matches!(rvalue, Rvalue::ThreadLocalRef { .. }) {
            self.runtime = true;
        }
        walk_rvalue(self, rvalue, location)
    }
}

/// Which arguments and run-time values flow into `seeds`, through
/// assignments and call results (a call's result depends on its
/// arguments), flow-insensitively and without aliasing: a value written
/// through a pointer is not seen, and one read through a pointer depends
/// on the pointer. For `build_assert!` conditions: a condition fed only by
/// constants is decided at compile time whatever is inlined.
pub fn value_sources(body: &Body, seeds: &[LocalId]) -> ValueSources {
    value_sources_with(body, seeds, &|_| false)
}

/// [`value_sources`], where a call given only constants whose callee
/// `computes` says it computes its result from its arguments alone (a
/// constructor: `RangeInclusive::new(21, 39)`) brings no run-time value of
/// its own. Any other call given no local is a run-time value (it may read
/// a register, a global, the clock).
pub fn value_sources_with(
    body: &Body,
    seeds: &[LocalId],
    computes: &dyn Fn(&crate::model::Callee) -> bool,
) -> ValueSources {
    // Where each local's value comes from: each write's read locals, and
    // whether the write brings a run-time value of its own.
    let mut writes: std::collections::HashMap<LocalId, Vec<(Vec<LocalId>, bool)>> =
        std::collections::HashMap::new();
    for_each_assign(body, |place, rvalue, location| {
        let mut reads = Reads {
            locals: Vec::new(),
            runtime: false,
        };
        reads.visit_rvalue(rvalue, location);
        writes
            .entry(place.local)
            .or_default()
            .push((reads.locals, reads.runtime));
    });
    for block in &body.blocks {
        if let TerminatorKind::Call {
            callee,
            args,
            destination,
            ..
        } = &block.terminator.kind
        {
            let mut locals = Vec::new();
            for a in args {
                operand_locals(a, &mut locals);
            }
            let opaque = locals.is_empty() && !computes(callee);
            writes
                .entry(destination.local)
                .or_default()
                .push((locals, opaque));
        }
    }
    let mut out = ValueSources::default();
    let mut seen = std::collections::HashSet::new();
    let mut work: Vec<LocalId> = seeds.to_vec();
    while let Some(l) = work.pop() {
        if !seen.insert(l) {
            continue;
        }
        if l >= 1 && l <= body.arg_count {
            out.args.insert((l - 1) as usize);
            continue;
        }
        match writes.get(&l) {
            None => out.runtime = true,
            Some(ws) => {
                for (locals, runtime) in ws {
                    out.runtime |= *runtime;
                    work.extend(locals.iter().copied());
                }
            }
        }
    }
    out
}

/// The operands switched on by the branches that lead to any of `blocks`
/// (through `goto`s only): the conditions guarding them. Empty when
/// nothing branches to them; a constant operand when the branch is on one.
pub fn branch_conditions<'b>(body: &'b Body, blocks: &[BlockId]) -> Vec<&'b Operand> {
    let mut preds: std::collections::HashMap<BlockId, Vec<BlockId>> =
        std::collections::HashMap::new();
    for (i, b) in body.blocks.iter().enumerate() {
        let succ: Vec<BlockId> = match &b.terminator.kind {
            TerminatorKind::Goto { target } => vec![*target],
            TerminatorKind::SwitchInt {
                targets, otherwise, ..
            } => targets
                .iter()
                .map(|t| t.target)
                .chain([*otherwise])
                .collect(),
            _ => Vec::new(),
        };
        for t in succ {
            preds.entry(t).or_default().push(i as BlockId);
        }
    }
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut work: Vec<BlockId> = blocks.to_vec();
    while let Some(b) = work.pop() {
        if !seen.insert(b) {
            continue;
        }
        for &p in preds.get(&b).map(Vec::as_slice).unwrap_or(&[]) {
            match body.blocks.get(p as usize).map(|b| &b.terminator.kind) {
                Some(TerminatorKind::SwitchInt { discr, .. }) => out.push(discr),
                Some(TerminatorKind::Goto { .. }) => work.push(p),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LocalDecl, Span, Unwind};

    fn place(local: u32) -> Place {
        Place {
            local,
            projection: Box::new([]),
        }
    }

    fn stmt(place_: Place, rvalue: Rvalue) -> Statement {
        Statement {
            kind: StatementKind::Assign {
                place: place_,
                rvalue: Box::new(rvalue),
            },
            span: Span::default(),
        }
    }

    /// `_2 = &mut _1; _3 = f(move _2) -> bb1; bb1: drop(_1); return`.
    fn body() -> Body {
        let term = |kind| Terminator {
            kind,
            span: Span::default(),
        };
        Body {
            arg_count: 1,
            locals: (0..4)
                .map(|_| LocalDecl {
                    ty: 0,
                    span: Span::default(),
                    mutable: true,
                })
                .collect(),
            blocks: vec![
                Block {
                    statements: vec![stmt(
                        place(2),
                        Rvalue::Ref {
                            mutable: true,
                            place: place(1),
                        },
                    )],
                    terminator: term(TerminatorKind::Call {
                        callee: Callee::Direct { symbol: "f".into() },
                        args: vec![Operand::Move(place(2))],
                        destination: place(3),
                        target: Some(1),
                        unwind: Unwind::Continue,
                    }),
                    is_cleanup: false,
                },
                Block {
                    statements: vec![],
                    terminator: term(TerminatorKind::Drop {
                        place: place(1),
                        glue: None,
                        target: 2,
                        unwind: Unwind::Continue,
                    }),
                    is_cleanup: false,
                },
                Block {
                    statements: vec![],
                    terminator: term(TerminatorKind::Return),
                    is_cleanup: false,
                },
            ],
            var_names: vec![],
            span: Span::default(),
            drop_elaborated: true,
        }
    }

    #[test]
    fn places_are_visited_with_their_use_and_location() {
        let mut seen = Vec::new();
        for_each_place(&body(), |p, c, l| {
            seen.push((p.local, c, l.block, l.statement))
        });
        assert_eq!(
            seen,
            vec![
                (2, PlaceContext::Assign, 0, 0),
                (1, PlaceContext::Borrow { mutable: true }, 0, 0),
                (2, PlaceContext::Read { moved: true }, 0, 1),
                (3, PlaceContext::CallDestination, 0, 1),
                (1, PlaceContext::Drop, 1, 0),
            ]
        );
        assert!(PlaceContext::CallDestination.is_write());
        assert!(!PlaceContext::Drop.is_write());
    }

    #[test]
    fn assignments_skip_terminators() {
        let mut seen = Vec::new();
        for_each_assign(&body(), |p, r, l| {
            seen.push((p.local, matches!(r, Rvalue::Ref { .. }), l))
        });
        assert_eq!(
            seen,
            vec![(
                2,
                true,
                Location {
                    block: 0,
                    statement: 0
                }
            )]
        );
    }

    #[test]
    fn a_sole_assignment_is_found_and_a_second_one_hides_it() {
        let mut b = body();
        assert!(matches!(sole_assignment(&b, 2), Some(Rvalue::Ref { .. })));
        // `_3` is only a call's destination.
        assert!(sole_assignment(&b, 3).is_none());
        b.blocks[1]
            .statements
            .push(stmt(place(2), Rvalue::Use(Operand::Copy(place(1)))));
        assert!(sole_assignment(&b, 2).is_none());
    }

    #[test]
    fn a_local_borrowed_mutably_or_written_in_part_is_not_whole() {
        let mut b = body();
        // `_1` is borrowed mutably into `_2`; `_3` is only a call's result.
        assert!(!only_assigned_whole(&b, 1));
        assert!(only_assigned_whole(&b, 3));
        assert!(only_assigned_whole(&b, 2));
        // `_3.0 = copy _1` writes a part of `_3`.
        let field = Place {
            local: 3,
            projection: Box::new([Projection::Field { index: 0, ty: 0 }]),
        };
        b.blocks[1]
            .statements
            .push(stmt(field, Rvalue::Use(Operand::Copy(place(1)))));
        assert!(!only_assigned_whole(&b, 3));
        // A write through a pointer stored in `_2` leaves `_2` itself alone.
        let through = Place {
            local: 2,
            projection: Box::new([Projection::Deref]),
        };
        b.blocks[1]
            .statements
            .push(stmt(through, Rvalue::Use(Operand::Copy(place(1)))));
        assert!(only_assigned_whole(&b, 2));
    }

    #[test]
    fn an_override_can_stop_the_walk() {
        /// Counts statements but never looks into rvalues.
        struct Shallow(usize, usize);
        impl Visitor for Shallow {
            fn visit_assign(&mut self, _: &Place, _: &Rvalue, _: Location) {
                self.0 += 1;
            }
            fn visit_place(&mut self, _: &Place, _: PlaceContext, _: Location) {
                self.1 += 1;
            }
        }
        let mut v = Shallow(0, 0);
        v.visit_body(&body());
        // One assignment; the places seen are the call's and the drop's only.
        assert_eq!((v.0, v.1), (1, 3));
    }

    #[test]
    fn value_sources_follow_assignments_and_call_results_to_arguments() {
        let mut b = body();
        // `_3 = f(move _2)` with `_2 = &mut _1`: `_3` comes from argument 0.
        let s = value_sources(&b, &[3]);
        assert_eq!(
            (s.args.into_iter().collect::<Vec<_>>(), s.runtime),
            (vec![0], false)
        );
        // A call without arguments is a run-time value of its own.
        if let TerminatorKind::Call { args, .. } = &mut b.blocks[0].terminator.kind {
            args.clear();
        }
        let s = value_sources(&b, &[3]);
        assert!(s.args.is_empty() && s.runtime);
        // A constant is neither.
        b.blocks[1].statements.push(stmt(
            place(3),
            Rvalue::Use(Operand::Constant(Box::new(crate::model::Constant {
                ty: 0,
                value: crate::model::ConstValue::Scalar(4),
            }))),
        ));
        let s = value_sources(&b, &[2]);
        assert_eq!(s.args.into_iter().collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn branch_conditions_are_the_switches_reaching_a_block() {
        let mut b = body();
        // bb0 switches on `_3` to bb1 (through nothing) or bb2.
        b.blocks[0].terminator.kind = TerminatorKind::SwitchInt {
            discr: Operand::Copy(place(3)),
            targets: vec![crate::model::SwitchTarget {
                value: 0,
                target: 1,
            }],
            otherwise: 2,
        };
        assert_eq!(branch_conditions(&b, &[1]), vec![&Operand::Copy(place(3))]);
        assert!(branch_conditions(&b, &[0]).is_empty());
    }

    /// One definition each: `_2` by a statement, `_3` by a call; `_1` is
    /// an argument; `_4` is assigned twice; `_5` once, but also borrowed
    /// mutably; `_6` once, then written in part.
    #[test]
    fn single_definitions_need_one_whole_definition() {
        let mut b = body();
        b.locals.extend((0..3).map(|_| LocalDecl {
            ty: 0,
            span: Span::default(),
            mutable: true,
        }));
        let unit = || Rvalue::Use(Operand::Copy(place(1)));
        let part = Place {
            local: 6,
            projection: Box::new([Projection::Field { index: 0, ty: 0 }]),
        };
        b.blocks[1].statements = vec![
            stmt(place(4), unit()),
            stmt(place(4), unit()),
            stmt(place(5), unit()),
            stmt(
                place(0),
                Rvalue::Ref {
                    mutable: true,
                    place: place(5),
                },
            ),
            stmt(place(6), unit()),
            stmt(part, unit()),
        ];
        let defs = single_definitions(&b);
        let kind = |l: usize| match defs[l] {
            Some(Definition::Statement(_)) => "statement",
            Some(Definition::Call(_)) => "call",
            None => "none",
        };
        assert_eq!(
            (1..=6).map(kind).collect::<Vec<_>>(),
            ["none", "statement", "call", "none", "none", "none"]
        );
        assert!(matches!(defs[3], Some(Definition::Call(0))));
    }
}
