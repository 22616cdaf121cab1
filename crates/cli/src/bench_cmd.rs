//! `detpath bench`: paper 000's ping-pong over every datapath in the built-in
//! testbed. Client in namespace a, server in namespace b, each a thread
//! pinned to its own core; results saved under `results/<timestamp>/`.

use anyhow::Context;
use detpath::cleanup::{self, OnSignal};
use detpath::testbed::{Testbed, TestbedConfig};
use detpath_bench::run::{run_client, run_server, PingPongConfig, ServerFaults};
use detpath_bench::{Environment, ResultDir, RunConfig, RunResult};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};

#[derive(clap::Args)]
pub struct Args {
    /// Datapaths to measure (default: every registered one).
    #[arg(long, value_delimiter = ',')]
    datapath: Vec<String>,
    /// Probe (UDP payload) size in bytes (paper: 1024; 128 as the small option).
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Send period in microseconds (100 us with 1024 B is about 80 Mbit/s).
    #[arg(long, default_value_t = 100.0)]
    period_us: f64,
    /// Measured rounds per datapath (paper: 1,000,000 for a full run).
    #[arg(long, default_value_t = 100_000)]
    rounds: u64,
    /// Rounds sent first and left out of the statistics.
    #[arg(long, default_value_t = 1000)]
    warmup: u64,
    /// Per-round loss timeout in milliseconds.
    #[arg(long, default_value_t = 100)]
    timeout_ms: u64,
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
    /// Apply the low-latency tuning (detpath tune apply) for the run, revert afterwards.
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
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let datapaths: Vec<String> = if args.datapath.is_empty() {
        detpath::datapath::DATAPATHS
            .iter()
            .map(|d| d.name.to_string())
            .collect()
    } else {
        args.datapath.clone()
    };
    for d in &datapaths {
        anyhow::ensure!(
            detpath::datapath::find(d).is_some(),
            "unknown datapath `{d}`"
        );
    }
    anyhow::ensure!(
        args.size >= detpath_wire::probe::HEADER_LEN,
        "--size must be at least {} bytes",
        detpath_wire::probe::HEADER_LEN
    );
    anyhow::ensure!(args.period_us > 0.0, "--period-us must be positive");
    let (cpu_client, cpu_server) = (
        args.cpu.first().copied().unwrap_or(0),
        args.cpu.get(1).copied().unwrap_or(1),
    );
    let tb = Testbed::up(TestbedConfig::with_prefix(&args.testbed))?;
    let env = Environment::capture();
    let mut dir = ResultDir::create(&args.out)
        .with_context(|| format!("creating a result directory under {}", args.out.display()))?;
    let pp = PingPongConfig {
        size: args.size,
        period_ns: (args.period_us * 1000.0) as u64,
        rounds: args.rounds,
        warmup: args.warmup,
        loss_timeout_ns: args.timeout_ms * 1_000_000,
        stall: None,
    };
    let configs: Vec<(u8, bool)> = if args.matrix {
        vec![
            (0, false),
            (args.matrix_stress, false),
            (args.matrix_stress, true),
        ]
    } else {
        vec![(args.stress, args.tuned)]
    };
    let tune_cores = args
        .tune_cores
        .clone()
        .unwrap_or_else(|| cpu_server.to_string());
    let mut failed = false;
    for (stress_pct, tuned) in configs {
        // Tuning is applied for the whole configuration and reverted when `_tuning` drops
        // (also on Ctrl-C: the drop runs when the loop ends; the journal covers a SIGKILL).
        let (_tuning, tuning_state) = if tuned {
            let cores = detpath_tune::CpuList::parse(&tune_cores)?;
            match detpath_tune::apply(
                &detpath_tune::Host::real(),
                &detpath_tune::ApplyRequest::new(cores),
            ) {
                Ok(t) => {
                    let s = format!(
                        "tuned (cores {tune_cores}; polling threads SCHED_FIFO {}, memory locked, cpu_dma_latency 0): {}",
                        args.rt_priority,
                        t.summary()
                    );
                    (Some(t), s)
                }
                Err(e) => {
                    eprintln!("bench: cannot apply the tuning: {e}");
                    failed = true;
                    continue;
                }
            }
        } else {
            (None, "default".to_string())
        };
        for (i, dp) in datapaths.iter().enumerate() {
            if cleanup::interrupted() {
                break;
            }
            let port = 7100 + i as u16 * 2;
            eprintln!("bench: {dp}: {} rounds of {} B every {} us, stress {stress_pct} %, {tuning_state} ...", pp.rounds, pp.size, args.period_us);
            // stress-ng runs for exactly this run; a missing stress-ng fails before the run.
            let stress = if stress_pct > 0 {
                match detpath_bench::stress::Stress::start(
                    stress_pct,
                    &[cpu_client as usize, cpu_server as usize],
                ) {
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
            let rt = tuned.then_some(args.rt_priority);
            let outcome = bench_one(&tb, dp, port, &pp, (cpu_client, cpu_server), rt);
            drop(stress);
            match outcome {
                Ok((mode, outcome)) => {
                    let records = outcome.records(pp.warmup);
                    let config = RunConfig {
                        datapath: dp.clone(),
                        mode,
                        size: pp.size,
                        period_ns: pp.period_ns,
                        rounds: pp.rounds,
                        timeout_ns: pp.loss_timeout_ns,
                        stress_percent: stress_pct,
                        tuned,
                        tuning: tuning_state.clone(),
                        cpu_client: Some(cpu_client),
                        cpu_server: Some(cpu_server),
                        peer: None,
                        extra: Default::default(),
                    };
                    let mut result = RunResult::from_records(config, env.clone(), &records, None);
                    result.duration_s = (outcome.finished_ns - outcome.started_ns) as f64 / 1e9;
                    if outcome.interrupted {
                        result.complete = false;
                        result.interrupted = Some("interrupted by a signal".into());
                    }
                    if outcome.foreign > 0 {
                        result.notes.push(format!(
                            "{} datagrams that were not our probes",
                            outcome.foreign
                        ));
                    }
                    dir.save_run(&result, &records)?;
                }
                Err(e) => {
                    eprintln!("bench: {dp}: {e:#}");
                    failed = true;
                }
            }
        }
    }
    drop(tb);
    if args.json {
        println!("{}", serde_json::to_string_pretty(dir.runs())?);
    } else {
        print!("{}", detpath_bench::table::render(dir.runs()));
    }
    eprintln!("results saved in {}", dir.path().display());
    let incomplete = dir.runs().iter().any(|r| !r.complete || r.loss.lost > 0);
    Ok(if failed || cleanup::interrupted() || incomplete {
        1
    } else {
        0
    })
}

/// The endpoint spec of one side: pinned to `core`; with `rt`, its polling
/// thread runs SCHED_FIFO at that priority with memory locked (the
/// `rt_*` keys of detpath::realtime), and the server holds the C-states.
fn side_uri(side: &detpath::testbed::Side, dp: &str, port: u16, core: u32, rt: Option<u8>, server: bool) -> String {
    let mut uri = format!("{}&rt_core={core}", side.uri(dp, port));
    match rt {
        Some(prio) => {
            uri += &format!("&rt_priority={prio}");
            if server {
                uri += "&rt_dma_latency=0";
            }
        }
        None => uri += "&rt_mlock=false",
    }
    uri
}

/// One datapath: server thread in namespace b, client on this thread's helper in namespace a.
fn bench_one(
    tb: &Testbed,
    dp: &str,
    port: u16,
    pp: &PingPongConfig,
    (cpu_client, cpu_server): (u32, u32),
    rt: Option<u8>,
) -> anyhow::Result<(String, detpath_bench::run::ClientOutcome)> {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let server_uri = side_uri(tb.b(), dp, port, cpu_server, rt, true);
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
    let (server_addr, server_mode) = ready_rx
        .recv()?
        .map_err(|e| anyhow::anyhow!("server: {e}"))?;
    let client_uri = side_uri(tb.a(), dp, port + 1, cpu_client, rt, false);
    let pp2 = pp.clone();
    let client = tb.a().spawn(
        move || -> anyhow::Result<(String, detpath_bench::run::ClientOutcome)> {
            let mut ep = detpath::open(&client_uri)?;
            let mode = format!(
                "client {} / server {}",
                ep.capabilities().summary(),
                server_mode
            );
            let never = AtomicBool::new(false);
            let bar = indicatif_bar(pp2.total_rounds());
            let out = run_client(ep.as_mut(), server_addr, &pp2, &never, |n| {
                bar.set_position(n);
                if cleanup::interrupted() {
                    never.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            })?;
            bar.finish_and_clear();
            Ok((mode, out))
        },
    );
    let result = client
        .join()
        .map_err(|_| anyhow::anyhow!("client thread panicked"))?;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = server.join();
    result?
}

fn indicatif_bar(total: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "  {bar:40} {pos}/{len} rounds  {per_sec}  eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}
