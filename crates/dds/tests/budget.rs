//! TRANSPORT_PRIORITY and LATENCY_BUDGET through the Rust application API,
//! in the two-namespace testbed (one host: one clock):
//!
//! - a writer and a reader with a budget: every sample the reader takes is
//!   counted in its `latency_budget_status()` once (within, over, unjudged
//!   or implausible), judged on the host's one clock (`SameHost`), and the
//!   judged ones are in the histogram;
//! - the over-budget event: with a budget no sample can meet (1 ns), a
//!   waiting `wait_for_over_budget` wakes, the status says how many and
//!   why (every one has a cause), reading it resets `over_change`, and the
//!   next wait times out while nothing new is late;
//! - a writer offering a longer budget than the reader requests does not
//!   match it (and says so in the reader's status);
//! - bad budgets are refused at creation, saying why.
//!
//! No timing assertions. Needs root (namespaces): a failure in CI, a named
//! skip elsewhere.

use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath_dds::{Cause, ClockSync, DataReader, DataWriter, DomainParticipant, ParticipantOptions, Qos, Topic};
use detpath_pubsub::types::OneULong;
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
const PORT: u16 = 7410;

fn participant(side: &Side, peer: &Side) -> DomainParticipant {
    let opts = ParticipantOptions { netns: Some(side.netns.clone()), ..Default::default() };
    DomainParticipant::with_options(0, &side.uri("udp", PORT), &[&peer.addr.to_string()], opts).unwrap_or_else(|e| panic!("participant: {e}"))
}

fn until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < end, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn testbed(test: &str) -> Option<Testbed> {
    if !detpath_testkit::need_root(test, "namespaces") {
        return None;
    }
    Some(Testbed::up(TestbedConfig::unique("ddsbud")).expect("testbed up"))
}

/// Writes `n` samples and takes them all at the reader.
fn write_and_take(w: &DataWriter<OneULong>, r: &DataReader<OneULong>, n: u32) {
    let mut got = 0;
    for seq in 0..n {
        w.write(&OneULong { seq }).unwrap();
        got += r.take(64).unwrap().len();
    }
    let end = Instant::now() + Duration::from_secs(10);
    while got < n as usize && Instant::now() < end {
        got += r.take_timeout(64, Duration::from_millis(200)).unwrap().len();
    }
    assert_eq!(got, n as usize, "every sample arrives (reliable)");
}

#[test]
fn every_sample_is_held_to_the_budget_and_late_ones_wake_the_application() {
    let Some(tb) = testbed("every_sample_is_held_to_the_budget_and_late_ones_wake_the_application") else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (a, b) = (tb.a(), tb.b());
    let (pa, pb) = (participant(a, b), participant(b, a));

    // A budget samples meet on this host, and a priority that marks the datagrams.
    let qos = Qos::new().reliable().keep_all().transport_priority(30).latency_budget(Duration::from_secs(1));
    let w = DataWriter::new(&pa, &Topic::<OneULong>::new(&pa, "Control"), &qos).unwrap();
    let r = DataReader::new(&pb, &Topic::<OneULong>::new(&pb, "Control"), &qos).unwrap();
    until("matched", Duration::from_secs(5), || w.status().unwrap().matched_subscriptions == 1 && r.status().unwrap().matched_publications == 1);
    write_and_take(&w, &r, 200);
    let s = r.latency_budget_status().unwrap();
    println!("budget status: {s:?}");
    assert_eq!(s.budget_ns, 1_000_000_000);
    assert_eq!(s.within + s.over + s.unjudged + s.implausible, 200, "every sample counted once: {s:?}");
    assert_eq!(s.clock, ClockSync::SameHost, "two namespaces of one host share its clock: {s:?}");
    assert_eq!(s.unjudged, 0, "{s:?}");
    assert_eq!(s.histogram.count, s.within + s.over, "{s:?}");
    assert_eq!(s.causes.iter().map(|(_, n)| n).sum::<u64>(), s.over, "{s:?}");

    // A budget nothing meets: every sample is over, and the application is woken.
    let tight = Qos::new().reliable().keep_all().latency_budget(Duration::from_nanos(1));
    let w2 = DataWriter::new(&pa, &Topic::<OneULong>::new(&pa, "Tight"), &tight).unwrap();
    let r2 = DataReader::new(&pb, &Topic::<OneULong>::new(&pb, "Tight"), &tight).unwrap();
    until("matched", Duration::from_secs(5), || w2.status().unwrap().matched_subscriptions == 1);
    assert!(!r2.wait_for_over_budget(Duration::from_millis(100)).unwrap(), "nothing written, nothing late");
    let waiter = std::thread::spawn(move || {
        let woke = r2.wait_for_over_budget(Duration::from_secs(10)).unwrap();
        (woke, r2)
    });
    std::thread::sleep(Duration::from_millis(100));
    for seq in 0..20 {
        w2.write(&OneULong { seq }).unwrap();
    }
    let (woke, r2) = waiter.join().unwrap();
    assert!(woke, "a sample over budget wakes the waiting application");
    until("20 samples judged", Duration::from_secs(5), || {
        let s = r2.latency_budget_status().unwrap();
        s.over == 20
    });
    let s = r2.latency_budget_status().unwrap();
    assert_eq!((s.within, s.over, s.over_change), (0, 20, 0), "read twice: no change since the last read: {s:?}");
    assert_eq!(s.causes.iter().map(|(_, n)| n).sum::<u64>(), 20, "every violation has a cause: {s:?}");
    assert!(s.causes.iter().any(|(c, n)| *c == Cause::Network && *n > 0) || s.causes.iter().any(|(_, n)| *n > 0), "{s:?}");
    assert!(!r2.wait_for_over_budget(Duration::from_millis(200)).unwrap(), "the status was read: nothing new is late");
    w2.write(&OneULong { seq: 99 }).unwrap();
    assert!(r2.wait_for_over_budget(Duration::from_secs(5)).unwrap(), "one more late sample wakes it again");
    assert_eq!(r2.latency_budget_status().unwrap().over_change, 1);

    // A writer offering more than the reader requests does not match it.
    let loose = Qos::new().reliable().latency_budget(Duration::from_millis(50));
    let strict = Qos::new().reliable().latency_budget(Duration::from_millis(5));
    let w3 = DataWriter::new(&pa, &Topic::<OneULong>::new(&pa, "Strict"), &loose).unwrap();
    let r3 = DataReader::new(&pb, &Topic::<OneULong>::new(&pb, "Strict"), &strict).unwrap();
    until("the mismatch is reported", Duration::from_secs(5), || r3.status().unwrap().incompatible_qos > 0);
    assert_eq!(w3.status().unwrap().matched_subscriptions, 0);
}

#[test]
fn bad_budgets_are_refused_at_creation() {
    let Some(tb) = testbed("bad_budgets_are_refused_at_creation") else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pa = participant(tb.a(), tb.b());
    let t = Topic::<OneULong>::new(&pa, "Bad");
    for d in [Duration::ZERO, Duration::from_secs(3601)] {
        let e = DataWriter::new(&pa, &t, &Qos::new().latency_budget(d)).err().expect("refused").to_string();
        assert!(e.contains("latency_budget") && e.contains("at most 1h"), "{e}");
        let e = DataReader::new(&pa, &t, &Qos::new().latency_budget(d)).err().expect("refused").to_string();
        assert!(e.contains("latency_budget"), "{e}");
    }
}
