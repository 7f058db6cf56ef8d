//! Declared invariants: facts the program keeps across objects and over
//! time that no function body shows, stated by the people who know them.
//!
//! Six kinds:
//! - **empty at teardown**: field `F` of struct `T` holds an empty value
//!   (`None`, an empty list) whenever a `T` is torn down, because some
//!   function empties it before the last reference to the `T` can go.
//!   Binder's `ProcessInner::binderfs_file` is taken in
//!   `Process::deferred_release`; without the invariant every drop of an
//!   `Arc<Process>` under a spinlock looks like it may run
//!   `BinderfsProcFile::drop`, which sleeps.
//! - **empty when stored**: field `F` of struct `T` holds an empty value
//!   whenever a value is stored into it (in the named functions, or
//!   anywhere), so the store overwrites nothing: the drop of the old value
//!   that the assignment runs releases nothing. Binder stores a process's
//!   binderfs file once, right after creating the process, and puts a
//!   transaction's allocation back only where it took it out a few lines
//!   earlier (with the lock released in between, which the analysis must
//!   take as "anything may have happened").
//! - **kept alive**: every object that field `F` of struct `T` refers to is
//!   also referred to from elsewhere for as long as it is in `F`, so a
//!   reference taken out of `F` is never the last one: dropping it cannot
//!   run the object's teardown. Binder's `ProcessInner::ready_threads`
//!   holds threads that wait for work; each waiting thread's
//!   `Registration` borrows its own `Arc<Thread>` and takes the thread off
//!   the list (under the same lock) before it goes, and
//!   `ready_threads ⊆ threads`.
//! - **holds last**: a reference taken out of field `F` of struct `T` (by
//!   the functions named) can be the last one: the rest of the object's
//!   holders may be gone by then, so dropping it can run the object's
//!   teardown. The opposite of kept alive, for the list a teardown drains:
//!   Binder's `Process::deferred_release` empties
//!   `ProcessInner::delivered_deaths` after it released every other
//!   holder of those deaths, and a drop of one under the process lock is
//!   then a certain bug (the upstream fix "avoid holding lock when
//!   dropping delivered_death").
//! - **never fails**: every call of function `C` that function `F` makes
//!   returns its success variant (`Ok`, `Some`), by a precondition `F`'s
//!   callers keep, so the failure arm of the switch on its result never
//!   runs there. Binder's `Node::add_freeze_listener` pushes the listeners
//!   it moves into a bigger vector with `push_within_capacity`, which
//!   cannot fail there: its caller passes an empty vector, and the
//!   function checked the room.
//! - **same object**: where function `F` drops a value of struct `T` (or a
//!   handle, option or container of one), its back pointer `T.B` names the
//!   object the argument path `S` (`self`, `self.to`, `arg1`) referred to
//!   on entry, so the drop cannot release the last reference through it
//!   while that object is kept alive. Binder's `Process::debug_print`
//!   drops, under its own lock, nodes whose `owner` is `self`; the node's
//!   teardown would drop that `owner`, which `&self` keeps alive. The
//!   declaration names no local: the analysis checks at each drop that
//!   the teardown's last reference can come only through `T.B`, and finds
//!   in the object facts there what keeps `S`'s object alive (a borrow
//!   that outlives the call, or a sharing clone still held), whatever the
//!   locals are called (`same_object`).
//!
//! A declaration comes in one of two equivalent forms:
//! - `#[kanalyze::empty_at_teardown("why")]` on the field in the source;
//! - an entry of an invariants file (`--invariants FILE`), so that a batch
//!   can run over an unmodified upstream tree:
//!
//!   ```toml
//!   [[empty_at_teardown]]
//!   type = "rust_binder::process::ProcessInner"
//!   field = "binderfs_file"
//!   emptied_by = ["rust_binder::process::Process::deferred_release"]
//!   because = "deferred_release takes it before the last reference goes"
//!   ```
//!
//!   ```toml
//!   [[empty_when_stored]]
//!   type = "rust_binder::transaction::Transaction"
//!   field = "allocation"
//!   stored_by = ["rust_binder::transaction::Transaction::prepare_file_list"]
//!   because = "it puts back what it took out four lines earlier"
//!   ```
//!
//!   ```toml
//!   [[kept_alive]]
//!   type = "rust_binder::process::ProcessInner"
//!   field = "ready_threads"
//!   because = "a waiting thread's Registration holds its Arc<Thread> until it leaves the list"
//!   ```
//!
//!   ```toml
//!   [[never_fails]]
//!   function = "rust_binder::node::Node::add_freeze_listener"
//!   callee = "kernel::alloc::kvec::Vec::<T, A>::push_within_capacity"
//!   because = "the caller's spare vector is empty and has more room than the list"
//!   ```
//!
//!   (in the source: `#[kanalyze::never_fails("Vec::push_within_capacity",
//!   "why")]` on the function).
//!
//!   ```toml
//!   [[same_object]]
//!   function = "rust_binder::process::Process::debug_print"
//!   type = "rust_binder::node::Node"
//!   field = "owner"
//!   same_as = "self"
//!   because = "a process's nodes are made with owner = self"
//!   ```
//!
//!   (in the source: `#[kanalyze::same_object("Node.owner", "self",
//!   "why")]` on the function).
//!
//! ## What is checked, what is trusted
//! Every declaration must name something: a struct the program has, a field
//! it has, and, for `emptied_by`, functions the program has whose bodies
//! write that field (assign it, or pass it by `&mut` to a call such as
//! `Option::take`). A declaration that matches nothing is an error, not an
//! ignored line. What is trusted is the timing: that the emptier runs on
//! every path before the last reference goes, and that nothing stores into
//! the field afterwards. The analysis tracks no reference counts, so it
//! cannot check either; the audit (`Resolved::uses`, the JSON summary)
//! says where each declaration was applied so that a reviewer can.
//!
//! For empty-when-stored, each `stored_by` function must store into the
//! field (an assignment over it, directly or through a guard of the lock
//! the field is); without `stored_by` the declaration covers every store
//! in the program and must match at least one. What is trusted is that
//! the field is empty at those stores.
//!
//! For kept-alive, what is trusted is the whole fact: the analysis
//! tracks no reference counts. What is checked is that the declaration
//! names a field some function takes references out of (a call that
//! receives a borrow of the field and returns what it held, such as
//! `List::pop_front`, `List::remove` or `mem::take`), and the audit lists
//! every drop it applied to.
//!
//! For never-fails, the function must have a body that calls a function
//! the callee's path names (in full, or by its last segments, with or
//! without generic arguments), the name must match the calls of one
//! function only, and each such call must return a `Result` or an
//! `Option`. What is trusted is that each covered call succeeds.
//!
//! ## How it is applied
//! In the drop glue of `T` (every instantiation of it), the drop of `F` is
//! a no-op: the glue's summary no longer contains the field's teardown, and
//! neither does anything that drops a `T`. Dropping `F` anywhere else (an
//! assignment over it, `mem::take` and a drop of the result) is analysed as
//! before: the invariant is about teardown only.
//!
//! An empty-when-stored declaration makes the drop that an assignment over
//! `F` runs before writing the new value a no-op, in the functions it
//! covers. A store is recognised by its shape, not its names: a `Drop` of
//! a place whose next statement assigns that same place, where the place
//! is `F` of a `T` (`x.f = v`, `(*p).f = v`), or is the data behind a
//! pointer derived from a borrow of `F` through calls (the guard of the
//! lock `F` is: `*x.f.lock() = v`), with the type of the data one of
//! `F`'s type arguments.
//!
//! A kept-alive declaration makes the drops of what was taken out of `F`
//! drop a reference that is not the last: the drop's own expectation
//! stays (a count decrement, an `Option` check), the teardown it would run
//! on the last reference (`Summary::expect_last`) does not apply there.
//! "Taken out of `F`" is recognised by shape: the result of a call one of
//! whose arguments is a borrow of `F` (`&mut x.f`, `&x.f`) while the others
//! carry no owned values (references, raw pointers, numbers), and the
//! locals moved out of that result (`if let Some(t) = x.f.pop_front()`),
//! if nothing else is ever written into them. The drop of the old value a
//! store into `F` runs is covered too (recognised as for empty when
//! stored): that value was in `F` until the store.
//!
//! A holds-last declaration makes the same drops (recognised the same way)
//! drop a reference that can be the last: the teardown's expectation
//! joins the drop's own, so a drop under a lock whose teardown may sleep
//! is a `sleep-in-atomic` error rather than a `last-reference-in-atomic`
//! warning. Where the analysis itself shows the reference is not the last
//! (kept alive by a borrow, a container, an identity), that proof stands:
//! the declaration says the reference *can* be the last, not that it is
//! on every path. A drop covered by both a kept-alive and a holds-last
//! declaration is a contradiction, reported as such.
//!
//! A never-fails declaration fixes the variant of each covered call's
//! result where the body analysis reaches the call, as a value fact
//! (`Resolved::succeeds_in`): the facts prune the switch arms that test
//! for the failure variant, and every path through them.

mod file;
mod never_fails;
mod resolve;
pub mod same_object;

use std::path::PathBuf;

pub use file::{FileError, load};
pub use resolve::{Problem, ProblemKind, Resolved, Use, resolve};

/// One declared invariant and where it was declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration {
    pub invariant: Invariant,
    pub origin: Origin,
    /// Why it holds: the code that upholds it.
    pub because: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invariant {
    /// Field `field` of the struct `ty` (canonical path, no generic
    /// arguments) is empty whenever a value of it is torn down; `emptied_by`
    /// names the functions that empty it (checked to write the field).
    EmptyAtTeardown {
        ty: String,
        field: String,
        emptied_by: Vec<String>,
    },
    /// Field `field` of the struct `ty` is empty whenever a value is stored
    /// into it by one of `stored_by` (by any function when empty), so such
    /// a store's drop of the old value releases nothing.
    EmptyWhenStored {
        ty: String,
        field: String,
        stored_by: Vec<String>,
    },
    /// Every object field `field` of the struct `ty` refers to is also
    /// referred to from elsewhere while it is in the field, so a reference
    /// taken out of it is never the last one; or, when `taken_by` names
    /// functions, a reference those functions take out of it is never the
    /// last one (what they take is kept alive by their caller).
    KeptAlive {
        ty: String,
        field: String,
        taken_by: Vec<String>,
    },
    /// A reference taken out of field `field` of the struct `ty` (by the
    /// functions `taken_by` names; by any when empty) can be the last one:
    /// the object's teardown can run where it is dropped.
    HoldsLast {
        ty: String,
        field: String,
        taken_by: Vec<String>,
    },
    /// Every call of `callee` that `function` makes returns its success
    /// variant (`Ok`, `Some`): its failure paths cannot run there, by a
    /// precondition the function's callers keep (a capacity reserved
    /// beforehand, an element known present).
    NeverFails { function: String, callee: String },
    /// Where `function` drops a value of the struct `ty` (or a handle,
    /// option or container of one), the object its field `field` (a back
    /// pointer) refers to is the object the argument path `same_as`
    /// (`self.to`) referred to on entry. The drop then releases no last
    /// reference through the field where the body shows that object kept
    /// alive: borrowed for the whole call, or held by a sharing clone
    /// still alive there.
    SameObject {
        function: String,
        ty: String,
        field: String,
        same_as: same_object::ArgPath,
    },
}

/// Where a declaration was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// An entry of an invariants file: 1-based line and column of the
    /// entry's table, and its byte range (for rendering errors).
    File {
        path: PathBuf,
        line: usize,
        col: usize,
        span: std::ops::Range<usize>,
    },
    /// A `#[kanalyze::…]` attribute, in dump `krate`.
    Attribute { krate: u32, span: kmir::Span },
}

impl Declaration {
    /// Where it was declared, as `file:line:col`.
    pub fn declared_at(&self, program: &program::Program) -> String {
        match &self.origin {
            Origin::File {
                path, line, col, ..
            } => format!("{}:{line}:{col}", path.display()),
            Origin::Attribute { krate, span } => {
                let file = program
                    .crates
                    .get(*krate as usize)
                    .and_then(|c| c.dump.file(span.file))
                    .unwrap_or("?");
                format!("{file}:{}:{}", span.lo_line, span.lo_col)
            }
        }
    }

    /// The declaration in a few words: "`ProcessInner.binderfs_file` is
    /// empty at teardown".
    pub fn describe(&self) -> String {
        match &self.invariant {
            Invariant::EmptyAtTeardown { ty, field, .. } => {
                let short = ty.rsplit("::").next().unwrap_or(ty);
                format!("`{short}.{field}` is empty at teardown")
            }
            Invariant::EmptyWhenStored { ty, field, .. } => {
                let short = ty.rsplit("::").next().unwrap_or(ty);
                format!("`{short}.{field}` is empty when stored")
            }
            Invariant::KeptAlive {
                ty,
                field,
                taken_by,
            } => taken_phrase(
                ty,
                field,
                taken_by,
                |f| format!("what `{f}` holds is kept alive elsewhere"),
                "is kept alive elsewhere",
            ),
            Invariant::HoldsLast {
                ty,
                field,
                taken_by,
            } => taken_phrase(
                ty,
                field,
                taken_by,
                |f| format!("a reference taken out of `{f}` can be the last"),
                "can be the last reference",
            ),
            Invariant::NeverFails { function, callee } => format!(
                "`{}` never fails in `{}`",
                last_segments(callee, 1),
                last_segments(function, 2)
            ),
            Invariant::SameObject {
                function,
                ty,
                field,
                same_as,
            } => format!(
                "where `{}` drops a `{}`, its `{field}` is `{same_as}`'s object",
                last_segments(function, 2),
                last_segments(ty, 1)
            ),
        }
    }
}

/// What a kept-alive or holds-last declaration says of the references in
/// `ty.field`: `whole("T.f")` without `taken_by`, "what `g` takes out of
/// `T.f` or stores over {taken}" with it.
fn taken_phrase(
    ty: &str,
    field: &str,
    taken_by: &[String],
    whole: impl Fn(&str) -> String,
    taken: &str,
) -> String {
    let short = ty.rsplit("::").next().unwrap_or(ty);
    if taken_by.is_empty() {
        return whole(&format!("{short}.{field}"));
    }
    let by: Vec<&str> = taken_by
        .iter()
        .map(|f| f.rsplit("::").next().unwrap_or(f))
        .collect();
    format!(
        "what `{}` takes out of `{short}.{field}` or stores over {taken}",
        by.join("`, `")
    )
}

/// The last `n` `::`-separated segments of a path, generic arguments kept
/// with the segment they follow (`Vec::<T, A>::push` → `push` for 1).
fn last_segments(path: &str, n: usize) -> &str {
    let mut depth = 0i32;
    let mut cut = 0;
    let mut seen = 0;
    let bytes = path.as_bytes();
    let mut i = bytes.len();
    while i > 0 {
        i -= 1;
        match bytes[i] {
            b'>' => depth += 1,
            b'<' => depth -= 1,
            b':' if depth == 0 && i > 0 && bytes[i - 1] == b':' => {
                // A segment's generic arguments (`::<T, A>`) stay with it.
                if bytes.get(i + 1) == Some(&b'<') {
                    i -= 1;
                    continue;
                }
                seen += 1;
                if seen == n {
                    cut = i + 1;
                    break;
                }
                i -= 1;
            }
            _ => {}
        }
    }
    &path[cut..]
}

/// An invariant attribute on an item it cannot be about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Misplaced {
    pub krate: u32,
    pub span: kmir::Span,
    pub message: String,
    /// Where the attribute belongs.
    pub help: &'static str,
}

/// The attribute form: every field carrying `#[kanalyze::empty_at_teardown]`,
/// `#[kanalyze::empty_when_stored]`, `#[kanalyze::kept_alive]` or
/// `#[kanalyze::holds_last]`. Its item path is the struct's path
/// followed by the field name. The attribute on anything but a struct field
/// is returned as misplaced.
pub fn from_annotations<'a>(
    items: impl Iterator<Item = (&'a str, &'a annotations::ItemAnnotations)>,
) -> (Vec<Declaration>, Vec<Misplaced>) {
    use annotations::KanalyzeAnnotation as K;
    let mut out = Vec::new();
    let mut misplaced = Vec::new();
    for (path, item) in items {
        for (annotation, span) in &item.kanalyze {
            // The function forms: on anything but a function, misplaced.
            let not_on_function = |attribute: &str, help: &'static str| {
                // The extractor's `def_descr` of a function item.
                (!matches!(
                    item.kind.as_str(),
                    "function" | "associated function" | "method"
                ))
                .then(|| Misplaced {
                    krate: item.crate_index,
                    span: *span,
                    message: format!(
                        "`#[kanalyze::{attribute}]` is on a {}, not on a function",
                        item.kind
                    ),
                    help,
                })
            };
            if let K::SameObject {
                ty,
                field,
                same_as,
                because,
            } = annotation
            {
                if let Some(m) = not_on_function(
                    "same_object",
                    "an invariant about the values a function drops is declared on that function",
                ) {
                    misplaced.push(m);
                    continue;
                }
                // The annotation parser checked the path's syntax.
                let Some(same_as) = same_object::ArgPath::parse(same_as) else {
                    continue;
                };
                out.push(Declaration {
                    invariant: Invariant::SameObject {
                        function: path.to_string(),
                        ty: ty.clone(),
                        field: field.clone(),
                        same_as,
                    },
                    origin: Origin::Attribute {
                        krate: item.crate_index,
                        span: *span,
                    },
                    because: because.clone(),
                });
                continue;
            }
            if let K::NeverFails { callee, because } = annotation {
                if let Some(m) = not_on_function(
                    "never_fails",
                    "an invariant about the calls a function makes is declared on that function",
                ) {
                    misplaced.push(m);
                    continue;
                }
                out.push(Declaration {
                    invariant: Invariant::NeverFails {
                        function: path.to_string(),
                        callee: callee.clone(),
                    },
                    origin: Origin::Attribute {
                        krate: item.crate_index,
                        span: *span,
                    },
                    because: because.clone(),
                });
                continue;
            }
            let (name, because) = match annotation {
                K::EmptyAtTeardown { because } => ("empty_at_teardown", because),
                K::EmptyWhenStored { because } => ("empty_when_stored", because),
                K::KeptAlive { because } => ("kept_alive", because),
                K::HoldsLast { because } => ("holds_last", because),
                _ => continue,
            };
            let on_field = item.kind == "field";
            let Some((ty, field)) = path.rsplit_once("::").filter(|_| on_field) else {
                misplaced.push(Misplaced {
                    krate: item.crate_index,
                    span: *span,
                    message: format!(
                        "`#[kanalyze::{name}]` is on a {}, not on a struct field",
                        item.kind
                    ),
                    help: "an invariant about a field (its teardown, or the stores into it) is declared on that field",
                });
                continue;
            };
            let (ty, field) = (ty.to_string(), field.to_string());
            out.push(Declaration {
                invariant: match name {
                    "empty_at_teardown" => Invariant::EmptyAtTeardown {
                        ty,
                        field,
                        emptied_by: Vec::new(),
                    },
                    "empty_when_stored" => Invariant::EmptyWhenStored {
                        ty,
                        field,
                        stored_by: Vec::new(),
                    },
                    "kept_alive" => Invariant::KeptAlive {
                        ty,
                        field,
                        taken_by: Vec::new(),
                    },
                    _ => Invariant::HoldsLast {
                        ty,
                        field,
                        taken_by: Vec::new(),
                    },
                },
                origin: Origin::Attribute {
                    krate: item.crate_index,
                    span: *span,
                },
                because: because.clone(),
            });
        }
    }
    // The map the items come from has no order.
    out.sort_by(|a, b| format!("{:?}", a.invariant).cmp(&format!("{:?}", b.invariant)));
    misplaced.sort_by_key(|m| (m.krate, m.span.file, m.span.lo_line, m.span.lo_col));
    (out, misplaced)
}

#[cfg(test)]
mod tests;
