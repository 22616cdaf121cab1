//! The datapaths: one module each, registered in [`DATAPATHS`]. Adding a
//! datapath is one new module and one line in that list; nothing above the
//! [`Endpoint`](crate::Endpoint) trait changes.

use crate::endpoint::Datapath;

pub mod afxdp;
pub mod dpdk;
pub mod udp;
pub mod xdppoll;

/// Every datapath this build knows, in the order reports list them.
pub static DATAPATHS: &[&Datapath] = &[&udp::DATAPATH, &xdppoll::DATAPATH, &afxdp::DATAPATH, &dpdk::DATAPATH];

/// The datapath with this URI scheme.
pub fn find(name: &str) -> Option<&'static Datapath> {
    DATAPATHS.iter().copied().find(|d| d.name == name)
}
