//! The few OS calls the classifier makes itself: interface facts (namespace-
//! correct, through ioctls on a socket of the calling thread), the XDP link,
//! network namespaces of a thread, and an AF_PACKET socket for tests.

use crate::error::{Error, Result};
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Index of an interface in the calling thread's network namespace.
pub fn ifindex(iface: &str) -> Result<u32> {
    let c = CString::new(iface).map_err(|_| Error::NoSuchInterface(iface.into()))?;
    // SAFETY: c is a valid NUL-terminated string that outlives the call.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(Error::NoSuchInterface(iface.into()));
    }
    Ok(idx)
}

/// Receive queues of an interface (ETHTOOL_GCHANNELS: rx + combined), or 1
/// when the driver does not say.
pub fn rx_queues(iface: &str) -> Result<u32> {
    ifindex(iface)?;
    Ok(detpath_tune::nic::EthtoolIoctl.rx_queues(iface).unwrap_or(1))
}

/// The CPUs that are online (from /sys/devices/system/cpu/online).
pub fn online_cpus() -> Vec<u32> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut out = Vec::new();
    for part in s.trim().split(',') {
        let mut it = part.split('-');
        let a = it.next().and_then(|x| x.parse::<u32>().ok());
        let b = it.next().and_then(|x| x.parse::<u32>().ok());
        match (a, b) {
            (Some(a), Some(b)) => out.extend(a..=b.min(a + 4096)),
            (Some(a), None) => out.push(a),
            _ => {}
        }
    }
    if out.is_empty() {
        // SAFETY: sysconf has no memory-safety preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
        out.extend(0..n);
    }
    out
}

/// How the XDP program is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XdpMode {
    /// In the driver (native); refused where the driver has no XDP support.
    #[default]
    Native,
    /// Generic XDP on the skb (any interface, slower). Chosen explicitly, never as a silent fallback.
    Skb,
}

impl XdpMode {
    pub fn name(self) -> &'static str {
        match self {
            XdpMode::Native => "native",
            XdpMode::Skb => "skb",
        }
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

/// An XDP program attached to an interface through a BPF link: detached when
/// this value drops, and by the kernel when the process dies (the link is an
/// fd), so an interface is never left with a stale classifier.
#[derive(Debug)]
pub struct XdpLink {
    fd: OwnedFd,
    pub iface: String,
    pub ifindex: u32,
    pub mode: XdpMode,
}

impl XdpLink {
    /// Attaches `prog_fd` to `iface` (in the calling thread's namespace).
    pub fn attach(prog_fd: RawFd, iface: &str, mode: XdpMode) -> Result<XdpLink> {
        let ifindex = ifindex(iface)?;
        // SAFETY: zeroed is a valid bpf_link_create_opts; sz and flags are set below.
        let mut opts: libbpf_rs::libbpf_sys::bpf_link_create_opts = unsafe { std::mem::zeroed() };
        opts.sz = std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_link_create_opts>() as _;
        opts.flags = match mode {
            XdpMode::Native => 1 << 2, // XDP_FLAGS_DRV_MODE
            XdpMode::Skb => 1 << 1,    // XDP_FLAGS_SKB_MODE
        };
        // SAFETY: prog_fd is a loaded XDP program, opts is initialised and outlives the call.
        let fd = unsafe { libbpf_rs::libbpf_sys::bpf_link_create(prog_fd, ifindex as i32, libbpf_rs::libbpf_sys::BPF_XDP, &opts) };
        if fd < 0 {
            let errno = -fd;
            let why = match errno {
                libc::EBUSY | libc::EEXIST => format!(
                    "{iface} already has an XDP program (see `ip link show dev {iface}`); detach it (`ip link set dev {iface} xdp off`) or use another interface"
                ),
                libc::EOPNOTSUPP | libc::EINVAL if mode == XdpMode::Native => format!(
                    "the driver of {iface} has no native XDP ({}); use --xdp-mode skb",
                    std::io::Error::from_raw_os_error(errno)
                ),
                libc::EPERM => "permission denied: needs root (CAP_NET_ADMIN and CAP_BPF)".into(),
                _ => std::io::Error::from_raw_os_error(errno).to_string(),
            };
            return Err(Error::Attach { iface: iface.into(), mode: mode.name(), why });
        }
        // SAFETY: fd is a fresh link descriptor we own.
        Ok(XdpLink { fd: unsafe { OwnedFd::from_raw_fd(fd) }, iface: iface.into(), ifindex, mode })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Where `ip netns` keeps namespace handles.
pub const NETNS_RUN_DIR: &str = "/run/netns";

/// While alive, the calling thread is in another network namespace.
pub struct NetnsGuard {
    original: File,
    _not_send: std::marker::PhantomData<*const ()>,
}

fn setns(f: &File, ns: &str) -> Result<()> {
    // SAFETY: f is an open namespace file; CLONE_NEWNET restricts it to network namespaces.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(Error::Netns { ns: ns.into(), why: format!("setns: {} (needs CAP_SYS_ADMIN)", std::io::Error::last_os_error()) });
    }
    Ok(())
}

/// Moves the calling thread into the named namespace (`/run/netns/NAME`) until the guard drops.
pub fn enter_netns(name: &str) -> Result<NetnsGuard> {
    let original = File::open("/proc/thread-self/ns/net").map_err(|e| Error::io("opening this thread's network namespace", e))?;
    let target = File::open(format!("{NETNS_RUN_DIR}/{name}")).map_err(|e| Error::Netns { ns: name.into(), why: format!("{e}; does it exist? (`ip netns list`)") })?;
    setns(&target, name)?;
    Ok(NetnsGuard { original, _not_send: std::marker::PhantomData })
}

/// Moves the calling thread into the named namespace for good (a serving thread).
pub fn move_to_netns(name: &str) -> Result<()> {
    let g = enter_netns(name)?;
    std::mem::forget(g);
    Ok(())
}

impl Drop for NetnsGuard {
    fn drop(&mut self) {
        if let Err(e) = setns(&self.original, "of origin") {
            eprintln!("detpath classify: {e}");
        }
    }
}

/// A raw AF_PACKET socket bound to one interface (tests and the generator).
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: u32,
}

impl PacketSocket {
    /// Opens a socket on `iface` in the calling thread's namespace.
    pub fn open(iface: &str) -> Result<PacketSocket> {
        let ifindex = ifindex(iface)?;
        let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
        // SAFETY: plain socket(2); the result is checked.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto) };
        if fd < 0 {
            return Err(Error::io(format!("AF_PACKET socket on {iface} (needs CAP_NET_RAW)"), std::io::Error::last_os_error()));
        }
        // SAFETY: fd is fresh and ours.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: zeroed sockaddr_ll is valid; fields set below.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto as u16;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: sll is a valid sockaddr_ll of the given length.
        let r = unsafe { libc::bind(fd.as_raw_fd(), &sll as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_ll>() as u32) };
        if r < 0 {
            return Err(Error::io(format!("binding AF_PACKET socket to {iface}"), std::io::Error::last_os_error()));
        }
        Ok(PacketSocket { fd, ifindex })
    }

    /// Sends one frame as it is.
    pub fn send(&self, frame: &[u8]) -> Result<()> {
        // SAFETY: zeroed sockaddr_ll is valid; fields set below.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex = self.ifindex as i32;
        sll.sll_halen = 6;
        sll.sll_addr[..6].copy_from_slice(&frame[..6.min(frame.len())]);
        // SAFETY: frame is a live buffer of frame.len() bytes; sll is valid.
        let r = unsafe {
            libc::sendto(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0, &sll as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_ll>() as u32)
        };
        if r < 0 {
            return Err(Error::io("sending on AF_PACKET socket", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Receives one frame (incoming only), waiting at most `timeout`.
    pub fn recv(&self, buf: &mut [u8], timeout: std::time::Duration) -> Result<Option<usize>> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: pfd is one valid pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(i32::MAX as u128) as i32) };
            if n <= 0 {
                return Ok(None);
            }
            // SAFETY: zeroed sockaddr_ll is a valid out-parameter.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut sl = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: buf is writable for buf.len() bytes; sll/sl are valid out-parameters.
            let r = unsafe { libc::recvfrom(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT, &mut sll as *mut _ as *mut libc::sockaddr, &mut sl) };
            if r < 0 {
                continue;
            }
            if sll.sll_pkttype == libc::PACKET_OUTGOING as u8 {
                continue;
            }
            return Ok(Some(r as usize));
        }
    }
}
