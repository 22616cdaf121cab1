//! The detpath ping-pong instrument (paper 000, "Methodology" and "Metrics"):
//! exact statistics to six nines ([`stats`]), per-round raw records and loss
//! accounting ([`records`]), result directories ([`results`]), the human
//! tables ([`table`]), the plots of `detpath report` ([`report`]) and its
//! self-contained HTML page ([`html`]). The
//! runner that drives the datapaths is [`run`]; the main job over the
//! testbed (configurations, tuning, stress, sockperf) is [`matrix`].
//! [`slots`] is `detpath sched bench`, the slot scheduler against
//! clock_nanosleep, on the same result directories and environment record.
//! [`pubsub`] is `detpath pubsub bench`: paper 001's DDS workloads over the
//! `detpath-pubsub` protocol crate, with ddsperf as the reference.
//! Every run carries what it cost in CPU (`detpath_sys::cputime`); the
//! reference programs run as child processes are measured by [`child_cpu`].
//!
//! ```
//! // 1,000 round trips of 1..=1000 ns: p99 by nearest rank; p99.99 needs 10,000 samples.
//! let mut rtt_ns: Vec<u64> = (1..=1000).rev().collect();
//! let s = detpath_bench::Summary::from_samples(&mut rtt_ns);
//! assert_eq!((s.count, s.min_ns, s.max_ns), (1000, Some(1), Some(1000)));
//! assert_eq!(s.p99_ns, Some(990));
//! assert_eq!(s.p99_99_ns, None);
//! ```

#![warn(missing_docs)]

pub mod child_cpu;
pub mod html;
pub mod matrix;
pub mod pubsub;
pub mod ready;
pub mod records;
pub mod report;
pub mod results;
pub mod run;
pub mod run_result;
pub mod slots;
pub mod sockperf;
pub mod stats;
pub mod stress;
pub mod table;
pub mod tail;

pub use records::{LossCounts, Record, RecordWriter, Status};
pub use results::{Environment, ResultDir, RunConfig, RunResult};
pub use stats::{Quantile, Summary};
