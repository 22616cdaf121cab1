//! Sweeps of `detpath sched bench`: paper 003's traffic-management
//! experiments and its CPU figure, each point one run of the benchmark in
//! one shared testbed.
//!
//! - `be-share` (its Figure 17): best effort through the slot scheduler with
//!   25, 50 and 100 % of the slots the real-time classes leave free reserved
//!   for it (spread evenly over them, as KeepON allocates 8, 16 or 32 of 32),
//!   against the offered load (a share of the slot rate: 1.0 is one packet
//!   per slot of the whole ring). Best effort's throughput must stay at
//!   `min(offered, reserved)`, never above its reservation; beside it the
//!   real-time flows' delivery rate with their classes strict (late packets
//!   dropped) and relaxed (moved to a later slot of the class).
//! - `iat-size` (its Figures 6 and 15): the real-time flows' inter-arrival
//!   error per frame size, idle (no flood) and busy (the saturating flood in
//!   the default `bulk` class).
//! - `cost` (its Figure 19): the sender's CPU against its release error, for
//!   slot sizes at a poll every slot, and for poll batches (a poll every `B`
//!   slots, sleeping in between; 0 is the busy poll) at 10 µs slots; idle
//!   background, one strict flow every 10 slots.

use super::{BenchConfig, Method, RunReport};
use anyhow::{anyhow, Context};
use detpath::testbed::{Testbed, TestbedConfig};
use detpath_sched::config::{ClassConfig, ClassKind, Mode};
use detpath_sched::SlotMask;
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Which experiment a sweep reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweepKind {
    /// Best-effort throughput and real-time delivery against offered load (Figure 17).
    BeShare,
    /// Inter-arrival error per frame size, idle and busy (Figures 6 and 15).
    IatSize,
    /// CPU against release error for slot and batch sizes (Figure 19).
    Cost,
}

impl SweepKind {
    /// The name on the command line and in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            SweepKind::BeShare => "be-share",
            SweepKind::IatSize => "iat-size",
            SweepKind::Cost => "cost",
        }
    }
}

impl std::str::FromStr for SweepKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<SweepKind> {
        match s {
            "be-share" => Ok(SweepKind::BeShare),
            "iat-size" => Ok(SweepKind::IatSize),
            "cost" => Ok(SweepKind::Cost),
            _ => Err(anyhow!("sweep `{s}` is not be-share, iat-size or cost")),
        }
    }
}

/// The grid of the sweeps.
#[derive(Debug, Clone)]
pub struct SweepParams {
    /// Shares of the free slots reserved for best effort (`be-share`).
    pub reservations: Vec<f64>,
    /// Offered loads, shares of the slot rate (`be-share`).
    pub loads: Vec<f64>,
    /// Modes of the real-time classes (`be-share`).
    pub modes: Vec<Mode>,
    /// Payload bytes of every real-time flow (`iat-size`).
    pub sizes: Vec<usize>,
    /// Slot lengths, ns, polled every slot (`cost`).
    pub slots_ns: Vec<u64>,
    /// Poll batches at the base slot length (`cost`; 0: busy poll).
    pub batches: Vec<u32>,
}

impl Default for SweepParams {
    /// Paper 003's grid, scaled to this benchmark's 10 µs slots.
    fn default() -> SweepParams {
        SweepParams {
            reservations: vec![0.25, 0.5, 1.0],
            loads: vec![0.1, 0.2, 0.4, 0.6, 0.8, 1.0],
            modes: vec![Mode::Strict, Mode::Relaxed],
            sizes: vec![64, 256, 512, 1024, 1400],
            slots_ns: vec![5_000, 10_000, 20_000, 50_000, 100_000],
            batches: vec![0, 1, 2, 4, 8, 16, 32],
        }
    }
}

/// What one point varied.
#[derive(Debug, Clone, Serialize)]
pub struct PointLabel {
    /// The experiment.
    pub sweep: SweepKind,
    /// Share of the free slots reserved for best effort.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation: Option<f64>,
    /// Share of all slots that best effort owns (the reservation in ring terms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_fraction: Option<f64>,
    /// Offered load, share of the slot rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered: Option<f64>,
    /// Mode of the real-time classes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Real-time payload bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// `idle` or `busy` background.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<&'static str>,
    /// `slot` or `batch`: which of the cost sweep's two series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<&'static str>,
    /// Slot length, ns.
    pub slot_ns: u64,
    /// Poll batch (0: busy poll).
    pub batch: u32,
}

/// One point: what it varied and the run's full report.
#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    /// What the point varied.
    #[serde(flatten)]
    pub label: PointLabel,
    /// The run.
    pub run: RunReport,
}

/// All points of the sweeps run.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    /// The host the figures came from.
    pub environment: detpath_instrument::Environment,
    /// Tuning state and the threads' scheduling.
    pub tuning: String,
    /// Measured seconds per point.
    pub duration_s: f64,
    /// The points, sweep by sweep.
    pub points: Vec<SweepPoint>,
    /// Points that failed, with why.
    pub errors: Vec<String>,
}

/// The real-time classes' slots of `cfg`.
fn rt_positions(cfg: &BenchConfig) -> Vec<u32> {
    cfg.sched.classes.iter().filter(|c| c.kind == ClassKind::RealTime).flat_map(|c| c.mask.positions().collect::<Vec<_>>()).collect()
}

/// `count` of `free` positions, spread evenly.
fn spread(free: &[u32], count: usize) -> Vec<u32> {
    (0..count.min(free.len())).map(|i| free[i * free.len() / count.max(1)]).collect()
}

/// The configurations of one sweep, from `base` (its datapaths, timing, threads and testbed).
pub fn variants(base: &BenchConfig, kind: SweepKind, p: &SweepParams) -> anyhow::Result<Vec<(PointLabel, BenchConfig, Method)>> {
    let mut out = Vec::new();
    let label = |cfg: &BenchConfig| PointLabel {
        sweep: kind,
        reservation: None,
        reserved_fraction: None,
        offered: None,
        mode: None,
        size: None,
        background: None,
        series: None,
        slot_ns: cfg.sched.slot_ns,
        batch: cfg.poll_batch,
    };
    match kind {
        SweepKind::BeShare => {
            let n = base.sched.ring_slots;
            let rt = rt_positions(base);
            let free: Vec<u32> = (0..n).filter(|p| !rt.contains(p)).collect();
            for &res in &p.reservations {
                anyhow::ensure!(res > 0.0 && res <= 1.0, "reservation {res} is not a share in (0, 1]");
                let owned = spread(&free, (res * free.len() as f64).round().max(1.0) as usize);
                for &mode in &p.modes {
                    for &load in &p.loads {
                        let mut cfg = base.clone();
                        cfg.sched.classes.retain(|c| c.kind == ClassKind::RealTime);
                        for c in &mut cfg.sched.classes {
                            c.mode = mode;
                        }
                        let mask = SlotMask::from_positions(n, owned.iter().copied()).map_err(|e| anyhow!("best-effort mask: {e}"))?;
                        cfg.sched.classes.push(ClassConfig { name: "bulk".into(), kind: ClassKind::BestEffort, mode, mask, capacity: 256 });
                        cfg.be_class = Some("bulk".into());
                        cfg.be_load = Some(load);
                        let mut l = label(&cfg);
                        (l.reservation, l.reserved_fraction, l.offered, l.mode) = (Some(res), Some(cfg.be_fraction()), Some(load), Some(mode));
                        out.push((l, cfg, Method::Slots));
                    }
                }
            }
        }
        SweepKind::IatSize => {
            for &size in &p.sizes {
                for (background, method) in [("idle", Method::SlotsIdle), ("busy", Method::Slots)] {
                    let mut cfg = base.clone();
                    for f in &mut cfg.flows {
                        f.size = size;
                    }
                    let mut l = label(&cfg);
                    (l.size, l.background) = (Some(size), Some(background));
                    out.push((l, cfg, method));
                }
            }
        }
        SweepKind::Cost => {
            // Two series of (slot, batch) points: the slot length at batch 1,
            // then the batch at the base's slot length.
            let slots = p.slots_ns.iter().map(|&slot_ns| ("slot", slot_ns, 1));
            let batches = p.batches.iter().map(|&batch| ("batch", base.sched.slot_ns, batch));
            for (series, slot_ns, batch) in slots.chain(batches) {
                let mut cfg = base.clone();
                cfg.sched.slot_ns = slot_ns;
                cfg.sched.ring_slots = 100;
                cfg.sched.classes = vec![ClassConfig::parse("rt:rt:strict:5/10@256", 100, Mode::Strict)?];
                // Polling once per batch releases a slot up to a batch late: that is the
                // latency this trades for CPU, measured as release error, not dropped.
                cfg.sched.late_tolerance_ns = (batch.max(1) as u64 + 1) * slot_ns;
                cfg.flows = vec![super::FlowSpec::parse(&format!("rt:rt:{}ns:64:5", 10 * slot_ns))?];
                cfg.be_class = None;
                cfg.poll_batch = batch;
                out.push((PointLabel { series: Some(series), ..label(&cfg) }, cfg, Method::SlotsIdle));
            }
        }
    }
    for (_, cfg, _) in &out {
        cfg.validate().with_context(|| format!("a {} point", kind.as_str()))?;
    }
    Ok(out)
}

/// Runs `kinds` on every datapath of `base`, all in one testbed.
pub fn run(
    base: &BenchConfig,
    kinds: &[SweepKind],
    p: &SweepParams,
    tuning: &str,
    log: &dyn Fn(&str),
    interrupted: &(dyn Fn() -> bool + Sync),
) -> anyhow::Result<SweepReport> {
    let mut all = Vec::new();
    for &k in kinds {
        all.extend(variants(base, k, p)?);
    }
    let tb = Testbed::up(TestbedConfig::with_prefix(&base.testbed_prefix))?;
    let (mut points, mut errors) = (Vec::new(), Vec::new());
    let mut port = base.port_base;
    'outer: for dp in &base.datapaths {
        for (label, cfg, method) in &all {
            if interrupted() {
                errors.push("interrupted".into());
                break 'outer;
            }
            port = port.wrapping_add(2).max(1024);
            log(&format!("{} point {}", label.sweep.as_str(), describe(label)));
            match super::run_logged(&tb, cfg, dp, *method, port, log, interrupted) {
                Ok(run) => points.push(SweepPoint { label: label.clone(), run }),
                Err(e) => errors.push(format!("{} {}: {e}", label.sweep.as_str(), describe(label))),
            }
        }
    }
    drop(tb);
    Ok(SweepReport { environment: detpath_instrument::Environment::capture(), tuning: tuning.to_string(), duration_s: base.duration_ns as f64 / 1e9, points, errors })
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn describe(l: &PointLabel) -> String {
    match l.sweep {
        SweepKind::BeShare => format!(
            "reservation {} ({} of slots), offered {}, {}",
            pct(l.reservation.unwrap_or(0.0)),
            pct(l.reserved_fraction.unwrap_or(0.0)),
            pct(l.offered.unwrap_or(0.0)),
            l.mode.map(|m| format!("{m:?}").to_lowercase()).unwrap_or_default()
        ),
        SweepKind::IatSize => format!("{} B {}", l.size.unwrap_or(0), l.background.unwrap_or("")),
        SweepKind::Cost => format!("slot {} µs, batch {}", l.slot_ns as f64 / 1000.0, l.batch),
    }
}

/// The sender's share of a core over the run.
fn sender_cpu(run: &RunReport) -> f64 {
    super::thread_share(run, "sender").unwrap_or(0.0)
}

/// The human table: one section per sweep.
pub fn table(r: &SweepReport) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "{} s per point; {}", r.duration_s, r.tuning);
    let of = |k: SweepKind| r.points.iter().filter(move |p| p.label.sweep == k);
    if of(SweepKind::BeShare).next().is_some() {
        let _ = writeln!(
            t,
            "\nbest effort against offered load (paper 003 Figure 17; shares of the slot rate; cap: within 2 % of the reservation):\n{:<7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}",
            "path", "resv", "owned", "offered", "BE thru", "refused", "missed", "cap", "mode", "RT deliv"
        );
        for p in of(SweepKind::BeShare) {
            let (l, run) = (&p.label, &p.run);
            let Some(be) = run.be else { continue };
            let owned = l.reserved_fraction.unwrap_or(0.0);
            let _ = writeln!(
                t,
                "{:<7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}",
                run.datapath,
                pct(l.reservation.unwrap_or(0.0)),
                pct(owned),
                pct(be.offered_fraction.unwrap_or(0.0)),
                pct(be.measured_fraction),
                pct(be.refused_fraction.unwrap_or(0.0)),
                pct(be.missed_slots as f64 / be.slots_in_window.max(1) as f64),
                if be.measured_fraction <= owned * 1.02 { "held" } else { "EXCEEDED" },
                l.mode.map(|m| format!("{m:?}").to_lowercase()).unwrap_or_default(),
                pct(run.rt_delivery)
            );
        }
    }
    if of(SweepKind::IatSize).next().is_some() {
        let _ = writeln!(
            t,
            "\ninter-arrival error per frame size (paper 003 Figures 6 and 15; ns):\n{:<7} {:>6} {:<5} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "path", "size", "bg", "IAT mean", "IAT p50", "IAT p99", "PDV mean", "RT deliv"
        );
        for p in of(SweepKind::IatSize) {
            let (l, run) = (&p.label, &p.run);
            let _ = writeln!(
                t,
                "{:<7} {:>6} {:<5} {:>9.0} {:>9} {:>9} {:>9.0} {:>9}",
                run.datapath,
                l.size.unwrap_or(0),
                l.background.unwrap_or(""),
                run.iat_error_ns.mean,
                run.iat_error_ns.p50,
                run.iat_error_ns.p99,
                run.pdv_ns.mean,
                pct(run.rt_delivery)
            );
        }
    }
    if of(SweepKind::Cost).next().is_some() {
        let _ = writeln!(
            t,
            "\nCPU against release error (paper 003 Figure 19; batch 0 = busy poll; CPU = share of a core over the run):\n{:<7} {:>8} {:>6} {:>8} {:>9} {:>11} {:>11} {:>9}",
            "path", "slot µs", "batch", "sender", "receiver", "rel p50 ns", "rel p99 ns", "RT deliv"
        );
        for p in of(SweepKind::Cost) {
            let (l, run) = (&p.label, &p.run);
            let _ = writeln!(
                t,
                "{:<7} {:>8} {:>6} {:>8} {:>9} {:>11} {:>11} {:>9}",
                run.datapath,
                l.slot_ns as f64 / 1000.0,
                l.batch,
                pct(sender_cpu(run)),
                pct(super::thread_share(run, "receiver").unwrap_or(0.0)),
                run.release_error_ns.p50,
                run.release_error_ns.p99,
                pct(run.rt_delivery)
            );
        }
    }
    for e in &r.errors {
        let _ = writeln!(t, "FAILED: {e}");
    }
    t
}

/// Writes `report.json`, `table.txt` and the plots (`be_share`, `be_delivery`,
/// `iat_size`, `cost`, PNG and SVG, for the sweeps run) into a new
/// directory `<base>/sched-sweep-<UTC>`; returns its path.
pub fn write_results(base: &Path, r: &SweepReport) -> anyhow::Result<PathBuf> {
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let dir = base.join(format!("sched-sweep-{}", detpath_instrument::results::utc_compact(stamp)));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    detpath::sys::fsutil::write_atomic(&dir.join("report.json"), serde_json::to_string_pretty(r)?.as_bytes()).context("writing report.json")?;
    detpath::sys::fsutil::write_atomic(&dir.join("table.txt"), table(r).as_bytes()).context("writing table.txt")?;
    for chart in charts(r) {
        if chart.series.iter().any(|s| !s.1.is_empty()) {
            chart.write(&dir)?;
        }
    }
    Ok(dir)
}

/// A line chart: file stem, title, axis names, whether y is logarithmic, and named series.
struct Chart {
    stem: &'static str,
    title: String,
    x: &'static str,
    y: &'static str,
    log_y: bool,
    series: Vec<(String, Vec<(f64, f64)>)>,
}

/// Appends `(x, y)` to the series named `name`, creating it.
fn push(series: &mut Vec<(String, Vec<(f64, f64)>)>, name: String, pt: (f64, f64)) {
    match series.iter_mut().find(|s| s.0 == name) {
        Some(s) => s.1.push(pt),
        None => series.push((name, vec![pt])),
    }
}

fn charts(r: &SweepReport) -> Vec<Chart> {
    let multi = r.points.iter().any(|p| p.run.datapath != r.points[0].run.datapath);
    let dp = |run: &RunReport| if multi { format!("{} ", run.datapath) } else { String::new() };
    let mode = |l: &PointLabel| l.mode.map(|m| format!("{m:?}").to_lowercase()).unwrap_or_default();
    let (mut share, mut deliv, mut iat, mut cost) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for p in &r.points {
        let (l, run) = (&p.label, &p.run);
        match l.sweep {
            SweepKind::BeShare => {
                let (Some(be), Some(res)) = (run.be, l.reservation) else { continue };
                let x = be.offered_fraction.unwrap_or(0.0) * 100.0;
                push(&mut share, format!("{}{:.0}% {}", dp(run), res * 100.0, mode(l)), (x, be.measured_fraction * 100.0));
                push(&mut deliv, format!("{}{:.0}% {}", dp(run), res * 100.0, mode(l)), (x, run.rt_delivery * 100.0));
            }
            SweepKind::IatSize => {
                let (Some(size), Some(bg)) = (l.size, l.background) else { continue };
                push(&mut iat, format!("{}{bg} mean", dp(run)), (size as f64, run.iat_error_ns.mean.max(1.0)));
                push(&mut iat, format!("{}{bg} p99", dp(run)), (size as f64, run.iat_error_ns.p99.max(1) as f64));
            }
            SweepKind::Cost => {
                let name = match l.series {
                    Some("batch") => format!("{}batch at {} µs slots", dp(run), l.slot_ns as f64 / 1000.0),
                    _ => format!("{}slot size, poll every slot", dp(run)),
                };
                push(&mut cost, name, (sender_cpu(run) * 100.0, run.release_error_ns.p99.max(1) as f64 / 1000.0));
            }
        }
    }
    for s in cost.iter_mut() {
        s.1.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    vec![
        Chart {
            stem: "be_share",
            title: "best-effort throughput vs offered load".into(),
            x: "offered (% of slot rate)",
            y: "BE throughput (% of slots)",
            log_y: false,
            series: share,
        },
        Chart {
            stem: "be_delivery",
            title: "real-time delivery vs best-effort load".into(),
            x: "offered BE (% of slot rate)",
            y: "RT delivered (%)",
            log_y: false,
            series: deliv,
        },
        Chart { stem: "iat_size", title: "inter-arrival error per frame size".into(), x: "payload (bytes)", y: "IAT error (ns)", log_y: true, series: iat },
        Chart {
            stem: "cost",
            title: "sender CPU vs release error p99".into(),
            x: "sender CPU (% of a core)",
            y: "release error p99 (µs)",
            log_y: true,
            series: cost,
        },
    ]
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

impl Chart {
    fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let (png, svg) = (dir.join(format!("{}.png", self.stem)), dir.join(format!("{}.svg", self.stem)));
        {
            let root = BitMapBackend::new(&png, (760, 480)).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(|e| anyhow!("writing {}: {e:?}", png.display()))?;
        }
        let root = SVGBackend::new(&svg, (760, 480)).into_drawing_area();
        self.draw(&root)?;
        root.present().map_err(|e| anyhow!("writing {}: {e:?}", svg.display()))?;
        Ok(())
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        let e = |err: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("plotting: {err:?}");
        root.fill(&WHITE).map_err(e)?;
        let pts = || self.series.iter().flat_map(|s| s.1.iter().copied());
        let (x0, x1) = pts().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
        let (y0, y1) = pts().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
        let xr = (x0.min(0.0))..(x1 * 1.05).max(x0 + 1.0);
        let mut b = ChartBuilder::on(root);
        b.caption(&self.title, ("sans-serif", 18)).margin(12).x_label_area_size(40).y_label_area_size(56);
        let legend = |(x, y): (i32, i32), c: RGBColor| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2));
        if self.log_y {
            let lo = y0.max(1e-3) / 1.5;
            let mut chart = b.build_cartesian_2d(xr, (lo..(y1 * 1.5).max(lo * 10.0)).log_scale()).map_err(e)?;
            chart.configure_mesh().x_desc(self.x).y_desc(self.y).draw().map_err(e)?;
            for (i, (name, s)) in self.series.iter().enumerate() {
                let c = COLORS[i % COLORS.len()];
                chart.draw_series(LineSeries::new(s.clone(), c.stroke_width(2))).map_err(e)?.label(name).legend(move |p| legend(p, c));
                chart.draw_series(s.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(e)?;
            }
            chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).position(SeriesLabelPosition::UpperRight).draw().map_err(e)?;
        } else {
            let mut chart = b.build_cartesian_2d(xr, 0f64..(y1 * 1.1).max(1.0)).map_err(e)?;
            chart.configure_mesh().x_desc(self.x).y_desc(self.y).draw().map_err(e)?;
            for (i, (name, s)) in self.series.iter().enumerate() {
                let c = COLORS[i % COLORS.len()];
                chart.draw_series(LineSeries::new(s.clone(), c.stroke_width(2))).map_err(e)?.label(name).legend(move |p| legend(p, c));
                chart.draw_series(s.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(e)?;
            }
            chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).position(SeriesLabelPosition::UpperLeft).draw().map_err(e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn be_share_reserves_a_share_of_the_free_slots_evenly() {
        let base = BenchConfig::paper();
        let p = SweepParams { loads: vec![0.5], modes: vec![Mode::Strict], ..SweepParams::default() };
        let v = variants(&base, SweepKind::BeShare, &p).expect("valid points");
        assert_eq!(v.len(), 3);
        let rt = rt_positions(&base);
        let free = base.sched.ring_slots as usize - rt.len();
        for (l, cfg, m) in &v {
            assert_eq!(*m, Method::Slots);
            let be = cfg.sched.classes.iter().find(|c| c.kind == ClassKind::BestEffort).expect("a best-effort class");
            let want = (l.reservation.unwrap() * free as f64).round() as u32;
            assert_eq!(be.mask.count(), want);
            assert!(be.mask.positions().all(|p| !rt.contains(&p)));
            assert!((l.reserved_fraction.unwrap() - want as f64 / 100.0).abs() < 1e-9);
        }
        // 100 %: every free slot; 25 %: spread, not bunched at the ring's start.
        let quarter: Vec<u32> = v[0].1.sched.classes.last().unwrap().mask.positions().collect();
        assert!(quarter.last().copied().unwrap_or(0) > 80, "{quarter:?}");
    }

    #[test]
    fn cost_points_vary_slot_and_batch_and_tolerate_a_batch_of_lateness() {
        let base = BenchConfig::paper();
        let p = SweepParams { slots_ns: vec![5_000, 50_000], batches: vec![0, 8], ..SweepParams::default() };
        let v = variants(&base, SweepKind::Cost, &p).expect("valid points");
        let got: Vec<(u64, u32, u64)> = v.iter().map(|(_, c, _)| (c.sched.slot_ns, c.poll_batch, c.sched.late_tolerance_ns)).collect();
        assert_eq!(got, vec![(5_000, 1, 10_000), (50_000, 1, 100_000), (10_000, 0, 20_000), (10_000, 8, 90_000)]);
        assert!(v.iter().all(|(_, c, m)| *m == Method::SlotsIdle && c.flows[0].period_ns == 10 * c.sched.slot_ns));
        let series: Vec<Option<&str>> = v.iter().map(|(l, _, _)| l.series).collect();
        assert_eq!(series, [Some("slot"), Some("slot"), Some("batch"), Some("batch")]);
    }
}
