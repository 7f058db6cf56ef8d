//! Lock identity and the lock state of one path.
//!
//! A lock is named by an abstract location, a [`LockPath`]: where its memory
//! is, relative to something the function can name — one of its arguments,
//! a static, or one of its own locals — followed by field projections and
//! dereferences of pointers stored on the way (`(*(*self).inner).lock`).
//! Paths rooted at an argument make summaries parametric: at a call site the
//! argument is replaced by what the caller passes, so `Lock::lock(&self)`
//! acquires `Binder.inner` in a caller that passes `&binder.inner`.
//!
//! The *class* of a lock (lockdep's word) is what the order graph and the
//! reports talk about: the type that owns it (the pointee type of the last
//! dereference on its path, or the static) and the field path inside that
//! type (`Binder.inner`). Two locks with equal paths are the same object;
//! two different paths of one class may be two instances.

use spec::LockKind;

/// What a lock path starts from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
#[derive(Clone, Debug)]
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
pub struct LockPath(std::sync::Arc<PathData>);

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathData {
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

impl std::ops::Deref for LockPath {
    type Target = PathData;
    fn deref(&self) -> &PathData {
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
    "UnsafeCell",
    "Opaque",
    "MaybeUninit",
    "ManuallyDrop",
    "Cell",
    "SyncUnsafeCell",
];

impl LockPath {
    pub fn new(root: Root) -> Self {
        Self::from_parts(root, Vec::new())
    }

    pub fn from_parts(root: Root, steps: Vec<Step>) -> Self {
        LockPath(std::sync::Arc::new(PathData {
            root,
            steps,
            class: ClassCache::default(),
        }))
    }

    pub fn with(&self, step: Step) -> Option<LockPath> {
        self.extended(std::slice::from_ref(&step))
    }

    pub fn extended(&self, steps: &[Step]) -> Option<LockPath> {
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
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

/// Where a lock was acquired, in the function whose state holds it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Acquired {
    pub span: kmir::Span,
    /// The callee called there (the lock function, or the function that
    /// returned with the lock held).
    pub callee: program::FnId,
}

/// One lock held on a path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Held {
    pub lock: LockPath,
    pub kind: LockKind,
    /// Taken by a trylock: it cannot deadlock by itself.
    pub trylock: bool,
    /// Not part of a path's identity: paths that differ only in where a lock
    /// was taken are merged, keeping the first site.
    pub at: Acquired,
}

/// The lock state of one path: locks held since entry, and locks released
/// that the function did not acquire (it needs them held on entry).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockState {
    /// Sorted by lock path.
    pub held: Vec<Held>,
    /// Sorted, deduplicated.
    pub released: Vec<LockPath>,
}

/// Most locks one path tracks at once.
pub const MAX_HELD: usize = 16;

impl LockState {
    /// The order of paths' lock states: by held locks (and kinds), then
    /// released ones; where each was taken does not count. Runs for every
    /// path merge, so it compares in place.
    pub fn cmp_key(&self, other: &LockState) -> std::cmp::Ordering {
        fn held(s: &LockState) -> impl Iterator<Item = (&LockPath, LockKind)> {
            s.held.iter().map(|h| (&h.lock, h.kind))
        }
        held(self)
            .cmp(held(other))
            .then_with(|| self.released.cmp(&other.released))
    }

    pub fn same_as(&self, other: &LockState) -> bool {
        self.cmp_key(other).is_eq()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty() && self.released.is_empty()
    }

    pub fn acquire(&mut self, held: Held) {
        if self.held.len() >= MAX_HELD {
            return;
        }
        let i = self
            .held
            .partition_point(|h| (&h.lock, h.kind) <= (&held.lock, held.kind));
        self.held.insert(i, held);
    }

    /// Releases `lock`; a lock not held is recorded as needed on entry.
    pub fn release(&mut self, lock: &LockPath) {
        if let Some(i) = self.held.iter().rposition(|h| &h.lock == lock) {
            self.held.remove(i);
        } else if !lock.is_local()
            && let Err(i) = self.released.binary_search(lock)
        {
            self.released.insert(i, lock.clone());
        }
    }

    /// Locks held now that were not held on entry: a lock released and
    /// taken again (`do_unlocked`) is back where it was.
    pub fn net_held(&self) -> impl Iterator<Item = &Held> {
        self.held
            .iter()
            .filter(|h| !self.released.contains(&h.lock))
    }

    /// Locks held on entry and released since, not taken again.
    pub fn net_released(&self) -> impl Iterator<Item = &LockPath> {
        self.released
            .iter()
            .filter(|l| !self.held.iter().any(|h| &h.lock == *l))
    }

    /// Keeps what both states agree on (paths collapsed into one).
    pub fn meet(&mut self, other: &LockState) {
        self.held.retain(|h| {
            other
                .held
                .iter()
                .any(|o| o.lock == h.lock && o.kind == h.kind)
        });
        self.released.retain(|r| other.released.contains(r));
    }

    /// Whether interrupts are disabled by a lock held on this path.
    pub fn irqs_disabled(&self) -> bool {
        self.held.iter().any(|h| h.kind.disables_irqs())
    }
}

/// Whether a kind of lock has an object (a class); the global contexts
/// (RCU, IRQs off, preemption off) do not.
pub fn has_object(kind: LockKind) -> bool {
    !matches!(
        kind,
        LockKind::Rcu | LockKind::Irq | LockKind::Bh | LockKind::Preempt
    )
}

/// Readers of the same lock do not exclude each other: taking a read lock
/// twice is not a self-deadlock (for `rwlock_t`; `rw_semaphore` readers can
/// still deadlock with a waiting writer, which lockdep reports too).
pub fn recursive_ok(first: LockKind, second: LockKind) -> bool {
    (first.is_read_lock() && second.is_read_lock())
        || (first == LockKind::Rcu && second == LockKind::Rcu)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(ty: &str) -> LockPath {
        LockPath::new(Root::Arg {
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

    #[test]
    fn releasing_an_unheld_lock_is_a_requirement() {
        let mut s = LockState::default();
        let l = arg("&L").with(Step::Deref { to: "L".into() }).unwrap();
        s.release(&l);
        assert_eq!(s.released, vec![l.clone()]);
        s.acquire(Held {
            lock: l.clone(),
            kind: LockKind::Spin,
            trylock: false,
            at: Acquired {
                span: kmir::Span::default(),
                callee: program::FnId(0),
            },
        });
        s.release(&l);
        assert!(s.held.is_empty());
    }
}
