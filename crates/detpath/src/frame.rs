//! The frame-level seam: endpoints that carry payloads directly in Ethernet
//! frames of one EtherType (no IP, no UDP), as CycloneDDS's `raweth`
//! transport and paper 001's layer-2 mode do. The datagram [`Endpoint`]
//! addresses (IPv4, port); a [`FrameEndpoint`] addresses (MAC, EtherType).
//!
//! A datapath offers frames with a [`FrameDatapath`] in its
//! [`Datapath`](crate::datapath::Datapath) entry (same scheme, same keys where they apply):
//! `afxdp` serves both with one UMEM, ring and XDP program whose filter
//! matches either (IPv4 address, UDP port) or an EtherType (so do `xdppoll`,
//! whose frames go out through an AF_PACKET socket, and `dpdk`); `packet` is the
//! frame datapath usable everywhere (an AF_PACKET socket bound to the
//! EtherType). In a frame spec the `port` key is the EtherType, CycloneDDS's
//! convention (`packet://dpa?port=7400` receives EtherType 0x1ce8).
//!
//! [`Endpoint`]: crate::Endpoint

pub use crate::datapath::entry::FrameDatapath;
pub use crate::endpoint::{FrameEndpoint, FrameMeta, MacAddr};

#[cfg(test)]
mod tests {
    use crate::open_frames;

    #[test]
    fn a_missing_interface_is_named_with_the_fix() {
        let e = open_frames("packet://nosuch0?port=7400").err().unwrap().to_string();
        assert!(e.contains("nosuch0") && e.contains("ip link"), "{e}");
    }

    #[test]
    fn unknown_frame_datapaths_and_keys_are_refused_by_name() {
        let e = open_frames("udp://lo?port=7400").err().unwrap().to_string();
        assert!(e.contains("udp") && e.contains("packet") && e.contains("afxdp"), "{e}");
        let e = open_frames("packet://lo?port=7400&zerocopy=true").err().unwrap().to_string();
        assert!(e.contains("zerocopy") && e.contains("packet"), "{e}");
    }

    #[test]
    fn an_ethertype_that_is_an_802_3_length_is_refused() {
        let e = open_frames("packet://lo?port=1500").err().unwrap().to_string();
        assert!(e.contains("802.3") && e.contains("1536"), "{e}");
    }
}
