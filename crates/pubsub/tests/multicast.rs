//! SPDP over the multicast group (239.255.0.1:7400) on the kernel udp
//! datapath: CycloneDDS's ddsperf with its DEFAULT configuration (multicast
//! discovery, no peer list, no CYCLONEDDS_URI) in one testbed namespace and a
//! detpath node without a peer list in the other find each other, and pings
//! are answered both ways. Needs root (namespaces); without ddsperf the
//! tests say SKIP.
#![cfg(feature = "endpoint")]

mod ddsperf;
use ddsperf::have_ddsperf;
use detpath::testbed::{Testbed, TestbedConfig};
use detpath_pubsub::app::{run, NodeOptions};
use detpath_pubsub::ddsperf::Role;
use detpath_pubsub::transport::Wait;
use std::io::Read;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn testbed(name: &str) -> Option<Testbed> {
    if !have_ddsperf() {
        println!("SKIP {name}: ddsperf not installed (apt-get install cyclonedds-tools)");
        return None;
    }
    Some(Testbed::up(TestbedConfig::unique("psmc")).expect("testbed up (needs root)"))
}

#[test]
fn detpath_ping_without_peers_finds_default_ddsperf_pong_over_multicast() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(tb) = testbed("detpath_ping_without_peers_finds_default_ddsperf_pong_over_multicast") else { return };
    let _pong = ddsperf::spawn_default_in(tb.b(), &["-D", "40", "pong"]);
    let mut o = NodeOptions::new(&tb.a().uri("udp", 7410), Role::Ping { rate_hz: 1000.0 });
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
        let to = SocketAddrV4::new(detpath_pubsub::discovery::SPDP_MULTICAST, 7400);
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
    let out = out.unwrap_or_else(|e| panic!("{e}"));
    println!("{}", serde_json::to_string(&out).unwrap());
    assert!(out.discovery_ms.is_some());
    assert_eq!(out.received, 2000, "every ping answered");
    assert_eq!(out.lost, 0);
    assert!(junk_sent > 0 && out.engine.rx_malformed > 0, "garbage on the group counted: {} of {junk_sent}", out.engine.rx_malformed);
}

#[test]
fn default_ddsperf_ping_finds_detpath_pong_without_peers_over_multicast() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(tb) = testbed("default_ddsperf_ping_finds_detpath_pong_without_peers_over_multicast") else { return };
    let mut o = NodeOptions::new(&tb.a().uri("udp", 7410), Role::Pong);
    o.netns = Some(tb.a().netns.clone());
    o.duration = Some(Duration::from_secs(12));
    o.wait = Wait::Block;
    // ddsperf only knows of us from our multicast announcements: it has no peer list and we send it nothing first.
    let mut ping = ddsperf::spawn_default_in(tb.b(), &["-D", "8", "ping", "100Hz", "size", "32"]);
    let out = run(&o, &|| false, |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let status = ping.0.wait().unwrap();
    let mut text = String::new();
    ping.0.stdout.take().unwrap().read_to_string(&mut text).unwrap();
    println!("{text}\n{}", serde_json::to_string(&out).unwrap());
    let cnt: u64 = text.lines().filter_map(|l| l.split(" cnt ").nth(1)).filter_map(|c| c.trim().parse::<u64>().ok()).sum();
    assert!(status.success(), "ddsperf exit {status:?}");
    assert!(text.contains("participant "), "ddsperf saw no participant");
    assert!(!text.contains("failed to match"), "ddsperf: not all endpoints matched ours");
    assert!(cnt >= 100, "ddsperf counted {cnt} round trips");
    assert!(out.pings_answered >= cnt);
}
