//! Synchronising a slave's slot clock to a master's (KeepON §5.1) with the
//! four-timestamp exchange of IEEE 1588, carried in detpath datagrams, and
//! the [`PiServo`].
//!
//! ```text
//!  master                         slave
//!  t1 = slot time of the Sync ──▶ t2 = slave clock at rx
//!                                 t3 = slot time of the Delay_Req
//!  t4 = master clock at rx ◀───── Delay_Req
//!  Delay_Resp(t4) ──────────────▶ offset = ((t2−t1) − (t4−t3)) / 2
//! ```
//!
//! Transmit timestamps are the scheduled slot times (KeepON's point: a slot
//! scheduler knows when a packet leaves); receive timestamps are the
//! endpoint's software `rx_ns` mapped to the slot clock. The servo steers the
//! slave's slot clock (offset and rate), never the host clock, and never the
//! slot count.

use crate::clock::TickSource;
use crate::endpoint::SchedEndpoint;
use crate::sched::Scheduler;
use crate::servo::{spike_threshold_ns, PiServo, ServoConfig, ServoOutput, ServoState, SpikeFilter};
use detpath::{monotonic_ns, RecvMode};
use serde::Serialize;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};

pub use crate::sync_wire::{MsgKind, SyncMsg, SyncWireError, MSG_LEN};

/// The four timestamps of one exchange (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Exchange {
    /// Sync sent (master clock).
    pub t1: u64,
    /// Sync received (slave clock).
    pub t2: u64,
    /// Delay_Req sent (slave clock).
    pub t3: u64,
    /// Delay_Req received (master clock).
    pub t4: u64,
}

impl Exchange {
    /// Slave − master, assuming a symmetric path (saturated: the times come from the network).
    pub fn offset_ns(&self) -> i64 {
        let fwd = self.t2 as i128 - self.t1 as i128;
        let back = self.t4 as i128 - self.t3 as i128;
        saturate((fwd - back) / 2)
    }
    /// One-way path delay, assuming a symmetric path (saturated, as the offset).
    pub(crate) fn delay_ns(&self) -> i64 {
        saturate(path_delay_ns(self.t1 as i128, self.t2 as i128, self.t3 as i128, self.t4 as i128))
    }
}

/// `v` as an i64, saturated: a forged time stamp must not wrap an offset around.
pub(crate) fn saturate(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// One-way path delay of an exchange, `((t2 − t1) + (t4 − t3)) / 2`, ns.
pub fn path_delay_ns(t1: i128, t2: i128, t3: i128, t4: i128) -> i128 {
    ((t2 - t1) + (t4 - t3)) / 2
}

/// Longest path delay taken as real, ns: on one link a delay is microseconds;
/// beyond a second it is a forged or stale time stamp.
pub const MAX_PATH_DELAY_NS: i64 = 1_000_000_000;

/// The path delay if it can be one: 0 to [`MAX_PATH_DELAY_NS`]. A negative
/// delay or one of seconds is an outlier, not a value to clamp into the filter.
pub fn plausible_delay(delay_ns: i128) -> Option<i64> {
    (0..=MAX_PATH_DELAY_NS as i128).contains(&delay_ns).then_some(delay_ns as i64)
}

/// Applies a servo output to a scheduler's slot clock at instant `now`.
pub fn apply<S: TickSource>(sched: &mut Scheduler<S>, now: u64, out: &ServoOutput) {
    match out.state {
        ServoState::Unlocked => {}
        ServoState::Jump => {
            sched.step_clock(out.step_ns);
            sched.set_clock_rate(now, out.rate_ppb.round() as i64);
        }
        ServoState::Locked => sched.set_clock_rate(now, out.rate_ppb.round() as i64),
    }
}

/// Moving median of the last [`DelayFilter::LEN`] path delays (as linuxptp's
/// default `delay_filter moving_median`, length 10): one slow or fast
/// direction in one round does not move the offset estimate.
#[derive(Debug, Clone, Copy, Default)]
pub struct DelayFilter {
    values: [i64; DelayFilter::LEN],
    len: usize,
    next: usize,
}

impl DelayFilter {
    /// Window length.
    pub const LEN: usize = 10;

    /// Values in the window.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True before the first value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Median of the window (0 when empty).
    pub fn median(&self) -> i64 {
        if self.len == 0 {
            return 0;
        }
        let mut w = self.values;
        let w = &mut w[..self.len];
        w.sort_unstable();
        if self.len % 2 == 1 {
            w[self.len / 2]
        } else {
            // The mean of the middle two in i128: their sum may not fit an i64.
            ((w[self.len / 2 - 1] as i128 + w[self.len / 2] as i128) / 2) as i64
        }
    }

    /// Adds a delay and returns the median of the window.
    pub fn push(&mut self, delay_ns: i64) -> i64 {
        self.values[self.next] = delay_ns;
        self.next = (self.next + 1) % Self::LEN;
        self.len = (self.len + 1).min(Self::LEN);
        self.median()
    }
}

/// Exchanges before the servo gets its first sample (the delay filter fills first).
pub(crate) const WARMUP_EXCHANGES: u32 = 4;

/// The slave's side of the exchange: matches the three messages of each
/// round, filters the path delay, and feeds the offset
/// `(t2 − t1) − median delay` to the servo through a [`SpikeFilter`]. An
/// exchange whose path delay exceeds the median by more than half the
/// median (and 10 µs) was held up somewhere (a preempted thread, a deferred
/// softirq): it updates the delay filter but is not fed to the servo; one
/// whose delay cannot be one ([`plausible_delay`]) does neither.
#[derive(Debug, Clone)]
pub struct Slave {
    servo: SpikeFilter,
    current: Option<(u32, Exchange, bool)>,
    delay: DelayFilter,
    exchanges: u32,
    rejected: u32,
}

impl Slave {
    /// A slave with a fresh servo behind a spike filter of `spike_threshold_ns`
    /// ([`spike_threshold_ns`] of the lock threshold).
    pub fn new(cfg: ServoConfig, spike_threshold_ns: u64) -> Slave {
        Slave { servo: SpikeFilter::new(cfg, spike_threshold_ns), current: None, delay: DelayFilter::default(), exchanges: 0, rejected: 0 }
    }
    /// Exchanges not fed to the servo because their path delay was an outlier (or no delay at all).
    pub fn rejected(&self) -> u32 {
        self.rejected
    }
    /// Exchanges not fed to the servo because their offset was a spike.
    pub fn outliers(&self) -> u64 {
        self.servo.outliers()
    }
    /// The servo.
    pub fn servo(&self) -> &PiServo {
        self.servo.servo()
    }
    /// A Sync with `t1` arrived at slave time `t2`; starts a new round.
    pub(crate) fn on_sync(&mut self, seq: u32, t1: u64, t2: u64) {
        self.current = Some((seq, Exchange { t1, t2, ..Exchange::default() }, false));
    }
    /// The Delay_Req of round `seq` left at slave time `t3`.
    pub(crate) fn on_delay_req_sent(&mut self, seq: u32, t3: u64) {
        if let Some((s, ex, sent)) = &mut self.current {
            if *s == seq {
                ex.t3 = t3;
                *sent = true;
            }
        }
    }
    /// The Delay_Resp of round `seq` carries `t4`: returns the exchange, the
    /// offset fed to the servo and the servo's output.
    pub(crate) fn on_delay_resp(&mut self, seq: u32, t4: u64) -> Option<(Exchange, i64, ServoOutput)> {
        match self.current.take() {
            Some((s, mut ex, true)) if s == seq => {
                ex.t4 = t4;
                let Some(this) = plausible_delay(ex.delay_ns().into()) else {
                    self.rejected += 1;
                    return None;
                };
                self.exchanges += 1;
                let before = self.delay.median();
                let outlier = self.delay.len() >= WARMUP_EXCHANGES as usize && this > before + (before / 2).max(10_000);
                let delay = self.delay.push(this);
                if self.exchanges < WARMUP_EXCHANGES {
                    return None;
                }
                if outlier {
                    self.rejected += 1;
                    return None;
                }
                let offset = saturate(ex.t2 as i128 - ex.t1 as i128 - delay as i128);
                let out = self.servo.sample(offset, ex.t2)?;
                Some((ex, offset, out))
            }
            other => {
                self.current = other;
                None
            }
        }
    }
}

/// One exchange as the slave saw it, with the true offset where it is known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SyncSample {
    /// Seconds since the start of the run.
    pub t_s: f64,
    /// Servo state after the sample.
    pub state: ServoState,
    /// Offset fed to the servo: (t2 - t1) - median path delay, ns.
    pub measured_offset_ns: i64,
    /// This round's path delay, ns.
    pub delay_ns: i64,
    /// Rate the servo set, ppb.
    pub rate_ppb: f64,
    /// Slave clock − master clock at the moment of the sample (ground truth).
    pub true_offset_ns: i64,
}

/// Result of a synchronisation run.
#[derive(Debug, Clone, Serialize)]
pub struct SyncReport {
    /// One per completed exchange.
    pub samples: Vec<SyncSample>,
    /// Seconds from the first Sync to the first locked sample whose true offset
    /// stays within the lock threshold from then on; `None`: never locked.
    pub time_to_lock_s: Option<f64>,
    /// The lock threshold used, ns.
    pub lock_threshold_ns: u64,
    /// |true offset| after lock, ns.
    pub residual_p50_ns: Option<u64>,
    /// |true offset| after lock, 99th percentile, ns.
    pub residual_p99_ns: Option<u64>,
    /// |true offset| after lock, largest, ns.
    pub residual_max_ns: Option<u64>,
    /// The servo's final frequency estimate of the slave's oscillator (ppb, + fast).
    pub final_drift_ppb: f64,
    /// Mean rate the servo applied after lock (ppb; about minus the oscillator's drift).
    pub mean_rate_after_lock_ppb: Option<f64>,
    /// Exchanges whose path delay was an outlier (not fed to the servo).
    pub rejected: u32,
    /// Samples whose offset was a spike (not fed to the servo; see [`SpikeFilter`]).
    pub outliers: u64,
    /// Datagrams from a sender other than the master (dropped).
    pub not_master: u64,
}

impl SyncReport {
    /// Summarises `samples` (the true offsets decide lock).
    pub fn from_samples(samples: Vec<SyncSample>, lock_threshold_ns: u64, final_drift_ppb: f64) -> SyncReport {
        let inside = |s: &SyncSample| s.state == ServoState::Locked && s.true_offset_ns.unsigned_abs() <= lock_threshold_ns;
        // First index from which every sample is locked and inside the threshold.
        let mut first = None;
        for (i, s) in samples.iter().enumerate().rev() {
            if inside(s) {
                first = Some(i);
            } else {
                break;
            }
        }
        let mut residual: Vec<u64> = first.map(|i| samples[i..].iter().map(|s| s.true_offset_ns.unsigned_abs()).collect()).unwrap_or_default();
        residual.sort_unstable();
        let q = |p: f64| (!residual.is_empty()).then(|| residual[((residual.len() - 1) as f64 * p).round() as usize]);
        let after: Vec<f64> = first.map(|i| samples[i..].iter().map(|s| s.rate_ppb).collect()).unwrap_or_default();
        let mean_rate_after_lock_ppb = (!after.is_empty()).then(|| after.iter().sum::<f64>() / after.len() as f64);
        SyncReport {
            rejected: 0,
            outliers: 0,
            not_master: 0,
            mean_rate_after_lock_ppb,
            time_to_lock_s: first.map(|i| samples[i].t_s),
            lock_threshold_ns,
            residual_p50_ns: q(0.5),
            residual_p99_ns: q(0.99),
            residual_max_ns: residual.last().copied(),
            samples,
            final_drift_ppb,
        }
    }
}

/// Parameters of a simulated exchange between a perfect master and a slave
/// whose oscillator is off by `offset_ns` and `drift_ppb`.
#[derive(Debug, Clone, Copy)]
pub struct SimConfig {
    /// Injected offset of the slave's counter, ns.
    pub offset_ns: u64,
    /// Injected drift of the slave's oscillator, ppb.
    pub drift_ppb: i64,
    /// One-way path delay, ns.
    pub path_delay_ns: u64,
    /// Uniform timestamp noise in [0, noise_ns) added to each receive timestamp.
    pub noise_ns: u64,
    /// Time between Syncs, ns.
    pub interval_ns: u64,
    /// Simulated time, ns.
    pub duration_ns: u64,
    /// Seed of the noise.
    pub seed: u64,
    /// The servo's configuration.
    pub servo: ServoConfig,
}

/// Runs the exchange in simulated time over a real [`SlotClock`](crate::SlotClock)
/// on an [`OverlaySource`](crate::OverlaySource) and the real servo; the truth is exact.
pub fn simulate(cfg: &SimConfig) -> SyncReport {
    use crate::clock::{OverlaySource, SlotClock};
    use crate::slot::Ring;
    let epoch = 1_000_000_000u64;
    let src = OverlaySource { epoch_mono: epoch, offset_ns: cfg.offset_ns, drift_ppb: cfg.drift_ppb };
    let mut clock = SlotClock::new(Ring { slot_ns: 1_000, slots: 100 }, epoch);
    let slave_time = |c: &SlotClock, m: u64| c.time_at(src.elapsed_ns(m));
    let mut rng = cfg.seed | 1;
    let mut noise = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if cfg.noise_ns == 0 {
            0
        } else {
            rng % cfg.noise_ns
        }
    };
    let mut slave = Slave::new(cfg.servo, spike_threshold_ns(1_000));
    let mut samples = Vec::new();
    let mut m = epoch;
    let mut seq = 0u32;
    while m < epoch + cfg.duration_ns {
        seq += 1;
        let t1 = m;
        let m2 = m + cfg.path_delay_ns + noise();
        slave.on_sync(seq, t1, slave_time(&clock, m2));
        let m3 = m2 + 50_000;
        slave.on_delay_req_sent(seq, slave_time(&clock, m3));
        let m4 = m3 + cfg.path_delay_ns + noise();
        if let Some((ex, offset, out)) = slave.on_delay_resp(seq, m4) {
            let now = m4 + 20_000;
            if out.state == ServoState::Jump {
                clock.step(out.step_ns);
            }
            if out.state != ServoState::Unlocked {
                clock.set_rate(src.elapsed_ns(now), out.rate_ppb.round() as i64);
            }
            samples.push(SyncSample {
                t_s: (now - epoch) as f64 / 1e9,
                state: out.state,
                measured_offset_ns: offset,
                delay_ns: ex.delay_ns(),
                rate_ppb: out.rate_ppb,
                true_offset_ns: (slave_time(&clock, now) as i128 - now as i128) as i64,
            });
        }
        m += cfg.interval_ns;
    }
    let drift = slave.servo().drift_ppb();
    SyncReport { rejected: slave.rejected(), outliers: slave.outliers(), ..SyncReport::from_samples(samples, 1_000, drift) }
}

/// Parameters of a live run between two [`SchedEndpoint`]s.
#[derive(Debug, Clone, Copy)]
pub struct LiveConfig {
    /// The real-time class that carries the sync messages (same index on both sides).
    pub class: usize,
    /// Time between Syncs, ns.
    pub interval_ns: u64,
    /// How long the slave runs, ns.
    pub duration_ns: u64,
    /// The servo's configuration.
    pub servo: ServoConfig,
    /// Locked means |true offset| at most this from then on, ns.
    pub lock_threshold_ns: u64,
}

fn next_ptp_slot<S: TickSource>(sched: &Scheduler<S>, class: usize, now: u64) -> Option<u64> {
    // One slot of margin beyond the insertion lead, for the time between this
    // reading and the scheduler's own.
    let earliest = sched.current_slot(now) + sched.lead_slots() as u64 + 1;
    sched.next_owned(class, earliest.max(sched.next_release()))
}

/// Sleeps until CLOCK_MONOTONIC reaches `t`.
fn sleep_until(t: u64) {
    let ts = libc::timespec { tv_sec: (t / 1_000_000_000) as libc::time_t, tv_nsec: (t % 1_000_000_000) as libc::c_long };
    // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
    while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) } == libc::EINTR {}
}

/// How long after a Sync each side keeps polling for the rest of the round.
fn round_window(cfg: &LiveConfig) -> u64 {
    (cfg.interval_ns / 2).min(20_000_000)
}

/// The master: sends a Sync every `interval_ns` and answers Delay_Reqs, until
/// `stop`. It busy-polls only while a round is open (Sync sent, Delay_Resp not
/// yet out, at most `round_window`) and sleeps until 2 ms before the next
/// Sync otherwise: a real-time thread that spins all the time would also
/// starve its core's softirq thread, which may hold the very frames it waits
/// for. Returns the number of rounds it started.
pub fn run_master<S: TickSource>(ep: &mut SchedEndpoint<S>, slave: SocketAddrV4, cfg: &LiveConfig, stop: &AtomicBool) -> detpath::Result<u32> {
    let mut buf = [0u8; 2048];
    let mut seq = 0u32;
    let mut next_sync = monotonic_ns();
    let mut last_sync = 0u64;
    let mut round_open = false;
    while !stop.load(Ordering::Relaxed) {
        let now = monotonic_ns();
        let idle = ep.scheduler().held(cfg.class) == Some(0);
        if (!round_open || now > last_sync + round_window(cfg)) && idle && now + 2_000_000 < next_sync {
            ep.poll(now);
            sleep_until(next_sync - 2_000_000);
            continue;
        }
        if now >= next_sync {
            last_sync = now;
            round_open = true;
            if let Some(slot) = next_ptp_slot(ep.scheduler(), cfg.class, now) {
                seq = seq.wrapping_add(1);
                let t1 = ep.scheduler().slot_time(slot);
                let msg = SyncMsg { kind: MsgKind::Sync, seq, time_ns: t1 }.encode();
                let _ = ep.send_at(t1, cfg.class, &msg, slave);
            }
            next_sync += cfg.interval_ns;
        }
        let mut sync_left = false;
        ep.poll_observed(monotonic_ns(), |r, ok| sync_left |= ok && r.class == cfg.class && r.payload.get(5) == Some(&(MsgKind::Sync as u8)));
        if sync_left {
            // Step off the CPU for a moment: on a veth the frame's receive
            // processing may have been deferred to this core's softirq thread,
            // which a spinning real-time thread would starve.
            sleep_until(monotonic_ns() + 50_000);
        }
        if let Some(rx) = ep.recv(&mut buf, RecvMode::NonBlocking)? {
            // Only the slave's requests: another sender's would take the class's slots and end the round.
            if rx.peer != slave {
                continue;
            }
            if let Ok(SyncMsg { kind: MsgKind::DelayReq, seq: s, .. }) = SyncMsg::parse(&buf[..rx.len]) {
                let t4 = ep.scheduler().time_at(rx.rx_ns);
                let now = monotonic_ns();
                if let Some(slot) = next_ptp_slot(ep.scheduler(), cfg.class, now) {
                    let msg = SyncMsg { kind: MsgKind::DelayResp, seq: s, time_ns: t4 }.encode();
                    let t = ep.scheduler().slot_time(slot);
                    let _ = ep.send_at(t, cfg.class, &msg, rx.peer);
                }
                round_open = false;
            }
        }
    }
    Ok(seq)
}

/// The slave: answers Syncs, steers its slot clock, and records samples. It
/// busy-polls from 3 ms before each expected Sync until its Delay_Req has
/// left, then waits for the Delay_Resp in the kernel (that arrival time does
/// not matter) and sleeps until the next round;
/// `master_time` gives the master's clock at a CLOCK_MONOTONIC instant (the
/// ground truth, known when both run on one host). Runs for `cfg.duration_ns`.
pub fn run_slave<S: TickSource>(
    ep: &mut SchedEndpoint<S>,
    master: SocketAddrV4,
    cfg: &LiveConfig,
    master_time: impl Fn(u64) -> u64,
) -> detpath::Result<SyncReport> {
    let mut buf = [0u8; 2048];
    let mut slave = Slave::new(cfg.servo, spike_threshold_ns(cfg.lock_threshold_ns));
    let mut not_master = 0u64;
    let mut samples = Vec::with_capacity((cfg.duration_ns / cfg.interval_ns.max(1)) as usize + 16);
    let start = monotonic_ns();
    // CLOCK_MONOTONIC instant at which the last Sync left the master (as near as the slave can tell).
    let mut last_sync_tx: Option<u64> = None;
    let mut round_done = false;
    let mut req_out = false;
    while monotonic_ns() < start + cfg.duration_ns {
        // Between rounds, sleep until 3 ms before the next Sync is due.
        if let Some(t) = last_sync_tx {
            let now = monotonic_ns();
            let next = t + cfg.interval_ns;
            if (round_done || now > t + round_window(cfg)) && now + 3_000_000 < next {
                ep.poll(now);
                sleep_until((next - 3_000_000).min(start + cfg.duration_ns));
                continue;
            }
        }
        let mut released_slot = None;
        ep.poll_observed(monotonic_ns(), |r, ok| {
            if ok && r.class == cfg.class {
                if let Ok(SyncMsg { kind: MsgKind::DelayReq, seq, .. }) = SyncMsg::parse(r.payload) {
                    released_slot = Some((seq, r.slot));
                }
            }
        });
        if let Some((seq, slot)) = released_slot {
            // t3: the slot's start in the slave's clock, read at release (the clock may have moved since scheduling).
            slave.on_delay_req_sent(seq, ep.scheduler().slot_time(slot));
            req_out = true;
        }
        let mode = if req_out { RecvMode::Blocking { timeout: Some(std::time::Duration::from_millis(2)) } } else { RecvMode::NonBlocking };
        let Some(rx) = ep.recv(&mut buf, mode)? else {
            continue;
        };
        // Only the master's messages: anyone else's Sync would start a round of its own.
        if rx.peer != master {
            not_master += 1;
            continue;
        }
        match SyncMsg::parse(&buf[..rx.len]) {
            Ok(SyncMsg { kind: MsgKind::Sync, seq, time_ns: t1 }) => {
                let t2 = ep.scheduler().time_at(rx.rx_ns);
                slave.on_sync(seq, t1, t2);
                // The next Sync leaves one interval after this one did: t2 - t1 is
                // the path delay plus the clocks' offset (microseconds), so a Sync
                // that was received late does not push the next wake-up late too.
                let in_flight = (t2 as i128 - t1 as i128).clamp(0, cfg.interval_ns as i128 / 2) as u64;
                last_sync_tx = Some(rx.rx_ns.saturating_sub(in_flight));
                round_done = false;
                req_out = false;
                let now = monotonic_ns();
                if let Some(slot) = next_ptp_slot(ep.scheduler(), cfg.class, now) {
                    let msg = SyncMsg { kind: MsgKind::DelayReq, seq, time_ns: 0 }.encode();
                    let t = ep.scheduler().slot_time(slot);
                    let _ = ep.send_at(t, cfg.class, &msg, master);
                }
            }
            Ok(SyncMsg { kind: MsgKind::DelayResp, seq, time_ns: t4 }) => {
                if let Some((ex, offset, out)) = slave.on_delay_resp(seq, t4) {
                    round_done = true;
                    req_out = false;
                    let now = monotonic_ns();
                    apply(ep.scheduler_mut(), now, &out);
                    let truth = ep.scheduler().time_at(now) as i128 - master_time(now) as i128;
                    samples.push(SyncSample {
                        t_s: (now - start) as f64 / 1e9,
                        state: out.state,
                        measured_offset_ns: offset,
                        delay_ns: ex.delay_ns(),
                        rate_ppb: out.rate_ppb,
                        true_offset_ns: truth as i64,
                    });
                }
            }
            _ => {}
        }
    }
    let drift = slave.servo().drift_ppb();
    Ok(SyncReport { rejected: slave.rejected(), outliers: slave.outliers(), not_master, ..SyncReport::from_samples(samples, cfg.lock_threshold_ns, drift) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_reject_junk() {
        let m = SyncMsg { kind: MsgKind::DelayResp, seq: 7, time_ns: 123_456_789 };
        assert_eq!(SyncMsg::parse(&m.encode()), Ok(m));
        assert_eq!(SyncMsg::parse(&[0; 3]), Err(SyncWireError::Length { len: 3 }));
        let mut b = m.encode();
        b[5] = 9;
        assert_eq!(SyncMsg::parse(&b), Err(SyncWireError::Kind(9)));
        b[0] = b'X';
        assert_eq!(SyncMsg::parse(&b), Err(SyncWireError::Magic));
    }

    #[test]
    fn delay_filter_is_a_moving_median() {
        let mut f = DelayFilter::default();
        assert_eq!(f.push(10), 10);
        assert_eq!(f.push(30), 20);
        assert_eq!(f.push(1_000_000), 30);
        for _ in 0..10 {
            f.push(5);
        }
        assert_eq!(f.push(1_000_000), 5);
    }

    #[test]
    fn the_median_of_extreme_delays_does_not_overflow() {
        let mut f = DelayFilter::default();
        f.push(10);
        assert_eq!(f.push(i64::MAX), 4_611_686_018_427_387_908);
        assert_eq!(f.push(i64::MAX), i64::MAX);
        assert_eq!(f.push(i64::MAX), i64::MAX);
        let mut f = DelayFilter::default();
        f.push(i64::MIN);
        assert_eq!(f.push(i64::MIN), i64::MIN);
    }

    #[test]
    fn absurd_delays_are_not_delays() {
        assert_eq!(plausible_delay(0), Some(0));
        assert_eq!(plausible_delay(MAX_PATH_DELAY_NS as i128), Some(MAX_PATH_DELAY_NS));
        assert_eq!(plausible_delay(-1), None);
        assert_eq!(plausible_delay(MAX_PATH_DELAY_NS as i128 + 1), None);
        assert_eq!(plausible_delay(i64::MAX as i128), None);
    }

    #[test]
    fn extreme_time_stamps_saturate() {
        let ex = Exchange { t1: 0, t2: u64::MAX, t3: u64::MAX, t4: 0 };
        assert_eq!((ex.offset_ns(), ex.delay_ns()), (i64::MAX, 0));
        let ex = Exchange { t1: u64::MAX, t2: 0, t3: 0, t4: u64::MAX };
        assert_eq!((ex.offset_ns(), ex.delay_ns()), (i64::MIN, 0));
        let ex = Exchange { t1: 0, t2: u64::MAX, t3: 0, t4: u64::MAX };
        assert_eq!((ex.offset_ns(), ex.delay_ns()), (0, i64::MAX));
    }

    /// A slave 300 µs ahead over a 30 µs path, rounds every 250 ms; round `k`'s
    /// Delay_Resp carries `t4` (None: the genuine one).
    fn round(s: &mut Slave, k: u32, t4: Option<u64>) -> Option<(Exchange, i64, ServoOutput)> {
        let t1 = 1_000_000_000 + k as u64 * 250_000_000;
        s.on_sync(k, t1, t1 + 330_000);
        s.on_delay_req_sent(k, t1 + 400_000);
        s.on_delay_resp(k, t4.unwrap_or(t1 + 130_000))
    }

    #[test]
    fn a_forged_delay_resp_is_no_delay_and_no_sample() {
        let mut s = Slave::new(ServoConfig::linuxptp(0.25), spike_threshold_ns(20_000));
        for k in 0..4 {
            assert!(round(&mut s, k, None).is_none(), "warm-up");
        }
        // Forged t4s: as late as a u64 goes (a delay of ~2^63 ns), and 0 (a negative delay).
        for (k, t4) in [(4, u64::MAX), (5, 0)] {
            assert!(round(&mut s, k, Some(t4)).is_none(), "{t4}");
        }
        assert_eq!(s.rejected(), 2);
        assert_eq!(s.delay.median(), 30_000, "the filter holds only real delays");
        // The genuine rounds go on: the last warm-up round (3) and round 6 agree with
        // round 7, the servo's first sample; round 8 is its step.
        let states: Vec<_> = (6..9).map(|k| round(&mut s, k, None).map(|r| (r.1, r.2.state))).collect();
        assert_eq!(states[..2], [None, Some((300_000, ServoState::Unlocked))]);
        assert_eq!(states[2].map(|s| s.1), Some(ServoState::Jump));
    }

    #[test]
    fn offset_and_delay_of_a_symmetric_path() {
        // Slave 1000 ns ahead, path 300 ns each way.
        let ex = Exchange { t1: 10_000, t2: 11_300, t3: 20_000, t4: 19_300 };
        assert_eq!(ex.offset_ns(), 1_000);
        assert_eq!(ex.delay_ns(), 300);
    }
}
