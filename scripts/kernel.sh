#!/usr/bin/env bash
# Builds the Rust part of Linux 7.3 (x86_64) with kextract as the kernel's
# RUSTC, so that every compiled Rust crate leaves a `.kmir` dump, then runs
# kanalyze on the dumps. Reproduces everything from nothing on a Debian
# bookworm machine (root, amd64); a second run reuses what it can.
# See shared/reference/kernel-build.md for where the recipe comes from.
#
# Usage: scripts/kernel.sh [--plain] [--clean] [--no-analyse]
#                          [--tree DIR [--config FILE] [--targets "T…"] [--check]]
#   --plain       also build the same targets with the pinned nightly's plain
#                 rustc in a separate object tree and print the extract/plain
#                 time ratio (doubles the build time; env KANALYZE_KERNEL_PLAIN=1)
#   --clean       remove the object trees and the dumps first, so that every
#                 crate is compiled (and timed) again (env KANALYZE_KERNEL_CLEAN=1)
#   --no-analyse  stop after the build, do not run kanalyze
#   --tree DIR    build your own kernel tree (rust-next, a driver branch)
#                 instead of Debian's linux-source-7.3, into a work directory
#                 outside it (default <repo>/target/kernel-tree/<name of DIR>);
#                 the tree is never written to. Checked first: a kernel tree,
#                 with Rust, whose minimum rustc and bindgen versions the
#                 pinned nightly and kernel.sh's bindgen meet, not configured
#                 in place (kbuild refuses O= builds of such a tree)
#   --config FILE the .config to build the tree with (copied, then
#                 `make olddefconfig`); without it, x86_64_defconfig with the
#                 options below. Must have CONFIG_RUST=y
#   --targets "T…" the objects to build after `prepare` and `rust/`
#                 (default: every Rust object the tree's Makefiles name and
#                 the config enables, as kbuild names it: see
#                 scripts/kernel-targets.py)
#   --check       check the tree and the toolchain expectations, build
#                 nothing; with --config (or --targets), also print the
#                 targets it would build
# The analysis of a tree uses the tree's kanalyze.toml when it has one,
# else scripts/kernel-kanalyze.toml.
#
# Environment:
#   KANALYZE_KERNEL_CACHE  downloads and the bindgen install
#                          (default $HOME/.cache/kanalyze-kernel)
#   KANALYZE_KERNEL_WORK   source tree, object trees, dumps, logs
#                          (default <repo>/target/kernel)
#   KANALYZE_KERNEL_JOBS   make -j (default 2)
#   KANALYZE_KERNEL_DEB_VERSION  version of linux-source-7.3 in trixie-backports
#                          (default 7.3.4-1~bpo13+1)
#   KANALYZE_KERNEL_STACK  1 (default): build with frame sizes (Rust:
#                          KRUSTFLAGS=-Zemit-stack-sizes, C: KCFLAGS=-fstack-usage)
#                          and run `kanalyze stack` on the objects; 0: neither
#
# Layout of the work dir:
#   src/linux-source-*/  the unpacked kernel source (~1.8 GB)
#   obj-kextract/        objects built with RUSTC=kextract (~230 MB)
#   obj-plain/           objects built with plain rustc (--plain only)
#   kmir/                the dumps, one per compiled crate
#   logs/                one `make V=1` log per step; findings.txt/.json;
#                        build-error.txt/.json (`kanalyze build-error` on the objects);
#                        stack.txt/.json (`kanalyze stack`: each root's worst-case
#                        stack depth, frames over 2048 bytes, docs/stack.md)
#
# Exit status: 0 when the build (and the analysis, whatever it finds) ran;
# non-zero when a step failed; the failing step's log is named.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/scripts/toolchain.sh"

PLAIN=${KANALYZE_KERNEL_PLAIN:-0}
CLEAN=${KANALYZE_KERNEL_CLEAN:-0}
ANALYSE=1
TREE=""
TREE_CONFIG=""
TREE_TARGETS=""
CHECK_ONLY=0
usage_error() {
    echo "kernel.sh: $* (see --help)" >&2
    exit 2
}
die() {
    echo "kernel.sh: error: $*" >&2
    exit 1
}
while [ $# -gt 0 ]; do
    case "$1" in
        --plain) PLAIN=1 ;;
        --clean) CLEAN=1 ;;
        --no-analyse | --no-analyze) ANALYSE=0 ;;
        --tree | --config | --targets)
            [ $# -ge 2 ] && [ -n "$2" ] || usage_error "\`$1\` needs a value"
            case "$1" in
                --tree) TREE=$2 ;;
                --config) TREE_CONFIG=$2 ;;
                --targets) TREE_TARGETS=$2 ;;
            esac
            shift
            ;;
        --check) CHECK_ONLY=1 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) usage_error "unknown argument \`$1\`" ;;
    esac
    shift
done
if [ -z "$TREE" ]; then
    [ -z "$TREE_CONFIG" ] || usage_error "--config is for --tree (the Debian source is configured by kernel.sh)"
    [ -z "$TREE_TARGETS" ] || usage_error "--targets is for --tree"
    [ "$CHECK_ONLY" = 0 ] || usage_error "--check is for --tree"
fi

CACHE=${KANALYZE_KERNEL_CACHE:-$HOME/.cache/kanalyze-kernel}
if [ -n "$TREE" ]; then
    WORK=${KANALYZE_KERNEL_WORK:-$ROOT/target/kernel-tree/$(basename "$(realpath -m "$TREE")")}
else
    WORK=${KANALYZE_KERNEL_WORK:-$ROOT/target/kernel}
fi
WORK=$(realpath -m "$WORK")
JOBS=${KANALYZE_KERNEL_JOBS:-2}
BINDGEN_VERSION=0.72.1
# Frame sizes for `kanalyze stack` (docs/stack.md): rustc writes each
# function's frame into a `.stack_sizes` section of its object, clang each
# C function's into a `.su` file next to the object.
STACK=${KANALYZE_KERNEL_STACK:-1}
STACK_FLAGS=()
if [ "$STACK" = 1 ]; then
    STACK_FLAGS=(KRUSTFLAGS=-Zemit-stack-sizes KCFLAGS=-fstack-usage)
fi

# ---------------------------------------------------------------- targets
# The Rust objects built after `prepare` and `rust/`: every crate root that
# the tree's Makefiles name as an object and the configuration enables, by
# the name kbuild builds it under (scripts/kernel-targets.py says how, and
# why single objects rather than whole directories). They are read from the
# tree, not listed here: trees lay out their Makefiles differently (nova-core
# is drivers/gpu/nova-core.o, a composite of drivers/gpu/Makefile, in 7.3,
# and drivers/gpu/nova-core/nova_core.o in 7.2), and a driver branch has
# drivers no list knows.
# Sets TARGETS for the tree $1 configured by the .config $2 (or to --targets).
targets_of() {
    local src=$1 config=$2 list
    TARGETS=()
    if [ -n "$TREE_TARGETS" ]; then
        read -r -a TARGETS <<<"$TREE_TARGETS"
        return
    fi
    command -v python3 >/dev/null || die "python3 is needed to read the tree's Makefiles (or pass --targets)"
    list=$(python3 "$ROOT/scripts/kernel-targets.py" "$src" "$config") ||
        die "could not read the Rust objects of $src from its Makefiles (scripts/kernel-targets.py failed)"
    read -r -d '' -a TARGETS <<<"$list" || true
}

if [ -n "$TREE" ]; then
    source "$ROOT/scripts/kernel-tree.sh"
    echo "== checking the tree" >&2
    check_tree
    if [ "$CHECK_ONLY" = 1 ]; then
        if [ -n "$TREE_TARGETS" ]; then
            echo "   targets (--targets): $TREE_TARGETS" >&2
        elif [ -n "$TREE_CONFIG" ]; then
            # The config as it is: the build runs `olddefconfig` on it first.
            targets_of "$TREE" "$TREE_CONFIG"
            echo "   ${#TARGETS[@]} Rust targets with $TREE_CONFIG: ${TARGETS[*]}" >&2
        else
            echo "   targets: the Rust objects the default config enables, read from the tree's Makefiles once it is configured" >&2
        fi
        echo "kernel.sh: the tree fits; run without --check to build it" >&2
        exit 0
    fi
fi

mkdir -p "$CACHE" "$WORK"
CACHE=$(cd "$CACHE" && pwd)
LOGS=$WORK/logs
KMIR=$WORK/kmir
OBJ=$WORK/obj-kextract
OBJ_PLAIN=$WORK/obj-plain
mkdir -p "$LOGS"

KVER=7.3
# trixie-backports keeps only its newest upload: when 7.3.4-1~bpo13+1 is gone,
# set KANALYZE_KERNEL_DEB_VERSION to the version there (apt-cache policy).
KDEB_VERSION=${KANALYZE_KERNEL_DEB_VERSION:-7.3.4-1~bpo13+1}
FALLBACK_KVER=6.12
LLVM_SUFFIX=-19
LIBCLANG_PATH=/usr/lib/llvm-19/lib
export LIBCLANG_PATH
PACKAGES=(clang-19 lld-19 llvm-19 libclang-19-dev make flex bison bc cpio
    libelf-dev libssl-dev gcc libc6-dev binutils xz-utils tar python3 perl time)

# ---------------------------------------------------------------- helpers
STEP_NAMES=()
STEP_SECS=()
STEP=""
STEP_T0=0
now() { date +%s.%N; }
step() {
    STEP=$1
    STEP_T0=$(now)
    echo "== $STEP" >&2
}
step_done() {
    local secs
    secs=$(awk -v a="$STEP_T0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
    STEP_NAMES+=("$STEP")
    STEP_SECS+=("$secs")
    echo "== $STEP: done in ${secs} s${1:+ ($1)}" >&2
}
secs_of() { # the time of the step named $1, or empty
    local i
    for i in "${!STEP_NAMES[@]}"; do
        if [ "${STEP_NAMES[$i]}" = "$1" ]; then echo "${STEP_SECS[$i]}"; return; fi
    done
}
# Runs a command with its output in a log; on failure shows the end of it.
logged() {
    local log=$1
    shift
    if ! "$@" >"$log" 2>&1; then
        echo "---- last lines of $log" >&2
        tail -n 60 "$log" >&2
        die "step \`$STEP\` failed; full log: $log"
    fi
}

# ---------------------------------------------------------------- checks
step "checking the machine"
# A regular file at /dev/null breaks apt-get update ("gpgv … required") and
# kbuild's `-o /dev/null` probes.
test -c /dev/null || die "/dev/null is not a character device (fix: rm -f /dev/null; mknod -m 666 /dev/null c 1 3)"
[ "$(uname -m)" = x86_64 ] || die "this recipe builds x86_64 on an x86_64 host, not $(uname -m)"
command -v dpkg-query >/dev/null || die "needs a Debian system (dpkg, apt)"
[ "$(id -u)" = 0 ] || echo "note: not root: apt-get install will fail if packages are missing" >&2
step_done "cache $CACHE, work $WORK"

# ---------------------------------------------------------------- packages
step "Debian packages"
missing=()
for p in "${PACKAGES[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "   installing: ${missing[*]}" >&2
    logged "$LOGS/apt-update.log" apt-get update
    logged "$LOGS/apt-install.log" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${PACKAGES[@]}"
    step_done "installed ${#missing[@]}"
else
    step_done "all present"
fi

# ---------------------------------------------------------------- toolchains
step "pinned nightly ($NIGHTLY), kextract"
ensure_nightly
in_extractor cargo build --release --bins --quiet
KEXTRACT=$ROOT/extractor/target/release/kextract
NIGHTLY_SYSROOT=$(rustup run "$NIGHTLY" rustc --print sysroot)
PLAIN_RUSTC=$NIGHTLY_SYSROOT/bin/rustc
RUSTDOC=$NIGHTLY_SYSROOT/bin/rustdoc
[ -x "$PLAIN_RUSTC" ] && [ -x "$RUSTDOC" ] || die "no rustc/rustdoc in $NIGHTLY_SYSROOT/bin"
[ -f "$NIGHTLY_SYSROOT/lib/rustlib/src/rust/library/core/src/lib.rs" ] ||
    die "$NIGHTLY has no rust-src (core's sources)"
# kextract must answer like the nightly it links: same version text, same sysroot.
kv=$("$KEXTRACT" -vV) || die "kextract -vV failed"
pv=$("$PLAIN_RUSTC" -vV)
[ "$kv" = "$pv" ] || die "kextract -vV differs from $PLAIN_RUSTC -vV:"$'\n'"$kv"$'\n'"vs"$'\n'"$pv"
# The version the tree check compared with must be this one.
grep -qx "release: $NIGHTLY_RUSTC_VERSION-nightly" <<<"$kv" ||
    die "scripts/toolchain.sh says $NIGHTLY is rustc $NIGHTLY_RUSTC_VERSION, but kextract -vV says: $(grep '^release:' <<<"$kv")"
[ "$("$KEXTRACT" --print sysroot)" = "$NIGHTLY_SYSROOT" ] ||
    die "kextract --print sysroot is not $NIGHTLY_SYSROOT"
step_done "$(head -n1 <<<"$kv")"

step "bindgen-cli $BINDGEN_VERSION"
BINDGEN=$CACHE/bindgen/bin/bindgen
if [ -x "$BINDGEN" ] && "$BINDGEN" --version 2>/dev/null | grep -qx "bindgen $BINDGEN_VERSION"; then
    step_done "cached in $CACHE/bindgen"
else
    # From the cache dir, so no rust-toolchain.toml picks the toolchain.
    (cd "$CACHE" && logged "$LOGS/bindgen-install.log" env -u RUSTUP_TOOLCHAIN -u RUSTC -u CARGO_TARGET_DIR \
        cargo install --locked bindgen-cli --version "$BINDGEN_VERSION" --root "$CACHE/bindgen" --force)
    "$BINDGEN" --version | grep -qx "bindgen $BINDGEN_VERSION" || die "installed bindgen is not $BINDGEN_VERSION"
    step_done "installed into $CACHE/bindgen"
fi

# ---------------------------------------------------------------- source
if [ -n "$TREE" ]; then
    SRC=$TREE
    # What the object tree was configured from: the tree's commit (or its
    # path), and the config file's content.
    config_id=none
    [ -z "$TREE_CONFIG" ] || config_id=$(sha256sum <"$TREE_CONFIG" | cut -c1-16)
    STAMP="tree $TREE $(git -C "$TREE" rev-parse HEAD 2>/dev/null || echo no-git) config $config_id"
    KVER=$TREE_KVER
else
    # linux-source-7.3 from trixie-backports, through a private apt state: the
    # system's sources are not touched. Falls back to bookworm's linux-source-6.12.
    step "kernel source package"
    DEBS=$CACHE/debs
    mkdir -p "$DEBS"
    # $1 = kernel series, $2 = package version (a glob); the newest cached match.
    deb_of() { ls -t "$DEBS"/linux-source-"$1"_$2_all.deb 2>/dev/null | head -n1 || true; }
    DEB=$(deb_of "$KVER" "${KDEB_VERSION//:/%3a}")
    if [ -z "$DEB" ]; then
        APTDIR=$CACHE/apt
        mkdir -p "$APTDIR/sources.list.d" "$APTDIR/state/lists/partial" "$APTDIR/cache/archives/partial"
        : >"$APTDIR/sources.list"
        cat >"$APTDIR/sources.list.d/trixie-backports.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie-backports
Components: main
Architectures: amd64
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        APT_PRIVATE=(-o "Dir::Etc::sourcelist=$APTDIR/sources.list"
            -o "Dir::Etc::sourceparts=$APTDIR/sources.list.d"
            -o "Dir::State=$APTDIR/state" -o "Dir::State::status=/var/lib/dpkg/status"
            -o "Dir::Cache=$APTDIR/cache" -o "APT::Architectures=amd64" -o "Debug::NoLocking=1")
        if apt-get "${APT_PRIVATE[@]}" update >"$LOGS/apt-trixie-backports.log" 2>&1 &&
            (cd "$DEBS" && apt-get "${APT_PRIVATE[@]}" download "linux-source-$KVER=$KDEB_VERSION" \
                >>"$LOGS/apt-trixie-backports.log" 2>&1); then
            DEB=$(deb_of "$KVER" "${KDEB_VERSION//:/%3a}")
        else
            echo "   WARNING: could not fetch linux-source-$KVER=$KDEB_VERSION from trixie-backports" >&2
            echo "   (log: $LOGS/apt-trixie-backports.log); falling back to bookworm's linux-source-$FALLBACK_KVER" >&2
            tail -n 5 "$LOGS/apt-trixie-backports.log" | sed 's/^/   | /' >&2
        fi
    fi
    if [ -z "$DEB" ]; then
        KVER=$FALLBACK_KVER
        DEB=$(deb_of "$KVER" '*')
        if [ -z "$DEB" ]; then
            logged "$LOGS/apt-update-fallback.log" apt-get update
            (cd "$DEBS" && logged "$LOGS/apt-download-fallback.log" apt-get download "linux-source-$KVER")
            DEB=$(deb_of "$KVER" '*')
        fi
        [ -n "$DEB" ] || die "no kernel source package could be fetched"
        echo "   WARNING: using the FALLBACK source linux-source-$KVER instead of linux-source-7.3:" >&2
        echo "   an older kernel with fewer Rust drivers; the newer nightly may not build it" >&2
    fi
    step_done "$(basename "$DEB")"

    step "unpacking the source"
    SRC=$WORK/src/linux-source-$KVER
    STAMP="$(basename "$DEB")"
    if [ -f "$SRC/.kanalyze-unpacked" ] && [ "$(cat "$SRC/.kanalyze-unpacked")" = "$STAMP" ]; then
        step_done "already unpacked in $SRC"
    else
        rm -rf "$SRC" "$WORK/src/.unpack"
        mkdir -p "$WORK/src/.unpack"
        dpkg-deb --fsys-tarfile "$DEB" | tar -xO "./usr/src/linux-source-$KVER.tar.xz" |
            tar -xJ -C "$WORK/src/.unpack"
        mv "$WORK/src/.unpack/linux-source-$KVER" "$SRC"
        rmdir "$WORK/src/.unpack"
        echo "$STAMP" >"$SRC/.kanalyze-unpacked"
        step_done "$(du -sh "$SRC" | cut -f1) in $SRC"
    fi
fi

# ---------------------------------------------------------------- config
CONFIG_OPTS=(-e RUST -e RUST_OVERFLOW_CHECKS -e RUST_DEBUG_ASSERTIONS -e COMPILE_TEST
    -d ANDROID_BINDER_IPC -e ANDROID_BINDER_IPC_RUST
    -e CONFIGFS_FS -e BLK_DEV -m BLK_DEV_RUST_NULL
    -e DRM -e DRM_PANIC -e DRM_PANIC_SCREEN_QR_CODE -m NOVA_CORE -m DRM_NOVA
    -e COMMON_CLK -e IOMMU_SUPPORT -e IOMMU_IO_PGTABLE_LPAE -m DRM_TYR
    -e PHYLIB -e RUST_PHYLIB_ABSTRACTIONS -e RUST_FW_LOADER_ABSTRACTIONS -m AX88796B_PHY
    -e AX88796B_RUST_PHY -m AMCC_QT2025_PHY
    -e OF -e PM_OPP -e CPU_FREQ -m CPUFREQ_DT -m CPUFREQ_DT_RUST
    -e PWM -m PWM_TH1520 -e FWCTL -e RUST_FWCTL_ABSTRACTIONS
    -e SERIAL_DEV_BUS -e RUST_SERIAL_DEV_BUS_ABSTRACTIONS
    -e KUNIT -e RUST_KERNEL_DOCTESTS -e RUST_KUNIT_TESTS -m FIND_BIT_BENCHMARK_RUST
    -e SAMPLES -e SAMPLES_RUST -e SAMPLE_RUST_HOSTPROGS
    -e AUXILIARY_BUS -e SOC_BUS -e I2C -e USB -e PCI
    -d DEBUG_INFO_NONE -e DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT)
# Debug info (rustc gets -Cdebuginfo=2): `kanalyze build-error` needs the
# objects' DWARF to name the `build_assert!` and the calls inlined into the
# function that keeps a `rust_build_error` reference (docs/build-assert.md).
# (kernel-build.md also lists `-e ANDROID_BINDERFS`: it depends on the C
# binder, which is off, so Kconfig drops it; the Rust binder has its own.)
# Every SAMPLE_RUST_* module: tristates as modules, bools built in.
while read -r sym type; do
    [ "$sym" = SAMPLE_RUST_HOSTPROGS ] && continue
    case "$type" in
        tristate) CONFIG_OPTS+=(-m "$sym") ;;
        bool) CONFIG_OPTS+=(-e "$sym") ;;
    esac
done < <(awk '/^config SAMPLE_RUST_/ { sym = $2; next }
              sym != "" && /^[ \t]+(tristate|bool)/ { print sym, $1; sym = "" }' "$SRC/samples/rust/Kconfig")

# make for one object tree: $1 = object dir, $2 = rustc, then targets.
kmake() {
    local obj=$1 rustc=$2
    shift 2
    make -C "$SRC" O="$obj" LLVM="$LLVM_SUFFIX" \
        RUSTC="$rustc" HOSTRUSTC="$rustc" RUSTDOC="$RUSTDOC" BINDGEN="$BINDGEN" \
        "${STACK_FLAGS[@]}" -j"$JOBS" "$@"
}

# Configures the object tree $1 for rustc $2 (RUST depends on the toolchain
# check, so each tree is configured with its own compiler).
configure() {
    local obj=$1 rustc=$2 name=$3 stamp want
    want=$(printf '%s\n' "$STAMP" "$("$rustc" -vV)" "${CONFIG_OPTS[@]}" | sha256sum | cut -c1-16)
    if [ -f "$obj/.config" ] && [ "$(cat "$obj/.kanalyze-config" 2>/dev/null)" = "$want" ]; then
        echo "   $obj/.config is up to date" >&2
        return
    fi
    mkdir -p "$obj"
    if [ -n "$TREE_CONFIG" ]; then
        # The developer's configuration, as it is.
        cp "$TREE_CONFIG" "$obj/.config"
        logged "$LOGS/$name-config.log" kmake "$obj" "$rustc" olddefconfig
        grep -qx 'CONFIG_RUST=y' "$obj/.config" ||
            die "CONFIG_RUST did not stick in $obj/.config (is the toolchain accepted? see \`make rustavailable\`)"
        echo "$want" >"$obj/.kanalyze-config"
        return
    fi
    logged "$LOGS/$name-config.log" kmake "$obj" "$rustc" x86_64_defconfig
    "$SRC/scripts/config" --file "$obj/.config" "${CONFIG_OPTS[@]}"
    logged "$LOGS/$name-config.log" kmake "$obj" "$rustc" olddefconfig
    grep -qx 'CONFIG_RUST=y' "$obj/.config" ||
        die "CONFIG_RUST did not stick in $obj/.config (is the toolchain accepted? see \`make rustavailable\`)"
    # Report the requested options that Kconfig did not keep.
    local i op sym got lost=()
    for ((i = 0; i < ${#CONFIG_OPTS[@]}; i += 2)); do
        op=${CONFIG_OPTS[$i]} sym=${CONFIG_OPTS[$((i + 1))]}
        got=$(grep -E "^(# )?CONFIG_${sym}[= ]" "$obj/.config" || true)
        case "$op" in
            -e) [ "$got" = "CONFIG_${sym}=y" ] || lost+=("$sym=y") ;;
            -m) [ "$got" = "CONFIG_${sym}=m" ] || lost+=("$sym=m") ;;
            -d) [ "$got" = "# CONFIG_${sym} is not set" ] || [ -z "$got" ] || lost+=("$sym=n") ;;
        esac
    done
    if [ ${#lost[@]} -gt 0 ]; then
        echo "   WARNING: Kconfig did not keep: ${lost[*]}" >&2
    fi
    echo "$want" >"$obj/.kanalyze-config"
}

# Builds prepare, rust/ and the drivers in $1 with rustc $2; $3 names the
# build in step names and logs.
build_all() {
    local obj=$1 rustc=$2 name=$3
    targets_of "$SRC" "$obj/.config"
    : >"$LOGS/$name-targets.txt"
    [ ${#TARGETS[@]} -eq 0 ] || printf '%s\n' "${TARGETS[@]}" >"$LOGS/$name-targets.txt"
    echo "   ${#TARGETS[@]} Rust targets: ${TARGETS[*]} (in $LOGS/$name-targets.txt)" >&2
    step "$name: make prepare"
    logged "$LOGS/$name-prepare.log" kmake "$obj" "$rustc" V=1 prepare
    step_done
    step "$name: make rust/"
    logged "$LOGS/$name-rust.log" kmake "$obj" "$rustc" V=1 rust/
    step_done
    step "$name: make drivers and samples"
    # -k: a target that fails does not stop the others; the errors of all
    # are shown.
    local log=$LOGS/$name-drivers.log
    if [ ${#TARGETS[@]} -gt 0 ] && ! kmake "$obj" "$rustc" V=1 -k "${TARGETS[@]}" >"$log" 2>&1; then
        echo "---- errors in $log" >&2
        grep -E -A4 '^error(\[E[0-9]+\])?: ' "$log" | head -n 60 >&2 || true
        grep -E 'No rule to make target|^make.*\*\*\* \[[^]]*/Makefile.build' "$log" | awk '!seen[$0]++' >&2 || true
        if grep -q 'No rule to make target' "$log"; then
            if [ -n "$TREE_TARGETS" ]; then
                echo "   (kbuild knows no such target: see --targets)" >&2
            else
                echo "   (kbuild knows no such target: the targets come from the tree's Makefiles through scripts/kernel-targets.py; --targets names them by hand)" >&2
            fi
        fi
        die "step \`$STEP\` failed; full log: $log"
    fi
    step_done "${#TARGETS[@]} targets"
}

# Extraction problems are warnings (KANALYZE_STRICT=0): collect them, each
# with the compiler command line that make printed for that crate (V=1).
# They are kept with the object tree (a crate that is not recompiled keeps
# its problem) and written to logs/extraction-problems.txt.
report_extraction_problems() {
    local out=$LOGS/extraction-problems.txt seen=$OBJ/.kanalyze-problems
    local cmds=$OBJ/.kanalyze-problem-cmds crates c cmd
    mkdir -p "$cmds"
    touch "$seen"
    {
        cat "$seen"
        grep -h -E 'kextract: extraction of crate|error: internal compiler error|panicked at' \
            "$LOGS"/kextract-*.log 2>/dev/null || true
    } | sort -u >"$seen.new"
    mv "$seen.new" "$seen"
    if [ ! -s "$seen" ]; then
        rm -f "$out"
        echo "   no extraction problems" >&2
        return
    fi
    crates=$(sed -n 's/.*extraction of crate `\([^`]*\)`.*/\1/p' "$seen" | sort -u)
    for c in $crates; do
        cmd=$(grep -h -E "kextract .*(--crate-name[= ]$c |/$c\.rs)" "$LOGS"/kextract-*.log | head -n1 || true)
        [ -z "$cmd" ] || echo "$cmd" >"$cmds/$c"
    done
    {
        echo "# kextract problems in the kernel build of $OBJ"
        cat "$seen"
        for c in $crates; do
            echo
            echo "## crate $c: command line (make V=1, cwd $OBJ, env RUSTC_BOOTSTRAP=1)"
            cat "$cmds/$c" 2>/dev/null || echo "(not found in the logs)"
        done
    } >"$out"
    echo "   WARNING: kextract could not extract $(wc -w <<<"$crates") crate(s): $(echo $crates)" >&2
    sed -n 's/.*extraction of crate `[^`]*` failed, no dump written: //p' "$seen" | sort | uniq -c |
        sed 's/^/   | /' >&2
    echo "   details and command lines: $out" >&2
}

step "make rustavailable (kextract)"
logged "$LOGS/rustavailable.log" kmake "$WORK/obj-rustavailable" "$KEXTRACT" rustavailable
step_done "$(grep -m1 'Rust is available' "$LOGS/rustavailable.log" || echo 'see rustavailable.log')"

# Fresh dumps for a new kextract: kbuild does not rebuild when only the
# compiler binary changed, so a changed kextract means a clean object tree.
KEXTRACT_ID=$(sha256sum "$KEXTRACT" | cut -c1-16)
if [ "$CLEAN" = 1 ]; then
    echo "== --clean: removing $OBJ, $OBJ_PLAIN and $KMIR" >&2
    rm -rf "$OBJ" "$OBJ_PLAIN" "$KMIR"
elif [ -d "$OBJ" ] && [ "$(cat "$OBJ/.kanalyze-kextract" 2>/dev/null)" != "$KEXTRACT_ID" ]; then
    echo "== kextract changed since the last build: removing $OBJ and $KMIR" >&2
    rm -rf "$OBJ" "$KMIR"
fi
mkdir -p "$OBJ" "$KMIR"
echo "$KEXTRACT_ID" >"$OBJ/.kanalyze-kextract"

step "kextract: configure"
configure "$OBJ" "$KEXTRACT" kextract
step_done

export KANALYZE_OUT=$KMIR KANALYZE_STRICT=0 KANALYZE_VERBOSE=1
build_all "$OBJ" "$KEXTRACT" kextract
unset KANALYZE_OUT KANALYZE_STRICT KANALYZE_VERBOSE
report_extraction_problems

if [ "$PLAIN" = 1 ]; then
    step "plain: configure"
    configure "$OBJ_PLAIN" "$PLAIN_RUSTC" plain
    step_done
    build_all "$OBJ_PLAIN" "$PLAIN_RUSTC" plain
fi

n_dumps=$(find "$KMIR" -name '*.kmir' | wc -l)
echo "== dumps: $n_dumps files, $(du -sh "$KMIR" | cut -f1) in $KMIR" >&2
[ "$n_dumps" -gt 0 ] || die "no dumps were written"

# ---------------------------------------------------------------- analysis
if [ "$ANALYSE" = 1 ]; then
    step "kanalyze: build"
    (cd "$ROOT" && env -u CARGO_TARGET_DIR cargo build --release --quiet -p kanalyze)
    KANALYZE=$ROOT/target/release/kanalyze
    step_done
    step "dumps"
    {
        printf '%-32s %10s %10s %8s  %s\n' crate instances statics KiB target
        for f in "$KMIR"/*.kmir; do
            hdr=$("$KANALYZE" dump "$f" --no-bodies 2>/dev/null | head -n 12 || true)
            printf '%-32s %10s %10s %8s  %s\n' \
                "$(sed -n 's/^\/\/ crate `\([^`]*\)`.*/\1/p' <<<"$hdr")" \
                "$(sed -n 's/^\/\/ contents: \([0-9]*\) instances.*/\1/p' <<<"$hdr")" \
                "$(sed -n 's/^\/\/ contents: .* \([0-9]*\) statics\{0,1\},.*/\1/p' <<<"$hdr")" \
                "$(( $(stat -c %s "$f") / 1024 ))" \
                "$(sed -n 's/^\/\/ target: //p' <<<"$hdr")"
        done
    } >"$LOGS/dumps.txt"
    sed 's/^/   /' "$LOGS/dumps.txt" >&2
    step_done "$n_dumps dumps, $(du -sh "$KMIR" | cut -f1)"
    step "kanalyze graph --timings"
    "$KANALYZE" graph "$KMIR" --timings 2>&1 | tee "$LOGS/graph.txt" >&2
    step_done
    step "kanalyze check"
    status=0
    # The kernel's settings (scripts/kernel-kanalyze.toml): its declared
    # invariants, audited so the JSON summary says what each removes, and
    # its triage, so that only findings without a verdict, or judged bugs,
    # are shown.
    # A tree of one's own brings its own settings when it has them.
    if [ -n "$TREE" ] && [ -f "$TREE/kanalyze.toml" ]; then
        INVARIANTS=(--config "$TREE/kanalyze.toml" --audit-invariants)
    else
        INVARIANTS=(--config "$ROOT/scripts/kernel-kanalyze.toml" --audit-invariants)
    fi
    /usr/bin/time -o "$LOGS/check.time" -f '%e s wall, %M KiB peak RSS' \
        "$KANALYZE" "$KMIR" --source-root "$SRC" "${INVARIANTS[@]}" >"$LOGS/findings.txt" 2>"$LOGS/findings.stderr" || status=$?
    "$KANALYZE" "$KMIR" --source-root "$SRC" "${INVARIANTS[@]}" --format json >"$LOGS/findings.json" 2>/dev/null || true
    # Exit 3 is a partial result: an input the kernel needs could not be
    # used (the build's host tools and proc-macro crates, which kbuild
    # compiles with the same RUSTC, are left out without it).
    [ "$status" -le 1 ] || { cat "$LOGS/findings.stderr" >&2; die "kanalyze failed (exit $status)"; }
    grep '^kanalyze: ' "$LOGS/findings.txt" >&2
    step_done "$(grep -v '^Command exited' "$LOGS/check.time"); findings in $LOGS/findings.txt and findings.json"
    step "kanalyze build-error"
    # Every `rust_build_error` reference left in the object tree (0 on an
    # unpatched kernel: the build would not link otherwise).
    status=0
    "$KANALYZE" build-error "$OBJ" --dumps "$KMIR" --source-root "$SRC" \
        >"$LOGS/build-error.txt" 2>"$LOGS/build-error.stderr" || status=$?
    [ "$status" -le 1 ] || { cat "$LOGS/build-error.stderr" >&2; die "kanalyze build-error failed (exit $status)"; }
    "$KANALYZE" build-error "$OBJ" --dumps "$KMIR" --source-root "$SRC" --format json \
        >"$LOGS/build-error.json" 2>/dev/null || true
    step_done "$(tail -n 1 "$LOGS/build-error.txt"); in $LOGS/build-error.txt and build-error.json"
    if [ "$STACK" = 1 ]; then
        step "kanalyze stack"
        # Each root's worst-case stack depth from the objects' frame sizes
        # (docs/stack.md), with the kernel's settings and, for the
        # unmodified tree, the verdicts of docs/kernel.md's stack section.
        STACK_SETTINGS=("${INVARIANTS[0]}" "${INVARIANTS[1]}")
        if [ -z "$TREE" ]; then
            STACK_SETTINGS+=(--triage "$ROOT/scripts/kernel-stack-triage.toml")
        fi
        status=0
        /usr/bin/time -o "$LOGS/stack.time" -f '%e s wall, %M KiB peak RSS' \
            "$KANALYZE" stack "$KMIR" --objects "$OBJ" --source-root "$SRC" "${STACK_SETTINGS[@]}" \
            >"$LOGS/stack.txt" 2>"$LOGS/stack.stderr" || status=$?
        [ "$status" -le 1 ] || { cat "$LOGS/stack.stderr" >&2; die "kanalyze stack failed (exit $status)"; }
        "$KANALYZE" stack "$KMIR" --objects "$OBJ" --source-root "$SRC" "${STACK_SETTINGS[@]}" \
            --format json >"$LOGS/stack.json" 2>/dev/null || true
        # The five deepest roots and every frame over the frame limit,
        # whatever the triage hides of the findings.
        python3 - "$LOGS/stack.json" "$SRC/" <<'PY' >&2
import json, sys
doc = json.load(open(sys.argv[1]))
src = sys.argv[2]
s = doc["summary"]
def where(span):
    return f'{span["file"].replace(src, "")}:{span["line"]}' if span else "?"
print(f'   the five deepest of {s["roots"]} roots (limit {s["limit"]} bytes):')
for r in doc["roots"][:5]:
    flags = []
    if not r["bounded"]:
        flags.append("unbounded: reaches a cycle")
    if r["unknown_frames"]:
        flags.append(f'{len(r["unknown_frames"])} unknown frames')
    if r["assumed_c_functions"]:
        flags.append(f'{r["assumed_c_functions"]} C functions at the default')
    extra = f' [{"; ".join(flags)}]' if flags else ""
    print(f'   {r["depth"]:>7}  {r["function"]} ({r["reason"]}){extra}')
frames = doc["large_frames"]
print(f'   {len(frames)} frames over {s["frame_limit"]} bytes{":" if frames else ""}')
for f in frames:
    local = f["locals"][0] if f["locals"] else None
    big = f', largest local {local["name"] or "a temporary"}: {local["type"]} ({local["bytes"]} bytes)' if local else ""
    print(f'   {f["frame_bytes"]:>7}  {f["function"]}  {where(f["span"])}{big}')
PY
        step_done "$(grep -v '^Command exited' "$LOGS/stack.time"); $(tail -n 1 "$LOGS/stack.txt" | cut -c1-160)…; in $LOGS/stack.txt and stack.json"
    fi
fi

# ---------------------------------------------------------------- summary
echo "== timings (s)" >&2
for i in "${!STEP_NAMES[@]}"; do
    printf '   %8s  %s\n' "${STEP_SECS[$i]}" "${STEP_NAMES[$i]}" >&2
done
if [ "$PLAIN" = 1 ]; then
    awk -v k1="$(secs_of 'kextract: make prepare')" -v k2="$(secs_of 'kextract: make rust/')" \
        -v k3="$(secs_of 'kextract: make drivers and samples')" \
        -v p1="$(secs_of 'plain: make prepare')" -v p2="$(secs_of 'plain: make rust/')" \
        -v p3="$(secs_of 'plain: make drivers and samples')" 'BEGIN {
            k = k1 + k2 + k3; p = p1 + p2 + p3
            printf "== extract/plain build time: %.1f s / %.1f s = %.2f\n", k, p, (p > 0 ? k / p : 0)
        }' >&2
    echo "   (meaningful only when both trees were built from scratch: use --clean)" >&2
fi
