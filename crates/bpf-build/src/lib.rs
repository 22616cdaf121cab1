//! Compiles the project's eBPF programs (C, in `bpf/`) from a crate's build
//! script, so every crate that loads a BPF program builds it the same way.
//!
//! ```ignore
//! // build.rs
//! fn main() { detpath_bpf_build::compile("xsk_redirect"); }
//! // lib code
//! static OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xsk_redirect.bpf.o"));
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's `bpf/` directory, found from the calling crate's manifest dir
/// (`crates/<name>` → `../../bpf`).
pub fn bpf_dir() -> PathBuf {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("run from a build script");
    Path::new(&manifest).join("../../bpf")
}

/// Compiles `bpf/<name>.bpf.c` to `$OUT_DIR/<name>.bpf.o`.
///
/// Panics (the build-script way of failing) with the command to fix the
/// machine when clang is missing or the program does not compile.
pub fn compile(name: &str) {
    let dir = bpf_dir();
    let src = dir.join(format!("{name}.bpf.c"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("run from a build script")).join(format!("{name}.bpf.o"));
    println!("cargo:rerun-if-changed={}", src.display());
    for entry in std::fs::read_dir(&dir).expect("bpf/ directory exists").flatten() {
        if entry.path().extension().is_some_and(|e| e == "h") {
            println!("cargo:rerun-if-changed={}", entry.path().display());
        }
    }
    let clang = std::env::var("BPF_CLANG").unwrap_or_else(|_| "clang".into());
    let status = Command::new(&clang)
        .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf", "-D__TARGET_ARCH_x86"])
        // Debian keeps asm/types.h under the multiarch directory, which the BPF target does not search.
        .arg("-I/usr/include/x86_64-linux-gnu")
        .arg(format!("-I{}", dir.display()))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("cannot run `{clang}` to build {}: {e}. Install it with `make deps` (apt-get install clang libbpf-dev)", src.display()));
    if !status.success() {
        panic!("clang failed to compile {} (see the errors above)", src.display());
    }
}
