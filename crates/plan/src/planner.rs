//! The entry point: specification in, checked plan out.

use crate::clock::Clock;
use crate::error::InputError;
use crate::problem::Problem;
use crate::search::{self, Outcome};
use crate::spec::{Partitions, Plan, Spec, Status, Tx};
use crate::validate::validate;
use std::time::Duration;

/// Solver settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Give up with `unknown` after this long (None: never).
    pub timeout: Option<Duration>,
    /// Partition-search nodes tried with cheap bounds before the strong ones are computed (0: strong
    /// bounds from the start). Changes only the speed, never the answer.
    pub quick_nodes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options { timeout: Some(Duration::from_secs(60)), quick_nodes: search::QUICK_NODES }
    }
}

/// Plans a specification: feasible (validated), infeasible (proven) or unknown (time limit).
pub fn plan(spec: &Spec, options: &Options) -> Result<Plan, InputError> {
    let problem = Problem::new(spec)?;
    Ok(plan_problem(spec, &problem, options))
}

/// Plans an already checked problem (`problem` must come from `spec`).
pub(crate) fn plan_problem(spec: &Spec, problem: &Problem, options: &Options) -> Plan {
    let mut clock = Clock::new(options.timeout);
    let outcome = search::solve(problem, options.quick_nodes, &mut clock);
    let mut plan = Plan {
        status: Status::Unknown,
        reason: None,
        detail: None,
        hyperperiod_ns: problem.hyperperiod_ns(),
        partitions: Partitions::default(),
        schedule: Vec::new(),
        solve_ms: 0.0,
    };
    match outcome {
        Outcome::Feasible(per_app) => {
            plan.status = Status::Feasible;
            for (a, (part, sched)) in per_app.iter().enumerate() {
                let app = &problem.apps[a];
                plan.partitions.0.push((app.name.clone(), part.iter().map(|s| s as u32).collect()));
                for (i, &f) in app.flows.iter().enumerate() {
                    for (k, &t) in sched.times[i].iter().enumerate() {
                        plan.schedule.push(Tx {
                            app: app.name.clone(),
                            flow: problem.flows[f].name.clone(),
                            instance: k as u64,
                            tx_ns: t as u64 * problem.slot_ns,
                        });
                    }
                }
            }
        }
        Outcome::Infeasible(reason, detail) => {
            plan.status = Status::Infeasible;
            plan.reason = Some(reason);
            plan.detail = Some(detail);
        }
        Outcome::Unknown(detail) => plan.detail = Some(detail),
    }
    plan.solve_ms = clock.elapsed().as_secs_f64() * 1e3;
    if plan.status == Status::Feasible {
        if let Err(v) = validate(spec, &plan) {
            // Never hand out a schedule that breaks a rule; "unknown" is always a true statement.
            plan.status = Status::Unknown;
            plan.partitions = Partitions::default();
            plan.schedule.clear();
            plan.detail = Some(format!("internal error: the validator rejected the solver's schedule: {v}"));
        }
    }
    plan
}
