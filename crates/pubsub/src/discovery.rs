//! Discovery data: the SPDP participant announcement and the SEDP
//! publication/subscription announcements, as parameter lists (§9.6.2/§9.6.3),
//! and the standard port mapping (§9.6.1.1).
//!
//! Parsing allocates (names, locator lists): it runs once per discovered
//! entity, not per sample. Parameters a receiver may ignore are skipped;
//! an unknown parameter with the must-understand bit makes the whole
//! announcement invalid, as the spec requires.

use crate::qos::*;
use crate::wire::bytes::{ByteReader, ByteWriter};
use crate::wire::cdr::repr;
use crate::wire::plist::{pid, read_string, ParamList, ParamWriter};
use crate::wire::{EntityId, Guid, GuidPrefix, Locator, ProtocolVersion, Time, VendorId, WireError};

/// Standard port mapping parameters: PB, DG, PG, d0..d3.
pub mod ports {
    /// PB, the port base: 7400.
    pub const PB: u32 = 7400;
    /// DG, the domain id gain: ports of domain d start at PB + DG·d.
    pub const DG: u32 = 250;
    /// PG, the participant id gain: participant index i adds PG·i.
    pub const PG: u32 = 2;
    /// d0, the offset of the metatraffic (SPDP) multicast port.
    pub const D0: u32 = 0;
    /// d1, the offset of the metatraffic unicast ports.
    pub const D1: u32 = 10;
    /// d2, the offset of the user-traffic multicast port.
    pub const D2: u32 = 1;
    /// d3, the offset of the user-traffic unicast ports.
    pub const D3: u32 = 11;

    /// SPDP unicast (metatraffic) port of participant `index` in `domain`.
    pub fn metatraffic_unicast(domain: u32, index: u32) -> u32 {
        PB + DG * domain + D1 + PG * index
    }
    /// User-traffic unicast port of participant `index` in `domain`.
    pub fn user_unicast(domain: u32, index: u32) -> u32 {
        PB + DG * domain + D3 + PG * index
    }
    /// SPDP multicast port of `domain`.
    pub fn metatraffic_multicast(domain: u32) -> u32 {
        PB + DG * domain + D0
    }
    /// The (domain, participant index) whose metatraffic unicast port this is, if any.
    pub fn index_of_metatraffic_port(domain: u32, port: u32) -> Option<u32> {
        let base = metatraffic_unicast(domain, 0);
        (port >= base && (port - base).is_multiple_of(PG)).then(|| (port - base) / PG)
    }
}

/// The SPDP multicast group (§9.6.1.4.1, default `SPDP_WELL_KNOWN_MULTICAST`).
pub const SPDP_MULTICAST: std::net::Ipv4Addr = std::net::Ipv4Addr::new(239, 255, 0, 1);

/// Builtin endpoint set bits (§9.3.2).
pub mod builtin {
    /// DISC_BUILTIN_ENDPOINT_PARTICIPANT_ANNOUNCER: has the SPDP writer.
    pub const PARTICIPANT_ANNOUNCER: u32 = 1 << 0;
    /// DISC_BUILTIN_ENDPOINT_PARTICIPANT_DETECTOR: has the SPDP reader.
    pub const PARTICIPANT_DETECTOR: u32 = 1 << 1;
    /// DISC_BUILTIN_ENDPOINT_PUBLICATIONS_ANNOUNCER: has the SEDP publications writer.
    pub const PUBLICATIONS_ANNOUNCER: u32 = 1 << 2;
    /// DISC_BUILTIN_ENDPOINT_PUBLICATIONS_DETECTOR: has the SEDP publications reader.
    pub const PUBLICATIONS_DETECTOR: u32 = 1 << 3;
    /// DISC_BUILTIN_ENDPOINT_SUBSCRIPTIONS_ANNOUNCER: has the SEDP subscriptions writer.
    pub const SUBSCRIPTIONS_ANNOUNCER: u32 = 1 << 4;
    /// DISC_BUILTIN_ENDPOINT_SUBSCRIPTIONS_DETECTOR: has the SEDP subscriptions reader.
    pub const SUBSCRIPTIONS_DETECTOR: u32 = 1 << 5;
    /// What detpath has: SPDP and SEDP writers and readers, no participant-message or type-lookup endpoints.
    pub const DETPATH: u32 =
        PARTICIPANT_ANNOUNCER | PARTICIPANT_DETECTOR | PUBLICATIONS_ANNOUNCER | PUBLICATIONS_DETECTOR | SUBSCRIPTIONS_ANNOUNCER | SUBSCRIPTIONS_DETECTOR;
}

/// STATUS_INFO bits.
pub mod status_info {
    /// The writer disposed the instance (its data is gone).
    pub const DISPOSED: u32 = 1;
    /// The writer unregistered the instance (it no longer writes it).
    pub const UNREGISTERED: u32 = 2;
}

/// Why an announcement was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    /// The parameter list itself is malformed (the [`WireError`] says how).
    #[error("malformed: {0}")]
    Wire(#[from] WireError),
    /// The payload's encapsulation (carried here) is not PL_CDR_BE/LE.
    #[error("payload is not a parameter list (encapsulation {0:#06x})")]
    NotParamList(u16),
    /// A parameter the announcement needs (id carried here) is absent:
    /// PID_PARTICIPANT_GUID or PID_BUILTIN_ENDPOINT_SET for SPDP,
    /// PID_ENDPOINT_GUID, PID_TOPIC_NAME or PID_TYPE_NAME for SEDP.
    #[error("required parameter {0:#06x} missing")]
    Missing(u16),
    /// A parameter detpath does not know carries the must-understand bit (id
    /// carried here): the whole announcement is refused, as the spec requires.
    #[error("unknown parameter {0:#06x} marked must-understand")]
    MustUnderstand(u16),
    /// A known parameter's value (id carried here) is too short or out of
    /// range (e.g. a durability kind above 3, a participant GUID whose entity
    /// is not ENTITYID_PARTICIPANT).
    #[error("parameter {0:#06x} has a bad value")]
    BadValue(u16),
}

/// An SPDP announcement (ParticipantBuiltinTopicData).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParticipantData {
    /// The participant's GUID prefix (PID_PARTICIPANT_GUID).
    pub guid_prefix: GuidPrefix,
    /// PID_PROTOCOL_VERSION (2.1 when absent).
    pub protocol_version: ProtocolVersion,
    /// PID_VENDORID (zero when absent).
    pub vendor: VendorId,
    /// PID_DOMAIN_ID; `None` when absent (the announcement then counts for any domain).
    pub domain_id: Option<u32>,
    /// PID_DEFAULT_UNICAST_LOCATOR: where its endpoints receive user traffic
    /// unless they announce their own.
    pub default_unicast: Vec<Locator>,
    /// PID_METATRAFFIC_UNICAST_LOCATOR: where it receives SEDP and directed SPDP.
    pub metatraffic_unicast: Vec<Locator>,
    /// Groups the participant listens to for discovery traffic (CycloneDDS
    /// announces the SPDP group here when it uses multicast).
    pub metatraffic_multicast: Vec<Locator>,
    /// PID_PARTICIPANT_LEASE_DURATION, ns ([`INFINITE_NS`] for infinite; 100 s when absent).
    pub lease_ns: i64,
    /// PID_BUILTIN_ENDPOINT_SET: its built-in endpoints ([`builtin`] bits).
    pub builtin_endpoints: u32,
    /// PID_USER_DATA (empty when absent).
    pub user_data: Vec<u8>,
    /// A detpath participant's host id ([`pid::DETPATH_HOST_ID`]; `None`
    /// when absent or from another vendor): equal to ours, it reads our clock.
    pub host_id: Option<[u8; 16]>,
}

/// An SEDP announcement of a writer or reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointData {
    /// PID_ENDPOINT_GUID: the endpoint's GUID (its entity kind says writer or reader).
    pub guid: Guid,
    /// PID_TOPIC_NAME.
    pub topic_name: String,
    /// PID_TYPE_NAME.
    pub type_name: String,
    /// The QoS it announced (DDS defaults for what it did not).
    pub qos: Qos,
    /// Unicast locators of the endpoint; empty: use the participant's default locators.
    pub unicast: Vec<Locator>,
    /// Data representations: for a writer the first is what it writes; for a reader, what it accepts.
    pub data_representation: Vec<i16>,
    /// The peer sent XTypes type information (detpath matches by names either way).
    pub has_type_information: bool,
}

impl EndpointData {
    /// Writer (by entity kind).
    pub fn is_writer(&self) -> bool {
        self.guid.entity.is_writer()
    }
}

fn duration(r: &mut ByteReader<'_>) -> Result<i64, WireError> {
    let t = Time::read_pub(r)?;
    Ok(if t == Time::INFINITE || t.seconds == 0x7fff_ffff { INFINITE_NS } else { t.to_nanos().max(0) })
}

fn write_duration(w: &mut ByteWriter<'_>, ns: i64) -> Result<(), WireError> {
    let t = if ns == INFINITE_NS { Time::INFINITE } else { Time::from_nanos(ns) };
    w.i32(t.seconds)?;
    w.u32(t.fraction)
}

fn octet_seq(r: &mut ByteReader<'_>) -> Result<Vec<u8>, WireError> {
    let n = r.u32()? as usize;
    Ok(r.take(n)?.to_vec())
}

/// Checks a parameter id against the must-understand rule: vendor-specific
/// ids are ignored (detpath is not that vendor); an unknown standard id with
/// the must-understand bit is fatal.
fn check_unknown(id: u16) -> Result<(), DiscoveryError> {
    if id & pid::VENDOR_SPECIFIC_FLAG == 0 && id & pid::MUST_UNDERSTAND_FLAG != 0 {
        return Err(DiscoveryError::MustUnderstand(id));
    }
    Ok(())
}

impl ParticipantData {
    /// Parses an SPDP parameter list.
    pub fn parse(pl: &ParamList<'_>) -> Result<ParticipantData, DiscoveryError> {
        let mut d = ParticipantData {
            guid_prefix: GuidPrefix::UNKNOWN,
            protocol_version: ProtocolVersion::V2_1,
            vendor: VendorId::default(),
            domain_id: None,
            default_unicast: Vec::new(),
            metatraffic_unicast: Vec::new(),
            metatraffic_multicast: Vec::new(),
            lease_ns: 100_000_000_000,
            builtin_endpoints: 0,
            user_data: Vec::new(),
            host_id: None,
        };
        let (mut have_guid, mut have_bes) = (false, false);
        let mut host_id = None;
        for p in pl.iter() {
            let p = p?;
            let mut r = pl.reader(p.value);
            let bad = |_| DiscoveryError::BadValue(p.pid);
            match p.pid {
                pid::PARTICIPANT_GUID => {
                    let g = Guid::from_bytes(r.array().map_err(bad)?);
                    if g.entity != EntityId::PARTICIPANT {
                        return Err(DiscoveryError::BadValue(p.pid));
                    }
                    d.guid_prefix = g.prefix;
                    have_guid = true;
                }
                pid::PROTOCOL_VERSION => d.protocol_version = ProtocolVersion { major: r.u8().map_err(bad)?, minor: r.u8().map_err(bad)? },
                pid::VENDORID => d.vendor = VendorId(r.array().map_err(bad)?),
                pid::DOMAIN_ID => d.domain_id = Some(r.u32().map_err(bad)?),
                pid::DEFAULT_UNICAST_LOCATOR => d.default_unicast.push(Locator::read_from(p.value, pl.le).map_err(bad)?),
                pid::METATRAFFIC_UNICAST_LOCATOR => d.metatraffic_unicast.push(Locator::read_from(p.value, pl.le).map_err(bad)?),
                pid::METATRAFFIC_MULTICAST_LOCATOR => d.metatraffic_multicast.push(Locator::read_from(p.value, pl.le).map_err(bad)?),
                pid::PARTICIPANT_LEASE_DURATION => d.lease_ns = duration(&mut r).map_err(bad)?,
                pid::BUILTIN_ENDPOINT_SET => {
                    d.builtin_endpoints = r.u32().map_err(bad)?;
                    have_bes = true;
                }
                pid::USER_DATA => d.user_data = octet_seq(&mut r).map_err(bad)?,
                // Another vendor's id of the same number means something else: read, applied below.
                pid::DETPATH_HOST_ID => host_id = r.array::<16>().ok(),
                id => check_unknown(id)?,
            }
        }
        if d.vendor == VendorId::DETPATH {
            d.host_id = host_id;
        }
        if !have_guid {
            return Err(DiscoveryError::Missing(pid::PARTICIPANT_GUID));
        }
        if !have_bes {
            return Err(DiscoveryError::Missing(pid::BUILTIN_ENDPOINT_SET));
        }
        Ok(d)
    }

    /// Writes the parameter list (sentinel included).
    pub fn write(&self, w: &mut ByteWriter<'_>) -> Result<(), WireError> {
        let mut pw = ParamWriter::new(w);
        pw.param(pid::PROTOCOL_VERSION, |w| w.bytes(&[self.protocol_version.major, self.protocol_version.minor, 0, 0]))?;
        pw.param(pid::VENDORID, |w| w.bytes(&[self.vendor.0[0], self.vendor.0[1], 0, 0]))?;
        pw.param(pid::PARTICIPANT_GUID, |w| w.bytes(&Guid::new(self.guid_prefix, EntityId::PARTICIPANT).to_bytes()))?;
        pw.u32(pid::BUILTIN_ENDPOINT_SET, self.builtin_endpoints)?;
        if let Some(dom) = self.domain_id {
            pw.u32(pid::DOMAIN_ID, dom)?;
        }
        for l in &self.default_unicast {
            pw.param(pid::DEFAULT_UNICAST_LOCATOR, |w| l.write_pub(w))?;
        }
        for l in &self.metatraffic_unicast {
            pw.param(pid::METATRAFFIC_UNICAST_LOCATOR, |w| l.write_pub(w))?;
        }
        for l in &self.metatraffic_multicast {
            pw.param(pid::METATRAFFIC_MULTICAST_LOCATOR, |w| l.write_pub(w))?;
        }
        pw.param(pid::PARTICIPANT_LEASE_DURATION, |w| write_duration(w, self.lease_ns))?;
        if !self.user_data.is_empty() {
            pw.param(pid::USER_DATA, |w| {
                w.u32(self.user_data.len() as u32)?;
                w.bytes(&self.user_data)
            })?;
        }
        if let (Some(h), true) = (self.host_id, self.vendor == VendorId::DETPATH) {
            pw.bytes(pid::DETPATH_HOST_ID, &h)?;
        }
        pw.sentinel()
    }
}

impl EndpointData {
    /// Parses an SEDP parameter list. QoS not present take the DDS defaults
    /// (a reader's reliability defaults to best effort, a writer's to reliable).
    pub fn parse(pl: &ParamList<'_>) -> Result<EndpointData, DiscoveryError> {
        let mut guid = None;
        let (mut topic, mut ty) = (None, None);
        let mut qos = Qos { history: History::KeepLast(1), max_samples: u32::MAX, ..Qos::default() };
        let mut reliability = None;
        let mut unicast = Vec::new();
        let mut data_representation = Vec::new();
        let mut has_type_information = false;
        for p in pl.iter() {
            let p = p?;
            let mut r = pl.reader(p.value);
            let bad = |_| DiscoveryError::BadValue(p.pid);
            match p.pid {
                pid::ENDPOINT_GUID => guid = Some(Guid::from_bytes(r.array().map_err(bad)?)),
                pid::TOPIC_NAME => topic = Some(read_string(&mut r).map_err(bad)?.to_string()),
                pid::TYPE_NAME => ty = Some(read_string(&mut r).map_err(bad)?.to_string()),
                pid::RELIABILITY => {
                    let kind = r.u32().map_err(bad)?;
                    reliability = Some(if kind >= 2 { Reliability::Reliable } else { Reliability::BestEffort });
                    if let Ok(b) = duration(&mut r) {
                        qos.max_blocking_ns = b;
                    }
                }
                pid::DURABILITY => {
                    qos.durability = match r.u32().map_err(bad)? {
                        0 => Durability::Volatile,
                        1 => Durability::TransientLocal,
                        2 => Durability::Transient,
                        3 => Durability::Persistent,
                        _ => return Err(DiscoveryError::BadValue(p.pid)),
                    }
                }
                pid::HISTORY => {
                    let kind = r.u32().map_err(bad)?;
                    let depth = r.i32().map_err(bad)?;
                    qos.history = if kind == 1 { History::KeepAll } else { History::KeepLast(depth.max(1) as u32) };
                }
                pid::RESOURCE_LIMITS => {
                    let max = r.i32().map_err(bad)?;
                    qos.max_samples = if max < 0 { u32::MAX } else { max as u32 };
                }
                pid::DEADLINE => qos.deadline_ns = duration(&mut r).map_err(bad)?,
                pid::LATENCY_BUDGET => qos.latency_budget_ns = duration(&mut r).map_err(bad)?,
                pid::TRANSPORT_PRIORITY => qos.transport_priority = r.i32().map_err(bad)?,
                pid::LIVELINESS => {
                    qos.liveliness = match r.u32().map_err(bad)? {
                        0 => LivelinessKind::Automatic,
                        1 => LivelinessKind::ManualByParticipant,
                        2 => LivelinessKind::ManualByTopic,
                        _ => return Err(DiscoveryError::BadValue(p.pid)),
                    };
                    qos.liveliness_lease_ns = duration(&mut r).map_err(bad)?;
                }
                pid::OWNERSHIP => qos.ownership = if r.u32().map_err(bad)? == 1 { Ownership::Exclusive } else { Ownership::Shared },
                pid::PARTITION => {
                    let n = r.u32().map_err(bad)? as usize;
                    if n > r.remaining() / 4 {
                        return Err(DiscoveryError::BadValue(p.pid));
                    }
                    for _ in 0..n {
                        // Each string is 4-aligned relative to the value start.
                        let pad = (4 - r.pos() % 4) % 4;
                        r.skip(pad).map_err(bad)?;
                        qos.partitions.push(read_string(&mut r).map_err(bad)?.to_string());
                    }
                }
                pid::USER_DATA => qos.user_data = octet_seq(&mut r).map_err(bad)?,
                pid::UNICAST_LOCATOR => unicast.push(Locator::read_from(p.value, pl.le).map_err(bad)?),
                pid::DATA_REPRESENTATION => {
                    let n = r.u32().map_err(bad)? as usize;
                    if n > r.remaining() / 2 {
                        return Err(DiscoveryError::BadValue(p.pid));
                    }
                    for _ in 0..n {
                        data_representation.push(r.u16().map_err(bad)? as i16);
                    }
                }
                pid::TYPE_INFORMATION => has_type_information = true,
                id => check_unknown(id)?,
            }
        }
        let guid = guid.ok_or(DiscoveryError::Missing(pid::ENDPOINT_GUID))?;
        if !(guid.entity.is_writer() || guid.entity.is_reader()) {
            return Err(DiscoveryError::BadValue(pid::ENDPOINT_GUID));
        }
        qos.reliability = reliability.unwrap_or(if guid.entity.is_writer() { Reliability::Reliable } else { Reliability::BestEffort });
        if data_representation.is_empty() {
            data_representation.push(repr::XCDR1);
        }
        Ok(EndpointData {
            guid,
            topic_name: topic.ok_or(DiscoveryError::Missing(pid::TOPIC_NAME))?,
            type_name: ty.ok_or(DiscoveryError::Missing(pid::TYPE_NAME))?,
            qos,
            unicast,
            data_representation,
            has_type_information,
        })
    }

    /// Writes the parameter list (sentinel included).
    pub fn write(&self, w: &mut ByteWriter<'_>) -> Result<(), WireError> {
        let q = &self.qos;
        let mut pw = ParamWriter::new(w);
        pw.param(pid::ENDPOINT_GUID, |w| w.bytes(&self.guid.to_bytes()))?;
        pw.string(pid::TOPIC_NAME, &self.topic_name)?;
        pw.string(pid::TYPE_NAME, &self.type_name)?;
        pw.param(pid::RELIABILITY, |w| {
            w.u32(if q.reliability == Reliability::Reliable { 2 } else { 1 })?;
            write_duration(w, q.max_blocking_ns)
        })?;
        if q.durability != Durability::Volatile {
            pw.u32(pid::DURABILITY, q.durability as u32)?;
        }
        match q.history {
            History::KeepLast(1) => {}
            History::KeepLast(n) => pw.param(pid::HISTORY, |w| {
                w.u32(0)?;
                w.i32(n as i32)
            })?,
            History::KeepAll => {
                pw.param(pid::HISTORY, |w| {
                    w.u32(1)?;
                    w.i32(1)
                })?;
                pw.param(pid::RESOURCE_LIMITS, |w| {
                    w.i32(q.max_samples.min(i32::MAX as u32) as i32)?;
                    w.i32(-1)?;
                    w.i32(-1)
                })?;
            }
        }
        if q.deadline_ns != INFINITE_NS {
            pw.param(pid::DEADLINE, |w| write_duration(w, q.deadline_ns))?;
        }
        if q.latency_budget_ns != 0 {
            pw.param(pid::LATENCY_BUDGET, |w| write_duration(w, q.latency_budget_ns))?;
        }
        if q.transport_priority != 0 {
            pw.param(pid::TRANSPORT_PRIORITY, |w| w.i32(q.transport_priority))?;
        }
        if q.liveliness != LivelinessKind::Automatic || q.liveliness_lease_ns != INFINITE_NS {
            pw.param(pid::LIVELINESS, |w| {
                w.u32(q.liveliness as u32)?;
                write_duration(w, q.liveliness_lease_ns)
            })?;
        }
        if q.ownership == Ownership::Exclusive {
            pw.u32(pid::OWNERSHIP, 1)?;
        }
        if !q.partitions.is_empty() {
            pw.param(pid::PARTITION, |w| {
                w.u32(q.partitions.len() as u32)?;
                for p in &q.partitions {
                    w.pad_to(4)?;
                    crate::wire::plist::write_string(w, p)?;
                }
                Ok(())
            })?;
        }
        if !q.user_data.is_empty() {
            pw.param(pid::USER_DATA, |w| {
                w.u32(q.user_data.len() as u32)?;
                w.bytes(&q.user_data)
            })?;
        }
        for l in &self.unicast {
            pw.param(pid::UNICAST_LOCATOR, |w| l.write_pub(w))?;
        }
        pw.param(pid::PROTOCOL_VERSION, |w| w.bytes(&[2, 1, 0, 0]))?;
        pw.param(pid::VENDORID, |w| w.bytes(&[VendorId::DETPATH.0[0], VendorId::DETPATH.0[1], 0, 0]))?;
        pw.param(pid::DATA_REPRESENTATION, |w| {
            w.u32(self.data_representation.len() as u32)?;
            for r in &self.data_representation {
                w.u16(*r as u16)?;
            }
            Ok(())
        })?;
        pw.sentinel()
    }
}
