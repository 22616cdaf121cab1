//! Frame endpoints (`detpath::FrameEndpoint`: payloads in Ethernet frames of
//! one EtherType) over the testbed's veth pair: `packet` (AF_PACKET) and
//! `afxdp` (AF_XDP behind the EtherType filter) carry frames to each other
//! both ways, byte for byte with the sender's MAC; frames of the EtherType
//! to another host's MAC are counted as not for us; IP traffic keeps
//! reaching the kernel while the EtherType program is attached.
//!
//! Needs root (namespaces, AF_PACKET, XDP). Namespaces `detpath-frm-<pid>-<n>-{a,b}`.

mod common;

use common::assert_no_xdp;
use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath::{FrameEndpoint, MacAddr, RecvMode};
use std::net::UdpSocket;
use std::time::Duration;

const ETHERTYPE: u16 = 0x88b5; // IEEE local experimental EtherType 1
const WAIT: RecvMode = RecvMode::Blocking { timeout: Some(Duration::from_secs(2)) };

fn open_in(side: &Side, spec: &str) -> Box<dyn FrameEndpoint> {
    let spec = spec.to_string();
    side.run(move || detpath_open::open_frames(&spec)).expect("enter namespace").unwrap_or_else(|e| panic!("open frames: {e}"))
}

fn mac(side: &Side) -> MacAddr {
    MacAddr::parse(&side.mac).unwrap()
}

fn fill(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (i.wrapping_mul(131) ^ k.wrapping_mul(7)) as u8).collect()
}

/// The payload came through: exactly, or (a sender that pads to the 60-byte
/// Ethernet minimum, as dpdk does and real NICs do) followed by zeros to 46 bytes.
fn same_payload(got: &[u8], sent: &[u8]) -> bool {
    got.len() >= sent.len() && got[..sent.len()] == *sent && (got.len() == sent.len() || (got.len() == 46 && got[sent.len()..].iter().all(|b| *b == 0)))
}

/// `a` sends frames of many sizes to `b`, `b` echoes each back: every byte and the source MAC checked.
fn exchange(tb: &Testbed, a_dp: &str, b_dp: &str) {
    // dpdk here is net_af_xdp over the veth end, without hugepages.
    let spec = |dp: &str, s: &Side| format!("{dp}://{}?port={ETHERTYPE}{}", s.iface, if dp == "dpdk" { "&huge=off" } else { "" });
    let mut b = open_in(tb.b(), &spec(b_dp, tb.b()));
    let mut a = open_in(tb.a(), &spec(a_dp, tb.a()));
    println!("{a_dp} -> {b_dp}: {} / {}", a.capabilities().summary(), b.capabilities().summary());
    assert_eq!(a.local_mac(), mac(tb.a()));
    assert_eq!(b.ethertype(), ETHERTYPE);
    let max = a.capabilities().max_payload.min(b.capabilities().max_payload);
    assert!(max >= 1500 - 64, "about an MTU's worth of payload (no IP/UDP headers): {max}");
    let mut buf = vec![0u8; 2048];
    for (i, len) in [1usize, 2, 45, 46, 47, 100, 1000, max - 1, max].into_iter().enumerate() {
        let p = fill(i, len);
        a.send_frame(&p, mac(tb.b()), ETHERTYPE).unwrap();
        let m = b.recv_frame(&mut buf, WAIT).unwrap().unwrap_or_else(|| panic!("{a_dp}->{b_dp}: frame {i} ({len} B) not received"));
        assert_eq!(m.src, mac(tb.a()));
        assert!(same_payload(&buf[..m.len], &p), "{a_dp}->{b_dp}: payload {i} ({len} B), got {} B", m.len);
        b.send_frame(&p, m.src, ETHERTYPE).unwrap();
        let m = a.recv_frame(&mut buf, WAIT).unwrap().unwrap_or_else(|| panic!("{b_dp}->{a_dp}: echo {i} not received"));
        assert_eq!(m.src, mac(tb.b()));
        assert!(same_payload(&buf[..m.len], &p), "{b_dp}->{a_dp}: echo {i} ({len} B), got {} B", m.len);
    }
    assert!(a.send_frame(&vec![0u8; max + 1], mac(tb.b()), ETHERTYPE).is_err(), "a payload above the MTU is refused");
    let (ca, cb) = (a.counters(), b.counters());
    assert_eq!((ca.rx_packets, cb.rx_packets), (9, 9), "{ca:?} {cb:?}");
    assert_eq!(ca.rx_malformed + cb.rx_malformed, 0);

    // A frame of our EtherType for another host's MAC (the veth delivers it anyway): not for us.
    let other = MacAddr([0x02, 0x64, 0x70, 0, 0, 0x99]);
    a.send_frame(b"not yours", other, ETHERTYPE).unwrap();
    a.send_frame(b"yours", mac(tb.b()), ETHERTYPE).unwrap();
    let m = b.recv_frame(&mut buf, WAIT).unwrap().expect("the frame for b");
    assert!(same_payload(&buf[..m.len], b"yours"));
    assert!(b.counters().rx_not_for_me >= 1, "{b_dp}: {:?}", b.counters());
}

#[test]
fn packet_and_afxdp_frames_cross_both_ways() {
    let tb = Testbed::up(TestbedConfig::unique("frm")).expect("testbed up (needs root)");
    for (a, b) in [("packet", "packet"), ("packet", "afxdp"), ("afxdp", "packet"), ("afxdp", "afxdp")] {
        exchange(&tb, a, b);
    }
    assert_no_xdp(tb.a());
    assert_no_xdp(tb.b());
}

#[test]
fn dpdk_frames_cross_to_packet_and_afxdp() {
    let tb = Testbed::up(TestbedConfig::unique("frm")).expect("testbed up (needs root)");
    for (a, b) in [("packet", "dpdk"), ("dpdk", "afxdp")] {
        exchange(&tb, a, b);
    }
    assert_no_xdp(tb.a());
    assert_no_xdp(tb.b());
}

#[test]
fn xdppoll_frames_cross_to_packet_afxdp_and_itself() {
    let tb = Testbed::up(TestbedConfig::unique("frm")).expect("testbed up (needs root)");
    for (a, b) in [("packet", "xdppoll"), ("xdppoll", "afxdp"), ("xdppoll", "xdppoll")] {
        exchange(&tb, a, b);
    }
    assert_no_xdp(tb.a());
    assert_no_xdp(tb.b());
}

#[test]
fn ip_traffic_reaches_the_kernel_beside_an_ethertype_program() {
    let tb = Testbed::up(TestbedConfig::unique("frm")).expect("testbed up (needs root)");
    let spec = format!("afxdp://{}?port={ETHERTYPE}", tb.b().iface);
    let ep = open_in(tb.b(), &spec);
    let bip = tb.b().addr;
    let server = tb.b().run(|| UdpSocket::bind((bip, 7001)).unwrap()).unwrap();
    server.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let a = tb.a().addr;
    tb.a().run(|| UdpSocket::bind((a, 0)).unwrap().send_to(b"kernel", (bip, 7001)).unwrap()).unwrap();
    let mut buf = [0u8; 16];
    let (n, _) = server.recv_from(&mut buf).expect("UDP (and ARP before it) reach the kernel past the EtherType program");
    assert_eq!(&buf[..n], b"kernel");
    let c = ep.counters();
    assert!(c.rx_not_for_me >= 2, "ARP and IPv4 passed by the program are counted: {c:?}");
    assert_eq!(c.rx_packets, 0);
    drop(ep);
    assert_no_xdp(tb.b());
}

#[test]
fn a_frame_spec_with_rt_keys_opens_on_a_pinned_thread() {
    let tb = Testbed::up(TestbedConfig::unique("frm")).expect("testbed up (needs root)");
    let spec = format!("packet://{}?port={ETHERTYPE}&rt_core=0", tb.b().iface);
    // A thread of its own: the keys pin the opening thread.
    let (plain, pinned) = tb
        .b()
        .spawn(move || {
            let plain = detpath_open::open_frames(&spec.replace("&rt_core=0", "")).unwrap().capabilities().notes.len();
            let ep = detpath_open::open_frames(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            let cpus = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            assert!(cpus.lines().any(|l| l.split_once(':').is_some_and(|(k, v)| k == "Cpus_allowed_list" && v.trim() == "0")), "not pinned to core 0: {cpus}");
            (plain, ep.capabilities().notes.len())
        })
        .join()
        .unwrap()
        .unwrap();
    assert!(pinned >= plain, "the real-time setup's notes join the endpoint's: {plain} vs {pinned}");
}
