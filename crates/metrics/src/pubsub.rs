//! A pub-sub node's readers as metrics (`detpath pubsub sub --metrics ADDR`):
//! per-reader counters, samples within and over their latency budget,
//! over-budget samples by cause, and the one-way latency as a Prometheus
//! histogram with fixed buckets.
//!
//! ```text
//! detpath_pubsub_reader_samples_total{topic="DDSPerfRDataKS",clock="same-host"} 1000
//! detpath_pubsub_budget_within_total{topic="DDSPerfRDataKS",clock="same-host"} 998
//! detpath_pubsub_budget_over_total{topic="DDSPerfRDataKS",clock="same-host",cause="network"} 2
//! detpath_pubsub_sample_latency_seconds_bucket{topic="DDSPerfRDataKS",clock="same-host",le="0.0001"} 990
//! ```
//!
//! The figures come from the node (a [`Source`] the command adds with
//! [`crate::Metrics::add_pubsub_source`]), in neutral types, so this crate
//! needs nothing of the pub-sub crate.

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use std::sync::{Arc, Mutex};

type Labels = Vec<(String, String)>;

/// One reader's figures at a scrape.
#[derive(Clone, Debug, Default)]
pub struct ReaderFigures {
    /// The reader's topic.
    pub topic: String,
    /// `same-host`, `synchronised` or `unsynchronised` (then nothing is judged).
    pub clock: String,
    /// The latency budget, seconds (0: none).
    pub budget_seconds: f64,
    /// Writers matched now.
    pub matched: u64,
    /// Samples received.
    pub received: u64,
    /// Samples lost.
    pub lost: u64,
    /// Samples refused while a KEEP_ALL cache was full.
    pub rejected: u64,
    /// Deadline periods without a sample.
    pub deadline_missed: u64,
    /// Samples that did not deserialize as the reader's type.
    pub undecodable: u64,
    /// Samples within the budget.
    pub within: u64,
    /// Samples over the budget, by cause name (every cause, zeros included).
    pub over_by_cause: Vec<(String, u64)>,
    /// Samples not judged.
    pub unjudged: u64,
    /// Samples with an implausible source timestamp.
    pub implausible: u64,
    /// Latency histogram: (upper bound in seconds, samples in that bucket,
    /// not cumulative), ascending; the last bound is `f64::MAX` (`+Inf`).
    pub buckets: Vec<(f64, u64)>,
    /// Sum of the latencies, seconds.
    pub sum_seconds: f64,
    /// Latencies in the histogram.
    pub count: u64,
}

/// One writer's figures at a scrape.
#[derive(Clone, Debug, Default)]
pub struct WriterFigures {
    /// The writer's topic.
    pub topic: String,
    /// Its TRANSPORT_PRIORITY.
    pub priority: i32,
    /// The DSCP its datagrams carry.
    pub dscp: u8,
    /// The slot scheduler's class number (`None`: the endpoint's default).
    pub class: Option<u16>,
    /// Readers matched now.
    pub matched: u64,
    /// Samples written.
    pub written: u64,
    /// Samples not yet acknowledged by every reliable reader.
    pub unacknowledged: i64,
}

/// What a pub-sub node shows at a scrape.
#[derive(Clone, Debug, Default)]
pub struct NodeFigures {
    /// Its readers.
    pub readers: Vec<ReaderFigures>,
    /// Its writers.
    pub writers: Vec<WriterFigures>,
}

/// Where a scrape gets a node's figures from (called on the listener's
/// thread: it must only read what the node published).
pub type Source = Arc<dyn Fn() -> NodeFigures + Send + Sync>;

/// A histogram whose buckets are given, not observed (the node keeps the
/// counts; a scrape copies them).
#[derive(Debug, Default)]
struct FixedHistogram {
    inner: Mutex<HistogramValues>,
}

/// Sum, count, and (upper bound, non-cumulative count) per bucket.
type HistogramValues = (f64, u64, Vec<(f64, u64)>);

impl FixedHistogram {
    fn set(&self, sum: f64, count: u64, buckets: &[(f64, u64)]) {
        if let Ok(mut g) = self.inner.lock() {
            *g = (sum, count, buckets.to_vec());
        }
    }
}

impl TypedMetric for FixedHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for FixedHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let g = self.inner.lock().map_err(|_| std::fmt::Error)?;
        encoder.encode_histogram::<NoLabelSet>(g.0, g.1, &g.2, None)
    }
    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

fn labels(r: &ReaderFigures) -> Labels {
    vec![("topic".into(), r.topic.clone()), ("clock".into(), r.clock.clone())]
}

fn counter_family(reg: &mut Registry, name: &str, help: &str, readers: &[ReaderFigures], value: impl Fn(&ReaderFigures) -> u64) {
    let fam = Family::<Labels, Counter>::default();
    for r in readers {
        fam.get_or_create(&labels(r)).inc_by(value(r));
    }
    reg.register(name, help, fam);
}

fn writer_labels(w: &WriterFigures) -> Labels {
    vec![
        ("topic".into(), w.topic.clone()),
        ("priority".into(), w.priority.to_string()),
        ("dscp".into(), w.dscp.to_string()),
        ("class".into(), w.class.map(|c| c.to_string()).unwrap_or_default()),
    ]
}

/// Registers every writer's metrics (`detpath_pubsub_writer_*`, labelled
/// with the priority and the DSCP and class it maps to).
pub(crate) fn register_writers(reg: &mut Registry, writers: &[WriterFigures]) {
    let written = Family::<Labels, Counter>::default();
    let matched = Family::<Labels, Gauge>::default();
    let unacked = Family::<Labels, Gauge>::default();
    for w in writers {
        written.get_or_create(&writer_labels(w)).inc_by(w.written);
        matched.get_or_create(&writer_labels(w)).set(w.matched as i64);
        unacked.get_or_create(&writer_labels(w)).set(w.unacknowledged);
    }
    reg.register("detpath_pubsub_writer_samples", "Samples the writer wrote", written);
    reg.register("detpath_pubsub_writer_matched_readers", "Readers the writer matched now", matched);
    reg.register("detpath_pubsub_writer_unacknowledged", "Samples not yet acknowledged by every reliable reader", unacked);
}

/// Registers every reader's metrics (`detpath_pubsub_*`).
pub(crate) fn register(reg: &mut Registry, readers: &[ReaderFigures]) {
    let matched = Family::<Labels, Gauge>::default();
    let budget = Family::<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    for r in readers {
        matched.get_or_create(&labels(r)).set(r.matched as i64);
        budget.get_or_create(&labels(r)).set(r.budget_seconds);
    }
    reg.register("detpath_pubsub_reader_matched_writers", "Writers the reader matched now", matched);
    reg.register("detpath_pubsub_latency_budget_seconds", "The latency budget samples are judged against (0: none)", budget);
    counter_family(reg, "detpath_pubsub_reader_samples", "Samples the reader received", readers, |r| r.received);
    counter_family(reg, "detpath_pubsub_reader_lost", "Samples lost (never arrived)", readers, |r| r.lost);
    counter_family(reg, "detpath_pubsub_reader_rejected", "Samples refused while a KEEP_ALL cache was full", readers, |r| r.rejected);
    counter_family(reg, "detpath_pubsub_reader_deadline_missed", "DEADLINE periods that passed without a sample", readers, |r| r.deadline_missed);
    counter_family(reg, "detpath_pubsub_reader_undecodable", "Samples that did not deserialize as the reader's type (another layout under its type name)", readers, |r| r.undecodable);
    counter_family(reg, "detpath_pubsub_budget_within", "Samples judged within their latency budget", readers, |r| r.within);
    counter_family(reg, "detpath_pubsub_budget_unjudged", "Samples not judged (no source timestamp, or the clocks are not known to agree)", readers, |r| r.unjudged);
    counter_family(reg, "detpath_pubsub_budget_implausible", "Samples whose source timestamp was implausible (kept out of the histogram)", readers, |r| r.implausible);
    let over = Family::<Labels, Counter>::default();
    for r in readers {
        for (cause, n) in &r.over_by_cause {
            let mut l = labels(r);
            l.push(("cause".into(), cause.clone()));
            over.get_or_create(&l).inc_by(*n);
        }
    }
    reg.register("detpath_pubsub_budget_over", "Samples judged over their latency budget, by cause", over);
    let hist = Family::<Labels, FixedHistogram>::default();
    for r in readers {
        hist.get_or_create(&labels(r)).set(r.sum_seconds, r.count, &r.buckets);
    }
    reg.register("detpath_pubsub_sample_latency_seconds", "One-way latency of the judged samples (source timestamp to reception)", hist);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_renders_as_counters_and_a_histogram() {
        let r = ReaderFigures {
            topic: "T".into(),
            clock: "same-host".into(),
            received: 5,
            undecodable: 2,
            within: 3,
            over_by_cause: vec![("network".into(), 1), ("sent_late".into(), 0)],
            unjudged: 1,
            buckets: vec![(0.0001, 3), (0.001, 1), (f64::MAX, 0)],
            sum_seconds: 0.0012,
            count: 4,
            ..Default::default()
        };
        let mut reg = Registry::default();
        register(&mut reg, &[r]);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &reg).unwrap();
        assert!(out.contains("detpath_pubsub_budget_within_total{topic=\"T\",clock=\"same-host\"} 3"), "{out}");
        assert!(out.contains("detpath_pubsub_reader_undecodable_total{topic=\"T\",clock=\"same-host\"} 2"), "{out}");
        assert!(out.contains("detpath_pubsub_budget_over_total{topic=\"T\",clock=\"same-host\",cause=\"network\"} 1"), "{out}");
        // Buckets are cumulative on the wire.
        assert!(out.contains("detpath_pubsub_sample_latency_seconds_bucket{le=\"0.001\",topic=\"T\",clock=\"same-host\"} 4") || out.contains("detpath_pubsub_sample_latency_seconds_bucket{topic=\"T\",clock=\"same-host\",le=\"0.001\"} 4"), "{out}");
        assert!(out.contains("detpath_pubsub_sample_latency_seconds_count{topic=\"T\",clock=\"same-host\"} 4"), "{out}");
    }

    #[test]
    fn a_writer_is_labelled_with_its_priority_dscp_and_class() {
        let w = WriterFigures { topic: "C".into(), priority: 40, dscp: 46, class: Some(1), matched: 2, written: 7, unacknowledged: 3 };
        let mut reg = Registry::default();
        register_writers(&mut reg, &[w]);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &reg).unwrap();
        assert!(out.contains("detpath_pubsub_writer_samples_total{topic=\"C\",priority=\"40\",dscp=\"46\",class=\"1\"} 7"), "{out}");
        assert!(out.contains("detpath_pubsub_writer_unacknowledged{topic=\"C\",priority=\"40\",dscp=\"46\",class=\"1\"} 3"), "{out}");
    }
}
