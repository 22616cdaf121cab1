//! The DDS application API from C: participants, writers and readers of
//! detpath-dds carrying payloads the application serialized (with the code
//! an IDL compiler made, CycloneDDS's `idlc` or Fast DDS's `fastddsgen`, or
//! by hand), so no user has to trust a second serializer.
//!
//! Handles are checked values as the endpoints' are: `(generation << 16) |
//! (slot + 1)` in a table of their own, so NULL, closed, foreign handles
//! and handles of the wrong kind are errors, never crashes. A call clones
//! the entity out of the table under a short lock and runs without it: a
//! waiting take on one reader never holds up a write on another thread.

use crate::error::{call, str_arg, Failure};
use detpath_dds::{Cause, ClockSync, DomainParticipant, Error as DdsError, InstanceState, ParticipantOptions, Qos, RawReader, RawWriter, SampleInfo};
use std::ffi::{c_char, c_int, c_long, c_void};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many DDS participants, writers and readers one process may have at once.
pub const DETPATH_DDS_MAX_ENTITIES: usize = 4096;
/// Bytes of a key hash (RTPS §9.6.3.8).
pub const DETPATH_DDS_KEY_HASH_LEN: usize = 16;

/// A DDS participant handle (opaque, checked).
pub struct detpath_dds_participant {
    _opaque: [u8; 0],
}
/// A DDS writer handle (opaque, checked).
pub struct detpath_dds_writer {
    _opaque: [u8; 0],
}
/// A DDS reader handle (opaque, checked).
pub struct detpath_dds_reader {
    _opaque: [u8; 0],
}

/// What a reader knows about a sample `detpath_dds_take()` returned.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct detpath_dds_sample_info {
    /// Bytes of the serialized sample (its encapsulation header included);
    /// with `-EMSGSIZE`, the room it needs.
    pub len: usize,
    /// 1: a sample; 0: a dispose or unregister (`len` may be 0 or a serialized key).
    pub valid_data: u8,
    /// The instance's state: 0 alive, 1 disposed, 2 no writers.
    pub instance_state: u8,
    /// 1 when `key_hash` holds the instance's key hash (the writer sent it inline).
    pub has_key_hash: u8,
    /// The key hash.
    pub key_hash: [u8; DETPATH_DDS_KEY_HASH_LEN],
    /// The writer's GUID (prefix and entity id).
    pub writer_guid: [u8; 16],
    /// The writer's sequence number of the sample.
    pub sequence_number: i64,
    /// The writer's source timestamp, ns since the epoch; 0 without one.
    pub source_timestamp_ns: i64,
    /// CLOCK_MONOTONIC ns when the participant received it.
    pub reception_ns: u64,
}

/// A writer's status.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct detpath_dds_writer_status {
    /// Readers matched now.
    pub matched_subscriptions: u64,
    /// Remote readers of the topic and type not matched because their QoS does not fit.
    pub incompatible_qos: u64,
    /// Samples written.
    pub written: u64,
    /// Samples not yet acknowledged by every reliable reader.
    pub unacknowledged: i64,
}

/// A reader's status.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct detpath_dds_reader_status {
    /// Writers matched now.
    pub matched_publications: u64,
    /// Samples lost.
    pub lost: u64,
    /// Samples refused because a KEEP_ALL cache was full.
    pub rejected: u64,
    /// Samples that could not be decoded (`detpath_dds_reader_report_undecodable()`, `detpath_dds_reader_count_undecodable()`).
    pub undecodable: u64,
    /// Remote writers of the topic and type not matched because their QoS does not fit.
    pub incompatible_qos: u64,
    /// Samples received.
    pub received: u64,
    /// Samples waiting to be taken.
    pub waiting: u64,
}

/// Buckets of a reader's latency histogram (the last one is `+Inf`).
pub const DETPATH_DDS_LATENCY_BUCKETS: usize = 17;
/// Over-budget causes, in the order of `detpath_dds_budget_status.over_by_cause`:
/// sent late by the writer's side (0), waited for a retransmission (1),
/// taken late by a descheduled reader thread (2), the network (3).
pub const DETPATH_DDS_BUDGET_CAUSES: usize = 4;
/// `clock` of `detpath_dds_budget_status`: the clocks are not known to agree; nothing is judged.
pub const DETPATH_DDS_CLOCK_UNSYNCHRONISED: u8 = 0;
/// `clock`: writer and reader share this host's clock.
pub const DETPATH_DDS_CLOCK_SAME_HOST: u8 = 1;
/// `clock`: this host's clock is synchronised to a common reference (PTP).
pub const DETPATH_DDS_CLOCK_SYNCHRONISED: u8 = 2;

/// A reader's LATENCY_BUDGET status: every sample's one-way latency
/// (source timestamp to reception) judged against the budget.
/// `within + over + unjudged + implausible` is every sample received.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct detpath_dds_budget_status {
    /// The budget, ns (0: none).
    pub budget_ns: i64,
    /// `DETPATH_DDS_CLOCK_*`: whether latencies could be judged.
    pub clock: u8,
    /// Samples within the budget.
    pub within: u64,
    /// Samples over the budget.
    pub over: u64,
    /// Samples over the budget since the status was last read (reading resets it).
    pub over_change: u64,
    /// Over-budget samples per cause (`DETPATH_DDS_BUDGET_CAUSES`).
    pub over_by_cause: [u64; DETPATH_DDS_BUDGET_CAUSES],
    /// Samples not judged (no source timestamp, or the clocks are not known to agree).
    pub unjudged: u64,
    /// Samples with an implausible source timestamp (kept out of the histogram).
    pub implausible: u64,
    /// Judged samples per latency bucket (not cumulative); bucket i holds
    /// latencies up to `detpath_dds_latency_bucket_bound_ns(i)`.
    pub latency_buckets: [u64; DETPATH_DDS_LATENCY_BUCKETS],
    /// Judged samples.
    pub latency_count: u64,
    /// Sum of their latencies, ns (saturating).
    pub latency_sum_ns: u64,
    /// The largest latency, ns.
    pub latency_max_ns: u64,
}

#[derive(Clone)]
enum Entity {
    Participant(Arc<DomainParticipant>),
    Writer(Arc<RawWriter>),
    Reader(Arc<RawReader>),
}

struct Table {
    slots: Vec<(u64, Option<Entity>)>,
}

static TABLE: Mutex<Table> = Mutex::new(Table { slots: Vec::new() });

fn table() -> std::sync::MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn insert(e: Entity) -> Result<usize, Failure> {
    let mut t = table();
    let i = match t.slots.iter().position(|s| s.1.is_none()) {
        Some(i) => i,
        None if t.slots.len() < DETPATH_DDS_MAX_ENTITIES => {
            t.slots.push((0, None));
            t.slots.len() - 1
        }
        None => return Err(Failure::new(libc::EMFILE, format!("{DETPATH_DDS_MAX_ENTITIES} DDS participants, writers and readers exist in this process; delete one first"))),
    };
    t.slots[i].1 = Some(e);
    Ok(((t.slots[i].0 & 0xffff_ffff) as usize) << 16 | (i + 1))
}

fn lookup(handle: usize, what: &str) -> Result<(usize, Entity), Failure> {
    if handle == 0 {
        return Err(Failure::new(libc::EBADF, format!("the {what} handle is NULL (did its creation fail? see detpath_last_error())")));
    }
    let t = table();
    let i = (handle & 0xffff).wrapping_sub(1);
    match t.slots.get(i) {
        Some((g, Some(e))) if (*g & 0xffff_ffff) as usize == handle >> 16 => Ok((i, e.clone())),
        Some((g, _)) if (handle >> 16) < (*g & 0xffff_ffff) as usize + 1 => Err(Failure::new(libc::EBADF, format!("the {what} handle was deleted (use after delete)"))),
        _ => Err(Failure::new(libc::EBADF, format!("{handle:#x} is not a detpath DDS {what} handle"))),
    }
}

fn remove(i: usize) {
    let mut t = table();
    t.slots[i].0 += 1;
    let gone = t.slots[i].1.take();
    drop(t);
    // A participant's goodbye and thread join happen outside the table's lock.
    drop(gone);
}

fn participant(h: *mut detpath_dds_participant) -> Result<(usize, Arc<DomainParticipant>), Failure> {
    match lookup(h as usize, "participant")? {
        (i, Entity::Participant(p)) => Ok((i, p)),
        _ => Err(Failure::new(libc::EBADF, "the handle is not a participant's (a writer or reader handle was passed)".into())),
    }
}
/// The DDS names of the ROS 2 topic `ros_topic` (`/cmd_vel`) and message
/// type `ros_type` (`geometry_msgs/msg/Twist`, or `geometry_msgs::msg::Twist`).
unsafe fn ros2_names(ros_topic: *const c_char, ros_type: *const c_char) -> Result<(String, String), Failure> {
    // SAFETY: forwarded caller contract.
    let (topic, ty) = unsafe { (str_arg(ros_topic, "ros_topic")?, str_arg(ros_type, "ros_type")?) };
    Ok((detpath_dds::ros2::topic_name(topic)?, detpath_dds::ros2::type_name(ty)?))
}

/// A writer on the ROS 2 topic `ros_topic` (`/cmd_vel` or `cmd_vel`) of the
/// message type `ros_type` (`geometry_msgs/msg/Twist`), under the names ROS 2
/// nodes use on DDS (`rt/cmd_vel`, `geometry_msgs::msg::dds_::Twist_`;
/// unkeyed, as ROS messages are), so they see it; the payload is the
/// message's CDR as ROS (rosidl, `idlc`) serializes it. `qos` as for
/// `detpath_dds_writer_new` (ROS 2's default is
/// `reliability=reliable;history=keep_last:10`). NULL on failure, also when
/// ROS would refuse a name (the message says why).
///
/// # Safety
/// `ros_topic`, `ros_type` are NUL-terminated strings; `qos` is NULL or one.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_ros2_writer_new(
    p: *mut detpath_dds_participant,
    ros_topic: *const c_char,
    ros_type: *const c_char,
    qos: *const c_char,
) -> *mut detpath_dds_writer {
    call(
        |_| std::ptr::null_mut(),
        || {
            let (_, dp) = participant(p)?;
            // SAFETY: forwarded caller contract.
            let ((topic, type_name), qos) = unsafe { (ros2_names(ros_topic, ros_type)?, qos_arg(qos)?) };
            let w = dp.create_raw_writer(&topic, &type_name, false, &qos)?;
            Ok(insert(Entity::Writer(Arc::new(w)))? as *mut detpath_dds_writer)
        },
    )
}

/// A reader on the ROS 2 topic `ros_topic` of the message type `ros_type`
/// under ROS 2's DDS names (see `detpath_dds_ros2_writer_new`); `qos` as for
/// `detpath_dds_reader_new`. NULL on failure.
///
/// # Safety
/// `ros_topic`, `ros_type` are NUL-terminated strings; `qos` is NULL or one.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_ros2_reader_new(
    p: *mut detpath_dds_participant,
    ros_topic: *const c_char,
    ros_type: *const c_char,
    qos: *const c_char,
) -> *mut detpath_dds_reader {
    call(
        |_| std::ptr::null_mut(),
        || {
            let (_, dp) = participant(p)?;
            // SAFETY: forwarded caller contract.
            let ((topic, type_name), qos) = unsafe { (ros2_names(ros_topic, ros_type)?, qos_arg(qos)?) };
            let r = dp.create_raw_reader(&topic, &type_name, false, &qos)?;
            Ok(insert(Entity::Reader(Arc::new(r)))? as *mut detpath_dds_reader)
        },
    )
}

fn writer(h: *mut detpath_dds_writer) -> Result<(usize, Arc<RawWriter>), Failure> {
    match lookup(h as usize, "writer")? {
        (i, Entity::Writer(w)) => Ok((i, w)),
        _ => Err(Failure::new(libc::EBADF, "the handle is not a writer's (a participant or reader handle was passed)".into())),
    }
}
fn reader(h: *mut detpath_dds_reader) -> Result<(usize, Arc<RawReader>), Failure> {
    match lookup(h as usize, "reader")? {
        (i, Entity::Reader(r)) => Ok((i, r)),
        _ => Err(Failure::new(libc::EBADF, "the handle is not a reader's (a participant or writer handle was passed)".into())),
    }
}

impl From<DdsError> for Failure {
    fn from(e: DdsError) -> Failure {
        let errno = match &e {
            DdsError::Open { source, .. } | DdsError::Netns { source, .. } => source.errno(),
            DdsError::SampleTooLarge { .. } => libc::EMSGSIZE,
            DdsError::Closed => libc::EBADF,
            DdsError::Write(detpath_dds::WriteError::HistoryFull) => libc::EAGAIN,
            _ => libc::EINVAL,
        };
        Failure::new(errno, e.to_string())
    }
}

/// Optional C string: NULL and "" are none.
unsafe fn opt_str<'a>(p: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Ok("");
    }
    // SAFETY: forwarded caller contract (NUL-terminated).
    unsafe { str_arg(p, what) }
}

/// A participant in `domain_id` on the endpoint `spec` (any detpath spec,
/// e.g. `"udp://10.0.0.1:7410"`), announcing itself to `peers` (IPv4
/// addresses separated by commas; NULL or "": the SPDP multicast group, which
/// needs the interface named in the spec). Its thread runs the protocol; a
/// reader waiting in `detpath_dds_take()` sleeps. NULL on failure.
///
/// # Safety
/// `spec` and `peers` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_participant_new(domain_id: u32, spec: *const c_char, peers: *const c_char) -> *mut detpath_dds_participant {
    call(
        |_| std::ptr::null_mut(),
        || {
            // SAFETY: forwarded caller contract.
            let spec = unsafe { str_arg(spec, "spec") }?;
            // SAFETY: forwarded caller contract.
            let peers = unsafe { opt_str(peers, "peers") }?;
            let list: Vec<&str> = peers.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            let dp = DomainParticipant::with_options(domain_id, spec, &list, ParticipantOptions::default())?;
            Ok(insert(Entity::Participant(Arc::new(dp)))? as *mut detpath_dds_participant)
        },
    )
}

/// `detpath_dds_participant_new()` with options, `;`-separated
/// `name=value` (NULL or "": the defaults): `clock=auto|synced` (synced:
/// this host's CLOCK_REALTIME is disciplined by PTP, so readers judge the
/// latency budgets of writers on other hosts too; auto: writers on this
/// host only), `priority_map=PRIORITY=DSCP,...` (e.g. `0=CS0,1=AF21,40=EF`),
/// `priority_classes=PRIORITY=CLASS,...` (e.g. `0=bulk,1=ctl`, with a slot
/// scheduler on the endpoint), `netns=NAME`, `wait=block|busy`. NULL on failure.
///
/// # Safety
/// `spec` is a NUL-terminated string; `peers` and `options` are NULL or one.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_participant_new_opts(domain_id: u32, spec: *const c_char, peers: *const c_char, options: *const c_char) -> *mut detpath_dds_participant {
    call(
        |_| std::ptr::null_mut(),
        || {
            // SAFETY: forwarded caller contract.
            let spec = unsafe { str_arg(spec, "spec") }?;
            // SAFETY: forwarded caller contract.
            let peers = unsafe { opt_str(peers, "peers") }?;
            // SAFETY: forwarded caller contract.
            let options = unsafe { opt_str(options, "options") }?;
            let list: Vec<&str> = peers.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            let dp = DomainParticipant::with_options(domain_id, spec, &list, ParticipantOptions::parse(options)?)?;
            Ok(insert(Entity::Participant(Arc::new(dp)))? as *mut detpath_dds_participant)
        },
    )
}

/// Deletes a participant: it says goodbye to its peers and its thread ends.
/// Its writers and readers fail with -EBADF from then on (delete them too).
///
/// # Safety
/// Any value may be passed; it is checked, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_participant_delete(p: *mut detpath_dds_participant) -> c_int {
    call(
        |e| -e,
        || {
            let (i, _) = participant(p)?;
            remove(i);
            Ok(0)
        },
    )
}

/// The text form of a QoS, `;`-separated `name=value`: `reliability=reliable|best_effort`,
/// `durability=volatile|transient_local`, `history=keep_last:N|keep_all`, `deadline=100ms`,
/// `liveliness=automatic|manual_by_participant|manual_by_topic[:DUR]`, `partition=A,B`,
/// `ownership=shared|exclusive`, `max_samples=N`, `max_instances=N`, `max_sample_size=BYTES`,
/// `transport_priority=N`, `latency_budget=DUR`.
unsafe fn qos_arg(q: *const c_char) -> Result<Qos, Failure> {
    // SAFETY: forwarded caller contract.
    Ok(Qos::parse(unsafe { opt_str(q, "qos") }?)?)
}

/// A writer of serialized samples on `topic` of type `type_name` (`keyed`:
/// the type has key fields) with `qos` in text form (NULL or "": DDS's
/// writer defaults, reliable; see `detpath_dds_reader_new` for the names).
/// NULL on failure.
///
/// # Safety
/// `topic`, `type_name` are NUL-terminated strings; `qos` is NULL or one.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_writer_new(
    p: *mut detpath_dds_participant,
    topic: *const c_char,
    type_name: *const c_char,
    keyed: c_int,
    qos: *const c_char,
) -> *mut detpath_dds_writer {
    call(
        |_| std::ptr::null_mut(),
        || {
            let (_, dp) = participant(p)?;
            // SAFETY: forwarded caller contract.
            let (topic, type_name, qos) = unsafe { (str_arg(topic, "topic")?, str_arg(type_name, "type_name")?, qos_arg(qos)?) };
            let w = dp.create_raw_writer(topic, type_name, keyed != 0, &qos)?;
            Ok(insert(Entity::Writer(Arc::new(w)))? as *mut detpath_dds_writer)
        },
    )
}

/// A reader of serialized samples on `topic` of type `type_name` with
/// `qos`, `;`-separated `name=value` policies (NULL or "": DDS's reader
/// defaults, best effort): `reliability=reliable|best_effort`,
/// `durability=volatile|transient_local|transient|persistent`,
/// `history=keep_last:N|keep_all`, `deadline=DUR`,
/// `liveliness=automatic|manual_by_participant|manual_by_topic[:DUR]`,
/// `partition=A,B`, `ownership=shared|exclusive`, `max_samples=N`,
/// `max_instances=N`, `max_sample_size=BYTES`, `transport_priority=N`
/// (0: best effort; above 0 marks a writer's datagrams with a DSCP),
/// `latency_budget=DUR` (above 0, at most 1h: every sample is judged
/// against it, `detpath_dds_reader_budget_status()`) (DUR: `100ms`, `2s`, `infinite`).
/// NULL on failure.
///
/// # Safety
/// `topic`, `type_name` are NUL-terminated strings; `qos` is NULL or one.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_reader_new(
    p: *mut detpath_dds_participant,
    topic: *const c_char,
    type_name: *const c_char,
    keyed: c_int,
    qos: *const c_char,
) -> *mut detpath_dds_reader {
    call(
        |_| std::ptr::null_mut(),
        || {
            let (_, dp) = participant(p)?;
            // SAFETY: forwarded caller contract.
            let (topic, type_name, qos) = unsafe { (str_arg(topic, "topic")?, str_arg(type_name, "type_name")?, qos_arg(qos)?) };
            let r = dp.create_raw_reader(topic, type_name, keyed != 0, &qos)?;
            Ok(insert(Entity::Reader(Arc::new(r)))? as *mut detpath_dds_reader)
        },
    )
}

/// Deletes a writer (its readers unmatch).
///
/// # Safety
/// Any value may be passed; it is checked, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_writer_delete(w: *mut detpath_dds_writer) -> c_int {
    call(
        |e| -e,
        || {
            let (i, _) = writer(w)?;
            remove(i);
            Ok(0)
        },
    )
}

/// Deletes a reader.
///
/// # Safety
/// Any value may be passed; it is checked, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_reader_delete(r: *mut detpath_dds_reader) -> c_int {
    call(
        |e| -e,
        || {
            let (i, _) = reader(r)?;
            remove(i);
            Ok(0)
        },
    )
}

unsafe fn key_arg(key_hash: *const u8) -> Option<[u8; 16]> {
    // SAFETY: non-NULL key hashes point to 16 bytes (caller contract).
    (!key_hash.is_null()).then(|| unsafe { std::ptr::read_unaligned(key_hash as *const [u8; 16]) })
}

/// Writes one serialized sample: `payload` (`len` bytes) starts with its
/// 4-byte encapsulation header (e.g. 00 01 00 00, XCDR1 little endian);
/// `key_hash` (16 bytes, or NULL for an unkeyed topic) names its instance.
/// 0, or -EMSGSIZE above the writer's `max_sample_size`, -EINVAL for a
/// payload without a header, -EAGAIN when a KEEP_ALL history is full.
///
/// # Safety
/// `payload` points to `len` readable bytes; `key_hash` is NULL or points to 16.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_write(w: *mut detpath_dds_writer, payload: *const c_void, len: usize, key_hash: *const u8) -> c_int {
    call(
        |e| -e,
        || {
            let (_, w) = writer(w)?;
            if payload.is_null() {
                return Err(Failure::invalid("payload is NULL"));
            }
            // SAFETY: caller contract: `len` readable bytes.
            let bytes = unsafe { std::slice::from_raw_parts(payload as *const u8, len) };
            // SAFETY: caller contract.
            w.write(bytes, unsafe { key_arg(key_hash) })?;
            Ok(0)
        },
    )
}

/// Disposes (`status` 1), unregisters (2) or both (3) the instance of
/// `key_hash`; `key` (`key_len` bytes: encapsulation header and the key
/// fields; NULL: none) lets peers that cannot invert a hashed key find it.
///
/// # Safety
/// `key_hash` points to 16 bytes; `key` is NULL or points to `key_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_write_status(w: *mut detpath_dds_writer, key_hash: *const u8, status: u32, key: *const c_void, key_len: usize) -> c_int {
    call(
        |e| -e,
        || {
            let (_, w) = writer(w)?;
            // SAFETY: caller contract.
            let kh = unsafe { key_arg(key_hash) }.ok_or_else(|| Failure::invalid("key_hash is NULL"))?;
            // SAFETY: caller contract.
            let key = if key.is_null() { &[][..] } else { unsafe { std::slice::from_raw_parts(key as *const u8, key_len) } };
            w.write_status(kh, status, key)?;
            Ok(0)
        },
    )
}

/// The writer's status into `out`.
///
/// # Safety
/// `out` is NULL or points to a `struct detpath_dds_writer_status`.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_writer_status(w: *mut detpath_dds_writer, out: *mut detpath_dds_writer_status) -> c_int {
    call(
        |e| -e,
        || {
            let (_, w) = writer(w)?;
            if out.is_null() {
                return Err(Failure::invalid("out is NULL"));
            }
            let s = w.status()?;
            let v = detpath_dds_writer_status {
                matched_subscriptions: s.matched_subscriptions as u64,
                incompatible_qos: s.incompatible_qos,
                written: s.detail.written,
                unacknowledged: s.detail.unacknowledged,
            };
            // SAFETY: caller contract.
            unsafe { out.write_unaligned(v) };
            Ok(0)
        },
    )
}

/// Waits until every matched reliable reader acknowledged every sample, at
/// most `timeout_ns`: 1 acknowledged, 0 the time ran out.
///
/// # Safety
/// Any value may be passed as `w`; it is checked.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_writer_wait_acks(w: *mut detpath_dds_writer, timeout_ns: i64) -> c_int {
    call(
        |e| -e,
        || {
            let (_, w) = writer(w)?;
            Ok(w.wait_for_acknowledgments(Duration::from_nanos(timeout_ns.max(0) as u64))? as c_int)
        },
    )
}

fn fill_info(s: &SampleInfo, len: usize) -> detpath_dds_sample_info {
    detpath_dds_sample_info {
        len,
        valid_data: s.valid_data as u8,
        instance_state: match s.instance_state {
            InstanceState::Alive => 0,
            InstanceState::Disposed => 1,
            InstanceState::NoWriters => 2,
        },
        has_key_hash: s.key_hash.is_some() as u8,
        key_hash: s.key_hash.unwrap_or_default(),
        writer_guid: s.writer.to_bytes(),
        sequence_number: s.sn.0,
        source_timestamp_ns: s.source_timestamp.map_or(0, |t| t.to_nanos()),
        reception_ns: s.reception_ns,
    }
}

/// Takes the oldest sample into `buf` (`cap` bytes) and its info into
/// `info`, waiting at most `timeout_ns` for one (0: do not wait; negative:
/// wait until one comes). Returns its length (>= 0; `info->valid_data` 0
/// for a dispose/unregister), -EAGAIN when none came, -EMSGSIZE when it
/// does not fit (it stays; `info->len` says how much room it needs).
///
/// # Safety
/// `buf` points to `cap` writable bytes (or is NULL with `cap` 0); `info` points to a `struct detpath_dds_sample_info`.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_take(r: *mut detpath_dds_reader, buf: *mut c_void, cap: usize, info: *mut detpath_dds_sample_info, timeout_ns: i64) -> c_long {
    call(
        |e| -(e as c_long),
        || {
            let (_, r) = reader(r)?;
            if info.is_null() {
                return Err(Failure::invalid("info is NULL"));
            }
            if buf.is_null() && cap > 0 {
                return Err(Failure::invalid("buf is NULL with a capacity"));
            }
            let forever = timeout_ns < 0;
            let end = Instant::now() + Duration::from_nanos(timeout_ns.max(0) as u64);
            // Read first (the sample stays), so one too large for `buf` is not lost.
            let peeked = loop {
                if let Some(s) = r.read(1)?.into_iter().next() {
                    break s;
                }
                let left = if forever { Duration::from_secs(1) } else { end.saturating_duration_since(Instant::now()) };
                if left.is_zero() || (!r.wait_for_data(left)? && !forever) {
                    return Err(Failure::new(libc::EAGAIN, "no sample within the timeout".into()));
                }
            };
            let (bytes, si) = peeked;
            // SAFETY: caller contract.
            unsafe { info.write_unaligned(fill_info(&si, bytes.len())) };
            if bytes.len() > cap {
                return Err(Failure::new(libc::EMSGSIZE, format!("the sample is {} bytes and buf holds {cap}: it stays for a take with a larger buffer", bytes.len())));
            }
            let _ = r.take(1)?;
            // SAFETY: caller contract: `cap` writable bytes, and bytes.len() <= cap.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, bytes.len()) };
            Ok(bytes.len() as c_long)
        },
    )
}

/// Counts `n` samples the application could not decode (shown in the
/// reader's status as `undecodable`).
///
/// # Safety
/// Any value may be passed as `r`; it is checked.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_reader_count_undecodable(r: *mut detpath_dds_reader, n: u64) -> c_int {
    call(
        |e| -e,
        || {
            let (_, r) = reader(r)?;
            r.count_undecodable(n);
            Ok(0)
        },
    )
}

/// Reports a sample the application could not decode, by its `info` (as
/// a take filled it): counted in the reader's status as `undecodable`, and
/// the first from each writer is reported once by the writer's type name.
///
/// # Safety
/// `info` is NULL or points to a `struct detpath_dds_sample_info`.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_reader_report_undecodable(r: *mut detpath_dds_reader, info: *const detpath_dds_sample_info) -> c_int {
    call(
        |e| -e,
        || {
            let (_, r) = reader(r)?;
            if info.is_null() {
                return Err(Failure::invalid("info is NULL"));
            }
            // SAFETY: caller contract.
            let guid = unsafe { info.read_unaligned() }.writer_guid;
            r.report_undecodable(detpath_dds::Guid::from_bytes(guid), detpath_dds::cdr::WireError::Truncated);
            Ok(0)
        },
    )
}

/// Waits until a sample is there to take, at most `timeout_ns` (0: only
/// looks; negative: until one comes), asleep: the participant's thread
/// wakes it. Returns 1 when one is, 0 when none came in time, a negative
/// errno on error (-EBADF: not a reader, or its participant closed).
///
/// # Safety
/// Any value may be passed as `r`; it is checked.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_reader_wait(r: *mut detpath_dds_reader, timeout_ns: i64) -> c_int {
    call(
        |e| -e,
        || {
            let (_, r) = reader(r)?;
            if timeout_ns >= 0 {
                return Ok(r.wait_for_data(Duration::from_nanos(timeout_ns as u64))? as c_int);
            }
            while !r.wait_for_data(Duration::from_secs(1))? {}
            Ok(1)
        },
    )
}

/// The reader's status into `out`.
///
/// # Safety
/// `out` is NULL or points to a `struct detpath_dds_reader_status`.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_reader_status(r: *mut detpath_dds_reader, out: *mut detpath_dds_reader_status) -> c_int {
    call(
        |e| -e,
        || {
            let (_, r) = reader(r)?;
            if out.is_null() {
                return Err(Failure::invalid("out is NULL"));
            }
            let s = r.status()?;
            let v = detpath_dds_reader_status {
                matched_publications: s.matched_publications as u64,
                lost: s.lost,
                rejected: s.rejected,
                undecodable: s.undecodable,
                incompatible_qos: s.incompatible_qos,
                received: s.detail.received,
                waiting: s.detail.waiting as u64,
            };
            // SAFETY: caller contract.
            unsafe { out.write_unaligned(v) };
            Ok(0)
        },
    )
}

/// The upper bound, ns, of latency bucket `i` of
/// `detpath_dds_budget_status.latency_buckets` (UINT64_MAX for the last,
/// `+Inf`, and for an index out of range).
#[no_mangle]
pub extern "C" fn detpath_dds_latency_bucket_bound_ns(i: usize) -> u64 {
    detpath_dds::BUCKET_BOUNDS_NS.get(i).copied().unwrap_or(u64::MAX)
}

/// The reader's LATENCY_BUDGET status into `out`; reading it resets `over_change`.
///
/// # Safety
/// `out` is NULL or points to a `struct detpath_dds_budget_status`.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_reader_budget_status(r: *mut detpath_dds_reader, out: *mut detpath_dds_budget_status) -> c_int {
    call(
        |e| -e,
        || {
            let (_, r) = reader(r)?;
            if out.is_null() {
                return Err(Failure::invalid("out is NULL"));
            }
            let s = r.latency_budget_status()?;
            let mut by_cause = [0u64; DETPATH_DDS_BUDGET_CAUSES];
            for (c, n) in &s.causes {
                let i = match c {
                    Cause::SentLate => 0,
                    Cause::Retransmission => 1,
                    Cause::ReaderLate => 2,
                    Cause::Network => 3,
                };
                by_cause[i] = *n;
            }
            let mut buckets = [0u64; DETPATH_DDS_LATENCY_BUCKETS];
            for (b, n) in buckets.iter_mut().zip(s.histogram.counts.iter()) {
                *b = *n;
            }
            let v = detpath_dds_budget_status {
                budget_ns: s.budget_ns,
                clock: match s.clock {
                    ClockSync::Unsynchronised => DETPATH_DDS_CLOCK_UNSYNCHRONISED,
                    ClockSync::SameHost => DETPATH_DDS_CLOCK_SAME_HOST,
                    ClockSync::Synchronised => DETPATH_DDS_CLOCK_SYNCHRONISED,
                },
                within: s.within,
                over: s.over,
                over_change: s.over_change,
                over_by_cause: by_cause,
                unjudged: s.unjudged,
                implausible: s.implausible,
                latency_buckets: buckets,
                latency_count: s.histogram.count,
                latency_sum_ns: u64::try_from(s.histogram.sum_ns).unwrap_or(u64::MAX),
                latency_max_ns: s.histogram.max_ns,
            };
            // SAFETY: caller contract.
            unsafe { out.write_unaligned(v) };
            Ok(0)
        },
    )
}

/// Waits until a sample arrived over its budget since the reader's budget
/// status was last read, at most `timeout_ns` (negative: until one does):
/// 1 one did (read `detpath_dds_reader_budget_status()` for how many and
/// why), 0 the time ran out. A reader whose clock does not agree with its
/// writers' judges nothing and never wakes for this.
///
/// # Safety
/// Any value may be passed as `r`; it is checked.
#[no_mangle]
pub unsafe extern "C" fn detpath_dds_reader_wait_over_budget(r: *mut detpath_dds_reader, timeout_ns: i64) -> c_int {
    call(
        |e| -e,
        || {
            let (_, r) = reader(r)?;
            if timeout_ns < 0 {
                loop {
                    if r.wait_for_over_budget(Duration::from_secs(1))? {
                        return Ok(1);
                    }
                }
            }
            Ok(r.wait_for_over_budget(Duration::from_nanos(timeout_ns as u64))? as c_int)
        },
    )
}
