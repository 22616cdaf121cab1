//! The file formats other tools read: the traffic specification (input) and the plan (output).
//!
//! Input (`Spec`):
//! `{"ring_slots": 32, "slot_ns": 10000, "apps": [{"name": "a", "flows": [{"name": "a1", "period_ns": 80000,
//! "jitter_ns": 8000}]}]}`. Numbers are read as signed 64-bit integers so that a negative value gets a
//! message naming the field instead of a serde type error; [`crate::Problem::new`] checks them.
//!
//! Output (`Plan`): `{"status": "feasible", "hyperperiod_ns": 160000, "partitions": {"a": [0, 8]},
//! "schedule": [{"app": "a", "flow": "a1", "instance": 0, "tx_ns": 0}], "solve_ms": 1.2}`.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A planning request: the ring and the critical applications with their periodic flows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Number of descriptor slots in the transmit ring (N).
    pub ring_slots: i64,
    /// Transmission time of one slot in nanoseconds.
    pub slot_ns: i64,
    /// Critical applications; each gets its own disjoint partition of the ring.
    pub apps: Vec<AppSpec>,
}

/// One critical application (a traffic class).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// Unique name.
    pub name: String,
    /// Its periodic flows (may be empty: the application then gets an empty partition).
    pub flows: Vec<FlowSpec>,
}

/// A periodic flow: instance k is released at `k * period_ns`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Name, unique within its application.
    pub name: String,
    /// Release period in nanoseconds, a positive multiple of `slot_ns`.
    pub period_ns: i64,
    /// Bound on max(tx - release) - min(tx - release) over the instances, in nanoseconds (>= 0).
    pub jitter_ns: i64,
}

impl Spec {
    /// Parses a specification from JSON text (unknown fields are rejected).
    pub fn from_json(text: &str) -> Result<Spec, crate::InputError> {
        serde_json::from_str(text).map_err(|e| crate::InputError::Json(e.to_string()))
    }
}

/// The solver's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// A schedule exists; `partitions` and `schedule` hold one (checked by the validator).
    Feasible,
    /// Proven: no partition and schedule exist (`reason` says which proof).
    Infeasible,
    /// The time limit was reached before a proof either way.
    Unknown,
}

/// How an infeasible answer was proven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// One application cannot be scheduled even with the whole ring to itself (exhaustive per-application
    /// search).
    AppAlone,
    /// The slots the applications need at least (each computed exactly or by counting) add up to more than
    /// the ring has.
    PartitionSizeBound,
    /// The search over partitions and schedules was exhausted.
    ExhaustiveSearch,
}

/// One transmission in the schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tx {
    /// Application name.
    pub app: String,
    /// Flow name.
    pub flow: String,
    /// Instance index k (released at k * period_ns).
    pub instance: u64,
    /// Transmission time in [0, hyperperiod), a multiple of slot_ns.
    pub tx_ns: u64,
}

/// Slot indices per application, in application order (serialised as a JSON object).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Partitions(pub Vec<(String, Vec<u32>)>);

impl Partitions {
    /// The slots of the named application, if present.
    pub fn get(&self, app: &str) -> Option<&[u32]> {
        self.0.iter().find(|(n, _)| n == app).map(|(_, s)| s.as_slice())
    }
}

impl Serialize for Partitions {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, slots) in &self.0 {
            map.serialize_entry(name, slots)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Partitions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Partitions;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object from application name to slot indices")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Partitions, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = access.next_entry::<String, Vec<u32>>()? {
                    out.push((k, v));
                }
                Ok(Partitions(out))
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// The planner's answer (the `--json` output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Feasible, infeasible or unknown.
    pub status: Status,
    /// For infeasible answers: the proof used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// Human explanation of the verdict (e.g. which application, which bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// lcm of all periods.
    pub hyperperiod_ns: u64,
    /// Slots of each application's partition (feasible answers; empty otherwise).
    #[serde(default)]
    pub partitions: Partitions,
    /// Every instance of every flow in [0, hyperperiod) (feasible answers; empty otherwise).
    #[serde(default)]
    pub schedule: Vec<Tx>,
    /// Wall time the solver took, milliseconds.
    pub solve_ms: f64,
}
