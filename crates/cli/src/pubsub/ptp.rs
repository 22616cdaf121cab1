//! The clock a pub-sub node of the user's type (`user.rs`) stamps
//! INFO_TS with and judges latency budgets on, with `--clock ptp:SPEC`
//! steered by an in-process PTP slave (`detpath_sched::ptp`, the same slave
//! as `detpath sched ptp slave`, which follows ptp4l or a detpath master).
//!
//! How: before the node opens, the slave runs on SPEC (the PTP event port's
//! endpoint, port 319) for `--ptp-settle`, steering a [`PtpClock`] (offset
//! stepped, rate set; no host clock is touched). Locked means the servo's
//! last [`LOCK_SAMPLES`] samples were in its locked state with a measured
//! offset within `--ptp-lock-threshold`; otherwise the node does not run
//! (exit 2, saying what the slave saw). The node then reads the steered
//! clock, running on at the rate the servo found (holdover): no more
//! corrections during the run, so a run of minutes keeps the lock's
//! accuracy only as long as the oscillator's rate holds.
//!
//! The engine takes its clock as a function pointer
//! ([`ClockFn`](detpath_pubsub::budget::ClockFn)), so the clock lives in a
//! process-wide cell set once ([`install`]) before the participant is made.

use detpath_pubsub::budget::Clocks;
use detpath_sched::ptp::{self, Ports, PtpClock, PtpConfig};
use detpath_sched::servo::ServoState;
use serde::Serialize;
use std::sync::OnceLock;
use std::time::Duration;

/// Servo samples in a row that must be locked and within the threshold.
pub const LOCK_SAMPLES: usize = 4;

/// The node's clock: CLOCK_REALTIME plus an injected offset, or a
/// PTP-steered clock.
#[derive(Debug, Clone)]
pub enum NodeClock {
    /// CLOCK_REALTIME + offset (ns; 0 unless `--clock-offset` injects one).
    System(i64),
    /// The slave's steered clock (its injected offset included).
    Ptp(PtpClock),
}

static CLOCK: OnceLock<NodeClock> = OnceLock::new();

/// Makes `c` the clock [`node_clocks`] reads; false when one was already installed.
pub fn install(c: NodeClock) -> bool {
    CLOCK.set(c).is_ok()
}

/// The clock installed, if any.
pub fn installed() -> Option<&'static NodeClock> {
    CLOCK.get()
}

/// The node's wall clock (ns since the epoch) and CLOCK_MONOTONIC at one
/// moment: the [`ClockFn`](detpath_pubsub::budget::ClockFn) of the node's
/// participant, and its writers' INFO_TS.
pub fn node_clocks() -> Clocks {
    let sys = detpath_pubsub::budget::system_clocks();
    match CLOCK.get() {
        None => sys,
        Some(NodeClock::System(off)) => Clocks { wall_ns: sys.wall_ns.saturating_add(*off), mono_ns: sys.mono_ns },
        Some(NodeClock::Ptp(c)) => Clocks { wall_ns: c.time_at(sys.mono_ns).clamp(0, i64::MAX as i128) as i64, mono_ns: sys.mono_ns },
    }
}

/// What the PTP slave did before the run (in the summary's `clock.ptp`).
#[derive(Debug, Clone, Serialize)]
pub struct PtpSummary {
    /// The event port's endpoint.
    pub endpoint: String,
    /// The master followed.
    pub master: Option<String>,
    /// Seconds the slave ran before the node started.
    pub settle_s: f64,
    /// Sync/Follow_Up pairs used.
    pub syncs: u64,
    /// The servo's measured offsets of the last samples, ns (the last is the
    /// clock's offset from the master when the node started).
    pub last_offsets_ns: Vec<i64>,
    /// The offset injected into the clock before the slave ran, ns.
    pub injected_offset_ns: i64,
    /// The rate correction in force, ppb.
    pub rate_ppb: i64,
}

/// Runs the slave on `spec` (inside `netns` when given) for `settle`,
/// with `offset_ns` injected into the clock; the steered clock once locked.
pub fn lock(spec: &str, netns: Option<&str>, offset_ns: i64, settle: Duration, threshold: Duration) -> anyhow::Result<(PtpClock, PtpSummary)> {
    let cfg = PtpConfig { offset_ns, duration_ns: crate::vocab::ns(settle), lock_threshold_ns: crate::vocab::ns(threshold), ..PtpConfig::default() };
    let stop = &detpath::sys::cleanup::interrupted;
    let run = || -> Result<(PtpClock, ptp::SlaveReport), ptp::PtpError> {
        let mut ports = Ports::open(spec)?;
        let mut clock = PtpClock::new(cfg.offset_ns, 0);
        let r = ptp::run_slave(&mut ports, &mut clock, &cfg, stop)?;
        Ok((clock, r))
    };
    let (clock, r) = match netns {
        Some(ns) => detpath::sys::netns::run_in(ns, run).map_err(|e| anyhow::anyhow!("--clock ptp:{spec}: entering network namespace {ns}: {e}"))?,
        None => run(),
    }
    .map_err(|e| anyhow::anyhow!("--clock ptp:{spec}: {e}"))?;
    let tail: Vec<_> = r.sync.samples.iter().rev().take(LOCK_SAMPLES).collect();
    let summary = PtpSummary {
        endpoint: r.endpoint.clone(),
        master: r.master.clone(),
        settle_s: r.run_s,
        syncs: r.syncs,
        last_offsets_ns: tail.iter().rev().map(|s| s.measured_offset_ns).collect(),
        injected_offset_ns: offset_ns,
        rate_ppb: clock.rate_ppb(),
    };
    let limit = crate::vocab::ns(threshold);
    let locked = tail.len() == LOCK_SAMPLES && tail.iter().all(|s| s.state == ServoState::Locked && s.measured_offset_ns.unsigned_abs() <= limit);
    if !locked {
        let seen = match &r.master {
            None => "no PTP master was heard (is one running on that link and domain 0? `detpath sched ptp master` or ptp4l -4)".to_string(),
            Some(m) if r.syncs == 0 => format!("master {m} was heard but sent no Sync/Follow_Up pair"),
            Some(m) => format!(
                "following {m}, {} Syncs, the servo's last measured offsets {:?} ns are not {LOCK_SAMPLES} locked samples within {threshold:?} (--ptp-lock-threshold); a longer --ptp-settle may do",
                r.syncs, summary.last_offsets_ns
            ),
        };
        anyhow::bail!("--clock ptp:{spec}: not locked after {settle:?} (--ptp-settle): {seen}");
    }
    Ok((clock, summary))
}
