//! A writer's TRANSPORT_PRIORITY marks every datagram of that writer in the
//! engine (DATA, DATA_FRAG, HEARTBEAT, HEARTBEAT_FRAG, GAP, retransmissions) and the
//! ACKNACKs and NACK_FRAGs a reader sends it, read from what two engines
//! hand their outboxes; discovery is unmarked. A priority no class of the
//! endpoint's scheduler covers is refused at writer creation, naming the
//! classes.

mod common;
use common::*;
use detpath_pubsub::engine::{EngineError, Outbox, ReaderId, WriterId};
use detpath_pubsub::priority::{ClassKind, ClassMap, MarkTable, PriorityPolicy, TxMark};
use detpath_pubsub::qos::Qos;
use detpath_pubsub::types::KeyedSeq;
use detpath_pubsub::wire::{EntityId, Message, Submessage, Time};
use std::collections::HashMap;

/// What one datagram was about: the user writer its submessages name (DATA,
/// DATA_FRAG, HEARTBEAT, GAP, ACKNACK, NACK_FRAG), and which kinds.
fn about(bytes: &[u8]) -> Option<(EntityId, Vec<&'static str>)> {
    let m = Message::parse(bytes).ok()?;
    let mut w = None;
    let mut kinds = Vec::new();
    for s in m.submessages().map_while(Result::ok) {
        let (id, k) = match s {
            Submessage::Data(d) => (d.writer_id, "data"),
            Submessage::DataFrag(d) => (d.writer_id, "data_frag"),
            Submessage::Heartbeat(h) => (h.writer_id, "heartbeat"),
            Submessage::Gap(g) => (g.writer_id, "gap"),
            Submessage::AckNack(a) => (a.writer_id, "acknack"),
            Submessage::NackFrag(n) => (n.writer_id, "nack_frag"),
            Submessage::HeartbeatFrag(h) => (h.writer_id, "heartbeat_frag"),
            _ => continue,
        };
        w = Some(id);
        kinds.push(k);
    }
    w.map(|w| (w, kinds))
}

/// Like `Net::step`, but keeps each datagram's sender, kind and mark.
fn step_logged(net: &mut Net, dt: u64, log: &mut Vec<(usize, EntityId, Vec<&'static str>, TxMark)>, mut drop: impl FnMut(&[u8], u64) -> bool) {
    net.now += dt;
    for i in 0..net.nodes.len() {
        if net.nodes[i].next_timeout() <= net.now {
            let (node, out) = (&mut net.nodes[i], &mut net.outs[i]);
            node.handle_timeout(net.now, out);
        }
    }
    for _ in 0..64 {
        let mut moved = false;
        for i in 0..net.nodes.len() {
            for (dst, bytes, mark) in net.outs[i].drain_marked() {
                moved = true;
                if let Some((w, kinds)) = about(&bytes) {
                    log.push((i, w, kinds, mark));
                }
                let Some(j) = net.addrs.iter().position(|a| dst == *a) else { continue };
                net.sent += 1;
                if drop(&bytes, net.sent) {
                    continue;
                }
                let src = net.addrs[i];
                let (node, out) = (&mut net.nodes[j], &mut net.outs[j]);
                node.handle_datagram(net.now, src, &bytes, out);
            }
        }
        if !moved {
            return;
        }
    }
}

fn matched(net: &Net, ws: &[WriterId], rs: &[ReaderId]) -> bool {
    ws.iter().all(|w| net.nodes[0].writer_status(*w).matched > 0) && rs.iter().all(|r| net.nodes[1].reader_status(*r).matched > 0)
}

#[test]
fn every_datagram_of_a_writer_and_every_acknowledgement_to_it_carries_its_priority() {
    let mut net = Net::with_config(2, |_, cfg| {
        cfg.max_datagram = 600;
    });
    let hi = Qos { transport_priority: 40, ..Qos::reliable_keep_all(256) };
    let lo = Qos::reliable_keep_all(256);
    let proto = KeyedSeq::with_size(32);
    let w_hi = net.nodes[0].create_writer_for("Hi", hi.clone(), &proto).unwrap();
    let w_lo = net.nodes[0].create_writer_for("Lo", lo.clone(), &proto).unwrap();
    let r_hi = net.nodes[1].create_reader_for(0, "Hi", hi, &proto).unwrap();
    let r_lo = net.nodes[1].create_reader_for(0, "Lo", lo, &proto).unwrap();
    net.run_until(2000, |n| matched(n, &[w_hi, w_lo], &[r_hi, r_lo])).expect("no match");
    assert_eq!(net.nodes[0].writer_mark(w_hi), TxMark { dscp: 46, class: None });
    assert_eq!(net.nodes[0].writer_mark(w_lo), TxMark::NONE);
    let (g_hi, g_lo) = (net.nodes[0].writer_guid(w_hi).entity, net.nodes[0].writer_guid(w_lo).entity);
    let mut log = Vec::new();
    // Every 7th datagram lost: retransmissions, NACKs and (for large samples) fragments.
    let mut rx = KeyedSeq::default();
    let (mut got_hi, mut got_lo) = (0, 0);
    for k in 0..400u32 {
        if k < 100 {
            let size = if k % 10 == 0 { 2000 } else { 32 };
            let mut s = KeyedSeq::with_size(size);
            s.seq = k;
            for w in [w_hi, w_lo] {
                let (node, out) = (&mut net.nodes[0], &mut net.outs[0]);
                node.write(net.now, out as &mut dyn Outbox, w, Some(Time::from_nanos(k as i64)), &s).unwrap();
            }
        }
        step_logged(&mut net, 1_000_000, &mut log, |_, n| n % 7 == 0);
        while net.nodes[1].take(r_hi, &mut rx).unwrap().is_some() {
            got_hi += 1;
        }
        while net.nodes[1].take(r_lo, &mut rx).unwrap().is_some() {
            got_lo += 1;
        }
    }
    assert_eq!((got_hi, got_lo), (100, 100), "everything delivered despite the loss");
    let mut seen: HashMap<(usize, bool, &str), usize> = HashMap::new();
    for (from, w, kinds, mark) in &log {
        let want = if *w == g_hi {
            TxMark { dscp: 46, class: None }
        } else if *w == g_lo {
            TxMark::NONE
        } else {
            // Discovery (SEDP): unmarked.
            assert_eq!(*mark, TxMark::NONE, "discovery datagram {kinds:?} marked");
            continue;
        };
        assert_eq!(*mark, want, "node {from}'s {kinds:?} of writer {w:?}");
        for k in kinds {
            *seen.entry((*from, *w == g_hi, k)).or_default() += 1;
        }
    }
    // The paced fragment stream's HEARTBEAT_FRAGs and the reader's
    // NACK_FRAGs (its confirmations and requests) included.
    for k in ["data", "data_frag", "heartbeat", "heartbeat_frag", "acknack", "nack_frag"] {
        let from = if k == "acknack" || k == "nack_frag" { 1 } else { 0 };
        assert!(seen.get(&(from, true, k)).copied().unwrap_or(0) > 0, "no {k} of the priority writer seen: {seen:?}");
    }
    assert!(net.nodes[0].counters().retransmits > 0);
}

#[test]
fn with_scheduler_classes_a_writers_priority_picks_its_class_or_is_refused_naming_the_classes() {
    let classes = vec![("ctl".to_string(), ClassKind::RealTime), ("bulk".to_string(), ClassKind::BestEffort)];
    let table = MarkTable::resolve(&PriorityPolicy::default(), Some(&classes)).unwrap();
    let mut net = Net::with_config(1, |_, cfg| cfg.priority = table.clone());
    let proto = KeyedSeq::with_size(32);
    let w = net.nodes[0].create_writer_for("Hi", Qos { transport_priority: 40, ..Qos::default() }, &proto).unwrap();
    assert_eq!(net.nodes[0].writer_mark(w), TxMark { dscp: 46, class: Some(0) });
    let w = net.nodes[0].create_writer_for("Lo", Qos::default(), &proto).unwrap();
    assert_eq!(net.nodes[0].writer_mark(w), TxMark { dscp: 0, class: Some(1) });
    // A class map that starts at priority 10: priority 5 is covered by no class.
    let policy = PriorityPolicy { classes: Some(ClassMap::parse("10=ctl,50=bulk").unwrap()), ..Default::default() };
    let table = MarkTable::resolve(&policy, Some(&classes)).unwrap();
    let mut net = Net::with_config(1, |_, cfg| cfg.priority = table.clone());
    match net.nodes[0].create_writer_for("X", Qos { transport_priority: 5, ..Qos::default() }, &proto) {
        Err(EngineError::Priority(e)) => {
            let e = e.to_string();
            assert!(e.contains("priority 5") && e.contains("ctl (rt), bulk (be)"), "{e}");
        }
        other => panic!("priority 5 accepted: {other:?}"),
    }
    let y = net.nodes[0].create_writer_for("Y", Qos { transport_priority: 60, ..Qos::default() }, &proto).unwrap();
    assert_eq!(net.nodes[0].writer_mark(y), TxMark { dscp: 46, class: Some(1) });
}

#[test]
fn under_a_scheduler_discovery_leaves_in_the_highest_class_so_a_bulk_flood_cannot_starve_it() {
    let classes = vec![("ctl".to_string(), ClassKind::RealTime), ("bulk".to_string(), ClassKind::BestEffort)];
    let table = MarkTable::resolve(&PriorityPolicy::default(), Some(&classes)).unwrap();
    let mut net = Net::with_config(2, |_, cfg| cfg.priority = table.clone());
    let proto = KeyedSeq::with_size(32);
    let w = net.nodes[0].create_writer_for("Bulk", Qos::default(), &proto).unwrap();
    let r = net.nodes[1].create_reader_for(0, "Bulk", Qos::default(), &proto).unwrap();
    let mut log = Vec::new();
    for _ in 0..200 {
        step_logged(&mut net, 1_000_000, &mut log, |_, _| false);
        if matched(&net, &[w], &[r]) {
            break;
        }
    }
    assert!(matched(&net, &[w], &[r]));
    let user = net.nodes[0].writer_guid(w).entity;
    let sedp: Vec<_> = log.iter().filter(|(_, wid, _, _)| *wid != user).collect();
    assert!(sedp.iter().any(|(_, w, _, _)| *w == EntityId::SPDP_WRITER) && sedp.iter().any(|(_, w, _, _)| *w == EntityId::SEDP_PUBLICATIONS_WRITER), "{sedp:?}");
    for (from, _, kinds, mark) in sedp {
        assert_eq!(*mark, TxMark { dscp: 0, class: Some(0) }, "node {from}'s discovery {kinds:?}");
    }
}
