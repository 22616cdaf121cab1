//! The `udp` datapath: a kernel UDP socket, the baseline every paper compares
//! against, set up as a fair one: non-blocking, so busy-polling is a tight
//! `recvfrom(MSG_DONTWAIT)` loop; SO_BUSY_POLL so blocking reads spin in the
//! driver first; and bound to the interface when one is named.
//!
//! Spec: `udp://<addr>:<port>` or `udp://<iface>?port=N[&addr=A]`.

use crate::endpoint::{monotonic_ns, Capabilities, Counters, Datapath, Endpoint, RecvMode, RxMeta};
use crate::error::{last_os_error, Error, Result};
use crate::netdev::NetDev;
use crate::spec::EndpointSpec;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

pub static DATAPATH: Datapath = Datapath { name: "udp", summary: "kernel UDP socket (baseline)", open };

/// SO_BUSY_POLL value: microseconds a blocking read spins before sleeping.
const BUSY_POLL_US: i32 = 50;

pub struct UdpEndpoint {
    sock: UdpSocket,
    local: SocketAddrV4,
    caps: Capabilities,
    counters: Counters,
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
    spec.reject_unknown_extra(&[])?;
    let (addr, dev) = match &spec.iface {
        Some(iface) => {
            let dev = NetDev::lookup(iface)?;
            dev.require_up()?;
            (dev.pick_ipv4(spec.addr)?, Some(dev))
        }
        None => (spec.addr.unwrap_or(Ipv4Addr::UNSPECIFIED), None),
    };
    let sock = UdpSocket::bind(SocketAddrV4::new(addr, spec.port)).map_err(|e| Error::os(format!("binding UDP {addr}:{}", spec.port), e, "CAP_NET_BIND_SERVICE"))?;
    sock.set_nonblocking(true).map_err(|e| Error::io("making the UDP socket non-blocking", e))?;
    let local = match sock.local_addr().map_err(|e| Error::io("reading the bound address", e))? {
        std::net::SocketAddr::V4(a) => a,
        std::net::SocketAddr::V6(_) => unreachable!("bound to an IPv4 address"),
    };
    let mut caps = Capabilities { datapath: "udp", max_batch: 1, ..Default::default() };
    if let Some(dev) = &dev {
        // SAFETY: the option value is the interface name, with its length.
        let r = unsafe {
            libc::setsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_BINDTODEVICE, dev.name.as_ptr().cast(), dev.name.len() as u32)
        };
        if r != 0 {
            return Err(Error::os(format!("binding the UDP socket to `{}`", dev.name), last_os_error(), "CAP_NET_RAW"));
        }
        caps.iface = Some(dev.name.clone());
        caps.max_payload = detpath_wire::max_payload_for_mtu(dev.mtu as usize);
    } else {
        caps.max_payload = 65507;
    }
    if spec.busy_poll {
        match setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_BUSY_POLL, BUSY_POLL_US) {
            Ok(()) => caps.busy_poll = true,
            Err(e) => caps.notes.push(format!("SO_BUSY_POLL refused ({e}); blocking reads sleep at once")),
        }
    }
    Ok(Box::new(UdpEndpoint { sock, local, caps, counters: Counters::default() }))
}

impl UdpEndpoint {
    /// One non-blocking recvfrom. `Ok(None)` on EAGAIN.
    fn try_recv(&mut self, buf: &mut [u8]) -> Result<Option<RxMeta>> {
        // SAFETY: sockaddr_in is plain data; zero is a valid value.
        let mut from: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        let mut from_len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: buf is writable for its length; from/from_len describe a sockaddr_in.
        let n = unsafe {
            libc::recvfrom(
                self.sock.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                (&mut from as *mut libc::sockaddr_in).cast(),
                &mut from_len,
            )
        };
        if n < 0 {
            let e = last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                _ => Err(Error::io("receiving on the UDP socket", e)),
            };
        }
        let rx_ns = monotonic_ns();
        let full = n as usize;
        let len = full.min(buf.len());
        self.counters.rx_packets += 1;
        self.counters.rx_bytes += len as u64;
        if full > len {
            self.counters.rx_truncated += 1;
        }
        let peer = SocketAddrV4::new(Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)), u16::from_be(from.sin_port));
        Ok(Some(RxMeta { len, truncated: full > len, peer, rx_ns }))
    }

    fn wait_readable(&self, timeout_ms: i32) -> Result<bool> {
        let mut pfd = libc::pollfd { fd: self.sock.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if r < 0 {
            let e = last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(false);
            }
            return Err(Error::io("waiting on the UDP socket", e));
        }
        Ok(r > 0)
    }
}

/// Milliseconds left until `deadline` for poll(2), rounded up; -1 for none.
pub(crate) fn poll_timeout_ms(deadline: Option<Instant>) -> i32 {
    match deadline {
        None => -1,
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
        }
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
        self.counters
    }

    fn send_to(&mut self, payload: &[u8], peer: SocketAddrV4) -> Result<()> {
        loop {
            match self.sock.send_to(payload, peer) {
                Ok(_) => {
                    self.counters.tx_packets += 1;
                    self.counters.tx_bytes += payload.len() as u64;
                    return Ok(());
                }
                // A full socket send buffer: the kernel will drain it shortly.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.counters.tx_ring_full += 1;
                    std::hint::spin_loop();
                }
                Err(e) => {
                    self.counters.tx_errors += 1;
                    return Err(Error::io(format!("sending to {peer}"), e));
                }
            }
        }
    }

    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        match mode {
            RecvMode::NonBlocking => self.try_recv(buf),
            RecvMode::BusyPoll { timeout } => {
                let deadline = timeout.map(|t| Instant::now() + t);
                loop {
                    if let Some(m) = self.try_recv(buf)? {
                        return Ok(Some(m));
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(None);
                    }
                    std::hint::spin_loop();
                }
            }
            RecvMode::Blocking { timeout } => {
                let deadline = timeout.map(|t| Instant::now() + t);
                loop {
                    if let Some(m) = self.try_recv(buf)? {
                        return Ok(Some(m));
                    }
                    let ms = poll_timeout_ms(deadline);
                    if ms == 0 {
                        return Ok(None);
                    }
                    self.wait_readable(ms)?;
                }
            }
        }
    }
}
