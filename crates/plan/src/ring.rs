//! What the transmit scheduler loads: a slot mask per application and send offsets per flow.
//!
//! Built from a feasible, validated [`Plan`] and its [`Spec`]; every instance's send time is
//! `k * period_ns + offsets_ns[k]`, and the scheduler admits a packet of application a into ring slot
//! s only when bit s of a's mask is set.

use crate::spec::{Plan, Spec, Status};
use crate::validate::{validate, Violation};

/// Ring configuration for the scheduler.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RingConfig {
    /// Ring slots N.
    pub ring_slots: u32,
    /// Slot duration, ns.
    pub slot_ns: u64,
    /// The schedule repeats every hyperperiod.
    pub hyperperiod_ns: u64,
    /// Per application, in specification order.
    pub apps: Vec<AppSlots>,
}

/// One application's partition and flows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AppSlots {
    /// Application name.
    pub name: String,
    /// Slot bitmask: slot s is bit `s % 64` of word `s / 64`; `ceil(ring_slots / 64)` words.
    pub mask: Vec<u64>,
    /// Its flows, in specification order.
    pub flows: Vec<FlowOffsets>,
}

/// Send offsets of one flow.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FlowOffsets {
    /// Flow name.
    pub name: String,
    /// Period, ns.
    pub period_ns: u64,
    /// Deviation of instance k from its release, `tx_k - k * period_ns` (may be negative).
    pub offsets_ns: Vec<i64>,
    /// Smallest deviation (the flow's base offset); all deviations are within jitter of it.
    pub base_offset_ns: i64,
    /// Largest minus smallest deviation (<= the flow's jitter bound).
    pub worst_deviation_ns: i64,
}

impl AppSlots {
    /// The mask as one u64 (rings of at most 64 slots).
    pub fn mask_u64(&self) -> Option<u64> {
        match self.mask.as_slice() {
            [] => Some(0),
            [w] => Some(*w),
            _ => None,
        }
    }

    /// Whether ring slot s belongs to the application.
    pub fn owns(&self, slot: usize) -> bool {
        self.mask.get(slot / 64).is_some_and(|w| w & (1 << (slot % 64)) != 0)
    }
}

impl RingConfig {
    /// The scheduler configuration of a plan; the plan is validated first.
    pub fn from_plan(spec: &Spec, plan: &Plan) -> Result<RingConfig, Violation> {
        if plan.status != Status::Feasible {
            return Err(Violation::NotFeasible);
        }
        validate(spec, plan)?;
        let words = (spec.ring_slots as usize).div_ceil(64);
        let apps = spec
            .apps
            .iter()
            .map(|a| {
                let mut mask = vec![0u64; words];
                for &s in plan.partitions.get(&a.name).unwrap_or(&[]) {
                    mask[s as usize / 64] |= 1 << (s % 64);
                }
                let flows = a
                    .flows
                    .iter()
                    .map(|f| {
                        let mut offsets: Vec<(u64, i64)> = plan
                            .schedule
                            .iter()
                            .filter(|t| t.app == a.name && t.flow == f.name)
                            .map(|t| (t.instance, t.tx_ns as i64 - t.instance as i64 * f.period_ns))
                            .collect();
                        offsets.sort_unstable();
                        let offsets_ns: Vec<i64> = offsets.into_iter().map(|(_, d)| d).collect();
                        let lo = offsets_ns.iter().copied().min().unwrap_or(0);
                        let hi = offsets_ns.iter().copied().max().unwrap_or(0);
                        FlowOffsets { name: f.name.clone(), period_ns: f.period_ns as u64, offsets_ns, base_offset_ns: lo, worst_deviation_ns: hi - lo }
                    })
                    .collect();
                AppSlots { name: a.name.clone(), mask, flows }
            })
            .collect();
        Ok(RingConfig { ring_slots: spec.ring_slots as u32, slot_ns: spec.slot_ns as u64, hyperperiod_ns: plan.hyperperiod_ns, apps })
    }
}
