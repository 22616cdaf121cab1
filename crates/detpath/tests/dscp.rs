//! A datagram's DSCP goes on the wire as its sender marked it, on every
//! datapath: the kernel writes it for `udp` and `xdppoll` (an `IP_TOS`
//! control message per datagram), afxdp and dpdk in the headers they build,
//! every fragment of a large datagram included. Read back with an AF_PACKET
//! socket on the receiving side of the testbed (`testbed::WireTap`), not
//! from the sender's own account. A class in a mark needs a slot scheduler:
//! without one it is refused, naming the fix.
//!
//! Needs root (namespaces, XDP, DPDK's EAL).

use detpath::testbed::{TappedFrame, Testbed, TestbedConfig, WireTap};
use detpath::{Mark, RecvMode};
use std::collections::HashMap;
use std::net::{SocketAddrV4, UdpSocket};
use std::time::Duration;

/// (tag, DSCP, payload size): unmarked, EF, AF11, and a fragmented one (CS4).
const CASES: [(&str, u8, usize); 4] = [("plain", 0, 64), ("ef", 46, 64), ("af11", 10, 200), ("big", 32, 3000)];

fn payload(tag: &str, len: usize) -> Vec<u8> {
    let mut p = format!("dscp-{tag}-").into_bytes();
    p.resize(len, 0x5a);
    p
}

/// Every frame of each case's datagram (by the IP id of its tagged first
/// fragment) and the TOS bytes they carried.
fn tos_by_case(frames: &[TappedFrame], src_port: u16) -> HashMap<&'static str, Vec<u8>> {
    let mut ids = HashMap::new();
    for f in frames {
        if let Some((sport, _, head)) = &f.udp {
            for (tag, _, _) in CASES {
                if *sport == src_port && head.starts_with(format!("dscp-{tag}-").as_bytes()) {
                    ids.insert(f.ip_id, tag);
                }
            }
        }
    }
    let mut out: HashMap<&'static str, Vec<u8>> = HashMap::new();
    for f in frames {
        if let Some(tag) = ids.get(&f.ip_id) {
            out.entry(tag).or_default().push(f.tos);
        }
    }
    out
}

fn every_case_arrived(frames: &[TappedFrame], src_port: u16) -> bool {
    let got = tos_by_case(frames, src_port);
    // The 3000-byte datagram is three frames on a 1500-byte link.
    CASES.iter().all(|(tag, _, len)| got.get(tag).map_or(0, Vec::len) >= if *len > 1400 { 3 } else { 1 })
}

#[test]
fn every_datapath_writes_each_datagrams_dscp_into_every_frame_it_sends() {
    if !detpath_testkit::need_root("every_datapath_writes_each_datagrams_dscp_into_every_frame_it_sends", "namespaces, XDP, DPDK") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("dscp")).expect("testbed");
    for (i, dp) in ["udp", "afxdp", "xdppoll", "dpdk"].into_iter().enumerate() {
        let port = 7600 + 2 * i as u16;
        // A kernel socket takes the datagrams on side b (no ICMP back); the tap reads their headers.
        let sink = tb.b().run(|| UdpSocket::bind(SocketAddrV4::new(tb.b().addr, port))).unwrap().unwrap();
        let tap = WireTap::open(tb.b()).expect("tap on side b");
        let spec = tb.a().uri(dp, port + 1);
        let peer = SocketAddrV4::new(tb.b().addr, port);
        let frames = tb
            .a()
            .run(|| {
                let mut ep = detpath_open::open(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
                for (tag, dscp, len) in CASES {
                    ep.send_marked(&payload(tag, len), peer, Mark::dscp(dscp).unwrap()).unwrap_or_else(|e| panic!("{dp} {tag}: {e}"));
                }
                // A class needs a scheduler on the endpoint.
                let e = ep.send_marked(b"x", peer, Mark { dscp: 0, class: Some(1) }).unwrap_err().to_string();
                assert!(e.contains("no slot scheduler") && e.contains("sched=slots"), "{dp}: {e}");
                let e = ep.class_named("control").unwrap_err().to_string();
                assert!(e.contains("traffic class `control`") && e.contains("sched=slots"), "{dp}: {e}");
                // Receiving drives what afxdp and dpdk parked while the peer's MAC resolved.
                let mut buf = [0u8; 2048];
                tap.read(Duration::from_secs(5), |f| {
                    let _ = ep.recv(&mut buf, RecvMode::NonBlocking);
                    every_case_arrived(f, port + 1)
                })
                .unwrap()
            })
            .unwrap();
        drop(sink);
        let got = tos_by_case(&frames, port + 1);
        for (tag, dscp, _) in CASES {
            let toses = got.get(tag).unwrap_or_else(|| panic!("{dp}: no `{tag}` datagram on the wire: {frames:?}"));
            assert!(toses.iter().all(|&t| t == dscp << 2), "{dp} {tag}: TOS {toses:02x?}, want DSCP {dscp} ({:#04x})", dscp << 2);
        }
        assert_eq!(got["big"].len(), 3, "{dp}: the 3000-byte datagram's fragments");
    }
}

#[test]
fn a_dscp_has_six_bits() {
    assert_eq!(Mark::dscp(63).unwrap().tos(), 0xfc);
    assert_eq!(Mark::dscp(46).unwrap().tos(), 0xb8);
    let e = Mark::dscp(64).unwrap_err().to_string();
    assert!(e.contains("dscp=64") && e.contains("six bits"), "{e}");
}
