# Sourced by the other scripts: makes sure the extractor's pinned nightly and
# its components are installed (rustup does nothing if they already are).
NIGHTLY=nightly-2026-05-20
# The rustc release of that nightly (`rustc -vV`'s `release:` without
# `-nightly`): what a kernel tree's minimum Rust version is compared with
# before anything is built. kernel.sh checks it against kextract -vV.
NIGHTLY_RUSTC_VERSION=1.97.0

ensure_nightly() {
    if ! command -v rustup >/dev/null 2>&1; then
        echo "error: rustup is required to install the extractor's pinned toolchain ($NIGHTLY)" >&2
        exit 2
    fi
    # thumbv7em-none-eabihf: the `core` the firmware fixture is built with.
    if ! rustup toolchain install "$NIGHTLY" --profile minimal \
        --component rustc-dev,rust-src,llvm-tools,rustfmt,clippy \
        --target thumbv7em-none-eabihf >/tmp/kanalyze-rustup.log 2>&1; then
        echo "error: could not install $NIGHTLY with rustc-dev (needed by kextract):" >&2
        cat /tmp/kanalyze-rustup.log >&2
        exit 2
    fi
}

# The stable toolchain of the rest of the workspace must not leak into the
# extractor's build, and vice versa.
in_extractor() {
    (cd "$ROOT/extractor" && env -u RUSTUP_TOOLCHAIN -u RUSTC -u RUSTDOC -u CARGO_TARGET_DIR "$@")
}
