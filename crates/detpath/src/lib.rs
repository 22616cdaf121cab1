//! detpath: one endpoint API over the packet datapaths of a Linux host
//! (kernel UDP sockets, AF_XDP, XDP poll, DPDK), wire-compatible with each
//! other, plus the two-namespace testbed that exercises them.
//!
//! ```no_run
//! use detpath::{open, RecvMode};
//! let mut ep = open("afxdp://veth0?port=7000&mode=auto").unwrap();
//! println!("{}", ep.capabilities().summary());
//! let mut buf = [0u8; 2048];
//! if let Some(rx) = ep.recv(&mut buf, RecvMode::BusyPoll { timeout: None }).unwrap() {
//!     ep.send_to(&buf[..rx.len], rx.peer).unwrap();
//! }
//! ```
//!
//! Layers, bottom up: `detpath-wire` (frames, no OS) and [`sys`]
//! (`detpath-sys`: every kernel object) → [`datapath`] (one module per
//! backend, behind [`Endpoint`]) → [`testbed`] (namespaces for tests and
//! benchmarks).

pub mod datapath;
pub mod endpoint;
pub mod error;
pub mod frame;
pub mod realtime;
pub mod spec;
pub mod testbed;

/// The kernel layer (`detpath-sys`): namespaces, interfaces, neighbours, XDP, AF_PACKET, ethtool, cleanup.
pub use detpath_sys as sys;

pub use detpath_sys::XdpMode;
pub use endpoint::{monotonic_ns, Capabilities, CounterField, Counters, Datapath, Endpoint, RecvMode, RxBatch, RxMeta, RxStamp, TxDatagram};
pub use error::{Error, Result, TxCause};
pub use frame::{open_frames, FrameDatapath, FrameEndpoint, FrameMeta, MacAddr};
pub use spec::{EndpointSpec, RealtimeSpec};

/// Opens an endpoint from a spec string such as `afxdp://veth0?port=7000`.
pub fn open(spec: &str) -> Result<Box<dyn Endpoint>> {
    open_spec(&spec.parse()?)
}

/// Opens an endpoint from a parsed spec. With `rt_*` keys the calling thread
/// becomes the endpoint's real-time polling thread first ([`realtime`]).
pub fn open_spec(spec: &EndpointSpec) -> Result<Box<dyn Endpoint>> {
    let dp = datapath::find(&spec.datapath).ok_or_else(|| Error::UnknownDatapath { name: spec.datapath.clone(), available: datapath::names().join(", ") })?;
    dp.check_keys(spec)?;
    match &spec.realtime {
        None => (dp.open)(spec),
        Some(rt) => {
            let (notes, hold) = realtime::prepare_thread(rt)?;
            Ok(Box::new(realtime::RealtimeEndpoint::wrap((dp.open)(spec)?, notes, hold)))
        }
    }
}

/// Sends the C libraries' own messages (libbpf's, and with DPDK the EAL's
/// and the libbpf/libxdp its af_xdp driver loads: "libxdp: No bpffs found
/// ...") to the file at `path`, appended, and with `tee` to stderr too. A
/// benchmark points them at its result directory so its output is its own;
/// `-v` keeps them on the terminal. Process-wide; a later call moves them.
pub fn route_library_logs(path: &std::path::Path, tee: bool) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    datapath::dpdk::route_library_logs(&file, tee)?;
    sys::liblog::route_to(file, tee);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_the_datapath_does_not_take_is_named_with_the_datapath() {
        let e = open("udp://127.0.0.1:0?zerocopy=true").err().unwrap();
        assert!(matches!(&e, Error::UnsupportedKey { datapath: "udp", key, .. } if key == "zerocopy"), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("udp datapath has no key `zerocopy`") && msg.contains("rcvbuf"), "{msg}");
        // Keys every datapath takes, and the datapath's own, pass the check.
        let ep = open("udp://127.0.0.1:0?rcvbuf=65536&busy_poll=false").unwrap();
        assert_eq!(ep.capabilities().datapath, "udp");
        // Each datapath's own keys are what it declares: afxdp takes zerocopy, xdppoll does not take ring.
        let spec: EndpointSpec = "xdppoll://lo?port=7&ring=64".parse().unwrap();
        assert!(matches!(datapath::find("xdppoll").unwrap().check_keys(&spec), Err(Error::UnsupportedKey { .. })));
        let spec: EndpointSpec = "afxdp://lo?port=7&zerocopy=true&xdp=shared".parse().unwrap();
        datapath::find("afxdp").unwrap().check_keys(&spec).unwrap();
    }

    #[test]
    fn unknown_datapaths_are_listed_from_the_registry() {
        let e = open("rdma://10.0.0.1:7").err().unwrap().to_string();
        for d in datapath::DATAPATHS {
            assert!(e.contains(d.name), "{e}");
        }
        assert!(datapath::transports().all(|d| !d.wraps) && datapath::transports().count() + 1 == datapath::DATAPATHS.len());
    }
}
