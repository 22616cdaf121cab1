//! What a scale run leaves: the table a person reads (table.txt), the
//! figure (scale.png: discovery time, memory per participant and fan-out
//! latency against size), and summary.json (the [`ScaleReport`], with the
//! environment record).

use super::{DiscoveryRow, FanoutRow, ScaleReport};
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

/// The discovery table.
pub fn discovery_table(rows: &[DiscoveryRow]) -> String {
    let mut s = String::from(
        "Discovery: N participants over two namespaces, each with a reliable writer and a reader of one topic;\n\
         time from every participant existing until each matched every other's writer and reader.\n",
    );
    let _ = writeln!(s, "{:<22} {:>4} {:>8} {:>13} {:>11} {:>10} {:>15}  note", "system", "N", "matched", "discovery ms", "median ms", "RSS MiB", "KiB/participant");
    for r in rows {
        let _ = writeln!(
            s,
            "{:<22} {:>4} {:>8} {:>13} {:>11} {:>10.1} {:>15.0}  {}",
            r.system,
            r.participants,
            format!("{}/{}", r.matched, r.participants),
            opt(r.discovery_ms, 1),
            opt(r.median_participant_ms, 1),
            r.rss_total_kb as f64 / 1024.0,
            r.rss_per_participant_kb,
            r.note
        );
    }
    s
}

/// The fan-out table: the pooled row of each system and size, with the spread of the readers' p99.
pub fn fanout_table(rows: &[FanoutRow]) -> String {
    let mut s = String::from("Fan-out: one writer, K readers, 32 B at 1 kHz, reliable; latency µs (all readers' samples pooled).\n");
    let _ = writeln!(
        s,
        "{:<22} {:>3} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>17}  method; note",
        "system", "K", "samples", "mean", "p50", "p99", "p99.9", "max", "p99 per reader"
    );
    for r in rows.iter().filter(|r| r.reader.is_none()) {
        let each: Vec<f64> = rows.iter().filter(|x| x.system == r.system && x.readers == r.readers && x.reader.is_some()).filter_map(|x| x.latency_us.p99).collect();
        let spread = match (each.iter().copied().reduce(f64::min), each.iter().copied().reduce(f64::max)) {
            (Some(a), Some(b)) => format!("{a:.1}-{b:.1}"),
            _ => "-".into(),
        };
        let l = &r.latency_us;
        let _ = writeln!(
            s,
            "{:<22} {:>3} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>17}  {}; {}",
            r.system,
            r.readers,
            l.count,
            opt(l.mean, 1),
            opt(l.p50, 1),
            opt(l.p99, 1),
            opt(l.p99_9, 1),
            opt(l.max, 1),
            spread,
            r.method,
            r.note
        );
    }
    s
}

/// The whole table.txt: both tables and the machine's load.
pub fn render(r: &ScaleReport) -> String {
    let e = &r.environment;
    let mut s = discovery_table(&r.discovery);
    s.push('\n');
    s.push_str(&fanout_table(&r.fanout));
    let _ = writeln!(
        s,
        "\n{} ({} CPUs{}), kernel {}; load average {:.2} {:.2} {:.2} at the start, {:.2} {:.2} {:.2} at the end{}.",
        e.cpu_model,
        e.cpus,
        if e.vm { ", VM" } else { "" },
        e.kernel,
        e.load[0],
        e.load[1],
        e.load[2],
        r.load_at_end[0],
        r.load_at_end[1],
        r.load_at_end[2],
        match r.options.with_cyclone {
            true => format!("; cyclonedds (Python) {}, ddsperf {}", r.cyclonedds.python, r.cyclonedds.ddsperf),
            false => String::new(),
        }
    );
    s
}

/// Lines of one system in a panel: (label, points).
type Series = Vec<(String, Vec<(f64, f64)>)>;

fn by_system<T>(rows: &[T], system: impl Fn(&T) -> &str, point: impl Fn(&T) -> Option<(f64, f64)>) -> Series {
    let mut out: Series = Vec::new();
    for r in rows {
        let Some(p) = point(r) else { continue };
        match out.iter_mut().find(|s| s.0 == system(r)) {
            Some(s) => s.1.push(p),
            None => out.push((system(r).to_string(), vec![p])),
        }
    }
    out
}

/// Draws scale.png into `dir`: discovery time, memory per participant, fan-out p50 and p99; None with nothing to draw.
pub fn plot(dir: &Path, r: &ScaleReport) -> Result<Option<PathBuf>> {
    let disc = by_system(&r.discovery, |x| &x.system, |x| Some((f64::from(x.participants), x.discovery_ms?)));
    let mem = by_system(&r.discovery, |x| &x.system, |x| (x.discovery_ms.is_some()).then(|| (f64::from(x.participants), x.rss_per_participant_kb)));
    let pooled: Vec<&FanoutRow> = r.fanout.iter().filter(|x| x.reader.is_none()).collect();
    let mut lat = by_system(&pooled, |x| &x.system, |x| Some((f64::from(x.readers), x.latency_us.p50?)));
    for s in &mut lat {
        s.0 = format!("{} p50", s.0);
    }
    let p99 = by_system(&pooled, |x| &x.system, |x| Some((f64::from(x.readers), x.latency_us.p99?)));
    lat.extend(p99.into_iter().map(|(n, p)| (format!("{n} p99"), p)));
    if disc.is_empty() && lat.is_empty() {
        return Ok(None);
    }
    let png = dir.join("scale.png");
    draw(&png, &disc, &mem, &lat)?;
    Ok(Some(png))
}

/// Draws the three panels into `png`.
fn draw(png: &Path, disc: &Series, mem: &Series, lat: &Series) -> Result<()> {
    let err = |e: &dyn std::fmt::Debug| anyhow!("drawing {}: {e:?}", png.display());
    let root = BitMapBackend::new(png, (1500, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let areas = root.split_evenly((1, 3));
    panel(&areas[0], "Discovery time", "participants", "ms", disc).map_err(|e| err(&e))?;
    panel(&areas[1], "Memory per participant (RSS)", "participants", "KiB", mem).map_err(|e| err(&e))?;
    panel(&areas[2], "Fan-out latency, 32 B 1 kHz", "readers", "µs", lat).map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// One log-log panel with a line per series.
fn panel(area: &DrawingArea<BitMapBackend, plotters::coord::Shift>, title: &str, x: &str, y: &str, series: &Series) -> Result<(), Box<dyn std::error::Error>> {
    let pts = series.iter().flat_map(|s| s.1.iter());
    let (xmax, ymin, ymax) = pts.fold((2.0f64, f64::INFINITY, 1.0f64), |(a, b, c), p| (a.max(p.0), b.min(p.1), c.max(p.1)));
    let ymin = if ymin.is_finite() { (ymin * 0.7).max(0.01) } else { 0.1 };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((0.8f64..xmax * 1.25).log_scale(), (ymin..ymax * 1.6).log_scale())?;
    chart.configure_mesh().x_desc(x).y_desc(y).draw()?;
    for (i, (name, p)) in series.iter().enumerate() {
        let c = Palette99::pick(i).to_rgba();
        chart.draw_series(LineSeries::new(p.iter().copied(), c.stroke_width(2)))?.label(name).legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
        chart.draw_series(p.iter().map(|&q| Circle::new(q, 3, c.filled())))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).position(SeriesLabelPosition::UpperLeft).draw()?;
    Ok(())
}

/// Saves summary.json, table.txt and scale.png into `dir`; returns the table.
pub fn save(dir: &Path, r: &ScaleReport) -> Result<String> {
    detpath::sys::fsutil::write_atomic(&dir.join("summary.json"), &serde_json::to_vec_pretty(r)?)?;
    let table = render(r);
    detpath::sys::fsutil::write_atomic(&dir.join("table.txt"), table.as_bytes())?;
    Ok(table)
}
