# Sourced by kernel.sh: what `--tree DIR [--config FILE]` checks before
# anything is installed or built, so that a tree that cannot work says so
# at once, naming the versions. Needs `die`, BINDGEN_VERSION and
# NIGHTLY/NIGHTLY_RUSTC_VERSION (toolchain.sh).

# Whether version $1 >= version $2 (dotted numbers).
version_ge() {
    [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

# A variable of the tree's top Makefile (VERSION, PATCHLEVEL, …).
makefile_var() {
    sed -n "s/^$1[[:space:]]*=[[:space:]]*\\([^[:space:]]*\\).*/\\1/p" "$TREE/Makefile" | head -n1
}

# The tree's minimum version of tool $1 for x86_64, or empty.
min_tool_version() {
    ARCH=x86_64 SRCARCH=x86 sh "$TREE/scripts/min-tool-version.sh" "$1" 2>/dev/null || true
}

# Checks the tree $TREE and the config file $TREE_CONFIG (may be empty);
# sets TREE_KVER. Every failure names what was expected and what was found.
check_tree() {
    [ -e "$TREE" ] || die "--tree \`$TREE\`: no such directory"
    [ -d "$TREE" ] || die "--tree \`$TREE\`: not a directory"
    TREE=$(cd "$TREE" && pwd)
    if [ ! -f "$TREE/Makefile" ] || [ -z "$(makefile_var VERSION)" ] || [ -z "$(makefile_var PATCHLEVEL)" ] ||
        [ ! -f "$TREE/Kconfig" ]; then
        die "\`$TREE\` is not a Linux kernel tree (no top-level Makefile with VERSION and PATCHLEVEL, or no Kconfig)"
    fi
    local v p s
    v=$(makefile_var VERSION) p=$(makefile_var PATCHLEVEL) s=$(makefile_var SUBLEVEL)
    TREE_KVER=$v.$p.${s:-0}
    # Rust support: the `rust/` directory and `config RUST` (Linux 6.1 on).
    if [ ! -d "$TREE/rust" ] || ! grep -qs '^config RUST$' "$TREE/init/Kconfig"; then
        die "\`$TREE\` is Linux $TREE_KVER without Rust support (no rust/ directory or no \`config RUST\` in init/Kconfig): Rust is in Linux 6.1 and later"
    fi
    [ -f "$TREE/scripts/min-tool-version.sh" ] ||
        die "\`$TREE\` (Linux $TREE_KVER) has no scripts/min-tool-version.sh: cannot tell which Rust it needs"
    local rustc_min bindgen_min
    rustc_min=$(min_tool_version rustc)
    bindgen_min=$(min_tool_version bindgen)
    [ -n "$rustc_min" ] ||
        die "\`$TREE\` (Linux $TREE_KVER): scripts/min-tool-version.sh names no minimum rustc, so the tree does not build Rust"
    if ! version_ge "$NIGHTLY_RUSTC_VERSION" "$rustc_min"; then
        die "Linux $TREE_KVER in \`$TREE\` needs rustc >= $rustc_min (scripts/min-tool-version.sh), but kextract is built on $NIGHTLY, rustc $NIGHTLY_RUSTC_VERSION: use a tree that accepts rustc $NIGHTLY_RUSTC_VERSION, or move the extractor to a newer nightly (extractor/rust-toolchain.toml, scripts/toolchain.sh)"
    fi
    if [ -n "$bindgen_min" ] && ! version_ge "$BINDGEN_VERSION" "$bindgen_min"; then
        die "Linux $TREE_KVER in \`$TREE\` needs bindgen >= $bindgen_min (scripts/min-tool-version.sh), but kernel.sh installs bindgen-cli $BINDGEN_VERSION: raise BINDGEN_VERSION in scripts/kernel.sh"
    fi
    # Before 6.11 the kernel named the one rustc it was written for; a
    # newer one is refused by nothing but often fails on unstable features.
    if ! version_ge "$TREE_KVER" 6.11.0 && [ "$rustc_min" != "$NIGHTLY_RUSTC_VERSION" ]; then
        echo "   WARNING: Linux $TREE_KVER was written for rustc $rustc_min exactly (before 6.11 the kernel pinned one version); rustc $NIGHTLY_RUSTC_VERSION ($NIGHTLY) may not build it" >&2
    fi
    # kbuild refuses an O= build of a tree configured or built in place.
    if [ -f "$TREE/.config" ] || [ -d "$TREE/include/config" ]; then
        die "\`$TREE\` has been configured or built in place ($( [ -f "$TREE/.config" ] && echo .config || echo include/config)): kbuild refuses to build it into another object directory, and kernel.sh never writes into the tree. Copy your .config elsewhere, run \`make mrproper\` in the tree, and pass --config with the copy"
    fi
    if [ -n "$TREE_CONFIG" ]; then
        [ -f "$TREE_CONFIG" ] || die "--config \`$TREE_CONFIG\`: no such file"
        TREE_CONFIG=$(cd "$(dirname "$TREE_CONFIG")" && pwd)/$(basename "$TREE_CONFIG")
        grep -qx 'CONFIG_RUST=y' "$TREE_CONFIG" ||
            die "--config \`$TREE_CONFIG\` does not enable Rust (no \`CONFIG_RUST=y\`): there would be nothing to analyse"
        grep -qE '^CONFIG_DEBUG_INFO_(DWARF[45]|DWARF_TOOLCHAIN_DEFAULT)=y' "$TREE_CONFIG" ||
            echo "   note: --config has no debug info (CONFIG_DEBUG_INFO_DWARF*): \`kanalyze build-error\` will name functions but not the inlined calls" >&2
    fi
    # The work directory must not be in the tree.
    case "$WORK/" in
        "$TREE"/*) die "the work directory \`$WORK\` is inside the tree \`$TREE\`: set KANALYZE_KERNEL_WORK outside it (kernel.sh never writes into the tree)" ;;
    esac
    local config="no --config: x86_64_defconfig with the options of kernel.sh"
    [ -z "$TREE_CONFIG" ] || config="config $TREE_CONFIG"
    echo "   Linux $TREE_KVER in $TREE: needs rustc >= $rustc_min (kextract: $NIGHTLY_RUSTC_VERSION), bindgen >= ${bindgen_min:-?} (kernel.sh: $BINDGEN_VERSION); $config" >&2
}
