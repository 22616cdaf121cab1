//! The page of a `detpath sched bench` result directory (report.json,
//! table.txt, the inter-arrival CDF): the runs' error figures in µs, as the
//! terminal's table, each read from report.json; the figures of the
//! directory; the environment; the tables as printed.

use detpath_instrument::html::env;
use detpath_instrument::html::page::{read_json, Cell, Page, Table};
use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

const REPORT: &str = "report.json";

/// ns as the sched table shows µs: `3.38`, `26.8`, `104`.
fn us(v: &Value) -> String {
    let x = v.as_f64().unwrap_or(f64::NAN) / 1000.0;
    if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

fn int(v: &Value) -> String {
    v.to_string()
}

fn whole(v: &Value) -> String {
    format!("{:.0}", v.as_f64().unwrap_or(f64::NAN))
}

/// The page of a sched bench result directory.
pub fn render(dir: &Path) -> Result<String> {
    let doc = read_json(dir, REPORT)?.context("report.json missing")?;
    let name = dir.canonicalize().unwrap_or(dir.to_path_buf()).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut page = Page::new(&format!("detpath sched bench: {name}"));
    page.section("environment", "Environment");
    env::environment(&mut page, "env-0", REPORT, "/environment", doc.get("environment").unwrap_or(&Value::Null));
    page.section("command-section", "Command");
    env::command(&mut page, env::command_of([Some(&doc), doc.get("environment")].into_iter().flatten()), "detpath sched bench");

    page.section("runs", "Slots against sleep");
    let g = |k: &str| doc.get(k).map(|v| v.to_string()).unwrap_or_else(|| "?".into());
    page.text(&format!(
        "Slots of {} µs, ring {} slots, lead {} slots; {} s per run; {}",
        doc.get("slot_ns").and_then(Value::as_f64).map(|n| n / 1000.0).unwrap_or(f64::NAN),
        g("ring_slots"),
        g("lead_slots"),
        g("duration_s"),
        doc.get("tuning").and_then(Value::as_str).unwrap_or("?")
    ));
    let quad = ["p50", "p99", "p9999", "max"];
    let mut head = vec!["path", "method"];
    head.extend(["IAT error p50 µs", "p99", "p99.99", "max"]);
    head.extend(["release error p50 µs", "p99", "p99.99", "max"]);
    head.extend(["IAT mean ns", "PDV mean ns", "violations", "rt sent", "rt received"]);
    let mut t = Table::new("sched-runs", "Inter-arrival (IAT) and release error per run, µs", &head);
    let mut cost = Table::new(
        "sched-cost",
        "Send call duration (µs), foreign frames at the receiver, frames with an implausible delay (left out)",
        &["path", "method", "send p50 µs", "p99", "p99.99", "max", "foreign", "implausible"],
    );
    let runs = doc.get("runs").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, r) in runs.iter().enumerate() {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
        let mut row = vec![Cell::text(s("datapath")), Cell::text(s("method"))];
        for field in ["iat_error_ns", "release_error_ns"] {
            for q in quad {
                row.push(Cell::figure(REPORT, &doc, &format!("/runs/{i}/{field}/{q}"), us, "-"));
            }
        }
        row.push(Cell::figure(REPORT, &doc, &format!("/runs/{i}/iat_error_ns/mean"), whole, "-"));
        row.push(Cell::figure(REPORT, &doc, &format!("/runs/{i}/pdv_ns/mean"), whole, "-"));
        for f in ["violations", "rt_sent", "rt_received"] {
            row.push(Cell::figure(REPORT, &doc, &format!("/runs/{i}/{f}"), int, "-"));
        }
        t.rows.push(row);
        let mut row = vec![Cell::text(s("datapath")), Cell::text(s("method"))];
        for q in quad {
            row.push(Cell::figure(REPORT, &doc, &format!("/runs/{i}/send_cost_ns/{q}"), us, "-"));
        }
        row.push(Cell::figure(REPORT, &doc, &format!("/runs/{i}/rx_foreign"), int, "-"));
        row.push(Cell::figure(REPORT, &doc, &format!("/runs/{i}/rx_implausible"), int, "-"));
        cost.rows.push(row);
    }
    page.table(&t);
    page.table(&cost);
    if let Some(errs) = doc.get("errors").and_then(Value::as_array).filter(|e| !e.is_empty()) {
        for e in errs {
            page.text_with("sched-error", "missing", &format!("FAILED: {}", e.as_str().unwrap_or("?")));
        }
    }
    figures(&mut page, dir)?;
    if let Ok(text) = std::fs::read_to_string(dir.join("table.txt")) {
        page.details("terminal-tables", "The tables as `detpath sched bench` printed them (table.txt)", &text);
    }
    Ok(page.finish())
}

/// Every SVG figure of the directory (PNG where no SVG of the same name).
fn figures(page: &mut Page, dir: &Path) -> Result<()> {
    let mut files: Vec<std::path::PathBuf> =
        std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    let mut first = true;
    for f in &files {
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        let mime = match ext {
            "svg" => "image/svg+xml",
            "png" if !f.with_extension("svg").is_file() => "image/png",
            _ => continue,
        };
        if first {
            page.section("figures", "Figures");
            first = false;
        }
        let stem = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let caption = match stem.as_str() {
            "iat_cdf" => "CDF of the inter-arrival error per datapath, one line per method (slots, sleep).".to_string(),
            other => other.replace('_', " "),
        };
        let bytes = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
        page.figure_file(&format!("fig-{stem}"), &caption, mime, &bytes);
    }
    Ok(())
}
