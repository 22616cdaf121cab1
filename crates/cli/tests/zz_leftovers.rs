//! After the whole test suite, nothing of ours is left on the host: no
//! network namespace named `detpath*`, no veth of ours in the root
//! namespace, no loaded BPF program of ours, no tuning still in force.
//!
//! `make test` runs this after every other test (cargo gives no order across
//! packages, so it is ignored in the main run):
//! `cargo test --release -p detpath-cli --test zz_leftovers -- --ignored`.

use std::process::Command;

/// Names (as the kernel keeps them: at most 15 characters) of the SEC("xdp")
/// programs in bpf/*.bpf.c.
const OUR_PROGRAMS: [&str; 7] = ["xsk_redirect", "detpath_xdppoll", "cls_main", "cls_noop", "cls_noop_pass", "cls_gen", "cls_pass"];

fn lines_of(cmd: &[&str]) -> Vec<String> {
    let out = Command::new(cmd[0]).args(&cmd[1..]).output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect()
}

/// Our namespaces: the testbeds' (`detpath-*`) and the classifier tests' (`detpath-cls-*`).
fn our_namespaces() -> Vec<String> {
    lines_of(&["ip", "netns", "list"]).into_iter().filter_map(|l| l.split_whitespace().next().map(String::from)).filter(|n| n.starts_with("detpath")).collect()
}

/// Our interfaces in the root namespace: the testbed's veth ends (`dpa`,
/// `dpb`), the classifier tests' (`dc<digits>...`).
fn our_root_interfaces() -> Vec<String> {
    lines_of(&["ip", "-o", "link", "show"])
        .into_iter()
        .filter_map(|l| l.split(':').nth(1).map(|n| n.trim().split('@').next().unwrap_or("").to_string()))
        .filter(|n| n == "dpa" || n == "dpb" || (n.starts_with("dc") && n[2..].starts_with(|c: char| c.is_ascii_digit())))
        .collect()
}

fn our_bpf_programs() -> Vec<String> {
    libbpf_rs::query::ProgInfoIter::default()
        .filter(|p| OUR_PROGRAMS.iter().any(|n| p.name.to_str() == Some(*n)))
        .map(|p| format!("{} (id {})", p.name.to_string_lossy(), p.id))
        .collect()
}

#[test]
#[ignore = "run by `make test` after the whole suite"]
fn nothing_of_ours_is_left() {
    let mut left = Vec::new();
    for ns in our_namespaces() {
        left.push(format!("network namespace {ns} (remove: ip netns del {ns}; or detpath testbed down --testbed <prefix>)"));
    }
    for i in our_root_interfaces() {
        left.push(format!("interface {i} in the root namespace (remove: ip link del {i})"));
    }
    for p in our_bpf_programs() {
        left.push(format!("BPF program {p} still loaded (a process of ours still holds it: find it with `bpftool prog show`)"));
    }
    let journal = detpath_tune::default_state_dir().join(detpath_tune::JOURNAL_FILE);
    if journal.exists() {
        left.push(format!("tuning still in force: {} exists (restore: detpath tune revert)", journal.display()));
    }
    assert!(left.is_empty(), "left behind by the test suite:\n  {}", left.join("\n  "));
}
