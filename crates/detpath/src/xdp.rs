//! The shared XDP program layer: load one of detpath's XDP programs (the C in
//! `bpf/`, compiled at build time), configure its filter, attach it to an
//! interface, read its counters, and detach it on drop.
//!
//! Used by the `afxdp` datapath (`bpf/xsk_redirect.bpf.c`) and the `xdppoll`
//! datapath (`bpf/xdppoll.bpf.c`). Both programs include
//! `bpf/detpath_filter.h`, which defines the match (IPv4/UDP to one address
//! and port; everything else `XDP_PASS`) and the two maps this module drives:
//! `dp_config` (the [`FilterConfig`]) and `dp_stats` ([`FilterStats`]).
//!
//! # Attachment
//!
//! The program is attached through a **BPF link** (`BPF_LINK_CREATE`,
//! attach type `BPF_XDP`) in driver (`XDP_FLAGS_DRV_MODE`) or generic
//! (`XDP_FLAGS_SKB_MODE`) mode. A link gives the `XDP_FLAGS_UPDATE_IF_NOEXIST`
//! guarantee and more:
//! - the kernel refuses it when any XDP program is already attached (EBUSY),
//!   so detpath never replaces a program it did not attach; before trying,
//!   [`XdpProgram::attach`] queries the interface and names the program in
//!   [`Error::XdpBusy`];
//! - nobody can replace it through netlink (`ip link set ... xdp`) while it lives;
//! - it detaches exactly this program when dropped (`BPF_LINK_DETACH` on the
//!   link), and the kernel detaches it by itself when the process dies, even
//!   by SIGKILL, because the link lives only as long as its file descriptor.
//!
//! SIGINT/SIGTERM also detach it explicitly through [`crate::cleanup`].
//!
//! # Privileges and limits
//!
//! Needs CAP_BPF (or CAP_SYS_ADMIN) to load and CAP_NET_ADMIN to attach
//! (root has both). Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK;
//! a load refused for that is [`Error::MemlockLimit`]. BPF links for XDP
//! need Linux 5.9 or later.
//!
//! ```no_run
//! # fn main() -> detpath::Result<()> {
//! use detpath::netdev::NetDev;
//! use detpath::xdp::{FilterConfig, XdpProgram};
//! use detpath::XdpModeRequest;
//! # static OBJ: &[u8] = &[];
//! let dev = NetDev::lookup("veth0")?;
//! let prog = XdpProgram::attach(OBJ, "xsk_redirect", &dev, XdpModeRequest::Auto,
//!     FilterConfig { addr: "10.0.0.1".parse().unwrap(), port: 7000 })?;
//! println!("attached id {} in {} mode", prog.prog_id(), prog.mode().as_str());
//! let xsks = prog.map_handle("xsks_map")?;
//! # drop(xsks);
//! # Ok(()) }
//! ```

use crate::cleanup::{self, CleanupHandle};
use crate::endpoint::XdpMode;
use crate::error::{Error, Result};
use crate::netdev::NetDev;
use crate::spec::XdpModeRequest;
use libbpf_rs::libbpf_sys;
use libbpf_rs::{ErrorKind, MapCore, MapFlags, MapHandle, Object, ObjectBuilder};
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

/// Largest MTU a single-buffer XDP program (like detpath's) can usually be
/// attached in native mode with: one 4 KiB page minus the 256-byte XDP
/// headroom, the skb_shared_info tail (320 bytes) and the Ethernet header.
/// veth enforces exactly this; real drivers enforce something close to it.
pub const NATIVE_MAX_MTU: u32 = 4096 - 256 - 320 - 14;

/// What the program matches: IPv4/UDP frames to this destination address and port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterConfig {
    pub addr: Ipv4Addr,
    pub port: u16,
}

impl FilterConfig {
    /// The bytes of `struct dp_filter_config` (`bpf/detpath_filter.h`):
    /// `__be32 addr; __be16 port; __u16 _pad;`.
    fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0..4].copy_from_slice(&self.addr.octets());
        b[4..6].copy_from_slice(&self.port.to_be_bytes());
        b
    }
}

/// The program's counters (`dp_stats`), summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterStats {
    /// Frames that were ours and were handed to user space (redirected to the
    /// AF_XDP socket, pushed into the ring).
    pub matched: u64,
    /// Frames that were not ours, passed to the kernel stack.
    pub passed: u64,
    /// Frames that were ours but could not be handed over (no socket on that
    /// queue, ring full), dropped.
    pub dropped: u64,
}

/// A loaded detpath XDP program attached to one interface through a BPF link.
/// Dropping it detaches the program (only this one) and unloads it.
pub struct XdpProgram {
    iface: String,
    ifindex: u32,
    mode: XdpMode,
    prog_id: u32,
    notes: Vec<String>,
    stats: MapHandle,
    /// The BPF link: the attachment. Detached in `Drop`, closed after.
    link: OwnedFd,
    object: Object,
    _cleanup: CleanupHandle,
}

impl std::fmt::Debug for XdpProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpProgram")
            .field("iface", &self.iface)
            .field("ifindex", &self.ifindex)
            .field("mode", &self.mode)
            .field("prog_id", &self.prog_id)
            .finish_non_exhaustive()
    }
}

/// The XDP program ids attached to an interface, by mode, as the kernel reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttachedXdp {
    pub drv_prog_id: u32,
    pub skb_prog_id: u32,
    pub hw_prog_id: u32,
}

impl AttachedXdp {
    /// The first attached program id, if any.
    pub fn any(&self) -> Option<u32> {
        [self.drv_prog_id, self.skb_prog_id, self.hw_prog_id].into_iter().find(|&id| id != 0)
    }
}

/// Which XDP programs are attached to `ifindex` (in the calling thread's
/// network namespace). Needs no privilege.
pub fn query(ifindex: u32) -> Result<AttachedXdp> {
    let mut opts = libbpf_sys::bpf_xdp_query_opts { sz: std::mem::size_of::<libbpf_sys::bpf_xdp_query_opts>() as _, ..Default::default() };
    // SAFETY: opts is a valid, sized bpf_xdp_query_opts the call fills in.
    let r = unsafe { libbpf_sys::bpf_xdp_query(ifindex as i32, 0, &mut opts) };
    if r < 0 {
        return Err(Error::io(format!("querying the XDP programs of ifindex {ifindex}"), std::io::Error::from_raw_os_error(-r)));
    }
    Ok(AttachedXdp { drv_prog_id: opts.drv_prog_id, skb_prog_id: opts.skb_prog_id, hw_prog_id: opts.hw_prog_id })
}

/// Effective capability bits of the calling thread (from /proc), if readable.
fn effective_caps() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;

fn has_cap(caps: Option<u64>, cap: u32) -> bool {
    !matches!(caps, Some(c) if c & (1 << cap) == 0)
}

/// The RLIMIT_MEMLOCK soft limit, for error messages ("8192 KiB", "unlimited").
pub(crate) fn memlock_limit() -> String {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: r is a valid out-parameter.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return "unknown".into();
    }
    if r.rlim_cur == libc::RLIM_INFINITY {
        "unlimited".into()
    } else {
        format!("{} KiB", r.rlim_cur / 1024)
    }
}

/// Why a program load failed, decided from the errno, the thread's
/// capabilities and the memlock limit (pure, so it is unit-tested).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoadFailure {
    MissingCapability(&'static str),
    /// EPERM with the capabilities present and a finite RLIMIT_MEMLOCK:
    /// kernels before 5.11 charge BPF maps to it.
    Memlock,
    /// EACCES with the capabilities present: the verifier said no.
    Verifier,
    Other,
}

fn classify_load_failure(errno: Option<i32>, caps: Option<u64>, memlock_unlimited: bool) -> LoadFailure {
    let sys_admin = has_cap(caps, CAP_SYS_ADMIN);
    let missing = if !has_cap(caps, CAP_BPF) && !sys_admin {
        Some("CAP_BPF (or CAP_SYS_ADMIN)")
    } else if !has_cap(caps, CAP_NET_ADMIN) && !sys_admin {
        // XDP is a networking program type: loading it also needs CAP_NET_ADMIN.
        Some("CAP_NET_ADMIN")
    } else {
        None
    };
    match (errno, missing) {
        (Some(libc::EPERM) | Some(libc::EACCES), Some(cap)) => LoadFailure::MissingCapability(cap),
        (Some(libc::EACCES), None) => LoadFailure::Verifier,
        (Some(libc::EPERM), None) if !memlock_unlimited => LoadFailure::Memlock,
        _ => LoadFailure::Other,
    }
}

/// The errno inside a libbpf error ("... (os error 13)"): libbpf-rs keeps the
/// io::Error but does not hand it out.
fn errno_of(e: &libbpf_rs::Error) -> Option<i32> {
    let text = format!("{e:#}");
    let at = text.rfind("os error ")? + "os error ".len();
    text[at..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

/// Maps a failed load to the error that says what to do.
fn load_error(prog_name: &str, e: libbpf_rs::Error) -> Error {
    let what = format!("loading the XDP program `{prog_name}`");
    let errno = errno_of(&e).or(if e.kind() == ErrorKind::PermissionDenied { Some(libc::EPERM) } else { None });
    match classify_load_failure(errno, effective_caps(), memlock_limit() == "unlimited") {
        LoadFailure::MissingCapability(cap) => Error::MissingCapability { cap, what },
        LoadFailure::Memlock => Error::MemlockLimit { what, limit: memlock_limit() },
        LoadFailure::Verifier => Error::VerifierRejected {
            program: prog_name.to_string(),
            errno: "EACCES",
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string(),
        },
        LoadFailure::Other => Error::Bpf { what, source: e },
    }
}

fn mode_flags(mode: XdpMode) -> u32 {
    match mode {
        XdpMode::Native => libbpf_sys::XDP_FLAGS_DRV_MODE,
        XdpMode::Skb => libbpf_sys::XDP_FLAGS_SKB_MODE,
    }
}

/// Why one attach attempt failed.
enum AttachFailure {
    /// The mode itself was refused: worth trying the other mode under `auto`.
    Mode(Error),
    /// Anything else (busy, privileges): final.
    Fatal(Error),
}

fn busy(dev: &NetDev) -> Option<Error> {
    query(dev.ifindex).ok()?.any().map(|prog_id| Error::XdpBusy { iface: dev.name.clone(), prog_id })
}

/// One `BPF_LINK_CREATE` in `mode`.
fn link_create(prog_fd: i32, dev: &NetDev, mode: XdpMode) -> std::result::Result<OwnedFd, AttachFailure> {
    let opts = libbpf_sys::bpf_link_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _,
        flags: mode_flags(mode),
        ..Default::default()
    };
    // SAFETY: prog_fd is a loaded XDP program; opts is a valid, sized options struct.
    let fd = unsafe { libbpf_sys::bpf_link_create(prog_fd, dev.ifindex as i32, libbpf_sys::BPF_XDP, &opts) };
    if fd >= 0 {
        // SAFETY: a fresh link descriptor we own.
        return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    let errno = -fd;
    let iface = dev.name.clone();
    let m = mode.as_str();
    let io = std::io::Error::from_raw_os_error(errno);
    Err(match errno {
        libc::EBUSY | libc::EEXIST => AttachFailure::Fatal(busy(dev).unwrap_or(Error::XdpModeRefused {
            iface,
            mode: m,
            detail: format!("the kernel says the interface is busy ({io}) but reports no XDP program; an upper device (bond, bridge) may hold one"),
        })),
        libc::EPERM | libc::EACCES => AttachFailure::Fatal(Error::MissingCapability { cap: "CAP_NET_ADMIN", what: format!("attaching XDP to `{iface}`") }),
        libc::ERANGE if dev.mtu > NATIVE_MAX_MTU => AttachFailure::Mode(Error::MtuTooLarge { iface, mtu: dev.mtu, max: NATIVE_MAX_MTU, mode: m }),
        libc::ERANGE => AttachFailure::Mode(Error::XdpModeRefused {
            iface,
            mode: m,
            detail: format!("the driver says the MTU is too large (ERANGE); on veth the peer's MTU counts too: keep both ends at most {NATIVE_MAX_MTU} (e.g. `ip link set <peer> mtu 1500`)"),
        }),
        libc::ENOSPC => AttachFailure::Mode(Error::XdpModeRefused {
            iface: iface.clone(),
            mode: m,
            detail: format!("the veth peer has more TX queues than `{iface}` has RX queues; give both ends the same count with `ethtool -L <dev> rx N tx N`"),
        }),
        libc::ENOTCONN => AttachFailure::Mode(Error::XdpModeRefused { iface, mode: m, detail: "the veth peer is not connected".into() }),
        libc::EOPNOTSUPP => AttachFailure::Mode(Error::XdpModeRefused { iface, mode: m, detail: "the driver does not implement it".into() }),
        _ => AttachFailure::Mode(Error::XdpModeRefused { iface, mode: m, detail: format!("BPF_LINK_CREATE failed: {io}") }),
    })
}

impl XdpProgram {
    /// Loads `object` (an ELF built from `bpf/*.bpf.c`), writes `filter` into
    /// its `dp_config` map and attaches its program `prog_name` to `dev`.
    ///
    /// Mode: `Native` or `Skb` is attempted as asked and fails with
    /// [`Error::XdpModeRefused`] (or [`Error::MtuTooLarge`]) when refused;
    /// `Auto` tries native, then skb, and says why in [`notes`](Self::notes).
    ///
    /// Errors: [`Error::XdpBusy`] when any XDP program is already attached
    /// (detpath never replaces one); [`Error::MissingCapability`] (CAP_BPF,
    /// CAP_NET_ADMIN); [`Error::MemlockLimit`]; [`Error::MtuTooLarge`] for an
    /// explicit native request above [`NATIVE_MAX_MTU`]; [`Error::Bpf`] for a
    /// broken object.
    pub fn attach(object: &'static [u8], prog_name: &str, dev: &NetDev, mode: XdpModeRequest, filter: FilterConfig) -> Result<XdpProgram> {
        // Refuse early, before loading anything, when the interface is taken.
        if let Some(e) = busy(dev) {
            return Err(e);
        }
        if mode == XdpModeRequest::Native && dev.mtu > NATIVE_MAX_MTU {
            return Err(Error::MtuTooLarge { iface: dev.name.clone(), mtu: dev.mtu, max: NATIVE_MAX_MTU, mode: "native" });
        }
        let open = ObjectBuilder::default().open_memory(object).map_err(|e| Error::Bpf { what: format!("opening the BPF object for `{prog_name}`"), source: e })?;
        let obj = open.load().map_err(|e| load_error(prog_name, e))?;

        let map_err = |what: &str, e: libbpf_rs::Error| Error::Bpf { what: format!("{what} of `{prog_name}`"), source: e };
        let config = obj.maps().find(|m| m.name() == "dp_config").ok_or_else(|| missing(prog_name, "map `dp_config`"))?;
        config.update(&0u32.to_ne_bytes(), &filter.to_bytes(), MapFlags::ANY).map_err(|e| map_err("writing the filter config", e))?;
        let stats_map = obj.maps().find(|m| m.name() == "dp_stats").ok_or_else(|| missing(prog_name, "map `dp_stats`"))?;
        let stats = MapHandle::try_from(&stats_map).map_err(|e| map_err("opening map `dp_stats`", e))?;

        let prog = obj.progs().find(|p| p.name() == prog_name).ok_or_else(|| missing(prog_name, "its program"))?;
        let prog_fd = prog.as_fd().as_raw_fd();
        let prog_id = libbpf_rs::Program::id_from_fd(prog.as_fd()).map_err(|e| map_err("reading the program id", e))?;

        let mut notes = Vec::new();
        let (link, mode) = match mode {
            XdpModeRequest::Native => (link_create(prog_fd, dev, XdpMode::Native).map_err(AttachFailure::into_error)?, XdpMode::Native),
            XdpModeRequest::Skb => (link_create(prog_fd, dev, XdpMode::Skb).map_err(AttachFailure::into_error)?, XdpMode::Skb),
            XdpModeRequest::Auto => match link_create(prog_fd, dev, XdpMode::Native) {
                Ok(l) => {
                    notes.push("mode=auto picked native XDP".into());
                    (l, XdpMode::Native)
                }
                Err(AttachFailure::Fatal(e)) => return Err(e),
                Err(AttachFailure::Mode(why)) => {
                    let l = link_create(prog_fd, dev, XdpMode::Skb).map_err(AttachFailure::into_error)?;
                    notes.push(format!("mode=auto picked skb XDP: native refused ({why})"));
                    (l, XdpMode::Skb)
                }
            },
        };

        // Detach on SIGINT/SIGTERM through a duplicate of the link fd; the
        // duplicate closes when the handle drops (after our own detach).
        let dup = link.try_clone().map_err(|e| Error::io("duplicating the XDP link descriptor", e))?;
        let iface = dev.name.clone();
        let _cleanup = cleanup::register(
            format!("XDP program `{prog_name}` (id {prog_id}) on `{iface}`"),
            Box::new(move || {
                // SAFETY: dup is a BPF link descriptor owned by this closure.
                unsafe { libbpf_sys::bpf_link_detach(dup.as_raw_fd()) };
            }),
        );
        Ok(XdpProgram { iface, ifindex: dev.ifindex, mode, prog_id, notes, stats, link, object: obj, _cleanup })
    }

    /// The mode the program runs in.
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// The kernel's id for the program (as in `ip -d link show`, `bpftool prog show id N`).
    pub fn prog_id(&self) -> u32 {
        self.prog_id
    }

    /// The interface the program is attached to.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// The interface index the program is attached to.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// How the mode was chosen (for `mode=auto`, what was refused), for capability reports.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// An owned handle to one of the program's maps (a duplicated descriptor),
    /// e.g. `xsks_map` to insert an AF_XDP socket, or a ring buffer to mmap.
    pub fn map_handle(&self, name: &str) -> Result<MapHandle> {
        let map = self.object.maps().find(|m| m.name() == name).ok_or_else(|| missing(&format!("id {}", self.prog_id), &format!("map `{name}`")))?;
        MapHandle::try_from(&map).map_err(|e| Error::Bpf { what: format!("opening map `{name}`"), source: e })
    }

    /// The program's counters, summed over CPUs (zeros if the map cannot be read).
    pub fn stats(&self) -> FilterStats {
        let read = |idx: u32| -> u64 {
            match self.stats.lookup_percpu(&idx.to_ne_bytes(), MapFlags::ANY) {
                Ok(Some(per_cpu)) => per_cpu.iter().filter_map(|v| v.get(..8)).map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]))).sum(),
                _ => 0,
            }
        };
        FilterStats { matched: read(0), passed: read(1), dropped: read(2) }
    }
}

impl AttachFailure {
    fn into_error(self) -> Error {
        match self {
            AttachFailure::Mode(e) | AttachFailure::Fatal(e) => e,
        }
    }
}

fn missing(prog_name: &str, what: &str) -> Error {
    Error::Bpf {
        what: format!("the BPF object for `{prog_name}` has no {what}"),
        source: libbpf_rs::Error::from_raw_os_error(libc::ENOENT),
    }
}

impl Drop for XdpProgram {
    fn drop(&mut self) {
        // SAFETY: self.link is our BPF link descriptor; detaching affects only
        // this link's program. Closing the fd (field drop) releases the link.
        let r = unsafe { libbpf_sys::bpf_link_detach(self.link.as_raw_fd()) };
        if r < 0 && -r != libc::ENOLINK && -r != libc::EINVAL {
            eprintln!(
                "detpath: detaching XDP program id {} from `{}`: {} (it goes when the process exits)",
                self.prog_id,
                self.iface,
                std::io::Error::from_raw_os_error(-r)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_config_layout_matches_the_c_struct() {
        let b = FilterConfig { addr: Ipv4Addr::new(10, 77, 0, 1), port: 7000 }.to_bytes();
        assert_eq!(b, [10, 77, 0, 1, 0x1b, 0x58, 0, 0]);
    }

    #[test]
    fn load_failures_are_told_apart() {
        let all = Some((1 << CAP_BPF) | (1 << CAP_NET_ADMIN));
        assert_eq!(classify_load_failure(Some(libc::EACCES), all, false), LoadFailure::Verifier);
        assert_eq!(classify_load_failure(Some(libc::EACCES), all, true), LoadFailure::Verifier);
        assert_eq!(classify_load_failure(Some(libc::EPERM), all, false), LoadFailure::Memlock);
        assert_eq!(classify_load_failure(Some(libc::EPERM), all, true), LoadFailure::Other);
        assert_eq!(classify_load_failure(Some(libc::EPERM), Some(1 << CAP_NET_ADMIN), false), LoadFailure::MissingCapability("CAP_BPF (or CAP_SYS_ADMIN)"));
        assert_eq!(classify_load_failure(Some(libc::EACCES), Some(1 << CAP_BPF), false), LoadFailure::MissingCapability("CAP_NET_ADMIN"));
        assert_eq!(classify_load_failure(Some(libc::EINVAL), all, false), LoadFailure::Other);
        assert_eq!(classify_load_failure(None, all, false), LoadFailure::Other);
    }

    #[test]
    fn errno_is_read_from_the_message() {
        let e = libbpf_rs::Error::from(std::io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(errno_of(&e), Some(libc::EACCES));
        let e = libbpf_rs::Error::from(std::io::Error::other("no number here"));
        assert_eq!(errno_of(&e), None);
    }

    #[test]
    fn capability_bits() {
        assert!(has_cap(Some(1 << CAP_BPF), CAP_BPF));
        assert!(!has_cap(Some(0), CAP_NET_ADMIN));
        assert!(has_cap(None, CAP_SYS_ADMIN));
    }
}
