//! `detpath pubsub bench`: the paper's three workloads (its Table I and
//! §V.D) per datapath, detpath against detpath across the two-namespace
//! testbed, with ddsperf against ddsperf (CycloneDDS over kernel UDP) as the
//! reference row:
//!
//! 1. latency: 32-byte samples at 1 kHz, reliable, ping/pong (RTT/2);
//! 2. sample rate: 32-byte samples as fast as reliable KEEP_ALL allows;
//! 3. bandwidth: 1 KiB samples as fast as reliable KEEP_ALL allows.
//!
//! ddsperf prints per-second figures only (mean, percentiles up to 99%, max
//! per second), so its row combines them: mean weighted by count, p99 the
//! worst second's, max the largest; it has no p99.99.

use crate::app::{run, LatencySummaryJson, NodeOptions, SecondReport};
use crate::ddsperf::Role;
use crate::transport::Wait;
use detpath::testbed::{Side, Testbed, TestbedConfig};
use serde::Serialize;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub datapaths: Vec<String>,
    /// Seconds each workload runs.
    pub seconds: u64,
    pub with_ddsperf: bool,
    pub wait: Wait,
}

/// One measured row.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    /// "detpath udp", "detpath afxdp", ..., "ddsperf".
    pub system: String,
    /// "latency 32B 1kHz", "rate 32B", "bandwidth 1KiB".
    pub workload: String,
    pub latency_us: Option<LatencySummaryJson>,
    pub samples_per_s: Option<f64>,
    pub mbit_per_s: Option<f64>,
    pub lost: u64,
    pub note: String,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("testbed: {0}")]
    Testbed(#[from] Box<detpath::Error>),
    #[error("{system} {workload}: {source}")]
    Run { system: String, workload: String, source: Box<crate::app::AppError> },
    #[error("ddsperf: {0}")]
    Ddsperf(String),
}

const PORT: u16 = 7410;

/// The endpoint spec of `datapath` on `side`: a UDP datapath (`afxdp`) at the
/// RTPS port, or `raweth+<frame datapath>` (`raweth+afxdp`: layer 2 at
/// EtherType 7400, discovery by broadcast).
fn spec(side: &Side, datapath: &str) -> String {
    match datapath.strip_prefix("raweth+") {
        Some(frames) => format!("raweth+{frames}://{}", side.iface),
        None => side.uri(datapath, PORT),
    }
}

fn node(side: &Side, peer: &Side, datapath: &str, role: Role, size: usize, secs: u64, wait: Wait) -> NodeOptions {
    let mut o = NodeOptions::new(&spec(side, datapath), role);
    o.netns = Some(side.netns.clone());
    o.peers = vec![peer.addr];
    o.size = size;
    o.duration = Some(Duration::from_secs(secs));
    o.wait = wait;
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

fn detpath_latency(tb: &Testbed, dp: &str, o: &BenchOptions) -> Result<BenchRow, BenchError> {
    let err = |source| BenchError::Run { system: format!("detpath {dp}"), workload: "latency".into(), source: Box::new(source) };
    let stop = Arc::new(AtomicBool::new(false));
    let po = node(tb.b(), tb.a(), dp, Role::Pong, 32, o.seconds + 15, o.wait);
    let s2 = stop.clone();
    let pong = std::thread::spawn(move || run(&po, &|| s2.load(Ordering::Relaxed), |_| {}));
    let out = run(&node(tb.a(), tb.b(), dp, Role::Ping { rate_hz: 1000.0 }, 32, o.seconds, o.wait), &|| false, |_| {});
    stop.store(true, Ordering::Relaxed);
    let _ = pong.join();
    let out = out.map_err(err)?;
    Ok(BenchRow {
        system: format!("detpath {dp}"),
        workload: "latency 32B 1kHz".into(),
        latency_us: Some(out.latency_us),
        samples_per_s: None,
        mbit_per_s: None,
        lost: out.lost,
        note: format!("{} pings, discovery {:.1} ms", out.pings_sent, out.discovery_ms.unwrap_or(0.0)),
    })
}

fn detpath_throughput(tb: &Testbed, dp: &str, size: usize, o: &BenchOptions) -> Result<BenchRow, BenchError> {
    let workload = if size == 32 { "rate 32B" } else { "bandwidth 1KiB" };
    let err = |source| BenchError::Run { system: format!("detpath {dp}"), workload: workload.into(), source: Box::new(source) };
    let stop = Arc::new(AtomicBool::new(false));
    let so = node(tb.b(), tb.a(), dp, Role::Sub, size, o.seconds + 15, o.wait);
    let s2 = stop.clone();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let r2 = reports.clone();
    let sub = std::thread::spawn(move || run(&so, &|| s2.load(Ordering::Relaxed), |r| r2.lock().unwrap().push(r.clone())));
    let out = run(&node(tb.a(), tb.b(), dp, Role::Pub { rate_hz: 0.0 }, size, o.seconds, o.wait), &|| false, |_| {});
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let sub = sub.join().map_err(|_| BenchError::Ddsperf("subscriber thread panicked".into()))?;
    let out = out.map_err(err)?;
    let sub = sub.map_err(err)?;
    let (rate, mbit) = steady(&reports.lock().unwrap());
    Ok(BenchRow {
        system: format!("detpath {dp}"),
        workload: workload.into(),
        latency_us: None,
        samples_per_s: Some(rate),
        mbit_per_s: Some(mbit),
        lost: sub.lost,
        note: format!("published {}, received {}, writer blocked {} times", out.data_sent, sub.data_received, out.data_sent.saturating_sub(sub.data_received)),
    })
}

/// Runs ddsperf in a namespace with a unicast-peer configuration; returns its stdout.
fn ddsperf_in(side: &Side, peer: &Side, args: &[&str]) -> Result<std::process::Child, BenchError> {
    let dir = std::env::temp_dir().join(format!("detpath-psbench-{}-{}", side.netns, std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| BenchError::Ddsperf(e.to_string()))?;
    let cfg = dir.join("cyclonedds.xml");
    std::fs::write(
        &cfg,
        format!(
            r#"<CycloneDDS><Domain Id="any"><General><Interfaces><NetworkInterface name="{}"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex><Peers><Peer Address="{}"/></Peers></Discovery></Domain></CycloneDDS>"#,
            side.iface, peer.addr
        ),
    )
    .map_err(|e| BenchError::Ddsperf(e.to_string()))?;
    Command::new("ip")
        .args(["netns", "exec", &side.netns, "ddsperf"])
        .args(args)
        .env("CYCLONEDDS_URI", format!("file://{}", cfg.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| BenchError::Ddsperf(format!("cannot run ddsperf (apt-get install cyclonedds-tools): {e}")))
}

fn finish(mut c: std::process::Child, kill: bool) -> String {
    if kill {
        let _ = c.kill();
    }
    let _ = c.wait();
    let mut s = String::new();
    if let Some(mut o) = c.stdout.take() {
        let _ = o.read_to_string(&mut s);
    }
    s
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

/// ddsperf sub's per-second "rate X kS/s Y Mb/s" lines: steady-state mean (first and last dropped).
pub fn parse_ddsperf_sub(text: &str) -> Option<(f64, f64, u64)> {
    let mut v = Vec::new();
    let mut lost = 0;
    for l in text.lines().filter(|l| l.contains(" rate ") && l.contains("kS/s")) {
        let w: Vec<&str> = l.split_whitespace().collect();
        let at = w.iter().position(|x| *x == "rate")?;
        let ks: f64 = w.get(at + 1)?.parse().ok()?;
        let mb: f64 = w.get(at + 3)?.parse().ok()?;
        if let Some(i) = w.iter().position(|x| *x == "total") {
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
    Some((core.iter().map(|x| x.0).sum::<f64>() / n, core.iter().map(|x| x.1).sum::<f64>() / n, lost))
}

fn ddsperf_rows(tb: &Testbed, o: &BenchOptions) -> Result<Vec<BenchRow>, BenchError> {
    let secs = o.seconds.to_string();
    let long = (o.seconds + 10).to_string();
    let mut rows = Vec::new();
    let pong = ddsperf_in(tb.b(), tb.a(), &["-D", &long, "pong"])?;
    std::thread::sleep(Duration::from_millis(500));
    let ping = ddsperf_in(tb.a(), tb.b(), &["-D", &secs, "ping", "1000Hz", "size", "32"])?;
    let text = finish(ping, false);
    finish(pong, true);
    rows.push(BenchRow {
        system: "ddsperf".into(),
        workload: "latency 32B 1kHz".into(),
        latency_us: parse_ddsperf_ping(&text),
        samples_per_s: None,
        mbit_per_s: None,
        lost: 0,
        note: "CycloneDDS 0.10 over kernel UDP; per-second figures combined".into(),
    });
    for (size, workload) in [("32", "rate 32B"), ("1024", "bandwidth 1KiB")] {
        let sub = ddsperf_in(tb.b(), tb.a(), &["-D", &long, "sub"])?;
        std::thread::sleep(Duration::from_millis(500));
        let publ = ddsperf_in(tb.a(), tb.b(), &["-D", &secs, "pub", "size", size])?;
        finish(publ, false);
        std::thread::sleep(Duration::from_secs(1));
        let text = finish(sub, true);
        let r = parse_ddsperf_sub(&text);
        rows.push(BenchRow {
            system: "ddsperf".into(),
            workload: workload.into(),
            latency_us: None,
            samples_per_s: r.map(|x| x.0),
            mbit_per_s: r.map(|x| x.1),
            lost: r.map(|x| x.2).unwrap_or(0),
            note: "CycloneDDS 0.10 over kernel UDP".into(),
        });
    }
    Ok(rows)
}

/// Runs every workload on every datapath (one fresh testbed per datapath), then the ddsperf reference.
pub fn bench(o: &BenchOptions, mut progress: impl FnMut(&BenchRow)) -> Result<Vec<BenchRow>, BenchError> {
    let mut rows = Vec::new();
    for dp in &o.datapaths {
        let tb = Testbed::up(TestbedConfig::unique("psb")).map_err(Box::new)?;
        for r in [detpath_latency(&tb, dp, o)?, detpath_throughput(&tb, dp, 32, o)?, detpath_throughput(&tb, dp, 1024, o)?] {
            progress(&r);
            rows.push(r);
        }
    }
    if o.with_ddsperf {
        let tb = Testbed::up(TestbedConfig::unique("psb")).map_err(Box::new)?;
        for r in ddsperf_rows(&tb, o)? {
            progress(&r);
            rows.push(r);
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (rate, mb, lost) = parse_ddsperf_sub(t).unwrap();
        assert_eq!((rate, mb, lost), (200_000.0, 51.2, 0));
    }
}
