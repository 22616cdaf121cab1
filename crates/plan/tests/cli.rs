//! `detpath sched plan` (crates/cli/src/sched/plan.rs, compiled here as well): exit statuses,
//! input errors, and a small --evaluate run with its files.

#[path = "../../cli/src/sched/plan.rs"]
mod sched_plan_cmd;
// The command's flags parse through the CLI's shared vocabulary.
#[path = "../../cli/src/vocab.rs"]
#[allow(dead_code)]
mod vocab;

use sched_plan_cmd::{run, Args, EXIT_INFEASIBLE, EXIT_UNKNOWN};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("detpath-plan-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn args(file: Option<PathBuf>) -> Args {
    Args {
        file,
        json: true,
        timeout: Duration::from_secs(60),
        evaluate: false,
        sets: 64,
        points: 14,
        seed: 3,
        out: PathBuf::from("unused"),
        z3_timeout: Duration::from_secs(5),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn exit_status_follows_the_verdict() {
    let dir = scratch("exit");
    let ok = write(
        &dir,
        "ok.json",
        r#"{"ring_slots": 32, "slot_ns": 10000, "apps": [{"name": "a", "flows": [{"name": "a1", "period_ns": 80000, "jitter_ns": 8000}]}]}"#,
    );
    assert_eq!(run(args(Some(ok.clone()))).unwrap(), 0);
    let mut human = args(Some(ok));
    human.json = false;
    assert_eq!(run(human).unwrap(), 0);

    let apps: Vec<String> = (0..9).map(|i| format!(r#"{{"name": "a{i}", "flows": [{{"name": "f", "period_ns": 80000, "jitter_ns": 0}}]}}"#)).collect();
    let bad = write(&dir, "nine.json", &format!(r#"{{"ring_slots": 32, "slot_ns": 10000, "apps": [{}]}}"#, apps.join(",")));
    assert_eq!(run(args(Some(bad))).unwrap(), EXIT_INFEASIBLE);

    // A 70% Table 4 set with a zero time limit: unknown.
    let set = &detpath_plan::generate::flow_sets(3, 13, 0.70, 1)[0];
    let hard = write(&dir, "hard.json", &serde_json::to_string(&set.spec).unwrap());
    let mut a = args(Some(hard));
    a.timeout = Duration::ZERO;
    assert_eq!(run(a).unwrap(), EXIT_UNKNOWN);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    let dir = scratch("bad");
    let f = write(
        &dir,
        "neg.json",
        r#"{"ring_slots": 32, "slot_ns": 10000, "apps": [{"name": "a", "flows": [{"name": "a1", "period_ns": -80000, "jitter_ns": 0}]}]}"#,
    );
    let e = run(args(Some(f))).unwrap_err();
    assert!(format!("{e:#}").contains("apps[0].flows[0].period_ns must be positive"), "{e:#}");
    let f = write(&dir, "unknown.json", r#"{"ring_slots": 32, "slot_ns": 10000, "apps": [], "extra": true}"#);
    assert!(format!("{:#}", run(args(Some(f))).unwrap_err()).contains("unknown field"));
    let e = run(args(Some(dir.join("missing.json")))).unwrap_err();
    assert!(format!("{e:#}").contains("cannot read"), "{e:#}");
    // A negative time limit is refused by the flag's parser, naming the value.
    let e = vocab::secs("-1").unwrap_err();
    assert!(e.contains("-1"), "{e}");
    assert!(sched_plan_cmd::EXIT_CODES.contains("3 proven infeasible"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn evaluate_writes_sets_results_table_and_figure() {
    let dir = scratch("eval");
    let mut a = args(None);
    a.evaluate = true;
    a.points = 2;
    a.sets = 3;
    a.out = dir.clone();
    a.timeout = Duration::from_secs(10);
    let z3 = detpath_testkit::need("evaluate_writes_sets_results_table_and_figure (its z3 part)", "z3", detpath_plan::smtlib::z3_available(), "apt-get install z3; `make deps` installs it");
    if !z3 {
        a.z3_timeout = Duration::ZERO;
    }
    assert_eq!(run(a).unwrap(), 0, "no disagreement between the solvers");
    for f in ["results.json", "table.md", "fig24.png", "fig24.svg", "sets/u05_000.json", "sets/u10_002.smt2"] {
        let len = std::fs::metadata(dir.join(f)).map(|m| m.len()).unwrap_or(0);
        assert!(len > 100, "{f} missing or empty");
    }
    let png = std::fs::read(dir.join("fig24.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let eval: detpath_plan::evaluate::Evaluation = serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(eval.sets.len(), 6);
    assert_eq!(eval.points.len(), 2);
    assert!(eval.disagreements.is_empty());
    assert_eq!(eval.points.iter().all(|p| p.z3.is_some()), z3);
    // The spec written for a set is the one solved: re-plan it from the file.
    let spec = detpath_plan::Spec::from_json(&std::fs::read_to_string(dir.join("sets/u05_000.json")).unwrap()).unwrap();
    let p = detpath_plan::plan(&spec, &detpath_plan::Options::default()).unwrap();
    assert_eq!(p.status, eval.sets[0].ours.status);
    std::fs::remove_dir_all(&dir).ok();
}
