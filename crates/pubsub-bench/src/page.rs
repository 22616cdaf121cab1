//! The pub-sub sections of a `detpath pubsub bench` result directory's
//! page (rows.json): the workloads' table, each figure cell naming its row,
//! detpath against Fast DDS when the directory has Fast DDS rows, and the
//! table as the terminal prints it. The CLI puts them into the runs
//! page of the ping-pong harness (`detpath_bench::bench_page::render_with`),
//! which shows the same directory's summary.json.

use crate::fastdds::ratios;
use crate::table as ps;
use detpath_instrument::html::page::{count, read_json, Cell, Page, Table};
use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

/// The file the rows are in.
pub const ROWS: &str = "rows.json";

/// The rows.json of a `detpath pubsub bench` result directory, as read
/// back for its page: the document (what figure cells point into) and its rows.
pub struct PubsubRows {
    doc: Value,
    fig: Vec<ps::RowFigures>,
}

impl PubsubRows {
    /// Reads `dir/rows.json`.
    pub fn read(dir: &Path) -> Result<PubsubRows> {
        let doc = read_json(dir, ROWS)?.with_context(|| format!("{}: no {ROWS}", dir.display()))?;
        let fig = serde_json::from_value(doc.clone()).context("rows.json: not a list of pub-sub rows")?;
        Ok(PubsubRows { doc, fig })
    }

    /// The pub-sub workloads' section: their table, each figure cell naming its row.
    pub fn table_section(&self, page: &mut Page) -> Result<()> {
        page.section("pubsub", "Pub-sub workloads");
        page.table(&pubsub_table(&self.doc, &self.fig));
        let against = ratios::compare(&self.fig);
        if !against.is_empty() {
            page.table(&fastdds_table(&against));
        }
        Ok(())
    }

    /// The pub-sub table as the terminal prints it.
    pub fn terminal_section(&self, page: &mut Page) -> Result<()> {
        let against = ratios::render(&self.fig);
        let text = if against.is_empty() { ps::render_figures(&self.fig) } else { format!("{}\n{against}", ps::render_figures(&self.fig)) };
        page.details("terminal-pubsub-table", "The pub-sub table as `detpath pubsub bench` prints it", &text);
        Ok(())
    }
}

/// The pub-sub table of rows.json, its figure cells naming their row.
fn pubsub_table(rows: &Value, fig: &[ps::RowFigures]) -> Table {
    let mut head = vec!["conf", "system", "wait", "workload", "n"];
    head.extend(ps::COLUMNS.iter().map(|c| c.title));
    head.extend(["lost", "samples/s", "cpu % of a core", "samples/cpu-s"]);
    let mut t = Table::new("pubsub-table", "Pub-sub workloads: one-way latency (RTT/2) in µs, throughput, CPU; median [min-max] over repeats", &head);
    let gs = ps::groups(fig);
    for g in &gs {
        let r0 = g.first();
        let mut row = vec![
            Cell::text(r0.configuration.clone()),
            Cell::text(r0.system.clone()),
            Cell::text(if r0.wait.is_empty() { "-".into() } else { r0.wait.clone() }),
            Cell::text(r0.workload.clone()),
            Cell::text(g.rows.len().to_string()).class("num"),
        ];
        for c in &ps::COLUMNS {
            let text = g.cell(c);
            let one = g.rows.len() == 1 && (c.value)(r0).is_some() && text != "-";
            row.push(match (one, c.pointer) {
                (true, Some(p)) => Cell::figure(ROWS, rows, &format!("/{}{p}", g.rows[0].0), |v| format!("{:.1}", v.as_f64().unwrap_or(f64::NAN)), &text),
                _ => Cell::text(text).class(if g.cell(c) == "-" { "na" } else { "num" }),
            });
        }
        let idx = g.rows[0].0;
        row.push(if g.rows.len() == 1 { Cell::figure(ROWS, rows, &format!("/{idx}/lost"), count, "-") } else { Cell::text(g.lost().to_string()).class("num") });
        row.push(if g.rows.len() == 1 {
            Cell::figure(ROWS, rows, &format!("/{idx}/samples_per_s"), |v| format!("{:.1}", v.as_f64().unwrap_or(f64::NAN)), "n/a")
        } else {
            Cell::text(g.samples_per_s()).class("num")
        });
        row.push(Cell::text(g.cpu_percent()).class("num"));
        row.push(Cell::text(g.work_per_cpu_s()).class("num"));
        t.rows.push(row);
    }
    if gs.iter().any(|g| g.first().p99_is_worst_second() && g.first().latency_us.is_some()) {
        t.notes.push(ps::DDSPERF_NOTE.into());
    }
    t
}

/// detpath against Fast DDS, per configuration and datapath (issue 38's goals).
fn fastdds_table(against: &[ratios::Comparison]) -> Table {
    let mut head = vec!["conf", "system", "wait"];
    head.extend(ratios::HEAD);
    let mut t = Table::new("pubsub-fastdds", ratios::TITLE, &head);
    for c in against {
        let mut row = vec![Cell::text(c.configuration.clone()), Cell::text(c.system.clone()), Cell::text(if c.wait.is_empty() { "-".into() } else { c.wait.clone() })];
        row.extend(ratios::cells(c).into_iter().map(|x| Cell::text(x).class("num")));
        t.rows.push(row);
    }
    t
}
