//! `detpath pubsub scale` at its smallest size (2 participants, 1 reader,
//! 2 s) with CycloneDDS beside detpath: the shape of what it saves, and that
//! it leaves no process or namespace behind; counts outside its limits are
//! refused with exit 2. Needs root (namespaces), ddsperf and the cyclonedds
//! Python package (`make deps`). No figure is judged: they are the
//! benchmark's to print.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

/// The processes of a scale run still alive: its detpath workers, its
/// CycloneDDS Python workers (their script names the topic), its ddsperf
/// processes (their configuration lives in the run's `detpath-scale-`
/// directory). Only read, never signalled.
fn leftovers() -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let env = std::fs::read(e.path().join("environ")).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        if cmd.contains("scale --worker") || cmd.contains("DetpathScale") || (cmd.starts_with("ddsperf") && env.contains("detpath-scale-")) {
            found.push(format!("{}: {cmd:.80}", e.file_name().to_string_lossy()));
        }
    }
    found
}

fn f(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn the_smallest_scale_run_has_rows_for_both_systems_and_cleans_up() {
    const TEST: &str = "the_smallest_scale_run_has_rows_for_both_systems_and_cleans_up";
    if !detpath_testkit::need_root(TEST, "the testbed's namespaces") || !detpath_testkit::need_tool(TEST, "ddsperf", "cyclonedds-tools") {
        return;
    }
    let python_binding = Command::new("python3").args(["-c", "import cyclonedds.domain"]).status().is_ok_and(|s| s.success());
    if !detpath_testkit::need(TEST, "the cyclonedds Python package", python_binding, "pip install cyclonedds; `make deps` installs it") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(BIN)
        .args(["pubsub", "scale", "--participants", "2", "--readers", "1", "--duration", "2s", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let dirs: Vec<_> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let dir = &dirs[0];
    assert!(dir.file_name().unwrap().to_string_lossy().starts_with("pubsub-scale-"));
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert!(s["environment"]["cpus"].as_u64().unwrap() > 0 && s["environment"]["load"].as_array().unwrap().len() == 3, "{}", s["environment"]);

    let disc = s["discovery"].as_array().unwrap();
    let systems: Vec<&str> = disc.iter().map(|r| r["system"].as_str().unwrap()).collect();
    assert_eq!(systems, ["detpath udp", "CycloneDDS (Python)"]);
    for r in disc {
        assert!(!r["note"].as_str().unwrap().starts_with("FAILED"), "{r}");
        assert_eq!((r["participants"].as_u64(), r["matched"].as_u64(), r["processes"].as_u64()), (Some(2), Some(2), Some(2)), "{r}");
        assert!(f(r, "discovery_ms") > 0.0, "{r}");
        assert!(r["rss_total_kb"].as_u64().unwrap() > 0 && r["rss_total_kb"].as_u64() >= r["rss_baseline_kb"].as_u64(), "{r}");
    }

    let fan = s["fanout"].as_array().unwrap();
    for system in ["detpath udp", "CycloneDDS (ddsperf)"] {
        let rows: Vec<&serde_json::Value> = fan.iter().filter(|r| r["system"] == system).collect();
        // One reader: its own row and the pooled one.
        assert_eq!(rows.len(), 2, "{system}: {fan:?}");
        assert_eq!(rows.iter().filter(|r| r["reader"].is_null()).count(), 1, "{system}: one pooled row");
        for r in rows {
            assert!(!r["note"].as_str().unwrap().starts_with("FAILED"), "{r}");
            assert_eq!(r["readers"].as_u64(), Some(1), "{r}");
            let l = &r["latency_us"];
            assert!(l["count"].as_u64().unwrap() > 0, "{r}");
            // Percentiles in order; p99.9 where the method has it (ddsperf does not).
            let mut order = vec![f(l, "p50"), f(l, "p99")];
            order.extend(l["p99_9"].as_f64());
            order.push(f(l, "max"));
            assert!(order[0] > 0.0 && order.windows(2).all(|w| w[0] <= w[1]), "{system}: {l}");
        }
    }

    let table = std::fs::read_to_string(dir.join("table.txt")).unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout), table, "the table printed is the one saved");
    assert!(table.contains("detpath udp") && table.contains("CycloneDDS (ddsperf)") && table.contains("load average"), "{table}");
    assert!(dir.join("scale.png").is_file(), "{stderr}");

    assert_eq!(leftovers(), Vec::<String>::new(), "processes of the run still alive");
    // The scale run's testbed is the only one named `detpath-pss-<pid>-<n>`.
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&netns.stdout).contains("detpath-pss-"), "the run's testbed left behind");
}

#[test]
fn counts_outside_the_limits_exit_2_with_a_message() {
    for args in [["--participants", "0"], ["--participants", "129"], ["--readers", "0"], ["--readers", "65"]] {
        let run = Command::new(BIN).args(["pubsub", "scale"]).args(args).args(["--no-cyclonedds", "--out", "/nonexistent-scale-out"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(args[0]) && stderr.contains("out of range") && stderr.contains(args[1]), "{args:?}: {stderr}");
    }
}
