//! Property tests of the pure core (no root, no datapath): slot arithmetic
//! and wrap, the insertion window, ownership, EDF order, strict versus
//! relaxed, the clock's count under adjustment, best-effort share, the servo.

use detpath_sched::clock::{MonotonicSource, SlotClock, TickSource};
use detpath_sched::servo::{ServoConfig, ServoState};
use detpath_sched::slot::{Placement, Ring, Window};
use detpath_sched::sync::{simulate, SimConfig};
use detpath_sched::{ClassConfig, ClassKind, Mode, Refusal, SchedConfig, Scheduler, SlotMask};
use proptest::prelude::*;
use std::net::SocketAddrV4;

fn peer() -> SocketAddrV4 {
    "10.77.0.2:7000".parse().unwrap()
}

/// 1 µs slots, ring of `n`, lead 2; class 0 real-time with `rt`, class 1 best effort with `be`.
fn config(n: u32, rt: &SlotMask, be: Option<&SlotMask>, mode: Mode, capacity: usize) -> SchedConfig {
    let mut cfg = SchedConfig::new(1_000, n, 2);
    cfg.max_payload = 64;
    cfg.late_tolerance_ns = 500;
    cfg.classes.push(ClassConfig { name: "rt".into(), kind: ClassKind::RealTime, mode, mask: rt.clone(), capacity });
    if let Some(be) = be {
        cfg.classes.push(ClassConfig { name: "be".into(), kind: ClassKind::BestEffort, mode, mask: be.clone(), capacity });
    }
    cfg
}

/// A ring length and a non-empty set of positions in it.
fn ring_and_mask() -> impl Strategy<Value = (u32, Vec<u32>)> {
    (3u32..64).prop_flat_map(|n| (Just(n), proptest::collection::vec(0..n, 1..(n as usize))))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn slot_arithmetic_round_trips_and_wraps(slot_ns in 1u64..1_000_000, slots in 1u32..100_000, s in 0u64..(1u64 << 40), k in 0u64..1_000_000) {
        let r = Ring { slot_ns, slots };
        let pos = r.position(s);
        prop_assert!(pos < slots);
        prop_assert_eq!(r.slot_at(r.cycle(s), pos), s);
        // One ring cycle later the position repeats.
        prop_assert_eq!(r.position(s + slots as u64), pos);
        let k = k % slot_ns;
        prop_assert_eq!(r.slot_containing(r.start_ns(s) + k), s);
        let ceil = r.slot_starting_at_or_after(r.start_ns(s) + k);
        prop_assert_eq!(ceil, if k == 0 { s } else { s + 1 });
    }

    #[test]
    fn window_partitions_every_slot(n in 1u32..1000, current in 0u64..1_000_000, lead_frac in 0.0f64..1.0, behind in 0u64..50, s in 0u64..1_002_000) {
        let r = Ring { slot_ns: 1_000, slots: n };
        let lead = ((n - 1) as f64 * lead_frac) as u32;
        let next_release = current.saturating_sub(behind) + 1;
        let w = Window::new(&r, current, lead, next_release);
        let expect = if s < (current + lead as u64).max(next_release) {
            Placement::Late
        } else if s < next_release + n as u64 {
            Placement::Ring
        } else {
            Placement::Prebuffer
        };
        prop_assert_eq!(w.place(s), expect);
        // The ring part never holds two slots with the same position.
        prop_assert!(w.end.saturating_sub(w.earliest) <= n as u64);
    }

    #[test]
    fn next_owned_is_the_first_owned_slot((n, positions) in ring_and_mask(), s in 0u64..1_000_000) {
        let m = SlotMask::from_positions(n, positions.iter().copied()).unwrap();
        let t = m.next_owned(s);
        prop_assert!(t >= s && t < s + n as u64);
        prop_assert!(m.contains((t % n as u64) as u32));
        for u in s..t {
            prop_assert!(!m.contains((u % n as u64) as u32));
        }
        prop_assert_eq!(SlotMask::parse(&m.to_text(), n).unwrap(), m);
    }

    #[test]
    fn mask_and_class_parsers_never_panic(text in ".{0,40}", n in 1u32..200) {
        let _ = SlotMask::parse(&text, n);
        let _ = ClassConfig::parse(&text, n, Mode::Strict);
    }

    #[test]
    fn ownership_is_enforced((n, positions) in ring_and_mask(), target in 0u64..10_000, relaxed in any::<bool>()) {
        let rt = SlotMask::from_positions(n, positions.iter().copied()).unwrap();
        let mode = if relaxed { Mode::Relaxed } else { Mode::Strict };
        let mut s = Scheduler::new(&config(n, &rt, None, mode, 64), MonotonicSource { epoch_mono: 0 }, 0, 0).unwrap();
        let slot = target + 10;
        let got = s.send_at(0, slot * 1_000, 0, b"x", peer());
        let owned = rt.contains((slot % n as u64) as u32);
        match (owned, mode, got) {
            (true, _, Ok(g)) => prop_assert_eq!(g.slot, slot),
            (false, Mode::Strict, Err(Refusal::SlotNotOwned { slot: sl, .. })) => prop_assert_eq!(sl, slot),
            (false, Mode::Relaxed, Ok(g)) => {
                prop_assert_eq!(g.slot, rt.next_owned(slot));
                prop_assert_eq!(s.counters(0).unwrap().moved, 1);
            }
            (o, m, g) => prop_assert!(false, "owned {} mode {:?} got {:?}", o, m, g),
        }
    }

    #[test]
    fn late_requests_follow_the_mode(n in 4u32..64, current in 100u64..10_000, ask_back in 0u64..6, relaxed in any::<bool>()) {
        // Class owns every slot, so only lateness matters.
        let rt = SlotMask::parse(&format!("0-{}", n - 1), n).unwrap();
        let mode = if relaxed { Mode::Relaxed } else { Mode::Strict };
        let mut s = Scheduler::new(&config(n, &rt, None, mode, 64), MonotonicSource { epoch_mono: 0 }, 0, current * 1_000).unwrap();
        let now = current * 1_000 + 10;
        let asked = current + 3 - ask_back.min(current + 3);
        let got = s.send_at(now, asked * 1_000, 0, b"x", peer());
        let earliest = current + 2; // lead 2
        if asked >= earliest {
            prop_assert_eq!(got.unwrap().slot, asked);
        } else if mode == Mode::Strict {
            let is_late = matches!(got, Err(Refusal::Late { by_ns, .. }) if by_ns >= (earliest - asked) * 1_000);
            prop_assert!(is_late, "{:?}", got);
            prop_assert_eq!(s.counters(0).unwrap().dropped, 1);
        } else {
            let g = got.unwrap();
            prop_assert_eq!(g.slot, earliest);
            prop_assert_eq!(g.asked, asked);
            prop_assert_eq!(s.counters(0).unwrap().moved, 1);
        }
    }

    #[test]
    fn edf_releases_in_slot_order_each_in_its_slot(n in 8u32..64, offsets in proptest::collection::vec(3u64..2_000, 1..60)) {
        let rt = SlotMask::parse(&format!("0-{}", n - 1), n).unwrap();
        let mut s = Scheduler::new(&config(n, &rt, None, Mode::Strict, 128), MonotonicSource { epoch_mono: 0 }, 0, 0).unwrap();
        let mut want: Vec<u64> = Vec::new();
        for (i, o) in offsets.iter().enumerate() {
            // Submitted in arbitrary order, many far beyond the ring (pre-buffered).
            let payload = (i as u32).to_be_bytes();
            match s.send_at(0, o * 1_000, 0, &payload, peer()) {
                Ok(g) => want.push(g.slot),
                Err(Refusal::SlotTaken { .. }) => {}
                Err(e) => prop_assert!(false, "{e}"),
            }
        }
        want.sort_unstable();
        let mut got = Vec::new();
        // Poll every slot exactly on time with a fake clock.
        for slot in 1..2_100u64 {
            let t = slot * 1_000;
            s.poll(t, || t + 50, |r| { got.push((r.slot, r.scheduled_ns, r.release_ns)); true });
        }
        let slots: Vec<u64> = got.iter().map(|g| g.0).collect();
        // EDF pre-buffered duplicates of a slot conflict at insertion and are dropped (strict):
        // what goes out is each distinct slot once, in order.
        let mut distinct = want.clone();
        distinct.dedup();
        prop_assert_eq!(&slots, &distinct);
        for (slot, sched, rel) in got {
            prop_assert_eq!(sched, slot * 1_000);
            prop_assert_eq!(rel - sched, 50);
        }
        let k = s.counters(0).unwrap();
        prop_assert_eq!(k.sent + k.dropped, want.len() as u64);
    }

    #[test]
    fn poll_spin_releases_each_slot_at_its_start(n in 8u32..64, offsets in proptest::collection::vec(3u64..2_000, 1..60), step in 1u64..40) {
        let rt = SlotMask::parse(&format!("0-{}", n - 1), n).unwrap();
        let mut s = Scheduler::new(&config(n, &rt, None, Mode::Strict, 128), MonotonicSource { epoch_mono: 0 }, 0, 0).unwrap();
        let mut want: Vec<u64> = Vec::new();
        for (i, o) in offsets.iter().enumerate() {
            match s.send_at(0, o * 1_000, 0, &(i as u32).to_be_bytes(), peer()) {
                Ok(g) => want.push(g.slot),
                Err(Refusal::SlotTaken { .. }) => {}
                Err(e) => prop_assert!(false, "{e}"),
            }
        }
        want.sort_unstable();
        want.dedup();
        // A fake clock that advances `step` ns per reading; an idle call moves it on half a slot.
        let clock = std::cell::Cell::new(0u64);
        let read = || { let t = clock.get(); clock.set(t + step); t };
        let mut got = Vec::new();
        while clock.get() < 2_100_000 {
            let now = clock.get();
            let sum = s.poll_spin(now, 3_000, read, |r| { got.push((r.slot, r.scheduled_ns, r.release_ns)); true });
            if sum.released == 0 {
                clock.set(clock.get() + 500);
            }
        }
        let slots: Vec<u64> = got.iter().map(|g| g.0).collect();
        prop_assert_eq!(&slots, &want);
        for (slot, sched, rel) in got {
            // Released by the reading that found its slot started: never early, less than one reading late.
            prop_assert_eq!(sched, slot * 1_000);
            prop_assert!(rel >= sched && rel - sched < step, "slot {} released {} ns after its start", slot, rel - sched);
        }
    }

    #[test]
    fn strict_never_lets_a_late_packet_out_and_relaxed_moves_it(
        n in 8u32..40, periods in proptest::collection::vec(0u64..6, 20..200), relaxed in any::<bool>(), stall_every in 3usize..20, stall in 1u64..30
    ) {
        let rt = SlotMask::parse(&format!("0/{}", 2), n - n % 2).unwrap();
        let n = n - n % 2;
        let mode = if relaxed { Mode::Relaxed } else { Mode::Strict };
        let mut cfg = config(n, &rt, None, mode, 512);
        cfg.late_tolerance_ns = 300;
        let mut s = Scheduler::new(&cfg, MonotonicSource { epoch_mono: 0 }, 0, 0).unwrap();
        let mut t = 10_000u64;
        let mut next = 20u64; // next even slot to fill
        let mut accepted = 0u64;
        let mut refused_late = 0u64;
        let mut released = Vec::new();
        for (i, gap) in periods.iter().enumerate() {
            // Keep a few packets ahead, one in every other owned (even) slot: half the class's capacity.
            while next * 1_000 < t + 8_000 {
                match s.send_at(t, next * 1_000, 0, b"p", peer()) {
                    Ok(_) => accepted += 1,
                    Err(Refusal::Late { .. }) => refused_late += 1,
                    Err(e) => prop_assert!(false, "{e}"),
                }
                next += 4;
            }
            // Sometimes the poll comes late (the thread was preempted).
            t += 1_000 + gap * 100 + if i % stall_every == 0 { stall * 1_000 } else { 0 };
            let now = t;
            s.poll(now, || now, |r| { released.push((r.slot, r.asked, r.scheduled_ns, r.release_ns)); true });
        }
        let k = s.counters(0).unwrap();
        for &(slot, asked, sched, rel) in &released {
            prop_assert!(rel - sched <= 300, "released {} ns late", rel - sched);
            prop_assert!(rt.contains((slot % n as u64) as u32));
            prop_assert!(slot >= asked);
            if mode == Mode::Strict {
                prop_assert_eq!(slot, asked, "strict moved a packet");
            }
        }
        // Every packet offered is sent, dropped (strict counts its late refusals as drops) or still held.
        prop_assert_eq!(k.accepted, accepted);
        prop_assert_eq!(k.sent + k.dropped + s.held(0).unwrap() as u64, accepted + refused_late);
        if mode == Mode::Strict {
            prop_assert_eq!(k.moved, 0);
        } else {
            prop_assert_eq!(k.dropped, 0);
            // Each late packet is moved; a moved packet may push later ones along (they count as moved too).
            prop_assert!(k.moved >= k.late);
        }
    }

    #[test]
    fn clock_adjustments_never_change_the_count(
        ops in proptest::collection::vec((0u8..3, -1_000_000i64..1_000_000, 0u64..1_000_000_000), 1..30),
        probes in proptest::collection::vec(0u64..2_000_000_000, 1..20)
    ) {
        let ring = Ring { slot_ns: 1_250, slots: 100 };
        let mut c = SlotClock::new(ring, 5_000_000);
        let counts: Vec<u64> = probes.iter().map(|&e| c.count(e)).collect();
        for (op, v, at) in ops {
            match op {
                0 => c.step(v),
                1 => {
                    let before = c.time_i128(at);
                    c.set_rate(at, v * 50);
                    // Continuous at the adjustment point.
                    prop_assert_eq!(c.time_i128(at), before);
                }
                _ => c.set_time(at, (v.unsigned_abs()) * 1000),
            }
            let after: Vec<u64> = probes.iter().map(|&e| c.count(e)).collect();
            prop_assert_eq!(&after, &counts);
            // Time → slot stays consistent: the slot starts at or after the time, the one before does not.
            let t = c.time_at(at).saturating_add(777);
            let s = c.slot_for_time(t);
            prop_assert!(c.time_i128(ring.start_ns(s)) >= t as i128);
            if s > 0 {
                prop_assert!(c.time_i128(ring.start_ns(s - 1)) < t as i128);
            }
        }
    }

    #[test]
    fn best_effort_gets_exactly_its_share_under_flood(n in 4u32..80, k_frac in 0.05f64..0.95, cycles in 2u64..20) {
        let k = ((n as f64 * k_frac) as u32).clamp(1, n - 1);
        let be = SlotMask::from_positions(n, 0..k).unwrap();
        let rt = SlotMask::from_positions(n, k..n).unwrap();
        let mut s = Scheduler::new(&config(n, &rt, Some(&be), Mode::Strict, 64), MonotonicSource { epoch_mono: 0 }, 0, 0).unwrap();
        let mut sent_be = 0u64;
        let slots = cycles * n as u64;
        for slot in 1..=slots {
            while s.send_be(1, b"flood", peer()).is_ok() {}
            let t = slot * 1_000;
            s.poll(t, || t, |r| { if r.kind == ClassKind::BestEffort { sent_be += 1; } true });
        }
        // Slots 1..=slots: count how many sit at owned positions.
        let owned = (1..=slots).filter(|s| (s % n as u64) < k as u64).count() as u64;
        prop_assert_eq!(sent_be, owned);
    }
}

/// Servo convergence: 37 µs offset and 50 ppm drift injected into an overlay
/// clock, exchanges every 125 ms over a 5 µs path with up to 200 ns of
/// time-stamp noise; several noise seeds.
#[test]
fn servo_converges_from_37us_and_50ppm() {
    for seed in 1..=8u64 {
        let cfg = SimConfig {
            offset_ns: 37_000,
            drift_ppb: 50_000,
            path_delay_ns: 5_000,
            noise_ns: 200,
            interval_ns: 125_000_000,
            duration_ns: 60_000_000_000,
            seed,
            servo: ServoConfig::linuxptp(0.125),
        };
        let r = simulate(&cfg);
        assert_eq!(r.samples[0].state, ServoState::Unlocked);
        assert!(r.samples.iter().any(|s| s.state == ServoState::Jump), "seed {seed}: the 37 µs offset must be stepped");
        let lock = r.time_to_lock_s.unwrap_or_else(|| panic!("seed {seed}: never locked: {:?}", &r.samples[..10]));
        assert!(lock < 30.0, "seed {seed}: locked only after {lock} s");
        assert!(r.residual_p99_ns.unwrap() < 500, "seed {seed}: residual {:?}", r.residual_p99_ns);
        assert!((r.final_drift_ppb - 50_000.0).abs() < 500.0, "seed {seed}: drift estimate {}", r.final_drift_ppb);
    }
}

/// The servo must not "converge" when the clock it steers is not the one
/// measured: with the correction thrown away, the offset keeps growing.
#[test]
fn an_unsteered_clock_drifts_away() {
    let src = detpath_sched::OverlaySource { epoch_mono: 0, offset_ns: 37_000, drift_ppb: 50_000 };
    let c = SlotClock::new(Ring { slot_ns: 1_000, slots: 10 }, 0);
    let err = |m: u64| c.time_at(src.elapsed_ns(m)) as i64 - m as i64;
    assert_eq!(err(0), 37_000);
    assert_eq!(err(10_000_000_000), 37_000 + 500_000);
}
