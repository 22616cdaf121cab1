//! `detpath report`'s packet-delay-variation figure for pub-sub runs (their
//! box plot, CCDF and timeline are the bench report's, drawn from the same
//! records). `pdv`: the CCDF of each run's PDV, one-way latency minus the
//! run's minimum (RFC 5481 §4.2, see `detpath_pubsub_bench::PdvSummary`), on log-log
//! axes, one line per run: P(PDV > x).

use super::LoadedRun;
use crate::stats;
use anyhow::{anyhow, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Whether a run is a pub-sub latency run (`detpath pubsub bench`).
fn is_pubsub(r: &LoadedRun) -> bool {
    r.run.config.datapath.starts_with("pubsub+")
}

/// Writes `pdv.png` and `pdv.svg` into `out` for the pub-sub runs among
/// `runs`; nothing (and no files) when there are none.
pub fn render_pdv(runs: &[&LoadedRun], out: &Path) -> Result<Vec<PathBuf>> {
    let runs: Vec<&LoadedRun> = runs.iter().copied().filter(|r| is_pubsub(r) && !r.sorted.is_empty()).collect();
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    let png = out.join("pdv.png");
    let svg = out.join("pdv.svg");
    {
        let root = BitMapBackend::new(&png, (1100, 720)).into_drawing_area();
        draw(&root, &runs).with_context(|| format!("drawing {}", png.display()))?;
        root.present().map_err(|e| anyhow!("writing {}: {e:?}", png.display()))?;
    }
    {
        let root = SVGBackend::new(&svg, (1100, 720)).into_drawing_area();
        draw(&root, &runs).with_context(|| format!("drawing {}", svg.display()))?;
        root.present().map_err(|e| anyhow!("writing {}: {e:?}", svg.display()))?;
    }
    Ok(vec![png, svg])
}

/// The PDV figure of the pub-sub runs among `runs` as SVG text; `None`
/// when there are none (for `detpath report --html`).
pub fn pdv_svg(runs: &[&LoadedRun]) -> Result<Option<String>> {
    let runs: Vec<&LoadedRun> = runs.iter().copied().filter(|r| is_pubsub(r) && !r.sorted.is_empty()).collect();
    if runs.is_empty() {
        return Ok(None);
    }
    crate::report::svg_text((1100, 720), |root| draw(root, &runs)).map(Some)
}

fn e<E: std::fmt::Debug>(err: E) -> anyhow::Error {
    anyhow!("plotting: {err:?}")
}

/// PDV in µs, sorted, with zero (the minimum sample itself) raised to 0.01 µs so a log axis can hold it.
fn pdv_us(r: &LoadedRun) -> Vec<u64> {
    let min = r.sorted[0];
    r.sorted.iter().map(|l| (l - min).max(10)).collect()
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, runs: &[&LoadedRun]) -> Result<()> {
    root.fill(&WHITE).map_err(e)?;
    let series: Vec<Vec<(f64, f64)>> =
        runs.iter().map(|r| stats::ccdf_points(&pdv_us(r), 600).into_iter().map(|(x, p)| (x as f64 / 1e3, p)).collect()).collect();
    let xlo = series.iter().flatten().map(|p| p.0).fold(f64::INFINITY, f64::min).max(0.01);
    let xhi = series.iter().flatten().map(|p| p.0).fold(0.0, f64::max).max(xlo * 10.0);
    let (xlo, xhi) = (10f64.powf(xlo.log10().floor()), 10f64.powf(xhi.log10().ceil()));
    let nmax = runs.iter().map(|r| r.sorted.len()).max().unwrap_or(1) as f64;
    let ylo = 10f64.powf((1.0 / nmax).log10().floor());
    let mut chart = ChartBuilder::on(root)
        .caption("Packet delay variation: P(PDV > x), PDV = latency - the run's minimum", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d((xlo..xhi).log_scale(), (ylo..1.5f64).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("PDV x (µs, log scale)")
        .y_desc("P(PDV > x) (log scale)")
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(e)?;
    const C: [RGBColor; 6] =
        [RGBColor(31, 119, 180), RGBColor(255, 127, 14), RGBColor(44, 160, 44), RGBColor(214, 39, 40), RGBColor(148, 103, 189), RGBColor(140, 86, 75)];
    for (i, (r, pts)) in runs.iter().zip(&series).enumerate() {
        let color = C[i % C.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(e)?
            .label(r.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).label_font(("sans-serif", 13)).draw().map_err(e)?;
    Ok(())
}
