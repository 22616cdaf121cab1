//! The clock a pub-sub node (`pub`, `sub`, `ping`, `pong`, of ddsperf's
//! types or the user's) stamps INFO_TS with and judges latency budgets on,
//! with `--clock ptp:SPEC` steered by an in-process PTP slave
//! (`detpath_sched::ptp`, the same slave as `detpath sched ptp slave`,
//! which follows ptp4l or a detpath master).
//!
//! How: before the node opens, the slave starts on its own thread on SPEC
//! (the PTP event port's endpoint, port 319), steering a
//! [`SharedPtpClock`] (offset stepped, rate set; no host clock is
//! touched). The node starts once the servo is locked: its last
//! [`LOCK_SAMPLES`] samples in the locked state with a measured offset
//! within `--ptp-lock-threshold`; not locked within `--ptp-settle`, the node
//! does not run (exit 2, saying what the slave saw). The slave keeps
//! steering the same clock for the whole run (continuous steering, not
//! holdover) and is stopped after it: [`Steering::finish`] says where the
//! servo was at the end and how far it strayed during the run (the
//! summary's `clock.ptp`).
//!
//! The engine takes its clock as a function pointer
//! ([`ClockFn`](detpath_pubsub::budget::ClockFn)), so the clock lives in a
//! process-wide cell set once ([`install`]) before the participant is made.

use detpath_pubsub::budget::Clocks;
use detpath_sched::ptp::{self, Ports, PtpClock, PtpConfig, PtpError, SharedPtpClock, SlaveReport};
use detpath_sched::servo::ServoState;
use detpath_sched::sync::SyncSample;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Servo samples in a row that must be locked and within the threshold.
pub const LOCK_SAMPLES: usize = 4;

/// How long the slave may run at most: far beyond any node's run (it is
/// stopped when the node ends), short enough that its end time fits a u64.
const FOREVER_NS: u64 = 100 * 365 * 24 * 3600 * 1_000_000_000;

/// The node's clock: CLOCK_REALTIME plus an injected offset, or a
/// PTP-steered clock.
#[derive(Debug, Clone)]
pub enum NodeClock {
    /// CLOCK_REALTIME + offset (ns; 0 unless `--clock-offset` injects one).
    System(i64),
    /// The slave's steered clock (its injected offset included).
    Ptp(SharedPtpClock),
}

static CLOCK: OnceLock<NodeClock> = OnceLock::new();

/// Makes `c` the clock [`node_clocks`] reads; false when one was already installed.
pub fn install(c: NodeClock) -> bool {
    CLOCK.set(c).is_ok()
}

/// The offset injected into the installed clock, ns (0 without one).
pub fn injected_offset() -> i64 {
    match CLOCK.get() {
        Some(NodeClock::System(o)) => *o,
        Some(NodeClock::Ptp(c)) => c.snapshot().injected().0,
        None => 0,
    }
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

/// What the PTP slave did (the summary's `clock.ptp`).
#[derive(Debug, Clone, Serialize)]
pub struct PtpSummary {
    /// The event port's endpoint.
    pub endpoint: String,
    /// The master followed.
    pub master: Option<String>,
    /// Seconds the slave ran before the node started (until it locked).
    pub settle_s: f64,
    /// Sync/Follow_Up pairs used, in all.
    pub syncs: u64,
    /// The servo's measured offsets of the samples that made the lock, ns
    /// (the last is the clock's offset from the master when the node started).
    pub last_offsets_ns: Vec<i64>,
    /// The offset injected into the clock before the slave ran, ns.
    pub injected_offset_ns: i64,
    /// The rate correction in force at the end, ppb.
    pub rate_ppb: i64,
    /// Locked: the servo's last samples within this, ns (`--ptp-lock-threshold`).
    pub lock_threshold_ns: u64,
    /// True: the slave steered the clock for the whole run (it did not stop early).
    pub steered_during_run: bool,
    /// Servo samples applied while the node ran.
    pub samples_during_run: usize,
    /// The servo's last measured offset from the master, ns: where the
    /// clock was at the end of the run.
    pub offset_at_end_ns: Option<i64>,
    /// The servo's state at its last sample (`locked`, `jump`, `unlocked`).
    pub state_at_end: Option<ServoState>,
    /// The largest |measured offset| of the samples while the node ran, ns.
    pub max_abs_offset_during_run_ns: Option<u64>,
    /// The servo's last [`LOCK_SAMPLES`] samples were locked within the threshold at the end.
    pub locked_at_end: bool,
    /// Why the slave stopped before the node did, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
}

/// The node's clock in its JSON summary (`clock`).
#[derive(Debug, Clone, Serialize)]
pub struct ClockJson {
    /// `--clock` as given: `auto`, `synced` or `ptp:SPEC`.
    pub mode: String,
    /// `--clock-offset`, ns.
    pub injected_offset_ns: i64,
    /// With `ptp:SPEC`: what the slave did.
    pub ptp: Option<PtpSummary>,
}

/// Whether the last [`LOCK_SAMPLES`] of `samples` are locked within `limit` ns.
fn locked(samples: &[SyncSample], limit: u64) -> bool {
    let tail = &samples[samples.len().saturating_sub(LOCK_SAMPLES)..];
    tail.len() == LOCK_SAMPLES && tail.iter().all(|s| s.state == ServoState::Locked && s.measured_offset_ns.unsigned_abs() <= limit)
}

type Slave = JoinHandle<Result<SlaveReport, PtpError>>;

/// A PTP slave steering the node's clock on its own thread.
pub struct Steering {
    spec: String,
    clock: SharedPtpClock,
    done: Arc<AtomicBool>,
    thread: Option<Slave>,
    threshold_ns: u64,
    offset_ns: i64,
    settle_s: f64,
    /// Servo samples applied before the node started.
    samples_at_start: u64,
    lock_offsets: Vec<i64>,
}

impl Steering {
    /// The steered clock (install it with [`install`]).
    pub fn clock(&self) -> SharedPtpClock {
        self.clock.clone()
    }

    /// Stops the slave and sums up what it did, the run included.
    pub fn finish(mut self) -> PtpSummary {
        self.done.store(true, Ordering::Relaxed);
        let result = self.thread.take().map(|t| t.join());
        let recent = self.clock.recent();
        let during = (self.clock.samples() - self.samples_at_start) as usize;
        let run: &[SyncSample] = &recent[recent.len().saturating_sub(during)..];
        let (report, stopped_early) = match result {
            Some(Ok(Ok(r))) => (Some(r), None),
            Some(Ok(Err(e))) => (None, Some(format!("the PTP slave stopped: {e}"))),
            Some(Err(_)) | None => (None, Some("the PTP slave's thread ended abnormally".to_string())),
        };
        // The whole run's samples are in the report; the clock keeps the latest only.
        let max_during = match &report {
            Some(r) => r.sync.samples.iter().skip(self.samples_at_start as usize).map(|s| s.measured_offset_ns.unsigned_abs()).max(),
            None => run.iter().map(|s| s.measured_offset_ns.unsigned_abs()).max(),
        };
        let last = recent.last();
        PtpSummary {
            endpoint: report.as_ref().map_or_else(|| self.spec.clone(), |r| r.endpoint.clone()),
            master: report.as_ref().and_then(|r| r.master.clone()),
            settle_s: self.settle_s,
            syncs: report.as_ref().map_or(self.clock.samples(), |r| r.syncs),
            last_offsets_ns: std::mem::take(&mut self.lock_offsets),
            injected_offset_ns: self.offset_ns,
            rate_ppb: self.clock.snapshot().rate_ppb(),
            lock_threshold_ns: self.threshold_ns,
            steered_during_run: stopped_early.is_none(),
            samples_during_run: during,
            offset_at_end_ns: last.map(|s| s.measured_offset_ns),
            state_at_end: last.map(|s| s.state),
            max_abs_offset_during_run_ns: max_during,
            locked_at_end: locked(&recent, self.threshold_ns),
            stopped_early,
        }
    }
}

impl Drop for Steering {
    fn drop(&mut self) {
        // A node that ends by an error: the slave stops with it.
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the slave on `spec` (its ports opened inside `netns` when given)
/// with `offset_ns` injected into the clock, and waits until it is locked
/// (at most `settle`); it then keeps steering until [`Steering::finish`].
pub fn lock(spec: &str, netns: Option<&str>, offset_ns: i64, settle: Duration, threshold: Duration) -> anyhow::Result<Steering> {
    let limit = crate::vocab::ns(threshold);
    let cfg = PtpConfig { offset_ns, duration_ns: FOREVER_NS, lock_threshold_ns: limit, ..PtpConfig::default() };
    let open = || Ports::open(spec);
    let mut ports = match netns {
        Some(ns) => detpath::sys::netns::run_in(ns, open).map_err(|e| anyhow::anyhow!("--clock ptp:{spec}: entering network namespace {ns}: {e}"))?,
        None => open(),
    }
    .map_err(|e| anyhow::anyhow!("--clock ptp:{spec}: {e}"))?;
    let clock = SharedPtpClock::new(PtpClock::new(offset_ns, 0));
    let done = Arc::new(AtomicBool::new(false));
    let (mut steered, stop) = (clock.clone(), done.clone());
    let thread = std::thread::Builder::new()
        .name("ptp-slave".into())
        .spawn(move || ptp::run_slave(&mut ports, &mut steered, &cfg, &|| stop.load(Ordering::Relaxed) || detpath::sys::cleanup::interrupted()))
        .map_err(|e| anyhow::anyhow!("--clock ptp:{spec}: starting the slave's thread: {e}"))?;
    let mut s = Steering {
        spec: spec.to_string(),
        clock,
        done,
        thread: Some(thread),
        threshold_ns: limit,
        offset_ns,
        settle_s: 0.0,
        samples_at_start: 0,
        lock_offsets: Vec::new(),
    };
    let t0 = Instant::now();
    loop {
        let recent = s.clock.recent();
        if locked(&recent, limit) {
            s.settle_s = t0.elapsed().as_secs_f64();
            s.samples_at_start = s.clock.samples();
            s.lock_offsets = recent[recent.len() - LOCK_SAMPLES..].iter().map(|x| x.measured_offset_ns).collect();
            return Ok(s);
        }
        let ended = s.thread.as_ref().is_some_and(|t| t.is_finished());
        if ended || t0.elapsed() >= settle {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Not locked: stop the slave and say what it saw.
    s.done.store(true, Ordering::Relaxed);
    let report = match s.thread.take().map(|t| t.join()) {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => anyhow::bail!("--clock ptp:{spec}: {e}"),
        _ => anyhow::bail!("--clock ptp:{spec}: the PTP slave's thread ended abnormally"),
    };
    let offsets: Vec<i64> = s.clock.recent().iter().rev().take(LOCK_SAMPLES).rev().map(|x| x.measured_offset_ns).collect();
    let seen = match &report.master {
        None => "no PTP master was heard (is one running on that link and domain 0? `detpath sched ptp master` or ptp4l -4)".to_string(),
        Some(m) if report.syncs == 0 => format!("master {m} was heard but sent no Sync/Follow_Up pair"),
        Some(m) => format!(
            "following {m}, {} Syncs, the servo's last measured offsets {offsets:?} ns are not {LOCK_SAMPLES} locked samples within {threshold:?} (--ptp-lock-threshold); a longer --ptp-settle may do",
            report.syncs
        ),
    };
    anyhow::bail!("--clock ptp:{spec}: not locked after {settle:?} (--ptp-settle): {seen}")
}
