//! What a run cost in CPU: the user and system time of each thread that did
//! the work, how busy each core it used was, and the work done per
//! CPU-second. Busy polling buys a low tail with whole cores; the adaptive
//! wait, blocking, batching and the slot scheduler trade that back, and an
//! operator choosing between them needs µs of latency and % of a core side
//! by side (paper 003, Figure 19).
//!
//! A worker thread starts a [`ThreadMeter`] when its work begins and stops
//! it when the work ends (both from the thread itself: `getrusage
//! (RUSAGE_THREAD)`, whose sum the kernel keeps exact to the ns and splits
//! into user and system by its tick samples). Core utilisation comes from
//! two snapshots of `/proc/stat` ([`CoreTicks`]), so it includes everything
//! that ran there (softirqs on our behalf, and neighbours), and the steal
//! the hypervisor took. [`CpuReport`] is the `cpu` object every benchmark's
//! JSON carries: `threads` (`name`, `core`, `user_s`, `system_s`), `cores`
//! (`core`, `busy`, `steal`) and `work_per_cpu_s`.

use serde::{Deserialize, Serialize};

/// The user and system CPU time of the calling thread so far, in seconds.
pub(crate) fn own_times() -> (f64, f64) {
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// The core the calling thread runs on now (`None` if the kernel does not say).
pub(crate) fn current_core() -> Option<u32> {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as u32)
}

/// One thread's CPU time over its measured work, as the JSON reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadCpu {
    /// What the thread does (`client`, `server`, `publisher`, ...).
    pub name: String,
    /// The core it ran on when the work ended (a pinned thread's core).
    pub core: Option<u32>,
    /// Seconds of user time during the work.
    pub user_s: f64,
    /// Seconds of system time during the work (syscalls, and softirqs the
    /// kernel ran in the thread's context).
    pub system_s: f64,
}

impl ThreadCpu {
    /// User plus system seconds.
    pub fn total_s(&self) -> f64 {
        self.user_s + self.system_s
    }
}

/// Measures the calling thread from [`ThreadMeter::start`] to
/// [`ThreadMeter::stop`]; both must run on the thread being measured.
#[derive(Debug, Clone)]
pub struct ThreadMeter {
    name: String,
    start: (f64, f64),
}

impl ThreadMeter {
    /// Starts measuring the calling thread, named `name` in the report.
    pub fn start(name: impl Into<String>) -> ThreadMeter {
        ThreadMeter { name: name.into(), start: own_times() }
    }

    /// The calling thread's CPU time since [`ThreadMeter::start`].
    pub fn stop(&self) -> ThreadCpu {
        let (u, s) = own_times();
        ThreadCpu { name: self.name.clone(), core: current_core(), user_s: (u - self.start.0).max(0.0), system_s: (s - self.start.1).max(0.0) }
    }
}

/// One core's counters from `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreTick {
    /// The core's number (`cpuN`).
    pub core: u32,
    /// Ticks spent idle or waiting for I/O.
    pub idle: u64,
    /// Ticks stolen by the hypervisor.
    pub steal: u64,
    /// All ticks (busy, idle and steal; guest time is already in user).
    pub total: u64,
}

/// A snapshot of every core's tick counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoreTicks(pub Vec<CoreTick>);

/// How busy one core was between two snapshots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoreUse {
    /// The core's number.
    pub core: u32,
    /// Share of the interval the core ran something (0..=1), steal excluded.
    pub busy: f64,
    /// Share of the interval the hypervisor took the core away (0..=1).
    pub steal: f64,
}

impl CoreTicks {
    /// Reads `/proc/stat` now (an empty snapshot if it cannot be read).
    pub fn now() -> CoreTicks {
        std::fs::read_to_string("/proc/stat").map(|t| CoreTicks::parse(&t)).unwrap_or_default()
    }

    /// Parses the `cpuN` lines of a `/proc/stat` text (fields: user nice
    /// system idle iowait irq softirq steal guest guest_nice).
    pub fn parse(text: &str) -> CoreTicks {
        let mut cores = Vec::new();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let Some(core) = f.next().and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse::<u32>().ok()) else { continue };
            let v: Vec<u64> = f.map_while(|x| x.parse().ok()).collect();
            if v.len() < 4 {
                continue;
            }
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            // guest and guest_nice are counted inside user and nice already.
            let total = (0..8).map(at).sum();
            cores.push(CoreTick { core, idle: at(3) + at(4), steal: at(7), total });
        }
        CoreTicks(cores)
    }

    /// Each of `cores`' use between `earlier` and this snapshot (all cores
    /// when `cores` is empty); a core missing from either is left out.
    pub fn since(&self, earlier: &CoreTicks, cores: &[u32]) -> Vec<CoreUse> {
        self.0
            .iter()
            .filter(|c| cores.is_empty() || cores.contains(&c.core))
            .filter_map(|now| {
                let then = earlier.0.iter().find(|c| c.core == now.core)?;
                let total = now.total.checked_sub(then.total)?;
                if total == 0 {
                    return Some(CoreUse { core: now.core, busy: 0.0, steal: 0.0 });
                }
                let idle = now.idle.saturating_sub(then.idle);
                let steal = now.steal.saturating_sub(then.steal);
                let busy = total.saturating_sub(idle + steal);
                Some(CoreUse { core: now.core, busy: busy as f64 / total as f64, steal: steal as f64 / total as f64 })
            })
            .collect()
    }
}

/// The `cpu` object of a benchmark run: what each worker thread used, how
/// busy the cores it used were, and the work done per CPU-second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuReport {
    /// Each measured thread.
    pub threads: Vec<ThreadCpu>,
    /// Each core the threads ran on (or that the run was given).
    pub cores: Vec<CoreUse>,
    /// Units of work (rounds, samples, packets) per second of the threads'
    /// CPU time together; `None` when they used none.
    pub work_per_cpu_s: Option<f64>,
}

impl CpuReport {
    /// Builds the report for `work` units done by `threads`, with the cores
    /// between `before` and `after` (the threads' cores, plus `extra_cores`).
    pub fn new(threads: Vec<ThreadCpu>, before: &CoreTicks, after: &CoreTicks, extra_cores: &[u32], work: f64) -> CpuReport {
        let mut cores: Vec<u32> = threads.iter().filter_map(|t| t.core).chain(extra_cores.iter().copied()).collect();
        cores.sort_unstable();
        cores.dedup();
        let cpu: f64 = threads.iter().map(ThreadCpu::total_s).sum();
        let cores = if cores.is_empty() { Vec::new() } else { after.since(before, &cores) };
        CpuReport { threads, cores, work_per_cpu_s: (cpu > 0.0).then(|| work / cpu) }
    }

    /// The threads' CPU seconds together.
    pub fn cpu_s(&self) -> f64 {
        self.threads.iter().map(ThreadCpu::total_s).sum()
    }

    /// One line for a table: `client 0.98 s (cpu1), server 0.97 s (cpu0); cores 99%/98%; 1.0e5 /cpu-s`.
    pub fn summary(&self) -> String {
        let threads: Vec<String> =
            self.threads.iter().map(|t| format!("{} {:.2} s{}", t.name, t.total_s(), t.core.map(|c| format!(" (cpu{c})")).unwrap_or_default())).collect();
        let cores: Vec<String> = self.cores.iter().map(|c| format!("{:.0}%", c.busy * 100.0)).collect();
        let work = self.work_per_cpu_s.map(|w| format!("; {w:.3e} /cpu-s")).unwrap_or_default();
        format!("{}; cores {}{}", threads.join(", "), cores.join("/"), work)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 0 50 1000 10 0 5 7 0 0\n\
                        cpu0 60 0 30 500 5 0 3 2 0 0\n\
                        cpu1 40 0 20 500 5 0 2 5 0 0\n\
                        intr 123\nctxt 9\n";

    #[test]
    fn proc_stat_lines_are_read_per_core() {
        let t = CoreTicks::parse(STAT);
        assert_eq!(t.0.len(), 2);
        assert_eq!(t.0[0], CoreTick { core: 0, idle: 505, steal: 2, total: 600 });
        assert_eq!(t.0[1].core, 1);
    }

    #[test]
    fn utilisation_is_busy_share_without_steal() {
        let before = CoreTicks::parse(STAT);
        // cpu0: +80 user, +10 idle, +10 steal over 100 ticks.
        let after = CoreTicks::parse("cpu0 140 0 30 510 5 0 3 12 0 0\ncpu1 40 0 20 600 5 0 2 5 0 0\n");
        let u = after.since(&before, &[]);
        assert_eq!(u.len(), 2);
        assert!((u[0].busy - 0.8).abs() < 1e-9 && (u[0].steal - 0.1).abs() < 1e-9, "{u:?}");
        assert_eq!(u[1].busy, 0.0);
        assert_eq!(after.since(&before, &[1]).len(), 1);
    }

    #[test]
    fn work_per_cpu_second_divides_by_all_threads() {
        let t = |n: &str, c, u, s| ThreadCpu { name: n.into(), core: Some(c), user_s: u, system_s: s };
        let r = CpuReport::new(vec![t("client", 1, 0.5, 0.25), t("server", 0, 0.25, 0.0)], &CoreTicks::default(), &CoreTicks::default(), &[], 1000.0);
        assert_eq!(r.work_per_cpu_s, Some(1000.0));
        assert!(r.summary().starts_with("client 0.75 s (cpu1), server 0.25 s (cpu0)"), "{}", r.summary());
        let idle = CpuReport::new(vec![t("x", 0, 0.0, 0.0)], &CoreTicks::default(), &CoreTicks::default(), &[], 5.0);
        assert_eq!(idle.work_per_cpu_s, None);
    }
}
