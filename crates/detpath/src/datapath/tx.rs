//! The transmit side the frame-ring datapaths share (`afxdp`, `dpdk`): from
//! a UDP datagram to Ethernet frames on a port. Receive is shared the same
//! way (`rx_rule.rs`, `defrag.rs`).
//!
//! What is shared ([`Sender`]): the destination's MAC without waiting, the
//! parking of datagrams whose destination is still being resolved, IPv4
//! fragmentation of a datagram above one frame (built with `detpath_wire`),
//! and the per-datagram counters and errors. What stays with each datapath
//! ([`TxPort`]): how it resolves a neighbour (the kernel's table, its own
//! ARP), where a frame's bytes live (a UMEM chunk, an mbuf) and how frames
//! reach the wire (a TX ring and a kick, `rte_eth_tx_burst`).
//!
//! Neighbours: nothing waits for ARP. A datagram to an address still being
//! resolved is built into its frame and parked (up to [`PARK_SLOTS`]
//! frames; a fragmented datagram parks all its fragments together, or
//! none). Every later call on the endpoint services the parked frames
//! ([`Sender::service_parked`]): they go out once the MAC is known, or are
//! dropped (`tx_no_neigh`, once per datagram) when the resolver gives up,
//! which bounds how long a frame waits (the resolver's timeout). An
//! off-link destination fails at once (`tx_no_route`).
//!
//! Counters: a datagram counts in `tx_packets` and `tx_bytes` (its payload
//! bytes) once, when its frames were handed to the port (for a parked one,
//! when its last frame goes out).

use crate::endpoint::{Counters, TxDatagram};
use crate::error::{Error, Result};
use detpath_sys::neigh::Lookup;
use detpath_wire::{build_udp_fragment, build_udp_frame, ethernet, udp_fragment_count, MacAddr, UdpFrameHeader, IPV4_HLEN, UDP_HLEN};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;

/// Frames built and waiting for their destination's MAC (fixed; a datagram
/// that finds them all taken is dropped and counted in `tx_no_neigh`).
pub(crate) const PARK_SLOTS: usize = 64;

/// What a datapath gives the shared sender: its neighbour resolution, its
/// frame buffers and the way frames leave. `Buf` names one frame buffer
/// (a UMEM address, an mbuf pointer).
pub(crate) trait TxPort {
    /// One frame buffer, owned by the port until taken, then by the sender
    /// until staged, sent or given back.
    type Buf: Copy;

    /// Where resolving `ip` stands; never waits (may send an ARP request).
    fn resolve(&mut self, ip: Ipv4Addr) -> Lookup;
    /// The error for a destination the resolver gave up on (it names the
    /// resolver's timeout, which differs per datapath).
    fn unresolved(&self, ip: Ipv4Addr) -> Error;
    /// The interface or device, shared into per-datagram errors.
    fn name(&self) -> &Arc<str>;
    /// The endpoint's counters.
    fn counters(&mut self) -> &mut Counters;
    /// Makes up to `want` frames ready to take and stage (buffers and queue
    /// room), waiting a bounded time; returns how many (at least 1) or the
    /// error that ended the wait.
    fn reserve(&mut self, want: usize) -> Result<usize>;
    /// Buffers that could be taken now without waiting.
    fn spare(&mut self) -> usize;
    /// A free buffer.
    fn take(&mut self) -> Result<Self::Buf>;
    /// The writable bytes of a taken buffer (room for one whole frame).
    fn room(&mut self, b: Self::Buf) -> &mut [u8];
    /// Queues a built frame of `len` bytes for the next [`flush`](Self::flush)
    /// (room for it was reserved).
    fn stage(&mut self, b: Self::Buf, len: usize);
    /// Hands the staged frames to the wire.
    fn flush(&mut self) -> Result<()>;
    /// Queues a parked frame without waiting; `false` when the queue is full
    /// (the frame stays parked for the next call).
    fn send_parked(&mut self, b: Self::Buf, len: usize) -> bool;
    /// Returns an unsent buffer to the port.
    fn give_back(&mut self, b: Self::Buf);
}

/// A built frame waiting for its destination's MAC (its Ethernet
/// destination). The fragments of one datagram are parked together, in
/// order; only the last one (`last`) counts the datagram when it goes out
/// (`tx_packets`, `payload_len` bytes) or is dropped (`tx_no_neigh`).
#[derive(Debug, Clone, Copy)]
struct Parked<B> {
    buf: B,
    len: u32,
    payload_len: u32,
    ip: Ipv4Addr,
    last: bool,
}

/// What staging one datagram did with it.
enum Staged {
    /// On the port's queue (`usize`: its payload bytes, counted at flush).
    Queued(usize),
    /// Parked until its destination resolves (counted when it goes out).
    Parked,
}

/// The shared transmit side of one endpoint: its addresses, the next IPv4
/// id, the frame sizes and the parked frames.
pub(crate) struct Sender<B> {
    src_mac: MacAddr,
    local: SocketAddrV4,
    ip_id: u16,
    /// The largest UDP payload of one frame.
    max_payload: usize,
    /// The largest UDP payload sent as fragments.
    max_datagram: usize,
    /// Frames waiting for a MAC (capacity [`PARK_SLOTS`], fixed at open).
    parked: Vec<Parked<B>>,
}

/// An empty sender with no parking room: what stands in the endpoint while
/// its sender is lent out to a call (`std::mem::take`, no allocation).
impl<B> Default for Sender<B> {
    fn default() -> Self {
        Sender { src_mac: MacAddr::default(), local: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0), ip_id: 0, max_payload: 0, max_datagram: 0, parked: Vec::new() }
    }
}

impl<B: Copy> Sender<B> {
    /// A sender from `local` (MAC `src_mac`) whose frames carry up to
    /// `max_payload` UDP payload bytes and whose datagrams up to `max_datagram`.
    pub(crate) fn new(src_mac: MacAddr, local: SocketAddrV4, max_payload: usize, max_datagram: usize) -> Self {
        Sender { src_mac, local, ip_id: 0, max_payload, max_datagram, parked: Vec::with_capacity(PARK_SLOTS) }
    }

    /// Whether any frame is parked.
    pub(crate) fn has_parked(&self) -> bool {
        !self.parked.is_empty()
    }

    /// Takes every parked buffer out (for the endpoint's drop).
    pub(crate) fn drain_parked(&mut self) -> impl Iterator<Item = B> + '_ {
        self.parked.drain(..).map(|p| p.buf)
    }

    /// Sends one datagram (fragmented when above one frame), or parks it
    /// while its destination resolves. `tos`: the IPv4 type of service byte.
    pub(crate) fn send<P: TxPort<Buf = B>>(&mut self, port: &mut P, payload: &[u8], peer: SocketAddrV4, tos: u8) -> Result<()> {
        let r = self.send_one(port, payload, peer, tos);
        // A destination that resolved during the call: what waited for it goes now.
        self.service_parked(port);
        r
    }

    fn send_one<P: TxPort<Buf = B>>(&mut self, port: &mut P, payload: &[u8], peer: SocketAddrV4, tos: u8) -> Result<()> {
        if payload.len() > self.max_payload {
            return self.send_fragmented(port, payload, peer, tos);
        }
        port.reserve(1)?;
        match self.stage_one(port, payload, peer, tos)? {
            Staged::Queued(bytes) => {
                port.flush()?;
                count_sent(port.counters(), 1, bytes);
            }
            Staged::Parked => {}
        }
        Ok(())
    }

    /// Sends a batch `chunk` datagrams at a time (each flush is one kick or
    /// burst); parked datagrams count as sent. Returns how many were sent;
    /// a failure after the first is reported by the count, as
    /// [`crate::Endpoint::send_batch`] says.
    pub(crate) fn send_batch<P: TxPort<Buf = B>>(&mut self, port: &mut P, batch: &[TxDatagram<'_>], chunk: usize) -> Result<usize> {
        let r = self.send_chunks(port, batch, chunk);
        // A destination that resolved during the call: what waited for it goes now.
        self.service_parked(port);
        r
    }

    fn send_chunks<P: TxPort<Buf = B>>(&mut self, port: &mut P, batch: &[TxDatagram<'_>], chunk: usize) -> Result<usize> {
        let partial = |sent: usize, e: Error| if sent == 0 { Err(e) } else { Ok(sent) };
        let mut sent = 0usize;
        while sent < batch.len() {
            let want = (batch.len() - sent).min(chunk.max(1));
            let n = match port.reserve(want) {
                Ok(n) => n.min(want),
                Err(e) => return partial(sent, e),
            };
            let (mut queued, mut bytes, mut parked) = (0u64, 0usize, 0usize);
            let mut err = None;
            let mut large = None;
            for d in &batch[sent..sent + n] {
                if d.payload.len() > self.max_payload {
                    large = Some(d);
                    break;
                }
                match self.stage_one(port, d.payload, d.peer, 0) {
                    Ok(Staged::Queued(b)) => {
                        queued += 1;
                        bytes += b;
                    }
                    Ok(Staged::Parked) => parked += 1,
                    Err(e) => {
                        err = Some(e);
                        break;
                    }
                }
            }
            // What was staged goes out before any error is reported.
            match port.flush() {
                Ok(()) => {
                    count_sent(port.counters(), queued, bytes);
                    sent += queued as usize + parked;
                }
                Err(e) => return partial(sent + parked, e),
            }
            if let Some(d) = large.filter(|_| err.is_none()) {
                // A datagram above one frame, after those before it.
                match self.send_fragmented(port, d.payload, d.peer, 0) {
                    Ok(()) => sent += 1,
                    Err(e) => err = Some(e),
                }
            }
            if let Some(e) = err {
                return partial(sent, e);
            }
        }
        Ok(sent)
    }

    /// Sends the parked frames whose destination resolved, and drops
    /// (counting `tx_no_neigh` once per datagram) those whose destination
    /// did not. One branch when nothing is parked; never waits.
    pub(crate) fn service_parked<P: TxPort<Buf = B>>(&mut self, port: &mut P) {
        if self.parked.is_empty() {
            return;
        }
        let mut i = 0;
        let mut queued = 0;
        while i < self.parked.len() {
            let p = self.parked[i];
            // Those before `i` stay parked: one of them to the same
            // destination keeps this one behind it (the resolver may answer
            // between two frames of one pass), so a destination's frames
            // leave in the order they were sent.
            if self.parked[..i].iter().any(|q| q.ip == p.ip) {
                i += 1;
                continue;
            }
            match port.resolve(p.ip) {
                Lookup::Resolving => i += 1,
                Lookup::Ready(mac) => {
                    ethernet::set_dst_addr(port.room(p.buf), mac);
                    if !port.send_parked(p.buf, p.len as usize) {
                        break; // the queue is full: next call
                    }
                    queued += 1;
                    if p.last {
                        count_sent(port.counters(), 1, p.payload_len as usize);
                    }
                    self.parked.remove(i);
                }
                Lookup::OffLink | Lookup::Unresolved => {
                    port.give_back(p.buf);
                    port.counters().tx_no_neigh += u64::from(p.last);
                    self.parked.remove(i);
                }
            }
        }
        if queued > 0 {
            // Errors of a flush here are counted by the port (no caller to tell).
            let _ = port.flush();
        }
    }

    /// The destination MAC of `ip` without waiting: `Ok(None)` while it is
    /// being resolved; off-link and unresolved destinations are counted and
    /// refused with an error built without allocating.
    fn lookup<P: TxPort<Buf = B>>(&mut self, port: &mut P, ip: Ipv4Addr) -> Result<Option<MacAddr>> {
        match port.resolve(ip) {
            Lookup::Ready(mac) => Ok(Some(mac)),
            Lookup::Resolving => Ok(None),
            Lookup::OffLink => {
                port.counters().tx_no_route += 1;
                Err(Error::NoRoute { peer: ip, iface: port.name().clone() })
            }
            Lookup::Unresolved => {
                port.counters().tx_no_neigh += 1;
                Err(port.unresolved(ip))
            }
        }
    }

    /// Whether datagrams to `ip` are parked: a later one to it parks behind
    /// them even when its MAC is known now, so that they keep their order
    /// (the call ends by servicing them all).
    fn waiting_for(&self, ip: Ipv4Addr) -> bool {
        !self.parked.is_empty() && self.parked.iter().any(|p| p.ip == ip)
    }

    /// The headers of the next datagram to `peer` (a fresh IPv4 id).
    fn header(&mut self, peer: SocketAddrV4, dst_mac: MacAddr, tos: u8) -> UdpFrameHeader {
        self.ip_id = self.ip_id.wrapping_add(1);
        UdpFrameHeader { src_mac: self.src_mac, dst_mac, src: self.local, dst: peer, ip_id: self.ip_id, ttl: 64, tos }
    }

    /// Builds one datagram of at most one frame into a taken buffer and
    /// stages it, or parks it while its destination resolves (the caller
    /// reserved room for one frame).
    fn stage_one<P: TxPort<Buf = B>>(&mut self, port: &mut P, payload: &[u8], peer: SocketAddrV4, tos: u8) -> Result<Staged> {
        let dst_mac = self.lookup(port, *peer.ip())?.filter(|_| !self.waiting_for(*peer.ip()));
        if dst_mac.is_none() && self.parked.len() >= PARK_SLOTS {
            port.counters().tx_no_neigh += 1;
            return Err(Error::NoNeighbour { peer: *peer.ip(), iface: port.name().clone(), why: "still resolving, and every parking slot is taken" });
        }
        let b = port.take()?;
        let h = self.header(peer, dst_mac.unwrap_or_default(), tos);
        let Some(len) = build_udp_frame(port.room(b), &h, payload) else {
            port.give_back(b);
            port.counters().tx_errors += 1;
            return Err(too_large(port, payload.len(), self.max_payload));
        };
        if dst_mac.is_none() {
            self.parked.push(Parked { buf: b, len: len as u32, payload_len: payload.len() as u32, ip: *peer.ip(), last: true });
            return Ok(Staged::Parked);
        }
        port.stage(b, len);
        Ok(Staged::Queued(payload.len()))
    }

    /// Sends a datagram above one frame as IPv4 fragments (all with one IP
    /// id), staged as the port has room; or parks them all.
    fn send_fragmented<P: TxPort<Buf = B>>(&mut self, port: &mut P, payload: &[u8], peer: SocketAddrV4, tos: u8) -> Result<()> {
        if payload.len() > self.max_datagram {
            return Err(too_large(port, payload.len(), self.max_datagram));
        }
        let dst_mac = self.lookup(port, *peer.ip())?.filter(|_| !self.waiting_for(*peer.ip()));
        let mtu = self.max_payload + IPV4_HLEN + UDP_HLEN;
        let frags = udp_fragment_count(payload.len(), mtu);
        let h = self.header(peer, dst_mac.unwrap_or_default(), tos);
        if dst_mac.is_none() {
            return self.park_fragments(port, &h, payload, mtu, frags);
        }
        let mut k = 0;
        while k < frags {
            let n = port.reserve(frags - k)?.min(frags - k);
            for _ in 0..n {
                let built = port.take().and_then(|b| match build_udp_fragment(port.room(b), &h, payload, mtu, k) {
                    Some(len) => Ok((b, len)),
                    None => {
                        port.give_back(b);
                        port.counters().tx_errors += 1;
                        Err(too_large(port, payload.len(), self.max_datagram))
                    }
                });
                match built {
                    Ok((b, len)) => port.stage(b, len),
                    Err(e) => {
                        // The fragments staged so far go; the datagram is incomplete.
                        let _ = port.flush();
                        return Err(e);
                    }
                }
                k += 1;
            }
            port.flush()?;
        }
        count_sent(port.counters(), 1, payload.len());
        Ok(())
    }

    /// Builds every fragment of a datagram whose destination is still
    /// resolving and parks them together, in order; or none, counted in
    /// `tx_no_neigh`, when the parking slots or free buffers are too few.
    fn park_fragments<P: TxPort<Buf = B>>(&mut self, port: &mut P, h: &UdpFrameHeader, payload: &[u8], mtu: usize, frags: usize) -> Result<()> {
        let ip = *h.dst.ip();
        if self.parked.len() + frags > PARK_SLOTS || port.spare() < frags {
            port.counters().tx_no_neigh += 1;
            return Err(Error::NoNeighbour { peer: ip, iface: port.name().clone(), why: "still resolving, and too few parking slots for its fragments" });
        }
        for k in 0..frags {
            let built = port.take().and_then(|b| match build_udp_fragment(port.room(b), h, payload, mtu, k) {
                Some(len) => Ok((b, len)),
                None => {
                    port.give_back(b);
                    Err(too_large(port, payload.len(), self.max_datagram))
                }
            });
            match built {
                Ok((b, len)) => self.parked.push(Parked { buf: b, len: len as u32, payload_len: payload.len() as u32, ip, last: k + 1 == frags }),
                Err(e) => {
                    // Unpark what was parked of this datagram (the last ones): none or all.
                    for _ in 0..k {
                        if let Some(p) = self.parked.pop() {
                            port.give_back(p.buf);
                        }
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

/// Counts `datagrams` sent, of `bytes` payload bytes in all.
fn count_sent(c: &mut Counters, datagrams: u64, bytes: usize) {
    c.tx_packets += datagrams;
    c.tx_bytes += bytes as u64;
}

fn too_large<P: TxPort>(port: &P, len: usize, max: usize) -> Error {
    Error::PayloadTooLarge { iface: port.name().to_string(), len, max }
}

#[cfg(test)]
mod tests;
