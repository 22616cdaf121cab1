//! The exact search over partitions: which ring slots each application owns.
//!
//! Applications only interact through slot ownership (two applications never share a slot, so their
//! send times never collide), and an application that can be scheduled on a slot set can be scheduled on
//! any superset. So the search picks, application by application, a slot set that suffices for it
//! (checked exactly by [`AppSolver`]) among the slots still free, and moves on:
//!
//! - Sets are built by branching on a slot the application's current schedule uses: take it, or never
//!   take it. The first set that suffices on its own is the application's partition; supersets of it
//!   are never tried (they only take slots from the others). Every minimal sufficient set is reachable
//!   this way, so the search is complete.
//! - Bounds: each application needs at least `need` slots; the free slots must cover the sum of the
//!   needs of the applications still to place, and every one of them must still be schedulable on the
//!   free slots alone (forward checking). If the needs add up to more than the ring, no search is needed.
//! - Two phases: first with cheap needs (counting, and per flow the arcs its instances must hit) and a
//!   small node budget, which settles most flow sets in well under a millisecond; then with strong
//!   needs ([`need::slot_need`] and a minimum-slots search per application, exact where their budgets
//!   allow) and no budget but the time limit.
//! - Failure memo: the rest of the search from depth d with free slots F fails for every F' within F
//!   (fewer slots never help), so failures are kept per depth and looked up by subset. Only slots some
//!   remaining application can reach count in F: slots no one left can use are interchangeable, and
//!   sets that differ only in them are one case.
//! - Symmetry: applications with the same flows (same periods and jitter bounds) are interchangeable;
//!   their partitions are ordered by lowest slot.

use crate::app_solver::{AppSchedule, AppSolver, Verdict};
use crate::clock::{Clock, TimedOut};
use crate::need;
use crate::problem::Problem;
use crate::slotset::SlotSet;
use crate::spec::Reason;
use std::rc::Rc;

/// Result of the search.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Partition and schedule per application, in application order.
    Feasible(Vec<(SlotSet, Rc<AppSchedule>)>),
    /// Proven infeasible: the proof and a human explanation.
    Infeasible(Reason, String),
    /// The time limit came first.
    Unknown(String),
}

/// Offset boxes the arc bound ([`need::slot_need`]) may examine per application.
const NEED_BOXES: u64 = 3000;
/// Work budget (search nodes) of each application's minimum-slots branch and bound.
const NEED_BUDGET: u64 = 2000;
/// Branch-and-bound nodes a single check may take where an undecided answer is acceptable (dropping
/// a slot in the deletion filter, forward checking, the minimum-slots search).
const CHECK_BUDGET: u64 = 1000;
/// Failures kept per depth.
const MEMO_CAP: usize = 4096;

/// Runs the exact search with the given clock.
pub fn solve(problem: &Problem, quick_nodes: u64, clock: &mut Clock) -> Outcome {
    match Search::new(problem).run(quick_nodes, clock) {
        Ok(o) => o,
        Err(_) => Outcome::Unknown(format!("time limit reached after {} search nodes", clock.ticks())),
    }
}

/// Why a search stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The solver's time limit.
    Time,
    /// The phase's node budget.
    Budget,
}

impl From<TimedOut> for Stop {
    fn from(_: TimedOut) -> Stop {
        Stop::Time
    }
}

/// Partition-search nodes of phase 1 (cheap bounds) before phase 2 computes strong ones.
pub const QUICK_NODES: u64 = 300;

/// Search state. Lives for one solve.
struct Search<'p> {
    problem: &'p Problem,
    solvers: Vec<AppSolver>,
    /// Application index at each depth.
    order: Vec<usize>,
    /// Slots each application needs at least (by application index).
    need: Vec<usize>,
    /// need summed over depths d.. (by depth, one extra 0 at the end).
    need_from: Vec<usize>,
    /// Union of the reach of the applications at depths d.. (by depth, EMPTY at the end).
    reach_from: Vec<SlotSet>,
    /// The application at depth d has the same flows as the one at d - 1.
    same_as_prev: Vec<bool>,
    /// Failed (free slots ∩ reach, lowest-slot bound) per depth.
    failed: Vec<Vec<(SlotSet, usize)>>,
    /// Chosen partition per depth.
    chosen: Vec<SlotSet>,
    ring: SlotSet,
    /// Partition-search nodes so far in this phase, and the phase's limit.
    nodes: u64,
    node_limit: Option<u64>,
}

impl<'p> Search<'p> {
    fn new(problem: &'p Problem) -> Search<'p> {
        let solvers = (0..problem.apps.len()).map(|a| AppSolver::new(problem, a)).collect();
        Search {
            problem,
            solvers,
            order: Vec::new(),
            need: Vec::new(),
            need_from: Vec::new(),
            reach_from: Vec::new(),
            same_as_prev: Vec::new(),
            failed: Vec::new(),
            chosen: Vec::new(),
            ring: SlotSet::full(problem.ring),
            nodes: 0,
            node_limit: None,
        }
    }

    fn run(&mut self, quick_nodes: u64, clock: &mut Clock) -> Result<Outcome, TimedOut> {
        let napps = self.problem.apps.len();
        // Each application alone on the whole ring.
        for a in 0..napps {
            if self.solvers[a].solve(self.ring, clock)?.is_none() {
                return Ok(Outcome::Infeasible(
                    Reason::AppAlone,
                    format!("application {:?} cannot meet its jitter bounds even with all {} slots", self.problem.apps[a].name, self.problem.ring),
                ));
            }
        }
        // Phase 1: cheap per-application bounds and a short search, which settles most sets.
        self.need = (0..napps).map(|a| self.solvers[a].slot_bound()).collect();
        if let Some(proof) = self.size_bound() {
            return Ok(proof);
        }
        if quick_nodes > 0 {
            self.node_limit = Some(quick_nodes);
            match self.search(clock) {
                Ok(outcome) => return Ok(outcome),
                Err(Stop::Time) => return Err(TimedOut),
                Err(Stop::Budget) => {}
            }
        }
        // Phase 2: the applications' minimum slot counts (exact where the budgets allow, else strong
        // lower bounds), then the search to the end.
        for a in 0..napps {
            self.need[a] = self.min_slots(a, clock)?;
        }
        if let Some(proof) = self.size_bound() {
            return Ok(proof);
        }
        self.node_limit = None;
        match self.search(clock) {
            Ok(outcome) => Ok(outcome),
            Err(_) => Err(TimedOut),
        }
    }

    /// Infeasible when the applications' needs add up to more than the ring.
    fn size_bound(&self) -> Option<Outcome> {
        let total: usize = self.need.iter().sum();
        if total <= self.problem.ring {
            return None;
        }
        let parts: Vec<String> = (0..self.need.len()).map(|a| format!("{} needs {}", self.problem.apps[a].name, self.need[a])).collect();
        Some(Outcome::Infeasible(
            Reason::PartitionSizeBound,
            format!("partitions need at least {total} slots, the ring has {}: {}", self.problem.ring, parts.join(", ")),
        ))
    }

    /// The partition search with the current needs (from scratch: order, memo).
    fn search(&mut self, clock: &mut Clock) -> Result<Outcome, Stop> {
        let napps = self.problem.apps.len();
        self.nodes = 0;
        // Most demanding first; identical applications end up next to each other.
        let sig: Vec<Vec<(i64, i64)>> = (0..napps).map(|a| self.signature(a)).collect();
        let mut order: Vec<usize> = (0..napps).collect();
        order.sort_by(|&a, &b| (self.need[b], self.solvers[b].instances(), &sig[b]).cmp(&(self.need[a], self.solvers[a].instances(), &sig[a])));
        self.same_as_prev = (0..napps).map(|d| d > 0 && sig[order[d]] == sig[order[d - 1]]).collect();
        self.need_from = vec![0; napps + 1];
        self.reach_from = vec![SlotSet::EMPTY; napps + 1];
        for d in (0..napps).rev() {
            self.need_from[d] = self.need_from[d + 1] + self.need[order[d]];
            self.reach_from[d] = self.reach_from[d + 1].or(self.solvers[order[d]].reach);
        }
        self.order = order;
        self.failed = vec![Vec::new(); napps];
        self.chosen = vec![SlotSet::EMPTY; napps];
        if !self.place(0, self.ring, 0, clock)? {
            return Ok(Outcome::Infeasible(Reason::ExhaustiveSearch, "no assignment of disjoint partitions lets every application meet its bounds".into()));
        }
        let mut out = vec![(SlotSet::EMPTY, Rc::new(empty_schedule(self.problem.ring))); napps];
        for d in 0..napps {
            let a = self.order[d];
            let sched = self.solvers[a].solve(self.chosen[d], clock)?.ok_or(Stop::Time)?;
            out[a] = (sched.used, sched);
        }
        Ok(Outcome::Feasible(out))
    }

    /// Counts a search node; Err(Budget) past the node limit.
    fn node(&mut self, clock: &mut Clock) -> Result<(), Stop> {
        clock.tick()?;
        self.nodes += 1;
        if self.node_limit.is_some_and(|l| self.nodes > l) {
            return Err(Stop::Budget);
        }
        Ok(())
    }

    /// Flows of application a as sorted (period, jitter) pairs.
    fn signature(&self, a: usize) -> Vec<(i64, i64)> {
        let mut s: Vec<(i64, i64)> = self.problem.apps[a].flows.iter().map(|&f| (self.problem.flows[f].period, self.problem.flows[f].jitter)).collect();
        s.sort_unstable();
        s
    }

    /// Fewest slots application a can be scheduled on: branch and bound within a budget, else a lower
    /// bound ([`AppSolver::slot_bound`]); both are lower bounds, the first is exact.
    fn min_slots(&mut self, a: usize, clock: &mut Clock) -> Result<usize, TimedOut> {
        let mut lb = self.solvers[a].slot_bound();
        let order: Vec<usize> = (0..self.problem.ring).collect();
        let Some(first) = self.minimal(a, self.ring, SlotSet::EMPTY, &order, clock)? else {
            return Ok(usize::MAX);
        };
        let mut best = first.len();
        // A short search for a smaller set first (cheap when the counting bound is the answer), then the
        // arc bound, then the search again with it.
        for round in 0..2 {
            if best <= lb {
                return Ok(best);
            }
            let mut nodes = 0u64;
            let budget = if round == 0 { NEED_BUDGET / 8 } else { NEED_BUDGET };
            if self.min_slots_rec(a, SlotSet::EMPTY, SlotSet::EMPTY, lb, &mut best, &mut nodes, budget, clock)? {
                return Ok(best);
            }
            if round == 0 && best > lb {
                let (ring, hyper) = self.solvers[a].dims();
                lb = lb.max(need::slot_need(ring, hyper, &self.solvers[a].shapes(), best, NEED_BOXES));
                clock.tick()?;
            }
        }
        Ok(lb.min(best))
    }

    /// Returns false when the budget ran out (best is then only an upper bound).
    fn min_slots_rec(
        &mut self,
        a: usize,
        inc: SlotSet,
        exc: SlotSet,
        lb: usize,
        best: &mut usize,
        nodes: &mut u64,
        budget: u64,
        clock: &mut Clock,
    ) -> Result<bool, TimedOut> {
        clock.tick()?;
        *nodes += 1;
        if *nodes > budget {
            return Ok(false);
        }
        if *best <= lb.max(inc.len()) {
            return Ok(true);
        }
        let cb = CHECK_BUDGET;
        let s = match self.solvers[a].check(self.ring.minus(exc), Some(cb), clock)? {
            Verdict::Feasible(s) => s,
            Verdict::Infeasible => return Ok(true),
            Verdict::Undecided => return Ok(false),
        };
        match self.solvers[a].check(inc, Some(cb), clock)? {
            Verdict::Feasible(t) => {
                *best = (*best).min(t.used.len());
                return Ok(true);
            }
            Verdict::Infeasible => {}
            Verdict::Undecided => return Ok(false),
        }
        if inc.len() + 1 >= *best {
            return Ok(true);
        }
        let r = pick_slot(&s, inc)?;
        Ok(self.min_slots_rec(a, with(inc, r), exc, lb, best, nodes, budget, clock)?
            && self.min_slots_rec(a, inc, with(exc, r), lb, best, nodes, budget, clock)?)
    }

    /// An inclusion-minimal slot set M with keep ⊆ M ⊆ avail on which application a can be scheduled
    /// (None if avail does not suffice). Deletion filter: slots are dropped in `order` (slots not
    /// listed are dropped last, in index order) whenever the rest still suffices.
    fn minimal(&mut self, a: usize, avail: SlotSet, keep: SlotSet, order: &[usize], clock: &mut Clock) -> Result<Option<SlotSet>, TimedOut> {
        let Some(s) = self.solvers[a].solve(avail, clock)? else {
            return Ok(None);
        };
        let mut cur = s.used.or(keep);
        for &r in order {
            if !cur.contains(r) || keep.contains(r) {
                continue;
            }
            let mut without = cur;
            without.remove(r);
            if let Verdict::Feasible(t) = self.solvers[a].check(without, Some(CHECK_BUDGET), clock)? {
                cur = t.used.or(keep);
            }
        }
        Ok(Some(cur))
    }

    /// Places the applications at depths d.. on the free slots; `bound`: the application at depth d
    /// may only use slots >= bound (symmetry with the previous, identical application).
    fn place(&mut self, d: usize, free: SlotSet, bound: usize, clock: &mut Clock) -> Result<bool, Stop> {
        self.node(clock)?;
        if d == self.order.len() {
            return Ok(true);
        }
        let key = free.and(self.reach_from[d]);
        if self.failed[d].iter().any(|(k, b)| key.is_subset(k) && bound >= *b) {
            return Ok(false);
        }
        let ok = self.place_here(d, free, bound, clock)?;
        if !ok {
            let memo = &mut self.failed[d];
            if memo.len() == MEMO_CAP {
                memo.swap_remove(0);
            }
            memo.push((key, bound));
        }
        Ok(ok)
    }

    fn place_here(&mut self, d: usize, free: SlotSet, bound: usize, clock: &mut Clock) -> Result<bool, Stop> {
        if self.need_from[d] > free.and(self.reach_from[d]).len() {
            return Ok(false);
        }
        let own = free.minus(SlotSet::full(bound));
        for dd in d..self.order.len() {
            let avail = if dd == d { own } else { free };
            if let Verdict::Infeasible = self.solvers[self.order[dd]].check(avail, Some(CHECK_BUDGET), clock)? {
                return Ok(false);
            }
        }
        let order = self.demand_order(d, free, clock)?;
        self.choose(d, free, own, SlotSet::EMPTY, SlotSet::EMPTY, &order, clock)
    }

    /// Enumerates sufficient slot sets for the application at depth d between `inc` and `own - exc`,
    /// smallest and least wanted by the applications still to place first, and places the rest on what
    /// each leaves.
    ///
    /// At each node a minimal sufficient set M ⊇ inc is computed (deletion filter that drops the slots
    /// the others want most first). M = inc: inc is the candidate. Otherwise branch on a slot r of
    /// M - inc: take it, or never take it. Every minimal sufficient set lies below some branch, so the
    /// enumeration is complete.
    fn choose(&mut self, d: usize, free: SlotSet, own: SlotSet, inc: SlotSet, exc: SlotSet, order: &[usize], clock: &mut Clock) -> Result<bool, Stop> {
        self.node(clock)?;
        let a = self.order[d];
        // The applications after this one need their slots out of what this one leaves.
        let rest = self.reach_from[d + 1];
        if inc.and(rest).len() + self.need_from[d + 1] > free.and(rest).len() {
            return Ok(false);
        }
        let Some(m) = self.minimal(a, own.minus(exc), inc, order, clock)? else {
            return Ok(false);
        };
        if m == inc {
            let next_bound = if d + 1 < self.order.len() && self.same_as_prev[d + 1] { m.first().map_or(0, |s| s + 1) } else { 0 };
            if self.place(d + 1, free.minus(m), next_bound, clock)? {
                self.chosen[d] = m;
                return Ok(true);
            }
            return Ok(false);
        }
        // Branch on the slot of M - inc the others want least (the last one the filter would drop).
        let r = order.iter().rev().copied().find(|&r| m.contains(r) && !inc.contains(r)).ok_or(TimedOut)?;
        if self.choose(d, free, own, with(inc, r), exc, order, clock)? {
            return Ok(true);
        }
        self.choose(d, free, own, inc, with(exc, r), order, clock)
    }

    /// Slots ordered by how much the applications at depths d+1.. want them (most wanted first):
    /// summed use in their schedules on the free slots, then how many of them can reach the slot.
    fn demand_order(&mut self, d: usize, free: SlotSet, clock: &mut Clock) -> Result<Vec<usize>, TimedOut> {
        let n = self.problem.ring;
        let mut want = vec![(0u64, 0u64); n];
        for dd in d + 1..self.order.len() {
            let b = self.order[dd];
            if let Verdict::Feasible(s) = self.solvers[b].check(free, Some(CHECK_BUDGET), clock)? {
                for (r, w) in want.iter_mut().enumerate() {
                    w.0 += u64::from(s.use_count[r]);
                }
            }
            for r in self.solvers[b].reach.iter() {
                want[r].1 += 1;
            }
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&r| (std::cmp::Reverse(want[r]), r));
        Ok(order)
    }
}

/// The slot outside `inc` that schedule s uses most. s always uses one (if it used only slots of inc,
/// inc would suffice and the caller would not branch); should that ever not hold, the search gives up
/// with "unknown" rather than claim anything.
fn pick_slot(s: &AppSchedule, inc: SlotSet) -> Result<usize, TimedOut> {
    s.used.minus(inc).iter().max_by_key(|&r| (s.use_count[r], std::cmp::Reverse(r))).ok_or(TimedOut)
}

fn with(s: SlotSet, r: usize) -> SlotSet {
    let mut s = s;
    s.insert(r);
    s
}

fn empty_schedule(ring: usize) -> AppSchedule {
    AppSchedule { times: Vec::new(), used: SlotSet::EMPTY, use_count: vec![0; ring] }
}
