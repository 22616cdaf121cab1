//! A lower bound on the number of ring slots one application needs, whatever else is on the ring.
//!
//! Counting instances against the time points a slot offers is weak when a flow fills its slots: a
//! strict 80 µs flow on a 32-slot ring takes every time point of its 4 slots, so a second flow of the
//! same application needs slots of its own, though the count says 5 would do. The bound here counts per
//! *arc* of consecutive slots: the instances whose whole send window falls on slots of one arc must be
//! served by slots of that arc, each slot offering as many time points as it has in the hyperperiod.
//! Arcs that do not overlap need different slots, so the needs of disjoint arcs add up; the best set of
//! disjoint arcs is found by dynamic programming around the ring.
//!
//! Windows depend on the flows' base offsets m. Best-first branch and bound over boxes of offsets
//! (windows of a box are the unions over its offsets, so its bound holds for every offset in it) keeps
//! splitting the box with the lowest bound; at every moment the lowest bound in the queue is a valid
//! lower bound for the application, so a work budget only makes it weaker, never wrong.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A flow as the bound sees it (slot units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Period.
    pub period: i64,
    /// Jitter bound.
    pub jitter: i64,
    /// Instances in the hyperperiod.
    pub count: i64,
}

/// "Impossible": no schedule with offsets in the box.
const NEVER: usize = usize::MAX / 4;

/// Lower bound on the slots the flows need together, at most `upper` (a known achievable number);
/// `budget` boxes are examined at most.
pub fn slot_need(ring: usize, hyper: i64, flows: &[Shape], upper: usize, budget: u64) -> usize {
    if flows.is_empty() {
        return 0;
    }
    let ctx = Ctx::new(ring, hyper, flows);
    let root: Vec<(i64, i64)> = flows.iter().map(|f| (-f.jitter, f.period - 1)).collect();
    let mut queue = BinaryHeap::new();
    queue.push((Reverse(ctx.bound(&root)), root));
    let mut examined = 0u64;
    let mut leaf_min = NEVER;
    while let Some((Reverse(lb), bx)) = queue.pop() {
        if lb >= upper.min(leaf_min) {
            return upper.min(leaf_min).min(lb);
        }
        examined += 1;
        if examined > budget {
            return lb.min(upper).min(leaf_min);
        }
        // Split the flow with the most instance-offsets undecided.
        let Some(i) = (0..bx.len()).filter(|&i| bx[i].1 > bx[i].0).max_by_key(|&i| (bx[i].1 - bx[i].0) * flows[i].count.min(ctx.ring as i64)) else {
            leaf_min = leaf_min.min(lb);
            continue;
        };
        let (lo, hi) = bx[i];
        let mid = lo + (hi - lo) / 2;
        for half in [(lo, mid), (mid + 1, hi)] {
            let mut child = bx.clone();
            child[i] = half;
            let b = ctx.bound(&child);
            if b < NEVER {
                queue.push((Reverse(b), child));
            }
        }
    }
    upper.min(leaf_min)
}

struct Ctx<'a> {
    ring: usize,
    hyper: i64,
    flows: &'a [Shape],
    /// big_prefix[i]: slots among 0..i (indices taken mod ring, i up to 2 ring) with the extra time point.
    big_prefix: Vec<usize>,
}

impl<'a> Ctx<'a> {
    fn new(ring: usize, hyper: i64, flows: &'a [Shape]) -> Ctx<'a> {
        let rem = (hyper % ring as i64) as usize;
        let mut big_prefix = vec![0; 2 * ring + 1];
        for i in 0..2 * ring {
            big_prefix[i + 1] = big_prefix[i] + usize::from(i % ring < rem);
        }
        Ctx { ring, hyper, flows, big_prefix }
    }

    /// Fewest slots of the arc starting at `start` with `len` slots that offer `count` time points.
    /// Slots below `hyper mod ring` have one time point more than the others; take those first.
    fn slots_for(&self, start: usize, len: usize, count: i64) -> usize {
        if count == 0 {
            return 0;
        }
        let q = self.hyper / self.ring as i64;
        let big = (self.big_prefix[start + len] - self.big_prefix[start]) as i64;
        let k = if count <= big * (q + 1) {
            (count + q) / (q + 1)
        } else if q == 0 {
            return NEVER;
        } else {
            big + (count - big * (q + 1) + q - 1) / q
        };
        if k as usize > len {
            NEVER
        } else {
            k as usize
        }
    }

    /// Lower bound for every choice of offsets within the box.
    fn bound(&self, bx: &[(i64, i64)]) -> usize {
        let n = self.ring;
        // Instance windows (time points, inclusive) and their arcs of slots.
        let mut windows: Vec<(i64, i64, usize, usize)> = Vec::new();
        let mut pierce_max = 0;
        let mut arcs: Vec<(usize, usize)> = Vec::new();
        for (f, &(lo, hi)) in self.flows.iter().zip(bx) {
            arcs.clear();
            for k in 0..f.count {
                let a = (k * f.period + lo).max(0);
                let b = (k * f.period + hi + f.jitter).min(self.hyper - 1);
                if a > b {
                    return NEVER;
                }
                let arc = ((a % n as i64) as usize, ((b - a + 1) as usize).min(n));
                arcs.push(arc);
                windows.push((a, b, arc.0, arc.1));
            }
            pierce_max = pierce_max.max(pierce(&arcs, n));
        }
        // Ring cycles in the hyperperiod: a slot's time points are one per cycle.
        let cycles = (self.hyper + n as i64 - 1) / n as i64;
        let exact_points = cycles <= 64;
        // The (slot, cycle bit) of every time point of every window shorter than the ring.
        let mut points: Vec<(usize, u64)> = Vec::new();
        let mut first_point = Vec::with_capacity(windows.len() + 1);
        for &(a, b, _, len) in &windows {
            first_point.push(points.len());
            if exact_points && len < n {
                let (mut r, mut c) = ((a % n as i64) as usize, (a / n as i64) as u32);
                for _ in a..=b {
                    points.push((r, 1u64 << c));
                    r += 1;
                    if r == n {
                        r = 0;
                        c += 1;
                    }
                }
            }
        }
        first_point.push(points.len());
        // Per start, the arc lengths at which the need grows, with the need: (len, need).
        let mut steps: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
        let mut by_len: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
        let mut covered = vec![0u64; n];
        let mut hist = vec![0usize; 66];
        let top = (cycles as usize).min(64);
        for (s, st) in steps.iter_mut().enumerate() {
            by_len.iter_mut().for_each(Vec::clear);
            for (i, w) in windows.iter().enumerate() {
                let off = (w.2 + n - s) % n;
                if off + w.3 <= n {
                    by_len[off + w.3].push(i);
                }
            }
            covered.iter_mut().for_each(|c| *c = 0);
            hist.iter_mut().for_each(|h| *h = 0);
            let mut inside = 0i64;
            let mut last = 0;
            for (l, starting) in by_len.iter().enumerate().skip(1) {
                for &i in starting {
                    inside += 1;
                    for &(r, bit) in &points[first_point[i]..first_point[i + 1]] {
                        if covered[r] & bit == 0 {
                            let before = covered[r].count_ones() as usize;
                            covered[r] |= bit;
                            if before > 0 {
                                hist[before] -= 1;
                            }
                            hist[before + 1] += 1;
                        }
                    }
                }
                let v = if exact_points && l < n {
                    // Fewest slots of the arc whose time points inside the windows add up to `inside`:
                    // the slots with the most such points first.
                    let mut k = 0;
                    let mut rest = inside;
                    for u in (1..=top).rev() {
                        if rest <= 0 {
                            break;
                        }
                        let all = hist[u] as i64 * u as i64;
                        if all < rest {
                            k += hist[u];
                            rest -= all;
                        } else {
                            k += ((rest + u as i64 - 1) / u as i64) as usize;
                            rest = 0;
                        }
                    }
                    if rest > 0 {
                        NEVER
                    } else {
                        k
                    }
                } else {
                    self.slots_for(s, l, inside)
                };
                if v >= NEVER || v > l {
                    return NEVER;
                }
                if v > last {
                    st.push((l, v));
                    last = v;
                }
            }
        }
        // Best set of disjoint arcs: cut the ring before some slot, then a line DP (cutting before the
        // first slot of an arc of an optimal set loses nothing, so cuts at arc starts suffice).
        let mut best_total = 0;
        let mut best = vec![0usize; n + 1];
        for cut in 0..n {
            if steps[cut].is_empty() {
                continue;
            }
            best.iter_mut().for_each(|b| *b = 0);
            for j in 0..n {
                if j > 0 && best[j - 1] > best[j] {
                    best[j] = best[j - 1];
                }
                let s = if cut + j >= n { cut + j - n } else { cut + j };
                for &(l, v) in &steps[s] {
                    if j + l > n {
                        break;
                    }
                    if best[j] + v > best[j + l] {
                        best[j + l] = best[j] + v;
                    }
                }
            }
            best_total = best_total.max(best[n].max(best[n - 1]));
        }
        best_total.max(pierce_max)
    }
}

/// Fewest points of a ring of n that meet every arc (start, len): some optimal set holds the end of
/// an arc; fixing it leaves intervals on a line, met optimally by "earliest end first".
pub fn pierce(arcs: &[(usize, usize)], n: usize) -> usize {
    if arcs.is_empty() {
        return 0;
    }
    let n = n as i64;
    let mut best = usize::MAX;
    let mut intervals: Vec<(i64, i64)> = Vec::with_capacity(arcs.len());
    for &(s0, l0) in arcs {
        let p = s0 as i64 + l0 as i64 - 1;
        intervals.clear();
        for &(s, l) in arcs {
            let (s, l) = (s as i64, l as i64);
            if (p - s).rem_euclid(n) < l {
                continue;
            }
            let a = p + 1 + (s - p - 1).rem_euclid(n);
            intervals.push((a, a + l - 1));
        }
        intervals.sort_unstable_by_key(|&(_, e)| e);
        let mut points = 1;
        let mut last = i64::MIN;
        for &(a, e) in &intervals {
            if a > last {
                points += 1;
                last = e;
            }
        }
        best = best.min(points);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(period: i64, jitter: i64, hyper: i64) -> Shape {
        Shape { period, jitter, count: hyper / period }
    }

    #[test]
    fn lane_filling_flow_pushes_its_neighbour_out() {
        // Ring 32, hyperperiod 160: an 80 µs flow (8 slots, jitter 1) and a 400 µs flow (40 slots,
        // jitter 5) of one application need 8 slots (two per quarter of the ring), the count says 5.
        let flows = [shape(8, 1, 160), shape(40, 5, 160)];
        assert_eq!(slot_need(32, 160, &flows, 8, 100_000), 8);
        // Alone, the 80 µs flow needs its 4 slots.
        assert_eq!(slot_need(32, 160, &flows[..1], 4, 100_000), 4);
    }

    #[test]
    fn windows_limit_the_usable_time_points() {
        // Ring 32, hyperperiod 144: four 240 µs flows (24 slots) with jitter 1, 1, 4, 2 slots.
        // Each slot has 4-5 time points, but only those inside the flows' windows count: 8 slots.
        let flows = [shape(24, 1, 144), shape(24, 1, 144), shape(24, 4, 144), shape(24, 2, 144)];
        assert_eq!(slot_need(32, 144, &flows, 8, 100_000), 8);
    }

    #[test]
    fn bound_never_exceeds_the_known_answer() {
        let flows = [shape(8, 0, 16), shape(16, 3, 16)];
        assert!(slot_need(32, 16, &flows, 3, 10_000) <= 3);
    }

    #[test]
    fn piercing_of_arcs() {
        assert_eq!(pierce(&[(0, 2), (8, 2), (16, 2), (24, 2)], 32), 4);
        assert_eq!(pierce(&[(0, 9), (8, 9), (16, 9), (24, 9)], 32), 2);
        assert_eq!(pierce(&[(30, 4), (1, 1)], 32), 1);
    }
}
