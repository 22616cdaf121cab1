//! `detpath bench server` / `detpath bench client --peer`: the two sides of
//! the ping-pong on two hosts (or two namespaces: `--netns`). The server
//! echoes probes with its receive and send timestamps until SIGINT/SIGTERM;
//! the client measures and saves results like the testbed run does.
//!
//! ```text
//! host B$ detpath bench server --endpoint afxdp://eth1?port=7100 --cpu 2
//! host A$ detpath bench client --endpoint afxdp://eth1?port=7101 --peer 10.0.0.2:7100 --cpu 2
//! ```

use super::common::{finish, progress_bar, ProbeArgs};
use anyhow::Context;
use detpath::sys::cleanup::{self, OnSignal};
use detpath::sys::cputime::{CoreTicks, CpuReport};
use detpath_bench::matrix::{realtime, run_cpu, save_outcome};
use detpath_bench::run::{run_client, run_server};
use detpath_instrument::{Environment, ResultDir, RunConfig};
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Where and how one side runs.
#[derive(clap::Args)]
pub struct SideArgs {
    /// Local endpoint spec, e.g. `afxdp://eth1?port=7100` or `udp://10.0.0.2:7100`; with
    /// `sched=slots&slot_ns=..&classes=..` the sends leave through the slot scheduler (crates/sched).
    #[arg(long)]
    endpoint: String,
    /// Pin the polling thread to this core.
    #[arg(long)]
    cpu: Option<u32>,
    /// Run the polling thread SCHED_FIFO at this priority (1..=99), memory
    /// locked (with --cpu; see `detpath tune` to isolate the core first).
    /// Without it the thread is not real-time.
    #[arg(long, requires = "cpu", value_parser = crate::vocab::rt_priority)]
    rt_priority: Option<u8>,
    /// Run inside this network namespace.
    #[arg(long)]
    netns: Option<String>,
}

impl SideArgs {
    /// Enters the namespace (for the calling thread) and opens the endpoint.
    fn open(
        &self,
        hold_cstates: bool,
        metrics: Option<&detpath_metrics::Metrics>,
    ) -> anyhow::Result<(Option<detpath::sys::netns::NetnsGuard>, Box<dyn detpath::Endpoint>)> {
        let ns = self.netns.as_deref().map(detpath::sys::netns::enter).transpose()?;
        // detpath_open: every layer's keys (the slot scheduler's sched=slots&... too).
        let mut spec = detpath_open::parse(&self.endpoint)?;
        if let Some(rt) = realtime(self.cpu, self.rt_priority, hold_cstates) {
            spec = spec.with_realtime(&rt);
        }
        if let Some(m) = metrics {
            spec = spec.with_layer(m.layer());
        }
        let ep = detpath_open::open_spec(&spec).with_context(|| format!("opening {spec}"))?;
        Ok((ns, ep))
    }
}

/// Arguments of `detpath bench server`: where the echo endpoint opens, its
/// /metrics, and whether the closing summary is JSON.
#[derive(clap::Args)]
#[command(after_help = SERVER_EXIT_CODES)]
pub struct ServerArgs {
    #[command(flatten)]
    side: SideArgs,
    #[command(flatten)]
    metrics: crate::metrics_args::MetricsArgs,
    /// When stopped, print what was echoed as one JSON document (`echoed`,
    /// `not_probes`, `not_a_ping`, `not_sent`, `counters` by name) on stdout.
    #[arg(long)]
    json: bool,
}

/// The exit codes of `detpath bench server`.
const SERVER_EXIT_CODES: &str = "Exit codes: 0 stopped by SIGINT/SIGTERM (what was echoed is printed); \
2 an error (the endpoint could not open, the interface went away, permissions).";

/// Arguments of `detpath bench client`: where the measuring endpoint opens,
/// the server to measure against, the probes, where results go and the loss gate.
#[derive(clap::Args)]
#[command(after_help = super::common::EXIT_CODES)]
pub struct ClientArgs {
    #[command(flatten)]
    side: SideArgs,
    /// The server's address and port (where `detpath bench server` listens).
    #[arg(long)]
    peer: SocketAddrV4,
    #[command(flatten)]
    probe: ProbeArgs,
    /// Where result directories go.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Print the results as one JSON document (the list of runs, as in
    /// summary.json) instead of tables.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    gate: super::common::LossGate,
    /// The CPU stress (percent) that runs on the hosts during this
    /// measurement, started by you or your orchestration (the Ansible bench
    /// role): recorded in the results so the run is labelled D&S / T&S.
    /// bench client starts no load itself.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    under_stress: u8,
}

/// Echoes probes until SIGINT/SIGTERM; prints what it echoed.
pub fn server(args: ServerArgs) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let metrics = args.metrics.start()?; // before --netns: scraped from the host
    let stop = Arc::new(AtomicBool::new(false));
    let watcher_stop = stop.clone();
    // run_server checks `stop` every 10 ms of silence; the watcher turns a
    // signal into it. Spawned before the endpoint opens: opening makes this
    // thread real-time and pinned, which a thread spawned later would inherit
    // and then starve behind the polling loop on that core.
    let watcher = std::thread::spawn(move || {
        while !cleanup::interrupted() && !watcher_stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        watcher_stop.store(true, Ordering::Relaxed);
    });
    let (_ns, mut ep) = args.side.open(true, Some(&metrics))?;
    let caps = ep.capabilities().clone();
    eprintln!("bench server on {} ({})", ep.local_addr(), caps.summary());
    for note in &caps.notes {
        eprintln!("  {note}");
    }
    let ticks_before = CoreTicks::now();
    // The client's run length is not known here: the probe keeps the default number of gaps.
    let report = run_server(ep.as_mut(), &stop, detpath_instrument::noise::GAP_CAPACITY);
    let ticks_after = CoreTicks::now();
    stop.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    let report = report?;
    let counters = ep.counters();
    // The server's own CPU record (the client's summary.json has the
    // client's): the server thread from the first probe to the stop, the
    // core it was given, probes echoed per CPU-second.
    let (threads, wall_s) = report.cpu.clone().map(|(t, w)| (vec![t], w)).unwrap_or_default();
    let cpu = CpuReport::new(threads, &ticks_before, &ticks_after, &args.side.cpu.into_iter().collect::<Vec<_>>(), report.echoed as f64);
    if args.json {
        let by_name: serde_json::Map<String, serde_json::Value> = counters.iter().map(|(n, v)| (n.to_string(), v.into())).collect();
        let json = serde_json::json!({ "echoed": report.echoed, "not_probes": report.not_probes, "not_a_ping": report.not_a_ping, "not_sent": report.not_sent, "wall_s": wall_s, "cpu": cpu, "counters": by_name });
        println!("{json}");
    }
    let counters: Vec<String> = counters.iter().map(|(n, v)| format!("{n}={v}")).collect();
    eprintln!(
        "bench server: echoed {} probes, {} datagrams were not probes, {} were pongs (never echoed), {} echoes not sent (counted by cause); counters {}",
        report.echoed,
        report.not_probes,
        report.not_a_ping,
        report.not_sent,
        counters.join(" ")
    );
    eprintln!("bench server: cpu {} over {wall_s:.2} s", cpu.summary());
    Ok(0)
}

/// Measures against a remote server and saves the result.
pub fn client(args: ClientArgs) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let pp = args.probe.config()?;
    let env = Environment::capture();
    let mut dir = ResultDir::create(&args.out).with_context(|| format!("creating a result directory under {}", args.out.display()))?;
    let (_ns, mut ep) = args.side.open(false, None)?;
    let caps = ep.capabilities().clone();
    let datapath = caps.datapath.to_string();
    eprintln!("bench client: {} -> {}: {} rounds of {} B every {} µs", caps.summary(), args.peer, pp.rounds, pp.size, pp.period_ns as f64 / 1000.0);
    let stop_now = AtomicBool::new(false);
    let bar = progress_bar(pp.total_rounds());
    let ticks_before = CoreTicks::now();
    let outcome = run_client(ep.as_mut(), args.peer, &pp, &stop_now, |n| {
        bar.set_position(n);
        if cleanup::interrupted() {
            stop_now.store(true, Ordering::Relaxed);
        }
    })?;
    let ticks_after = CoreTicks::now();
    bar.finish_and_clear();
    let config = RunConfig {
        datapath,
        mode: format!("client {} / server remote", caps.summary()),
        size: pp.size,
        period_ns: pp.period_ns,
        rounds: pp.rounds,
        timeout_ns: pp.loss_timeout_ns,
        stress_percent: args.under_stress,
        tuned: args.side.rt_priority.is_some(),
        tuning: match args.side.rt_priority {
            Some(p) => format!("client polling thread SCHED_FIFO {p}"),
            None => "default".into(),
        },
        cpu_client: args.side.cpu,
        cpu_server: None,
        peer: Some(args.peer.to_string()),
        extra: [("client_endpoint".to_string(), args.side.endpoint.clone())].into_iter().collect(),
    };
    let cpu = run_cpu(vec![outcome.cpu.clone()], &outcome, &ticks_before, &ticks_after, &args.side.cpu.into_iter().collect::<Vec<_>>());
    save_outcome(&mut dir, config, &env, &pp, &outcome, None, Some(cpu))?;
    let answered = outcome.rounds.iter().take(outcome.sent as usize).filter(|r| r.answered()).count();
    if answered == 0 && outcome.sent > 0 {
        eprintln!("bench client: no probe was answered: is `detpath bench server` running at {}?", args.peer);
    }
    finish(&dir, args.json, false, args.gate)
}
