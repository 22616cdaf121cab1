//! Builds the frames the classifier parses, with valid IPv4 header, UDP and
//! TCP checksums: Ethernet [VLAN tags] / IPv4|IPv6 / UDP|TCP, VXLAN, GTP-U with
//! extension headers, nested in any order. Used by the tests, the end-to-end
//! experiment and the benchmark's generator.
//!
//! Header fields by name, never a bare offset: Ethernet, IPv4 and UDP through
//! detpath-wire's `field` modules and views (`EthernetFrame`, `Ipv4Packet`,
//! `UdpPacket`), as the datapaths do; the headers wire does not have (the
//! VLAN tag, IPv6, TCP, VXLAN, GTP-U) through the `field` modules here, which
//! the tests use to name the bytes they break.
//!
//! ```
//! use detpath_classify::frames::{Layer, build};
//! let f = build(&[
//!     Layer::eth([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]),
//!     Layer::Ip { src: "10.0.0.1".parse().unwrap(), dst: "10.0.0.2".parse().unwrap() },
//!     Layer::Udp { sport: 1000, dport: 4789 },
//!     Layer::Vxlan { vni: 0x445 },
//!     Layer::eth([2, 0, 0, 0, 1, 2], [2, 0, 0, 0, 1, 1]),
//!     Layer::Ip { src: "10.1.0.1".parse().unwrap(), dst: "10.1.0.2".parse().unwrap() },
//!     Layer::Udp { sport: 2152, dport: 2152 },
//!     Layer::Gtpu { teid: 0x8894D0D4, exts: vec![], msg_type: 0xff },
//!     Layer::Ip { src: "192.188.0.140".parse().unwrap(), dst: "172.16.0.1".parse().unwrap() },
//!     Layer::Udp { sport: 40000, dport: 5004 },
//! ], b"payload");
//! assert_eq!(f.len(), 14 + 20 + 8 + 8 + 14 + 20 + 8 + 8 + 20 + 8 + 7);
//! ```

use detpath_wire::field::{set_be16, Field};
use detpath_wire::frame::ETHERTYPE_IPV4;
use detpath_wire::{checksum, ethernet, ipv4, udp, Ipv4Packet, MacAddr, UdpPacket};
use std::net::{IpAddr, Ipv6Addr};

/// An 802.1Q / 802.1ad tag: the 4 bytes after the TPID that announces it
/// (the TPID sits where the EtherType of the header before it would be).
/// Not in detpath-wire, whose Ethernet view is untagged.
pub mod vlan {
    /// The tag's fields, from the end of the TPID.
    pub mod field {
        use detpath_wire::field::Field;
        /// Tag control information: priority (3 bits), DEI (1), VLAN ID (12).
        pub const TCI: Field = 0..2;
        /// EtherType of what follows the tag (or the next tag's TPID).
        pub const ETHERTYPE: Field = 2..4;
        /// Where the tagged payload starts (the tag's length).
        pub const PAYLOAD: usize = 4;
    }
    /// The VLAN ID bits of the TCI.
    pub const VID_MASK: u16 = 0x0fff;
}

/// IPv6 headers (RFC 8200), the fixed header and the fragment header: the
/// classifier parses both, detpath-wire has neither.
pub mod ipv6 {
    /// The fixed header's fields, from the start of the packet.
    pub mod field {
        use detpath_wire::field::Field;
        /// Version (4 bits), traffic class (8), flow label (20).
        pub const VER_TC_FLOW: Field = 0..4;
        /// Length of what follows the fixed header (extension headers included).
        pub const PAYLOAD_LEN: Field = 4..6;
        /// Protocol of the next header.
        pub const NEXT_HEADER: usize = 6;
        /// Hop limit.
        pub const HOP_LIMIT: usize = 7;
        /// Source address.
        pub const SRC_ADDR: Field = 8..24;
        /// Destination address.
        pub const DST_ADDR: Field = 24..40;
    }
    /// The fragment header's fields (8 bytes), from its start.
    pub mod frag {
        use detpath_wire::field::Field;
        /// Protocol of the header after the fragment header.
        pub const NEXT_HEADER: usize = 0;
        /// Fragment offset (8-byte units, top 13 bits) and M (more fragments, bit 0).
        pub const OFFSET_M: Field = 2..4;
        /// Identification.
        pub const IDENT: Field = 4..8;
        /// The fragment header's length.
        pub const LEN: usize = 8;
    }
    /// The fixed header's length.
    pub const HEADER_LEN: usize = 40;
    /// EtherType of IPv6.
    pub const ETHERTYPE: u16 = 0x86dd;
    /// Next-header number of the fragment header.
    pub const PROTO_FRAGMENT: u8 = 44;
}

/// TCP headers (RFC 9293), without options: detpath-wire has none.
pub mod tcp {
    /// The header's fields.
    pub mod field {
        use detpath_wire::field::Field;
        /// Source port.
        pub const SRC_PORT: Field = 0..2;
        /// Destination port.
        pub const DST_PORT: Field = 2..4;
        /// Sequence number.
        pub const SEQ: Field = 4..8;
        /// Acknowledgment number.
        pub const ACK: Field = 8..12;
        /// Data offset (header length in 32-bit words, high nibble).
        pub const DATA_OFF: usize = 12;
        /// Flags (CWR .. FIN).
        pub const FLAGS: usize = 13;
        /// Receive window.
        pub const WINDOW: Field = 14..16;
        /// Checksum over the pseudo-header, header and payload.
        pub const CHECKSUM: Field = 16..18;
    }
    /// Header length without options.
    pub const HEADER_LEN: usize = 20;
    /// IP protocol number of TCP.
    pub const PROTO: u8 = 6;
}

/// VXLAN headers (RFC 7348).
pub mod vxlan {
    /// The header's fields.
    pub mod field {
        use detpath_wire::field::Field;
        /// Flags: I (a valid VNI) is bit 3.
        pub const FLAGS: usize = 0;
        /// The 24-bit VXLAN network identifier, big-endian.
        pub const VNI: Field = 4..7;
    }
    /// The I flag: the VNI is valid.
    pub const FLAG_I: u8 = 0x08;
    /// The header's length.
    pub const HEADER_LEN: usize = 8;
}

/// GTP-U headers (3GPP TS 29.281).
pub mod gtpu {
    /// The header's fields; those from `SEQ` on are there only when one of
    /// the E, S or PN flags is set.
    pub mod field {
        use detpath_wire::field::Field;
        /// Version (3 bits), PT, spare, E, S, PN.
        pub const FLAGS: usize = 0;
        /// Message type (0xff: G-PDU, a user datagram).
        pub const MSG_TYPE: usize = 1;
        /// Length of everything after the first 8 bytes.
        pub const LENGTH: Field = 2..4;
        /// Tunnel endpoint identifier.
        pub const TEID: Field = 4..8;
        /// Sequence number (optional part).
        pub const SEQ: Field = 8..10;
        /// N-PDU number (optional part).
        pub const NPDU: usize = 10;
        /// Type of the first extension header (optional part; 0: none).
        pub const NEXT_EXT: usize = 11;
    }
    /// The mandatory header's length.
    pub const HEADER_LEN: usize = 8;
    /// The header's length with the optional part.
    pub const HEADER_LEN_OPT: usize = 12;
    /// Version 1, PT 1: the flags of a GTP-U header without optional part.
    pub const FLAGS_V1_PT: u8 = 0x30;
    /// E: extension headers follow.
    pub const FLAG_E: u8 = 0x04;
    /// E, S or PN: the optional part is there.
    pub const FLAGS_OPT: u8 = 0x07;
    /// The version is the top 3 bits of the flags.
    pub const VERSION_SHIFT: u8 = 5;
    /// Message type of a G-PDU.
    pub const G_PDU: u8 = 0xff;
    /// An extension header's length is its first byte times this (bytes);
    /// its last byte is the next extension header's type.
    pub const EXT_UNIT: usize = 4;
}

/// IP protocol number of IPv4 in IP.
const PROTO_IPIP: u8 = 4;
/// IP protocol number of IPv6 in IP.
const PROTO_IPV6: u8 = 41;
/// IP protocol number for experiments (RFC 3692): the payload of an IP layer last in the list.
const PROTO_EXPERIMENTAL: u8 = 253;
/// Local experimental EtherType (IEEE 802): the payload of an Ethernet layer not followed by IP.
const ETHERTYPE_EXPERIMENTAL: u16 = 0x88b5;
/// IPv4 identification and TTL of the frames built here.
const IP_IDENT: u16 = 0x1234;
const IP_TTL: u8 = 64;
/// IPv6 fragment header identification of the frames built here.
const IPV6_FRAG_IDENT: u32 = 0x1234_5678;

/// One header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layer {
    /// Ethernet; `vlans` are (TPID, VLAN ID), outermost first.
    Eth {
        /// Destination MAC address.
        dst: [u8; 6],
        /// Source MAC address.
        src: [u8; 6],
        /// VLAN tags, outermost first: (TPID: 0x8100 or 0x88a8, VLAN ID).
        vlans: Vec<(u16, u16)>,
    },
    /// IPv4 or IPv6 (by the address); the protocol comes from the next layer.
    Ip {
        /// Source address (its family chooses the header).
        src: IpAddr,
        /// Destination address.
        dst: IpAddr,
    },
    /// IPv4 or IPv6 marked with a DSCP (the IPv4 TOS / IPv6 traffic class, ECN bits 0).
    IpDscp {
        /// Source address (its family chooses the header).
        src: IpAddr,
        /// Destination address.
        dst: IpAddr,
        /// The DSCP (6 bits).
        dscp: u8,
    },
    /// IPv4 or IPv6 with explicit protocol and IPv4 fragment field / IPv6 fragment header.
    IpFrag {
        /// Source address (its family chooses the header).
        src: IpAddr,
        /// Destination address.
        dst: IpAddr,
        /// More fragments follow (MF / M).
        more: bool,
        /// Fragment offset in 8-byte units (0: the first fragment, which carries the ports).
        offset8: u16,
    },
    /// UDP; length and checksum are computed.
    Udp {
        /// Source port.
        sport: u16,
        /// Destination port (4789 makes the next layer VXLAN to the classifier, 2152 GTP-U).
        dport: u16,
    },
    /// TCP without options (PSH ACK); checksum computed.
    Tcp {
        /// Source port.
        sport: u16,
        /// Destination port.
        dport: u16,
    },
    /// VXLAN with the I flag set.
    Vxlan {
        /// The 24-bit VXLAN network identifier.
        vni: u32,
    },
    /// GTP-U; each extension header is (type, content), content padded to 4n-2 bytes.
    Gtpu {
        /// Tunnel endpoint identifier.
        teid: u32,
        /// Extension headers in order: (type, content before padding).
        exts: Vec<(u8, Vec<u8>)>,
        /// Message type (0xff: G-PDU; others are not user data and the classifier passes them).
        msg_type: u8,
    },
}

impl Layer {
    /// Untagged Ethernet from `src` to `dst`.
    pub fn eth(dst: [u8; 6], src: [u8; 6]) -> Layer {
        Layer::Eth { dst, src, vlans: vec![] }
    }
    /// The PDU Session Container extension header (type 0x85) with a QFI.
    pub fn pdu_session(qfi: u8) -> (u8, Vec<u8>) {
        (0x85, vec![0x00, qfi & 0x3f])
    }
}

/// Sum of the pseudo-header addresses (IPv4 or IPv6) that TCP and UDP checksums cover.
fn address_sum(src: &IpAddr, dst: &IpAddr) -> u64 {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => checksum::sum(&d.octets(), checksum::sum(&s.octets(), 0)),
        (IpAddr::V6(s), IpAddr::V6(d)) => checksum::sum(&d.octets(), checksum::sum(&s.octets(), 0)),
        _ => 0,
    }
}

fn ip_proto_of(next: Option<&Layer>) -> u8 {
    match next {
        Some(Layer::Udp { .. }) => ipv4::PROTO_UDP,
        Some(Layer::Tcp { .. }) => tcp::PROTO,
        Some(Layer::Ip { src, .. }) | Some(Layer::IpDscp { src, .. }) | Some(Layer::IpFrag { src, .. }) => {
            if src.is_ipv4() {
                PROTO_IPIP
            } else {
                PROTO_IPV6
            }
        }
        _ => PROTO_EXPERIMENTAL,
    }
}

/// Fills the UDP or TCP checksum of `seg` (the whole L4 segment).
fn l4_checksum(src: &IpAddr, dst: &IpAddr, proto: u8, seg: &mut [u8]) {
    let at = match proto {
        ipv4::PROTO_UDP => udp::field::CHECKSUM,
        tcp::PROTO => tcp::field::CHECKSUM,
        _ => return,
    };
    if seg.len() < at.end {
        return;
    }
    set_be16(seg, at.clone(), 0);
    let sum = checksum::sum(seg, address_sum(src, dst) + proto as u64 + seg.len() as u64);
    let mut c = checksum::finish(sum);
    if c == 0 && proto == ipv4::PROTO_UDP {
        c = 0xffff; // 0 means "no checksum" in UDP
    }
    set_be16(seg, at, c);
}

/// Builds a frame from its layers (outermost first) and the payload.
pub fn build(layers: &[Layer], payload: &[u8]) -> Vec<u8> {
    let mut inner = payload.to_vec();
    for i in (0..layers.len()).rev() {
        let next = layers.get(i + 1);
        inner = wrap(&layers[i], next, inner);
    }
    inner
}

/// `head` followed by `inner`.
fn join(mut head: Vec<u8>, inner: &[u8]) -> Vec<u8> {
    head.extend_from_slice(inner);
    head
}

fn wrap(l: &Layer, next: Option<&Layer>, inner: Vec<u8>) -> Vec<u8> {
    match l {
        Layer::Eth { dst, src, vlans } => {
            let et: u16 = match next {
                Some(Layer::Ip { src, .. }) | Some(Layer::IpDscp { src, .. }) | Some(Layer::IpFrag { src, .. }) => {
                    if src.is_ipv4() {
                        ETHERTYPE_IPV4
                    } else {
                        ipv6::ETHERTYPE
                    }
                }
                _ => ETHERTYPE_EXPERIMENTAL,
            };
            // Each tag's TPID stands in the EtherType of the header before it.
            let mut head = vec![0u8; ethernet::field::PAYLOAD + vlans.len() * vlan::field::PAYLOAD];
            let first = vlans.first().map(|(tpid, _)| *tpid).unwrap_or(et);
            ethernet::write_header(&mut head, MacAddr(*dst), MacAddr(*src), first);
            let mut tag = ethernet::field::PAYLOAD;
            for (i, (_, vid)) in vlans.iter().enumerate() {
                let t = &mut head[tag..tag + vlan::field::PAYLOAD];
                set_be16(t, vlan::field::TCI, vid & vlan::VID_MASK);
                set_be16(t, vlan::field::ETHERTYPE, vlans.get(i + 1).map(|(tpid, _)| *tpid).unwrap_or(et));
                tag += vlan::field::PAYLOAD;
            }
            join(head, &inner)
        }
        Layer::Ip { src, dst } => ip(src, dst, ip_proto_of(next), None, 0, inner),
        Layer::IpDscp { src, dst, dscp } => ip(src, dst, ip_proto_of(next), None, (dscp & 0x3f) << 2, inner),
        Layer::IpFrag { src, dst, more, offset8 } => ip(src, dst, ip_proto_of(next), Some((*more, *offset8)), 0, inner),
        Layer::Udp { sport, dport } => {
            let mut head = vec![0u8; udp::field::PAYLOAD];
            UdpPacket::new_unchecked(&mut head[..]).write_header(*sport, *dport, (inner.len() + udp::field::PAYLOAD) as u16);
            join(head, &inner)
        }
        Layer::Tcp { sport, dport } => {
            let mut head = vec![0u8; tcp::HEADER_LEN];
            set_be16(&mut head, tcp::field::SRC_PORT, *sport);
            set_be16(&mut head, tcp::field::DST_PORT, *dport);
            head[tcp::field::SEQ].copy_from_slice(&1u32.to_be_bytes());
            head[tcp::field::ACK].copy_from_slice(&0u32.to_be_bytes());
            head[tcp::field::DATA_OFF] = ((tcp::HEADER_LEN / 4) as u8) << 4;
            head[tcp::field::FLAGS] = 0x18; // PSH ACK
            set_be16(&mut head, tcp::field::WINDOW, 65535);
            join(head, &inner)
        }
        Layer::Vxlan { vni } => {
            let mut head = vec![0u8; vxlan::HEADER_LEN];
            head[vxlan::field::FLAGS] = vxlan::FLAG_I;
            head[vxlan::field::VNI].copy_from_slice(&vni.to_be_bytes()[1..]);
            join(head, &inner)
        }
        Layer::Gtpu { teid, exts, msg_type } => {
            // The optional part (sequence, N-PDU, first extension type) and the extension headers.
            let mut opt = Vec::new();
            if let Some((first, _)) = exts.first() {
                opt = vec![0u8; gtpu::HEADER_LEN_OPT - gtpu::HEADER_LEN];
                opt[gtpu::field::NEXT_EXT - gtpu::HEADER_LEN] = *first;
                for (i, (_, content)) in exts.iter().enumerate() {
                    // Length byte, content padded, next type: a multiple of 4 bytes.
                    let mut c = content.clone();
                    while (c.len() + 2) % gtpu::EXT_UNIT != 0 {
                        c.push(0);
                    }
                    opt.push(((c.len() + 2) / gtpu::EXT_UNIT) as u8);
                    opt.extend_from_slice(&c);
                    opt.push(exts.get(i + 1).map(|e| e.0).unwrap_or(0));
                }
            }
            let mut head = vec![0u8; gtpu::HEADER_LEN];
            head[gtpu::field::FLAGS] = gtpu::FLAGS_V1_PT | if exts.is_empty() { 0 } else { gtpu::FLAG_E };
            head[gtpu::field::MSG_TYPE] = *msg_type;
            set_be16(&mut head, gtpu::field::LENGTH, (opt.len() + inner.len()) as u16);
            head[gtpu::field::TEID].copy_from_slice(&teid.to_be_bytes());
            head.extend_from_slice(&opt);
            join(head, &inner)
        }
    }
}

/// An IP header (`tos`: the IPv4 TOS byte / IPv6 traffic class) over `inner`.
fn ip(src: &IpAddr, dst: &IpAddr, proto: u8, frag: Option<(bool, u16)>, tos: u8, mut inner: Vec<u8>) -> Vec<u8> {
    let first = frag.is_none_or(|(_, off)| off == 0);
    let whole = frag.is_none();
    if whole || first {
        l4_checksum(src, dst, proto, &mut inner);
    }
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut head = vec![0u8; ipv4::HEADER_LEN];
            let fo = match frag {
                None => ipv4::FLAG_DF,
                Some((more, off)) => (if more { ipv4::FLAG_MF } else { 0 }) | (off & ipv4::OFFSET_MASK),
            };
            Ipv4Packet::new_unchecked(&mut head[..]).write_header(tos, (ipv4::HEADER_LEN + inner.len()) as u16, IP_IDENT, fo, IP_TTL, proto, *s, *d);
            join(head, &inner)
        }
        _ => {
            let (s, d) = match (src, dst) {
                (IpAddr::V6(s), IpAddr::V6(d)) => (s.octets(), d.octets()),
                (IpAddr::V6(s), IpAddr::V4(d)) => (s.octets(), d.to_ipv6_mapped().octets()),
                (IpAddr::V4(s), IpAddr::V6(d)) => (s.to_ipv6_mapped().octets(), d.octets()),
                (IpAddr::V4(s), IpAddr::V4(d)) => (s.to_ipv6_mapped().octets(), d.to_ipv6_mapped().octets()),
            };
            let mut ext = Vec::new();
            let mut next = proto;
            if let Some((more, off)) = frag {
                ext = vec![0u8; ipv6::frag::LEN];
                ext[ipv6::frag::NEXT_HEADER] = proto;
                set_be16(&mut ext, ipv6::frag::OFFSET_M, (off << 3) | more as u16);
                ext[ipv6::frag::IDENT].copy_from_slice(&IPV6_FRAG_IDENT.to_be_bytes());
                next = ipv6::PROTO_FRAGMENT;
            }
            let mut head = vec![0u8; ipv6::HEADER_LEN];
            head[ipv6::field::VER_TC_FLOW].copy_from_slice(&(6u32 << 28 | (tos as u32) << 20).to_be_bytes());
            set_be16(&mut head, ipv6::field::PAYLOAD_LEN, (ext.len() + inner.len()) as u16);
            head[ipv6::field::NEXT_HEADER] = next;
            head[ipv6::field::HOP_LIMIT] = IP_TTL;
            head[ipv6::field::SRC_ADDR].copy_from_slice(&s);
            head[ipv6::field::DST_ADDR].copy_from_slice(&d);
            head.extend_from_slice(&ext);
            join(head, &inner)
        }
    }
}

/// The IPv6 address in `b[f]` (a 16-byte field).
fn ipv6_at(b: &[u8], f: Field) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[f]);
    Ipv6Addr::from(a)
}

/// The TEID, inner source address and inner destination port of a GTP-U G-PDU
/// payload (what a UDP socket on port 2152 receives): identifies a service.
pub fn parse_gtpu_payload(p: &[u8]) -> Option<(u32, IpAddr, u16)> {
    if p.len() < gtpu::HEADER_LEN || p[gtpu::field::FLAGS] >> gtpu::VERSION_SHIFT != 1 || p[gtpu::field::MSG_TYPE] != gtpu::G_PDU {
        return None;
    }
    let flags = p[gtpu::field::FLAGS];
    let teid = u32::from_be_bytes(p[gtpu::field::TEID].try_into().ok()?);
    let mut off = gtpu::HEADER_LEN;
    if flags & gtpu::FLAGS_OPT != 0 {
        let mut next = *p.get(gtpu::field::NEXT_EXT)?;
        off = gtpu::HEADER_LEN_OPT;
        if flags & gtpu::FLAG_E == 0 {
            next = 0;
        }
        let mut n = 0;
        while next != 0 && n < 16 {
            let len = *p.get(off)? as usize * gtpu::EXT_UNIT;
            if len == 0 {
                return None;
            }
            next = *p.get(off + len - 1)?;
            off += len;
            n += 1;
        }
    }
    let ip = p.get(off..)?;
    match ip.first()? >> 4 {
        4 => {
            let v4 = Ipv4Packet::new_checked(ip)?;
            // The destination port is in the same place in UDP and TCP.
            let l4 = UdpPacket::new_checked(ip.get(v4.header_len()..)?)?;
            Some((teid, IpAddr::V4(v4.src_addr()), l4.dst_port()))
        }
        6 => {
            let l4 = UdpPacket::new_checked(ip.get(ipv6::HEADER_LEN..)?)?;
            Some((teid, IpAddr::V6(ipv6_at(ip, ipv6::field::SRC_ADDR)), l4.dst_port()))
        }
        _ => None,
    }
}

/// Verifies the IPv4 header checksum of the header at `off` (tests of the forward rewrite).
pub fn ipv4_header_ok(frame: &[u8], off: usize) -> bool {
    frame.get(off..).and_then(Ipv4Packet::new_checked).is_some_and(|p| p.header_len() >= ipv4::HEADER_LEN && p.verify_checksum())
}

/// Verifies a UDP checksum (IPv4 or IPv6 by the header at `ip_off`).
pub fn udp_checksum_ok(frame: &[u8], ip_off: usize) -> bool {
    let Some(ip) = frame.get(ip_off..) else { return false };
    let Some(v) = ip.first().map(|b| b >> 4) else { return false };
    let (src, dst, l4): (IpAddr, IpAddr, usize) = match v {
        4 => {
            let Some(h) = Ipv4Packet::new_checked(ip) else { return false };
            (IpAddr::V4(h.src_addr()), IpAddr::V4(h.dst_addr()), h.header_len())
        }
        6 => {
            if ip.len() < ipv6::HEADER_LEN {
                return false;
            }
            (IpAddr::V6(ipv6_at(ip, ipv6::field::SRC_ADDR)), IpAddr::V6(ipv6_at(ip, ipv6::field::DST_ADDR)), ipv6::HEADER_LEN)
        }
        _ => return false,
    };
    let Some(u) = ip.get(l4..).and_then(UdpPacket::new_checked) else { return false };
    let ulen = u.len();
    let Some(seg) = ip.get(l4..l4 + ulen) else { return false };
    if ulen < udp::field::PAYLOAD {
        return false;
    }
    if u.checksum() == 0 && v == 4 {
        return true; // no checksum
    }
    // Both addresses come from one header, so they are of one family.
    checksum::finish(checksum::sum(seg, address_sum(&src, &dst) + ipv4::PROTO_UDP as u64 + ulen as u64)) == 0
}
