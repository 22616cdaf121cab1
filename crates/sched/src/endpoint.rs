//! [`SchedEndpoint`]: the slot scheduler wrapped around any
//! `detpath::Endpoint`, so every datapath (udp, afxdp, xdppoll, dpdk) sends
//! on a schedule.
//!
//! The slots are paced by CLOCK_MONOTONIC ([`MonotonicSource`] with epoch 0:
//! slot `k` starts at `k · slot_ns` ns of CLOCK_MONOTONIC, so two schedulers on
//! one host agree on slot boundaries) and the slot clock initially reads
//! CLOCK_MONOTONIC. The caller's real-time thread calls
//! [`poll`](SchedEndpoint::poll) in its loop; it hands each due packet to the
//! endpoint's `send_to`. No allocation and no lock on that path.

use crate::clock::{MonotonicSource, TickSource};
use crate::config::{ConfigError, SchedConfig};
use crate::sched::{PollSummary, Refusal, Release, Scheduled, Scheduler};
use detpath::{monotonic_ns, Endpoint, Mark, RecvMode, RxMeta};
use std::net::SocketAddrV4;

/// A datapath endpoint that transmits through a slot scheduler.
pub struct SchedEndpoint<S: TickSource = MonotonicSource> {
    ep: Box<dyn Endpoint>,
    sched: Scheduler<S>,
}

impl SchedEndpoint<MonotonicSource> {
    /// Wraps `ep` with a scheduler for `cfg`, paced by CLOCK_MONOTONIC.
    pub fn new(ep: Box<dyn Endpoint>, cfg: &SchedConfig) -> Result<SchedEndpoint<MonotonicSource>, ConfigError> {
        SchedEndpoint::with_source(ep, cfg, MonotonicSource { epoch_mono: 0 }, 0)
    }
}

impl<S: TickSource> SchedEndpoint<S> {
    /// Wraps `ep` with a scheduler counting slots with `source`, its clock
    /// reading `time_at_epoch` at the source's epoch.
    pub fn with_source(ep: Box<dyn Endpoint>, cfg: &SchedConfig, source: S, time_at_epoch: u64) -> Result<SchedEndpoint<S>, ConfigError> {
        let sched = Scheduler::new(cfg, source, time_at_epoch, monotonic_ns())?;
        Ok(SchedEndpoint { ep, sched })
    }

    /// Schedules a real-time packet for slot-clock time `time_ns` (see [`Scheduler::send_at`]).
    pub fn send_at(&mut self, time_ns: u64, class: usize, payload: &[u8], peer: SocketAddrV4) -> Result<Scheduled, Refusal> {
        self.sched.send_at(monotonic_ns(), time_ns, class, payload, peer)
    }

    /// Queues a best-effort packet (see [`Scheduler::send_be`]).
    pub fn send_be(&mut self, class: usize, payload: &[u8], peer: SocketAddrV4) -> Result<(), Refusal> {
        self.sched.send_be(class, payload, peer)
    }

    /// A real-time packet marked with `dscp` in its class's first free slot
    /// past the insertion lead (see `Scheduler::send_asap_marked`).
    pub(crate) fn send_asap_marked(&mut self, class: usize, payload: &[u8], peer: SocketAddrV4, dscp: u8) -> Result<Scheduled, Refusal> {
        self.sched.send_asap_marked(monotonic_ns(), class, payload, peer, dscp)
    }

    /// [`send_be`](Self::send_be) for a packet marked with `dscp`.
    pub(crate) fn send_be_marked(&mut self, class: usize, payload: &[u8], peer: SocketAddrV4, dscp: u8) -> Result<(), Refusal> {
        self.sched.send_be_marked(class, payload, peer, dscp)
    }

    /// Releases every slot due by `now` (CLOCK_MONOTONIC ns) through the endpoint.
    pub fn poll(&mut self, now: u64) -> PollSummary {
        self.poll_observed(now, |_, _| {})
    }

    /// Like [`poll`](Self::poll), and calls `observe` with each release and
    /// whether the endpoint took it (for measurements).
    pub fn poll_observed(&mut self, now: u64, mut observe: impl FnMut(&Release<'_>, bool)) -> PollSummary {
        let ep = &mut self.ep;
        self.sched.poll(now, monotonic_ns, |r| {
            let ok = ep.send_marked(r.payload, r.peer, Mark { dscp: r.dscp, class: None }).is_ok();
            observe(r, ok);
            ok
        })
    }

    /// Like [`poll_observed`](Self::poll_observed), and if the next busy slot
    /// starts within `spin_ns`, spins until it starts and releases it then
    /// (see [`Scheduler::poll_spin`]): the hand-off follows the clock reading
    /// that found the slot started, with the lookup done before.
    pub fn poll_spin_observed(&mut self, now: u64, spin_ns: u64, mut observe: impl FnMut(&Release<'_>, bool)) -> PollSummary {
        let ep = &mut self.ep;
        self.sched.poll_spin(now, spin_ns, monotonic_ns, |r| {
            let ok = ep.send_marked(r.payload, r.peer, Mark { dscp: r.dscp, class: None }).is_ok();
            observe(r, ok);
            ok
        })
    }

    /// Receives one datagram (the endpoint's own receive; the scheduler only transmits).
    pub fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> detpath::Result<Option<RxMeta>> {
        self.ep.recv(buf, mode)
    }

    /// The scheduler (counters, clock, classes).
    pub fn scheduler(&self) -> &Scheduler<S> {
        &self.sched
    }
    /// The scheduler, e.g. to steer its clock.
    pub(crate) fn scheduler_mut(&mut self) -> &mut Scheduler<S> {
        &mut self.sched
    }
    /// The wrapped endpoint.
    pub fn endpoint(&self) -> &dyn Endpoint {
        self.ep.as_ref()
    }
    /// The wrapped endpoint, for sends that bypass the schedule.
    pub(crate) fn endpoint_mut(&mut self) -> &mut dyn Endpoint {
        self.ep.as_mut()
    }
    /// Unwraps the endpoint.
    pub fn into_inner(self) -> Box<dyn Endpoint> {
        self.ep
    }
}
