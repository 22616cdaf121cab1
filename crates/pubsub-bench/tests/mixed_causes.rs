//! The mixed workload names where an over-budget ping's time went, over the
//! testbed (root: namespaces and veth). The priority arm's scheduler is held
//! back on purpose: control owns two 2 µs slots per millisecond (a ring of
//! 500 slots), so a ping waits up to 500 µs in the scheduler for its slot,
//! past the 100 µs budget for most pings. The release observer sees each
//! ping leave late, and those pings are `sent_late`, not the catch-all
//! `network`. Both arms account every over-budget ping to one cause.
//! Shape, not speed: no latency figure is asserted.

use detpath_pubsub_bench::mixed;
use detpath_pubsub_bench::BenchOptions;

/// Control owns ring positions 0 and 250 (one slot each 500 µs); bulk the rest.
const HELD_BACK: &str = "sched=slots&slot_ns=2000&ring_slots=500&lead_slots=1&late_tolerance_ns=1000000&sched_mode=relaxed&classes=ctl:rt:0,250@256;bulk:be:1-249,251-499@2048";

#[test]
fn a_held_back_scheduler_makes_its_pings_sent_late_and_every_over_budget_ping_has_one_cause() {
    let test = "a_held_back_scheduler_makes_its_pings_sent_late_and_every_over_budget_ping_has_one_cause";
    if !detpath_testkit::need_root(test, "the testbed's namespaces") {
        return;
    }
    let mut o = BenchOptions::new(&["udp"]);
    o.with_ddsperf = false;
    o.seconds = 2;
    o.workloads = vec![mixed::WORKLOAD.into()];
    o.mixed_sched = HELD_BACK.into();
    let rows = mixed::bench(&o, None, |_| {}).unwrap();
    assert_eq!(rows.iter().map(|r| r.arm.as_str()).collect::<Vec<_>>(), vec!["priority", "fifo"]);
    for r in &rows {
        let v = r.control.violation_causes.as_ref().unwrap_or_else(|| panic!("{}: causes measured", r.arm));
        assert_eq!(v.judged_on, "delivered");
        assert!(v.judged > 0, "{}: pings judged while bulk ran: {v:?}", r.arm);
        assert_eq!(v.causes.values().sum::<u64>(), v.over, "{}: one cause per over-budget ping: {v:?}", r.arm);
        assert_eq!(v.causes.keys().map(String::as_str).collect::<Vec<_>>(), vec!["network", "reader_late", "retransmission", "sent_late"]);
        assert_eq!(v.unseen_sends, 0, "{}: every ping's hand-off was seen: {v:?}", r.arm);
    }
    let p = &rows[0].control.violation_causes.as_ref().unwrap();
    // A ping waits 0-500 µs for its slot: most of them exceed 100 µs there.
    assert!(p.over > 0, "the held-back scheduler put pings over budget: {p:?}");
    assert!(p.causes["sent_late"] * 2 > p.over, "most over-budget pings were held by the scheduler: {p:?}");
    // The goals name the same causes.
    let g = mixed::goals(&rows);
    assert!(g[0].violation_causes.get("sent_late").is_some_and(|n| *n > 0), "{:?}", g[0].violation_causes);
}
