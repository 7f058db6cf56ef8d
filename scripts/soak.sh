#!/usr/bin/env bash
# Soak check of determinism: the whole `kanalyze check` over the kernel's
# dumps with 1, 2 and 8 threads (RAYON_NUM_THREADS), each 5 times, once
# with the dump directory and once with the dump files passed explicitly
# in a shuffled order (the first round also in reversed order), in text
# and JSON. Every run's stdout, stderr and exit status must be
# byte-identical to the first run's (1 thread, directory); fails otherwise
# and keeps the differing outputs.
#
# Usage: scripts/soak.sh [KMIR_DIR]
#   KMIR_DIR defaults to the dumps of scripts/kernel.sh
#   ($KANALYZE_KERNEL_WORK or target/kernel, then kmir/).
# Environment: SOAK_ROUNDS (default 5), SOAK_THREADS (default "1 2 8"),
#   SOAK_OUT (where outputs go; default a temporary directory, removed on
#   success).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${KANALYZE_KERNEL_WORK:-$ROOT/target/kernel}
KMIR=${1:-$WORK/kmir}
ROUNDS=${SOAK_ROUNDS:-5}
THREADS=${SOAK_THREADS:-"1 2 8"}
KANALYZE=$ROOT/target/release/kanalyze

die() { echo "soak.sh: $*" >&2; exit 2; }
[ -d "$KMIR" ] || die "no dump directory $KMIR: run scripts/kernel.sh first or pass one"
(cd "$ROOT" && cargo build --release --quiet -p kanalyze)

OUT=${SOAK_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/kanalyze-soak.XXXXXX")}
mkdir -p "$OUT"
mapfile -t files < <(find "$KMIR" -name '*.kmir' -type f | LC_ALL=C sort)
[ ${#files[@]} -gt 0 ] || die "no .kmir files in $KMIR"

# A reproducible shuffle: `shuf` reading its randomness from a seed.
shuffled() { printf '%s\n' "${files[@]}" | shuf --random-source=<(yes "kanalyze-soak-$1"); }

runs=0
failures=0
# run NAME THREADS FORMAT PATHS...: one check, compared with the reference.
run() {
    local name=$1 threads=$2 format=$3
    shift 3
    local rc=0
    RAYON_NUM_THREADS=$threads "$KANALYZE" check --format "$format" "$@" \
        >"$OUT/$name.$format.out" 2>"$OUT/$name.$format.err" || rc=$?
    echo "$rc" >"$OUT/$name.$format.rc"
    runs=$((runs + 1))
    local ref=reference
    if [ "$name" = "$ref" ]; then
        return
    fi
    for part in out err rc; do
        if ! cmp -s "$OUT/$ref.$format.$part" "$OUT/$name.$format.$part"; then
            echo "soak.sh: $name ($format, $threads threads): $part differs from the reference" >&2
            failures=$((failures + 1))
            return
        fi
    done
    rm -f "$OUT/$name.$format".{out,err,rc}
}

start=$(date +%s)
for format in text json; do
    run reference 1 "$format" "$KMIR"
    for threads in $THREADS; do
        for round in $(seq 1 "$ROUNDS"); do
            run "dir-t$threads-r$round" "$threads" "$format" "$KMIR"
            mapfile -t order < <(shuffled "$threads-$round")
            run "shuffled-t$threads-r$round" "$threads" "$format" "${order[@]}"
            if [ "$round" = 1 ]; then
                mapfile -t order < <(printf '%s\n' "${files[@]}" | tac)
                run "reversed-t$threads" "$threads" "$format" "${order[@]}"
            fi
        done
    done
done
elapsed=$(($(date +%s) - start))

rc=$(cat "$OUT/reference.text.rc")
findings=$(grep -m1 "^kanalyze: " "$OUT/reference.text.out")
if [ "$failures" -gt 0 ]; then
    echo "soak.sh: $failures of $runs runs differ; outputs kept in $OUT" >&2
    exit 1
fi
echo "soak.sh: $runs runs over ${#files[@]} dumps (threads: $THREADS; $ROUNDS rounds; directory, shuffled and reversed orders; text and JSON) are byte-identical in ${elapsed}s"
echo "soak.sh: reference exit status $rc: $findings"
if [ -z "${SOAK_OUT:-}" ]; then
    rm -rf "$OUT"
fi
