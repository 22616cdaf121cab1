//! Receiving bare Ethernet payloads (CycloneDDS's `raweth`, paper 001's
//! layer-2 mode): the one place that decides whether a received frame is for
//! a frame endpoint and where its payload starts. The afxdp and xdppoll
//! frame endpoints call [`strip_eth_frame`] on every frame; so does the
//! `raweth_strip` fuzz target, on arbitrary bytes.
//!
//! Pure functions over byte slices: no allocation, no panics on any input.

use crate::ethernet::{self, EthernetFrame};
use crate::frame::MacAddr;
use crate::ETH_HLEN;

/// A received frame's payload and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthPayload<'a> {
    /// The sender's MAC address.
    pub src: MacAddr,
    /// The frame's EtherType.
    pub ethertype: u16,
    /// Everything after the Ethernet header (Ethernet padding included: the
    /// payload's own format says where it ends).
    pub payload: &'a [u8],
}

/// Why a received frame is not delivered; each kind is a counter bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StripError {
    /// Shorter than an Ethernet header (`rx_malformed`).
    #[error("frame shorter than an Ethernet header")]
    Truncated,
    /// Another EtherType than the endpoint's (`rx_not_for_me`).
    #[error("EtherType {0:#06x} is not this endpoint's")]
    OtherEthertype(u16),
    /// Another host's unicast address, seen on a promiscuous link (`rx_not_for_me`).
    #[error("addressed to another host")]
    NotForMe,
}

/// A frame is for `local` when its destination is `local`, or a group
/// (broadcast or multicast: the low bit of the first octet). `frame` starts
/// with the destination address; shorter than 6 bytes is never for us.
pub fn frame_is_for(local: MacAddr, frame: &[u8]) -> bool {
    frame.get(ethernet::field::DESTINATION).is_some_and(|dst| dst[0] & 1 == 1 || dst == local.0)
}

/// Strips the Ethernet header of a frame received by the frame endpoint of
/// `local` for `ethertype` (`None`: the socket already filtered it, as
/// AF_PACKET bound to one EtherType does). Never panics.
pub fn strip_eth_frame(frame: &[u8], local: MacAddr, ethertype: Option<u16>) -> Result<EthPayload<'_>, StripError> {
    let eth = EthernetFrame::new_checked(frame).ok_or(StripError::Truncated)?;
    let et = eth.ethertype();
    if ethertype.is_some_and(|want| want != et) {
        return Err(StripError::OtherEthertype(et));
    }
    if !frame_is_for(local, frame) {
        return Err(StripError::NotForMe);
    }
    Ok(EthPayload { src: eth.src_addr(), ethertype: et, payload: &frame[ETH_HLEN..] })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);

    fn frame(dst: [u8; 6], et: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = dst.to_vec();
        f.extend_from_slice(&[2, 0, 0, 0, 0, 9]);
        f.extend_from_slice(&et.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn ours_broadcast_and_multicast_are_stripped() {
        for dst in [ME.0, [0xff; 6], [0x01, 0x00, 0x5e, 0, 0, 1]] {
            let f = frame(dst, 0x1ce8, b"RTPS");
            let p = strip_eth_frame(&f, ME, Some(0x1ce8)).unwrap();
            assert_eq!((p.src, p.ethertype, p.payload), (MacAddr([2, 0, 0, 0, 0, 9]), 0x1ce8, &b"RTPS"[..]));
        }
        // An empty payload is a frame (the payload's parser refuses it).
        assert_eq!(strip_eth_frame(&frame(ME.0, 0x1ce8, b""), ME, None).unwrap().payload, b"");
    }

    #[test]
    fn others_are_refused_by_cause() {
        assert_eq!(strip_eth_frame(&frame(ME.0, 0x1ce8, b"x")[..13], ME, None), Err(StripError::Truncated));
        assert_eq!(strip_eth_frame(&frame(ME.0, 0x0800, b"x"), ME, Some(0x1ce8)), Err(StripError::OtherEthertype(0x0800)));
        assert_eq!(strip_eth_frame(&frame([2, 0, 0, 0, 0, 2], 0x1ce8, b"x"), ME, Some(0x1ce8)), Err(StripError::NotForMe));
        assert!(!frame_is_for(ME, &[2, 0, 0]));
    }
}
