//! UDP headers: fields by name and a view over a datagram (header first).

use crate::field::{be16, set_be16, Field};

/// The UDP header's fields (RFC 768).
pub mod field {
    use super::Field;
    /// Source port.
    pub const SRC_PORT: Field = 0..2;
    /// Destination port.
    pub const DST_PORT: Field = 2..4;
    /// Length of header and payload.
    pub const LENGTH: Field = 4..6;
    /// Checksum over the pseudo-header, header and payload (0: none).
    pub const CHECKSUM: Field = 6..8;
    /// Where the payload starts (the header's length).
    pub const PAYLOAD: usize = 8;
}

/// A view of a UDP datagram in `T` whose 8-byte header is there.
#[derive(Debug, Clone, Copy)]
pub struct UdpPacket<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// The view, or `None` when `buffer` is shorter than the header.
    pub fn new_checked(buffer: T) -> Option<UdpPacket<T>> {
        (buffer.as_ref().len() >= field::PAYLOAD).then_some(UdpPacket { buffer })
    }
    /// The view without the length check (accessors then panic on a short buffer).
    pub fn new_unchecked(buffer: T) -> UdpPacket<T> {
        UdpPacket { buffer }
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT)
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT)
    }
    /// Length field (header and payload).
    pub fn len(&self) -> usize {
        be16(self.buffer.as_ref(), field::LENGTH) as usize
    }
    /// True when the length field says 0 (always malformed).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Checksum field (0: the sender computed none).
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Writes ports and length, the checksum field 0 (to be filled after summing).
    pub fn write_header(&mut self, src_port: u16, dst_port: u16, len: u16) {
        let b = self.buffer.as_mut();
        set_be16(b, field::SRC_PORT, src_port);
        set_be16(b, field::DST_PORT, dst_port);
        set_be16(b, field::LENGTH, len);
        set_be16(b, field::CHECKSUM, 0);
    }
    /// Sets the checksum field.
    pub(crate) fn set_checksum(&mut self, c: u16) {
        set_be16(self.buffer.as_mut(), field::CHECKSUM, c);
    }
}
