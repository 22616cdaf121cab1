//! Forged sources at `detpath echo`: datagrams whose source is off-link
//! (10.99.0.x) or an on-link address nobody answers ARP for (10.77.0.1xx),
//! sent as raw frames over the veth from the other namespace (AF_PACKET),
//! interleaved with 100 real datagrams. On every datapath the server lives,
//! echoes all 100 real ones (each within the socket's read timeout, so a
//! hot path blocked a second per forged source would fail), and where
//! detpath builds the reply itself the cause is counted (`tx_no_route`,
//! `tx_no_neigh` in the `--json` summary and in `/metrics`, where every
//! counter of detpath's table is a family).
//!
//! Needs root (namespaces, XDP; DPDK from Debian's libdpdk).

use detpath::sys::packet::PacketSocket;
use detpath::testbed::{Testbed, TestbedConfig};
use detpath_wire::{build_udp_frame, MacAddr, UdpFrameHeader};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");
const VALID: u32 = 100;
/// Forged frames go in before every `FORGE_EVERY`-th real datagram.
const FORGE_EVERY: u32 = 10;

/// Kills the echo server (by its PID) if the test fails before it is stopped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A UDP datagram from `src` to `dst` as a raw Ethernet frame.
fn forged_frame(src_mac: MacAddr, dst_mac: MacAddr, src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0u8; 14 + 20 + 8 + payload.len()];
    let h = UdpFrameHeader { src_mac, dst_mac, src, dst, ip_id: 1, ttl: 64, tos: 0 };
    let len = build_udp_frame(&mut frame, &h, payload).expect("frame fits");
    frame.truncate(len.max(60));
    frame.resize(len.max(60), 0);
    frame
}

/// One scrape of http://127.0.0.1:PORT/metrics (plain HTTP/1.0, retried while the listener starts).
fn scrape(port: u16) -> String {
    let started = Instant::now();
    loop {
        let got = TcpStream::connect(("127.0.0.1", port)).and_then(|mut s| {
            s.set_read_timeout(Some(Duration::from_secs(5)))?;
            write!(s, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n")?;
            let mut body = String::new();
            s.read_to_string(&mut body)?;
            Ok(body)
        });
        match got {
            Ok(body) if body.starts_with("HTTP/1.") && body.contains(" 200 ") => return body,
            // Liveness: the listener comes up with the endpoint, in well
            // under a second idle; 10 s allows for a loaded VM, and a
            // server that never serves metrics never answers at all.
            other if started.elapsed() > Duration::from_secs(10) => panic!("no metrics on 127.0.0.1:{port}: {other:?}"),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// The value of `detpath_endpoint_<name>_total` in a scrape.
fn metric(body: &str, name: &str) -> Option<u64> {
    let prefix = format!("detpath_endpoint_{name}_total{{");
    body.lines().find(|l| l.starts_with(&prefix)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse::<f64>().ok()).map(|v| v as u64)
}

fn forged_at_echo(datapath: &str, metrics_port: u16) {
    let tb = Testbed::up(TestbedConfig::unique("fgd")).expect("testbed up (needs root)");
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let port = 7300;
    let spec = b.uri(datapath, port);
    let child = Command::new(BIN)
        .args(["echo", &spec, "--netns", &b.netns, "--json", "--metrics", &format!("127.0.0.1:{metrics_port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start detpath echo");
    let mut server = Server(child);
    let echo_addr = SocketAddrV4::new(b.addr, port);
    let sock = a.run(|| UdpSocket::bind((a.addr, 0))).unwrap().unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut buf = [0u8; 256];
    // Wait until it answers (program attached, endpoint polling).
    let mut hello_echoed = 0u64;
    let started = Instant::now();
    while hello_echoed == 0 {
        // Liveness: the first echo needs the XDP program loaded and
        // attached and the endpoint polling (a second or two idle, more on
        // a loaded VM for the verifier); 20 s is generous for that, and an
        // echo that never polls never answers.
        assert!(started.elapsed() < Duration::from_secs(20), "{datapath}: detpath echo never answered");
        if let Some(s) = server.0.try_wait().unwrap() {
            let mut err = String::new();
            server.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            panic!("{datapath}: detpath echo exited {s} before answering: {err}");
        }
        sock.send_to(b"hello", echo_addr).unwrap();
        if matches!(sock.recv_from(&mut buf), Ok((5, _))) {
            hello_echoed += 1;
        }
    }
    // Stray hello echoes still in flight would be mistaken for the real ones.
    sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    while let Ok((5, _)) = sock.recv_from(&mut buf) {
        hello_echoed += 1;
    }
    sock.set_read_timeout(Some(Duration::from_millis(500))).unwrap();

    let raw = a.run(|| PacketSocket::open(&a.iface)).unwrap().expect("AF_PACKET socket in side a");
    let (a_mac, b_mac) = (MacAddr::parse(&a.mac).unwrap(), MacAddr::parse(&b.mac).unwrap());
    let mut forged = (0u32, 0u32);
    for i in 0..VALID {
        if i % FORGE_EVERY == 0 {
            let k = (i / FORGE_EVERY) as u8;
            // Off-link, and on-link but silent (each a new address to resolve).
            let off_link = SocketAddrV4::new(Ipv4Addr::new(10, 99, 0, 7 + k), 5555);
            let silent = SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 100 + k), 5556);
            raw.send(&forged_frame(a_mac, b_mac, off_link, echo_addr, b"forged off-link")).unwrap();
            raw.send(&forged_frame(a_mac, b_mac, silent, echo_addr, b"forged silent")).unwrap();
            forged.0 += 1;
            forged.1 += 1;
        }
        let msg = format!("valid {i:03}");
        sock.send_to(msg.as_bytes(), echo_addr).unwrap();
        let got = loop {
            match sock.recv_from(&mut buf) {
                // A late hello echo: not ours, read on.
                Ok((5, _)) => continue,
                Ok((n, from)) => break (n, from),
                Err(e) => {
                    let alive = server.0.try_wait().unwrap().is_none();
                    panic!("{datapath}: valid datagram #{i} not echoed within 500 ms ({e}); server alive: {alive}");
                }
            }
        };
        assert_eq!((&buf[..got.0], got.1), (msg.as_bytes(), std::net::SocketAddr::V4(echo_addr)), "{datapath}: echo of #{i}");
    }
    assert!(server.0.try_wait().unwrap().is_none(), "{datapath}: the server ended");
    // Let the silent sources' resolution time out (1 s), so they are counted.
    std::thread::sleep(Duration::from_millis(1600));
    assert!(server.0.try_wait().unwrap().is_none(), "{datapath}: the server ended");
    let scraped = scrape(metrics_port);

    let rc = Command::new("kill").args(["-TERM", &server.0.id().to_string()]).status().unwrap();
    assert!(rc.success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = server.0.try_wait().unwrap() {
            break s;
        }
        // Liveness, not speed: the poll loop sees the stop flag on its next
        // pass, then detaches and prints its counts (milliseconds idle);
        // 10 s covers a loaded VM, and an echo that ignored SIGTERM never ends.
        assert!(t.elapsed() < Duration::from_secs(10), "{datapath}: still running 10 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut out, mut err) = (String::new(), String::new());
    server.0.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    server.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{datapath}: exit {status}: {err}");
    let summary: serde_json::Value =
        serde_json::from_str(out.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{datapath}: no JSON summary ({e}): {out}"));
    let c = &summary["counters"];
    let counter = |name: &str| c[name].as_u64().unwrap_or_else(|| panic!("{datapath}: no counter {name}: {summary}"));
    eprintln!("{datapath}: {summary}");
    assert!(summary["echoed"].as_u64().unwrap() >= u64::from(VALID) + hello_echoed, "{datapath}: {summary}");
    match datapath {
        // detpath builds these replies itself: every forged source is counted by cause.
        "afxdp" | "dpdk" => {
            assert_eq!(counter("tx_no_route"), u64::from(forged.0), "{datapath}: off-link sources: {summary}");
            assert_eq!(counter("tx_no_neigh"), u64::from(forged.1), "{datapath}: silent on-link sources: {summary}");
            assert_eq!(summary["not_sent"].as_u64(), Some(u64::from(forged.0)), "{datapath}: off-link replies fail at once, silent ones are parked: {summary}");
            assert!(err.contains("tx_no_route"), "{datapath}: the first failure is said once: {err}");
        }
        // The reply leaves through a kernel UDP socket: the kernel routes it
        // (no route: counted in tx_no_route) or queues it behind its own ARP.
        _ => assert_eq!(counter("tx_errors"), 0, "{datapath}: {summary}"),
    }
    assert_eq!(counter("rx_malformed"), 0, "{datapath}: {summary}");
    // /metrics has every counter of the table; the tx causes as the summary says (taken just before it).
    for f in detpath::Counters::FIELDS {
        assert!(metric(&scraped, f.name).is_some(), "{datapath}: no detpath_endpoint_{}_total in /metrics: {scraped}", f.name);
    }
    for name in ["tx_no_route", "tx_no_neigh"] {
        assert_eq!(metric(&scraped, name), Some(counter(name)), "{datapath}: {name} in /metrics and the summary");
    }
}

/// A metrics port per test, unlikely to be taken (several test runs may share the host).
fn port(k: u16) -> u16 {
    20000 + ((std::process::id() % 9000) * 4) as u16 + k
}

#[test]
fn forged_sources_at_echo_afxdp() {
    forged_at_echo("afxdp", port(0));
}

#[test]
fn forged_sources_at_echo_xdppoll() {
    forged_at_echo("xdppoll", port(1));
}

#[test]
fn forged_sources_at_echo_dpdk() {
    forged_at_echo("dpdk", port(2));
}

#[test]
fn forged_sources_at_echo_udp() {
    forged_at_echo("udp", port(3));
}
