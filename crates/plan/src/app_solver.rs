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

#[derive(Debug, Clone, Copy)]
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
    cache: HashMap<SlotSet, Option<Rc<AppSchedule>>>,
    /// Slot sets recently found infeasible (an infeasible superset proves a subset infeasible).
    recent_infeasible: Vec<SlotSet>,
    /// Recent schedules (a schedule using only allowed slots proves a set feasible).
    recent_feasible: Vec<Rc<AppSchedule>>,
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
            cache: HashMap::new(),
            recent_infeasible: Vec::new(),
            recent_feasible: Vec::new(),
            scratch: edf::Scratch::default(),
            jobs: Vec::new(),
            times: Vec::new(),
            reach,
        }
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

    /// A schedule using only slots in `allowed`, None when none exists (proven).
    pub fn solve(&mut self, allowed: SlotSet, clock: &mut Clock) -> Result<Option<Rc<AppSchedule>>, TimedOut> {
        let allowed = allowed.and(self.reach);
        if let Some(hit) = self.cache.get(&allowed) {
            return Ok(hit.clone());
        }
        if let Some(s) = self.recent_feasible.iter().find(|s| s.used.is_subset(&allowed)) {
            let s = s.clone();
            self.cache.insert(allowed, Some(s.clone()));
            return Ok(Some(s));
        }
        if self.recent_infeasible.iter().any(|x| allowed.is_subset(x)) {
            self.cache.insert(allowed, None);
            return Ok(None);
        }
        let found = self.branch_and_bound(allowed, clock)?.map(Rc::new);
        match &found {
            Some(s) => push_recent(&mut self.recent_feasible, s.clone()),
            None => push_recent(&mut self.recent_infeasible, allowed),
        }
        self.cache.insert(allowed, found.clone());
        Ok(found)
    }

    fn branch_and_bound(&mut self, allowed: SlotSet, clock: &mut Clock) -> Result<Option<AppSchedule>, TimedOut> {
        if self.flows.is_empty() {
            return Ok(Some(AppSchedule { times: Vec::new(), used: SlotSet::EMPTY, use_count: vec![0; self.ring] }));
        }
        let root: Vec<(i64, i64)> = self.flows.iter().map(|f| (-f.jitter, f.period - 1)).collect();
        let mut stack = vec![root];
        while let Some(ranges) = stack.pop() {
            clock.tick()?;
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
                return Ok(Some(self.schedule_from_times()));
            };
            let (lo, hi) = ranges[i];
            let c = (dmin + dmax - self.flows[i].jitter - 1).div_euclid(2).clamp(lo, hi - 1);
            let mut upper = ranges.clone();
            upper[i] = (c + 1, hi);
            let mut lower = ranges;
            lower[i] = (lo, c);
            stack.push(upper);
            stack.push(lower);
        }
        Ok(None)
    }

    /// EDF on the union windows of the offset ranges; the placement is left in `self.times`.
    fn relaxed(&mut self, ranges: &[(i64, i64)], allowed: SlotSet) -> bool {
        self.jobs.clear();
        for (f, &(lo, hi)) in self.flows.iter().zip(ranges) {
            for k in 0..f.count {
                let base = k * f.period;
                self.jobs.push(Job {
                    release: (base + lo).max(0),
                    deadline: (base + hi + f.jitter).min(self.hyper - 1),
                });
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
