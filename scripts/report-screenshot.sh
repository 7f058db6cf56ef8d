#!/usr/bin/env bash
# Regenerates docs/report-kernel.png, the README's picture of the kernel's
# HTML report: runs `kanalyze report` on the dumps of a `scripts/kernel.sh`
# run with the kernel's settings (scripts/kernel-kanalyze.toml: invariants
# and triage), then screenshots the page in headless Chromium with the
# list of findings and the first one opened (its chain, its held locks).
# Look at the picture before committing it.
#
# Usage: scripts/report-screenshot.sh [OUT.png]     (default docs/report-kernel.png)
#
# Environment:
#   KANALYZE          the kanalyze binary (default: target/release/kanalyze,
#                     built with `cargo build --release -p kanalyze` if absent)
#   KANALYZE_KERNEL_WORK  the kernel run's work directory, with kmir/ and
#                     src/linux-source-*/ (default <repo>/target/kernel)
#   CHROMIUM          the browser (default: chromium on PATH; Debian:
#                     apt-get install chromium)
#   SHOT_SIZE         the window, WIDTHxHEIGHT (default 1400x1150)
#   SHOT_VIEW         what the page shows, as its URL query (default
#                     open=f4: every finding listed, the fifth opened: a
#                     KUnit doctest's failure path under a spinlock, with
#                     its held lock and chain; e.g. kind=build-assert-can-be-const&open=f0)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/docs/report-kernel.png}
WORK=${KANALYZE_KERNEL_WORK:-$ROOT/target/kernel}
KMIR=$WORK/kmir
SRC=$(ls -d "$WORK"/src/linux-source-* 2>/dev/null | head -n1 || true)
SIZE=${SHOT_SIZE:-1400x1150}
VIEW=${SHOT_VIEW:-open=f4}

die() { echo "report-screenshot.sh: $*" >&2; exit 1; }
[ -d "$KMIR" ] || die "no dumps in $KMIR: run scripts/kernel.sh first (or set KANALYZE_KERNEL_WORK)"
BROWSER=${CHROMIUM:-$(command -v chromium || true)}
[ -n "$BROWSER" ] && [ -x "$BROWSER" ] || die "no chromium (Debian: apt-get install chromium; or set CHROMIUM)"
KANALYZE=${KANALYZE:-$ROOT/target/release/kanalyze}
if [ ! -x "$KANALYZE" ]; then
    (cd "$ROOT" && cargo build --release --quiet -p kanalyze)
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SOURCE=()
[ -z "$SRC" ] || SOURCE=(--source-root "$SRC")
# The kernel's settings, as scripts/kernel.sh runs `check`; the triage file
# shows each finding with its verdict. No summary cache: the page is what
# a fresh run gives.
# From the work directory's parent, so that the page's title names the
# dumps as `kernel/kmir`, not by a path of this machine.
(cd "$WORK/.." && "$KANALYZE" report "$(basename "$WORK")/kmir" \
    --config "$ROOT/scripts/kernel-kanalyze.toml" "${SOURCE[@]}" \
    --no-cache --no-progress --html "$TMP/html") >"$TMP/report.log" 2>&1 ||
    { cat "$TMP/report.log" >&2; die "kanalyze report failed"; }

"$BROWSER" --headless --disable-gpu --no-sandbox --no-first-run --hide-scrollbars \
    --user-data-dir="$TMP/profile" --window-size="${SIZE/x/,}" \
    --screenshot="$TMP/shot.png" "file://$TMP/html/index.html?$VIEW" >"$TMP/chromium.log" 2>&1 ||
    { cat "$TMP/chromium.log" >&2; die "chromium failed"; }
head -c 8 "$TMP/shot.png" | grep -q PNG || die "chromium wrote no PNG (see $TMP/chromium.log)"
mkdir -p "$(dirname "$OUT")"
cp "$TMP/shot.png" "$OUT"
echo "report-screenshot.sh: wrote $OUT ($SIZE, ?$VIEW; the page: $(du -h "$TMP/html/index.html" | cut -f1))" >&2
