//! The benchmark's payload: which flow, which instance, when it was due.
//!
//! ```text
//! 0..4   b"DPSB"
//! 4..6   flow id (u16 BE; 0xFFFF: best-effort flood)
//! 6..8   reserved
//! 8..16  sequence number within the flow (u64 BE)
//! 16..24 scheduled transmission instant, CLOCK_MONOTONIC ns (u64 BE)
//! 24..   zero padding up to the flow's size
//! ```

/// Bytes of the header; payloads are at least this long.
pub const HEADER_LEN: usize = 24;
const MAGIC: [u8; 4] = *b"DPSB";
/// Flow id of best-effort flood packets.
pub const FLOOD_FLOW: u16 = 0xFFFF;

/// A parsed benchmark header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Flow index, or FLOOD_FLOW.
    pub flow: u16,
    /// Instance number within the flow.
    pub seq: u64,
    /// When the instance was due, CLOCK_MONOTONIC ns.
    pub scheduled_ns: u64,
}

impl Header {
    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf` (which must be that long).
    pub fn write(&self, buf: &mut [u8]) {
        if buf.len() < HEADER_LEN {
            return;
        }
        buf[0..4].copy_from_slice(&MAGIC);
        buf[4..6].copy_from_slice(&self.flow.to_be_bytes());
        buf[6..8].fill(0);
        buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..24].copy_from_slice(&self.scheduled_ns.to_be_bytes());
    }

    /// Parses a received payload (any bytes: never panics).
    pub fn parse(buf: &[u8]) -> Option<Header> {
        if buf.len() < HEADER_LEN || buf[0..4] != MAGIC {
            return None;
        }
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[i..i + 8]);
            u64::from_be_bytes(b)
        };
        Some(Header { flow: u16::from_be_bytes([buf[4], buf[5]]), seq: u64_at(8), scheduled_ns: u64_at(16) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_junk() {
        let h = Header { flow: 3, seq: 99, scheduled_ns: 1_234_567 };
        let mut b = [0u8; 64];
        h.write(&mut b);
        assert_eq!(Header::parse(&b), Some(h));
        assert_eq!(Header::parse(&b[..23]), None);
        b[0] = 0;
        assert_eq!(Header::parse(&b), None);
    }
}
