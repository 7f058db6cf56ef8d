//! The analyser on structurally mutated dumps: a real dump (one of the
//! seeds, compiled by the real compiler) is changed through the model —
//! block targets, callees, places, projections, types, constants, kinds,
//! annotations — written back with a valid prefix, and whatever the decoder
//! and `validate` accept goes through link, annotations, invariants, the
//! whole analysis and every rendering (text, JSON, SARIF). Nothing may
//! panic, loop without end or allocate without bound.
//!
//! The input's first byte picks the seed; every following group of four
//! bytes is one mutation `(op, what, value, extra)`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use kmir::{
    Callee, ConstValue, CrateDump, InstanceKind, Operand, Place, Projection, StatementKind,
    TerminatorKind, Unwind,
};

const SEEDS: &[&[u8]] = &[
    include_bytes!("../corpus/decode/seed-lockapi.kmir"),
    include_bytes!("../corpus/decode/seed-spin.kmir"),
    include_bytes!("../corpus/decode/seed-smallvec.kmir"),
];

/// An index for a table of `len` entries: mostly in range, sometimes just
/// past the end (which `validate` must reject).
fn index(value: u8, len: usize) -> u32 {
    if value >= 250 {
        (len + usize::from(value - 250)) as u32
    } else if len == 0 {
        0
    } else {
        (usize::from(value) % len) as u32
    }
}

fn pick<T>(v: &mut [T], what: u8) -> Option<&mut T> {
    if v.is_empty() {
        return None;
    }
    let n = v.len();
    v.get_mut(usize::from(what) % n)
}

/// The mutable places of a body's statements and terminators.
fn places(body: &mut kmir::Body) -> Vec<&mut Place> {
    let mut out = Vec::new();
    for b in &mut body.blocks {
        for s in &mut b.statements {
            match &mut s.kind {
                StatementKind::Assign { place, .. } | StatementKind::SetDiscriminant { place, .. } => {
                    out.push(place)
                }
                _ => {}
            }
        }
        match &mut b.terminator.kind {
            TerminatorKind::Drop { place, .. } => out.push(place),
            TerminatorKind::Call { destination, args, .. } => {
                out.push(destination);
                for a in args {
                    if let Operand::Copy(p) | Operand::Move(p) = a {
                        out.push(p);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The names a mutation may make a call or drop use: every instance's
/// symbol, every external's, and the mutated body's own.
struct Names<'a> {
    symbols: &'a [String],
    externals: &'a [String],
    self_symbol: &'a kmir::Symbol,
}

/// Applies the mutations `ops` (four bytes each: kind, what, value,
/// extra) to the dump: a few change the dump's tables, the rest one body.
fn mutate(dump: &mut CrateDump, ops: &[u8]) {
    let symbols: Vec<String> = dump.instances.iter().map(|i| i.symbol.clone()).collect();
    let externals: Vec<String> = dump.externals.iter().map(|e| e.symbol.clone()).collect();
    let n_types = dump.types.len();
    for op in ops.chunks_exact(4) {
        let (kind, what, value, extra) = (op[0] % 20, op[1], op[2], op[3]);
        match kind {
            // Attributes: arbitrary text where the annotation parser reads.
            15 => {
                mutate_attribute(dump, what, value, extra);
                continue;
            }
            // Two instances with one symbol.
            12 => {
                if let Some(inst) = pick(&mut dump.instances, what).cloned() {
                    dump.instances.push(inst);
                }
                continue;
            }
            _ => {}
        }
        let Some(inst) = pick(&mut dump.instances, what) else {
            continue;
        };
        if kind == 11 {
            inst.kind = InstanceKind::DropGlue {
                ty: index(value, n_types),
            };
            continue;
        }
        let self_symbol = inst.symbol.clone();
        let Some(body) = inst.body.as_mut() else {
            continue;
        };
        let names = Names { symbols: &symbols, externals: &externals, self_symbol: &self_symbol };
        match kind {
            2 | 16 | 17 => mutate_callee(body, kind, value, extra, &names),
            3 | 4 | 13 => mutate_place(body, kind, value, extra, n_types),
            7 | 9 | 10 => mutate_value(body, kind, value, extra, n_types),
            _ => mutate_control_flow(body, kind, value, extra),
        }
    }
}

/// Cuts an attribute's text short and appends a fragment the annotation
/// parser must reject or read.
fn mutate_attribute(dump: &mut CrateDump, what: u8, value: u8, extra: u8) {
    if let Some(item) = pick(&mut dump.items, what)
        && let Some(attr) = pick(&mut item.attrs, value)
    {
        let cut = usize::from(extra).min(attr.text.len());
        let mut text = attr.text.clone();
        while !text.is_char_boundary(cut) {
            text.pop();
        }
        text.truncate(cut.min(text.len()));
        text.push_str(["(9)", "(self, 1)", "(\"\")", "(adjust = 1, adjust = 2)", "]", ""][usize::from(value) % 6]);
        attr.text = text;
    }
}

/// What a call calls or a drop runs: another instance, an external, a
/// symbol nothing defines, or the body itself.
fn mutate_callee(body: &mut kmir::Body, kind: u8, value: u8, extra: u8, names: &Names<'_>) {
    match kind {
        2 => {
            if let Some(b) = pick(&mut body.blocks, extra)
                && let TerminatorKind::Call { callee, .. } = &mut b.terminator.kind
            {
                let pool: Vec<&String> = names.symbols.iter().chain(names.externals).collect();
                let symbol = match pick(&mut pool.clone(), value) {
                    Some(s) => (*s).clone(),
                    None => "no_such_symbol".to_string(),
                };
                *callee = Callee::Direct { symbol };
            }
        }
        16 => {
            // A call of itself: recursion where there was none.
            if let Some(b) = pick(&mut body.blocks, extra)
                && let TerminatorKind::Call { callee, .. } = &mut b.terminator.kind
            {
                *callee = Callee::Direct {
                    symbol: names.self_symbol.clone(),
                };
            }
        }
        _ => {
            if let Some(b) = pick(&mut body.blocks, extra)
                && let TerminatorKind::Drop { glue, .. } = &mut b.terminator.kind
            {
                *glue = pick(&mut names.symbols.to_vec(), value).cloned();
            }
        }
    }
}

/// The places a body names: their locals and projections, and a
/// `SetDiscriminant` of one of them.
fn mutate_place(body: &mut kmir::Body, kind: u8, value: u8, extra: u8, n_types: usize) {
    let n_locals = body.locals.len();
    match kind {
        3 => {
            let mut ps = places(body);
            if let Some(p) = pick(&mut ps, extra) {
                p.local = index(value, n_locals);
            }
        }
        4 => {
            let mut ps = places(body);
            if let Some(p) = pick(&mut ps, extra) {
                p.projection.push(match value % 3 {
                    0 => Projection::Deref,
                    1 => Projection::Field {
                        index: u32::from(value / 3),
                        ty: index(extra, n_types),
                    },
                    _ => Projection::Downcast {
                        variant: u32::from(value),
                    },
                });
            }
        }
        _ => {
            let mut ps: Vec<Place> = places(body).into_iter().map(|p| p.clone()).collect();
            if let (Some(b), Some(p)) = (pick(&mut body.blocks, extra), pick(&mut ps, value)) {
                b.statements.push(kmir::Statement {
                    kind: StatementKind::SetDiscriminant {
                        place: p.clone(),
                        variant: u32::from(value),
                    },
                    span: b.terminator.span,
                });
            }
        }
    }
}

/// The values and types a body works with: its call arguments'
/// constants, its argument count, its locals' types.
fn mutate_value(body: &mut kmir::Body, kind: u8, value: u8, extra: u8, n_types: usize) {
    let n_locals = body.locals.len();
    match kind {
        7 => {
            for b in &mut body.blocks {
                if let TerminatorKind::Call { args, .. } = &mut b.terminator.kind {
                    for a in args {
                        if let Operand::Constant(c) = a {
                            c.value = match value % 4 {
                                0 => ConstValue::Scalar(u128::MAX >> (extra % 128)),
                                1 => ConstValue::Scalar(u128::from(extra)),
                                2 => ConstValue::ZeroSized,
                                _ => ConstValue::Unevaluated,
                            };
                        }
                    }
                }
            }
        }
        9 => body.arg_count = index(value, n_locals + 2),
        _ => {
            if let Some(l) = pick(&mut body.locals, extra) {
                l.ty = index(value, n_types);
            }
        }
    }
}

/// A body's control flow: block targets, statements and blocks removed,
/// terminators swapped, unwinding, cleanup flags, and blocks ended by a
/// return, an unreachable, a resume or an abort.
fn mutate_control_flow(body: &mut kmir::Body, kind: u8, value: u8, extra: u8) {
    let n_blocks = body.blocks.len();
    match kind {
        0 => {
            if let Some(b) = pick(&mut body.blocks, extra) {
                b.terminator.kind = TerminatorKind::Goto {
                    target: index(value, n_blocks),
                };
            }
        }
        1 => {
            if let Some(b) = pick(&mut body.blocks, extra) {
                match &mut b.terminator.kind {
                    TerminatorKind::Call { target, .. } => *target = Some(index(value, n_blocks)),
                    TerminatorKind::Drop { target, .. } | TerminatorKind::Assert { target, .. } => {
                        *target = index(value, n_blocks)
                    }
                    TerminatorKind::SwitchInt { targets, otherwise, .. } => {
                        *otherwise = index(value, n_blocks);
                        if let Some(t) = targets.first_mut() {
                            t.value = u128::from(extra) << 64 | u128::from(value);
                        }
                    }
                    _ => {}
                }
            }
        }
        5 => {
            if let Some(b) = pick(&mut body.blocks, extra)
                && !b.statements.is_empty()
            {
                let i = usize::from(value) % b.statements.len();
                b.statements.remove(i);
            }
        }
        6 => {
            let keep = usize::from(value) % (n_blocks + 1);
            body.blocks.truncate(keep.max(1));
        }
        8 => {
            if n_blocks >= 2 {
                let (a, b) = (usize::from(value) % n_blocks, usize::from(extra) % n_blocks);
                let ta = body.blocks[a].terminator.clone();
                body.blocks[a].terminator = body.blocks[b].terminator.clone();
                body.blocks[b].terminator = ta;
            }
        }
        14 => {
            if let Some(b) = pick(&mut body.blocks, extra) {
                match &mut b.terminator.kind {
                    TerminatorKind::Drop { unwind, .. }
                    | TerminatorKind::Call { unwind, .. }
                    | TerminatorKind::Assert { unwind, .. } => {
                        *unwind = Unwind::Cleanup(index(value, n_blocks))
                    }
                    _ => {}
                }
            }
        }
        18 => {
            if let Some(b) = pick(&mut body.blocks, extra) {
                b.is_cleanup = !b.is_cleanup;
            }
        }
        _ => {
            if let Some(b) = pick(&mut body.blocks, extra) {
                b.terminator.kind = [
                    TerminatorKind::Return,
                    TerminatorKind::Unreachable,
                    TerminatorKind::Resume,
                    TerminatorKind::Abort,
                ][usize::from(value) % 4]
                    .clone();
            }
        }
    }
}

fn analyse(dump: CrateDump) {
    let crates = vec![program::LinkedCrate::eager("fuzz.kmir".into(), dump, None)];
    let (program, _) = program::link(crates);
    let (annotations, _) = annotations::collect(
        program
            .crates
            .iter()
            .enumerate()
            .map(|(i, c)| (i as u32, c.dump.items.as_slice())),
    );
    let (declared, _) =
        invariants::from_annotations(annotations.iter().map(|(p, a)| (p.as_str(), a)));
    let resolved = invariants::resolve(&program, declared).unwrap_or_else(|_| invariants::Resolved::none());
    // Parsed once: the built-in spec is the same for every input.
    static SPEC: std::sync::OnceLock<spec::Spec> = std::sync::OnceLock::new();
    let spec = SPEC.get_or_init(spec::Spec::builtin_kernel);
    let out = checks::run(&checks::Input {
        program: &program,
        annotations: &annotations,
        spec,
        invariants: &resolved,
        trace: None,
        step_budget: checks::STEP_BUDGET,
        progress: None,
    });
    let mut sources = report::Sources::default();
    let findings: Vec<&findings::Finding> = out.findings.iter().collect();
    for f in &findings {
        let _ = report::render(&program, f, &mut sources);
        let _ = report::to_json(&program, f);
    }
    let items: Vec<report::SarifItem<'_>> = findings
        .iter()
        .map(|f| report::SarifItem {
            finding: f,
            baseline: None,
            suppression: None,
        })
        .collect();
    let _ = serde_json::to_string(&report::to_sarif(&program, &items, checks::KINDS, "fuzz"));
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, ops)) = data.split_first() else {
        return;
    };
    let Ok(mut dump) = kmir::decode(SEEDS[usize::from(seed) % SEEDS.len()]) else {
        return;
    };
    mutate(&mut dump, ops);
    // Through the file format, as a user's dump would come: the decoder and
    // `validate` decide what the analysis sees.
    let bytes = kmir::encode(&dump);
    if let Ok(dump) = kmir::decode(&bytes) {
        analyse(dump);
    }
});
