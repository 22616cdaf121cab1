//! The reference run: sockperf (Debian's package, what people use for this
//! today) ping-pong over the kernel UDP path of the same testbed, with the
//! same size and rate, so its figures sit in the same table.
//!
//! `sockperf server` runs in namespace b pinned to the server core,
//! `sockperf ping-pong --full-log` in namespace a pinned to the client core.
//! The full log has one row per measured message after a header block:
//!
//! ```text
//! packet, txTime(sec), rxTime(sec), latency(usec)
//! 0, 2.400896615, 2.400972718, 38.051
//! ```
//!
//! `latency` is sockperf's one-way figure, (rxTime − txTime) / 2, the same
//! definition as ours; an rxTime of 0 is a message never answered. sockperf
//! leaves out a warm-up and a cool-down of its own, has no server timestamps
//! and does not report send lateness: those are absent from its result, not
//! zero. It receives with a blocking `recvfrom` by default (it sleeps), where
//! detpath's `udp` datapath busy-polls.
//!
//! Both sockperf processes are tied to detpath (`cleanup::spawn_tied`: their
//! own process group, killed by cleanup; `PR_SET_PDEATHSIG`), and the full
//! log goes to a private temporary directory (`tempfile`, mode 0700), never
//! a predictable name under /tmp.
//!
//! What the run cost in CPU is each sockperf process's user and system time,
//! read when it has exited ([`detpath_instrument::child_cpu`]): `sockperf-client` (the
//! ping-pong side, from its start to its end) and `sockperf-server` (from
//! its start until it is stopped after the client), each on the core it was
//! pinned to, with messages in the full log per CPU-second.

use detpath_instrument::records::{Record, Status};
use detpath_instrument::results::{Environment, RunConfig, RunResult};
use detpath_instrument::stats::Summary;
use detpath::sys::cleanup::{self, TiedChild};
use detpath::sys::cputime::{CoreTicks, CpuReport};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct SockperfConfig {
    /// The sockperf binary (default "sockperf").
    pub binary: PathBuf,
    /// Message (UDP payload) size, bytes.
    pub size: usize,
    /// Send period, ns (sockperf's --mps = 1e9 / period).
    pub period_ns: u64,
    /// Test duration in whole seconds (sockperf's -t), at least 1.
    pub seconds: u64,
    /// Core the ping-pong client is pinned to (taskset), in namespace a.
    pub cpu_client: u32,
    /// Core the server is pinned to (taskset), in namespace b.
    pub cpu_server: u32,
    /// UDP port the server listens on.
    pub port: u16,
}

/// Why the sockperf reference run gave no row.
#[derive(Debug, thiserror::Error)]
pub enum SockperfError {
    /// The binary could not be run (the path given).
    #[error("sockperf is not installed ({0} not found); install it with `apt-get install sockperf` (or `make deps`)")]
    Missing(String),
    /// A sockperf process failed.
    #[error("sockperf {what}: {why}")]
    Failed {
        /// Which part: `server`, `ping-pong`, `full log`.
        what: &'static str,
        /// What went wrong (exit status and stderr, or the system's error).
        why: String,
    },
    /// The full log does not parse.
    #[error("sockperf full log {path}, line {line}: {why}")]
    BadLog {
        /// The log file.
        path: String,
        /// The line, 1-based.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
}

/// One row of sockperf's full log.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// sockperf's message number.
    pub packet: u64,
    /// When the client sent it, seconds on sockperf's clock.
    pub tx_s: f64,
    /// 0 when the message was not answered.
    pub rx_s: f64,
    /// sockperf's one-way latency, (rx − tx) / 2, µs (0 when not answered).
    pub latency_us: f64,
}

/// A finished sockperf run: its rows and its own summary lines.
#[derive(Debug, Clone)]
pub struct SockperfOutcome {
    /// Every measured message, in the log's order.
    pub rows: Vec<Row>,
    /// sockperf's printed statistics (percentiles, drops), for cross-checking.
    pub summary: Vec<String>,
    /// What the two sockperf processes cost (`sockperf-client`,
    /// `sockperf-server`), with the rows as the work; `None` for a log
    /// parsed on its own.
    pub cpu: Option<CpuReport>,
}

const HEADER: &str = "packet, txTime(sec), rxTime(sec), latency(usec)";

/// Parses a full log: everything before the header line is sockperf's
/// summary; every line after it must be a row.
pub(crate) fn parse_full_log(text: &str, path: &str) -> Result<SockperfOutcome, SockperfError> {
    let bad = |line: usize, why: String| SockperfError::BadLog { path: path.to_string(), line, why };
    let mut lines = text.lines().enumerate();
    let mut summary = Vec::new();
    loop {
        match lines.next() {
            Some((_, l)) if l.trim() == HEADER => break,
            Some((_, l)) => {
                if l.starts_with("sockperf:") {
                    summary.push(strip_ansi(l));
                }
            }
            None => return Err(bad(text.lines().count(), format!("no `{HEADER}` line"))),
        }
    }
    let mut rows = Vec::new();
    for (i, l) in lines {
        if l.trim().is_empty() {
            continue;
        }
        if l.starts_with("---") {
            break; // sockperf closes the log with a line of dashes
        }
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != 4 {
            return Err(bad(i + 1, format!("expected 4 fields, found {}: `{l}`", f.len())));
        }
        let num = |k: usize, what: &str| -> Result<f64, SockperfError> {
            f[k].parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).ok_or_else(|| bad(i + 1, format!("{what} `{}` is not a non-negative number", f[k])))
        };
        let packet = f[0].parse::<u64>().map_err(|_| bad(i + 1, format!("packet `{}` is not a number", f[0])))?;
        rows.push(Row { packet, tx_s: num(1, "txTime")?, rx_s: num(2, "rxTime")?, latency_us: num(3, "latency")? });
    }
    Ok(SockperfOutcome { rows, summary, cpu: None })
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut esc = false;
    for c in s.chars() {
        match (esc, c) {
            (false, '\u{1b}') => esc = true,
            (true, c) if c.is_ascii_alphabetic() => esc = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

impl SockperfOutcome {
    /// The rows as raw records: client times from sockperf's clock, no server
    /// times, no send lateness (sockperf does not report it).
    pub fn records(&self) -> Vec<Record> {
        self.rows
            .iter()
            .map(|r| {
                let answered = r.rx_s > 0.0;
                Record {
                    seq: r.packet,
                    client_send_ns: (r.tx_s * 1e9).round() as u64,
                    client_recv_ns: if answered { (r.rx_s * 1e9).round() as u64 } else { 0 },
                    status: if answered { Status::Ok } else { Status::Lost },
                    ..Record::default()
                }
            })
            .collect()
    }

    /// A result for the table: `config.datapath` should be "sockperf".
    pub fn run_result(&self, config: RunConfig, env: Environment) -> (RunResult, Vec<Record>) {
        let records = self.records();
        let mut r = RunResult::from_records(config, env, &records, None);
        r.send_lateness = Summary::from_samples(&mut []);
        r.cpu = self.cpu.clone();
        r.notes.push("sockperf reports no server timestamps and no send lateness; its own summary follows".into());
        r.notes.extend(self.summary.iter().filter(|l| l.contains("percentile") || l.contains("observation") || l.contains("dropped")).cloned());
        (r, records)
    }
}

fn in_netns(ns: &str, cpu: u32, binary: &Path) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "taskset", "-c", &cpu.to_string()]).arg(binary);
    c
}

/// Runs sockperf server (namespace b) and ping-pong (namespace a) in the testbed.
pub fn run(tb: &detpath::testbed::Testbed, cfg: &SockperfConfig) -> Result<SockperfOutcome, SockperfError> {
    let found = Command::new(&cfg.binary).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if found.is_err() {
        return Err(SockperfError::Missing(cfg.binary.display().to_string()));
    }
    let (a, b) = (tb.a(), tb.b());
    // Killed (its process group) and reaped when it drops.
    let mut server: TiedChild = cleanup::spawn_tied(
        in_netns(&b.netns, cfg.cpu_server, &cfg.binary)
            .args(["server", "-i", &b.addr.to_string(), "-p", &cfg.port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        "sockperf server",
    )
    .map_err(|e| SockperfError::Failed { what: "server", why: e.to_string() })?;
    // Listening when its UDP port shows up in the namespace.
    let t = Instant::now();
    loop {
        let ss = Command::new("ip").args(["netns", "exec", &b.netns, "ss", "-Hlun", "sport", "=", &format!(":{}", cfg.port)]).output();
        if ss.is_ok_and(|o| !o.stdout.is_empty()) {
            break;
        }
        if let Ok(Some(st)) = server.child().try_wait() {
            return Err(SockperfError::Failed { what: "server", why: format!("exited at once ({st})") });
        }
        if t.elapsed() > Duration::from_secs(5) {
            return Err(SockperfError::Failed { what: "server", why: "not listening after 5 s".into() });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // A private directory (random name, 0700) for the log; removed when `tmp` drops.
    let tmp = tempfile::Builder::new()
        .prefix("detpath-sockperf-")
        .tempdir()
        .map_err(|e| SockperfError::Failed { what: "full log", why: format!("temporary directory: {e}") })?;
    let log = tmp.path().join("full-log.csv");
    let mps = (1e9 / cfg.period_ns.max(1) as f64).round().max(1.0) as u64;
    let ticks_before = CoreTicks::now();
    // Its summary goes to the full log too: stdout is not read. stderr is
    // read to its end (the client's exit) before the child is reaped, so
    // that its CPU time can be read in between.
    let mut client = cleanup::spawn_tied(
        in_netns(&a.netns, cfg.cpu_client, &cfg.binary)
            .args(["ping-pong", "-i", &b.addr.to_string(), "-p", &cfg.port.to_string(), "-m", &cfg.size.to_string()])
            .args(["--mps", &mps.to_string(), "-t", &cfg.seconds.max(1).to_string(), "--full-log"])
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
        "sockperf ping-pong",
    )
    .map_err(|e| SockperfError::Failed { what: "ping-pong", why: e.to_string() })?;
    let mut stderr = String::new();
    if let Some(mut e) = client.child().stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let client_cpu = detpath_instrument::child_cpu::exited_thread("sockperf-client", Some(cfg.cpu_client), client.id());
    let status = client.child().wait().map_err(|e| SockperfError::Failed { what: "ping-pong", why: e.to_string() })?;
    let ticks_after = CoreTicks::now();
    // Stopped, measured, then reaped (and its group killed) by drop.
    let _ = server.child().kill();
    let server_cpu = detpath_instrument::child_cpu::exited_thread("sockperf-server", Some(cfg.cpu_server), server.id());
    drop(server);
    if !status.success() {
        return Err(SockperfError::Failed { what: "ping-pong", why: format!("{status}: {}", stderr.trim()) });
    }
    let text = std::fs::read_to_string(&log).map_err(|e| SockperfError::Failed { what: "full log", why: format!("{}: {e}", log.display()) })?;
    let mut outcome = parse_full_log(&text, &log.display().to_string())?;
    let threads: Vec<_> = client_cpu.into_iter().chain(server_cpu).collect();
    if !threads.is_empty() {
        // Messages sent in sockperf's measured span per CPU-second (its own
        // warm-up is not in the log, so this slightly undercounts the work).
        let work = outcome.rows.len() as f64;
        outcome.cpu = Some(CpuReport::new(threads, &ticks_before, &ticks_after, &[cfg.cpu_client, cfg.cpu_server], work));
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "------------------------------\n\
sockperf: \u{1b}[2;35m====> avg-latency=31.243 (std-dev=9.858)\u{1b}[0m\n\
sockperf: # dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0\n\
sockperf: ---> percentile 99.000 =   43.019\n\
------------------------------\n\
packet, txTime(sec), rxTime(sec), latency(usec)\n\
0, 2.400896615, 2.400972718, 38.051\n\
1, 2.401096183, 0.000000000, 0.000\n\
2, 2.401296187, 2.401357902, 30.857\n\
------------------------------\n";

    #[test]
    fn full_log_rows_and_summary() {
        let o = parse_full_log(SAMPLE, "sample").unwrap();
        assert_eq!(o.rows.len(), 3);
        assert_eq!(o.rows[0], Row { packet: 0, tx_s: 2.400896615, rx_s: 2.400972718, latency_us: 38.051 });
        assert_eq!(o.summary.len(), 3);
        assert!(o.summary[0].contains("avg-latency=31.243") && !o.summary[0].contains('\u{1b}'));
        let r = o.records();
        assert_eq!(r[0].status, Status::Ok);
        // RTT / 2 from the times equals sockperf's latency column.
        assert_eq!(r[0].latency_ns(), Some(38_051));
        assert_eq!((r[1].status, r[1].client_recv_ns), (Status::Lost, 0));
    }

    #[test]
    fn malformed_logs_name_the_line() {
        let no_header = parse_full_log("sockperf: nothing\n", "x").unwrap_err().to_string();
        assert!(no_header.contains("no `packet, txTime"), "{no_header}");
        for (bad, needle) in [
            ("0, 1.0, 2.0\n", "line 2: expected 4 fields"),
            ("x, 1.0, 2.0, 3\n", "line 2: packet `x`"),
            ("0, 1.0, -2, 3\n", "line 2: rxTime `-2`"),
            ("0, 1.0, 2.0, NaN\n", "latency `NaN`"),
        ] {
            let e = parse_full_log(&format!("{HEADER}\n{bad}"), "x").unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }
}
