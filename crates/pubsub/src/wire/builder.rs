//! Builds RTPS messages straight into a caller's transmit buffer: header,
//! then submessages appended one by one, all little endian. A submessage that
//! does not fit is rolled back whole, so the buffer always holds a valid message.

use super::bytes::ByteWriter;
use super::cdr::{write_payload, CdrWriter, Xcdr};
use super::message::{flag, id, HEADER_LEN};
use super::plist::ParamWriter;
use super::types::*;
use super::WireError;

/// Writes the parameters of an inline QoS (the sentinel is added after it).
pub type InlineQos<'q, 'b> = &'q dyn Fn(&mut ParamWriter<'_, 'b>) -> Result<(), WireError>;

/// An RTPS message under construction.
#[derive(Debug)]
pub struct MessageBuilder<'b> {
    w: ByteWriter<'b>,
}

/// Octets from the end of octetsToInlineQos to the inline QoS in DATA (readerId, writerId, writerSN).
const DATA_TO_INLINE_QOS: u16 = 16;
/// The same for DATA_FRAG (plus fragmentStartingNum, fragmentsInSubmessage, fragmentSize, sampleSize).
const DATAFRAG_TO_INLINE_QOS: u16 = 28;

impl<'b> MessageBuilder<'b> {
    /// Starts a message from participant `prefix`.
    pub fn new(buf: &'b mut [u8], prefix: GuidPrefix, vendor: VendorId) -> Result<MessageBuilder<'b>, WireError> {
        let mut w = ByteWriter::new(buf, true);
        w.bytes(b"RTPS")?;
        w.u8(ProtocolVersion::V2_1.major)?;
        w.u8(ProtocolVersion::V2_1.minor)?;
        w.bytes(&vendor.0)?;
        w.bytes(&prefix.0)?;
        Ok(MessageBuilder { w })
    }
    /// Continues a message of `len` bytes already in `buf` (its header written by [`new`](Self::new)).
    pub fn resume(buf: &'b mut [u8], len: usize) -> MessageBuilder<'b> {
        MessageBuilder { w: ByteWriter::at(buf, len.max(HEADER_LEN), true) }
    }
    /// Bytes so far.
    pub fn len(&self) -> usize {
        self.w.pos()
    }
    /// Only the header so far.
    pub fn is_empty(&self) -> bool {
        self.w.pos() <= HEADER_LEN
    }
    /// Room left for submessages.
    pub fn remaining(&self) -> usize {
        self.w.remaining()
    }
    /// Drops everything after the first `len` bytes (a mark taken with [`len`](Self::len)).
    pub fn truncate(&mut self, len: usize) {
        self.w.truncate(len.max(HEADER_LEN));
    }

    /// Appends one submessage whose body `f` writes; patches its length and
    /// pads it to 4. On error the message is left as it was before.
    fn submessage(&mut self, sid: u8, flags: u8, f: impl FnOnce(&mut ByteWriter<'b>) -> Result<(), WireError>) -> Result<(), WireError> {
        let mark = self.w.pos();
        let res = (|| {
            self.w.u8(sid)?;
            self.w.u8(flags | flag::ENDIANNESS)?;
            let len_at = self.w.pos();
            self.w.u16(0)?;
            let start = self.w.pos();
            f(&mut self.w)?;
            self.w.pad_to(4)?;
            let n = u16::try_from(self.w.pos() - start).map_err(|_| WireError::BufferFull)?;
            self.w.patch_u16(len_at, n)
        })();
        if res.is_err() {
            self.truncate(mark);
        }
        res
    }

    /// INFO_TS (`None`: the invalidate flag, "no timestamp").
    pub fn info_ts(&mut self, t: Option<Time>) -> Result<(), WireError> {
        match t {
            Some(t) => self.submessage(id::INFO_TS, 0, |w| t.write(w)),
            None => self.submessage(id::INFO_TS, flag::INVALIDATE, |_| Ok(())),
        }
    }
    /// INFO_DST.
    pub fn info_dst(&mut self, prefix: GuidPrefix) -> Result<(), WireError> {
        self.submessage(id::INFO_DST, 0, |w| w.bytes(&prefix.0))
    }
    /// HEARTBEAT.
    pub fn heartbeat(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        first: SequenceNumber,
        last: SequenceNumber,
        count: i32,
        final_flag: bool,
        liveliness: bool,
    ) -> Result<(), WireError> {
        let flags = if final_flag { flag::FINAL } else { 0 } | if liveliness { flag::LIVELINESS } else { 0 };
        self.submessage(id::HEARTBEAT, flags, |w| {
            w.bytes(&reader.0)?;
            w.bytes(&writer.0)?;
            first.write(w)?;
            last.write(w)?;
            w.i32(count)
        })
    }
    /// ACKNACK: everything below `base` acknowledged, `missing` bits relative to `base`.
    pub fn acknack(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        base: SequenceNumber,
        missing: &BitSet256,
        count: i32,
        final_flag: bool,
    ) -> Result<(), WireError> {
        self.submessage(id::ACKNACK, if final_flag { flag::FINAL } else { 0 }, |w| {
            w.bytes(&reader.0)?;
            w.bytes(&writer.0)?;
            base.write(w)?;
            missing.write(w)?;
            w.i32(count)
        })
    }
    /// GAP: `start` up to `list_base` irrelevant, plus the bits of `list`.
    pub fn gap(&mut self, reader: EntityId, writer: EntityId, start: SequenceNumber, list_base: SequenceNumber, list: &BitSet256) -> Result<(), WireError> {
        self.submessage(id::GAP, 0, |w| {
            w.bytes(&reader.0)?;
            w.bytes(&writer.0)?;
            start.write(w)?;
            list_base.write(w)?;
            list.write(w)
        })
    }
    /// HEARTBEAT_FRAG.
    pub fn heartbeat_frag(&mut self, reader: EntityId, writer: EntityId, sn: SequenceNumber, last_fragment: u32, count: i32) -> Result<(), WireError> {
        self.submessage(id::HEARTBEAT_FRAG, 0, |w| {
            w.bytes(&reader.0)?;
            w.bytes(&writer.0)?;
            sn.write(w)?;
            w.u32(last_fragment)?;
            w.i32(count)
        })
    }
    /// NACK_FRAG: `missing` bits relative to fragment `base`.
    pub fn nack_frag(&mut self, reader: EntityId, writer: EntityId, sn: SequenceNumber, base: u32, missing: &BitSet256, count: i32) -> Result<(), WireError> {
        self.submessage(id::NACK_FRAG, 0, |w| {
            w.bytes(&reader.0)?;
            w.bytes(&writer.0)?;
            sn.write(w)?;
            w.u32(base)?;
            missing.write(w)?;
            w.i32(count)
        })
    }
    /// DATA whose serialized payload (encapsulation header included) `payload` writes in place.
    pub fn data_with(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        inline_qos: Option<InlineQos<'_, 'b>>,
        payload: impl FnOnce(&mut ByteWriter<'b>) -> Result<(), WireError>,
    ) -> Result<(), WireError> {
        self.data_with_range(reader, writer, sn, inline_qos, payload).map(|_| ())
    }
    /// [`data_with`](Self::data_with), returning where in the buffer the payload landed.
    pub fn data_with_range(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        inline_qos: Option<InlineQos<'_, 'b>>,
        payload: impl FnOnce(&mut ByteWriter<'b>) -> Result<(), WireError>,
    ) -> Result<std::ops::Range<usize>, WireError> {
        let flags = flag::DATA_DATA | if inline_qos.is_some() { flag::INLINE_QOS } else { 0 };
        let mut range = 0..0;
        self.submessage(id::DATA, flags, |w| {
            w.u16(0)?;
            w.u16(DATA_TO_INLINE_QOS)?;
            w.bytes(&reader.0)?;
            w.bytes(&writer.0)?;
            sn.write(w)?;
            if let Some(q) = inline_qos {
                let mut pw = ParamWriter::new(w);
                q(&mut pw)?;
                pw.sentinel()?;
            }
            let start = w.pos();
            payload(w)?;
            range = start..w.pos();
            Ok(())
        })?;
        Ok(range)
    }
    /// DATA carrying a sample of plain type serialized by `body` (CDR, this version).
    pub fn data_cdr(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        version: Xcdr,
        body: impl FnOnce(&mut CdrWriter<'_, 'b>) -> Result<(), WireError>,
    ) -> Result<(), WireError> {
        self.data_with(reader, writer, sn, None, |w| write_payload(w, version, body).map(|_| ()))
    }
    /// DATA with an already-serialized payload (retransmissions, discovery data).
    pub fn data_bytes(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        inline_qos: Option<InlineQos<'_, 'b>>,
        payload: &[u8],
    ) -> Result<(), WireError> {
        self.data_with(reader, writer, sn, inline_qos, |w| w.bytes(payload))
    }
    /// DATA without payload, inline QoS only (dispose/unregister with a key hash).
    pub fn data_no_payload(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        inline_qos: &dyn Fn(&mut ParamWriter<'_, 'b>) -> Result<(), WireError>,
    ) -> Result<(), WireError> {
        self.data_key(reader, writer, sn, inline_qos, &[])
    }
    /// DATA with inline QoS and, unless `key` is empty, the serialized key
    /// (encapsulation header included) as payload with the key flag: a
    /// dispose/unregister a reader can find the instance of without
    /// inverting the key hash (impossible when it is an MD5, RTPS §9.6.3.8).
    pub fn data_key(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        inline_qos: &dyn Fn(&mut ParamWriter<'_, 'b>) -> Result<(), WireError>,
        key: &[u8],
    ) -> Result<(), WireError> {
        let flags = flag::INLINE_QOS | if key.is_empty() { 0 } else { flag::DATA_KEY };
        self.submessage(id::DATA, flags, |w| {
            w.u16(0)?;
            w.u16(DATA_TO_INLINE_QOS)?;
            w.bytes(&reader.0)?;
            w.bytes(&writer.0)?;
            sn.write(w)?;
            let mut pw = ParamWriter::new(w);
            inline_qos(&mut pw)?;
            pw.sentinel()?;
            w.bytes(key)
        })
    }
    /// DATA with raw inline QoS bytes (a whole list, sentinel included) and
    /// an optional payload that is data or, with `key_flag`, a serialized key.
    pub fn data_raw(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        inline_qos: Option<&[u8]>,
        payload: Option<&[u8]>,
        key_flag: bool,
    ) -> Result<(), WireError> {
        let flags = if inline_qos.is_some() { flag::INLINE_QOS } else { 0 }
            | match (payload.is_some(), key_flag) {
                (true, false) => flag::DATA_DATA,
                (true, true) => flag::DATA_KEY,
                _ => 0,
            };
        self.submessage(id::DATA, flags, |w| {
            w.u16(0)?;
            w.u16(DATA_TO_INLINE_QOS)?;
            w.bytes(&reader.0)?;
            w.bytes(&writer.0)?;
            sn.write(w)?;
            if let Some(q) = inline_qos {
                w.bytes(q)?;
            }
            if let Some(p) = payload {
                w.bytes(p)?;
            }
            Ok(())
        })
    }
    /// DATA_FRAG with fragments `frag_start..` of a sample of `sample_size` bytes; `bytes` are their contents.
    pub fn data_frag(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        frag_start: u32,
        frags: u16,
        frag_size: u16,
        sample_size: u32,
        bytes: &[u8],
    ) -> Result<(), WireError> {
        self.data_frag_with_qos(reader, writer, sn, (frag_start, frags, frag_size, sample_size), None, bytes)
    }
    /// DATA_FRAG with inline QoS (e.g. a keyed writer's PID_KEY_HASH on a
    /// sample's first fragment); `(frag_start, frags, frag_size,
    /// sample_size)` as in [`data_frag`](Self::data_frag).
    pub fn data_frag_with_qos(
        &mut self,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        (frag_start, frags, frag_size, sample_size): (u32, u16, u16, u32),
        inline_qos: Option<InlineQos<'_, 'b>>,
        bytes: &[u8],
    ) -> Result<(), WireError> {
        let flags = if inline_qos.is_some() { flag::INLINE_QOS } else { 0 };
        self.submessage(id::DATA_FRAG, flags, |w| {
            w.u16(0)?;
            w.u16(DATAFRAG_TO_INLINE_QOS)?;
            w.bytes(&reader.0)?;
            w.bytes(&writer.0)?;
            sn.write(w)?;
            w.u32(frag_start)?;
            w.u16(frags)?;
            w.u16(frag_size)?;
            w.u32(sample_size)?;
            if let Some(q) = inline_qos {
                let mut pw = ParamWriter::new(w);
                q(&mut pw)?;
                pw.sentinel()?;
            }
            w.bytes(bytes)
        })
    }
    /// Appends a parsed submessage again (tests and the fuzz target use this
    /// to check that what the parser accepts, the builder reproduces).
    pub fn reemit(&mut self, sub: &super::message::Submessage<'_>) -> Result<(), WireError> {
        use super::message::Submessage as S;
        match sub {
            S::Pad | S::Unknown { .. } | S::InfoSrc(_) => Ok(()),
            S::InfoTs(t) => self.info_ts(*t),
            S::InfoDst(p) => self.info_dst(*p),
            S::AckNack(a) => {
                let set = to_bitset(a.state.num_bits, |i| a.state.bit(i));
                self.acknack(a.reader_id, a.writer_id, a.state.base, &set, a.count, a.final_flag)
            }
            S::Heartbeat(h) => self.heartbeat(h.reader_id, h.writer_id, h.first_sn, h.last_sn, h.count, h.final_flag, h.liveliness_flag),
            S::Gap(g) => {
                let set = to_bitset(g.gap_list.num_bits, |i| g.gap_list.bit(i));
                self.gap(g.reader_id, g.writer_id, g.gap_start, g.gap_list.base, &set)
            }
            S::HeartbeatFrag(h) => self.heartbeat_frag(h.reader_id, h.writer_id, h.writer_sn, h.last_fragment_num, h.count),
            S::NackFrag(n) => {
                let set = to_bitset(n.state.num_bits, |i| n.state.bit(i));
                self.nack_frag(n.reader_id, n.writer_id, n.writer_sn, n.state.base, &set, n.count)
            }
            S::Data(d) => {
                // The inline QoS is re-emitted item by item: this builder
                // writes little endian, the original may have been big.
                let flags = if d.inline_qos.is_some() { flag::INLINE_QOS } else { 0 }
                    | match (d.payload.is_some(), d.key_flag) {
                        (true, false) => flag::DATA_DATA,
                        (true, true) => flag::DATA_KEY,
                        _ => 0,
                    };
                self.submessage(id::DATA, flags, |w| {
                    w.u16(0)?;
                    w.u16(DATA_TO_INLINE_QOS)?;
                    w.bytes(&d.reader_id.0)?;
                    w.bytes(&d.writer_id.0)?;
                    d.writer_sn.write(w)?;
                    if let Some(q) = d.inline_qos {
                        let mut pw = ParamWriter::new(w);
                        for p in q.iter() {
                            let p = p?;
                            pw.bytes(p.pid, p.value)?;
                        }
                        pw.sentinel()?;
                    }
                    if let Some(p) = d.payload {
                        w.bytes(p)?;
                    }
                    Ok(())
                })
            }
            S::DataFrag(f) => self.data_frag(f.reader_id, f.writer_id, f.writer_sn, f.frag_start, f.frags_in_submessage, f.frag_size, f.sample_size, f.payload),
        }
    }
    /// The finished message length.
    pub fn finish(self) -> usize {
        self.w.pos()
    }
}

fn to_bitset(num_bits: u32, bit: impl Fn(u32) -> bool) -> BitSet256 {
    let mut s = BitSet256::new(num_bits);
    for i in 0..s.num_bits {
        if bit(i) {
            s.set(i);
        }
    }
    s
}
