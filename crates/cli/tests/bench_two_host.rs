//! `detpath bench server` and `detpath bench client --peer` as two processes,
//! each in its own namespace of a testbed (standing in for two hosts): the
//! client saves a complete result naming the peer, the server echoes every
//! probe and stops cleanly on SIGTERM. Server on afxdp, client on the kernel
//! UDP path: the two sides need not use the same datapath.
//!
//! Needs root (namespaces, XDP).

use detpath::testbed::{Testbed, TestbedConfig};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

#[test]
fn client_and_server_in_two_namespaces() {
    let tb = Testbed::up(TestbedConfig::unique("2host")).expect("testbed up");
    let out = std::env::temp_dir().join(format!("detpath-2host-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let server_spec = format!("afxdp://{}?port=7300", tb.b().iface);
    let mut server = Command::new(BIN)
        .args(["bench", "server", "--endpoint", &server_spec, "--netns", &tb.b().netns, "--cpu", "1"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(server.try_wait().unwrap().is_none(), "server exited early");

    let client = Command::new(BIN)
        .args(["bench", "client", "--endpoint"])
        .arg(format!("udp://{}:7301", tb.a().addr))
        .args(["--netns", &tb.a().netns, "--cpu", "0", "--peer"])
        .arg(format!("{}:7300", tb.b().addr))
        .args(["--rounds", "3000", "--warmup", "100", "--period", "50us", "--json", "--out"])
        .arg(&out)
        .output()
        .expect("run the client");
    let stderr = String::from_utf8_lossy(&client.stderr);
    assert!(client.status.success(), "client failed: {stderr}");

    // SIGTERM to the server we started, by its PID.
    let rc = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(rc.success());
    let started = Instant::now();
    let status = loop {
        if let Some(s) = server.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "server still running 10 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut server_log = String::new();
    std::io::Read::read_to_string(server.stderr.as_mut().unwrap(), &mut server_log).unwrap();
    assert!(status.success(), "server exit {status}: {server_log}");
    assert!(server_log.contains("echoed 3100 probes"), "{server_log}");

    let runs: serde_json::Value = serde_json::from_slice(&client.stdout).expect("client --json output");
    let run = &runs[0];
    assert_eq!(run["config"]["peer"], format!("{}:7300", tb.b().addr));
    assert_eq!(run["config"]["datapath"], "udp");
    assert_eq!(run["config"]["period_ns"], 50_000);
    assert_eq!(run["complete"], true, "{run}");
    assert_eq!(run["loss"]["lost"], 0);
    assert_eq!(run["latency"]["count"], 3000, "{}", run["latency"]);

    // No XDP program left on the server's interface once it has exited.
    let ifindex = tb.b().run(|| detpath::netdev::ifindex(&tb.b().iface)).unwrap().unwrap();
    let attached = tb.b().run(|| detpath::xdp::query(ifindex)).unwrap().unwrap();
    assert_eq!(attached.any(), None, "XDP program left on {}", tb.b().iface);
    let _ = std::fs::remove_dir_all(&out);
}
