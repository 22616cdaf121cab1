//! 1 MiB samples between two detpath participants in the testbed's two
//! namespaces, a reliable writer (KEEP_LAST and KEEP_ALL) in a and a
//! reader in b, on udp and on afxdp with small rings (64 descriptors):
//! every sample arrives complete (size and content), none counted lost,
//! and the writer's counters show its fragments were paced (it waited for
//! the reader's confirmations of a window, [`Config::frag_window`]).
//! No timing is asserted.
//!
//! Needs root (namespaces, XDP).
#![cfg(feature = "endpoint")]

use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath_pubsub::driver::{wall_ns, Node, Transport, TransportOutbox};
use detpath_pubsub::engine::{make_guid_prefix, Config, Participant, WriteError};
use detpath_pubsub::qos::Qos;
use detpath_pubsub::transport::{open, EndpointTransport, Wait};
use detpath_pubsub::types::KeyedSeq;
use detpath_pubsub::wire::{Addr, Time};
use std::time::{Duration, Instant};

const PORT: u16 = 7410;
const SIZE: usize = 1 << 20;
const COUNT: u32 = 8;

/// A participant on `spec` in `side`'s namespace (opened there), SPDP to `peer`.
fn node(side: &Side, spec: &str, peer: std::net::Ipv4Addr) -> Node<EndpointTransport> {
    side.run(|| {
        let t = EndpointTransport::on(open(spec).unwrap_or_else(|e| panic!("{spec}: {e}")), Wait::Busy);
        let Addr::Udp(local) = t.local_addr() else { panic!("not udp") };
        let mut cfg = Config::new(0, make_guid_prefix(u32::from(*local.ip()), std::process::id(), t.now_ns() as u32), t.local_addr());
        cfg.add_peer(peer, 0);
        let now = t.now_ns();
        Node::new(Participant::new(cfg, now), t)
    })
    .unwrap()
}

/// The spec of `datapath` on `side`, with small rings where it has rings.
fn spec(side: &Side, datapath: &str) -> String {
    let base = side.uri(datapath, PORT);
    if datapath == "afxdp" {
        format!("{base}&ring=64")
    } else {
        base
    }
}

fn sample(seq: u32) -> KeyedSeq {
    let mut s = KeyedSeq::with_size(SIZE);
    s.seq = seq;
    // Content that tells one sample (and one offset) from another.
    for (i, b) in s.baggage.iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(31).wrapping_add(seq) as u8;
    }
    s
}

fn paced_1mib_samples_arrive_complete(datapath: &str, qos: Qos) {
    let tb = Testbed::up(TestbedConfig::unique("pslarge")).expect("testbed");
    let (b_side, spec_b, peer_a) = (tb.b().clone(), spec(tb.b(), datapath), tb.a().addr);
    let reader = std::thread::spawn(move || {
        let mut n = node(&b_side, &spec_b, peer_a);
        let now = n.transport.now_ns();
        let r = n.participant.create_reader_for(now, "Big", Qos::reliable_keep_all(COUNT), &KeyedSeq::with_size(SIZE)).unwrap();
        let mut rx = KeyedSeq::default();
        let (mut seqs, mut bad) = (Vec::new(), Vec::new());
        let end = Instant::now() + Duration::from_secs(60);
        while seqs.len() < COUNT as usize && Instant::now() < end {
            n.turn(1_000_000, |_, _, _| {});
            while n.participant.take(r, &mut rx).unwrap().is_some() {
                if rx != sample(rx.seq) {
                    bad.push(rx.seq);
                }
                seqs.push(rx.seq);
            }
        }
        // Keep answering a little so the writer sees its last samples acknowledged.
        let linger = Instant::now() + Duration::from_millis(500);
        while Instant::now() < linger {
            n.turn(1_000_000, |_, _, _| {});
        }
        (seqs, bad, n.participant.reader_status(r).lost, n.participant.counters(), n.transport.counters())
    });
    let mut w = node(tb.a(), &spec(tb.a(), datapath), tb.b().addr);
    let wr = w.participant.create_writer_for("Big", qos.clone(), &KeyedSeq::with_size(SIZE)).unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    let mut next = 1u32;
    while Instant::now() < end {
        w.turn(100_000, |_, _, _| {});
        let st = w.participant.writer_status(wr);
        if st.matched == 0 {
            continue;
        }
        if next <= COUNT {
            let now = w.transport.now_ns();
            let mut out = TransportOutbox(&mut w.transport);
            match w.participant.write(now, &mut out, wr, Some(Time::from_nanos(wall_ns())), &sample(next)) {
                Ok(_) => next += 1,
                Err(WriteError::HistoryFull) => {}
                Err(e) => panic!("{datapath}: write: {e}"),
            }
        } else if st.unacknowledged == 0 {
            break;
        }
    }
    let (wc, wt) = (w.participant.counters(), w.transport.counters());
    let (seqs, bad, lost, rc, rt) = reader.join().unwrap();
    drop(w);
    let h = format!("{datapath} {:?}", qos.history);
    println!("{h}: writer {wc:?}\n  writer datapath {wt:?}\n  reader {rc:?}\n  reader datapath {rt:?}");
    assert_eq!(seqs, (1..=COUNT).collect::<Vec<_>>(), "{h}: samples taken (wrote {})", next - 1);
    assert!(bad.is_empty(), "{h}: samples whose content was not what was written: {bad:?}");
    assert_eq!(lost, 0, "{h}: the reader counted samples lost");
    assert!(wc.frag_window_waits >= u64::from(COUNT), "{h}: the writer never waited for a window of fragments: {wc:?}");
    assert!(rc.frag_confirms_sent > 0, "{h}: the reader confirmed no fragments: {rc:?}");
}

#[test]
fn paced_1mib_samples_udp() {
    if !detpath_testkit::need_root("paced_1mib_samples_udp", "namespaces") {
        return;
    }
    paced_1mib_samples_arrive_complete("udp", Qos::reliable_keep_last(COUNT));
    paced_1mib_samples_arrive_complete("udp", Qos::reliable_keep_all(4));
}

#[test]
fn paced_1mib_samples_afxdp_small_rings() {
    if !detpath_testkit::need_root("paced_1mib_samples_afxdp_small_rings", "namespaces, XDP") {
        return;
    }
    paced_1mib_samples_arrive_complete("afxdp", Qos::reliable_keep_last(COUNT));
    paced_1mib_samples_arrive_complete("afxdp", Qos::reliable_keep_all(4));
}
