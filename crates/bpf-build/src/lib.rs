//! Compiles the project's eBPF programs (C, in `bpf/`) from a crate's build
//! script, so every crate that loads a BPF program builds it the same way.
//!
//! A crate's `build.rs` (compiled by the doc tests, not run: it works only
//! inside a build script, where cargo sets `OUT_DIR` and `CARGO_MANIFEST_DIR`):
//!
//! ```no_run
//! // in build.rs's main: bpf/xsk_redirect.bpf.c -> $OUT_DIR/xsk_redirect.bpf.o
//! detpath_bpf_build::compile("xsk_redirect");
//! ```
//!
//! and the crate embeds the object with
//! `include_bytes!(concat!(env!("OUT_DIR"), "/xsk_redirect.bpf.o"))`.
//!
//! [`layout_checks`] makes the Rust mirrors of the headers' structs checked
//! against the C: the build fails when a header changes and a mirror does not.

#![warn(missing_docs)]

use std::fmt::Write as _;
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
        // BPF ISA v3 (Linux >= 5.1): 32-bit ALU operations and jumps, so
        // 32-bit arithmetic needs no zero-extending shift pairs (the
        // classifier's machine code is 8 % smaller; docs/classify.md).
        .arg("-mcpu=v3")
        // The programs pun types: a flow key is written as six 64-bit
        // words and read back field by field, headers are read as whole
        // words. C's strict aliasing would let the compiler assume such
        // accesses never overlap and reorder them; the kernel builds with
        // this flag for the same reason.
        .arg("-fno-strict-aliasing")
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

/// Generates `$OUT_DIR/<out>` from `bpf/<header>` files: clang (the
/// compiler of the BPF side) dumps the layout of every `struct <prefix>*`
/// the headers define, and each becomes a macro `check_<struct>!(RustType)`
/// of compile-time assertions (size, alignment and the offset of every
/// field, by its C name). The crate `include!`s the file and invokes the
/// macros on its `#[repr(C)]` mirrors, so a header change that the mirrors
/// do not follow fails the build. Every `#define <PREFIX>* <number>` in
/// the headers becomes a `pub const ...: u64` too (`define_prefix` is the
/// struct prefix in capitals).
///
/// Panics (the build-script way of failing) when clang is missing or
/// prints no layout for a struct.
pub fn layout_checks(headers: &[&str], prefix: &str, out: &str) {
    let dir = bpf_dir();
    let define_prefix = prefix.to_ascii_uppercase();
    let mut text = String::new();
    for h in headers {
        let path = dir.join(h);
        println!("cargo:rerun-if-changed={}", path.display());
        text += &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        text.push('\n');
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("run from a build script"));
    let names = headers.join(", ");

    // Every struct the headers define, in order.
    let structs: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("struct ")?.strip_suffix('{').map(|s| s.trim().to_string()))
        .filter(|s| s.starts_with(prefix) && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    assert!(!structs.is_empty(), "no `struct {prefix}* {{` in {names}");

    // clang computes the layouts; a sizeof of each makes it dump them.
    let probe = out_dir.join(format!("{out}.probe.c"));
    let mut c: String = headers.iter().map(|h| format!("#include \"{h}\"\n")).collect();
    c.push_str("unsigned long layout_probe[] = {\n");
    for s in &structs {
        let _ = writeln!(c, "  sizeof(struct {s}), _Alignof(struct {s}),");
    }
    c.push_str("};\n");
    std::fs::write(&probe, c).expect("writing the layout probe");
    let clang = std::env::var("BPF_CLANG").unwrap_or_else(|_| "clang".into());
    let o = Command::new(&clang)
        .args(["-target", "bpf", "-fsyntax-only", "-Xclang", "-fdump-record-layouts"])
        .arg("-I/usr/include/x86_64-linux-gnu")
        .arg(format!("-I{}", dir.display()))
        .arg(&probe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{clang}` for the layout of {names}: {e}. Install it with `make deps`"));
    assert!(o.status.success(), "clang failed on the layout of {names}: {}", String::from_utf8_lossy(&o.stderr));
    let dump = String::from_utf8_lossy(&o.stdout);

    let mut gen = format!("// Generated by detpath-bpf-build from bpf/{{{names}}}: do not edit.\n\n");
    // The generated items carry `#[allow]`s because they are emitted for
    // every define and struct of the headers, and a crate uses only those it
    // mirrors: without them, a header gaining a struct or a define that one
    // crate does not need would fail that crate's build (dead_code,
    // unused_macros under -D warnings).
    for l in text.lines() {
        // `#define PREFIX_NAME <number> ...`
        let mut w = l.split_whitespace();
        if w.next() != Some("#define") {
            continue;
        }
        let (Some(name), Some(val)) = (w.next(), w.next()) else { continue };
        let v = val.trim_end_matches(['u', 'U']);
        let parsed = if let Some(h) = v.strip_prefix("0x") { u64::from_str_radix(h, 16).ok() } else { v.parse::<u64>().ok() };
        if let (true, Some(n)) = (name.starts_with(&define_prefix), parsed) {
            let _ = writeln!(gen, "/// `#define {name}` of bpf/{{{names}}}.\n#[allow(dead_code)]\npub const {name}: u64 = {n};");
        }
    }
    for s in &structs {
        let (size, align, fields) = record(&dump, s).unwrap_or_else(|| panic!("clang printed no layout for struct {s}"));
        let _ = writeln!(gen, "\n/// Compile-time checks that a type has the layout of C `struct {s}`.");
        let _ = writeln!(gen, "#[allow(unused_macros)]\nmacro_rules! check_{s} {{\n    ($t:ty) => {{\n        const _: () = {{");
        let _ = writeln!(gen, "            assert!(::core::mem::size_of::<$t>() == {size}, \"size of struct {s} in bpf/ changed\");");
        let _ = writeln!(gen, "            assert!(::core::mem::align_of::<$t>() == {align}, \"alignment of struct {s} in bpf/ changed\");");
        for (off, name) in fields {
            let _ = writeln!(gen, "            assert!(::core::mem::offset_of!($t, {name}) == {off}, \"offset of {s}.{name} in bpf/ changed\");");
        }
        let _ = writeln!(gen, "        }};\n    }};\n}}");
    }
    std::fs::write(out_dir.join(out), gen).unwrap_or_else(|e| panic!("writing {out}: {e}"));
}

/// Size, alignment and top-level fields as (offset, name) of one C struct.
type Record = (usize, usize, Vec<(usize, String)>);

/// The [`Record`] of `struct name` in clang's dump.
fn record(dump: &str, name: &str) -> Option<Record> {
    let mut lines = dump.lines().skip_while(|l| l.trim_end() != format!("         0 | struct {name}"));
    lines.next()?;
    let mut fields = Vec::new();
    for l in lines {
        let (left, right) = l.split_once('|')?;
        let right = right.trim_end();
        if let Some(tail) = right.trim().strip_prefix("[sizeof=") {
            // "[sizeof=48, align=4]"
            let (sz, al) = tail.trim_end_matches(']').split_once(", align=")?;
            return Some((sz.parse().ok()?, al.parse().ok()?, fields));
        }
        // Top-level fields are indented by three spaces; deeper ones belong to a nested struct.
        if right.starts_with("   ") && !right.starts_with("    ") {
            let name = right.split_whitespace().last()?.to_string();
            fields.push((left.trim().parse().ok()?, name));
        }
    }
    None
}
