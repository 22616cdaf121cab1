//! Apply / revert / rollback / kill over a fake /proc + /sys tree that has
//! every knob (the knobs this machine lacks are tested only here).

mod common;

use std::fs;
use std::path::Path;

use common::*;
use detpath_sys::cpu::CoreError;
use detpath_tune::rt::{check_core_on, RealtimeConfig, Warning};
use detpath_tune::*;

fn req(cores: &str, state: &Path) -> ApplyRequest {
    ApplyRequest::new(CpuList::parse(cores).unwrap()).iface(IFACE).state_dir(state)
}

fn read(root: &Path, rel: &str) -> String {
    fs::read_to_string(root.join(rel)).unwrap().trim().to_string()
}

#[test]
#[ignore = "helper: run by kill_mid_apply_then_revert in a child process"]
fn child_apply_then_hang() {
    child_main();
}

#[test]
fn audit_reports_every_knob() {
    let t = tempfile::tempdir().unwrap();
    let host = fake_host(t.path());
    let knobs = audit(&host, &AuditRequest { cores: Some(CpuList::parse("1").unwrap()), iface: Some(IFACE.into()) }).unwrap();
    let get = |n: &str| knobs.iter().find(|k| k.name == n).unwrap_or_else(|| panic!("no knob {n}"));
    for n in [
        "isolcpus",
        "nohz_full",
        "rcu_nocbs",
        "irq.1.affinity",
        "irq.24.affinity",
        "irq.default_affinity",
        "irqbalance",
        "nic.fake0.rx-usecs",
        "nic.fake0.tx-usecs",
        "nic.fake0.adaptive-rx",
        "nic.fake0.adaptive-tx",
        "nic.fake0.gro",
        "nic.fake0.lro",
        "nic.fake0.gro_flush_timeout",
        "nic.fake0.napi_defer_hard_irqs",
        "cpu1.governor",
        "cpu1.max_freq",
        "cpu1.min_freq",
        "turbo",
        "cpu1.cpuidle.state1.disable",
        "cpu1.cpuidle.state2.disable",
        "cpu_dma_latency",
        "cpu1.smt_siblings",
        "smt.control",
        "kernel.sched_rt_runtime_us",
        "kernel.timer_migration",
        "kernel.watchdog",
        "kernel.nmi_watchdog",
        "vm.stat_interval",
        "vm.swappiness",
        "net.core.busy_poll",
        "net.core.busy_read",
        "thp.enabled",
        "thp.defrag",
        "swap",
        "preempt",
        "clocksource",
    ] {
        assert_eq!(get(n).status, Status::Misconfigured, "{n}: {:?}", get(n));
    }
    assert_eq!(get("nohz_full").cmdline.as_deref(), Some("nohz_full=1"));
    assert_eq!(get("isolcpus").change, ChangeKind::Reboot);
    assert_eq!(get("nic.fake0.rings").status, Status::Info);
    assert_eq!(get("nic.fake0.rings").current, "rx 1024 tx 1024 (max 4096/4096)");
    // IRQ 0 is on core 0 only, IRQ 25 on 2-3: fine for datapath core 1.
    assert_eq!(get("irq.0.affinity").status, Status::Ok);
    assert_eq!(get("irq.25.affinity").status, Status::Ok);
    assert_eq!(get("irq.1.affinity").recommended, "0,2-3");
    assert_eq!(get("irq.24.affinity").recommended, "0,2-3");
    assert_eq!(get("irqbalance").current, "running (pid 777)");
    assert_eq!(get("thp.enabled").current, "always");
    assert_eq!(get("preempt").current, "voluntary");
    assert!(!is_tuned(&knobs));
    let json = serde_json::to_value(&knobs).unwrap();
    for k in json.as_array().unwrap() {
        for f in ["name", "current", "recommended", "why", "change", "status"] {
            assert!(k.get(f).is_some(), "{f} missing in {k}");
        }
    }
    // A knob the tree lacks is "not present", never an error.
    fs::remove_dir_all(t.path().join("sys/devices/system/cpu/cpu1/cpufreq")).unwrap();
    fs::remove_file(t.path().join("proc/sys/kernel/nmi_watchdog")).unwrap();
    fs::remove_file(t.path().join(format!("fake-nic/{IFACE}/rx-usecs"))).unwrap();
    let knobs = audit(&host, &AuditRequest { cores: Some(CpuList::parse("1").unwrap()), iface: Some(IFACE.into()) }).unwrap();
    let get = |n: &str| knobs.iter().find(|k| k.name == n).unwrap().status;
    assert_eq!(get("cpufreq"), Status::NotPresent);
    assert_eq!(get("kernel.nmi_watchdog"), Status::NotPresent);
    assert_eq!(get("nic.fake0.rx-usecs"), Status::Unsupported);
}

#[test]
fn apply_is_journalled_idempotent_and_reverts_byte_exact() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_host(root);
    let before = snapshot(root);
    let state = s.path().join("state");
    let journal_path = state.join(JOURNAL_FILE);
    let mut seen = 0;
    let tuning = apply_with_progress(&host, &req("1", &state), &mut |step| {
        // The journal on disk already holds this change with the old value.
        if step.outcome == StepOutcome::Changed {
            seen += 1;
            let j: Journal = serde_json::from_slice(&fs::read(&journal_path).unwrap()).unwrap();
            assert_eq!(j.entries.len(), seen);
            let e = j.entries.last().unwrap();
            assert_eq!(e.knob, step.change.knob);
            assert_eq!(e.new, step.change.to);
            assert_eq!(j.boot_id, BOOT_ID);
        }
    })
    .unwrap();
    assert!(tuning.changes().len() >= 25, "{}", tuning.summary());
    assert!(tuning.skipped().is_empty());
    // Every runtime knob has its value.
    assert_eq!(read(root, "proc/irq/1/smp_affinity_list"), "0,2-3");
    assert_eq!(read(root, "proc/irq/24/smp_affinity_list"), "0,2-3");
    assert_eq!(read(root, "proc/irq/0/smp_affinity_list"), "0");
    assert_eq!(read(root, "proc/irq/default_smp_affinity"), "d");
    assert_eq!(read(root, "proc/sys/kernel/sched_rt_runtime_us"), "-1");
    assert_eq!(read(root, "proc/sys/kernel/timer_migration"), "0");
    assert_eq!(read(root, "proc/sys/kernel/watchdog"), "0");
    assert_eq!(read(root, "proc/sys/kernel/nmi_watchdog"), "0");
    assert_eq!(read(root, "proc/sys/vm/stat_interval"), "10");
    assert_eq!(read(root, "proc/sys/vm/swappiness"), "10");
    assert_eq!(read(root, "proc/sys/net/core/busy_poll"), "50");
    assert_eq!(read(root, "proc/sys/net/core/busy_read"), "50");
    assert_eq!(read(root, "sys/kernel/mm/transparent_hugepage/enabled"), "never");
    assert_eq!(read(root, "sys/kernel/mm/transparent_hugepage/defrag"), "never");
    assert_eq!(read(root, "sys/kernel/debug/sched/preempt"), "full");
    assert_eq!(read(root, "sys/devices/system/clocksource/clocksource0/current_clocksource"), "tsc");
    assert_eq!(read(root, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"), "performance");
    assert_eq!(read(root, "sys/devices/system/cpu/cpu1/cpufreq/scaling_min_freq"), "3500000");
    assert_eq!(read(root, "sys/devices/system/cpu/cpu1/cpufreq/scaling_max_freq"), "3500000");
    assert_eq!(read(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"), "powersave", "only datapath cores");
    assert_eq!(read(root, "sys/devices/system/cpu/intel_pstate/no_turbo"), "1");
    assert_eq!(read(root, "sys/devices/system/cpu/cpu1/cpuidle/state0/disable"), "0", "POLL stays");
    assert_eq!(read(root, "sys/devices/system/cpu/cpu1/cpuidle/state1/disable"), "1");
    assert_eq!(read(root, "sys/devices/system/cpu/cpu1/cpuidle/state2/disable"), "1");
    assert_eq!(read(root, "sys/class/net/fake0/gro_flush_timeout"), "0");
    assert_eq!(read(root, "sys/class/net/fake0/napi_defer_hard_irqs"), "0");
    for s in ["rx-usecs", "tx-usecs", "adaptive-rx", "adaptive-tx", "gro", "lro"] {
        assert_eq!(read(root, &format!("fake-nic/fake0/{s}")), "0", "{s}");
    }
    assert_eq!(read(root, "fake-nic/fake0/rx-ring"), "1024", "rings are not changed");
    // Afterwards nothing is left that apply could fix, and cpu_dma_latency is fine (deep states off).
    let knobs = audit(&host, &AuditRequest { cores: Some(CpuList::parse("1").unwrap()), iface: Some(IFACE.into()) }).unwrap();
    assert!(knobs.iter().all(|k| k.fix.is_none()), "{:?}", knobs.iter().filter(|k| k.fix.is_some()).collect::<Vec<_>>());
    assert_eq!(knobs.iter().find(|k| k.name == "cpu_dma_latency").unwrap().status, Status::Ok);
    // Applying twice changes nothing more.
    let journal_before = fs::read(&journal_path).unwrap();
    let mid = snapshot(root);
    let again = apply(&host, &req("1", &state)).unwrap();
    assert!(again.changes().is_empty(), "{:?}", again.changes());
    drop(again); // reverts its own (empty) session only
    assert_eq!(fs::read(&journal_path).unwrap(), journal_before);
    assert_same(&mid, &snapshot(root));
    // Status shows the pending journal.
    assert_eq!(journal_status(&state).unwrap().unwrap().entries.len(), tuning.changes().len());
    let n = tuning.changes().len();
    let report = tuning.revert().unwrap();
    assert_eq!(report.restored.len(), n);
    assert!(!journal_path.exists(), "empty journal is removed");
    assert_same(&canonical(before.clone()), &canonical(snapshot(root)));
    // Byte-exact everywhere except the three selection files (re-rendered by the kernel).
    let after = snapshot(root);
    for (p, v) in &before {
        if !SELECTION_FILES.iter().any(|f| Path::new(f) == p) {
            assert_eq!(after.get(p), Some(v), "{}", p.display());
        }
    }
}

#[test]
fn drop_reverts_and_sessions_stack() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_host(root);
    let before = canonical(snapshot(root));
    // First session tunes core 1 and is kept (as `detpath tune apply` does).
    let first = apply(&host, &req("1", s.path())).unwrap();
    let n1 = first.changes().len();
    first.keep();
    let after_first = snapshot(root);
    // A second session for cores 1-2 adds only what core 2 needs; dropping it undoes only that.
    {
        let second = apply(&host, &req("1-2", s.path())).unwrap();
        assert!(!second.changes().is_empty());
        assert!(second.changes().iter().all(|c| c.knob.contains("cpu2") || c.knob.starts_with("irq.")), "{:?}", second.changes());
        assert_eq!(read(root, "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor"), "performance");
        assert_eq!(journal_status(s.path()).unwrap().unwrap().entries.len(), n1 + second.changes().len());
    }
    assert_same(&after_first, &snapshot(root));
    assert_eq!(journal_status(s.path()).unwrap().unwrap().entries.len(), n1);
    // `detpath tune revert` undoes the rest.
    let r = revert(&host, s.path()).unwrap();
    assert_eq!(r.restored.len(), n1);
    assert_same(&before, &canonical(snapshot(root)));
    assert!(journal_status(s.path()).unwrap().is_none());
}

#[test]
fn failure_midway_rolls_back() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_host(root);
    let before = canonical(snapshot(root));
    // After 5 changes, vm.stat_interval becomes a file root cannot write (a
    // read-only sysctl): its change is journalled, the write fails (EACCES).
    let target = root.join("proc/sys/vm/stat_interval");
    let mut n = 0;
    let err = apply_with_progress(&host, &req("1", s.path()), &mut |step| {
        if step.outcome == StepOutcome::Changed {
            n += 1;
            if n == 5 {
                fs::remove_file(&target).unwrap();
                std::os::unix::fs::symlink("/proc/sys/kernel/osrelease", &target).unwrap();
            }
        }
    })
    .expect_err("apply must fail");
    match &err {
        TuneError::ApplyFailed { knob, rolled_back, .. } => {
            assert_eq!(knob, "vm.stat_interval");
            assert!(*rolled_back >= 5, "{err}");
        }
        e => panic!("unexpected error {e}"),
    }
    assert!(err.to_string().contains("rolled back"), "{err}");
    fs::remove_file(&target).unwrap();
    fs::write(&target, "1\n").unwrap();
    assert_same(&before, &canonical(snapshot(root)));
    assert!(journal_status(s.path()).unwrap().is_none(), "journal emptied by the rollback");
}

#[test]
fn nic_failure_rolls_back() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_host(root);
    fs::write(root.join("fake-nic/fake0/fail-gro"), "").unwrap();
    let before = canonical(snapshot(root));
    let err = apply(&host, &req("1", s.path())).expect_err("apply must fail");
    assert!(matches!(&err, TuneError::ApplyFailed { knob, rolled_back, .. } if knob == "nic.fake0.gro" && *rolled_back > 3), "{err}");
    assert_same(&before, &canonical(snapshot(root)));
}

#[test]
fn kill_mid_apply_then_revert() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_host(root);
    let before = canonical(snapshot(root));
    let state = s.path().join("state");
    run_child_and_kill(root.to_str().unwrap(), &state, "1", Some(IFACE), 12);
    let j = journal_status(&state).unwrap().expect("journal left by the killed process");
    assert!(j.entries.len() >= 12, "{}", j.entries.len());
    assert_ne!(before, canonical(snapshot(root)), "the child changed the tree");
    let r = revert(&host, &state).unwrap();
    assert_eq!(r.restored.len(), j.entries.len());
    assert_same(&before, &canonical(snapshot(root)));
    assert!(journal_status(&state).unwrap().is_none());
}

#[test]
fn journal_entry_without_change_reverts_cleanly() {
    // A kill between writing the journal and making the change leaves an entry
    // whose old value is still in place: revert writes it back, harmlessly.
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_host(root);
    let before = snapshot(root);
    let j = Journal {
        version: 1,
        boot_id: BOOT_ID.into(),
        root: root.to_path_buf(),
        entries: vec![Entry {
            session: "1-1".into(),
            knob: "vm.swappiness".into(),
            target: Target::File { path: "/proc/sys/vm/swappiness".into(), format: ValueFormat::Plain },
            old: "60\n".into(),
            new: "10".into(),
            restore: "60\n".into(),
        }],
    };
    JournalStore::new(s.path()).save(&j).unwrap();
    revert(&host, s.path()).unwrap();
    assert_same(&before, &snapshot(root));
}

#[test]
fn bad_inputs_change_nothing() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let root = t.path();
    let host = fake_host(root);
    let before = snapshot(root);
    let r = |cores: &str| apply(&host, &req(cores, s.path())).expect_err("must fail");
    assert!(matches!(r("9"), TuneError::Core(CoreError::OutOfRange { core: 9, .. })));
    assert!(matches!(r("5"), TuneError::Core(CoreError::NotOnline { core: 5, .. })));
    assert!(matches!(r("0-3"), TuneError::NoHousekeepingCore { .. }));
    assert!(matches!(CpuList::parse("1-").map_err(TuneError::from), Err(TuneError::InvalidCoreList { .. })));
    assert!(matches!("fast".parse::<Profile>(), Err(TuneError::UnknownProfile(_))));
    let e = apply(&host, &req("1", s.path()).iface("nope0")).err().unwrap();
    assert!(matches!(&e, TuneError::NoSuchInterface { iface, .. } if iface == "nope0"), "{e}");
    assert!(e.to_string().contains("ip -br link"));
    assert!(matches!(apply(&host, &ApplyRequest::new(CpuList::new()).state_dir(s.path())), Err(TuneError::NoCores)));
    assert_same(&before, &snapshot(root));
    assert!(journal_status(s.path()).unwrap().is_none());

    // A corrupt journal: apply and revert refuse, nothing changes, the journal stays.
    let jp = s.path().join(JOURNAL_FILE);
    fs::write(&jp, b"{ not json").unwrap();
    let e = apply(&host, &req("1", s.path())).err().unwrap();
    assert!(matches!(e, TuneError::JournalCorrupt { .. }), "{e}");
    assert!(matches!(revert(&host, s.path()), Err(TuneError::JournalCorrupt { .. })));
    assert_eq!(fs::read(&jp).unwrap(), b"{ not json");
    assert_same(&before, &snapshot(root));

    // A journal from another boot: refused by apply and revert, removed by discard.
    let other = Journal {
        version: 1,
        boot_id: "00000000-0000-0000-0000-000000000000".into(),
        root: root.to_path_buf(),
        entries: vec![Entry {
            session: "1-1".into(),
            knob: "vm.swappiness".into(),
            target: Target::File { path: "/proc/sys/vm/swappiness".into(), format: ValueFormat::Plain },
            old: "30\n".into(),
            new: "10".into(),
            restore: "30\n".into(),
        }],
    };
    JournalStore::new(s.path()).save(&other).unwrap();
    let e = apply(&host, &req("1", s.path())).err().unwrap();
    assert!(matches!(e, TuneError::JournalOtherBoot { .. }), "{e}");
    assert!(e.to_string().contains("--discard-stale"));
    assert!(matches!(revert(&host, s.path()), Err(TuneError::JournalOtherBoot { .. })));
    assert_same(&before, &snapshot(root));
    assert!(discard_stale_journal(&host, s.path()).unwrap());
    assert!(!jp.exists());

    // A journal of another root is refused too.
    let mut foreign = other.clone();
    foreign.boot_id = BOOT_ID.into();
    foreign.root = "/elsewhere".into();
    JournalStore::new(s.path()).save(&foreign).unwrap();
    assert!(matches!(revert(&host, s.path()), Err(TuneError::JournalRootMismatch { .. })));
    assert!(!discard_stale_journal(&host, s.path()).is_ok_and(|d| d), "not stale: kept");
    assert_same(&before, &snapshot(root));
}

#[test]
fn check_core_and_strict_realtime() {
    let t = tempfile::tempdir().unwrap();
    let s = tempfile::tempdir().unwrap();
    let host = fake_host(t.path());
    let w = check_core_on(&host, 1).unwrap();
    assert!(w.contains(&Warning::NotIsolated { core: 1 }), "{w:?}");
    assert!(w.iter().any(|x| matches!(x, Warning::IrqsOnCore { irqs, .. } if irqs.len() == 3 && irqs[0].starts_with("1 (i8042)"))), "{w:?}");
    assert!(w.iter().any(|x| matches!(x, Warning::SmtSiblingOnline { siblings, .. } if siblings.to_string() == "3")));
    assert!(w.iter().any(|x| matches!(x, Warning::RtThrottling { runtime_us: 950000, .. })));
    assert!(w.iter().any(|x| matches!(x, Warning::Governor { .. })));
    assert!(matches!(check_core_on(&host, 6), Err(RtError::Core(CoreError::NotOnline { .. }))));

    // Strict refuses before touching the thread.
    let aff = detpath_tune::rt::current_thread_affinity().unwrap();
    let cfg = RealtimeConfig { core: 1, fifo_priority: Some(10), lock_memory: false, strict: true };
    let e = cfg.apply_on(&host.cpus()).unwrap_err();
    assert!(matches!(&e, RtError::CoreNotReady { warnings, .. } if warnings.iter().all(|w| w.is_blocking())), "{e}");
    assert_eq!(detpath_tune::rt::current_thread_affinity().unwrap(), aff);
    assert_eq!(detpath_tune::rt::current_policy().0, libc::SCHED_OTHER);
    assert!(matches!(
        RealtimeConfig { core: 1, fifo_priority: Some(0), lock_memory: false, strict: false }.apply_on(&host.cpus()),
        Err(RtError::InvalidPriority(0))
    ));

    // After apply, the IRQ, throttling and governor warnings are gone.
    let tuning = apply(&host, &req("1", s.path())).unwrap();
    let w = check_core_on(&host, 1).unwrap();
    assert!(!w.iter().any(|x| matches!(x, Warning::IrqsOnCore { .. } | Warning::RtThrottling { .. } | Warning::Governor { .. })), "{w:?}");
    assert!(w.contains(&Warning::NotIsolated { core: 1 }));
    tuning.revert().unwrap();
}
