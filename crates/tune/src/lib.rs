//! detpath-tune: audit, apply and revert the OS tuning that bounds worst-case
//! latency on the datapath cores, and the real-time setup of a polling thread.
//!
//! Paper 000 ("RQ2: Tuning Effects") found OS tuning to be the predominant
//! factor in worst-case latency, for every datapath. This crate makes it a
//! value:
//!
//! * [`audit`] reports every knob ([`Knob`]): current value, recommended value,
//!   why, whether it changes at runtime or needs a reboot (with the kernel
//!   command line), and a [`Status`]. Knobs this machine lacks are
//!   `not present`, never errors.
//! * [`apply`] makes the runtime changes for a set of datapath cores. Each
//!   change is journalled on disk (atomic write) before it is made; a failure
//!   rolls back the changes made so far; the returned [`AppliedTuning`]
//!   reverts on drop. [`revert`] restores a journal left by a process that
//!   died (even by SIGKILL). A journal from another boot is refused.
//! * [`profile`] saves what an apply left in force to a file, applies it on
//!   this or another host (refusing, before any change, where the host
//!   differs) and verifies a host against it, per knob.
//! * [`rt`] pins a thread, runs it SCHED_FIFO, locks memory, checks the core,
//!   and holds `/dev/cpu_dma_latency`.
//!
//! All file access goes through a [`Host`], whose root is `/` on the real
//! machine and a temporary directory in tests.
//!
//! Not run by the doc tests: it reads the real host and `apply` changes it
//! (root).
//!
//! ```no_run
//! use detpath_tune::{apply, audit, audit_summary, ApplyRequest, AuditRequest, CpuList, Host};
//! let host = Host::real();
//! let cores = CpuList::parse("1")?;
//! let knobs = audit(&host, &AuditRequest { cores: Some(cores.clone()), iface: Some("eth0".into()) })?;
//! println!("{}", audit_summary(&knobs));
//! let tuning = apply(&host, &ApplyRequest::new(cores).iface("eth0"))?; // needs root
//! println!("{}", tuning.summary());
//! // ... run the benchmark ...
//! tuning.revert()?; // or drop it
//! # Ok::<(), detpath_tune::TuneError>(())
//! ```
//!
//! Not every change the kernel is asked for can be made: per-CPU and managed
//! IRQs answer EIO to an affinity change. Those are reported as skipped
//! ([`AppliedTuning::skipped`]), not as a failed apply.

#![warn(missing_docs)]

mod apply;
mod cpus;
mod error;
mod host;
mod journal;
mod knobs;
pub mod nic;
pub mod profile;
pub mod rt;
pub mod shield;
pub mod vm;

pub use apply::{
    apply, apply_with_progress, discard_stale_journal, journal_status, plan, read_target, revert, revert_session, write_target, AppliedTuning, ApplyRequest,
    PlannedChange, Profile, RevertReport, SkippedChange, Step, StepOutcome,
};
pub use cpus::CpuList;
pub use error::{RtError, TuneError};
pub use host::{Cgroups, Host, KernelCgroups};
pub use journal::{atomic_write, default_state_dir, Entry, Journal, JournalStore, StoreLock, JOURNAL_FILE, JOURNAL_VERSION};
pub use knobs::{
    audit, audit_summary, is_tuned, normalize, AuditRequest, ChangeKind, Fix, Knob, Status, Target, ValueFormat, HOUSEKEEPING, MAX_FREQ, OFF_DATAPATH,
};
pub use profile::{apply_profile, check_fit, plan_profile, verify, SavedProfile, Verification};
