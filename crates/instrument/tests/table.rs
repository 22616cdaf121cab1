//! The human tables.
mod common;

use detpath_instrument::table;

#[test]
fn paper_table_layout_with_three_configurations() {
    let mut runs = Vec::new();
    for (i, dp) in ["xdppoll", "afxdp", "udp"].iter().enumerate() {
        for (stress, tuned) in [(0, false), (80, false), (80, true)] {
            let recs = common::records(i as u64 * 10 + stress as u64 + tuned as u64, 12_000, 10_000 * (i as u64 + 1), 1_000.0, 1_000_000, 4_000);
            runs.push(common::run(dp, stress, tuned, &recs));
        }
    }
    let t = table::paper_table(&runs);
    print!("{t}");
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with("One-way latency (RTT/2) in µs, 1024 B probes at 81.9 Mbit/s"));
    for h in ["Median", "p99", "p99.99", "Max", "Jitter"] {
        assert!(lines[1].contains(h), "{}", lines[1]);
    }
    assert_eq!(lines[2].matches("D&S").count(), 5);
    assert_eq!(lines[2].matches("T&S").count(), 5);
    assert!(lines[4].starts_with("XDP poll"));
    assert!(lines[5].starts_with("AF_XDP"));
    assert!(lines[6].starts_with("UDP socket"));
    // 16 columns: label + 5 metrics x 3 configurations.
    assert_eq!(lines[4].split_whitespace().count(), 2 + 15);
    assert!(t.contains("T&S = Tuned & Stress"));

    let d = table::detail_table(&runs);
    print!("{d}");
    assert!(d.contains("n/a (needs 100,000)"), "p99.999 of 12,000 samples");
    assert!(d.contains("n/a (needs 1,000,000)"));
    let env = table::environment_note(&runs);
    assert!(env.starts_with("Environment: host "));
    assert!(env.contains("client cpu 2, server cpu 3"));
}

#[test]
fn one_configuration_has_one_header_line() {
    let recs = common::records(5, 150, 8_000, 500.0, 0, 0);
    let runs = vec![common::run("udp", 0, false, &recs), common::run("dpdk", 0, false, &recs)];
    let t = table::paper_table(&runs);
    print!("{t}");
    assert!(t.lines().next().unwrap().ends_with("configuration D"));
    assert!(t.lines().nth(2).unwrap().starts_with("---"));
    assert!(t.contains("n/a (needs 10,000)"));
}

#[test]
fn empty_and_all_lost() {
    assert_eq!(table::paper_table(&[]), "(no runs)\n");
    let recs: Vec<_> = common::records(1, 10, 1, 1.0, 0, 0)
        .into_iter()
        .map(|mut r| {
            r.status = detpath_instrument::Status::Lost;
            r
        })
        .collect();
    let runs = vec![common::run("udp", 0, false, &recs)];
    let t = table::render(&runs);
    assert!(t.contains("UDP socket"));
    assert_eq!(runs[0].loss.lost, 10);
    assert_eq!(runs[0].latency.count, 0);
}
