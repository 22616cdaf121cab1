//! Reading an endpoint's counters from another thread without slowing it.
//!
//! An endpoint is used by one thread (`&mut`), and `counters()` may make a
//! system call, so the metrics thread cannot read it directly. Instead the
//! endpoint is wrapped in a [`WatchedEndpoint`]: after each of its calls,
//! the polling thread does one relaxed atomic load of a "wanted" flag;
//! when the metrics thread has raised it, the polling thread copies the
//! counters into atomics and bumps a sequence number. Between scrapes the
//! cost is that one load: no lock, no allocation, no system call.

use detpath::{Capabilities, Counters, Endpoint, RecvMode, RxBatch, RxMeta, TxDatagram};
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

/// An endpoint whose counters a metrics thread can read (see the module doc).
pub struct WatchedEndpoint {
    inner: Box<dyn Endpoint>,
    watch: Arc<Watch>,
}

impl WatchedEndpoint {
    /// Wraps `inner`; the returned [`Watch`] is the metrics thread's side.
    pub fn new(inner: Box<dyn Endpoint>) -> (WatchedEndpoint, Arc<Watch>) {
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
        (WatchedEndpoint { inner, watch: watch.clone() }, watch)
    }

    /// The hot-path check: one relaxed load unless a scrape is waiting.
    #[inline]
    fn answer_scrape(&self) {
        if self.watch.want.load(Ordering::Relaxed) {
            self.watch.publish(&self.inner.counters());
        }
    }
}

impl Drop for WatchedEndpoint {
    fn drop(&mut self) {
        self.watch.publish(&self.inner.counters());
        self.watch.closed.store(true, Ordering::Release);
    }
}

impl Endpoint for WatchedEndpoint {
    fn local_addr(&self) -> SocketAddrV4 {
        self.inner.local_addr()
    }

    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
    }

    fn counters(&self) -> Counters {
        self.inner.counters()
    }

    fn send_to(&mut self, payload: &[u8], peer: SocketAddrV4) -> detpath::Result<()> {
        let r = self.inner.send_to(payload, peer);
        self.answer_scrape();
        r
    }

    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> detpath::Result<Option<RxMeta>> {
        let r = self.inner.recv(buf, mode);
        self.answer_scrape();
        r
    }

    fn send_batch(&mut self, batch: &[TxDatagram<'_>]) -> detpath::Result<usize> {
        let r = self.inner.send_batch(batch);
        self.answer_scrape();
        r
    }

    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> detpath::Result<usize> {
        let r = self.inner.recv_batch(batch, mode);
        self.answer_scrape();
        r
    }
}
