//! `detpath pubsub bench`: paper 001's workloads (and the mixed-criticality
//! experiment) per datapath in the testbed, with ddsperf as the reference
//! row (and Fast DDS's with `--fastdds`); stress and tuning set up around each configuration.

use crate::wait_arg::WaitArg;
use detpath::sys::cleanup::{self, OnSignal};
use detpath_pubsub_bench::mixed::{self, MixedRow};
use detpath_pubsub_bench::{bench, BenchOptions, BenchRow, Pinning};
use detpath_pubsub::transport::Wait;
use std::time::Duration;

/// The exit codes of `detpath pubsub bench`.
pub const BENCH_EXIT_CODES: &str = "Exit codes: 0 every workload ran; 2 an error (testbed, permissions, ddsperf missing without --no-ddsperf, \
Fast DDS, fastddsgen or g++ missing with --fastdds); \
130 interrupted (Ctrl-C: the rows so far are saved).";

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Datapaths to measure, comma separated; `raweth+packet`, `raweth+afxdp`, `raweth+dpdk` run RTPS
    /// at layer 2 (CycloneDDS raweth, EtherType 7400) on that frame datapath.
    #[arg(long, alias = "datapaths", default_value = "udp,afxdp,xdppoll,dpdk", value_delimiter = ',')]
    datapath: Vec<String>,
    /// Duration of each workload, whole seconds, e.g. `10s` (a bare number is seconds).
    #[arg(long, alias = "seconds", value_name = "DURATION", value_parser = crate::vocab::secs, default_value = "10s")]
    duration: Duration,
    /// Latency workload: stop when this many samples (answered pings) are in, e.g. 1000000
    /// (paper 001: a million per profile), instead of after --duration; capped at 1.5 times
    /// the time they take at 1 kHz plus 10 s. Each run's per-sample records go to the result
    /// directory (`detpath report` draws them). Mixed workload: the bulk-on phase lasts until
    /// this many control samples sent beside bulk are answered (the same cap; ddsperf pings
    /// for N ms), so p99.99 exists from 10000.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    samples: Option<u64>,
    /// Run every workload N times; the table shows the median and [min-max] of the repeats.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Workloads to run, comma separated: latency (32 B at 1 kHz ping/pong), rate (32 B
    /// unlimited), bandwidth (1 KiB unlimited); table1: paper 001's Table I (32 B at 1 kHz
    /// ping/pong, unkeyed, partly random payload, reliable KEEP_ALL on both topics); mixed: the
    /// mixed-criticality experiment (a 64 B 1 kHz control ping/pong beside a 1 KiB bulk flood on
    /// one endpoint, arms priority, fifo and ddsperf, bulk alone after each detpath arm as its
    /// baseline; its rows and issue 39's goals (met, not met, not measured) in mixed.json; with
    /// --json one line per arm, then one line {"goals": [...]}).
    #[arg(long, default_value = "latency,rate,bandwidth", value_delimiter = ',', value_parser = ["latency", "rate", "bandwidth", "table1", "mixed"])]
    workloads: Vec<String>,
    /// Mixed workload: the control topic's latency budget (one-way), e.g. `100us` (a bare number is µs).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::micros, default_value = "100us")]
    latency_budget: Duration,
    /// Mixed workload: the slot scheduler keys of its priority arm (appended to each side's spec).
    #[arg(long, value_name = "KEYS", default_value = detpath_pubsub_bench::mixed::PRIORITY_SCHED)]
    mixed_sched: String,
    /// Run each configuration once per wait (busy, adaptive, block, spin 50 µs then sleep)
    /// instead of --wait only: latency beside CPU per wait (the sides are not real-time here).
    #[arg(long, conflicts_with_all = ["wait", "blocking"])]
    wait_sweep: bool,
    /// Skip the ddsperf reference row.
    #[arg(long)]
    no_ddsperf: bool,
    /// Also run the Fast DDS reference rows: Fast DDS 2.9 against itself over its own UDP
    /// transport (a small C++ program of ours, built once with fastddsgen and g++; needs
    /// `apt-get install libfastrtps-dev fastddsgen g++`), same type, sizes, QoS and rates as
    /// detpath's rows, exact percentiles from per-sample times, its CPU; the table then sets
    /// every detpath datapath against it (mean and p99.9 latency ratios, 32 B rate ratio) with
    /// issue 38's goals (mean <= 0.1x, p99.9 <= 0.05x, rate >= 3x).
    #[arg(long)]
    fastdds: bool,
    /// How the detpath sides wait for datagrams when they are not real-time
    /// (D, D&S): adaptive, busy or block (see `detpath pubsub ping --help`).
    #[arg(long, value_enum, default_value_t = WaitArg::Adaptive)]
    wait: WaitArg,
    /// The same as --wait block.
    #[arg(long)]
    blocking: bool,
    /// The fair-scheduler slice detpath's sides ask for when not real-time,
    /// e.g. `100us` (a bare number is µs; 0: the kernel's).
    #[arg(long, alias = "fair-slice-us", value_name = "DURATION", value_parser = crate::vocab::micros, default_value = "100us")]
    fair_slice: Duration,
    /// Print JSON lines instead of a table: one row object per line as each
    /// workload ends (rows.json in the result directory holds them all).
    #[arg(long)]
    json: bool,
    /// Paper 000's three configurations: Default, Default & Stress
    /// (--matrix-stress %), Tuned & Stress (both sides real-time).
    #[arg(long)]
    matrix: bool,
    /// Stress level of the matrix's stress columns.
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u8).range(1..=100))]
    matrix_stress: u8,
    /// CPU load (percent) from stress-ng on both cores (without --matrix).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    stress: u8,
    /// Apply the low-latency tuning for the run and run both sides real-time (without --matrix).
    #[arg(long)]
    tuned: bool,
    /// Cores of the sending and the answering side (ping/pub, pong/sub; ddsperf too).
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 1])]
    cpu: Vec<u32>,
    /// SCHED_FIFO priority (1..=99) of both sides in tuned runs.
    #[arg(long, default_value_t = 50, value_parser = crate::vocab::rt_priority)]
    rt_priority: u8,
    /// Where the result directory goes: rows.json (every row, with `cpu`), summary.json,
    /// table.txt and one records CSV per latency run (`detpath report` reads it), libs.log.
    #[arg(long, default_value = "results")]
    out: std::path::PathBuf,
    /// Also print the C libraries' messages (libbpf, libxdp, DPDK EAL) on stderr.
    #[arg(short, long)]
    verbose: bool,
}

/// `detpath pubsub bench`: every configuration asked for, stress and tuning
/// set up around each (tuning reverted when it ends, also on Ctrl-C), rows
/// saved to a result directory.
pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    use detpath_bench::matrix::{apply_tuning, Configuration, LIBRARY_LOG};
    cleanup::install_signal_handler(OnSignal::SetFlag);
    anyhow::ensure!(
        a.latency_budget > Duration::ZERO && a.latency_budget <= Duration::from_secs(3600),
        "--latency-budget: a budget above 0 and at most 1h"
    );
    let configurations = if a.matrix { Configuration::paper_matrix(a.matrix_stress) } else { vec![Configuration { stress: a.stress, tuned: a.tuned }] };
    let (sender_cpu, receiver_cpu) = (a.cpu.first().copied().unwrap_or(0), a.cpu.get(1).copied().unwrap_or(1));
    // Fast DDS's program is built (or found) before anything runs: a missing package fails now, not after the detpath rows.
    if a.fastdds && a.workloads.iter().any(|w| w != mixed::WORKLOAD) {
        let exe = detpath_pubsub_bench::fastdds::program()?;
        eprintln!("pubsub bench: Fast DDS reference program {}", exe.display());
    }
    let mut dir = detpath_instrument::results::ResultDir::create_named(
        &a.out,
        &format!("pubsub-{}", detpath_instrument::results::utc_compact(detpath_instrument::results::now_unix())),
    )?;
    detpath::route_library_logs(&dir.path().join(LIBRARY_LOG), a.verbose)?;
    anyhow::ensure!(a.duration >= Duration::from_secs(1), "--duration: at least 1s per workload (whole seconds; ddsperf counts seconds)");
    let seconds = a.duration.as_secs() + u64::from(a.duration.subsec_nanos() > 0);
    let mut rows: Vec<BenchRow> = Vec::new();
    let mut mixed_rows: Vec<MixedRow> = Vec::new();
    let json = a.json;
    for conf in configurations {
        if cleanup::interrupted() {
            break;
        }
        // Held for the configuration; reverted on drop.
        let _tuning = if conf.tuned {
            let (t, state) = apply_tuning(&receiver_cpu.to_string(), a.rt_priority)?;
            eprintln!("pubsub bench: {state}");
            Some(t)
        } else {
            None
        };
        let _stress =
            if conf.stress > 0 { Some(detpath_instrument::stress::Stress::start(conf.stress, &[sender_cpu as usize, receiver_cpu as usize])?) } else { None };
        let waits =
            if a.wait_sweep { vec![Wait::Busy, Wait::ADAPTIVE, Wait::Block, Wait::Hybrid { spin_ns: 50_000 }] } else { vec![a.wait.or_block(a.blocking)] };
        for (i, wait) in waits.into_iter().enumerate() {
            let o = BenchOptions {
                datapaths: a.datapath.clone(),
                seconds,
                // The reference row once per configuration.
                with_ddsperf: !a.no_ddsperf && i == 0,
                with_fastdds: a.fastdds && i == 0,
                wait,
                fair_slice_ns: crate::vocab::ns(a.fair_slice),
                configuration: conf.label().to_string(),
                pinning: Some(Pinning { sender_cpu, receiver_cpu, rt_priority: conf.tuned.then_some(a.rt_priority) }),
                samples: a.samples,
                repeat: a.repeat,
                workloads: a.workloads.clone(),
                stress_percent: conf.stress,
                tuned: conf.tuned,
                latency_budget_ns: crate::vocab::ns(a.latency_budget),
                mixed_sched: a.mixed_sched.clone(),
            };
            rows.extend(bench(&o, Some(&mut dir), |r| {
                if json {
                    println!("{}", serde_json::to_string(r).unwrap_or_default());
                } else {
                    eprintln!("done: {} {} {} (wait {}, repeat {})", r.configuration, r.system, r.workload, r.wait, r.repeat);
                }
            })?);
            if o.runs_paper_workloads() {
                detpath::sys::fsutil::write_atomic(&dir.path().join("rows.json"), &serde_json::to_vec_pretty(&rows)?)?;
            }
            // The mixed workload once per configuration (not per wait of a sweep).
            if i == 0 && a.workloads.iter().any(|w| w == mixed::WORKLOAD) && !cleanup::interrupted() {
                mixed_rows.extend(mixed::bench(&o, Some(&mut dir), |r| {
                    if json {
                        println!("{}", serde_json::to_string(r).unwrap_or_default());
                    } else {
                        eprintln!("done: {} mixed {} arm {} (repeat {})", r.configuration, r.system, r.arm, r.repeat);
                    }
                })?);
                detpath::sys::fsutil::write_atomic(&dir.path().join("mixed.json"), &serde_json::to_vec_pretty(&mixed_json(&mixed_rows))?)?;
            }
        }
    }
    let paper = a.workloads.iter().any(|w| w != mixed::WORKLOAD);
    let mut table = if paper {
        // The workloads' table, then detpath against Fast DDS when its rows are in.
        detpath_pubsub_bench::table::render(&rows) + &detpath_pubsub_bench::fastdds::ratios::render_rows(&rows)
    } else {
        String::new()
    };
    if !mixed_rows.is_empty() {
        if paper {
            table.push('\n');
        }
        table.push_str(&detpath_pubsub_bench::mixed_table::render(&mixed_rows, &detpath_instrument::results::Environment::capture()));
        // The figure is a view of the saved timelines: a failure to draw it loses no figure.
        match detpath_pubsub_bench::mixed_plot::render(dir.path(), &mixed_rows) {
            Ok(Some(png)) => eprintln!("control latency over time: {}", png.display()),
            Ok(None) => {}
            Err(e) => eprintln!("pubsub bench: the mixed figure was not drawn: {e:#}"),
        }
    }
    detpath::sys::fsutil::write_atomic(&dir.path().join("table.txt"), table.as_bytes())?;
    if json && !mixed_rows.is_empty() {
        // After the arms' lines: the goals judged on them (scripts keyed on `arm` skip it).
        println!("{}", serde_json::json!({ "goals": mixed::goals(&mixed_rows) }));
    }
    if !json {
        print!("{table}");
    }
    eprintln!("results saved in {}", dir.path().display());
    Ok(if cleanup::interrupted() { 130 } else { 0 })
}


/// mixed.json: the machine's environment record, the arms' rows and issue 39's goals judged on them.
fn mixed_json(rows: &[MixedRow]) -> serde_json::Value {
    serde_json::json!({ "environment": detpath_instrument::results::Environment::capture(), "rows": rows, "goals": mixed::goals(rows) })
}
