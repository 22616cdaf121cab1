//! What a ping-pong run costs in CPU: every `detpath bench` run carries a
//! `cpu` record (each worker thread's user and system time, the busy share
//! of the cores they ran on, rounds per CPU-second), the table shows it
//! beside latency, and `detpath report` plots latency against it.
//!
//! The real runs need root (namespaces; afxdp needs XDP) and busy-poll, so
//! they go one at a time. The VM is loaded: a busy-polling thread is
//! compared with the wall time it was not waiting for a CPU (its run-queue
//! wait from /proc/thread-self/schedstat taken out), not with the bare wall
//! time.
// The instrument's synthetic runs (deterministic, no datapath).
#[path = "../../instrument/tests/common/mod.rs"]
mod common;

use detpath::sys::cputime::{CoreUse, CpuReport, ThreadCpu};
use detpath::testbed::{Testbed, TestbedConfig};
use detpath_bench::matrix::{realtime, run_matrix, Configuration, MatrixConfig, Observer};
use detpath_bench::run::{run_client, run_server, ClientOutcome, PingPongConfig, ServerReport};
use detpath_instrument::tail::TailThreshold;
use detpath_instrument::{report, table, ResultDir};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// One `detpath bench` run of `datapath` in a fresh testbed (client core 0,
/// server core 1), as `run_matrix` saves it.
fn bench_run(tag: &str, datapath: &str, rounds: u64) -> (detpath_instrument::RunResult, String) {
    let (mut runs, json) = bench_runs(tag, &[datapath], rounds, |_| {});
    (runs.remove(0), json)
}

/// `detpath bench` of `datapaths` (with the matrix configuration changed by
/// `with`: sockperf, the kernel tracer) in a fresh testbed, client core 0,
/// server core 1: every run as summary.json saved it, and its text.
fn bench_runs(tag: &str, datapaths: &[&str], rounds: u64, with: impl FnOnce(&mut MatrixConfig)) -> (Vec<detpath_instrument::RunResult>, String) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let datapath = datapaths[0];
    let out = std::env::temp_dir().join(format!("detpath-cpu-{tag}-{}", std::process::id()));
    let cfg = MatrixConfig {
        datapaths: datapaths.iter().map(|d| d.to_string()).collect(),
        probes: vec![PingPongConfig { size: 256, period_ns: 200_000, rounds, warmup: 100, loss_timeout_ns: 200_000_000, stall: None, sleep_slack_ns: None }],
        configurations: vec![Configuration { stress: 0, tuned: false }],
        cpus: (0, 1),
        out: out.clone(),
        testbed: format!("detpath-c{tag}{}", std::process::id() % 10_000),
        tune_cores: None,
        rt_priority: 50,
        with_sockperf: false,
        tail_threshold: TailThreshold::default(),
        keys: if datapath == "udp" { "rcvbuf=8388608".into() } else { String::new() },
        server_keys: String::new(),
        library_logs_to_stderr: false,
        trace_kernel: false,
        trace_cost: false,
    };
    let mut cfg = cfg;
    with(&mut cfg);
    let notes = Arc::new(Mutex::new(Vec::new()));
    let seen = notes.clone();
    let observe: Observer = Arc::new(move |e| {
        if let detpath_bench::matrix::Event::Note(n) = e {
            seen.lock().unwrap().push(n);
        }
    });
    let outcome = run_matrix(&cfg, observe).expect("the run");
    assert!(!outcome.failed, "{:?}", notes.lock().unwrap());
    // What was saved, not only what is in memory: the summary.json round trip.
    let saved = ResultDir::load(outcome.dir.path()).expect("summary.json");
    let json = std::fs::read_to_string(outcome.dir.path().join("summary.json")).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    assert!(!saved.is_empty(), "no run saved");
    (saved, json)
}

fn thread<'a>(cpu: &'a CpuReport, name: &str) -> &'a ThreadCpu {
    cpu.threads.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no `{name}` thread in {cpu:?}"))
}

fn a_bench_run_records_its_cpu(tag: &str, datapath: &str) {
    let (run, json) = bench_run(tag, datapath, 5_000);
    let cpu = run.cpu.as_ref().expect("a testbed run has a cpu record");
    println!("{datapath}: {} over {:.2} s", cpu.summary(), run.duration_s);
    let names: Vec<&str> = cpu.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["client", "server", "noise-sampler"], "{cpu:?}");
    let (client, server) = (thread(cpu, "client"), thread(cpu, "server"));
    assert!(client.total_s() > 0.0 && server.total_s() > 0.0, "{cpu:?}");
    // Pinned where the matrix put them.
    assert_eq!((client.core, server.core), (Some(0), Some(1)), "{cpu:?}");
    // Each thread's own time, not the process's: no thread used more than
    // the wall time (plus the server's few ms before the stop and the
    // accounting's tick split).
    for t in &cpu.threads {
        assert!(t.total_s() <= run.duration_s * 1.1 + 0.3, "{} used {:.3} s in a {:.3} s run", t.name, t.total_s(), run.duration_s);
    }
    // The sampler sleeps 1 ms between its reads: a small share of a core.
    assert!(thread(cpu, "noise-sampler").total_s() < run.duration_s * 0.5, "{cpu:?}");
    // Both polling cores, with shares of their time.
    assert_eq!(cpu.cores.iter().map(|c| c.core).collect::<Vec<_>>(), [0, 1], "{cpu:?}");
    assert!(cpu.cores.iter().all(|c| (0.0..=1.0).contains(&c.busy) && (0.0..=1.0).contains(&c.steal)), "{cpu:?}");
    // Rounds sent (warm-up included) per CPU-second of all three threads.
    let w = cpu.work_per_cpu_s.expect("the threads used CPU");
    assert!((w - 5_100.0 / cpu.cpu_s()).abs() < 1e-6 * w, "{w} vs {}", 5_100.0 / cpu.cpu_s());
    // The JSON shape of the issue, and today's tail fields beside it.
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let r = &v["runs"][0];
    for k in ["name", "core", "user_s", "system_s"] {
        assert!(r["cpu"]["threads"][0].get(k).is_some(), "cpu.threads[0] lacks {k}: {}", r["cpu"]);
    }
    assert!(r["cpu"]["cores"][0]["busy"].is_number() && r["cpu"]["work_per_cpu_s"].is_number(), "{}", r["cpu"]);
    for k in ["rounds", "unexplained", "client_late", "server_slow", "descheduled"] {
        assert!(r["tail"].get(k).is_some(), "tail lacks {k}: {}", r["tail"]);
    }
    // The table puts CPU beside latency.
    let t = table::render(std::slice::from_ref(&run));
    print!("{}", table::cpu_table(std::slice::from_ref(&run)));
    assert!(t.contains("CPU per run") && t.contains("rounds/cpu-s") && t.contains("client ") && t.contains("cpu0 "), "{t}");
}

/// Every test here runs in the testbed's namespaces (root) with the client
/// and the server pinned to cores 0 and 1 (two CPUs).
fn ready(test: &str) -> bool {
    detpath_testkit::need_root(test, "the testbed's namespaces") && detpath_testkit::need_cpus(test, 2)
}

#[test]
fn a_udp_bench_run_records_its_cpu() {
    const TEST: &str = "a_udp_bench_run_records_its_cpu";
    if !ready(TEST) {
        return;
    }
    a_bench_run_records_its_cpu("u", "udp");
}

#[test]
fn an_afxdp_bench_run_records_its_cpu() {
    const TEST: &str = "an_afxdp_bench_run_records_its_cpu";
    if !ready(TEST) {
        return;
    }
    a_bench_run_records_its_cpu("x", "afxdp");
}

/// `--with-sockperf`: the sockperf row carries the CPU of its two processes
/// (their user and system time, read when they exit), each on the core
/// it was pinned to, in the same shape as the detpath row beside it.
#[test]
fn the_sockperf_row_carries_the_cpu_of_its_processes() {
    const TEST: &str = "the_sockperf_row_carries_the_cpu_of_its_processes";
    if !ready(TEST) || !detpath_testkit::need_tool(TEST, "sockperf", "sockperf") {
        return;
    }
    let (runs, json) = bench_runs("s", &["udp"], 3_000, |c| c.with_sockperf = true);
    let names: Vec<&str> = runs.iter().map(|r| r.config.datapath.as_str()).collect();
    assert_eq!(names, ["udp", "sockperf"]);
    let run = &runs[1];
    let cpu = run.cpu.as_ref().expect("the sockperf row has a cpu record");
    println!("sockperf: {} over {:.2} s", cpu.summary(), run.duration_s);
    let names: Vec<&str> = cpu.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["sockperf-client", "sockperf-server"], "{cpu:?}");
    let (client, server) = (thread(cpu, "sockperf-client"), thread(cpu, "sockperf-server"));
    assert!(client.user_s + client.system_s > 0.0 && server.user_s + server.system_s > 0.0, "{cpu:?}");
    assert_eq!((client.core, server.core), (Some(0), Some(1)), "{cpu:?}");
    // A process that lived a few seconds used no more than that (each is
    // one thread on one core; the wrappers' exec time is in it too).
    for t in &cpu.threads {
        assert!(t.total_s() < run.duration_s + 5.0, "{} used {:.3} s in a {:.3} s run", t.name, t.total_s(), run.duration_s);
    }
    assert_eq!(cpu.cores.iter().map(|c| c.core).collect::<Vec<_>>(), [0, 1], "{cpu:?}");
    // The messages in sockperf's log per CPU-second of both processes.
    let w = cpu.work_per_cpu_s.expect("the processes used CPU");
    assert!((w - run.config.rounds as f64 / cpu.cpu_s()).abs() < 1e-6 * w, "{w} vs {} rounds", run.config.rounds);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let saved = &v["runs"][1]["cpu"];
    for k in ["name", "core", "user_s", "system_s"] {
        assert!(saved["threads"][1].get(k).is_some(), "cpu.threads[1] lacks {k}: {saved}");
    }
    assert!(saved["work_per_cpu_s"].is_number(), "{saved}");
}

/// `--trace-kernel`: the tracer's reader thread is one of the run's
/// threads (`ktrace-reader`), so what tracing cost is in the record.
#[test]
fn a_traced_run_lists_the_kernel_tracers_reader() {
    const TEST: &str = "a_traced_run_lists_the_kernel_tracers_reader";
    if !ready(TEST) {
        return;
    }
    let (runs, _) = bench_runs("t", &["udp"], 3_000, |c| c.trace_kernel = true);
    let cpu = runs[0].cpu.as_ref().expect("a cpu record");
    println!("traced udp: {}", cpu.summary());
    let names: Vec<&str> = cpu.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["client", "server", "noise-sampler", detpath_ktrace::tracer::READER], "{cpu:?}");
    let reader = thread(cpu, "ktrace-reader");
    // It drains every 10 ms: some CPU, and less than the run's wall time.
    assert!(reader.total_s() > 0.0 && reader.total_s() < runs[0].duration_s + 0.3, "{reader:?} over {} s", runs[0].duration_s);
    assert!(reader.core.is_some(), "{reader:?}");
    // Its CPU counts in the work per CPU-second like the others'.
    let w = cpu.work_per_cpu_s.unwrap();
    assert!((w - 3_100.0 / cpu.cpu_s()).abs() < 1e-6 * w, "{w}");
}

/// The calling thread's time on a CPU and waiting for one, ns (/proc/thread-self/schedstat).
fn schedstat() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat (CONFIG_SCHED_INFO)");
    let v: Vec<u64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
    (v[0], v[1])
}

/// A measured client: its outcome, and the wall time of its run minus its
/// run-queue wait (the time it could have run), seconds.
struct Measured {
    outcome: ClientOutcome,
    server: ServerReport,
    runnable_s: f64,
}

impl Measured {
    /// The client's CPU time over the time it could have run.
    fn client_share(&self) -> f64 {
        self.outcome.cpu.total_s() / self.runnable_s
    }
    fn client_us_per_round(&self) -> f64 {
        self.outcome.cpu.total_s() * 1e6 / self.outcome.sent as f64
    }
}

/// A client (busy-polling, or sleeping between rounds with `sleep_slack_ns`)
/// against a busy-polling server over `datapath` in a fresh testbed, both
/// SCHED_FIFO and pinned (client core 0, server core 1) as in the matrix's
/// tuned runs, where the sleeping client is used: on this loaded VM a
/// SCHED_OTHER client waits so long for a CPU after each wake-up that it
/// never gets to sleep.
fn ping_pong(tag: &str, datapath: &str, port: u16, cfg: &PingPongConfig) -> Measured {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique(tag)).expect("testbed up");
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let uri = detpath::EndpointSpec::from_str(&tb.b().uri(datapath, port)).unwrap().with_realtime(&realtime(Some(1), Some(50), false).unwrap());
    let stop_s = stop.clone();
    let server = tb.b().spawn(move || {
        let mut ep = detpath::open_spec(&uri).unwrap_or_else(|e| panic!("{uri}: {e}"));
        ready_tx.send(ep.local_addr()).unwrap();
        run_server(ep.as_mut(), &stop_s, detpath_instrument::noise::GAP_CAPACITY).unwrap()
    });
    let server_addr = ready_rx.recv().expect("server opened");
    let client_uri = detpath::EndpointSpec::from_str(&tb.a().uri(datapath, port + 1)).unwrap().with_realtime(&realtime(Some(0), Some(50), false).unwrap());
    let (outcome, runnable_s) = tb
        .a()
        .run(|| {
            let mut ep = detpath::open_spec(&client_uri).unwrap_or_else(|e| panic!("{client_uri}: {e}"));
            let (t0, (_, w0)) = (detpath::monotonic_ns(), schedstat());
            let out = run_client(ep.as_mut(), server_addr, cfg, &AtomicBool::new(false), |_| {}).unwrap();
            let (t1, (_, w1)) = (detpath::monotonic_ns(), schedstat());
            (out, ((t1 - t0) - (w1 - w0)) as f64 / 1e9)
        })
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let server = server.join().unwrap().unwrap();
    Measured { outcome, server, runnable_s }
}

fn busy_poll_costs_a_core_and_sleeping_does_not(tag: &str, datapath: &str, port: u16) {
    // 2 ms between rounds: a sleeping client spins only the last 30 µs
    // before each send and until its pong is in.
    let cfg = PingPongConfig { size: 256, period_ns: 2_000_000, rounds: 800, warmup: 20, loss_timeout_ns: 200_000_000, stall: None, sleep_slack_ns: None };
    let busy = ping_pong(&format!("{tag}b"), datapath, port, &cfg);
    let sleeping = ping_pong(&format!("{tag}s"), datapath, port + 2, &PingPongConfig { sleep_slack_ns: Some(30_000), ..cfg.clone() });
    for (what, m) in [("busy", &busy), ("sleeping", &sleeping)] {
        println!(
            "{datapath} {what} client: {:.3} s CPU ({:.0}% of the {:.3} s it could run), {:.1} µs CPU per round; server {:?}",
            m.outcome.cpu.total_s(),
            m.client_share() * 100.0,
            m.runnable_s,
            m.client_us_per_round(),
            m.server.cpu
        );
        assert_eq!(m.outcome.sent, 820, "{what}");
        // The server busy-polls in both runs: it spins from the first probe
        // to the stop, so its CPU time is a large share of that span.
        let (server, span_s) = m.server.cpu.clone().expect("the server got probes");
        assert_eq!(server.name, "server");
        assert!(server.total_s() > 0.0 && server.total_s() <= span_s * 1.05 + 0.02, "{what}: {server:?} over {span_s} s");
    }
    // A busy-polling client never sleeps: it runs whenever it can.
    assert!(busy.client_share() >= 0.5, "busy-poll client used {:.0}% of its runnable time", busy.client_share() * 100.0);
    // Sleeping between rounds it uses a small share, and far less per round.
    assert!(sleeping.client_share() < 0.5, "sleeping client used {:.0}% of its runnable time", sleeping.client_share() * 100.0);
    assert!(
        sleeping.client_share() < busy.client_share() / 2.0,
        "sleeping {:.0}% vs busy {:.0}%",
        sleeping.client_share() * 100.0,
        busy.client_share() * 100.0
    );
    assert!(
        sleeping.client_us_per_round() < busy.client_us_per_round() / 2.0,
        "sleeping {:.1} vs busy {:.1} µs CPU per round",
        sleeping.client_us_per_round(),
        busy.client_us_per_round()
    );
}

#[test]
fn busy_poll_costs_a_core_and_sleeping_does_not_over_udp() {
    const TEST: &str = "busy_poll_costs_a_core_and_sleeping_does_not_over_udp";
    if !ready(TEST) {
        return;
    }
    busy_poll_costs_a_core_and_sleeping_does_not("cpuu", "udp", 7500);
}

#[test]
fn busy_poll_costs_a_core_and_sleeping_does_not_over_afxdp() {
    const TEST: &str = "busy_poll_costs_a_core_and_sleeping_does_not_over_afxdp";
    if !ready(TEST) {
        return;
    }
    busy_poll_costs_a_core_and_sleeping_does_not("cpux", "afxdp", 7510);
}

fn with_cpu(mut run: detpath_instrument::RunResult, client_s: f64, server_s: f64) -> detpath_instrument::RunResult {
    let t = |name: &str, core, s: f64| ThreadCpu { name: name.into(), core: Some(core), user_s: s * 0.8, system_s: s * 0.2 };
    let threads = vec![t("client", 2, client_s), t("server", 3, server_s)];
    let total = client_s + server_s;
    run.duration_s = 2.0;
    run.cpu = Some(CpuReport {
        threads,
        cores: vec![CoreUse { core: 2, busy: client_s / 2.0, steal: 0.0 }, CoreUse { core: 3, busy: server_s / 2.0, steal: 0.01 }],
        work_per_cpu_s: Some(20_000.0 / total),
    });
    run
}

#[test]
fn the_report_plots_latency_against_cpu() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = ResultDir::create(&tmp.path().join("results")).unwrap();
    // Busy poll on both sides (a core each) against a sleeping client.
    let cases = [("udp", 0u8, 30_000u64, 2.0, 2.0), ("afxdp", 0, 12_000, 2.0, 2.0), ("afxdp", 80, 15_000, 0.2, 2.0)];
    for (i, (dp, stress, base, client_s, server_s)) in cases.into_iter().enumerate() {
        let recs = common::records(i as u64 + 3, 20_000, base, 2_000.0, base * 20, 3_000);
        let run = with_cpu(common::run(dp, stress, false, &recs), client_s, server_s);
        d.save_run(&run, &recs).unwrap();
    }
    // A run without a CPU record (an older summary.json) is left off the plot.
    let recs = common::records(9, 2_000, 20_000, 1_000.0, 0, 0);
    d.save_run(&common::run("xdppoll", 0, false, &recs), &recs).unwrap();
    let runs = report::load_dirs(&[d.path().to_path_buf()]).unwrap();
    assert_eq!(runs.iter().filter(|r| r.run.cpu.is_some()).count(), 3, "the cpu record survives summary.json");
    let out = tmp.path().join("plots");
    let files = report::render(&runs, &out).unwrap();
    let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert!(names.contains(&"cpu_latency.png".to_string()) && names.contains(&"cpu_latency.svg".to_string()), "{names:?}");
    let png = std::fs::read(out.join("cpu_latency.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 10_000, "{} bytes", png.len());
    let svg = std::fs::read_to_string(out.join("cpu_latency.svg")).unwrap();
    // 4 s of CPU over 20,000 rounds: 200 µs per round; 2.2 s: 110 µs.
    for l in ["udp D", "afxdp D", "afxdp D&amp;S", "200.0 µs CPU/round", "110.0 µs CPU/round", "CPU per round", "p99.9"] {
        assert!(svg.contains(l), "cpu_latency.svg lacks {l}");
    }
    assert!(!svg.contains("xdppoll"), "a run without CPU is not plotted");
    // Without any CPU record there is no such figure.
    assert!(report::render_cpu(&runs[3..], &tmp.path().join("none")).unwrap().is_empty());
    // And the table of the same runs.
    let t = report::tables(&runs);
    print!("{t}");
    assert!(t.contains("client 100%, server 100%"), "{t}");
    assert!(t.contains("client 10%, server 100%"), "{t}");
    assert!(t.contains("cpu2 100%, cpu3 100%"), "{t}");
}
