//! TRANSPORT_PRIORITY (PID 0x0049) and LATENCY_BUDGET (PID 0x0027) in SEDP:
//! announced for writers and readers, parsed into the remote endpoint's
//! QoS, LATENCY_BUDGET matched request-offered as CycloneDDS does (a
//! writer's budget at most the reader's), and a malformed value refused as
//! a parse error, never a panic.

mod common;
use common::*;
use detpath_pubsub::discovery::{DiscoveryError, EndpointData};
use detpath_pubsub::engine::Event;
use detpath_pubsub::qos::{Incompatible, Qos};
use detpath_pubsub::types::OneULong;
use detpath_pubsub::wire::bytes::ByteWriter;
use detpath_pubsub::wire::plist::{pid, ParamList, ParamWriter};
use detpath_pubsub::wire::{EntityId, Guid};

fn endpoint(qos: Qos) -> EndpointData {
    EndpointData {
        guid: Guid::new(detpath_pubsub::engine::make_guid_prefix(1, 2, 3), EntityId::user(7, detpath_pubsub::wire::kind::USER_WRITER_NO_KEY)),
        topic_name: "T".into(),
        type_name: "X".into(),
        qos,
        unicast: Vec::new(),
        data_representation: vec![0],
        has_type_information: false,
    }
}

fn roundtrip(ed: &EndpointData) -> Result<EndpointData, DiscoveryError> {
    let mut buf = [0u8; 1024];
    let mut w = ByteWriter::new(&mut buf, true);
    ed.write(&mut w).unwrap();
    let n = w.pos();
    EndpointData::parse(&ParamList::new(&buf[..n], true))
}

#[test]
fn priority_and_budget_survive_an_announcement() {
    for (prio, budget) in [(40, 100_000), (-3, 1_500_000_000), (0, 0), (i32::MAX, detpath_pubsub::qos::INFINITE_NS)] {
        let q = Qos { transport_priority: prio, latency_budget_ns: budget, ..Qos::reliable_keep_last(1) };
        let back = roundtrip(&endpoint(q)).unwrap();
        assert_eq!((back.qos.transport_priority, back.qos.latency_budget_ns), (prio, budget));
    }
    // Defaults are not written (a peer that does not know them sees nothing new).
    let mut buf = [0u8; 1024];
    let mut w = ByteWriter::new(&mut buf, true);
    endpoint(Qos::default()).write(&mut w).unwrap();
    let n = w.pos();
    let pl = ParamList::new(&buf[..n], true);
    assert!(pl.find(pid::TRANSPORT_PRIORITY).is_none() && pl.find(pid::LATENCY_BUDGET).is_none());
}

/// An announcement whose `id` parameter has the raw value `value`.
fn with_raw(id: u16, value: &[u8]) -> Result<EndpointData, DiscoveryError> {
    let ed = endpoint(Qos::default());
    let mut buf = [0u8; 1024];
    let mut w = ByteWriter::new(&mut buf, true);
    {
        let mut pw = ParamWriter::new(&mut w);
        pw.bytes(pid::ENDPOINT_GUID, &ed.guid.to_bytes()).unwrap();
        pw.string(pid::TOPIC_NAME, "T").unwrap();
        pw.string(pid::TYPE_NAME, "X").unwrap();
        // Raw: header and value as given, no padding fix-up.
        pw.w.u16(id).unwrap();
        pw.w.u16(value.len() as u16).unwrap();
        pw.w.bytes(value).unwrap();
        pw.sentinel().unwrap();
    }
    let n = w.pos();
    EndpointData::parse(&ParamList::new(&buf[..n], true))
}

#[test]
fn a_malformed_priority_or_budget_is_a_parse_error() {
    assert_eq!(with_raw(pid::TRANSPORT_PRIORITY, &[]), Err(DiscoveryError::BadValue(pid::TRANSPORT_PRIORITY)));
    assert_eq!(with_raw(pid::LATENCY_BUDGET, &[1, 0, 0, 0]), Err(DiscoveryError::BadValue(pid::LATENCY_BUDGET)));
    // Well formed, extreme: a negative budget is no budget, a negative priority is kept.
    assert_eq!(with_raw(pid::LATENCY_BUDGET, &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]).unwrap().qos.latency_budget_ns, 0);
    assert_eq!(with_raw(pid::TRANSPORT_PRIORITY, &(-7i32).to_le_bytes()).unwrap().qos.transport_priority, -7);
}

#[test]
fn a_peer_learns_a_writers_priority_and_budget_from_sedp() {
    let mut net = Net::new(2);
    let wq = Qos { transport_priority: 40, latency_budget_ns: 100_000, ..Qos::reliable_keep_last(1) };
    let rq = Qos { latency_budget_ns: 200_000, transport_priority: 5, ..Qos::reliable_keep_last(1) };
    let w = net.nodes[0].create_writer_for("T", wq, &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", rq, &OneULong::default()).unwrap();
    net.run_until(2000, |n| n.nodes[0].writer_status(w).matched > 0 && n.nodes[1].reader_status(r).matched > 0).expect("no match");
    let wg = net.nodes[0].writer_guid(w);
    let seen = net.nodes[1].remote_endpoints().find(|e| e.guid == wg).expect("writer announced").qos.clone();
    assert_eq!((seen.transport_priority, seen.latency_budget_ns), (40, 100_000));
    let rg = net.nodes[1].reader_guid(r);
    let seen = net.nodes[0].remote_endpoints().find(|e| e.guid == rg).expect("reader announced").qos.clone();
    assert_eq!((seen.transport_priority, seen.latency_budget_ns), (5, 200_000));
}

#[test]
fn a_writers_budget_longer_than_the_readers_does_not_match() {
    let mut net = Net::new(2);
    let wq = Qos { latency_budget_ns: 100_000, ..Qos::reliable_keep_last(1) };
    let w = net.nodes[0].create_writer_for("T", wq, &OneULong::default()).unwrap();
    // The reader requests none (0): the writer's 100 µs is longer.
    let _r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_last(1), &OneULong::default()).unwrap();
    net.run_until(300, |_| false);
    assert_eq!(net.nodes[0].writer_status(w).matched, 0);
    let mut why = Vec::new();
    while let Some(e) = net.nodes[1].poll_event() {
        if let Event::IncompatibleQos { reason, .. } = e {
            why.push(reason);
        }
    }
    assert_eq!(why, vec![Incompatible::LatencyBudget]);
}
