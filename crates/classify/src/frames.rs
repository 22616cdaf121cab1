//! Builds the frames the classifier parses, with valid IPv4 header, UDP and
//! TCP checksums: Ethernet [VLAN tags] / IPv4|IPv6 / UDP|TCP, VXLAN, GTP-U with
//! extension headers, nested in any order. Used by the tests, the end-to-end
//! experiment and the benchmark's generator.
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

use detpath_wire::checksum;
use std::net::IpAddr;

/// One header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layer {
    /// Ethernet; `vlans` are (TPID, VLAN ID), outermost first.
    Eth {
        dst: [u8; 6],
        src: [u8; 6],
        vlans: Vec<(u16, u16)>,
    },
    /// IPv4 or IPv6 (by the address); the protocol comes from the next layer.
    Ip {
        src: IpAddr,
        dst: IpAddr,
    },
    /// IPv4 or IPv6 with explicit protocol and IPv4 fragment field / IPv6 fragment header.
    IpFrag {
        src: IpAddr,
        dst: IpAddr,
        more: bool,
        offset8: u16,
    },
    Udp {
        sport: u16,
        dport: u16,
    },
    Tcp {
        sport: u16,
        dport: u16,
    },
    Vxlan {
        vni: u32,
    },
    /// GTP-U; each extension header is (type, content), content padded to 4n-2 bytes.
    Gtpu {
        teid: u32,
        exts: Vec<(u8, Vec<u8>)>,
        msg_type: u8,
    },
}

impl Layer {
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
        Some(Layer::Udp { .. }) => 17,
        Some(Layer::Tcp { .. }) => 6,
        Some(Layer::Ip { src, .. }) | Some(Layer::IpFrag { src, .. }) => {
            if src.is_ipv4() {
                4
            } else {
                41
            }
        }
        _ => 253, // experimental
    }
}

fn l4_checksum(src: &IpAddr, dst: &IpAddr, proto: u8, seg: &mut [u8]) {
    let off = match proto {
        17 => 6,
        6 => 16,
        _ => return,
    };
    if seg.len() < off + 2 {
        return;
    }
    seg[off] = 0;
    seg[off + 1] = 0;
    let sum = checksum::sum(seg, address_sum(src, dst) + proto as u64 + seg.len() as u64);
    let mut c = checksum::finish(sum);
    if c == 0 && proto == 17 {
        c = 0xffff;
    }
    seg[off..off + 2].copy_from_slice(&c.to_be_bytes());
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

fn wrap(l: &Layer, next: Option<&Layer>, inner: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(inner.len() + 64);
    match l {
        Layer::Eth { dst, src, vlans } => {
            out.extend_from_slice(dst);
            out.extend_from_slice(src);
            for (tpid, vid) in vlans {
                out.extend_from_slice(&tpid.to_be_bytes());
                out.extend_from_slice(&(vid & 0x0fff).to_be_bytes());
            }
            let et: u16 = match next {
                Some(Layer::Ip { src, .. }) | Some(Layer::IpFrag { src, .. }) => {
                    if src.is_ipv4() {
                        0x0800
                    } else {
                        0x86dd
                    }
                }
                _ => 0x88b5, // local experimental
            };
            out.extend_from_slice(&et.to_be_bytes());
            out.extend_from_slice(&inner);
        }
        Layer::Ip { src, dst } => return ip(src, dst, ip_proto_of(next), None, inner),
        Layer::IpFrag { src, dst, more, offset8 } => return ip(src, dst, ip_proto_of(next), Some((*more, *offset8)), inner),
        Layer::Udp { sport, dport } => {
            out.extend_from_slice(&sport.to_be_bytes());
            out.extend_from_slice(&dport.to_be_bytes());
            out.extend_from_slice(&((inner.len() + 8) as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&inner);
        }
        Layer::Tcp { sport, dport } => {
            out.extend_from_slice(&sport.to_be_bytes());
            out.extend_from_slice(&dport.to_be_bytes());
            out.extend_from_slice(&1u32.to_be_bytes()); // seq
            out.extend_from_slice(&0u32.to_be_bytes()); // ack
            out.push(5 << 4);
            out.push(0x18); // PSH ACK
            out.extend_from_slice(&65535u16.to_be_bytes());
            out.extend_from_slice(&[0, 0, 0, 0]);
            out.extend_from_slice(&inner);
        }
        Layer::Vxlan { vni } => {
            out.extend_from_slice(&[0x08, 0, 0, 0]);
            out.extend_from_slice(&(vni << 8).to_be_bytes());
            out.extend_from_slice(&inner);
        }
        Layer::Gtpu { teid, exts, msg_type } => {
            let mut hdr = Vec::new();
            if !exts.is_empty() {
                hdr.extend_from_slice(&[0, 0, 0]); // seq, N-PDU
                hdr.push(exts[0].0);
                for (i, (_, content)) in exts.iter().enumerate() {
                    let mut c = content.clone();
                    while (c.len() + 2) % 4 != 0 {
                        c.push(0);
                    }
                    hdr.push(((c.len() + 2) / 4) as u8);
                    hdr.extend_from_slice(&c);
                    hdr.push(exts.get(i + 1).map(|e| e.0).unwrap_or(0));
                }
            }
            let flags = 0x30 | if exts.is_empty() { 0 } else { 0x04 };
            out.push(flags);
            out.push(*msg_type);
            out.extend_from_slice(&((hdr.len() + inner.len()) as u16).to_be_bytes());
            out.extend_from_slice(&teid.to_be_bytes());
            out.extend_from_slice(&hdr);
            out.extend_from_slice(&inner);
        }
    }
    out
}

fn ip(src: &IpAddr, dst: &IpAddr, proto: u8, frag: Option<(bool, u16)>, mut inner: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(inner.len() + 48);
    let first = frag.is_none_or(|(_, off)| off == 0);
    let whole = frag.is_none();
    if whole || first {
        l4_checksum(src, dst, proto, &mut inner);
    }
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let tot = (20 + inner.len()) as u16;
            out.extend_from_slice(&[0x45, 0]);
            out.extend_from_slice(&tot.to_be_bytes());
            out.extend_from_slice(&[0x12, 0x34]);
            let fo = match frag {
                None => 0x4000u16, // DF
                Some((more, off)) => (if more { 0x2000 } else { 0 }) | (off & 0x1fff),
            };
            out.extend_from_slice(&fo.to_be_bytes());
            out.extend_from_slice(&[64, proto, 0, 0]);
            out.extend_from_slice(&s.octets());
            out.extend_from_slice(&d.octets());
            let c = checksum::internet(&out[..20]);
            out[10..12].copy_from_slice(&c.to_be_bytes());
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
                ext.extend_from_slice(&[proto, 0]);
                ext.extend_from_slice(&((off << 3) | more as u16).to_be_bytes());
                ext.extend_from_slice(&0x1234_5678u32.to_be_bytes());
                next = 44;
            }
            out.extend_from_slice(&[0x60, 0, 0, 0]);
            out.extend_from_slice(&((ext.len() + inner.len()) as u16).to_be_bytes());
            out.push(next);
            out.push(64);
            out.extend_from_slice(&s);
            out.extend_from_slice(&d);
            out.extend_from_slice(&ext);
        }
    }
    out.extend_from_slice(&inner);
    out
}

/// The TEID, inner source address and inner destination port of a GTP-U G-PDU
/// payload (what a UDP socket on port 2152 receives): identifies a service.
pub fn parse_gtpu_payload(p: &[u8]) -> Option<(u32, IpAddr, u16)> {
    if p.len() < 8 || p[0] >> 5 != 1 || p[1] != 0xff {
        return None;
    }
    let teid = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
    let mut off = 8;
    if p[0] & 0x07 != 0 {
        let mut next = *p.get(11)?;
        off = 12;
        if p[0] & 0x04 == 0 {
            next = 0;
        }
        let mut n = 0;
        while next != 0 && n < 16 {
            let len = *p.get(off)? as usize * 4;
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
        4 if ip.len() >= 24 => {
            let ihl = (ip[0] & 0x0f) as usize * 4;
            let src = IpAddr::from([ip[12], ip[13], ip[14], ip[15]]);
            let dport = u16::from_be_bytes([*ip.get(ihl + 2)?, *ip.get(ihl + 3)?]);
            Some((teid, src, dport))
        }
        6 if ip.len() >= 44 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&ip[8..24]);
            Some((teid, IpAddr::from(a), u16::from_be_bytes([ip[42], ip[43]])))
        }
        _ => None,
    }
}

/// Verifies the IPv4 header checksum at `off` (tests of the forward rewrite).
pub fn ipv4_header_ok(frame: &[u8], off: usize) -> bool {
    frame.get(off..off + 20).is_some_and(|h| checksum::internet(h) == 0)
}

/// Verifies a UDP checksum (IPv4 or IPv6 by the header at `ip_off`).
pub fn udp_checksum_ok(frame: &[u8], ip_off: usize) -> bool {
    let Some(v) = frame.get(ip_off).map(|b| b >> 4) else { return false };
    let (src, dst, l4): (IpAddr, IpAddr, usize) = match v {
        4 => {
            let Some(h) = frame.get(ip_off..ip_off + 20) else { return false };
            (IpAddr::from([h[12], h[13], h[14], h[15]]), IpAddr::from([h[16], h[17], h[18], h[19]]), ip_off + (h[0] as usize & 0xf) * 4)
        }
        6 => {
            let Some(h) = frame.get(ip_off..ip_off + 40) else { return false };
            let mut s = [0u8; 16];
            let mut d = [0u8; 16];
            s.copy_from_slice(&h[8..24]);
            d.copy_from_slice(&h[24..40]);
            (IpAddr::from(s), IpAddr::from(d), ip_off + 40)
        }
        _ => return false,
    };
    let Some(u) = frame.get(l4..) else { return false };
    if u.len() < 8 {
        return false;
    }
    let ulen = u16::from_be_bytes([u[4], u[5]]) as usize;
    let Some(seg) = u.get(..ulen) else { return false };
    if seg[6] == 0 && seg[7] == 0 && v == 4 {
        return true; // no checksum
    }
    // Both addresses come from one header, so they are of one family.
    checksum::finish(checksum::sum(seg, address_sum(&src, &dst) + 17 + ulen as u64)) == 0
}
