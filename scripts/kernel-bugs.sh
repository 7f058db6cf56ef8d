#!/usr/bin/env bash
# Re-introduces known kernel Rust bugs, one patch at a time, and shows what
# kanalyze reports for each. Needs a finished `scripts/kernel.sh` run (its
# object tree, dumps and source).
#
# For every patch in scripts/kernel-bugs/*.patch (a diff against the kernel
# source, paths like `drivers/android/binder/process.rs`):
#   1. copies the patched crate's directory out of the source tree and
#      applies the patch to the copy (the tree itself is never modified);
#   2. compiles that crate again with kextract, replaying kbuild's own
#      command line for it (from the object tree's `.<crate>.o.cmd`) with
#      the copy as the source, so the dump is what the kernel build would
#      write for the patched tree;
#   3. runs `kanalyze check` over the kernel's dumps with that crate's dump
#      replaced, and prints the findings that the unpatched kernel does not
#      have (by stable id), in full.
#
# Usage: scripts/kernel-bugs.sh [PATCH...]   (default: every patch)
# Output: target/kernel/bugs/<patch>/{kmir,findings.txt,findings.json,new.txt};
# new.txt is `kanalyze check --baseline` against the unpatched kernel's run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${KANALYZE_KERNEL_WORK:-$ROOT/target/kernel}
OBJ=$WORK/obj-kextract
KMIR=$WORK/kmir
SRC=$(ls -d "$WORK"/src/linux-source-* 2>/dev/null | head -n1 || true)
KEXTRACT=$ROOT/extractor/target/release/kextract
KANALYZE=$ROOT/target/release/kanalyze

die() { echo "kernel-bugs.sh: $*" >&2; exit 1; }
[ -d "$OBJ" ] && [ -d "$KMIR" ] && [ -n "$SRC" ] ||
    die "no kernel build in $WORK: run scripts/kernel.sh first"
[ -x "$KEXTRACT" ] || die "no $KEXTRACT: run scripts/kernel.sh first"
(cd "$ROOT" && cargo build --release --quiet -p kanalyze)

patches=("$@")
if [ ${#patches[@]} -eq 0 ]; then
    patches=("$ROOT"/scripts/kernel-bugs/*.patch)
fi

baseline=$WORK/bugs/baseline.json
mkdir -p "$WORK/bugs"
"$KANALYZE" check "$KMIR" --format json >"$baseline" 2>/dev/null || true

for patch in "${patches[@]}"; do
    name=$(basename "$patch" .patch)
    out=$WORK/bugs/$name
    rm -rf "$out"
    mkdir -p "$out/kmir" "$out/build"
    # The one file the patch changes, and the crate it belongs to.
    file=$(sed -n 's|^+++ b/||p' "$patch" | head -n1)
    dir=$(dirname "$file")
    cmdfile=$(grep -l -- "$SRC/$dir/" "$OBJ/$dir"/.*.o.cmd 2>/dev/null | head -n1 || true)
    [ -n "$cmdfile" ] || die "$name: no kbuild command for $dir in $OBJ"
    root_rs=$(sed -n 's|^source_[^ ]* := ||p' "$cmdfile" | head -n1)
    cmd=$(sed -n 's|^savedcmd_[^ ]* := ||p' "$cmdfile")
    # The copy keeps the crate's own layout (modules resolve relative to the root).
    mkdir -p "$out/src/$dir"
    cp -r "$SRC/$dir/." "$out/src/$dir/"
    (cd "$out/src" && patch -s -p1 <"$patch") || die "$name: the patch does not apply"
    cmd=${cmd//"$SRC/$dir/"/"$out/src/$dir/"}
    cmd=${cmd//--out-dir $dir\//--out-dir $out/build/}
    cmd=$(echo "$cmd" | sed -E "s#--emit=([a-z-]+)=[^ ]+#--emit=\1=$out/build/out.\1#g")
    echo "== $name: compiling $(basename "$root_rs") with the patch" >&2
    (cd "$OBJ" && env RUSTC_BOOTSTRAP=1 KANALYZE_OUT="$out/kmir" KANALYZE_STRICT=1 bash -c "$cmd") \
        >"$out/build.log" 2>&1 || die "$name: the patched crate does not compile (see $out/build.log)"
    patched=$(ls "$out/kmir"/*.kmir)
    crate=$(basename "$patched" | sed 's/-[0-9a-f]*\.kmir$//')
    for d in "$KMIR"/*.kmir; do
        case "$(basename "$d")" in
            "$crate"-*) ;;
            *) ln -s "$d" "$out/kmir/" ;;
        esac
    done
    "$KANALYZE" check "$out/kmir" >"$out/findings.txt" 2>/dev/null || true
    "$KANALYZE" check "$out/kmir" --format json >"$out/findings.json" 2>/dev/null || true
    # What the patch adds: the findings whose stable id the unpatched
    # kernel's run does not have (ids ignore spans and checkout paths).
    "$KANALYZE" check "$out/kmir" --baseline "$baseline" >"$out/new.txt" 2>/dev/null || true
    echo "== $name: new findings: $(tail -n1 "$out/new.txt" | sed 's/^kanalyze: //; s/ in [0-9]* crates.*//') (full: $out/new.txt)" >&2
done
