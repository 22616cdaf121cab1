//! `detpath pubsub bench` end to end: one configuration with stress-ng on
//! both cores, the sides pinned; the rows name their configuration and land
//! in a result directory with the table and the libraries' log. Needs root
//! (namespaces) and stress-ng (`make deps`).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

#[test]
fn a_stressed_configuration_is_measured_and_saved() {
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
        assert_eq!(r["lost"], 0, "reliable: {r}");
    }
    let latency = &rows[0]["latency_us"];
    assert!(latency["mean"].as_f64().unwrap() > 0.0 && latency["max"].as_f64().unwrap() >= latency["p99"].as_f64().unwrap(), "{latency}");
    assert!(rows[1]["samples_per_s"].as_f64().unwrap() > 1000.0, "{}", rows[1]);
    let table = std::fs::read_to_string(dirs[0].join("table.txt")).unwrap();
    assert!(table.lines().any(|l| l.split_whitespace().take(3).eq(["D&S", "detpath", "udp"])), "{table}");
    assert_eq!(String::from_utf8_lossy(&run.stdout), table, "the table printed is the one saved");
    assert!(dirs[0].join("libs.log").is_file());
    let stress_left = Command::new("pgrep").arg("stress-ng").status().unwrap().success();
    assert!(!stress_left, "stress-ng left running");
    std::fs::remove_dir_all(&out).unwrap();
}
