//! `detpath sched bench --plan` and spec keys of the slot scheduler.
//!
//! Plans that cannot run fail before any
//! testbed is made, with the planner's exit statuses (3 proven infeasible,
//! 2 bad input) and a message that says why. No root needed.

use std::process::Command;

fn plan_bench(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_detpath")).args(["sched", "bench", "--datapath", "udp", "--duration", "0.1"]).args(args).output().expect("runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn plans(name: &str) -> String {
    format!("{}/../sched/plans/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn an_infeasible_plan_exits_3_and_says_it_does_not_fit() {
    let (code, err) = plan_bench(&["--plan", &plans("infeasible.json")]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("does not fit the ring") && err.contains("proven infeasible"), "{err}");
}

#[test]
fn bad_plan_inputs_exit_2_naming_the_problem() {
    let dir = std::env::temp_dir().join(format!("detpath-cli-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A hyperperiod (80 µs) that is a quarter of the ring cycle (320 µs).
    let short = dir.join("short.json");
    std::fs::write(&short, r#"{"ring_slots": 32, "slot_ns": 10000, "apps": [{"name": "a", "flows": [{"name": "a1", "period_ns": 80000, "jitter_ns": 0}]}]}"#)
        .unwrap();
    let (code, err) = plan_bench(&["--plan", short.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a multiple of the ring cycle"), "{err}");
    let junk = dir.join("junk.json");
    std::fs::write(&junk, r#"{"ring_slots": 0, "slot_ns": 10000, "apps": []}"#).unwrap();
    let (code, err) = plan_bench(&["--plan", junk.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ring_slots"), "{err}");
    let (code, err) = plan_bench(&["--plan", &plans("two-apps.json"), "--plan-result", junk.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a plan"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `detpath echo` opens its spec with the slot scheduler's keys: a bad one is named, exit 2.
#[test]
fn echo_names_a_bad_scheduler_key() {
    for (spec, want) in [
        ("udp://127.0.0.1:0?sched=slots&classes=a:rt:0&sched_mod=strict", "`sched_mod` is not a key of the slot scheduler"),
        ("udp://127.0.0.1:0?slot_ns=10000", "add `sched=slots`"),
        ("udp://127.0.0.1:0?sched=slots&classes=a:rt:0&mode=strict", "sched_mode=strict"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_detpath")).args(["echo", spec, "--count", "0"]).output().expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains(want), "{spec}: {err}");
    }
    // A good one opens (and echoes nothing with --count 0).
    let out = Command::new(env!("CARGO_BIN_EXE_detpath"))
        .args(["echo", "udp://127.0.0.1:0?sched=slots&slot_ns=10000&ring_slots=10&classes=a:rt:0;b:be:5", "--count", "0"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("echo on 127.0.0.1"), "{stdout}");
}
