//! A checked specification in slot units: what the solver works on.
//!
//! Times are counted in slots: a period of `period_ns` is `period_ns / slot_ns` slots, a jitter bound of
//! `jitter_ns` is `jitter_ns / slot_ns` slots rounded down (send times are whole slots, so their
//! deviations differ by whole slots and the bound is met exactly when the rounded-down bound is met).

use crate::error::InputError;
use crate::slotset::MAX_RING_SLOTS;
use crate::spec::Spec;
use std::collections::HashSet;

/// Largest hyperperiod, in slots, the planner enumerates.
pub(crate) const MAX_HYPERPERIOD_SLOTS: u64 = 1 << 24;
/// Largest number of flow instances in one hyperperiod.
pub(crate) const MAX_INSTANCES: u64 = 1 << 16;

/// A flow in slot units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// Index of its application in [`Problem::apps`].
    pub app: usize,
    /// Name (unique within the application).
    pub name: String,
    /// Period in slots (>= 1).
    pub period: i64,
    /// Jitter bound in slots (floor of jitter_ns / slot_ns).
    pub jitter: i64,
    /// Instances per hyperperiod.
    pub count: i64,
}

/// An application in slot units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    /// Name (unique).
    pub name: String,
    /// Indices of its flows in [`Problem::flows`].
    pub flows: Vec<usize>,
}

/// A validated planning problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Ring slots N.
    pub ring: usize,
    /// Slot duration, ns.
    pub slot_ns: u64,
    /// Hyperperiod in slots.
    pub hyper: i64,
    /// Applications in input order.
    pub apps: Vec<App>,
    /// Flows, grouped by application in input order.
    pub flows: Vec<Flow>,
}

impl Problem {
    /// Checks a specification and converts it to slot units.
    pub fn new(spec: &Spec) -> Result<Problem, InputError> {
        positive("ring_slots", spec.ring_slots)?;
        positive("slot_ns", spec.slot_ns)?;
        if spec.ring_slots as u64 > MAX_RING_SLOTS as u64 {
            return Err(InputError::RingTooLarge { ring_slots: spec.ring_slots, max: MAX_RING_SLOTS });
        }
        let mut app_names = HashSet::new();
        let mut apps = Vec::new();
        let mut flows = Vec::new();
        let mut hyper: u64 = 1;
        for (ai, a) in spec.apps.iter().enumerate() {
            if a.name.is_empty() {
                return Err(InputError::EmptyName { field: format!("apps[{ai}].name") });
            }
            if !app_names.insert(a.name.as_str()) {
                return Err(InputError::DuplicateName { name: a.name.clone(), what: "application".into() });
            }
            let mut flow_names = HashSet::new();
            let mut idx = Vec::new();
            for (fi, f) in a.flows.iter().enumerate() {
                let path = format!("apps[{ai}].flows[{fi}]");
                if f.name.is_empty() {
                    return Err(InputError::EmptyName { field: format!("{path}.name") });
                }
                if !flow_names.insert(f.name.as_str()) {
                    return Err(InputError::DuplicateName { name: f.name.clone(), what: format!("flow of application {:?}", a.name) });
                }
                positive(&format!("{path}.period_ns"), f.period_ns)?;
                if f.jitter_ns < 0 {
                    return Err(InputError::Negative { field: format!("{path}.jitter_ns"), value: f.jitter_ns });
                }
                if f.period_ns % spec.slot_ns != 0 {
                    return Err(InputError::PeriodNotMultiple { field: format!("{path}.period_ns"), period_ns: f.period_ns, slot_ns: spec.slot_ns });
                }
                let period = f.period_ns / spec.slot_ns;
                hyper = lcm(hyper, period as u64).filter(|&h| h <= MAX_HYPERPERIOD_SLOTS).ok_or_else(|| InputError::HyperperiodTooLarge {
                    what: format!("lcm of the periods exceeds {MAX_HYPERPERIOD_SLOTS} slots at {path}"),
                    limit: MAX_HYPERPERIOD_SLOTS,
                })?;
                idx.push(flows.len());
                flows.push(Flow { app: ai, name: f.name.clone(), period, jitter: f.jitter_ns / spec.slot_ns, count: 0 });
            }
            apps.push(App { name: a.name.clone(), flows: idx });
        }
        // The hyperperiod in ns must fit u64 too: hyper <= 2^24 slots, slot_ns < 2^63 may not.
        if (hyper as u128) * (spec.slot_ns as u128) > u64::MAX as u128 / 2 {
            return Err(InputError::HyperperiodTooLarge {
                what: format!("{hyper} slots of {} ns overflow 63-bit nanoseconds", spec.slot_ns),
                limit: MAX_HYPERPERIOD_SLOTS,
            });
        }
        let mut total: u64 = 0;
        for f in &mut flows {
            f.count = hyper as i64 / f.period;
            total += f.count as u64;
        }
        if total > MAX_INSTANCES {
            return Err(InputError::HyperperiodTooLarge { what: format!("{total} flow instances in one hyperperiod"), limit: MAX_INSTANCES });
        }
        Ok(Problem { ring: spec.ring_slots as usize, slot_ns: spec.slot_ns as u64, hyper: hyper as i64, apps, flows })
    }

    /// Hyperperiod in nanoseconds.
    pub fn hyperperiod_ns(&self) -> u64 {
        self.hyper as u64 * self.slot_ns
    }

    /// Total flow instances per hyperperiod.
    pub fn instances(&self) -> i64 {
        self.flows.iter().map(|f| f.count).sum()
    }

    /// Instances per ring cycle divided by ring slots (the paper's utilisation): sum of slot/period.
    pub fn utilisation(&self) -> f64 {
        self.flows.iter().map(|f| 1.0 / f.period as f64).sum()
    }
}

fn positive(field: &str, value: i64) -> Result<(), InputError> {
    if value <= 0 {
        return Err(InputError::NotPositive { field: field.into(), value });
    }
    Ok(())
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Least common multiple, None on overflow.
fn lcm(a: u64, b: u64) -> Option<u64> {
    (a / gcd(a, b)).checked_mul(b)
}
