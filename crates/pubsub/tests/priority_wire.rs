//! A writer's TRANSPORT_PRIORITY on the wire, between two pub-sub
//! participants in the testbed's two namespaces: the DSCP of each writer's
//! DATA and HEARTBEAT datagrams (priority 40: EF, priority 0: CS0) read off
//! side b's interface with an AF_PACKET tap, the writer on udp, afxdp and
//! dpdk; the reader's ACKNACKs to the priority writer carry its DSCP too
//! (read off side a); and the peer's SEDP announcement carries the
//! priority (decoded by the receiving engine).
//!
//! Needs root (namespaces, XDP, DPDK's EAL).
#![cfg(feature = "endpoint")]

use detpath::testbed::{Side, TappedFrame, Testbed, TestbedConfig, WireTap};
use detpath_pubsub::driver::{wall_ns, Node, Transport, TransportOutbox};
use detpath_pubsub::engine::{make_guid_prefix, Config, Participant};
use detpath_pubsub::priority::PriorityPolicy;
use detpath_pubsub::qos::Qos;
use detpath_pubsub::transport::{open, EndpointTransport, Wait};
use detpath_pubsub::types::KeyedSeq;
use detpath_pubsub::wire::{Addr, Time};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PORT: u16 = 7410;

/// A participant on `spec` in `side`'s namespace (opened there), SPDP to `peer`.
fn node(side: &Side, spec: &str, peer: std::net::Ipv4Addr, wait: Wait) -> Node<EndpointTransport> {
    side.run(|| {
        let t = EndpointTransport::on(open(spec).unwrap_or_else(|e| panic!("{spec}: {e}")), wait);
        let Addr::Udp(local) = t.local_addr() else { panic!("not udp") };
        let mut cfg = Config::new(0, make_guid_prefix(u32::from(*local.ip()), std::process::id(), t.now_ns() as u32), t.local_addr());
        cfg.add_peer(peer, 0);
        cfg.priority = t.priority_marks(&PriorityPolicy::default()).expect("no scheduler: the DSCP map alone");
        let now = t.now_ns();
        Node::new(Participant::new(cfg, now), t)
    })
    .unwrap()
}

/// RTPS submessages whose fixed part lies in a tapped payload's first
/// bytes: (kind id, writerId) of DATA (0x15), HEARTBEAT (0x07) and ACKNACK (0x06).
fn submessages(head: &[u8]) -> Vec<(u8, [u8; 4])> {
    let mut out = Vec::new();
    if head.len() < 20 || &head[..4] != b"RTPS" {
        return out;
    }
    let mut at = 20;
    while at + 4 <= head.len() {
        let (id, flags) = (head[at], head[at + 1]);
        let len = if flags & 1 != 0 { u16::from_le_bytes([head[at + 2], head[at + 3]]) } else { u16::from_be_bytes([head[at + 2], head[at + 3]]) } as usize;
        let writer_at = match id {
            0x15 => at + 12,
            0x07 | 0x06 => at + 8,
            _ => usize::MAX,
        };
        if let Some(w) = head.get(writer_at..writer_at.saturating_add(4)) {
            out.push((id, [w[0], w[1], w[2], w[3]]));
        }
        at += 4 + len;
    }
    out
}

/// TOS bytes of tapped datagrams with submessage `kind` naming `writer`.
fn tos_of(frames: &[TappedFrame], kind: u8, writer: [u8; 4]) -> Vec<u8> {
    frames.iter().filter(|f| f.udp.as_ref().is_some_and(|u| submessages(&u.2).contains(&(kind, writer)))).map(|f| f.tos).collect()
}

fn priority_reaches_the_wire(tb: &Testbed, datapath: &str) {
    // The reader on the kernel's UDP in b (one DPDK port per process); the writers on `datapath` in a.
    let tap_b = WireTap::open(tb.b()).expect("tap on b");
    let tap_a = WireTap::open(tb.a()).expect("tap on a");
    let stop = Arc::new(AtomicBool::new(false));
    let (stop2, spec_b, peer_a) = (stop.clone(), tb.b().uri("udp", PORT), tb.a().addr);
    let b_side = tb.b().clone();
    let reader = std::thread::spawn(move || {
        let mut n = node(&b_side, &spec_b, peer_a, Wait::Block);
        let proto = KeyedSeq::with_size(32);
        let now = n.transport.now_ns();
        let rc = n.participant.create_reader_for(now, "Ctl", Qos::reliable_keep_last(1), &proto).unwrap();
        let rb = n.participant.create_reader_for(now, "Bulk", Qos::reliable_keep_last(1), &proto).unwrap();
        let mut rx = KeyedSeq::default();
        let mut got = 0u64;
        while !stop2.load(Ordering::Relaxed) {
            n.turn(1_000_000, |_, _, _| {});
            for r in [rc, rb] {
                while n.participant.take(r, &mut rx).unwrap().is_some() {
                    got += 1;
                }
            }
        }
        let prios: Vec<(String, i32)> = n.participant.remote_endpoints().map(|e| (e.topic_name.clone(), e.qos.transport_priority)).collect();
        (got, prios)
    });
    let mut w = node(tb.a(), &tb.a().uri(datapath, PORT), tb.b().addr, Wait::Busy);
    let proto = KeyedSeq::with_size(32);
    let ctl = w.participant.create_writer_for("Ctl", Qos { transport_priority: 40, ..Qos::reliable_keep_last(1) }, &proto).unwrap();
    let bulk = w.participant.create_writer_for("Bulk", Qos::reliable_keep_last(1), &proto).unwrap();
    let (ctl_id, bulk_id) = (w.participant.writer_guid(ctl).entity.0, w.participant.writer_guid(bulk).entity.0);
    let mut next = Instant::now();
    let mut seq = 0u32;
    let frames = tap_b
        .read(Duration::from_secs(20), |f| {
            w.turn(100_000, |_, _, _| {});
            if Instant::now() >= next && w.participant.writer_status(ctl).matched > 0 && w.participant.writer_status(bulk).matched > 0 {
                next += Duration::from_millis(2);
                seq += 1;
                let s = KeyedSeq { seq, ..KeyedSeq::with_size(32) };
                let now = w.transport.now_ns();
                for wr in [ctl, bulk] {
                    let mut out = TransportOutbox(&mut w.transport);
                    w.participant.write(now, &mut out, wr, Some(Time::from_nanos(wall_ns())), &s).unwrap();
                }
            }
            !tos_of(f, 0x15, ctl_id).is_empty() && !tos_of(f, 0x15, bulk_id).is_empty() && !tos_of(f, 0x07, ctl_id).is_empty() && seq > 50
        })
        .unwrap();
    // Keep the writer answering while the reader's ACKNACKs are read on a
    // (the reader is on the kernel's UDP whatever the writer's datapath;
    // a's tap sees them only where a's XDP program does not take them first).
    let acks = if datapath == "udp" {
        tap_a
            .read(Duration::from_secs(5), |f| {
                w.turn(100_000, |_, _, _| {});
                !tos_of(f, 0x06, ctl_id).is_empty() && !tos_of(f, 0x06, bulk_id).is_empty()
            })
            .unwrap()
    } else {
        Vec::new()
    };
    stop.store(true, Ordering::Relaxed);
    let (got, prios) = reader.join().unwrap();
    drop(w);
    let ef = 46 << 2;
    for (what, kind, id, want) in [("ctl DATA", 0x15, ctl_id, ef), ("ctl HEARTBEAT", 0x07, ctl_id, ef), ("bulk DATA", 0x15, bulk_id, 0)] {
        let toses = tos_of(&frames, kind, id);
        assert!(!toses.is_empty(), "{datapath}: no {what} on the wire");
        assert!(toses.iter().all(|&t| t == want), "{datapath}: {what} left with TOS {toses:02x?}, want {want:#04x}");
    }
    let toses = tos_of(&frames, 0x07, bulk_id);
    assert!(toses.iter().all(|&t| t == 0), "{datapath}: bulk HEARTBEAT TOS {toses:02x?}");
    for (what, id, want) in [("ACKNACK to ctl", ctl_id, ef), ("ACKNACK to bulk", bulk_id, 0)].into_iter().filter(|_| datapath == "udp") {
        let toses = tos_of(&acks, 0x06, id);
        assert!(!toses.is_empty(), "{datapath}: no {what} on the wire");
        assert!(toses.iter().all(|&t| t == want), "{datapath}: {what} TOS {toses:02x?}, want {want:#04x}");
    }
    assert!(got > 0, "{datapath}: the reader received nothing");
    assert!(prios.contains(&("Ctl".to_string(), 40)) && prios.contains(&("Bulk".to_string(), 0)), "{datapath}: SEDP said {prios:?}");
}

#[test]
fn each_writers_priority_is_its_datagrams_dscp_on_udp_afxdp_and_dpdk() {
    if !detpath_testkit::need_root("each_writers_priority_is_its_datagrams_dscp_on_udp_afxdp_and_dpdk", "namespaces, XDP, DPDK") {
        return;
    }
    for dp in ["udp", "afxdp", "dpdk"] {
        let tb = Testbed::up(TestbedConfig::unique("pprio")).expect("testbed");
        priority_reaches_the_wire(&tb, dp);
    }
}
