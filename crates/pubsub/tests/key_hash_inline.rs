//! A keyed writer sends each sample's key hash inline (PID_KEY_HASH in the
//! DATA's inline QoS, as CycloneDDS and Fast DDS do), first transmissions
//! and retransmissions alike, and the reader uses it (in-memory network).

mod common;
use common::*;
use detpath_pubsub::qos::Qos;
use detpath_pubsub::types::{key_hash_u32, KeyedSeq, OneULong};
use detpath_pubsub::wire::plist::pid;
use detpath_pubsub::wire::{Message, Submessage};

/// The inline PID_KEY_HASH of every user DATA with a payload in `bytes` (None: no inline QoS or no key hash).
fn inline_key_hashes(bytes: &[u8]) -> Vec<Option<Vec<u8>>> {
    let Ok(m) = Message::parse(bytes) else { return Vec::new() };
    m.submessages()
        .map_while(Result::ok)
        .filter_map(|s| match s {
            Submessage::Data(d) if d.payload.is_some() && !d.writer_id.is_builtin() => {
                Some(d.inline_qos.and_then(|q| q.find(pid::KEY_HASH)).map(|v| v.to_vec()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn keyed_data_carries_its_key_hash_inline_also_when_resent() {
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut net = Net::new(2);
    let log = seen.clone();
    // Each node-0 datagram's inline key hashes are logged; the first one with a DATA is lost (resent on NACK).
    let mut dropped = false;
    net.drop = Box::new(move |from, _, bytes, _| {
        let hs = if from == 0 { inline_key_hashes(bytes) } else { Vec::new() };
        let drop = !hs.is_empty() && !dropped;
        dropped |= drop;
        log.borrow_mut().extend(hs.into_iter().map(|h| (drop, h)));
        drop
    });
    let q = Qos::reliable_keep_last(8);
    let w = net.nodes[0].create_writer_for("K", q.clone(), &KeyedSeq::with_size(16)).unwrap();
    let r = net.nodes[1].create_reader_for(0, "K", q.clone(), &KeyedSeq::with_size(16)).unwrap();
    let uw = net.nodes[0].create_writer_for("U", q.clone(), &OneULong::default()).unwrap();
    let ur = net.nodes[1].create_reader_for(0, "U", q, &OneULong::default()).unwrap();
    net.run_until(2000, |n| n.nodes[1].reader_status(r).matched == 1 && n.nodes[1].reader_status(ur).matched == 1).expect("matched");
    for k in [7u32, 8, 9] {
        let now = net.now;
        net.nodes[0].write(now, &mut net.outs[0], w, None, &KeyedSeq { seq: k, keyval: k, baggage: vec![1; 4] }).unwrap();
    }
    let now = net.now;
    net.nodes[0].write(now, &mut net.outs[0], uw, None, &OneULong { seq: 1 }).unwrap();
    net.run_until(2000, |n| n.nodes[1].reader_status(r).waiting == 3 && n.nodes[1].reader_status(ur).waiting == 1).expect("all delivered");

    let mut rx = KeyedSeq::default();
    while let Some(info) = net.nodes[1].take(r, &mut rx).unwrap() {
        assert_eq!(info.key_hash, Some(key_hash_u32(rx.keyval)));
    }
    assert_eq!(net.nodes[1].reader_status(r).key_hashes_inline, 3, "the reader used the inline hashes");
    let log = seen.borrow();
    let keyed: Vec<_> = log.iter().filter(|(_, h)| h.is_some()).collect();
    assert!(keyed.iter().any(|(dropped, _)| *dropped), "the lost first transmission carried it");
    let mut hashes: Vec<Vec<u8>> = keyed.iter().filter(|(d, _)| !d).map(|(_, h)| h.clone().unwrap()).collect();
    hashes.sort();
    hashes.dedup();
    assert_eq!(hashes, [7u32, 8, 9].map(|k| key_hash_u32(k).to_vec()), "what arrived (the retransmission included) carries each sample's hash");
    assert_eq!(log.iter().filter(|(_, h)| h.is_none()).count(), 1, "the unkeyed topic's DATA has none");
}

/// Per DATA_FRAG of a user writer in `bytes`: (fragment number, inline PID_KEY_HASH).
fn frag_key_hashes(bytes: &[u8]) -> Vec<(u32, Option<Vec<u8>>)> {
    let Ok(m) = Message::parse(bytes) else { return Vec::new() };
    m.submessages()
        .map_while(Result::ok)
        .filter_map(|s| match s {
            Submessage::DataFrag(f) if !f.writer_id.is_builtin() => Some((f.frag_start, f.inline_qos.and_then(|q| q.find(pid::KEY_HASH)).map(|v| v.to_vec()))),
            _ => None,
        })
        .collect()
}

#[test]
fn keyed_data_frag_carries_its_key_hash_inline_and_a_raw_keyed_reader_reports_it() {
    use detpath_pubsub::types::TopicType;
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut net = Net::new(2);
    let log = seen.clone();
    // The first fragment 1 on the wire is lost: the reader starts its
    // reassembly from fragment 2 and takes the hash from the resent fragment 1.
    let mut dropped = false;
    net.drop = Box::new(move |from, _, bytes, _| {
        let fs = if from == 0 { frag_key_hashes(bytes) } else { Vec::new() };
        let drop = !dropped && fs.iter().any(|(n, _)| *n == 1);
        dropped |= drop;
        log.borrow_mut().extend(fs);
        drop
    });
    let q = Qos::reliable_keep_last(8);
    let big = KeyedSeq::with_size(5000);
    let w = net.nodes[0].create_writer_for("K", q.clone(), &big).unwrap();
    // A raw reader: keyed, but no key extractor (what C and Python's raw readers are).
    let r = net.nodes[1].create_reader(0, "K", KeyedSeq::TYPE_NAME, true, q, 8192).unwrap();
    net.run_until(2000, |n| n.nodes[1].reader_status(r).matched == 1).expect("matched");
    let keys = [7u32, 8, 9];
    for (i, k) in keys.into_iter().enumerate() {
        let now = net.now;
        // The middle one small (a DATA), the others fragmented.
        let size = if i == 1 { 16 } else { 5000 };
        net.nodes[0].write(now, &mut net.outs[0], w, None, &KeyedSeq { seq: k, keyval: k, ..KeyedSeq::with_size(size) }).unwrap();
    }
    net.run_until(2000, |n| n.nodes[1].reader_status(r).waiting == 3).expect("all delivered");
    let mut got = Vec::new();
    while let Some(h) = net.nodes[1].take_raw(r, |info, _| info.key_hash) {
        got.push(h);
    }
    assert_eq!(got, keys.map(|k| Some(key_hash_u32(k))).to_vec(), "the raw keyed reader's SampleInfo.key_hash");
    assert_eq!(net.nodes[1].reader_status(r).key_hashes_inline, 3);
    let log = seen.borrow();
    assert!(log.len() > 8, "fragments seen: {}", log.len());
    for (n, h) in log.iter() {
        if *n == 1 {
            let h = h.as_ref().expect("a first fragment without PID_KEY_HASH");
            assert!(keys.iter().any(|&k| key_hash_u32(k).as_slice() == h.as_slice()), "{h:02x?}");
        } else {
            assert!(h.is_none(), "fragment {n} carries inline QoS");
        }
    }
    assert!(log.iter().filter(|(n, _)| *n == 1).count() >= 3, "fragment 1 of both large samples, and the resent one");
}
