//! `detpath pubsub bench` (the harness lives here, beside the protocol
//! crate `detpath-pubsub`, which it drives through `detpath_pubsub::app`,
//! and on the instrument `detpath-instrument`):
//! paper 001's three workloads (its Table I and
//! §V.D) per datapath, detpath against detpath across the two-namespace
//! testbed, with ddsperf against ddsperf (CycloneDDS over kernel UDP) as the
//! reference row:
//!
//! 1. latency: 32-byte samples at 1 kHz, reliable, ping/pong (RTT/2);
//! 2. sample rate: 32-byte samples as fast as reliable KEEP_ALL allows;
//! 3. bandwidth: 1 KiB samples as fast as reliable KEEP_ALL allows.
//!
//! Each call measures one configuration (the caller sets up stress and
//! tuning around it, as `detpath pubsub bench --matrix` does for paper
//! 000's D, D&S and T&S); [`Pinning`] puts the sending and the answering
//! side on their cores, real-time in tuned runs, detpath's through its
//! endpoints' `rt_*` keys and ddsperf's through taskset and chrt.
//!
//! ddsperf prints per-second figures only (mean, percentiles up to 99%, max
//! per second), so its row combines them: mean weighted by count, p99 the
//! worst second's, max the largest; it has no p99.99. ddsperf runs tied to
//! detpath (`cleanup::spawn_tied`: killed with its process group by
//! cleanup, and when detpath dies), its configuration in a private
//! temporary directory (`tempfile`), never a predictable name under /tmp.
//!
//! With `with_fastdds`, Fast DDS 2.9 against itself gives a second
//! reference ([`fastdds`]): exact percentiles from per-sample times, and the
//! table sets detpath's rows against it (issue 38's goals).
//!
//! Every row carries what it cost in CPU (`cpu`, the same record as
//! `detpath bench`'s): detpath's two sides are threads of this process,
//! metered by [`ThreadMeter`]; ddsperf's are processes, whose user and
//! system time (all their threads) is read when they exit
//! ([`detpath_instrument::child_cpu`]): `ddsperf-ping` and `ddsperf-pong`,
//! `ddsperf-pub` and `ddsperf-sub`, each on its pinned core.

#![warn(missing_docs)]

pub mod fastdds;
pub mod mixed;
pub mod mixed_plot;
pub mod mixed_table;
pub mod page;
pub mod scale;
pub mod table;

use detpath_instrument::records::{LossCounts, Record, Status};
use detpath_instrument::results::{Environment, ResultDir, RunConfig, RunResult};
use detpath_instrument::stats::{quantile_unchecked, Quantile};
use detpath::sys::cleanup::{self, TiedChild};
use detpath::sys::cputime::{CoreTicks, CpuReport, ThreadCpu, ThreadMeter};
use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath_pubsub::app::{run, LatencySummaryJson, NodeOptions, SecondReport};
use detpath_pubsub::ddsperf::{Role, TopicKind};
use detpath_pubsub::transport::Wait;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// detpath's datapaths to measure (`udp`, `afxdp`, `raweth+afxdp`, ...), each in a fresh testbed.
    pub datapaths: Vec<String>,
    /// Seconds each workload runs.
    pub seconds: u64,
    /// Also run ddsperf against ddsperf (the reference rows).
    pub with_ddsperf: bool,
    /// Also run Fast DDS against Fast DDS ([`fastdds`]: its reference rows, and the table's ratios to them).
    pub with_fastdds: bool,
    /// How detpath's polling threads wait for datagrams (busy, block, hybrid, adaptive).
    pub wait: Wait,
    /// The fair-scheduler slice detpath's sides ask for (`NodeOptions::fair_slice_ns`).
    pub fair_slice_ns: u64,
    /// The configuration's name for the rows ("D", "D&S", "T&S").
    pub configuration: String,
    /// Cores (and real-time priority) of the two sides; None: unpinned.
    pub pinning: Option<Pinning>,
    /// Latency workloads: stop when this many pongs are in (capped at
    /// 1.5 times the time they take at 1 kHz, plus 10 s) instead of after
    /// `seconds`.
    pub samples: Option<u64>,
    /// Each workload this many times (at least 1); rows say which repeat.
    pub repeat: u32,
    /// Which workloads: `latency`, `rate`, `bandwidth` (the three by default), `table1` ([`TABLE1`]).
    pub workloads: Vec<String>,
    /// CPU stress percent of the configuration (recorded in the runs' summary).
    pub stress_percent: u8,
    /// Whether the configuration is tuned (recorded in the runs' summary).
    pub tuned: bool,
    /// The mixed workload's control budget, ns ([`mixed::DEFAULT_BUDGET_NS`]).
    pub latency_budget_ns: u64,
    /// The mixed workload's slot scheduler keys for its priority arm ([`mixed::PRIORITY_SCHED`]).
    pub mixed_sched: String,
}

impl BenchOptions {
    /// Paper 001's three workloads, each once, ten seconds, adaptive wait, unpinned, with ddsperf.
    pub fn new(datapaths: &[&str]) -> BenchOptions {
        BenchOptions {
            datapaths: datapaths.iter().map(|d| d.to_string()).collect(),
            seconds: 10,
            with_ddsperf: true,
            with_fastdds: false,
            wait: Wait::ADAPTIVE,
            fair_slice_ns: 100_000,
            configuration: "D".into(),
            pinning: None,
            samples: None,
            repeat: 1,
            workloads: WORKLOADS.iter().map(|w| w.to_string()).collect(),
            stress_percent: 0,
            tuned: false,
            latency_budget_ns: mixed::DEFAULT_BUDGET_NS,
            mixed_sched: mixed::PRIORITY_SCHED.into(),
        }
    }

    fn runs(&self, workload: &str) -> bool {
        self.workloads.iter().any(|w| w == workload)
    }

    /// Whether any of paper 001's workloads is asked for (the mixed one
    /// aside): without one, [`bench()`] measures nothing, not even the ddsperf reference rows.
    pub fn runs_paper_workloads(&self) -> bool {
        self.workloads.iter().any(|w| w != mixed::WORKLOAD)
    }
}

/// The workloads, by their `--workloads` names.
pub const WORKLOADS: [&str; 3] = ["latency", "rate", "bandwidth"];

/// A wait as the tables name it: `busy`, `block`, `adaptive`, `spin50us`.
pub fn wait_name(w: Wait) -> String {
    match w {
        Wait::Busy => "busy".into(),
        Wait::Block => "block".into(),
        Wait::Adaptive { .. } => "adaptive".into(),
        Wait::Hybrid { spin_ns } => format!("spin{}us", spin_ns / 1000),
    }
}

/// Packet delay variation of a latency run (RFC 5481 §4.2, the form paper
/// 001 compares): each sample's one-way latency minus the run's minimum,
/// in µs, as percentiles; and the inter-packet delay variation (IPDV,
/// RFC 5481 §4.1): |latency(i) - latency(i-1)| of consecutive samples in
/// send order, its p99. A percentile the count cannot support is `null`.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PdvSummary {
    /// Median PDV, µs.
    pub p50: f64,
    /// p99 PDV, µs (0 below 100 samples).
    pub p99: f64,
    /// p99.99 PDV, µs (from 10,000 samples).
    pub p99_99: Option<f64>,
    /// Largest PDV (the run's max - min latency), µs.
    pub max: f64,
    /// p99 of the IPDV, µs (from 100 consecutive pairs).
    pub ipdv_p99: Option<f64>,
}

impl PdvSummary {
    /// From one-way latencies (ns) in send order; None without samples.
    pub fn from_latencies(lat_ns: &[u64]) -> Option<PdvSummary> {
        let min = *lat_ns.iter().min()?;
        let mut pdv: Vec<u64> = lat_ns.iter().map(|l| l - min).collect();
        pdv.sort_unstable();
        let mut ipdv: Vec<u64> = lat_ns.windows(2).map(|w| w[0].abs_diff(w[1])).collect();
        ipdv.sort_unstable();
        let q = |v: &[u64], q: Quantile| (v.len() as u64 >= q.needs()).then(|| quantile_unchecked(v, q)).flatten().map(|x| x as f64 / 1e3);
        Some(PdvSummary {
            p50: q(&pdv, Quantile::MEDIAN).unwrap_or(0.0),
            p99: q(&pdv, Quantile::P99).unwrap_or(0.0),
            p99_99: q(&pdv, Quantile::P99_99),
            max: pdv.last().map_or(0.0, |&x| x as f64 / 1e3),
            ipdv_p99: q(&ipdv, Quantile::P99),
        })
    }
}

/// Where the two sides of every workload run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pinning {
    /// The pinging / publishing side (namespace a).
    pub sender_cpu: u32,
    /// The answering / subscribing side (namespace b).
    pub receiver_cpu: u32,
    /// SCHED_FIFO priority of both, memory locked (tuned runs).
    pub rt_priority: Option<u8>,
}

/// One measured row.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    /// "D", "D&S", "T&S" (see [`BenchOptions::configuration`]).
    pub configuration: String,
    /// "detpath udp", "detpath afxdp", ..., "ddsperf".
    pub system: String,
    /// "latency 32B 1kHz", "rate 32B", "bandwidth 1KiB".
    pub workload: String,
    /// One-way latency (RTT / 2) of a latency workload, µs.
    pub latency_us: Option<LatencySummaryJson>,
    /// Samples received per second, the mean of the steady seconds (throughput workloads).
    pub samples_per_s: Option<f64>,
    /// Payload Mbit/s received, the mean of the same seconds (throughput workloads).
    pub mbit_per_s: Option<f64>,
    /// Pings never answered (latency), or samples the subscriber counted lost (throughput).
    pub lost: u64,
    /// What else the table should say: pings sent, discovery time, writer blocking, ddsperf's method.
    pub note: String,
    /// Which repeat of the workload (1-based).
    pub repeat: u32,
    /// How detpath's sides waited (`busy`, `adaptive`, `block`, `spinNus`); "" for ddsperf.
    pub wait: String,
    /// Packet delay variation (latency workloads with per-sample records).
    pub pdv_us: Option<PdvSummary>,
    /// What the run cost: the two sides' threads (from the start of
    /// discovery to the end; for ddsperf, its two processes over their
    /// lives), the cores they used, samples received per CPU-second.
    pub cpu: Option<CpuReport>,
    /// The two sides' CPU time over the run's wall time, percent of one core.
    pub cpu_percent: Option<f64>,
    /// The run's name in the result directory (its records are `<name>.csv`).
    pub run: Option<String>,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The two-namespace testbed could not be set up.
    #[error("testbed: {0}")]
    Testbed(#[from] Box<detpath::Error>),
    /// One side of a detpath workload failed.
    #[error("{system} {workload}: {source}")]
    Run {
        /// `detpath <datapath>`.
        system: String,
        /// The workload (`latency`, `rate 32B`, ...).
        workload: String,
        /// The side's error.
        source: Box<detpath_pubsub::app::AppError>,
    },
    /// ddsperf could not run, or the harness failed around a run (a
    /// thread panicked, a run could not be saved).
    #[error("ddsperf: {0}")]
    Ddsperf(String),
    /// The Fast DDS reference program could not be built (what to install
    /// is in the message) or run.
    #[error("Fast DDS: {0}")]
    FastDds(String),
    /// The mixed workload could not set up or finish an arm.
    #[error("mixed workload: {0}")]
    Mixed(String),
}

const PORT: u16 = 7410;

/// How long a real-time sender spins after each datagram before it sleeps.
const TUNED_SENDER_SPIN_NS: u64 = 200_000;

/// The endpoint spec of one side: a UDP datapath (`afxdp`) at the RTPS port,
/// or `raweth+<frame datapath>` (`raweth+afxdp`: layer 2 at EtherType 7400,
/// discovery by broadcast); pinned (and real-time) by `rt_*` keys when asked.
fn side_uri(side: &Side, datapath: &str, cpu: Option<u32>, rt_priority: Option<u8>) -> String {
    let (prefix, uri) = match datapath.strip_prefix("raweth+") {
        Some(frames) => ("raweth+", format!("{frames}://{}", side.iface)),
        None => ("", side.uri(datapath, PORT)),
    };
    let Some(core) = cpu else { return format!("{prefix}{uri}") };
    let spec: detpath::EndpointSpec = uri.parse().expect("the testbed's specs parse");
    let rt = detpath::RealtimeSpec { fifo_priority: rt_priority, ..detpath::RealtimeSpec::pinned(core as usize) };
    format!("{prefix}{}", spec.with_realtime(&rt))
}

fn node(side: &Side, peer: &Side, datapath: &str, role: Role, size: usize, secs: u64, bench: &BenchOptions) -> NodeOptions {
    let receiver = matches!(role, Role::Pong | Role::Sub);
    let cpu = bench.pinning.map(|p| if receiver { p.receiver_cpu } else { p.sender_cpu });
    let rt = bench.pinning.and_then(|p| p.rt_priority).filter(|_| realtime_ok(&role));
    // Real-time sides: the receiver has the isolated core to itself and
    // spins; the sender shares its core with the OS, so it spins only while
    // an answer is due (200 µs after each datagram) and sleeps otherwise.
    let wait = match (rt, receiver) {
        (None, _) => bench.wait,
        (Some(_), true) => Wait::Busy,
        (Some(_), false) => Wait::Hybrid { spin_ns: TUNED_SENDER_SPIN_NS },
    };
    let mut o = NodeOptions::new(&side_uri(side, datapath, cpu, rt), role);
    o.netns = Some(side.netns.clone());
    o.peers = vec![peer.addr];
    o.size = size;
    o.duration = Some(Duration::from_secs(secs));
    o.wait = wait;
    o.fair_slice_ns = bench.fair_slice_ns;
    o
}

/// Mean of the full seconds of a receiving run (the first and last, partial, dropped).
fn steady(reports: &[SecondReport]) -> (f64, f64) {
    let busy: Vec<&SecondReport> = reports.iter().filter(|r| r.samples > 0).collect();
    let core: Vec<&&SecondReport> = if busy.len() > 2 { busy[1..busy.len() - 1].iter().collect() } else { busy.iter().collect() };
    if core.is_empty() {
        return (0.0, 0.0);
    }
    let n = core.len() as f64;
    (core.iter().map(|r| r.samples_per_s).sum::<f64>() / n, core.iter().map(|r| r.mbit_per_s).sum::<f64>() / n)
}

/// Whether a side may run SCHED_FIFO: not an unlimited-rate publisher, which
/// never sleeps and would starve every other thread of its core, its own
/// included (ddsperf's pub then never sees its -D deadline).
fn realtime_ok(role: &Role) -> bool {
    !matches!(role, Role::Pub { .. })
}

/// Runs `f` on a thread of its own: a side pinned and made real-time by its
/// endpoint's `rt_*` keys keeps that for life, so never the caller's thread.
fn on_own_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, BenchError> {
    std::thread::spawn(f).join().map_err(|_| BenchError::Ddsperf("a benchmark thread panicked".into()))
}

/// Runs `f` measured by a [`ThreadMeter`] named `name` (on the calling thread).
fn metered<T>(name: &str, f: impl FnOnce() -> T) -> (T, ThreadCpu) {
    let m = ThreadMeter::start(name);
    let r = f();
    (r, m.stop())
}

/// The CPU report of a two-sided run and its share of one core.
fn cpu_of(threads: Vec<ThreadCpu>, before: &CoreTicks, o: &BenchOptions, work: f64, wall_s: f64) -> (Option<CpuReport>, Option<f64>) {
    let after = CoreTicks::now();
    let cores: Vec<u32> = o.pinning.map(|p| vec![p.sender_cpu, p.receiver_cpu]).unwrap_or_default();
    let r = CpuReport::new(threads, before, &after, &cores, work);
    let pct = (wall_s > 0.0).then(|| r.cpu_s() / wall_s * 100.0);
    (Some(r), pct)
}

/// The per-sample records of a ping run: one `ok` record per answered ping
/// (client send and pong reception times; the pong side's times are not
/// taken), then one `lost` record per ping never answered.
pub fn ping_records(rounds: &[(u32, u64, u64)], pings_sent: u64) -> Vec<Record> {
    let mut rounds = rounds.to_vec();
    rounds.sort_unstable_by_key(|r| r.0);
    let mut recs: Vec<Record> = rounds
        .iter()
        .map(|&(seq, sent, recv)| Record { seq: seq as u64, client_send_ns: sent, client_recv_ns: recv, status: Status::Ok, ..Record::default() })
        .collect();
    let first = rounds.first().map_or(1, |r| r.0 as u64);
    let answered: std::collections::HashSet<u64> = recs.iter().map(|r| r.seq).collect();
    let mut seq = first;
    let mut missing = pings_sent.saturating_sub(recs.len() as u64);
    while missing > 0 && seq < first + pings_sent + missing {
        if !answered.contains(&seq) {
            recs.push(Record { seq, status: Status::Lost, ..Record::default() });
            missing -= 1;
        }
        seq += 1;
    }
    recs
}

/// Paper 001's Table I as a profile (`--workloads table1`): two topics
/// relayed (ping, and pong back to its origin), 32 B at 1 kHz, unkeyed with
/// a partly random payload (`TopicKind::Uk32`), reliable KEEP_ALL on both
/// topics. The `latency` workload is ddsperf's: keyed KeyedSeq, KEEP_LAST 1.
pub const TABLE1: &str = "table1 32B 1kHz UK keep-all";

fn detpath_latency(tb: &Testbed, dp: &str, o: &BenchOptions, dir: Option<&mut ResultDir>, repeat: u32, table1: bool) -> Result<BenchRow, BenchError> {
    let workload = if table1 { TABLE1 } else { "latency 32B 1kHz" };
    let err = |source| BenchError::Run { system: format!("detpath {dp}"), workload: "latency".into(), source: Box::new(source) };
    let secs = match o.samples {
        Some(n) => n * 3 / 2 / 1000 + 10,
        None => o.seconds,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut po = node(tb.b(), tb.a(), dp, Role::Pong, 32, secs + 15, o);
    if table1 {
        po.topic = TopicKind::Uk32;
        po.ping_keep_all = true;
    }
    let s2 = stop.clone();
    let before = CoreTicks::now();
    let t0 = std::time::Instant::now();
    let pong = std::thread::spawn(move || metered("pong", || run(&po, &|| s2.load(Ordering::Relaxed), |_| {})));
    let mut pi = node(tb.a(), tb.b(), dp, Role::Ping { rate_hz: 1000.0 }, 32, secs, o);
    pi.count = o.samples.unwrap_or(0);
    pi.keep_rounds = true;
    pi.topic = if table1 { TopicKind::Uk32 } else { pi.topic };
    pi.ping_keep_all = table1;
    // Ctrl-C ends the pinging (a million samples take 17 minutes): the
    // samples so far are the run's, saved like a whole one.
    let out = on_own_thread(move || metered("ping", || run(&pi, &cleanup::interrupted, |_| {})));
    stop.store(true, Ordering::Relaxed);
    let pong = pong.join().map_err(|_| BenchError::Ddsperf("pong thread panicked".into()))?;
    let wall = t0.elapsed().as_secs_f64();
    let (out, ping_cpu) = out?;
    let out = out.map_err(err)?;
    let (cpu, cpu_percent) = cpu_of(vec![ping_cpu, pong.1], &before, o, out.received as f64, wall);
    // Ctrl-C ended the pinging before its samples (or its duration) were in.
    let cut_short = cleanup::interrupted() && o.samples.is_none_or(|n| out.received < n);
    let records = ping_records(&out.rounds, out.pings_sent);
    let lat: Vec<u64> = records.iter().filter_map(|r| r.latency_ns()).collect();
    let mut run_name = None;
    if let Some(dir) = dir {
        let config = RunConfig {
            datapath: format!("pubsub+{dp}"),
            mode: format!("RTPS {workload}, reliable, wait {}", wait_name(o.wait)),
            size: 32,
            period_ns: 1_000_000,
            // What was asked for, or what was sent when Ctrl-C ended it early.
            rounds: if cut_short { out.pings_sent } else { o.samples.unwrap_or(out.pings_sent) },
            timeout_ns: 0,
            stress_percent: o.stress_percent,
            tuned: o.tuned,
            tuning: if o.tuned { "tuned".into() } else { "default".into() },
            cpu_client: o.pinning.map(|p| p.sender_cpu),
            cpu_server: o.pinning.map(|p| p.receiver_cpu),
            peer: None,
            extra: BTreeMap::from([("workload".into(), workload.into()), ("repeat".into(), repeat.to_string()), ("wait".into(), wait_name(o.wait))]),
        };
        let loss = LossCounts { sent: out.pings_sent, ok: out.received, lost: out.lost, ..LossCounts::default() };
        let mut r = RunResult::from_records(config, Environment::capture(), &records, Some(loss));
        if cut_short {
            r.complete = false;
            r.interrupted = Some("interrupted by a signal".into());
        }
        if let (Some(c), Some(p)) = (&cpu, cpu_percent) {
            r.notes.push(format!("cpu {p:.0}% of a core: {}", c.summary()));
        }
        // summary.json's run carries the record itself, as `detpath bench`'s do.
        r.cpu = cpu.clone();
        let saved = dir.save_run(&r, &records).map_err(|e| BenchError::Ddsperf(format!("saving the run: {e}")))?;
        run_name = Some(saved.name.clone());
    }
    Ok(BenchRow {
        configuration: o.configuration.clone(),
        system: format!("detpath {dp}"),
        workload: workload.into(),
        latency_us: Some(out.latency_us),
        samples_per_s: None,
        mbit_per_s: None,
        lost: out.lost,
        note: format!("{} pings, discovery {:.1} ms", out.pings_sent, out.discovery_ms.unwrap_or(0.0)),
        repeat,
        wait: wait_name(o.wait),
        pdv_us: PdvSummary::from_latencies(&lat),
        cpu,
        cpu_percent,
        run: run_name,
    })
}

fn detpath_throughput(tb: &Testbed, dp: &str, size: usize, o: &BenchOptions, repeat: u32) -> Result<BenchRow, BenchError> {
    let workload = if size == 32 { "rate 32B" } else { "bandwidth 1KiB" };
    let err = |source| BenchError::Run { system: format!("detpath {dp}"), workload: workload.into(), source: Box::new(source) };
    let stop = Arc::new(AtomicBool::new(false));
    let so = node(tb.b(), tb.a(), dp, Role::Sub, size, o.seconds + 15, o);
    let s2 = stop.clone();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let r2 = reports.clone();
    let before = CoreTicks::now();
    let t0 = std::time::Instant::now();
    let sub = std::thread::spawn(move || metered("sub", || run(&so, &|| s2.load(Ordering::Relaxed), |r| r2.lock().unwrap().push(r.clone()))));
    let pb = node(tb.a(), tb.b(), dp, Role::Pub { rate_hz: 0.0 }, size, o.seconds, o);
    let out = on_own_thread(move || metered("pub", || run(&pb, &cleanup::interrupted, |_| {})));
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let (sub, sub_cpu) = sub.join().map_err(|_| BenchError::Ddsperf("subscriber thread panicked".into()))?;
    let wall = t0.elapsed().as_secs_f64();
    let (out, pub_cpu) = out?;
    let out = out.map_err(err)?;
    let sub = sub.map_err(err)?;
    let (cpu, cpu_percent) = cpu_of(vec![pub_cpu, sub_cpu], &before, o, sub.data_received as f64, wall);
    let (rate, mbit) = steady(&reports.lock().unwrap());
    Ok(BenchRow {
        configuration: o.configuration.clone(),
        system: format!("detpath {dp}"),
        workload: workload.into(),
        latency_us: None,
        samples_per_s: Some(rate),
        mbit_per_s: Some(mbit),
        lost: sub.lost,
        note: format!("published {}, received {}, writer blocked {} times", out.data_sent, sub.data_received, out.data_sent.saturating_sub(sub.data_received)),
        repeat,
        wait: wait_name(o.wait),
        pdv_us: None,
        cpu,
        cpu_percent,
        run: None,
    })
}

/// A private directory (random name, mode 0700) for ddsperf's configuration; removed when it drops.
fn config_dir() -> Result<tempfile::TempDir, BenchError> {
    tempfile::Builder::new()
        .prefix("detpath-psbench-")
        .tempdir()
        .map_err(|e| BenchError::Ddsperf(format!("temporary directory for ddsperf's configuration: {e}")))
}

/// `ip netns exec NS [taskset -c CPU] [chrt -f RT]`: the start of a reference
/// peer's command (ddsperf, Fast DDS) in a side's namespace, pinned and
/// real-time as detpath's own sides are.
pub(crate) fn pinned_in(side: &Side, cpu: Option<u32>, rt: Option<u8>) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &side.netns]);
    if let Some(c) = cpu {
        cmd.args(["taskset", "-c", &c.to_string()]);
    }
    if let Some(p) = rt {
        cmd.args(["chrt", "-f", &p.to_string()]);
    }
    cmd
}

/// Runs ddsperf in a namespace with a unicast-peer configuration (written
/// into `dir`), on `cpu` (and SCHED_FIFO `rt`) when given; returns the
/// child (its stdout piped), tied to this process.
fn ddsperf_in(dir: &Path, side: &Side, peer: &Side, args: &[&str], cpu: Option<u32>, rt: Option<u8>) -> Result<TiedChild, BenchError> {
    let cfg = dir.join(format!("cyclonedds-{}.xml", side.netns));
    detpath::sys::fsutil::write_atomic(
        &cfg,
        format!(
            r#"<CycloneDDS><Domain Id="any"><General><Interfaces><NetworkInterface name="{}"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex><Peers><Peer Address="{}"/></Peers></Discovery></Domain></CycloneDDS>"#,
            side.iface, peer.addr
        )
        .as_bytes(),
    )
    .map_err(|e| BenchError::Ddsperf(e.to_string()))?;
    let mut cmd = pinned_in(side, cpu, rt);
    cmd.arg("ddsperf").args(args).env("CYCLONEDDS_URI", format!("file://{}", cfg.display())).stdout(Stdio::piped()).stderr(Stdio::null());
    cleanup::spawn_tied(&mut cmd, "ddsperf").map_err(|e| BenchError::Ddsperf(format!("cannot run ddsperf (apt-get install cyclonedds-tools): {e}")))
}

/// Waits for ddsperf (after killing it, with `kill`) and returns what it
/// printed and what it cost in CPU (as the thread `name` on `core`), read
/// after it exited and before it is reaped.
fn finish(mut c: TiedChild, kill: bool, name: &str, core: Option<u32>) -> (String, Option<ThreadCpu>) {
    if kill {
        let _ = c.child().kill();
    }
    let mut s = String::new();
    if let Some(mut o) = c.child().stdout.take() {
        let _ = o.read_to_string(&mut s);
    }
    let cpu = detpath_instrument::child_cpu::exited_thread(name, core, c.id());
    let _ = c.child().wait();
    (s, cpu)
}

fn field(line: &str, key: &str) -> Option<f64> {
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == key {
            return it.next()?.trim_end_matches("us").parse().ok();
        }
    }
    None
}

/// ddsperf ping's per-second lines combined (see the module comment).
pub fn parse_ddsperf_ping(text: &str) -> Option<LatencySummaryJson> {
    let (mut n, mut sum, mut p99, mut max, mut min, mut p50) = (0usize, 0.0, 0.0f64, 0.0f64, f64::MAX, Vec::new());
    for l in text.lines().filter(|l| l.contains(" mean ") && l.contains(" cnt ")) {
        let (Some(mean), Some(cnt)) = (field(l, "mean"), field(l, "cnt")) else {
            continue;
        };
        n += cnt as usize;
        sum += mean * cnt;
        p99 = p99.max(field(l, "99%").unwrap_or(0.0));
        max = max.max(field(l, "max").unwrap_or(0.0));
        min = min.min(field(l, "min").unwrap_or(f64::MAX));
        p50.push(field(l, "50%").unwrap_or(0.0));
    }
    if n == 0 {
        return None;
    }
    p50.sort_by(|a, b| a.total_cmp(b));
    Some(LatencySummaryJson { count: n, mean: sum / n as f64, min, p50: p50[p50.len() / 2], p99, p99_9: None, p99_99: None, p99_9999: None, max })
}

/// What a ddsperf sub printed, combined ([`parse_ddsperf_sub`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DdsperfSub {
    /// Samples per second, the mean of the steady seconds (the first and
    /// last, partial, dropped).
    pub samples_per_s: f64,
    /// Mbit/s of payload, the mean of the same seconds.
    pub mbit_per_s: f64,
    /// Samples ddsperf counted lost by the end (its last `total N lost L`).
    pub lost: u64,
    /// Samples received by the end (its last `total N`): the work of the
    /// row's `cpu` record.
    pub received: u64,
}

/// ddsperf sub's per-second "total N lost L ... rate X kS/s Y Mb/s" lines;
/// `None` without a second that received anything.
pub fn parse_ddsperf_sub(text: &str) -> Option<DdsperfSub> {
    let mut v = Vec::new();
    let (mut lost, mut received) = (0, 0);
    for l in text.lines().filter(|l| l.contains(" rate ") && l.contains("kS/s")) {
        let w: Vec<&str> = l.split_whitespace().collect();
        let at = w.iter().position(|x| *x == "rate")?;
        let ks: f64 = w.get(at + 1)?.parse().ok()?;
        let mb: f64 = w.get(at + 3)?.parse().ok()?;
        if let Some(i) = w.iter().position(|x| *x == "total") {
            received = w.get(i + 1).and_then(|x| x.parse().ok()).unwrap_or(received);
            lost = w.get(i + 3).and_then(|x| x.parse().ok()).unwrap_or(lost);
        }
        if ks > 0.0 {
            v.push((ks * 1000.0, mb));
        }
    }
    let core = if v.len() > 2 { &v[1..v.len() - 1] } else { &v[..] };
    if core.is_empty() {
        return None;
    }
    let n = core.len() as f64;
    Some(DdsperfSub { samples_per_s: core.iter().map(|x| x.0).sum::<f64>() / n, mbit_per_s: core.iter().map(|x| x.1).sum::<f64>() / n, lost, received })
}

fn ddsperf_rows(tb: &Testbed, o: &BenchOptions, repeat: u32) -> Result<Vec<BenchRow>, BenchError> {
    let secs = o.seconds.to_string();
    let long = (o.seconds + 10).to_string();
    let mut rows = Vec::new();
    let rt = o.pinning.and_then(|p| p.rt_priority);
    let (tx_cpu, rx_cpu) = (o.pinning.map(|p| p.sender_cpu), o.pinning.map(|p| p.receiver_cpu));
    let dir = config_dir()?;
    let before = CoreTicks::now();
    let t0 = std::time::Instant::now();
    let pong = ddsperf_in(dir.path(), tb.b(), tb.a(), &["-D", &long, "pong"], rx_cpu, rt)?;
    std::thread::sleep(Duration::from_millis(500));
    let ping = ddsperf_in(dir.path(), tb.a(), tb.b(), &["-D", &secs, "ping", "1000Hz", "size", "32"], tx_cpu, rt)?;
    let (text, ping_cpu) = finish(ping, false, "ddsperf-ping", tx_cpu);
    let (_, pong_cpu) = finish(pong, true, "ddsperf-pong", rx_cpu);
    let latency = parse_ddsperf_ping(&text);
    // Pongs received per CPU-second, as detpath's latency rows.
    let work = latency.as_ref().map_or(0.0, |l| l.count as f64);
    let (cpu, cpu_percent) = cpu_of(ping_cpu.into_iter().chain(pong_cpu).collect(), &before, o, work, t0.elapsed().as_secs_f64());
    rows.push(BenchRow {
        configuration: o.configuration.clone(),
        system: "ddsperf".into(),
        workload: "latency 32B 1kHz".into(),
        latency_us: latency,
        samples_per_s: None,
        mbit_per_s: None,
        lost: 0,
        note: "CycloneDDS 0.10 over kernel UDP; per-second figures combined".into(),
        repeat,
        wait: String::new(),
        pdv_us: None,
        cpu,
        cpu_percent,
        run: None,
    });
    for (size, workload) in [("32", "rate 32B"), ("1024", "bandwidth 1KiB")] {
        let before = CoreTicks::now();
        let t0 = std::time::Instant::now();
        let sub = ddsperf_in(dir.path(), tb.b(), tb.a(), &["-D", &long, "sub"], rx_cpu, rt)?;
        std::thread::sleep(Duration::from_millis(500));
        let publ =
            ddsperf_in(dir.path(), tb.a(), tb.b(), &["-D", &secs, "pub", "size", size], tx_cpu, rt.filter(|_| realtime_ok(&Role::Pub { rate_hz: 0.0 })))?;
        let (_, pub_cpu) = finish(publ, false, "ddsperf-pub", tx_cpu);
        std::thread::sleep(Duration::from_secs(1));
        let (text, sub_cpu) = finish(sub, true, "ddsperf-sub", rx_cpu);
        let r = parse_ddsperf_sub(&text);
        // Samples received per CPU-second, as detpath's throughput rows.
        let work = r.map_or(0.0, |x| x.received as f64);
        let (cpu, cpu_percent) = cpu_of(pub_cpu.into_iter().chain(sub_cpu).collect(), &before, o, work, t0.elapsed().as_secs_f64());
        rows.push(BenchRow {
            configuration: o.configuration.clone(),
            system: "ddsperf".into(),
            workload: workload.into(),
            latency_us: None,
            samples_per_s: r.map(|x| x.samples_per_s),
            mbit_per_s: r.map(|x| x.mbit_per_s),
            lost: r.map(|x| x.lost).unwrap_or(0),
            note: "CycloneDDS 0.10 over kernel UDP".into(),
            repeat,
            wait: String::new(),
            pdv_us: None,
            cpu,
            cpu_percent,
            run: None,
        });
    }
    Ok(rows)
}

/// Runs every workload on every datapath (one fresh testbed per datapath),
/// then the ddsperf reference, then Fast DDS's when asked; all of it `o.repeat` times. The latency
/// runs' per-sample records and summaries go to `dir` when given (a result
/// directory `detpath report` reads).
pub fn bench(o: &BenchOptions, mut dir: Option<&mut ResultDir>, mut progress: impl FnMut(&BenchRow)) -> Result<Vec<BenchRow>, BenchError> {
    let mut rows = Vec::new();
    if !o.runs_paper_workloads() {
        return Ok(rows); // the mixed workload only: mixed::bench runs it
    }
    for repeat in 1..=o.repeat.max(1) {
        for dp in &o.datapaths {
            if cleanup::interrupted() {
                return Ok(rows); // Ctrl-C: the rows so far (the run it ended included)
            }
            let tb = Testbed::up(TestbedConfig::unique("psb")).map_err(Box::new)?;
            // A workload asked for, unless Ctrl-C came: then none starts.
            let next = |w: &str| o.runs(w) && !cleanup::interrupted();
            let mut done = Vec::new();
            if next("latency") {
                done.push(detpath_latency(&tb, dp, o, dir.as_deref_mut(), repeat, false)?);
            }
            if next("table1") {
                done.push(detpath_latency(&tb, dp, o, dir.as_deref_mut(), repeat, true)?);
            }
            if next("rate") {
                done.push(detpath_throughput(&tb, dp, 32, o, repeat)?);
            }
            if next("bandwidth") {
                done.push(detpath_throughput(&tb, dp, 1024, o, repeat)?);
            }
            for r in done {
                progress(&r);
                rows.push(r);
            }
        }
        if o.with_ddsperf && !cleanup::interrupted() {
            let tb = Testbed::up(TestbedConfig::unique("psb")).map_err(Box::new)?;
            for r in ddsperf_rows(&tb, o, repeat)? {
                progress(&r);
                rows.push(r);
            }
        }
        if o.with_fastdds && !cleanup::interrupted() {
            for r in fastdds::rows(o, dir.as_deref_mut(), repeat)? {
                progress(&r);
                rows.push(r);
            }
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_are_pinned_by_rt_keys_and_only_sleeping_ones_are_real_time() {
        let tb = TestbedConfig::with_prefix("psb-unit");
        assert_eq!(side_uri(&tb.a, "udp", None, None), "udp://dpa?addr=10.77.0.1&port=7410");
        assert_eq!(side_uri(&tb.a, "afxdp", Some(0), Some(50)), "afxdp://dpa?addr=10.77.0.1&port=7410&rt_core=0&rt_priority=50");
        assert!(realtime_ok(&Role::Ping { rate_hz: 1000.0 }) && realtime_ok(&Role::Pong) && realtime_ok(&Role::Sub));
        assert!(!realtime_ok(&Role::Pub { rate_hz: 0.0 }), "an unlimited publisher never sleeps");
    }

    #[test]
    fn pdv_is_latency_over_the_minimum_and_ipdv_the_consecutive_difference() {
        let lat: Vec<u64> = (0..200).map(|i| 10_000 + if i % 2 == 0 { 0 } else { 4_000 }).collect();
        let p = PdvSummary::from_latencies(&lat).unwrap();
        assert_eq!((p.p50, p.p99, p.max, p.p99_99), (0.0, 4.0, 4.0, None));
        assert_eq!(p.ipdv_p99, Some(4.0));
        assert!(PdvSummary::from_latencies(&[]).is_none());
    }

    #[test]
    fn ping_records_keep_every_ping_and_name_the_lost_ones() {
        let r = ping_records(&[(12, 1_000, 21_000), (10, 500, 10_500), (14, 2_000, 2_040)], 5);
        assert_eq!(r.len(), 5);
        assert_eq!(r.iter().filter(|x| x.status == Status::Lost).map(|x| x.seq).collect::<Vec<_>>(), vec![11, 13]);
        assert_eq!(r[0].latency_ns(), Some(5_000));
    }

    #[test]
    fn parses_ddsperf_ping_lines() {
        let t = "[1] 2.001  vm:11197 size 32 mean 104.057us min 60.508us 50% 81.002us 90% 100.158us 99% 590.668us max 601.223us cnt 991\n\
                 [1] 3.000  vm:11197 size 32 mean 98.232us min 59.847us 50% 81.407us 90% 95.188us 99% 582.007us max 1972.141us cnt 999\n";
        let s = parse_ddsperf_ping(t).unwrap();
        assert_eq!(s.count, 1990);
        assert!((s.mean - (104.057 * 991.0 + 98.232 * 999.0) / 1990.0).abs() < 1e-6);
        assert_eq!((s.p99, s.max, s.min), (590.668, 1972.141, 59.847));
    }

    #[test]
    fn parses_ddsperf_sub_lines() {
        let t = "[1] 1.000  size 32 total 100 lost 0 delta 100 lost 0 rate 0.10 kS/s 0.03 Mb/s (0.01 kS/s 0.00 Mb/s)\n\
                 [1] 2.000  size 32 total 200100 lost 0 delta 200000 lost 0 rate 200.00 kS/s 51.20 Mb/s (20.01 kS/s 5.12 Mb/s)\n\
                 [1] 3.000  size 32 total 400100 lost 0 delta 200000 lost 0 rate 200.00 kS/s 51.20 Mb/s (40.01 kS/s 10.24 Mb/s)\n\
                 [1] 4.000  size 32 total 400200 lost 0 delta 100 lost 0 rate 0.10 kS/s 0.03 Mb/s (40.02 kS/s 10.24 Mb/s)\n";
        let s = parse_ddsperf_sub(t).unwrap();
        assert_eq!(s, DdsperfSub { samples_per_s: 200_000.0, mbit_per_s: 51.2, lost: 0, received: 400_200 });
    }
}
