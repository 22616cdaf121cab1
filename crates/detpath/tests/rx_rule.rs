//! One receive rule: the same odd frames, injected raw from namespace a
//! (AF_PACKET), at an afxdp, an xdppoll and a dpdk endpoint on side b must
//! count the same: delivered, not for me, malformed (the rule is
//! `crates/detpath/src/datapath/rx_rule.rs`). A good frame after the odd
//! ones marks the end; the counters compared are the differences across the
//! injection. The odd frames come from an off-link source (10.99.0.1), so
//! the kernel of side b, which sees the frames the XDP datapaths pass, sends
//! no ARP or ICMP back that would count on b.
//!
//! Needs root (namespaces, XDP; DPDK from Debian's libdpdk).

mod common;

use common::{assert_no_xdp, inject};
use detpath::testbed::{Testbed, TestbedConfig};
use detpath::{Counters, Endpoint, RecvMode};
use detpath_wire::ipv4::{self, Ipv4Packet};
use detpath_wire::{build_udp_fragment, build_udp_frame, ethernet, udp, MacAddr, UdpFrameHeader, ETH_HLEN, IPV4_HLEN};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

/// What each odd frame must count as, on every datapath.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    NotForMe,
    Malformed,
    /// Part of a datagram that is delivered (fragments: the last one delivers).
    Delivered,
    Held,
}

struct Odd {
    what: &'static str,
    frame: Vec<u8>,
    want: Want,
}

fn odd_frames(src_mac: MacAddr, dst_mac: MacAddr, dst: SocketAddrV4) -> (Vec<Odd>, Vec<u8>) {
    let src = SocketAddrV4::new(Ipv4Addr::new(10, 99, 0, 1), 4444);
    let h = |dst: SocketAddrV4, id: u16| UdpFrameHeader { src_mac, dst_mac, src, dst, ip_id: id, ttl: 64, tos: 0 };
    let built = |dst: SocketAddrV4, p: &[u8]| {
        let mut f = vec![0u8; 2048];
        let n = build_udp_frame(&mut f, &h(dst, 1), p).unwrap();
        f.truncate(n);
        f
    };
    let refill = |f: &mut Vec<u8>| Ipv4Packet::new_unchecked(&mut f[ETH_HLEN..]).fill_checksum();
    let mut v = Vec::new();
    let mut push = |what, frame, want| v.push(Odd { what, frame, want });

    push("our port, another address", built(SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 99), dst.port()), b"other address"), Want::NotForMe);
    push("our address, another port", built(SocketAddrV4::new(*dst.ip(), dst.port() + 3), b"other port"), Want::NotForMe);
    let mut f = built(dst, b"other ethertype");
    ethernet::EthernetFrame::new_unchecked(&mut f[..]).set_ethertype(0x88b5);
    push("another EtherType", f, Want::NotForMe);
    let mut f = built(dst, b"vlan");
    ethernet::EthernetFrame::new_unchecked(&mut f[..]).set_ethertype(0x8100);
    push("VLAN-tagged", f, Want::NotForMe);
    push("runt (Ethernet header and 6 bytes of IPv4)", built(dst, b"runt")[..ETH_HLEN + 6].to_vec(), Want::NotForMe);
    let mut f = built(dst, b"ihl four");
    f[ETH_HLEN + ipv4::field::VER_IHL] = 0x44;
    push("IHL 4", f, Want::NotForMe);
    let mut f = built(dst, b"tcp");
    f[ETH_HLEN + ipv4::field::PROTOCOL] = 6;
    refill(&mut f);
    push("TCP to our address", f, Want::NotForMe);

    let mut f = built(dst, b"truncated datagram");
    f.truncate(f.len() - 4);
    push("truncated (IPv4 total length past the frame)", f, Want::Malformed);
    let mut f = built(dst, b"bad ip checksum");
    f[ETH_HLEN + ipv4::field::TTL] ^= 0x55;
    push("bad IPv4 header checksum", f, Want::Malformed);
    let mut f = built(dst, b"bad udp length");
    let at = ETH_HLEN + IPV4_HLEN + udp::field::LENGTH.start;
    f[at + 1] = f[at + 1].wrapping_add(10);
    push("UDP length beyond the packet", f, Want::Malformed);
    let mut f = built(dst, b"bad udp checksum");
    *f.last_mut().unwrap() ^= 0xff;
    push("bad UDP checksum", f, Want::Malformed);
    let mut f = built(dst, b"lone first fragment");
    let flags = ETH_HLEN + ipv4::field::FLG_OFF.start;
    f[flags] = (f[flags] | (ipv4::FLAG_MF >> 8) as u8) & !((ipv4::FLAG_DF >> 8) as u8);
    refill(&mut f);
    push("first fragment of a length not a multiple of 8", f, Want::Malformed);

    // A 3000-byte datagram in three fragments: held, held, delivered.
    let payload: Vec<u8> = (0..3000).map(|i| (i * 7) as u8).collect();
    for k in 0..3 {
        let mut f = vec![0u8; 2048];
        let n = build_udp_fragment(&mut f, &h(dst, 77), &payload, 1500, k).unwrap();
        f.truncate(n);
        push("fragment of a 3000-byte datagram", f, if k < 2 { Want::Held } else { Want::Delivered });
    }
    (v, built(dst, b"the end"))
}

/// The receive counters.
fn rx(c: &Counters) -> [u64; 4] {
    [c.rx_packets, c.rx_not_for_me, c.rx_malformed, c.rx_truncated]
}

#[test]
fn the_same_odd_frames_count_the_same_on_afxdp_xdppoll_and_dpdk() {
    let tb = Testbed::up(TestbedConfig::unique("rxr")).expect("testbed up (needs root)");
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let (a_mac, b_mac) = (MacAddr::parse(&a.mac).unwrap(), MacAddr::parse(&b.mac).unwrap());
    let mut datapaths = vec!["afxdp", "xdppoll"];
    if cfg!(feature = "dpdk") {
        datapaths.push("dpdk");
    }
    let mut seen = Vec::new();
    for (i, dp) in datapaths.iter().enumerate() {
        let port = 7600 + 10 * i as u16;
        let uri = b.uri(dp, port) + if *dp == "dpdk" { "&huge=off" } else { "" };
        let mut ep: Box<dyn Endpoint> = b.run(|| detpath_open::open(&uri)).unwrap().unwrap_or_else(|e| panic!("{uri}: {e}"));
        let (odd, end) = odd_frames(a_mac, b_mac, ep.local_addr());
        let before = rx(&ep.counters());
        let mut frames: Vec<Vec<u8>> = odd.iter().map(|o| o.frame.clone()).collect();
        frames.push(end);
        inject(&a, &frames);
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        loop {
            let m = ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_secs(5)) }).unwrap();
            let m = m.unwrap_or_else(|| panic!("{dp}: the end frame never came; delivered so far: {got:?}"));
            got.push(m.len);
            if &buf[..m.len] == b"the end" {
                break;
            }
            assert_eq!(m.len, 3000, "{dp}: delivered something odd: {:?}", &buf[..m.len.min(40)]);
        }
        let after = rx(&ep.counters());
        let delta: Vec<u64> = after.iter().zip(before).map(|(x, y)| x - y).collect();
        let count = |w: Want| odd.iter().filter(|o| o.want == w).count() as u64;
        let want = vec![count(Want::Delivered) + 1, count(Want::NotForMe), count(Want::Malformed), 0];
        eprintln!("{dp}: rx_packets, rx_not_for_me, rx_malformed, rx_truncated = {delta:?}");
        assert_eq!(
            delta,
            want,
            "{dp}: counters [rx_packets, rx_not_for_me, rx_malformed, rx_truncated] across the odd frames: {:?}",
            odd.iter().map(|o| (o.what, o.want)).collect::<Vec<_>>()
        );
        assert_eq!(got, vec![3000, 7], "{dp}: the reassembled datagram, then the end");
        seen.push((dp, delta));
        drop(ep);
        if *dp != "dpdk" {
            assert_no_xdp(&b);
        }
    }
    assert!(seen.windows(2).all(|w| w[0].1 == w[1].1), "not the same everywhere: {seen:?}");
}
