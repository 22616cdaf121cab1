//! The sans-IO protocol engine: one DDS participant. Datagrams go in with
//! the time they arrived ([`Participant::handle_datagram`]); timers run when
//! the caller says the time has come ([`Participant::handle_timeout`]); every
//! datagram the engine produces goes out through an [`Outbox`] the caller
//! passes in. The engine reads no clock and opens no socket, so it runs the
//! same over a detpath endpoint, a UDP socket or a test's vector.
//!
//! Time: `now` is CLOCK_MONOTONIC nanoseconds (timers, leases, reception
//! times); source timestamps written into INFO_TS are wall-clock [`Time`]s
//! the caller supplies with each write.

mod discovery_io;
mod guard;
mod instances;
pub mod outbox;
mod reader;
pub(crate) mod slots;
mod tx;
mod writer;

pub use instances::{InstanceState, KeyOf};
pub use outbox::{NullOutbox, Outbox, VecOutbox};
pub use reader::MAX_FRAGMENTS;
pub use writer::WriteError;

use crate::budget::{BudgetStats, Cause, ClockFn, ClockSync};
use crate::discovery::{builtin, EndpointData, ParticipantData};
use crate::priority::{MarkTable, PriorityError, TxMark};
use crate::qos::{Durability, History, Incompatible, Qos, Reliability};
use crate::types::TopicType;
use crate::wire::bytes::ByteWriter;
use crate::wire::cdr::{repr, write_payload, CdrReader, Xcdr};
use crate::wire::types::kind;
use crate::wire::Addr;
use crate::wire::{EntityId, Guid, GuidPrefix, Locator, Message, ProtocolVersion, SequenceNumber, Submessage, Time, VendorId, WireError};
use reader::ReaderCore;
use std::collections::VecDeque;
use tx::Ctx;
use writer::WriterCore;

/// Engine configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The DDS domain: picks the well-known ports ([`crate::discovery::ports`]),
    /// is announced in PID_DOMAIN_ID, and SPDP announcing another domain is refused.
    pub domain_id: u32,
    /// This participant's GUID prefix (its entities' GUIDs start with it);
    /// [`make_guid_prefix`] builds one.
    pub guid_prefix: GuidPrefix,
    /// The address and port this participant receives on, announced as both
    /// its metatraffic and its default unicast locator (one endpoint carries both).
    pub local: Addr,
    /// Where SPDP announcements go: the unicast peer list expanded to each
    /// peer's metatraffic ports ([`Config::add_peer`]).
    pub spdp_targets: Vec<Addr>,
    /// The multicast group this participant listens to for discovery,
    /// announced as its metatraffic multicast locator
    /// ([`Config::add_spdp_multicast`]); peers may send SPDP and SEDP there.
    pub metatraffic_multicast: Option<Addr>,
    /// The participant lease announced in SPDP (PID_PARTICIPANT_LEASE_DURATION),
    /// ns: peers forget this participant when they hear nothing from it this long.
    pub lease_ns: i64,
    /// Period of the SPDP announcements, ns.
    pub spdp_interval_ns: u64,
    /// Period of a reliable writer's HEARTBEATs while samples are unacknowledged, ns.
    pub heartbeat_period_ns: u64,
    /// Announced as PID_USER_DATA in SPDP (the application's identification of itself).
    pub user_data: Vec<u8>,
    /// Largest datagram to send (UDP payload).
    pub max_datagram: usize,
    /// Remote participants kept at once; beyond it a newcomer evicts one
    /// that may be evicted ([`LostReason::Evicted`]) or is refused
    /// ([`Counters::discovery_over_limit`]).
    pub max_remote_participants: usize,
    /// Remote endpoints (SEDP announcements) kept at once, of one
    /// participant at most a quarter ([`ENDPOINT_SHARE`]); beyond either
    /// they are refused ([`Counters::discovery_over_limit`]).
    pub max_remote_endpoints: usize,
    /// Out-of-order samples a reliable reader holds per writer (at most 256).
    pub reorder_window: usize,
    /// Largest sample a reader accepts (fragment reassembly bound).
    pub max_sample_size: usize,
    /// Longest participant lease honoured (a longer or infinite one is cut to this).
    pub max_lease_ns: i64,
    /// Events kept for the application before the oldest are dropped.
    pub max_events: usize,
    /// Announcements the SEDP built-in writers and readers hold (bounds local endpoints announced at once).
    pub builtin_depth: u32,
    /// Accept RTPS only from the configured peers (the unicast addresses
    /// [`Config::add_peer`] added; any port): every other datagram is
    /// counted in [`Counters::rx_not_from_peer`] and dropped before it is
    /// parsed, so a host that is not a peer cannot reach discovery at all.
    pub peers_only: bool,
    /// From a writer's TRANSPORT_PRIORITY to the DSCP and traffic class of
    /// its datagrams ([`crate::priority`]); default: the default DSCP map,
    /// no scheduler classes. Over a detpath endpoint, resolve the
    /// configured policy with `transport::EndpointTransport::priority_marks`.
    pub priority: MarkTable,
    /// Reads the wall and monotonic clocks when a reader judges a sample
    /// against its latency budget ([`crate::budget`]; default
    /// [`system_clocks`](crate::budget::system_clocks)). Called only for
    /// samples with an INFO_TS from writers whose clock agrees with ours.
    pub clock: ClockFn,
    /// This host's clock is disciplined to a common reference (PTP:
    /// `detpath sched ptp`, ptp4l): readers judge the budgets of writers
    /// on other hosts ([`ClockSync::Synchronised`]). Set by the application.
    pub clock_synchronised: bool,
    /// This host's id, announced in SPDP (detpath vendor parameter): peers
    /// announcing the same one share our clock ([`ClockSync::SameHost`]).
    /// Default [`this_host_id`](crate::budget::this_host_id) (the boot id).
    pub host_id: Option<[u8; 16]>,
    /// Fragments of large samples a reliable writer has out unconfirmed per
    /// reader (default 32, about 43 KB): it asks with HEARTBEAT_FRAG, the
    /// reader confirms with NACK_FRAG, and the next fragments go; so a
    /// 1 MiB sample never overruns the reader's socket or a datapath's ring.
    pub frag_window: u32,
    /// Shortest time between two [`Event::BudgetExceeded`] of one reader,
    /// ns (the counts in [`Participant::reader_budget`] are exact; events
    /// are a wake-up, not a log). Default 1 ms.
    pub budget_event_interval_ns: u64,
}

impl Config {
    /// Defaults: 10 s lease, SPDP every second, heartbeats every 100 ms,
    /// 1472-byte datagrams (Ethernet MTU), 64 peers, 1024 remote endpoints.
    pub fn new(domain_id: u32, guid_prefix: GuidPrefix, local: impl Into<Addr>) -> Config {
        Config {
            domain_id,
            guid_prefix,
            local: local.into(),
            spdp_targets: Vec::new(),
            metatraffic_multicast: None,
            lease_ns: 10_000_000_000,
            spdp_interval_ns: 1_000_000_000,
            heartbeat_period_ns: 100_000_000,
            user_data: Vec::new(),
            max_datagram: 1472,
            max_remote_participants: 64,
            max_remote_endpoints: 1024,
            reorder_window: 256,
            max_sample_size: 1 << 20,
            max_lease_ns: 100_000_000_000,
            max_events: 4096,
            builtin_depth: 256,
            peers_only: false,
            priority: MarkTable::default(),
            clock: crate::budget::system_clocks,
            clock_synchronised: false,
            host_id: crate::budget::this_host_id(),
            budget_event_interval_ns: 1_000_000,
            frag_window: writer::DEFAULT_FRAG_WINDOW,
        }
    }
    /// Adds a unicast peer: SPDP goes to its metatraffic ports for participant
    /// indices `0..=max_index` (as CycloneDDS does with its Peers list).
    pub fn add_peer(&mut self, ip: std::net::Ipv4Addr, max_index: u32) {
        for i in 0..=max_index {
            let port = crate::discovery::ports::metatraffic_unicast(self.domain_id, i);
            if let Ok(port) = u16::try_from(port) {
                self.add_spdp_target(Addr::Udp(std::net::SocketAddrV4::new(ip, port)));
            }
        }
    }
    /// Announces over the SPDP multicast group (239.255.0.1, port 7400 +
    /// 250·domain), as CycloneDDS does by default: whoever listens there
    /// discovers us without a peer list. The group is also announced as our
    /// metatraffic multicast locator, as CycloneDDS announces it: the
    /// transport must both reach and hear the group.
    pub fn add_spdp_multicast(&mut self) {
        let port = crate::discovery::ports::metatraffic_multicast(self.domain_id) as u16;
        let group = Addr::Udp(std::net::SocketAddrV4::new(crate::discovery::SPDP_MULTICAST, port));
        self.add_spdp_target(group);
        self.metatraffic_multicast = Some(group);
    }
    /// Adds one address SPDP announcements go to (e.g. a raweth peer's MAC,
    /// or the broadcast address at the discovery EtherType, as CycloneDDS's
    /// raweth transport announces). Ours and duplicates are skipped.
    pub fn add_spdp_target(&mut self, a: Addr) {
        if a != self.local && !self.spdp_targets.contains(&a) {
            self.spdp_targets.push(a);
        }
    }
}

/// A GUID prefix in the recommended layout: vendor id, then host, process and instance bits.
pub fn make_guid_prefix(host: u32, pid: u32, instance: u32) -> GuidPrefix {
    let mut p = [0u8; 12];
    p[..2].copy_from_slice(&VendorId::DETPATH.0);
    p[2..4].copy_from_slice(&(host as u16).to_be_bytes());
    p[4..8].copy_from_slice(&pid.to_be_bytes());
    p[8..12].copy_from_slice(&instance.to_be_bytes());
    GuidPrefix(p)
}

/// Everything the engine counts. Faults are counted, never fatal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams handed to [`Participant::handle_datagram`].
    pub rx_datagrams: u64,
    /// Their bytes (RTPS messages, without transport headers).
    pub rx_bytes: u64,
    /// Not RTPS, or a header/submessage that failed validation (the rest of that message is dropped).
    pub rx_malformed: u64,
    /// From ourselves (looped back).
    pub rx_own: u64,
    /// Submessages addressed (INFO_DST) to another participant.
    pub rx_not_for_us: u64,
    /// Datagrams from hosts that are not configured peers, dropped unread
    /// ([`Config::peers_only`]).
    pub rx_not_from_peer: u64,
    /// Submessages of kinds the engine does not handle, skipped by length.
    pub rx_unknown_submessages: u64,
    /// DATA/HEARTBEAT/GAP from writers no local reader is matched with.
    pub rx_unmatched: u64,
    /// Samples received again: already delivered, or already held in the
    /// reorder window.
    pub data_duplicate: u64,
    /// Samples from a reliable writer too far ahead of the next expected one
    /// for the reorder window: dropped (the writer resends them).
    pub data_out_of_window: u64,
    /// Samples that never arrived: skipped by a best-effort reader, or gone
    /// from a reliable writer's history (its HEARTBEAT's firstSN moved past
    /// them); counted once the writer's next sample in order confirms it.
    pub data_lost: u64,
    /// Sequence numbers a writer declared irrelevant with GAP, skipped.
    pub gap_skipped: u64,
    /// DATA_FRAG submessages taken into reassembly.
    pub frags_received: u64,
    /// DATA_FRAG submessages refused: the sample is larger than
    /// [`Config::max_sample_size`] or has more than [`MAX_FRAGMENTS`]
    /// fragments, or the fragment runs past the sample.
    pub frag_rejected: u64,
    /// Reassemblies given up unfinished because fragments of another sample
    /// (or other sizes) arrived.
    pub frag_abandoned: u64,
    /// DATA_FRAG submessages sent (first transmissions and retransmissions).
    pub frags_sent: u64,
    /// DATA_FRAG submessages sent again because a reader named them
    /// missing in a NACK_FRAG (part of `frags_sent`).
    pub frags_resent: u64,
    /// Times a reliable writer's fragment stream to a reader stopped at a
    /// full window ([`Config::frag_window`]) to wait for the reader's
    /// confirmation: the pacing of large samples at work.
    pub frag_window_waits: u64,
    /// Windows of fragments a reader did not confirm within a millisecond:
    /// asked for again (a reader that confirmed before: busy, or a
    /// HEARTBEAT_FRAG or NACK_FRAG lost), or sent past (readers of other
    /// vendors, which confirm nothing: the interval is their pacing).
    pub frag_window_timeouts: u64,
    /// NACK_FRAGs sent that confirm fragments (all of them received up to
    /// what a HEARTBEAT_FRAG named), so a paced writer sends the next window.
    pub frag_confirms_sent: u64,
    /// Datagrams handed to the [`Outbox`].
    pub tx_datagrams: u64,
    /// Their bytes.
    pub tx_bytes: u64,
    /// Samples resent in answer to an ACKNACK (DATA, or all its DATA_FRAGs
    /// counted as one).
    pub retransmits: u64,
    /// GAP submessages sent for requested samples the history no longer holds.
    pub gaps_sent: u64,
    /// HEARTBEAT submessages sent.
    pub heartbeats_sent: u64,
    /// HEARTBEATs ignored: their count was not newer than the last one, or
    /// they named less than was received and were not confirmed.
    pub heartbeats_stale: u64,
    /// ACKNACK submessages sent.
    pub acknacks_sent: u64,
    /// ACKNACKs ignored because their count was not newer than the last one.
    pub acknacks_stale: u64,
    /// NACKed samples not resent because they were resent moments ago.
    pub nacks_suppressed: u64,
    /// SPDP/SEDP announcements refused (malformed, must-understand, wrong
    /// domain), and announcements and goodbyes naming a participant (SPDP)
    /// or endpoint (SEDP) of another participant than their sender.
    pub discovery_rejected: u64,
    /// Participants or endpoints not admitted because the limits were
    /// reached (the table's, or one participant's share of the endpoint table).
    pub discovery_over_limit: u64,
    /// Remote participants admitted (first SPDP announcement accepted).
    pub participants_discovered: u64,
    /// SPDP announcements whose unicast locators were not on the sender's
    /// address, and SEDP announcements whose endpoint locators were not on
    /// their participant's: that address was used instead.
    pub locators_untrusted: u64,
    /// Participants dropped from a full table to make room (see [`LostReason::Evicted`]).
    pub participants_evicted: u64,
    /// Remote participants forgotten because their lease ran out without a
    /// goodbye.
    pub leases_expired: u64,
    /// Endpoint pairs with the same topic and type names not matched because
    /// their QoS or data representations do not fit (an
    /// [`Event::IncompatibleQos`] each).
    pub incompatible_qos: u64,
    /// Events dropped, oldest first, because the application had not polled
    /// [`Participant::poll_event`] and [`Config::max_events`] were queued.
    pub events_dropped: u64,
    /// HEARTBEAT, GAP, ACKNACK, DATA (or their fragment kinds) refused as
    /// implausible: sequence numbers the writer cannot have sent or the
    /// reader cannot have received, inverted ranges, zero or negative numbers.
    pub implausible: u64,
    /// State a forged or corrupted message had changed, won back from the
    /// real peer's traffic (a count or a reader's expected sequence number).
    pub resyncs: u64,
}

/// Handle of a local writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriterId(usize);
/// Handle of a local reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReaderId(usize);

/// Why a participant went away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LostReason {
    /// Nothing was heard from it for its lease (bounded to
    /// [`MIN_LEASE_NS`]..=[`Config::max_lease_ns`]).
    LeaseExpired,
    /// It announced its departure (SPDP with the disposed status) and was
    /// then silent for [`DISPOSE_GRACE_NS`].
    Disposed,
    /// The participant table was full and a newcomer took its place (it had
    /// never announced an endpoint, or a configured peer needed the room).
    Evicted,
}

/// What happened in discovery, for the application to react to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A remote participant's first SPDP announcement was accepted.
    ParticipantDiscovered {
        /// Its GUID prefix.
        prefix: GuidPrefix,
        /// Its PID_USER_DATA (empty without one).
        user_data: Vec<u8>,
    },
    /// A remote participant was forgotten, and its endpoints with it
    /// (their unmatched events come first).
    ParticipantLost {
        /// Its GUID prefix.
        prefix: GuidPrefix,
        /// Why it was forgotten.
        reason: LostReason,
    },
    /// A local writer matched a remote reader: it sends it samples from now on.
    WriterMatched {
        /// The local writer.
        writer: WriterId,
        /// The remote reader's GUID.
        reader: Guid,
    },
    /// A local reader matched a remote writer: it takes its samples from now on.
    ReaderMatched {
        /// The local reader.
        reader: ReaderId,
        /// The remote writer's GUID.
        writer: Guid,
    },
    /// A remote reader went away (SEDP dispose, or its participant was
    /// lost), or was announced again and no longer matches (its partitions,
    /// QoS, topic or type changed).
    WriterUnmatched {
        /// The local writer.
        writer: WriterId,
        /// The remote reader's GUID.
        reader: Guid,
    },
    /// A remote writer went away (SEDP dispose, or its participant was
    /// lost), or was announced again and no longer matches (its partitions,
    /// QoS, topic or type changed).
    ReaderUnmatched {
        /// The local reader.
        reader: ReaderId,
        /// The remote writer's GUID.
        writer: Guid,
    },
    /// A remote endpoint with our topic and type names was not matched: its
    /// QoS or data representations do not fit ours. Reported when it is
    /// announced, and again when an announcement of it changes what does not
    /// fit (after the unmatched event if it was matched).
    IncompatibleQos {
        /// Our writer or reader.
        local: Guid,
        /// The remote endpoint.
        remote: Guid,
        /// The first thing that does not fit.
        reason: Incompatible,
    },
    /// A reader delivered a sample over its latency budget (judged only
    /// when the clocks agree; at most one per reader per
    /// [`Config::budget_event_interval_ns`]: [`Participant::reader_budget`]
    /// counts every one).
    BudgetExceeded {
        /// The local reader.
        reader: ReaderId,
        /// The writer of the sample.
        writer: Guid,
        /// Its sequence number.
        sn: SequenceNumber,
        /// Its one-way latency, ns.
        latency_ns: u64,
        /// Why it was late.
        cause: Cause,
    },
    /// A remote writer on a local reader's topic whose samples the reader
    /// cannot decode. Reported once per remote writer and the type it
    /// announced (again only if it announces another type), whichever
    /// local reader met it first.
    UndecodableType {
        /// The local reader.
        reader: ReaderId,
        /// The remote writer.
        writer: Guid,
        /// The type name the remote writer announced.
        type_name: String,
        /// Why its samples cannot be decoded here.
        why: Undecodable,
    },
}

/// Why a remote writer's samples cannot be decoded by a local reader
/// ([`Event::UndecodableType`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undecodable {
    /// It announced another type name on the reader's topic: it is not
    /// matched, none of its samples reaches the reader.
    OtherTypeName,
    /// It announced the reader's type name, but a sample did not
    /// deserialize as the reader's type (another layout under the same
    /// name): carried is the first sample's error. Every such sample is
    /// counted in [`ReaderStatus::undecodable`] and dropped.
    Layout(WireError),
}

/// What a reader knows about a sample it hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleInfo {
    /// GUID of the writer that wrote it.
    pub writer: Guid,
    /// The writer's sequence number (writerSN) of the sample.
    pub sn: SequenceNumber,
    /// The source timestamp: the INFO_TS that preceded the DATA, if the
    /// writer sent one.
    pub source_timestamp: Option<Time>,
    /// When the engine received it (the `now` of that datagram).
    pub reception_ns: u64,
    /// A sample (false: a dispose/unregister without data).
    pub valid_data: bool,
    /// STATUS_INFO bits of its inline QoS (1 disposed, 2 unregistered; 0 for
    /// an ordinary sample).
    pub status_info: u32,
    /// The instance's key hash: from the inline QoS when the writer sent
    /// one, else (keyed topics) read from the payload.
    pub key_hash: Option<[u8; 16]>,
    /// The state of the sample's instance when it was taken.
    pub instance_state: InstanceState,
}

/// Status of a writer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStatus {
    /// Readers matched.
    pub matched: usize,
    /// Of those, the reliable readers (they acknowledge and hold the writer back).
    pub matched_reliable: usize,
    /// Samples written since creation.
    pub written: u64,
    /// Samples not yet acknowledged by every reliable reader (0 without
    /// reliable readers).
    pub unacknowledged: i64,
    /// Deadline periods ([`Qos::deadline_ns`]) that passed without a write,
    /// counted from the first write.
    pub offered_deadline_missed: u64,
    /// History slots grown because a sample was larger than any before
    /// (each is one allocation).
    pub slot_growths: u64,
    /// Instances in the history's table.
    pub instances: usize,
    /// Writes refused because the instance table was full.
    pub instances_refused: u64,
    /// ACKNACK/NACK_FRAG from its readers refused as implausible.
    pub implausible: u64,
}

/// Status of a reader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReaderStatus {
    /// Writers matched.
    pub matched: usize,
    /// Samples delivered into the cache, over all matched writers.
    pub received: u64,
    /// Samples lost, over all matched writers (see [`Counters::data_lost`]).
    pub lost: u64,
    /// Samples in the cache waiting to be taken.
    pub waiting: usize,
    /// Samples refused because a KEEP_ALL cache was full: a reliable
    /// writer's wait in the reorder window (or are sent again), a best-effort
    /// writer's are dropped.
    pub rejected: u64,
    /// Samples pushed out of the cache by newer ones before they were taken
    /// (KEEP_LAST depth, or more instances than `max_samples` holds).
    pub replaced: u64,
    /// Deadline periods ([`Qos::deadline_ns`]) that passed without a sample
    /// while writers were matched.
    pub requested_deadline_missed: u64,
    /// Slots grown (reorder windows, fragment buffers, cache) because a
    /// sample was larger than any before (each is one allocation).
    pub slot_growths: u64,
    /// Instances in the cache's table.
    pub instances: usize,
    /// Samples dropped because they were of one instance more than the table holds.
    pub instances_refused: u64,
    /// Samples whose key hash the writer sent inline (PID_KEY_HASH) instead of it being computed here.
    pub key_hashes_inline: u64,
    /// DATA/HEARTBEAT/GAP from its writers refused as implausible.
    pub implausible: u64,
    /// Samples taken that did not deserialize as the reader's type (a
    /// writer of another layout under the same type name), dropped: by
    /// [`Participant::take`], or reported by an application that decodes
    /// itself ([`Participant::report_undecodable`]).
    pub undecodable: u64,
}

/// Why a call into the engine failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// A create call when the participant already has
    /// [`Config::builtin_depth`] user writers (or readers), every one announced
    /// through SEDP, or 2^24 entity keys were used. Raise `builtin_depth`.
    #[error("entity limit reached: at most builtin_depth ({0}) writers and as many readers per participant (raise Config::builtin_depth)")]
    TooManyEntities(u32),
    /// The QoS cannot be honoured (KEEP_ALL with `max_samples` 0); fix it.
    #[error("invalid QoS: {0}")]
    BadQos(&'static str),
    /// [`Participant::take`]: the sample's payload does not deserialize as
    /// the type asked for (the writer's type differs, or its encapsulation is
    /// not plain CDR). The sample is consumed.
    #[error("sample does not deserialize: {0}")]
    Deserialize(WireError),
    /// A writer's TRANSPORT_PRIORITY has no traffic class on this endpoint
    /// ([`Config::priority`]): the message names the scheduler's classes.
    #[error("{0}")]
    Priority(PriorityError),
}

struct RemoteParticipant {
    data: ParticipantData,
    /// The last SPDP payload, so an unchanged re-announcement renews the lease without parsing.
    raw: Vec<u8>,
    meta_addr: Addr,
    default_addr: Addr,
    last_seen_ns: u64,
    /// When it was admitted (a newcomer may evict it only after a probation).
    added_ns: u64,
    /// Its SPDP came from a configured peer's address: never evicted for a newcomer that is not.
    configured: bool,
    /// It said goodbye (SPDP dispose): it goes once nothing more comes from
    /// it for [`DISPOSE_GRACE_NS`], so a corrupted dispose cannot end a live session.
    disposed: bool,
}

impl RemoteParticipant {
    /// Its lease, bounded ([`MIN_LEASE_NS`]..=`max`) so that a forged announcement cannot
    /// hold a table entry forever nor expire a real peer at once; shortened after a goodbye.
    fn lease_ns(&self, max: i64) -> u64 {
        let l = self.data.lease_ns.clamp(MIN_LEASE_NS, max.max(MIN_LEASE_NS)) as u64;
        if self.disposed {
            l.min(DISPOSE_GRACE_NS)
        } else {
            l
        }
    }
}

/// Shortest lease honoured.
pub const MIN_LEASE_NS: i64 = 1_000_000_000;
/// How long a participant that said goodbye stays while nothing more comes from it.
pub const DISPOSE_GRACE_NS: u64 = 1_000_000_000;
/// How long a newly admitted participant is safe from eviction by a newcomer
/// (a real peer announces its endpoints within milliseconds).
pub const PROBATION_NS: u64 = 3_000_000_000;

/// One remote participant's endpoints may take `1 / ENDPOINT_SHARE` of
/// [`Config::max_remote_endpoints`] (256 of the default 1024; ddsperf has 6
/// endpoints): a participant announcing without end leaves room for three
/// others at least. A peer with more endpoints than its share (a detpath
/// participant may have `builtin_depth` of each kind) needs a larger table.
pub const ENDPOINT_SHARE: usize = 4;

struct RemoteEndpoint {
    data: EndpointData,
    addr: Addr,
    /// An [`Event::UndecodableType`] was reported for it (and its announced type).
    undecodable_reported: bool,
}

/// Indices of the SEDP built-in writers and readers in the entity tables.
/// The SEDP readers' reorder window per remote participant (see `Participant::new`).
const SEDP_REORDER_WINDOW: usize = 16;
const SEDP_PUB: usize = 0;
const SEDP_SUB: usize = 1;
const FIRST_USER: usize = 2;

/// One DDS domain participant.
pub struct Participant {
    cfg: Config,
    tx: Vec<u8>,
    writers: Vec<WriterCore>,
    readers: Vec<ReaderCore>,
    remote_participants: Vec<RemoteParticipant>,
    remote_endpoints: Vec<RemoteEndpoint>,
    next_entity_key: u32,
    next_spdp_ns: u64,
    events: VecDeque<Event>,
    counters: Counters,
    /// Local endpoints created but not yet announced and matched.
    pending_writers: Vec<usize>,
    pending_readers: Vec<usize>,
    /// Deleted writers ([`SEDP_PUB`]) and readers ([`SEDP_SUB`]) whose SEDP
    /// dispose is still to be written: the SEDP writer and the GUID.
    pending_disposals: Vec<(usize, Guid)>,
    /// Participants to answer with a directed SPDP announcement.
    spdp_replies: Vec<Addr>,
    /// Serialized SEDP samples waiting to be processed (taken from the built-in readers).
    sedp_scratch: Vec<u8>,
    /// New participants whose SEDP endpoints still need matching with ours.
    pending_builtin: Vec<(GuidPrefix, u32, Addr)>,
    /// Our SPDP payload, serialized once.
    spdp_payload: Vec<u8>,
    /// Some reader has room again and owes its writers an ACKNACK.
    acks_due: bool,
}

fn sedp_qos(depth: u32) -> Qos {
    Qos { reliability: Reliability::Reliable, durability: Durability::TransientLocal, history: History::KeepAll, max_samples: depth.max(4), ..Qos::default() }
}

/// The SEDP writers' QoS: the last announcement of each endpoint (keyed by
/// its GUID), so that a deleted endpoint's dispose takes the place of its
/// announcement and the history holds what is, however many endpoints
/// came and went. Room for `depth` live endpoints and as many disposed ones.
fn sedp_writer_qos(depth: u32) -> Qos {
    let n = depth.max(4).saturating_mul(2);
    Qos { history: History::KeepLast(1), max_samples: n, max_instances: n, ..sedp_qos(depth) }
}

impl Participant {
    /// A participant; nothing is sent until the first [`handle_timeout`](Self::handle_timeout).
    pub fn new(cfg: Config, now: u64) -> Participant {
        let p = cfg.guid_prefix;
        let dg = cfg.max_datagram.max(256);
        let hb = cfg.heartbeat_period_ns;
        let writers = vec![
            WriterCore::new(
                Guid::new(p, EntityId::SEDP_PUBLICATIONS_WRITER),
                "DCPSPublication",
                "PublicationBuiltinTopicData",
                (true, Some(discovery_io::sedp_key)),
                sedp_writer_qos(cfg.builtin_depth),
                512,
                dg,
                hb,
            ),
            WriterCore::new(
                Guid::new(p, EntityId::SEDP_SUBSCRIPTIONS_WRITER),
                "DCPSSubscription",
                "SubscriptionBuiltinTopicData",
                (true, Some(discovery_io::sedp_key)),
                sedp_writer_qos(cfg.builtin_depth),
                512,
                dg,
                hb,
            ),
        ];
        let mut writers = writers;
        for w in &mut writers {
            w.mark = cfg.priority.discovery();
        }
        // The SEDP readers' reorder window per remote participant: SEDP announces an
        // endpoint once (and again on change), so a remote participant has a handful of
        // sequence numbers in flight, never 256. Each window is preallocated (the hot path
        // allocates nothing), and at the default 256 x 512 B two SEDP readers held 0.25 MiB per
        // remote participant: most of the 25 MiB per participant `pubsub scale` measured at 64.
        // More than SEDP_REORDER_WINDOW out of order costs a repair round, not a sample.
        let (w, m) = (cfg.reorder_window.min(SEDP_REORDER_WINDOW), cfg.max_sample_size);
        let readers = vec![
            ReaderCore::new(
                Guid::new(p, EntityId::SEDP_PUBLICATIONS_READER),
                "DCPSPublication",
                "PublicationBuiltinTopicData",
                (false, None),
                sedp_qos(cfg.builtin_depth),
                512,
                w,
                m,
                now,
            ),
            ReaderCore::new(
                Guid::new(p, EntityId::SEDP_SUBSCRIPTIONS_READER),
                "DCPSSubscription",
                "SubscriptionBuiltinTopicData",
                (false, None),
                sedp_qos(cfg.builtin_depth),
                512,
                w,
                m,
                now,
            ),
        ];
        Participant {
            tx: vec![0; dg],
            cfg,
            writers,
            readers,
            remote_participants: Vec::new(),
            remote_endpoints: Vec::new(),
            next_entity_key: 1,
            next_spdp_ns: now,
            events: VecDeque::new(),
            counters: Counters::default(),
            pending_writers: Vec::new(),
            pending_readers: Vec::new(),
            pending_disposals: Vec::new(),
            spdp_replies: Vec::new(),
            sedp_scratch: Vec::with_capacity(4096),
            pending_builtin: Vec::new(),
            spdp_payload: Vec::new(),
            acks_due: false,
        }
    }

    /// This participant's GUID prefix.
    pub fn guid_prefix(&self) -> GuidPrefix {
        self.cfg.guid_prefix
    }
    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }
    /// Counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }
    /// The next discovery or status event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
    /// Known remote participants: prefix and user data.
    pub fn remote_participants(&self) -> impl Iterator<Item = (GuidPrefix, &[u8])> {
        self.remote_participants.iter().map(|r| (r.data.guid_prefix, r.data.user_data.as_slice()))
    }
    /// Number of known remote endpoints.
    pub fn remote_endpoint_count(&self) -> usize {
        self.remote_endpoints.len()
    }
    /// Known remote endpoints as their SEDP announced them.
    pub fn remote_endpoints(&self) -> impl Iterator<Item = &EndpointData> {
        self.remote_endpoints.iter().map(|e| &e.data)
    }

    fn push_event(&mut self, e: Event) {
        if self.events.len() >= self.cfg.max_events {
            self.events.pop_front();
            self.counters.events_dropped += 1;
        }
        self.events.push_back(e);
    }

    fn next_key(&mut self) -> Result<u32, EngineError> {
        let k = self.next_entity_key;
        if k >= 1 << 24 {
            return Err(EngineError::TooManyEntities(self.cfg.builtin_depth));
        }
        self.next_entity_key += 1;
        Ok(k)
    }

    /// The GUID of a new user entity of `kind`, once its QoS is sound and
    /// its side (writers or readers: `count` of them alive, built-in ones
    /// included) has room: every live endpoint's announcement stays in the
    /// SEDP history for late joiners, so the history's depth bounds each side.
    fn new_user_guid(&mut self, count: usize, qos: &Qos, kind: u8) -> Result<Guid, EngineError> {
        if qos.history == History::KeepAll && qos.max_samples == 0 {
            return Err(EngineError::BadQos("KEEP_ALL needs max_samples > 0"));
        }
        if count - FIRST_USER >= self.cfg.builtin_depth.max(4) as usize {
            return Err(EngineError::TooManyEntities(self.cfg.builtin_depth));
        }
        let key = self.next_key()?;
        Ok(Guid::new(self.cfg.guid_prefix, EntityId::user(key, kind)))
    }

    /// Creates a writer. `slot_size` preallocates each history slot (serialized
    /// bytes); it is announced and matched at the next [`handle_timeout`](Self::handle_timeout).
    /// A keyed writer without a key reader ([`create_writer_keyed`](Self::create_writer_keyed)) writes one instance.
    pub fn create_writer(&mut self, topic: &str, type_name: &str, keyed: bool, qos: Qos, slot_size: usize) -> Result<WriterId, EngineError> {
        self.create_writer_keyed(topic, type_name, (keyed, None), qos, slot_size)
    }

    /// Creates a writer whose samples `key_of` sorts into instances (a keyed topic).
    pub fn create_writer_keyed(
        &mut self,
        topic: &str,
        type_name: &str,
        keying: (bool, Option<KeyOf>),
        qos: Qos,
        slot_size: usize,
    ) -> Result<WriterId, EngineError> {
        let entity_kind = if keying.0 { kind::USER_WRITER_WITH_KEY } else { kind::USER_WRITER_NO_KEY };
        let alive = self.writers.iter().filter(|w| !w.deleted).count();
        let mark = self.cfg.priority.mark(qos.transport_priority).map_err(EngineError::Priority)?;
        let guid = self.new_user_guid(alive, &qos, entity_kind)?;
        let mut w = WriterCore::new(guid, topic, type_name, keying, qos, slot_size.max(16), self.tx.len(), self.cfg.heartbeat_period_ns);
        w.mark = mark;
        w.frag_window = self.cfg.frag_window;
        // A deleted writer's slot is taken first: the table grows only with the writers alive at once.
        let i = match self.writers.iter().position(|w| w.deleted) {
            Some(i) => {
                self.writers[i] = w;
                i
            }
            None => {
                self.writers.push(w);
                self.writers.len() - 1
            }
        };
        self.pending_writers.push(i);
        Ok(WriterId(i))
    }

    /// Deletes a user writer: its readers are dropped, what it batched and
    /// did not [`flush`](Self::flush) is not sent, and its SEDP dispose goes
    /// out at the next [`handle_timeout`](Self::handle_timeout), so remote
    /// participants unmatch and forget it. Its slot, its [`WriterId`]
    /// included, goes to the next writer created: the handle must not be
    /// used again. False when `w` is not a user writer of this participant
    /// (or was deleted).
    pub fn delete_writer(&mut self, w: WriterId) -> bool {
        let i = w.0;
        if i < FIRST_USER || i >= self.writers.len() || self.writers[i].deleted {
            return false;
        }
        let guid = self.writers[i].guid;
        let before = self.pending_writers.len();
        self.pending_writers.retain(|&k| k != i);
        if self.pending_writers.len() == before {
            // Announced: peers may know it. (Never announced, it was never matched either.)
            self.pending_disposals.push((SEDP_PUB, guid));
        }
        self.writers[i] = WriterCore::tombstone(guid);
        true
    }

    /// Deletes a user reader: what waits in its cache is dropped, and its
    /// SEDP dispose goes out at the next [`handle_timeout`](Self::handle_timeout),
    /// so remote writers unmatch it and stop sending to it. Its slot, its
    /// [`ReaderId`] included, goes to the next reader created: the handle
    /// must not be used again. False when `r` is not a user reader of this
    /// participant (or was deleted).
    pub fn delete_reader(&mut self, r: ReaderId) -> bool {
        let i = r.0;
        if i < FIRST_USER || i >= self.readers.len() || self.readers[i].deleted {
            return false;
        }
        let guid = self.readers[i].guid;
        let before = self.pending_readers.len();
        self.pending_readers.retain(|&k| k != i);
        if self.pending_readers.len() == before {
            self.pending_disposals.push((SEDP_SUB, guid));
        }
        self.readers[i] = ReaderCore::tombstone(guid);
        true
    }

    /// Creates a reader (announced and matched at the next [`handle_timeout`](Self::handle_timeout)).
    /// A keyed reader without a key reader ([`create_reader_keyed`](Self::create_reader_keyed))
    /// sorts samples by the key hashes writers send inline (one instance without them).
    pub fn create_reader(&mut self, now: u64, topic: &str, type_name: &str, keyed: bool, qos: Qos, slot_size: usize) -> Result<ReaderId, EngineError> {
        self.create_reader_keyed(now, topic, type_name, (keyed, None), qos, slot_size)
    }

    /// Creates a reader whose samples `key_of` sorts into instances (a keyed topic).
    pub fn create_reader_keyed(
        &mut self,
        now: u64,
        topic: &str,
        type_name: &str,
        keying: (bool, Option<KeyOf>),
        qos: Qos,
        slot_size: usize,
    ) -> Result<ReaderId, EngineError> {
        let entity_kind = if keying.0 { kind::USER_READER_WITH_KEY } else { kind::USER_READER_NO_KEY };
        let alive = self.readers.iter().filter(|r| !r.deleted).count();
        let guid = self.new_user_guid(alive, &qos, entity_kind)?;
        let mut r = ReaderCore::new(guid, topic, type_name, keying, qos, slot_size.max(16), self.cfg.reorder_window, self.cfg.max_sample_size, now);
        r.clock = self.cfg.clock;
        r.budget_event_interval_ns = self.cfg.budget_event_interval_ns;
        r.budget.clock = if self.cfg.clock_synchronised { ClockSync::Synchronised } else { ClockSync::Unsynchronised };
        r.budget.budget_ns = r.qos.latency_budget_ns;
        // A deleted reader's slot is taken first, as for writers.
        let i = match self.readers.iter().position(|r| r.deleted) {
            Some(i) => {
                self.readers[i] = r;
                i
            }
            None => {
                self.readers.push(r);
                self.readers.len() - 1
            }
        };
        self.pending_readers.push(i);
        Ok(ReaderId(i))
    }

    /// Typed writer for `T`.
    pub fn create_writer_for<T: TopicType>(&mut self, topic: &str, qos: Qos, prototype: &T) -> Result<WriterId, EngineError> {
        self.create_writer_keyed(topic, T::TYPE_NAME, (T::KEYED, Some(crate::types::key_hash_from::<T>)), qos, prototype.size_hint())
    }
    /// Typed reader for `T`.
    pub fn create_reader_for<T: TopicType>(&mut self, now: u64, topic: &str, qos: Qos, prototype: &T) -> Result<ReaderId, EngineError> {
        self.create_reader_keyed(now, topic, T::TYPE_NAME, (T::KEYED, Some(crate::types::key_hash_from::<T>)), qos, prototype.size_hint())
    }

    /// The GUID of a local writer.
    pub fn writer_guid(&self, w: WriterId) -> Guid {
        self.writers[w.0].guid
    }
    /// The GUID of a local reader.
    pub fn reader_guid(&self, r: ReaderId) -> Guid {
        self.readers[r.0].guid
    }
    /// The DSCP and traffic class every datagram of a local writer carries
    /// (from its TRANSPORT_PRIORITY by [`Config::priority`]).
    pub fn writer_mark(&self, w: WriterId) -> TxMark {
        self.writers[w.0].mark
    }

    /// Writes one sample, serialized by `T` straight into the transmit buffer.
    pub fn write<T: TopicType>(
        &mut self,
        now: u64,
        out: &mut dyn Outbox,
        w: WriterId,
        source_ts: Option<Time>,
        sample: &T,
    ) -> Result<SequenceNumber, WriteError> {
        self.write_with(now, out, w, source_ts, &|bw: &mut ByteWriter<'_>| write_payload(bw, Xcdr::V1, |c| sample.serialize(c)).map(|_| ()))
    }

    /// Writes one sample whose serialized payload (encapsulation header included) `serialize` writes.
    pub fn write_with(
        &mut self,
        now: u64,
        out: &mut dyn Outbox,
        w: WriterId,
        source_ts: Option<Time>,
        serialize: &dyn Fn(&mut ByteWriter<'_>) -> Result<(), WireError>,
    ) -> Result<SequenceNumber, WriteError> {
        self.on_user_writer(w, out, |wr, ctx| wr.write(ctx, now, source_ts, serialize))
    }

    /// Runs `f` on user writer `w` with a transmit context, or says there is no such writer.
    fn on_user_writer<R>(
        &mut self,
        w: WriterId,
        out: &mut dyn Outbox,
        f: impl FnOnce(&mut WriterCore, &mut Ctx<'_>) -> Result<R, WriteError>,
    ) -> Result<R, WriteError> {
        if w.0 < FIRST_USER || w.0 >= self.writers.len() || self.writers[w.0].deleted {
            return Err(WriteError::NoSuchWriter);
        }
        let mut ctx = Ctx::new(self.cfg.guid_prefix, &mut self.tx, out, &mut self.counters);
        f(&mut self.writers[w.0], &mut ctx)
    }

    /// Writes one sample into the writer's batch: several samples share a
    /// datagram, sent when full or at [`flush`](Self::flush) (throughput;
    /// latency-sensitive writes use [`write`](Self::write)).
    pub fn write_batched<T: TopicType>(
        &mut self,
        now: u64,
        out: &mut dyn Outbox,
        w: WriterId,
        source_ts: Option<Time>,
        sample: &T,
    ) -> Result<SequenceNumber, WriteError> {
        self.on_user_writer(w, out, |wr, ctx| {
            wr.write_batched(ctx, now, source_ts, &|bw: &mut ByteWriter<'_>| write_payload(bw, Xcdr::V1, |c| sample.serialize(c)).map(|_| ()))
        })
    }

    /// Disposes the instance of `sample`'s key (DATA with STATUS_INFO
    /// disposed and the key hash inline, and the serialized key:
    /// [`write_status_of`](Self::write_status_of)). Readers see the instance disposed.
    pub fn dispose<T: TopicType>(
        &mut self,
        now: u64,
        out: &mut dyn Outbox,
        w: WriterId,
        source_ts: Option<Time>,
        sample: &T,
    ) -> Result<SequenceNumber, WriteError> {
        self.write_status_of(now, out, w, source_ts, sample, crate::discovery::status_info::DISPOSED)
    }

    /// Unregisters the instance of `sample`'s key: this writer no longer
    /// writes it (readers see "no writers" once every writer of it has).
    pub fn unregister<T: TopicType>(
        &mut self,
        now: u64,
        out: &mut dyn Outbox,
        w: WriterId,
        source_ts: Option<Time>,
        sample: &T,
    ) -> Result<SequenceNumber, WriteError> {
        self.write_status_of(now, out, w, source_ts, sample, crate::discovery::status_info::UNREGISTERED)
    }

    /// Disposes and/or unregisters (`status`: STATUS_INFO bits, 1 disposed,
    /// 2 unregistered) the instance with key hash `key`.
    pub fn write_status(
        &mut self,
        now: u64,
        out: &mut dyn Outbox,
        w: WriterId,
        source_ts: Option<Time>,
        key: [u8; 16],
        status: u32,
    ) -> Result<SequenceNumber, WriteError> {
        self.on_user_writer(w, out, |wr, ctx| wr.write_status(ctx, now, source_ts, key, status, &[]))
    }

    /// [`write_status`](Self::write_status) with the serialized key sent
    /// too (`serialized_key`: encapsulation header and the key fields, as
    /// [`write_status_of`](Self::write_status_of) makes them; empty: none),
    /// for writers whose samples come serialized by the application.
    pub fn write_status_with_key(
        &mut self,
        now: u64,
        out: &mut dyn Outbox,
        w: WriterId,
        source_ts: Option<Time>,
        key: [u8; 16],
        status: u32,
        serialized_key: &[u8],
    ) -> Result<SequenceNumber, WriteError> {
        self.on_user_writer(w, out, |wr, ctx| wr.write_status(ctx, now, source_ts, key, status, serialized_key))
    }

    /// [`write_status`](Self::write_status) for the instance of `sample`'s
    /// key; a type that describes its key ([`TopicType::serialize_key`]) has
    /// the serialized key sent too (key flag, the writer's byte order, XCDR1
    /// as its samples), which CycloneDDS needs to find the instance: it
    /// cannot turn a key hash back into a key. Serialized on the stack.
    pub fn write_status_of<T: TopicType>(
        &mut self,
        now: u64,
        out: &mut dyn Outbox,
        w: WriterId,
        source_ts: Option<Time>,
        sample: &T,
        status: u32,
    ) -> Result<SequenceNumber, WriteError> {
        self.on_user_writer(w, out, |wr, ctx| {
            let key = sample.key_hash().unwrap_or_default();
            let mut buf = [0u8; crate::types::MAX_KEY_SIZE + 8];
            let n = if T::KEYED && T::KEY_MAX_SIZE != Some(0) {
                let mut bw = ByteWriter::new(&mut buf, true);
                write_payload(&mut bw, Xcdr::V1, |c| sample.serialize_key(c)).map_err(WriteError::Serialize)?
            } else {
                0
            };
            wr.write_status(ctx, now, source_ts, key, status, &buf[..n])
        })
    }

    /// The state of a reader's instance of key hash `key` (`None`: the
    /// reader has no such instance; unkeyed topics have one, any key).
    pub fn instance_state(&mut self, r: ReaderId, key: &[u8; 16]) -> Option<InstanceState> {
        self.readers.get_mut(r.0)?.cache.state_of(key)
    }

    /// Sends what a writer has batched.
    pub fn flush(&mut self, out: &mut dyn Outbox, w: WriterId) {
        if w.0 >= self.writers.len() {
            return;
        }
        let mut ctx = Ctx::new(self.cfg.guid_prefix, &mut self.tx, out, &mut self.counters);
        self.writers[w.0].flush(&mut ctx);
    }

    /// Takes the oldest sample of a reader into `sample` (deserialized,
    /// reusing its buffers). `Ok(None)` when nothing is waiting.
    pub fn take<T: TopicType>(&mut self, r: ReaderId, sample: &mut T) -> Result<Option<SampleInfo>, EngineError> {
        let cache = &mut self.readers[r.0].cache;
        let instance_state = cache.front_state();
        let Some(slot) = cache.front() else {
            return Ok(None);
        };
        let m = slot.meta;
        let info = SampleInfo {
            writer: m.writer,
            sn: SequenceNumber(m.sn),
            source_timestamp: m.source_ts,
            reception_ns: m.reception_ns,
            valid_data: m.valid_data,
            status_info: m.status_info,
            key_hash: m.key_hash,
            instance_state,
        };
        let res = if m.valid_data { CdrReader::from_payload(slot.payload()).and_then(|mut c| sample.deserialize_into(&mut c)) } else { Ok(()) };
        cache.pop();
        self.after_take(r.0);
        if let Err(e) = res {
            self.report_undecodable(r, m.writer, e);
            return Err(EngineError::Deserialize(e));
        }
        Ok(Some(info))
    }

    /// Counts a sample of reader `r` from `writer` that did not deserialize
    /// as the reader's type ([`ReaderStatus::undecodable`]) and, the first
    /// time for that writer and its announced type, reports it
    /// ([`Event::UndecodableType`] with [`Undecodable::Layout`]).
    /// [`take`](Self::take) calls it; an application that takes raw bytes
    /// ([`take_raw`](Self::take_raw)) and decodes them itself calls it for
    /// each sample it could not decode.
    pub fn report_undecodable(&mut self, r: ReaderId, writer: Guid, error: WireError) {
        let Some(x) = self.readers.get_mut(r.0) else { return };
        x.undecodable += 1;
        if r.0 < FIRST_USER {
            return;
        }
        if let Some(re) = self.remote_endpoints.iter_mut().find(|e| e.data.guid == writer) {
            if !std::mem::replace(&mut re.undecodable_reported, true) {
                let type_name = re.data.type_name.clone();
                self.push_event(Event::UndecodableType { reader: r, writer, type_name, why: Undecodable::Layout(error) });
            }
        }
    }

    /// Takes the oldest sample as raw serialized bytes, handed to `f`.
    pub fn take_raw<R>(&mut self, r: ReaderId, f: impl FnOnce(&SampleInfo, &[u8]) -> R) -> Option<R> {
        let cache = &mut self.readers[r.0].cache;
        let instance_state = cache.front_state();
        let slot = cache.front()?;
        let m = slot.meta;
        let info = SampleInfo {
            writer: m.writer,
            sn: SequenceNumber(m.sn),
            source_timestamp: m.source_ts,
            reception_ns: m.reception_ns,
            valid_data: m.valid_data,
            status_info: m.status_info,
            key_hash: m.key_hash,
            instance_state,
        };
        let out = f(&info, slot.payload());
        cache.pop();
        self.after_take(r.0);
        Some(out)
    }

    /// A KEEP_ALL reader that refused samples because its cache was full
    /// tells its writers as soon as there is room (at the next timeout, now).
    fn after_take(&mut self, i: usize) {
        let r = &mut self.readers[i];
        if r.blocked && !r.cache.is_full() {
            r.unblock();
            r.ack_due = true;
            self.acks_due = true;
        }
    }

    /// Status of a writer.
    pub fn writer_status(&self, w: WriterId) -> WriterStatus {
        let x = &self.writers[w.0];
        WriterStatus {
            matched: x.proxies.len(),
            matched_reliable: x.proxies.iter().filter(|p| p.reliable).count(),
            written: x.written,
            unacknowledged: x.unacked(),
            offered_deadline_missed: x.deadline_missed,
            slot_growths: x.slot_growths,
            instances: x.history.instances(),
            instances_refused: x.instances_refused,
            implausible: x.implausible,
        }
    }

    /// Status of a reader.
    pub fn reader_status(&self, r: ReaderId) -> ReaderStatus {
        let x = &self.readers[r.0];
        ReaderStatus {
            matched: x.proxies.len(),
            received: x.proxies.iter().map(|p| p.received).sum(),
            lost: x.lost(),
            waiting: x.cache.len(),
            rejected: x.rejected,
            replaced: x.cache.replaced,
            requested_deadline_missed: x.deadline_missed,
            slot_growths: x.slot_growths + x.cache.growths,
            instances: x.cache.instances(),
            instances_refused: x.cache.instances_refused,
            key_hashes_inline: x.key_hashes_inline,
            implausible: x.implausible,
            undecodable: x.undecodable,
        }
    }

    /// A reader's latency-budget accounting ([`crate::budget`]): samples
    /// within and over budget (with causes), unjudged, implausible, the
    /// latency histogram, the budget and whether the clocks agree (the
    /// last sample's writer's).
    pub fn reader_budget(&self, r: ReaderId) -> &BudgetStats {
        &self.readers[r.0].budget
    }

    /// Moves the readers' pending over-budget reports into the event queue.
    fn collect_budget_events(&mut self) {
        for i in FIRST_USER..self.readers.len() {
            if let Some((writer, sn, latency_ns, cause)) = self.readers[i].budget_event.take() {
                self.push_event(Event::BudgetExceeded { reader: ReaderId(i), writer, sn: SequenceNumber(sn), latency_ns, cause });
            }
        }
    }

    /// The earliest time [`handle_timeout`](Self::handle_timeout) has work to do.
    pub fn next_timeout(&self) -> u64 {
        if !self.pending_writers.is_empty()
            || !self.pending_readers.is_empty()
            || !self.pending_disposals.is_empty()
            || !self.spdp_replies.is_empty()
            || !self.pending_builtin.is_empty()
            || self.acks_due
        {
            return 0;
        }
        let mut t = self.next_spdp_ns;
        for w in &self.writers {
            t = t.min(w.next_timeout());
        }
        for r in &self.readers {
            t = t.min(r.next_timeout());
        }
        for rp in &self.remote_participants {
            t = t.min(rp.last_seen_ns.saturating_add(rp.lease_ns(self.cfg.max_lease_ns)));
        }
        t
    }

    /// Timer work due at `now`: announcements, heartbeats, lease expiry, deadlines.
    pub fn handle_timeout(&mut self, now: u64, out: &mut dyn Outbox) {
        if !self.pending_writers.is_empty() || !self.pending_readers.is_empty() || !self.pending_disposals.is_empty() || !self.pending_builtin.is_empty() {
            self.announce_pending(now, out);
        }
        if !self.spdp_replies.is_empty() {
            let targets = std::mem::take(&mut self.spdp_replies);
            for t in &targets {
                self.send_spdp(out, *t, false);
            }
        }
        if now >= self.next_spdp_ns {
            for i in 0..self.cfg.spdp_targets.len() {
                let t = self.cfg.spdp_targets[i];
                self.send_spdp(out, t, false);
            }
            for i in 0..self.remote_participants.len() {
                let t = self.remote_participants[i].meta_addr;
                if !self.cfg.spdp_targets.contains(&t) {
                    self.send_spdp(out, t, false);
                }
            }
            self.next_spdp_ns = now + self.cfg.spdp_interval_ns;
        }
        self.expire_leases(now);
        let mut ctx = Ctx::new(self.cfg.guid_prefix, &mut self.tx, out, &mut self.counters);
        if std::mem::take(&mut self.acks_due) {
            for r in &mut self.readers {
                if std::mem::take(&mut r.ack_due) {
                    r.send_acks(&mut ctx);
                }
            }
        }
        for w in &mut self.writers {
            w.poll(&mut ctx, now);
        }
        for r in &mut self.readers {
            r.poll(now);
        }
    }

    /// Announces this participant gone (SPDP dispose) to everyone it knows.
    pub fn shutdown(&mut self, out: &mut dyn Outbox) {
        let mut targets = self.cfg.spdp_targets.clone();
        for r in &self.remote_participants {
            if !targets.contains(&r.meta_addr) {
                targets.push(r.meta_addr);
            }
        }
        for t in targets {
            self.send_spdp(out, t, true);
        }
    }

    /// One received datagram from `src`, received at `now`.
    pub fn handle_datagram(&mut self, now: u64, src: impl Into<Addr>, data: &[u8], out: &mut dyn Outbox) {
        let src = src.into();
        self.counters.rx_datagrams += 1;
        self.counters.rx_bytes += data.len() as u64;
        if self.cfg.peers_only && !self.is_configured_peer(src) {
            self.counters.rx_not_from_peer += 1;
            return;
        }
        let msg = match Message::parse(data) {
            Ok(m) => m,
            Err(_) => {
                self.counters.rx_malformed += 1;
                return;
            }
        };
        let me = self.cfg.guid_prefix;
        if msg.header.guid_prefix == me {
            self.counters.rx_own += 1;
            return;
        }
        let mut src_prefix = msg.header.guid_prefix;
        let mut dst = me;
        let mut ts: Option<Time> = None;
        if let Some(rp) = self.remote_participants.iter_mut().find(|r| r.data.guid_prefix == src_prefix) {
            rp.last_seen_ns = now;
        }
        let mut sedp_dirty = false;
        for sub in msg.submessages() {
            let sub = match sub {
                Ok(s) => s,
                Err(_) => {
                    self.counters.rx_malformed += 1;
                    break;
                }
            };
            match sub {
                Submessage::InfoTs(t) => {
                    ts = t;
                    continue;
                }
                Submessage::InfoDst(p) => {
                    dst = if p == GuidPrefix::UNKNOWN { me } else { p };
                    continue;
                }
                Submessage::InfoSrc(s) => {
                    src_prefix = s.guid_prefix;
                    continue;
                }
                Submessage::Pad => continue,
                Submessage::Unknown { .. } => {
                    self.counters.rx_unknown_submessages += 1;
                    continue;
                }
                _ => {}
            }
            if dst != me {
                self.counters.rx_not_for_us += 1;
                continue;
            }
            let mut ctx = Ctx::new(me, &mut self.tx, &mut *out, &mut self.counters);
            match sub {
                Submessage::Data(d) if d.writer_id == EntityId::SPDP_WRITER => {
                    self.on_spdp(now, src, src_prefix, &d);
                }
                Submessage::Data(d) => {
                    sedp_dirty |= to_readers(&mut self.readers, &mut ctx, d.reader_id, |r, c| r.on_data(c, now, src_prefix, ts, &d));
                }
                Submessage::DataFrag(f) => {
                    sedp_dirty |= to_readers(&mut self.readers, &mut ctx, f.reader_id, |r, c| r.on_data_frag(c, now, src_prefix, ts, &f));
                }
                Submessage::Heartbeat(h) => {
                    sedp_dirty |= to_readers(&mut self.readers, &mut ctx, h.reader_id, |r, c| r.on_heartbeat(c, now, src_prefix, &h));
                }
                Submessage::Gap(g) => {
                    sedp_dirty |= to_readers(&mut self.readers, &mut ctx, g.reader_id, |r, c| r.on_gap(c, now, src_prefix, &g));
                }
                Submessage::HeartbeatFrag(h) => {
                    for r in self.readers.iter_mut() {
                        if h.reader_id == EntityId::UNKNOWN || h.reader_id == r.guid.entity {
                            r.on_heartbeat_frag(&mut ctx, now, src_prefix, &h);
                        }
                    }
                }
                Submessage::AckNack(a) => {
                    let hit = self.writers.iter_mut().any(|w| w.guid.entity == a.writer_id && w.on_acknack(&mut ctx, now, src_prefix, &a));
                    if !hit {
                        ctx.counters.rx_unmatched += 1;
                    }
                }
                Submessage::NackFrag(n) => {
                    let hit = self.writers.iter_mut().any(|w| w.guid.entity == n.writer_id && w.on_nack_frag(&mut ctx, now, src_prefix, &n));
                    if !hit {
                        ctx.counters.rx_unmatched += 1;
                    }
                }
                _ => {}
            }
        }
        if sedp_dirty {
            self.process_sedp(now, out);
        }
        self.collect_budget_events();
    }

    fn expire_leases(&mut self, now: u64) {
        let mut i = 0;
        while i < self.remote_participants.len() {
            let rp = &self.remote_participants[i];
            let lease = rp.lease_ns(self.cfg.max_lease_ns);
            if now > rp.last_seen_ns.saturating_add(lease) {
                let prefix = rp.data.guid_prefix;
                let reason = if rp.disposed { LostReason::Disposed } else { LostReason::LeaseExpired };
                if !rp.disposed {
                    self.counters.leases_expired += 1;
                }
                self.drop_participant(prefix, reason);
            } else {
                i += 1;
            }
        }
    }

    /// Forgets a participant and everything matched with its endpoints.
    pub(super) fn drop_participant(&mut self, prefix: GuidPrefix, reason: LostReason) {
        let before = self.remote_participants.len();
        self.remote_participants.retain(|r| r.data.guid_prefix != prefix);
        if self.remote_participants.len() == before {
            return;
        }
        self.pending_builtin.retain(|(p, _, _)| *p != prefix);
        self.remote_endpoints.retain(|e| e.data.guid.prefix != prefix);
        let mut evs = Vec::new();
        for (i, w) in self.writers.iter_mut().enumerate() {
            for p in w.proxies.iter().filter(|p| p.guid.prefix == prefix) {
                if i >= FIRST_USER {
                    evs.push(Event::WriterUnmatched { writer: WriterId(i), reader: p.guid });
                }
            }
            w.remove_proxies(|g| g.prefix == prefix);
        }
        for (i, r) in self.readers.iter_mut().enumerate() {
            for p in r.proxies.iter().filter(|p| p.guid.prefix == prefix) {
                if i >= FIRST_USER {
                    evs.push(Event::ReaderUnmatched { reader: ReaderId(i), writer: p.guid });
                }
            }
            r.remove_proxies(|g| g.prefix == prefix);
        }
        for e in evs {
            self.push_event(e);
        }
        self.push_event(Event::ParticipantLost { prefix, reason });
    }

    fn local_participant_data(&self) -> ParticipantData {
        ParticipantData {
            guid_prefix: self.cfg.guid_prefix,
            protocol_version: ProtocolVersion::V2_1,
            vendor: VendorId::DETPATH,
            domain_id: Some(self.cfg.domain_id),
            default_unicast: vec![self.cfg.local.locator()],
            metatraffic_unicast: vec![self.cfg.local.locator()],
            metatraffic_multicast: self.cfg.metatraffic_multicast.iter().map(Addr::locator).collect(),
            lease_ns: self.cfg.lease_ns,
            builtin_endpoints: builtin::DETPATH,
            user_data: self.cfg.user_data.clone(),
            host_id: self.cfg.host_id,
        }
    }
}

/// Offers a reader-addressed submessage to every reader it names (all of them
/// for ENTITYID_UNKNOWN) and counts it unmatched when none took it; true when
/// a built-in (discovery) reader took it, so SEDP has news to process.
fn to_readers(readers: &mut [ReaderCore], ctx: &mut Ctx<'_>, reader_id: EntityId, mut offer: impl FnMut(&mut ReaderCore, &mut Ctx<'_>) -> bool) -> bool {
    let (mut hit, mut builtin) = (false, false);
    for (i, r) in readers.iter_mut().enumerate() {
        if reader_id == EntityId::UNKNOWN || reader_id == r.guid.entity {
            let matched = offer(r, ctx);
            hit |= matched;
            builtin |= matched && i < FIRST_USER;
        }
    }
    if !hit {
        ctx.counters.rx_unmatched += 1;
    }
    builtin
}
