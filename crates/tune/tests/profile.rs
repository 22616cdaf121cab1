//! Saved tuning profiles over fake /proc + /sys trees standing for two hosts:
//! save after an apply, apply the profile on another host (and refuse where
//! that host differs, before changing anything), verify per knob (drift after
//! a change behind the profile's back), idempotence.

mod common;

use std::fs;
use std::path::Path;

use common::*;
use detpath_tune::profile::{apply_profile, check_fit, plan_profile, verify, Match, SavedProfile};
use detpath_tune::*;

fn req(cores: &str, state: &Path) -> ApplyRequest {
    ApplyRequest::new(CpuList::parse(cores).unwrap()).iface(IFACE).state_dir(state)
}

fn read(root: &Path, rel: &str) -> String {
    fs::read_to_string(root.join(rel)).unwrap().trim().to_string()
}

/// Host A: tuned for core 1, profile saved; returns the profile and its path.
fn saved_on_host_a(dir: &Path) -> (SavedProfile, std::path::PathBuf) {
    let a = dir.join("host-a");
    let host = fake_host(&a);
    let t = apply(&host, &req("1", &dir.join("state-a"))).unwrap();
    let p = SavedProfile::capture(&host, &req("1", &dir.join("state-a"))).unwrap();
    t.keep();
    let path = dir.join("profile.json");
    p.save(&path).unwrap();
    (p, path)
}

#[test]
fn save_then_apply_on_another_host_then_verify() {
    let d = tempfile::tempdir().unwrap();
    let (p, path) = saved_on_host_a(d.path());
    // What the file holds: cores, NIC, host facts, knobs with their applied values.
    let loaded = SavedProfile::load(&path).unwrap();
    assert_eq!(loaded, p);
    assert_eq!(p.cores.datapath.to_string(), "1");
    assert_eq!(p.cores.housekeeping.to_string(), "0,2-3");
    assert_eq!(p.host.cpu_count, 4);
    assert_eq!(p.nics[0].name, IFACE);
    let k = |n: &str| p.knobs.iter().find(|k| k.name == n).unwrap_or_else(|| panic!("no {n} in profile"));
    assert_eq!(k("vm.swappiness").value, "10");
    assert_eq!(k("thp.enabled").value, "never");
    assert_eq!(k("nic.fake0.gro").value, "0");
    assert_eq!(k("kernel.sched_rt_runtime_us").value, "-1");
    assert!(k("irq.24.affinity").derived.is_some(), "IRQ affinities are host-relative");
    assert!(k("cpu1.max_freq").derived.is_some());
    assert!(k("vm.swappiness").derived.is_none());
    let json: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(json["detpath_profile"], 1);
    assert_eq!(json["host"]["cpu_count"], 4);

    // Host A matches its own profile.
    let v = verify(&fake_host_keep(&d.path().join("host-a")), &p).unwrap();
    assert!(v.matches(), "{:?}", v.knobs.iter().filter(|r| r.state != Match::Match).collect::<Vec<_>>());

    // Host B: untuned, 6 CPUs online, another kernel.
    let b = d.path().join("host-b");
    let host_b = fake_host(&b);
    w(&b, "sys/devices/system/cpu/online", "0-5\n");
    w(&b, "proc/sys/kernel/osrelease", "6.1.0-99-amd64\n");
    let before_b = canonical(snapshot(&b));
    let v = verify(&host_b, &p).unwrap();
    assert!(v.drift >= 20, "an untuned host drifts: {}", v.drift);
    assert!(v.differences.is_empty(), "{:?}", v.differences);
    let state_b = d.path().join("state-b");
    let t = apply_profile(&host_b, &p, &path, &state_b, &mut |_| {}).unwrap();
    assert!(t.changes().len() >= 20, "{}", t.summary());
    assert_eq!(read(&b, "proc/sys/vm/swappiness"), "10");
    assert_eq!(read(&b, "sys/kernel/mm/transparent_hugepage/enabled"), "never");
    assert_eq!(read(&b, "fake-nic/fake0/gro"), "0");
    // Host-relative values follow host B: its housekeeping cores are 0,2-5.
    // IRQ 24 was on core 1 alone: it goes to all of B's housekeeping cores; IRQ 1 keeps its others.
    assert_eq!(read(&b, "proc/irq/24/smp_affinity_list"), "0,2-5");
    assert_eq!(read(&b, "proc/irq/1/smp_affinity_list"), "0,2-3");
    // The default affinity (0-3) loses core 1 only.
    assert_eq!(read(&b, "proc/irq/default_smp_affinity"), CpuList::parse("0,2-3").unwrap().to_mask());
    let v = verify(&host_b, &p).unwrap();
    assert!(v.matches(), "{:?}", v.knobs.iter().filter(|r| r.state != Match::Match).collect::<Vec<_>>());
    assert!(v.kernel_note.as_deref().is_some_and(|n| n.contains("6.1.0-99-amd64")));
    // A second apply changes nothing.
    let again = apply_profile(&host_b, &p, &path, &state_b, &mut |_| {}).unwrap();
    assert_eq!(again.changes().len(), 0, "{:?}", again.changes());
    again.keep();
    // Revert leaves host B as found.
    t.revert().unwrap();
    assert_same(&before_b, &canonical(snapshot(&b)));
}

#[test]
fn drift_behind_the_profiles_back() {
    let d = tempfile::tempdir().unwrap();
    let (p, path) = saved_on_host_a(d.path());
    let a = d.path().join("host-a");
    let host = fake_host_keep(&a);
    assert_eq!(verify(&host, &p).unwrap().drift, 0);
    // Someone changes a sysctl, a NIC setting and an IRQ's affinity.
    w(&a, "proc/sys/vm/swappiness", "60\n");
    w(&a, "fake-nic/fake0/gro", "1");
    w(&a, "proc/irq/24/smp_affinity_list", "1\n");
    let v = verify(&host, &p).unwrap();
    assert_eq!(v.drift, 3, "{:?}", v.knobs.iter().filter(|r| r.state != Match::Match).collect::<Vec<_>>());
    let row = |n: &str| v.knobs.iter().find(|r| r.knob == n).unwrap().clone();
    assert_eq!(row("vm.swappiness").state, Match::Drift);
    assert_eq!(row("vm.swappiness").current, "60");
    assert_eq!(row("vm.swappiness").expected, "10");
    assert_eq!(row("nic.fake0.gro").state, Match::Drift);
    assert_eq!(row("irq.24.affinity").state, Match::Drift);
    assert_eq!(row("kernel.watchdog").state, Match::Match);
    // Applying the profile again puts exactly those back.
    let t = apply_profile(&host, &p, &path, &d.path().join("state-a"), &mut |_| {}).unwrap();
    let mut names: Vec<&str> = t.changes().iter().map(|c| c.knob.as_str()).collect();
    names.sort();
    assert_eq!(names, ["irq.24.affinity", "nic.fake0.gro", "vm.swappiness"]);
    t.keep();
    assert!(verify(&host, &p).unwrap().matches());
}

#[test]
fn a_host_that_differs_is_refused_before_any_change() {
    let d = tempfile::tempdir().unwrap();
    // Saved for core 3 on four CPUs.
    let a = d.path().join("host-a");
    let host_a = fake_host(&a);
    let t = apply(&host_a, &req("3", &d.path().join("state-a"))).unwrap();
    let p = SavedProfile::capture(&host_a, &req("3", &d.path().join("state-a"))).unwrap();
    t.revert().unwrap();
    let path = d.path().join("p.json");
    p.save(&path).unwrap();

    // Fewer cores: two online.
    let b = d.path().join("small");
    let host_b = fake_host(&b);
    w(&b, "sys/devices/system/cpu/online", "0-1\n");
    let before = snapshot(&b);
    let state = d.path().join("state-b");
    let e = apply_profile(&host_b, &p, &path, &state, &mut |_| {}).expect_err("must refuse");
    let msg = e.to_string();
    assert!(matches!(e, TuneError::ProfileMismatch { .. }), "{e}");
    assert!(msg.contains("2 CPU(s) online") && msg.contains("CPU(s) 2-3 missing") && msg.contains("nothing was changed"), "{msg}");
    assert_same(&before, &snapshot(&b));
    assert!(journal_status(&state).unwrap().is_none(), "nothing journalled");
    let v = verify(&host_b, &p).unwrap();
    assert!(!v.matches() && !v.differences.is_empty());

    // No such NIC, and a knob this host lacks: both named, nothing changed.
    let c = d.path().join("nonic");
    let host_c = fake_host(&c);
    fs::remove_dir_all(c.join("sys/class/net/fake0")).unwrap();
    fs::remove_dir_all(c.join("fake-nic/fake0")).unwrap();
    fs::remove_file(c.join("proc/sys/kernel/nmi_watchdog")).unwrap();
    let before = snapshot(&c);
    let e = plan_profile(&host_c, &p, &path).expect_err("must refuse");
    let TuneError::ProfileMismatch { differences, .. } = &e else { panic!("{e}") };
    assert!(differences.iter().any(|x| x.contains("no network interface `fake0`")), "{differences:?}");
    assert!(differences.iter().any(|x| x.contains("kernel.nmi_watchdog is not present")), "{differences:?}");
    assert!(!differences.iter().any(|x| x.starts_with("knob nic.fake0")), "the missing NIC is said once: {differences:?}");
    assert!(apply_profile(&host_c, &p, &path, &state, &mut |_| {}).is_err());
    assert_same(&before, &snapshot(&c));

    // Another NIC driver.
    let dd = d.path().join("driver");
    let host_d = fake_host(&dd);
    let mut p2 = p.clone();
    p2.nics[0].driver = Some("ixgbe".into());
    fs::create_dir_all(dd.join("drivers/i40e")).unwrap();
    fs::create_dir_all(dd.join("sys/class/net/fake0/device")).unwrap();
    std::os::unix::fs::symlink(dd.join("drivers/i40e"), dd.join("sys/class/net/fake0/device/driver")).unwrap();
    let diffs = check_fit(&host_d, &p2);
    assert!(diffs.iter().any(|x| x.contains("driver i40e here, ixgbe in the profile")), "{diffs:?}");
}

#[test]
fn unreadable_profiles_are_named() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("x.json");
    let e = SavedProfile::load(&p).unwrap_err();
    assert!(e.to_string().contains("cannot read it") && e.to_string().contains("--save"), "{e}");
    fs::write(&p, "{ nope").unwrap();
    assert!(SavedProfile::load(&p).unwrap_err().to_string().contains("not JSON"));
    fs::write(&p, "{\"detpath_profile\": 9}").unwrap();
    assert!(SavedProfile::load(&p).unwrap_err().to_string().contains("format version 9"));
    fs::write(&p, "{\"knobs\": []}").unwrap();
    assert!(SavedProfile::load(&p).unwrap_err().to_string().contains("not a detpath tuning profile"));
    let e = SavedProfile::capture(&fake_host(&d.path().join("h")), &req("1", d.path())).unwrap().save(&d.path().join("no/such/dir/p.json")).unwrap_err();
    assert!(matches!(e, TuneError::ProfileWrite { .. }), "{e}");
}
