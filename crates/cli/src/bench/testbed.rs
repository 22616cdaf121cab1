//! `detpath bench` (no subcommand), the main job: options in, a progress bar
//! and the tables out. The work is `detpath_bench::matrix::run_matrix`:
//! every datapath in the built-in testbed, in one configuration or paper
//! 000's three (`--matrix`).

use super::common::{finish, progress_bar, ProbeArgs};
use detpath::sys::cleanup::{self, OnSignal};
use detpath_bench::matrix::{run_matrix, Configuration, Event, MatrixConfig};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Options of `detpath bench` without a subcommand: which datapaths, probes,
/// cores, stress and configurations the testbed run measures, and where its
/// results go.
// Flattened into bench::Args: a group id of its own (derive names both `Args`; clap's debug build refuses that).
#[derive(clap::Args)]
#[group(id = "bench_testbed")]
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
    /// SCHED_FIFO priority (1..=99) of the polling threads in tuned runs (the
    /// server's thread also holds /dev/cpu_dma_latency at 0 for the run).
    #[arg(long, default_value_t = 50, value_parser = crate::vocab::rt_priority)]
    rt_priority: u8,
    /// Also run sockperf ping-pong (kernel UDP, Debian's sockperf) with the
    /// same size and rate in each configuration, as a reference row.
    #[arg(long)]
    with_sockperf: bool,
    /// Print the results as one JSON document (the list of runs, as in
    /// summary.json) instead of tables.
    #[arg(long)]
    json: bool,
    /// Rounds slower than this are the tail, each attributed to a cause:
    /// `10x` (times the run's median, the default) or a latency (`50us`).
    #[arg(long, default_value = "10x")]
    tail_threshold: detpath_instrument::tail::TailThreshold,
    #[command(flatten)]
    gate: super::common::LossGate,
    /// Extra spec keys for every endpoint, e.g. `mode=skb`, `rcvbuf=8388608`,
    /// the slot scheduler's `sched=slots&slot_ns=10000&classes=bulk:be:0-99`,
    /// or with `--datapath fault`: `inner=udp&drop=100,200` (see the README).
    #[arg(long, default_value = "")]
    keys: String,
    /// Extra spec keys for the server's endpoint only (e.g. `stall_rx=500:2ms` with the fault datapath).
    #[arg(long, default_value = "")]
    server_keys: String,
    /// Also print the C libraries' messages (libbpf, libxdp, DPDK EAL) on
    /// stderr; they always go to libs.log in the result directory.
    #[arg(short, long)]
    verbose: bool,
    /// Trace the kernel on every core during each run (BPF: interrupts,
    /// softirqs, context switches, NAPI polls) and name the kernel work
    /// behind the slow rounds no polling-thread gap explains (needs CAP_BPF
    /// and CAP_PERFMON; nothing stays attached after any exit).
    #[arg(long)]
    trace_kernel: bool,
    /// With --trace-kernel: attach the tracer for 1 s, detach it for 1 s,
    /// and so on, and report the median and p99 of the rounds with it
    /// against those without it (what tracing costs, from the same run).
    /// The rounds of the detached windows get no kernel cause.
    #[arg(long, requires = "trace_kernel")]
    trace_cost: bool,
}

/// Runs every requested datapath in the built-in testbed, shows progress,
/// saves the result directory and prints its table; returns the exit code
/// of [`super::common::EXIT_CODES`].
pub fn run(args: Args) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let datapaths = if args.datapath.is_empty() { detpath::datapath::transports().map(|d| d.name.to_string()).collect() } else { args.datapath.clone() };
    let cfg = MatrixConfig {
        datapaths,
        probes: args.probe.configs()?,
        configurations: if args.matrix {
            Configuration::paper_matrix(args.matrix_stress)
        } else {
            vec![Configuration { stress: args.stress, tuned: args.tuned }]
        },
        cpus: (args.cpu.first().copied().unwrap_or(0), args.cpu.get(1).copied().unwrap_or(1)),
        out: args.out.clone(),
        testbed: args.testbed.clone(),
        tune_cores: args.tune_cores.clone(),
        rt_priority: args.rt_priority,
        with_sockperf: args.with_sockperf,
        tail_threshold: args.tail_threshold,
        keys: args.keys.clone(),
        server_keys: args.server_keys.clone(),
        library_logs_to_stderr: args.verbose,
        trace_kernel: args.trace_kernel,
        trace_cost: args.trace_cost,
    };
    // One progress bar per run, drawn from the client thread's progress events.
    let bar: Arc<Mutex<Option<indicatif::ProgressBar>>> = Arc::new(Mutex::new(None));
    let observer = {
        let bar = bar.clone();
        Arc::new(move |e: Event| {
            let mut bar = bar.lock().unwrap_or_else(|p| p.into_inner());
            match e {
                Event::RunStarting { label, total_rounds } => {
                    eprintln!("{label}");
                    *bar = Some(progress_bar(total_rounds));
                }
                Event::Sent(n) => {
                    if let Some(b) = bar.as_ref() {
                        b.set_position(n)
                    }
                }
                Event::RunDone => {
                    if let Some(b) = bar.take() {
                        b.finish_and_clear()
                    }
                }
                Event::Note(s) => eprintln!("{s}"),
            }
        })
    };
    let outcome = run_matrix(&cfg, observer)?;
    finish(&outcome.dir, args.json, outcome.failed, args.gate)
}
