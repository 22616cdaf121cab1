//! The ping-pong probe: the UDP payload the `detpath bench` client sends and
//! the server echoes back over the same datapath (paper 000, "Metrics").
//!
//! # Layout (all integers big-endian, network order)
//!
//! | offset | size | field                                             |
//! |-------:|-----:|---------------------------------------------------|
//! |      0 |    4 | magic `b"DPPB"` ([`MAGIC`])                       |
//! |      4 |    1 | version ([`VERSION`] = 1)                          |
//! |      5 |    1 | reserved, sent as 0, ignored on receive           |
//! |      6 |    2 | flags ([`FLAG_PONG`], [`FLAG_WARMUP`], [`FLAG_STOP`]; unknown bits are kept) |
//! |      8 |    8 | sequence id (monotonically increasing per run)    |
//! |     16 |    8 | random nonce (checked by the client on the pong)  |
//! |     24 |    8 | client send time, ns                              |
//! |     32 |    8 | server receive time, ns                           |
//! |     40 |    8 | server send time, ns                              |
//! |     48 |    8 | client receive time, ns                           |
//! |     56 |  ... | padding up to the requested size, zeros           |
//!
//! The header is [`HEADER_LEN`] = 56 bytes, which is also the smallest probe
//! size. The benchmark's default size is [`DEFAULT_SIZE`] (1024 B, as in the
//! paper) with [`SMALL_SIZE`] (128 B) as the other size the paper measured.
//! Timestamps from the client and the server come from different clocks
//! when they run on different hosts: only differences taken on one host are
//! meaningful (RTT on the client, processing time on the server). A zero
//! timestamp means "not stamped yet".
//!
//! Pure functions over byte slices: no allocation, no OS calls, and no panic
//! on any input (the decoder is property-tested over random bytes).

/// `b"DPPB"`: detpath ping-pong probe.
pub const MAGIC: u32 = u32::from_be_bytes(*b"DPPB");
/// Version of this layout.
pub const VERSION: u8 = 1;
/// Bytes of the probe header; the minimum probe size.
pub const HEADER_LEN: usize = 56;
/// Default probe (UDP payload) size: 1 KiB, as in paper 000.
pub const DEFAULT_SIZE: usize = 1024;
/// The small probe size paper 000 also measured.
pub const SMALL_SIZE: usize = 128;

/// Set by the server on the echo it sends back.
pub const FLAG_PONG: u16 = 1 << 0;
/// A warm-up round: echoed, but not counted in the statistics.
pub const FLAG_WARMUP: u16 = 1 << 1;
/// The client's last message of a run: the server may stop.
pub const FLAG_STOP: u16 = 1 << 2;

const OFF_MAGIC: usize = 0;
const OFF_VERSION: usize = 4;
const OFF_FLAGS: usize = 6;
const OFF_SEQ: usize = 8;
const OFF_NONCE: usize = 16;
/// Where the nonce sits in a probe (for tools that corrupt it on purpose).
pub const NONCE_OFFSET: usize = OFF_NONCE;
const OFF_CLIENT_SEND: usize = 24;
const OFF_SERVER_RECV: usize = 32;
const OFF_SERVER_SEND: usize = 40;
const OFF_CLIENT_RECV: usize = 48;

/// Why a probe could not be encoded or decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The buffer (to decode) or the requested size (to encode) is shorter
    /// than the probe header.
    #[error("probe too short: {got} bytes, the header needs {need}")]
    TooShort {
        /// Bytes the header needs ([`HEADER_LEN`]).
        need: usize,
        /// Bytes there were.
        got: usize,
    },
    /// The payload is not a detpath probe (another application's datagram).
    #[error("not a detpath probe (magic {0:#010x}, expected {MAGIC:#010x})")]
    BadMagic(u32),
    /// A probe from a detpath with another probe layout: run the same
    /// detpath version on both hosts.
    #[error("probe version {0}, this detpath speaks version {VERSION}: run the same detpath version on client and server")]
    BadVersion(u8),
}

/// One of the four timestamps of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    /// When the client sent the ping (client's clock).
    ClientSend,
    /// When the server received the ping (server's clock).
    ServerRecv,
    /// When the server sent the pong (server's clock).
    ServerSend,
    /// When the client received the pong (client's clock).
    ClientRecv,
}

impl Stamp {
    const fn offset(self) -> usize {
        match self {
            Stamp::ClientSend => OFF_CLIENT_SEND,
            Stamp::ServerRecv => OFF_SERVER_RECV,
            Stamp::ServerSend => OFF_SERVER_SEND,
            Stamp::ClientRecv => OFF_CLIENT_RECV,
        }
    }
}

/// The decoded header of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Probe {
    /// [`FLAG_PONG`], [`FLAG_WARMUP`], [`FLAG_STOP`]; unknown bits are carried unchanged.
    pub flags: u16,
    /// Sequence id, increasing per run: matches a pong to its ping.
    pub seq: u64,
    /// Random value the client checks on the pong: tells its own probe from a stale or foreign one.
    pub nonce: u64,
    /// Client send time, ns on the client's clock; 0: not stamped.
    pub client_send_ns: u64,
    /// Server receive time, ns on the server's clock; 0: not stamped.
    pub server_recv_ns: u64,
    /// Server send time, ns on the server's clock; 0: not stamped.
    pub server_send_ns: u64,
    /// Client receive time, ns on the client's clock; 0: not stamped.
    pub client_recv_ns: u64,
}

#[inline]
fn get_u64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_be_bytes(a)
}

#[inline]
fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_be_bytes());
}

impl Probe {
    /// A ping as the client sends it: sequence id, nonce and send time.
    pub const fn ping(seq: u64, nonce: u64, client_send_ns: u64) -> Probe {
        Probe { flags: 0, seq, nonce, client_send_ns, server_recv_ns: 0, server_send_ns: 0, client_recv_ns: 0 }
    }

    /// Writes the probe into the whole of `buf`: the header, then zeros up
    /// to `buf.len()`, which is the probe size. Returns that size.
    ///
    /// Errors: [`ProbeError::TooShort`] if `buf` is shorter than
    /// [`HEADER_LEN`].
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, ProbeError> {
        self.encode_header(buf)?;
        buf[HEADER_LEN..].fill(0);
        Ok(buf.len())
    }

    /// Writes only the header into `buf[..HEADER_LEN]` and leaves the padding
    /// as it is (for a buffer reused round after round, whose padding was
    /// written once by [`Probe::encode`]).
    pub(crate) fn encode_header(&self, buf: &mut [u8]) -> Result<(), ProbeError> {
        if buf.len() < HEADER_LEN {
            return Err(ProbeError::TooShort { need: HEADER_LEN, got: buf.len() });
        }
        buf[OFF_MAGIC..OFF_MAGIC + 4].copy_from_slice(&MAGIC.to_be_bytes());
        buf[OFF_VERSION] = VERSION;
        buf[OFF_VERSION + 1] = 0;
        buf[OFF_FLAGS..OFF_FLAGS + 2].copy_from_slice(&self.flags.to_be_bytes());
        put_u64(buf, OFF_SEQ, self.seq);
        put_u64(buf, OFF_NONCE, self.nonce);
        put_u64(buf, OFF_CLIENT_SEND, self.client_send_ns);
        put_u64(buf, OFF_SERVER_RECV, self.server_recv_ns);
        put_u64(buf, OFF_SERVER_SEND, self.server_send_ns);
        put_u64(buf, OFF_CLIENT_RECV, self.client_recv_ns);
        Ok(())
    }

    /// Decodes the header of a received probe. The padding is not checked
    /// (its length is `buf.len() - HEADER_LEN`).
    ///
    /// Errors: [`ProbeError::TooShort`], [`ProbeError::BadMagic`],
    /// [`ProbeError::BadVersion`], checked in that order.
    pub fn decode(buf: &[u8]) -> Result<Probe, ProbeError> {
        check(buf)?;
        Ok(Probe {
            flags: u16::from_be_bytes([buf[OFF_FLAGS], buf[OFF_FLAGS + 1]]),
            seq: get_u64(buf, OFF_SEQ),
            nonce: get_u64(buf, OFF_NONCE),
            client_send_ns: get_u64(buf, OFF_CLIENT_SEND),
            server_recv_ns: get_u64(buf, OFF_SERVER_RECV),
            server_send_ns: get_u64(buf, OFF_SERVER_SEND),
            client_recv_ns: get_u64(buf, OFF_CLIENT_RECV),
        })
    }

    /// Round-trip time measured by the client (`client_recv - client_send`),
    /// `None` if either is unstamped or the clock went backwards.
    pub fn rtt_ns(&self) -> Option<u64> {
        diff(self.client_send_ns, self.client_recv_ns)
    }

    /// Server processing time (`server_send - server_recv`), `None` if either
    /// is unstamped or the clock went backwards.
    pub fn server_time_ns(&self) -> Option<u64> {
        diff(self.server_recv_ns, self.server_send_ns)
    }
}

fn diff(from: u64, to: u64) -> Option<u64> {
    if from == 0 || to == 0 {
        None
    } else {
        to.checked_sub(from)
    }
}

/// Checks that `buf` holds a probe header of this version.
pub fn check(buf: &[u8]) -> Result<(), ProbeError> {
    if buf.len() < HEADER_LEN {
        return Err(ProbeError::TooShort { need: HEADER_LEN, got: buf.len() });
    }
    let magic = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if magic != MAGIC {
        return Err(ProbeError::BadMagic(magic));
    }
    if buf[OFF_VERSION] != VERSION {
        return Err(ProbeError::BadVersion(buf[OFF_VERSION]));
    }
    Ok(())
}

/// Writes one timestamp into an encoded probe in place (the server stamps
/// receive and send time on the ping it echoes without decoding it again).
/// Checks the header first, so a foreign datagram is never modified.
pub fn stamp(buf: &mut [u8], which: Stamp, t_ns: u64) -> Result<(), ProbeError> {
    check(buf)?;
    put_u64(buf, which.offset(), t_ns);
    Ok(())
}

/// Sets flag bits in an encoded probe in place (e.g. [`FLAG_PONG`] on the echo).
pub fn set_flags(buf: &mut [u8], flags: u16) -> Result<(), ProbeError> {
    check(buf)?;
    let old = u16::from_be_bytes([buf[OFF_FLAGS], buf[OFF_FLAGS + 1]]);
    buf[OFF_FLAGS..OFF_FLAGS + 2].copy_from_slice(&(old | flags).to_be_bytes());
    Ok(())
}

/// Reads the sequence id and nonce of an encoded probe without decoding the
/// rest (the client's first check on a pong).
pub fn seq_nonce(buf: &[u8]) -> Result<(u64, u64), ProbeError> {
    check(buf)?;
    Ok((get_u64(buf, OFF_SEQ), get_u64(buf, OFF_NONCE)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Probe {
        Probe {
            flags: FLAG_PONG | 0x8000,
            seq: 0x0102_0304_0506_0708,
            nonce: 0xdead_beef_cafe_f00d,
            client_send_ns: 1_000,
            server_recv_ns: 5_000_000_000,
            server_send_ns: 5_000_000_700,
            client_recv_ns: 21_000,
        }
    }

    #[test]
    fn header_is_56_bytes_and_layout_is_documented() {
        let mut b = [0xffu8; 64];
        sample().encode(&mut b).unwrap();
        assert_eq!(&b[0..4], b"DPPB");
        assert_eq!(b[4], 1);
        assert_eq!(b[5], 0);
        assert_eq!(&b[6..8], &[0x80, 0x01]);
        assert_eq!(&b[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[24..32], &1_000u64.to_be_bytes());
        assert_eq!(&b[48..56], &21_000u64.to_be_bytes());
        assert!(b[56..].iter().all(|&x| x == 0), "padding is zeroed");
    }

    #[test]
    fn round_trip_default_and_small_sizes() {
        for size in [HEADER_LEN, SMALL_SIZE, DEFAULT_SIZE, 9000] {
            let mut b = vec![0xaau8; size];
            assert_eq!(sample().encode(&mut b), Ok(size));
            assert_eq!(Probe::decode(&b), Ok(sample()));
        }
    }

    #[test]
    fn typed_errors() {
        let mut short = [0u8; HEADER_LEN - 1];
        assert_eq!(sample().encode(&mut short), Err(ProbeError::TooShort { need: 56, got: 55 }));
        assert_eq!(Probe::decode(&short), Err(ProbeError::TooShort { need: 56, got: 55 }));
        assert_eq!(Probe::decode(&[]), Err(ProbeError::TooShort { need: 56, got: 0 }));
        let mut b = [0u8; 128];
        sample().encode(&mut b).unwrap();
        let mut bad = b;
        bad[0] = b'X';
        assert!(matches!(Probe::decode(&bad), Err(ProbeError::BadMagic(_))));
        let mut bad = b;
        bad[4] = 2;
        assert_eq!(Probe::decode(&bad), Err(ProbeError::BadVersion(2)));
        // Error messages say what to do.
        assert!(ProbeError::BadVersion(2).to_string().contains("same detpath version"));
    }

    #[test]
    fn in_place_stamps_and_flags() {
        let mut b = [0u8; SMALL_SIZE];
        Probe::ping(7, 42, 100).encode(&mut b).unwrap();
        stamp(&mut b, Stamp::ServerRecv, 1_000).unwrap();
        stamp(&mut b, Stamp::ServerSend, 1_300).unwrap();
        set_flags(&mut b, FLAG_PONG).unwrap();
        stamp(&mut b, Stamp::ClientRecv, 900).unwrap();
        let p = Probe::decode(&b).unwrap();
        assert_eq!(seq_nonce(&b), Ok((7, 42)));
        assert_eq!(p.flags, FLAG_PONG);
        assert_eq!(p.rtt_ns(), Some(800));
        assert_eq!(p.server_time_ns(), Some(300));
        // A foreign datagram is left untouched.
        let mut foreign = [7u8; 100];
        assert!(stamp(&mut foreign, Stamp::ServerRecv, 1).is_err());
        assert!(set_flags(&mut foreign, FLAG_PONG).is_err());
        assert!(foreign.iter().all(|&x| x == 7));
    }

    #[test]
    fn unstamped_or_backwards_times_give_none() {
        let p = Probe::ping(1, 1, 100);
        assert_eq!(p.rtt_ns(), None);
        assert_eq!(Probe { client_recv_ns: 50, ..p }.rtt_ns(), None);
        assert_eq!(p.server_time_ns(), None);
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Probe::decode(&bytes);
            let _ = seq_nonce(&bytes);
            let mut b = bytes.clone();
            let _ = stamp(&mut b, Stamp::ClientRecv, 1);
        }

        #[test]
        fn encode_decode_round_trip(flags: u16, seq: u64, nonce: u64, t in any::<[u64; 4]>(),
                                    size in HEADER_LEN..2048usize) {
            let p = Probe { flags, seq, nonce, client_send_ns: t[0], server_recv_ns: t[1],
                            server_send_ns: t[2], client_recv_ns: t[3] };
            let mut b = vec![0x5a; size];
            prop_assert_eq!(p.encode(&mut b), Ok(size));
            prop_assert_eq!(Probe::decode(&b), Ok(p));
        }

        #[test]
        fn valid_header_with_random_body_decodes(body in proptest::collection::vec(any::<u8>(), 52..300)) {
            let mut b = b"DPPB".to_vec();
            b.extend_from_slice(&body);
            b[4] = VERSION;
            prop_assert!(Probe::decode(&b).is_ok());
        }
    }
}
