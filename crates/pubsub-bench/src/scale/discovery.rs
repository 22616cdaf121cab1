//! The discovery test, parent side: N participants split over the testbed's
//! two namespaces, one worker process per namespace (detpath's
//! [`super::worker`], re-run from this program's binary; CycloneDDS's
//! `cyclone_worker.py` on its Python binding), their protocol lines read,
//! their resident memory read from /proc once everything matched.

use super::worker::{self, Event, WorkerSpec};
use super::{DiscoveryRow, ScaleError};
use detpath::sys::cleanup::{self, TiedChild};
use detpath::testbed::{Side, Testbed};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The CycloneDDS worker, run by `python3 -c`.
const CYCLONE_WORKER: &str = include_str!("cyclone_worker.py");

/// What one worker said, in order, and its process.
struct Worker {
    child: TiedChild,
    events: mpsc::Receiver<Event>,
}

impl Worker {
    /// Starts reading the child's stdout lines as events on a thread.
    fn start(mut child: TiedChild) -> Worker {
        let (tx, events) = mpsc::channel();
        if let Some(out) = child.child().stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if let Ok(e) = serde_json::from_str::<Event>(&line) {
                        if tx.send(e).is_err() {
                            break;
                        }
                    }
                }
            });
        }
        Worker { child, events }
    }
}

/// What a worker reported by the end of its discovery.
#[derive(Default, Debug)]
struct Seen {
    baseline_kb: u64,
    created_ns: Option<u64>,
    matched_ns: Vec<u64>,
    all_matched_ns: Option<u64>,
    failure: Option<String>,
}

/// Collects a worker's events until it has matched everything, timed out, failed or died.
fn collect(w: &Worker, limit: Duration) -> Seen {
    let mut s = Seen::default();
    let end = std::time::Instant::now() + limit;
    loop {
        let left = end.saturating_duration_since(std::time::Instant::now());
        match w.events.recv_timeout(left) {
            Ok(Event::Baseline { rss_kb }) => s.baseline_kb = rss_kb,
            Ok(Event::Created { t_ns, .. }) => s.created_ns = Some(t_ns),
            Ok(Event::Matched { t_ns, .. }) => s.matched_ns.push(t_ns),
            Ok(Event::AllMatched { t_ns, .. }) => {
                s.all_matched_ns = Some(t_ns);
                return s;
            }
            Ok(Event::Timeout { matched }) => {
                s.failure = Some(format!("{matched} participants matched before the timeout"));
                return s;
            }
            Ok(Event::Failed { error }) => {
                s.failure = Some(error);
                return s;
            }
            Err(_) => {
                s.failure.get_or_insert_with(|| "the worker ended or went silent".into());
                return s;
            }
        }
    }
}

/// How the two sides split `n` participants: (namespace a, namespace b).
pub fn split(n: u32) -> (u32, u32) {
    (n.div_ceil(2), n / 2)
}

/// Seconds a discovery of `n` participants may take before it counts as failed.
pub fn timeout_s(n: u32) -> f64 {
    30.0 + f64::from(n)
}

/// Ends a worker (closing its stdin ends it; the process group is killed
/// after a grace period) and returns its resident memory just before, KiB.
fn finish(mut w: Worker) -> u64 {
    let rss = worker::rss_kb_of(&w.child.id().to_string());
    drop(w.child.child().stdin.take());
    let _ = w.child.stop(Duration::from_secs(5));
    rss
}

/// The row of one system and size from its two workers.
fn row(system: &str, n: u32, workers: Vec<Worker>, note: &str) -> DiscoveryRow {
    let limit = Duration::from_secs_f64(timeout_s(n) + 30.0);
    let seen: Vec<Seen> = workers.iter().map(|w| collect(w, limit)).collect();
    let rss: Vec<u64> = workers.into_iter().map(finish).collect();
    let failure = seen.iter().find_map(|s| s.failure.clone());
    let start = seen.iter().filter_map(|s| s.created_ns).max();
    let done = seen.iter().map(|s| s.all_matched_ns).collect::<Option<Vec<u64>>>().and_then(|v| v.into_iter().max());
    let mut each: Vec<f64> = seen.iter().flat_map(|s| s.matched_ns.iter()).filter_map(|t| Some(t.saturating_sub(start?) as f64 / 1e6)).collect();
    each.sort_by(|a, b| a.total_cmp(b));
    let total: u64 = rss.iter().sum();
    let baseline: u64 = seen.iter().map(|s| s.baseline_kb).sum();
    DiscoveryRow {
        system: system.into(),
        participants: n,
        processes: rss.len() as u32,
        matched: each.len() as u32,
        discovery_ms: match (failure.is_none(), start, done) {
            (true, Some(a), Some(b)) => Some(b.saturating_sub(a) as f64 / 1e6),
            _ => None,
        },
        median_participant_ms: each.get(each.len() / 2).copied(),
        rss_total_kb: total,
        rss_baseline_kb: baseline,
        rss_per_participant_kb: (total.saturating_sub(baseline)) as f64 / f64::from(n.max(1)),
        note: failure.map_or_else(|| note.to_string(), |f| format!("FAILED: {f}")),
    }
}

/// detpath's discovery of `n` participants on `datapath`, the workers re-run from `exe`.
pub fn detpath(tb: &Testbed, exe: &Path, datapath: &str, n: u32) -> Result<DiscoveryRow, ScaleError> {
    let (na, nb) = split(n);
    let mut workers = Vec::new();
    for (side, count) in [(tb.a(), na), (tb.b(), nb)] {
        if count == 0 {
            continue;
        }
        let spec = WorkerSpec {
            datapath: datapath.into(),
            netns: side.netns.clone(),
            iface: side.iface.clone(),
            addr: side.addr,
            peers: vec![tb.a().addr, tb.b().addr],
            count,
            max_index: na.max(nb).saturating_sub(1),
            // Every other participant's writer and reader (detpath matches no endpoint of its own participant).
            expected: n - 1,
            timeout_s: timeout_s(n),
        };
        let json = serde_json::to_string(&spec).map_err(|e| ScaleError::Worker(e.to_string()))?;
        let mut cmd = Command::new(exe);
        cmd.args(["pubsub", "scale", "--worker", &json]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let child = cleanup::spawn_tied(&mut cmd, "detpath scale worker").map_err(|e| ScaleError::Worker(format!("{}: {e}", exe.display())))?;
        workers.push(Worker::start(child));
    }
    let note = format!("{} threads in {} processes, one endpoint each", n, workers.len());
    Ok(row(&format!("detpath {datapath}"), n, workers, &note))
}

/// The CycloneDDS configuration of one side: its interface, unicast
/// discovery to both sides' addresses (no multicast, as detpath's).
pub fn cyclone_config(side: &Side, peers: &[&Side], max_index: u32) -> String {
    let peers: String = peers.iter().map(|p| format!(r#"<Peer Address="{}"/>"#, p.addr)).collect();
    format!(
        r#"<CycloneDDS><Domain Id="any"><General><Interfaces><NetworkInterface name="{}"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>{max_index}</MaxAutoParticipantIndex><Peers>{peers}</Peers></Discovery></Domain></CycloneDDS>"#,
        side.iface
    )
}

/// Spawns `argv` inside `side`'s namespace with the CycloneDDS configuration `cfg`, stdin and stdout piped.
pub fn spawn_cyclone(side: &Side, cfg: &Path, argv: &[&str], what: &str, stdin: bool) -> Result<TiedChild, ScaleError> {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &side.netns]).args(argv);
    cmd.env("CYCLONEDDS_URI", format!("file://{}", cfg.display()));
    cmd.stdin(if stdin { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::piped()).stderr(Stdio::null());
    cleanup::spawn_tied(&mut cmd, what).map_err(|e| ScaleError::Cyclone(format!("cannot run {}: {e}", argv[0])))
}

/// Writes one side's CycloneDDS configuration into `dir`.
pub fn write_cyclone_config(dir: &Path, tb: &Testbed, side: &Side, max_index: u32) -> Result<std::path::PathBuf, ScaleError> {
    let path = dir.join(format!("cyclonedds-{}.xml", side.netns));
    detpath::sys::fsutil::write_atomic(&path, cyclone_config(side, &[tb.a(), tb.b()], max_index).as_bytes())
        .map_err(|e| ScaleError::Cyclone(format!("{}: {e}", path.display())))?;
    Ok(path)
}

/// CycloneDDS's discovery of `n` participants: one Python process per
/// namespace, its participants created by the `cyclonedds` binding.
pub fn cyclone(tb: &Testbed, dir: &Path, n: u32) -> Result<DiscoveryRow, ScaleError> {
    let (na, nb) = split(n);
    let mut workers = Vec::new();
    for (side, count) in [(tb.a(), na), (tb.b(), nb)] {
        if count == 0 {
            continue;
        }
        let cfg = write_cyclone_config(dir, tb, side, 9)?;
        // CycloneDDS also matches the writer and reader of the same participant: n, not n - 1.
        let (count, expected, timeout) = (count.to_string(), n.to_string(), timeout_s(n).to_string());
        let child = spawn_cyclone(side, &cfg, &["python3", "-c", CYCLONE_WORKER, &count, &expected, &timeout], "cyclonedds scale worker", true)?;
        workers.push(Worker::start(child));
    }
    let note = format!("{} DomainParticipants in {} Python processes", n, workers.len());
    Ok(row(&super::cyclone_system(), n, workers, &note))
}
