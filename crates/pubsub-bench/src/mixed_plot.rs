//! The mixed workload's figure: control latency (RTT / 2) over time, one
//! panel per detpath arm, the seconds with bulk shaded and the budget as a
//! dashed line; per 20 ms of pings the median as a line and the largest as
//! dots. Drawn from the arms' timeline files (`mixed-...-timeline.csv`) in
//! the result directory, as `mixed-timeline.png`.

use super::mixed::MixedRow;
use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Pings per plotted bucket (20 ms at 1 kHz).
const BUCKET: usize = 20;

/// One answered ping: (seconds since the first, RTT/2 µs, bulk on).
type Point = (f64, f64, bool);

/// One arm's panel.
struct Panel {
    label: String,
    budget_us: f64,
    points: Vec<Point>,
}

/// One arm's timeline: (t_s, RTT/2 µs, bulk on) per answered ping.
fn read_timeline(path: &Path) -> Result<Vec<Point>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some((f.get(1)?.parse().ok()?, f.get(2)?.parse().ok()?, *f.get(4)? == "1"))
        })
        .collect())
}

/// Per bucket of pings: (start time, median, max).
fn buckets(points: &[Point]) -> Vec<(f64, f64, f64)> {
    points
        .chunks(BUCKET)
        .map(|c| {
            let mut v: Vec<f64> = c.iter().map(|p| p.1).collect();
            v.sort_by(|a, b| a.total_cmp(b));
            (c[0].0, v[v.len() / 2], v[v.len() - 1])
        })
        .collect()
}

/// Draws the figure of the detpath rows of `rows` (those with a timeline)
/// into `dir/mixed-timeline.png`; None when no row has one.
pub fn render(dir: &Path, rows: &[MixedRow]) -> Result<Option<PathBuf>> {
    let mut panels = Vec::new();
    for r in rows.iter().filter(|r| r.arm != "ddsperf") {
        let Some(name) = &r.timeline else { continue };
        let pts = read_timeline(&dir.join(name))?;
        if !pts.is_empty() {
            let label = format!("{} {} {} (budget {:.0} us one-way)", r.configuration, r.datapath, r.arm, r.control.budget_us);
            panels.push(Panel { label, budget_us: r.control.budget_us, points: pts });
        }
    }
    if panels.is_empty() {
        return Ok(None);
    }
    let png = dir.join("mixed-timeline.png");
    draw(&png, &panels)?;
    Ok(Some(png))
}

/// Draws the panels into `png`.
fn draw(png: &Path, panels: &[Panel]) -> Result<()> {
    let rows_n = panels.len().div_ceil(2) as u32;
    let root = BitMapBackend::new(png, (1400, 280 * rows_n + 60)).into_drawing_area();
    let err = |e: &dyn std::fmt::Debug| anyhow!("drawing {}: {e:?}", png.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled("Control latency over time, RTT/2 (median per 20 ms as line, max as dots; bulk on shaded)", ("sans-serif", 22))
        .map_err(|e| err(&e))?;
    let hi = panels.iter().flat_map(|p| p.points.iter().map(|x| x.1)).fold(10.0f64, f64::max) * 1.5;
    let lo = panels.iter().flat_map(|p| p.points.iter().map(|x| x.1)).fold(f64::INFINITY, f64::min).clamp(0.5, 10.0) * 0.8;
    let areas = root.split_evenly((rows_n as usize, if panels.len() > 1 { 2 } else { 1 }));
    for (Panel { label, budget_us: budget, points: pts }, area) in panels.iter().zip(areas.iter()) {
        let tmax = pts.last().map_or(1.0, |p| p.0).max(0.001);
        let mut chart = ChartBuilder::on(area)
            .caption(label, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..tmax * 1.01, (lo..hi).log_scale())
            .map_err(|e| err(&e))?;
        chart.configure_mesh().x_desc("time since the first ping (s)").y_desc("latency (µs)").draw().map_err(|e| err(&e))?;
        // The bulk-on span: from the first to the last ping sent with bulk on.
        let on: Vec<f64> = pts.iter().filter(|p| p.2).map(|p| p.0).collect();
        if let (Some(a), Some(b)) = (on.first(), on.last()) {
            chart.draw_series(std::iter::once(Rectangle::new([(*a, lo), (*b, hi)], RGBColor(255, 230, 200).filled()))).map_err(|e| err(&e))?;
        }
        chart.draw_series(DashedLineSeries::new([(0.0, *budget), (tmax, *budget)], 6, 4, RED.stroke_width(1))).map_err(|e| err(&e))?;
        let b = buckets(pts);
        chart.draw_series(b.iter().map(|&(t, _, m)| Circle::new((t, m), 1, RED.mix(0.8).filled()))).map_err(|e| err(&e))?;
        chart.draw_series(LineSeries::new(b.iter().map(|&(t, m, _)| (t, m)), BLUE.stroke_width(1))).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_median_and_max() {
        let pts: Vec<Point> = (0..40).map(|i| (i as f64 / 1000.0, (i % 20) as f64, i >= 20)).collect();
        let b = buckets(&pts);
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].0, b[0].1, b[0].2), (0.0, 10.0, 19.0));
    }

    #[test]
    fn a_timeline_file_is_read_and_unanswered_pings_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        std::fs::write(&p, "seq,t_s,rtt_half_us,one_way_us,bulk_on\n0,0.000,12.5,6.0,0\n1,0.001,,,1\n2,0.002,40.0,30.0,1\n").unwrap();
        assert_eq!(read_timeline(&p).unwrap(), vec![(0.0, 12.5, false), (0.002, 40.0, true)]);
    }
}
