//! Bad input gets a typed error naming the field, never a panic or a plan.

use detpath_plan::{plan, InputError, Options, Spec};

fn err(json: &str) -> InputError {
    let spec = match Spec::from_json(json) {
        Ok(s) => s,
        Err(e) => return e,
    };
    plan(&spec, &Options::default()).expect_err("input must be rejected")
}

fn with_flow(flow: &str) -> String {
    format!(r#"{{"ring_slots": 32, "slot_ns": 10000, "apps": [{{"name": "a", "flows": [{flow}]}}]}}"#)
}

#[test]
fn non_positive_numbers() {
    let e = err(r#"{"ring_slots": 0, "slot_ns": 10000, "apps": []}"#);
    assert_eq!(e, InputError::NotPositive { field: "ring_slots".into(), value: 0 });
    let e = err(r#"{"ring_slots": 32, "slot_ns": -5, "apps": []}"#);
    assert_eq!(e, InputError::NotPositive { field: "slot_ns".into(), value: -5 });
    let e = err(&with_flow(r#"{"name": "f", "period_ns": 0, "jitter_ns": 0}"#));
    assert_eq!(e, InputError::NotPositive { field: "apps[0].flows[0].period_ns".into(), value: 0 });
    let e = err(&with_flow(r#"{"name": "f", "period_ns": 80000, "jitter_ns": -1}"#));
    assert_eq!(e, InputError::Negative { field: "apps[0].flows[0].jitter_ns".into(), value: -1 });
    assert!(e.to_string().contains("apps[0].flows[0].jitter_ns must be zero or more"));
}

#[test]
fn period_not_a_multiple_of_the_slot() {
    let e = err(&with_flow(r#"{"name": "f", "period_ns": 85000, "jitter_ns": 0}"#));
    assert!(matches!(e, InputError::PeriodNotMultiple { period_ns: 85000, slot_ns: 10000, .. }), "{e}");
}

#[test]
fn unknown_fields_and_malformed_json() {
    assert!(matches!(err(r#"{"ring_slots": 32, "slot_ns": 10000, "apps": [], "colour": 1}"#), InputError::Json(m) if m.contains("colour")));
    assert!(
        matches!(err(&with_flow(r#"{"name": "f", "period_ns": 80000, "jitter_ns": 0, "deadline_ns": 5}"#)), InputError::Json(m) if m.contains("deadline_ns"))
    );
    assert!(matches!(err(r#"{"ring_slots": 32, "slot_ns": 10000}"#), InputError::Json(m) if m.contains("apps")));
    assert!(matches!(err(r#"{"ring_slots": 32.5, "slot_ns": 10000, "apps": []}"#), InputError::Json(_)));
    assert!(matches!(err("{"), InputError::Json(_)));
    assert!(matches!(err(""), InputError::Json(_)));
    assert!(matches!(err("\u{0}\u{ff}garbage"), InputError::Json(_)));
}

#[test]
fn duplicate_and_empty_names() {
    let e = err(r#"{"ring_slots": 32, "slot_ns": 10000, "apps": [{"name": "a", "flows": []}, {"name": "a", "flows": []}]}"#);
    assert!(matches!(e, InputError::DuplicateName { ref name, .. } if name == "a"), "{e}");
    let e = err(&with_flow(r#"{"name": "f", "period_ns": 80000, "jitter_ns": 0}, {"name": "f", "period_ns": 160000, "jitter_ns": 0}"#));
    assert!(matches!(e, InputError::DuplicateName { ref name, .. } if name == "f"), "{e}");
    // The same flow name in two applications is fine.
    let ok = r#"{"ring_slots": 32, "slot_ns": 10000, "apps": [
        {"name": "a", "flows": [{"name": "f", "period_ns": 80000, "jitter_ns": 0}]},
        {"name": "b", "flows": [{"name": "f", "period_ns": 80000, "jitter_ns": 0}]}]}"#;
    assert!(plan(&Spec::from_json(ok).unwrap(), &Options::default()).is_ok());
    let e = err(r#"{"ring_slots": 32, "slot_ns": 10000, "apps": [{"name": "", "flows": []}]}"#);
    assert!(matches!(e, InputError::EmptyName { .. }));
}

#[test]
fn hyperperiod_and_ring_too_large() {
    // Coprime periods of about 10^4 slots: lcm far beyond 2^24 slots.
    let e = err(&with_flow(r#"{"name": "f", "period_ns": 100030000, "jitter_ns": 0}, {"name": "g", "period_ns": 100070000, "jitter_ns": 0}"#));
    assert!(matches!(e, InputError::HyperperiodTooLarge { .. }), "{e}");
    assert!(e.to_string().contains("hyperperiod too large"));
    // Period 1 slot and a 2^23-slot period: 2^23 + 1 instances.
    let e = err(&with_flow(r#"{"name": "f", "period_ns": 10000, "jitter_ns": 0}, {"name": "g", "period_ns": 83886080000, "jitter_ns": 0}"#));
    assert!(matches!(e, InputError::HyperperiodTooLarge { .. }), "{e}");
    let e = err(r#"{"ring_slots": 4096, "slot_ns": 10000, "apps": []}"#);
    assert!(matches!(e, InputError::RingTooLarge { ring_slots: 4096, .. }));
    // Nanosecond overflow: 12 slots of 10^18 ns.
    let e = err(r#"{"ring_slots": 32, "slot_ns": 1000000000000000000, "apps": [{"name": "a", "flows": [
        {"name": "f", "period_ns": 4000000000000000000, "jitter_ns": 0}, {"name": "g", "period_ns": 6000000000000000000, "jitter_ns": 0}]}]}"#);
    assert!(matches!(e, InputError::HyperperiodTooLarge { .. }), "{e}");
}

#[test]
fn empty_and_flowless_inputs_are_fine() {
    let p = plan(&Spec::from_json(r#"{"ring_slots": 4, "slot_ns": 10, "apps": []}"#).unwrap(), &Options::default()).unwrap();
    assert_eq!(p.status, detpath_plan::Status::Feasible);
    let s = Spec::from_json(r#"{"ring_slots": 4, "slot_ns": 10, "apps": [{"name": "idle", "flows": []}]}"#).unwrap();
    let p = plan(&s, &Options::default()).unwrap();
    assert_eq!(p.status, detpath_plan::Status::Feasible);
    assert_eq!(p.partitions.get("idle"), Some(&[][..]));
}
