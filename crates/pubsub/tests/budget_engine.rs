//! Every received sample held to its latency budget, in two engines under
//! a virtual clock: the wall clock the readers read is the test's (an
//! injected offset and a processing lag), INFO_TS values are the test's.
//! Within and over budget, each cause (network, reader late,
//! retransmission), implausible INFO_TS, no budget, unsynchronised
//! clocks, and the over-budget event.

mod common;
use common::*;
use detpath_pubsub::budget::{Cause, ClockSync, Clocks};
use detpath_pubsub::engine::{Event, Outbox, ReaderId, WriterId};
use detpath_pubsub::qos::Qos;
use detpath_pubsub::types::KeyedSeq;
use detpath_pubsub::wire::{Message, Submessage, Time};
use std::cell::Cell;

/// The wall clock's reading at monotonic 0.
const BASE: i64 = 1_700_000_000_000_000_000;

thread_local! {
    /// (monotonic now, processing lag): the reader reads the clocks `lag` after the datagram arrived.
    static CLOCK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

fn test_clock() -> Clocks {
    let (now, lag) = CLOCK.with(Cell::get);
    Clocks { wall_ns: BASE + (now + lag) as i64, mono_ns: now + lag }
}

fn set_lag(lag: u64) {
    CLOCK.with(|c| c.set((c.get().0, lag)));
}

/// Advances the virtual clock (the readers' clock with it) and delivers.
fn step(net: &mut Net, dt: u64) {
    CLOCK.with(|c| c.set((net.now + dt, c.get().1)));
    net.step(dt);
}

struct Pair {
    net: Net,
    w: WriterId,
    r: ReaderId,
    seq: u32,
}

/// A writer on node 0 offering `offered`, a reader on node 1 requesting `requested`.
fn pair(offered: i64, requested: i64, cfg: impl Fn(usize, &mut detpath_pubsub::engine::Config)) -> Pair {
    let mut net = Net::with_config(2, |i, c| {
        c.clock = test_clock;
        cfg(i, c);
    });
    let proto = KeyedSeq::with_size(16);
    let w = net.nodes[0].create_writer_for("T", Qos { latency_budget_ns: offered, ..Qos::reliable_keep_all(64) }, &proto).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos { latency_budget_ns: requested, ..Qos::reliable_keep_all(64) }, &proto).unwrap();
    net.run_until(2000, |n| n.nodes[0].writer_status(w).matched > 0 && n.nodes[1].reader_status(r).matched > 0).expect("no match");
    step(&mut net, 1_000);
    Pair { net, w, r, seq: 0 }
}

impl Pair {
    /// Writes a sample stamped `age` ns before now (`Some(ts)`: that INFO_TS), delivers it after 1 µs.
    fn send(&mut self, stamp: Result<i64, Time>) {
        self.seq += 1;
        let mut s = KeyedSeq::with_size(16);
        s.seq = self.seq;
        let ts = match stamp {
            Ok(age) => Time::from_nanos(BASE + self.net.now as i64 - age),
            Err(t) => t,
        };
        let (node, out) = (&mut self.net.nodes[0], &mut self.net.outs[0]);
        node.write(self.net.now, out as &mut dyn Outbox, self.w, Some(ts), &s).unwrap();
        step(&mut self.net, 1_000);
        let mut rx = KeyedSeq::default();
        while self.net.nodes[1].take(self.r, &mut rx).unwrap().is_some() {}
    }
    fn events(&mut self) -> Vec<(u64, Cause)> {
        let mut v = Vec::new();
        while let Some(e) = self.net.nodes[1].poll_event() {
            if let Event::BudgetExceeded { latency_ns, cause, .. } = e {
                v.push((latency_ns, cause));
            }
        }
        v
    }
}

#[test]
fn samples_within_and_over_the_writers_budget_are_counted_with_the_network_as_cause() {
    let mut p = pair(100_000, 200_000, |_, _| {});
    for _ in 0..10 {
        p.send(Ok(50_000));
    }
    for _ in 0..3 {
        p.send(Ok(300_000));
    }
    let b = p.net.nodes[1].reader_budget(p.r).clone();
    assert_eq!(b.clock, ClockSync::SameHost);
    // The writer offers 100 µs: that is the budget, not the reader's 200 µs.
    assert_eq!(b.budget_ns, 100_000);
    assert_eq!((b.within, b.over, b.unjudged, b.implausible), (10, 3, 0, 0));
    assert_eq!(b.cause(Cause::Network), 3);
    assert_eq!(b.histogram.count, 13);
    // 51 µs each (50 µs before the write, 1 µs on the way) and 301 µs.
    assert_eq!(b.histogram.max_ns, 301_000);
    assert_eq!(b.histogram.sum_ns, 10 * 51_000 + 3 * 301_000);
    // Events: at most one per millisecond of the reader's clock; these came 1 µs apart.
    let ev = p.events();
    assert_eq!(ev, vec![(301_000, Cause::Network)]);
}

#[test]
fn a_sample_that_arrived_in_time_but_was_taken_in_late_is_the_readers_fault() {
    let mut p = pair(100_000, 100_000, |_, _| {});
    set_lag(500_000);
    p.send(Ok(20_000));
    set_lag(0);
    p.send(Ok(20_000));
    let b = p.net.nodes[1].reader_budget(p.r).clone();
    assert_eq!((b.within, b.over), (1, 1));
    assert_eq!(b.cause(Cause::ReaderLate), 1);
    assert_eq!(p.events(), vec![(521_000, Cause::ReaderLate)]);
}

#[test]
fn a_lost_sample_repaired_by_a_retransmission_is_over_budget_for_that_reason() {
    let mut p = pair(100_000, 100_000, |_, _| {});
    // The third sample's datagram (its DATA and heartbeat) is lost.
    p.net.drop = Box::new(|from, _, bytes, _| {
        from == 0
            && Message::parse(bytes).is_ok_and(|m| m.submessages().map_while(Result::ok).any(|s| matches!(s, Submessage::Data(d) if d.writer_sn.0 == 3 && !d.writer_id.is_builtin())))
            && !RESENT.with(|r| r.replace(true))
    });
    for _ in 0..5 {
        p.send(Ok(10_000));
        step(&mut p.net, 10_000_000);
    }
    let b = p.net.nodes[1].reader_budget(p.r).clone();
    assert_eq!(p.net.nodes[1].reader_status(p.r).received, 5);
    assert!(p.net.nodes[0].counters().retransmits >= 1);
    // Sample 3 came about 10 ms late; sample 4, held behind it, was delivered at once with it (within).
    assert_eq!((b.within, b.over), (4, 1), "{b:?}");
    assert_eq!(b.cause(Cause::Retransmission), 1);
}

thread_local! {
    static RESENT: Cell<bool> = const { Cell::new(false) };
}

#[test]
fn forged_timestamps_are_implausible_and_stay_out_of_the_histogram() {
    let mut p = pair(100_000, 100_000, |_, _| {});
    p.send(Ok(-5_000_000_000)); // 5 s in the future
    p.send(Ok(2 * 3_600_000_000_000)); // two hours old
    p.send(Err(Time::from_nanos(1))); // 1970
    p.send(Err(Time::INFINITE)); // 2038
    p.send(Ok(10_000));
    let b = p.net.nodes[1].reader_budget(p.r).clone();
    assert_eq!((b.implausible, b.within, b.over), (4, 1, 0), "{b:?}");
    assert_eq!(b.histogram.count, 1);
    assert!(b.histogram.max_ns < 1_000_000);
    assert!(p.events().is_empty());
}

#[test]
fn without_a_budget_latencies_are_measured_and_the_readers_own_budget_applies_when_the_writer_offers_none() {
    let mut p = pair(0, 0, |_, _| {});
    p.send(Ok(300_000));
    let b = p.net.nodes[1].reader_budget(p.r).clone();
    assert_eq!((b.within, b.over, b.histogram.count, b.budget_ns), (0, 0, 1, 0));
    let mut p = pair(0, 100_000, |_, _| {});
    p.send(Ok(300_000));
    let b = p.net.nodes[1].reader_budget(p.r).clone();
    assert_eq!((b.over, b.budget_ns), (1, 100_000));
}

#[test]
fn clocks_of_two_hosts_are_not_judged_unless_synchronised() {
    // Two hosts (different host ids), no PTP: nothing is judged, no violation reported.
    let mut p = pair(100_000, 100_000, |i, c| c.host_id = Some([i as u8 + 1; 16]));
    p.send(Ok(300_000));
    p.send(Ok(10_000));
    let b = p.net.nodes[1].reader_budget(p.r).clone();
    assert_eq!(b.clock, ClockSync::Unsynchronised);
    assert_eq!((b.unjudged, b.within, b.over, b.histogram.count), (2, 0, 0, 0));
    assert!(p.events().is_empty());
    // The reader's host is PTP-disciplined (the application says so): judged.
    let mut p = pair(100_000, 100_000, |i, c| {
        c.host_id = Some([i as u8 + 1; 16]);
        c.clock_synchronised = i == 1;
    });
    p.send(Ok(300_000));
    let b = p.net.nodes[1].reader_budget(p.r).clone();
    assert_eq!(b.clock, ClockSync::Synchronised);
    assert_eq!((b.over, b.cause(Cause::Network)), (1, 1));
    // A peer that announces no host id (another vendor) is not on our host.
    let mut p = pair(100_000, 100_000, |i, c| c.host_id = if i == 0 { None } else { Some([9; 16]) });
    p.send(Ok(300_000));
    assert_eq!(p.net.nodes[1].reader_budget(p.r).unjudged, 1);
}
