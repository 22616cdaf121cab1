//! `detpath sched ptp master|slave`: the slot clock over IEEE 1588 (PTPv2,
//! UDP/IPv4, E2E two-step), against linuxptp's ptp4l or another detpath.
//!
//! The event port is the user's endpoint spec (any datapath, port 319); the
//! general port 320 and the group 224.0.1.129 are kernel sockets on the same
//! interface (`detpath_sched::ptp`). `--offset` and `--drift-ppb` inject
//! an error into detpath's own slot clock (never a host clock). `--json`
//! prints the summary as one JSON object on the last line of stdout.
//!
//! Argument parsing and printing only; the work is in `detpath_sched::ptp`.

use detpath_sched::ptp::{self, Ports, PtpClock, PtpConfig};
use std::time::Duration;

/// `detpath sched ptp ...`
#[derive(clap::Args)]
pub struct Args {
    /// master (a master-only port: Announce, two-step Sync, Delay_Resp) or slave (slave-only: follows the best master heard).
    #[arg(value_parser = ["master", "slave"])]
    role: String,
    /// The event port's endpoint, e.g. `udp://dpa?port=319&rx_stamp=kernel` or `afxdp://dpa?port=319&rx_stamp=xdp`.
    #[arg(long)]
    endpoint: String,
    /// Network namespace to run in (e.g. a testbed side, detpath-a).
    #[arg(long)]
    netns: Option<String>,
    /// How long to run, e.g. `30s` (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs, default_value = "30s")]
    duration: Duration,
    /// Offset injected into detpath's slot clock, e.g. `-37us` (a bare number is ns).
    #[arg(long, alias = "offset-ns", value_name = "OFFSET", value_parser = crate::vocab::offset, default_value = "0", allow_hyphen_values = true)]
    offset: crate::vocab::Offset,
    /// Rate error injected into detpath's slot clock, ppb (50 ppm = 50000).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    drift_ppb: i64,
    /// Slave: locked means |residual| within this for the last 5 s, e.g.
    /// `20us` (a bare number is ns).
    #[arg(long, alias = "lock-threshold-ns", value_name = "DURATION", value_parser = crate::vocab::nanos, default_value = "20us")]
    lock_threshold: Duration,
    /// Master: log2 of the Sync interval in s (-2: four a second; at most 0).
    #[arg(long, default_value_t = -2, allow_negative_numbers = true, value_parser = clap::value_parser!(i8).range(-7..=0))]
    log_sync_interval: i8,
    /// Master: log2 of the Announce interval in s (-1: two a second; at most -1).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_parser = clap::value_parser!(i8).range(-7..=-1))]
    log_announce_interval: i8,
    /// Master: grandmasterPriority1 (lower wins a best-master choice).
    #[arg(long, default_value_t = 128)]
    priority1: u8,
    /// PTP domain.
    #[arg(long, default_value_t = 0)]
    domain: u8,
    /// Print the summary as one JSON document (one object) on the last line of stdout.
    #[arg(long)]
    json: bool,
}

/// Runs `detpath sched ptp ...`: exit 0 when the slave locked (a master: when it ran).
pub fn run(a: Args) -> anyhow::Result<i32> {
    anyhow::ensure!(!a.duration.is_zero(), "--duration must be positive");
    detpath::sys::cleanup::install_signal_handler(detpath::sys::cleanup::OnSignal::SetFlag);
    let cfg = PtpConfig {
        offset_ns: a.offset.ns(),
        drift_ppb: a.drift_ppb,
        duration_ns: crate::vocab::ns(a.duration),
        lock_threshold_ns: crate::vocab::ns(a.lock_threshold),
        log_sync_interval: a.log_sync_interval,
        log_announce_interval: a.log_announce_interval,
        priority1: a.priority1,
        domain: a.domain,
    };
    let work = || -> anyhow::Result<(serde_json::Value, i32)> {
        let mut ports = Ports::open(&a.endpoint)?;
        eprintln!("sched ptp: {} on {} as {}, event endpoint {}", a.role, ports.iface, ports.me, ports.endpoint);
        let mut clock = PtpClock::new(cfg.offset_ns, cfg.drift_ppb);
        let stop = &detpath::sys::cleanup::interrupted;
        if a.role == "master" {
            let r = ptp::run_master(&mut ports, &clock, &cfg, stop)?;
            let mut v = serde_json::json!({ "role": "master", "locked": null, "lock_s": null, "offset_ns": null });
            merge(&mut v, serde_json::to_value(&r)?);
            if !a.json {
                println!(
                    "master {:.1} s: {} Announce, {} Sync to the group, {} unicast through the endpoint, {} Delay_Resp; slaves: {}",
                    r.run_s,
                    r.announces,
                    r.syncs_group,
                    r.syncs_unicast,
                    r.delay_resps,
                    if r.slaves.is_empty() {
                        "none".to_string()
                    } else {
                        r.slaves.iter().map(|s| format!("{} at {}", s.port, s.addr)).collect::<Vec<_>>().join(", ")
                    }
                );
                println!(
                    "slot clock − CLOCK_REALTIME at the end: {} ns (injected {} ns, {} ppb)",
                    r.final_error_ns, r.injected_offset_ns, r.injected_drift_ppb
                );
            }
            Ok((v, 0))
        } else {
            let r = ptp::run_slave(&mut ports, &mut clock, &cfg, stop)?;
            let s = &r.sync;
            let offset = s.residual_p50_ns.map(|p50| serde_json::json!({ "p50": p50, "p99": s.residual_p99_ns, "max": s.residual_max_ns }));
            let mut v = serde_json::json!({
                "role": "slave",
                "locked": r.locked,
                "lock_s": s.time_to_lock_s,
                "offset_ns": offset,
                "lock_threshold_ns": s.lock_threshold_ns,
                "final_drift_ppb": s.final_drift_ppb,
                "rejected": s.rejected,
                "samples": s.samples.len(),
            });
            let mut rest = serde_json::to_value(&r)?;
            if let Some(o) = rest.as_object_mut() {
                o.remove("sync");
            }
            merge(&mut v, rest);
            if !a.json {
                let ns = |v: Option<u64>| v.map(|x| format!("{x} ns")).unwrap_or_else(|| "-".into());
                println!("slave {:.1} s, master {}", r.run_s, r.master.as_deref().unwrap_or("none heard"));
                println!(
                    "  lock {} | residual p50 {} p99 {} max {} | path delay {} ns | drift est. {:.0} ppb (injected {} ppb)",
                    s.time_to_lock_s.map(|t| format!("{t:.2} s")).unwrap_or_else(|| "never".into()),
                    ns(s.residual_p50_ns),
                    ns(s.residual_p99_ns),
                    ns(s.residual_max_ns),
                    r.path_delay_ns,
                    s.final_drift_ppb,
                    r.injected_drift_ppb
                );
                println!("  {} Sync, {} Delay_Req, {} Delay_Resp; dropped {:?}", r.syncs, r.delay_reqs, r.delay_resps, r.drops);
                println!("  (residual: slot clock − CLOCK_REALTIME, the master's time when it is ptp4l -S or a detpath master on this host)");
            }
            Ok((v, if r.locked { 0 } else { 1 }))
        }
    };
    let (summary, code) = match &a.netns {
        Some(ns) => detpath::sys::netns::run_in(ns, work).map_err(|e| anyhow::anyhow!("entering network namespace {ns}: {e}"))??,
        None => work()?,
    };
    if a.json {
        println!("{summary}");
    }
    Ok(code)
}

/// Adds the fields of `extra` that `v` does not have.
fn merge(v: &mut serde_json::Value, extra: serde_json::Value) {
    if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
        for (k, x) in e {
            o.entry(k).or_insert(x);
        }
    }
}

/// `detpath sched model`'s dual-clock table (KeepON §5.2, Figure 13(a); simulated rings).
pub fn print_dual_clock(rows: &[detpath_sched::dualclock::DualClockReport]) {
    println!("\nDual clock (§5.2): |clock − true time|, Tx clock alone (single clock) / Rx clock alone / merged; SIMULATED rings, 300-byte slots at 1 Gb/s");
    println!(
        "{:>5} {:>8} {:>8} {:>22} {:>22} {:>22} {:>8} {:>8} {:>6}",
        "batch", "stalls", "merge", "Tx p50/p99/max µs", "Rx p50/p99/max µs", "merged p50/p99/max µs", "underrun", "rx drop", "fixes"
    );
    let us = |e: &detpath_sched::dualclock::ErrorQuantiles| format!("{:.2}/{:.2}/{:.1}", e.p50 as f64 / 1e3, e.p99 as f64 / 1e3, e.max as f64 / 1e3);
    for r in rows {
        println!(
            "{:>5} {:>8} {:>8} {:>22} {:>22} {:>22} {:>8} {:>8} {:>6}",
            r.config.ring.batch,
            if r.config.stall_prob > 0.0 { "200/s".to_string() } else { "none".into() },
            format!("{:?}", r.config.merge).to_lowercase(),
            us(&r.tx),
            us(&r.rx),
            us(&r.merged),
            r.tx_underruns,
            r.rx_dropped,
            r.corrections
        );
    }
    println!("(ring: four batches, at least 32 descriptors; stalls: 200 a second on each side, 100 µs on average; a fault: |Tx − Rx| above four poll gaps, the lagging clock takes the leading one's value)");
}
