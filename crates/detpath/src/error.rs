//! The library's error type. Every variant names what is wrong and how to fix it.
//!
//! Kernel-object errors (interfaces, namespaces, XDP, capabilities) are
//! `detpath_sys`'s, carried whole in [`Error::Sys`]; a datapath with errors of
//! its own has one variant here that carries them typed (DPDK's).

use crate::datapath::dpdk::DpdkError;
use std::io;

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
    Realtime(#[from] detpath_tune::RtError),
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
            Error::ZeroCopyRefused { .. } | Error::Unsupported { .. } => libc::EOPNOTSUPP,
            Error::Io { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
            Error::Sys(e) => e.errno(),
            Error::Dpdk(_) | Error::Realtime(_) => libc::EIO,
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

/// Returns the last OS error as an `io::Error`.
pub(crate) fn last_os_error() -> io::Error {
    io::Error::last_os_error()
}
