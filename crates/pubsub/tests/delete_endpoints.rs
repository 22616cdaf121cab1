//! Deleting endpoints between two engines (in-memory network, virtual
//! clock): a deleted reader's SEDP dispose unmatches it at the remote
//! writer, which stops sending to it; its slot goes to the next reader,
//! which matches anew; a deleted handle is refused.

mod common;
use common::*;
use detpath_pubsub::engine::{Event, ReaderId, WriterId};
use detpath_pubsub::qos::Qos;
use detpath_pubsub::types::OneULong;

fn write(net: &mut Net, w: WriterId, seq: u32) {
    let now = net.now;
    net.nodes[0].write(now, &mut net.outs[0], w, None, &OneULong { seq }).unwrap();
}

fn take_seqs(net: &mut Net, r: ReaderId) -> Vec<u32> {
    let mut rx = OneULong::default();
    let mut got = Vec::new();
    while let Some(info) = net.nodes[1].take(r, &mut rx).unwrap() {
        assert!(info.valid_data);
        got.push(rx.seq);
    }
    got
}

#[test]
fn a_deleted_reader_is_unmatched_at_the_writer_and_its_slot_matches_anew() {
    let mut net = Net::new(2);
    let q = Qos::reliable_keep_last(8);
    let w = net.nodes[0].create_writer_for("T", q.clone(), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", q.clone(), &OneULong::default()).unwrap();
    net.run_until(2000, |n| n.nodes[0].writer_status(w).matched == 1 && n.nodes[1].reader_status(r).matched == 1).expect("matched");
    let reader_guid = net.nodes[1].reader_guid(r);
    write(&mut net, w, 1);
    net.run_until(1000, |n| n.nodes[1].reader_status(r).waiting == 1).expect("delivered");
    while net.nodes[0].poll_event().is_some() {}

    assert!(net.nodes[1].delete_reader(r));
    assert!(!net.nodes[1].delete_reader(r), "deleted twice");
    net.run_until(2000, |n| n.nodes[0].writer_status(w).matched == 0).expect("the writer unmatched the deleted reader");
    let evs: Vec<Event> = std::iter::from_fn(|| net.nodes[0].poll_event()).collect();
    assert_eq!(evs, [Event::WriterUnmatched { writer: w, reader: reader_guid }]);
    // Nothing goes to the deleted reader any more: no unacknowledged samples pile up.
    let unmatched_before = net.nodes[1].counters().rx_unmatched;
    write(&mut net, w, 2);
    net.run_until(300, |_| false);
    assert_eq!(net.nodes[0].writer_status(w).unacknowledged, 0);
    assert_eq!(net.nodes[1].counters().rx_unmatched, unmatched_before, "no DATA arrives for a reader that is gone");

    // A new reader takes the slot (the same handle value) under a new GUID and matches.
    let r2 = net.nodes[1].create_reader_for(net.now, "T", q, &OneULong::default()).unwrap();
    assert_eq!(r2, r, "the deleted slot is reused");
    assert_ne!(net.nodes[1].reader_guid(r2), reader_guid);
    net.run_until(2000, |n| n.nodes[0].writer_status(w).matched == 1 && n.nodes[1].reader_status(r2).matched == 1).expect("matched again");
    write(&mut net, w, 3);
    net.run_until(1000, |n| n.nodes[1].reader_status(r2).waiting == 1).expect("delivered to the new reader");
    assert_eq!(take_seqs(&mut net, r2), [3], "the new reader has none of the old one's samples");
}

#[test]
fn deleting_a_reader_before_it_was_announced_sends_nothing() {
    let mut net = Net::new(2);
    let q = Qos::reliable_keep_last(8);
    let w = net.nodes[0].create_writer_for("T", q.clone(), &OneULong::default()).unwrap();
    net.run_until(200, |_| false);
    let r = net.nodes[1].create_reader_for(net.now, "T", q, &OneULong::default()).unwrap();
    assert!(net.nodes[1].delete_reader(r));
    net.run_until(2000, |_| false);
    assert_eq!(net.nodes[0].writer_status(w).matched, 0, "never announced, never matched");
    assert!(!net.nodes[0].remote_endpoints().any(|e| !e.is_writer()), "no reader known at the writer's side");
}
