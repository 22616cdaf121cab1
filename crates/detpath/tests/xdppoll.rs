//! The `xdppoll` datapath over a real veth pair between two namespaces:
//! an XDP program copies this endpoint's frames into a BPF ring buffer,
//! busy-polled from user space; transmit through a kernel UDP socket.
//!
//! Needs root (namespaces, XDP). Each test makes its own uniquely named
//! namespaces and removes them on drop, even when it fails.

mod common;

use common::{assert_malformed_frames_counted, assert_no_xdp, assert_other_traffic_reaches_the_kernel};
use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath::{Endpoint, Error, RecvMode, XdpMode};
use std::net::UdpSocket;
use std::time::Duration;

const PORT: u16 = 9100;
const WAIT: RecvMode = RecvMode::BusyPoll { timeout: Some(Duration::from_secs(2)) };

fn open_in(side: &Side, port: u16, extra: &str) -> detpath::Result<Box<dyn Endpoint>> {
    let uri = format!("{}{extra}", side.uri("xdppoll", port));
    side.run(|| detpath_open::open(&uri)).expect("enter namespace")
}

/// Echo to a kernel UDP client in both XDP modes, sizes 1..=max, every byte;
/// each receive mode hands the datagram over with a timestamp.
#[test]
fn echo_to_kernel_udp_in_both_modes() {
    let tb = Testbed::up(TestbedConfig::unique("xpoll")).unwrap();
    for (mode, want) in [("skb", XdpMode::Skb), ("native", XdpMode::Native)] {
        let mut ep = open_in(tb.b(), PORT, &format!("&mode={mode}")).unwrap_or_else(|e| panic!("xdppoll mode={mode}: {e}"));
        assert_eq!(ep.capabilities().xdp_mode, Some(want));
        let max = ep.capabilities().max_payload;
        assert_eq!(max, 1472);
        let server = ep.local_addr();
        let client = tb.a().run(|| UdpSocket::bind((tb.a().addr, 0)).unwrap()).unwrap();
        client.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let (mut out, mut buf, mut back) = (vec![0u8; 2048], vec![0u8; 2048], vec![0u8; 2048]);
        let modes = [WAIT, RecvMode::Blocking { timeout: Some(Duration::from_secs(2)) }];
        for len in (1..=max).step_by(7).chain([max]) {
            for (k, b) in out[..len].iter_mut().enumerate() {
                *b = (len ^ k) as u8;
            }
            client.send_to(&out[..len], server).unwrap();
            let before = detpath::monotonic_ns();
            let rx = ep.recv(&mut buf, modes[len % 2]).unwrap().unwrap_or_else(|| panic!("{mode}: {len} B not received"));
            assert!(rx.rx_ns >= before, "receive timestamp taken on receipt");
            assert_eq!(&buf[..rx.len], &out[..len], "{mode}: {len} B");
            ep.send_to(&buf[..rx.len], rx.peer).unwrap();
            let (n, _) = client.recv_from(&mut back).unwrap();
            assert_eq!(&back[..n], &out[..len]);
        }
        let c = ep.counters();
        assert_eq!((c.rx_malformed, c.rx_kernel_dropped), (0, 0), "{c:?}");
        assert_eq!(c.rx_packets, c.tx_packets);
        drop(ep);
        assert_no_xdp(tb.b());
    }
}

#[test]
fn other_traffic_still_reaches_the_kernel() {
    let tb = Testbed::up(TestbedConfig::unique("xpoll")).unwrap();
    for mode in ["skb", "native"] {
        let ep = open_in(tb.b(), PORT, &format!("&mode={mode}")).unwrap();
        assert_other_traffic_reaches_the_kernel(&tb, ep.as_ref(), PORT, &format!("xdppoll {mode}"));
        drop(ep);
        assert_no_xdp(tb.b());
    }
}

/// Bad checksums, fragments, truncation and lying lengths are counted in
/// `rx_malformed` (the program copies every frame for our address and port;
/// user space parses and verifies) and never delivered; IPv4 options are fine.
#[test]
fn malformed_frames_are_counted_and_dropped() {
    let tb = Testbed::up(TestbedConfig::unique("xpoll")).unwrap();
    let mut ep = open_in(tb.b(), PORT, "&mode=native").unwrap();
    assert_malformed_frames_counted(&tb, ep.as_mut());
    drop(ep);
    assert_no_xdp(tb.b());
}

#[test]
fn bad_input_is_named() {
    let tb = Testbed::up(TestbedConfig::unique("xpoll")).unwrap();
    let e = open_in(tb.b(), PORT, "&nonsense=1").err().expect("unknown key refused");
    assert!(e.to_string().contains("xdppoll datapath has no key `nonsense`"), "{e}");
    // `ring` is AF_XDP's, not xdppoll's (its BPF ring size is fixed): refused by name too.
    let e = open_in(tb.b(), PORT, "&ring=64").err().expect("another datapath's key refused");
    assert!(matches!(&e, Error::UnsupportedKey { datapath: "xdppoll", key, .. } if key == "ring"), "{e}");
    let e = tb.b().run(|| detpath_open::open(&format!("xdppoll://nosuch0?port={PORT}"))).unwrap().err().expect("missing interface");
    assert!(matches!(e, Error::Sys(detpath::sys::Error::NoSuchInterface { .. })), "{e}");
    // Two endpoints on one interface: the second is refused, naming the first's program.
    let first = open_in(tb.b(), PORT, "").unwrap();
    let e = open_in(tb.b(), PORT + 2, "").err().expect("second XDP program refused");
    assert!(matches!(e, Error::Sys(detpath::sys::Error::XdpBusy { .. })), "{e}");
    drop(first);
    assert_no_xdp(tb.b());
}
