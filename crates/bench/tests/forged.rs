//! Single forged datagrams at the ping-pong benchmark's services: none may
//! end a service or wreck its results. Each forged datagram is sent as a raw
//! frame over the testbed's veth (AF_PACKET, any source address), or from a
//! plain socket on loopback where the source does not matter.
//!
//! - a ping whose source is another reflector: echoed once (as a pong), not
//!   back and forth forever;
//! - pongs from other addresses at the client: foreign, ignored;
//! - datagrams that are not pings do not start the server's CPU meter;
//! - a held (`delay=`) echo to an unreachable forged source does not end
//!   the server.
//!
//! Needs root (namespaces; afxdp needs XDP). The tests busy-poll, so they
//! run one at a time.

use detpath::sys::packet::PacketSocket;
use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath::Counters;
use detpath_bench::run::{run_client, run_server, ClientOutcome, PingPongConfig, ServerReport};
use detpath_instrument::{Record, Status};
use detpath_wire::probe::{Probe, FLAG_PONG};
use detpath_wire::{build_udp_frame, MacAddr, UdpFrameHeader};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const WARMUP: u64 = 100;

fn config(rounds: u64) -> PingPongConfig {
    PingPongConfig { size: 256, period_ns: 1_000_000, rounds, warmup: WARMUP, loss_timeout_ns: 50_000_000, stall: None, sleep_slack_ns: None }
}

/// A probe of 128 bytes: `flags` 0 is a ping, [`FLAG_PONG`] a pong.
fn probe(seq: u64, flags: u16) -> Vec<u8> {
    let mut b = vec![0u8; 128];
    Probe { flags, ..Probe::ping(seq, 0x5eed, 1) }.encode(&mut b).unwrap();
    b
}

/// A UDP datagram from `src` to `dst` as a raw Ethernet frame from side `from` to side `to`.
fn forged_frame(from: &Side, to: &Side, src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let h = UdpFrameHeader { src_mac: MacAddr::parse(&from.mac).unwrap(), dst_mac: MacAddr::parse(&to.mac).unwrap(), src, dst, ip_id: 1, ttl: 64, tos: 0 };
    let mut frame = vec![0u8; 14 + 20 + 8 + payload.len()];
    let len = build_udp_frame(&mut frame, &h, payload).expect("frame fits");
    frame.truncate(len);
    frame
}

/// A raw socket on `side`'s veth end: what it sends leaves towards the other side.
fn raw_socket(side: &Side) -> PacketSocket {
    side.run(|| PacketSocket::open(&side.iface)).unwrap().expect("AF_PACKET socket (needs root)")
}

/// The server's report and its endpoint's counters, or the error that ended it.
type ServerEnd = detpath::Result<(ServerReport, Counters)>;

/// `run_server` on `uri` in `side`'s namespace until `stop`; its address once open.
fn server_on(side: &Side, uri: String, stop: &Arc<AtomicBool>) -> (SocketAddrV4, JoinHandle<detpath::Result<ServerEnd>>) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let stop = stop.clone();
    let server = side.spawn(move || -> ServerEnd {
        let mut ep = detpath_open::open(&uri).unwrap_or_else(|e| panic!("{uri}: {e}"));
        ready_tx.send(ep.local_addr()).unwrap();
        let report = run_server(ep.as_mut(), &stop, detpath_instrument::noise::GAP_CAPACITY)?;
        Ok((report, ep.counters()))
    });
    (ready_rx.recv().expect("server opened"), server)
}

/// Its report, or a panic saying what ended it.
fn finish(server: JoinHandle<detpath::Result<ServerEnd>>, what: &str) -> (ServerReport, Counters) {
    server.join().unwrap().unwrap().unwrap_or_else(|e| panic!("{what}: the server ended: {e}"))
}

/// The server's spec on `side`: a udp server gets a socket buffer that
/// outlasts any stall of this VM (the accounting below is exact).
fn server_uri(side: &Side, datapath: &str, port: u16, keys: &str) -> String {
    let extra = if datapath == "udp" { "&rcvbuf=8388608" } else { "" };
    format!("{}{keys}{extra}", side.uri(datapath, port))
}

/// `run_client` from side a against `server`.
fn client(tb: &Testbed, datapath: &str, port: u16, server: SocketAddrV4, cfg: &PingPongConfig) -> ClientOutcome {
    let uri = tb.a().uri(datapath, port);
    tb.a()
        .run(|| {
            let mut ep = detpath_open::open(&uri).unwrap_or_else(|e| panic!("{uri}: {e}"));
            run_client(ep.as_mut(), server, cfg, &AtomicBool::new(false), |_| {}).unwrap()
        })
        .unwrap()
}

fn statuses(records: &[Record], seq: u64) -> Vec<Status> {
    records.iter().filter(|r| r.seq == seq).map(|r| r.status).collect()
}

/// Two reflectors (bench servers), one in each namespace on the same port;
/// one ping sent to b with its source forged to be a's server: b echoes it
/// once, as a pong, and a does not echo the pong. Without the pong rule the
/// two echo it to each other until stopped.
fn forged_ping_between_two_reflectors(tag: &str, datapath: &str, port: u16) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique(tag)).expect("testbed up (needs root)");
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let stop = Arc::new(AtomicBool::new(false));
    let (at_a, server_a) = server_on(&a, server_uri(&a, datapath, port, ""), &stop);
    let (at_b, server_b) = server_on(&b, server_uri(&b, datapath, port, ""), &stop);
    raw_socket(&a).send(&forged_frame(&a, &b, at_a, at_b, &probe(1, 0))).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let (on_a, on_b) = (finish(server_a, "a").0, finish(server_b, "b").0);
    eprintln!("{datapath}: a {on_a:?}\n{datapath}: b {on_b:?}");
    assert_eq!((on_b.echoed, on_b.not_a_ping), (1, 0), "{datapath}: b echoes the forged ping once");
    assert_eq!((on_a.echoed, on_a.not_a_ping), (0, 1), "{datapath}: a does not echo b's pong, and counts it");
}

#[test]
fn a_ping_forged_from_another_reflector_is_echoed_once_over_udp() {
    forged_ping_between_two_reflectors("fru", "udp", 12100);
}

#[test]
fn a_ping_forged_from_another_reflector_is_echoed_once_over_afxdp() {
    forged_ping_between_two_reflectors("frx", "afxdp", 12110);
}

/// Pongs for rounds already sent, from addresses that are not the server's
/// (its address with another port, another address with its port), arrive
/// at the client all through a run: they are counted foreign and ignored.
/// Round 120's real pong is dropped (the server's `drop=120`): it is lost,
/// not corrupted by a forged pong, and round 110 has no duplicate.
fn forged_pongs_at_the_client(tag: &str, datapath: &str, port: u16) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique(tag)).expect("testbed up (needs root)");
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let stop = Arc::new(AtomicBool::new(false));
    let (server, server_t) = server_on(&b, server_uri(&b, datapath, port, "&drop=120"), &stop);
    let client_at = SocketAddrV4::new(a.addr, port + 1);
    let raw = raw_socket(&b);
    let frames: Vec<Vec<u8>> = [SocketAddrV4::new(b.addr, port + 7), SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 99), port)]
        .iter()
        .flat_map(|&src| [110, 120].map(|seq| forged_frame(&b, &a, src, client_at, &probe(seq, FLAG_PONG))))
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let done_f = done.clone();
    let forger = std::thread::spawn(move || {
        let mut sent = 0u64;
        while !done_f.load(Ordering::Relaxed) {
            for f in &frames {
                raw.send(f).unwrap();
                sent += 1;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        sent
    });
    let cfg = config(300);
    let outcome = client(&tb, datapath, port + 1, server, &cfg);
    done.store(true, Ordering::Relaxed);
    let forged = forger.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    finish(server_t, datapath);
    let records = outcome.records(WARMUP);
    assert_eq!(statuses(&records, 120), [Status::Lost], "{datapath}: round 120's pong was dropped; a forged one must not stand in");
    assert_eq!(statuses(&records, 110), [Status::Ok], "{datapath}: round 110: a forged pong is no duplicate");
    for r in &records {
        assert!(r.status == Status::Ok || r.seq == 120, "{datapath}: round {} is {:?}", r.seq, r.status);
    }
    assert_eq!(records.len() as u64, cfg.rounds, "{datapath}: one record per round");
    assert!(outcome.foreign > 0 && outcome.foreign <= forged, "{datapath}: {} forged pongs sent, {} counted foreign", forged, outcome.foreign);
}

#[test]
fn pongs_from_another_address_are_foreign_over_udp() {
    forged_pongs_at_the_client("fpu", "udp", 12120);
}

#[test]
fn pongs_from_another_address_are_foreign_over_afxdp() {
    forged_pongs_at_the_client("fpx", "afxdp", 12130);
}

/// A datagram that is not a probe and a forged pong do not start the
/// server's CPU meter; the first ping does (its span starts there, not at
/// the junk 200 ms earlier).
#[test]
fn the_server_meter_starts_at_the_first_ping() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let stop_s = stop.clone();
    let server = std::thread::spawn(move || {
        let mut ep = detpath_open::open("udp://127.0.0.1:0").unwrap();
        ready_tx.send(ep.local_addr()).unwrap();
        run_server(ep.as_mut(), &stop_s, detpath_instrument::noise::GAP_CAPACITY).unwrap()
    });
    let at = ready_rx.recv().unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    sock.send_to(b"not a probe", at).unwrap();
    sock.send_to(&probe(3, FLAG_PONG), at).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let pinged = Instant::now();
    sock.send_to(&probe(4, 0), at).unwrap();
    let mut buf = [0u8; 256];
    let n = sock.recv(&mut buf).expect("the ping is echoed");
    let p = Probe::decode(&buf[..n]).unwrap();
    assert_eq!((p.seq, p.flags & FLAG_PONG), (4, FLAG_PONG), "the echo is the ping's, marked a pong");
    stop.store(true, Ordering::Relaxed);
    let report = server.join().unwrap();
    let since_ping = pinged.elapsed().as_secs_f64();
    assert_eq!((report.echoed, report.not_probes, report.not_a_ping), (1, 1, 1), "{report:?}");
    let (_, wall_s) = report.cpu.expect("metered from the ping");
    assert!(wall_s <= since_ping, "the meter ran {wall_s:.3} s, the ping came {since_ping:.3} s before the stop: it started before the ping");
}

/// A ping from a forged source reaches a server whose echoes are held
/// (`delay=0:1ms`): the held echo fails for that datagram alone on a later
/// receive. That is counted (by cause: `counter`) and the server goes on
/// answering a real client; it used to end with the error.
fn held_echo_to_a_forged_source(tag: &str, datapath: &str, port: u16, forged: fn(&Side) -> SocketAddrV4, counter: &str) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique(tag)).expect("testbed up (needs root)");
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let stop = Arc::new(AtomicBool::new(false));
    let (server, server_t) = server_on(&b, server_uri(&b, datapath, port, "&delay=0:1ms"), &stop);
    raw_socket(&a).send(&forged_frame(&a, &b, forged(&a), server, &probe(1, 0))).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let cfg = config(200);
    let outcome = client(&tb, datapath, port + 1, server, &cfg);
    stop.store(true, Ordering::Relaxed);
    let (report, counters) = finish(server_t, datapath);
    let counted = counters.iter().find(|(n, _)| *n == counter).map(|(_, v)| v);
    assert_eq!(counted, Some(1), "{datapath}: the held echo is counted in {counter}: {counters:?}");
    assert_eq!(report.echoed, 1 + cfg.total_rounds(), "{datapath}: {report:?}");
    let records = outcome.records(WARMUP);
    assert!(records.iter().all(|r| r.status == Status::Ok), "{datapath}: every round answered");
}

/// The kernel refuses a datagram to UDP port 0 (EINVAL): `tx_errors`.
#[test]
fn a_held_echo_to_a_forged_source_does_not_end_the_server_over_udp() {
    held_echo_to_a_forged_source("fhu", "udp", 12140, |a| SocketAddrV4::new(a.addr, 0), "tx_errors");
}

/// afxdp builds the reply itself and refuses an off-link destination
/// (the kernel would route it, or queue it behind ARP): `tx_no_route`.
#[test]
fn a_held_echo_to_a_forged_source_does_not_end_the_server_over_afxdp() {
    held_echo_to_a_forged_source("fhx", "afxdp", 12150, |_| SocketAddrV4::new(Ipv4Addr::new(10, 99, 0, 7), 5555), "tx_no_route");
}
