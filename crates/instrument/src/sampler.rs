//! The per-CPU counters that explain a polling thread's gaps: a [`Sampler`]
//! thread reads the steal of `/proc/stat`, `/proc/interrupts`,
//! `/proc/softirqs` and each ksoftirqd's schedstat every [`SAMPLE_PERIOD`]
//! ([`ProcReader`], under `/` on the host or a fake tree in tests).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the sampler reads /proc (it shares the cores it watches: a
/// read costs tens of µs, so not more often).
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(10);

/// Per-CPU counters at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuSample {
    /// When the counters were read, CLOCK_MONOTONIC ns.
    pub t_ns: u64,
    /// Steal time per CPU (USER_HZ ticks, `/proc/stat`).
    pub steal: Vec<u64>,
    /// Interrupts per CPU, the local timer left out (`/proc/interrupts`).
    pub irqs: Vec<u64>,
    /// Softirqs per CPU, the periodic TIMER, HRTIMER, SCHED and RCU left out (`/proc/softirqs`).
    pub softirqs: Vec<u64>,
    /// Per CPU, ns its ksoftirqd thread has run plus waited to run
    /// (`/proc/<pid>/schedstat`): grows while softirq work was deferred to it.
    pub ksoftirqd_ns: Vec<u64>,
}

/// Steal ticks per CPU from `/proc/stat` text (`cpuN user nice system idle iowait irq softirq steal ...`).
pub fn parse_steal(stat: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for l in stat.lines() {
        let mut f = l.split_whitespace();
        let Some(name) = f.next() else { continue };
        let Some(n) = name.strip_prefix("cpu").and_then(|n| n.parse::<usize>().ok()) else { continue };
        let steal = f.nth(7).and_then(|v| v.parse().ok()).unwrap_or(0);
        if out.len() <= n {
            out.resize(n + 1, 0);
        }
        out[n] = steal;
    }
    out
}

/// Per-CPU column sums of `/proc/interrupts` or `/proc/softirqs` text, rows named in `skip` left out.
pub fn parse_per_cpu_table(text: &str, skip: &[&str]) -> Vec<u64> {
    let mut lines = text.lines();
    let ncpu = lines.next().map(|h| h.split_whitespace().filter(|c| c.starts_with("CPU")).count()).unwrap_or(0);
    let mut sums = vec![0u64; ncpu];
    for l in lines {
        let Some((name, rest)) = l.split_once(':') else { continue };
        if skip.contains(&name.trim()) {
            continue;
        }
        for (i, v) in rest.split_whitespace().take(ncpu).enumerate() {
            match v.parse::<u64>() {
                Ok(v) => sums[i] += v,
                Err(_) => break,
            }
        }
    }
    sums
}

/// Run time plus run-queue wait (ns) from `/proc/<pid>/schedstat` text ("run wait slices").
pub fn parse_schedstat(text: &str) -> u64 {
    detpath::sys::thread::parse_schedstat(text).map_or(0, |(run, wait)| run + wait)
}

/// The schedstat file of `ksoftirqd/N` for each CPU N under `root`.
fn find_ksoftirqd(root: &Path) -> Vec<Option<PathBuf>> {
    let mut out: Vec<Option<PathBuf>> = Vec::new();
    let Ok(dir) = std::fs::read_dir(root.join("proc")) else { return out };
    for e in dir.flatten() {
        let pid = e.file_name();
        if !pid.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if let Some(cpu) = comm.trim().strip_prefix("ksoftirqd/").and_then(|n| n.parse::<usize>().ok()) {
            if out.len() <= cpu {
                out.resize(cpu + 1, None);
            }
            out[cpu] = Some(e.path().join("schedstat"));
        }
    }
    out
}

/// Reads the counters under a root (`/` on the host, a fake tree in tests).
#[derive(Debug, Clone)]
pub struct ProcReader {
    root: PathBuf,
    /// `proc/<pid>/schedstat` of each CPU's ksoftirqd, found once.
    ksoftirqd: Vec<Option<PathBuf>>,
    /// Skip `/proc/interrupts` and `/proc/softirqs` (see [`ProcReader::traced`]).
    steal_only: bool,
}

impl ProcReader {
    /// Reads `proc/...` under `root` (a fake tree in tests); each CPU's
    /// ksoftirqd is looked up there once, now.
    pub fn new(root: impl Into<PathBuf>) -> ProcReader {
        let root = root.into();
        let ksoftirqd = find_ksoftirqd(&root);
        ProcReader { root, ksoftirqd, steal_only: false }
    }

    /// For a run the kernel tracer watches: reads only `/proc/stat` (steal)
    /// and the ksoftirqd counters. The tracer records every interrupt and
    /// softirq on the polling cores itself, and the two tables cost about
    /// 90 µs to generate every sample on this VM: on 2 vCPUs, with no
    /// housekeeping core, the sampler was itself the most frequent cause of
    /// slow rounds in the traced D runs (1,026-6,595 of them per 1M).
    pub fn traced(self) -> ProcReader {
        ProcReader { steal_only: true, ..self }
    }

    /// Reads the host's own /proc.
    pub fn host() -> ProcReader {
        ProcReader::new("/")
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap_or_default()
    }

    /// The counters now, stamped `t_ns`.
    pub fn sample(&self, t_ns: u64) -> CpuSample {
        CpuSample {
            t_ns,
            steal: parse_steal(&self.read("proc/stat")),
            irqs: if self.steal_only { Vec::new() } else { parse_per_cpu_table(&self.read("proc/interrupts"), &["LOC"]) },
            softirqs: if self.steal_only { Vec::new() } else { parse_per_cpu_table(&self.read("proc/softirqs"), &["TIMER", "HRTIMER", "SCHED", "RCU"]) },
            ksoftirqd_ns: self.ksoftirqd.iter().map(|p| p.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).map_or(0, |t| parse_schedstat(&t))).collect(),
        }
    }

    /// Total steal ticks of `cpus` now (for the tuning audit's VM note).
    pub fn steal_of(&self, cpus: &[usize]) -> u64 {
        let s = parse_steal(&self.read("proc/stat"));
        cpus.iter().filter_map(|&c| s.get(c)).sum()
    }
}

/// The noise sampler's name in a run's `cpu.threads`.
pub const SAMPLER_THREAD: &str = "noise-sampler";

/// A thread sampling [`ProcReader`] every [`SAMPLE_PERIOD`] until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<CpuSample>>>,
    /// Returns the thread's own CPU time, as it measured it when it stopped.
    thread: Option<std::thread::JoinHandle<detpath::sys::cputime::ThreadCpu>>,
}

impl Sampler {
    /// Starts the sampling thread: a sample at once, then every `period`,
    /// the thread metering its own CPU time (as [`SAMPLER_THREAD`]).
    pub fn start(reader: ProcReader, period: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (s, v) = (stop.clone(), samples.clone());
        let thread = std::thread::Builder::new()
            .name("detpath-noise-sampler".into())
            .spawn(move || {
                let meter = detpath::sys::cputime::ThreadMeter::start(SAMPLER_THREAD);
                loop {
                    let sample = reader.sample(detpath::monotonic_ns());
                    v.lock().unwrap_or_else(|p| p.into_inner()).push(sample);
                    if s.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(period);
                }
                meter.stop()
            })
            .ok();
        Sampler { stop, samples, thread }
    }

    /// Stops the thread (after one last sample) and returns the samples in time order.
    pub fn finish(self) -> Vec<CpuSample> {
        self.finish_with_cpu().0
    }

    /// As [`Sampler::finish`], with the sampler thread's own CPU time (named
    /// [`SAMPLER_THREAD`]; `None` if the thread could not start).
    pub fn finish_with_cpu(mut self) -> (Vec<CpuSample>, Option<detpath::sys::cputime::ThreadCpu>) {
        self.stop.store(true, Ordering::Relaxed);
        let cpu = self.thread.take().and_then(|t| t.join().ok());
        (std::mem::take(&mut *self.samples.lock().unwrap_or_else(|p| p.into_inner())), cpu)
    }
}

/// A fake ksoftirqd for tests: `proc/<pid>/comm` and its schedstat (run, wait ns).
pub fn write_fake_ksoftirqd(root: &Path, cpu: usize, pid: u32, run_ns: u64, wait_ns: u64) -> std::io::Result<()> {
    let dir = root.join(format!("proc/{pid}"));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("comm"), format!("ksoftirqd/{cpu}\n"))?;
    std::fs::write(dir.join("schedstat"), format!("{run_ns} {wait_ns} 7\n"))
}

/// A fake /proc tree for tests: writes stat, interrupts and softirqs under `root`.
pub fn write_fake_proc(root: &Path, steal: &[u64], irqs: &[u64], softirqs: &[u64]) -> std::io::Result<()> {
    std::fs::create_dir_all(root.join("proc"))?;
    let mut stat = String::from("cpu  0 0 0 0 0 0 0 0 0 0\n");
    for (i, s) in steal.iter().enumerate() {
        stat += &format!("cpu{i} 1 0 1 100 0 0 0 {s} 0 0\n");
    }
    std::fs::write(root.join("proc/stat"), stat)?;
    let header = (0..irqs.len()).map(|i| format!("CPU{i}")).collect::<Vec<_>>().join(" ");
    let row = |name: &str, v: &[u64]| format!("{name}: {} desc\n", v.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
    std::fs::write(root.join("proc/interrupts"), format!("   {header}\n{}{}", row(" 24", irqs), row("LOC", &vec![999_999; irqs.len()])))?;
    std::fs::write(root.join("proc/softirqs"), format!("   {header}\n{}{}", row("NET_RX", softirqs), row("TIMER", &vec![777_777; softirqs.len()])))?;
    Ok(())
}
