//! `detpath pubsub bench --samples N --repeat 2` over the testbed (root:
//! namespaces and veth): every latency run ends with N per-sample records
//! in the result directory, its row carries `cpu` and PDV, and `detpath
//! report` draws the runs (box plot, CCDF, timeline and PDV).

use detpath_bench::pubsub::{bench, table, BenchOptions};
use detpath_bench::records::Status;
use detpath_bench::report;
use detpath_bench::results::ResultDir;

#[test]
fn samples_and_repeats_give_n_records_per_run_and_the_report_draws_them() {
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
    const N: u64 = 1000;
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = ResultDir::create_named(tmp.path(), "pubsub").unwrap();
    let mut o = BenchOptions::new(&["udp"]);
    o.with_ddsperf = false;
    o.samples = Some(N);
    o.workloads = vec!["table1".into()];
    let rows = bench(&o, Some(&mut dir), |_| {}).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].workload, detpath_bench::pubsub::TABLE1);
    let run = &ResultDir::load(dir.path()).unwrap()[0];
    let recs = ResultDir::load_records(dir.path(), run).unwrap();
    assert_eq!(recs.len() as u64, N);
    assert_eq!(run.loss.lost, 0, "reliable KEEP_ALL: every ping answered");
}
