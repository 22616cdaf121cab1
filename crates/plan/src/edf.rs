//! Earliest-deadline-first placement of unit jobs on allowed time points.
//!
//! Jobs are instances with a window [release, deadline] of time points (slots from 0); a time point t
//! is allowed when `t mod ring` is in the allowed slot set. Each job takes one time point, no two jobs
//! the same. Walking the allowed points in order and giving each to the released job with the earliest
//! deadline finds a placement whenever one exists (the classic exchange argument for unit jobs), so a
//! failure here proves the windows cannot all be served.

use crate::slotset::SlotSet;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A unit job: one flow instance with its window of time points (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// Earliest time point.
    pub release: i64,
    /// Latest time point.
    pub deadline: i64,
}

/// Reusable buffers for [`place`].
#[derive(Debug, Default)]
pub struct Scratch {
    order: Vec<usize>,
    heap: BinaryHeap<Reverse<(i64, usize)>>,
}

/// Smallest allowed time point >= t, or None when no slot is allowed.
pub(crate) fn next_allowed(t: i64, ring: usize, allowed: &SlotSet) -> Option<i64> {
    let n = ring as i64;
    let r = t.rem_euclid(n);
    let base = t - r;
    match allowed.next_from(r as usize) {
        Some(s) if s < ring => Some(base + s as i64),
        _ => allowed.first().filter(|&s| s < ring).map(|s| base + n + s as i64),
    }
}

/// Places every job; `times[j]` gets job j's time point. Returns false when no placement exists.
pub fn place(jobs: &[Job], ring: usize, allowed: &SlotSet, scratch: &mut Scratch, times: &mut Vec<i64>) -> bool {
    times.clear();
    times.resize(jobs.len(), -1);
    if jobs.iter().any(|j| j.deadline < j.release) {
        return false;
    }
    let order = &mut scratch.order;
    order.clear();
    order.extend(0..jobs.len());
    order.sort_unstable_by_key(|&j| jobs[j].release);
    let heap = &mut scratch.heap;
    heap.clear();
    let mut next = 0;
    let mut t = i64::MIN;
    loop {
        if heap.is_empty() {
            if next == order.len() {
                return true;
            }
            t = t.max(jobs[order[next]].release);
        }
        t = match next_allowed(t, ring, allowed) {
            Some(x) => x,
            None => return false,
        };
        while next < order.len() && jobs[order[next]].release <= t {
            let j = order[next];
            heap.push(Reverse((jobs[j].deadline, j)));
            next += 1;
        }
        let Some(Reverse((deadline, j))) = heap.pop() else {
            // Unreachable by construction (t >= the next release), but never loop on it.
            return false;
        };
        if deadline < t {
            return false;
        }
        times[j] = t;
        t += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(r: i64, d: i64) -> Job {
        Job { release: r, deadline: d }
    }

    #[test]
    fn next_allowed_wraps_the_ring() {
        let a = SlotSet::from_slots([1, 3]);
        assert_eq!(next_allowed(0, 4, &a), Some(1));
        assert_eq!(next_allowed(2, 4, &a), Some(3));
        assert_eq!(next_allowed(4, 4, &a), Some(5));
        assert_eq!(next_allowed(8, 4, &a), Some(9));
        assert_eq!(next_allowed(0, 4, &SlotSet::EMPTY), None);
    }

    #[test]
    fn edf_serves_tight_job_first() {
        // Job 0 can go anywhere in 0..=3, job 1 only at 0: EDF must give 0 to job 1.
        let mut times = Vec::new();
        let ok = place(&[job(0, 3), job(0, 0)], 4, &SlotSet::full(4), &mut Scratch::default(), &mut times);
        assert!(ok);
        assert_eq!(times, vec![1, 0]);
    }

    #[test]
    fn edf_fails_on_overload_and_forbidden_slots() {
        let mut s = Scratch::default();
        let mut times = Vec::new();
        assert!(!place(&[job(0, 1), job(0, 1), job(1, 1)], 4, &SlotSet::full(4), &mut s, &mut times));
        // Only slot 2 allowed in a 4-ring: windows [0,1] and [4,5] contain no allowed point.
        assert!(!place(&[job(0, 1)], 4, &SlotSet::from_slots([2]), &mut s, &mut times));
        // Slot 2 allowed: [0,2] gets 2, [4,5] has no allowed point.
        assert!(!place(&[job(0, 2), job(4, 5)], 4, &SlotSet::from_slots([2]), &mut s, &mut times));
        assert!(place(&[job(0, 2), job(4, 5)], 4, &SlotSet::from_slots([2, 1]), &mut s, &mut times));
        assert_eq!(times, vec![1, 5]);
    }
}
