//! Whether a target is one the kernel is built for: the loader prefers
//! such dumps and the profile is detected from them.

/// Names of targets the kernel is built for: a target JSON file (x86, UML;
/// rustc names it by the file's stem and a hash of its contents,
/// `target-5637172677741850002`, or by its path) or a bare-metal triple
/// (`aarch64-unknown-none`, `riscv64imac-unknown-none-elf`,
/// `loongarch64-unknown-none-softfloat`).
pub fn is_kernel_target(target: &str) -> bool {
    let hashed_json = target
        .rsplit_once('-')
        .is_some_and(|(_, hash)| hash.len() >= 8 && hash.bytes().all(|b| b.is_ascii_digit()));
    target.ends_with(".json") || hashed_json || target.split('-').any(|part| part == "none")
}

#[cfg(test)]
mod tests {
    use super::is_kernel_target;

    #[test]
    fn kernel_targets() {
        for t in [
            "target-5637172677741850002",
            "rust-target-123456789012",
            "arch/x86/target.json",
            "aarch64-unknown-none",
            "riscv64imac-unknown-none-elf",
            "loongarch64-unknown-none-softfloat",
        ] {
            assert!(is_kernel_target(t), "{t}");
        }
        for t in [
            "x86_64-unknown-linux-gnu",
            "aarch64-apple-darwin",
            "x86_64-pc-windows-msvc",
            "riscv64gc-unknown-linux-musl",
            "wasm32-wasip1",
        ] {
            assert!(!is_kernel_target(t), "{t}");
        }
    }
}
