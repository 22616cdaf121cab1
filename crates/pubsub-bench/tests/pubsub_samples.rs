//! `detpath pubsub bench --samples N --repeat 2` over the testbed (root:
//! namespaces and veth): every latency run ends with N per-sample records
//! in the result directory, its row carries `cpu` and PDV (in summary.json
//! too), and `detpath report` draws the runs (box plot, CCDF, timeline and
//! PDV). The ddsperf reference rows carry the CPU of ddsperf's processes.

use detpath_pubsub_bench::{bench, table, BenchOptions};
use detpath_instrument::records::Status;
use detpath_instrument::report;
use detpath_instrument::results::ResultDir;

#[test]
fn samples_and_repeats_give_n_records_per_run_and_the_report_draws_them() {
    if !detpath_testkit::need_root("samples_and_repeats_give_n_records_per_run_and_the_report_draws_them", "the testbed's namespaces") {
        return;
    }
    const N: u64 = 2000;
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = ResultDir::create_named(tmp.path(), "pubsub").unwrap();
    let mut o = BenchOptions::new(&["udp"]);
    o.with_ddsperf = false;
    o.samples = Some(N);
    o.repeat = 2;
    o.workloads = vec!["latency".into()];
    let rows = bench(&o, Some(&mut dir), |_| {}).unwrap();
    assert_eq!(rows.len(), 2, "one latency row per repeat");
    assert_eq!(rows.iter().map(|r| r.repeat).collect::<Vec<_>>(), vec![1, 2]);
    for r in &rows {
        let cpu = r.cpu.as_ref().expect("cpu measured");
        assert_eq!(cpu.threads.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), vec!["ping", "pong"]);
        assert!(cpu.cpu_s() > 0.0, "the sides used CPU: {cpu:?}");
        let pdv = r.pdv_us.expect("PDV from the records");
        assert!(pdv.p99 >= pdv.p50 && pdv.max >= pdv.p99);
        assert!(r.run.is_some());
    }
    let runs = ResultDir::load(dir.path()).unwrap();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let recs = ResultDir::load_records(dir.path(), run).unwrap();
        assert_eq!(recs.len() as u64, N, "{}: one record per ping", run.name);
        let ok = recs.iter().filter(|r| r.status == Status::Ok).count() as u64;
        assert_eq!(ok + run.loss.lost, N);
        assert_eq!(run.latency.count, ok);
        assert!(run.config.datapath.starts_with("pubsub+udp"));
        // summary.json's run carries the row's cpu record itself, not only the note.
        let cpu = run.cpu.as_ref().unwrap_or_else(|| panic!("{}: no cpu in summary.json", run.name));
        assert_eq!(cpu.threads.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), vec!["ping", "pong"]);
        assert!(run.notes.iter().any(|n| n.starts_with("cpu ")), "the note stays: {:?}", run.notes);
    }
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    for r in json["runs"].as_array().unwrap() {
        assert!(r["cpu"]["threads"][0]["user_s"].is_number() && r["cpu"]["work_per_cpu_s"].is_number(), "{}", r["cpu"]);
    }
    let t = table::render(&rows);
    assert!(t.lines().count() == 2 && t.contains(" 2 "), "one line, n = 2 repeats:\n{t}");
    let loaded = report::load_dirs(&[dir.path().to_path_buf()]).unwrap();
    let out = tmp.path().join("plots");
    let files = report::render(&loaded, &out).unwrap();
    let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for want in ["boxplot.png", "ccdf.png", "timeline.png", "pdv.png", "pdv.svg"] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    for f in &files {
        assert!(std::fs::metadata(f).unwrap().len() > 1000, "{} has a figure", f.display());
    }
}

#[test]
fn paper_001_table_1_profile_runs_its_samples() {
    if !detpath_testkit::need_root("paper_001_table_1_profile_runs_its_samples", "the testbed's namespaces") {
        return;
    }
    const N: u64 = 1000;
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = ResultDir::create_named(tmp.path(), "pubsub").unwrap();
    let mut o = BenchOptions::new(&["udp"]);
    o.with_ddsperf = false;
    o.samples = Some(N);
    o.workloads = vec!["table1".into()];
    let rows = bench(&o, Some(&mut dir), |_| {}).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].workload, detpath_pubsub_bench::TABLE1);
    let run = &ResultDir::load(dir.path()).unwrap()[0];
    let recs = ResultDir::load_records(dir.path(), run).unwrap();
    assert_eq!(recs.len() as u64, N);
    assert_eq!(run.loss.lost, 0, "reliable KEEP_ALL: every ping answered");
}

/// ddsperf against ddsperf (its three workloads, 5 s each), pinned: each
/// row's `cpu` is the two ddsperf processes' user and system time, on their
/// cores, with samples received per CPU-second. Needs ddsperf
/// (cyclonedds-tools, `make deps`) and two CPUs (the sides are pinned to 0 and 1).
///
/// Why 5 s: ddsperf's `-D` counts from its process start, discovery
/// included, and a ping prints a line only for a second in which pongs
/// came back. At 2 s, on this 2-vCPU VM at load 6 (other builds), discovery
/// once took the whole run and the latency row had no samples, so no
/// samples per CPU-second: the row's CPU was there, the work to divide it
/// by was not. 5 s leaves at least 3 whole seconds of pings after a
/// discovery of up to 2 s.
#[test]
fn ddsperf_rows_carry_the_cpu_of_its_processes() {
    const TEST: &str = "ddsperf_rows_carry_the_cpu_of_its_processes";
    if !detpath_testkit::need_root(TEST, "the testbed's namespaces") || !detpath_testkit::need_tool(TEST, "ddsperf", "cyclonedds-tools") || !detpath_testkit::need_cpus(TEST, 2) {
        return;
    }
    let mut o = BenchOptions::new(&[]);
    o.seconds = 5;
    o.pinning = Some(detpath_pubsub_bench::Pinning { sender_cpu: 0, receiver_cpu: 1, rt_priority: None });
    let rows = bench(&o, None, |_| {}).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.workload.as_str()).collect();
    assert_eq!(names, ["latency 32B 1kHz", "rate 32B", "bandwidth 1KiB"]);
    for (r, threads) in rows.iter().zip([["ddsperf-ping", "ddsperf-pong"], ["ddsperf-pub", "ddsperf-sub"], ["ddsperf-pub", "ddsperf-sub"]]) {
        assert_eq!(r.system, "ddsperf");
        let cpu = r.cpu.as_ref().unwrap_or_else(|| panic!("{}: no cpu", r.workload));
        println!("ddsperf {}: {} ({:.0}% of a core)", r.workload, cpu.summary(), r.cpu_percent.unwrap_or(0.0));
        assert_eq!(cpu.threads.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), threads, "{cpu:?}");
        assert_eq!(cpu.threads.iter().map(|t| t.core).collect::<Vec<_>>(), [Some(0), Some(1)], "{cpu:?}");
        assert!(cpu.threads.iter().all(|t| t.user_s + t.system_s > 0.0), "{cpu:?}");
        // The work behind the CPU figure: ddsperf printed samples for this row.
        let samples = r.latency_us.as_ref().map(|l| l.count as f64).or(r.samples_per_s).unwrap_or(0.0);
        assert!(samples > 0.0, "{}: ddsperf printed no samples in {} s (discovery took the run?): {r:?}", r.workload, o.seconds);
        assert!(cpu.work_per_cpu_s.is_some_and(|w| w > 0.0), "{}: samples per CPU-second: {cpu:?}", r.workload);
        assert!(r.cpu_percent.is_some_and(|p| p > 0.0), "{r:?}");
    }
}
