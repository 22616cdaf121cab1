//! IPv4 reassembly for the datapaths that parse frames themselves (afxdp,
//! xdppoll, dpdk): kernel senders fragment UDP datagrams above the MTU (CycloneDDS
//! sends RTPS messages of up to 14,720 bytes), and the XDP filter hands the
//! fragments of a datagram to our port to user space (bpf/detpath_filter.h).
//! The reassembler's memory (8 datagrams of up to 64 KiB) is taken at the
//! first fragment, once; endpoints that never see one never pay for it.

use detpath_wire::{parse_fragment, Reassembler};
use std::net::SocketAddrV4;

/// Datagrams in reassembly at once.
const SLOTS: usize = 8;
/// A datagram not complete this long after its first fragment is dropped.
const TIMEOUT_NS: u64 = 1_000_000_000;

/// What became of a fragment.
pub(crate) enum Defragged<'a> {
    /// Placed; the datagram is not complete yet.
    Held,
    /// It completed a datagram: its sender, destination and UDP payload.
    Datagram { src: SocketAddrV4, dst: SocketAddrV4, payload: &'a [u8] },
    /// Malformed, overlapping, or a bad reassembled UDP header: dropped.
    Dropped,
}

#[derive(Default)]
pub(crate) struct Defrag {
    reasm: Option<Box<Reassembler>>,
}

impl Defrag {
    /// Offers a frame that [`detpath_wire::parse_udp_frame`] called a
    /// fragment (the receive rule, [`super::rx_rule`], checked it is to us).
    pub(crate) fn offer(&mut self, frame: &[u8], verify_checksum: bool, now_ns: u64) -> Defragged<'_> {
        let Ok(frag) = parse_fragment(frame) else { return Defragged::Dropped };
        let reasm = self.reasm.get_or_insert_with(|| Box::new(Reassembler::new(SLOTS, TIMEOUT_NS)));
        match reasm.offer(&frag, now_ns, verify_checksum) {
            Ok(None) => Defragged::Held,
            Ok(Some(d)) => Defragged::Datagram { src: d.src, dst: d.dst, payload: d.payload },
            Err(_) => Defragged::Dropped,
        }
    }
}
