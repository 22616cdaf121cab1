//! The XDP program itself, through BPF_PROG_TEST_RUN over crafted frames.
//! Needs root.

use detpath_classify::frames::{build, gtpu, ipv4_header_ok, ipv6, udp_checksum_ok, vlan, vxlan, Layer};
use detpath_classify::{parse_intent, AltNode, Classifier, DefaultAction, Settings};
use detpath_wire::{ethernet, ipv4, udp, EthernetFrame, Ipv4Packet};
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

const XDP_REDIRECT: u32 = 4;

fn pin_cpu0() {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn plain_udp(dport: u16) -> Vec<u8> {
    build(&[Layer::eth(MAC_E, MAC_G), Layer::Ip { src: ip("10.0.0.1"), dst: ip("10.0.0.2") }, Layer::Udp { sport: 1234, dport }], b"hello")
}

#[test]
fn each_encapsulation_alone_and_nested() {
    let mut c = load();
    let cases: Vec<(&str, &str, Vec<u8>)> = vec![
        ("plain udp by port", r#"{"dstPort": 7000, "protocol": "udp"}"#, plain_udp(7000)),
        (
            "plain tcp v6",
            r#"{"srcIP": "fd00::1", "dstPort": 443, "protocol": "tcp"}"#,
            build(&[Layer::eth(MAC_E, MAC_G), Layer::Ip { src: ip("fd00::1"), dst: ip("fd00::2") }, Layer::Tcp { sport: 5555, dport: 443 }], b"x"),
        ),
        (
            "vlan",
            r#"{"encapsulationType1": "vlan", "encapsulationID1": 100}, {"dstPort": 7001}"#,
            build(
                &[
                    Layer::Eth { dst: MAC_E, src: MAC_G, vlans: vec![(0x8100, 100)] },
                    Layer::Ip { src: ip("10.0.0.1"), dst: ip("10.0.0.2") },
                    Layer::Udp { sport: 1, dport: 7001 },
                ],
                b"x",
            ),
        ),
        (
            "qinq",
            r#"{"encapsulationType1": "vlan", "encapsulationID1": 200}, {"encapsulationType2": "vlan"}, {"dstPort": 7002}"#,
            build(
                &[
                    Layer::Eth { dst: MAC_E, src: MAC_G, vlans: vec![(0x88a8, 200), (0x8100, 300)] },
                    Layer::Ip { src: ip("10.0.0.1"), dst: ip("10.0.0.2") },
                    Layer::Udp { sport: 1, dport: 7002 },
                ],
                b"x",
            ),
        ),
        (
            "vxlan alone",
            r#"{"encapsulationType1": "vxlan", "encapsulationID1": "000123"}, {"dstIP": "10.9.0.2"}"#,
            build(
                &[
                    Layer::eth(MAC_E, MAC_G),
                    Layer::Ip { src: ip("10.0.0.1"), dst: ip("10.0.0.2") },
                    Layer::Udp { sport: 4000, dport: 4789 },
                    Layer::Vxlan { vni: 0x123 },
                    Layer::eth([2; 6], [4; 6]),
                    Layer::Ip { src: ip("10.9.0.1"), dst: ip("10.9.0.2") },
                    Layer::Tcp { sport: 9, dport: 10 },
                ],
                b"x",
            ),
        ),
        (
            "gtp alone",
            r#"{"encapsulationType1": "gtp", "encapsulationID1": "00ABCDEF"}"#,
            build(
                &[
                    Layer::eth(MAC_E, MAC_G),
                    Layer::Ip { src: ip("10.0.0.1"), dst: ip("10.0.0.2") },
                    Layer::Udp { sport: 2152, dport: 2152 },
                    Layer::Gtpu { teid: 0xABCDEF, exts: vec![], msg_type: 0xff },
                    Layer::Ip { src: ip("172.16.0.9"), dst: ip("172.17.0.1") },
                    Layer::Udp { sport: 1, dport: 2 },
                ],
                b"x",
            ),
        ),
        (
            "gtp with two extension headers, inner v6",
            r#"{"encapsulationType1": "gtp", "encapsulationID1": "00000042"}, {"srcIP": "2001:db8::/32", "dstPort": 5004}"#,
            build(
                &[
                    Layer::eth(MAC_E, MAC_G),
                    Layer::Ip { src: ip("10.0.0.1"), dst: ip("10.0.0.2") },
                    Layer::Udp { sport: 2152, dport: 2152 },
                    Layer::Gtpu { teid: 0x42, exts: vec![(0x32, vec![1, 2, 3, 4, 5, 6]), Layer::pdu_session(9)], msg_type: 0xff },
                    Layer::Ip { src: ip("2001:db8::7"), dst: ip("2001:db8::1") },
                    Layer::Udp { sport: 1, dport: 5004 },
                ],
                b"x",
            ),
        ),
        (
            "paper nesting (listing 1)",
            r#"{"encapsulationID1": "00000445", "encapsulationType1": "vxlan"}, {"encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"}, {"srcIP": "192.188.0.140", "dstPort": "5004"}"#,
            nested(false, vec![], 0x445, 0x8894D0D4, vec![], "192.188.0.140", 5004),
        ),
        (
            "paper nesting over qinq + v6 outer + pdu session",
            r#"{"encapsulationType1": "vlan", "encapsulationID1": 5}, {"encapsulationID2": "7", "encapsulationType2": "vxlan"}, {"encapsulationID3": "1", "encapsulationType3": "gtp"}, {"dstPort": 6000}"#,
            nested(true, vec![(0x88a8, 5), (0x8100, 6)], 7, 1, vec![Layer::pdu_session(1)], "172.16.0.1", 6000),
        ),
    ];
    for (i, (name, res, frame)) in cases.iter().enumerate() {
        let rule = intent(res, &format!(r#""actionName": "DROP", "flow_hash": "R{i}""#));
        let ins = c.install(&rule, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (v, _) = c.test_run(frame).unwrap();
        assert_eq!(v, XDP_DROP, "{name}: the rule's frame is dropped");
        assert_eq!(c.rule_stat(ins.slot).packets, 1, "{name}");
        assert_eq!(c.rule_stat(ins.slot).bytes, frame.len() as u64, "{name}");
        assert!(c.rule_stat(ins.slot).last_seen_ns > 0, "{name}");
        c.remove(&ins).unwrap();
        assert_eq!(c.test_run(frame).unwrap().0, XDP_PASS, "{name}: passes once the rule is gone");
    }
    assert_eq!(c.kernel_rule_count(), 0);
    assert_eq!(c.kernel_mask_count(), 0);
    assert_eq!(c.total("malformed").packets, 0);
}

#[test]
fn a_rule_does_not_match_its_neighbours() {
    let mut c = load();
    let r = intent(
        r#"{"encapsulationID1": "445", "encapsulationType1": "vxlan"}, {"encapsulationID2": "10", "encapsulationType2": "gtp"}, {"dstPort": 5004}"#,
        r#""actionName": "DROP""#,
    );
    c.install(&r, None).unwrap();
    assert_eq!(c.test_run(&nested(false, vec![], 0x445, 0x10, vec![], "172.16.0.1", 5004)).unwrap().0, XDP_DROP);
    for f in [
        nested(false, vec![], 0x446, 0x10, vec![], "172.16.0.1", 5004), // other VNI
        nested(false, vec![], 0x445, 0x11, vec![], "172.16.0.1", 5004), // other TEID
        nested(false, vec![], 0x445, 0x10, vec![], "172.16.0.1", 5005), // other port
        plain_udp(5004),                                                // not encapsulated
    ] {
        assert_eq!(c.test_run(&f).unwrap().0, XDP_PASS);
    }
}

#[test]
fn every_truncation_point_is_never_the_rule() {
    let mut c = load();
    let frames = vec![
        nested(false, vec![], 0x445, 0x8894D0D4, vec![], "192.188.0.140", 5004),
        nested(true, vec![(0x88a8, 5), (0x8100, 6)], 0x445, 0x8894D0D4, vec![(0x32, vec![1, 2]), Layer::pdu_session(3)], "192.188.0.140", 5004),
    ];
    let r = intent(
        r#"{"encapsulationID1": "445", "encapsulationType1": "vxlan"}, {"encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"}, {"srcIP": "192.188.0.140"}"#,
        r#""actionName": "DROP""#,
    );
    let ins = c.install(&r, None).unwrap();
    // A second, coarse rule that only needs the VXLAN VNI: also never matched by a truncated frame.
    let r2 = intent(r#"{"encapsulationID1": "445", "encapsulationType1": "vxlan"}"#, r#""actionName": "STEER_CPU", "cpu": 0"#);
    let ins2 = c.install(&r2, None).unwrap();
    for f in &frames {
        let before = c.rule_stat(ins.slot).packets;
        assert_eq!(c.test_run(f).unwrap().0, XDP_DROP);
        assert_eq!(c.rule_stat(ins.slot).packets, before + 1);
        let malformed0 = c.total("malformed").packets;
        let mut runs = 0;
        for len in ethernet::field::PAYLOAD..f.len() {
            let (v, _) = c.test_run(&f[..len]).unwrap();
            assert_eq!(v, XDP_PASS, "truncated to {len} of {}: must pass", f.len());
            runs += 1;
        }
        assert_eq!(c.rule_stat(ins.slot).packets, before + 1, "no truncated frame counted for the rule");
        assert_eq!(c.rule_stat(ins2.slot).packets, 0);
        // Truncated inside the outer headers: malformed; every other cut too, since lengths disagree.
        assert_eq!(c.total("malformed").packets - malformed0, runs, "every truncated frame is counted as malformed");
    }
}

#[test]
fn malformed_headers_are_never_matched() {
    let mut c = load();
    let r = intent(r#"{"encapsulationID1": "445", "encapsulationType1": "vxlan"}"#, r#""actionName": "DROP""#);
    c.install(&r, None).unwrap();
    let good = nested(false, vec![], 0x445, 0x10, vec![], "172.16.0.1", 5004);
    assert_eq!(c.test_run(&good).unwrap().0, XDP_DROP);
    // Where each header starts: outer Ethernet / IPv4 / UDP, VXLAN, inner Ethernet / IPv4 / UDP, GTP-U.
    let ip_at = ethernet::field::PAYLOAD;
    let outer_udp = ip_at + ipv4::HEADER_LEN;
    let vx = outer_udp + udp::field::PAYLOAD;
    let gtp = vx + vxlan::HEADER_LEN + ethernet::field::PAYLOAD + ipv4::HEADER_LEN + udp::field::PAYLOAD;
    let mut bad = Vec::new();
    let mut f = good.clone();
    f[vx + vxlan::field::FLAGS] = 0; // I flag cleared
    bad.push(("vxlan without I flag", f));
    let mut f = good.clone();
    f[ip_at + ipv4::field::VER_IHL] = 0x44; // IHL 4
    bad.push(("ihl < 5", f));
    let mut f = good.clone();
    f[ip_at + ipv4::field::LENGTH.start] = 0xff; // beyond the frame
    bad.push(("ip total length too long", f));
    let mut f = good.clone();
    f[outer_udp + udp::field::LENGTH.start] = 0xff; // beyond the IP packet
    bad.push(("udp length too long", f));
    let mut f = good.clone();
    f[gtp + gtpu::field::FLAGS] = 0x50; // version 2
    bad.push(("gtp version 2", f));
    let mut f = good.clone();
    f[gtp + gtpu::field::LENGTH.start] = 0xff; // beyond the datagram
    bad.push(("gtp length", f));
    let mut f = good.clone();
    f[gtp + gtpu::HEADER_LEN + ipv4::field::VER_IHL] = 0x55; // inner IP version 5
    bad.push(("inner ip version", f));
    for (name, f) in &bad {
        let m0 = c.total("malformed").packets;
        assert_eq!(c.test_run(f).unwrap().0, XDP_PASS, "{name}");
        assert_eq!(c.total("malformed").packets, m0 + 1, "{name} counted malformed");
    }
    // GTP-U echo request: a valid message with no user flow.
    let echo = build(
        &[
            Layer::eth(MAC_E, MAC_G),
            Layer::Ip { src: ip("10.0.0.1"), dst: ip("10.0.0.2") },
            Layer::Udp { sport: 2152, dport: 2152 },
            Layer::Gtpu { teid: 0, exts: vec![], msg_type: 1 },
        ],
        &[0, 0, 0, 0],
    );
    assert_eq!(c.test_run(&echo).unwrap().0, XDP_PASS);
    assert_eq!(c.total("not_ip").packets, 1);
}

#[test]
fn fragments_have_no_ports() {
    let mut c = load();
    c.install(&intent(r#"{"dstPort": 7000}"#, r#""actionName": "DROP""#), None).unwrap();
    let later = build(
        &[
            Layer::eth(MAC_E, MAC_G),
            Layer::IpFrag { src: ip("10.0.0.1"), dst: ip("10.0.0.2"), more: false, offset8: 100 },
            Layer::Udp { sport: 0, dport: 7000 },
        ],
        b"x",
    );
    assert_eq!(c.test_run(&later).unwrap().0, XDP_PASS, "a later fragment has no UDP header");
    let later6 = build(
        &[Layer::eth(MAC_E, MAC_G), Layer::IpFrag { src: ip("fd00::1"), dst: ip("fd00::2"), more: false, offset8: 100 }, Layer::Udp { sport: 0, dport: 7000 }],
        b"x",
    );
    assert_eq!(c.test_run(&later6).unwrap().0, XDP_PASS);
    let first6 = build(
        &[Layer::eth(MAC_E, MAC_G), Layer::IpFrag { src: ip("fd00::1"), dst: ip("fd00::2"), more: true, offset8: 0 }, Layer::Udp { sport: 0, dport: 7000 }],
        b"x",
    );
    assert_eq!(c.test_run(&first6).unwrap().0, XDP_DROP, "the first fragment carries the ports");
    c.install(&intent(r#"{"srcIP": "10.0.0.1"}"#, r#""actionName": "DROP""#), None).unwrap();
    assert_eq!(c.test_run(&later).unwrap().0, XDP_DROP, "an address rule matches every fragment");
}

#[test]
fn highest_priority_wins() {
    let mut c = load();
    let f = nested(false, vec![], 0x445, 0x10, vec![], "172.16.0.1", 5004);
    c.install(&intent(r#"{"encapsulationID1": "445", "encapsulationType1": "vxlan"}"#, r#""actionName": "DROP""#), None).unwrap();
    let specific =
        c.install(&intent(r#"{"encapsulationID1": "10", "encapsulationType1": "gtp"}, {"dstPort": 5004}"#, r#""actionName": "PASS""#), None).unwrap();
    assert_eq!(c.test_run(&f).unwrap().0, XDP_PASS, "the more specific rule wins by default");
    assert_eq!(c.rule_stat(specific.slot).packets, 1);
    c.install(&intent(r#"{"dstPort": 5004}"#, r#""actionName": "DROP", "priority": 60000"#), None).unwrap();
    assert_eq!(c.test_run(&f).unwrap().0, XDP_DROP, "an explicit priority wins");
}

#[test]
fn steer_and_xsk_actions() {
    let mut c = load();
    let cpu = c.online_cpus()[0];
    c.install(&intent(r#"{"encapsulationID1": "10", "encapsulationType1": "gtp"}"#, &format!(r#""actionName": "PRIO_QUEUE", "rx_queue": {cpu}"#)), None)
        .unwrap();
    c.install(&intent(r#"{"encapsulationID1": "11", "encapsulationType1": "gtp"}"#, r#""actionName": "XSK", "queue": 0"#), None).unwrap();
    assert_eq!(c.test_run(&nested(false, vec![], 1, 0x10, vec![], "172.16.0.1", 1)).unwrap().0, XDP_REDIRECT);
    assert_eq!(c.total("steer").packets, 1);
    assert_eq!(c.test_run(&nested(false, vec![], 1, 0x11, vec![], "172.16.0.1", 1)).unwrap().0, XDP_PASS, "no socket in the slot: pass");
    assert_eq!(c.total("xsk_miss").packets, 1);
    let e = c.install(&intent(r#"{"encapsulationID1": "12", "encapsulationType1": "gtp"}"#, r#""actionName": "STEER_CPU", "cpu": 63"#), None).unwrap_err();
    assert_eq!(e.code(), "no_such_cpu");
    assert_eq!(c.kernel_rule_count(), 2, "nothing half-installed");
}

fn alt_settings(load_flag: bool, v6: bool) -> Settings {
    Settings {
        load_flag,
        alt_nodes: vec![AltNode { mac: MAC_ALT, ip: if v6 { ip("fd00::aa") } else { ip("10.0.0.170") } }],
        default_action: DefaultAction::Forward,
        ..Settings::default()
    }
}

#[test]
fn forward_when_overloaded_rewrites_mac_ip_and_checksums() {
    for v6 in [false, true] {
        let mut c = load();
        c.apply_settings(&alt_settings(false, v6)).unwrap();
        let fw = c
            .install(&intent(r#"{"encapsulationID1": "20", "encapsulationType1": "gtp"}"#, r#""actionName": "FORWARD_WHEN_OVERLOADED", "alt_node": 0"#), None)
            .unwrap();
        let f = nested(v6, vec![(0x8100, 9)], 1, 0x20, vec![], "172.16.0.1", 1);
        assert_eq!(c.test_run(&f).unwrap().0, XDP_PASS, "not overloaded: pass");
        c.apply_settings(&alt_settings(true, v6)).unwrap();
        let (v, out) = c.test_run(&f).unwrap();
        assert_eq!(v, XDP_TX, "overloaded: forwarded");
        assert_eq!(out.len(), f.len());
        let eth = EthernetFrame::new_checked(&out[..]).unwrap();
        assert_eq!(eth.dst_addr().0, MAC_ALT);
        assert_eq!(eth.src_addr().0, MAC_E, "sent from our own MAC");
        let ip_off = ethernet::field::PAYLOAD + vlan::field::PAYLOAD; // one VLAN tag
        let ip_len = if v6 {
            assert_eq!(&out[ip_off..][ipv6::field::DST_ADDR], &ip("fd00::aa").to_string().parse::<std::net::Ipv6Addr>().unwrap().octets());
            ipv6::HEADER_LEN
        } else {
            assert_eq!(Ipv4Packet::new_checked(&out[ip_off..]).unwrap().dst_addr(), ip("10.0.0.170"));
            assert!(ipv4_header_ok(&out, ip_off), "IPv4 header checksum still valid");
            ipv4::HEADER_LEN
        };
        assert!(udp_checksum_ok(&out, ip_off), "outer UDP checksum still valid (v6={v6})");
        let after_udp = ip_off + ip_len + udp::field::PAYLOAD;
        assert_eq!(&out[after_udp..], &f[after_udp..], "VXLAN and everything inside untouched");
        assert_eq!(c.rule_stat(fw.slot).forwarded, 1);
        assert_eq!(c.rule_stat(fw.slot).packets, 2);
        // Unmatched encapsulated traffic follows the default action; plain traffic is never forwarded.
        assert_eq!(c.test_run(&nested(v6, vec![], 1, 0x99, vec![], "172.16.0.1", 1)).unwrap().0, XDP_TX);
        assert_eq!(c.test_run(&plain_udp(22)).unwrap().0, XDP_PASS);
        let mut s = alt_settings(true, v6);
        s.default_action = DefaultAction::Pass;
        c.apply_settings(&s).unwrap();
        assert_eq!(c.test_run(&nested(v6, vec![], 1, 0x99, vec![], "172.16.0.1", 1)).unwrap().0, XDP_PASS);
        // An alt node of the other IP version is not usable: pass, counted.
        let mut s = alt_settings(true, !v6);
        s.default_action = DefaultAction::Forward;
        c.apply_settings(&s).unwrap();
        assert_eq!(c.test_run(&f).unwrap().0, XDP_PASS);
        assert_eq!(c.total("forward_no_alt").packets, 1);
        assert_eq!(c.total("forward").packets, 2);
    }
}

/// A frame the fast lane parsed (untagged IPv4/UDP, bare or in VXLAN or
/// GTP-U) is forwarded as the general parser would forward it: the fast
/// lane keeps no description of the outer headers, forwarding rebuilds it.
#[test]
fn a_fast_lane_frame_is_forwarded_as_the_general_parser_forwards_it() {
    use detpath_classify::bench::{frame, Encap};
    let mut c = load();
    c.apply_settings(&alt_settings(true, false)).unwrap();
    // Plain UDP is forwarded only by a rule; unmatched tunnels by the default action.
    c.install(&intent(r#"{"dstPort": 5000, "protocol": "udp"}"#, r#""actionName": "FORWARD_WHEN_OVERLOADED", "alt_node": 0"#), None).unwrap();
    for encap in Encap::ALL {
        let f = frame(encap, 132);
        assert!(udp_checksum_ok(&f, 14), "{encap:?}: the frame carries an outer UDP checksum to update");
        let mut out = Vec::new();
        for fast_lane in [true, false] {
            c.set_fast_lane(fast_lane).unwrap();
            let (v, o) = c.test_run(&f).unwrap();
            assert_eq!(v, XDP_TX, "{encap:?} (fast lane {fast_lane}): forwarded");
            assert_eq!(Ipv4Packet::new_checked(&o[14..]).unwrap().dst_addr(), ip("10.0.0.170"));
            assert!(ipv4_header_ok(&o, 14) && udp_checksum_ok(&o, 14), "{encap:?} (fast lane {fast_lane}): checksums still valid");
            out.push(o);
        }
        assert_eq!(out[0], out[1], "{encap:?}: the fast lane and the general parser forward alike");
    }
    assert_eq!(c.total("forward").packets, 6);
}

/// A flow cache hit on a dropping rule takes a short way out of the
/// program (no overload signal configured): with one configured, the frame
/// must still be counted as overloaded, hit or miss. The bench's frames and
/// rules, so every frame takes the fast lane.
#[test]
fn a_cached_dropping_rule_still_counts_its_frames_as_overloaded() {
    use detpath_classify::bench::{frame, rules_for, Encap};
    pin_cpu0();
    for load_flag in [false, true] {
        let mut c = load();
        c.apply_settings(&Settings { load_flag, ..Settings::default() }).unwrap();
        for encap in Encap::ALL {
            let rule = parse_intent(rules_for(encap, 1)[0].as_bytes()).unwrap();
            c.install(&rule, None).unwrap();
            let f = frame(encap, 132);
            for round in 0..3 {
                assert_eq!(c.test_run(&f).unwrap().0, XDP_DROP, "{encap:?}, round {round}: dropped");
            }
        }
        let overloaded = if load_flag { 9 } else { 0 };
        assert_eq!(c.total("overloaded").packets, overloaded, "load flag {load_flag}: every frame, the cached ones too");
        assert_eq!(c.total("drop").packets, 9, "load flag {load_flag}");
        assert_eq!(c.cache_stats().0, 6, "two of each three frames were cache hits");
    }
}

#[test]
fn per_cpu_rate_threshold_forwards_the_excess() {
    pin_cpu0();
    let mut c = load();
    let mut s = alt_settings(false, false);
    s.rate_threshold_pps = 1;
    s.window_us = 5_000_000; // 5 packets per 5 s window
    c.apply_settings(&s).unwrap();
    let f = nested(false, vec![], 1, 0x77, vec![], "172.16.0.1", 1);
    let verdicts: Vec<u32> = (0..8).map(|_| c.test_run(&f).unwrap().0).collect();
    assert_eq!(verdicts, vec![XDP_PASS, XDP_PASS, XDP_PASS, XDP_PASS, XDP_PASS, XDP_TX, XDP_TX, XDP_TX]);
    assert_eq!(c.total("overloaded").packets, 3);
}

/// Frames from an independent encoder (scapy, deps/pip-classify.txt): the
/// parser agrees with it on VLAN, VXLAN, GTP-U + PDU session container, inner
/// IPv6/TCP. Skipped (with a message) where scapy is not installed.
#[test]
fn frames_built_by_scapy_classify_as_expected() {
    let script = r#"
from scapy.all import Ether, Dot1Q, IP, IPv6, UDP, TCP, raw
from scapy.layers.vxlan import VXLAN
from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
def f(inner, ext=True):
    g = GTP_U_Header(teid=0x8894D0D4, next_ex=0x85)/GTPPDUSessionContainer(type=1, QFI=5) if ext else GTP_U_Header(teid=0x8894D0D4)
    return (Ether(dst="02:00:00:00:00:0e", src="02:00:00:00:00:01")/Dot1Q(vlan=42)/IP(src="10.0.0.1", dst="10.0.0.2")/UDP(sport=1234, dport=4789)
        /VXLAN(vni=0x445)/Ether(dst="02:00:00:00:01:02", src="02:00:00:00:01:01")/IP(src="10.200.0.2", dst="10.200.0.1")/UDP(sport=2152, dport=2152)
        /g/inner/b"hello")
print(raw(f(IPv6(src="2001:db8::1", dst="2001:db8::2")/TCP(sport=1, dport=5004))).hex())
print(raw(f(IP(src="192.188.0.140", dst="172.17.0.1")/UDP(sport=1, dport=5004), ext=False)).hex())
print(raw(f(IP(src="192.188.0.140", dst="172.17.0.1")/UDP(sport=1, dport=5005))).hex())
"#;
    let out = std::process::Command::new("python3").args(["-c", script]).output();
    let scapy = matches!(&out, Ok(o) if o.status.success());
    if !detpath_testkit::need("frames_built_by_scapy_classify_as_expected", "python3 with scapy", scapy, "apt-get install python3-scapy; `make deps` installs it") {
        return;
    }
    let out = out.expect("python3 ran");
    let frames: Vec<Vec<u8>> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| (0..l.len() / 2).map(|i| u8::from_str_radix(&l[2 * i..2 * i + 2], 16).unwrap()).collect())
        .collect();
    assert_eq!(frames.len(), 3);
    let mut c = load();
    c.install(
        &intent(
            r#"{"encapsulationType1": "vlan", "encapsulationID1": 42}, {"encapsulationID2": "445", "encapsulationType2": "vxlan"}, {"encapsulationID3": "8894D0D4", "encapsulationType3": "gtp"}, {"dstPort": 5004}"#,
            r#""actionName": "DROP""#,
        ),
        None,
    )
    .unwrap();
    assert_eq!(c.test_run(&frames[0]).unwrap().0, XDP_DROP, "inner IPv6/TCP behind a PDU session container");
    assert_eq!(c.test_run(&frames[1]).unwrap().0, XDP_DROP, "inner IPv4/UDP, no extension header");
    assert_eq!(c.test_run(&frames[2]).unwrap().0, XDP_PASS, "another port");
    assert_eq!(c.total("malformed").packets, 0);
}

/// Paper 004's guarantee: however overloaded the node (user-space load flag
/// set AND this CPU's rate far over its threshold), a prioritised service is
/// steered or passed, never bounced to the alternative node; only the
/// non-prioritised traffic is forwarded. Only beyond the saturation rate
/// ("packets exceeding the system capacities") does the prioritised excess
/// go to the alternative node too, rather than be lost.
#[test]
fn prioritised_flows_are_never_forwarded_even_when_overloaded() {
    pin_cpu0();
    let mut c = load();
    let mut s = alt_settings(true, false);
    s.rate_threshold_pps = 1;
    s.window_us = 10_000_000;
    c.apply_settings(&s).unwrap();
    let cpu = c.online_cpus()[0];
    // Prioritised: PRIO_QUEUE (steer), PASS with a priority, XSK (no socket: pass).
    c.install(&intent(r#"{"encapsulationID1": "30", "encapsulationType1": "gtp"}"#, &format!(r#""actionName": "PRIO_QUEUE", "rx_queue": {cpu}"#)), None)
        .unwrap();
    c.install(&intent(r#"{"encapsulationID1": "31", "encapsulationType1": "gtp"}"#, r#""actionName": "PASS", "priority": 100"#), None).unwrap();
    c.install(&intent(r#"{"encapsulationID1": "32", "encapsulationType1": "gtp"}"#, r#""actionName": "XSK", "queue": 0"#), None).unwrap();
    // Non-prioritised: an explicit forward rule, and unmatched encapsulated traffic.
    c.install(&intent(r#"{"encapsulationID1": "33", "encapsulationType1": "gtp"}"#, r#""actionName": "FORWARD_WHEN_OVERLOADED", "alt_node": 0"#), None)
        .unwrap();
    let frame = |teid: u32| nested(false, vec![], 1, teid, vec![], "172.16.0.1", 1);
    let mut forwarded = 0;
    for round in 0..50 {
        assert_eq!(c.test_run(&frame(0x30)).unwrap().0, XDP_REDIRECT, "round {round}: steered");
        assert_eq!(c.test_run(&frame(0x31)).unwrap().0, XDP_PASS, "round {round}: passed");
        assert_eq!(c.test_run(&frame(0x32)).unwrap().0, XDP_PASS, "round {round}: xsk slot empty, passed");
        for teid in [0x33, 0x99] {
            if c.test_run(&frame(teid)).unwrap().0 == XDP_TX {
                forwarded += 1;
            }
        }
    }
    assert_eq!(forwarded, 100, "every non-prioritised frame forwarded");
    assert_eq!(c.total("forward").packets, 100, "and nothing else");
    assert_eq!(c.total("overloaded").packets, 250, "the node was overloaded for every frame");

    // Saturation: 10 pps over a 10 s window = 100 frames per window, and this
    // CPU has seen 250 already, so the prioritised frames now go too.
    let mut sat = s.clone();
    sat.saturation_pps = 10;
    c.apply_settings(&sat).unwrap();
    for teid in [0x30, 0x31, 0x32] {
        assert_eq!(c.test_run(&frame(teid)).unwrap().0, XDP_TX, "saturated: prioritised teid {teid:#x} forwarded");
    }
    assert_eq!(c.total("forward").packets, 103);
    // Saturation below the overload threshold makes no sense and is refused.
    let e = c.apply_settings(&Settings { saturation_pps: 1, rate_threshold_pps: 5, ..sat.clone() }).unwrap_err();
    assert_eq!(e.code(), "bad_value", "{e:?}");
}

/// The per-CPU flow cache keeps the search's answer for a flow; every rule
/// change (a new rule under a mask already in use, a more specific rule, a
/// removal) takes effect on the very next frame of that flow, never the
/// cached answer of before. Pinned to one CPU: the cache is per CPU.
#[test]
fn a_rule_change_takes_effect_on_the_next_frame_despite_the_flow_cache() {
    pin_cpu0();
    let mut c = load();
    let f = plain_udp(7000);
    let run = |c: &Classifier| c.test_run(&f).unwrap().0;

    // A rule of the flow's mask (dstPort) for another port: the flow is unmatched, twice.
    let other = c.install(&intent(r#"{"dstPort": 7001}"#, r#""actionName": "DROP""#), None).unwrap();
    let (h0, m0) = c.cache_stats();
    assert_eq!(run(&c), XDP_PASS);
    assert_eq!(run(&c), XDP_PASS);
    let (h1, m1) = c.cache_stats();
    assert_eq!((h1 - h0, m1 - m0), (1, 1), "the first frame searched, the second came from the cache");
    assert_eq!(c.total("pass_unmatched").packets, 2);

    // A rule for the flow under the same mask (the mask set does not change):
    // the next frame is dropped, not passed from the cache.
    let drop = c.install(&intent(r#"{"dstPort": 7000}"#, r#""actionName": "DROP""#), None).unwrap();
    assert_eq!(run(&c), XDP_DROP);
    assert_eq!(run(&c), XDP_DROP);
    assert_eq!(c.rule_stat(drop.slot).packets, 2);
    let (h2, m2) = c.cache_stats();
    assert_eq!((h2 - h1, m2 - m1), (1, 1), "one search after the change, then the cache again");

    // A more specific rule (a new mask) with action pass wins from the next frame on.
    let pass = c.install(&intent(r#"{"srcIP": "10.0.0.1", "dstPort": 7000}"#, r#""actionName": "PASS""#), None).unwrap();
    assert_eq!(run(&c), XDP_PASS);
    assert_eq!(c.rule_stat(pass.slot).packets, 1);
    assert_eq!(c.total("pass_rule").packets, 1);

    // Removed: the drop rule is back on the next frame; removed too: unmatched.
    c.remove(&pass).unwrap();
    assert_eq!(run(&c), XDP_DROP);
    assert_eq!(c.rule_stat(drop.slot).packets, 3);
    c.remove(&drop).unwrap();
    assert_eq!(run(&c), XDP_PASS);
    assert_eq!(c.total("pass_unmatched").packets, 3);
    // Another flow of the same mask (its rule still installed) is unaffected.
    assert_eq!(c.test_run(&plain_udp(7001)).unwrap().0, XDP_DROP);
    assert_eq!(c.rule_stat(other.slot).packets, 1);

    // Settings changes keep the rule generation: a cached answer stays valid.
    c.apply_settings(&Settings { load_flag: true, ..Settings::default() }).unwrap();
    assert_eq!(c.test_run(&plain_udp(7001)).unwrap().0, XDP_DROP);
    let (h3, _) = c.cache_stats();
    assert!(h3 > h2, "the cache answers after a settings change");
}

/// A rule's statistics are its frames only, wherever the program counts
/// them: the frames a flow cache entry answers are counted in the entry and
/// added when the statistics are read, or moved to the rule when the entry
/// is refilled; after the rule is removed and its slot given to another
/// rule, the old entries' frames count for neither. Pinned to one CPU.
#[test]
fn a_rule_counts_its_cached_frames_and_no_frame_of_its_slots_previous_rule() {
    pin_cpu0();
    let mut c = load();
    let a_flow = plain_udp(7000);
    let len = a_flow.len() as u64;
    let a = c.install(&intent(r#"{"dstPort": 7000}"#, r#""actionName": "DROP""#), None).unwrap();
    for _ in 0..3 {
        assert_eq!(c.test_run(&a_flow).unwrap().0, XDP_DROP);
    }
    let s = c.rule_stat(a.slot);
    assert_eq!((s.packets, s.bytes), (3, 3 * len), "one searched frame and two from the cache entry");

    // Another rule's install (a new generation): the entry is refilled on the
    // next frame, its two frames move to the rule's statistics, no count lost or doubled.
    let other = c.install(&intent(r#"{"dstPort": 7001}"#, r#""actionName": "PASS""#), None).unwrap();
    assert_eq!(c.rule_stat(a.slot).packets, 3, "the stale entry's frames still count for the rule");
    assert_eq!(c.test_run(&a_flow).unwrap().0, XDP_DROP);
    assert_eq!(c.rule_stat(a.slot).packets, 4);
    assert_eq!(c.test_run(&a_flow).unwrap().0, XDP_DROP);
    assert_eq!(c.rule_stat(a.slot).packets, 5, "hits in the refilled entry");
    assert_eq!(c.total("drop").packets, 5);

    // The rule removed, its slot given to a rule for another flow: the old
    // entry (two hits) counts for the new rule neither while it lives nor
    // when the flow's next frame refills it.
    c.remove(&a).unwrap();
    let b = c.install(&intent(r#"{"dstPort": 7002}"#, r#""actionName": "DROP""#), None).unwrap();
    assert_eq!(b.slot, a.slot, "the test needs the slot reused");
    assert_eq!(c.rule_stat(b.slot).packets, 0, "a live entry of the slot's previous rule");
    assert_eq!(c.test_run(&a_flow).unwrap().0, XDP_PASS, "the flow is unmatched now");
    assert_eq!(c.rule_stat(b.slot).packets, 0, "the old entry refilled");
    let b_flow = plain_udp(7002);
    for _ in 0..2 {
        assert_eq!(c.test_run(&b_flow).unwrap().0, XDP_DROP);
    }
    let s = c.rule_stat(b.slot);
    assert_eq!((s.packets, s.bytes), (2, 2 * b_flow.len() as u64));
    assert!(s.last_seen_ns > 0);
    // Read in one pass for several rules: the same figures.
    let both = c.rule_stats(&[b.slot, other.slot]);
    assert_eq!((both[0].packets, both[1].packets), (2, 0));
}

/// Packets and bytes, per total or per rule.
type Deltas = Vec<(u64, u64)>;

/// What one frame did to the program's counters: its verdict, every total
/// and the packets and bytes of each installed rule.
fn outcome(c: &Classifier, slots: &[u32], f: &[u8]) -> (u32, Deltas, Deltas) {
    let totals = |c: &Classifier| -> Deltas { c.totals().iter().map(|t| (t.packets, t.bytes)).collect() };
    let rules = |c: &Classifier| -> Deltas { slots.iter().map(|s| c.rule_stat(*s)).map(|s| (s.packets, s.bytes)).collect() };
    let (t0, r0) = (totals(c), rules(c));
    let v = c.test_run(f).unwrap().0;
    let d = |a: Deltas, b: Deltas| -> Deltas { a.iter().zip(&b).map(|(x, y)| (x.0 - y.0, x.1 - y.1)).collect() };
    (v, d(totals(c), t0), d(rules(c), r0))
}

/// The fast lane (the straight-line parse of untagged IPv4/UDP, bare or in
/// VXLAN or GTP-U) and the general parser decide every frame alike: each
/// frame of the three shapes (and the paper's VXLAN-in-GTP-U nesting, which
/// only the general parser takes), with every header byte changed in four
/// ways and cut at every length, gives the same verdict, totals and rule
/// statistics with the fast lane on as with it off.
#[test]
fn the_fast_lane_and_the_general_parser_agree_on_every_mutated_frame() {
    use detpath_classify::bench::{frame, rules_for, Encap};
    let mut c = load();
    let mut slots = Vec::new();
    for encap in Encap::ALL {
        for r in rules_for(encap, 2) {
            slots.push(c.install(&parse_intent(r.as_bytes()).unwrap(), None).unwrap().slot);
        }
    }
    let no_ext = build(
        &[
            Layer::eth(MAC_E, MAC_G),
            Layer::Ip { src: ip("10.0.0.1"), dst: ip("10.0.0.2") },
            Layer::Udp { sport: 2152, dport: 2152 },
            Layer::Gtpu { teid: 7, exts: vec![], msg_type: 0xff },
            Layer::Ip { src: ip("10.45.0.1"), dst: ip("10.45.0.2") },
            Layer::Udp { sport: 1000, dport: 2000 },
        ],
        &[0u8; 40],
    );
    let mut frames: Vec<Vec<u8>> = Encap::ALL.iter().map(|e| frame(*e, 132)).collect();
    frames.push(no_ext);
    frames.push(nested(false, vec![], 0x445, 0x10, vec![Layer::pdu_session(1)], "172.16.0.1", 5004));
    let mut checked = 0;
    for f in &frames {
        let mut variants: Vec<Vec<u8>> = (14..f.len()).map(|n| f[..n].to_vec()).collect();
        for i in 0..f.len().min(128) {
            for m in [|b: u8| b ^ 0x01, |b: u8| b ^ 0x80, |_| 0x00, |_| 0xff] {
                let mut g = f.clone();
                g[i] = m(g[i]);
                if g != *f {
                    variants.push(g);
                }
            }
        }
        for g in std::iter::once(f).chain(&variants) {
            c.set_fast_lane(true).unwrap();
            let fast = outcome(&c, &slots, g);
            c.set_fast_lane(false).unwrap();
            let general = outcome(&c, &slots, g);
            assert_eq!(fast, general, "fast lane and general parser differ on {g:02x?}");
            checked += 1;
        }
    }
    assert!(checked > 2000, "{checked} frames compared");
}
