//! The `fault` layer: wraps an endpoint of any datapath and
//! misbehaves on purpose, as smoltcp's `FaultInjector` wraps a device. For
//! tests and diagnosis: it is how the benchmark's loss, duplicate, reorder
//! and corruption accounting is proven over real datapaths.
//!
//! Spec: the endpoint's spec with the faults (any fault key puts the layer
//! on), or, as before, the scheme `fault` with the datapath in `inner=`.
//! Each fault is a list of 0-based **send indices** (the n-th call to `send_to`/one datagram of `send_batch` since
//! open; a server that echoes every probe once, in order, sends reply `n` to
//! probe `n`):
//!
//! ```text
//! fault://10.77.0.2:7000?inner=udp&drop=210,220&dup=230&delay=240:5ms,260:200ms&corrupt=280&corrupt_byte=16&rcvbuf=8388608
//! udp://10.77.0.2:7000?drop=210,220&rcvbuf=8388608
//! ```
//!
//! - `drop`: never sent. `refuse`: the send fails with the error of an
//!   unresolved neighbour (a per-datagram error, [`Error::is_per_datagram`]),
//!   as a kernel-bypass datapath's does while ARP is still resolving. `dup`: sent twice. `delay=N:D`: held and sent once
//!   `D` (`ns`, `us`, `ms`, `s`) has passed, on a later send or receive call
//!   (so later datagrams overtake it); if that late send fails for the
//!   datagram alone ([`Error::is_per_datagram`]: its source forged or
//!   unreachable), the inner endpoint has counted it by cause and the call
//!   goes on, as it would have had the send not been held. `corrupt`: byte `corrupt_byte`
//!   (default 0) XOR 0x5a before sending.
//! - `stall_rx=N:D`: after the N-th datagram received (0-based), the
//!   receiving call sleeps `D` before returning it, its receive timestamp
//!   unchanged: a server that is slow to handle it.
//! - Every other key is the datapath's (or another layer's).

use crate::endpoint::{monotonic_ns, Endpoint, FrameEndpoint, Mark, RecvMode, RxMeta, TxDatagram};
use crate::error::{Error, Result};
use crate::layer::{EndpointHooks, Layer, LayerKeys, Prepared, Wrapped};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddrV4;

/// The fault layer.
pub static LAYER: FaultLayer = FaultLayer;

/// The fault layer (see the module's text).
pub struct FaultLayer;

/// The keys of the injector.
const KEYS: &[&str] = &["drop", "refuse", "dup", "delay", "corrupt", "corrupt_byte", "stall_rx"];

impl Layer for FaultLayer {
    fn name(&self) -> &'static str {
        "fault"
    }
    fn summary(&self) -> &'static str {
        "drops, duplicates, delays or corrupts chosen sends (tests); as a scheme: fault://...?inner=<datapath>"
    }
    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }
    fn check(&self, keys: &LayerKeys) -> std::result::Result<(), String> {
        FaultPlan::from_keys(keys).map(|_| ())
    }
    fn prepare(&self, keys: &LayerKeys, spec: &str) -> Result<Box<dyn Prepared>> {
        Ok(Box::new(FaultPlan::from_keys(keys).map_err(|why| Error::BadSpec { spec: spec.to_string(), why })?))
    }
}

impl Prepared for FaultPlan {
    fn wrap(self: Box<Self>, ep: Box<dyn Endpoint>) -> Result<Box<dyn Endpoint>> {
        Ok(Box::new(FaultInjector::wrap(ep, *self)))
    }
    fn wrap_frames(self: Box<Self>, _: Box<dyn FrameEndpoint>) -> Result<Box<dyn FrameEndpoint>> {
        Err(crate::layer::unsupported("fault", "frame endpoints"))
    }
}

/// Which sends misbehave, by 0-based send index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// Sends not passed on at all (`drop=`).
    pub drop: BTreeSet<u64>,
    /// Sends that fail with a per-datagram error (`refuse=`), nothing sent.
    pub refuse: BTreeSet<u64>,
    /// Sends passed on twice, back to back (`dup=`; not for a delayed send).
    pub duplicate: BTreeSet<u64>,
    /// Send index -> hold time in ns.
    pub delay: BTreeMap<u64, u64>,
    /// Sends whose byte `corrupt_byte` is flipped (`corrupt=`; a payload too short for it is sent unchanged).
    pub corrupt: BTreeSet<u64>,
    /// Offset of the byte `corrupt` flips.
    pub corrupt_byte: usize,
    /// Receive index -> how long the receiving call sleeps before returning it (ns).
    pub stall_rx: BTreeMap<u64, u64>,
}

/// A fault duration (`5ms`, `250us`); a bare number is ns.
fn parse_duration_ns(s: &str) -> Option<u64> {
    detpath_sys::units::parse_duration_ns(s, detpath_sys::units::Unit::Nanos).ok()
}

impl FaultPlan {
    /// Reads the fault keys (the message names the key).
    pub fn from_keys(keys: &LayerKeys) -> std::result::Result<FaultPlan, String> {
        let list = |key: &str| -> std::result::Result<BTreeSet<u64>, String> {
            let Some(v) = keys.get(key) else { return Ok(BTreeSet::new()) };
            v.split(',').filter(|x| !x.is_empty()).map(|x| x.parse::<u64>().map_err(|_| format!("`{key}` takes send indices like 3,7,12, not `{x}`"))).collect()
        };
        let timed = |key: &str| -> std::result::Result<BTreeMap<u64, u64>, String> {
            let mut m = BTreeMap::new();
            for item in keys.get(key).map(String::as_str).unwrap_or("").split(',').filter(|x| !x.is_empty()) {
                let parsed = item.split_once(':').and_then(|(i, d)| Some((i.parse::<u64>().ok()?, parse_duration_ns(d)?)));
                let (i, ns) = parsed.ok_or_else(|| format!("`{key}` takes INDEX:DURATION items like 240:5ms, not `{item}`"))?;
                m.insert(i, ns);
            }
            Ok(m)
        };
        let delay = timed("delay")?;
        let corrupt_byte = match keys.get("corrupt_byte") {
            None => 0,
            Some(v) => v.parse().map_err(|_| format!("`corrupt_byte` takes a byte offset, not `{v}`"))?,
        };
        Ok(FaultPlan {
            drop: list("drop")?,
            refuse: list("refuse")?,
            duplicate: list("dup")?,
            delay,
            corrupt: list("corrupt")?,
            corrupt_byte,
            stall_rx: timed("stall_rx")?,
        })
    }
}

/// What the injector did, for the capabilities' notes and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Injected {
    /// Datagrams dropped.
    pub dropped: u64,
    /// Sends refused with a per-datagram error.
    pub refused: u64,
    /// Datagrams sent a second time.
    pub duplicated: u64,
    /// Datagrams held back (sent when due).
    pub delayed: u64,
    /// Held datagrams whose late send failed for that datagram alone
    /// (counted by cause in the inner endpoint's counters too).
    pub delayed_not_sent: u64,
    /// Datagrams sent with a flipped byte.
    pub corrupted: u64,
}

/// The injector's state: what a [`FaultPlan`] does to the sends of the endpoint it wraps.
pub struct FaultHooks {
    plan: FaultPlan,
    sends: u64,
    receives: u64,
    /// Delayed datagrams: (due time, payload, peer).
    held: Vec<(u64, Vec<u8>, SocketAddrV4, Mark)>,
    injected: Injected,
}

/// An endpoint that sends through its inner endpoint according to a [`FaultPlan`].
pub type FaultInjector = Wrapped<FaultHooks>;

impl FaultInjector {
    /// Wraps an open endpoint.
    pub fn wrap(inner: Box<dyn Endpoint>, plan: FaultPlan) -> FaultInjector {
        let note = format!(
            "fault injector over {}: drop {:?} refuse {:?} dup {:?} delay {:?} corrupt {:?} (send indices)",
            inner.capabilities().datapath,
            plan.drop,
            plan.refuse,
            plan.duplicate,
            plan.delay,
            plan.corrupt
        );
        let hooks = FaultHooks { plan, sends: 0, receives: 0, held: Vec::new(), injected: Injected::default() };
        Wrapped::new(inner, hooks, |c| {
            c.notes.push(note);
            c.datapath = "fault";
        })
    }

    /// What was injected so far.
    pub fn injected(&self) -> Injected {
        self.hooks().injected
    }
}

impl FaultHooks {
    /// Sends the held datagrams that are due. A send that fails for that
    /// datagram alone is counted, not returned: the call it happens in
    /// (a receive, another datagram's send) is not the one that sent it,
    /// and a server would end on it (only endpoint errors are returned).
    fn release_due(&mut self, inner: &mut dyn Endpoint) -> Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let now = monotonic_ns();
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].0 <= now {
                let (_, payload, peer, mark) = self.held.swap_remove(i);
                match inner.send_marked(&payload, peer, mark) {
                    Ok(()) => {}
                    Err(e) if e.is_per_datagram() => self.injected.delayed_not_sent += 1,
                    Err(e) => return Err(e),
                }
            } else {
                i += 1;
            }
        }
        Ok(())
    }
}

impl EndpointHooks for FaultHooks {
    fn send(&mut self, inner: &mut dyn Endpoint, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> Result<()> {
        self.release_due(inner)?;
        let n = self.sends;
        self.sends += 1;
        if self.plan.drop.contains(&n) {
            self.injected.dropped += 1;
            return Ok(());
        }
        if self.plan.refuse.contains(&n) {
            self.injected.refused += 1;
            return Err(Error::NoNeighbour { peer: *peer.ip(), iface: "fault".into(), why: "refused by the fault layer (refuse=)" });
        }
        let mut owned;
        let mut payload = payload;
        if self.plan.corrupt.contains(&n) && self.plan.corrupt_byte < payload.len() {
            owned = payload.to_vec();
            owned[self.plan.corrupt_byte] ^= 0x5a;
            payload = &owned;
            self.injected.corrupted += 1;
        }
        if let Some(&ns) = self.plan.delay.get(&n) {
            self.held.push((monotonic_ns() + ns, payload.to_vec(), peer, mark));
            self.injected.delayed += 1;
            return Ok(());
        }
        inner.send_marked(payload, peer, mark)?;
        if self.plan.duplicate.contains(&n) {
            inner.send_marked(payload, peer, mark)?;
            self.injected.duplicated += 1;
        }
        Ok(())
    }

    /// One datagram at a time, so each has its send index.
    fn send_batch(&mut self, inner: &mut dyn Endpoint, batch: &[TxDatagram<'_>]) -> Result<usize> {
        for (i, d) in batch.iter().enumerate() {
            if let Err(e) = self.send(inner, d.payload, d.peer, Mark::NONE) {
                return if i == 0 { Err(e) } else { Ok(i) };
            }
        }
        Ok(batch.len())
    }

    fn recv(&mut self, inner: &mut dyn Endpoint, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        self.release_due(inner)?;
        // While something is held, wait in short slices so it goes out on time.
        let mode = if self.held.is_empty() { mode } else { RecvMode::NonBlocking };
        let got = inner.recv(buf, mode)?;
        if got.is_some() {
            if let Some(&ns) = self.plan.stall_rx.get(&self.receives) {
                std::thread::sleep(std::time::Duration::from_nanos(ns));
            }
            self.receives += 1;
        }
        Ok(got)
    }

    /// One datagram at a time, so each has its receive index.
    fn recv_batch(&mut self, inner: &mut dyn Endpoint, batch: &mut crate::endpoint::RxBatch, mode: RecvMode) -> Result<usize> {
        batch.clear();
        let mut mode = mode;
        while let Some(slot) = batch.next_slot() {
            match self.recv(inner, slot, mode)? {
                Some(meta) => batch.commit(meta),
                None => break,
            }
            mode = RecvMode::NonBlocking;
        }
        Ok(batch.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_parse_and_errors_name_the_key() {
        let s: crate::EndpointSpec =
            "fault://10.0.0.1:7?inner=udp&drop=1,2&dup=3&delay=4:5ms,6:200us&corrupt=7&corrupt_byte=16&stall_rx=9:1ms".parse().unwrap();
        assert_eq!(s.datapath, "udp");
        assert_eq!(s.layers.len(), 1);
        let p = FaultPlan::from_keys(&s.layers[0].keys).unwrap();
        assert_eq!(p.drop, [1, 2].into());
        assert_eq!(p.duplicate, [3].into());
        assert_eq!(p.delay, [(4, 5_000_000), (6, 200_000)].into());
        assert_eq!((p.corrupt, p.corrupt_byte), ([7].into(), 16));
        assert_eq!(p.stall_rx, [(9, 1_000_000)].into());
        for (spec, needle) in [
            ("fault://10.0.0.1:7?inner=udp&drop=x", "`drop` takes send indices"),
            ("fault://10.0.0.1:7?inner=udp&delay=4", "`delay` takes INDEX:DURATION"),
            ("fault://10.0.0.1:7?inner=udp&delay=4:5parsecs", "`delay` takes INDEX:DURATION"),
        ] {
            let e = spec.parse::<crate::EndpointSpec>().unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
        assert_eq!(parse_duration_ns("1s"), Some(1_000_000_000));
        assert_eq!(parse_duration_ns("42"), Some(42));
    }

    #[test]
    fn an_inner_datapath_is_required_and_checked() {
        let e = crate::open("fault://127.0.0.1:0").err().unwrap().to_string();
        assert!(e.contains("inner=<datapath>"), "{e}");
        let e = crate::open("fault://127.0.0.1:0?inner=nosuch").err().unwrap().to_string();
        assert!(e.contains("unknown datapath `nosuch`") && e.contains("udp"), "{e}");
        let e = crate::open("fault://127.0.0.1:0?inner=udp&zerocopy=true").err().unwrap().to_string();
        assert!(e.contains("udp datapath has no key `zerocopy`"), "{e}");
    }

    #[test]
    fn faults_happen_at_their_send_index_over_a_real_socket() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_millis(500))).unwrap();
        let std::net::SocketAddr::V4(to) = rx.local_addr().unwrap() else { unreachable!() };
        let mut ep = crate::open("fault://127.0.0.1:0?inner=udp&drop=1&dup=2&delay=3:20ms&corrupt=4&corrupt_byte=0").unwrap();
        assert_eq!(ep.capabilities().datapath, "fault");
        for i in 0u8..6 {
            ep.send_to(&[i, 9], to).unwrap();
        }
        // The delayed datagram goes out on a later call once due.
        std::thread::sleep(std::time::Duration::from_millis(25));
        let mut b = [0u8; 8];
        assert!(ep.recv(&mut b, RecvMode::NonBlocking).unwrap().is_none());
        let mut got = Vec::new();
        while let Ok(n) = rx.recv(&mut b) {
            got.push(b[..n].to_vec());
        }
        assert_eq!(got, vec![vec![0, 9], vec![2, 9], vec![2, 9], vec![4 ^ 0x5a, 9], vec![5, 9], vec![3, 9]]);
    }

    /// A held echo to a forged source (port 0: the kernel refuses it,
    /// EINVAL, for that datagram alone) fails on a later call: counted by the
    /// inner endpoint, and neither that receive nor that send fails (a server
    /// would end on it).
    #[test]
    fn a_held_send_failing_for_its_datagram_alone_is_counted_not_returned() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_millis(500))).unwrap();
        let std::net::SocketAddr::V4(to) = rx.local_addr().unwrap() else { unreachable!() };
        let forged = SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 0);
        let mut ep = crate::open("udp://127.0.0.1:0?delay=0:1ms,1:1ms").unwrap();
        let mut b = [0u8; 8];
        // Released by a receive.
        ep.send_to(b"to a forged source", forged).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(matches!(ep.recv(&mut b, RecvMode::NonBlocking), Ok(None)), "the receive goes on");
        assert_eq!(ep.counters().tx_errors, 1, "counted as the udp datapath counts it");
        // Released by another datagram's send, which is not refused for it.
        ep.send_to(b"forged again", forged).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        ep.send_to(&[7, 9], to).unwrap();
        assert_eq!(ep.counters().tx_errors, 2);
        let n = rx.recv(&mut b).unwrap();
        assert_eq!(&b[..n], &[7, 9]);
    }
}
