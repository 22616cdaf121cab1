//! `detpath pubsub bench`'s Fast DDS reference rows (`--fastdds`): the
//! bench builds its Fast DDS 2.9 program, runs it in the testbed's two
//! namespaces beside detpath's udp rows, and the table sets detpath against
//! it. Shape only (a named row, samples, ordered percentiles, CPU, the
//! ratios): no figure is asserted, the figures are the benchmark's.
//!
//! Needs root (namespaces), g++, fastddsgen and Fast DDS's headers
//! (deps/apt-fastdds.txt): under CI=true a missing one fails with the
//! package to install.

use detpath_instrument::results::ResultDir;
use detpath_pubsub_bench::fastdds::{build, ratios};
use detpath_pubsub_bench::{bench, table, BenchOptions};
use detpath_testkit::{need, need_root};

#[test]
fn fastdds_rows_stand_beside_detpaths_with_cpu_records_and_ratios() {
    const T: &str = "fastdds_rows_stand_beside_detpaths_with_cpu_records_and_ratios";
    if !need_root(T, "network namespaces") || !need(T, "g++, fastddsgen and Fast DDS 2.9 (libfastrtps-dev)", build::missing().is_none(), build::INSTALL_HINT) {
        return;
    }
    let mut o = BenchOptions::new(&["udp"]);
    o.seconds = 2;
    o.with_ddsperf = false;
    o.with_fastdds = true;
    o.workloads = vec!["latency".into(), "rate".into()];
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = ResultDir::create_named(tmp.path(), "fastdds-rows").unwrap();
    let mut seen = Vec::new();
    let rows = bench(&o, Some(&mut dir), |r| seen.push(r.system.clone())).expect("the bench with Fast DDS's rows");
    assert_eq!(seen, ["detpath udp", "detpath udp", ratios::SYSTEM, ratios::SYSTEM], "detpath's rows, then Fast DDS's, each reported as it ends");

    let lat = rows.iter().find(|r| r.system == ratios::SYSTEM && r.workload == ratios::LATENCY).expect("a Fast DDS latency row");
    let l = lat.latency_us.as_ref().expect("Fast DDS latency figures");
    assert!(l.count > 1000, "2 s at 1 kHz: {} answered pings", l.count);
    let p99_9 = l.p99_9.expect("p99.9 from over 1000 samples");
    assert!(l.min <= l.p50 && l.p50 <= l.p99 && l.p99 <= p99_9 && p99_9 <= l.max, "percentiles in order: {l:?}");
    assert!(l.min <= l.mean && l.mean <= l.max, "{l:?}");
    let cpu = lat.cpu.as_ref().expect("the ping and pong's CPU");
    let names: Vec<&str> = cpu.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["fastdds-ping", "fastdds-pong"]);
    assert!(cpu.threads.iter().all(|t| t.core.is_none()), "unpinned: no core named");
    assert!(lat.cpu_percent.is_some_and(|p| p > 0.0));
    let run = lat.run.as_deref().expect("the per-sample records saved as a run");
    assert!(dir.path().join(format!("{run}.csv")).is_file(), "{run}.csv in {}", dir.path().display());

    let rate = rows.iter().find(|r| r.system == ratios::SYSTEM && r.workload == ratios::RATE).expect("a Fast DDS rate row");
    assert!(rate.samples_per_s.is_some_and(|s| s > 0.0), "{rate:?}");
    assert!(rate.cpu.as_ref().is_some_and(|c| c.threads.len() == 2), "the pub and sub's CPU: {rate:?}");

    // The table sets detpath udp against Fast DDS, with both ratios and the goals.
    let against = ratios::compare(&table::figures(&rows));
    assert_eq!(against.len(), 1);
    assert_eq!(against[0].system, "detpath udp");
    for r in [against[0].mean_us, against[0].p99_9_us, against[0].rate_samples_per_s] {
        assert!(r.ratio.is_some_and(|x| x > 0.0) && r.met.is_some(), "{r:?}");
    }
    let text = ratios::render_rows(&rows);
    assert!(text.contains(ratios::TITLE) && text.contains("mean ratio") && text.contains("p99.9 ratio") && text.contains("rate ratio"), "{text}");
    let line = text.lines().rfind(|l| l.contains("detpath udp")).expect("detpath udp's comparison line");
    assert!(line.contains(" met") || line.contains("not met"), "{line}");
}
