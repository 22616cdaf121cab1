//! The library's error type. Every variant names what is wrong and how to fix it.
//!
//! Kernel-object errors (interfaces, namespaces, XDP, capabilities) are
//! `detpath_sys`'s, carried whole in [`Error::Sys`]; a datapath with errors of
//! its own has one variant here that carries them typed (DPDK's).

use std::io;
use std::net::Ipv4Addr;
use std::sync::Arc;

/// The result of every fallible detpath call; the error defaults to [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an endpoint could not be opened, or a send or receive failed. The
/// message (`Display`) names the object and the fix; [`Error::errno`] maps
/// it for C and Python callers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The spec text or a key's value cannot be parsed or is out of range
    /// (`port=x`, `rt_core` without a number, a layer's key it refuses):
    /// fix the spec as `why` says.
    #[error("invalid endpoint spec `{spec}`: {why}")]
    BadSpec {
        /// The spec as the user gave it (or as printed back from its typed form).
        spec: String,
        /// What is wrong with it.
        why: String,
    },

    /// The spec's scheme names no registered datapath or layer, or a
    /// datapath without the side asked for (frames or datagrams): use one
    /// of `available`.
    #[error("unknown datapath `{name}`; available: {available}")]
    UnknownDatapath {
        /// The scheme as given (with a note when the datapath has the other side only).
        name: String,
        /// The datapaths that could open it, comma-separated.
        available: String,
    },

    /// A key that neither the common keys, the datapath nor any layer takes
    /// (a typo, or a key of another datapath): drop it or use one of `accepted`.
    #[error("the {datapath} datapath has no key `{key}`; it takes: {accepted}")]
    UnsupportedKey {
        /// The datapath the spec names.
        datapath: &'static str,
        /// The key refused.
        key: String,
        /// The keys that datapath takes, comma-separated.
        accepted: String,
    },

    /// `zerocopy=true` on an AF_XDP socket whose driver cannot give
    /// zero-copy (veth, virtio, generic XDP): ask for copy mode instead.
    #[error("zero-copy AF_XDP was refused on `{iface}` queue {queue} (the driver does not support it, e.g. veth/virtio); ask for copy mode with `zerocopy=false` (or omit it)")]
    ZeroCopyRefused {
        /// The interface.
        iface: String,
        /// The receive queue asked for.
        queue: u32,
    },

    /// The `queue=` key names a queue the interface does not have: add
    /// queues with ethtool or choose one below `count`.
    #[error("queue {queue} does not exist on `{iface}` (it has {count}); set more with `ethtool -L {iface} combined N` or use queue<{count}")]
    NoSuchQueue {
        /// The interface.
        iface: String,
        /// The queue asked for (0-based).
        queue: u32,
        /// The queues there are (that the datapath can use).
        count: u32,
    },

    /// A send whose payload is above what the endpoint can send (its
    /// [`Capabilities::max_datagram`](crate::Capabilities::max_datagram), or
    /// one frame's payload where it does not fragment): the datagram is
    /// dropped; send less.
    #[error("payload of {len} bytes does not fit a frame on `{iface}` (at most {max})")]
    PayloadTooLarge {
        /// The interface or device.
        iface: String,
        /// The payload's length, bytes.
        len: usize,
        /// The largest payload it takes, bytes.
        max: usize,
    },

    /// A send to a destination that is not on a subnet of the interface.
    /// Built without allocating (a forged source address can make a server
    /// meet this on every datagram); counted in `tx_no_route`.
    #[error("{peer} is not on a subnet of `{iface}`: detpath sends on-link only (no gateway routing); the datagram was dropped (counter tx_no_route)")]
    NoRoute {
        /// The destination.
        peer: Ipv4Addr,
        /// The endpoint's interface.
        iface: Arc<str>,
    },

    /// A send to an on-link destination whose MAC address is not known:
    /// resolution is under way or failed recently. Built without
    /// allocating; counted in `tx_no_neigh`.
    #[error("no MAC address for {peer} on `{iface}` ({why}); the datagram was dropped (counter tx_no_neigh). Check the peer is up and on the link, or add a static neighbour: `ip neigh add {peer} lladdr <mac> dev {iface}`")]
    NoNeighbour {
        /// The destination.
        peer: Ipv4Addr,
        /// The endpoint's interface.
        iface: Arc<str>,
        /// Under way, or failed recently.
        why: &'static str,
    },

    /// The datapath (or layer) cannot do what was asked on this kernel,
    /// interface or endpoint kind (AF_XDP without CONFIG_XDP_SOCKETS, a
    /// layer on a frame endpoint it does not wrap): use another datapath.
    #[error("{what} is not supported by the {datapath} datapath")]
    Unsupported {
        /// The datapath or layer that refused.
        datapath: &'static str,
        /// What was asked for.
        what: String,
    },

    /// An OS call failed outside the kernel objects of `detpath_sys`
    /// (sockets, files, running a tool): the message says what was being done.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
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

    /// Wraps an OS error with what was being done ([`Error::Io`]), for
    /// errors no capability explains.
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
    /// The device cannot become a DPDK port: no such PCI device, a device
    /// not bound to a DPDK-capable driver, or a virtual device the EAL
    /// refused to create: `why` says which and how to bind it.
    #[error("no DPDK port `{device}`: {why}")]
    NoSuchPort {
        /// The devargs or PCI address asked for.
        device: String,
        /// What is wrong, with the fix.
        why: String,
    },

    /// The port is held by another endpoint of this process, by another
    /// process, or its queue by an AF_XDP socket the kernel has not
    /// released yet: close the other user, or wait and retry.
    #[error("DPDK port `{device}` is already in use {by}")]
    PortInUse {
        /// The device (and queue) asked for.
        device: String,
        /// Who holds it, as a phrase ("by another process ...").
        by: String,
    },

    /// `huge=on` with fewer free hugepages than the EAL's memory: reserve
    /// `pages` pages, or use `huge=off`.
    #[error("hugepages were asked for (huge=on) but {free_mb} MB are free and the EAL needs {need_mb} MB; reserve them with `echo {pages} > /proc/sys/vm/nr_hugepages`, or run without hugepages: `huge=off` (--no-huge, fine for virtual devices)")]
    NoHugepages {
        /// The EAL's memory (`mem=`), MB.
        need_mb: u64,
        /// Free hugepage memory, MB.
        free_mb: u64,
        /// Hugepages to reserve (twice what `need_mb` takes, for headroom).
        pages: u64,
    },

    /// The mbuf pool could not be created, or has too few free mbufs to set
    /// up the rings or to send: raise `mbufs=` (and `mem=`).
    #[error(
        "mbuf pool exhausted: {what}; raise `mbufs=` (now {mbufs}) and, if the EAL runs out of memory, `mem=` (MB, for the first endpoint of the process)"
    )]
    PoolExhausted {
        /// What needed mbufs, and how many were free.
        what: String,
        /// The pool's size (`mbufs=`), mbufs.
        mbufs: u32,
    },

    /// The port's link stayed down after start: check the cable or peer,
    /// or bring the virtual device's interface up.
    #[error("the link of DPDK port `{device}` is down (waited {waited_ms} ms); check the cable or the peer, and `ip link set <iface> up` on a virtual device's interface")]
    LinkDown {
        /// The port's device.
        device: String,
        /// How long the link was waited for, ms.
        waited_ms: u64,
    },

    /// rte_eal_init failed (no root, no hugepages, a bad argument): see
    /// DPDK's log; run as root, or with `huge=off`.
    #[error("DPDK EAL initialisation failed ({why}) with arguments `{args}`; see DPDK's log above (raise it with `log=notice`). Run as root; without hugepages use `huge=off`")]
    EalInit {
        /// The EAL arguments, space-separated.
        args: String,
        /// DPDK's error text.
        why: String,
    },

    /// The process's EAL (initialised once, by the first dpdk endpoint)
    /// was started with settings this endpoint contradicts (PCI, `mem=`,
    /// `huge=`): follow `fix`, usually another process.
    #[error("the DPDK EAL of this process was initialised {why}; {fix}")]
    EalMismatch {
        /// How the EAL was initialised and what this endpoint asks instead.
        why: String,
        /// What to do.
        fix: String,
    },

    /// A send to a peer that did not answer ARP in time (remembered for
    /// 1 s, the datagram dropped): check the peer, or give its MAC with `neigh=`.
    #[error("cannot resolve the MAC address of {peer} on `{device}`: no ARP reply within {ms} ms (remembered for 1 s; datagrams to it are dropped and counted in tx_no_neigh); check the peer is up and on the same link, or give it statically: `neigh={peer}@<mac>`")]
    Unresolved {
        /// The destination.
        peer: Ipv4Addr,
        /// The port's device.
        device: std::sync::Arc<str>,
        /// How long ARP was waited for (`arp_timeout=`), ms.
        ms: u64,
    },

    /// The driver took no mbuf from a send for that long (link down, queue
    /// wedged): the unsent datagrams are dropped and counted in `tx_errors`.
    #[error("the TX queue of DPDK port `{device}` stayed full for {ms} ms")]
    TxStalled {
        /// The port's device.
        device: String,
        /// How long the send retried, ms.
        ms: u64,
    },

    /// A DPDK call returned an error that has no variant of its own.
    #[error("{what} failed: {msg} (DPDK error {code})")]
    Call {
        /// The call, and on what.
        what: String,
        /// DPDK's (negative) errno value.
        code: i32,
        /// DPDK's text for `code` (rte_strerror).
        msg: String,
    },
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
