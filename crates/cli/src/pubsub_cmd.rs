//! `detpath pubsub ping|pong|pub|sub|bench`: DDS publish-subscribe over any
//! datapath, speaking RTPS as CycloneDDS does, with ddsperf's topics and
//! conventions so `ddsperf` can be the partner on the other side. Prints a
//! line a second and a summary (or JSON with `--json`).

use detpath::sys::cleanup::{self, OnSignal};
use detpath_bench::pubsub::{bench, BenchOptions, BenchRow, Pinning};
use detpath_pubsub::app::{run as run_node, LatencySummaryJson, NodeOptions, Outcome, SecondReport};
use detpath_pubsub::ddsperf::{Role, TopicKind};
use detpath_pubsub::transport::Wait;
use std::net::Ipv4Addr;
use std::time::Duration;

/// Arguments of `detpath pubsub`: one node role (ping, pong, pub, sub) or
/// the benchmark.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand)]
enum Cmd {
    /// Ping a pong (detpath or `ddsperf pong`): one-way latency (RTT/2) once a second and a summary.
    #[command(after_help = NODE_EXIT_CODES)]
    Ping(PingArgs),
    /// Answer pings (from detpath or `ddsperf ping`) until stopped.
    #[command(after_help = NODE_EXIT_CODES)]
    Pong(NodeArgs),
    /// Publish data (to detpath or `ddsperf sub`) at a rate or as fast as flow control allows.
    #[command(after_help = NODE_EXIT_CODES)]
    Pub(PubArgs),
    /// Subscribe to data (from detpath or `ddsperf pub`): samples/s, Mb/s and losses once a second.
    #[command(after_help = NODE_EXIT_CODES)]
    Sub(NodeArgs),
    /// The paper's three workloads per datapath in the testbed, with ddsperf as the reference row.
    #[command(after_help = BENCH_EXIT_CODES)]
    Bench(BenchArgs),
}

/// The exit codes of `detpath pubsub ping|pong|pub|sub`.
const NODE_EXIT_CODES: &str = "Exit codes: 0 done (stopped by --count, --duration, Ctrl-C or SIGTERM); \
1 reliable samples were lost (as ddsperf); 2 an error (the endpoint could not open, no peer matched within --discovery-timeout).";
/// The exit codes of `detpath pubsub bench`.
const BENCH_EXIT_CODES: &str = "Exit codes: 0 every workload ran; 2 an error (testbed, permissions, ddsperf missing without --no-ddsperf); \
130 interrupted (Ctrl-C: the rows so far are saved).";

#[derive(clap::Args, Clone)]
struct NodeArgs {
    /// Endpoint spec; the port should be a standard RTPS port (7410 + 250*domain + 2*index), e.g. `udp://10.77.0.1:7410`.
    /// Layer 2 (CycloneDDS raweth: RTPS in Ethernet frames, EtherType = port, default 7400):
    /// `raweth://dpa` (AF_PACKET) or `raweth+afxdp://dpa?mode=skb`.
    #[arg(long)]
    endpoint: String,
    /// Peer (repeatable): an IPv4 address (SPDP goes to its ports for participant indices 0..=9),
    /// or for raweth a MAC address (SPDP also goes to the broadcast address, as CycloneDDS's raweth does).
    /// Without it a UDP node (udp with its interface named, `udp://<iface>?addr=A&port=P`; afxdp,
    /// xdppoll, dpdk) announces over and listens to the SPDP multicast group 239.255.0.1, as CycloneDDS does by default.
    #[arg(long = "peer")]
    peers: Vec<String>,
    /// Accept RTPS only from the --peer hosts: datagrams from anyone else are
    /// dropped unread and counted (`rx_not_from_peer`).
    #[arg(long)]
    peers_only: bool,
    /// Open the endpoint inside this network namespace.
    #[arg(long)]
    netns: Option<String>,
    /// DDS domain id.
    #[arg(long, default_value_t = 0)]
    domain: u32,
    /// Sample size as ddsperf counts it (KeyedSeq: 12 + payload bytes).
    #[arg(long, default_value_t = 32)]
    size: usize,
    /// Stop after this many samples (ping: pings; pub: published; sub: received).
    #[arg(long)]
    count: Option<u64>,
    /// Stop after this long, e.g. `10s`, `500ms` (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs)]
    duration: Option<Duration>,
    /// Reliable (the default, as ddsperf).
    #[arg(long, conflicts_with = "best_effort")]
    reliable: bool,
    /// Best effort (ddsperf -u).
    #[arg(long)]
    best_effort: bool,
    /// Topic type: ks (KeyedSeq, ddsperf's default) or ou (OneULong, ddsperf -TOU).
    #[arg(long, default_value = "ks")]
    topic: String,
    /// How the polling thread waits for datagrams: adaptive (busy-poll while
    /// it has its core to itself, sleep between datagrams while another task
    /// wants the core), busy, or block.
    #[arg(long, value_enum, default_value_t = WaitArg::Adaptive)]
    wait: WaitArg,
    /// The same as --wait block.
    #[arg(long)]
    blocking: bool,
    /// The fair-scheduler (EEVDF) slice the polling thread asks for when it is not
    /// real-time, e.g. `100us` (a bare number is µs): short, its wake-ups preempt
    /// CPU load at once (0: the kernel's default).
    #[arg(long, alias = "fair-slice-us", value_name = "DURATION", value_parser = crate::vocab::micros, default_value = "100us")]
    fair_slice: Duration,
    /// Busy-poll this long after each datagram sent or received, then sleep in
    /// the kernel, e.g. `50us` (a bare number is µs).
    #[arg(long, alias = "spin-us", value_name = "DURATION", value_parser = crate::vocab::micros, conflicts_with = "blocking")]
    spin: Option<Duration>,
    /// How long to wait for a peer to match, e.g. `10s` (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs, default_value = "10s")]
    discovery_timeout: Duration,
    /// Largest RTPS message sent, bytes: above the MTU it goes as IPv4
    /// fragments where the datapath can send them (udp, afxdp, xdppoll), as
    /// CycloneDDS does (its MaxMessageSize is 14720).
    #[arg(long, default_value_t = 14720, value_parser = clap::value_parser!(u64).range(256..=65507))]
    max_message: u64,
    /// Print JSON lines instead of text: one object per second as it
    /// happens, then the summary object.
    #[arg(long)]
    json: bool,
}

/// `--wait`'s values.
#[derive(Clone, Copy, clap::ValueEnum)]
enum WaitArg {
    Adaptive,
    Busy,
    Block,
}

impl WaitArg {
    /// The wait, or blocking when `--blocking` says so.
    fn or_block(self, blocking: bool) -> Wait {
        match (blocking, self) {
            (true, _) | (_, WaitArg::Block) => Wait::Block,
            (_, WaitArg::Busy) => Wait::Busy,
            (_, WaitArg::Adaptive) => Wait::ADAPTIVE,
        }
    }
}

#[derive(clap::Args)]
struct PingArgs {
    #[command(flatten)]
    node: NodeArgs,
    /// Sample rate: pings per second, e.g. `1000` or `1000/s` (0: next ping
    /// when the pong is back).
    #[arg(long, value_name = "PER_SECOND", value_parser = crate::vocab::per_second, default_value = "1000")]
    rate: f64,
}

#[derive(clap::Args)]
struct PubArgs {
    #[command(flatten)]
    node: NodeArgs,
    /// Sample rate: samples per second, e.g. `1000` or `1000/s` (0: as fast
    /// as reliable flow control allows).
    #[arg(long, value_name = "PER_SECOND", value_parser = crate::vocab::per_second, default_value = "0")]
    rate: f64,
}

#[derive(clap::Args)]
struct BenchArgs {
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
    /// directory (`detpath report` draws them).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    samples: Option<u64>,
    /// Run every workload N times; the table shows the median and [min-max] of the repeats.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Workloads to run, comma separated: latency (32 B at 1 kHz ping/pong), rate (32 B
    /// unlimited), bandwidth (1 KiB unlimited); table1: paper 001's Table I (32 B at 1 kHz
    /// ping/pong, unkeyed, partly random payload, reliable KEEP_ALL on both topics).
    #[arg(long, default_value = "latency,rate,bandwidth", value_delimiter = ',', value_parser = ["latency", "rate", "bandwidth", "table1"])]
    workloads: Vec<String>,
    /// Run each configuration once per wait (busy, adaptive, block, spin 50 µs then sleep)
    /// instead of --wait only: latency beside CPU per wait (the sides are not real-time here).
    #[arg(long, conflicts_with_all = ["wait", "blocking"])]
    wait_sweep: bool,
    /// Skip the ddsperf reference row.
    #[arg(long)]
    no_ddsperf: bool,
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
fn bench_cmd(a: BenchArgs) -> anyhow::Result<i32> {
    use detpath_bench::matrix::{apply_tuning, Configuration, LIBRARY_LOG};
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let configurations = if a.matrix { Configuration::paper_matrix(a.matrix_stress) } else { vec![Configuration { stress: a.stress, tuned: a.tuned }] };
    let (sender_cpu, receiver_cpu) = (a.cpu.first().copied().unwrap_or(0), a.cpu.get(1).copied().unwrap_or(1));
    let mut dir = detpath_bench::results::ResultDir::create_named(
        &a.out,
        &format!("pubsub-{}", detpath_bench::results::utc_compact(detpath_bench::results::now_unix())),
    )?;
    detpath::route_library_logs(&dir.path().join(LIBRARY_LOG), a.verbose)?;
    anyhow::ensure!(a.duration >= Duration::from_secs(1), "--duration: at least 1s per workload (whole seconds; ddsperf counts seconds)");
    let seconds = a.duration.as_secs() + u64::from(a.duration.subsec_nanos() > 0);
    let mut rows: Vec<BenchRow> = Vec::new();
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
            if conf.stress > 0 { Some(detpath_bench::stress::Stress::start(conf.stress, &[sender_cpu as usize, receiver_cpu as usize])?) } else { None };
        let waits =
            if a.wait_sweep { vec![Wait::Busy, Wait::ADAPTIVE, Wait::Block, Wait::Hybrid { spin_ns: 50_000 }] } else { vec![a.wait.or_block(a.blocking)] };
        for (i, wait) in waits.into_iter().enumerate() {
            let o = BenchOptions {
                datapaths: a.datapath.clone(),
                seconds,
                // The reference row once per configuration.
                with_ddsperf: !a.no_ddsperf && i == 0,
                wait,
                fair_slice_ns: crate::vocab::ns(a.fair_slice),
                configuration: conf.label().to_string(),
                pinning: Some(Pinning { sender_cpu, receiver_cpu, rt_priority: conf.tuned.then_some(a.rt_priority) }),
                samples: a.samples,
                repeat: a.repeat,
                workloads: a.workloads.clone(),
                stress_percent: conf.stress,
                tuned: conf.tuned,
            };
            rows.extend(bench(&o, Some(&mut dir), |r| {
                if json {
                    println!("{}", serde_json::to_string(r).unwrap_or_default());
                } else {
                    eprintln!("done: {} {} {} (wait {}, repeat {})", r.configuration, r.system, r.workload, r.wait, r.repeat);
                }
            })?);
            detpath::sys::fsutil::write_atomic(&dir.path().join("rows.json"), &serde_json::to_vec_pretty(&rows)?)?;
        }
    }
    let table = detpath_bench::pubsub::table::render(&rows);
    detpath::sys::fsutil::write_atomic(&dir.path().join("table.txt"), table.as_bytes())?;
    if !json {
        print!("{table}");
    }
    eprintln!("results saved in {}", dir.path().display());
    Ok(if cleanup::interrupted() { 130 } else { 0 })
}

fn options(a: &NodeArgs, role: Role) -> anyhow::Result<NodeOptions> {
    let mut o = NodeOptions::new(&a.endpoint, role);
    for p in &a.peers {
        if let Ok(ip) = p.parse::<Ipv4Addr>() {
            o.peers.push(ip);
        } else if let Some(mac) = detpath::MacAddr::parse(p) {
            o.mac_peers.push(mac.0);
        } else {
            anyhow::bail!("--peer {p}: give an IPv4 address (UDP) or a MAC address aa:bb:cc:dd:ee:ff (raweth)");
        }
    }
    // Without peers a UDP node announces over the SPDP multicast group; a
    // datapath that cannot hear it is refused when the node opens, naming why.
    o.peers_only = a.peers_only;
    o.netns = a.netns.clone();
    o.domain = a.domain;
    o.size = a.size;
    o.count = a.count.unwrap_or(0);
    o.duration = a.duration;
    o.reliable = !a.best_effort;
    o.topic = match a.topic.as_str() {
        "ks" | "KS" => TopicKind::Ks,
        "ou" | "OU" => TopicKind::Ou,
        t => anyhow::bail!("--topic {t}: use ks or ou"),
    };
    if o.size < 12 && o.topic == TopicKind::Ks {
        anyhow::bail!("--size {}: KeyedSeq samples are at least 12 bytes", o.size);
    }
    o.wait = match (a.blocking, a.spin) {
        (_, Some(d)) => Wait::Hybrid { spin_ns: crate::vocab::ns(d) },
        (blocking, None) => a.wait.or_block(blocking),
    };
    o.discovery_timeout = a.discovery_timeout;
    o.max_message = a.max_message as usize;
    o.fair_slice_ns = crate::vocab::ns(a.fair_slice);
    Ok(o)
}

fn us(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"))
}

fn latency_line(l: &LatencySummaryJson) -> String {
    format!(
        "mean {:.1} min {:.1} p50 {:.1} p99 {:.1} p99.9 {} p99.99 {} p99.9999 {} max {:.1} us",
        l.mean,
        l.min,
        l.p50,
        l.p99,
        us(l.p99_9),
        us(l.p99_99),
        us(l.p99_9999),
        l.max
    )
}

fn print_second(role: &str, json: bool, r: &SecondReport) {
    if json {
        println!("{}", serde_json::to_string(r).unwrap_or_default());
    } else if role == "ping" {
        let l = &r.latency;
        println!("{:7.1}s  cnt {:5}  mean {:7.1} us  p50 {:7.1}  p99 {:7.1}  max {:8.1}", r.t_s, l.count, l.mean, l.p50, l.p99, l.max);
    } else if role == "sub" {
        println!("{:7.1}s  {:9.0} samples/s  {:8.2} Mb/s  lost {}", r.t_s, r.samples_per_s, r.mbit_per_s, r.lost);
    }
}

fn print_outcome(o: &Outcome, json: bool) {
    if json {
        println!("{}", serde_json::to_string(o).unwrap_or_default());
        return;
    }
    println!(
        "{} over {} ({}, {} B): discovery {} ms, {:.1} s",
        o.role,
        o.endpoint,
        if o.reliable { "reliable" } else { "best effort" },
        o.size,
        us(o.discovery_ms),
        o.duration_s
    );
    match o.role.as_str() {
        "ping" => {
            println!("received {} of {} pings, lost {}", o.received, o.pings_sent, o.lost);
            println!("latency_us (RTT/2) {}", latency_line(&o.latency_us));
        }
        "pong" => println!("answered {} pings from {} peer(s)", o.pings_answered, o.peers),
        "pub" => println!("published {} samples", o.data_sent),
        _ => println!("received {} samples, lost {}, {:.0} samples/s, {:.2} Mb/s", o.received, o.lost, o.samples_per_s, o.mbit_per_s),
    }
    let e = &o.engine;
    println!(
        "engine: rx {} tx {} malformed {} retransmits {} heartbeats {} acknacks {} send errors {} core yields {}",
        e.rx_datagrams, e.tx_datagrams, e.rx_malformed, e.retransmits, e.heartbeats_sent, e.acknacks_sent, o.send_errors, o.core_yields
    );
}

fn node(a: &NodeArgs, role: Role, name: &str) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let o = options(a, role)?;
    let json = a.json;
    let out = run_node(&o, &cleanup::interrupted, |r| print_second(name, json, r))?;
    print_outcome(&out, json);
    // Exit 1 when reliable samples were lost (as ddsperf does).
    Ok(if o.reliable && out.lost > 0 { 1 } else { 0 })
}

/// Runs the `detpath pubsub` subcommand; returns its exit code
/// ([`NODE_EXIT_CODES`] for the nodes, [`BENCH_EXIT_CODES`] for bench).
pub fn run(args: Args) -> anyhow::Result<i32> {
    match args.cmd {
        Cmd::Ping(a) => node(&a.node, Role::Ping { rate_hz: a.rate }, "ping"),
        Cmd::Pong(a) => node(&a, Role::Pong, "pong"),
        Cmd::Pub(a) => node(&a.node, Role::Pub { rate_hz: a.rate }, "pub"),
        Cmd::Sub(a) => node(&a, Role::Sub, "sub"),
        Cmd::Bench(a) => bench_cmd(a),
    }
}
