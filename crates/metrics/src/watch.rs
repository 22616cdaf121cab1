//! Reading an endpoint's counters from another thread without slowing it.
//!
//! An endpoint is used by one thread (`&mut`), and `counters()` may make a
//! system call, so the metrics thread cannot read it directly. Instead the
//! endpoint is wrapped in a [`WatchedEndpoint`]: after each of its calls,
//! the polling thread does one relaxed atomic load of a "wanted" flag;
//! when the metrics thread has raised it, the polling thread copies the
//! counters into atomics and bumps a sequence number. Between scrapes the
//! cost is that one load: no lock, no allocation, no system call.

use detpath::layer::{EndpointHooks, Wrapped};
use detpath::{Capabilities, Counters, Endpoint, Mark, RecvMode, RxBatch, RxMeta, TxDatagram};
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many counters an endpoint has (detpath's counters table, `Counters::FIELDS`).
pub const COUNT: usize = Counters::COUNT;

/// The counters as an array in `Counters::FIELDS` order (name and help there).
pub fn values(c: &Counters) -> [u64; COUNT] {
    c.values()
}

/// What the metrics thread knows of one endpoint.
pub struct Watch {
    /// What the endpoint obtained (the info metric's labels).
    pub caps: Capabilities,
    /// Its local address.
    pub local: SocketAddrV4,
    want: AtomicBool,
    seq: AtomicU64,
    /// CLOCK_MONOTONIC ns of the last snapshot.
    taken_ns: AtomicU64,
    counters: [AtomicU64; COUNT],
    closed: AtomicBool,
}

/// One reading of a watched endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// The counters in `Counters::FIELDS` order.
    pub counters: [u64; COUNT],
    /// How old the counters are (the polling thread answers between its calls).
    pub age: Duration,
    /// The endpoint was closed: these are its final counters.
    pub closed: bool,
}

impl Watch {
    fn publish(&self, c: &Counters) {
        for (slot, v) in self.counters.iter().zip(values(c)) {
            slot.store(v, Ordering::Relaxed);
        }
        self.taken_ns.store(detpath::monotonic_ns(), Ordering::Relaxed);
        self.want.store(false, Ordering::Relaxed);
        self.seq.fetch_add(1, Ordering::Release);
    }

    /// Asks the polling thread for fresh counters and waits up to `wait` for
    /// them; returns what is there then (older counters if the thread is
    /// inside a long call).
    pub fn read(&self, wait: Duration) -> Reading {
        let closed = self.closed.load(Ordering::Acquire);
        if !closed {
            let before = self.seq.load(Ordering::Acquire);
            self.want.store(true, Ordering::Relaxed);
            let deadline = Instant::now() + wait;
            while self.seq.load(Ordering::Acquire) == before && Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(500));
            }
        }
        let _ = self.seq.load(Ordering::Acquire);
        let counters = std::array::from_fn(|i| self.counters[i].load(Ordering::Relaxed));
        let age = Duration::from_nanos(detpath::monotonic_ns().saturating_sub(self.taken_ns.load(Ordering::Relaxed)));
        Reading { counters, age, closed: self.closed.load(Ordering::Acquire) }
    }
}

/// The metrics layer's hooks: after each call the polling thread answers
/// a waiting scrape (see the module doc); when the endpoint closes, its
/// final counters are published and the watch marked closed.
pub struct WatchHooks {
    watch: Arc<Watch>,
}

/// An endpoint whose counters a metrics thread can read (forwarding by
/// detpath's [`Wrapped`]).
pub type WatchedEndpoint = Wrapped<WatchHooks>;

/// Wraps `inner`; the returned [`Watch`] is the metrics thread's side.
pub fn watched(inner: Box<dyn Endpoint>) -> (WatchedEndpoint, Arc<Watch>) {
    let watch = Arc::new(Watch {
        caps: inner.capabilities().clone(),
        local: inner.local_addr(),
        want: AtomicBool::new(false),
        seq: AtomicU64::new(0),
        taken_ns: AtomicU64::new(0),
        counters: std::array::from_fn(|_| AtomicU64::new(0)),
        closed: AtomicBool::new(false),
    });
    watch.publish(&inner.counters());
    (Wrapped::new(inner, WatchHooks { watch: watch.clone() }, |_| {}), watch)
}

impl WatchHooks {
    /// The hot-path check: one relaxed load unless a scrape is waiting.
    #[inline]
    fn answer_scrape(&self, inner: &dyn Endpoint) {
        if self.watch.want.load(Ordering::Relaxed) {
            self.watch.publish(&inner.counters());
        }
    }
}

impl EndpointHooks for WatchHooks {
    fn send(&mut self, inner: &mut dyn Endpoint, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> detpath::Result<()> {
        let r = inner.send_marked(payload, peer, mark);
        self.answer_scrape(inner);
        r
    }

    fn recv(&mut self, inner: &mut dyn Endpoint, buf: &mut [u8], mode: RecvMode) -> detpath::Result<Option<RxMeta>> {
        let r = inner.recv(buf, mode);
        self.answer_scrape(inner);
        r
    }

    fn send_batch(&mut self, inner: &mut dyn Endpoint, batch: &[TxDatagram<'_>]) -> detpath::Result<usize> {
        let r = inner.send_batch(batch);
        self.answer_scrape(inner);
        r
    }

    fn recv_batch(&mut self, inner: &mut dyn Endpoint, batch: &mut RxBatch, mode: RecvMode) -> detpath::Result<usize> {
        let r = inner.recv_batch(batch, mode);
        self.answer_scrape(inner);
        r
    }

    fn close(&mut self, inner: &dyn Endpoint) {
        self.watch.publish(&inner.counters());
        self.watch.closed.store(true, Ordering::Release);
    }
}
