//! Two engines over an in-memory network under a virtual clock: discovery,
//! matching, reliability under loss, best effort, fragments, flow control,
//! leases, deadlines, partitions and GAPs.

mod common;
use common::*;
use detpath_pubsub::engine::{Event, Outbox, WriteError};
use detpath_pubsub::qos::{Qos, Reliability};
use detpath_pubsub::types::{KeyedSeq, OneULong};
use detpath_pubsub::wire::Time;

fn matched(net: &mut Net, w: detpath_pubsub::engine::WriterId, r: detpath_pubsub::engine::ReaderId) -> bool {
    net.nodes[0].writer_status(w).matched > 0 && net.nodes[1].reader_status(r).matched > 0
}

#[test]
fn discovery_matches_within_a_few_virtual_milliseconds() {
    let mut net = Net::new(2);
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_last(1), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_last(1), &OneULong::default()).unwrap();
    let t = net.run_until(2000, |n| matched(n, w, r)).expect("no match in 2 s");
    assert!(t <= 10_000_000, "took {t} ns");
    let mut saw = Vec::new();
    while let Some(e) = net.nodes[0].poll_event() {
        saw.push(e);
    }
    assert!(saw.iter().any(|e| matches!(e, Event::ParticipantDiscovered { user_data, .. } if user_data == b"node1")));
    assert!(saw.iter().any(|e| matches!(e, Event::WriterMatched { .. })));
}

fn send_all(net: &mut Net, w: detpath_pubsub::engine::WriterId, r: detpath_pubsub::engine::ReaderId, n: u32, size: usize) -> Vec<u32> {
    let mut got = Vec::new();
    let mut s = KeyedSeq::with_size(size);
    let mut rx = KeyedSeq::default();
    let mut next = 1u32;
    for _ in 0..200_000 {
        if next <= n {
            s.seq = next;
            let (node, out) = (&mut net.nodes[0], &mut net.outs[0]);
            match node.write(net.now, out as &mut dyn Outbox, w, Some(Time::from_nanos(next as i64)), &s) {
                Ok(_) => next += 1,
                Err(WriteError::HistoryFull) => {}
                Err(e) => panic!("{e}"),
            }
        }
        net.deliver();
        while let Some(info) = net.nodes[1].take(r, &mut rx).unwrap() {
            assert!(info.valid_data);
            assert_eq!(rx.baggage.len(), size.saturating_sub(12));
            got.push(rx.seq);
        }
        if got.len() as u32 == n {
            break;
        }
        net.step(100_000);
    }
    got
}

#[test]
fn reliable_delivers_everything_in_order_despite_20_percent_loss() {
    let mut net = Net::new(2);
    let mut rng = Lcg(42);
    net.drop = Box::new(move |_, _, _, _| rng.next().is_multiple_of(5));
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_all(64), &KeyedSeq::with_size(32)).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_all(64), &KeyedSeq::with_size(32)).unwrap();
    net.run_until(5000, |n| matched(n, w, r)).expect("no match");
    let got = send_all(&mut net, w, r, 10_000, 32);
    assert_eq!(got.len(), 10_000, "received {}", got.len());
    assert!(got.iter().enumerate().all(|(i, &x)| x == i as u32 + 1), "in order");
    assert!(net.dropped > 1000, "loss really happened: {}", net.dropped);
    let c = net.nodes[0].counters();
    assert!(c.retransmits > 0);
    assert_eq!(net.nodes[1].reader_status(r).lost, 0);
}

#[test]
fn best_effort_counts_what_it_loses_and_never_retransmits() {
    let mut net = Net::new(2);
    let w = net.nodes[0].create_writer_for("T", Qos::best_effort(1), &KeyedSeq::with_size(32)).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::best_effort(100), &KeyedSeq::with_size(32)).unwrap();
    net.run_until(2000, |n| matched(n, w, r)).expect("no match");
    let retransmits_before = net.nodes[0].counters().retransmits;
    let mut k = 0u64;
    net.drop = Box::new(move |from, _, _, _| {
        k += 1;
        from == 0 && k.is_multiple_of(10)
    });
    let mut s = KeyedSeq::with_size(32);
    let mut rx = KeyedSeq::default();
    let mut got = 0;
    for i in 1..=1000 {
        if i == 1000 {
            // The last one always arrives, so every earlier loss shows as a hole.
            net.drop = Box::new(|_, _, _, _| false);
        }
        s.seq = i;
        net.nodes[0].write(net.now, &mut net.outs[0], w, None, &s).unwrap();
        net.deliver();
        while net.nodes[1].take(r, &mut rx).unwrap().is_some() {
            got += 1;
        }
    }
    let st = net.nodes[1].reader_status(r);
    assert!((850..1000).contains(&got), "{got}");
    assert_eq!(st.lost + got as u64, 1000, "every sample is either received or counted lost");
    assert_eq!(net.nodes[0].counters().retransmits, retransmits_before);
}

#[test]
fn large_samples_go_as_fragments_and_survive_loss() {
    let mut net = Net::new(2);
    let mut rng = Lcg(7);
    net.drop = Box::new(move |_, _, _, _| rng.next().is_multiple_of(10));
    let proto = KeyedSeq::with_size(20_000);
    let w = net.nodes[0].create_writer_for("Big", Qos::reliable_keep_all(8), &proto).unwrap();
    let r = net.nodes[1].create_reader_for(0, "Big", Qos::reliable_keep_all(8), &proto).unwrap();
    net.run_until(5000, |n| matched(n, w, r)).expect("no match");
    let got = send_all(&mut net, w, r, 50, 20_000);
    assert_eq!(got, (1..=50).collect::<Vec<_>>());
    let c = net.nodes[1].counters();
    assert!(c.frags_received > 50 * 14, "{}", c.frags_received);
}

#[test]
fn keep_all_writer_blocks_when_nothing_is_acknowledged() {
    let mut net = Net::new(2);
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_all(16), &OneULong::default()).unwrap();
    net.run_until(2000, |n| matched(n, w, r)).expect("no match");
    net.alive[1] = false;
    let mut ok = 0;
    let mut full = false;
    for i in 0..100 {
        match net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq: i }) {
            Ok(_) => ok += 1,
            Err(WriteError::HistoryFull) => {
                full = true;
                break;
            }
            Err(e) => panic!("{e}"),
        }
        net.deliver();
    }
    assert!(full);
    assert_eq!(ok, 16);
    assert_eq!(net.nodes[0].writer_status(w).unacknowledged, 16);
    net.alive[1] = true;
    net.run_until(2000, |n| n.nodes[0].writer_status(w).unacknowledged == 0).expect("acks came back");
    assert_eq!(net.nodes[1].reader_status(r).waiting, 16);
}

#[test]
fn a_vanished_participant_expires_by_lease() {
    let mut net = Net::with_config(2, |_, c| c.lease_ns = 2_000_000_000);
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_last(1), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_last(1), &OneULong::default()).unwrap();
    net.run_until(2000, |n| matched(n, w, r)).expect("no match");
    while net.nodes[0].poll_event().is_some() {}
    net.alive[1] = false;
    let t = net.run_until(5000, |n| n.nodes[0].writer_status(w).matched == 0).expect("lease never expired");
    assert!((1_900_000_000..=2_200_000_000).contains(&t), "expired after {t} ns");
    let evs: Vec<_> = std::iter::from_fn(|| net.nodes[0].poll_event()).collect();
    assert!(evs.iter().any(|e| matches!(e, Event::ParticipantLost { reason: detpath_pubsub::engine::LostReason::LeaseExpired, .. })));
    assert_eq!(net.nodes[0].counters().leases_expired, 1);
}

#[test]
fn deadline_misses_are_counted_on_both_sides() {
    let mut net = Net::new(2);
    let q = Qos { deadline_ns: 10_000_000, ..Qos::reliable_keep_last(1) };
    let w = net.nodes[0].create_writer_for("T", q.clone(), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", q, &OneULong::default()).unwrap();
    net.run_until(2000, |n| matched(n, w, r)).expect("no match");
    for i in 0..20 {
        net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq: i }).unwrap();
        net.step(5_000_000);
    }
    assert_eq!(net.nodes[1].reader_status(r).requested_deadline_missed, 0);
    assert_eq!(net.nodes[0].writer_status(w).offered_deadline_missed, 0);
    for _ in 0..100 {
        net.step(1_000_000);
    }
    assert!(net.nodes[1].reader_status(r).requested_deadline_missed >= 9);
    assert!(net.nodes[0].writer_status(w).offered_deadline_missed >= 9);
}

#[test]
fn partitions_and_incompatible_reliability_do_not_match() {
    let mut net = Net::new(2);
    let w1 = net.nodes[0].create_writer_for("T", Qos::reliable_keep_last(1).with_partition("a"), &OneULong::default()).unwrap();
    let r1 = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_last(1).with_partition("b"), &OneULong::default()).unwrap();
    let w2 = net.nodes[0].create_writer_for("U", Qos::best_effort(1), &OneULong::default()).unwrap();
    let r2 = net.nodes[1].create_reader_for(0, "U", Qos::reliable_keep_last(1), &OneULong::default()).unwrap();
    let r3 = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_last(1).with_partition("a*"), &OneULong::default()).unwrap();
    net.run_until(100, |n| n.nodes[1].reader_status(r3).matched == 1).expect("wildcard partition matches");
    assert_eq!(net.nodes[1].reader_status(r1).matched, 0);
    assert_eq!(net.nodes[1].reader_status(r2).matched, 0);
    assert_eq!(net.nodes[0].writer_status(w2).matched, 0);
    assert_eq!(net.nodes[0].writer_status(w1).matched, 1);
    assert!(net.nodes[1].counters().incompatible_qos >= 1);
    let _ = Reliability::Reliable;
}

#[test]
fn a_gap_that_never_fills_is_skipped_not_waited_on() {
    // KEEP_LAST 1 writer: samples the reader missed are gone from its history;
    // the reader must move on (counting them lost), not stall.
    let mut net = Net::new(2);
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_last(1), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_all(100), &OneULong::default()).unwrap();
    net.run_until(2000, |n| matched(n, w, r)).expect("no match");
    net.alive[1] = false;
    for i in 1..=5 {
        net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq: i }).unwrap();
        net.deliver();
    }
    net.alive[1] = true;
    for i in 6..=8 {
        net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq: i }).unwrap();
        net.deliver();
    }
    net.run_until(1000, |n| n.nodes[1].reader_status(r).waiting >= 3).expect("later samples delivered");
    let mut rx = OneULong::default();
    let mut got = Vec::new();
    while net.nodes[1].take(r, &mut rx).unwrap().is_some() {
        got.push(rx.seq);
    }
    assert_eq!(got, vec![6, 7, 8]);
    let st = net.nodes[1].reader_status(r);
    assert_eq!(st.lost, 5, "the five the writer no longer has");
}

#[test]
fn a_slow_keep_all_reader_throttles_the_writer_without_a_retransmission_storm() {
    let mut net = Net::new(2);
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_all(1000), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_all(50), &OneULong::default()).unwrap();
    net.run_until(2000, |n| matched(n, w, r)).expect("no match");
    let before = net.nodes[0].counters();
    let (mut next, mut got) = (0u32, Vec::new());
    let mut rx = OneULong::default();
    for step in 0..100_000u32 {
        // The writer writes as fast as flow control lets it.
        while next < 20_000 {
            match net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq: next }) {
                Ok(_) => next += 1,
                Err(WriteError::HistoryFull) => break,
                Err(e) => panic!("{e}"),
            }
            if next % 64 == 0 {
                break;
            }
        }
        net.deliver();
        // The reader takes ten samples every other step.
        if step % 2 == 0 {
            for _ in 0..10 {
                if net.nodes[1].take(r, &mut rx).unwrap().is_none() {
                    break;
                }
                got.push(rx.seq);
            }
        }
        if got.len() == 20_000 {
            break;
        }
        net.step(50_000);
    }
    assert_eq!(got.len(), 20_000, "received {}", got.len());
    assert!(got.iter().enumerate().all(|(i, &x)| x == i as u32), "in order");
    let c = net.nodes[0].counters();
    let resent = c.retransmits - before.retransmits;
    assert!(resent < 40_000, "retransmitted {resent} samples for 20,000 written to a slow reader");
    println!("retransmits {resent}, suppressed {}, reader rejected {}", c.nacks_suppressed, net.nodes[1].reader_status(r).rejected);
}

#[test]
fn everything_acknowledged_means_everything_delivered_even_with_loss() {
    use detpath_pubsub::ddsperf::{PerfConfig, PerfNode, Role};
    let mut net = Net::new(2);
    let mut pc = PerfConfig::new(Role::Pub { rate_hz: 0.0 });
    pc.count = 20_000;
    let mut publ = PerfNode::new(&mut net.nodes[0], 1, pc).unwrap();
    let mut sc = PerfConfig::new(Role::Sub);
    sc.count = 20_000;
    let mut sub = PerfNode::new(&mut net.nodes[1], 1, sc).unwrap();
    net.run_until(2000, |n| publ.data_writer_matched(&n.nodes[0]) && sub.data_reader_matched(&n.nodes[1])).unwrap();
    let mut rng = Lcg(3);
    net.drop = Box::new(move |_, _, _, _| rng.next().is_multiple_of(20));
    let mut done = false;
    for _ in 0..400_000 {
        let now = net.now;
        publ.poll(&mut net.nodes[0], &mut net.outs[0], now, 0);
        net.deliver();
        sub.poll(&mut net.nodes[1], &mut net.outs[1], now, 0);
        net.deliver();
        if publ.count_done() && publ.all_acknowledged(&net.nodes[0]) {
            done = true;
            break;
        }
        net.step(20_000);
    }
    // The publisher leaves at once (as `detpath pubsub pub` does); the
    // subscriber still holds what it acknowledged.
    net.nodes[0].shutdown(&mut net.outs[0]);
    net.deliver();
    net.alive[0] = false;
    for _ in 0..1000 {
        sub.poll(&mut net.nodes[1], &mut net.outs[1], net.now, 0);
        net.step(1_000_000);
    }
    assert!(done, "never all acknowledged; sub has {}", sub.stats.data_received);
    assert_eq!(sub.stats.data_received, 20_000, "acknowledged but not delivered");
    assert_eq!(sub.stats.data_lost, 0);
}

#[test]
fn data_racing_ahead_of_discovery_is_not_lost() {
    // The writer's participant learns of the reader first and writes at
    // once; the reader's participant learns of the writer only later (its
    // SEDP publication is held back). Everything written after the writer
    // matched must still arrive.
    use detpath_pubsub::wire::{EntityId, Message, Submessage};
    use std::cell::Cell;
    use std::rc::Rc;
    let mut net = Net::new(2);
    let hold = Rc::new(Cell::new(true));
    let h = hold.clone();
    net.drop = Box::new(move |from, _, bytes, _| {
        from == 0
            && h.get()
            && Message::parse(bytes)
                .is_ok_and(|m| m.submessages().any(|s| matches!(s, Ok(Submessage::Data(d)) if d.writer_id == EntityId::SEDP_PUBLICATIONS_WRITER)))
    });
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_all(100), &OneULong::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_all(100), &OneULong::default()).unwrap();
    net.run_until(2000, |n| n.nodes[0].writer_status(w).matched == 1).expect("writer matched");
    assert_eq!(net.nodes[1].reader_status(r).matched, 0, "the reader must not know the writer yet");
    for i in 0..50 {
        net.nodes[0].write(net.now, &mut net.outs[0], w, None, &OneULong { seq: i }).unwrap();
        net.deliver();
    }
    hold.set(false);
    net.run_until(3000, |n| n.nodes[1].reader_status(r).waiting == 50).expect("all 50 delivered");
    let mut rx = OneULong::default();
    for i in 0..50 {
        net.nodes[1].take(r, &mut rx).unwrap().unwrap();
        assert_eq!(rx.seq, i);
    }
    assert_eq!(net.nodes[0].writer_status(w).unacknowledged, 0);
}

#[test]
fn batched_writes_share_datagrams_and_stay_reliable_under_loss() {
    let mut net = Net::new(2);
    let w = net.nodes[0].create_writer_for("T", Qos::reliable_keep_all(1000), &KeyedSeq::with_size(32)).unwrap();
    let r = net.nodes[1].create_reader_for(0, "T", Qos::reliable_keep_all(1000), &KeyedSeq::with_size(32)).unwrap();
    net.run_until(2000, |n| matched(n, w, r)).expect("no match");
    let mut rng = Lcg(11);
    net.drop = Box::new(move |_, _, _, _| rng.next().is_multiple_of(10));
    let tx_before = net.nodes[0].counters().tx_datagrams;
    let mut s = KeyedSeq::with_size(32);
    let mut rx = KeyedSeq::default();
    let (mut next, mut got) = (1u32, Vec::new());
    for _ in 0..100_000 {
        for _ in 0..64 {
            if next > 20_000 {
                break;
            }
            s.seq = next;
            match net.nodes[0].write_batched(net.now, &mut net.outs[0], w, None, &s) {
                Ok(_) => next += 1,
                Err(WriteError::HistoryFull) => break,
                Err(e) => panic!("{e}"),
            }
        }
        net.nodes[0].flush(&mut net.outs[0], w);
        net.deliver();
        while net.nodes[1].take(r, &mut rx).unwrap().is_some() {
            got.push(rx.seq);
        }
        if got.len() == 20_000 {
            break;
        }
        net.step(50_000);
    }
    assert_eq!(got.len(), 20_000);
    assert!(got.iter().enumerate().all(|(i, &x)| x == i as u32 + 1), "in order");
    let sent = net.nodes[0].counters().tx_datagrams - tx_before;
    assert!(sent < 20_000 / 5, "{sent} datagrams for 20,000 batched samples");
}

#[test]
fn an_endpoint_past_the_limit_or_with_unbounded_keep_all_is_refused_and_those_made_before_still_match() {
    use detpath_pubsub::engine::EngineError;
    let mut net = Net::with_config(2, |_, c| c.builtin_depth = 4);
    let proto = OneULong::default();
    let mut unbounded = Qos::reliable_keep_all(1);
    unbounded.max_samples = 0;
    let e = net.nodes[0].create_writer_for("T0", unbounded.clone(), &proto).unwrap_err();
    assert!(matches!(e, EngineError::BadQos(_)), "{e}");
    let e = net.nodes[1].create_reader_for(0, "T0", unbounded, &proto).unwrap_err();
    assert!(matches!(e, EngineError::BadQos(_)), "{e}");
    // builtin_depth 4: four writers fit, the fifth is refused; readers count on their own.
    let ws: Vec<_> = (0..4).map(|i| net.nodes[0].create_writer_for(&format!("T{i}"), Qos::reliable_keep_all(4), &proto).unwrap()).collect();
    let e = net.nodes[0].create_writer_for("T4", Qos::reliable_keep_all(4), &proto).unwrap_err();
    assert!(matches!(e, EngineError::TooManyEntities(4)), "{e}");
    let r = net.nodes[1].create_reader_for(0, "T3", Qos::reliable_keep_all(4), &proto).unwrap();
    net.run_until(3000, |n| matched(n, ws[3], r)).expect("the writer made before the refusal matches its reader");
}

/// Whether an RTPS message carries a DATA_FRAG (submessage id 0x16).
fn has_data_frag(m: &[u8]) -> bool {
    let mut at = 20;
    while at + 4 <= m.len() {
        let (id, flags) = (m[at], m[at + 1]);
        let len = if flags & 1 != 0 { u16::from_le_bytes([m[at + 2], m[at + 3]]) } else { u16::from_be_bytes([m[at + 2], m[at + 3]]) } as usize;
        if id == 0x16 {
            return true;
        }
        at += 4 + len;
    }
    false
}

#[test]
fn a_reliable_writer_of_1_mib_samples_sends_a_window_of_fragments_at_a_time_and_loses_nothing() {
    use std::cell::Cell;
    use std::rc::Rc;
    for qos in [Qos::reliable_keep_last(4), Qos::reliable_keep_all(4)] {
        let mut net = Net::new(2);
        // The longest run of DATA_FRAG datagrams the writer sent without a
        // datagram from the reader in between (what a reader's ring must hold).
        let (run, longest) = (Rc::new(Cell::new(0u64)), Rc::new(Cell::new(0u64)));
        let (run2, longest2) = (run.clone(), longest.clone());
        let mut rng = Lcg(11);
        net.drop = Box::new(move |from, _, bytes, _| {
            if from == 1 {
                run2.set(0);
            } else if has_data_frag(bytes) {
                run2.set(run2.get() + 1);
                longest2.set(longest2.get().max(run2.get()));
            }
            rng.next().is_multiple_of(50)
        });
        let size = 1 << 20;
        let proto = KeyedSeq::with_size(size);
        let w = net.nodes[0].create_writer_for("Big", qos.clone(), &proto).unwrap();
        let r = net.nodes[1].create_reader_for(0, "Big", Qos::reliable_keep_all(8), &proto).unwrap();
        net.run_until(5000, |n| matched(n, w, r)).expect("no match");
        run.set(0);
        longest.set(0);
        let got = send_all(&mut net, w, r, 6, size);
        assert_eq!(got, (1..=6).collect::<Vec<_>>(), "{:?}", qos.history);
        let window = net.nodes[0].config().frag_window as u64;
        let (cw, cr) = (net.nodes[0].counters(), net.nodes[1].counters());
        assert!(cw.frag_window_waits >= 6 * 10, "{:?}: the writer never waited for a window: {cw:?}", qos.history);
        assert!(cr.frag_confirms_sent > 0, "{:?}: {cr:?}", qos.history);
        assert!(longest.get() <= 2 * window, "{:?}: {} fragments in a row without hearing from the reader (window {window})", qos.history, longest.get());
        assert_eq!(net.nodes[1].reader_status(r).lost, 0, "{:?}", qos.history);
        println!("{:?}: longest run {} fragments, writer {cw:?}", qos.history, longest.get());
    }
}

#[test]
fn a_late_transient_local_reader_does_not_count_what_the_keep_last_writer_no_longer_held_as_lost() {
    use detpath_pubsub::qos::Durability;
    // Unkeyed (one ring of 5) and keyed (5 per instance, two instances: the
    // holes between what each instance keeps go as GAPs).
    for keys in [1u32, 2] {
        let mut net = Net::new(2);
        let q = Qos { durability: Durability::TransientLocal, ..Qos::reliable_keep_last(5) };
        let proto = KeyedSeq::with_size(32);
        let w = net.nodes[0].create_writer_for("TL", q.clone(), &proto).unwrap();
        net.run_until(50, |_| false);
        for seq in 1..=40u32 {
            let now = net.now;
            let s = KeyedSeq { seq, keyval: if keys == 2 && seq % 4 == 0 { 1 } else { 0 }, ..KeyedSeq::with_size(32) };
            net.nodes[0].write(now, &mut net.outs[0], w, None, &s).unwrap();
        }
        let held: Vec<u32> = if keys == 1 { (36..=40).collect() } else { (1..=40).filter(|s| s % 4 != 0).skip(25).chain([24, 28, 32, 36, 40]).collect() };
        let now = net.now;
        let r = net.nodes[1].create_reader_for(now, "TL", q, &proto).unwrap();
        net.run_until(3000, |n| n.nodes[1].reader_status(r).waiting >= held.len()).expect("history replayed");
        net.run_until(300, |_| false);
        let mut rx = KeyedSeq::default();
        let mut got = Vec::new();
        while net.nodes[1].take(r, &mut rx).unwrap().is_some() {
            got.push(rx.seq);
        }
        got.sort();
        let mut want = held.clone();
        want.sort();
        assert_eq!(got, want, "{keys} instance(s): the history replayed");
        let st = net.nodes[1].reader_status(r);
        assert_eq!(st.lost, 0, "{keys} instance(s): samples gone before the reader matched counted lost");
        assert_eq!(net.nodes[1].counters().data_lost, 0, "{keys} instance(s)");
    }
}
