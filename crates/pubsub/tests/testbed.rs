//! detpath-pubsub over every datapath in the two-namespace testbed, against
//! the real ddsperf (run in the other namespace with `ip netns exec`) and
//! against itself:
//!
//! - detpath ping (datapath X, namespace a) -> ddsperf pong (namespace b)
//! - ddsperf ping (namespace b) -> detpath pong (datapath X, namespace a)
//! - detpath ping (X, a) -> detpath pong (X, b)
//!
//! - detpath pub (X, a) -> detpath sub (X, b): reliable KEEP_ALL, exact count.
//!
//! Reliable, 32-byte KeyedSeq at 1 kHz, discovery within 2 s, every ping
//! answered and every published sample received. ddsperf's ping and pong
//! endpoints are KEEP_LAST 1 (ours too, to match): a ping arriving before
//! the previous one is taken replaces it, so detpath pings in lockstep (one
//! outstanding) where exact counts are checked; ddsperf's own pings are
//! counted by ddsperf. The nodes block in the kernel between datagrams (no
//! busy polling) so ddsperf gets CPU.
//! Needs root (namespaces, XDP, DPDK); without ddsperf the
//! ddsperf tests fail in CI and are named skips elsewhere. The tests busy-poll, so they run one at a time.
#![cfg(feature = "endpoint")]

mod ddsperf;
use ddsperf::Ddsperf;
use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath_pubsub::app::{run, NodeOptions};
use detpath_pubsub::ddsperf::Role;
use detpath_pubsub::transport::Wait;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
const PINGS: u64 = 3000;
const PORT: u16 = 7410;

fn ddsperf_in(side: &Side, peer: std::net::Ipv4Addr, args: &[&str]) -> Ddsperf {
    ddsperf::spawn_in(side, "ps", &ddsperf::udp_config(side, peer), args)
}

fn ping_opts(tb: &Testbed, datapath: &str) -> NodeOptions {
    let mut o = NodeOptions::new(&tb.a().uri(datapath, PORT), Role::Ping { rate_hz: 1000.0 });
    o.netns = Some(tb.a().netns.clone());
    o.peers = vec![tb.b().addr];
    o.count = PINGS;
    o.duration = Some(Duration::from_secs(30));
    o.wait = Wait::Block;
    o.lockstep = true;
    o
}

fn detpath_ping_ddsperf_pong(datapath: &str) {
    if !detpath_testkit::need_tool(&format!("detpath_ping_ddsperf_pong over {datapath}"), "ddsperf", "cyclonedds-tools") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("ps")).expect("testbed up (needs root)");
    let _pong = ddsperf_in(tb.b(), tb.a().addr, &["-D", "40", "pong"]);
    let out = run(&ping_opts(&tb, datapath), &|| false, |_| {}).unwrap_or_else(|e| panic!("{datapath}: {e}"));
    println!("{datapath}: {}", serde_json::to_string(&out).unwrap());
    assert!(out.discovery_ms.unwrap() < 2000.0, "discovery {:?} ms", out.discovery_ms);
    assert_eq!(out.pings_sent, PINGS);
    assert_eq!(out.received, PINGS, "every ping answered over {datapath}");
    assert_eq!(out.lost, 0);
}

fn ddsperf_ping_detpath_pong(datapath: &str) {
    if !detpath_testkit::need_tool(&format!("ddsperf_ping_detpath_pong over {datapath}"), "ddsperf", "cyclonedds-tools") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("ps")).expect("testbed up (needs root)");
    let stop = Arc::new(AtomicBool::new(false));
    let mut o = NodeOptions::new(&tb.a().uri(datapath, PORT), Role::Pong);
    o.netns = Some(tb.a().netns.clone());
    o.peers = vec![tb.b().addr];
    // Until ddsperf is done (stopped below), at most this long.
    o.duration = Some(Duration::from_secs(60));
    o.wait = Wait::Block;
    let stop2 = stop.clone();
    let pong = std::thread::spawn(move || run(&o, &|| stop2.load(Ordering::Relaxed), |_| {}));
    // ddsperf starts pinging only once it has matched us (-Qminmatch:1 -Qinitwait: at
    // most 20 s of discovery, an error beyond), so a slow discovery on a loaded
    // machine does not eat into the pinging; -D counts from ddsperf's start, so 12 s leave about 10 of
    // pinging at 1 kHz to count the 4000 round trips in (ddsperf counts about 950 a second here).
    let mut ping = ddsperf_in(tb.b(), tb.a().addr, &["-Qminmatch:1", "-Qinitwait:20", "-D", "12", "ping", "1000Hz", "size", "32"]);
    let status = ping.0.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    let mut text = String::new();
    ping.0.stdout.take().unwrap().read_to_string(&mut text).unwrap();
    println!("{text}");
    let out = pong.join().unwrap().unwrap_or_else(|e| panic!("{datapath}: {e} (ddsperf exit {status:?})"));
    println!("{datapath}: {}", serde_json::to_string(&out).unwrap());
    let per_second: Vec<u64> = text.lines().filter_map(|l| l.split(" cnt ").nth(1)).filter_map(|c| c.trim().parse::<u64>().ok()).collect();
    let cnt: u64 = per_second.iter().sum();
    assert!(text.contains("participant "), "ddsperf saw no participant");
    assert!(!text.contains("failed to match"), "ddsperf: not all endpoints matched ours");
    assert!(status.success(), "ddsperf exit {status:?}");
    // Answered all along, not in a burst: pongs counted in most of the seconds pinged.
    assert!(per_second.len() >= 6, "ddsperf reported pongs in only {} seconds: {per_second:?}", per_second.len());
    assert!(cnt >= 4000, "ddsperf counted {cnt} round trips over {datapath} in its 12 s: {per_second:?}");
    assert!(out.pings_answered >= cnt);
    assert_eq!(out.lost, 0, "detpath's ping reader lost none of ddsperf's pings");
}

fn detpath_both_sides(datapath: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("ps")).expect("testbed up (needs root)");
    let stop = Arc::new(AtomicBool::new(false));
    let mut po = NodeOptions::new(&tb.b().uri(datapath, PORT), Role::Pong);
    po.netns = Some(tb.b().netns.clone());
    po.peers = vec![tb.a().addr];
    po.duration = Some(Duration::from_secs(30));
    po.wait = Wait::Block;
    let stop2 = stop.clone();
    let pong = std::thread::spawn(move || run(&po, &|| stop2.load(Ordering::Relaxed), |_| {}));
    let out = run(&ping_opts(&tb, datapath), &|| false, |_| {});
    stop.store(true, Ordering::Relaxed);
    let pong = pong.join().unwrap();
    let out = out.unwrap_or_else(|e| panic!("{datapath} ping: {e}"));
    let pong = pong.unwrap_or_else(|e| panic!("{datapath} pong: {e}"));
    println!("{datapath}: {}\n{}", serde_json::to_string(&out).unwrap(), serde_json::to_string(&pong).unwrap());
    assert!(out.discovery_ms.unwrap() < 2000.0);
    assert_eq!(out.received, PINGS, "every ping answered over {datapath}");
    // The pong also answered the ping's warm-up pings (until the first pong came back).
    assert!((PINGS..PINGS + 100).contains(&pong.pings_answered), "pong answered {}", pong.pings_answered);
}

const SAMPLES: u64 = 20_000;

fn detpath_pub_sub(datapath: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("ps")).expect("testbed up (needs root)");
    let stop = Arc::new(AtomicBool::new(false));
    let mut so = NodeOptions::new(&tb.b().uri(datapath, PORT), Role::Sub);
    so.netns = Some(tb.b().netns.clone());
    so.peers = vec![tb.a().addr];
    so.count = SAMPLES;
    so.duration = Some(Duration::from_secs(60));
    so.wait = Wait::Block;
    let stop2 = stop.clone();
    let sub = std::thread::spawn(move || run(&so, &|| stop2.load(Ordering::Relaxed), |r| println!("sub {}", serde_json::to_string(r).unwrap())));
    let mut po = NodeOptions::new(&tb.a().uri(datapath, PORT), Role::Pub { rate_hz: 0.0 });
    po.netns = Some(tb.a().netns.clone());
    po.peers = vec![tb.b().addr];
    po.count = SAMPLES;
    po.duration = Some(Duration::from_secs(60));
    po.wait = Wait::Block;
    let out = run(&po, &|| false, |_| {});
    let sub = sub.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let out = out.unwrap_or_else(|e| panic!("{datapath} pub: {e}"));
    let sub = sub.unwrap_or_else(|e| panic!("{datapath} sub: {e}"));
    println!("{datapath}: {}\n{}", serde_json::to_string(&out).unwrap(), serde_json::to_string(&sub).unwrap());
    assert_eq!(out.data_sent, SAMPLES);
    assert_eq!(sub.data_received, SAMPLES, "reliable KEEP_ALL delivers every sample over {datapath}");
    assert_eq!(sub.lost, 0);
}

macro_rules! over {
    ($($dp:ident),*) => {
        mod detpath_ping_ddsperf_pong { $( #[test] fn $dp() { super::detpath_ping_ddsperf_pong(stringify!($dp)); } )* }
        mod ddsperf_ping_detpath_pong { $( #[test] fn $dp() { super::ddsperf_ping_detpath_pong(stringify!($dp)); } )* }
        mod detpath_ping_detpath_pong { $( #[test] fn $dp() { super::detpath_both_sides(stringify!($dp)); } )* }
        mod detpath_pub_detpath_sub { $( #[test] fn $dp() { super::detpath_pub_sub(stringify!($dp)); } )* }
    };
}
over!(udp, afxdp, xdppoll, dpdk);
