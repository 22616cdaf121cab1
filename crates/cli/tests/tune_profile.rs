//! `detpath tune apply --save / --from` and `detpath tune audit --from` as a
//! script sees them: exit codes (0 matches, 3 drift, 4 the host does not fit,
//! 2 error), the `changed` and `drift` counts of `--json`, and a refused apply
//! that changes nothing. Runs the binary over fake /proc + /sys trees (the
//! hidden `--root`); the real host is tuned only by crates/tune/tests/real_host.rs.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

/// A temporary directory removed on drop (also when an assertion fails).
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let p = std::env::temp_dir().join(format!("detpath-tune-profile-{tag}-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn w(root: &Path, rel: &str, s: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, s).unwrap();
}

/// A small untuned host: `online` CPUs, a few sysctls, IRQs, THP.
fn fake_host(root: &Path, online: &str) {
    w(root, "proc/sys/kernel/random/boot_id", "11111111-2222-3333-4444-555555555555\n");
    w(root, "proc/sys/kernel/osrelease", "6.1.0-test\n");
    w(root, "proc/sys/kernel/hostname", "cell-7\n");
    w(root, "proc/cmdline", "root=/dev/sda1 ro\n");
    w(root, "sys/devices/system/cpu/online", &format!("{online}\n"));
    w(root, "sys/devices/system/cpu/possible", "0-7\n");
    for (k, v) in [("kernel/sched_rt_runtime_us", "950000"), ("kernel/timer_migration", "1"), ("vm/swappiness", "60"), ("net/core/busy_poll", "0")] {
        w(root, &format!("proc/sys/{k}"), &format!("{v}\n"));
    }
    w(root, "proc/irq/24/smp_affinity_list", "1\n");
    w(root, "proc/irq/25/smp_affinity_list", "0-1\n");
    w(root, "proc/irq/default_smp_affinity", "f\n");
    w(root, "sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(d: &Path, m: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in fs::read_dir(d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), m);
            } else {
                m.insert(e.path(), fs::read(e.path()).unwrap());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(root, &mut m);
    m
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("DETPATH_STATE_DIR").output().expect("run detpath")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn save_apply_from_audit_from_exit_codes() {
    let d = Dir::new("cli");
    let a = d.0.join("a");
    fake_host(&a, "0-3");
    let before_a = snapshot(&a);
    let state = d.0.join("state");
    let profile = d.0.join("cell.json");
    let (ra, st, pf) = (a.to_str().unwrap(), state.to_str().unwrap(), profile.to_str().unwrap());

    // apply --save: changes counted, profile written.
    let o = run(&["tune", "apply", "--root", ra, "--cores", "1", "--state-dir", st, "--save", pf, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&o);
    assert!(j["changed"].as_u64().unwrap() >= 6, "{j}");
    let saved: serde_json::Value = serde_json::from_slice(&fs::read(&profile).unwrap()).unwrap();
    assert_eq!(saved["cores"]["datapath"], "1");
    assert_eq!(saved["host"]["cpu_count"], 4);
    assert_eq!(saved["host"]["hostname"], "cell-7");

    // A second apply from the profile changes nothing, and says so.
    let o = run(&["tune", "apply", "--root", ra, "--from", pf, "--state-dir", st, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json(&o)["changed"], 0);
    let o = run(&["tune", "apply", "--root", ra, "--from", pf, "--state-dir", st]);
    assert!(text(&o).contains("changed nothing"), "{}", text(&o));

    // audit --from: matches (0), then drift (3) after a change behind its back.
    let o = run(&["tune", "audit", "--root", ra, "--from", pf]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("the host matches the profile"), "{}", text(&o));
    w(&a, "proc/sys/vm/swappiness", "60\n");
    let o = run(&["tune", "audit", "--root", ra, "--from", pf, "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let j = json(&o);
    assert_eq!(j["drift"], 1, "{j}");
    assert_eq!(j["matches"], false);
    let row = j["knobs"].as_array().unwrap().iter().find(|r| r["knob"] == "vm.swappiness").unwrap().clone();
    assert_eq!(row["state"], "drift");
    assert_eq!(row["current"], "60");
    let o = run(&["tune", "audit", "--root", ra, "--from", pf]);
    assert_eq!(o.status.code(), Some(3));
    assert!(text(&o).contains("DRIFT"), "{}", text(&o));
    // apply --from puts it back: one change.
    let o = run(&["tune", "apply", "--root", ra, "--from", pf, "--state-dir", st, "--json"]);
    assert_eq!(json(&o)["changed"], 1, "{}", text(&o));
    assert_eq!(run(&["tune", "audit", "--root", ra, "--from", pf]).status.code(), Some(0));

    // A host with two CPUs: apply refuses with 4 and changes nothing; audit says 4 too.
    let b = d.0.join("b");
    fake_host(&b, "0-1");
    let before_b = snapshot(&b);
    let state_b = d.0.join("state-b");
    let o = run(&["tune", "apply", "--root", b.to_str().unwrap(), "--from", pf, "--state-dir", state_b.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let msg = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(msg.contains("does not fit this host") && msg.contains("CPU(s) 2-3 missing") && msg.contains("nothing was changed"), "{msg}");
    assert_eq!(before_b, snapshot(&b), "the refused apply changed the tree");
    assert!(!state_b.join("tune-journal.json").exists());
    let o = run(&["tune", "audit", "--root", b.to_str().unwrap(), "--from", pf, "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(!json(&o)["differences"].as_array().unwrap().is_empty());

    // Not a profile: exit 2 naming the fix.
    let bad = d.0.join("bad.json");
    fs::write(&bad, "{}").unwrap();
    let o = run(&["tune", "audit", "--root", ra, "--from", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not a detpath tuning profile") && text(&o).contains("--save"), "{}", text(&o));
    // --from with --cores is a usage error.
    assert_eq!(run(&["tune", "apply", "--root", ra, "--from", pf, "--cores", "1"]).status.code(), Some(2));

    // Revert: host A as found (THP compared by its chosen word, as the kernel re-renders it).
    let o = run(&["tune", "revert", "--root", ra, "--state-dir", st]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut after = snapshot(&a);
    let thp = a.join("sys/kernel/mm/transparent_hugepage/enabled");
    assert_eq!(after.remove(&thp).unwrap(), b"always");
    let mut before = before_a;
    before.remove(&thp);
    assert_eq!(before, after);
}

#[test]
fn help_documents_the_exit_codes() {
    let o = run(&["tune", "audit", "--help"]);
    let h = String::from_utf8_lossy(&o.stdout);
    assert!(h.contains("3 drift") && h.contains("4 the host does not fit"), "{h}");
    let o = run(&["tune", "apply", "--help"]);
    let h = String::from_utf8_lossy(&o.stdout);
    assert!(h.contains("--save") && h.contains("--from") && h.contains("\"changed\": 0"), "{h}");
}
