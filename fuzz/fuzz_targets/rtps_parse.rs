//! Any bytes into the RTPS parser (detpath-pubsub): it must never panic;
//! every submessage it accepts must come back the same through the builder;
//! parameter lists and CDR bodies inside must decode or fail cleanly; and the
//! whole receive path of the protocol engine must take the datagram without
//! panicking.
#![no_main]

use detpath_pubsub::ddsperf::{PerfConfig, PerfNode, Role};
use detpath_pubsub::engine::{Config, NullOutbox, Participant};
use detpath_pubsub::wire::plist::ParamList;
use detpath_pubsub::wire::{CdrReader, Encapsulation, Message, MessageBuilder, Submessage};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::net::SocketAddrV4;

// A captured ddsperf pong's discovery traffic (SPDP, SEDP publications and
// subscriptions), addressed to the participant whose prefix the engine below takes.
const SPDP: &[u8] = include_bytes!("../seeds/rtps_parse/rel_00_data.rtps");
const SEDP_PUB: &[u8] = include_bytes!("../seeds/rtps_parse/rel_08_hb-acknack-data.rtps");
const SEDP_SUB: &[u8] = include_bytes!("../seeds/rtps_parse/rel_09_data-hb.rtps");
const PING_SIDE: &[u8] = include_bytes!("../seeds/rtps_parse/rel_05_hb.rtps");

/// A participant that has discovered the captured peer (so SEDP,
/// heartbeats, acknacks and data reach matched endpoints).
fn primed() -> (Participant, PerfNode) {
    let prefix = Message::parse(PING_SIDE).expect("seed parses").header.guid_prefix;
    let me: SocketAddrV4 = "127.0.0.1:7412".parse().unwrap();
    let mut cfg = Config::new(0, prefix, me);
    cfg.builtin_depth = 8;
    cfg.reorder_window = 8;
    cfg.max_sample_size = 4096;
    cfg.max_remote_participants = 8;
    cfg.max_remote_endpoints = 64;
    let mut p = Participant::new(cfg, 1);
    let mut pc = PerfConfig::new(Role::Pong);
    pc.data_depth = 8;
    pc.max_latency_samples = 8;
    let mut perf = PerfNode::new(&mut p, 1, pc).expect("endpoints");
    let mut out = NullOutbox;
    p.handle_timeout(1, &mut out);
    for d in [SPDP, SEDP_PUB, SEDP_SUB] {
        p.handle_datagram(2, PEER, d, &mut out);
        p.handle_timeout(3, &mut out);
    }
    perf.on_events(&mut p);
    (p, perf)
}

const PEER: SocketAddrV4 = SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 7410);

thread_local! {
    /// The engine persists across inputs (rebuilt every 256) so that
    /// priming does not dominate: state carried between inputs is what a
    /// long-running participant sees too, and its limits keep memory bounded.
    static ENGINE: RefCell<Option<(Participant, PerfNode, u64)>> = const { RefCell::new(None) };
}

/// The whole receive path: the input as a datagram from the discovered peer, then the timers.
fn engine(data: &[u8]) {
    ENGINE.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|e| e.2 % 256 == 0) {
            let (p, perf) = primed();
            *cell = Some((p, perf, 1));
        }
        let Some((p, perf, n)) = cell.as_mut() else { return };
        *n += 1;
        let now = 10 + *n * 1_000_000;
        let mut out = NullOutbox;
        p.handle_datagram(now, PEER, data, &mut out);
        perf.on_events(p);
        perf.poll(p, &mut out, now, now as i64);
        p.handle_timeout(now + 500_000, &mut out);
    });
}

fuzz_target!(|data: &[u8]| {
    engine(data);
    let Ok(m) = Message::parse(data) else { return };
    let mut buf = vec![0u8; data.len() + 64];
    let mut b = MessageBuilder::new(&mut buf, m.header.guid_prefix, m.header.vendor).expect("header fits");
    let mut accepted = Vec::new();
    for s in m.submessages() {
        let Ok(s) = s else { break };
        match &s {
            Submessage::Data(d) => {
                if let Some(q) = d.inline_qos {
                    for p in q.iter() {
                        let _ = p;
                    }
                }
                if let Some(p) = d.payload {
                    if let Ok((e, body)) = Encapsulation::split(p) {
                        if e.is_param_list() {
                            let _ = ParamList::new(body, e.is_le()).iter().count();
                        } else if let Ok(mut r) = CdrReader::from_payload(p) {
                            while r.u32().is_ok() {}
                        }
                    }
                }
            }
            Submessage::AckNack(a) => {
                let _ = a.state.iter().count();
            }
            Submessage::Gap(g) => {
                let _ = g.gap_list.iter().count();
            }
            Submessage::NackFrag(n) => {
                let _ = n.state.iter().count();
            }
            _ => {}
        }
        if !matches!(s, Submessage::Pad | Submessage::Unknown { .. } | Submessage::InfoSrc(_)) {
            b.reemit(&s).expect("an accepted submessage fits again");
            accepted.push(s);
        }
    }
    let n = b.finish();
    let m2 = Message::parse(&buf[..n]).expect("a rebuilt message parses");
    let again: Vec<_> = m2
        .submessages()
        .map(|s| s.expect("a rebuilt submessage parses"))
        .collect();
    assert_eq!(again.len(), accepted.len());
    for (a, b) in accepted.iter().zip(&again) {
        match (a, b) {
            (Submessage::Data(x), Submessage::Data(y)) => {
                assert_eq!(
                    (x.writer_id, x.reader_id, x.writer_sn, x.key_flag),
                    (y.writer_id, y.reader_id, y.writer_sn, y.key_flag)
                );
                let (px, py) = (x.payload.unwrap_or(&[]), y.payload.unwrap_or(&[]));
                assert_eq!(px, &py[..px.len()]);
            }
            (Submessage::DataFrag(x), Submessage::DataFrag(y)) => {
                assert_eq!(
                    (x.writer_sn, x.frag_start, x.sample_size, x.payload),
                    (y.writer_sn, y.frag_start, y.sample_size, y.payload)
                );
            }
            _ => assert_eq!(a, b),
        }
    }
});
