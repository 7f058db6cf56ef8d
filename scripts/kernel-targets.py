#!/usr/bin/env python3
"""The Rust objects of a kernel tree that a configuration enables, named as
kbuild names them: the `make` targets kernel.sh builds after `prepare` and
`rust/`.

A Rust crate root is a `.rs` file that a kbuild Makefile names as an object
(`foo.o` of `foo.rs`): in an `obj-` list (`obj-$(CONFIG_X) += foo.o`), or as
a member of a composite object (`bar-y := foo.o baz.o`,
`obj-$(CONFIG_X) += bar.o`), in the file's own directory or in an ancestor's
Makefile (`nova-core-y := nova-core/nova_core.o` in drivers/gpu/Makefile of
7.3, where 7.2 has `nova-core-y := nova_core.o` in
drivers/gpu/nova-core/Makefile). A Rust host program (`hostprogs := foo`,
`foo-rust := y`) is one too. Every `.rs` file outside rust/ (`make rust/`
builds it), scripts/ (`make prepare` builds its host programs), tools/ and
Documentation/ is looked up this way; the module files of a crate are
named by no Makefile and are left alone.

Which target builds a crate root, so that kbuild compiles it exactly as in a
full build (its module name, the RUSTFLAGS_<obj> of the Makefile naming it):
* the crate root's own object, named from the Makefile that names it, when
  it sits in that Makefile's directory (drivers/gpu/drm/drm_panic_qr.o,
  member of drm.o; drivers/android/binder/rust_binder_main.o): kbuild gives
  a member of a composite the composite's module name, and compiles nothing
  else (the composite drm.o is all of DRM's C core);
* the composite when the member is in a subdirectory of the Makefile's
  (drivers/gpu/nova-core.o, drivers/gpu/nova-drm.o in 7.3): kbuild routes a
  goal `drivers/gpu/drm/nova/nova.o` into drivers/gpu/drm/, whose Makefile
  does not name it, and compiles it with the wrong flags;
* the directory (`samples/rust/hostprogs/`) for a host program: kbuild has
  no single target for one.
Directory targets of the object's directory would also work, but compile
the C of the whole directory (drivers/gpu/ is all of DRM with i915 in 7.3,
lib/ is all of lib), and `M=` builds a tree directory as an external module,
with other flags; neither is needed.

A target is kept when the configuration enables it: its `obj-$(CONFIG_X)`
(and for a member, its `bar-$(CONFIG_Y)`) is `y` or `m`, the `ifdef`/`ifeq`
blocks around those lines hold, and the Makefiles that lead kbuild into its
directory (`obj-$(CONFIG_Z) += dir/`, `subdir-$(CONFIG_Z) += dir`) are on
where they are found. What cannot be evaluated (a condition on a variable
other than CONFIG_*) counts as on: kbuild then has the last word, and fails
on a target it does not know.

Usage: scripts/kernel-targets.py SRCTREE CONFIG
Prints the targets, one per line, relative to SRCTREE; each crate root left
out is a note on stderr, saying why.
"""

import os
import re
import sys

# Top-level directories whose Rust is not built as objects of their own.
SKIP_TOP = {"rust", "scripts", "tools", "Documentation", ".git"}

ASSIGN = re.compile(r"^(?:(?:override|export)\s+)?([^\s=:#?+!]+)\s*(\+=|:=|::=|\?=|=)(.*)$")
CONDITIONAL = re.compile(r"^(ifdef|ifndef|ifeq|ifneq)\s+(.*)$")
CONFIG_REF = re.compile(r"\$[({](CONFIG_[A-Za-z0-9_]+)[)}]")
VAR_REF = re.compile(r"^\$[({]([A-Za-z0-9_.+-]+)[)}]$")
LIST_COND = re.compile(r"^(.+)-(y|m|objs|)$")
HOSTPROG_LISTS = {"hostprogs", "hostprogs-always"}  # with -y, -m or no suffix
NOT_COMPOSITES = {"obj", "subdir", "lib", "always", "targets", "extra"} | HOSTPROG_LISTS


def read_config(path):
    config = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$", line.rstrip("\n"))
            if m:
                config[m.group(1)] = m.group(2)
    return config


def logical_lines(path):
    """The Makefile's lines, continuations joined, comments removed."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    text = re.sub(r"\\\n", " ", text)
    for line in text.split("\n"):
        line = re.sub(r"(?<!\\)#.*", "", line).strip()
        if line:
            yield line


class Assignment:
    def __init__(self, lhs, value, words, on, why):
        self.lhs = lhs  # with $(CONFIG_*) replaced by their values
        self.value = value
        self.words = words  # the value's words, simple variables expanded
        self.on = on  # the line is in force and its list is y, m or objs
        self.why = why  # when not on: the reasons, for notes


class Conditional:
    """An open `ifdef`/`ifeq` … `else` … `endif` block: whether the branch
    being read is in force, and if not, why."""

    def __init__(self):
        self.on = False
        self.taken = None  # the text of the branch taken so far, if any
        self.unknown = False  # a condition could not be told: every branch is on
        self.why = ""

    def branch(self, result, text):
        """Enters a branch whose condition is `result` (None: unknown)."""
        if self.unknown or result is None:
            self.unknown, self.on = True, True
        elif self.taken is not None:
            self.on, self.why = False, f"`{self.taken}` holds"
        elif result:
            self.on, self.taken = True, text
        else:
            self.on, self.why = False, f"`{text}` does not hold"


class Makefile:
    """The assignments of one kbuild Makefile, evaluated with a .config."""

    def __init__(self, path, rel, config):
        self.assignments = []
        variables = {}
        stack = []  # the open conditionals

        def expand_config(s):
            return CONFIG_REF.sub(lambda m: config.get(m.group(1), ""), s)

        def evaluate(kind, arg):
            """True, False, or None when it cannot be told."""
            if kind in ("ifdef", "ifndef"):
                name = arg.strip()
                if not re.fullmatch(r"CONFIG_[A-Za-z0-9_]+", name):
                    return None
                defined = config.get(name, "") not in ("", "n")
                return defined if kind == "ifdef" else not defined
            arg = expand_config(arg.strip())
            if "$" in arg:
                return None
            m = re.fullmatch(r"\((.*),(.*)\)", arg) or re.fullmatch(
                r"""["'](.*)["']\s+["'](.*)["']""", arg
            )
            if not m:
                return None
            equal = m.group(1).strip() == m.group(2).strip()
            return equal if kind == "ifeq" else not equal

        for line in logical_lines(path):
            m = CONDITIONAL.match(line)
            if m:
                stack.append(Conditional())
                stack[-1].branch(evaluate(m.group(1), m.group(2)), line)
                continue
            if line == "else" or line.startswith("else "):
                if stack:
                    m = CONDITIONAL.match(line[4:].strip())
                    if m:
                        stack[-1].branch(evaluate(m.group(1), m.group(2)), m.group(0))
                    else:
                        stack[-1].branch(True, "else")
                continue
            if line == "endif" or line.startswith("endif "):
                if stack:
                    stack.pop()
                continue
            m = ASSIGN.match(line)
            if not m:
                continue
            raw_lhs, op, value = m.group(1), m.group(2), m.group(3).strip()
            lhs = expand_config(raw_lhs)
            in_force = all(c.on for c in stack)
            why = [f"{c.why} in {rel}" for c in stack if not c.on]
            words = []
            for w in value.split():
                v = VAR_REF.match(w)
                if v and v.group(1) in variables:
                    words.extend(variables[v.group(1)])
                else:
                    words.append(w)
            if in_force:
                if op == "+=":
                    variables.setdefault(lhs, []).extend(words)
                elif op != "?=" or lhs not in variables:
                    variables[lhs] = list(words)
            on = in_force
            lm = LIST_COND.match(lhs)
            if lm and lm.group(2) == "" and "$" not in lhs:
                on = False
                refs = CONFIG_REF.findall(raw_lhs)
                why.append(
                    " and ".join(f"{r} is off" for r in refs) + f" ({rel})"
                    if refs
                    else f"`{raw_lhs}` is off ({rel})"
                )
            self.assignments.append(Assignment(lhs, value, words, on, why))

    def lists(self, name):
        """The assignments to the list `name`: `name-y`, `name-m`,
        `name-objs`, `name-$(CONFIG_X)` (whatever its value), `name-$(…)`."""
        out = []
        for a in self.assignments:
            m = LIST_COND.match(a.lhs)
            if m and m.group(1) == name:
                out.append(a)
            elif "$" in a.lhs and a.lhs.startswith(name + "-$"):
                out.append(a)  # a condition that cannot be evaluated: on
        return out

    def rust_hostprogs(self):
        """Host programs written in Rust (`foo-rust := y`), with their lists."""
        progs = {}
        for a in self.assignments:
            if a.lhs.endswith("-rust") and a.value == "y" and a.on:
                progs[a.lhs[: -len("-rust")]] = []
        for a in self.assignments:
            m = LIST_COND.match(a.lhs)
            if a.lhs in HOSTPROG_LISTS or (m and m.group(1) in HOSTPROG_LISTS):
                for w in a.words:
                    if w in progs:
                        progs[w].append(a)
        return progs


class Tree:
    def __init__(self, src, config):
        self.src = src
        self.config = config
        self.makefiles = {}

    def kbuild_files(self, d):
        """The Makefiles kbuild reads for directory `d` ("" is the top,
        whose lists are in Kbuild and in the top Makefile's core-y etc.)."""
        base = os.path.join(self.src, d)
        if d == "":
            names = ["Kbuild", "Makefile"]
        elif os.path.isfile(os.path.join(base, "Kbuild")):
            names = ["Kbuild"]
        else:
            names = ["Makefile"]
        out = []
        for n in names:
            path = os.path.join(base, n)
            if os.path.isfile(path):
                if path not in self.makefiles:
                    rel = os.path.join(d, n)
                    self.makefiles[path] = Makefile(path, rel, self.config)
                out.append(self.makefiles[path])
        return out

    def links(self, parent, rel):
        """The assignments in `parent`'s Makefiles that lead kbuild into its
        subdirectory `rel` (`obj-y += rel/`, `subdir-y += rel`, `libs-y := rel/`)."""
        out = []
        for mk in self.kbuild_files(parent):
            for a in mk.assignments:
                if not LIST_COND.match(a.lhs) and "$" not in a.lhs:
                    continue
                if rel + "/" in a.words or (a.lhs.startswith("subdir-") and rel in a.words):
                    out.append(a)
        return out

    def unreached(self, d):
        """Why kbuild does not descend into `d` with this config, or None.
        A directory no Makefile is found to lead into is left to kbuild."""
        while d != "":
            parent = d
            found = None
            while parent != "":
                parent = os.path.dirname(parent)
                rel = os.path.relpath(d, parent or ".")
                links = self.links(parent, rel)
                if links:
                    found = links
                    break
            if found is None:
                return None
            if not any(a.on for a in found):
                why = [w for a in found for w in a.why]
                return f"kbuild does not enter {d}/: " + "; ".join(why)
            d = parent
        return None

    def candidates(self, d, rs_files):
        """(target, crate root, reasons it is off) for the crate roots that
        the Makefiles of directory `d` name; rs_files: the tree's .rs files."""
        out = []
        for mk in self.kbuild_files(d):
            objs = {}  # word -> assignments of obj- lists naming it
            for a in mk.lists("obj"):
                for w in a.words:
                    objs.setdefault(w, []).append(a)

            def state(assignments):
                if any(a.on for a in assignments):
                    return []
                return [w for a in assignments for w in a.why] or ["off"]

            def root_of(word):
                if word.endswith(".o"):
                    root = os.path.normpath(os.path.join(d, word[:-2] + ".rs"))
                    if root in rs_files:
                        return root
                return None

            for w, assignments in objs.items():
                root = root_of(w)
                if root:
                    out.append((os.path.normpath(os.path.join(d, w)), root, state(assignments)))
            for a in mk.assignments:
                m = LIST_COND.match(a.lhs)
                name = m.group(1) if m else None
                if name is None and "-$" in a.lhs:
                    name = a.lhs[: a.lhs.index("-$")]
                if not name or name in NOT_COMPOSITES:
                    continue
                for w in a.words:
                    root = root_of(w)
                    if not root:
                        continue
                    composite = objs.get(name + ".o")
                    if composite is None:
                        continue  # not an object's member list (RUSTFLAGS_… etc.)
                    why = state([a]) + state(composite)
                    if "/" in w:
                        target = os.path.normpath(os.path.join(d, name + ".o"))
                    else:
                        target = os.path.normpath(os.path.join(d, w))
                    out.append((target, root, why))
            for prog, assignments in mk.rust_hostprogs().items():
                root = os.path.normpath(os.path.join(d, prog + ".rs"))
                if root in rs_files and assignments:
                    out.append((d + "/", root, state(assignments)))
        return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    src, config_path = argv[1], argv[2]
    tree = Tree(src, read_config(config_path))
    rs_files = set()
    for top, dirs, files in os.walk(src):
        rel = os.path.relpath(top, src)
        if rel == ".":
            dirs[:] = [x for x in dirs if x not in SKIP_TOP]
            continue
        dirs.sort()
        for f in files:
            if f.endswith(".rs"):
                rs_files.add(os.path.join(rel, f))
    # The Makefiles that can name a crate root: its directory's and its
    # ancestors'.
    dirs = set()
    for f in rs_files:
        d = os.path.dirname(f)
        while d and d not in dirs:
            dirs.add(d)
            d = os.path.dirname(d)
    on = {}  # target -> crate roots
    off = {}  # crate root -> (target, reasons)
    for d in sorted(dirs):
        for target, root, why in tree.candidates(d, rs_files):
            if not why:
                # kbuild looks for the goal in the Makefile of `d`, named
                # from the top: every directory on the way must be entered.
                blocked = tree.unreached(d)
                if blocked:
                    why = [blocked]
            if why:
                off.setdefault(root, (target, why))
            else:
                on.setdefault(target, set()).add(root)
    built = {r for roots in on.values() for r in roots}
    for root in sorted(off):
        if root not in built:
            target, why = off[root]
            print(f"   note: {target} ({root}) left out: {'; '.join(why)}", file=sys.stderr)
    for target in sorted(on):
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
