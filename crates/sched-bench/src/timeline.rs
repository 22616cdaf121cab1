//! When a run sends: a warm-up, then the measured window, both cut into
//! segments (on for `on_ns`, off for `off_ns`). During the off part every
//! thread sleeps, so busy-polling SCHED_FIFO threads stay under the kernel's
//! real-time throttle (`kernel.sched_rt_runtime_us`, by default 950 ms per
//! second per CPU) instead of being stopped for 50 ms once a second.

/// The time plan of one run (CLOCK_MONOTONIC ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeline {
    /// First instant of the run (a ring-cycle boundary).
    pub start: u64,
    /// Figures count from here (after the warm-up).
    pub measure_from: u64,
    /// The run's end.
    pub end: u64,
    /// Sending part of each segment, ns.
    pub on_ns: u64,
    /// Pause of each segment, ns.
    pub off_ns: u64,
}

impl Timeline {
    /// Whether instant `t` falls in an "on" part (before `end`).
    pub fn active(&self, t: u64) -> bool {
        if t < self.start || t >= self.end {
            return false;
        }
        self.off_ns == 0 || (t - self.start) % (self.on_ns + self.off_ns) < self.on_ns
    }

    /// The start of the next "on" part at or after `t` (`end` when none is left).
    pub(crate) fn next_on(&self, t: u64) -> u64 {
        if t < self.start {
            return self.start;
        }
        if self.active(t) || t >= self.end {
            return t.min(self.end);
        }
        let cycle = self.on_ns + self.off_ns;
        (self.start + ((t - self.start) / cycle + 1) * cycle).min(self.end)
    }

    /// Whether the flood runs at `t`: on, and still on `margin_ns` later (so its queue drains before a pause).
    pub(crate) fn flood_active(&self, t: u64, margin_ns: u64) -> bool {
        self.active(t) && self.active(t + margin_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments() {
        let tl = Timeline { start: 1_000, measure_from: 1_500, end: 10_000, on_ns: 800, off_ns: 200 };
        assert!(!tl.active(999));
        assert!(tl.active(1_000) && tl.active(1_799));
        assert!(!tl.active(1_800) && !tl.active(1_999));
        assert!(tl.active(2_000));
        assert_eq!(tl.next_on(1_850), 2_000);
        assert_eq!(tl.next_on(1_500), 1_500);
        assert_eq!(tl.next_on(9_500), 9_500);
        assert_eq!(tl.next_on(9_900), 10_000);
        assert!(!tl.active(10_000));
        assert!(tl.flood_active(1_100, 100) && !tl.flood_active(1_750, 100));
    }
}
