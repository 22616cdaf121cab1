//! The engine fed with CycloneDDS ddsperf's own discovery traffic (captured
//! on this machine): it admits the participant, reads its SEDP
//! announcements, and matches its endpoints with ours by topic, type,
//! partition and QoS; captured data and heartbeats then flow through.

use detpath_pubsub::ddsperf::{PerfConfig, PerfNode, Role};
use detpath_pubsub::engine::{Config, Event, Participant, VecOutbox};
use detpath_pubsub::wire::{GuidPrefix, Message};
use std::net::SocketAddrV4;
use std::path::PathBuf;

fn cap(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/captures").join(name)).unwrap()
}

/// The participant the captured pong process talked to (the INFO_DST of its messages).
fn ping_prefix() -> GuidPrefix {
    Message::parse(&cap("rel_05_hb.rtps")).unwrap().header.guid_prefix
}

#[test]
fn ddsperf_discovery_traffic_is_admitted_and_matched() {
    let me: SocketAddrV4 = "127.0.0.1:7412".parse().unwrap();
    let pong: SocketAddrV4 = "127.0.0.1:7410".parse().unwrap();
    let mut p = Participant::new(Config::new(0, ping_prefix(), me), 1);
    let mut perf = PerfNode::new(&mut p, 1, PerfConfig::new(Role::Ping { rate_hz: 1.0 })).unwrap();
    let mut out = VecOutbox::default();
    p.handle_timeout(1, &mut out);
    for f in ["rel_00_data.rtps", "rel_08_hb-acknack-data.rtps", "rel_09_data-hb.rtps"] {
        p.handle_datagram(2, pong, &cap(f), &mut out);
        p.handle_timeout(3, &mut out);
    }
    let c = p.counters();
    assert_eq!(c.participants_discovered, 1, "{c:?}");
    assert_eq!(c.discovery_rejected, 0, "{c:?}");
    assert_eq!(c.rx_malformed, 0);
    let (_, ud) = p.remote_participants().next().unwrap();
    assert!(ud.starts_with(b"DDSPerf:0:"));
    // 4 publications (CPUStats, Ping, Data, Pong) and 2 subscriptions (Ping, Pong).
    assert_eq!(p.remote_endpoint_count(), 6, "{c:?}");
    let evs: Vec<_> = std::iter::from_fn(|| p.poll_event()).collect();
    // Our ping reader matched its ping writer; our ping writer its ping reader.
    let rmatch = evs.iter().filter(|e| matches!(e, Event::ReaderMatched { .. })).count();
    let wmatch = evs.iter().filter(|e| matches!(e, Event::WriterMatched { .. })).count();
    assert!(rmatch >= 1 && wmatch >= 1, "{evs:?}");
    perf.on_events(&mut p);
    // The reply went out: ACKNACKs for the SEDP data, our SPDP to its metatraffic port.
    assert!(out.sent.iter().any(|(d, _)| *d == pong));
}

/// A raweth participant admits ddsperf's raweth SPDP (captured on the
/// testbed) and answers to the MAC and EtherType its locators carry.
#[test]
fn ddsperf_raweth_spdp_is_admitted_and_answered_at_its_mac() {
    use detpath_pubsub::wire::{Addr, EthAddr, LOCATOR_KIND_RAWETH};
    let spdp = cap("raweth_spdp.rtps");
    let me = Addr::Eth(EthAddr { mac: [0x02, 0x64, 0x70, 0, 0, 0x0a], ethertype: 7400 });
    let peer = EthAddr { mac: [0x02, 0x64, 0x70, 0, 0, 0x0b], ethertype: 7400 };
    let mut p = Participant::new(Config::new(0, detpath_pubsub::engine::make_guid_prefix(10, 1, 1), me), 1);
    let mut out = VecOutbox::default();
    p.handle_datagram(2, Addr::Eth(peer), &spdp, &mut out);
    assert!(std::iter::from_fn(|| p.poll_event()).any(|e| matches!(e, Event::ParticipantDiscovered { .. })), "ddsperf's raweth participant admitted");
    p.handle_timeout(3, &mut out);
    let sent = out.drain();
    assert!(!sent.is_empty());
    assert!(sent.iter().all(|(d, _)| *d == Addr::Eth(peer)), "everything goes to the announced MAC at EtherType 7400: {sent:?}");
    // Our own SPDP announces a raweth locator with our MAC.
    let ours = sent.iter().find(|(_, b)| b.windows(6).any(|w| w == [0x02, 0x64, 0x70, 0, 0, 0x0a])).expect("our SPDP");
    let kind = (LOCATOR_KIND_RAWETH as u32).to_le_bytes();
    assert!(ours.1.windows(8).any(|w| w[..4] == kind && w[4..] == 7400u32.to_le_bytes()), "kind 0x8000 port 7400 in our SPDP");
}
