//! Published figures cannot drift from their data: every table in README.md
//! and the book (docs/book/**/*.md) whose last column is `source` is a
//! citation table. Each row names one file under docs/results in that column;
//! the file must exist, the row's `machine` cell must be the CPU model the
//! file itself recorded (its `Environment: ... CPU <model> (N CPUs)` line,
//! the `environment.cpu_model` of its JSON, or of the JSON of the same run
//! beside a .txt; a file that recorded none backs no figure), and every number in the
//! row's other cells (the first, the row's label, aside) must be in the file,
//! at the precision the page prints it (a header saying `Mpps` scales by 10^6).
//!
//! Also: where a table has a ddsperf row, a p99 column says whose p99 it is
//! ("ddsperf worst 1 s p99", or "exact" for detpath's): ddsperf reports a p99
//! per one-second window, detpath one over all samples.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![repo().join("README.md")];
    walk(&repo().join("docs/book"), &mut out);
    out.sort();
    out
}

/// A Markdown table: header cells and body rows, with the line each starts on.
struct Table {
    line: usize,
    header: Vec<String>,
    rows: Vec<(usize, Vec<String>)>,
}

fn cells(line: &str) -> Vec<String> {
    let t = line.trim().trim_start_matches('|').trim_end_matches('|');
    t.split('|').map(|c| c.trim().to_string()).collect()
}

fn tables(text: &str) -> Vec<Table> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut in_fence = false;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        let is_table = !in_fence && lines[i].trim_start().starts_with('|') && lines.get(i + 1).is_some_and(|l| l.trim_start().starts_with("|-") || l.trim_start().starts_with("| -"));
        if !is_table {
            i += 1;
            continue;
        }
        let mut t = Table { line: i + 1, header: cells(lines[i]), rows: Vec::new() };
        i += 2;
        while i < lines.len() && lines[i].trim_start().starts_with('|') {
            t.rows.push((i + 1, cells(lines[i])));
            i += 1;
        }
        out.push(t);
    }
    out
}

/// Every number in a text, thousands separators removed (`1,000,000` is 1000000).
fn numbers(text: &str) -> Vec<(f64, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit() && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.'));
        if !starts {
            i += 1;
            continue;
        }
        let mut s = String::new();
        let mut decimals = None;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_digit() {
                s.push(c as char);
                if let Some(d) = decimals.as_mut() {
                    *d += 1;
                }
            } else if c == b',' && decimals.is_none() && i + 3 < b.len() + 1 && b.get(i + 1..i + 4).is_some_and(|n| n.iter().all(u8::is_ascii_digit)) && !b.get(i + 4).is_some_and(u8::is_ascii_digit) {
                // a thousands separator: exactly three digits follow
            } else if c == b'.' && decimals.is_none() && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                s.push('.');
                decimals = Some(0);
            } else {
                break;
            }
            i += 1;
        }
        if let Ok(v) = s.parse::<f64>() {
            out.push((v, decimals.unwrap_or(0)));
        }
    }
    out
}

/// The CPU model a results file recorded, or "not recorded".
fn recorded_machine(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    if let Some(l) = text.lines().find(|l| l.starts_with("Environment: ")) {
        if let Some(at) = l.find(", CPU ") {
            let rest = &l[at + 6..];
            if let Some(end) = rest.find(" (") {
                return rest[..end].to_string();
            }
        }
    }
    let json_path = if path.extension().is_some_and(|x| x == "json") { path.to_path_buf() } else { path.with_extension("json") };
    if let Ok(j) = std::fs::read_to_string(&json_path) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&j) {
            if let Some(m) = find_cpu_model(&v) {
                return m;
            }
        }
    }
    "not recorded".into()
}

fn find_cpu_model(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Object(o) => {
            if let Some(m) = o.get("environment").and_then(|e| e.get("cpu_model")).and_then(|m| m.as_str()) {
                return Some(m.to_string());
            }
            o.values().find_map(find_cpu_model)
        }
        serde_json::Value::Array(a) => a.iter().take(3).find_map(find_cpu_model),
        _ => None,
    }
}

/// What is wrong with one page's citation tables (empty: nothing). `read`
/// gives a cited file's path and text.
fn check_page(page: &str, text: &str, root: &Path) -> Vec<String> {
    let mut errs = Vec::new();
    for t in tables(text) {
        let has_ddsperf = t.rows.iter().any(|(_, r)| r.iter().any(|c| c.contains("ddsperf")));
        if has_ddsperf {
            for h in t.header.iter().filter(|h| h.contains("p99")) {
                if !(h.contains("worst 1 s") || h.contains("exact")) {
                    errs.push(format!("{page}:{}: column `{h}` beside ddsperf: say whose p99 it is (\"ddsperf worst 1 s p99\" or detpath's \"exact\")", t.line));
                }
            }
        }
        if t.header.last().map(|h| h.to_lowercase()) != Some("source".into()) {
            continue;
        }
        let Some(mcol) = t.header.iter().position(|h| h.eq_ignore_ascii_case("machine")) else {
            errs.push(format!("{page}:{}: a citation table needs a `machine` column", t.line));
            continue;
        };
        let scol = t.header.len() - 1;
        for (line, row) in &t.rows {
            if row.len() != t.header.len() {
                errs.push(format!("{page}:{line}: {} cells, the header has {}", row.len(), t.header.len()));
                continue;
            }
            let src = row[scol].trim_matches('`');
            if !src.starts_with("docs/results/") {
                errs.push(format!("{page}:{line}: source `{src}` is not a file under docs/results/"));
                continue;
            }
            let path = root.join(src);
            let Ok(file) = std::fs::read_to_string(&path) else {
                errs.push(format!("{page}:{line}: cites {src}, which does not exist"));
                continue;
            };
            let machine = recorded_machine(&path);
            if row[mcol] != machine {
                errs.push(format!("{page}:{line}: machine `{}`, but {src} recorded `{machine}`", row[mcol]));
            } else if machine == "not recorded" {
                // A figure is published only from a file that says where it ran.
                errs.push(format!("{page}:{line}: {src} recorded no machine: re-run it (docs/record_run.sh for a command that records none) or drop the row"));
            }
            let have = numbers(&file);
            for (c, cell) in row.iter().enumerate() {
                if c == 0 || c == mcol || c == scol {
                    continue;
                }
                let scale = if t.header[c].contains("Mpps") { 1e6 } else { 1.0 };
                for (v, d) in numbers(cell) {
                    let tol = 0.5 * 10f64.powi(-(d as i32)) * scale * (1.0 + 1e-9);
                    let want = v * scale;
                    if !have.iter().any(|(x, _)| (x - want).abs() <= tol) {
                        errs.push(format!("{page}:{line}: `{}` ({}) is not in {src}", cell, t.header[c]));
                    }
                }
            }
        }
    }
    errs
}

#[test]
fn every_cited_figure_is_in_its_file_with_the_machine_the_file_recorded() {
    let root = repo();
    let mut errs = Vec::new();
    let mut rows = 0;
    for p in pages() {
        let text = std::fs::read_to_string(&p).unwrap();
        let name = p.strip_prefix(&root).unwrap().display().to_string();
        rows += tables(&text).iter().filter(|t| t.header.last().is_some_and(|h| h == "source")).map(|t| t.rows.len()).sum::<usize>();
        errs.extend(check_page(&name, &text, &root));
    }
    assert!(rows >= 50, "only {rows} cited rows found: did the citation tables lose their `source` column?");
    assert!(errs.is_empty(), "{} problem(s) in the published figures:\n{}", errs.len(), errs.join("\n"));
}

#[test]
fn the_results_tables_are_what_their_files_give() {
    // docs/gen_results.py writes every marked table from its files; --check says whether a page
    // differs (a number edited by hand, or a file changed after its page was written).
    let out = std::process::Command::new("python3").arg(repo().join("docs/gen_results.py")).arg("--check").output().expect("python3 (installed by the Makefile)");
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_results_pages_and_readme_cite_their_figures() {
    // The results pages and the README's one table are citation tables (a
    // figure table without sources there would escape the check above).
    for p in pages().into_iter().filter(|p| p.ends_with("README.md") || p.parent().is_some_and(|d| d.ends_with("results"))) {
        let text = std::fs::read_to_string(&p).unwrap();
        for t in tables(&text) {
            let numeric = t.rows.iter().any(|(_, r)| r.iter().skip(1).any(|c| !numbers(c).is_empty()));
            let cited = t.header.last().is_some_and(|h| h == "source");
            let is_map = t.header.iter().any(|h| h == "read" || h == "datapath");
            assert!(!numeric || cited || is_map, "{}:{}: a table of figures without a `source` column", p.display(), t.line);
        }
    }
}

#[test]
fn the_check_catches_a_wrong_figure_a_wrong_machine_and_a_missing_file() {
    let root = repo();
    let good = "| run | median µs | machine | source |\n|---|---|---|---|\n| udp D | 4.46 | AMD EPYC | `docs/results/2026-11-22-matrix-1M.txt` |\n";
    assert_eq!(check_page("good", good, &root), Vec::<String>::new());
    let wrong_figure = good.replace("4.46", "4.47");
    assert!(check_page("p", &wrong_figure, &root).iter().any(|e| e.contains("is not in")));
    let wrong_machine = good.replace("AMD EPYC", "Intel(R) Xeon(R) Processor");
    assert!(check_page("p", &wrong_machine, &root).iter().any(|e| e.contains("recorded `AMD EPYC`")));
    let xeon = "| run | median µs | machine | source |\n|---|---|---|---|\n| udp 8 | 6.29 | AMD EPYC | `docs/results/2026-11-26-rate-sweep-1M-udp.txt` |\n";
    assert!(check_page("p", xeon, &root).iter().any(|e| e.contains("recorded `Intel(R) Xeon(R) Processor`")), "the 1M rate sweep ran on a Xeon host");
    let unrecorded = "| run | mean µs | machine | source |\n|---|---|---|---|\n| D detpath afxdp | 13.2 | not recorded | `docs/results/2026-11-23-pubsub-matrix-shield.txt` |\n";
    assert!(check_page("p", unrecorded, &root).iter().any(|e| e.contains("recorded no machine")), "a file without a machine record backs no figure");
    let missing = good.replace("2026-11-22-matrix-1M.txt", "2026-01-01-nothing.txt");
    assert!(check_page("p", &missing, &root).iter().any(|e| e.contains("does not exist")));
    let unfair = "| system | mean µs | p99 µs |\n|---|---|---|\n| ddsperf | 1 | 2 |\n";
    assert!(check_page("p", unfair, &root).iter().any(|e| e.contains("worst 1 s")));
    assert_eq!(numbers("1,000,000 rounds, 4.46 µs, v2 x1.5"), vec![(1_000_000.0, 0), (4.46, 2)]);
}
