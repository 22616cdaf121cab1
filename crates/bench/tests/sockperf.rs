//! The sockperf reference run, for real: Debian's sockperf in the testbed's
//! two namespaces, its full log parsed into records and a table row; and a
//! missing binary named with the fix before anything starts.
//!
//! Needs root (namespaces) and sockperf (deps/apt-bench.txt).

use detpath::testbed::{Testbed, TestbedConfig};
use detpath_bench::sockperf::{run, SockperfConfig, SockperfError};
use detpath_instrument::{Environment, RunConfig, Status};

fn config(binary: &str) -> SockperfConfig {
    SockperfConfig { binary: binary.into(), size: 1024, period_ns: 100_000, seconds: 1, cpu_client: 0, cpu_server: 1, port: 11211 }
}

#[test]
fn sockperf_ping_pong_gives_a_table_row() {
    const TEST: &str = "sockperf_ping_pong_gives_a_table_row";
    if !detpath_testkit::need_root(TEST, "the testbed's namespaces") || !detpath_testkit::need_tool(TEST, "sockperf", "sockperf") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("spk")).expect("testbed up");
    let outcome = run(&tb, &config("sockperf")).unwrap_or_else(|e| panic!("{e}"));
    // 1 s at 10,000 msg/s; sockperf keeps the middle of the run (warm-up and
    // cool-down are its own), so well over a thousand rows but at most 10,000.
    assert!(outcome.rows.len() > 1000 && outcome.rows.len() <= 10_000, "{} rows", outcome.rows.len());
    assert!(outcome.summary.iter().any(|l| l.contains("percentile 99.000")), "{:?}", outcome.summary);
    for r in &outcome.rows {
        assert!(r.rx_s == 0.0 || (r.rx_s > r.tx_s && r.latency_us > 0.0), "{r:?}");
    }
    let cfg = RunConfig {
        datapath: "sockperf".into(),
        mode: "sockperf".into(),
        size: 1024,
        period_ns: 100_000,
        rounds: outcome.rows.len() as u64,
        timeout_ns: 0,
        stress_percent: 0,
        tuned: false,
        tuning: "default".into(),
        cpu_client: Some(0),
        cpu_server: Some(1),
        peer: None,
        extra: Default::default(),
    };
    let (result, records) = outcome.run_result(cfg, Environment::capture());
    assert_eq!(records.len(), outcome.rows.len());
    let answered = records.iter().filter(|r| r.status == Status::Ok).count() as u64;
    assert_eq!(result.latency.count, answered);
    assert_eq!(result.server_time.count, 0, "no server timestamps: absent, not zero");
    assert_eq!(result.send_lateness.count, 0);
    let table = detpath_instrument::table::render(&[result]);
    assert!(table.contains("sockperf (UDP)"), "{table}");
}

#[test]
fn missing_sockperf_is_named_with_the_fix() {
    if !detpath_testkit::need_root("missing_sockperf_is_named_with_the_fix", "the testbed's namespaces") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("spk")).expect("testbed up");
    let e = run(&tb, &config("/nonexistent/sockperf")).unwrap_err();
    assert!(matches!(e, SockperfError::Missing(_)), "{e}");
    assert!(e.to_string().contains("apt-get install sockperf"), "{e}");
}
