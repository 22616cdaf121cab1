//! The README's code, run as a reader would run it, so it cannot drift from
//! the product again: every fenced block after a `<!-- tested: NAME ... -->`
//! marker is taken from README.md as it stands.
//!
//! - `hello`: the shell block runs under bash with the freshly built
//!   `detpath` first on PATH; it must print `hello` and leave no namespace.
//! - `c`: the C block is a function body; it is wrapped in `main` (its
//!   `#include` lines moved above) and compiled with `-Wall -Werror`
//!   against crates/capi/include/detpath.h and linked against libdetpath.so.
//!
//! The Python block is run by crates/python/python/tests/test_readme.py
//! (it needs the built Python module).

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first fenced block after the marker `<!-- tested: NAME`.
fn block(name: &str) -> String {
    let text = readme();
    let marker = format!("<!-- tested: {name}");
    let at = text.find(&marker).unwrap_or_else(|| panic!("README.md has no `{marker}` marker"));
    let rest = &text[at..];
    let open = rest.find("```").expect("a fenced block after the marker");
    let body_start = open + rest[open..].find('\n').expect("fence line") + 1;
    let close = rest[body_start..].find("\n```").expect("closing fence") + body_start;
    rest[body_start..close].to_string()
}

fn namespaces() -> String {
    String::from_utf8_lossy(&Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).into_owned()
}

#[test]
fn hello_world_block_runs() {
    if !detpath_testkit::need_root("hello_world_block_runs", "namespaces and XDP") {
        return;
    }
    let script = block("hello");
    assert!(script.contains("detpath testbed up"), "the hello block changed shape:\n{script}");
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("bash").args(["-euo", "pipefail", "-c", &script]).env("PATH", path).output().expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Whatever happened, leave no testbed behind.
    let _ = Command::new(BIN).args(["testbed", "down"]).output();
    assert!(out.status.success(), "the README's hello block failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    assert!(stdout.lines().any(|l| l.trim() == "hello"), "no `hello` came back:\n{stdout}\n{stderr}");
    let ns = namespaces();
    assert!(!ns.contains("detpath-a") && !ns.contains("detpath-b "), "the hello block left a namespace: {ns}");
}

#[test]
fn c_block_compiles_against_the_header() {
    let body = block("c");
    let (includes, code): (Vec<&str>, Vec<&str>) = body.lines().partition(|l| l.trim_start().starts_with("#include"));
    assert!(includes.iter().any(|l| l.contains("<detpath.h>")), "the C block includes detpath.h");
    let program = format!("#include <stdio.h>\n{}\nint main(void) {{\n{}\nreturn 0;\n}}\n", includes.join("\n"), code.join("\n"));
    let dir = scratch("readme-c");
    let src = dir.join("readme.c");
    std::fs::write(&src, program).unwrap();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../capi/include");
    let lib_dir = Path::new(BIN).parent().unwrap().to_path_buf();
    if !lib_dir.join("libdetpath.so").exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let ok = Command::new(cargo).args(["build", "--release", "-p", "detpath-capi", "--lib"]).status().expect("cargo");
        assert!(ok.success(), "building libdetpath.so failed");
    }
    let out = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(dir.join("readme"))
        .arg(&src)
        .arg(format!("-I{}", include.display()))
        .arg(format!("-L{}", lib_dir.display()))
        .arg("-ldetpath")
        .output()
        .expect("cc (gcc) is installed by the Makefile");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "the README's C block does not compile against detpath.h:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// A fresh private directory (`mktemp -d`: an unpredictable name, mode 0700).
fn scratch(tag: &str) -> PathBuf {
    let out = Command::new("mktemp").args(["-d", "-t", &format!("detpath-{tag}-XXXXXXXX")]).output().expect("mktemp");
    assert!(out.status.success(), "mktemp -d failed");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// The README is the five-minute map (issue 40): at most 250 lines; the rest lives in the book.
#[test]
fn readme_is_at_most_250_lines() {
    let n = readme().lines().count();
    assert!(n <= 250, "README.md has {n} lines: move the detail into the book (docs/book), keep the README a map");
}

/// Every relative link of the README names a file or directory of the repository.
#[test]
fn readme_links_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = readme();
    let mut missing = Vec::new();
    for part in text.split("](").skip(1) {
        let target = part.split(')').next().unwrap_or_default();
        if target.contains("://") || target.starts_with('#') {
            continue;
        }
        if !root.join(target.split('#').next().unwrap_or_default()).exists() {
            missing.push(target.to_string());
        }
    }
    assert!(text.matches("](").count() >= 10, "the README's map lost its links");
    assert!(missing.is_empty(), "README.md links to missing files: {missing:?}");
}
