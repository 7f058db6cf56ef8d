#!/usr/bin/env python3
"""Harvests the kernel's own lock annotations into a kanalyze spec.

Linux 7.x declares lock effects on C functions for the compiler's context
analysis: `__acquires(x)`, `__releases(x)`, `__must_hold(x)`,
`__cond_acquires(ret, x)` and their `_shared` forms. This script reads every
declaration carrying one in the headers of a kernel source tree and writes
them as spec entries (`crates/spec/kernel-harvested.toml`), which the
built-in spec loads *under* the hand-written `kernel.toml` (a hand-written
entry always wins).

What it can tell from a declaration: which parameter the lock is (or is
inside: `&lockref->lock` is the `lockref` argument), the lock's kind from
that parameter's C type, and for conditional acquisition the return value
that means success. What it cannot tell, and leaves out: effects on locks
that are not parameters (globals, `RCU` beyond the global context), and
macros (`spin_lock` itself is a macro; its out-of-line `_raw_*` functions
are declared and harvested).

Usage: scripts/harvest-kernel-locks.py KERNEL_SRC [OUT]
"""

import os
import re
import sys

ANNOT = re.compile(
    r"__(acquires|releases|must_hold|cond_acquires)(_shared)?\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)"
)
DECL_END = re.compile(r"[;{]")

# C parameter types to lock kinds (exclusive, shared).
KINDS = [
    (r"\braw_spinlock_t\b", ("raw_spin", "raw_spin")),
    (r"\bspinlock_t\b", ("spin", "spin")),
    (r"\brwlock_t\b", ("write_lock", "read_lock")),
    (r"\bstruct\s+rw_semaphore\b", ("rwsem_write", "rwsem_read")),
    (r"\bstruct\s+percpu_rw_semaphore\b", ("rwsem_write", "rwsem_read")),
    (r"\bstruct\s+(rt_)?mutex\b", ("mutex", "mutex")),
    (r"\bstruct\s+ww_mutex\b", ("mutex", "mutex")),
    (r"\bstruct\s+semaphore\b", ("semaphore", "semaphore")),
    (r"\bstruct\s+srcu_struct\b", ("srcu", "srcu")),
    (r"\bseqlock_t\b", ("spin", "spin")),
    (r"\blocal_lock_t\b", ("local_lock", "local_lock")),
]
SPINNING = {"raw_spin", "spin", "write_lock", "read_lock"}
# Taking these may sleep.
SLEEPING = {"mutex", "rwsem_read", "rwsem_write", "semaphore"}


def declarations(path):
    """Yields (name, params text, annotations text) of annotated prototypes."""
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return
    # Comments and line continuations out of the way.
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = text.replace("\\\n", " ")
    for m in ANNOT.finditer(text):
        # The declaration this annotation belongs to: back to the previous
        # `;`, `}` or `{`, forward to the next `;` or `{`.
        start = max(text.rfind(c, 0, m.start()) for c in ";}{#") + 1
        end_m = DECL_END.search(text, m.end())
        if not end_m:
            continue
        decl = " ".join(text[start : end_m.start()].split())
        if decl.startswith(("define ", "if", "include")):
            continue
        head = re.match(r"(.*?\b([A-Za-z_][A-Za-z_0-9]*)\s*)\((.*)$", decl)
        if not head:
            continue
        name = head.group(2)
        rest = head.group(3)
        depth, i = 1, 0
        while i < len(rest) and depth:
            depth += {"(": 1, ")": -1}.get(rest[i], 0)
            i += 1
        params, annots = rest[: i - 1], rest[i:]
        if not ANNOT.search(annots):
            continue
        yield name, params, annots


def split_params(params):
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def param_name(p):
    m = re.search(r"([A-Za-z_][A-Za-z_0-9]*)\s*(\[[^\]]*\])?$", p)
    return m.group(1) if m else None


def entry(name, params, annots):
    plist = split_params(params)
    names = [param_name(p) for p in plist]
    effects = []
    for m in ANNOT.finditer(annots):
        op, shared, args = m.group(1), bool(m.group(2)), m.group(3)
        parts = [a.strip() for a in args.split(",")]
        cond = None
        if op == "cond_acquires":
            if len(parts) < 2:
                continue
            cond, parts = parts[0], parts[1:]
        target = parts[0] if parts else ""
        # `&x->lock`, `x->lock`, `lock`: the parameter it starts from.
        base = re.match(r"&?\s*\(?\s*([A-Za-z_][A-Za-z_0-9]*)", target)
        if not base or base.group(1) not in names:
            continue
        arg = names.index(base.group(1))
        ptype = plist[arg]
        kind = None
        if base.group(1) == target.lstrip("&").strip():
            for pat, (excl, sh) in KINDS:
                if re.search(pat, ptype):
                    kind = sh if shared else excl
                    break
        else:
            # A lock inside the argument: the field's type is not in the
            # prototype; the kind follows from the function's name.
            if "mutex" in name:
                kind = "mutex"
            elif "raw_spin" in name:
                kind = "raw_spin"
            elif "spin" in name or "lockref" in name or "_lock_irq" in name:
                kind = "spin"
        if kind is None:
            continue
        effects.append((op, cond, arg, kind))
    # One lock effect per entry (the spec's model); must_hold has none.
    effects = [e for e in effects if e[0] != "must_hold"]
    if len(effects) != 1:
        return None
    op, cond, arg, kind = effects[0]
    spins = kind in SPINNING
    # The `_irq`/`_irqsave` forms also disable interrupts.
    if spins and "irq" in name:
        kind += "_irq"
    elif kind == "spin" and "_bh" in name:
        kind = "spin_bh"
    lines = []
    if op == "acquires":
        lock = f'{{ op = "acquire", arg = {arg}, kind = "{kind}" }}'
        if spins:
            lines.append(f"adjust = 1, lock = {lock}")
        elif kind in SLEEPING:
            lines.append(f'expect = "0", lock = {lock}')
        else:
            lines.append(f"lock = {lock}")
    elif op == "releases":
        lock = f'{{ op = "release", arg = {arg}, kind = "{kind}" }}'
        if spins:
            lines.append(f'adjust = -1, expect = "1..", lock = {lock}')
        else:
            lines.append(f"lock = {lock}")
    else:
        success = "zero" if cond in ("0", "false") else "nonzero"
        lock = f'{{ op = "try_acquire", arg = {arg}, kind = "{kind}", success = "{success}" }}'
        # A sleeping lock's conditional acquire (mutex_lock_interruptible)
        # may sleep; a spinning trylock does not.
        expect = '"0"' if kind in SLEEPING and "trylock" not in name else '"0.."'
        lines.append(f"expect = {expect}, lock = {lock}")
    return f'{name} = {{ {lines[0]}, note = "{name}: harvested from its `__{op}` annotation" }}'


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else None
    found = {}
    skipped = 0
    for top in ("include",):
        for dirpath, _, files in os.walk(os.path.join(src, top)):
            for f in sorted(files):
                if not f.endswith(".h"):
                    continue
                for name, params, annots in declarations(os.path.join(dirpath, f)):
                    e = entry(name, params, annots)
                    if e is None:
                        skipped += 1
                    elif name not in found:
                        found[name] = e
    text = [
        "# Generated by scripts/harvest-kernel-locks.py from the `__acquires`,",
        "# `__releases` and `__cond_acquires` annotations of the kernel's headers",
        f"# ({os.path.basename(os.path.normpath(src))}). Loaded under kernel.toml:",
        "# a hand-written entry always wins. Do not edit; regenerate.",
        f"# {len(found)} functions; {skipped} annotated declarations left out (no",
        "# single lock parameter of a known kind).",
        "",
        "[fn]",
    ]
    text += [found[k] for k in sorted(found)]
    result = "\n".join(text) + "\n"
    if out:
        open(out, "w").write(result)
        print(f"{len(found)} functions harvested, {skipped} left out -> {out}", file=sys.stderr)
    else:
        sys.stdout.write(result)


if __name__ == "__main__":
    main()
