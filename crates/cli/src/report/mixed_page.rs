//! The mixed-criticality part of a `detpath pubsub bench --workloads mixed`
//! page: mixed.json's arms (control latency and budget violations by
//! cause, bulk rate and how much of its alone rate it kept), issue 39's
//! goals and the scheduler's lines as the terminal prints them, and the
//! latency-over-time figure the bench drew (mixed-timeline.png/svg).

use detpath_instrument::html::page::{Cell, Page, Table};
use detpath_instrument::results::Environment;
use detpath_pubsub_bench::mixed::MixedRow;
use detpath_pubsub_bench::mixed_table;

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

/// The file the mixed bench writes its rows and goals to.
pub const MIXED: &str = "mixed.json";

/// mixed.json of a result directory, as the file has it and as rows.
pub struct Mixed {
    doc: Value,
    rows: Vec<MixedRow>,
    env: Environment,
}

impl Mixed {
    /// Reads `dir/mixed.json`.
    pub fn read(dir: &Path) -> Result<Mixed> {
        let p = dir.join(MIXED);
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        let doc: Value = serde_json::from_str(&text).with_context(|| format!("{}: not JSON", p.display()))?;
        let rows: Vec<MixedRow> =
            serde_json::from_value(doc.get("rows").cloned().unwrap_or(Value::Array(Vec::new()))).with_context(|| format!("{}: rows", p.display()))?;
        let env: Environment = doc.get("environment").cloned().and_then(|e| serde_json::from_value(e).ok()).unwrap_or_default();
        Ok(Mixed { doc, rows, env })
    }

    /// The arms' table and the timeline figure.
    pub fn table_section(&self, dir: &Path, page: &mut Page) -> Result<()> {
        page.section("mixed", "Mixed criticality: control beside bulk");
        page.table(&arms_table(&self.doc, &self.rows));
        for (ext, mime) in [("svg", "image/svg+xml"), ("png", "image/png")] {
            let f = dir.join(format!("mixed-timeline.{ext}"));
            if let Ok(bytes) = std::fs::read(&f) {
                page.figure_file(
                    "fig-mixed-timeline",
                    "Control one-way latency over the run (median and worst per bucket) against its budget, bulk on and bulk alone",
                    mime,
                    &bytes,
                );
                break;
            }
        }
        Ok(())
    }

    /// The goals and the scheduler's lines, as `detpath pubsub bench` prints them.
    pub fn terminal_section(&self, page: &mut Page) -> Result<()> {
        page.pre("terminal-mixed-table", &mixed_table::render(&self.rows, &self.env));
        Ok(())
    }
}

/// Shows a number with `d` decimals.
fn fixed(d: usize) -> impl Fn(&Value) -> String {
    move |v| v.as_f64().map_or_else(|| "-".into(), |x| format!("{x:.d$}"))
}

/// One row per arm, each figure naming its place in mixed.json.
fn arms_table(doc: &Value, rows: &[MixedRow]) -> Table {
    let head = [
        "conf",
        "system",
        "arm",
        "control p50 µs",
        "p99 µs",
        "max µs",
        "budget µs",
        "over budget",
        "network",
        "reader late",
        "retransmission",
        "sent late",
        "bulk Mbit/s",
        "bulk kept %",
    ];
    let mut t = Table::new("mixed-table", "Control topic one-way latency (RTT/2) in µs, budget violations by cause; bulk rate beside control and the share of its alone rate it kept", &head);
    for (i, r) in rows.iter().enumerate() {
        let at = |p: &str| format!("/rows/{i}/{p}");
        let fig = |p: &str, d: usize| Cell::figure(MIXED, doc, &at(p), fixed(d), "-");
        let mut row = vec![Cell::text(r.configuration.clone()), Cell::text(r.system.clone()), Cell::text(r.arm.clone())];
        row.extend([fig("control/latency_us/p50", 3), fig("control/latency_us/p99", 3), fig("control/latency_us/max", 3), fig("control/budget_us", 1)]);
        row.push(fig("control/budget_violations", 0));
        for c in ["network", "reader_late", "retransmission", "sent_late"] {
            row.push(fig(&format!("control/engine_budget/causes/{c}"), 0));
        }
        row.push(fig("bulk/mbps", 1));
        // kept_fraction is a fraction in the file, shown in percent.
        row.push(Cell::figure(MIXED, doc, &at("bulk/kept_fraction"), |v| v.as_f64().map_or_else(|| "-".into(), |x| format!("{:.1}", x * 100.0)), "-"));
        t.rows.push(row);
    }
    t
}
