//! The two senders: through the slot scheduler, and clock_nanosleep-then-send.
//! Both follow the run's [`Timeline`]: instances that fall in a pause are
//! skipped (their sequence numbers too, so no inter-arrival pair spans a
//! pause), and the threads sleep through the pauses.

use super::probe_payload::{Header, FLOOD_FLOW, HEADER_LEN};
use super::timeline::Timeline;
use super::BenchConfig;
use detpath::sys::cputime::{ThreadCpu, ThreadMeter};
use detpath::{monotonic_ns, Endpoint};
use detpath_sched::config::{ClassKind, Mode};
use detpath_sched::endpoint::SchedEndpoint;
use detpath_sched::sched::{ClassCounters, Refusal};
use hdrhistogram::Histogram;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The flood stops this long before a pause, so its queue is empty when the pause starts.
pub(crate) const FLOOD_MARGIN_NS: u64 = 2_000_000;
/// A sender wakes this long before a segment starts (the slots sender submits up to `lookahead` ahead).
const WAKE_BEFORE_NS: u64 = 3_000_000;
/// The slots sender spins on the clock when a busy slot starts within this time.
const SPIN_NS: u64 = 3_000;

/// What the sender measured.
pub struct Sent {
    pub endpoint: String,
    /// Per class (config order): counters and the release-error histogram of the measured window.
    pub classes: Vec<(ClassCounters, Histogram<u64>)>,
    /// Real-time release errors of the measured window, all classes.
    pub release: Histogram<u64>,
    /// How long the datapath's send call took (real-time packets, measured window).
    pub send_cost: Histogram<u64>,
    pub violations: u64,
    /// Per flow (config order).
    pub flows: Vec<FlowSent>,
    /// The best-effort flood in the measured window (all zero from the
    /// sleep sender, which has no flood).
    pub be: BeWindow,
    /// CPU time of the sending threads over the run.
    pub threads: Vec<ThreadCpu>,
}

/// What the slots sender's best-effort flood did in the measured window.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BeWindow {
    /// Best-effort packets released in flood-active slots.
    pub released: u64,
    /// Flood-active slots.
    pub slots: u64,
    /// Best-effort slots that passed unused because the poll came too late
    /// (the class's `missed_slots` over the window).
    pub missed: u64,
    /// Flood packets the source generated (offered load).
    pub offered: u64,
    /// Flood packets the scheduler refused (pre-buffer full).
    pub refused: u64,
}

/// Paces a flood at `rate` packets per second while it is active: how many
/// packets are due now. The base restarts with each segment (no catch-up
/// burst after a pause).
struct Pacer {
    rate: f64,
    base: Option<(u64, u64)>,
}

impl Pacer {
    fn due(&mut self, now: u64, sent: u64) -> u64 {
        let (t, n) = *self.base.get_or_insert((now, sent));
        n + ((now - t) as f64 * self.rate / 1e9) as u64
    }
    fn pause(&mut self) {
        self.base = None;
    }
}

pub(super) fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("histogram bounds")
}

/// Upper bound of real-time packets one run sends (for the receiver's record buffer).
pub(crate) fn expected_packets(cfg: &BenchConfig) -> usize {
    let total = cfg.duration_ns + cfg.warmup_ns;
    cfg.flows.iter().map(|f| (total / f.period_ns) as usize + 2).sum::<usize>() + 1024
}

/// Flow state of a sender: next instance and its pre-built payload.
struct FlowState {
    spec: super::FlowSpec,
    class: usize,
    size: usize,
    start: u64,
    slot_ns: u64,
    next: u64,
    seq: u64,
    buf: Vec<u8>,
    id: u16,
}

impl FlowState {
    /// Moves on to the next instance.
    fn advance(&mut self) {
        self.seq += 1;
        self.next = self.start + self.spec.instance_offset_ns(self.slot_ns, self.seq);
    }

    /// Skips instances that fall in a pause (their sequence numbers too).
    fn skip_inactive(&mut self, tl: &Timeline) {
        while self.next < tl.end && !tl.active(self.next) {
            self.advance();
        }
    }
}

fn flows(cfg: &BenchConfig, tl: &Timeline, class_of: impl Fn(&str) -> usize) -> Vec<FlowState> {
    cfg.flows
        .iter()
        .enumerate()
        .map(|(i, f)| FlowState {
            spec: f.clone(),
            class: class_of(&f.class),
            size: f.size,
            start: tl.start,
            slot_ns: cfg.sched.slot_ns,
            next: tl.start + f.instance_offset_ns(cfg.sched.slot_ns, 0),
            seq: 0,
            buf: vec![0u8; f.size.max(HEADER_LEN)],
            id: i as u16,
        })
        .collect()
}

/// Per-flow figures of the sender: release error and where each instance left.
pub(crate) struct FlowSent {
    /// Instances due (submitted to the scheduler, or due to the sleeping sender).
    pub planned: u64,
    /// Instances handed to the datapath.
    pub sent: u64,
    /// Instances the scheduler refused at submission (late, full, slot taken).
    pub refused: u64,
    /// Release error (hand-off − planned instant), measured window.
    pub release: Histogram<u64>,
    /// Instances whose hand-off fell in a ring slot the flow's class does not own (whole run).
    pub outside_partition: u64,
}

impl FlowSent {
    fn new() -> FlowSent {
        FlowSent { planned: 0, sent: 0, refused: 0, release: hist(), outside_partition: 0 }
    }
}

/// Records one hand-off of flow `f` at `release_ns`, planned for `scheduled_ns`.
fn record_flow(cfg: &BenchConfig, tl: &Timeline, fs: &mut FlowSent, class: usize, scheduled_ns: u64, release_ns: u64) {
    fs.sent += 1;
    let pos = ((release_ns / cfg.sched.slot_ns) % cfg.sched.ring_slots as u64) as u32;
    if !cfg.sched.classes.get(class).is_some_and(|c| c.mask.contains(pos)) {
        fs.outside_partition += 1;
    }
    if scheduled_ns >= tl.measure_from {
        fs.release.saturating_record(release_ns.saturating_sub(scheduled_ns));
    }
}

/// Sleeps until `t` (CLOCK_MONOTONIC, absolute), as periodic applications do.
pub(super) fn sleep_until(t: u64) {
    let ts = libc::timespec { tv_sec: (t / 1_000_000_000) as libc::time_t, tv_nsec: (t % 1_000_000_000) as libc::c_long };
    loop {
        // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
        let rc = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// True when `now` is more than 1 ms into a pause (or before the start): nothing is left to release.
fn deep_in_pause(tl: &Timeline, now: u64) -> bool {
    now < tl.end && !tl.active(now) && !tl.active(now.saturating_sub(1_000_000))
}

/// Through the slot scheduler.
pub fn slots(ep: Box<dyn Endpoint>, cfg: &BenchConfig, tl: &Timeline, flood: bool, peer: SocketAddrV4, abort: &AtomicBool) -> anyhow::Result<Sent> {
    let meter = ThreadMeter::start("sender");
    let endpoint = ep.capabilities().summary();
    let mut ep = SchedEndpoint::new(ep, &cfg.sched)?;
    let n_classes = ep.scheduler().class_count();
    let be = if flood { cfg.be_class.as_ref().and_then(|b| ep.scheduler().class_index(b)) } else { None };
    let mut fl = flows(cfg, tl, |c| ep.scheduler().class_index(c).unwrap_or(0));
    let strict: Vec<bool> = (0..n_classes).map(|i| ep.scheduler().class_mode(i) == Some(Mode::Strict)).collect();
    let mut class_hist: Vec<Histogram<u64>> = (0..n_classes).map(|_| hist()).collect();
    let (mut release, mut send_cost) = (hist(), hist());
    let mut violations = 0u64;
    let mut flow_sent: Vec<FlowSent> = fl.iter().map(|_| FlowSent::new()).collect();
    let mut be_buf = vec![0u8; cfg.be_size];
    let mut be_seq = 0u64;
    let (s0, s1) = (ep.scheduler().current_slot(tl.measure_from), ep.scheduler().current_slot(tl.end));
    // Slots of the measured window in which the flood was running.
    let slots_in_window = match be {
        Some(_) => (s0..s1).filter(|&s| tl.flood_active(ep.scheduler().slot_instant(s), FLOOD_MARGIN_NS)).count() as u64,
        None => 0,
    };
    let mut be_in_window = 0u64;
    // An offered load: the flood is paced at that share of the slot rate (else it keeps the pre-buffer full).
    let mut pacer = cfg.be_load.map(|l| Pacer { rate: l * 1e9 / cfg.sched.slot_ns as f64, base: None });
    let (mut be_offered, mut be_offered_in_window, mut be_refused_in_window) = (0u64, 0u64, 0u64);
    let batch_ns = cfg.poll_batch as u64 * cfg.sched.slot_ns;
    // Best-effort slots missed inside the measured window: the counter's value when the window opens and closes.
    let (mut missed_from, mut missed_to) = (None, None);
    let missed_now = |sched: &detpath_sched::Scheduler<detpath_sched::MonotonicSource>| be.and_then(|b| sched.counters(b)).map(|k| k.missed_slots).unwrap_or(0);
    let tolerance = cfg.sched.late_tolerance_ns;
    loop {
        if abort.load(Ordering::Relaxed) {
            anyhow::bail!("interrupted");
        }
        let now = monotonic_ns();
        if deep_in_pause(tl, now) {
            // Nothing is queued: catch the scheduler up to the present, then sleep
            // until shortly before the next segment (its first packets are submitted early).
            ep.poll(now);
            let wake = tl.next_on(now).saturating_sub(WAKE_BEFORE_NS);
            if wake > now {
                sleep_until(wake);
                continue;
            }
        }
        if now < tl.end {
            for f in fl.iter_mut() {
                f.skip_inactive(tl);
                while f.next < now + cfg.lookahead_ns && f.next < tl.end {
                    Header { flow: f.id, seq: f.seq, scheduled_ns: f.next }.write(&mut f.buf);
                    // Late, full and taken are counted by the scheduler; anything else is a configuration error.
                    flow_sent[f.id as usize].planned += 1;
                    match ep.send_at(f.next, f.class, &f.buf[..f.size], peer) {
                        Ok(_) => {}
                        Err(Refusal::Late { .. }) | Err(Refusal::PrebufferFull { .. }) | Err(Refusal::SlotTaken { .. }) => {
                            flow_sent[f.id as usize].refused += 1
                        }
                        Err(e) => anyhow::bail!("flow {}: {e}", f.id),
                    }
                    f.advance();
                    f.skip_inactive(tl);
                }
            }
            match (be.filter(|_| tl.flood_active(now, FLOOD_MARGIN_NS)), pacer.as_mut()) {
                (Some(b), None) => {
                    while ep.scheduler().prebuffered(b).unwrap_or(usize::MAX) < 16 {
                        Header { flow: FLOOD_FLOW, seq: be_seq, scheduled_ns: 0 }.write(&mut be_buf);
                        if ep.send_be(b, &be_buf, peer).is_err() {
                            break;
                        }
                        be_seq += 1;
                    }
                }
                (Some(b), Some(p)) => {
                    let counted = now >= tl.measure_from;
                    let due = p.due(now, be_offered);
                    while be_offered < due {
                        be_offered += 1;
                        Header { flow: FLOOD_FLOW, seq: be_seq, scheduled_ns: 0 }.write(&mut be_buf);
                        let refused = ep.send_be(b, &be_buf, peer).is_err();
                        be_seq += u64::from(!refused);
                        be_offered_in_window += u64::from(counted);
                        be_refused_in_window += u64::from(counted && refused);
                    }
                }
                (None, Some(p)) => p.pause(),
                (None, None) => {}
            }
        } else {
            // Done once every real-time packet has left (the flood's leftovers do not count), or 10 ms after the end.
            let sched = ep.scheduler();
            let rt_done = (0..n_classes).all(|c| sched.class_kind(c) != Some(ClassKind::RealTime) || sched.held(c) == Some(0));
            if rt_done || now > tl.end + 10_000_000 {
                break;
            }
        }
        // A busy slot about to start: the scheduler spins on the clock and releases it as it starts.
        let t = monotonic_ns();
        if missed_from.is_none() && t >= tl.measure_from {
            missed_from = Some(missed_now(ep.scheduler()));
        }
        if missed_to.is_none() && t >= tl.end {
            missed_to = Some(missed_now(ep.scheduler()));
        }
        ep.poll_spin_observed(t, SPIN_NS, |r, ok| {
            if !ok {
                return;
            }
            let err = r.release_ns.saturating_sub(r.scheduled_ns);
            match r.kind {
                ClassKind::RealTime => {
                    if let Some(h) = Header::parse(r.payload) {
                        if let Some(fs) = flow_sent.get_mut(h.flow as usize) {
                            record_flow(cfg, tl, fs, r.class, h.scheduled_ns, r.release_ns);
                        }
                    }
                    if r.scheduled_ns >= tl.measure_from {
                        // Called right after the send returned.
                        send_cost.saturating_record(monotonic_ns().saturating_sub(r.release_ns));
                        release.saturating_record(err);
                        class_hist[r.class].saturating_record(err);
                        if strict[r.class] && err > tolerance {
                            violations += 1;
                        }
                    }
                }
                ClassKind::BestEffort => {
                    if r.slot >= s0 && r.slot < s1 && tl.flood_active(r.scheduled_ns, FLOOD_MARGIN_NS) {
                        be_in_window += 1;
                        class_hist[r.class].saturating_record(err);
                    }
                }
            }
        });
        // Polling once per batch of slots: sleep to the next batch boundary of the ring instead of spinning.
        let t = monotonic_ns();
        if t < tl.end && t >= tl.start {
            if let Some(k) = (t - tl.start).checked_div(batch_ns) {
                sleep_until(tl.start + (k + 1) * batch_ns);
            }
        }
    }
    let sched = ep.scheduler();
    let classes = (0..n_classes).map(|i| (sched.counters(i).unwrap_or_default(), class_hist[i].clone())).collect();
    let be_missed = missed_to.unwrap_or_else(|| missed_now(sched)).saturating_sub(missed_from.unwrap_or(0));
    Ok(Sent {
        endpoint,
        classes,
        release,
        send_cost,
        violations,
        flows: flow_sent,
        be: BeWindow { released: be_in_window, slots: slots_in_window, missed: be_missed, offered: be_offered_in_window, refused: be_refused_in_window },
        threads: vec![meter.stop()],
    })
}

/// Pins the calling thread to `core` (best effort: an error leaves it unpinned).
fn pin(core: u32) {
    let _ = detpath_tune::rt::pin_current_thread(core as usize);
}

/// clock_nanosleep(TIMER_ABSTIME) to each deadline, then send; the flood
/// comes from a second thread of the same priority on the same core sharing the
/// endpoint (behind a mutex, as threads of one application share a socket),
/// at the rate the slots method gives best effort.
pub fn sleep(ep: Box<dyn Endpoint>, cfg: &BenchConfig, tl: &Timeline, peer: SocketAddrV4, abort: &AtomicBool) -> anyhow::Result<Sent> {
    let meter = ThreadMeter::start("sender");
    let endpoint = ep.capabilities().summary();
    let ep = Arc::new(Mutex::new(ep));
    let class_names: Vec<&str> = cfg.sched.classes.iter().map(|c| c.name.as_str()).collect();
    let mut fl = flows(cfg, tl, |c| class_names.iter().position(|n| *n == c).unwrap_or(0));
    let n_classes = cfg.sched.classes.len();
    let mut counters = vec![ClassCounters::default(); n_classes];
    let mut class_hist: Vec<Histogram<u64>> = (0..n_classes).map(|_| hist()).collect();
    let (mut release, mut send_cost) = (hist(), hist());
    let mut violations = 0u64;
    let mut flow_sent: Vec<FlowSent> = fl.iter().map(|_| FlowSent::new()).collect();
    let tolerance = cfg.sched.late_tolerance_ns;

    let flood_rate = cfg.be_load.unwrap_or_else(|| cfg.be_fraction()) * 1e9 / cfg.sched.slot_ns as f64;
    let flood_stop = Arc::new(AtomicBool::new(false));
    let flood = (flood_rate > 0.0 && cfg.be_class.is_some()).then(|| {
        let (ep, stop, core, size, tl) = (ep.clone(), flood_stop.clone(), cfg.cpus.0, cfg.be_size, *tl);
        // Inherits the sender's policy (SCHED_FIFO in real-time runs): a lower
        // priority would invert priorities on the shared endpoint's lock.
        std::thread::spawn(move || {
            pin(core);
            let meter = ThreadMeter::start("flood");
            let mut buf = vec![0u8; size];
            let mut sent = 0u64;
            let (mut base_t, mut base_n) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let now = monotonic_ns();
                if now >= tl.end {
                    break;
                }
                if !tl.flood_active(now, FLOOD_MARGIN_NS) {
                    sleep_until(tl.next_on(now + FLOOD_MARGIN_NS));
                    (base_t, base_n) = (monotonic_ns(), sent);
                    continue;
                }
                if base_t == 0 {
                    (base_t, base_n) = (now, sent);
                }
                sleep_until(now + 100_000);
                let due = base_n + ((monotonic_ns() - base_t) as f64 * flood_rate / 1e9) as u64;
                while sent < due && !stop.load(Ordering::Relaxed) {
                    Header { flow: FLOOD_FLOW, seq: sent, scheduled_ns: 0 }.write(&mut buf);
                    if let Ok(mut e) = ep.lock() {
                        let _ = e.send_to(&buf, peer);
                    }
                    sent += 1;
                }
            }
            (sent, meter.stop())
        })
    });

    let result = (|| -> anyhow::Result<()> {
        loop {
            if abort.load(Ordering::Relaxed) {
                anyhow::bail!("interrupted");
            }
            for f in fl.iter_mut() {
                f.skip_inactive(tl);
            }
            let Some(next) = fl.iter().map(|f| f.next).filter(|&t| t < tl.end).min() else {
                break;
            };
            sleep_until(next);
            for f in fl.iter_mut() {
                if f.next >= tl.end || f.next > monotonic_ns() {
                    continue;
                }
                Header { flow: f.id, seq: f.seq, scheduled_ns: f.next }.write(&mut f.buf);
                let mut e = ep.lock().map_err(|_| anyhow::anyhow!("endpoint mutex poisoned"))?;
                let t = monotonic_ns();
                let ok = e.send_to(&f.buf[..f.size], peer).is_ok();
                let done = monotonic_ns();
                drop(e);
                let err = t.saturating_sub(f.next);
                flow_sent[f.id as usize].planned += 1;
                let k = &mut counters[f.class];
                k.accepted += 1;
                if ok {
                    k.sent += 1;
                    record_flow(cfg, tl, &mut flow_sent[f.id as usize], f.class, f.next, t);
                    if f.next >= tl.measure_from {
                        send_cost.saturating_record(done - t);
                        release.saturating_record(err);
                        class_hist[f.class].saturating_record(err);
                        if err > tolerance {
                            k.late += 1;
                            violations += 1;
                        }
                    }
                } else {
                    k.tx_errors += 1;
                }
                f.advance();
            }
        }
        Ok(())
    })();
    flood_stop.store(true, Ordering::Relaxed);
    let mut threads = vec![meter.stop()];
    let flood_sent = match flood.map(|h| h.join()) {
        Some(Ok((n, cpu))) => {
            threads.push(cpu);
            n
        }
        _ => 0,
    };
    result?;
    if let Some(b) = cfg.be_class.as_ref().and_then(|b| class_names.iter().position(|n| n == b)) {
        counters[b].sent = flood_sent;
        counters[b].accepted = flood_sent;
    }
    let classes = counters.into_iter().zip(class_hist).collect();
    Ok(Sent { endpoint, classes, release, send_cost, violations, flows: flow_sent, be: BeWindow::default(), threads })
}
