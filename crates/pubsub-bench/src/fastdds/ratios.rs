//! detpath against Fast DDS, as issue 38 sets the goals (in the benchmark,
//! never a timed test): 32 B samples at 1 kHz, reliable, detpath's mean
//! one-way latency at most 0.1x Fast DDS's and its p99.9 at most 0.05x, on
//! every datapath; 32 B samples as fast as reliable flow control allows, at
//! least 3x Fast DDS's rate. Each detpath line of a configuration is set
//! against the Fast DDS row of the same configuration (the same run, so the
//! machine's load is shared): the median of the repeats on both sides.

use crate::table::RowFigures;
use serde::Serialize;
use std::fmt::Write as _;

/// The system name of the Fast DDS rows.
pub const SYSTEM: &str = "fastdds";
/// Latency workload the latency goals are judged on.
pub const LATENCY: &str = "latency 32B 1kHz";
/// Throughput workload the rate goal is judged on.
pub const RATE: &str = "rate 32B";
/// detpath's mean latency over Fast DDS's: at most this.
pub const MEAN_GOAL: f64 = 0.1;
/// detpath's p99.9 latency over Fast DDS's: at most this.
pub const P99_9_GOAL: f64 = 0.05;
/// detpath's 32 B rate over Fast DDS's: at least this.
pub const RATE_GOAL: f64 = 3.0;

/// One figure of a detpath line beside Fast DDS's, and their ratio.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Ratio {
    /// detpath's figure (median of repeats).
    pub detpath: Option<f64>,
    /// Fast DDS's figure in the same configuration (median of repeats).
    pub fastdds: Option<f64>,
    /// detpath / Fast DDS.
    pub ratio: Option<f64>,
    /// Whether the goal holds; None without both figures.
    pub met: Option<bool>,
}

impl Ratio {
    fn new(detpath: Option<f64>, fastdds: Option<f64>, goal_met: fn(f64) -> bool) -> Ratio {
        let ratio = match (detpath, fastdds) {
            (Some(d), Some(f)) if f > 0.0 => Some(d / f),
            _ => None,
        };
        Ratio { detpath, fastdds, ratio, met: ratio.map(goal_met) }
    }

    /// The ratio and its verdict as a cell: `0.083 met`, `0.14 not met`, `n/a`.
    pub fn cell(&self) -> String {
        match (self.ratio, self.met) {
            (Some(r), Some(true)) => format!("{r:.3} met"),
            (Some(r), _) => format!("{r:.3} not met"),
            _ => "n/a".into(),
        }
    }
}

/// One detpath datapath (and wait) of one configuration against Fast DDS.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// "D", "D&S", "T&S".
    pub configuration: String,
    /// "detpath udp", ...
    pub system: String,
    /// How detpath's sides waited.
    pub wait: String,
    /// Mean one-way latency, µs (goal: ratio at most [`MEAN_GOAL`]).
    pub mean_us: Ratio,
    /// p99.9 one-way latency, µs (goal: ratio at most [`P99_9_GOAL`]).
    pub p99_9_us: Ratio,
    /// 32 B samples per second (goal: ratio at least [`RATE_GOAL`]).
    pub rate_samples_per_s: Ratio,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// The median of a figure over the rows of one configuration, system, wait
/// (any wait when None) and workload.
fn figure(rows: &[RowFigures], conf: &str, system: &str, wait: Option<&str>, workload: &str, f: fn(&RowFigures) -> Option<f64>) -> Option<f64> {
    median(rows.iter().filter(|r| r.configuration == conf && r.system == system && wait.is_none_or(|w| r.wait == w) && r.workload == workload).filter_map(f).collect())
}

fn mean(r: &RowFigures) -> Option<f64> {
    r.latency_us.and_then(|l| l.mean)
}

fn p99_9(r: &RowFigures) -> Option<f64> {
    r.latency_us.and_then(|l| l.p99_9)
}

fn rate(r: &RowFigures) -> Option<f64> {
    r.samples_per_s
}

/// Every detpath line of a configuration that has Fast DDS rows, against them; in the order run.
pub fn compare(rows: &[RowFigures]) -> Vec<Comparison> {
    let mut out: Vec<Comparison> = Vec::new();
    for r in rows.iter().filter(|r| r.system.starts_with("detpath ")) {
        let conf = r.configuration.as_str();
        if !rows.iter().any(|f| f.configuration == conf && f.system == SYSTEM) {
            continue;
        }
        if out.iter().any(|c| c.configuration == conf && c.system == r.system && c.wait == r.wait) {
            continue;
        }
        let (sys, wait) = (r.system.as_str(), Some(r.wait.as_str()));
        out.push(Comparison {
            configuration: conf.into(),
            system: sys.into(),
            wait: r.wait.clone(),
            mean_us: Ratio::new(figure(rows, conf, sys, wait, LATENCY, mean), figure(rows, conf, SYSTEM, None, LATENCY, mean), |x| x <= MEAN_GOAL),
            p99_9_us: Ratio::new(figure(rows, conf, sys, wait, LATENCY, p99_9), figure(rows, conf, SYSTEM, None, LATENCY, p99_9), |x| x <= P99_9_GOAL),
            rate_samples_per_s: Ratio::new(figure(rows, conf, sys, wait, RATE, rate), figure(rows, conf, SYSTEM, None, RATE, rate), |x| x >= RATE_GOAL),
        });
    }
    out
}

/// The heading of the comparison (the terminal's and the page's).
pub const TITLE: &str = "Against Fast DDS (issue 38's goals, 32 B reliable: at 1 kHz detpath's mean latency <= 0.1x Fast DDS's and its p99.9 <= 0.05x; \
as fast as flow control allows, its rate >= 3x); each ratio is detpath / Fast DDS of the same configuration in the same run";

/// The columns of the comparison, after conf, system and wait.
pub const HEAD: [&str; 9] =
    ["mean us", "fastdds mean us", "mean ratio", "p99.9 us", "fastdds p99.9 us", "p99.9 ratio", "samples/s", "fastdds samples/s", "rate ratio"];

/// The figure cells of a comparison, in [`HEAD`]'s order.
pub fn cells(c: &Comparison) -> [String; 9] {
    let v = |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), |x| format!("{x:.1}"));
    [
        v(c.mean_us.detpath),
        v(c.mean_us.fastdds),
        c.mean_us.cell(),
        v(c.p99_9_us.detpath),
        v(c.p99_9_us.fastdds),
        c.p99_9_us.cell(),
        v(c.rate_samples_per_s.detpath),
        v(c.rate_samples_per_s.fastdds),
        c.rate_samples_per_s.cell(),
    ]
}

/// The comparison of measured rows as text, after a blank line ("" without Fast DDS rows):
/// what the terminal and table.txt show under the workloads' table.
pub fn render_rows(rows: &[crate::BenchRow]) -> String {
    let t = render(&crate::table::figures(rows));
    if t.is_empty() {
        t
    } else {
        format!("\n{t}")
    }
}

/// The comparison as text ("" without Fast DDS rows).
pub fn render(rows: &[RowFigures]) -> String {
    let cs = compare(rows);
    if cs.is_empty() {
        return String::new();
    }
    let mut t = format!("{TITLE}\n");
    let _ = write!(t, "{:<5} {:<20} {:<9}", "conf", "system", "wait");
    for h in HEAD {
        let _ = write!(t, " {h:>17}");
    }
    t.push('\n');
    for c in &cs {
        let _ = write!(t, "{:<5} {:<20} {:<9}", c.configuration, c.system, if c.wait.is_empty() { "-" } else { &c.wait });
        for cell in cells(c) {
            let _ = write!(t, " {cell:>17}");
        }
        t.push('\n');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::LatencyFigures;

    fn lat(conf: &str, system: &str, mean: f64, p99_9: f64) -> RowFigures {
        RowFigures {
            configuration: conf.into(),
            system: system.into(),
            workload: LATENCY.into(),
            latency_us: Some(LatencyFigures { mean: Some(mean), p99_9: Some(p99_9), ..LatencyFigures::default() }),
            ..RowFigures::default()
        }
    }

    fn rate_row(conf: &str, system: &str, r: f64) -> RowFigures {
        RowFigures { configuration: conf.into(), system: system.into(), workload: RATE.into(), samples_per_s: Some(r), ..RowFigures::default() }
    }

    #[test]
    fn ratios_are_detpath_over_fastdds_of_the_same_configuration() {
        let rows = vec![
            lat("D", "detpath udp", 8.0, 10.0),
            rate_row("D", "detpath udp", 90_000.0),
            lat("D", SYSTEM, 100.0, 100.0),
            lat("D", SYSTEM, 120.0, 300.0),
            rate_row("D", SYSTEM, 20_000.0),
            lat("T&S", "detpath udp", 1.0, 1.0),
        ];
        let c = compare(&rows);
        assert_eq!(c.len(), 1, "T&S has no Fast DDS row to compare with");
        assert_eq!(c[0].mean_us.fastdds, Some(110.0), "the median of Fast DDS's repeats");
        assert_eq!(c[0].mean_us.met, Some(true));
        assert_eq!(c[0].p99_9_us.ratio, Some(0.05));
        assert_eq!(c[0].p99_9_us.met, Some(true), "at most 0.05x holds at 0.05x");
        assert_eq!(c[0].rate_samples_per_s.ratio, Some(4.5));
        let t = render(&rows);
        assert!(t.contains("0.073 met") && t.contains("4.500 met"), "{t}");
        assert_eq!(render(&rows[..2]), "", "no Fast DDS row, no comparison");
    }

    #[test]
    fn a_missed_goal_and_a_missing_figure_say_so() {
        let rows = vec![lat("D", "detpath dpdk", 20.0, 40.0), lat("D", SYSTEM, 100.0, 100.0)];
        let c = &compare(&rows)[0];
        assert_eq!(c.mean_us.cell(), "0.200 not met");
        assert_eq!(c.p99_9_us.cell(), "0.400 not met");
        assert_eq!(c.rate_samples_per_s.cell(), "n/a");
    }
}
