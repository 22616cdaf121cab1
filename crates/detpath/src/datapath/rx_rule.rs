//! The one receive rule of the datapaths that parse frames themselves
//! (afxdp, xdppoll, dpdk): what a received frame is, and which counter it
//! bumps. Every one of them calls [`UdpRule::judge`] (datagram endpoints)
//! or [`judge_frame`] (frame endpoints) on every frame, so the same frame
//! counts the same everywhere.
//!
//! **For this endpoint** is the match the XDP filter makes
//! (`bpf/detpath_filter.h`, `dp_is_ours`): an Ethernet II frame of EtherType
//! IPv4 whose IPv4 header (version 4, IHL at least 5) says UDP to our
//! address, and, unless it is a later fragment (offset not 0, no UDP header),
//! whose UDP header is in the frame and says our port. Anything else is
//! **not for me** (`rx_not_for_me`): other EtherTypes, other protocols,
//! another address or port (a well-formed datagram to another host is not
//! malformed), and frames too short or too broken to say whom they are for
//! (a runt, IHL below 5). On afxdp and xdppoll the XDP program applies this
//! part and passes those frames to the kernel (its `passed` count is their
//! `rx_not_for_me`); on dpdk, which sees every frame, this module does.
//!
//! A frame for this endpoint is then checked in full
//! ([`detpath_wire::parse_udp_frame`]: lengths, IHL against the frame, the
//! IPv4 header checksum, the UDP length and checksum): a failure is
//! **malformed** (`rx_malformed`). A fragment goes to the reassembler: it is
//! **held** (no counter) until it completes its datagram, which is then
//! delivered, or dropped as malformed (overlap, bad UDP header); a
//! reassembled datagram to another port is not for me. A delivered datagram
//! counts `rx_packets`, `rx_bytes` and, when the caller's buffer was too
//! short, `rx_truncated` ([`count_delivered`]).
//!
//! Frame endpoints (bare Ethernet payloads of one EtherType): a frame of
//! another EtherType, or to another host's unicast address, or shorter than
//! an Ethernet header, is not for me; every other frame is delivered.

use crate::datapath::defrag::{Defrag, Defragged};
use crate::endpoint::Counters;
use detpath_wire::ipv4::Ipv4Packet;
use detpath_wire::raweth::{strip_eth_frame, StripError};
use detpath_wire::{parse_udp_frame, EthernetFrame, FrameError, MacAddr, UdpPacket, IPV4_HLEN};
use std::net::SocketAddrV4;

/// What a received frame is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict<T> {
    /// For this endpoint: deliver it (counted by [`count_delivered`] when copied out).
    Deliver(T),
    /// A fragment kept for reassembly (no counter).
    Held,
    /// Not for this endpoint (`rx_not_for_me`).
    NotForMe,
    /// For this endpoint, but failed a check (`rx_malformed`).
    Malformed,
}

impl<T> Verdict<T> {
    /// The delivery made into something else (a copy into the caller's buffer, say).
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Verdict<U> {
        match self {
            Verdict::Deliver(t) => Verdict::Deliver(f(t)),
            Verdict::Held => Verdict::Held,
            Verdict::NotForMe => Verdict::NotForMe,
            Verdict::Malformed => Verdict::Malformed,
        }
    }

    /// Bumps the counter of a frame not delivered (none for `Deliver` and `Held`).
    pub(crate) fn count_refusal(&self, c: &mut Counters) {
        match self {
            Verdict::NotForMe => c.rx_not_for_me += 1,
            Verdict::Malformed => c.rx_malformed += 1,
            Verdict::Deliver(_) | Verdict::Held => {}
        }
    }
}

/// Counts a delivered datagram or frame payload of `full` bytes of which `copied` fit the caller's buffer.
pub(crate) fn count_delivered(c: &mut Counters, copied: usize, full: usize) {
    c.rx_packets += 1;
    c.rx_bytes += copied as u64;
    if copied < full {
        c.rx_truncated += 1;
    }
}

/// A UDP datagram for this endpoint.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Datagram<'a> {
    pub src: SocketAddrV4,
    pub payload: &'a [u8],
    /// True when `payload` is in the reassembler, not in the frame.
    pub reassembled: bool,
}

/// The receive rule of a datagram endpoint: its address and port, and a
/// multicast group and port it also takes (dpdk's `group=`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct UdpRule {
    pub local: SocketAddrV4,
    pub group: Option<SocketAddrV4>,
    pub verify_checksum: bool,
}

impl UdpRule {
    fn accepts(&self, dst: SocketAddrV4) -> bool {
        dst == self.local || Some(dst) == self.group
    }

    /// The filter's match (see the module documentation).
    fn is_ours(&self, frame: &[u8]) -> bool {
        let Some(eth) = EthernetFrame::new_checked(frame) else { return false };
        if eth.ethertype() != detpath_wire::frame::ETHERTYPE_IPV4 {
            return false;
        }
        let Some(ip) = Ipv4Packet::new_checked(eth.payload()) else { return false };
        if ip.version() != 4 || ip.header_len() < IPV4_HLEN || ip.protocol() != detpath_wire::frame::IPPROTO_UDP {
            return false;
        }
        let dst = ip.dst_addr();
        let ports = [Some(self.local), self.group].into_iter().flatten().filter(|a| *a.ip() == dst);
        if ip.frag_offset() != 0 {
            return ports.count() > 0;
        }
        let Some(udp) = eth.payload().get(ip.header_len()..).and_then(UdpPacket::new_checked) else { return false };
        ports.into_iter().any(|a| a.port() == udp.dst_port())
    }

    /// Judges one received frame; a fragment goes into `defrag`.
    pub(crate) fn judge<'a>(&self, frame: &'a [u8], defrag: &'a mut Defrag, now_ns: u64) -> Verdict<Datagram<'a>> {
        if !self.is_ours(frame) {
            return Verdict::NotForMe;
        }
        match parse_udp_frame(frame, self.verify_checksum) {
            Ok(f) if self.accepts(f.dst) => Verdict::Deliver(Datagram { src: f.src, payload: f.payload(frame), reassembled: false }),
            Ok(_) | Err(FrameError::NotIpv4(_)) | Err(FrameError::NotUdp(_)) => Verdict::NotForMe,
            Err(FrameError::Fragment) => match defrag.offer(frame, self.verify_checksum, now_ns) {
                Defragged::Held => Verdict::Held,
                Defragged::Datagram { src, dst, payload } if self.accepts(dst) => Verdict::Deliver(Datagram { src, payload, reassembled: true }),
                Defragged::Datagram { .. } => Verdict::NotForMe,
                Defragged::Dropped => Verdict::Malformed,
            },
            Err(_) => Verdict::Malformed,
        }
    }
}

/// A frame endpoint's payload and its sender.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct EthPayload<'a> {
    pub src: MacAddr,
    pub payload: &'a [u8],
}

/// Judges one frame received by the frame endpoint of `local` for
/// `ethertype` (`None`: the socket or program matched it already).
pub(crate) fn judge_frame(frame: &[u8], local: MacAddr, ethertype: Option<u16>) -> Verdict<EthPayload<'_>> {
    match strip_eth_frame(frame, local, ethertype) {
        Ok(f) => Verdict::Deliver(EthPayload { src: f.src, payload: f.payload }),
        Err(StripError::Truncated | StripError::OtherEthertype(_) | StripError::NotForMe) => Verdict::NotForMe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use detpath_wire::ipv4::{self, Ipv4Packet};
    use detpath_wire::{build_udp_fragment, build_udp_frame, ethernet, UdpFrameHeader, ETH_HLEN};

    const ME_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);

    fn rule() -> UdpRule {
        UdpRule { local: "10.77.0.1:7000".parse().unwrap(), group: None, verify_checksum: true }
    }

    fn header(dst: &str) -> UdpFrameHeader {
        UdpFrameHeader {
            src_mac: MacAddr([2, 0, 0, 0, 0, 2]),
            dst_mac: ME_MAC,
            src: "10.77.0.2:9000".parse().unwrap(),
            dst: dst.parse().unwrap(),
            ip_id: 9,
            ttl: 64,
            tos: 0,
        }
    }

    fn frame(dst: &str, payload: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 2048];
        let n = build_udp_frame(&mut b, &header(dst), payload).unwrap();
        b.truncate(n);
        b
    }

    /// The verdict's name (payloads compared separately).
    fn judge(r: &UdpRule, f: &[u8], d: &mut Defrag) -> &'static str {
        match r.judge(f, d, 0) {
            Verdict::Deliver(_) => "deliver",
            Verdict::Held => "held",
            Verdict::NotForMe => "not for me",
            Verdict::Malformed => "malformed",
        }
    }

    fn ip_mut(f: &mut [u8]) -> Ipv4Packet<&mut [u8]> {
        Ipv4Packet::new_unchecked(&mut f[ETH_HLEN..])
    }

    #[test]
    fn well_formed_datagrams_are_judged_by_address_and_port() {
        let mut d = Defrag::default();
        let f = frame("10.77.0.1:7000", b"hi");
        match rule().judge(&f, &mut d, 0) {
            Verdict::Deliver(g) => assert_eq!((g.src, g.payload, g.reassembled), ("10.77.0.2:9000".parse().unwrap(), &b"hi"[..], false)),
            _ => panic!("not delivered"),
        }
        assert_eq!(judge(&rule(), &frame("10.77.0.9:7000", b"hi"), &mut d), "not for me", "our port, another address: well-formed, not for us");
        assert_eq!(judge(&rule(), &frame("10.77.0.1:7001", b"hi"), &mut d), "not for me", "our address, another port");
        let g = UdpRule { group: Some("239.255.0.1:7400".parse().unwrap()), ..rule() };
        assert_eq!(judge(&g, &frame("239.255.0.1:7400", b"spdp"), &mut d), "deliver", "the group");
        assert_eq!(judge(&g, &frame("239.255.0.1:7401", b"spdp"), &mut d), "not for me");
    }

    #[test]
    fn frames_that_cannot_say_whom_they_are_for_are_not_for_me() {
        let mut d = Defrag::default();
        let good = frame("10.77.0.1:7000", b"payload");
        assert_eq!(judge(&rule(), &good[..10], &mut d), "not for me", "runt");
        assert_eq!(judge(&rule(), &good[..ETH_HLEN + 12], &mut d), "not for me", "IPv4 header cut");
        let mut f = good.clone();
        ethernet::EthernetFrame::new_unchecked(&mut f[..]).set_ethertype(0x86dd);
        assert_eq!(judge(&rule(), &f, &mut d), "not for me", "IPv6");
        let mut f = good.clone();
        f[ETH_HLEN + ipv4::field::PROTOCOL] = 6;
        ip_mut(&mut f).fill_checksum();
        assert_eq!(judge(&rule(), &f, &mut d), "not for me", "TCP");
        let mut f = good.clone();
        f[ETH_HLEN + ipv4::field::VER_IHL] = 0x44;
        assert_eq!(judge(&rule(), &f, &mut d), "not for me", "IHL 4");
    }

    #[test]
    fn frames_for_us_that_fail_a_check_are_malformed() {
        let mut d = Defrag::default();
        let good = frame("10.77.0.1:7000", b"payload");
        let cut = good.len() - 2;
        assert_eq!(judge(&rule(), &good[..cut], &mut d), "malformed", "truncated: IPv4 total length past the frame");
        let mut f = good.clone();
        f[ETH_HLEN + ipv4::field::TTL] ^= 1;
        assert_eq!(judge(&rule(), &f, &mut d), "malformed", "IPv4 header checksum");
        let mut f = good.clone();
        *f.last_mut().unwrap() ^= 1;
        assert_eq!(judge(&rule(), &f, &mut d), "malformed", "UDP checksum");
        assert_eq!(judge(&UdpRule { verify_checksum: false, ..rule() }, &f, &mut d), "deliver", "checksum=skip");
        let mut f = good.clone();
        let at = ETH_HLEN + IPV4_HLEN + detpath_wire::udp::field::LENGTH.start;
        f[at + 1] -= 1;
        assert_eq!(judge(&rule(), &f, &mut d), "malformed", "UDP length");
        let mut f = good.clone();
        f[ETH_HLEN + ipv4::field::VER_IHL] = 0x46;
        ip_mut(&mut f).fill_checksum();
        assert_eq!(judge(&rule(), &f, &mut d), "not for me", "IHL 6 on a 20-byte header: the port read at 26 (the UDP length, 15) is not ours");
    }

    #[test]
    fn fragments_are_held_then_delivered_or_refused() {
        let mut d = Defrag::default();
        let payload = vec![7u8; 3000];
        let h = header("10.77.0.1:7000");
        let frags: Vec<Vec<u8>> = (0..3)
            .map(|k| {
                let mut b = vec![0u8; 2048];
                let n = build_udp_fragment(&mut b, &h, &payload, 1500, k).unwrap();
                b.truncate(n);
                b
            })
            .collect();
        assert_eq!(judge(&rule(), &frags[0], &mut d), "held");
        assert_eq!(judge(&rule(), &frags[1], &mut d), "held");
        match rule().judge(&frags[2], &mut d, 0) {
            Verdict::Deliver(g) => assert_eq!((g.payload.len(), g.reassembled), (3000, true)),
            _ => panic!("not reassembled"),
        }
        // The same fragments to another port: the first one is not ours (its
        // UDP header says so), the later ones are held until they expire.
        let h = header("10.77.0.1:7001");
        let mut b = vec![0u8; 2048];
        let n = build_udp_fragment(&mut b, &h, &payload, 1500, 0).unwrap();
        assert_eq!(judge(&rule(), &b[..n], &mut d), "not for me");
        // An overlapping fragment drops its datagram: malformed.
        let h = UdpFrameHeader { ip_id: 10, ..header("10.77.0.1:7000") };
        let n = build_udp_fragment(&mut b, &h, &payload, 1500, 0).unwrap();
        assert_eq!(judge(&rule(), &b[..n], &mut d), "held");
        assert_eq!(judge(&rule(), &b[..n], &mut d), "malformed", "the same fragment again overlaps");
    }

    #[test]
    fn refusals_bump_their_counter() {
        let mut c = Counters::default();
        Verdict::<()>::NotForMe.count_refusal(&mut c);
        Verdict::<()>::Malformed.count_refusal(&mut c);
        Verdict::<()>::Held.count_refusal(&mut c);
        count_delivered(&mut c, 10, 12);
        count_delivered(&mut c, 5, 5);
        assert_eq!((c.rx_not_for_me, c.rx_malformed, c.rx_packets, c.rx_bytes, c.rx_truncated), (1, 1, 2, 15, 1));
    }

    #[test]
    fn frame_endpoints_take_their_ethertype_to_them_or_a_group() {
        let mut f = vec![0u8; 20];
        ethernet::write_header(&mut f, ME_MAC, MacAddr([2, 0, 0, 0, 0, 9]), 0x1ce8);
        assert!(matches!(judge_frame(&f, ME_MAC, Some(0x1ce8)), Verdict::Deliver(EthPayload { payload, .. }) if payload.len() == 6));
        assert_eq!(judge_frame(&f, ME_MAC, Some(0x1ce9)), Verdict::NotForMe);
        assert_eq!(judge_frame(&f[..13], ME_MAC, None), Verdict::NotForMe, "runt");
        ethernet::set_dst_addr(&mut f, MacAddr([2, 0, 0, 0, 0, 3]));
        assert_eq!(judge_frame(&f, ME_MAC, None), Verdict::NotForMe, "another host's unicast");
        ethernet::set_dst_addr(&mut f, MacAddr::BROADCAST);
        assert!(matches!(judge_frame(&f, ME_MAC, None), Verdict::Deliver(_)));
    }
}
