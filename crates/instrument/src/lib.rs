//! The detpath benchmark instrument (paper 000, "Methodology" and
//! "Metrics"), shared by every harness and knowing none of their subjects:
//! exact statistics to six nines ([`stats`]), per-round raw records and
//! loss accounting ([`records`]), what one run produced and where it ran
//! ([`run_result`]: the run and the environment record), the result
//! directories they are saved in ([`results`]), the human tables
//! ([`table`]), the hot-loop noise probe ([`noise`]), the per-CPU counters
//! sampled beside it ([`sampler`]) and the attribution of the tail
//! ([`tail`]), background load ([`stress`]), the CPU of reference programs
//! run as children ([`child_cpu`]), the ready hand-shake of a harness's
//! threads ([`ready`]), the plots of `detpath report` ([`report`]) and the
//! parts of its HTML pages every harness draws with ([`html`]).
//!
//! The harnesses stand beside their subjects: the ping-pong in
//! `detpath-bench`, the slot scheduler's in `detpath-sched-bench`, the
//! pub-sub's in `detpath-pubsub-bench`, the classifier's in
//! `detpath-classify`.
//!
//! ```
//! // 1,000 round trips of 1..=1000 ns: p99 by nearest rank; p99.99 needs 10,000 samples.
//! let mut rtt_ns: Vec<u64> = (1..=1000).rev().collect();
//! let s = detpath_instrument::Summary::from_samples(&mut rtt_ns);
//! assert_eq!((s.count, s.min_ns, s.max_ns), (1000, Some(1), Some(1000)));
//! assert_eq!(s.p99_ns, Some(990));
//! assert_eq!(s.p99_99_ns, None);
//! ```

#![warn(missing_docs)]

pub mod child_cpu;
pub mod html;
pub mod noise;
pub mod ready;
pub mod records;
pub mod report;
pub mod results;
pub mod run_result;
pub mod sampler;
pub mod stats;
pub mod stress;
pub mod table;
pub mod tail;

pub use records::{LossCounts, Record, RecordWriter, Status};
pub use results::{Environment, ResultDir, RunConfig, RunResult};
pub use stats::{Quantile, Summary};
