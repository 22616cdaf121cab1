//! ARP for IPv4 over Ethernet (RFC 826): what a datapath that owns its port
//! (DPDK) needs to answer requests for its own address and to resolve peers,
//! so kernel stacks on the link can talk to it.
//!
//! Pure functions over byte slices: no allocation, no panics on any input.
//! What the parser accepts: an Ethernet II frame of ethertype 0x0806 whose ARP
//! header says Ethernet (htype 1), IPv4 (ptype 0x0800), hlen 6, plen 4, and
//! operation 1 (request) or 2 (reply). Anything after the 28 ARP bytes
//! (Ethernet padding) is ignored.

use crate::ethernet::{self, EthernetFrame};
use crate::field::{be16, ipv4, mac, set_be16};
use crate::frame::{MacAddr, ETHERTYPE_ARP, ETHERTYPE_IPV4};
use crate::ETH_HLEN;
use std::net::Ipv4Addr;

/// Bytes of an ARP packet for IPv4 over Ethernet.
pub const ARP_LEN: usize = 28;
/// Bytes of an Ethernet frame carrying it (before padding to 60).
pub const ARP_FRAME_LEN: usize = ETH_HLEN + ARP_LEN;

/// ARP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArpOp {
    /// Operation 1: who has the target address? (usually broadcast)
    Request,
    /// Operation 2: the sender has the address asked for (usually unicast).
    Reply,
}

impl ArpOp {
    fn code(self) -> u16 {
        match self {
            ArpOp::Request => 1,
            ArpOp::Reply => 2,
        }
    }
}

/// A parsed ARP packet (IPv4 over Ethernet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpPacket {
    /// Request or reply.
    pub op: ArpOp,
    /// Ethernet source of the frame that carried it.
    pub eth_src: MacAddr,
    /// Ethernet destination of the frame that carried it.
    pub eth_dst: MacAddr,
    /// Hardware address of the sender (the answer, in a reply).
    pub sender_mac: MacAddr,
    /// IPv4 address of the sender (0.0.0.0 in an RFC 5227 probe).
    pub sender_ip: Ipv4Addr,
    /// Hardware address of the target (zeros in a request: unknown).
    pub target_mac: MacAddr,
    /// IPv4 address asked for (request) or of the requester (reply).
    pub target_ip: Ipv4Addr,
}

impl ArpPacket {
    /// A request asking who has `target_ip`, broadcast.
    pub fn request(sender_mac: MacAddr, sender_ip: Ipv4Addr, target_ip: Ipv4Addr) -> ArpPacket {
        ArpPacket { op: ArpOp::Request, eth_src: sender_mac, eth_dst: MacAddr::BROADCAST, sender_mac, sender_ip, target_mac: MacAddr::default(), target_ip }
    }

    /// The reply to this request from the owner of `target_ip` (`my_mac`),
    /// sent back to the requester by unicast.
    pub fn reply_to(&self, my_mac: MacAddr) -> ArpPacket {
        ArpPacket {
            op: ArpOp::Reply,
            eth_src: my_mac,
            eth_dst: self.sender_mac,
            sender_mac: my_mac,
            sender_ip: self.target_ip,
            target_mac: self.sender_mac,
            target_ip: self.sender_ip,
        }
    }

    /// True for a request asking for `ip` (also answers gratuitous probes
    /// whose sender address is 0.0.0.0, as RFC 5227 expects).
    pub fn is_request_for(&self, ip: Ipv4Addr) -> bool {
        self.op == ArpOp::Request && self.target_ip == ip
    }
}

/// Why a frame is not an ARP packet detpath understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ArpError {
    /// The frame ends before the 28 bytes of ARP after the Ethernet header.
    #[error("frame shorter than an ARP packet")]
    Truncated,
    /// The Ethernet type (carried) is not ARP: the frame is for another parser.
    #[error("not ARP (ethertype {0:#06x})")]
    NotArp(u16),
    /// ARP for a hardware type other than Ethernet or a protocol other than
    /// IPv4 (or address lengths other than 6 and 4): ignored.
    #[error("ARP for another hardware or protocol type")]
    Unsupported,
    /// An operation (carried) other than request (1) or reply (2), e.g. RARP: ignored.
    #[error("unknown ARP operation {0}")]
    BadOp(u16),
}

/// The ARP packet's fields (IPv4 over Ethernet), from the start of the ARP header.
pub mod field {
    use crate::field::Field;
    /// Hardware type (1: Ethernet).
    pub const HTYPE: Field = 0..2;
    /// Protocol type (0x0800: IPv4).
    pub const PTYPE: Field = 2..4;
    /// Hardware address length (6).
    pub const HLEN: usize = 4;
    /// Protocol address length (4).
    pub const PLEN: usize = 5;
    /// Operation (1 request, 2 reply).
    pub const OPER: Field = 6..8;
    /// Sender hardware address.
    pub const SHA: Field = 8..14;
    /// Sender protocol address.
    pub const SPA: Field = 14..18;
    /// Target hardware address.
    pub const THA: Field = 18..24;
    /// Target protocol address.
    pub const TPA: Field = 24..28;
}

/// True when the frame's ethertype is ARP (cheap test before parsing).
pub fn is_arp(frame: &[u8]) -> bool {
    EthernetFrame::new_checked(frame).is_some_and(|e| e.ethertype() == ETHERTYPE_ARP)
}

/// Parses an Ethernet frame carrying ARP. Never panics.
pub fn parse_arp_frame(frame: &[u8]) -> Result<ArpPacket, ArpError> {
    let eth = EthernetFrame::new_checked(frame).ok_or(ArpError::Truncated)?;
    let ethertype = eth.ethertype();
    if ethertype != ETHERTYPE_ARP {
        return Err(ArpError::NotArp(ethertype));
    }
    if frame.len() < ARP_FRAME_LEN {
        return Err(ArpError::Truncated);
    }
    let a = &frame[ETH_HLEN..ARP_FRAME_LEN];
    if be16(a, field::HTYPE) != 1 || be16(a, field::PTYPE) != ETHERTYPE_IPV4 || a[field::HLEN] != 6 || a[field::PLEN] != 4 {
        return Err(ArpError::Unsupported);
    }
    let op = match be16(a, field::OPER) {
        1 => ArpOp::Request,
        2 => ArpOp::Reply,
        other => return Err(ArpError::BadOp(other)),
    };
    Ok(ArpPacket {
        op,
        eth_dst: eth.dst_addr(),
        eth_src: eth.src_addr(),
        sender_mac: mac(a, field::SHA),
        sender_ip: ipv4(a, field::SPA),
        target_mac: mac(a, field::THA),
        target_ip: ipv4(a, field::TPA),
    })
}

/// Writes the frame for `p` into `buf`, zero-padded to `min_len` (60 for
/// the Ethernet minimum without FCS, or 0 for none). Returns the frame
/// length, or `None` when `buf` is too small.
pub fn build_arp_frame(buf: &mut [u8], p: &ArpPacket, min_len: usize) -> Option<usize> {
    let total = ARP_FRAME_LEN.max(min_len);
    if buf.len() < total {
        return None;
    }
    ethernet::write_header(buf, p.eth_dst, p.eth_src, ETHERTYPE_ARP);
    let a = &mut buf[ETH_HLEN..ARP_FRAME_LEN];
    set_be16(a, field::HTYPE, 1);
    set_be16(a, field::PTYPE, ETHERTYPE_IPV4);
    a[field::HLEN] = 6;
    a[field::PLEN] = 4;
    set_be16(a, field::OPER, p.op.code());
    a[field::SHA].copy_from_slice(&p.sender_mac.0);
    a[field::SPA].copy_from_slice(&p.sender_ip.octets());
    a[field::THA].copy_from_slice(&p.target_mac.0);
    a[field::TPA].copy_from_slice(&p.target_ip.octets());
    buf[ARP_FRAME_LEN..total].fill(0);
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ME: MacAddr = MacAddr([2, 0x64, 0x70, 0, 0, 0x0a]);
    const PEER: MacAddr = MacAddr([2, 0x64, 0x70, 0, 0, 0x0b]);

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn request_round_trip() {
        let req = ArpPacket::request(ME, ip("10.77.0.1"), ip("10.77.0.2"));
        let mut buf = [0u8; 64];
        let n = build_arp_frame(&mut buf, &req, 60).unwrap();
        assert_eq!(n, 60);
        assert!(is_arp(&buf[..n]));
        assert_eq!(&buf[0..6], &[0xff; 6]);
        let back = parse_arp_frame(&buf[..n]).unwrap();
        assert_eq!(back, req);
        assert!(back.is_request_for(ip("10.77.0.2")));
        assert!(!back.is_request_for(ip("10.77.0.1")));
    }

    #[test]
    fn reply_swaps_roles() {
        let req = ArpPacket::request(PEER, ip("10.77.0.2"), ip("10.77.0.1"));
        let rep = req.reply_to(ME);
        assert_eq!(rep.op, ArpOp::Reply);
        assert_eq!((rep.eth_src, rep.eth_dst), (ME, PEER));
        assert_eq!((rep.sender_mac, rep.sender_ip), (ME, ip("10.77.0.1")));
        assert_eq!((rep.target_mac, rep.target_ip), (PEER, ip("10.77.0.2")));
        let mut buf = [0u8; 42];
        assert_eq!(build_arp_frame(&mut buf, &rep, 0), Some(42));
        assert_eq!(parse_arp_frame(&buf).unwrap(), rep);
    }

    /// A request as the Linux kernel sends it (captured bytes).
    #[test]
    fn parses_a_kernel_request() {
        let frame: [u8; 42] = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x64, 0x70, 0x00, 0x00, 0x0b, 0x08, 0x06, // eth
            0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // htype ptype hlen plen op
            0x02, 0x64, 0x70, 0x00, 0x00, 0x0b, 10, 77, 0, 2, // sender
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 10, 77, 0, 1, // target
        ];
        let p = parse_arp_frame(&frame).unwrap();
        assert_eq!(p.op, ArpOp::Request);
        assert_eq!((p.sender_mac, p.sender_ip, p.target_ip), (PEER, ip("10.77.0.2"), ip("10.77.0.1")));
    }

    #[test]
    fn rejections_are_named() {
        let req = ArpPacket::request(ME, ip("10.0.0.1"), ip("10.0.0.2"));
        let mut f = [0u8; 42];
        build_arp_frame(&mut f, &req, 0).unwrap();
        for n in 0..42 {
            assert_eq!(parse_arp_frame(&f[..n]), Err(ArpError::Truncated), "cut at {n}");
        }
        let mut g = f;
        g[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        assert_eq!(parse_arp_frame(&g), Err(ArpError::NotArp(0x0800)));
        let mut g = f;
        g[ETH_HLEN + 1] = 6; // htype 6 (IEEE 802)
        assert_eq!(parse_arp_frame(&g), Err(ArpError::Unsupported));
        let mut g = f;
        g[ETH_HLEN + 7] = 3; // RARP request
        assert_eq!(parse_arp_frame(&g), Err(ArpError::BadOp(3)));
        assert!(build_arp_frame(&mut [0u8; 41], &req, 0).is_none());
        assert!(build_arp_frame(&mut [0u8; 59], &req, 60).is_none());
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = parse_arp_frame(&bytes);
            let _ = is_arp(&bytes);
        }

        #[test]
        fn build_parse_round_trip(s in any::<[u8; 6]>(), sip in any::<u32>(), tip in any::<u32>(), reply in any::<bool>()) {
            let mut p = ArpPacket::request(MacAddr(s), Ipv4Addr::from(sip), Ipv4Addr::from(tip));
            if reply { p = p.reply_to(PEER); }
            let mut buf = [0u8; 60];
            let n = build_arp_frame(&mut buf, &p, 60).unwrap();
            prop_assert_eq!(parse_arp_frame(&buf[..n]).unwrap(), p);
        }
    }
}
