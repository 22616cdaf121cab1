//! Destination MAC addresses for the datapaths that build their own frames,
//! taken from the kernel's neighbour table so detpath agrees with the host.
//!
//! A missing entry is resolved by the kernel: a zero-length UDP datagram to
//! the peer's discard port makes it send an ARP request, and the table is
//! polled until the reply is in. Sockets are created in [`Neighbours::new`],
//! so lookups keep answering for the namespace the endpoint was opened in,
//! whatever thread calls them later.

use crate::error::{last_os_error, Error, Result};
use crate::netdev::NetDev;
use detpath_wire::MacAddr;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

const RTM_GETNEIGH: u16 = 30;
const RTM_NEWNEIGH: u16 = 28;
const NLMSG_DONE: u16 = 3;
const NLMSG_ERROR: u16 = 2;
const NDA_DST: u16 = 1;
const NDA_LLADDR: u16 = 2;
// NUD states that carry a usable link-layer address.
const NUD_USABLE: u16 = 0x02 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80; // REACHABLE STALE DELAY PROBE NOARP PERMANENT

/// How long [`Neighbours::resolve`] waits for an ARP reply.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_millis(1000);

/// Neighbour lookups for one interface, with a cache.
pub struct Neighbours {
    iface: String,
    ifindex: u32,
    subnets: Vec<(Ipv4Addr, u8)>,
    netlink: OwnedFd,
    trigger: UdpSocket,
    cache: HashMap<Ipv4Addr, MacAddr>,
    seq: u32,
}

fn on_link(subnets: &[(Ipv4Addr, u8)], ip: Ipv4Addr) -> bool {
    subnets.iter().any(|(a, p)| {
        let mask = if *p == 0 { 0 } else { u32::MAX << (32 - *p as u32) };
        u32::from(*a) & mask == u32::from(ip) & mask
    })
}

impl Neighbours {
    /// Opens the netlink socket in the calling thread's namespace.
    pub fn new(dev: &NetDev) -> Result<Neighbours> {
        // SAFETY: plain socket(2); checked below.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
        if fd < 0 {
            return Err(Error::io("netlink socket for neighbour lookups", last_os_error()));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let netlink = unsafe { OwnedFd::from_raw_fd(fd) };
        let tv = libc::timeval { tv_sec: 1, tv_usec: 0 };
        // SAFETY: valid option value of the right size.
        unsafe {
            libc::setsockopt(netlink.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVTIMEO, (&tv as *const libc::timeval).cast(), std::mem::size_of::<libc::timeval>() as u32)
        };
        let trigger = UdpSocket::bind("0.0.0.0:0").map_err(|e| Error::io("UDP socket for ARP triggers", e))?;
        Ok(Neighbours {
            iface: dev.name.clone(),
            ifindex: dev.ifindex,
            subnets: dev.ipv4.clone(),
            netlink,
            trigger,
            cache: HashMap::new(),
            seq: 1,
        })
    }

    /// Adds a static entry (used instead of the kernel's table).
    pub fn insert(&mut self, ip: Ipv4Addr, mac: MacAddr) {
        self.cache.insert(ip, mac);
    }

    /// Forgets a cached entry (e.g. after the peer changed).
    pub fn forget(&mut self, ip: Ipv4Addr) {
        self.cache.remove(&ip);
    }

    /// The MAC for `ip`: cached, from the kernel table, or resolved by ARP.
    pub fn resolve(&mut self, ip: Ipv4Addr) -> Result<MacAddr> {
        if let Some(m) = self.cache.get(&ip) {
            return Ok(*m);
        }
        if ip.is_broadcast() {
            return Ok(MacAddr::BROADCAST);
        }
        if !on_link(&self.subnets, ip) {
            return Err(Error::Unsupported {
                datapath: "frame-building",
                what: format!("sending to {ip}, which is not on a subnet of `{}` (detpath sends on-link only; no gateway routing)", self.iface),
            });
        }
        let deadline = Instant::now() + RESOLVE_TIMEOUT;
        let mut triggered = false;
        loop {
            if let Some(mac) = self.lookup(ip)? {
                self.cache.insert(ip, mac);
                return Ok(mac);
            }
            if Instant::now() >= deadline {
                return Err(Error::NeighbourUnresolved { peer: ip.to_string(), iface: self.iface.clone(), ms: RESOLVE_TIMEOUT.as_millis() as u64 });
            }
            if !triggered {
                // The kernel resolves the address to send this; the datagram
                // itself goes to the discard port and is of no consequence.
                let _ = self.trigger.send_to(&[], SocketAddrV4::new(ip, 9));
                triggered = true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// One dump of the kernel's IPv4 neighbour table, looking for `ip` on our interface.
    fn lookup(&mut self, ip: Ipv4Addr) -> Result<Option<MacAddr>> {
        self.seq = self.seq.wrapping_add(1);
        let mut req = [0u8; 16 + 12];
        req[0..4].copy_from_slice(&(28u32).to_ne_bytes());
        req[4..6].copy_from_slice(&RTM_GETNEIGH.to_ne_bytes());
        req[6..8].copy_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
        req[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        req[16] = libc::AF_INET as u8;
        // SAFETY: req is a complete netlink request; the socket is ours.
        if unsafe { libc::send(self.netlink.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) } < 0 {
            return Err(Error::io("asking the kernel for its neighbour table", last_os_error()));
        }
        let mut buf = vec![0u8; 32 * 1024];
        let mut found = None;
        loop {
            // SAFETY: buf is writable for its length.
            let n = unsafe { libc::recv(self.netlink.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(Error::io("reading the kernel's neighbour table", last_os_error()));
            }
            match parse_neigh_dump(&buf[..n as usize], self.seq, self.ifindex, ip) {
                DumpPart::More(m) => found = found.or(m),
                DumpPart::Done(m) => return Ok(found.or(m)),
            }
        }
    }
}

enum DumpPart {
    More(Option<MacAddr>),
    Done(Option<MacAddr>),
}

/// Parses one netlink datagram of an RTM_GETNEIGH dump.
fn parse_neigh_dump(mut b: &[u8], seq: u32, ifindex: u32, want: Ipv4Addr) -> DumpPart {
    let mut found = None;
    while b.len() >= 16 {
        let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let ty = u16::from_ne_bytes([b[4], b[5]]);
        let mseq = u32::from_ne_bytes([b[8], b[9], b[10], b[11]]);
        if len < 16 || len > b.len() {
            break;
        }
        if mseq == seq {
            if ty == NLMSG_DONE || ty == NLMSG_ERROR {
                return DumpPart::Done(found);
            }
            if ty == RTM_NEWNEIGH && len >= 28 {
                let m = &b[16..len];
                let idx = i32::from_ne_bytes([m[4], m[5], m[6], m[7]]) as u32;
                let state = u16::from_ne_bytes([m[8], m[9]]);
                if idx == ifindex && state & NUD_USABLE != 0 {
                    let (mut dst, mut ll) = (None, None);
                    let mut a = &m[12..];
                    while a.len() >= 4 {
                        let alen = u16::from_ne_bytes([a[0], a[1]]) as usize;
                        let aty = u16::from_ne_bytes([a[2], a[3]]);
                        if alen < 4 || alen > a.len() {
                            break;
                        }
                        let v = &a[4..alen];
                        match (aty, v.len()) {
                            (NDA_DST, 4) => dst = Some(Ipv4Addr::new(v[0], v[1], v[2], v[3])),
                            (NDA_LLADDR, 6) => ll = Some(MacAddr([v[0], v[1], v[2], v[3], v[4], v[5]])),
                            _ => {}
                        }
                        a = &a[((alen + 3) & !3).min(a.len())..];
                    }
                    if dst == Some(want) {
                        found = ll.or(found);
                    }
                }
            }
        }
        b = &b[((len + 3) & !3).min(b.len())..];
    }
    DumpPart::More(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_link_checks_prefix() {
        let nets = [(Ipv4Addr::new(10, 77, 0, 1), 24)];
        assert!(on_link(&nets, Ipv4Addr::new(10, 77, 0, 200)));
        assert!(!on_link(&nets, Ipv4Addr::new(10, 78, 0, 2)));
        assert!(on_link(&[(Ipv4Addr::new(1, 2, 3, 4), 0)], Ipv4Addr::new(9, 9, 9, 9)));
    }

    #[test]
    fn garbage_netlink_input_is_harmless() {
        for bytes in [&[0u8; 3][..], &[0xff; 40][..], &[16, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0][..]] {
            let _ = parse_neigh_dump(bytes, 1, 1, Ipv4Addr::LOCALHOST);
        }
    }
}
