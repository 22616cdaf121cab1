//! `sched sync` (crates/sched/src/sync.rs) between two namespaces while a
//! third party floods the slave with forged Sync messages: the slave
//! follows its master only (it counts and drops the others) and locks.
//!
//! The forgeries come from the master's namespace, another port, about one
//! a millisecond, each with a t1 30 ms ahead of the master's clock. A slave
//! that took them would start a round on each (losing the master's) and
//! measure its clock 30 ms behind.
//!
//! Needs root (namespaces). The testbed is uniquely named and removed on drop.

mod common;

use detpath::testbed::{Testbed, TestbedConfig};
use detpath_sched::clock::{MonotonicSource, OverlaySource};
use detpath_sched::config::{ClassConfig, Mode, SchedConfig};
use detpath_sched::endpoint::SchedEndpoint;
use detpath_sched::servo::ServoConfig;
use detpath_sched::sync::{run_master, run_slave, LiveConfig, MsgKind, SyncMsg};
use std::net::{SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The scheduler of `detpath sched sync` (detpath-bench's sync_sched_config):
/// 10 µs slots, a 100-slot ring, the sync class owning every tenth slot.
fn sched_config() -> SchedConfig {
    let mut cfg = SchedConfig::new(10_000, 100, 2);
    cfg.late_tolerance_ns = 5_000;
    cfg.classes.push(ClassConfig::parse("ptp:rt:relaxed:5/10@64", 100, Mode::Relaxed).expect("the class"));
    cfg
}

#[test]
fn a_sync_slave_follows_its_master_only() {
    if !detpath_testkit::need_root("a_sync_slave_follows_its_master_only", "namespaces") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("sfsy")).expect("testbed");
    let port = 7640;
    let master_addr = SocketAddrV4::new(tb.a().addr, port);
    let slave_addr = SocketAddrV4::new(tb.b().addr, port + 1);
    // Correctness, not precision: no real-time threads on two shared cores.
    let live = LiveConfig { class: 0, interval_ns: 125_000_000, duration_ns: 12_000_000_000, servo: ServoConfig::linuxptp(0.125), lock_threshold_ns: 100_000 };
    let stop = Arc::new(AtomicBool::new(false));
    let (stop_m, stop_f) = (stop.clone(), stop.clone());
    let master_uri = format!("{}&rx_stamp=kernel", tb.a().uri("udp", port));
    let master = tb.a().spawn(move || {
        let ep = detpath_open::open(&master_uri).unwrap_or_else(|e| panic!("{master_uri}: {e}"));
        let mut ep = SchedEndpoint::with_source(ep, &sched_config(), MonotonicSource { epoch_mono: 0 }, 0).expect("master scheduler");
        run_master(&mut ep, slave_addr, &live, &stop_m).expect("master")
    });
    let forger = tb.a().spawn(move || {
        let s = UdpSocket::bind((*master_addr.ip(), 0)).unwrap();
        let mut forged = 0u32;
        while !stop_f.load(Ordering::Relaxed) {
            let msg = SyncMsg { kind: MsgKind::Sync, seq: (1 << 31) | forged, time_ns: detpath::monotonic_ns() + 30_000_000 };
            forged += s.send_to(&msg.encode(), slave_addr).is_ok() as u32;
            std::thread::sleep(Duration::from_millis(1));
        }
        forged
    });
    let slave_uri = format!("{}&rx_stamp=kernel", tb.b().uri("udp", port + 1));
    let r = tb
        .b()
        .run(|| {
            let ep = detpath_open::open(&slave_uri).unwrap_or_else(|e| panic!("{slave_uri}: {e}"));
            let epoch = detpath::monotonic_ns();
            let src = OverlaySource { epoch_mono: epoch, offset_ns: 37_000, drift_ppb: 50_000 };
            let mut ep = SchedEndpoint::with_source(ep, &sched_config(), src, epoch).expect("slave scheduler");
            // The master's clock reads CLOCK_MONOTONIC: that is the truth.
            run_slave(&mut ep, master_addr, &live, |m| m).expect("slave")
        })
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let forged = forger.join().unwrap().unwrap();
    let rounds = master.join().unwrap().unwrap();
    println!(
        "lock {:?} s, residual p50 {:?} p99 {:?} ns, {} samples of {rounds} rounds, {} rejected, {} outliers, {} from others of {forged} forged",
        r.time_to_lock_s,
        r.residual_p50_ns,
        r.residual_p99_ns,
        r.samples.len(),
        r.rejected,
        r.outliers,
        r.not_master
    );
    assert!(forged > 3_000, "{forged} forged Syncs sent");
    assert!(r.not_master >= u64::from(forged) / 2, "{} of {forged} forged Syncs counted", r.not_master);
    // The master's rounds complete (the forged Syncs start none): all but the
    // warm-up, the first agreement and a few the slave slept through.
    let completed = r.samples.len() as u32 + r.rejected;
    assert!(completed * 10 >= rounds * 8, "{completed} rounds completed of {rounds}");
    let lock = r.time_to_lock_s.unwrap_or_else(|| panic!("never locked: {:?}", r.samples.iter().rev().take(10).collect::<Vec<_>>()));
    assert!(lock < 7.0, "locked only after {lock} s");
}
