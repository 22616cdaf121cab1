//! The same problem for an SMT solver: SMT-LIB2 text, a runner for Debian's `z3`, and a reader of its
//! model (so z3's schedules go through our validator too).
//!
//! Encoding (integers in slot units, linear arithmetic):
//! - `own_r` in [-1, apps) for each ring slot r: the application owning r (-1: none). One owner per slot
//!   makes the partitions disjoint by construction;
//! - `x_i_k` in [0, H): send time of instance k of flow i, with `x = N*q + s`, 0 <= s < N, and
//!   `s = r => own_r = app(i)` (rule 1);
//! - `m_i`: the flow's base deviation, `m_i <= x_i_k - k*period <= m_i + J` (rule 2, equivalent to the
//!   paper's pairwise form with one variable per flow instead of a quadratic number of constraints);
//! - `distinct` over the send times of each application (rule 3).

use crate::problem::Problem;
use crate::spec::{Partitions, Plan, Status, Tx};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use thiserror::Error;

/// SMT-LIB2 text of the problem, with `(check-sat)` and `(get-model)`.
pub fn to_smtlib(problem: &Problem, comment: &str) -> String {
    let mut o = String::new();
    let n = problem.ring;
    let h = problem.hyper;
    for line in comment.lines() {
        let _ = writeln!(o, "; {line}");
    }
    let _ = writeln!(o, "(set-logic QF_LIA)");
    for r in 0..n {
        let _ = writeln!(o, "(declare-const own_{r} Int)");
        let _ = writeln!(o, "(assert (and (<= (- 1) own_{r}) (< own_{r} {})))", problem.apps.len());
    }
    for (a, app) in problem.apps.iter().enumerate() {
        let mut xs = Vec::new();
        for &i in &app.flows {
            let f = &problem.flows[i];
            let _ = writeln!(o, "(declare-const m_{i} Int)");
            for k in 0..f.count {
                let x = format!("x_{i}_{k}");
                let _ = writeln!(o, "(declare-const {x} Int) (declare-const q_{i}_{k} Int) (declare-const s_{i}_{k} Int)");
                let rel = k * f.period;
                let _ = writeln!(
                    o,
                    "(assert (and (<= 0 {x}) (< {x} {h}) (= {x} (+ (* {n} q_{i}_{k}) s_{i}_{k})) (<= 0 s_{i}_{k}) (< s_{i}_{k} {n}) \
                     (<= m_{i} (- {x} {rel})) (<= (- {x} {rel}) (+ m_{i} {}))))",
                    f.jitter
                );
                let owns: Vec<String> = (0..n).map(|r| format!("(=> (= s_{i}_{k} {r}) (= own_{r} {a}))")).collect();
                let _ = writeln!(o, "(assert (and {}))", owns.join(" "));
                xs.push(x);
            }
        }
        if xs.len() >= 2 {
            let _ = writeln!(o, "(assert (distinct {}))", xs.join(" "));
        }
    }
    let _ = writeln!(o, "(check-sat)\n(get-model)");
    o
}

/// z3's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Z3Status {
    /// sat: a model was printed.
    Sat,
    /// unsat: proven infeasible.
    Unsat,
    /// unknown, timeout, or killed at the time limit.
    Unknown,
}

/// One z3 run.
#[derive(Debug, Clone)]
pub struct Z3Run {
    /// Verdict.
    pub status: Z3Status,
    /// Wall time of the process, ms (includes its start-up).
    pub wall_ms: f64,
    /// Integer constants of the model (sat only).
    pub model: HashMap<String, i64>,
}

/// Running z3 failed.
#[derive(Debug, Error)]
pub enum Z3Error {
    /// The binary could not be started.
    #[error("cannot run z3 (install it: apt-get install -y z3): {0}")]
    Spawn(std::io::Error),
    /// Output that is neither sat, unsat, unknown nor timeout.
    #[error("unexpected z3 output: {0}")]
    Output(String),
    /// The model could not be read.
    #[error("cannot read z3's model: {0}")]
    Model(String),
}

/// Whether a `z3` binary runs on this machine.
pub fn z3_available() -> bool {
    Command::new("z3").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Runs `z3 -smt2 file` with a hard time limit (z3's own `-T`, and a kill of the child a little later as
/// a backstop).
pub fn run_z3(file: &Path, timeout: Duration) -> Result<Z3Run, Z3Error> {
    let secs = timeout.as_secs_f64().ceil().max(1.0) as u64;
    let start = Instant::now();
    let mut child =
        Command::new("z3").arg("-smt2").arg(format!("-T:{secs}")).arg(file).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().map_err(Z3Error::Spawn)?;
    let mut stdout = child.stdout.take().ok_or_else(|| Z3Error::Output("no stdout".into()))?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let backstop = Duration::from_secs(secs + 5);
    let mut killed = false;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > backstop => {
                let _ = child.kill();
                let _ = child.wait();
                killed = true;
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_micros(500)),
            Err(e) => return Err(Z3Error::Spawn(e)),
        }
    }
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let out = reader.join().unwrap_or_default();
    let first = out.lines().next().unwrap_or("").trim();
    let status = match first {
        _ if killed => Z3Status::Unknown,
        "sat" => Z3Status::Sat,
        "unsat" => Z3Status::Unsat,
        "unknown" | "timeout" => Z3Status::Unknown,
        other => return Err(Z3Error::Output(other.chars().take(200).collect())),
    };
    let model = if status == Z3Status::Sat { parse_model(&out)? } else { HashMap::new() };
    Ok(Z3Run { status, wall_ms, model })
}

/// Integer constants of a model printed by `(get-model)`: `(define-fun name () Int value)` with value
/// `7` or `(- 7)`.
pub(crate) fn parse_model(text: &str) -> Result<HashMap<String, i64>, Z3Error> {
    let mut tokens = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        match c {
            '(' | ')' => {
                if !cur.is_empty() {
                    tokens.push(std::mem::take(&mut cur));
                }
                tokens.push(c.to_string());
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    tokens.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    let mut model = HashMap::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] != "define-fun" {
            i += 1;
            continue;
        }
        let get = |j: usize| tokens.get(j).map(String::as_str).unwrap_or("");
        let name = get(i + 1).to_string();
        if get(i + 2) != "(" || get(i + 3) != ")" || get(i + 4) != "Int" {
            return Err(Z3Error::Model(format!("unexpected declaration of {name}")));
        }
        let (value, next) =
            if get(i + 5) == "(" && get(i + 6) == "-" { (get(i + 7).parse::<i64>().map(|v| -v), i + 9) } else { (get(i + 5).parse::<i64>(), i + 6) };
        let value = value.map_err(|_| Z3Error::Model(format!("value of {name} is not an integer")))?;
        model.insert(name, value);
        i = next;
    }
    Ok(model)
}

/// The plan z3's model describes (so it can be validated like ours).
pub fn plan_from_model(problem: &Problem, model: &HashMap<String, i64>) -> Result<Plan, Z3Error> {
    let mut partitions = Partitions::default();
    for (a, app) in problem.apps.iter().enumerate() {
        let slots: Vec<u32> = (0..problem.ring).filter(|r| model.get(&format!("own_{r}")) == Some(&(a as i64))).map(|r| r as u32).collect();
        partitions.0.push((app.name.clone(), slots));
    }
    let mut schedule = Vec::new();
    for app in &problem.apps {
        for &i in &app.flows {
            let f = &problem.flows[i];
            for k in 0..f.count {
                let x = model.get(&format!("x_{i}_{k}")).ok_or_else(|| Z3Error::Model(format!("no x_{i}_{k}")))?;
                let x = u64::try_from(*x).map_err(|_| Z3Error::Model(format!("x_{i}_{k} = {x} is negative")))?;
                schedule.push(Tx { app: app.name.clone(), flow: f.name.clone(), instance: k as u64, tx_ns: x * problem.slot_ns });
            }
        }
    }
    Ok(Plan {
        status: Status::Feasible,
        reason: None,
        detail: Some("z3 model".into()),
        hyperperiod_ns: problem.hyperperiod_ns(),
        partitions,
        schedule,
        solve_ms: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_parser_reads_negative_and_positive_values() {
        let text = "sat\n(\n  (define-fun x_0_1 () Int\n    8)\n  (define-fun m_0 () Int\n    (- 1))\n)\n";
        let m = parse_model(text).unwrap();
        assert_eq!(m["x_0_1"], 8);
        assert_eq!(m["m_0"], -1);
        assert!(parse_model("(define-fun x () Bool true)").is_err());
    }
}
