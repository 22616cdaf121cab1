//! Bounds-checked byte cursors in either byte order: every read and write of
//! the RTPS codec goes through these, so a short or hostile buffer yields an
//! error, never a panic or an out-of-bounds access.

use super::WireError;

/// Reads fixed-size fields from a borrowed slice in one byte order.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Little endian (the RTPS `E` flag set).
    pub le: bool,
}

impl<'a> ByteReader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8], le: bool) -> ByteReader<'a> {
        ByteReader { buf, pos: 0, le }
    }
    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    /// The unread rest.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }
    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).ok_or(WireError::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(WireError::Truncated)?;
        self.pos = end;
        Ok(s)
    }
    /// A fixed-size array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    /// Reads a u8.
    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.array::<1>()?[0])
    }
    /// Reads a u16.
    pub fn u16(&mut self) -> Result<u16, WireError> {
        let a = self.array::<2>()?;
        Ok(if self.le { u16::from_le_bytes(a) } else { u16::from_be_bytes(a) })
    }
    /// Reads a u32.
    pub fn u32(&mut self) -> Result<u32, WireError> {
        let a = self.array::<4>()?;
        Ok(if self.le { u32::from_le_bytes(a) } else { u32::from_be_bytes(a) })
    }
    /// Reads an i32.
    pub fn i32(&mut self) -> Result<i32, WireError> {
        Ok(self.u32()? as i32)
    }
    /// Reads a u64.
    pub fn u64(&mut self) -> Result<u64, WireError> {
        let a = self.array::<8>()?;
        Ok(if self.le { u64::from_le_bytes(a) } else { u64::from_be_bytes(a) })
    }
    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<(), WireError> {
        self.take(n).map(|_| ())
    }
}

/// Writes fixed-size fields into a borrowed buffer; `Err(BufferFull)` instead of overrunning it.
#[derive(Debug)]
pub struct ByteWriter<'a> {
    buf: &'a mut [u8],
    pos: usize,
    /// Little endian output.
    pub le: bool,
}

impl<'a> ByteWriter<'a> {
    /// A writer at the start of `buf`.
    pub fn new(buf: &'a mut [u8], le: bool) -> ByteWriter<'a> {
        ByteWriter { buf, pos: 0, le }
    }
    /// A writer that continues at `pos` (bytes before it are kept).
    pub fn at(buf: &'a mut [u8], pos: usize, le: bool) -> ByteWriter<'a> {
        let pos = pos.min(buf.len());
        ByteWriter { buf, pos, le }
    }
    /// Bytes written so far (the position).
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Room left.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    /// Moves the position back to `pos` (never forward): drops what was written after it.
    pub fn truncate(&mut self, pos: usize) {
        self.pos = pos.min(self.pos);
    }
    /// Reserves `n` bytes and returns them for the caller to fill.
    pub fn reserve(&mut self, n: usize) -> Result<&mut [u8], WireError> {
        let end = self.pos.checked_add(n).ok_or(WireError::BufferFull)?;
        if end > self.buf.len() {
            return Err(WireError::BufferFull);
        }
        let at = self.pos;
        self.pos = end;
        Ok(&mut self.buf[at..end])
    }
    /// Writes raw bytes.
    pub fn bytes(&mut self, b: &[u8]) -> Result<(), WireError> {
        self.reserve(b.len())?.copy_from_slice(b);
        Ok(())
    }
    /// Writes a u8.
    pub fn u8(&mut self, v: u8) -> Result<(), WireError> {
        self.bytes(&[v])
    }
    /// Writes a u16.
    pub fn u16(&mut self, v: u16) -> Result<(), WireError> {
        self.bytes(&if self.le { v.to_le_bytes() } else { v.to_be_bytes() })
    }
    /// Writes a u32.
    pub fn u32(&mut self, v: u32) -> Result<(), WireError> {
        self.bytes(&if self.le { v.to_le_bytes() } else { v.to_be_bytes() })
    }
    /// Writes an i32.
    pub fn i32(&mut self, v: i32) -> Result<(), WireError> {
        self.u32(v as u32)
    }
    /// Writes a u64.
    pub fn u64(&mut self, v: u64) -> Result<(), WireError> {
        self.bytes(&if self.le { v.to_le_bytes() } else { v.to_be_bytes() })
    }
    /// Zero bytes up to the next multiple of `align` (relative to the buffer start).
    pub fn pad_to(&mut self, align: usize) -> Result<(), WireError> {
        let n = (align - self.pos % align) % align;
        self.reserve(n)?.fill(0);
        Ok(())
    }
    /// Overwrites a u16 written earlier at `at` (lengths known only afterwards).
    pub fn patch_u16(&mut self, at: usize, v: u16) -> Result<(), WireError> {
        let b = if self.le { v.to_le_bytes() } else { v.to_be_bytes() };
        let end = at.checked_add(2).ok_or(WireError::BufferFull)?;
        self.buf.get_mut(at..end).ok_or(WireError::BufferFull)?.copy_from_slice(&b);
        Ok(())
    }
    /// The whole underlying buffer (for callers that patch or read back).
    pub fn buffer(&mut self) -> &mut [u8] {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_orders_and_stops_at_the_end() {
        let b = [1, 2, 3, 4, 5];
        let mut r = ByteReader::new(&b, true);
        assert_eq!(r.u32().unwrap(), 0x0403_0201);
        assert_eq!(r.u32(), Err(WireError::Truncated));
        let mut r = ByteReader::new(&b, false);
        assert_eq!(r.u16().unwrap(), 0x0102);
        assert_eq!(r.take(usize::MAX), Err(WireError::Truncated));
    }

    #[test]
    fn writer_refuses_to_overrun() {
        let mut buf = [0u8; 6];
        let mut w = ByteWriter::new(&mut buf, true);
        w.u32(7).unwrap();
        assert_eq!(w.u32(8), Err(WireError::BufferFull));
        w.u16(9).unwrap();
        assert_eq!(buf, [7, 0, 0, 0, 9, 0]);
    }
}
