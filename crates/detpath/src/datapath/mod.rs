//! The datapaths: one module each, registered in [`DATAPATHS`] (one entry
//! per datapath, with its datagram opener, its frame opener, or both).
//! Adding a datapath is one new module and one line in that list; nothing
//! above the [`Endpoint`](crate::Endpoint) trait changes.

pub use entry::{DatagramOpener, Datapath, FrameDatapath};

pub mod afxdp;
pub(crate) mod defrag;
pub mod dpdk;
pub mod entry;
pub mod filter;
pub mod packet;
pub(crate) mod rx_rule;
pub mod udp;
pub(crate) mod wait;
pub mod xdppoll;

/// Every datapath this build knows, in the order reports list them.
pub static DATAPATHS: &[&Datapath] = &[&udp::DATAPATH, &xdppoll::DATAPATH, &afxdp::DATAPATH, &dpdk::DATAPATH, &packet::DATAPATH];

/// The datapath with this URI scheme.
pub fn find(name: &str) -> Option<&'static Datapath> {
    DATAPATHS.iter().copied().find(|d| d.name == name)
}

/// The datapaths that carry datagrams (every registered one with a datagram
/// opener), in report order: what "every datapath" means to the benchmark,
/// the interop matrix and the examples.
pub fn transports() -> impl Iterator<Item = &'static Datapath> {
    DATAPATHS.iter().copied().filter(|d| d.open.is_some())
}

/// The names of every registered datapath, for messages and `--help`.
pub fn names() -> Vec<&'static str> {
    DATAPATHS.iter().map(|d| d.name).collect()
}
