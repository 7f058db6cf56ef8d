//! `scripts/kernel.sh --tree DIR --check` on small fake trees: what a
//! developer's own tree is checked for before anything is installed or
//! built (a kernel, with Rust, whose minimum rustc and bindgen versions the
//! pinned nightly and kernel.sh's bindgen meet, not configured in place; a
//! `--config` with Rust), each failure a clear message naming both
//! versions where there are two; and which Rust objects a `--config`
//! makes it build, read from the tree's Makefiles
//! (scripts/kernel-targets.py). Nothing here builds a kernel.

use std::path::{Path, PathBuf};
use std::process::Command;

use test_harness::repo_root;

/// The pinned nightly's rustc release, as scripts/toolchain.sh says.
fn nightly_version() -> String {
    let text =
        std::fs::read_to_string(repo_root().join("scripts/toolchain.sh")).expect("toolchain.sh");
    text.lines()
        .find_map(|l| l.strip_prefix("NIGHTLY_RUSTC_VERSION="))
        .expect("NIGHTLY_RUSTC_VERSION in toolchain.sh")
        .trim()
        .to_string()
}

/// A tree that looks like Linux `version` (`7.3.4`) with Rust, whose
/// scripts/min-tool-version.sh says `rustc` and `bindgen`.
fn fake_tree(root: &Path, version: &str, rustc: &str, bindgen: &str) -> PathBuf {
    let tree = root.join("linux");
    let mut parts = version.split('.');
    let (v, p, s) = (
        parts.next().unwrap_or("0"),
        parts.next().unwrap_or("0"),
        parts.next().unwrap_or("0"),
    );
    std::fs::create_dir_all(tree.join("rust")).unwrap();
    std::fs::create_dir_all(tree.join("init")).unwrap();
    std::fs::create_dir_all(tree.join("scripts")).unwrap();
    std::fs::write(
        tree.join("Makefile"),
        format!("# SPDX-License-Identifier: GPL-2.0\nVERSION = {v}\nPATCHLEVEL = {p}\nSUBLEVEL = {s}\nEXTRAVERSION =\nNAME = Baby Opossum Posse\n"),
    )
    .unwrap();
    std::fs::write(tree.join("Kconfig"), "mainmenu \"Linux\"\n").unwrap();
    std::fs::write(
        tree.join("init/Kconfig"),
        "config CC_IS_GCC\n\tdef_bool y\n\nconfig RUST\n\tbool \"Rust support\"\n",
    )
    .unwrap();
    std::fs::write(
        tree.join("scripts/min-tool-version.sh"),
        format!(
            "#!/bin/sh\ncase \"$1\" in\nrustc) echo {rustc} ;;\nbindgen) echo {bindgen} ;;\n*) echo \"$1: unknown tool\" >&2; exit 1 ;;\nesac\n"
        ),
    )
    .unwrap();
    tree
}

struct Run {
    code: Option<i32>,
    stderr: String,
}

fn kernel_sh(work: &Path, args: &[&str]) -> Run {
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/kernel.sh"))
        .args(args)
        .env("KANALYZE_KERNEL_WORK", work)
        .env("KANALYZE_KERNEL_CACHE", work.join("cache"))
        .output()
        .expect("run bash");
    Run {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `--tree TREE --check` (plus `extra`); the work directory is a
/// sibling of the tree.
fn check(root: &Path, tree: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["--tree", tree.to_str().unwrap(), "--check"];
    args.extend_from_slice(extra);
    kernel_sh(&root.join("work"), &args)
}

fn fails_with(run: &Run, needles: &[&str]) {
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    for n in needles {
        assert!(run.stderr.contains(n), "`{n}` not in:\n{}", run.stderr);
    }
}

#[test]
fn a_tree_that_fits_passes_the_check_and_nothing_is_written() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.3.4", "1.85.0", "0.71.1");
    let run = check(root.path(), &tree, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "Linux 7.3.4 in {}: needs rustc >= 1.85.0 (kextract: {})",
            tree.display(),
            nightly_version()
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("the tree fits"), "{}", run.stderr);
    // `--check` creates nothing, in the tree or beside it.
    assert!(!root.path().join("work").exists());
    let mut names: Vec<String> = std::fs::read_dir(&tree)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["Kconfig", "Makefile", "init", "rust", "scripts"]);
}

#[test]
fn not_a_directory_or_not_a_kernel() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("nowhere");
    fails_with(&check(root.path(), &missing, &[]), &["no such directory"]);
    let file = root.path().join("file");
    std::fs::write(&file, "").unwrap();
    fails_with(&check(root.path(), &file, &[]), &["not a directory"]);
    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    fails_with(
        &check(root.path(), &empty, &[]),
        &["is not a Linux kernel tree"],
    );
}

#[test]
fn a_tree_without_rust() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "5.15.0", "1.85.0", "0.71.1");
    std::fs::remove_dir(tree.join("rust")).unwrap();
    fails_with(
        &check(root.path(), &tree, &[]),
        &[
            "Linux 5.15.0",
            "without Rust support",
            "Linux 6.1 and later",
        ],
    );
}

#[test]
fn a_tree_that_needs_a_newer_rustc_or_bindgen_names_both_versions() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.9.0", "9.99.0", "0.71.1");
    fails_with(
        &check(root.path(), &tree, &[]),
        &[
            "needs rustc >= 9.99.0",
            &format!("rustc {}", nightly_version()),
            "nightly-2026-05-20",
        ],
    );
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.9.0", "1.85.0", "0.99.0");
    fails_with(
        &check(root.path(), &tree, &[]),
        &["needs bindgen >= 0.99.0", "bindgen-cli 0.72.1"],
    );
}

#[test]
fn an_old_tree_pinned_to_one_rustc_is_a_warning() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "6.6.0", "1.73.0", "0.65.1");
    let run = check(root.path(), &tree, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("WARNING: Linux 6.6.0 was written for rustc 1.73.0 exactly"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_tree_configured_in_place_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.3.0", "1.85.0", "0.71.1");
    std::fs::write(tree.join(".config"), "CONFIG_RUST=y\n").unwrap();
    fails_with(
        &check(root.path(), &tree, &[]),
        &[
            "configured or built in place (.config)",
            "make mrproper",
            "--config",
        ],
    );
}

#[test]
fn config_files_must_exist_and_enable_rust() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.3.0", "1.85.0", "0.71.1");
    let missing = root.path().join("missing.config");
    fails_with(
        &check(root.path(), &tree, &["--config", missing.to_str().unwrap()]),
        &["--config", "no such file"],
    );
    let no_rust = root.path().join("no-rust.config");
    std::fs::write(&no_rust, "CONFIG_64BIT=y\n# CONFIG_RUST is not set\n").unwrap();
    fails_with(
        &check(root.path(), &tree, &["--config", no_rust.to_str().unwrap()]),
        &["does not enable Rust", "CONFIG_RUST=y"],
    );
    let rust = root.path().join("rust.config");
    std::fs::write(&rust, "CONFIG_64BIT=y\nCONFIG_RUST=y\n").unwrap();
    let run = check(root.path(), &tree, &["--config", rust.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("no debug info"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("config {}", rust.display())),
        "{}",
        run.stderr
    );
}

#[test]
fn the_work_directory_may_not_be_inside_the_tree() {
    let root = tempfile::tempdir().unwrap();
    let tree = fake_tree(root.path(), "7.3.0", "1.85.0", "0.71.1");
    let run = kernel_sh(
        &tree.join("out"),
        &["--tree", tree.to_str().unwrap(), "--check"],
    );
    fails_with(&run, &["is inside the tree", "KANALYZE_KERNEL_WORK"]);
    assert!(!tree.join("out").exists());
}

#[test]
fn usage_errors() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    for (args, needle) in [
        (&["--config", "x"][..], "--config is for --tree"),
        (&["--check"][..], "--check is for --tree"),
        (&["--targets", "a.o"][..], "--targets is for --tree"),
        (&["--tree"][..], "`--tree` needs a value"),
        (&["--bogus"][..], "unknown argument `--bogus`"),
    ] {
        let run = kernel_sh(&work, args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    assert!(!work.exists());
}

/// Writes `text` at `path` in the tree, creating its directories.
fn put(tree: &Path, path: &str, text: &str) {
    let path = tree.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The Rust parts every layout below shares: lib/ reached through the top
/// Makefile's `libs-y`, PHY drivers (one behind an `ifdef`), a null block
/// driver whose option is off, a KASAN test that is off, samples (a
/// composite with a C part, a Rust host program in a subdirectory), and
/// rust/ (built by `make rust/`, never a target).
fn rust_tree(root: &Path) -> PathBuf {
    let tree = fake_tree(root, "7.3.0", "1.85.0", "0.71.1");
    let top = std::fs::read_to_string(tree.join("Makefile")).unwrap();
    put(&tree, "Makefile", &format!("{top}libs-y\t\t:= lib/\n"));
    put(
        &tree,
        "Kbuild",
        "obj-y\t\t\t+= mm/\nobj-$(CONFIG_RUST)\t+= rust/\nobj-y\t\t\t+= drivers/\nobj-$(CONFIG_SAMPLES)\t+= samples/\n",
    );
    put(&tree, "rust/Makefile", "obj-$(CONFIG_RUST) += ffi.o\n");
    put(&tree, "rust/ffi.rs", "");
    put(
        &tree,
        "drivers/Makefile",
        "obj-y += gpu/\nobj-y += block/\nobj-$(CONFIG_PHYLIB) += net/phy/\n",
    );
    put(
        &tree,
        "drivers/net/phy/Makefile",
        "obj-$(CONFIG_PHYLIB) += phy_device.o\n\
         ifdef CONFIG_AX88796B_RUST_PHY\n  obj-$(CONFIG_AX88796B_PHY)\t+= ax88796b_rust.o\n\
         else\n  obj-$(CONFIG_AX88796B_PHY)\t+= ax88796b.o\nendif\n\
         obj-$(CONFIG_AMCC_QT2025_PHY)\t+= qt2025.o\n",
    );
    for f in [
        "phy_device.c",
        "ax88796b.c",
        "ax88796b_rust.rs",
        "qt2025.rs",
    ] {
        put(&tree, &format!("drivers/net/phy/{f}"), "");
    }
    put(
        &tree,
        "drivers/block/Makefile",
        "obj-$(CONFIG_BLK_DEV_RUST_NULL) += rnull/\n",
    );
    put(
        &tree,
        "drivers/block/rnull/Makefile",
        "obj-$(CONFIG_BLK_DEV_RUST_NULL) += rnull_mod.o\nrnull_mod-y := rnull.o\n",
    );
    put(&tree, "drivers/block/rnull/rnull.rs", "");
    put(&tree, "drivers/block/rnull/configfs.rs", "");
    put(
        &tree,
        "lib/Makefile",
        "obj-$(CONFIG_FIND_BIT_BENCHMARK_RUST) += find_bit_benchmark_rust.o\n",
    );
    put(&tree, "lib/find_bit_benchmark_rust.rs", "");
    put(&tree, "mm/Makefile", "obj-$(CONFIG_KASAN) += kasan/\n");
    put(
        &tree,
        "mm/kasan/Makefile",
        "kasan_test-objs := kasan_test_c.o\nifdef CONFIG_RUST\n\tkasan_test-objs += kasan_test_rust.o\nendif\n\
         obj-$(CONFIG_KASAN_KUNIT_TEST) += kasan_test.o\n",
    );
    put(&tree, "mm/kasan/kasan_test_rust.rs", "");
    put(
        &tree,
        "samples/Makefile",
        "obj-$(CONFIG_SAMPLES_RUST) += rust/\n",
    );
    put(
        &tree,
        "samples/rust/Makefile",
        "ccflags-y += -I$(src)\t\t# needed for trace events\n\n\
         obj-$(CONFIG_SAMPLE_RUST_MINIMAL)\t\t+= rust_minimal.o\n\
         obj-$(CONFIG_SAMPLE_RUST_PRINT)\t\t\t+= rust_print.o\n\
         obj-$(CONFIG_SAMPLE_RUST_DMA)\t\t\t+= rust_dma.o\n\n\
         rust_print-y := rust_print_main.o rust_print_events.o\n\n\
         subdir-$(CONFIG_SAMPLE_RUST_HOSTPROGS)\t\t+= hostprogs\n",
    );
    for f in [
        "rust_minimal.rs",
        "rust_print_main.rs",
        "rust_print_events.c",
        "rust_dma.rs",
    ] {
        put(&tree, &format!("samples/rust/{f}"), "");
    }
    put(
        &tree,
        "samples/rust/hostprogs/Makefile",
        "hostprogs-always-y := single\n\nsingle-rust := y\n",
    );
    for f in ["single.rs", "a.rs", "b.rs"] {
        put(&tree, &format!("samples/rust/hostprogs/{f}"), "");
    }
    tree
}

/// Linux 7.3's nova: composites of drivers/gpu/Makefile made of objects in
/// subdirectories, whose own Makefiles only mark them for rust-analyzer.
fn nova_as_in_7_3(tree: &Path) {
    put(
        tree,
        "drivers/gpu/Makefile",
        "obj-y\t\t\t+= drm/\n\n\
         obj-$(CONFIG_NOVA_CORE) += nova-core.o\n\
         nova-core-y := nova-core/nova_core.o nova-core/nova_core_exports.o\n\n\
         obj-$(CONFIG_DRM_NOVA) += nova-drm.o\nnova-drm-y := drm/nova/nova.o\n\n\
         $(obj)/drm/nova/nova.o: $(obj)/nova-core/nova_core.o\n\
         RUSTFLAGS_drm/nova/nova.o := -L $(objtree)/$(obj)/nova-core --extern nova_core\n",
    );
    put(
        tree,
        "drivers/gpu/nova-core/Makefile",
        "# SPDX-License-Identifier: GPL-2.0\n\n# nova_core.o (rust-analyzer marker - DO NOT REMOVE).\n",
    );
    put(
        tree,
        "drivers/gpu/drm/Makefile",
        "obj-$(CONFIG_DRM) += drm.o\ndrm-y := drm_drv.o\n\
         drm-$(CONFIG_DRM_PANIC_SCREEN_QR_CODE) += drm_panic_qr.o\n\
         obj-$(CONFIG_DRM_TYR) += tyr/\n",
    );
    put(
        tree,
        "drivers/gpu/drm/nova/Makefile",
        "# SPDX-License-Identifier: GPL-2.0\n\n# nova.o (rust-analyzer marker - DO NOT REMOVE).\n",
    );
    put(
        tree,
        "drivers/gpu/drm/tyr/Makefile",
        "obj-$(CONFIG_DRM_TYR) += tyr.o\n",
    );
    for f in [
        "nova-core/nova_core.rs",
        "nova-core/gpu.rs",
        "nova-core/nova_core_exports.c",
        "drm/nova/nova.rs",
        "drm/nova/driver.rs",
        "drm/drm_drv.c",
        "drm/drm_panic_qr.rs",
        "drm/tyr/tyr.rs",
    ] {
        put(tree, &format!("drivers/gpu/{f}"), "");
    }
}

/// Linux 7.2's nova: each composite in its own directory's Makefile.
fn nova_as_in_7_2(tree: &Path) {
    nova_as_in_7_3(tree);
    put(
        tree,
        "drivers/gpu/Makefile",
        "obj-y\t\t\t+= drm/\nobj-$(CONFIG_NOVA_CORE)\t\t+= nova-core/\n",
    );
    put(
        tree,
        "drivers/gpu/nova-core/Makefile",
        "# SPDX-License-Identifier: GPL-2.0\n\nobj-$(CONFIG_NOVA_CORE) += nova-core.o\nnova-core-y := nova_core.o\n",
    );
    let drm = std::fs::read_to_string(tree.join("drivers/gpu/drm/Makefile")).unwrap();
    put(
        tree,
        "drivers/gpu/drm/Makefile",
        &format!("{drm}obj-$(CONFIG_DRM_NOVA) += nova/\n"),
    );
    put(
        tree,
        "drivers/gpu/drm/nova/Makefile",
        "obj-$(CONFIG_DRM_NOVA) += nova-drm.o\nnova-drm-y := nova.o\n",
    );
}

/// A .config with Rust and the given options.
fn rust_config(root: &Path, options: &[&str]) -> PathBuf {
    let path = root.join("rust.config");
    let mut text = String::from("CONFIG_64BIT=y\nCONFIG_RUST=y\nCONFIG_DEBUG_INFO_DWARF5=y\n");
    for o in options {
        text.push_str(&format!("CONFIG_{o}\n"));
    }
    text.push_str("# CONFIG_BLK_DEV_RUST_NULL is not set\n");
    std::fs::write(&path, text).unwrap();
    path
}

const OPTIONS: &[&str] = &[
    "PHYLIB=y",
    "AX88796B_PHY=m",
    "AMCC_QT2025_PHY=m",
    "DRM=y",
    "DRM_PANIC_SCREEN_QR_CODE=y",
    "NOVA_CORE=m",
    "DRM_NOVA=m",
    "DRM_TYR=m",
    "FIND_BIT_BENCHMARK_RUST=m",
    "SAMPLES=y",
    "SAMPLES_RUST=y",
    "SAMPLE_RUST_MINIMAL=m",
    "SAMPLE_RUST_PRINT=m",
    "SAMPLE_RUST_HOSTPROGS=y",
];

/// `--check --config`: the targets it prints, and its notes.
fn targets(root: &Path, tree: &Path, config: &Path) -> (Vec<String>, String) {
    let run = check(root, tree, &["--config", config.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("Rust targets with"))
        .unwrap_or_else(|| panic!("no targets in:\n{}", run.stderr));
    let list = line.split_once(": ").unwrap().1;
    (
        list.split_whitespace().map(String::from).collect(),
        run.stderr,
    )
}

#[test]
fn the_rust_objects_are_read_from_the_makefiles_7_3_layout() {
    let root = tempfile::tempdir().unwrap();
    let tree = rust_tree(root.path());
    nova_as_in_7_3(&tree);
    let config = rust_config(root.path(), OPTIONS);
    let (got, stderr) = targets(root.path(), &tree, &config);
    assert_eq!(
        got,
        [
            // a member of drm.o in the Makefile's own directory: itself
            "drivers/gpu/drm/drm_panic_qr.o",
            "drivers/gpu/drm/tyr/tyr.o",
            // members in subdirectories: their composites
            "drivers/gpu/nova-core.o",
            "drivers/gpu/nova-drm.o",
            "drivers/net/phy/qt2025.o",
            "lib/find_bit_benchmark_rust.o",
            // a Rust host program: its directory
            "samples/rust/hostprogs/",
            "samples/rust/rust_minimal.o",
            "samples/rust/rust_print_main.o",
        ],
        "{stderr}"
    );
    for note in [
        "drivers/net/phy/ax88796b_rust.o (drivers/net/phy/ax88796b_rust.rs) left out: `ifdef CONFIG_AX88796B_RUST_PHY` does not hold in drivers/net/phy/Makefile",
        "drivers/block/rnull/rnull.o (drivers/block/rnull/rnull.rs) left out: CONFIG_BLK_DEV_RUST_NULL is off (drivers/block/rnull/Makefile)",
        "mm/kasan/kasan_test_rust.o (mm/kasan/kasan_test_rust.rs) left out: CONFIG_KASAN_KUNIT_TEST is off (mm/kasan/Makefile)",
        "samples/rust/rust_dma.o (samples/rust/rust_dma.rs) left out: CONFIG_SAMPLE_RUST_DMA is off (samples/rust/Makefile)",
    ] {
        assert!(stderr.contains(note), "`{note}` not in:\n{stderr}");
    }
    // Module files, rust/ and the host programs' other files are no targets.
    for quiet in ["configfs", "gpu.rs", "driver.rs", "ffi", "hostprogs/a.rs"] {
        assert!(!stderr.contains(quiet), "`{quiet}` in:\n{stderr}");
    }
}

#[test]
fn the_rust_objects_are_read_from_the_makefiles_7_2_layout() {
    let root = tempfile::tempdir().unwrap();
    let tree = rust_tree(root.path());
    nova_as_in_7_2(&tree);
    let config = rust_config(root.path(), OPTIONS);
    let (got, stderr) = targets(root.path(), &tree, &config);
    assert_eq!(
        got,
        [
            "drivers/gpu/drm/drm_panic_qr.o",
            // composites in their own directories' Makefiles: the members
            "drivers/gpu/drm/nova/nova.o",
            "drivers/gpu/drm/tyr/tyr.o",
            "drivers/gpu/nova-core/nova_core.o",
            "drivers/net/phy/qt2025.o",
            "lib/find_bit_benchmark_rust.o",
            "samples/rust/hostprogs/",
            "samples/rust/rust_minimal.o",
            "samples/rust/rust_print_main.o",
        ],
        "{stderr}"
    );
}

#[test]
fn options_that_are_off_leave_their_objects_and_directories_out() {
    let root = tempfile::tempdir().unwrap();
    let tree = rust_tree(root.path());
    nova_as_in_7_2(&tree);
    // The Rust PHY on; nova-core, the host programs and (in a config that
    // did not go through Kconfig) the samples' directory off.
    let options: Vec<&str> = OPTIONS
        .iter()
        .copied()
        .filter(|o| !["NOVA_CORE=m", "SAMPLE_RUST_HOSTPROGS=y", "SAMPLES_RUST=y"].contains(o))
        .chain(["AX88796B_RUST_PHY=y"])
        .collect();
    let config = rust_config(root.path(), &options);
    let (got, stderr) = targets(root.path(), &tree, &config);
    assert_eq!(
        got,
        [
            "drivers/gpu/drm/drm_panic_qr.o",
            "drivers/gpu/drm/nova/nova.o",
            "drivers/gpu/drm/tyr/tyr.o",
            "drivers/net/phy/ax88796b_rust.o",
            "drivers/net/phy/qt2025.o",
            "lib/find_bit_benchmark_rust.o",
        ],
        "{stderr}"
    );
    for note in [
        "drivers/gpu/nova-core/nova_core.o (drivers/gpu/nova-core/nova_core.rs) left out: CONFIG_NOVA_CORE is off (drivers/gpu/nova-core/Makefile)",
        "samples/rust/rust_minimal.o (samples/rust/rust_minimal.rs) left out: kbuild does not enter samples/rust/: CONFIG_SAMPLES_RUST is off (samples/Makefile)",
        "samples/rust/hostprogs/ (samples/rust/hostprogs/single.rs) left out: kbuild does not enter samples/rust/hostprogs/: CONFIG_SAMPLE_RUST_HOSTPROGS is off (samples/rust/Makefile)",
    ] {
        assert!(stderr.contains(note), "`{note}` not in:\n{stderr}");
    }
}

#[test]
fn targets_given_are_taken_as_they_are() {
    let root = tempfile::tempdir().unwrap();
    let tree = rust_tree(root.path());
    let run = check(
        root.path(),
        &tree,
        &["--targets", "drivers/foo/foo.o samples/rust/"],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("targets (--targets): drivers/foo/foo.o samples/rust/"),
        "{}",
        run.stderr
    );
    assert!(!root.path().join("work").exists());
}
