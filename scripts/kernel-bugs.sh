#!/usr/bin/env bash
# Re-introduces known kernel Rust bugs (and makes clean changes), one patch
# at a time, and checks that kanalyze reports exactly what each patch says it
# should. Needs a finished `scripts/kernel.sh` run (its object tree, dumps
# and source).
#
# Every patch in scripts/kernel-bugs/*.patch is a diff against the kernel
# source (paths like `drivers/android/binder/process.rs`) whose header says
# what it must add to the kernel's findings:
#   Expect: <severity> <kind> <file>:<line>    (one line per finding), or
#   Expect: nothing                             (a clean change).
# For each patch the script
#   1. finds the crate whose compilation reads the patched file: the kbuild
#      command file (`.<crate>.o.cmd`) whose dependency list or source names
#      it, so files in a crate's subdirectories and `rust/kernel/` work;
#   2. copies that crate's root directory out of the source tree and applies
#      the patch to the copy (the tree itself is never modified);
#   3. replays exactly kbuild's command for the crate with the copy as the
#      source and every output (object, metadata, dep-info) redirected into
#      the patch's own directory; post-processing steps of the command
#      (objtool) run on that copy of the object, never on the object tree;
#   4. runs `kanalyze check` over the kernel's dumps with that crate's dump
#      replaced (with the kernel's invariants file, as scripts/kernel.sh
#      does) and keeps the findings the unpatched kernel does not have (by
#      stable id);
#   5. runs `kanalyze build-error` on the patched crate's object: a
#      `rust_build_error` reference the final link would reject is
#      `error build-error <file>:<line>`, at the innermost call in the
#      patched crate (see docs/build-assert.md).
# It prints a table (patch, expected, found, result) and exits 1 when a
# patch's findings differ from its expectations, 2 when a patch cannot be
# applied or compiled.
#
# Usage: scripts/kernel-bugs.sh [PATCH...]   (default: every patch)
# Output: target/kernel/bugs/<patch>/{kmir,build.log,findings.txt,new.txt,new.json,
#         build-error.txt,build-error.json}.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${KANALYZE_KERNEL_WORK:-$ROOT/target/kernel}
OBJ=$WORK/obj-kextract
KMIR=$WORK/kmir
SRC=$(ls -d "$WORK"/src/linux-source-* 2>/dev/null | head -n1 || true)
KEXTRACT=$ROOT/extractor/target/release/kextract
KANALYZE=$ROOT/target/release/kanalyze
INVARIANTS=(--invariants "$ROOT/scripts/kernel-invariants.toml")

die() { echo "kernel-bugs.sh: $*" >&2; exit 2; }
[ -d "$OBJ" ] && [ -d "$KMIR" ] && [ -n "$SRC" ] ||
    die "no kernel build in $WORK: run scripts/kernel.sh first"
[ -x "$KEXTRACT" ] || die "no $KEXTRACT: run scripts/kernel.sh first"
(cd "$ROOT" && cargo build --release --quiet -p kanalyze)

patches=()
for p in "$@"; do
    [ -f "$p" ] || die "no patch $p"
    patches+=("$(cd "$(dirname "$p")" && pwd)/$(basename "$p")")
done
if [ ${#patches[@]} -eq 0 ]; then
    patches=("$ROOT"/scripts/kernel-bugs/*.patch)
fi

baseline=$WORK/bugs/baseline.json
mkdir -p "$WORK/bugs"
"$KANALYZE" check "$KMIR" "${INVARIANTS[@]}" --format json >"$baseline" 2>/dev/null || true

# The kbuild command file of the crate whose compilation reads `$1` (a path
# relative to the source tree): its dependency list has the file on a line
# of its own, or its `source_` is the file.
crate_cmd() {
    find "$OBJ" -name '.*.o.cmd' -print0 |
        xargs -0 awk -v t="$SRC/$1" '{
            l = $0; sub(/^ +/, "", l); sub(/ *\\$/, "", l); sub(/^source_[^ ]* := /, "", l)
            if (l == t) { print FILENAME; nextfile }
        }' | sort
}

results=$WORK/bugs/results.tsv
: >"$results"
for patch in "${patches[@]}"; do
    name=$(basename "$patch" .patch)
    out=$WORK/bugs/$name
    rm -rf "$out"
    mkdir -p "$out/kmir" "$out/build"
    grep -q '^Expect: ' "$patch" || die "$name: the patch has no \`Expect:\` line"
    files=$(sed -n 's|^+++ b/||p' "$patch")
    [ -n "$files" ] || die "$name: the patch changes no file"
    first=$(echo "$files" | head -n1)
    cmdfiles=$(crate_cmd "$first")
    [ -n "$cmdfiles" ] || die "$name: no crate of the build reads $first (no kbuild command lists it)"
    [ "$(echo "$cmdfiles" | wc -l)" -eq 1 ] ||
        die "$name: $first is read by several crates: $(echo "$cmdfiles" | tr '\n' ' ')"
    cmdfile=$cmdfiles
    root_rs=$(sed -n 's|^source_[^ ]* := ||p' "$cmdfile" | head -n1)
    rootdir=$(dirname "${root_rs#"$SRC"/}")
    for f in $files; do
        case "$f" in
            "$rootdir"/*) ;;
            *) die "$name: $f is outside the crate's directory $rootdir (a patch changes one crate)" ;;
        esac
    done
    cmd=$(sed -n 's|^savedcmd_[^ ]* := ||p' "$cmdfile")
    # The copy keeps the crate's own layout (modules resolve relative to the root).
    mkdir -p "$out/src/$rootdir"
    cp -r "$SRC/$rootdir/." "$out/src/$rootdir/"
    (cd "$out/src" && patch -s -p1 <"$patch") || die "$name: the patch does not apply"
    # The compiler's command, and what kbuild runs on its object afterwards.
    compile=${cmd%%;*}
    post=""
    [ "$compile" = "$cmd" ] || post=${cmd#*;}
    object=$(echo "$compile" | sed -nE 's#.*--emit=obj=([^ ]+).*#\1#p')
    compile=${compile//"$SRC/$rootdir/"/"$out/src/$rootdir/"}
    compile=$(echo "$compile" | sed -E "s#--out-dir [^ ]+#--out-dir $out/build/#; s#--emit=([a-z-]+)=[^ ]+#--emit=\1=$out/build/out.\1#g")
    if [ -n "$object" ]; then
        post=${post//"$object"/"$out/build/out.obj"}
    fi
    echo "== $name: compiling $(basename "$root_rs") ($rootdir) with the patch" >&2
    (cd "$OBJ" && env RUSTC_BOOTSTRAP=1 KANALYZE_OUT="$out/kmir" KANALYZE_STRICT=1 bash -c "$compile") \
        >"$out/build.log" 2>&1 || die "$name: the patched crate does not compile (see $out/build.log)"
    if [ -n "$post" ]; then
        (cd "$OBJ" && bash -c "$post") >>"$out/build.log" 2>&1 ||
            echo "== $name: kbuild's post-processing of the copied object failed (see $out/build.log); the dump is unaffected" >&2
    fi
    patched=$(ls "$out/kmir"/*.kmir)
    crate=$(basename "$patched" | sed 's/-[0-9a-f]*\.kmir$//')
    for d in "$KMIR"/*.kmir; do
        case "$(basename "$d")" in
            "$crate"-*) ;;
            *) ln -s "$d" "$out/kmir/" ;;
        esac
    done
    "$KANALYZE" check "$out/kmir" "${INVARIANTS[@]}" >"$out/findings.txt" 2>/dev/null || true
    # What the patch adds: the findings whose stable id the unpatched
    # kernel's run does not have (ids ignore spans and checkout paths).
    "$KANALYZE" check "$out/kmir" "${INVARIANTS[@]}" --baseline "$baseline" --source-root "$out/src" \
        >"$out/new.txt" 2>/dev/null || true
    "$KANALYZE" check "$out/kmir" "${INVARIANTS[@]}" --baseline "$baseline" --format json \
        >"$out/new.json" 2>/dev/null || true
    # What the linker would meet: the `rust_build_error` references left
    # in the patched crate's object (a `build_assert!` the optimiser could
    # not prove), explained with the dumps (docs/build-assert.md).
    "$KANALYZE" build-error "$out/build/out.obj" --dumps "$out/kmir" --source-root "$out/src" \
        --source-root "$SRC" >"$out/build-error.txt" 2>&1 || true
    # With the same roots, the JSON's file names are relative to the copy
    # or to the source tree: `samples/rust/x.rs`, `rust/kernel/io.rs`.
    "$KANALYZE" build-error "$out/build/out.obj" --dumps "$out/kmir" --source-root "$out/src" \
        --source-root "$SRC" --format json >"$out/build-error.json" 2>/dev/null || true
    printf '%s\t%s\t%s\t%s\n' "$name" "$patch" "$out/new.json" "$out/build-error.json" >>"$results"
done

# The table: what each patch expects against what it added.
python3 - "$results" "$SRC" "$WORK/bugs" <<'EOF'
import json, sys

results, src, bugs = sys.argv[1], sys.argv[2], sys.argv[3]

def rel(path):
    # Spans of the patched crate point into its copy under the bugs
    # directory, the others into the source tree.
    for prefix in (src + "/",):
        if path.startswith(prefix):
            return path[len(prefix):]
    if path.startswith(bugs + "/"):
        parts = path[len(bugs) + 1:].split("/", 2)
        if len(parts) == 3 and parts[1] == "src":
            return parts[2]
    return path

rows, failed = [], 0
for line in open(results):
    name, patch, new, build_error = line.rstrip("\n").split("\t")
    expected = []
    for l in open(patch):
        if l.startswith("Expect: "):
            e = l[len("Expect: "):].strip()
            if e != "nothing":
                expected.append(e)
    try:
        findings = json.load(open(new))["findings"]
    except (OSError, ValueError, KeyError) as err:
        print(f"kernel-bugs.sh: {name}: no JSON output ({err})", file=sys.stderr)
        sys.exit(2)
    # A finding a triage verdict hides is listed as suppressed: not found.
    found = [
        f"{f['severity']} {f['kind']} {rel(f['span']['file'])}:{f['span']['line']}"
        for f in findings
        if not f.get("triage", {}).get("suppressed")
    ]
    # A kept `rust_build_error` reference: `error build-error FILE:LINE` at
    # the innermost frame in a file the patch changes (the call it made),
    # else at the assertion, else the function (no debug info).
    try:
        references = json.load(open(build_error))["findings"]
    except (OSError, ValueError, KeyError) as err:
        print(f"kernel-bugs.sh: {name}: no build-error JSON output ({err})", file=sys.stderr)
        sys.exit(2)
    changed = [l[len("+++ b/"):].strip() for l in open(patch) if l.startswith("+++ b/")]
    for r in references:
        spans = [fr["span"] for fr in r["frames"] if fr["span"]]
        mine = [sp for sp in spans if sp["file"] in changed]
        at = (mine or spans or [None])[0]
        where = f"{at['file']}:{at['line']}" if at else r["function"]
        found.append(f"error build-error {where}")
    found.sort()
    ok = sorted(expected) == found
    failed += not ok
    rows.append((name, "; ".join(sorted(expected)) or "nothing",
                 "; ".join(found) or "nothing", "ok" if ok else "FAILED"))

head = ("patch", "expected", "found", "result")
widths = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
for r in [head] + rows:
    print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
print(f"{len(rows) - failed} of {len(rows)} patches as expected")
sys.exit(1 if failed else 0)
EOF
