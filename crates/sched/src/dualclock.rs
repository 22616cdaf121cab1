//! KeepON's dual clock (paper 003, §5.2), modelled: a Tx clock counted from
//! TX completions and an Rx clock counted from packets arriving at line
//! rate from a peer that also keeps its ring busy, merged into one.
//!
//! **Simulated**, like [`ringmodel`](crate::ringmodel) (no line-rate NIC
//! here). Each side has its own polling thread (period, wake-up cost,
//! exponential jitter, and rare long stalls: the "traffic burst or system
//! jitter" of §5.2). A Tx stall longer than the descriptors handed out
//! starves the NIC (an underrun: the Tx count falls behind for good); an Rx
//! stall longer than the Rx ring overflows it (arrivals dropped: the Rx
//! count falls behind for good). Between polls each clock reads its last
//! count, so it lags by up to a poll gap.
//!
//! The merge, on every poll of either side:
//!
//! - **large divergence** (|Tx − Rx| above the worst-case jitter): the lagging
//!   clock is set to the leading one (a count that fell behind is a fault).
//!   It is judged when the lagging side has just polled: a clock behind only
//!   because its thread is late catches up by itself at its next poll;
//! - **small divergence**: the merged reading combines the two. The paper's
//!   formula did not survive into the text we have; §5.2 says the jitter is
//!   "predominantly due to delayed clock updates" and that merging halves the
//!   worst-case jitter, so both candidates are modelled: the mean of the two
//!   ([`Merge::Mean`]) and the leading one ([`Merge::Leading`], the least
//!   stale count).
//!
//! The figures (Figure 13(a)'s clock quality): |clock − true time| of the Tx
//! clock alone (today's single clock), the Rx clock alone, and the merged
//! clock, and the faults the merge corrected.

use crate::ringmodel::RingModelConfig;
use hdrhistogram::Histogram;
use serde::Serialize;

/// How two consistent readings are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Merge {
    /// (Tx + Rx) / 2.
    Mean,
    /// max(Tx, Rx): both clocks only lag, so the larger is the fresher.
    Leading,
}

/// One dual-clock model run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DualClockConfig {
    /// Line rate, slot size, ring, batch, poll period, wake cost, jitter, duration (both sides alike).
    pub ring: RingModelConfig,
    /// Probability that a poll is held up by a stall.
    pub stall_prob: f64,
    /// Mean length of a stall (exponential), ns.
    pub stall_mean_ns: u64,
    /// Worst-case jitter: a larger |Tx − Rx| is a fault, ns.
    pub merge_threshold_ns: u64,
    /// The small-divergence merge.
    pub merge: Merge,
}

/// |clock − true time| quantiles, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ErrorQuantiles {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

/// Figures of one run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DualClockReport {
    /// The parameters.
    pub config: DualClockConfig,
    /// Slot length, ns.
    pub slot_ns: f64,
    /// The Tx clock alone (KeepON's single clock).
    pub tx: ErrorQuantiles,
    /// The Rx clock alone.
    pub rx: ErrorQuantiles,
    /// The merged clock.
    pub merged: ErrorQuantiles,
    /// Tx underruns (NIC idle at a poll).
    pub tx_underruns: u64,
    /// Rx arrivals dropped on a full ring.
    pub rx_dropped: u64,
    /// Large divergences corrected by the merge.
    pub corrections: u64,
}

struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

/// One side's polling thread: when its next poll comes.
struct Poller {
    rng: Rng,
    next_ps: u64,
}

impl Poller {
    fn gap_ps(&mut self, c: &DualClockConfig) -> u64 {
        let r = &c.ring;
        let mut gap = if r.poll_period_ns == 0 {
            r.spin_cost_ns as f64 * 1000.0
        } else {
            (r.poll_period_ns + r.wake_cost_ns) as f64 * 1000.0 + self.rng.exp(r.poll_jitter_ns as f64) * 1000.0
        };
        if self.rng.unit() < c.stall_prob {
            gap += self.rng.exp(c.stall_mean_ns as f64) * 1000.0;
        }
        (gap as u64).max(1)
    }
}

/// Runs the model.
pub fn run(c: &DualClockConfig) -> DualClockReport {
    let r = &c.ring;
    let slot_ps = r.slot_ps().max(1);
    let end_ps = r.duration_ns * 1000;
    let hist = || Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds");
    let (mut tx_h, mut rx_h, mut m_h) = (hist(), hist(), hist());
    // Tx: NIC completes a slot every slot_ps while it has descriptors.
    let (mut completed, mut producer, mut nic_next_ps) = (0u64, r.batch.min(r.ring_len) as u64, slot_ps);
    let mut tx_seen = 0u64; // count at the Tx thread's last poll
    let mut tx_underruns = 0u64;
    // Rx: the peer's slot k arrives at k·slot_ps; the ring holds ring_len until reclaimed.
    let (mut rx_arrived, mut rx_in_ring, mut rx_dropped, mut rx_next_ps) = (0u64, 0u64, 0u64, slot_ps);
    let mut rx_seen = 0u64;
    // Corrections (slots) the merge added to each count.
    let (mut tx_fix, mut rx_fix, mut corrections) = (0u64, 0u64, 0u64);
    let mut tx_poll = Poller { rng: Rng(r.seed | 1), next_ps: 0 };
    let mut rx_poll = Poller { rng: Rng((r.seed ^ 0x9e37_79b9_7f4a_7c15) | 1), next_ps: 0 };
    tx_poll.next_ps = tx_poll.gap_ps(c);
    rx_poll.next_ps = rx_poll.gap_ps(c);
    let threshold_ps = c.merge_threshold_ns * 1000;
    let step_ps = 1_000_000 + 7;
    let mut sample_ps = step_ps;
    let read = |seen: u64, fix: u64| (seen + fix) * slot_ps;
    let merged = |tx: u64, rx: u64| match c.merge {
        Merge::Mean => (tx + rx) / 2,
        Merge::Leading => tx.max(rx),
    };
    loop {
        let t = tx_poll.next_ps.min(rx_poll.next_ps);
        if t >= end_ps {
            break;
        }
        // Readings between events are those of the last polls.
        while sample_ps <= t {
            let (tx, rx) = (read(tx_seen, tx_fix), read(rx_seen, rx_fix));
            tx_h.saturating_record(sample_ps.abs_diff(tx_seen * slot_ps) / 1000);
            rx_h.saturating_record(sample_ps.abs_diff(rx_seen * slot_ps) / 1000);
            m_h.saturating_record(sample_ps.abs_diff(merged(tx, rx)) / 1000);
            sample_ps += step_ps;
        }
        let tx_turn = tx_poll.next_ps == t;
        if tx_turn {
            while completed < producer && nic_next_ps <= t {
                completed += 1;
                nic_next_ps += slot_ps;
            }
            let idle = completed == producer;
            tx_underruns += idle as u64;
            tx_seen = completed;
            let advance = (r.ring_len as u64 - (producer - completed)).min(r.batch as u64);
            if advance > 0 {
                if idle {
                    nic_next_ps = t + slot_ps;
                }
                producer += advance;
            }
            tx_poll.next_ps = t + tx_poll.gap_ps(c);
        } else {
            while rx_next_ps <= t {
                if rx_in_ring < r.ring_len as u64 {
                    rx_in_ring += 1;
                    rx_arrived += 1;
                } else {
                    rx_dropped += 1;
                }
                rx_next_ps += slot_ps;
            }
            rx_seen = rx_arrived;
            rx_in_ring = 0;
            rx_poll.next_ps = t + rx_poll.gap_ps(c);
        }
        // The merge's fault rule, judged on the side that just polled (its
        // count is fresh): still behind the other by more than the worst-case
        // jitter means its count lost slots (an underrun, a dropped
        // arrival), not that its thread was late; it takes the other's value.
        // (Behind because the *other* thread is late is staleness, not a fault.)
        let (tx, rx) = (read(tx_seen, tx_fix), read(rx_seen, rx_fix));
        if tx_turn && tx + threshold_ps < rx {
            corrections += 1;
            tx_fix += (rx - tx) / slot_ps;
        } else if !tx_turn && rx + threshold_ps < tx {
            corrections += 1;
            rx_fix += (tx - rx) / slot_ps;
        }
    }
    let q = |h: &Histogram<u64>| {
        let v = |p: f64| if h.is_empty() { 0 } else { h.value_at_quantile(p) };
        ErrorQuantiles { p50: v(0.5), p99: v(0.99), max: h.max() }
    };
    DualClockReport { config: *c, slot_ns: slot_ps as f64 / 1000.0, tx: q(&tx_h), rx: q(&rx_h), merged: q(&m_h), tx_underruns, rx_dropped, corrections }
}

/// The `sched model` sweep: 300-byte slots at 1 Gb/s for batches 1, 8 and
/// 32 (each polled just often enough, as Figure 8) on a short ring (four
/// batches, at least 32 descriptors: KeepON partitions its rings), without
/// and with stalls (200 a second on each side, 100 µs mean), both merges;
/// the worst-case jitter is four poll gaps.
pub fn sweep() -> Vec<DualClockReport> {
    let mut out = Vec::new();
    for batch in [1u32, 8, 32] {
        let probe = RingModelConfig::gigabit(300, batch, 0);
        let budget_ns = batch as u64 * probe.slot_ps() / 1000;
        let period = if batch == 1 { 0 } else { budget_ns.saturating_sub(probe.wake_cost_ns + 2 * probe.poll_jitter_ns) };
        let ring_len = (4 * batch).max(32);
        let ring = RingModelConfig { duration_ns: 50_000_000, ring_len, ..RingModelConfig::gigabit(300, batch, period) };
        let gap = if period == 0 { ring.spin_cost_ns } else { period + ring.wake_cost_ns + ring.poll_jitter_ns };
        for stalls_per_s in [0.0, 200.0] {
            for merge in [Merge::Mean, Merge::Leading] {
                out.push(run(&DualClockConfig {
                    ring,
                    stall_prob: stalls_per_s * gap as f64 / 1e9,
                    stall_mean_ns: 100_000,
                    merge_threshold_ns: (4 * gap).max(ring.slot_ps() / 250),
                    merge,
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(stall_prob: f64, merge: Merge) -> DualClockConfig {
        let ring = RingModelConfig { duration_ns: 20_000_000, ring_len: 32, ..RingModelConfig::gigabit(300, 8, 13_200) };
        DualClockConfig { ring, stall_prob, stall_mean_ns: 100_000, merge_threshold_ns: 80_000, merge }
    }

    #[test]
    fn without_faults_the_merge_is_no_worse_than_either_clock() {
        let r = run(&cfg(0.0, Merge::Leading));
        assert_eq!(r.corrections, 0, "{r:?}");
        assert!(r.merged.p99 <= r.tx.p99.min(r.rx.p99), "{r:?}");
        let m = run(&cfg(0.0, Merge::Mean));
        assert!(m.merged.p50 <= m.tx.p50.max(m.rx.p50), "{m:?}");
    }

    #[test]
    fn stalls_make_a_single_clock_fall_behind_and_the_merge_corrects_it() {
        let r = run(&cfg(2e-3, Merge::Leading));
        assert!(r.tx_underruns + r.rx_dropped > 0, "{r:?}");
        assert!(r.corrections > 0, "{r:?}");
        // A count that fell behind stays behind alone; merged, it is pulled back.
        assert!(r.tx.max.max(r.rx.max) > 4 * r.merged.p99, "{r:?}");
        assert!(r.merged.p99 < r.tx.p99.max(r.rx.p99), "{r:?}");
    }
}
