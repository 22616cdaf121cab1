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
//! Layers, bottom up: `detpath-wire` (frames) → [`netdev`], [`neigh`], [`xdp`]
//! (kernel objects) → [`datapath`] (one module per backend, behind
//! [`Endpoint`]) → [`testbed`] (namespaces for tests and benchmarks).

pub mod cleanup;
pub mod datapath;
pub mod endpoint;
pub mod error;
pub mod neigh;
pub mod netdev;
pub mod netns;
pub mod realtime;
pub mod spec;
pub mod testbed;
pub mod xdp;

pub use endpoint::{monotonic_ns, Capabilities, Counters, Datapath, Endpoint, RecvMode, RxBatch, RxMeta, TxDatagram, XdpMode};
pub use error::{Error, Result};
pub use spec::{EndpointSpec, RealtimeSpec, XdpModeRequest};

/// Opens an endpoint from a spec string such as `afxdp://veth0?port=7000`.
pub fn open(spec: &str) -> Result<Box<dyn Endpoint>> {
    open_spec(&spec.parse()?)
}

/// Opens an endpoint from a parsed spec. With `rt_*` keys the calling thread
/// becomes the endpoint's real-time polling thread first ([`realtime`]).
pub fn open_spec(spec: &EndpointSpec) -> Result<Box<dyn Endpoint>> {
    let dp = datapath::find(&spec.datapath).ok_or_else(|| Error::UnknownDatapath(spec.datapath.clone()))?;
    match &spec.realtime {
        None => (dp.open)(spec),
        Some(rt) => {
            let (notes, hold) = realtime::prepare_thread(rt)?;
            Ok(Box::new(realtime::RealtimeEndpoint::wrap((dp.open)(spec)?, notes, hold)))
        }
    }
}
