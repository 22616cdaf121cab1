//! `--metrics ADDR` on `detpath echo` and `detpath bench server`: the
//! listener stays in the host namespace while the endpoint runs in the
//! testbed's namespace b, and /metrics shows the live counters and the
//! capability labels; beyond loopback a token is required. Needs root.

use detpath::testbed::{Testbed, TestbedConfig};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scrape(addr: SocketAddr) -> String {
    let r = detpath_metrics::http::get(addr, "/metrics", None).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// Starts the command; returns it and the metrics address it printed.
fn start(args: &[&str]) -> (Reaper, SocketAddr) {
    let mut child = Reaper(Command::new(BIN).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap());
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let line = lines.next().and_then(Result::ok).unwrap_or_default();
    let addr = line
        .strip_prefix("metrics on http://")
        .and_then(|s| s.strip_suffix("/metrics"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no metrics address printed: {line:?}"));
    // Keep draining stderr so the child never blocks on it.
    std::thread::spawn(move || lines.for_each(drop));
    (child, addr)
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
    // Not probes: counted as received, not echoed.
    let a = tb.a().addr;
    let server = SocketAddrV4::new(tb.b().addr, port);
    tb.a()
        .run(|| {
            let s = UdpSocket::bind((a, 0)).unwrap();
            for _ in 0..5 {
                s.send_to(b"not a probe", server).unwrap();
            }
        })
        .unwrap();
    let want = format!("detpath_endpoint_rx_packets_total{{local=\"{server}\",datapath=\"udp\"}} 5");
    let mut text = String::new();
    for _ in 0..20 {
        text = scrape(addr);
        if text.contains(&want) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(text.contains(&want), "missing `{want}` in:\n{text}");
}
