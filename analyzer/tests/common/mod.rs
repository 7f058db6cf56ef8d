//! A small dump built by hand. It exercises the printer's notation and,
//! encoded and then damaged, the reader's error paths; it is not a stand-in
//! for what kextract produces (tests on real dumps come from the compiler).

#![allow(dead_code)] // Each test binary uses a different part of this module.

use kmir::*;

pub const LOCK: &str = "_RNvMNtCs1a2b3c4d_7fixture4syncINtB2_8SpinLockmE4lockB4_";
pub const IS_EVEN: &str = "fixture_is_even";
pub const GUARD_GLUE: &str =
    "_RINvNtCs9z8y7x_4core3ptr13drop_in_placeINtNtCs5k_6kernel4sync5GuardmEEB2_";
pub const PROBE: &str = "_RNvXs_Cs1a2b3c4d_7fixtureNtB4_3DevNtB4_6Device5probe";
pub const PROBE_SHIM: &str = "_RNvXs_Cs1a2b3c4d_7fixtureNtB4_3DevNtB4_6Device5probe_shim";
pub const CLOSURE: &str = "_RNCNvCs1a2b3c4d_7fixture4main0B3_";
pub const SPIN_LOCK: &str = "spin_lock";
pub const GUARD_DROP: &str =
    "_RNvXs0_NtCs5k_6kernel4syncINtB5_5GuardmENtNtCs9z_4core3ops4Drop4drop";
pub const TRY_LOCK: &str = "_RNvMNtCs5k_6kernel4syncINtB2_8SpinLockmE8try_lockB4_";

// Type ids of `types()`, by name.
pub const UNIT: TyId = 0;
pub const U32: TyId = 1;
pub const I32: TyId = 2;
pub const BOOL: TyId = 3;
pub const SPINLOCK: TyId = 4;
pub const REF_SPINLOCK: TyId = 5;
pub const GUARD: TyId = 6;
pub const OPTION_GUARD: TyId = 7;
pub const REF_MUT_GUARD: TyId = 8;
pub const FN_PTR: TyId = 9;
pub const DYN_DEVICE: TyId = 10;
pub const REF_DYN_DEVICE: TyId = 11;
pub const DEV: TyId = 12;
pub const REF_DEV: TyId = 13;
pub const OPS: TyId = 14;
pub const U32_BOOL: TyId = 15;
pub const CHAR: TyId = 16;
pub const I64: TyId = 17;
pub const U32_ARRAY: TyId = 18;
pub const FN_DEF_IS_EVEN: TyId = 19;
pub const STR: TyId = 20;
pub const REF_STR: TyId = 21;

fn ty(kind: TyKind, display: &str) -> Ty {
    Ty {
        kind,
        display: display.to_string(),
    }
}

fn types() -> Vec<Ty> {
    let adt = |path: &str, args: Vec<TyId>| TyKind::Adt {
        path: path.to_string(),
        args,
    };
    vec![
        ty(TyKind::Tuple(vec![]), "()"),
        ty(TyKind::Uint("u32".into()), "u32"),
        ty(TyKind::Int("i32".into()), "i32"),
        ty(TyKind::Bool, "bool"),
        ty(
            adt("kernel::sync::SpinLock", vec![U32]),
            "kernel::sync::SpinLock<u32>",
        ),
        ty(
            TyKind::Ref {
                pointee: SPINLOCK,
                mutable: false,
            },
            "&kernel::sync::SpinLock<u32>",
        ),
        ty(
            adt("kernel::sync::Guard", vec![U32]),
            "kernel::sync::Guard<'_, u32>",
        ),
        ty(
            adt("core::option::Option", vec![GUARD]),
            "core::option::Option<kernel::sync::Guard<'_, u32>>",
        ),
        ty(
            TyKind::Ref {
                pointee: GUARD,
                mutable: true,
            },
            "&mut kernel::sync::Guard<'_, u32>",
        ),
        ty(
            TyKind::FnPtr {
                inputs: vec![U32],
                output: BOOL,
            },
            "fn(u32) -> bool",
        ),
        ty(
            TyKind::Dynamic {
                traits: vec!["fixture::Device".into()],
            },
            "dyn fixture::Device",
        ),
        ty(
            TyKind::Ref {
                pointee: DYN_DEVICE,
                mutable: false,
            },
            "&dyn fixture::Device",
        ),
        ty(adt("fixture::Dev", vec![]), "fixture::Dev"),
        ty(
            TyKind::Ref {
                pointee: DEV,
                mutable: false,
            },
            "&fixture::Dev",
        ),
        ty(adt("fixture::Ops", vec![]), "fixture::Ops"),
        ty(TyKind::Tuple(vec![U32, BOOL]), "(u32, bool)"),
        ty(TyKind::Char, "char"),
        ty(TyKind::Int("i64".into()), "i64"),
        ty(
            TyKind::Array {
                elem: U32,
                len: Some(4),
            },
            "[u32; 4]",
        ),
        ty(
            TyKind::FnDef {
                path: "fixture::is_even".into(),
                args: vec![],
            },
            "fn(u32) -> bool {fixture::is_even}",
        ),
        ty(TyKind::Str, "str"),
        ty(
            TyKind::Ref {
                pointee: STR,
                mutable: false,
            },
            "&str",
        ),
    ]
}

pub fn span(line: u32, col: u32) -> Span {
    Span {
        file: 0,
        lo_line: line,
        lo_col: col,
        hi_line: line,
        hi_col: col + 4,
    }
}

fn local(ty: TyId, mutable: bool, line: u32) -> LocalDecl {
    LocalDecl {
        ty,
        span: span(line, 9),
        mutable,
    }
}

pub fn place(local: LocalId) -> Place {
    Place {
        local,
        projection: vec![],
    }
}

fn proj(local: LocalId, projection: Vec<Projection>) -> Place {
    Place { local, projection }
}

fn copy(l: LocalId) -> Operand {
    Operand::Copy(place(l))
}

fn mov(l: LocalId) -> Operand {
    Operand::Move(place(l))
}

fn konst(ty: TyId, value: ConstValue) -> Operand {
    Operand::Constant(Constant { ty, value })
}

fn scalar(ty: TyId, bits: u128) -> Operand {
    konst(ty, ConstValue::Scalar(bits))
}

fn stmt(kind: StatementKind, line: u32) -> Statement {
    Statement {
        kind,
        span: span(line, 5),
    }
}

fn assign(place: Place, rvalue: Rvalue, line: u32) -> Statement {
    stmt(StatementKind::Assign { place, rvalue }, line)
}

fn term(kind: TerminatorKind, line: u32) -> Terminator {
    Terminator {
        kind,
        span: span(line, 5),
    }
}

fn block(statements: Vec<Statement>, terminator: Terminator) -> Block {
    Block {
        statements,
        terminator,
        is_cleanup: false,
    }
}

fn cleanup(statements: Vec<Statement>, terminator: Terminator) -> Block {
    Block {
        statements,
        terminator,
        is_cleanup: true,
    }
}

fn call(
    callee: Callee,
    args: Vec<Operand>,
    dest: Place,
    target: Option<BlockId>,
    unwind: Unwind,
    line: u32,
) -> Terminator {
    term(
        TerminatorKind::Call {
            callee,
            args,
            destination: dest,
            target,
            unwind,
        },
        line,
    )
}

fn direct(symbol: &str) -> Callee {
    Callee::Direct {
        symbol: symbol.to_string(),
    }
}

fn var(name: &str, local: LocalId) -> VarName {
    VarName {
        name: name.to_string(),
        local,
    }
}

/// `SpinLock::<u32>::lock`, written to touch most of the notation.
fn lock_body() -> Body {
    let field = |index, ty| Projection::Field { index, ty };
    let blocks = vec![
        // bb0
        block(
            vec![
                stmt(StatementKind::StorageLive(2), 11),
                assign(
                    place(2),
                    Rvalue::Use(Operand::Copy(proj(
                        1,
                        vec![Projection::Deref, field(1, U32)],
                    ))),
                    11,
                ),
                assign(
                    place(4),
                    Rvalue::CheckedBinaryOp {
                        op: BinOp::Add,
                        lhs: copy(2),
                        rhs: scalar(U32, 1),
                    },
                    12,
                ),
            ],
            term(
                TerminatorKind::Assert {
                    cond: Operand::Move(proj(4, vec![field(1, BOOL)])),
                    expected: false,
                    target: 1,
                    unwind: Unwind::Cleanup(7),
                },
                12,
            ),
        ),
        // bb1
        block(
            vec![
                assign(
                    place(2),
                    Rvalue::Use(Operand::Move(proj(4, vec![field(0, U32)]))),
                    12,
                ),
                assign(
                    place(6),
                    Rvalue::Cast {
                        kind: CastKind::ReifyFnPointer {
                            symbol: IS_EVEN.into(),
                        },
                        operand: konst(FN_DEF_IS_EVEN, ConstValue::ZeroSized),
                        ty: FN_PTR,
                    },
                    13,
                ),
            ],
            call(
                Callee::Indirect {
                    operand: copy(6),
                    fn_ty: FN_PTR,
                    sig: "fn(u32) -> bool".into(),
                },
                vec![copy(2)],
                place(5),
                Some(2),
                Unwind::Cleanup(7),
                13,
            ),
        ),
        // bb2
        block(
            vec![],
            term(
                TerminatorKind::SwitchInt {
                    discr: mov(5),
                    targets: vec![SwitchTarget {
                        value: 0,
                        target: 3,
                    }],
                    otherwise: 4,
                },
                13,
            ),
        ),
        // bb3
        block(
            vec![stmt(
                StatementKind::Intrinsic {
                    name: "assume".into(),
                    operands: vec![scalar(BOOL, 1)],
                },
                14,
            )],
            call(
                direct(SPIN_LOCK),
                vec![copy(1)],
                place(9),
                Some(4),
                Unwind::Continue,
                14,
            ),
        ),
        // bb4
        block(
            vec![],
            call(
                direct(TRY_LOCK),
                vec![copy(1)],
                place(3),
                Some(5),
                Unwind::Cleanup(7),
                15,
            ),
        ),
        // bb5
        block(
            vec![
                assign(
                    place(0),
                    Rvalue::Use(Operand::Move(proj(
                        3,
                        vec![Projection::Downcast { variant: 1 }, field(0, GUARD)],
                    ))),
                    15,
                ),
                assign(
                    place(8),
                    Rvalue::Ref {
                        mutable: false,
                        place: proj(
                            10,
                            vec![
                                Projection::Index(2),
                                Projection::ConstantIndex {
                                    offset: 1,
                                    min_length: 4,
                                    from_end: true,
                                },
                            ],
                        ),
                    },
                    16,
                ),
                assign(
                    place(7),
                    Rvalue::Cast {
                        kind: CastKind::Unsize { vtable: Some(0) },
                        operand: mov(8),
                        ty: REF_DYN_DEVICE,
                    },
                    16,
                ),
            ],
            call(
                Callee::Virtual {
                    trait_method: "fixture::Device::probe".into(),
                    trait_path: "fixture::Device".into(),
                    slot: 3,
                },
                vec![mov(7)],
                place(9),
                Some(6),
                Unwind::Cleanup(7),
                17,
            ),
        ),
        // bb6
        block(
            vec![stmt(StatementKind::StorageDead(2), 18)],
            term(
                TerminatorKind::Drop {
                    place: place(3),
                    glue: None,
                    target: 8,
                    unwind: Unwind::Continue,
                },
                18,
            ),
        ),
        // bb7
        cleanup(
            vec![],
            term(
                TerminatorKind::Drop {
                    place: place(3),
                    glue: Some(GUARD_GLUE.into()),
                    target: 9,
                    unwind: Unwind::Terminate,
                },
                18,
            ),
        ),
        // bb8
        block(vec![], term(TerminatorKind::Return, 19)),
        // bb9
        cleanup(vec![], term(TerminatorKind::Resume, 10)),
    ];
    Body {
        arg_count: 1,
        locals: vec![
            local(GUARD, true, 10),
            local(REF_SPINLOCK, false, 10),
            local(U32, true, 11),
            local(OPTION_GUARD, true, 15),
            local(U32_BOOL, true, 12),
            local(BOOL, true, 13),
            local(FN_PTR, true, 13),
            local(REF_DYN_DEVICE, false, 16),
            local(REF_DEV, false, 16),
            local(UNIT, false, 17),
            local(U32_ARRAY, false, 16),
        ],
        blocks,
        var_names: vec![var("self", 1), var("x", 2)],
        span: span(10, 5),
        drop_elaborated: true,
    }
}

fn is_even_body() -> Body {
    Body {
        arg_count: 1,
        locals: vec![
            local(BOOL, true, 30),
            local(U32, false, 30),
            local(U32, true, 31),
        ],
        blocks: vec![block(
            vec![
                assign(
                    place(2),
                    Rvalue::BinaryOp {
                        op: BinOp::Rem,
                        lhs: copy(1),
                        rhs: scalar(U32, 2),
                    },
                    31,
                ),
                assign(
                    place(0),
                    Rvalue::BinaryOp {
                        op: BinOp::Eq,
                        lhs: mov(2),
                        rhs: scalar(U32, 0),
                    },
                    31,
                ),
            ],
            term(TerminatorKind::Return, 32),
        )],
        var_names: vec![var("n", 1)],
        span: span(30, 1),
        drop_elaborated: true,
    }
}

fn glue_body() -> Body {
    Body {
        arg_count: 1,
        locals: vec![
            LocalDecl {
                ty: UNIT,
                span: Span::DUMMY,
                mutable: true,
            },
            LocalDecl {
                ty: REF_MUT_GUARD,
                span: Span::DUMMY,
                mutable: false,
            },
        ],
        blocks: vec![
            block(
                vec![],
                Terminator {
                    kind: TerminatorKind::Call {
                        callee: direct(GUARD_DROP),
                        args: vec![copy(1)],
                        destination: place(0),
                        target: Some(1),
                        unwind: Unwind::Continue,
                    },
                    span: Span::DUMMY,
                },
            ),
            block(
                vec![],
                Terminator {
                    kind: TerminatorKind::Return,
                    span: Span::DUMMY,
                },
            ),
        ],
        var_names: vec![],
        span: Span::DUMMY,
        drop_elaborated: false,
    }
}

/// `<Dev as Device>::probe`: constants and aggregates.
fn probe_body() -> Body {
    Body {
        arg_count: 1,
        locals: vec![
            local(UNIT, true, 40),
            local(REF_DEV, false, 40),
            local(OPTION_GUARD, true, 41),
            local(U32_BOOL, true, 42),
            local(U32_ARRAY, true, 43),
            local(OPS, false, 44),
            local(I64, true, 45),
            local(CHAR, true, 46),
            local(REF_STR, false, 47),
            local(I32, true, 48),
        ],
        blocks: vec![
            block(
                vec![
                    assign(
                        place(2),
                        Rvalue::Aggregate {
                            kind: AggregateKind::Adt {
                                ty: OPTION_GUARD,
                                variant: 0,
                                active_field: None,
                            },
                            operands: vec![],
                        },
                        41,
                    ),
                    stmt(
                        StatementKind::SetDiscriminant {
                            place: place(2),
                            variant: 0,
                        },
                        41,
                    ),
                    assign(
                        place(3),
                        Rvalue::Aggregate {
                            kind: AggregateKind::Tuple,
                            operands: vec![scalar(U32, 7), scalar(BOOL, 0)],
                        },
                        42,
                    ),
                    assign(
                        place(4),
                        Rvalue::Repeat {
                            operand: scalar(U32, 0),
                            count: Some(4),
                        },
                        43,
                    ),
                    assign(
                        place(5),
                        Rvalue::Aggregate {
                            kind: AggregateKind::Adt {
                                ty: OPS,
                                variant: 0,
                                active_field: None,
                            },
                            operands: vec![konst(
                                FN_PTR,
                                ConstValue::Memory {
                                    fn_ptrs: vec![IS_EVEN.into()],
                                    vtables: vec![0],
                                    statics: vec![],
                                },
                            )],
                        },
                        44,
                    ),
                    assign(
                        place(6),
                        Rvalue::Use(scalar(I64, (-3i64) as u64 as u128)),
                        45,
                    ),
                    assign(place(7), Rvalue::Use(scalar(CHAR, 'x' as u128)), 46),
                    assign(
                        place(8),
                        Rvalue::Use(konst(
                            REF_STR,
                            ConstValue::Memory {
                                fn_ptrs: vec![],
                                vtables: vec![],
                                statics: vec![],
                            },
                        )),
                        47,
                    ),
                    assign(
                        place(9),
                        Rvalue::Cast {
                            kind: CastKind::Other("IntToInt".into()),
                            operand: Operand::Copy(proj(
                                3,
                                vec![Projection::Field { index: 0, ty: U32 }],
                            )),
                            ty: I32,
                        },
                        48,
                    ),
                    assign(
                        place(4),
                        Rvalue::Aggregate {
                            kind: AggregateKind::Array { elem: U32 },
                            operands: vec![scalar(U32, 1), scalar(U32, 2)],
                        },
                        49,
                    ),
                    assign(
                        place(9),
                        Rvalue::UnaryOp {
                            op: UnOp::Neg,
                            operand: scalar(I32, u32::MAX as u128),
                        },
                        49,
                    ),
                    assign(place(6), Rvalue::Discriminant(place(2)), 50),
                ],
                call(
                    Callee::Intrinsic {
                        name: "core::intrinsics::black_box".into(),
                    },
                    vec![
                        konst(UNIT, ConstValue::ZeroSized),
                        Operand::RuntimeChecks("UbChecks".into()),
                    ],
                    place(0),
                    Some(1),
                    Unwind::Unreachable,
                    51,
                ),
            ),
            block(
                vec![],
                call(
                    direct("_RNvCsUNKNOWN_5other6helper"),
                    vec![],
                    place(0),
                    None,
                    Unwind::Continue,
                    52,
                ),
            ),
        ],
        var_names: vec![var("self", 1), var("ops", 5)],
        span: span(40, 5),
        drop_elaborated: true,
    }
}

pub fn sample_dump() -> CrateDump {
    let instance = |symbol: &str, name: &str, item_path: &str, kind, line, body| Instance {
        symbol: symbol.to_string(),
        name: name.to_string(),
        item_path: item_path.to_string(),
        trait_item: None,
        kind,
        span: span(line, 5),
        exported: false,
        fn_sig: None,
        codegenned: true,
        body,
    };
    let field = |name: &str, ty: &str| FieldDef {
        name: name.to_string(),
        ty: ty.to_string(),
    };
    let mut is_even = instance(
        IS_EVEN,
        "fixture::is_even",
        "fixture::is_even",
        InstanceKind::Item,
        30,
        Some(is_even_body()),
    );
    is_even.exported = true;
    is_even.fn_sig = Some("fn(u32) -> bool".into());
    let mut probe = instance(
        PROBE,
        "<fixture::Dev as fixture::Device>::probe",
        "fixture::<impl fixture::Device for fixture::Dev>::probe",
        InstanceKind::Item,
        40,
        Some(probe_body()),
    );
    probe.trait_item = Some("fixture::Device::probe".into());
    let mut glue = instance(
        GUARD_GLUE,
        "core::ptr::drop_in_place::<kernel::sync::Guard<'_, u32>>",
        "core::ptr::drop_in_place",
        InstanceKind::DropGlue { ty: GUARD },
        0,
        Some(glue_body()),
    );
    glue.span = Span::DUMMY;
    let mut closure = instance(
        CLOSURE,
        "fixture::main::{closure#0}",
        "fixture::main::{closure#0}",
        InstanceKind::Closure,
        60,
        None,
    );
    closure.codegenned = false;
    CrateDump {
        header: Header {
            producer: "kextract 0.1.0".into(),
            rustc_version: "rustc 1.93.0-nightly (0123456789 2025-11-01)".into(),
            crate_name: "fixture".into(),
            crate_types: vec!["rlib".into()],
            target: "x86_64-unknown-linux-gnu".into(),
            stable_crate_id: 0x0123_4567_89ab_cdef,
            edition: "2021".into(),
            drop_elaborated_mir: true,
        },
        files: vec!["samples/fixture/src/lib.rs".into()],
        types: types(),
        instances: vec![
            instance(
                LOCK,
                "kernel::sync::SpinLock::<u32>::lock",
                "kernel::sync::SpinLock::<T>::lock",
                InstanceKind::Item,
                10,
                Some(lock_body()),
            ),
            is_even,
            glue,
            probe,
            instance(
                PROBE_SHIM,
                "<fixture::Dev as fixture::Device>::probe",
                "fixture::<impl fixture::Device for fixture::Dev>::probe",
                InstanceKind::Shim {
                    kind: "ReifyShim".into(),
                },
                40,
                None,
            ),
            closure,
        ],
        vtables: vec![Vtable {
            concrete: DEV,
            trait_path: Some("fixture::Device".into()),
            dyn_ty: DYN_DEVICE,
            entries: vec![
                VtableEntry::DropInPlace { glue: None },
                VtableEntry::Size,
                VtableEntry::Align,
                VtableEntry::Method {
                    method: "fixture::Device::probe".into(),
                    symbol: PROBE.into(),
                },
            ],
        }],
        statics: vec![StaticItem {
            path: "fixture::OPS".into(),
            symbol: "_RNvCs1a2b3c4d_7fixture3OPS".into(),
            ty: OPS,
            span: span(70, 1),
            mutable: false,
            fn_ptrs: vec![IS_EVEN.into(), SPIN_LOCK.into()],
            vtables: vec![0],
        }],
        items: vec![ItemAttrs {
            path: "fixture::is_even".into(),
            kind: "fn".into(),
            span: span(30, 1),
            attrs: vec![ToolAttr {
                tool: "klint".into(),
                name: "preempt_count".into(),
                text: "#[klint::preempt_count(expect = 0)]".into(),
                span: span(29, 1),
            }],
        }],
        adts: vec![
            AdtDef {
                path: "kernel::sync::Guard".into(),
                kind: AdtKind::Struct,
                variants: vec![VariantDef {
                    name: "Guard".into(),
                    fields: vec![field("lock", "&'a SpinLock<T>")],
                }],
                span: Span::DUMMY,
            },
            AdtDef {
                path: "core::option::Option".into(),
                kind: AdtKind::Enum,
                variants: vec![
                    VariantDef {
                        name: "None".into(),
                        fields: vec![],
                    },
                    VariantDef {
                        name: "Some".into(),
                        fields: vec![field("0", "T")],
                    },
                ],
                span: Span::DUMMY,
            },
            AdtDef {
                path: "fixture::Dev".into(),
                kind: AdtKind::Struct,
                variants: vec![VariantDef {
                    name: "Dev".into(),
                    fields: vec![],
                }],
                span: span(50, 1),
            },
            AdtDef {
                path: "fixture::Ops".into(),
                kind: AdtKind::Struct,
                variants: vec![VariantDef {
                    name: "Ops".into(),
                    fields: vec![field("check", "fn(u32) -> bool")],
                }],
                span: span(55, 1),
            },
        ],
        externals: vec![
            External {
                symbol: SPIN_LOCK.into(),
                name: "kernel::bindings::spin_lock".into(),
                item_path: "kernel::bindings::spin_lock".into(),
                kind: ExternalKind::Foreign,
            },
            External {
                symbol: TRY_LOCK.into(),
                name: "kernel::sync::SpinLock::<u32>::try_lock".into(),
                item_path: "kernel::sync::SpinLock::<T>::try_lock".into(),
                kind: ExternalKind::Upstream {
                    krate: "kernel".into(),
                },
            },
            External {
                symbol: GUARD_DROP.into(),
                name: "<kernel::sync::Guard<'_, u32> as core::ops::Drop>::drop".into(),
                item_path:
                    "kernel::sync::<impl core::ops::Drop for kernel::sync::Guard<'a, T>>::drop"
                        .into(),
                kind: ExternalKind::Upstream {
                    krate: "kernel".into(),
                },
            },
        ],
    }
}

/// `sample_dump` with `n` more copies of its first instance, for output
/// large enough to fill a pipe.
pub fn big_dump(n: usize) -> CrateDump {
    let mut dump = sample_dump();
    let first = dump.instances[0].clone();
    for i in 0..n {
        let mut inst = first.clone();
        inst.symbol = format!("{}{i}", inst.symbol);
        inst.name = format!("{}_{i}", inst.name);
        dump.instances.push(inst);
    }
    dump
}
