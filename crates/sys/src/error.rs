//! Errors about kernel objects. Every variant names the object and how to fix it.

use std::io;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong with a kernel object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The interface does not exist in the calling thread's network namespace.
    #[error("no network interface `{iface}` in this network namespace (see `ip link`; for the testbed run `detpath testbed up`)")]
    NoSuchInterface {
        /// The interface asked for.
        iface: String,
    },

    /// The interface is administratively down.
    #[error("interface `{iface}` is down; bring it up with `ip link set {iface} up`")]
    InterfaceDown {
        /// The interface.
        iface: String,
    },

    /// The address asked for is not one of the interface's.
    #[error("address {addr} is not configured on `{iface}`; add it with `ip addr add {addr}/24 dev {iface}` or pick one of: {have}")]
    AddressNotOnInterface {
        /// The interface.
        iface: String,
        /// The address asked for.
        addr: String,
        /// The addresses it has.
        have: String,
    },

    /// No neighbour entry (ARP reply) for the peer in time.
    #[error("cannot resolve the MAC address of {peer} on `{iface}` (no ARP reply within {ms} ms); check the peer is up, or add a static neighbour: `ip neigh add {peer} lladdr <mac> dev {iface}`")]
    NeighbourUnresolved {
        /// The peer's address.
        peer: String,
        /// The interface asked on.
        iface: String,
        /// How long it waited, ms.
        ms: u64,
    },

    /// The peer is behind a gateway; detpath sends on-link only.
    #[error("{peer} is not on a subnet of `{iface}`: detpath sends on-link only (no gateway routing)")]
    NotOnLink {
        /// The peer's address.
        peer: String,
        /// The interface.
        iface: String,
    },

    /// The MTU is above what XDP takes in this mode.
    #[error("interface `{iface}` has MTU {mtu}, too large for XDP in {mode} mode (at most {max}); lower it with `ip link set {iface} mtu {max}`")]
    MtuTooLarge {
        /// The interface.
        iface: String,
        /// Its MTU.
        mtu: u32,
        /// The largest MTU the mode takes.
        max: u32,
        /// The XDP mode.
        mode: &'static str,
    },

    /// The thread lacks a capability the operation needs.
    #[error("{what} needs {cap}; run as root or grant it (e.g. `setcap cap_net_admin,cap_net_raw,cap_bpf,cap_sys_admin+ep <binary>`)")]
    MissingCapability {
        /// The capability (`CAP_NET_ADMIN`).
        cap: &'static str,
        /// What needed it.
        what: String,
    },

    /// RLIMIT_MEMLOCK is too low for the memory to lock.
    #[error("locked-memory limit too low for {what} ({limit}); raise it with `ulimit -l unlimited` or LimitMEMLOCK=infinity")]
    MemlockLimit {
        /// What needed the memory.
        what: String,
        /// The limit in force.
        limit: String,
    },

    /// The BPF verifier refused a program.
    #[error("the kernel's BPF verifier rejected `{program}` ({errno}); libbpf printed the verifier log above. This kernel ({kernel}) does not accept detpath's program: please report it with that log")]
    VerifierRejected {
        /// The program's name.
        program: String,
        /// The errno of the load.
        errno: &'static str,
        /// The running kernel's release.
        kernel: String,
    },

    /// Another XDP program is attached to the interface.
    #[error("interface `{iface}` already has XDP program id {prog_id} attached, which detpath did not attach; remove it with `ip link set dev {iface} xdp off` (or `xdp-loader unload {iface} --all`) if it is not needed")]
    XdpBusy {
        /// The interface.
        iface: String,
        /// The attached program's id.
        prog_id: u32,
    },

    /// The driver refused the XDP mode asked for.
    #[error("{mode} XDP mode is not supported on `{iface}`: {detail}; use `mode=skb` (or `mode=auto` to let detpath pick and report)")]
    XdpModeRefused {
        /// The interface.
        iface: String,
        /// The mode asked for.
        mode: &'static str,
        /// The kernel's answer.
        detail: String,
    },

    /// A network namespace could not be opened or entered.
    #[error("network namespace `{ns}`: {why}")]
    Netns {
        /// The namespace.
        ns: String,
        /// Why.
        why: String,
    },

    /// A libbpf operation failed.
    #[error("BPF: {what}: {source}")]
    Bpf {
        /// The operation.
        what: String,
        /// libbpf's error.
        #[source]
        source: libbpf_rs::Error,
    },

    /// A system call failed.
    #[error("{what}: {source}")]
    Io {
        /// The operation.
        what: String,
        /// The kernel's answer.
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
    pub(crate) fn last_os(what: impl Into<String>) -> Error {
        Error::io(what, io::Error::last_os_error())
    }
}
