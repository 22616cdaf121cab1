//! Header fields by name: every header module (`ethernet`, `ipv4`, `udp`,
//! `arp`) declares its fields as byte ranges in a `field` module, and its
//! `Packet` view reads and writes them through the helpers here, so no
//! caller spells an offset. Readers index the buffer: a view checks the
//! length its fields need when it is made (`new_checked`).

/// A field: the bytes `start..end` of its header.
pub type Field = core::ops::Range<usize>;

/// The big-endian `u16` in `b[f]` (a two-byte field).
pub(crate) fn be16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes([b[f.start], b[f.start + 1]])
}

/// Writes `v` big-endian into `b[f]` (a two-byte field).
pub fn set_be16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

/// The IPv4 address in `b[f]` (a four-byte field).
pub fn ipv4(b: &[u8], f: Field) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::new(b[f.start], b[f.start + 1], b[f.start + 2], b[f.start + 3])
}

/// The MAC address in `b[f]` (a six-byte field).
pub fn mac(b: &[u8], f: Field) -> crate::MacAddr {
    let mut m = [0u8; 6];
    m.copy_from_slice(&b[f]);
    crate::MacAddr(m)
}
