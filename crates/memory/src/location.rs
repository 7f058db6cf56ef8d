//! Abstract locations: where a value's memory is, relative to something a
//! function can name — one of its arguments, a static, or one of its own
//! locals — followed by field projections and dereferences of pointers
//! stored on the way (`(*(*self).inner).lock`).
//!
//! A [`Location`] names any memory the analysis reasons about: a lock, the
//! object a pointer points to (`Facts::addrs`), what a function returns
//! (`Case::ret_addrs`). Locations rooted at an argument make summaries
//! parametric: at a call site the argument is replaced by what the caller
//! passes (`Places::substitute`), so `Lock::lock(&self)` acquires
//! `Binder.inner` in a caller that passes `&binder.inner`.
//!
//! The *class* of a location (lockdep's word for locks) is what the order
//! graph and the reports talk about: the type that owns it (the pointee type
//! of the last dereference on its path, or the static) and the field path
//! inside that type (`Binder.inner`). Two equal locations are the same
//! object; two different locations of one class may be two instances.

/// What a lock path starts from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub enum Root {
    /// The storage of argument `index` (1-based MIR local) on entry; its
    /// contents are what the caller passed.
    Arg { index: u32, ty: String },
    /// A static, by its crate-qualified path.
    Static(String),
    /// A local of the function the path is expressed in (a lock created on
    /// the stack: its allocation site).
    Local {
        func: String,
        local: u32,
        ty: String,
    },
}

/// One step of a lock path. Only the structure (which field, a deref)
/// identifies a lock; the type and field names are for messages, and may be
/// missing (`?`) where a path is rebuilt through an alias.
#[derive(Clone, Debug, bincode::Encode, bincode::Decode)]
pub enum Step {
    /// Follow the pointer stored here to a value of type `to`.
    Deref { to: String },
    /// Field `index` of the ADT `owner`, called `name`.
    Field {
        index: u32,
        owner: String,
        name: String,
    },
    /// The place viewed as one variant of its enum.
    Downcast(u32),
}

impl Step {
    fn key(&self) -> (u8, u32) {
        match self {
            Step::Deref { .. } => (0, 0),
            Step::Field { index, .. } => (1, *index),
            Step::Downcast(v) => (2, *v),
        }
    }
}

impl PartialEq for Step {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Step {}

impl PartialOrd for Step {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Step {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl std::hash::Hash for Step {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

/// A lock path; shared, because facts holding one are copied on every
/// branch of every body.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location(std::sync::Arc<LocationData>);

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocationData {
    pub root: Root,
    pub steps: Vec<Step>,
    class: ClassCache,
}

/// A path's class, computed once: every acquisition compares classes.
/// Derived from the path, so it takes no part in comparisons.
#[derive(Clone, Debug, Default)]
struct ClassCache(std::sync::OnceLock<LockClass>);

impl PartialEq for ClassCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ClassCache {}

impl PartialOrd for ClassCache {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ClassCache {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl std::hash::Hash for ClassCache {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl std::ops::Deref for Location {
    type Target = LocationData;
    fn deref(&self) -> &LocationData {
        &self.0
    }
}

/// Longest path kept; deeper paths (linked structures walked in a loop)
/// are not followed.
pub const MAX_STEPS: usize = 12;

/// Types whose fields only wrap the lock's memory: they do not appear in a
/// class name (`Lock.state`, not `Lock.state.value.value`).
const WRAPPERS: &[&str] = &[
    // The lock types themselves: their inner fields (`Lock.state`) say
    // nothing about which lock it is.
    "Lock",
    "SpinLock",
    "SpinLockIrq",
    "Mutex",
    "RwLock",
    "RawSpinLock",
    // spin's: `spin::Mutex` wraps a `SpinMutex` whose `lock` flag is the lock.
    "SpinMutex",
    "UnsafeCell",
    "Opaque",
    "MaybeUninit",
    "ManuallyDrop",
    "Cell",
    "SyncUnsafeCell",
];

impl Location {
    pub fn new(root: Root) -> Self {
        Self::from_parts(root, Vec::new())
    }

    pub fn from_parts(root: Root, steps: Vec<Step>) -> Self {
        Location(std::sync::Arc::new(LocationData {
            root,
            steps,
            class: ClassCache::default(),
        }))
    }

    pub fn with(&self, step: Step) -> Option<Location> {
        self.extended(std::slice::from_ref(&step))
    }

    pub fn extended(&self, steps: &[Step]) -> Option<Location> {
        if self.steps.len() + steps.len() > MAX_STEPS {
            return None;
        }
        let mut all = Vec::with_capacity(self.steps.len() + steps.len());
        all.extend_from_slice(&self.steps);
        all.extend_from_slice(steps);
        Some(Self::from_parts(self.root.clone(), all))
    }

    /// The argument this path starts from, if any.
    pub fn arg(&self) -> Option<u32> {
        match self.root {
            Root::Arg { index, .. } => Some(index),
            _ => None,
        }
    }

    /// Whether the lock is reached through a pointer stored in an argument
    /// (`(*(*guard).lock)`) rather than being the argument's own pointee:
    /// the argument *owns* the lock state, as a guard does.
    pub fn through_stored_pointer(&self) -> bool {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Deref { .. }))
            .count()
            > 1
            || (self.arg().is_some()
                && !matches!(self.steps.first(), Some(Step::Deref { .. }))
                && self.steps.iter().any(|s| matches!(s, Step::Deref { .. })))
    }

    /// A global context (RCU read side, IRQs off), not a lock object.
    pub fn is_global(&self) -> bool {
        matches!(&self.root, Root::Static(s) if s.starts_with('<'))
    }

    pub fn is_local(&self) -> bool {
        matches!(self.root, Root::Local { .. })
    }

    /// The lockdep-like class: owning type (or static) and field path.
    pub fn class(&self) -> &LockClass {
        self.0.class.0.get_or_init(|| self.compute_class())
    }

    fn compute_class(&self) -> LockClass {
        let last_deref = self
            .steps
            .iter()
            .rposition(|s| matches!(s, Step::Deref { .. }));
        let (owner, rest) = match last_deref {
            Some(d) => match (&self.steps[d], self.steps.get(d + 1)) {
                // The shared allocation of an `Arc<T>` is its `T`.
                (Step::Deref { to }, Some(Step::Field { name, .. }))
                    if REFCOUNTED.contains(&base_name(to)) && name == "data" =>
                {
                    (
                        first_generic_arg(to).map_or_else(|| short_type(to), short_type),
                        &self.steps[d + 2..],
                    )
                }
                (Step::Deref { to }, _) => (short_type(to), &self.steps[d + 1..]),
                _ => unreachable!("rposition found a Deref"),
            },
            None => (
                match &self.root {
                    Root::Arg { ty, .. } => short_type(ty),
                    Root::Static(path) => format!("static {path}"),
                    Root::Local { func, local, ty } => {
                        format!("{} (local _{local} of `{func}`)", short_type(ty))
                    }
                },
                &self.steps[..],
            ),
        };
        let mut name = owner;
        for s in rest {
            if let Step::Field { owner, name: f, .. } = s
                && !WRAPPERS.iter().any(|w| base_name(owner) == *w)
            {
                name.push('.');
                name.push_str(f);
            }
        }
        LockClass(name)
    }

    /// The path as source-like text (`p.inner`, with Rust's auto-deref
    /// and without the lock types' own fields), naming arguments and locals
    /// by their names in `body` when it has them.
    pub fn describe_in(&self, body: Option<&kmir::Body>) -> String {
        let named = |local: u32| body.and_then(|b| b.var_name(local)).map(str::to_string);
        let mut text = match &self.root {
            Root::Arg { index, .. } => named(*index).unwrap_or_else(|| format!("argument {index}")),
            Root::Static(path) => path.clone(),
            Root::Local { local, .. } => named(*local).unwrap_or_else(|| format!("_{local}")),
        };
        for s in &self.steps {
            if let Step::Field { owner, name, .. } = s
                && !WRAPPERS.iter().any(|w| base_name(owner) == *w)
            {
                text.push('.');
                text.push_str(name);
            }
        }
        text
    }

    pub fn describe(&self) -> String {
        self.describe_in(None)
    }
}

/// A lock class, by its readable name (`Binder.inner`, `static DEVICES`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, bincode::Encode, bincode::Decode)]
pub struct LockClass(pub String);

impl std::fmt::Display for LockClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reference-counted allocations whose `data` field is the shared value.
const REFCOUNTED: &[&str] = &["ArcInner", "RcInner", "UniqueArcInner"];

/// `ArcInner<kernel::Foo<u8>, B>` → `kernel::Foo<u8>`.
fn first_generic_arg(ty: &str) -> Option<&str> {
    let start = ty.find('<')? + 1;
    let mut depth = 0usize;
    for (i, c) in ty[start..].char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' if depth > 0 => depth -= 1,
            ',' | '>' if depth == 0 => return Some(ty[start..start + i].trim()),
            _ => {}
        }
    }
    None
}

/// `kernel::sync::lock::Lock<T, B>` → `Lock<T, B>` (generic arguments
/// shortened the same way).
pub fn short_type(ty: &str) -> String {
    let mut out = String::with_capacity(ty.len());
    let mut segment = String::new();
    for c in ty.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            segment.push(c);
        } else {
            out.push_str(last_segment(&segment));
            segment.clear();
            out.push(c);
        }
    }
    out.push_str(last_segment(&segment));
    out
}

fn last_segment(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

fn base_name(ty: &str) -> &str {
    let no_args = ty.split('<').next().unwrap_or(ty);
    last_segment(no_args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(ty: &str) -> Location {
        Location::new(Root::Arg {
            index: 1,
            ty: ty.into(),
        })
    }

    fn field(index: u32, owner: &str, name: &str) -> Step {
        Step::Field {
            index,
            owner: owner.into(),
            name: name.into(),
        }
    }

    #[test]
    fn class_is_owner_type_and_fields_without_wrappers() {
        let p = arg("&drivers::Binder")
            .extended(&[
                Step::Deref {
                    to: "drivers::Binder".into(),
                },
                field(0, "drivers::Binder", "inner"),
                field(1, "kernel::sync::Lock<Inner, B>", "state"),
                field(0, "kernel::types::Opaque<spinlock>", "value"),
            ])
            .unwrap();
        assert_eq!(p.class().0, "Binder.inner");
        assert_eq!(p.describe(), "argument 1.inner");
    }

    #[test]
    fn an_arc_allocation_is_its_value() {
        let p = arg("&Thread")
            .extended(&[
                Step::Deref {
                    to: "Thread".into(),
                },
                field(0, "Thread", "process"),
                field(0, "Arc<Process>", "ptr"),
                Step::Deref {
                    to: "kernel::sync::arc::ArcInner<drivers::Process>".into(),
                },
                field(1, "kernel::sync::arc::ArcInner<drivers::Process>", "data"),
                field(2, "drivers::Process", "inner"),
            ])
            .unwrap();
        assert_eq!(p.class().0, "Process.inner");
        assert_eq!(first_generic_arg("A<B<C, D>, E>"), Some("B<C, D>"));
    }

    #[test]
    fn short_type_keeps_generic_structure() {
        assert_eq!(
            short_type(
                "kernel::sync::lock::Lock<alloc::vec::Vec<u8>, kernel::sync::SpinLockBackend>"
            ),
            "Lock<Vec<u8>, SpinLockBackend>"
        );
    }
}

/// On the wire (the summary cache) a location is its root and steps; the
/// class is derived again when first asked for.
impl bincode::Encode for Location {
    fn encode<E: bincode::enc::Encoder>(
        &self,
        encoder: &mut E,
    ) -> Result<(), bincode::error::EncodeError> {
        self.root.encode(encoder)?;
        self.steps.encode(encoder)
    }
}

impl<Context> bincode::Decode<Context> for Location {
    fn decode<D: bincode::de::Decoder<Context = Context>>(
        decoder: &mut D,
    ) -> Result<Self, bincode::error::DecodeError> {
        let root = Root::decode(decoder)?;
        let steps = Vec::<Step>::decode(decoder)?;
        Ok(Location::from_parts(root, steps))
    }
}

bincode::impl_borrow_decode!(Location);
