//! `detpath pubsub ping|pong|pub|sub|bench`: DDS publish-subscribe over any
//! datapath, speaking RTPS as CycloneDDS does, with ddsperf's topics and
//! conventions so `ddsperf` can be the partner on the other side. Prints a
//! line a second and a summary (or JSON with `--json`).

pub mod bench;
pub mod ptp;
pub mod scale;
pub mod user;

use crate::wait_arg::WaitArg;
use detpath::sys::cleanup::{self, OnSignal};
use detpath_pubsub::app::{run as run_node, BudgetJson, ClockMode, LatencySummaryJson, LiveBoard, NodeOptions, Outcome, SecondReport};
use detpath_pubsub::budget::BUCKET_BOUNDS_NS;
use detpath_pubsub::ddsperf::{Role, TopicKind};
use detpath_pubsub::transport::Wait;
use detpath_wire::dscp::PriorityMap;
use std::net::Ipv4Addr;
use std::time::Duration;
use user::{ClockChoice, TypeArgs, UserNode};

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
    /// Publish data (to detpath or `ddsperf sub`) at a rate or as fast as flow control allows;
    /// with --type-name, a serialized sample of the user's type.
    #[command(after_help = NODE_EXIT_CODES)]
    Pub(PubArgs),
    /// Subscribe to data (from detpath or `ddsperf pub`): samples/s, Mb/s and losses once a second;
    /// with --type-name, every sample's bytes.
    #[command(after_help = NODE_EXIT_CODES)]
    Sub(SubArgs),
    /// The paper's three workloads per datapath in the testbed, with ddsperf as the reference row.
    #[command(after_help = crate::pubsub::bench::BENCH_EXIT_CODES)]
    Bench(crate::pubsub::bench::BenchArgs),
    /// Scale: discovery time and memory for 2 to 64 participants, fan-out latency to 1 to 16
    /// readers, beside CycloneDDS.
    Scale(scale::ScaleArgs),
}

/// The exit codes of `detpath pubsub ping|pong|pub|sub`.
const NODE_EXIT_CODES: &str = "Exit codes: 0 done (stopped by --count, --duration, Ctrl-C or SIGTERM); \
1 reliable samples were lost (as ddsperf); 2 an error (the endpoint could not open, no peer matched within --discovery-timeout).";
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
    /// ddsperf's topic type: ks (KeyedSeq, ddsperf's default) or ou
    /// (OneULong, ddsperf -TOU). With --type-name (pub, sub): the topic's
    /// name, e.g. `HelloWorldData_Msg` (with --ros2 a ROS 2 topic, `chatter`).
    #[arg(long, value_name = "TOPIC")]
    topic: Option<String>,
    /// How the polling thread waits for datagrams: adaptive (busy-poll while
    /// it has its core to itself, sleep between datagrams while another task
    /// wants the core), busy, or block.
    #[arg(long, value_enum, default_value_t = crate::wait_arg::WaitArg::Adaptive)]
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
    /// DDS TRANSPORT_PRIORITY of the node's writers and readers: 0 is best
    /// effort (DSCP 0); any priority above 0 marks its datagrams with a DSCP
    /// (--priority-map) and, with a slot scheduler on the endpoint, picks its class.
    #[arg(long, value_name = "N", default_value_t = 0, allow_negative_numbers = true)]
    transport_priority: i32,
    /// DDS LATENCY_BUDGET of the node's writers and readers, e.g. `100us`
    /// (a bare number is µs; more than 0, at most 1h). A reader judges every
    /// sample's one-way latency against it (`latency_budget` in the summary);
    /// a writer with a larger budget than the reader's does not match it.
    #[arg(long, value_name = "DURATION", value_parser = latency_budget)]
    latency_budget: Option<Duration>,
    /// From TRANSPORT_PRIORITY to DSCP: `PRIORITY=DSCP` pairs, each DSCP a
    /// name or 0..=63; a priority takes the DSCP of the highest pair at or
    /// below it. Every priority above 0 must map to a DSCP other than 0.
    #[arg(long, value_name = "MAP", value_parser = PriorityMap::parse, default_value = "0=CS0,1=AF11,10=AF21,20=AF31,30=AF41,40=EF")]
    priority_map: PriorityMap,
    /// From TRANSPORT_PRIORITY to the slot scheduler's traffic class, with
    /// `sched=slots&classes=...` on the endpoint: `PRIORITY=CLASS` pairs,
    /// e.g. `0=bulk,1=ctl` (default: priority above 0 the first real-time
    /// class, else the first best-effort one). A class the scheduler does
    /// not have is refused, naming its classes.
    #[arg(long, value_name = "MAP", value_parser = detpath_pubsub::priority::ClassMap::parse)]
    priority_classes: Option<detpath_pubsub::priority::ClassMap>,
    /// What this host's wall clock (CLOCK_REALTIME, which writers stamp
    /// samples with) agrees with: auto judges writers on this host only
    /// (one clock; writers elsewhere are `unsynchronised`, nothing judged);
    /// synced says CLOCK_REALTIME is disciplined to a common reference
    /// (ptp4l + phc2sys on both hosts), so every writer is judged;
    /// `ptp:SPEC` runs a PTP slave in the node on SPEC, the event port's
    /// endpoint (e.g. `ptp:udp://dpb?port=319`); once it is locked to the
    /// master (ptp4l -4, `detpath sched ptp master`) the node stamps INFO_TS
    /// and judges budgets on that steered clock, which the slave keeps
    /// steering for the whole run (no host clock is touched; `clock.ptp` in
    /// the summary says where the servo was at the end).
    #[arg(long, value_name = "CLOCK", value_parser = crate::pubsub::user::clock, default_value = "auto")]
    clock: crate::pubsub::user::ClockChoice,
    /// An error injected into the node's clock, e.g. `50ms` or `-37us` (a
    /// bare number is ns), to see a budget judged on a wrong clock (auto,
    /// synced) or corrected by PTP (ptp:SPEC).
    #[arg(long, value_name = "OFFSET", value_parser = crate::vocab::offset, allow_hyphen_values = true)]
    clock_offset: Option<crate::vocab::Offset>,
    /// With --clock ptp:SPEC: how long the PTP slave may steer the clock
    /// before the node starts, e.g. `8s` (a bare number is seconds); the node
    /// starts once it is locked, and exits 2 saying what the slave saw if it
    /// is not locked by then.
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs, default_value = "8s")]
    ptp_settle: Duration,
    /// With --clock ptp:SPEC: locked means the servo's last 4 measured
    /// offsets within this, e.g. `100us` (a bare number is ns).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::nanos, default_value = "100us")]
    ptp_lock_threshold: Duration,
    #[command(flatten)]
    metrics: crate::metrics_args::MetricsArgs,
}

/// The longest latency budget taken: beyond it a "budget" says nothing
/// about latency (and a typo of a unit is likelier).
const MAX_BUDGET: Duration = Duration::from_secs(3600);

/// Value parser of `--latency-budget`: a duration (bare number: µs), more
/// than 0 and at most an hour.
fn latency_budget(s: &str) -> Result<Duration, String> {
    let d = crate::vocab::micros(s)?;
    if d.is_zero() {
        return Err("a latency budget of 0 cannot be met: give a duration above 0 (e.g. 100us), or leave the flag out for none".into());
    }
    if d > MAX_BUDGET {
        return Err(format!("a latency budget of {d:?} is beyond an hour (the most taken): give at most 1h"));
    }
    Ok(d)
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
    #[command(flatten)]
    types: crate::pubsub::user::TypeArgs,
    #[command(flatten)]
    payload: crate::pubsub::user::PayloadArgs,
    /// Sample rate: samples per second, e.g. `1000` or `1000/s` (0: as fast
    /// as reliable flow control allows).
    #[arg(long, value_name = "PER_SECOND", value_parser = crate::vocab::per_second, default_value = "0")]
    rate: f64,
}

#[derive(clap::Args)]
struct SubArgs {
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    types: crate::pubsub::user::TypeArgs,
    /// With --type-name: how each sample's bytes are printed (`payload_hex`
    /// or `payload_base64` in its --json line `{"sample": {...}}`).
    #[arg(long, value_enum, default_value_t = crate::pubsub::user::PayloadFormat::Hex)]
    payload_format: crate::pubsub::user::PayloadFormat,
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
    o.topic = match a.topic.as_deref().unwrap_or("ks") {
        "ks" | "KS" => TopicKind::Ks,
        "ou" | "OU" => TopicKind::Ou,
        t => anyhow::bail!("--topic {t}: use ks or ou (ddsperf's types), or give --type-name (pub, sub) for a topic of that name"),
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
    o.transport_priority = a.transport_priority;
    o.latency_budget_ns = a.latency_budget.map_or(0, |d| crate::vocab::ns(d) as i64);
    o.priority_map = a.priority_map.clone();
    o.priority_classes = a.priority_classes.clone();
    // A PTP-steered clock agrees with the master's, as other hosts' do
    // when they follow it: every writer is judged.
    o.clock = match a.clock {
        ClockChoice::Auto => ClockMode::Auto,
        ClockChoice::Synced | ClockChoice::Ptp(_) => ClockMode::Synced,
    };
    // The clock `install_clock` puts in place (CLOCK_REALTIME until then).
    o.clocks = crate::pubsub::ptp::node_clocks;
    Ok(o)
}

/// Installs the node's clock: CLOCK_REALTIME plus `--clock-offset`, or
/// with `--clock ptp:SPEC` a clock steered by a PTP slave, locked first
/// and steered for the whole run (the [`ptp::Steering`] to finish at the
/// end). Returns it with `--clock`'s name for the summary.
fn install_clock(a: &NodeArgs) -> anyhow::Result<(Option<ptp::Steering>, String)> {
    let offset = a.clock_offset.map_or(0, |o| o.ns());
    match &a.clock {
        ClockChoice::Ptp(spec) => {
            let steering = ptp::lock(spec, a.netns.as_deref(), offset, a.ptp_settle, a.ptp_lock_threshold)?;
            ptp::install(ptp::NodeClock::Ptp(steering.clock()));
            Ok((Some(steering), format!("ptp:{spec}")))
        }
        c => {
            ptp::install(ptp::NodeClock::System(offset));
            Ok((None, if *c == ClockChoice::Synced { "synced" } else { "auto" }.to_string()))
        }
    }
}

/// The node's readers and writers as `/metrics` shows them.
fn metrics_source(board: LiveBoard) -> detpath_metrics::pubsub::Source {
    std::sync::Arc::new(move || {
        let live = board.lock().map(|b| b.clone()).unwrap_or_default();
        let writers = live
            .writers
            .iter()
            .map(|w| detpath_metrics::pubsub::WriterFigures {
                topic: w.topic.clone(),
                priority: w.priority,
                dscp: w.dscp,
                class: w.class,
                matched: w.matched as u64,
                written: w.written,
                unacknowledged: w.unacknowledged,
            })
            .collect();
        let readers = live
            .readers
            .iter()
            .map(|r| {
                let b = &r.budget;
                let h = &b.histogram;
                let mut buckets: Vec<(f64, u64)> = BUCKET_BOUNDS_NS.iter().zip(h.counts.iter()).map(|(&ub, &n)| (ub as f64 / 1e9, n)).collect();
                buckets.push((f64::MAX, h.counts[BUCKET_BOUNDS_NS.len()]));
                detpath_metrics::pubsub::ReaderFigures {
                    topic: r.topic.clone(),
                    clock: b.clock.name().into(),
                    budget_seconds: b.budget_ns as f64 / 1e9,
                    matched: r.matched as u64,
                    received: r.received,
                    lost: r.lost,
                    rejected: r.rejected,
                    deadline_missed: r.deadline_missed,
                    undecodable: r.undecodable,
                    within: b.within,
                    over_by_cause: detpath_pubsub::budget::Cause::ALL.iter().map(|c| (c.name().to_string(), b.cause(*c))).collect(),
                    unjudged: b.unjudged,
                    implausible: b.implausible,
                    buckets,
                    sum_seconds: h.sum_ns as f64 / 1e9,
                    count: h.count,
                }
            })
            .collect();
        detpath_metrics::pubsub::NodeFigures { readers, writers }
    })
}

/// The text summary's budget line.
/// The text summary's budget line: the counts, or why there are none.
pub(crate) fn budget_line(b: &BudgetJson) -> String {
    if b.status == "unjudged" {
        return format!(
            "latency budget {} us (clock {}): not judged, {} samples unjudged: {}",
            b.budget_us,
            b.clock,
            b.unjudged,
            b.unjudged_why.unwrap_or("no latency was measured")
        );
    }
    let causes: Vec<String> = b.causes.iter().filter(|(_, n)| **n > 0).map(|(c, n)| format!("{c} {n}")).collect();
    let l = &b.latency_us;
    let opt = |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"));
    format!(
        "latency budget {} us (clock {}): within {} over {}{} unjudged {} implausible {}; latency p50 <= {} p99 <= {} max {} us",
        b.budget_us,
        b.clock,
        b.within,
        b.over,
        if causes.is_empty() { String::new() } else { format!(" ({})", causes.join(", ")) },
        b.unjudged,
        b.implausible,
        opt(l.p50),
        opt(l.p99),
        opt(l.max)
    )
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

fn print_outcome(o: &Outcome, clock: &ptp::ClockJson, json: bool) {
    if json {
        // The engine's outcome with the node's clock beside it.
        let mut v = serde_json::to_value(o).unwrap_or_default();
        v["clock"] = serde_json::to_value(clock).unwrap_or_default();
        println!("{v}");
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
        "pub" => println!(
            "published {} samples (transport priority {}: DSCP {}{})",
            o.data_sent,
            o.transport_priority,
            detpath_wire::dscp::name(o.dscp).map_or_else(|| o.dscp.to_string(), |n| format!("{n} ({})", o.dscp)),
            o.traffic_class.map_or_else(String::new, |c| format!(", scheduler class {c}"))
        ),
        _ => println!("received {} samples, lost {}, {:.0} samples/s, {:.2} Mb/s", o.received, o.lost, o.samples_per_s, o.mbit_per_s),
    }
    if let Some(b) = &o.latency_budget {
        println!("{}", budget_line(b));
    }
    if let Some(p) = &clock.ptp {
        println!("{}", ptp_line(p));
    }
    let e = &o.engine;
    println!(
        "engine: rx {} tx {} malformed {} retransmits {} heartbeats {} acknacks {} send errors {} core yields {}",
        e.rx_datagrams, e.tx_datagrams, e.rx_malformed, e.retransmits, e.heartbeats_sent, e.acknacks_sent, o.send_errors, o.core_yields
    );
}

/// The text summary's line of a PTP-steered clock.
pub(crate) fn ptp_line(p: &ptp::PtpSummary) -> String {
    let opt = |x: Option<i64>| x.map_or_else(|| "n/a".to_string(), |v| v.to_string());
    format!(
        "clock: PTP on {} following {}, locked after {:.1} s at offset {} ns; steered during the run: {} ({} samples, |offset| at most {} ns), offset at the end {} ns ({})",
        p.endpoint,
        p.master.as_deref().unwrap_or("?"),
        p.settle_s,
        opt(p.last_offsets_ns.last().copied()),
        p.steered_during_run,
        p.samples_during_run,
        p.max_abs_offset_during_run_ns.map_or_else(|| "n/a".to_string(), |v| v.to_string()),
        opt(p.offset_at_end_ns),
        if p.locked_at_end { "locked" } else { "not locked" }
    )
}

/// Starts `--metrics` (its listener in the namespace the command starts
/// in): the live board the node publishes its readers and writers on.
fn start_metrics(a: &NodeArgs) -> anyhow::Result<(detpath_metrics::Metrics, Option<LiveBoard>)> {
    let metrics = a.metrics.start()?;
    let board = metrics.addr().is_some().then(LiveBoard::default);
    if let Some(b) = &board {
        metrics.add_pubsub_source(metrics_source(b.clone()));
    }
    Ok((metrics, board))
}

fn node(a: &NodeArgs, role: Role, name: &str) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let mut o = options(a, role)?;
    // Metrics first: the listener is made in the namespace the command starts in.
    let (_metrics, board) = start_metrics(a)?;
    o.live = board;
    let (steering, mode) = install_clock(a)?;
    let json = a.json;
    let out = run_node(&o, &cleanup::interrupted, |r| print_second(name, json, r))?;
    let clock = ptp::ClockJson { mode, injected_offset_ns: ptp::injected_offset(), ptp: steering.map(ptp::Steering::finish) };
    print_outcome(&out, &clock, json);
    // Exit 1 when reliable samples were lost (as ddsperf does).
    Ok(if o.reliable && out.lost > 0 { 1 } else { 0 })
}

/// A pub or sub of the user's type (`--type-name`): its options, the
/// node's clock installed (PTP: locked first), then the run.
fn user_node(
    a: &NodeArgs,
    types: &TypeArgs,
    publisher: bool,
    extra: (Option<crate::pubsub::user::PayloadArgs>, f64, crate::pubsub::user::PayloadFormat),
) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let topic = a.topic.clone().ok_or_else(|| anyhow::anyhow!("--type-name needs --topic NAME (the topic's name)"))?;
    // The ddsperf options, with --topic taken as a name here.
    let mut opts = options(&NodeArgs { topic: None, ..a.clone() }, if publisher { Role::Pub { rate_hz: extra.1 } } else { Role::Sub })?;
    let (_metrics, board) = start_metrics(a)?;
    opts.live = board;
    let (ptp, clock_name) = install_clock(a)?;
    let (payload, rate_hz, format) = extra;
    let n = UserNode { opts, publisher, topic, types: types.clone(), payload, rate_hz, format, json: a.json, ptp, clock_name };
    crate::pubsub::user::run(n, &cleanup::interrupted)
}

/// A ddsperf node refuses the flags of a node of the user's type.
fn ddsperf_only(types: &TypeArgs) -> anyhow::Result<()> {
    match types.user_only_flag() {
        Some(f) => anyhow::bail!("{f}: give --type-name (and --topic NAME) for a topic of the user's type; ddsperf's topics (--topic ks|ou) are keyed, volatile and as ddsperf sets them"),
        None => Ok(()),
    }
}

/// Runs the `detpath pubsub` subcommand; returns its exit code
/// ([`NODE_EXIT_CODES`] for the nodes, [`crate::pubsub::bench::BENCH_EXIT_CODES`] for bench).
pub fn run(args: Args) -> anyhow::Result<i32> {
    match args.cmd {
        Cmd::Ping(a) => node(&a.node, Role::Ping { rate_hz: a.rate }, "ping"),
        Cmd::Pong(a) => node(&a, Role::Pong, "pong"),
        Cmd::Pub(a) if a.types.user_type() => user_node(&a.node, &a.types, true, (Some(a.payload), a.rate, crate::pubsub::user::PayloadFormat::Hex)),
        Cmd::Pub(a) => {
            ddsperf_only(&a.types)?;
            anyhow::ensure!(
                a.payload.payload_hex.is_none() && a.payload.payload_file.is_none(),
                "--payload-hex/--payload-file: give --type-name NAME and --topic NAME too"
            );
            node(&a.node, Role::Pub { rate_hz: a.rate }, "pub")
        }
        Cmd::Sub(a) if a.types.user_type() => user_node(&a.node, &a.types, false, (None, 0.0, a.payload_format)),
        Cmd::Sub(a) => {
            ddsperf_only(&a.types)?;
            node(&a.node, Role::Sub, "sub")
        }
        Cmd::Bench(a) => crate::pubsub::bench::run(a),
        Cmd::Scale(a) => scale::run(a),
    }
}
