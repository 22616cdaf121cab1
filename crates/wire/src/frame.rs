//! Ethernet/IPv4/UDP frames: parse a received frame into a checked view, and
//! build a frame with valid IPv4 and UDP checksums into a caller's buffer.
//!
//! What the parser accepts, and what each rejection means for an endpoint:
//! - Ethernet II with ethertype IPv4 (no VLAN tag; tagged frames are not for a detpath endpoint).
//! - IPv4 version 4, IHL 5..=15 (options are skipped, not interpreted), total
//!   length within the frame (Ethernet padding after it is ignored), a valid
//!   header checksum, not a fragment (MF set or offset non-zero: a fragment
//!   is `FrameError::Fragment`, for the caller's reassembler, [`crate::reasm`]).
//! - UDP with a length that fits the IPv4 payload, and a valid checksum or
//!   checksum 0 ("none", allowed for IPv4 by RFC 768).

use crate::checksum;
use crate::ethernet::{self, EthernetFrame};
use crate::ipv4::{self, Ipv4Packet};
use crate::udp::UdpPacket;
use crate::{ETH_HLEN, HEADERS_LEN, IPV4_HLEN, UDP_HLEN};
use std::fmt;
use std::net::SocketAddrV4;

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = ipv4::PROTO_UDP;

/// An Ethernet MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff, the address every station on the link receives (ARP requests).
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);

    /// Parses `aa:bb:cc:dd:ee:ff`.
    pub fn parse(s: &str) -> Option<MacAddr> {
        let mut out = [0u8; 6];
        let mut parts = s.trim().split(':');
        for b in out.iter_mut() {
            *b = u8::from_str_radix(parts.next()?, 16).ok()?;
        }
        parts.next().is_none().then_some(MacAddr(out))
    }

    /// The Ethernet group address an IPv4 multicast group maps to (RFC 1112
    /// §6.4: 01:00:5e and the group's low 23 bits); `None` for other addresses.
    pub fn ipv4_multicast(ip: std::net::Ipv4Addr) -> Option<MacAddr> {
        let o = ip.octets();
        ip.is_multicast().then_some(MacAddr([0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]]))
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a frame was not accepted as a UDP datagram. Each kind is a counter bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The frame ends before its Ethernet, IPv4 or UDP header does, or
    /// before the IPv4 total length says: a runt or a cut capture.
    #[error("frame shorter than its headers")]
    Truncated,
    /// The Ethernet type (carried) is not IPv4 (ARP, IPv6, a VLAN tag): not
    /// a datagram for a UDP endpoint.
    #[error("not IPv4 (ethertype {0:#06x})")]
    NotIpv4(u16),
    /// Version not 4, IHL below 5, or a total length shorter than the header.
    #[error("malformed IPv4 header")]
    BadIpHeader,
    /// The IPv4 header checksum does not verify: corrupted on the way.
    #[error("bad IPv4 header checksum")]
    BadIpChecksum,
    /// A fragment of a larger datagram (MF set or offset non-zero): give the
    /// frame to [`crate::reasm::parse_fragment`] and a reassembler.
    #[error("IPv4 fragment (for the reassembler)")]
    Fragment,
    /// IPv4 carrying another protocol (number carried), not UDP.
    #[error("not UDP (IP protocol {0})")]
    NotUdp(u8),
    /// The UDP length field is below 8 or differs from the IPv4 payload length.
    #[error("UDP length does not match the IPv4 payload")]
    BadUdpLength,
    /// The UDP checksum (non-zero) does not verify: corrupted, or a partial
    /// checksum left by tx offload (`checksum=skip` accepts those).
    #[error("bad UDP checksum")]
    BadUdpChecksum,
}

/// A parsed, checked UDP-in-IPv4-in-Ethernet frame. The payload is
/// `frame[payload_offset..payload_offset + payload_len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFrame {
    /// Ethernet destination (ours, a group's, or broadcast).
    pub dst_mac: MacAddr,
    /// Ethernet source: the last hop that sent the frame.
    pub src_mac: MacAddr,
    /// IPv4 source address and UDP source port: where a reply goes.
    pub src: SocketAddrV4,
    /// IPv4 destination address and UDP destination port.
    pub dst: SocketAddrV4,
    /// Bytes from the start of the frame to the UDP payload (after any IPv4 options).
    pub payload_offset: usize,
    /// Bytes of UDP payload (the UDP length minus its 8-byte header).
    pub payload_len: usize,
}

impl UdpFrame {
    /// The payload bytes of the frame this view was parsed from.
    pub fn payload<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        &frame[self.payload_offset..self.payload_offset + self.payload_len]
    }
}

/// Parses and checks a frame. Never panics; every rejection is a [`FrameError`].
///
/// `verify_udp_checksum` is false only where the sender is known to leave a
/// partial checksum (a kernel sending over veth with tx checksum offload on).
pub fn parse_udp_frame(frame: &[u8], verify_udp_checksum: bool) -> Result<UdpFrame, FrameError> {
    let eth = EthernetFrame::new_checked(frame).ok_or(FrameError::Truncated)?;
    if eth.ethertype() != ETHERTYPE_IPV4 {
        return Err(FrameError::NotIpv4(eth.ethertype()));
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok_or(FrameError::Truncated)?;
    let (ihl, total_len) = (ip.header_len(), ip.total_len());
    if ip.version() != 4 || ihl < IPV4_HLEN || total_len < ihl {
        return Err(FrameError::BadIpHeader);
    }
    let bytes = eth.payload();
    if bytes.len() < ihl || bytes.len() < total_len {
        return Err(FrameError::Truncated);
    }
    if !ip.verify_checksum() {
        return Err(FrameError::BadIpChecksum);
    }
    if ip.is_fragment() {
        return Err(FrameError::Fragment);
    }
    if ip.protocol() != IPPROTO_UDP {
        return Err(FrameError::NotUdp(ip.protocol()));
    }
    let (src_ip, dst_ip) = (ip.src_addr(), ip.dst_addr());
    let udp_bytes = &bytes[ihl..total_len];
    let udp = UdpPacket::new_checked(udp_bytes).ok_or(FrameError::Truncated)?;
    let udp_len = udp.len();
    if udp_len < UDP_HLEN || udp_len != udp_bytes.len() {
        return Err(FrameError::BadUdpLength);
    }
    if verify_udp_checksum && udp.checksum() != 0 {
        let acc = checksum::pseudo_header_sum(src_ip, dst_ip, IPPROTO_UDP, udp_len as u16);
        if checksum::finish(checksum::sum(udp_bytes, acc)) != 0 {
            return Err(FrameError::BadUdpChecksum);
        }
    }
    Ok(UdpFrame {
        dst_mac: eth.dst_addr(),
        src_mac: eth.src_addr(),
        src: SocketAddrV4::new(src_ip, udp.src_port()),
        dst: SocketAddrV4::new(dst_ip, udp.dst_port()),
        payload_offset: ETH_HLEN + ihl + UDP_HLEN,
        payload_len: udp_len - UDP_HLEN,
    })
}

/// The addresses of a frame to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFrameHeader {
    /// Ethernet source: the sending interface's MAC.
    pub src_mac: MacAddr,
    /// Ethernet destination: the next hop's MAC (from the neighbour table or ARP).
    pub dst_mac: MacAddr,
    /// IPv4 source address and UDP source port.
    pub src: SocketAddrV4,
    /// IPv4 destination address and UDP destination port.
    pub dst: SocketAddrV4,
    /// IPv4 identification field (the same in every fragment of one datagram).
    pub ip_id: u16,
    /// IPv4 time to live: routers the packet may cross (64 is the Linux default).
    pub ttl: u8,
    /// IPv4 type of service byte: the DSCP << 2 (ECN bits 0); 0 = best effort.
    pub tos: u8,
}

/// Writes header + payload into `buf` and returns the frame length, or `None`
/// when `buf` is too small or the payload does not fit an IPv4 packet.
/// The frame carries valid IPv4 and UDP checksums and the DF bit.
pub fn build_udp_frame(buf: &mut [u8], h: &UdpFrameHeader, payload: &[u8]) -> Option<usize> {
    let total = HEADERS_LEN.checked_add(payload.len())?;
    let ip_len = u16::try_from(total - ETH_HLEN).ok()?;
    if buf.len() < total {
        return None;
    }
    write_eth_ipv4(buf, h, ip_len, IP_DF);
    write_udp_header(&mut buf[ETH_HLEN + IPV4_HLEN..], h, payload);
    buf[HEADERS_LEN..total].copy_from_slice(payload);
    Some(total)
}

/// IPv4 flags and fragment offset word: don't fragment.
const IP_DF: u16 = ipv4::FLAG_DF;
/// IPv4 flags: more fragments.
const IP_MF: u16 = ipv4::FLAG_MF;

/// Ethernet + IPv4 header (no options) with a valid checksum.
fn write_eth_ipv4(buf: &mut [u8], h: &UdpFrameHeader, ip_len: u16, flags_offset: u16) {
    ethernet::write_header(buf, h.dst_mac, h.src_mac, ETHERTYPE_IPV4);
    Ipv4Packet::new_unchecked(&mut buf[ETH_HLEN..ETH_HLEN + IPV4_HLEN]).write_header(
        h.tos,
        ip_len,
        h.ip_id,
        flags_offset,
        h.ttl,
        IPPROTO_UDP,
        *h.src.ip(),
        *h.dst.ip(),
    );
}

/// The 8-byte UDP header of `payload` (checksum over all of it) at `out[..8]`.
fn write_udp_header(out: &mut [u8], h: &UdpFrameHeader, payload: &[u8]) {
    let udp_len = (UDP_HLEN + payload.len()) as u16;
    UdpPacket::new_unchecked(&mut out[..UDP_HLEN]).write_header(h.src.port(), h.dst.port(), udp_len);
    let acc = checksum::pseudo_header_sum(*h.src.ip(), *h.dst.ip(), IPPROTO_UDP, udp_len);
    let mut csum = checksum::finish(checksum::sum(payload, checksum::sum(&out[..UDP_HLEN], acc)));
    if csum == 0 {
        csum = 0xffff; // 0 means "no checksum" in UDP over IPv4 (RFC 768)
    }
    UdpPacket::new_unchecked(&mut out[..UDP_HLEN]).set_checksum(csum);
}

/// Largest UDP payload an IPv4 datagram carries (fragmented).
pub const MAX_UDP_PAYLOAD: usize = 65_535 - IPV4_HLEN - UDP_HLEN;

/// How many frames a `payload_len`-byte UDP datagram takes on a link of
/// `mtu` (1 when it fits one frame; IPv4 fragments otherwise).
pub fn udp_fragment_count(payload_len: usize, mtu: usize) -> usize {
    let per = fragment_data_len(mtu);
    if payload_len + UDP_HLEN + IPV4_HLEN <= mtu || per == 0 {
        1
    } else {
        (payload_len + UDP_HLEN).div_ceil(per)
    }
}

/// IPv4 payload bytes in every fragment but the last (a multiple of 8).
fn fragment_data_len(mtu: usize) -> usize {
    mtu.saturating_sub(IPV4_HLEN) & !7
}

/// Writes frame `k` of [`udp_fragment_count`] for a datagram too large for
/// one frame of `mtu`, as a kernel fragments: the UDP header (checksum over
/// the whole datagram) in the first, every fragment but the last a multiple
/// of 8 bytes, all with `h.ip_id`, DF clear. Returns the frame length, or
/// `None` when `k` is past the last fragment, `buf` is too small or the
/// payload is above [`MAX_UDP_PAYLOAD`].
pub fn build_udp_fragment(buf: &mut [u8], h: &UdpFrameHeader, payload: &[u8], mtu: usize, k: usize) -> Option<usize> {
    let per = fragment_data_len(mtu);
    let ip_payload = UDP_HLEN + payload.len();
    if per == 0 || payload.len() > MAX_UDP_PAYLOAD || k * per >= ip_payload {
        return None;
    }
    let (from, to) = (k * per, ((k + 1) * per).min(ip_payload));
    let len = ETH_HLEN + IPV4_HLEN + (to - from);
    if buf.len() < len {
        return None;
    }
    let more = if to < ip_payload { IP_MF } else { 0 };
    write_eth_ipv4(buf, h, (IPV4_HLEN + to - from) as u16, more | (from / 8) as u16);
    let out = &mut buf[ETH_HLEN + IPV4_HLEN..len];
    if k == 0 {
        write_udp_header(out, h, payload);
        out[UDP_HLEN..].copy_from_slice(&payload[..to - UDP_HLEN]);
    } else {
        out.copy_from_slice(&payload[from - UDP_HLEN..to - UDP_HLEN]);
    }
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ipv4_multicast_groups_map_to_their_ethernet_group_address() {
        let m = |s: &str| MacAddr::ipv4_multicast(s.parse().unwrap()).map(|m| m.to_string());
        assert_eq!(m("239.255.0.1").as_deref(), Some("01:00:5e:7f:00:01"), "RTPS's SPDP group");
        assert_eq!(m("224.128.1.2").as_deref(), Some("01:00:5e:00:01:02"), "the 24th bit is not mapped");
        assert_eq!(m("10.77.0.1"), None);
    }

    fn header() -> UdpFrameHeader {
        UdpFrameHeader {
            src_mac: MacAddr([2, 0, 0, 0, 0, 1]),
            dst_mac: MacAddr([2, 0, 0, 0, 0, 2]),
            src: "10.77.0.1:7000".parse().unwrap(),
            dst: "10.77.0.2:7001".parse().unwrap(),
            ip_id: 7,
            ttl: 64,
            tos: 0,
        }
    }

    fn built(payload: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; 2048];
        let n = build_udp_frame(&mut buf, &header(), payload).unwrap();
        buf.truncate(n);
        buf
    }

    #[test]
    fn round_trip() {
        let f = built(b"hello");
        let p = parse_udp_frame(&f, true).unwrap();
        assert_eq!(p.src, header().src);
        assert_eq!(p.dst, header().dst);
        assert_eq!(p.src_mac, header().src_mac);
        assert_eq!(p.payload(&f), b"hello");
    }

    #[test]
    fn empty_payload() {
        let f = built(b"");
        assert_eq!(f.len(), HEADERS_LEN);
        assert_eq!(parse_udp_frame(&f, true).unwrap().payload_len, 0);
    }

    #[test]
    fn ethernet_padding_is_ignored() {
        let mut f = built(b"x");
        f.resize(60, 0); // minimum Ethernet frame, padded
        assert_eq!(parse_udp_frame(&f, true).unwrap().payload(&f), b"x");
    }

    #[test]
    fn every_truncation_is_rejected() {
        let f = built(b"0123456789");
        for n in 0..f.len() {
            assert!(parse_udp_frame(&f[..n], true).is_err(), "accepted a frame cut at {n}");
        }
    }

    #[test]
    fn bad_checksums_are_rejected() {
        let mut f = built(b"payload");
        f[HEADERS_LEN] ^= 1;
        assert_eq!(parse_udp_frame(&f, true), Err(FrameError::BadUdpChecksum));
        assert!(parse_udp_frame(&f, false).is_ok());
        let mut f = built(b"payload");
        f[ETH_HLEN + 8] ^= 1; // TTL
        assert_eq!(parse_udp_frame(&f, true), Err(FrameError::BadIpChecksum));
    }

    #[test]
    fn zero_udp_checksum_means_none() {
        let mut f = built(b"payload");
        f[ETH_HLEN + IPV4_HLEN + 6..ETH_HLEN + IPV4_HLEN + 8].copy_from_slice(&[0, 0]);
        assert!(parse_udp_frame(&f, true).is_ok());
    }

    fn refix_ip_checksum(f: &mut [u8], ihl: usize) {
        f[ETH_HLEN + 10..ETH_HLEN + 12].copy_from_slice(&[0, 0]);
        let c = checksum::internet(&f[ETH_HLEN..ETH_HLEN + ihl]);
        f[ETH_HLEN + 10..ETH_HLEN + 12].copy_from_slice(&c.to_be_bytes());
    }

    #[test]
    fn fragments_and_other_protocols_are_rejected() {
        let mut f = built(b"payload");
        f[ETH_HLEN + 6] |= 0x20; // MF
        refix_ip_checksum(&mut f, IPV4_HLEN);
        assert_eq!(parse_udp_frame(&f, true), Err(FrameError::Fragment));
        let mut f = built(b"payload");
        f[ETH_HLEN + 9] = 6; // TCP
        refix_ip_checksum(&mut f, IPV4_HLEN);
        assert_eq!(parse_udp_frame(&f, true), Err(FrameError::NotUdp(6)));
        let mut f = built(b"payload");
        f[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        assert_eq!(parse_udp_frame(&f, true), Err(FrameError::NotIpv4(ETHERTYPE_ARP)));
    }

    #[test]
    fn ip_options_are_skipped() {
        let base = built(b"opts");
        // Insert 4 bytes of options (NOP NOP NOP EOL) after the 20-byte IPv4 header.
        let mut f = base[..ETH_HLEN + IPV4_HLEN].to_vec();
        f.extend_from_slice(&[1, 1, 1, 0]);
        f.extend_from_slice(&base[ETH_HLEN + IPV4_HLEN..]);
        f[ETH_HLEN] = 0x46;
        let total = (f.len() - ETH_HLEN) as u16;
        f[ETH_HLEN + 2..ETH_HLEN + 4].copy_from_slice(&total.to_be_bytes());
        refix_ip_checksum(&mut f, 24);
        let p = parse_udp_frame(&f, true).unwrap();
        assert_eq!(p.payload(&f), b"opts");
    }

    #[test]
    fn too_small_buffer_is_refused() {
        let mut buf = [0u8; HEADERS_LEN + 3];
        assert!(build_udp_frame(&mut buf, &header(), b"four").is_none());
        assert!(build_udp_frame(&mut buf, &header(), b"two").is_some());
    }

    #[test]
    fn mac_parse_and_print() {
        let m = MacAddr::parse("02:0a:ff:00:10:01").unwrap();
        assert_eq!(m.to_string(), "02:0a:ff:00:10:01");
        assert!(MacAddr::parse("02:0a:ff:00:10").is_none());
        assert!(MacAddr::parse("02:0a:ff:00:10:01:02").is_none());
        assert!(MacAddr::parse("zz:0a:ff:00:10:01").is_none());
    }

    proptest! {
        #[test]
        fn build_then_parse_is_identity(payload in proptest::collection::vec(any::<u8>(), 0..1472),
                                        sport in any::<u16>(), dport in any::<u16>(), id in any::<u16>()) {
            let mut h = header();
            h.src.set_port(sport);
            h.dst.set_port(dport);
            h.ip_id = id;
            let mut buf = vec![0u8; 1600];
            let n = build_udp_frame(&mut buf, &h, &payload).unwrap();
            let p = parse_udp_frame(&buf[..n], true).unwrap();
            prop_assert_eq!(p.src, h.src);
            prop_assert_eq!(p.dst, h.dst);
            prop_assert_eq!(p.payload(&buf[..n]), &payload[..]);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), verify in any::<bool>()) {
            let _ = parse_udp_frame(&bytes, verify);
        }

        #[test]
        fn single_bit_flips_in_headers_or_payload_are_caught(payload in proptest::collection::vec(any::<u8>(), 1..64),
                                                              bit in 0usize..8, pos in any::<prop::sample::Index>()) {
            let mut buf = vec![0u8; 200];
            let n = build_udp_frame(&mut buf, &header(), &payload).unwrap();
            // Flip one bit anywhere after the MAC addresses: IP or UDP checksum, or a
            // structural check, must reject it (the Internet checksum catches all single-bit errors).
            let at = 12 + pos.index(n - 12);
            buf[at] ^= 1 << bit;
            // A UDP checksum flipped to 0 legitimately means "no checksum".
            let csum_at = ETH_HLEN + IPV4_HLEN + 6;
            prop_assume!(!((csum_at..csum_at + 2).contains(&at) && buf[csum_at] == 0 && buf[csum_at + 1] == 0));
            prop_assert!(parse_udp_frame(&buf[..n], true).is_err());
        }
    }
}
