//! The RTPS value types: GUIDs, entity ids, sequence numbers, times, locators,
//! and the borrowed views of sequence-number and fragment-number sets.

use super::bytes::{ByteReader, ByteWriter};
use super::WireError;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddrV4};

/// The 12-byte prefix every entity of one participant shares.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GuidPrefix(pub [u8; 12]);

impl GuidPrefix {
    /// GUIDPREFIX_UNKNOWN.
    pub const UNKNOWN: GuidPrefix = GuidPrefix([0; 12]);
}

impl fmt::Debug for GuidPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 && i % 4 == 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// An entity id: a 3-byte key and a kind byte, always in this byte order on the wire.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EntityId(pub [u8; 4]);

impl fmt::Debug for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", u32::from_be_bytes(self.0))
    }
}

/// Entity kinds (the low byte of an entity id).
pub mod kind {
    /// A user writer of a keyed topic.
    pub const USER_WRITER_WITH_KEY: u8 = 0x02;
    /// A user writer of a topic without a key.
    pub const USER_WRITER_NO_KEY: u8 = 0x03;
    /// A user reader of a topic without a key.
    pub const USER_READER_NO_KEY: u8 = 0x04;
    /// A user reader of a keyed topic.
    pub const USER_READER_WITH_KEY: u8 = 0x07;
    /// The participant itself (ENTITYID_PARTICIPANT's kind).
    pub const BUILTIN_PARTICIPANT: u8 = 0xc1;
    /// A built-in writer of a keyed topic (the SPDP and SEDP writers).
    pub const BUILTIN_WRITER_WITH_KEY: u8 = 0xc2;
    /// A built-in writer of a topic without a key.
    pub const BUILTIN_WRITER_NO_KEY: u8 = 0xc3;
    /// A built-in reader of a topic without a key.
    pub const BUILTIN_READER_NO_KEY: u8 = 0xc4;
    /// A built-in reader of a keyed topic (the SPDP and SEDP readers).
    pub const BUILTIN_READER_WITH_KEY: u8 = 0xc7;
}

impl EntityId {
    /// ENTITYID_UNKNOWN: in a submessage's readerId, "every matched reader
    /// of that writer".
    pub const UNKNOWN: EntityId = EntityId([0, 0, 0, 0]);
    /// ENTITYID_PARTICIPANT: the participant itself (the entity part of the
    /// GUID in PID_PARTICIPANT_GUID).
    pub const PARTICIPANT: EntityId = EntityId([0, 0, 1, 0xc1]);
    /// ENTITYID_SPDP_BUILTIN_PARTICIPANT_WRITER: sends the SPDP
    /// announcements (DATA(p)).
    pub const SPDP_WRITER: EntityId = EntityId([0, 1, 0, 0xc2]);
    /// ENTITYID_SPDP_BUILTIN_PARTICIPANT_READER: receives SPDP announcements.
    pub const SPDP_READER: EntityId = EntityId([0, 1, 0, 0xc7]);
    /// ENTITYID_SEDP_BUILTIN_PUBLICATIONS_WRITER: announces the
    /// participant's writers (DCPSPublication).
    pub const SEDP_PUBLICATIONS_WRITER: EntityId = EntityId([0, 0, 3, 0xc2]);
    /// ENTITYID_SEDP_BUILTIN_PUBLICATIONS_READER: receives the peers' writer
    /// announcements.
    pub const SEDP_PUBLICATIONS_READER: EntityId = EntityId([0, 0, 3, 0xc7]);
    /// ENTITYID_SEDP_BUILTIN_SUBSCRIPTIONS_WRITER: announces the
    /// participant's readers (DCPSSubscription).
    pub const SEDP_SUBSCRIPTIONS_WRITER: EntityId = EntityId([0, 0, 4, 0xc2]);
    /// ENTITYID_SEDP_BUILTIN_SUBSCRIPTIONS_READER: receives the peers' reader
    /// announcements.
    pub const SEDP_SUBSCRIPTIONS_READER: EntityId = EntityId([0, 0, 4, 0xc7]);
    /// ENTITYID_P2P_BUILTIN_PARTICIPANT_MESSAGE_WRITER (writer liveliness);
    /// detpath has none and does not announce one.
    pub const PMD_WRITER: EntityId = EntityId([0, 2, 0, 0xc2]);
    /// ENTITYID_P2P_BUILTIN_PARTICIPANT_MESSAGE_READER; detpath has none.
    pub const PMD_READER: EntityId = EntityId([0, 2, 0, 0xc7]);

    /// A user entity: a 24-bit key and a kind.
    pub fn user(key: u32, kind: u8) -> EntityId {
        let k = key.to_be_bytes();
        EntityId([k[1], k[2], k[3], kind])
    }
    /// The kind byte.
    pub fn kind(self) -> u8 {
        self.0[3]
    }
    /// Built-in (discovery) entity: kind bits 0xc0 set.
    pub fn is_builtin(self) -> bool {
        self.kind() & 0xc0 == 0xc0
    }
    /// Vendor-specific entity: kind bits 0x40 only.
    pub fn is_vendor_specific(self) -> bool {
        self.kind() & 0xc0 == 0x40
    }
    /// A writer of any kind.
    pub fn is_writer(self) -> bool {
        matches!(self.kind() & 0x3f, 0x02 | 0x03)
    }
    /// A reader of any kind.
    pub fn is_reader(self) -> bool {
        matches!(self.kind() & 0x3f, 0x04 | 0x07)
    }
}

/// A globally unique entity id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid {
    /// The participant the entity belongs to.
    pub prefix: GuidPrefix,
    /// The entity within that participant.
    pub entity: EntityId,
}

impl Guid {
    /// The GUID of `entity` in the participant `prefix`.
    pub fn new(prefix: GuidPrefix, entity: EntityId) -> Guid {
        Guid { prefix, entity }
    }
    /// The 16 bytes as on the wire.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..12].copy_from_slice(&self.prefix.0);
        b[12..].copy_from_slice(&self.entity.0);
        b
    }
    /// From the 16 wire bytes.
    pub fn from_bytes(b: [u8; 16]) -> Guid {
        let mut p = [0u8; 12];
        p.copy_from_slice(&b[..12]);
        Guid { prefix: GuidPrefix(p), entity: EntityId([b[12], b[13], b[14], b[15]]) }
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}:{:?}", self.prefix, self.entity)
    }
}

/// A 64-bit sequence number (wire: high i32, low u32).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Debug)]
pub struct SequenceNumber(pub i64);

impl SequenceNumber {
    /// SEQUENCENUMBER_UNKNOWN (high -1, low 0).
    pub const UNKNOWN: SequenceNumber = SequenceNumber(-(1i64 << 32));
    pub(crate) fn read(r: &mut ByteReader<'_>) -> Result<SequenceNumber, WireError> {
        let high = r.i32()?;
        let low = r.u32()?;
        Ok(SequenceNumber(((high as i64) << 32) | low as i64))
    }
    pub(crate) fn write(self, w: &mut ByteWriter<'_>) -> Result<(), WireError> {
        w.i32((self.0 >> 32) as i32)?;
        w.u32(self.0 as u32)
    }
}

/// Time_t / Duration_t: seconds and 2^-32 fractions.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Time {
    /// Whole seconds (may be negative for times before the epoch).
    pub seconds: i32,
    /// Fractions of a second, in units of 2^-32 s.
    pub fraction: u32,
}

const NS: i64 = 1_000_000_000;

impl Time {
    /// TIME_INVALID.
    pub const INVALID: Time = Time { seconds: -1, fraction: 0xffff_ffff };
    /// TIME_INFINITE / DURATION_INFINITE.
    pub const INFINITE: Time = Time { seconds: 0x7fff_ffff, fraction: 0xffff_ffff };
    /// TIME_ZERO.
    pub const ZERO: Time = Time { seconds: 0, fraction: 0 };

    /// From nanoseconds. The fraction is rounded up and [`Time::to_nanos`]
    /// rounds to nearest, so every nanosecond value survives the round trip
    /// exactly (ddsperf signals "ping" in the lowest bit of the timestamp).
    pub fn from_nanos(ns: i64) -> Time {
        if ns == i64::MAX {
            return Time::INFINITE;
        }
        let secs = ns.div_euclid(NS);
        let rest = ns.rem_euclid(NS);
        let fraction = ((rest as u128) << 32).div_ceil(NS as u128);
        Time { seconds: secs.clamp(i32::MIN as i64, i32::MAX as i64) as i32, fraction: fraction.min(u32::MAX as u128) as u32 }
    }
    /// To nanoseconds (`i64::MAX` for infinite).
    pub fn to_nanos(self) -> i64 {
        if self == Time::INFINITE {
            return i64::MAX;
        }
        let frac_ns = ((self.fraction as u64 * NS as u64) + (1u64 << 31)) >> 32;
        self.seconds as i64 * NS + frac_ns as i64
    }
    /// Reads a Time_t/Duration_t.
    pub fn read_pub(r: &mut ByteReader<'_>) -> Result<Time, WireError> {
        Time::read(r)
    }
    pub(crate) fn read(r: &mut ByteReader<'_>) -> Result<Time, WireError> {
        Ok(Time { seconds: r.i32()?, fraction: r.u32()? })
    }
    pub(crate) fn write(self, w: &mut ByteWriter<'_>) -> Result<(), WireError> {
        w.i32(self.seconds)?;
        w.u32(self.fraction)
    }
}

/// LOCATOR_KIND_UDPv4: the IPv4 address is in the last four bytes of the
/// locator's address, the port is the UDP port.
pub const LOCATOR_KIND_UDPV4: i32 = 1;
/// CycloneDDS's vendor-specific layer-2 locator (`raweth`): the port is the
/// EtherType, the MAC address is in the last six bytes of the address.
pub const LOCATOR_KIND_RAWETH: i32 = 0x8000;

/// A layer-2 address: a MAC address and the EtherType (= RTPS port) frames carry.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct EthAddr {
    /// The MAC address (destination or source).
    pub mac: [u8; 6],
    /// The EtherType frames carry (CycloneDDS's raweth puts the RTPS port
    /// here, 7400 and up).
    pub ethertype: u16,
}

impl EthAddr {
    /// The broadcast address at `ethertype` (where CycloneDDS sends SPDP by default).
    pub fn broadcast(ethertype: u16) -> EthAddr {
        EthAddr { mac: [0xff; 6], ethertype }
    }
    /// A group address (broadcast or multicast: the low bit of the first octet).
    pub fn is_group(&self) -> bool {
        self.mac[0] & 1 == 1
    }
}

impl fmt::Display for EthAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.mac;
        write!(f, "[{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}]:{}", m[0], m[1], m[2], m[3], m[4], m[5], self.ethertype)
    }
}

/// Where a datagram comes from or goes to: a UDPv4 socket address, or a MAC
/// address and EtherType (raweth). One participant uses one kind: the kind
/// of its own address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Addr {
    /// A UDPv4 socket address (the RTPS over UDP mapping).
    Udp(SocketAddrV4),
    /// A MAC address and EtherType: RTPS straight over Ethernet (raweth).
    Eth(EthAddr),
}

impl Addr {
    /// The locator announcing this address.
    pub fn locator(&self) -> Locator {
        match self {
            Addr::Udp(a) => Locator::udpv4(*a),
            Addr::Eth(e) => Locator::raweth(*e),
        }
    }
    /// True when `other` is of the same kind (a participant reaches only those).
    pub fn same_kind(&self, other: &Addr) -> bool {
        matches!((self, other), (Addr::Udp(_), Addr::Udp(_)) | (Addr::Eth(_), Addr::Eth(_)))
    }
    /// The UDPv4 address, if it is one.
    pub fn udp(&self) -> Option<SocketAddrV4> {
        match self {
            Addr::Udp(a) => Some(*a),
            Addr::Eth(_) => None,
        }
    }
}

impl From<SocketAddrV4> for Addr {
    fn from(a: SocketAddrV4) -> Addr {
        Addr::Udp(a)
    }
}

impl PartialEq<SocketAddrV4> for Addr {
    fn eq(&self, other: &SocketAddrV4) -> bool {
        *self == Addr::Udp(*other)
    }
}

impl From<EthAddr> for Addr {
    fn from(a: EthAddr) -> Addr {
        Addr::Eth(a)
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Udp(a) => a.fmt(f),
            Addr::Eth(e) => e.fmt(f),
        }
    }
}

/// Locator_t: kind, port, 16-byte address (IPv4 in the last four bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Locator {
    /// LOCATOR_KIND_* ([`LOCATOR_KIND_UDPV4`], [`LOCATOR_KIND_RAWETH`], or
    /// another vendor's kind detpath does not use).
    pub kind: i32,
    /// The port: the UDP port for UDPv4, the EtherType for raweth; 0 is
    /// LOCATOR_PORT_INVALID.
    pub port: u32,
    /// The address, 16 bytes: an IPv4 address in the last four, a MAC
    /// address in the last six.
    pub address: [u8; 16],
}

impl Locator {
    /// A UDPv4 locator.
    pub fn udpv4(addr: SocketAddrV4) -> Locator {
        let mut address = [0u8; 16];
        address[12..].copy_from_slice(&addr.ip().octets());
        Locator { kind: LOCATOR_KIND_UDPV4, port: addr.port() as u32, address }
    }
    /// A raweth locator (kind 0x8000): port = EtherType, MAC in bytes 10..16, the rest zero.
    pub fn raweth(a: EthAddr) -> Locator {
        let mut address = [0u8; 16];
        address[10..].copy_from_slice(&a.mac);
        Locator { kind: LOCATOR_KIND_RAWETH, port: a.ethertype as u32, address }
    }
    /// The layer-2 address of a raweth locator whose port is a valid EtherType
    /// (1536..=65535: smaller values are 802.3 lengths; CycloneDDS uses the port as is).
    pub fn to_eth_addr(&self) -> Option<EthAddr> {
        if self.kind != LOCATOR_KIND_RAWETH || !(0x0600..=0xffff).contains(&self.port) {
            return None;
        }
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&self.address[10..]);
        Some(EthAddr { mac, ethertype: self.port as u16 })
    }
    /// The address of a UDPv4 or raweth locator (None for other kinds and invalid ports).
    pub fn to_addr(&self) -> Option<Addr> {
        match self.kind {
            LOCATOR_KIND_UDPV4 => self.to_socket_addr_v4().map(Addr::Udp),
            LOCATOR_KIND_RAWETH => self.to_eth_addr().map(Addr::Eth),
            _ => None,
        }
    }
    /// The socket address of a UDPv4 locator with a valid port.
    pub fn to_socket_addr_v4(&self) -> Option<SocketAddrV4> {
        if self.kind != LOCATOR_KIND_UDPV4 || self.port == 0 || self.port > 65535 {
            return None;
        }
        let a = &self.address;
        Some(SocketAddrV4::new(Ipv4Addr::new(a[12], a[13], a[14], a[15]), self.port as u16))
    }
    /// From a parameter value in the given byte order.
    pub fn read_from(value: &[u8], le: bool) -> Result<Locator, WireError> {
        Locator::read(&mut ByteReader::new(value, le))
    }
    pub(crate) fn read(r: &mut ByteReader<'_>) -> Result<Locator, WireError> {
        Ok(Locator { kind: r.i32()?, port: r.u32()?, address: r.array()? })
    }
    /// Writes the 24-byte locator.
    pub fn write_pub(&self, w: &mut ByteWriter<'_>) -> Result<(), WireError> {
        self.write(w)
    }
    pub(crate) fn write(&self, w: &mut ByteWriter<'_>) -> Result<(), WireError> {
        w.i32(self.kind)?;
        w.u32(self.port)?;
        w.bytes(&self.address)
    }
}

/// Vendor id (two bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct VendorId(pub [u8; 2]);

impl VendorId {
    /// Eclipse Cyclone DDS.
    pub const ECLIPSE: VendorId = VendorId([0x01, 0x10]);
    /// detpath's own id: not assigned by the OMG, outside the assigned range,
    /// so no peer mistakes it for another vendor and applies that vendor's quirks.
    pub const DETPATH: VendorId = VendorId([0x01, 0xdf]);
}

/// Protocol version.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ProtocolVersion {
    /// Major version: 2 for RTPS 2.x (other majors are refused).
    pub major: u8,
    /// Minor version.
    pub minor: u8,
}

impl ProtocolVersion {
    /// What detpath speaks: RTPS 2.1 wire (what CycloneDDS 0.10 sends), read from 2.0 to 2.x.
    pub const V2_1: ProtocolVersion = ProtocolVersion { major: 2, minor: 1 };
}

/// Largest number of bits in a sequence-number or fragment-number set.
pub const MAX_SET_BITS: u32 = 256;

/// SequenceNumberSet as received: a base and up to 256 bits, borrowed from the message.
/// Two sets are equal when base, size and the bits within the size agree
/// (bits past `num_bits` in the last word carry no meaning).
#[derive(Clone, Copy, Debug)]
pub struct SnSet<'a> {
    /// bitmapBase: the sequence number bit 0 stands for.
    pub base: SequenceNumber,
    /// numBits: how many bits the set covers (0..=256).
    pub num_bits: u32,
    bitmap: &'a [u8],
    le: bool,
}

impl<'a> SnSet<'a> {
    pub(crate) fn read(r: &mut ByteReader<'a>) -> Result<SnSet<'a>, WireError> {
        let base = SequenceNumber::read(r)?;
        let num_bits = r.u32()?;
        if num_bits > MAX_SET_BITS {
            return Err(WireError::BadSet);
        }
        // RTPS 8.3.5.5 wants bitmapBase >= 1. Fast DDS (2.x) opens with an
        // ACKNACK of bitmapBase 0 and no bits, meaning "nothing received
        // yet": that exact shape names no sequence number and is taken (the
        // ACKNACK handler acknowledges nothing for it); any other set with a
        // base below 1 is still refused.
        if base.0 < 1 && !(base.0 == 0 && num_bits == 0) {
            return Err(WireError::BadSequenceNumber);
        }
        let words = num_bits.div_ceil(32) as usize;
        let bitmap = r.take(words * 4)?;
        Ok(SnSet { base, num_bits, bitmap, le: r.le })
    }
    /// Whether bit `i` (base + i) is set.
    pub fn bit(&self, i: u32) -> bool {
        bit_of(self.bitmap, self.le, self.num_bits, i)
    }
    /// The sequence numbers in the set, ascending. A base within 255 of
    /// `i64::MAX` (forged, or corrupted) names numbers past it: they are
    /// left out, not wrapped (nor a panic in a debug build).
    pub fn iter(&self) -> impl Iterator<Item = SequenceNumber> + '_ {
        (0..self.num_bits).filter(|&i| self.bit(i)).map_while(|i| self.base.0.checked_add(i as i64).map(SequenceNumber))
    }
}

/// FragmentNumberSet as received (equality as for [`SnSet`]).
#[derive(Clone, Copy, Debug)]
pub struct FragSet<'a> {
    /// bitmapBase: the fragment number bit 0 stands for (1 or more).
    pub base: u32,
    /// numBits: how many bits the set covers (0..=256).
    pub num_bits: u32,
    bitmap: &'a [u8],
    le: bool,
}

impl<'a> FragSet<'a> {
    pub(crate) fn read(r: &mut ByteReader<'a>) -> Result<FragSet<'a>, WireError> {
        let base = r.u32()?;
        let num_bits = r.u32()?;
        if num_bits > MAX_SET_BITS || base == 0 {
            return Err(WireError::BadSet);
        }
        let bitmap = r.take(num_bits.div_ceil(32) as usize * 4)?;
        Ok(FragSet { base, num_bits, bitmap, le: r.le })
    }
    /// Whether bit `i` (counting from the base) is set.
    pub fn bit(&self, i: u32) -> bool {
        bit_of(self.bitmap, self.le, self.num_bits, i)
    }
    /// The fragment numbers in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.num_bits).filter(|&i| self.bit(i)).map(|i| self.base.saturating_add(i))
    }
}

impl PartialEq for SnSet<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.base == o.base && self.num_bits == o.num_bits && (0..self.num_bits).all(|i| self.bit(i) == o.bit(i))
    }
}
impl Eq for SnSet<'_> {}

impl PartialEq for FragSet<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.base == o.base && self.num_bits == o.num_bits && (0..self.num_bits).all(|i| self.bit(i) == o.bit(i))
    }
}
impl Eq for FragSet<'_> {}

fn bit_of(bitmap: &[u8], le: bool, num_bits: u32, i: u32) -> bool {
    if i >= num_bits {
        return false;
    }
    let w = (i / 32) as usize * 4;
    let Some(b) = bitmap.get(w..w + 4) else {
        return false;
    };
    let word = if le { u32::from_le_bytes([b[0], b[1], b[2], b[3]]) } else { u32::from_be_bytes([b[0], b[1], b[2], b[3]]) };
    word & (0x8000_0000 >> (i % 32)) != 0
}

/// An owned bit set of up to 256 bits to emit (ACKNACK, GAP, NACK_FRAG).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BitSet256 {
    /// How many bits the set covers (0..=256); only these words are written.
    pub num_bits: u32,
    /// The bits, most significant bit of word 0 first (bit i is base + i),
    /// as on the wire.
    pub words: [u32; 8],
}

impl BitSet256 {
    /// An empty set of `num_bits` bits (clamped to 256).
    pub fn new(num_bits: u32) -> BitSet256 {
        BitSet256 { num_bits: num_bits.min(MAX_SET_BITS), words: [0; 8] }
    }
    /// Sets bit `i` (ignored beyond `num_bits`).
    pub fn set(&mut self, i: u32) {
        if i < self.num_bits {
            self.words[(i / 32) as usize] |= 0x8000_0000 >> (i % 32);
        }
    }
    /// Whether bit `i` is set.
    pub fn get(&self, i: u32) -> bool {
        i < self.num_bits && self.words[(i / 32) as usize] & (0x8000_0000 >> (i % 32)) != 0
    }
    /// Number of bits set.
    pub fn count(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }
    pub(crate) fn write(&self, w: &mut ByteWriter<'_>) -> Result<(), WireError> {
        w.u32(self.num_bits)?;
        for word in &self.words[..self.num_bits.div_ceil(32) as usize] {
            w.u32(*word)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_round_trips_every_nanosecond_bit() {
        for ns in [0i64, 1, 2, 3, 999_999_999, 1_000_000_001, 1_763_000_000_123_456_789, 1_763_000_000_123_456_788] {
            assert_eq!(Time::from_nanos(ns).to_nanos(), ns, "{ns}");
        }
        let mut x: i64 = 1_700_000_000_000_000_001;
        for _ in 0..100_000 {
            assert_eq!(Time::from_nanos(x).to_nanos(), x);
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407).rem_euclid(1 << 60);
        }
    }

    #[test]
    fn raweth_locators_encode_as_cyclonedds_announces_them() {
        // PID_METATRAFFIC_UNICAST_LOCATOR value from ddsperf's raweth SPDP (little endian, captured).
        let captured: [u8; 24] = [0x00, 0x80, 0, 0, 0xe8, 0x1c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x64, 0x70, 0, 0, 0x0b];
        let l = Locator::read_from(&captured, true).unwrap();
        assert_eq!(l.kind, LOCATOR_KIND_RAWETH);
        let e = EthAddr { mac: [0x02, 0x64, 0x70, 0, 0, 0x0b], ethertype: 7400 };
        assert_eq!(l.to_addr(), Some(Addr::Eth(e)));
        assert_eq!(l.to_socket_addr_v4(), None);
        assert_eq!(Locator::raweth(e), l);
        for le in [true, false] {
            let mut buf = [0u8; 24];
            let mut w = ByteWriter::new(&mut buf, le);
            Addr::Eth(e).locator().write(&mut w).unwrap();
            assert_eq!(w.pos(), 24);
            if le {
                assert_eq!(buf, captured);
            }
            assert_eq!(Locator::read_from(&buf, le).unwrap().to_addr(), Some(Addr::Eth(e)));
        }
        assert_eq!(e.to_string(), "[02:64:70:00:00:0b]:7400");
    }

    #[test]
    fn raweth_locators_with_unusable_ports_or_kinds_are_refused() {
        let e = EthAddr::broadcast(7400);
        assert!(e.is_group());
        assert!(Locator::raweth(e).to_eth_addr().unwrap().is_group());
        for port in [0u32, 0x05ff, 0x1_0000, u32::MAX] {
            let l = Locator { port, ..Locator::raweth(e) };
            assert_eq!(l.to_addr(), None, "port {port}");
        }
        let udp6 = Locator { kind: 2, ..Locator::raweth(e) };
        assert_eq!(udp6.to_addr(), None);
        let u: SocketAddrV4 = "10.77.0.2:7410".parse().unwrap();
        assert_eq!(Locator::udpv4(u).to_addr(), Some(Addr::Udp(u)));
        assert!(!Addr::Udp(u).same_kind(&Addr::Eth(e)));
        assert!(Addr::Eth(e).same_kind(&Addr::Eth(EthAddr { mac: [2, 0, 0, 0, 0, 1], ethertype: 7410 })));
    }

    #[test]
    fn cyclone_timestamp_decodes() {
        // INFO_TS from a captured ddsperf ping (little endian): seconds 0x6b035323, fraction 0x3144893b.
        let t = Time { seconds: 0x6b03_5323, fraction: 0x3144_893b };
        assert_eq!(t.to_nanos() & 1, 1, "the ping flag lives in the lowest bit");
        assert_eq!(Time::from_nanos(t.to_nanos()), t);
    }

    #[test]
    fn sn_set_bits_are_msb_first() {
        let mut s = BitSet256::new(40);
        s.set(0);
        s.set(33);
        s.set(300);
        assert_eq!(s.words[0], 0x8000_0000);
        assert_eq!(s.words[1], 0x4000_0000);
        assert_eq!(s.count(), 2);
        let mut buf = [0u8; 64];
        let mut w = ByteWriter::new(&mut buf, true);
        SequenceNumber(5).write(&mut w).unwrap();
        s.write(&mut w).unwrap();
        let n = w.pos();
        let mut r = ByteReader::new(&buf[..n], true);
        let set = SnSet::read(&mut r).unwrap();
        assert_eq!(set.iter().map(|s| s.0).collect::<Vec<_>>(), vec![5, 38]);
    }

    #[test]
    fn sets_reject_absurd_sizes() {
        let mut buf = [0u8; 16];
        buf[3] = 1; // base high = 1 (BE)
        buf[8..12].copy_from_slice(&257u32.to_be_bytes());
        assert_eq!(SnSet::read(&mut ByteReader::new(&buf, false)), Err(WireError::BadSet));
        // bitmapBase 0 with no bits: Fast DDS's "nothing received yet", taken as an empty set.
        let zero_base = [0u8; 12];
        let set = SnSet::read(&mut ByteReader::new(&zero_base, false)).unwrap();
        assert_eq!((set.base.0, set.num_bits, set.iter().count()), (0, 0, 0));
        // bitmapBase 0 with bits, or a negative base, is still refused.
        let mut zero_base_bits = [0u8; 16];
        zero_base_bits[8..12].copy_from_slice(&1u32.to_be_bytes());
        assert_eq!(SnSet::read(&mut ByteReader::new(&zero_base_bits, false)), Err(WireError::BadSequenceNumber));
        let mut negative = [0u8; 12];
        negative[..4].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(SnSet::read(&mut ByteReader::new(&negative, false)), Err(WireError::BadSequenceNumber));
    }

    #[test]
    fn entity_kinds() {
        assert!(EntityId::SEDP_PUBLICATIONS_WRITER.is_writer());
        assert!(EntityId::SEDP_PUBLICATIONS_WRITER.is_builtin());
        assert!(EntityId::user(0xb, kind::USER_WRITER_WITH_KEY).is_writer());
        assert!(EntityId::user(0xc, kind::USER_READER_WITH_KEY).is_reader());
        assert_eq!(EntityId::user(0xb, 2).0, [0, 0, 0xb, 2]);
    }
}
