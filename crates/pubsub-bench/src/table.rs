//! The table of `detpath pubsub bench`: one line per configuration, system,
//! wait and workload; with `--repeat N` each figure is the median of the N
//! repeats with their range, `median [min-max]`, so the spread is visible.
//! CPU is beside latency: the two sides' CPU time as a share of one core
//! (200% = two whole cores) and samples per CPU-second.
//!
//! ddsperf prints per-second percentiles only, so the p99 of its row is the
//! worst second's p99 (see the module comment of [`super`]), while detpath's
//! is the exact p99 over all samples. The two are not the same statistic:
//! ddsperf's has a column of its own, `worst-1s p99 us`, and detpath's
//! `p99 us` column is empty (`-`) on ddsperf rows, so no reader lines them up
//! as one column and no ratio is formed between them.
//!
//! Fast DDS's rows (`--fastdds`) have exact percentiles over all their
//! samples, as detpath's do; beside them the terminal and the page show
//! detpath against Fast DDS per configuration (mean, p99.9 and 32 B rate
//! ratios against issue 38's goals: `fastdds::ratios`, which reads these
//! figures).
//!
//! The table is built from the rows' JSON ([`RowFigures`], rows.json's
//! shape) so that the terminal, table.txt and `detpath report --html` show
//! the same figures, whether the rows were just measured or read back.

use super::BenchRow;
use serde::Deserialize;
use std::fmt::Write as _;

/// The figures of one row of rows.json that the table shows (a reader of
/// the JSON, which [`BenchRow`] is written as: old files read too).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct RowFigures {
    /// "D", "D&S", "T&S".
    #[serde(default)]
    pub configuration: String,
    /// "detpath udp", ..., "ddsperf".
    #[serde(default)]
    pub system: String,
    /// "latency 32B 1kHz", "rate 32B", "bandwidth 1KiB".
    #[serde(default)]
    pub workload: String,
    /// How detpath's sides waited; "" for ddsperf.
    #[serde(default)]
    pub wait: String,
    /// One-way latency, µs (latency workloads).
    #[serde(default)]
    pub latency_us: Option<LatencyFigures>,
    /// Packet delay variation, µs (latency workloads with records).
    #[serde(default)]
    pub pdv_us: Option<PdvFigures>,
    /// Pings never answered, or samples lost.
    #[serde(default)]
    pub lost: u64,
    /// Samples received per second (throughput workloads).
    #[serde(default)]
    pub samples_per_s: Option<f64>,
    /// The two sides' CPU time over the wall time, percent of one core.
    #[serde(default)]
    pub cpu_percent: Option<f64>,
    /// The CPU record (for samples per CPU-second).
    #[serde(default)]
    pub cpu: Option<detpath::sys::cputime::CpuReport>,
}

/// The latency figures of a row, µs.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct LatencyFigures {
    /// Mean (for the Fast DDS comparison, [`crate::fastdds::ratios`]).
    #[serde(default)]
    pub mean: Option<f64>,
    /// Median.
    pub p50: f64,
    /// p99: exact over all samples for detpath; ddsperf's worst second's p99.
    pub p99: f64,
    /// p99.9 (null below 1,000 samples, and for ddsperf).
    #[serde(default)]
    pub p99_9: Option<f64>,
    /// p99.99 (null below 10,000 samples, and for ddsperf).
    #[serde(default)]
    pub p99_99: Option<f64>,
    /// Largest sample.
    pub max: f64,
}

/// The PDV figure of a row, µs.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct PdvFigures {
    /// p99 PDV.
    pub p99: f64,
}

impl RowFigures {
    /// Whether the row's p99 is ddsperf's worst one-second p99 rather than
    /// an exact p99 over all samples (ddsperf's rows; see the module docs).
    pub fn p99_is_worst_second(&self) -> bool {
        self.system == "ddsperf"
    }

    /// The exact p99 over all samples, µs (none for ddsperf).
    pub fn exact_p99(&self) -> Option<f64> {
        self.latency_us.filter(|_| !self.p99_is_worst_second()).map(|l| l.p99)
    }

    /// ddsperf's worst one-second p99, µs (none for detpath).
    pub fn worst_second_p99(&self) -> Option<f64> {
        self.latency_us.filter(|_| self.p99_is_worst_second()).map(|l| l.p99)
    }
}

/// The rows as the table reads them (through their JSON).
pub fn figures(rows: &[BenchRow]) -> Vec<RowFigures> {
    rows.iter().map(|r| serde_json::to_value(r).ok().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default()).collect()
}

/// One column of the table: its heading, the JSON field of a row it shows
/// (a JSON pointer below the row, when the cell is one row's value) and how
/// it is read.
pub struct Column {
    /// The heading (the terminal's).
    pub title: &'static str,
    /// The row's JSON field the cell shows (`/latency_us/p50`), if one.
    pub pointer: Option<&'static str>,
    /// The figure of a row, if it has it.
    pub value: fn(&RowFigures) -> Option<f64>,
}

/// The figure columns, in order (after conf, system, wait, workload, n).
pub const COLUMNS: [Column; 6] = [
    Column { title: "p50 us", pointer: Some("/latency_us/p50"), value: |r| r.latency_us.map(|l| l.p50) },
    Column { title: "p99 us", pointer: Some("/latency_us/p99"), value: RowFigures::exact_p99 },
    Column { title: "worst-1s p99 us", pointer: Some("/latency_us/p99"), value: RowFigures::worst_second_p99 },
    Column { title: "p99.99 us", pointer: Some("/latency_us/p99_99"), value: |r| r.latency_us.and_then(|l| l.p99_99) },
    Column { title: "max us", pointer: Some("/latency_us/max"), value: |r| r.latency_us.map(|l| l.max) },
    Column { title: "PDV p99 us", pointer: Some("/pdv_us/p99"), value: |r| r.pdv_us.map(|p| p.p99) },
];

/// The rows of one line of the table, with their indices in rows.json.
pub struct Group<'a> {
    /// (index in the rows, the row), in the order run.
    pub rows: Vec<(usize, &'a RowFigures)>,
}

impl Group<'_> {
    /// The first row (configuration, system, wait, workload are the group's).
    pub fn first(&self) -> &RowFigures {
        self.rows[0].1
    }

    /// A column's cell: `12.3`, `12.3 [11.9-13.0]` over repeats, `n/a` where
    /// no repeat has the figure, `-` where the column is not this row's
    /// kind of figure (ddsperf's worst-1s p99 and detpath's exact p99).
    pub fn cell(&self, c: &Column) -> String {
        let other_kind = match c.title {
            "p99 us" => self.first().p99_is_worst_second(),
            "worst-1s p99 us" => !self.first().p99_is_worst_second(),
            _ => false,
        };
        if other_kind {
            return "-".into();
        }
        let v: Vec<f64> = self.rows.iter().filter_map(|(_, r)| (c.value)(r)).collect();
        spread(&v)
    }

    /// Lost over all repeats.
    pub fn lost(&self) -> u64 {
        self.rows.iter().map(|(_, r)| r.lost).sum()
    }

    /// Samples per second (median, then \[min-max\]).
    pub fn samples_per_s(&self) -> String {
        spread(&self.rows.iter().filter_map(|(_, r)| r.samples_per_s).collect::<Vec<_>>())
    }

    /// CPU, percent of one core (median, then \[min-max\]).
    pub fn cpu_percent(&self) -> String {
        spread(&self.rows.iter().filter_map(|(_, r)| r.cpu_percent).collect::<Vec<_>>())
    }

    /// Samples per CPU-second of the first repeat that has it.
    pub fn work_per_cpu_s(&self) -> String {
        self.rows.iter().filter_map(|(_, r)| r.cpu.as_ref().and_then(|c| c.work_per_cpu_s)).map(|w| format!("{w:.0}")).next().unwrap_or_else(|| "n/a".into())
    }
}

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

/// The rows grouped by (configuration, system, wait, workload), in the order run.
pub fn groups(rows: &[RowFigures]) -> Vec<Group<'_>> {
    let mut groups: Vec<Group> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let same = |g: &&mut Group| {
            let f = g.first();
            f.configuration == r.configuration && f.system == r.system && f.wait == r.wait && f.workload == r.workload
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.rows.push((i, r)),
            None => groups.push(Group { rows: vec![(i, r)] }),
        }
    }
    groups
}

/// What the table's ddsperf figures are, under any table that has a ddsperf row.
pub const DDSPERF_NOTE: &str = "ddsperf prints per-second figures only: its worst-1s p99 is the largest of its per-second p99s, \
its p50 the median of its per-second medians, its max the largest per-second max; detpath's p50, p99 and p99.99 are exact over \
all samples. The worst-1s p99 is a different statistic from an exact p99: compare it with neither detpath's p99 nor a ratio.";

/// The table of measured rows.
pub fn render(rows: &[BenchRow]) -> String {
    render_figures(&figures(rows))
}

/// The table of rows read from rows.json.
pub fn render_figures(rows: &[RowFigures]) -> String {
    let mut t = String::new();
    let _ = write!(t, "{:<5} {:<20} {:<9} {:<16} {:>3}", "conf", "system", "wait", "workload", "n");
    for c in &COLUMNS {
        let _ = write!(t, " {:>19}", c.title);
    }
    let _ = writeln!(t, " {:>6} {:>14} {:>16} {:>10}", "lost", "samples/s", "cpu % of a core", "samples/cpu-s");
    let gs = groups(rows);
    for g in &gs {
        let r0 = g.first();
        let _ = write!(
            t,
            "{:<5} {:<20} {:<9} {:<16} {:>3}",
            r0.configuration,
            r0.system,
            if r0.wait.is_empty() { "-" } else { &r0.wait },
            r0.workload,
            g.rows.len()
        );
        for c in &COLUMNS {
            let _ = write!(t, " {:>19}", g.cell(c));
        }
        let _ = writeln!(t, " {:>6} {:>14} {:>16} {:>10}", g.lost(), g.samples_per_s(), g.cpu_percent(), g.work_per_cpu_s());
    }
    if gs.iter().any(|g| g.first().p99_is_worst_second() && g.first().latency_us.is_some()) {
        let _ = writeln!(t, "{DDSPERF_NOTE}");
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

    fn row(system: &str, p99: f64) -> RowFigures {
        RowFigures {
            configuration: "D".into(),
            system: system.into(),
            workload: "latency 32B 1kHz".into(),
            latency_us: Some(LatencyFigures { p50: 40.0, p99, p99_99: None, max: 900.0, ..LatencyFigures::default() }),
            ..RowFigures::default()
        }
    }

    /// ddsperf's worst-second p99 sits in its own column, never in detpath's
    /// exact p99 column, and the table says what it is.
    #[test]
    fn ddsperf_p99_has_its_own_column() {
        let rows = [row("detpath udp", 123.4), row("ddsperf", 567.8)];
        let t = render_figures(&rows);
        let head: Vec<&str> = t.lines().next().unwrap().split("  ").map(str::trim).filter(|s| !s.is_empty()).collect();
        assert!(head.contains(&"p99 us") && head.contains(&"worst-1s p99 us"), "{t}");
        let cells = |sys: &str| -> Vec<String> {
            let l = t.lines().find(|l| l.split_whitespace().nth(1) == sys.split_whitespace().next()).unwrap();
            // Fixed-width: the 6 figure columns start after conf, system, wait, workload, n.
            let start = 5 + 1 + 20 + 1 + 9 + 1 + 16 + 1 + 3;
            (0..6).map(|k| l[start + k * 20..start + (k + 1) * 20].trim().to_string()).collect()
        };
        assert_eq!(cells("detpath udp")[1..3], ["123.4".to_string(), "-".to_string()], "{t}");
        assert_eq!(cells("ddsperf")[1..3], ["-".to_string(), "567.8".to_string()], "{t}");
        assert!(t.contains("worst-1s p99 is a different statistic"), "{t}");
        assert!(!render_figures(&rows[..1]).contains("worst-1s p99 is"), "no ddsperf row, no note");
    }

    /// Rows read back from JSON give the same table as the rows measured.
    #[test]
    fn rows_json_reads_back_to_the_same_figures() {
        let json = r#"[{"configuration":"D","system":"ddsperf","workload":"latency 32B 1kHz","latency_us":{"count":1972,"mean":86.2,"min":15.0,"p50":68.5,"p99":1056.9,"p99_9":null,"p99_99":null,"p99_9999":null,"max":2503.6},"samples_per_s":null,"mbit_per_s":null,"lost":0,"note":"","repeat":1,"wait":"","pdv_us":null,"cpu":null,"cpu_percent":15.0,"run":null}]"#;
        let rows: Vec<RowFigures> = serde_json::from_str(json).unwrap();
        assert_eq!(rows[0].worst_second_p99(), Some(1056.9));
        assert_eq!(rows[0].exact_p99(), None);
        assert!(render_figures(&rows).contains("1056.9"));
    }
}
