#!/usr/bin/env bash
# Scale benchmark (docs/performance.md): the kernel's dumps
# replicated N times as one program, for N = 1, 2, 5, 10 (SCALE_NS).
#
#   scripts/scale.sh [KMIR_DIR]        # default: target/kernel/kmir
#
# Copy k of every kernel-target dump (crates/kmir/examples/replicate.rs) has
# its crate names, item paths, type names and symbols renamed and calls a few
# functions of copy k-1; `core`, `compiler_builtins` and `build_error` are
# shared (the analyser knows items of theirs by name). For each N
# it prints bodies, dump bytes, decode time (`graph --timings`), the whole
# check's wall time and peak RSS (`/usr/bin/time`), and the ratios to N = 1;
# and it asserts that N copies give exactly N times the findings of the
# kernel, modulo the renamed names. Needs ~1 GB under target/scale for
# N = 10 (deleted at the end unless SCALE_KEEP=1). Not part of CI: it takes
# minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
src=$(realpath "${1:-target/kernel/kmir}")
ns=(${SCALE_NS:-1 2 5 10})
max=${ns[-1]}
# Ratios and the findings check are against N = 1, which must come first.
[ "${ns[0]}" = 1 ] || { echo "SCALE_NS must start with 1" >&2; exit 1; }
work=$root/target/scale

[ -d "$src" ] || { echo "no dump directory $src" >&2; exit 1; }
need_kb=$(( $(du -sLk "$src" | cut -f1) * (max + 1) ))
free_kb=$(df -Pk "$root/target" 2>/dev/null | awk 'NR==2 {print $4}')
if [ -n "$free_kb" ] && [ "$free_kb" -lt "$need_kb" ]; then
    echo "need about $((need_kb / 1024)) MiB under target/, $((free_kb / 1024)) MiB free" >&2
    exit 1
fi

cargo build --release -q -p kanalyze
cargo build --release -q -p kmir --example replicate
kanalyze=$root/target/release/kanalyze

rm -rf "$work"
mkdir -p "$work"
echo "replicating $src $max times into $work" >&2
"$root/target/release/examples/replicate" "$src" "$work/copies" "$max"
python3 scripts/scale-spec.py "$work/copies/unmangled.txt" "$max" \
    crates/spec/kernel.toml crates/spec/kernel-harvested.toml >"$work/copies-spec.toml"

# Copy 0 is the input itself: only its dumps of the program's target (the
# ones the analyser keeps; replicate lists them), so that the byte counts
# are the program's.
for n in "${ns[@]}"; do
    dir=$work/n$n
    mkdir -p "$dir"
    while read -r f; do ln -s "$(realpath "$src/$f")" "$dir/"; done <"$work/copies/c0.txt"
    for ((k = 1; k < n; k++)); do ln -s "$work"/copies/c$k/*.kmir "$dir/"; done
done

for n in "${ns[@]}"; do
    dir=$work/n$n
    graph=$("$kanalyze" graph "$dir" --timings 2>/dev/null)
    bodies=$(sed -n 's/^instances: *\([0-9]*\) distinct.*/\1/p' <<<"$graph")
    decode=$(sed -n 's/^ *decode ([0-9]* threads): *\([0-9.]*\)s/\1/p' <<<"$graph")
    set +e
    /usr/bin/time -f '%e %M' -o "$work/time$n.txt" \
        "$kanalyze" check "$dir" --spec "$work/copies-spec.toml" --format json --timings \
        >"$work/out$n.json" 2>"$work/timings$n.txt"
    rc=$?
    set -e
    # 0: no findings; 1: findings (the kernel has some); anything else failed.
    [ "$rc" -le 1 ] || { echo "check failed on N=$n (exit $rc)" >&2; exit 1; }
    # `time -o` puts "Command exited with non-zero status 1" first.
    read -r wall rss_kb < <(tail -1 "$work/time$n.txt")
    bytes=$(du -bLc "$dir"/*.kmir | tail -1 | cut -f1)
    echo "$n $bodies $bytes $decode $wall $rss_kb" >>"$work/rows.txt"
    python3 - "$work" "$n" <<'EOF'
import collections, json, re, sys
work, n = sys.argv[1], int(sys.argv[2])
def norm(f):
    f = dict(f)
    f.pop("id", None)
    f.pop("text_fingerprint", None)
    return re.sub(r"(__k\d+|\.k\d+)\b", "", json.dumps(f, sort_keys=True))
one = collections.Counter(norm(f) for f in json.load(open(f"{work}/out1.json"))["findings"])
this = collections.Counter(norm(f) for f in json.load(open(f"{work}/out{n}.json"))["findings"])
want = collections.Counter({k: v * n for k, v in one.items()})
if this != want:
    bad = [k for k in set(this) | set(want) if this[k] != want[k]]
    sys.exit(f"N={n}: {sum(this.values())} findings, expected {sum(want.values())} "
             f"(N x {sum(one.values())}); first difference: {bad[0][:400]}")
EOF
    sed 's/^/    /' "$work/timings$n.txt" | grep -E 'decode|link|solve|checks' >&2
done
printf '%4s %10s %10s %9s %9s %10s %8s %8s %8s %8s\n' \
    N bodies "dump MB" "decode s" "check s" "RSS MB" "×bodies" "×bytes" "×check" "×RSS"
python3 - "$work/rows.txt" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1])]
b = rows[0]
for n, bodies, size, decode, wall, rss in rows:
    print(f"{n:>4} {bodies:>10} {int(size)/1e6:>10.1f} {float(decode):>9.2f} {float(wall):>9.2f} "
          f"{int(rss)/1024:>10.0f} {int(bodies)/int(b[1]):>8.2f} {int(size)/int(b[2]):>8.2f} "
          f"{float(wall)/float(b[4]):>8.2f} {int(rss)/int(b[5]):>8.2f}")
EOF
echo "findings: N copies give N x the kernel's findings modulo names (checked)" >&2
[ "${SCALE_KEEP:-0}" = 1 ] || rm -rf "$work"
