//! The Internet checksum (RFC 1071) and the UDP pseudo-header sum.

use std::net::Ipv4Addr;

/// One's-complement sum of `data` as big-endian 16-bit words, not yet folded.
pub fn sum(data: &[u8], mut acc: u64) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        // Summing 32-bit halves into a u64 defers carries; fold() resolves them.
        acc += u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as u64;
        acc += u32::from_be_bytes([c[4], c[5], c[6], c[7]]) as u64;
    }
    let mut rest = chunks.remainder();
    while rest.len() >= 2 {
        acc += u16::from_be_bytes([rest[0], rest[1]]) as u64;
        rest = &rest[2..];
    }
    if let [last] = rest {
        acc += (*last as u64) << 8;
    }
    acc
}

/// Folds a sum into 16 bits and complements it: the value to put in a header.
pub fn finish(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// Internet checksum of `data`.
pub(crate) fn internet(data: &[u8]) -> u16 {
    finish(sum(data, 0))
}

/// Sum of the IPv4 pseudo-header that the UDP checksum covers.
pub(crate) fn pseudo_header_sum(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, len: u16) -> u64 {
    let s = src.octets();
    let d = dst.octets();
    u16::from_be_bytes([s[0], s[1]]) as u64
        + u16::from_be_bytes([s[2], s[3]]) as u64
        + u16::from_be_bytes([d[0], d[1]]) as u64
        + u16::from_be_bytes([d[2], d[3]]) as u64
        + proto as u64
        + len as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3 example: sum of these words is 0xddf2 (before complement).
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(internet(&data), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(internet(&[0xab]), internet(&[0xab, 0x00]));
    }

    #[test]
    fn checksum_of_data_with_its_checksum_is_zero() {
        let mut data = vec![0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7];
        let c = internet(&data);
        data[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(c, 0xb861); // the well-known example header
        assert_eq!(internet(&data), 0);
    }
}
