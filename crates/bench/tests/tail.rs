//! Tail attribution over the real testbed: each cause that can be induced on
//! this machine is induced, and the verdict checked. Steal and interrupt
//! attribution use a fake /proc tree (src/tail.rs unit tests): the host's
//! preemption of this VM cannot be induced from inside it.
//!
//! Needs root (namespaces) and stress-ng. The runs busy-poll both cores, so
//! they go one at a time.

use detpath_bench::matrix::{run_matrix, Configuration, MatrixConfig, Observer};
use detpath_bench::run::PingPongConfig;
use detpath_instrument::tail::{TailReport, TailThreshold};
use std::sync::{Arc, Mutex};
use std::time::Duration;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn probe(rounds: u64, stall: Option<(u64, Duration)>) -> PingPongConfig {
    PingPongConfig { size: 256, period_ns: 500_000, rounds, warmup: 50, loss_timeout_ns: 200_000_000, stall, sleep_slack_ns: None }
}

/// One run of `datapath` in a fresh testbed; its tail report.
fn tail_of(tag: &str, datapath: &str, probe: PingPongConfig, stress: u8, threshold: TailThreshold, keys: &str, server_keys: &str) -> TailReport {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::env::temp_dir().join(format!("detpath-tail-{tag}-{}", std::process::id()));
    let cfg = MatrixConfig {
        datapaths: vec![datapath.into()],
        probes: vec![probe],
        configurations: vec![Configuration { stress, tuned: false }],
        cpus: (0, 1),
        out: out.clone(),
        testbed: format!("detpath-t{tag}{}", std::process::id() % 10_000),
        tune_cores: None,
        rt_priority: 50,
        with_sockperf: false,
        tail_threshold: threshold,
        keys: keys.into(),
        server_keys: server_keys.into(),
        library_logs_to_stderr: false,
        trace_kernel: false,
        trace_cost: false,
    };
    let quiet: Observer = Arc::new(|_| {});
    let outcome = run_matrix(&cfg, quiet).expect("the run");
    let _ = std::fs::remove_dir_all(&out);
    assert!(!outcome.failed);
    let run = &outcome.dir.runs()[0];
    run.tail.clone().expect("a testbed run has a tail section")
}

#[test]
fn a_stalled_client_is_client_late() {
    // 30 ms right after sending round 300 (warm-up included): its pong waits, the next sends leave late.
    let t = tail_of("cl", "udp", probe(600, Some((300, Duration::from_millis(30)))), 0, TailThreshold::Micros(5_000.0), "", "");
    assert!(t.client_late >= 1, "{t:?}");
    assert_eq!(t.rounds, t.client_late + t.server_slow + t.descheduled + t.interrupt + t.steal + t.kernel + t.ksoftirqd + t.unexplained);
}

#[test]
fn a_slow_server_is_server_slow() {
    // The server's endpoint holds its 300th, 400th and 500th datagrams for
    // 20 ms each before handing them up: three rounds with 20 ms of server
    // time, far above the 5 ms threshold. Each is server_slow unless one of
    // the client's sends during those 20 ms also left more than 5 ms late:
    // then it is client_late, which the attribution ranks first by design.
    // On a loaded 2-vCPU VM the client was once descheduled for 8 ms inside
    // the one stall this test used to have, so a single stall proved nothing
    // there; the client late in all three windows 50 ms apart is far less
    // likely, and every stalled round must land in one of the two classes.
    let t = tail_of("sv", "fault", probe(600, None), 0, TailThreshold::Micros(5_000.0), "inner=udp", "stall_rx=300:20ms,400:20ms,500:20ms");
    assert!(t.server_slow >= 1, "{t:?}");
    assert!(t.server_slow + t.client_late >= 3, "each stalled round is server_slow or client_late: {t:?}");
}

#[test]
fn stress_on_the_polling_cores_is_descheduling() {
    // stress-ng at 100 % on both polling cores: CFS shares them, the probes see involuntary switches.
    let t = tail_of("ds", "udp", probe(2000, None), 100, TailThreshold::Micros(200.0), "rcvbuf=8388608", "");
    assert!(t.rounds > 0 && t.descheduled > 0, "{t:?}");
    assert!(t.gaps_client + t.gaps_server > 0, "{t:?}");
    assert!(t.largest_gaps.iter().any(|g| g.len_us >= 200.0), "{t:?}");
}

#[test]
fn a_quiet_run_has_an_empty_tail_not_a_missing_one() {
    let t = tail_of("qt", "afxdp", probe(300, None), 0, TailThreshold::Micros(1_000_000.0), "", "");
    assert_eq!(t.rounds, 0, "{t:?}");
    assert_eq!(t.line(), "no rounds above 1000000.0 µs");
    assert!(t.method.contains("osnoise"), "the report says what evidence it used");
}
