//! The `--json` the shared vocabulary added: `testbed up|status|down`,
//! `bench server` (its summary when stopped), `tune revert` and `tune hold`
//! (JSON lines: start, release) print JSON a script can read, and their
//! numbers match what happened.
//!
//! Needs root (namespaces, /dev/cpu_dma_latency).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");


fn json(out: &std::process::Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not one JSON document ({e}): {text}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// SIGTERM by PID, then the child's output (killed after 10 s).
fn stop(mut c: std::process::Child) -> std::process::Output {
    let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = c.kill();
    c.wait_with_output().unwrap()
}

struct Down(String);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = Command::new(BIN).args(["testbed", "down", "--testbed", &self.0]).output();
    }
}

#[test]
fn testbed_and_bench_server_report_in_json() {
    if !detpath_testkit::need_root("testbed_and_bench_server_report_in_json", "namespaces") {
        return;
    }
    let tb = format!("detpath-jsn-{}-0", std::process::id());
    let _down = Down(tb.clone());
    let up = Command::new(BIN).args(["testbed", "up", "--json", "--testbed", &tb]).output().unwrap();
    assert!(up.status.success());
    let v = json(&up);
    assert_eq!(v["a"]["netns"], format!("{tb}-a"));
    assert_eq!(v["b"]["addr"], "10.77.0.2/24");
    let st = Command::new(BIN).args(["testbed", "status", "--testbed", &tb, "--json"]).output().unwrap();
    assert_eq!(st.status.code(), Some(0));
    assert_eq!(json(&st)["complete"], true);

    // bench server --json: what it echoed, as one document when stopped.
    let server = Command::new(BIN)
        .args(["bench", "server", "--endpoint", "udp://10.77.0.2:7300", "--netns", &format!("{tb}-b"), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let client = Command::new(BIN)
        .args(["bench", "client", "--endpoint", "udp://10.77.0.1:7301", "--netns", &format!("{tb}-a"), "--peer", "10.77.0.2:7300"])
        .args(["--rounds", "50", "--warmup", "0", "--period", "2ms", "--timeout", "1s", "--json", "--out"])
        .arg(std::env::temp_dir().join(format!("detpath-jsn-{}", std::process::id())))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("detpath-jsn-{}", std::process::id())));
    assert_eq!(client.status.code(), Some(0), "{}", String::from_utf8_lossy(&client.stderr));
    let answered = json(&client)[0]["latency"]["count"].as_u64().unwrap();
    let s = stop(server);
    assert!(s.status.success(), "server: {}", String::from_utf8_lossy(&s.stderr));
    let v = json(&s);
    let echoed = v["echoed"].as_u64().unwrap();
    assert!(echoed >= answered && echoed <= 50, "server echoed {echoed}, the client saw {answered} answers");
    assert_eq!(v["counters"]["tx_packets"].as_u64(), Some(echoed), "{v}");
    assert_eq!(v["cpu"]["threads"][0]["name"], "server", "the server's own CPU record: {v}");

    let down = Command::new(BIN).args(["testbed", "down", "--testbed", &tb, "--json"]).output().unwrap();
    assert_eq!(down.status.code(), Some(0));
    let v = json(&down);
    let removed: Vec<&str> = v["removed"].as_array().unwrap().iter().filter_map(|x| x.as_str()).collect();
    assert!(removed.contains(&format!("{tb}-a").as_str()) && removed.contains(&format!("{tb}-b").as_str()), "{v}");
    assert_eq!(v["not_removed"].as_array().map(Vec::len), Some(0));
}

#[test]
fn tune_revert_and_hold_report_in_json() {
    if !detpath_testkit::need_root("tune_revert_and_hold_report_in_json", "namespaces") {
        return;
    }
    // No journal in a fresh state directory: nothing restored, said as JSON.
    let state = std::env::temp_dir().join(format!("detpath-jsn-state-{}", std::process::id()));
    std::fs::create_dir_all(&state).unwrap();
    let r = Command::new(BIN).args(["tune", "revert", "--json"]).env("DETPATH_STATE_DIR", &state).output().unwrap();
    let _ = std::fs::remove_dir_all(&state);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    let v = json(&r);
    assert_eq!(v["restored"].as_array().map(Vec::len), Some(0), "{v}");

    // hold: JSON lines, one when the hold starts, one when SIGTERM releases it.
    let mut hold = Command::new(BIN).args(["tune", "hold", "--latency", "20us", "--json"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdout = std::io::BufReader::new(hold.stdout.take().unwrap());
    let mut text = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut text).unwrap();
    // The first line is printed just before it waits for the signal.
    std::thread::sleep(Duration::from_millis(500));
    let out = stop(hold);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["holding_us"], 20);
    assert_eq!(lines[1]["released"], true);
    assert_eq!(lines[1]["signal"], 15);
}
