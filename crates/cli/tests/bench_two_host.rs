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

/// The tests busy-poll on both cores: one at a time, or pongs miss the loss timeout.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A child process we started, killed (by its PID) if the test ends early.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[test]
fn client_and_server_in_two_namespaces() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("2host")).expect("testbed up");
    let out = std::env::temp_dir().join(format!("detpath-2host-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let server_spec = format!("afxdp://{}?port=7300", tb.b().iface);
    let mut server = Child(
        Command::new(BIN)
            .args(["bench", "server", "--endpoint", &server_spec, "--netns", &tb.b().netns, "--cpu", "1"])
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the server"),
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(server.0.try_wait().unwrap().is_none(), "server exited early");

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
    assert_eq!(client.status.code(), Some(0), "client failed: {stderr}");

    // SIGTERM to the server we started, by its PID.
    let rc = Command::new("kill").args(["-TERM", &server.0.id().to_string()]).status().unwrap();
    assert!(rc.success());
    let started = Instant::now();
    let status = loop {
        if let Some(s) = server.0.try_wait().unwrap() {
            break s;
        }
        // Liveness, not speed: the server's poll loop checks the stop flag
        // every pass and then writes its summary and detaches, milliseconds
        // idle; 10 s covers a 2-core VM busy with other suites many times
        // over, and a server that ignored SIGTERM would never end.
        assert!(started.elapsed() < Duration::from_secs(10), "server still running 10 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut server_log = String::new();
    std::io::Read::read_to_string(server.0.stderr.as_mut().unwrap(), &mut server_log).unwrap();
    assert!(status.success(), "server exit {status}: {server_log}");
    let echoed: u64 = server_log
        .split("echoed ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no echo count: {server_log}"));

    let runs: serde_json::Value = serde_json::from_slice(&client.stdout).expect("client --json output");
    let run = &runs[0];
    assert_eq!(run["config"]["peer"], format!("{}:7300", tb.b().addr));
    assert_eq!(run["config"]["datapath"], "udp");
    assert_eq!(run["config"]["period_ns"], 50_000);
    assert_eq!(run["complete"], true, "{run}");
    // A lost round is one the kernel UDP client or the server never saw
    // through; counted, and the exit code says so.
    let (count, lost) = (run["latency"]["count"].as_u64().unwrap(), run["loss"]["lost"].as_u64().unwrap());
    assert_eq!(count + lost, 3000);
    assert!(lost < 300, "{lost} lost");
    assert_eq!(client.status.code(), Some(0), "a completed measurement exits 0, loss or not");
    assert!(echoed >= count && echoed <= 3100, "server echoed {echoed}, client got {count}");

    // No XDP program left on the server's interface once it has exited.
    let ifindex = tb.b().run(|| detpath::sys::netdev::ifindex(&tb.b().iface)).unwrap().unwrap();
    let attached = tb.b().run(|| detpath::sys::xdp::query(ifindex)).unwrap().unwrap();
    assert_eq!(attached.any(), None, "XDP program left on {}", tb.b().iface);
    let _ = std::fs::remove_dir_all(&out);
}

/// Paper 000's fault: the server dies mid-run. The client finishes its
/// schedule, counts the unanswered rounds as lost, keeps every record, and
/// exits non-zero.
#[test]
fn server_killed_mid_run_is_counted_as_loss() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("2kill")).expect("testbed up");
    let out = std::env::temp_dir().join(format!("detpath-2kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut server = Child(
        Command::new(BIN)
            .args(["bench", "server", "--endpoint"])
            .arg(format!("udp://{}:7310", tb.b().addr))
            .args(["--netns", &tb.b().netns])
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server"),
    );
    std::thread::sleep(Duration::from_millis(800));
    let client = Command::new(BIN)
        .args(["bench", "client", "--endpoint"])
        .arg(format!("udp://{}:7311", tb.a().addr))
        .args(["--netns", &tb.a().netns, "--peer"])
        .arg(format!("{}:7310", tb.b().addr))
        .args(["--duration", "3", "--period", "1ms", "--warmup", "10", "--timeout-ms", "50", "--json", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the client");
    std::thread::sleep(Duration::from_millis(1500));
    server.0.kill().expect("SIGKILL the server we started");
    server.0.wait().unwrap();
    let client = client.wait_with_output().unwrap();
    assert_eq!(client.status.code(), Some(0), "the measurement completed (its loss is in the result): {}", String::from_utf8_lossy(&client.stderr));
    let runs: serde_json::Value = serde_json::from_slice(&client.stdout).expect("client --json output");
    let run = &runs[0];
    let lost = run["loss"]["lost"].as_u64().unwrap();
    let answered = run["latency"]["count"].as_u64().unwrap();
    assert!(lost > 500 && answered > 500, "lost {lost}, answered {answered}");
    assert_eq!(lost + answered, 3000, "every round accounted for");
    // The records file keeps all 3000 rounds.
    let dir = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
    let csv = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|x| x == "csv")).expect("a records CSV");
    let rows = std::fs::read_to_string(&csv).unwrap().lines().filter(|l| !l.starts_with('#') && !l.starts_with("seq")).count();
    assert_eq!(rows, 3000, "{}", csv.display());
    let _ = std::fs::remove_dir_all(&out);
}
