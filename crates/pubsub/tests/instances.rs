//! Instances of a keyed topic between two engines (in-memory network,
//! virtual clock): KEEP_LAST n per instance in the reader cache and the
//! writer history, the instance table's limit, dispose and unregister on
//! the wire (checked byte by byte against RTPS §9.6.3.9) and as the reader
//! sees them, and "no writers" when the writer's lease expires.

mod common;
use common::*;
use detpath_pubsub::engine::{InstanceState, ReaderId, WriteError, WriterId};
use detpath_pubsub::qos::{Durability, Qos};
use detpath_pubsub::types::{key_hash_u32, KeyedSeq, TopicType};
use detpath_pubsub::wire::{Message, Submessage};
use std::cell::RefCell;
use std::rc::Rc;

fn matched(net: &mut Net, w: WriterId, r: ReaderId) -> bool {
    net.nodes[0].writer_status(w).matched > 0 && net.nodes[1].reader_status(r).matched > 0
}

fn write(net: &mut Net, w: WriterId, keyval: u32, seq: u32) -> Result<(), WriteError> {
    let s = KeyedSeq { seq, keyval, baggage: vec![0xee; 8] };
    net.nodes[0].write(net.now, &mut net.outs[0], w, None, &s).map(|_| ())
}

/// A taken sample: keyval, seq, valid data, instance state, key hash.
type Taken = (u32, u32, bool, InstanceState, Option<[u8; 16]>);

/// Everything the reader has.
fn take_all(net: &mut Net, r: ReaderId) -> Vec<Taken> {
    let mut got = Vec::new();
    let mut rx = KeyedSeq::default();
    while let Some(info) = net.nodes[1].take(r, &mut rx).unwrap() {
        let (k, s) = if info.valid_data { (rx.keyval, rx.seq) } else { (u32::MAX, 0) };
        got.push((k, s, info.valid_data, info.instance_state, info.key_hash));
    }
    got
}

fn pair(wq: Qos, rq: Qos) -> (Net, WriterId, ReaderId) {
    let mut net = Net::with_config(2, |_, c| c.lease_ns = 2_000_000_000);
    let proto = KeyedSeq::with_size(20);
    let w = net.nodes[0].create_writer_for("Keyed", wq, &proto).unwrap();
    let r = net.nodes[1].create_reader_for(0, "Keyed", rq, &proto).unwrap();
    net.run_until(2000, |n| matched(n, w, r)).expect("no match");
    (net, w, r)
}

#[test]
fn keep_last_1_reader_keeps_the_last_sample_of_each_instance() {
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1), Qos::reliable_keep_last(1));
    // Ten instances, each written three times before the reader takes anything.
    let mut seq = 0;
    for round in 0..3 {
        for k in 0..10 {
            seq += 1;
            write(&mut net, w, k, seq).unwrap();
            let _ = round;
        }
        net.step(1_000_000);
    }
    net.run_until(100, |_| false);
    let got = take_all(&mut net, r);
    let mut keys: Vec<(u32, u32)> = got.iter().map(|g| (g.0, g.1)).collect();
    keys.sort();
    assert_eq!(keys, (0..10).map(|k| (k, 21 + k)).collect::<Vec<_>>(), "the last sample of each of the 10 instances");
    assert!(got.iter().all(|g| g.2 && g.3 == InstanceState::Alive));
    assert_eq!(got[0].4, Some(key_hash_u32(got[0].0)), "the key hash of the sample (sent inline by the writer)");
    let st = net.nodes[1].reader_status(r);
    assert_eq!((st.replaced, st.instances, st.lost), (20, 10, 0));
}

#[test]
fn keep_last_writer_history_is_per_instance_for_late_joiners() {
    let wq = Qos { durability: Durability::TransientLocal, ..Qos::reliable_keep_last(1) };
    let mut net = Net::with_config(2, |_, _| {});
    let proto = KeyedSeq::with_size(20);
    let w = net.nodes[0].create_writer_for("Keyed", wq.clone(), &proto).unwrap();
    net.step(1_000_000);
    // Instance 7 first, then instance 3 a hundred times: a per-writer depth of 1 would keep only 3's last.
    write(&mut net, w, 7, 1).unwrap();
    for seq in 2..=101 {
        write(&mut net, w, 3, seq).unwrap();
    }
    let r = net.nodes[1].create_reader_for(net.now, "Keyed", wq, &proto).unwrap();
    net.run_until(3000, |n| n.nodes[1].reader_status(r).waiting >= 2).expect("late joiner got the history");
    let mut got: Vec<(u32, u32)> = take_all(&mut net, r).iter().map(|g| (g.0, g.1)).collect();
    got.sort();
    assert_eq!(got, [(3, 101), (7, 1)]);
    assert_eq!(net.nodes[1].reader_status(r).lost, 0, "the overwritten samples came as GAPs, not losses");
}

#[test]
fn instance_tables_are_bounded_and_count_what_they_refuse() {
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1).with_max_instances(6), Qos::reliable_keep_last(1).with_max_instances(4));
    for k in 0..6 {
        write(&mut net, w, k, k + 1).unwrap();
    }
    assert_eq!(write(&mut net, w, 6, 7), Err(WriteError::TooManyInstances), "a seventh instance");
    assert_eq!(net.nodes[0].writer_status(w).instances_refused, 1);
    write(&mut net, w, 5, 8).unwrap();
    net.run_until(100, |_| false);
    let got = take_all(&mut net, r);
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [0, 1, 2, 3]);
    let st = net.nodes[1].reader_status(r);
    assert_eq!((st.instances, st.instances_refused, st.lost), (4, 3, 0), "instances 4, 5 and 5 again refused, nothing lost");
    // The writer still has room for the instances it knows.
    assert_eq!(net.nodes[0].writer_status(w).instances, 6);
}

/// The inline QoS parameters and the serialized key of every DATA without
/// a sample (a key-flagged one) the writer sends, as raw bytes.
fn status_datas(bytes: &[u8]) -> Vec<(u8, Vec<u8>, Vec<u8>)> {
    let mut found = Vec::new();
    let Ok(m) = Message::parse(bytes) else { return found };
    for s in m.submessages().map_while(Result::ok) {
        if let Submessage::Data(d) = s {
            if d.key_flag {
                if let Some(q) = d.inline_qos {
                    let raw: Vec<u8> = q
                        .iter()
                        .map_while(Result::ok)
                        .flat_map(|p| {
                            let mut v = p.pid.to_le_bytes().to_vec();
                            v.extend_from_slice(&(p.value.len() as u16).to_le_bytes());
                            v.extend_from_slice(p.value);
                            v
                        })
                        .collect();
                    found.push((0, raw, d.payload.unwrap_or(&[]).to_vec()));
                }
            }
        }
    }
    // The submessage header: DATA (0x15), flags E|Q|K (no D).
    let mut i = 20;
    let mut k = 0;
    while i + 4 <= bytes.len() {
        let (id, flags) = (bytes[i], bytes[i + 1]);
        let len = u16::from_le_bytes([bytes[i + 2], bytes[i + 3]]) as usize;
        if id == 0x15 && flags & 0x0c == 0x08 && k < found.len() {
            found[k].0 = flags;
            k += 1;
        }
        i += 4 + len;
    }
    found
}

#[test]
fn dispose_and_unregister_go_out_as_status_info_with_the_key_and_the_reader_sees_the_states() {
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1), Qos::reliable_keep_last(1));
    // Capture the wire; drop the first dispose so that it has to be retransmitted from the history.
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (seen2, mut dropped_one) = (seen.clone(), false);
    net.drop = Box::new(move |from, _, bytes, _| {
        let s = status_datas(bytes);
        if from == 0 && !s.is_empty() {
            seen2.borrow_mut().extend(s);
            if !dropped_one {
                dropped_one = true;
                return true;
            }
        }
        false
    });
    write(&mut net, w, 1, 1).unwrap();
    write(&mut net, w, 2, 2).unwrap();
    net.step(1_000_000);
    assert_eq!(take_all(&mut net, r).len(), 2);
    let one = KeyedSeq { keyval: 1, ..Default::default() };
    let two = KeyedSeq { keyval: 2, ..Default::default() };
    net.nodes[0].dispose(net.now, &mut net.outs[0], w, None, &one).unwrap();
    net.nodes[0].unregister(net.now, &mut net.outs[0], w, None, &two).unwrap();
    net.run_until(1000, |n| n.nodes[1].reader_status(r).waiting == 2).expect("dispose and unregister arrive (one retransmitted)");
    let got = take_all(&mut net, r);
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].2, got[0].3, got[0].4), (false, InstanceState::Disposed, Some(key_hash_u32(1))));
    assert_eq!((got[1].2, got[1].3, got[1].4), (false, InstanceState::NoWriters, Some(key_hash_u32(2))));
    assert!(net.nodes[0].counters().retransmits > 0);
    // On the wire: PID_KEY_HASH (0x0070, 16 octets) then PID_STATUS_INFO (0x0071, 4 octets, big-endian flags: disposed 1, unregistered 2).
    let seen = seen.borrow();
    let mut key1 = vec![0x70, 0x00, 0x10, 0x00];
    key1.extend_from_slice(&key_hash_u32(1));
    let mut key2 = vec![0x70, 0x00, 0x10, 0x00];
    key2.extend_from_slice(&key_hash_u32(2));
    let dispose = [key1, vec![0x71, 0x00, 0x04, 0x00, 0, 0, 0, 1]].concat();
    let unregister = [key2, vec![0x71, 0x00, 0x04, 0x00, 0, 0, 0, 2]].concat();
    // The payload: the serialized key (CDR_LE header, keyval), as CycloneDDS sends and needs it.
    let (k1, k2) = (vec![0x00, 0x01, 0x00, 0x00, 1, 0, 0, 0], vec![0x00, 0x01, 0x00, 0x00, 2, 0, 0, 0]);
    assert!(seen.iter().any(|(f, q, k)| *f == 0x0b && *q == dispose && *k == k1), "dispose DATA, flags E|Q|K: {seen:02x?}");
    assert!(seen.iter().any(|(f, q, k)| *f == 0x0b && *q == unregister && *k == k2), "unregister DATA: {seen:02x?}");
    assert!(seen.iter().filter(|(_, q, _)| *q == dispose).count() >= 2, "the dispose went out again after the loss");
    // Writing the disposed instance again makes it alive.
    write(&mut net, w, 1, 3).unwrap();
    net.step(1_000_000);
    let got = take_all(&mut net, r);
    assert_eq!((got[0].0, got[0].3), (1, InstanceState::Alive));
}

#[test]
fn an_instance_whose_writer_lease_expires_has_no_writers() {
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1), Qos::reliable_keep_last(2));
    write(&mut net, w, 4, 1).unwrap();
    net.step(1_000_000);
    write(&mut net, w, 4, 2).unwrap();
    net.step(1_000_000);
    let mut rx = KeyedSeq::default();
    let info = net.nodes[1].take(r, &mut rx).unwrap().unwrap();
    assert_eq!((rx.seq, info.instance_state), (1, InstanceState::Alive));
    let key = KeyedSeq { keyval: 4, ..Default::default() }.key_hash().unwrap();
    assert_eq!(net.nodes[1].instance_state(r, &key), Some(InstanceState::Alive));
    net.alive[0] = false;
    net.run_until(5000, |n| n.nodes[1].reader_status(r).matched == 0).expect("lease expired");
    assert_eq!(net.nodes[1].instance_state(r, &key), Some(InstanceState::NoWriters));
    let info = net.nodes[1].take(r, &mut rx).unwrap().unwrap();
    assert_eq!((rx.seq, info.valid_data, info.instance_state), (2, true, InstanceState::NoWriters), "the sample still waiting says so");
}

#[test]
fn a_dispose_carrying_the_serialized_key_as_cyclonedds_sends_it_names_the_instance() {
    use detpath_pubsub::engine::Outbox;
    use detpath_pubsub::wire::{EntityId, MessageBuilder, SequenceNumber, VendorId};
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1), Qos::reliable_keep_last(1));
    write(&mut net, w, 0x0a0b0c0d, 1).unwrap();
    write(&mut net, w, 5, 2).unwrap();
    net.step(1_000_000);
    assert_eq!(take_all(&mut net, r).len(), 2);
    // DATA with the key flag: CDR_LE header and the key (keyval) alone; STATUS_INFO disposed|unregistered, no key hash.
    let writer = net.nodes[0].writer_guid(w);
    let mut buf = [0u8; 256];
    let mut b = MessageBuilder::new(&mut buf, writer.prefix, VendorId([0x01, 0x10])).unwrap();
    let qos = [0x71, 0x00, 0x04, 0x00, 0, 0, 0, 3, 0x01, 0x00, 0x00, 0x00];
    b.data_raw(EntityId::UNKNOWN, writer.entity, SequenceNumber(3), Some(&qos), Some(&[0x00, 0x01, 0x00, 0x00, 0x0d, 0x0c, 0x0b, 0x0a]), true).unwrap();
    let n = b.finish();
    let src = net.addrs[0];
    net.nodes[1].handle_datagram(net.now, src, &buf[..n], &mut net.outs[1] as &mut dyn Outbox);
    let got = take_all(&mut net, r);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].2, got[0].3, got[0].4), (false, InstanceState::Disposed, Some(key_hash_u32(0x0a0b0c0d))));
    let other = KeyedSeq { keyval: 5, ..Default::default() }.key_hash().unwrap();
    assert_eq!(net.nodes[1].instance_state(r, &other), Some(InstanceState::Alive), "only that instance");
}
