//! `detpath sched plan`: does this periodic traffic fit the transmit ring, and how?
//!
//! Exit status: 0 feasible (schedule validated), 3 proven infeasible, 4 unknown (time limit reached),
//! 2 bad input or other error (returned as Err; main prints it and exits 2). `--evaluate` exits 0 when
//! it ran and no solver disagreement or invalid schedule was found, 1 otherwise.

use anyhow::{bail, Context, Result};
use detpath_plan::evaluate;
use detpath_plan::{plan, render, Options, Spec, Status};
use std::path::PathBuf;
use std::time::Duration;

/// Exit status of a proven-infeasible answer.
pub const EXIT_INFEASIBLE: i32 = 3;
/// Exit status of an unknown answer (time limit).
pub const EXIT_UNKNOWN: i32 = 4;
/// The exit codes, for `--help`.
pub const EXIT_CODES: &str = "Exit codes: 0 feasible (schedule validated); 3 proven infeasible; 4 unknown (the time limit was reached); \
2 bad input or another error. --evaluate: 0 it ran and found no solver disagreement or invalid schedule, 1 otherwise.";

/// Arguments of `detpath sched plan`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic specification (JSON: ring_slots, slot_ns, apps[].flows[] with period_ns, jitter_ns).
    #[arg(required_unless_present = "evaluate")]
    pub file: Option<PathBuf>,
    /// Print the plan as one JSON document (status, hyperperiod_ns, partitions, schedule, solve_ms).
    #[arg(long)]
    pub json: bool,
    /// Time limit, e.g. `60s` (a bare number is seconds); when it is reached
    /// the answer is "unknown", never "infeasible".
    #[arg(long, default_value = "60s", value_name = "DURATION", value_parser = crate::vocab::secs)]
    pub timeout: Duration,
    /// Run paper 003's Table 4 / Figure 24 evaluation instead (native solver beside z3).
    #[arg(long, conflicts_with = "file")]
    pub evaluate: bool,
    /// Evaluation: flow sets per utilisation point.
    #[arg(long, default_value_t = 64, requires = "evaluate", value_name = "N")]
    pub sets: usize,
    /// Evaluation: utilisation points, 5% apart from 5% (14 = 5..70%, the paper's 896 sets).
    #[arg(long, default_value_t = 14, requires = "evaluate", value_name = "N")]
    pub points: usize,
    /// Evaluation: generator seed.
    #[arg(long, default_value_t = 3, requires = "evaluate")]
    pub seed: u64,
    /// Evaluation: output directory (sets/*.json, sets/*.smt2, results.json, table.md, fig24.png/svg).
    #[arg(long, default_value = "plan-eval", requires = "evaluate", value_name = "DIR")]
    pub out: PathBuf,
    /// Evaluation: z3's time limit per set, e.g. `2s` (a bare number is
    /// seconds; 0: do not run z3; 2 s keeps 896 sets near 20 min).
    #[arg(long, default_value = "2s", requires = "evaluate", value_name = "DURATION", value_parser = crate::vocab::secs)]
    pub z3_timeout: Duration,
}

/// Runs the command; returns the process exit status.
pub fn run(args: Args) -> Result<i32> {
    let timeout = args.timeout;
    if args.evaluate {
        return run_evaluation(&args, timeout);
    }
    let Some(file) = &args.file else { bail!("a specification file is required (or --evaluate)") };
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let spec = Spec::from_json(&text).with_context(|| format!("{}", file.display()))?;
    let answer = plan(&spec, &Options { timeout: Some(timeout), ..Options::default() }).with_context(|| format!("{}", file.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print!("{}", render(&spec, &answer));
    }
    Ok(match answer.status {
        Status::Feasible => 0,
        Status::Infeasible => EXIT_INFEASIBLE,
        Status::Unknown => EXIT_UNKNOWN,
    })
}

fn run_evaluation(args: &Args, timeout: Duration) -> Result<i32> {
    let z3_timeout = args.z3_timeout;
    let z3 = if z3_timeout.is_zero() {
        None
    } else if detpath_plan::smtlib::z3_available() {
        Some(z3_timeout)
    } else {
        eprintln!("z3 not found (apt-get install -y z3): evaluating the native solver only");
        None
    };
    let config = evaluate::Config { seed: args.seed, points: args.points, sets_per_point: args.sets, timeout, z3_timeout: z3, out: args.out.clone() };
    let total = args.points * args.sets;
    let mut done = 0;
    let eval = evaluate::run(&config, |line| {
        done += 1;
        eprintln!("[{done}/{total}] {line}");
    })?;
    println!("{}", evaluate::table(&eval));
    println!("wrote {}/{{results.json, table.md, fig24.png, fig24.svg, sets/}}", args.out.display());
    Ok(if eval.disagreements.is_empty() { 0 } else { 1 })
}
