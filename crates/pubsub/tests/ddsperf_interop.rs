//! detpath against the real CycloneDDS 0.10 `ddsperf` (Debian
//! `cyclonedds-tools`) over loopback: each is the other's partner.
//!
//! - detpath ping -> ddsperf pong: 10,000 reliable pings at 1 kHz (one
//!   outstanding at a time), every pong back.
//! - ddsperf ping -> detpath pong: ddsperf's pings answered, ddsperf reports
//!   round trips and exits 0 (all its endpoints matched ours, nothing lost).
//!
//! Discovery must complete within 2 s. Without ddsperf the tests fail in CI and are named skips elsewhere.

mod common;
use common::udp::UdpTransport;
use detpath_pubsub::ddsperf::{PerfConfig, PerfNode, Role};
use detpath_pubsub::driver::{Node, Transport};
use detpath_pubsub::engine::{make_guid_prefix, Config, Participant};
use std::io::Read;
use std::net::Ipv4Addr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A CycloneDDS configuration for loopback unicast discovery, in a temp file.
fn cyclone_config(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("detpath-pubsub-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("cyclonedds.xml");
    std::fs::write(
        &f,
        r#"<CycloneDDS><Domain Id="any"><General><Interfaces><NetworkInterface name="lo"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex><Peers><Peer Address="127.0.0.1"/></Peers></Discovery></Domain></CycloneDDS>"#,
    )
    .unwrap();
    f
}

/// A ddsperf process, killed (by PID) when dropped, and its configuration directory, removed then.
struct Ddsperf(Child, std::path::PathBuf);
impl Drop for Ddsperf {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        if let Some(dir) = self.1.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn spawn_ddsperf(tag: &str, domain: u32, args: &[&str]) -> Ddsperf {
    let cfg = cyclone_config(tag);
    let child = Command::new("ddsperf")
        .env("CYCLONEDDS_URI", format!("file://{}", cfg.display()))
        .arg("-i")
        .arg(domain.to_string())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ddsperf starts");
    Ddsperf(child, cfg)
}

fn node(domain: u32, role: Role) -> (Node<UdpTransport>, PerfNode) {
    let (t, idx) = UdpTransport::bind_first_free(domain);
    let pid = std::process::id();
    let mut cfg = Config::new(domain, make_guid_prefix(0x7f01, pid, domain * 16 + idx), t.local_addr());
    cfg.add_peer(Ipv4Addr::LOCALHOST, 9);
    cfg.user_data = PerfNode::user_data_for(role, pid, "detpath-test");
    let now = t.now_ns();
    let mut p = Participant::new(cfg, now);
    let mut pc = PerfConfig::new(role);
    pc.count = 10_000;
    // One ping outstanding at a time: ddsperf's KEEP_LAST 1 ping reader
    // cannot replace an unanswered ping even when this VM is CPU-starved.
    pc.lockstep = true;
    let perf = PerfNode::new(&mut p, now, pc).unwrap();
    (Node::new(p, t), perf)
}

/// The two tests use different domains, but share two CPUs: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn detpath_ping_ddsperf_pong_10000_reliable_pings_none_lost() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !detpath_testkit::need_tool("detpath_ping_ddsperf_pong_10000_reliable_pings_none_lost", "ddsperf", "cyclonedds-tools") {
        return;
    }
    let domain = 11;
    let _pong = spawn_ddsperf("pong", domain, &["-D", "70", "pong"]);
    let (mut n, mut perf) = node(domain, Role::Ping { rate_hz: 1000.0 });
    // Discovery: ping writer matched with ddsperf's ping reader, our pong reader with its pong writer.
    let t0 = Instant::now();
    while !perf.ready(&n.participant) && t0.elapsed() < Duration::from_secs(5) {
        perf.on_events(&mut n.participant);
        n.turn(1_000_000, |_, _, _| {});
    }
    let discovery = t0.elapsed();
    assert!(perf.ready(&n.participant), "no match with ddsperf pong within 5 s: {:?}", n.participant.counters());
    assert!(discovery < Duration::from_secs(2), "discovery took {discovery:?}");
    // Warm-up: ddsperf matches our pong reader on its own schedule; a pong
    // written before that is (correctly, volatile) not delivered. Ping until
    // one comes back, then count 10,000.
    let saved = perf.cfg.count;
    perf.cfg.count = 0;
    n.run_perf(&mut perf, |p, _, t| p.stats.pongs_received > 0 || t > 5_000_000_000, |_, _| {});
    assert!(perf.stats.pongs_received > 0, "no pong within 5 s of matching");
    perf.cfg.count = saved;
    perf.reset_stats();
    let mut last = 0;
    n.run_perf(
        &mut perf,
        |p, _, t| (p.ping_done() && p.stats.pongs_received >= p.cfg.count) || t > 60_000_000_000,
        |p, _| {
            let w = &p.stats.latency_ns[p.window_start..];
            let s = detpath_pubsub::ddsperf::summarize(w);
            println!("detpath ping: {} pongs this second, mean {:.1} us, max {:.1} us", s.count, s.mean_us, s.max_us);
            p.window_start = p.stats.latency_ns.len();
            last = p.stats.pongs_received;
        },
    );
    let _ = last;
    let s = detpath_pubsub::ddsperf::summarize(&perf.stats.latency_ns);
    println!("discovery {discovery:?}; pings {} pongs {} unknown {}; {:?}", perf.stats.pings_sent, perf.stats.pongs_received, perf.stats.pongs_unknown, s);
    println!("{:?}", n.participant.counters());
    assert_eq!(perf.stats.pings_sent, 10_000);
    assert_eq!(perf.stats.pongs_received, 10_000, "every ping answered");
}

#[test]
fn ddsperf_ping_detpath_pong_answers_every_ping() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !detpath_testkit::need_tool("ddsperf_ping_detpath_pong_answers_every_ping", "ddsperf", "cyclonedds-tools") {
        return;
    }
    let domain = 12;
    let (mut n, mut perf) = node(domain, Role::Pong);
    let mut ping = spawn_ddsperf("ping", domain, &["-D", "12", "ping", "1000Hz", "size", "32"]);
    let t0 = Instant::now();
    n.run_perf(&mut perf, |_, _, t| t > 14_000_000_000, |_, _| {});
    let status = ping.0.wait().unwrap();
    let mut out = String::new();
    ping.0.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    println!("{out}");
    println!("answered {} missing-writer {} {:?}", perf.stats.pings_answered, perf.stats.pong_writer_missing, n.participant.counters());
    let cnt: u64 = out.lines().filter_map(|l| l.split(" cnt ").nth(1)).filter_map(|c| c.trim().parse::<u64>().ok()).sum();
    assert!(!out.contains("failed to match"), "ddsperf says its endpoints did not all match ours");
    assert!(status.success(), "ddsperf exit status {status:?}");
    assert!(cnt >= 10_000, "ddsperf counted {cnt} round trips in {:?}", t0.elapsed());
    assert!(perf.stats.pings_answered >= cnt);
}
