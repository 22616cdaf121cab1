//! The `afxdp` datapath: an AF_XDP socket with its UMEM and four rings, fed
//! by `bpf/xsk_redirect.bpf.c`, which redirects only this endpoint's
//! (destination address, UDP port) to the socket and passes everything else
//! to the kernel stack.
//!
//! Spec: `afxdp://<iface>?port=N[&addr=A][&queue=Q][&mode=auto|native|skb]
//! [&zerocopy=true|false][&busy_poll=true|false][&ring=R][&frame=F][&batch=B]
//! [&checksum=verify|skip][&xdp=own|shared]`.
//!
//! - **xdp=shared** (default `own`): attach no program; join the XSKMAP of
//!   the XDP program already on the interface (e.g. `detpath classify`'s,
//!   whose XSK action then hands a flow to this endpoint). See `feed.rs`.
//!
//! - **Mode** is explicit: `native` or `skb` fail when refused
//!   ([`detpath_sys::Error::XdpModeRefused`], [`detpath_sys::Error::MtuTooLarge`], in [`Error::Sys`]); `auto` (default)
//!   tries native then skb, and [`Capabilities::xdp_mode`] plus a note say
//!   what it got.
//! - **Copy or zero-copy**: copy mode unless `zerocopy=true`, which fails
//!   with [`Error::ZeroCopyRefused`] where the driver cannot (veth, virtio).
//! - **need_wakeup** is requested (XDP_USE_NEED_WAKEUP): the kernel is kicked
//!   only when a ring's flag asks for it (TX in copy mode always needs a kick:
//!   the copy happens in `sendto`).
//! - **Busy polling** (`busy_poll=true`, the default): SO_PREFER_BUSY_POLL,
//!   SO_BUSY_POLL and SO_BUSY_POLL_BUDGET on the socket, and
//!   [`RecvMode::BusyPoll`] calls `recvfrom(MSG_DONTWAIT)` while the ring is
//!   empty so the kernel polls the driver from this thread. When the kernel
//!   refuses the options, `Capabilities::busy_poll` is false, a note says why,
//!   and busy-poll receive spins on the ring alone.
//!
//! UMEM: `2 × ring` frames of `frame` bytes (mmap, MAP_POPULATE): the first
//! half feeds the fill ring (RX), the second half is the TX pool. The fill
//! ring has `2 × ring` slots so recycled frames always fit. Received frames
//! are judged by the receive rule (`datapath/rx_rule.rs`, the same
//! on afxdp, xdppoll and dpdk): delivered, held for reassembly, not for us
//! (`rx_not_for_me`) or malformed (`rx_malformed`); every frame is recycled.
//!
//! Transmit: the shared sender (`datapath/tx.rs`, the same on dpdk) builds,
//! parks and fragments datagrams and counts them; this endpoint is its port
//! (`tx_port.rs`: UMEM chunks, the TX ring and its kick). The destination
//! MAC comes from the kernel's table through [`Neighbours::try_resolve`],
//! which never waits: a datagram to an address still being resolved is
//! parked, and every later call on the endpoint (send or receive) looks
//! again, within the resolver's back-off, and sends it once the MAC is
//! known, as the kernel does with its ARP queue. An off-link destination
//! fails at once (`tx_no_route`); one that stays unresolved for a second is
//! dropped (`tx_no_neigh`) and remembered as such for a second, so a flood
//! of forged sources costs no system call per datagram.
//!
//! Counters: `rx_not_for_me` is the XDP program's `passed` count;
//! `rx_kernel_dropped` sums the socket's `rx_dropped` and `rx_ring_full`
//! (XDP_STATISTICS) and the program's `dropped` (ours, but no socket on the
//! queue the frame arrived on); `fill_ring_empty` is
//! `rx_fill_ring_empty_descs` (those drops are also in `rx_kernel_dropped`).
//!
//! Needs CAP_NET_RAW (the socket), CAP_BPF and CAP_NET_ADMIN (the program);
//! Linux 5.11+ for busy polling, 5.9+ for the BPF link.

mod feed;
mod keys;
mod ring;
mod setup;
mod tx_port;
mod umem;

pub use keys::{AfxdpKeys, FRAME_KEYS, KEYS};
pub use setup::open_afxdp;

use crate::datapath::defrag::Defrag;
use crate::datapath::entry::{Datapath, FrameDatapath, GroupReception};
use crate::datapath::filter::{self, FilterStats};
use crate::datapath::rx_rule::{self, UdpRule, Verdict};
use crate::datapath::tx::Sender;
use crate::datapath::wait::{wait_readable, Step, Wait, PARKED_SLEEP};
use crate::endpoint::{check_no_class, monotonic_ns, Capabilities, Counters, Endpoint, Mark, RecvMode, RxBatch, RxMeta, TxDatagram};
use crate::error::{last_os_error, Error, Result};
use crate::frame::{FrameEndpoint, FrameMeta};
use crate::spec::EndpointSpec;
use detpath_sys::neigh::Neighbours;
use detpath_wire::frame::ETHERTYPE_IPV4;
use detpath_wire::{ethernet, MacAddr, ETH_HLEN};
use feed::XdpFeed;
use ring::Ring;
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};
use umem::Umem;

/// The frame datapath on the same socket, rings and program: the program
/// matches the spec's `port` as an EtherType (`afxdp://dpa?port=7400`).
pub static FRAME_DATAPATH: FrameDatapath = FrameDatapath {
    name: "afxdp",
    summary: "AF_XDP socket behind an XDP redirect of one EtherType; native/skb, copy/zero-copy",
    keys: FRAME_KEYS,
    open: |spec| Ok(Box::new(setup::open_afxdp_framing(spec, Framing::Ether { ethertype: spec.require_port()? })?)),
};

/// The `afxdp` datapath's registry entry: its keys, its datagram opener,
/// and its frame side ([`FRAME_DATAPATH`]).
pub(crate) static DATAPATH: Datapath = Datapath {
    name: "afxdp",
    display: "AF_XDP",
    summary: "AF_XDP socket (UMEM + 4 rings) behind an XDP redirect of this address:port; native/skb, copy/zero-copy",
    arrival_stamp: Some("rx_stamp=xdp"),
    group_reception: GroupReception::KernelSocket,
    keys: KEYS,
    open: Some(open),
    frames: Some(&FRAME_DATAPATH),
};

/// Bytes the kernel keeps in front of a received frame in a UMEM chunk.
const XDP_PACKET_HEADROOM: u32 = 256;
/// How long a send waits for a free TX frame before giving up.
const TX_STALL: Duration = Duration::from_secs(1);

/// The socket's XDP_STATISTICS (`struct xdp_statistics`): what the kernel
/// counted on it since it was bound, each a count of frames or events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XskStats {
    /// Frames the kernel dropped for a reason not counted below.
    pub rx_dropped: u64,
    /// Fill ring descriptors the kernel refused (an address outside the UMEM).
    pub rx_invalid_descs: u64,
    /// TX ring descriptors the kernel refused (address or length out of bounds).
    pub tx_invalid_descs: u64,
    /// Frames dropped because the RX ring was full (user space too slow).
    pub rx_ring_full: u64,
    /// Times the kernel found the fill ring empty: no buffer to receive into.
    pub rx_fill_ring_empty_descs: u64,
    /// Times the kernel found the TX ring empty when woken to send.
    pub tx_ring_empty_descs: u64,
}

/// An open AF_XDP endpoint. Field order is drop order: the XDP program is
/// detached first, then the rings are unmapped, the socket closed and the
/// UMEM unmapped.
pub struct AfxdpEndpoint {
    feed: XdpFeed,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    fd: OwnedFd,
    umem: Umem,
    /// Free TX frame addresses (capacity fixed at open: never reallocates).
    tx_free: Vec<u64>,
    /// RX frames that did not fit the fill ring yet (capacity fixed at open).
    fill_pending: Vec<u64>,
    /// The interface name, shared into errors (built without allocating).
    iface: Arc<str>,
    neigh: Neighbours,
    /// The shared transmit side: neighbour parking, fragments, counting.
    sender: Sender<u64>,
    /// TX descriptors written since the last submit (the next ring position).
    staged: u32,
    framing: Framing,
    local: SocketAddrV4,
    src_mac: MacAddr,
    verify_checksum: bool,
    /// Take `rx_ns` from the XDP program's metadata (`rx_stamp=xdp`).
    xdp_stamp: bool,
    /// Datagrams arriving as IPv4 fragments, being put back together.
    defrag: Defrag,
    zero_copy: bool,
    kernel_busy_poll: bool,
    batch: u32,
    caps: Capabilities,
    counters: Counters,
}

// SAFETY: the raw pointers in the rings and UMEM point into mappings this
// value owns exclusively; nothing else in the process aliases them, so moving
// the endpoint to another thread is sound (it is not Sync: no shared access).
unsafe impl Send for AfxdpEndpoint {}

fn open(spec: &EndpointSpec) -> Result<Box<dyn Endpoint>> {
    Ok(Box::new(open_afxdp(spec)?))
}

/// Where received datagrams (or frames) go: one caller buffer, or a batch.
trait RxSink<M> {
    fn slot(&mut self) -> Option<&mut [u8]>;
    fn commit(&mut self, meta: M);
}

struct One<'a, M> {
    buf: &'a mut [u8],
    got: Option<M>,
}

impl<M> RxSink<M> for One<'_, M> {
    fn slot(&mut self) -> Option<&mut [u8]> {
        if self.got.is_some() {
            None
        } else {
            Some(&mut *self.buf)
        }
    }
    fn commit(&mut self, meta: M) {
        self.got = Some(meta);
    }
}

impl RxSink<RxMeta> for RxBatch {
    fn slot(&mut self) -> Option<&mut [u8]> {
        self.next_slot()
    }
    fn commit(&mut self, meta: RxMeta) {
        RxBatch::commit(self, meta)
    }
}

/// How a received frame becomes a delivery: (endpoint, reassembler, frame, caller's slot, rx time).
type ParseFn<E, M> = fn(&E, &mut Defrag, &[u8], &mut [u8], u64) -> Parsed<M>;

/// What one received frame became: delivered into the caller's slot (its
/// meta, bytes copied, bytes it had), or refused by the receive rule.
type Parsed<M> = Verdict<(M, usize, usize)>;

/// How this endpoint frames payloads: UDP datagrams (the `afxdp` datapath)
/// or bare Ethernet payloads of one EtherType (the `afxdp` frame datapath).
/// Everything else (UMEM, rings, program, waiting) is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Udp,
    Ether { ethertype: u16 },
}

impl AfxdpEndpoint {
    /// The socket's kernel statistics (XDP_STATISTICS).
    pub fn xsk_stats(&self) -> XskStats {
        // SAFETY: xdp_statistics is plain data; zero is a valid value.
        let mut s: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: s/len describe a writable xdp_statistics.
        let r = unsafe { libc::getsockopt(self.fd.as_raw_fd(), libc::SOL_XDP, libc::XDP_STATISTICS, (&mut s as *mut libc::xdp_statistics).cast(), &mut len) };
        if r != 0 {
            return XskStats::default();
        }
        XskStats {
            rx_dropped: s.rx_dropped,
            rx_invalid_descs: s.rx_invalid_descs,
            tx_invalid_descs: s.tx_invalid_descs,
            rx_ring_full: s.rx_ring_full,
            rx_fill_ring_empty_descs: s.rx_fill_ring_empty_descs,
            tx_ring_empty_descs: s.tx_ring_empty_descs,
        }
    }

    /// The XDP program's counters (matched, passed to the kernel, dropped).
    pub fn filter_stats(&self) -> FilterStats {
        self.feed.stats()
    }

    /// The id of the XDP program that feeds the socket (ours, or the shared one).
    pub fn prog_id(&self) -> u32 {
        self.feed.prog_id()
    }

    /// Kicks the kernel to receive: `recvfrom(MSG_DONTWAIT)` (drives busy polling too).
    fn kick_rx(&self) {
        // SAFETY: a zero-length receive on our socket; the kernel only uses it as a wakeup.
        unsafe { libc::recvfrom(self.fd.as_raw_fd(), std::ptr::null_mut(), 0, libc::MSG_DONTWAIT, std::ptr::null_mut(), std::ptr::null_mut()) };
    }

    /// Kicks the kernel to transmit what is on the TX ring. In copy mode the
    /// kernel sends at most a budget per call (EAGAIN: more to do).
    fn kick_tx(&mut self) {
        if self.zero_copy && !self.tx.needs_wakeup() {
            return;
        }
        for _ in 0..64 {
            // SAFETY: a zero-length send on our socket; the kernel only uses it as a wakeup.
            let r = unsafe { libc::sendto(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0) };
            if r >= 0 {
                return;
            }
            match last_os_error().raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::EINTR) => continue,
                // Completion ring or skb memory short: reaping frees it.
                Some(libc::ENOBUFS) => {
                    self.reap_completions();
                    continue;
                }
                _ => {
                    self.counters.tx_errors += 1;
                    return;
                }
            }
        }
    }

    /// Moves completed TX frames back to the free list.
    fn reap_completions(&mut self) {
        let n = self.comp.available(self.tx_free.capacity() as u32);
        for i in 0..n {
            let addr = self.comp.read(i);
            if self.tx_free.len() < self.tx_free.capacity() {
                self.tx_free.push(self.umem.chunk_base(addr));
            }
        }
        self.comp.release(n);
    }

    /// Makes `want` TX frames and ring slots available (waiting a bounded
    /// time), returning how many are.
    fn tx_reserve(&mut self, want: u32) -> Result<u32> {
        self.reap_completions();
        let have = |s: &mut Self| (s.tx_free.len() as u32).min(s.tx.free(want)).min(want);
        if have(self) > 0 {
            return Ok(have(self));
        }
        self.counters.tx_ring_full += 1;
        let deadline = Instant::now() + TX_STALL;
        loop {
            self.kick_tx();
            self.reap_completions();
            let n = have(self);
            if n > 0 {
                return Ok(n);
            }
            if Instant::now() >= deadline {
                self.counters.tx_errors += 1;
                return Err(Error::io(
                    format!(
                        "sending on afxdp `{}`: no TX frame completed within {} ms (link down or the kernel stopped transmitting)",
                        self.feed.iface(),
                        TX_STALL.as_millis()
                    ),
                    std::io::Error::from_raw_os_error(libc::ETIMEDOUT),
                ));
            }
            std::hint::spin_loop();
        }
    }

    /// Sends the parked datagrams whose destination resolved and drops those
    /// whose destination did not ([`Sender::service_parked`]). One branch
    /// when nothing is parked; never waits.
    fn service_parked(&mut self) {
        if !self.sender.has_parked() {
            return;
        }
        self.with_sender(|tx, port| tx.service_parked(port));
    }

    /// Runs `f` with the shared sender lent out of the endpoint, which is
    /// its port (moving a `Vec` out and back: no allocation).
    fn with_sender<T>(&mut self, f: impl FnOnce(&mut Sender<u64>, &mut Self) -> T) -> T {
        let mut tx = std::mem::take(&mut self.sender);
        let r = f(&mut tx, self);
        self.sender = tx;
        r
    }

    /// Builds one Ethernet frame (header + payload) and writes its descriptor at ring position `i`.
    fn build_eth(&mut self, i: u32, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()> {
        if payload.len() > self.caps.max_payload {
            return Err(Error::PayloadTooLarge { iface: self.feed.iface().to_string(), len: payload.len(), max: self.caps.max_payload });
        }
        let addr = self.take_tx_frame()?;
        let frame = self.umem.frame_mut(addr);
        let len = ETH_HLEN + payload.len();
        ethernet::write_header(frame, dst, self.src_mac, ethertype);
        frame[ETH_HLEN..len].copy_from_slice(payload);
        self.tx.write(i, libc::xdp_desc { addr, len: len as u32, options: 0 });
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += len as u64;
        Ok(())
    }

    fn take_tx_frame(&mut self) -> Result<u64> {
        let Some(addr) = self.tx_free.pop() else {
            self.counters.tx_ring_full += 1;
            return Err(Error::io("afxdp TX frame pool empty", std::io::Error::from_raw_os_error(libc::ENOBUFS)));
        };
        Ok(addr)
    }

    /// A received frame as a UDP datagram for this endpoint (the receive rule, [`rx_rule`]).
    /// A fragment goes to the reassembler and is delivered when it completes its datagram.
    fn parse_udp(&self, defrag: &mut Defrag, frame: &[u8], slot: &mut [u8], rx_ns: u64) -> Parsed<RxMeta> {
        let rule = UdpRule { local: self.local, group: None, verify_checksum: self.verify_checksum };
        rule.judge(frame, defrag, rx_ns).map(|d| {
            let len = d.payload.len().min(slot.len());
            slot[..len].copy_from_slice(&d.payload[..len]);
            (RxMeta { len, truncated: len < d.payload.len(), peer: d.src, rx_ns }, len, d.payload.len())
        })
    }

    /// A received frame as a bare Ethernet payload: its EtherType must be
    /// ours and its destination us or a group address.
    fn parse_eth(&self, _: &mut Defrag, frame: &[u8], slot: &mut [u8], rx_ns: u64) -> Parsed<FrameMeta> {
        // The program matched the EtherType; a shared program (`xdp=shared`) may hand us anything.
        let Framing::Ether { ethertype } = self.framing else { return Verdict::NotForMe };
        rx_rule::judge_frame(frame, self.src_mac, Some(ethertype)).map(|f| {
            let len = f.payload.len().min(slot.len());
            slot[..len].copy_from_slice(&f.payload[..len]);
            (FrameMeta { len, truncated: len < f.payload.len(), src: f.src, rx_ns }, len, f.payload.len())
        })
    }

    /// Takes ready RX descriptors into `sink` until it is full or the ring is
    /// empty; recycles every frame. Returns how many datagrams were delivered.
    fn drain_rx<M>(&mut self, sink: &mut impl RxSink<M>, max: u32, parse: ParseFn<Self, M>) -> usize {
        self.flush_fill_pending();
        let avail = self.rx.available(max);
        if avail == 0 {
            return 0;
        }
        let polled_ns = monotonic_ns();
        // Lent out of self for the loop (parse borrows self immutably).
        let mut defrag = std::mem::take(&mut self.defrag);
        let mut taken = 0u32;
        let mut delivered = 0usize;
        while taken < avail {
            let Some(slot) = sink.slot() else { break };
            let d = self.rx.read(taken);
            taken += 1;
            let rx_ns = if self.xdp_stamp { self.xdp_stamp_of(d.addr).unwrap_or(polled_ns) } else { polled_ns };
            let parsed = match self.umem.frame(d.addr, d.len) {
                Some(frame) => parse(self, &mut defrag, frame, slot, rx_ns),
                None => Verdict::Malformed,
            };
            match parsed {
                Verdict::Deliver((meta, copied, full)) => {
                    rx_rule::count_delivered(&mut self.counters, copied, full);
                    sink.commit(meta);
                    delivered += 1;
                }
                refused => refused.count_refusal(&mut self.counters),
            }
        }
        // Recycle the frames to the fill ring (overflow waits in fill_pending).
        let free = self.fill.free(taken);
        let direct = free.min(taken);
        for i in 0..taken {
            let base = self.umem.chunk_base(self.rx.read(i).addr);
            if i < direct {
                self.fill.write(i, base);
            } else if self.fill_pending.len() < self.fill_pending.capacity() {
                self.fill_pending.push(base);
            }
        }
        self.rx.release(taken);
        self.fill.submit(direct);
        self.defrag = defrag;
        delivered
    }

    /// The XDP program's time stamp in front of the frame at `addr`, taken
    /// (`filter::take_rx_stamp`); `None`, and a note, when there is none.
    fn xdp_stamp_of(&mut self, addr: u64) -> Option<u64> {
        let got = self.umem.meta_mut(addr).and_then(filter::take_rx_stamp);
        if got.is_none() {
            filter::note_unstamped(&mut self.caps);
        }
        got
    }

    fn flush_fill_pending(&mut self) {
        if self.fill_pending.is_empty() {
            return;
        }
        let n = self.fill.free(self.fill_pending.len() as u32).min(self.fill_pending.len() as u32);
        for i in 0..n {
            if let Some(a) = self.fill_pending.pop() {
                self.fill.write(i, a);
            }
        }
        self.fill.submit(n);
    }

    /// Receives per `mode` into `sink`; returns how many datagrams were delivered.
    fn recv_into<M>(&mut self, sink: &mut impl RxSink<M>, mode: RecvMode, max: u32, parse: ParseFn<Self, M>) -> Result<usize> {
        let wait = Wait::new(mode);
        let busy = matches!(mode, RecvMode::BusyPoll { .. });
        loop {
            self.service_parked();
            let n = self.drain_rx(sink, max, parse);
            if n > 0 {
                return Ok(n);
            }
            match wait.after_empty() {
                // While datagrams are parked, sleep 1 ms at a time to send them when their MAC comes.
                Step::Sleep(left) => {
                    let left = if self.sender.has_parked() { Some(left.map_or(PARKED_SLEEP, |l| l.min(PARKED_SLEEP))) } else { left };
                    wait_readable(self.fd.as_raw_fd(), left, "the AF_XDP socket")?
                }
                step => {
                    // The kernel moves frames into the RX ring when kicked: when the
                    // ring asks for it (need_wakeup), and on every spin when kernel
                    // busy polling is on.
                    if self.fill.needs_wakeup() || (busy && self.kernel_busy_poll) {
                        self.kick_rx();
                    }
                    if step == Step::GiveUp {
                        return Ok(self.drain_rx(sink, max, parse));
                    }
                    std::hint::spin_loop();
                }
            }
        }
    }
}

impl Endpoint for AfxdpEndpoint {
    fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn counters(&self) -> Counters {
        let x = self.xsk_stats();
        let f = self.feed.stats();
        Counters {
            rx_not_for_me: f.passed + self.counters.rx_not_for_me,
            rx_kernel_dropped: x.rx_dropped + x.rx_ring_full + f.dropped,
            fill_ring_empty: x.rx_fill_ring_empty_descs,
            tx_errors: self.counters.tx_errors + x.tx_invalid_descs,
            ..self.counters
        }
    }

    fn send_marked(&mut self, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> Result<()> {
        check_no_class(self.caps.datapath, mark)?;
        self.service_parked();
        self.with_sender(|tx, port| tx.send(port, payload, peer, mark.tos()))
    }

    fn send_batch(&mut self, batch: &[TxDatagram<'_>]) -> Result<usize> {
        self.service_parked();
        let chunk = self.batch as usize;
        self.with_sender(|tx, port| tx.send_batch(port, batch, chunk))
    }

    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        let mut one = One { buf, got: None };
        self.recv_into(&mut one, mode, 1, Self::parse_udp)?;
        Ok(one.got)
    }

    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> Result<usize> {
        batch.clear();
        let max = batch.capacity() as u32;
        self.recv_into(batch, mode, max, Self::parse_udp)
    }
}

impl FrameEndpoint for AfxdpEndpoint {
    fn local_mac(&self) -> MacAddr {
        self.src_mac
    }
    fn ethertype(&self) -> u16 {
        match self.framing {
            Framing::Ether { ethertype } => ethertype,
            Framing::Udp => ETHERTYPE_IPV4,
        }
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn counters(&self) -> Counters {
        Endpoint::counters(self)
    }
    fn send_frame(&mut self, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()> {
        self.tx_reserve(1)?;
        self.build_eth(0, payload, dst, ethertype)?;
        self.tx.submit(1);
        self.kick_tx();
        Ok(())
    }
    fn recv_frame(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<FrameMeta>> {
        let mut one = One { buf, got: None };
        self.recv_into(&mut one, mode, 1, Self::parse_eth)?;
        Ok(one.got)
    }
}
