//! The library's error type. Every variant names what is wrong and how to fix it.
//!
//! Kernel-object errors (interfaces, namespaces, XDP, capabilities) are
//! `detpath_sys`'s, carried whole in [`Error::Sys`]; a datapath with errors of
//! its own has one variant here that carries them typed (DPDK's).

use std::io;
use std::net::Ipv4Addr;
use std::sync::Arc;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("invalid endpoint spec `{spec}`: {why}")]
    BadSpec { spec: String, why: String },

    #[error("unknown datapath `{name}`; available: {available}")]
    UnknownDatapath { name: String, available: String },

    #[error("the {datapath} datapath has no key `{key}`; it takes: {accepted}")]
    UnsupportedKey { datapath: &'static str, key: String, accepted: String },

    #[error("zero-copy AF_XDP was refused on `{iface}` queue {queue} (the driver does not support it, e.g. veth/virtio); ask for copy mode with `zerocopy=false` (or omit it)")]
    ZeroCopyRefused { iface: String, queue: u32 },

    #[error("queue {queue} does not exist on `{iface}` (it has {count}); set more with `ethtool -L {iface} combined N` or use queue<{count}")]
    NoSuchQueue { iface: String, queue: u32, count: u32 },

    #[error("payload of {len} bytes does not fit a frame on `{iface}` (at most {max})")]
    PayloadTooLarge { iface: String, len: usize, max: usize },

    /// A send to a destination that is not on a subnet of the interface.
    /// Built without allocating (a forged source address can make a server
    /// meet this on every datagram); counted in `tx_no_route`.
    #[error("{peer} is not on a subnet of `{iface}`: detpath sends on-link only (no gateway routing); the datagram was dropped (counter tx_no_route)")]
    NoRoute { peer: Ipv4Addr, iface: Arc<str> },

    /// A send to an on-link destination whose MAC address is not known:
    /// resolution is under way or failed recently. Built without
    /// allocating; counted in `tx_no_neigh`.
    #[error("no MAC address for {peer} on `{iface}` ({why}); the datagram was dropped (counter tx_no_neigh). Check the peer is up and on the link, or add a static neighbour: `ip neigh add {peer} lladdr <mac> dev {iface}`")]
    NoNeighbour { peer: Ipv4Addr, iface: Arc<str>, why: &'static str },

    #[error("{what} is not supported by the {datapath} datapath")]
    Unsupported { datapath: &'static str, what: String },

    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },

    /// A kernel object (interface, namespace, XDP program, capability) said no.
    #[error(transparent)]
    Sys(#[from] detpath_sys::Error),

    /// The DPDK datapath's own errors (EAL, ports, hugepages, mbufs).
    #[error(transparent)]
    Dpdk(#[from] DpdkError),

    /// The endpoint's real-time polling thread could not be set up (`rt_core=` keys).
    #[error("real-time polling thread: {0}")]
    Realtime(#[from] detpath_sys::thread::RtError),
}

impl Error {
    /// Wraps an OS error with what was being done, turning EPERM into a
    /// capability error that names the capability.
    pub fn os(what: impl Into<String>, source: io::Error, cap: &'static str) -> Error {
        detpath_sys::Error::os(what, source, cap).into()
    }

    pub fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Io { what: what.into(), source }
    }

    /// The errno that best names this error, for C callers and exception
    /// classes (the message says the rest).
    pub fn errno(&self) -> i32 {
        match self {
            Error::BadSpec { .. } | Error::UnknownDatapath { .. } | Error::UnsupportedKey { .. } => libc::EINVAL,
            Error::NoSuchQueue { .. } => libc::ENODEV,
            Error::PayloadTooLarge { .. } => libc::EMSGSIZE,
            Error::NoRoute { .. } | Error::NoNeighbour { .. } => libc::EHOSTUNREACH,
            Error::ZeroCopyRefused { .. } | Error::Unsupported { .. } => libc::EOPNOTSUPP,
            Error::Io { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
            Error::Sys(e) => e.errno(),
            Error::Dpdk(_) | Error::Realtime(_) => libc::EIO,
        }
    }

    /// Whether this error, returned by a send, concerns that one datagram
    /// only (destination off-link or unresolved, ring or buffer full, payload
    /// too large, a transient kernel refusal): a server counts it (the
    /// endpoint already did, under [`Error::tx_cause`]) and goes on with the
    /// next datagram. False for errors of the endpoint itself (interface
    /// gone or down, socket closed, ...), after which it cannot work: a
    /// server exits with the error.
    pub fn is_per_datagram(&self) -> bool {
        match self {
            Error::NoRoute { .. } | Error::NoNeighbour { .. } | Error::PayloadTooLarge { .. } => true,
            Error::Sys(detpath_sys::Error::NotOnLink { .. } | detpath_sys::Error::NeighbourUnresolved { .. }) => true,
            Error::Sys(detpath_sys::Error::Io { source, .. }) | Error::Io { source, .. } => source.raw_os_error().is_some_and(per_datagram_errno),
            Error::Dpdk(DpdkError::Unresolved { .. } | DpdkError::TxStalled { .. } | DpdkError::PoolExhausted { .. }) => true,
            _ => false,
        }
    }

    /// Which counter a send failure belongs in (see [`crate::Counters::count_tx_failure`]).
    pub fn tx_cause(&self) -> TxCause {
        let errno_cause = |source: &io::Error| match source.raw_os_error() {
            Some(libc::ENETUNREACH) | Some(libc::EHOSTUNREACH) => TxCause::NoRoute,
            Some(libc::EAGAIN) | Some(libc::ENOBUFS) => TxCause::RingFull,
            _ => TxCause::Other,
        };
        match self {
            Error::NoRoute { .. } | Error::Sys(detpath_sys::Error::NotOnLink { .. }) => TxCause::NoRoute,
            Error::NoNeighbour { .. } | Error::Sys(detpath_sys::Error::NeighbourUnresolved { .. }) | Error::Dpdk(DpdkError::Unresolved { .. }) => {
                TxCause::NoNeighbour
            }
            Error::Dpdk(DpdkError::TxStalled { .. }) => TxCause::RingFull,
            Error::Io { source, .. } | Error::Sys(detpath_sys::Error::Io { source, .. }) => errno_cause(source),
            _ => TxCause::Other,
        }
    }

    /// The kernel-object error inside, if it is one (for matching in callers and tests).
    pub fn sys(&self) -> Option<&detpath_sys::Error> {
        match self {
            Error::Sys(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a datagram was not sent, as the endpoint counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxCause {
    /// Not on a subnet of the interface (`tx_no_route`).
    NoRoute,
    /// Its MAC address is not resolved (`tx_no_neigh`).
    NoNeighbour,
    /// The TX ring or socket buffer stayed full (`tx_ring_full`).
    RingFull,
    /// Anything else (`tx_errors`).
    Other,
}

/// Errnos a send returns for one datagram while the endpoint stays usable.
fn per_datagram_errno(errno: i32) -> bool {
    matches!(
        errno,
        libc::EAGAIN
            | libc::ENOBUFS
            | libc::EINTR
            | libc::ETIMEDOUT
            | libc::EHOSTUNREACH
            | libc::ENETUNREACH
            | libc::EHOSTDOWN
            | libc::ECONNREFUSED
            | libc::EMSGSIZE
            // A forged source: port 0, a broadcast without SO_BROADCAST, a packet filter's verdict.
            | libc::EINVAL
            | libc::EACCES
            | libc::EPERM
    )
}

/// Returns the last OS error as an `io::Error`.
pub(crate) fn last_os_error() -> io::Error {
    io::Error::last_os_error()
}

/// Errors particular to the DPDK datapath; callers get them typed in [`Error::Dpdk`] (defined here, at the bottom of the crate, so that error.rs imports nothing of the crate).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DpdkError {
    #[error("no DPDK port `{device}`: {why}")]
    NoSuchPort { device: String, why: String },

    #[error("DPDK port `{device}` is already in use {by}")]
    PortInUse { device: String, by: String },

    #[error("hugepages were asked for (huge=on) but {free_mb} MB are free and the EAL needs {need_mb} MB; reserve them with `echo {pages} > /proc/sys/vm/nr_hugepages`, or run without hugepages: `huge=off` (--no-huge, fine for virtual devices)")]
    NoHugepages { need_mb: u64, free_mb: u64, pages: u64 },

    #[error(
        "mbuf pool exhausted: {what}; raise `mbufs=` (now {mbufs}) and, if the EAL runs out of memory, `mem=` (MB, for the first endpoint of the process)"
    )]
    PoolExhausted { what: String, mbufs: u32 },

    #[error("the link of DPDK port `{device}` is down (waited {waited_ms} ms); check the cable or the peer, and `ip link set <iface> up` on a virtual device's interface")]
    LinkDown { device: String, waited_ms: u64 },

    #[error("DPDK EAL initialisation failed ({why}) with arguments `{args}`; see DPDK's log above (raise it with `log=notice`). Run as root; without hugepages use `huge=off`")]
    EalInit { args: String, why: String },

    #[error("the DPDK EAL of this process was initialised {why}; {fix}")]
    EalMismatch { why: String, fix: String },

    #[error("cannot resolve the MAC address of {peer} on `{device}`: no ARP reply within {ms} ms (remembered for 1 s; datagrams to it are dropped and counted in tx_no_neigh); check the peer is up and on the same link, or give it statically: `neigh={peer}@<mac>`")]
    Unresolved { peer: Ipv4Addr, device: std::sync::Arc<str>, ms: u64 },

    #[error("the TX queue of DPDK port `{device}` stayed full for {ms} ms")]
    TxStalled { device: String, ms: u64 },

    #[error("{what} failed: {msg} (DPDK error {code})")]
    Call { what: String, code: i32, msg: String },
}

impl DpdkError {
    /// The DPDK error inside a detpath error, if it is one.
    pub fn of(e: &Error) -> Option<&DpdkError> {
        match e {
            Error::Dpdk(d) => Some(d),
            _ => None,
        }
    }
}
