//! Properties of the codec over generated inputs: any bytes parse or fail
//! cleanly (no panic), and whatever the builder writes parses back to the
//! same values.

use detpath_pubsub::wire::*;
use proptest::prelude::*;

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..512), rtps in any::<bool>()) {
        if rtps && bytes.len() >= 6 {
            bytes[..4].copy_from_slice(b"RTPS");
            bytes[4] = 2;
        }
        if let Ok(m) = Message::parse(&bytes) {
            for s in m.submessages() {
                if let Ok(Submessage::Data(d)) = s {
                    if let Some(q) = d.inline_qos {
                        let _ = q.iter().count();
                    }
                }
            }
        }
    }

    #[test]
    fn built_submessages_parse_back(
        first in 1i64..1 << 40,
        span in 0i64..1000,
        count in any::<i32>(),
        bits in proptest::collection::vec(any::<bool>(), 0..256),
        payload in proptest::collection::vec(any::<u8>(), 0..600),
        ts in 0i64..1 << 62,
    ) {
        let mut buf = vec![0u8; 2048];
        let prefix = GuidPrefix([7; 12]);
        let (r, w) = (EntityId::user(3, 7), EntityId::user(4, 2));
        let mut set = BitSet256::new(bits.len() as u32);
        for (i, b) in bits.iter().enumerate() {
            if *b {
                set.set(i as u32);
            }
        }
        let mut b = MessageBuilder::new(&mut buf, prefix, VendorId::DETPATH).unwrap();
        b.info_ts(Some(Time::from_nanos(ts))).unwrap();
        b.heartbeat(r, w, SequenceNumber(first), SequenceNumber(first + span - 1), count, true, false).unwrap();
        b.acknack(r, w, SequenceNumber(first), &set, count, false).unwrap();
        b.data_bytes(r, w, SequenceNumber(first), None, &payload).unwrap();
        let n = b.finish();
        let m = Message::parse(&buf[..n]).unwrap();
        let subs: Vec<_> = m.submessages().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(subs.len(), 4);
        prop_assert_eq!(subs[0], Submessage::InfoTs(Some(Time::from_nanos(ts))));
        match subs[1] {
            Submessage::Heartbeat(h) => {
                prop_assert_eq!((h.first_sn.0, h.last_sn.0, h.count, h.final_flag), (first, first + span - 1, count, true));
            }
            _ => prop_assert!(false),
        }
        match subs[2] {
            Submessage::AckNack(a) => {
                let got: Vec<i64> = a.state.iter().map(|s| s.0 - first).collect();
                let want: Vec<i64> = bits.iter().enumerate().filter(|(_, b)| **b).map(|(i, _)| i as i64).collect();
                prop_assert_eq!(got, want);
            }
            _ => prop_assert!(false),
        }
        match subs[3] {
            Submessage::Data(d) => {
                let p = d.payload.unwrap();
                prop_assert_eq!(&p[..payload.len()], &payload[..]);
                prop_assert!(p[payload.len()..].iter().all(|&x| x == 0));
            }
            _ => prop_assert!(false),
        }
    }
}
