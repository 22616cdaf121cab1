//! The frame-level seam: endpoints that carry payloads directly in Ethernet
//! frames of one EtherType (no IP, no UDP), as CycloneDDS's `raweth`
//! transport and paper 001's layer-2 mode do. The datagram [`Endpoint`]
//! addresses (IPv4, port); a [`FrameEndpoint`] addresses (MAC, EtherType).
//!
//! A datapath offers frames by registering a [`FrameDatapath`] beside its
//! [`Datapath`](crate::Datapath) (same scheme, same keys where they apply):
//! `afxdp` serves both with one UMEM, ring and XDP program whose filter
//! matches either (IPv4 address, UDP port) or an EtherType (so do `xdppoll`,
//! whose frames go out through an AF_PACKET socket, and `dpdk`); `packet` is the
//! frame datapath usable everywhere (an AF_PACKET socket bound to the
//! EtherType). In a frame spec the `port` key is the EtherType, CycloneDDS's
//! convention (`packet://dpa?port=7400` receives EtherType 0x1ce8).
//!
//! [`Endpoint`]: crate::Endpoint

use crate::endpoint::{Capabilities, Counters, RecvMode};
use crate::error::{Error, Result};
use crate::spec::{EndpointSpec, COMMON_KEYS};
pub use detpath_wire::MacAddr;

/// What one frame receive delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameMeta {
    /// Payload bytes (after the Ethernet header) copied into the caller's buffer.
    pub len: usize,
    /// True when the payload was longer than the buffer (the rest is lost).
    pub truncated: bool,
    /// The sender's MAC address.
    pub src: MacAddr,
    /// CLOCK_MONOTONIC nanoseconds when the frame arrived, taken as
    /// [`crate::RxMeta::rx_ns`] is (the `rx_stamp` key).
    pub rx_ns: u64,
}

/// An endpoint that sends and receives payloads in Ethernet frames of one
/// EtherType on one interface. Receive copies into caller buffers; neither
/// direction allocates.
pub trait FrameEndpoint: Send {
    /// The interface's MAC address (the source of every frame sent).
    fn local_mac(&self) -> MacAddr;
    /// The EtherType this endpoint receives.
    fn ethertype(&self) -> u16;
    /// What the endpoint obtained (datapath, XDP mode, limits).
    fn capabilities(&self) -> &Capabilities;
    /// Counters so far; frames of our EtherType that are not for us (another
    /// unicast MAC) are `rx_not_for_me`, frames too short to parse `rx_malformed`.
    fn counters(&self) -> Counters;
    /// Sends `payload` in one frame to `dst` with `ethertype`.
    fn send_frame(&mut self, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()>;
    /// Receives one frame's payload into `buf`; `Ok(None)` when the mode's wait ended with nothing.
    fn recv_frame(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<FrameMeta>>;
}

/// A datapath that carries frames: a name (the URI scheme), its keys, an opener.
pub struct FrameDatapath {
    pub name: &'static str,
    pub summary: &'static str,
    /// The keys it takes besides [`COMMON_KEYS`].
    pub keys: &'static [&'static str],
    pub open: fn(&EndpointSpec) -> Result<Box<dyn FrameEndpoint>>,
}

/// Every frame datapath this build knows.
pub static FRAME_DATAPATHS: &[&FrameDatapath] = &[
    &crate::datapath::packet::FRAME_DATAPATH,
    &crate::datapath::afxdp::FRAME_DATAPATH,
    &crate::datapath::xdppoll::FRAME_DATAPATH,
    &crate::datapath::dpdk::FRAME_DATAPATH,
];

/// Opens a frame endpoint from a spec such as `packet://dpa?port=7400`
/// (`port` is the EtherType). With `rt_*` keys the calling thread becomes
/// the endpoint's real-time polling thread first, as in [`crate::open_spec`].
pub fn open_frames(spec: &str) -> Result<Box<dyn FrameEndpoint>> {
    let spec: EndpointSpec = spec.parse()?;
    let Some(dp) = FRAME_DATAPATHS.iter().find(|d| d.name == spec.datapath) else {
        let names: Vec<_> = FRAME_DATAPATHS.iter().map(|d| d.name).collect();
        return Err(Error::UnknownDatapath { name: format!("{} (for Ethernet frames)", spec.datapath), available: names.join(", ") });
    };
    if let Some(key) = spec.given.0.iter().find(|k| !COMMON_KEYS.contains(&k.as_str()) && !dp.keys.contains(&k.as_str())) {
        return Err(Error::UnsupportedKey {
            datapath: dp.name,
            key: key.clone(),
            accepted: COMMON_KEYS.iter().chain(dp.keys).copied().collect::<Vec<_>>().join(", "),
        });
    }
    match &spec.realtime {
        None => (dp.open)(&spec),
        Some(rt) => {
            let (notes, hold) = crate::realtime::prepare_thread(rt)?;
            Ok(Box::new(crate::realtime::RealtimeFrameEndpoint::wrap((dp.open)(&spec)?, notes, hold)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
