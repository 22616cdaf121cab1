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
//!
//! How the engine does it ([`judge`]):
//! - The latency is taken when the reader delivers the sample into its
//!   cache (what the application can take): the wall clock then
//!   ([`Config::clock`](crate::engine::Config::clock), CLOCK_REALTIME by
//!   default) minus the sample's INFO_TS. The sample's arrival (the
//!   datapath's receive stamp the driver passes as `now`, CLOCK_MONOTONIC)
//!   gives the part spent waiting in the reader.
//! - The budget is the writer's offered LATENCY_BUDGET from its SEDP
//!   announcement; when it offers none (0), the reader's own. With no
//!   budget at all latencies go into the histogram and count neither
//!   within nor over.
//! - Causes ([`attribute`], the instrument's rule for a slow round applied
//!   to one sample): the sample's latency is split into the parts detpath
//!   can measure, and the first part, in the order sender, repair,
//!   reader, that covers at least [`ATTRIBUTION_SHARE`] of the sample's
//!   excess over its budget is its cause; the network only gets what no
//!   part explains. [`Cause::SentLate`]: the time from INFO_TS to the
//!   datagram leaving the writer (the slot scheduler held it);
//!   [`Cause::Retransmission`]: the sample was NACKed by this reader or
//!   waited in its reorder window for an earlier one to be repaired (a
//!   repair takes a heartbeat and a round trip, so the flag alone counts);
//!   [`Cause::ReaderLate`]: the time from the datagram's arrival (the
//!   datapath's receive stamp) to delivery. The engine's reader knows the
//!   last two; the sender's part is only known where the writer's release
//!   is observed (the mixed benchmark observes the scheduler's releases),
//!   since detpath sends no second timestamp: in the engine's own counts a
//!   late send is Network.
//! - Implausible: an INFO_TS more than [`FUTURE_SLACK_NS`] ahead of the
//!   reader's clock or more than [`MAX_AGE_NS`] behind it.
//! - [`ClockSync::SameHost`]: the writer's participant announced, in a
//!   detpath vendor parameter of its SPDP (PID 0x8d01), the same host id as
//!   ours ([`this_host_id`]: the kernel's boot id, shared by every network
//!   namespace of a host and different on every other host and after every
//!   reboot). [`ClockSync::Synchronised`]:
//!   [`Config::clock_synchronised`](crate::engine::Config::clock_synchronised),
//!   which the application sets when PTP disciplines the clock. Else
//!   [`ClockSync::Unsynchronised`]: every sample is unjudged.

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

    /// Counts one sample's verdict.
    pub fn count(&mut self, v: Verdict) {
        match v {
            Verdict::Unjudged => self.unjudged += 1,
            Verdict::Implausible => self.implausible += 1,
            Verdict::Measured { latency_ns } => self.histogram.record(latency_ns),
            Verdict::Within { latency_ns } => {
                self.within += 1;
                self.histogram.record(latency_ns);
            }
            Verdict::Over { latency_ns, cause } => {
                self.over += 1;
                self.causes[cause.index()] += 1;
                self.histogram.record(latency_ns);
            }
        }
    }
}

/// An INFO_TS further ahead of the reader's clock than this is implausible, ns.
pub const FUTURE_SLACK_NS: i64 = 1_000_000_000;
/// An INFO_TS older than this (by the reader's clock) is implausible, ns.
pub const MAX_AGE_NS: i64 = 3_600_000_000_000;

/// The two clocks at one moment: the wall clock INFO_TS is on, and the
/// monotonic clock reception stamps are on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clocks {
    /// CLOCK_REALTIME, ns since the epoch.
    pub wall_ns: i64,
    /// CLOCK_MONOTONIC, ns.
    pub mono_ns: u64,
}

/// Reads both clocks (a function pointer, so tests inject their own).
pub type ClockFn = fn() -> Clocks;

/// The system's CLOCK_REALTIME and CLOCK_MONOTONIC.
pub fn system_clocks() -> Clocks {
    let read = |id| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid clock id and a valid, writable timespec.
        unsafe { libc::clock_gettime(id, &mut ts) };
        ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    };
    Clocks { wall_ns: read(libc::CLOCK_REALTIME), mono_ns: read(libc::CLOCK_MONOTONIC) as u64 }
}

/// This host's id for [`ClockSync::SameHost`]: the kernel's boot id
/// (`/proc/sys/kernel/random/boot_id`, one per boot, the same in every
/// network namespace), as 16 bytes; `None` when it cannot be read.
pub fn this_host_id() -> Option<[u8; 16]> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    parse_uuid(text.trim())
}

/// A UUID's 32 hex digits (dashes ignored) as 16 bytes.
fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let hex: Vec<u8> = s.bytes().filter(|&c| c != b'-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// What one sample counts as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No INFO_TS, or the clocks do not agree.
    Unjudged,
    /// An INFO_TS too far from the reader's clock.
    Implausible,
    /// Measured, no budget to judge against.
    Measured {
        /// One-way latency, ns.
        latency_ns: u64,
    },
    /// Within the budget.
    Within {
        /// One-way latency, ns.
        latency_ns: u64,
    },
    /// Over the budget.
    Over {
        /// One-way latency, ns.
        latency_ns: u64,
        /// Why.
        cause: Cause,
    },
}

/// One sample's verdict: `source_ns` its INFO_TS (wall ns; `None`: none
/// sent), `clock` whether the writer's clock agrees with ours, `budget_ns`
/// the budget (0: none), `at` the clocks at delivery, `arrival_mono_ns`
/// when its datagram arrived (monotonic), `repaired` whether it was
/// NACKed or waited for a repair.
pub fn judge(source_ns: Option<i64>, clock: ClockSync, budget_ns: i64, at: Clocks, arrival_mono_ns: u64, repaired: bool) -> Verdict {
    let Some(ts) = source_ns else { return Verdict::Unjudged };
    if !clock.judges() {
        return Verdict::Unjudged;
    }
    let latency = at.wall_ns.saturating_sub(ts);
    if !(-FUTURE_SLACK_NS..=MAX_AGE_NS).contains(&latency) {
        return Verdict::Implausible;
    }
    // A little ahead (clocks within the slack): no time at all.
    let latency_ns = latency.max(0) as u64;
    if budget_ns <= 0 {
        return Verdict::Measured { latency_ns };
    }
    let budget = budget_ns as u64;
    if latency_ns <= budget {
        return Verdict::Within { latency_ns };
    }
    let parts = Parts { sender_ns: None, repaired, reader_ns: Some(at.mono_ns.saturating_sub(arrival_mono_ns)) };
    Verdict::Over { latency_ns, cause: attribute(latency_ns, budget, parts) }
}

/// The share of a sample's excess over its budget that one part of its
/// latency must cover to be its cause: the instrument's share for a slow
/// round's gap (`detpath_instrument::tail::GAP_SHARE`, one rule for both;
/// the mixed benchmark's tests check they agree).
pub const ATTRIBUTION_SHARE: f64 = 0.5;

/// The parts of one over-budget sample's latency that detpath measured
/// (`None`: not known where it is judged).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parts {
    /// From the sample's INFO_TS to its datagram leaving the writer's
    /// side (the slot scheduler's hand-off, or the send call), ns.
    pub sender_ns: Option<u64>,
    /// It was lost and repaired (NACKed, or it waited for an earlier repair).
    pub repaired: bool,
    /// From its datagram's arrival (the receive stamp) to its delivery, ns.
    pub reader_ns: Option<u64>,
}

/// Why a sample of latency `latency_ns` went over `budget_ns`: the first of
/// the sender's part, the repair and the reader's part that covers at
/// least [`ATTRIBUTION_SHARE`] of the excess (`latency_ns - budget_ns`),
/// as the instrument gives a slow round the cause of the first piece of
/// evidence that covers its share of the excess; [`Cause::Network`]
/// (what lies between leaving the writer and arriving) when none does.
pub fn attribute(latency_ns: u64, budget_ns: u64, parts: Parts) -> Cause {
    let excess = latency_ns.saturating_sub(budget_ns);
    let needed = (excess as f64 * ATTRIBUTION_SHARE).ceil() as u64;
    let covers = |part: Option<u64>| part.is_some_and(|p| p > 0 && p >= needed);
    if covers(parts.sender_ns) {
        Cause::SentLate
    } else if parts.repaired {
        Cause::Retransmission
    } else if covers(parts.reader_ns) {
        Cause::ReaderLate
    } else {
        Cause::Network
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let at = Clocks { wall_ns: 10_000_000_000, mono_ns: 5_000_000 };
        let j = |ts: i64, clock, budget, arrival, repaired| judge(Some(at.wall_ns - ts), clock, budget, at, arrival, repaired);
        let s = ClockSync::SameHost;
        assert_eq!(j(50_000, s, 100_000, at.mono_ns, false), Verdict::Within { latency_ns: 50_000 });
        assert_eq!(j(150_000, s, 100_000, at.mono_ns, false), Verdict::Over { latency_ns: 150_000, cause: Cause::Network });
        assert_eq!(j(150_000, s, 100_000, at.mono_ns, true), Verdict::Over { latency_ns: 150_000, cause: Cause::Retransmission });
        // Arrived 60 µs after it was sent, delivered 90 µs later.
        assert_eq!(j(150_000, s, 100_000, at.mono_ns - 90_000, false), Verdict::Over { latency_ns: 150_000, cause: Cause::ReaderLate });
        assert_eq!(j(150_000, s, 0, at.mono_ns, false), Verdict::Measured { latency_ns: 150_000 });
        assert_eq!(j(150_000, ClockSync::Unsynchronised, 100_000, at.mono_ns, false), Verdict::Unjudged);
        assert_eq!(judge(None, s, 100_000, at, 0, false), Verdict::Unjudged);
        assert_eq!(j(-2_000_000_000, s, 100_000, at.mono_ns, false), Verdict::Implausible);
        assert_eq!(j(MAX_AGE_NS + 1, s, 100_000, at.mono_ns, false), Verdict::Implausible);
        assert_eq!(j(-500_000, s, 100_000, at.mono_ns, false), Verdict::Within { latency_ns: 0 });
        // A forged INFO_TS at the far ends of time never overflows.
        assert_eq!(judge(Some(i64::MIN), s, 1, at, 0, false), Verdict::Implausible);
        assert_eq!(judge(Some(i64::MAX), s, 1, at, 0, false), Verdict::Implausible);
    }

    #[test]
    fn the_first_part_covering_half_the_excess_is_the_cause() {
        // 150 µs against 100 µs: 50 µs over, a part needs 25 µs.
        let p = |sender, repaired, reader| Parts { sender_ns: sender, repaired, reader_ns: reader };
        assert_eq!(attribute(150_000, 100_000, p(Some(30_000), false, Some(40_000))), Cause::SentLate);
        assert_eq!(attribute(150_000, 100_000, p(Some(20_000), true, Some(40_000))), Cause::Retransmission);
        assert_eq!(attribute(150_000, 100_000, p(Some(20_000), false, Some(25_000))), Cause::ReaderLate);
        assert_eq!(attribute(150_000, 100_000, p(Some(20_000), false, Some(24_999))), Cause::Network);
        // Unknown parts explain nothing: the network gets only what remains.
        assert_eq!(attribute(150_000, 100_000, p(None, false, None)), Cause::Network);
        // The sender comes first even when the reader's part is larger (the instrument's order).
        assert_eq!(attribute(1_000_000, 100_000, p(Some(450_000), false, Some(500_000))), Cause::SentLate);
        // A sample just over: any measured part of it counts, a zero part does not.
        assert_eq!(attribute(100_001, 100_000, p(Some(1), false, None)), Cause::SentLate);
        assert_eq!(attribute(100_001, 100_000, p(Some(0), false, Some(0))), Cause::Network);
    }

    #[test]
    fn a_boot_id_reads_as_16_bytes() {
        assert_eq!(parse_uuid("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0").unwrap()[..3], [0x0f, 0x1e, 0x2d]);
        assert_eq!(parse_uuid("xyz"), None);
        assert!(this_host_id().is_some(), "this Linux host has a boot id");
    }

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
