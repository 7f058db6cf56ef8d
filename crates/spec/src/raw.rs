//! The TOML layer: strict deserialisation (unknown keys are errors) and
//! validation with positions.

use std::collections::BTreeMap;
use std::ops::Range;

use annotations::ExpectRange;
use serde::Deserialize;
use toml::Spanned;

use crate::{
    ArgSite, Callback, FlagCondition, FnSpec, LockEffect, LockKind, LockOp, SpecError, TrySuccess,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(rename = "fn", default)]
    functions: BTreeMap<Spanned<String>, Spanned<RawFn>>,
    #[serde(rename = "field", default)]
    fields: BTreeMap<Spanned<String>, Spanned<RawContract>>,
    #[serde(rename = "rust", default)]
    rust: BTreeMap<Spanned<String>, Spanned<RawRust>>,
    #[serde(rename = "static", default)]
    statics: BTreeMap<Spanned<String>, Spanned<RawContract>>,
    stack: Option<RawStack>,
}

/// `[stack]`: what C functions use of the stack (`kanalyze stack`).
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ default = BYTES, fn = { name = BYTES } }`"
)]
struct RawStack {
    default: Option<Spanned<u64>>,
    #[serde(rename = "fn", default)]
    functions: BTreeMap<Spanned<String>, Spanned<u64>>,
}

/// `[rust]`: `"kernel::list::List::<T, ID>::remove" = { returns_object_of = 1 }`.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of facts: `{ lock = { op = \"acquire\", arg = N, kind = \"mutex\" } }`, `{ blocks = true }`, `{ section = { arg = N, kind = \"irq\" } }`, `{ returns_object_of = N, note = \"…\" }`, `{ points_into_object = N }`, `{ exclusive_to_handle = true }`, `{ returns_argument = N }`, `{ keeps_argument = N }`, `{ drops_rejected_by = N }`, `{ empty_after_none = true }`, `{ looks_up_key = N }`, `{ node_key = N }`, `{ displaces_key_of = N }` or `{ failure = true }`"
)]
struct RawRust {
    failure: Option<bool>,
    returns_object_of: Option<Spanned<u32>>,
    points_into_object: Option<Spanned<u32>>,
    exclusive_to_handle: Option<bool>,
    returns_argument: Option<Spanned<u32>>,
    keeps_argument: Option<Spanned<u32>>,
    drops_rejected_by: Option<Spanned<u32>>,
    empty_after_none: Option<bool>,
    looks_up_key: Option<Spanned<u32>>,
    node_key: Option<Spanned<u32>>,
    displaces_key_of: Option<Spanned<u32>>,
    lock: Option<Spanned<RawRustLock>>,
    blocks: Option<bool>,
    section: Option<Spanned<RawSection>>,
    note: Option<String>,
}

/// `section` of a `[rust]` entry: `{ arg = 0, kind = "irq" }`.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ arg = N, kind = \"irq\" }`: the closure argument and the context it runs in"
)]
struct RawSection {
    arg: Spanned<u32>,
    kind: Spanned<String>,
}

/// `lock` of a `[rust]` entry: `{ op = "acquire", arg = 0, kind = "mutex",
/// field = "lock" }`.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ op = \"acquire\", arg = N, kind = \"mutex\", field = \"…\", guard = \"…\", retakes = true }`"
)]
struct RawRustLock {
    op: RawOp,
    arg: Option<Spanned<u32>>,
    kind: Spanned<String>,
    success: Option<RawRustSuccess>,
    field: Option<Spanned<String>>,
    guard: Option<Spanned<String>>,
    /// With op `acquire`: the lock is held on entry, released while the
    /// call waits and held again on return (`Condvar::wait`).
    retakes: Option<bool>,
}

/// How a Rust `try_lock` says it succeeded.
#[derive(Deserialize)]
enum RawRustSuccess {
    #[serde(rename = "ok")]
    Ok,
    #[serde(rename = "some")]
    Some,
    #[serde(rename = "true")]
    True,
}

/// `[field]`: `"blk_mq_ops.queue_rq" = { context = "1..", role = "…" }`.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ context = \"1..\", role = \"…\" }`"
)]
struct RawContract {
    context: Spanned<String>,
    adjust: Option<Vec<i32>>,
    #[serde(default)]
    hardirq: bool,
    role: String,
}

/// What a spec file says.
pub(crate) struct Parsed {
    /// Each entry with where it names arguments.
    pub functions: Vec<(String, FnSpec, Vec<ArgSite>)>,
    pub fields: Vec<((String, String), crate::Contract)>,
    /// `[static]`: the contract of the code pointers in a static, by the
    /// static's link name.
    pub statics: Vec<(String, crate::Contract)>,
    /// Rust items by path, with where they name their argument.
    pub rust: Vec<(String, crate::RustSpec, Vec<ArgSite>)>,
    /// `[stack] default`.
    pub stack_default: Option<u64>,
    /// `[stack.fn]`: bytes by link name or glob.
    pub stack: Vec<(String, u64)>,
    /// Where each entry is: (table, key, line, column).
    pub entries: Vec<(&'static str, String, usize, usize)>,
}

/// A stack usage above this is a typo (a kernel stack is 16 KiB; a
/// userspace thread's main stack a few MiB).
const MAX_STACK: u64 = 1 << 30;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of function properties")]
struct RawFn {
    adjust: Option<Spanned<i32>>,
    expect: Option<Spanned<String>>,
    sleeps_if_flag: Option<Spanned<RawFlag>>,
    sleeps_if_zero: Option<Spanned<u32>>,
    lock: Option<Spanned<RawLock>>,
    #[serde(default)]
    last_reference_test: bool,
    #[serde(default)]
    reads_only: bool,
    #[serde(default)]
    failure: bool,
    returns_into: Option<Spanned<u32>>,
    #[serde(default)]
    callbacks: Vec<Spanned<RawCallback>>,
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ arg = N, context = \"1..\", role = \"…\" }`"
)]
struct RawCallback {
    arg: Spanned<u32>,
    context: Spanned<String>,
    adjust: Option<Vec<i32>>,
    #[serde(default)]
    hardirq: bool,
    role: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table `{ arg = N, mask = M }`")]
struct RawFlag {
    arg: Spanned<u32>,
    mask: u64,
    expect: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ op = \"acquire\", arg = N, kind = \"spin\" }`"
)]
struct RawLock {
    op: RawOp,
    arg: Option<Spanned<u32>>,
    kind: Spanned<String>,
    success: Option<RawSuccess>,
}

#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum RawOp {
    Acquire,
    Release,
    TryAcquire,
}

#[derive(Deserialize)]
enum RawSuccess {
    #[serde(rename = "nonzero")]
    NonZero,
    #[serde(rename = "zero")]
    Zero,
}

/// Preemption counts never get near this; a larger adjustment is a typo.
const MAX_ADJUST: i32 = 1024;

struct Ctx<'a> {
    text: &'a str,
    origin: &'a str,
}

impl Ctx<'_> {
    fn error(&self, span: Option<Range<usize>>, message: String) -> SpecError {
        let (line, col) = match span {
            Some(span) => line_col(self.text, span.start),
            None => (0, 0),
        };
        SpecError {
            origin: self.origin.to_string(),
            line,
            col,
            message,
        }
    }
}

impl Ctx<'_> {
    /// A TOML or serde error, with the function it is about when the text
    /// around its position says so (serde's messages never name it).
    fn toml_error(&self, e: &toml::de::Error) -> SpecError {
        let message = e.message().trim();
        let Some(span) = e.span() else {
            return self.error(None, message.to_string());
        };
        let function = function_at(self.text, span.start);
        let message = if message == "duplicate key" {
            let key = self.text.get(span.clone()).unwrap_or_default().trim();
            let key = key.trim_matches(|c| c == '"' || c == '\'');
            match function {
                Some(f) if f == key => format!("duplicate function `{f}`"),
                Some(f) => format!("function `{f}`: duplicate key `{key}`"),
                None => format!("duplicate key `{key}`"),
            }
        } else {
            match function {
                Some(f) => format!("function `{f}`: {message}"),
                None => message.to_string(),
            }
        };
        self.error(Some(span), message)
    }
}

/// The function whose entry contains byte `offset`, judged from the text:
/// the last `[fn.NAME…]` header before it, or inside `[fn]` the key that
/// starts the line (`NAME = { … }`, `NAME.adjust = 1`). Good enough for
/// messages; the parse itself never depends on it.
fn function_at(text: &str, offset: usize) -> Option<String> {
    enum Table {
        Other,
        Fn,
        Function(String),
    }
    let mut table = Table::Other;
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        let is_header = trimmed.starts_with('[');
        if is_header {
            let inner = trimmed.trim_start_matches('[');
            let inner = inner.split(']').next().unwrap_or_default();
            let segments = key_segments(inner);
            table = match segments.as_slice() {
                [first] if first == "fn" => Table::Fn,
                [first, name, ..] if first == "fn" => Table::Function(name.clone()),
                _ => Table::Other,
            };
        }
        let line_end = line_start + line.len();
        if offset < line_end {
            return match table {
                Table::Function(name) => Some(name),
                Table::Fn if !is_header => {
                    let key = line.split('=').next().unwrap_or_default();
                    key_segments(key)
                        .into_iter()
                        .next()
                        .filter(|k| !k.is_empty())
                }
                _ => None,
            };
        }
        line_start = line_end;
    }
    None
}

/// `a."b.c" . d` → `["a", "b.c", "d"]`.
fn key_segments(key: &str) -> Vec<String> {
    let mut segments = vec![String::new()];
    let mut quote: Option<char> = None;
    for c in key.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '.') => segments.push(String::new()),
            (None, c) if c.is_whitespace() => {}
            (_, c) => {
                if let Some(last) = segments.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    segments
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed, SpecError> {
    let ctx = Ctx { text, origin };
    let file: RawFile = toml::from_str(text).map_err(|e| ctx.toml_error(&e))?;
    let mut entries = Vec::new();
    let mut functions = Vec::with_capacity(file.functions.len());
    for (name, raw) in file.functions {
        let name_span = name.span();
        let (line, col) = line_col(text, name_span.start);
        entries.push(("fn", name.get_ref().clone(), line, col));
        let name = name.into_inner();
        validate_name(&name).map_err(|why| ctx.error(Some(name_span.clone()), why))?;
        let raw = raw.into_inner();
        let mut sites = Vec::new();
        let spec = convert(&ctx, &name, raw, &mut sites)?;
        functions.push((name, spec, sites));
    }
    let mut fields = Vec::with_capacity(file.fields.len());
    for (key, raw) in file.fields {
        let key_span = key.span();
        let (line, col) = line_col(text, key_span.start);
        entries.push(("field", key.get_ref().clone(), line, col));
        let key = key.into_inner();
        let (owner, field) = key
            .split_once('.')
            .filter(|(o, f)| is_ident(o) && is_ident(f))
            .ok_or_else(|| {
                ctx.error(
                    Some(key_span.clone()),
                    format!(
                        "invalid field `{key}`: a field is named `struct.field`, as in C (`blk_mq_ops.queue_rq`)"
                    ),
                )
            })?;
        let span = raw.span();
        let contract = contract(&ctx, &format!("field `{key}`"), raw.into_inner(), span)?;
        fields.push(((owner.to_string(), field.to_string()), contract));
    }
    let mut rust = Vec::with_capacity(file.rust.len());
    for (path, raw) in file.rust {
        let path_span = path.span();
        let (line, col) = line_col(text, path_span.start);
        entries.push(("rust", path.get_ref().clone(), line, col));
        let path = path.into_inner();
        validate_item_path(&path).map_err(|why| ctx.error(Some(path_span.clone()), why))?;
        let raw_span = raw.span();
        let raw = raw.into_inner();
        if raw.returns_object_of.is_none()
            && raw.failure != Some(true)
            && raw.points_into_object.is_none()
            && raw.exclusive_to_handle != Some(true)
            && raw.returns_argument.is_none()
            && raw.keeps_argument.is_none()
            && raw.drops_rejected_by.is_none()
            && raw.empty_after_none != Some(true)
            && raw.looks_up_key.is_none()
            && raw.node_key.is_none()
            && raw.displaces_key_of.is_none()
            && raw.lock.is_none()
            && raw.blocks != Some(true)
            && raw.section.is_none()
        {
            return Err(ctx.error(
                Some(raw_span),
                format!(
                    "Rust item `{path}`: says nothing: give `lock`, `blocks = true`, `returns_object_of`, `points_into_object`, `exclusive_to_handle = true`, `returns_argument`, `keeps_argument`, `drops_rejected_by`, `empty_after_none = true`, `looks_up_key`, `node_key`, `displaces_key_of`, `section` or `failure = true`"
                ),
            ));
        }
        if let Some(n) = &raw.keeps_argument
            && *n.get_ref() == 0
        {
            return Err(ctx.error(
                Some(n.span()),
                format!(
                    "Rust item `{path}`: `keeps_argument = 0`: argument 0 is where the value is kept; give the index of the argument kept"
                ),
            ));
        }
        if let Some(n) = &raw.drops_rejected_by
            && *n.get_ref() == 0
        {
            return Err(ctx.error(
                Some(n.span()),
                format!(
                    "Rust item `{path}`: `drops_rejected_by = 0`: argument 0 is the container; give the index of the predicate"
                ),
            ));
        }
        // The map is argument 0 for both keyed facts: the key (or the
        // node) is another argument.
        for (key, n) in [
            ("looks_up_key", &raw.looks_up_key),
            ("displaces_key_of", &raw.displaces_key_of),
        ] {
            if let Some(n) = n
                && *n.get_ref() == 0
            {
                return Err(ctx.error(
                    Some(n.span()),
                    format!(
                        "Rust item `{path}`: `{key} = 0`: argument 0 is the map; give the index of the {}",
                        if key == "looks_up_key" { "reference to the key" } else { "node" }
                    ),
                ));
            }
        }
        let mut sites = Vec::new();
        if let Some(n) = &raw.returns_object_of {
            sites.push(ctx.site("returns_object_of", n));
        }
        if let Some(n) = &raw.points_into_object {
            sites.push(ctx.site("points_into_object", n));
        }
        if let Some(n) = &raw.returns_argument {
            sites.push(ctx.site("returns_argument", n));
        }
        if let Some(n) = &raw.keeps_argument {
            sites.push(ctx.site("keeps_argument", n));
        }
        if let Some(n) = &raw.drops_rejected_by {
            sites.push(ctx.site("drops_rejected_by", n));
        }
        if let Some(n) = &raw.looks_up_key {
            sites.push(ctx.site("looks_up_key", n));
        }
        if let Some(n) = &raw.node_key {
            sites.push(ctx.site("node_key", n));
        }
        if let Some(n) = &raw.displaces_key_of {
            sites.push(ctx.site("displaces_key_of", n));
        }
        let lock = match raw.lock {
            Some(lock) => Some(rust_lock(&ctx, &path, lock, &mut sites)?),
            None => None,
        };
        let section = match raw.section {
            Some(section) => Some(rust_section(&ctx, &path, section, &mut sites)?),
            None => None,
        };
        rust.push((
            path,
            crate::RustSpec {
                returns_object_of: raw.returns_object_of.map(|n| *n.get_ref()),
                points_into_object: raw.points_into_object.map(|n| *n.get_ref()),
                exclusive_to_handle: raw.exclusive_to_handle == Some(true),
                returns_argument: raw.returns_argument.map(|n| *n.get_ref()),
                keeps_argument: raw.keeps_argument.map(|n| *n.get_ref()),
                drops_rejected_by: raw.drops_rejected_by.map(|n| *n.get_ref()),
                empty_after_none: raw.empty_after_none == Some(true),
                looks_up_key: raw.looks_up_key.map(|n| *n.get_ref()),
                node_key: raw.node_key.map(|n| *n.get_ref()),
                displaces_key_of: raw.displaces_key_of.map(|n| *n.get_ref()),
                failure: raw.failure == Some(true),
                lock,
                blocks: raw.blocks == Some(true),
                section,
                note: raw.note,
            },
            sites,
        ));
    }
    let mut statics = Vec::with_capacity(file.statics.len());
    for (key, raw) in file.statics {
        let key_span = key.span();
        let (line, col) = line_col(text, key_span.start);
        entries.push(("static", key.get_ref().clone(), line, col));
        let key = key.into_inner();
        validate_name(&key).map_err(|why| ctx.error(Some(key_span.clone()), why))?;
        let span = raw.span();
        let contract = contract(&ctx, &format!("static `{key}`"), raw.into_inner(), span)?;
        statics.push((key, contract));
    }
    let mut stack_default = None;
    let mut stack = Vec::new();
    if let Some(raw) = file.stack {
        let check = |what: &str, n: &Spanned<u64>| {
            if *n.get_ref() > MAX_STACK {
                Err(ctx.error(
                    Some(n.span()),
                    format!(
                        "{what}: {} bytes of stack is more than the {MAX_STACK} allowed",
                        n.get_ref()
                    ),
                ))
            } else {
                Ok(*n.get_ref())
            }
        };
        if let Some(n) = &raw.default {
            stack_default = Some(check("`[stack] default`", n)?);
        }
        for (name, n) in raw.functions {
            let name_span = name.span();
            let (line, col) = line_col(text, name_span.start);
            entries.push(("stack.fn", name.get_ref().clone(), line, col));
            let name = name.into_inner();
            validate_name(&name).map_err(|why| ctx.error(Some(name_span.clone()), why))?;
            let bytes = check(&format!("stack of function `{name}`"), &n)?;
            stack.push((name, bytes));
        }
    }
    Ok(Parsed {
        functions,
        fields,
        statics,
        rust,
        stack_default,
        stack,
        entries,
    })
}

/// A Rust item path as the dumps spell it (`kanalyze dump` prints it after
/// `item`): crate-qualified, generic parameters by name.
fn validate_item_path(path: &str) -> Result<(), String> {
    // A trait method of a type, `<Type as Trait>::method`, as `kanalyze
    // dump` prints the item of an impl's method.
    if let Some(rest) = path.strip_prefix('<') {
        let bad = || {
            format!(
                "invalid Rust item `{path}`: a trait method is named `<Type as Trait>::method`, \
                 both paths crate-qualified, as `kanalyze dump` prints it after `item`"
            )
        };
        let (inner, item) = rest.rsplit_once(">::").ok_or_else(bad)?;
        let (ty, tr) = inner.split_once(" as ").ok_or_else(bad)?;
        if !is_ident(item) {
            return Err(bad());
        }
        validate_item_path(ty)?;
        return validate_item_path(tr);
    }
    let crate_name = path.split("::").next().unwrap_or_default();
    if !path.contains("::") || !is_ident(crate_name) || path.ends_with("::") {
        return Err(format!(
            "invalid Rust item `{path}`: an item is named by its crate-qualified path, \
             as `kanalyze dump` prints it after `item` (`kernel::list::List::<T, ID>::remove`)"
        ));
    }
    if path.replace(", ", ",").contains(char::is_whitespace) {
        return Err(format!(
            "invalid Rust item `{path}`: a path has no spaces except after the commas of its \
             generic parameters"
        ));
    }
    Ok(())
}

/// A field name: an identifier, or the index of a tuple struct's field.
fn is_field(s: &str) -> bool {
    is_ident(s) || (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// A callback contract, checked; `what` names the entry in messages.
fn contract(
    ctx: &Ctx<'_>,
    what: &str,
    raw: RawContract,
    span: Range<usize>,
) -> Result<crate::Contract, SpecError> {
    let context = raw.context.get_ref().parse::<ExpectRange>().map_err(|e| {
        ctx.error(
            Some(raw.context.span()),
            format!(
                "{what}: bad callback `context` range `{}`: {e}",
                raw.context.get_ref()
            ),
        )
    })?;
    if context.is_empty() {
        return Err(ctx.error(
            Some(raw.context.span()),
            format!("{what}: a callback `context` must be non-empty"),
        ));
    }
    let adjust = raw.adjust.unwrap_or_else(|| vec![0]);
    if adjust.is_empty() || adjust.iter().any(|a| a.abs() > MAX_ADJUST) {
        return Err(ctx.error(
            Some(span),
            format!(
                "{what}: a callback's `adjust` lists the adjustments allowed, each between -{MAX_ADJUST} and {MAX_ADJUST}"
            ),
        ));
    }
    if raw.role.trim().is_empty() {
        return Err(ctx.error(
            Some(span),
            format!("{what}: a callback needs a `role` (what it is, for messages)"),
        ));
    }
    Ok(crate::Contract {
        context,
        adjust,
        hardirq: raw.hardirq,
        role: raw.role,
    })
}

fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("empty function name".into());
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "invalid function name `{name}`: a link name or a glob pattern with `*` has no whitespace"
        ));
    }
    if name.chars().all(|c| c == '*') {
        return Err(format!(
            "invalid function name `{name}`: a glob must have a literal part"
        ));
    }
    Ok(())
}

impl Ctx<'_> {
    /// Where `key` names argument `arg`, for [`crate::Spec::check_arity`].
    fn site(&self, key: &'static str, arg: &Spanned<u32>) -> ArgSite {
        let (line, col) = line_col(self.text, arg.span().start);
        ArgSite {
            key,
            arg: *arg.get_ref(),
            origin: self.origin.to_string(),
            line,
            col,
        }
    }
}

fn convert(
    ctx: &Ctx<'_>,
    name: &str,
    raw: RawFn,
    sites: &mut Vec<ArgSite>,
) -> Result<FnSpec, SpecError> {
    if let Some(n) = &raw.sleeps_if_zero {
        sites.push(ctx.site("sleeps_if_zero", n));
    }
    if let Some(n) = &raw.returns_into {
        sites.push(ctx.site("returns_into", n));
    }
    let mut spec = FnSpec {
        note: raw.note,
        sleeps_if_zero: raw.sleeps_if_zero.map(|n| *n.get_ref()),
        last_reference_test: raw.last_reference_test,
        reads_only: raw.reads_only,
        failure: raw.failure,
        returns_into: raw.returns_into.map(|n| *n.get_ref()),
        ..FnSpec::default()
    };
    if let Some(adjust) = raw.adjust {
        if adjust.get_ref().abs() > MAX_ADJUST {
            return Err(ctx.error(
                Some(adjust.span()),
                format!(
                    "function `{name}`: `adjust` must be between -{MAX_ADJUST} and {MAX_ADJUST}"
                ),
            ));
        }
        spec.adjust = *adjust.get_ref();
    }
    if let Some(expect) = raw.expect {
        spec.expect = expect.get_ref().parse::<ExpectRange>().map_err(|e| {
            ctx.error(
                Some(expect.span()),
                format!(
                    "function `{name}`: bad `expect` range `{}`: {e}",
                    expect.get_ref()
                ),
            )
        })?;
        // `unsatisfiable` parses (it is how empty ranges display) but no
        // function can expect nothing.
        if spec.expect.is_empty() {
            return Err(ctx.error(
                Some(expect.span()),
                format!(
                    "function `{name}`: bad `expect` range `{}`: the preemption count expectation range must be non-empty",
                    expect.get_ref()
                ),
            ));
        }
    }
    for cb in raw.callbacks {
        let span = cb.span();
        let cb = cb.into_inner();
        let raw = RawContract {
            context: cb.context,
            adjust: cb.adjust,
            hardirq: cb.hardirq,
            role: cb.role,
        };
        sites.push(ctx.site("callbacks.arg", &cb.arg));
        spec.callbacks.push(Callback {
            arg: *cb.arg.get_ref(),
            contract: contract(ctx, &format!("function `{name}`"), raw, span)?,
        });
    }
    if let Some(flag) = raw.sleeps_if_flag {
        let span = flag.span();
        let flag = flag.into_inner();
        if flag.mask == 0 {
            return Err(ctx.error(
                Some(span),
                format!("function `{name}`: `sleeps_if_flag.mask` must be non-zero"),
            ));
        }
        let expect_if_set = match &flag.expect {
            None => ExpectRange::exactly(0),
            Some(e) => {
                let range = e.get_ref().parse::<ExpectRange>().map_err(|err| {
                    ctx.error(
                        Some(e.span()),
                        format!(
                            "function `{name}`: bad `sleeps_if_flag.expect` range `{}`: {err}",
                            e.get_ref()
                        ),
                    )
                })?;
                if range.is_empty() {
                    return Err(ctx.error(
                        Some(e.span()),
                        format!("function `{name}`: `sleeps_if_flag.expect` must be non-empty"),
                    ));
                }
                range
            }
        };
        sites.push(ctx.site("sleeps_if_flag.arg", &flag.arg));
        spec.sleeps_if_flag = Some(FlagCondition {
            arg: *flag.arg.get_ref(),
            mask: flag.mask,
            expect_if_set,
        });
    }
    if let Some(lock) = raw.lock {
        let span = lock.span();
        let lock = lock.into_inner();
        let subject = format!("function `{name}`");
        let kind = lock_kind(ctx, &subject, &lock.kind, lock.arg.is_some(), span.clone())?;
        let fail = |message: String| {
            Err(ctx.error(Some(span.clone()), format!("function `{name}`: {message}")))
        };
        let op = match (lock.op, lock.success) {
            (RawOp::Acquire, None) => LockOp::Acquire,
            (RawOp::Release, None) => LockOp::Release,
            (RawOp::TryAcquire, success) => LockOp::TryAcquire {
                success: match success {
                    None | Some(RawSuccess::NonZero) => TrySuccess::ReturnsNonZero,
                    Some(RawSuccess::Zero) => TrySuccess::ReturnsZero,
                },
            },
            (_, Some(_)) => {
                return fail("`success` is only meaningful with op `try_acquire`".into());
            }
        };
        if let Some(arg) = &lock.arg {
            sites.push(ctx.site("lock.arg", arg));
        }
        spec.lock = Some(LockEffect {
            op,
            arg: lock.arg.map(|a| *a.get_ref()),
            kind,
        });
    }
    Ok(spec)
}

/// The kind of a `lock` table, checked against whether it names an
/// argument: a global context has none, a lock with an object needs one.
fn lock_kind(
    ctx: &Ctx<'_>,
    subject: &str,
    kind: &Spanned<String>,
    has_arg: bool,
    span: Range<usize>,
) -> Result<LockKind, SpecError> {
    let found = LockKind::from_name(kind.get_ref()).ok_or_else(|| {
        ctx.error(
            Some(kind.span()),
            format!(
                "{subject}: unknown lock kind `{}`, expected one of {}",
                kind.get_ref(),
                LockKind::ALL.map(|k| format!("`{k}`")).join(", ")
            ),
        )
    })?;
    match (found.is_global(), has_arg) {
        (true, true) => Err(ctx.error(
            Some(span),
            format!("{subject}: lock kind `{found}` is a global context and takes no `arg`"),
        )),
        (false, false) => Err(ctx.error(
            Some(span),
            format!(
                "{subject}: lock kind `{found}` needs `arg`, the 0-based index of the lock argument"
            ),
        )),
        _ => Ok(found),
    }
}

/// The `lock` of a `[rust]` entry, checked.
fn rust_lock(
    ctx: &Ctx<'_>,
    path: &str,
    lock: Spanned<RawRustLock>,
    sites: &mut Vec<ArgSite>,
) -> Result<crate::RustLock, SpecError> {
    let span = lock.span();
    let lock = lock.into_inner();
    let subject = format!("Rust item `{path}`");
    let kind = lock_kind(ctx, &subject, &lock.kind, lock.arg.is_some(), span.clone())?;
    let fail = |message: &str| Err(ctx.error(Some(span.clone()), format!("{subject}: {message}")));
    let op = match (lock.op, lock.success) {
        (RawOp::Acquire, None) => LockOp::Acquire,
        (RawOp::Release, None) => LockOp::Release,
        (RawOp::TryAcquire, Some(success)) => LockOp::TryAcquire {
            success: match success {
                RawRustSuccess::Ok => TrySuccess::ReturnsOk,
                RawRustSuccess::Some => TrySuccess::ReturnsSome,
                RawRustSuccess::True => TrySuccess::ReturnsNonZero,
            },
        },
        (RawOp::TryAcquire, None) => {
            return fail(
                "op `try_acquire` needs `success`: \"ok\" (a `Result`), \"some\" (an `Option`) or \"true\" (a `bool`)",
            );
        }
        (_, Some(_)) => return fail("`success` is only meaningful with op `try_acquire`"),
    };
    let fields = match &lock.field {
        None => Vec::new(),
        Some(field) => {
            if lock.arg.is_none() {
                return fail("`field` is a path below the lock argument and needs `arg`");
            }
            let fields: Vec<String> = field.get_ref().split('.').map(str::to_string).collect();
            if !fields.iter().all(|f| is_field(f)) {
                return Err(ctx.error(
                    Some(field.span()),
                    format!(
                        "{subject}: invalid `field = \"{}\"`: field names joined by `.` (`lock`, `inner.lock`)",
                        field.get_ref()
                    ),
                ));
            }
            fields
        }
    };
    let guard = match lock.guard {
        None => None,
        Some(_) if matches!(op, LockOp::Release) => {
            return fail(
                "`guard` names the field of a returned guard: only for op `acquire` or `try_acquire`",
            );
        }
        Some(guard) if !guard.get_ref().split('.').all(is_field) => {
            return Err(ctx.error(
                Some(guard.span()),
                format!(
                    "{subject}: invalid `guard = \"{}\"`: the guard's field holding the pointer to the lock, field names joined by `.` (`lock`, `inner.lock`)",
                    guard.get_ref()
                ),
            ));
        }
        Some(guard) => Some(guard.into_inner()),
    };
    let across = match lock.retakes {
        Some(true) if !matches!(op, LockOp::Acquire) => {
            return fail(
                "`retakes` says the lock held on entry is taken again before the call returns: only with op `acquire`",
            );
        }
        Some(true) => Some(crate::Across::Retakes),
        _ => None,
    };
    if let Some(arg) = &lock.arg {
        sites.push(ctx.site("lock.arg", arg));
    }
    Ok(crate::RustLock {
        across,
        guard,
        effect: LockEffect {
            op,
            arg: lock.arg.map(|a| *a.get_ref()),
            kind,
        },
        fields,
    })
}

/// The `section` of a `[rust]` entry, checked: the context is a global one
/// (interrupts off, preemption off), which the item enters around its
/// closure argument and leaves when it returns.
fn rust_section(
    ctx: &Ctx<'_>,
    path: &str,
    section: Spanned<RawSection>,
    sites: &mut Vec<ArgSite>,
) -> Result<crate::Section, SpecError> {
    let section = section.into_inner();
    let subject = format!("Rust item `{path}`");
    let kind = LockKind::from_name(section.kind.get_ref())
        .filter(|k| k.is_global())
        .ok_or_else(|| {
            ctx.error(
                Some(section.kind.span()),
                format!(
                    "{subject}: `section.kind = \"{}\"` is not a context a section can enter; expected one of {}",
                    section.kind.get_ref(),
                    LockKind::ALL
                        .into_iter()
                        .filter(|k| k.is_global())
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
    sites.push(ctx.site("section.arg", &section.arg));
    Ok(crate::Section {
        arg: *section.arg.get_ref(),
        kind,
    })
}
