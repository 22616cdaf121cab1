//! A remote endpoint announced again through SEDP (same GUID, new data), as
//! CycloneDDS does after `set_qos` changes a writer's or reader's
//! partitions, or when its locators change, sans-IO with crafted datagrams
//! (tests/implausible.rs's way): each local endpoint is matched with it
//! again. One it now matches is matched and its samples delivered, one it
//! no longer matches is unmatched (with the events a dispose gives) and its
//! samples dropped, a match that stays follows the new locator; an
//! unchanged re-announcement (CycloneDDS re-sends them) changes nothing: no
//! event, the proxy and its reliability state kept.

mod common;
use common::forge::{message, spdp_announcement, PEER_IP};
use detpath_pubsub::discovery::EndpointData;
use detpath_pubsub::engine::{make_guid_prefix, Config, Event, Participant, ReaderId, VecOutbox, WriterId};
use detpath_pubsub::qos::{Incompatible, Qos};
use detpath_pubsub::types::OneULong;
use detpath_pubsub::wire::bytes::ByteWriter;
use detpath_pubsub::wire::*;
use std::net::SocketAddrV4;

/// Participant `prefix`'s SPDP announcement, its locators on PEER_IP:`port`.
fn spdp(prefix: GuidPrefix, port: u16) -> Vec<u8> {
    spdp_announcement(prefix, 10_000_000_000, port, b"peer")
}

/// The SEDP announcement of `ed` (a writer through the publications
/// writer, a reader through the subscriptions writer), sample `sn` of that
/// built-in writer.
fn sedp(ed: &EndpointData, sn: i64) -> Vec<u8> {
    let mut payload = vec![0u8; 512];
    let n = {
        let mut w = ByteWriter::new(&mut payload, true);
        w.bytes(&[0, 3, 0, 0]).unwrap();
        ed.write(&mut w).unwrap();
        w.pos()
    };
    let (reader, writer) = if ed.is_writer() {
        (EntityId::SEDP_PUBLICATIONS_READER, EntityId::SEDP_PUBLICATIONS_WRITER)
    } else {
        (EntityId::SEDP_SUBSCRIPTIONS_READER, EntityId::SEDP_SUBSCRIPTIONS_WRITER)
    };
    message(ed.guid.prefix, |b| b.data_bytes(reader, writer, SequenceNumber(sn), None, &payload[..n]))
}

/// An endpoint of the peer on topic "T" (OneULong) in `partition`.
fn endpoint(guid: Guid, partition: &str) -> EndpointData {
    EndpointData {
        guid,
        topic_name: "T".into(),
        type_name: "OneULong".into(),
        qos: Qos::reliable_keep_all(16).with_partition(partition),
        unicast: Vec::new(),
        data_representation: vec![0],
        has_type_information: false,
    }
}

/// Our participant and a peer it admitted (SPDP from PEER_IP:7400, its SEDP
/// endpoints matched with ours), whose SEDP announcements are numbered from 1.
struct Fixture {
    p: Participant,
    o: VecOutbox,
    peer: SocketAddrV4,
    prefix: GuidPrefix,
    /// The next sequence number of the peer's publications / subscriptions writer.
    sn: [i64; 2],
    now: u64,
}

impl Fixture {
    fn new() -> Fixture {
        let me: SocketAddrV4 = "127.0.0.1:7412".parse().unwrap();
        let p = Participant::new(Config::new(0, make_guid_prefix(1, 1, 1), me), 1);
        Fixture { p, o: VecOutbox::default(), peer: SocketAddrV4::new(PEER_IP, 7400), prefix: make_guid_prefix(0x5eed, 3, 1), sn: [1, 1], now: 1 }
    }
    /// Announces our endpoints and admits the peer.
    fn start(&mut self) {
        self.tick();
        let hello = spdp(self.prefix, 7400);
        self.rx(&hello);
        self.tick();
        self.events();
    }
    fn tick(&mut self) {
        self.now += 1_000;
        self.p.handle_timeout(self.now, &mut self.o);
    }
    fn rx(&mut self, m: &[u8]) {
        self.now += 1_000;
        self.p.handle_datagram(self.now, self.peer, m, &mut self.o);
    }
    /// The peer announces `ed` (again).
    fn announce(&mut self, ed: &EndpointData) {
        let i = if ed.is_writer() { 0 } else { 1 };
        let m = sedp(ed, self.sn[i]);
        self.sn[i] += 1;
        self.rx(&m);
    }
    fn events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.p.poll_event()).collect()
    }
    /// Remote writer `w` sends samples `sns` to reader `r` (the sample's
    /// value is its sequence number), with a HEARTBEAT up to the last if `hb`.
    fn samples(&mut self, w: Guid, r: ReaderId, sns: std::ops::RangeInclusive<i64>, hb: bool) {
        let re = self.p.reader_guid(r).entity;
        let (first, last) = (*sns.start(), *sns.end());
        let m = message(w.prefix, |b| {
            for sn in sns {
                b.data_bytes(re, w.entity, SequenceNumber(sn), None, &[0, 1, 0, 0, sn as u8, 0, 0, 0])?;
            }
            if hb {
                b.heartbeat(re, w.entity, SequenceNumber(first), SequenceNumber(last), last as i32, true, false)?;
            }
            Ok(())
        });
        self.rx(&m);
    }
    /// Everything reader `r` has, by value.
    fn take(&mut self, r: ReaderId) -> Vec<u32> {
        let mut s = OneULong::default();
        let mut got = Vec::new();
        while self.p.take(r, &mut s).unwrap().is_some() {
            got.push(s.seq);
        }
        got
    }
    /// Submessages sent since the last call, with their destinations.
    fn sent(&mut self) -> Vec<(Addr, Vec<u8>)> {
        self.o.drain()
    }
}

/// Whether any of `sent` carries a submessage `f` picks.
fn any_submessage(sent: &[(Addr, Vec<u8>)], mut f: impl FnMut(&Addr, &Submessage<'_>) -> bool) -> bool {
    sent.iter().any(|(dst, bytes)| Message::parse(bytes).is_ok_and(|m| m.submessages().any(|s| s.is_ok_and(|s| f(dst, &s)))))
}

/// A reader of ours in partition "b" and the peer's writer first announced
/// in partition "a": not matched.
fn reader_b_and_writer_in_a() -> (Fixture, ReaderId, EndpointData) {
    let mut f = Fixture::new();
    let r = f.p.create_reader_for(f.now, "T", Qos::reliable_keep_all(16).with_partition("b"), &OneULong::default()).unwrap();
    f.start();
    let w = endpoint(Guid::new(f.prefix, EntityId([0, 0, 1, 0x03])), "a");
    f.announce(&w);
    assert_eq!(f.p.reader_status(r).matched, 0, "partitions a and b do not match");
    let evs = f.events();
    assert_eq!(evs, vec![Event::IncompatibleQos { local: f.p.reader_guid(r), remote: w.guid, reason: Incompatible::Partition }]);
    (f, r, w)
}

/// Re-announces `w` in partition "b": matched, and its samples 1..=2 delivered.
fn move_writer_to_b(f: &mut Fixture, r: ReaderId, w: &mut EndpointData) {
    w.qos = w.qos.clone().with_partition("b");
    f.announce(w);
    assert_eq!(f.p.reader_status(r).matched, 1, "re-announced in b: matched");
    assert_eq!(f.events(), vec![Event::ReaderMatched { reader: r, writer: w.guid }]);
    f.samples(w.guid, r, 1..=2, true);
    assert_eq!(f.take(r), vec![1, 2], "its samples are delivered");
    assert_eq!(f.p.reader_status(r).received, 2);
}

#[test]
fn a_writer_re_announced_into_the_readers_partition_is_matched_and_delivers() {
    let (mut f, r, mut w) = reader_b_and_writer_in_a();
    // Samples while in "a" go nowhere.
    f.samples(w.guid, r, 1..=1, true);
    assert!(f.take(r).is_empty());
    move_writer_to_b(&mut f, r, &mut w);
    assert_eq!(f.p.remote_endpoint_count(), 1, "the same endpoint, not a second one");
}

#[test]
fn a_writer_re_announced_out_of_the_readers_partition_is_unmatched_and_no_longer_delivers() {
    let (mut f, r, mut w) = reader_b_and_writer_in_a();
    move_writer_to_b(&mut f, r, &mut w);
    // Back to "a": unmatched, as by a dispose, and told why.
    w.qos = w.qos.clone().with_partition("a");
    f.announce(&w);
    assert_eq!(f.p.reader_status(r).matched, 0, "re-announced in a: unmatched");
    let rg = f.p.reader_guid(r);
    assert_eq!(
        f.events(),
        vec![Event::ReaderUnmatched { reader: r, writer: w.guid }, Event::IncompatibleQos { local: rg, remote: w.guid, reason: Incompatible::Partition }]
    );
    let unmatched = f.p.counters().rx_unmatched;
    f.samples(w.guid, r, 3..=4, true);
    assert!(f.take(r).is_empty(), "samples of a writer no longer matched are not delivered");
    assert!(f.p.counters().rx_unmatched > unmatched, "{:?}", f.p.counters());
    assert_eq!(f.p.remote_endpoints().find(|e| e.guid == w.guid).map(|e| e.qos.partitions.clone()), Some(vec!["a".to_string()]));
}

#[test]
fn an_unchanged_re_announcement_changes_nothing() {
    let (mut f, r, mut w) = reader_b_and_writer_in_a();
    move_writer_to_b(&mut f, r, &mut w);
    f.sent();
    // The same announcement again (CycloneDDS re-sends them): no event, the
    // proxy is the same one (no pre-emptive ACKNACK of a new proxy, the
    // samples it received are still counted, and sample 3 follows 2 at
    // once, without the HEARTBEAT a new proxy would wait for).
    f.announce(&w);
    assert_eq!(f.events(), vec![]);
    f.tick();
    let sent = f.sent();
    assert!(!any_submessage(&sent, |_, s| matches!(s, Submessage::AckNack(a) if a.writer_id == w.guid.entity)), "the proxy was made anew: {sent:?}");
    assert_eq!(f.p.reader_status(r).matched, 1);
    assert_eq!(f.p.reader_status(r).received, 2, "the proxy's state was kept");
    f.samples(w.guid, r, 3..=3, false);
    assert_eq!(f.take(r), vec![3], "delivered in order after 2, no resynchronisation");
    assert_eq!(f.p.reader_status(r).received, 3);
    assert_eq!(f.events(), vec![]);
}

#[test]
fn a_matched_reader_re_announced_with_a_new_locator_gets_samples_there_and_unmatches_when_it_leaves_the_partition() {
    let mut f = Fixture::new();
    let wid: WriterId = f.p.create_writer_for("T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    f.start();
    let mut rd = endpoint(Guid::new(f.prefix, EntityId([0, 0, 2, 0x04])), "");
    rd.qos.partitions.clear();
    rd.unicast = vec![Locator::udpv4(SocketAddrV4::new(PEER_IP, 7600))];
    f.announce(&rd);
    assert_eq!(f.p.writer_status(wid).matched, 1);
    assert_eq!(f.events(), vec![Event::WriterMatched { writer: wid, reader: rd.guid }]);
    let is_data_to = |port: u16| move |dst: &Addr, s: &Submessage<'_>| matches!(s, Submessage::Data(_)) && *dst == Addr::Udp(SocketAddrV4::new(PEER_IP, port));
    f.sent();
    f.p.write(f.now, &mut f.o, wid, None, &OneULong { seq: 1 }).unwrap();
    assert!(any_submessage(&f.sent(), is_data_to(7600)));
    // Its locator moves: the match stays (no event), samples follow it.
    rd.unicast = vec![Locator::udpv4(SocketAddrV4::new(PEER_IP, 7602))];
    f.announce(&rd);
    assert_eq!(f.events(), vec![]);
    assert_eq!(f.p.writer_status(wid).matched, 1);
    f.sent();
    f.p.write(f.now, &mut f.o, wid, None, &OneULong { seq: 2 }).unwrap();
    let sent = f.sent();
    assert!(any_submessage(&sent, is_data_to(7602)), "sample 2 goes to the new locator: {sent:?}");
    assert!(!any_submessage(&sent, is_data_to(7600)), "nothing to the old one");
    // It leaves the default partition: unmatched, samples no longer go to it.
    rd.qos = rd.qos.clone().with_partition("elsewhere");
    f.announce(&rd);
    assert_eq!(f.p.writer_status(wid).matched, 0);
    let wg = f.p.writer_guid(wid);
    assert_eq!(
        f.events(),
        vec![Event::WriterUnmatched { writer: wid, reader: rd.guid }, Event::IncompatibleQos { local: wg, remote: rd.guid, reason: Incompatible::Partition }]
    );
    f.sent();
    f.p.write(f.now, &mut f.o, wid, None, &OneULong { seq: 3 }).unwrap();
    assert!(!any_submessage(&f.sent(), |_, s| matches!(s, Submessage::Data(_))), "no reader, no DATA");
}
