//! The paper's Figure 24 experiment: schedulability and solve time per utilisation, ours beside z3.
//!
//! For every generated flow set ([`crate::generate`]) it writes `sets/<name>.json` (the planner's input)
//! and `sets/<name>.smt2` ([`crate::smtlib`]), solves it natively, and runs `z3 -smt2` on the SMT file
//! when z3 is installed and a z3 time limit is given. Every feasible answer (ours and z3's model) is
//! validated; a verdict of one solver contradicted by the other's proof is reported as a disagreement.
//! Results go to `results.json`, `table.md` and `fig24.png` / `fig24.svg` in the output directory.

use crate::generate::{self, FlowSet};
use crate::planner::{plan_problem, Options};
use crate::problem::Problem;
use crate::smtlib::{self, Z3Status};
use crate::spec::{Reason, Status};
use crate::validate::validate;

pub use crate::points::{Point, Summary};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Generator seed.
    pub seed: u64,
    /// Utilisation points, 5 % apart from 5 %.
    pub points: usize,
    /// Flow sets per point.
    pub sets_per_point: usize,
    /// Time limit of the native solver per set.
    pub timeout: Duration,
    /// Time limit of z3 per set (None: z3 is not run).
    pub z3_timeout: Option<Duration>,
    /// Output directory.
    pub out: PathBuf,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 3,
            points: 14,
            sets_per_point: 64,
            timeout: Duration::from_secs(10),
            z3_timeout: Some(Duration::from_secs(2)),
            out: PathBuf::from("plan-eval"),
        }
    }
}

/// The evaluation failed to run (not: a set was infeasible).
#[derive(Debug, Error)]
pub enum EvalError {
    /// Writing an output file.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A generated set the planner rejects (a generator bug).
    #[error("generated set {0} is not a valid specification: {1}")]
    BadSet(String, crate::InputError),
    /// z3 could not be run or printed something unexpected.
    #[error("z3 on {0}: {1}")]
    Z3(String, smtlib::Z3Error),
    /// Drawing the figure.
    #[error("plot: {0}")]
    Plot(String),
}

/// One solver's answer on one set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// "feasible", "infeasible" or "unknown".
    pub status: Status,
    /// How an infeasible answer was proven (ours only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// Solve time, ms (z3: wall time of the process).
    pub ms: f64,
    /// For feasible answers: whether the schedule passed the validator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid: Option<bool>,
}

/// One flow set's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetResult {
    /// Set name (file stem).
    pub name: String,
    /// Target utilisation.
    pub target_util: f64,
    /// Actual utilisation.
    pub util: f64,
    /// Number of flows.
    pub flows: usize,
    /// Number of applications with flows.
    pub apps: usize,
    /// Hyperperiod, ns.
    pub hyperperiod_ns: u64,
    /// Native solver.
    pub ours: Answer,
    /// z3, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z3: Option<Answer>,
}

/// The whole evaluation (`results.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Evaluation {
    /// Generator seed.
    pub seed: u64,
    /// Native time limit per set, s.
    pub timeout_s: f64,
    /// z3 time limit per set, s (absent: z3 not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z3_timeout_s: Option<f64>,
    /// Per utilisation point.
    pub points: Vec<Point>,
    /// Sets where one solver's proof contradicts the other's answer, or a schedule failed validation.
    pub disagreements: Vec<String>,
    /// Per set.
    pub sets: Vec<SetResult>,
}

/// Runs the evaluation; `progress` gets one line per set.
pub fn run(config: &Config, mut progress: impl FnMut(&str)) -> Result<Evaluation, EvalError> {
    let sets_dir = config.out.join("sets");
    std::fs::create_dir_all(&sets_dir).map_err(|source| EvalError::Io { path: sets_dir.clone(), source })?;
    let mut results = Vec::new();
    let mut disagreements = Vec::new();
    for (point, util) in generate::utilisations(config.points).into_iter().enumerate() {
        for set in generate::flow_sets(config.seed, point, util, config.sets_per_point) {
            let r = run_set(config, &sets_dir, &set, &mut disagreements)?;
            let z3 = r.z3.as_ref().map_or(String::new(), |z| format!("  z3 {:?} {:.0} ms", z.status, z.ms));
            progress(&format!("{}: ours {:?} {:.1} ms{z3}", r.name, r.ours.status, r.ours.ms));
            results.push(r);
        }
    }
    let eval = Evaluation {
        seed: config.seed,
        timeout_s: config.timeout.as_secs_f64(),
        z3_timeout_s: config.z3_timeout.map(|t| t.as_secs_f64()),
        points: summarise(&results),
        disagreements,
        sets: results,
    };
    write_outputs(&eval, &config.out)?;
    Ok(eval)
}

/// Whole and durable: a reader (or a power cut) sees the old file or the new one.
fn write(path: PathBuf, text: &str) -> Result<(), EvalError> {
    detpath_sys::fsutil::write_atomic(&path, text.as_bytes()).map_err(|source| EvalError::Io { path, source })
}

fn run_set(config: &Config, dir: &Path, set: &FlowSet, disagreements: &mut Vec<String>) -> Result<SetResult, EvalError> {
    let problem = Problem::new(&set.spec).map_err(|e| EvalError::BadSet(set.name.clone(), e))?;
    let json = serde_json::to_string_pretty(&set.spec).unwrap_or_default();
    write(dir.join(format!("{}.json", set.name)), &json)?;
    let smt_path = dir.join(format!("{}.smt2", set.name));
    let comment = format!(
        "detpath-plan flow set {} (target utilisation {:.0}%, actual {:.2}%), slot units: ring {} slots, hyperperiod {} slots",
        set.name,
        set.target_util * 100.0,
        set.util * 100.0,
        problem.ring,
        problem.hyper
    );
    write(smt_path.clone(), &smtlib::to_smtlib(&problem, &comment))?;

    let plan = plan_problem(&set.spec, &problem, &Options { timeout: Some(config.timeout), ..Options::default() });
    let ours_valid = (plan.status == Status::Feasible).then(|| validate(&set.spec, &plan).is_ok());
    let ours = Answer { status: plan.status, reason: plan.reason, ms: plan.solve_ms, valid: ours_valid };
    if ours_valid == Some(false) {
        disagreements.push(format!("{}: our schedule fails validation", set.name));
    }

    let z3 = match config.z3_timeout {
        Some(t) => {
            let run = smtlib::run_z3(&smt_path, t).map_err(|e| EvalError::Z3(set.name.clone(), e))?;
            let (status, valid) = match run.status {
                Z3Status::Sat => {
                    let ok = smtlib::plan_from_model(&problem, &run.model).map(|p| validate(&set.spec, &p).is_ok()).unwrap_or(false);
                    if !ok {
                        disagreements.push(format!("{}: z3's model fails validation", set.name));
                    }
                    (Status::Feasible, Some(ok))
                }
                Z3Status::Unsat => (Status::Infeasible, None),
                Z3Status::Unknown => (Status::Unknown, None),
            };
            match (ours.status, status) {
                (Status::Feasible, Status::Infeasible) | (Status::Infeasible, Status::Feasible) => {
                    disagreements.push(format!("{}: ours {:?}, z3 {:?}", set.name, ours.status, status))
                }
                _ => {}
            }
            Some(Answer { status, reason: None, ms: run.wall_ms, valid })
        }
        None => None,
    };
    Ok(SetResult {
        name: set.name.clone(),
        target_util: set.target_util,
        util: set.util,
        flows: problem.flows.len(),
        apps: problem.apps.len(),
        hyperperiod_ns: problem.hyperperiod_ns(),
        ours,
        z3,
    })
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn summary<'a>(answers: impl Iterator<Item = &'a Answer>) -> Summary {
    let answers: Vec<&Answer> = answers.collect();
    let count = |s: Status| answers.iter().filter(|a| a.status == s).count();
    let mut ms: Vec<f64> = answers.iter().map(|a| a.ms).collect();
    ms.sort_by(f64::total_cmp);
    let n = answers.len().max(1);
    Summary {
        feasible: count(Status::Feasible),
        infeasible: count(Status::Infeasible),
        unknown: count(Status::Unknown),
        schedulability: count(Status::Feasible) as f64 / n as f64,
        p50_ms: percentile(&ms, 0.50),
        p95_ms: percentile(&ms, 0.95),
        max_ms: ms.last().copied().unwrap_or(0.0),
    }
}

/// Per-utilisation summaries of set results.
pub(crate) fn summarise(results: &[SetResult]) -> Vec<Point> {
    let mut utils: Vec<f64> = results.iter().map(|r| r.target_util).collect();
    utils.sort_by(f64::total_cmp);
    utils.dedup();
    utils
        .into_iter()
        .map(|u| {
            let at: Vec<&SetResult> = results.iter().filter(|r| r.target_util == u).collect();
            let z3 = at.iter().all(|r| r.z3.is_some()).then(|| summary(at.iter().filter_map(|r| r.z3.as_ref())));
            Point { util: u, sets: at.len(), ours: summary(at.iter().map(|r| &r.ours)), z3 }
        })
        .collect()
}

/// Markdown table of the per-utilisation results.
pub fn table(eval: &Evaluation) -> String {
    let mut o = String::new();
    let z3 = eval.points.iter().any(|p| p.z3.is_some());
    let _ = write!(o, "| util | sets | ours sched. | ours F/I/U | ours p50 ms | ours p95 ms | ours max ms |");
    if z3 {
        let _ = write!(o, " z3 sched. | z3 F/I/U | z3 p50 ms | z3 p95 ms | z3 max ms |");
    }
    let _ = writeln!(o);
    let _ = write!(o, "|---:|---:|---:|---:|---:|---:|---:|");
    if z3 {
        let _ = write!(o, "---:|---:|---:|---:|---:|");
    }
    let _ = writeln!(o);
    let cols = |s: &Summary| {
        format!(" {:.1}% | {}/{}/{} | {:.1} | {:.1} | {:.1} |", s.schedulability * 100.0, s.feasible, s.infeasible, s.unknown, s.p50_ms, s.p95_ms, s.max_ms)
    };
    for p in &eval.points {
        let _ = write!(o, "| {:.0}% | {} |{}", p.util * 100.0, p.sets, cols(&p.ours));
        if let Some(z) = &p.z3 {
            let _ = write!(o, "{}", cols(z));
        }
        let _ = writeln!(o);
    }
    let all: Vec<&SetResult> = eval.sets.iter().collect();
    let ours = summary(all.iter().map(|r| &r.ours));
    let _ = write!(o, "| all | {} |{}", all.len(), cols(&ours));
    if z3 && all.iter().all(|r| r.z3.is_some()) {
        let _ = write!(o, "{}", cols(&summary(all.iter().filter_map(|r| r.z3.as_ref()))));
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "\nF/I/U = feasible / proven infeasible / unknown (time limit: ours {:.0} s{}). Disagreements: {}.",
        eval.timeout_s,
        eval.z3_timeout_s.map_or(String::new(), |t| format!(", z3 {t:.0} s")),
        if eval.disagreements.is_empty() { "none".to_string() } else { eval.disagreements.join("; ") }
    );
    o
}

fn write_outputs(eval: &Evaluation, out: &Path) -> Result<(), EvalError> {
    write(out.join("results.json"), &serde_json::to_string_pretty(eval).unwrap_or_default())?;
    write(out.join("table.md"), &table(eval))?;
    crate::plot::figure(&eval.points, eval.z3_timeout_s, out).map_err(EvalError::Plot)?;
    Ok(())
}
