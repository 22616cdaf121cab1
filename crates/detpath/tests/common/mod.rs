//! What the XDP datapaths' tests share: checks that no XDP program is left,
//! the "other traffic still reaches the kernel" check, and a set of
//! malformed frames injected through AF_PACKET.

// Each test binary that includes this module uses only some of its helpers;
// the others would be dead code in that binary.
#![allow(dead_code)]

use detpath::sys::netdev::NetDev;
use detpath::testbed::{Side, Testbed};
use detpath::{Endpoint, RecvMode};
use detpath_wire::ipv4::{self, Ipv4Packet};
use detpath_wire::{build_udp_frame, udp, MacAddr, UdpFrameHeader, UdpPacket, ETH_HLEN, HEADERS_LEN, IPV4_HLEN};
use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::time::Duration;

/// No XDP program left on the side's interface, by the kernel's query and by `ip -d link`.
pub fn assert_no_xdp(side: &Side) {
    let attached = side.run(|| detpath::sys::xdp::query(NetDev::lookup(&side.iface).unwrap().ifindex).unwrap()).unwrap();
    assert_eq!(attached.any(), None, "XDP program left on {}: {attached:?}", side.iface);
    let out = std::process::Command::new("ip").args(["-n", &side.netns, "-d", "link", "show", "dev", &side.iface]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("prog/xdp"), "ip -d link still shows XDP: {text}");
}

/// While `ep` (on side b, UDP port `port`) is open, a kernel UDP socket on
/// port + 1 and a TCP listener on `port` of the same address still get their
/// traffic from side a; the endpoint receives none of it and counts it as
/// not for it.
pub fn assert_other_traffic_reaches_the_kernel(tb: &Testbed, ep: &dyn Endpoint, port: u16, what: &str) {
    let b = tb.b().addr;
    let (udp, tcp) = tb.b().run(|| (UdpSocket::bind((b, port + 1)).unwrap(), TcpListener::bind((b, port)).unwrap())).unwrap();
    udp.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let a = tb.a().addr;
    let (csock, conn) = tb
        .a()
        .run(|| {
            let c = UdpSocket::bind((a, 0)).unwrap();
            c.send_to(b"kernel udp", (b, port + 1)).unwrap();
            let t = TcpStream::connect_timeout(&SocketAddrV4::new(b, port).into(), Duration::from_secs(2));
            (c, t)
        })
        .unwrap();
    let mut buf = [0u8; 64];
    let (n, _) = udp.recv_from(&mut buf).unwrap_or_else(|e| panic!("{what}: UDP to another port did not reach the kernel: {e}"));
    assert_eq!(&buf[..n], b"kernel udp");
    let mut conn = conn.unwrap_or_else(|e| panic!("{what}: TCP connect to the same address failed: {e}"));
    let (mut accepted, _) = tcp.accept().unwrap();
    conn.write_all(b"tcp ok").unwrap();
    let mut got = [0u8; 6];
    accepted.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"tcp ok");
    let c = ep.counters();
    assert!(c.rx_not_for_me >= 3, "{what}: passed frames not counted: {c:?}");
    assert_eq!(c.rx_packets, 0, "{what}: the endpoint took traffic that was not its own");
    drop((csock, accepted, conn));
}

/// Frames for `dst` from side a: each malformed one named, then one with
/// IPv4 options (valid: delivered) and one good frame.
pub struct FrameSet {
    pub bad: Vec<(&'static str, Vec<u8>)>,
    pub with_options: Vec<u8>,
    pub good: Vec<u8>,
}

fn fix_ip_csum(f: &mut [u8]) {
    Ipv4Packet::new_unchecked(&mut f[ETH_HLEN..]).fill_checksum();
}

/// The byte of IPv4 header field `at` in a frame.
const fn ip(at: usize) -> usize {
    ETH_HLEN + at
}

/// Builds the frame set from side a (`src`) to `dst` on side b.
pub fn frame_set(tb: &Testbed, src: SocketAddrV4, dst: SocketAddrV4) -> FrameSet {
    let h = UdpFrameHeader { src_mac: MacAddr::parse(&tb.a().mac).unwrap(), dst_mac: MacAddr::parse(&tb.b().mac).unwrap(), src, dst, ip_id: 1, ttl: 64, tos: 0 };
    let good = |p: &[u8]| {
        let mut f = vec![0u8; 2048];
        let n = build_udp_frame(&mut f, &h, p).unwrap();
        f.truncate(n);
        f
    };
    let mut bad: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let mut f = good(b"bad udp checksum");
    let last = f.len() - 1;
    f[last] ^= 0xff;
    bad.push(("bad UDP checksum", f));
    let mut f = good(b"first fragment");
    f[ip(ipv4::field::FLG_OFF.start)] |= (ipv4::FLAG_MF >> 8) as u8;
    f[ip(ipv4::field::FLG_OFF.start)] &= !((ipv4::FLAG_DF >> 8) as u8);
    fix_ip_csum(&mut f);
    bad.push(("first fragment", f));
    let mut f = good(b"bad ip checksum");
    f[ip(ipv4::field::CHECKSUM.start)] ^= 0x55;
    bad.push(("bad IPv4 checksum", f));
    let mut f = good(b"udp length too long");
    let at = ETH_HLEN + IPV4_HLEN;
    let ul = UdpPacket::new_unchecked(&f[at..]).len() as u16 + 10;
    f[at + udp::field::LENGTH.start..at + udp::field::LENGTH.end].copy_from_slice(&ul.to_be_bytes());
    bad.push(("UDP length beyond the packet", f));
    let mut f = good(b"truncated");
    f.truncate(HEADERS_LEN + 2); // IP total length says more than is there
    bad.push(("truncated", f));

    // IPv4 options (IHL 6, one NOP+EOL word) are fine: delivered.
    let mut opt = good(b"with options");
    opt.splice(ETH_HLEN + IPV4_HLEN..ETH_HLEN + IPV4_HLEN, [1u8, 1, 1, 0]);
    opt[ip(ipv4::field::VER_IHL)] = 0x46;
    let tl = Ipv4Packet::new_unchecked(&opt[ETH_HLEN..]).total_len() as u16 + 4;
    opt[ip(ipv4::field::LENGTH.start)..ip(ipv4::field::LENGTH.end)].copy_from_slice(&tl.to_be_bytes());
    fix_ip_csum(&mut opt);
    FrameSet { bad, with_options: opt, good: good(b"the good one") }
}

/// Sends raw frames out of side's interface through an AF_PACKET socket.
pub fn inject(side: &Side, frames: &[Vec<u8>]) {
    let iface = side.iface.clone();
    side.run(|| {
        let sock = detpath::sys::packet::PacketSocket::open(&iface).expect("AF_PACKET socket");
        for f in frames {
            sock.send(f).expect("raw send");
        }
    })
    .unwrap();
}

/// Injects the frame set at `ep` (on side b) and checks: every malformed
/// frame counted in `rx_malformed` and never delivered, the frame with IPv4
/// options and the good one delivered, in order.
pub fn assert_malformed_frames_counted(tb: &Testbed, ep: &mut dyn Endpoint) {
    let src = SocketAddrV4::new(tb.a().addr, 4444);
    let set = frame_set(tb, src, ep.local_addr());
    let frames: Vec<Vec<u8>> = set.bad.iter().map(|(_, f)| f.clone()).chain([set.with_options.clone(), set.good.clone()]).collect();
    inject(tb.a(), &frames);
    let wait = RecvMode::BusyPoll { timeout: Some(Duration::from_secs(2)) };
    let mut buf = [0u8; 2048];
    let rx = ep.recv(&mut buf, wait).unwrap().expect("the frame with IPv4 options");
    assert_eq!(&buf[..rx.len], b"with options");
    assert_eq!(rx.peer, src);
    let rx = ep.recv(&mut buf, wait).unwrap().expect("the good frame");
    assert_eq!(&buf[..rx.len], b"the good one");
    assert!(ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(100)) }).unwrap().is_none());
    let c = ep.counters();
    assert_eq!(c.rx_malformed, set.bad.len() as u64, "{c:?} (sent: {:?})", set.bad.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    assert_eq!(c.rx_packets, 2);
}
