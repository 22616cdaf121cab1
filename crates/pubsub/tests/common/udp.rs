//! A UDP socket on 127.0.0.1 as a driver transport (loopback only: the
//! interop tests against ddsperf run over it).
// Compiled into each test crate that declares `common`; those on the
// in-memory network leave this transport unused.
#![allow(dead_code)]

use detpath_pubsub::driver::Transport;
use detpath_pubsub::wire::Addr;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

pub struct UdpTransport {
    pub sock: UdpSocket,
    pub addr: SocketAddrV4,
    epoch: Instant,
    pub send_errors: u64,
}

impl UdpTransport {
    /// Binds the metatraffic port of the first free participant index of `domain` on 127.0.0.1.
    pub fn bind_first_free(domain: u32) -> (UdpTransport, u32) {
        for idx in 0..10 {
            let port = detpath_pubsub::discovery::ports::metatraffic_unicast(domain, idx) as u16;
            let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
            if let Ok(sock) = UdpSocket::bind(addr) {
                sock.set_nonblocking(true).unwrap();
                return (UdpTransport { sock, addr, epoch: Instant::now(), send_errors: 0 }, idx);
            }
        }
        panic!("no free participant index in domain {domain}");
    }
}

impl Transport for UdpTransport {
    fn send(&mut self, dst: Addr, bytes: &[u8]) {
        let Some(dst) = dst.udp() else {
            self.send_errors += 1;
            return;
        };
        if self.sock.send_to(bytes, dst).is_err() {
            self.send_errors += 1;
        }
    }
    fn recv(&mut self, buf: &mut [u8], wait_ns: u64) -> Option<(usize, Addr, u64)> {
        let (n, src) = match self.sock.recv_from(buf) {
            Ok(x) => x,
            Err(_) if wait_ns > 0 => {
                // Wait with nanosecond precision (SO_RCVTIMEO rounds to jiffies).
                let ts = libc::timespec { tv_sec: (wait_ns / 1_000_000_000) as _, tv_nsec: (wait_ns % 1_000_000_000) as _ };
                let mut pfd = libc::pollfd { fd: self.sock.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                // SAFETY: one valid pollfd, a valid timespec, no signal mask.
                unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
                self.sock.recv_from(buf).ok()?
            }
            Err(_) => return None,
        };
        let SocketAddr::V4(src) = src else {
            return None;
        };
        Some((n, Addr::Udp(src), self.now_ns()))
    }
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64 + 1
    }
    fn local_addr(&self) -> Addr {
        Addr::Udp(self.addr)
    }
    fn max_datagram(&self) -> usize {
        1472
    }
}
