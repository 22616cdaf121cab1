//! The XDP program itself, through BPF_PROG_TEST_RUN over crafted frames.
//! Needs root.

use detpath_classify::frames::{build, ipv4_header_ok, udp_checksum_ok, Layer};
use detpath_classify::{parse_intent, AltNode, Classifier, DefaultAction, Settings};
use std::net::IpAddr;

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;
const XDP_TX: u32 = 3;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

const MAC_E: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0e];
const MAC_G: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const MAC_ALT: [u8; 6] = [0x02, 0, 0, 0, 0, 0xaa];

/// The paper's nesting: MAC/IP/UDP, VXLAN/MAC/IP/UDP, GTP/IP/UDP/service.
fn nested(v6_outer: bool, vlans: Vec<(u16, u16)>, vni: u32, teid: u32, exts: Vec<(u8, Vec<u8>)>, ue: &str, dport: u16) -> Vec<u8> {
    let (os, od) = if v6_outer { (ip("fd00::1"), ip("fd00::2")) } else { (ip("10.0.0.1"), ip("10.0.0.2")) };
    build(
        &[
            Layer::Eth { dst: MAC_E, src: MAC_G, vlans },
            Layer::Ip { src: os, dst: od },
            Layer::Udp { sport: 49152, dport: 4789 },
            Layer::Vxlan { vni },
            Layer::eth([2, 0, 0, 0, 1, 2], [2, 0, 0, 0, 1, 1]),
            Layer::Ip { src: ip("10.200.0.2"), dst: ip("10.200.0.1") },
            Layer::Udp { sport: 2152, dport: 2152 },
            Layer::Gtpu { teid, exts, msg_type: 0xff },
            Layer::Ip { src: ip(ue), dst: ip("172.17.0.1") },
            Layer::Udp { sport: 40000, dport },
        ],
        b"service payload",
    )
}

fn intent(resources: &str, action: &str) -> detpath_classify::Rule {
    let s = format!(r#"{{"Resources": [{resources}], "Action": {{"actionType": "INSERT", {action}}}}}"#);
    parse_intent(s.as_bytes()).unwrap()
}

fn load() -> Classifier {
    Classifier::load(64).expect("loading the classifier (root needed)")
}

#[test]
fn loads_and_passes_non_ip() {
    let c = load();
    let arp = build(&[Layer::eth([0xff; 6], MAC_G)], &[0u8; 46]);
    assert_eq!(c.test_run(&arp).unwrap().0, XDP_PASS);
    assert_eq!(c.total("not_ip").packets, 1);
}
