#!/usr/bin/env bash
# klint's own UI tests through kanalyze, as a comparison (docs/preemption.md,
# "klint's UI tests"). Nothing is fetched and nothing of klint is kept in
# this repository: give it a klint checkout (or any directory holding
# klint's `tests/ui/*.rs` with their `.stderr` files).
#
#   scripts/klint-ui.sh /path/to/klint            # or /path/to/klint/tests/ui
#   scripts/klint-ui.sh /path/to/klint -- --include-upstream   # extra kanalyze flags
#
# Each `NAME.rs` is compiled through kextract with klint's test flags
# (tests/compile-test.rs: edition 2021, `-Zcrate-attr=feature(register_tool)
# -Zcrate-attr=register_tool(klint)`; the crate type comes from the file's
# `#![crate_type]`), and `kanalyze check --profile kernel` runs on its dump
# (klint's tests model kernel code compiled for the host). What klint
# expects is read from `NAME.stderr`: every `error:`/`warning:` diagnostic
# with its primary ` --> $DIR/NAME.rs:LINE:COL` (the compiler's summary
# lines, "aborting due to …" and "… emitted", are not diagnostics), or,
# for a test whose `.stderr` has none, the `//~` annotations of `NAME.rs`. An
# expected diagnostic is matched by a kanalyze finding whose primary span is
# at the same line of the same file; the rest are misses, and findings at
# no expected line are extras. Prints one line per file and the totals.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/scripts/toolchain.sh"

if [ $# -lt 1 ]; then
    echo "usage: $0 KLINT_CHECKOUT_OR_UI_DIR [-- KANALYZE_FLAGS...]" >&2
    exit 2
fi
SRC=$1
shift
if [ "${1:-}" = "--" ]; then shift; fi
EXTRA=("$@")
if [ -d "$SRC/tests/ui" ]; then SRC="$SRC/tests/ui"; fi
if ! ls "$SRC"/*.rs >/dev/null 2>&1; then
    echo "error: no klint UI tests (*.rs) in $SRC" >&2
    exit 2
fi
SRC=$(cd "$SRC" && pwd)

ensure_nightly
KEXTRACT="$ROOT/extractor/target/release/kextract"
KANALYZE="$ROOT/target/release/kanalyze"
if [ ! -x "$KEXTRACT" ]; then in_extractor cargo build --release --bins --quiet; fi
if [ ! -x "$KANALYZE" ]; then (cd "$ROOT" && cargo build --release --quiet -p kanalyze); fi

WORK=$(mktemp -d /tmp/klint-ui.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

for rs in "$SRC"/*.rs; do
    name=$(basename "$rs" .rs)
    dir="$WORK/$name"
    mkdir -p "$dir"
    crate_type=$(sed -n 's/^#!\[crate_type *= *"\([a-z-]*\)"\].*/\1/p' "$rs" | head -1)
    args=(--edition=2021 "-Zcrate-attr=feature(register_tool)" "-Zcrate-attr=register_tool(klint)"
        --crate-name "$(echo "$name" | tr '-' '_')" --out-dir "$dir" -Cpanic=abort)
    if [ -z "$crate_type" ]; then args+=(--crate-type=lib); fi
    if ! (cd "$dir" && KANALYZE_OUT="$dir/kmir" KANALYZE_STRICT=1 \
        "$KEXTRACT" "${args[@]}" "$rs" >"$dir/compile.log" 2>&1); then
        echo "does not compile" >"$dir/status"
        continue
    fi
    code=0
    (cd "$dir" && "$KANALYZE" check kmir --profile kernel --format json "${EXTRA[@]}" \
        >"$dir/findings.json" 2>"$dir/kanalyze.log") || code=$?
    # 0: clean, 1: findings; anything else is a failure of the run.
    if [ "$code" -gt 1 ]; then echo "kanalyze exit $code" >"$dir/status"; fi
done

python3 - "$SRC" "$WORK" <<'PY'
import json, os, re, sys

src, work = sys.argv[1], sys.argv[2]
header = re.compile(r'^(error|warning)(\[[^\]]*\])?: (.*)$')
arrow = re.compile(r'^\s*--> \$DIR/([^:]+):(\d+):(\d+)')
summary = re.compile(r'aborting due to|\d+ warnings? emitted|^\w+: \d+ (warnings?|errors?)')
annot = re.compile(r'//~(\^*)\s*(ERROR|WARN|WARNING)\b(.*)')

def expected(name):
    """(line, level, message) of every diagnostic klint's test expects."""
    out = []
    path = os.path.join(src, name + '.stderr')
    if os.path.exists(path):
        lines = open(path, encoding='utf-8').read().splitlines()
        for i, l in enumerate(lines):
            m = header.match(l)
            if not m or summary.search(l):
                continue
            for nxt in lines[i + 1:i + 4]:
                a = arrow.match(nxt)
                if a:
                    if a.group(1) == name + '.rs':
                        out.append((int(a.group(2)), m.group(1), m.group(3)))
                    break
    if out:
        return sorted(out)
    for n, l in enumerate(open(os.path.join(src, name + '.rs'), encoding='utf-8').read().splitlines(), 1):
        m = annot.search(l)
        if m:
            level = 'error' if m.group(2) == 'ERROR' else 'warning'
            out.append((n - len(m.group(1)), level, m.group(3).strip()))
    return sorted(out)

total = {'expected': 0, 'matched': 0, 'missed': 0, 'extra': 0, 'files': 0, 'not_run': 0}
rows = []
for rs in sorted(f for f in os.listdir(src) if f.endswith('.rs')):
    name = rs[:-3]
    exp = expected(name)
    total['files'] += 1
    total['expected'] += len(exp)
    d = os.path.join(work, name)
    status = os.path.join(d, 'status')
    if os.path.exists(status):
        why = open(status).read().strip()
        total['not_run'] += 1
        total['missed'] += len(exp)
        rows.append(f'{rs}: expected {len(exp)}, not run ({why})')
        continue
    found = []
    try:
        doc = json.load(open(os.path.join(d, 'findings.json')))
    except (OSError, ValueError):
        doc = {'findings': []}
    for f in doc['findings']:
        span = f.get('span') or {}
        file = span.get('file', '')
        here = os.path.basename(file) == rs and os.path.dirname(os.path.abspath(file)) == src
        found.append((span.get('line', 0) if here else None, f['kind'], f['severity'],
                      file if not here else None))
    lines_found = {l for l, _, _, _ in found if l is not None}
    matched = [e for e in exp if e[0] in lines_found]
    missed = [e for e in exp if e[0] not in lines_found]
    exp_lines = {e[0] for e in exp}
    extra = [f for f in found if f[0] is None or f[0] not in exp_lines]
    total['matched'] += len(matched)
    total['missed'] += len(missed)
    total['extra'] += len(extra)
    parts = [f'{rs}: expected {len(exp)}, matched {len(matched)}']
    if missed:
        parts.append('missed ' + ', '.join(f'{l} ({lvl}: {msg[:60]})' for l, lvl, msg in missed))
    if extra:
        parts.append('extra ' + ', '.join(
            (f'{l} ({k} {s})' if l is not None else f'{os.path.basename(file)} ({k} {s})')
            for l, k, s, file in extra))
    rows.append('; '.join(parts))
for r in rows:
    print(r)
print(f"total: {total['files']} files, {total['expected']} expected diagnostics, "
      f"{total['matched']} matched at their line, {total['missed']} missed, "
      f"{total['extra']} extra findings, {total['not_run']} files not run")
PY
