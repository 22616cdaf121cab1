//! The paper's experiment in miniature, end to end over real namespaces,
//! veth, a bridge and kernel VXLAN devices. Needs root.
//!
//! ```text
//!  ns G (generator + bridge br)           ns E (edge: classifier on eE)      ns A (alternative node)
//!  AF_PACKET on gE ----------------------> eE 10.99.0.2  vx(VNI 100) 10.200.0.1:2152
//!  br = {gE, gA}   <-- XDP_TX from eE ----'                            aA 10.99.0.3 vx(VNI 100) 10.200.0.1:2152
//! ```
//! 16 services (TEIDs) in VXLAN + GTP-U; 8 prioritised by intents (4 steered
//! to a CPU through the cpumap, 4 passed); the other 8 have no rule and are
//! forwarded to A while the load flag is set.
mod common;

use common::*;
use detpath_classify::frames::{build, parse_gtpu_payload, Layer};
use detpath_classify::server::ServeConfig;
use detpath_classify::AltNode;
use detpath_sys::packet::PacketSocket;
use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::time::Duration;

const MAC_G: [u8; 6] = [0x02, 0x64, 0x63, 0, 0, 0x01];
const MAC_E: [u8; 6] = [0x02, 0x64, 0x63, 0, 0, 0x0e];
const MAC_VX: [u8; 6] = [0x02, 0x64, 0x63, 0, 0, 0xe1];
const MAC_A: [u8; 6] = [0x02, 0x64, 0x63, 0, 0, 0xaa];
const ROUNDS: usize = 5;
const TEID0: u32 = 0x1000;

fn mac(m: &[u8; 6]) -> String {
    detpath_classify::classifier::format_mac(m)
}

fn frame(service: u32) -> Vec<u8> {
    build(
        &[
            Layer::eth(MAC_E, MAC_G),
            Layer::Ip { src: "10.99.0.1".parse().unwrap(), dst: "10.99.0.2".parse().unwrap() },
            Layer::Udp { sport: 40000 + service as u16, dport: 4789 },
            Layer::Vxlan { vni: 100 },
            Layer::eth(MAC_VX, [0x02, 0x64, 0x63, 0, 0, 0x51]),
            Layer::Ip { src: "10.200.0.2".parse().unwrap(), dst: "10.200.0.1".parse().unwrap() },
            Layer::Udp { sport: 2152, dport: 2152 },
            Layer::Gtpu { teid: TEID0 + service, exts: vec![Layer::pdu_session(service as u8)], msg_type: 0xff },
            Layer::Ip { src: format!("172.16.0.{}", service + 1).parse().unwrap(), dst: "172.17.0.1".parse().unwrap() },
            Layer::Udp { sport: 30000, dport: 5000 + service as u16 },
        ],
        &[0u8; 64],
    )
}

/// Receives GTP-U datagrams until quiet; counts per service.
fn drain(s: &UdpSocket) -> BTreeMap<u32, usize> {
    let mut out = BTreeMap::new();
    let mut buf = [0u8; 2048];
    s.set_read_timeout(Some(Duration::from_millis(700))).unwrap();
    while let Ok(n) = s.recv(&mut buf) {
        let (teid, _, _) = parse_gtpu_payload(&buf[..n]).expect("a GTP-U G-PDU");
        *out.entry(teid - TEID0).or_default() += 1;
    }
    out
}

fn expect(services: impl Iterator<Item = u32>) -> BTreeMap<u32, usize> {
    services.map(|s| (s, ROUNDS)).collect()
}

#[test]
fn sixteen_services_eight_prioritised_over_vxlan_gtpu() {
    let mut ns = Namespaces::new();
    let g = ns.add("g");
    let e = ns.add("e");
    let a = ns.add("a");
    let (ge, ee, ga, aa, br) = (ns.ifname("ge"), ns.ifname("ee"), ns.ifname("ga"), ns.ifname("aa"), ns.ifname("br"));
    veth(&g, &ge, "02:64:63:00:00:01", &e, &ee, &mac(&MAC_E));
    veth(&g, &ga, "02:64:63:00:00:02", &a, &aa, &mac(&MAC_A));
    sh(&["ip", "-n", &g, "link", "add", &br, "type", "bridge"]);
    sh(&["ip", "-n", &g, "link", "set", &ge, "master", &br]);
    sh(&["ip", "-n", &g, "link", "set", &ga, "master", &br]);
    sh(&["ip", "-n", &g, "link", "set", &br, "up"]);
    for (n, dev, addr) in [(&e, &ee, "10.99.0.2/24"), (&a, &aa, "10.99.0.3/24")] {
        sh(&["ip", "-n", n, "addr", "add", addr, "dev", dev]);
        let local = addr.split('/').next().unwrap();
        sh(&["ip", "-n", n, "link", "add", "vx", "type", "vxlan", "id", "100", "dstport", "4789", "local", local, "dev", dev, "nolearning"]);
        sh(&["ip", "-n", n, "link", "set", "vx", "address", &mac(&MAC_VX), "up"]);
        // The same service address on both nodes: the alternative node serves the same services.
        sh(&["ip", "-n", n, "addr", "add", "10.200.0.1/24", "dev", "vx"]);
    }

    // XDP_TX on veth is delivered only when the peer has an XDP program: give gE one that passes.
    let helper = in_ns(&g, || {
        let c = detpath_classify::Classifier::load(1).unwrap();
        let l = c.attach_helper("cls_pass", &ge, detpath_classify::XdpMode::Native).unwrap();
        (c, l)
    });

    let sock_e = in_ns(&e, || UdpSocket::bind("10.200.0.1:2152").unwrap());
    let sock_a = in_ns(&a, || UdpSocket::bind("10.200.0.1:2152").unwrap());

    let dir = TempDir::new(&ns, "api");
    let mut cfg = ServeConfig::new(&ee);
    cfg.socket = Some(dir.0.join("api.sock"));
    cfg.netns = Some(e.clone());
    let alt = vec![AltNode { mac: MAC_A, ip: "10.99.0.3".parse().unwrap() }];
    cfg.settings.insert("alt_nodes".into(), serde_json::to_value(alt).unwrap());
    let d = Daemon::start(cfg).expect("daemon");
    assert!(has_xdp(&e, &ee));

    let cpus = detpath_sys::cpu::online().iter().collect::<Vec<_>>();
    let steer_cpu = *cpus.last().unwrap();
    for s in 0..8u32 {
        let action = if s < 4 { format!(r#""actionName": "PRIO_QUEUE", "rx_queue": "{steer_cpu}""#) } else { r#""actionName": "PASS""#.to_string() };
        let body = format!(
            r#"{{"Resources": [{{"resourceId": "T{s}", "encapsulationID1": "64", "encapsulationType1": "vxlan"}},
                              {{"encapsulationID2": "{:08X}", "encapsulationType2": "gtp"}}],
                "Action": {{"actionType": "INSERT", {action}, "flow_hash": "SVC{s}"}},
                "Params": [{{"paramName": "interfaceName", "paramValue": "{ee}"}}]}}"#,
            TEID0 + s
        );
        let (st, v) = d.req("POST", "/v1/intents", Some(&body));
        assert_eq!(st, 201, "{v}");
    }

    let send_all = || {
        in_ns(&g, || {
            let p = PacketSocket::open(&ge).unwrap();
            for _ in 0..ROUNDS {
                for s in 0..16 {
                    p.send(&frame(s)).unwrap();
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let total = |v: &serde_json::Value, k: &str| v["totals"][k]["packets"].as_u64().unwrap();

    // Phase 1: not overloaded: every service is served locally.
    send_all();
    let got_e = drain(&sock_e);
    let got_a = drain(&sock_a);
    assert_eq!(got_e, expect(0..16), "all 16 services reach the edge node");
    assert!(got_a.is_empty(), "nothing forwarded: {got_a:?}");
    let (_, st) = d.req("GET", "/v1/stats", None);
    assert_eq!(total(&st, "steer"), 4 * ROUNDS as u64, "{st}");
    assert_eq!(total(&st, "pass_rule"), 4 * ROUNDS as u64);
    // Unmatched also counts the odd packet the namespaces' kernels send themselves (IGMP and the like).
    let unmatched = total(&st, "pass_unmatched");
    assert!((8 * ROUNDS as u64..8 * ROUNDS as u64 + 4).contains(&unmatched), "{unmatched}");
    assert_eq!(total(&st, "forward"), 0);

    // Phase 2: the load flag is set: the 8 others go to the alternative node.
    let (code, v) = d.req("PUT", "/v1/config", Some(r#"{"load_flag": true}"#));
    assert_eq!(code, 200, "{v}");
    send_all();
    let got_e = drain(&sock_e);
    let got_a = drain(&sock_a);
    assert_eq!(got_e, expect(0..8), "the prioritised services stay on the edge node");
    assert_eq!(got_a, expect(8..16), "the others are received by the alternative node");
    let (_, st) = d.req("GET", "/v1/stats", None);
    assert_eq!(total(&st, "steer"), 8 * ROUNDS as u64);
    assert_eq!(total(&st, "pass_rule"), 8 * ROUNDS as u64);
    assert_eq!(total(&st, "forward"), 8 * ROUNDS as u64);
    assert!(total(&st, "overloaded") >= 16 * ROUNDS as u64);
    for r in st["rules"].as_array().unwrap() {
        assert_eq!(r["packets"].as_u64(), Some(2 * ROUNDS as u64), "{r}");
    }
    let frac = st["forwarded_fraction"].as_f64().unwrap();
    assert!(frac > 0.24 && frac <= 0.25, "8 of the 32 x ROUNDS packets sent were forwarded: {frac}");

    d.stop();
    assert!(!has_xdp(&e, &ee), "detaching leaves the interface as it was");
    drop(helper);
    assert!(!has_xdp(&g, &ge));
    remove_and_check(ns);
}
