//! Every received sample held to its latency budget: its one-way latency
//! (reception time minus the writer's INFO_TS, both on the same wall clock)
//! against the writer's LATENCY_BUDGET (or, when the writer offers none,
//! the reader's), counted within or over, over-budget samples with a
//! cause, and a latency histogram per reader.
//!
//! A latency is only judged when the two clocks agree ([`ClockSync`]): on
//! one host (the testbed's two namespaces share one clock), or with a
//! synchronised clock (`detpath sched ptp`, ptp4l). Without one, samples
//! are counted as unjudged and no violation is ever reported. An INFO_TS
//! far from the reader's clock (forged, or a clock gone wrong) is counted
//! as implausible and kept out of the histogram.

/// Whether a reader can judge one-way latencies against its writers' clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClockSync {
    /// Writer and reader read the same clock (one host).
    SameHost,
    /// The reader's clock is disciplined to a common reference (PTP).
    Synchronised,
    /// Nothing says the clocks agree: latencies are not judged.
    #[default]
    Unsynchronised,
}

impl ClockSync {
    /// Whether latencies can be judged.
    pub fn judges(self) -> bool {
        !matches!(self, ClockSync::Unsynchronised)
    }
    /// The name in JSON and metrics (`same-host`, `synchronised`, `unsynchronised`).
    pub fn name(self) -> &'static str {
        match self {
            ClockSync::SameHost => "same-host",
            ClockSync::Synchronised => "synchronised",
            ClockSync::Unsynchronised => "unsynchronised",
        }
    }
}

/// Why a sample arrived over its budget, where detpath can know it
/// (the instrument's attribution rules, applied to one sample).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// The writer's side sent it late (the slot scheduler held it, or the
    /// writer stamped it long before it could send).
    SentLate,
    /// It was lost and repaired: it waited in the writer's history for a
    /// retransmission.
    Retransmission,
    /// It arrived in time but the reader's thread took it late (descheduled).
    ReaderLate,
    /// None of the above: the time went in the network (or a datapath queue).
    Network,
}

impl Cause {
    /// Every cause, in the order of [`BudgetStats::causes`].
    pub const ALL: [Cause; 4] = [Cause::SentLate, Cause::Retransmission, Cause::ReaderLate, Cause::Network];
    /// The name in JSON and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Cause::SentLate => "sent_late",
            Cause::Retransmission => "retransmission",
            Cause::ReaderLate => "reader_late",
            Cause::Network => "network",
        }
    }
    /// The index in [`BudgetStats::causes`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Upper bounds of the latency histogram's buckets, ns (the last bucket,
/// above the largest bound, is `+Inf`). Fixed, so every reader's histogram
/// can be summed and exported as one Prometheus histogram.
pub const BUCKET_BOUNDS_NS: [u64; 16] = [
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    500_000_000,
    1_000_000_000,
];

/// A latency histogram with [`BUCKET_BOUNDS_NS`] (counts per bucket, not cumulative).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LatencyHistogram {
    /// Samples per bucket; index `BUCKET_BOUNDS_NS.len()` is `+Inf`.
    pub counts: [u64; BUCKET_BOUNDS_NS.len() + 1],
    /// Sum of the latencies, ns.
    pub sum_ns: u128,
    /// Number of samples.
    pub count: u64,
    /// The largest latency, ns.
    pub max_ns: u64,
}

impl LatencyHistogram {
    /// Adds one latency.
    pub fn record(&mut self, ns: u64) {
        let i = BUCKET_BOUNDS_NS.iter().position(|&b| ns <= b).unwrap_or(BUCKET_BOUNDS_NS.len());
        self.counts[i] += 1;
        self.sum_ns += u128::from(ns);
        self.count += 1;
        self.max_ns = self.max_ns.max(ns);
    }
}

/// A reader's budget accounting.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BudgetStats {
    /// The budget samples are judged against, ns (0: no budget; latencies
    /// are still measured).
    pub budget_ns: i64,
    /// Whether the clocks agree (see [`ClockSync`]).
    pub clock: ClockSync,
    /// Samples judged within the budget.
    pub within: u64,
    /// Samples judged over the budget.
    pub over: u64,
    /// Over-budget samples per cause, indexed by [`Cause::index`].
    pub causes: [u64; Cause::ALL.len()],
    /// Samples without a usable INFO_TS, or received while the clocks did
    /// not agree: not judged.
    pub unjudged: u64,
    /// Samples whose INFO_TS was implausible (in the future, or older than
    /// any budget could mean): counted here, kept out of the histogram.
    pub implausible: u64,
    /// The one-way latencies of the judged samples.
    pub histogram: LatencyHistogram,
}

impl BudgetStats {
    /// Over-budget samples of one cause.
    pub fn cause(&self, c: Cause) -> u64 {
        self.causes[c.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_by_upper_bound() {
        let mut h = LatencyHistogram::default();
        h.record(5_000);
        h.record(5_001);
        h.record(2_000_000_000);
        assert_eq!(h.counts[0], 1);
        assert_eq!(h.counts[1], 1);
        assert_eq!(h.counts[BUCKET_BOUNDS_NS.len()], 1);
        assert_eq!(h.count, 3);
        assert_eq!(h.max_ns, 2_000_000_000);
    }
}
