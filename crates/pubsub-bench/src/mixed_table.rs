//! The table of the mixed workload ([`super::mixed`]): one line per arm,
//! the arms of a datapath and configuration side by side (priority, fifo,
//! then ddsperf), under a line naming the machine (the same environment
//! line as the instrument's tables: host, kernel, CPU model, CPU count).
//!
//! Control latency is RTT / 2 while bulk ran (`p99.99` `-` below 10,000
//! samples and for ddsperf, whose p99 is its worst second's); `over budget`
//! counts pings whose one-way latency passed the budget (ddsperf: `n/a`);
//! `off p50`/`off max` are the control figures while bulk did not run.
//! `kept %` is the bulk rate beside control over its rate alone on the same
//! endpoint (`bulk.kept_fraction`). Under the table, per detpath arm, where
//! the time of each over-budget ping went ([`super::mixed::causes`]), the engine's own
//! budget count per detpath arm (its control reader, whole run) with the
//! causes it named, then issue 39's goals per datapath ([`super::mixed::goals`]):
//! each `met`, `NOT MET` or `not measured`, with its figures.

use super::mixed::sched_probe::ClassFigures;
use super::mixed::{goals, MixedGoals, MixedRow, Percentiles};
use detpath_instrument::results::Environment;
use std::fmt::Write as _;

fn f1(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite()).map_or_else(|| "-".into(), |x| format!("{x:.1}"))
}

/// The environment line (as the instrument's tables print it).
pub fn environment_line(e: &Environment) -> String {
    format!("Environment: host {}, {}, CPU {} ({} CPUs), detpath {}, {}", e.hostname, e.kernel, e.cpu_model, e.cpus, e.detpath_version, e.date)
}

/// The table of the rows, with the machine's line on top.
pub fn render(rows: &[MixedRow], env: &Environment) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "{}", environment_line(env));
    let budget = rows.first().map_or(0.0, |r| r.control.budget_us);
    let _ = writeln!(
        t,
        "mixed: control 64 B at 1 kHz (RTT/2, us, while bulk ran) beside bulk 1 KiB as fast as flow control allows; budget {budget:.0} us one-way"
    );
    let _ = writeln!(
        t,
        "{:<5} {:<8} {:<9} {:>7} {:>8} {:>8} {:>9} {:>9} {:>9} {:>7} {:>8} {:>8} {:>12} {:>9} {:>6} {:>6}",
        "conf", "datapath", "arm", "n", "p50", "p99", "p99.99", "max", "over bdgt", "lost", "off p50", "off max", "bulk samp/s", "bulk Mb/s", "kept %", "cpu %"
    );
    for r in rows {
        let l: Option<Percentiles> = r.control.latency_us;
        let off = r.control.latency_us_bulk_off;
        let _ = writeln!(
            t,
            "{:<5} {:<8} {:<9} {:>7} {:>8} {:>8} {:>9} {:>9} {:>9} {:>7} {:>8} {:>8} {:>12.0} {:>9.1} {:>6} {:>6}",
            r.configuration,
            r.datapath,
            r.arm,
            l.map_or(0, |l| l.count),
            f1(l.map(|l| l.p50)),
            f1(l.and_then(|l| l.p99)),
            f1(l.and_then(|l| l.p9999)),
            f1(l.map(|l| l.max)),
            r.control.budget_violations.map_or_else(|| "n/a".into(), |v| v.to_string()),
            r.control.lost,
            f1(off.map(|l| l.p50)),
            f1(off.map(|l| l.max)),
            r.bulk.samples_per_s,
            r.bulk.mbps,
            f1(r.bulk.kept_fraction.map(|k| k * 100.0)),
            f1(r.cpu_percent),
        );
    }
    for r in rows {
        if let Some(v) = &r.control.violation_causes {
            let causes: Vec<String> = v.causes.iter().filter(|(_, n)| **n > 0).map(|(c, n)| format!("{c} {n}")).collect();
            let _ = writeln!(
                t,
                "{} {} {}: where the time went, bulk on ({} one-way): {} of {} over{}, {} lost{}",
                r.configuration,
                r.datapath,
                r.arm,
                v.judged_on,
                v.over,
                v.judged,
                if causes.is_empty() { String::new() } else { format!(" ({})", causes.join(", ")) },
                v.lost,
                if v.unseen_sends > 0 { format!(", {} with no send seen", v.unseen_sends) } else { String::new() }
            );
        }
    }
    for r in rows {
        if let Some(b) = &r.control.engine_budget {
            let causes: Vec<String> = b.causes.iter().filter(|(_, n)| **n > 0).map(|(c, n)| format!("{c} {n}")).collect();
            let _ = writeln!(
                t,
                "{} {} {}: the engine's budget over the whole run ({} clock): {} within, {} over{}, {} unjudged",
                r.configuration,
                r.datapath,
                r.arm,
                b.clock,
                b.within,
                b.over,
                if causes.is_empty() { String::new() } else { format!(" ({})", causes.join(", ")) },
                b.unjudged
            );
        }
    }
    for r in rows {
        if let Some(sc) = &r.sched {
            for (phase, classes) in [("bulk on, ping side", &sc.ping_bulk_on), ("bulk alone, ping side", &sc.ping_bulk_alone), ("whole run, pong side", &sc.pong_run)] {
                for c in classes {
                    let _ = writeln!(t, "{} {} {} scheduler, {phase}: {}", r.configuration, r.datapath, r.arm, class_line(c));
                }
            }
        }
    }
    if rows.iter().any(|r| r.arm == "ddsperf") {
        let _ = writeln!(t, "ddsperf: per-second figures only; its p99 is the worst second's p99 (not an exact p99), its p50 the median of its per-second medians.");
    }
    for g in goals(rows) {
        goal_lines(&mut t, &g);
    }
    t
}

/// One scheduler class's counters in a line: what it sent, what was late,
/// moved, missed or refused, and how late its slots were released.
pub fn class_line(c: &ClassFigures) -> String {
    let e = &c.release_error_ns;
    format!(
        "{} sent {} of {} accepted, refused {}, late {}, moved {}, dropped {}, missed slots {}, queue high {}; release error us p50 {:.1} p99 {:.1} max {:.1}",
        c.class,
        c.sent,
        c.accepted,
        c.refused,
        c.late,
        c.moved,
        c.dropped,
        c.missed_slots,
        c.prebuffer_high_water,
        e.p50 as f64 / 1e3,
        e.p99 as f64 / 1e3,
        e.max as f64 / 1e3
    )
}

/// The lines of one datapath's goals: each goal's verdict and figures, ddsperf beside.
pub fn goal_lines(t: &mut String, g: &MixedGoals) {
    let _ = writeln!(t, "goals, {} {} (repeat {}): {}", g.configuration, g.datapath, g.repeat, g.conditions);
    let line = |t: &mut String, what: &str, goal: &super::mixed::Goal| {
        let _ = writeln!(t, "  {what}: {}: {}", goal.status.label(), goal.detail);
    };
    line(t, &format!("zero budget violations at {:.0} us (priority arm)", g.budget_us), &g.zero_budget_violations);
    line(t, "bulk kept >= 80 % of its rate alone (priority arm)", &g.bulk_kept);
    line(t, "control p99.99 <= 0.1x the fifo arm's", &g.p9999_vs_fifo);
    match &g.ddsperf {
        Some(d) => {
            let _ = writeln!(
                t,
                "  ddsperf beside it (reference, not judged): control p50 {} us, p99 {} us (worst second), max {} us; bulk {:.0} samples/s ({:.1} Mb/s)",
                f1(d.p50_us),
                f1(d.p99_us),
                f1(d.max_us),
                d.bulk_samples_per_s,
                d.bulk_mbps
            );
        }
        None => {
            let _ = writeln!(t, "  ddsperf beside it: not run (--no-ddsperf, or it failed)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mixed::{BulkFigures, ControlFigures};

    #[test]
    fn arms_are_lines_under_the_machine() {
        let l = Percentiles { count: 1000, mean: 20.0, p50: 18.0, p99: Some(40.5), p9999: None, max: 90.0 };
        let row = |arm: &str, v: Option<u64>| MixedRow {
            arm: arm.into(),
            configuration: "D".into(),
            datapath: "afxdp".into(),
            control: ControlFigures { budget_us: 100.0, latency_us: Some(l), budget_violations: v, pings_sent: 1000, ..ControlFigures::default() },
            bulk: BulkFigures { samples_per_s: 12345.0, mbps: 101.1, ..BulkFigures::default() },
            ..MixedRow::default()
        };
        let env = Environment { cpu_model: "Test CPU".into(), cpus: 2, ..Environment::capture() };
        let t = render(&[row("priority", Some(0)), row("fifo", Some(7)), row("ddsperf", None)], &env);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("Environment: ") && lines[0].contains("CPU Test CPU (2 CPUs)"), "{t}");
        let fifo = lines.iter().find(|l| l.split_whitespace().nth(2) == Some("fifo")).unwrap();
        assert!(fifo.contains(" 40.5 ") && fifo.contains(" 7 ") && fifo.contains("12345"), "{t}");
        let dds = lines.iter().find(|l| l.split_whitespace().nth(2) == Some("ddsperf")).unwrap();
        assert!(dds.contains("n/a"), "{t}");
        assert!(t.contains("worst second"), "{t}");
        // The goals under the table, one verdict per goal, ddsperf beside.
        assert!(t.contains("goals, D afxdp (repeat 0)"), "{t}");
        assert!(t.contains("zero budget violations at 100 us (priority arm): met"), "{t}");
        assert!(t.contains("bulk kept >= 80 % of its rate alone (priority arm): not measured"), "{t}");
        assert!(t.contains("control p99.99 <= 0.1x the fifo arm's: not measured: fewer than 10,000 samples"), "{t}");
        assert!(t.contains("ddsperf beside it (reference, not judged): control p50 18.0 us, p99 40.5 us"), "{t}");
    }
}
