//! The endpoint API: one trait every datapath implements, and the types that
//! cross it (receive modes, receive metadata, batches, counters, capabilities).
//!
//! An endpoint owns one (IPv4 address, UDP port) on one interface and sends
//! UDP datagrams to peers and receives them from peers. Whatever the datapath,
//! what goes on the wire is a plain Ethernet/IPv4/UDP frame, so any two
//! datapaths interoperate.

use crate::error::Result;
use crate::error::{Error, TxCause};
use detpath_sys::XdpMode;
pub use detpath_wire::MacAddr;
use serde::Serialize;
use std::net::SocketAddrV4;
use std::time::Duration;

/// How a receive call waits when nothing is there yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvMode {
    /// Return `Ok(None)` / `Ok(0)` at once.
    NonBlocking,
    /// Spin on the ring or socket (no sleeping syscall) until a datagram
    /// arrives or the timeout passes (`None`: spin forever).
    BusyPoll {
        /// How long to spin at most; `None`: until a datagram comes.
        timeout: Option<Duration>,
    },
    /// Sleep in the kernel (poll) until a datagram arrives or the timeout passes.
    Blocking {
        /// How long to sleep at most (rounded up to a whole ms); `None`: until a datagram comes.
        timeout: Option<Duration>,
    },
}

/// What one receive delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxMeta {
    /// Payload bytes copied into the caller's buffer.
    pub len: usize,
    /// True when the datagram was longer than the buffer (the rest is lost, as with UDP sockets).
    pub truncated: bool,
    /// The sender.
    pub peer: SocketAddrV4,
    /// CLOCK_MONOTONIC nanoseconds when the datagram arrived, the same clock
    /// on every datapath. By default ([`RxStamp::User`]) when the endpoint took
    /// it off its ring or socket; with `rx_stamp=xdp` / `rx_stamp=kernel` when
    /// the XDP program or the kernel's receive path saw it
    /// ([`Capabilities::rx_stamp`] says which).
    pub rx_ns: u64,
}

/// Where [`RxMeta::rx_ns`] is taken: the spec key `rx_stamp`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RxStamp {
    /// When user space took the datagram off the ring or socket (includes
    /// the polling delay; what an application sees). Every datapath.
    #[default]
    User,
    /// When the endpoint's XDP program ran on the frame (`bpf_ktime_get_ns`,
    /// carried in XDP metadata or the ring record): afxdp, xdppoll.
    Xdp,
    /// When the kernel's receive path queued the packet (SO_TIMESTAMPNS): udp.
    Kernel,
}

impl RxStamp {
    /// The `rx_stamp=` value that asks for it: `user`, `xdp` or `kernel`.
    pub fn as_str(self) -> &'static str {
        match self {
            RxStamp::User => "user",
            RxStamp::Xdp => "xdp",
            RxStamp::Kernel => "kernel",
        }
    }
}

/// One datagram to send.
#[derive(Debug, Clone, Copy)]
pub struct TxDatagram<'a> {
    /// The UDP payload, bytes.
    pub payload: &'a [u8],
    /// The destination address and port.
    pub peer: SocketAddrV4,
}

/// Caller-owned receive batch: fixed capacity, allocated once, reused on every
/// call so the hot path allocates nothing.
pub struct RxBatch {
    slot_size: usize,
    data: Vec<u8>,
    metas: Vec<RxMeta>,
    len: usize,
}

impl RxBatch {
    /// A batch of `capacity` slots of `slot_size` bytes each.
    pub fn new(capacity: usize, slot_size: usize) -> RxBatch {
        let empty = RxMeta { len: 0, truncated: false, peer: SocketAddrV4::new([0, 0, 0, 0].into(), 0), rx_ns: 0 };
        RxBatch { slot_size, data: vec![0; capacity * slot_size], metas: vec![empty; capacity], len: 0 }
    }
    /// Slots: the most datagrams one receive fills.
    pub fn capacity(&self) -> usize {
        self.metas.len()
    }
    /// Datagrams the last receive delivered.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when the last receive delivered nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Datagram `i` of the last receive: its metadata and payload.
    pub fn get(&self, i: usize) -> Option<(&RxMeta, &[u8])> {
        (i < self.len).then(|| {
            let m = &self.metas[i];
            (m, &self.data[i * self.slot_size..i * self.slot_size + m.len])
        })
    }
    /// Each datagram of the last receive, in arrival order: metadata and payload.
    pub fn iter(&self) -> impl Iterator<Item = (&RxMeta, &[u8])> {
        (0..self.len).filter_map(move |i| self.get(i))
    }
    /// Empties the batch (receive calls do this first).
    pub fn clear(&mut self) {
        self.len = 0;
    }
    /// The buffer of the next free slot, for a datapath filling the batch.
    pub fn next_slot(&mut self) -> Option<&mut [u8]> {
        (self.len < self.metas.len()).then(|| {
            let at = self.len * self.slot_size;
            &mut self.data[at..at + self.slot_size]
        })
    }
    /// The free slots as one area (`slot_size` bytes each) and the slot
    /// size, for a datapath filling several slots in one system call; commit
    /// each filled slot in order afterwards.
    pub(crate) fn free_area(&mut self) -> (&mut [u8], usize) {
        let at = self.len * self.slot_size;
        (&mut self.data[at..], self.slot_size)
    }
    /// Commits the slot returned by [`next_slot`](Self::next_slot).
    pub fn commit(&mut self, meta: RxMeta) {
        if self.len < self.metas.len() {
            self.metas[self.len] = meta;
            self.len += 1;
        }
    }
}

/// One counter of [`Counters`]: its name (the struct field, the C and
/// Python key, the Prometheus metric `detpath_endpoint_<name>_total`), one
/// line of help, and how to read it.
#[derive(Debug, Clone, Copy)]
pub struct CounterField {
    /// The field's name, e.g. `rx_packets`.
    pub name: &'static str,
    /// One sentence saying what it counts.
    pub help: &'static str,
    /// Reads this counter of a [`Counters`].
    pub get: fn(&Counters) -> u64,
}

/// Declares [`Counters`] and its table [`Counters::FIELDS`] from one list,
/// so a new counter is one line here and appears in the C ABI (by name),
/// Python and Prometheus without more edits.
macro_rules! counters {
    ($($name:ident: $help:literal,)*) => {
        /// Counters every endpoint keeps. Fields a datapath does not have stay 0.
        /// Non-exhaustive: new counters can be added without breaking callers.
        /// [`Counters::FIELDS`] lists them (name, help, value) in declaration order.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
        #[non_exhaustive]
        #[repr(C)]
        pub struct Counters {
            $(#[doc = $help] pub $name: u64,)*
        }

        impl Counters {
            /// Every counter, in declaration order (the order of the C
            /// `struct detpath_counters`: new ones are only appended).
            pub const FIELDS: &'static [CounterField] = &[$(CounterField { name: stringify!($name), help: $help, get: |c| c.$name },)*];
        }
    };
}

counters! {
    rx_packets: "Datagrams received.",
    rx_bytes: "Payload bytes received.",
    tx_packets: "Datagrams sent.",
    tx_bytes: "Payload bytes sent.",
    rx_malformed: "Frames for this endpoint that failed parsing or checksums (dropped).",
    rx_not_for_me: "Frames the endpoint's XDP program or port saw that were not for it (passed on to the kernel stack or dropped).",
    rx_truncated: "Datagrams longer than the receive buffer (the excess was cut off).",
    rx_kernel_dropped: "Drops the kernel reports for this endpoint (socket buffer, AF_XDP RX ring or BPF ring full).",
    tx_ring_full: "Sends that found the TX ring or socket buffer full (retried, or dropped when it stayed full).",
    fill_ring_empty: "Times the kernel found the AF_XDP fill ring empty.",
    tx_errors: "Sends that failed for another reason (the error says which).",
    tx_no_route: "Datagrams not sent: the destination is not on a subnet of the interface (detpath sends on-link only).",
    tx_no_neigh: "Datagrams not sent: the destination's MAC address is not resolved (no ARP reply, or still resolving).",
}

impl Counters {
    /// How many counters there are ([`Counters::FIELDS`]`.len()`).
    pub const COUNT: usize = Self::FIELDS.len();
}

// Counters is plain u64s in table order (the C ABI copies it as such).
const _: () = assert!(std::mem::size_of::<Counters>() == Counters::COUNT * 8);

impl Counters {
    /// (name, value) of every counter, in [`Counters::FIELDS`] order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Self::FIELDS.iter().map(move |f| (f.name, (f.get)(self)))
    }

    /// The values in [`Counters::FIELDS`] order.
    pub fn values(&self) -> [u64; Self::COUNT] {
        std::array::from_fn(|i| (Self::FIELDS[i].get)(self))
    }

    /// The counter called `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<u64> {
        Self::FIELDS.iter().find(|f| f.name == name).map(|f| (f.get)(self))
    }

    /// Counts one datagram a send could not hand to the wire, under its
    /// cause (`tx_no_route`, `tx_no_neigh`, `tx_ring_full`, or `tx_errors`).
    pub fn count_tx_failure(&mut self, e: &Error) {
        match e.tx_cause() {
            TxCause::NoRoute => self.tx_no_route += 1,
            TxCause::NoNeighbour => self.tx_no_neigh += 1,
            TxCause::RingFull => self.tx_ring_full += 1,
            TxCause::Other => self.tx_errors += 1,
        }
    }
}

/// What the endpoint actually obtained (not what was asked for).
/// Non-exhaustive: optional features are added as fields, not trait methods.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// The datapath's name (`udp`, `afxdp`, ...).
    pub datapath: &'static str,
    /// The interface it is bound to (`None` for a socket bound to an address only).
    pub iface: Option<String>,
    /// The receive queue it serves (datapaths bound to one queue).
    pub queue: Option<u32>,
    /// How its XDP program is attached (XDP datapaths).
    pub xdp_mode: Option<XdpMode>,
    /// AF_XDP: zero-copy (true) or copy mode (false).
    pub zero_copy: Option<bool>,
    /// AF_XDP: the need_wakeup flag is in use.
    pub need_wakeup: Option<bool>,
    /// Socket busy polling (SO_BUSY_POLL / SO_PREFER_BUSY_POLL) in effect.
    pub busy_poll: bool,
    /// Largest payload one datagram can carry in one frame.
    pub max_payload: usize,
    /// Largest payload `send_to` takes: above `max_payload` the datapath sends
    /// it as IPv4 fragments, as a kernel does (0: the same as `max_payload`).
    pub max_datagram: usize,
    /// Largest batch one call moves.
    pub max_batch: usize,
    /// Where receive time stamps come from (`rx_stamp` key).
    pub rx_stamp: RxStamp,
    /// Anything else worth knowing about how the endpoint was set up.
    pub notes: Vec<String>,
}

impl Capabilities {
    /// One short line: "afxdp native copy q0 need_wakeup".
    pub fn summary(&self) -> String {
        let mut s = self.datapath.to_string();
        if let Some(m) = self.xdp_mode {
            s += &format!(" {}", m.as_str());
        }
        if let Some(zc) = self.zero_copy {
            s += if zc { " zero-copy" } else { " copy" };
        }
        if let Some(q) = self.queue {
            s += &format!(" q{q}");
        }
        if self.need_wakeup == Some(true) {
            s += " need_wakeup";
        }
        if self.busy_poll {
            s += " busy-poll";
        }
        if self.rx_stamp != RxStamp::User {
            s += &format!(" rx-stamp={}", self.rx_stamp.as_str());
        }
        s
    }
}

/// What one datagram asks of the network and of the endpoint: the DSCP of
/// its IPv4 header (RFC 2474: what routers, switches and the receiving
/// host's classifier read; 0 = best effort) and, on an endpoint with a slot
/// scheduler (`sched=slots&classes=...`), the traffic class whose slots it
/// leaves in ([`Endpoint::class_named`] gives the number). `Mark::NONE` is
/// an unmarked datagram: DSCP 0, the endpoint's default class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Mark {
    /// Differentiated Services code point, 0..=63 (the IPv4 TOS byte's upper six bits).
    pub dscp: u8,
    /// The slot scheduler's class; `None`: the endpoint's default (`send_class=`).
    pub class: Option<u16>,
}

impl Mark {
    /// Unmarked: DSCP 0, the default class.
    pub const NONE: Mark = Mark { dscp: 0, class: None };
    /// The largest DSCP (six bits).
    pub(crate) const MAX_DSCP: u8 = 63;

    /// A mark with this DSCP and the default class; an error above 63.
    pub fn dscp(dscp: u8) -> Result<Mark> {
        if dscp > Self::MAX_DSCP {
            return Err(Error::BadSpec { spec: format!("dscp={dscp}"), why: "a DSCP has six bits (0..=63)".into() });
        }
        Ok(Mark { dscp, class: None })
    }

    /// The IPv4 TOS byte this mark gives (DSCP << 2, ECN bits 0).
    pub fn tos(self) -> u8 {
        (self.dscp & Self::MAX_DSCP) << 2
    }
}

/// A datagram endpoint on one datapath. The trait every datapath implements.
///
/// Receive calls copy into caller-owned buffers; send calls copy out of the
/// caller's slices. Neither allocates.
pub trait Endpoint: Send {
    /// The (address, port) this endpoint owns.
    fn local_addr(&self) -> SocketAddrV4;

    /// What the endpoint obtained: mode, copy/zero-copy, queue, limits.
    fn capabilities(&self) -> &Capabilities;

    /// Counters so far (kernel-side counters are read when this is called).
    fn counters(&self) -> Counters;

    /// Sends one datagram, unmarked ([`Mark::NONE`]).
    fn send_to(&mut self, payload: &[u8], peer: SocketAddrV4) -> Result<()> {
        self.send_marked(payload, peer, Mark::NONE)
    }

    /// Sends one datagram with its DSCP and traffic class ([`Mark`]). Every
    /// datapath writes the DSCP into the IPv4 header it sends (the kernel's
    /// for `udp`, its own for `afxdp` and `dpdk`); a class needs a slot
    /// scheduler on the endpoint, and without one is refused.
    fn send_marked(&mut self, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> Result<()>;

    /// The number of the traffic class named `name`, for [`Mark::class`]:
    /// an error that names the classes there are, or that there is no
    /// scheduler on the endpoint (the default).
    fn class_named(&self, name: &str) -> Result<u16> {
        Err(no_scheduler(self.capabilities().datapath, name))
    }

    /// Receives one datagram into `buf`; `Ok(None)` when the mode's wait ended with nothing.
    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>>;

    /// Sends several datagrams; returns how many were sent (all, unless an error
    /// stopped it part way, in which case the error is returned if none went).
    fn send_batch(&mut self, batch: &[TxDatagram<'_>]) -> Result<usize> {
        for (i, d) in batch.iter().enumerate() {
            if let Err(e) = self.send_to(d.payload, d.peer) {
                return if i == 0 { Err(e) } else { Ok(i) };
            }
        }
        Ok(batch.len())
    }

    /// Receives up to the batch's capacity: waits per `mode` for the first
    /// datagram, then takes whatever else is ready without waiting.
    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> Result<usize> {
        batch.clear();
        let mut mode = mode;
        while let Some(slot) = batch.next_slot() {
            match self.recv(slot, mode)? {
                Some(meta) => batch.commit(meta),
                None => break,
            }
            mode = RecvMode::NonBlocking;
        }
        Ok(batch.len())
    }
}

/// What one frame receive delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameMeta {
    /// Payload bytes (after the Ethernet header) copied into the caller's buffer.
    pub len: usize,
    /// True when the payload was longer than the buffer (the rest is lost).
    pub truncated: bool,
    /// The sender's MAC address.
    pub src: MacAddr,
    /// CLOCK_MONOTONIC nanoseconds when the frame arrived, taken as
    /// [`RxMeta::rx_ns`] is (the `rx_stamp` key).
    pub rx_ns: u64,
}

/// An endpoint that sends and receives payloads in Ethernet frames of one
/// EtherType on one interface (see [`crate::frame`]). Receive copies into
/// caller buffers; neither direction allocates.
pub trait FrameEndpoint: Send {
    /// The interface's MAC address (the source of every frame sent).
    fn local_mac(&self) -> MacAddr;
    /// The EtherType this endpoint receives.
    fn ethertype(&self) -> u16;
    /// What the endpoint obtained (datapath, XDP mode, limits).
    fn capabilities(&self) -> &Capabilities;
    /// Counters so far; frames of our EtherType that are not for us (another
    /// unicast MAC) are `rx_not_for_me`, frames too short to parse `rx_malformed`.
    fn counters(&self) -> Counters;
    /// Sends `payload` in one frame to `dst` with `ethertype`.
    fn send_frame(&mut self, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()>;
    /// Receives one frame's payload into `buf`; `Ok(None)` when the mode's wait ended with nothing.
    fn recv_frame(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<FrameMeta>>;
}

/// The error for a traffic class asked of an endpoint without a slot scheduler.
pub(crate) fn no_scheduler(datapath: &'static str, class: &str) -> Error {
    Error::Unsupported {
        datapath,
        what: format!("traffic class `{class}` (no slot scheduler on this endpoint: add `sched=slots&classes=...` to its spec)"),
    }
}

/// A class in a mark refused by an endpoint without a scheduler ([`Endpoint::send_marked`]).
pub(crate) fn check_no_class(datapath: &'static str, mark: Mark) -> Result<()> {
    match mark.class {
        None => Ok(()),
        Some(c) => Err(no_scheduler(datapath, &c.to_string())),
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the one clock latency is measured with.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rx_batch_slots() {
        let mut b = RxBatch::new(2, 16);
        let peer: SocketAddrV4 = "1.2.3.4:5".parse().unwrap();
        b.next_slot().unwrap()[..3].copy_from_slice(b"abc");
        b.commit(RxMeta { len: 3, truncated: false, peer, rx_ns: 1 });
        b.next_slot().unwrap()[..1].copy_from_slice(b"z");
        b.commit(RxMeta { len: 1, truncated: false, peer, rx_ns: 2 });
        assert!(b.next_slot().is_none());
        let got: Vec<_> = b.iter().map(|(m, p)| (m.rx_ns, p.to_vec())).collect();
        assert_eq!(got, vec![(1, b"abc".to_vec()), (2, b"z".to_vec())]);
        b.clear();
        assert!(b.is_empty());
    }

    /// The table covers every field of `Counters` (serde sees the struct's
    /// fields independently of the macro's table), names are unique, and
    /// each entry reads its own field.
    #[test]
    fn counters_table_covers_every_field_once() {
        let mut c = Counters::default();
        // Give every field a distinct value through serde's view of the struct.
        let json = serde_json::to_value(c).unwrap();
        let fields: Vec<String> = json.as_object().unwrap().keys().cloned().collect();
        let names: Vec<&str> = Counters::FIELDS.iter().map(|f| f.name).collect();
        let mut sorted_fields = fields.clone();
        sorted_fields.sort();
        let mut sorted_names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        sorted_names.sort();
        assert_eq!(sorted_fields, sorted_names, "every Counters field is in the table");
        sorted_names.dedup();
        assert_eq!(sorted_names.len(), Counters::COUNT, "names unique");
        assert!(Counters::FIELDS.iter().all(|f| !f.help.is_empty() && f.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
        // Each entry reads the field of its own name: set one field at a
        // time (the struct is `repr(C)` u64s) and look for it in serde's output.
        for (i, f) in Counters::FIELDS.iter().enumerate() {
            let mut raw = [0u64; Counters::COUNT];
            raw[i] = 7;
            // SAFETY: Counters is repr(C) with COUNT u64 fields (asserted at compile time), so any [u64; COUNT] is a valid value.
            c = unsafe { std::mem::transmute::<[u64; Counters::COUNT], Counters>(raw) };
            let back = serde_json::to_value(c).unwrap();
            assert_eq!(back[f.name].as_u64(), Some(7), "{} reads its own field", f.name);
            assert_eq!((f.get)(&c), 7);
            assert_eq!(c.get(f.name), Some(7));
            assert_eq!(c.iter().filter(|(_, v)| *v != 0).count(), 1);
        }
        assert_eq!(c.values().len(), Counters::COUNT);
        assert_eq!(c.get("nope"), None);
    }
}
