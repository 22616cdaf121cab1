//! ddsperf's conventions as a sans-IO application on the engine, so a
//! detpath participant and CycloneDDS's `ddsperf` can be each other's partner:
//!
//! - topics `DDSPerf{R,U}{Ping,Pong,Data}{KS,OU}` (R reliable, U best effort)
//!   of types `KeyedSeq` / `OneULong`;
//! - participant user data `DDSPerf:<has data reader>:<pid>:<hostname>`,
//!   which is how ddsperf recognises a peer worth a pong writer;
//! - pongs per peer: each participant reads pongs in a partition named after
//!   its own participant GUID, so a pinger gets only answers to its pings;
//!   a pong writer is created per discovered ddsperf-like participant, in
//!   that participant's partition, and deleted when the participant is lost;
//! - the lowest bit of the source timestamp says "this is a ping, answer it";
//!   a pong carries the ping's timestamp back unchanged;
//! - ping/pong endpoints KEEP_LAST 1; data endpoints KEEP_ALL.
//!
//! Latency is the round trip over two, measured with the monotonic reception
//! time of the pong against the monotonic time the ping was written.

use crate::engine::{Event, Outbox, Participant, ReaderId, WriteError, WriterId};
use crate::qos::{Qos, Reliability};
use crate::types::{KeyedSeq, OneULong, TopicType, Unkeyed32};
use crate::wire::{GuidPrefix, Time};

/// ddsperf's user-data magic.
pub const UDATA_MAGIC: &str = "DDSPerf:";

/// What a node does besides answering pings (every node answers pings).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Role {
    /// Pings at `rate_hz` (0: as fast as the pongs come back, one outstanding).
    Ping {
        /// Pings per second; 0: the next ping when the pong is back (or after 1 s).
        rate_hz: f64,
    },
    /// Only answers pings.
    Pong,
    /// Publishes data at `rate_hz` (0: as fast as flow control allows).
    Pub {
        /// Samples per second; 0: bursts of up to 64, batched into full datagrams.
        rate_hz: f64,
    },
    /// Subscribes to data.
    Sub,
}

/// Which ddsperf topic type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopicKind {
    /// KeyedSeq ("KS", ddsperf's default): size = 12 + baggage.
    Ks,
    /// OneULong ("OU"): 4 bytes.
    Ou,
    /// Unkeyed32 ("UK32"): paper 001's Table I sample, 32 bytes unkeyed;
    /// each ping's first 8 payload octets random (its "partial
    /// randomization"). Not a ddsperf type: detpath against detpath.
    Uk32,
}

impl TopicKind {
    fn suffix(self) -> &'static str {
        match self {
            TopicKind::Ks => "KS",
            TopicKind::Ou => "OU",
            TopicKind::Uk32 => "UK32",
        }
    }
    fn type_name(self) -> &'static str {
        match self {
            TopicKind::Ks => KeyedSeq::TYPE_NAME,
            TopicKind::Ou => OneULong::TYPE_NAME,
            TopicKind::Uk32 => Unkeyed32::TYPE_NAME,
        }
    }
}

/// How a node is set up.
#[derive(Clone, Debug)]
pub struct PerfConfig {
    /// What the node does.
    pub role: Role,
    /// Reliable endpoints on the `DDSPerfR*` topics; false: best effort on `DDSPerfU*`.
    pub reliable: bool,
    /// The topic type (and the topic names' suffix).
    pub topic: TopicKind,
    /// ddsperf "size" (KS only; at least 12).
    pub size: usize,
    /// KEEP_ALL depth of the data writer and reader (ddsperf uses 10000).
    pub data_depth: u32,
    /// Stop after this many pings (0: no limit).
    pub count: u64,
    /// Latency samples kept for the final summary.
    pub max_latency_samples: usize,
    /// Ping: never more than one ping outstanding (the next waits for the
    /// pong, or 1 s). ddsperf's ping and pong endpoints are KEEP_LAST 1, so a
    /// second ping arriving before the first is taken replaces it; lockstep
    /// rules that out where every ping must be answered (tests). Off, pings
    /// go out on schedule as ddsperf's do.
    pub lockstep: bool,
    /// Ping: keep each answered ping's (seq, send time, pong reception
    /// time) in [`PerfStats::rounds`] (up to `max_latency_samples`), for
    /// per-sample records. Off, nothing is kept (nor allocated).
    pub keep_rounds: bool,
    /// Ping and pong endpoints reliable KEEP_ALL (depth `data_depth`), as
    /// paper 001's Table I asks, instead of ddsperf's KEEP_LAST 1.
    pub ping_keep_all: bool,
    /// TRANSPORT_PRIORITY of every writer and reader (0: ddsperf's, best effort).
    pub transport_priority: i32,
    /// LATENCY_BUDGET of every writer and reader, ns (0: ddsperf's, none).
    pub latency_budget_ns: i64,
}

impl PerfConfig {
    /// ddsperf's defaults for `role`: reliable, KeyedSeq of size 32, data depth 1000.
    pub fn new(role: Role) -> PerfConfig {
        PerfConfig {
            role,
            reliable: true,
            topic: TopicKind::Ks,
            size: 32,
            data_depth: 1000,
            count: 0,
            max_latency_samples: 2_000_000,
            lockstep: false,
            keep_rounds: false,
            ping_keep_all: false,
            transport_priority: 0,
            latency_budget_ns: 0,
        }
    }
    /// The topic names (data, ping, pong).
    pub fn topic_names(&self) -> (String, String, String) {
        let r = if self.reliable { 'R' } else { 'U' };
        let s = self.topic.suffix();
        (format!("DDSPerf{r}Data{s}"), format!("DDSPerf{r}Ping{s}"), format!("DDSPerf{r}Pong{s}"))
    }
}

/// ddsperf's participant user data.
pub fn user_data(has_reader: bool, pid: u32, hostname: &str) -> Vec<u8> {
    format!("{UDATA_MAGIC}{}:{pid}:{hostname}", has_reader as u8).into_bytes()
}

/// The partition name ddsperf derives from a participant GUID.
pub fn guid_partition(prefix: GuidPrefix) -> String {
    let b = prefix.0;
    format!(
        "{:02x}{:02x}{:02x}{:02x}_{:02x}{:02x}{:02x}{:02x}_{:02x}{:02x}{:02x}{:02x}_000001c1",
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]
    )
}

/// Per-second and overall figures of a node.
#[derive(Clone, Debug, Default)]
pub struct PerfStats {
    /// Pings written.
    pub pings_sent: u64,
    /// Pongs to our own pings received (each one gives a latency).
    pub pongs_received: u64,
    /// Pongs whose ping this node did not send (or no longer remembers).
    pub pongs_unknown: u64,
    /// Peers' pings answered with a pong.
    pub pings_answered: u64,
    /// Pings not answered because no pong writer exists for their sender
    /// (its participant is not known as a ddsperf peer yet).
    pub pong_writer_missing: u64,
    /// Data samples written.
    pub data_sent: u64,
    /// Times publishing paused because the KEEP_ALL data writer's history was
    /// full of unacknowledged samples ([`WriteError::HistoryFull`]).
    pub data_blocked: u64,
    /// Data samples taken.
    pub data_received: u64,
    /// Their ddsperf sizes summed, bytes (12 + baggage for KS, 4 for OU, 32
    /// for UK32; not the serialized bytes).
    pub data_bytes: u64,
    /// Holes in the sequence numbers of received data (per writer).
    pub data_lost: u64,
    /// One-way latency (RTT/2) in ns, in arrival order.
    pub latency_ns: Vec<u32>,
    /// Latencies not kept because `latency_ns` was full
    /// ([`PerfConfig::max_latency_samples`]); their pongs still count.
    pub latency_dropped: u64,
    /// Answered pings as (seq, monotonic send ns, monotonic pong reception
    /// ns), in arrival order, when [`PerfConfig::keep_rounds`] is on.
    pub rounds: Vec<(u32, u64, u64)>,
}

/// Sample of the chosen type, so one node can serve KS and OU.
enum Sample {
    Ks(KeyedSeq),
    Ou(OneULong),
    Uk32(Unkeyed32),
}

impl Sample {
    fn seq(&self) -> u32 {
        match self {
            Sample::Ks(s) => s.seq,
            Sample::Ou(s) => s.seq,
            Sample::Uk32(s) => s.seq,
        }
    }
    fn set_seq(&mut self, q: u32) {
        match self {
            Sample::Ks(s) => s.seq = q,
            Sample::Ou(s) => s.seq = q,
            Sample::Uk32(s) => s.seq = q,
        }
    }
    fn len(&self) -> usize {
        match self {
            Sample::Ks(s) => 12 + s.baggage.len(),
            Sample::Ou(_) => 4,
            Sample::Uk32(_) => 32,
        }
    }
}

const SENT_RING: usize = 4096;

/// A ddsperf-compatible node on one participant.
pub struct PerfNode {
    /// How it was set up; a runner may change `count` between phases.
    pub cfg: PerfConfig,
    ping_w: WriterId,
    ping_r: ReaderId,
    pong_r: ReaderId,
    data_w: WriterId,
    data_r: Option<ReaderId>,
    /// Pong writers, one per discovered ddsperf-like participant.
    pong_writers: Vec<(GuidPrefix, WriterId)>,
    ping_qos: Qos,
    tx: Sample,
    rx: Sample,
    seq: u32,
    /// Monotonic ns each outstanding ping was written, by seq % SENT_RING.
    sent: Box<[(u32, u64)]>,
    next_ping_ns: u64,
    last_ping_ns: u64,
    next_pub_ns: u64,
    outstanding: bool,
    /// Next expected data seq per writer (prefix, entity) for loss counting.
    data_expect: Vec<(crate::wire::Guid, u32)>,
    /// The figures since creation or the last [`PerfNode::reset_stats`].
    pub stats: PerfStats,
    /// Index into `stats.latency_ns` where the current one-second window starts.
    pub window_start: usize,
    types: (&'static str, bool),
}

impl PerfNode {
    /// Creates the ddsperf endpoints on `p`. `now` is monotonic ns.
    pub fn new(p: &mut Participant, now: u64, cfg: PerfConfig) -> Result<PerfNode, crate::engine::EngineError> {
        let (data_t, ping_t, pong_t) = cfg.topic_names();
        let rel = if cfg.reliable { Reliability::Reliable } else { Reliability::BestEffort };
        let (prio, budget) = (cfg.transport_priority, cfg.latency_budget_ns);
        let mk = |q: Qos| Qos { reliability: rel, max_blocking_ns: 10_000_000_000, transport_priority: prio, latency_budget_ns: budget, ..q };
        let ping_qos = if cfg.ping_keep_all { mk(Qos::reliable_keep_all(cfg.data_depth)) } else { mk(Qos::reliable_keep_last(1)) };
        // ddsperf's `-n N` spreads data over N key values (1 by default): room for many instances.
        let data_qos = mk(Qos::reliable_keep_all(cfg.data_depth).with_max_instances(1024));
        let size = cfg.size.max(12);
        let proto = || match cfg.topic {
            TopicKind::Ks => Sample::Ks(KeyedSeq::with_size(size)),
            TopicKind::Ou => Sample::Ou(OneULong::default()),
            TopicKind::Uk32 => Sample::Uk32(Unkeyed32::default()),
        };
        let (tn, keyed) = (cfg.topic.type_name(), cfg.topic == TopicKind::Ks);
        let slot = size + 32;
        let ping_w = p.create_writer(&ping_t, tn, keyed, ping_qos.clone(), slot)?;
        let ping_r = p.create_reader(now, &ping_t, tn, keyed, ping_qos.clone(), slot)?;
        let pong_r = p.create_reader(now, &pong_t, tn, keyed, data_qos.clone().with_partition(&guid_partition(p.guid_prefix())), slot)?;
        let data_w = p.create_writer(&data_t, tn, keyed, data_qos.clone(), slot)?;
        let data_r = if cfg.role == Role::Sub { Some(p.create_reader(now, &data_t, tn, keyed, data_qos, slot)?) } else { None };
        let cap = cfg.max_latency_samples;
        Ok(PerfNode {
            ping_w,
            ping_r,
            pong_r,
            data_w,
            data_r,
            pong_writers: Vec::new(),
            ping_qos,
            tx: proto(),
            rx: proto(),
            seq: 0,
            sent: vec![(0, 0); SENT_RING].into_boxed_slice(),
            next_ping_ns: now,
            last_ping_ns: 0,
            next_pub_ns: now,
            outstanding: false,
            data_expect: Vec::new(),
            stats: PerfStats {
                latency_ns: Vec::with_capacity(cap),
                rounds: if cfg.keep_rounds && matches!(cfg.role, Role::Ping { .. }) { Vec::with_capacity(cap) } else { Vec::new() },
                ..Default::default()
            },
            window_start: 0,
            types: (tn, keyed),
            cfg,
        })
    }

    /// The user data a participant running this node should announce.
    pub fn user_data_for(role: Role, pid: u32, hostname: &str) -> Vec<u8> {
        user_data(role == Role::Sub, pid, hostname)
    }

    /// Number of peers a pong writer exists for.
    pub fn peers(&self) -> usize {
        self.pong_writers.len()
    }

    /// Whether our ping writer has a matched pong-answering reader and our pong reader a writer.
    pub fn ready(&self, p: &Participant) -> bool {
        p.writer_status(self.ping_w).matched > 0 && p.reader_status(self.pong_r).matched > 0
    }

    /// Everything the data writer wrote is acknowledged by its reliable readers.
    pub fn all_acknowledged(&self, p: &Participant) -> bool {
        p.writer_status(self.data_w).unacknowledged == 0
    }

    /// Status of the data writer and (sub) reader, for reports.
    pub fn data_status(&self, p: &Participant) -> (crate::engine::WriterStatus, Option<crate::engine::ReaderStatus>) {
        (p.writer_status(self.data_w), self.data_r.map(|r| p.reader_status(r)))
    }

    /// Our data writer has a matched reader.
    pub fn data_writer_matched(&self, p: &Participant) -> bool {
        p.writer_status(self.data_w).matched > 0
    }

    /// The data writer.
    pub fn data_writer(&self) -> WriterId {
        self.data_w
    }

    /// The data reader (sub only).
    pub fn data_reader(&self) -> Option<ReaderId> {
        self.data_r
    }

    /// Our data reader has a matched writer.
    pub fn data_reader_matched(&self, p: &Participant) -> bool {
        self.data_r.is_some_and(|r| p.reader_status(r).matched > 0)
    }

    /// Handles discovery events: a pong writer for each ddsperf-like participant.
    pub fn on_events(&mut self, p: &mut Participant) {
        while let Some(e) = p.poll_event() {
            match e {
                Event::ParticipantDiscovered { prefix, user_data }
                    if user_data.starts_with(UDATA_MAGIC.as_bytes()) && self.pong_writers.iter().all(|(x, _)| *x != prefix) =>
                {
                    let (_, _, pong_t) = self.cfg.topic_names();
                    let q = self.ping_qos.clone().with_partition(&guid_partition(prefix));
                    if let Ok(w) = p.create_writer(&pong_t, self.types.0, self.types.1, q, self.cfg.size + 32) {
                        self.pong_writers.push((prefix, w));
                    }
                }
                Event::ParticipantLost { prefix, .. } => {
                    // Its pong writer goes with it: kept, writers for peers
                    // that come and go (forged SPDP with short leases, say)
                    // would fill the participant's writer table, and a real
                    // pinger after them would get no pong writer.
                    if let Some(k) = self.pong_writers.iter().position(|(x, _)| *x == prefix) {
                        let (_, w) = self.pong_writers.swap_remove(k);
                        p.delete_writer(w);
                    }
                }
                _ => {}
            }
        }
    }

    /// When [`poll`](Self::poll) next has something timed to do.
    pub fn next_due(&self) -> u64 {
        match self.cfg.role {
            Role::Ping { rate_hz } if rate_hz > 0.0 => self.next_ping_ns,
            Role::Ping { .. } if !self.outstanding => 0,
            Role::Ping { .. } => self.next_ping_ns,
            Role::Pub { rate_hz } if rate_hz > 0.0 => self.next_pub_ns,
            Role::Pub { .. } => 0,
            _ => u64::MAX,
        }
    }

    /// Everything due at `now` (monotonic) / `wall` (realtime ns): take and
    /// answer pings, take pongs and data, send pings or data when due.
    pub fn poll(&mut self, p: &mut Participant, out: &mut dyn Outbox, now: u64, wall: i64) {
        self.answer_pings(p, out, now);
        self.take_pongs(p, now);
        self.take_data(p);
        match self.cfg.role {
            Role::Ping { rate_hz } => self.maybe_ping(p, out, now, wall, rate_hz),
            Role::Pub { rate_hz } => self.maybe_publish(p, out, now, wall, rate_hz),
            _ => {}
        }
    }

    /// Forgets the figures so far (after a warm-up), keeping the buffers and
    /// the sequence numbers: a pong of a warm-up ping arriving later counts as unknown.
    pub fn reset_stats(&mut self) {
        let mut lat = std::mem::take(&mut self.stats.latency_ns);
        lat.clear();
        let mut rounds = std::mem::take(&mut self.stats.rounds);
        rounds.clear();
        self.stats = PerfStats { latency_ns: lat, rounds, ..Default::default() };
        self.window_start = 0;
        for s in self.sent.iter_mut() {
            *s = (0, 0);
        }
        self.outstanding = false;
        self.data_expect.clear();
    }

    /// True when a ping count was given and reached.
    pub fn ping_done(&self) -> bool {
        self.cfg.count > 0 && self.stats.pings_sent >= self.cfg.count
    }

    /// True when a count was given and this node's part of it is done:
    /// pings sent and answered, samples published, samples received.
    pub fn count_done(&self) -> bool {
        let n = self.cfg.count;
        n > 0
            && match self.cfg.role {
                Role::Ping { .. } => self.stats.pings_sent >= n && self.stats.pongs_received >= n,
                Role::Pub { .. } => self.stats.data_sent >= n,
                Role::Sub => self.stats.data_received >= n,
                Role::Pong => false,
            }
    }

    fn maybe_ping(&mut self, p: &mut Participant, out: &mut dyn Outbox, now: u64, wall: i64, rate_hz: f64) {
        if self.ping_done() {
            return;
        }
        if self.cfg.lockstep && self.outstanding && now < self.last_ping_ns + 1_000_000_000 {
            return;
        }
        if rate_hz > 0.0 {
            if now < self.next_ping_ns {
                return;
            }
            self.next_ping_ns = next_slot(self.next_ping_ns, now, (1e9 / rate_hz) as u64);
        } else if self.outstanding && now < self.next_ping_ns {
            return;
        }
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        self.tx.set_seq(seq);
        if let Sample::Uk32(s) = &mut self.tx {
            // xorshift64 of the send time and seq: 8 octets nobody can predict or compress.
            let mut x = now ^ ((seq as u64) << 32) | 1;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.baggage[..8].copy_from_slice(&x.to_le_bytes());
        }
        let ts = Time::from_nanos((wall & !1) | 1);
        let res = match &self.tx {
            Sample::Ks(s) => p.write(now, out, self.ping_w, Some(ts), s),
            Sample::Ou(s) => p.write(now, out, self.ping_w, Some(ts), s),
            Sample::Uk32(s) => p.write(now, out, self.ping_w, Some(ts), s),
        };
        if res.is_ok() {
            self.sent[seq as usize % SENT_RING] = (seq, now);
            self.last_ping_ns = now;
            self.stats.pings_sent += 1;
            self.outstanding = true;
            if rate_hz <= 0.0 {
                // As fast as possible: the next ping goes when the pong is back, or after 1 s.
                self.next_ping_ns = now + 1_000_000_000;
            }
        }
    }

    fn maybe_publish(&mut self, p: &mut Participant, out: &mut dyn Outbox, now: u64, wall: i64, rate_hz: f64) {
        let budget = if rate_hz > 0.0 {
            if now < self.next_pub_ns {
                return;
            }
            self.next_pub_ns = next_slot(self.next_pub_ns, now, (1e9 / rate_hz) as u64);
            1
        } else {
            64
        };
        // As fast as possible: bursts batched into full datagrams (as ddsperf
        // asks CycloneDDS to), flushed at the end of the burst.
        let batch = rate_hz <= 0.0;
        for _ in 0..budget {
            if self.cfg.count > 0 && self.stats.data_sent >= self.cfg.count {
                break;
            }
            self.seq = self.seq.wrapping_add(1);
            self.tx.set_seq(self.seq);
            let ts = Some(Time::from_nanos(wall & !1));
            let res = match (&self.tx, batch) {
                (Sample::Ks(s), true) => p.write_batched(now, out, self.data_w, ts, s),
                (Sample::Ou(s), true) => p.write_batched(now, out, self.data_w, ts, s),
                (Sample::Uk32(s), true) => p.write_batched(now, out, self.data_w, ts, s),
                (Sample::Ks(s), false) => p.write(now, out, self.data_w, ts, s),
                (Sample::Ou(s), false) => p.write(now, out, self.data_w, ts, s),
                (Sample::Uk32(s), false) => p.write(now, out, self.data_w, ts, s),
            };
            match res {
                Ok(_) => self.stats.data_sent += 1,
                Err(WriteError::HistoryFull) => {
                    self.seq = self.seq.wrapping_sub(1);
                    self.stats.data_blocked += 1;
                    break;
                }
                Err(_) => break,
            }
        }
        if batch {
            p.flush(out, self.data_w);
        }
    }

    fn take_one(&mut self, p: &mut Participant, r: ReaderId) -> Option<crate::engine::SampleInfo> {
        let res = match &mut self.rx {
            Sample::Ks(s) => p.take(r, s),
            Sample::Ou(s) => p.take(r, s),
            Sample::Uk32(s) => p.take(r, s),
        };
        res.ok().flatten()
    }

    fn answer_pings(&mut self, p: &mut Participant, out: &mut dyn Outbox, now: u64) {
        while let Some(info) = self.take_one(p, self.ping_r) {
            if !info.valid_data {
                continue;
            }
            let Some(&(_, w)) = self.pong_writers.iter().find(|(x, _)| *x == info.writer.prefix) else {
                self.stats.pong_writer_missing += 1;
                continue;
            };
            let ts = info.source_timestamp.map(|t| Time::from_nanos(t.to_nanos() | 1));
            let res = match &self.rx {
                Sample::Ks(s) => p.write(now, out, w, ts, s),
                Sample::Ou(s) => p.write(now, out, w, ts, s),
                Sample::Uk32(s) => p.write(now, out, w, ts, s),
            };
            if res.is_ok() {
                self.stats.pings_answered += 1;
            }
        }
    }

    fn take_pongs(&mut self, p: &mut Participant, _now: u64) {
        while let Some(info) = self.take_one(p, self.pong_r) {
            if !info.valid_data {
                continue;
            }
            let is_ping_answer = info.source_timestamp.is_some_and(|t| t.to_nanos() & 1 == 1);
            let seq = self.rx.seq();
            let (s, at) = self.sent[seq as usize % SENT_RING];
            if !is_ping_answer || s != seq || at == 0 {
                self.stats.pongs_unknown += 1;
                continue;
            }
            self.sent[seq as usize % SENT_RING] = (0, 0);
            self.stats.pongs_received += 1;
            let one_way = info.reception_ns.saturating_sub(at) / 2;
            if self.stats.latency_ns.len() < self.stats.latency_ns.capacity() {
                self.stats.latency_ns.push(one_way.min(u32::MAX as u64) as u32);
            } else {
                self.stats.latency_dropped += 1;
            }
            if self.stats.rounds.len() < self.stats.rounds.capacity() {
                self.stats.rounds.push((seq, at, info.reception_ns));
            }
            if seq == self.seq {
                self.outstanding = false;
                if matches!(self.cfg.role, Role::Ping { rate_hz } if rate_hz <= 0.0) {
                    self.next_ping_ns = 0;
                }
            }
        }
    }

    fn take_data(&mut self, p: &mut Participant) {
        let Some(r) = self.data_r else { return };
        while let Some(info) = self.take_one(p, r) {
            if !info.valid_data {
                continue;
            }
            self.stats.data_received += 1;
            self.stats.data_bytes += self.rx.len() as u64;
            let seq = self.rx.seq();
            match self.data_expect.iter_mut().find(|(g, _)| *g == info.writer) {
                Some((_, e)) => {
                    if seq > *e {
                        self.stats.data_lost += (seq - *e) as u64;
                    }
                    *e = seq.wrapping_add(1);
                }
                None => self.data_expect.push((info.writer, seq.wrapping_add(1))),
            }
        }
    }
}

/// The next send time of a fixed-rate schedule: one interval on, so a late
/// send (a wait that overslept) is made up at once and the rate holds; only
/// when more than 100 intervals behind does the schedule restart from now.
fn next_slot(due: u64, now: u64, intv: u64) -> u64 {
    let mut cur = due;
    if cur + 100 * intv < now {
        cur = now;
    }
    cur + intv
}

/// Summary statistics of latencies.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LatencySummary {
    /// Latencies summarised.
    pub count: usize,
    /// Mean, µs.
    pub mean_us: f64,
    /// Minimum, µs.
    pub min_us: f64,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// `None` when the count cannot support the percentile (fewer than 1/(1-p) samples).
    pub p999_us: Option<f64>,
    /// 99.99th percentile, µs (as `p999_us`, `None` below 10,000 samples).
    pub p9999_us: Option<f64>,
    /// 99.9999th percentile, µs (as `p999_us`, `None` below 1,000,000 samples).
    pub p999999_us: Option<f64>,
    /// Maximum, µs.
    pub max_us: f64,
}

/// Exact percentiles of `values` (ns); sorts a copy.
pub fn summarize(values: &[u32]) -> LatencySummary {
    if values.is_empty() {
        return LatencySummary::default();
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let n = v.len();
    let us = |x: u32| x as f64 / 1000.0;
    let pct = |p: f64| -> f64 {
        let i = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        us(v[i])
    };
    let supported = |p: f64| (n as f64) * (1.0 - p) >= 1.0 - 1e-9;
    LatencySummary {
        count: n,
        mean_us: v.iter().map(|&x| x as f64).sum::<f64>() / n as f64 / 1000.0,
        min_us: us(v[0]),
        p50_us: pct(0.5),
        p99_us: pct(0.99),
        p999_us: supported(0.999).then(|| pct(0.999)),
        p9999_us: supported(0.9999).then(|| pct(0.9999)),
        p999999_us: supported(0.999999).then(|| pct(0.999999)),
        max_us: us(v[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_name_is_ddsperfs() {
        let p = GuidPrefix([0x01, 0x10, 0x28, 0x9e, 0x05, 0xd4, 0x45, 0xa1, 0x07, 0xc4, 0xa8, 0x65]);
        assert_eq!(guid_partition(p), "0110289e_05d445a1_07c4a865_000001c1");
    }

    #[test]
    fn user_data_format() {
        assert_eq!(user_data(false, 11197, "vm"), b"DDSPerf:0:11197:vm");
    }

    #[test]
    fn percentiles_know_what_the_count_supports() {
        let v: Vec<u32> = (1..=1000).map(|x| x * 1000).collect();
        let s = summarize(&v);
        assert_eq!(s.count, 1000);
        assert_eq!(s.p50_us, 500.0);
        assert_eq!(s.p99_us, 990.0);
        assert_eq!(s.p999_us, Some(999.0));
        assert_eq!(s.p9999_us, None);
        assert_eq!(s.max_us, 1000.0);
    }
}
