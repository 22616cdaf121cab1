//! The detpath ping-pong harness (paper 000): the runner that drives the
//! datapaths ([`run`]), the main job over the testbed (configurations,
//! tuning, stress, sockperf: [`matrix`]), sockperf as the reference
//! ([`sockperf`]), and the HTML page of `detpath report --html` ([`bench_page`]).
//! The instrument it measures with (statistics, records, result
//! directories, tables, tail attribution, report drawing) is
//! `detpath-instrument`.
//! [`pubsub`] is `detpath pubsub bench`: paper 001's DDS workloads over the
//! `detpath-pubsub` protocol crate, with ddsperf as the reference.
//!
//! ```
//! // 1,000 round trips of 1..=1000 ns: p99 by nearest rank; p99.99 needs 10,000 samples.
//! let mut rtt_ns: Vec<u64> = (1..=1000).rev().collect();
//! let s = detpath_bench::Summary::from_samples(&mut rtt_ns);
//! assert_eq!((s.count, s.min_ns, s.max_ns), (1000, Some(1), Some(1000)));
//! assert_eq!(s.p99_ns, Some(990));
//! ```

#![warn(missing_docs)]

pub mod bench_page;
pub mod matrix;
pub mod pubsub;
pub mod run;
pub mod sockperf;

// The instrument's modules, re-exported while the harnesses still in this
// crate name them as their own (`crate::records`, ...).
pub use detpath_instrument::{child_cpu, ready, records, report, results, run_result, stats, stress, table, tail};
pub use detpath_instrument::{Environment, LossCounts, Quantile, Record, RecordWriter, ResultDir, RunConfig, RunResult, Status, Summary};
