//! End to end: `detpath bench` over each datapath in its own testbed with a
//! small round count produces a complete result (summary, records, table,
//! environment), `detpath report` turns it into PNG and SVG plots that name
//! the datapath, Ctrl-C keeps what was measured, and two runs never share a
//! result directory.
//!
//! Needs root (namespaces, XDP; DPDK from Debian's libdpdk). The runs
//! busy-poll both cores, so they go one at a time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A temporary output directory, removed at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("detpath-e2e-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The result directories under `out`, oldest first.
fn result_dirs(out: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("summary.json").is_file()).collect();
    v.sort();
    v
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// Data rows of a records CSV (the header line excluded).
fn csv_rows(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("seq,client_send_ns,server_recv_ns,server_send_ns,client_recv_ns,send_lateness_ns,status"));
    lines.map(String::from).collect()
}

fn namespaces() -> String {
    String::from_utf8(Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).unwrap()
}

fn bench_and_report(datapath: &str, testbed: &str) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = TempDir::new(datapath);
    let run = Command::new(BIN)
        .args(["bench", "--datapath", datapath, "--rounds", "2000", "--warmup", "200", "--testbed", testbed, "--out"])
        .arg(&out.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    // Exit 1 with a complete result means pongs were lost: a measurement (the
    // kernel UDP path drops when its socket buffer overflows while the server
    // thread is descheduled), not a failure of the tool.
    assert_eq!(run.status.code(), Some(0), "{datapath}: bench failed: {stderr}");
    let table = String::from_utf8_lossy(&run.stdout);
    assert!(table.contains("Median") && table.contains("p99"), "{table}");

    let dirs = result_dirs(&out.0);
    assert_eq!(dirs.len(), 1);
    let s = summary(&dirs[0]);
    let r = &s["runs"][0];
    assert_eq!(r["config"]["datapath"], datapath);
    assert_eq!(r["complete"], true, "{r}");
    let (count, lost) = (r["latency"]["count"].as_u64().unwrap(), r["loss"]["lost"].as_u64().unwrap());
    assert_eq!(count + lost, 2000, "every round is a sample or lost");
    assert_eq!(run.status.code(), Some(0), "a completed measurement exits 0, loss or not (loss is in the result)");
    assert!(lost < 200, "{datapath}: {lost} of 2000 rounds lost");
    assert!(r["config"]["mode"].as_str().unwrap().contains(datapath), "mode {}", r["config"]["mode"]);
    let env = &r["environment"];
    assert!(env["kernel"].as_str().unwrap().starts_with("Linux"), "{env}");
    assert!(!env["cpu_model"].as_str().unwrap().is_empty(), "{env}");
    let records = dirs[0].join(r["records_file"].as_str().expect("records file named"));
    let rows = csv_rows(&records);
    assert_eq!(rows.len(), 2000);
    assert_eq!(rows.iter().filter(|l| l.ends_with(",ok")).count() as u64, count, "ok rows = samples");
    assert_eq!(rows.iter().filter(|l| l.ends_with(",lost")).count() as u64, lost, "lost rows = lost");
    assert!(dirs[0].join("table.txt").is_file());
    assert!(!namespaces().contains(testbed), "testbed {testbed} left behind");
    // The C libraries' chatter goes to the result directory, not the terminal.
    for prefix in ["libbpf:", "libxdp:", "EAL:"] {
        assert!(!stderr.lines().any(|l| l.starts_with(prefix)), "{datapath}: `{prefix}` lines on stderr: {stderr}");
    }
    let lib_log = std::fs::read_to_string(dirs[0].join("libs.log")).expect("libs.log in the result directory");
    if datapath == "dpdk" {
        // DPDK's af_xdp driver loads its XDP program through Debian's libxdp/libbpf, which always warn.
        assert!(lib_log.contains("libbpf:"), "dpdk: libbpf's messages not in libs.log: {lib_log}");
    }

    let plots = out.0.join("plots");
    let rep = Command::new(BIN).arg("report").arg(&dirs[0]).arg("--out").arg(&plots).output().unwrap();
    assert!(rep.status.success(), "report failed: {}", String::from_utf8_lossy(&rep.stderr));
    let files: Vec<PathBuf> = std::fs::read_dir(&plots).unwrap().map(|e| e.unwrap().path()).collect();
    let pngs: Vec<&PathBuf> = files.iter().filter(|p| p.extension().is_some_and(|e| e == "png")).collect();
    let svgs: Vec<&PathBuf> = files.iter().filter(|p| p.extension().is_some_and(|e| e == "svg")).collect();
    assert!(pngs.len() >= 3 && svgs.len() >= 3, "box plot, CCDF, timeline as PNG and SVG: {files:?}");
    for p in &pngs {
        let bytes = std::fs::read(p).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{}: not a PNG", p.display());
        assert!(bytes.len() > 5_000, "{}: {} bytes", p.display(), bytes.len());
    }
    // The box plot labels boxes with the datapath's display name, the CCDF and
    // timeline label series with the run's name ("<datapath> D" for Default).
    for (plot, label) in [("boxplot", detpath_instrument::table::display_name(datapath)), ("ccdf", format!("{datapath} D")), ("timeline", format!("{datapath} D"))] {
        let p = plots.join(format!("{plot}.svg"));
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(text.contains("<svg") && text.trim_end().ends_with("</svg>"), "{}: not an SVG", p.display());
        assert!(text.contains(&label), "{}: no series labelled {label}", p.display());
        assert!(plots.join(format!("{plot}.png")).is_file());
    }
}

#[test]
fn bench_and_report_udp() {
    bench_and_report("udp", "detpath-e2u");
}

#[test]
fn bench_and_report_xdppoll() {
    bench_and_report("xdppoll", "detpath-e2p");
}

#[test]
fn bench_and_report_afxdp() {
    bench_and_report("afxdp", "detpath-e2x");
}

#[test]
fn bench_and_report_dpdk() {
    bench_and_report("dpdk", "detpath-e2d");
}

/// SIGINT mid-run: the run stops, exits non-zero, and keeps its records,
/// marked interrupted; the testbed is removed.
#[test]
fn ctrl_c_keeps_what_was_measured() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = TempDir::new("sigint");
    let mut child = Command::new(BIN)
        .args(["bench", "--datapath", "udp", "--rounds", "200000", "--testbed", "detpath-e2c", "--out"])
        .arg(&out.0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let rc = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(rc.success());
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("bench still running 20 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "an interrupted run exits 130");
    let dirs = result_dirs(&out.0);
    assert_eq!(dirs.len(), 1, "the result directory is kept");
    let s = summary(&dirs[0]);
    let r = &s["runs"][0];
    assert_eq!(r["complete"], false);
    assert!(r["interrupted"].as_str().unwrap_or("").contains("interrupted"), "{r}");
    let rows = csv_rows(&dirs[0].join(r["records_file"].as_str().unwrap()));
    assert!(rows.len() > 1000 && rows.len() < 200_000, "{} records kept", rows.len());
    assert!(!namespaces().contains("detpath-e2c"), "testbed left behind after SIGINT");
}

/// Two runs into the same --out: two result directories, nothing overwritten.
#[test]
fn results_are_never_overwritten() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = TempDir::new("twice");
    for _ in 0..2 {
        let st = Command::new(BIN)
            .args(["bench", "--datapath", "udp", "--rounds", "300", "--warmup", "10", "--testbed", "detpath-e2t", "--out"])
            .arg(&out.0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert_eq!(st.code(), Some(0), "{st}");
    }
    let dirs = result_dirs(&out.0);
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    for d in &dirs {
        let r = &summary(d)["runs"][0];
        assert_eq!(r["latency"]["count"].as_u64().unwrap() + r["loss"]["lost"].as_u64().unwrap(), 300);
    }
}

/// Paper 000's Figure 2 as one command: two rates x two datapaths -> four
/// runs, rows grouped by rate, and the highest loss-free rate per datapath.
#[test]
fn a_rate_sweep_runs_every_datapath_at_every_rate() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = TempDir::new("sweep");
    let run = Command::new(BIN)
        .args([
            "bench",
            "--datapath",
            "udp,afxdp",
            "--rate",
            "8,80",
            "--size",
            "1000",
            "--rounds",
            "400",
            "--warmup",
            "10",
            "--testbed",
            "detpath-e2w",
            "--out",
        ])
        .arg(&out.0)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let dirs = result_dirs(&out.0);
    let runs = summary(&dirs[0])["runs"].as_array().unwrap().clone();
    let got: Vec<(String, u64)> =
        runs.iter().map(|r| (r["config"]["datapath"].as_str().unwrap().to_string(), r["config"]["period_ns"].as_u64().unwrap())).collect();
    // 1000 B at 8 Mbit/s is a 1 ms period, at 80 Mbit/s 100 µs; rates outermost.
    assert_eq!(got, [("udp".into(), 1_000_000), ("afxdp".into(), 1_000_000), ("udp".into(), 100_000), ("afxdp".into(), 100_000)]);
    assert!(stdout.contains("8 Mbit/s") && stdout.contains("80 Mbit/s"), "{stdout}");
    assert!(stdout.contains("Highest rate sustained without loss"), "{stdout}");
    for r in &runs {
        assert!(r["tail"]["threshold_us"].as_f64().unwrap() > 0.0, "every testbed run has a tail section: {r}");
    }
}

/// Loss is a result (exit 0), unless the caller gates on it. The loss is
/// real: the fault datapath drops the client's sends 100 and 200.
#[test]
fn loss_exits_zero_unless_gated() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = TempDir::new("gate");
    let bench = |extra: &[&str]| {
        Command::new(BIN)
            .args([
                "bench",
                "--datapath",
                "fault",
                "--keys",
                "inner=udp&drop=100,200",
                "--period",
                "200us",
                "--rounds",
                "500",
                "--warmup",
                "10",
                "--testbed",
                "detpath-e2g",
                "--json",
                "--out",
            ])
            .arg(&out.0)
            .args(extra)
            .output()
            .unwrap()
    };
    let plain = bench(&[]);
    assert_eq!(plain.status.code(), Some(0), "{}", String::from_utf8_lossy(&plain.stderr));
    let runs: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(runs[0]["loss"]["lost"].as_u64().unwrap() >= 2, "{}", runs[0]["loss"]);
    assert_eq!(bench(&["--fail-on-loss"]).status.code(), Some(1));
    assert_eq!(bench(&["--max-loss", "1000"]).status.code(), Some(0));
    let bad = Command::new(BIN).args(["bench", "--datapath", "nosuch", "--rounds", "10", "--testbed", "detpath-e2g", "--out"]).arg(&out.0).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "an error exits 2");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown datapath `nosuch`"));
}
