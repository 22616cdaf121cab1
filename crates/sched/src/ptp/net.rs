//! The kernel UDP sockets a PTP port needs besides its detpath endpoint:
//! the PTP primary multicast group 224.0.1.129 on the event port (319),
//! and the general port (320), both joined on one interface, as `ptp4l -4`
//! opens them.
//!
//! Why kernel sockets: the detpath endpoint of the spec owns one unicast
//! address and port (its XDP filter matches exactly that), while ptp4l sends
//! Sync, Delay_Req and every general message to the group. What goes to the
//! group passes the XDP programs untouched (they match the unicast address
//! only), so a kernel socket joined to it sees it even while an AF_XDP
//! endpoint owns the port's unicast traffic.
//!
//! Both sockets ask for software time stamps with `SO_TIMESTAMPING`: receive
//! stamps from the kernel's receive path, and transmit stamps from the
//! driver's transmit path (read back from the socket's error queue), the
//! stamps ptp4l takes with `-S`. The stamps are CLOCK_REALTIME; this module
//! returns them as CLOCK_MONOTONIC like every detpath `rx_ns`.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd};

/// The PTP primary multicast group (annex D.3).
pub const PTP_GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 1, 129);
/// The event port: Sync and Delay_Req.
pub const EVENT_PORT: u16 = 319;
/// The general port: Announce, Follow_Up, Delay_Resp.
pub const GENERAL_PORT: u16 = 320;

/// Software receive and transmit time stamps, stamps only on the error queue.
const TS_FLAGS: i32 = (libc::SOF_TIMESTAMPING_TX_SOFTWARE
    | libc::SOF_TIMESTAMPING_RX_SOFTWARE
    | libc::SOF_TIMESTAMPING_SOFTWARE
    | libc::SOF_TIMESTAMPING_OPT_TSONLY
    | libc::SOF_TIMESTAMPING_OPT_ID) as i32;

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, ns, now.
pub fn real_minus_mono() -> i128 {
    realtime_ns() - detpath::monotonic_ns() as i128
}

/// CLOCK_REALTIME, ns.
pub(crate) fn realtime_ns() -> i128 {
    // SAFETY: ts is a valid timespec to fill.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: as above; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
}

fn setsockopt<T>(sock: &UdpSocket, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a live T and its size is passed with it.
    let r = unsafe { libc::setsockopt(sock.as_raw_fd(), level, name, (value as *const T).cast(), std::mem::size_of::<T>() as u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn sockaddr_in(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
        sin_zero: [0; 8],
    }
}

/// What a PTP socket got.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// Bytes in the caller's buffer.
    pub len: usize,
    /// The sender.
    pub peer: SocketAddrV4,
    /// CLOCK_MONOTONIC ns of the kernel's receive stamp (the read time if the kernel gave none).
    pub rx_ns: u64,
    /// True when the kernel stamped it.
    pub stamped: bool,
}

/// One PTP port's kernel socket on the group (see the module comment).
pub struct PtpSocket {
    sock: UdpSocket,
    port: u16,
    next_id: u32,
}

impl PtpSocket {
    /// Opens port `port` on `iface` (address `local`, index `ifindex`): bound to
    /// the group (event port: unicast event traffic belongs to the detpath
    /// endpoint) or to any address (general port: unicast and group), joined
    /// to the group, sending to it out of `iface`, not looping back.
    pub fn open(iface: &str, ifindex: u32, local: Ipv4Addr, port: u16, bind_group: bool) -> io::Result<PtpSocket> {
        // SAFETY: plain socket(2); the descriptor is owned by the UdpSocket below.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh socket nobody else owns.
        let sock = unsafe { UdpSocket::from_raw_fd(fd) };
        let ctx = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
        setsockopt(&sock, libc::SOL_SOCKET, libc::SO_REUSEADDR, &1i32).map_err(|e| ctx("SO_REUSEADDR", e))?;
        // SAFETY: the option value is the interface name with its length.
        let r = unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_BINDTODEVICE, iface.as_ptr().cast(), iface.len() as u32) };
        if r != 0 {
            return Err(ctx(&format!("binding to device {iface} (needs CAP_NET_RAW)"), io::Error::last_os_error()));
        }
        let at = sockaddr_in(SocketAddrV4::new(if bind_group { PTP_GROUP } else { Ipv4Addr::UNSPECIFIED }, port));
        // SAFETY: a sockaddr_in of its own size.
        let r = unsafe { libc::bind(fd, (&at as *const libc::sockaddr_in).cast(), std::mem::size_of::<libc::sockaddr_in>() as u32) };
        if r != 0 {
            return Err(ctx(
                &format!("binding UDP port {port} (needs CAP_NET_BIND_SERVICE; is ptp4l already running in this namespace?)"),
                io::Error::last_os_error(),
            ));
        }
        let m = libc::ip_mreqn {
            imr_multiaddr: libc::in_addr { s_addr: u32::from(PTP_GROUP).to_be() },
            imr_address: libc::in_addr { s_addr: u32::from(local).to_be() },
            imr_ifindex: ifindex as i32,
        };
        setsockopt(&sock, libc::IPPROTO_IP, libc::IP_ADD_MEMBERSHIP, &m).map_err(|e| ctx(&format!("joining {PTP_GROUP} on {iface}"), e))?;
        setsockopt(&sock, libc::IPPROTO_IP, libc::IP_MULTICAST_IF, &m).map_err(|e| ctx("IP_MULTICAST_IF", e))?;
        setsockopt(&sock, libc::IPPROTO_IP, libc::IP_MULTICAST_LOOP, &0i32).map_err(|e| ctx("IP_MULTICAST_LOOP", e))?;
        setsockopt(&sock, libc::IPPROTO_IP, libc::IP_MULTICAST_TTL, &1i32).map_err(|e| ctx("IP_MULTICAST_TTL", e))?;
        setsockopt(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPING, &TS_FLAGS).map_err(|e| ctx("SO_TIMESTAMPING (software)", e))?;
        Ok(PtpSocket { sock, port, next_id: 0 })
    }

    /// The port it is bound to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// One non-blocking receive; `Ok(None)` when nothing is waiting.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        let mut addr: libc::sockaddr_in = sockaddr_in(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let mut control = [0u64; 32];
        // SAFETY: msghdr is plain data; zero is valid.
        let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
        hdr.msg_name = (&mut addr as *mut libc::sockaddr_in).cast();
        hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
        hdr.msg_iov = &mut iov;
        hdr.msg_iovlen = 1;
        hdr.msg_control = control.as_mut_ptr().cast();
        hdr.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: hdr points at live buffers: buf, the address and the control space.
        let n = unsafe { libc::recvmsg(self.sock.as_raw_fd(), &mut hdr, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                _ => Err(e),
            };
        }
        let now = detpath::monotonic_ns();
        let stamp = software_stamp(&hdr).and_then(|real| u64::try_from(real - real_minus_mono()).ok());
        let peer = SocketAddrV4::new(Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr)), u16::from_be(addr.sin_port));
        Ok(Some(Received { len: (n as usize).min(buf.len()), peer, rx_ns: stamp.unwrap_or(now), stamped: stamp.is_some() }))
    }

    /// Sends `payload` to `to` and returns its transmit time (CLOCK_MONOTONIC
    /// ns): the kernel's software transmit stamp when it comes back within
    /// 2 ms, else the time read just before the send.
    pub(crate) fn send_stamped(&mut self, payload: &[u8], to: SocketAddrV4) -> io::Result<(u64, bool)> {
        // Stamps of earlier sends that came back late would be taken for this one.
        self.drain_errqueue();
        let before = detpath::monotonic_ns();
        self.sock.send_to(payload, to)?;
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let deadline = before + 2_000_000;
        loop {
            if let Some((real, got_id)) = self.read_errqueue() {
                if got_id == id {
                    if let Ok(mono) = u64::try_from(real - real_minus_mono()) {
                        return Ok((mono, true));
                    }
                }
                continue;
            }
            if detpath::monotonic_ns() > deadline {
                return Ok((before, false));
            }
            std::thread::yield_now();
        }
    }

    /// Sends without waiting for a stamp (general messages).
    pub fn send(&mut self, payload: &[u8], to: SocketAddrV4) -> io::Result<()> {
        self.sock.send_to(payload, to)?;
        self.next_id = self.next_id.wrapping_add(1);
        Ok(())
    }

    fn drain_errqueue(&mut self) {
        while self.read_errqueue().is_some() {}
    }

    /// One transmit stamp from the error queue: (CLOCK_REALTIME ns, OPT_ID counter).
    fn read_errqueue(&mut self) -> Option<(i128, u32)> {
        let mut control = [0u64; 64];
        let mut data = [0u8; 64];
        let mut iov = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: data.len() };
        // SAFETY: msghdr is plain data; zero is valid.
        let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
        hdr.msg_iov = &mut iov;
        hdr.msg_iovlen = 1;
        hdr.msg_control = control.as_mut_ptr().cast();
        hdr.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: hdr points at live buffers.
        let n = unsafe { libc::recvmsg(self.sock.as_raw_fd(), &mut hdr, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if n < 0 {
            return None;
        }
        let real = software_stamp(&hdr)?;
        Some((real, errqueue_id(&hdr).unwrap_or(u32::MAX)))
    }
}

/// The software stamp (first of the three `scm_timestamping` times) in a
/// received message's control data, CLOCK_REALTIME ns.
fn software_stamp(hdr: &libc::msghdr) -> Option<i128> {
    // SAFETY: hdr describes a control buffer the kernel filled in this call
    // (msg_controllen is what it wrote); CMSG_* walk only inside it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPING {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                if ts.tv_sec != 0 || ts.tv_nsec != 0 {
                    return Some(ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128);
                }
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    None
}

/// The OPT_ID counter of an error-queue message (`ee_data` of its `sock_extended_err`).
fn errqueue_id(hdr: &libc::msghdr) -> Option<u32> {
    // SAFETY: as in software_stamp; the IP_RECVERR payload is a sock_extended_err.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_IP && (*c).cmsg_type == libc::IP_RECVERR {
                let e = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::sock_extended_err);
                if e.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING {
                    return Some(e.ee_data);
                }
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    None
}
