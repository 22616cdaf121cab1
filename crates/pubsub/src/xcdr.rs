//! How each field kind of a user's type is encoded, so that
//! `#[derive(TopicType)]` (crate `detpath-pubsub-derive`) only has to list a
//! struct's fields: [`CdrEncode`] for primitives, `String`, `Vec<T>`
//! (sequences), `[T; N]` (arrays), C-like enums (`#[derive(DdsEnum)]`) and
//! nested derived structs, in XCDR1 and XCDR2 (XTypes 1.3 §7.4.3).
//!
//! Why a derive of our own rather than serde with a CDR crate: the kept
//! crates (`cdr` 0.2, `cdr-encoding` 0.11, looked at in November 2026) are
//! plain XCDR1 serializers. Neither writes XCDR2's DHEADERs (appendable
//! structs, sequences of non-primitive elements), neither knows which fields
//! are keys, and neither can compute a DDSI-RTPS key hash (key fields alone,
//! big-endian XCDR2, padded or MD5 by the key's *maximum* size) or read one
//! out of a received payload without deserializing it, which the engine
//! does for every sample it sorts into an instance. serde's data model has
//! no place for `@key`, bounds or extensibility, so those would be
//! attributes of our own anyway; the encoder here is the engine's own
//! [`CdrWriter`]/[`CdrReader`], so there is one encoder, not two.
//!
//! ```
//! use detpath_pubsub::{DdsEnum, TopicType};
//! use detpath_pubsub::wire::{bytes::ByteWriter, cdr::write_payload_ext, CdrReader, Xcdr};
//!
//! #[derive(DdsEnum, Clone, Copy, Debug, Default, PartialEq)]
//! enum Color { #[default] Red, Green, Blue = 7 }
//!
//! #[derive(TopicType, Clone, Debug, Default, PartialEq)]
//! #[dds(type_name = "Shapes::Shape", appendable)]
//! struct Shape {
//!     #[key]
//!     id: u32,
//!     #[dds(bound = 32)]
//!     name: String,
//!     color: Color,
//!     points: Vec<[f64; 2]>,
//! }
//!
//! let s = Shape { id: 7, name: "square".into(), color: Color::Blue, points: vec![[0.0, 1.0]] };
//! let mut buf = [0u8; 256];
//! let mut w = ByteWriter::new(&mut buf, true);
//! let n = write_payload_ext(&mut w, Xcdr::V2, Shape::EXTENSIBILITY, |c| s.serialize(c)).unwrap();
//! let mut back = Shape::default();
//! back.deserialize_into(&mut CdrReader::from_payload(&buf[..n]).unwrap()).unwrap();
//! assert_eq!(back, s);
//! // The key form (appendable: a DHEADER, then `id`, big endian) is 8 bytes
//! // at most, so the key hash is the key form itself, zero-padded to 16.
//! assert_eq!(Shape::KEY_MAX_SIZE, Some(8));
//! let hash = Some([0, 0, 0, 4, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0]);
//! assert_eq!(s.key_hash(), hash);
//! assert_eq!(Shape::key_hash_of(&buf[..n]), hash);
//! ```

use crate::wire::cdr::Xcdr;
use crate::wire::{CdrReader, CdrWriter, WireError};

pub use crate::wire::cdr::Extensibility;

/// The most bytes a value's key form takes in XCDR2, by where it starts:
/// entry `r` is the count (padding included) when it starts at an offset
/// `r` mod 4 (XCDR2 aligns nothing beyond 4). `None`: no bound (an unbounded
/// string or sequence). Spans compose with [`span_then`], so a struct's key
/// size is known at compile time (RTPS §9.6.3.8 decides padding or MD5 by it).
pub type Span = [Option<usize>; 4];

/// The span of nothing (a struct without key fields contributes none).
pub const EMPTY_SPAN: Span = [Some(0); 4];
/// The span of something unbounded.
pub const UNBOUNDED_SPAN: Span = [None; 4];

/// The span of a primitive of `size` bytes (aligned to its size, at most 4).
pub const fn prim_span(size: usize) -> Span {
    let a = if size > 4 { 4 } else { size };
    let mut s = [None; 4];
    let mut r = 0;
    while r < 4 {
        let pad = if a == 0 { 0 } else { (a - r % a) % a };
        s[r] = Some(pad + size);
        r += 1;
    }
    s
}

/// The span of `a` followed by `b`.
pub const fn span_then(a: Span, b: Span) -> Span {
    let mut s = [None; 4];
    let mut r = 0;
    while r < 4 {
        s[r] = match a[r] {
            Some(x) => match b[(r + x) % 4] {
                Some(y) => Some(x + y),
                None => None,
            },
            None => None,
        };
        r += 1;
    }
    s
}

/// The span of `n` values of span `a` one after another (by doubling: a
/// bound of a million costs 20 steps, not a million).
pub const fn span_repeat(a: Span, n: usize) -> Span {
    let mut acc = EMPTY_SPAN;
    let mut pow = a;
    let mut k = n;
    while k > 0 {
        if k & 1 == 1 {
            acc = span_then(acc, pow);
        }
        pow = span_then(pow, pow);
        k >>= 1;
    }
    acc
}

/// `inner` behind a DHEADER when `yes` (an XCDR2 key form's appendable
/// struct, or a collection of non-primitive elements).
pub const fn span_dheader(yes: bool, inner: Span) -> Span {
    if yes {
        span_then(prim_span(4), inner)
    } else {
        inner
    }
}

/// The largest key size of a type whose key form has span `s` (it starts the stream).
pub const fn span_max(s: Span) -> Option<usize> {
    s[0]
}

/// A value the derive can encode as a field: one method per thing the
/// engine needs (write, read reusing buffers, skip, and the key form for
/// key hashes). Implemented for the primitives, `String`, `Vec<T>`,
/// `[T; N]`, and by the derives for structs and C-like enums.
pub trait CdrEncode {
    /// An XCDR2 primitive (bool, integers, floats): sequences and arrays of
    /// it carry no DHEADER. Enums, strings and structs are not.
    const PRIMITIVE: bool = false;
    /// A primitive or an array of them (of any dimensions): arrays of it
    /// carry no DHEADER, as an IDL multi-dimensional array of primitives
    /// has none (sequences of arrays do: an array is not a primitive).
    const FLAT: bool = Self::PRIMITIVE;
    /// Fewest bytes one value takes (sequence lengths are checked against
    /// what is left with it, so a forged length allocates nothing).
    const MIN_SIZE: usize;
    /// The value's key form's span (its key fields, or all of it), XCDR2.
    const KEY_SPAN: Span;
    /// Writes the value.
    fn encode(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError>;
    /// Reads a value into `self`, reusing what it holds (strings, vectors).
    fn decode_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError>;
    /// Resets to the empty value (a field an older writer's appendable type lacks).
    fn clear(&mut self);
    /// Reads past one value.
    fn skip(r: &mut CdrReader<'_>) -> Result<(), WireError>;
    /// Writes the key form: a struct's key fields (all fields when it has none); anything else whole.
    fn encode_key(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        self.encode(w)
    }
    /// Reads one whole value and writes its key form (a key hash out of a payload).
    fn copy_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError>;
    /// Reads one key form and writes it again (a serialized key, into big-endian XCDR2).
    fn copy_key_form(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        Self::copy_key(r, w)
    }
    /// A guess at the encoded size, padding aside (history slots are
    /// preallocated with it; a larger sample still fits, after a reallocation).
    fn size_hint(&self) -> usize {
        Self::MIN_SIZE
    }
    /// Writes a run of values (a sequence's or array's elements); octets go in one copy.
    fn encode_slice(items: &[Self], w: &mut CdrWriter<'_, '_>) -> Result<(), WireError>
    where
        Self: Sized,
    {
        items.iter().try_for_each(|x| x.encode(w))
    }
    /// Reads `n` values into `v` (its elements and capacity reused).
    fn decode_vec(v: &mut Vec<Self>, n: usize, r: &mut CdrReader<'_>) -> Result<(), WireError>
    where
        Self: Sized + Default,
    {
        v.truncate(n);
        for x in v.iter_mut() {
            x.decode_into(r)?;
        }
        while v.len() < n {
            let mut x = Self::default();
            x.decode_into(r)?;
            v.push(x);
        }
        Ok(())
    }
    /// Reads a run of values into `items`.
    fn decode_slice(items: &mut [Self], r: &mut CdrReader<'_>) -> Result<(), WireError>
    where
        Self: Sized,
    {
        items.iter_mut().try_for_each(|x| x.decode_into(r))
    }
    /// Skips `n` values.
    fn skip_n(r: &mut CdrReader<'_>, n: usize) -> Result<(), WireError> {
        (0..n).try_for_each(|_| Self::skip(r))
    }
}

/// Fields with a bound (`#[dds(bound = N)]`: bounded strings and
/// sequences). The key span of a bounded field is `HEAD`, `bound` times
/// `ELEM`, then `TAIL` ([`bounded_span`]: consts, so a type's key size is one).
pub trait Bounded {
    /// What comes before the elements (length, and a DHEADER if any).
    const HEAD: Span;
    /// One element at its largest.
    const ELEM: Span;
    /// What comes after (a string's NUL).
    const TAIL: Span;
    /// The length against the bound (string bytes, sequence elements).
    fn bounded_len(&self) -> usize;
}

/// The key span of a `T` field bounded to `bound`.
pub const fn bounded_span(head: Span, elem: Span, tail: Span, bound: usize) -> Span {
    span_then(head, span_then(span_repeat(elem, bound), tail))
}

/// Checks a bounded field's length (on write and after a read): above the
/// bound is refused ([`WireError::BoundExceeded`]), never truncated.
pub fn check_bound<T: Bounded>(v: &T, bound: usize) -> Result<(), WireError> {
    let len = v.bounded_len();
    if len > bound {
        Err(WireError::BoundExceeded { len, bound })
    } else {
        Ok(())
    }
}

fn xcdr2(v: Xcdr) -> bool {
    v == Xcdr::V2
}

/// Writes `body` behind a DHEADER when `yes` and the stream is XCDR2.
pub fn with_dheader(
    yes: bool,
    w: &mut CdrWriter<'_, '_>,
    body: impl FnOnce(&mut CdrWriter<'_, '_>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    if yes && xcdr2(w.version()) {
        let at = w.begin_dheader()?;
        body(w)?;
        w.end_dheader(at)
    } else {
        body(w)
    }
}

/// Reads a DHEADER when `yes` and the stream is XCDR2: the object's end.
pub fn read_dheader(yes: bool, r: &mut CdrReader<'_>) -> Result<Option<usize>, WireError> {
    if yes && xcdr2(r.version()) {
        r.dheader().map(Some)
    } else {
        Ok(None)
    }
}

/// Moves to the end a DHEADER gave (members appended by a newer type are skipped).
pub fn end_dheader(end: Option<usize>, r: &mut CdrReader<'_>) -> Result<(), WireError> {
    match end {
        Some(e) => r.skip_to(e),
        None => Ok(()),
    }
}

/// Whether a DHEADER-delimited object still has bytes (members past its end
/// are ones an older type does not have: the reader leaves them cleared).
pub fn more(end: Option<usize>, r: &CdrReader<'_>) -> bool {
    match end {
        Some(e) => r.pos() < e,
        None => true,
    }
}

macro_rules! primitive {
    ($t:ty, $size:expr, $w:ident, $r:ident) => {
        impl CdrEncode for $t {
            const PRIMITIVE: bool = true;
            const MIN_SIZE: usize = $size;
            const KEY_SPAN: Span = prim_span($size);
            fn encode(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
                w.$w(*self)
            }
            fn decode_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError> {
                *self = r.$r()?;
                Ok(())
            }
            fn clear(&mut self) {
                *self = <$t>::default();
            }
            fn skip(r: &mut CdrReader<'_>) -> Result<(), WireError> {
                r.skip_prims($size, 1)
            }
            fn copy_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
                w.$w(r.$r()?)
            }
            fn size_hint(&self) -> usize {
                $size
            }
            fn skip_n(r: &mut CdrReader<'_>, n: usize) -> Result<(), WireError> {
                r.skip_prims($size, n)
            }
        }
    };
}

primitive!(bool, 1, bool, bool);
primitive!(i8, 1, i8, i8);
primitive!(i16, 2, i16, i16);
primitive!(u16, 2, u16, u16);
primitive!(i32, 4, i32, i32);
primitive!(u32, 4, u32, u32);
primitive!(f32, 4, f32, f32);
primitive!(i64, 8, i64, i64);
primitive!(u64, 8, u64, u64);
primitive!(f64, 8, f64, f64);

/// `u8` is IDL `octet`; runs of octets (sequences, arrays) are one copy.
impl CdrEncode for u8 {
    const PRIMITIVE: bool = true;
    const MIN_SIZE: usize = 1;
    const KEY_SPAN: Span = prim_span(1);
    fn encode(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.u8(*self)
    }
    fn decode_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError> {
        *self = r.u8()?;
        Ok(())
    }
    fn clear(&mut self) {
        *self = 0;
    }
    fn skip(r: &mut CdrReader<'_>) -> Result<(), WireError> {
        r.skip_prims(1, 1)
    }
    fn copy_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.u8(r.u8()?)
    }
    fn size_hint(&self) -> usize {
        1
    }
    fn encode_slice(items: &[u8], w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.octets(items)
    }
    fn decode_vec(v: &mut Vec<u8>, n: usize, r: &mut CdrReader<'_>) -> Result<(), WireError> {
        let b = r.octets(n)?;
        v.clear();
        v.extend_from_slice(b);
        Ok(())
    }
    fn decode_slice(items: &mut [u8], r: &mut CdrReader<'_>) -> Result<(), WireError> {
        items.copy_from_slice(r.octets(items.len())?);
        Ok(())
    }
    fn skip_n(r: &mut CdrReader<'_>, n: usize) -> Result<(), WireError> {
        r.skip_prims(1, n)
    }
}

/// `String` is IDL `string` (UTF-8, length with the NUL; bounded with `#[dds(bound = N)]`).
impl CdrEncode for String {
    const MIN_SIZE: usize = 4;
    const KEY_SPAN: Span = UNBOUNDED_SPAN;
    fn encode(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.string(self)
    }
    fn decode_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError> {
        let s = r.string()?;
        self.clear();
        self.push_str(s);
        Ok(())
    }
    fn clear(&mut self) {
        String::clear(self);
    }
    fn skip(r: &mut CdrReader<'_>) -> Result<(), WireError> {
        r.string().map(|_| ())
    }
    fn copy_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.string(r.string()?)
    }
    fn size_hint(&self) -> usize {
        5 + self.len()
    }
}

impl Bounded for String {
    const HEAD: Span = prim_span(4);
    const ELEM: Span = prim_span(1);
    const TAIL: Span = prim_span(1);
    fn bounded_len(&self) -> usize {
        self.len()
    }
}

/// `Vec<T>` is IDL `sequence<T>` (bounded with `#[dds(bound = N)]`); in
/// XCDR2 a DHEADER comes first unless `T` is primitive.
impl<T: CdrEncode + Default> CdrEncode for Vec<T> {
    const MIN_SIZE: usize = 4;
    const KEY_SPAN: Span = UNBOUNDED_SPAN;
    fn encode(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        with_dheader(!T::PRIMITIVE, w, |w| {
            w.seq_len(self.len())?;
            T::encode_slice(self, w)
        })
    }
    fn decode_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError> {
        let end = read_dheader(!T::PRIMITIVE, r)?;
        let n = r.seq_len(T::MIN_SIZE)?;
        T::decode_vec(self, n, r)?;
        end_dheader(end, r)
    }
    fn clear(&mut self) {
        Vec::clear(self);
    }
    fn skip(r: &mut CdrReader<'_>) -> Result<(), WireError> {
        match read_dheader(!T::PRIMITIVE, r)? {
            Some(end) => r.skip_to(end),
            None => {
                let n = r.seq_len(T::MIN_SIZE)?;
                T::skip_n(r, n)
            }
        }
    }
    fn encode_key(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        with_dheader(!T::PRIMITIVE, w, |w| {
            w.seq_len(self.len())?;
            self.iter().try_for_each(|x| x.encode_key(w))
        })
    }
    fn copy_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        copy_seq(r, w, T::MIN_SIZE, !T::PRIMITIVE, T::copy_key)
    }
    fn copy_key_form(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        copy_seq(r, w, T::MIN_SIZE, !T::PRIMITIVE, T::copy_key_form)
    }
    fn size_hint(&self) -> usize {
        4 + self.iter().map(|x| x.size_hint()).sum::<usize>()
    }
}

impl<T: CdrEncode + Default> Bounded for Vec<T> {
    const HEAD: Span = span_dheader(!T::PRIMITIVE, prim_span(4));
    const ELEM: Span = T::KEY_SPAN;
    const TAIL: Span = EMPTY_SPAN;
    fn bounded_len(&self) -> usize {
        self.len()
    }
}

type CopyFn = fn(&mut CdrReader<'_>, &mut CdrWriter<'_, '_>) -> Result<(), WireError>;

fn copy_seq(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>, min: usize, dh: bool, each: CopyFn) -> Result<(), WireError> {
    let end = read_dheader(dh, r)?;
    let n = r.seq_len(min)?;
    with_dheader(dh, w, |w| {
        w.seq_len(n)?;
        (0..n).try_for_each(|_| each(r, w))
    })?;
    end_dheader(end, r)
}

fn copy_array(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>, n: usize, dh: bool, each: CopyFn) -> Result<(), WireError> {
    let end = read_dheader(dh, r)?;
    with_dheader(dh, w, |w| (0..n).try_for_each(|_| each(r, w)))?;
    end_dheader(end, r)
}

/// `[T; N]` is an IDL array (no length on the wire); in XCDR2 a DHEADER
/// comes first unless `T` is primitive (arrays of arrays of primitives
/// neither: they are a multi-dimensional array).
impl<T: CdrEncode, const N: usize> CdrEncode for [T; N] {
    const FLAT: bool = T::FLAT;
    const MIN_SIZE: usize = T::MIN_SIZE * N;
    const KEY_SPAN: Span = span_dheader(!T::FLAT, span_repeat(T::KEY_SPAN, N));
    fn encode(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        with_dheader(!T::FLAT, w, |w| T::encode_slice(self, w))
    }
    fn decode_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError> {
        let end = read_dheader(!T::FLAT, r)?;
        T::decode_slice(self, r)?;
        end_dheader(end, r)
    }
    fn clear(&mut self) {
        self.iter_mut().for_each(|x| x.clear());
    }
    fn skip(r: &mut CdrReader<'_>) -> Result<(), WireError> {
        match read_dheader(!T::FLAT, r)? {
            Some(end) => r.skip_to(end),
            None => T::skip_n(r, N),
        }
    }
    fn encode_key(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        with_dheader(!T::FLAT, w, |w| self.iter().try_for_each(|x| x.encode_key(w)))
    }
    fn copy_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        copy_array(r, w, N, !T::FLAT, T::copy_key)
    }
    fn copy_key_form(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        copy_array(r, w, N, !T::FLAT, T::copy_key_form)
    }
    fn size_hint(&self) -> usize {
        self.iter().map(|x| x.size_hint()).sum::<usize>()
    }
    fn skip_n(r: &mut CdrReader<'_>, n: usize) -> Result<(), WireError> {
        if T::FLAT {
            T::skip_n(r, N.checked_mul(n).ok_or(WireError::Truncated)?)
        } else {
            (0..n).try_for_each(|_| Self::skip(r))
        }
    }
}

/// A top-level type's check of the payload's encapsulation: in XCDR2 an
/// appendable type needs D_CDR2 (its DHEADER is there) and a final one
/// PLAIN_CDR2 (another type under the same name; reading it as ours would
/// take the DHEADER for a field).
pub fn check_top_level(appendable: bool, r: &CdrReader<'_>) -> Result<(), WireError> {
    let want = appendable && xcdr2(r.version());
    if r.delimited() == want {
        Ok(())
    } else {
        let ext = if r.delimited() { Extensibility::Appendable } else { Extensibility::Final };
        Err(WireError::UnsupportedEncapsulation(crate::wire::Encapsulation::id_for(r.version(), ext, false)))
    }
}

/// Support for `#[derive(DdsEnum)]`: an IDL enum is a 32-bit value on the
/// wire (XTypes' default bit bound); one the type does not know is refused.
pub trait EnumValue: Sized + Copy {
    /// The variant's value.
    fn to_i32(self) -> i32;
    /// The variant of a value; `None` for one the type does not have.
    fn from_i32(v: i32) -> Option<Self>;
    /// The first variant (what a cleared field holds, as IDL's default is).
    const FIRST: Self;
}

/// An enum value out of the stream; a value `E` does not declare is
/// refused ([`WireError::UnknownEnum`], naming `E`).
pub fn read_enum<E: EnumValue>(r: &mut CdrReader<'_>) -> Result<E, WireError> {
    let value = r.i32()?;
    E::from_i32(value).ok_or(WireError::UnknownEnum { value, type_name: std::any::type_name::<E>() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_follow_alignment_and_compose() {
        // u8 then u64 then u32 (XCDR2, 8-byte values aligned to 4): 1 + 3 + 8 + 4.
        let s = span_then(span_then(prim_span(1), prim_span(8)), prim_span(4));
        assert_eq!(span_max(s), Some(16));
        assert_eq!(s[1], Some(15), "starting at 1: no pad before the u64");
        assert_eq!(span_max(span_repeat(prim_span(2), 5)), Some(10));
        assert_eq!(span_max(span_repeat(prim_span(1), 1 << 20)), Some(1 << 20));
        assert_eq!(span_max(span_then(prim_span(4), UNBOUNDED_SPAN)), None);
        assert_eq!(span_max(bounded_span(String::HEAD, String::ELEM, String::TAIL, 3)), Some(8));
        assert_eq!(span_max(span_dheader(true, prim_span(2))), Some(6));
        assert_eq!(span_max(<[u32; 3]>::KEY_SPAN), Some(12));
        assert_eq!(span_max(<[String; 2]>::KEY_SPAN), None);
        assert_eq!(span_max(<[[u16; 3]; 2]>::KEY_SPAN), Some(12), "multi-dimensional: no DHEADER");
        assert_eq!(span_max(bounded_span(<Vec<[u8; 3]>>::HEAD, <Vec<[u8; 3]>>::ELEM, EMPTY_SPAN, 2)), Some(14), "a sequence of arrays has one");
    }
}
