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

impl PacketSocket {
    /// Opens a socket on `iface` in the calling thread's namespace.
    pub fn open(iface: &str) -> Result<PacketSocket> {
        let ifindex = crate::netdev::ifindex(iface)?;
        let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
        // SAFETY: plain socket(2); the result is checked.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto) };
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
            if sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            return Ok(Some(r as usize));
        }
    }
}
