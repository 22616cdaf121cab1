//! Where the release error goes: the cost of a CLOCK_MONOTONIC read, how far
//! past a slot start the bench's spin leaves, and how long `Scheduler::poll`
//! works before it reads the release time stamp; then the same with
//! `Scheduler::poll_spin` (alternate slots, same run). No network: the sink
//! does nothing, so this is the scheduler's share alone.
//!
//! `cargo run --release -p detpath-sched --example release_path`

use detpath::monotonic_ns;
use detpath_sched::{ClassConfig, Mode, MonotonicSource, SchedConfig, Scheduler};

fn pct(v: &mut [u64]) -> String {
    v.sort_unstable();
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    format!("p50 {} p99 {} max {}", q(0.5), q(0.99), q(1.0))
}

fn main() {
    let n = 1_000_000;
    let t0 = monotonic_ns();
    let mut x = 0;
    for _ in 0..n {
        x ^= monotonic_ns();
    }
    println!("clock read: {:.1} ns each ({x:x})", (monotonic_ns() - t0) as f64 / n as f64);

    // The paper configuration's classes, one real-time packet per busy slot.
    let slots = 100;
    let mut cfg = SchedConfig::new(10_000, slots, 2);
    cfg.late_tolerance_ns = 5_000;
    cfg.classes = vec![
        ClassConfig::parse("ctl:rt:strict:5/10,7/25@256", slots, Mode::Strict).unwrap(),
        ClassConfig::parse("io:rt:strict:9/50,3@256", slots, Mode::Strict).unwrap(),
        ClassConfig::parse("bulk:be:10-11,16,18,20-21,26,28,36,38,40,46,48,50,60,66,68,70,76,78,86,88,90,96,98@256", slots, Mode::Strict).unwrap(),
    ];
    let mut s = Scheduler::new(&cfg, MonotonicSource { epoch_mono: 0 }, 0, monotonic_ns()).unwrap();
    let peer = "10.0.0.2:7".parse().unwrap();
    let payload = [0u8; 64];
    let (mut overshoot, mut preamble, mut total, mut spun) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // Independent of where the release time stamp is taken: a clock reading as the sink's first act.
    let (mut entry_old, mut entry_spin) = (Vec::new(), Vec::new());
    let end = monotonic_ns() + 4_000_000_000;
    let mut round = 0u64;
    while monotonic_ns() < end {
        round += 1;
        // Keep the ctl class fed 2 ms ahead, as the bench does.
        let now = monotonic_ns();
        let horizon = s.current_slot(now) + 200;
        let mut k = s.next_owned(0, s.current_slot(now) + 3).unwrap();
        while k < horizon {
            let _ = s.send_at(now, s.slot_time(k), 0, &payload, peer);
            k = s.next_owned(0, k + 1).unwrap();
        }
        let Some(slot) = s.next_busy_slot(4) else {
            s.poll(monotonic_ns(), monotonic_ns, |_| true);
            continue;
        };
        let at = s.slot_instant(slot);
        let mut t = monotonic_ns();
        // Both ways only for a busy slot 0-3 µs ahead (else a plain poll, not recorded).
        if at <= t || at - t > 3_000 {
            s.poll(t, monotonic_ns, |_| true);
            continue;
        }
        if round.is_multiple_of(2) {
            // The scheduler spins: lookup first, the spin's last reading is the hand-off's time stamp.
            let (mut rel, mut entry) = (0, 0);
            s.poll_spin(t, 3_000, monotonic_ns, |r| {
                entry = monotonic_ns();
                rel = r.release_ns.saturating_sub(r.scheduled_ns).max(1);
                true
            });
            if rel > 0 {
                spun.push(rel);
                entry_spin.push(entry.saturating_sub(at));
            }
            continue;
        }
        while t < at {
            std::hint::spin_loop();
            t = monotonic_ns();
        }
        let (mut rel, mut entry) = (0, 0);
        s.poll(t, monotonic_ns, |r| {
            entry = monotonic_ns();
            rel = r.release_ns;
            true
        });
        if rel > 0 {
            entry_old.push(entry - at);
            overshoot.push(t - at);
            preamble.push(rel - t);
            total.push(rel - at);
        }
    }
    println!("{} releases (caller spins, then poll)", total.len());
    println!("spin exit past the slot start (ns): {}", pct(&mut overshoot));
    println!("poll: entry to release time stamp (ns): {}", pct(&mut preamble));
    println!("release error, caller spins then poll (ns): {}", pct(&mut total));
    println!("release error, poll_spin (ns):             {} ({} releases)", pct(&mut spun), spun.len());
    println!("sink entered after the slot start, caller spins then poll (ns): {}", pct(&mut entry_old));
    println!("sink entered after the slot start, poll_spin (ns):             {}", pct(&mut entry_spin));
}
