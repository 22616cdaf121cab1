//! The detpath ping-pong harness (paper 000): the runner that drives the
//! datapaths ([`run`]), the main job over the testbed (configurations,
//! tuning, stress, sockperf: [`matrix`]), sockperf as the reference
//! ([`sockperf`]), and the HTML page of `detpath report --html` ([`bench_page`]).
//! The instrument it measures with (statistics, records, result
//! directories, tables, tail attribution, report drawing) is
//! `detpath-instrument`.
//! The slot scheduler's benchmark is `detpath-sched-bench`, the pub-sub's
//! `detpath-pubsub-bench`.
//!
//! ```
//! // 1,000 measured round trips after 100 of warm-up, one every 1 ms: 1,100 probes in all.
//! let cfg = detpath_bench::run::PingPongConfig {
//!     size: 64,
//!     period_ns: 1_000_000,
//!     rounds: 1000,
//!     warmup: 100,
//!     loss_timeout_ns: 50_000_000,
//!     stall: None,
//!     sleep_slack_ns: None,
//! };
//! assert_eq!(cfg.total_rounds(), 1100);
//! ```

#![warn(missing_docs)]

pub mod bench_page;
pub mod matrix;
pub mod run;
pub mod sockperf;
