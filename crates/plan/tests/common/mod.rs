//! Test helpers: an exhaustive reference search written straight from the three rules (no shared code
//! with the solver), small random specifications, and z3.
#![allow(dead_code)]

use detpath_plan::generate::Rng;
use detpath_plan::{AppSpec, FlowSpec, Partitions, Plan, Spec, Status, Tx};

/// One instance to place, in slot units.
struct Inst {
    app: usize,
    flow: usize,
    k: i64,
    release: i64,
    jitter: i64,
    lo: i64,
    hi: i64,
}

/// Exhaustive search: every instance tries every slot of its possible range (release - jitter ..
/// release + period - 1 + jitter, within [0, H)), in order; a partial assignment is abandoned as soon
/// as it breaks a rule (two instances of an application at once, a slot index used by two
/// applications, a flow's deviations spreading beyond its bound). Returns send times in slots per
/// instance (in spec order: app, flow, k), or None when no assignment satisfies the rules.
pub fn brute_force(spec: &Spec) -> Option<Vec<i64>> {
    let slot = spec.slot_ns;
    let n = spec.ring_slots;
    let h = hyperperiod_slots(spec);
    let mut insts = Vec::new();
    let mut flow_id = 0;
    for (ai, a) in spec.apps.iter().enumerate() {
        for f in &a.flows {
            let p = f.period_ns / slot;
            let j = f.jitter_ns / slot;
            for k in 0..h / p {
                let r = k * p;
                insts.push(Inst { app: ai, flow: flow_id, k, release: r, jitter: j, lo: (r - j).max(0), hi: (r + p - 1 + j).min(h - 1) });
            }
            flow_id += 1;
        }
    }
    let mut owner = vec![usize::MAX; n as usize];
    let mut owner_count = vec![0usize; n as usize];
    let mut times = vec![-1i64; insts.len()];
    fn rec(i: usize, insts: &[Inst], n: i64, owner: &mut Vec<usize>, owner_count: &mut Vec<usize>, times: &mut Vec<i64>) -> bool {
        if i == insts.len() {
            return true;
        }
        let it = &insts[i];
        for t in it.lo..=it.hi {
            let s = (t % n) as usize;
            if owner[s] != usize::MAX && owner[s] != it.app {
                continue;
            }
            // Same application at the same time?
            if (0..i).any(|j| insts[j].app == it.app && times[j] == t) {
                continue;
            }
            // Deviation spread of this flow so far.
            let d = t - it.release;
            let spread_ok = (0..i).filter(|&j| insts[j].flow == it.flow).all(|j| ((times[j] - insts[j].release) - d).abs() <= it.jitter);
            if !spread_ok {
                continue;
            }
            times[i] = t;
            if owner_count[s] == 0 {
                owner[s] = it.app;
            }
            owner_count[s] += 1;
            if rec(i + 1, insts, n, owner, owner_count, times) {
                return true;
            }
            owner_count[s] -= 1;
            if owner_count[s] == 0 {
                owner[s] = usize::MAX;
            }
            times[i] = -1;
        }
        false
    }
    if rec(0, &insts, n, &mut owner, &mut owner_count, &mut times) {
        Some(times)
    } else {
        None
    }
}

/// The plan of a brute-force assignment (partitions: the slots each application uses).
pub fn plan_of(spec: &Spec, times: &[i64]) -> Plan {
    let slot = spec.slot_ns;
    let n = spec.ring_slots;
    let h = hyperperiod_slots(spec);
    let mut schedule = Vec::new();
    let mut parts = Vec::new();
    let mut i = 0;
    for a in &spec.apps {
        let mut slots: Vec<u32> = Vec::new();
        for f in &a.flows {
            for k in 0..h / (f.period_ns / slot) {
                schedule.push(Tx { app: a.name.clone(), flow: f.name.clone(), instance: k as u64, tx_ns: (times[i] * slot) as u64 });
                slots.push((times[i] % n) as u32);
                i += 1;
            }
        }
        slots.sort_unstable();
        slots.dedup();
        parts.push((a.name.clone(), slots));
    }
    Plan { status: Status::Feasible, reason: None, detail: None, hyperperiod_ns: (h * slot) as u64, partitions: Partitions(parts), schedule, solve_ms: 0.0 }
}

/// The hyperperiod in slots, computed here independently of the crate (this file is the reference).
fn hyperperiod_slots(spec: &Spec) -> i64 {
    spec.apps.iter().flat_map(|a| &a.flows).map(|f| f.period_ns / spec.slot_ns).fold(1, |h, p| h / gcd(h, p) * p)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A small random specification: ring 3..=8 slots, 1..=3 applications with 1..=3 flows, periods of
/// 1..=4 times a base of 2 or 3 slots (hyperperiod at most 24 slots), jitter 0..period/2 slots, slot
/// 10 ns, with a bound on the total number of instances so the brute force stays quick.
pub fn small_spec(rng: &mut Rng) -> Spec {
    loop {
        let ring = 3 + rng.below(6) as i64;
        let base = 2 + rng.below(2) as i64;
        let apps_n = 1 + rng.below(3) as usize;
        let mut apps = Vec::new();
        let mut fid = 0;
        for a in 0..apps_n {
            let flows_n = 1 + rng.below(3) as usize;
            let mut flows = Vec::new();
            for _ in 0..flows_n {
                let mult = [1, 2, 4][rng.below(3) as usize];
                let p = base * mult;
                let j = rng.below((p / 2 + 1) as u64) as i64;
                flows.push(FlowSpec { name: format!("f{fid}"), period_ns: p * 10, jitter_ns: j * 10 + rng.below(10) as i64 });
                fid += 1;
            }
            apps.push(AppSpec { name: format!("a{a}"), flows });
        }
        let spec = Spec { ring_slots: ring, slot_ns: 10, apps };
        let h = spec.apps.iter().flat_map(|a| &a.flows).fold(1i64, |h, f| {
            let p = f.period_ns / 10;
            h / gcd(h, p) * p
        });
        let inst: i64 = spec.apps.iter().flat_map(|a| &a.flows).map(|f| h / (f.period_ns / 10)).sum();
        if inst <= 12 {
            return spec;
        }
    }
}

/// A medium random specification for z3 cross-checks: ring 6..=16 slots, 2..=5 applications with
/// 1..=4 flows, periods of 1, 2 or 4 times a base of 4 or 6 slots, jitter 0..period/2, and no more
/// instances than the hyperperiod has slot times (beyond that both solvers' answers are trivial, but
/// z3 cannot count: pigeonhole problems take it forever).
pub fn medium_spec(rng: &mut Rng) -> Spec {
    loop {
        let s = medium_spec_any(rng);
        let util: f64 = s.apps.iter().flat_map(|a| &a.flows).map(|f| s.slot_ns as f64 / f.period_ns as f64).sum();
        if util <= 1.0 {
            return s;
        }
    }
}

fn medium_spec_any(rng: &mut Rng) -> Spec {
    let ring = 6 + rng.below(11) as i64;
    let base = [4, 6][rng.below(2) as usize];
    let apps_n = 2 + rng.below(4) as usize;
    let mut apps = Vec::new();
    let mut fid = 0;
    for a in 0..apps_n {
        let flows_n = 1 + rng.below(4) as usize;
        let mut flows = Vec::new();
        for _ in 0..flows_n {
            let p = base * [1, 2, 4][rng.below(3) as usize];
            let j = rng.below((p / 2 + 1) as u64) as i64;
            flows.push(FlowSpec { name: format!("f{fid}"), period_ns: p * 1000, jitter_ns: j * 1000 });
            fid += 1;
        }
        apps.push(AppSpec { name: format!("a{a}"), flows });
    }
    Spec { ring_slots: ring, slot_ns: 1000, apps }
}
