//! A stateful writer (§8.4.9): its history, one proxy per matched reader,
//! and the writer side of the reliability protocol: DATA (or DATA_FRAG) out,
//! HEARTBEAT to reliable readers, ACKNACK and NACK_FRAG answered with
//! retransmissions or GAPs.

use super::guard::{CountGuard, CountVerdict};
use super::instances::{KeyOf, WriterHistory};
use super::slots::SampleMeta;
use super::tx::{Ctx, Sender};
use crate::priority::TxMark;
use crate::qos::{Durability, History, Qos, Reliability, INFINITE_NS};
use crate::wire::bytes::ByteWriter;
use crate::wire::plist::pid;
use crate::wire::Addr;
use crate::wire::{AckNack, BitSet256, EntityId, Guid, GuidPrefix, MessageBuilder, NackFrag, SequenceNumber, Time, VendorId, WireError};

/// Why a write did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// KEEP_ALL: the history is full of unacknowledged samples, or a reliable
    /// reader is as far behind as its reorder window reaches.
    #[error("KEEP_ALL writer: too many samples not yet acknowledged; retry after the readers acknowledge")]
    HistoryFull,
    /// The sample (or, for dispose/unregister, its key) does not serialize:
    /// the type's serializer failed, the sample needs more than about 64 MiB,
    /// or the key does not fit its buffer ([`crate::types::MAX_KEY_SIZE`]
    /// bytes). Nothing was sent.
    #[error("sample does not serialize: {0}")]
    Serialize(WireError),
    /// The [`WriterId`](super::WriterId) is not a user writer of this
    /// participant (another participant's handle, or a built-in writer's).
    #[error("no such writer")]
    NoSuchWriter,
    /// A new instance while the writer's instance table (`Qos::max_instances`) is full.
    #[error("instance table full (max_instances); unregister instances to free entries")]
    TooManyInstances,
}

/// A matched reader.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReaderProxy {
    pub guid: Guid,
    pub addr: Addr,
    pub reliable: bool,
    /// Every sequence number below this is acknowledged.
    pub acked_below: i64,
    /// The first sequence number this reader may receive (volatile: what came after the match).
    pub start_sn: i64,
    pub acknack_count: CountGuard,
    pub nackfrag_count: CountGuard,
    /// Highest sequence number retransmitted at `resent_ns` (NACK suppression).
    pub resent_high: i64,
    pub resent_ns: u64,
    /// This reader's paced fragment stream ([`FragStream`]).
    pub stream: FragStream,
}

/// Where a reliable reader's paced stream of fragmented samples stands:
/// the sample being sent, the next fragment to send and the fragments the
/// reader confirmed (NACK_FRAG in answer to HEARTBEAT_FRAG). At most
/// [`WriterCore::frag_window`] fragments are out unconfirmed, so a 1 MiB
/// sample never floods the reader's socket or ring, nor our own.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FragStream {
    /// The sample being streamed (0: none).
    pub sn: i64,
    /// Its fragment count.
    pub total: u32,
    /// Next fragment to send (1-based).
    pub next: u32,
    /// Every fragment below this one is confirmed.
    pub acked: u32,
    /// When the reader was last asked to confirm (HEARTBEAT_FRAG) with
    /// fragments unconfirmed (0: not waiting).
    pub asked_ns: u64,
    /// Every fragmented sample up to this one has been streamed to it.
    pub done: i64,
    /// The reader has confirmed fragments before (a detpath reader): a
    /// window it does not confirm in time is asked for again, not sent
    /// past (it is busy, and more fragments would overrun it).
    pub confirming: bool,
}

/// Room a HEARTBEAT takes at the end of a batch.
const HB_LEN: usize = 32;

/// Unacknowledged samples a KEEP_ALL writer sends ahead (a reliable
/// reader's reorder window holds at most 256).
const MAX_IN_FLIGHT: i64 = 256;

/// Bytes of unacknowledged samples a KEEP_ALL writer sends ahead: with
/// large samples the sample count alone would let hundreds of MiB out at
/// once (256 samples of 1 MiB), far more than a reader's socket buffer or a
/// datapath's ring holds; what overflows them is lost and sent again. Small
/// samples (up to 16 KiB) are not limited by it.
const MAX_BYTES_IN_FLIGHT: usize = 4 << 20;

/// A NACK for something retransmitted less than this long ago is not
/// answered again: the retransmission is most likely still on its way, and
/// answering every NACK of a slow reader multiplies the traffic.
const NACK_SUPPRESS_NS: u64 = 1_000_000;

/// Fragments a reliable writer has out unconfirmed per reader by default
/// ([`Config::frag_window`](super::Config::frag_window)): 32 of ~1.3 KB,
/// about 43 KB, within the smallest rings a detpath datapath runs with (64).
pub const DEFAULT_FRAG_WINDOW: u32 = 32;

/// How long a fragment stream waits for a reader to confirm its window
/// before it goes on regardless: readers that never confirm (CycloneDDS
/// and Fast DDS answer HEARTBEAT_FRAG only when fragments are missing)
/// get a window per this interval; a lost confirmation costs this much.
const FRAG_CONFIRM_NS: u64 = 1_000_000;

/// A local writer (user or SEDP built-in).
pub(crate) struct WriterCore {
    pub guid: Guid,
    pub topic: String,
    pub type_name: String,
    pub qos: Qos,
    pub next_sn: i64,
    pub history: WriterHistory,
    keyed: bool,
    /// Reads a sample's key hash from its serialized payload.
    key_of: Option<KeyOf>,
    pub proxies: Vec<ReaderProxy>,
    pub hb_count: i32,
    pub next_hb_ns: u64,
    pub hb_period_ns: u64,
    /// Fragment size for samples too large for one datagram.
    pub frag_size: usize,
    /// Scratch space to serialize a sample that needs fragmenting.
    scratch: Vec<u8>,
    /// A datagram of several DATA being batched (`write_batched`), `batch_len` bytes so far (0: none).
    batch: Vec<u8>,
    batch_len: usize,
    pub last_write_ns: u64,
    pub deadline_missed: u64,
    pub deadline_checked_ns: u64,
    pub written: u64,
    pub slot_growths: u64,
    /// Writes refused because the instance table was full.
    pub instances_refused: u64,
    /// ACKNACK or NACK_FRAG refused as implausible (acknowledging or naming
    /// samples this writer never wrote).
    pub implausible: u64,
    /// Serialized size of the newest sample written (the in-flight bound for large samples).
    last_len: usize,
    /// Deleted: what stays in its table slot until a new writer takes it
    /// ([`tombstone`](Self::tombstone)).
    pub deleted: bool,
    /// The DSCP and class of every datagram of this writer (its
    /// TRANSPORT_PRIORITY's, [`crate::priority`]).
    pub mark: TxMark,
    /// Fragments out unconfirmed per reliable reader ([`FragStream`]).
    pub frag_window: u32,
    /// Sequence numbers of the fragmented samples the history may still
    /// hold, ascending (what the readers' fragment streams walk).
    big: std::collections::VecDeque<i64>,
    hbfrag_count: i32,
}

/// Room a DATA_FRAG message needs besides the fragment: header, INFO_DST,
/// INFO_TS, DATA_FRAG header and a trailing HEARTBEAT.
const FRAG_OVERHEAD: usize = 20 + 16 + 12 + 36 + 32;

/// Room the inline QoS of a first fragment takes: PID_KEY_HASH (4 + 16)
/// and PID_SENTINEL (4).
const FRAG_KEY_HASH_LEN: usize = 24;

impl WriterCore {
    pub fn new(
        guid: Guid,
        topic: &str,
        type_name: &str,
        (keyed, key_of): (bool, Option<KeyOf>),
        qos: Qos,
        slot_size: usize,
        max_datagram: usize,
        hb_period_ns: u64,
    ) -> WriterCore {
        let room = if keyed { FRAG_OVERHEAD + FRAG_KEY_HASH_LEN } else { FRAG_OVERHEAD };
        let frag_size = (max_datagram.saturating_sub(room) / 4 * 4).clamp(64, 1344);
        let history = WriterHistory::new(&qos, keyed, slot_size);
        WriterCore {
            guid,
            topic: topic.to_string(),
            type_name: type_name.to_string(),
            qos,
            next_sn: 1,
            history,
            keyed,
            key_of,
            proxies: Vec::new(),
            hb_count: 0,
            next_hb_ns: 0,
            hb_period_ns,
            frag_size,
            scratch: vec![0; slot_size],
            batch: vec![0; max_datagram],
            batch_len: 0,
            last_write_ns: 0,
            deadline_missed: 0,
            deadline_checked_ns: 0,
            written: 0,
            slot_growths: 0,
            instances_refused: 0,
            implausible: 0,
            last_len: 0,
            deleted: false,
            mark: TxMark::NONE,
            frag_window: DEFAULT_FRAG_WINDOW,
            big: std::collections::VecDeque::new(),
            hbfrag_count: 0,
        }
    }

    /// What stays of deleted writer `guid` in its slot of the writer table
    /// (a `WriterId` is an index): no topic, no readers, an empty history
    /// of the smallest size, no deadline; nothing to match, send or time.
    pub fn tombstone(guid: Guid) -> WriterCore {
        let mut w = WriterCore::new(guid, "", "", (false, None), Qos::best_effort(1), 0, 0, 0);
        w.deleted = true;
        w
    }

    fn reliable_proxies(&self) -> impl Iterator<Item = &ReaderProxy> {
        self.proxies.iter().filter(|p| p.reliable)
    }

    /// Lowest acknowledged-below over reliable readers (`next_sn` when there are none).
    fn min_acked(&self) -> i64 {
        self.reliable_proxies().map(|p| p.acked_below).min().unwrap_or(self.next_sn)
    }

    /// Oldest sequence number still in the history.
    fn first_available(&self) -> i64 {
        self.history.first_available(self.next_sn)
    }

    /// The instance a serialized sample belongs to (keyed writers).
    /// Whether its DATA carry the key hash inline (PID_KEY_HASH, as
    /// CycloneDDS and Fast DDS send it): a user writer of a keyed type that
    /// can compute it. Readers then sort samples into instances without
    /// reading the payload (and a reader of another layout still can).
    fn sends_key_hash(&self) -> bool {
        self.keyed && self.key_of.is_some() && !self.guid.entity.is_builtin()
    }

    fn key_of(&self, payload: &[u8]) -> Option<[u8; 16]> {
        if self.keyed {
            Some(self.key_of.and_then(|f| f(payload, false)).unwrap_or_default())
        } else {
            None
        }
    }

    /// Keeps a sample in the history; false (counted) when its instance has no room.
    fn keep(&mut self, meta: SampleMeta, payload: &[u8]) -> bool {
        let acked = self.min_acked();
        let stored = match self.history.store(meta, payload, acked) {
            // An SEDP writer's table full of endpoints disposed but not yet
            // acknowledged by every reader: the entry of one goes anyway. A
            // forged participant's SEDP reader never acknowledges, and must
            // not hold our announcements back for its lease; what a slow
            // reader loses is one dispose, which our lease covers.
            Err(_) if self.guid.entity.is_builtin() => self.history.store(meta, payload, i64::MAX),
            other => other,
        };
        match stored {
            Ok(grew) => {
                self.slot_growths += grew as u64;
                true
            }
            Err(_) => {
                self.instances_refused += 1;
                false
            }
        }
    }

    /// How many unacknowledged samples a KEEP_ALL writer lets out: its
    /// history, but no more than a reader's reorder window holds (what goes
    /// past that window is dropped and has to be sent again).
    fn max_in_flight(&self) -> i64 {
        let by_bytes = (MAX_BYTES_IN_FLIGHT / self.last_len.max(1)).max(2) as i64;
        (self.history.capacity() as i64).min(MAX_IN_FLIGHT).min(by_bytes)
    }

    /// Samples not yet acknowledged by every reliable reader.
    pub fn unacked(&self) -> i64 {
        self.next_sn - self.min_acked()
    }

    /// Writes one sample: `serialize` writes the payload (encapsulation
    /// header included) straight into the transmit buffer; the bytes are then
    /// kept in the history for retransmission. Too large for one datagram, it
    /// goes out as DATA_FRAGs.
    pub fn write(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: u64,
        source_ts: Option<Time>,
        serialize: &dyn Fn(&mut ByteWriter<'_>) -> Result<(), WireError>,
    ) -> Result<SequenceNumber, WriteError> {
        ctx.mark = self.mark;
        // Batched samples go first: sequence numbers leave in order.
        self.flush(ctx);
        if self.qos.history == History::KeepAll && self.unacked() >= self.max_in_flight() {
            return Err(WriteError::HistoryFull);
        }
        let sn = self.next_sn;
        let meta = SampleMeta { sn, writer: self.guid, source_ts, reception_ns: now, valid_data: true, ..Default::default() };
        // A KEEP_ALL writer needs acknowledgements to free its history: past a
        // quarter of what may be in flight, every eighth heartbeat asks for one.
        let cap = self.max_in_flight();
        let need_ack = self.qos.history == History::KeepAll && self.unacked() + 1 >= (cap / 4).max(1) && sn % (cap / 8).max(1) == 0;
        let first = self.first_available_after(sn);
        let (writer_id, hb_count) = (self.guid.entity, self.hb_count + 1);
        let has_reliable = self.reliable_proxies().next().is_some();
        let inline_kh = self.sends_key_hash();
        let built = (|| -> Result<(usize, std::ops::Range<usize>), WireError> {
            let mut b = MessageBuilder::new(ctx.tx, ctx.prefix, VendorId::DETPATH)?;
            b.info_ts(source_ts)?;
            let range = b.data_with_range(EntityId::UNKNOWN, writer_id, SequenceNumber(sn), inline_kh.then_some(&key_hash_placeholder), |w| serialize(w))?;
            if has_reliable {
                b.heartbeat(EntityId::UNKNOWN, writer_id, SequenceNumber(first), SequenceNumber(sn), hb_count, !need_ack, false)?;
            }
            Ok((b.finish(), range))
        })();
        match built {
            Ok((len, range)) => {
                self.last_len = range.len();
                let meta = SampleMeta { key_hash: self.key_of(&ctx.tx[range.clone()]), ..meta };
                if inline_kh {
                    fill_key_hash(ctx.tx, range.start, meta.key_hash);
                }
                if !self.keep(meta, &ctx.tx[range]) {
                    return Err(WriteError::TooManyInstances);
                }
                if has_reliable {
                    self.hb_count = hb_count;
                }
                self.next_sn += 1;
                self.send_to_all(ctx, len, sn);
            }
            Err(WireError::BufferFull) => {
                // Too large for one datagram: serialize into scratch, keep it, send fragments.
                let n = loop {
                    let mut w = ByteWriter::new(&mut self.scratch, true);
                    match serialize(&mut w) {
                        Ok(()) => break w.pos(),
                        Err(WireError::BufferFull) if self.scratch.len() < (1 << 26) => {
                            let grow = self.scratch.len().max(1024) * 2;
                            self.scratch.resize(grow, 0);
                            self.slot_growths += 1;
                        }
                        Err(e) => return Err(WriteError::Serialize(e)),
                    }
                };
                self.last_len = n;
                let meta = SampleMeta { key_hash: self.key_of(&self.scratch[..n]), ..meta };
                let scratch = std::mem::take(&mut self.scratch);
                let kept = self.keep(meta, &scratch[..n]);
                self.scratch = scratch;
                if !kept {
                    return Err(WriteError::TooManyInstances);
                }
                self.next_sn += 1;
                self.big.retain(|&s| self.history.get(s).is_some());
                self.big.push_back(sn);
                // Best-effort readers get the fragments at once (nothing
                // would confirm them); reliable ones through their paced stream.
                for i in 0..self.proxies.len() {
                    let p = self.proxies[i];
                    if p.reliable || p.start_sn > sn || self.proxies[..i].iter().any(|q| !q.reliable && q.addr == p.addr && q.start_sn <= sn) {
                        continue;
                    }
                    self.send_fragments(ctx, p.addr, None, EntityId::UNKNOWN, sn, None);
                }
                if has_reliable {
                    self.heartbeat_all(ctx, !need_ack);
                }
                for i in 0..self.proxies.len() {
                    self.pump(ctx, i, now);
                }
            }
            Err(e) => return Err(WriteError::Serialize(e)),
        }
        self.last_write_ns = now;
        self.written += 1;
        Ok(SequenceNumber(sn))
    }

    /// Disposes and/or unregisters (`status`: STATUS_INFO bits) the instance
    /// of key hash `key`: a DATA whose inline QoS carries the key hash and
    /// the status info (RTPS §9.6.3.9) and, unless `serialized_key` is empty,
    /// the serialized key as payload (key flag), kept in the history like any
    /// sample (retransmitted, replayed to late joiners).
    pub fn write_status(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: u64,
        source_ts: Option<Time>,
        key: [u8; 16],
        status: u32,
        serialized_key: &[u8],
    ) -> Result<SequenceNumber, WriteError> {
        ctx.mark = self.mark;
        self.flush(ctx);
        if self.qos.history == History::KeepAll && self.unacked() >= self.max_in_flight() {
            return Err(WriteError::HistoryFull);
        }
        let sn = self.next_sn;
        let key_hash = self.keyed.then_some(key);
        let meta = SampleMeta { sn, writer: self.guid, source_ts, reception_ns: now, status_info: status, key_hash, valid_data: false, irrelevant: false };
        if !self.keep(meta, serialized_key) {
            return Err(WriteError::TooManyInstances);
        }
        let first = self.first_available();
        let has_reliable = self.reliable_proxies().next().is_some();
        let (writer_id, hb_count) = (self.guid.entity, self.hb_count + 1);
        let built = (|| -> Result<usize, WireError> {
            let mut b = MessageBuilder::new(ctx.tx, ctx.prefix, VendorId::DETPATH)?;
            push_sample(&mut b, EntityId::UNKNOWN, writer_id, &SampleMeta { key_hash: Some(key), ..meta }, serialized_key, false)?;
            if has_reliable {
                b.heartbeat(EntityId::UNKNOWN, writer_id, SequenceNumber(first), SequenceNumber(sn), hb_count, true, false)?;
            }
            Ok(b.finish())
        })();
        self.next_sn += 1;
        let len = built.map_err(WriteError::Serialize)?;
        if has_reliable {
            self.hb_count = hb_count;
        }
        self.send_to_all(ctx, len, sn);
        self.last_write_ns = now;
        Ok(SequenceNumber(sn))
    }

    /// Like [`write`](Self::write), but the DATA joins a datagram of
    /// several (as CycloneDDS batches when ddsperf asks it to), sent when full
    /// or at [`flush`](Self::flush). Samples too large for that go out at once.
    pub fn write_batched(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: u64,
        source_ts: Option<Time>,
        serialize: &dyn Fn(&mut ByteWriter<'_>) -> Result<(), WireError>,
    ) -> Result<SequenceNumber, WriteError> {
        ctx.mark = self.mark;
        if self.qos.history == History::KeepAll && self.unacked() >= self.max_in_flight() {
            self.flush(ctx);
            return Err(WriteError::HistoryFull);
        }
        let sn = self.next_sn;
        let writer_id = self.guid.entity;
        let inline_kh = self.sends_key_hash();
        for attempt in 0..2 {
            if self.batch_len == 0 {
                match MessageBuilder::new(&mut self.batch, ctx.prefix, VendorId::DETPATH) {
                    Ok(b) => self.batch_len = b.finish(),
                    Err(_) => break,
                }
            }
            let mark = self.batch_len;
            let mut b = MessageBuilder::resume(&mut self.batch, mark);
            let res = b
                .info_ts(source_ts)
                .and_then(|_| b.data_with_range(EntityId::UNKNOWN, writer_id, SequenceNumber(sn), inline_kh.then_some(&key_hash_placeholder), |w| serialize(w)));
            // Keep room for the heartbeat the flush appends.
            match res {
                Ok(range) if b.remaining() >= HB_LEN => {
                    let end = b.finish();
                    self.last_len = range.len();
                    let key_hash = self.key_of(&self.batch[range.clone()]);
                    if inline_kh {
                        fill_key_hash(&mut self.batch, range.start, key_hash);
                    }
                    let meta = SampleMeta { sn, writer: self.guid, source_ts, reception_ns: now, valid_data: true, key_hash, ..Default::default() };
                    let batch = std::mem::take(&mut self.batch);
                    let kept = self.keep(meta, &batch[range]);
                    self.batch = batch;
                    if !kept {
                        // Not sent: the DATA leaves the batch again.
                        self.batch_len = mark;
                        return Err(WriteError::TooManyInstances);
                    }
                    self.batch_len = end;
                    self.next_sn += 1;
                    self.last_write_ns = now;
                    self.written += 1;
                    return Ok(SequenceNumber(sn));
                }
                Ok(_) | Err(WireError::BufferFull) => {
                    b.truncate(mark);
                    let only_header = mark <= crate::wire::message::HEADER_LEN;
                    self.flush(ctx);
                    if only_header || attempt == 1 {
                        break;
                    }
                }
                Err(e) => {
                    b.truncate(mark);
                    return Err(WriteError::Serialize(e));
                }
            }
        }
        // Does not fit a datagram with others: on its own (fragmented if need be).
        self.flush(ctx);
        self.write(ctx, now, source_ts, serialize)
    }

    /// Sends the batched datagram, closed by a heartbeat for reliable readers.
    pub fn flush(&mut self, ctx: &mut Ctx<'_>) {
        ctx.mark = self.mark;
        if self.batch_len <= crate::wire::message::HEADER_LEN {
            self.batch_len = 0;
            return;
        }
        let last = self.next_sn - 1;
        if self.reliable_proxies().next().is_some() {
            let cap = self.max_in_flight();
            let need_ack = self.qos.history == History::KeepAll && self.unacked() >= (cap / 4).max(1);
            self.hb_count += 1;
            let first = self.first_available();
            let mut b = MessageBuilder::resume(&mut self.batch, self.batch_len);
            if b.heartbeat(EntityId::UNKNOWN, self.guid.entity, SequenceNumber(first), SequenceNumber(last), self.hb_count, !need_ack, false).is_ok() {
                self.batch_len = b.finish();
            }
        }
        let len = self.batch_len;
        for (i, p) in self.proxies.iter().enumerate() {
            if self.proxies[..i].iter().any(|q| q.addr == p.addr) {
                continue;
            }
            ctx.counters.tx_datagrams += 1;
            ctx.counters.tx_bytes += len as u64;
            ctx.out.send_marked(p.addr, &self.batch[..len], self.mark);
        }
        self.batch_len = 0;
    }

    /// The oldest sample the history holds once `sn` is in.
    fn first_available_after(&self, sn: i64) -> i64 {
        self.history.first_available_after(sn)
    }

    /// Sends the message in the transmit buffer to every distinct reader address, allocating nothing.
    fn send_to_all(&self, ctx: &mut Ctx<'_>, len: usize, sn: i64) {
        for (i, p) in self.proxies.iter().enumerate() {
            if p.start_sn > sn || self.proxies[..i].iter().any(|q| q.addr == p.addr && q.start_sn <= sn) {
                continue;
            }
            ctx.send(p.addr, len);
        }
    }

    /// Sends sample `sn` from the history as DATA_FRAGs (all fragments, or those in `only`).
    fn send_fragments(&mut self, ctx: &mut Ctx<'_>, dst: Addr, dst_prefix: Option<GuidPrefix>, reader: EntityId, sn: i64, only: Option<&NackFrag<'_>>) {
        let Some(slot) = self.history.get(sn) else {
            return;
        };
        let total = slot.len.div_ceil(self.frag_size);
        let (writer_id, frag_size, ts) = (self.guid.entity, self.frag_size, slot.meta.source_ts);
        let key = slot.meta.key_hash.filter(|_| self.sends_key_hash());
        let payload = slot.payload();
        let mut s = Sender::new(ctx, dst, dst_prefix);
        // A NACK_FRAG's fragments go again at most a window at a time (the
        // reader asks for the rest).
        let mut budget = self.frag_window.max(2);
        for f in 0..total {
            let num = f as u32 + 1;
            if let Some(n) = only {
                if budget == 0 || !n.state.iter().any(|x| x == num) {
                    continue;
                }
                budget -= 1;
            }
            let bytes = &payload[f * frag_size..((f + 1) * frag_size).min(payload.len())];
            let _ = s.push(|b| {
                b.info_ts(ts)?;
                push_frag(b, reader, writer_id, SequenceNumber(sn), (num, frag_size, payload.len()), key, bytes)
            });
            s.ctx.counters.frags_sent += 1;
        }
    }

    /// Sends the fragments `frags` of sample `sn` to reliable proxy `i`
    /// (INFO_DST, its reader id), a HEARTBEAT_FRAG after every `hb_every`
    /// of them (naming the fragment just sent) and one at the end naming
    /// `announce`: the reader confirms what it has so far with a NACK_FRAG.
    fn send_frags(&mut self, ctx: &mut Ctx<'_>, i: usize, sn: i64, frags: &mut dyn Iterator<Item = u32>, hb_every: u32, announce: u32) {
        let p = self.proxies[i];
        let Some(slot) = self.history.get(sn) else {
            return;
        };
        let (writer_id, reader_id, frag_size, ts) = (self.guid.entity, p.guid.entity, self.frag_size, slot.meta.source_ts);
        let key = slot.meta.key_hash.filter(|_| self.sends_key_hash());
        let payload = slot.payload();
        let total = payload.len().div_ceil(frag_size) as u32;
        let mut hb_count = self.hbfrag_count;
        let mut s = Sender::new(ctx, p.addr, Some(p.guid.prefix));
        let mut since_hb = 0;
        for num in frags.filter(|&f| f >= 1 && f <= total) {
            let f = (num - 1) as usize;
            let bytes = &payload[f * frag_size..((f + 1) * frag_size).min(payload.len())];
            let _ = s.push(|b| {
                b.info_ts(ts)?;
                push_frag(b, reader_id, writer_id, SequenceNumber(sn), (num, frag_size, payload.len()), key, bytes)
            });
            s.ctx.counters.frags_sent += 1;
            since_hb += 1;
            if since_hb >= hb_every && num < announce {
                since_hb = 0;
                hb_count = hb_count.wrapping_add(1).max(1);
                let _ = s.push(|b| b.heartbeat_frag(reader_id, writer_id, SequenceNumber(sn), num, hb_count));
            }
        }
        hb_count = hb_count.wrapping_add(1).max(1);
        let _ = s.push(|b| b.heartbeat_frag(reader_id, writer_id, SequenceNumber(sn), announce.clamp(1, total.max(1)), hb_count));
        drop(s);
        self.hbfrag_count = hb_count;
    }

    /// Moves reliable proxy `i`'s fragment stream on: finishes the sample
    /// it confirmed (or acknowledged, or that left the history), starts the
    /// next fragmented sample it has not had, and sends what the window
    /// allows. Without room it waits for the reader's NACK_FRAG (or
    /// [`FRAG_CONFIRM_NS`], [`poll`](Self::poll)).
    fn pump(&mut self, ctx: &mut Ctx<'_>, i: usize, now: u64) {
        ctx.mark = self.mark;
        let w = self.frag_window.max(2);
        loop {
            let p = self.proxies[i];
            if !p.reliable {
                return;
            }
            let mut st = p.stream;
            if st.sn != 0 {
                let acknowledged = p.acked_below > st.sn;
                if acknowledged || st.acked > st.total || self.history.get(st.sn).is_none() {
                    st.done = st.done.max(st.sn);
                    st.sn = 0;
                    st.asked_ns = 0;
                    self.proxies[i].stream = st;
                    if !acknowledged {
                        // Confirmed fragment by fragment: ask for the
                        // ACKNACK that frees it from a KEEP_ALL history.
                        self.heartbeat_to(ctx, i, false);
                    }
                    continue;
                }
            } else {
                let from = st.done.max(p.start_sn - 1).max(p.acked_below - 1);
                let Some((sn, len)) = self.big.iter().find_map(|&s| if s > from { self.history.get(s).map(|slot| (s, slot.len)) } else { None }) else {
                    return;
                };
                st = FragStream { sn, total: len.div_ceil(self.frag_size) as u32, next: 1, acked: 1, asked_ns: 0, ..st };
                self.proxies[i].stream = st;
            }
            let end = st.total.min(st.acked + w - 1);
            if st.next > end {
                // Waiting for the reader: never without a timeout, so a
                // lost confirmation cannot stop the stream.
                if st.asked_ns == 0 {
                    self.proxies[i].stream.asked_ns = now.max(1);
                }
                return;
            }
            self.send_frags(ctx, i, st.sn, &mut (st.next..=end), w / 2, end);
            st.next = end + 1;
            st.asked_ns = now.max(1);
            if end < st.total {
                ctx.counters.frag_window_waits += 1;
            }
            self.proxies[i].stream = st;
            return;
        }
    }

    /// A reader asked for fragmented sample `sn` again: stream it anew,
    /// unless it is being streamed or still to come.
    fn restream(&mut self, i: usize, sn: i64) {
        let st = &mut self.proxies[i].stream;
        if sn < st.sn || (st.sn == 0 && sn <= st.done) {
            st.done = st.done.min(sn - 1);
            st.sn = 0;
            st.asked_ns = 0;
        }
    }

    /// Fragment streams whose reader did not confirm in time go on.
    fn frag_timeouts(&mut self, ctx: &mut Ctx<'_>, now: u64) {
        for i in 0..self.proxies.len() {
            let st = &mut self.proxies[i].stream;
            if st.sn != 0 && st.asked_ns != 0 && now >= st.asked_ns + FRAG_CONFIRM_NS {
                ctx.counters.frag_window_timeouts += 1;
                st.asked_ns = now.max(1);
                if st.confirming {
                    // Ask again (the confirmation or the question was lost,
                    // or the reader is busy): a HEARTBEAT_FRAG alone.
                    let (sn, last) = (st.sn, st.next - 1);
                    self.send_frags(ctx, i, sn, &mut std::iter::empty(), 1, last);
                } else {
                    st.acked = st.next;
                    st.asked_ns = 0;
                    self.pump(ctx, i, now);
                }
            }
        }
    }

    /// A heartbeat to every reliable reader (periodic, or `final_flag` false to ask for acknowledgements).
    pub fn heartbeat_all(&mut self, ctx: &mut Ctx<'_>, final_flag: bool) {
        ctx.mark = self.mark;
        if self.reliable_proxies().next().is_none() {
            return;
        }
        self.hb_count += 1;
        let (first, last) = (self.first_available(), self.next_sn - 1);
        let Ok(mut b) = MessageBuilder::new(ctx.tx, ctx.prefix, VendorId::DETPATH) else {
            return;
        };
        if b.heartbeat(EntityId::UNKNOWN, self.guid.entity, SequenceNumber(first), SequenceNumber(last), self.hb_count, final_flag, false).is_err() {
            return;
        }
        let len = b.finish();
        ctx.counters.heartbeats_sent += 1;
        for (i, p) in self.proxies.iter().enumerate() {
            if p.reliable && !self.proxies[..i].iter().any(|q| q.reliable && q.addr == p.addr) {
                ctx.send(p.addr, len);
            }
        }
    }

    /// Periodic work: heartbeats while something is unacknowledged, deadline accounting.
    pub fn poll(&mut self, ctx: &mut Ctx<'_>, now: u64) {
        ctx.mark = self.mark;
        self.flush(ctx);
        self.frag_timeouts(ctx, now);
        if now >= self.next_hb_ns {
            if self.reliable_proxies().any(|p| p.acked_below < self.next_sn) {
                self.heartbeat_all(ctx, false);
            }
            self.next_hb_ns = now + self.hb_period_ns;
        }
        if self.qos.deadline_ns != INFINITE_NS && self.written > 0 {
            let period = self.qos.deadline_ns as u64;
            let since = self.last_write_ns.max(self.deadline_checked_ns);
            if now >= since + period {
                self.deadline_missed += 1;
                self.deadline_checked_ns = now;
            }
        }
    }

    /// When the next heartbeat or deadline check is due.
    pub fn next_timeout(&self) -> u64 {
        let mut t = u64::MAX;
        if self.reliable_proxies().any(|p| p.acked_below < self.next_sn) {
            t = self.next_hb_ns;
        }
        if self.qos.deadline_ns != INFINITE_NS && self.written > 0 {
            t = t.min(self.last_write_ns.max(self.deadline_checked_ns) + self.qos.deadline_ns as u64);
        }
        for p in &self.proxies {
            if p.stream.sn != 0 && p.stream.asked_ns != 0 {
                t = t.min(p.stream.asked_ns + FRAG_CONFIRM_NS);
            }
        }
        t
    }

    /// A new matched reader. Transient-local writers replay their history to it.
    pub fn add_proxy(&mut self, ctx: &mut Ctx<'_>, now: u64, guid: Guid, addr: Addr, reliable: bool) {
        ctx.mark = self.mark;
        if self.proxies.iter().any(|p| p.guid == guid) {
            return;
        }
        let replay = self.qos.durability >= Durability::TransientLocal;
        let start_sn = if replay { self.first_available() } else { self.next_sn };
        self.proxies.push(ReaderProxy {
            guid,
            addr,
            reliable,
            acked_below: start_sn,
            start_sn,
            acknack_count: CountGuard::new(),
            nackfrag_count: CountGuard::new(),
            resent_high: 0,
            resent_ns: 0,
            stream: FragStream::default(),
        });
        if replay {
            let i = self.proxies.len() - 1;
            self.resend(ctx, i, now, &[(start_sn, self.next_sn - 1)]);
        }
        if reliable {
            self.heartbeat_to(ctx, self.proxies.len() - 1, false);
        }
    }

    /// Drops the proxies of readers for which `gone` is true.
    pub fn remove_proxies(&mut self, gone: impl Fn(&Guid) -> bool) -> usize {
        let before = self.proxies.len();
        self.proxies.retain(|p| !gone(&p.guid));
        before - self.proxies.len()
    }

    fn heartbeat_to(&mut self, ctx: &mut Ctx<'_>, i: usize, final_flag: bool) {
        self.hb_count += 1;
        let p = &self.proxies[i];
        let first = self.first_available().max(p.start_sn).min(self.next_sn);
        let (count, writer_id) = (self.hb_count, self.guid.entity);
        let (reader_id, last) = (p.guid.entity, self.next_sn - 1);
        let mut s = Sender::new(ctx, p.addr, Some(p.guid.prefix));
        let _ = s.push(|b| b.heartbeat(reader_id, writer_id, SequenceNumber(first), SequenceNumber(last), count, final_flag, false));
        s.ctx.counters.heartbeats_sent += 1;
    }

    /// Retransmits what `ranges` (inclusive, ascending) name to proxy `i`:
    /// DATA (or fragments) for what the history still holds, one GAP per run
    /// of what it does not. Each range is walked by the samples the history
    /// holds in it, never number by number: a transient-local replay spans
    /// every sequence number since the oldest sample kept, which in a
    /// KEEP_LAST history per instance can be one sample from 10^8 writes ago.
    fn resend(&mut self, ctx: &mut Ctx<'_>, i: usize, now: u64, ranges: &[(i64, i64)]) {
        let p = self.proxies[i];
        let writer_id = self.guid.entity;
        let inline_kh = self.sends_key_hash();
        let mut run: Option<(i64, i64)> = None;
        let mut big = [0i64; 16];
        let mut nbig = 0;
        {
            let mut s = Sender::new(ctx, p.addr, Some(p.guid.prefix));
            let gap = |s: &mut Sender<'_, '_>, (a, b): (i64, i64)| {
                let _ = s.push(|m| m.gap(p.guid.entity, writer_id, SequenceNumber(a), SequenceNumber(b + 1), &BitSet256::new(0)));
                s.ctx.counters.gaps_sent += 1;
            };
            // What the history no longer holds (or the reader may not have:
            // before its start) joins the run of such numbers, sent as one GAP.
            let missing = |s: &mut Sender<'_, '_>, run: &mut Option<(i64, i64)>, (a, b): (i64, i64)| {
                *run = match *run {
                    Some((x, y)) if y + 1 == a => Some((x, b)),
                    Some(r) => {
                        gap(s, r);
                        Some((a, b))
                    }
                    None => Some((a, b)),
                };
            };
            for &(lo, hi) in ranges {
                let (lo, hi) = (lo.max(1), hi.min(self.next_sn - 1));
                let mut at = lo;
                for sn in self.history.held(lo.max(p.start_sn), hi) {
                    let Some(slot) = self.history.get(sn) else { continue };
                    if sn > at {
                        missing(&mut s, &mut run, (at, sn - 1));
                    }
                    at = sn + 1;
                    if let Some(r) = run.take() {
                        gap(&mut s, r);
                    }
                    match s.push(|b| push_sample(b, p.guid.entity, writer_id, &slot.meta, slot.payload(), inline_kh)) {
                        Ok(()) => s.ctx.counters.retransmits += 1,
                        Err(WireError::BufferFull) if nbig < big.len() => {
                            big[nbig] = sn;
                            nbig += 1;
                        }
                        Err(_) => {}
                    }
                }
                if at <= hi {
                    missing(&mut s, &mut run, (at, hi));
                }
            }
            if let Some(r) = run {
                gap(&mut s, r);
            }
        }
        for &sn in &big[..nbig] {
            ctx.counters.retransmits += 1;
            if p.reliable {
                self.restream(i, sn);
            } else {
                self.send_fragments(ctx, p.addr, Some(p.guid.prefix), p.guid.entity, sn, None);
            }
        }
        if p.reliable && nbig > 0 {
            self.pump(ctx, i, now);
        }
    }

    /// ACKNACK from a reader: acknowledgements move the proxy's horizon, negative bits are retransmitted.
    pub fn on_acknack(&mut self, ctx: &mut Ctx<'_>, now: u64, src: GuidPrefix, a: &AckNack<'_>) -> bool {
        ctx.mark = self.mark;
        let Some(i) = self.proxies.iter().position(|p| p.guid.prefix == src && p.guid.entity == a.reader_id) else {
            return false;
        };
        // RTPS 8.3.7.1: the base is at least 1; and a reader cannot
        // acknowledge what was never written. Such an ACKNACK is corrupted or
        // forged: it changes nothing (it would stop retransmissions).
        let base = a.state.base.0;
        // Fast DDS's first ACKNACK to a writer it matched: bitmapBase 0, no
        // bits ("nothing received yet"). It acknowledges nothing (the proxy
        // stays at its start) and, not final, asks for a heartbeat. From a
        // reader that has acknowledged samples already it says what cannot
        // be: that shape is then the malformed base 0 the codec refuses
        // everywhere else (corrupted or forged), and changes nothing.
        let nothing_yet = base == 0 && a.state.num_bits == 0;
        if nothing_yet && self.proxies[i].acked_below > self.proxies[i].start_sn {
            ctx.counters.rx_malformed += 1;
            return true;
        }
        if !nothing_yet && (base < 1 || base > self.next_sn) {
            self.implausible += 1;
            ctx.counters.implausible += 1;
            return true;
        }
        let p = &mut self.proxies[i];
        match p.acknack_count.check(a.count) {
            CountVerdict::Fresh => {}
            CountVerdict::Stale => {
                ctx.counters.acknacks_stale += 1;
                return true;
            }
            CountVerdict::Resynced => ctx.counters.resyncs += 1,
        }
        // The newest ACKNACK says where the reader is: a forged one that
        // acknowledged too much is undone by the next real one.
        p.acked_below = base.max(p.start_sn);
        let suppress_upto = if now < p.resent_ns + NACK_SUPPRESS_NS { p.resent_high } else { 0 };
        let mut nacked = [(0i64, 0i64); 256];
        let mut n = 0;
        for sn in a.state.iter() {
            if sn.0 <= suppress_upto {
                ctx.counters.nacks_suppressed += 1;
                continue;
            }
            if n < nacked.len() && sn.0 < self.next_sn {
                nacked[n] = (sn.0, sn.0);
                n += 1;
            }
        }
        if n > 0 {
            self.resend(ctx, i, now, &nacked[..n]);
            let p = &mut self.proxies[i];
            p.resent_high = p.resent_high.max(nacked[n - 1].1);
            p.resent_ns = now;
        }
        if n == 0 {
            // An acknowledgement may finish the sample being streamed.
            self.pump(ctx, i, now);
        }
        let p = &self.proxies[i];
        if n > 0 || (!a.final_flag && p.reliable) {
            let final_flag = p.acked_below >= self.next_sn && n == 0;
            self.heartbeat_to(ctx, i, final_flag);
        }
        true
    }

    /// NACK_FRAG: resend the named fragments.
    pub fn on_nack_frag(&mut self, ctx: &mut Ctx<'_>, now: u64, src: GuidPrefix, n: &NackFrag<'_>) -> bool {
        ctx.mark = self.mark;
        let Some(i) = self.proxies.iter().position(|p| p.guid.prefix == src && p.guid.entity == n.reader_id) else {
            return false;
        };
        if n.writer_sn.0 < 1 || n.writer_sn.0 >= self.next_sn {
            self.implausible += 1;
            ctx.counters.implausible += 1;
            return true;
        }
        if self.proxies[i].nackfrag_count.check(n.count) == CountVerdict::Stale {
            return true;
        }
        let p = self.proxies[i];
        let st = p.stream;
        if p.reliable && st.sn == n.writer_sn.0 && self.history.get(st.sn).is_some() {
            // The streamed sample: everything below the base arrived; what
            // the set names (of what was sent) goes again, with a
            // HEARTBEAT_FRAG asking for the next confirmation.
            // The reader's word, even below what a timeout assumed arrived.
            let acked = n.state.base.clamp(1, st.next);
            self.proxies[i].stream.acked = acked;
            self.proxies[i].stream.confirming = true;
            self.proxies[i].stream.asked_ns = 0;
            let w = self.frag_window.max(2);
            let mut again = n.state.iter().filter(|&f| f >= acked && f < st.next).take(w as usize).peekable();
            if again.peek().is_some() {
                let before = ctx.counters.frags_sent;
                self.send_frags(ctx, i, st.sn, &mut again, w, st.next - 1);
                ctx.counters.frags_resent += ctx.counters.frags_sent - before;
                self.proxies[i].stream.asked_ns = now.max(1);
            }
            self.pump(ctx, i, now);
        } else if self.history.get(n.writer_sn.0).is_some() {
            self.send_fragments(ctx, p.addr, Some(p.guid.prefix), p.guid.entity, n.writer_sn.0, Some(n));
        } else {
            self.resend(ctx, i, now, &[(n.writer_sn.0, n.writer_sn.0)]);
        }
        true
    }

    /// Reliability as a flag.
    pub fn is_reliable(&self) -> bool {
        self.qos.reliability == Reliability::Reliable
    }
}

/// The inline QoS of a keyed writer's DATA: PID_KEY_HASH, zeros until
/// [`fill_key_hash`] writes the hash read from the serialized payload
/// (which follows it, so it is known only once the payload is written).
fn key_hash_placeholder(pw: &mut crate::wire::ParamWriter<'_, '_>) -> Result<(), WireError> {
    pw.bytes(pid::KEY_HASH, &[0; 16])
}

/// Writes `key` into the PID_KEY_HASH [`key_hash_placeholder`] left in
/// `buf` before the payload starting at `payload_start` (the 16 bytes end
/// where PID_SENTINEL, 4 bytes, begins).
fn fill_key_hash(buf: &mut [u8], payload_start: usize, key: Option<[u8; 16]>) {
    if let (Some(k), Some(at)) = (key, payload_start.checked_sub(20)) {
        buf[at..at + 16].copy_from_slice(&k);
    }
}

/// DATA_FRAG number `num` of a sample of `sample_size` bytes cut in
/// `frag_size` pieces; the first fragment of a keyed writer's sample
/// carries its key hash inline (PID_KEY_HASH, as on DATA), so a reader has
/// it whichever fragment starts its reassembly (it keeps the first it sees).
fn push_frag(
    b: &mut MessageBuilder<'_>,
    reader: EntityId,
    writer: EntityId,
    sn: SequenceNumber,
    (num, frag_size, sample_size): (u32, usize, usize),
    key: Option<[u8; 16]>,
    bytes: &[u8],
) -> Result<(), WireError> {
    let shape = (num, 1, frag_size as u16, sample_size as u32);
    match key.filter(|_| num == 1) {
        Some(k) => b.data_frag_with_qos(reader, writer, sn, shape, Some(&|pw| pw.bytes(pid::KEY_HASH, &k)), bytes),
        None => b.data_frag_with_qos(reader, writer, sn, shape, None, bytes),
    }
}

/// INFO_TS and the DATA of a kept sample: its payload (with its key hash
/// inline when `inline_kh`), or for a dispose or unregister the inline key
/// hash and status info, and the serialized key when the type gave one
/// (the slot's payload).
fn push_sample(b: &mut MessageBuilder<'_>, reader: EntityId, writer: EntityId, meta: &SampleMeta, payload: &[u8], inline_kh: bool) -> Result<(), WireError> {
    b.info_ts(meta.source_ts)?;
    let sn = SequenceNumber(meta.sn);
    if meta.valid_data {
        match meta.key_hash.filter(|_| inline_kh) {
            Some(k) => b.data_bytes(reader, writer, sn, Some(&|pw| pw.bytes(pid::KEY_HASH, &k)), payload),
            None => b.data_bytes(reader, writer, sn, None, payload),
        }
    } else {
        let (key, status) = (meta.key_hash.unwrap_or_default(), meta.status_info);
        b.data_key(
            reader,
            writer,
            sn,
            &|pw| {
                pw.bytes(pid::KEY_HASH, &key)?;
                pw.bytes(pid::STATUS_INFO, &status.to_be_bytes())
            },
            payload,
        )
    }
}
