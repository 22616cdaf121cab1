//! What one benchmark run was ([`RunConfig`]), where it ran
//! ([`Environment`]) and what it measured ([`RunResult`]), as summary.json
//! holds them ([`SummaryFile`]). The directory that saves them is
//! [`crate::results::ResultDir`]; the tables that print them,
//! [`crate::table`]: both import this module, which imports neither.

use crate::records::{self, LossCounts, Record};
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::CStr;

/// The `format` tag of summary.json.
pub const FORMAT: &str = "detpath-bench/1";

/// How a run was configured (what the user asked for and what was obtained).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RunConfig {
    /// Datapath name as on the command line (`udp`, `afxdp`, `xdppoll`,
    /// `dpdk`, or `sockperf` for the sockperf reference run).
    pub datapath: String,
    /// The mode the datapath obtained, e.g. "native, zero-copy, busy-poll"
    /// or "skb, copy" (not the one requested).
    pub mode: String,
    /// Probe (UDP payload) size in bytes.
    pub size: usize,
    /// Ping period in ns (10^9 * 8 * size / period = offered bit rate).
    pub period_ns: u64,
    /// Rounds requested.
    pub rounds: u64,
    /// Per-round timeout after which a pong counts as lost, ns.
    pub timeout_ns: u64,
    /// CPU stress (stress-ng) on the datapath cores, percent; 0 = none.
    pub stress_percent: u8,
    /// Whether the low-latency tuning was applied for this run.
    pub tuned: bool,
    /// Tuning state as the tune crate describes it (e.g. "default",
    /// "tuned: 7/7 settings applied", "not available yet").
    pub tuning: String,
    /// Core the client polling thread was pinned to, if pinned.
    pub cpu_client: Option<u32>,
    /// Core the server polling thread was pinned to, if pinned.
    pub cpu_server: Option<u32>,
    /// The server's address when client and server run on two hosts.
    pub peer: Option<String>,
    /// Anything else worth keeping (driver, interface, queue, NIC, ...).
    #[serde(default)]
    pub extra: BTreeMap<String, String>,
}

/// Paper 000's label of a configuration: `D`, `D&S`, `T`, `T&S`.
pub fn configuration_label(tuned: bool, stressed: bool) -> &'static str {
    match (tuned, stressed) {
        (false, false) => "D",
        (false, true) => "D&S",
        (true, false) => "T",
        (true, true) => "T&S",
    }
}

impl RunConfig {
    /// Paper 000's configuration label: `D` (default), `D&S` (default and
    /// stress), `T` (tuned), `T&S` (tuned and stress).
    pub fn configuration(&self) -> &'static str {
        configuration_label(self.tuned, self.stress_percent > 0)
    }

    /// The configuration as a file-name part.
    pub fn configuration_slug(&self) -> &'static str {
        match (self.tuned, self.stress_percent > 0) {
            (false, false) => "default",
            (false, true) => "default-stress",
            (true, false) => "tuned",
            (true, true) => "tuned-stress",
        }
    }

    /// Offered load in Mbit/s (UDP payload bits per period).
    pub fn rate_mbps(&self) -> f64 {
        if self.period_ns == 0 {
            return 0.0;
        }
        self.size as f64 * 8.0 * 1e3 / self.period_ns as f64
    }
}

/// The host a result came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Environment {
    /// `uname -srvm`.
    pub kernel: String,
    /// `model name` of /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: u32,
    /// The host's name (`uname -n`).
    pub hostname: String,
    /// UTC, ISO 8601 (`2025-01-31T14:25:01Z`).
    pub date: String,
    /// The detpath version that measured.
    pub detpath_version: String,
    /// /proc/cmdline (shows isolcpus, nohz_full, ... of a tuned host).
    #[serde(default)]
    pub kernel_cmdline: String,
    /// A virtual machine (the `hypervisor` CPU flag): its figures carry the host's preemptions.
    #[serde(default)]
    pub vm: bool,
    /// The load average (1, 5, 15 min) when the run started: a loaded host's tail is the load's.
    #[serde(default)]
    pub load: [f64; 3],
    /// The command line that made the run (`detpath bench --datapath udp ...`), as the process got it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
}

impl Environment {
    /// Reads the environment of this host now. Never fails: a value that
    /// cannot be read is "unknown".
    pub fn capture() -> Environment {
        Environment {
            kernel: uname().unwrap_or_else(|| "unknown".into()),
            cpu_model: cpu_model().unwrap_or_else(|| "unknown".into()),
            cpus: std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(0),
            hostname: hostname().unwrap_or_else(|| "unknown".into()),
            date: utc_iso8601(now_unix()),
            detpath_version: env!("CARGO_PKG_VERSION").to_string(),
            kernel_cmdline: std::fs::read_to_string("/proc/cmdline").map(|s| s.trim().to_string()).unwrap_or_default(),
            vm: std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|t| t.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"))),
            load: load_average().unwrap_or_default(),
            command: std::env::args().collect(),
        }
    }
}

/// /proc/loadavg's three averages.
fn load_average() -> Option<[f64; 3]> {
    let t = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut v = t.split_whitespace().map(|x| x.parse::<f64>().ok());
    Some([v.next()??, v.next()??, v.next()??])
}

fn uname() -> Option<String> {
    // SAFETY: utsname is plain old data; uname fills it and NUL-terminates each field.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let f = |a: &[libc::c_char]| {
        // SAFETY: the kernel NUL-terminates every utsname field within its array.
        unsafe { CStr::from_ptr(a.as_ptr()) }.to_string_lossy().into_owned()
    };
    Some(format!("{} {} {} {}", f(&u.sysname), f(&u.release), f(&u.version), f(&u.machine)))
}

fn hostname() -> Option<String> {
    let mut u: libc::utsname = unsafe { std::mem::zeroed() }; // SAFETY: POD.
                                                              // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    // SAFETY: NUL-terminated by the kernel.
    Some(unsafe { CStr::from_ptr(u.nodename.as_ptr()) }.to_string_lossy().into_owned())
}

fn cpu_model() -> Option<String> {
    let s = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    s.lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model") || l.starts_with("Hardware"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// Seconds since the Unix epoch (for result directory names and dates).
pub fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// (year, month, day, hour, minute, second) in UTC of a Unix time.
fn civil(t: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (t / 86_400) as i64;
    let secs = t % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, (secs / 3_600) as u32, (secs / 60 % 60) as u32, (secs % 60) as u32)
}

/// `2025-01-31T14:25:01Z`.
pub fn utc_iso8601(t: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// `20250131T142501Z` (the result directory name).
pub fn utc_compact(t: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// Everything one run produced. Latency is one-way = RTT / 2 (paper 000).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RunResult {
    /// File stem in the result directory (`afxdp-default`); set by
    /// [`ResultDir::save_run`](crate::ResultDir::save_run).
    #[serde(default)]
    pub name: String,
    /// What was measured: datapath, size, rate, rounds, cores, tuning.
    pub config: RunConfig,
    /// `D`, `D&S`, `T` or `T&S` (copy of [`RunConfig::configuration`]).
    pub configuration: String,
    /// The host that measured.
    pub environment: Environment,
    /// When the run started (UTC ISO 8601).
    pub started: String,
    /// Wall-clock length of the measuring, seconds.
    pub duration_s: f64,
    /// One-way latency (RTT / 2), ns.
    pub latency: Summary,
    /// Round-trip time (client receive - client send), ns.
    pub rtt: Summary,
    /// Server send - server receive, ns.
    pub server_time: Summary,
    /// How late each ping left after its absolute deadline, ns.
    pub send_lateness: Summary,
    /// What became of every round sent (ok, reordered, corrupted, lost) and the extra arrivals.
    pub loss: LossCounts,
    /// False if the run stopped before all rounds (see `interrupted`).
    pub complete: bool,
    /// Why the run stopped early (Ctrl-C, server gone, error).
    pub interrupted: Option<String>,
    /// Raw records file name inside the result directory, if any.
    pub records_file: Option<String>,
    /// Free-form remarks (fallbacks taken, warnings), shown under the table.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Why the slow rounds were slow (runs measured in the testbed).
    #[serde(default)]
    pub tail: Option<crate::tail::TailReport>,
    /// What the run cost in CPU: each worker thread's user and system time
    /// (`client`, `server`, `noise-sampler`), the busy share of each core
    /// they ran on, and rounds per CPU-second (rounds sent, warm-up
    /// included, over the threads' CPU time together).
    #[serde(default)]
    pub cpu: Option<detpath::sys::cputime::CpuReport>,
}

impl RunResult {
    /// Computes every statistic from the run's records. `loss` is the
    /// runner's own counts (it knows late and unexpected
    /// pongs); `None` derives the counts from the records' statuses.
    /// `complete` is set to true: set it (and `interrupted`) after.
    pub fn from_records(config: RunConfig, environment: Environment, records: &[Record], loss: Option<LossCounts>) -> RunResult {
        let mut lat = Vec::with_capacity(records.len());
        let mut rtt = Vec::with_capacity(records.len());
        let mut srv = Vec::with_capacity(records.len());
        let mut late = Vec::with_capacity(records.len());
        for r in records {
            if let Some(x) = r.rtt_ns() {
                rtt.push(x);
                lat.push(x / 2);
            }
            if let Some(x) = r.server_time_ns() {
                srv.push(x);
            }
            if r.status != records::Status::Duplicate {
                late.push(r.send_lateness_ns);
            }
        }
        let first = records.iter().map(|r| r.client_send_ns).filter(|&t| t != 0).min();
        let last = records.iter().map(|r| r.client_send_ns.max(r.client_recv_ns)).max();
        let duration_s = match (first, last) {
            (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
            _ => 0.0,
        };
        RunResult {
            name: String::new(),
            configuration: config.configuration().to_string(),
            started: environment.date.clone(),
            config,
            environment,
            duration_s,
            latency: Summary::from_samples(&mut lat),
            rtt: Summary::from_samples(&mut rtt),
            server_time: Summary::from_samples(&mut srv),
            send_lateness: Summary::from_samples(&mut late),
            loss: loss.unwrap_or_else(|| records::LossCounts::from_records(records)),
            complete: true,
            interrupted: None,
            records_file: None,
            notes: Vec::new(),
            tail: None,
            cpu: None,
        }
    }

    /// The threads' CPU seconds per 1,000 rounds (the inverse of
    /// `cpu.work_per_cpu_s`; `None` without a CPU record).
    pub fn cpu_s_per_1k_rounds(&self) -> Option<f64> {
        self.cpu.as_ref()?.work_per_cpu_s.filter(|w| *w > 0.0).map(|w| 1000.0 / w)
    }

    /// One thread's CPU time as a share of the run's wall time (1.0 = a whole core).
    pub fn core_share(&self, thread: &str) -> Option<f64> {
        let t = self.cpu.as_ref()?.threads.iter().find(|t| t.name == thread)?;
        (self.duration_s > 0.0).then(|| t.total_s() / self.duration_s)
    }

    /// `afxdp D&S`-style label for legends.
    pub fn label(&self) -> String {
        format!("{} {}", self.config.datapath, self.configuration)
    }
}

/// summary.json as a whole.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SummaryFile {
    /// The format tag ([`FORMAT`]): a reader refuses another.
    pub format: String,
    /// Every run saved in the directory, in the order they ran.
    pub runs: Vec<RunResult>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_iso8601(1_738_333_501), "2025-01-31T14:25:01Z");
        assert_eq!(utc_compact(1_738_333_501), "20250131T142501Z");
    }

    #[test]
    fn environment_is_captured() {
        let e = Environment::capture();
        assert!(e.kernel.starts_with("Linux "), "{}", e.kernel);
        assert!(!e.hostname.is_empty());
        assert!(e.cpus >= 1);
        assert!(e.date.ends_with('Z'));
    }

    #[test]
    fn configuration_labels() {
        let mut c = RunConfig::default();
        assert_eq!(c.configuration(), "D");
        c.stress_percent = 80;
        assert_eq!(c.configuration(), "D&S");
        c.tuned = true;
        assert_eq!((c.configuration(), c.configuration_slug()), ("T&S", "tuned-stress"));
        c.size = 1024;
        c.period_ns = 100_000;
        assert!((c.rate_mbps() - 81.92).abs() < 1e-9);
    }
}
