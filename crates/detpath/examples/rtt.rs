//! Closed-loop echo round trips per datapath in the testbed: one line per
//! (datapath, payload size) with round trips per second and the median and
//! p99 round-trip time (exact, over all samples). Client in namespace a
//! pinned to core 0, echo server in namespace b pinned to core 1.
//!
//! ```text
//! cargo run --release -p detpath --example rtt -- [--rounds N] [--datapath udp,afxdp]
//! ```
//! (root: namespaces and XDP). The benchmark proper is `detpath bench`.

use detpath::testbed::{Testbed, TestbedConfig};
use detpath::{Endpoint, RecvMode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WARMUP: usize = 1000;
const WAIT: RecvMode = RecvMode::BusyPoll { timeout: Some(Duration::from_millis(200)) };

fn main() {
    let mut rounds = 20_000usize;
    let mut datapaths: Vec<String> = detpath::datapath::transports().map(|d| d.name.to_string()).collect();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--rounds", Some(n)) => rounds = n.parse().expect("--rounds takes a number"),
            ("--datapath", Some(list)) => datapaths = list.split(',').map(String::from).collect(),
            _ => {
                eprintln!("usage: rtt [--rounds N] [--datapath udp,xdppoll,afxdp,dpdk]");
                std::process::exit(2);
            }
        }
    }
    let tb = Testbed::up(TestbedConfig::unique("rtt")).expect("testbed up (needs root)");
    println!("{:<8} {:>6} {:>12} {:>12} {:>12}  obtained", "datapath", "size", "round trips/s", "median µs", "p99 µs");
    for (i, dp) in datapaths.iter().enumerate() {
        for size in [64usize, 1024] {
            let port = 7600 + (i * 4) as u16 + if size == 64 { 0 } else { 2 };
            match measure(&tb, dp, port, size, rounds) {
                Ok(m) => println!("{dp:<8} {size:>6} {:>12.0} {:>12.2} {:>12.2}  {}", m.per_sec, m.median_us, m.p99_us, m.caps),
                Err(e) => println!("{dp:<8} {size:>6} error: {e}"),
            }
        }
    }
}

struct Measured {
    per_sec: f64,
    median_us: f64,
    p99_us: f64,
    caps: String,
}

fn measure(tb: &Testbed, dp: &str, port: u16, size: usize, rounds: usize) -> Result<Measured, String> {
    let server_uri = format!("{}&rt_core=1&rt_mlock=false", tb.b().uri(dp, port));
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let stop_s = stop.clone();
    let server = tb.b().spawn(move || {
        let mut ep = match detpath_open::open(&server_uri) {
            Ok(ep) => ep,
            Err(e) => return ready_tx.send(Err(e.to_string())).unwrap(),
        };
        ready_tx.send(Ok(ep.local_addr())).unwrap();
        let mut buf = vec![0u8; 2048];
        while !stop_s.load(Ordering::Relaxed) {
            if let Ok(Some(rx)) = ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(10)) }) {
                let _ = ep.send_to(&buf[..rx.len], rx.peer);
            }
        }
    });
    let server_addr = ready_rx.recv().map_err(|e| e.to_string())??;
    let client_uri = format!("{}&rt_core=0&rt_mlock=false", tb.a().uri(dp, port + 1));
    let result = tb
        .a()
        .run(|| -> Result<Measured, String> {
            let mut ep: Box<dyn Endpoint> = detpath_open::open(&client_uri).map_err(|e| e.to_string())?;
            let out = vec![0x5au8; size];
            let mut back = vec![0u8; 2048];
            let mut rtts = Vec::with_capacity(rounds);
            let mut started = Instant::now();
            for i in 0..WARMUP + rounds {
                if i == WARMUP {
                    started = Instant::now();
                }
                let t0 = detpath::monotonic_ns();
                ep.send_to(&out, server_addr).map_err(|e| e.to_string())?;
                let rx = ep.recv(&mut back, WAIT).map_err(|e| e.to_string())?.ok_or_else(|| format!("no echo of round {i} within 200 ms"))?;
                if i >= WARMUP {
                    rtts.push(rx.rx_ns - t0);
                }
            }
            let elapsed = started.elapsed().as_secs_f64();
            rtts.sort_unstable();
            let rank = |q: f64| rtts[((q * rtts.len() as f64).ceil() as usize).clamp(1, rtts.len()) - 1] as f64 / 1000.0;
            Ok(Measured { per_sec: rounds as f64 / elapsed, median_us: rank(0.5), p99_us: rank(0.99), caps: ep.capabilities().summary() })
        })
        .map_err(|e| e.to_string())?;
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    result
}
