//! detpath: one endpoint API over the packet datapaths of a Linux host
//! (kernel UDP sockets, AF_XDP, XDP poll, DPDK), wire-compatible with each
//! other, plus the two-namespace testbed that exercises them.
//!
//! Spec text opens through `detpath_open::open`, the one registry of every
//! layer in the workspace (this crate's and the slot scheduler's); here the
//! typed pipeline, [`open_spec`], which that facade calls. Two kernel-UDP
//! endpoints on the loopback interface (no root needed):
//!
//! ```
//! use std::time::Duration;
//! use detpath::{open_spec, EndpointSpec, RecvMode};
//! let spec: EndpointSpec = "udp://127.0.0.1:0".parse()?;
//! let mut a = open_spec(&spec)?;
//! let mut b = open_spec(&spec)?;
//! a.send_to(b"ping", b.local_addr())?;
//! let mut buf = [0u8; 2048];
//! let rx = b.recv(&mut buf, RecvMode::Blocking { timeout: Some(Duration::from_secs(5)) })?.expect("loopback delivers");
//! assert_eq!((&buf[..rx.len], rx.peer), (&b"ping"[..], a.local_addr()));
//! # Ok::<(), detpath::Error>(())
//! ```
//!
//! The same over AF_XDP, an echo server on an interface (not run by the
//! doc tests: it needs root and an interface that takes an XDP program):
//!
//! ```no_run
//! use detpath::{open_spec, RecvMode};
//! let mut ep = open_spec(&"afxdp://veth0?port=7000&mode=auto".parse().unwrap()).unwrap();
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

#![warn(missing_docs)]

pub mod datapath;
pub mod endpoint;
pub mod error;
pub mod frame;
pub mod layer;
pub mod layers;
pub mod realtime;
pub mod spec;
pub mod testbed;

/// The kernel layer (`detpath-sys`): namespaces, interfaces, neighbours, XDP, AF_PACKET, ethtool, cleanup.
pub use detpath_sys as sys;

pub use datapath::Datapath;
pub use detpath_sys::XdpMode;
pub use endpoint::{
    monotonic_ns, Capabilities, CounterField, Counters, Endpoint, FrameEndpoint, FrameMeta, MacAddr, Mark, RecvMode, RxBatch, RxMeta, RxStamp, TxDatagram,
};
pub use error::{Error, Result, TxCause};
pub use frame::FrameDatapath;
pub use layer::{Layer, LayerUse};
pub use realtime::RealtimeSpec;
pub use spec::EndpointSpec;

/// Spec text with this crate's layers only, for the unit tests (users open
/// spec text through `detpath_open::open`, which knows every layer).
#[cfg(test)]
fn open(spec: &str) -> Result<Box<dyn Endpoint>> {
    open_spec(&spec.parse()?)
}

/// Frame spec text with this crate's layers only, for the unit tests.
#[cfg(test)]
fn open_frames(spec: &str) -> Result<Box<dyn FrameEndpoint>> {
    open_frames_spec(&spec.parse()?)
}

/// Opens a datagram endpoint from a typed spec: the one pipeline (see [`open_with`]).
pub fn open_spec(spec: &EndpointSpec) -> Result<Box<dyn Endpoint>> {
    open_with(spec, |d| d.open.map(|o| (d.keys, o)), |p, ep| p.wrap(ep))
}

/// Opens a frame endpoint from a typed spec: the same pipeline as [`open_spec`].
pub fn open_frames_spec(spec: &EndpointSpec) -> Result<Box<dyn FrameEndpoint>> {
    open_with(spec, |d| d.frames.map(|f| (f.keys, f.open)), |p, ep| p.wrap_frames(ep))
}

/// The pipeline every endpoint opens through, datagram or frame (`side`
/// picks the datapath's opener and keys): find the datapath, check its
/// keys, prepare every layer in order (the real-time layer sets up the
/// calling thread before the datapath allocates), open, then wrap with each
/// layer, innermost first.
pub fn open_with<E: ?Sized>(
    spec: &EndpointSpec,
    side: impl Fn(&'static Datapath) -> Option<(&'static [&'static str], fn(&EndpointSpec) -> Result<Box<E>>)>,
    wrap: impl Fn(Box<dyn layer::Prepared>, Box<E>) -> Result<Box<E>>,
) -> Result<Box<E>> {
    let found = datapath::find(&spec.datapath).and_then(|d| side(d).map(|s| (d, s)));
    let Some((dp, (keys, opener))) = found else {
        let names: Vec<_> = datapath::names().into_iter().filter_map(datapath::find).filter(|d| side(d).is_some()).map(|d| d.name).collect();
        let name = match datapath::find(&spec.datapath) {
            Some(d) if d.open.is_none() => format!("{} (it carries Ethernet frames only: open it with open_frames)", spec.datapath),
            Some(_) => format!("{} (for Ethernet frames)", spec.datapath),
            None => spec.datapath.clone(),
        };
        return Err(Error::UnknownDatapath { name, available: names.join(", ") });
    };
    datapath::entry::check_keys(dp.name, keys, spec)?;
    let text = spec.to_string();
    for u in &spec.layers {
        u.layer.check(&u.keys).map_err(|why| Error::BadSpec { spec: text.clone(), why })?;
    }
    let prepared = spec.layers.iter().map(|u| u.layer.prepare(&u.keys, &text)).collect::<Result<Vec<_>>>()?;
    let mut ep = opener(spec)?;
    for p in prepared {
        ep = wrap(p, ep)?;
    }
    Ok(ep)
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
        // Layer keys are no datapath's: they pass every datapath's check.
        let spec: EndpointSpec = "udp://127.0.0.1:0?rt_core=0&drop=1".parse().unwrap();
        assert_eq!(spec.layers.iter().map(|u| u.name()).collect::<Vec<_>>(), ["fault", "rt"]);
        datapath::find("udp").unwrap().check_keys(&spec).unwrap();
        let spec: EndpointSpec = "afxdp://lo?port=7&zerocopy=true&xdp=shared".parse().unwrap();
        datapath::find("afxdp").unwrap().check_keys(&spec).unwrap();
    }

    #[test]
    fn unknown_datapaths_are_listed_from_the_registry() {
        let e = open("rdma://10.0.0.1:7").err().unwrap().to_string();
        for d in datapath::transports() {
            assert!(e.contains(d.name), "{e}");
        }
        // Every datagram datapath is a transport; packet carries frames only.
        assert!(datapath::transports().all(|d| d.open.is_some()) && datapath::transports().count() + 1 == datapath::DATAPATHS.len());
        let e = open("packet://lo?port=7400").err().unwrap().to_string();
        assert!(e.contains("frames only") && e.contains("udp"), "{e}");
    }
}
