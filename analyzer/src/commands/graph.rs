//! `kanalyze graph PATH... [--callers FN | --callees FN | --dot FN [--depth N]]`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{self, BufWriter, Write};
use std::time::Instant;

use program::{EdgeKind, FnId, FnKind, Program};
use solver::Schedule;

use crate::cli::GraphArgs;
use crate::input;
use crate::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};

/// How many of the largest SCCs, and of their members, the summary lists.
const LARGEST_SCCS: usize = 5;
const SCC_MEMBERS_SHOWN: usize = 6;

pub fn run(args: &GraphArgs) -> u8 {
    let Some((program, summary)) = input::load_program(&args.paths) else {
        return EXIT_BAD_INPUT;
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let query = args
        .callers
        .as_deref()
        .or(args.callees.as_deref())
        .or(args.dot.as_deref());
    let target = match query {
        Some(q) => match super::resolve_function(&program, q) {
            Some(id) => Some(id),
            None => return EXIT_BAD_INPUT,
        },
        None => None,
    };
    let result = (|| -> io::Result<()> {
        match (target, args) {
            (
                Some(id),
                GraphArgs {
                    callers: Some(_), ..
                },
            ) => callers(&program, id, &mut out)?,
            (
                Some(id),
                GraphArgs {
                    callees: Some(_), ..
                },
            ) => callees(&program, id, &mut out)?,
            (Some(id), GraphArgs { dot: Some(_), .. }) => dot(&program, id, args.depth, &mut out)?,
            _ => {
                let t = Instant::now();
                let schedule = Schedule::new(&program);
                let schedule_time = t.elapsed();
                statistics(&program, &schedule, &mut out)?;
                if args.timings {
                    writeln!(out)?;
                    writeln!(out, "timings:")?;
                    writeln!(
                        out,
                        "  decode ({} threads): {:.3}s",
                        rayon::current_num_threads(),
                        summary.decode_time.as_secs_f64()
                    )?;
                    writeln!(out, "  link:      {:.3}s", summary.link_time.as_secs_f64())?;
                    writeln!(out, "  schedule:  {:.3}s", schedule_time.as_secs_f64())?;
                }
            }
        }
        out.flush()
    })();
    if super::output_failed(result) {
        return EXIT_FAILURE;
    }
    // Skipped inputs were reported as warnings; the graph of the rest is
    // still a result: exit 2 is for "nothing usable".
    EXIT_OK
}

fn kind_text(program: &Program, id: FnId) -> String {
    match &program.function(id).kind {
        FnKind::Body { krate, .. } => format!(
            "body in {}",
            program.crates[*krate as usize].dump.header.crate_name
        ),
        FnKind::Foreign => "foreign (C)".to_string(),
        FnKind::Upstream { krate } => format!("external, crate {krate} not extracted"),
        FnKind::Shim => "shim without body".to_string(),
        FnKind::Unknown(_) => "unknown: outside the program".to_string(),
    }
}

fn callers(program: &Program, id: FnId, out: &mut dyn Write) -> io::Result<()> {
    let f = program.function(id);
    let list = program.callers(id);
    writeln!(
        out,
        "{} ({}) is called from {} site(s):",
        f.name,
        kind_text(program, id),
        list.len()
    )?;
    for (caller, edge) in list {
        writeln!(
            out,
            "  {:<8} {}  at {}",
            edge.kind.name(),
            program.function(caller).name,
            program.span_text(caller, edge.span)
        )?;
    }
    let roots: Vec<String> = program
        .roots
        .iter()
        .filter(|(r, _)| *r == id)
        .map(|(_, why)| format!("{why:?}"))
        .collect();
    if !roots.is_empty() {
        writeln!(out, "  and from outside the program: {}", roots.join(", "))?;
    }
    Ok(())
}

fn callees(program: &Program, id: FnId, out: &mut dyn Write) -> io::Result<()> {
    let f = program.function(id);
    let list = program.callees(id);
    writeln!(
        out,
        "{} ({}) has {} outgoing edge(s):",
        f.name,
        kind_text(program, id),
        list.len()
    )?;
    for (callee, edge) in list {
        writeln!(
            out,
            "  bb{:<4} {:<8} {}  [{}]  at {}",
            edge.block,
            edge.kind.name(),
            program.function(callee).name,
            kind_text(program, callee),
            program.span_text(id, edge.span)
        )?;
    }
    Ok(())
}

fn dot(program: &Program, id: FnId, depth: u32, out: &mut dyn Write) -> io::Result<()> {
    // Breadth-first both ways, `depth` steps.
    let mut seen: BTreeSet<FnId> = BTreeSet::from([id]);
    let mut queue = VecDeque::from([(id, 0u32)]);
    while let Some((f, d)) = queue.pop_front() {
        if d == depth {
            continue;
        }
        let neighbours = program
            .callees(f)
            .into_iter()
            .chain(program.callers(f))
            .map(|(n, _)| n);
        for n in neighbours {
            if seen.insert(n) {
                queue.push_back((n, d + 1));
            }
        }
    }
    writeln!(out, "digraph calls {{")?;
    writeln!(out, "  node [shape=box, fontname=monospace];")?;
    for &f in &seen {
        let style = match program.function(f).kind {
            _ if f == id => ", style=bold",
            FnKind::Body { .. } => "",
            FnKind::Unknown(_) => ", style=dashed",
            _ => ", style=filled, fillcolor=lightgrey",
        };
        writeln!(
            out,
            "  n{} [label=\"{}\"{style}];",
            f.0,
            escape(&program.function(f).name)
        )?;
    }
    let mut edges: BTreeSet<(FnId, FnId, &'static str)> = BTreeSet::new();
    for &f in &seen {
        for (t, e) in program.callees(f) {
            if seen.contains(&t) {
                edges.insert((f, t, e.kind.name()));
            }
        }
    }
    for (a, b, kind) in edges {
        let style = match kind {
            "drop" => " [style=dotted, label=drop]",
            "virtual" => " [style=dashed, label=dyn]",
            "indirect" => " [style=dashed, label=\"fn ptr\"]",
            _ => "",
        };
        writeln!(out, "  n{} -> n{}{style};", a.0, b.0)?;
    }
    writeln!(out, "}}")
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn statistics(program: &Program, schedule: &Schedule, out: &mut dyn Write) -> io::Result<()> {
    let s = &program.stats;
    writeln!(out, "crates:      {}", s.crates)?;
    writeln!(
        out,
        "instances:   {} distinct with a body ({} in all dumps before deduplication)",
        s.bodies, s.instances_total
    )?;
    let edges: usize = s.edges_by_kind.iter().sum();
    let by_kind: Vec<String> = EdgeKind::ALL
        .iter()
        .map(|k| format!("{} {}", s.edges_by_kind[k.index()], k.name()))
        .collect();
    writeln!(out, "edges:       {edges} ({})", by_kind.join(", "))?;
    let resolved = s.direct_to_body + s.direct_to_external;
    let share = if s.direct_sites == 0 {
        100.0
    } else {
        100.0 * resolved as f64 / s.direct_sites as f64
    };
    writeln!(
        out,
        "direct call sites: {} ({} to a body, {} to a named external, {} unresolved: {share:.3}% resolved)",
        s.direct_sites,
        s.direct_to_body,
        s.direct_to_external,
        s.direct_unresolved.len()
    )?;
    for (caller, why) in s.direct_unresolved.iter().take(20) {
        writeln!(out, "  unresolved in {caller}: {why}")?;
    }
    writeln!(
        out,
        "indirect call sites: {} virtual, {} through fn pointers; {} with no target in the program, {} with several",
        s.virtual_sites, s.indirect_sites, s.unresolved_indirect, s.ambiguous_indirect
    )?;
    writeln!(out, "intrinsic call sites: {}", s.intrinsic_sites)?;

    // Externals by crate and kind.
    let mut externals: BTreeMap<String, usize> = BTreeMap::new();
    let mut unknown = 0usize;
    for f in &program.functions {
        match &f.kind {
            FnKind::Foreign => *externals.entry("foreign (C)".to_string()).or_default() += 1,
            FnKind::Upstream { krate } => {
                *externals
                    .entry(format!("crate {krate} (not extracted)"))
                    .or_default() += 1
            }
            FnKind::Shim => {
                *externals
                    .entry("shims without body".to_string())
                    .or_default() += 1
            }
            FnKind::Unknown(_) => unknown += 1,
            FnKind::Body { .. } => {}
        }
    }
    writeln!(out, "externals:   {}", externals.values().sum::<usize>())?;
    for (what, n) in &externals {
        writeln!(out, "  {n:>6}  {what}")?;
    }
    writeln!(out, "unknown indirect targets: {unknown}")?;
    writeln!(out, "roots callable from outside: {}", program.roots.len())?;

    let recursive = schedule.recursive(program);
    writeln!(
        out,
        "SCCs:        {} ({} recursive), {} levels in the bottom-up schedule",
        schedule.sccs.len(),
        recursive.len(),
        schedule.levels.len()
    )?;
    let mut largest: Vec<&Vec<FnId>> = recursive
        .iter()
        .map(|&s| &schedule.sccs[s as usize])
        .collect();
    largest.sort_by_key(|m| std::cmp::Reverse(m.len()));
    for members in largest.into_iter().take(LARGEST_SCCS) {
        let names: Vec<&str> = members
            .iter()
            .take(SCC_MEMBERS_SHOWN)
            .map(|m| program.function(*m).name.as_str())
            .collect();
        let more = members.len().saturating_sub(SCC_MEMBERS_SHOWN);
        let tail = if more > 0 {
            format!(", … {more} more")
        } else {
            String::new()
        };
        writeln!(
            out,
            "  {:>5} functions: {}{tail}",
            members.len(),
            names.join(", ")
        )?;
    }
    Ok(())
}
