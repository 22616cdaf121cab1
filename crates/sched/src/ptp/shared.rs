//! A [`PtpClock`] that a slave steers on its own thread while other
//! threads read it: [`SharedPtpClock`]. A node (e.g. `detpath pubsub
//! pub|sub --clock ptp:SPEC`) stamps and judges on the clock for its whole
//! run while [`run_slave`](super::run_slave) keeps correcting it, instead of
//! running on the rate found at lock (holdover).
//!
//! The slave takes any [`SlaveClock`]: a [`PtpClock`] it owns (as `detpath
//! sched ptp slave` runs it), or a [`SharedPtpClock`], which also keeps the
//! servo's latest samples so its readers can tell whether it is locked now.

use super::PtpClock;
use crate::servo::ServoOutput;
use crate::sync::SyncSample;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// The clock a PTP slave steers: read at an instant, corrected by a servo
/// output, and told each servo sample.
pub trait SlaveClock {
    /// The clock's reading (ns since the epoch, REALTIME scale) at CLOCK_MONOTONIC instant `mono`.
    fn time_at(&self, mono: u64) -> i128;
    /// Applies a servo output at `mono` (a step, a rate).
    fn apply(&mut self, mono: u64, out: &ServoOutput);
    /// The clock's reading minus CLOCK_REALTIME at `mono` (its true error
    /// when the master runs on this host's CLOCK_REALTIME).
    fn error_ns(&self, mono: u64) -> i64;
    /// The injected offset (ns) and drift (ppb).
    fn injected(&self) -> (i64, i64);
    /// A servo sample, after its output was applied (a shared clock keeps
    /// the latest for its readers; an owned one has nobody to tell).
    fn record(&mut self, sample: &SyncSample) {
        let _ = sample;
    }
}

impl SlaveClock for PtpClock {
    fn time_at(&self, mono: u64) -> i128 {
        PtpClock::time_at(self, mono)
    }
    fn apply(&mut self, mono: u64, out: &ServoOutput) {
        PtpClock::apply(self, mono, out)
    }
    fn error_ns(&self, mono: u64) -> i64 {
        PtpClock::error_ns(self, mono)
    }
    fn injected(&self) -> (i64, i64) {
        PtpClock::injected(self)
    }
}

/// Servo samples a [`SharedPtpClock`] keeps (the newest last).
pub const KEPT_SAMPLES: usize = 64;

#[derive(Debug)]
struct Inner {
    clock: PtpClock,
    recent: VecDeque<SyncSample>,
    samples: u64,
}

/// A [`PtpClock`] behind a lock, cloned to every thread that reads it and
/// to the slave that steers it. A read takes the lock for the few
/// nanoseconds of one clock computation; the slave takes it a few times a
/// second to apply a servo output.
#[derive(Debug, Clone)]
pub struct SharedPtpClock(Arc<Mutex<Inner>>);

impl SharedPtpClock {
    /// Shares `clock`.
    pub fn new(clock: PtpClock) -> SharedPtpClock {
        SharedPtpClock(Arc::new(Mutex::new(Inner { clock, recent: VecDeque::with_capacity(KEPT_SAMPLES), samples: 0 })))
    }

    // A reader or the slave that panicked holding the lock left a whole
    // clock behind (every update is one assignment): keep using it.
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The clock as it is now (a copy, no longer steered).
    pub fn snapshot(&self) -> PtpClock {
        self.inner().clock.clone()
    }

    /// The clock's reading at CLOCK_MONOTONIC instant `mono`.
    pub fn time_at(&self, mono: u64) -> i128 {
        self.inner().clock.time_at(mono)
    }

    /// The servo's latest samples, oldest first (at most [`KEPT_SAMPLES`]).
    pub fn recent(&self) -> Vec<SyncSample> {
        self.inner().recent.iter().copied().collect()
    }

    /// Servo samples applied so far.
    pub fn samples(&self) -> u64 {
        self.inner().samples
    }
}

impl SlaveClock for SharedPtpClock {
    fn time_at(&self, mono: u64) -> i128 {
        SharedPtpClock::time_at(self, mono)
    }
    fn apply(&mut self, mono: u64, out: &ServoOutput) {
        self.inner().clock.apply(mono, out)
    }
    fn error_ns(&self, mono: u64) -> i64 {
        self.inner().clock.error_ns(mono)
    }
    fn injected(&self) -> (i64, i64) {
        self.inner().clock.injected()
    }
    fn record(&mut self, sample: &SyncSample) {
        let mut i = self.inner();
        if i.recent.len() == KEPT_SAMPLES {
            i.recent.pop_front();
        }
        i.recent.push_back(*sample);
        i.samples += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servo::ServoState;

    #[test]
    fn a_steered_shared_clock_is_seen_by_its_clones_and_keeps_the_latest_samples() {
        let mut steered = SharedPtpClock::new(PtpClock::new(1_000_000, 0));
        let reader = steered.clone();
        let t = steered.snapshot().start_mono();
        let before = reader.time_at(t);
        steered.apply(t, &ServoOutput { state: ServoState::Jump, rate_ppb: 0.0, step_ns: -1_000_000 });
        assert_eq!(reader.time_at(t), before - 1_000_000, "the reader sees the step");
        let s = SyncSample { t_s: 0.0, state: ServoState::Locked, measured_offset_ns: 0, delay_ns: 0, rate_ppb: 0.0, true_offset_ns: 0 };
        for i in 0..KEPT_SAMPLES as i64 + 3 {
            steered.record(&SyncSample { measured_offset_ns: i, ..s });
        }
        let recent = reader.recent();
        assert_eq!(recent.len(), KEPT_SAMPLES);
        assert_eq!(recent.last().map(|s| s.measured_offset_ns), Some(KEPT_SAMPLES as i64 + 2), "the newest last");
        assert_eq!(reader.samples(), KEPT_SAMPLES as u64 + 3);
    }
}
