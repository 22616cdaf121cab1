//! `#[derive(TopicType)]` on its own: every field kind round-trips in
//! XCDR1 and XCDR2 written in either byte order; an appendable type reads a
//! newer writer's sample (appended members skipped) and an older one's
//! (missing members cleared); bounds, unknown enum values, the wrong
//! encapsulation and cut payloads are errors, never panics; reading reuses
//! the sample's buffers; key hashes from the sample, its payload (any
//! version and byte order) and its serialized key agree.
//! Exact bytes against CycloneDDS's encoder: tests/xcdr_cyclonedds.rs.

use detpath_pubsub::types::{key_hash_with, write_sample};
use detpath_pubsub::wire::bytes::ByteWriter;
use detpath_pubsub::wire::cdr::{write_payload_ext, Encapsulation, Extensibility};
use detpath_pubsub::wire::{CdrReader, CdrWriter, WireError, Xcdr};
use detpath_pubsub::{DdsEnum, TopicType};
use std::fmt::Debug;

#[derive(DdsEnum, Clone, Copy, Debug, Default, PartialEq)]
enum Mode {
    #[default]
    Off,
    On = 5,
    Auto,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
struct Point {
    x: f64,
    y: f64,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(appendable)]
struct Tag {
    #[key]
    code: u16,
    label: String,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "test::Everything")]
struct Everything {
    b: bool,
    o: u8,
    c: i8,
    s: i16,
    us: u16,
    l: i32,
    ul: u32,
    ll: i64,
    ull: u64,
    f: f32,
    d: f64,
    mode: Mode,
    text: String,
    #[dds(bound = 16)]
    short: String,
    octets: Vec<u8>,
    #[dds(bound = 3)]
    few: Vec<u64>,
    words: Vec<String>,
    modes: Vec<Mode>,
    grid: [[i16; 2]; 3],
    names: [String; 2],
    at: Point,
    path: Vec<Point>,
    tags: Vec<Tag>,
    tag: Tag,
    nested: Vec<Vec<u32>>,
}

fn everything() -> Everything {
    Everything {
        b: true,
        o: 200,
        c: -100,
        s: -30000,
        us: 60000,
        l: -2_000_000_000,
        ul: 4_000_000_000,
        ll: i64::MIN + 1,
        ull: u64::MAX - 1,
        f: -1.25,
        d: std::f64::consts::PI,
        mode: Mode::Auto,
        text: "grüße".into(),
        short: "sixteen bytes!!!".into(),
        octets: (0..=255).collect(),
        few: vec![1, 2, 3],
        words: vec!["one".into(), String::new(), "three".into()],
        modes: vec![Mode::On, Mode::Off],
        grid: [[1, -1], [2, -2], [3, -3]],
        names: ["a".into(), "bc".into()],
        at: Point { x: 1.0, y: -1.0 },
        path: vec![Point { x: 0.5, y: 0.25 }; 3],
        tags: vec![Tag { code: 1, label: "first".into() }, Tag { code: 2, label: String::new() }],
        tag: Tag { code: 9, label: "nine".into() },
        nested: vec![vec![], vec![1, 2], vec![3]],
    }
}

fn payload<T: TopicType>(x: &T, v: Xcdr, le: bool) -> Vec<u8> {
    let mut buf = vec![0u8; 8192];
    let mut w = ByteWriter::new(&mut buf, le);
    let n = write_sample(&mut w, v, x).unwrap();
    buf.truncate(n);
    buf
}

fn read<T: TopicType + Default>(p: &[u8]) -> Result<T, WireError> {
    let mut y = T::default();
    y.deserialize_into(&mut CdrReader::from_payload(p)?)?;
    Ok(y)
}

const MODES: [(Xcdr, bool); 4] = [(Xcdr::V1, true), (Xcdr::V1, false), (Xcdr::V2, true), (Xcdr::V2, false)];

fn round_trips<T: TopicType + Default + PartialEq + Debug>(x: &T) {
    for (v, le) in MODES {
        let p = payload(x, v, le);
        assert_eq!(p.len() % 4, 0, "padded to 4");
        assert_eq!(&read::<T>(&p).unwrap(), x, "{v:?} le={le}");
    }
}

#[test]
fn every_field_kind_round_trips_in_both_versions_and_byte_orders() {
    round_trips(&everything());
    round_trips(&Everything::default());
    round_trips(&Tag { code: 7, label: "x".into() });
    round_trips(&Point { x: -0.0, y: f64::MAX });
}

#[test]
fn type_names_and_keys_come_from_the_declaration() {
    assert_eq!(Everything::TYPE_NAME, "test::Everything");
    assert_eq!(Point::TYPE_NAME, "Point");
    const { assert!(!Everything::KEYED && Tag::KEYED) };
    assert_eq!(Everything::EXTENSIBILITY, Extensibility::Final);
    assert_eq!(Tag::EXTENSIBILITY, Extensibility::Appendable);
    // Appendable: a DHEADER then the u16 key, in the key form too.
    assert_eq!(Tag::KEY_MAX_SIZE, Some(6));
    assert_eq!(Everything::default().key_hash(), None);
}

#[test]
fn xcdr2_appendable_payloads_say_d_cdr2_and_carry_a_dheader() {
    let t = Tag { code: 0x0102, label: "ab".into() };
    let p = payload(&t, Xcdr::V2, false);
    // D_CDR2_BE, 1 pad byte; DHEADER 11 = u16 + 2 pad + string (4 + 3).
    assert_eq!(p, [0, 8, 0, 1, 0, 0, 0, 11, 1, 2, 0, 0, 0, 0, 0, 3, b'a', b'b', 0, 0]);
    // XCDR1 has no DHEADER and no appendable id of its own.
    assert_eq!(payload(&t, Xcdr::V1, false), [0, 0, 0, 1, 1, 2, 0, 0, 0, 0, 0, 3, b'a', b'b', 0, 0]);
}

/// `Tag` as a later version of the type declares it: one member appended.
#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "Tag", appendable)]
struct TagV2 {
    #[key]
    code: u16,
    label: String,
    weight: f64,
}

#[test]
fn appendable_types_read_newer_and_older_writers() {
    let newer = TagV2 { code: 3, label: "three".into(), weight: 0.5 };
    for le in [true, false] {
        // Newer writer, older reader: the appended member is skipped.
        let p = payload(&newer, Xcdr::V2, le);
        assert_eq!(read::<Tag>(&p).unwrap(), Tag { code: 3, label: "three".into() });
        assert_eq!(Tag::key_hash_of(&p), TagV2::key_hash_of(&p));
        // Older writer, newer reader: the missing member is cleared, even in a reused sample.
        let p = payload(&Tag { code: 4, label: "four".into() }, Xcdr::V2, le);
        let mut y = newer.clone();
        y.deserialize_into(&mut CdrReader::from_payload(&p).unwrap()).unwrap();
        assert_eq!(y, TagV2 { code: 4, label: "four".into(), weight: 0.0 });
    }
}

#[test]
fn bounds_unknown_enums_and_wrong_encapsulations_are_refused() {
    let mut buf = vec![0u8; 4096];
    let long = Everything { short: "seventeen bytes!!".into(), ..Default::default() };
    let mut w = ByteWriter::new(&mut buf, true);
    let over = write_sample(&mut w, Xcdr::V2, &long);
    assert_eq!(over, Err(WireError::BoundExceeded { len: 17, bound: 16 }), "string over its bound");
    assert_eq!(over.unwrap_err().to_string(), "a bounded string or sequence of length 17 exceeds its bound 16");
    let many = Everything { few: vec![0; 4], ..Default::default() };
    let mut w = ByteWriter::new(&mut buf, true);
    assert_eq!(write_sample(&mut w, Xcdr::V1, &many), Err(WireError::BoundExceeded { len: 4, bound: 3 }), "sequence over its bound");

    // A reader's bound holds against a writer without one (same layout, no bound).
    #[derive(TopicType, Default)]
    #[dds(type_name = "Bounded")]
    struct Unbounded {
        s: String,
    }
    #[derive(TopicType, Default, Debug)]
    #[dds(type_name = "Bounded")]
    struct Bounded {
        #[dds(bound = 2)]
        s: String,
    }
    let p = payload(&Unbounded { s: "abc".into() }, Xcdr::V1, true);
    assert_eq!(read::<Bounded>(&p).unwrap_err(), WireError::BoundExceeded { len: 3, bound: 2 });

    // Values follow the declaration (Auto after On = 5 is 6); 4 is not a Mode.
    #[derive(TopicType, Default)]
    #[dds(type_name = "M")]
    struct Raw {
        v: i32,
    }
    #[derive(TopicType, Default, Debug)]
    #[dds(type_name = "M")]
    struct WithMode {
        v: Mode,
    }
    assert_eq!(read::<WithMode>(&payload(&Raw { v: 5 }, Xcdr::V2, true)).unwrap().v, Mode::On);
    assert_eq!(read::<WithMode>(&payload(&Raw { v: 6 }, Xcdr::V2, true)).unwrap().v, Mode::Auto);
    let unknown = read::<WithMode>(&payload(&Raw { v: 4 }, Xcdr::V2, true)).unwrap_err();
    assert!(matches!(unknown, WireError::UnknownEnum { value: 4, type_name } if type_name.ends_with("Mode")), "{unknown:?}");
    assert!(unknown.to_string().starts_with("enum value 4 is not a value of ") && unknown.to_string().ends_with("Mode"), "{unknown}");

    // A final type given D_CDR2, an appendable one given PLAIN_CDR2.
    let tag = payload(&Tag { code: 1, label: "x".into() }, Xcdr::V2, true);
    assert!(matches!(read::<Point>(&tag), Err(WireError::UnsupportedEncapsulation(_))));
    let mut w = ByteWriter::new(&mut buf, true);
    let n = write_payload_ext(&mut w, Xcdr::V2, Extensibility::Final, |c| Tag { code: 1, label: "x".into() }.serialize(c)).unwrap();
    assert!(matches!(read::<Tag>(&buf[..n]), Err(WireError::UnsupportedEncapsulation(_))));
    assert_eq!(Tag::key_hash_of(&buf[..n]), None);
}

#[test]
fn cut_and_forged_payloads_are_errors_not_panics() {
    let x = everything();
    for (v, le) in MODES {
        let p = payload(&x, v, le);
        for cut in 0..p.len() - 4 {
            // Cut anywhere (header kept): an error, never a panic or a wrong success.
            let r = read::<Everything>(&p[..4 + cut]);
            assert!(r.is_err() || r.as_ref().unwrap() == &x, "cut at {cut}");
        }
        // A sequence length of 2^32-1 is refused before anything is allocated.
        let mut f = p.clone();
        let at = f.len() - 8;
        f[at..at + 4].copy_from_slice(&[0xff; 4]);
        let _ = read::<Everything>(&f);
    }
    // A DHEADER larger than the payload.
    let mut p = payload(&Tag { code: 1, label: "x".into() }, Xcdr::V2, true);
    p[4..8].copy_from_slice(&1000u32.to_le_bytes());
    assert_eq!(read::<Tag>(&p).unwrap_err(), WireError::Truncated);
}

#[test]
fn reading_reuses_the_samples_buffers() {
    let x = everything();
    let p = payload(&x, Xcdr::V2, true);
    let mut y = everything();
    let (text, octets, path) = (y.text.as_ptr(), y.octets.as_ptr(), y.path.as_ptr());
    y.deserialize_into(&mut CdrReader::from_payload(&p).unwrap()).unwrap();
    assert_eq!(y, x);
    assert_eq!((y.text.as_ptr(), y.octets.as_ptr(), y.path.as_ptr()), (text, octets, path), "same allocations");
}

/// Keys of every kind: a nested struct (all of it: it has no key fields of
/// its own), an array, a bounded string; 4 + 16 + 2 + 4 + 5 bytes and more: MD5.
#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "K")]
struct ManyKeys {
    note: String,
    #[key]
    id: u32,
    #[key]
    at: Point,
    #[key]
    ids: [u16; 2],
    #[key]
    #[dds(bound = 4)]
    name: String,
    tail: Vec<u8>,
}

/// A 16-byte key: padded, not hashed.
#[derive(TopicType, Clone, Debug, Default, PartialEq)]
struct Key16 {
    #[key]
    a: u8,
    #[key]
    b: u64,
    #[key]
    c: u32,
    rest: String,
}

#[test]
fn key_hashes_agree_from_sample_payload_and_key() {
    assert_eq!(ManyKeys::KEY_MAX_SIZE, Some(4 + 16 + 4 + 4 + 5));
    assert_eq!(Key16::KEY_MAX_SIZE, Some(16));
    let m = ManyKeys { note: "n".into(), id: 1, at: Point { x: 2.0, y: 3.0 }, ids: [4, 5], name: "six".into(), tail: vec![7; 100] };
    let k = Key16 { a: 1, b: 2, c: 3, rest: "r".into() };
    assert_eq!(k.key_hash(), Some([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3]), "1 + 3 pad + 8 + 4, big endian");
    let mh = m.key_hash().unwrap();
    let expect = key_hash_with(None, |w| {
        w.u32(1)?;
        w.f64(2.0)?;
        w.f64(3.0)?;
        w.u16(4)?;
        w.u16(5)?;
        w.string("six")
    });
    assert_eq!(Some(mh), expect, "MD5 of the key fields in order");
    for (v, le) in MODES {
        assert_eq!(ManyKeys::key_hash_of(&payload(&m, v, le)), Some(mh), "{v:?} le={le}");
        assert_eq!(Key16::key_hash_of(&payload(&k, v, le)), k.key_hash(), "{v:?} le={le}");
        // The key alone, as a dispose carries it.
        let mut buf = vec![0u8; 256];
        let mut w = ByteWriter::new(&mut buf, le);
        let n = write_payload_ext(&mut w, v, Extensibility::Final, |c| m.serialize_key(c)).unwrap();
        assert_eq!(ManyKeys::key_hash_of_key(&buf[..n]), Some(mh));
    }
    // Different keys, different hashes; a non-key field changes nothing.
    let m2 = ManyKeys { name: "sevn".into(), ..m.clone() };
    assert_ne!(m2.key_hash(), Some(mh));
    assert_eq!(ManyKeys { note: "other".into(), tail: vec![], ..m.clone() }.key_hash(), Some(mh));
    // Over the bound on write: no key either.
    let mut kb = [0u8; 64];
    let mut bw = ByteWriter::new(&mut kb, false);
    assert!(ManyKeys { name: "toolong".into(), ..m }.serialize(&mut CdrWriter::new(&mut bw, Xcdr::V2)).is_err());
    let _ = Encapsulation::LEN;
}
