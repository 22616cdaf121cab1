//! A datapath registered at run time is a datapath like the built-in ones:
//! `udp2`, a thin wrapper whose opener is udp's, built here and added with
//! `detpath::datapath::register`, runs the ping-pong benchmark and the slot
//! scheduler's benchmark in the testbed with no edit of the benchmark, and
//! its rows carry its own name and display name (its registry entry's facts,
//! not a match on its name somewhere else).
//!
//! Needs root (namespaces). Both tests busy-poll, so they run one at a time.

use detpath::datapath::{Datapath, GroupReception};
use detpath::spec::EndpointSpec;
use detpath::testbed::{Testbed, TestbedConfig};
use detpath::Endpoint;
use detpath_bench::matrix::{run_matrix, Configuration, Event, MatrixConfig, Observer};
use detpath_bench::run::PingPongConfig;
use detpath_sched_bench::{self as slots_bench, BenchConfig, Method};
use detpath_instrument::tail::TailThreshold;
use std::sync::{Arc, Mutex, Once};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const NAME: &str = "udp2";
const DISPLAY: &str = "UDP (wrapper)";

/// Opens a udp endpoint: the wrapper adds nothing but its own registry entry.
fn open_udp2(spec: &EndpointSpec) -> detpath::Result<Box<dyn Endpoint>> {
    let udp = detpath::datapath::find("udp").expect("udp is built in");
    (udp.open.expect("udp opens datagrams"))(spec)
}

/// The wrapper's entry: udp's keys and facts, its own name and display name.
const ENTRY: Datapath = Datapath {
    name: NAME,
    display: DISPLAY,
    summary: "kernel UDP socket under another name (a test's registered datapath)",
    arrival_stamp: Some("rx_stamp=kernel"),
    group_reception: GroupReception::KernelSocket,
    keys: &["busy_poll", "batch", "rcvbuf", "sndbuf", "rx_stamp"],
    open: Some(open_udp2),
    frames: None,
};

static UDP2: Datapath = ENTRY;

fn register_once() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| detpath::datapath::register(&UDP2).expect("udp2 is a new name"));
}

#[test]
fn a_registered_datapath_is_listed_and_refused_twice() {
    register_once();
    let found = detpath::datapath::find(NAME).expect("found after register");
    assert_eq!(found.display, DISPLAY);
    assert!(detpath::datapath::transports().any(|d| d.name == NAME));
    assert!(detpath::datapath::names().contains(&NAME));
    assert_eq!(detpath_instrument::table::display_name(NAME), DISPLAY);
    // A second datapath of a taken name, built in or registered, or a layer's name, is refused.
    assert!(detpath::datapath::register(&UDP2).is_err());
    static FAULT: Datapath = Datapath { name: "fault", ..ENTRY };
    static UDP: Datapath = Datapath { name: "udp", ..ENTRY };
    let e = detpath::datapath::register(&FAULT).unwrap_err().to_string();
    assert!(e.contains("`fault`"), "{e}");
    assert!(detpath::datapath::register(&UDP).is_err());
    assert_eq!(detpath::datapath::find("udp").unwrap().display, "UDP socket", "the built-in entry stays");
}

#[test]
fn the_ping_pong_bench_runs_over_a_registered_datapath() {
    if !detpath_testkit::need_root("the_ping_pong_bench_runs_over_a_registered_datapath", "namespaces") {
        return;
    }
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    register_once();
    let tag = std::process::id() % 10_000;
    let out = std::env::temp_dir().join(format!("detpath-registered-{tag}"));
    let cfg = MatrixConfig {
        datapaths: vec![NAME.into()],
        probes: vec![PingPongConfig { size: 64, period_ns: 100_000, rounds: 500, warmup: 50, loss_timeout_ns: 100_000_000, stall: None, sleep_slack_ns: None }],
        configurations: vec![Configuration { stress: 0, tuned: false }],
        cpus: (0, 1),
        out: out.clone(),
        testbed: format!("detpath-reg{tag}"),
        tune_cores: None,
        rt_priority: 50,
        with_sockperf: false,
        tail_threshold: TailThreshold::default(),
        keys: String::new(),
        server_keys: String::new(),
        library_logs_to_stderr: false,
        trace_kernel: false,
        trace_cost: false,
    };
    let notes = Arc::new(Mutex::new(Vec::new()));
    let seen = notes.clone();
    let observe: Observer = Arc::new(move |e| {
        if let Event::Note(n) = e {
            seen.lock().unwrap().push(n);
        }
    });
    let outcome = run_matrix(&cfg, observe).expect("the matrix runs");
    let runs = outcome.dir.runs().to_vec();
    let table = detpath_instrument::table::render(&runs);
    let _ = std::fs::remove_dir_all(&out);
    let notes = notes.lock().unwrap().clone();
    assert!(!outcome.failed, "{notes:?}");
    assert_eq!(runs.len(), 1, "{notes:?}");
    let run = &runs[0];
    assert_eq!(run.config.datapath, NAME);
    assert!(run.complete, "{notes:?}");
    assert!(run.rtt.count > 0, "no round trip measured: {notes:?}");
    eprintln!("{table}");
    assert!(table.contains(DISPLAY), "the table names the wrapper by its display name:\n{table}");
}

#[test]
fn the_slot_bench_runs_over_a_registered_datapath() {
    if !detpath_testkit::need_root("the_slot_bench_runs_over_a_registered_datapath", "namespaces") {
        return;
    }
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    register_once();
    let mut cfg = BenchConfig::paper();
    cfg.datapaths = vec![NAME.into()];
    cfg.methods = vec![Method::Slots];
    cfg.duration_ns = 1_000_000_000;
    cfg.warmup_ns = 200_000_000;
    let tb = TestbedConfig::unique("schr");
    cfg.testbed_prefix = tb.a.netns.trim_end_matches("-a").to_string();
    let report = slots_bench::run(&cfg, "test", &|l| eprintln!("{l}"), &|| false).expect("bench runs");
    assert!(!Testbed::status(&tb).complete(&tb), "testbed {} left behind", cfg.testbed_prefix);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.runs.len(), 1);
    let run = &report.runs[0];
    assert_eq!(run.datapath, NAME);
    assert!(run.rt_sent > 0 && run.rt_received > 0, "{NAME}: sent {} received {}", run.rt_sent, run.rt_received);
}
