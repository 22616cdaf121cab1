//! `detpath pubsub bench` end to end: one configuration with stress-ng on
//! both cores, the sides pinned; the rows name their configuration and land
//! in a result directory with the table and the libraries' log. Needs root
//! (namespaces) and stress-ng (`make deps`).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

/// Under stress, what may be lost and what may not:
/// - the throughput rows' data topic is reliable KEEP_ALL: a full history
///   blocks the writer, it never drops, so a sample lost there is a bug in
///   the engine, however loaded the machine, and fails this test;
/// - the latency row is ddsperf's ping workload, reliable **KEEP_LAST 1**
///   on the ping topic, pings going out on schedule (not in lockstep): when
///   stress keeps the pong side off its core for more than a ping period,
///   a newer ping replaces the one it had not taken yet, and that ping is
///   never answered. The QoS asks for exactly that, so unanswered pings are
///   counted (`lost`) and not a failure; what must hold is the accounting:
///   every ping sent is either answered (a latency sample) or lost.
#[test]
fn a_stressed_configuration_is_measured_and_saved() {
    const TEST: &str = "a_stressed_configuration_is_measured_and_saved";
    if !detpath_testkit::need_root(TEST, "the testbed's namespaces") || !detpath_testkit::need_tool(TEST, "stress-ng", "stress-ng") {
        return;
    }
    let out = std::env::temp_dir().join(format!("detpath-psbench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(BIN)
        .args(["pubsub", "bench", "--datapaths", "udp", "--seconds", "2", "--no-ddsperf", "--blocking", "--stress", "50", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let dirs: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    assert!(dirs[0].file_name().unwrap().to_string_lossy().starts_with("pubsub-"));
    let rows: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dirs[0].join("rows.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let workloads: Vec<&str> = rows.iter().map(|r| r["workload"].as_str().unwrap()).collect();
    assert_eq!(workloads, ["latency 32B 1kHz", "rate 32B", "bandwidth 1KiB"]);
    for r in rows {
        assert_eq!(r["configuration"], "D&S", "{r}");
        assert_eq!(r["system"], "detpath udp", "{r}");
    }
    for r in &rows[1..] {
        assert_eq!(r["lost"], 0, "reliable KEEP_ALL never drops, stressed or not: a loss here is an engine bug: {r}");
    }
    // The latency run saved (summary.json): every ping answered or lost, the answered ones its samples.
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dirs[0].join("summary.json")).unwrap()).unwrap();
    let run0 = &summary["runs"][0];
    let (sent, ok, lost) = (run0["loss"]["sent"].as_u64().unwrap(), run0["loss"]["ok"].as_u64().unwrap(), run0["loss"]["lost"].as_u64().unwrap());
    assert!(ok > 0 && ok + lost == sent, "pings sent = answered + lost: {}", run0["loss"]);
    assert_eq!(rows[0]["lost"].as_u64(), Some(lost), "the row and the saved run agree: {}", rows[0]);
    assert_eq!(rows[0]["latency_us"]["count"].as_u64(), Some(ok), "one latency sample per answered ping: {}", rows[0]);
    if lost > 0 {
        println!("{lost} of {sent} pings replaced under stress (KEEP_LAST 1), not answered");
    }
    let latency = &rows[0]["latency_us"];
    assert!(latency["mean"].as_f64().unwrap() > 0.0 && latency["max"].as_f64().unwrap() >= latency["p99"].as_f64().unwrap(), "{latency}");
    // Measured, not judged: how fast is the load's business (a figure, not a gate).
    for r in &rows[1..] {
        assert!(r["samples_per_s"].as_f64().unwrap() > 0.0 && r["mbit_per_s"].as_f64().unwrap() > 0.0, "{r}");
    }
    let table = std::fs::read_to_string(dirs[0].join("table.txt")).unwrap();
    assert!(table.lines().any(|l| l.split_whitespace().take(3).eq(["D&S", "detpath", "udp"])), "{table}");
    assert_eq!(String::from_utf8_lossy(&run.stdout), table, "the table printed is the one saved");
    assert!(dirs[0].join("libs.log").is_file());
    let stress_left = Command::new("pgrep").arg("stress-ng").status().unwrap().success();
    assert!(!stress_left, "stress-ng left running");
    std::fs::remove_dir_all(&out).unwrap();
}

/// Ctrl-C in the middle of a million-sample run (17 minutes at 1 kHz) ends
/// it within seconds, keeps the samples it had (records, summary marked
/// incomplete, the row), starts no further repeat, exits 130 and leaves no
/// namespace behind.
#[test]
fn ctrl_c_ends_a_long_latency_run_and_keeps_its_samples() {
    use std::time::{Duration, Instant};
    let out = std::env::temp_dir().join(format!("detpath-psbench-int-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut child = Command::new(BIN)
        .args(["pubsub", "bench", "--datapath", "udp", "--samples", "1000000", "--repeat", "2", "--workloads", "latency", "--no-ddsperf", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(5));
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("pubsub bench still running 30 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "an interrupted run exits 130");
    let dirs: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let rows: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dirs[0].join("rows.json")).unwrap()).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "the interrupted run's row, and no second repeat: {rows}");
    let count = rows[0]["latency_us"]["count"].as_u64().unwrap();
    assert!(count > 500 && count < 1_000_000, "{count} samples kept");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dirs[0].join("summary.json")).unwrap()).unwrap();
    let run = &summary["runs"][0];
    assert_eq!(run["complete"], false, "{run}");
    let records = std::fs::read_to_string(dirs[0].join(run["records_file"].as_str().unwrap())).unwrap();
    assert!(records.lines().count() as u64 > count, "one record per ping (and a header)");
    let netns = String::from_utf8_lossy(&Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).into_owned();
    assert!(!netns.contains(&format!("psb-{}-", child.id())), "testbed left behind: {netns}");
    std::fs::remove_dir_all(&out).unwrap();
}
