//! Parameter lists (§9.4.2.11): `pid u16, length u16, value` items, each
//! padded to 4 bytes, ended by PID_SENTINEL. Used for inline QoS and for the
//! SPDP/SEDP discovery payloads.

use super::bytes::{ByteReader, ByteWriter};
use super::WireError;

/// Parameter ids detpath reads or writes.
pub mod pid {
    pub const PAD: u16 = 0x0000;
    pub const SENTINEL: u16 = 0x0001;
    pub const PARTICIPANT_LEASE_DURATION: u16 = 0x0002;
    pub const TIME_BASED_FILTER: u16 = 0x0004;
    pub const TOPIC_NAME: u16 = 0x0005;
    pub const OWNERSHIP_STRENGTH: u16 = 0x0006;
    pub const TYPE_NAME: u16 = 0x0007;
    pub const DOMAIN_ID: u16 = 0x000f;
    pub const PROTOCOL_VERSION: u16 = 0x0015;
    pub const VENDORID: u16 = 0x0016;
    pub const RELIABILITY: u16 = 0x001a;
    pub const LIVELINESS: u16 = 0x001b;
    pub const DURABILITY: u16 = 0x001d;
    pub const OWNERSHIP: u16 = 0x001f;
    pub const PRESENTATION: u16 = 0x0021;
    pub const DEADLINE: u16 = 0x0023;
    pub const DESTINATION_ORDER: u16 = 0x0025;
    pub const LATENCY_BUDGET: u16 = 0x0027;
    pub const PARTITION: u16 = 0x0029;
    pub const LIFESPAN: u16 = 0x002b;
    pub const USER_DATA: u16 = 0x002c;
    pub const GROUP_DATA: u16 = 0x002d;
    pub const TOPIC_DATA: u16 = 0x002e;
    pub const UNICAST_LOCATOR: u16 = 0x002f;
    pub const MULTICAST_LOCATOR: u16 = 0x0030;
    pub const DEFAULT_UNICAST_LOCATOR: u16 = 0x0031;
    pub const METATRAFFIC_UNICAST_LOCATOR: u16 = 0x0032;
    pub const METATRAFFIC_MULTICAST_LOCATOR: u16 = 0x0033;
    pub const HISTORY: u16 = 0x0040;
    pub const RESOURCE_LIMITS: u16 = 0x0041;
    pub const EXPECTS_INLINE_QOS: u16 = 0x0043;
    pub const DEFAULT_MULTICAST_LOCATOR: u16 = 0x0048;
    pub const PARTICIPANT_GUID: u16 = 0x0050;
    pub const BUILTIN_ENDPOINT_SET: u16 = 0x0058;
    pub const PROPERTY_LIST: u16 = 0x0059;
    pub const ENDPOINT_GUID: u16 = 0x005a;
    pub const ENTITY_NAME: u16 = 0x0062;
    pub const KEY_HASH: u16 = 0x0070;
    pub const STATUS_INFO: u16 = 0x0071;
    pub const DATA_REPRESENTATION: u16 = 0x0073;
    pub const TYPE_CONSISTENCY: u16 = 0x0074;
    pub const TYPE_INFORMATION: u16 = 0x0075;
    /// Set on vendor-specific ids: meaningful only with that vendor's id.
    pub const VENDOR_SPECIFIC_FLAG: u16 = 0x8000;
    /// Set on ids a receiver must understand or reject the whole list.
    pub const MUST_UNDERSTAND_FLAG: u16 = 0x4000;
}

/// One parameter: its id and value bytes (padding included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param<'a> {
    pub pid: u16,
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
