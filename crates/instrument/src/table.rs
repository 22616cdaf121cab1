//! Human tables of benchmark results.
//!
//! - [`paper_table`]: laid out like paper 000's Table 1: one row per
//!   datapath, column groups Median, p99, p99.99, Max and Jitter of the
//!   one-way latency, each split by configuration (D, D&S, T, T&S) when
//!   several are present. Values in µs.
//! - [`detail_table`]: one row per run with every percentile, then loss,
//!   server processing time and send lateness.
//! - [`environment_note`]: where the numbers come from.
//!
//! A percentile the sample count cannot support is shown as
//! `n/a (needs N)`; a run that did not complete is marked `*`.

use crate::run_result::RunResult;
use crate::stats::{Quantile, Summary};
use std::fmt::Write as _;

/// The columns of the loss, server time and send lateness table (terminal and HTML pages alike).
pub const LOSS_COLUMNS: [&str; 14] = [
    "Run",
    "sent",
    "lost",
    "dup",
    "reord",
    "corrupt",
    "late",
    "server med",
    "server p99.99",
    "server max",
    "lateness med",
    "lateness p99.99",
    "lateness max",
    "complete",
];

/// A value in µs with 3-4 significant digits, as paper 000 prints them:
/// `9.44`, `46.34`, `248.3`, `3051`.
pub fn fmt_us(ns: u64) -> String {
    fmt_us_f(ns as f64)
}

/// As [`fmt_us`] for a fractional ns value (mean, std dev).
pub fn fmt_us_f(ns: f64) -> String {
    let v = ns / 1_000.0;
    if v < 100.0 {
        format!("{v:.2}")
    } else if v < 1_000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// `1,000,000`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    let first = s.len() % 3;
    for (i, c) in s.chars().enumerate() {
        if i > 0 && i % 3 == first % 3 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A quantile of a summary in µs, or `n/a (needs N)`, or `-` without samples.
pub fn cell(s: &Summary, q: Quantile) -> String {
    if s.count == 0 {
        return "-".into();
    }
    match s.get(q) {
        Some(v) => fmt_us(v),
        None => format!("n/a (needs {})", thousands(q.needs())),
    }
}

/// The name paper 000 uses for a datapath (`afxdp` -> `AF_XDP`): its
/// registry entry's display name; the sockperf reference row's own; any
/// other name as it is.
pub fn display_name(datapath: &str) -> String {
    match detpath::datapath::find(datapath) {
        Some(d) => d.display.into(),
        None if datapath == "sockperf" => "sockperf (UDP)".into(),
        None => datapath.into(),
    }
}

const CONFIG_ORDER: [&str; 4] = ["D", "D&S", "T", "T&S"];

fn config_rank(c: &str) -> usize {
    CONFIG_ORDER.iter().position(|&x| x == c).unwrap_or(CONFIG_ORDER.len())
}

/// The configurations present, in paper order.
pub fn configurations(runs: &[RunResult]) -> Vec<String> {
    let mut cs: Vec<String> = Vec::new();
    for r in runs {
        if !cs.contains(&r.configuration) {
            cs.push(r.configuration.clone());
        }
    }
    cs.sort_by_key(|c| config_rank(c));
    cs
}

/// Row label of a run: the datapath's name, plus size and rate when the
/// runs differ in those.
pub fn row_label(r: &RunResult, runs: &[RunResult]) -> String {
    let mut l = display_name(&r.config.datapath);
    if runs.iter().any(|o| o.config.size != r.config.size) {
        let _ = write!(l, " {} B", r.config.size);
    }
    if runs.iter().any(|o| o.config.period_ns != r.config.period_ns) {
        let _ = write!(l, " {:.0} Mbit/s", r.config.rate_mbps());
    }
    l
}

/// A text grid: first column left-aligned, the rest right-aligned.
struct Grid {
    rows: Vec<Vec<String>>,
}

impl Grid {
    fn render(&self, out: &mut String, header_rows: usize) {
        let cols = self.rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut w = vec![0usize; cols];
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        for (ri, r) in self.rows.iter().enumerate() {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                let pad = w[i] - c.chars().count();
                if i == 0 {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
            if ri + 1 == header_rows {
                let total: usize = w.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
                out.push_str(&"-".repeat(total));
                out.push('\n');
            }
        }
    }
}

fn common<T: PartialEq + Clone>(runs: &[RunResult], f: impl Fn(&RunResult) -> T) -> Option<T> {
    let first = f(runs.first()?);
    runs.iter().all(|r| f(r) == first).then_some(first)
}

/// Paper 000's Table 1 for these runs.
pub fn paper_table(runs: &[RunResult]) -> String {
    let mut out = String::new();
    if runs.is_empty() {
        out.push_str("(no runs)\n");
        return out;
    }
    let configs = configurations(runs);
    let mut title = "One-way latency (RTT/2) in µs".to_string();
    if let (Some(size), Some(_)) = (common(runs, |r| r.config.size), common(runs, |r| r.config.period_ns)) {
        let _ = write!(title, ", {} B probes at {:.1} Mbit/s", size, runs[0].config.rate_mbps());
    }
    if configs.len() == 1 {
        let _ = write!(title, ", configuration {}", configs[0]);
    }
    out.push_str(&title);
    out.push('\n');

    // Rows in order of first appearance.
    let mut rows: Vec<String> = Vec::new();
    for r in runs {
        let l = row_label(r, runs);
        if !rows.contains(&l) {
            rows.push(l);
        }
    }
    type Metric = (&'static str, fn(&Summary) -> String);
    let metrics: [Metric; 5] = [
        ("Median", |s| cell(s, Quantile::MEDIAN)),
        ("p99", |s| cell(s, Quantile::P99)),
        ("p99.99", |s| cell(s, Quantile::P99_99)),
        ("Max", |s| cell(s, Quantile::MAX)),
        ("Jitter", |s| s.jitter_ns.map(fmt_us).unwrap_or_else(|| "-".into())),
    ];
    let multi = configs.len() > 1;
    let mut grid = Grid { rows: Vec::new() };
    let mut h1 = vec!["Datapath".to_string()];
    let mut h2 = vec![String::new()];
    for (m, _) in &metrics {
        for (i, c) in configs.iter().enumerate() {
            h1.push(if i == 0 { m.to_string() } else { String::new() });
            h2.push(c.clone());
        }
    }
    grid.rows.push(h1);
    if multi {
        grid.rows.push(h2);
    }
    let mut any_partial = false;
    for row in &rows {
        let mut line = vec![row.clone()];
        for (_, f) in &metrics {
            for c in &configs {
                let run = runs.iter().rev().find(|r| &r.configuration == c && &row_label(r, runs) == row);
                line.push(match run {
                    None => "-".into(),
                    Some(r) => {
                        let mut v = f(&r.latency);
                        if !r.complete {
                            v.push('*');
                            any_partial = true;
                        }
                        v
                    }
                });
            }
        }
        grid.rows.push(line);
    }
    grid.render(&mut out, if multi { 2 } else { 1 });
    if multi {
        out.push_str("D = Default, D&S = Default & Stress, T = Tuned, T&S = Tuned & Stress (paper 000, Table 1).\n");
    }
    if any_partial {
        out.push_str("* incomplete run (interrupted): statistics of the rounds measured.\n");
    }
    out
}

/// One row per run: every latency percentile, then loss, server time and
/// send lateness.
pub fn detail_table(runs: &[RunResult]) -> String {
    let mut out = String::new();
    if runs.is_empty() {
        return out;
    }
    out.push_str("Latency per run (one-way = RTT/2, µs; exact nearest-rank percentiles over all samples)\n");
    let mut g = Grid {
        rows: vec![["Run", "samples", "min", "mean", "median", "p99", "p99.9", "p99.99", "p99.999", "p99.9999", "max", "jitter", "std dev"]
            .iter()
            .map(|s| s.to_string())
            .collect()],
    };
    for r in runs {
        let s = &r.latency;
        let mut row = vec![run_label(r), thousands(s.count)];
        row.push(s.min_ns.map(fmt_us).unwrap_or_else(|| "-".into()));
        row.push(s.mean_ns.map(fmt_us_f).unwrap_or_else(|| "-".into()));
        row.push(cell(s, Quantile::MEDIAN));
        for (q, _) in Quantile::TAIL {
            row.push(cell(s, q));
        }
        row.push(cell(s, Quantile::MAX));
        row.push(s.jitter_ns.map(fmt_us).unwrap_or_else(|| "-".into()));
        row.push(s.stddev_ns.map(fmt_us_f).unwrap_or_else(|| "-".into()));
        g.rows.push(row);
    }
    g.render(&mut out, 1);
    out.push('\n');
    out.push_str("Loss, server processing time and send lateness per run (µs)\n");
    let mut g = Grid {
        rows: vec![LOSS_COLUMNS
        .iter()
        .map(|s| s.to_string())
        .collect()],
    };
    for r in runs {
        let l = &r.loss;
        let mut row = vec![run_label(r)];
        for v in [l.sent, l.lost, l.duplicates, l.reordered, l.corrupted, l.late] {
            row.push(thousands(v));
        }
        for s in [&r.server_time, &r.send_lateness] {
            row.push(cell(s, Quantile::MEDIAN));
            row.push(cell(s, Quantile::P99_99));
            row.push(cell(s, Quantile::MAX));
        }
        row.push(match (&r.complete, &r.interrupted) {
            (true, _) => "yes".into(),
            (false, Some(why)) => format!("no: {why}"),
            (false, None) => "no".into(),
        });
        g.rows.push(row);
    }
    g.render(&mut out, 1);
    out
}

fn run_label(r: &RunResult) -> String {
    let mut l = format!("{} {}", r.config.datapath, r.configuration);
    if !r.complete {
        l.push('*');
    }
    l
}

/// Where the numbers come from: host, kernel, CPU, and per run the obtained
/// mode, tuning, stress, pinning, size, rate and rounds.
pub fn environment_note(runs: &[RunResult]) -> String {
    let mut out = String::new();
    let mut envs: Vec<&crate::run_result::Environment> = Vec::new();
    for r in runs {
        let e = &r.environment;
        if !envs.iter().any(|x| x.hostname == e.hostname && x.kernel == e.kernel && x.cpu_model == e.cpu_model) {
            envs.push(e);
        }
    }
    for e in envs {
        let _ =
            writeln!(out, "Environment: host {}, {}, CPU {} ({} CPUs), detpath {}, {}", e.hostname, e.kernel, e.cpu_model, e.cpus, e.detpath_version, e.date);
    }
    for r in runs {
        let c = &r.config;
        let pin = match (c.cpu_client, c.cpu_server) {
            (None, None) => "not pinned".to_string(),
            (a, b) => format!("client cpu {}, server cpu {}", a.map(|x| x.to_string()).unwrap_or("-".into()), b.map(|x| x.to_string()).unwrap_or("-".into())),
        };
        let _ = writeln!(
            out,
            "  {} {}: mode {}; tuning {}; stress {} %; {}; {} B every {} µs ({:.1} Mbit/s); {} of {} rounds{}{}",
            c.datapath,
            r.configuration,
            if c.mode.is_empty() { "-" } else { &c.mode },
            if c.tuning.is_empty() { "-" } else { &c.tuning },
            c.stress_percent,
            pin,
            c.size,
            fmt_us(c.period_ns),
            c.rate_mbps(),
            thousands(r.loss.sent),
            thousands(c.rounds),
            c.peer.as_ref().map(|p| format!("; peer {p}")).unwrap_or_default(),
            r.interrupted.as_ref().map(|w| format!("; INTERRUPTED: {w}")).unwrap_or_default(),
        );
        for n in &r.notes {
            let _ = writeln!(out, "    note: {n}");
        }
    }
    out
}

/// Everything: the paper table, the detailed tables and the environment.
pub fn render(runs: &[RunResult]) -> String {
    let mut out = paper_table(runs);
    if !runs.is_empty() {
        out.push('\n');
        out.push_str(&detail_table(runs));
        out.push_str(&cpu_table(runs));
        out.push_str(&tail_section(runs));
        out.push_str(&sustained_rates(runs));
        out.push('\n');
        out.push_str(&environment_note(runs));
    }
    out
}

/// CPU beside latency, one row per run that recorded its CPU: median and
/// p99.9 one-way latency, the worker threads' CPU seconds together, each
/// thread's share of a core over the run's wall time (100 = a whole core:
/// a busy-polling thread), CPU µs per round, rounds per CPU-second, and how
/// busy the cores they ran on were (everything that ran there, from
/// `/proc/stat`).
pub fn cpu_table(runs: &[RunResult]) -> String {
    let with: Vec<&RunResult> = runs.iter().filter(|r| r.cpu.is_some()).collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nCPU per run (threads' user + system time; % core = thread CPU / run wall time; cores busy from /proc/stat)\n");
    let mut g = Grid {
        rows: vec![["Run", "median µs", "p99.9 µs", "cpu s", "% core", "cpu µs/round", "rounds/cpu-s", "cores busy"].iter().map(|s| s.to_string()).collect()],
    };
    for r in with {
        let Some(cpu) = &r.cpu else { continue };
        let mut row = vec![run_label(r), cell(&r.latency, Quantile::MEDIAN), cell(&r.latency, Quantile::P99_9), format!("{:.2}", cpu.cpu_s())];
        let shares: Vec<String> = cpu
            .threads
            .iter()
            .map(|t| match r.core_share(&t.name) {
                Some(s) => format!("{} {}", t.name, fmt_pct(s)),
                None => format!("{} -", t.name),
            })
            .collect();
        row.push(shares.join(", "));
        row.push(r.cpu_s_per_1k_rounds().map(|s| format!("{:.1}", s * 1000.0)).unwrap_or_else(|| "-".into()));
        row.push(cpu.work_per_cpu_s.map(|w| thousands(w.round() as u64)).unwrap_or_else(|| "-".into()));
        let cores: Vec<String> = cpu.cores.iter().map(|c| format!("cpu{} {}", c.core, fmt_pct(c.busy))).collect();
        row.push(if cores.is_empty() { "-".into() } else { cores.join(", ") });
        g.rows.push(row);
    }
    g.render(&mut out, 1);
    out
}

/// A share (0..1) as a percentage: `99%`, `4.2%`, `0.05%` (terminal tables and HTML pages).
pub fn fmt_pct(share: f64) -> String {
    let p = share * 100.0;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else if p >= 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2}%")
    }
}

/// One line per run that has a tail attribution: how many rounds were slow and why.
pub fn tail_section(runs: &[RunResult]) -> String {
    let lines: Vec<String> =
        runs.iter().filter_map(|r| r.tail.as_ref().map(|t| format!("  {} ({}): {}\n", row_label(r, runs), r.configuration, t.line()))).collect();
    if lines.is_empty() {
        return String::new();
    }
    format!("\nTail (rounds above the threshold, by cause):\n{}", lines.concat())
}

/// With several rates: the highest rate each datapath sustained without loss (paper 000, Figure 2).
pub fn sustained_rates(runs: &[RunResult]) -> String {
    let mut periods: Vec<u64> = runs.iter().map(|r| r.config.period_ns).collect();
    periods.sort_unstable();
    periods.dedup();
    if periods.len() < 2 {
        return String::new();
    }
    let mut out = String::from("\nHighest rate sustained without loss:\n");
    let mut seen: Vec<(String, &str)> = Vec::new();
    for r in runs {
        let key = (r.config.datapath.clone(), r.configuration.as_str());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let best = runs
            .iter()
            .filter(|o| o.config.datapath == r.config.datapath && o.configuration == r.configuration && o.complete && o.loss.lost == 0)
            .map(|o| o.config.rate_mbps())
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        let _ = writeln!(
            out,
            "  {} ({}): {}",
            display_name(&r.config.datapath),
            r.configuration,
            best.map(|b| format!("{b:.0} Mbit/s")).unwrap_or_else(|| "none (every rate lost rounds)".into())
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(fmt_us(9_440), "9.44");
        assert_eq!(fmt_us(46_340), "46.34");
        assert_eq!(fmt_us(248_300), "248.3");
        assert_eq!(fmt_us(3_051_000), "3051");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
        assert_eq!(thousands(0), "0");
        assert_eq!(cell(&Summary::default(), Quantile::P99), "-");
        let s = Summary::from_sorted(&[1_000, 2_000]);
        assert_eq!(cell(&s, Quantile::P99_99), "n/a (needs 10,000)");
        assert_eq!(cell(&s, Quantile::MEDIAN), "1.00");
    }
}
