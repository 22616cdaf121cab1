//! The benchmark's table, result directory and plot (CDF of the
//! inter-arrival error, slots versus sleep, one panel per datapath).

use super::{Method, Report, RunReport};
use anyhow::{anyhow, Context};
use detpath_sched::ErrorSummary;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// KeepON's published figures (paper 003, §7.2), the reference row.
const KEEPON: &str = "KeepON (paper 003, RPi 4 + i210 receiver, 1 Gb/s): mean PDV 2.9 ns and mean inter-arrival jitter 3.7 ns \
with hardware receive time stamps; 381 ns and 416 ns with software time stamps (single clock); default driver 566.9 / 480.1 ns.";

fn us(ns: u64) -> String {
    let v = ns as f64 / 1000.0;
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

fn quad(s: &ErrorSummary) -> String {
    if s.count == 0 {
        return "-".into();
    }
    format!("{} / {} / {} / {}", us(s.p50), us(s.p99), us(s.p9999), us(s.max))
}

/// The human table: one row per run, then the per-class counters, the goals and the reference.
pub fn table(r: &Report) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "slots of {} µs, ring {} slots, lead {} slots; {} s per run; {}",
        r.slot_ns as f64 / 1000.0,
        r.ring_slots,
        r.lead_slots,
        r.duration_s,
        r.tuning
    );
    let _ = writeln!(
        t,
        "\n{:<7} {:<11} {:<31} {:<31} {:>9} {:>9} {:>5} {:>13} {:>12}",
        "path",
        "method",
        "IAT error p50/p99/p99.99/max",
        "release err p50/p99/p99.99/max",
        "IAT mean",
        "PDV mean",
        "viol",
        "rt sent/recv",
        "BE share/owned[ of offered]"
    );
    let _ = writeln!(t, "{:<7} {:<11} {:<31} {:<31} {:>9} {:>9}", "", "", "(µs)", "(µs)", "(ns)", "(ns)");
    for run in &r.runs {
        let be = run
            .be
            .map(|b| {
                let offered = b.offered_fraction.map(|o| format!(" of {:.0}%", o * 100.0)).unwrap_or_default();
                format!("{:.2}%/{:.0}%{offered}", b.measured_fraction * 100.0, b.expected_fraction * 100.0)
            })
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            t,
            "{:<7} {:<11} {:<31} {:<31} {:>9.0} {:>9.0} {:>5} {:>13} {:>12}",
            run.datapath,
            run.method.as_str(),
            quad(&run.iat_error_ns),
            quad(&run.release_error_ns),
            run.iat_error_ns.mean,
            run.pdv_ns.mean,
            run.violations,
            format!("{}/{}", run.rt_sent, run.rt_received),
            be
        );
    }
    let _ = writeln!(t, "\nsend call duration p50/p99/p99.99/max (µs), receiver foreign frames, frames with an implausible delay (left out):");
    for run in &r.runs {
        let _ = writeln!(
            t,
            "  {:<6} {:<10} {}   foreign {}   implausible {}",
            run.datapath,
            run.method.as_str(),
            quad(&run.send_cost_ns),
            run.rx_foreign,
            run.rx_implausible
        );
    }
    let _ = writeln!(t, "\nCPU (each thread's user+system seconds and share of the run's wall time; the cores' busy share; packets sent per CPU-second):");
    for run in &r.runs {
        let _ = writeln!(t, "  {:<6} {:<10} {}", run.datapath, run.method.as_str(), cpu_line(run));
    }
    let _ = writeln!(t, "\nper class (sent, late, dropped, moved, conflicts, missed BE slots, pre-buffer high water; release error p50/p99 µs):");
    for run in &r.runs {
        for c in &run.classes {
            let k = &c.counters;
            let _ = writeln!(
                t,
                "  {:<6} {:<10} {:<5} {:<7} sent {:>7} late {:>5} dropped {:>5} moved {:>5} conflicts {:>3} missed {:>5} hwm {:>4}  rel {} / {}",
                run.datapath,
                run.method.as_str(),
                c.name,
                format!("{:?}", c.mode).to_lowercase(),
                k.sent,
                k.late,
                k.dropped,
                k.moved,
                k.conflicts,
                k.missed_slots,
                k.prebuffer_high_water,
                us(c.release_error_ns.p50),
                us(c.release_error_ns.p99)
            );
        }
    }
    let _ = writeln!(
        t,
        "\nper flow (due, sent, refused at submission, handed off outside the class's slots; release error and IAT error p50/p99/p99.99/max µs; planned deviation µs):"
    );
    for run in &r.runs {
        for f in &run.flows {
            let _ = writeln!(
                t,
                "  {:<6} {:<10} {:<14} due {:>7} sent {:>7} refused {:>4} outside {:>5}  rel {}  IAT {}  dev {}",
                run.datapath,
                run.method.as_str(),
                f.name,
                f.planned,
                f.sent,
                f.refused,
                f.outside_partition,
                quad(&f.release_error_ns),
                quad(&f.iat_error_ns),
                us(f.planned_deviation_ns)
            );
        }
    }
    let _ = writeln!(t, "\ngoals (slots p99 IAT error <= sleep/10; release error p50 < 100 ns, p99 < 1 µs; zero strict violations):");
    let dps: Vec<&str> = dedup(r.runs.iter().map(|x| x.datapath.as_str()));
    for dp in dps {
        let find = |m: Method| r.runs.iter().find(|x| x.datapath == dp && x.method == m);
        if let Some(s) = find(Method::Slots) {
            let ratio = find(Method::Sleep).map(|z| z.iat_error_ns.p99 as f64 / s.iat_error_ns.p99.max(1) as f64);
            let ratio_txt = ratio.map(|q| format!("sleep/slots p99 IAT = {q:.1}x {}", mark(q >= 10.0))).unwrap_or_else(|| "no sleep run".into());
            let _ = writeln!(
                t,
                "  {dp:<6} {ratio_txt}; release p50 {} ns {}, p99 {} ns {}; violations {} {}",
                s.release_error_ns.p50,
                mark(s.release_error_ns.p50 < 100),
                s.release_error_ns.p99,
                mark(s.release_error_ns.p99 < 1000),
                s.violations,
                mark(s.violations == 0)
            );
        }
    }
    let _ = writeln!(t, "\nreference: {KEEPON}");
    let _ = writeln!(t, "probe of {} (sender side):", r.probe.iface);
    for l in r.probe.lines() {
        let _ = writeln!(t, "  {l}");
    }
    for e in &r.errors {
        let _ = writeln!(t, "FAILED: {e}");
    }
    t
}

/// One run's CPU cost on a line: `sender 1.21 s 95% (cpu0), receiver ...; cores 97%/99%; 8.1e4 pkt/cpu-s`.
pub fn cpu_line(run: &RunReport) -> String {
    let Some(c) = &run.cpu else { return "-".into() };
    let threads: Vec<String> = c
        .threads
        .iter()
        .map(|th| {
            let share = if run.wall_s > 0.0 { format!(" {:.0}%", th.total_s() / run.wall_s * 100.0) } else { String::new() };
            format!("{} {:.2} s{share}{}", th.name, th.total_s(), th.core.map(|k| format!(" (cpu{k})")).unwrap_or_default())
        })
        .collect();
    let cores: Vec<String> = c.cores.iter().map(|k| format!("cpu{} {:.0}%", k.core, k.busy * 100.0)).collect();
    let work = c.work_per_cpu_s.map(|w| format!("; {w:.2e} pkt/cpu-s")).unwrap_or_default();
    format!("{}; cores {}{work}", threads.join(", "), cores.join(" "))
}

/// A thread's share of a core over the run (0..=1), by name.
pub fn thread_share(run: &RunReport, name: &str) -> Option<f64> {
    let c = run.cpu.as_ref()?;
    let th = c.threads.iter().find(|t| t.name == name)?;
    (run.wall_s > 0.0).then(|| th.total_s() / run.wall_s)
}

fn mark(ok: bool) -> &'static str {
    if ok {
        "(met)"
    } else {
        "(NOT met)"
    }
}

fn dedup<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// Writes `report.json`, `table.txt` and the plot into a new directory
/// `<base>/sched-<UTC>`; returns its path.
pub fn write_results(base: &Path, r: &Report) -> anyhow::Result<PathBuf> {
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let dir = base.join(format!("sched-{}", detpath_instrument::results::utc_compact(stamp)));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // Whole and durable: a reader (or a power cut) sees the old file or the new one.
    detpath::sys::fsutil::write_atomic(&dir.join("report.json"), serde_json::to_string_pretty(r)?.as_bytes()).context("writing report.json")?;
    detpath::sys::fsutil::write_atomic(&dir.join("table.txt"), table(r).as_bytes()).context("writing table.txt")?;
    if r.runs.iter().any(|x| !x.iat_samples.is_empty()) {
        plot_iat_cdf(&r.runs, &dir.join("iat_cdf.png"), &dir.join("iat_cdf.svg"))?;
    }
    Ok(dir)
}

/// CDF of the inter-arrival error per datapath (one panel each), one line per method.
pub fn plot_iat_cdf(runs: &[RunReport], png: &Path, svg: &Path) -> anyhow::Result<()> {
    let dps = dedup(runs.iter().map(|x| x.datapath.as_str()));
    let size = (420 * dps.len().max(1) as u32 + 60, 460);
    {
        let root = BitMapBackend::new(png, size).into_drawing_area();
        draw(&root, runs, &dps)?;
        root.present().map_err(|e| anyhow!("writing {}: {e:?}", png.display()))?;
    }
    {
        let root = SVGBackend::new(svg, size).into_drawing_area();
        draw(&root, runs, &dps)?;
        root.present().map_err(|e| anyhow!("writing {}: {e:?}", svg.display()))?;
    }
    Ok(())
}

fn color(m: Method) -> RGBColor {
    match m {
        Method::Slots => RGBColor(31, 119, 180),
        Method::SlotsIdle => RGBColor(44, 160, 44),
        Method::Sleep => RGBColor(214, 39, 40),
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, runs: &[RunReport], dps: &[&str]) -> anyhow::Result<()> {
    let e = |err: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("plotting: {err:?}");
    root.fill(&WHITE).map_err(e)?;
    let panels = root.split_evenly((1, dps.len().max(1)));
    let all: Vec<u64> = runs.iter().flat_map(|r| r.iat_samples.iter().copied()).filter(|&v| v > 0).collect();
    let lo = all.iter().copied().min().unwrap_or(1).max(1) as f64;
    let hi = (all.iter().copied().max().unwrap_or(10) as f64 * 1.2).max(lo * 10.0);
    for (panel, dp) in panels.iter().zip(dps) {
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{dp}: inter-arrival error CDF"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(48)
            .build_cartesian_2d((lo..hi).log_scale(), 0f64..1.0)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("|a_i - a_(i-1) - period| (ns)")
            .y_desc("fraction of intervals")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(e)?;
        for r in runs.iter().filter(|r| r.datapath == *dp && !r.iat_samples.is_empty()) {
            let n = r.iat_samples.len();
            // At most ~2000 points per line: every k-th sample plus the last.
            let step = (n / 2000).max(1);
            let pts: Vec<(f64, f64)> =
                (0..n).step_by(step).chain(std::iter::once(n - 1)).map(|i| ((r.iat_samples[i].max(1) as f64).max(lo), (i + 1) as f64 / n as f64)).collect();
            let c = color(r.method);
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(e)?
                .label(format!("{} (p99 {} µs)", r.method.as_str(), us(r.iat_error_ns.p99)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).position(SeriesLabelPosition::LowerRight).draw().map_err(e)?;
    }
    Ok(())
}
