//! `detpath classify bench`'s cells at a short duration: the JSON shape of
//! each cell, every cell's program received frames, the two anchors did what
//! they are for (`noop` drops, `noop_pass` passes), the classifier's cells
//! did with them what their rules say (drop with rules, pass without), and
//! each classifier cell's `ratio_to_noop` is against the anchor of its
//! verdict (`anchor`), with the dropping anchor's ratio beside it
//! (`ratio_to_noop_drop`). Not timing: the figures come from the command. Root.

use detpath_classify::bench::{self, Anchor, BenchOptions, Cell, Encap, RULE_COUNTS};
use std::time::Duration;

#[test]
fn every_cell_runs_and_does_what_its_rules_say() {
    let online = detpath_sys::cpu::online().iter().count();
    let o = BenchOptions { duration: Duration::from_millis(50), sizes: vec![132, 1500], test_run_repeat: 1000, ..BenchOptions::default() };
    let mut seen = 0;
    let r = bench::run(&o, &mut |_| seen += 1).expect("bench runs (root)");
    let cpus_run = [1usize, 2].iter().filter(|c| **c <= online).count();
    assert_eq!(r.machine.skipped_cpus.len(), 2 - cpus_run);
    let want = Encap::ALL.len() * o.sizes.len() * cpus_run * (Anchor::ALL.len() + RULE_COUNTS.len());
    assert_eq!(r.cells.len(), want);
    assert_eq!(seen, want, "progress called once per cell");

    // The cell's anchor of one verdict: same encapsulation, size and receive CPUs.
    let anchor_of = |c: &Cell, program: &str| -> Cell {
        let same = |a: &&Cell| a.program == program && a.encap == c.encap && a.size == c.size && a.cpus == c.cpus;
        let found: Vec<&Cell> = r.cells.iter().filter(same).collect();
        assert_eq!(found.len(), 1, "one {program} per cell");
        found[0].clone()
    };
    for c in &r.cells {
        let v = serde_json::to_value(c).unwrap();
        for k in ["program", "rules", "encap", "size", "cpus", "pps", "ns_per_frame", "cpu"] {
            assert!(v.get(k).is_some(), "cell {v} has no `{k}`");
        }
        // The CPU object: one generator thread per receive CPU, on its CPU, which did some work.
        assert_eq!(c.cpu.threads.len(), c.cpus, "{v}");
        for (i, t) in c.cpu.threads.iter().enumerate() {
            assert_eq!(t.name, "generator");
            assert_eq!(t.core, Some(i as u32), "generator {i} pinned to CPU {i}: {v}");
        }
        assert!(c.cpu.cpu_s() > 0.0, "the generators used CPU: {v}");
        assert!(c.cpu.work_per_cpu_s.is_some_and(|w| w > 0.0), "{v}");
        assert_eq!(c.cpu.cores.iter().map(|x| x.core).collect::<Vec<_>>(), (0..c.cpus as u32).collect::<Vec<_>>(), "{v}");
        assert!(c.cpu.cores.iter().all(|x| (0.0..=1.0).contains(&x.busy)), "{v}");
        assert!(["udp", "vxlan", "gtpu"].contains(&v["encap"].as_str().unwrap()), "{v}");
        assert!(c.frames_seen > 0 && c.pps > 0.0, "the program received no frame: {v}");
        assert!(c.frames_seen <= c.frames_offered, "{v}");
        assert!(c.ns_per_frame > 0, "{v}");
        // One rate per slice (one slice per round), every one positive.
        let slices: Vec<f64> = v["slices_pps"].as_array().expect("slices_pps").iter().map(|x| x.as_f64().unwrap()).collect();
        assert!(slices.len() >= 4 && slices.iter().all(|p| *p > 0.0), "{v}");
        match c.program {
            "noop" | "noop_pass" => {
                for k in ["ratio_to_noop", "anchor", "ratio_to_noop_drop", "ratio_quartiles", "ratio_rounds"] {
                    assert!(v.get(k).is_none(), "an anchor has no `{k}`: {v}");
                }
                assert_eq!(c.rules, 0, "{v}");
                assert_eq!(c.frames_forwarded, 0, "{v}");
                if c.program == "noop" {
                    assert_eq!(c.verdict, "drop", "{v}");
                    assert_eq!(c.frames_dropped, c.frames_seen, "the dropping anchor drops: {v}");
                    assert_eq!(c.frames_passed, 0, "{v}");
                } else {
                    assert_eq!(c.verdict, "pass", "{v}");
                    assert_eq!(c.frames_passed, c.frames_seen, "the passing anchor passes: {v}");
                    assert_eq!(c.frames_dropped, 0, "{v}");
                }
            }
            "classify" => {
                let ratio = v["ratio_to_noop"].as_f64().expect("ratio_to_noop");
                let ratio_drop = v["ratio_to_noop_drop"].as_f64().expect("ratio_to_noop_drop");
                assert!(ratio > 0.0 && ratio_drop > 0.0, "{v}");
                // The anchor is the one of the classifier's verdict, and named.
                let anchor = v["anchor"].as_str().expect("anchor");
                assert_eq!(anchor, c.verdict, "the anchor's verdict is the classifier's: {v}");
                let (want_anchor, anchor_program) = if c.rules == 0 { (Anchor::Pass, "noop_pass") } else { (Anchor::Drop, "noop") };
                assert_eq!(c.anchor, Some(want_anchor), "{v}");
                // The ratio is the median of the rounds' ratios (each classifier
                // slice over its anchor's slice of the same round), one per round.
                let mut rounds: Vec<f64> = v["ratio_rounds"].as_array().expect("ratio_rounds").iter().map(|x| x.as_f64().unwrap()).collect();
                assert!(rounds.len() >= 4 && rounds.iter().all(|r| *r > 0.0), "{v}");
                rounds.sort_by(f64::total_cmp);
                let n = rounds.len();
                let median = if n % 2 == 1 { rounds[n / 2] } else { (rounds[n / 2 - 1] + rounds[n / 2]) / 2.0 };
                assert!((ratio - median).abs() < 1e-9, "ratio_to_noop = the median of ratio_rounds: {v}");
                let [q1, q3] = c.ratio_quartiles.expect("ratio_quartiles");
                assert!(rounds[0] <= q1 && q1 <= median && median <= q3 && q3 <= rounds[n - 1], "quartiles within the rounds, around the median: {v}");
                // The anchor ran in the same cell, and over the whole cell the
                // two rates give a ratio within the rounds' range.
                let a = anchor_of(c, anchor_program);
                // Each round's ratio is the two slices' rates of that round.
                assert_eq!(a.slices_pps.len(), c.slices_pps.len(), "{v}");
                for (i, r) in c.ratio_rounds.iter().enumerate() {
                    assert!((r - c.slices_pps[i] / a.slices_pps[i]).abs() < 1e-9, "round {i}: {v}");
                }
                let whole = c.pps / a.pps;
                assert!(whole > 0.0 && anchor_of(c, "noop").pps > 0.0, "{v}");
                assert!(whole >= rounds[0] * 0.5 && whole <= rounds[n - 1] * 2.0, "pps / {anchor_program} pps = {whole} far outside the rounds: {v}");
                if c.rules == 0 {
                    assert_eq!(c.verdict, "pass");
                    assert_eq!(c.frames_passed, c.frames_seen, "no rule: passed: {v}");
                    assert_eq!(c.frames_dropped, 0, "{v}");
                } else {
                    assert_eq!(c.verdict, "drop");
                    assert_eq!(c.frames_dropped, c.frames_seen, "the frame's rule drops it: {v}");
                    assert_eq!(c.frames_passed, 0, "{v}");
                    assert_eq!(ratio, ratio_drop, "with a dropping rule the two ratios are one: {v}");
                }
                assert_eq!(c.frames_forwarded, 0, "{v}");
            }
            p => panic!("unknown program {p}"),
        }
    }
    // The whole list is what `--json` prints.
    let list = serde_json::to_value(&r.cells).unwrap();
    assert_eq!(list.as_array().unwrap().len(), want);
    let table = bench::table(&r);
    eprintln!("{table}");
    assert!(table.lines().count() > want);
    assert!(table.contains("noop_pass") && table.contains("anchor") && table.contains("r_drop"), "the table names the anchors:\n{table}");
}
