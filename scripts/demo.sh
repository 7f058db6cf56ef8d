#!/usr/bin/env bash
# The main job on the bundled example: build kextract and kanalyze, compile
# the example crates in fixtures/demo through kextract (one dump per crate),
# then run kanalyze on the dumps.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/scripts/toolchain.sh"
cd "$ROOT"

ensure_nightly
echo "== building kextract (pinned nightly) and kanalyze (stable)" >&2
in_extractor cargo build --release --bins --quiet
cargo build --release --quiet -p kanalyze
KEXTRACT="$ROOT/extractor/target/release/kextract"
KANALYZE="$ROOT/target/release/kanalyze"

OUT="$ROOT/target/demo"
rm -rf "$OUT"
mkdir -p "$OUT"
export KANALYZE_OUT="$OUT/kmir"
common=(--edition=2024 --crate-type=lib -Copt-level=2 -Cpanic=abort -Csymbol-mangling-version=v0 --out-dir "$OUT")
echo "== extracting fixtures/demo with kextract into $KANALYZE_OUT" >&2
"$KEXTRACT" "${common[@]}" fixtures/demo/klock.rs
"$KEXTRACT" "${common[@]}" --extern klock="$OUT/libklock.rlib" fixtures/demo/demo_driver.rs
unset KANALYZE_OUT

echo "== kanalyze $OUT/kmir" >&2
# Exit status 1 means "findings reported": that is the demo's point.
status=0
# The example is kernel code (the kernel's C spinlock and sleep functions)
# compiled for the host, where kanalyze would detect a userspace program:
# the kernel profile is asked for (docs/preemption.md, "Profiles").
"$KANALYZE" "$OUT/kmir" --profile kernel --source-root "$ROOT" || status=$?
echo "== kanalyze summary $OUT/kmir demo_driver::wait_for_hardware" >&2
"$KANALYZE" summary "$OUT/kmir" --profile kernel demo_driver::wait_for_hardware
if [ "$status" -ne 1 ]; then
    echo "demo: expected kanalyze to report the bug in demo_driver::reset (exit 1), got exit $status" >&2
    exit 1
fi
