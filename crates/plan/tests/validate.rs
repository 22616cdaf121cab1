//! The validator: a correct plan passes; each rule broken once is caught with the right violation.

use detpath_plan::{validate, Partitions, Plan, Spec, Status, Tx, Violation};

/// Ring 8 x 10 ns; a: f (period 40 ns, jitter 10 ns) and g (period 80 ns, jitter 0); b: h (period 80,
/// jitter 0). Hyperperiod 80 ns.
fn spec() -> Spec {
    Spec::from_json(
        r#"{"ring_slots": 8, "slot_ns": 10, "apps": [
        {"name": "a", "flows": [{"name": "f", "period_ns": 40, "jitter_ns": 10}, {"name": "g", "period_ns": 80, "jitter_ns": 0}]},
        {"name": "b", "flows": [{"name": "h", "period_ns": 80, "jitter_ns": 0}]}]}"#,
    )
    .unwrap()
}

fn tx(app: &str, flow: &str, instance: u64, tx_ns: u64) -> Tx {
    Tx { app: app.into(), flow: flow.into(), instance, tx_ns }
}

/// A valid plan: f at 0 (slot 0) and 50 (slot 5; deviation 10), g at 10 (slot 1), h at 20 (slot 2).
fn good() -> Plan {
    Plan {
        status: Status::Feasible,
        reason: None,
        detail: None,
        hyperperiod_ns: 80,
        partitions: Partitions(vec![("a".into(), vec![0, 1, 5]), ("b".into(), vec![2])]),
        schedule: vec![tx("a", "f", 0, 0), tx("a", "f", 1, 50), tx("a", "g", 0, 10), tx("b", "h", 0, 20)],
        solve_ms: 0.0,
    }
}

#[test]
fn correct_plan_passes() {
    validate(&spec(), &good()).unwrap();
}

#[test]
fn rule1_slot_outside_partition() {
    let mut p = good();
    p.schedule[2].tx_ns = 30; // g at slot 3, not a's
    assert!(matches!(validate(&spec(), &p), Err(Violation::OutsidePartition { slot: 3, .. })));
    // The same slot index in a later ring cycle is still the slot: 60 ns = slot 6, not a's either.
    p.schedule[2].tx_ns = 60;
    assert!(matches!(validate(&spec(), &p), Err(Violation::OutsidePartition { slot: 6, .. })));
}

#[test]
fn rule1_partitions_overlap() {
    let mut p = good();
    p.partitions.0[1].1.push(5);
    assert!(matches!(validate(&spec(), &p), Err(Violation::Overlap { slot: 5, .. })));
}

#[test]
fn rule2_jitter_exceeded() {
    let mut p = good();
    // f instance 1 at 10 ns... deviation of instance 1 = 10 - 40 = -30 vs 0: spread 30 > 10.
    p.schedule[1].tx_ns = 10;
    p.schedule[2].tx_ns = 50;
    assert!(matches!(validate(&spec(), &p), Err(Violation::Jitter { spread_ns: 30, jitter_ns: 10, .. })));
}

#[test]
fn rule3_two_instances_at_once() {
    let mut p = good();
    p.schedule[2].tx_ns = 50; // g at the same time as f's instance 1
    assert!(matches!(validate(&spec(), &p), Err(Violation::Collision { tx_ns: 50, .. })));
}

#[test]
fn structural_errors_are_caught() {
    let s = spec();
    let mut p = good();
    p.hyperperiod_ns = 40;
    assert!(matches!(validate(&s, &p), Err(Violation::Hyperperiod { want: 80, .. })));

    let mut p = good();
    p.schedule.remove(1);
    assert!(matches!(validate(&s, &p), Err(Violation::Missing { instance: 1, .. })));

    let mut p = good();
    p.schedule.push(tx("a", "f", 1, 40));
    assert!(matches!(validate(&s, &p), Err(Violation::BadEntry(_))));

    let mut p = good();
    p.schedule.push(tx("a", "nope", 0, 40));
    assert!(matches!(validate(&s, &p), Err(Violation::BadEntry(_))));

    let mut p = good();
    p.schedule[0].tx_ns = 5; // not a slot boundary
    assert!(matches!(validate(&s, &p), Err(Violation::BadTime { tx_ns: 5, .. })));

    let mut p = good();
    p.schedule[3].tx_ns = 100; // beyond the hyperperiod
    assert!(matches!(validate(&s, &p), Err(Violation::BadTime { tx_ns: 100, .. })));

    let mut p = good();
    p.partitions.0.pop();
    assert!(matches!(validate(&s, &p), Err(Violation::PartitionNames(_))));

    let mut p = good();
    p.partitions.0[1].1 = vec![8];
    assert!(matches!(validate(&s, &p), Err(Violation::BadSlot { slot: 8, .. })));

    let mut p = good();
    p.status = Status::Infeasible;
    assert_eq!(validate(&s, &p), Err(Violation::NotFeasible));
}

#[test]
fn plan_json_round_trips_in_the_issue_format() {
    let p = good();
    let text = serde_json::to_string(&p).unwrap();
    assert!(text.contains(r#""partitions":{"a":[0,1,5],"b":[2]}"#), "{text}");
    assert!(text.contains(r#""status":"feasible""#));
    assert!(text.contains(r#"{"app":"a","flow":"f","instance":0,"tx_ns":0}"#));
    let back: Plan = serde_json::from_str(&text).unwrap();
    assert_eq!(back, p);
}
