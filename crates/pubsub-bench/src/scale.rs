//! The scale benchmark (`detpath pubsub scale`): discovery time and memory
//! for 2 to 64 participants, fan-out latency from one writer to 1, 4 and 16
//! readers; detpath and CycloneDDS in the same run, in the two-namespace
//! testbed.
//!
//! **Discovery.** N participants, split over the namespaces (⌈N/2⌉ in a,
//! ⌊N/2⌋ in b), each with one reliable writer and one reader of one shared
//! topic; unicast discovery to both addresses, no multicast, on both
//! sides. A participant is discovered when its writer matched every other
//! participant's reader and its reader every other participant's writer;
//! the discovery time runs from the moment every participant exists (the
//! later of the two processes' "created") to the last such match. Each
//! namespace's participants live in one process, on both sides, so that a
//! process's resident memory (VmRSS from /proc/PID/status, read with
//! everything matched) is theirs: detpath's worker is this program re-run
//! (`detpath pubsub scale --worker`, [`worker`]) with a thread and an
//! endpoint (port) per participant; CycloneDDS's is a Python process on the
//! `cyclonedds` binding (11.x), which creates many DomainParticipants in one
//! process and reads their publication- and subscription-matched statuses,
//! the same criterion (ddsperf has one participant per process and says
//! nothing about when it matched, so it cannot measure this). Memory per
//! participant is what the participants added: (RSS at the end − RSS before
//! the first participant, after the binding was loaded) / N. CycloneDDS's
//! participants in one process share its sockets and see each other
//! without the network; detpath's do not (each is a separate endpoint).
//!
//! **Fan-out.** One writer in a, K readers in b, 32-byte samples at 1 kHz,
//! reliable KEEP_LAST 1, for `--duration`. CycloneDDS's side is what a user
//! would run to measure it, `ddsperf ping 1000Hz size 32` with K `ddsperf
//! pong` processes: RTT/2 per pong, from ddsperf's per-second figures (so
//! no p99.9; the p99 is the worst second's). detpath's `ping` answers only
//! the first pong of each ping, so its side is one writer and K readers on
//! threads of this process ([`fanout`]), and the latency is one way: the
//! reader's wall clock at take minus the sample's INFO_TS (one host clock
//! for both namespaces). One way is half a round trip without the pong's
//! fan-in, so the two methods are close but not the same; the table names
//! the method of each row. Every polling thread sleeps in the kernel
//! (`Wait::Block`): with up to 17 of them on a small machine, spinning would
//! measure the scheduler.
//!
//! **Datapaths.** `udp` runs any number of participants per interface.
//! Whether another datapath can (several endpoints on one interface) is
//! found out by running it: a participant that cannot open its endpoint
//! makes its row `FAILED` with the datapath's error, and the run goes on.

pub mod discovery;
pub mod fanout;
pub mod report;
pub mod worker;

use detpath::sys::cleanup;
use detpath::testbed::{Testbed, TestbedConfig};
use detpath_instrument::results::Environment;
use serde::Serialize;
use std::path::PathBuf;

/// The largest participant count `--participants` accepts: half of it per
/// namespace, one thread and one UDP port each.
pub const MAX_PARTICIPANTS: u32 = 128;

/// The largest reader count `--readers` accepts.
pub const MAX_READERS: u32 = 64;

/// What to measure.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleOptions {
    /// Participant counts of the discovery test (each 2..=[`MAX_PARTICIPANTS`]).
    pub participants: Vec<u32>,
    /// Reader counts of the fan-out test (each 1..=[`MAX_READERS`]).
    pub readers: Vec<u32>,
    /// detpath's datapaths.
    pub datapaths: Vec<String>,
    /// Seconds each fan-out runs.
    pub seconds: u64,
    /// Also measure CycloneDDS.
    pub with_cyclone: bool,
    /// This program (detpath's discovery workers are it, re-run).
    pub exe: PathBuf,
}

impl ScaleOptions {
    /// Why the options cannot run, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if let Some(n) = self.participants.iter().find(|&&n| !(2..=MAX_PARTICIPANTS).contains(&n)) {
            return Err(format!("--participants: {n} is out of range: from 2 (one to discover another) to {MAX_PARTICIPANTS}"));
        }
        if let Some(k) = self.readers.iter().find(|&&k| !(1..=MAX_READERS).contains(&k)) {
            return Err(format!("--readers: {k} is out of range: from 1 to {MAX_READERS}"));
        }
        if self.datapaths.is_empty() {
            return Err("--datapath: name at least one (udp, afxdp, ...)".into());
        }
        if self.seconds == 0 {
            return Err("--duration: at least 1s".into());
        }
        Ok(())
    }
}

/// One discovery measurement.
#[derive(Clone, Debug, Serialize)]
pub struct DiscoveryRow {
    /// `detpath udp`, `CycloneDDS (Python)`, ...
    pub system: String,
    /// Participants in all.
    pub participants: u32,
    /// Processes they lived in.
    pub processes: u32,
    /// Participants that matched everything they should.
    pub matched: u32,
    /// From every participant existing to the last match, ms; `None` when not all matched.
    pub discovery_ms: Option<f64>,
    /// The median participant's time to match everything, ms (same start).
    pub median_participant_ms: Option<f64>,
    /// Resident memory of the processes with everything matched, KiB.
    pub rss_total_kb: u64,
    /// Their resident memory before the first participant, KiB.
    pub rss_baseline_kb: u64,
    /// (total − baseline) / participants, KiB.
    pub rss_per_participant_kb: f64,
    /// How it ran, or `FAILED: why`.
    pub note: String,
}

/// Latency percentiles, µs; `None` where the count (or the method) cannot give one.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct LatencyUs {
    /// Samples behind the figures.
    pub count: u64,
    /// Mean.
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile (from 1000 samples; ddsperf gives none).
    pub p99_9: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
}

/// One fan-out measurement: one reader's, or the readers' pooled (`reader` None).
#[derive(Clone, Debug, Serialize)]
pub struct FanoutRow {
    /// `detpath udp`, `CycloneDDS (ddsperf)`.
    pub system: String,
    /// Readers of the writer.
    pub readers: u32,
    /// Which reader (0-based); `None`: all readers' samples pooled.
    pub reader: Option<u32>,
    /// How latency was measured (one way, or RTT/2).
    pub method: String,
    /// The latencies.
    pub latency_us: LatencyUs,
    /// Counts, or `FAILED: why`.
    pub note: String,
}

/// A row as it is measured ([`run`]'s progress).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Row {
    /// A discovery row.
    Discovery(DiscoveryRow),
    /// A fan-out row.
    Fanout(FanoutRow),
}

/// Everything one run measured, as summary.json holds it.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleReport {
    /// The machine, its load average when the run started included.
    pub environment: Environment,
    /// The load average when the run ended (1, 5, 15 min).
    pub load_at_end: [f64; 3],
    /// The CycloneDDS versions used (Python binding, ddsperf's package).
    pub cyclonedds: Versions,
    /// What was asked for.
    pub options: ScaleOptions,
    /// Discovery rows.
    pub discovery: Vec<DiscoveryRow>,
    /// Fan-out rows.
    pub fanout: Vec<FanoutRow>,
}

/// The CycloneDDS versions a run used.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Versions {
    /// `cyclonedds` Python package.
    pub python: String,
    /// Debian's `cyclonedds-tools` (ddsperf).
    pub ddsperf: String,
}

impl Versions {
    /// Asks pip's metadata and dpkg; "?" for what they do not say.
    pub fn find() -> Versions {
        let out = |cmd: &str, args: &[&str]| {
            std::process::Command::new(cmd)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "?".into())
        };
        Versions {
            python: out("python3", &["-c", "import importlib.metadata as m; print(m.version('cyclonedds'))"]),
            ddsperf: out("dpkg-query", &["-W", "-f", "${Version}", "cyclonedds-tools"]),
        }
    }
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    /// The testbed could not be set up.
    #[error("testbed: {0}")]
    Testbed(#[from] Box<detpath::Error>),
    /// A detpath discovery worker could not start.
    #[error("detpath worker: {0}")]
    Worker(String),
    /// detpath's fan-out failed.
    #[error("detpath: {0}")]
    Detpath(String),
    /// CycloneDDS (ddsperf, Python) could not run.
    #[error("CycloneDDS: {0}")]
    Cyclone(String),
    /// The options cannot run ([`ScaleOptions::check`]).
    #[error("{0}")]
    Invalid(String),
}

/// The name of CycloneDDS's discovery rows.
pub fn cyclone_system() -> String {
    "CycloneDDS (Python)".into()
}

/// The name of CycloneDDS's fan-out rows.
pub fn ddsperf_system() -> String {
    "CycloneDDS (ddsperf)".into()
}

/// A failed fan-out as a row, so the run goes on.
fn failed_fanout(system: String, k: u32, e: ScaleError) -> FanoutRow {
    FanoutRow { system, readers: k, reader: None, method: String::new(), latency_us: LatencyUs::default(), note: format!("FAILED: {e}") }
}

/// A discovery that could not start, as a row.
fn failed_discovery(system: String, n: u32, e: ScaleError) -> DiscoveryRow {
    DiscoveryRow {
        system,
        participants: n,
        processes: 0,
        matched: 0,
        discovery_ms: None,
        median_participant_ms: None,
        rss_total_kb: 0,
        rss_baseline_kb: 0,
        rss_per_participant_kb: 0.0,
        note: format!("FAILED: {e}"),
    }
}

/// Runs both tests in one testbed: per size, every datapath, then
/// CycloneDDS. A measurement that fails is a `FAILED` row; Ctrl-C ends the
/// run with the rows so far.
pub fn run(o: &ScaleOptions, mut progress: impl FnMut(&Row)) -> Result<ScaleReport, ScaleError> {
    o.check().map_err(ScaleError::Invalid)?;
    let environment = Environment::capture();
    let cyclonedds = if o.with_cyclone { Versions::find() } else { Versions::default() };
    let tb = Testbed::up(TestbedConfig::unique("pss")).map_err(Box::new)?;
    let dir = tempfile::Builder::new()
        .prefix("detpath-scale-")
        .tempdir()
        .map_err(|e| ScaleError::Cyclone(format!("temporary directory for CycloneDDS's configuration: {e}")))?;
    let (mut disc, mut fan) = (Vec::new(), Vec::new());
    for &n in &o.participants {
        for dp in &o.datapaths {
            if cleanup::interrupted() {
                break;
            }
            let r = discovery::detpath(&tb, &o.exe, dp, n).unwrap_or_else(|e| failed_discovery(format!("detpath {dp}"), n, e));
            progress(&Row::Discovery(r.clone()));
            disc.push(r);
        }
        if o.with_cyclone && !cleanup::interrupted() {
            let r = discovery::cyclone(&tb, dir.path(), n).unwrap_or_else(|e| failed_discovery(cyclone_system(), n, e));
            progress(&Row::Discovery(r.clone()));
            disc.push(r);
        }
    }
    for &k in &o.readers {
        for dp in &o.datapaths {
            if cleanup::interrupted() {
                break;
            }
            let rows = fanout::detpath(&tb, dp, k, o.seconds).unwrap_or_else(|e| vec![failed_fanout(format!("detpath {dp}"), k, e)]);
            for r in rows {
                progress(&Row::Fanout(r.clone()));
                fan.push(r);
            }
        }
        if o.with_cyclone && !cleanup::interrupted() {
            let rows = fanout::cyclone(&tb, dir.path(), k, o.seconds).unwrap_or_else(|e| vec![failed_fanout(ddsperf_system(), k, e)]);
            for r in rows {
                progress(&Row::Fanout(r.clone()));
                fan.push(r);
            }
        }
    }
    let load_at_end = Environment::capture().load;
    Ok(ScaleReport { environment, load_at_end, cyclonedds, options: o.clone(), discovery: disc, fanout: fan })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ScaleOptions {
        ScaleOptions { participants: vec![2, 64], readers: vec![1, 16], datapaths: vec!["udp".into()], seconds: 1, with_cyclone: true, exe: "detpath".into() }
    }

    #[test]
    fn counts_outside_the_limits_are_refused_by_name() {
        assert!(opts().check().is_ok());
        let e = ScaleOptions { participants: vec![0], ..opts() }.check().unwrap_err();
        assert!(e.contains("--participants: 0"), "{e}");
        let e = ScaleOptions { participants: vec![MAX_PARTICIPANTS + 1], ..opts() }.check().unwrap_err();
        assert!(e.contains(&MAX_PARTICIPANTS.to_string()), "{e}");
        assert!(ScaleOptions { readers: vec![0], ..opts() }.check().unwrap_err().contains("--readers"));
    }

    #[test]
    fn participants_split_over_the_two_sides() {
        assert_eq!(discovery::split(2), (1, 1));
        assert_eq!(discovery::split(63), (32, 31));
    }

    #[test]
    fn ddsperf_lines_group_by_pong_and_percentiles_come_in_order() {
        let t = "[1] 1.000  vm:11 size 32 mean 100.0us min 60.0us 50% 80.0us 90% 100.0us 99% 500.0us max 600.0us cnt 1000\n\
                 [1] 1.000  vm:12 size 32 mean 120.0us min 70.0us 50% 90.0us 90% 110.0us 99% 550.0us max 700.0us cnt 990\n\
                 [1] 2.000  vm:11 size 32 mean 101.0us min 61.0us 50% 81.0us 90% 101.0us 99% 501.0us max 601.0us cnt 1000\n";
        let g = fanout::lines_per_pong(t);
        assert_eq!(g.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(), vec!["vm:11", "vm:12"]);
        assert_eq!(g[0].1.lines().count(), 2);
        let mut lat: Vec<u64> = (1..=2000).rev().map(|x| x * 1000).collect();
        let s = fanout::summarize(&mut lat);
        assert_eq!(s.count, 2000);
        assert!(s.p50 <= s.p99 && s.p99 <= s.p99_9 && s.p99_9 <= s.max);
        assert_eq!(s.max, Some(2000.0));
    }
}
