//! detpath-ktrace: a kernel tracer for the benchmark's tail.
//!
//! The user-space probes of `detpath bench` see when a polling thread was
//! not running, but not where a packet waited while both threads ran: the
//! sender's softirq, the peer's NAPI poll, an interrupt, another task.
//! This crate records that side: BPF raw tracepoints on interrupts,
//! softirqs, context switches and NAPI polls on every core
//! (`bpf/ktrace.bpf.c`, [`Tracer`]), a per-core timeline of it
//! ([`Timeline`]), and the rule that names a slow round's kernel cause
//! ([`attribute()`]: only work on a core that held the packet, inside the
//! round, covering at least half of its excess).
//!
//! Not run by the doc tests: loading the BPF programs needs root.
//!
//! ```no_run
//! let tracer = detpath_ktrace::Tracer::start()?;
//! // ... run the rounds ...
//! let trace = tracer.stop()?;
//! let timeline = detpath_ktrace::Timeline::new(&trace.events);
//! # Ok::<(), detpath_ktrace::Error>(())
//! ```

#![warn(missing_docs)]

pub mod attribute;
pub mod event;
pub mod tracer;

pub use attribute::{attribute, needed_ns, overlap_ns, KernelCause, Round, Span, Timeline, Work, SHARE};
pub use event::{Event, Kind};
pub use tracer::{Error, Trace, Tracer};
