//! The paper's three workloads (32 B at 1 kHz latency, 32 B sample rate,
//! 1 KiB bandwidth; reliable) per datapath, detpath against detpath across
//! the testbed, with ddsperf against ddsperf as the reference row. The same
//! as `detpath pubsub bench`, for use before the CLI carries it.
//!
//! ```text
//! cargo run --release -p detpath-pubsub --example pubsub_bench -- [seconds] [datapath,...] [--blocking]
//! ```
//! Needs root (testbed namespaces, XDP, DPDK) and ddsperf (cyclonedds-tools).

use detpath_pubsub::bench::{bench, BenchOptions};
use detpath_pubsub::transport::Wait;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds = args.first().and_then(|s| s.parse().ok()).unwrap_or(10);
    let datapaths = args
        .get(1)
        .filter(|s| !s.starts_with("--"))
        .map(|s| s.split(',').map(String::from).collect())
        .unwrap_or_else(|| vec!["udp".into(), "afxdp".into(), "xdppoll".into(), "dpdk".into()]);
    let wait = if args.iter().any(|a| a == "--blocking") { Wait::Block } else { Wait::Busy };
    let o = BenchOptions { datapaths, seconds, with_ddsperf: !args.iter().any(|a| a == "--no-ddsperf"), wait };
    let rows = match bench(&o, |r| eprintln!("{}", serde_json::to_string(r).unwrap_or_default())) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pubsub_bench: {e}");
            std::process::exit(2);
        }
    };
    let us = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.1}"));
    println!(
        "{:<16} {:<18} {:>8} {:>8} {:>8} {:>8} {:>9} {:>11} {:>8} {:>6}",
        "system", "workload", "mean us", "p50 us", "p99 us", "p99.99", "max us", "samples/s", "Mb/s", "lost"
    );
    for r in &rows {
        let l = r.latency_us.as_ref();
        println!(
            "{:<16} {:<18} {:>8} {:>8} {:>8} {:>8} {:>9} {:>11} {:>8} {:>6}",
            r.system,
            r.workload,
            us(l.map(|l| l.mean)),
            us(l.map(|l| l.p50)),
            us(l.map(|l| l.p99)),
            us(l.and_then(|l| l.p99_99)),
            us(l.map(|l| l.max)),
            r.samples_per_s.map_or(String::new(), |x| format!("{x:.0}")),
            r.mbit_per_s.map_or(String::new(), |x| format!("{x:.1}")),
            r.lost
        );
    }
}
