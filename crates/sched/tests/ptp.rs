//! detpath master ↔ detpath slave over PTPv2 in the two-namespace testbed:
//! the master's slot clock reads CLOCK_REALTIME, the slave's starts 250 µs
//! ahead and 30 ppm fast; the slave must lock (within 20 µs for the last
//! 5 s), and the master must have answered its Delay_Reqs through its
//! endpoint. Also: a flood of junk at both PTP ports ends neither node (it
//! is counted), forged Syncs (the master's identity, originTimestamp 0 s) do
//! not move the slave's clock, and forged Delay_Reqs do not stop the
//! master's Syncs to the group.

mod common;

use detpath::testbed::{Testbed, TestbedConfig};
use detpath_sched::ptp::net::{EVENT_PORT, GENERAL_PORT, PTP_GROUP};
use detpath_sched::ptp::wire::{Body, Header, Message, MsgType, PortIdentity, Timestamp, ANNOUNCE_LEN, FLAG_TWO_STEP};
use detpath_sched::ptp::{self, Ports, PtpClock, PtpConfig};
use std::net::{Ipv4Addr, UdpSocket};
use std::time::{Duration, Instant};

fn send(s: &UdpSocket, msg: &Message, to: (Ipv4Addr, u16)) -> bool {
    let mut b = [0u8; ANNOUNCE_LEN];
    let n = msg.encode(&mut b).expect("encodes");
    s.send_to(&b[..n], to).is_ok()
}

/// A two-step Sync and its Follow_Up as `master` would send them, but with
/// originTimestamp 0 s, unicast to a slave at `to`; true when both left.
fn forge_sync(s: &UdpSocket, master: PortIdentity, seq: u16, to: Ipv4Addr) -> bool {
    let mut h = Header::new(MsgType::Sync, master, seq, -2);
    h.flags = FLAG_TWO_STEP;
    let sync = Message { header: h, body: Body::Sync(Timestamp::default()) };
    let fup = Message { header: Header::new(MsgType::FollowUp, master, seq, -2), body: Body::FollowUp(Timestamp::default()) };
    send(s, &sync, (to, EVENT_PORT)) && send(s, &fup, (to, GENERAL_PORT))
}

#[test]
fn detpath_slave_locks_to_a_detpath_master_and_survives_junk() {
    if !detpath_testkit::need_root("detpath_slave_locks_to_a_detpath_master_and_survives_junk", "namespaces") {
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
    // Forged Syncs at the slave from the master's namespace and address, with the
    // master's identity, every 3.1 s from 3.1 s on (at another moment between two
    // of the master's Syncs each time): each would step the slave's clock by
    // -1.7e18 ns, or pin its rate at the limit until the master's next Sync.
    let (master_iface, slave_addr) = (tb.b().iface.clone(), tb.a().addr);
    let master_addr = tb.b().addr;
    let forger = tb.b().spawn(move || {
        let mac = detpath::sys::NetDev::lookup(&master_iface).expect("the master's interface").mac.0;
        let s = UdpSocket::bind((master_addr, 0)).unwrap();
        let mut forged = 0u32;
        for k in 0..5u16 {
            std::thread::sleep(Duration::from_millis(3_100));
            forged += forge_sync(&s, PortIdentity::from_mac(mac), 60_000 + k, slave_addr) as u32;
        }
        forged
    });
    // Junk at the master's event and general ports, from namespace a, while it runs.
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
    let forged = forger.join().unwrap().unwrap();
    let m = master.join().unwrap().unwrap();
    let s = &r.sync;
    println!(
        "slave: lock {:?} s, residual p50 {:?} p99 {:?} max {:?} ns, path delay {} ns, drift est. {:.0} ppb, {} outliers of {forged} forged Syncs, {} bad delays; master: {m:?}; junk sent {junk_sent}",
        s.time_to_lock_s, s.residual_p50_ns, s.residual_p99_ns, s.residual_max_ns, r.path_delay_ns, s.final_drift_ppb, r.outliers, r.bad_delays
    );
    assert!(r.locked, "not locked: {:?}", s.samples.iter().rev().take(10).collect::<Vec<_>>());
    // Each forged pair that met no genuine message of its own in between reached the spike filter.
    assert!(forged == 5 && r.outliers >= 3, "{} of {forged} forged Syncs counted as outliers", r.outliers);
    assert_eq!(r.sync.outliers, r.outliers);
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
    assert!(m.syncs_group >= 70 && m.syncs_unicast == 0, "every Sync goes to the group: {m:?}");
    let d = m.drops;
    assert!(junk_sent > 100 && d.malformed + d.unused + d.other_domain + d.not_ours > 50, "junk not counted: {d:?}");
}

/// A Delay_Req says nothing about who may have Syncs: with forged ones
/// arriving from namespace a every 500 ms from 1 s on, a port that listens
/// to the group there (a slave yet to start) keeps getting the master's
/// Syncs. (The master once sent Syncs unicast, and only, to the requesters
/// it knew: one forged Delay_Req silenced the group.)
#[test]
fn forged_delay_reqs_do_not_stop_the_groups_syncs() {
    if !detpath_testkit::need_root("forged_delay_reqs_do_not_stop_the_groups_syncs", "namespaces") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("ptpg")).expect("testbed");
    let mspec = format!("udp://{}?port=319&rx_stamp=kernel", tb.b().iface);
    let mcfg = PtpConfig { duration_ns: 5_000_000_000, ..PtpConfig::default() };
    let master = tb.b().spawn(move || {
        let mut ports = Ports::open(&mspec).unwrap_or_else(|e| panic!("{mspec}: {e}"));
        ptp::run_master(&mut ports, &PtpClock::new(0, 0), &mcfg, &|| false).expect("master")
    });
    let (master_addr, a_addr) = (tb.b().addr, tb.a().addr);
    let (before, after, forged) = tb
        .a()
        .run(move || {
            let group = UdpSocket::bind((PTP_GROUP, EVENT_PORT)).expect("binding the group's event port");
            group.join_multicast_v4(&PTP_GROUP, &a_addr).expect("joining the group");
            group.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            // The Delay_Resps come here (nobody answers them with an ICMP error).
            let _sink = UdpSocket::bind((a_addr, GENERAL_PORT)).unwrap();
            let forger = UdpSocket::bind((a_addr, 0)).unwrap();
            let start = Instant::now();
            let (mut before, mut after, mut forged) = (0u32, 0u32, 0u32);
            let mut next_forge = Duration::from_secs(1);
            let mut buf = [0u8; 512];
            while start.elapsed() < Duration::from_millis(4_800) {
                if start.elapsed() >= next_forge {
                    let h = Header::new(MsgType::DelayReq, PortIdentity { clock: [0x66; 8], port: 1 }, forged as u16, 0x7f);
                    forged += send(&forger, &Message { header: h, body: Body::DelayReq(Timestamp::default()) }, (master_addr, EVENT_PORT)) as u32;
                    next_forge += Duration::from_millis(500);
                }
                let Ok((n, _)) = group.recv_from(&mut buf) else { continue };
                if Message::parse(&buf[..n]).is_ok_and(|m| m.header.msg_type == MsgType::Sync) {
                    match start.elapsed() {
                        t if t < Duration::from_secs(1) => before += 1,
                        t if t > Duration::from_millis(1_500) => after += 1,
                        _ => {}
                    }
                }
            }
            (before, after, forged)
        })
        .unwrap();
    let m = master.join().unwrap().unwrap();
    println!("group Syncs: {before} before the first forged Delay_Req, {after} from 0.5 s after it; {forged} forged; master: {m:?}");
    assert!(forged >= 7, "{forged} forged Delay_Reqs sent");
    assert!(m.delay_resps >= 5 && m.slaves.len() == 1, "the forged requests were answered, their sender listed: {m:?}");
    // 4 Syncs a second for 3.3 s.
    assert!(after >= 10, "only {after} group Syncs after the forged Delay_Reqs ({before} before): {m:?}");
    assert!(m.syncs_group >= 18 && m.syncs_unicast == 0, "{m:?}");
}
