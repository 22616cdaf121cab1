//! The PTPv2 wire format (IEEE 1588-2008, clause 13) for the messages an
//! end-to-end delay request-response master and slave exchange over UDP/IPv4
//! (annex D): the common header, Announce, Sync, Follow_Up, Delay_Req and
//! Delay_Resp.
//!
//! Written from the standard's tables. Every field is big-endian. Parsing
//! checks each length before it reads (a datagram from the network can be
//! anything) and never panics; messages this node does not use (peer delay,
//! signalling, management) parse as the error [`WireError::Other`] (with the message type) so a
//! caller can count them.

use thiserror::Error;

/// Length of the common header (clause 13.3).
pub const HEADER_LEN: usize = 34;
/// Sync, Delay_Req and Follow_Up: header + one timestamp.
pub(crate) const SYNC_LEN: usize = 44;
/// Delay_Resp: header + timestamp + requesting port identity.
pub(crate) const DELAY_RESP_LEN: usize = 54;
/// Announce (clause 13.5).
pub const ANNOUNCE_LEN: usize = 64;

/// `flagField[0]` bit: the sender is a two-step clock (a Follow_Up carries the Sync's time).
pub const FLAG_TWO_STEP: u16 = 0x0200;
/// `flagField[0]` bit: the message was sent unicast.
pub(crate) const FLAG_UNICAST: u16 = 0x0400;
/// `flagField[1]` bit: currentUtcOffset is valid.
pub(crate) const FLAG_UTC_OFFSET_VALID: u16 = 0x0004;
/// `flagField[1]` bit: the grandmaster's timescale is PTP (TAI); clear: arbitrary.
pub(crate) const FLAG_PTP_TIMESCALE: u16 = 0x0008;

/// messageType (clause 13.3.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgType {
    /// Event: the master's time at transmission.
    Sync = 0x0,
    /// Event: the slave asks for its arrival time.
    DelayReq = 0x1,
    /// General: the precise time of a two-step Sync.
    FollowUp = 0x8,
    /// General: the arrival time of a Delay_Req.
    DelayResp = 0x9,
    /// General: the master's dataset for the best-master choice.
    Announce = 0xB,
}

impl MsgType {
    fn from_nibble(v: u8) -> Option<MsgType> {
        Some(match v {
            0x0 => MsgType::Sync,
            0x1 => MsgType::DelayReq,
            0x8 => MsgType::FollowUp,
            0x9 => MsgType::DelayResp,
            0xB => MsgType::Announce,
            _ => return None,
        })
    }
    /// controlField of this type (clause 13.3.2.10, kept for PTPv1 hardware).
    fn control(self) -> u8 {
        match self {
            MsgType::Sync => 0,
            MsgType::DelayReq => 1,
            MsgType::FollowUp => 2,
            MsgType::DelayResp => 3,
            MsgType::Announce => 5,
        }
    }
}

/// A clock's identity and port number (clause 5.3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PortIdentity {
    /// EUI-64 clock identity.
    pub clock: [u8; 8],
    /// Port number (1 for a one-port clock).
    pub port: u16,
}

impl PortIdentity {
    /// The identity linuxptp and most stacks derive from a MAC: `mac[0..3] ff fe mac[3..6]`, port 1.
    pub fn from_mac(mac: [u8; 6]) -> PortIdentity {
        PortIdentity { clock: [mac[0], mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]], port: 1 }
    }
    fn write(&self, b: &mut [u8]) {
        b[..8].copy_from_slice(&self.clock);
        b[8..10].copy_from_slice(&self.port.to_be_bytes());
    }
    fn read(b: &[u8]) -> PortIdentity {
        let mut clock = [0u8; 8];
        clock.copy_from_slice(&b[..8]);
        PortIdentity { clock, port: u16::from_be_bytes([b[8], b[9]]) }
    }
}

impl std::fmt::Display for PortIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.clock;
        write!(f, "{:02x}{:02x}{:02x}.{:02x}{:02x}.{:02x}{:02x}{:02x}-{}", c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], self.port)
    }
}

/// A PTP timestamp: 48-bit seconds and nanoseconds (clause 5.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timestamp {
    /// Seconds (48 bits on the wire).
    pub seconds: u64,
    /// Nanoseconds, below 10^9 in a valid timestamp.
    pub nanos: u32,
}

impl Timestamp {
    /// The timestamp of `ns` nanoseconds since the epoch (seconds above 2^48 wrap, as on the wire).
    pub(crate) fn from_ns(ns: u64) -> Timestamp {
        Timestamp { seconds: (ns / 1_000_000_000) & 0xffff_ffff_ffff, nanos: (ns % 1_000_000_000) as u32 }
    }
    /// Nanoseconds since the epoch.
    pub fn to_ns(&self) -> i128 {
        self.seconds as i128 * 1_000_000_000 + self.nanos as i128
    }
    fn write(&self, b: &mut [u8]) {
        b[..6].copy_from_slice(&self.seconds.to_be_bytes()[2..]);
        b[6..10].copy_from_slice(&self.nanos.to_be_bytes());
    }
    fn read(b: &[u8]) -> Timestamp {
        let mut s = [0u8; 8];
        s[2..].copy_from_slice(&b[..6]);
        Timestamp { seconds: u64::from_be_bytes(s), nanos: u32::from_be_bytes([b[6], b[7], b[8], b[9]]) }
    }
}

/// The common header (clause 13.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Which message.
    pub msg_type: MsgType,
    /// transportSpecific (upper nibble of byte 0; 0 for UDP/IPv4).
    pub transport_specific: u8,
    /// messageLength as sent.
    pub length: u16,
    /// domainNumber.
    pub domain: u8,
    /// flagField (byte 6 in the high half).
    pub flags: u16,
    /// correctionField, in ns × 2^16.
    pub correction: i64,
    /// sourcePortIdentity.
    pub source: PortIdentity,
    /// sequenceId.
    pub sequence: u16,
    /// logMessageInterval.
    pub log_interval: i8,
}

impl Header {
    /// A header for `msg_type` from `source` (domain 0, no flags, no correction).
    pub fn new(msg_type: MsgType, source: PortIdentity, sequence: u16, log_interval: i8) -> Header {
        Header { msg_type, transport_specific: 0, length: 0, domain: 0, flags: 0, correction: 0, source, sequence, log_interval }
    }
    /// correctionField in whole nanoseconds (rounded toward minus infinity).
    pub(crate) fn correction_ns(&self) -> i64 {
        self.correction >> 16
    }
}

/// Announce body (clause 13.5): the grandmaster's dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Announce {
    /// originTimestamp (approximate).
    pub origin: Timestamp,
    /// currentUtcOffset, s.
    pub utc_offset: i16,
    /// grandmasterPriority1 (lower wins).
    pub priority1: u8,
    /// grandmasterClockQuality.clockClass.
    pub clock_class: u8,
    /// grandmasterClockQuality.clockAccuracy.
    pub clock_accuracy: u8,
    /// grandmasterClockQuality.offsetScaledLogVariance.
    pub variance: u16,
    /// grandmasterPriority2.
    pub priority2: u8,
    /// grandmasterIdentity.
    pub gm_identity: [u8; 8],
    /// stepsRemoved.
    pub steps_removed: u16,
    /// timeSource.
    pub time_source: u8,
}

/// The message body by type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// Sync: originTimestamp (0 in a two-step Sync's precise sense: see Follow_Up).
    Sync(Timestamp),
    /// Delay_Req: originTimestamp.
    DelayReq(Timestamp),
    /// Follow_Up: preciseOriginTimestamp of the Sync with the same sequenceId.
    FollowUp(Timestamp),
    /// Delay_Resp: receiveTimestamp and requestingPortIdentity.
    DelayResp(Timestamp, PortIdentity),
    /// Announce.
    Announce(Announce),
}

/// One PTP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// The header.
    pub header: Header,
    /// The body.
    pub body: Body,
}

/// Bytes that are not a message this node can use.
#[derive(Debug, Clone, Copy, Error, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than its header or its message type needs.
    #[error("PTP message of {len} bytes, shorter than the {need} its header or type needs")]
    Short {
        /// The length received, bytes.
        len: usize,
        /// The length needed, bytes.
        need: usize,
    },
    /// A PTP version other than 2.
    #[error("PTP version {0}, this node speaks 2")]
    Version(u8),
    /// A `messageLength` the datagram does not match.
    #[error("messageLength {field} but the datagram has {len} bytes")]
    Length {
        /// The header field `messageLength`, bytes.
        field: u16,
        /// The length received, bytes.
        len: usize,
    },
    /// A message type an end-to-end ordinary clock does not use.
    #[error("PTP message type {0:#x} is not used by an end-to-end ordinary clock (peer delay, signalling, management)")]
    Other(u8),
}

impl Message {
    /// The message's wire length.
    pub(crate) fn wire_len(&self) -> usize {
        match self.body {
            Body::Sync(_) | Body::DelayReq(_) | Body::FollowUp(_) => SYNC_LEN,
            Body::DelayResp(..) => DELAY_RESP_LEN,
            Body::Announce(_) => ANNOUNCE_LEN,
        }
    }

    /// The type the body implies.
    fn body_type(&self) -> MsgType {
        match self.body {
            Body::Sync(_) => MsgType::Sync,
            Body::DelayReq(_) => MsgType::DelayReq,
            Body::FollowUp(_) => MsgType::FollowUp,
            Body::DelayResp(..) => MsgType::DelayResp,
            Body::Announce(_) => MsgType::Announce,
        }
    }

    /// Writes the message into `out` and returns its length (`out` must hold
    /// [`ANNOUNCE_LEN`] bytes; `None` if it does not). The header's type and
    /// length are taken from the body.
    pub fn encode(&self, out: &mut [u8]) -> Option<usize> {
        let len = self.wire_len();
        let b = out.get_mut(..len)?;
        b.fill(0);
        let h = &self.header;
        let t = self.body_type();
        b[0] = (h.transport_specific << 4) | t as u8;
        b[1] = 2;
        b[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        b[4] = h.domain;
        b[6..8].copy_from_slice(&h.flags.to_be_bytes());
        b[8..16].copy_from_slice(&h.correction.to_be_bytes());
        h.source.write(&mut b[20..30]);
        b[30..32].copy_from_slice(&h.sequence.to_be_bytes());
        b[32] = t.control();
        b[33] = h.log_interval as u8;
        let body = &mut b[HEADER_LEN..];
        match &self.body {
            Body::Sync(ts) | Body::DelayReq(ts) | Body::FollowUp(ts) => ts.write(body),
            Body::DelayResp(ts, who) => {
                ts.write(body);
                who.write(&mut body[10..20]);
            }
            Body::Announce(a) => {
                a.origin.write(body);
                body[10..12].copy_from_slice(&a.utc_offset.to_be_bytes());
                body[13] = a.priority1;
                body[14] = a.clock_class;
                body[15] = a.clock_accuracy;
                body[16..18].copy_from_slice(&a.variance.to_be_bytes());
                body[18] = a.priority2;
                body[19..27].copy_from_slice(&a.gm_identity);
                body[27..29].copy_from_slice(&a.steps_removed.to_be_bytes());
                body[29] = a.time_source;
            }
        }
        Some(len)
    }

    /// Parses one datagram (any bytes: never panics). Trailing bytes past
    /// messageLength are allowed (annex D permits padding); a messageLength
    /// longer than the datagram is not.
    pub fn parse(b: &[u8]) -> Result<Message, WireError> {
        if b.len() < HEADER_LEN {
            return Err(WireError::Short { len: b.len(), need: HEADER_LEN });
        }
        let version = b[1] & 0x0f;
        if version != 2 {
            return Err(WireError::Version(version));
        }
        let field = u16::from_be_bytes([b[2], b[3]]);
        if field as usize > b.len() || (field as usize) < HEADER_LEN {
            return Err(WireError::Length { field, len: b.len() });
        }
        let b = &b[..field as usize];
        let Some(msg_type) = MsgType::from_nibble(b[0] & 0x0f) else { return Err(WireError::Other(b[0] & 0x0f)) };
        let need = match msg_type {
            MsgType::Sync | MsgType::DelayReq | MsgType::FollowUp => SYNC_LEN,
            MsgType::DelayResp => DELAY_RESP_LEN,
            MsgType::Announce => ANNOUNCE_LEN,
        };
        if b.len() < need {
            return Err(WireError::Short { len: b.len(), need });
        }
        let mut corr = [0u8; 8];
        corr.copy_from_slice(&b[8..16]);
        let header = Header {
            msg_type,
            transport_specific: b[0] >> 4,
            length: field,
            domain: b[4],
            flags: u16::from_be_bytes([b[6], b[7]]),
            correction: i64::from_be_bytes(corr),
            source: PortIdentity::read(&b[20..30]),
            sequence: u16::from_be_bytes([b[30], b[31]]),
            log_interval: b[33] as i8,
        };
        let body = &b[HEADER_LEN..];
        let ts = Timestamp::read(body);
        let body = match msg_type {
            MsgType::Sync => Body::Sync(ts),
            MsgType::DelayReq => Body::DelayReq(ts),
            MsgType::FollowUp => Body::FollowUp(ts),
            MsgType::DelayResp => Body::DelayResp(ts, PortIdentity::read(&body[10..20])),
            MsgType::Announce => {
                let mut gm = [0u8; 8];
                gm.copy_from_slice(&body[19..27]);
                Body::Announce(Announce {
                    origin: ts,
                    utc_offset: i16::from_be_bytes([body[10], body[11]]),
                    priority1: body[13],
                    clock_class: body[14],
                    clock_accuracy: body[15],
                    variance: u16::from_be_bytes([body[16], body[17]]),
                    priority2: body[18],
                    gm_identity: gm,
                    steps_removed: u16::from_be_bytes([body[27], body[28]]),
                    time_source: body[29],
                })
            }
        };
        Ok(Message { header, body })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> PortIdentity {
        PortIdentity::from_mac([0x02, 0x64, 0x70, 0x00, 0x00, 0x0a])
    }

    /// A two-step Sync as ptp4l sends it, written out byte by byte from clause 13.
    const SYNC_BYTES: [u8; 44] = [
        0x00, 0x02, 0x00, 0x2c, // Sync, version 2, length 44
        0x00, 0x00, 0x02, 0x00, // domain 0, reserved, flags: twoStep
        0, 0, 0, 0, 0, 0, 0, 0, // correction
        0, 0, 0, 0, // reserved
        0x02, 0x64, 0x70, 0xff, 0xfe, 0x00, 0x00, 0x0a, 0x00, 0x01, // source port identity
        0x12, 0x34, // sequence
        0x00, 0xfe, // control Sync, log interval -2
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // origin timestamp (zero: two-step)
    ];

    #[test]
    fn sync_bytes_parse_and_encode_identically() {
        let m = Message::parse(&SYNC_BYTES).unwrap();
        assert_eq!(m.header.msg_type, MsgType::Sync);
        assert_eq!(m.header.flags & FLAG_TWO_STEP, FLAG_TWO_STEP);
        assert_eq!(m.header.source, me());
        assert_eq!(m.header.sequence, 0x1234);
        assert_eq!(m.header.log_interval, -2);
        assert_eq!(m.body, Body::Sync(Timestamp::default()));
        let mut out = [0u8; 64];
        assert_eq!(m.encode(&mut out), Some(44));
        assert_eq!(out[..44], SYNC_BYTES);
    }

    #[test]
    fn every_message_round_trips() {
        let ts = Timestamp::from_ns(1_764_000_000_123_456_789);
        assert_eq!(ts.to_ns(), 1_764_000_000_123_456_789);
        let mut h = Header::new(MsgType::Sync, me(), 7, -3);
        h.correction = -5 << 16;
        h.flags = FLAG_UNICAST;
        let bodies = [
            Body::Sync(ts),
            Body::DelayReq(ts),
            Body::FollowUp(ts),
            Body::DelayResp(ts, PortIdentity { clock: [9; 8], port: 3 }),
            Body::Announce(Announce {
                origin: ts,
                utc_offset: 37,
                priority1: 100,
                clock_class: 248,
                clock_accuracy: 0xfe,
                variance: 0xffff,
                priority2: 128,
                gm_identity: me().clock,
                steps_removed: 0,
                time_source: 0xa0,
            }),
        ];
        for body in bodies {
            let m = Message { header: h, body };
            let mut out = [0u8; ANNOUNCE_LEN];
            let n = m.encode(&mut out).unwrap();
            let back = Message::parse(&out[..n]).unwrap();
            assert_eq!(back.body, body);
            assert_eq!(back.header.length as usize, n);
            assert_eq!(back.header.correction_ns(), -5);
            assert_eq!((back.header.sequence, back.header.log_interval, back.header.flags), (7, -3, FLAG_UNICAST));
        }
    }

    #[test]
    fn announce_fields_sit_where_clause_13_5_puts_them() {
        let a = Announce {
            origin: Timestamp { seconds: 1, nanos: 2 },
            utc_offset: 37,
            priority1: 0x11,
            clock_class: 0x22,
            clock_accuracy: 0x33,
            variance: 0x4455,
            priority2: 0x66,
            gm_identity: [0x77; 8],
            steps_removed: 0x0102,
            time_source: 0xa0,
        };
        let mut out = [0u8; ANNOUNCE_LEN];
        Message { header: Header::new(MsgType::Announce, me(), 1, 1), body: Body::Announce(a) }.encode(&mut out).unwrap();
        assert_eq!(out[0] & 0x0f, 0xb);
        assert_eq!(out[32], 5);
        assert_eq!(&out[34..44], &[0, 0, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(&out[44..46], &[0, 37]);
        assert_eq!(&out[47..53], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66]);
        assert_eq!(&out[53..61], &[0x77; 8]);
        assert_eq!(&out[61..64], &[0x01, 0x02, 0xa0]);
    }

    #[test]
    fn junk_is_refused_not_panicked_on() {
        assert_eq!(Message::parse(&[]), Err(WireError::Short { len: 0, need: HEADER_LEN }));
        let mut b = SYNC_BYTES;
        b[1] = 1;
        assert_eq!(Message::parse(&b), Err(WireError::Version(1)));
        let mut b = SYNC_BYTES;
        b[3] = 60;
        assert_eq!(Message::parse(&b), Err(WireError::Length { field: 60, len: 44 }));
        let mut b = SYNC_BYTES;
        b[0] = 0x02; // Pdelay_Req
        assert_eq!(Message::parse(&b), Err(WireError::Other(2)));
        // A Delay_Resp header with a Sync-sized datagram.
        let mut b = SYNC_BYTES;
        b[0] = 0x09;
        assert_eq!(Message::parse(&b), Err(WireError::Short { len: 44, need: DELAY_RESP_LEN }));
        // Padding past messageLength is allowed.
        let mut long = SYNC_BYTES.to_vec();
        long.extend_from_slice(&[0xee; 8]);
        assert!(Message::parse(&long).is_ok());
        // Every prefix and every single-byte corruption: an answer, never a panic.
        for n in 0..=SYNC_BYTES.len() {
            let _ = Message::parse(&SYNC_BYTES[..n]);
        }
        for i in 0..SYNC_BYTES.len() {
            for v in [0u8, 0x0b, 0x7f, 0xff] {
                let mut b = [0u8; ANNOUNCE_LEN];
                b[..44].copy_from_slice(&SYNC_BYTES);
                b[i] = v;
                let _ = Message::parse(&b);
            }
        }
    }

    #[test]
    fn encode_refuses_a_short_buffer() {
        let m = Message { header: Header::new(MsgType::Sync, me(), 0, 0), body: Body::Sync(Timestamp::default()) };
        assert_eq!(m.encode(&mut [0u8; 43]), None);
    }
}
