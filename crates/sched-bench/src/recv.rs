//! The receiver (time-stamps every frame as it comes off the ring or socket)
//! and the analysis (inter-arrival error, PDV, release error, counters).

use super::probe_payload::{Header, FLOOD_FLOW};
use super::send::Sent;
use super::timeline::Timeline;
use super::{BeShare, BenchConfig, ClassReport, FlowReport, Method, RunReport};
use crate::ErrorSummary;
use detpath::sys::cputime::{ThreadCpu, ThreadMeter};
use detpath::{monotonic_ns, Endpoint, RecvMode, RxBatch};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// One real-time arrival.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrival {
    pub flow: u16,
    pub seq: u64,
    pub scheduled_ns: u64,
    pub rx_ns: u64,
}

/// What the receiver got.
pub struct Received {
    pub arrivals: Vec<Arrival>,
    pub flood: u64,
    pub foreign: u64,
    /// Benchmark frames whose delay could not be real ([`plausible_delay`]): left out.
    pub implausible: u64,
    /// The receiving thread's CPU time over the run.
    pub cpu: ThreadCpu,
}

/// Busy-polls `ep` until `stop`, recording every benchmark frame; sleeps
/// through the timeline's pauses (waking 1 ms before each segment).
pub fn receive(ep: &mut dyn Endpoint, capacity: usize, tl: &Timeline, stop: &AtomicBool) -> anyhow::Result<Received> {
    let meter = ThreadMeter::start("receiver");
    let mut arrivals = Vec::with_capacity(capacity);
    let mut batch = RxBatch::new(64, 2048);
    let (mut flood, mut foreign, mut implausible) = (0u64, 0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let now = monotonic_ns();
        // More than 2 ms into a pause (the last frames are in): sleep until just before the next segment.
        if now < tl.end && !tl.active(now) && !tl.active(now.saturating_sub(2_000_000)) {
            let wake = tl.next_on(now).saturating_sub(1_000_000);
            if wake > now {
                super::send::sleep_until(wake);
                continue;
            }
        }
        // After the end, wait in the kernel for stragglers instead of spinning.
        let mode = if now > tl.end + 5_000_000 {
            RecvMode::Blocking { timeout: Some(Duration::from_millis(5)) }
        } else {
            RecvMode::BusyPoll { timeout: Some(Duration::from_millis(1)) }
        };
        ep.recv_batch(&mut batch, mode)?;
        for (m, payload) in batch.iter() {
            match Header::parse(payload) {
                Some(h) if h.flow == FLOOD_FLOW => flood += 1,
                Some(h) if !plausible_delay(h.scheduled_ns, m.rx_ns) => implausible += 1,
                Some(h) => {
                    if arrivals.len() < arrivals.capacity() {
                        arrivals.push(Arrival { flow: h.flow, seq: h.seq, scheduled_ns: h.scheduled_ns, rx_ns: m.rx_ns });
                    }
                }
                None => foreign += 1,
            }
        }
    }
    Ok(Received { arrivals, flood, foreign, implausible, cpu: meter.stop() })
}

/// The earliest a real frame arrives before its scheduled instant, ns (a
/// slot scheduler may let it out a slot early; a second is far beyond that).
const MAX_EARLY_NS: i128 = 1_000_000_000;
/// The latest a real frame arrives after its scheduled instant, ns.
const MAX_LATE_NS: i128 = 10_000_000_000;

/// Whether a frame's delay (arrival - scheduled instant, both on this
/// host's CLOCK_MONOTONIC) could be real. One forged frame scheduled at
/// `u64::MAX` would otherwise set its flow's minimum delay to about
/// -1.8e19 ns and so every PDV sample (delay - minimum) to about 1.8e19 ns.
fn plausible_delay(scheduled_ns: u64, rx_ns: u64) -> bool {
    (-MAX_EARLY_NS..=MAX_LATE_NS).contains(&(rx_ns as i128 - scheduled_ns as i128))
}

/// Exact percentiles of a sorted slice.
pub(crate) fn summary_sorted(v: &[u64]) -> ErrorSummary {
    if v.is_empty() {
        return ErrorSummary::default();
    }
    let q = |p: f64| v[(((v.len() - 1) as f64) * p).round() as usize];
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
    ErrorSummary { count: v.len() as u64, mean, p50: q(0.5), p99: q(0.99), p9999: q(0.9999), max: v[v.len() - 1] }
}

/// Inter-arrival errors and PDV of one flow's arrivals (sorted by seq), counting only instances due at or after `from`.
/// The inter-arrival error is against the planned gap (the scheduled instants' difference: the period for a
/// strictly periodic flow, the period plus the change of planned deviation for a planned one).
fn flow_figures(arr: &[Arrival], from: u64) -> (Vec<u64>, Vec<u64>) {
    let mut iat = Vec::new();
    for w in arr.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if b.seq == a.seq + 1 && a.scheduled_ns >= from {
            let gap = b.rx_ns as i128 - a.rx_ns as i128;
            let planned = b.scheduled_ns as i128 - a.scheduled_ns as i128;
            iat.push((gap - planned).unsigned_abs() as u64);
        }
    }
    let delays: Vec<i128> = arr.iter().filter(|a| a.scheduled_ns >= from).map(|a| a.rx_ns as i128 - a.scheduled_ns as i128).collect();
    let min = delays.iter().copied().min().unwrap_or(0);
    let pdv = delays.iter().map(|d| (d - min) as u64).collect();
    (iat, pdv)
}

/// Puts sender and receiver figures together.
pub(crate) fn analyse(cfg: &BenchConfig, tl: &Timeline, dp: &str, method: Method, endpoints: &str, sent: Sent, received: Received) -> RunReport {
    let mut all_iat = Vec::new();
    let mut all_pdv = Vec::new();
    let mut flows = Vec::new();
    let mut rt_received = 0;
    for (i, f) in cfg.flows.iter().enumerate() {
        let fs = sent.flows.get(i);
        let mut arr: Vec<Arrival> = received.arrivals.iter().filter(|a| a.flow as usize == i).copied().collect();
        arr.sort_by_key(|a| (a.seq, a.rx_ns));
        arr.dedup_by_key(|a| a.seq);
        rt_received += arr.len() as u64;
        let (mut iat, mut pdv) = flow_figures(&arr, tl.measure_from);
        all_iat.extend_from_slice(&iat);
        all_pdv.extend_from_slice(&pdv);
        iat.sort_unstable();
        pdv.sort_unstable();
        flows.push(FlowReport {
            name: f.name.clone(),
            class: f.class.clone(),
            period_ns: f.period_ns,
            size: f.size,
            planned: fs.map(|x| x.planned).unwrap_or(0),
            sent: fs.map(|x| x.sent).unwrap_or(0),
            refused: fs.map(|x| x.refused).unwrap_or(0),
            outside_partition: fs.map(|x| x.outside_partition).unwrap_or(0),
            release_error_ns: fs.map(|x| ErrorSummary::of(&x.release)).unwrap_or_default(),
            planned_deviation_ns: f.offsets_ns.iter().max().zip(f.offsets_ns.iter().min()).map(|(a, b)| (a - b) as u64).unwrap_or(0),
            received: arr.len() as u64,
            iat_error_ns: summary_sorted(&iat),
            pdv_ns: summary_sorted(&pdv),
        });
    }
    all_iat.sort_unstable();
    all_pdv.sort_unstable();
    let rt_planned: u64 = sent.flows.iter().map(|f| f.planned).sum();
    let classes = cfg
        .sched
        .classes
        .iter()
        .zip(&sent.classes)
        .map(|(c, (k, h))| ClassReport { name: c.name.clone(), kind: c.kind, mode: c.mode, counters: *k, release_error_ns: ErrorSummary::of(h) })
        .collect();
    let w = sent.be;
    let offered = |n: u64| (cfg.be_load.is_some() && w.slots > 0).then(|| n as f64 / w.slots as f64);
    let be = (method == Method::Slots && cfg.be_class.is_some()).then(|| BeShare {
        offered_fraction: offered(w.offered),
        refused_fraction: offered(w.refused),
        expected_fraction: cfg.be_fraction(),
        measured_fraction: w.released as f64 / w.slots.max(1) as f64,
        sent_in_window: w.released,
        slots_in_window: w.slots,
        missed_slots: w.missed,
        received: received.flood,
    });
    RunReport {
        datapath: dp.to_string(),
        method,
        endpoints: endpoints.to_string(),
        iat_error_ns: summary_sorted(&all_iat),
        release_error_ns: ErrorSummary::of(&sent.release),
        send_cost_ns: ErrorSummary::of(&sent.send_cost),
        pdv_ns: summary_sorted(&all_pdv),
        violations: sent.violations,
        late_tolerance_ns: cfg.sched.late_tolerance_ns,
        rt_planned,
        rt_sent: sent.flows.iter().map(|f| f.sent).sum(),
        rt_received,
        rt_delivery: rt_received as f64 / rt_planned.max(1) as f64,
        rx_foreign: received.foreign,
        rx_implausible: received.implausible,
        classes,
        flows,
        be,
        cpu: None,
        wall_s: 0.0,
        iat_samples: all_iat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iat_and_pdv_of_a_jittery_flow() {
        let a = |seq: u64, rx: u64| Arrival { flow: 0, seq, scheduled_ns: 1_000 + seq * 100, rx_ns: rx };
        // Seq 2 is lost: no IAT across the gap.
        let arr = [a(0, 1_010), a(1, 1_115), a(3, 1_320), a(4, 1_410)];
        let (iat, pdv) = flow_figures(&arr, 0);
        assert_eq!(iat, vec![5, 10]);
        assert_eq!(pdv, vec![0, 5, 10, 0]);
        let s = summary_sorted(&[1, 2, 3, 4, 100]);
        assert_eq!((s.p50, s.max, s.count), (3, 100, 5));
    }

    /// A forged frame scheduled at `u64::MAX` (one datagram from outside) at
    /// a real receiver on loopback is counted and left out: its flow's PDV
    /// stays that of the real frames (it used to be ~1.8e19 ns).
    #[test]
    fn a_frame_with_an_implausible_delay_is_counted_and_left_out() {
        let mut ep = detpath_open::open("udp://127.0.0.1:0").unwrap();
        let at = ep.local_addr();
        let now = monotonic_ns();
        let tl = Timeline { start: now, measure_from: now, end: now + 200_000_000, on_ns: 200_000_000, off_ns: 0 };
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let frame = |seq: u64, scheduled_ns: u64| {
            let mut b = [0u8; 64];
            Header { flow: 0, seq, scheduled_ns }.write(&mut b);
            b
        };
        sock.send_to(&frame(0, now), at).unwrap();
        sock.send_to(&frame(1, u64::MAX), at).unwrap();
        sock.send_to(&frame(2, now + 1_000), at).unwrap();
        // Stopped once the receiver has had time to take all three.
        let stop = AtomicBool::new(false);
        let got = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                stop.store(true, Ordering::Relaxed);
            });
            receive(ep.as_mut(), 16, &tl, &stop).unwrap()
        });
        assert_eq!(got.implausible, 1, "the forged frame is counted");
        assert_eq!(got.arrivals.iter().map(|a| a.seq).collect::<Vec<_>>(), [0, 2], "and left out");
        let (_, pdv) = flow_figures(&got.arrivals, now);
        assert!(pdv.iter().all(|&d| d < 1_000_000_000), "PDV of the real frames only: {pdv:?}");
    }
}
