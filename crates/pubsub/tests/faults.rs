//! Faults from the wire are counted and survived, and memory stays bounded:
//! truncated and corrupted RTPS, bad parameter lengths, absurd fragment
//! numbers, a discovery flood of participants and of endpoints.

mod common;
use common::*;
use detpath_pubsub::discovery::{builtin, EndpointData, ParticipantData};
use detpath_pubsub::engine::{make_guid_prefix, Config, Participant, VecOutbox};
use detpath_pubsub::qos::Qos;
use detpath_pubsub::types::OneULong;
use detpath_pubsub::wire::bytes::ByteWriter;
use detpath_pubsub::wire::types::kind;
use detpath_pubsub::wire::*;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;

fn captures() -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/captures");
    let mut v: Vec<_> =
        std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "rtps")).collect();
    v.sort();
    v.into_iter().map(|p| std::fs::read(p).unwrap()).collect()
}

fn peer() -> SocketAddrV4 {
    "127.0.0.1:7410".parse().unwrap()
}

/// Two nodes still discover each other and deliver after `abuse` hit node 1.
fn still_works(abuse: impl FnOnce(&mut Participant, &mut VecOutbox)) {
    let mut net = Net::new(2);
    {
        let (p, o) = (&mut net.nodes[1], &mut net.outs[1]);
        abuse(p, o);
        o.drain();
    }
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    net.run_until(3000, |n| n.nodes[0].writer_status(w).matched == 1 && n.nodes[1].reader_status(r).matched == 1).expect("matched after the abuse");
    for i in 0..10 {
        net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq: i }).unwrap();
    }
    net.run_until(1000, |n| n.nodes[1].reader_status(r).waiting == 10).expect("delivered after the abuse");
}

#[test]
fn every_truncation_and_bit_flip_of_real_traffic_is_survived() {
    still_works(|p, o| {
        let mut n = 0u64;
        for c in captures() {
            for len in 0..c.len().min(600) {
                p.handle_datagram(n, peer(), &c[..len], o);
                n += 1;
            }
            for i in 0..c.len().min(300) {
                let mut x = c.clone();
                x[i] ^= 0x5a;
                p.handle_datagram(n, peer(), &x, o);
                n += 1;
            }
        }
        let c = p.counters();
        assert!(c.rx_malformed > 1000, "{c:?}");
        assert!(c.rx_datagrams > 10_000);
    });
}

fn spdp_message(prefix: GuidPrefix, domain: u32, mutate: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let pd = ParticipantData {
        guid_prefix: prefix,
        protocol_version: ProtocolVersion::V2_1,
        vendor: VendorId::DETPATH,
        domain_id: Some(domain),
        default_unicast: vec![Locator::udpv4("127.0.0.1:9000".parse().unwrap())],
        metatraffic_unicast: vec![Locator::udpv4("127.0.0.1:9000".parse().unwrap())],
        metatraffic_multicast: Vec::new(),
        lease_ns: 10_000_000_000,
        builtin_endpoints: builtin::DETPATH,
        user_data: b"flood".to_vec(),
        host_id: None,
    };
    let mut payload = vec![0u8; 512];
    let n = {
        let mut w = ByteWriter::new(&mut payload, true);
        w.bytes(&[0, 3, 0, 0]).unwrap();
        pd.write(&mut w).unwrap();
        w.pos()
    };
    payload.truncate(n);
    mutate(&mut payload);
    let mut buf = vec![0u8; 1024];
    let mut b = MessageBuilder::new(&mut buf, prefix, VendorId::DETPATH).unwrap();
    b.data_bytes(EntityId::SPDP_READER, EntityId::SPDP_WRITER, SequenceNumber(1), None, &payload).unwrap();
    let n = b.finish();
    buf.truncate(n);
    buf
}

#[test]
fn bad_parameter_lengths_and_foreign_domains_are_refused() {
    let me: SocketAddrV4 = "127.0.0.1:7412".parse().unwrap();
    let mut p = Participant::new(Config::new(0, make_guid_prefix(1, 1, 1), me), 1);
    let mut o = VecOutbox::default();
    // Length of the first parameter (after the 4-byte encapsulation header) made huge.
    let bad = spdp_message(make_guid_prefix(2, 2, 2), 0, |pl| {
        pl[6] = 0xff;
        pl[7] = 0x7f;
    });
    p.handle_datagram(2, peer(), &bad, &mut o);
    // A must-understand parameter detpath does not know.
    let mu = spdp_message(make_guid_prefix(3, 3, 3), 0, |pl| {
        pl[4] = 0x77;
        pl[5] = 0x40;
    });
    p.handle_datagram(3, peer(), &mu, &mut o);
    let foreign = spdp_message(make_guid_prefix(4, 4, 4), 7, |_| {});
    p.handle_datagram(4, peer(), &foreign, &mut o);
    let c = p.counters();
    assert_eq!(c.discovery_rejected, 3, "{c:?}");
    assert_eq!(p.remote_participants().count(), 0);
    let good = spdp_message(make_guid_prefix(5, 5, 5), 0, |_| {});
    p.handle_datagram(5, peer(), &good, &mut o);
    assert_eq!(p.remote_participants().count(), 1);
}

#[test]
fn absurd_fragment_numbers_are_dropped() {
    let mut net = Net::new(2);
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_all(4), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_all(4), &OneULong::default()).unwrap();
    net.run_until(2000, |n| n.nodes[1].reader_status(r).matched == 1).unwrap();
    let wguid = net.nodes[0].writer_guid(w);
    let cases: [(u32, u16, u16, u32); 5] = [
        (1, 1, 100, 4_000_000_000), // sample larger than the reader accepts
        (0, 1, 100, 1000),          // fragment number 0
        (50, 1, 100, 1000),         // beyond the last fragment
        (1, 1, 0, 1000),            // fragment size 0
        (1, 1, 1, 100_000),         // 100,000 fragments
    ];
    let before = net.nodes[1].counters();
    for (i, (start, n, size, total)) in cases.iter().enumerate() {
        let mut buf = vec![0u8; 2048];
        let mut b = MessageBuilder::new(&mut buf, wguid.prefix, VendorId::DETPATH).unwrap();
        b.data_frag(EntityId::UNKNOWN, wguid.entity, SequenceNumber(1 + i as i64), *start, *n, *size, *total, &[0u8; 100]).unwrap();
        let len = b.finish();
        let (p, o) = (&mut net.nodes[1], &mut net.outs[1]);
        p.handle_datagram(net.now, net.addrs[0], &buf[..len], o);
    }
    let c = net.nodes[1].counters();
    let refused = (c.rx_malformed - before.rx_malformed) + (c.frag_rejected - before.frag_rejected);
    assert_eq!(refused, 5, "{c:?}");
    assert_eq!(net.nodes[1].reader_status(r).waiting, 0);
}

#[test]
fn a_participant_flood_is_bounded_and_counted() {
    let me: SocketAddrV4 = "127.0.0.1:7412".parse().unwrap();
    let mut cfg = Config::new(0, make_guid_prefix(1, 1, 1), me);
    cfg.max_remote_participants = 32;
    let mut p = Participant::new(cfg, 1);
    let mut o = VecOutbox::default();
    for i in 0..10_000u32 {
        let m = spdp_message(make_guid_prefix(9, i, 9), 0, |_| {});
        p.handle_datagram(2, peer(), &m, &mut o);
        if i % 100 == 0 {
            p.handle_timeout(3, &mut o);
            o.drain();
        }
    }
    assert_eq!(p.remote_participants().count(), 32);
    assert_eq!(p.counters().discovery_over_limit, 10_000 - 32);
    // Leases expire: the table empties and room comes back.
    p.handle_timeout(20_000_000_000, &mut o);
    assert_eq!(p.remote_participants().count(), 0);
    assert_eq!(p.counters().leases_expired, 32);
}

#[test]
fn an_endpoint_flood_is_bounded_and_counted() {
    let mut net = Net::with_config(2, |i, c| {
        if i == 1 {
            // 50 for one participant: its share, a quarter of the table.
            c.max_remote_endpoints = 200;
        } else {
            c.builtin_depth = 512;
        }
    });
    net.run_until(1000, |n| n.nodes[1].remote_participants().count() == 1).unwrap();
    // Node 0 announces 300 writers; node 1 keeps at most 50.
    for k in 0..300 {
        net.nodes[0].create_writer(&format!("flood{k}"), "OneULong", false, Qos::best_effort(1), 16).unwrap();
        if k % 50 == 0 {
            net.step(1_000_000);
        }
    }
    net.run_until(3000, |n| n.nodes[0].counters().heartbeats_sent > 0 && n.nodes[1].counters().discovery_over_limit >= 250).expect("flood processed");
    assert_eq!(net.nodes[1].remote_endpoint_count(), 50);
    // Past builtin_depth, creating more is a typed error, not a silent loss.
    let mut n = 0;
    while net.nodes[0].create_writer("more", "OneULong", false, Qos::best_effort(1), 16).is_ok() {
        n += 1;
    }
    assert_eq!(n, 512 - 300);
    let _ = (EndpointData::is_writer, kind::USER_WRITER_NO_KEY, Ipv4Addr::LOCALHOST);
}
