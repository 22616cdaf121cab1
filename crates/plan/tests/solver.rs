//! The native solver against an exhaustive reference search and against Debian's z3.

mod common;

use common::{brute_force, medium_spec, plan_of, small_spec};
use detpath_plan::generate::Rng;
use detpath_plan::smtlib::{self, Z3Status};
use detpath_plan::{plan, validate, Options, Problem, Reason, RingConfig, Spec, Status};
use std::time::Duration;

fn spec(json: &str) -> Spec {
    Spec::from_json(json).expect("test spec parses")
}

fn solve(s: &Spec) -> detpath_plan::Plan {
    plan(s, &Options { timeout: Some(Duration::from_secs(60)), ..Options::default() }).expect("valid spec")
}

/// Our verdict agrees with the exhaustive search, and a feasible plan validates; with strong bounds
/// from the start the verdict is the same.
fn agree_with_brute_force(s: &Spec) -> Status {
    let ours = solve(s);
    let strong = plan(s, &Options { timeout: Some(Duration::from_secs(60)), quick_nodes: 0 }).unwrap();
    assert_eq!(ours.status, strong.status, "{s:?}");
    if strong.status == Status::Feasible {
        validate(s, &strong).expect("feasible plan validates");
    }
    let reference = brute_force(s);
    match ours.status {
        Status::Feasible => {
            validate(s, &ours).expect("feasible plan validates");
            assert!(reference.is_some(), "ours feasible, exhaustive search found nothing: {s:?}");
        }
        Status::Infeasible => {
            assert!(reference.is_none(), "ours infeasible ({:?}), exhaustive search found {:?}: {s:?}", ours.reason, reference);
        }
        Status::Unknown => panic!("unknown within 60 s on a small instance: {s:?}"),
    }
    if let Some(t) = &reference {
        validate(s, &plan_of(s, t)).expect("the reference search's own answer validates");
    }
    ours.status
}

#[test]
fn paper_example_is_feasible_and_loadable() {
    let s = spec(
        r#"{"ring_slots": 32, "slot_ns": 10000,
        "apps": [{"name": "a", "flows": [{"name": "a1", "period_ns": 80000, "jitter_ns": 8000}]}]}"#,
    );
    let p = solve(&s);
    assert_eq!(p.status, Status::Feasible);
    assert_eq!(p.hyperperiod_ns, 80000);
    validate(&s, &p).unwrap();
    let ring = RingConfig::from_plan(&s, &p).unwrap();
    let a = &ring.apps[0];
    // Period 8 slots, jitter 0 slots (8 us < 10 us slot): 1 instance per hyperperiod of 8 slots.
    assert_eq!(a.flows[0].offsets_ns.len(), 1);
    assert_eq!(a.mask_u64().unwrap().count_ones() as usize, p.partitions.get("a").unwrap().len());
    for &slot in p.partitions.get("a").unwrap() {
        assert!(a.owns(slot as usize));
    }
    assert_eq!(a.flows[0].worst_deviation_ns, 0);
}

#[test]
fn ring_config_masks_span_words() {
    // A 100-slot ring: masks are two words (no single u64 mask).
    let s = spec(
        r#"{"ring_slots": 100, "slot_ns": 1, "apps": [
        {"name": "a", "flows": [{"name": "f", "period_ns": 200, "jitter_ns": 0}]},
        {"name": "b", "flows": [{"name": "g", "period_ns": 100, "jitter_ns": 0}]}]}"#,
    );
    let p = solve(&s);
    assert_eq!(p.status, Status::Feasible);
    let ring = RingConfig::from_plan(&s, &p).unwrap();
    for (app, (name, slots)) in ring.apps.iter().zip(&p.partitions.0) {
        assert_eq!(&app.name, name);
        assert_eq!(app.mask.len(), 2);
        for slot in 0..100 {
            assert_eq!(app.owns(slot), slots.contains(&(slot as u32)));
        }
        assert_eq!(app.mask_u64(), None);
    }
    // Offsets: tx = k * period + offset for every instance.
    for f in ring.apps.iter().flat_map(|a| &a.flows) {
        assert!(f.worst_deviation_ns == 0 && f.offsets_ns.iter().all(|&o| o == f.base_offset_ns));
    }
    // A plan that does not validate is refused.
    let mut bad = p.clone();
    bad.schedule[0].tx_ns += 1;
    assert!(RingConfig::from_plan(&s, &bad).is_err());
}

#[test]
fn strict_flows_sharing_lanes_are_infeasible() {
    // Ring 8, hyperperiod 8 (a0 also has a period-8 flow): a period-4 flow with jitter 0 sends at m and
    // m + 4, so it takes slots {m, m+4} whole; a0's period-8 flow then needs a third slot. n
    // applications need 2n + 1 slots: 4 do not fit, 3 do.
    let apps = |n: usize| {
        let mut v: Vec<String> = (0..n)
            .map(|i| {
                let extra = if i == 0 { r#", {"name": "g", "period_ns": 8, "jitter_ns": 0}"# } else { "" };
                format!(r#"{{"name": "a{i}", "flows": [{{"name": "f", "period_ns": 4, "jitter_ns": 0}}{extra}]}}"#)
            })
            .collect();
        v.sort();
        v.join(",")
    };
    let four = spec(&format!(r#"{{"ring_slots": 8, "slot_ns": 1, "apps": [{}]}}"#, apps(4)));
    let p = solve(&four);
    assert_eq!(p.status, Status::Infeasible);
    assert_eq!(p.reason, Some(Reason::PartitionSizeBound));
    assert!(brute_force(&four).is_none());
    let three = spec(&format!(r#"{{"ring_slots": 8, "slot_ns": 1, "apps": [{}]}}"#, apps(3)));
    let p = solve(&three);
    assert_eq!(p.status, Status::Feasible);
    validate(&three, &p).unwrap();
    for (name, slots) in &p.partitions.0 {
        if name == "a0" {
            assert_eq!(slots.len(), 3);
        } else {
            assert_eq!(slots.len(), 2);
            assert_eq!(slots[1], slots[0] + 4);
        }
    }
}

#[test]
fn jitter_bound_makes_the_difference() {
    // One application, ring 4, flows with period 4 slots over a hyperperiod of 8: instance windows
    // overlap across flows; with jitter 0 the three flows need 3 distinct offsets, fine; a fourth flow of
    // period 2 (jitter 0) takes 2 offsets of its own: 5 offsets > 4 slots.
    let s = spec(
        r#"{"ring_slots": 4, "slot_ns": 1, "apps": [{"name": "a", "flows": [
        {"name": "f1", "period_ns": 4, "jitter_ns": 0}, {"name": "f2", "period_ns": 4, "jitter_ns": 0},
        {"name": "f3", "period_ns": 4, "jitter_ns": 0}, {"name": "f4", "period_ns": 2, "jitter_ns": 0}]}]}"#,
    );
    let p = solve(&s);
    assert_eq!(p.status, Status::Infeasible);
    assert_eq!(p.reason, Some(Reason::AppAlone));
    assert!(brute_force(&s).is_none());
    // Dropping f3 fits.
    let s2 = spec(
        r#"{"ring_slots": 4, "slot_ns": 1, "apps": [{"name": "a", "flows": [
        {"name": "f1", "period_ns": 4, "jitter_ns": 0}, {"name": "f2", "period_ns": 4, "jitter_ns": 0},
        {"name": "f4", "period_ns": 2, "jitter_ns": 0}]}]}"#,
    );
    assert_eq!(agree_with_brute_force(&s2), Status::Feasible);
}

#[test]
fn two_apps_competing_for_a_ring() {
    // a: period 2 with jitter 0 takes one residue of every pair; b: period 3 slots (ring 6, H 6) with
    // jitter 1 needs 2 slots 3 apart (+-1). Cases around the boundary, all cross-checked.
    for (ring, pa, ja, pb, jb) in [(6, 2, 0, 3, 1), (6, 2, 0, 3, 0), (4, 2, 0, 4, 0), (4, 2, 1, 2, 0), (5, 5, 0, 5, 0)] {
        let s = spec(&format!(
            r#"{{"ring_slots": {ring}, "slot_ns": 1, "apps": [
            {{"name": "a", "flows": [{{"name": "x", "period_ns": {pa}, "jitter_ns": {ja}}}]}},
            {{"name": "b", "flows": [{{"name": "y", "period_ns": {pb}, "jitter_ns": {jb}}}, {{"name": "z", "period_ns": {pb}, "jitter_ns": {jb}}}]}}]}}"#
        ));
        agree_with_brute_force(&s);
    }
}

#[test]
fn random_small_instances_match_exhaustive_search() {
    let mut rng = Rng::new(2024);
    let (mut feasible, mut infeasible) = (0, 0);
    let mut reasons = std::collections::BTreeMap::new();
    for _ in 0..300 {
        let s = small_spec(&mut rng);
        match agree_with_brute_force(&s) {
            Status::Feasible => feasible += 1,
            _ => {
                infeasible += 1;
                *reasons.entry(format!("{:?}", solve(&s).reason)).or_insert(0) += 1;
            }
        }
    }
    // The generator must exercise both answers for this test to mean anything.
    println!("random small instances: {feasible} feasible, {infeasible} infeasible, proofs {reasons:?}");
    assert!(feasible > 30 && infeasible > 30, "{feasible} feasible, {infeasible} infeasible");
}

#[test]
fn timeout_gives_unknown_never_infeasible() {
    // A Table 4 set at 70% that takes the solver more than 10 s (u70_057 of the evaluation), with a
    // zero time limit: the search stops at its first clock check.
    let set = &detpath_plan::generate::flow_sets(3, 13, 0.70, 58)[57];
    let p = plan(&set.spec, &Options { timeout: Some(Duration::ZERO), ..Options::default() }).unwrap();
    assert_eq!(p.status, Status::Unknown, "{:?}", p.detail);
    assert!(p.schedule.is_empty() && p.partitions.0.is_empty() && p.reason.is_none());
}

/// Runs z3 on our SMT-LIB encoding of `s` and compares its verdict with ours; validates z3's model.
/// z3 may time out (returns Unknown then; the caller counts those), but never contradicts us.
fn agree_with_z3(s: &Spec, dir: &std::path::Path, name: &str) -> (Status, Z3Status) {
    let problem = Problem::new(s).unwrap();
    let path = dir.join(format!("{name}.smt2"));
    std::fs::write(&path, smtlib::to_smtlib(&problem, name)).unwrap();
    let z3 = smtlib::run_z3(&path, Duration::from_secs(30)).expect("z3 runs");
    let ours = solve(s);
    match (ours.status, z3.status) {
        (Status::Feasible, Z3Status::Sat) | (Status::Infeasible, Z3Status::Unsat) => {}
        (Status::Feasible | Status::Infeasible, Z3Status::Unknown) => {}
        (o, z) => panic!("{name}: ours {o:?}, z3 {z:?}: {s:?}"),
    }
    if z3.status == Z3Status::Sat {
        let zp = smtlib::plan_from_model(&problem, &z3.model).unwrap();
        validate(s, &zp).unwrap_or_else(|v| panic!("{name}: z3's model breaks a rule: {v}"));
    }
    (ours.status, z3.status)
}

fn scratch_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("detpath-plan-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn z3_agrees_on_small_instances() {
    if !detpath_testkit::need("z3_agrees_on_small_instances", "z3", smtlib::z3_available(), "apt-get install z3; `make deps` installs it") {
        return;
    }
    let dir = scratch_dir("z3-small");
    let mut rng = Rng::new(77);
    let (mut sat, mut unsat) = (0, 0);
    for i in 0..80 {
        let s = small_spec(&mut rng);
        match agree_with_z3(&s, &dir, &format!("small{i}")).1 {
            Z3Status::Sat => sat += 1,
            Z3Status::Unsat => unsat += 1,
            Z3Status::Unknown => panic!("z3 undecided on small instance {i}: {s:?}"),
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    println!("z3 small instances: {sat} sat, {unsat} unsat");
    assert!(sat > 10 && unsat > 10, "{sat} sat, {unsat} unsat");
}

#[test]
fn z3_agrees_on_medium_instances() {
    if !detpath_testkit::need("z3_agrees_on_medium_instances", "z3", smtlib::z3_available(), "apt-get install z3; `make deps` installs it") {
        return;
    }
    let dir = scratch_dir("z3-medium");
    let mut rng = Rng::new(4242);
    let (mut sat, mut unsat, mut undecided) = (0, 0, 0);
    let mut reasons = std::collections::BTreeMap::new();
    for i in 0..60 {
        let s = medium_spec(&mut rng);
        match agree_with_z3(&s, &dir, &format!("medium{i}")) {
            (_, Z3Status::Sat) => sat += 1,
            (_, Z3Status::Unsat) => {
                unsat += 1;
                *reasons.entry(format!("{:?}", solve(&s).reason)).or_insert(0) += 1;
            }
            (_, Z3Status::Unknown) => undecided += 1,
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    println!("z3 medium instances: {sat} sat, {unsat} unsat ({reasons:?}), {undecided} z3 timeouts");
    assert!(sat > 10 && unsat > 5 && undecided <= 6, "{sat} sat, {unsat} unsat, {undecided} undecided");
}

#[test]
fn z3_agrees_on_table4_sets() {
    if !detpath_testkit::need("z3_agrees_on_table4_sets", "z3", smtlib::z3_available(), "apt-get install z3; `make deps` installs it") {
        return;
    }
    // Low-utilisation Table 4 sets z3 decides quickly, plus hand-made infeasible ones at full size.
    let dir = scratch_dir("z3-table4");
    for (point, u) in [(0usize, 0.05), (1, 0.10)] {
        for set in detpath_plan::generate::flow_sets(11, point, u, 3) {
            agree_with_z3(&set.spec, &dir, &set.name);
        }
    }
    // Nine applications with a strict 80 us flow each need 9 lanes of 4 slots: 36 > 32.
    let apps: Vec<String> = (0..9).map(|i| format!(r#"{{"name": "a{i}", "flows": [{{"name": "f", "period_ns": 80000, "jitter_ns": 0}}]}}"#)).collect();
    let s = spec(&format!(r#"{{"ring_slots": 32, "slot_ns": 10000, "apps": [{}]}}"#, apps.join(",")));
    assert_eq!(agree_with_z3(&s, &dir, "nine_lanes"), (Status::Infeasible, Z3Status::Unsat));
    std::fs::remove_dir_all(&dir).ok();
}
