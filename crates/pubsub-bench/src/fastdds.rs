//! The Fast DDS reference rows of `detpath pubsub bench` (`--fastdds`):
//! Fast DDS 2.9 against itself over its own UDPv4 transport, with the same
//! type (ddsperf's KeyedSeq), sizes, QoS and rates as detpath's rows:
//!
//! - latency: 32 B at 1 kHz ping/pong, reliable KEEP_LAST 1 on both topics;
//!   one-way latency is RTT/2 of every answered ping, from per-sample
//!   times the ping side keeps (so mean, p50, p99, p99.9 and max are exact
//!   over all samples, as detpath's, and its records go to the result
//!   directory as `fastdds_udp-*` runs);
//! - rate / bandwidth: 32 B / 1 KiB as fast as a reliable KEEP_ALL writer
//!   (depth 1000, as detpath's) takes them, samples per second the mean of
//!   the subscriber's full seconds.
//!
//! The program ([`build`]) is a small C++ one of ours on Fast DDS's
//! DDS API; its writers heartbeat every 5 ms (Fast DDS's default 3 s stalls
//! a full KEEP_ALL history for seconds), the rest is Fast DDS's default
//! (synchronous publishing, no batching, no shared memory or data
//! sharing: the sides are in two namespaces). Its sides run as ddsperf's
//! do: `ip netns exec NS [taskset -c N] [chrt -f P] perf ROLE`, tied to
//! detpath, pinned and real-time as the configuration says (never an
//! unlimited publisher), their CPU read when they exit
//! ([`detpath_instrument::child_cpu`]). [`ratios`] sets detpath's rows
//! against these.

pub mod build;
pub mod output;
pub mod ratios;

use super::{cpu_of, finish, ping_records, realtime_ok, BenchError, BenchOptions, BenchRow, PdvSummary};
use detpath::sys::cleanup::{self, TiedChild};
use detpath::sys::cputime::CoreTicks;
use detpath::testbed::{Side, Testbed};
use detpath_instrument::records::LossCounts;
use detpath_instrument::results::{Environment, ResultDir, RunConfig, RunResult};
use detpath_pubsub::app::LatencySummaryJson;
use detpath_pubsub::ddsperf::{summarize, Role};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// What the rows' notes say the system is.
const WHAT: &str = "Fast DDS 2.9 over its UDPv4 transport";

fn err(e: impl std::fmt::Display) -> BenchError {
    BenchError::FastDds(e.to_string())
}

/// The program, built (or found in its cache); the error names the package to install.
pub fn program() -> Result<std::path::PathBuf, BenchError> {
    build::program().map_err(BenchError::FastDds)
}

/// Runs the program in a side's namespace, on `cpu` (and SCHED_FIFO `rt`)
/// when given, discovering `peer` by unicast; its stdout piped, tied to this process.
fn perf_in(exe: &Path, side: &Side, peer: &Side, args: &[String], cpu: Option<u32>, rt: Option<u8>) -> Result<TiedChild, BenchError> {
    let mut cmd = crate::pinned_in(side, cpu, rt);
    cmd.arg(exe).args(args).args(["--addr", &side.addr.to_string(), "--peer", &peer.addr.to_string()]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    cleanup::spawn_tied(&mut cmd, "fastdds perf").map_err(|e| err(format!("cannot run {}: {e}", exe.display())))
}

fn row(o: &BenchOptions, workload: &str, repeat: u32) -> BenchRow {
    BenchRow {
        configuration: o.configuration.clone(),
        system: ratios::SYSTEM.into(),
        workload: workload.into(),
        latency_us: None,
        samples_per_s: None,
        mbit_per_s: None,
        lost: 0,
        note: String::new(),
        repeat,
        wait: String::new(),
        pdv_us: None,
        cpu: None,
        cpu_percent: None,
        run: None,
    }
}

/// The ping/pong row: 32 B at 1 kHz (until `o.samples` pings when given, else `o.seconds`).
fn latency(exe: &Path, tb: &Testbed, o: &BenchOptions, dir: Option<&mut ResultDir>, repeat: u32) -> Result<BenchRow, BenchError> {
    let workload = ratios::LATENCY;
    let rt = o.pinning.and_then(|p| p.rt_priority);
    let (tx_cpu, rx_cpu) = (o.pinning.map(|p| p.sender_cpu), o.pinning.map(|p| p.receiver_cpu));
    let ping_s = o.samples.map_or(o.seconds as f64, |n| n as f64 / 1000.0);
    let before = CoreTicks::now();
    let t0 = Instant::now();
    let pong_args: Vec<String> = ["pong", "--idle", "2", "--limit", &format!("{}", ping_s + 60.0)].map(String::from).to_vec();
    let pong = perf_in(exe, tb.b(), tb.a(), &pong_args, rx_cpu, rt)?;
    std::thread::sleep(Duration::from_millis(500));
    let ping_args: Vec<String> = ["ping", "--rate", "1000", "--size", "32", "--duration", &ping_s.to_string()].map(String::from).to_vec();
    let ping = perf_in(exe, tb.a(), tb.b(), &ping_args, tx_cpu, rt)?;
    let (text, ping_cpu) = finish(ping, false, "fastdds-ping", tx_cpu);
    // The pong exits 2 s after the last ping; killed if the ping never came.
    let (_, pong_cpu) = finish(pong, !text.contains("\"rtt\""), "fastdds-pong", rx_cpu);
    let out = output::ping(&text);
    if !out.done {
        return Err(err("the Fast DDS ping ended without its summary (no match with the pong within 20 s?)"));
    }
    let records = ping_records(&out.rounds, out.sent);
    let lat: Vec<u64> = records.iter().filter_map(|r| r.latency_ns()).collect();
    let summary = summarize(&lat.iter().map(|&x| x.min(u64::from(u32::MAX)) as u32).collect::<Vec<_>>());
    let lost = out.sent.saturating_sub(out.rounds.len() as u64);
    let (cpu, cpu_percent) = cpu_of(ping_cpu.into_iter().chain(pong_cpu).collect(), &before, o, out.rounds.len() as f64, t0.elapsed().as_secs_f64());
    let mut r = row(o, workload, repeat);
    if let Some(dir) = dir {
        let config = RunConfig {
            datapath: "fastdds+udp".into(),
            mode: format!("Fast DDS 2.9 {workload}, reliable KEEP_LAST 1"),
            size: 32,
            period_ns: 1_000_000,
            rounds: out.sent,
            timeout_ns: 0,
            stress_percent: o.stress_percent,
            tuned: o.tuned,
            tuning: if o.tuned { "tuned".into() } else { "default".into() },
            cpu_client: o.pinning.map(|p| p.sender_cpu),
            cpu_server: o.pinning.map(|p| p.receiver_cpu),
            peer: None,
            extra: BTreeMap::from([("workload".into(), workload.into()), ("repeat".into(), repeat.to_string()), ("system".into(), ratios::SYSTEM.into())]),
        };
        let loss = LossCounts { sent: out.sent, ok: out.rounds.len() as u64, lost, ..LossCounts::default() };
        let mut run = RunResult::from_records(config, Environment::capture(), &records, Some(loss));
        if let (Some(c), Some(p)) = (&cpu, cpu_percent) {
            run.notes.push(format!("cpu {p:.0}% of a core: {}", c.summary()));
        }
        run.cpu = cpu.clone();
        let saved = dir.save_run(&run, &records).map_err(|e| err(format!("saving the run: {e}")))?;
        r.run = Some(saved.name.clone());
    }
    r.latency_us = (summary.count > 0).then(|| LatencySummaryJson::from(summary));
    r.lost = lost;
    r.note = format!("{WHAT}; {} pings, discovery {:.1} ms", out.sent, out.discovery_ms.unwrap_or(0.0));
    r.pdv_us = PdvSummary::from_latencies(&lat);
    r.cpu = cpu;
    r.cpu_percent = cpu_percent;
    Ok(r)
}

/// A pub/sub row: `size` bytes as fast as reliable KEEP_ALL allows, for `o.seconds`.
fn throughput(exe: &Path, tb: &Testbed, size: usize, o: &BenchOptions, repeat: u32) -> Result<BenchRow, BenchError> {
    let workload = if size == 32 { ratios::RATE } else { "bandwidth 1KiB" };
    let rt = o.pinning.and_then(|p| p.rt_priority);
    let (tx_cpu, rx_cpu) = (o.pinning.map(|p| p.sender_cpu), o.pinning.map(|p| p.receiver_cpu));
    let before = CoreTicks::now();
    let t0 = Instant::now();
    let sub_args: Vec<String> = ["sub", "--idle", "4", "--limit", &(o.seconds + 60).to_string()].map(String::from).to_vec();
    let sub = perf_in(exe, tb.b(), tb.a(), &sub_args, rx_cpu, rt)?;
    std::thread::sleep(Duration::from_millis(500));
    let pub_args: Vec<String> = ["pub", "--size", &size.to_string(), "--duration", &o.seconds.to_string()].map(String::from).to_vec();
    let publ = perf_in(exe, tb.a(), tb.b(), &pub_args, tx_cpu, rt.filter(|_| realtime_ok(&Role::Pub { rate_hz: 0.0 })))?;
    let (pub_text, pub_cpu) = finish(publ, false, "fastdds-pub", tx_cpu);
    // The sub exits 4 s after its last sample; killed if none came.
    let (text, sub_cpu) = finish(sub, !pub_text.contains("\"done\""), "fastdds-sub", rx_cpu);
    let s = output::sub(&text);
    let written = pub_text.lines().find(|l| l.contains("\"done\"")).and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok());
    let field = |k: &str| written.as_ref().and_then(|v| v[k].as_u64()).unwrap_or(0);
    let (cpu, cpu_percent) = cpu_of(pub_cpu.into_iter().chain(sub_cpu).collect(), &before, o, s.received as f64, t0.elapsed().as_secs_f64());
    let rate = output::steady_rate(&s.per_second);
    let mut r = row(o, workload, repeat);
    r.samples_per_s = (s.received > 0).then_some(rate);
    r.mbit_per_s = (s.received > 0).then_some(rate * size as f64 * 8.0 / 1e6);
    r.lost = s.lost;
    r.note = format!("{WHAT}; published {}, received {}, writer blocked {} times (100 ms each at most)", field("written"), s.received, field("blocked"));
    r.cpu = cpu;
    r.cpu_percent = cpu_percent;
    Ok(r)
}

/// The Fast DDS rows of the workloads asked for, in a testbed of their own.
pub(crate) fn rows(o: &BenchOptions, dir: Option<&mut ResultDir>, repeat: u32) -> Result<Vec<BenchRow>, BenchError> {
    let exe = program()?;
    let tb = Testbed::up(detpath::testbed::TestbedConfig::unique("psf")).map_err(Box::new)?;
    let mut rows = Vec::new();
    let next = |w: &str| o.workloads.iter().any(|x| x == w) && !cleanup::interrupted();
    if next("latency") {
        rows.push(latency(&exe, &tb, o, dir, repeat)?);
    }
    if next("rate") {
        rows.push(throughput(&exe, &tb, 32, o, repeat)?);
    }
    if next("bandwidth") {
        rows.push(throughput(&exe, &tb, 1024, o, repeat)?);
    }
    Ok(rows)
}
