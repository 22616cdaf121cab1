//! The fan-out test: one writer in namespace a, K readers in namespace b,
//! 32-byte samples (ddsperf's KeyedSeq of "size 32") at 1 kHz, reliable
//! KEEP_LAST 1 (ddsperf's ping QoS).
//!
//! detpath: the writer and the readers are participants on threads of this
//! process, each on its own endpoint; a reader's latency is one way, its
//! wall clock at take minus the sample's INFO_TS (both namespaces read the
//! same host clock). CycloneDDS: `ddsperf ping 1000Hz size 32` with K
//! `ddsperf pong` processes; ddsperf reports RTT/2 per pong per second.

use super::discovery::{spawn_cyclone, write_cyclone_config};
use super::worker::BASE_PORT;
use super::{FanoutRow, LatencyUs, ScaleError};
use crate::parse_ddsperf_ping;
use detpath::testbed::{Side, Testbed};
use detpath_instrument::stats::{quantile_unchecked, Quantile};
use detpath_pubsub::app::{open_transport, NodeOptions};
use detpath_pubsub::ddsperf::Role;
use detpath_pubsub::driver::{wall_ns, Node, Transport, TransportOutbox};
use detpath_pubsub::engine::Participant;
use detpath_pubsub::qos::Qos;
use detpath_pubsub::transport::{EndpointTransport, Wait};
use detpath_pubsub::types::KeyedSeq;
use detpath_pubsub::wire::Time;
use std::io::Read;
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The fan-out topic.
const TOPIC: &str = "DetpathScaleFanout";

/// Payload size, ddsperf's "size".
pub const SIZE: usize = 32;

/// Samples per second.
pub const RATE_HZ: u64 = 1000;

/// Latency percentiles of one-way latencies (ns) in µs; quantiles the count cannot support are `None`.
pub fn summarize(lat_ns: &mut [u64]) -> LatencyUs {
    lat_ns.sort_unstable();
    let q = |q: Quantile| (lat_ns.len() as u64 >= q.needs()).then(|| quantile_unchecked(lat_ns, q)).flatten().map(|x| x as f64 / 1e3);
    LatencyUs {
        count: lat_ns.len() as u64,
        mean: (!lat_ns.is_empty()).then(|| lat_ns.iter().sum::<u64>() as f64 / lat_ns.len() as f64 / 1e3),
        p50: q(Quantile::MEDIAN),
        p99: q(Quantile::P99),
        p99_9: q(Quantile::P99_9),
        max: lat_ns.last().map(|&x| x as f64 / 1e3),
    }
}

/// One detpath participant of the fan-out on `side` at index `i`.
fn open(datapath: &str, side: &Side, i: u32, peer: Ipv4Addr, max_index: u32) -> Result<(Node<EndpointTransport>, Qos), ScaleError> {
    let mut o = NodeOptions::new(&side.uri(datapath, BASE_PORT + 2 * i as u16), Role::Sub);
    o.netns = Some(side.netns.clone());
    o.peers = vec![peer];
    o.max_index = max_index;
    // K + 1 polling threads on a small machine: each sleeps in the kernel (as CycloneDDS's do).
    o.wait = Wait::Block;
    o.fair_slice_ns = 0;
    o.multicast = false;
    let (t, cfg) = open_transport(&o).map_err(|e| ScaleError::Detpath(format!("{}: {e}", o.endpoint)))?;
    let p = Participant::new(cfg, t.now_ns());
    Ok((Node::new(p, t), Qos::reliable_keep_last(1)))
}

/// detpath's fan-out to `k` readers for `secs` seconds on `datapath`: one row per reader and a pooled one.
pub fn detpath(tb: &Testbed, datapath: &str, k: u32, secs: u64) -> Result<Vec<FanoutRow>, ScaleError> {
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for i in 0..k {
        let (dp, side, peer) = (datapath.to_string(), tb.b().clone(), tb.a().addr);
        let (stop, ready, failed) = (stop.clone(), ready.clone(), failed.clone());
        readers.push(std::thread::spawn(move || -> Result<(Vec<u64>, u64), ScaleError> {
            let opened = open(&dp, &side, i, peer, 0).and_then(|(mut node, qos)| {
                let now = node.transport.now_ns();
                let r = node.participant.create_reader_for(now, TOPIC, qos, &KeyedSeq::with_size(SIZE)).map_err(|e| ScaleError::Detpath(e.to_string()))?;
                Ok((node, r))
            });
            // The writer stops waiting for this reader at once.
            let (mut node, r) = opened.inspect_err(|_| failed.store(true, Ordering::Relaxed))?;
            let (mut lat, mut lost, mut counted) = (Vec::with_capacity((secs * RATE_HZ + 1000) as usize), 0u64, false);
            let mut sample = KeyedSeq::with_size(SIZE);
            while !stop.load(Ordering::Relaxed) {
                node.turn(2_000_000, |p, _, _| {
                    while let Ok(Some(info)) = p.take(r, &mut sample) {
                        if let (true, Some(ts)) = (info.valid_data, info.source_timestamp) {
                            lat.push(wall_ns().saturating_sub(ts.to_nanos()).max(0) as u64);
                        }
                    }
                });
                let st = node.participant.reader_status(r);
                lost = st.lost;
                if !counted && st.matched > 0 {
                    counted = true;
                    ready.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok((lat, lost))
        }));
    }
    let writer = {
        let (dp, side, peer) = (datapath.to_string(), tb.a().clone(), tb.b().addr);
        let (ready, failed) = (ready.clone(), failed.clone());
        std::thread::spawn(move || -> Result<(u64, f64), ScaleError> {
            let (mut node, qos) = open(&dp, &side, 0, peer, k.saturating_sub(1))?;
            let w = node.participant.create_writer_for(TOPIC, qos, &KeyedSeq::with_size(SIZE)).map_err(|e| ScaleError::Detpath(e.to_string()))?;
            let t0 = node.transport.now_ns();
            let limit = t0 + 30_000_000_000 + u64::from(k) * 1_000_000_000;
            while node.participant.writer_status(w).matched < k as usize || ready.load(Ordering::Relaxed) < k as usize {
                if failed.load(Ordering::Relaxed) {
                    return Err(ScaleError::Detpath(format!("fan-out to {k}: a reader could not open its endpoint")));
                }
                if node.transport.now_ns() > limit {
                    return Err(ScaleError::Detpath(format!("fan-out to {k}: not every reader matched within {} s", (limit - t0) / 1_000_000_000)));
                }
                node.turn(1_000_000, |_, _, _| {});
            }
            let discovery_ms = (node.transport.now_ns() - t0) as f64 / 1e6;
            let mut sample = KeyedSeq::with_size(SIZE);
            let period = 1_000_000_000 / RATE_HZ;
            let start = node.transport.now_ns();
            let (end, mut next, mut sent) = (start + secs * 1_000_000_000, start, 0u64);
            loop {
                let now = node.transport.now_ns();
                if now >= end {
                    break;
                }
                if now >= next {
                    sample.seq = sent as u32;
                    let Node { participant, transport, .. } = &mut node;
                    if participant.write(now, &mut TransportOutbox(transport), w, Some(Time::from_nanos(wall_ns())), &sample).is_ok() {
                        sent += 1;
                    }
                    next += period;
                }
                node.turn(next.saturating_sub(node.transport.now_ns()), |_, _, _| {});
            }
            // Repairs of the last samples.
            let drain = node.transport.now_ns() + 500_000_000;
            while node.transport.now_ns() < drain {
                node.turn(1_000_000, |_, _, _| {});
            }
            Ok((sent, discovery_ms))
        })
    };
    let written = writer.join().map_err(|_| ScaleError::Detpath("the writer thread panicked".into()));
    stop.store(true, Ordering::Relaxed);
    let mut per = Vec::new();
    for r in readers {
        per.push(r.join().map_err(|_| ScaleError::Detpath("a reader thread panicked".into()))?);
    }
    // A reader's own error says more than the writer's "a reader could not open".
    let per: Vec<(Vec<u64>, u64)> = per.into_iter().collect::<Result<_, _>>()?;
    let (sent, discovery_ms) = written??;
    let system = format!("detpath {datapath}");
    let method = "one way (INFO_TS to take)";
    let mut rows = Vec::new();
    let mut pooled = Vec::new();
    for (i, (mut lat, lost)) in per.into_iter().enumerate() {
        pooled.extend_from_slice(&lat);
        let note = format!("{} of {sent} samples, {lost} lost", lat.len());
        rows.push(FanoutRow { system: system.clone(), readers: k, reader: Some(i as u32), method: method.into(), latency_us: summarize(&mut lat), note });
    }
    let note = format!("{sent} samples written, all {k} readers matched after {discovery_ms:.0} ms");
    rows.push(FanoutRow { system, readers: k, reader: None, method: method.into(), latency_us: summarize(&mut pooled), note });
    Ok(rows)
}

/// A `ddsperf ping` output's per-second lines grouped by the pong they are about (`host:pid`).
pub fn lines_per_pong(text: &str) -> Vec<(String, String)> {
    let mut groups: Vec<(String, String)> = Vec::new();
    for l in text.lines().filter(|l| l.contains(" mean ") && l.contains(" cnt ")) {
        let Some(who) = l.split_whitespace().nth(2) else { continue };
        match groups.iter_mut().find(|g| g.0 == who) {
            Some(g) => {
                g.1.push_str(l);
                g.1.push('\n');
            }
            None => groups.push((who.to_string(), format!("{l}\n"))),
        }
    }
    groups
}

/// From ddsperf's per-second figures (see [`crate::parse_ddsperf_ping`]): no p99.9, p99 the worst second's.
fn from_ddsperf(text: &str) -> LatencyUs {
    match parse_ddsperf_ping(text) {
        Some(s) => LatencyUs { count: s.count as u64, mean: Some(s.mean), p50: Some(s.p50), p99: Some(s.p99), p99_9: None, max: Some(s.max) },
        None => LatencyUs::default(),
    }
}

/// CycloneDDS's fan-out to `k` readers for `secs` seconds: `ddsperf ping` in a with `k` `ddsperf pong`s in b.
pub fn cyclone(tb: &Testbed, dir: &Path, k: u32, secs: u64) -> Result<Vec<FanoutRow>, ScaleError> {
    // Each pong process takes a participant index in b: the ping's peer list must reach them all.
    let max_index = (k + 2).max(9);
    let cfg_a = write_cyclone_config(dir, tb, tb.a(), max_index)?;
    let cfg_b = write_cyclone_config(dir, tb, tb.b(), max_index)?;
    let long = (secs + 60 + u64::from(k)).to_string();
    let mut pongs = Vec::new();
    for _ in 0..k {
        pongs.push(spawn_cyclone(tb.b(), &cfg_b, &["ddsperf", "-D", &long, "pong"], "ddsperf pong", false)?);
    }
    // The ping waits until every pong matched (-Q minmatch, -Q initwait; this
    // ddsperf has no -W), then pings for -D seconds.
    let (minmatch, secs_s, wait) = (format!("minmatch:{k}"), secs.to_string(), format!("initwait:{}", 30 + k));
    let ping = spawn_cyclone(tb.a(), &cfg_a, &["ddsperf", "-D", &secs_s, "-Q", &minmatch, "-Q", &wait, "ping", "1000Hz", "size", "32"], "ddsperf ping", false);
    let result = ping.map(|mut ping| {
        let mut text = String::new();
        if let Some(mut o) = ping.child().stdout.take() {
            let _ = o.read_to_string(&mut text);
        }
        let status = ping.child().wait();
        (text, status)
    });
    for p in pongs {
        let _ = p.stop(Duration::from_secs(2));
    }
    let (text, status) = result?;
    let system = super::ddsperf_system();
    let method = "RTT/2 (ddsperf ping, per-second figures combined)";
    let groups = lines_per_pong(&text);
    if groups.is_empty() {
        return Err(ScaleError::Cyclone(format!("ddsperf ping to {k} pongs printed no latency ({:?})", status.ok())));
    }
    let mut rows: Vec<FanoutRow> = groups
        .iter()
        .enumerate()
        .map(|(i, (who, lines))| {
            let l = from_ddsperf(lines);
            FanoutRow { system: system.clone(), readers: k, reader: Some(i as u32), method: method.into(), note: format!("pong {who}, {} pongs", l.count), latency_us: l }
        })
        .collect();
    let pooled = from_ddsperf(&text);
    let missing = (k as usize).saturating_sub(groups.len());
    let note = if missing > 0 { format!("{missing} of {k} pongs never answered") } else { format!("{k} pongs answered") };
    rows.push(FanoutRow { system, readers: k, reader: None, method: method.into(), latency_us: pooled, note });
    Ok(rows)
}
