//! The cpuset shield on cgroup v2 over a fake tree (a Debian 12-like unified
//! hierarchy with systemd's slices; cgroup semantics from
//! `common::FakeCgroups`): apply, idempotence, revert to the byte, rollback
//! when a step fails, revert after a SIGKILLed apply and after a kill in the
//! middle of the shield's own steps. This machine's v2 hierarchy has no
//! cpuset controller (it is on v1), so v2 runs here only on the fake tree.

mod common;

use std::fs;
use std::path::Path;

use common::*;
use detpath_tune::shield::{self, v2};
use detpath_tune::*;

const CG: &str = "sys/fs/cgroup";

#[test]
#[ignore = "helper: run by v2_kill_mid_apply_then_revert in a child process"]
fn child_apply_then_hang() {
    child_main();
}

fn req(cores: &str, state: &Path) -> ApplyRequest {
    ApplyRequest::new(CpuList::parse(cores).unwrap()).iface(IFACE).state_dir(state)
}

fn read(root: &Path, rel: &str) -> String {
    fs::read_to_string(root.join(CG).join(rel)).unwrap().trim().to_string()
}

fn procs(root: &Path, dir: &str) -> Vec<u32> {
    let rel = if dir.is_empty() { "cgroup.procs".to_string() } else { format!("{dir}/cgroup.procs") };
    read(root, &rel).split_whitespace().map(|p| p.parse().unwrap()).collect()
}

fn shield_knob(host: &Host) -> Knob {
    let knobs = audit(host, &AuditRequest { cores: Some(CpuList::parse("1").unwrap()), iface: None }).unwrap();
    knobs.into_iter().find(|k| k.name == "cpuset.shield").unwrap()
}

#[test]
fn v2_is_chosen_where_the_cpuset_controller_lives() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_v2_host(root);
    assert_eq!(v2::root(&host).as_deref(), Some("/sys/fs/cgroup"));
    assert_eq!(shield::cpuset_v1_root(&host), None);
    let k = shield_knob(&host);
    assert_eq!(k.status, Status::Misconfigured, "{k:?}");
    assert!(matches!(&k.fix.as_ref().unwrap().target, Target::ShieldV2 { cgroup_root } if cgroup_root == "/sys/fs/cgroup"));
    assert!(k.current.contains("cpuset not enabled"), "{}", k.current);
    // This machine's layout: cpuset on v1, a v2 hierarchy without it: v1.
    w(root, "proc/self/mounts", "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n");
    w(root, "sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
    fs::create_dir_all(root.join("sys/fs/cgroup/cpuset")).unwrap();
    assert_eq!(v2::root(&host), None);
    assert!(matches!(shield_knob(&host).fix.unwrap().target, Target::Shield { .. }));
    // Neither: not present.
    w(root, "proc/self/mounts", "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n");
    let k = shield_knob(&host);
    assert_eq!(k.status, Status::NotPresent);
    assert!(k.current.contains("no cpuset controller"), "{}", k.current);
}

#[test]
fn v2_apply_and_revert_exactly() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_v2_host(root);
    let before = canonical(snapshot(root));
    let tuning = apply(&host, &req("1", s.path())).unwrap();
    assert!(tuning.changes().iter().any(|c| c.knob == "cpuset.shield"), "{}", tuning.summary());
    // The controller is on, every top-level cgroup is on the housekeeping cores,
    // the root's user process moved (not the kernel thread), units stay in their slices.
    assert_eq!(read(root, "cgroup.subtree_control"), "memory pids cpuset");
    for top in ["init.scope", "system.slice", "user.slice"] {
        assert_eq!(read(root, &format!("{top}/cpuset.cpus")), "0,2-3", "{top}");
    }
    assert_eq!(read(root, "detpath-housekeeping/cpuset.cpus"), "0,2-3");
    assert_eq!(procs(root, "detpath-housekeeping"), [300]);
    assert_eq!(procs(root, ""), [2]);
    assert_eq!(procs(root, "system.slice/cron.service"), [400]);
    assert_eq!(procs(root, "user.slice/user-1000.slice/session-1.scope"), [500]);
    assert_eq!(read(root, "detpath-datapath/cpuset.cpus"), "1");
    assert_eq!(read(root, "detpath-datapath/cpuset.cpus.partition"), "isolated");
    let k = shield_knob(&host);
    assert_eq!(k.status, Status::Ok, "{}", k.current);
    assert!(k.current.contains("partition detpath-datapath on 1"), "{}", k.current);
    assert_eq!(shield::active(&host).unwrap().cores.to_string(), "0,2-3");
    // Idempotent: a second apply leaves the shield alone.
    let again = apply(&host, &req("1", s.path())).unwrap();
    assert!(again.changes().is_empty(), "{:?}", again.changes());
    drop(again);
    // Behind the shield's back: a process forks inside the housekeeping cgroup,
    // and the datapath process joins the partition.
    host.cgroups().attach(&root.join(CG).join("detpath-housekeeping/cgroup.procs"), 301).unwrap();
    assert!(v2::join_datapath(&host, 300));
    assert_eq!(procs(root, "detpath-datapath"), [300]);
    // A slice changed by someone else is drift: the audit says so.
    w(root, &format!("{CG}/user.slice/cpuset.cpus"), "0-3\n");
    let k = shield_knob(&host);
    assert_eq!(k.status, Status::Misconfigured);
    assert!(k.current.contains("user.slice may use every core"), "{}", k.current);
    w(root, &format!("{CG}/user.slice/cpuset.cpus"), "0,2-3\n");
    // Revert: old values, processes back in the root (the forked one too), cgroups gone, controller off.
    tuning.revert().unwrap();
    assert_eq!(procs(root, ""), [2, 300, 301]);
    assert!(!root.join(CG).join("detpath-housekeeping").exists());
    assert!(!root.join(CG).join("detpath-datapath").exists());
    assert_eq!(read(root, "cgroup.subtree_control"), "memory pids");
    // The forked process exits; then the tree is as found, byte for byte.
    write_pids(&root.join(CG).join("cgroup.procs"), &[2, 300]);
    assert_same(&before, &canonical(snapshot(root)));
}

#[test]
fn v2_with_cpuset_already_enabled_restores_old_cpus() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_v2_host(root);
    // An operator had enabled cpuset and given user.slice cores 0-2.
    host.cgroups().set_controller(&root.join(CG).join("cgroup.subtree_control"), "cpuset", true).unwrap();
    w(root, &format!("{CG}/user.slice/cpuset.cpus"), "0-2\n");
    let before = canonical(snapshot(root));
    let tuning = apply(&host, &req("1", s.path())).unwrap();
    assert_eq!(read(root, "user.slice/cpuset.cpus"), "0,2-3");
    tuning.revert().unwrap();
    assert_eq!(read(root, "user.slice/cpuset.cpus"), "0-2");
    assert_eq!(read(root, "cgroup.subtree_control"), "memory pids cpuset", "left enabled as found");
    assert_same(&before, &canonical(snapshot(root)));
}

#[test]
fn v2_failure_midway_rolls_back() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_v2_host(root);
    // system.slice's cpuset.cpus cannot be written (a directory stands there):
    // the shield fails after enabling the controller and limiting init.scope.
    fs::create_dir_all(root.join(CG).join("system.slice/cpuset.cpus")).unwrap();
    let before = snapshot(root);
    let e = apply(&host, &req("1", s.path())).expect_err("must fail");
    assert!(matches!(&e, TuneError::ApplyFailed { knob, .. } if knob == "cpuset.shield"), "{e}");
    assert_same(&before, &snapshot(root));
    assert!(journal_status(s.path()).unwrap().is_none());
}

#[test]
fn v2_kill_mid_apply_then_revert() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    fake_v2_host(root);
    let before = canonical(snapshot(root));
    let state = s.path().join("state");
    // The shield is the first change; the child is killed after three.
    run_child_and_kill(root.to_str().unwrap(), &state, "1", Some(IFACE), 3);
    let j = journal_status(&state).unwrap().expect("journal left by the killed apply");
    assert!(j.entries.iter().any(|e| matches!(e.target, Target::ShieldV2 { .. })), "{j:?}");
    assert_eq!(read(root, "detpath-datapath/cpuset.cpus.partition"), "isolated");
    assert_eq!(procs(root, "detpath-housekeeping"), [300]);
    // A new process reverts.
    let host = fake_host_keep(root);
    let r = revert(&host, &state).unwrap();
    assert_eq!(r.restored.len(), j.entries.len());
    assert_same(&before, &canonical(snapshot(root)));
    assert!(journal_status(&state).unwrap().is_none());
}

#[test]
fn v2_kill_inside_the_shield_steps_then_revert() {
    // The journal entry is written before the shield's first step; a kill
    // after some of its steps leaves a half-made shield that revert undoes.
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_v2_host(root);
    let before = snapshot(root);
    let target = Target::ShieldV2 { cgroup_root: "/sys/fs/cgroup".into() };
    let old = detpath_tune::read_target(&host, &target).unwrap();
    let j = Journal {
        version: JOURNAL_VERSION,
        boot_id: BOOT_ID.into(),
        root: root.to_path_buf(),
        entries: vec![Entry { session: "9-9".into(), knob: "cpuset.shield".into(), target, old: old.clone(), new: "0,2-3".into(), restore: old }],
    };
    JournalStore::new(s.path()).save(&j).unwrap();
    // Steps 1-3 of the shield, as far as the kill let them go.
    host.cgroups().set_controller(&root.join(CG).join("cgroup.subtree_control"), "cpuset", true).unwrap();
    w(root, &format!("{CG}/init.scope/cpuset.cpus"), "0,2-3\n");
    host.cgroups().create(&root.join(CG).join("detpath-housekeeping")).unwrap();
    host.cgroups().attach(&root.join(CG).join("detpath-housekeeping/cgroup.procs"), 300).unwrap();
    assert_ne!(before, snapshot(root));
    let r = revert(&host, s.path()).unwrap();
    assert_eq!(r.restored, ["cpuset.shield"]);
    assert_same(&before, &snapshot(root));
}
