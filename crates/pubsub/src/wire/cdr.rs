//! Serialized payloads: the 4-byte encapsulation header and CDR streams for
//! final and appendable types in XCDR1 and XCDR2.
//!
//! For final types the two versions differ only in alignment: XCDR1 aligns
//! 8-byte primitives to 8, XCDR2 to 4 (XTypes 1.3 §7.4.1/§7.4.2). Alignment
//! counts from the first byte after the encapsulation header (a DHEADER does
//! not restart it). XCDR2 adds DHEADERs (a u32 byte count of what follows):
//! before appendable structs and before sequences and arrays whose elements
//! are not primitive (§7.4.3.5); [`CdrWriter::begin_dheader`] and
//! [`CdrReader::dheader`] write and read them. XCDR1 has none.

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
    /// D_CDR2_BE: delimited XCDR2 (appendable types), big endian.
    pub const D_CDR2_BE: u16 = 0x0008;
    /// D_CDR2_LE: delimited XCDR2 (appendable types), little endian.
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

/// How a struct type may evolve (XTypes 1.3 §7.2.2.4.4), which decides its
/// encapsulation and, in XCDR2, whether it carries a DHEADER. Mutable types
/// (parameter lists) are not written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Extensibility {
    /// `@final`: members fixed for good; no DHEADER (CDR / PLAIN_CDR2 ids).
    #[default]
    Final,
    /// `@appendable`: members may be added at the end; XCDR2 prefixes the
    /// struct with a DHEADER (D_CDR2 ids at the top level), XCDR1 does not.
    Appendable,
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
    /// For a final or appendable body: its version and whether the top-level
    /// struct is delimited (D_CDR2, an appendable type's XCDR2); `None` for
    /// parameter lists (mutable types, discovery).
    pub fn data(self) -> Option<(Xcdr, bool)> {
        match self.id {
            encap::D_CDR2_BE | encap::D_CDR2_LE => Some((Xcdr::V2, true)),
            _ => self.plain().map(|v| (v, false)),
        }
    }
    /// The identifier of a `version` body of a type of extensibility `ext`
    /// (XTypes 1.3 Table 60; XCDR1 has no appendable id of its own).
    pub fn id_for(version: Xcdr, ext: Extensibility, le: bool) -> u16 {
        let be = match (version, ext) {
            (Xcdr::V1, _) => encap::CDR_BE,
            (Xcdr::V2, Extensibility::Final) => encap::CDR2_BE,
            (Xcdr::V2, Extensibility::Appendable) => encap::D_CDR2_BE,
        };
        be | le as u16
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
    version: Xcdr,
    delimited: bool,
}

impl<'a> CdrReader<'a> {
    /// A reader over a CDR body (the bytes after the encapsulation header).
    pub fn new(body: &'a [u8], le: bool, version: Xcdr) -> CdrReader<'a> {
        CdrReader { r: ByteReader::new(body, le), version, delimited: false }
    }
    /// A reader over a whole serialized payload: checks the header is plain
    /// or delimited CDR (final or appendable types; a type checks which with
    /// [`CdrReader::delimited`]).
    pub fn from_payload(payload: &'a [u8]) -> Result<CdrReader<'a>, WireError> {
        let (e, body) = Encapsulation::split(payload)?;
        let (v, delimited) = e.data().ok_or(WireError::UnsupportedEncapsulation(e.id))?;
        let mut r = CdrReader::new(body, e.is_le(), v);
        r.delimited = delimited;
        Ok(r)
    }
    /// Marks a body read without its header ([`CdrReader::new`]) as
    /// delimited (D_CDR2), as [`CdrReader::from_payload`] does from the header.
    pub fn set_delimited(&mut self, delimited: bool) {
        self.delimited = delimited;
    }
    /// The CDR version of the stream.
    pub fn version(&self) -> Xcdr {
        self.version
    }
    /// Whether the payload's encapsulation said D_CDR2 (an appendable type's
    /// XCDR2); a final type refuses such a payload, an appendable one needs it in XCDR2.
    pub fn delimited(&self) -> bool {
        self.delimited
    }
    /// Bytes read since the start of the body (what a DHEADER's end is counted in).
    pub fn pos(&self) -> usize {
        self.r.pos()
    }
    /// Reads a DHEADER (XCDR2) and returns the position its object ends at,
    /// checked against what is there.
    pub fn dheader(&mut self) -> Result<usize, WireError> {
        let n = self.u32()? as usize;
        if n > self.r.remaining() {
            return Err(WireError::Truncated);
        }
        Ok(self.r.pos() + n)
    }
    /// Moves to `end` (a DHEADER's end): skips members a newer version of
    /// the type appended; an object that read past its DHEADER is malformed.
    pub fn skip_to(&mut self, end: usize) -> Result<(), WireError> {
        let pos = self.r.pos();
        if pos > end {
            return Err(WireError::BadLength);
        }
        self.r.skip(end - pos)
    }
    /// Skips `n` elements of `size` bytes each (aligned as one such primitive).
    pub fn skip_prims(&mut self, size: usize, n: usize) -> Result<(), WireError> {
        if n == 0 {
            return Ok(());
        }
        self.align(size)?;
        self.r.skip(size.checked_mul(n).ok_or(WireError::Truncated)?)
    }
    fn align(&mut self, n: usize) -> Result<(), WireError> {
        let n = n.min(self.version.max_align());
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
    /// Reads an i8 (IDL `int8`).
    pub fn i8(&mut self) -> Result<i8, WireError> {
        Ok(self.r.u8()? as i8)
    }
    /// Reads an i16 (aligned).
    pub fn i16(&mut self) -> Result<i16, WireError> {
        Ok(self.u16()? as i16)
    }
    /// Reads an f32 (aligned).
    pub fn f32(&mut self) -> Result<f32, WireError> {
        Ok(f32::from_bits(self.u32()?))
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
    version: Xcdr,
}

impl<'a, 'b> CdrWriter<'a, 'b> {
    /// A writer whose alignment origin is the writer's current position.
    pub fn new(w: &'a mut ByteWriter<'b>, version: Xcdr) -> CdrWriter<'a, 'b> {
        let origin = w.pos();
        CdrWriter { w, origin, version }
    }
    /// The CDR version written.
    pub fn version(&self) -> Xcdr {
        self.version
    }
    /// Starts an object with a DHEADER (XCDR2): writes a placeholder and
    /// returns where it is, for [`CdrWriter::end_dheader`] to fill in.
    pub fn begin_dheader(&mut self) -> Result<usize, WireError> {
        self.align(4)?;
        let at = self.w.pos();
        self.w.u32(0)?;
        Ok(at)
    }
    /// Ends the object begun at `at`: its DHEADER gets the byte count written since.
    pub fn end_dheader(&mut self, at: usize) -> Result<(), WireError> {
        let n = u32::try_from(self.w.pos() - at - 4).map_err(|_| WireError::BufferFull)?;
        let b = if self.w.le { n.to_le_bytes() } else { n.to_be_bytes() };
        self.w.buffer().get_mut(at..at + 4).ok_or(WireError::BufferFull)?.copy_from_slice(&b);
        Ok(())
    }
    fn align(&mut self, n: usize) -> Result<(), WireError> {
        let n = n.min(self.version.max_align());
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
    /// Writes an i8 (IDL `int8`).
    pub fn i8(&mut self, v: i8) -> Result<(), WireError> {
        self.w.u8(v as u8)
    }
    /// Writes an i16 (aligned).
    pub fn i16(&mut self, v: i16) -> Result<(), WireError> {
        self.u16(v as u16)
    }
    /// Writes an f32 (aligned).
    pub fn f32(&mut self, v: f32) -> Result<(), WireError> {
        self.u32(v.to_bits())
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
/// The header says final (CDR / PLAIN_CDR2); [`write_payload_ext`] for appendable types.
pub fn write_payload<'b>(
    w: &mut ByteWriter<'b>,
    version: Xcdr,
    body: impl FnOnce(&mut CdrWriter<'_, 'b>) -> Result<(), WireError>,
) -> Result<usize, WireError> {
    write_payload_ext(w, version, Extensibility::Final, body)
}

/// [`write_payload`] for a top-level type of extensibility `ext` (an
/// appendable type's XCDR2 payload says D_CDR2; `body` writes its DHEADER).
pub fn write_payload_ext<'b>(
    w: &mut ByteWriter<'b>,
    version: Xcdr,
    ext: Extensibility,
    body: impl FnOnce(&mut CdrWriter<'_, 'b>) -> Result<(), WireError>,
) -> Result<usize, WireError> {
    let start = w.pos();
    let id = Encapsulation::id_for(version, ext, w.le);
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
    fn dheaders_count_what_follows_and_bound_the_reader() {
        let mut buf = [0u8; 32];
        let mut w = ByteWriter::new(&mut buf, false);
        let n = write_payload_ext(&mut w, Xcdr::V2, Extensibility::Appendable, |c| {
            c.u8(1)?;
            let h = c.begin_dheader()?;
            c.u16(2)?;
            c.end_dheader(h)
        })
        .unwrap();
        assert_eq!(&buf[..n], &[0, 8, 0, 2, 1, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 0]);
        let mut r = CdrReader::from_payload(&buf[..n]).unwrap();
        assert!(r.delimited());
        assert_eq!(r.u8().unwrap(), 1);
        let end = r.dheader().unwrap();
        assert_eq!(end, 10);
        r.skip_to(end).unwrap();
        // A DHEADER claiming more than is there.
        let mut r = CdrReader::new(&[0, 0, 0, 9, 1, 2], false, Xcdr::V2);
        assert_eq!(r.dheader(), Err(WireError::Truncated));
        // An object that read past its end.
        let mut r = CdrReader::new(&[0, 0, 0, 1, 0, 0, 0, 5], false, Xcdr::V2);
        let end = r.dheader().unwrap();
        r.u32().unwrap();
        assert_eq!(r.skip_to(end), Err(WireError::BadLength));
    }

    #[test]
    fn absurd_sequence_lengths_are_refused() {
        let payload = [0, 1, 0, 0, 0xff, 0xff, 0xff, 0x7f];
        let mut r = CdrReader::from_payload(&payload).unwrap();
        assert_eq!(r.seq_len(1), Err(WireError::Truncated));
    }
}
