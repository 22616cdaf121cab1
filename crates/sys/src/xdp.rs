//! XDP programs and their attachment: one [`XdpMode`], loading an object with
//! errors that say what is missing, attaching through a BPF link, querying
//! what an interface has attached, and detaching.
//!
//! # Attachment
//!
//! Programs are attached through a **BPF link** (`BPF_LINK_CREATE`, attach
//! type `BPF_XDP`) in driver (`XDP_FLAGS_DRV_MODE`) or generic
//! (`XDP_FLAGS_SKB_MODE`) mode, never by netlink replace:
//! - the kernel refuses a link while any XDP program is attached, so detpath
//!   never replaces a program it did not attach; [`XdpLink::attach`] queries
//!   the interface first and names that program in [`Error::XdpBusy`];
//! - nobody can replace it through netlink (`ip link set ... xdp`) while it lives;
//! - dropping the [`XdpLink`] detaches exactly this program, and the kernel
//!   detaches it by itself when the process dies, even by SIGKILL, because the
//!   link lives only as long as its file descriptor;
//! - SIGINT/SIGTERM detach it through [`crate::cleanup`].
//!
//! # Privileges and limits
//!
//! Loading needs CAP_BPF (or CAP_SYS_ADMIN) and, for XDP, CAP_NET_ADMIN;
//! attaching needs CAP_NET_ADMIN (root has all). Kernels before 5.11 charge
//! BPF maps to RLIMIT_MEMLOCK: a load refused for that is
//! [`Error::MemlockLimit`]. BPF links for XDP need Linux 5.9 or later.
//!
//! ```no_run
//! # fn main() -> detpath_sys::Result<()> {
//! use detpath_sys::{xdp, NetDev};
//! # static OBJ: &[u8] = &[];
//! let dev = NetDev::lookup("veth0")?;
//! let obj = xdp::load(OBJ, "xsk_redirect")?;
//! let prog = xdp::program(&obj, "xsk_redirect")?;
//! let link = xdp::XdpLink::attach(prog, "xsk_redirect", &dev, None)?; // None: native, else skb
//! println!("attached in {} mode ({:?})", link.mode().as_str(), link.notes());
//! # Ok(()) }
//! ```

use crate::caps::{self, CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN};
use crate::cleanup::{self, CleanupHandle};
use crate::error::{Error, Result};
use crate::netdev::NetDev;
use libbpf_rs::libbpf_sys;
use libbpf_rs::query::{ProgInfoIter, ProgInfoQueryOptions};
use libbpf_rs::{ErrorKind, MapCore, MapHandle, Object, ObjectBuilder};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Where an XDP program runs. A request for "either" is `Option<XdpMode>`
/// (`None`: native if the driver has it, else skb, and say which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum XdpMode {
    /// In the driver (`XDP_FLAGS_DRV_MODE`); refused where the driver has no XDP.
    Native,
    /// Generic, after the skb is built (`XDP_FLAGS_SKB_MODE`): any interface, slower.
    Skb,
}

impl XdpMode {
    /// The name users type and reports print: `native` or `skb`.
    pub fn as_str(self) -> &'static str {
        match self {
            XdpMode::Native => "native",
            XdpMode::Skb => "skb",
        }
    }

    /// The attach flag for this mode.
    pub fn flags(self) -> u32 {
        match self {
            XdpMode::Native => libbpf_sys::XDP_FLAGS_DRV_MODE,
            XdpMode::Skb => libbpf_sys::XDP_FLAGS_SKB_MODE,
        }
    }
}

impl std::fmt::Display for XdpMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for XdpMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "native" | "drv" | "driver" => Ok(XdpMode::Native),
            "skb" | "generic" => Ok(XdpMode::Skb),
            _ => Err(format!("`{s}` is not an XDP mode (native or skb)")),
        }
    }
}

/// Largest MTU a single-buffer XDP program can usually be attached with in
/// native mode: one 4 KiB page minus the 256-byte XDP headroom, the
/// skb_shared_info tail (320 bytes) and the Ethernet header. veth enforces
/// exactly this; real drivers enforce something close to it.
pub const NATIVE_MAX_MTU: u32 = 4096 - 256 - 320 - 14;

/// The XDP program ids attached to an interface, by mode, as the kernel reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttachedXdp {
    /// The program in driver (native) mode, 0 for none.
    pub drv_prog_id: u32,
    /// The program in generic (skb) mode, 0 for none.
    pub skb_prog_id: u32,
    /// The program offloaded to the NIC, 0 for none.
    pub hw_prog_id: u32,
}

impl AttachedXdp {
    /// The first attached program id, if any.
    pub fn any(&self) -> Option<u32> {
        [self.drv_prog_id, self.skb_prog_id, self.hw_prog_id].into_iter().find(|&id| id != 0)
    }

    /// The mode program `id` is attached in, if it is attached.
    pub fn mode_of(&self, id: u32) -> Option<XdpMode> {
        if id == 0 {
            None
        } else if self.drv_prog_id == id {
            Some(XdpMode::Native)
        } else if self.skb_prog_id == id {
            Some(XdpMode::Skb)
        } else {
            None
        }
    }
}

/// Which XDP programs are attached to `ifindex` (calling thread's namespace). Needs no privilege.
pub fn query(ifindex: u32) -> Result<AttachedXdp> {
    let mut opts = libbpf_sys::bpf_xdp_query_opts { sz: std::mem::size_of::<libbpf_sys::bpf_xdp_query_opts>() as _, ..Default::default() };
    // SAFETY: opts is a valid, sized bpf_xdp_query_opts the call fills in.
    let r = unsafe { libbpf_sys::bpf_xdp_query(ifindex as i32, 0, &mut opts) };
    if r < 0 {
        return Err(Error::io(format!("querying the XDP programs of ifindex {ifindex}"), std::io::Error::from_raw_os_error(-r)));
    }
    Ok(AttachedXdp { drv_prog_id: opts.drv_prog_id, skb_prog_id: opts.skb_prog_id, hw_prog_id: opts.hw_prog_id })
}

/// `Err(XdpBusy)` naming the program when `dev` has any XDP program attached.
pub fn require_free(dev: &NetDev) -> Result<()> {
    match query(dev.ifindex)?.any() {
        Some(prog_id) => Err(Error::XdpBusy { iface: dev.name.clone(), prog_id }),
        None => Ok(()),
    }
}

/// Detaches whatever program is attached to `ifindex` in `mode` (netlink).
/// For restoring an interface after a program detpath did not link itself
/// (e.g. the one DPDK's net_af_xdp PMD attaches); check its id with
/// [`query`] first. Needs CAP_NET_ADMIN.
pub fn detach(ifindex: u32, mode: XdpMode) -> Result<()> {
    // SAFETY: no pointers besides the optional opts, which may be null.
    let r = unsafe { libbpf_sys::bpf_xdp_detach(ifindex as i32, mode.flags(), std::ptr::null()) };
    if r < 0 {
        return Err(Error::os(format!("detaching the {mode} XDP program of ifindex {ifindex}"), std::io::Error::from_raw_os_error(-r), "CAP_NET_ADMIN"));
    }
    Ok(())
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
    let sys_admin = caps::has(caps, CAP_SYS_ADMIN);
    let missing = if !caps::has(caps, CAP_BPF) && !sys_admin {
        Some("CAP_BPF (or CAP_SYS_ADMIN)")
    } else if !caps::has(caps, CAP_NET_ADMIN) && !sys_admin {
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
fn load_error(what_prog: &str, e: libbpf_rs::Error) -> Error {
    let what = format!("loading the BPF program `{what_prog}`");
    let errno = errno_of(&e).or(if e.kind() == ErrorKind::PermissionDenied { Some(libc::EPERM) } else { None });
    let limit = caps::memlock_limit();
    match classify_load_failure(errno, caps::effective(), limit == "unlimited") {
        LoadFailure::MissingCapability(cap) => Error::MissingCapability { cap, what },
        LoadFailure::Memlock => Error::MemlockLimit { what, limit },
        LoadFailure::Verifier => Error::VerifierRejected {
            program: what_prog.to_string(),
            errno: "EACCES",
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string(),
        },
        LoadFailure::Other => Error::Bpf { what, source: e },
    }
}

/// Opens and loads a BPF object (an ELF built from `bpf/*.bpf.c`) into the
/// kernel. `name` names it in errors. Errors: [`Error::MissingCapability`],
/// [`Error::MemlockLimit`], [`Error::VerifierRejected`], [`Error::Bpf`].
pub fn load(object: &[u8], name: &str) -> Result<Object> {
    let open = ObjectBuilder::default().open_memory(object).map_err(|e| Error::Bpf { what: format!("opening the BPF object for `{name}`"), source: e })?;
    open.load().map_err(|e| load_error(name, e))
}

/// The program `name` of a loaded object.
pub fn program<'o>(obj: &'o Object, name: &str) -> Result<BorrowedFd<'o>> {
    let fd = obj.progs().find(|p| p.name() == name).map(|p| p.as_fd().as_raw_fd()).ok_or_else(|| missing(name, "program"))?;
    // SAFETY: the descriptor belongs to the program inside `obj`, which stays
    // open (and the fd valid) for as long as `obj` is borrowed.
    Ok(unsafe { BorrowedFd::borrow_raw(fd) })
}

/// An owned handle to the map `name` of a loaded object (a duplicated descriptor).
pub fn map(obj: &Object, name: &str) -> Result<MapHandle> {
    let m = obj.maps().find(|m| m.name() == name).ok_or_else(|| missing(name, "map"))?;
    MapHandle::try_from(&m).map_err(|e| Error::Bpf { what: format!("opening map `{name}`"), source: e })
}

fn missing(name: &str, kind: &str) -> Error {
    Error::Bpf { what: format!("the BPF object has no {kind} `{name}`"), source: libbpf_rs::Error::from_raw_os_error(libc::ENOENT) }
}

/// The maps a loaded program uses, by id, opened (needs CAP_SYS_ADMIN): how a
/// process joins the maps of a program another process attached.
pub fn program_maps(prog_id: u32) -> Result<Vec<(u32, MapHandle)>> {
    let info = ProgInfoIter::with_query_opts(ProgInfoQueryOptions::default().include_map_ids(true))
        .find(|p| p.id == prog_id)
        .ok_or_else(|| Error::MissingCapability { cap: "CAP_SYS_ADMIN", what: format!("reading BPF program id {prog_id}") })?;
    info.map_ids
        .into_iter()
        .map(|id| {
            MapHandle::from_map_id(id).map(|m| (id, m)).map_err(|e| Error::Bpf { what: format!("opening map id {id} of program id {prog_id}"), source: e })
        })
        .collect()
}

/// Why one attach attempt failed.
enum AttachFailure {
    /// The mode itself was refused: worth trying skb when no mode was asked for.
    Mode(Error),
    /// Anything else (busy, privileges): final.
    Fatal(Error),
}

impl AttachFailure {
    fn into_error(self) -> Error {
        match self {
            AttachFailure::Mode(e) | AttachFailure::Fatal(e) => e,
        }
    }
}

/// One `BPF_LINK_CREATE` in `mode`.
fn link_create(prog: BorrowedFd<'_>, dev: &NetDev, mode: XdpMode) -> std::result::Result<OwnedFd, AttachFailure> {
    let opts = libbpf_sys::bpf_link_create_opts { sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _, flags: mode.flags(), ..Default::default() };
    // SAFETY: prog is a loaded XDP program; opts is a valid, sized options struct.
    let fd = unsafe { libbpf_sys::bpf_link_create(prog.as_raw_fd(), dev.ifindex as i32, libbpf_sys::BPF_XDP, &opts) };
    if fd >= 0 {
        // SAFETY: a fresh link descriptor we own.
        return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    let errno = -fd;
    let iface = dev.name.clone();
    let m = mode.as_str();
    let io = std::io::Error::from_raw_os_error(errno);
    let refused = |detail: String| AttachFailure::Mode(Error::XdpModeRefused { iface: iface.clone(), mode: m, detail });
    Err(match errno {
        libc::EBUSY | libc::EEXIST => AttachFailure::Fatal(match require_free(dev) {
            Err(busy) => busy,
            Ok(()) => Error::XdpModeRefused {
                iface,
                mode: m,
                detail: format!("the kernel says the interface is busy ({io}) but reports no XDP program; an upper device (bond, bridge) may hold one"),
            },
        }),
        libc::EPERM | libc::EACCES => AttachFailure::Fatal(Error::MissingCapability { cap: "CAP_NET_ADMIN", what: format!("attaching XDP to `{iface}`") }),
        libc::ERANGE if dev.mtu > NATIVE_MAX_MTU => AttachFailure::Mode(Error::MtuTooLarge { iface, mtu: dev.mtu, max: NATIVE_MAX_MTU, mode: m }),
        libc::ERANGE => refused(format!(
            "the driver says the MTU is too large (ERANGE); on veth the peer's MTU counts too: keep both ends at most {NATIVE_MAX_MTU} (e.g. `ip link set <peer> mtu 1500`)"
        )),
        libc::ENOSPC => refused(format!("the veth peer has more TX queues than `{iface}` has RX queues; give both ends the same count with `ethtool -L <dev> rx N tx N`")),
        libc::ENOTCONN => refused("the veth peer is not connected".into()),
        libc::EOPNOTSUPP => refused("the driver does not implement it".into()),
        _ => refused(format!("BPF_LINK_CREATE failed: {io}")),
    })
}

/// An XDP program attached to an interface through a BPF link: detached when
/// this value drops (only this program), on SIGINT/SIGTERM through
/// [`crate::cleanup`], and by the kernel when the process dies.
pub struct XdpLink {
    link: OwnedFd,
    iface: String,
    ifindex: u32,
    mode: XdpMode,
    notes: Vec<String>,
    _cleanup: CleanupHandle,
}

impl std::fmt::Debug for XdpLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpLink").field("iface", &self.iface).field("ifindex", &self.ifindex).field("mode", &self.mode).finish_non_exhaustive()
    }
}

impl XdpLink {
    /// Attaches `prog` (named `name` in messages) to `dev`.
    ///
    /// `mode`: `Some(m)` is attempted as asked and fails with
    /// [`Error::XdpModeRefused`] (or [`Error::MtuTooLarge`]) when refused;
    /// `None` tries native, then skb, and says why in [`notes`](Self::notes).
    /// Errors: [`Error::XdpBusy`] when any XDP program is already attached
    /// (never replaced); [`Error::MissingCapability`] without CAP_NET_ADMIN.
    pub fn attach(prog: BorrowedFd<'_>, name: &str, dev: &NetDev, mode: Option<XdpMode>) -> Result<XdpLink> {
        // Refuse early, naming the program, when the interface is taken.
        require_free(dev)?;
        if mode == Some(XdpMode::Native) && dev.mtu > NATIVE_MAX_MTU {
            return Err(Error::MtuTooLarge { iface: dev.name.clone(), mtu: dev.mtu, max: NATIVE_MAX_MTU, mode: "native" });
        }
        let mut notes = Vec::new();
        let (link, mode) = match mode {
            Some(m) => (link_create(prog, dev, m).map_err(AttachFailure::into_error)?, m),
            None => match link_create(prog, dev, XdpMode::Native) {
                Ok(l) => {
                    notes.push("mode=auto picked native XDP".into());
                    (l, XdpMode::Native)
                }
                Err(AttachFailure::Fatal(e)) => return Err(e),
                Err(AttachFailure::Mode(why)) => {
                    let l = link_create(prog, dev, XdpMode::Skb).map_err(AttachFailure::into_error)?;
                    notes.push(format!("mode=auto picked skb XDP: native refused ({why})"));
                    (l, XdpMode::Skb)
                }
            },
        };
        // Detach on SIGINT/SIGTERM through a duplicate of the link fd; the
        // duplicate closes when the handle drops (after our own detach).
        let dup = link.try_clone().map_err(|e| Error::io("duplicating the XDP link descriptor", e))?;
        let _cleanup = cleanup::register(
            format!("XDP program `{name}` on `{}`", dev.name),
            Box::new(move || {
                // SAFETY: dup is a BPF link descriptor owned by this closure.
                unsafe { libbpf_sys::bpf_link_detach(dup.as_raw_fd()) };
            }),
        );
        Ok(XdpLink { link, iface: dev.name.clone(), ifindex: dev.ifindex, mode, notes, _cleanup })
    }

    /// The mode the program runs in.
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// The interface the program is attached to.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// The interface index the program is attached to.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// How the mode was chosen (when no mode was asked for, what was refused).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The link descriptor (e.g. for `bpftool link show`).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.link.as_fd()
    }
}

impl Drop for XdpLink {
    fn drop(&mut self) {
        // SAFETY: self.link is our BPF link descriptor; detaching affects only
        // this link's program. Closing the fd (field drop) releases the link.
        let r = unsafe { libbpf_sys::bpf_link_detach(self.link.as_raw_fd()) };
        if r < 0 && -r != libc::ENOLINK && -r != libc::EINVAL {
            eprintln!("detpath: detaching XDP from `{}`: {} (it goes when the process exits)", self.iface, std::io::Error::from_raw_os_error(-r));
        }
    }
}

/// The id of a loaded program (as in `ip -d link show`, `bpftool prog show id N`).
pub fn program_id(prog: BorrowedFd<'_>) -> Result<u32> {
    libbpf_rs::Program::id_from_fd(prog).map_err(|e| Error::Bpf { what: "reading a program id".into(), source: e })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn modes_parse_and_print() {
        for (s, m) in [("native", XdpMode::Native), ("drv", XdpMode::Native), ("skb", XdpMode::Skb), ("generic", XdpMode::Skb)] {
            assert_eq!(s.parse::<XdpMode>().unwrap(), m);
        }
        assert!("fast".parse::<XdpMode>().unwrap_err().contains("native or skb"));
        assert_eq!(XdpMode::Skb.to_string(), "skb");
        let a = AttachedXdp { drv_prog_id: 0, skb_prog_id: 7, hw_prog_id: 0 };
        assert_eq!((a.any(), a.mode_of(7), a.mode_of(8)), (Some(7), Some(XdpMode::Skb), None));
    }

    #[test]
    fn loopback_has_no_xdp_and_a_bad_object_is_a_bpf_error() {
        let lo = NetDev::lookup("lo").unwrap();
        assert_eq!(query(lo.ifindex).unwrap().any(), None);
        require_free(&lo).unwrap();
        assert!(matches!(load(b"not an ELF", "junk"), Err(Error::Bpf { .. })));
    }
}
