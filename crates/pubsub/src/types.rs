//! Plain (final) data types as the engine sees them: a type name, whether it
//! is keyed, and CDR (de)serialization that writes straight into the
//! transmit buffer and reads into a caller's sample (reusing its buffers, so
//! a steady stream of samples allocates nothing). Includes the ddsperf types
//! (`ddsperf_types.idl` of CycloneDDS), so detpath and ddsperf can be each
//! other's partner.

use crate::wire::bytes::ByteWriter;
use crate::wire::cdr::{write_payload_ext, Extensibility, Xcdr};
use crate::wire::{CdrReader, CdrWriter, WireError};

/// A data type that can be published and subscribed.
pub trait TopicType {
    /// The type name announced in discovery (matching is by topic and type name).
    const TYPE_NAME: &'static str;
    /// Has key fields (decides the entity kinds announced).
    const KEYED: bool;
    /// Final (the default) or appendable: an appendable type's XCDR2 payload
    /// is D_CDR2 and starts with a DHEADER ([`write_sample`] picks the header).
    const EXTENSIBILITY: Extensibility = Extensibility::Final;
    /// Serializes the sample (CDR body, after the encapsulation header).
    fn serialize(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError>;
    /// Deserializes into `self`, reusing what `self` already holds.
    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError>;
    /// A size to preallocate history slots with (bytes of serialized payload, header included).
    fn size_hint(&self) -> usize {
        64
    }
    /// The instance this sample belongs to, as its key hash (RTPS §9.6.3.8);
    /// `None` for types without a key (they have one instance).
    /// By default, with [`TopicType::serialize_key`] and [`TopicType::KEY_MAX_SIZE`]: [`key_hash_with`].
    fn key_hash(&self) -> Option<[u8; 16]> {
        if Self::KEYED && Self::KEY_MAX_SIZE != Some(0) {
            key_hash_with(Self::KEY_MAX_SIZE, |w| self.serialize_key(w))
        } else {
            None
        }
    }
    /// The key hash of a serialized sample (encapsulation header included),
    /// read without deserializing it (readers sort samples into instances
    /// with it before anyone takes them). `None`: no key, or too short.
    fn key_hash_of(_payload: &[u8]) -> Option<[u8; 16]> {
        None
    }
    /// The key hash of a serialized key (a DATA with the key flag: the key
    /// fields alone, as CycloneDDS sends dispose and unregister).
    fn key_hash_of_key(_payload: &[u8]) -> Option<[u8; 16]> {
        None
    }
    /// The largest serialized key in bytes (XCDR2, the key fields alone),
    /// `None` when unbounded (a string or sequence key). Above 16 bytes the
    /// key hash is the key's MD5 (RTPS §9.6.3.8), whatever one key's size.
    /// `Some(0)` (the default): the type does not describe its key, and
    /// [`TopicType::serialize_key`] is not used.
    const KEY_MAX_SIZE: Option<usize> = Some(0);
    /// Writes the key fields alone, in declaration order: the key hash's input
    /// and the payload of a dispose or unregister (a DATA with the key flag,
    /// what CycloneDDS needs to find an instance whose key hash is an MD5).
    fn serialize_key(&self, _w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        Ok(())
    }
}

/// Writes `sample` as a serialized payload (encapsulation header with the
/// id its version and extensibility call for, body, padding); the bytes
/// written. What a writer of any [`TopicType`] sends.
pub fn write_sample<T: TopicType>(w: &mut ByteWriter<'_>, version: Xcdr, sample: &T) -> Result<usize, WireError> {
    write_payload_ext(w, version, T::EXTENSIBILITY, |c| sample.serialize(c))
}

/// Bytes a key may serialize to for [`key_hash_with`] (a stack buffer: no allocation).
pub const MAX_KEY_SIZE: usize = 512;

/// The key hash of the key `key` writes (its fields, as
/// [`TopicType::serialize_key`] does), for a type whose key serializes to at
/// most `max_size` bytes (`None`: unbounded): the big-endian XCDR2 bytes
/// zero-padded to 16 when `max_size` is at most 16, else their MD5 (RTPS
/// §9.6.3.8). `None` when the key does not serialize, exceeds [`MAX_KEY_SIZE`],
/// or exceeds 16 bytes when `max_size` said at most 16.
pub fn key_hash_with(max_size: Option<usize>, key: impl FnOnce(&mut CdrWriter<'_, '_>) -> Result<(), WireError>) -> Option<[u8; 16]> {
    if let Some(1..=16) = max_size {
        // A short key is its own hash: written straight into it, zero-padded
        // (no 512-byte buffer to clear on every sample of a ddsperf-like
        // type). A key longer than 16 bytes here broke its type's declared
        // maximum: no hash, as for any key that does not serialize.
        let mut k = [0u8; 16];
        let mut bw = ByteWriter::new(&mut k, false);
        key(&mut CdrWriter::new(&mut bw, Xcdr::V2)).ok()?;
        return Some(k);
    }
    let mut buf = [0u8; MAX_KEY_SIZE];
    let mut bw = ByteWriter::new(&mut buf, false);
    key(&mut CdrWriter::new(&mut bw, Xcdr::V2)).ok()?;
    let n = bw.pos();
    Some(key_hash_of_be(&buf[..n], max_size))
}

/// The key hash of a key already serialized big-endian (XCDR2): RTPS §9.6.3.8.
pub fn key_hash_of_be(be_key: &[u8], max_size: Option<usize>) -> [u8; 16] {
    let mut k = [0u8; 16];
    match max_size {
        Some(m) if m <= 16 && be_key.len() <= 16 => k[..be_key.len()].copy_from_slice(be_key),
        _ => {
            use md5::Digest;
            k.copy_from_slice(&md5::Md5::digest(be_key));
        }
    }
    k
}

/// The key hash of a serialized sample or key (`payload`, encapsulation
/// header included, either byte order): `copy` reads the sample's fields
/// from the reader and writes the key fields to the writer (big-endian
/// XCDR2), which is then hashed as [`key_hash_with`] does.
pub fn key_hash_from_payload(
    payload: &[u8],
    max_size: Option<usize>,
    copy: impl FnOnce(&mut CdrReader<'_>, &mut CdrWriter<'_, '_>) -> Result<(), WireError>,
) -> Option<[u8; 16]> {
    let mut r = CdrReader::from_payload(payload).ok()?;
    key_hash_with(max_size, |w| copy(&mut r, w))
}

/// `T`'s key hash of a serialized sample, or with `key_only` of a
/// serialized key: what the engine's readers and writers sort samples into
/// instances with (`engine::KeyOf`).
pub fn key_hash_from<T: TopicType>(payload: &[u8], key_only: bool) -> Option<[u8; 16]> {
    if key_only {
        T::key_hash_of_key(payload)
    } else {
        T::key_hash_of(payload)
    }
}

/// The key hash of a key that is one `unsigned long`: its big-endian CDR
/// serialization, zero-padded to 16 bytes (keys serializing to at most 16
/// bytes are not hashed, RTPS §9.6.3.8).
pub fn key_hash_u32(key: u32) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&key.to_be_bytes());
    k
}

/// The key hash of a serialized sample whose key is the `unsigned long` at
/// CDR body offset `at`, in the payload's byte order (from its encapsulation
/// header: odd identifiers are little-endian).
pub fn key_hash_u32_at(payload: &[u8], at: usize) -> Option<[u8; 16]> {
    let b = payload.get(4 + at..4 + at + 4)?;
    let little = payload.get(1)? & 1 == 1;
    let v = if little { u32::from_le_bytes([b[0], b[1], b[2], b[3]]) } else { u32::from_be_bytes([b[0], b[1], b[2], b[3]]) };
    Some(key_hash_u32(v))
}

/// ddsperf's `OneULong` (topic suffix `OU`): `unsigned long seq`.
#[derive(Clone, Debug, Default, PartialEq, Eq, crate::TopicType)]
pub struct OneULong {
    /// The publisher's sample counter (ddsperf counts losses by its gaps).
    pub seq: u32,
}

/// ddsperf's `KeyedSeq` (topic suffix `KS`, its default): `seq`, `@key keyval`,
/// `sequence<octet> baggage`. ddsperf's "size S" is 12 + the baggage length.
#[derive(Clone, Debug, Default, PartialEq, Eq, crate::TopicType)]
pub struct KeyedSeq {
    /// The publisher's sample counter (ddsperf counts losses by its gaps).
    pub seq: u32,
    /// The key (`@key`): ddsperf's instance number.
    #[key]
    pub keyval: u32,
    /// Padding octets that make up the sample size.
    pub baggage: Vec<u8>,
}

impl KeyedSeq {
    /// A sample of ddsperf "size" `size` (at least 12), baggage filled with 0xee as ddsperf does.
    pub fn with_size(size: usize) -> KeyedSeq {
        KeyedSeq { seq: 0, keyval: 0, baggage: vec![0xee; size.saturating_sub(12)] }
    }
}

// ddsperf's fixed-size types. The unkeyed ones keep a `keyval` field (so
// ddsperf code handles every type alike) that is not on the wire: `skip`.
macro_rules! fixed_type {
    ($(#[$doc:meta])* $name:ident, $tyname:literal, [$($keyattr:tt)*], $n:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, crate::TopicType)]
        #[dds(type_name = $tyname)]
        pub struct $name {
            /// The publisher's sample counter (ddsperf counts losses by its gaps).
            pub seq: u32,
            /// The key (`@key`); not serialized by the unkeyed types.
            #[$($keyattr)*]
            pub keyval: u32,
            /// Padding octets that make up the sample size (0xee by default, as ddsperf fills them).
            pub baggage: [u8; $n],
        }
        impl Default for $name {
            fn default() -> $name {
                $name { seq: 0, keyval: 0, baggage: [0xee; $n] }
            }
        }
    };
}

fixed_type!(
    /// ddsperf's `Keyed32` (`K32`): seq, key, 24 octets.
    Keyed32, "Keyed32", [key], 24
);
fixed_type!(
    /// ddsperf's `Keyed256` (`K256`): seq, key, 248 octets.
    Keyed256, "Keyed256", [key], 248
);
fixed_type!(
    /// ddsperf's `Unkeyed16` (`UK16`): seq, 12 octets.
    Unkeyed16, "Unkeyed16", [dds(skip)], 12
);
fixed_type!(
    /// Paper 001's Table I sample (detpath's, not one of ddsperf's types):
    /// 32 bytes unkeyed, seq and 28 octets.
    Unkeyed32, "Unkeyed32", [dds(skip)], 28
);
fixed_type!(
    /// ddsperf's `Unkeyed1024` (`UK1024`): seq, 1020 octets.
    Unkeyed1024, "Unkeyed1024", [dds(skip)], 1020
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::bytes::ByteWriter;
    use crate::wire::cdr::{write_payload, Xcdr};

    fn round_trip<T: TopicType + Default + PartialEq + std::fmt::Debug>(x: &T, v: Xcdr) {
        let mut buf = vec![0u8; 4096];
        let mut w = ByteWriter::new(&mut buf, v == Xcdr::V1);
        let n = write_payload(&mut w, v, |c| x.serialize(c)).unwrap();
        let mut y = T::default();
        y.deserialize_into(&mut CdrReader::from_payload(&buf[..n]).unwrap()).unwrap();
        assert_eq!(&y, x);
    }

    #[test]
    fn ddsperf_types_round_trip_in_both_versions_and_orders() {
        for v in [Xcdr::V1, Xcdr::V2] {
            round_trip(&KeyedSeq { seq: 7, keyval: 3, baggage: vec![1, 2, 3] }, v);
            round_trip(&OneULong { seq: 9 }, v);
            round_trip(&Keyed256 { seq: 1, keyval: 2, baggage: [5; 248] }, v);
            round_trip(&Unkeyed1024 { seq: 1, keyval: 0, baggage: [6; 1020] }, v);
        }
    }

    #[test]
    fn key_hash_from_the_payload_matches_the_sample_in_both_byte_orders() {
        let k = KeyedSeq { seq: 1, keyval: 0x0102_0304, baggage: vec![9; 5] };
        assert_eq!(k.key_hash().unwrap(), [1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        for little in [true, false] {
            let mut buf = [0u8; 64];
            let mut w = ByteWriter::new(&mut buf, little);
            let n = write_payload(&mut w, Xcdr::V1, |c| k.serialize(c)).unwrap();
            assert_eq!(KeyedSeq::key_hash_of(&buf[..n]), k.key_hash());
        }
        assert_eq!(KeyedSeq::key_hash_of(&[0, 1, 0, 0, 1, 2]), None, "too short");
        // A serialized key (CDR_LE header, then keyval alone), as CycloneDDS sends with dispose.
        assert_eq!(key_hash_from::<KeyedSeq>(&[0, 1, 0, 0, 4, 3, 2, 1], true), k.key_hash());
        assert_eq!(Keyed32 { keyval: 7, ..Default::default() }.key_hash(), Some(key_hash_u32(7)));
        assert_eq!(Unkeyed16::default().key_hash(), None);
        assert_eq!(OneULong::key_hash_of(&[0; 16]), None);
    }

    const MD5_OF_AB: [u8; 16] = [0x18, 0x65, 0x94, 0xb7, 0x20, 0x5d, 0x08, 0xac, 0x2f, 0xf8, 0xe1, 0xac, 0x47, 0xfb, 0x4b, 0x2a];

    #[test]
    fn keys_over_16_bytes_hash_with_md5_and_shorter_ones_pad() {
        // Four longs: 16 bytes at most, the key itself.
        let four = key_hash_with(Some(16), |w| (1..=4).try_for_each(|v| w.u32(v))).unwrap();
        assert_eq!(four, [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4]);
        // A string key (unbounded): MD5 of its big-endian CDR, even when short.
        // "ab": length 3 (with the NUL), 'a', 'b', NUL. md5(00 00 00 03 61 62 00), as `printf '\0\0\0\3ab\0' | md5sum` says.
        let s = key_hash_with(None, |w| w.string("ab")).unwrap();
        assert_eq!(key_hash_of_be(&[0, 0, 0, 3, b'a', b'b', 0], None), s);
        assert_eq!(s, MD5_OF_AB);
        // Five longs (20 bytes): MD5 too.
        let five = key_hash_with(Some(20), |w| (1..=5).try_for_each(|v| w.u32(v))).unwrap();
        assert_ne!(five[..], [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4][..]);
        // From a little-endian payload, the same hash.
        let mut buf = [0u8; 64];
        let mut bw = ByteWriter::new(&mut buf, true);
        let n = write_payload(&mut bw, Xcdr::V1, |c| {
            c.u32(7)?;
            c.string("ab")
        })
        .unwrap();
        let h = key_hash_from_payload(&buf[..n], None, |r, w| {
            r.u32()?;
            w.string(r.string()?)
        });
        assert_eq!(h, Some(MD5_OF_AB));
        assert_eq!(key_hash_with(None, |w| w.octets(&[0; MAX_KEY_SIZE + 1])), None, "larger than the stack buffer");
    }

    #[test]
    fn keyed_seq_size_matches_ddsperf() {
        let k = KeyedSeq::with_size(32);
        assert_eq!(k.baggage.len(), 20);
        let mut buf = [0u8; 64];
        let mut w = ByteWriter::new(&mut buf, true);
        let n = write_payload(&mut w, Xcdr::V1, |c| k.serialize(c)).unwrap();
        assert_eq!(n, 4 + 32, "ddsperf's size 32 is 32 bytes of CDR");
    }
}
