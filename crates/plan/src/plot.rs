//! Figure 24 of paper 003, redrawn for both solvers: (a) schedulability and (b) solve time per
//! utilisation, as `fig24.png` and `fig24.svg`.

use crate::points::{Point, Summary};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const OURS: RGBColor = RGBColor(0, 114, 178);
const Z3: RGBColor = RGBColor(213, 94, 0);

/// Which solver's summary of a point a series shows.
type Pick = Box<dyn Fn(&Point) -> Option<&Summary>>;

/// Draws the figure into `dir`; returns the files written.
pub fn figure(points: &[Point], z3_timeout_s: Option<f64>, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let png = dir.join("fig24.png");
    let svg = dir.join("fig24.svg");
    {
        let root = BitMapBackend::new(&png, (1400, 560)).into_drawing_area();
        draw(&root, points, z3_timeout_s)?;
        root.present().map_err(|e| format!("{}: {e:?}", png.display()))?;
    }
    {
        let root = SVGBackend::new(&svg, (1400, 560)).into_drawing_area();
        draw(&root, points, z3_timeout_s)?;
        root.present().map_err(|e| format!("{}: {e:?}", svg.display()))?;
    }
    Ok(vec![png, svg])
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, points: &[Point], z3_timeout_s: Option<f64>) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let (left, right) = root.split_horizontally(700);
    let umax = points.iter().map(|p| p.util * 100.0).fold(50.0, f64::max) + 2.5;
    let solvers: Vec<(&str, RGBColor, Pick)> =
        vec![("detpath-plan", OURS, Box::new(|p: &Point| Some(&p.ours))), ("z3", Z3, Box::new(|p: &Point| p.z3.as_ref()))];

    // (a) schedulability.
    let mut chart = ChartBuilder::on(&left)
        .caption("(a) schedulability", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..umax, 0.0..105.0)
        .map_err(err)?;
    chart.configure_mesh().x_desc("utilisation (%)").y_desc("schedulable flow sets (%)").label_style(("sans-serif", 15)).draw().map_err(err)?;
    for (name, color, get) in &solvers {
        let series: Vec<(f64, f64)> = points.iter().filter_map(|p| get(p).map(|s| (p.util * 100.0, s.schedulability * 100.0))).collect();
        if series.is_empty() {
            continue;
        }
        let c = *color;
        chart
            .draw_series(LineSeries::new(series.clone(), c.stroke_width(2)))
            .map_err(err)?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(series.iter().map(|&(x, y)| Circle::new((x, y), 4, c.filled()))).map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .position(SeriesLabelPosition::LowerLeft)
        .draw()
        .map_err(err)?;

    // (b) solve time, log scale: p50 (solid), p95 (circles), max (crosses).
    let all: Vec<f64> = points
        .iter()
        .flat_map(|p| {
            let mut v = vec![p.ours.p50_ms, p.ours.max_ms];
            if let Some(z) = &p.z3 {
                v.extend([z.p50_ms, z.max_ms]);
            }
            v
        })
        .filter(|&v| v > 0.0)
        .collect();
    let lo = all.iter().copied().fold(1.0, f64::min).max(1e-3) / 2.0;
    let hi = all.iter().copied().fold(1.0, f64::max) * 2.0;
    let mut chart = ChartBuilder::on(&right)
        .caption("(b) solve time", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..umax, (lo..hi).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("utilisation (%)")
        .y_desc("solve time per flow set (ms)")
        .y_label_formatter(&|v| {
            if *v >= 1.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.3}")
            }
        })
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    for (name, color, get) in &solvers {
        let c = *color;
        let pick = |f: fn(&Summary) -> f64| -> Vec<(f64, f64)> { points.iter().filter_map(|p| get(p).map(|s| (p.util * 100.0, f(s).max(lo)))).collect() };
        let p50 = pick(|s| s.p50_ms);
        if p50.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(p50, c.stroke_width(2)))
            .map_err(err)?
            .label(format!("{name} p50"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        let p95 = pick(|s| s.p95_ms);
        chart.draw_series(LineSeries::new(p95.clone(), c.stroke_width(1))).map_err(err)?;
        chart
            .draw_series(p95.iter().map(|&(x, y)| Circle::new((x, y), 4, c.filled())))
            .map_err(err)?
            .label(format!("{name} p95"))
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.filled()));
        chart
            .draw_series(pick(|s| s.max_ms).into_iter().map(|(x, y)| Cross::new((x, y), 5, c.stroke_width(2))))
            .map_err(err)?
            .label(format!("{name} max"))
            .legend(move |(x, y)| Cross::new((x + 10, y), 5, c.stroke_width(2)));
    }
    if let Some(t) = z3_timeout_s {
        let ms = t * 1e3;
        if ms < hi {
            chart
                .draw_series(LineSeries::new(vec![(0.0, ms), (umax, ms)], BLACK.mix(0.4).stroke_width(1)))
                .map_err(err)?
                .label("z3 time limit")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    Ok(())
}
