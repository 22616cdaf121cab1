//! Property tests: on random small instances every feasible answer validates and every infeasible one
//! is confirmed by exhaustive search; random input never panics the parser or the planner.

mod common;

use common::{brute_force, plan_of};
use detpath_plan::{plan, validate, AppSpec, FlowSpec, Options, Spec, Status};
use proptest::prelude::*;
use std::time::Duration;

/// (period multiplier index, jitter slots, jitter extra ns) per flow, flows per app, apps.
fn spec_strategy() -> impl Strategy<Value = Spec> {
    let flow = (0usize..3, 0i64..4, 0i64..10);
    let app = prop::collection::vec(flow, 1..=3);
    (2i64..=8, 1i64..=3, prop::collection::vec(app, 1..=3)).prop_map(|(ring, base, apps)| {
        let apps = apps
            .into_iter()
            .enumerate()
            .map(|(a, flows)| AppSpec {
                name: format!("a{a}"),
                flows: flows
                    .into_iter()
                    .enumerate()
                    .map(|(i, (m, j, extra))| {
                        let p = base * [1, 2, 4][m];
                        FlowSpec { name: format!("f{i}"), period_ns: p * 10, jitter_ns: j.min(p) * 10 + extra }
                    })
                    .collect(),
            })
            .collect();
        Spec { ring_slots: ring, slot_ns: 10, apps }
    })
}

fn instances(s: &Spec) -> i64 {
    let periods: Vec<i64> = s.apps.iter().flat_map(|a| &a.flows).map(|f| f.period_ns / 10).collect();
    let h = periods.iter().fold(1i64, |h, &p| h * p / gcd(h, p));
    periods.iter().map(|p| h / p).sum()
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn answers_are_right(s in spec_strategy().prop_filter("small enough to enumerate", |s| instances(s) <= 12)) {
        let p = plan(&s, &Options { timeout: Some(Duration::from_secs(60)) }).unwrap();
        match p.status {
            Status::Feasible => {
                prop_assert!(validate(&s, &p).is_ok(), "{:?}", validate(&s, &p));
                prop_assert!(brute_force(&s).is_some());
            }
            Status::Infeasible => {
                let r = brute_force(&s);
                prop_assert!(r.is_none(), "claimed infeasible ({:?}) but {:?} validates: {:?}", p.reason, r.as_ref().map(|t| validate(&s, &plan_of(&s, t))), s);
            }
            Status::Unknown => prop_assert!(false, "unknown on a small instance"),
        }
    }

    #[test]
    fn parser_never_panics(text in ".{0,200}") {
        let _ = Spec::from_json(&text);
    }

    #[test]
    fn planner_never_panics_on_odd_numbers(
        ring in -3i64..300, slot in -3i64..50, period in -3i64..400, jitter in -3i64..400, n in 0usize..4,
    ) {
        let flows = (0..n).map(|i| FlowSpec { name: format!("f{i}"), period_ns: period * (i as i64 + 1), jitter_ns: jitter }).collect();
        let s = Spec { ring_slots: ring, slot_ns: slot, apps: vec![AppSpec { name: "a".into(), flows }] };
        if let Ok(p) = plan(&s, &Options { timeout: Some(Duration::from_millis(200)) }) {
            if p.status == Status::Feasible {
                prop_assert!(validate(&s, &p).is_ok());
            }
        }
    }
}
