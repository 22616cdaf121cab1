//! The `udp` datapath: a kernel UDP socket, the baseline every paper compares
//! against, set up as a fair one: non-blocking, so busy-polling is a tight
//! `recvfrom(MSG_DONTWAIT)` loop; SO_BUSY_POLL so blocking reads spin in the
//! driver first; and bound to the interface when one is named.
//!
//! Batches are one system call each way: `recvmmsg` and `sendmmsg` (up to
//! `batch`, at most 64); a received batch carries one timestamp, taken when
//! `recvmmsg` returned. The kernel's drops on this socket (receive buffer
//! full) are read with SO_MEMINFO when counters are asked for, so the hot
//! path pays nothing for them.
//!
//! Spec: `udp://<addr>:<port>` or `udp://<iface>?port=N[&addr=A][&batch=B]
//! [&rcvbuf=BYTES][&sndbuf=BYTES]` (socket buffer sizes; the kernel doubles
//! them and caps them at net.core.rmem_max / wmem_max unless root).

use crate::datapath::entry::{Datapath, GroupReception};
use crate::datapath::keys;
use crate::datapath::wait::{wait_readable, Step, Wait};
use crate::endpoint::{check_no_class, monotonic_ns, Capabilities, Counters, Endpoint, Mark, RecvMode, RxBatch, RxMeta, RxStamp, TxDatagram};
use crate::error::{last_os_error, Error, Result};
use crate::spec::EndpointSpec;
use detpath_sys::NetDev;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;

/// The `udp` datapath's registry entry: its keys and opener (no frame side).
pub(crate) static DATAPATH: Datapath = Datapath {
    name: "udp",
    display: "UDP socket",
    summary: "kernel UDP socket (baseline)",
    arrival_stamp: Some("rx_stamp=kernel"),
    group_reception: GroupReception::KernelSocket,
    keys: &["busy_poll", "batch", "rcvbuf", "sndbuf", "rx_stamp"],
    open: Some(open),
    frames: None,
};

/// SO_BUSY_POLL value: microseconds a blocking read spins before sleeping.
const BUSY_POLL_US: i32 = 50;
/// Largest batch one recvmmsg/sendmmsg moves.
const MAX_BATCH: usize = 64;
/// `getsockopt(SOL_SOCKET, SO_MEMINFO)`: u32[SK_MEMINFO_VARS]; drops at index 8.
const SO_MEMINFO: i32 = 55;
const SK_MEMINFO_VARS: usize = 9;
const SK_MEMINFO_DROPS: usize = 8;

/// An open `udp` endpoint: one kernel UDP socket, bound to the spec's
/// address and port (and to its interface with SO_BINDTODEVICE when named),
/// or joined to the multicast group `addr` names.
pub(crate) struct UdpEndpoint {
    sock: UdpSocket,
    local: SocketAddrV4,
    caps: Capabilities,
    counters: Counters,
    /// recvmmsg/sendmmsg scratch, allocated once; the pointers inside are
    /// set at the start of each call and not used after it returns.
    mmsg: MmsgScratch,
    /// `rx_stamp=kernel`: `rx_ns` is the kernel's receive time stamp (SO_TIMESTAMPNS).
    kernel_stamp: bool,
}

struct MmsgScratch {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    addrs: Vec<libc::sockaddr_in>,
    /// Control-message space per datagram, for the kernel's time stamp (u64 for alignment).
    cmsgs: Vec<[u64; CMSG_WORDS]>,
}

/// Room for one SCM_TIMESTAMPNS control message (header 16 + timespec 16 bytes), rounded up.
const CMSG_WORDS: usize = 8;

// SAFETY: the raw pointers in `mmsg` only ever point into buffers lent to a
// single call (and into `mmsg` itself) and are rewritten before each use; the
// endpoint owns everything else it holds.
unsafe impl Send for UdpEndpoint {}

impl MmsgScratch {
    fn new(n: usize) -> MmsgScratch {
        // SAFETY: mmsghdr, iovec and sockaddr_in are plain data; zero is valid for each.
        unsafe {
            MmsgScratch {
                hdrs: vec![std::mem::zeroed(); n],
                iovs: vec![std::mem::zeroed(); n],
                addrs: vec![std::mem::zeroed(); n],
                cmsgs: vec![[0; CMSG_WORDS]; n],
            }
        }
    }
}

/// The SCM_TIMESTAMPNS time stamp in `hdr`'s control messages, mapped from
/// CLOCK_REALTIME (what the kernel stamps) to CLOCK_MONOTONIC by the offset
/// between the two clocks now (`real_minus_mono`); `None` when there is none.
fn kernel_stamp(hdr: &libc::msghdr, real_minus_mono: i128) -> Option<u64> {
    // SAFETY: hdr describes a control buffer the kernel filled in this call
    // (msg_controllen is what it wrote); CMSG_* walk only inside it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                let real = ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
                return u64::try_from(real - real_minus_mono).ok();
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    None
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, in ns, now.
fn real_minus_mono() -> i128 {
    let read = |clock| {
        // SAFETY: ts is a valid timespec to fill.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
    };
    read(libc::CLOCK_REALTIME) - read(libc::CLOCK_MONOTONIC)
}

fn sockaddr_in(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
        sin_zero: [0; 8],
    }
}

fn from_sockaddr_in(a: &libc::sockaddr_in) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)), u16::from_be(a.sin_port))
}

fn setsockopt_int(sock: &UdpSocket, level: i32, name: i32, value: i32) -> std::io::Result<()> {
    // SAFETY: an int option of the right size on a socket we own.
    let r = unsafe { libc::setsockopt(sock.as_raw_fd(), level, name, (&value as *const i32).cast(), 4) };
    if r == 0 {
        Ok(())
    } else {
        Err(last_os_error())
    }
}

fn open(spec: &EndpointSpec) -> Result<Box<dyn Endpoint>> {
    let buf_size = |key: &str| -> Result<Option<i32>> {
        spec.extra
            .get(key)
            .map(|v| {
                v.parse::<i32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| Error::BadSpec { spec: spec.to_string(), why: format!("`{key}` takes a positive number of bytes, not `{v}`") })
            })
            .transpose()
    };
    let (rcvbuf, sndbuf) = (buf_size("rcvbuf")?, buf_size("sndbuf")?);
    if let Some(group) = spec.addr.filter(|a| a.is_multicast()) {
        return open_group(spec, group, rcvbuf);
    }
    let (addr, dev) = match &spec.iface {
        Some(iface) => {
            let dev = NetDev::lookup(iface)?;
            dev.require_up()?;
            (dev.pick_ipv4(spec.addr)?, Some(dev))
        }
        None => (spec.addr.unwrap_or(Ipv4Addr::UNSPECIFIED), None),
    };
    let sock =
        UdpSocket::bind(SocketAddrV4::new(addr, spec.port)).map_err(|e| Error::os(format!("binding UDP {addr}:{}", spec.port), e, "CAP_NET_BIND_SERVICE"))?;
    sock.set_nonblocking(true).map_err(|e| Error::io("making the UDP socket non-blocking", e))?;
    let local = match sock.local_addr().map_err(|e| Error::io("reading the bound address", e))? {
        std::net::SocketAddr::V4(a) => a,
        std::net::SocketAddr::V6(_) => unreachable!("bound to an IPv4 address"),
    };
    let batch = (spec.key("batch", 64, keys::batch)? as usize).clamp(1, MAX_BATCH);
    let rx_stamp = spec.rx_stamp(&[RxStamp::Kernel])?;
    let kernel_stamp = rx_stamp == RxStamp::Kernel;
    if kernel_stamp {
        setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).map_err(|e| Error::io("asking for receive time stamps (SO_TIMESTAMPNS)", e))?;
    }
    let mut caps = Capabilities { datapath: "udp", max_batch: batch, rx_stamp, ..Default::default() };
    for (what, opt, forced, size) in [("rcvbuf", libc::SO_RCVBUF, libc::SO_RCVBUFFORCE, rcvbuf), ("sndbuf", libc::SO_SNDBUF, libc::SO_SNDBUFFORCE, sndbuf)] {
        if let Some(n) = size {
            // The FORCE variants (CAP_NET_ADMIN) ignore the rmem_max/wmem_max caps.
            setsockopt_int(&sock, libc::SOL_SOCKET, forced, n)
                .or_else(|_| setsockopt_int(&sock, libc::SOL_SOCKET, opt, n))
                .map_err(|e| Error::io(format!("setting {what}={n} on the UDP socket"), e))?;
        }
    }
    if let Some(dev) = &dev {
        // SAFETY: the option value is the interface name, with its length.
        let r = unsafe { libc::setsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_BINDTODEVICE, dev.name.as_ptr().cast(), dev.name.len() as u32) };
        if r != 0 {
            return Err(Error::os(format!("binding the UDP socket to `{}`", dev.name), last_os_error(), "CAP_NET_RAW"));
        }
        caps.iface = Some(dev.name.clone());
        caps.max_payload = detpath_wire::max_payload_for_mtu(dev.mtu as usize);
    } else {
        caps.max_payload = detpath_wire::MAX_UDP_PAYLOAD;
    }
    // The kernel fragments what does not fit one frame.
    caps.max_datagram = detpath_wire::MAX_UDP_PAYLOAD;
    if spec.key("busy_poll", true, |v| keys::boolean("busy_poll", v))? {
        match setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_BUSY_POLL, BUSY_POLL_US) {
            Ok(()) => caps.busy_poll = true,
            Err(e) => caps.notes.push(format!("SO_BUSY_POLL refused ({e}); blocking reads sleep at once")),
        }
    }
    Ok(Box::new(UdpEndpoint { sock, local, caps, counters: Counters::default(), mmsg: MmsgScratch::new(batch), kernel_stamp }))
}

// ---- Multicast group endpoints ----
//
// `udp://<iface>?addr=<group>&port=N`: the address is an IPv4 multicast
// group, so the endpoint is that group's receiver on the interface (RTPS
// discovery's 239.255.0.1:7400+250·domain). It is a socket of its own, not a
// key on a unicast endpoint: the group's port differs from every
// participant's unicast port, and all the participants of a host share it
// (SO_REUSEADDR) where each owns its unicast port. Bound to the group
// address, it gets the group's datagrams only; what it sends goes out of the
// interface (IP_MULTICAST_IF), so the group is reachable without a route.

/// `struct ip_mreqn` for IP_ADD_MEMBERSHIP / IP_MULTICAST_IF.
fn mreqn(group: Ipv4Addr, local: Ipv4Addr, ifindex: u32) -> libc::ip_mreqn {
    libc::ip_mreqn {
        imr_multiaddr: libc::in_addr { s_addr: u32::from(group).to_be() },
        imr_address: libc::in_addr { s_addr: u32::from(local).to_be() },
        imr_ifindex: ifindex as i32,
    }
}

fn setsockopt_mreqn(sock: &UdpSocket, name: i32, m: &libc::ip_mreqn) -> std::io::Result<()> {
    // SAFETY: an ip_mreqn option of its own size on a socket we own.
    let r = unsafe {
        libc::setsockopt(sock.as_raw_fd(), libc::IPPROTO_IP, name, (m as *const libc::ip_mreqn).cast(), std::mem::size_of::<libc::ip_mreqn>() as u32)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(last_os_error())
    }
}

/// Opens the receiver of multicast `group` on the spec's interface (see above).
fn open_group(spec: &EndpointSpec, group: Ipv4Addr, rcvbuf: Option<i32>) -> Result<Box<dyn Endpoint>> {
    let Some(iface) = &spec.iface else {
        return Err(Error::BadSpec {
            spec: spec.to_string(),
            why: format!("multicast group {group} needs the interface to join it on: udp://<iface>?addr={group}&port=N"),
        });
    };
    let dev = NetDev::lookup(iface)?;
    dev.require_up()?;
    let local_ip = dev.pick_ipv4(None)?;
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket(2); the descriptor is owned by the UdpSocket below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(Error::io("creating a UDP socket", last_os_error()));
    }
    // SAFETY: fd is a fresh socket nobody else owns.
    let sock = unsafe { UdpSocket::from_raw_fd(fd) };
    // Every participant on this host binds the group's port.
    setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1).map_err(|e| Error::io("setting SO_REUSEADDR", e))?;
    let at = sockaddr_in(SocketAddrV4::new(group, spec.port));
    // SAFETY: a sockaddr_in of its own size.
    let r = unsafe { libc::bind(fd, (&at as *const libc::sockaddr_in).cast(), std::mem::size_of::<libc::sockaddr_in>() as u32) };
    if r != 0 {
        return Err(Error::os(format!("binding UDP {group}:{}", spec.port), last_os_error(), "CAP_NET_BIND_SERVICE"));
    }
    let m = mreqn(group, local_ip, dev.ifindex);
    setsockopt_mreqn(&sock, libc::IP_ADD_MEMBERSHIP, &m).map_err(|e| Error::io(format!("joining {group} on {}", dev.name), e))?;
    setsockopt_mreqn(&sock, libc::IP_MULTICAST_IF, &m).map_err(|e| Error::io(format!("sending multicast out of {}", dev.name), e))?;
    if let Some(n) = rcvbuf {
        setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, n)
            .or_else(|_| setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_RCVBUF, n))
            .map_err(|e| Error::io(format!("setting rcvbuf={n} on the UDP socket"), e))?;
    }
    let batch = (spec.key("batch", 64, keys::batch)? as usize).clamp(1, MAX_BATCH);
    let caps = Capabilities {
        datapath: "udp",
        max_batch: batch,
        iface: Some(dev.name.clone()),
        max_payload: detpath_wire::max_payload_for_mtu(dev.mtu as usize),
        notes: vec![format!("multicast group {group}:{} joined on {} ({local_ip})", spec.port, dev.name)],
        ..Default::default()
    };
    // Discovery traffic: receive times as polled, no kernel time stamps.
    Ok(Box::new(UdpEndpoint {
        sock,
        local: SocketAddrV4::new(group, spec.port),
        caps,
        counters: Counters::default(),
        mmsg: MmsgScratch::new(batch),
        kernel_stamp: false,
    }))
}

impl UdpEndpoint {
    /// One non-blocking recvmsg (with the kernel's time stamp under
    /// `rx_stamp=kernel`). `Ok(None)` on EAGAIN.
    fn try_recv(&mut self, buf: &mut [u8]) -> Result<Option<RxMeta>> {
        let m = &mut self.mmsg;
        m.iovs[0] = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let hdr = &mut m.hdrs[0].msg_hdr;
        // SAFETY: msghdr is plain data; zero is valid.
        *hdr = unsafe { std::mem::zeroed() };
        hdr.msg_name = (&mut m.addrs[0] as *mut libc::sockaddr_in).cast();
        hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
        hdr.msg_iov = &mut m.iovs[0];
        hdr.msg_iovlen = 1;
        if self.kernel_stamp {
            hdr.msg_control = m.cmsgs[0].as_mut_ptr().cast();
            hdr.msg_controllen = std::mem::size_of::<[u64; CMSG_WORDS]>();
        }
        // SAFETY: hdr points at live buffers: buf (writable for its length), an address and the control space.
        let n = unsafe { libc::recvmsg(self.sock.as_raw_fd(), hdr, libc::MSG_DONTWAIT | libc::MSG_TRUNC) };
        if n < 0 {
            let e = last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                _ => Err(Error::io("receiving on the UDP socket", e)),
            };
        }
        let now = monotonic_ns();
        let rx_ns = if self.kernel_stamp { kernel_stamp(&self.mmsg.hdrs[0].msg_hdr, real_minus_mono()).unwrap_or(now) } else { now };
        let full = n as usize;
        let len = full.min(buf.len());
        self.counters.rx_packets += 1;
        self.counters.rx_bytes += len as u64;
        self.counters.rx_truncated += (full > len) as u64;
        Ok(Some(RxMeta { len, truncated: full > len, peer: from_sockaddr_in(&self.mmsg.addrs[0]), rx_ns }))
    }

    /// One non-blocking recvmmsg into the batch's free slots; 0 on EAGAIN.
    fn try_recv_batch(&mut self, batch: &mut RxBatch) -> Result<usize> {
        let (area, slot) = batch.free_area();
        let n = (area.len() / slot.max(1)).min(self.mmsg.hdrs.len());
        if n == 0 {
            return Ok(0);
        }
        let m = &mut self.mmsg;
        for i in 0..n {
            m.iovs[i] = libc::iovec { iov_base: area[i * slot..].as_mut_ptr().cast(), iov_len: slot };
            // SAFETY: msghdr is plain data; zero is valid.
            m.hdrs[i].msg_hdr = unsafe { std::mem::zeroed() };
            m.hdrs[i].msg_hdr.msg_name = (&mut m.addrs[i] as *mut libc::sockaddr_in).cast();
            m.hdrs[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
            m.hdrs[i].msg_hdr.msg_iov = &mut m.iovs[i];
            m.hdrs[i].msg_hdr.msg_iovlen = 1;
            if self.kernel_stamp {
                m.hdrs[i].msg_hdr.msg_control = m.cmsgs[i].as_mut_ptr().cast();
                m.hdrs[i].msg_hdr.msg_controllen = std::mem::size_of::<[u64; CMSG_WORDS]>();
            }
            m.hdrs[i].msg_len = 0;
        }
        // SAFETY: n headers, each pointing at a live iovec (into `area`, which
        // the batch lends for this call) and a live sockaddr_in.
        let got = unsafe { libc::recvmmsg(self.sock.as_raw_fd(), m.hdrs.as_mut_ptr(), n as u32, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
        if got < 0 {
            let e = last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
                _ => Err(Error::io("receiving a batch on the UDP socket", e)),
            };
        }
        let polled_ns = monotonic_ns();
        let offset = if self.kernel_stamp { real_minus_mono() } else { 0 };
        for i in 0..got as usize {
            let h = &self.mmsg.hdrs[i];
            let rx_ns = if self.kernel_stamp { kernel_stamp(&h.msg_hdr, offset).unwrap_or(polled_ns) } else { polled_ns };
            let len = (h.msg_len as usize).min(slot);
            let truncated = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            self.counters.rx_packets += 1;
            self.counters.rx_bytes += len as u64;
            self.counters.rx_truncated += truncated as u64;
            batch.commit(RxMeta { len, truncated, peer: from_sockaddr_in(&self.mmsg.addrs[i]), rx_ns });
        }
        Ok(got as usize)
    }

    /// The kernel's drop count for this socket (SO_MEMINFO), 0 if unreadable.
    fn kernel_drops(&self) -> u64 {
        let mut info = [0u32; SK_MEMINFO_VARS];
        let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
        // SAFETY: info/len describe a writable u32 array of the size the kernel fills.
        let r = unsafe { libc::getsockopt(self.sock.as_raw_fd(), libc::SOL_SOCKET, SO_MEMINFO, info.as_mut_ptr().cast(), &mut len) };
        if r == 0 && len as usize > SK_MEMINFO_DROPS * 4 {
            info[SK_MEMINFO_DROPS] as u64
        } else {
            0
        }
    }
}

/// Sends one datagram on a kernel UDP socket, counting it; a full send
/// buffer is retried (the kernel drains it shortly). Shared with xdppoll,
/// whose transmit side is a UDP socket too. `tos` is the IPv4 TOS byte (a
/// DSCP << 2): 0 sends as the socket does; any other value goes as an `IP_TOS` control message of
/// this one `sendmsg` (the kernel writes it into this datagram's header
/// only: no socket option to set and reset between two writers' datagrams).
pub(crate) fn send_datagram(sock: &UdpSocket, payload: &[u8], peer: SocketAddrV4, tos: u8, counters: &mut Counters) -> Result<()> {
    loop {
        let sent = if tos == 0 { sock.send_to(payload, peer) } else { sendmsg_tos(sock.as_raw_fd(), payload, peer, tos) };
        match sent {
            Ok(_) => {
                counters.tx_packets += 1;
                counters.tx_bytes += payload.len() as u64;
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                counters.tx_ring_full += 1;
                std::hint::spin_loop();
            }
            Err(e) => {
                // By cause: no route (ENETUNREACH/EHOSTUNREACH), buffer (ENOBUFS), other.
                let e = Error::io(format!("sending to {peer}"), e);
                counters.count_tx_failure(&e);
                return Err(e);
            }
        }
    }
}

/// One `sendmsg` of `payload` to `peer` with an `IP_TOS` control message.
fn sendmsg_tos(fd: std::os::fd::RawFd, payload: &[u8], peer: SocketAddrV4, tos: u8) -> std::io::Result<usize> {
    let mut addr = sockaddr_in(peer);
    let mut iov = libc::iovec { iov_base: payload.as_ptr() as *mut libc::c_void, iov_len: payload.len() };
    // Room for one cmsghdr carrying an int, aligned as the kernel reads it.
    #[repr(C, align(8))]
    struct Control([u8; 32]);
    let mut control = Control([0; 32]);
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;
    debug_assert!(space <= control.0.len());
    // SAFETY: msghdr is plain data; zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut addr as *mut libc::sockaddr_in).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: msg points at `control`, which has room for one header and an
    // int (checked above); CMSG_FIRSTHDR/CMSG_DATA stay inside it.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::IPPROTO_IP;
        (*c).cmsg_type = libc::IP_TOS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), tos as libc::c_int);
    }
    // SAFETY: every pointer in msg refers to a live local of this function.
    let r = unsafe { libc::sendmsg(fd, &msg, 0) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

impl Endpoint for UdpEndpoint {
    fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn counters(&self) -> Counters {
        Counters { rx_kernel_dropped: self.kernel_drops(), ..self.counters }
    }

    fn send_batch(&mut self, batch: &[TxDatagram<'_>]) -> Result<usize> {
        let mut sent = 0;
        while sent < batch.len() {
            let chunk = &batch[sent..batch.len().min(sent + self.mmsg.hdrs.len())];
            let m = &mut self.mmsg;
            for (i, d) in chunk.iter().enumerate() {
                m.addrs[i] = sockaddr_in(d.peer);
                m.iovs[i] = libc::iovec { iov_base: d.payload.as_ptr() as *mut libc::c_void, iov_len: d.payload.len() };
                // SAFETY: msghdr is plain data; zero is valid.
                m.hdrs[i].msg_hdr = unsafe { std::mem::zeroed() };
                m.hdrs[i].msg_hdr.msg_name = (&mut m.addrs[i] as *mut libc::sockaddr_in).cast();
                m.hdrs[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
                m.hdrs[i].msg_hdr.msg_iov = &mut m.iovs[i];
                m.hdrs[i].msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: chunk.len() headers pointing at live iovecs (the caller's
            // payloads, only read) and live addresses.
            let r = unsafe { libc::sendmmsg(self.sock.as_raw_fd(), m.hdrs.as_mut_ptr(), chunk.len() as u32, 0) };
            if r < 0 {
                let e = last_os_error();
                match e.raw_os_error() {
                    // A full socket send buffer: the kernel drains it shortly.
                    Some(libc::EAGAIN) | Some(libc::EINTR) => {
                        self.counters.tx_ring_full += 1;
                        std::hint::spin_loop();
                        continue;
                    }
                    _ => {
                        let e = Error::io(format!("sending a batch to {}", chunk[0].peer), e);
                        self.counters.count_tx_failure(&e);
                        return if sent == 0 { Err(e) } else { Ok(sent) };
                    }
                }
            }
            for d in &chunk[..r as usize] {
                self.counters.tx_packets += 1;
                self.counters.tx_bytes += d.payload.len() as u64;
            }
            sent += r as usize;
        }
        Ok(sent)
    }

    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> Result<usize> {
        batch.clear();
        let wait = Wait::new(mode);
        loop {
            let n = self.try_recv_batch(batch)?;
            if n > 0 {
                return Ok(n);
            }
            match wait.after_empty() {
                Step::GiveUp => return Ok(0),
                Step::Spin => std::hint::spin_loop(),
                Step::Sleep(left) => wait_readable(self.sock.as_raw_fd(), left, "the UDP socket")?,
            }
        }
    }

    fn send_marked(&mut self, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> Result<()> {
        check_no_class(self.caps.datapath, mark)?;
        send_datagram(&self.sock, payload, peer, mark.tos(), &mut self.counters)
    }

    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        let wait = Wait::new(mode);
        loop {
            if let Some(m) = self.try_recv(buf)? {
                return Ok(Some(m));
            }
            match wait.after_empty() {
                Step::GiveUp => return Ok(None),
                Step::Spin => std::hint::spin_loop(),
                Step::Sleep(left) => wait_readable(self.sock.as_raw_fd(), left, "the UDP socket")?,
            }
        }
    }
}
