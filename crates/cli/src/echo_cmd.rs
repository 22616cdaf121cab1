//! `detpath echo <spec>`: an echo server on any datapath, like `sockperf
//! server`: every datagram goes back to its sender over the same endpoint.
//! Prints the obtained capabilities first, the counters when stopped.
//!
//! A reply that cannot be sent (its source is off-link or does not answer
//! ARP, the ring is full, ...) concerns that datagram only: the endpoint
//! counts it by cause (`tx_no_route`, `tx_no_neigh`, `tx_ring_full`,
//! `tx_errors`) and the server goes on. Only an error of the endpoint
//! itself (the interface went away) ends it, with that error.

use detpath::sys::cleanup::{self, OnSignal};
use detpath::RecvMode;
use std::time::Duration;

/// Arguments of `detpath echo`: the endpoint spec, its namespace, when to
/// stop, how receives wait, the summary's form and /metrics.
#[derive(clap::Args)]
#[command(after_help = EXIT_CODES)]
pub struct Args {
    /// Endpoint spec, e.g. `afxdp://dpa?port=7000` or `udp://10.77.0.2:7000`; with
    /// `sched=slots&slot_ns=..&classes=..` the replies leave through the slot scheduler (crates/sched).
    spec: String,
    /// Run inside this network namespace (e.g. `detpath-b` of the testbed).
    #[arg(long)]
    netns: Option<String>,
    /// Stop after this many datagrams (default: run until Ctrl-C / SIGTERM).
    #[arg(long)]
    count: Option<u64>,
    /// Receive by sleeping in the kernel instead of busy-polling.
    #[arg(long)]
    blocking: bool,
    /// Print the final summary as one JSON document (`echoed`, `not_sent`,
    /// `counters` by name) instead of a line of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    metrics: crate::metrics_args::MetricsArgs,
}

/// The exit codes of `detpath echo`.
const EXIT_CODES: &str = "Exit codes: 0 stopped (Ctrl-C, SIGTERM or --count reached; replies that could not be sent are counted, not errors); \
2 an error (the endpoint could not open or failed: the interface went away, permissions).";

/// Echoes every datagram back to its sender until stopped, then prints the
/// summary; returns the exit code of [`EXIT_CODES`].
pub fn run(args: Args) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let metrics = args.metrics.start()?; // before --netns: scraped from the host
    let _ns = args.netns.as_deref().map(detpath::sys::netns::enter).transpose()?;
    let mut ep = detpath_open::open_spec(&detpath_open::parse(&args.spec)?.with_layer(metrics.layer()))?;
    println!("echo on {} ({})", ep.local_addr(), ep.capabilities().summary());
    let mode = if args.blocking {
        RecvMode::Blocking { timeout: Some(Duration::from_millis(100)) }
    } else {
        RecvMode::BusyPoll { timeout: Some(Duration::from_millis(100)) }
    };
    let mut buf = vec![0u8; 65536];
    let (mut echoed, mut not_sent) = (0u64, 0u64);
    while !cleanup::interrupted() && args.count.is_none_or(|c| echoed < c) {
        if let Some(rx) = ep.recv(&mut buf, mode)? {
            match ep.send_to(&buf[..rx.len], rx.peer) {
                Ok(()) => echoed += 1,
                Err(e) if e.is_per_datagram() => {
                    // Counted by the endpoint; said once (a flood must not flood the log).
                    if not_sent == 0 {
                        eprintln!("echo: a reply was not sent ({e}); such replies are counted (tx_no_route, tx_no_neigh, tx_ring_full, tx_errors) and not reported again");
                    }
                    not_sent += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    let counters = ep.counters();
    if args.json {
        let by_name: serde_json::Map<String, serde_json::Value> = counters.iter().map(|(n, v)| (n.to_string(), v.into())).collect();
        println!("{}", serde_json::json!({ "echoed": echoed, "not_sent": not_sent, "counters": by_name }));
    } else {
        let list: Vec<String> = counters.iter().map(|(n, v)| format!("{n}={v}")).collect();
        println!("echoed {echoed}; not sent {not_sent}; counters {}", list.join(" "));
    }
    Ok(0)
}
