//! AF_PACKET: raw frames in and out of one interface, below every protocol
//! (so a test can send what no socket would: bad checksums, truncated
//! headers, foreign encapsulations). Needs CAP_NET_RAW.

use crate::error::{Error, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A raw AF_PACKET socket bound to one interface: frames exactly as given,
/// for tests that inject malformed traffic and for traffic generators.
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: u32,
}

/// An AF_PACKET socket of `kind` (SOCK_RAW: whole frames; SOCK_DGRAM: the
/// kernel adds and strips the Ethernet header) for `protocol` (host order),
/// bound to `iface`; with its ifindex.
fn bound_socket(iface: &str, kind: i32, protocol: u16) -> Result<(OwnedFd, u32)> {
    let ifindex = crate::netdev::ifindex(iface)?;
    let proto = protocol.to_be() as i32;
    // SAFETY: plain socket(2); the result is checked.
    let fd = unsafe { libc::socket(libc::AF_PACKET, kind | libc::SOCK_CLOEXEC, proto) };
    if fd < 0 {
        return Err(Error::os(format!("AF_PACKET socket on {iface}"), std::io::Error::last_os_error(), "CAP_NET_RAW"));
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
    Ok((fd, ifindex))
}

impl PacketSocket {
    /// Opens a socket on `iface` in the calling thread's namespace.
    pub fn open(iface: &str) -> Result<PacketSocket> {
        let (fd, ifindex) = bound_socket(iface, libc::SOCK_RAW, libc::ETH_P_ALL as u16)?;
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
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r < 0 {
            return Err(Error::io("sending on AF_PACKET socket", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Receives one frame (incoming only), waiting at most `timeout`.
    pub fn recv(&self, buf: &mut [u8], timeout: std::time::Duration) -> Result<Option<usize>> {
        self.recv_where(buf, timeout, false)
    }

    /// Receives one frame this interface sent (a capture of what a program
    /// on this side put on the wire), waiting at most `timeout`.
    pub fn recv_sent(&self, buf: &mut [u8], timeout: std::time::Duration) -> Result<Option<usize>> {
        self.recv_where(buf, timeout, true)
    }

    fn recv_where(&self, buf: &mut [u8], timeout: std::time::Duration, sent: bool) -> Result<Option<usize>> {
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
            let r = unsafe {
                libc::recvfrom(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT, &mut sll as *mut _ as *mut libc::sockaddr, &mut sl)
            };
            if r < 0 {
                continue;
            }
            if (sll.sll_pkttype == libc::PACKET_OUTGOING) != sent {
                continue;
            }
            return Ok(Some(r as usize));
        }
    }
}

/// What one [`EtherSocket::recv`] delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EtherRecv {
    /// Payload bytes (after the Ethernet header) copied into the buffer.
    pub len: usize,
    /// True when the payload was longer than the buffer (the rest is lost).
    pub truncated: bool,
    /// The sender's MAC address.
    pub src: [u8; 6],
    /// The frame's EtherType.
    pub ethertype: u16,
    /// False for a frame to another host's unicast MAC (seen in promiscuous mode).
    pub for_us: bool,
}

/// An AF_PACKET datagram socket (SOCK_DGRAM: the kernel writes and strips
/// the Ethernet header) bound to one interface and one EtherType: the
/// layer-2 transport of CycloneDDS's `raweth` (EtherType = RTPS port).
/// Needs CAP_NET_RAW.
pub struct EtherSocket {
    fd: OwnedFd,
    ifindex: u32,
    ethertype: u16,
}

impl EtherSocket {
    /// Opens a socket on `iface` (calling thread's namespace) receiving frames
    /// of `ethertype` (at least 0x0600: smaller values are 802.3 lengths).
    pub fn open(iface: &str, ethertype: u16) -> Result<EtherSocket> {
        if ethertype < 0x0600 {
            return Err(Error::io(
                format!("EtherType {ethertype:#06x} on {iface}"),
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "EtherTypes below 0x0600 are 802.3 lengths; use a port of at least 1536"),
            ));
        }
        let (fd, ifindex) = bound_socket(iface, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK, ethertype)?;
        Ok(EtherSocket { fd, ifindex, ethertype })
    }

    /// Sets the socket's receive or send buffer (`SO_RCVBUF`/`SO_SNDBUF` in
    /// bytes; the FORCE variant first, which ignores rmem_max/wmem_max with
    /// CAP_NET_ADMIN).
    pub fn set_buffer(&self, receive: bool, bytes: i32) -> Result<()> {
        let (forced, plain, what) =
            if receive { (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, "SO_RCVBUF") } else { (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, "SO_SNDBUF") };
        for opt in [forced, plain] {
            // SAFETY: an int option of the right size on a socket we own.
            let r = unsafe { libc::setsockopt(self.fd.as_raw_fd(), libc::SOL_SOCKET, opt, (&bytes as *const i32).cast(), 4) };
            if r == 0 {
                return Ok(());
            }
        }
        Err(Error::io(format!("setting {what}={bytes} on the AF_PACKET socket"), std::io::Error::last_os_error()))
    }

    /// The EtherType it receives.
    pub fn ethertype(&self) -> u16 {
        self.ethertype
    }

    /// The descriptor, for poll(2).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }

    /// Sends `payload` in one frame to `dst` with `ethertype`; the kernel
    /// adds the Ethernet header with the interface's MAC as source.
    pub fn send(&self, payload: &[u8], dst: [u8; 6], ethertype: u16) -> Result<()> {
        // SAFETY: zeroed sockaddr_ll is valid; fields set below.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ethertype.to_be();
        sll.sll_ifindex = self.ifindex as i32;
        sll.sll_halen = 6;
        sll.sll_addr[..6].copy_from_slice(&dst);
        loop {
            // SAFETY: payload is a live buffer of payload.len() bytes; sll is valid.
            let r = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    payload.as_ptr().cast(),
                    payload.len(),
                    libc::MSG_NOSIGNAL,
                    &sll as *const _ as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                )
            };
            if r >= 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(Error::io("sending on AF_PACKET EtherType socket", e));
            }
        }
    }

    /// Takes one received frame without waiting (`Ok(None)`: nothing there).
    /// Frames this host sent are skipped.
    pub fn recv(&self, buf: &mut [u8]) -> Result<Option<EtherRecv>> {
        loop {
            // SAFETY: zeroed sockaddr_ll is a valid out-parameter.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut sl = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: buf is writable for buf.len() bytes; sll/sl are valid out-parameters.
            // MSG_TRUNC makes the kernel return the real length of a longer frame.
            let r = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                    &mut sll as *mut _ as *mut libc::sockaddr,
                    &mut sl,
                )
            };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::EAGAIN) => Ok(None),
                    Some(libc::EINTR) => continue,
                    _ => Err(Error::io("receiving on AF_PACKET EtherType socket", e)),
                };
            }
            if sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            let mut src = [0u8; 6];
            src.copy_from_slice(&sll.sll_addr[..6]);
            let full = r as usize;
            return Ok(Some(EtherRecv {
                len: full.min(buf.len()),
                truncated: full > buf.len(),
                src,
                ethertype: u16::from_be(sll.sll_protocol),
                for_us: sll.sll_pkttype != libc::PACKET_OTHERHOST,
            }));
        }
    }
}
