//! IPv4 headers: fields by name and a view over a packet (header first).

use crate::checksum;
use crate::field::{be16, ipv4, set_be16, Field};
use std::net::Ipv4Addr;

/// The IPv4 header's fields (RFC 791), from the start of the packet.
pub mod field {
    use super::Field;
    /// Version (high nibble) and header length in 32-bit words (IHL, low nibble).
    pub const VER_IHL: usize = 0;
    /// DSCP and ECN.
    pub const DSCP_ECN: usize = 1;
    /// Total length of the packet, header included.
    pub const LENGTH: Field = 2..4;
    /// Identification (shared by the fragments of one datagram).
    pub const IDENT: Field = 4..6;
    /// Flags (DF, MF) and fragment offset in 8-byte units.
    pub const FLG_OFF: Field = 6..8;
    /// Time to live.
    pub const TTL: usize = 8;
    /// The payload's protocol (17: UDP).
    pub const PROTOCOL: usize = 9;
    /// Header checksum.
    pub const CHECKSUM: Field = 10..12;
    /// Source address.
    pub const SRC_ADDR: Field = 12..16;
    /// Destination address.
    pub const DST_ADDR: Field = 16..20;
}

/// Header length without options.
pub const HEADER_LEN: usize = 20;
/// Don't fragment (in the flags/offset word).
pub const FLAG_DF: u16 = 0x4000;
/// More fragments follow.
pub const FLAG_MF: u16 = 0x2000;
/// The fragment offset bits (8-byte units).
pub const OFFSET_MASK: u16 = 0x1fff;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

/// A view of an IPv4 packet in `T`, whose first 20 bytes (a header without
/// options) are there: see [`Ipv4Packet::new_checked`]. What lies past them
/// (options, payload) is checked by the accessors that read it.
#[derive(Debug, Clone, Copy)]
pub struct Ipv4Packet<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// The view, or `None` when `buffer` is shorter than 20 bytes.
    pub fn new_checked(buffer: T) -> Option<Ipv4Packet<T>> {
        (buffer.as_ref().len() >= HEADER_LEN).then_some(Ipv4Packet { buffer })
    }
    /// The view without the length check (accessors then panic on a short buffer).
    pub fn new_unchecked(buffer: T) -> Ipv4Packet<T> {
        Ipv4Packet { buffer }
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// IP version (4 for a well-formed packet).
    pub fn version(&self) -> u8 {
        self.b()[field::VER_IHL] >> 4
    }
    /// Header length in bytes (IHL × 4; 20..=60, or less in a malformed header).
    pub fn header_len(&self) -> usize {
        ((self.b()[field::VER_IHL] & 0x0f) as usize) * 4
    }
    /// Total length field.
    pub fn total_len(&self) -> usize {
        be16(self.b(), field::LENGTH) as usize
    }
    /// Identification.
    pub fn ident(&self) -> u16 {
        be16(self.b(), field::IDENT)
    }
    /// MF: more fragments follow.
    pub fn more_frags(&self) -> bool {
        be16(self.b(), field::FLG_OFF) & FLAG_MF != 0
    }
    /// DF: don't fragment.
    pub fn dont_frag(&self) -> bool {
        be16(self.b(), field::FLG_OFF) & FLAG_DF != 0
    }
    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> usize {
        ((be16(self.b(), field::FLG_OFF) & OFFSET_MASK) as usize) * 8
    }
    /// A fragment: MF set or a non-zero offset.
    pub(crate) fn is_fragment(&self) -> bool {
        self.more_frags() || self.frag_offset() != 0
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.b()[field::TTL]
    }
    /// The type of service byte (DSCP << 2 | ECN).
    pub fn tos(&self) -> u8 {
        self.b()[field::DSCP_ECN]
    }
    /// The Differentiated Services code point (the TOS byte's upper six bits).
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }
    /// The payload's protocol.
    pub fn protocol(&self) -> u8 {
        self.b()[field::PROTOCOL]
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        ipv4(self.b(), field::SRC_ADDR)
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        ipv4(self.b(), field::DST_ADDR)
    }
    /// True when the header (IHL bytes, which must be in the buffer) sums to zero.
    pub fn verify_checksum(&self) -> bool {
        self.b().get(..self.header_len()).is_some_and(|h| checksum::internet(h) == 0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Writes a 20-byte header without options (checksum included) for a
    /// packet of `total_len` bytes carrying `protocol`, with type of service
    /// `tos` (DSCP << 2 | ECN).
    pub fn write_header(&mut self, tos: u8, total_len: u16, ident: u16, flags_offset: u16, ttl: u8, protocol: u8, src: Ipv4Addr, dst: Ipv4Addr) {
        let b = self.m();
        b[field::VER_IHL] = 0x45;
        b[field::DSCP_ECN] = tos;
        set_be16(b, field::LENGTH, total_len);
        set_be16(b, field::IDENT, ident);
        set_be16(b, field::FLG_OFF, flags_offset);
        b[field::TTL] = ttl;
        b[field::PROTOCOL] = protocol;
        set_be16(b, field::CHECKSUM, 0);
        b[field::SRC_ADDR].copy_from_slice(&src.octets());
        b[field::DST_ADDR].copy_from_slice(&dst.octets());
        self.fill_checksum();
    }
    /// Recomputes the header checksum over IHL bytes.
    pub fn fill_checksum(&mut self) {
        let hl = self.header_len();
        let b = self.m();
        set_be16(b, field::CHECKSUM, 0);
        let c = checksum::internet(&b[..hl]);
        set_be16(b, field::CHECKSUM, c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_header_reads_back_and_checks() {
        let mut b = [0u8; 28];
        let (s, d) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        Ipv4Packet::new_unchecked(&mut b[..]).write_header(0xb8, 28, 7, FLAG_MF | 3, 64, PROTO_UDP, s, d);
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.version(), p.header_len(), p.total_len(), p.ident()), (4, 20, 28, 7));
        assert_eq!((p.more_frags(), p.dont_frag(), p.frag_offset(), p.is_fragment()), (true, false, 24, true));
        assert_eq!((p.ttl(), p.protocol(), p.src_addr(), p.dst_addr()), (64, 17, s, d));
        assert_eq!((p.tos(), p.dscp()), (0xb8, 46), "EF");
        assert!(p.verify_checksum());
        assert_eq!(checksum::internet(&b[..20]), 0);
        assert!(Ipv4Packet::new_checked(&b[..19]).is_none());
    }
}
