//! The DPDK endpoint: one port, one RX and one TX queue, one mbuf pool.
//! By job: `setup.rs` opens it, `owner.rs` owns and undoes what opening did
//! (port, device, pool, the Linux interface), `neigh_cache.rs` keeps the
//! ARP-learnt neighbours, `tx_port.rs` lends mbufs and the TX queue to the
//! shared sender (`datapath/tx.rs`: parking, fragments, counting, the same
//! on afxdp), and this file is the hot path.
//!
//! Neighbours: nothing waits for ARP. A datagram to a peer not in the
//! cache sends an ARP request (repeated every 200 ms) and is built and
//! parked (up to [`PARK_SLOTS`](crate::datapath::tx::PARK_SLOTS) frames; a fragmented datagram parks all its
//! fragments together, or none); the send returns at once, and every later
//! call (send or receive) polls, learns the reply and sends what was parked. A peer silent for `arp_timeout` is remembered as
//! unresolved for [`NEGATIVE_TTL`]: its datagrams are dropped and counted
//! (`tx_no_neigh`) with no ARP and no allocation; an off-link destination
//! is refused at once (`tx_no_route`).
//!
//! Hot path: `rx_burst` into a preallocated array, each frame classified
//! (ARP answered on the spot, UDP for us queued as the mbuf itself, anything
//! else dropped and counted), payloads copied out of the mbuf into the
//! caller's buffer; sends allocate mbufs from the pool, build the frame in
//! place with `build_udp_frame` and `tx_burst` them. No heap allocation, no
//! lock, no syscall beyond what the PMD does (net_af_xdp kicks the kernel
//! with `sendto` when its TX ring needs it).

use super::eal;
use super::host::HostState;
use super::{Config, DpdkError, Vdev};
use crate::datapath::defrag::Defrag;
use crate::datapath::rx_rule::{self, UdpRule, Verdict};
use crate::datapath::tx::Sender;
use crate::datapath::wait::{wait_readable, Step, Wait, PARKED_SLEEP};
use crate::endpoint::{monotonic_ns, Capabilities, Counters, Endpoint, Mark, RecvMode, RxBatch, RxMeta, RxStamp, TxDatagram};
use crate::error::{Error, Result};
use crate::frame::{FrameEndpoint, FrameMeta};
use crate::spec::EndpointSpec;
use detpath_dpdk_sys as sys;
use detpath_sys::cleanup::{self, CleanupHandle};
use detpath_sys::neigh::Lookup;
use detpath_sys::netns;
use detpath_sys::xdp;
use detpath_sys::NetDev;
use detpath_sys::XdpMode;
use detpath_wire::arp::{self, ArpOp, ArpPacket};
use detpath_wire::frame::ETHERTYPE_IPV4;
use detpath_wire::{ethernet, MacAddr, ETH_HLEN, HEADERS_LEN};
use std::collections::VecDeque;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod neigh_cache;
mod owner;
mod setup;
mod tx_port;

use neigh_cache::*;
use owner::*;
pub(crate) use setup::open;

/// Ethernet minimum frame without FCS; shorter frames are zero-padded.
const MIN_FRAME: usize = 60;
/// Received datagrams held for the caller (while resolving a peer, say).
const PENDING: usize = 1024;
/// Neighbour cache slots (static entries may add more).
const NEIGH_SLOTS: usize = 64;
/// How long a peer that did not answer ARP is remembered as such.
const NEGATIVE_TTL: Duration = Duration::from_secs(1);
/// ARP requests are repeated this often while resolving.
const ARP_RETRY: Duration = Duration::from_millis(200);
/// A send gives up when the TX queue stays full this long.
const TX_STALL: Duration = Duration::from_millis(200);
/// How long a port's link may take to come up after start.
const LINK_WAIT: Duration = Duration::from_secs(3);
/// How long opening waits for a just-closed AF_XDP socket to release its queue.
const QUEUE_RELEASE_WAIT: Duration = Duration::from_secs(1);
/// Nap between empty polls in `RecvMode::Blocking` on a device with no
/// socket to sleep on (net_af_packet, net_tap, a PCI port). A nap of 20 µs
/// lasts about 120 µs on the project's VM (timer slack, wake-up), so these
/// devices answer late when blocking.
const BLOCKING_NAP: Duration = Duration::from_micros(20);
/// Data bytes of one mbuf (RTE_MBUF_DEFAULT_BUF_SIZE minus the headroom).
const MBUF_DATA: usize = 2048;

static NEXT_ID: AtomicU32 = AtomicU32::new(0);
static CLAIMED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// One received datagram still in its mbuf (or, `m` null, in a slot of [`Assembled`]).
#[derive(Clone, Copy)]
struct Pending {
    m: *mut sys::rte_mbuf,
    data: *const u8,
    len: u16,
    peer: SocketAddrV4,
    /// The sender's MAC (what a frame endpoint reports).
    src_mac: MacAddr,
    rx_ns: u64,
}

/// Reassembled datagrams waiting in `pending` (FIFO, as `pending` is): a
/// ring of buffers taken once, at the first one.
#[derive(Default)]
struct Assembled {
    bufs: Vec<Box<[u8]>>,
    /// Next slot to deliver, and how many are waiting.
    head: usize,
    waiting: usize,
}

impl Assembled {
    const SLOTS: usize = 8;

    /// Copies `payload` into the next free slot; `None` when all are waiting.
    fn store(&mut self, payload: &[u8]) -> Option<*const u8> {
        if self.bufs.is_empty() {
            self.bufs = (0..Self::SLOTS).map(|_| vec![0u8; detpath_wire::reasm::MAX_IP_PAYLOAD].into_boxed_slice()).collect();
        }
        if self.waiting == Self::SLOTS || payload.len() > detpath_wire::reasm::MAX_IP_PAYLOAD {
            return None;
        }
        let slot = &mut self.bufs[(self.head + self.waiting) % Self::SLOTS];
        slot[..payload.len()].copy_from_slice(payload);
        self.waiting += 1;
        Some(slot.as_ptr())
    }

    /// The oldest waiting slot was delivered.
    fn release(&mut self) {
        if self.waiting > 0 {
            self.head = (self.head + 1) % Self::SLOTS;
            self.waiting -= 1;
        }
    }
}

/// A peer without a MAC yet.
#[derive(Clone, Copy)]
struct ArpPending {
    ip: Ipv4Addr,
    since_ns: u64,
    next_arp_ns: u64,
    /// Non-zero: no reply came; refused until then.
    failed_until_ns: u64,
}

pub(crate) struct DpdkEndpoint {
    port: u16,
    /// `Some`: a frame endpoint of this EtherType (no IP, no ARP); `None`: UDP.
    ethertype: Option<u16>,
    pool: *mut sys::rte_mempool,
    device: String,
    /// The device name, shared into per-datagram errors (no allocation).
    device_name: Arc<str>,
    local: SocketAddrV4,
    /// A multicast group and port whose datagrams are ours too (`group=`).
    group: Option<SocketAddrV4>,
    mac: MacAddr,
    caps: Capabilities,
    counters: Counters,
    verify_checksum: bool,
    /// Take `rx_ns` from the XDP program's metadata in the mbuf's headroom (`rx_stamp=xdp`).
    xdp_stamp: bool,
    burst: u16,
    mbufs: u32,
    max_payload: usize,
    rx_buf: Vec<*mut sys::rte_mbuf>,
    /// Staged frames for the next burst (`tx_buf[..staged]`).
    tx_buf: Vec<*mut sys::rte_mbuf>,
    staged: usize,
    pending: VecDeque<Pending>,
    pending_dropped: u64,
    /// Datagrams that arrived as IPv4 fragments: being put back together, and done ones waiting.
    defrag: Defrag,
    assembled: Assembled,
    neigh: NeighCache,
    /// Peers being resolved (or remembered as unresolved); fixed capacity.
    arp_pending: Vec<ArpPending>,
    /// The shared transmit side: neighbour parking, fragments, counting.
    sender: Sender<*mut sys::rte_mbuf>,
    /// Subnets of the interface, for the on-link check (empty: no check).
    subnets: Vec<(Ipv4Addr, u8)>,
    arp_timeout: Duration,
    stats_base: [u64; 8],
    /// net_af_xdp's AF_XDP socket (owned by the PMD): a blocking receive
    /// sleeps in poll(2) on it and the kernel wakes it when a frame reaches
    /// the RX ring. `None` on other devices, which nap between polls.
    rx_fd: Option<i32>,
    _owner: PortOwner,
}

// SAFETY: the raw pointers are the endpoint's own mbuf pool and mbufs. DPDK
// lets any thread use a port's queue and a pool as long as one thread at a
// time uses the queue; the endpoint is the only user of its queue and `&mut
// self` on every call that touches it gives that exclusivity.
unsafe impl Send for DpdkEndpoint {}

impl DpdkEndpoint {
    fn free(&mut self, m: *mut sys::rte_mbuf) {
        if m.is_null() {
            // A reassembled datagram: its slot in `assembled` is released instead.
            self.assembled.release();
            return;
        }
        // SAFETY: m is an mbuf this endpoint received or allocated and still owns.
        unsafe { sys::detpath_dpdk_mbuf_free(m) };
    }

    /// One RX burst, every frame classified. Returns the number of frames taken.
    fn poll_rx(&mut self) -> usize {
        // Parked datagrams go out (or are dropped) as their ARP replies come (or do not).
        self.service_parked();
        // SAFETY: rx_buf has room for `burst` pointers; the port and queue 0 are started.
        let n = unsafe { sys::detpath_dpdk_rx_burst(self.port, 0, self.rx_buf.as_mut_ptr(), self.burst) } as usize;
        if n == 0 {
            return 0;
        }
        let now = monotonic_ns();
        for i in 0..n {
            let m = self.rx_buf[i];
            self.classify(m, now);
        }
        n
    }

    fn classify(&mut self, m: *mut sys::rte_mbuf, now: u64) {
        let (mut len, mut segs) = (0u32, 0u16);
        // SAFETY: m is a received mbuf we own.
        let data = unsafe { sys::detpath_dpdk_mbuf_data(m, &mut len, &mut segs) };
        if data.is_null() || segs != 1 {
            self.counters.rx_malformed += 1;
            return self.free(m);
        }
        // SAFETY: the first (only) segment holds `len` bytes at `data`, alive until the mbuf is freed.
        let frame = unsafe { std::slice::from_raw_parts(data as *const u8, len as usize) };
        let now = if self.xdp_stamp { self.xdp_stamp_of(m, data).unwrap_or(now) } else { now };
        if let Some(et) = self.ethertype {
            return self.classify_frame(m, frame, et, now);
        }
        if arp::is_arp(frame) {
            let parsed = arp::parse_arp_frame(frame);
            self.free(m);
            match parsed {
                Ok(p) => self.on_arp(&p),
                Err(_) => self.counters.rx_not_for_me += 1,
            }
            return;
        }
        // The receive rule (the same on afxdp and xdppoll). A datagram stays
        // in its mbuf until delivered; a reassembled one waits in `assembled`.
        let rule = UdpRule { local: self.local, group: self.group, verify_checksum: self.verify_checksum };
        match rule.judge(frame, &mut self.defrag, now) {
            Verdict::Deliver(d) if self.pending.len() >= PENDING => {
                let _ = d;
                self.pending_dropped += 1;
            }
            Verdict::Deliver(d) if !d.reassembled => {
                self.pending.push_back(Pending {
                    m,
                    data: d.payload.as_ptr(),
                    len: d.payload.len() as u16,
                    peer: d.src,
                    src_mac: MacAddr::default(),
                    rx_ns: now,
                });
                return;
            }
            Verdict::Deliver(d) => match self.assembled.store(d.payload) {
                Some(data) => {
                    let len = d.payload.len() as u16;
                    self.pending.push_back(Pending { m: std::ptr::null_mut(), data, len, peer: d.src, src_mac: MacAddr::default(), rx_ns: now });
                }
                None => self.pending_dropped += 1,
            },
            refused => refused.count_refusal(&mut self.counters),
        }
        self.free(m);
    }

    /// The XDP program's time stamp in the headroom just before `data` (the
    /// kernel put the metadata there; net_af_xdp hands the UMEM buffer over as
    /// the mbuf), taken and its magic cleared. `None` when there is none
    /// (net_af_xdp copied the frame into a fresh mbuf, or the driver has no
    /// metadata): noted once in the capabilities.
    fn xdp_stamp_of(&mut self, m: *mut sys::rte_mbuf, data: *mut u8) -> Option<u64> {
        use crate::datapath::filter::{note_unstamped, take_rx_stamp, RX_META_LEN};
        // SAFETY: m is a received mbuf we own.
        let headroom = unsafe { sys::detpath_dpdk_mbuf_headroom(m) } as usize;
        // SAFETY: the RX_META_LEN bytes before data are inside the mbuf's
        // headroom (checked), which we own with the mbuf.
        let got = (headroom >= RX_META_LEN).then(|| take_rx_stamp(unsafe { std::slice::from_raw_parts_mut(data.sub(RX_META_LEN), RX_META_LEN) })).flatten();
        if got.is_none() {
            note_unstamped(&mut self.caps);
        }
        got
    }

    /// A frame endpoint's receive: frames of our EtherType to us (or a group) are kept.
    fn classify_frame(&mut self, m: *mut sys::rte_mbuf, frame: &[u8], ethertype: u16, now: u64) {
        match rx_rule::judge_frame(frame, self.mac, Some(ethertype)) {
            Verdict::Deliver(_) if self.pending.len() >= PENDING => self.pending_dropped += 1,
            Verdict::Deliver(f) => {
                let peer = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0);
                self.pending.push_back(Pending { m, data: f.payload.as_ptr(), len: f.payload.len() as u16, peer, src_mac: f.src, rx_ns: now });
                return;
            }
            refused => refused.count_refusal(&mut self.counters),
        }
        self.free(m);
    }

    fn on_arp(&mut self, p: &ArpPacket) {
        let me = *self.local.ip();
        // A peer we were resolving: no longer pending (retain moves, never allocates).
        if self.arp_pending.iter().any(|x| x.ip == p.sender_ip) {
            self.arp_pending.retain(|x| x.ip != p.sender_ip);
        }
        if p.is_request_for(me) {
            if !p.sender_ip.is_unspecified() {
                self.neigh.learn(p.sender_ip, p.sender_mac);
            }
            let reply = p.reply_to(self.mac);
            self.send_arp(&reply);
        } else if p.op == ArpOp::Reply && p.target_ip == me {
            self.neigh.learn(p.sender_ip, p.sender_mac);
        } else {
            // Someone else's request, or a gratuitous announcement: refresh what we know.
            if self.neigh.get(p.sender_ip).is_some_and(|m| m != p.sender_mac) {
                self.neigh.learn(p.sender_ip, p.sender_mac);
            }
            self.counters.rx_not_for_me += 1;
        }
    }

    /// Sends one ARP frame; failures are counted, not returned (ARP retries).
    fn send_arp(&mut self, p: &ArpPacket) {
        let mut m: *mut sys::rte_mbuf = std::ptr::null_mut();
        // SAFETY: pool is ours; m is a valid out-slot for one pointer.
        if unsafe { sys::detpath_dpdk_mbuf_alloc_bulk(self.pool, &mut m, 1) } != 0 {
            self.counters.tx_errors += 1;
            return;
        }
        // SAFETY: m is a fresh mbuf with at least MIN_FRAME bytes of room.
        let data = unsafe { sys::detpath_dpdk_mbuf_set_len(m, MIN_FRAME as u16) };
        if data.is_null() {
            self.counters.tx_errors += 1;
            return self.free(m);
        }
        // SAFETY: data points to MIN_FRAME writable bytes of m.
        let buf = unsafe { std::slice::from_raw_parts_mut(data, MIN_FRAME) };
        if arp::build_arp_frame(buf, p, MIN_FRAME).is_none() {
            self.counters.tx_errors += 1;
            return self.free(m);
        }
        let mut one = [m];
        // SAFETY: one holds one built mbuf; the port is started.
        if unsafe { sys::detpath_dpdk_tx_burst(self.port, 0, one.as_mut_ptr(), 1) } != 1 {
            self.counters.tx_errors += 1;
            self.free(m);
        }
    }

    /// Where resolving `ip` stands, without waiting: cached or static;
    /// `Resolving` while an ARP request is out (sent now for a new peer,
    /// repeated every [`ARP_RETRY`]); a peer silent for `arp_timeout` is
    /// `Unresolved` for [`NEGATIVE_TTL`].
    fn arp_resolve(&mut self, ip: Ipv4Addr) -> Lookup {
        if let Some(m) = self.neigh.get(ip) {
            return Lookup::Ready(m);
        }
        if ip.is_broadcast() {
            return Lookup::Ready(MacAddr::BROADCAST);
        }
        if let Some(group) = MacAddr::ipv4_multicast(ip) {
            return Lookup::Ready(group);
        }
        if !self.subnets.is_empty() && !detpath_sys::neigh::on_link(&self.subnets, ip) {
            return Lookup::OffLink;
        }
        let now = monotonic_ns();
        let timeout_ns = self.arp_timeout.as_nanos() as u64;
        if let Some(i) = self.arp_pending.iter().position(|p| p.ip == ip) {
            let p = self.arp_pending[i];
            if p.failed_until_ns != 0 {
                if now < p.failed_until_ns {
                    return Lookup::Unresolved;
                }
                self.arp_pending.swap_remove(i);
            } else {
                if now.saturating_sub(p.since_ns) >= timeout_ns {
                    self.arp_pending[i].failed_until_ns = now + NEGATIVE_TTL.as_nanos() as u64;
                    return Lookup::Unresolved;
                }
                if now >= p.next_arp_ns {
                    self.send_arp(&ArpPacket::request(self.mac, *self.local.ip(), ip));
                    self.arp_pending[i].next_arp_ns = now + ARP_RETRY.as_nanos() as u64;
                }
                return Lookup::Resolving;
            }
        }
        self.send_arp(&ArpPacket::request(self.mac, *self.local.ip(), ip));
        let p = ArpPending { ip, since_ns: now, next_arp_ns: now + ARP_RETRY.as_nanos() as u64, failed_until_ns: 0 };
        if self.arp_pending.len() < self.arp_pending.capacity() {
            self.arp_pending.push(p);
        } else if let Some(oldest) = self.arp_pending.iter_mut().min_by_key(|p| p.since_ns) {
            *oldest = p;
        }
        Lookup::Resolving
    }

    /// Before a send, while a peer is being resolved: one RX burst (never a
    /// wait) reads its ARP reply, and what was parked for it goes out first,
    /// so an endpoint that only sends (a slot scheduler's sender) resolves
    /// too. The datagrams the burst finds wait in `pending` for the next
    /// receive. One branch when nothing is being resolved.
    fn poll_before_send(&mut self) {
        if !self.sender.has_parked() && !self.arp_pending.iter().any(|p| p.failed_until_ns == 0) {
            return;
        }
        self.poll_rx();
        self.service_parked();
    }

    /// Sends the parked frames whose peer answered ARP; drops those whose
    /// peer did not ([`Sender::service_parked`]). One branch when nothing
    /// is parked; never waits.
    fn service_parked(&mut self) {
        if !self.sender.has_parked() {
            return;
        }
        self.with_sender(|tx, port| tx.service_parked(port));
    }

    /// Runs `f` with the shared sender lent out of the endpoint, which is
    /// its port (moving a `Vec` out and back: no allocation).
    fn with_sender<T>(&mut self, f: impl FnOnce(&mut Sender<*mut sys::rte_mbuf>, &mut Self) -> T) -> T {
        let mut tx = std::mem::take(&mut self.sender);
        let r = f(&mut tx, self);
        self.sender = tx;
        r
    }

    /// Transmits tx_buf[..n], retrying while the queue is full.
    fn tx_all(&mut self, n: usize) -> Result<()> {
        let mut sent = 0usize;
        let mut stalled_since: Option<Instant> = None;
        while sent < n {
            // SAFETY: tx_buf[sent..n] hold built mbufs we own; the port is started.
            let k = unsafe { sys::detpath_dpdk_tx_burst(self.port, 0, self.tx_buf.as_mut_ptr().add(sent), (n - sent) as u16) } as usize;
            sent += k;
            if sent < n && k == 0 {
                match stalled_since {
                    None => {
                        self.counters.tx_ring_full += 1;
                        stalled_since = Some(Instant::now());
                    }
                    Some(t) if t.elapsed() > TX_STALL => {
                        let rest = n - sent;
                        // SAFETY: the unsent mbufs are still ours.
                        unsafe { sys::detpath_dpdk_mbuf_free_bulk(self.tx_buf.as_mut_ptr().add(sent), rest as u32) };
                        self.counters.tx_errors += rest as u64;
                        return Err(DpdkError::TxStalled { device: self.device.clone(), ms: TX_STALL.as_millis() as u64 }.into());
                    }
                    Some(_) => {}
                }
                // Keep answering ARP while waiting: the peer may be resolving us.
                self.poll_rx();
            }
        }
        Ok(())
    }

    fn alloc(&mut self, n: usize) -> Result<()> {
        // SAFETY: tx_buf has room for n <= burst pointers; pool is ours.
        if unsafe { sys::detpath_dpdk_mbuf_alloc_bulk(self.pool, self.tx_buf.as_mut_ptr(), n as u32) } != 0 {
            self.counters.tx_errors += n as u64;
            // SAFETY: pool is ours.
            let avail = unsafe { sys::detpath_dpdk_pool_avail(self.pool) };
            return Err(DpdkError::PoolExhausted { what: format!("no {n} free mbufs to send on `{}` ({avail} free)", self.device), mbufs: self.mbufs }.into());
        }
        Ok(())
    }

    fn check_len(&self, len: usize) -> Result<()> {
        if len > self.max_payload {
            return Err(Error::PayloadTooLarge { iface: self.device.clone(), len, max: self.max_payload });
        }
        Ok(())
    }

    /// Waits per `mode` until a datagram is pending; false when the wait ended empty.
    fn wait_pending(&mut self, mode: RecvMode) -> bool {
        let wait = Wait::new(mode);
        loop {
            if !self.pending.is_empty() || self.poll_rx() > 0 && !self.pending.is_empty() {
                return true;
            }
            match wait.after_empty() {
                Step::GiveUp => return false,
                Step::Spin => std::hint::spin_loop(),
                Step::Sleep(left) => self.sleep_until_rx(left),
            }
        }
    }

    /// Sleeps until a frame may be there, for at most `left` (None: no limit).
    /// On net_af_xdp, in poll(2) on its socket: woken as soon as the kernel
    /// puts a frame on the RX ring (DPDK's ethdev has no such wait; napping
    /// instead left a frame waiting up to a whole nap, about 120 µs). A frame that came
    /// after the last poll makes the socket readable at once, so none waits
    /// out the sleep. Other devices nap between polls.
    fn sleep_until_rx(&mut self, left: Option<Duration>) {
        let Some(fd) = self.rx_fd else { return std::thread::sleep(BLOCKING_NAP) };
        let left = if self.sender.has_parked() { Some(left.map_or(PARKED_SLEEP, |l| l.min(PARKED_SLEEP))) } else { left };
        if wait_readable(fd, left, "net_af_xdp's AF_XDP socket").is_err() {
            // poll(2) on the PMD's socket failed (it cannot while the port is open): nap, as other devices do.
            std::thread::sleep(BLOCKING_NAP);
        }
    }

    /// Copies the oldest pending datagram into `buf` and frees its mbuf.
    fn deliver(&mut self, buf: &mut [u8]) -> Option<RxMeta> {
        self.deliver_pending(buf).map(|(m, _)| m)
    }

    /// Copies the oldest pending datagram or frame payload into `buf` and frees its mbuf.
    fn deliver_pending(&mut self, buf: &mut [u8]) -> Option<(RxMeta, MacAddr)> {
        let p = self.pending.pop_front()?;
        let full = p.len as usize;
        let len = full.min(buf.len());
        // SAFETY: p.data points to p.len payload bytes inside p.m, which we still own.
        buf[..len].copy_from_slice(unsafe { std::slice::from_raw_parts(p.data, len) });
        self.free(p.m);
        self.counters.rx_packets += 1;
        self.counters.rx_bytes += len as u64;
        if full > len {
            self.counters.rx_truncated += 1;
        }
        Some((RxMeta { len, truncated: full > len, peer: p.peer, rx_ns: p.rx_ns }, p.src_mac))
    }
}

impl FrameEndpoint for DpdkEndpoint {
    fn local_mac(&self) -> MacAddr {
        self.mac
    }
    fn ethertype(&self) -> u16 {
        self.ethertype.unwrap_or(ETHERTYPE_IPV4)
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn counters(&self) -> Counters {
        Endpoint::counters(self)
    }
    fn send_frame(&mut self, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()> {
        self.check_len(payload.len())?;
        self.alloc(1)?;
        // Padded to the Ethernet minimum as the UDP frames are (the PMD may not pad).
        let len = (ETH_HLEN + payload.len()).max(MIN_FRAME);
        // SAFETY: tx_buf[0] is a fresh mbuf; set_len checks the room.
        let data = unsafe { sys::detpath_dpdk_mbuf_set_len(self.tx_buf[0], len as u16) };
        if data.is_null() {
            self.free(self.tx_buf[0]);
            self.counters.tx_errors += 1;
            return Err(Error::PayloadTooLarge { iface: self.device.clone(), len: payload.len(), max: self.max_payload });
        }
        // SAFETY: data points to `len` writable bytes of the mbuf.
        let buf = unsafe { std::slice::from_raw_parts_mut(data, len) };
        ethernet::write_header(buf, dst, self.mac, ethertype);
        buf[ETH_HLEN..ETH_HLEN + payload.len()].copy_from_slice(payload);
        buf[ETH_HLEN + payload.len()..].fill(0);
        self.tx_all(1)?;
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += len as u64;
        Ok(())
    }
    fn recv_frame(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<FrameMeta>> {
        if !self.wait_pending(mode) {
            return Ok(None);
        }
        Ok(self.deliver_pending(buf).map(|(m, src)| FrameMeta { len: m.len, truncated: m.truncated, src, rx_ns: m.rx_ns }))
    }
}

impl Endpoint for DpdkEndpoint {
    fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn counters(&self) -> Counters {
        let mut c = self.counters;
        let mut s = [0u64; 8];
        // SAFETY: port valid; s has 8 slots.
        if unsafe { sys::detpath_dpdk_port_stats(self.port, s.as_mut_ptr()) } == 0 {
            let d = |i: usize| s[i].saturating_sub(self.stats_base[i]);
            c.rx_kernel_dropped = d(4) + d(7);
        }
        c.rx_kernel_dropped += self.pending_dropped;
        c
    }

    fn send_marked(&mut self, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> Result<()> {
        crate::endpoint::check_no_class(self.caps.datapath, mark)?;
        self.poll_before_send();
        self.with_sender(|tx, port| tx.send(port, payload, peer, mark.tos()))
    }

    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        if !self.wait_pending(mode) {
            return Ok(None);
        }
        Ok(self.deliver(buf))
    }

    fn send_batch(&mut self, batch: &[TxDatagram<'_>]) -> Result<usize> {
        self.poll_before_send();
        let chunk = self.burst as usize;
        self.with_sender(|tx, port| tx.send_batch(port, batch, chunk))
    }

    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> Result<usize> {
        batch.clear();
        if !self.wait_pending(mode) {
            return Ok(0);
        }
        while let Some(slot) = batch.next_slot() {
            if self.pending.is_empty() && (self.poll_rx() == 0 || self.pending.is_empty()) {
                break;
            }
            match self.deliver(slot) {
                Some(meta) => batch.commit(meta),
                None => break,
            }
        }
        Ok(batch.len())
    }
}

impl Drop for DpdkEndpoint {
    fn drop(&mut self) {
        while let Some(p) = self.pending.pop_front() {
            self.free(p.m);
        }
        let mut tx = std::mem::take(&mut self.sender);
        for m in tx.drain_parked() {
            self.free(m);
        }
        // `_owner` (a field) drops next: port, device, pool, host state.
    }
}

#[cfg(test)]
mod tests {
    use super::setup::normalise_pci;
    use super::*;

    #[test]
    fn neighbour_cache_keeps_static_and_evicts_oldest() {
        let fixed = [(Ipv4Addr::new(10, 0, 0, 9), MacAddr([9; 6]))];
        let mut c = NeighCache::new(&fixed);
        c.learn(Ipv4Addr::new(10, 0, 0, 9), MacAddr([1; 6]));
        assert_eq!(c.get(Ipv4Addr::new(10, 0, 0, 9)), Some(MacAddr([9; 6])), "static entries are not overwritten");
        for i in 0..(NEIGH_SLOTS as u32 + 10) {
            c.learn(Ipv4Addr::from(0x0b00_0000 + i), MacAddr([i as u8; 6]));
        }
        assert_eq!(c.entries.len(), c.cap);
        assert!(c.entries.capacity() == c.cap, "never grows past its capacity");
        assert!(c.get(Ipv4Addr::from(0x0b00_0000)).is_none(), "oldest learned entry evicted");
        assert!(c.get(Ipv4Addr::from(0x0b00_0000 + NEIGH_SLOTS as u32 + 9)).is_some());
        assert!(c.get(Ipv4Addr::new(10, 0, 0, 9)).is_some());
    }

    #[test]
    fn pci_names_are_normalised() {
        assert_eq!(normalise_pci("03:00.0"), "0000:03:00.0");
        assert_eq!(normalise_pci("0000:AF:00.1"), "0000:af:00.1");
    }
}
