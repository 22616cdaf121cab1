//! Intents by traffic class: the XDP program matches the DSCP of the
//! innermost IP header (`dscp`, `priority`, `topic` intents), on every frame
//! shape, in the fast lane and the general parser alike, and the overload
//! rule protects a class as it protects a port. BPF_PROG_TEST_RUN over
//! crafted frames. Needs root.

use detpath_classify::frames::{build, Layer};
use detpath_classify::{parse_intent, AltNode, Classifier, DefaultAction, Rule, Settings};
use std::net::IpAddr;

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;
const XDP_TX: u32 = 3;

const MAC_E: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0e];
const MAC_G: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const EF: u8 = 46;
const PORT: u16 = 7400;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The shapes a class intent must see the innermost DSCP through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Ethernet / IPv4 / UDP (the fast lane).
    Plain,
    /// One VLAN tag in front (the general parser).
    Tagged,
    /// Ethernet / IPv6 / UDP (the general parser; the traffic class's DSCP).
    Ipv6,
    /// VXLAN around IPv4 / UDP (the fast lane).
    Vxlan,
    /// GTP-U with a PDU session extension around IPv4 / UDP (the fast lane).
    Gtpu,
}

const SHAPES: [Shape; 5] = [Shape::Plain, Shape::Tagged, Shape::Ipv6, Shape::Vxlan, Shape::Gtpu];

/// A datagram to `PORT` whose innermost IP header has `tos` (DSCP << 2 |
/// ECN) and whose outer header, in a tunnel, has `outer_tos`.
fn frame(shape: Shape, outer_tos: u8, tos: u8) -> Vec<u8> {
    let d = |t: u8| t >> 2;
    let v4 = |t: u8| Layer::IpDscp { src: ip("10.0.0.1"), dst: ip("10.0.0.2"), dscp: d(t) };
    let inner = Layer::IpDscp { src: ip("172.16.0.1"), dst: ip("172.17.0.1"), dscp: d(tos) };
    let udp = Layer::Udp { sport: 40000, dport: PORT };
    let layers = match shape {
        Shape::Plain => vec![Layer::eth(MAC_E, MAC_G), v4(tos), udp],
        Shape::Tagged => vec![Layer::Eth { dst: MAC_E, src: MAC_G, vlans: vec![(0x8100, 7)] }, v4(tos), udp],
        Shape::Ipv6 => vec![Layer::eth(MAC_E, MAC_G), Layer::IpDscp { src: ip("fd00::1"), dst: ip("fd00::2"), dscp: d(tos) }, udp],
        Shape::Vxlan => vec![
            Layer::eth(MAC_E, MAC_G),
            v4(outer_tos),
            Layer::Udp { sport: 49152, dport: 4789 },
            Layer::Vxlan { vni: 0x445 },
            Layer::eth([2, 0, 0, 0, 1, 2], [2, 0, 0, 0, 1, 1]),
            inner,
            udp,
        ],
        Shape::Gtpu => vec![
            Layer::eth(MAC_E, MAC_G),
            v4(outer_tos),
            Layer::Udp { sport: 2152, dport: 2152 },
            Layer::Gtpu { teid: 0x10, exts: vec![Layer::pdu_session(1)], msg_type: 0xff },
            inner,
            udp,
        ],
    };
    let mut f = build(&layers, b"class payload");
    // The ECN bits, which frames::build leaves 0, in every IPv4 header (the
    // program ignores the header checksum): they must not change the class.
    if tos & 3 != 0 {
        for at in 14..f.len().saturating_sub(1) {
            if f[at] == 0x45 && f[at + 1] == d(tos) << 2 {
                f[at + 1] |= tos & 3;
            }
        }
    }
    f
}

fn intent(resources: &str, action: &str) -> Rule {
    let s = format!(r#"{{"Resources": [{resources}], "Action": {{"actionType": "INSERT", {action}}}}}"#);
    parse_intent(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn load(test: &str) -> Option<Classifier> {
    if !detpath_testkit::need_root(test, "loads an XDP program") {
        return None;
    }
    Some(Classifier::load(64).expect("loading the classifier"))
}

/// A `dscp` intent matches the innermost header's DSCP on every shape,
/// with the fast lane on and off, whatever the ECN bits; a tunnel's outer
/// DSCP is not the flow's.
#[test]
fn a_dscp_intent_matches_the_innermost_dscp_on_every_shape() {
    let Some(mut c) = load("a_dscp_intent_matches_the_innermost_dscp_on_every_shape") else { return };
    let r = c.install(&intent(&format!(r#"{{"dscp": "EF", "dstPort": {PORT}}}"#), r#""actionName": "DROP""#), None).unwrap();
    for fast_lane in [true, false] {
        c.set_fast_lane(fast_lane).unwrap();
        for shape in SHAPES {
            let at = format!("{shape:?}, fast lane {fast_lane}");
            assert_eq!(c.test_run(&frame(shape, 0, EF << 2)).unwrap().0, XDP_DROP, "{at}: EF is the rule's");
            assert_eq!(c.test_run(&frame(shape, 0, EF << 2 | 3)).unwrap().0, XDP_DROP, "{at}: EF with ECN CE is still EF");
            assert_eq!(c.test_run(&frame(shape, 0, 0)).unwrap().0, XDP_PASS, "{at}: best effort is not");
            assert_eq!(c.test_run(&frame(shape, 0, 34 << 2)).unwrap().0, XDP_PASS, "{at}: AF41 is not");
            if matches!(shape, Shape::Vxlan | Shape::Gtpu) {
                assert_eq!(c.test_run(&frame(shape, EF << 2, 0)).unwrap().0, XDP_PASS, "{at}: an EF tunnel around a best-effort packet is not");
                assert_eq!(c.test_run(&frame(shape, 0x3f << 2, EF << 2)).unwrap().0, XDP_DROP, "{at}: the outer DSCP does not matter");
            }
        }
    }
    // 2 fast-lane settings x 5 shapes x 2 EF frames, and the 2 x 2 tunnels' EF inside another outer DSCP.
    assert_eq!(c.rule_stat(r.slot).packets, 2 * 5 * 2 + 2 * 2);
    assert_eq!(c.total("malformed").packets, 0);
}

/// Every DSCP and ECN value of the three fast-lane shapes gets the same
/// verdict from the fast lane as from the general parser, under a rule
/// matching a set of DSCPs.
#[test]
fn the_fast_lane_and_the_general_parser_agree_on_every_dscp() {
    let Some(mut c) = load("the_fast_lane_and_the_general_parser_agree_on_every_dscp") else { return };
    c.install(&intent(r#"{"dscp": ["CS1", "AF41..EF", 63]}"#, r#""actionName": "DROP""#), None).unwrap();
    let want = |d: u8| d == 8 || (34..=46).contains(&d) || d == 63;
    for shape in [Shape::Plain, Shape::Vxlan, Shape::Gtpu] {
        for tos in 0..=255u8 {
            let f = frame(shape, 0, tos);
            c.set_fast_lane(true).unwrap();
            let fast = c.test_run(&f).unwrap().0;
            c.set_fast_lane(false).unwrap();
            let general = c.test_run(&f).unwrap().0;
            assert_eq!(fast, general, "{shape:?} tos {tos:#04x}");
            assert_eq!(fast, if want(tos >> 2) { XDP_DROP } else { XDP_PASS }, "{shape:?} tos {tos:#04x}");
        }
    }
}

/// A `priority` range becomes the DSCPs its writers mark with (default
/// map): one kernel key per DSCP, one slot, one set of statistics; removing
/// the intent removes every key; a second intent overlapping its DSCPs is a
/// duplicate and leaves nothing half-installed.
#[test]
fn a_priority_range_is_one_class_with_one_counter() {
    let Some(mut c) = load("a_priority_range_is_one_class_with_one_counter") else { return };
    let r = c.install(&intent(r#"{"priority": "10..39", "protocol": "udp"}"#, r#""actionName": "DROP""#), None).unwrap();
    assert_eq!(r.keys.len(), 3, "AF21, AF31, AF41");
    assert_eq!(c.kernel_rule_count(), 3);
    for (dscp, verdict) in [(18, XDP_DROP), (26, XDP_DROP), (34, XDP_DROP), (10, XDP_PASS), (EF, XDP_PASS), (0, XDP_PASS)] {
        assert_eq!(c.test_run(&frame(Shape::Plain, 0, dscp << 2)).unwrap().0, verdict, "DSCP {dscp}");
    }
    assert_eq!(c.rule_stat(r.slot).packets, 3, "the class's three DSCPs in its one counter");
    let e = c.install(&intent(r#"{"dscp": ["AF41", "EF"], "protocol": "udp"}"#, r#""actionName": "PASS""#), None).unwrap_err();
    assert_eq!(e.code(), "duplicate");
    assert_eq!(c.kernel_rule_count(), 3, "nothing of the refused intent installed");
    c.remove(&r).unwrap();
    assert_eq!(c.kernel_rule_count(), 0);
    assert_eq!(c.kernel_mask_count(), 0);
    assert_eq!(c.test_run(&frame(Shape::Plain, 0, 18 << 2)).unwrap().0, XDP_PASS);
}

/// Paper 004's overload rule by class: with the host overloaded, the
/// control topic's class (by its priority) stays on this host, while the
/// best-effort class on the same port is forwarded to the alternative node
/// (by its rule, plain or inside GTP-U);
/// beyond the saturation rate the control class's excess goes too, as a
/// port intent's does.
#[test]
fn the_overload_rule_keeps_the_control_class_and_forwards_best_effort() {
    let Some(mut c) = load("the_overload_rule_keeps_the_control_class_and_forwards_best_effort") else { return };
    let mut s = Settings {
        load_flag: true,
        alt_nodes: vec![AltNode { mac: [0x02, 0, 0, 0, 0, 0xaa], ip: ip("10.0.0.170") }],
        default_action: DefaultAction::Forward,
        ..Settings::default()
    };
    c.apply_settings(&s).unwrap();
    let control = c.install(&intent(&format!(r#"{{"topic": "Control", "priority": 40, "dstPort": {PORT}}}"#), r#""actionName": "PASS""#), None).unwrap();
    let bulk = c
        .install(&intent(&format!(r#"{{"dscp": "CS0", "dstPort": {PORT}, "protocol": "udp"}}"#), r#""actionName": "FORWARD_WHEN_OVERLOADED", "alt_node": 0"#), None)
        .unwrap();
    for shape in [Shape::Plain, Shape::Gtpu] {
        for round in 0..10 {
            assert_eq!(c.test_run(&frame(shape, 0, EF << 2)).unwrap().0, XDP_PASS, "{shape:?} round {round}: control stays");
            assert_eq!(c.test_run(&frame(shape, 0, 0)).unwrap().0, XDP_TX, "{shape:?} round {round}: best effort forwarded");
        }
    }
    assert_eq!(c.rule_stat(control.slot).packets, 20);
    assert_eq!(c.rule_stat(control.slot).forwarded, 0);
    assert_eq!(c.rule_stat(bulk.slot).forwarded, 20, "both shapes' best effort matched the CS0 rule");
    assert_eq!(c.total("forward").packets, 20);
    // Not overloaded: both classes are served here.
    s.load_flag = false;
    c.apply_settings(&s).unwrap();
    assert_eq!(c.test_run(&frame(Shape::Plain, 0, 0)).unwrap().0, XDP_PASS);
    // Saturation at 1 pps over a 10 s window: 10 frames per window on this
    // CPU (pinned: the rate is per CPU); the control class's frames past
    // them are the excess, and go to the alternative node too.
    pin_cpu0();
    s.rate_threshold_pps = 1;
    s.saturation_pps = 1;
    s.window_us = 10_000_000;
    c.apply_settings(&s).unwrap();
    let verdicts: Vec<u32> = (0..30).map(|_| c.test_run(&frame(Shape::Plain, 0, EF << 2)).unwrap().0).collect();
    assert_eq!(verdicts[..10], [XDP_PASS; 10], "within the saturation rate: control stays");
    assert_eq!(verdicts[10..], [XDP_TX; 20], "beyond it: the excess is forwarded");
}

fn pin_cpu0() {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// `classify bench --encap udp_dscp`: the EF-marked frame against rules by
/// class; with rules its rule drops it, without it passes, like every cell.
#[test]
fn the_bench_has_a_class_cell() {
    use detpath_classify::bench::{self, BenchOptions, Encap};
    if !detpath_testkit::need_root("the_bench_has_a_class_cell", "namespaces and XDP") {
        return;
    }
    let o = BenchOptions {
        duration: std::time::Duration::from_millis(50),
        sizes: vec![132],
        rules: vec![0, 1, 16],
        encaps: vec![Encap::UdpDscp],
        cpus: vec![1],
        test_run_repeat: 1000,
        ..BenchOptions::default()
    };
    let r = bench::run(&o, &mut |_| {}).expect("bench runs");
    assert_eq!(r.cells.len(), 2 + 3, "two anchors and three classifier cells");
    for c in &r.cells {
        assert_eq!(serde_json::to_value(c).unwrap()["encap"], "udp_dscp");
        assert!(c.frames_seen > 0, "{c:?}");
        if c.program == "classify" {
            assert_eq!(c.verdict, if c.rules == 0 { "pass" } else { "drop" }, "{c:?}");
            assert_eq!(c.frames_dropped, if c.rules == 0 { 0 } else { c.frames_seen }, "the class rule drops the frame: {c:?}");
        }
    }
}
