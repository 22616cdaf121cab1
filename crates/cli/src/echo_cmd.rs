//! `detpath echo <spec>`: an echo server on any datapath, like `sockperf
//! server`: every datagram goes back to its sender over the same endpoint.
//! Prints the obtained capabilities first, the counters when stopped.

use detpath::sys::cleanup::{self, OnSignal};
use detpath::RecvMode;
use std::time::Duration;

#[derive(clap::Args)]
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
    #[command(flatten)]
    metrics: crate::metrics_args::MetricsArgs,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let metrics = args.metrics.start()?; // before --netns: scraped from the host
    let _ns = args.netns.as_deref().map(detpath::sys::netns::enter).transpose()?;
    let mut ep = metrics.wrap(detpath_sched::open(&args.spec)?);
    println!("echo on {} ({})", ep.local_addr(), ep.capabilities().summary());
    let mode = if args.blocking {
        RecvMode::Blocking { timeout: Some(Duration::from_millis(100)) }
    } else {
        RecvMode::BusyPoll { timeout: Some(Duration::from_millis(100)) }
    };
    let mut buf = vec![0u8; 65536];
    let mut echoed = 0u64;
    while !cleanup::interrupted() && args.count.is_none_or(|c| echoed < c) {
        if let Some(rx) = ep.recv(&mut buf, mode)? {
            ep.send_to(&buf[..rx.len], rx.peer)?;
            echoed += 1;
        }
    }
    println!("echoed {echoed}; counters {:?}", ep.counters());
    Ok(0)
}
