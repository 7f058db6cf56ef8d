#!/usr/bin/env python3
"""Spec entries for the renamed copies of `#[no_mangle]` functions (scale benchmark).

usage: scale-spec.py UNMANGLED_LIST COPIES SPEC.toml... > copies-spec.toml

`kanalyze` looks exported functions and C functions up in the spec by link
name; the replicated copies rename `rust_binder_state_show` to
`rust_binder_state_show.k3`, which no entry names. For each listed symbol that
an entry describes (exact name, then the name without `rust_helper_`, then the
globs, as `spec::Spec::lookup_entry` does), every copy gets the same entry.
"""
import fnmatch
import json
import sys
import tomllib


def value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
    raise SystemExit(f"unexpected spec value {v!r}")


def main():
    names = [l for l in open(sys.argv[1]).read().split("\n") if l]
    copies = int(sys.argv[2])
    exact, globs = {}, []
    for path in sys.argv[3:]:
        with open(path, "rb") as f:
            for k, v in tomllib.load(f).get("fn", {}).items():
                if "*" in k:
                    globs.append((k, v))
                else:
                    exact[k] = v

    def lookup(name):
        candidates = [name]
        if name.startswith("rust_helper_"):
            candidates.insert(0, name[len("rust_helper_"):])
        if name in exact:
            return exact[name]
        for c in candidates:
            if c in exact:
                return exact[c]
        for c in candidates:
            for g, v in globs:
                if fnmatch.fnmatchcase(c, g):
                    return v
        return None

    print("[fn]")
    for n in names:
        entry = lookup(n)
        if entry is None:
            continue
        for k in range(1, copies):
            print(f"{json.dumps(f'{n}.k{k}')} = {value(entry)}")


main()
