//! `detpath bench` (no subcommand), the main job: every datapath in the
//! built-in testbed. Client in namespace a, server in namespace b, each a
//! thread pinned to its own core; results saved under `results/<timestamp>/`.
//! `--matrix` runs paper 000's three configurations (Default, Default &
//! Stress, Tuned & Stress) for every datapath.

use crate::bench_cmd::{finish, progress_bar, save_outcome, with_rt_keys, ProbeArgs};
use anyhow::Context;
use detpath::cleanup::{self, OnSignal};
use detpath::testbed::{Testbed, TestbedConfig};
use detpath_bench::run::{run_client, run_server, ClientOutcome, PingPongConfig, ServerFaults};
use detpath_bench::{Environment, ResultDir, RunConfig};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

#[derive(clap::Args)]
pub struct Args {
    /// Datapaths to measure (default: every registered one).
    #[arg(long, value_delimiter = ',')]
    datapath: Vec<String>,
    #[command(flatten)]
    probe: ProbeArgs,
    /// Cores for the client and server polling threads.
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 1])]
    cpu: Vec<u32>,
    /// Where result directories go.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Testbed namespace prefix (<NAME>-a, <NAME>-b).
    #[arg(long, default_value = "detpath")]
    testbed: String,
    /// CPU load (percent) from stress-ng on the datapath cores during each run.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    stress: u8,
    /// Apply the low-latency tuning (detpath tune apply) for the run, revert
    /// afterwards, and run the polling threads real-time.
    #[arg(long)]
    tuned: bool,
    /// Paper 000's three configurations for every datapath: Default,
    /// Default & Stress (--matrix-stress %), Tuned & Stress.
    #[arg(long)]
    matrix: bool,
    /// Stress level of the matrix's stress columns.
    #[arg(long, default_value_t = 80)]
    matrix_stress: u8,
    /// Cores the tuning isolates (default: the server core; one core must stay with the OS).
    #[arg(long)]
    tune_cores: Option<String>,
    /// SCHED_FIFO priority of the polling threads in tuned runs (the server's
    /// thread also holds /dev/cpu_dma_latency at 0 for the run).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(1..=99))]
    rt_priority: u8,
    /// Also run sockperf ping-pong (kernel UDP, Debian's sockperf) with the
    /// same size and rate in each configuration, as a reference row.
    #[arg(long)]
    with_sockperf: bool,
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// How early a real-time client wakes before its next send deadline.
const CLIENT_WAKE_SLACK_NS: u64 = 30_000;

/// One column of the matrix: stress level and whether tuned.
#[derive(Clone, Copy)]
struct Configuration {
    stress: u8,
    tuned: bool,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let datapaths: Vec<String> = if args.datapath.is_empty() {
        detpath::datapath::DATAPATHS.iter().map(|d| d.name.to_string()).collect()
    } else {
        args.datapath.clone()
    };
    for d in &datapaths {
        anyhow::ensure!(detpath::datapath::find(d).is_some(), "unknown datapath `{d}`");
    }
    let pp = args.probe.config()?;
    let cpus = (args.cpu.first().copied().unwrap_or(0), args.cpu.get(1).copied().unwrap_or(1));
    let configurations = if args.matrix {
        vec![
            Configuration { stress: 0, tuned: false },
            Configuration { stress: args.matrix_stress, tuned: false },
            Configuration { stress: args.matrix_stress, tuned: true },
        ]
    } else {
        vec![Configuration { stress: args.stress, tuned: args.tuned }]
    };
    let tb = Testbed::up(TestbedConfig::with_prefix(&args.testbed))?;
    let env = Environment::capture();
    let mut dir = ResultDir::create(&args.out)
        .with_context(|| format!("creating a result directory under {}", args.out.display()))?;
    let tune_cores = args.tune_cores.clone().unwrap_or_else(|| cpus.1.to_string());
    let mut runs: Vec<&str> = datapaths.iter().map(String::as_str).collect();
    if args.with_sockperf {
        runs.push(SOCKPERF);
    }
    let mut failed = false;
    for conf in configurations {
        if cleanup::interrupted() {
            break;
        }
        // Tuning holds for the whole configuration and is reverted when `_tuning`
        // drops (also after Ctrl-C; the journal covers a SIGKILL: `detpath tune revert`).
        let (_tuning, tuning_state) = if conf.tuned {
            match apply_tuning(&tune_cores, args.rt_priority) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("bench: cannot apply the tuning: {e:#}");
                    failed = true;
                    continue;
                }
            }
        } else {
            (None, "default".to_string())
        };
        for (i, dp) in runs.iter().copied().enumerate() {
            if cleanup::interrupted() {
                break;
            }
            let port = 7100 + i as u16 * 2;
            eprintln!(
                "bench: {dp}: {} rounds of {} B every {} µs, stress {} %, {}",
                pp.rounds,
                pp.size,
                pp.period_ns as f64 / 1000.0,
                conf.stress,
                if conf.tuned { "tuned" } else { "default" }
            );
            // stress-ng runs for exactly this run; a missing stress-ng fails before the run.
            let stress = if conf.stress > 0 {
                match detpath_bench::stress::Stress::start(conf.stress, &[cpus.0 as usize, cpus.1 as usize]) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        eprintln!("bench: {dp}: {e}");
                        failed = true;
                        continue;
                    }
                }
            } else {
                None
            };
            let rt = conf.tuned.then_some(args.rt_priority);
            // A real-time client spinning on the OS's core would starve it: between
            // rounds it sleeps until 30 µs before the next deadline (hrtimer wake-up).
            let pp = PingPongConfig { sleep_slack_ns: rt.map(|_| CLIENT_WAKE_SLACK_NS), ..pp.clone() };
            let config = RunConfig {
                datapath: dp.to_string(),
                mode: String::new(),
                size: pp.size,
                period_ns: pp.period_ns,
                rounds: pp.rounds,
                timeout_ns: pp.loss_timeout_ns,
                stress_percent: conf.stress,
                tuned: conf.tuned,
                tuning: tuning_state.clone(),
                cpu_client: Some(cpus.0),
                cpu_server: Some(cpus.1),
                peer: None,
                extra: Default::default(),
            };
            if dp == SOCKPERF {
                let r = run_sockperf(&tb, &pp, cpus, config, &env, &mut dir);
                drop(stress);
                if let Err(e) = r {
                    eprintln!("bench: sockperf: {e:#}");
                    failed = true;
                }
                continue;
            }
            let outcome = bench_one(&tb, dp, port, &pp, cpus, rt);
            drop(stress);
            match outcome {
                Ok((mode, outcome)) => {
                    save_outcome(&mut dir, RunConfig { mode, ..config }, &env, &pp, &outcome)?;
                }
                Err(e) => {
                    eprintln!("bench: {dp}: {e:#}");
                    failed = true;
                }
            }
        }
    }
    drop(tb);
    finish(&dir, args.json, failed)
}

/// The name of the sockperf reference run in results and tables.
const SOCKPERF: &str = "sockperf";

/// sockperf ping-pong over kernel UDP in the testbed, for as long as the
/// probe stream would take (whole seconds), saved like a datapath's run.
fn run_sockperf(tb: &Testbed, pp: &PingPongConfig, cpus: (u32, u32), config: RunConfig, env: &Environment, dir: &mut ResultDir) -> anyhow::Result<()> {
    let seconds = ((pp.total_rounds() * pp.period_ns) as f64 / 1e9).ceil().max(1.0) as u64;
    let cfg = detpath_bench::sockperf::SockperfConfig {
        binary: "sockperf".into(),
        size: pp.size,
        period_ns: pp.period_ns,
        seconds,
        cpu_client: cpus.0,
        cpu_server: cpus.1,
        port: 11111,
    };
    let outcome = detpath_bench::sockperf::run(tb, &cfg)?;
    let config = RunConfig { mode: "sockperf ping-pong, kernel UDP, blocking recvfrom".into(), rounds: outcome.rows.len() as u64, ..config };
    let (result, records) = outcome.run_result(config, env.clone());
    dir.save_run(&result, &records)?;
    Ok(())
}

/// Applies the latency profile for `cores` (detpath tune apply); the returned
/// value reverts it on drop.
fn apply_tuning(cores: &str, rt_priority: u8) -> anyhow::Result<(Option<detpath_tune::AppliedTuning>, String)> {
    let list = detpath_tune::CpuList::parse(cores)?;
    let t = detpath_tune::apply(&detpath_tune::Host::real(), &detpath_tune::ApplyRequest::new(list))?;
    let state = format!(
        "tuned (cores {cores}; polling threads SCHED_FIFO {rt_priority}, memory locked, cpu_dma_latency 0): {}",
        t.summary()
    );
    eprintln!("bench: {state}");
    Ok((Some(t), state))
}

/// One datapath: server thread in namespace b, client thread in namespace a.
fn bench_one(
    tb: &Testbed,
    dp: &str,
    port: u16,
    pp: &PingPongConfig,
    (cpu_client, cpu_server): (u32, u32),
    rt: Option<u8>,
) -> anyhow::Result<(String, ClientOutcome)> {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let server_uri = with_rt_keys(&tb.b().uri(dp, port), Some(cpu_server), rt, true);
    let stop_s = stop.clone();
    let server = tb.b().spawn(move || -> anyhow::Result<()> {
        let mut ep = match detpath::open(&server_uri) {
            Ok(ep) => ep,
            Err(e) => {
                let _ = ready_tx.send(Err(e.to_string()));
                return Ok(());
            }
        };
        let _ = ready_tx.send(Ok((ep.local_addr(), ep.capabilities().summary())));
        run_server(ep.as_mut(), &stop_s, &ServerFaults::default())?;
        Ok(())
    });
    let (server_addr, server_mode) = ready_rx.recv()?.map_err(|e| anyhow::anyhow!("server: {e}"))?;
    let client_uri = with_rt_keys(&tb.a().uri(dp, port + 1), Some(cpu_client), rt, false);
    let pp2 = pp.clone();
    let client = tb.a().spawn(move || -> anyhow::Result<(String, ClientOutcome)> {
        let mut ep = detpath::open(&client_uri)?;
        let mode = format!("client {} / server {}", ep.capabilities().summary(), server_mode);
        let stop_now = AtomicBool::new(false);
        let bar = progress_bar(pp2.total_rounds());
        let out = run_client(ep.as_mut(), server_addr, &pp2, &stop_now, |n| {
            bar.set_position(n);
            if cleanup::interrupted() {
                stop_now.store(true, Ordering::Relaxed);
            }
        })?;
        bar.finish_and_clear();
        Ok((mode, out))
    });
    let result = client.join().map_err(|_| anyhow::anyhow!("client thread panicked"))?;
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    result?
}
