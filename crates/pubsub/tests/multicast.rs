//! SPDP over the multicast group (239.255.0.1:7400) on every datagram
//! datapath: CycloneDDS's ddsperf with its DEFAULT configuration (multicast
//! discovery, no peer list, no CYCLONEDDS_URI) in one testbed namespace and a
//! detpath node without a peer list in the other find each other, and pings
//! are answered both ways, on udp, afxdp, xdppoll and dpdk. udp, afxdp and
//! xdppoll hear the group on a kernel socket joined to it (the XDP programs
//! pass the group's datagrams to the kernel); dpdk in its own receive path
//! (`group=` key: net_af_xdp gives the kernel nothing). Needs root
//! (namespaces, XDP, DPDK); without ddsperf the tests fail in CI, are named skips elsewhere.
//!
//! Also without root: our SPDP announces the group as its metatraffic
//! multicast locator, and a datapath that cannot take part says why.
#![cfg(feature = "endpoint")]

mod ddsperf;
use detpath::testbed::{Testbed, TestbedConfig};
use detpath_pubsub::app::{run, NodeOptions};
use detpath_pubsub::ddsperf::Role;
use detpath_pubsub::discovery::{ParticipantData, SPDP_MULTICAST};
use detpath_pubsub::engine::{make_guid_prefix, Config, Participant, VecOutbox};
use detpath_pubsub::transport::{spdp_group_reception, GroupReception, Wait};
use detpath_pubsub::wire::{Addr, Encapsulation, EntityId, Locator, Message, ParamList, Submessage};
use std::io::Read;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn testbed(name: &str) -> Option<Testbed> {
    if !detpath_testkit::need_tool(name, "ddsperf", "cyclonedds-tools") {
        return None;
    }
    Some(Testbed::up(TestbedConfig::unique("psmc")).expect("testbed up (needs root)"))
}

fn detpath_ping_without_peers_finds_default_ddsperf_pong(datapath: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(tb) = testbed(&format!("detpath_ping_without_peers_finds_default_ddsperf_pong over {datapath}")) else { return };
    let _pong = ddsperf::spawn_default_in(tb.b(), &["-D", "40", "pong"]);
    let mut o = NodeOptions::new(&tb.a().uri(datapath, 7410), Role::Ping { rate_hz: 1000.0 });
    o.netns = Some(tb.a().netns.clone());
    assert!(o.peers.is_empty());
    o.count = 2000;
    o.duration = Some(Duration::from_secs(30));
    o.wait = Wait::Block;
    o.lockstep = true;
    // Garbage to the group from the other namespace while the ping runs: counted as malformed and dropped.
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let junk = tb.b().spawn(move || {
        let mut g = detpath_pubsub::transport::open_spdp_group("dpb", 0).expect("group endpoint in namespace b");
        let to = SocketAddrV4::new(SPDP_MULTICAST, 7400);
        let mut sent = 0u64;
        while !stop2.load(Ordering::Relaxed) {
            if g.send_to(b"RTPX not rtps at all", to).is_ok() && g.send_to(b"RTPS\x02\x01", to).is_ok() {
                sent += 2;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        sent
    });
    let out = run(&o, &|| false, |_| {});
    stop.store(true, Ordering::Relaxed);
    let junk_sent = junk.join().unwrap().unwrap();
    let out = out.unwrap_or_else(|e| panic!("{datapath}: {e}"));
    println!("{datapath}: {}", serde_json::to_string(&out).unwrap());
    assert!(out.discovery_ms.is_some());
    assert_eq!(out.received, 2000, "every ping answered over {datapath}");
    assert_eq!(out.lost, 0);
    assert!(junk_sent > 0 && out.engine.rx_malformed > 0, "garbage on the group counted over {datapath}: {} of {junk_sent}", out.engine.rx_malformed);
}

fn default_ddsperf_ping_finds_detpath_pong_without_peers(datapath: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(tb) = testbed(&format!("default_ddsperf_ping_finds_detpath_pong_without_peers over {datapath}")) else { return };
    let mut o = NodeOptions::new(&tb.a().uri(datapath, 7410), Role::Pong);
    o.netns = Some(tb.a().netns.clone());
    o.duration = Some(Duration::from_secs(12));
    o.wait = Wait::Block;
    // ddsperf only knows of us from our multicast announcements: it has no peer list and we send it nothing first.
    let mut ping = ddsperf::spawn_default_in(tb.b(), &["-D", "8", "ping", "100Hz", "size", "32"]);
    let out = run(&o, &|| false, |_| {}).unwrap_or_else(|e| panic!("{datapath}: {e}"));
    let status = ping.0.wait().unwrap();
    let mut text = String::new();
    ping.0.stdout.take().unwrap().read_to_string(&mut text).unwrap();
    println!("{datapath}:\n{text}\n{}", serde_json::to_string(&out).unwrap());
    let cnt: u64 = text.lines().filter_map(|l| l.split(" cnt ").nth(1)).filter_map(|c| c.trim().parse::<u64>().ok()).sum();
    assert!(status.success(), "ddsperf exit {status:?}");
    assert!(text.contains("participant "), "ddsperf saw no participant over {datapath}");
    assert!(!text.contains("failed to match"), "ddsperf: not all endpoints matched ours over {datapath}");
    assert!(cnt >= 100, "ddsperf counted {cnt} round trips over {datapath}");
    // Every pong reached ddsperf's count, but for the one in flight when it stopped.
    assert!((cnt..=cnt + 1).contains(&out.pings_answered), "answered {} pings, ddsperf counted {cnt} over {datapath}", out.pings_answered);
}

macro_rules! over {
    ($($dp:ident),*) => {
        mod detpath_ping_without_peers_finds_default_ddsperf_pong { $( #[test] fn $dp() { super::detpath_ping_without_peers_finds_default_ddsperf_pong(stringify!($dp)); } )* }
        mod default_ddsperf_ping_finds_detpath_pong_without_peers { $( #[test] fn $dp() { super::default_ddsperf_ping_finds_detpath_pong_without_peers(stringify!($dp)); } )* }
    };
}
over!(udp, afxdp, xdppoll, dpdk);

/// The participant data of the first SPDP announcement in `out` to `dst`.
fn spdp_sent_to(out: &VecOutbox, dst: Addr) -> Option<ParticipantData> {
    out.sent.iter().filter(|(d, _)| *d == dst).find_map(|(_, bytes)| {
        let msg = Message::parse(bytes).ok()?;
        msg.submessages().find_map(|s| match s.ok()? {
            Submessage::Data(d) if d.writer_id == EntityId::SPDP_WRITER => {
                let (e, body) = Encapsulation::split(d.payload?).ok()?;
                ParticipantData::parse(&ParamList::new(body, e.is_le())).ok()
            }
            _ => None,
        })
    })
}

#[test]
fn spdp_announces_the_group_as_metatraffic_multicast_locator_when_listening_on_it() {
    let me: SocketAddrV4 = "10.77.0.1:7660".parse().unwrap();
    let group = Addr::Udp(SocketAddrV4::new(SPDP_MULTICAST, 7650));
    let peer = Addr::Udp("10.77.0.2:7660".parse().unwrap());
    // Domain 1: the group's port is 7400 + 250.
    let mut with = Config::new(1, make_guid_prefix(1, 2, 3), me);
    with.add_spdp_multicast();
    with.add_spdp_target(peer);
    let mut without = Config::new(1, make_guid_prefix(1, 2, 4), me);
    without.add_spdp_target(peer);
    let announced = |cfg: Config| {
        let mut p = Participant::new(cfg, 1);
        let mut out = VecOutbox::default();
        p.handle_timeout(1, &mut out);
        out
    };
    let out = announced(with);
    let pd = spdp_sent_to(&out, group).expect("SPDP went to the group");
    assert_eq!(pd.metatraffic_multicast, vec![Locator::udpv4(SocketAddrV4::new(SPDP_MULTICAST, 7650))]);
    assert_eq!(pd.metatraffic_unicast, vec![Locator::udpv4(me)], "unicast metatraffic stays ours");
    assert!(pd.default_unicast.iter().all(|l| l.to_addr() == Some(Addr::Udp(me))), "user data stays unicast");
    assert_eq!(spdp_sent_to(&out, peer).expect("and to the peer").metatraffic_multicast.len(), 1);
    let out = announced(without);
    assert!(spdp_sent_to(&out, group).is_none());
    assert!(spdp_sent_to(&out, peer).expect("SPDP to the peer").metatraffic_multicast.is_empty(), "no group, no multicast locator");
}

#[test]
fn every_datagram_datapath_hears_the_group_or_says_why_not() {
    assert_eq!(spdp_group_reception("udp"), Ok(GroupReception::KernelSocket));
    assert_eq!(spdp_group_reception("afxdp"), Ok(GroupReception::KernelSocket));
    assert_eq!(spdp_group_reception("xdppoll"), Ok(GroupReception::KernelSocket));
    assert_eq!(spdp_group_reception("dpdk"), Ok(GroupReception::Endpoint));
    assert_eq!(detpath_pubsub::transport::spdp_group_spec("dpdk://dpa?port=7410", 1), "dpdk://dpa?port=7410&group=239.255.0.1:7650");
    assert_eq!(
        detpath_pubsub::transport::spdp_group_spec("dpdk://dpa?group=239.255.0.1:7400", 1),
        "dpdk://dpa?group=239.255.0.1:7400",
        "a group the user named is kept"
    );
    let e = spdp_group_reception("fault").unwrap_err();
    assert!(e.contains("--peer"), "{e}");
    // Every registered datagram datapath is either able or refused with the fix.
    for dp in detpath::datapath::transports() {
        if let Err(e) = spdp_group_reception(dp.name) {
            assert!(e.contains(dp.name) && e.contains("--peer"), "{}: {e}", dp.name);
        }
    }
}

/// dpdk with `group=`: the port is asked for all multicast (a NIC would drop
/// the group's MAC otherwise) and the interface's flags are put back on close.
#[test]
fn dpdk_group_endpoint_asks_for_all_multicast_and_restores_the_interface() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("psmc")).expect("testbed up (needs root)");
    let spec = detpath_pubsub::transport::spdp_group_spec(&tb.a().uri("dpdk", 7410), 0);
    let (before, during, notes, after) = tb
        .a()
        .run(|| {
            let before = detpath::sys::netdev::flags("dpa").unwrap();
            let ep = detpath_open::open(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            let during = detpath::sys::netdev::flags("dpa").unwrap();
            let notes = ep.capabilities().notes.clone();
            drop(ep);
            (before, during, notes, detpath::sys::netdev::flags("dpa").unwrap())
        })
        .unwrap();
    println!("flags before {before:#x} during {during:#x} after {after:#x}; {notes:?}");
    assert!(notes.iter().any(|n| n.starts_with("group=239.255.0.1:7400")), "{notes:?}");
    assert_eq!(before & libc::IFF_ALLMULTI, 0);
    // net_af_xdp has no all-multicast of its own: the interface gets IFF_ALLMULTI while the endpoint is open.
    assert!(during & libc::IFF_ALLMULTI != 0 || notes.iter().any(|n| n.contains("all-multicast on the port")), "{notes:?}");
    assert_eq!(
        after & (libc::IFF_ALLMULTI | libc::IFF_PROMISC | libc::IFF_UP),
        before & (libc::IFF_ALLMULTI | libc::IFF_PROMISC | libc::IFF_UP),
        "flags put back"
    );
}
