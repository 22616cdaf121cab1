//! IPv4 reassembly of UDP datagrams that arrive as fragments, for endpoints
//! that receive frames themselves (afxdp, xdppoll, dpdk). A kernel UDP
//! sender splits any datagram above the path MTU (CycloneDDS sends RTPS
//! messages of up to 14,720 bytes by default); the kernel reassembles them
//! for its sockets, a bypass endpoint must do it itself.
//!
//! Fixed memory, allocated once: `slots` datagrams in progress, each with a
//! buffer for the largest IPv4 payload and a bitmap of the 8-byte blocks
//! received. A fragment that overlaps one already held drops the whole
//! datagram (the overlap attacks of RFC 1858/3128 and honest duplicates
//! alike: a reliable protocol resends). A datagram not completed within the
//! timeout, or the oldest one when every slot is taken, is dropped and counted.

use crate::checksum;
use crate::ethernet::EthernetFrame;
use crate::frame::{FrameError, IPPROTO_UDP};
use crate::ipv4::Ipv4Packet;
use crate::udp::UdpPacket;
use crate::{ETH_HLEN, IPV4_HLEN, UDP_HLEN};
use std::net::{Ipv4Addr, SocketAddrV4};

/// Largest IPv4 payload (total length 65,535 minus a 20-byte header).
pub const MAX_IP_PAYLOAD: usize = 65_535 - IPV4_HLEN;
const BLOCKS: usize = MAX_IP_PAYLOAD.div_ceil(8);

/// One IPv4 fragment, checked (header checksum, lengths), not yet placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment<'a> {
    /// IPv4 source address (part of the key that groups fragments).
    pub src: Ipv4Addr,
    /// IPv4 destination address (part of the key).
    pub dst: Ipv4Addr,
    /// IPv4 identification field, the same in every fragment of one datagram (part of the key).
    pub id: u16,
    /// IP protocol number (17: UDP; part of the key).
    pub protocol: u8,
    /// Byte offset of `data` in the IPv4 payload.
    pub offset: usize,
    /// More fragments follow (MF).
    pub more: bool,
    /// The fragment's bytes of the IPv4 payload, borrowed from the frame.
    pub data: &'a [u8],
}

/// The fragment in an Ethernet/IPv4 frame, or why it is not one
/// (`FrameError::Fragment` is never returned: a whole datagram is
/// `Err(NotAFragment)`, for the caller's ordinary parser).
pub fn parse_fragment(frame: &[u8]) -> Result<Fragment<'_>, FragError> {
    if frame.len() < ETH_HLEN + IPV4_HLEN {
        return Err(FragError::Frame(FrameError::Truncated));
    }
    let eth = EthernetFrame::new_unchecked(frame);
    if eth.ethertype() != crate::frame::ETHERTYPE_IPV4 {
        return Err(FragError::Frame(FrameError::NotIpv4(eth.ethertype())));
    }
    let bytes = eth.into_payload();
    let ip = Ipv4Packet::new_unchecked(bytes);
    let (ihl, total) = (ip.header_len(), ip.total_len());
    if ip.version() != 4 || ihl < IPV4_HLEN || total < ihl {
        return Err(FragError::Frame(FrameError::BadIpHeader));
    }
    if bytes.len() < ihl || bytes.len() < total {
        return Err(FragError::Frame(FrameError::Truncated));
    }
    if !ip.verify_checksum() {
        return Err(FragError::Frame(FrameError::BadIpChecksum));
    }
    let (more, offset) = (ip.more_frags(), ip.frag_offset());
    if !more && offset == 0 {
        return Err(FragError::NotAFragment);
    }
    let data = &bytes[ihl..total];
    // Every fragment but the last carries a multiple of 8 bytes (RFC 791).
    if (more && !data.len().is_multiple_of(8)) || data.is_empty() || offset + data.len() > MAX_IP_PAYLOAD {
        return Err(FragError::BadFragment);
    }
    Ok(Fragment { src: ip.src_addr(), dst: ip.dst_addr(), id: ip.ident(), protocol: ip.protocol(), offset, more, data })
}

/// Why a fragment or a reassembled datagram was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FragError {
    /// The frame's Ethernet or IPv4 header is not acceptable (the reason
    /// carried, as [`crate::parse_udp_frame`] gives it).
    #[error("{0}")]
    Frame(FrameError),
    /// The frame holds a whole datagram (MF clear, offset 0): parse it with
    /// [`crate::parse_udp_frame`] instead.
    #[error("a whole datagram, not a fragment")]
    NotAFragment,
    /// Empty data, a non-last fragment whose length is not a multiple of 8,
    /// or data ending past the largest IPv4 payload.
    #[error("fragment length or offset out of bounds")]
    BadFragment,
    /// The fragment overlaps bytes already held, or lies past the datagram's
    /// end: the whole datagram is dropped (the sender must resend it).
    #[error("fragment overlaps one already received")]
    Overlap,
    /// A fragment of another protocol (number carried): only UDP is reassembled.
    #[error("not UDP (IP protocol {0})")]
    NotUdp(u8),
    /// The completed datagram's UDP header is short, its length differs from
    /// the reassembled size, or its checksum fails: the datagram is dropped.
    #[error("reassembled UDP length or checksum wrong")]
    BadUdp,
}

/// A reassembled UDP datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reassembled<'a> {
    /// IPv4 source address and UDP source port.
    pub src: SocketAddrV4,
    /// IPv4 destination address and UDP destination port.
    pub dst: SocketAddrV4,
    /// The UDP payload, borrowed from the reassembler's slot until its next `offer`.
    pub payload: &'a [u8],
}

/// Counters of the reassembler's drops (completed datagrams are the caller's to count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReasmStats {
    /// Fragments placed.
    pub fragments: u64,
    /// Datagrams completed.
    pub completed: u64,
    /// Datagrams dropped unfinished: timed out or evicted for a newer one.
    pub expired: u64,
    /// Datagrams dropped for an overlapping fragment or a bad UDP header.
    pub dropped: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    id: u16,
    protocol: u8,
}

struct Slot {
    key: Option<Key>,
    started_ns: u64,
    /// The IPv4 payload being rebuilt (the UDP header first).
    buf: Box<[u8]>,
    /// One bit per 8-byte block received.
    blocks: Box<[u64]>,
    /// Bytes received so far.
    have: usize,
    /// The IPv4 payload length, once the last fragment (MF clear) came.
    total: Option<usize>,
}

impl Slot {
    fn reset(&mut self, key: Option<Key>, now_ns: u64) {
        if self.have > 0 {
            self.blocks.fill(0);
        }
        *self = Slot { key, started_ns: now_ns, buf: std::mem::take(&mut self.buf), blocks: std::mem::take(&mut self.blocks), have: 0, total: None };
    }
}

/// Datagrams in reassembly; see the module documentation.
pub struct Reassembler {
    slots: Vec<Slot>,
    timeout_ns: u64,
    stats: ReasmStats,
}

impl Reassembler {
    /// Room for `slots` datagrams at once (each about 72 KiB), each dropped
    /// when not complete `timeout_ns` after its first fragment.
    pub fn new(slots: usize, timeout_ns: u64) -> Reassembler {
        let slot = || Slot {
            key: None,
            started_ns: 0,
            buf: vec![0u8; MAX_IP_PAYLOAD].into_boxed_slice(),
            blocks: vec![0u64; BLOCKS.div_ceil(64)].into_boxed_slice(),
            have: 0,
            total: None,
        };
        Reassembler { slots: (0..slots.max(1)).map(|_| slot()).collect(), timeout_ns, stats: ReasmStats::default() }
    }

    /// The counters since creation.
    pub fn stats(&self) -> ReasmStats {
        self.stats
    }

    /// Places `frag`; returns the UDP datagram when it completes one,
    /// `Ok(None)` while it is incomplete, and an error when the datagram it
    /// belongs to was dropped. Never allocates.
    pub fn offer(&mut self, frag: &Fragment<'_>, now_ns: u64, verify_udp_checksum: bool) -> Result<Option<Reassembled<'_>>, FragError> {
        if frag.protocol != IPPROTO_UDP {
            return Err(FragError::NotUdp(frag.protocol));
        }
        let key = Key { src: frag.src, dst: frag.dst, id: frag.id, protocol: frag.protocol };
        let i = self.slot_for(key, now_ns);
        let slot = &mut self.slots[i];
        // Reject overlaps block by block (offsets are multiples of 8).
        let (first, end) = (frag.offset / 8, (frag.offset + frag.data.len()).div_ceil(8));
        let overlaps = (first..end).any(|b| slot.blocks[b / 64] & (1 << (b % 64)) != 0);
        // Past the end a last fragment set, or a last fragment with data already beyond it.
        let beyond = match (slot.total, frag.more) {
            (Some(t), _) => frag.offset + frag.data.len() > t || !frag.more,
            (None, true) => false,
            (None, false) => (end..BLOCKS).any(|b| slot.blocks[b / 64] & (1 << (b % 64)) != 0),
        };
        if overlaps || beyond {
            slot.reset(None, now_ns);
            self.stats.dropped += 1;
            return Err(FragError::Overlap);
        }
        for b in first..end {
            slot.blocks[b / 64] |= 1 << (b % 64);
        }
        slot.buf[frag.offset..frag.offset + frag.data.len()].copy_from_slice(frag.data);
        slot.have += frag.data.len();
        if !frag.more {
            slot.total = Some(frag.offset + frag.data.len());
        }
        self.stats.fragments += 1;
        let Some(total) = slot.total.filter(|t| slot.have == *t) else { return Ok(None) };
        // Complete: check the UDP header over the whole datagram.
        let bytes = &slot.buf[..total];
        let Some(udp) = UdpPacket::new_checked(bytes) else {
            self.slots[i].reset(None, now_ns);
            self.stats.dropped += 1;
            return Err(FragError::BadUdp);
        };
        let ok = udp.len() == total && {
            !verify_udp_checksum || udp.checksum() == 0 || {
                let acc = checksum::pseudo_header_sum(key.src, key.dst, IPPROTO_UDP, total as u16);
                checksum::finish(checksum::sum(bytes, acc)) == 0
            }
        };
        let (sport, dport) = (udp.src_port(), udp.dst_port());
        // The slot is free again for the next fragment; the bytes stay until then.
        self.slots[i].reset(None, now_ns);
        if !ok {
            self.stats.dropped += 1;
            return Err(FragError::BadUdp);
        }
        self.stats.completed += 1;
        Ok(Some(Reassembled { src: SocketAddrV4::new(key.src, sport), dst: SocketAddrV4::new(key.dst, dport), payload: &self.slots[i].buf[UDP_HLEN..total] }))
    }

    /// The slot holding `key`, else a free or timed-out one, else the oldest (evicted).
    fn slot_for(&mut self, key: Key, now_ns: u64) -> usize {
        if let Some(i) = self.slots.iter().position(|s| s.key == Some(key)) {
            if now_ns.saturating_sub(self.slots[i].started_ns) <= self.timeout_ns {
                return i;
            }
            self.stats.expired += 1;
            self.slots[i].reset(Some(key), now_ns);
            return i;
        }
        let i = match self.slots.iter().position(|s| s.key.is_none()) {
            Some(i) => i,
            None => {
                let i = (0..self.slots.len()).min_by_key(|&i| self.slots[i].started_ns).unwrap_or(0);
                self.stats.expired += 1;
                i
            }
        };
        self.slots[i].reset(Some(key), now_ns);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{build_udp_frame, parse_udp_frame, MacAddr, UdpFrameHeader};

    const A: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);

    /// The frames of one datagram, fragmented for `mtu` as a kernel does.
    fn fragments(payload: &[u8], id: u16, mtu: usize) -> Vec<Vec<u8>> {
        let h = UdpFrameHeader {
            src_mac: MacAddr([2; 6]),
            dst_mac: MacAddr([4; 6]),
            src: SocketAddrV4::new(A, 7410),
            dst: SocketAddrV4::new(B, 7412),
            ip_id: id,
            ttl: 64,
            tos: 0,
        };
        (0..crate::udp_fragment_count(payload.len(), mtu))
            .map(|k| {
                let mut f = vec![0u8; mtu + ETH_HLEN];
                let n = crate::build_udp_fragment(&mut f, &h, payload, mtu, k).unwrap();
                f.truncate(n);
                f
            })
            .collect()
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn a_fragmented_datagram_comes_back_whole_in_any_order() {
        let p = data(14_000);
        let mut frags = fragments(&p, 9, 1500);
        assert_eq!(frags.len(), 10);
        assert!(frags.iter().all(|f| parse_udp_frame(f, true) == Err(FrameError::Fragment)));
        frags.reverse();
        frags.swap(2, 7);
        let mut r = Reassembler::new(2, 1_000_000_000);
        for (k, f) in frags.iter().enumerate() {
            let frag = parse_fragment(f).unwrap();
            let got = r.offer(&frag, 10, true).unwrap();
            if k + 1 < frags.len() {
                assert!(got.is_none(), "complete after {} of 10", k + 1);
            } else {
                let d = got.expect("complete");
                assert_eq!(d.payload, &p[..]);
                assert_eq!((d.src, d.dst), (SocketAddrV4::new(A, 7410), SocketAddrV4::new(B, 7412)));
            }
        }
        assert_eq!(r.stats(), ReasmStats { fragments: 10, completed: 1, expired: 0, dropped: 0 });
    }

    #[test]
    fn fragments_are_cut_as_a_kernel_cuts_them() {
        let f = fragments(&data(14_000), 9, 1500);
        let sizes: Vec<usize> = f.iter().map(|x| x.len() - ETH_HLEN).collect();
        assert_eq!(sizes, [vec![1500; 9], vec![20 + 14_008 - 9 * 1480]].concat(), "1480 data bytes each, the rest last");
        let parsed: Vec<_> = f.iter().map(|x| parse_fragment(x).unwrap()).collect();
        assert!(parsed.iter().enumerate().all(|(k, p)| p.offset == k * 1480 && p.more == (k < 9) && p.id == 9));
        assert_eq!(crate::udp_fragment_count(1472, 1500), 1, "fits one frame");
        assert_eq!(crate::udp_fragment_count(1473, 1500), 2);
        assert!(
            crate::build_udp_fragment(
                &mut [0u8; 1514],
                &UdpFrameHeader {
                    src_mac: MacAddr([0; 6]),
                    dst_mac: MacAddr([0; 6]),
                    src: SocketAddrV4::new(A, 1),
                    dst: SocketAddrV4::new(B, 2),
                    ip_id: 0,
                    ttl: 1,
                    tos: 0
                },
                &data(3000),
                1500,
                3
            )
            .is_none(),
            "past the last"
        );
    }

    #[test]
    fn interleaved_datagrams_use_their_own_slots() {
        let (p, q) = (data(3000), data(5000));
        let (fp, fq) = (fragments(&p, 1, 1500), fragments(&q, 2, 1500));
        let mut r = Reassembler::new(2, 1_000_000_000);
        let mut done = Vec::new();
        for f in fp.iter().zip(fq.iter()).flat_map(|(a, b)| [a, b]).chain(fq[fp.len()..].iter()) {
            if let Some(d) = r.offer(&parse_fragment(f).unwrap(), 0, true).unwrap() {
                done.push(d.payload.to_vec());
            }
        }
        assert_eq!(done, vec![p, q]);
    }

    #[test]
    fn overlaps_duplicates_and_bad_checksums_drop_the_datagram() {
        let p = data(4000);
        let f = fragments(&p, 3, 1500);
        let mut r = Reassembler::new(1, 1_000_000_000);
        r.offer(&parse_fragment(&f[0]).unwrap(), 0, true).unwrap();
        assert_eq!(r.offer(&parse_fragment(&f[0]).unwrap(), 0, true), Err(FragError::Overlap));
        // Starting over after the drop works.
        for (k, x) in f.iter().enumerate() {
            let got = r.offer(&parse_fragment(x).unwrap(), 0, true).unwrap();
            assert_eq!(got.is_some(), k + 1 == f.len());
        }
        // A corrupted payload byte fails the UDP checksum of the whole.
        let mut bad = f.clone();
        let last = bad.len() - 1;
        let at = bad[last].len() - 1;
        bad[last][at] ^= 0xff;
        for x in &bad[..last] {
            r.offer(&parse_fragment(x).unwrap(), 0, true).unwrap();
        }
        assert_eq!(r.offer(&parse_fragment(&bad[last]).unwrap(), 0, true), Err(FragError::BadUdp));
        assert_eq!(r.stats().dropped, 2);
    }

    #[test]
    fn unfinished_datagrams_expire_and_the_oldest_is_evicted() {
        let f = fragments(&data(3000), 4, 1500);
        let g = fragments(&data(3000), 5, 1500);
        let mut r = Reassembler::new(1, 1_000);
        r.offer(&parse_fragment(&f[0]).unwrap(), 0, true).unwrap();
        // Another datagram takes the only slot: the first is evicted.
        r.offer(&parse_fragment(&g[0]).unwrap(), 10, true).unwrap();
        assert_eq!(r.stats().expired, 1);
        // The rest of g after its timeout: it starts over and cannot complete.
        for x in &g[1..] {
            assert_eq!(r.offer(&parse_fragment(x).unwrap(), 5_000, true), Ok(None));
        }
        assert_eq!(r.stats().expired, 2);
        assert_eq!(r.stats().completed, 0);
    }

    #[test]
    fn malformed_fragments_are_refused_by_name() {
        let f = fragments(&data(3000), 6, 1500);
        let mut odd = f[0].clone();
        odd.pop(); // 8-byte rule broken (MF set, length not a multiple of 8)
        let ip = &mut odd[ETH_HLEN..];
        let len = u16::from_be_bytes([ip[2], ip[3]]) - 1;
        ip[2..4].copy_from_slice(&len.to_be_bytes());
        ip[10..12].copy_from_slice(&[0, 0]);
        let c = checksum::internet(&ip[..IPV4_HLEN]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(parse_fragment(&odd), Err(FragError::BadFragment));
        assert_eq!(parse_fragment(&f[0][..30]), Err(FragError::Frame(FrameError::Truncated)));
        let mut whole = vec![0u8; 200];
        let h = UdpFrameHeader {
            src_mac: MacAddr([2; 6]),
            dst_mac: MacAddr([4; 6]),
            src: SocketAddrV4::new(A, 1),
            dst: SocketAddrV4::new(B, 2),
            ip_id: 0,
            ttl: 64,
            tos: 0,
        };
        let n = build_udp_frame(&mut whole, &h, b"whole").unwrap();
        assert_eq!(parse_fragment(&whole[..n]), Err(FragError::NotAFragment));
    }
}
