//! `detpath sched bench` over real datapaths in the two-namespace testbed:
//! strict classes never let a packet out late, best effort keeps to its
//! share, a plan's apps keep to their partitions, and two slot clocks
//! synchronise over detpath datagrams.
//!
//! Needs root (namespaces; afxdp and dpdk attach XDP programs). Each test
//! makes its own uniquely named testbed, removed on drop (also when the test
//! fails). The tests busy-poll both cores, so they run one at a time.

use detpath::testbed::{Testbed, TestbedConfig};
use detpath_sched_bench::sync_run::{self, SyncRunConfig};
use detpath_sched_bench::{self as bench, BenchConfig, Method};
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());


/// A short benchmark of `methods` on `datapaths` in a fresh testbed.
fn short_bench(tag: &str, datapaths: &[&str], methods: &[Method]) -> bench::Report {
    let mut cfg = BenchConfig::paper();
    cfg.datapaths = datapaths.iter().map(|s| s.to_string()).collect();
    cfg.methods = methods.to_vec();
    cfg.duration_ns = 1_500_000_000;
    cfg.warmup_ns = 200_000_000;
    // A name no other test uses; the testbed is removed when `bench::run` returns or unwinds.
    let tb = TestbedConfig::unique(tag);
    cfg.testbed_prefix = tb.a.netns.trim_end_matches("-a").to_string();
    let report = bench::run(&cfg, "test", &|l| eprintln!("{l}"), &|| false).expect("bench runs");
    assert!(!Testbed::status(&tb).complete(&tb), "testbed {} left behind", cfg.testbed_prefix);
    report
}

#[test]
fn strict_classes_never_let_a_packet_out_late() {
    if !detpath_testkit::need_root("strict_classes_never_let_a_packet_out_late", "namespaces, XDP") {
        return;
    }
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let r = short_bench("schv", &["afxdp", "dpdk", "udp"], &[Method::Slots]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.runs.len(), 3);
    for run in &r.runs {
        eprintln!(
            "{} slots: violations {}, rt sent {} received {}, release p50 {} p99 {} ns",
            run.datapath, run.violations, run.rt_sent, run.rt_received, run.release_error_ns.p50, run.release_error_ns.p99
        );
        assert_eq!(run.violations, 0, "{}: a strict class let a packet out late", run.datapath);
        // The histogram keeps 3 significant digits: an error of 4997..5000 ns reads 5003.
        assert!(
            run.release_error_ns.max <= run.late_tolerance_ns * 1001 / 1000,
            "{}: release error {} ns beyond the tolerance",
            run.datapath,
            run.release_error_ns.max
        );
        // Not vacuous: real-time packets did go out, and arrived.
        let offered: u64 = run.classes.iter().filter(|c| c.name != "bulk").map(|c| c.counters.accepted).sum();
        assert!(run.rt_sent * 10 >= offered, "{}: only {} of {} real-time packets left", run.datapath, run.rt_sent, offered);
        assert!(run.rt_received > 0 && run.rt_received <= run.rt_sent, "{}: received {}", run.datapath, run.rt_received);
        // Every accepted packet is accounted for: sent or dropped (late) or still held at the end (none).
        for c in run.classes.iter().filter(|c| c.name != "bulk") {
            let k = &c.counters;
            assert_eq!(k.moved, 0, "{}: strict class {} moved packets", run.datapath, c.name);
            assert!(k.sent <= k.accepted, "{}: {:?}", run.datapath, k);
        }
    }
}

#[test]
fn best_effort_keeps_to_its_share() {
    if !detpath_testkit::need_root("best_effort_keeps_to_its_share", "namespaces, XDP") {
        return;
    }
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let r = short_bench("schb", &["afxdp", "dpdk", "udp"], &[Method::Slots]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    for run in &r.runs {
        let be = run.be.expect("slots run with a flood reports the share");
        let used_or_missed = (be.sent_in_window + be.missed_slots.min(be.slots_in_window)) as f64 / be.slots_in_window as f64;
        eprintln!(
            "{}: best effort {:.3}% of slots (share {:.1}%), {} owned slots missed (poll too late), {} received",
            run.datapath,
            be.measured_fraction * 100.0,
            be.expected_fraction * 100.0,
            be.missed_slots,
            be.received
        );
        // The cap: never more than its share (2% tolerance for the window's edges).
        assert!(be.measured_fraction <= be.expected_fraction * 1.02, "{}: {:?}", run.datapath, be);
        // Under flood every owned slot was offered: used, or missed because this VM's CPU was elsewhere.
        assert!((used_or_missed / be.expected_fraction - 1.0).abs() <= 0.02, "{}: {:?}", run.datapath, be);
        assert!(be.received > 0 && be.received <= be.sent_in_window + 64 * 1024, "{}: {:?}", run.datapath, be);
    }
}

#[test]
fn a_sync_run_locks() {
    if !detpath_testkit::need_root("a_sync_run_locks", "namespaces, XDP") {
        return;
    }
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("schs")).expect("testbed");
    for (i, dp) in ["afxdp", "dpdk", "udp"].iter().enumerate() {
        let cfg = SyncRunConfig {
            duration_ns: 15_000_000_000,
            // Software receive time stamps on this VM carry 10-50 µs of path
            // asymmetry (afxdp the most), which no servo can see. Unsteered, the
            // 50 ppm drift alone would carry the slave 400 µs away in 8 s.
            lock_threshold_ns: 100_000,
            port: 7700 + 2 * i as u16,
            ..SyncRunConfig::default_for(dp)
        };
        let run = sync_run::run(&tb, &cfg).unwrap_or_else(|e| panic!("{dp}: {e:#}"));
        let r = &run.report;
        eprintln!(
            "{dp}: lock after {:?} s, residual p50 {:?} p99 {:?} max {:?} ns, drift estimate {:.0} ppb, {} samples ({})",
            r.time_to_lock_s,
            r.residual_p50_ns,
            r.residual_p99_ns,
            r.residual_max_ns,
            r.final_drift_ppb,
            r.samples.len(),
            run.endpoints
        );
        assert!(r.samples.len() >= 40, "{dp}: only {} exchanges completed", r.samples.len());
        assert!(r.time_to_lock_s.is_some(), "{dp}: never locked: {:?}", &r.samples[r.samples.len().saturating_sub(5)..]);
        // The injected 50 ppm is being compensated: over the second half of the
        // run the servo applies between -20 and -80 ppm on average. (Within 15 s
        // and µs-noisy software time stamps it need not have settled; exact
        // convergence from 37 µs and 50 ppm is the servo property test's job.)
        let late = &r.samples[r.samples.len() / 2..];
        let rate = late.iter().map(|s| s.rate_ppb).sum::<f64>() / late.len() as f64;
        assert!((-80_000.0..=-20_000.0).contains(&rate), "{dp}: mean rate {rate} ppb over the second half");
    }
}

#[test]
fn a_planned_run_sends_every_app_only_in_its_partition() {
    if !detpath_testkit::need_root("a_planned_run_sends_every_app_only_in_its_partition", "namespaces, XDP") {
        return;
    }
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // crates/sched/plans/two-apps.json (the README's run) with 50 µs slots: a debug build's send on a loaded VM can
    // outlast a 10 µs slot, and the planner gives `ctl` two adjacent slots.
    let spec = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sched/plans/two-apps-50us.json");
    let planned = bench::plan::load(&spec, None, std::time::Duration::from_secs(10)).expect("the example plan is feasible");
    let mut cfg = BenchConfig::paper();
    // Shifted one slot: the planner gives `ctl` ring position 0, where this VM's 250 Hz tick
    // (on the millisecond boundary, every fourth 1 ms cycle) makes a quarter of its instances late.
    planned.apply(&mut cfg, 64, detpath_sched::Mode::Strict, true, 1, 1).expect("the plan loads");
    cfg.datapaths = ["udp", "afxdp", "dpdk"].iter().map(|s| s.to_string()).collect();
    cfg.methods = vec![Method::Slots];
    cfg.duration_ns = 1_600_000_000;
    cfg.warmup_ns = 200_000_000;
    let tb = TestbedConfig::unique("schp");
    cfg.testbed_prefix = tb.a.netns.trim_end_matches("-a").to_string();
    let r = bench::run(&cfg, "test", &|l| eprintln!("{l}"), &|| false).expect("bench runs");
    assert!(!Testbed::status(&tb).complete(&tb), "testbed {} left behind", cfg.testbed_prefix);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.runs.len(), 3);
    // The partitions the plan gave, independently of the scheduler's classes.
    let owner = |pos: u32| planned.ring.apps.iter().find(|a| a.owns(((pos + 20 - 1) % 20) as usize)).map(|a| a.name.as_str());
    for run in &r.runs {
        assert_eq!(run.violations, 0, "{}: a strict class let a packet out late", run.datapath);
        for f in &run.flows {
            eprintln!(
                "{} {}: due {} sent {} refused {} outside {} received {}, release p50/p99/max {}/{}/{} ns, IAT error p50/p99 {}/{} ns",
                run.datapath,
                f.name,
                f.planned,
                f.sent,
                f.refused,
                f.outside_partition,
                f.received,
                f.release_error_ns.p50,
                f.release_error_ns.p99,
                f.release_error_ns.max,
                f.iat_error_ns.p50,
                f.iat_error_ns.p99
            );
            assert_eq!(f.outside_partition, 0, "{} {}: instances left outside the application's slots", run.datapath, f.name);
            // The histogram keeps 3 significant digits: a 5000 ns error can read 5003.
            assert!(f.release_error_ns.max <= run.late_tolerance_ns * 1001 / 1000, "{} {}: {:?}", run.datapath, f.name, f.release_error_ns);
            // Not vacuous: every flow's instances went out and arrived (strict classes drop the ones this VM made late).
            assert!(f.planned > 0 && f.received > 0 && f.received <= f.sent, "{} {}: received {} of {}", run.datapath, f.name, f.received, f.sent);
        }
        // Most of them: a flow can lose a burst to the hypervisor, the run as a whole keeps most.
        let (due, sent): (u64, u64) = run.flows.iter().fold((0, 0), |(d, s), f| (d + f.planned, s + f.sent));
        assert!(sent * 2 >= due, "{}: sent {sent} of {due} planned instances", run.datapath);
        // The classes are the plan's applications, each owning exactly its partition; the flood owns none of it.
        for c in &run.classes {
            let class = cfg.sched.classes.iter().find(|k| k.name == c.name).expect("class in the config");
            for pos in class.mask.positions() {
                match c.kind {
                    detpath_sched::ClassKind::RealTime => assert_eq!(owner(pos), Some(c.name.as_str()), "{}: position {pos}", c.name),
                    detpath_sched::ClassKind::BestEffort => assert_eq!(owner(pos), None, "flood in planned slot {pos}"),
                }
            }
        }
    }
}

#[test]
fn the_sweeps_hold_best_effort_to_its_reservation_and_trade_cpu_for_release_error() {
    if !detpath_testkit::need_root("the_sweeps_hold_best_effort_to_its_reservation_and_trade_cpu_for_release_error", "namespaces") {
        return;
    }
    use bench::sweep::{self, SweepKind, SweepParams};
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut cfg = BenchConfig::paper();
    cfg.datapaths = vec!["udp".into()];
    cfg.duration_ns = 400_000_000;
    cfg.warmup_ns = 100_000_000;
    let tb = TestbedConfig::unique("schw");
    cfg.testbed_prefix = tb.a.netns.trim_end_matches("-a").to_string();
    let p = SweepParams { loads: vec![0.1, 1.0], sizes: vec![64, 1400], slots_ns: vec![10_000, 100_000], batches: vec![0, 32], ..SweepParams::default() };
    let kinds = [SweepKind::BeShare, SweepKind::IatSize, SweepKind::Cost];
    let r = sweep::run(&cfg, &kinds, &p, "test", &|l| eprintln!("{l}"), &|| false).expect("sweeps run");
    assert!(!Testbed::status(&tb).complete(&tb), "testbed {} left behind", cfg.testbed_prefix);
    eprint!("{}", sweep::table(&r));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.points.len(), 3 * 2 * 2 + 2 * 2 + 2 + 2);
    for pt in &r.points {
        // Every run carries its CPU cost: the sender and the receiver measured, on the cores they were given.
        let cpu = pt.run.cpu.as_ref().expect("cpu in every run");
        for name in ["sender", "receiver"] {
            let th = cpu.threads.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no {name} thread: {cpu:?}"));
            assert!(th.total_s() > 0.0 && th.total_s() <= pt.run.wall_s * 1.1 + 0.05, "{name}: {th:?} over {} s", pt.run.wall_s);
        }
        assert!(cpu.cores.iter().any(|c| c.core == cfg.cpus.0) && cpu.work_per_cpu_s.is_some_and(|w| w > 0.0), "{cpu:?}");
        assert!(pt.run.rt_received > 0, "{:?}: nothing received", pt.label);
    }
    for pt in r.points.iter().filter(|p| p.label.sweep == SweepKind::BeShare) {
        let be = pt.run.be.expect("be-share runs report the share");
        let (owned, offered) = (pt.label.reserved_fraction.unwrap(), be.offered_fraction.expect("an offered load"));
        // The cap: never above the reservation (2 % for the window's edges), nor above what was offered.
        assert!(be.measured_fraction <= owned * 1.02, "{:?}: {be:?}", pt.label);
        assert!(be.measured_fraction <= offered * 1.02 + 0.002, "{:?}: {be:?}", pt.label);
        if pt.label.offered == Some(1.0) {
            // Offered beyond the reservation: the pre-buffer overflowed, and every owned slot was used or missed.
            assert!(be.refused_fraction.unwrap_or(0.0) > 0.0, "{:?}: {be:?}", pt.label);
            let used_or_missed = (be.sent_in_window + be.missed_slots.min(be.slots_in_window)) as f64 / be.slots_in_window as f64;
            assert!(used_or_missed >= owned * 0.9, "{:?}: {be:?}", pt.label);
        } else {
            // Below the reservation, most of what is offered goes through.
            assert!(be.measured_fraction >= offered * 0.5, "{:?}: {be:?}", pt.label);
        }
    }
    let cost = |batch: u32| r.points.iter().find(|p| p.label.series == Some("batch") && p.label.batch == batch).expect("cost point");
    let (busy, batched) = (cost(0), cost(32));
    let share = |p: &sweep::SweepPoint| bench::thread_share(&p.run, "sender").unwrap_or(0.0);
    // CPU: a busy poller spins, so it holds its core whenever it is
    // scheduled (at least a third of it with two other runnable tasks on it,
    // load 6 on these 2 vCPUs); a poll every 32 slots of 10 µs sleeps
    // 320 µs between polls of a few µs (a few % of a core, less when loaded
    // since it then wakes later). The order holds under load, only the gap
    // narrows.
    assert!(share(batched) < share(busy), "polling every 32 slots used {} of a core, busy polling {}", share(batched), share(busy));
    // Release error: not compared with busy polling, whose median on a
    // loaded VM is whatever the scheduler leaves it (a figure, in the table
    // above). What batching itself guarantees is a floor: a packet due in a
    // slot leaves at the next poll, and polls come every 32 slots, so its
    // lateness is spread over 0..32 slots (the flow's 10-slot period against
    // the 32-slot poll visits every even offset), median about 16 slots.
    // Load only delays polls further. A quarter of that, 4 slots, is the
    // bound: it fails only if batching stopped delaying releases.
    let slot_ns = batched.label.slot_ns;
    assert!(
        batched.run.release_error_ns.p50 >= 4 * slot_ns,
        "a poll every 32 slots of {slot_ns} ns: median release error {:?} below 4 slots (busy polling: {:?})",
        batched.run.release_error_ns,
        busy.run.release_error_ns
    );
    let out = tempfile::tempdir().expect("temp dir");
    let dir = sweep::write_results(out.path(), &r).expect("results written");
    for f in ["report.json", "table.txt", "be_share.png", "be_delivery.svg", "iat_size.png", "cost.png"] {
        assert!(dir.join(f).is_file(), "{f} missing in {}", dir.display());
    }
}
