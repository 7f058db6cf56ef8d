//! The data model of one crate's dump.
//!
//! It follows the shape of StableMIR (`rustc_public`) but owns its data: no
//! session-local handles, every cross reference is either an index into a
//! table of the same dump (`TyId`, `FileId`, `VtableId`, block and local
//! indices) or a linker symbol (`Symbol`) that is meaningful across crates.
//!
//! Invariants the extractor guarantees; `validate` checks the first two on
//! every decoded dump:
//! * every `TyId`, `FileId`, `VtableId` is in range of its table;
//! * block targets and locals of a body are in range of that body;
//! * `Callee::Direct` symbols name either an instance of this dump or an
//!   entry of `externals` (the linker tolerates a dump that breaks this: the
//!   call is counted as unresolved).

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use bincode::{Decode, Encode};

pub use crate::name::Name;

/// A linker symbol (v0 or legacy mangled) or, for foreign items, the link name.
pub type Symbol = Name;
/// Index into [`CrateDump::types`].
pub type TyId = u32;
/// Index into [`CrateDump::files`].
pub type FileId = u32;
/// Index into [`CrateDump::vtables`].
pub type VtableId = u32;
/// Index into [`Body::blocks`].
pub type BlockId = u32;
/// Index into [`Body::locals`]; local 0 is the return place, `1..=arg_count` the arguments.
pub type LocalId = u32;

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
/// One crate's dump, as written by `kextract` and read by `kanalyze`.
pub struct CrateDump {
    pub header: Header,
    /// Source files referenced by spans, as the compiler names them
    /// (remapped paths stay remapped).
    pub files: Vec<Name>,
    /// Interned types; a `TyId` is an index here.
    pub types: Vec<Ty>,
    /// Every function mono item the crate codegens.
    pub instances: Vec<Instance>,
    /// Every vtable the crate builds (unsize coercions and vtable constants).
    pub vtables: Vec<Vtable>,
    /// Every static the crate codegens, with the code pointers in its initializer.
    pub statics: Vec<StaticItem>,
    /// Local items that carry tool attributes (`#[klint::…]`, `#[kanalyze::…]`).
    pub items: Vec<ItemAttrs>,
    /// Field and variant structure of every ADT that appears in `types`.
    pub adts: Vec<AdtDef>,
    /// Functions called, dropped or pointed to that have no body in this dump.
    pub externals: Vec<External>,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
/// What produced the dump and for which crate.
pub struct Header {
    /// `kextract <version>`.
    pub producer: Name,
    /// `rustc --version --verbose` first line of the compiler that ran.
    pub rustc_version: Name,
    pub crate_name: Name,
    /// `lib`, `rlib`, `bin`, … as passed to the compiler.
    pub crate_types: Vec<Name>,
    /// The target triple or target JSON name.
    pub target: Name,
    /// The compiler's stable crate id: distinguishes crates of the same name.
    pub stable_crate_id: u64,
    pub edition: Name,
    /// Whether the bodies of local items come from MIR right after drop
    /// elaboration (true) or from optimized MIR (false, the fallback).
    pub drop_elaborated_mir: bool,
    /// The target triple of the machine the compiler ran on (version 8):
    /// a crate whose `target` is this one, in a build whose program is for
    /// another target, is one of the build's host crates (a build tool, a
    /// proc macro or one of their dependencies).
    pub host: Name,
    /// The crates this one was compiled against whose code it may link
    /// (version 8): every crate of its crate graph except proc macros, in
    /// the compiler's order.
    pub dependencies: Vec<Dependency>,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
/// A crate a dumped crate was compiled against.
pub struct Dependency {
    pub name: Name,
    /// Its stable crate id: the dump of the same crate has it in its
    /// header.
    pub stable_crate_id: u64,
    /// It was found in the compiler's sysroot: a prebuilt standard library
    /// crate (`std`, `core`, `alloc` of a hosted target), which the build
    /// never compiles and so never dumps. A kernel build compiles its
    /// `core` from source, so there it is not from the sysroot.
    pub sysroot: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
/// A source range. Lines and columns are 1-based, as rustc prints them.
#[derive(Copy, Default, Hash, PartialOrd, Ord)]
pub struct Span {
    pub file: FileId,
    pub lo_line: u32,
    pub lo_col: u32,
    pub hi_line: u32,
    pub hi_col: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
/// A function instance: a body with every generic parameter known.
pub struct Instance {
    pub symbol: Symbol,
    /// Human name with generic arguments, e.g. `fixture::generic::<u32>`.
    pub name: Name,
    /// Crate-qualified path of the item the instance comes from, e.g.
    /// `fixture::SpinLock::<T>::lock`; annotations are keyed by it.
    pub item_path: Name,
    /// For an impl method of a trait, the path of the trait method it implements.
    pub trait_item: Option<Name>,
    pub kind: InstanceKind,
    pub span: Span,
    /// `#[no_mangle]`, `#[export_name]` and other externally callable items.
    pub exported: bool,
    /// The signature a fn pointer to this instance has, as a key that is
    /// identical across crates: `fn(&u32, usize) -> bool`, with the ABI
    /// when it is not Rust's (`extern "C" fn(*mut T)`), regions erased and
    /// safety ignored. `None` for instances that cannot be pointed to
    /// (drop glue, shims).
    pub fn_sig: Option<Name>,
    /// Declared `unsafe fn`: its safety contract may include lock state
    /// ("the caller holds the lock"), so the lock analysis does not ask it
    /// to be balanced where a caller takes that state over (docs/locks.md).
    pub unsafe_fn: bool,
    /// The item's `#[inline]` attribute (version 7). `Inline::None` for
    /// instances that are not items (drop glue, shims).
    pub inline: Inline,
    /// Emitted by this crate's codegen. False for instances that the
    /// optimizer inlined everywhere (so codegen never emitted them) but that
    /// the drop-elaborated bodies of this dump still call: their bodies are
    /// included so that no call leads nowhere.
    pub codegenned: bool,
    /// `None` for instances the compiler has no MIR for (never the case for
    /// codegenned items; kept optional so a partial extraction stays readable).
    /// Boxed (8 bytes where a `Body` takes 104): a dump loaded lazily
    /// (`crate::decode_lazy`) holds none, and the wire format is a `Body`'s.
    pub body: Option<Box<Body>>,
}

/// An item's inline attribute, as written on the function (or closure).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum Inline {
    /// No `#[inline]` attribute.
    #[default]
    None,
    /// `#[inline]`: a hint.
    Hint,
    /// `#[inline(always)]` (and the compiler-internal
    /// `#[rustc_force_inline]`, which forces it harder).
    Always,
    /// `#[inline(never)]`.
    Never,
}

impl Inline {
    /// The attribute as written, or `None` for no attribute.
    pub fn attribute(self) -> Option<&'static str> {
        match self {
            Inline::None => None,
            Inline::Hint => Some("#[inline]"),
            Inline::Always => Some("#[inline(always)]"),
            Inline::Never => Some("#[inline(never)]"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum InstanceKind {
    Item,
    Closure,
    /// `drop_in_place::<ty>`: the glue that drops a value of `ty`.
    DropGlue {
        ty: TyId,
    },
    /// A compiler-generated shim (`VTableShim`, `ReifyShim`, `FnPtrShim`,
    /// `ClosureOnceShim`, `CloneShim`, …), named by its kind.
    Shim {
        kind: Name,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Body {
    pub arg_count: u32,
    pub locals: Vec<LocalDecl>,
    pub blocks: Vec<Block>,
    /// User variable names (`let x`) by local.
    pub var_names: Vec<VarName>,
    pub span: Span,
    /// MIR right after drop elaboration (before optimisations and inlining);
    /// false when only optimized MIR was available (upstream items, shims,
    /// incremental builds that reused a cached body).
    pub drop_elaborated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct LocalDecl {
    pub ty: TyId,
    pub span: Span,
    pub mutable: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct VarName {
    pub name: Name,
    pub local: LocalId,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Block {
    pub statements: Vec<Statement>,
    pub terminator: Terminator,
    /// Only reachable while unwinding.
    pub is_cleanup: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Statement {
    pub kind: StatementKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum StatementKind {
    /// The rvalue is boxed: two thirds of the statements are
    /// `StorageLive`/`StorageDead`, and every statement pays for the
    /// largest variant (docs/performance.md, "Bounded memory").
    Assign {
        place: Place,
        rvalue: Box<Rvalue>,
    },
    SetDiscriminant {
        place: Place,
        variant: u32,
    },
    StorageLive(LocalId),
    StorageDead(LocalId),
    /// `assume`, `copy_nonoverlapping`: no effect the analyses care about beyond their operands.
    Intrinsic {
        name: Name,
        operands: Box<[Operand]>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Place {
    pub local: LocalId,
    /// A boxed slice (16 bytes, where a `Vec` takes 24): places are in
    /// most statements and operands, and never grow once decoded.
    pub projection: Box<[Projection]>,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum Projection {
    Deref,
    Field {
        index: u32,
        ty: TyId,
    },
    Index(LocalId),
    ConstantIndex {
        offset: u64,
        min_length: u64,
        from_end: bool,
    },
    Subslice {
        from: u64,
        to: u64,
        from_end: bool,
    },
    Downcast {
        variant: u32,
    },
    OpaqueCast(TyId),
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum Rvalue {
    Use(Operand),
    Ref {
        mutable: bool,
        place: Place,
    },
    AddressOf {
        mutable: bool,
        place: Place,
    },
    Aggregate {
        kind: AggregateKind,
        operands: Vec<Operand>,
    },
    BinaryOp {
        op: BinOp,
        lhs: Operand,
        rhs: Operand,
    },
    CheckedBinaryOp {
        op: BinOp,
        lhs: Operand,
        rhs: Operand,
    },
    UnaryOp {
        op: UnOp,
        operand: Operand,
    },
    Cast {
        kind: CastKind,
        operand: Operand,
        ty: TyId,
    },
    Discriminant(Place),
    Len(Place),
    Repeat {
        operand: Operand,
        count: Option<u64>,
    },
    CopyForDeref(Place),
    ThreadLocalRef {
        path: Name,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum AggregateKind {
    Array {
        elem: TyId,
    },
    Tuple,
    /// `ty` is the aggregate's own type.
    Adt {
        ty: TyId,
        variant: u32,
        active_field: Option<u32>,
    },
    /// The closure's call instances are mono items of their own.
    Closure {
        ty: TyId,
    },
    Coroutine {
        ty: TyId,
    },
    RawPtr {
        ty: TyId,
        mutable: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum BinOp {
    Add,
    AddUnchecked,
    Sub,
    SubUnchecked,
    Mul,
    MulUnchecked,
    Div,
    Rem,
    BitXor,
    BitAnd,
    BitOr,
    Shl,
    ShlUnchecked,
    Shr,
    ShrUnchecked,
    Eq,
    Lt,
    Le,
    Ne,
    Ge,
    Gt,
    Cmp,
    Offset,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum UnOp {
    Not,
    Neg,
    PtrMetadata,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum CastKind {
    /// A fn item turned into a fn pointer: `symbol` is the instance the pointer calls.
    ReifyFnPointer { symbol: Symbol },
    /// A non-capturing closure turned into a fn pointer.
    ClosureFnPointer { symbol: Symbol },
    /// An unsize coercion; `vtable` is set when it builds a vtable
    /// (concrete type to `dyn Trait`).
    Unsize { vtable: Option<VtableId> },
    /// `dyn A` to `dyn B`.
    TraitUpcast { from: TyId, to: TyId },
    /// Every other cast (numeric, pointer, transmute), by name.
    Other(Name),
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum Operand {
    Copy(Place),
    Move(Place),
    /// Boxed: an operand is a place three times in four, and a constant's
    /// 128-bit scalar would make every operand 48 bytes instead of 32.
    Constant(Box<Constant>),
    /// `cfg!(ub_checks)`-style runtime checks, by name.
    RuntimeChecks(Name),
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Constant {
    pub ty: TyId,
    pub value: ConstValue,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum ConstValue {
    /// An integer, `bool` or `char`, or a single-field struct around one
    /// (`Flags(0)`): its bits, zero-extended.
    Scalar(u128),
    /// A zero-sized value, e.g. a fn item or `()`.
    ZeroSized,
    /// Any other evaluated constant: what it refers to (boxed: most
    /// constants are scalars, and every operand pays for the largest
    /// variant).
    Memory(Box<Memory>),
    /// A constant the compiler could not evaluate here (should not happen in mono items).
    Unevaluated,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Terminator {
    pub kind: TerminatorKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum TerminatorKind {
    Goto {
        target: BlockId,
    },
    SwitchInt {
        discr: Operand,
        targets: Vec<SwitchTarget>,
        otherwise: BlockId,
    },
    Resume,
    Abort,
    Return,
    Unreachable,
    /// `glue` is the drop-glue instance of the place's type; `None` when the
    /// type needs no drop (the terminator is then a no-op).
    Drop {
        place: Place,
        glue: Option<Symbol>,
        target: BlockId,
        unwind: Unwind,
    },
    Call {
        callee: Callee,
        args: Vec<Operand>,
        destination: Place,
        target: Option<BlockId>,
        unwind: Unwind,
    },
    Assert {
        cond: Operand,
        expected: bool,
        target: BlockId,
        unwind: Unwind,
    },
    InlineAsm {
        target: Option<BlockId>,
        unwind: Unwind,
        fn_ptrs: Vec<Symbol>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct SwitchTarget {
    pub value: u128,
    pub target: BlockId,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum Unwind {
    Continue,
    Unreachable,
    Terminate,
    Cleanup(BlockId),
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum Callee {
    /// A statically known instance.
    Direct { symbol: Symbol },
    /// A `dyn Trait` method call: slot `slot` of the receiver's vtable.
    Virtual {
        trait_method: Name,
        trait_path: Name,
        slot: u32,
    },
    /// A call through a fn pointer (or an fn-pointer-typed place). `sig` is
    /// the pointer's signature key (see [`Instance::fn_sig`]).
    Indirect {
        operand: Operand,
        fn_ty: TyId,
        sig: Name,
    },
    /// A compiler intrinsic without a body, by name.
    Intrinsic { name: Name },
    /// The compiler could not resolve the callee (should not happen in mono
    /// items); kept so that nothing is silently dropped.
    Unresolved { path: Name },
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
/// A type. `display` is the compiler's rendering, used in reports and as
/// the cross-crate identity of a type.
pub struct Ty {
    pub kind: TyKind,
    pub display: Name,
    /// The size of a value of the type in bytes, from the compiler's
    /// layout (version 9); `None` where it has none (an unsized type, a
    /// type with generic parameters or projections left, a layout error).
    pub size: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum TyKind {
    Bool,
    Char,
    Int(Name),
    Uint(Name),
    Float(Name),
    Str,
    Never,
    /// `path` is the ADT's crate-qualified path; `args` its type arguments.
    Adt {
        path: Name,
        args: Vec<TyId>,
    },
    Foreign {
        path: Name,
    },
    Array {
        elem: TyId,
        len: Option<u64>,
    },
    Slice {
        elem: TyId,
    },
    RawPtr {
        pointee: TyId,
        mutable: bool,
    },
    Ref {
        pointee: TyId,
        mutable: bool,
    },
    FnDef {
        path: Name,
        args: Vec<TyId>,
    },
    FnPtr {
        inputs: Vec<TyId>,
        output: TyId,
    },
    Closure {
        path: Name,
        args: Vec<TyId>,
    },
    Coroutine {
        path: Name,
    },
    /// `dyn Trait + Auto`: the principal trait first, if any.
    Dynamic {
        traits: Vec<Name>,
    },
    Tuple(Vec<TyId>),
    /// Anything the analyses never look into (patterns, witnesses, params).
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct AdtDef {
    pub path: Name,
    pub kind: AdtKind,
    pub variants: Vec<VariantDef>,
    /// `#[klint::drop_preempt_count]` and similar live in `items` under `path`.
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum AdtKind {
    Struct,
    Enum,
    Union,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct VariantDef {
    pub name: Name,
    /// The value `Rvalue::Discriminant` yields for this variant (what
    /// `SwitchInt` compares against); the variant index for structs/unions.
    pub discr: u128,
    pub fields: Vec<FieldDef>,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct FieldDef {
    pub name: Name,
    /// The declared type, generic parameters unsubstituted.
    pub ty: Name,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
/// A vtable: `concrete` coerced to `dyn trait_path`.
pub struct Vtable {
    pub concrete: TyId,
    /// `None` for a vtable of auto traits only.
    pub trait_path: Option<Name>,
    /// The `dyn` type it is a vtable for.
    pub dyn_ty: TyId,
    pub entries: Vec<VtableEntry>,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum VtableEntry {
    DropInPlace {
        glue: Option<Symbol>,
    },
    Size,
    Align,
    Vacant,
    /// `method` is the trait method's path, `symbol` the instance in the slot.
    Method {
        method: Name,
        symbol: Symbol,
    },
    TraitVptr {
        trait_path: Name,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct StaticItem {
    pub path: Name,
    pub symbol: Symbol,
    pub ty: TyId,
    pub span: Span,
    pub mutable: bool,
    /// Functions whose address is in the initializer (e.g. ops tables handed to C).
    pub fn_ptrs: Vec<Symbol>,
    pub vtables: Vec<VtableId>,
    /// Which struct field each of those code pointers is stored in.
    pub fn_fields: Vec<FnField>,
}

/// What an evaluated constant refers to: the code pointers and vtables in
/// it, and for an enum the index of the variant it holds
/// (`const Option::<()>::Some(())`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Memory {
    pub fn_ptrs: Vec<Symbol>,
    pub vtables: Vec<VtableId>,
    pub statics: Vec<Name>,
    pub variant: Option<u32>,
    /// Which struct field each code pointer is stored in, where the
    /// constant's type says (an ops table like `blk_mq_ops`).
    pub fn_fields: Vec<FnField>,
}

/// A code pointer stored in a field of a struct in constant memory: C
/// calls it through that field (`blk_mq_ops.queue_rq`), in the context the
/// field's contract defines.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct FnField {
    /// The canonical path of the struct whose field holds the pointer (the
    /// innermost struct: a field of a nested struct names that struct).
    pub owner: Name,
    pub field: Name,
    pub symbol: Symbol,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
/// A local item with tool attributes.
pub struct ItemAttrs {
    pub path: Name,
    /// The compiler's description: `function`, `associated function`,
    /// `foreign function`, `struct`, `enum`, `union`, `trait`, …
    pub kind: Name,
    pub span: Span,
    pub attrs: Vec<ToolAttr>,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct ToolAttr {
    /// `klint` or `kanalyze`.
    pub tool: Name,
    /// The attribute name after the tool, e.g. `preempt_count`.
    pub name: Name,
    /// The whole attribute as written, e.g. `#[klint::preempt_count(adjust = 1)]`.
    pub text: Name,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
/// A function referenced here whose body is not in this dump.
pub struct External {
    pub symbol: Symbol,
    pub name: Name,
    pub item_path: Name,
    pub kind: ExternalKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum ExternalKind {
    /// Declared in an `extern` block: a C function, `symbol` is its link name.
    Foreign,
    /// A Rust function codegenned by another crate.
    Upstream { krate: Name },
    /// A shim or glue the compiler expects another crate to provide.
    Shim,
}

impl Span {
    /// The span of compiler-generated code with no source location.
    pub const DUMMY: Span = Span {
        file: u32::MAX,
        lo_line: 0,
        lo_col: 0,
        hi_line: 0,
        hi_col: 0,
    };

    pub fn is_dummy(&self) -> bool {
        self.file == u32::MAX
    }
}

impl Body {
    pub fn block(&self, id: BlockId) -> Option<&Block> {
        self.blocks.get(id as usize)
    }

    pub fn local(&self, id: LocalId) -> Option<&LocalDecl> {
        self.locals.get(id as usize)
    }

    pub fn var_name(&self, local: LocalId) -> Option<&str> {
        self.var_names
            .iter()
            .find(|v| v.local == local)
            .map(|v| v.name.as_str())
    }

    /// Every constant operand a value can flow from (assignments, casts,
    /// aggregates, call arguments), with the span of its statement or
    /// terminator: where the body's code pointers and ops tables are.
    pub fn constants(&self) -> Vec<(&Constant, Span)> {
        fn push<'a>(out: &mut Vec<(&'a Constant, Span)>, o: &'a Operand, span: Span) {
            if let Operand::Constant(c) = o {
                out.push((c, span));
            }
        }
        let mut out = Vec::new();
        for block in &self.blocks {
            for s in &block.statements {
                if let StatementKind::Assign { rvalue, .. } = &s.kind {
                    match &**rvalue {
                        Rvalue::Use(o)
                        | Rvalue::Cast { operand: o, .. }
                        | Rvalue::Repeat { operand: o, .. } => push(&mut out, o, s.span),
                        Rvalue::Aggregate { operands, .. } => {
                            for o in operands {
                                push(&mut out, o, s.span);
                            }
                        }
                        _ => {}
                    }
                }
            }
            if let TerminatorKind::Call { args, .. } = &block.terminator.kind {
                for o in args {
                    push(&mut out, o, block.terminator.span);
                }
            }
        }
        out
    }
}

impl TerminatorKind {
    /// The block this terminator continues at when the callee unwinds.
    pub fn unwind_target(&self) -> Option<BlockId> {
        match self {
            TerminatorKind::Drop { unwind, .. }
            | TerminatorKind::Assert { unwind, .. }
            | TerminatorKind::Call { unwind, .. }
            | TerminatorKind::InlineAsm { unwind, .. } => match unwind {
                Unwind::Cleanup(b) => Some(*b),
                _ => None,
            },
            _ => None,
        }
    }

    /// Every block this terminator may continue at, unwind edges included
    /// (last).
    pub fn successors(&self) -> Vec<BlockId> {
        let unwind = |u: &Unwind| match u {
            Unwind::Cleanup(b) => Some(*b),
            _ => None,
        };
        match self {
            TerminatorKind::Goto { target } => vec![*target],
            TerminatorKind::SwitchInt {
                targets, otherwise, ..
            } => targets
                .iter()
                .map(|t| t.target)
                .chain([*otherwise])
                .collect(),
            TerminatorKind::Resume
            | TerminatorKind::Abort
            | TerminatorKind::Return
            | TerminatorKind::Unreachable => vec![],
            TerminatorKind::Drop {
                target, unwind: u, ..
            }
            | TerminatorKind::Assert {
                target, unwind: u, ..
            } => [Some(*target), unwind(u)].into_iter().flatten().collect(),
            TerminatorKind::Call {
                target, unwind: u, ..
            }
            | TerminatorKind::InlineAsm {
                target, unwind: u, ..
            } => [*target, unwind(u)].into_iter().flatten().collect(),
        }
    }
}

impl CrateDump {
    /// The ADT with this canonical path (the table is sorted by path;
    /// `validate` checks it).
    pub fn adt(&self, path: &str) -> Option<&AdtDef> {
        self.adts
            .binary_search_by(|a| a.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.adts[i])
    }

    pub fn ty(&self, id: TyId) -> Option<&Ty> {
        self.types.get(id as usize)
    }

    pub fn file(&self, id: FileId) -> Option<&str> {
        self.files.get(id as usize).map(Name::as_str)
    }

    pub fn instance(&self, symbol: &str) -> Option<&Instance> {
        self.instances.iter().find(|i| i.symbol == symbol)
    }

    pub fn external(&self, symbol: &str) -> Option<&External> {
        self.externals.iter().find(|e| e.symbol == symbol)
    }

    /// The file name of `<crate>-<stable crate id>.kmir`, unique per crate build.
    pub fn file_name(&self) -> String {
        format!(
            "{}-{:016x}.kmir",
            self.header.crate_name, self.header.stable_crate_id
        )
    }
}
