//! Parameter lists (§9.4.2.11): `pid u16, length u16, value` items, each
//! padded to 4 bytes, ended by PID_SENTINEL. Used for inline QoS and for the
//! SPDP/SEDP discovery payloads.

use super::bytes::{ByteReader, ByteWriter};
use super::WireError;

/// Parameter ids: those discovery and inline QoS read or
/// write, and standard QoS ids detpath recognises and skips.
pub mod pid {
    /// PID_PAD: padding, skipped.
    pub const PAD: u16 = 0x0000;
    /// PID_SENTINEL: ends the list (length 0).
    pub const SENTINEL: u16 = 0x0001;
    /// PID_PARTICIPANT_LEASE_DURATION: Duration_t; how long a participant
    /// stays known without a new SPDP announcement.
    pub const PARTICIPANT_LEASE_DURATION: u16 = 0x0002;
    /// PID_TIME_BASED_FILTER: Duration_t; a reader's minimum separation between samples.
    pub const TIME_BASED_FILTER: u16 = 0x0004;
    /// PID_TOPIC_NAME: string.
    pub const TOPIC_NAME: u16 = 0x0005;
    /// PID_OWNERSHIP_STRENGTH: long; an exclusive writer's strength.
    pub const OWNERSHIP_STRENGTH: u16 = 0x0006;
    /// PID_TYPE_NAME: string.
    pub const TYPE_NAME: u16 = 0x0007;
    /// PID_DOMAIN_ID: unsigned long; the participant's DDS domain.
    pub const DOMAIN_ID: u16 = 0x000f;
    /// PID_PROTOCOL_VERSION: two octets (major, minor), padded to 4.
    pub const PROTOCOL_VERSION: u16 = 0x0015;
    /// PID_VENDORID: two octets, padded to 4.
    pub const VENDORID: u16 = 0x0016;
    /// PID_RELIABILITY: kind (1 best effort, 2 reliable) and max_blocking_time (Duration_t).
    pub const RELIABILITY: u16 = 0x001a;
    /// PID_LIVELINESS: kind (0 automatic, 1 manual by participant, 2 manual
    /// by topic) and lease_duration (Duration_t).
    pub const LIVELINESS: u16 = 0x001b;
    /// PID_DURABILITY: kind (0 volatile, 1 transient local, 2 transient, 3 persistent).
    pub const DURABILITY: u16 = 0x001d;
    /// PID_OWNERSHIP: kind (0 shared, 1 exclusive).
    pub const OWNERSHIP: u16 = 0x001f;
    /// PID_PRESENTATION: access scope, coherent access, ordered access.
    pub const PRESENTATION: u16 = 0x0021;
    /// PID_DEADLINE: Duration_t; the longest time between samples of an instance.
    pub const DEADLINE: u16 = 0x0023;
    /// PID_DESTINATION_ORDER: kind (by reception or by source timestamp).
    pub const DESTINATION_ORDER: u16 = 0x0025;
    /// PID_LATENCY_BUDGET: Duration_t; request-offered (a writer offers at
    /// most what a reader requests), and every sample is judged against it
    /// ([`crate::budget`]).
    pub const LATENCY_BUDGET: u16 = 0x0027;
    /// PID_PARTITION: sequence of strings (partition names).
    pub const PARTITION: u16 = 0x0029;
    /// PID_LIFESPAN: Duration_t; how long a written sample stays valid.
    pub const LIFESPAN: u16 = 0x002b;
    /// PID_USER_DATA: octet sequence the application attaches to an entity.
    pub const USER_DATA: u16 = 0x002c;
    /// PID_GROUP_DATA: octet sequence of the publisher or subscriber.
    pub const GROUP_DATA: u16 = 0x002d;
    /// PID_TOPIC_DATA: octet sequence of the topic.
    pub const TOPIC_DATA: u16 = 0x002e;
    /// PID_UNICAST_LOCATOR: Locator_t; where an endpoint receives unicast (SEDP).
    pub const UNICAST_LOCATOR: u16 = 0x002f;
    /// PID_MULTICAST_LOCATOR: Locator_t; a multicast group an endpoint receives on (SEDP).
    pub const MULTICAST_LOCATOR: u16 = 0x0030;
    /// PID_DEFAULT_UNICAST_LOCATOR: Locator_t; where a participant's endpoints
    /// receive user traffic unless they announce their own (SPDP).
    pub const DEFAULT_UNICAST_LOCATOR: u16 = 0x0031;
    /// PID_METATRAFFIC_UNICAST_LOCATOR: Locator_t; where a participant receives
    /// discovery traffic (SEDP, directed SPDP) unicast.
    pub const METATRAFFIC_UNICAST_LOCATOR: u16 = 0x0032;
    /// PID_METATRAFFIC_MULTICAST_LOCATOR: Locator_t; the multicast group a
    /// participant receives discovery traffic on.
    pub const METATRAFFIC_MULTICAST_LOCATOR: u16 = 0x0033;
    /// PID_HISTORY: kind (0 keep last, 1 keep all) and depth (long).
    pub const HISTORY: u16 = 0x0040;
    /// PID_RESOURCE_LIMITS: max_samples, max_instances, max_samples_per_instance
    /// (longs; -1 is unlimited).
    pub const RESOURCE_LIMITS: u16 = 0x0041;
    /// PID_EXPECTS_INLINE_QOS: boolean; a reader wants inline QoS with every DATA.
    pub const EXPECTS_INLINE_QOS: u16 = 0x0043;
    /// PID_DEFAULT_MULTICAST_LOCATOR: Locator_t; a multicast group a
    /// participant's endpoints receive user traffic on.
    pub const DEFAULT_MULTICAST_LOCATOR: u16 = 0x0048;
    /// PID_TRANSPORT_PRIORITY: long; a writer's datagrams' traffic class and
    /// DSCP ([`crate::priority`]).
    pub const TRANSPORT_PRIORITY: u16 = 0x0049;
    /// PID_PARTICIPANT_GUID: GUID_t (16 octets) of the participant (SPDP).
    pub const PARTICIPANT_GUID: u16 = 0x0050;
    /// PID_BUILTIN_ENDPOINT_SET: unsigned long; bits of the built-in endpoints
    /// a participant has ([`crate::discovery::builtin`]).
    pub const BUILTIN_ENDPOINT_SET: u16 = 0x0058;
    /// PID_PROPERTY_LIST: sequence of name/value string pairs.
    pub const PROPERTY_LIST: u16 = 0x0059;
    /// PID_ENDPOINT_GUID: GUID_t (16 octets) of the announced endpoint (SEDP).
    pub const ENDPOINT_GUID: u16 = 0x005a;
    /// PID_ENTITY_NAME: string; a human-readable name of the entity.
    pub const ENTITY_NAME: u16 = 0x0062;
    /// PID_KEY_HASH: 16 octets; the instance's key hash (inline QoS).
    pub const KEY_HASH: u16 = 0x0070;
    /// PID_STATUS_INFO: 4 octets, always big endian; bit 0 disposed, bit 1
    /// unregistered ([`crate::discovery::status_info`]) (inline QoS).
    pub const STATUS_INFO: u16 = 0x0071;
    /// PID_DATA_REPRESENTATION: sequence of short; the data representations
    /// an endpoint writes or accepts ([`crate::wire::cdr::repr`]).
    pub const DATA_REPRESENTATION: u16 = 0x0073;
    /// PID_TYPE_CONSISTENCY: XTypes TypeConsistencyEnforcement QoS.
    pub const TYPE_CONSISTENCY: u16 = 0x0074;
    /// PID_TYPE_INFORMATION: XTypes TypeInformation (type identifiers); only its presence is noted.
    pub const TYPE_INFORMATION: u16 = 0x0075;
    /// detpath's vendor-specific PID (meaningful only from vendor
    /// [`VendorId::DETPATH`](crate::wire::VendorId::DETPATH)): 16 octets,
    /// the host id of the participant's host ([`crate::budget::this_host_id`]),
    /// in SPDP: peers with the same one share our clock.
    pub const DETPATH_HOST_ID: u16 = 0x8d01;
    /// Set on vendor-specific ids: meaningful only with that vendor's id.
    pub const VENDOR_SPECIFIC_FLAG: u16 = 0x8000;
    /// Set on ids a receiver must understand or reject the whole list.
    pub const MUST_UNDERSTAND_FLAG: u16 = 0x4000;
}

/// One parameter: its id and value bytes (padding included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param<'a> {
    /// The parameter id (a [`pid`] value, possibly with the vendor-specific
    /// or must-understand bit).
    pub pid: u16,
    /// The value, in the list's byte order, padding included.
    pub value: &'a [u8],
}

/// A parameter list borrowed from a message, in a given byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamList<'a> {
    buf: &'a [u8],
    /// Little endian.
    pub le: bool,
}

impl<'a> ParamList<'a> {
    /// A list over `buf` (the iterator checks it as it goes).
    pub fn new(buf: &'a [u8], le: bool) -> ParamList<'a> {
        ParamList { buf, le }
    }
    /// The raw bytes of the list (sentinel included when it came from [`ParamList::measure`]).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }
    /// Length of the list at the start of `buf`, sentinel included; an error
    /// when a length runs past the buffer or the sentinel is missing.
    pub fn measure(buf: &[u8], le: bool) -> Result<usize, WireError> {
        let mut r = ByteReader::new(buf, le);
        loop {
            let pid = r.u16()?;
            let len = r.u16()? as usize;
            r.skip(len).map_err(|_| WireError::BadParameterLength)?;
            if pid == pid::SENTINEL {
                return Ok(r.pos());
            }
        }
    }
    /// The parameters up to the sentinel. An item is an error when its length
    /// runs past the list; iteration stops after it.
    pub fn iter(&self) -> ParamIter<'a> {
        ParamIter { r: ByteReader::new(self.buf, self.le), done: false }
    }
    /// The first value with this id.
    pub fn find(&self, id: u16) -> Option<&'a [u8]> {
        self.iter().map_while(|p| p.ok()).find(|p| p.pid == id).map(|p| p.value)
    }
    /// A reader over a value, in the list's byte order.
    pub fn reader(&self, value: &'a [u8]) -> ByteReader<'a> {
        ByteReader::new(value, self.le)
    }
}

/// Iterator over a parameter list.
#[derive(Clone, Debug)]
pub struct ParamIter<'a> {
    r: ByteReader<'a>,
    done: bool,
}

impl<'a> Iterator for ParamIter<'a> {
    type Item = Result<Param<'a>, WireError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let head = (|| Ok::<_, WireError>((self.r.u16()?, self.r.u16()? as usize)))();
            let (pid, len) = match head {
                Ok(h) => h,
                Err(_) => {
                    self.done = true;
                    return Some(Err(WireError::MissingSentinel));
                }
            };
            if pid == pid::SENTINEL {
                self.done = true;
                return None;
            }
            let value = match self.r.take(len) {
                Ok(v) => v,
                Err(_) => {
                    self.done = true;
                    return Some(Err(WireError::BadParameterLength));
                }
            };
            if pid == pid::PAD {
                continue;
            }
            return Some(Ok(Param { pid, value }));
        }
    }
}

/// Writes a parameter list into a [`ByteWriter`].
pub struct ParamWriter<'w, 'b> {
    /// Where the parameters are written.
    pub w: &'w mut ByteWriter<'b>,
}

impl<'w, 'b> ParamWriter<'w, 'b> {
    /// Parameters written through `w`.
    pub fn new(w: &'w mut ByteWriter<'b>) -> ParamWriter<'w, 'b> {
        ParamWriter { w }
    }
    /// One parameter whose value `f` writes; the length is patched in and the value padded to 4.
    pub fn param(&mut self, id: u16, f: impl FnOnce(&mut ByteWriter<'b>) -> Result<(), WireError>) -> Result<(), WireError> {
        self.w.u16(id)?;
        let len_at = self.w.pos();
        self.w.u16(0)?;
        let start = self.w.pos();
        f(self.w)?;
        let n = self.w.pos() - start;
        let pad = (4 - n % 4) % 4;
        self.w.reserve(pad)?.fill(0);
        let total = u16::try_from(n + pad).map_err(|_| WireError::BufferFull)?;
        self.w.patch_u16(len_at, total)
    }
    /// A CDR string value (length with NUL, bytes, NUL).
    pub fn string(&mut self, id: u16, s: &str) -> Result<(), WireError> {
        self.param(id, |w| write_string(w, s))
    }
    /// A u32 value.
    pub fn u32(&mut self, id: u16, v: u32) -> Result<(), WireError> {
        self.param(id, |w| w.u32(v))
    }
    /// Raw bytes as the value.
    pub fn bytes(&mut self, id: u16, b: &[u8]) -> Result<(), WireError> {
        self.param(id, |w| w.bytes(b))
    }
    /// PID_SENTINEL.
    pub fn sentinel(&mut self) -> Result<(), WireError> {
        self.w.u16(pid::SENTINEL)?;
        self.w.u16(0)
    }
}

/// A CDR string: u32 length including the terminating NUL, the bytes, NUL.
pub fn write_string(w: &mut ByteWriter<'_>, s: &str) -> Result<(), WireError> {
    let n = u32::try_from(s.len() + 1).map_err(|_| WireError::BufferFull)?;
    w.u32(n)?;
    w.bytes(s.as_bytes())?;
    w.u8(0)
}

/// Reads a CDR string (the length counts the NUL; the NUL must be there).
pub fn read_string<'a>(r: &mut ByteReader<'a>) -> Result<&'a str, WireError> {
    let n = r.u32()? as usize;
    if n == 0 {
        // Some implementations send length 0 for the empty string.
        return Ok("");
    }
    let b = r.take(n)?;
    let (text, nul) = b.split_at(n - 1);
    if nul != [0] {
        return Err(WireError::BadString);
    }
    std::str::from_utf8(text).map_err(|_| WireError::BadString)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_back_with_padding() {
        let mut buf = [0u8; 64];
        let mut w = ByteWriter::new(&mut buf, true);
        let mut pw = ParamWriter::new(&mut w);
        pw.string(pid::TOPIC_NAME, "abc").unwrap();
        pw.u32(pid::DOMAIN_ID, 7).unwrap();
        pw.sentinel().unwrap();
        let n = w.pos();
        assert_eq!(n, 4 + 8 + 4 + 4 + 4);
        assert_eq!(ParamList::measure(&buf[..n], true), Ok(n));
        let pl = ParamList::new(&buf[..n], true);
        let items: Vec<_> = pl.iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(read_string(&mut pl.reader(items[0].value)).unwrap(), "abc");
        assert_eq!(pl.reader(pl.find(pid::DOMAIN_ID).unwrap()).u32().unwrap(), 7);
    }

    #[test]
    fn bad_lengths_are_errors_not_panics() {
        // Length 0x100 runs past the end.
        let b = [0x05, 0x00, 0x00, 0x01, 1, 2, 3, 4];
        assert_eq!(ParamList::measure(&b, true), Err(WireError::BadParameterLength));
        let pl = ParamList::new(&b, true);
        assert_eq!(pl.iter().next(), Some(Err(WireError::BadParameterLength)));
        // No sentinel.
        let b = [0x05, 0x00, 0x04, 0x00, 1, 2, 3, 4];
        assert_eq!(ParamList::measure(&b, true), Err(WireError::Truncated));
        assert_eq!(ParamList::new(&b, true).iter().nth(1), Some(Err(WireError::MissingSentinel)));
    }

    #[test]
    fn strings_need_their_nul() {
        let b = [3, 0, 0, 0, b'a', b'b', b'c'];
        assert_eq!(read_string(&mut ByteReader::new(&b, true)), Err(WireError::BadString));
        let b = [0xff, 0xff, 0xff, 0xff];
        assert_eq!(read_string(&mut ByteReader::new(&b, true)), Err(WireError::Truncated));
    }
}
