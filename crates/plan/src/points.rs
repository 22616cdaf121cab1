//! What an evaluation found at each utilisation point, per solver: computed
//! by [`crate::evaluate`], drawn by [`crate::plot`] (both import it; neither
//! imports the other's internals).

use serde::{Deserialize, Serialize};

/// Summary of one solver at one utilisation point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// Sets proven feasible.
    pub feasible: usize,
    /// Sets proven infeasible.
    pub infeasible: usize,
    /// Sets without an answer (time limit).
    pub unknown: usize,
    /// feasible / sets.
    pub schedulability: f64,
    /// Solve time percentiles, ms (nearest rank, over all sets, unknown ones at the time they took).
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// One utilisation point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// Target utilisation.
    pub util: f64,
    /// Sets at this point.
    pub sets: usize,
    /// Native solver.
    pub ours: Summary,
    /// z3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z3: Option<Summary>,
}
