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
