#!/usr/bin/env bash
# The whole test suite: formatting, lints and every test (the end-to-end
# tests compile fixture crates through kextract). This is what CI runs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/scripts/toolchain.sh"
cd "$ROOT"

ensure_nightly

echo "== format"
cargo fmt --all -- --check
in_extractor cargo fmt -- --check

echo "== lints"
cargo clippy --workspace --all-targets --quiet -- -D warnings
in_extractor cargo clippy --all-targets --quiet -- -D warnings

echo "== build the extractor"
in_extractor cargo build --bins --quiet

echo "== tests"
cargo test --workspace
