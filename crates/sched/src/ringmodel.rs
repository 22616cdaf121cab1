//! A model of a NIC TX ring kept busy with fixed-size slots (KeepON's CP-PMD,
//! §4.1 and Appendix A.2), driving the completion-counted slot clock.
//!
//! **Simulated.** On this host no NIC has a line rate (veth completes a
//! "transmission" as fast as the CPU copies it), so a clock counted from TX
//! completions would only track the CPU. This model stands in for a line-rate
//! NIC so the completion-counted clock path ([`CompletionSource`] under a
//! [`SlotClock`]) runs and its error can be studied:
//!
//! - The NIC sends one slot every `slot_bytes · 8 / line_rate` while it has
//!   descriptors (consumer < producer), and idles otherwise (an underrun: the
//!   counter stops while time goes on, and the clock falls behind for good).
//! - The driver polls every `poll_period` plus a wake-up cost and a random
//!   (exponential) jitter; each poll reads the completion count into the
//!   clock and advances the producer by `batch` descriptors (ring permitting).
//! - Between polls the clock reads the count of the last poll: its error is
//!   the slot granularity plus the staleness of that count.
//!
//! What it reproduces: Table 3 (fraction of line rate reached for each batch
//! and polling period: `min(1, batch · slot / actual poll period)`); the
//! trend of Figure 8 (larger slots and larger batches give larger clock
//! offsets); Figure 7's square wave driven by the clock (mean period on
//! target, jitter from the poll).

use crate::clock::{CompletionSource, SlotClock, TickSource};
use crate::slot::Ring;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Parameters of one model run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RingModelConfig {
    /// Line rate, bit/s.
    pub line_rate_bps: u64,
    /// Bytes one slot occupies on the wire (frame, preamble and gap together).
    pub slot_bytes: u32,
    /// TX ring length in descriptors.
    pub ring_len: u32,
    /// Descriptors the driver hands the NIC per poll.
    pub batch: u32,
    /// Requested time between polls (ns); 0: poll back to back.
    pub poll_period_ns: u64,
    /// Fixed cost added to each sleeping poll (timer wake-up, reclaim), ns.
    pub wake_cost_ns: u64,
    /// Cost of one back-to-back poll, ns.
    pub spin_cost_ns: u64,
    /// Mean of the exponential jitter added to each poll, ns.
    pub poll_jitter_ns: u64,
    /// Simulated time, ns.
    pub duration_ns: u64,
    /// Target period of the clock-driven square wave (Figure 7), ns.
    pub wave_period_ns: u64,
    /// Seed of the poll jitter.
    pub seed: u64,
}

impl RingModelConfig {
    /// A Raspberry-Pi-like poller on a 1 Gbps line (the paper's testbed):
    /// timer wake-ups cost about 4 µs, back-to-back polls 0.2 µs, jitter 1 µs mean.
    pub(crate) fn gigabit(slot_bytes: u32, batch: u32, poll_period_ns: u64) -> RingModelConfig {
        RingModelConfig {
            line_rate_bps: 1_000_000_000,
            slot_bytes,
            ring_len: 1024,
            batch,
            poll_period_ns,
            wake_cost_ns: 4_000,
            spin_cost_ns: 200,
            poll_jitter_ns: 1_000,
            duration_ns: 200_000_000,
            wave_period_ns: 36_000,
            seed: 1,
        }
    }

    /// Slot length in picoseconds.
    pub(crate) fn slot_ps(&self) -> u64 {
        (self.slot_bytes as u128 * 8 * 1_000_000_000_000 / self.line_rate_bps.max(1) as u128) as u64
    }
}

/// Figures of one model run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RingModelReport {
    /// The parameters of the run.
    pub config: RingModelConfig,
    /// Slot length, ns.
    pub slot_ns: f64,
    /// Polls made.
    pub polls: u64,
    /// Line time spent sending slots / simulated time.
    pub line_rate_fraction: f64,
    /// Polls that found the NIC idle (the ring ran dry).
    pub underruns: u64,
    /// Line time lost to idling (the clock's permanent lag), ns.
    pub lost_ns: u64,
    /// |clock − true time| sampled every 1 µs: p50, p99, max (ns).
    pub clock_error_p50_ns: u64,
    /// |clock - true time|, 99th percentile, ns.
    pub clock_error_p99_ns: u64,
    /// |clock - true time|, largest, ns.
    pub clock_error_max_ns: u64,
    /// Square wave toggled when the clock crosses each multiple of the wave period:
    /// mean measured period and |period − target| p50/p99 (ns).
    pub wave_mean_period_ns: f64,
    /// Square-wave period error, median, ns.
    pub wave_error_p50_ns: u64,
    /// Square-wave period error, 99th percentile, ns.
    pub wave_error_p99_ns: u64,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

/// Runs the model.
pub fn run(cfg: &RingModelConfig) -> RingModelReport {
    let slot_ps = cfg.slot_ps().max(1);
    // The clock counts in ns; a slot that is not a whole number of ns is rounded for the clock only.
    let slot_ns = (slot_ps as f64 / 1000.0).round().max(1.0) as u64;
    let mut source = CompletionSource::new(slot_ns);
    let clock = SlotClock::new(Ring { slot_ns, slots: cfg.ring_len.max(1) }, 0);
    let mut rng = Rng(cfg.seed | 1);
    let end_ps = cfg.duration_ns * 1000;
    let hist = || Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds");
    let (mut err_h, mut wave_h) = (hist(), hist());

    let mut completed: u64 = 0;
    let mut producer: u64 = cfg.batch.min(cfg.ring_len) as u64;
    let mut nic_next_ps: u64 = slot_ps; // completion time of the slot in flight
    let mut t_ps: u64 = 0;
    let mut polls = 0;
    let mut underruns = 0;
    let mut idle_ps: u64 = 0;
    let sample_step_ps = 1_000_000 + 7; // ~1 µs, off the slot grid
    let mut next_sample_ps = sample_step_ps;
    let wave = cfg.wave_period_ns.max(1);
    let mut next_toggle = wave;
    let mut last_toggle_ps: Option<u64> = None;
    let (mut wave_sum, mut wave_n) = (0f64, 0u64);

    while t_ps < end_ps {
        let gap_ps = if cfg.poll_period_ns == 0 {
            cfg.spin_cost_ns * 1000
        } else {
            (cfg.poll_period_ns + cfg.wake_cost_ns) * 1000 + (rng.exp(cfg.poll_jitter_ns as f64) * 1000.0) as u64
        };
        let t_next = t_ps + gap_ps.max(1);
        // Clock readings between the polls see the count of the previous poll.
        let reading_ns = clock.time_at(source.elapsed_ns(0));
        while next_sample_ps <= t_next.min(end_ps) {
            let truth_ns = next_sample_ps / 1000;
            err_h.saturating_record(truth_ns.abs_diff(reading_ns));
            next_sample_ps += sample_step_ps;
        }
        t_ps = t_next;
        // The NIC sends while it has descriptors.
        while completed < producer && nic_next_ps <= t_ps {
            completed += 1;
            nic_next_ps += slot_ps;
        }
        let idle = completed == producer;
        if idle {
            underruns += 1;
        }
        // The poll: read completions into the clock, then hand the NIC another batch.
        polls += 1;
        source.observe(completed);
        let now_clock = clock.time_at(source.elapsed_ns(0));
        if now_clock >= next_toggle {
            if let Some(prev) = last_toggle_ps {
                let period_ns = (t_ps - prev) as f64 / 1000.0;
                wave_sum += period_ns;
                wave_n += 1;
                wave_h.saturating_record((period_ns - wave as f64).abs() as u64);
            }
            last_toggle_ps = Some(t_ps);
            next_toggle = (now_clock / wave + 1) * wave;
        }
        let space = cfg.ring_len as u64 - (producer - completed);
        let advance = space.min(cfg.batch as u64);
        if advance > 0 {
            if idle {
                // The line was idle from the last completion until now.
                let last_done = nic_next_ps - slot_ps;
                idle_ps += t_ps.saturating_sub(last_done);
                nic_next_ps = t_ps + slot_ps;
            }
            producer += advance;
        }
    }
    let q = |h: &Histogram<u64>, p: f64| {
        if h.is_empty() {
            0
        } else {
            h.value_at_quantile(p)
        }
    };
    RingModelReport {
        config: *cfg,
        slot_ns: slot_ps as f64 / 1000.0,
        polls,
        line_rate_fraction: (completed as f64 * slot_ps as f64 / t_ps.max(1) as f64).min(1.0),
        underruns,
        lost_ns: idle_ps / 1000,
        clock_error_p50_ns: q(&err_h, 0.5),
        clock_error_p99_ns: q(&err_h, 0.99),
        clock_error_max_ns: err_h.max(),
        wave_mean_period_ns: if wave_n > 0 { wave_sum / wave_n as f64 } else { 0.0 },
        wave_error_p50_ns: q(&wave_h, 0.5),
        wave_error_p99_ns: q(&wave_h, 0.99),
    }
}

/// Table 3 of the paper: line-rate fraction for batches × polling periods (300-byte slots, 1 Gbps).
pub fn table3() -> Vec<(u32, u64, f64)> {
    let mut out = Vec::new();
    for batch in [1u32, 8, 64, 512] {
        for period_us in [0u64, 10, 100, 1000] {
            let mut cfg = RingModelConfig::gigabit(300, batch, period_us * 1000);
            cfg.duration_ns = 100_000_000;
            out.push((batch, period_us, run(&cfg).line_rate_fraction));
        }
    }
    out
}

/// Figure 8's sweep: clock error for slot sizes × batch sizes, each polled
/// just often enough for its batch (period = batch · slot − wake cost, at least 0).
pub fn figure8(slot_bytes: &[u32], batches: &[u32]) -> Vec<RingModelReport> {
    let mut out = Vec::new();
    for &bytes in slot_bytes {
        for &batch in batches {
            let probe = RingModelConfig::gigabit(bytes, batch, 0);
            let budget_ns = batch as u64 * probe.slot_ps() / 1000;
            // Sleep so that the poll comes on average a little before the batch runs out.
            let period = budget_ns.saturating_sub(probe.wake_cost_ns + 2 * probe.poll_jitter_ns);
            let mut cfg = RingModelConfig::gigabit(bytes, batch, period);
            cfg.duration_ns = 100_000_000;
            out.push(run(&cfg));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_poll_keeps_line_rate_and_a_tight_clock() {
        let r = run(&RingModelConfig { duration_ns: 20_000_000, ..RingModelConfig::gigabit(300, 1, 0) });
        assert!(r.line_rate_fraction > 0.99, "{r:?}");
        assert_eq!(r.lost_ns, 0, "{r:?}");
        // Granularity 2.4 µs plus a 0.2 µs poll.
        assert!(r.clock_error_max_ns < 2 * 2_400 + 2_000, "{r:?}");
    }

    #[test]
    fn slow_polls_starve_the_nic_and_the_clock_falls_behind() {
        let r = run(&RingModelConfig { duration_ns: 20_000_000, ..RingModelConfig::gigabit(300, 1, 100_000) });
        assert!(r.line_rate_fraction < 0.05, "{r:?}");
        assert!(r.underruns > 100);
        assert!(r.clock_error_p99_ns > 1_000_000, "{r:?}");
    }
}
