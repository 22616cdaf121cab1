//! What a datapath registers: its name, keys and openers (the entries of
//! [`crate::datapath::DATAPATHS`]). Below the datapath modules, which name
//! their entry with these types.

use crate::endpoint::{Endpoint, FrameEndpoint};
use crate::error::{Error, Result};
use crate::spec::{EndpointSpec, COMMON_KEYS};

/// Opens a datagram endpoint from a parsed spec (whose keys passed [`Datapath::check_keys`]).
pub type DatagramOpener = fn(&EndpointSpec) -> Result<Box<dyn Endpoint>>;

/// A datapath: a name (the URI scheme), the spec keys it takes, its
/// openers (datagrams ([`Endpoint`]), Ethernet frames ([`FrameEndpoint`]), or
/// both), and what the layers above need to know about it (its name in
/// reports, its arrival stamps, how it hears a multicast group), so that no
/// caller matches on its name. Every datapath is one entry of
/// [`DATAPATHS`](crate::datapath::DATAPATHS) or one
/// [`register`](crate::datapath::register) call.
pub struct Datapath {
    /// The URI scheme, e.g. "afxdp".
    pub name: &'static str,
    /// Its name in tables and plots (paper 000's: `afxdp` is "AF_XDP").
    pub display: &'static str,
    /// One line for `--help` and reports.
    pub summary: &'static str,
    /// The `key=value` that asks its datagram endpoints to stamp each
    /// datagram on arrival below the polling thread (`rx_stamp=xdp`: the XDP
    /// program; `rx_stamp=kernel`: the socket), or `None` when it has no
    /// such stamp and received datagrams carry the user-space clock only.
    pub arrival_stamp: Option<&'static str>,
    /// How its datagram endpoints receive a multicast group (pub-sub's SPDP discovery).
    pub group_reception: GroupReception,
    /// The spec keys its datagram endpoints take besides [`COMMON_KEYS`].
    pub keys: &'static [&'static str],
    /// Opens a datagram endpoint; `None`: the datapath carries frames only (`packet`).
    pub open: Option<DatagramOpener>,
    /// Its frame side (own keys and opener), if it carries Ethernet frames.
    pub frames: Option<&'static FrameDatapath>,
}

/// How a datagram endpoint of a datapath receives the datagrams sent to a
/// multicast group (pub-sub discovery's SPDP group): what a caller must open
/// besides the endpoint, or whether it cannot at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupReception {
    /// Through a kernel UDP socket joined to the group beside the endpoint:
    /// the kernel receives the group (`udp`), or the datapath's XDP program
    /// takes only the endpoint's own address and port and passes the group's
    /// datagrams on to the kernel (`afxdp`, `xdppoll`).
    KernelSocket,
    /// By the endpoint itself, opened with `group=<group>:<port>`: the
    /// datapath owns the whole queue, so the kernel never sees the group's
    /// datagrams (`dpdk`).
    Endpoint,
    /// Not at all (a frames-only datapath, or one that cannot join a group):
    /// the caller names its peers instead.
    Unsupported,
}

/// The frame side of a [`Datapath`]: its keys and its opener (the name is the datapath's).
pub struct FrameDatapath {
    /// The URI scheme (the same as its [`Datapath`]'s).
    pub name: &'static str,
    /// One line for `--help` and reports.
    pub summary: &'static str,
    /// The keys it takes besides [`COMMON_KEYS`].
    pub keys: &'static [&'static str],
    /// Opens a frame endpoint from a parsed spec (`port` is the EtherType).
    pub open: fn(&EndpointSpec) -> Result<Box<dyn FrameEndpoint>>,
}

impl Datapath {
    /// Refuses a key this datapath's datagram endpoints do not take, naming
    /// the key, the datapath and what it takes (`udp` has no `zerocopy`).
    pub fn check_keys(&self, spec: &EndpointSpec) -> Result<()> {
        check_keys(self.name, self.keys, spec)
    }

    /// The same for its frame endpoints.
    pub fn check_frame_keys(&self, spec: &EndpointSpec) -> Result<()> {
        check_keys(self.name, self.frames.map(|f| f.keys).unwrap_or(&[]), spec)
    }
}

pub(crate) fn check_keys(name: &'static str, keys: &[&str], spec: &EndpointSpec) -> Result<()> {
    match spec.given.0.iter().find(|k| !COMMON_KEYS.contains(&k.as_str()) && !keys.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => {
            Err(Error::UnsupportedKey { datapath: name, key: key.clone(), accepted: COMMON_KEYS.iter().chain(keys).copied().collect::<Vec<_>>().join(", ") })
        }
    }
}
