//! Result directories: layout, never overwriting, atomic files, load back.
mod common;

use detpath_instrument::results::{LoadError, ResultDir, FORMAT};
use detpath_instrument::table;

#[test]
fn save_and_load_a_result_directory() {
    let base = tempfile::tempdir().unwrap();
    let mut d = ResultDir::create(base.path()).unwrap();
    let name = d.path().file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(name.len(), 16, "timestamp name like 20250131T142501Z: {name}");

    let r1 = common::records(1, 3_000, 10_000, 2_000.0, 200_000, 1_000);
    let r2 = common::records(2, 3_000, 20_000, 5_000.0, 0, 0);
    let run1 = common::run("afxdp", 0, false, &r1);
    let run2 = common::run("afxdp", 80, false, &r2);
    assert_eq!(d.save_run(&run1, &r1).unwrap().name, "afxdp-default");
    assert_eq!(d.save_run(&run2, &r2).unwrap().name, "afxdp-default-stress");
    // The same configuration again gets a suffix, never overwrites.
    let again = d.save_run(&run1, &r1).unwrap();
    assert_eq!(again.name, "afxdp-default-2");
    assert_eq!(again.records_file.as_deref(), Some("afxdp-default-2.csv"));
    // sockperf-like run without raw records: no CSV.
    let mut sp = run2.clone();
    sp.config.datapath = "sockperf".into();
    assert_eq!(d.save_run(&sp, &[]).unwrap().records_file, None);

    let mut files: Vec<String> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    assert_eq!(files, ["afxdp-default-2.csv", "afxdp-default-stress.csv", "afxdp-default.csv", "summary.json", "table.txt"], "no temporary files left");

    let back = ResultDir::load(d.path()).unwrap();
    assert_eq!(back.len(), 4);
    assert_eq!(back[0].latency, run1.latency);
    assert_eq!(back[1].configuration, "D&S");
    assert_eq!(back[0].loss.lost, 3);
    assert_eq!(back[0].loss.sent, 3_000);
    let recs = ResultDir::load_records(d.path(), &back[1]).unwrap();
    assert_eq!(recs, r2);
    let json = std::fs::read_to_string(d.path().join("summary.json")).unwrap();
    assert!(json.contains(FORMAT));
    assert!(json.contains("\"p99_9999_ns\": null"), "unsupported percentiles are null");
    let t = std::fs::read_to_string(d.path().join("table.txt")).unwrap();
    assert!(t.contains("AF_XDP") && t.contains("D&S") && t.contains("n/a (needs 10,000)"), "{t}");

    // A second directory in the same second gets a suffix.
    let d2 = ResultDir::create_named(base.path(), &name).unwrap();
    assert_eq!(d2.path().file_name().unwrap().to_str().unwrap(), format!("{name}-2"));
    let d3 = ResultDir::create_named(base.path(), &name).unwrap();
    assert_eq!(d3.path().file_name().unwrap().to_str().unwrap(), format!("{name}-3"));
    assert_eq!(table::render(&back), t);
}

#[test]
fn load_errors_are_clear() {
    let base = tempfile::tempdir().unwrap();
    let err = ResultDir::load(base.path()).unwrap_err();
    assert!(matches!(err, LoadError::Io { .. }));
    assert!(err.to_string().contains("summary.json"));
    std::fs::write(base.path().join("summary.json"), r#"{"format":"other/9","runs":[]}"#).unwrap();
    assert!(ResultDir::load(base.path()).unwrap_err().to_string().contains("detpath-bench/1"));
    std::fs::write(base.path().join("summary.json"), "{").unwrap();
    assert!(matches!(ResultDir::load(base.path()), Err(LoadError::Json { .. })));
}

#[test]
fn interrupted_runs_are_kept_and_marked() {
    let base = tempfile::tempdir().unwrap();
    let mut d = ResultDir::create(base.path()).unwrap();
    let recs = common::records(3, 500, 10_000, 1_000.0, 0, 0);
    let mut run = common::run("udp", 0, false, &recs);
    run.complete = false;
    run.interrupted = Some("server stopped answering (SIGINT)".into());
    d.save_run(&run, &recs).unwrap();
    let back = ResultDir::load(d.path()).unwrap();
    assert!(!back[0].complete);
    let t = table::render(&back);
    assert!(t.contains("*") && t.contains("incomplete run") && t.contains("INTERRUPTED"), "{t}");
}
