//! Recovery time of a pong under a burst of corrupted and forged RTPS, side
//! by side: detpath's pong (udp, afxdp) and CycloneDDS 0.10's own
//! `ddsperf pong`, each in testbed namespace a, pinged by `ddsperf ping
//! 1000Hz` from namespace b, which also captures the ping's live traffic and
//! sends the same recipe of burst at the pong (tests/burst: 20,000 datagrams
//! in 1.5 s: bit flips, truncations, length fields, junk after the header,
//! repeats, huge sequence numbers and counts, goodbyes, forged SPDP).
//!
//! Run (root, cyclonedds-tools installed):
//!   cargo run --release -p detpath-pubsub --example burst_recovery [-- SECONDS_AFTER [DATAPATHS]]
//! e.g. `-- 12 udp,afxdp,cyclonedds`. Recovery is the end of the first
//! one-second ddsperf report wholly after the burst with round trips in it
//! (an upper bound at one-second resolution), "never" when none came.

#[path = "../tests/burst/mod.rs"]
mod burst;
#[path = "../tests/ddsperf/mod.rs"]
mod ddsperf;

use detpath::testbed::{Testbed, TestbedConfig};
use detpath_pubsub::app::{run, NodeOptions};
use detpath_pubsub::ddsperf::Role;
use detpath_pubsub::transport::Wait;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PORT: u16 = 7410;

struct Row {
    pong: String,
    recovery: Option<f64>,
    after: u64,
    data_lost: Option<u64>,
    implausible: Option<u64>,
}

fn one(pong_kind: &str, after_s: u64) -> Row {
    let tb = Testbed::up(TestbedConfig::unique("br")).expect("testbed up (needs root)");
    let stop = Arc::new(AtomicBool::new(false));
    let mut detpath_pong = None;
    let mut cyclone_pong = None;
    if pong_kind == "cyclonedds" {
        cyclone_pong = Some(ddsperf::spawn_in(tb.a(), "brpong", &ddsperf::udp_config(tb.a(), tb.b().addr), &["-D", "60", "pong"]));
    } else {
        let mut o = NodeOptions::new(&tb.a().uri(pong_kind, PORT), Role::Pong);
        o.netns = Some(tb.a().netns.clone());
        o.peers = vec![tb.b().addr];
        o.duration = Some(Duration::from_secs(60));
        o.wait = Wait::Block;
        let s2 = stop.clone();
        detpath_pong = Some(std::thread::spawn(move || run(&o, &|| s2.load(Ordering::Relaxed), |_| {})));
    }
    let total = 5 + after_s;
    let origin = Instant::now();
    let d = total.to_string();
    let mut ping = ddsperf::spawn_in(
        tb.b(),
        "brping",
        &ddsperf::udp_config(tb.b(), tb.a().addr),
        &["-Qminmatch:1", "-Qinitwait:20", "-D", &d, "ping", "1000Hz", "size", "32"],
    );
    std::thread::sleep(Duration::from_secs(2));
    let mut seed = Vec::new();
    for _ in 0..3 {
        seed.extend(burst::capture(tb.b(), tb.a().addr, Duration::from_secs(1)));
        if seed.len() > 100 {
            break;
        }
    }
    let corpus = burst::corpus(&seed, 20_000, 0x5eed, &[]);
    burst::send(tb.b(), &corpus, Duration::from_millis(1500));
    let burst_end = origin.elapsed().as_secs_f64();
    let _ = ping.0.wait();
    let mut text = String::new();
    let _ = ping.0.stdout.take().map(|mut o| o.read_to_string(&mut text));
    let counts = burst::ddsperf_counts(&text);
    stop.store(true, Ordering::Relaxed);
    drop(cyclone_pong);
    let out = detpath_pong.map(|h| h.join().expect("pong thread"));
    let (data_lost, implausible) = match &out {
        Some(Ok(o)) => (Some(o.engine.data_lost), Some(o.engine.implausible)),
        _ => (None, None),
    };
    eprintln!("{pong_kind}: {} datagrams from {} captured; round trips per second {counts:?}", corpus.len(), seed.len());
    Row {
        pong: if pong_kind == "cyclonedds" { "CycloneDDS 0.10 ddsperf pong".into() } else { format!("detpath pong ({pong_kind})") },
        recovery: burst::recovery_s(&counts, burst_end),
        after: total.saturating_sub(burst_end as u64),
        data_lost,
        implausible,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let after: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(12);
    let kinds: Vec<String> = args.get(2).map_or(vec!["udp".into(), "afxdp".into(), "cyclonedds".into()], |a| a.split(',').map(String::from).collect());
    if !ddsperf::have_ddsperf() {
        eprintln!("ddsperf not installed: apt-get install cyclonedds-tools");
        std::process::exit(2);
    }
    let rows: Vec<Row> = kinds.iter().map(|k| one(k, after)).collect();
    println!("burst: 20,000 mutated/forged RTPS datagrams in 1.5 s at the pong while `ddsperf ping 1000Hz` runs");
    println!("{:<32} {:>22} {:>10} {:>12}", "pong", "round trips resume", "data_lost", "implausible");
    for r in rows {
        let rec = r.recovery.map_or(format!("never (in {} s)", r.after), |s| format!("<= {s:.1} s"));
        let dl = r.data_lost.map_or("-".into(), |v| v.to_string());
        let im = r.implausible.map_or("-".into(), |v| v.to_string());
        println!("{:<32} {:>22} {:>10} {:>12}", r.pong, rec, dl, im);
    }
}
