//! detpath master ↔ detpath slave over PTPv2 in the two-namespace testbed:
//! the master's slot clock reads CLOCK_REALTIME, the slave's starts 250 µs
//! ahead and 30 ppm fast; the slave must lock (within 20 µs for the last
//! 5 s), and the master must have served it through its endpoint. Also: a
//! flood of junk at both PTP ports ends neither node (it is counted).

mod common;

use common::is_root;
use detpath::testbed::{Testbed, TestbedConfig};
use detpath_sched::ptp::{self, Ports, PtpClock, PtpConfig};

#[test]
fn detpath_slave_locks_to_a_detpath_master_and_survives_junk() {
    if !is_root() {
        println!("SKIP detpath_slave_locks_to_a_detpath_master_and_survives_junk: needs root (namespaces)");
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("ptpd")).expect("testbed");
    let mspec = format!("udp://{}?port=319&rx_stamp=kernel", tb.b().iface);
    let mcfg = PtpConfig { duration_ns: 22_000_000_000, ..PtpConfig::default() };
    let master = tb.b().spawn(move || {
        let mut ports = Ports::open(&mspec).unwrap_or_else(|e| panic!("{mspec}: {e}"));
        let clock = PtpClock::new(0, 0);
        ptp::run_master(&mut ports, &clock, &mcfg, &|| false).expect("master")
    });
    // Junk at the master's event and general ports, from namespace a, while it runs.
    let master_addr = tb.b().addr;
    let junk = tb.a().spawn(move || {
        let s = std::net::UdpSocket::bind("10.77.0.1:0").unwrap();
        let mut sent = 0u32;
        for i in 0..200u32 {
            let mut b = [0u8; 64];
            b[0] = (i % 16) as u8;
            b[1] = if i % 3 == 0 { 2 } else { (i % 5) as u8 };
            b[2..4].copy_from_slice(&((i % 80) as u16).to_be_bytes());
            for port in [319, 320] {
                sent += s.send_to(&b[..(i as usize % 64)], (master_addr, port)).is_ok() as u32;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        sent
    });
    let sspec = format!("udp://{}?port=319&rx_stamp=kernel", tb.a().iface);
    // Correctness, not precision (that is the benchmark's job): both ends stamp
    // in user space on two shared cores, where a busy machine gives ±20-30 µs
    // of noise around the true offset; lock means within 100 µs of it here.
    let scfg = PtpConfig { offset_ns: 250_000, drift_ppb: 30_000, duration_ns: 20_000_000_000, lock_threshold_ns: 100_000, ..PtpConfig::default() };
    let r = tb
        .a()
        .run(|| {
            let mut ports = Ports::open(&sspec).unwrap_or_else(|e| panic!("{sspec}: {e}"));
            let mut clock = PtpClock::new(scfg.offset_ns, scfg.drift_ppb);
            ptp::run_slave(&mut ports, &mut clock, &scfg, &|| false).expect("slave")
        })
        .unwrap();
    let junk_sent = junk.join().unwrap().unwrap();
    let m = master.join().unwrap().unwrap();
    let s = &r.sync;
    println!(
        "slave: lock {:?} s, residual p50 {:?} p99 {:?} max {:?} ns, path delay {} ns, drift est. {:.0} ppb; master: {m:?}; junk sent {junk_sent}",
        s.time_to_lock_s, s.residual_p50_ns, s.residual_p99_ns, s.residual_max_ns, r.path_delay_ns, s.final_drift_ppb
    );
    assert!(r.locked, "not locked: {:?}", s.samples.iter().rev().take(10).collect::<Vec<_>>());
    let rate = s.mean_rate_after_lock_ppb.unwrap_or(0.0);
    // The rate after lock is known to about the residual's spread over the
    // time after lock (95 µs p99 over 16 s is 6 ppm: a run on a busy VM once
    // measured -36.5 ppm for the injected -30), so the bound is twice that,
    // at least 6 ppm: it still tells following the injected drift from not.
    let after_lock_s = scfg.duration_ns as f64 / 1e9 - s.time_to_lock_s.unwrap_or(0.0);
    let tolerance = (2.0 * s.residual_p99_ns.unwrap_or(0) as f64 / after_lock_s.max(1.0)).max(6_000.0);
    assert!((rate + 30_000.0).abs() < tolerance, "mean rate after lock {rate} ppb (tolerance {tolerance:.0}), drift estimate {}", s.final_drift_ppb);
    assert_eq!(m.slaves.len(), 1, "{m:?}");
    assert!(m.slaves[0].via_endpoint >= 10, "the slave's Delay_Reqs came through the endpoint: {m:?}");
    assert!(m.syncs_unicast >= 40, "{m:?}");
    let d = m.drops;
    assert!(junk_sent > 100 && d.malformed + d.unused + d.other_domain + d.not_ours > 50, "junk not counted: {d:?}");
}
