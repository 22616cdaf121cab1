//! `detpath bench --matrix`: paper 000's three configurations in one
//! command, for real: Default, Default & Stress (stress-ng), Tuned & Stress
//! (detpath tune apply + real-time polling threads). Afterwards the host is
//! exactly as before (IRQ affinities, sysctls, THP) and no stress-ng is left.
//!
//! Needs root, stress-ng (deps/apt-bench.txt) and 2 cores.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

/// The host state the tuning touches on this machine.
fn snapshot() -> BTreeMap<String, String> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir("/proc/irq").unwrap().flatten().map(|e| e.path().join("smp_affinity_list")).filter(|p| p.exists()).collect();
    for f in [
        "/proc/sys/kernel/sched_rt_runtime_us",
        "/proc/sys/kernel/timer_migration",
        "/proc/sys/kernel/watchdog",
        "/proc/sys/vm/stat_interval",
        "/proc/sys/vm/swappiness",
        "/proc/sys/net/core/busy_poll",
        "/proc/sys/net/core/busy_read",
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/sys/kernel/mm/transparent_hugepage/defrag",
    ] {
        files.push(f.into());
    }
    files.into_iter().filter(|p| p.exists()).map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap_or_default())).collect()
}

fn stress_ng_running() -> bool {
    Command::new("pgrep").args(["-x", "stress-ng"]).output().map(|o| o.status.success()).unwrap_or(false)
}

#[test]
fn matrix_runs_three_configurations_and_restores_the_host() {
    assert!(!stress_ng_running(), "a stress-ng is already running; this test needs a quiet host");
    let before = snapshot();
    let out = std::env::temp_dir().join(format!("detpath-matrix-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(BIN)
        .args(["bench", "--matrix", "--matrix-stress", "50", "--datapath", "udp", "--rounds", "1000", "--warmup", "100"])
        .args(["--testbed", "detpath-e2m", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    let after = snapshot();
    let _ = std::fs::remove_dir_all(&out);
    // Exit 1 with complete runs means some pongs were lost under stress (a
    // measurement); anything else is a failure.
    assert_eq!(run.status.code(), Some(0), "matrix failed: {stderr}");
    assert!(!stderr.contains("cannot") && !stderr.contains("error"), "{stderr}");
    let runs: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    let got: Vec<(String, u64, bool)> = runs
        .iter()
        .map(|r| (r["configuration"].as_str().unwrap().to_string(), r["config"]["stress_percent"].as_u64().unwrap(), r["config"]["tuned"].as_bool().unwrap()))
        .collect();
    assert_eq!(got, vec![("D".to_string(), 0, false), ("D&S".to_string(), 50, false), ("T&S".to_string(), 50, true)], "{stderr}");
    for r in runs {
        assert_eq!(r["complete"], true, "{r}");
        assert_eq!(r["latency"]["count"].as_u64().unwrap() + r["loss"]["lost"].as_u64().unwrap(), 1000, "{r}");
    }
    let tuning = runs[2]["config"]["tuning"].as_str().unwrap();
    assert!(tuning.contains("SCHED_FIFO") && tuning.contains("change"), "{tuning}");
    assert_eq!(runs[0]["config"]["tuning"], "default");
    // The host is as it was: every value byte for byte, no stress-ng left.
    for (path, was) in &before {
        assert_eq!(after.get(path), Some(was), "{path} not restored");
    }
    assert!(!stress_ng_running(), "stress-ng left running");
}
