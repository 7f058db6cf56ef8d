//! Facts about external functions (C functions, by link name) that no body
//! shows: how they change the preemption count, which counts they accept at
//! entry, whether they sleep depending on a GFP argument, and which lock
//! they take or release.
//!
//! A spec is a TOML file (format in `README.md` next to this crate); the
//! built-in kernel spec ([`Spec::builtin_kernel`]) is `kernel.toml`,
//! embedded at build time, and a user spec (`--spec`) extends or overrides
//! it ([`Spec::extend`]).
//!
//! Lookup ([`Spec::lookup`]) is by link name: the exact name, then the name
//! with a `rust_helper_` prefix stripped (the kernel binds most C inline
//! functions through `rust_helper_*` wrappers with identical behaviour),
//! then glob patterns (`__*_init`, `clk_*`, as in klint's FFI table), the
//! most specific (most literal characters) first.
//!
//! Trylocks: the preemption analysis has a single adjustment per function,
//! so it cannot say "+1 only on success". Trylocks therefore have
//! `adjust = 0` and carry the conditional effect in [`LockEffect`] with
//! [`LockOp::TryAcquire`], for the lock analysis (and a later
//! path-sensitive preemption analysis) to use.

mod raw;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use annotations::ExpectRange;

/// The built-in kernel spec.
const KERNEL_TOML: &str = include_str!("../kernel.toml");

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FnSpec {
    /// Net preemption-count change from entry to return.
    pub adjust: i32,
    /// The entry counts allowed: `0` may sleep, `0..` any context, `1..`
    /// atomic context only.
    pub expect: ExpectRange,
    /// The call may sleep only if argument `arg` (0-based) has any bit of
    /// `mask` set (GFP flags: `__GFP_DIRECT_RECLAIM`); `expect` then holds
    /// when the argument is a known constant without those bits. When the
    /// argument is not a known constant the call is assumed to sleep.
    pub sleeps_if_flag: Option<FlagCondition>,
    /// The call also sleeps, whatever the flags, when argument `N` (a size)
    /// is the constant 0: `vrealloc(p, 0, …)` and `kvrealloc(p, 0, …)` free
    /// with `vfree`, which may sleep. This is how the kernel's Rust
    /// allocators free (`realloc` to size 0 with empty flags), so without
    /// it dropping a `VVec`/`KVVec` under a spinlock would look fine. A
    /// non-constant size is taken as non-zero.
    pub sleeps_if_zero: Option<u32>,
    /// The lock effect, for the lock analysis.
    pub lock: Option<LockEffect>,
    /// One line of why (shown in `kanalyze summary`).
    pub note: Option<String>,
}

impl Default for FnSpec {
    /// No effect, any context: what `[fn.x]` with no keys means.
    fn default() -> Self {
        FnSpec {
            adjust: 0,
            expect: ExpectRange::TOP,
            sleeps_if_flag: None,
            sleeps_if_zero: None,
            lock: None,
            note: None,
        }
    }
}

/// Not `Copy`: callers clone it out of an `Option` (and clippy would flag
/// that clone on a `Copy` type).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FlagCondition {
    pub arg: u32,
    pub mask: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockEffect {
    pub op: LockOp,
    /// The argument (0-based) that is, or points to, the lock; `None` for
    /// the global contexts (`rcu`, `irq`, `bh`, `preempt`), which have no
    /// lock object.
    pub arg: Option<u32>,
    pub kind: LockKind,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LockOp {
    Acquire,
    Release,
    /// Acquires only when the call succeeds.
    TryAcquire {
        success: TrySuccess,
    },
}

/// How a trylock-like function says it succeeded.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TrySuccess {
    /// `spin_trylock`, `mutex_trylock`: 1 on success.
    ReturnsNonZero,
    /// `mutex_lock_interruptible`, `down_trylock`: 0 on success, an error otherwise.
    ReturnsZero,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockKind {
    /// `spinlock_t` (a sleeping lock under PREEMPT_RT).
    Spin,
    /// `spinlock_t` taken with interrupts disabled.
    SpinIrq,
    /// `spinlock_t` taken with bottom halves disabled.
    SpinBh,
    /// `raw_spinlock_t` and bit spinlocks: spin even under PREEMPT_RT.
    RawSpin,
    /// `rwlock_t`, read side.
    ReadLock,
    /// `rwlock_t`, write side.
    WriteLock,
    /// `struct mutex`, `rt_mutex`, `ww_mutex`, the socket lock.
    Mutex,
    /// `rw_semaphore` (also percpu and mmap locks), read side.
    RwSemRead,
    RwSemWrite,
    /// An RCU read-side section (global).
    Rcu,
    /// An SRCU read-side section of one `srcu_struct`.
    Srcu,
    /// `struct semaphore`.
    Semaphore,
    /// Interrupts disabled (global).
    Irq,
    /// Bottom halves disabled (global).
    Bh,
    /// Preemption disabled (global).
    Preempt,
    /// `local_lock_t`: a per-CPU lock (preemption disabled on !RT).
    LocalLock,
}

impl LockKind {
    pub const ALL: [LockKind; 16] = [
        LockKind::Spin,
        LockKind::SpinIrq,
        LockKind::SpinBh,
        LockKind::RawSpin,
        LockKind::ReadLock,
        LockKind::WriteLock,
        LockKind::Mutex,
        LockKind::RwSemRead,
        LockKind::RwSemWrite,
        LockKind::Rcu,
        LockKind::Srcu,
        LockKind::Semaphore,
        LockKind::Irq,
        LockKind::Bh,
        LockKind::Preempt,
        LockKind::LocalLock,
    ];

    /// The spelling in spec files.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Spin => "spin",
            LockKind::SpinIrq => "spin_irq",
            LockKind::SpinBh => "spin_bh",
            LockKind::RawSpin => "raw_spin",
            LockKind::ReadLock => "read_lock",
            LockKind::WriteLock => "write_lock",
            LockKind::Mutex => "mutex",
            LockKind::RwSemRead => "rwsem_read",
            LockKind::RwSemWrite => "rwsem_write",
            LockKind::Rcu => "rcu",
            LockKind::Srcu => "srcu",
            LockKind::Semaphore => "semaphore",
            LockKind::Irq => "irq",
            LockKind::Bh => "bh",
            LockKind::Preempt => "preempt",
            LockKind::LocalLock => "local_lock",
        }
    }

    /// The C type of the lock object, for messages.
    pub fn c_type(self) -> &'static str {
        match self {
            LockKind::Spin | LockKind::SpinIrq | LockKind::SpinBh => "spinlock_t",
            LockKind::RawSpin => "raw_spinlock_t",
            LockKind::ReadLock | LockKind::WriteLock => "rwlock_t",
            LockKind::Mutex => "struct mutex",
            LockKind::RwSemRead | LockKind::RwSemWrite => "struct rw_semaphore",
            LockKind::Srcu => "struct srcu_struct",
            LockKind::Semaphore => "struct semaphore",
            LockKind::LocalLock => "local_lock_t",
            LockKind::Rcu | LockKind::Irq | LockKind::Bh | LockKind::Preempt => "(global)",
        }
    }

    pub fn from_name(name: &str) -> Option<LockKind> {
        LockKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// A context with no lock object: the effect has no `arg`.
    pub fn is_global(self) -> bool {
        matches!(
            self,
            LockKind::Rcu | LockKind::Irq | LockKind::Bh | LockKind::Preempt
        )
    }

    /// Holding it allows sleeping (a sleeping lock or an SRCU section).
    pub fn may_sleep_while_held(self) -> bool {
        matches!(
            self,
            LockKind::Mutex
                | LockKind::RwSemRead
                | LockKind::RwSemWrite
                | LockKind::Srcu
                | LockKind::Semaphore
        )
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A spec file error, displayed like a compiler's: `origin:line:col: message`
/// (`origin: message` when there is no position, e.g. an unreadable file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub origin: String,
    /// 1-based; 0 when the error has no position.
    pub line: usize,
    /// 1-based, in characters.
    pub col: usize,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.origin, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.origin, self.line, self.col, self.message
            )
        }
    }
}

impl std::error::Error for SpecError {}

/// A glob entry (`clk_*`).
#[derive(Clone, Debug)]
struct Pattern {
    glob: String,
    /// Characters other than `*`: the more, the more specific.
    literal_len: usize,
    spec: FnSpec,
}

/// Function specs by link name.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    exact: HashMap<String, FnSpec>,
    /// Most specific first, then by glob text: lookup takes the first match.
    patterns: Vec<Pattern>,
}

const HELPER_PREFIX: &str = "rust_helper_";

impl Spec {
    /// The built-in kernel spec (`kernel.toml`). A unit test proves that it
    /// parses; should it ever not, this returns an empty spec rather than
    /// panicking, and every C function gets the unknown-function default.
    pub fn builtin_kernel() -> Spec {
        Spec::parse(KERNEL_TOML, "<builtin>/kernel.toml").unwrap_or_default()
    }

    /// The text of the built-in spec, e.g. to show or copy it.
    pub fn builtin_kernel_text() -> &'static str {
        KERNEL_TOML
    }

    /// Parses a spec file. `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Spec, SpecError> {
        let entries = raw::parse(text, origin)?;
        let mut spec = Spec::default();
        for (name, fn_spec) in entries {
            spec.insert(name, fn_spec);
        }
        Ok(spec)
    }

    pub fn load(path: &Path) -> Result<Spec, SpecError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SpecError {
            origin: origin.clone(),
            line: 0,
            col: 0,
            message: format!("cannot read the spec file: {e}"),
        })?;
        Spec::parse(&text, &origin)
    }

    /// Adds or replaces one entry (`name` may be a glob).
    pub fn insert(&mut self, name: String, fn_spec: FnSpec) {
        if name.contains('*') {
            self.patterns.retain(|p| p.glob != name);
            self.patterns.push(Pattern {
                literal_len: name.chars().filter(|c| *c != '*').count(),
                glob: name,
                spec: fn_spec,
            });
            self.patterns.sort_by(|a, b| {
                b.literal_len
                    .cmp(&a.literal_len)
                    .then_with(|| a.glob.cmp(&b.glob))
            });
        } else {
            self.exact.insert(name, fn_spec);
        }
    }

    /// Adds every entry of `other`; its entries override ours.
    pub fn extend(&mut self, other: Spec) {
        for (name, fn_spec) in other.exact {
            self.insert(name, fn_spec);
        }
        for pattern in other.patterns {
            self.insert(pattern.glob, pattern.spec);
        }
    }

    /// Looks up a C function by link name: exact name, then with a
    /// `rust_helper_` prefix stripped, then glob patterns (on the stripped
    /// name, then on the name as given).
    pub fn lookup(&self, link_name: &str) -> Option<&FnSpec> {
        self.lookup_entry(link_name).map(|(_, spec)| spec)
    }

    /// Like [`lookup`](Self::lookup), also returning the entry's name or
    /// glob that matched.
    pub fn lookup_entry(&self, link_name: &str) -> Option<(&str, &FnSpec)> {
        let stripped = link_name.strip_prefix(HELPER_PREFIX);
        let names = stripped.into_iter().chain([link_name]);
        if let Some((name, spec)) = self.exact.get_key_value(link_name) {
            return Some((name, spec));
        }
        if let Some((name, spec)) = stripped.and_then(|s| self.exact.get_key_value(s)) {
            return Some((name, spec));
        }
        for name in names {
            if let Some(p) = self.patterns.iter().find(|p| glob_match(&p.glob, name)) {
                return Some((&p.glob, &p.spec));
            }
        }
        None
    }

    /// Number of entries (exact names and globs).
    pub fn len(&self) -> usize {
        self.exact.len() + self.patterns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every entry, exact names sorted, then globs in lookup order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &FnSpec)> {
        let mut exact: Vec<(&str, &FnSpec)> =
            self.exact.iter().map(|(n, s)| (n.as_str(), s)).collect();
        exact.sort_by_key(|(n, _)| *n);
        exact
            .into_iter()
            .chain(self.patterns.iter().map(|p| (p.glob.as_str(), &p.spec)))
    }
}

/// `*` matches any run of characters (possibly empty); everything else
/// matches itself. Iterative with one backtrack point, so linear-ish and
/// never recursive.
fn glob_match(glob: &str, name: &str) -> bool {
    let g: Vec<char> = glob.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut gi, mut ni) = (0, 0);
    // Position of the last `*` in the glob and the name position it matched up to.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some((gi, ni));
                gi += 1;
            }
            Some(c) if *c == n[ni] => {
                gi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sg, sn)) => {
                    gi = sg + 1;
                    ni = sn + 1;
                    star = Some((sg, sn + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests;
