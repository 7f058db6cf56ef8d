//! `kanalyze.toml`: a team's settings checked in next to the tree, found
//! like `clippy.toml` (the current directory, then its ancestors) or named
//! with `--config FILE`. Flags override it.
//!
//! ```toml
//! format = "json"                       # text, json or sarif
//! profile = "userspace"                 # kernel, userspace or embedded (default: detected)
//! include-upstream = false              # findings entirely in std/registry crates
//! spec = ["specs/board.toml"]           # relative to this file
//! invariants = ["kernel-invariants.toml"]
//! source-root = ["linux"]
//! baseline = "triaged.json"
//! cache-dir = "/var/cache/kanalyze"   # the summary cache (or `cache = false`)
//!
//! [levels]                              # allow, warn or deny per finding kind
//! last-reference-in-atomic = "deny"
//! extern-function = "allow"
//!
//! [stack]                               # `kanalyze stack` (docs/stack.md)
//! limit = 8192                          # bytes; half of a 16 KiB stack
//! frame-limit = 2048                    # CONFIG_FRAME_WARN
//! c-default = 1024                      # a C function no spec entry names
//! ```
//!
//! Unknown keys, wrong types, unknown kinds and levels, and files that do not
//! exist are errors naming the file, line and column, rendered with miette.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::diag::{FileError, clip};
use serde::Deserialize;
use toml::Spanned;

use crate::cli::{AnalysisArgs, Format};
use crate::level::Level;

/// The file name searched for.
pub const FILE_NAME: &str = "kanalyze.toml";

/// How a configuration file found in the current directory is said.
pub const CURRENT_DIRECTORY: &str = "found in the current directory";

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawConfig {
    format: Option<Spanned<String>>,
    profile: Option<Spanned<String>>,
    include_upstream: Option<Spanned<bool>>,
    #[serde(default)]
    spec: Vec<Spanned<String>>,
    #[serde(default)]
    invariants: Vec<Spanned<String>>,
    #[serde(default)]
    source_root: Vec<Spanned<String>>,
    baseline: Option<Spanned<String>>,
    triage: Option<Spanned<String>>,
    #[serde(default)]
    allow_partial: bool,
    cache: Option<Spanned<bool>>,
    cache_dir: Option<Spanned<String>>,
    #[serde(default)]
    levels: std::collections::BTreeMap<Spanned<String>, Spanned<String>>,
    stack: Option<RawStack>,
}

/// `[stack]`: the limits of `kanalyze stack`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawStack {
    limit: Option<Spanned<u64>>,
    frame_limit: Option<Spanned<u64>>,
    c_default: Option<Spanned<u64>>,
}

/// `[stack]` of the configuration file, each with where it was given.
#[derive(Clone, Debug, Default)]
pub struct StackConfig {
    pub limit: Option<(u64, Origin)>,
    pub frame_limit: Option<(u64, Origin)>,
    pub c_default: Option<(u64, Origin)>,
}

/// A setting's value and where it was given, for `--print-config`.
#[derive(Clone, Debug)]
pub struct Origin(pub String);

/// A configuration file, read and checked.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub path: Option<PathBuf>,
    /// How the file was found: `--config`, the current directory, or an
    /// ancestor of it (named).
    pub found: Option<String>,
    pub format: Option<(Format, Origin)>,
    pub profile: Option<(crate::cli::Profile, Origin)>,
    /// `include-upstream = true`, and where.
    pub include_upstream: Option<Origin>,
    pub specs: Vec<(PathBuf, Origin)>,
    pub invariants: Vec<(PathBuf, Origin)>,
    pub source_roots: Vec<(PathBuf, Origin)>,
    pub baseline: Option<(PathBuf, Origin)>,
    pub triage: Option<(PathBuf, Origin)>,
    pub allow_partial: bool,
    /// `cache = …` (the summary cache on or off), and where.
    pub cache: Option<(bool, Origin)>,
    /// `cache-dir = "…"`, relative to the file, and where.
    pub cache_dir: Option<(PathBuf, Origin)>,
    pub levels: Vec<(String, Level, Origin)>,
    /// `[stack]`.
    pub stack: StackConfig,
}

/// The configuration file to use: `explicit`, or the first `kanalyze.toml`
/// in `start` and its ancestors; `None` if there is none.
pub fn find(explicit: Option<&Path>, start: &Path) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    start
        .ancestors()
        .map(|d| d.join(FILE_NAME))
        .find(|p| p.is_file())
}

/// Reads and checks the configuration file `path`.
pub fn load(path: &Path) -> Result<Config, Box<FileError>> {
    let text = crate::user_file::read_text(path).map_err(|e| {
        FileError::at(
            "kanalyze::config",
            path,
            "",
            None,
            format!("cannot read the configuration file `{}`: {e}", path.display()),
            "",
            Some("`--config FILE` names the file; without it `kanalyze.toml` is looked for in the current directory and its ancestors".to_string()),
        )
    })?;
    parse(path, &text)
}

const FORMAT_HELP: &str = "the keys are `format`, `profile`, `include-upstream`, `spec`, `invariants`, `source-root`, `baseline`, `triage`, `allow-partial` and the tables `[levels]` and `[stack]` (docs/output.md, \"Configuration file\")";

/// Parses the text of the configuration file `path`.
pub fn parse(path: &Path, text: &str) -> Result<Config, Box<FileError>> {
    let err = |span: Option<Range<usize>>, message: String, label: &str, help: Option<String>| {
        FileError::at("kanalyze::config", path, text, span, message, label, help)
    };
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        err(
            e.span(),
            format!(
                "invalid configuration file: {}",
                crate::diag::clip_quoted(e.message().trim_end())
            ),
            "here",
            Some(FORMAT_HELP.to_string()),
        )
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let origin = |span: &Range<usize>| {
        let before = &text[..span.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Origin(format!("{}:{line}:{col}", path.display()))
    };
    let mut config = Config {
        path: Some(path.to_path_buf()),
        allow_partial: raw.allow_partial,
        ..Config::default()
    };
    if let Some(i) = &raw.include_upstream
        && *i.get_ref()
    {
        config.include_upstream = Some(origin(&i.span()));
    }
    if let Some(p) = &raw.profile {
        let profile = match p.get_ref().as_str() {
            "kernel" => crate::cli::Profile::Kernel,
            "userspace" => crate::cli::Profile::Userspace,
            "embedded" => crate::cli::Profile::Embedded,
            other => {
                return Err(err(
                    Some(p.span()),
                    format!("unknown profile `{}`", clip(other)),
                    "not a profile",
                    Some("the profiles are `kernel` (the Linux kernel: the built-in kernel spec), `userspace` (a hosted program: no kernel assumptions) and `embedded` (a bare-metal firmware: critical sections, interrupt handlers); without the key the profile is detected from the program".to_string()),
                ));
            }
        };
        config.profile = Some((profile, origin(&p.span())));
    }
    if let Some(f) = &raw.format {
        let format = match f.get_ref().as_str() {
            "text" => Format::Text,
            "json" => Format::Json,
            "sarif" => Format::Sarif,
            other => {
                return Err(err(
                    Some(f.span()),
                    format!("unknown output format `{}`", clip(other)),
                    "not a format",
                    Some("the formats are `text`, `json` and `sarif`".to_string()),
                ));
            }
        };
        config.format = Some((format, origin(&f.span())));
    }
    // Files named by the configuration are relative to it, and must exist:
    // a mistyped path must not silently mean "no spec".
    let file = |v: &Spanned<String>,
                what: &str,
                dir_ok: bool|
     -> Result<(PathBuf, Origin), Box<FileError>> {
        let p = dir.join(v.get_ref());
        let ok = if dir_ok { p.is_dir() } else { p.is_file() };
        if !ok {
            let problem = match (p.exists(), dir_ok) {
                (false, _) => "does not exist",
                (true, true) => "is not a directory",
                (true, false) => "is not a file",
            };
            return Err(err(
                Some(v.span()),
                format!(
                    "{what} `{}` {problem} (relative to `{}`)",
                    clip(v.get_ref()),
                    dir.display()
                ),
                if dir_ok {
                    "not a directory"
                } else {
                    "not a file"
                },
                Some(
                    "paths in the configuration file are relative to the file's directory"
                        .to_string(),
                ),
            ));
        }
        Ok((p, origin(&v.span())))
    };
    for s in &raw.spec {
        config.specs.push(file(s, "spec file", false)?);
    }
    for s in &raw.invariants {
        config.invariants.push(file(s, "invariants file", false)?);
    }
    for s in &raw.source_root {
        config.source_roots.push(file(s, "source root", true)?);
    }
    if let Some(b) = &raw.baseline {
        config.baseline = Some(file(b, "baseline", false)?);
    }
    if let Some(t) = &raw.triage {
        config.triage = Some(file(t, "triage file", false)?);
    }
    if let Some(c) = &raw.cache {
        config.cache = Some((*c.get_ref(), origin(&c.span())));
    }
    if let Some(st) = &raw.stack {
        // A limit of 0 would flag every root; one of a gigabyte is a typo.
        let bytes = |v: &Spanned<u64>, key: &str| -> Result<(u64, Origin), Box<FileError>> {
            if *v.get_ref() == 0 || *v.get_ref() > 1 << 30 {
                return Err(err(
                    Some(v.span()),
                    format!("`[stack] {key}` must be a number of bytes from 1 to 1073741824"),
                    "not a byte count",
                    None,
                ));
            }
            Ok((*v.get_ref(), origin(&v.span())))
        };
        if let Some(v) = &st.limit {
            config.stack.limit = Some(bytes(v, "limit")?);
        }
        if let Some(v) = &st.frame_limit {
            config.stack.frame_limit = Some(bytes(v, "frame-limit")?);
        }
        // 0 is a valid default for C functions: "count them as nothing".
        if let Some(v) = &st.c_default {
            config.stack.c_default = Some((*v.get_ref(), origin(&v.span())));
        }
    }
    // Created when first written: it need not exist yet.
    if let Some(d) = &raw.cache_dir {
        config.cache_dir = Some((dir.join(d.get_ref()), origin(&d.span())));
    }
    for (kind, level) in &raw.levels {
        let Some(known) = checks::kind(kind.get_ref()) else {
            let near = checks::KINDS
                .iter()
                .map(|k| {
                    (
                        crate::edit_distance::edit_distance(k.name, kind.get_ref()),
                        k.name,
                    )
                })
                .filter(|(d, _)| *d <= 3)
                .min()
                .map(|(_, n)| format!("did you mean `{n}`? "))
                .unwrap_or_default();
            return Err(err(
                Some(kind.span()),
                format!("unknown finding kind `{}`", clip(kind.get_ref())),
                "not a finding kind",
                Some(format!(
                    "{near}the kinds are: {} (`kanalyze explain` lists them)",
                    checks::KINDS
                        .iter()
                        .map(|k| k.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            ));
        };
        let lvl = match level.get_ref().as_str() {
            "allow" => Level::Allow,
            "warn" => Level::Warn,
            "deny" => Level::Deny,
            other => {
                return Err(err(
                    Some(level.span()),
                    format!("unknown level `{}` for `{}`", clip(other), known.name),
                    "not a level",
                    Some("the levels are `allow`, `warn` and `deny`".to_string()),
                ));
            }
        };
        config
            .levels
            .push((known.name.to_string(), lvl, origin(&level.span())));
    }
    Ok(config)
}

/// The configuration for a command: found and read (an error is printed,
/// and `Err` carries the exit status), and merged under `args`.
pub fn resolve(args: &mut AnalysisArgs) -> Result<Config, u8> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let config = match find(args.config.as_deref(), &cwd) {
        Some(path) => match load(&path) {
            Ok(mut c) => {
                c.found = Some(if args.config.is_some() {
                    "--config".to_string()
                } else if path.parent() == Some(cwd.as_path()) {
                    CURRENT_DIRECTORY.to_string()
                } else {
                    format!(
                        "found in `{}`, an ancestor of the current directory",
                        path.parent().unwrap_or(Path::new("/")).display()
                    )
                });
                c
            }
            Err(e) => {
                crate::diag::emit_miette(e.as_ref());
                return Err(crate::EXIT_BAD_INPUT);
            }
        },
        None => Config::default(),
    };
    merge_analysis(&config, args);
    Ok(config)
}

/// The analysis settings with the configuration's underneath the flags':
/// spec and invariants files and source roots of the configuration come
/// first (a later spec file overrides an earlier one's entries), and a
/// flag's level for a kind replaces the configuration's.
pub fn merge_analysis(config: &Config, args: &mut AnalysisArgs) {
    match (args.profile, &config.profile) {
        (Some(_), _) => args.profile_origin = Some("--profile".to_string()),
        (None, Some((p, o))) => {
            args.profile = Some(*p);
            args.profile_origin = Some(o.0.clone());
        }
        (None, None) => {}
    }
    args.include_upstream |= config.include_upstream.is_some();
    let mut specs: Vec<PathBuf> = config.specs.iter().map(|(p, _)| p.clone()).collect();
    specs.append(&mut args.specs);
    args.specs = specs;
    let mut invariants: Vec<PathBuf> = config.invariants.iter().map(|(p, _)| p.clone()).collect();
    invariants.append(&mut args.invariants);
    args.invariants = invariants;
    let mut roots: Vec<PathBuf> = config.source_roots.iter().map(|(p, _)| p.clone()).collect();
    roots.append(&mut args.source_roots);
    args.source_roots = roots;
    // `--cache-dir` turns the cache on whatever the file says; `--no-cache`
    // turns it off whatever the file says.
    if args.cache_dir.is_none() && !args.no_cache {
        if let Some((false, _)) = &config.cache {
            args.no_cache = true;
        } else if let Some((d, _)) = &config.cache_dir {
            args.cache_dir = Some(d.clone());
        }
    }
    let flagged = |k: &str| {
        args.deny
            .iter()
            .chain(&args.warn)
            .chain(&args.allow)
            .any(|f| f == k)
    };
    let mut configured = Vec::new();
    for (kind, level, _) in &config.levels {
        if !flagged(kind) {
            configured.push((kind.clone(), *level));
        }
    }
    args.configured_levels = configured;
}

/// `--print-config`: every effective setting and where it came from.
pub fn print(
    config: &Config,
    args: &AnalysisArgs,
    format: Format,
    format_origin: &str,
    baseline: Option<(&Path, &str)>,
    triage: Option<(&Path, &str)>,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let from = |o: Option<&Origin>| o.map_or("flag".to_string(), |o| o.0.clone());
    match &config.path {
        Some(p) => writeln!(out, "# configuration file: {}", p.display())?,
        None => writeln!(
            out,
            "# no configuration file (`{FILE_NAME}` in the current directory or an ancestor, or --config FILE)"
        )?,
    }
    let format_name = match format {
        Format::Text => "text",
        Format::Json => "json",
        Format::Sarif => "sarif",
    };
    writeln!(out, "format = \"{format_name}\"  # {format_origin}")?;
    match (args.profile, &args.profile_origin) {
        (Some(p), o) => writeln!(
            out,
            "profile = \"{}\"  # {}",
            p.as_str(),
            o.as_deref().unwrap_or("--profile")
        )?,
        (None, _) => writeln!(
            out,
            "profile = detected  # default: `kernel` for a program with a `kernel` crate built for a kernel target, `embedded` for one built for a bare-metal target, else `userspace`"
        )?,
    }
    let include_origin = match &config.include_upstream {
        Some(o) => o.0.as_str(),
        None if args.include_upstream => "--include-upstream",
        None => "default",
    };
    writeln!(
        out,
        "include-upstream = {}  # {include_origin}",
        args.include_upstream
    )?;
    let list = |name: &str,
                values: &[PathBuf],
                configured: &[(PathBuf, Origin)],
                out: &mut dyn std::io::Write|
     -> std::io::Result<()> {
        if values.is_empty() {
            return writeln!(out, "{name} = []  # default");
        }
        for v in values {
            let o = configured.iter().find(|(p, _)| p == v).map(|(_, o)| o);
            writeln!(out, "{name} += \"{}\"  # {}", v.display(), from(o))?;
        }
        Ok(())
    };
    list("spec", &args.specs, &config.specs, out)?;
    list("invariants", &args.invariants, &config.invariants, out)?;
    list("source-root", &args.source_roots, &config.source_roots, out)?;
    match baseline {
        Some((p, o)) => writeln!(out, "baseline = \"{}\"  # {o}", p.display())?,
        None => writeln!(out, "baseline = none  # default")?,
    }
    match triage {
        Some((p, o)) => writeln!(out, "triage = \"{}\"  # {o}", p.display())?,
        None => writeln!(out, "triage = none  # default")?,
    }
    let cache_origin = match &config.cache {
        Some((false, o)) if args.no_cache => o.0.clone(),
        _ if args.no_cache => "--no-cache".to_string(),
        // Off in the file, on by `--cache-dir`.
        Some((false, _)) => "--cache-dir".to_string(),
        Some((true, o)) => o.0.clone(),
        None => "default".to_string(),
    };
    writeln!(out, "cache = {}  # {cache_origin}", !args.no_cache)?;
    match (&args.cache_dir, &config.cache_dir) {
        (Some(d), Some((c, o))) if d == c => {
            writeln!(out, "cache-dir = \"{}\"  # {}", d.display(), o.0)?
        }
        (Some(d), _) => writeln!(out, "cache-dir = \"{}\"  # --cache-dir", d.display())?,
        (None, _) => match summary_cache::default_dir() {
            Some(d) => writeln!(
                out,
                "cache-dir = \"{}\"  # default ($XDG_CACHE_HOME/kanalyze, else ~/.cache/kanalyze)",
                d.display()
            )?,
            None => writeln!(
                out,
                "cache-dir = none  # default: neither $XDG_CACHE_HOME nor $HOME is set"
            )?,
        },
    }
    writeln!(out, "[levels]")?;
    for kind in checks::KINDS {
        let flag = [
            ("deny", &args.deny),
            ("warn", &args.warn),
            ("allow", &args.allow),
        ]
        .into_iter()
        .find(|(_, v)| v.iter().any(|k| k == kind.name))
        .map(|(l, _)| l);
        let line = match flag {
            Some(l) => format!("{} = \"{l}\"  # --{l}", kind.name),
            None => match config.levels.iter().find(|(k, _, _)| k == kind.name) {
                Some((_, l, o)) => format!("{} = \"{}\"  # {}", kind.name, l.as_str(), o.0),
                None => format!(
                    "{} = \"{}\"  # default",
                    kind.name,
                    match kind.severity {
                        findings::Severity::Error => "deny",
                        findings::Severity::Warning => "warn",
                        // Notes (`report`) are not lint levels.
                        findings::Severity::Note => "note",
                    }
                ),
            },
        };
        writeln!(out, "{line}")?;
    }
    Ok(())
}
