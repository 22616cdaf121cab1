//! The latency budget over a real datapath in the testbed: the writer's
//! endpoint carries the `fault` layer, which holds chosen datagrams (by
//! send index) past the budget; the reader in the other namespace counts
//! exactly those samples over budget, with the network as their cause,
//! and reports each with an event. Both namespaces share the host's clock
//! (the SPDP host id says so): the budget is judged without PTP.
//!
//! Needs root (namespaces).
#![cfg(feature = "endpoint")]

use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath_pubsub::budget::{BudgetStats, Cause, ClockSync};
use detpath_pubsub::driver::{wall_ns, Node, Transport, TransportOutbox};
use detpath_pubsub::engine::{make_guid_prefix, Config, Event, Participant};
use detpath_pubsub::priority::TxMark;
use detpath_pubsub::qos::Qos;
use detpath_pubsub::transport::{open, EndpointTransport, Wait};
use detpath_pubsub::types::KeyedSeq;
use detpath_pubsub::wire::{Addr, Message, Submessage, Time};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PORT: u16 = 7410;
/// The send indices the fault layer holds, and for how long.
const HELD: [u64; 5] = [60, 70, 80, 90, 100];
const HOLD: &str = "150ms";
const BUDGET_NS: i64 = 50_000_000;
/// After a held sample the writer waits this long, so no later sample overtakes it.
const QUIET: Duration = Duration::from_millis(250);

/// A transport that numbers its sends as the fault layer does (0-based),
/// and notes which carried a DATA of `writer`.
struct Counting {
    inner: EndpointTransport,
    sends: u64,
    writer: [u8; 4],
    data_at: Vec<u64>,
}

impl Transport for Counting {
    fn send(&mut self, dst: Addr, bytes: &[u8]) {
        self.send_marked(dst, bytes, TxMark::NONE);
    }
    fn send_marked(&mut self, dst: Addr, bytes: &[u8], mark: TxMark) {
        let data = Message::parse(bytes).is_ok_and(|m| m.submessages().map_while(Result::ok).any(|s| matches!(s, Submessage::Data(d) if d.writer_id.0 == self.writer)));
        if data {
            self.data_at.push(self.sends);
        }
        self.sends += 1;
        self.inner.send_marked(dst, bytes, mark);
    }
    fn recv(&mut self, buf: &mut [u8], wait_ns: u64) -> Option<(usize, Addr, u64)> {
        self.inner.recv(buf, wait_ns)
    }
    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }
    fn local_addr(&self) -> Addr {
        self.inner.local_addr()
    }
    fn max_datagram(&self) -> usize {
        self.inner.max_datagram()
    }
}

fn config(t: &EndpointTransport, peer: std::net::Ipv4Addr) -> Config {
    let Addr::Udp(local) = t.local_addr() else { panic!("not udp") };
    let mut cfg = Config::new(0, make_guid_prefix(u32::from(*local.ip()), std::process::id(), t.now_ns() as u32), t.local_addr());
    cfg.add_peer(peer, 0);
    cfg
}

fn reader(side: Side, peer: std::net::Ipv4Addr, stop: Arc<AtomicBool>) -> (BudgetStats, Vec<(u64, Cause)>, u64) {
    side.run(|| {
        let t = EndpointTransport::on(open(&side.uri("udp", PORT)).unwrap(), Wait::Block);
        let cfg = config(&t, peer);
        let now = t.now_ns();
        let mut n = Node::new(Participant::new(cfg, now), t);
        // A history deeper than what one turn can bring: a held sample arrives
        // 150 ms late, often in the same turn as the next one on time, and with
        // KEEP_LAST 1 (one instance) the later would replace it before `take`:
        // judged twice, taken once.
        let qos = Qos { latency_budget_ns: BUDGET_NS, ..Qos::best_effort(64) };
        let r = n.participant.create_reader_for(now, "Budget", qos, &KeyedSeq::default()).unwrap();
        let (mut rx, mut got, mut events) = (KeyedSeq::default(), 0u64, Vec::new());
        while !stop.load(Ordering::Relaxed) {
            n.turn(1_000_000, |_, _, _| {});
            while n.participant.take(r, &mut rx).unwrap().is_some() {
                got += 1;
            }
            while let Some(e) = n.participant.poll_event() {
                if let Event::BudgetExceeded { latency_ns, cause, .. } = e {
                    events.push((latency_ns, cause));
                }
            }
        }
        (n.participant.reader_budget(r).clone(), events, got)
    })
    .unwrap()
}

#[test]
fn samples_the_fault_layer_holds_past_the_budget_are_exactly_the_ones_counted_over_it() {
    if !detpath_testkit::need_root("samples_the_fault_layer_holds_past_the_budget_are_exactly_the_ones_counted_over_it", "namespaces") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("pbud")).expect("testbed");
    let stop = Arc::new(AtomicBool::new(false));
    let (b, a_addr, stop2) = (tb.b().clone(), tb.a().addr, stop.clone());
    let rd = std::thread::spawn(move || reader(b, a_addr, stop2));
    let delays: Vec<String> = HELD.iter().map(|k| format!("{k}:{HOLD}")).collect();
    let spec = format!("{}&delay={}", tb.a().uri("udp", PORT), delays.join(","));
    let mut w = tb
        .a()
        .run(|| {
            let t = EndpointTransport::on(open(&spec).unwrap_or_else(|e| panic!("{spec}: {e}")), Wait::Busy);
            let cfg = config(&t, tb.b().addr);
            let now = t.now_ns();
            Node::new(Participant::new(cfg, now), Counting { inner: t, sends: 0, writer: [0; 4], data_at: Vec::new() })
        })
        .unwrap();
    let qos = Qos { latency_budget_ns: BUDGET_NS, ..Qos::best_effort(1) };
    let wr = w.participant.create_writer_for("Budget", qos, &KeyedSeq::with_size(32)).unwrap();
    w.transport.writer = w.participant.writer_guid(wr).entity.0;
    // Matched here once the reader's announcement came; the reader matches
    // once ours reaches it: a best-effort sample before that is not for it.
    let start = Instant::now();
    while w.participant.writer_status(wr).matched == 0 && start.elapsed() < Duration::from_secs(10) {
        w.turn(200_000, |_, _, _| {});
    }
    let settle = Instant::now() + Duration::from_millis(300);
    while Instant::now() < settle {
        w.turn(200_000, |_, _, _| {});
    }
    let start = Instant::now();
    let (mut next, mut seq) = (Instant::now(), 0u32);
    let last = *HELD.last().unwrap();
    while w.transport.sends <= last + 5 && start.elapsed() < Duration::from_secs(30) {
        w.turn(200_000, |_, _, _| {});
        if w.participant.writer_status(wr).matched == 0 {
            continue;
        }
        // The next send is one the fault layer holds: make it a sample, now.
        let held_next = HELD.contains(&w.transport.sends);
        if held_next || Instant::now() >= next {
            seq += 1;
            let s = KeyedSeq { seq, ..KeyedSeq::with_size(32) };
            let now = w.transport.now_ns();
            let mut out = TransportOutbox(&mut w.transport);
            w.participant.write(now, &mut out, wr, Some(Time::from_nanos(wall_ns())), &s).unwrap();
            next = Instant::now() + if held_next { QUIET } else { Duration::from_millis(5) };
        }
    }
    // The last held sample goes out 150 ms late; let it arrive.
    let end = Instant::now() + QUIET;
    while Instant::now() < end {
        w.turn(200_000, |_, _, _| {});
    }
    stop.store(true, Ordering::Relaxed);
    let (budget, events, got) = rd.join().unwrap();
    let held_data: Vec<u64> = HELD.iter().copied().filter(|k| w.transport.data_at.contains(k)).collect();
    println!("{seq} samples written, {got} received, held samples at send indices {held_data:?}: {budget:?}");
    assert!(held_data.len() >= 3, "too few held sends were samples: {held_data:?} (samples at {:?})", w.transport.data_at);
    assert_eq!(budget.clock, ClockSync::SameHost);
    assert_eq!(budget.budget_ns, BUDGET_NS);
    assert_eq!(got, u64::from(seq), "every sample arrived (the held ones late)");
    assert_eq!(budget.over, held_data.len() as u64, "{budget:?}");
    assert_eq!(budget.cause(Cause::Network), budget.over);
    assert_eq!(budget.within + budget.over, u64::from(seq));
    assert_eq!((budget.unjudged, budget.implausible), (0, 0));
    assert_eq!(events.len(), held_data.len(), "{events:?}");
    assert!(events.iter().all(|&(lat, c)| c == Cause::Network && lat >= 150_000_000), "{events:?}");
}
