//! The table of `detpath pubsub bench`: one line per configuration, system,
//! wait and workload; with `--repeat N` each figure is the median of the N
//! repeats with their range, `median [min-max]`, so the spread is visible.
//! CPU is beside latency: the two sides' CPU time as a share of one core
//! (200% = two whole cores) and samples per CPU-second.

use super::BenchRow;
use std::fmt::Write as _;

/// The median and range of some figures: `12.3`, or `12.3 [11.9-13.0]` for several.
fn spread(v: &[f64]) -> String {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return "n/a".into();
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let med = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    if v.len() == 1 {
        format!("{med:.1}")
    } else {
        format!("{med:.1} [{:.1}-{:.1}]", v[0], v[v.len() - 1])
    }
}

/// The figure of every repeat that has it; "n/a" if none has.
fn col(rows: &[&BenchRow], f: impl Fn(&BenchRow) -> Option<f64>) -> String {
    let v: Vec<f64> = rows.iter().filter_map(|r| f(r)).collect();
    spread(&v)
}

/// The rows grouped by (configuration, system, wait, workload), in the order run.
pub fn render(rows: &[BenchRow]) -> String {
    let mut groups: Vec<Vec<&BenchRow>> = Vec::new();
    for r in rows {
        match groups.iter_mut().find(|g| g[0].configuration == r.configuration && g[0].system == r.system && g[0].wait == r.wait && g[0].workload == r.workload)
        {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<5} {:<20} {:<9} {:<16} {:>3} {:>19} {:>19} {:>19} {:>19} {:>17} {:>6} {:>14} {:>16} {:>10}",
        "conf",
        "system",
        "wait",
        "workload",
        "n",
        "p50 us",
        "p99 us",
        "p99.99 us",
        "max us",
        "PDV p99 us",
        "lost",
        "samples/s",
        "cpu % of a core",
        "samples/cpu-s"
    );
    for g in groups {
        let r0 = g[0];
        let lat = |f: fn(&detpath_pubsub::app::LatencySummaryJson) -> Option<f64>| col(&g, |r| r.latency_us.as_ref().and_then(f));
        let _ = writeln!(
            t,
            "{:<5} {:<20} {:<9} {:<16} {:>3} {:>19} {:>19} {:>19} {:>19} {:>17} {:>6} {:>14} {:>16} {:>10}",
            r0.configuration,
            r0.system,
            if r0.wait.is_empty() { "-" } else { &r0.wait },
            r0.workload,
            g.len(),
            lat(|l| Some(l.p50)),
            lat(|l| Some(l.p99)),
            lat(|l| l.p99_99),
            lat(|l| Some(l.max)),
            col(&g, |r| r.pdv_us.map(|p| p.p99)),
            g.iter().map(|r| r.lost).sum::<u64>(),
            col(&g, |r| r.samples_per_s),
            col(&g, |r| r.cpu_percent),
            g.iter().filter_map(|r| r.cpu.as_ref().and_then(|c| c.work_per_cpu_s)).map(|w| format!("{w:.0}")).next().unwrap_or_else(|| "n/a".into()),
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_median_and_range() {
        assert_eq!(spread(&[]), "n/a");
        assert_eq!(spread(&[3.0]), "3.0");
        assert_eq!(spread(&[5.0, 1.0, 3.0]), "3.0 [1.0-5.0]");
        assert_eq!(spread(&[2.0, 4.0]), "3.0 [2.0-4.0]");
    }
}
