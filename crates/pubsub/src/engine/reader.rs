//! A stateful reader (§8.4.10): one proxy per matched writer with its
//! reorder window and fragment reassembly, the reader cache samples are taken
//! from, and the reader side of the reliability protocol: ACKNACK in answer
//! to HEARTBEAT, GAPs skipped, NACK_FRAG for missing fragments. Delivery is
//! in sequence-number order per writer.

use super::guard::{sn_plausible, CountGuard, CountVerdict, JumpGuard, SN_MAX, SN_SLACK};
use super::instances::{Deliver, KeyOf, ReaderCache};
use super::slots::{SampleMeta, SnRing};
use super::tx::{Ctx, Sender};
use crate::budget::{BudgetStats, ClockFn, ClockSync};
use crate::priority::TxMark;
use crate::qos::{Durability, History, Qos, Reliability, INFINITE_NS};
use crate::wire::plist::pid;
use crate::wire::Addr;
use crate::wire::{BitSet256, Data, DataFrag, Gap, Guid, GuidPrefix, Heartbeat, HeartbeatFrag, ParamList, SequenceNumber, Time, MAX_SET_BITS};

/// A hole already NACKed is NACKed again in answer to a final heartbeat
/// only after this long (a retransmission takes about a round trip).
const NACK_INTERVAL_NS: u64 = 2_000_000;

/// Largest number of fragments of one sample a reader reassembles.
pub const MAX_FRAGMENTS: u32 = 4096;

/// Room a serialized sample takes beyond the size the application counts:
/// [`Config::max_sample_size`](super::Config::max_sample_size) bounds the
/// sample (what `--size` and ddsperf count), and its serialized form adds
/// the 4-byte encapsulation header and the type's own length fields and
/// padding. Without it a sample of exactly the bound never completes:
/// ddsperf's `KeyedSeq` of size 1 MiB is 1,048,580 bytes serialized, and
/// Fast DDS's fragments of it were refused one by one, forever.
pub const SERIALIZED_HEADROOM: usize = 4096;

/// Fragment reassembly of one sample.
#[derive(Debug)]
pub(crate) struct Reassembly {
    active: bool,
    sn: i64,
    sample_size: usize,
    frag_size: usize,
    have: [u64; (MAX_FRAGMENTS / 64) as usize],
    nhave: u32,
    meta: SampleMeta,
    buf: Vec<u8>,
}

impl Reassembly {
    fn new(max_sample: usize) -> Reassembly {
        Reassembly {
            active: false,
            sn: 0,
            sample_size: 0,
            frag_size: 0,
            have: [0; (MAX_FRAGMENTS / 64) as usize],
            nhave: 0,
            meta: SampleMeta::default(),
            buf: vec![0; max_sample],
        }
    }
    fn total(&self) -> u32 {
        self.sample_size.div_ceil(self.frag_size.max(1)) as u32
    }
    fn has(&self, f: u32) -> bool {
        let i = f as usize - 1;
        self.have[i / 64] & (1 << (i % 64)) != 0
    }
    fn mark(&mut self, f: u32) {
        let i = f as usize - 1;
        if self.have[i / 64] & (1 << (i % 64)) == 0 {
            self.have[i / 64] |= 1 << (i % 64);
            self.nhave += 1;
        }
    }
}

/// A matched writer.
#[derive(Debug)]
pub(crate) struct WriterProxy {
    pub guid: Guid,
    pub addr: Addr,
    pub reliable: bool,
    /// What our ACKNACKs and NACK_FRAGs to it carry: its announced priority's mark.
    pub mark: TxMark,
    /// Whether its clock agrees with ours (its samples' latencies are judged).
    pub clock: ClockSync,
    /// The budget its samples are judged against, ns (its offered
    /// LATENCY_BUDGET, else the reader's; 0: none).
    pub budget_ns: i64,
    synced: bool,
    pub next_sn: i64,
    window: SnRing,
    hb_count: CountGuard,
    hbfrag_count: CountGuard,
    /// The lastSN of the newest heartbeat (a forged one is overwritten by the next real one).
    hb_last: i64,
    /// Highest sequence number of a sample taken in (delivered or held in the window).
    data_high: i64,
    /// Evidence for a jump far past what the writer is known to have reached.
    ahead: JumpGuard,
    /// Evidence that our state ran ahead of the writer (heartbeats, samples).
    behind_hb: JumpGuard,
    behind_data: JumpGuard,
    /// Samples the last skip counted lost, and where that skip started:
    /// undone when the skip proves forged (the writer's own traffic says it
    /// never got that far).
    suspect_lost: u64,
    skip_from: i64,
    /// Highest sequence number delivered: a sample at or below it is never counted lost.
    delivered_high: i64,
    /// Highest sequence number NACKed, and when (NACK rate limit).
    nacked_high: i64,
    nacked_ns: u64,
    acknack_count: i32,
    nackfrag_count: i32,
    frag: Reassembly,
    /// Samples the writer no longer has, or best-effort samples that never came.
    pub lost: u64,
    pub received: u64,
    pub last_seen_ns: u64,
    /// A heartbeat of this writer was taken (before it, its firstSN says
    /// where our stream starts, not what we lost).
    heard_hb: bool,
    /// A volatile reader's proxy of a writer that keeps history for late
    /// joiners (transient-local or more): the stream starts after its
    /// first heartbeat's lastSN, so the history the writer sends on (to a
    /// transient-local reader of ours, readerId ENTITYID_UNKNOWN as
    /// CycloneDDS resends) is not taken.
    skip_history: bool,
}

/// How [`ReaderCore::skip_to`] counts what it skips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    /// Gone from the writer's history while we waited: lost.
    Lost,
    /// Declared irrelevant by a GAP: `gap_skipped`.
    Gap,
    /// Written and dropped from the history before we matched (a
    /// transient-local reader's first heartbeat): not counted.
    BeforeUs,
}

impl WriterProxy {
    /// The highest sequence number this writer is known to have reached.
    fn known_high(&self) -> i64 {
        self.data_high.max(self.hb_last).max(self.next_sn - 1)
    }
    /// The highest sequence number a claim may name and be applied at once.
    fn bound(&self) -> i64 {
        // Not from heartbeats: a forged heartbeat within the bound must not
        // widen it for the next.
        self.data_high.max(self.next_sn - 1).saturating_add(SN_SLACK)
    }
    /// `n` samples skipped from `from` on: lost, once the writer's next
    /// sample in order confirms the skip ([`commit_lost`](Self::commit_lost));
    /// a skip a forged message caused is never confirmed (the real samples
    /// all look old until we resynchronise) and so never counted.
    fn count_lost(&mut self, from: i64, n: u64) {
        if self.suspect_lost == 0 {
            self.skip_from = from;
        }
        // What was delivered before (and is skipped again after we were
        // pulled back, e.g. by a replayed heartbeat) was not lost.
        let end = from.saturating_add(n as i64);
        let from = from.max(self.delivered_high + 1);
        self.suspect_lost += (end - from).max(0) as u64;
    }
    /// A real sample arrived in order after a skip: the skip was the writer's.
    fn commit_lost(&mut self, ctx: &mut Ctx<'_>) {
        if self.suspect_lost > 0 {
            self.lost += self.suspect_lost;
            ctx.counters.data_lost += self.suspect_lost;
            self.suspect_lost = 0;
            self.skip_from = 0;
        }
    }
    /// Our state ran ahead of what the writer sent (a forged HEARTBEAT, GAP
    /// or DATA moved it): expect `next` again, forget the reorder window, and
    /// take back the loss the forged skip counted.
    fn resync(&mut self, ctx: &mut Ctx<'_>, next: i64) {
        self.suspect_lost = 0;
        self.skip_from = 0;
        self.window.clear_all();
        self.next_sn = next.max(1);
        self.data_high = self.next_sn - 1;
        self.hb_last = self.hb_last.min(self.data_high);
        self.nacked_high = 0;
        self.frag.active = false;
        self.ahead.clear();
        self.behind_hb.clear();
        self.behind_data.clear();
        ctx.counters.resyncs += 1;
    }
}

/// Counts a claim refused as implausible.
fn implausible(ctx: &mut Ctx<'_>, n: &mut u64) {
    *n += 1;
    ctx.counters.implausible += 1;
}

/// A local reader (user or SEDP built-in).
pub(crate) struct ReaderCore {
    pub guid: Guid,
    pub topic: String,
    pub type_name: String,
    pub qos: Qos,
    /// The samples waiting to be taken, and the instances they belong to.
    pub cache: ReaderCache,
    keyed: bool,
    /// Reads a sample's key hash from its payload when the writer sent none inline.
    key_of: Option<KeyOf>,
    pub proxies: Vec<WriterProxy>,
    window: usize,
    max_sample: usize,
    slot_size: usize,
    pub last_sample_ns: u64,
    pub deadline_missed: u64,
    /// Samples of a keyed topic whose key hash came inline (PID_KEY_HASH),
    /// not computed here from the payload.
    pub key_hashes_inline: u64,
    deadline_checked_ns: u64,
    /// Samples refused because a KEEP_ALL cache was full (the writer resends them later).
    pub rejected: u64,
    pub slot_growths: u64,
    /// A sample was refused because the KEEP_ALL cache was full.
    pub blocked: bool,
    /// DATA, HEARTBEAT or GAP refused as implausible (sequence numbers the
    /// writer cannot have sent, inverted ranges).
    pub implausible: u64,
    /// Room came back: send ACKNACKs at the next timeout.
    pub ack_due: bool,
    /// Samples taken that did not deserialize as the reader's type.
    pub undecodable: u64,
    /// Deleted: what stays in its table slot until a new reader takes it
    /// ([`tombstone`](Self::tombstone)).
    pub deleted: bool,
    /// Latency-budget accounting ([`crate::budget`]).
    pub budget: BudgetStats,
    /// The clocks a sample's latency is read on.
    pub clock: ClockFn,
    /// An over-budget sample to report: writer, sn, latency, cause.
    pub budget_event: Option<(Guid, i64, u64, crate::budget::Cause)>,
    /// When the last over-budget event was reported (monotonic ns), and how far apart they are.
    last_budget_event_ns: u64,
    pub budget_event_interval_ns: u64,
}

impl ReaderCore {
    pub fn new(
        guid: Guid,
        topic: &str,
        type_name: &str,
        (keyed, key_of): (bool, Option<KeyOf>),
        qos: Qos,
        slot_size: usize,
        window: usize,
        max_sample: usize,
        now: u64,
    ) -> ReaderCore {
        ReaderCore {
            guid,
            topic: topic.to_string(),
            type_name: type_name.to_string(),
            cache: ReaderCache::new(&qos, keyed, slot_size),
            keyed,
            key_of,
            qos,
            proxies: Vec::new(),
            window: window.clamp(1, MAX_SET_BITS as usize),
            max_sample,
            slot_size,
            last_sample_ns: now,
            deadline_missed: 0,
            key_hashes_inline: 0,
            deadline_checked_ns: now,
            rejected: 0,
            slot_growths: 0,
            blocked: false,
            implausible: 0,
            ack_due: false,
            undecodable: 0,
            deleted: false,
            budget: BudgetStats::default(),
            clock: crate::budget::system_clocks,
            budget_event: None,
            last_budget_event_ns: 0,
            budget_event_interval_ns: 0,
        }
    }

    /// What stays of a deleted reader in its table slot: its GUID, no
    /// topic, no proxies, a cache of one small slot.
    pub fn tombstone(guid: Guid) -> ReaderCore {
        let mut r = ReaderCore::new(guid, "", "", (false, None), Qos::best_effort(1), 16, 1, 16, 0);
        r.deleted = true;
        r
    }

    /// How proxy `g`'s samples are judged: whether its clock agrees with
    /// ours and its offered budget (0: use the reader's own).
    pub fn set_budget(&mut self, g: Guid, clock: ClockSync, offered_ns: i64) {
        let own = self.qos.latency_budget_ns;
        for p in self.proxies.iter_mut().filter(|p| p.guid == g) {
            p.clock = clock;
            p.budget_ns = if offered_ns > 0 { offered_ns } else { own };
        }
    }

    /// Writer `g` keeps history for late joiners (its durability is
    /// transient-local or more): a volatile reader takes none of it.
    pub fn set_writer_keeps_history(&mut self, g: Guid, durable: bool) {
        let volatile = !self.transient_local();
        for p in self.proxies.iter_mut().filter(|p| p.guid == g) {
            p.skip_history = durable && volatile && p.reliable;
        }
    }

    /// Judges a sample proxy `i` delivered against its budget ([`crate::budget::judge`]);
    /// `repaired`: it was NACKed or waited for a repair. Reads the clocks
    /// only for samples that can be judged; allocates nothing.
    fn account(&mut self, i: usize, meta: &SampleMeta, repaired: bool) {
        let p = &self.proxies[i];
        let (clock, budget_ns, writer) = (p.clock, p.budget_ns, p.guid);
        let source = meta.source_ts.filter(|t| *t != Time::INVALID).map(Time::to_nanos);
        let at = if source.is_some() && clock.judges() { (self.clock)() } else { crate::budget::Clocks::default() };
        let v = crate::budget::judge(source, clock, budget_ns, at, meta.reception_ns, repaired);
        self.budget.clock = clock;
        self.budget.budget_ns = budget_ns;
        self.budget.count(v);
        if let crate::budget::Verdict::Over { latency_ns, cause } = v {
            if self.budget_event.is_none() && (self.last_budget_event_ns == 0 || at.mono_ns >= self.last_budget_event_ns.saturating_add(self.budget_event_interval_ns)) {
                self.budget_event = Some((writer, meta.sn, latency_ns, cause));
                self.last_budget_event_ns = at.mono_ns.max(1);
            }
        }
    }

    fn transient_local(&self) -> bool {
        self.qos.durability >= Durability::TransientLocal
    }

    /// A new matched writer; a reliable one gets a pre-emptive ACKNACK asking for its HEARTBEAT.
    pub fn add_proxy(&mut self, ctx: &mut Ctx<'_>, now: u64, guid: Guid, addr: Addr, reliable: bool, mark: TxMark) {
        if self.proxies.iter().any(|p| p.guid == guid) {
            return;
        }
        let tl = self.transient_local();
        self.proxies.push(WriterProxy {
            guid,
            addr,
            reliable,
            mark,
            clock: ClockSync::Unsynchronised,
            budget_ns: self.qos.latency_budget_ns,
            synced: tl,
            next_sn: 1,
            window: SnRing::new(if reliable { self.window } else { 1 }, self.slot_size),
            hb_count: CountGuard::new(),
            hbfrag_count: CountGuard::new(),
            hb_last: 0,
            data_high: 0,
            ahead: JumpGuard::default(),
            behind_hb: JumpGuard::default(),
            behind_data: JumpGuard::default(),
            suspect_lost: 0,
            skip_from: 0,
            delivered_high: 0,
            nacked_high: 0,
            nacked_ns: 0,
            acknack_count: 0,
            nackfrag_count: 0,
            frag: Reassembly::new(self.max_sample.min(1 << 20).max(self.slot_size)),
            lost: 0,
            received: 0,
            last_seen_ns: now,
            heard_hb: false,
            skip_history: false,
        });
        if reliable {
            let i = self.proxies.len() - 1;
            self.send_acknack(ctx, i, &BitSet256::new(0), false);
        }
    }

    /// Drops the proxies of writers for which `gone` is true.
    /// Instances they were the last writers of have no writers now.
    pub fn remove_proxies(&mut self, gone: impl Fn(&Guid) -> bool) -> usize {
        let before = self.proxies.len();
        for p in self.proxies.iter().filter(|p| gone(&p.guid)) {
            self.cache.writer_gone(&p.guid);
        }
        self.proxies.retain(|p| !gone(&p.guid));
        before - self.proxies.len()
    }

    fn find(&self, src: GuidPrefix, writer: crate::wire::EntityId) -> Option<usize> {
        self.proxies.iter().position(|p| p.guid.prefix == src && p.guid.entity == writer)
    }

    fn send_acknack(&mut self, ctx: &mut Ctx<'_>, i: usize, missing: &BitSet256, final_flag: bool) {
        let p = &mut self.proxies[i];
        p.acknack_count = p.acknack_count.wrapping_add(1).max(1);
        let (count, base, writer, reader) = (p.acknack_count, p.next_sn.max(1), p.guid.entity, self.guid.entity);
        ctx.mark = p.mark;
        let mut s = Sender::new(ctx, p.addr, Some(p.guid.prefix));
        let _ = s.push(|b| b.acknack(reader, writer, SequenceNumber(base), missing, count, final_flag));
        s.ctx.counters.acknacks_sent += 1;
    }

    /// Offers sample `meta.sn` from proxy `i`; in order it goes to the cache,
    /// ahead of order into the reorder window.
    fn accept(&mut self, ctx: &mut Ctx<'_>, now: u64, i: usize, mut meta: SampleMeta, payload: &[u8]) {
        if self.keyed {
            if meta.key_hash.is_some() {
                self.key_hashes_inline += 1;
            } else if !payload.is_empty() {
                // CycloneDDS sends no key hash unless configured to: the key is in
                // the payload (a sample, or for dispose/unregister the key alone).
                meta.key_hash = self.key_of.and_then(|f| f(payload, !meta.valid_data));
            }
        }
        let p = &mut self.proxies[i];
        p.last_seen_ns = now;
        let sn = meta.sn;
        // RTPS sequence numbers start at 1 and stop at SN_MAX here; one far
        // past what the writer is known to have reached is a corruption
        // unless the next claims agree.
        if !sn_plausible(sn) || (p.synced && sn > p.bound() && !p.ahead.confirm(sn, sn)) {
            implausible(ctx, &mut self.implausible);
            return;
        }
        if p.synced && sn > p.bound() {
            // Confirmed: the writer has reached `sn` (its next heartbeat moves us there).
            p.data_high = sn;
        }
        if p.synced && sn < p.next_sn {
            // Old. A few in a row, rising, from well before what we expect
            // (the writer resends nothing that old to a reader in step with
            // it): our expectation was forged; take the writer's word.
            if p.reliable && p.suspect_lost > 0 && sn >= p.skip_from {
                // A sample the last skip gave up on: the writer still has
                // it, so the skip was not the writer's (a forged or corrupted
                // heartbeat). Expect again from where the skip started.
                let from = p.skip_from;
                p.resync(ctx, from);
            } else if !p.reliable && p.behind_data.confirm(sn, sn) {
                // Best effort only: a reliable writer resends ranges of old
                // samples on its own (after a lost ACKNACK), so there only its
                // heartbeats say that our expectation ran ahead of it.
                let from = if p.skip_from > 0 && p.skip_from <= sn { p.skip_from } else { sn };
                let honest_gap = (sn - from) as u64;
                p.resync(ctx, from);
                if !p.reliable && honest_gap > 0 {
                    // Best effort: what came while we waited is gone for good.
                    p.lost += honest_gap;
                    ctx.counters.data_lost += honest_gap;
                    p.next_sn = sn;
                }
            } else {
                ctx.counters.data_duplicate += 1;
                return;
            }
        } else if p.synced {
            p.behind_data.clear();
        }
        if !p.synced {
            if p.reliable {
                // Where this writer's stream starts for us is what its first
                // HEARTBEAT says (samples written before it matched us come as
                // GAPs): hold the sample until then.
                if p.window.get(sn).is_none() && p.window.slot_for(sn).store(meta, payload) {
                    self.slot_growths += 1;
                }
                return;
            }
            p.next_sn = sn;
            p.synced = true;
        }
        if sn < p.next_sn {
            ctx.counters.data_duplicate += 1;
            return;
        }
        if !p.reliable {
            let skipped = (sn - p.next_sn) as u64;
            if let Deliver::Ok | Deliver::Refused = self.cache.deliver(meta, payload) {
                if skipped > 0 {
                    let from = p.next_sn;
                    p.count_lost(from, skipped);
                } else {
                    p.commit_lost(ctx);
                }
                p.data_high = p.data_high.max(sn);
                p.delivered_high = p.delivered_high.max(sn);
                p.next_sn = sn + 1;
                p.received += 1;
                self.last_sample_ns = now;
                self.account(i, &meta, false);
            } else {
                self.rejected += 1;
            }
            return;
        }
        if sn < p.next_sn + p.window.capacity() as i64 {
            p.data_high = p.data_high.max(sn);
        }
        if sn == p.next_sn {
            match self.cache.deliver(meta, payload) {
                Deliver::Ok | Deliver::Refused => {
                    // A real sample in order: the last skip stands.
                    p.commit_lost(ctx);
                    p.delivered_high = p.delivered_high.max(sn);
                    p.next_sn += 1;
                    p.received += 1;
                    // Asked for again (NACKed): it came as a retransmission.
                    let repaired = sn <= p.nacked_high;
                    self.last_sample_ns = now;
                    self.account(i, &meta, repaired);
                    self.drain(i, now);
                }
                Deliver::Full => {
                    // Keep it in the window: it is delivered when the
                    // application makes room, without a retransmission.
                    self.rejected += 1;
                    self.blocked = true;
                    if p.window.get(sn).is_none() && p.window.slot_for(sn).store(meta, payload) {
                        self.slot_growths += 1;
                    }
                }
            }
        } else if sn < p.next_sn + p.window.capacity() as i64 {
            if p.window.get(sn).is_none() {
                if p.window.slot_for(sn).store(meta, payload) {
                    self.slot_growths += 1;
                }
            } else {
                ctx.counters.data_duplicate += 1;
            }
        } else {
            ctx.counters.data_out_of_window += 1;
        }
    }

    /// Moves what became in-order from the reorder window to the cache.
    fn drain(&mut self, i: usize, now: u64) {
        loop {
            let p = &mut self.proxies[i];
            let sn = p.next_sn;
            let Some(slot) = p.window.get(sn) else { return };
            if slot.meta.irrelevant {
                p.window.clear(sn);
                p.next_sn += 1;
                continue;
            }
            let meta = slot.meta;
            match self.cache.deliver(meta, slot.payload()) {
                Deliver::Ok | Deliver::Refused => {
                    p.window.clear(sn);
                    p.delivered_high = p.delivered_high.max(sn);
                    p.next_sn += 1;
                    p.received += 1;
                    self.last_sample_ns = now;
                    // It waited in the window for an earlier sample's repair.
                    self.account(i, &meta, true);
                }
                Deliver::Full => {
                    self.rejected += 1;
                    self.blocked = true;
                    return;
                }
            }
        }
    }

    /// Skips `[from, to)` as far as this proxy is concerned: present samples
    /// in the window are delivered, the rest counted as `lost` (or not, for a GAP).
    fn skip_to(&mut self, ctx: &mut Ctx<'_>, i: usize, now: u64, to: i64, how: Skip) {
        let p = &mut self.proxies[i];
        if to <= p.next_sn {
            return;
        }
        let span = to - p.next_sn;
        let cap = p.window.capacity() as i64;
        let mut present = 0i64;
        // Only the window can hold anything: look at most `cap` numbers.
        for sn in p.next_sn..p.next_sn + span.min(cap) {
            if let Some(s) = p.window.get(sn) {
                if !s.meta.irrelevant {
                    present += 1;
                }
            }
        }
        if present == 0 {
            for sn in p.next_sn..p.next_sn + span.min(cap) {
                p.window.clear(sn);
            }
            if how == Skip::Lost {
                let from = p.next_sn;
                p.count_lost(from, span as u64);
            } else {
                ctx.counters.gap_skipped += if how == Skip::Gap { span as u64 } else { 0 };
            }
            p.next_sn = to;
            self.drain(i, now);
        } else {
            // Walk the window in order: deliver what is there, mark the holes irrelevant.
            for sn in p.next_sn..p.next_sn + span.min(cap) {
                if p.window.get(sn).is_none() {
                    let slot = p.window.slot_for(sn);
                    slot.meta = SampleMeta { sn, irrelevant: true, ..Default::default() };
                    slot.len = 0;
                    if how == Skip::Lost {
                        p.count_lost(sn, 1);
                    } else {
                        ctx.counters.gap_skipped += u64::from(how == Skip::Gap);
                    }
                }
            }
            let beyond = span - span.min(cap);
            if beyond > 0 {
                if how == Skip::Lost {
                    let from = p.next_sn + span.min(cap);
                    p.count_lost(from, beyond as u64);
                } else {
                    ctx.counters.gap_skipped += if how == Skip::Gap { beyond as u64 } else { 0 };
                }
            }
            let walked_to = self.proxies[i].next_sn + span.min(cap);
            self.drain(i, now);
            let p = &mut self.proxies[i];
            if p.next_sn >= walked_to {
                p.next_sn = p.next_sn.max(to);
                self.drain(i, now);
            }
            // Otherwise the cache is full: what could not be delivered waits there.
        }
    }

    /// DATA from a matched writer. Returns false when not matched.
    pub fn on_data(&mut self, ctx: &mut Ctx<'_>, now: u64, src: GuidPrefix, ts: Option<Time>, d: &Data<'_>) -> bool {
        let Some(i) = self.find(src, d.writer_id) else {
            return false;
        };
        let (status_info, key_hash) = inline_info(d.inline_qos);
        let meta = SampleMeta {
            sn: d.writer_sn.0,
            writer: self.proxies[i].guid,
            source_ts: ts,
            reception_ns: now,
            status_info,
            key_hash,
            valid_data: d.payload.is_some() && !d.key_flag,
            irrelevant: false,
        };
        self.accept(ctx, now, i, meta, d.payload.unwrap_or(&[]));
        true
    }

    /// DATA_FRAG from a matched writer: reassembled, then accepted as a whole sample.
    pub fn on_data_frag(&mut self, ctx: &mut Ctx<'_>, now: u64, src: GuidPrefix, ts: Option<Time>, f: &DataFrag<'_>) -> bool {
        let Some(i) = self.find(src, f.writer_id) else {
            return false;
        };
        let max = self.max_sample;
        let p = &mut self.proxies[i];
        p.last_seen_ns = now;
        let sn = f.writer_sn.0;
        if !sn_plausible(sn) || (p.synced && sn > p.bound()) {
            // A jump this far is confirmed by whole samples (DATA) and heartbeats, not fragments.
            implausible(ctx, &mut self.implausible);
            return true;
        }
        if p.synced && sn < p.next_sn {
            ctx.counters.data_duplicate += 1;
            return true;
        }
        if f.sample_size as usize > max.saturating_add(SERIALIZED_HEADROOM) || f.total_fragments() > MAX_FRAGMENTS {
            ctx.counters.frag_rejected += 1;
            return true;
        }
        let r = &mut p.frag;
        if !r.active || r.sn != sn || r.sample_size != f.sample_size as usize || r.frag_size != f.frag_size as usize {
            if r.active {
                ctx.counters.frag_abandoned += 1;
            }
            r.active = true;
            r.sn = sn;
            r.sample_size = f.sample_size as usize;
            r.frag_size = f.frag_size as usize;
            r.have = [0; (MAX_FRAGMENTS / 64) as usize];
            r.nhave = 0;
            let (status_info, key_hash) = inline_info(f.inline_qos);
            r.meta = SampleMeta { sn, writer: p.guid, source_ts: ts, reception_ns: now, status_info, key_hash, valid_data: !f.key_flag, irrelevant: false };
            if r.buf.len() < r.sample_size {
                r.buf.resize(r.sample_size, 0);
                self.slot_growths += 1;
            }
        }
        if r.meta.key_hash.is_none() && f.inline_qos.is_some() {
            // The key hash rides on the first fragment, which may come after others.
            let (status_info, key_hash) = inline_info(f.inline_qos);
            r.meta.key_hash = key_hash;
            r.meta.status_info |= status_info;
        }
        let off = f.offset();
        let end = off + f.payload.len();
        if end > r.sample_size {
            ctx.counters.frag_rejected += 1;
            return true;
        }
        r.buf[off..end].copy_from_slice(f.payload);
        for k in 0..f.frags_in_submessage as u32 {
            let num = f.frag_start + k;
            if num <= r.total() {
                r.mark(num);
            }
        }
        ctx.counters.frags_received += 1;
        if r.nhave == r.total() {
            r.active = false;
            let meta = SampleMeta { reception_ns: now, ..r.meta };
            let n = r.sample_size;
            let buf = std::mem::take(&mut r.buf);
            self.accept(ctx, now, i, meta, &buf[..n]);
            self.proxies[i].frag.buf = buf;
        }
        true
    }

    /// HEARTBEAT from a matched writer: answer with what is missing.
    pub fn on_heartbeat(&mut self, ctx: &mut Ctx<'_>, now: u64, src: GuidPrefix, hb: &Heartbeat) -> bool {
        let Some(i) = self.find(src, hb.writer_id) else {
            return false;
        };
        let p = &mut self.proxies[i];
        p.last_seen_ns = now;
        if !p.reliable {
            return true;
        }
        let (first, last) = (hb.first_sn.0, hb.last_sn.0);
        // RTPS 8.3.7.5: firstSN >= 1, lastSN >= 0, lastSN >= firstSN - 1; no
        // number above SN_MAX (so firstSN <= SN_MAX + 1); and
        // no further past what the writer is known to have reached than a
        // slack, unless the next heartbeats agree (a real loss that long).
        // A real jump that far is confirmed by the writer's samples (DATA),
        // never by heartbeats alone: a forged heartbeat repeated with rising
        // counts would otherwise carry our expectations with it.
        if first < 1 || !(0..=SN_MAX).contains(&last) || last < first - 1 || (p.synced && last > p.bound()) {
            implausible(ctx, &mut self.implausible);
            return true;
        }
        if p.synced && last < p.next_sn - 1 {
            // The writer says it never wrote what we think we have: this
            // heartbeat is old or forged, or our state is. Rising heartbeats
            // that keep saying so are the writer's word: resynchronise.
            // Only heartbeats newer than any before count (a replayed old
            // heartbeat says the same and must not pull us back).
            let fresh = p.hb_count.check(hb.count) != CountVerdict::Stale;
            if !fresh || !p.behind_hb.confirm(last, hb.count as i64) {
                ctx.counters.heartbeats_stale += 1;
                return true;
            }
            let from = if p.skip_from > 0 { p.skip_from.clamp(first, last + 1) } else { last + 1 };
            p.resync(ctx, from);
            p.hb_count.adopt(hb.count);
        } else {
            p.behind_hb.clear();
            match p.hb_count.check(hb.count) {
                CountVerdict::Fresh => {}
                CountVerdict::Stale => {
                    ctx.counters.heartbeats_stale += 1;
                    return true;
                }
                CountVerdict::Resynced => ctx.counters.resyncs += 1,
            }
        }
        if !p.synced {
            // The stream starts at the oldest sample the writer still has;
            // what it wrote before it matched us it answers with GAPs
            // (volatile), so nothing written after the match is skipped, even
            // when its data raced ahead of our discovery of it.
            p.next_sn = hb.first_sn.0;
            if p.skip_history && last >= p.next_sn {
                // What the writer held when it first told us is history:
                // not for a volatile reader. Drop what of it waits.
                let cap = p.window.capacity() as i64;
                for sn in (last + 1 - cap).max(p.next_sn)..=last {
                    p.window.clear(sn);
                }
                p.next_sn = last + 1;
            }
            p.synced = true;
            self.drain(i, now);
        }
        let p = &mut self.proxies[i];
        if hb.first_sn.0 > p.next_sn {
            // A transient-local reader starts at 1; what the writer no
            // longer held when we met it (its first heartbeat's firstSN)
            // was never ours to lose, as CycloneDDS counts it: not at all.
            let how = if p.heard_hb || p.delivered_high > 0 { Skip::Lost } else { Skip::BeforeUs };
            self.skip_to(ctx, i, now, hb.first_sn.0, how);
        }
        let p = &mut self.proxies[i];
        p.hb_last = last;
        p.heard_hb = true;
        let missing = self.missing(i);
        // A stream of final heartbeats (one per DATA) must not draw a NACK
        // each for the same hole: re-ask at most every NACK_INTERVAL_NS,
        // unless the hole is new or the writer asked (non-final).
        let p = &self.proxies[i];
        let high = if missing.num_bits > 0 { p.next_sn + missing.num_bits as i64 - 1 } else { 0 };
        let fresh = high > p.nacked_high || now >= p.nacked_ns + NACK_INTERVAL_NS;
        if !hb.final_flag || (missing.count() > 0 && fresh) {
            if missing.count() > 0 {
                let p = &mut self.proxies[i];
                p.nacked_high = p.nacked_high.max(high);
                p.nacked_ns = now;
            }
            self.send_acknack(ctx, i, &missing, true);
        }
        true
    }

    /// What proxy `i` should be asked to resend: holes from the next expected
    /// sample up to the last one announced, within what the reorder window
    /// can hold; nothing while a KEEP_ALL cache is full (flow control: the
    /// writer keeps its samples, the reader asks again when it has room).
    fn missing(&self, i: usize) -> BitSet256 {
        let p = &self.proxies[i];
        let base = p.next_sn;
        if self.qos.history == History::KeepAll && self.cache.is_full() {
            return BitSet256::new(0);
        }
        let upto = p.hb_last.min(base + p.window.capacity().min(MAX_SET_BITS as usize) as i64 - 1);
        let mut m = BitSet256::new(if upto >= base { (upto - base + 1) as u32 } else { 0 });
        for sn in base..=upto {
            if p.window.get(sn).is_none() {
                m.set((sn - base) as u32);
            }
        }
        // Trim trailing zero bits so the set says exactly what is wanted.
        while m.num_bits > 0 && !m.get(m.num_bits - 1) {
            m.num_bits -= 1;
        }
        m
    }

    /// The application made room in a cache that had refused samples:
    /// deliver what waits in the reorder windows.
    pub fn unblock(&mut self) {
        self.blocked = false;
        let now = self.last_sample_ns;
        for i in 0..self.proxies.len() {
            self.drain(i, now);
        }
    }

    /// ACKNACKs to every reliable writer (after the cache had room again).
    pub fn send_acks(&mut self, ctx: &mut Ctx<'_>) {
        for i in 0..self.proxies.len() {
            if self.proxies[i].reliable && self.proxies[i].synced {
                let m = self.missing(i);
                self.send_acknack(ctx, i, &m, true);
            }
        }
    }

    /// GAP from a matched writer.
    pub fn on_gap(&mut self, ctx: &mut Ctx<'_>, now: u64, src: GuidPrefix, g: &Gap<'_>) -> bool {
        let Some(i) = self.find(src, g.writer_id) else {
            return false;
        };
        let p = &mut self.proxies[i];
        p.last_seen_ns = now;
        if !p.synced {
            // Not synchronised yet: the first HEARTBEAT decides where we start.
            return true;
        }
        let (start, list_base) = (g.gap_start.0, g.gap_list.base.0);
        // RTPS 8.3.7.4: gapStart >= 1, gapList.base >= gapStart (and at most
        // SN_MAX, so the list's numbers stay far from overflow). A GAP names
        // only samples the writer has reached (it answers a NACK, which asks
        // for no more than a heartbeat announced): what lies beyond is not
        // applied, and far beyond is a corruption.
        let known = p.known_high();
        if start < 1 || list_base < start || list_base > SN_MAX || list_base - 1 > p.bound() {
            implausible(ctx, &mut self.implausible);
            return true;
        }
        let list_base = list_base.min(known + 1);
        if start <= p.next_sn {
            self.skip_to(ctx, i, now, list_base, Skip::Gap);
        } else {
            let p = &mut self.proxies[i];
            let cap = p.window.capacity() as i64;
            for sn in start.max(p.next_sn)..list_base.min(p.next_sn + cap) {
                if p.window.get(sn).is_none() {
                    p.window.slot_for(sn).meta = SampleMeta { sn, irrelevant: true, ..Default::default() };
                }
            }
        }
        for sn in g.gap_list.iter() {
            let p = &mut self.proxies[i];
            let sn = sn.0;
            if sn > known {
                break;
            }
            if sn == p.next_sn {
                p.next_sn += 1;
                ctx.counters.gap_skipped += 1;
                self.drain(i, now);
            } else if sn > p.next_sn && sn < p.next_sn + p.window.capacity() as i64 && p.window.get(sn).is_none() {
                p.window.slot_for(sn).meta = SampleMeta { sn, irrelevant: true, ..Default::default() };
            }
        }
        self.drain(i, now);
        true
    }

    /// HEARTBEAT_FRAG: ask for the fragments of the sample still missing.
    pub fn on_heartbeat_frag(&mut self, ctx: &mut Ctx<'_>, now: u64, src: GuidPrefix, h: &HeartbeatFrag) -> bool {
        let Some(i) = self.find(src, h.writer_id) else {
            return false;
        };
        let p = &mut self.proxies[i];
        p.last_seen_ns = now;
        if !p.reliable {
            return true;
        }
        let sn = h.writer_sn.0;
        let last = h.last_fragment_num.min(MAX_FRAGMENTS);
        // A detpath writer paces its fragments: it sends the next window
        // once we confirm this one (a NACK_FRAG naming nothing missing
        // below `last + 1`). Other vendors' writers are not told: they do
        // not wait for it.
        let confirms = p.guid.prefix.0[..2] == crate::wire::VendorId::DETPATH.0;
        let have_all = p.synced && (sn < p.next_sn || p.window.get(sn).is_some_and(|s| !s.meta.irrelevant));
        if p.synced && sn < p.next_sn && !confirms {
            return true;
        }
        if !sn_plausible(sn) || (p.synced && sn > p.bound()) {
            implausible(ctx, &mut self.implausible);
            return true;
        }
        if p.hbfrag_count.check(h.count) == CountVerdict::Stale {
            return true;
        }
        let r = &p.frag;
        let (base, mut set) = if have_all {
            (last + 1, BitSet256::new(0))
        } else if r.active && r.sn == sn {
            let first_missing = (1..=last.min(r.total())).find(|&f| !r.has(f));
            let Some(b) = first_missing else {
                if confirms {
                    Self::send_nack_frag(ctx, p, self.guid.entity, sn, last + 1, &BitSet256::new(0));
                }
                return true;
            };
            let mut s = BitSet256::new((last - b + 1).min(MAX_SET_BITS));
            for f in b..b + s.num_bits {
                if f > r.total() || !r.has(f) {
                    s.set(f - b);
                }
            }
            (b, s)
        } else {
            let mut s = BitSet256::new(last.min(MAX_SET_BITS));
            for f in 0..s.num_bits {
                s.set(f);
            }
            (1, s)
        };
        while set.num_bits > 0 && !set.get(set.num_bits - 1) {
            set.num_bits -= 1;
        }
        if set.num_bits == 0 && !(have_all && confirms) {
            return true;
        }
        Self::send_nack_frag(ctx, p, self.guid.entity, sn, base, &set);
        true
    }

    /// NACK_FRAG to proxy `p` for sample `sn`: fragments below `base`
    /// received, those in `missing` (relative to `base`) wanted; an empty
    /// set confirms everything below `base` (counted).
    fn send_nack_frag(ctx: &mut Ctx<'_>, p: &mut WriterProxy, reader: crate::wire::EntityId, sn: i64, base: u32, missing: &BitSet256) {
        p.nackfrag_count = p.nackfrag_count.wrapping_add(1).max(1);
        let (count, writer) = (p.nackfrag_count, p.guid.entity);
        if missing.num_bits == 0 {
            ctx.counters.frag_confirms_sent += 1;
        }
        ctx.mark = p.mark;
        let mut s = Sender::new(ctx, p.addr, Some(p.guid.prefix));
        let _ = s.push(|b| b.nack_frag(reader, writer, SequenceNumber(sn), base, missing, count));
    }

    /// Periodic work: the requested deadline.
    pub fn poll(&mut self, now: u64) {
        if self.qos.deadline_ns != INFINITE_NS && !self.proxies.is_empty() {
            let since = self.last_sample_ns.max(self.deadline_checked_ns);
            if now >= since + self.qos.deadline_ns as u64 {
                self.deadline_missed += 1;
                self.deadline_checked_ns = now;
            }
        }
    }

    /// When the next deadline check is due.
    pub fn next_timeout(&self) -> u64 {
        if self.qos.deadline_ns != INFINITE_NS && !self.proxies.is_empty() {
            self.last_sample_ns.max(self.deadline_checked_ns) + self.qos.deadline_ns as u64
        } else {
            u64::MAX
        }
    }

    /// Reliability as a flag.
    pub fn is_reliable(&self) -> bool {
        self.qos.reliability == Reliability::Reliable
    }

    /// Samples lost over all matched writers.
    pub fn lost(&self) -> u64 {
        self.proxies.iter().map(|p| p.lost).sum()
    }
}

/// The status info (disposed/unregistered bits) and key hash of a sample's
/// inline QoS; (0, None) without one. Malformed parameters end the scan.
pub(super) fn inline_info(qos: Option<ParamList<'_>>) -> (u32, Option<[u8; 16]>) {
    let Some(q) = qos else { return (0, None) };
    let mut status = 0;
    let mut key = None;
    for p in q.iter().map_while(|p| p.ok()) {
        match p.pid {
            pid::STATUS_INFO if p.value.len() >= 4 => status = u32::from_be_bytes([p.value[0], p.value[1], p.value[2], p.value[3]]),
            pid::KEY_HASH if p.value.len() >= 16 => {
                let mut k = [0u8; 16];
                k.copy_from_slice(&p.value[..16]);
                key = Some(k);
            }
            _ => {}
        }
    }
    (status, key)
}
