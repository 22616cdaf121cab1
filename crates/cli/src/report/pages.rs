//! `detpath report DIR --html`: the page of each result kind, composed
//! from the harnesses' pages. One self-contained HTML page per result
//! directory, for a person to open and see a run at a glance.
//!
//! The page needs nothing outside itself: the style and the one small
//! script are inline, the figures inline SVG (drawn by the same code as
//! `detpath report`'s files) or `data:` URIs, and a content security policy
//! refuses every load from elsewhere, so a page that tried would say so in
//! the browser's console. It shows the tables as the terminal prints them
//! (latencies in µs with decimals), the figures (CCDF, the tail by cause,
//! the timeline with its causes, ...), the environment record and the
//! command that made the result.
//!
//! Every figure in a table names where it comes from: `data-json` holds the
//! file of the result and an RFC 6901 pointer into it
//! (`summary.json#/runs/0/latency/p99_ns`), `data-value` the number as the
//! file has it; a test (crates/cli/tests/report_html.rs) reads them back in
//! a real browser and checks them against the file. The script marks the
//! document `data-ok="1"` once it has loaded with no error and every figure
//! laid out with a size.
//!
//! Result directories read: `detpath bench` (summary.json and the records
//! CSVs), `detpath pubsub bench` (the same and rows.json, or mixed.json
//! for `--workloads mixed`: its arms, goals and timeline), `detpath sched
//! bench` (report.json and its figures), and `detpath classify bench
//! --json` output (a directory of such files, or one file).

use super::classify_page;
use super::mixed_page::{Mixed, MIXED};
use detpath_bench::bench_page;
use detpath_pubsub_bench::page::{PubsubRows, ROWS};
use detpath_instrument::html::{env, page};
use detpath_sched_bench::page as sched_page;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// What a result directory holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `detpath bench` (summary.json) or `detpath pubsub bench` (rows.json and summary.json).
    Bench,
    /// `detpath sched bench` (report.json).
    Sched,
    /// `detpath classify bench --json` documents.
    Classify(Vec<PathBuf>),
}

/// The page's file name in a result directory.
pub const PAGE: &str = "report.html";

fn is_sched(p: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(p) else { return false };
    serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| v.get("runs").is_some() && v.get("slot_ns").is_some())
}

fn is_classify(p: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(p) else { return false };
    serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| classify_page::cells(&v).is_some())
}

/// What `path` holds: a result directory of one of the benchmarks, or a
/// classify bench JSON file.
pub fn kind(path: &Path) -> Result<Kind> {
    if path.is_file() {
        if is_classify(path) {
            return Ok(Kind::Classify(vec![path.to_path_buf()]));
        }
        bail!("{}: not the JSON of `detpath classify bench --json` (pass a result directory for the other benchmarks)", path.display());
    }
    if !path.is_dir() {
        bail!("{}: no such result directory", path.display());
    }
    if path.join("summary.json").is_file() || path.join("rows.json").is_file() {
        return Ok(Kind::Bench);
    }
    if is_sched(&path.join("report.json")) {
        return Ok(Kind::Sched);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("reading {}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json") && is_classify(p))
        .collect();
    files.sort();
    if !files.is_empty() {
        return Ok(Kind::Classify(files));
    }
    bail!(
        "{}: no result here: expected summary.json (detpath bench), rows.json (detpath pubsub bench), report.json (detpath sched bench) \
         or the output of `detpath classify bench --json` saved as a .json file",
        path.display()
    )
}

/// The page of the result at `path` (see [`kind`]).
pub fn render(path: &Path) -> Result<String> {
    match kind(path)? {
        Kind::Bench if path.join(ROWS).is_file() => {
            let rows = PubsubRows::read(path)?;
            // The paper's workloads and mixed together: both parts.
            let mixed = if path.join(MIXED).is_file() { Some(Mixed::read(path)?) } else { None };
            bench_page::render_with(
                path,
                "detpath pubsub bench",
                |p| {
                    rows.table_section(p)?;
                    mixed.as_ref().map_or(Ok(()), |m| m.table_section(path, p))
                },
                |p| {
                    rows.terminal_section(p)?;
                    mixed.as_ref().map_or(Ok(()), |m| m.terminal_section(p))
                },
            )
        }
        Kind::Bench if path.join(MIXED).is_file() => {
            let mixed = Mixed::read(path)?;
            bench_page::render_with(path, "detpath pubsub bench --workloads mixed", |p| mixed.table_section(path, p), |p| mixed.terminal_section(p))
        }
        Kind::Bench => bench_page::render(path),
        Kind::Sched => sched_page::render(path),
        Kind::Classify(files) => {
            let title = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let mut page = page::Page::new(&format!("detpath classify bench: {title}"));
            let mut docs = Vec::new();
            for f in &files {
                let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
                docs.push(serde_json::from_str::<serde_json::Value>(&text).with_context(|| format!("{}: not JSON", f.display()))?);
            }
            page.section("command-section", "Command");
            env::command(&mut page, env::command_of(docs.iter().flat_map(|d| [Some(d), d.get("environment")]).flatten()), "detpath classify bench --json");
            for (n, (f, doc)) in files.iter().zip(&docs).enumerate() {
                let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                classify_page::section(&mut page, n, &name, doc);
            }
            Ok(page.finish())
        }
    }
}

/// Where the page of `path` goes: `report.html` in a result directory,
/// `<name>.html` beside a classify JSON file.
pub fn page_path(path: &Path) -> PathBuf {
    if path.is_file() {
        path.with_extension("html")
    } else {
        path.join(PAGE)
    }
}

/// Writes the page of the result at `path` (atomically) and returns its path.
pub fn write(path: &Path) -> Result<PathBuf> {
    let html = render(path)?;
    let out = page_path(path);
    detpath::sys::fsutil::write_atomic(&out, html.as_bytes()).with_context(|| format!("writing {}", out.display()))?;
    Ok(out)
}
