//! Errors about kernel objects. Every variant names the object and how to fix it.

use std::io;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong with a kernel object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("no network interface `{iface}` in this network namespace (see `ip link`; for the testbed run `detpath testbed up`)")]
    NoSuchInterface { iface: String },

    #[error("interface `{iface}` is down; bring it up with `ip link set {iface} up`")]
    InterfaceDown { iface: String },

    #[error("address {addr} is not configured on `{iface}`; add it with `ip addr add {addr}/24 dev {iface}` or pick one of: {have}")]
    AddressNotOnInterface { iface: String, addr: String, have: String },

    #[error("cannot resolve the MAC address of {peer} on `{iface}` (no ARP reply within {ms} ms); check the peer is up, or add a static neighbour: `ip neigh add {peer} lladdr <mac> dev {iface}`")]
    NeighbourUnresolved { peer: String, iface: String, ms: u64 },

    #[error("{peer} is not on a subnet of `{iface}`: detpath sends on-link only (no gateway routing)")]
    NotOnLink { peer: String, iface: String },

    #[error("interface `{iface}` has MTU {mtu}, too large for XDP in {mode} mode (at most {max}); lower it with `ip link set {iface} mtu {max}`")]
    MtuTooLarge { iface: String, mtu: u32, max: u32, mode: &'static str },

    #[error("{what} needs {cap}; run as root or grant it (e.g. `setcap cap_net_admin,cap_net_raw,cap_bpf,cap_sys_admin+ep <binary>`)")]
    MissingCapability { cap: &'static str, what: String },

    #[error("locked-memory limit too low for {what} ({limit}); raise it with `ulimit -l unlimited` or LimitMEMLOCK=infinity")]
    MemlockLimit { what: String, limit: String },

    #[error("the kernel's BPF verifier rejected `{program}` ({errno}); libbpf printed the verifier log above. This kernel ({kernel}) does not accept detpath's program: please report it with that log")]
    VerifierRejected { program: String, errno: &'static str, kernel: String },

    #[error("interface `{iface}` already has XDP program id {prog_id} attached, which detpath did not attach; remove it with `ip link set dev {iface} xdp off` (or `xdp-loader unload {iface} --all`) if it is not needed")]
    XdpBusy { iface: String, prog_id: u32 },

    #[error("{mode} XDP mode is not supported on `{iface}`: {detail}; use `mode=skb` (or `mode=auto` to let detpath pick and report)")]
    XdpModeRefused { iface: String, mode: &'static str, detail: String },

    #[error("network namespace `{ns}`: {why}")]
    Netns { ns: String, why: String },

    #[error("BPF: {what}: {source}")]
    Bpf {
        what: String,
        #[source]
        source: libbpf_rs::Error,
    },

    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// The errno that best names this error, for C callers (the message says the rest).
    pub fn errno(&self) -> i32 {
        match self {
            Error::NoSuchInterface { .. } => libc::ENODEV,
            Error::InterfaceDown { .. } => libc::ENETDOWN,
            Error::AddressNotOnInterface { .. } => libc::EADDRNOTAVAIL,
            Error::NeighbourUnresolved { .. } | Error::NotOnLink { .. } => libc::EHOSTUNREACH,
            Error::MtuTooLarge { .. } => libc::EMSGSIZE,
            Error::MissingCapability { .. } => libc::EPERM,
            Error::MemlockLimit { .. } => libc::ENOMEM,
            Error::VerifierRejected { .. } | Error::XdpModeRefused { .. } => libc::EOPNOTSUPP,
            Error::XdpBusy { .. } => libc::EBUSY,
            Error::Netns { .. } => libc::ENOENT,
            Error::Io { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
            Error::Bpf { .. } => libc::EIO,
        }
    }

    /// Wraps an OS error with what was being done, turning EPERM/EACCES into
    /// a capability error that names the capability.
    pub fn os(what: impl Into<String>, source: io::Error, cap: &'static str) -> Error {
        let what = what.into();
        match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => Error::MissingCapability { cap, what },
            _ => Error::Io { what, source },
        }
    }

    /// An I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Io { what: what.into(), source }
    }

    /// The last OS error (errno) with what was being done.
    pub fn last_os(what: impl Into<String>) -> Error {
        Error::io(what, io::Error::last_os_error())
    }
}
