//! `detpath pubsub bench --workloads mixed --json` at a short duration in
//! the real testbed: its shape, never its speed. One JSON line per arm
//! (`priority`, `fifo` per datapath, `ddsperf` once), each with control
//! latency percentiles (p50 <= p99 <= max, all above 0), a budget count
//! where the arm measures one per sample, and bulk throughput above 0;
//! mixed.json in the result directory holds the same rows with the
//! machine's environment record. Each detpath arm has its bulk-alone
//! baseline and the share of it bulk kept beside control; a last line
//! `{"goals": [...]}` (and mixed.json's `goals`) judges issue 39's goals per
//! datapath, each `met`, `not_met` or `not_measured`. `--samples N` makes
//! the bulk-on phase last until N control samples are in. Needs root
//! (namespaces) and ddsperf (`make build` installs cyclonedds-tools).

use detpath_testkit::{need_root, need_tool};
use serde_json::Value;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

fn f(v: &Value, ptr: &str) -> f64 {
    v.pointer(ptr).and_then(Value::as_f64).unwrap_or_else(|| panic!("{ptr} missing in {v}"))
}

#[test]
fn the_mixed_workload_gives_three_arms_of_the_documented_shape() {
    let test = "pubsub_mixed::the_mixed_workload_gives_three_arms_of_the_documented_shape";
    if !need_root(test, "namespaces for the testbed") || !need_tool(test, "ddsperf", "cyclonedds-tools (make build)") {
        return;
    }
    let out = std::env::temp_dir().join(format!("detpath-psmixed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(BIN)
        .args(["pubsub", "bench", "--workloads", "mixed", "--datapath", "udp,afxdp", "--duration", "2s", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let mut rows: Vec<Value> = String::from_utf8_lossy(&run.stdout).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    // The last line: the goals judged on the arms above it.
    let goals = rows.pop().unwrap_or_default()["goals"].clone();
    assert!(goals.is_array(), "the last line is {{\"goals\": [...]}}: {goals}");
    let arms: Vec<(&str, &str)> = rows.iter().map(|r| (r["arm"].as_str().unwrap(), r["datapath"].as_str().unwrap())).collect();
    assert_eq!(arms, [("priority", "udp"), ("fifo", "udp"), ("priority", "afxdp"), ("fifo", "afxdp"), ("ddsperf", "udp")], "{stderr}");
    for r in &rows {
        let (p50, p99, max) = (f(r, "/control/latency_us/p50"), f(r, "/control/latency_us/p99"), f(r, "/control/latency_us/max"));
        assert!(p50 > 0.0 && p50 <= p99 && p99 <= max, "p50 <= p99 <= max, above 0: {r}");
        assert!(r.pointer("/control/latency_us").unwrap().get("p9999").is_some(), "p9999 is a key (null below 10,000 samples): {r}");
        assert!(f(r, "/bulk/samples_per_s") > 0.0 && f(r, "/bulk/mbps") > 0.0, "bulk moved: {r}");
        assert_eq!(f(r, "/control/budget_us"), 100.0, "the default budget: {r}");
        assert!(r["bulk"].get("kept_fraction").is_some() && r["bulk"].get("alone_samples_per_s").is_some(), "the bulk-alone keys: {r}");
        if r["arm"] == "ddsperf" {
            assert!(r["control"]["budget_violations"].is_null(), "ddsperf has no per-sample budget count: {r}");
            assert!(r["bulk"]["kept_fraction"].is_null(), "ddsperf has no bulk-alone baseline: {r}");
        } else {
            // Bulk ran alone after the pinging: a baseline, and a share of it kept (above 0, no upper bound).
            assert!(f(r, "/bulk/alone_samples_per_s") > 0.0 && f(r, "/bulk/alone_mbps") > 0.0, "bulk alone moved: {r}");
            assert!(f(r, "/bulk/kept_fraction") > 0.0, "{r}");
            // Every ping of the bulk-on half is judged: within or over.
            assert!(r["control"]["budget_violations"].as_u64().is_some(), "{r}");
            assert!(f(r, "/control/latency_us_bulk_off/p50") > 0.0, "the control-only quarters are measured: {r}");
            // The engine judged the control samples itself, on the testbed's shared clock.
            assert_eq!(r["control"]["engine_budget"]["clock"], "same-host", "{r}");
            assert!(r["control"]["engine_budget"]["within"].as_u64().unwrap() + r["control"]["engine_budget"]["over"].as_u64().unwrap() > 0, "{r}");
        }
    }
    // The priority arm marks control with a DSCP; the fifo arm does not.
    assert!(rows[0]["control"]["dscp"].as_u64().unwrap() > 0 && rows[1]["control"]["dscp"] == 0, "{}", rows[0]);
    assert!(rows[0]["control"]["class"] == "ctl" && rows[1]["control"]["class"].is_null(), "{}", rows[0]);
    let dirs: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(dirs[0].join("mixed.json")).unwrap()).unwrap();
    assert_eq!(saved["rows"].as_array().unwrap().len(), rows.len());
    assert_eq!(saved["goals"], goals, "mixed.json holds the same goals");
    // One goals entry per datapath, each goal with a verdict from the allowed set.
    let judged: Vec<&str> = goals.as_array().unwrap().iter().map(|g| g["datapath"].as_str().unwrap()).collect();
    assert_eq!(judged, ["udp", "afxdp"], "{goals}");
    for g in goals.as_array().unwrap() {
        for goal in ["zero_budget_violations", "bulk_kept", "p9999_vs_fifo"] {
            let status = g[goal]["status"].as_str().unwrap_or_else(|| panic!("{goal} has no status: {g}"));
            assert!(["met", "not_met", "not_measured"].contains(&status), "{goal}: {status}");
            assert!(!g[goal]["detail"].as_str().unwrap().is_empty(), "{goal} says why: {g}");
            assert_eq!(g[goal]["value"].is_null(), status == "not_measured", "a verdict has its figure, and only a verdict: {g}");
        }
        // A 2 s run has far fewer than 10,000 samples: p99.99 is not measured, and says so.
        assert_eq!(g["p9999_vs_fifo"]["status"], "not_measured", "{g}");
        assert!(g["p9999_vs_fifo"]["detail"].as_str().unwrap().contains("fewer than 10,000 samples"), "{g}");
        // Both arms had their bulk-alone baseline: the kept share is judged.
        assert_ne!(g["bulk_kept"]["status"], "not_measured", "{g}");
        assert!(g["ddsperf"]["bulk_samples_per_s"].as_f64().unwrap() > 0.0, "ddsperf beside it: {g}");
        assert!(g["conditions"].as_str().unwrap().contains("short of the stated conditions"), "{g}");
    }
    assert!(!saved["environment"]["cpu_model"].as_str().unwrap().is_empty());
    for r in &rows {
        let timeline = dirs[0].join(r["timeline"].as_str().unwrap());
        let lines = std::fs::read_to_string(&timeline).unwrap().lines().count();
        assert!(lines > 1, "{} has its samples", timeline.display());
    }
    assert!(!dirs[0].join("rows.json").exists(), "no paper-001 rows when only mixed ran");
    std::fs::remove_dir_all(&out).unwrap();
}

/// `--samples N`: the bulk-on phase lasts until N control samples are in
/// (fewer seconds than --duration's half would give).
#[test]
fn samples_set_the_control_samples_beside_bulk() {
    let test = "pubsub_mixed::samples_set_the_control_samples_beside_bulk";
    if !need_root(test, "namespaces for the testbed") {
        return;
    }
    let out = std::env::temp_dir().join(format!("detpath-psmixed-n-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(BIN)
        .args(["pubsub", "bench", "--workloads", "mixed", "--datapath", "udp", "--duration", "1s", "--samples", "1500", "--no-ddsperf", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let lines: Vec<Value> = String::from_utf8_lossy(&run.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3, "priority, fifo, goals: {lines:?}");
    for r in &lines[..2] {
        // Half of 1 s would be 500 pings: --samples stretched the phase.
        assert!(f(r, "/control/latency_us/count") >= 1500.0, "{r}");
    }
    assert!(lines[2]["goals"][0]["ddsperf"].is_null(), "no ddsperf arm: {}", lines[2]);
    assert_eq!(lines[2]["goals"][0]["control_samples"].as_u64(), lines[0]["control"]["latency_us"]["count"].as_u64());
}

/// A budget of 0 is refused before anything runs, with the reason (exit 2).
#[test]
fn a_zero_budget_is_refused() {
    let out = std::env::temp_dir().join(format!("detpath-psmixed-bad-{}", std::process::id()));
    let run = Command::new(BIN)
        .args(["pubsub", "bench", "--workloads", "mixed", "--datapath", "udp", "--latency-budget", "0us", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("--latency-budget"), "{}", String::from_utf8_lossy(&run.stderr));
}
