//! A run whose server namespace vanishes between two rates (`detpath bench
//! --rate 8,80`) fails that run with the cause, the namespace, not with the
//! channel the server thread never wrote to ("receiving on a closed
//! channel", which the matrix reported before `ready::wait_ready`). Root:
//! the testbed's namespaces.
use detpath_bench::matrix::{run_matrix, Configuration, Event, MatrixConfig, Observer};
use detpath_bench::run::PingPongConfig;
use detpath_instrument::tail::TailThreshold;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[test]
fn a_server_namespace_gone_before_the_second_rate_is_named_in_that_runs_failure() {
    let tag = std::process::id() % 10_000;
    let testbed = format!("detpath-lns{tag}");
    let out = std::env::temp_dir().join(format!("detpath-lost-ns-{tag}"));
    let probe = |period_ns| PingPongConfig { size: 64, period_ns, rounds: 300, warmup: 20, loss_timeout_ns: 100_000_000, stall: None, sleep_slack_ns: None };
    let cfg = MatrixConfig {
        datapaths: vec!["udp".into()],
        probes: vec![probe(125_000), probe(12_500)],
        configurations: vec![Configuration { stress: 0, tuned: false }],
        cpus: (0, 1),
        out: out.clone(),
        testbed: testbed.clone(),
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
    let (seen, removed) = (notes.clone(), Arc::new(AtomicBool::new(false)));
    let server_ns = format!("{testbed}-b");
    let ns = server_ns.clone();
    let observe: Observer = Arc::new(move |e| match e {
        // The first rate is done: the server's namespace goes, as an operator's `ip netns del` would.
        Event::RunDone if !removed.swap(true, Ordering::SeqCst) => {
            let st = Command::new("ip").args(["netns", "del", &ns]).status().expect("ip");
            assert!(st.success(), "ip netns del {ns}");
        }
        Event::Note(n) => seen.lock().unwrap().push(n),
        _ => {}
    });
    let outcome = run_matrix(&cfg, observe).expect("the matrix runs (one of its runs fails)");
    let _ = std::fs::remove_dir_all(&out);
    let notes = notes.lock().unwrap().clone();
    assert!(outcome.failed, "the second run should have failed: {notes:?}");
    let failure = notes.iter().find(|n| n.starts_with("bench: udp:")).unwrap_or_else(|| panic!("no failure note: {notes:?}"));
    eprintln!("the failed run: {failure}");
    assert!(failure.contains("server thread") && failure.contains(&server_ns), "the cause is not named: {failure}");
    assert!(!failure.contains("closed channel"), "{failure}");
    // The first rate's run was measured and saved before the namespace went.
    assert_eq!(outcome.dir.runs().len(), 1, "{notes:?}");
}
