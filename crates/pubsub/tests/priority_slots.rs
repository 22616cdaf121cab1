//! Priority to the slot scheduler: a pub-sub writer of TRANSPORT_PRIORITY
//! 40 (control) and one of priority 0 (bulk, flooding 1 KiB samples) on one
//! endpoint with `sched=slots&classes=ctl:rt:...;bulk:be:...`, in the
//! testbed. By the default rule the control writer's datagrams leave in
//! the real-time class `ctl`, the bulk writer's in `bulk`: the scheduler's
//! own counters show every control datagram released in its class, none
//! dropped or refused, its pre-buffer never more than a few deep, while
//! the bulk class's FIFO stood deep behind the flood. A priority no class
//! covers is refused at writer creation, naming the classes.
//!
//! Needs root (namespaces).
#![cfg(feature = "endpoint")]

use detpath::testbed::{Testbed, TestbedConfig};
use detpath::{Capabilities, Counters, Endpoint, Mark, RecvMode, RxMeta};
use detpath_pubsub::driver::{wall_ns, Node, Transport, TransportOutbox};
use detpath_pubsub::engine::{make_guid_prefix, Config, EngineError, Participant};
use detpath_pubsub::priority::{ClassMap, PriorityPolicy, TxMark};
use detpath_pubsub::qos::Qos;
use detpath_pubsub::transport::{open, EndpointTransport, Wait};
use detpath_pubsub::types::KeyedSeq;
use detpath_pubsub::wire::{Addr, Time};
use detpath_sched::SlotsEndpoint;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PORT: u16 = 7410;

/// The scheduler endpoint, shared: the transport sends through it, the
/// test reads its counters.
struct Shared(Arc<Mutex<SlotsEndpoint>>, Capabilities);

impl Endpoint for Shared {
    fn local_addr(&self) -> SocketAddrV4 {
        self.0.lock().unwrap().local_addr()
    }
    fn capabilities(&self) -> &Capabilities {
        &self.1
    }
    fn counters(&self) -> Counters {
        self.0.lock().unwrap().counters()
    }
    fn send_marked(&mut self, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> detpath::Result<()> {
        self.0.lock().unwrap().send_marked(payload, peer, mark)
    }
    fn class_named(&self, name: &str) -> detpath::Result<u16> {
        self.0.lock().unwrap().class_named(name)
    }
    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> detpath::Result<Option<RxMeta>> {
        // Never hold the lock across a wait: look, and let the caller come back.
        let mode = match mode {
            RecvMode::NonBlocking => RecvMode::NonBlocking,
            _ => RecvMode::BusyPoll { timeout: Some(Duration::from_micros(200)) },
        };
        self.0.lock().unwrap().recv(buf, mode)
    }
}

fn config(t: &EndpointTransport, peer: std::net::Ipv4Addr) -> Config {
    let Addr::Udp(local) = t.local_addr() else { panic!("not udp") };
    let mut cfg = Config::new(0, make_guid_prefix(u32::from(*local.ip()), std::process::id(), t.now_ns() as u32), t.local_addr());
    cfg.add_peer(peer, 0);
    cfg
}

#[test]
fn control_datagrams_leave_in_their_own_slots_while_bulk_floods_its_class() {
    if !detpath_testkit::need_root("control_datagrams_leave_in_their_own_slots_while_bulk_floods_its_class", "namespaces") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("pslot")).expect("testbed");
    // 50 µs slots, 20-slot ring: ctl owns positions 0, 5, 10, 15; bulk 2, 7, 12, 17 (4000 datagrams/s).
    let spec = format!("{}&sched=slots&slot_ns=50000&ring_slots=20&lead_slots=2&sched_mode=relaxed&classes=ctl:rt:0/5;bulk:be:2/5", tb.a().uri("udp", PORT));
    let slots = tb
        .a()
        .run(|| {
            static LAYERS: detpath::layer::Registry = &[&detpath_sched::spec::LAYER];
            let parsed = detpath::EndpointSpec::parse_with(&spec, LAYERS).unwrap_or_else(|e| panic!("{spec}: {e}"));
            detpath_sched::open_slots(&parsed).unwrap_or_else(|e| panic!("{spec}: {e}"))
        })
        .unwrap();
    let caps = slots.capabilities().clone();
    let slots = Arc::new(Mutex::new(slots));
    let t = EndpointTransport::new(Box::new(Shared(slots.clone(), caps)), Wait::Busy);

    // A class map that leaves priority 0 to no class: refused, naming the classes.
    let narrow = PriorityPolicy { classes: Some(ClassMap::parse("1=ctl").unwrap()), ..Default::default() };
    let mut cfg = config(&t, tb.b().addr);
    cfg.priority = t.priority_marks(&narrow).unwrap();
    let mut p = Participant::new(cfg, t.now_ns());
    match p.create_writer_for("Bulk", Qos::default(), &KeyedSeq::default()) {
        Err(EngineError::Priority(e)) => assert!(e.to_string().contains("ctl (rt), bulk (be)"), "{e}"),
        other => panic!("priority 0 with no class accepted: {other:?}"),
    }
    let e = t.priority_marks(&PriorityPolicy { classes: Some(ClassMap::parse("0=bulk,1=video").unwrap()), ..Default::default() }).unwrap_err();
    assert!(e.to_string().contains("`video`") && e.to_string().contains("ctl (rt), bulk (be)"), "{e}");

    // The default rule: priority 40 -> ctl (class 0), 0 -> bulk (class 1).
    let mut cfg = config(&t, tb.b().addr);
    cfg.priority = t.priority_marks(&PriorityPolicy::default()).unwrap();
    let now = t.now_ns();
    let mut w = Node::new(Participant::new(cfg, now), t);
    let ctl = w.participant.create_writer_for("Ctl", Qos { transport_priority: 40, ..Qos::reliable_keep_last(1) }, &KeyedSeq::with_size(64)).unwrap();
    let bulk = w.participant.create_writer_for("Bulk", Qos::best_effort(1), &KeyedSeq::with_size(1024)).unwrap();
    assert_eq!(w.participant.writer_mark(ctl), TxMark { dscp: 46, class: Some(0) });
    assert_eq!(w.participant.writer_mark(bulk), TxMark { dscp: 0, class: Some(1) });

    let stop = Arc::new(AtomicBool::new(false));
    let (b, a_addr, stop2) = (tb.b().clone(), tb.a().addr, stop.clone());
    let reader = std::thread::spawn(move || {
        b.run(|| {
            let t = EndpointTransport::on(open(&b.uri("udp", PORT)).unwrap(), Wait::Block);
            let cfg = config(&t, a_addr);
            let now = t.now_ns();
            let mut n = Node::new(Participant::new(cfg, now), t);
            let rc = n.participant.create_reader_for(now, "Ctl", Qos::reliable_keep_last(1), &KeyedSeq::default()).unwrap();
            let rb = n.participant.create_reader_for(now, "Bulk", Qos::best_effort(1), &KeyedSeq::default()).unwrap();
            let (mut rx, mut got) = (KeyedSeq::default(), [0u64; 2]);
            while !stop2.load(Ordering::Relaxed) {
                n.turn(1_000_000, |_, _, _| {});
                for (k, r) in [rc, rb].into_iter().enumerate() {
                    while n.participant.take(r, &mut rx).unwrap().is_some() {
                        got[k] += 1;
                    }
                }
            }
            got
        })
        .unwrap()
    });
    let start = Instant::now();
    while (w.participant.writer_status(ctl).matched == 0 || w.participant.writer_status(bulk).matched == 0) && start.elapsed() < Duration::from_secs(10) {
        w.turn(200_000, |_, _, _| {});
    }
    assert!(w.participant.writer_status(ctl).matched > 0 && w.participant.writer_status(bulk).matched > 0, "no match in 10 s");
    // The reader's side matches once our SEDP announcements reach it:
    // discovery is unmarked and leaves in the best-effort class, which the
    // flood is about to fill, so it goes first.
    let settle = Instant::now() + Duration::from_millis(500);
    while Instant::now() < settle {
        w.turn(200_000, |_, _, _| {});
    }
    // One second: control at 1 kHz, bulk as fast as the loop goes.
    let (mut next_ctl, mut n_ctl) = (Instant::now(), 0u32);
    let end = Instant::now() + Duration::from_secs(1);
    let (c, b) = (KeyedSeq::with_size(64), KeyedSeq::with_size(1024));
    while Instant::now() < end {
        let now = w.transport.now_ns();
        let mut out = TransportOutbox(&mut w.transport);
        if Instant::now() >= next_ctl {
            n_ctl += 1;
            w.participant.write(now, &mut out, ctl, Some(Time::from_nanos(wall_ns())), &KeyedSeq { seq: n_ctl, ..c.clone() }).unwrap();
            next_ctl += Duration::from_millis(1);
        }
        w.participant.write(now, &mut out, bulk, Some(Time::from_nanos(wall_ns())), &b).unwrap();
        w.turn(0, |_, _, _| {});
    }
    // Let the last control samples and acknowledgements through.
    let end = Instant::now() + Duration::from_millis(300);
    while Instant::now() < end {
        w.turn(200_000, |_, _, _| {});
    }
    stop.store(true, Ordering::Relaxed);
    let got = reader.join().unwrap();
    let s = slots.lock().unwrap();
    let (ctl_c, bulk_c) = (s.scheduler().counters(0).unwrap(), s.scheduler().counters(1).unwrap());
    let rel = |i| s.scheduler().release_error(i).map(detpath_sched::ErrorSummary::of);
    println!("{n_ctl} control samples, received {got:?}; ctl {ctl_c:?}; bulk {bulk_c:?}; bulk refusals (class full) {}", w.transport.send_errors);
    println!("release error (release - slot), ns: ctl {:?}; bulk {:?}", rel(0), rel(1));
    assert!(n_ctl >= 100, "the loop wrote {n_ctl} control samples");
    // Every control datagram went out in the real-time class: none dropped, refused or lost in the datapath.
    assert!(ctl_c.accepted >= u64::from(n_ctl), "{ctl_c:?}");
    assert_eq!(ctl_c.sent, ctl_c.accepted, "{ctl_c:?}");
    assert_eq!((ctl_c.dropped, ctl_c.tx_errors), (0, 0), "{ctl_c:?}");
    // The flood backed the bulk class up to its capacity (the sends past it
    // refused), and control never stood in that FIFO: its own pre-buffer
    // held fewer at its deepest than bulk's.
    assert!(bulk_c.prebuffer_high_water >= 32, "the flood never backed up the bulk class: {bulk_c:?}");
    assert!(w.transport.send_errors > 0, "the bulk class never refused a send: no flood");
    assert!(ctl_c.prebuffer_high_water < bulk_c.prebuffer_high_water, "{ctl_c:?} {bulk_c:?}");
    assert!(bulk_c.sent > 0);
    assert!(got[0] > 0 && got[1] > 0, "received {got:?}");
}
