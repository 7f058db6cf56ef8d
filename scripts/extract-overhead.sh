#!/usr/bin/env bash
# Extraction overhead on a cargo project (docs/performance.md):
# clean release builds of fixtures/<project>, alternately plain (the pinned
# nightly, `--target <host>` as `cargo kextract` builds) and through
# `cargo kextract` (KANALYZE_STRICT=1), PAIRS times each. Prints every run's
# wall, user and sys seconds (`/usr/bin/time`), the medians and the ratios
# kextract / plain of wall and of CPU (user + sys), pair by pair; CPU time is
# the figure to trust on a loaded machine.
#
#   scripts/extract-overhead.sh [PROJECT] [PAIRS]    # default: corpus 3
#
# KEXTRACT_DIR: where `kextract` and `cargo-kextract` are (default
# extractor/target/release; build them with `cd extractor && cargo build
# --release`). The last kextract run's dumps stay in target/overhead/kmir.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
project=${1:-corpus}
pairs=${2:-3}
bin=$(realpath "${KEXTRACT_DIR:-extractor/target/release}")
work=$root/target/overhead
host=$(rustc +nightly-2026-05-20 -vV | sed -n 's/^host: //p')
[ -x "$bin/cargo-kextract" ] || { echo "no $bin/cargo-kextract" >&2; exit 1; }
unset RUSTC RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER RUSTFLAGS CARGO_ENCODED_RUSTFLAGS \
    CARGO_BUILD_TARGET_DIR KANALYZE_OUT KANALYZE_STRICT RUSTUP_TOOLCHAIN
mkdir -p "$work"
cd "fixtures/$project"
# Fetch once, outside the timed runs.
cargo +nightly-2026-05-20 fetch --quiet

run() { # KIND: one clean build, appends "KIND wall user sys" to the log
    rm -rf "$work/target" "$work/kmir"
    if [ "$1" = plain ]; then
        CARGO_TARGET_DIR=$work/target /usr/bin/time -f "plain %e %U %S" -a -o "$work/times" \
            cargo +nightly-2026-05-20 build --release --quiet --target "$host"
    else
        CARGO_TARGET_DIR=$work/target KANALYZE_STRICT=1 /usr/bin/time -f "kextract %e %U %S" \
            -a -o "$work/times" "$bin/cargo-kextract" --out "$work/kmir" --release --quiet
    fi
    tail -1 "$work/times" >&2
}

: >"$work/times"
echo "load before: $(uptime)" >&2
for _ in $(seq "$pairs"); do
    run plain
    run kextract
done
echo "load after: $(uptime)" >&2
rm -rf "$work/target"
echo "dumps: $(ls "$work/kmir" | wc -l) crates, $(du -sb "$work/kmir" | cut -f1) bytes"
python3 - "$work/times" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
runs = {k: [(float(w), float(u) + float(s)) for kk, w, u, s in rows if kk == k]
        for k in ("plain", "kextract")}
for k, r in runs.items():
    print(f"{k:9} wall median {statistics.median(w for w, _ in r):7.1f} s   "
          f"cpu median {statistics.median(c for _, c in r):7.1f} s   "
          f"(wall {' '.join(f'{w:.1f}' for w, _ in r)}; cpu {' '.join(f'{c:.1f}' for _, c in r)})")
pw = [k[0] / p[0] for p, k in zip(runs["plain"], runs["kextract"])]
pc = [k[1] / p[1] for p, k in zip(runs["plain"], runs["kextract"])]
print(f"ratio kextract/plain, pair by pair: wall {' '.join(f'{x:.3f}' for x in pw)} "
      f"(median {statistics.median(pw):.3f}); cpu {' '.join(f'{x:.3f}' for x in pc)} "
      f"(median {statistics.median(pc):.3f})")
EOF
