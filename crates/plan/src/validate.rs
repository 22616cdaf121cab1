//! Independent check of a feasible plan against the specification, in nanoseconds, straight from the
//! issue's three rules. It shares no code with the solver (not even the slot-unit conversion), so a
//! solver bug cannot hide behind a matching checker bug. Every feasible answer passes through it
//! before it is printed.

use crate::spec::{Plan, Spec, Status};
use std::collections::{HashMap, HashSet};
use thiserror::Error;

/// Why a plan does not satisfy its specification.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Violation {
    /// The plan is not marked feasible.
    #[error("status is not feasible")]
    NotFeasible,
    /// hyperperiod_ns is not the lcm of the periods.
    #[error("hyperperiod_ns is {got}, the lcm of the periods is {want}")]
    Hyperperiod {
        /// In the plan.
        got: u64,
        /// Computed from the specification.
        want: u64,
    },
    /// Partitions name an unknown application, repeat one, or miss one.
    #[error("partitions: {0}")]
    PartitionNames(String),
    /// A slot index outside the ring, or repeated in one partition.
    #[error("partition of {app:?}: slot {slot} is outside the ring or repeated")]
    BadSlot {
        /// Application.
        app: String,
        /// Slot index.
        slot: u32,
    },
    /// Rule: partitions are disjoint.
    #[error("slot {slot} is in the partitions of both {a:?} and {b:?}")]
    Overlap {
        /// Slot index.
        slot: u32,
        /// One owner.
        a: String,
        /// The other.
        b: String,
    },
    /// A schedule entry for an unknown application, flow or instance, or a repeated one.
    #[error("schedule entry {0}")]
    BadEntry(String),
    /// An instance without a send time.
    #[error("instance {instance} of {app}/{flow} has no send time")]
    Missing {
        /// Application.
        app: String,
        /// Flow.
        flow: String,
        /// Instance index.
        instance: u64,
    },
    /// A send time outside [0, hyperperiod) or not on a slot boundary.
    #[error("{app}/{flow} instance {instance}: tx_ns {tx_ns} is not a slot start in [0, hyperperiod)")]
    BadTime {
        /// Application.
        app: String,
        /// Flow.
        flow: String,
        /// Instance index.
        instance: u64,
        /// Send time.
        tx_ns: u64,
    },
    /// Rule 1: the send slot is not in the application's partition.
    #[error("{app}/{flow} instance {instance}: slot {slot} is not in the partition of {app}")]
    OutsidePartition {
        /// Application.
        app: String,
        /// Flow.
        flow: String,
        /// Instance index.
        instance: u64,
        /// Ring slot index of the send time.
        slot: u64,
    },
    /// Rule 2: deviations spread more than the jitter bound.
    #[error("{app}/{flow}: deviations spread {spread_ns} ns, jitter bound {jitter_ns} ns")]
    Jitter {
        /// Application.
        app: String,
        /// Flow.
        flow: String,
        /// max - min of tx - release.
        spread_ns: i128,
        /// Bound.
        jitter_ns: i64,
    },
    /// Rule 3: two instances of one application at the same time.
    #[error("application {app}: two instances send at {tx_ns} ns")]
    Collision {
        /// Application.
        app: String,
        /// Send time.
        tx_ns: u64,
    },
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Checks a feasible plan. `spec` must be a valid specification (positive numbers).
pub fn validate(spec: &Spec, plan: &Plan) -> Result<(), Violation> {
    if plan.status != Status::Feasible {
        return Err(Violation::NotFeasible);
    }
    let slot = spec.slot_ns as u128;
    let ring = spec.ring_slots as u128;
    let mut h: u128 = slot;
    for f in spec.apps.iter().flat_map(|a| &a.flows) {
        let p = f.period_ns as u128;
        h = h / gcd(h, p) * p;
    }
    if h != plan.hyperperiod_ns as u128 {
        return Err(Violation::Hyperperiod { got: plan.hyperperiod_ns, want: h.min(u64::MAX as u128) as u64 });
    }

    // Partitions: one per application, slots in the ring, disjoint.
    let mut owner: HashMap<u32, &str> = HashMap::new();
    let mut part: HashMap<&str, HashSet<u32>> = HashMap::new();
    for (name, slots) in &plan.partitions.0 {
        if !spec.apps.iter().any(|a| &a.name == name) {
            return Err(Violation::PartitionNames(format!("unknown application {name:?}")));
        }
        if part.contains_key(name.as_str()) {
            return Err(Violation::PartitionNames(format!("{name:?} listed twice")));
        }
        let mut set = HashSet::new();
        for &s in slots {
            if s as u128 >= ring || !set.insert(s) {
                return Err(Violation::BadSlot { app: name.clone(), slot: s });
            }
            if let Some(other) = owner.insert(s, name) {
                return Err(Violation::Overlap { slot: s, a: other.to_string(), b: name.clone() });
            }
        }
        part.insert(name, set);
    }
    if let Some(a) = spec.apps.iter().find(|a| !part.contains_key(a.name.as_str())) {
        return Err(Violation::PartitionNames(format!("no partition for {:?}", a.name)));
    }

    // Schedule: exactly one send time per instance.
    let mut tx: HashMap<(&str, &str, u64), u64> = HashMap::new();
    for e in &plan.schedule {
        let flow = spec.apps.iter().find(|a| a.name == e.app).and_then(|a| a.flows.iter().find(|f| f.name == e.flow));
        let Some(flow) = flow else {
            return Err(Violation::BadEntry(format!("{}/{}: no such flow", e.app, e.flow)));
        };
        if e.instance as u128 >= h / flow.period_ns as u128 {
            return Err(Violation::BadEntry(format!("{}/{} instance {}: beyond the hyperperiod", e.app, e.flow, e.instance)));
        }
        if tx.insert((&e.app, &e.flow, e.instance), e.tx_ns).is_some() {
            return Err(Violation::BadEntry(format!("{}/{} instance {} listed twice", e.app, e.flow, e.instance)));
        }
    }

    for a in &spec.apps {
        let mut times = HashSet::new();
        for f in &a.flows {
            let (mut lo, mut hi) = (i128::MAX, i128::MIN);
            for k in 0..(h / f.period_ns as u128) as u64 {
                let Some(&t) = tx.get(&(a.name.as_str(), f.name.as_str(), k)) else {
                    return Err(Violation::Missing { app: a.name.clone(), flow: f.name.clone(), instance: k });
                };
                if (t as u128).rem_euclid(slot) != 0 || t as u128 >= h {
                    return Err(Violation::BadTime { app: a.name.clone(), flow: f.name.clone(), instance: k, tx_ns: t });
                }
                // Rule 1: the slot is in the partition.
                let s = (t as u128 / slot) % ring;
                if !part[a.name.as_str()].contains(&(s as u32)) {
                    return Err(Violation::OutsidePartition { app: a.name.clone(), flow: f.name.clone(), instance: k, slot: s as u64 });
                }
                // Rule 3: no two instances of the application at once.
                if !times.insert(t) {
                    return Err(Violation::Collision { app: a.name.clone(), tx_ns: t });
                }
                let dev = t as i128 - k as i128 * f.period_ns as i128;
                lo = lo.min(dev);
                hi = hi.max(dev);
            }
            // Rule 2: deviation spread within the jitter bound.
            if lo <= hi && hi - lo > f.jitter_ns as i128 {
                return Err(Violation::Jitter { app: a.name.clone(), flow: f.name.clone(), spread_ns: hi - lo, jitter_ns: f.jitter_ns });
            }
        }
    }
    Ok(())
}
