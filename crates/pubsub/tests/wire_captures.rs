//! The RTPS codec against real CycloneDDS 0.10 (ddsperf) traffic captured on
//! this machine: every captured message parses, every submessage kind the
//! capture holds decodes to the values ddsperf put there, and the builder
//! reproduces what the parser accepted.

use detpath_pubsub::wire::plist::{pid, read_string};
use detpath_pubsub::wire::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn captures() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/captures");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "rtps"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    // Cyclone wakes its own receive thread with a 1-byte datagram: not RTPS.
    for (name, bytes) in v.iter().filter(|(n, _)| n.contains("not_rtps")) {
        assert!(Message::parse(bytes).is_err(), "{name}");
    }
    v.retain(|(n, _)| !n.contains("not_rtps"));
    assert!(v.len() >= 60, "captures missing in {dir:?}");
    v
}

fn kind(s: &Submessage<'_>) -> &'static str {
    match s {
        Submessage::Pad => "PAD",
        Submessage::AckNack(_) => "ACKNACK",
        Submessage::Heartbeat(_) => "HEARTBEAT",
        Submessage::Gap(_) => "GAP",
        Submessage::InfoTs(_) => "INFO_TS",
        Submessage::InfoSrc(_) => "INFO_SRC",
        Submessage::InfoDst(_) => "INFO_DST",
        Submessage::NackFrag(_) => "NACK_FRAG",
        Submessage::HeartbeatFrag(_) => "HEARTBEAT_FRAG",
        Submessage::Data(_) => "DATA",
        Submessage::DataFrag(_) => "DATA_FRAG",
        Submessage::Unknown { .. } => "UNKNOWN",
    }
}

#[test]
fn every_captured_message_parses() {
    let mut kinds = BTreeMap::new();
    for (name, bytes) in captures() {
        let m = Message::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.header.vendor, VendorId::ECLIPSE, "{name}");
        assert_eq!(m.header.version.major, 2);
        for s in m.submessages() {
            let s = s.unwrap_or_else(|e| panic!("{name}: {e}"));
            *kinds.entry(kind(&s)).or_insert(0) += 1;
        }
    }
    for k in ["ACKNACK", "HEARTBEAT", "INFO_TS", "INFO_DST", "DATA", "DATA_FRAG", "HEARTBEAT_FRAG", "NACK_FRAG"] {
        assert!(kinds.contains_key(k), "no {k} in the captures: {kinds:?}");
    }
}

#[test]
fn spdp_carries_ddsperf_user_data_and_locators() {
    let mut seen = 0;
    for (name, bytes) in captures() {
        let m = Message::parse(&bytes).unwrap();
        for s in m.submessages() {
            let Ok(Submessage::Data(d)) = s else { continue };
            if d.writer_id != EntityId::SPDP_WRITER || d.key_flag {
                continue;
            }
            let (e, body) = Encapsulation::split(d.payload.unwrap()).unwrap();
            assert!(e.is_param_list());
            let pl = ParamList::new(body, e.is_le());
            let ud = pl.find(pid::USER_DATA).unwrap();
            let n = u32::from_le_bytes(ud[..4].try_into().unwrap()) as usize;
            assert!(ud[4..4 + n].starts_with(b"DDSPerf:"), "{:?}", String::from_utf8_lossy(&ud[4..4 + n]));
            let guid = pl.find(pid::PARTICIPANT_GUID).unwrap();
            assert_eq!(&guid[..12], &m.header.guid_prefix.0);
            let loc = Locator::read_from(pl.find(pid::DEFAULT_UNICAST_LOCATOR).unwrap(), true).unwrap();
            match loc.to_addr().unwrap() {
                Addr::Udp(sa) => {
                    assert_eq!(sa.ip().octets(), [127, 0, 0, 1]);
                    assert!((7410..7430).contains(&sa.port()));
                }
                // The raweth capture (testbed interface dpb): kind 0x8000, EtherType 7400, the MAC.
                Addr::Eth(e) => {
                    assert!(name.starts_with("raweth"), "{name}");
                    assert_eq!((e.mac, e.ethertype), ([0x02, 0x64, 0x70, 0, 0, 0x0b], 7400));
                }
            }
            seen += 1;
        }
    }
    assert!(seen > 0);
}

#[test]
fn sedp_names_ddsperf_topics_and_types() {
    let mut topics = std::collections::BTreeSet::new();
    for (_, bytes) in captures() {
        let m = Message::parse(&bytes).unwrap();
        for s in m.submessages() {
            let Ok(Submessage::Data(d)) = s else { continue };
            if d.writer_id != EntityId::SEDP_PUBLICATIONS_WRITER && d.writer_id != EntityId::SEDP_SUBSCRIPTIONS_WRITER {
                continue;
            }
            let Some(p) = d.payload.filter(|_| !d.key_flag) else {
                continue;
            };
            let (e, body) = Encapsulation::split(p).unwrap();
            let pl = ParamList::new(body, e.is_le());
            let t = read_string(&mut pl.reader(pl.find(pid::TOPIC_NAME).unwrap())).unwrap();
            let ty = read_string(&mut pl.reader(pl.find(pid::TYPE_NAME).unwrap())).unwrap();
            topics.insert(format!("{t}/{ty}"));
        }
    }
    for want in ["DDSPerfRPingKS/KeyedSeq", "DDSPerfRPongKS/KeyedSeq", "DDSPerfUPingOU/OneULong"] {
        assert!(topics.contains(want), "{want} not in {topics:?}");
    }
}

#[test]
fn pings_decode_as_keyed_seq_with_the_flag_in_the_timestamp() {
    let mut pings = 0;
    for (name, bytes) in captures().into_iter().filter(|(n, _)| n.starts_with("rel_")) {
        let m = Message::parse(&bytes).unwrap();
        let mut ts = None;
        for s in m.submessages() {
            match s.unwrap() {
                Submessage::InfoTs(t) => ts = t,
                Submessage::Data(d) if !d.writer_id.is_builtin() && d.payload.is_some() && !d.key_flag => {
                    let mut r = CdrReader::from_payload(d.payload.unwrap()).unwrap();
                    let seq = r.u32().unwrap();
                    let keyval = r.u32().unwrap();
                    let n = r.seq_len(1).unwrap();
                    let baggage = r.octets(n).unwrap();
                    assert_eq!((keyval, n), (0, 20), "{name}");
                    assert!(baggage.iter().all(|&b| b == 0xee));
                    assert!(seq >= 1);
                    // ddsperf pings and the pongs answering them carry lsb 1.
                    assert_eq!(ts.unwrap().to_nanos() & 1, 1, "{name}");
                    pings += 1;
                }
                _ => {}
            }
        }
    }
    assert!(pings > 0);
}

#[test]
fn fragments_describe_a_32k_sample() {
    for (_, bytes) in captures() {
        let m = Message::parse(&bytes).unwrap();
        for s in m.submessages() {
            if let Ok(Submessage::DataFrag(f)) = s {
                assert_eq!(f.sample_size, 4 + 12 + 32768 - 12);
                assert!(f.frag_start >= 1 && f.frag_start <= f.total_fragments());
                assert_eq!(f.payload.len(), (f.frags_in_submessage as usize * f.frag_size as usize).min(f.sample_size as usize - f.offset()));
            }
        }
    }
}

#[test]
fn builder_reproduces_what_the_parser_accepts() {
    for (name, bytes) in captures() {
        let m = Message::parse(&bytes).unwrap();
        let mut buf = vec![0u8; bytes.len() + 64];
        let mut b = MessageBuilder::new(&mut buf, m.header.guid_prefix, m.header.vendor).unwrap();
        let subs: Vec<_> = m.submessages().map(|s| s.unwrap()).collect();
        for s in &subs {
            b.reemit(s).unwrap();
        }
        let n = b.finish();
        let m2 = Message::parse(&buf[..n]).unwrap();
        let subs2: Vec<_> = m2.submessages().map(|s| s.unwrap()).collect();
        let keep: Vec<_> = subs.iter().filter(|s| !matches!(s, Submessage::Pad | Submessage::Unknown { .. })).collect();
        assert_eq!(keep.len(), subs2.len(), "{name}");
        for (a, b) in keep.iter().zip(&subs2) {
            match (a, b) {
                (Submessage::Data(x), Submessage::Data(y)) => {
                    assert_eq!((x.writer_id, x.writer_sn, x.key_flag), (y.writer_id, y.writer_sn, y.key_flag), "{name}");
                    let (px, py) = (x.payload.unwrap_or(&[]), y.payload.unwrap_or(&[]));
                    assert_eq!(px, &py[..px.len()], "{name}");
                }
                _ => assert_eq!(*a, b, "{name}"),
            }
        }
    }
}
