//! The slot clock: KeepON's Emulated PTP Hardware Clock (EPHC, §4.2).
//!
//! Two parts, kept apart on purpose:
//!
//! - a [`TickSource`] counts nominal nanoseconds since its epoch. The slot
//!   count is `elapsed / slot_ns`. On a line-rate NIC the source is the TX
//!   completion counter (one slot per completed fixed-size frame,
//!   [`CompletionSource`]); on this host it is CLOCK_MONOTONIC
//!   ([`MonotonicSource`]); for tests and for a simulated second host, a
//!   free-running oscillator with an offset and a rate error ([`OverlaySource`]).
//! - a [`SlotClock`] maps elapsed ticks to clock time with a linear model
//!   (`time = anchor_time + (elapsed - anchor_elapsed) * (1 + rate_ppb/1e9)`)
//!   that the servo adjusts in offset and rate.
//!
//! Adjusting the clock never touches the source, so **the slot count never
//! changes under adjustment** (the EPHC property): packets already placed in
//! slots stay there while the clock is steered.

use crate::slot::{Ring, Slot};

/// Largest rate adjustment a [`SlotClock`] accepts, in ppb (±10 %).
pub const MAX_RATE_PPB: i64 = 100_000_000;

/// Counts nominal nanoseconds since an epoch: the ticks the slot count is made of.
pub trait TickSource {
    /// Nominal nanoseconds elapsed at CLOCK_MONOTONIC instant `mono_ns`.
    fn elapsed_ns(&self, mono_ns: u64) -> u64;
    /// The first CLOCK_MONOTONIC instant at which [`elapsed_ns`](Self::elapsed_ns)
    /// reaches `elapsed`: when a CPU-paced scheduler should release that tick.
    fn mono_at(&self, elapsed: u64) -> u64;
}

/// CLOCK_MONOTONIC since `epoch_mono`: the CPU-paced slot counter of this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonotonicSource {
    /// CLOCK_MONOTONIC nanoseconds of slot 0.
    pub epoch_mono: u64,
}

impl TickSource for MonotonicSource {
    fn elapsed_ns(&self, mono_ns: u64) -> u64 {
        mono_ns.saturating_sub(self.epoch_mono)
    }
    fn mono_at(&self, elapsed: u64) -> u64 {
        self.epoch_mono.saturating_add(elapsed)
    }
}

/// A free-running oscillator: CLOCK_MONOTONIC since `epoch_mono`, running
/// `drift_ppb` fast and ahead by `offset_ns`. Used to inject a known clock
/// error into a slave's slot counter (the two namespaces of the testbed share
/// one CLOCK_MONOTONIC, so the true error is known exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverlaySource {
    /// CLOCK_MONOTONIC ns at which the oscillator starts counting.
    pub epoch_mono: u64,
    /// Ticks already counted at `epoch_mono` (must be ≥ 0: a counter cannot be negative).
    pub offset_ns: u64,
    /// Rate error of the oscillator in ppb (positive: fast).
    pub drift_ppb: i64,
}

impl TickSource for OverlaySource {
    fn elapsed_ns(&self, mono_ns: u64) -> u64 {
        let d = mono_ns.saturating_sub(self.epoch_mono) as i128;
        let scaled = d + d * self.drift_ppb as i128 / 1_000_000_000;
        (self.offset_ns as i128 + scaled).clamp(0, u64::MAX as i128) as u64
    }
    fn mono_at(&self, elapsed: u64) -> u64 {
        let e = elapsed as i128 - self.offset_ns as i128;
        if e <= 0 {
            return self.epoch_mono;
        }
        let scale = 1_000_000_000 + self.drift_ppb as i128;
        // Smallest d with d * scale / 1e9 >= e, then nudge for the floor in elapsed_ns.
        let mut d = (e * 1_000_000_000 + scale - 1) / scale;
        while d > 0 && (d - 1) + (d - 1) * self.drift_ppb as i128 / 1_000_000_000 >= e {
            d -= 1;
        }
        while d + d * self.drift_ppb as i128 / 1_000_000_000 < e {
            d += 1;
        }
        (self.epoch_mono as i128 + d).clamp(0, u64::MAX as i128) as u64
    }
}

/// A completion-counted source: slots the NIC has finished sending, as last
/// read by the driver's poll (KeepON's CP-PMD). The count only moves when
/// [`observe`](Self::observe) is called, so readings between polls are stale
/// (that staleness and the slot granularity are the EPHC's clock error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletionSource {
    /// Slot length, ns (one completion is one slot).
    pub slot_ns: u64,
    completed: u64,
}

impl CompletionSource {
    /// A counter at zero for slots of `slot_ns`.
    pub fn new(slot_ns: u64) -> CompletionSource {
        CompletionSource { slot_ns, completed: 0 }
    }
    /// Records the completion count the driver just read (monotonic: a smaller count is ignored).
    pub fn observe(&mut self, completed: u64) {
        self.completed = self.completed.max(completed);
    }
    /// Completions counted so far.
    pub fn completed(&self) -> u64 {
        self.completed
    }
}

impl TickSource for CompletionSource {
    fn elapsed_ns(&self, _mono_ns: u64) -> u64 {
        self.completed.saturating_mul(self.slot_ns)
    }
    fn mono_at(&self, _elapsed: u64) -> u64 {
        // The NIC, not the CPU, releases slots: there is no CPU instant to wait for.
        0
    }
}

/// The adjustable linear clock over a tick count (EPHC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotClock {
    ring: Ring,
    anchor_elapsed: u64,
    anchor_time: i128,
    rate_ppb: i64,
}

impl SlotClock {
    /// A clock that reads `time_at_epoch` when the source's elapsed count is 0, at the nominal rate.
    pub fn new(ring: Ring, time_at_epoch: u64) -> SlotClock {
        SlotClock { ring, anchor_elapsed: 0, anchor_time: time_at_epoch as i128, rate_ppb: 0 }
    }

    /// The ring geometry (slot length) the clock counts in.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Current rate adjustment in ppb.
    pub fn rate_ppb(&self) -> i64 {
        self.rate_ppb
    }

    /// The slot count at elapsed ticks `elapsed` (independent of every adjustment).
    pub fn count(&self, elapsed: u64) -> Slot {
        self.ring.slot_containing(elapsed)
    }

    /// Clock time (ns, may be negative after a large backward step) at elapsed ticks `elapsed`.
    pub fn time_i128(&self, elapsed: u64) -> i128 {
        let d = elapsed as i128 - self.anchor_elapsed as i128;
        self.anchor_time + d + (d * self.rate_ppb as i128).div_euclid(1_000_000_000)
    }

    /// Clock time at elapsed ticks `elapsed`, clamped to `u64`.
    pub fn time_at(&self, elapsed: u64) -> u64 {
        self.time_i128(elapsed).clamp(0, u64::MAX as i128) as u64
    }

    /// Clock time at which slot `s` starts.
    pub fn slot_time(&self, s: Slot) -> u64 {
        self.time_at(self.ring.start_ns(s))
    }

    /// The smallest elapsed count at which the clock reads at least `time`.
    pub(crate) fn elapsed_for_time(&self, time: u64) -> u64 {
        let dt = time as i128 - self.anchor_time;
        let scale = 1_000_000_000 + self.rate_ppb as i128;
        // Solve d + floor(d*ppb/1e9) >= dt; start from the real-valued root and correct.
        let mut d = (dt * 1_000_000_000).div_euclid(scale);
        let reads = |d: i128| d + (d * self.rate_ppb as i128).div_euclid(1_000_000_000);
        while reads(d) < dt {
            d += 1;
        }
        while reads(d - 1) >= dt {
            d -= 1;
        }
        (self.anchor_elapsed as i128 + d).clamp(0, u64::MAX as i128) as u64
    }

    /// The first slot starting when the clock reads `time` or later (never early).
    pub fn slot_for_time(&self, time: u64) -> Slot {
        self.ring.slot_starting_at_or_after(self.elapsed_for_time(time))
    }

    /// Offset adjustment: shifts the clock by `delta_ns` (the count is untouched).
    pub fn step(&mut self, delta_ns: i64) {
        self.anchor_time += delta_ns as i128;
    }

    /// Sets the clock to read `time` at elapsed ticks `now_elapsed` (the count is untouched).
    pub fn set_time(&mut self, now_elapsed: u64, time: u64) {
        self.anchor_elapsed = now_elapsed;
        self.anchor_time = time as i128;
    }

    /// Rate adjustment: from `now_elapsed` on, the clock advances
    /// `1 + rate_ppb/1e9` ns per tick (clamped to ±[`MAX_RATE_PPB`]). The
    /// reading at `now_elapsed` is kept, so the clock stays continuous, and the
    /// count is untouched.
    pub fn set_rate(&mut self, now_elapsed: u64, rate_ppb: i64) {
        self.anchor_time = self.time_i128(now_elapsed);
        self.anchor_elapsed = now_elapsed;
        self.rate_ppb = rate_ppb.clamp(-MAX_RATE_PPB, MAX_RATE_PPB);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> Ring {
        Ring { slot_ns: 1_000, slots: 100 }
    }

    #[test]
    fn reads_linearly_and_inverts() {
        let mut c = SlotClock::new(ring(), 5_000_000);
        assert_eq!(c.time_at(0), 5_000_000);
        assert_eq!(c.time_at(2_500), 5_002_500);
        assert_eq!(c.slot_for_time(5_002_500), 3);
        assert_eq!(c.slot_for_time(5_003_000), 3);
        c.set_rate(10_000, 1_000_000); // +1000 ppm
        assert_eq!(c.time_at(10_000), 5_010_000);
        assert_eq!(c.time_at(11_000), 5_011_001);
        assert_eq!(c.elapsed_for_time(5_011_001), 11_000);
        c.step(-1);
        assert_eq!(c.time_at(11_000), 5_011_000);
        assert_eq!(c.count(11_000), 11);
    }

    #[test]
    fn overlay_inverse_is_exact() {
        let s = OverlaySource { epoch_mono: 1_000, offset_ns: 37_000, drift_ppb: 50_000 };
        for e in [0u64, 36_999, 37_000, 37_001, 1_000_000, 123_456_789] {
            let m = s.mono_at(e);
            assert!(s.elapsed_ns(m) >= e, "e {e}");
            if m > s.epoch_mono {
                assert!(s.elapsed_ns(m - 1) < e, "e {e}");
            }
        }
    }
}
