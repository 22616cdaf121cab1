//! Finds Debian's DPDK with pkg-config and compiles the C shim against it.
//! Without libdpdk the build stops with a message naming the fix.

fn main() {
    println!("cargo:rerun-if-changed=csrc/shim.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let lib = match pkg_config::Config::new().atleast_version("21.11").cargo_metadata(true).probe("libdpdk") {
        Ok(lib) => lib,
        Err(e) => {
            eprintln!(
                "\n\ndetpath-dpdk-sys: DPDK was not found by pkg-config ({e}).\n\
                 Fix: `apt-get install dpdk-dev libdpdk-dev pkg-config` (or `make deps`),\n\
                 or build without the DPDK datapath: `cargo build --no-default-features`\n\
                 (then `dpdk://` endpoints report that the build lacks DPDK).\n\n"
            );
            panic!("libdpdk not found by pkg-config: apt-get install libdpdk-dev (or make deps)");
        }
    };
    let mut build = cc::Build::new();
    build
        .file("csrc/shim.c")
        .warnings(true)
        .flag_if_supported("-Wno-unused-parameter")
        .flag("-Werror=implicit-function-declaration")
        .flag("-Werror=int-conversion");
    for p in &lib.include_paths {
        build.include(p);
    }
    // pkg-config --cflags also carries `-include rte_config.h` and `-march=...`,
    // which the include paths above do not: pass them through.
    let cflags = std::process::Command::new("pkg-config").args(["--cflags", "libdpdk"]).output();
    if let Ok(out) = cflags {
        let s = String::from_utf8_lossy(&out.stdout).to_string();
        let mut it = s.split_whitespace();
        while let Some(f) = it.next() {
            if f == "-include" {
                if let Some(h) = it.next() {
                    build.flag("-include").flag(h);
                }
            } else if f.starts_with("-march=") || f.starts_with("-D") || f.starts_with("-m") {
                build.flag(f);
            }
        }
    }
    build.compile("detpath_dpdk_shim");
    // libdpdk.pc lists the libraries; the PMDs are loaded by the EAL from its
    // plugin directory at init, so nothing else needs linking.
}
