//! The `xdppoll` datapath (paper 000's "XDP Poll"): an XDP program copies
//! each frame for this endpoint into a BPF ring buffer, which user space
//! busy-polls through shared memory (no syscall per packet); transmit goes
//! through a kernel UDP socket bound to the same address and port.
//!
//! Spec: `xdppoll://<iface>?port=N[&addr=A][&mode=auto|native|skb][&rx_stamp=user|xdp]`.

use crate::datapath::defrag::Defrag;
use crate::datapath::entry::{Datapath, FrameDatapath, GroupReception};
use crate::datapath::filter::{FilterConfig, FilterProgram};
use crate::datapath::keys;
use crate::datapath::rx_rule::{self, UdpRule, Verdict};
use crate::datapath::wait::{wait_readable, Step, Wait};
use crate::endpoint::{monotonic_ns, Capabilities, Counters, Endpoint, RecvMode, RxMeta, RxStamp};
use crate::error::{last_os_error, Error, Result};
use crate::frame::{FrameEndpoint, FrameMeta, MacAddr};
use crate::spec::EndpointSpec;
use detpath_sys::NetDev;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The `xdppoll` datapath's registry entry: its keys, its datagram opener,
/// and its frame side ([`FRAME_DATAPATH`]).
pub(crate) static DATAPATH: Datapath = Datapath {
    name: "xdppoll",
    display: "XDP poll",
    summary: "XDP program → BPF ring buffer, busy-polled; TX via UDP socket",
    arrival_stamp: Some("rx_stamp=xdp"),
    group_reception: GroupReception::KernelSocket,
    keys: &["mode", "checksum", "rx_stamp"],
    open: Some(open),
    frames: Some(&FRAME_DATAPATH),
};

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xdppoll.bpf.o"));

// Ring buffer record header bits (include/uapi/linux/bpf.h).
const BPF_RINGBUF_BUSY_BIT: u32 = 1 << 31;
const BPF_RINGBUF_DISCARD_BIT: u32 = 1 << 30;
const BPF_RINGBUF_HDR_SZ: usize = 8;
/// Bytes in front of the frame inside a record (struct dp_poll_record in
/// bpf/xdppoll.bpf.c: `__u32 len; __u32 _pad; __u64 rx_ns;`).
const RECORD_FRAME_OFFSET: usize = 16;
/// Where the record's `rx_ns` (the program's time stamp, `rx_stamp=xdp`) is.
const RECORD_STAMP_OFFSET: usize = 8;
/// Largest frame the program copies (DP_POLL_MAX_FRAME in bpf/xdppoll.bpf.c).
const DP_POLL_MAX_FRAME: usize = 2048;

/// User-space side of a BPF ring buffer, read through shared memory.
struct RingConsumer {
    consumer: *mut u8,
    producer: *mut u8,
    data_size: usize,
    page: usize,
    fd: OwnedFd,
}

// SAFETY: the mappings belong to this value alone; the kernel is the only other party.
unsafe impl Send for RingConsumer {}

impl RingConsumer {
    fn new(fd: OwnedFd, data_size: usize) -> Result<RingConsumer> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let map = |len: usize, prot: i32, off: usize, what: &str| -> Result<*mut u8> {
            // SAFETY: mapping a ring buffer map fd at the offsets the kernel defines for it.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd.as_raw_fd(), off as libc::off_t) };
            if p == libc::MAP_FAILED {
                return Err(Error::io(format!("mapping the BPF ring buffer ({what})"), last_os_error()));
            }
            Ok(p.cast())
        };
        let consumer = map(page, libc::PROT_READ | libc::PROT_WRITE, 0, "consumer page")?;
        // The data area is mapped twice in a row so a record never wraps.
        let producer = match map(page + 2 * data_size, libc::PROT_READ, page, "producer page and data") {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: consumer was mapped above with this length.
                unsafe { libc::munmap(consumer.cast(), page) };
                return Err(e);
            }
        };
        Ok(RingConsumer { consumer, producer, data_size, page, fd })
    }

    fn consumer_pos(&self) -> &AtomicU64 {
        // SAFETY: the first 8 bytes of the consumer page are the consumer position, 8-aligned.
        unsafe { &*(self.consumer as *const AtomicU64) }
    }

    fn producer_pos(&self) -> &AtomicU64 {
        // SAFETY: the first 8 bytes of the producer page are the producer position, 8-aligned.
        unsafe { &*(self.producer as *const AtomicU64) }
    }

    /// Hands the next committed record to `f` and releases it. `None` when empty.
    fn consume_one<T>(&mut self, mut f: impl FnMut(&[u8]) -> T) -> Option<T> {
        loop {
            let cons = self.consumer_pos().load(Ordering::Relaxed);
            let prod = self.producer_pos().load(Ordering::Acquire);
            if cons >= prod {
                return None;
            }
            let off = (cons as usize) & (self.data_size - 1);
            // SAFETY: off < data_size and the header lies inside the double-mapped data area.
            let hdr = unsafe { &*(self.producer.add(self.page + off) as *const AtomicU32) };
            let len_word = hdr.load(Ordering::Acquire);
            if len_word & BPF_RINGBUF_BUSY_BIT != 0 {
                return None; // reserved but not yet submitted
            }
            let len = (len_word & !(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT)) as usize;
            let next = cons + ((len + BPF_RINGBUF_HDR_SZ + 7) & !7) as u64;
            let out = if len_word & BPF_RINGBUF_DISCARD_BIT == 0 && len <= self.data_size {
                // SAFETY: the record [off+8, off+8+len) lies in the double mapping (len <= data_size).
                let rec = unsafe { std::slice::from_raw_parts(self.producer.add(self.page + off + BPF_RINGBUF_HDR_SZ), len) };
                Some(f(rec))
            } else {
                None
            };
            self.consumer_pos().store(next, Ordering::Release);
            if out.is_some() {
                return out;
            }
        }
    }

    fn has_data(&self) -> bool {
        self.consumer_pos().load(Ordering::Relaxed) < self.producer_pos().load(Ordering::Acquire)
    }
}

impl Drop for RingConsumer {
    fn drop(&mut self) {
        // SAFETY: both regions were mapped in new() with these lengths.
        unsafe {
            libc::munmap(self.consumer.cast(), self.page);
            libc::munmap(self.producer.cast(), self.page + 2 * self.data_size);
        }
    }
}

/// The receive side both endpoints share: the program on the interface and
/// its ring, read from user space.
struct PollFeed {
    ring: RingConsumer,
    /// Take `rx_ns` from the record the program time-stamped (`rx_stamp=xdp`).
    xdp_stamp: bool,
    // Declared last: detached after the ring is unmapped.
    prog: FilterProgram,
}

/// One record taken off the ring, judged by the receive rule ([`rx_rule`]):
/// delivered (its meta, bytes copied, bytes it had) or refused.
type Record<T> = Verdict<(T, usize, usize)>;

impl PollFeed {
    fn attach(spec: &EndpointSpec, dev: &NetDev, filter: FilterConfig) -> Result<(PollFeed, RxStamp)> {
        let rx_stamp = spec.rx_stamp(&[RxStamp::Xdp])?;
        let prog = FilterProgram::attach(OBJECT, "detpath_xdppoll", dev, spec.key("mode", None, keys::mode)?, filter.stamped(rx_stamp == RxStamp::Xdp))?;
        let map = prog.map_handle("dp_ring")?;
        let fd = map.as_fd().try_clone_to_owned().map_err(|e| Error::io("duplicating the ring buffer fd", e))?;
        let ring = RingConsumer::new(fd, 1 << 22)?;
        Ok((PollFeed { ring, xdp_stamp: rx_stamp == RxStamp::Xdp, prog }, rx_stamp))
    }

    /// Takes the next record off the ring and hands its frame and time stamp
    /// (the program's under `rx_stamp=xdp`, else now) to `parse`; `None` when the ring is empty.
    fn take<T>(&mut self, mut parse: impl FnMut(&[u8], u64) -> Record<T>) -> Option<Record<T>> {
        let xdp_stamp = self.xdp_stamp;
        self.ring.consume_one(|rec| {
            let frame_len = rec.get(..4).map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize);
            let Some(frame) = rec.get(RECORD_FRAME_OFFSET..RECORD_FRAME_OFFSET + frame_len) else { return Verdict::Malformed };
            let stamp =
                if xdp_stamp { rec.get(RECORD_STAMP_OFFSET..RECORD_FRAME_OFFSET).map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes"))) } else { 0 };
            let rx_ns = if stamp != 0 { stamp } else { monotonic_ns() };
            parse(frame, rx_ns)
        })
    }

    /// Waits per `mode` for `try_take` to deliver; `Ok(None)` when the wait ended with nothing.
    fn recv<T>(&mut self, mode: RecvMode, mut try_take: impl FnMut(&mut PollFeed) -> Option<T>) -> Result<Option<T>> {
        let wait = Wait::new(mode);
        loop {
            if let Some(t) = try_take(self) {
                return Ok(Some(t));
            }
            match wait.after_empty() {
                Step::GiveUp => return Ok(None),
                // A record may be in the ring that try_take could not take yet (being written): spin for it.
                Step::Sleep(_) if self.ring.has_data() => std::hint::spin_loop(),
                Step::Sleep(left) => wait_readable(self.ring.fd.as_raw_fd(), left, "the BPF ring buffer")?,
                Step::Spin => std::hint::spin_loop(),
            }
        }
    }

    /// `base` with the program's counters in.
    fn counters(&self, base: Counters) -> Counters {
        let s = self.prog.stats();
        Counters { rx_not_for_me: base.rx_not_for_me + s.passed, rx_kernel_dropped: s.dropped, ..base }
    }
}

/// Counts a delivered or refused record; returns what was delivered.
fn count<T>(counters: &mut Counters, got: Option<Record<T>>) -> Option<Option<T>> {
    match got? {
        Verdict::Deliver((t, copied, full)) => {
            rx_rule::count_delivered(counters, copied, full);
            Some(Some(t))
        }
        refused => {
            refused.count_refusal(counters);
            Some(None)
        }
    }
}

/// An open `xdppoll` endpoint: receives what its XDP program copies into a
/// BPF ring buffer (busy-polled), sends on a kernel UDP socket bound to the
/// same address and port.
pub(crate) struct XdpPollEndpoint {
    feed: PollFeed,
    tx: UdpSocket,
    local: SocketAddrV4,
    verify_checksum: bool,
    /// Datagrams arriving as IPv4 fragments, being put back together.
    defrag: Defrag,
    caps: Capabilities,
    counters: Counters,
}

fn open(spec: &EndpointSpec) -> Result<Box<dyn Endpoint>> {
    let dev = NetDev::lookup(spec.require_iface()?)?;
    dev.require_up()?;
    let addr = dev.pick_ipv4(spec.addr)?;
    let port = spec.require_port()?;
    let local = SocketAddrV4::new(addr, port);
    // Bind the transmit socket first: it reserves the port on this host, so
    // two endpoints cannot claim the same one.
    let tx = UdpSocket::bind(local).map_err(|e| Error::os(format!("binding UDP {local} for xdppoll transmit"), e, "CAP_NET_BIND_SERVICE"))?;
    let (feed, rx_stamp) = PollFeed::attach(spec, &dev, FilterConfig::udp(addr, port))?;
    let caps = Capabilities {
        datapath: "xdppoll",
        iface: Some(dev.name.clone()),
        xdp_mode: Some(feed.prog.mode()),
        max_payload: detpath_wire::max_payload_for_mtu(dev.mtu as usize),
        max_batch: 64,
        rx_stamp,
        notes: vec!["rx: BPF ring buffer (copy), tx: kernel UDP socket".into()],
        ..Default::default()
    };
    Ok(Box::new(XdpPollEndpoint { feed, tx, local, verify_checksum: spec.key("checksum", true, keys::checksum)?, defrag: Defrag::default(), caps, counters: Counters::default() }))
}

impl Endpoint for XdpPollEndpoint {
    fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn counters(&self) -> Counters {
        self.feed.counters(self.counters)
    }

    fn send_marked(&mut self, payload: &[u8], peer: SocketAddrV4, mark: crate::Mark) -> Result<()> {
        crate::endpoint::check_no_class(self.caps.datapath, mark)?;
        crate::datapath::udp::send_datagram(&self.tx, payload, peer, mark.tos(), &mut self.counters)
    }

    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        let rule = UdpRule { local: self.local, group: None, verify_checksum: self.verify_checksum };
        let (counters, defrag) = (&mut self.counters, &mut self.defrag);
        self.feed.recv(mode, |feed| loop {
            let got = feed.take(|frame, rx_ns| {
                rule.judge(frame, defrag, rx_ns).map(|d| {
                    let n = d.payload.len().min(buf.len());
                    buf[..n].copy_from_slice(&d.payload[..n]);
                    (RxMeta { len: n, truncated: n < d.payload.len(), peer: d.src, rx_ns }, n, d.payload.len())
                })
            });
            if let Some(m) = count(counters, got)? {
                return Some(m);
            }
        })
    }
}

/// The frame datapath on the same program and ring: the program matches the
/// spec's `port` as an EtherType (`xdppoll://dpa?port=7400`); frames go out
/// through an AF_PACKET socket (the `packet` frame datapath's).
pub static FRAME_DATAPATH: FrameDatapath = FrameDatapath {
    name: "xdppoll",
    summary: "XDP program → BPF ring buffer of one EtherType, busy-polled; TX via AF_PACKET",
    keys: &["mode", "rx_stamp", "sndbuf"],
    open: |spec| Ok(Box::new(XdpPollFrames::open(spec)?)),
};

/// An xdppoll frame endpoint.
pub(crate) struct XdpPollFrames {
    feed: PollFeed,
    tx: crate::datapath::packet::PacketEndpoint,
    mac: MacAddr,
    ethertype: u16,
    caps: Capabilities,
    counters: Counters,
}

impl XdpPollFrames {
    fn open(spec: &EndpointSpec) -> Result<XdpPollFrames> {
        let ethertype = spec.require_port()?;
        // The AF_PACKET socket checks the EtherType and the interface first;
        // it receives nothing: the program drops the frames it queues.
        let tx = crate::datapath::packet::PacketEndpoint::open(spec)?;
        let dev = NetDev::lookup(spec.require_iface()?)?;
        let (feed, rx_stamp) = PollFeed::attach(spec, &dev, FilterConfig::ethertype(ethertype))?;
        let caps = Capabilities {
            datapath: "xdppoll",
            iface: Some(dev.name.clone()),
            xdp_mode: Some(feed.prog.mode()),
            max_payload: (DP_POLL_MAX_FRAME - detpath_wire::ETH_HLEN).min(dev.mtu as usize),
            max_batch: 1,
            rx_stamp,
            notes: vec![format!("EtherType {ethertype:#06x}; rx: BPF ring buffer (copy), tx: AF_PACKET socket")],
            ..Default::default()
        };
        Ok(XdpPollFrames { feed, tx, mac: dev.mac, ethertype, caps, counters: Counters::default() })
    }
}

impl FrameEndpoint for XdpPollFrames {
    fn local_mac(&self) -> MacAddr {
        self.mac
    }
    fn ethertype(&self) -> u16 {
        self.ethertype
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn counters(&self) -> Counters {
        let tx = self.tx.counters();
        self.feed.counters(Counters { tx_packets: tx.tx_packets, tx_bytes: tx.tx_bytes, tx_errors: tx.tx_errors, ..self.counters })
    }
    fn send_frame(&mut self, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()> {
        self.tx.send_frame(payload, dst, ethertype)
    }
    fn recv_frame(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<FrameMeta>> {
        let (mac, counters) = (self.mac, &mut self.counters);
        self.feed.recv(mode, |feed| loop {
            let got = feed.take(|frame, rx_ns| {
                // Another host's unicast frame (a promiscuous link) is not ours.
                rx_rule::judge_frame(frame, mac, None).map(|f| {
                    let n = f.payload.len().min(buf.len());
                    buf[..n].copy_from_slice(&f.payload[..n]);
                    (FrameMeta { len: n, truncated: n < f.payload.len(), src: f.src, rx_ns }, n, f.payload.len())
                })
            });
            if let Some(m) = count(counters, got)? {
                return Some(m);
            }
        })
    }
}
