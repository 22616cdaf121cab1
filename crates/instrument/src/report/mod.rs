//! `detpath report`: plots (PNG and SVG) and tables from saved results.
//!
//! Three figures, each written as `<name>.png` and `<name>.svg`:
//! - `boxplot`: one-way latency per datapath on a log axis, one box per
//!   configuration, box from p25 to p75, median line, whiskers at p0.01 and
//!   p99.99 and every sample beyond them as a dot (paper 000, Figures 2-3).
//!   Runs with fewer than 10,000 samples get whiskers at min and max.
//! - `ccdf`: P(latency > x) on log-log axes, one line per run: the run
//!   whose line drops first has the shorter tail.
//! - `timeline`: latency over the run, one panel per run: each round when
//!   there are few, else the median and the maximum of consecutive buckets
//!   (no spike is hidden by the downsampling); with the run's tail threshold
//!   as a dashed line and its largest noise gaps as bands coloured by cause.
//!
//! And, for the runs that recorded their CPU ([`render_cpu`]):
//! - `cpu_latency`: latency against CPU, one point pair per run: x = the
//!   worker threads' CPU time per round (µs, = ms per 1,000 rounds), y = its
//!   median (dot) and p99.9 (triangle) one-way latency joined by a line,
//!   labelled by the run: what each configuration's tail costs in cores.


mod pdv;

use crate::records::Record;
use crate::results::{LoadError, ResultDir, RunResult};
use crate::stats::{self, BoxStats};
use crate::table;
use crate::tail::{Cause, TailReport};
use anyhow::{anyhow, Context, Result};
use plotters::coord::combinators::{BindKeyPoints, LogCoord, WithKeyPoints};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// A run with the samples the plots need, loaded from its result directory.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// The result directory it came from.
    pub dir: PathBuf,
    /// Its summary.json entry.
    pub run: RunResult,
    /// Legend label, unique among the runs of a report.
    pub label: String,
    /// One-way latency samples (ns), sorted.
    pub sorted: Vec<u64>,
    /// (time since the first ping in ns, one-way latency in ns), send order.
    pub series: Vec<(u64, u64)>,
}

impl LoadedRun {
    /// From a run and its raw records (no records: no plots for it).
    pub fn new(dir: PathBuf, run: RunResult, records: &[Record]) -> LoadedRun {
        let t0 = records.iter().map(|r| r.client_send_ns).filter(|&t| t != 0).min().unwrap_or(0);
        let series: Vec<(u64, u64)> = records.iter().filter_map(|r| r.latency_ns().map(|l| (r.client_send_ns.saturating_sub(t0), l))).collect();
        let mut sorted: Vec<u64> = series.iter().map(|&(_, l)| l).collect();
        sorted.sort_unstable();
        let label = run.label();
        LoadedRun { dir, run, label, sorted, series }
    }
}

/// Loads every run of the given result directories with its records, and
/// makes the labels unique (adding the directory name where needed).
pub fn load_dirs(dirs: &[PathBuf]) -> Result<Vec<LoadedRun>, LoadError> {
    let mut out = Vec::new();
    for d in dirs {
        for run in ResultDir::load(d)? {
            let recs = ResultDir::load_records(d, &run)?;
            out.push(LoadedRun::new(d.clone(), run, &recs));
        }
    }
    let labels: Vec<String> = out.iter().map(|r| r.label.clone()).collect();
    for (i, r) in out.iter_mut().enumerate() {
        if labels.iter().filter(|l| **l == labels[i]).count() > 1 {
            let dn = r.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let more = if r.run.name.is_empty() { dn } else { format!("{dn}/{}", r.run.name) };
            r.label = format!("{} ({})", r.label, more);
        }
    }
    Ok(out)
}

/// The tables of `detpath report` for loaded runs.
pub fn tables(runs: &[LoadedRun]) -> String {
    let rs: Vec<RunResult> = runs.iter().map(|r| r.run.clone()).collect();
    table::render(&rs)
}

/// Writes boxplot, ccdf and timeline as PNG and SVG into `out` (created if
/// missing). Returns the files written.
pub fn render(runs: &[LoadedRun], out: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let plotted: Vec<&LoadedRun> = runs.iter().filter(|r| !r.sorted.is_empty()).collect();
    if plotted.is_empty() {
        anyhow::bail!("no run has raw records with latency samples: nothing to plot");
    }
    let mut files = Vec::new();
    let rows = plotted.len().div_ceil(2);
    let figs: [(&str, (u32, u32)); 3] = [("boxplot", (1200, 720)), ("ccdf", (1100, 720)), ("timeline", (1400, (260 * rows as u32 + 60).max(400)))];
    for (name, size) in figs {
        let png = out.join(format!("{name}.png"));
        let svg = out.join(format!("{name}.svg"));
        {
            let root = BitMapBackend::new(&png, size).into_drawing_area();
            draw(name, &root, &plotted).with_context(|| format!("drawing {}", png.display()))?;
            root.present().map_err(|e| anyhow!("writing {}: {e:?}", png.display()))?;
        }
        {
            let root = SVGBackend::new(&svg, size).into_drawing_area();
            draw(name, &root, &plotted).with_context(|| format!("drawing {}", svg.display()))?;
            root.present().map_err(|e| anyhow!("writing {}: {e:?}", svg.display()))?;
        }
        files.push(png);
        files.push(svg);
    }
    files.extend(render_cpu(runs, out)?);
    files.extend(pdv::render_pdv(&plotted, out)?);
    Ok(files)
}

/// A figure drawn into SVG text, for pages that hold their figures inline
/// (`detpath report --html`).
pub struct SvgFigure {
    /// The file stem `render` uses for it (`ccdf`, `timeline`, ...).
    pub name: &'static str,
    /// The `<svg>` element (it has a viewBox, so it scales to its box).
    pub svg: String,
}

/// Draws one figure into SVG text.
pub fn svg_text(size: (u32, u32), draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<()>) -> Result<String> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, size).into_drawing_area();
        draw(&root)?;
        root.present().map_err(|e| anyhow!("drawing SVG: {e:?}"))?;
    }
    Ok(s)
}

/// The figures of [`render`] as SVG text, without writing files: CCDF,
/// timeline (the tail's causes as bands), box plot, latency against CPU and
/// the pub-sub runs' PDV, each when the runs have what it needs. Runs
/// without samples are left out (no figure at all when none has any).
pub fn svg_figures(runs: &[LoadedRun]) -> Result<Vec<SvgFigure>> {
    let plotted: Vec<&LoadedRun> = runs.iter().filter(|r| !r.sorted.is_empty()).collect();
    let mut out = Vec::new();
    if !plotted.is_empty() {
        let rows = plotted.len().div_ceil(2) as u32;
        let figs: [(&'static str, (u32, u32)); 3] = [("ccdf", (1100, 720)), ("timeline", (1400, (260 * rows + 60).max(400))), ("boxplot", (1200, 720))];
        for (name, size) in figs {
            out.push(SvgFigure { name, svg: svg_text(size, |root| draw(name, root, &plotted))? });
        }
    }
    let points: Vec<CpuPoint> = runs.iter().filter_map(CpuPoint::of).collect();
    if !points.is_empty() {
        out.push(SvgFigure { name: "cpu_latency", svg: svg_text((1200, 760), |root| cpu_latency(root, &points))? });
    }
    if let Some(svg) = pdv::pdv_svg(&plotted)? {
        out.push(SvgFigure { name: "pdv", svg });
    }
    Ok(out)
}

/// One run on the latency-against-CPU plot.
struct CpuPoint {
    label: String,
    /// CPU µs per round (all measured threads together).
    cpu_us_per_round: f64,
    /// Median and p99.9 one-way latency, µs (p99.9 when the run has 1,000 samples).
    p50_us: f64,
    p999_us: Option<f64>,
}

impl CpuPoint {
    fn of(r: &LoadedRun) -> Option<CpuPoint> {
        let cpu = r.run.cpu_s_per_1k_rounds()?;
        let p50 = r.run.latency.get(crate::stats::Quantile::MEDIAN)?;
        Some(CpuPoint {
            label: r.label.clone(),
            cpu_us_per_round: cpu * 1000.0,
            p50_us: us(p50),
            p999_us: r.run.latency.get(crate::stats::Quantile::P99_9).map(us),
        })
    }
}

/// Writes `cpu_latency.png` and `.svg` into `out` when any run recorded its
/// CPU (see the module docs); returns the files written (none without CPU
/// records).
pub fn render_cpu(runs: &[LoadedRun], out: &Path) -> Result<Vec<PathBuf>> {
    let points: Vec<CpuPoint> = runs.iter().filter_map(CpuPoint::of).collect();
    if points.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let size = (1200, 760);
    let png = out.join("cpu_latency.png");
    let svg = out.join("cpu_latency.svg");
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        cpu_latency(&root, &points).with_context(|| format!("drawing {}", png.display()))?;
        root.present().map_err(|e| anyhow!("writing {}: {e:?}", png.display()))?;
    }
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        cpu_latency(&root, &points).with_context(|| format!("drawing {}", svg.display()))?;
        root.present().map_err(|e| anyhow!("writing {}: {e:?}", svg.display()))?;
    }
    Ok(vec![png, svg])
}

fn cpu_latency<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, points: &[CpuPoint]) -> Result<()> {
    root.fill(&WHITE).map_err(e)?;
    let xs = points.iter().map(|p| p.cpu_us_per_round.max(1e-3));
    let (xlo, xhi) = log_bounds(xs.clone().fold(f64::INFINITY, f64::min), xs.fold(0.0, f64::max));
    let ys = points.iter().flat_map(|p| std::iter::once(p.p50_us).chain(p.p999_us));
    let (ylo, yhi) = log_bounds(ys.clone().fold(f64::INFINITY, f64::min), ys.fold(0.0, f64::max));
    let mut chart = ChartBuilder::on(root)
        .caption("Latency against CPU: one run per colour, median (dot) and p99.9 (triangle)", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(log_axis(xlo, xhi), log_axis(ylo, yhi))
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("CPU per round: µs of the worker threads' CPU time (= ms per 1,000 rounds; log scale)")
        .y_desc("one-way latency (µs, log scale)")
        .x_label_formatter(&|v| fmt_axis(*v))
        .y_label_formatter(&|v| fmt_axis(*v))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(e)?;
    for (i, p) in points.iter().enumerate() {
        let color = series_color(i);
        let x = p.cpu_us_per_round.max(1e-3);
        if let Some(hi) = p.p999_us {
            chart.draw_series([PathElement::new(vec![(x, p.p50_us), (x, hi)], color.stroke_width(2))]).map_err(e)?;
            chart.draw_series([TriangleMarker::new((x, hi), 7, color.filled())]).map_err(e)?;
        }
        let top = p.p999_us.unwrap_or(p.p50_us);
        chart
            .draw_series([Circle::new((x, p.p50_us), 6, color.filled())])
            .map_err(e)?
            .label(format!("{} ({:.1} µs CPU/round)", p.label, p.cpu_us_per_round))
            .legend(move |(x, y)| Circle::new((x + 8, y), 5, color.filled()));
        let style = ("sans-serif", 14).into_font().color(&color);
        chart.draw_series([EmptyElement::at((x, top)) + Text::new(p.label.clone(), (8, -20), style)]).map_err(e)?;
    }
    draw_legend(&mut chart)
}

fn draw<DB: DrawingBackend>(name: &str, root: &DrawingArea<DB, Shift>, runs: &[&LoadedRun]) -> Result<()> {
    match name {
        "boxplot" => boxplot(root, runs),
        "ccdf" => ccdf(root, runs),
        _ => timeline(root, runs),
    }
}

fn e<E: std::fmt::Debug>(err: E) -> anyhow::Error {
    anyhow!("plotting: {err:?}")
}

/// Colours of the configurations (D, D&S, T, T&S, other).
fn config_color(c: &str) -> RGBColor {
    match c {
        "D" => RGBColor(31, 119, 180),
        "D&S" => RGBColor(214, 39, 40),
        "T" => RGBColor(44, 160, 44),
        "T&S" => RGBColor(255, 127, 14),
        _ => RGBColor(127, 127, 127),
    }
}

/// Distinct colours for series (tab10).
fn series_color(i: usize) -> RGBColor {
    const C: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

/// ns -> µs, kept above 1 ns for the log axes.
fn us(ns: u64) -> f64 {
    (ns.max(1)) as f64 / 1_000.0
}

/// Labelled ticks of a log axis over [lo, hi]: 1-2-5 per decade (only the
/// powers of ten beyond four decades); and the light grid 1..9 per decade.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let steps: &[f64] = if b - a > 4 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    let mut major = Vec::new();
    let mut light = Vec::new();
    for k in a..=b {
        let p = 10f64.powi(k);
        for &m in steps {
            if (lo..=hi).contains(&(m * p)) {
                major.push(m * p);
            }
        }
        for m in 1..10 {
            if (lo..=hi).contains(&(m as f64 * p)) {
                light.push(m as f64 * p);
            }
        }
    }
    (major, light)
}

fn log_axis(lo: f64, hi: f64) -> WithKeyPoints<LogCoord<f64>> {
    let (major, light) = log_ticks(lo, hi);
    (lo..hi).log_scale().with_key_points(major).with_light_points(light)
}

/// A log range covering [lo, hi] with some margin.
fn log_bounds(lo: f64, hi: f64) -> (f64, f64) {
    let lo = lo.max(1e-3);
    let hi = hi.max(lo * 1.01);
    (lo / 1.6, hi * 1.6)
}

fn boxplot<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, runs: &[&LoadedRun]) -> Result<()> {
    root.fill(&WHITE).map_err(e)?;
    // Groups = row labels (datapath), in order of appearance; boxes = runs.
    let all: Vec<RunResult> = runs.iter().map(|r| r.run.clone()).collect();
    let mut groups: Vec<String> = Vec::new();
    for r in &all {
        let g = table::row_label(r, &all);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let configs = table::configurations(&all);
    let boxes: Vec<(usize, usize, &LoadedRun, BoxStats)> = runs
        .iter()
        .zip(&all)
        .filter_map(|(lr, r)| {
            let g = groups.iter().position(|x| *x == table::row_label(r, &all))?;
            let c = configs.iter().position(|x| *x == r.configuration)?;
            Some((g, c, *lr, BoxStats::from_sorted(&lr.sorted, 2_000)?))
        })
        .collect();
    let lo = boxes.iter().map(|b| us(*b.3.outliers.iter().min().unwrap_or(&b.3.whisker_lo).min(&b.3.whisker_lo)));
    let hi = boxes.iter().map(|b| us(*b.3.outliers.iter().max().unwrap_or(&b.3.whisker_hi).max(&b.3.whisker_hi)));
    let (ylo, yhi) = log_bounds(lo.fold(f64::INFINITY, f64::min), hi.fold(0.0, f64::max));
    let n = groups.len();
    let mut chart = ChartBuilder::on(root)
        .caption("One-way latency (RTT/2) per datapath: box p25-p75, line median, whiskers p0.01-p99.99, dots beyond", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), log_axis(ylo, yhi))
        .map_err(e)?;
    let names = groups.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.max(2) * 4)
        .x_label_formatter(&move |x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
                names[i as usize].clone()
            } else {
                String::new()
            }
        })
        .x_label_style(("sans-serif", 16))
        .y_desc("one-way latency (µs, log scale)")
        .y_label_style(("sans-serif", 14))
        .y_label_formatter(&|v| fmt_axis(*v))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(e)?;
    let k = configs.len().max(1) as f64;
    let slot = 0.8 / k;
    for (g, c, _lr, b) in &boxes {
        let color = config_color(&configs[*c]);
        let x0 = *g as f64 - 0.4 + *c as f64 * slot + slot * 0.15;
        let x1 = x0 + slot * 0.7;
        let xm = (x0 + x1) / 2.0;
        let st = color.stroke_width(2);
        chart
            .draw_series([Rectangle::new([(x0, us(b.p25)), (x1, us(b.p75))], color.mix(0.25).filled()), Rectangle::new([(x0, us(b.p25)), (x1, us(b.p75))], st)])
            .map_err(e)?;
        let (wl, wh) = (us(b.whisker_lo), us(b.whisker_hi));
        let cap = (x1 - x0) * 0.25;
        chart
            .draw_series(
                [
                    vec![(x0, us(b.median)), (x1, us(b.median))],
                    vec![(xm, us(b.p75)), (xm, wh)],
                    vec![(xm, us(b.p25)), (xm, wl)],
                    vec![(xm - cap, wh), (xm + cap, wh)],
                    vec![(xm - cap, wl), (xm + cap, wl)],
                ]
                .into_iter()
                .map(|pts| PathElement::new(pts, st)),
            )
            .map_err(e)?;
        chart.draw_series(b.outliers.iter().map(|&o| Circle::new((xm, us(o)), 2, color.stroke_width(1)))).map_err(e)?;
    }
    for c in &configs {
        let color = config_color(c);
        let label = match c.as_str() {
            "D" => "D = Default",
            "D&S" => "D&S = Default & Stress",
            "T" => "T = Tuned",
            "T&S" => "T&S = Tuned & Stress",
            other => other,
        };
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(e)?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], color.mix(0.4).filled()));
    }
    draw_legend(&mut chart)
}

/// The legend box of every chart: upper right, translucent, framed.
fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(chart: &mut ChartContext<'a, DB, CT>) -> Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(e)?;
    Ok(())
}

/// Axis numbers: 0.5, 1, 10, 100, 1000, 1e4...
fn fmt_axis(v: f64) -> String {
    if v >= 100_000.0 || (v > 0.0 && v < 0.01) {
        format!("{v:.0e}")
    } else if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

fn ccdf<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, runs: &[&LoadedRun]) -> Result<()> {
    root.fill(&WHITE).map_err(e)?;
    let series: Vec<Vec<(f64, f64)>> = runs.iter().map(|r| stats::ccdf_points(&r.sorted, 600).into_iter().map(|(x, p)| (us(x), p)).collect()).collect();
    let xlo = series.iter().flatten().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let xhi = series.iter().flatten().map(|p| p.0).fold(0.0, f64::max);
    let (xlo, xhi) = log_bounds(xlo, xhi);
    let nmax = runs.iter().map(|r| r.sorted.len()).max().unwrap_or(1) as f64;
    let ylo = 10f64.powf((1.0 / nmax).log10().floor());
    let mut chart = ChartBuilder::on(root)
        .caption("CCDF of one-way latency: P(latency > x), one line per run", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(log_axis(xlo, xhi), (ylo..1.5f64).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("one-way latency x (µs, log scale)")
        .y_desc("P(latency > x) (log scale)")
        .x_label_formatter(&|v| fmt_axis(*v))
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(e)?;
    for (i, (r, pts)) in runs.iter().zip(&series).enumerate() {
        let color = series_color(i);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(e)?
            .label(r.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3)));
    }
    draw_legend(&mut chart)
}

/// Above this many rounds a run's timeline is drawn from buckets.
const TIMELINE_BUCKETS: usize = 1_000;

fn timeline<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, runs: &[&LoadedRun]) -> Result<()> {
    root.fill(&WHITE).map_err(e)?;
    let root = root.titled("One-way latency over time (per bucket of rounds: max as dots, median as line)", ("sans-serif", 22)).map_err(e)?;
    let cols = if runs.len() > 1 { 2 } else { 1 };
    let rows = runs.len().div_ceil(cols);
    let panels = root.split_evenly((rows, cols));
    let lo = runs.iter().map(|r| us(r.sorted[0])).fold(f64::INFINITY, f64::min);
    let hi = runs.iter().map(|r| us(*r.sorted.last().unwrap())).fold(0.0, f64::max);
    let (ylo, yhi) = log_bounds(lo, hi);
    for (i, (r, area)) in runs.iter().zip(panels.iter()).enumerate() {
        let tmax = r.series.last().map(|s| s.0 as f64 / 1e9).unwrap_or(0.0).max(1e-6);
        let mut chart = ChartBuilder::on(area)
            .caption(&r.label, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..tmax * 1.01, log_axis(ylo, yhi))
            .map_err(e)?;
        chart.configure_mesh().x_desc("time since first ping (s)").y_desc("latency (µs)").y_label_formatter(&|v| fmt_axis(*v)).x_labels(6).draw().map_err(e)?;
        let color = series_color(i);
        let lat: Vec<u64> = r.series.iter().map(|s| s.1).collect();
        if lat.len() <= TIMELINE_BUCKETS {
            chart.draw_series(r.series.iter().map(|&(t, l)| Circle::new((t as f64 / 1e9, us(l)), 2, color.filled()))).map_err(e)?;
        } else {
            let b = stats::downsample(&lat, TIMELINE_BUCKETS);
            let t = |k: usize| r.series[k].0 as f64 / 1e9;
            chart.draw_series(b.iter().map(|b| Circle::new((t(b.start), us(b.max)), 1, RED.mix(0.8).filled()))).map_err(e)?;
            chart.draw_series(LineSeries::new(b.iter().map(|b| (t(b.start), us(b.median))), color.stroke_width(1))).map_err(e)?;
        }
        if let Some(tail) = &r.run.tail {
            mark_tail(&mut chart, tail, (ylo, yhi), tmax)?;
        }
    }
    Ok(())
}

/// Colours of the tail causes on the timeline (and the HTML report's cause bars).
pub fn cause_color(c: Cause) -> RGBColor {
    match c {
        Cause::ClientLate => RGBColor(148, 103, 189),
        Cause::ServerSlow => RGBColor(140, 86, 75),
        Cause::Descheduled => RGBColor(214, 39, 40),
        Cause::Interrupt => RGBColor(255, 127, 14),
        Cause::Steal => RGBColor(23, 190, 207),
        Cause::KernelTime => RGBColor(188, 189, 34),
        Cause::DeferredSoftirq => RGBColor(227, 119, 194),
        Cause::KernelTraced => RGBColor(44, 160, 44),
        Cause::Unexplained => RGBColor(127, 127, 127),
    }
}

/// The tail on a timeline panel: the threshold as a dashed line and each of
/// the run's largest gaps as a vertical band (at least a line wide, so a
/// 2 ms gap in a 100 s run still shows) in its cause's colour, one legend
/// entry per cause.
fn mark_tail<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, WithKeyPoints<LogCoord<f64>>>>,
    tail: &TailReport,
    (ylo, yhi): (f64, f64),
    tmax: f64,
) -> Result<()> {
    let th = tail.threshold_us;
    if th > ylo && th < yhi {
        let dashes = (0..100).map(|k| k as f64 * tmax / 100.0).map(|x| PathElement::new(vec![(x, th), (x + tmax / 200.0, th)], BLACK.stroke_width(1)));
        chart
            .draw_series(dashes)
            .map_err(e)?
            .label(format!("tail threshold {th:.1} µs"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1)));
    }
    let mut shown: Vec<Cause> = Vec::new();
    for g in tail.largest_gaps.iter().filter(|g| g.at_ms >= 0.0) {
        let (x0, x1) = (g.at_ms / 1e3, (g.at_ms + g.len_us / 1e3) / 1e3);
        let color = cause_color(g.cause);
        let band = [Rectangle::new([(x0, ylo), (x1, yhi)], color.mix(0.25).filled())];
        chart.draw_series(band).map_err(e)?;
        let line = chart.draw_series([PathElement::new(vec![(x0, ylo), (x0, yhi)], color.mix(0.7).stroke_width(1))]).map_err(e)?;
        if !shown.contains(&g.cause) {
            shown.push(g.cause);
            line.label(format!("gap: {}", g.cause.describe())).legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], color.mix(0.5).filled()));
        }
    }
    if !shown.is_empty() || (th > ylo && th < yhi) {
        draw_legend(chart)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels() {
        assert_eq!(fmt_axis(10.0), "10");
        assert_eq!(fmt_axis(0.5), "0.5");
        assert_eq!(fmt_axis(1e6), "1e6");
        let (major, light) = log_ticks(7.0, 300.0);
        assert_eq!(major, vec![10.0, 20.0, 50.0, 100.0, 200.0]);
        assert_eq!(light.len(), 3 + 9 + 3);
        assert_eq!(log_ticks(1.0, 1e6).0.len(), 7);
    }
}
