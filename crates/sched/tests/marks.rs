//! A marked datagram through the slot scheduler: the mark's class picks the
//! slots it leaves in, and its DSCP reaches the wire when the slot releases
//! it (read back on the receiving side of the testbed). A class the
//! scheduler does not have is refused with the classes it has.
//!
//! Needs root (namespaces).

use detpath::testbed::{Testbed, TestbedConfig, WireTap};
use detpath::{Endpoint, Mark, RecvMode};
use std::net::{SocketAddrV4, UdpSocket};
use std::time::Duration;

#[test]
fn a_marks_class_picks_its_slots_and_its_dscp_reaches_the_wire() {
    if !detpath_testkit::need_root("a_marks_class_picks_its_slots_and_its_dscp_reaches_the_wire", "namespaces") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("smrk")).expect("testbed");
    let port = 7700;
    let sink = tb.b().run(|| UdpSocket::bind(SocketAddrV4::new(tb.b().addr, port))).unwrap().unwrap();
    let tap = WireTap::open(tb.b()).expect("tap");
    let peer = SocketAddrV4::new(tb.b().addr, port);
    // 50 µs slots, 20-slot ring: `ctl` (real time) owns positions 0, 5, 10, 15; `bulk` (best effort) 2, 7, 12, 17.
    let spec = format!("{}&sched=slots&slot_ns=50000&ring_slots=20&lead_slots=2&sched_mode=relaxed&classes=ctl:rt:0/5;bulk:be:2/5", tb.a().uri("udp", port + 1));
    let (frames, ctl_sent, bulk_sent) = tb
        .a()
        .run(|| {
            static LAYERS: detpath::layer::Registry = &[&detpath_sched::spec::LAYER];
            let parsed = detpath::EndpointSpec::parse_with(&spec, LAYERS).unwrap_or_else(|e| panic!("{spec}: {e}"));
            let mut ep = detpath_sched::open_slots(&parsed).unwrap_or_else(|e| panic!("{spec}: {e}"));
            let (ctl, bulk) = (ep.class_named("ctl").unwrap(), ep.class_named("bulk").unwrap());
            assert_eq!((ctl, bulk), (0, 1));
            let e = ep.class_named("video").unwrap_err().to_string();
            assert!(e.contains("`video`") && e.contains("ctl (rt), bulk (be)"), "{e}");
            let e = ep.send_marked(b"x", peer, Mark { dscp: 0, class: Some(7) }).unwrap_err().to_string();
            assert!(e.contains("class 7") && e.contains("ctl (rt), bulk (be)"), "{e}");
            for k in 0..5u8 {
                ep.send_marked(&[b'c', k], peer, Mark { dscp: 46, class: Some(ctl) }).unwrap();
                ep.send_marked(&[b'b', k], peer, Mark { dscp: 10, class: Some(bulk) }).unwrap();
            }
            // The endpoint's receive serves the slots while the tap reads.
            let mut buf = [0u8; 64];
            let frames = tap
                .read(Duration::from_secs(3), |f| {
                    let _ = ep.recv(&mut buf, RecvMode::NonBlocking);
                    f.iter().filter(|t| t.udp.as_ref().is_some_and(|u| u.0 == port + 1)).count() >= 10
                })
                .unwrap();
            let s = ep.scheduler();
            (frames, s.counters(0).map(|c| c.sent), s.counters(1).map(|c| c.sent))
        })
        .unwrap();
    drop(sink);
    let ours: Vec<_> = frames.iter().filter_map(|f| f.udp.as_ref().filter(|u| u.0 == port + 1).map(|u| (u.2[0], f.tos))).collect();
    assert_eq!(ours.len(), 10, "{frames:?}");
    for (kind, tos) in &ours {
        let want = if *kind == b'c' { 46 << 2 } else { 10 << 2 };
        assert_eq!(*tos, want, "a `{}` datagram left with TOS {tos:#04x}: {ours:?}", *kind as char);
    }
    assert_eq!((ctl_sent, bulk_sent), (Some(5), Some(5)), "each class released its own five");
}
