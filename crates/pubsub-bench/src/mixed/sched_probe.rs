//! The slot scheduler's own counters in the mixed experiment's priority
//! arm: each side's endpoint is opened as a concrete
//! [`SlotsEndpoint`] and wrapped in a [`Probed`] endpoint, which the
//! pub-sub transport drives like any other, and which copies the
//! scheduler's per-class counters and release-error histograms when the
//! run asks ([`SchedProbe::mark`], at each phase boundary) and when it is
//! dropped. The phases' figures are the differences of two snapshots, so
//! the bulk-on phase and the bulk-alone phase are told apart.
//!
//! Why it is measured: the scheduler is where control could wait behind
//! bulk (a poll that releases its due slots in slot order), where bulk can
//! lose slots (`missed_slots`: a best-effort slot whose poll came after the
//! late tolerance), and where a class can refuse a packet (its pre-buffer
//! full, ENOBUFS to the pub-sub engine, which then waits for a NACK).

use detpath::{Capabilities, Counters, Endpoint, Mark, RecvMode, RxBatch, RxMeta};
use detpath_sched::{ClassCounters, ErrorSummary, SlotsEndpoint};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One class's counters at one instant (or over a phase, as a difference).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassFigures {
    /// The class's name (`ctl`, `bulk`).
    pub class: String,
    /// Packets the class accepted.
    pub accepted: u64,
    /// Packets handed to the datapath.
    pub sent: u64,
    /// Real-time packets that missed their slot.
    pub late: u64,
    /// Real-time packets moved to a later slot (relaxed mode).
    pub moved: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Best-effort slots passed unused because the poll came after the late tolerance.
    pub missed_slots: u64,
    /// Sends the class refused (its pre-buffer full, or no slot): the engine saw an error.
    pub refused: u64,
    /// Most packets the class's pre-buffer held at once (whole run, not a difference).
    pub prebuffer_high_water: u64,
    /// Release error (hand-off time minus the slot's start), ns.
    pub release_error_ns: ErrorSummary,
}

/// A snapshot: every class, with its release-error histogram for differences.
#[derive(Clone)]
struct Snapshot {
    counters: Vec<(String, ClassCounters, u64)>,
    hists: Vec<Histogram<u64>>,
}

/// Shared between a [`Probed`] endpoint and the thread that runs the phases.
#[derive(Default)]
pub struct SchedProbe {
    /// Snapshots asked for so far.
    want: AtomicUsize,
    snaps: Mutex<Vec<Snapshot>>,
    last: Mutex<Option<Snapshot>>,
}

impl SchedProbe {
    /// Asks for a snapshot: the endpoint takes it at its next send or receive.
    pub fn mark(&self) {
        self.want.fetch_add(1, Ordering::Relaxed);
    }

    /// Snapshots taken (at the marks), in order.
    pub fn marks(&self) -> usize {
        self.snaps.lock().map_or(0, |s| s.len())
    }

    /// The figures between mark `a` and mark `b` (`b` = `None`: the end of
    /// the run); `a` = `None`: from the start. Empty when a mark is missing.
    pub fn between(&self, a: Option<usize>, b: Option<usize>) -> Vec<ClassFigures> {
        let snaps = match self.snaps.lock() {
            Ok(s) => s.clone(),
            Err(_) => return Vec::new(),
        };
        let last = self.last.lock().ok().and_then(|l| l.clone());
        let end = match b {
            Some(i) => snaps.get(i).cloned(),
            None => last,
        };
        let Some(end) = end else { return Vec::new() };
        let start = match a {
            Some(i) => match snaps.get(i) {
                Some(s) => Some(s.clone()),
                None => return Vec::new(),
            },
            None => None,
        };
        end.counters
            .iter()
            .enumerate()
            .map(|(i, (name, k, refused))| {
                let (k0, r0) = start.as_ref().map_or((ClassCounters::default(), 0), |s| (s.counters[i].1, s.counters[i].2));
                let mut h = end.hists[i].clone();
                if let Some(s) = &start {
                    // The start's counts are a subset of the end's: this cannot fail.
                    let _ = h.subtract(&s.hists[i]);
                }
                ClassFigures {
                    class: name.clone(),
                    accepted: k.accepted - k0.accepted,
                    sent: k.sent - k0.sent,
                    late: k.late - k0.late,
                    moved: k.moved - k0.moved,
                    dropped: k.dropped - k0.dropped,
                    missed_slots: k.missed_slots - k0.missed_slots,
                    refused: refused - r0,
                    prebuffer_high_water: k.prebuffer_high_water,
                    release_error_ns: ErrorSummary::of(&h),
                }
            })
            .collect()
    }
}

/// A [`SlotsEndpoint`] that keeps its scheduler's figures for a [`SchedProbe`].
pub struct Probed {
    inner: SlotsEndpoint,
    probe: Arc<SchedProbe>,
    taken: usize,
    /// Sends refused, per class.
    refused: Vec<u64>,
    /// The class of an unmarked send (`send_class`, the first best-effort class).
    default_class: usize,
}

impl Probed {
    /// Wraps `inner`; its figures go to `probe`.
    pub fn new(inner: SlotsEndpoint, probe: Arc<SchedProbe>) -> Probed {
        let s = inner.scheduler();
        let n = s.class_count();
        let default_class = (0..n).find(|&i| s.class_kind(i) == Some(detpath_sched::ClassKind::BestEffort)).unwrap_or(0);
        Probed { inner, probe, taken: 0, refused: vec![0; n], default_class }
    }

    fn snapshot(&self) -> Snapshot {
        let s = self.inner.scheduler();
        let mut counters = Vec::new();
        let mut hists = Vec::new();
        for i in 0..s.class_count() {
            let name = s.class_name(i).unwrap_or("?").to_string();
            counters.push((name, s.counters(i).unwrap_or_default(), self.refused[i]));
            if let Some(h) = s.release_error(i) {
                hists.push(h.clone());
            }
        }
        Snapshot { counters, hists }
    }

    /// Takes the snapshots asked for since the last look.
    fn look(&mut self) {
        let want = self.probe.want.load(Ordering::Relaxed);
        if want > self.taken {
            let snap = self.snapshot();
            if let Ok(mut s) = self.probe.snaps.lock() {
                while s.len() < want {
                    s.push(snap.clone());
                }
            }
            self.taken = want;
        }
    }
}

impl Drop for Probed {
    fn drop(&mut self) {
        let snap = self.snapshot();
        if let Ok(mut l) = self.probe.last.lock() {
            *l = Some(snap);
        }
    }
}

impl Endpoint for Probed {
    fn local_addr(&self) -> SocketAddrV4 {
        self.inner.local_addr()
    }
    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
    }
    fn counters(&self) -> Counters {
        self.inner.counters()
    }
    fn send_marked(&mut self, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> detpath::Result<()> {
        self.look();
        let r = self.inner.send_marked(payload, peer, mark);
        if r.is_err() {
            let c = mark.class.map_or(self.default_class, usize::from);
            if let Some(n) = self.refused.get_mut(c) {
                *n += 1;
            }
        }
        r
    }
    fn class_named(&self, name: &str) -> detpath::Result<u16> {
        self.inner.class_named(name)
    }
    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> detpath::Result<Option<RxMeta>> {
        self.look();
        self.inner.recv(buf, mode)
    }
    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> detpath::Result<usize> {
        self.look();
        self.inner.recv_batch(batch, mode)
    }
}
