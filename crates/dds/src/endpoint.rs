//! Topics, writers and readers: typed ([`DataWriter`], [`DataReader`] of a
//! [`TopicType`]) and raw ([`RawWriter`], [`RawReader`]: serialized
//! payloads, encapsulation header included, as another serializer made
//! them: the seam the C and Python bindings use).

use crate::error::{Error, Result};
use crate::participant::{DomainParticipant, RawSample, Shared, State};
use crate::qos::Qos;
use detpath_pubsub::discovery::status_info;
use detpath_pubsub::driver::wall_ns;
use detpath_pubsub::budget::{BudgetStats, Cause, ClockSync, LatencyHistogram};
use detpath_pubsub::engine::{self, ReaderId, SampleInfo, WriterId};
use detpath_pubsub::types::TopicType;
use detpath_pubsub::wire::bytes::ByteWriter;
use detpath_pubsub::wire::cdr::write_payload;
use detpath_pubsub::wire::{CdrReader, Guid, Time, WireError, Xcdr};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

thread_local! {
    /// The key hash of the sample being written on this thread: writes run
    /// on the caller's thread under the engine's lock, and the engine asks
    /// the writer's key function for it during the call.
    static WRITING_KEY: Cell<Option<[u8; 16]>> = const { Cell::new(None) };
}

/// The writers' key function ([`engine::KeyOf`]): the key hash of the write in progress.
fn writing_key(_payload: &[u8], _key_only: bool) -> Option<[u8; 16]> {
    WRITING_KEY.with(Cell::get)
}

/// A topic: a name and a type. Matching with remote endpoints is by both names.
#[derive(Clone, Debug)]
pub struct Topic<T> {
    name: String,
    type_name: String,
    _type: PhantomData<fn() -> T>,
}

impl<T: TopicType> Topic<T> {
    /// The topic `name` of type `T` (announced as `T::TYPE_NAME`).
    pub fn new(_participant: &DomainParticipant, name: &str) -> Topic<T> {
        Topic { name: name.to_string(), type_name: T::TYPE_NAME.to_string(), _type: PhantomData }
    }
    /// The ROS 2 topic `ros_topic` (`/cmd_vel` or `cmd_vel`) of type `T`,
    /// under the names ROS 2 nodes use on DDS: `rt/cmd_vel` and, from
    /// `T::TYPE_NAME` (`geometry_msgs::msg::Twist` or `geometry_msgs/msg/Twist`),
    /// `geometry_msgs::msg::dds_::Twist_`. A name ROS would refuse is an
    /// error ([`Error::Ros2Name`]) saying why.
    pub fn ros2(_participant: &DomainParticipant, ros_topic: &str) -> Result<Topic<T>> {
        Ok(Topic { name: crate::ros2::topic_name(ros_topic)?, type_name: crate::ros2::type_name(T::TYPE_NAME)?, _type: PhantomData })
    }
    /// Its name on the wire.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its type's name on the wire.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }
}

/// Status of a writer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStatus {
    /// Readers matched now (PUBLICATION_MATCHED's current count).
    pub matched_subscriptions: usize,
    /// Remote readers of this topic and type not matched because their QoS does not fit.
    pub incompatible_qos: u64,
    /// Matched readers that went away.
    pub unmatched: u64,
    /// The engine's figures (written, unacknowledged, deadlines missed, ...).
    pub detail: engine::WriterStatus,
}

/// Status of a reader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReaderStatus {
    /// Writers matched now (SUBSCRIPTION_MATCHED's current count).
    pub matched_publications: usize,
    /// Samples lost (SAMPLE_LOST).
    pub lost: u64,
    /// Samples refused because a KEEP_ALL cache was full (SAMPLE_REJECTED).
    pub rejected: u64,
    /// Samples taken that did not deserialize as the reader's type (another
    /// layout under the same type name): counted, dropped.
    pub undecodable: u64,
    /// Remote writers of this topic and type not matched because their QoS does not fit.
    pub incompatible_qos: u64,
    /// Matched writers that went away.
    pub unmatched: u64,
    /// The engine's figures.
    pub detail: engine::ReaderStatus,
}

/// LATENCY_BUDGET status of a reader: every sample's one-way latency
/// (source timestamp to reception, on CLOCK_REALTIME) judged against the
/// budget, as DDS statuses go: totals, and what changed since the status
/// was last read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyBudgetStatus {
    /// The budget, ns (0: none; latencies are measured, nothing is over).
    pub budget_ns: i64,
    /// Whether the clocks agree: `SameHost` and `Synchronised` judge,
    /// `Unsynchronised` judges nothing (every sample is `unjudged`).
    pub clock: ClockSync,
    /// Samples within the budget.
    pub within: u64,
    /// Samples over the budget.
    pub over: u64,
    /// Samples over the budget since the status was last read
    /// ([`DataReader::latency_budget_status`] resets it).
    pub over_change: u64,
    /// Over-budget samples by cause.
    pub causes: Vec<(Cause, u64)>,
    /// Samples not judged (no source timestamp, or the clocks are not known to agree).
    pub unjudged: u64,
    /// Samples whose source timestamp was implausible (far future or past): not in the histogram.
    pub implausible: u64,
    /// The judged samples' latencies.
    pub histogram: LatencyHistogram,
}

impl LatencyBudgetStatus {
    fn from_stats(b: BudgetStats, seen_over: u64) -> LatencyBudgetStatus {
        LatencyBudgetStatus {
            budget_ns: b.budget_ns,
            clock: b.clock,
            within: b.within,
            over: b.over,
            over_change: b.over.saturating_sub(seen_over),
            causes: Cause::ALL.iter().map(|c| (*c, b.cause(*c))).collect(),
            unjudged: b.unjudged,
            implausible: b.implausible,
            histogram: b.histogram,
        }
    }
}

/// The reader's budget accounting, from the engine (which judges every
/// sample as it is delivered, against the writer's offered budget or else
/// the reader's).
fn reader_budget(st: &State, id: ReaderId) -> BudgetStats {
    st.p.reader_budget(id).clone()
}

/// The writing half shared by typed and raw writers.
struct WriterCore {
    shared: Arc<Shared>,
    id: WriterId,
    keyed: bool,
    limit: usize,
}

impl WriterCore {
    fn new(dp: &DomainParticipant, topic: &str, type_name: &str, keyed: bool, qos: &Qos) -> Result<WriterCore> {
        let q = qos.for_writer()?;
        let mut g = dp.shared.lock()?;
        let id = g.p.create_writer_keyed(topic, type_name, (keyed, Some(writing_key)), q, 256)?;
        Ok(WriterCore { shared: dp.shared.clone(), id, keyed, limit: qos.max_sample_size() })
    }

    /// Writes what `serialize` writes (encapsulation header included), with `key` as its instance.
    fn write(&self, key: Option<[u8; 16]>, serialize: &dyn Fn(&mut ByteWriter<'_>) -> std::result::Result<(), WireError>) -> Result<()> {
        let too_large = Cell::new(0usize);
        let limit = self.limit;
        let checked = |bw: &mut ByteWriter<'_>| {
            let start = bw.pos();
            serialize(bw)?;
            let n = bw.pos() - start;
            if n > limit {
                too_large.set(n);
                // Not BufferFull: the engine would grow its buffer and try again.
                return Err(WireError::BadLength);
            }
            Ok(())
        };
        let mut g = self.shared.lock()?;
        let st = &mut *g;
        WRITING_KEY.with(|k| k.set(if self.keyed { key } else { None }));
        let r = st.p.write_with(detpath::monotonic_ns(), &mut st.outbox, self.id, Some(Time::from_nanos(wall_ns())), &checked);
        WRITING_KEY.with(|k| k.set(None));
        match r {
            Ok(_) => Ok(()),
            Err(_) if too_large.get() > 0 => Err(Error::SampleTooLarge { size: too_large.get(), limit }),
            Err(e) => Err(e.into()),
        }
    }

    fn write_status(&self, key: [u8; 16], status: u32, serialized_key: &[u8]) -> Result<()> {
        let mut g = self.shared.lock()?;
        let st = &mut *g;
        st.p.write_status_with_key(detpath::monotonic_ns(), &mut st.outbox, self.id, Some(Time::from_nanos(wall_ns())), key, status, serialized_key)?;
        Ok(())
    }

    fn status(&self) -> Result<WriterStatus> {
        let g = self.shared.lock()?;
        let detail = g.p.writer_status(self.id);
        let t = g.tallies.get(&g.p.writer_guid(self.id)).copied().unwrap_or_default();
        Ok(WriterStatus { matched_subscriptions: detail.matched, incompatible_qos: t.incompatible_qos, unmatched: t.unmatched, detail })
    }

    /// Waits until every reliable reader acknowledged what was written, at most `timeout`.
    fn wait_for_acknowledgments(&self, timeout: Duration) -> Result<bool> {
        let end = Instant::now() + timeout;
        loop {
            if self.status()?.detail.unacknowledged <= 0 {
                return Ok(true);
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            let g = self.shared.lock()?;
            drop(self.shared.arrived.wait_timeout(g, left.min(Duration::from_millis(10))).unwrap_or_else(|e| e.into_inner()));
        }
    }
}

impl Drop for WriterCore {
    fn drop(&mut self) {
        if let Ok(mut g) = self.shared.lock() {
            g.p.delete_writer(self.id);
        }
    }
}

/// A writer of samples of `T`.
pub struct DataWriter<T: TopicType> {
    core: WriterCore,
    _type: PhantomData<fn(&T)>,
}

impl<T: TopicType> DataWriter<T> {
    /// A writer on `topic` with `qos` (unnamed policies: DDS's writer defaults, reliable).
    pub fn new(dp: &DomainParticipant, topic: &Topic<T>, qos: &Qos) -> Result<DataWriter<T>> {
        Ok(DataWriter { core: WriterCore::new(dp, topic.name(), topic.type_name(), T::KEYED, qos)?, _type: PhantomData })
    }
    /// Writes one sample (XCDR1, this host's byte order). A sample larger
    /// than the writer's `max_sample_size` is refused ([`Error::SampleTooLarge`]).
    pub fn write(&self, sample: &T) -> Result<()> {
        self.core.write(sample.key_hash(), &|bw| write_payload(bw, Xcdr::V1, |c| sample.serialize(c)).map(|_| ()))
    }
    /// Disposes the instance of `sample`'s key.
    pub fn dispose(&self, sample: &T) -> Result<()> {
        self.status_of(sample, status_info::DISPOSED)
    }
    /// Unregisters the instance of `sample`'s key.
    pub fn unregister(&self, sample: &T) -> Result<()> {
        self.status_of(sample, status_info::UNREGISTERED)
    }
    fn status_of(&self, sample: &T, status: u32) -> Result<()> {
        let mut buf = vec![0u8; detpath_pubsub::types::MAX_KEY_SIZE + 8];
        let n = if T::KEYED && T::KEY_MAX_SIZE != Some(0) {
            let mut bw = ByteWriter::new(&mut buf, true);
            write_payload(&mut bw, Xcdr::V1, |c| sample.serialize_key(c)).map_err(engine::WriteError::Serialize)?
        } else {
            0
        };
        self.core.write_status(sample.key_hash().unwrap_or_default(), status, &buf[..n])
    }
    /// Matched readers and the writer's figures.
    pub fn status(&self) -> Result<WriterStatus> {
        self.core.status()
    }
    /// Waits until every matched reliable reader acknowledged every sample
    /// written, at most `timeout`: false when the time ran out.
    pub fn wait_for_acknowledgments(&self, timeout: Duration) -> Result<bool> {
        self.core.wait_for_acknowledgments(timeout)
    }
}

/// A writer of serialized samples.
pub struct RawWriter {
    core: WriterCore,
}

/// Whether `payload` starts with a CDR/XCDR encapsulation header (RTPS §10.2).
fn has_encapsulation(payload: &[u8]) -> bool {
    payload.len() >= 4 && payload[0] == 0 && payload[1] <= 0x0b
}

impl RawWriter {
    /// Writes one serialized sample: `payload` starts with its 4-byte
    /// encapsulation header; `key_hash` names its instance (keyed topics;
    /// `None`: the one instance of zeros).
    pub fn write(&self, payload: &[u8], key_hash: Option<[u8; 16]>) -> Result<()> {
        if !has_encapsulation(payload) {
            return Err(Error::BadPayload(payload.len()));
        }
        if payload.len() > self.core.limit {
            return Err(Error::SampleTooLarge { size: payload.len(), limit: self.core.limit });
        }
        // The sample goes out padded to 4 bytes; the options' low two bits
        // say how many are padding (XTypes 7.6.3.1.2), as typed writers do.
        // A payload that already counts padding of its own goes as it is.
        let pad = if payload[3] & 3 == 0 { (4 - payload.len() % 4) % 4 } else { 0 };
        self.core.write(key_hash, &|bw| {
            if pad == 0 {
                return bw.bytes(payload);
            }
            bw.bytes(&payload[..3])?;
            bw.bytes(&[payload[3] | pad as u8])?;
            bw.bytes(&payload[4..])?;
            bw.bytes(&[0u8; 3][..pad])
        })
    }
    /// Disposes (`status` 1), unregisters (2) or both (3) the instance of
    /// `key_hash`; `serialized_key` (encapsulation header and the key fields;
    /// empty: none) lets peers that cannot invert a hashed key find it.
    pub fn write_status(&self, key_hash: [u8; 16], status: u32, serialized_key: &[u8]) -> Result<()> {
        if !serialized_key.is_empty() && !has_encapsulation(serialized_key) {
            return Err(Error::BadPayload(serialized_key.len()));
        }
        self.core.write_status(key_hash, status & 3, serialized_key)
    }
    /// Matched readers and the writer's figures.
    pub fn status(&self) -> Result<WriterStatus> {
        self.core.status()
    }
    /// See [`DataWriter::wait_for_acknowledgments`].
    pub fn wait_for_acknowledgments(&self, timeout: Duration) -> Result<bool> {
        self.core.wait_for_acknowledgments(timeout)
    }
}

/// The reading half shared by typed and raw readers. Samples `read` (and
/// not yet taken) wait in `read_buffers` of the shared state, so `read`
/// does not lose them to a later `take`.
struct ReaderCore {
    shared: Arc<Shared>,
    id: ReaderId,
    /// Over-budget samples the application has seen in a status read.
    seen_over: std::sync::atomic::AtomicU64,
}

/// How samples leave a reader.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Removed (what was read first, then what waits in the engine).
    Take,
    /// Left for a later take or read, now READ (what was read, then what waits).
    Read,
    /// Left, and only those no read returned before (DDS's NOT_READ), now READ.
    ReadUnread,
    /// Left, and their sample state with them (a condition looking);
    /// `unread`: only those no read returned before.
    Peek { unread: bool },
}

fn take_from(st: &mut State, id: ReaderId, n: usize, access: Access) -> Vec<RawSample> {
    let buffered = st.read_buffers.entry(id).or_default();
    let mut out: Vec<RawSample> = Vec::new();
    match access {
        Access::Take => {
            let k = n.min(buffered.len());
            out.extend(buffered.drain(..k).map(|(s, _)| s));
        }
        Access::Read => {
            for (s, read) in buffered.iter_mut().take(n) {
                *read = true;
                out.push(s.clone());
            }
        }
        Access::Peek { unread } => out.extend(buffered.iter().filter(|(_, read)| !(unread && *read)).take(n).map(|(s, _)| s.clone())),
        Access::ReadUnread => {
            for (s, read) in buffered.iter_mut().filter(|(_, read)| !*read).take(n) {
                *read = true;
                out.push(s.clone());
            }
        }
    }
    while out.len() < n {
        let Some(s) = st.p.take_raw(id, |info, payload| (payload.to_vec(), *info)) else { break };
        if access != Access::Take {
            st.read_buffers.entry(id).or_default().push_back((s.clone(), !matches!(access, Access::Peek { .. })));
        }
        out.push(s);
    }
    out
}

impl ReaderCore {
    fn new(dp: &DomainParticipant, topic: &str, type_name: &str, keying: (bool, Option<engine::KeyOf>), qos: &Qos) -> Result<ReaderCore> {
        let q = qos.for_reader()?;
        let mut g = dp.shared.lock()?;
        let id = g.p.create_reader_keyed(detpath::monotonic_ns(), topic, type_name, keying, q, 256)?;
        Ok(ReaderCore { shared: dp.shared.clone(), id, seen_over: std::sync::atomic::AtomicU64::new(0) })
    }

    /// The budget status; `reset`: the change counts start again from now.
    fn budget_status(&self, reset: bool) -> Result<LatencyBudgetStatus> {
        let g = self.shared.lock()?;
        let b = reader_budget(&g, self.id);
        let seen = self.seen_over.load(std::sync::atomic::Ordering::Relaxed);
        if reset {
            self.seen_over.store(b.over, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(LatencyBudgetStatus::from_stats(b, seen))
    }

    /// Waits until a sample was over budget since the status was last read,
    /// at most `timeout` (asleep: the engine thread wakes it after each
    /// batch of datagrams). The status is not reset.
    fn wait_over_budget(&self, timeout: Duration) -> Result<bool> {
        let over = |g: &mut State| (reader_budget(g, self.id).over > self.seen_over.load(std::sync::atomic::Ordering::Relaxed)).then_some(());
        Ok(self.wait_until(timeout, over)?.is_some())
    }

    /// Waits on the engine thread's wake-ups until `ready` gives a value
    /// (checked first, then after each wake-up), at most `timeout`: `None`
    /// when the time is up; an error when the participant closed meanwhile.
    fn wait_until<T>(&self, timeout: Duration, mut ready: impl FnMut(&mut State) -> Option<T>) -> Result<Option<T>> {
        let end = Instant::now() + timeout;
        let mut g: MutexGuard<'_, State> = self.shared.lock()?;
        loop {
            if let Some(v) = ready(&mut g) {
                return Ok(Some(v));
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            g = self.shared.arrived.wait_timeout(g, left).unwrap_or_else(|e| e.into_inner()).0;
            if g.closed {
                return Err(Error::Closed);
            }
        }
    }

    fn get(&self, n: usize, access: Access) -> Result<Vec<RawSample>> {
        let mut g = self.shared.lock()?;
        Ok(take_from(&mut g, self.id, n, access))
    }

    /// Takes up to `n`, waiting at most `timeout` for the first.
    fn take_timeout(&self, n: usize, timeout: Duration) -> Result<Vec<RawSample>> {
        let got = self.wait_until(timeout, |g| {
            let got = take_from(g, self.id, n, Access::Take);
            (!got.is_empty()).then_some(got)
        })?;
        Ok(got.unwrap_or_default())
    }

    /// Waits until a sample is waiting (taken or read later), at most `timeout`.
    fn wait_for_data(&self, timeout: Duration) -> Result<bool> {
        let ready = self.wait_until(timeout, |g| {
            let buffered = g.read_buffers.get(&self.id).is_some_and(|b| !b.is_empty());
            (buffered || g.p.reader_status(self.id).waiting > 0).then_some(())
        })?;
        Ok(ready.is_some())
    }

    /// Waits until a sample not read before is there, at most `timeout`.
    fn wait_for_unread(&self, timeout: Duration) -> Result<bool> {
        let unread = |g: &mut State| {
            let buffered = g.read_buffers.get(&self.id).is_some_and(|b| b.iter().any(|(_, read)| !read));
            (buffered || g.p.reader_status(self.id).waiting > 0).then_some(())
        };
        Ok(self.wait_until(timeout, unread)?.is_some())
    }

    fn instance_state(&self, key: &[u8; 16]) -> Result<Option<engine::InstanceState>> {
        Ok(self.shared.lock()?.p.instance_state(self.id, key))
    }

    /// Reports samples that did not deserialize, each with its writer, to
    /// the engine ([`engine::Participant::report_undecodable`]): it counts
    /// them in the reader's status and reports each writer's type once.
    fn report_undecodable(&self, bad: impl IntoIterator<Item = (Guid, WireError)>) {
        if let Ok(mut g) = self.shared.lock() {
            for (writer, why) in bad {
                g.p.report_undecodable(self.id, writer, why);
            }
        }
    }

    fn status(&self) -> Result<ReaderStatus> {
        let g = self.shared.lock()?;
        let detail = g.p.reader_status(self.id);
        let t = g.tallies.get(&g.p.reader_guid(self.id)).copied().unwrap_or_default();
        Ok(ReaderStatus {
            matched_publications: detail.matched,
            lost: detail.lost,
            rejected: detail.rejected,
            undecodable: detail.undecodable,
            incompatible_qos: t.incompatible_qos,
            unmatched: t.unmatched,
            detail,
        })
    }
}

impl Drop for ReaderCore {
    /// Deletes the reader in the engine: its SEDP dispose goes out at the
    /// engine thread's next timeout, so remote writers unmatch it and stop
    /// sending to it; samples `read` and not taken go with it.
    fn drop(&mut self) {
        if let Ok(mut g) = self.shared.lock() {
            g.read_buffers.remove(&self.id);
            g.p.delete_reader(self.id);
        }
    }
}

/// A reader of samples of `T`.
pub struct DataReader<T: TopicType> {
    core: ReaderCore,
    _type: PhantomData<fn() -> T>,
}

impl<T: TopicType + Default> DataReader<T> {
    /// A reader on `topic` with `qos` (unnamed policies: DDS's reader defaults, best effort).
    pub fn new(dp: &DomainParticipant, topic: &Topic<T>, qos: &Qos) -> Result<DataReader<T>> {
        let core = ReaderCore::new(dp, topic.name(), topic.type_name(), (T::KEYED, Some(detpath_pubsub::types::key_hash_from::<T>)), qos)?;
        Ok(DataReader { core, _type: PhantomData })
    }
    /// Takes up to `n` samples without waiting (oldest first). A dispose or
    /// unregister comes as `T::default()` with `valid_data` false. Samples
    /// that do not deserialize are counted ([`ReaderStatus::undecodable`]) and dropped.
    pub fn take(&self, n: usize) -> Result<Vec<(T, SampleInfo)>> {
        Ok(self.decode(self.core.get(n, Access::Take)?))
    }
    /// As [`take`](Self::take), but the samples stay for a later take or read.
    pub fn read(&self, n: usize) -> Result<Vec<(T, SampleInfo)>> {
        Ok(self.decode(self.core.get(n, Access::Read)?))
    }
    /// Takes up to `n` samples, waiting at most `timeout` for the first
    /// (asleep: the engine thread wakes it when datagrams were handled).
    pub fn take_timeout(&self, n: usize, timeout: Duration) -> Result<Vec<(T, SampleInfo)>> {
        Ok(self.decode(self.core.take_timeout(n, timeout)?))
    }
    /// As [`read`](Self::read), but only samples no read returned before (DDS's NOT_READ).
    pub fn read_unread(&self, n: usize) -> Result<Vec<(T, SampleInfo)>> {
        Ok(self.decode(self.core.get(n, Access::ReadUnread)?))
    }
    /// Waits until a sample is there to take or read, at most `timeout`
    /// (asleep): false when none came.
    pub fn wait_for_data(&self, timeout: Duration) -> Result<bool> {
        self.core.wait_for_data(timeout)
    }
    /// Matched writers, lost, rejected and undecodable samples.
    pub fn status(&self) -> Result<ReaderStatus> {
        self.core.status()
    }
    /// The LATENCY_BUDGET status: samples within and over the budget, the
    /// causes, the latency histogram; reading it resets `over_change`.
    pub fn latency_budget_status(&self) -> Result<LatencyBudgetStatus> {
        self.core.budget_status(true)
    }
    /// Waits until a sample arrived over its budget since the status was
    /// last read, at most `timeout`: true when one did (read the status to
    /// see how many and why), false when the time ran out. A reader whose
    /// clock does not agree with its writers' never wakes for this.
    pub fn wait_for_over_budget(&self, timeout: Duration) -> Result<bool> {
        self.core.wait_over_budget(timeout)
    }

    fn decode(&self, raw: Vec<RawSample>) -> Vec<(T, SampleInfo)> {
        let mut bad = Vec::new();
        let out = raw
            .into_iter()
            .filter_map(|(bytes, info)| {
                let mut s = T::default();
                if info.valid_data {
                    if let Err(e) = CdrReader::from_payload(&bytes).and_then(|mut c| s.deserialize_into(&mut c)) {
                        bad.push((info.writer, e));
                        return None;
                    }
                }
                Some((s, info))
            })
            .collect();
        if !bad.is_empty() {
            self.core.report_undecodable(bad);
        }
        out
    }
}

/// A reader of serialized samples.
pub struct RawReader {
    core: ReaderCore,
}

impl RawReader {
    /// Takes up to `n` samples without waiting.
    pub fn take(&self, n: usize) -> Result<Vec<RawSample>> {
        self.core.get(n, Access::Take)
    }
    /// As [`take`](Self::take), but the samples stay for a later take or read.
    pub fn read(&self, n: usize) -> Result<Vec<RawSample>> {
        self.core.get(n, Access::Read)
    }
    /// As [`read`](Self::read), but only samples no read returned before
    /// (DDS's NOT_READ sample state): what `read_iter` and `read_next` of
    /// the bindings walk through.
    pub fn read_unread(&self, n: usize) -> Result<Vec<RawSample>> {
        self.core.get(n, Access::ReadUnread)
    }
    /// As [`read`](Self::read), but what no read returned before stays so
    /// (NOT_READ): a condition looks without changing what `read_unread`
    /// returns. `unread`: only those (as [`read_unread`](Self::read_unread)).
    pub fn peek(&self, n: usize, unread: bool) -> Result<Vec<RawSample>> {
        self.core.get(n, Access::Peek { unread })
    }
    /// Takes the samples named by writer and sequence number that a read
    /// or peek returned and no take has yet (others are left out): how a binding
    /// takes one instance, or the samples a condition selects, after
    /// deciding on what it read. Oldest first.
    pub fn take_these(&self, which: &[(Guid, i64)]) -> Result<Vec<RawSample>> {
        self.these(which, true)
    }
    /// As [`take_these`](Self::take_these), but they stay, now READ.
    pub fn read_these(&self, which: &[(Guid, i64)]) -> Result<Vec<RawSample>> {
        self.these(which, false)
    }
    fn these(&self, which: &[(Guid, i64)], take: bool) -> Result<Vec<RawSample>> {
        let mut g = self.core.shared.lock()?;
        let buffered = g.read_buffers.entry(self.core.id).or_default();
        let named = |i: &SampleInfo| which.contains(&(i.writer, i.sn.0));
        if !take {
            return Ok(buffered.iter_mut().filter(|((_, i), _)| named(i)).map(|(s, read)| (*read = true, s.clone()).1).collect());
        }
        let (chosen, rest): (Vec<_>, Vec<_>) = buffered.drain(..).partition(|((_, i), _)| named(i));
        buffered.extend(rest);
        Ok(chosen.into_iter().map(|(s, _)| s).collect())
    }
    /// Waits until a sample no read returned before is there, at most `timeout`: false when none came.
    pub fn wait_for_unread(&self, timeout: Duration) -> Result<bool> {
        self.core.wait_for_unread(timeout)
    }
    /// The state of the reader's instance of key hash `key`, `None` when it
    /// has none (an unkeyed topic has one, whatever the key; a keyed
    /// reader sorts by the key hashes writers send inline, which CycloneDDS's do not).
    pub fn instance_state(&self, key: &[u8; 16]) -> Result<Option<engine::InstanceState>> {
        self.core.instance_state(key)
    }
    /// Takes up to `n` samples, waiting at most `timeout` for the first.
    pub fn take_timeout(&self, n: usize, timeout: Duration) -> Result<Vec<RawSample>> {
        self.core.take_timeout(n, timeout)
    }
    /// Waits until a sample is there to take or read, at most `timeout`: false when none came.
    pub fn wait_for_data(&self, timeout: Duration) -> Result<bool> {
        self.core.wait_for_data(timeout)
    }
    /// Reports a sample of `writer` (its [`SampleInfo::writer`]) the
    /// application could not deserialize, `why` in
    /// the codec's words (a decoder of its own: the nearest, e.g.
    /// [`WireError::Truncated`]): counted in [`ReaderStatus::undecodable`],
    /// and the first from each writer is reported once by its type name
    /// (the engine's `UndecodableType` event).
    pub fn report_undecodable(&self, writer: Guid, why: WireError) {
        self.core.report_undecodable([(writer, why)])
    }
    /// Counts `n` samples the application could not deserialize without
    /// saying whose they were ([`report_undecodable`](Self::report_undecodable)
    /// names the writer): counted in [`ReaderStatus::undecodable`], not reported by type.
    pub fn count_undecodable(&self, n: u64) {
        let nobody = Guid::from_bytes([0; 16]);
        self.core.report_undecodable((0..n).map(|_| (nobody, WireError::Truncated)))
    }
    /// Matched writers, lost, rejected and undecodable samples.
    pub fn status(&self) -> Result<ReaderStatus> {
        self.core.status()
    }
    /// See [`DataReader::latency_budget_status`].
    pub fn latency_budget_status(&self) -> Result<LatencyBudgetStatus> {
        self.core.budget_status(true)
    }
    /// See [`DataReader::wait_for_over_budget`].
    pub fn wait_for_over_budget(&self, timeout: Duration) -> Result<bool> {
        self.core.wait_over_budget(timeout)
    }
}

impl DomainParticipant {
    /// A writer of serialized samples on topic `topic` of type `type_name`
    /// (`keyed`: the type has key fields; decides the entity kind announced).
    pub fn create_raw_writer(&self, topic: &str, type_name: &str, keyed: bool, qos: &Qos) -> Result<RawWriter> {
        Ok(RawWriter { core: WriterCore::new(self, topic, type_name, keyed, qos)? })
    }
    /// A reader of serialized samples. A keyed topic's samples are sorted
    /// into instances by the key hash writers send inline (detpath and Fast
    /// DDS do; CycloneDDS does not, and its samples then share one instance:
    /// give KEEP_ALL or a deeper history).
    pub fn create_raw_reader(&self, topic: &str, type_name: &str, keyed: bool, qos: &Qos) -> Result<RawReader> {
        Ok(RawReader { core: ReaderCore::new(self, topic, type_name, (keyed, None), qos)? })
    }
}
