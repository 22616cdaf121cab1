//! Destination MAC addresses for the datapaths that build their own frames,
//! taken from the kernel's neighbour table so detpath agrees with the host.
//!
//! A missing entry is resolved by the kernel: a zero-length UDP datagram to
//! the peer's discard port makes it send an ARP request, and the table is
//! asked again later. Sockets are created in [`Neighbours::new`], so lookups
//! keep answering for the namespace the endpoint was opened in, whatever
//! thread calls them later.
//!
//! [`Neighbours::try_resolve`] is what a polling thread calls: it never
//! waits and never allocates. An off-link address is refused by arithmetic;
//! an address being resolved is asked of the kernel at most once per
//! back-off step (0.5 ms doubling to 100 ms, one non-blocking netlink
//! request each), and one that got no answer within [`RESOLVE_TIMEOUT`] is
//! remembered as unresolved for [`NEGATIVE_TTL`] (no system call at all
//! until then). [`Neighbours::resolve`] is the waiting form, for callers
//! outside a hot path.

use crate::error::{Error, Result};
use crate::netdev::NetDev;
use detpath_wire::MacAddr;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddrV4, UdpSocket};
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

/// How long an address may take to resolve before it counts as unresolved.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_millis(1000);
/// How long an unresolved address is remembered as such (sends to it fail
/// at once, without asking the kernel).
pub const NEGATIVE_TTL: Duration = Duration::from_millis(1000);
/// Addresses being resolved or remembered as unresolved (fixed; the oldest is replaced).
const UNRESOLVED_SLOTS: usize = 64;
/// Resolved addresses kept (the table is allocated once for this many).
const CACHE_SLOTS: usize = 1024;
/// First and largest pause between two questions to the kernel about one address.
const RECHECK_FIRST_NS: u64 = 500_000;
const RECHECK_MAX_NS: u64 = 100_000_000;

/// What [`Neighbours::try_resolve`] knows about an address now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Its MAC address.
    Ready(MacAddr),
    /// Not on a subnet of the interface (detpath sends on-link only).
    OffLink,
    /// The kernel is resolving it (asked again later).
    Resolving,
    /// No answer within [`RESOLVE_TIMEOUT`]: remembered for [`NEGATIVE_TTL`].
    Unresolved,
}

/// An address without a MAC yet.
#[derive(Debug, Clone, Copy)]
struct Unresolved {
    ip: Ipv4Addr,
    since_ns: u64,
    /// When to ask the kernel again (resolving), or until when to refuse (failed).
    next_ns: u64,
    backoff_ns: u64,
    failed: bool,
}

/// Neighbour lookups for one interface, with a cache.
pub struct Neighbours {
    iface: String,
    ifindex: u32,
    subnets: Vec<(Ipv4Addr, u8)>,
    netlink: Netlink,
    trigger: UdpSocket,
    cache: HashMap<Ipv4Addr, MacAddr>,
    unresolved: Vec<Unresolved>,
}

/// Whether `ip` is on one of `subnets` (address, prefix length): detpath sends on-link only.
pub fn on_link(subnets: &[(Ipv4Addr, u8)], ip: Ipv4Addr) -> bool {
    subnets.iter().any(|(a, p)| {
        let mask = if *p == 0 { 0 } else { u32::MAX << (32 - *p as u32) };
        u32::from(*a) & mask == u32::from(ip) & mask
    })
}

impl Neighbours {
    /// Opens the netlink socket in the calling thread's namespace.
    pub fn new(dev: &NetDev) -> Result<Neighbours> {
        let netlink = Netlink::open()?;
        let trigger = UdpSocket::bind("0.0.0.0:0").map_err(|e| Error::io("UDP socket for ARP triggers", e))?;
        // The trigger must never wait (it is sent from the polling thread).
        trigger.set_nonblocking(true).map_err(|e| Error::io("UDP socket for ARP triggers", e))?;
        Ok(Neighbours {
            iface: dev.name.clone(),
            ifindex: dev.ifindex,
            subnets: dev.ipv4.clone(),
            netlink,
            trigger,
            cache: HashMap::with_capacity(CACHE_SLOTS),
            unresolved: Vec::with_capacity(UNRESOLVED_SLOTS),
        })
    }

    /// The interface's name.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// What is known about `ip` at `now_ns` (CLOCK_MONOTONIC), without
    /// waiting and without allocating: at most one non-blocking netlink
    /// request and one zero-length UDP send (the ARP trigger), and none at
    /// all for a cached, off-link or recently unresolved address.
    pub fn try_resolve(&mut self, ip: Ipv4Addr, now_ns: u64) -> Lookup {
        if let Some(m) = self.cache.get(&ip) {
            return Lookup::Ready(*m);
        }
        if ip.is_broadcast() {
            return Lookup::Ready(MacAddr::BROADCAST);
        }
        if !on_link(&self.subnets, ip) {
            return Lookup::OffLink;
        }
        if let Some(i) = self.unresolved.iter().position(|u| u.ip == ip) {
            let u = self.unresolved[i];
            if u.failed {
                if now_ns < u.next_ns {
                    return Lookup::Unresolved;
                }
                // Remembered long enough: try afresh.
                self.unresolved.swap_remove(i);
            } else {
                if now_ns < u.next_ns {
                    return Lookup::Resolving;
                }
                if let Some(mac) = self.ask_kernel(ip) {
                    self.unresolved.swap_remove(i);
                    self.remember(ip, mac);
                    return Lookup::Ready(mac);
                }
                let u = &mut self.unresolved[i];
                if now_ns.saturating_sub(u.since_ns) >= RESOLVE_TIMEOUT.as_nanos() as u64 {
                    u.failed = true;
                    u.next_ns = now_ns + NEGATIVE_TTL.as_nanos() as u64;
                    return Lookup::Unresolved;
                }
                u.backoff_ns = (u.backoff_ns * 2).min(RECHECK_MAX_NS);
                u.next_ns = now_ns + u.backoff_ns;
                return Lookup::Resolving;
            }
        }
        if let Some(mac) = self.ask_kernel(ip) {
            self.remember(ip, mac);
            return Lookup::Ready(mac);
        }
        // The kernel resolves the address to send this; the datagram itself
        // goes to the discard port and is of no consequence. Non-blocking:
        // the kernel queues it behind its ARP request.
        let _ = self.trigger.send_to(&[], SocketAddrV4::new(ip, 9));
        let u = Unresolved { ip, since_ns: now_ns, next_ns: now_ns + RECHECK_FIRST_NS, backoff_ns: RECHECK_FIRST_NS, failed: false };
        if self.unresolved.len() < UNRESOLVED_SLOTS {
            self.unresolved.push(u);
        } else if let Some(oldest) = self.unresolved.iter_mut().min_by_key(|u| u.since_ns) {
            *oldest = u;
        }
        Lookup::Resolving
    }

    /// Caches a resolved address (the table never grows past its first allocation).
    fn remember(&mut self, ip: Ipv4Addr, mac: MacAddr) {
        if self.cache.len() >= CACHE_SLOTS {
            if let Some(k) = self.cache.keys().next().copied() {
                self.cache.remove(&k);
            }
        }
        self.cache.insert(ip, mac);
    }

    /// The kernel's usable entry for `ip` on our interface: one RTM_GETNEIGH
    /// for that address (no dump, no allocation); a dump where the kernel
    /// does not answer single requests.
    fn ask_kernel(&mut self, ip: Ipv4Addr) -> Option<MacAddr> {
        match self.netlink.get_v4(self.ifindex, ip) {
            Ok(found) => found,
            Err(()) => self.lookup(ip).ok().flatten(),
        }
    }

    /// Adds a static entry (used instead of the kernel's table).
    pub fn insert(&mut self, ip: Ipv4Addr, mac: MacAddr) {
        self.cache.insert(ip, mac);
    }

    /// Forgets a cached entry (e.g. after the peer changed).
    pub fn forget(&mut self, ip: Ipv4Addr) {
        self.cache.remove(&ip);
    }

    /// The MAC for `ip`: cached, from the kernel table, or resolved by ARP,
    /// waiting up to [`RESOLVE_TIMEOUT`]. Not for a polling thread (see
    /// [`try_resolve`](Self::try_resolve)).
    pub fn resolve(&mut self, ip: Ipv4Addr) -> Result<MacAddr> {
        let start = Instant::now();
        loop {
            let now_ns = start.elapsed().as_nanos() as u64 + monotonic_ns_base();
            match self.try_resolve(ip, now_ns) {
                Lookup::Ready(mac) => return Ok(mac),
                Lookup::OffLink => return Err(Error::NotOnLink { peer: ip.to_string(), iface: self.iface.clone() }),
                Lookup::Unresolved => {
                    return Err(Error::NeighbourUnresolved { peer: ip.to_string(), iface: self.iface.clone(), ms: RESOLVE_TIMEOUT.as_millis() as u64 })
                }
                Lookup::Resolving => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }

    /// Our interface's entry for `ip`, from one dump of the kernel's table.
    fn lookup(&mut self, ip: Ipv4Addr) -> Result<Option<MacAddr>> {
        let entries = self.netlink.dump(libc::AF_INET as u8, self.ifindex)?;
        Ok(entries.into_iter().find(|e| e.dst == IpAddr::V4(ip)).map(|e| e.mac))
    }
}

/// CLOCK_MONOTONIC now, in ns (the clock [`Neighbours::try_resolve`] takes).
fn monotonic_ns_base() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One usable entry of the kernel's neighbour table (one with a link-layer address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighEntry {
    /// The neighbour's address.
    pub dst: IpAddr,
    /// Its link-layer address.
    pub mac: MacAddr,
    /// [`NUD_PERMANENT`], [`NUD_NOARP`], or [`NUD_STALE`] for every learned
    /// state (REACHABLE, DELAY, PROBE...): written back as stale, the kernel
    /// revalidates it.
    pub state: u16,
}

/// A static entry (`ip neigh add ... nud permanent`).
pub const NUD_PERMANENT: u16 = 0x80;
/// An entry for a device without ARP.
pub const NUD_NOARP: u16 = 0x40;
/// A learned entry the kernel revalidates before trusting.
pub const NUD_STALE: u16 = 0x04;

/// The usable entries of `ifindex` (IPv4 and IPv6), in the calling thread's namespace.
pub fn table(ifindex: u32) -> Result<Vec<NeighEntry>> {
    let mut nl = Netlink::open()?;
    let mut all = nl.dump(libc::AF_INET as u8, ifindex)?;
    all.extend(nl.dump(libc::AF_INET6 as u8, ifindex)?);
    Ok(all)
}

/// Adds or replaces one entry on `ifindex` (`ip neigh replace`); needs CAP_NET_ADMIN.
pub fn replace(ifindex: u32, e: &NeighEntry) -> Result<()> {
    Netlink::open()?.replace(ifindex, e)
}

/// A NETLINK_ROUTE socket of the calling thread's namespace, for neighbour requests.
struct Netlink {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

const NLMSG_HDRLEN: usize = 16;
const NDMSG_LEN: usize = 12;

impl Netlink {
    fn open() -> Result<Netlink> {
        // SAFETY: plain socket(2); checked below.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
        if fd < 0 {
            return Err(Error::last_os("netlink socket for neighbour requests"));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let tv = libc::timeval { tv_sec: 1, tv_usec: 0 };
        // SAFETY: valid option value of the right size.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            )
        };
        Ok(Netlink { fd, seq: 1, buf: vec![0; 32 * 1024] })
    }

    /// Sends one request: netlink header, ndmsg, then `attrs` (already padded).
    fn request(&mut self, ty: u16, flags: u16, family: u8, ifindex: u32, state: u16, attrs: &[u8]) -> Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        let len = NLMSG_HDRLEN + NDMSG_LEN + attrs.len();
        let mut req = Vec::with_capacity(len);
        req.extend_from_slice(&(len as u32).to_ne_bytes());
        req.extend_from_slice(&ty.to_ne_bytes());
        req.extend_from_slice(&(flags | libc::NLM_F_REQUEST as u16).to_ne_bytes());
        req.extend_from_slice(&self.seq.to_ne_bytes());
        req.extend_from_slice(&0u32.to_ne_bytes());
        req.extend_from_slice(&[family, 0, 0, 0]);
        req.extend_from_slice(&(ifindex as i32).to_ne_bytes());
        req.extend_from_slice(&state.to_ne_bytes());
        req.extend_from_slice(&[0, 0]);
        req.extend_from_slice(attrs);
        // SAFETY: req is a complete netlink request; the socket is ours.
        if unsafe { libc::send(self.fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) } < 0 {
            return Err(Error::last_os("sending a neighbour request to the kernel"));
        }
        Ok(self.seq)
    }

    /// One RTM_GETNEIGH for `ip` on `ifindex`, built on the stack and read
    /// without waiting. `Ok(None)`: no usable entry; `Err(())`: the kernel
    /// does not answer single requests (before Linux 5.0) or the socket failed.
    fn get_v4(&mut self, ifindex: u32, ip: Ipv4Addr) -> std::result::Result<Option<MacAddr>, ()> {
        self.seq = self.seq.wrapping_add(1);
        const LEN: usize = NLMSG_HDRLEN + NDMSG_LEN + 8;
        let mut req = [0u8; LEN];
        req[0..4].copy_from_slice(&(LEN as u32).to_ne_bytes());
        req[4..6].copy_from_slice(&RTM_GETNEIGH.to_ne_bytes());
        req[6..8].copy_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
        req[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        req[16] = libc::AF_INET as u8;
        req[20..24].copy_from_slice(&(ifindex as i32).to_ne_bytes());
        let a = NLMSG_HDRLEN + NDMSG_LEN;
        req[a..a + 2].copy_from_slice(&8u16.to_ne_bytes());
        req[a + 2..a + 4].copy_from_slice(&NDA_DST.to_ne_bytes());
        req[a + 4..a + 8].copy_from_slice(&ip.octets());
        // SAFETY: req is a complete netlink request; the socket is ours.
        if unsafe { libc::send(self.fd.as_raw_fd(), req.as_ptr().cast(), LEN, 0) } < 0 {
            return Err(());
        }
        // The kernel answers inside send(); anything older than our
        // sequence number (an answer given up on) is skipped.
        loop {
            // SAFETY: buf is writable for its length.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), self.buf.as_mut_ptr().cast(), self.buf.len(), libc::MSG_DONTWAIT) };
            if n < 0 {
                return Err(());
            }
            let b = &self.buf[..n as usize];
            if b.len() < NLMSG_HDRLEN {
                return Err(());
            }
            let len = (u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize).min(b.len());
            let ty = u16::from_ne_bytes([b[4], b[5]]);
            let mseq = u32::from_ne_bytes([b[8], b[9], b[10], b[11]]);
            if mseq != self.seq {
                continue;
            }
            if ty == NLMSG_ERROR {
                return match ack_errno(b, self.seq) {
                    Some(libc::ENOENT) => Ok(None),
                    _ => Err(()),
                };
            }
            if ty == RTM_NEWNEIGH && len >= NLMSG_HDRLEN + NDMSG_LEN {
                return Ok(parse_ndmsg(&b[NLMSG_HDRLEN..len], ifindex).filter(|e| e.dst == IpAddr::V4(ip)).map(|e| e.mac));
            }
            return Ok(None);
        }
    }

    fn recv(&mut self) -> Result<usize> {
        // SAFETY: buf is writable for its length.
        let n = unsafe { libc::recv(self.fd.as_raw_fd(), self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
        if n < 0 {
            return Err(Error::last_os("reading the kernel's neighbour answer"));
        }
        Ok(n as usize)
    }

    /// The usable entries of one address family on `ifindex`.
    fn dump(&mut self, family: u8, ifindex: u32) -> Result<Vec<NeighEntry>> {
        let seq = self.request(RTM_GETNEIGH, libc::NLM_F_DUMP as u16, family, 0, 0, &[])?;
        let mut out = Vec::new();
        loop {
            let n = self.recv()?;
            if parse_neigh_dump(&self.buf[..n], seq, ifindex, &mut out) {
                return Ok(out);
            }
        }
    }

    fn replace(&mut self, ifindex: u32, e: &NeighEntry) -> Result<()> {
        let mut attrs = Vec::new();
        let (family, dst) = match e.dst {
            IpAddr::V4(a) => (libc::AF_INET as u8, a.octets().to_vec()),
            IpAddr::V6(a) => (libc::AF_INET6 as u8, a.octets().to_vec()),
        };
        push_attr(&mut attrs, NDA_DST, &dst);
        push_attr(&mut attrs, NDA_LLADDR, &e.mac.0);
        let flags = (libc::NLM_F_CREATE | libc::NLM_F_REPLACE | libc::NLM_F_ACK) as u16;
        let seq = self.request(RTM_NEWNEIGH, flags, family, ifindex, e.state, &attrs)?;
        let n = self.recv()?;
        match ack_errno(&self.buf[..n], seq) {
            Some(0) => Ok(()),
            Some(errno) => {
                Err(Error::os(format!("restoring neighbour {} on ifindex {ifindex}", e.dst), std::io::Error::from_raw_os_error(errno), "CAP_NET_ADMIN"))
            }
            None => Err(Error::io(format!("restoring neighbour {}", e.dst), std::io::Error::other("the kernel sent no acknowledgement"))),
        }
    }
}

fn push_attr(out: &mut Vec<u8>, ty: u16, v: &[u8]) {
    let len = 4 + v.len();
    out.extend_from_slice(&(len as u16).to_ne_bytes());
    out.extend_from_slice(&ty.to_ne_bytes());
    out.extend_from_slice(v);
    out.resize(out.len() + ((len + 3) & !3) - len, 0);
}

/// The errno of the NLMSG_ERROR answering `seq` (0 = success), if present.
fn ack_errno(b: &[u8], seq: u32) -> Option<i32> {
    let mut b = b;
    while b.len() >= NLMSG_HDRLEN + 4 {
        let len = u32::from_ne_bytes(b[0..4].try_into().ok()?) as usize;
        let ty = u16::from_ne_bytes([b[4], b[5]]);
        let mseq = u32::from_ne_bytes(b[8..12].try_into().ok()?);
        if len < NLMSG_HDRLEN || len > b.len() {
            return None;
        }
        if ty == NLMSG_ERROR && mseq == seq {
            return Some(-i32::from_ne_bytes(b[16..20].try_into().ok()?));
        }
        b = &b[((len + 3) & !3).min(b.len())..];
    }
    None
}

/// Parses one netlink datagram of an RTM_GETNEIGH dump, appending the usable
/// entries of `ifindex`. True when the dump is complete.
fn parse_neigh_dump(mut b: &[u8], seq: u32, ifindex: u32, out: &mut Vec<NeighEntry>) -> bool {
    while b.len() >= NLMSG_HDRLEN {
        let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let ty = u16::from_ne_bytes([b[4], b[5]]);
        let mseq = u32::from_ne_bytes([b[8], b[9], b[10], b[11]]);
        if len < NLMSG_HDRLEN || len > b.len() {
            break;
        }
        if mseq == seq {
            if ty == NLMSG_DONE || ty == NLMSG_ERROR {
                return true;
            }
            if ty == RTM_NEWNEIGH && len >= NLMSG_HDRLEN + NDMSG_LEN {
                if let Some(e) = parse_ndmsg(&b[NLMSG_HDRLEN..len], ifindex) {
                    out.push(e);
                }
            }
        }
        b = &b[((len + 3) & !3).min(b.len())..];
    }
    false
}

/// One ndmsg and its attributes: an entry if it is on `ifindex`, usable and has a MAC.
fn parse_ndmsg(m: &[u8], ifindex: u32) -> Option<NeighEntry> {
    let idx = i32::from_ne_bytes([m[4], m[5], m[6], m[7]]) as u32;
    let state = u16::from_ne_bytes([m[8], m[9]]);
    if idx != ifindex || state & NUD_USABLE == 0 {
        return None;
    }
    let (mut dst, mut mac) = (None, None);
    let mut a = &m[NDMSG_LEN..];
    while a.len() >= 4 {
        let alen = u16::from_ne_bytes([a[0], a[1]]) as usize;
        let aty = u16::from_ne_bytes([a[2], a[3]]);
        if alen < 4 || alen > a.len() {
            break;
        }
        let v = &a[4..alen];
        match (aty, v.len()) {
            (NDA_DST, 4) => dst = Some(IpAddr::from(<[u8; 4]>::try_from(v).ok()?)),
            (NDA_DST, 16) => dst = Some(IpAddr::from(<[u8; 16]>::try_from(v).ok()?)),
            (NDA_LLADDR, 6) => mac = Some(MacAddr(v.try_into().ok()?)),
            _ => {}
        }
        a = &a[((alen + 3) & !3).min(a.len())..];
    }
    let state = if state & (NUD_PERMANENT | NUD_NOARP) != 0 { state & (NUD_PERMANENT | NUD_NOARP) } else { NUD_STALE };
    Some(NeighEntry { dst: dst?, mac: mac?, state })
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
        let mut out = Vec::new();
        for bytes in [&[0u8; 3][..], &[0xff; 40][..], &[16, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0][..]] {
            let _ = parse_neigh_dump(bytes, 1, 1, &mut out);
            let _ = ack_errno(bytes, 1);
        }
        assert!(out.is_empty());
    }

    #[test]
    fn a_dump_message_round_trips_through_the_parser() {
        // An RTM_NEWNEIGH as the kernel sends it: header, ndmsg, NDA_DST, NDA_LLADDR.
        let mut attrs = Vec::new();
        push_attr(&mut attrs, NDA_DST, &[10, 77, 0, 2]);
        push_attr(&mut attrs, NDA_LLADDR, &[2, 0x64, 0x70, 0, 0, 0x0b]);
        let mut m = Vec::new();
        let len = NLMSG_HDRLEN + NDMSG_LEN + attrs.len();
        m.extend_from_slice(&(len as u32).to_ne_bytes());
        m.extend_from_slice(&RTM_NEWNEIGH.to_ne_bytes());
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(&7u32.to_ne_bytes());
        m.extend_from_slice(&[0; 4]);
        m.extend_from_slice(&[libc::AF_INET as u8, 0, 0, 0]);
        m.extend_from_slice(&5i32.to_ne_bytes());
        m.extend_from_slice(&0x02u16.to_ne_bytes()); // REACHABLE
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(&attrs);
        let mut out = Vec::new();
        assert!(!parse_neigh_dump(&m, 7, 5, &mut out));
        assert_eq!(out, vec![NeighEntry { dst: IpAddr::from([10, 77, 0, 2]), mac: MacAddr([2, 0x64, 0x70, 0, 0, 0x0b]), state: NUD_STALE }]);
        out.clear();
        parse_neigh_dump(&m, 7, 6, &mut out);
        assert!(out.is_empty(), "another interface's entry is not ours");
    }

    /// The non-blocking lookup on the loopback device: off-link refused by
    /// arithmetic, an on-link address nobody has goes resolving, then
    /// unresolved after the timeout, remembered without asking again.
    #[test]
    fn try_resolve_never_waits_and_remembers_failures() {
        // In a network namespace of this thread's own (nothing routed, so
        // the ARP trigger goes nowhere), thrown away when the thread ends.
        std::thread::spawn(|| {
            // SAFETY: unshare(2) on this thread only; needs root (the tests run as root).
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare(CLONE_NEWNET): run as root");
            try_resolve_in_a_fresh_namespace();
        })
        .join()
        .unwrap();
    }

    fn try_resolve_in_a_fresh_namespace() {
        let lo = NetDev {
            name: "lo".into(),
            ifindex: crate::netdev::ifindex("lo").unwrap(),
            mac: MacAddr::default(),
            mtu: 65536,
            up: true,
            ipv4: vec![(Ipv4Addr::new(10, 77, 0, 1), 24)],
            queues: 1,
        };
        let mut n = Neighbours::new(&lo).unwrap();
        assert_eq!(n.try_resolve(Ipv4Addr::new(10, 99, 0, 7), 1), Lookup::OffLink);
        assert_eq!(n.try_resolve(Ipv4Addr::BROADCAST, 1), Lookup::Ready(MacAddr::BROADCAST));
        let ip = Ipv4Addr::new(10, 77, 0, 9);
        let t0 = 1_000_000_000u64;
        let started = Instant::now();
        assert_eq!(n.try_resolve(ip, t0), Lookup::Resolving);
        assert_eq!(n.try_resolve(ip, t0 + 1), Lookup::Resolving, "within the back-off: no question asked");
        assert_eq!(n.try_resolve(ip, t0 + RESOLVE_TIMEOUT.as_nanos() as u64), Lookup::Unresolved);
        assert_eq!(n.try_resolve(ip, t0 + RESOLVE_TIMEOUT.as_nanos() as u64 + 5), Lookup::Unresolved, "remembered");
        // The bound is the mechanism's, not a speed: the clock here is the
        // caller's (fake nanoseconds), so a lookup that blocked would block
        // for the real RESOLVE_TIMEOUT, the only wait the code has (see
        // `resolve`). Four non-blocking calls take microseconds idle; half
        // the timeout tells them from one wait with room for a loaded VM.
        let took = started.elapsed();
        assert!(took < RESOLVE_TIMEOUT / 2, "a lookup waited: {took:?} (resolve timeout {RESOLVE_TIMEOUT:?})");
        let after = t0 + (RESOLVE_TIMEOUT + NEGATIVE_TTL).as_nanos() as u64 + 10;
        assert_eq!(n.try_resolve(ip, after), Lookup::Resolving, "forgotten after the TTL, resolved afresh");
        n.insert(ip, MacAddr([2, 0, 0, 0, 0, 9]));
        assert_eq!(n.try_resolve(ip, after), Lookup::Ready(MacAddr([2, 0, 0, 0, 0, 9])));
    }

    #[test]
    fn loopback_table_can_be_read() {
        let lo = crate::netdev::ifindex("lo").unwrap();
        table(lo).unwrap();
    }
}
