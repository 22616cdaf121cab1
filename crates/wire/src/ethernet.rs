//! Ethernet II headers (no VLAN tag): fields by name and a checked view.

use crate::field::{be16, mac, set_be16, Field};
use crate::MacAddr;

/// The Ethernet II header's fields.
pub mod field {
    use super::Field;
    /// Destination MAC address.
    pub const DESTINATION: Field = 0..6;
    /// Source MAC address.
    pub const SOURCE: Field = 6..12;
    /// EtherType of the payload.
    pub const ETHERTYPE: Field = 12..14;
    /// Where the payload starts (the header's length).
    pub const PAYLOAD: usize = 14;
}

/// A view of an Ethernet II frame in `T` (its header is there: see [`EthernetFrame::new_checked`]).
#[derive(Debug, Clone, Copy)]
pub struct EthernetFrame<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// The view, or `None` when `buffer` is shorter than the header.
    pub fn new_checked(buffer: T) -> Option<EthernetFrame<T>> {
        (buffer.as_ref().len() >= field::PAYLOAD).then_some(EthernetFrame { buffer })
    }
    /// The view without the length check (accessors then panic on a short buffer).
    pub fn new_unchecked(buffer: T) -> EthernetFrame<T> {
        EthernetFrame { buffer }
    }
    /// Destination MAC address.
    pub fn dst_addr(&self) -> MacAddr {
        mac(self.buffer.as_ref(), field::DESTINATION)
    }
    /// Source MAC address.
    pub fn src_addr(&self) -> MacAddr {
        mac(self.buffer.as_ref(), field::SOURCE)
    }
    /// EtherType.
    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ETHERTYPE)
    }
    /// Everything after the header (Ethernet padding included).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<'a> EthernetFrame<&'a [u8]> {
    /// Everything after the header, for as long as the buffer lives.
    pub(crate) fn into_payload(self) -> &'a [u8] {
        &self.buffer[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC address.
    pub fn set_dst_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&a.0);
    }
    /// Sets the source MAC address.
    pub(crate) fn set_src_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&a.0);
    }
    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, t: u16) {
        set_be16(self.buffer.as_mut(), field::ETHERTYPE, t);
    }
    /// Everything after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// Writes an Ethernet II header into `buf[..14]`. Panics when `buf` is shorter.
pub fn write_header(buf: &mut [u8], dst: MacAddr, src: MacAddr, ethertype: u16) {
    let mut f = EthernetFrame::new_unchecked(&mut buf[..field::PAYLOAD]);
    f.set_dst_addr(dst);
    f.set_src_addr(src);
    f.set_ethertype(ethertype);
}

/// The destination MAC of a frame, written in place (a frame built before its neighbour was known).
pub fn set_dst_addr(frame: &mut [u8], dst: MacAddr) {
    frame[field::DESTINATION].copy_from_slice(&dst.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_what_was_written() {
        let mut b = [0u8; 20];
        write_header(&mut b, MacAddr([1; 6]), MacAddr([2; 6]), 0x88f7);
        let f = EthernetFrame::new_checked(&b[..]).unwrap();
        assert_eq!((f.dst_addr(), f.src_addr(), f.ethertype(), f.payload().len()), (MacAddr([1; 6]), MacAddr([2; 6]), 0x88f7, 6));
        assert_eq!(b[12..14], [0x88, 0xf7], "big-endian at bytes 12..14");
        assert!(EthernetFrame::new_checked(&b[..13]).is_none());
    }
}
