//! The programs behind `detpath pubsub ping|pong|pub|sub`: a ddsperf-compatible
//! node on a detpath endpoint, run on the calling thread, reporting once a
//! second and summarising at the end.

use crate::budget::{BudgetStats, Cause, ClockFn, BUCKET_BOUNDS_NS};
use crate::ddsperf::{summarize, LatencySummary, PerfConfig, PerfNode, Role, TopicKind};
use crate::driver::{Node, Transport};
use crate::engine::{make_guid_prefix, Config, Counters, Participant};
use crate::transport::{EndpointTransport, GroupReception, Link, Wait};
use crate::wire::{Addr, EthAddr};
use serde::Serialize;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What to run.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// Endpoint spec, e.g. `afxdp://dpa?addr=10.77.0.1&port=7410`.
    pub endpoint: String,
    /// Unicast peers to send SPDP to (their metatraffic ports for indices 0..=max_index).
    pub peers: Vec<Ipv4Addr>,
    /// raweth peers (MAC addresses) to send SPDP to, besides the broadcast
    /// address every raweth node announces to (as CycloneDDS's raweth does).
    pub mac_peers: Vec<[u8; 6]>,
    /// Highest participant index whose metatraffic unicast port SPDP goes to
    /// on each peer (ports for indices 0..=max_index).
    pub max_index: u32,
    /// Open the endpoint inside this network namespace.
    pub netns: Option<String>,
    /// The DDS domain id.
    pub domain: u32,
    /// What the node does.
    pub role: Role,
    /// Reliable endpoints (`DDSPerfR*` topics); false: best effort (`DDSPerfU*`).
    pub reliable: bool,
    /// The ddsperf topic type.
    pub topic: TopicKind,
    /// ddsperf "size" of a sample, bytes (KeyedSeq: 12 + baggage, at least 12).
    pub size: usize,
    /// Pings to send (ping; 0: until the duration ends).
    pub count: u64,
    /// How long to run once matched; `None`: until `count` is reached or `stop`.
    pub duration: Option<Duration>,
    /// Give up when nothing matched within this long.
    pub discovery_timeout: Duration,
    /// How the polling thread waits for datagrams.
    pub wait: Wait,
    /// The EEVDF slice (ns) a SCHED_OTHER polling thread asks for
    /// (`sys::thread::request_fair_slice`); 0 leaves the kernel's. Under
    /// CPU load a short slice lets the node's wake-ups preempt the load
    /// instead of waiting out its slice: pub-sub D&S mean 90-108 -> 33 µs.
    pub fair_slice_ns: u64,
    /// The host name announced in ddsperf's participant user data.
    pub hostname: String,
    /// Ping: at most one ping outstanding (see [`PerfConfig::lockstep`](crate::ddsperf::PerfConfig::lockstep)).
    pub lockstep: bool,
    /// Largest RTPS message this node sends (the datapath's limit caps it).
    /// Above the MTU the datapath sends IPv4 fragments, as CycloneDDS does
    /// with its default MaxMessageSize of 14,720 bytes.
    pub max_message: usize,
    /// Without `peers`: announce on and listen to the SPDP multicast group,
    /// as CycloneDDS does by default (udp with an interface named,
    /// `udp://<iface>?...`; afxdp, xdppoll and dpdk: see
    /// [`GroupReception`]).
    pub multicast: bool,
    /// Accept RTPS only from `peers` / `mac_peers` ([`Config::peers_only`]);
    /// needs at least one peer.
    pub peers_only: bool,
    /// Ping: keep every answered ping's times for per-sample records
    /// ([`Outcome::rounds`]).
    pub keep_rounds: bool,
    /// Ping and pong endpoints KEEP_ALL (paper 001's Table I) instead of ddsperf's KEEP_LAST 1.
    pub ping_keep_all: bool,
    /// TRANSPORT_PRIORITY of every writer and reader the node creates (0:
    /// best effort, DSCP 0; see [`detpath_wire::dscp`]).
    pub transport_priority: i32,
    /// LATENCY_BUDGET of every writer and reader, ns (0: none). A reader
    /// requests it, so a writer with a larger budget does not match.
    pub latency_budget_ns: i64,
    /// From TRANSPORT_PRIORITY to DSCP (default: [`detpath_wire::dscp::PriorityMap::default`]).
    pub priority_map: detpath_wire::dscp::PriorityMap,
    /// From TRANSPORT_PRIORITY to the slot scheduler's class (`None`: the
    /// default rule of [`crate::priority`]); needs `sched=slots` on the endpoint.
    pub priority_classes: Option<crate::priority::ClassMap>,
    /// What this host's clock is known to agree with ([`ClockMode`]).
    pub clock: ClockMode,
    /// The clock the node stamps its samples' INFO_TS with and judges
    /// latency budgets on (default: the system's CLOCK_REALTIME,
    /// [`system_clocks`](crate::budget::system_clocks)); e.g. a PTP-steered
    /// clock, with [`ClockMode::Synced`].
    pub clocks: ClockFn,
    /// Where the node publishes its readers' figures while it runs (a few
    /// times a second), for `/metrics`; `None`: nowhere.
    pub live: Option<LiveBoard>,
}

/// What the node may assume about its wall clock (CLOCK_REALTIME, what
/// writers stamp INFO_TS from) against its writers' clocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClockMode {
    /// Writers on this host (one clock) are judged; others are not
    /// (`unsynchronised`): nothing says the two clocks agree.
    #[default]
    Auto,
    /// The user says CLOCK_REALTIME is disciplined to a common reference
    /// (ptp4l + phc2sys, or chrony on a PTP hardware clock): every writer's
    /// samples are judged (`synchronised`).
    Synced,
}

impl ClockMode {
    /// The mode's name on the command line (`auto`, `synced`).
    pub fn name(self) -> &'static str {
        match self {
            ClockMode::Auto => "auto",
            ClockMode::Synced => "synced",
        }
    }
}

/// A running node's readers, as `/metrics` shows them (see [`LiveBoard`]).
#[derive(Clone, Debug, Default)]
pub struct LiveFigures {
    /// One entry per data reader (today: `sub`'s).
    pub readers: Vec<LiveReader>,
    /// The data writer (`pub`'s writes; every node has one).
    pub writers: Vec<LiveWriter>,
}

/// One writer's figures while the node runs.
#[derive(Clone, Debug, Default)]
pub struct LiveWriter {
    /// The writer's topic.
    pub topic: String,
    /// Its TRANSPORT_PRIORITY.
    pub priority: i32,
    /// The DSCP its datagrams carry.
    pub dscp: u8,
    /// The slot scheduler's class number its datagrams leave in (`None`: the default).
    pub class: Option<u16>,
    /// Readers matched now.
    pub matched: usize,
    /// Samples written.
    pub written: u64,
    /// Samples not yet acknowledged by every reliable reader.
    pub unacknowledged: i64,
}

/// One reader's figures while the node runs.
#[derive(Clone, Debug, Default)]
pub struct LiveReader {
    /// The reader's topic.
    pub topic: String,
    /// Writers matched now.
    pub matched: usize,
    /// Samples taken by the application.
    pub received: u64,
    /// Samples lost (holes in the writers' sequence numbers, or given up by the engine).
    pub lost: u64,
    /// Samples refused while a KEEP_ALL cache was full.
    pub rejected: u64,
    /// Deadline periods that passed without a sample.
    pub deadline_missed: u64,
    /// Samples that did not deserialize as the reader's type (another layout under its name).
    pub undecodable: u64,
    /// Its budget accounting.
    pub budget: BudgetStats,
}

/// Shared between the node's thread (writer) and a metrics listener (reader).
pub type LiveBoard = Arc<Mutex<LiveFigures>>;

impl NodeOptions {
    /// Defaults: domain 0, reliable 32-byte KeyedSeq, busy polling, peer indices 0..=9, 10 s discovery timeout.
    pub fn new(endpoint: &str, role: Role) -> NodeOptions {
        NodeOptions {
            endpoint: endpoint.to_string(),
            peers: Vec::new(),
            mac_peers: Vec::new(),
            max_index: 9,
            netns: None,
            domain: 0,
            role,
            reliable: true,
            topic: TopicKind::Ks,
            size: 32,
            count: 0,
            duration: None,
            discovery_timeout: Duration::from_secs(10),
            wait: Wait::ADAPTIVE,
            hostname: hostname(),
            lockstep: false,
            max_message: 14_720,
            fair_slice_ns: 100_000,
            multicast: true,
            peers_only: false,
            keep_rounds: false,
            ping_keep_all: false,
            transport_priority: 0,
            latency_budget_ns: 0,
            priority_map: detpath_wire::dscp::PriorityMap::default(),
            priority_classes: None,
            clock: ClockMode::Auto,
            clocks: crate::budget::system_clocks,
            live: None,
        }
    }
}

/// The host name (for ddsperf's user data), from /proc, "?" when unknown.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

/// One second of figures.
#[derive(Clone, Debug, Serialize)]
pub struct SecondReport {
    /// When the report was made: seconds since the measured run began.
    pub t_s: f64,
    /// Ping: one-way latency (RTT/2) of this second's pongs.
    pub latency: LatencySummaryJson,
    /// Sub: samples and megabits received this second.
    pub samples: u64,
    /// Sub: samples received per second (this second's `samples`).
    pub samples_per_s: f64,
    /// Sub: megabits per second of sample bytes (ddsperf sizes) received this second.
    pub mbit_per_s: f64,
    /// Sub: samples lost this second (holes in the writers' sequence numbers).
    pub lost: u64,
}

/// [`LatencySummary`] for JSON (`null` where the count cannot support a percentile).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct LatencySummaryJson {
    /// Latencies summarised.
    pub count: usize,
    /// Mean, µs.
    pub mean: f64,
    /// Minimum, µs.
    pub min: f64,
    /// Median, µs.
    pub p50: f64,
    /// 99th percentile, µs.
    pub p99: f64,
    /// 99.9th percentile, µs.
    pub p99_9: Option<f64>,
    /// 99.99th percentile, µs.
    pub p99_99: Option<f64>,
    /// 99.9999th percentile, µs.
    pub p99_9999: Option<f64>,
    /// Maximum, µs.
    pub max: f64,
}

impl From<LatencySummary> for LatencySummaryJson {
    fn from(s: LatencySummary) -> Self {
        LatencySummaryJson {
            count: s.count,
            mean: s.mean_us,
            min: s.min_us,
            p50: s.p50_us,
            p99: s.p99_us,
            p99_9: s.p999_us,
            p99_99: s.p9999_us,
            p99_9999: s.p999999_us,
            max: s.max_us,
        }
    }
}

/// The end result.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// `ping`, `pong`, `pub` or `sub`.
    pub role: String,
    /// The endpoint spec as given.
    pub endpoint: String,
    /// The datapath: the spec's scheme (`raweth` reported as `raweth+packet`).
    pub datapath: String,
    /// Reliable endpoints.
    pub reliable: bool,
    /// ddsperf sample size, bytes.
    pub size: usize,
    /// Time from start until our endpoints matched a peer's.
    pub discovery_ms: Option<f64>,
    /// Length of the measured run (after discovery and, for ping, the first pong), s.
    pub duration_s: f64,
    /// Ping: pings written.
    pub pings_sent: u64,
    /// Ping: pongs received; sub: data samples received; pong and pub: pings answered.
    pub received: u64,
    /// Ping: pings not answered; sub: data samples lost; 0 for the others.
    pub lost: u64,
    /// One-way latency in microseconds (RTT/2), over the whole run.
    pub latency_us: LatencySummaryJson,
    /// Peers' pings this node answered.
    pub pings_answered: u64,
    /// Data samples written (pub).
    pub data_sent: u64,
    /// Data samples received (sub).
    pub data_received: u64,
    /// Data samples received per second over the run.
    pub samples_per_s: f64,
    /// Megabits per second of sample bytes (ddsperf sizes) received over the run.
    pub mbit_per_s: f64,
    /// ddsperf peers a pong writer was created for.
    pub peers: usize,
    /// The engine's counters at the end.
    pub engine: CountersJson,
    /// Sends the endpoint refused.
    pub send_errors: u64,
    /// Times the adaptive wait found the core shared and began to sleep between datagrams.
    pub core_yields: u64,
    /// Data writer: readers matched at the end.
    pub writer_matched: usize,
    /// Of those, reliable readers.
    pub writer_matched_reliable: usize,
    /// Samples not yet acknowledged by every reliable reader at the end.
    pub writer_unacknowledged: i64,
    /// Data reader (sub): writers matched at the end.
    pub reader_matched: usize,
    /// Samples refused while its KEEP_ALL cache was full.
    pub reader_rejected: u64,
    /// Data reader (sub): samples that did not deserialize as the ddsperf
    /// type (a writer of another layout under its name), dropped.
    pub reader_undecodable: u64,
    /// The TRANSPORT_PRIORITY the node's writers and readers were given.
    pub transport_priority: i32,
    /// The DSCP the data writer's datagrams carry (from the priority by
    /// [`NodeOptions::priority_map`]).
    pub dscp: u8,
    /// The slot scheduler's class number the data writer's datagrams leave
    /// in; `null` without a scheduler (or its default class).
    pub traffic_class: Option<u16>,
    /// Sub: the data reader's samples held to the latency budget; `None`
    /// for the other roles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_budget: Option<BudgetJson>,
    /// Ping with [`NodeOptions::keep_rounds`]: each answered ping as (seq,
    /// monotonic send ns, monotonic pong reception ns), in arrival order.
    #[serde(skip)]
    pub rounds: Vec<(u32, u64, u64)>,
}

/// A reader's [`BudgetStats`] for JSON: `within + over + unjudged +
/// implausible` is every sample the reader received.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BudgetJson {
    /// The budget samples were judged against, µs (0: none given; latencies
    /// are measured, nothing is over).
    pub budget_us: f64,
    /// `same-host`, `synchronised` or `unsynchronised` (then nothing is judged).
    pub clock: &'static str,
    /// Whether the counts below say anything about the budget: `judged`
    /// (every sample's latency measured), `partly_judged` (some were not),
    /// `unjudged` (none could be: `within` and `over` are 0 because nothing
    /// was measured, not because nothing was late) or `no_samples`.
    pub status: &'static str,
    /// Why samples went unjudged, when some did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unjudged_why: Option<&'static str>,
    /// Samples judged within the budget.
    pub within: u64,
    /// Samples judged over the budget.
    pub over: u64,
    /// Over-budget samples by cause (`sent_late`, `retransmission`,
    /// `reader_late`, `network`), every cause present.
    pub causes: std::collections::BTreeMap<&'static str, u64>,
    /// Samples not judged (no INFO_TS, or the clocks are not known to agree).
    pub unjudged: u64,
    /// Samples whose INFO_TS was implausible (far future or past): kept out of the latencies.
    pub implausible: u64,
    /// One-way latencies of the judged samples, µs, from the histogram.
    pub latency_us: HistogramSummaryJson,
}

/// Percentiles read from a [`crate::budget::LatencyHistogram`]: each is the
/// upper bound of the bucket the percentile falls in (an upper estimate;
/// the largest latency where the bucket is `+Inf`); `null` without samples.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct HistogramSummaryJson {
    /// Latencies in the histogram.
    pub count: u64,
    /// Mean, µs (exact: the histogram keeps the sum).
    pub mean: Option<f64>,
    /// Median (bucket upper bound), µs.
    pub p50: Option<f64>,
    /// 90th percentile (bucket upper bound), µs.
    pub p90: Option<f64>,
    /// 99th percentile (bucket upper bound), µs.
    pub p99: Option<f64>,
    /// 99.9th percentile (bucket upper bound), µs.
    pub p99_9: Option<f64>,
    /// The largest latency, µs (exact).
    pub max: Option<f64>,
}

/// The upper bound (ns) of the bucket holding the `q`-quantile of `h`
/// (the largest latency for the `+Inf` bucket); `None` when it is empty.
pub fn histogram_quantile_ns(h: &crate::budget::LatencyHistogram, q: f64) -> Option<u64> {
    if h.count == 0 {
        return None;
    }
    let rank = ((q * h.count as f64).ceil() as u64).clamp(1, h.count);
    let mut seen = 0u64;
    for (i, &n) in h.counts.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return Some(BUCKET_BOUNDS_NS.get(i).map_or(h.max_ns, |&b| b.min(h.max_ns.max(1))));
        }
    }
    Some(h.max_ns)
}

impl From<&BudgetStats> for BudgetJson {
    fn from(b: &BudgetStats) -> Self {
        let h = &b.histogram;
        let us = |ns: Option<u64>| ns.map(|n| n as f64 / 1e3);
        let measured = h.count;
        let status = match (measured, b.unjudged) {
            (0, 0) => "no_samples",
            (0, _) => "unjudged",
            (_, 0) => "judged",
            _ => "partly_judged",
        };
        let unjudged_why = (b.unjudged > 0).then_some(if b.clock.judges() {
            "samples without a source timestamp (INFO_TS): no latency to measure"
        } else {
            "the writer's clock is not known to agree with this reader's (another host, no synchronised clock): no latency was measured; run both on one host, or give --clock synced (clocks disciplined by ptp4l/phc2sys) or --clock ptp:SPEC"
        });
        BudgetJson {
            budget_us: b.budget_ns as f64 / 1e3,
            clock: b.clock.name(),
            status,
            unjudged_why,
            within: b.within,
            over: b.over,
            causes: Cause::ALL.iter().map(|c| (c.name(), b.cause(*c))).collect(),
            unjudged: b.unjudged,
            implausible: b.implausible,
            latency_us: HistogramSummaryJson {
                count: h.count,
                mean: (h.count > 0).then(|| h.sum_ns as f64 / h.count as f64 / 1e3),
                p50: us(histogram_quantile_ns(h, 0.5)),
                p90: us(histogram_quantile_ns(h, 0.9)),
                p99: us(histogram_quantile_ns(h, 0.99)),
                p99_9: us(histogram_quantile_ns(h, 0.999)),
                max: (h.count > 0).then(|| h.max_ns as f64 / 1e3),
            },
        }
    }
}

/// The engine counters that matter in a report.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct CountersJson {
    /// [`Counters::rx_datagrams`]: datagrams received.
    pub rx_datagrams: u64,
    /// Datagrams from hosts that are not peers, dropped unread (`--peers-only`).
    pub rx_not_from_peer: u64,
    /// [`Counters::tx_datagrams`]: datagrams sent.
    pub tx_datagrams: u64,
    /// [`Counters::rx_malformed`]: datagrams or submessages that failed validation.
    pub rx_malformed: u64,
    /// [`Counters::retransmits`]: samples resent in answer to ACKNACKs.
    pub retransmits: u64,
    /// [`Counters::heartbeats_sent`].
    pub heartbeats_sent: u64,
    /// [`Counters::acknacks_sent`].
    pub acknacks_sent: u64,
    /// [`Counters::data_lost`]: samples that never arrived.
    pub data_lost: u64,
    /// [`Counters::gap_skipped`]: sequence numbers skipped on a writer's GAP.
    pub gap_skipped: u64,
    /// [`Counters::data_duplicate`]: samples received again.
    pub data_duplicate: u64,
    /// [`Counters::data_out_of_window`]: samples too far ahead for the reorder window.
    pub data_out_of_window: u64,
    /// [`Counters::nacks_suppressed`]: NACKed samples not resent because they just were.
    pub nacks_suppressed: u64,
    /// [`Counters::gaps_sent`].
    pub gaps_sent: u64,
    /// [`Counters::discovery_rejected`]: SPDP/SEDP announcements refused.
    pub discovery_rejected: u64,
    /// Participants or endpoints refused or evicted because the tables were full.
    pub discovery_over_limit: u64,
    /// Sequence numbers and counts refused as implausible (corrupted or forged RTPS).
    pub implausible: u64,
    /// State a forged message had changed, won back from the real peer's traffic.
    pub resyncs: u64,
    /// [`Counters::frags_received`]: DATA_FRAG submessages taken into reassembly.
    pub frags_received: u64,
    /// [`Counters::frag_rejected`]: DATA_FRAG refused (sample above `max_sample_size`, too
    /// many fragments): a large sample that never arrives shows here.
    pub frag_rejected: u64,
    /// [`Counters::frag_abandoned`]: reassemblies given up unfinished.
    pub frag_abandoned: u64,
}

impl From<Counters> for CountersJson {
    fn from(c: Counters) -> Self {
        CountersJson {
            rx_datagrams: c.rx_datagrams,
            rx_not_from_peer: c.rx_not_from_peer,
            tx_datagrams: c.tx_datagrams,
            rx_malformed: c.rx_malformed,
            retransmits: c.retransmits,
            heartbeats_sent: c.heartbeats_sent,
            acknacks_sent: c.acknacks_sent,
            data_lost: c.data_lost,
            gap_skipped: c.gap_skipped,
            data_duplicate: c.data_duplicate,
            data_out_of_window: c.data_out_of_window,
            nacks_suppressed: c.nacks_suppressed,
            gaps_sent: c.gaps_sent,
            discovery_rejected: c.discovery_rejected,
            discovery_over_limit: c.discovery_over_limit,
            implausible: c.implausible,
            resyncs: c.resyncs,
            frags_received: c.frags_received,
            frag_rejected: c.frag_rejected,
            frag_abandoned: c.frag_abandoned,
        }
    }
}

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The endpoint (or the SPDP multicast group's socket) did not open:
    /// `source` says why (a wrong key, a missing interface or capability).
    #[error("opening endpoint {spec}: {source}")]
    Open {
        /// What was opened: the spec (with the SPDP group's keys when they
        /// were added), or the multicast group and interface.
        spec: String,
        /// The datapath's error.
        source: detpath::Error,
    },
    /// `sched_setattr` refused the short EEVDF slice
    /// ([`NodeOptions::fair_slice_ns`]); `fair_slice_ns` 0 (`--fair-slice-us 0`)
    /// leaves the kernel's.
    #[error("asking the scheduler for a short slice (sched_setattr): {0}; --fair-slice-us 0 leaves the kernel's")]
    FairSlice(std::io::Error),
    /// The network namespace [`NodeOptions::netns`] could not be entered
    /// (it does not exist, or the process lacks CAP_SYS_ADMIN).
    #[error("entering network namespace {ns}: {source}")]
    Netns {
        /// The namespace's name.
        ns: String,
        /// Why it could not be entered.
        source: detpath::Error,
    },
    /// The priority mapping does not fit the endpoint: a class the slot
    /// scheduler does not have, or a class map without a scheduler (the
    /// message names the scheduler's classes).
    #[error("{0}")]
    Priority(crate::priority::PriorityError),
    /// The engine refused the ddsperf endpoints (see the
    /// [`EngineError`](crate::engine::EngineError)).
    #[error("creating the DDS endpoints: {0}")]
    Engine(crate::engine::EngineError),
    /// Nothing matched within [`NodeOptions::discovery_timeout`] (carried):
    /// no peer runs, it is in another domain, or discovery traffic does not
    /// reach it (peers, multicast, firewall).
    #[error("no peer matched within {0:?}: check --peer, the domain and that the peer runs (ddsperf, or detpath pubsub)")]
    NoPeer(Duration),
    /// [`NodeOptions::peers_only`] without a peer would accept nothing: give
    /// at least one.
    #[error("--peers-only needs at least one --peer (the hosts to accept RTPS from)")]
    PeersOnlyWithoutPeers,
    /// No peers were given and this datapath cannot take part in SPDP
    /// multicast discovery as set up: give peers, or what `why` asks for.
    #[error("{spec}: no peers, and no multicast discovery: {why}")]
    NoDiscovery {
        /// The endpoint spec as given.
        spec: String,
        /// What is missing (e.g. an interface to join the group on).
        why: String,
    },
}

// Not `#[from]`: the message already says the inner error, and a source
// would make a printed chain (`{:#}`) say it twice.
impl From<crate::engine::EngineError> for AppError {
    fn from(e: crate::engine::EngineError) -> AppError {
        AppError::Engine(e)
    }
}

impl From<crate::priority::PriorityError> for AppError {
    fn from(e: crate::priority::PriorityError) -> AppError {
        AppError::Priority(e)
    }
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Ping { .. } => "ping",
        Role::Pong => "pong",
        Role::Pub { .. } => "pub",
        Role::Sub => "sub",
    }
}

/// Opens the endpoint of `opts` (inside its namespace when given), joins the
/// SPDP multicast group where the node discovers that way, and builds the
/// participant's configuration: discovery peers and targets, `--peers-only`,
/// the datagram size, whether other hosts' clocks are trusted, and the
/// writers' priority marks. [`open_node`] starts here, and so does any node
/// of another type (the CLI's nodes of a user's type), which sets what is
/// its own (the clock, the sample size limit) before `Participant::new`.
pub fn open_transport(opts: &NodeOptions) -> Result<(EndpointTransport, Config), AppError> {
    // Peerless UDP nodes discover over the SPDP multicast group; how the
    // group is heard depends on the datapath (see `GroupReception`).
    let scheme = opts.endpoint.split("://").next().unwrap_or("");
    let reception = match opts.multicast && opts.peers.is_empty() && crate::transport::raweth_spec(&opts.endpoint).is_none() {
        true => Some(crate::transport::spdp_group_reception(scheme).map_err(|why| AppError::NoDiscovery { spec: opts.endpoint.clone(), why })?),
        false => None,
    };
    let spec = match reception {
        Some(GroupReception::Endpoint) => crate::transport::spdp_group_spec(&opts.endpoint, opts.domain),
        _ => opts.endpoint.clone(),
    };
    let open = || crate::transport::open(&spec);
    let link = match &opts.netns {
        Some(ns) => detpath::sys::netns::run_in(ns, open).map_err(|e| AppError::Netns { ns: ns.clone(), source: e.into() })?,
        None => open(),
    }
    .map_err(|e| AppError::Open { spec: spec.clone(), source: e })?;
    let mut t = EndpointTransport::on(link, opts.wait);
    // A polling thread that is not real-time asks for a short fair-scheduler
    // slice, so that on a loaded core its wake-ups preempt the load at once.
    if opts.fair_slice_ns > 0 && detpath::sys::thread::is_fair_policy() {
        detpath::sys::thread::request_fair_slice(opts.fair_slice_ns).map_err(AppError::FairSlice)?;
    }
    if reception == Some(GroupReception::KernelSocket) {
        let iface = match &t.link {
            Link::Datagram(ep) => ep.capabilities().iface.clone(),
            Link::Frames(_) => None,
        };
        let Some(iface) = iface else {
            return Err(AppError::NoDiscovery {
                spec: opts.endpoint.clone(),
                why: "no interface to join the SPDP multicast group on: name it (udp://<iface>?addr=A&port=P) or give --peer".into(),
            });
        };
        let open_group = || crate::transport::open_spdp_group(&iface, opts.domain);
        let group = match &opts.netns {
            Some(ns) => detpath::sys::netns::run_in(ns, open_group).map_err(|e| AppError::Netns { ns: ns.clone(), source: e.into() })?,
            None => open_group(),
        }
        .map_err(|e| AppError::Open { spec: format!("SPDP multicast group on {iface}"), source: e })?;
        t = t.with_group(group);
    }
    let local = t.local_addr();
    let (host, port) = match local {
        Addr::Udp(a) => (u32::from(*a.ip()), a.port()),
        Addr::Eth(e) => (u32::from_be_bytes([e.mac[2], e.mac[3], e.mac[4], e.mac[5]]), e.ethertype),
    };
    let instance = (t.now_ns() as u32) ^ (port as u32) << 16;
    let mut cfg = Config::new(opts.domain, make_guid_prefix(host, std::process::id(), instance), local);
    match local {
        Addr::Udp(_) => {
            for ip in &opts.peers {
                cfg.add_peer(*ip, opts.max_index);
            }
            if reception.is_some() {
                cfg.add_spdp_multicast();
            }
        }
        Addr::Eth(e) => {
            cfg.add_spdp_target(Addr::Eth(EthAddr::broadcast(e.ethertype)));
            for mac in &opts.mac_peers {
                cfg.add_spdp_target(Addr::Eth(EthAddr { mac: *mac, ethertype: e.ethertype }));
            }
        }
    }
    if opts.peers_only {
        if opts.peers.is_empty() && opts.mac_peers.is_empty() {
            return Err(AppError::PeersOnlyWithoutPeers);
        }
        cfg.peers_only = true;
    }
    cfg.max_datagram = t.max_datagram().min(opts.max_message);
    // Writers on this host share our clock (the engine tells them by the
    // host id in their SPDP); others only when the user says ours is synchronised.
    cfg.clock_synchronised = opts.clock == ClockMode::Synced;
    cfg.clock = opts.clocks;
    let policy = crate::priority::PriorityPolicy { dscp: opts.priority_map.clone(), classes: opts.priority_classes.clone() };
    cfg.priority = t.priority_marks(&policy)?;
    Ok((t, cfg))
}

/// Opens the endpoint (inside the namespace when given) and builds the node.
pub fn open_node(opts: &NodeOptions) -> Result<(Node<EndpointTransport>, PerfNode), AppError> {
    let (t, mut cfg) = open_transport(opts)?;
    cfg.user_data = PerfNode::user_data_for(opts.role, std::process::id(), &opts.hostname);
    let now = t.now_ns();
    let mut p = Participant::new(cfg, now);
    let mut pc = PerfConfig::new(opts.role);
    pc.reliable = opts.reliable;
    pc.topic = opts.topic;
    pc.size = opts.size;
    pc.count = opts.count;
    pc.lockstep = opts.lockstep;
    pc.keep_rounds = opts.keep_rounds;
    pc.ping_keep_all = opts.ping_keep_all;
    pc.transport_priority = opts.transport_priority;
    pc.latency_budget_ns = opts.latency_budget_ns;
    if let (Role::Ping { rate_hz }, Some(d)) = (opts.role, opts.duration) {
        let expect = (rate_hz.max(1.0) * d.as_secs_f64() * 1.2) as usize + 1024;
        pc.max_latency_samples = expect.min(20_000_000);
    }
    if opts.count > 0 {
        pc.max_latency_samples = opts.count as usize + 16;
    }
    let perf = PerfNode::new(&mut p, now, pc)?;
    Ok((Node::new(p, t), perf))
}

/// Whether this node has matched what it needs to start.
fn matched(perf: &PerfNode, p: &Participant) -> bool {
    match perf.cfg.role {
        Role::Ping { .. } => perf.ready(p),
        Role::Pong => perf.peers() > 0,
        Role::Pub { .. } => perf.data_writer_matched(p),
        Role::Sub => perf.data_reader_matched(p),
    }
}

/// Runs a node until its count or duration is reached or `stop` is set;
/// `each_second` gets a report once a second.
pub fn run(opts: &NodeOptions, stop: &dyn Fn() -> bool, mut each_second: impl FnMut(&SecondReport)) -> Result<Outcome, AppError> {
    let (mut node, mut perf) = open_node(opts)?;
    let start = node.transport.now_ns();
    // Discovery first, so a missing peer is an error rather than a run of nothing.
    let mut discovery_ms = None;
    while discovery_ms.is_none() {
        let now = node.transport.now_ns();
        if matched(&perf, &node.participant) {
            discovery_ms = Some((now - start) as f64 / 1e6);
            break;
        }
        if stop() || now - start > opts.discovery_timeout.as_nanos() as u64 {
            return Err(AppError::NoPeer(opts.discovery_timeout));
        }
        perf.on_events(&mut node.participant);
        node.turn(1_000_000, |_, _, _| {});
    }
    // A reliable volatile writer only delivers to readers that matched it
    // before the write, and matching completes on the peer's side on its own
    // schedule: ping until the first pong is back (at most 5 s), then count.
    if matches!(opts.role, Role::Ping { .. }) {
        let until = node.transport.now_ns() + 5_000_000_000;
        let saved = perf.cfg.count;
        perf.cfg.count = 0;
        while perf.stats.pongs_received == 0 && node.transport.now_ns() < until && !stop() {
            let now = node.transport.now_ns();
            perf.on_events(&mut node.participant);
            perf.poll(&mut node.participant, &mut crate::driver::TransportOutbox(&mut node.transport), now, (opts.clocks)().wall_ns);
            node.turn(1_000_000, |p, out, rx| perf.poll(p, out, rx, (opts.clocks)().wall_ns));
        }
        perf.cfg.count = saved;
        perf.reset_stats();
    }
    let t0 = node.transport.now_ns();
    let limit = opts.duration.map(|d| d.as_nanos() as u64);
    let count = opts.count;
    let (mut last_rx, mut last_bytes, mut last_lost) = (0u64, 0u64, 0u64);
    let mut drain_until: Option<u64> = None;
    let mut next_live = 0u64;
    let clocks = opts.clocks;
    node.run_perf_on(
        &mut perf,
        || clocks().wall_ns,
        |p, pp, t| {
            if let Some(board) = opts.live.as_ref().filter(|_| t >= next_live) {
                // A few times a second: a scrape sees figures at most 250 ms old.
                next_live = t + 250_000_000;
                publish_live(board, p, pp);
            }
            if stop() {
                return true;
            }
            if limit.is_some_and(|l| t >= l) {
                // A ping node stops pinging at the limit and waits up to 1 s
                // for the answers in flight: they are late, not lost.
                if !matches!(p.cfg.role, Role::Ping { .. }) || p.stats.pongs_received >= p.stats.pings_sent {
                    return true;
                }
                p.cfg.count = p.stats.pings_sent;
                let d = *drain_until.get_or_insert(t + 1_000_000_000);
                return t >= d;
            }
            if p.count_done() && !matches!(p.cfg.role, Role::Pub { .. }) {
                return true;
            }
            // Pings sent (or samples published): wait for the answers (2 s),
            // or for the readers' acknowledgements (10 s).
            if count > 0 && (p.ping_done() || p.count_done()) {
                let grace = if matches!(p.cfg.role, Role::Pub { .. }) { 10_000_000_000 } else { 2_000_000_000 };
                let d = *drain_until.get_or_insert(t + grace);
                return t >= d || (matches!(p.cfg.role, Role::Pub { .. }) && p.all_acknowledged(pp));
            }
            false
        },
        |p, t| {
            let w = summarize(&p.stats.latency_ns[p.window_start..]);
            p.window_start = p.stats.latency_ns.len();
            let rx = p.stats.data_received - last_rx;
            let bytes = p.stats.data_bytes - last_bytes;
            let lost = p.stats.data_lost - last_lost;
            last_rx = p.stats.data_received;
            last_bytes = p.stats.data_bytes;
            last_lost = p.stats.data_lost;
            each_second(&SecondReport {
                t_s: t as f64 / 1e9,
                latency: w.into(),
                samples: rx,
                samples_per_s: rx as f64,
                mbit_per_s: bytes as f64 * 8.0 / 1e6,
                lost,
            });
        },
    );
    let dur = (node.transport.now_ns() - t0) as f64 / 1e9;
    let (ws, rs) = perf.data_status(&node.participant);
    if let Some(board) = &opts.live {
        publish_live(board, &perf, &node.participant);
    }
    let budget = perf.data_reader().map(|r| reader_budget(&node.participant, r));
    let mark = node.participant.writer_mark(perf.data_writer());
    // Tell peers we are gone, so they do not wait for our lease to expire.
    node.participant.shutdown(&mut crate::driver::TransportOutbox(&mut node.transport));
    let rounds = std::mem::take(&mut perf.stats.rounds);
    let st = &perf.stats;
    let (received, lost) = match opts.role {
        Role::Ping { .. } => (st.pongs_received, st.pings_sent - st.pongs_received),
        // Holes the node saw in the writers' sequence numbers, or samples the
        // engine gave up on (a reliable writer's GAP over them, or history
        // gone): whichever is more, so lost reliable samples never exit 0.
        Role::Sub => (st.data_received, st.data_lost.max(rs.map_or(0, |r| r.lost))),
        _ => (st.pings_answered, 0),
    };
    // raweth://dpa is the packet frame datapath: name it as raweth+packet.
    let datapath = match opts.endpoint.split("://").next().unwrap_or("") {
        "raweth" => "raweth+packet".to_string(),
        dp => dp.to_string(),
    };
    Ok(Outcome {
        role: role_name(opts.role).into(),
        endpoint: opts.endpoint.clone(),
        datapath,
        reliable: opts.reliable,
        size: opts.size,
        discovery_ms,
        duration_s: dur,
        pings_sent: st.pings_sent,
        received,
        lost,
        latency_us: summarize(&st.latency_ns).into(),
        pings_answered: st.pings_answered,
        data_sent: st.data_sent,
        data_received: st.data_received,
        samples_per_s: if dur > 0.0 { st.data_received as f64 / dur } else { 0.0 },
        mbit_per_s: if dur > 0.0 { st.data_bytes as f64 * 8.0 / dur / 1e6 } else { 0.0 },
        peers: perf.peers(),
        engine: node.participant.counters().into(),
        send_errors: node.transport.send_errors,
        core_yields: node.transport.core_yields(),
        writer_matched: ws.matched,
        writer_matched_reliable: ws.matched_reliable,
        writer_unacknowledged: ws.unacknowledged,
        reader_matched: rs.map_or(0, |r| r.matched),
        reader_rejected: rs.map_or(0, |r| r.rejected),
        reader_undecodable: rs.map_or(0, |r| r.undecodable),
        transport_priority: opts.transport_priority,
        dscp: mark.dscp,
        traffic_class: mark.class,
        latency_budget: budget.as_ref().map(BudgetJson::from),
        rounds,
    })
}

/// A reader's budget accounting, from the engine (which judges every
/// sample as it is delivered: against the writer's offered budget, else
/// the reader's). With no budget at all latencies are measured and nothing
/// is within or over.
fn reader_budget(p: &Participant, r: crate::engine::ReaderId) -> BudgetStats {
    p.reader_budget(r).clone()
}

/// Writes the node's reader figures to the live board.
fn publish_live(board: &LiveBoard, perf: &PerfNode, p: &Participant) {
    let readers = perf
        .data_reader()
        .map(|r| {
            let st = p.reader_status(r);
            LiveReader {
                topic: perf.cfg.topic_names().0,
                matched: st.matched,
                received: perf.stats.data_received,
                lost: perf.stats.data_lost.max(st.lost),
                rejected: st.rejected,
                deadline_missed: st.requested_deadline_missed,
                undecodable: st.undecodable,
                budget: reader_budget(p, r),
            }
        })
        .into_iter()
        .collect();
    let w = perf.data_writer();
    let (ws, mark) = (p.writer_status(w), p.writer_mark(w));
    let writers = vec![LiveWriter {
        topic: perf.cfg.topic_names().0,
        priority: perf.cfg.transport_priority,
        dscp: mark.dscp,
        class: mark.class,
        matched: ws.matched,
        written: ws.written,
        unacknowledged: ws.unacknowledged,
    }];
    if let Ok(mut b) = board.lock() {
        b.readers = readers;
        b.writers = writers;
    }
}
