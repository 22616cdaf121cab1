//! ARCHITECTURE.md's kernel-layer rule, as the two greps it gives anyone:
//! outside crates/sys no code enters a namespace, attaches or detaches XDP,
//! calls ethtool, opens AF_PACKET or reads the neighbour table, and no
//! datapath runs `ip`. Comment lines do not count.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `file:line: text` of every non-comment line under `dir` (not under `except`) naming one of `needles`.
fn hits(dir: &Path, except: Option<&Path>, needles: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let mut out = Vec::new();
    for f in files.into_iter().filter(|f| except.is_none_or(|x| !f.starts_with(x))) {
        for (i, line) in std::fs::read_to_string(&f).unwrap().lines().enumerate() {
            if !line.contains("//") && needles.iter().any(|n| line.contains(n)) {
                out.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn kernel_objects_are_touched_in_crates_sys_only() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let needles = ["libc::setns", "bpf_link_create", "bpf_xdp_detach", "SIOCETHTOOL", "libc::AF_PACKET", "RTM_GETNEIGH"];
    let found = hits(crates, Some(&crates.join("sys")), &needles);
    assert!(found.is_empty(), "kernel objects outside crates/sys (use detpath_sys):\n{}", found.join("\n"));
    let ip = hits(&crates.join("detpath/src/datapath"), None, &["Command::new(\"ip\")"]);
    assert!(ip.is_empty(), "a datapath runs `ip`:\n{}", ip.join("\n"));
}

#[test]
fn the_rule_sees_a_violation() {
    let dir = std::env::temp_dir().join(format!("detpath-kernel-rule-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("x")).unwrap();
    std::fs::write(dir.join("x/a.rs"), "let fd = unsafe { libc::socket(libc::AF_PACKET, 3, 0) };\n// libc::setns in a comment\n").unwrap();
    let found = hits(&dir, None, &["libc::AF_PACKET", "libc::setns"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
}
