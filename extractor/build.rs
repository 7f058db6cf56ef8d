//! kextract links `librustc_driver-*.so` from the pinned toolchain. Record
//! that toolchain's library directory as the binary's rpath, so `kextract`
//! runs from anywhere (as `RUSTC=`, from make, from cargo) without
//! `LD_LIBRARY_PATH`, and remember the exact compiler version for dump headers.
use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .arg("--print=sysroot")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(sysroot) = sysroot {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{sysroot}/lib");
    } else {
        println!(
            "cargo:warning=could not ask `{rustc}` for its sysroot: kextract will need LD_LIBRARY_PATH"
        );
    }
    let version = Command::new(&rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown rustc".into());
    println!("cargo:rustc-env=KEXTRACT_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
