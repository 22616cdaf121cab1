//! `detpath report <result dirs...> [--out DIR]`: prints the tables of saved
//! benchmark results and renders their plots (box plot, CCDF, latency over
//! time and, for runs that recorded their CPU, latency against CPU; each as
//! PNG and SVG). With `--html`: one self-contained page per result
//! directory instead ([`pages`]), for bench, pub-sub bench,
//! sched bench and classify bench results; its path is printed.

mod classify_page;
mod mixed_page;
mod pages;

use anyhow::{bail, Context};
use detpath_instrument::report;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `detpath report`: the result directories, where plots go,
/// and whether to print JSON or skip the plots.
#[derive(clap::Args)]
#[command(
    after_help = "Exit codes: 0 tables printed and plots written (with --html: the pages written, their paths printed); 2 an error (no result directory, no runs, a plot or page that could not be written)."
)]
pub struct Args {
    /// Result directories written by `detpath bench` (results/<timestamp>).
    /// A directory holding such directories (e.g. `results`) stands for the
    /// newest one in it.
    #[arg(required = true, value_name = "RESULT_DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where to write the plots [default: <first result dir>/report].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the runs as one JSON document (the summary.json runs of every directory) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Tables only, no plots.
    #[arg(long)]
    pub no_plots: bool,
    /// Write one self-contained HTML page per result directory (DIR/report.html: tables, figures, environment, command; no network needed to view it) and print its path, instead of the tables and plot files. Also reads `detpath sched bench` directories and `detpath classify bench --json` output (a directory of .json files, or one file: FILE.html beside it).
    #[arg(long, conflicts_with_all = ["json", "no_plots", "out"])]
    pub html: bool,
}

/// A result directory, or the newest result directory inside `p`.
fn resolve(p: &Path) -> anyhow::Result<PathBuf> {
    if p.join("summary.json").is_file() {
        return Ok(p.to_path_buf());
    }
    if !p.is_dir() {
        bail!("{}: no such result directory (expected a directory made by `detpath bench`)", p.display());
    }
    let mut subs: Vec<PathBuf> = std::fs::read_dir(p)
        .with_context(|| format!("reading {}", p.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|d| d.join("summary.json").is_file())
        .collect();
    subs.sort();
    match subs.pop() {
        Some(newest) => {
            eprintln!("detpath report: {} is not a result directory; using the newest one in it, {}", p.display(), newest.display());
            Ok(newest)
        }
        None => bail!("{}: no summary.json here or in its subdirectories: run `detpath bench` first, then pass its results/<timestamp> directory", p.display()),
    }
}

/// A result `--html` can show at `p`, or the newest one in the directory `p`.
fn resolve_html(p: &Path) -> anyhow::Result<PathBuf> {
    let first = match pages::kind(p) {
        Ok(_) => return Ok(p.to_path_buf()),
        Err(e) => e,
    };
    if p.is_dir() {
        let mut subs: Vec<PathBuf> = std::fs::read_dir(p)
            .with_context(|| format!("reading {}", p.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|d| d.is_dir() && pages::kind(d).is_ok())
            .collect();
        subs.sort();
        if let Some(newest) = subs.pop() {
            eprintln!("detpath report: {} is not a result directory; using the newest one in it, {}", p.display(), newest.display());
            return Ok(newest);
        }
    }
    Err(first)
}

/// `--html`: writes each result's page and prints its path, one a line.
fn run_html(a: &Args) -> anyhow::Result<i32> {
    let dirs = a.dirs.iter().map(|d| resolve_html(d)).collect::<anyhow::Result<Vec<_>>>()?;
    let mut stdout = std::io::stdout().lock();
    for d in dirs {
        let page = pages::write(&d)?;
        let _ = writeln!(stdout, "{}", page.display());
    }
    Ok(0)
}

/// Loads the runs of every result directory, prints their tables (or JSON)
/// and writes the plots; returns 0 (errors are exit code 2, by `main`).
pub fn run(a: Args) -> anyhow::Result<i32> {
    if a.html {
        return run_html(&a);
    }
    let dirs = a.dirs.iter().map(|d| resolve(d)).collect::<anyhow::Result<Vec<_>>>()?;
    let runs = report::load_dirs(&dirs)?;
    if runs.is_empty() {
        bail!("no runs in {}", dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "));
    }
    // Writes to stdout ignore a closed pipe (`detpath report ... | head`).
    let mut stdout = std::io::stdout().lock();
    if a.json {
        let v: Vec<&detpath_instrument::RunResult> = runs.iter().map(|r| &r.run).collect();
        let _ = writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?);
    } else {
        let _ = write!(stdout, "{}", report::tables(&runs));
    }
    if !a.no_plots {
        let out = a.out.clone().unwrap_or_else(|| dirs[0].join("report"));
        let files = report::render(&runs, &out)?;
        let mut say = |s: String| {
            if a.json {
                eprintln!("{s}");
            } else {
                let _ = writeln!(stdout, "{s}");
            }
        };
        say(String::new());
        say(format!("plots written to {}:", out.display()));
        for f in files {
            say(format!("  {}", f.display()));
        }
    }
    let incomplete = runs.iter().filter(|r| !r.run.complete).count();
    if incomplete > 0 {
        eprintln!("detpath report: {incomplete} run(s) did not complete (marked *)");
    }
    Ok(0)
}
