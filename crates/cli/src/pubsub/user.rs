//! `detpath pubsub pub|sub` with a topic of the user's type: a serialized
//! payload (as the user's IDL compiler or serializer made it) written under
//! any topic and type name, and every received sample printed as bytes, so
//! a topic of any type can be injected and watched from the shell. With
//! `--ros2` the names are ROS 2's (`rt/<topic>`, `pkg::msg::dds_::Type_`),
//! with durability and history QoS, and with `--clock ptp:SPEC` on a clock
//! steered by PTP (`ptp.rs`).
//!
//! The node runs on the calling thread, as the ddsperf nodes do
//! (`detpath_pubsub::app`); it opens its endpoint the same way (peers,
//! the SPDP multicast group, namespace, priority marks) but makes its own
//! participant, whose clock is the node's ([`crate::pubsub::ptp::node_clocks`]).

use crate::pubsub::ptp::{node_clocks, ClockJson, Steering};
use detpath_pubsub::app::{BudgetJson, CountersJson, LiveBoard, LiveReader, LiveWriter, NodeOptions};
use detpath_pubsub::driver::{Node, Transport, TransportOutbox};
use detpath_pubsub::engine::{Participant, ReaderId, WriteError, WriterId};
use detpath_pubsub::qos::{Durability, History, Qos, Reliability};
use detpath_pubsub::transport::EndpointTransport;
use detpath_pubsub::wire::{Guid, Time};
use serde::Serialize;
use std::sync::OnceLock;

/// The largest payload taken: the engine's largest sample (its readers'
/// reassembly bound, `Config::max_sample_size`).
pub const MAX_PAYLOAD: usize = 1 << 20;

/// Flags of a topic of the user's type (`pub` and `sub`).
#[derive(clap::Args, Clone, Debug)]
pub struct TypeArgs {
    /// The topic's DDS type name, e.g. `HelloWorldData::Msg` (with --ros2 the
    /// ROS 2 message type, e.g. `std_msgs/msg/String`). With it, --topic is
    /// the topic's name and the samples are serialized payloads: `pub` sends
    /// --payload-hex/--payload-file as they are, `sub` prints each sample's
    /// bytes.
    #[arg(long, value_name = "NAME")]
    pub type_name: Option<String>,
    /// ROS 2 names: --topic `chatter` (or `/ns/chatter`) is the DDS topic
    /// `rt/chatter`, --type-name `pkg/msg/Type` the DDS type
    /// `pkg::msg::dds_::Type_`, as rmw_cyclonedds and rmw_fastrtps name them.
    /// A name ROS would refuse is refused (exit 2, saying why).
    #[arg(long, requires = "type_name")]
    pub ros2: bool,
    /// A keyed topic (the type has @key fields): `pub` needs --key-hex.
    #[arg(long)]
    pub keyed: bool,
    /// DURABILITY: volatile (a reader gets what is written after it
    /// matched) or transient-local (a writer keeps its history for readers
    /// that come later; a late-joining reader asks for it with
    /// transient-local too). Default volatile. With --type-name.
    #[arg(long, value_enum)]
    pub durability: Option<DurabilityArg>,
    /// HISTORY: `keep-last:N` or `keep-all` (every sample reaches every
    /// reliable reader; a writer waits for acknowledgements when 1024 are
    /// outstanding; the default). With --type-name.
    #[arg(long, value_name = "KIND", value_parser = history)]
    pub history: Option<History>,
}

/// `--durability`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurabilityArg {
    /// Nothing kept for late joiners.
    Volatile,
    /// The writer's history goes to readers that match later.
    TransientLocal,
}

impl TypeArgs {
    /// Whether the node is one of the user's type.
    pub fn user_type(&self) -> bool {
        self.type_name.is_some()
    }
    /// The flags that only a node of the user's type takes, if any was given.
    pub fn user_only_flag(&self) -> Option<&'static str> {
        [(self.keyed, "--keyed"), (self.durability.is_some(), "--durability"), (self.history.is_some(), "--history")].into_iter().find(|f| f.0).map(|f| f.1)
    }
    fn durability(&self) -> DurabilityArg {
        self.durability.unwrap_or(DurabilityArg::Volatile)
    }
    fn history(&self) -> History {
        self.history.unwrap_or(History::KeepAll)
    }
}

impl DurabilityArg {
    fn qos(self) -> Durability {
        match self {
            DurabilityArg::Volatile => Durability::Volatile,
            DurabilityArg::TransientLocal => Durability::TransientLocal,
        }
    }
    fn name(self) -> &'static str {
        match self {
            DurabilityArg::Volatile => "volatile",
            DurabilityArg::TransientLocal => "transient-local",
        }
    }
}

/// Value parser of `--history`: `keep-last:N` (N 1..=100000) or `keep-all`.
pub fn history(s: &str) -> Result<History, String> {
    match s.trim() {
        "keep-all" => Ok(History::KeepAll),
        t => {
            let n = t.strip_prefix("keep-last:").ok_or_else(|| format!("{s:?}: give keep-last:N (e.g. keep-last:10) or keep-all"))?;
            match n.parse::<u32>() {
                Ok(n) if (1..=100_000).contains(&n) => Ok(History::KeepLast(n)),
                _ => Err(format!("keep-last:{n}: the depth N is a whole number from 1 to 100000")),
            }
        }
    }
}

fn history_name(h: History) -> String {
    match h {
        History::KeepAll => "keep-all".into(),
        History::KeepLast(n) => format!("keep-last:{n}"),
    }
}

/// What `pub` sends with --type-name.
#[derive(clap::Args, Clone, Debug)]
pub struct PayloadArgs {
    /// The serialized sample in hex (spaces and colons ignored), WITH its
    /// 4-byte encapsulation header as every DDS serializer makes it
    /// (`00 01 00 00` little-endian XCDR1, `00 07 00 00` XCDR2, ...; the
    /// bytes of CycloneDDS's or Fast DDS's serdata, rosbags' serialize_cdr).
    /// Sent as it is (detpath does not look inside), padded to whole 4-byte
    /// words as RTPS carries it, the padding named in the options' last two
    /// bits as CycloneDDS does (a detpath sub takes it off again). At most
    /// 1 MiB. Without --count and --duration, one sample is sent.
    #[arg(long, value_name = "HEX", conflicts_with = "payload_file")]
    pub payload_hex: Option<String>,
    /// The serialized sample read from FILE (the same bytes as --payload-hex).
    #[arg(long, value_name = "FILE")]
    pub payload_file: Option<std::path::PathBuf>,
    /// Keyed topics: the sample's key fields serialized big-endian (XCDR2
    /// rules, no encapsulation header), in hex; the key hash sent with the
    /// sample is made from them as DDSI-RTPS 9.6.3.8 says: zero-padded when
    /// at most 16 bytes, else their MD5.
    #[arg(long, value_name = "HEX", requires = "keyed")]
    pub key_hex: Option<String>,
    /// The key type can hold more than 16 bytes (e.g. a string key): the
    /// key hash is the MD5 of --key-hex even when it is shorter.
    #[arg(long, requires = "key_hex")]
    pub key_md5: bool,
}

/// How `sub` prints a sample's bytes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadFormat {
    /// Lower-case hex (`payload_hex` in JSON).
    Hex,
    /// Base64, standard alphabet with padding (`payload_base64` in JSON).
    Base64,
}

/// The clock the node stamps and judges on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockChoice {
    /// Writers on this host are judged, others not.
    Auto,
    /// CLOCK_REALTIME is synchronised: every writer is judged.
    Synced,
    /// An in-process PTP slave on this endpoint spec steers the node's clock.
    Ptp(String),
}

/// Value parser of `--clock`: `auto`, `synced` or `ptp:SPEC`.
pub fn clock(s: &str) -> Result<ClockChoice, String> {
    match s {
        "auto" => Ok(ClockChoice::Auto),
        "synced" => Ok(ClockChoice::Synced),
        _ => match s.strip_prefix("ptp:") {
            Some(spec) if spec.contains("://") => Ok(ClockChoice::Ptp(spec.to_string())),
            Some(spec) => Err(format!("ptp:{spec}: give the PTP event port's endpoint, e.g. ptp:udp://dpb?port=319")),
            None => Err(format!("{s:?}: give auto, synced or ptp:SPEC (e.g. ptp:udp://dpb?port=319)")),
        },
    }
}

/// A node of the user's type, as the `pubsub` command hands it over.
pub struct UserNode {
    /// The common node options (endpoint, peers, QoS flags, ...).
    pub opts: NodeOptions,
    /// `pub` or `sub`.
    pub publisher: bool,
    /// The topic's name as given.
    pub topic: String,
    /// Type flags.
    pub types: TypeArgs,
    /// `pub`: what to send.
    pub payload: Option<PayloadArgs>,
    /// `pub`: samples per second (0: as fast as flow control allows).
    pub rate_hz: f64,
    /// `sub`: how to print samples.
    pub format: PayloadFormat,
    /// JSON lines.
    pub json: bool,
    /// With `--clock ptp:SPEC`: the slave steering the node's clock, finished at the end.
    pub ptp: Option<Steering>,
    /// `--clock`'s name for the summary.
    pub clock_name: String,
}

/// The DDS topic and type names (ROS 2's with --ros2), or what is wrong with them.
pub fn dds_names(topic: &str, types: &TypeArgs) -> anyhow::Result<(String, String)> {
    let type_name = types.type_name.clone().unwrap_or_default();
    if types.ros2 {
        let t = detpath_pubsub::ros2::topic_name(topic).map_err(|e| anyhow::anyhow!("--topic: {e}"))?;
        let ty = detpath_pubsub::ros2::type_name(&type_name).map_err(|e| anyhow::anyhow!("--type-name: {e}"))?;
        return Ok((t, ty));
    }
    anyhow::ensure!(!topic.is_empty(), "--topic: give the topic's name");
    anyhow::ensure!(!type_name.is_empty(), "--type-name: give the type's name");
    for (flag, v) in [("--topic", topic), ("--type-name", type_name.as_str())] {
        // SEDP carries names as CDR strings; a NUL would end them early, and 256 is CycloneDDS's limit.
        anyhow::ensure!(!v.contains('\0') && v.len() <= 256, "{flag} {v:?}: a name of at most 256 characters without NUL");
    }
    Ok((topic.to_string(), type_name))
}

/// Hex to bytes; spaces, colons and a `0x` prefix are ignored.
pub fn parse_hex(flag: &str, s: &str) -> anyhow::Result<Vec<u8>> {
    let digits: Vec<u8> = s.trim().trim_start_matches("0x").bytes().filter(|c| !c.is_ascii_whitespace() && *c != b':').collect();
    anyhow::ensure!(digits.len().is_multiple_of(2), "{flag}: an odd number of hex digits ({})", digits.len());
    digits
        .chunks(2)
        .enumerate()
        .map(|(i, p)| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|t| u8::from_str_radix(t, 16).ok())
                .ok_or_else(|| anyhow::anyhow!("{flag}: {:?} at byte {i} is not hex", String::from_utf8_lossy(p)))
        })
        .collect()
}

/// The encapsulation identifiers DDS serializers write (XTypes 7.6.3.1.2).
const ENCAPSULATIONS: [(u16, &str); 10] = [
    (0x0000, "CDR_BE"),
    (0x0001, "CDR_LE"),
    (0x0002, "PL_CDR_BE"),
    (0x0003, "PL_CDR_LE"),
    (0x0006, "CDR2_BE"),
    (0x0007, "CDR2_LE"),
    (0x0008, "D_CDR2_BE"),
    (0x0009, "D_CDR2_LE"),
    (0x000a, "PL_CDR2_BE"),
    (0x000b, "PL_CDR2_LE"),
];

/// The payload to send, checked: not empty, at most [`MAX_PAYLOAD`], with
/// a known encapsulation header.
pub fn payload(a: &PayloadArgs) -> anyhow::Result<Vec<u8>> {
    let bytes = match (&a.payload_hex, &a.payload_file) {
        (Some(h), _) => parse_hex("--payload-hex", h)?,
        (None, Some(f)) => std::fs::read(f).map_err(|e| anyhow::anyhow!("--payload-file {}: {e}", f.display()))?,
        (None, None) => anyhow::bail!("--type-name on pub needs the sample: --payload-hex HEX or --payload-file FILE"),
    };
    anyhow::ensure!(bytes.len() <= MAX_PAYLOAD, "the payload is {} bytes, above the largest sample ({MAX_PAYLOAD} bytes, 1 MiB)", bytes.len());
    anyhow::ensure!(bytes.len() >= 4, "the payload is {} bytes: it needs at least its 4-byte encapsulation header (e.g. 00 01 00 00)", bytes.len());
    let id = u16::from_be_bytes([bytes[0], bytes[1]]);
    anyhow::ensure!(
        ENCAPSULATIONS.iter().any(|(e, _)| *e == id),
        "the payload starts with {:02x} {:02x}, which is no encapsulation header: a serialized sample starts with one ({}), e.g. 00 01 00 00 for little-endian XCDR1",
        bytes[0],
        bytes[1],
        ENCAPSULATIONS.iter().map(|(e, n)| format!("{e:04x} {n}")).collect::<Vec<_>>().join(", ")
    );
    Ok(aligned(bytes))
}

/// RTPS carries a serialized payload in whole 4-byte words: a payload of
/// another length is padded with zeros and says so in the last two bits of
/// its encapsulation options (XTypes 7.6.3.1.2), as CycloneDDS writes it,
/// so a reader takes the sample without the padding ([`unpadded`]).
pub fn aligned(mut bytes: Vec<u8>) -> Vec<u8> {
    let pad = (4 - bytes.len() % 4) % 4;
    if pad > 0 && bytes[3] & 3 == 0 {
        bytes.resize(bytes.len() + pad, 0);
        bytes[3] |= pad as u8;
    }
    bytes
}

/// A received payload without the padding its options announce, and with
/// those bits cleared: the sample as its serializer made it (the inverse of
/// [`aligned`]).
pub fn unpadded(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let pad = bytes.get(3).map_or(0, |o| (o & 3) as usize);
    if pad == 0 || bytes.len() < 4 + pad {
        return bytes.into();
    }
    let mut v = bytes[..bytes.len() - pad].to_vec();
    v[3] &= !3;
    v.into()
}

static KEY_HASH: OnceLock<[u8; 16]> = OnceLock::new();

/// The writer's key hash of every sample: the one --key-hex gave (the
/// engine takes a function pointer, so it lives in a cell set once).
fn given_key(_payload: &[u8], _key_only: bool) -> Option<[u8; 16]> {
    KEY_HASH.get().copied()
}

/// Bytes in lower-case hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes in base64 (standard alphabet, padded).
pub fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            s.push(if i <= c.len() { A[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    s
}

fn guid_hex(g: &Guid) -> String {
    format!("{}{}", hex(&g.prefix.0), hex(&g.entity.0))
}

/// One received sample (`--json`: `{"sample": {...}}`).
#[derive(Serialize)]
struct SampleJson {
    writer: String,
    sn: i64,
    source_timestamp_ns: Option<i64>,
    key_hash: Option<String>,
    status_info: u32,
    size: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_hex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_base64: Option<String>,
}

/// A remote endpoint of our topic, as its SEDP announced it.
#[derive(Serialize)]
struct RemoteJson {
    guid: String,
    writer: bool,
    topic: String,
    type_name: String,
}

/// A remote writer on our topic whose samples this node cannot take.
#[derive(Serialize)]
struct UndecodableJson {
    writer: String,
    type_name: String,
    why: String,
}

/// Reports what discovery says about the node's endpoint: a peer on our
/// topic with another type name, or QoS that does not match (once each, on
/// stderr, as the engine reports them once).
fn on_events(p: &mut Participant, topic: &str, undecodable: &mut Vec<UndecodableJson>) {
    use detpath_pubsub::engine::Event;
    while let Some(e) = p.poll_event() {
        match e {
            Event::UndecodableType { writer, type_name, why, .. } => {
                let why = match why {
                    detpath_pubsub::engine::Undecodable::OtherTypeName => "another type name on this topic: not matched".to_string(),
                    detpath_pubsub::engine::Undecodable::Layout(w) => format!("its samples do not decode: {w}"),
                };
                eprintln!("detpath: writer {} on {topic} announces type {type_name}: {why}", guid_hex(&writer));
                undecodable.push(UndecodableJson { writer: guid_hex(&writer), type_name, why });
            }
            Event::IncompatibleQos { remote, reason, .. } => {
                eprintln!("detpath: {} on {topic} not matched: incompatible QoS ({reason:?})", guid_hex(&remote));
            }
            _ => {}
        }
    }
}

/// The summary (`--json`: the last line).
#[derive(Serialize)]
struct UserOutcome {
    role: &'static str,
    endpoint: String,
    topic: String,
    type_name: String,
    ros2: bool,
    keyed: bool,
    reliable: bool,
    durability: &'static str,
    history: String,
    discovery_ms: Option<f64>,
    duration_s: f64,
    written: u64,
    received: u64,
    lost: u64,
    matched: usize,
    unacknowledged: i64,
    remote_endpoints: Vec<RemoteJson>,
    undecodable_writers: Vec<UndecodableJson>,
    transport_priority: i32,
    dscp: u8,
    engine: CountersJson,
    latency_budget: Option<BudgetJson>,
    clock: ClockJson,
}

/// Writes the node's reader or writer figures to the live board (`--metrics`).
fn publish_live(board: &LiveBoard, p: &Participant, topic: &str, endpoint: (Option<WriterId>, Option<ReaderId>), received: u64, priority: i32) {
    let readers = endpoint
        .1
        .map(|r| {
            let st = p.reader_status(r);
            LiveReader {
                topic: topic.to_string(),
                matched: st.matched,
                received,
                lost: st.lost,
                rejected: st.rejected,
                deadline_missed: st.requested_deadline_missed,
                undecodable: st.undecodable,
                budget: p.reader_budget(r).clone(),
            }
        })
        .into_iter()
        .collect();
    let writers = endpoint
        .0
        .map(|w| {
            let (st, mark) = (p.writer_status(w), p.writer_mark(w));
            LiveWriter {
                topic: topic.to_string(),
                priority,
                dscp: mark.dscp,
                class: mark.class,
                matched: st.matched,
                written: st.written,
                unacknowledged: st.unacknowledged,
            }
        })
        .into_iter()
        .collect();
    if let Ok(mut b) = board.lock() {
        b.readers = readers;
        b.writers = writers;
    }
}

/// Opens the endpoint as every pub-sub node does (`app::open_transport`),
/// with the node's clock and the largest sample in the participant's
/// configuration.
fn open(opts: &NodeOptions, clock_synchronised: bool) -> anyhow::Result<Node<EndpointTransport>> {
    let (t, mut cfg) = detpath_pubsub::app::open_transport(opts)?;
    cfg.max_sample_size = MAX_PAYLOAD;
    cfg.clock = node_clocks;
    cfg.clock_synchronised = clock_synchronised;
    let now = t.now_ns();
    Ok(Node::new(Participant::new(cfg, now), t))
}

fn qos(n: &UserNode) -> Qos {
    let o = &n.opts;
    Qos {
        reliability: if o.reliable { Reliability::Reliable } else { Reliability::BestEffort },
        durability: n.types.durability().qos(),
        history: n.types.history(),
        transport_priority: o.transport_priority,
        latency_budget_ns: o.latency_budget_ns,
        ..Qos::default()
    }
}

/// Runs the node; its exit code (1: a reliable sub lost samples).
pub fn run(mut n: UserNode, stop: &dyn Fn() -> bool) -> anyhow::Result<i32> {
    let steering = n.ptp.take();
    let (topic, type_name) = dds_names(&n.topic, &n.types)?;
    let payload = match (&n.payload, n.publisher) {
        (Some(p), true) => Some(payload(p)?),
        _ => None,
    };
    if n.publisher && n.types.keyed {
        let p = n.payload.as_ref().expect("pub has payload flags");
        let key = p.key_hex.as_deref().ok_or_else(|| anyhow::anyhow!("--keyed on pub needs --key-hex (the sample's key fields, big-endian)"))?;
        let key = parse_hex("--key-hex", key)?;
        anyhow::ensure!(!key.is_empty(), "--key-hex: give the key fields' bytes");
        let max = if p.key_md5 { None } else { Some(key.len()) };
        let _ = KEY_HASH.set(detpath_pubsub::types::key_hash_of_be(&key, max));
    }
    let synced = !matches!(n.clock_name.as_str(), "auto");
    let mut node = open(&n.opts, synced)?;
    let q = qos(&n);
    let now = node.transport.now_ns();
    let slot = payload.as_ref().map_or(256, |p| p.len() + 64);
    let keying = (n.types.keyed, n.types.keyed.then_some(given_key as detpath_pubsub::engine::KeyOf).filter(|_| n.publisher));
    let p = &mut node.participant;
    let (writer, reader) = if n.publisher {
        (Some(p.create_writer_keyed(&topic, &type_name, keying, q, slot)?), None)
    } else {
        (None, Some(p.create_reader_keyed(now, &topic, &type_name, keying, q, slot)?))
    };
    let start = node.transport.now_ns();
    let matched = |p: &Participant| writer.map_or(0, |w| p.writer_status(w).matched) + reader.map_or(0, |r| p.reader_status(r).matched);
    let timeout = crate::vocab::ns(n.opts.discovery_timeout);
    // A volatile writer writes once a reader matched (what it writes before
    // reaches nobody); a transient-local one writes at once and keeps it.
    let tl_pub = n.publisher && n.types.durability() == DurabilityArg::TransientLocal;
    let mut discovery_ms = None;
    let mut undecodable = Vec::new();
    while !tl_pub && discovery_ms.is_none() {
        let now = node.transport.now_ns();
        if matched(&node.participant) > 0 {
            discovery_ms = Some((now - start) as f64 / 1e6);
        } else if stop() || now - start > timeout {
            anyhow::bail!(
                "no peer matched topic {topic:?} (type {type_name:?}) within {:?}: check --peer, the domain, the names and the QoS",
                n.opts.discovery_timeout
            );
        } else {
            on_events(&mut node.participant, &topic, &mut undecodable);
            node.turn(1_000_000, |_, _, _| {});
        }
    }
    let t0 = node.transport.now_ns();
    let limit = n.opts.duration.map(crate::vocab::ns);
    // Without --count and --duration a pub sends one sample.
    let count = match (n.opts.count, limit, n.publisher) {
        (0, None, true) => 1,
        (c, _, _) => c,
    };
    let period = if n.rate_hz > 0.0 { (1e9 / n.rate_hz) as u64 } else { 0 };
    let (mut written, mut received, mut next_write) = (0u64, 0u64, t0);
    let mut drain_until: Option<u64> = None;
    let mut next_live = 0u64;
    let live = |p: &Participant, received: u64| {
        if let Some(board) = &n.opts.live {
            publish_live(board, p, &topic, (writer, reader), received, n.opts.transport_priority);
        }
    };
    loop {
        let now = node.transport.now_ns();
        if stop() || limit.is_some_and(|l| now - t0 >= l) {
            break;
        }
        if let (Some(w), Some(bytes)) = (writer, &payload) {
            while (count == 0 || written < count) && now >= next_write {
                let ts = Time::from_nanos(node_clocks().wall_ns);
                let mut out = TransportOutbox(&mut node.transport);
                match node.participant.write_with(now, &mut out, w, Some(ts), &|bw| bw.bytes(bytes)) {
                    Ok(_) => {
                        written += 1;
                        next_write = if period == 0 { now } else { next_write + period };
                    }
                    Err(WriteError::HistoryFull) => break,
                    Err(e) => anyhow::bail!("writing a sample: {e}"),
                }
                if period > 0 {
                    break;
                }
            }
            if count > 0 && written >= count && limit.is_none() {
                // Done writing: wait for the readers' acknowledgements (a
                // transient-local writer first for a reader), at most 10 s.
                let st = node.participant.writer_status(w);
                if st.matched > 0 && discovery_ms.is_none() {
                    discovery_ms = Some((now - start) as f64 / 1e6);
                }
                let grace = if tl_pub && st.matched == 0 { timeout } else { 10_000_000_000 };
                let d = *drain_until.get_or_insert(now + grace);
                let acknowledged = st.matched > 0 && (st.unacknowledged == 0 || !n.opts.reliable);
                if acknowledged || now >= d {
                    break;
                }
            }
        }
        if let Some(r) = reader {
            while let Some(s) = node.participant.take_raw(r, |info, bytes| sample_json(info, bytes, n.format)) {
                received += 1;
                print_sample(&s, n.json);
                if count > 0 && received >= count {
                    break;
                }
            }
            if count > 0 && received >= count {
                break;
            }
        }
        let wait = if period > 0 && writer.is_some() { next_write.saturating_sub(node.transport.now_ns()).min(10_000_000) } else { 10_000_000 };
        on_events(&mut node.participant, &topic, &mut undecodable);
        if now >= next_live {
            // A few times a second, with every delivered sample taken: a
            // scrape sees figures at most 250 ms old.
            next_live = now + 250_000_000;
            live(&node.participant, received);
        }
        node.turn(wait, |_, _, _| {});
    }
    let duration_s = (node.transport.now_ns() - t0) as f64 / 1e9;
    live(&node.participant, received);
    let p = &node.participant;
    let (lost, budget, unacked, mark) = match (writer, reader) {
        (Some(w), _) => (0, None, p.writer_status(w).unacknowledged, p.writer_mark(w)),
        (_, Some(r)) => (p.reader_status(r).lost, Some(BudgetJson::from(p.reader_budget(r))), 0, Default::default()),
        _ => unreachable!("a node has a writer or a reader"),
    };
    let remote_endpoints = p
        .remote_endpoints()
        .filter(|e| e.topic_name == topic)
        .map(|e| RemoteJson { guid: guid_hex(&e.guid), writer: e.is_writer(), topic: e.topic_name.clone(), type_name: e.type_name.clone() })
        .collect();
    let tl_missed = tl_pub && matched(p) == 0 && limit.is_none();
    let out = UserOutcome {
        role: if n.publisher { "pub" } else { "sub" },
        endpoint: n.opts.endpoint.clone(),
        topic,
        type_name,
        ros2: n.types.ros2,
        keyed: n.types.keyed,
        reliable: n.opts.reliable,
        durability: n.types.durability().name(),
        history: history_name(n.types.history()),
        discovery_ms,
        duration_s,
        written,
        received,
        lost,
        matched: matched(p),
        unacknowledged: unacked,
        remote_endpoints,
        undecodable_writers: undecodable,
        transport_priority: n.opts.transport_priority,
        dscp: mark.dscp,
        engine: p.counters().into(),
        latency_budget: budget,
        clock: ClockJson { mode: n.clock_name.clone(), injected_offset_ns: crate::pubsub::ptp::injected_offset(), ptp: steering.map(Steering::finish) },
    };
    node.participant.shutdown(&mut TransportOutbox(&mut node.transport));
    print_outcome(&out, n.json);
    if tl_missed {
        anyhow::bail!("no reader matched within {:?} to take the transient-local history (give --duration to keep it longer)", n.opts.discovery_timeout);
    }
    Ok(if n.opts.reliable && out.lost > 0 { 1 } else { 0 })
}

fn sample_json(info: &detpath_pubsub::engine::SampleInfo, bytes: &[u8], format: PayloadFormat) -> SampleJson {
    let bytes = &unpadded(bytes)[..];
    SampleJson {
        writer: guid_hex(&info.writer),
        sn: info.sn.0,
        source_timestamp_ns: info.source_timestamp.map(|t| t.to_nanos()),
        key_hash: info.key_hash.map(|k| hex(&k)),
        status_info: info.status_info,
        size: bytes.len(),
        payload_hex: (format == PayloadFormat::Hex && info.valid_data).then(|| hex(bytes)),
        payload_base64: (format == PayloadFormat::Base64 && info.valid_data).then(|| base64(bytes)),
    }
}

fn print_sample(s: &SampleJson, json: bool) {
    if json {
        println!("{}", serde_json::json!({ "sample": s }));
    } else {
        let body = s.payload_hex.as_deref().or(s.payload_base64.as_deref()).unwrap_or("(no data: disposed or unregistered)");
        println!("sample {} from {} ({} bytes): {body}", s.sn, s.writer, s.size);
    }
}

fn print_outcome(o: &UserOutcome, json: bool) {
    if json {
        println!("{}", serde_json::to_string(o).unwrap_or_default());
        return;
    }
    println!(
        "{} of topic {} (type {}) over {} ({}, {}, {}): discovery {} ms, {:.1} s",
        o.role,
        o.topic,
        o.type_name,
        o.endpoint,
        if o.reliable { "reliable" } else { "best effort" },
        o.durability,
        o.history,
        o.discovery_ms.map_or("n/a".into(), |d| format!("{d:.1}")),
        o.duration_s
    );
    if o.role == "pub" {
        println!("written {} samples to {} reader(s), {} unacknowledged", o.written, o.matched, o.unacknowledged);
    } else {
        println!("received {} samples from {} writer(s), lost {}", o.received, o.matched, o.lost);
    }
    if let Some(b) = &o.latency_budget {
        println!("{}", crate::pubsub::budget_line(b));
    }
    if let Some(p) = &o.clock.ptp {
        println!("{}", crate::pubsub::ptp_line(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_base64() {
        assert_eq!(parse_hex("x", "00 01:0a ff").unwrap(), vec![0, 1, 10, 255]);
        assert!(parse_hex("x", "0g").unwrap_err().to_string().contains("not hex"));
        assert!(parse_hex("x", "abc").unwrap_err().to_string().contains("odd"));
        assert_eq!(base64(b"hello"), "aGVsbG8=");
        assert_eq!(base64(b"hell"), "aGVsbA==");
        assert_eq!(base64(b"hel"), "aGVs");
        assert_eq!(hex(&[0xab, 1]), "ab01");
    }

    #[test]
    fn history_and_clock_values() {
        assert_eq!(history("keep-last:10").unwrap(), History::KeepLast(10));
        assert_eq!(history("keep-all").unwrap(), History::KeepAll);
        assert!(history("keep-last:0").is_err());
        assert!(history("last").unwrap_err().contains("keep-last:N"));
        assert_eq!(clock("ptp:udp://dpb?port=319").unwrap(), ClockChoice::Ptp("udp://dpb?port=319".into()));
        assert!(clock("ptp:dpb").unwrap_err().contains("event port"));
        assert!(clock("gps").is_err());
    }

    #[test]
    fn payloads_need_an_encapsulation_header() {
        let p = |h: &str| PayloadArgs { payload_hex: Some(h.into()), payload_file: None, key_hex: None, key_md5: false };
        assert_eq!(payload(&p("00010000 05000000")).unwrap().len(), 8);
        assert!(payload(&p("0001")).unwrap_err().to_string().contains("4-byte encapsulation header"));
        assert!(payload(&p("12340000")).unwrap_err().to_string().contains("no encapsulation header"));
        // Padded to whole words, announced in the options, and taken off again.
        let sent = payload(&p("000100000600000068656c6c6f00")).unwrap();
        assert_eq!(hex(&sent), "000100020600000068656c6c6f000000");
        assert_eq!(hex(&unpadded(&sent)), "000100000600000068656c6c6f00");
        assert_eq!(hex(&unpadded(&[0, 1, 0, 3])), "00010003", "padding longer than the data is left alone");
    }
}
