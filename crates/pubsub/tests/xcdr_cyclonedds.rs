//! Exact bytes against an independent encoder: the `cyclonedds` Python
//! package (11.0.1, deps/pip-pubsub.txt) serializes the same values of the
//! same types (declared as its `IdlStruct` dataclasses below) and detpath's
//! `#[derive(TopicType)]` must write the same bytes in XCDR1 and XCDR2,
//! little and big endian, final and appendable; read its bytes back to the
//! same values; and agree on the key: the key fields serialized big-endian
//! XCDR2, the key hash (padded for keys of at most 16 bytes, MD5 above or
//! when unbounded), from the sample, from its payload and from a
//! serialized key alone.
//!
//! The package pads nothing after the body and leaves the options zero;
//! detpath pads to 4 and counts the padding in the options (as CycloneDDS's
//! C library does), so bodies are compared without that padding.
//! In CI (CI=true) a missing python3 or package fails with the fix.

use detpath_pubsub::types::write_sample;
use detpath_pubsub::wire::bytes::ByteWriter;
use detpath_pubsub::wire::cdr::Encapsulation;
use detpath_pubsub::wire::{CdrReader, Xcdr};
use detpath_pubsub::{DdsEnum, TopicType};
use serde_json::Value;
use std::fmt::Debug;
use std::process::Command;

const REFERENCE_PY: &str = r#"
import json, sys, hashlib
from dataclasses import dataclass
from cyclonedds.idl import IdlStruct, IdlEnum
from cyclonedds.idl.annotations import key, appendable, final
from cyclonedds.idl.types import int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64, sequence, array, bounded_str
from cyclonedds.idl._support import Endianness

class Color(IdlEnum, typename="T::Color"):
    RED = 0
    GREEN = 1
    BLUE = 7

@dataclass
@final
class Inner(IdlStruct, typename="T::Inner"):
    a: uint8
    b: float64

@dataclass
@appendable
class InnerApp(IdlStruct, typename="T::InnerApp"):
    x: int16
    s: str

@dataclass
@final
class Prims(IdlStruct, typename="T::Prims"):
    o: uint8
    ll: int64
    b: bool
    d: float64
    c: int8
    s: int16
    us: uint16
    l: int32
    ul: uint32
    ull: uint64
    f: float32

@dataclass
@final
class Coll(IdlStruct, typename="T::Coll"):
    o: uint8
    name: str
    bname: bounded_str[8]
    seq: sequence[int16]
    bseq: sequence[int32, 4]
    arr: array[uint8, 3]
    arr8: array[float64, 2]
    strs: sequence[str]
    color: Color
    colors: sequence[Color]
    nested: Inner
    nesteds: sequence[Inner]
    app_inner: InnerApp
    arr_str: array[str, 2]
    tri: sequence[array[uint8, 3]]
    grid: array[array[int16, 2], 3]
    arr_in: array[Inner, 2]

@dataclass
@appendable
class AppColl(IdlStruct, typename="T::AppColl"):
    o: uint8
    d: float64
    inner: InnerApp
    nesteds: sequence[Inner]

@dataclass
@final
class KeySmall(IdlStruct, typename="T::KeySmall"):
    id: int32
    sub: int16
    v: float64
    key("id")
    key("sub")

@dataclass
@final
class KeyBig(IdlStruct, typename="T::KeyBig"):
    a: int64
    x: str
    b: int64
    c: uint8
    key("a")
    key("b")
    key("c")

@dataclass
@appendable
class KeyStr(IdlStruct, typename="T::KeyStr"):
    site: int32
    name: str
    seq: int32
    key("site")
    key("name")

@dataclass
@appendable
class KeyApp(IdlStruct, typename="T::KeyApp"):
    id: uint32
    payload: sequence[uint8]
    key("id")

@dataclass
@final
class KeyNested(IdlStruct, typename="T::KeyNested"):
    v: int32
    pos: Inner
    key("pos")

samples = {
    "Prims": Prims(o=0xfe, ll=-2, b=True, d=1.5, c=-3, s=-4, us=0xfffe, l=-5, ul=0xfffffff0, ull=0x0102030405060708, f=0.25),
    "Coll": Coll(o=1, name="hello", bname="bounded", seq=[1, -2, 3], bseq=[7, 8], arr=[9, 10, 11], arr8=[2.0, -0.5],
                 strs=["a", "", "xyz"], color=Color.BLUE, colors=[Color.GREEN, Color.RED], nested=Inner(a=5, b=6.5),
                 nesteds=[Inner(a=1, b=2.0), Inner(a=3, b=4.0)], app_inner=InnerApp(x=-7, s="in"), arr_str=["p", "qq"],
                 tri=[[1, 2, 3], [4, 5, 6]], grid=[[1, -1], [2, -2], [3, -3]], arr_in=[Inner(a=1, b=0.5), Inner(a=2, b=0.25)]),
    "AppColl": AppColl(o=2, d=3.25, inner=InnerApp(x=12, s="deep"), nesteds=[Inner(a=9, b=-1.0)]),
    "KeySmall": KeySmall(id=0x01020304, sub=-2, v=9.75),
    "KeyBig": KeyBig(a=-1, x="not key", b=0x1122334455667788, c=0xab),
    "KeyStr": KeyStr(site=42, name="the site name", seq=17),
    "KeyApp": KeyApp(id=0xa1b2c3d4, payload=[1, 2, 3, 4, 5]),
    "KeyNested": KeyNested(v=3, pos=Inner(a=0x7f, b=2.5)),
}

out = {}
for name, x in samples.items():
    T = type(x)
    r = {}
    for v2 in (False, True):
        for end, tag in ((Endianness.Little, "le"), (Endianness.Big, "be")):
            r[("v2_" if v2 else "v1_") + tag] = T.__idl__.serialize(x, use_version_2=v2, endianness=end).hex()
    if not T.__idl__.keyless:
        kb = T.__idl__.serialize_key(x, use_version_2=True, endianness=Endianness.Big)
        maxk = T.__idl__.v2_key_max_size
        r["key_be"] = kb.hex()
        r["key_v1_le"] = T.__idl__.serialize_key(x, use_version_2=False, endianness=Endianness.Little).hex()
        r["key_v2_le"] = T.__idl__.serialize_key(x, use_version_2=True, endianness=Endianness.Little).hex()
        r["key_max"] = maxk
        r["keyhash"] = (kb + bytes(16 - len(kb))).hex() if maxk <= 16 and len(kb) <= 16 else hashlib.md5(kb).hexdigest()
    r["type_name"] = T.__idl__.idl_transformed_typename
    out[name] = r
json.dump(out, sys.stdout, indent=1)
"#;

#[derive(DdsEnum, Clone, Copy, Debug, Default, PartialEq)]
enum Color {
    #[default]
    Red,
    Green,
    Blue = 7,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "T::Inner")]
struct Inner {
    a: u8,
    b: f64,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "T::InnerApp", appendable)]
struct InnerApp {
    x: i16,
    s: String,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "T::Prims")]
struct Prims {
    o: u8,
    ll: i64,
    b: bool,
    d: f64,
    c: i8,
    s: i16,
    us: u16,
    l: i32,
    ul: u32,
    ull: u64,
    f: f32,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "T::Coll", extensibility = "final")]
struct Coll {
    o: u8,
    name: String,
    #[dds(bound = 8)]
    bname: String,
    seq: Vec<i16>,
    #[dds(bound = 4)]
    bseq: Vec<i32>,
    arr: [u8; 3],
    arr8: [f64; 2],
    strs: Vec<String>,
    color: Color,
    colors: Vec<Color>,
    nested: Inner,
    nesteds: Vec<Inner>,
    app_inner: InnerApp,
    arr_str: [String; 2],
    tri: Vec<[u8; 3]>,
    grid: [[i16; 2]; 3],
    arr_in: [Inner; 2],
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "T::AppColl", appendable)]
struct AppColl {
    o: u8,
    d: f64,
    inner: InnerApp,
    nesteds: Vec<Inner>,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "T::KeySmall")]
struct KeySmall {
    #[key]
    id: i32,
    #[key]
    sub: i16,
    v: f64,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "T::KeyBig")]
struct KeyBig {
    #[key]
    a: i64,
    x: String,
    #[key]
    b: i64,
    #[key]
    c: u8,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "T::KeyStr", appendable)]
struct KeyStr {
    #[key]
    site: i32,
    #[dds(key)]
    name: String,
    seq: i32,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "T::KeyApp", appendable)]
struct KeyApp {
    #[key]
    id: u32,
    payload: Vec<u8>,
}

#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "T::KeyNested")]
struct KeyNested {
    v: i32,
    #[key]
    pos: Inner,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The reference's output, or `None` (after the skip notice) without python3 or the package.
fn reference() -> Option<Value> {
    let test = "xcdr_cyclonedds";
    let has_pkg = Command::new("python3").args(["-c", "import cyclonedds.idl"]).output().is_ok_and(|o| o.status.success());
    let fix = "pip install --break-system-packages cyclonedds==11.0.1 (deps/pip-pubsub.txt; `make deps` installs it)";
    if !detpath_testkit::need(test, "python3 with the cyclonedds package", has_pkg, fix) {
        return None;
    }
    let out = Command::new("python3").args(["-c", REFERENCE_PY]).output().expect("run python3");
    assert!(out.status.success(), "reference encoder failed: {}", String::from_utf8_lossy(&out.stderr));
    Some(serde_json::from_slice(&out.stdout).expect("reference output is JSON"))
}

fn encode<T: TopicType>(x: &T, v: Xcdr, le: bool) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let mut w = ByteWriter::new(&mut buf, le);
    let n = write_sample(&mut w, v, x).unwrap();
    buf.truncate(n);
    buf
}

/// The body without the padding our options announce.
fn unpadded(payload: &[u8]) -> &[u8] {
    let pad = (payload[3] & 3) as usize;
    &payload[..payload.len() - pad]
}

fn check<T: TopicType + Default + PartialEq + Debug>(refs: &Value, name: &str, x: &T) {
    let r = &refs[name];
    assert_eq!(T::TYPE_NAME, r["type_name"].as_str().unwrap(), "{name}: type name");
    for (v, vt) in [(Xcdr::V1, "v1"), (Xcdr::V2, "v2")] {
        for (le, lt) in [(true, "le"), (false, "be")] {
            let what = format!("{name} {vt}_{lt}");
            let theirs = unhex(r[format!("{vt}_{lt}")].as_str().unwrap());
            let ours = encode(x, v, le);
            assert_eq!(hex(&ours[..2]), hex(&theirs[..2]), "{what}: encapsulation id");
            assert_eq!(hex(&unpadded(&ours)[4..]), hex(&theirs[4..]), "{what}: body");
            // Their bytes read back to the value.
            let mut y = T::default();
            y.deserialize_into(&mut CdrReader::from_payload(&theirs).unwrap()).unwrap();
            assert_eq!(&y, x, "{what}: read back");
            if T::KEYED {
                let kh = unhex(r["keyhash"].as_str().unwrap());
                assert_eq!(T::key_hash_of(&theirs).map(|k| hex(&k)), Some(hex(&kh)), "{what}: key hash from the payload");
            } else {
                assert_eq!(T::key_hash_of(&theirs), None);
            }
        }
    }
    if !T::KEYED {
        assert!(r.get("keyhash").is_none(), "{name}: the reference says keyed");
        assert_eq!(x.key_hash(), None);
        return;
    }
    let key_be = r["key_be"].as_str().unwrap();
    let mut kb = vec![0u8; 1024];
    let mut w = ByteWriter::new(&mut kb, false);
    x.serialize_key(&mut detpath_pubsub::wire::CdrWriter::new(&mut w, Xcdr::V2)).unwrap();
    let n = w.pos();
    assert_eq!(hex(&kb[..n]), key_be, "{name}: key fields, big-endian XCDR2");
    let kh = r["keyhash"].as_str().unwrap();
    assert_eq!(x.key_hash().map(|k| hex(&k)), Some(kh.to_string()), "{name}: key hash of the sample");
    // Padded or MD5 alike (the reference caps its figure at 17, "or bigger").
    let theirs_big = r["key_max"].as_u64().unwrap() > 16;
    let ours_big = T::KEY_MAX_SIZE.is_none_or(|m| m > 16);
    assert_eq!(ours_big, theirs_big, "{name}: key max size {:?}", T::KEY_MAX_SIZE);
    // A serialized key alone (a dispose's payload), both versions.
    for (v, field) in [(Xcdr::V1, "key_v1_le"), (Xcdr::V2, "key_v2_le")] {
        let mut p = Encapsulation::id_for(v, T::EXTENSIBILITY, true).to_be_bytes().to_vec();
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(&unhex(r[field].as_str().unwrap()));
        assert_eq!(T::key_hash_of_key(&p).map(|k| hex(&k)), Some(kh.to_string()), "{name}: key hash of a {field} key");
    }
}

#[test]
fn derived_types_match_cyclonedds_python_byte_for_byte() {
    let Some(refs) = reference() else { return };
    let inner = |a, b| Inner { a, b };
    check(&refs, "Prims", &Prims { o: 0xfe, ll: -2, b: true, d: 1.5, c: -3, s: -4, us: 0xfffe, l: -5, ul: 0xffff_fff0, ull: 0x0102_0304_0506_0708, f: 0.25 });
    check(
        &refs,
        "Coll",
        &Coll {
            o: 1,
            name: "hello".into(),
            bname: "bounded".into(),
            seq: vec![1, -2, 3],
            bseq: vec![7, 8],
            arr: [9, 10, 11],
            arr8: [2.0, -0.5],
            strs: vec!["a".into(), String::new(), "xyz".into()],
            color: Color::Blue,
            colors: vec![Color::Green, Color::Red],
            nested: inner(5, 6.5),
            nesteds: vec![inner(1, 2.0), inner(3, 4.0)],
            app_inner: InnerApp { x: -7, s: "in".into() },
            arr_str: ["p".into(), "qq".into()],
            tri: vec![[1, 2, 3], [4, 5, 6]],
            grid: [[1, -1], [2, -2], [3, -3]],
            arr_in: [inner(1, 0.5), inner(2, 0.25)],
        },
    );
    check(&refs, "AppColl", &AppColl { o: 2, d: 3.25, inner: InnerApp { x: 12, s: "deep".into() }, nesteds: vec![inner(9, -1.0)] });
    check(&refs, "KeySmall", &KeySmall { id: 0x0102_0304, sub: -2, v: 9.75 });
    check(&refs, "KeyBig", &KeyBig { a: -1, x: "not key".into(), b: 0x1122_3344_5566_7788, c: 0xab });
    check(&refs, "KeyStr", &KeyStr { site: 42, name: "the site name".into(), seq: 17 });
    check(&refs, "KeyApp", &KeyApp { id: 0xa1b2_c3d4, payload: vec![1, 2, 3, 4, 5] });
    check(&refs, "KeyNested", &KeyNested { v: 3, pos: inner(0x7f, 2.5) });
}
