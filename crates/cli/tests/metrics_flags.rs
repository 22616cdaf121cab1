//! `--metrics ADDR` on `detpath echo` and `detpath bench server`: the
//! listener stays in the host namespace while the endpoint runs in the
//! testbed's namespace b, and /metrics shows the live counters and the
//! capability labels; beyond loopback a token is required. Needs root.

use detpath::testbed::{Testbed, TestbedConfig};
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::process::Command;
use std::time::Duration;

mod common;
use common::{start_with_metrics as start, BIN};

fn scrape(addr: SocketAddr) -> String {
    let r = detpath_metrics::http::get(addr, "/metrics", None).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

fn send_and_wait(tb: &Testbed, server: SocketAddrV4, n: usize) {
    let a = tb.a().addr;
    tb.a()
        .run(|| {
            let s = UdpSocket::bind((a, 0)).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
            let mut buf = [0u8; 64];
            let mut answered = 0;
            for _ in 0..n * 20 {
                if answered == n {
                    break;
                }
                s.send_to(b"metrics", server).unwrap();
                if let Ok((7, _)) = s.recv_from(&mut buf) {
                    answered += 1;
                }
            }
            assert_eq!(answered, n, "the server did not answer");
        })
        .unwrap();
}

#[test]
fn echo_serves_endpoint_metrics_from_the_host_namespace() {
    let tb = Testbed::up(TestbedConfig::unique("mxe")).expect("testbed up");
    let port = 9300;
    let spec = tb.b().uri("afxdp", port);
    let (_child, addr) = start(&["echo", &spec, "--netns", &tb.b().netns, "--metrics", "127.0.0.1:0"]);
    send_and_wait(&tb, SocketAddrV4::new(tb.b().addr, port), 10);
    let text = scrape(addr);
    let local = format!("{}:{port}", tb.b().addr);
    let want = format!("detpath_endpoint_rx_packets_total{{local=\"{local}\",datapath=\"afxdp\"}} 10");
    assert!(text.contains(&want), "missing `{want}` in:\n{text}");
    assert!(text.contains(&format!("detpath_endpoint_tx_packets_total{{local=\"{local}\",datapath=\"afxdp\"}} 10")), "{text}");
    let info = text.lines().find(|l| l.starts_with("detpath_endpoint_info{")).expect("info line");
    assert!(info.contains("iface=\"dpb\"") && info.contains("zero_copy=\"false\""), "{info}");
}

#[test]
fn bench_server_serves_metrics_and_needs_a_token_beyond_loopback() {
    let tb = Testbed::up(TestbedConfig::unique("mxb")).expect("testbed up");
    let port = 9310;
    let spec = tb.b().uri("udp", port);
    let refused = Command::new(BIN).args(["bench", "server", "--endpoint", &spec, "--netns", &tb.b().netns, "--metrics", "0.0.0.0:0"]).output().unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--metrics-token"), "{}", String::from_utf8_lossy(&refused.stderr));

    let (_child, addr) = start(&["bench", "server", "--endpoint", &spec, "--netns", &tb.b().netns, "--metrics", "127.0.0.1:0"]);
    // Not probes: counted as received, not echoed. The listener may be up
    // before the server's endpoint is open (a datagram then finds no socket):
    // send one at a time until the counter moves, then five more.
    let a = tb.a().addr;
    let server = SocketAddrV4::new(tb.b().addr, port);
    let send = |n: usize| {
        tb.a()
            .run(|| {
                let s = UdpSocket::bind((a, 0)).unwrap();
                for _ in 0..n {
                    s.send_to(b"not a probe", server).unwrap();
                }
            })
            .unwrap()
    };
    let metric = format!("detpath_endpoint_rx_packets_total{{local=\"{server}\",datapath=\"udp\"}} ");
    let received = |text: &str| text.lines().find_map(|l| l.strip_prefix(metric.as_str())).and_then(|v| v.trim().parse::<u64>().ok());
    let mut text = String::new();
    let mut before = None;
    for _ in 0..50 {
        send(1);
        std::thread::sleep(Duration::from_millis(100));
        text = scrape(addr);
        before = received(&text).filter(|&n| n > 0);
        if before.is_some() {
            break;
        }
    }
    let before = before.unwrap_or_else(|| panic!("the server never counted a datagram:\n{text}"));
    send(5);
    let want = format!("{metric}{}", before + 5);
    for _ in 0..20 {
        text = scrape(addr);
        if text.contains(&want) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(text.contains(&want), "missing `{want}` in:\n{text}");
}

/// Writes `head` to the listener and reads the whole answer: (status, text).
fn raw(addr: SocketAddr, head: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    (text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0), text)
}

#[test]
fn echo_survives_a_huge_request_and_half_open_connections_to_its_metrics() {
    let tb = Testbed::up(TestbedConfig::unique("mxh")).expect("testbed up");
    let port = 9320;
    let spec = tb.b().uri("udp", port);
    let (mut child, addr) = start(&["echo", &spec, "--netns", &tb.b().netns, "--metrics", "127.0.0.1:0"]);
    let server = SocketAddrV4::new(tb.b().addr, port);
    send_and_wait(&tb, server, 3);

    // A 1 TiB Content-Length (which aborted the process before): refused unread.
    for method in ["POST", "GET"] {
        let (st, text) = raw(addr, &format!("{method} /metrics HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 1099511627776\r\n\r\n"));
        assert_eq!(st, 413, "{method}: {text}");
    }
    // A web page cannot read it either.
    let (st, _) = raw(addr, &format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\n\r\n"));
    assert_eq!(st, 403);
    // 200 half-open connections do not keep a scrape from being answered.
    let held: Vec<std::net::TcpStream> = (0..200)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            std::io::Write::write_all(&mut s, b"GET /metrics HTTP/1.1\r\n").unwrap();
            s
        })
        .collect();
    let text = scrape(addr);
    drop(held);

    assert!(child.0.try_wait().unwrap().is_none(), "echo is still running");
    send_and_wait(&tb, server, 5);
    let local = format!("{}:{port}", tb.b().addr);
    let want = format!("detpath_endpoint_tx_packets_total{{local=\"{local}\",datapath=\"udp\"}} 8");
    let mut text = text;
    for _ in 0..20 {
        if text.contains(&want) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        text = scrape(addr);
    }
    assert!(text.contains(&want), "echo still echoes and counts: missing `{want}` in:\n{text}");
}
