# Mirrors the README's commands; nothing requires `just`.

# Run the main job on the bundled example.
demo:
    ./scripts/demo.sh

# Run the whole test suite (what CI runs).
test:
    ./scripts/test.sh

# Extract the crates.io corpus and print its numbers (minutes).
corpus:
    cargo test --release -p test-harness --test corpus -- --ignored --nocapture

# Build the Rust part of Linux 7.3 with kextract and analyse the dumps
# (first run 5-10 min: packages, bindgen, source; see scripts/kernel.sh --help).
kernel *ARGS:
    ./scripts/kernel.sh {{ARGS}}

# Re-introduce known kernel Rust bugs (scripts/kernel-bugs/*.patch) one at a
# time and show what kanalyze reports (needs a `just kernel` run first).
kernel-bugs *PATCHES:
    ./scripts/kernel-bugs.sh {{PATCHES}}
