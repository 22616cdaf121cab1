//! detpath-pubsub in layer-2 mode (CycloneDDS's `raweth`: RTPS directly in
//! Ethernet frames, EtherType = RTPS port 7400, locators of kind 0x8000
//! carrying the MAC) in the two-namespace testbed, on each frame datapath:
//! `packet` (AF_PACKET, `raweth://dpa`), `afxdp` (`raweth+afxdp://dpa`) and
//! `dpdk` (`raweth+dpdk://dpa?huge=off`, net_af_xdp over the veth end).
//!
//! - detpath ping (a) -> detpath pong (b): discovery within 2 s, 10,000
//!   reliable pings answered, none lost; garbage frames of the EtherType
//!   injected meanwhile are counted as malformed and survived.
//! - detpath ping (a) -> ddsperf pong (b) and ddsperf ping (b) -> detpath pong
//!   (a), ddsperf configured `<Transport>raweth</Transport>` (Debian's 0.10.2
//!   supports it; a missing ddsperf fails in CI and is a named skip elsewhere).
//!
//! Discovery goes to the broadcast MAC at the EtherType, as CycloneDDS's
//! raweth does (no peer list needed). Needs root (namespaces, AF_PACKET, XDP).
//! Nodes block in the kernel between datagrams so ddsperf gets CPU; one test
//! at a time. Namespaces: `detpath-rweth-<pid>-<n>-{a,b}`.
#![cfg(feature = "endpoint")]

mod ddsperf;
use ddsperf::Ddsperf;
use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath_pubsub::app::{run, NodeOptions, Outcome};
use detpath_pubsub::ddsperf::Role;
use detpath_pubsub::transport::Wait;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
const ETHERTYPE: u16 = 7400;

fn spec(datapath: &str, side: &Side) -> String {
    match datapath {
        "packet" => format!("raweth://{}", side.iface),
        // net_af_xdp over the veth end, without hugepages.
        "dpdk" => format!("raweth+dpdk://{}?huge=off", side.iface),
        dp => format!("raweth+{dp}://{}", side.iface),
    }
}

fn ddsperf_raweth_in(side: &Side, args: &[&str]) -> Ddsperf {
    ddsperf::spawn_in(side, "rweth", &ddsperf::raweth_config(side), args)
}

fn ping_opts(tb: &Testbed, datapath: &str, pings: u64) -> NodeOptions {
    let mut o = NodeOptions::new(&spec(datapath, tb.a()), Role::Ping { rate_hz: 1000.0 });
    o.netns = Some(tb.a().netns.clone());
    o.count = pings;
    o.duration = Some(Duration::from_secs(60));
    o.wait = Wait::Block;
    o.lockstep = true;
    o
}

/// Sends `n` frames of the EtherType from `side` that are not RTPS (too
/// short, bad magic, a truncated submessage), to the broadcast address.
fn inject_garbage(side: &Side, n: usize) -> usize {
    let iface = side.iface.clone();
    side.run(move || {
        let s = detpath::sys::packet::PacketSocket::open(&iface).expect("AF_PACKET socket");
        let src = [0x02, 0x64, 0x70, 0, 0, 0x0b];
        let bodies: [&[u8]; 3] = [
            b"RT",
            b"XXXX\x02\x01\x01\x10aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            b"RTPS\x02\x01\x01\x10\x01\x0f\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x15\x01\xff\x7f",
        ];
        let mut sent = 0;
        for i in 0..n {
            let mut f = vec![0xff; 6];
            f.extend_from_slice(&src);
            f.extend_from_slice(&ETHERTYPE.to_be_bytes());
            f.extend_from_slice(bodies[i % bodies.len()]);
            while f.len() < 60 {
                f.push(0);
            }
            if s.send(&f).is_ok() {
                sent += 1;
            }
        }
        sent
    })
    .expect("inject in namespace")
}

fn detpath_both_sides(datapath: &str) {
    const PINGS: u64 = 10_000;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("rweth")).expect("testbed up (needs root)");
    let stop = Arc::new(AtomicBool::new(false));
    let mut po = NodeOptions::new(&spec(datapath, tb.b()), Role::Pong);
    po.netns = Some(tb.b().netns.clone());
    po.duration = Some(Duration::from_secs(60));
    po.wait = Wait::Block;
    let stop2 = stop.clone();
    let pong = std::thread::spawn(move || run(&po, &|| stop2.load(Ordering::Relaxed), |_| {}));
    // Garbage from side a's interface (the pong's peer link) while the run is on.
    let (a, garbage_stop) = (tb.a().clone(), stop.clone());
    let garbage = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        let mut sent = 0;
        for _ in 0..20 {
            if garbage_stop.load(Ordering::Relaxed) {
                break;
            }
            sent += inject_garbage(&a, 10);
            std::thread::sleep(Duration::from_millis(100));
        }
        sent
    });
    let out = run(&ping_opts(&tb, datapath, PINGS), &|| false, |_| {});
    stop.store(true, Ordering::Relaxed);
    let injected = garbage.join().unwrap();
    let pong: Outcome = pong.join().unwrap().unwrap_or_else(|e| panic!("raweth {datapath} pong: {e}"));
    let out = out.unwrap_or_else(|e| panic!("raweth {datapath} ping: {e}"));
    println!("raweth {datapath}: {}\n{}", serde_json::to_string(&out).unwrap(), serde_json::to_string(&pong).unwrap());
    assert!(out.discovery_ms.unwrap() < 2000.0, "discovery {:?} ms", out.discovery_ms);
    assert_eq!(out.pings_sent, PINGS);
    assert_eq!(out.received, PINGS, "every ping answered over raweth {datapath}");
    assert_eq!(out.lost, 0);
    assert!((PINGS..PINGS + 100).contains(&pong.pings_answered), "pong answered {}", pong.pings_answered);
    assert!(injected > 0, "no garbage frame could be injected");
    // Each garbage frame reached both nodes (broadcast): counted, never delivered as data.
    assert!(
        pong.engine.rx_malformed + out.engine.rx_malformed >= injected as u64,
        "malformed {} + {} of {injected} injected",
        pong.engine.rx_malformed,
        out.engine.rx_malformed
    );
}

fn detpath_ping_ddsperf_pong(datapath: &str) {
    const PINGS: u64 = 3000;
    if !detpath_testkit::need_tool(&format!("detpath_ping_ddsperf_pong over raweth {datapath}"), "ddsperf", "cyclonedds-tools") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("rweth")).expect("testbed up (needs root)");
    let _pong = ddsperf_raweth_in(tb.b(), &["-D", "40", "pong"]);
    let out = run(&ping_opts(&tb, datapath, PINGS), &|| false, |_| {}).unwrap_or_else(|e| panic!("raweth {datapath}: {e}"));
    println!("raweth {datapath}: {}", serde_json::to_string(&out).unwrap());
    assert!(out.discovery_ms.unwrap() < 2000.0, "discovery {:?} ms", out.discovery_ms);
    assert_eq!(out.received, PINGS, "ddsperf answered every ping over raweth {datapath}");
    assert_eq!(out.lost, 0);
}

fn ddsperf_ping_detpath_pong(datapath: &str) {
    if !detpath_testkit::need_tool(&format!("ddsperf_ping_detpath_pong over raweth {datapath}"), "ddsperf", "cyclonedds-tools") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("rweth")).expect("testbed up (needs root)");
    let mut o = NodeOptions::new(&spec(datapath, tb.a()), Role::Pong);
    o.netns = Some(tb.a().netns.clone());
    o.duration = Some(Duration::from_secs(9));
    o.wait = Wait::Block;
    let mut ping = ddsperf_raweth_in(tb.b(), &["-D", "6", "ping", "1000Hz", "size", "32"]);
    let out = run(&o, &|| false, |_| {}).unwrap_or_else(|e| panic!("raweth {datapath}: {e}"));
    let status = ping.0.wait().unwrap();
    let mut text = String::new();
    ping.0.stdout.take().unwrap().read_to_string(&mut text).unwrap();
    println!("{text}\nraweth {datapath}: {}", serde_json::to_string(&out).unwrap());
    let seconds = text.lines().filter(|l| l.contains(" cnt ")).count();
    let cnt: u64 = text.lines().filter_map(|l| l.split(" cnt ").nth(1)).filter_map(|c| c.trim().parse::<u64>().ok()).sum();
    assert!(status.success(), "ddsperf exit {status:?}");
    assert!(seconds >= 5, "ddsperf reported {seconds} seconds of round trips, not every second");
    assert!(cnt >= 4000, "ddsperf counted {cnt} round trips over raweth {datapath}");
    assert!(out.pings_answered >= cnt);
}

macro_rules! over {
    ($($dp:ident),*) => {
        mod detpath_ping_detpath_pong { $( #[test] fn $dp() { super::detpath_both_sides(stringify!($dp)); } )* }
        mod detpath_ping_ddsperf_pong { $( #[test] fn $dp() { super::detpath_ping_ddsperf_pong(stringify!($dp)); } )* }
        mod ddsperf_ping_detpath_pong { $( #[test] fn $dp() { super::ddsperf_ping_detpath_pong(stringify!($dp)); } )* }
    };
}
over!(packet, afxdp, dpdk);
