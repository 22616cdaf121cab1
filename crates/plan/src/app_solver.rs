//! One application alone: can its flows be scheduled on a given set of ring slots, and how?
//!
//! A flow's instance k sends at `k*period + d_k`. The jitter bound says all d_k lie in a window
//! `[m, m + J]` for some base offset m, and m lies in `[-J, period - 1]` (instance 0 cannot send before
//! 0, the last one not at or after the hyperperiod). For a fixed m per flow, every instance has a
//! window of time points and EDF ([`crate::edf`]) decides exactly whether distinct allowed points exist.
//!
//! With a *range* of m per flow, the union window `[k*period + lo, k*period + hi + J]` relaxes the
//! problem: EDF failing proves the whole range box infeasible; EDF succeeding with every flow's
//! deviations within its bound is a schedule. Otherwise a flow whose deviations span
//! `[dmin, dmax]` with `dmax - dmin > J` has its range split at c in `[dmin, dmax - J - 1]`, so both
//! halves exclude the current relaxed answer (m <= c forces the instance at dmax to move; m > c the one
//! at dmin). Branch and bound over these boxes is exact: boxes shrink to single offsets, where the
//! relaxation is the problem itself.

use crate::clock::{Clock, TimedOut};
use crate::edf::{self, Job};
use crate::problem::Problem;
use crate::slotset::SlotHash;
use crate::slotset::SlotSet;
use std::collections::HashMap;
use std::rc::Rc;

/// Send times (time points, in slots) of one application: `times[i][k]` for its i-th flow, instance k.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSchedule {
    /// Per flow (in the application's flow order), per instance.
    pub times: Vec<Vec<i64>>,
    /// Ring slots the schedule uses.
    pub used: SlotSet,
    /// How many time points use each slot (index = slot).
    pub use_count: Vec<u32>,
}

/// Answer of a budgeted check.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// A schedule on the allowed slots.
    Feasible(Rc<AppSchedule>),
    /// Proven: none exists.
    Infeasible,
    /// The budget ran out first.
    Undecided,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FlowShape {
    period: i64,
    jitter: i64,
    count: i64,
}

/// Cached, exact feasibility of one application on slot sets.
#[derive(Debug)]
pub struct AppSolver {
    ring: usize,
    hyper: i64,
    flows: Vec<FlowShape>,
    cache: HashMap<SlotSet, Option<Rc<AppSchedule>>, SlotHash>,
    /// Slot sets recently found infeasible (an infeasible superset proves a subset infeasible).
    recent_infeasible: Vec<SlotSet>,
    /// Recent schedules (a schedule using only allowed slots proves a set feasible).
    recent_feasible: Vec<Rc<AppSchedule>>,
    /// Largest budget a set was left undecided with.
    undecided: HashMap<SlotSet, u64, SlotHash>,
    /// Pairs (a, b) of consecutive identical flows: their offsets are taken in order.
    twins: Vec<(usize, usize)>,
    scratch: edf::Scratch,
    jobs: Vec<Job>,
    times: Vec<i64>,
    /// Slots any instance of the application could ever use.
    pub reach: SlotSet,
}

const RECENT: usize = 24;

impl AppSolver {
    /// The solver for application `app` of `problem`.
    pub fn new(problem: &Problem, app: usize) -> AppSolver {
        let flows: Vec<FlowShape> = problem.apps[app]
            .flows
            .iter()
            .map(|&f| {
                let f = &problem.flows[f];
                FlowShape { period: f.period, jitter: f.jitter, count: f.count }
            })
            .collect();
        let twins: Vec<(usize, usize)> = (0..flows.len()).filter_map(|b| (0..b).rev().find(|&a| flows[a] == flows[b]).map(|a| (a, b))).collect();
        let mut reach = SlotSet::EMPTY;
        let n = problem.ring as i64;
        'flows: for f in &flows {
            for k in 0..f.count {
                let lo = (k * f.period - f.jitter).max(0);
                let hi = (k * f.period + f.period - 1 + f.jitter).min(problem.hyper - 1);
                if hi - lo + 1 >= n {
                    reach = SlotSet::full(problem.ring);
                    break 'flows;
                }
                for t in lo..=hi {
                    reach.insert(t.rem_euclid(n) as usize);
                }
            }
        }
        AppSolver {
            ring: problem.ring,
            hyper: problem.hyper,
            flows,
            cache: HashMap::default(),
            recent_infeasible: Vec::new(),
            recent_feasible: Vec::new(),
            undecided: HashMap::default(),
            twins,
            scratch: edf::Scratch::default(),
            jobs: Vec::new(),
            times: Vec::new(),
            reach,
        }
    }

    /// The flows as [`crate::need`] sees them.
    pub fn shapes(&self) -> Vec<crate::need::Shape> {
        self.flows.iter().map(|f| crate::need::Shape { period: f.period, jitter: f.jitter, count: f.count }).collect()
    }

    /// Ring slots and hyperperiod (slots).
    pub(crate) fn dims(&self) -> (usize, i64) {
        (self.ring, self.hyper)
    }

    /// Number of flow instances in one hyperperiod.
    pub fn instances(&self) -> i64 {
        self.flows.iter().map(|f| f.count).sum()
    }

    /// Whether the application has no flows.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Lower bound on the slots any schedule uses, by counting: each slot offers at most
    /// ceil(hyperperiod / ring) time points.
    pub fn count_bound(&self) -> usize {
        let per_slot = (self.hyper + self.ring as i64 - 1) / self.ring as i64;
        ((self.instances() + per_slot - 1) / per_slot) as usize
    }

    /// Lower bound on the slots any schedule uses: the larger of [`Self::count_bound`] and, per flow,
    /// the fewest slots that meet every instance's window (see [`flow_slot_bound`]).
    pub fn slot_bound(&self) -> usize {
        self.flows.iter().map(|f| flow_slot_bound(f.period, f.jitter, f.count, self.ring)).max().unwrap_or(0).max(self.count_bound())
    }

    /// A schedule using only slots in `allowed`, None when none exists (proven).
    pub fn solve(&mut self, allowed: SlotSet, clock: &mut Clock) -> Result<Option<Rc<AppSchedule>>, TimedOut> {
        match self.check(allowed, None, clock)? {
            Verdict::Feasible(s) => Ok(Some(s)),
            Verdict::Infeasible => Ok(None),
            // Without a budget the branch and bound always finishes.
            Verdict::Undecided => Err(TimedOut),
        }
    }

    /// Like [`Self::solve`], but gives up (Undecided) after `budget` branch-and-bound nodes.
    pub fn check(&mut self, allowed: SlotSet, budget: Option<u64>, clock: &mut Clock) -> Result<Verdict, TimedOut> {
        let allowed = allowed.and(self.reach);
        if let Some(hit) = self.cache.get(&allowed) {
            return Ok(hit.clone().map_or(Verdict::Infeasible, Verdict::Feasible));
        }
        if let Some(s) = self.recent_feasible.iter().find(|s| s.used.is_subset(&allowed)) {
            let s = s.clone();
            self.cache.insert(allowed, Some(s.clone()));
            return Ok(Verdict::Feasible(s));
        }
        if self.recent_infeasible.iter().any(|x| allowed.is_subset(x)) {
            self.cache.insert(allowed, None);
            return Ok(Verdict::Infeasible);
        }
        if let (Some(b), Some(&tried)) = (budget, self.undecided.get(&allowed)) {
            if b <= tried {
                return Ok(Verdict::Undecided);
            }
        }
        let found = match self.branch_and_bound(allowed, budget, clock)? {
            Some(found) => found.map(Rc::new),
            None => {
                let b = budget.unwrap_or(u64::MAX);
                let e = self.undecided.entry(allowed).or_insert(0);
                *e = (*e).max(b);
                return Ok(Verdict::Undecided);
            }
        };
        match &found {
            Some(s) => push_recent(&mut self.recent_feasible, s.clone()),
            None => push_recent(&mut self.recent_infeasible, allowed),
        }
        self.cache.insert(allowed, found.clone());
        Ok(found.map_or(Verdict::Infeasible, Verdict::Feasible))
    }

    /// Offsets m in [-J, period - 1] for which each instance of flow f alone finds an allowed point in
    /// its window (a necessary condition, so other offsets need no search).
    ///
    /// An unclipped window [t, t + J] holds an allowed point when the gap from slot t mod ring to the
    /// next allowed slot is at most J, which depends on m only modulo the ring; windows cut at 0 or at
    /// the hyperperiod (the first and last instances) are checked one by one.
    fn offsets(&self, f: &FlowShape, allowed: &SlotSet) -> Vec<i64> {
        let n = self.ring;
        let Some(first) = allowed.first().filter(|&s| s < n) else {
            return Vec::new();
        };
        // gap[r]: slots from r to the next allowed slot (cyclic).
        let mut gap = vec![0i64; n];
        let mut next = first + n;
        for r in (0..n).rev() {
            if allowed.contains(r) {
                next = r;
            }
            gap[r] = (next - r) as i64;
        }
        let mut starts: Vec<usize> = (0..f.count.min(n as i64)).map(|k| (k * f.period).rem_euclid(n as i64) as usize).collect();
        starts.sort_unstable();
        starts.dedup();
        let ok_mod: Vec<bool> = (0..n).map(|m| starts.iter().all(|&s| gap[(s + m) % n] <= f.jitter)).collect();
        let window_ok = |k: i64, m: i64| {
            let lo = (k * f.period + m).max(0);
            let hi = (k * f.period + m + f.jitter).min(self.hyper - 1);
            lo <= hi && edf::next_allowed(lo, n, allowed).is_some_and(|t| t <= hi)
        };
        (-f.jitter..f.period)
            .filter(|&m| {
                if !ok_mod[m.rem_euclid(n as i64) as usize] {
                    return false;
                }
                // Clipped windows: instance 0 before time 0, the last ones past the hyperperiod.
                if m < 0 && !window_ok(0, m) {
                    return false;
                }
                let mut k = f.count - 1;
                while k >= 0 && k * f.period + m + f.jitter > self.hyper - 1 {
                    if !window_ok(k, m) {
                        return false;
                    }
                    k -= 1;
                }
                true
            })
            .collect()
    }

    /// Some(Some(schedule)), Some(None) when proven infeasible, None when the budget ran out.
    fn branch_and_bound(&mut self, allowed: SlotSet, budget: Option<u64>, clock: &mut Clock) -> Result<Option<Option<AppSchedule>>, TimedOut> {
        if self.flows.is_empty() {
            let empty = AppSchedule { times: Vec::new(), used: SlotSet::EMPTY, use_count: vec![0; self.ring] };
            return Ok(Some(Some(empty)));
        }
        let domains: Vec<Vec<i64>> = self.flows.iter().map(|f| self.offsets(f, &allowed)).collect();
        if domains.iter().any(Vec::is_empty) {
            return Ok(Some(None));
        }
        // A box: per flow an index range [lo, hi] into its domain.
        let root: Vec<(usize, usize)> = domains.iter().map(|d| (0, d.len() - 1)).collect();
        let mut stack = vec![root];
        let mut nodes = 0u64;
        while let Some(mut bx) = stack.pop() {
            clock.tick()?;
            nodes += 1;
            if budget.is_some_and(|b| nodes > b) {
                return Ok(None);
            }
            if !self.order_twins(&mut bx) {
                continue;
            }
            let ranges: Vec<(i64, i64)> = bx.iter().zip(&domains).map(|(&(lo, hi), d)| (d[lo], d[hi])).collect();
            if !self.relaxed(&ranges, allowed) {
                continue;
            }
            // Worst jitter violation of the relaxed placement.
            let mut worst: Option<(i64, usize, i64, i64)> = None;
            let mut at = 0;
            for (i, f) in self.flows.iter().enumerate() {
                let (mut dmin, mut dmax) = (i64::MAX, i64::MIN);
                for k in 0..f.count {
                    let d = self.times[at + k as usize] - k * f.period;
                    dmin = dmin.min(d);
                    dmax = dmax.max(d);
                }
                at += f.count as usize;
                let excess = dmax - dmin - f.jitter;
                if excess > 0 && !matches!(worst, Some(w) if w.0 >= excess) {
                    worst = Some((excess, i, dmin, dmax));
                }
            }
            let Some((_, i, dmin, dmax)) = worst else {
                return Ok(Some(Some(self.schedule_from_times())));
            };
            // Split flow i's offsets at c in [dmin, dmax - J - 1] (both halves exclude this placement),
            // as near the middle of its remaining offsets as that allows.
            let (lo, hi) = bx[i];
            let d = &domains[i];
            let c = d[(lo + hi) / 2].clamp(dmin, dmax - self.flows[i].jitter - 1);
            let cut = lo + d[lo..=hi].partition_point(|&m| m <= c);
            if cut == lo || cut > hi {
                // Cannot happen (dmin >= d[lo] and dmax <= d[hi] + J); never loop on it.
                return Err(TimedOut);
            }
            let mut upper = bx.clone();
            upper[i] = (cut, hi);
            bx[i] = (lo, cut - 1);
            stack.push(upper);
            stack.push(bx);
        }
        Ok(Some(None))
    }

    /// Identical flows (same period and jitter) are interchangeable, so their offsets can be taken in
    /// order (m of twin j <= m of twin j+1); narrows the box accordingly, false if it becomes empty.
    fn order_twins(&self, bx: &mut [(usize, usize)]) -> bool {
        for &(a, b) in &self.twins {
            bx[b].0 = bx[b].0.max(bx[a].0);
        }
        for &(a, b) in self.twins.iter().rev() {
            bx[a].1 = bx[a].1.min(bx[b].1);
        }
        bx.iter().all(|&(lo, hi)| lo <= hi)
    }

    /// EDF on the union windows of the offset ranges; the placement is left in `self.times`.
    fn relaxed(&mut self, ranges: &[(i64, i64)], allowed: SlotSet) -> bool {
        self.jobs.clear();
        for (f, &(lo, hi)) in self.flows.iter().zip(ranges) {
            for k in 0..f.count {
                let base = k * f.period;
                self.jobs.push(Job { release: (base + lo).max(0), deadline: (base + hi + f.jitter).min(self.hyper - 1) });
            }
        }
        edf::place(&self.jobs, self.ring, &allowed, &mut self.scratch, &mut self.times)
    }

    fn schedule_from_times(&self) -> AppSchedule {
        let mut times = Vec::with_capacity(self.flows.len());
        let mut used = SlotSet::EMPTY;
        let mut use_count = vec![0u32; self.ring];
        let mut at = 0;
        for f in &self.flows {
            let ts: Vec<i64> = self.times[at..at + f.count as usize].to_vec();
            for &t in &ts {
                let s = t.rem_euclid(self.ring as i64) as usize;
                used.insert(s);
                use_count[s] += 1;
            }
            at += f.count as usize;
            times.push(ts);
        }
        AppSchedule { times, used, use_count }
    }
}

/// Fewest ring slots one flow can use, whatever the other flows do.
///
/// Instance k sends in `[k*period + m, k*period + m + jitter]`, i.e. in a circular arc of ring slots
/// starting at `(k*period + m) mod ring`. The slots used must pierce every arc. The pattern depends on
/// m only modulo the ring, and cutting windows at 0 and the hyperperiod only makes arcs shorter (more
/// slots), so the minimum over m in 0..ring of the arcs' piercing number is a lower bound. The
/// piercing number of circular arcs: some optimal set contains the end of an arc; fixing that point
/// leaves intervals on a line, pierced optimally by the greedy "earliest end first".
pub fn flow_slot_bound(period: i64, jitter: i64, count: i64, ring: usize) -> usize {
    let n = ring as i64;
    let len = (jitter + 1).min(n);
    if len == n || count == 0 {
        return usize::from(count > 0);
    }
    let mut best = usize::MAX;
    // Arc starts for m = 0; other m rotate them, so only the set of distinct starts matters.
    let mut starts: Vec<i64> = (0..count.min(n)).map(|k| (k * period).rem_euclid(n)).collect();
    // Instances k and k + ring have the same start: ring instances cover every pattern.
    starts.sort_unstable();
    starts.dedup();
    // Rotation by m does not change the piercing number of the arcs on the circle, so m = 0 suffices
    // for the circular problem.
    let mut intervals: Vec<(i64, i64)> = Vec::with_capacity(starts.len());
    for &first in &starts {
        // Fix a point at the end of the arc starting at `first`.
        let p = first + len - 1;
        intervals.clear();
        for &s in &starts {
            // Arc [s, s + len - 1] mod n contains p?
            let off = (p - s).rem_euclid(n);
            if off < len {
                continue;
            }
            // Unwrap onto the line (p, p + n): start after p.
            let a = p + 1 + (s - p - 1).rem_euclid(n);
            intervals.push((a, a + len - 1));
        }
        intervals.sort_unstable_by_key(|&(_, e)| e);
        let mut count_points = 1;
        let mut last = i64::MIN;
        for &(a, e) in &intervals {
            if a > last {
                count_points += 1;
                last = e;
            }
        }
        best = best.min(count_points);
    }
    best
}

fn push_recent<T>(v: &mut Vec<T>, x: T) {
    if v.len() == RECENT {
        v.remove(0);
    }
    v.push(x);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

    fn problem(json: &str) -> Problem {
        Problem::new(&Spec::from_json(json).unwrap()).unwrap()
    }

    #[test]
    fn flow_slot_bound_counts_arcs() {
        // Period 40 slots on a 32 ring: starts 0, 8, 16, 24; jitter 6 (arcs of 7) never lets two
        // instances share a slot; jitter 8 (arcs of 9) lets neighbours share: 2 slots.
        assert_eq!(flow_slot_bound(40, 6, 4, 32), 4);
        assert_eq!(flow_slot_bound(40, 8, 4, 32), 2);
        // Period 32 (a whole ring): one slot serves every instance.
        assert_eq!(flow_slot_bound(32, 0, 5, 32), 1);
        // Period 8, jitter 1: starts 0, 8, 16, 24, arcs of 2: 4 slots.
        assert_eq!(flow_slot_bound(8, 1, 20, 32), 4);
        // Jitter covering the ring: 1.
        assert_eq!(flow_slot_bound(160, 40, 1, 32), 1);
    }

    #[test]
    fn strict_flow_needs_its_exact_slots() {
        // period 4 slots, jitter 0, ring 8, hyperperiod 4: one instance anywhere... two flows force more.
        let p = problem(
            r#"{"ring_slots": 8, "slot_ns": 1, "apps": [{"name": "a", "flows": [
            {"name": "f", "period_ns": 4, "jitter_ns": 0}, {"name": "g", "period_ns": 8, "jitter_ns": 0}]}]}"#,
        );
        let mut s = AppSolver::new(&p, 0);
        let mut clock = Clock::new(None);
        // f: instances at m and m+4 (same offset): slots {m, m+4}; g: one instance anywhere else.
        let sched = s.solve(SlotSet::from_slots([1, 5, 6]), &mut clock).unwrap().unwrap();
        assert_eq!(sched.times[0], vec![1, 5]);
        assert_eq!(sched.times[1], vec![6]);
        // {1, 6}: f cannot keep one offset.
        assert!(s.solve(SlotSet::from_slots([1, 6, 3]), &mut clock).unwrap().is_none());
    }

    #[test]
    fn jitter_lets_instances_move() {
        // Hyperperiod 8: f has instances released at 0 and 4, g one anywhere.
        let p = problem(
            r#"{"ring_slots": 8, "slot_ns": 1, "apps": [{"name": "a", "flows": [
            {"name": "f", "period_ns": 4, "jitter_ns": 1}, {"name": "g", "period_ns": 8, "jitter_ns": 8}]}]}"#,
        );
        let mut s = AppSolver::new(&p, 0);
        let mut clock = Clock::new(None);
        let allowed = SlotSet::from_slots([1, 3, 6]);
        let sched = s.solve(allowed, &mut clock).unwrap().unwrap();
        let f = &sched.times[0];
        let (d0, d1) = (f[0], f[1] - 4);
        assert!((d0 - d1).abs() <= 1, "{f:?}");
        let all = [f[0], f[1], sched.times[1][0]];
        assert!(all.iter().all(|&t| allowed.contains(t as usize) && (0..8).contains(&t)));
        assert!(all[0] != all[1] && all[1] != all[2] && all[0] != all[2]);
        // {0, 6, 7}: instance 0 can only send at 0 (it must send by 4), instance 1 then in 3..=5: none.
        assert!(s.solve(SlotSet::from_slots([0, 6, 7]), &mut clock).unwrap().is_none());
    }
}
