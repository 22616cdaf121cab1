//! Serialized payloads: the 4-byte encapsulation header and CDR streams for
//! plain (final) types in XCDR1 and XCDR2.
//!
//! For final types the two versions differ only in alignment: XCDR1 aligns
//! 8-byte primitives to 8, XCDR2 to 4 (XTypes 1.3 §7.4.1/§7.4.2). Alignment
//! counts from the first byte after the encapsulation header.

use super::bytes::{ByteReader, ByteWriter};
use super::WireError;

/// Encapsulation (representation) identifiers, XTypes 1.3 Table 60.
pub mod encap {
    /// CDR_BE: plain CDR (XCDR1), big endian.
    pub const CDR_BE: u16 = 0x0000;
    /// CDR_LE: plain CDR (XCDR1), little endian.
    pub const CDR_LE: u16 = 0x0001;
    /// PL_CDR_BE: XCDR1 parameter list, big endian (SPDP/SEDP payloads).
    pub const PL_CDR_BE: u16 = 0x0002;
    /// PL_CDR_LE: XCDR1 parameter list, little endian (SPDP/SEDP payloads).
    pub const PL_CDR_LE: u16 = 0x0003;
    /// CDR2_BE: plain XCDR2 (final types), big endian.
    pub const CDR2_BE: u16 = 0x0006;
    /// CDR2_LE: plain XCDR2 (final types), little endian.
    pub const CDR2_LE: u16 = 0x0007;
    /// D_CDR2_BE: delimited XCDR2 (appendable types), big endian; not read.
    pub const D_CDR2_BE: u16 = 0x0008;
    /// D_CDR2_LE: delimited XCDR2 (appendable types), little endian; not read.
    pub const D_CDR2_LE: u16 = 0x0009;
    /// PL_CDR2_BE: XCDR2 parameter list (mutable types), big endian; not read.
    pub const PL_CDR2_BE: u16 = 0x000a;
    /// PL_CDR2_LE: XCDR2 parameter list (mutable types), little endian; not read.
    pub const PL_CDR2_LE: u16 = 0x000b;
}

/// Data representation ids as announced in PID_DATA_REPRESENTATION.
pub mod repr {
    /// XCDR_DATA_REPRESENTATION: CDR version 1 (what a reader assumes when
    /// an endpoint announces none).
    pub const XCDR1: i16 = 0;
    /// XML_DATA_REPRESENTATION; detpath neither writes nor reads it.
    pub const XML: i16 = 1;
    /// XCDR2_DATA_REPRESENTATION: CDR version 2.
    pub const XCDR2: i16 = 2;
}

/// Which CDR version a stream uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Xcdr {
    /// XCDR1: 8-byte primitives aligned to 8.
    V1,
    /// XCDR2: 8-byte primitives aligned to 4.
    V2,
}

impl Xcdr {
    fn max_align(self) -> usize {
        match self {
            Xcdr::V1 => 8,
            Xcdr::V2 => 4,
        }
    }
}

/// A parsed encapsulation header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encapsulation {
    /// The representation identifier (an [`encap`] value); its low bit says little endian.
    pub id: u16,
    /// The representation options; the low two bits count the padding bytes
    /// at the end of the payload.
    pub options: u16,
}

impl Encapsulation {
    /// Length of the header.
    pub const LEN: usize = 4;

    /// Splits a serialized payload into header and body. The body excludes
    /// the padding the options' low two bits announce.
    pub fn split(payload: &[u8]) -> Result<(Encapsulation, &[u8]), WireError> {
        let mut r = ByteReader::new(payload, false);
        let id = r.u16()?;
        let options = r.u16()?;
        let body = r.rest();
        let pad = (options & 3) as usize;
        let body = body.get(..body.len().saturating_sub(pad)).unwrap_or(body);
        Ok((Encapsulation { id, options }, body))
    }
    /// Little endian body.
    pub fn is_le(self) -> bool {
        self.id & 1 == 1
    }
    /// For a plain CDR body: its version; `None` for parameter lists and other kinds.
    pub fn plain(self) -> Option<Xcdr> {
        match self.id {
            encap::CDR_BE | encap::CDR_LE => Some(Xcdr::V1),
            encap::CDR2_BE | encap::CDR2_LE => Some(Xcdr::V2),
            _ => None,
        }
    }
    /// A parameter-list body (SPDP/SEDP).
    pub fn is_param_list(self) -> bool {
        matches!(self.id, encap::PL_CDR_BE | encap::PL_CDR_LE)
    }
}

/// Reads a CDR body.
#[derive(Clone, Debug)]
pub struct CdrReader<'a> {
    r: ByteReader<'a>,
    max_align: usize,
}

impl<'a> CdrReader<'a> {
    /// A reader over a CDR body (the bytes after the encapsulation header).
    pub fn new(body: &'a [u8], le: bool, version: Xcdr) -> CdrReader<'a> {
        CdrReader { r: ByteReader::new(body, le), max_align: version.max_align() }
    }
    /// A reader over a whole serialized payload: checks the header is plain CDR.
    pub fn from_payload(payload: &'a [u8]) -> Result<CdrReader<'a>, WireError> {
        let (e, body) = Encapsulation::split(payload)?;
        let v = e.plain().ok_or(WireError::UnsupportedEncapsulation(e.id))?;
        Ok(CdrReader::new(body, e.is_le(), v))
    }
    fn align(&mut self, n: usize) -> Result<(), WireError> {
        let n = n.min(self.max_align);
        let pad = (n - self.r.pos() % n) % n;
        self.r.skip(pad)
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.r.remaining()
    }
    /// Reads a u8.
    pub fn u8(&mut self) -> Result<u8, WireError> {
        self.r.u8()
    }
    /// Reads a boolean (one octet).
    pub fn bool(&mut self) -> Result<bool, WireError> {
        Ok(self.r.u8()? != 0)
    }
    /// Reads a u16 (aligned).
    pub fn u16(&mut self) -> Result<u16, WireError> {
        self.align(2)?;
        self.r.u16()
    }
    /// Reads a u32 (aligned).
    pub fn u32(&mut self) -> Result<u32, WireError> {
        self.align(4)?;
        self.r.u32()
    }
    /// Reads an i32 (aligned).
    pub fn i32(&mut self) -> Result<i32, WireError> {
        Ok(self.u32()? as i32)
    }
    /// Reads a u64 (aligned).
    pub fn u64(&mut self) -> Result<u64, WireError> {
        self.align(8)?;
        self.r.u64()
    }
    /// Reads an i64 (aligned).
    pub fn i64(&mut self) -> Result<i64, WireError> {
        Ok(self.u64()? as i64)
    }
    /// Reads an f64 (aligned).
    pub fn f64(&mut self) -> Result<f64, WireError> {
        Ok(f64::from_bits(self.u64()?))
    }
    /// `n` raw octets (an octet array).
    pub fn octets(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        self.r.take(n)
    }
    /// A sequence length, checked against what is left (each element at least `min_elem` bytes).
    pub fn seq_len(&mut self, min_elem: usize) -> Result<usize, WireError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_elem.max(1)) > self.r.remaining() {
            return Err(WireError::Truncated);
        }
        Ok(n)
    }
    /// A string (borrowed).
    pub fn string(&mut self) -> Result<&'a str, WireError> {
        self.align(4)?;
        super::plist::read_string(&mut self.r)
    }
}

/// Writes a CDR body straight into a caller's buffer.
#[derive(Debug)]
pub struct CdrWriter<'a, 'b> {
    w: &'a mut ByteWriter<'b>,
    origin: usize,
    max_align: usize,
}

impl<'a, 'b> CdrWriter<'a, 'b> {
    /// A writer whose alignment origin is the writer's current position.
    pub fn new(w: &'a mut ByteWriter<'b>, version: Xcdr) -> CdrWriter<'a, 'b> {
        let origin = w.pos();
        CdrWriter { w, origin, max_align: version.max_align() }
    }
    fn align(&mut self, n: usize) -> Result<(), WireError> {
        let n = n.min(self.max_align);
        let pad = (n - (self.w.pos() - self.origin) % n) % n;
        self.w.reserve(pad)?.fill(0);
        Ok(())
    }
    /// Bytes written since the origin.
    pub fn len(&self) -> usize {
        self.w.pos() - self.origin
    }
    /// Nothing held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Writes a u8.
    pub fn u8(&mut self, v: u8) -> Result<(), WireError> {
        self.w.u8(v)
    }
    /// Writes a boolean (one octet).
    pub fn bool(&mut self, v: bool) -> Result<(), WireError> {
        self.w.u8(v as u8)
    }
    /// Writes a u16 (aligned).
    pub fn u16(&mut self, v: u16) -> Result<(), WireError> {
        self.align(2)?;
        self.w.u16(v)
    }
    /// Writes a u32 (aligned).
    pub fn u32(&mut self, v: u32) -> Result<(), WireError> {
        self.align(4)?;
        self.w.u32(v)
    }
    /// Writes an i32 (aligned).
    pub fn i32(&mut self, v: i32) -> Result<(), WireError> {
        self.u32(v as u32)
    }
    /// Writes a u64 (aligned).
    pub fn u64(&mut self, v: u64) -> Result<(), WireError> {
        self.align(8)?;
        self.w.u64(v)
    }
    /// Writes an i64 (aligned).
    pub fn i64(&mut self, v: i64) -> Result<(), WireError> {
        self.u64(v as u64)
    }
    /// Writes an f64 (aligned).
    pub fn f64(&mut self, v: f64) -> Result<(), WireError> {
        self.u64(v.to_bits())
    }
    /// Raw octets (an octet array, no length).
    pub fn octets(&mut self, b: &[u8]) -> Result<(), WireError> {
        self.w.bytes(b)
    }
    /// A sequence length.
    pub fn seq_len(&mut self, n: usize) -> Result<(), WireError> {
        self.u32(u32::try_from(n).map_err(|_| WireError::BufferFull)?)
    }
    /// Writes a string (aligned length with NUL, bytes, NUL).
    pub fn string(&mut self, s: &str) -> Result<(), WireError> {
        self.align(4)?;
        super::plist::write_string(self.w, s)
    }
}

/// Writes an encapsulation header, lets `body` serialize, pads the body to a
/// multiple of 4 and records the padding in the options (as CycloneDDS does).
pub fn write_payload<'b>(
    w: &mut ByteWriter<'b>,
    version: Xcdr,
    body: impl FnOnce(&mut CdrWriter<'_, 'b>) -> Result<(), WireError>,
) -> Result<usize, WireError> {
    let start = w.pos();
    let id = match (version, w.le) {
        (Xcdr::V1, true) => encap::CDR_LE,
        (Xcdr::V1, false) => encap::CDR_BE,
        (Xcdr::V2, true) => encap::CDR2_LE,
        (Xcdr::V2, false) => encap::CDR2_BE,
    };
    w.bytes(&id.to_be_bytes())?;
    let opt_at = w.pos();
    w.bytes(&[0, 0])?;
    let body_start = w.pos();
    {
        let mut c = CdrWriter::new(w, version);
        body(&mut c)?;
    }
    let n = w.pos() - body_start;
    let pad = (4 - n % 4) % 4;
    w.reserve(pad)?.fill(0);
    w.buffer()[opt_at + 1] = pad as u8;
    Ok(w.pos() - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xcdr1_and_xcdr2_align_u64_differently() {
        for (v, expect_len) in [(Xcdr::V1, 16), (Xcdr::V2, 12)] {
            let mut buf = [0u8; 32];
            let mut w = ByteWriter::new(&mut buf, true);
            let n = write_payload(&mut w, v, |c| {
                c.u32(7)?;
                c.u64(9)
            })
            .unwrap();
            assert_eq!(n, 4 + expect_len);
            let mut r = CdrReader::from_payload(&buf[..n]).unwrap();
            assert_eq!((r.u32().unwrap(), r.u64().unwrap()), (7, 9));
        }
    }

    #[test]
    fn padding_goes_into_the_options() {
        let mut buf = [0u8; 32];
        let mut w = ByteWriter::new(&mut buf, true);
        let n = write_payload(&mut w, Xcdr::V1, |c| c.u8(1)).unwrap();
        assert_eq!(n, 8);
        assert_eq!(&buf[..4], &[0, 1, 0, 3]);
        let (e, body) = Encapsulation::split(&buf[..n]).unwrap();
        assert_eq!((e.plain(), body.len()), (Some(Xcdr::V1), 1));
    }

    #[test]
    fn big_endian_bodies_read() {
        let payload = [0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 2, b'h', 0];
        let mut r = CdrReader::from_payload(&payload).unwrap();
        assert_eq!(r.u32().unwrap(), 5);
        assert_eq!(r.string().unwrap(), "h");
    }

    #[test]
    fn absurd_sequence_lengths_are_refused() {
        let payload = [0, 1, 0, 0, 0xff, 0xff, 0xff, 0x7f];
        let mut r = CdrReader::from_payload(&payload).unwrap();
        assert_eq!(r.seq_len(1), Err(WireError::Truncated));
    }
}
