//! Forged and corrupted reliability traffic, sans-IO: each plausibility rule
//! of the reader and writer proxies (engine/guard.rs) refuses and counts what
//! a writer cannot have sent or a reader cannot have received, state a
//! plausible forgery did change is won back from the real peer's traffic, and
//! `data_lost` counts only what the writer really skipped. And the SPDP
//! participant table: bounded, leases capped, real peers still admitted and
//! matched during a flood of forged participants, a corrupted goodbye does
//! not end a live session. Sequence numbers near `i64::MAX` are refused,
//! never overflowed; a participant speaks only for itself (SPDP goodbyes and
//! announcements, SEDP disposes) and fills at most its share of the
//! endpoint table; ddsperf's pong writers go with their participants.

mod common;
use common::forge::{message, spdp_announcement};
use common::*;
use detpath_pubsub::engine::{make_guid_prefix, Config, Event, LostReason, Participant, ReaderId, VecOutbox, WriterId};
use detpath_pubsub::qos::Qos;
use detpath_pubsub::types::OneULong;
use detpath_pubsub::wire::bytes::ByteWriter;
use detpath_pubsub::wire::*;
use std::net::SocketAddrV4;

/// Two matched nodes: a writer on node 0 and a reader on node 1, `qos` on both.
fn pair(qos: Qos) -> (Net, WriterId, ReaderId) {
    let mut net = Net::new(2);
    let w = net.nodes[0].create_writer_for("T", qos.clone(), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", qos, &OneULong::default()).unwrap();
    net.run_until(3000, |n| n.nodes[0].writer_status(w).matched == 1 && n.nodes[1].reader_status(r).matched == 1).expect("matched");
    (net, w, r)
}

/// Writes `n` samples (seq from `from`), delivers, and takes everything the reader has.
fn write_take(net: &mut Net, w: WriterId, r: ReaderId, from: u32, n: u32) -> Vec<u32> {
    let mut got = Vec::new();
    let mut s = OneULong::default();
    let mut take = |net: &mut Net| {
        while net.nodes[1].take(r, &mut s).unwrap().is_some() {
            got.push(s.seq);
        }
    };
    for i in 0..n {
        net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq: from + i }).unwrap();
        net.deliver();
        take(net);
        net.step(1_000_000);
        take(net);
    }
    for _ in 0..500 {
        net.step(1_000_000);
        take(net);
    }
    got
}

/// A message from node 0's participant (as if from its writer) with one submessage.
fn from_writer(net: &Net, f: impl FnOnce(&mut MessageBuilder<'_>) -> Result<(), WireError>) -> Vec<u8> {
    let mut buf = vec![0u8; 512];
    let mut b = MessageBuilder::new(&mut buf, net.nodes[0].guid_prefix(), VendorId::DETPATH).unwrap();
    f(&mut b).unwrap();
    let n = b.finish();
    buf.truncate(n);
    buf
}

/// Delivers a forged datagram to node `to` as if from the other node's address.
fn inject(net: &mut Net, to: usize, bytes: &[u8]) {
    let src = addr(1 - to);
    net.nodes[to].handle_datagram(net.now, src, bytes, &mut net.outs[to]);
}

fn ids(net: &Net, w: WriterId, r: ReaderId) -> (EntityId, EntityId) {
    (net.nodes[1].reader_guid(r).entity, net.nodes[0].writer_guid(w).entity)
}

const PAYLOAD: [u8; 8] = [0, 1, 0, 0, 42, 0, 0, 0];

#[test]
fn heartbeats_the_writer_cannot_have_sent_are_refused_and_counted() {
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1));
    assert_eq!(write_take(&mut net, w, r, 0, 10), (0..10).collect::<Vec<_>>());
    let (re, we) = ids(&net, w, r);
    let forged = [
        // Far past anything the writer reached (a flipped high bit), with a count far ahead.
        from_writer(&net, |b| b.heartbeat(re, we, SequenceNumber(1), SequenceNumber(1 << 40), i32::MAX, true, false)),
        // first > last + 1 (inverted).
        from_writer(&net, |b| b.heartbeat(re, we, SequenceNumber(100), SequenceNumber(10), i32::MAX - 1, true, false)),
        // firstSN 0, and negative lastSN.
        from_writer(&net, |b| b.heartbeat(re, we, SequenceNumber(0), SequenceNumber(5), i32::MAX - 2, true, false)),
        from_writer(&net, |b| b.heartbeat(re, we, SequenceNumber(1), SequenceNumber(-7), i32::MAX - 3, true, false)),
    ];
    let before = net.nodes[1].counters();
    for m in &forged {
        inject(&mut net, 1, m);
    }
    let c = net.nodes[1].counters();
    assert_eq!(c.implausible - before.implausible + c.rx_malformed - before.rx_malformed, 4, "{c:?}");
    assert!(c.implausible - before.implausible >= 1, "the far jump is the engine's to refuse: {c:?}");
    assert_eq!(net.nodes[1].reader_status(r).implausible, c.implausible - before.implausible);
    // None of them was applied: not even their counts (the real heartbeats are not stale).
    assert_eq!(write_take(&mut net, w, r, 10, 10), (10..20).collect::<Vec<_>>());
    let c = net.nodes[1].counters();
    assert_eq!((c.data_lost, c.heartbeats_stale), (0, before.heartbeats_stale), "{c:?}");
}

#[test]
fn a_plausible_forged_heartbeat_is_undone_by_the_writers_own_and_the_loss_taken_back() {
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1));
    assert_eq!(write_take(&mut net, w, r, 0, 10).len(), 10);
    let (re, we) = ids(&net, w, r);
    // Within the slack: applied (1000 samples skipped, not counted lost until
    // the writer's next sample confirms the skip), the count far ahead.
    let m = from_writer(&net, |b| b.heartbeat(re, we, SequenceNumber(1011), SequenceNumber(1011), i32::MAX - 100, true, false));
    inject(&mut net, 1, &m);
    assert_eq!(net.nodes[1].counters().data_lost, 0);
    // The real writer goes on: its heartbeats say it never got that far; after
    // a few the reader takes its word, and takes back the forged loss.
    let got = write_take(&mut net, w, r, 10, 20);
    let c = net.nodes[1].counters();
    assert!(c.resyncs >= 1, "{c:?}");
    assert_eq!(c.data_lost, 0, "a forged skip is not a loss: {c:?}");
    assert_eq!(net.nodes[1].reader_status(r).lost, 0);
    assert!(got.len() >= 15 && got.ends_with(&[27, 28, 29]), "the session resumes: {got:?}");
}

#[test]
fn gaps_and_data_beyond_what_was_sent_are_refused() {
    let (mut net, w, r) = pair(Qos::reliable_keep_all(64));
    assert_eq!(write_take(&mut net, w, r, 0, 5).len(), 5);
    let (re, we) = ids(&net, w, r);
    let forged = [
        from_writer(&net, |b| b.gap(re, we, SequenceNumber(6), SequenceNumber(1 << 35), &BitSet256::new(0))),
        // base < start (inverted), start 0.
        from_writer(&net, |b| b.gap(re, we, SequenceNumber(50), SequenceNumber(10), &BitSet256::new(0))),
        from_writer(&net, |b| b.gap(re, we, SequenceNumber(0), SequenceNumber(3), &BitSet256::new(0))),
        from_writer(&net, |b| b.data_bytes(re, we, SequenceNumber(1 << 33), None, &PAYLOAD)),
        from_writer(&net, |b| b.data_bytes(re, we, SequenceNumber(0), None, &PAYLOAD)),
        from_writer(&net, |b| b.data_bytes(re, we, SequenceNumber(-5), None, &PAYLOAD)),
    ];
    let before = net.nodes[1].counters();
    for m in &forged {
        inject(&mut net, 1, m);
    }
    // The codec already refuses sequence numbers below 1 (malformed); the engine the rest.
    let c = net.nodes[1].counters();
    assert_eq!(c.implausible - before.implausible + c.rx_malformed - before.rx_malformed, 6, "{c:?}");
    assert!(c.implausible - before.implausible >= 2, "the far GAP and DATA are the engine's to refuse: {c:?}");
    // A GAP within the slack but past what the writer reached skips nothing the writer has not.
    let m = from_writer(&net, |b| b.gap(re, we, SequenceNumber(6), SequenceNumber(5000), &BitSet256::new(0)));
    inject(&mut net, 1, &m);
    assert_eq!(write_take(&mut net, w, r, 5, 10), (5..15).collect::<Vec<_>>(), "nothing skipped");
    let c = net.nodes[1].counters();
    assert_eq!((c.data_lost, c.gap_skipped), (0, 0), "{c:?}");
}

#[test]
fn acknacks_for_samples_never_written_are_refused_and_forged_counts_resync() {
    let (mut net, w, r) = pair(Qos::reliable_keep_all(64));
    assert_eq!(write_take(&mut net, w, r, 0, 5).len(), 5);
    let (re, we) = ids(&net, w, r);
    let from_reader = |net: &Net, base: i64, count: i32| {
        let mut buf = vec![0u8; 256];
        let mut b = MessageBuilder::new(&mut buf, net.nodes[1].guid_prefix(), VendorId::DETPATH).unwrap();
        b.acknack(re, we, SequenceNumber(base), &BitSet256::new(0), count, true).unwrap();
        let n = b.finish();
        buf.truncate(n);
        buf
    };
    let before = net.nodes[0].counters();
    for (base, count) in [(1 << 40, 1000), (7, 1001), (0, 1002), (-3, 1003)] {
        let m = from_reader(&net, base, count);
        inject(&mut net, 0, &m);
    }
    // Base 0 and below the codec refuses; acknowledging past the last written sample (6) the writer.
    let c = net.nodes[0].counters();
    assert_eq!(c.implausible - before.implausible + c.rx_malformed - before.rx_malformed, 4, "{c:?}");
    assert_eq!(c.implausible - before.implausible, 2, "{c:?}");
    assert_eq!(net.nodes[0].writer_status(w).implausible, 2);
    // A plausible one with a count far ahead: the real reader's next ACKNACKs look
    // stale, until a run of them makes the writer adopt its numbering.
    let m = from_reader(&net, 1, i32::MAX);
    inject(&mut net, 0, &m);
    assert_eq!(write_take(&mut net, w, r, 5, 20), (5..25).collect::<Vec<_>>());
    net.run_until(2000, |n| n.nodes[0].writer_status(w).unacknowledged == 0).expect("acknowledged again after the forged count");
    assert!(net.nodes[0].counters().resyncs >= 1);
}

#[test]
fn best_effort_forged_jump_is_taken_back_and_only_real_losses_count() {
    let (mut net, w, r) = pair(Qos::best_effort(1));
    // Keep-last 1 best effort: take after every sample.
    let mut got = Vec::new();
    let mut s = OneULong::default();
    let mut write = |net: &mut Net, seq: u32| {
        net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq }).unwrap();
        net.deliver();
        while net.nodes[1].take(r, &mut s).unwrap().is_some() {
            got.push(s.seq);
        }
    };
    for i in 0..5 {
        write(&mut net, i);
    }
    let (re, we) = ids(&net, w, r);
    // sn 6 is next; a forged 506 skips 500 (lost only if the writer's next
    // sample followed it) and makes the real ones look old.
    let m = from_writer(&net, |b| b.data_bytes(re, we, SequenceNumber(506), None, &PAYLOAD));
    inject(&mut net, 1, &m);
    assert_eq!(net.nodes[1].counters().data_lost, 0);
    for i in 5..20 {
        write(&mut net, i);
    }
    let c = net.nodes[1].counters();
    // The forged 500 are taken back; the two real samples dropped as old
    // before the third confirmed the writer's numbering are real losses.
    assert_eq!(c.data_lost, 2, "{c:?}");
    assert!(c.resyncs >= 1);
    assert!(got.ends_with(&(7..20).collect::<Vec<_>>()), "{got:?}");
}

#[test]
fn a_real_loss_beyond_the_slack_is_confirmed_and_counted() {
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1));
    assert_eq!(write_take(&mut net, w, r, 0, 3).len(), 3);
    // The reader hears nothing while the writer writes 70,000 samples.
    net.alive[1] = false;
    for i in 0..70_000u32 {
        net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq: 3 + i }).unwrap();
        net.outs[0].drain();
    }
    net.alive[1] = true;
    let got = write_take(&mut net, w, r, 70_003, 10);
    let c = net.nodes[1].counters();
    assert!(got.ends_with(&[70_010, 70_011, 70_012]), "resumed after confirming the jump: {got:?}");
    assert!(c.data_lost >= 69_990 && c.data_lost <= 70_010, "the real loss is counted: {c:?}");
}

fn spdp(prefix: GuidPrefix, lease_ns: i64, port: u16) -> Vec<u8> {
    spdp_announcement(prefix, lease_ns, port, b"forged")
}

#[test]
fn forged_participants_with_infinite_leases_do_not_lock_out_real_peers() {
    // Node 1 has room for 16 participants; 5,000 forged ones with infinite
    // leases from an address that is not a configured peer fill it first.
    let mut net = Net::with_config(2, |_, c| c.max_remote_participants = 16);
    net.alive[0] = false;
    let forger: SocketAddrV4 = "10.66.0.9:7400".parse().unwrap();
    for i in 0..5000u32 {
        let m = spdp(make_guid_prefix(0x6666, i, 1), i64::MAX, 7400 + (i % 100) as u16);
        net.nodes[1].handle_datagram(net.now, forger, &m, &mut net.outs[1]);
    }
    assert_eq!(net.nodes[1].remote_participants().count(), 16);
    let c = net.nodes[1].counters();
    assert_eq!(c.discovery_over_limit, 5000 - 16, "newcomers refused while the table is full: {c:?}");
    // The real peer (configured: node 0's address is in node 1's peer list) comes up and is matched.
    net.alive[0] = true;
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    net.run_until(3000, |n| n.nodes[1].reader_status(r).matched == 1 && n.nodes[0].writer_status(w).matched == 1).expect("real peer matched");
    assert_eq!(net.nodes[1].counters().participants_evicted, 1);
    assert_eq!(write_take(&mut net, w, r, 0, 5), (0..5).collect::<Vec<_>>());
    // More forged ones after their probation evict forged ones, never the real (configured, with endpoints) peer.
    net.step(4_000_000_000);
    for i in 5000..5100u32 {
        let m = spdp(make_guid_prefix(0x6666, i, 1), i64::MAX, 7400);
        net.nodes[1].handle_datagram(net.now, forger, &m, &mut net.outs[1]);
    }
    assert!(net.nodes[1].remote_participants().any(|(p, _)| p == net.nodes[0].guid_prefix()));
    assert_eq!(net.nodes[1].reader_status(r).matched, 1);
    // Infinite leases are cut to Config::max_lease_ns: the forged entries go, the real peer stays.
    for _ in 0..110 {
        net.step(1_000_000_000);
    }
    assert_eq!(net.nodes[1].remote_participants().count(), 1, "forged participants outlived the lease cap");
    assert_eq!(write_take(&mut net, w, r, 5, 5), (5..10).collect::<Vec<_>>());
}

#[test]
fn a_newcomer_evicts_participants_that_never_announced_endpoints() {
    let me: SocketAddrV4 = "127.0.0.1:7412".parse().unwrap();
    let mut cfg = Config::new(0, make_guid_prefix(1, 1, 1), me);
    cfg.max_remote_participants = 8;
    let mut p = Participant::new(cfg, 1);
    let mut o = VecOutbox::default();
    let forger: SocketAddrV4 = "10.66.0.9:7400".parse().unwrap();
    for i in 0..8u32 {
        p.handle_datagram(1, forger, &spdp(make_guid_prefix(0x6666, i, 1), i64::MAX, 7400), &mut o);
    }
    // Within their probation: refused.
    p.handle_datagram(2, forger, &spdp(make_guid_prefix(0x7777, 1, 1), 10_000_000_000, 7400), &mut o);
    assert_eq!(p.counters().discovery_over_limit, 1);
    // After it: the least recently seen goes.
    p.handle_datagram(5_000_000_000, forger, &spdp(make_guid_prefix(0x6666, 3, 1), i64::MAX, 7400), &mut o);
    p.handle_datagram(5_000_000_001, forger, &spdp(make_guid_prefix(0x7777, 1, 1), 10_000_000_000, 7400), &mut o);
    let now: Vec<GuidPrefix> = p.remote_participants().map(|(g, _)| g).collect();
    assert!(now.contains(&make_guid_prefix(0x7777, 1, 1)));
    assert!(now.contains(&make_guid_prefix(0x6666, 3, 1)), "recently seen one kept");
    assert!(!now.contains(&make_guid_prefix(0x6666, 0, 1)), "least recently seen one evicted");
    assert_eq!(p.counters().participants_evicted, 1);
    let mut evicted = 0;
    while let Some(e) = p.poll_event() {
        evicted += matches!(e, Event::ParticipantLost { reason: LostReason::Evicted, .. }) as u32;
    }
    assert_eq!(evicted, 1);
}

#[test]
fn a_corrupted_goodbye_does_not_end_a_live_session_but_a_real_one_does() {
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1));
    let me = net.nodes[0].guid_prefix();
    // A goodbye from node 0's prefix while node 0 keeps writing.
    let mut buf = vec![0u8; 256];
    let mut b = MessageBuilder::new(&mut buf, me, VendorId::DETPATH).unwrap();
    b.data_raw(EntityId::SPDP_READER, EntityId::SPDP_WRITER, SequenceNumber(2), None, Some(&[0, 3, 0, 0, 1, 0, 0, 0]), true).unwrap();
    let n = b.finish();
    inject(&mut net, 1, &buf[..n]);
    assert_eq!(write_take(&mut net, w, r, 0, 3000).len(), 3000, "the session went on");
    assert_eq!(net.nodes[1].reader_status(r).matched, 1);
    // A real goodbye: node 0 leaves and sends nothing more; gone within the grace.
    net.nodes[0].shutdown(&mut net.outs[0]);
    net.deliver();
    net.alive[0] = false;
    net.run_until(1500, |n| n.nodes[1].reader_status(r).matched == 0).expect("gone after its goodbye");
}

#[test]
fn replayed_old_heartbeats_neither_stall_the_reader_nor_count_losses() {
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1));
    assert_eq!(write_take(&mut net, w, r, 0, 50).len(), 50);
    let (re, we) = ids(&net, w, r);
    // A capture of the writer's early heartbeats, replayed with rising counts.
    for k in 0..40 {
        let m = from_writer(&net, |b| b.heartbeat(re, we, SequenceNumber(3 + k / 4), SequenceNumber(3 + k / 4), 1 + k as i32, true, false));
        inject(&mut net, 1, &m);
    }
    let got = write_take(&mut net, w, r, 50, 20);
    assert!(got.ends_with(&(55..70).collect::<Vec<_>>()), "{got:?}");
    let c = net.nodes[1].counters();
    assert_eq!(c.data_lost, 0, "samples delivered before are not lost: {c:?}");
}

#[test]
fn a_forged_sedp_locator_cannot_point_a_reader_at_another_host() {
    // A participant announces itself honestly (its locator is its source
    // address), then announces a writer whose unicast locator is another
    // host. The reader matches it but answers its heartbeat at the
    // participant's address (with the announced port), never the other host.
    let me: SocketAddrV4 = "127.0.0.1:7412".parse().unwrap();
    let mut p = Participant::new(Config::new(0, make_guid_prefix(1, 1, 1), me), 1);
    let mut o = VecOutbox::default();
    let r = p.create_reader_for(1, "T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    let peer: SocketAddrV4 = "127.0.0.1:7500".parse().unwrap();
    let prefix = make_guid_prefix(0x5eed, 1, 1);
    let mut hello = spdp(prefix, 10_000_000_000, 7500);
    // spdp() announces 10.66.0.9: make it the peer's own address instead.
    let forged_ip = [10, 66, 0, 9];
    let at = hello.windows(4).position(|w| w == forged_ip).expect("locator address in the announcement");
    hello[at..at + 4].copy_from_slice(&[127, 0, 0, 1]);
    let at = hello.windows(4).skip(at + 4).position(|w| w == forged_ip).map(|k| k + at + 4).expect("second locator");
    hello[at..at + 4].copy_from_slice(&[127, 0, 0, 1]);
    p.handle_datagram(2, peer, &hello, &mut o);
    p.handle_timeout(3, &mut o);
    assert_eq!(p.counters().locators_untrusted, 0, "the honest announcement is trusted");

    let elsewhere = SocketAddrV4::new(std::net::Ipv4Addr::new(10, 99, 0, 7), 7999);
    let writer = Guid::new(prefix, EntityId([0, 0, 1, 0x02]));
    let ed = detpath_pubsub::discovery::EndpointData {
        guid: writer,
        topic_name: "T".into(),
        type_name: "OneULong".into(),
        qos: Qos::reliable_keep_all(16),
        unicast: vec![Locator::udpv4(elsewhere)],
        data_representation: vec![0],
        has_type_information: false,
    };
    let mut payload = vec![0u8; 512];
    let n = {
        let mut w = ByteWriter::new(&mut payload, true);
        w.bytes(&[0, 3, 0, 0]).unwrap();
        ed.write(&mut w).unwrap();
        w.pos()
    };
    let mut buf = vec![0u8; 1024];
    let mut b = MessageBuilder::new(&mut buf, prefix, VendorId::DETPATH).unwrap();
    b.data_bytes(EntityId::SEDP_PUBLICATIONS_READER, EntityId::SEDP_PUBLICATIONS_WRITER, SequenceNumber(1), None, &payload[..n]).unwrap();
    let len = b.finish();
    p.handle_datagram(4, peer, &buf[..len], &mut o);
    assert_eq!(p.reader_status(r).matched, 1, "the writer is matched");
    assert_eq!(p.counters().locators_untrusted, 1, "the endpoint's locator was not trusted");

    // The writer heartbeats samples 1..=2: the reader asks for them.
    o.drain();
    let mut buf = vec![0u8; 256];
    let mut b = MessageBuilder::new(&mut buf, prefix, VendorId::DETPATH).unwrap();
    b.heartbeat(p.reader_guid(r).entity, writer.entity, SequenceNumber(1), SequenceNumber(2), 1, false, false).unwrap();
    let len = b.finish();
    p.handle_datagram(5, peer, &buf[..len], &mut o);
    for t in 1..50 {
        p.handle_timeout(5 + t * 10_000_000, &mut o);
    }
    let sent = o.drain();
    assert!(!sent.is_empty(), "the reader answered the heartbeat");
    for (dst, _) in &sent {
        assert_ne!(*dst, Addr::Udp(elsewhere), "traffic sent to the forged locator");
    }
    assert!(
        sent.iter().any(|(d, _)| *d == Addr::Udp(SocketAddrV4::new(*peer.ip(), 7999))),
        "answered at the participant's address: {:?}",
        sent.iter().map(|s| s.0).collect::<Vec<_>>()
    );
}

#[test]
fn with_peers_only_nothing_from_another_host_reaches_discovery() {
    // Node 1 accepts RTPS only from its configured peers (127.0.0.1, as
    // Net configures them); 1,000 forged participants from 10.66.0.9 are
    // dropped unread, the real peer is matched and delivers.
    let mut net = Net::with_config(2, |_, c| c.peers_only = true);
    let forger: SocketAddrV4 = "10.66.0.9:7400".parse().unwrap();
    for i in 0..1000u32 {
        let m = spdp(make_guid_prefix(0x6666, i, 1), i64::MAX, 7400);
        net.nodes[1].handle_datagram(net.now, forger, &m, &mut net.outs[1]);
    }
    let c = net.nodes[1].counters();
    assert_eq!(c.rx_not_from_peer, 1000, "{c:?}");
    assert_eq!(net.nodes[1].remote_participants().count(), 0);
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    net.run_until(3000, |n| n.nodes[1].reader_status(r).matched == 1 && n.nodes[0].writer_status(w).matched == 1).expect("real peer matched");
    assert_eq!(write_take(&mut net, w, r, 0, 5), (0..5).collect::<Vec<_>>());
    assert_eq!(net.nodes[1].counters().rx_not_from_peer, 1000, "the peer's own traffic is accepted");
}

/// A participant with one reader of `qos` on topic "T", matched with a writer
/// of a participant announced by hand (SPDP, then SEDP, from `peer`) that has
/// sent nothing else yet: the reader's proxy of it is not synchronised.
/// Returns the participant, its outbox, the reader, the remote writer and
/// the remote participant's address.
fn lone_reader(qos: Qos) -> (Participant, VecOutbox, ReaderId, Guid, SocketAddrV4) {
    let me: SocketAddrV4 = "127.0.0.1:7412".parse().unwrap();
    let mut p = Participant::new(Config::new(0, make_guid_prefix(1, 1, 1), me), 1);
    let mut o = VecOutbox::default();
    let r = p.create_reader_for(1, "T", qos.clone(), &OneULong::default()).unwrap();
    let peer: SocketAddrV4 = "10.66.0.9:7400".parse().unwrap();
    let prefix = make_guid_prefix(0x5eed, 2, 1);
    p.handle_datagram(2, peer, &spdp(prefix, 10_000_000_000, 7400), &mut o);
    p.handle_timeout(3, &mut o);
    let writer = Guid::new(prefix, EntityId([0, 0, 1, 0x03]));
    let ed = detpath_pubsub::discovery::EndpointData {
        guid: writer,
        topic_name: "T".into(),
        type_name: "OneULong".into(),
        qos,
        unicast: Vec::new(),
        data_representation: vec![0],
        has_type_information: false,
    };
    p.handle_datagram(4, peer, &sedp_data(prefix, EntityId::SEDP_PUBLICATIONS_WRITER, 1, &ed), &mut o);
    assert_eq!(p.reader_status(r).matched, 1, "the writer is matched");
    o.drain();
    (p, o, r, writer, peer)
}

/// An SEDP announcement of `ed` from participant `prefix`'s built-in writer `writer`.
fn sedp_data(prefix: GuidPrefix, writer: EntityId, sn: i64, ed: &detpath_pubsub::discovery::EndpointData) -> Vec<u8> {
    let mut payload = vec![0u8; 512];
    let n = {
        let mut w = ByteWriter::new(&mut payload, true);
        w.bytes(&[0, 3, 0, 0]).unwrap();
        ed.write(&mut w).unwrap();
        w.pos()
    };
    let reader = if writer == EntityId::SEDP_PUBLICATIONS_WRITER { EntityId::SEDP_PUBLICATIONS_READER } else { EntityId::SEDP_SUBSCRIPTIONS_READER };
    message(prefix, |b| b.data_bytes(reader, writer, SequenceNumber(sn), None, &payload[..n]))
}

/// After forged traffic, the writer's real first sample still arrives.
fn still_delivers(p: &mut Participant, o: &mut VecOutbox, r: ReaderId, w: Guid, peer: SocketAddrV4) {
    let re = p.reader_guid(r).entity;
    let m = message(w.prefix, |b| {
        b.data_bytes(re, w.entity, SequenceNumber(1), None, &PAYLOAD)?;
        b.heartbeat(re, w.entity, SequenceNumber(1), SequenceNumber(1), 1, true, false)
    });
    p.handle_datagram(100, peer, &m, o);
    let mut s = OneULong::default();
    assert!(p.take(r, &mut s).unwrap().is_some(), "the real sample 1 was delivered: {:?}", p.counters());
}

const MAX: i64 = i64::MAX;

#[test]
fn a_heartbeat_at_the_top_of_the_sequence_numbers_before_the_first_real_one_is_refused() {
    // A reliable volatile reader takes where the stream starts from the
    // writer's first HEARTBEAT: one forged at 2^63-1 would make every
    // `next + window` overflow (a panic in debug and fuzz builds, wrapping in release).
    let (mut p, mut o, r, w, peer) = lone_reader(Qos::reliable_keep_all(16));
    let re = p.reader_guid(r).entity;
    let m = message(w.prefix, |b| b.heartbeat(re, w.entity, SequenceNumber(MAX), SequenceNumber(MAX), 1, false, false));
    p.handle_datagram(10, peer, &m, &mut o);
    assert_eq!(p.counters().implausible, 1, "{:?}", p.counters());
    assert_eq!(p.reader_status(r).implausible, 1);
    still_delivers(&mut p, &mut o, r, w, peer);
}

#[test]
fn data_at_the_top_of_the_sequence_numbers_is_refused_by_a_best_effort_reader() {
    let (mut p, mut o, r, w, peer) = lone_reader(Qos::best_effort(4));
    let re = p.reader_guid(r).entity;
    for sn in [MAX, MAX - 1, (1 << 62) + 1] {
        let m = message(w.prefix, |b| b.data_bytes(re, w.entity, SequenceNumber(sn), None, &PAYLOAD));
        p.handle_datagram(10, peer, &m, &mut o);
    }
    assert_eq!(p.counters().implausible, 3, "{:?}", p.counters());
    assert_eq!(p.reader_status(r).waiting, 0, "nothing delivered");
    still_delivers(&mut p, &mut o, r, w, peer);
}

#[test]
fn rising_data_and_a_heartbeat_at_the_top_of_the_sequence_numbers_are_refused() {
    // Three rising samples would confirm a jump, and the heartbeat after
    // them start the stream there: delivering 2^63-1 would then overflow.
    let (mut p, mut o, r, w, peer) = lone_reader(Qos::reliable_keep_all(16));
    let re = p.reader_guid(r).entity;
    let m = message(w.prefix, |b| {
        for sn in MAX - 2..=MAX {
            b.data_bytes(re, w.entity, SequenceNumber(sn), None, &PAYLOAD)?;
        }
        b.heartbeat(re, w.entity, SequenceNumber(MAX - 2), SequenceNumber(MAX), i32::MAX, false, false)
    });
    p.handle_datagram(10, peer, &m, &mut o);
    assert_eq!(p.counters().implausible, 4, "{:?}", p.counters());
    assert_eq!(p.reader_status(r).waiting, 0);
    still_delivers(&mut p, &mut o, r, w, peer);
}

#[test]
fn sets_based_at_the_top_of_the_sequence_numbers_neither_wrap_nor_panic() {
    // GAP and ACKNACK whose set's base is 2^63-1 with bit 1 set: bit 1 stands
    // for a number past i64::MAX. The codec leaves it out; the engine refuses both.
    let (mut net, w, r) = pair(Qos::reliable_keep_all(16));
    assert_eq!(write_take(&mut net, w, r, 0, 3).len(), 3);
    let (re, we) = ids(&net, w, r);
    let mut bits = BitSet256::new(2);
    bits.set(1);
    let gap = from_writer(&net, |b| b.gap(re, we, SequenceNumber(MAX), SequenceNumber(MAX), &bits));
    let acknack = {
        let mut buf = vec![0u8; 256];
        let mut b = MessageBuilder::new(&mut buf, net.nodes[1].guid_prefix(), VendorId::DETPATH).unwrap();
        b.acknack(re, we, SequenceNumber(MAX), &bits, 1000, false).unwrap();
        let n = b.finish();
        buf.truncate(n);
        buf
    };
    for m in [&gap, &acknack] {
        for s in Message::parse(m).unwrap().submessages() {
            match s.unwrap() {
                Submessage::Gap(g) => assert_eq!(g.gap_list.iter().count(), 0),
                Submessage::AckNack(a) => assert_eq!(a.state.iter().count(), 0),
                _ => {}
            }
        }
    }
    let before = (net.nodes[1].counters().implausible, net.nodes[0].counters().implausible);
    inject(&mut net, 1, &gap);
    inject(&mut net, 0, &acknack);
    let after = (net.nodes[1].counters().implausible, net.nodes[0].counters().implausible);
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 1));
    assert_eq!(write_take(&mut net, w, r, 3, 5), (3..8).collect::<Vec<_>>());
}

/// Parameter list bytes (sentinel included) of KEY_HASH `key` and STATUS_INFO disposed|unregistered.
fn goodbye_qos(key: [u8; 16]) -> Vec<u8> {
    let mut q = vec![0u8; 64];
    let n = {
        let mut w = ByteWriter::new(&mut q, true);
        let mut pw = ParamWriter::new(&mut w);
        pw.bytes(plist::pid::KEY_HASH, &key).unwrap();
        pw.bytes(plist::pid::STATUS_INFO, &3u32.to_be_bytes()).unwrap();
        pw.sentinel().unwrap();
        w.pos()
    };
    q.truncate(n);
    q
}

#[test]
fn a_forged_sedp_dispose_of_another_participants_endpoint_is_refused() {
    // A participant the reader's node admitted (its SPDP from another host)
    // disposes, through its own SEDP writer, the writer node 0 announced:
    // once by KEY_HASH, once by PID_ENDPOINT_GUID in the payload. Only
    // node 0 may dispose node 0's endpoints.
    let (mut net, w, r) = pair(Qos::reliable_keep_last(1));
    let forger: SocketAddrV4 = "10.66.0.9:7400".parse().unwrap();
    let x = make_guid_prefix(0x6666, 1, 1);
    net.nodes[1].handle_datagram(net.now, forger, &spdp(x, 10_000_000_000, 7400), &mut net.outs[1]);
    net.step(1_000_000);
    let victim = net.nodes[0].writer_guid(w);
    let by_key = message(x, |b| {
        b.data_raw(
            EntityId::SEDP_PUBLICATIONS_READER,
            EntityId::SEDP_PUBLICATIONS_WRITER,
            SequenceNumber(1),
            Some(&goodbye_qos(victim.to_bytes())),
            None,
            false,
        )
    });
    let mut key = vec![0u8; 64];
    let n = {
        let mut kw = ByteWriter::new(&mut key, true);
        kw.bytes(&[0, 3, 0, 0]).unwrap();
        let mut pw = ParamWriter::new(&mut kw);
        pw.bytes(plist::pid::ENDPOINT_GUID, &victim.to_bytes()).unwrap();
        pw.sentinel().unwrap();
        kw.pos()
    };
    let by_payload =
        message(x, |b| b.data_raw(EntityId::SEDP_PUBLICATIONS_READER, EntityId::SEDP_PUBLICATIONS_WRITER, SequenceNumber(2), None, Some(&key[..n]), true));
    let before = net.nodes[1].counters().discovery_rejected;
    net.nodes[1].handle_datagram(net.now, forger, &by_key, &mut net.outs[1]);
    net.nodes[1].handle_datagram(net.now, forger, &by_payload, &mut net.outs[1]);
    assert_eq!(net.nodes[1].counters().discovery_rejected - before, 2, "{:?}", net.nodes[1].counters());
    assert_eq!(net.nodes[1].reader_status(r).matched, 1, "the forged dispose unmatched node 0's writer");
    assert!(net.nodes[1].remote_endpoints().any(|e| e.guid == victim));
    assert_eq!(write_take(&mut net, w, r, 0, 5), (0..5).collect::<Vec<_>>());
}

#[test]
fn a_forged_spdp_goodbye_or_announcement_naming_another_participant_is_refused() {
    // Node 0 goes quiet (its lease is 10 s). A goodbye naming it in its key
    // hash, sent by another participant, would cut that lease to the
    // goodbye's grace (1 s); an announcement with node 0's PARTICIPANT_GUID
    // from another participant would rewrite its user data and locators.
    let (mut net, _w, r) = pair(Qos::reliable_keep_last(1));
    let victim = net.nodes[0].guid_prefix();
    net.alive[0] = false;
    let forger: SocketAddrV4 = "10.66.0.9:7400".parse().unwrap();
    let x = make_guid_prefix(0x6666, 2, 1);
    let key = Guid::new(victim, EntityId::PARTICIPANT).to_bytes();
    let goodbye = message(x, |b| b.data_raw(EntityId::SPDP_READER, EntityId::SPDP_WRITER, SequenceNumber(2), Some(&goodbye_qos(key)), None, false));
    // node 0's prefix in the announcement, x in the RTPS header.
    let mut hello = spdp(victim, 10_000_000_000, 7400);
    hello[8..20].copy_from_slice(&x.0);
    let before = net.nodes[1].counters().discovery_rejected;
    net.nodes[1].handle_datagram(net.now, forger, &goodbye, &mut net.outs[1]);
    net.nodes[1].handle_datagram(net.now, forger, &hello, &mut net.outs[1]);
    assert_eq!(net.nodes[1].counters().discovery_rejected - before, 2, "{:?}", net.nodes[1].counters());
    let user_data = |net: &Net| net.nodes[1].remote_participants().find(|(p, _)| *p == victim).map(|(_, u)| u.to_vec());
    assert_eq!(user_data(&net).as_deref(), Some(&b"node0"[..]), "the announcement was not node 0's to make");
    for _ in 0..1500 {
        net.step(1_000_000);
    }
    assert!(user_data(&net).is_some(), "node 0 lost 1.5 s into its 10 s lease");
    assert_eq!(net.nodes[1].reader_status(r).matched, 1);
}

#[test]
fn one_participant_cannot_fill_the_remote_endpoint_table() {
    // Node 1 keeps 64 remote endpoints; node 0 announces 100 writers. It gets
    // its share (a quarter, 16) and node 2, coming later, is still matched.
    let mut net = Net::with_config(3, |i, c| match i {
        0 => c.builtin_depth = 128,
        1 => c.max_remote_endpoints = 64,
        _ => {}
    });
    net.alive[2] = false;
    net.run_until(1000, |n| n.nodes[1].remote_participants().count() == 1).unwrap();
    for k in 0..100 {
        net.nodes[0].create_writer(&format!("flood{k}"), "OneULong", false, Qos::best_effort(1), 16).unwrap();
    }
    net.run_until(3000, |n| n.nodes[1].counters().discovery_over_limit >= 84).expect("flood processed");
    assert_eq!(net.nodes[1].remote_endpoint_count(), 16);
    net.alive[2] = true;
    let w = net.nodes[2].create_writer_for("T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(net.now, "T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    net.run_until(5000, |n| n.nodes[1].reader_status(r).matched == 1 && n.nodes[2].writer_status(w).matched == 1).expect("the later peer matched");
    let from_2 = net.nodes[1].remote_endpoints().filter(|e| e.guid.prefix == net.nodes[2].guid_prefix()).count();
    assert!(from_2 >= 1, "node 2's endpoints admitted");
}

#[test]
fn pong_writers_go_with_their_participants_so_forged_ones_do_not_use_them_up() {
    // ddsperf makes a pong writer for each participant whose user data says
    // DDSPerf. 400 forged ones, 50 at a time with the shortest lease, come
    // and go before the real pinger (node 0) shows up: it still gets pongs.
    use detpath_pubsub::ddsperf::{user_data, PerfConfig, PerfNode, Role};
    let mut net = Net::with_config(2, |i, c| c.user_data = user_data(false, i as u32, "test"));
    let mut ping_cfg = PerfConfig::new(Role::Ping { rate_hz: 0.0 });
    ping_cfg.lockstep = true;
    let mut ping = PerfNode::new(&mut net.nodes[0], net.now, ping_cfg).unwrap();
    let mut pong = PerfNode::new(&mut net.nodes[1], net.now, PerfConfig::new(Role::Pong)).unwrap();
    net.alive[0] = false;
    let forger: SocketAddrV4 = "10.66.0.9:7400".parse().unwrap();
    for batch in 0..8u32 {
        for i in 0..50 {
            let m = spdp_announcement(make_guid_prefix(0x6666, batch * 50 + i, 1), 1_000_000_000, 7400, &user_data(false, i, "forged"));
            net.nodes[1].handle_datagram(net.now, forger, &m, &mut net.outs[1]);
        }
        pong.on_events(&mut net.nodes[1]);
        assert_eq!(pong.peers(), 50, "a pong writer per forged ddsperf participant");
        for _ in 0..25 {
            net.step(100_000_000);
            pong.on_events(&mut net.nodes[1]);
        }
        assert_eq!(pong.peers(), 0, "their pong writers went with their leases");
    }
    net.alive[0] = true;
    for _ in 0..5000 {
        net.step(1_000_000);
        for (k, perf) in [&mut ping, &mut pong].into_iter().enumerate() {
            perf.on_events(&mut net.nodes[k]);
            let now = net.now;
            perf.poll(&mut net.nodes[k], &mut net.outs[k], now, now as i64);
        }
        net.deliver();
        if ping.stats.pongs_received >= 10 {
            break;
        }
    }
    assert!(ping.stats.pongs_received >= 10, "the real pinger got {} pongs; pong side {:?}", ping.stats.pongs_received, pong.stats);
    assert_eq!(pong.peers(), 1);
}
