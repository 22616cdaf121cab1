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
//!   whose XSK action then hands a flow to this endpoint). See [`feed`].
//!
//! - **Mode** is explicit: `native` or `skb` fail when refused
//!   ([`Error::XdpModeRefused`], [`Error::MtuTooLarge`]); `auto` (default)
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
//! are parsed with [`detpath_wire::parse_udp_frame`]; a frame that fails
//! (bad checksum, fragment, truncated, ...) is counted in `rx_malformed`,
//! recycled and never delivered.
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
mod ring;
mod umem;

use crate::endpoint::{monotonic_ns, Capabilities, Counters, Datapath, Endpoint, RecvMode, RxBatch, RxMeta, TxDatagram};
use crate::error::{last_os_error, Error, Result};
use crate::neigh::Neighbours;
use crate::netdev::NetDev;
use crate::spec::EndpointSpec;
use crate::xdp::{memlock_limit, FilterConfig, FilterStats};
use feed::XdpFeed;
use detpath_wire::{build_udp_frame, parse_udp_frame, MacAddr, UdpFrameHeader};
use ring::{Ring, RingKind};
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};
use umem::Umem;

pub static DATAPATH: Datapath = Datapath {
    name: "afxdp",
    summary: "AF_XDP socket (UMEM + 4 rings) behind an XDP redirect of this address:port; native/skb, copy/zero-copy",
    open,
};

static XSK_REDIRECT_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xsk_redirect.bpf.o"));

/// Bytes the kernel keeps in front of a received frame in a UMEM chunk.
const XDP_PACKET_HEADROOM: u32 = 256;
/// Entries of the program's XSKMAP (queue indices it can serve).
const XSKMAP_ENTRIES: u32 = 256;
/// SO_BUSY_POLL value (microseconds the kernel busy-polls per call).
const BUSY_POLL_US: i32 = 20;
const SO_PREFER_BUSY_POLL: i32 = 69;
const SO_BUSY_POLL_BUDGET: i32 = 70;
/// How long a send waits for a free TX frame before giving up.
const TX_STALL: Duration = Duration::from_secs(1);
/// How long binding retries a queue that is busy (a socket closed just before
/// releases its queue asynchronously).
const BIND_BUSY_RETRY: Duration = Duration::from_millis(500);

/// The socket's XDP_STATISTICS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XskStats {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty_descs: u64,
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
    neigh: Neighbours,
    local: SocketAddrV4,
    src_mac: MacAddr,
    ip_id: u16,
    verify_checksum: bool,
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

fn sockopt<T>(fd: &OwnedFd, level: i32, name: i32, v: &T) -> std::io::Result<()> {
    // SAFETY: v is a live value of the option's type, passed with its size.
    let r = unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, (v as *const T).cast(), std::mem::size_of::<T>() as libc::socklen_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(last_os_error())
    }
}

fn bad_spec(spec: &EndpointSpec, why: String) -> Error {
    Error::BadSpec { spec: spec.to_string(), why }
}

/// Opens an AF_XDP endpoint (the concrete type, for callers that want
/// [`AfxdpEndpoint::xsk_stats`] or [`AfxdpEndpoint::filter_stats`]).
/// Call it on a thread inside the interface's network namespace.
pub fn open_afxdp(spec: &EndpointSpec) -> Result<AfxdpEndpoint> {
    spec.reject_unknown_extra(&["xdp"])?;
    let shared = match spec.extra.get("xdp").map(String::as_str) {
        None | Some("own") => false,
        Some("shared") => true,
        Some(v) => return Err(bad_spec(spec, format!("`xdp` takes own or shared, not `{v}`"))),
    };
    let iface = spec.require_iface()?;
    let port = spec.require_port()?;
    let frame_size = spec.frame_size;
    let ring_size = spec.ring_size;
    if !(2048..=4096).contains(&frame_size) || !frame_size.is_power_of_two() {
        return Err(bad_spec(spec, format!("`frame` must be 2048 or 4096 (an AF_XDP chunk is a power of two between 2 KiB and a page), not {frame_size}")));
    }
    if !(64..=16384).contains(&ring_size) {
        return Err(bad_spec(spec, format!("`ring` must be between 64 and 16384 for afxdp, not {ring_size}")));
    }
    let dev = NetDev::lookup(iface)?;
    dev.require_up()?;
    let addr = dev.pick_ipv4(spec.addr)?;
    if spec.queue >= dev.queues || spec.queue >= XSKMAP_ENTRIES {
        return Err(Error::NoSuchQueue { iface: dev.name.clone(), queue: spec.queue, count: dev.queues.min(XSKMAP_ENTRIES) });
    }
    // Before taking the queue: an interface with an XDP program already
    // attached is refused with that program's id (see XdpProgram::attach),
    // unless we are to join it.
    if !shared {
        if let Ok(Some(prog_id)) = crate::xdp::query(dev.ifindex).map(|a| a.any()) {
            return Err(Error::XdpBusy { iface: dev.name.clone(), prog_id });
        }
    }
    if spec.mode == crate::spec::XdpModeRequest::Native && dev.mtu > crate::xdp::NATIVE_MAX_MTU {
        return Err(Error::MtuTooLarge { iface: dev.name.clone(), mtu: dev.mtu, max: crate::xdp::NATIVE_MAX_MTU, mode: "native" });
    }
    let frame_need = dev.mtu + 14 + XDP_PACKET_HEADROOM;
    if frame_need > frame_size {
        return Err(bad_spec(spec, format!("a {}-byte MTU frame plus the kernel's {XDP_PACKET_HEADROOM}-byte headroom needs `frame` of at least {frame_need}; use frame=4096 or lower the MTU of `{}`", dev.mtu, dev.name)));
    }

    // The socket.
    // SAFETY: plain socket(2); checked below.
    let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        let e = last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EAFNOSUPPORT) => Error::Unsupported { datapath: "afxdp", what: "AF_XDP sockets (this kernel lacks CONFIG_XDP_SOCKETS)".into() },
            _ => Error::os("creating an AF_XDP socket", e, "CAP_NET_RAW"),
        });
    }
    // SAFETY: a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };

    // UMEM: first half RX (fill), second half TX.
    let nframes = 2 * ring_size;
    let umem = Umem::new(nframes, frame_size)?;
    let reg = libc::xdp_umem_reg { addr: umem.base() as u64, len: umem.len() as u64, chunk_size: frame_size, headroom: 0, flags: 0, tx_metadata_len: 0 };
    sockopt(&fd, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOBUFS) | Some(libc::ENOMEM) | Some(libc::EPERM) => Error::MemlockLimit {
            what: format!("registering {} KiB of AF_XDP UMEM ({nframes} frames of {frame_size} B: 2 x ring={ring_size}; a smaller `ring=` needs less, CAP_IPC_LOCK lifts the limit)", umem.len() / 1024),
            limit: memlock_limit(),
        },
        _ => Error::io(format!("registering the AF_XDP UMEM ({nframes} frames of {frame_size} B; chunks must be a power of two from 2048 to the page size, the area page-aligned)"), e),
    })?;
    let fill_size = 2 * ring_size;
    for (opt, size, what) in [
        (libc::XDP_UMEM_FILL_RING, fill_size, "fill"),
        (libc::XDP_UMEM_COMPLETION_RING, ring_size, "completion"),
        (libc::XDP_RX_RING, ring_size, "RX"),
        (libc::XDP_TX_RING, ring_size, "TX"),
    ] {
        sockopt(&fd, libc::SOL_XDP, opt, &size).map_err(|e| Error::io(format!("sizing the AF_XDP {what} ring to {size} (must be a power of two)"), e))?;
    }
    // SAFETY: xdp_mmap_offsets is plain data; zero is a valid value.
    let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
    let mut optlen = std::mem::size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
    // SAFETY: off/optlen describe a writable xdp_mmap_offsets.
    if unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_XDP, libc::XDP_MMAP_OFFSETS, (&mut off as *mut libc::xdp_mmap_offsets).cast(), &mut optlen) } != 0 {
        return Err(Error::io("reading the AF_XDP ring offsets", last_os_error()));
    }
    if optlen as usize != std::mem::size_of::<libc::xdp_mmap_offsets>() {
        return Err(Error::Unsupported { datapath: "afxdp", what: "AF_XDP rings without a flags word (kernel older than 5.4)".into() });
    }
    let mut fill: Ring<u64> = Ring::map(&fd, &off, RingKind::Fill, fill_size)?;
    let comp: Ring<u64> = Ring::map(&fd, &off, RingKind::Completion, ring_size)?;
    let rx: Ring<libc::xdp_desc> = Ring::map(&fd, &off, RingKind::Rx, ring_size)?;
    let tx: Ring<libc::xdp_desc> = Ring::map(&fd, &off, RingKind::Tx, ring_size)?;

    // Give the kernel every RX frame.
    let n = fill.free(ring_size).min(ring_size);
    for i in 0..n {
        fill.write(i, umem.frame_addr(i));
    }
    fill.submit(n);
    let mut tx_free = Vec::with_capacity(ring_size as usize);
    tx_free.extend((ring_size..nframes).rev().map(|i| umem.frame_addr(i)));

    // Bind: copy mode unless zero-copy was asked for; need_wakeup if the kernel has it.
    let want_zc = spec.zero_copy == Some(true);
    let mode_flag = if want_zc { libc::XDP_ZEROCOPY } else { libc::XDP_COPY };
    let mut need_wakeup = true;
    // A socket closed just before (even our own, a moment ago) releases its
    // queue in deferred kernel work: EBUSY is retried for a short while.
    let busy_until = Instant::now() + BIND_BUSY_RETRY;
    let mut r = loop {
        let r = bind(&fd, dev.ifindex, spec.queue, mode_flag | libc::XDP_USE_NEED_WAKEUP);
        if r.as_ref().err().and_then(|e| e.raw_os_error()) != Some(libc::EBUSY) || Instant::now() >= busy_until {
            break r;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if r.as_ref().err().and_then(|e| e.raw_os_error()) == Some(libc::EINVAL) && bind(&fd, dev.ifindex, spec.queue, mode_flag).is_ok() {
        need_wakeup = false;
        r = Ok(());
    }
    if let Err(e) = r {
        return Err(match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) | Some(libc::EPROTONOSUPPORT) if want_zc => Error::ZeroCopyRefused { iface: dev.name.clone(), queue: spec.queue },
            Some(libc::EBUSY) => Error::io(
                format!("binding AF_XDP to `{}` queue {}: another AF_XDP socket (or a zero-copy user) still holds that queue after {} ms; close it or use another `queue=`", dev.name, spec.queue, BIND_BUSY_RETRY.as_millis()),
                e,
            ),
            Some(libc::EPERM) => Error::MissingCapability { cap: "CAP_NET_RAW", what: format!("binding AF_XDP to `{}`", dev.name) },
            _ => Error::io(format!("binding AF_XDP to `{}` queue {}", dev.name, spec.queue), e),
        });
    }
    // What we really got.
    let mut xopts = libc::xdp_options { flags: 0 };
    let mut xlen = std::mem::size_of::<libc::xdp_options>() as libc::socklen_t;
    // SAFETY: xopts/xlen describe a writable xdp_options.
    let zero_copy = unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_XDP, libc::XDP_OPTIONS, (&mut xopts as *mut libc::xdp_options).cast(), &mut xlen) } == 0
        && xopts.flags & libc::XDP_OPTIONS_ZEROCOPY != 0;
    if want_zc && !zero_copy {
        return Err(Error::ZeroCopyRefused { iface: dev.name.clone(), queue: spec.queue });
    }

    // The XDP program (ours, or the one we join), with our socket in its XSKMAP at our queue.
    let feed = if shared {
        XdpFeed::shared(&dev, spec.queue, fd.as_raw_fd())?
    } else {
        XdpFeed::own(XSK_REDIRECT_OBJ, &dev, spec.mode, FilterConfig { addr, port }, spec.queue, fd.as_raw_fd())?
    };

    let mut caps = Capabilities {
        datapath: "afxdp",
        iface: Some(dev.name.clone()),
        queue: Some(spec.queue),
        xdp_mode: feed.mode(),
        zero_copy: Some(zero_copy),
        need_wakeup: Some(need_wakeup),
        busy_poll: false,
        max_payload: detpath_wire::max_payload_for_mtu(dev.mtu as usize).min((frame_size - XDP_PACKET_HEADROOM) as usize - detpath_wire::HEADERS_LEN),
        max_batch: spec.batch.min(ring_size) as usize,
        notes: Vec::new(),
    };
    caps.notes.extend(feed.notes());
    if !need_wakeup {
        caps.notes.push("the kernel refused XDP_USE_NEED_WAKEUP: every receive and send makes a syscall".into());
    }
    if spec.busy_poll {
        let budget = spec.batch.min(ring_size) as i32;
        let r = sockopt(&fd, libc::SOL_SOCKET, SO_PREFER_BUSY_POLL, &1i32)
            .map_err(|e| ("SO_PREFER_BUSY_POLL", e))
            .and_then(|_| sockopt(&fd, libc::SOL_SOCKET, libc::SO_BUSY_POLL, &BUSY_POLL_US).map_err(|e| ("SO_BUSY_POLL", e)))
            .and_then(|_| sockopt(&fd, libc::SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget).map_err(|e| ("SO_BUSY_POLL_BUDGET", e)));
        match r {
            Ok(()) => caps.busy_poll = true,
            Err((opt, e)) => caps.notes.push(format!("{opt} refused ({e}): busy-poll receive spins on the ring without kernel busy polling")),
        }
    }
    let neigh = Neighbours::new(&dev)?;
    Ok(AfxdpEndpoint {
        feed,
        rx,
        tx,
        fill,
        comp,
        fd,
        umem,
        tx_free,
        fill_pending: Vec::with_capacity(ring_size as usize),
        neigh,
        local: SocketAddrV4::new(addr, port),
        src_mac: dev.mac,
        ip_id: 0,
        verify_checksum: spec.verify_checksum,
        zero_copy,
        kernel_busy_poll: caps.busy_poll,
        batch: caps.max_batch as u32,
        caps,
        counters: Counters::default(),
    })
}

fn bind(fd: &OwnedFd, ifindex: u32, queue: u32, flags: u16) -> std::io::Result<()> {
    let sa = libc::sockaddr_xdp { sxdp_family: libc::AF_XDP as u16, sxdp_flags: flags, sxdp_ifindex: ifindex, sxdp_queue_id: queue, sxdp_shared_umem_fd: 0 };
    // SAFETY: sa is a complete sockaddr_xdp passed with its size.
    let r = unsafe { libc::bind(fd.as_raw_fd(), (&sa as *const libc::sockaddr_xdp).cast(), std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(last_os_error())
    }
}

/// Where received datagrams go: one caller buffer, or a batch.
trait RxSink {
    fn slot(&mut self) -> Option<&mut [u8]>;
    fn commit(&mut self, meta: RxMeta);
}

struct One<'a> {
    buf: &'a mut [u8],
    got: Option<RxMeta>,
}

impl RxSink for One<'_> {
    fn slot(&mut self) -> Option<&mut [u8]> {
        if self.got.is_some() {
            None
        } else {
            Some(&mut *self.buf)
        }
    }
    fn commit(&mut self, meta: RxMeta) {
        self.got = Some(meta);
    }
}

impl RxSink for RxBatch {
    fn slot(&mut self) -> Option<&mut [u8]> {
        self.next_slot()
    }
    fn commit(&mut self, meta: RxMeta) {
        RxBatch::commit(self, meta)
    }
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
                    format!("sending on afxdp `{}`: no TX frame completed within {} ms (link down or the kernel stopped transmitting)", self.feed.iface(), TX_STALL.as_millis()),
                    std::io::Error::from_raw_os_error(libc::ETIMEDOUT),
                ));
            }
            std::hint::spin_loop();
        }
    }

    /// Builds one frame into a free TX frame and writes its descriptor at ring position `i`.
    fn build(&mut self, i: u32, payload: &[u8], peer: SocketAddrV4) -> Result<()> {
        if payload.len() > self.caps.max_payload {
            return Err(Error::PayloadTooLarge { iface: self.feed.iface().to_string(), len: payload.len(), max: self.caps.max_payload });
        }
        let dst_mac = self.neigh.resolve(*peer.ip())?;
        let addr = match self.tx_free.pop() {
            Some(a) => a,
            None => return Err(Error::io("afxdp TX frame pool empty", std::io::Error::from_raw_os_error(libc::ENOBUFS))),
        };
        self.ip_id = self.ip_id.wrapping_add(1);
        let h = UdpFrameHeader { src_mac: self.src_mac, dst_mac, src: self.local, dst: peer, ip_id: self.ip_id, ttl: 64 };
        let Some(len) = build_udp_frame(self.umem.frame_mut(addr), &h, payload) else {
            self.tx_free.push(addr);
            return Err(Error::PayloadTooLarge { iface: self.feed.iface().to_string(), len: payload.len(), max: self.caps.max_payload });
        };
        self.tx.write(i, libc::xdp_desc { addr, len: len as u32, options: 0 });
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += payload.len() as u64;
        Ok(())
    }

    /// Takes ready RX descriptors into `sink` until it is full or the ring is
    /// empty; recycles every frame. Returns how many datagrams were delivered.
    fn drain_rx(&mut self, sink: &mut impl RxSink, max: u32) -> usize {
        self.flush_fill_pending();
        let avail = self.rx.available(max);
        if avail == 0 {
            return 0;
        }
        let rx_ns = monotonic_ns();
        let mut taken = 0u32;
        let mut delivered = 0usize;
        while taken < avail {
            let Some(slot) = sink.slot() else { break };
            let d = self.rx.read(taken);
            taken += 1;
            let meta = match self.umem.frame(d.addr, d.len) {
                Some(frame) => match parse_udp_frame(frame, self.verify_checksum) {
                    Ok(f) if f.dst == self.local => {
                        let p = f.payload(frame);
                        let len = p.len().min(slot.len());
                        slot[..len].copy_from_slice(&p[..len]);
                        Some(RxMeta { len, truncated: len < p.len(), peer: f.src, rx_ns })
                    }
                    _ => None,
                },
                None => None,
            };
            match meta {
                Some(m) => {
                    self.counters.rx_packets += 1;
                    self.counters.rx_bytes += m.len as u64;
                    if m.truncated {
                        self.counters.rx_truncated += 1;
                    }
                    sink.commit(m);
                    delivered += 1;
                }
                None => self.counters.rx_malformed += 1,
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
        delivered
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
    fn recv_into(&mut self, sink: &mut impl RxSink, mode: RecvMode, max: u32) -> Result<usize> {
        let deadline = match mode {
            RecvMode::NonBlocking => None,
            RecvMode::BusyPoll { timeout } | RecvMode::Blocking { timeout } => timeout.map(|t| Instant::now() + t),
        };
        loop {
            let n = self.drain_rx(sink, max);
            if n > 0 {
                return Ok(n);
            }
            match mode {
                RecvMode::NonBlocking => {
                    if self.fill.needs_wakeup() {
                        self.kick_rx();
                        return Ok(self.drain_rx(sink, max));
                    }
                    return Ok(0);
                }
                RecvMode::BusyPoll { .. } => {
                    if self.kernel_busy_poll || self.fill.needs_wakeup() {
                        self.kick_rx();
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(self.drain_rx(sink, max));
                    }
                    std::hint::spin_loop();
                }
                RecvMode::Blocking { .. } => {
                    let ms = crate::datapath::udp::poll_timeout_ms(deadline);
                    if ms == 0 {
                        return Ok(self.drain_rx(sink, max));
                    }
                    let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                    // SAFETY: one valid pollfd.
                    if unsafe { libc::poll(&mut pfd, 1, ms) } < 0 {
                        let e = last_os_error();
                        if e.raw_os_error() != Some(libc::EINTR) {
                            return Err(Error::io("waiting on the AF_XDP socket", e));
                        }
                    }
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
            rx_not_for_me: f.passed,
            rx_kernel_dropped: x.rx_dropped + x.rx_ring_full + f.dropped,
            fill_ring_empty: x.rx_fill_ring_empty_descs,
            tx_errors: self.counters.tx_errors + x.tx_invalid_descs,
            ..self.counters
        }
    }

    fn send_to(&mut self, payload: &[u8], peer: SocketAddrV4) -> Result<()> {
        self.tx_reserve(1)?;
        self.build(0, payload, peer)?;
        self.tx.submit(1);
        self.kick_tx();
        Ok(())
    }

    fn send_batch(&mut self, batch: &[TxDatagram<'_>]) -> Result<usize> {
        let mut sent = 0usize;
        while sent < batch.len() {
            let want = (batch.len() - sent).min(self.batch as usize) as u32;
            let n = match self.tx_reserve(want) {
                Ok(n) => n,
                Err(e) if sent == 0 => return Err(e),
                Err(_) => return Ok(sent),
            };
            let mut built = 0u32;
            let mut err = None;
            for d in &batch[sent..sent + n as usize] {
                if let Err(e) = self.build(built, d.payload, d.peer) {
                    err = Some(e);
                    break;
                }
                built += 1;
            }
            self.tx.submit(built);
            self.kick_tx();
            sent += built as usize;
            if let Some(e) = err {
                return if sent == 0 { Err(e) } else { Ok(sent) };
            }
        }
        Ok(sent)
    }

    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        let mut one = One { buf, got: None };
        self.recv_into(&mut one, mode, 1)?;
        Ok(one.got)
    }

    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> Result<usize> {
        batch.clear();
        let max = batch.capacity() as u32;
        self.recv_into(batch, mode, max)
    }
}
