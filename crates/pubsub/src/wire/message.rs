//! RTPS messages: the 20-byte header and an iterator over the submessages,
//! each parsed into a borrowed, validated view.
//!
//! Validity follows DDSI-RTPS 2.5 §8.3.4/§8.3.7: a submessage whose length
//! runs past the message, or whose fields are invalid (sequence number below
//! 1, a set of more than 256 bits, fragment numbers out of range), makes the
//! rest of the message invalid, so the iterator yields one error and stops.
//! Unknown and vendor-specific submessages are skipped by their length.

use super::bytes::ByteReader;
use super::plist::ParamList;
use super::types::*;
use super::WireError;

/// Length of the RTPS header.
pub const HEADER_LEN: usize = 20;
/// Length of a submessage header.
pub const SUBMSG_HEADER_LEN: usize = 4;

/// Submessage ids.
pub mod id {
    /// PAD: no content; fills space.
    pub const PAD: u8 = 0x01;
    /// ACKNACK: a reader acknowledges a writer's samples and asks for missing ones.
    pub const ACKNACK: u8 = 0x06;
    /// HEARTBEAT: a writer announces the range of sequence numbers it has.
    pub const HEARTBEAT: u8 = 0x07;
    /// GAP: a writer says sequence numbers are irrelevant to the reader (never to come).
    pub const GAP: u8 = 0x08;
    /// INFO_TS: the source timestamp of the submessages that follow.
    pub const INFO_TS: u8 = 0x09;
    /// INFO_SRC: the participant the submessages that follow come from.
    pub const INFO_SRC: u8 = 0x0c;
    /// INFO_REPLY_IP4: where to reply (IPv4); skipped.
    pub const INFO_REPLY_IP4: u8 = 0x0d;
    /// INFO_DST: the participant the submessages that follow are for.
    pub const INFO_DST: u8 = 0x0e;
    /// INFO_REPLY: where to reply (locator lists); skipped.
    pub const INFO_REPLY: u8 = 0x0f;
    /// NACK_FRAG: a reader asks for missing fragments of one sample.
    pub const NACK_FRAG: u8 = 0x12;
    /// HEARTBEAT_FRAG: a writer announces the fragments of one sample it has sent.
    pub const HEARTBEAT_FRAG: u8 = 0x13;
    /// DATA: one sample (or key, or no payload: a status change).
    pub const DATA: u8 = 0x15;
    /// DATA_FRAG: fragments of a sample too large for one datagram.
    pub const DATA_FRAG: u8 = 0x16;
}

/// Submessage flags.
pub mod flag {
    /// E flag, every submessage: the body is little endian (clear: big endian).
    pub const ENDIANNESS: u8 = 0x01;
    /// F flag: of HEARTBEAT, readers need not answer; of ACKNACK, the reader
    /// needs no HEARTBEAT in return.
    pub const FINAL: u8 = 0x02;
    /// L flag of HEARTBEAT: the writer asserts its liveliness.
    pub const LIVELINESS: u8 = 0x04;
    /// I flag of INFO_TS: no timestamp follows; the submessages that follow
    /// have none.
    pub const INVALIDATE: u8 = 0x02;
    /// Q flag of DATA and DATA_FRAG: an inline QoS parameter list follows
    /// the fixed fields.
    pub const INLINE_QOS: u8 = 0x02;
    /// D flag of DATA: the payload is a serialized sample.
    pub const DATA_DATA: u8 = 0x04;
    /// K flag of DATA: the payload is a serialized key.
    pub const DATA_KEY: u8 = 0x08;
    /// K flag of DATA_FRAG: the fragments are of a serialized key.
    pub const DATAFRAG_KEY: u8 = 0x04;
}

/// The RTPS header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The sender's RTPS protocol version.
    pub version: ProtocolVersion,
    /// The sender's vendor id.
    pub vendor: VendorId,
    /// The sender's GUID prefix: whose submessages these are, until an
    /// INFO_SRC says otherwise.
    pub guid_prefix: GuidPrefix,
}

/// A parsed message: its header and its submessages (parsed lazily).
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    /// The header, validated.
    pub header: Header,
    body: &'a [u8],
}

impl<'a> Message<'a> {
    /// Checks the header: the "RTPS" magic and protocol major version 2.
    pub fn parse(buf: &'a [u8]) -> Result<Message<'a>, WireError> {
        let mut r = ByteReader::new(buf, false);
        if r.take(4)? != b"RTPS" {
            return Err(WireError::NotRtps);
        }
        let version = ProtocolVersion { major: r.u8()?, minor: r.u8()? };
        if version.major != 2 {
            return Err(WireError::UnsupportedVersion(version.major, version.minor));
        }
        let vendor = VendorId(r.array()?);
        let guid_prefix = GuidPrefix(r.array()?);
        Ok(Message { header: Header { version, vendor, guid_prefix }, body: r.rest() })
    }
    /// The submessages in order.
    pub fn submessages(&self) -> Submessages<'a> {
        Submessages { buf: self.body, pos: 0, done: false }
    }
}

/// Iterator over the submessages of a message.
#[derive(Clone, Debug)]
pub struct Submessages<'a> {
    buf: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> Iterator for Submessages<'a> {
    type Item = Result<Submessage<'a>, WireError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.buf.len() {
            return None;
        }
        let res = self.next_inner();
        if res.is_err() {
            self.done = true;
        }
        Some(res)
    }
}

impl<'a> Submessages<'a> {
    fn next_inner(&mut self) -> Result<Submessage<'a>, WireError> {
        let rest = self.buf.get(self.pos..).unwrap_or(&[]);
        if rest.len() < SUBMSG_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let (sid, flags) = (rest[0], rest[1]);
        let le = flags & flag::ENDIANNESS != 0;
        let len = if le { u16::from_le_bytes([rest[2], rest[3]]) } else { u16::from_be_bytes([rest[2], rest[3]]) } as usize;
        let avail = rest.len() - SUBMSG_HEADER_LEN;
        // Length 0 means "up to the end of the message", except for PAD and INFO_TS.
        let body_len = if len == 0 && sid != id::PAD && sid != id::INFO_TS { avail } else { len };
        if body_len > avail {
            return Err(WireError::Truncated);
        }
        let body = &rest[SUBMSG_HEADER_LEN..SUBMSG_HEADER_LEN + body_len];
        self.pos += SUBMSG_HEADER_LEN + body_len;
        Submessage::parse(sid, flags, body)
    }
}

/// One submessage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submessage<'a> {
    /// PAD.
    Pad,
    /// ACKNACK.
    AckNack(AckNack<'a>),
    /// HEARTBEAT.
    Heartbeat(Heartbeat),
    /// GAP.
    Gap(Gap<'a>),
    /// INFO_TS: `None` when the invalidate flag is set.
    InfoTs(Option<Time>),
    /// INFO_SRC.
    InfoSrc(InfoSrc),
    /// INFO_DST: the destination participant's GUID prefix
    /// (GUIDPREFIX_UNKNOWN: every participant).
    InfoDst(GuidPrefix),
    /// NACK_FRAG.
    NackFrag(NackFrag<'a>),
    /// HEARTBEAT_FRAG.
    HeartbeatFrag(HeartbeatFrag),
    /// DATA.
    Data(Data<'a>),
    /// DATA_FRAG.
    DataFrag(DataFrag<'a>),
    /// Anything else (INFO_REPLY, vendor-specific, future ids): skipped by its length.
    Unknown {
        /// The submessage id.
        id: u8,
        /// The submessage flags.
        flags: u8,
        /// The body length in bytes (what was skipped).
        len: usize,
    },
}

/// INFO_SRC: the source of the following submessages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfoSrc {
    /// The source's protocol version.
    pub version: ProtocolVersion,
    /// The source's vendor id.
    pub vendor: VendorId,
    /// The source participant's GUID prefix.
    pub guid_prefix: GuidPrefix,
}

/// ACKNACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckNack<'a> {
    /// readerId: the reader that acknowledges.
    pub reader_id: EntityId,
    /// writerId: the writer acknowledged.
    pub writer_id: EntityId,
    /// Everything below `base` is acknowledged; bits are negative acknowledgements.
    pub state: SnSet<'a>,
    /// count: raised by one with each ACKNACK this reader sends this writer,
    /// so stale or duplicated ones are recognised.
    pub count: i32,
    /// The F flag: the reader needs no HEARTBEAT in return.
    pub final_flag: bool,
}

/// HEARTBEAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heartbeat {
    /// readerId: the reader addressed (ENTITYID_UNKNOWN: every matched reader).
    pub reader_id: EntityId,
    /// writerId: the writer announcing.
    pub writer_id: EntityId,
    /// firstSN: the oldest sample the writer still has.
    pub first_sn: SequenceNumber,
    /// lastSN: the newest sample the writer has written (firstSN - 1 when it has none).
    pub last_sn: SequenceNumber,
    /// count: raised by one with each HEARTBEAT, so stale or duplicated ones
    /// are recognised.
    pub count: i32,
    /// The F flag: readers need not answer.
    pub final_flag: bool,
    /// The L flag: the writer asserts its liveliness.
    pub liveliness_flag: bool,
}

/// GAP: `gap_start..gap_list.base` plus the bits of `gap_list` are irrelevant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap<'a> {
    /// readerId: the reader addressed (ENTITYID_UNKNOWN: every matched reader).
    pub reader_id: EntityId,
    /// writerId: the writer whose sequence numbers these are.
    pub writer_id: EntityId,
    /// gapStart: the first irrelevant sequence number.
    pub gap_start: SequenceNumber,
    /// gapList: its base ends the range from gapStart; its bits name more
    /// irrelevant sequence numbers.
    pub gap_list: SnSet<'a>,
}

/// HEARTBEAT_FRAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeartbeatFrag {
    /// readerId: the reader addressed (ENTITYID_UNKNOWN: every matched reader).
    pub reader_id: EntityId,
    /// writerId: the writer announcing.
    pub writer_id: EntityId,
    /// writerSN: the sample whose fragments are announced.
    pub writer_sn: SequenceNumber,
    /// lastFragmentNum: the highest fragment number of it sent so far.
    pub last_fragment_num: u32,
    /// count: raised by one with each HEARTBEAT_FRAG.
    pub count: i32,
}

/// NACK_FRAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NackFrag<'a> {
    /// readerId: the reader asking.
    pub reader_id: EntityId,
    /// writerId: the writer asked.
    pub writer_id: EntityId,
    /// writerSN: the sample whose fragments are missing.
    pub writer_sn: SequenceNumber,
    /// fragmentNumberState: the fragment numbers missing.
    pub state: FragSet<'a>,
    /// count: raised by one with each NACK_FRAG this reader sends this writer.
    pub count: i32,
}

/// DATA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Data<'a> {
    /// readerId: the reader addressed (ENTITYID_UNKNOWN: every matched reader).
    pub reader_id: EntityId,
    /// writerId: the writer of the sample.
    pub writer_id: EntityId,
    /// writerSN: the sample's sequence number (1 or more).
    pub writer_sn: SequenceNumber,
    /// Inline QoS (parameter list in the submessage's byte order).
    pub inline_qos: Option<ParamList<'a>>,
    /// The serialized payload (encapsulation header first), with the key flag
    /// telling whether it is data or a serialized key.
    pub payload: Option<&'a [u8]>,
    /// The K flag: the payload is a serialized key, not a sample.
    pub key_flag: bool,
}

/// DATA_FRAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataFrag<'a> {
    /// readerId: the reader addressed (ENTITYID_UNKNOWN: every matched reader).
    pub reader_id: EntityId,
    /// writerId: the writer of the sample.
    pub writer_id: EntityId,
    /// writerSN: the sample's sequence number (1 or more).
    pub writer_sn: SequenceNumber,
    /// First fragment in this submessage (1-based).
    pub frag_start: u32,
    /// fragmentsInSubmessage: how many consecutive fragments this submessage carries.
    pub frags_in_submessage: u16,
    /// fragmentSize: bytes per fragment (the sample's last one may be shorter).
    pub frag_size: u16,
    /// sampleSize: the whole serialized sample, in bytes.
    pub sample_size: u32,
    /// Inline QoS (parameter list in the submessage's byte order).
    pub inline_qos: Option<ParamList<'a>>,
    /// The fragments' bytes: exactly what they cover of the sample (trailing padding cut off).
    pub payload: &'a [u8],
    /// The K flag: the fragments are of a serialized key.
    pub key_flag: bool,
}

impl DataFrag<'_> {
    /// Total number of fragments of the sample.
    pub fn total_fragments(&self) -> u32 {
        self.sample_size.div_ceil(self.frag_size as u32)
    }
    /// Byte offset of this submessage's first fragment in the sample.
    pub fn offset(&self) -> usize {
        (self.frag_start as usize - 1) * self.frag_size as usize
    }
}

impl<'a> Submessage<'a> {
    /// Parses one submessage body.
    pub fn parse(sid: u8, flags: u8, body: &'a [u8]) -> Result<Submessage<'a>, WireError> {
        let le = flags & flag::ENDIANNESS != 0;
        let mut r = ByteReader::new(body, le);
        Ok(match sid {
            id::PAD => Submessage::Pad,
            id::INFO_TS => {
                if flags & flag::INVALIDATE != 0 {
                    Submessage::InfoTs(None)
                } else {
                    Submessage::InfoTs(Some(Time::read(&mut r)?))
                }
            }
            id::INFO_DST => Submessage::InfoDst(GuidPrefix(r.array()?)),
            id::INFO_SRC => {
                r.skip(4)?;
                let version = ProtocolVersion { major: r.u8()?, minor: r.u8()? };
                Submessage::InfoSrc(InfoSrc { version, vendor: VendorId(r.array()?), guid_prefix: GuidPrefix(r.array()?) })
            }
            id::ACKNACK => {
                let reader_id = EntityId(r.array()?);
                let writer_id = EntityId(r.array()?);
                let state = SnSet::read(&mut r)?;
                let count = r.i32()?;
                Submessage::AckNack(AckNack { reader_id, writer_id, state, count, final_flag: flags & flag::FINAL != 0 })
            }
            id::HEARTBEAT => {
                let reader_id = EntityId(r.array()?);
                let writer_id = EntityId(r.array()?);
                let first_sn = SequenceNumber::read(&mut r)?;
                let last_sn = SequenceNumber::read(&mut r)?;
                let count = r.i32()?;
                // §8.3.7.5: firstSN >= 1, lastSN >= 0, lastSN >= firstSN - 1.
                if first_sn.0 < 1 || last_sn.0 < 0 || last_sn.0 < first_sn.0 - 1 {
                    return Err(WireError::BadSequenceNumber);
                }
                Submessage::Heartbeat(Heartbeat {
                    reader_id,
                    writer_id,
                    first_sn,
                    last_sn,
                    count,
                    final_flag: flags & flag::FINAL != 0,
                    liveliness_flag: flags & flag::LIVELINESS != 0,
                })
            }
            id::GAP => {
                let reader_id = EntityId(r.array()?);
                let writer_id = EntityId(r.array()?);
                let gap_start = SequenceNumber::read(&mut r)?;
                let gap_list = SnSet::read(&mut r)?;
                if gap_start.0 < 1 || gap_list.base < gap_start {
                    return Err(WireError::BadSequenceNumber);
                }
                Submessage::Gap(Gap { reader_id, writer_id, gap_start, gap_list })
            }
            id::HEARTBEAT_FRAG => {
                let reader_id = EntityId(r.array()?);
                let writer_id = EntityId(r.array()?);
                let writer_sn = SequenceNumber::read(&mut r)?;
                let last_fragment_num = r.u32()?;
                let count = r.i32()?;
                if writer_sn.0 < 1 || last_fragment_num == 0 {
                    return Err(WireError::BadSequenceNumber);
                }
                Submessage::HeartbeatFrag(HeartbeatFrag { reader_id, writer_id, writer_sn, last_fragment_num, count })
            }
            id::NACK_FRAG => {
                let reader_id = EntityId(r.array()?);
                let writer_id = EntityId(r.array()?);
                let writer_sn = SequenceNumber::read(&mut r)?;
                let state = FragSet::read(&mut r)?;
                let count = r.i32()?;
                if writer_sn.0 < 1 {
                    return Err(WireError::BadSequenceNumber);
                }
                Submessage::NackFrag(NackFrag { reader_id, writer_id, writer_sn, state, count })
            }
            id::DATA => Submessage::Data(parse_data(flags, &mut r)?),
            id::DATA_FRAG => Submessage::DataFrag(parse_data_frag(flags, &mut r)?),
            _ => Submessage::Unknown { id: sid, flags, len: body.len() },
        })
    }
}

/// Reads extraFlags and octetsToInlineQos, returning where the fields the
/// latter counts from begin and how many octets it says.
fn data_prologue(r: &mut ByteReader<'_>) -> Result<(usize, usize), WireError> {
    let _extra_flags = r.u16()?;
    let to_inline_qos = r.u16()? as usize;
    Ok((r.pos(), to_inline_qos))
}

/// Moves the reader to the inline QoS (`start + to_inline_qos`), which must
/// not lie before the fields already read.
fn seek_inline_qos(r: &mut ByteReader<'_>, start: usize, to_inline_qos: usize) -> Result<(), WireError> {
    let target = start.checked_add(to_inline_qos).ok_or(WireError::Truncated)?;
    if target < r.pos() {
        return Err(WireError::BadLength);
    }
    r.skip(target - r.pos())
}

fn read_inline_qos<'a>(r: &mut ByteReader<'a>, present: bool) -> Result<Option<ParamList<'a>>, WireError> {
    if !present {
        return Ok(None);
    }
    let rest = r.rest();
    let len = ParamList::measure(rest, r.le)?;
    let pl = ParamList::new(&rest[..len], r.le);
    r.skip(len)?;
    Ok(Some(pl))
}

fn parse_data<'a>(flags: u8, r: &mut ByteReader<'a>) -> Result<Data<'a>, WireError> {
    let (start, to_qos) = data_prologue(r)?;
    let reader_id = EntityId(r.array()?);
    let writer_id = EntityId(r.array()?);
    let writer_sn = SequenceNumber::read(r)?;
    if writer_sn.0 < 1 {
        return Err(WireError::BadSequenceNumber);
    }
    seek_inline_qos(r, start, to_qos)?;
    let inline_qos = read_inline_qos(r, flags & flag::INLINE_QOS != 0)?;
    let has_payload = flags & (flag::DATA_DATA | flag::DATA_KEY) != 0;
    if flags & flag::DATA_DATA != 0 && flags & flag::DATA_KEY != 0 {
        return Err(WireError::BadFlags);
    }
    let payload = if has_payload { Some(r.rest()) } else { None };
    Ok(Data { reader_id, writer_id, writer_sn, inline_qos, payload, key_flag: flags & flag::DATA_KEY != 0 })
}

fn parse_data_frag<'a>(flags: u8, r: &mut ByteReader<'a>) -> Result<DataFrag<'a>, WireError> {
    let (start, to_qos) = data_prologue(r)?;
    let reader_id = EntityId(r.array()?);
    let writer_id = EntityId(r.array()?);
    let writer_sn = SequenceNumber::read(r)?;
    let frag_start = r.u32()?;
    let frags_in_submessage = r.u16()?;
    let frag_size = r.u16()?;
    let sample_size = r.u32()?;
    if writer_sn.0 < 1 {
        return Err(WireError::BadSequenceNumber);
    }
    // §8.3.7.3: fragmentStartingNum >= 1 and within the sample, fragmentSize
    // non-zero and not above the sample size.
    if frag_size == 0 || frag_start == 0 || frags_in_submessage == 0 || sample_size == 0 {
        return Err(WireError::BadFragment);
    }
    let total = sample_size.div_ceil(frag_size as u32);
    let last = frag_start as u64 + frags_in_submessage as u64 - 1;
    if frag_size as u32 > sample_size || last > total as u64 {
        return Err(WireError::BadFragment);
    }
    seek_inline_qos(r, start, to_qos)?;
    let inline_qos = read_inline_qos(r, flags & flag::INLINE_QOS != 0)?;
    let offset = (frag_start as u64 - 1) * frag_size as u64;
    let want = (frags_in_submessage as u64 * frag_size as u64).min(sample_size as u64 - offset) as usize;
    let rest = r.rest();
    let payload = rest.get(..want).ok_or(WireError::Truncated)?;
    Ok(DataFrag {
        reader_id,
        writer_id,
        writer_sn,
        frag_start,
        frags_in_submessage,
        frag_size,
        sample_size,
        inline_qos,
        payload,
        key_flag: flags & flag::DATAFRAG_KEY != 0,
    })
}
