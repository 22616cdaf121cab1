//! The hot-loop noise probe: each polling loop is a [`NoiseProbe`] that
//! records every iteration longer than a small bound (a *gap*: the thread
//! did not run its loop for that long), with the thread's involuntary
//! context switches and CPU time across it (read only when a gap is seen,
//! so the hot path pays one clock read per iteration). What the gaps mean
//! for a run's slow rounds is [`crate::tail`]'s job.

use detpath::sys::thread::{cpu_ns as thread_cpu_ns, involuntary_switches as thread_involuntary_switches};
use serde::{Deserialize, Serialize};

/// An iteration longer than this is a gap (ns). The paper's jitter budget is
/// microseconds; a poll loop iteration here takes ~50-200 ns.
pub const DEFAULT_GAP_BOUND_NS: u64 = 2_000;
/// Gaps kept per thread when the run's length is not known; more are counted, not kept.
pub const GAP_CAPACITY: usize = 1 << 16;

/// Gaps a loop sees per second of a run besides its rounds' own (the tick,
/// the sampler, other short interruptions): about 3,000 measured on this VM
/// at 1,000 rounds/s, with room.
pub const GAPS_PER_SECOND: u64 = 4_000;

/// The most gaps a probe keeps (40 bytes each: 640 MiB).
pub const GAP_CAPACITY_MAX: usize = 1 << 24;

/// Gaps to keep for a run of `rounds` rounds every `period_ns`. A round's
/// own send (and, on the server, its receive and echo) usually takes longer
/// than the gap bound: about 1.5 gaps per round at 10,000 rounds/s; the rest
/// come with time ([`GAPS_PER_SECOND`]). So two per round, plus the time's,
/// plus the default, up to [`GAP_CAPACITY_MAX`]. A run that kept only
/// [`GAP_CAPACITY`] filled it within its first ~45,000 rounds, and every
/// later slow round then had "no gap in either polling thread" for want of a
/// record, not of a gap.
pub fn gap_capacity(rounds: u64, period_ns: u64) -> usize {
    let seconds = (rounds as u128 * period_ns as u128 / 1_000_000_000) as u64;
    let gaps = rounds.saturating_mul(2).saturating_add(seconds.saturating_mul(GAPS_PER_SECOND)).saturating_add(GAP_CAPACITY as u64);
    gaps.min(GAP_CAPACITY_MAX as u64) as usize
}

/// A stretch when a polling thread did not run its loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    /// The last loop iteration before the gap, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// The first iteration after it, CLOCK_MONOTONIC ns.
    pub end_ns: u64,
    /// Involuntary context switches of the thread across the gap.
    pub involuntary_switches: u32,
    /// CPU time the guest kernel charged to the thread during the gap, when
    /// known (see [`NoiseProbe`]): about the whole gap when the core ran
    /// kernel code in or for the thread, about none when the time was stolen
    /// by the hypervisor (steal is not charged to tasks).
    pub charged_ns: Option<u64>,
}

impl Gap {
    /// How long the thread did not run its loop, ns.
    pub fn len_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

/// The user-space noise probe of one polling loop: call [`tick`](Self::tick)
/// once per iteration with the time just read. Allocation-free after `new`.
#[derive(Debug)]
pub struct NoiseProbe {
    bound_ns: u64,
    last_ns: u64,
    switches_seen: u64,
    /// The thread's CPU time and the wall time when it was last read (at the
    /// end of the previous gap); None after a deliberate sleep.
    cpu_seen: Option<(u64, u64)>,
    gaps: Vec<Gap>,
    /// Gaps not kept because the buffer was full.
    pub dropped: u64,
}

impl NoiseProbe {
    /// A probe of the calling thread (the one that will tick it), keeping up to [`GAP_CAPACITY`] gaps.
    pub fn new(bound_ns: u64) -> NoiseProbe {
        NoiseProbe::with_capacity(bound_ns, GAP_CAPACITY)
    }

    /// A probe keeping up to `capacity` gaps (see [`gap_capacity`]). The
    /// buffer is written once here, so that recording a gap in the loop
    /// never takes a page fault.
    pub fn with_capacity(bound_ns: u64, capacity: usize) -> NoiseProbe {
        let mut gaps = Vec::with_capacity(capacity);
        gaps.resize(capacity, Gap { start_ns: 1, ..Gap::default() });
        gaps.clear();
        NoiseProbe {
            bound_ns,
            last_ns: 0,
            switches_seen: thread_involuntary_switches(),
            cpu_seen: Some((thread_cpu_ns(), detpath::monotonic_ns())),
            gaps,
            dropped: 0,
        }
    }

    /// One loop iteration at `now_ns`.
    #[inline]
    pub fn tick(&mut self, now_ns: u64) {
        if self.last_ns != 0 && now_ns.saturating_sub(self.last_ns) > self.bound_ns {
            self.record(self.last_ns, now_ns);
        } else if self.cpu_seen.is_none() {
            self.resume(now_ns);
        }
        self.last_ns = now_ns;
    }

    /// Before a deliberate sleep: the time until the next tick is not a gap.
    pub fn pause(&mut self) {
        self.last_ns = 0;
        self.cpu_seen = None;
    }

    /// The first tick after a sleep: the thread's CPU time now, so that the
    /// next gap knows how much of it the thread was given (without it, every
    /// first gap after a wake-up, where a sleeping client's rounds begin,
    /// could only be "unexplained"). One system call per wake-up, in the
    /// slack before the send the client woke for.
    #[cold]
    fn resume(&mut self, now_ns: u64) {
        self.cpu_seen = Some((thread_cpu_ns(), now_ns));
    }

    /// Two system calls, only when a gap was seen: the switch count and the
    /// thread's CPU time. Between the previous reading and this gap's start
    /// the loop ran without a gap, so the thread was on its CPU all along and
    /// the CPU time it got during the gap is the rest.
    #[cold]
    fn record(&mut self, start_ns: u64, end_ns: u64) {
        let now = thread_involuntary_switches();
        let involuntary_switches = now.saturating_sub(self.switches_seen).min(u32::MAX as u64) as u32;
        self.switches_seen = now;
        let cpu = thread_cpu_ns();
        let charged_ns = self.cpu_seen.map(|(cpu0, wall0)| cpu.saturating_sub(cpu0).saturating_sub(start_ns.saturating_sub(wall0)).min(end_ns - start_ns));
        self.cpu_seen = Some((cpu, detpath::monotonic_ns()));
        if self.gaps.len() < self.gaps.capacity() {
            self.gaps.push(Gap { start_ns, end_ns, involuntary_switches, charged_ns });
        } else {
            self.dropped += 1;
        }
    }

    /// The gaps seen, in time order, and how many more were seen but not kept (the buffer was full).
    pub fn into_gaps(self) -> (Vec<Gap>, u64) {
        (self.gaps, self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_probe_records_only_long_iterations() {
        let mut p = NoiseProbe::new(2_000);
        for t in [1_000, 1_500, 2_000, 9_000, 9_100, 20_000] {
            p.tick(t);
        }
        p.pause();
        assert!(p.cpu_seen.is_none());
        p.tick(1_000_000); // after a deliberate sleep: not a gap
        assert!(p.cpu_seen.is_some(), "the first tick after a sleep reads the thread's CPU time again");
        p.tick(1_000_100);
        let gaps = p.into_gaps().0;
        assert_eq!(gaps.iter().map(|g| (g.start_ns, g.end_ns)).collect::<Vec<_>>(), [(2_000, 9_000), (9_100, 20_000)]);
    }

    #[test]
    fn a_full_probe_counts_the_gaps_it_cannot_keep() {
        let mut p = NoiseProbe::with_capacity(2_000, 3);
        for i in 1..=6u64 {
            p.tick(i * 10_000);
        }
        let (gaps, not_kept) = p.into_gaps();
        assert_eq!((gaps.len(), not_kept), (3, 2));
        // A run's probe keeps two gaps per round besides the default.
        // A run's probe keeps two gaps per round and 4,000 per second besides the default:
        // 1M rounds every 100 us (100 s), every 1 ms (1,000 s), and a week's worth, capped.
        assert_eq!(gap_capacity(1_000_000, 100_000), 2_000_000 + 400_000 + GAP_CAPACITY);
        assert_eq!(gap_capacity(1_000_000, 1_000_000), 2_000_000 + 4_000_000 + GAP_CAPACITY);
        assert_eq!(gap_capacity(0, 100_000), GAP_CAPACITY);
        assert_eq!(gap_capacity(u64::MAX, u64::MAX), GAP_CAPACITY_MAX);
    }

    #[test]
    fn a_real_sleep_of_this_thread_is_a_gap() {
        let mut p = NoiseProbe::new(DEFAULT_GAP_BOUND_NS);
        p.tick(detpath::monotonic_ns());
        std::thread::sleep(Duration::from_millis(3));
        p.tick(detpath::monotonic_ns());
        let g = p.into_gaps().0;
        assert_eq!(g.len(), 1);
        assert!(g[0].len_ns() >= 3_000_000);
    }

    #[test]
    fn a_probe_measures_the_cpu_time_its_thread_got_during_a_gap() {
        // A sleep is a gap the thread is not charged for; a busy spin is one it
        // is charged for in full (both without a deliberate `pause`). A spin
        // the scheduler preempted (another job on a loaded machine) is retried.
        for attempt in 0..20 {
            let mut p = NoiseProbe::new(DEFAULT_GAP_BOUND_NS);
            p.tick(detpath::monotonic_ns());
            std::thread::sleep(Duration::from_millis(5));
            p.tick(detpath::monotonic_ns());
            let t0 = detpath::monotonic_ns();
            while detpath::monotonic_ns() < t0 + 5_000_000 {
                std::hint::spin_loop();
            }
            p.tick(detpath::monotonic_ns());
            let gaps = p.into_gaps().0;
            assert_eq!(gaps.len(), 2, "{gaps:?}");
            let (slept, spun) = (gaps[0], gaps[1]);
            assert!(slept.charged_ns.unwrap() < slept.len_ns() / 4, "{slept:?}");
            // (A spin the hypervisor preempted is charged less, rightly: retried too.)
            if spun.involuntary_switches == 0 && spun.charged_ns.unwrap() > spun.len_ns() * 3 / 4 {
                return;
            }
            eprintln!("attempt {attempt}: spin preempted: {spun:?}");
        }
        panic!("no spin of 20 was charged to its thread: the charge is not measured");
    }
}
