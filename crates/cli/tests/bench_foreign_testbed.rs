//! `detpath bench` leaves alone a testbed it did not create: with a testbed
//! made by `detpath testbed up` and a user's `detpath echo` running in it, a
//! short bench runs in that testbed, says it is using it, and afterwards the
//! testbed is still complete and the echo still answers. A testbed the bench
//! made itself is removed when it ends.
//!
//! Needs root (namespaces). Only the udp datapath, one short run each.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");


fn namespaces() -> String {
    String::from_utf8_lossy(&Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).into_owned()
}

/// Everything this test made, undone on drop (also when an assertion fails):
/// the echo (by its PID), the testbed, the result directory.
struct Cleanup {
    testbeds: Vec<String>,
    echo: Option<Child>,
    out: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(mut c) = self.echo.take() {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        for t in &self.testbeds {
            let _ = Command::new(BIN).args(["testbed", "down", "--testbed", t]).output();
        }
        let _ = std::fs::remove_dir_all(&self.out);
    }
}

/// Sends `text` from side a to the echo on side b and returns what came back.
fn echo_round_trip(testbed: &str, text: &str) -> String {
    let mut nc = Command::new("ip")
        .args(["netns", "exec", &format!("{testbed}-a"), "nc", "-u", "-w1", "10.77.0.2", "7000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("nc");
    {
        use std::io::Write;
        let mut stdin = nc.stdin.take().unwrap();
        writeln!(stdin, "{text}").unwrap();
        // stdin closes here; nc waits -w1 for the reply (as the README's hello block).
    }
    let out = nc.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn bench(testbed: &str, out: &std::path::Path) -> std::process::Output {
    Command::new(BIN)
        .args(["bench", "--datapath", "udp", "--rounds", "300", "--warmup", "20", "--period", "1ms", "--timeout", "200ms", "--json"])
        .args(["--testbed", testbed, "--out"])
        .arg(out)
        .output()
        .expect("detpath bench")
}

#[test]
fn bench_leaves_a_testbed_it_did_not_create_alone() {
    if !detpath_testkit::need_root("bench_leaves_a_testbed_it_did_not_create_alone", "namespaces") {
        return;
    }
    let pid = std::process::id();
    let user_tb = format!("detpath-usr-{pid}-0");
    let own_tb = format!("detpath-own-{pid}-0");
    let out = std::env::temp_dir().join(format!("detpath-foreign-tb-{pid}"));
    let mut guard = Cleanup { testbeds: vec![user_tb.clone(), own_tb.clone()], echo: None, out: out.clone() };

    // The user's testbed and echo.
    let up = Command::new(BIN).args(["testbed", "up", "--testbed", &user_tb]).output().unwrap();
    assert!(up.status.success(), "testbed up: {}", String::from_utf8_lossy(&up.stderr));
    let mut echo = Command::new(BIN)
        .args(["echo", "udp://10.77.0.2:7000", "--blocking", "--netns", &format!("{user_tb}-b")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(echo.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("echo on"), "echo did not start: {first}");
    guard.echo = Some(echo);
    assert!(echo_round_trip(&user_tb, "before").contains("before"), "the echo does not answer before the bench");

    // A short bench in the user's testbed.
    let b = bench(&user_tb, &out);
    let stderr = String::from_utf8_lossy(&b.stderr);
    assert!(b.status.success(), "bench: {:?}\n{stderr}", b.status);
    assert!(stderr.contains("already up (left in place)"), "the bench does not say it used the existing testbed:\n{stderr}");
    let runs: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap_or_else(|e| panic!("bench --json: {e}"));
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "one udp run: {runs}");

    // The testbed is still there, complete, and the echo still runs and answers.
    let st = Command::new(BIN).args(["testbed", "status", "--testbed", &user_tb, "--json"]).output().unwrap();
    assert_eq!(st.status.code(), Some(0), "the user's testbed is gone or broken after the bench: {}", String::from_utf8_lossy(&st.stdout));
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(v["complete"], true);
    let echo = guard.echo.as_mut().unwrap();
    assert!(echo.try_wait().unwrap().is_none(), "the user's echo died with the bench");
    assert!(echo_round_trip(&user_tb, "after").contains("after"), "the echo no longer answers after the bench");

    // A testbed the bench made itself goes when it ends.
    assert!(!namespaces().contains(&own_tb));
    let b = bench(&own_tb, &out);
    assert!(b.status.success(), "bench in its own testbed: {}", String::from_utf8_lossy(&b.stderr));
    let ns = namespaces();
    assert!(!ns.contains(&format!("{own_tb}-a")) && !ns.contains(&format!("{own_tb}-b")), "the bench left its own testbed behind: {ns}");

    drop(guard);
    let ns = namespaces();
    assert!(!ns.contains(&user_tb), "cleanup left {user_tb}: {ns}");
}
