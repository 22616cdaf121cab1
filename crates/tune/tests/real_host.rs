//! On this machine, for the knobs it really has (IRQ affinity,
//! sched_rt_runtime_us, busy_poll/busy_read, THP, cpuidle, sysctls, a veth's
//! NAPI settings and GRO): snapshot, apply, check, revert, compare; also after
//! a SIGKILL in the middle of an apply; plus the real-time thread setup.
//!
//! A second test saves a profile after an apply, verifies the host against
//! it (clean), applies it again (no change) and reverts to the snapshot.
//!
//! Needs root; skipped (with a message) otherwise. All real-host steps are in
//! one test function, serialised across processes by a file lock, and a guard
//! restores the snapshot even when an assertion fails.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use detpath_sys::cpu::CoreError;
use detpath_tune::nic::{EthtoolIoctl, Nic, NicSetting};
use detpath_tune::profile::{self, verify, SavedProfile};
use detpath_tune::rt::{self, RealtimeConfig, Warning};
use detpath_tune::*;

#[test]
#[ignore = "helper: run by real_host_apply_check_revert in a child process"]
fn child_apply_then_hang() {
    child_main();
}

const SELECTION: [&str; 2] = ["/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag"];

fn watched_files(core: usize, veth: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = vec![];
    for e in fs::read_dir("/proc/irq").unwrap().flatten() {
        let p = e.path().join("smp_affinity_list");
        if p.exists() {
            v.push(p);
        }
    }
    v.push("/proc/irq/default_smp_affinity".into());
    for k in [
        "kernel/sched_rt_runtime_us",
        "kernel/timer_migration",
        "kernel/watchdog",
        "kernel/nmi_watchdog",
        "vm/stat_interval",
        "vm/swappiness",
        "net/core/busy_poll",
        "net/core/busy_read",
    ] {
        v.push(Path::new("/proc/sys").join(k));
    }
    v.extend(SELECTION.iter().map(PathBuf::from));
    v.push("/sys/devices/system/clocksource/clocksource0/current_clocksource".into());
    v.push("/sys/devices/virtual/workqueue/cpumask".into());
    if let Ok(rd) = fs::read_dir(format!("/sys/devices/system/cpu/cpu{core}/cpuidle")) {
        for e in rd.flatten() {
            v.push(e.path().join("disable"));
        }
    }
    v.push(format!("/sys/class/net/{veth}/gro_flush_timeout").into());
    v.push(format!("/sys/class/net/{veth}/napi_defer_hard_irqs").into());
    v.retain(|p| p.exists());
    v
}

fn snap(files: &[PathBuf], veth: &str) -> BTreeMap<String, Vec<u8>> {
    let mut m: BTreeMap<String, Vec<u8>> = files.iter().map(|p| (p.display().to_string(), fs::read(p).unwrap())).collect();
    for s in [NicSetting::Gro, NicSetting::Lro] {
        m.insert(format!("ethtool {veth} {s}"), format!("{:?}", EthtoolIoctl.get(veth, s).ok()).into_bytes());
    }
    m
}

fn assert_snap_eq(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>, when: &str) {
    for (k, v) in a {
        assert_eq!(String::from_utf8_lossy(v), String::from_utf8_lossy(&b[k]), "{k} differs from the snapshot {when}");
    }
}

/// Restores the snapshot and removes the veth whatever happens.
struct Guard {
    state: PathBuf,
    veth: String,
    files: Vec<PathBuf>,
    before: Option<BTreeMap<String, Vec<u8>>>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(e) = revert(&Host::real(), &self.state) {
            eprintln!("guard: revert: {e}");
        }
        if let Some(before) = &self.before {
            for p in &self.files {
                let key = p.display().to_string();
                let Some(old) = before.get(&key) else { continue };
                if fs::read(p).ok().as_ref() != Some(old) {
                    let s = String::from_utf8_lossy(old).to_string();
                    let v = if SELECTION.contains(&key.as_str()) { normalize(&s, ValueFormat::Selection) } else { s };
                    eprintln!("guard: restoring {key}");
                    let _ = fs::write(p, v);
                }
            }
        }
        let _ = Command::new("ip").args(["link", "del", &self.veth]).status();
    }
}

/// A shell in a process group of its own that forks a `sleep` when a line
/// arrives on its stdin; the whole group is killed on drop (also when an
/// assertion fails).
struct Outsider(std::process::Child);

impl Outsider {
    fn start() -> Outsider {
        use std::os::unix::process::CommandExt;
        let c = Command::new("sh").args(["-c", "read _; sleep 30"]).stdin(std::process::Stdio::piped()).process_group(0).spawn().unwrap();
        Outsider(c)
    }

    fn id(&self) -> u32 {
        self.0.id()
    }

    /// Makes it fork and returns the child's pid.
    fn fork_one(&mut self) -> u32 {
        use std::io::Write;
        self.0.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let [kid] = children_of(self.id())[..] {
                return kid;
            }
            assert!(std::time::Instant::now() < deadline, "the outsider forked nothing in 10 s");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

impl Drop for Outsider {
    fn drop(&mut self) {
        // SAFETY: kill with a negative pid signals the group the shell leads (ours, by its pid).
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// The CPUs a process may run on (`Cpus_allowed_list` in its status).
fn cpus_allowed(pid: u32) -> String {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
    CpuList::parse(&list).unwrap().to_string()
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let kids = fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    kids.split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

fn read(p: &str) -> String {
    fs::read_to_string(p).unwrap().trim().to_string()
}

#[test]
fn real_host_apply_check_revert() {
    if !detpath_testkit::need_root("real_host_apply_check_revert", "the host's /proc and /sys") {
        return;
    }
    let host = Host::real();
    let online = host.online_cpus();
    if !detpath_testkit::need("real_host_apply_check_revert", "2 online CPUs", online.len() >= 2, "run on a machine with 2 or more cores") {
        return;
    }
    // One real-host tuning test at a time on this machine, across processes.
    let lock = fs::OpenOptions::new().create(true).truncate(false).write(true).open("/tmp/detpath-tune-real-host.lock").unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);

    let core = online.iter().last().unwrap();
    let cores = core.to_string();
    let stdir = tempfile::tempdir().unwrap();
    let state = stdir.path().join("state");
    let veth = format!("dtt{}a", std::process::id() % 100000);
    let mut guard = Guard { state: state.clone(), veth: veth.clone(), files: vec![], before: None };
    let ok = Command::new("ip").args(["link", "add", &veth, "type", "veth", "peer", "name", &format!("dtt{}b", std::process::id() % 100000)]).status().unwrap();
    assert!(ok.success(), "ip link add veth failed");
    // Give the veth settings apply will have to change (it is ours, deleted at the end).
    fs::write(format!("/sys/class/net/{veth}/gro_flush_timeout"), "20000").unwrap();
    fs::write(format!("/sys/class/net/{veth}/napi_defer_hard_irqs"), "2").unwrap();
    EthtoolIoctl.set(&veth, NicSetting::Gro, 1).unwrap();
    assert_eq!(EthtoolIoctl.get(&veth, NicSetting::Gro).unwrap(), 1);

    let files = watched_files(core, &veth);
    let before = snap(&files, &veth);
    guard.files = files.clone();
    guard.before = Some(before.clone());
    let req = ApplyRequest::new(CpuList::parse(&cores).unwrap()).iface(&veth).state_dir(&state);

    // Dry run: a plan, nothing changed.
    let p = plan(&host, &req).unwrap();
    assert!(p.iter().any(|c| c.knob.starts_with("irq.")), "{p:?}");
    assert_snap_eq(&before, &snap(&files, &veth), "after plan");

    // A process started before the apply, which forks another when told to, after it.
    let mut outsider = Outsider::start();
    let shield_root = shield::cpuset_v1_root(&host);
    let housekeeping = online.difference(&CpuList::parse(&cores).unwrap()).to_string();

    // Apply and check the values really changed.
    let tuning = apply(&host, &req).unwrap();
    eprintln!("{}", tuning.summary());
    let changed: Vec<&str> = tuning.changes().iter().map(|c| c.knob.as_str()).collect();
    assert!(changed.iter().any(|k| k.starts_with("irq.")), "{changed:?}");
    assert_eq!(read("/proc/sys/kernel/sched_rt_runtime_us"), "-1");
    assert!(read("/proc/sys/net/core/busy_poll").parse::<i64>().unwrap() >= 50);
    assert!(read("/proc/sys/net/core/busy_read").parse::<i64>().unwrap() >= 50);
    assert_eq!(read("/proc/sys/kernel/timer_migration"), "0");
    assert!(read("/proc/sys/vm/stat_interval").parse::<i64>().unwrap() >= 10);
    if Path::new("/sys/devices/virtual/workqueue/cpumask").exists() {
        let wq = CpuList::parse_mask(&read("/sys/devices/virtual/workqueue/cpumask")).unwrap();
        assert!(!wq.contains(core) && !wq.is_empty(), "unbound workqueues still on core {core}: {wq}");
    }
    assert!(read("/sys/kernel/mm/transparent_hugepage/enabled").contains("[never]"));
    assert_eq!(read(&format!("/sys/class/net/{veth}/gro_flush_timeout")), "0");
    assert_eq!(read(&format!("/sys/class/net/{veth}/napi_defer_hard_irqs")), "0");
    assert_eq!(EthtoolIoctl.get(&veth, NicSetting::Gro).unwrap(), 0);
    match &shield_root {
        // Runtime isolation: the outsider and what it forks since run on the housekeeping cores only; this process may still use the core.
        Some(root) => {
            assert_eq!(shield::read(&host, root), housekeeping);
            let forked = outsider.fork_one();
            assert_eq!(cpus_allowed(outsider.id()), housekeeping, "a process started before the apply");
            assert_eq!(cpus_allowed(forked), housekeeping, "a process forked after the apply");
            assert_eq!(cpus_allowed(std::process::id()), online.to_string(), "the applying process stays free");
        }
        None => eprintln!("real_host_apply_check_revert: no cgroup v1 cpuset hierarchy here: the cpuset shield is not checked"),
    }
    let skipped: Vec<String> = tuning.skipped().iter().map(|s| s.change.knob.clone()).collect();
    for s in tuning.skipped() {
        assert!(s.change.knob.starts_with("irq."), "only IRQs may be skipped: {s:?}");
        assert!(s.reason.contains("per-CPU or managed"), "{}", s.reason);
    }
    let mut moved = 0;
    for e in fs::read_dir("/proc/irq").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Ok(aff) = fs::read_to_string(e.path().join("smp_affinity_list")) else { continue };
        let aff = CpuList::parse(aff.trim()).unwrap();
        if skipped.contains(&format!("irq.{name}.affinity")) {
            continue;
        }
        assert!(!aff.contains(core), "IRQ {name} still on core {core}: {aff}");
        moved += 1;
    }
    assert!(moved > 0);
    // Idempotent: a second apply changes nothing.
    let again = apply(&host, &req).unwrap();
    assert!(again.changes().is_empty(), "{:?}", again.changes());
    drop(again);
    let knobs = audit(&host, &AuditRequest { cores: Some(req.cores.clone()), iface: Some(veth.clone()) }).unwrap();
    let fixable: Vec<&str> = knobs.iter().filter(|k| k.fix.is_some()).map(|k| k.name.as_str()).filter(|n| !skipped.iter().any(|s| s == n)).collect();
    assert!(fixable.is_empty(), "still fixable after apply: {fixable:?}");

    // Real-time thread setup on the tuned core.
    let rt_result = std::thread::spawn(move || {
        let aff0 = rt::current_thread_affinity().unwrap();
        let strict = RealtimeConfig { core, fifo_priority: Some(10), lock_memory: true, strict: true };
        let e = strict.apply_to_current_thread().unwrap_err();
        assert!(matches!(&e, RtError::CoreNotReady { warnings, .. } if warnings.contains(&Warning::NotIsolated { core })), "{e}");
        assert_eq!(rt::current_thread_affinity().unwrap(), aff0, "strict refusal changed the affinity");
        assert_eq!(rt::current_policy().0, libc::SCHED_OTHER);
        let cfg = RealtimeConfig { strict: false, ..strict };
        let w = cfg.apply_to_current_thread().unwrap();
        assert!(w.contains(&Warning::NotIsolated { core }), "{w:?}");
        assert!(!w.iter().any(|x| matches!(x, Warning::RtThrottling { .. })), "throttling was turned off: {w:?}");
        assert_eq!(rt::current_thread_affinity().unwrap(), CpuList::from_cpus([core]));
        assert_eq!(rt::current_policy(), (libc::SCHED_FIFO, 10));
        // SAFETY: sched_getcpu has no preconditions.
        assert_eq!(unsafe { libc::sched_getcpu() }, core as i32);
        rt::set_normal().unwrap();
        rt::unlock_memory();
        assert!(matches!(rt::set_fifo(100), Err(RtError::InvalidPriority(100))));
        w
    })
    .join();
    let w = rt_result.expect("rt thread panicked");
    eprintln!("rt warnings: {}", w.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("; "));
    let pm_before = rt::current_cpu_dma_latency().unwrap();
    {
        let _hold = rt::CpuDmaLatencyHold::new(0).unwrap();
        assert_eq!(rt::current_cpu_dma_latency().unwrap(), 0);
    }
    assert_eq!(rt::current_cpu_dma_latency().unwrap(), pm_before);

    // Revert: back to the snapshot, byte for byte.
    tuning.revert().unwrap();
    assert_snap_eq(&before, &snap(&files, &veth), "after revert");
    if let Some(root) = &shield_root {
        assert_eq!(shield::read(&host, root), shield::NO_SHIELD);
        assert!(!Path::new(root).join(shield::SHIELD_DIR).exists());
        assert_eq!(cpus_allowed(outsider.id()), online.to_string(), "the outsider is back on every core");
        assert_eq!(cpus_allowed(children_of(outsider.id())[0]), online.to_string(), "so is what it forked");
    }
    drop(outsider);
    assert!(journal_status(&state).unwrap().is_none());

    // Drop reverts too.
    {
        let t = apply(&host, &req).unwrap();
        assert!(!t.changes().is_empty());
        assert_eq!(read("/proc/sys/kernel/sched_rt_runtime_us"), "-1");
    }
    assert_snap_eq(&before, &snap(&files, &veth), "after drop");

    // SIGKILL in the middle of an apply, then revert.
    run_child_and_kill("/", &state, &cores, Some(&veth), 8);
    let j = journal_status(&state).unwrap().expect("journal left by the killed apply");
    assert!(j.entries.len() >= 8);
    assert_ne!(snap(&files, &veth), before, "the killed apply had changed the host");
    let r = revert(&host, &state).unwrap();
    assert_eq!(r.restored.len(), j.entries.len());
    assert_snap_eq(&before, &snap(&files, &veth), "after kill + revert");
    if let Some(root) = &shield_root {
        assert_eq!(shield::read(&host, root), shield::NO_SHIELD, "the killed apply's shield is dissolved");
        assert_eq!(cpus_allowed(std::process::id()), online.to_string(), "this process, shielded by the killed apply, is back");
    }

    // Bad input: typed errors, nothing changed.
    let bad = |r: ApplyRequest| apply(&host, &r).expect_err("must fail");
    assert!(matches!(bad(ApplyRequest::new(CpuList::parse("99").unwrap()).state_dir(&state)), TuneError::Core(CoreError::OutOfRange { core: 99, .. })));
    assert!(matches!(bad(ApplyRequest::new(online.clone()).state_dir(&state)), TuneError::NoHousekeepingCore { .. }));
    assert!(matches!(bad(req.clone().iface("nonexistent0")), TuneError::NoSuchInterface { .. }));
    fs::create_dir_all(&state).unwrap();
    fs::write(state.join(JOURNAL_FILE), "garbage").unwrap();
    assert!(matches!(bad(req.clone()), TuneError::JournalCorrupt { .. }));
    fs::remove_file(state.join(JOURNAL_FILE)).unwrap();
    assert_snap_eq(&before, &snap(&files, &veth), "after bad inputs");
    drop(guard);
}

/// `apply --save` then `audit --from` on this machine: the saved profile
/// matches the host it was saved on, a second apply from it changes nothing,
/// and revert leaves the host byte for byte as found.
#[test]
fn real_host_profile_save_verify_revert() {
    if !detpath_testkit::need_root("real_host_profile_save_verify_revert", "the host's /proc and /sys") {
        return;
    }
    let host = Host::real();
    let online = host.online_cpus();
    if !detpath_testkit::need("real_host_profile_save_verify_revert", "2 online CPUs", online.len() >= 2, "run on a machine with 2 or more cores") {
        return;
    }
    let lock = fs::OpenOptions::new().create(true).truncate(false).write(true).open("/tmp/detpath-tune-real-host.lock").unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let core = online.iter().last().unwrap();
    let stdir = tempfile::tempdir().unwrap();
    let state = stdir.path().join("state");
    let veth = format!("dtp{}a", std::process::id() % 100000);
    let mut guard = Guard { state: state.clone(), veth: veth.clone(), files: vec![], before: None };
    let ok = Command::new("ip").args(["link", "add", &veth, "type", "veth", "peer", "name", &format!("dtp{}b", std::process::id() % 100000)]).status().unwrap();
    assert!(ok.success(), "ip link add veth failed");
    fs::write(format!("/sys/class/net/{veth}/gro_flush_timeout"), "20000").unwrap();
    EthtoolIoctl.set(&veth, NicSetting::Gro, 1).unwrap();
    let files = watched_files(core, &veth);
    let before = snap(&files, &veth);
    guard.files = files.clone();
    guard.before = Some(before.clone());
    let req = ApplyRequest::new(CpuList::from_cpus([core])).iface(&veth).state_dir(&state);

    let tuning = apply(&host, &req).unwrap();
    assert!(!tuning.changes().is_empty());
    let p = SavedProfile::capture(&host, &req).unwrap();
    let path = stdir.path().join("profile.json");
    p.save(&path).unwrap();
    let p = SavedProfile::load(&path).unwrap();
    assert_eq!(p.nics[0].driver.as_deref(), Some("virtual"), "a veth is a software device");
    assert_eq!(p.host.cpu_count, online.len());
    assert!(p.knobs.iter().any(|k| k.name == "kernel.sched_rt_runtime_us" && k.value == "-1"), "{:?}", p.knobs);
    assert!(p.knobs.iter().any(|k| k.name == format!("nic.{veth}.gro") && k.value == "0"));
    // The host matches the profile it was saved from; the refused IRQs are not drift.
    let v = verify(&host, &p).unwrap();
    assert!(
        v.matches(),
        "drift on the host the profile was saved on: {:?} {:?}",
        v.differences,
        v.knobs.iter().filter(|r| r.state == profile::Match::Drift).collect::<Vec<_>>()
    );
    eprintln!(
        "profile: {} knobs, verify: {} rows, {} refused IRQs",
        p.knobs.len(),
        v.knobs.len(),
        v.knobs.iter().filter(|r| r.state == profile::Match::Refused).count()
    );
    // Applying the profile again changes nothing.
    let again = profile::apply_profile(&host, &p, &path, &state, &mut |_| {}).unwrap();
    assert!(again.changes().is_empty(), "{:?}", again.changes());
    drop(again);
    // A knob changed behind the profile's back is drift.
    let swappiness = read("/proc/sys/vm/swappiness");
    fs::write("/proc/sys/vm/swappiness", "33").unwrap();
    let v = verify(&host, &p).unwrap();
    fs::write("/proc/sys/vm/swappiness", &swappiness).unwrap();
    assert_eq!(v.drift, 1, "{:?}", v.knobs.iter().filter(|r| r.state == profile::Match::Drift).collect::<Vec<_>>());
    // Revert: as found, byte for byte.
    tuning.revert().unwrap();
    assert_snap_eq(&before, &snap(&files, &veth), "after profile apply + revert");
    assert!(journal_status(&state).unwrap().is_none());
    drop(guard);
}
