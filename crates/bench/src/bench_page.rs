//! The page of a `detpath bench` result directory (summary.json and the
//! records), and the runs part of a `detpath pubsub bench` one (the same,
//! plus rows.json, whose sections the pub-sub harness draws):
//! the tables as the terminal prints them, with every figure read from the
//! file; the figures of `detpath report` inline; the tail by cause; the
//! environment and the command.

use detpath_instrument::html::{bars, env};
use detpath_instrument::html::page::{count, read_json, Cell, Page, Table};
use detpath_instrument::report::{self, LoadedRun};
use detpath_instrument::results::RunResult;
use detpath_instrument::stats::Quantile;
use detpath_instrument::table::{self, fmt_us, fmt_us_f, thousands};
use anyhow::Result;
use serde_json::Value;
use std::path::Path;

const SUMMARY: &str = "summary.json";

/// A latency in ns as the terminal tables show it, in µs (`9.44`, `248.3`).
fn ns(v: &Value) -> String {
    match v.as_u64() {
        Some(n) => fmt_us(n),
        None => fmt_us_f(v.as_f64().unwrap_or(f64::NAN)),
    }
}

/// The text of a statistic the sample count cannot support, as the terminal's.
fn missing(s: &detpath_instrument::Summary, q: Option<Quantile>) -> String {
    match q {
        Some(q) => table::cell(s, q),
        None => "-".into(),
    }
}


/// The page of a `detpath bench` result directory; a pub-sub one is
/// composed with [`render_with`] (the CLI adds the pub-sub harness's sections).
pub fn render(dir: &Path) -> Result<String> {
    render_with(dir, "detpath bench", |_| Ok(()), |_| Ok(()))
}

/// The page of a result directory of runs (summary.json and their records)
/// made by the command `what`, with a harness's own sections: `before` the
/// latency tables (after the environment and command), `after` the runs.
pub fn render_with(dir: &Path, what: &str, before: impl FnOnce(&mut Page) -> Result<()>, after: impl FnOnce(&mut Page) -> Result<()>) -> Result<String> {
    let summary = read_json(dir, SUMMARY)?;
    let runs: Vec<LoadedRun> = if summary.is_some() { report::load_dirs(&[dir.to_path_buf()])? } else { Vec::new() };
    let name = dir.canonicalize().unwrap_or(dir.to_path_buf()).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut page = Page::new(&format!("{what}: {name}"));
    let doc = summary.unwrap_or(Value::Null);
    let rs: Vec<RunResult> = runs.iter().map(|r| r.run.clone()).collect();

    page.section("environment", "Environment");
    environments(&mut page, &doc);
    page.section("command-section", "Command");
    let first = doc.pointer("/runs/0");
    env::command(&mut page, env::command_of([Some(&doc), first, first.and_then(|r| r.get("environment"))].into_iter().flatten()), what);

    before(&mut page)?;
    if !rs.is_empty() {
        page.section("latency", "Latency");
        page.table(&paper_table(&doc, &rs));
        page.table(&detail_table(&doc, &rs));
        page.section("loss", "Loss, server time, send lateness");
        page.table(&loss_table(&doc, &rs));
        if rs.iter().any(|r| r.cpu.is_some()) {
            page.section("cpu", "CPU");
            page.table(&cpu_table(&doc, &rs));
        }
        if rs.iter().any(|r| r.tail.is_some()) {
            page.section("tail", "Tail by cause");
            page.table(&tail_table(&doc, &rs));
            page.figure_svg(
                "fig-tail-causes",
                "The slow rounds of each run by cause (share of the rounds above the run's tail threshold).",
                &bars::tail_causes(&runs),
            );
        }
        let figs = report::svg_figures(&runs)?;
        if !figs.is_empty() {
            page.section("figures", "Figures");
            for f in figs {
                page.figure_svg(&format!("fig-{}", f.name), caption(f.name), &f.svg);
            }
        }
        page.section("runs", "Runs");
        page.pre("run-notes", &runs_note(&rs));
        page.details("terminal-tables", "The tables as `detpath report` prints them", &table::render(&rs));
    }
    after(&mut page)?;
    Ok(page.finish())
}

fn caption(name: &str) -> &'static str {
    match name {
        "ccdf" => "CCDF of one-way latency: P(latency > x) on log-log axes, one line per run; the line that drops first has the shorter tail.",
        "timeline" => "One-way latency over the run; the tail threshold dashed, the largest gaps of the polling threads as bands coloured by cause.",
        "boxplot" => "One-way latency per datapath: box p25-p75, line at the median, whiskers p0.01-p99.99, every sample beyond as a dot.",
        "cpu_latency" => "Latency against CPU: the worker threads' CPU µs per round against the median (dot) and p99.9 (triangle).",
        "pdv" => "Packet delay variation of the pub-sub runs: P(PDV > x), PDV = latency - the run's minimum.",
        _ => "",
    }
}

/// One record per distinct host (host, kernel, CPU), as the terminal's environment line.
fn environments(page: &mut Page, doc: &Value) {
    let Some(runs) = doc.get("runs").and_then(Value::as_array).filter(|r| !r.is_empty()) else {
        page.text_with(
            "env-0",
            "missing",
            "No environment record: this directory has no summary.json (a pub-sub directory whose runs were throughput only keeps none).",
        );
        return;
    };
    let key = |e: &Value| ["hostname", "kernel", "cpu_model"].map(|k| e.get(k).cloned().unwrap_or(Value::Null));
    let mut seen = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let e = r.get("environment").unwrap_or(&Value::Null);
        if seen.contains(&key(e)) {
            continue;
        }
        seen.push(key(e));
        env::environment(page, &format!("env-{}", seen.len() - 1), SUMMARY, &format!("/runs/{i}/environment"), e);
    }
}

type Metric = (&'static str, &'static str, Option<Quantile>);

/// Paper 000's Table 1: rows by datapath, columns by statistic and configuration.
fn paper_table(doc: &Value, runs: &[RunResult]) -> Table {
    let configs = table::configurations(runs);
    let multi = configs.len() > 1;
    let metrics: [Metric; 5] = [
        ("Median", "median_ns", Some(Quantile::MEDIAN)),
        ("p99", "p99_ns", Some(Quantile::P99)),
        ("p99.99", "p99_99_ns", Some(Quantile::P99_99)),
        ("Max", "max_ns", Some(Quantile::MAX)),
        ("Jitter", "jitter_ns", None),
    ];
    let mut caption = "One-way latency (RTT/2) in µs".to_string();
    if runs.iter().all(|r| r.config.size == runs[0].config.size && r.config.period_ns == runs[0].config.period_ns) {
        caption.push_str(&format!(", {} B probes at {:.1} Mbit/s", runs[0].config.size, runs[0].config.rate_mbps()));
    }
    if !multi {
        caption.push_str(&format!(", configuration {}", configs[0]));
    }
    let mut t = Table { id: "table1".into(), caption, ..Table::default() };
    let mut h1 = vec![("Datapath".to_string(), 1)];
    let mut h2 = vec![(String::new(), 1)];
    for (m, _, _) in &metrics {
        h1.push((m.to_string(), configs.len()));
        h2.extend(configs.iter().map(|c| (c.clone(), 1)));
    }
    t.head.push(h1);
    if multi {
        t.head.push(h2);
    }
    let mut labels: Vec<String> = Vec::new();
    for r in runs {
        let l = table::row_label(r, runs);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let mut partial = false;
    for l in &labels {
        let mut row = vec![Cell::text(l.clone())];
        for (_, field, q) in &metrics {
            for c in &configs {
                let found = runs.iter().enumerate().rev().find(|(_, r)| &r.configuration == c && &table::row_label(r, runs) == l);
                row.push(match found {
                    None => Cell::text("-").class("num"),
                    Some((i, r)) => {
                        let cell = Cell::figure(SUMMARY, doc, &format!("/runs/{i}/latency/{field}"), ns, &missing(&r.latency, *q));
                        if r.complete {
                            cell
                        } else {
                            partial = true;
                            cell.suffix("*")
                        }
                    }
                });
            }
        }
        t.rows.push(row);
    }
    if multi {
        t.notes.push("D = Default, D&S = Default & Stress, T = Tuned, T&S = Tuned & Stress (paper 000, Table 1).".into());
    }
    if partial {
        t.notes.push("* incomplete run (interrupted): statistics of the rounds measured.".into());
    }
    t
}

fn run_label(r: &RunResult) -> String {
    format!("{} {}{}", r.config.datapath, r.configuration, if r.complete { "" } else { "*" })
}

/// Every percentile of every run.
fn detail_table(doc: &Value, runs: &[RunResult]) -> Table {
    let cols: [Metric; 12] = [
        ("samples", "count", None),
        ("min", "min_ns", None),
        ("mean", "mean_ns", None),
        ("median", "median_ns", Some(Quantile::MEDIAN)),
        ("p99", "p99_ns", Some(Quantile::P99)),
        ("p99.9", "p99_9_ns", Some(Quantile::P99_9)),
        ("p99.99", "p99_99_ns", Some(Quantile::P99_99)),
        ("p99.999", "p99_999_ns", Some(Quantile::P99_999)),
        ("p99.9999", "p99_9999_ns", Some(Quantile::P99_9999)),
        ("max", "max_ns", Some(Quantile::MAX)),
        ("jitter", "jitter_ns", None),
        ("std dev", "stddev_ns", None),
    ];
    let head: Vec<&str> = std::iter::once("Run").chain(cols.iter().map(|c| c.0)).collect();
    let mut t = Table::new("latency-per-run", "Latency per run (one-way = RTT/2, µs; exact nearest-rank percentiles over all samples)", &head);
    for (i, r) in runs.iter().enumerate() {
        let mut row = vec![Cell::text(run_label(r))];
        for (_, field, q) in &cols {
            let show = if *field == "count" { count } else { ns };
            row.push(Cell::figure(SUMMARY, doc, &format!("/runs/{i}/latency/{field}"), show, &missing(&r.latency, *q)));
        }
        t.rows.push(row);
    }
    t
}

/// Loss, the server's processing time and the send lateness per run.
fn loss_table(doc: &Value, runs: &[RunResult]) -> Table {
    let mut t = Table::new("loss-per-run", "Loss, server processing time and send lateness per run (µs)", &detpath_instrument::table::LOSS_COLUMNS);
    for (i, r) in runs.iter().enumerate() {
        let mut row = vec![Cell::text(run_label(r))];
        for f in ["sent", "lost", "duplicates", "reordered", "corrupted", "late"] {
            row.push(Cell::figure(SUMMARY, doc, &format!("/runs/{i}/loss/{f}"), count, "-"));
        }
        for (key, s) in [("server_time", &r.server_time), ("send_lateness", &r.send_lateness)] {
            for (f, q) in [("median_ns", Quantile::MEDIAN), ("p99_99_ns", Quantile::P99_99), ("max_ns", Quantile::MAX)] {
                row.push(Cell::figure(SUMMARY, doc, &format!("/runs/{i}/{key}/{f}"), ns, &missing(s, Some(q))));
            }
        }
        row.push(Cell::text(match (&r.complete, &r.interrupted) {
            (true, _) => "yes".into(),
            (false, Some(why)) => format!("no: {why}"),
            (false, None) => "no".into(),
        }));
        t.rows.push(row);
    }
    t
}


/// CPU beside latency, for the runs that recorded it.
fn cpu_table(doc: &Value, runs: &[RunResult]) -> Table {
    let head = ["Run", "median µs", "p99.9 µs", "cpu s", "% core", "cpu µs/round", "rounds/cpu-s", "cores busy"];
    let mut t = Table::new("cpu-per-run", "CPU per run (threads' user + system time; % core = thread CPU / run wall time; cores busy from /proc/stat)", &head);
    for (i, r) in runs.iter().enumerate() {
        let Some(cpu) = &r.cpu else { continue };
        let shares: Vec<String> =
            cpu.threads.iter().map(|th| format!("{} {}", th.name, r.core_share(&th.name).map(detpath_instrument::table::fmt_pct).unwrap_or_else(|| "-".into()))).collect();
        let cores: Vec<String> = cpu.cores.iter().map(|c| format!("cpu{} {}", c.core, detpath_instrument::table::fmt_pct(c.busy))).collect();
        t.rows.push(vec![
            Cell::text(run_label(r)),
            Cell::figure(SUMMARY, doc, &format!("/runs/{i}/latency/median_ns"), ns, &missing(&r.latency, Some(Quantile::MEDIAN))),
            Cell::figure(SUMMARY, doc, &format!("/runs/{i}/latency/p99_9_ns"), ns, &missing(&r.latency, Some(Quantile::P99_9))),
            Cell::text(format!("{:.2}", cpu.cpu_s())).class("num"),
            Cell::text(shares.join(", ")),
            Cell::text(r.cpu_s_per_1k_rounds().map(|s| format!("{:.1}", s * 1000.0)).unwrap_or_else(|| "-".into())).class("num"),
            Cell::figure(SUMMARY, doc, &format!("/runs/{i}/cpu/work_per_cpu_s"), |v| thousands(v.as_f64().unwrap_or(0.0).round() as u64), "-"),
            Cell::text(if cores.is_empty() { "-".into() } else { cores.join(", ") }),
        ]);
    }
    t
}

/// The slow rounds of each run by cause (the terminal's tail lines, as columns).
fn tail_table(doc: &Value, runs: &[RunResult]) -> Table {
    let cols: [(&str, &str); 12] = [
        ("threshold µs", "threshold_us"),
        ("slow rounds", "rounds"),
        ("client sent late", "client_late"),
        ("server slow", "server_slow"),
        ("thread descheduled", "descheduled"),
        ("interrupt/softirq", "interrupt"),
        ("hypervisor steal", "steal"),
        ("kernel time", "kernel"),
        ("softirq deferred", "ksoftirqd"),
        ("unexplained", "unexplained"),
        ("of which no gap", "unexplained_no_gap"),
        ("gaps not kept", "gaps_not_kept"),
    ];
    let head: Vec<&str> = std::iter::once("Run").chain(cols.iter().map(|c| c.0)).chain(["kernel (traced)"]).collect();
    let mut t = Table::new("tail-per-run", "Rounds above each run's tail threshold, by cause", &head);
    for (i, r) in runs.iter().enumerate() {
        let Some(tail) = &r.tail else { continue };
        let mut row = vec![Cell::text(format!("{} ({})", table::row_label(r, runs), r.configuration))];
        for (_, f) in cols {
            let show = if f == "threshold_us" { |v: &Value| format!("{:.1}", v.as_f64().unwrap_or(f64::NAN)) } else { count };
            row.push(Cell::figure(SUMMARY, doc, &format!("/runs/{i}/tail/{f}"), show, "-"));
        }
        let traced: Vec<String> = tail.kernel_traced.iter().map(|(k, n)| format!("{n} {k}")).collect();
        row.push(Cell::text(if traced.is_empty() { "-".into() } else { traced.join(", ") }));
        t.rows.push(row);
        t.notes.push(format!("{}: {}", run_label(r), tail.method));
    }
    t
}

/// The run configurations and notes (the terminal's lines under the environment).
fn runs_note(runs: &[RunResult]) -> String {
    table::environment_note(runs).lines().filter(|l| !l.starts_with("Environment:")).map(|l| format!("{}\n", l.trim_start())).collect()
}
