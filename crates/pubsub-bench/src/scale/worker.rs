//! One side of the discovery test, in its own process so its memory is its
//! own: `count` detpath participants in one network namespace, each on its
//! own thread and its own endpoint (port `BASE_PORT + 2 i`, participant index
//! i's metatraffic port), each with one reliable writer and one reader of
//! the topic every participant shares. It prints the protocol's JSON lines
//! ([`Event`]) on stdout and keeps its participants alive (answering
//! heartbeats, announcing) until its stdin closes, so the parent reads its
//! RSS with everything matched. The CycloneDDS side (`cyclone_worker.py`)
//! speaks the same protocol.

use detpath_pubsub::app::{open_transport, NodeOptions};
use detpath_pubsub::ddsperf::Role;
use detpath_pubsub::driver::{Node, Transport};
use detpath_pubsub::engine::{Participant, ReaderId, WriterId};
use detpath_pubsub::qos::Qos;
use detpath_pubsub::transport::Wait;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

/// The metatraffic unicast port of participant index 0 in domain 0; index i is `BASE_PORT + 2 i`.
pub const BASE_PORT: u16 = 7410;

/// The topic every participant of the discovery test writes and reads.
pub const TOPIC: &str = "DetpathScale";

/// What one worker process runs (passed as JSON on its command line).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// detpath datapath (`udp`, `afxdp`, ...).
    pub datapath: String,
    /// The namespace its endpoints open in.
    pub netns: String,
    /// The interface inside it.
    pub iface: String,
    /// Its address there.
    pub addr: Ipv4Addr,
    /// Where SPDP goes (both sides' addresses, ports of indices 0..=max_index).
    pub peers: Vec<Ipv4Addr>,
    /// Participants in this process.
    pub count: u32,
    /// Highest participant index on any side.
    pub max_index: u32,
    /// Remote writers (and readers) each participant must match to count as discovered.
    pub expected: u32,
    /// Give up after this long, seconds.
    pub timeout_s: f64,
}

/// One line of the worker protocol.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// Before any participant exists: the process's resident memory, KiB.
    Baseline {
        /// VmRSS, KiB.
        rss_kb: u64,
    },
    /// Every participant of this process exists (CLOCK_MONOTONIC ns).
    Created {
        /// When.
        t_ns: u64,
        /// VmRSS then, KiB.
        rss_kb: u64,
    },
    /// Participant `i` matched every writer and reader it should.
    Matched {
        /// Its index in this process.
        i: u32,
        /// When (CLOCK_MONOTONIC ns).
        t_ns: u64,
    },
    /// Every participant of this process matched.
    AllMatched {
        /// When (CLOCK_MONOTONIC ns).
        t_ns: u64,
        /// VmRSS then, KiB.
        rss_kb: u64,
    },
    /// The timeout passed first.
    Timeout {
        /// Participants that had matched.
        matched: u32,
    },
    /// A participant could not be opened (the text says why).
    Failed {
        /// The error.
        error: String,
    },
}

/// This process's resident set, KiB (VmRSS of /proc/self/status); 0 if unreadable.
pub fn self_rss_kb() -> u64 {
    rss_kb_of("self")
}

/// VmRSS of `/proc/<pid>/status`, KiB; 0 if the process is gone.
pub fn rss_kb_of(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

fn say(e: &Event) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", serde_json::to_string(e).unwrap_or_default());
    let _ = out.flush();
}

/// The endpoint spec of participant `i` of a worker.
pub fn endpoint_of(spec: &WorkerSpec, i: u32) -> String {
    format!("{}://{}?addr={}&port={}", spec.datapath, spec.iface, spec.addr, BASE_PORT + 2 * i as u16)
}

type Opened = (Node<detpath_pubsub::transport::EndpointTransport>, WriterId, ReaderId);

/// Opens one participant with the shared topic's writer and reader.
fn open(spec: &WorkerSpec, i: u32) -> Result<Opened, String> {
    let mut o = NodeOptions::new(&endpoint_of(spec, i), Role::Sub);
    o.netns = Some(spec.netns.clone());
    o.peers = spec.peers.clone();
    o.max_index = spec.max_index;
    // Many polling threads share two cores: each sleeps in the kernel.
    o.wait = Wait::Block;
    o.fair_slice_ns = 0;
    o.multicast = false;
    let (t, cfg) = open_transport(&o).map_err(|e| format!("participant {i} ({}): {e}", o.endpoint))?;
    let now = t.now_ns();
    let mut p = Participant::new(cfg, now);
    let qos = Qos::reliable_keep_last(1);
    let w = p.create_writer(TOPIC, "ScaleSample", false, qos.clone(), 64).map_err(|e| format!("participant {i}: writer: {e}"))?;
    let r = p.create_reader(now, TOPIC, "ScaleSample", false, qos, 64).map_err(|e| format!("participant {i}: reader: {e}"))?;
    Ok((Node::new(p, t), w, r))
}

/// Whether every writer and reader of `p` matched `expected` remote ones.
fn matched(p: &Participant, w: WriterId, r: ReaderId, expected: u32) -> bool {
    p.writer_status(w).matched >= expected as usize && p.reader_status(r).matched >= expected as usize
}

/// Runs a worker (see the module comment); returns when stdin closes.
pub fn run(spec: &WorkerSpec) {
    say(&Event::Baseline { rss_kb: self_rss_kb() });
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(Barrier::new(spec.count as usize + 1));
    let (tx, rx) = mpsc::channel::<Event>();
    let mut threads = Vec::new();
    for i in 0..spec.count {
        let (spec, stop, ready, tx) = (spec.clone(), stop.clone(), ready.clone(), tx.clone());
        threads.push(std::thread::spawn(move || {
            let node = open(&spec, i);
            ready.wait();
            let (mut node, w, r) = match node {
                Ok(n) => n,
                Err(error) => {
                    let _ = tx.send(Event::Failed { error });
                    return;
                }
            };
            let mut done = false;
            let until = detpath::monotonic_ns() + (spec.timeout_s * 1e9) as u64;
            while !stop.load(Ordering::Relaxed) {
                node.turn(1_000_000, |_, _, _| {});
                if !done && matched(&node.participant, w, r, spec.expected) {
                    done = true;
                    let _ = tx.send(Event::Matched { i, t_ns: detpath::monotonic_ns() });
                }
                if !done && detpath::monotonic_ns() > until {
                    break;
                }
            }
        }));
    }
    drop(tx);
    ready.wait();
    say(&Event::Created { t_ns: detpath::monotonic_ns(), rss_kb: self_rss_kb() });
    let deadline = std::time::Instant::now() + Duration::from_secs_f64(spec.timeout_s);
    let mut n = 0;
    let mut failed = false;
    while n < spec.count && !failed {
        match rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            Ok(e @ Event::Matched { .. }) => {
                n += 1;
                say(&e);
            }
            Ok(e) => {
                failed = true;
                say(&e);
            }
            Err(_) => break,
        }
    }
    if n == spec.count {
        say(&Event::AllMatched { t_ns: detpath::monotonic_ns(), rss_kb: self_rss_kb() });
    } else if !failed {
        say(&Event::Timeout { matched: n });
    }
    // Alive, matched, announcing, until the parent has read the memory and closes stdin.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
}
