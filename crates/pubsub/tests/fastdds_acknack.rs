//! Fast DDS's opening ACKNACK, sans-IO: a Fast DDS reader's first ACKNACK to
//! a writer it matched has readerSNState bitmapBase 0 and no bits ("nothing
//! received yet"; RTPS itself wants a base of 1 or more). detpath's writer
//! takes it (not malformed, not implausible), acknowledges nothing for it and
//! answers with a HEARTBEAT; the same shape from a reader that has
//! acknowledged samples already contradicts it and is counted malformed,
//! changing nothing; any other set below base 1 stays refused by the codec.
//! (The real Fast DDS sends it in tests/fastdds.rs.)

mod common;
use common::*;
use detpath_pubsub::engine::{ReaderId, WriterId};
use detpath_pubsub::qos::Qos;
use detpath_pubsub::types::OneULong;
use detpath_pubsub::wire::*;

fn pair() -> (Net, WriterId, ReaderId) {
    let mut net = Net::new(2);
    let qos = Qos::reliable_keep_all(64);
    let w = net.nodes[0].create_writer_for("T", qos.clone(), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", qos, &OneULong::default()).unwrap();
    net.run_until(3000, |n| n.nodes[0].writer_status(w).matched == 1 && n.nodes[1].reader_status(r).matched == 1).expect("matched");
    (net, w, r)
}

/// An ACKNACK from node 1's reader `r` to node 0's writer `w` with the raw set `base`/`bits`.
fn acknack(net: &Net, w: WriterId, r: ReaderId, base: i64, bits: u32, count: i32) -> Vec<u8> {
    let (re, we) = (net.nodes[1].reader_guid(r).entity, net.nodes[0].writer_guid(w).entity);
    let mut set = BitSet256::new(bits);
    for i in 0..bits {
        set.set(i);
    }
    let mut buf = vec![0u8; 256];
    let mut b = MessageBuilder::new(&mut buf, net.nodes[1].guid_prefix(), VendorId::DETPATH).unwrap();
    b.acknack(re, we, SequenceNumber(base), &set, count, false).unwrap();
    let n = b.finish();
    buf.truncate(n);
    buf
}

/// Whether any datagram node 0 sent holds a HEARTBEAT.
fn sent_heartbeat(net: &mut Net) -> bool {
    net.outs[0].drain().iter().any(|(_, d)| {
        let m = Message::parse(d).unwrap();
        m.submessages().any(|s| matches!(s, Ok(Submessage::Heartbeat(_))))
    })
}

fn write_all(net: &mut Net, w: WriterId, n: u32) {
    for seq in 0..n {
        net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq }).unwrap();
        net.deliver();
    }
    net.run_until(2000, |n| n.nodes[0].writer_status(w).unacknowledged == 0).expect("acknowledged");
}

#[test]
fn opening_acknack_of_base_zero_is_taken_and_answered_with_a_heartbeat() {
    let (mut net, w, r) = pair();
    net.outs[0].drain();
    let before = net.nodes[0].counters();
    let m = acknack(&net, w, r, 0, 0, 1000);
    net.nodes[0].handle_datagram(net.now, addr(1), &m, &mut net.outs[0]);
    let c = net.nodes[0].counters();
    assert_eq!((c.rx_malformed, c.implausible), (before.rx_malformed, before.implausible), "{c:?}");
    assert!(sent_heartbeat(&mut net), "a non-final ACKNACK is answered with a HEARTBEAT");
    // It acknowledged nothing: samples written after it still flow and are acknowledged as usual.
    write_all(&mut net, w, 5);
    let mut s = OneULong::default();
    let mut got = Vec::new();
    while net.nodes[1].take(r, &mut s).unwrap().is_some() {
        got.push(s.seq);
    }
    assert_eq!(got, (0..5).collect::<Vec<_>>());
    assert_eq!(net.nodes[0].counters().rx_malformed, before.rx_malformed);
}

#[test]
fn base_zero_after_acknowledgements_and_other_sets_below_one_stay_refused() {
    let (mut net, w, r) = pair();
    write_all(&mut net, w, 5);
    let before = net.nodes[0].counters();
    // "Nothing received yet" from a reader that acknowledged 5 samples; base 0
    // with bits; a negative base. None of them changes the writer's state.
    for (base, bits, count) in [(0, 0, 2000), (0, 3, 2001), (-1, 0, 2002)] {
        let m = acknack(&net, w, r, base, bits, count);
        net.nodes[0].handle_datagram(net.now, addr(1), &m, &mut net.outs[0]);
    }
    let c = net.nodes[0].counters();
    assert_eq!(c.rx_malformed - before.rx_malformed, 3, "{c:?}");
    assert_eq!(c.implausible, before.implausible, "{c:?}");
    assert_eq!(net.nodes[0].writer_status(w).unacknowledged, 0, "still acknowledged");
}
