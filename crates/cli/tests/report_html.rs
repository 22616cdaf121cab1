//! `detpath report DIR --html` opened in a real browser (Debian's headless
//! chromium): a small real run of `detpath bench` (and of `detpath pubsub
//! bench`, with ddsperf) in the two-namespace testbed, its page written,
//! loaded, and checked: no console message (a script error, or a load the
//! page's content security policy refused), the page's own check passed
//! (`data-ok`: loaded without error, every figure laid out with a size), and
//! every figure on the page equal to the file it names (`data-json`): the
//! number as the file has it, and the text a person reads that number in
//! the table's unit and decimals. Needs root (namespaces), chromium and, for
//! the pub-sub case, ddsperf (`make deps` installs both).

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("detpath-report-html-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs a command to its end (at most `limit`), returning its output.
fn run_limited(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).map(|_| v).unwrap_or_default()
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).map(|_| v).unwrap_or_default()
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{cmd:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    std::process::Output { status, stdout: o.join().unwrap(), stderr: e.join().unwrap() }
}

/// The only result directory under `out`.
fn only_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// `detpath report DIR --html`: the path it prints is a page inside DIR.
fn write_page(dir: &Path) -> PathBuf {
    let o = run_limited(Command::new(BIN).arg("report").arg(dir).arg("--html"), Duration::from_secs(60));
    assert!(o.status.success(), "report --html: {}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let page = PathBuf::from(stdout.lines().last().expect("the page's path printed").trim());
    assert!(page.is_file(), "{page:?}: not written");
    assert_eq!(page.parent().unwrap().canonicalize().unwrap(), dir.canonicalize().unwrap(), "the page goes into the result directory");
    let html = std::fs::read_to_string(&page).unwrap();
    for outside in ["src=\"http", "href=\"http", "src=\"//", "href=\"//", "@import", "url(http"] {
        assert!(!html.contains(outside), "the page loads something from outside ({outside}): it must be self-contained");
    }
    page
}

/// What the browser made of a page: the DOM after its scripts, and the
/// console messages (script errors, refused loads).
struct Rendered {
    dom: String,
    console: Vec<String>,
}

fn chromium(page: &Path, profile: &Path, extra: &[String]) -> std::process::Output {
    let mut cmd = Command::new("chromium");
    cmd.args(["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.canonicalize().unwrap().display()));
    run_limited(&mut cmd, Duration::from_secs(120))
}

fn open_in_browser(page: &Path, scratch: &Path) -> Rendered {
    let o = chromium(page, &scratch.join("chromium-profile"), &["--dump-dom".into()]);
    assert!(o.status.success(), "chromium: {}", String::from_utf8_lossy(&o.stderr));
    let console = String::from_utf8_lossy(&o.stderr).lines().filter(|l| l.contains(":CONSOLE")).map(str::to_string).collect();
    Rendered { dom: String::from_utf8_lossy(&o.stdout).into_owned(), console }
}

/// The page's own verdict, as its script left it on the root element.
fn root_attr<'a>(dom: &'a str, name: &str) -> Option<&'a str> {
    let start = dom.find("<html")?;
    let tag = &dom[start..start + dom[start..].find('>')?];
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&tag[at..at + tag[at..].find('"')?])
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// A figure cell of the DOM: its source (`file#pointer`), its value, its text.
#[derive(Debug, Clone)]
struct FigureCell {
    source: String,
    value: String,
    text: String,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(unescape(&tag[at..at + tag[at..].find('"')?]))
}

/// Every element naming a JSON source, in document order.
fn figure_cells(dom: &str) -> Vec<FigureCell> {
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find(" data-json=\"") {
        let open = rest[..i].rfind('<').unwrap();
        let close = i + rest[i..].find('>').unwrap();
        let tag = &rest[open..close];
        let end = close + 1 + rest[close + 1..].find('<').unwrap();
        out.push(FigureCell { source: attr(tag, "data-json").unwrap(), value: attr(tag, "data-value").unwrap(), text: unescape(&rest[close + 1..end]) });
        rest = &rest[end..];
    }
    out
}

/// What a person reads is the file's number in the table's unit: latencies
/// and times in the bench files are ns shown in µs, sched's error
/// percentiles likewise (its means in ns), classify's rates in Mpps;
/// everything else as it is.
fn divisor(file: &str, pointer: &str) -> f64 {
    let under = |seg: &str| pointer.split('/').any(|s| s == seg);
    match file {
        "summary.json" if (under("latency") || under("server_time") || under("send_lateness")) && pointer.ends_with("_ns") => 1_000.0,
        "report.json" if pointer.split('/').any(|s| s.ends_with("_ns")) && !pointer.ends_with("/mean") => 1_000.0,
        _ if pointer.rsplit('/').next().is_some_and(|last| last == "pps" || last.ends_with("_pps")) => 1e6,
        // mixed.json's latencies are µs already; the bulk's kept share is a fraction shown in %.
        "mixed.json" if pointer.ends_with("/kept_fraction") => 0.01,
        _ => 1.0,
    }
}

/// Checks every figure cell against the file it names (in `dir`); returns the sources checked.
fn check_against_files(dir: &Path, cells: &[FigureCell]) -> Vec<String> {
    let mut docs: HashMap<String, Value> = HashMap::new();
    let mut checked = Vec::new();
    for c in cells {
        let (file, pointer) = c.source.split_once('#').unwrap_or_else(|| panic!("{c:?}: source without a pointer"));
        let doc = docs.entry(file.to_string()).or_insert_with(|| {
            let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{c:?}: {file}: {e}"));
            serde_json::from_str(&text).unwrap()
        });
        let v = doc.pointer(pointer).unwrap_or_else(|| panic!("{c:?}: {file} has nothing at {pointer}"));
        assert_eq!(v.to_string(), c.value, "{c:?}: the page's value is not the file's");
        let x = v.as_f64().unwrap_or_else(|| panic!("{c:?}: not a number in {file}"));
        let shown = c.text.trim().trim_end_matches('*').replace(',', "");
        let read: f64 = shown.parse().unwrap_or_else(|_| panic!("{c:?}: the cell does not read as a number"));
        let decimals = shown.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
        let expected = x / divisor(file, pointer);
        let tolerance = 0.5 * 10f64.powi(-decimals) * (1.0 + 1e-9) + expected.abs() * 1e-12;
        assert!((read - expected).abs() <= tolerance, "{c:?}: shows {read}, the file's {x} is {expected} in the table's unit");
        checked.push(c.source.clone());
    }
    checked
}

/// A cell of a table in the DOM: its text and the source it names, if any.
type DomCell = (String, Option<String>);

/// The cells of one table of the DOM: (header texts, body rows).
fn table_cells(dom: &str, id: &str) -> (Vec<String>, Vec<Vec<DomCell>>) {
    let start = dom.find(&format!("<table id=\"{id}\"")).unwrap_or_else(|| panic!("no table {id}"));
    let t = &dom[start..start + dom[start..].find("</table>").unwrap()];
    let cells = |row: &str| -> Vec<DomCell> {
        row.split("<t")
            .skip(1)
            .filter(|c| c.starts_with('h') || c.starts_with('d'))
            .map(|c| {
                let close = c.find('>').unwrap();
                let text = unescape(c[close + 1..].split('<').next().unwrap());
                (text, attr(&c[..close], "data-json"))
            })
            .collect()
    };
    let (head, body) = t.split_once("<tbody>").unwrap();
    let head: Vec<String> = head.split("<tr>").last().map(cells).unwrap().into_iter().map(|c| c.0).collect();
    (head, body.split("<tr>").skip(1).map(cells).collect())
}

/// The browser's look at the page: a screenshot that has pixels.
fn screenshot(page: &Path, scratch: &Path) {
    let png = scratch.join("page.png");
    let o = chromium(page, &scratch.join("chromium-shot"), &[format!("--screenshot={}", png.display()), "--window-size=1200,1600".into()]);
    assert!(o.status.success(), "chromium --screenshot: {}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000, "a screenshot of {} bytes", bytes.len());
}

fn browser_ok(test: &str) -> bool {
    detpath_testkit::need_root(test, "the testbed's namespaces") && detpath_testkit::need_tool(test, "chromium", "chromium")
}

/// A ping-pong result's page renders cleanly and shows summary.json's numbers.
#[test]
fn a_bench_result_page_renders_in_chromium_and_shows_the_summary_numbers() {
    let test = "a_bench_result_page_renders_in_chromium_and_shows_the_summary_numbers";
    if !browser_ok(test) {
        return;
    }
    let s = Scratch::new("bench");
    let out = s.0.join("results");
    let testbed = format!("detpath-rh{}", std::process::id());
    let o = run_limited(
        Command::new(BIN).args(["bench", "--datapath", "udp", "--rounds", "2000", "--warmup", "200", "--testbed", &testbed, "--out"]).arg(&out),
        Duration::from_secs(120),
    );
    assert!(o.status.success(), "bench: {}", String::from_utf8_lossy(&o.stderr));
    let dir = only_dir(&out);
    let page = write_page(&dir);
    let r = open_in_browser(&page, &s.0);
    assert!(r.console.is_empty(), "console messages: {:#?}", r.console);
    assert_eq!(root_attr(&r.dom, "data-errors"), None, "errors on the page");
    assert_eq!(root_attr(&r.dom, "data-ok"), Some("1"), "the page's own check did not pass: {:?}", &r.dom[..r.dom.len().min(400)]);
    let figures: u32 = root_attr(&r.dom, "data-figures").unwrap().parse().unwrap();
    assert!(figures >= 3, "{figures} figures: the CCDF, the timeline and the box plot at least");
    for id in ["fig-ccdf", "fig-timeline", "environment", "command", "table1", "latency-per-run", "loss-per-run"] {
        assert!(r.dom.contains(&format!("id=\"{id}\"")), "no #{id} on the page");
    }

    let cells = figure_cells(&r.dom);
    let checked = check_against_files(&dir, &cells);
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let runs = summary["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    for f in ["count", "min_ns", "mean_ns", "median_ns", "p99_ns", "p99_9_ns", "max_ns", "jitter_ns"] {
        let src = format!("summary.json#/runs/0/latency/{f}");
        assert!(checked.contains(&src), "{src} is not on the page");
    }
    for f in ["sent", "lost"] {
        assert!(checked.contains(&format!("summary.json#/runs/0/loss/{f}")), "loss {f} is not on the page");
    }
    // The environment record: the CPU model and the core count as recorded.
    let env = &runs[0]["environment"];
    assert!(r.dom.contains(env["cpu_model"].as_str().unwrap()), "CPU model not shown");
    assert!(checked.contains(&"summary.json#/runs/0/environment/cpus".to_string()), "core count not shown");
    // Latencies in µs with decimals, as the terminal's table: its p99 cell reads the same.
    let table1 = table_cells(&r.dom, "table1");
    let p99_col = table1.0.iter().position(|h| h == "p99").unwrap();
    let p99_text = &table1.1[0][p99_col].0;
    let terminal = std::fs::read_to_string(dir.join("table.txt")).unwrap();
    let label = &table1.1[0][0].0;
    let line = terminal.lines().find(|l| l.starts_with(label.as_str())).unwrap_or_else(|| panic!("no {label} row in table.txt:\n{terminal}"));
    assert!(line.split_whitespace().any(|w| w == p99_text.as_str()), "p99 {p99_text} not as in table.txt:\n{terminal}");
    screenshot(&page, &s.0);
}

/// A pub-sub result's page: rows.json's figures, and ddsperf's worst-second
/// p99 in its own column, never under detpath's exact p99.
#[test]
fn a_pubsub_result_page_keeps_ddsperf_worst_second_p99_apart() {
    let test = "a_pubsub_result_page_keeps_ddsperf_worst_second_p99_apart";
    if !browser_ok(test) || !detpath_testkit::need_tool(test, "ddsperf", "cyclonedds-tools") {
        return;
    }
    let s = Scratch::new("pubsub");
    let out = s.0.join("results");
    let o = run_limited(
        Command::new(BIN).args(["pubsub", "bench", "--datapath", "udp", "--duration", "2s", "--workloads", "latency", "--out"]).arg(&out),
        Duration::from_secs(180),
    );
    assert!(o.status.success(), "pubsub bench: {}", String::from_utf8_lossy(&o.stderr));
    let dir = only_dir(&out);
    let page = write_page(&dir);
    let r = open_in_browser(&page, &s.0);
    assert!(r.console.is_empty(), "console messages: {:#?}", r.console);
    assert_eq!(root_attr(&r.dom, "data-ok"), Some("1"), "the page's own check did not pass");
    let checked = check_against_files(&dir, &figure_cells(&r.dom));

    let rows: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("rows.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let at = |sys: &str| rows.iter().position(|r| r["system"].as_str().unwrap().starts_with(sys) && r["workload"] == "latency 32B 1kHz").unwrap();
    let (dp, dds) = (at("detpath"), at("ddsperf"));
    let (head, body) = table_cells(&r.dom, "pubsub-table");
    let exact = head.iter().position(|h| h == "p99 us").expect("a p99 column");
    let worst = head.iter().position(|h| h == "worst-1s p99 us").expect("ddsperf's worst-1s p99 has a column of its own");
    let row_of = |sys: &str| body.iter().find(|r| r[1].0.starts_with(sys) && r[3].0 == "latency 32B 1kHz").unwrap();
    let (d, f) = (row_of("detpath"), row_of("ddsperf"));
    assert_eq!(d[exact].1.as_deref(), Some(format!("rows.json#/{dp}/latency_us/p99").as_str()), "detpath's exact p99 under p99");
    assert_eq!(d[worst].0, "-", "detpath has no worst-1s p99");
    assert_eq!(f[exact].0, "-", "ddsperf's worst-second p99 must not stand under the exact p99");
    assert_eq!(f[worst].1.as_deref(), Some(format!("rows.json#/{dds}/latency_us/p99").as_str()), "ddsperf's p99 under worst-1s p99");
    assert!(checked.contains(&format!("rows.json#/{dds}/latency_us/p99")));
    assert!(r.dom.contains("worst-1s p99 is a different statistic"), "the page says what ddsperf's figure is");
    for id in ["fig-ccdf", "fig-pdv", "table1"] {
        assert!(r.dom.contains(&format!("id=\"{id}\"")), "no #{id} on the page");
    }
}

/// The comparison itself catches a page that differs from its file: a
/// value that is not the file's, and a text that does not read as it.
#[test]
fn a_figure_that_differs_from_its_file_is_caught() {
    let s = Scratch::new("tamper");
    std::fs::write(s.0.join("summary.json"), r#"{"runs":[{"latency":{"p99_ns":8086123,"count":2000}}]}"#).unwrap();
    let dom = |value: &str, text: &str| format!("<td data-json=\"summary.json#/runs/0/latency/p99_ns\" data-value=\"{value}\" class=\"num\">{text}</td>");
    let ok = figure_cells(&dom("8086123", "8086"));
    assert_eq!(check_against_files(&s.0, &ok), ["summary.json#/runs/0/latency/p99_ns"]);
    let ok_decimals = figure_cells(&dom("8086123", "8086.12"));
    assert_eq!(check_against_files(&s.0, &ok_decimals).len(), 1);
    for (value, text) in [("8086124", "8086"), ("8086123", "8087"), ("8086123", "8086123"), ("8086123", "8086.2")] {
        let cells = figure_cells(&dom(value, text));
        let caught = std::panic::catch_unwind(|| check_against_files(&s.0, &cells)).is_err();
        assert!(caught, "value {value} shown as {text} was not caught");
    }
}

/// The first JSON file under docs/results that `pick` accepts.
fn recorded_result(pick: impl Fn(&Value) -> bool) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    let mut stack = vec![root];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                files.push(p);
            }
        }
    }
    files.sort();
    files.into_iter().find(|p| std::fs::read_to_string(p).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok()).is_some_and(|v| pick(&v)))
}

/// The pages of a recorded `detpath sched bench` report and a recorded
/// `detpath classify bench --json` document (docs/results) render in the
/// browser and show their files' numbers.
#[test]
fn sched_and_classify_result_pages_render_and_show_their_files_numbers() {
    let test = "sched_and_classify_result_pages_render_and_show_their_files_numbers";
    if !detpath_testkit::need_tool(test, "chromium", "chromium") {
        return;
    }
    let s = Scratch::new("recorded");
    let sched = recorded_result(|v| v.get("slot_ns").is_some() && v["runs"].as_array().is_some_and(|r| !r.is_empty()))
        .expect("a sched bench report.json under docs/results");
    let classify = recorded_result(|v| {
        let cells = if v.is_array() { v } else { &v["cells"] };
        cells.as_array().is_some_and(|c| !c.is_empty() && c.iter().all(|c| c.get("program").is_some() && c.get("pps").is_some()))
    })
    .expect("a classify bench document under docs/results");
    let cases =
        [("sched", sched, "report.json", "sched-runs", "/runs/0/iat_error_ns/p99"), ("classify", classify, "classify.json", "classify-table-0", "/pps")];
    for (name, file, as_name, table, must) in cases {
        let dir = s.0.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&file, dir.join(as_name)).unwrap();
        let page = write_page(&dir);
        let r = open_in_browser(&page, &s.0);
        assert!(r.console.is_empty(), "{name}: console messages: {:#?}", r.console);
        assert_eq!(root_attr(&r.dom, "data-ok"), Some("1"), "{name}: the page's own check did not pass");
        let checked = check_against_files(&dir, &figure_cells(&r.dom));
        assert!(checked.iter().any(|c| c.starts_with(as_name) && c.ends_with(must)), "{name} ({}): no {must} on the page", file.display());
        let (_, rows) = table_cells(&r.dom, table);
        assert!(!rows.is_empty(), "{name}: empty table");
    }
}

/// A fresh `detpath sched bench` result's page: its figure (the inter-arrival
/// CDF the bench drew) inline as an image, and report.json's numbers.
#[test]
fn a_sched_result_page_renders_with_its_figure() {
    let test = "a_sched_result_page_renders_with_its_figure";
    if !browser_ok(test) {
        return;
    }
    let s = Scratch::new("sched");
    let out = s.0.join("results");
    let o = run_limited(
        Command::new(BIN).args(["sched", "bench", "--datapath", "udp", "--method", "slots,sleep", "--duration", "1s", "--out"]).arg(&out),
        Duration::from_secs(120),
    );
    assert!(o.status.success(), "sched bench: {}", String::from_utf8_lossy(&o.stderr));
    let dir = only_dir(&out);
    let page = write_page(&dir);
    let r = open_in_browser(&page, &s.0);
    assert!(r.console.is_empty(), "console messages: {:#?}", r.console);
    assert_eq!(root_attr(&r.dom, "data-ok"), Some("1"), "the page's own check did not pass");
    assert!(r.dom.contains("id=\"fig-iat_cdf\""), "the inter-arrival CDF is not on the page");
    let checked = check_against_files(&dir, &figure_cells(&r.dom));
    for m in 0..2 {
        for f in ["iat_error_ns/p50", "iat_error_ns/p99", "release_error_ns/p99", "rt_sent"] {
            let src = format!("report.json#/runs/{m}/{f}");
            assert!(checked.contains(&src), "{src} is not on the page");
        }
    }
}

/// A mixed-criticality pub-sub result (`--workloads mixed`: control beside
/// bulk, a priority arm and a one-FIFO arm) has no rows.json: its page is
/// composed from summary.json (one control run per arm) and mixed.json. It
/// renders without a console message and shows each arm's control latency
/// as summary.json has it, the arms told apart by name, and mixed.json's
/// figures as the file has them (control latency and budget violations by
/// cause, bulk rate and kept share), its goals and the timeline figure.
#[test]
fn a_mixed_pubsub_result_page_renders_with_each_arms_control_latency() {
    let test = "a_mixed_pubsub_result_page_renders_with_each_arms_control_latency";
    if !browser_ok(test) {
        return;
    }
    let s = Scratch::new("mixed");
    let out = s.0.join("results");
    let o = run_limited(
        Command::new(BIN).args(["pubsub", "bench", "--workloads", "mixed", "--datapath", "udp", "--duration", "2s", "--no-ddsperf", "--out"]).arg(&out),
        Duration::from_secs(180),
    );
    assert!(o.status.success(), "pubsub bench --workloads mixed: {}", String::from_utf8_lossy(&o.stderr));
    let dir = only_dir(&out);
    assert!(dir.join("mixed.json").is_file() && !dir.join("rows.json").exists(), "a mixed-only result: mixed.json, no rows.json");
    let page = write_page(&dir);
    let r = open_in_browser(&page, &s.0);
    assert!(r.console.is_empty(), "console messages: {:#?}", r.console);
    assert_eq!(root_attr(&r.dom, "data-errors"), None, "errors on the page");
    assert_eq!(root_attr(&r.dom, "data-ok"), Some("1"), "the page's own check did not pass");
    let checked = check_against_files(&dir, &figure_cells(&r.dom));
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let runs = summary["runs"].as_array().unwrap();
    let arms: Vec<&str> = runs.iter().map(|r| r["config"]["datapath"].as_str().unwrap()).collect();
    assert_eq!(arms, ["pubsub+udp-mixed-priority", "pubsub+udp-mixed-fifo"], "one control run per arm");
    for (i, arm) in arms.iter().enumerate() {
        for f in ["count", "median_ns", "p99_ns", "max_ns"] {
            let src = format!("summary.json#/runs/{i}/latency/{f}");
            assert!(checked.contains(&src), "{arm}: {src} is not on the page");
        }
        assert!(r.dom.contains(arm), "{arm} is not named on the page");
    }
    let mixed: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("mixed.json")).unwrap()).unwrap();
    let rows = mixed["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "one mixed.json row per arm");
    let (_, table) = table_cells(&r.dom, "mixed-table");
    assert_eq!(table.len(), rows.len(), "one table row per mixed.json row");
    for (i, row) in rows.iter().enumerate() {
        assert!(table[i].iter().any(|(text, _)| text.trim() == row["arm"].as_str().unwrap()), "row {i}: arm not named: {:?}", table[i]);
        let mut fields = vec!["control/latency_us/p50", "control/latency_us/p99", "control/latency_us/max", "control/budget_us", "control/budget_violations", "bulk/mbps"];
        // Causes and the kept share exist when the run could judge them; then they are on the page.
        let causes: Vec<String> = row["control"]["engine_budget"]["causes"].as_object().map_or(Vec::new(), |c| c.keys().map(|k| format!("control/engine_budget/causes/{k}")).collect());
        fields.extend(causes.iter().map(String::as_str));
        if row["bulk"]["kept_fraction"].is_number() {
            fields.push("bulk/kept_fraction");
        }
        for f in fields {
            let src = format!("mixed.json#/rows/{i}/{f}");
            if row.pointer(&format!("/{f}")).is_some_and(Value::is_number) {
                assert!(checked.contains(&src), "{src} is not on the page");
            }
        }
    }
    assert!(checked.iter().any(|c| c.starts_with("mixed.json#")), "no mixed.json figure on the page");
    // The goals (with the scheduler's lines), as the terminal prints them:
    // each goal of mixed.json with its verdict's detail.
    let at = r.dom.find("<pre id=\"terminal-mixed-table\">").expect("no terminal mixed table on the page");
    let pre = unescape(&r.dom[at..at + r.dom[at..].find("</pre>").unwrap()]);
    let goals = mixed["goals"].as_array().unwrap();
    assert!(!goals.is_empty(), "mixed.json judged no goals");
    for g in goals {
        let head = format!("goals, {} {} (repeat {})", g["configuration"].as_str().unwrap(), g["datapath"].as_str().unwrap(), g["repeat"]);
        assert!(pre.contains(&head), "{head:?} not on the page:\n{pre}");
        for goal in ["zero_budget_violations", "bulk_kept", "p9999_vs_fifo"] {
            let detail = g[goal]["detail"].as_str().unwrap_or_else(|| panic!("{goal}: no detail in {g}"));
            assert!(pre.contains(detail), "{goal}: {detail:?} not on the page:\n{pre}");
        }
    }
    let timeline = dir.join("mixed-timeline.png").is_file() || dir.join("mixed-timeline.svg").is_file();
    assert!(timeline, "the bench drew no mixed-timeline figure");
    for id in ["fig-ccdf", "fig-timeline", "fig-mixed-timeline", "environment", "command"] {
        assert!(r.dom.contains(&format!("id=\"{id}\"")), "no #{id} on the page");
    }
}
