//! The classifier hands a prioritised flow to a detpath AF_XDP endpoint in
//! another process: `detpath classify serve` owns the XDP program on the
//! testbed's b interface, an intent says XSK for UDP port 7400, and
//! `detpath echo 'afxdp://dpb?port=7400&xdp=shared'` joins the classifier's
//! XSKMAP. Traffic from namespace a: port 7400 is echoed by the AF_XDP
//! endpoint, port 7401 still reaches a kernel socket; stopping the endpoint
//! empties the slot; stopping the daemon leaves no XDP program.
//!
//! Needs root (namespaces, XDP, CAP_SYS_ADMIN to open the map by id).

use detpath::testbed::{Testbed, TestbedConfig};
use std::net::{SocketAddrV4, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

/// A child process we started, stopped by its PID at the end of the test.
use detpath_testkit::ChildProcess as Proc;

fn classify(api: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN).arg("classify").args(args).args(["--socket", api, "--json"]).output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// Sends `msg` from namespace a to b:`port` and waits up to 1 s for an answer.
fn round_trip(tb: &Testbed, port: u16, msg: &[u8]) -> Option<Vec<u8>> {
    let b = tb.b().addr;
    let a = tb.a().addr;
    tb.a()
        .run(|| {
            let s = UdpSocket::bind(SocketAddrV4::new(a, 0)).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
            let mut buf = [0u8; 2048];
            for _ in 0..3 {
                s.send_to(msg, SocketAddrV4::new(b, port)).unwrap();
                if let Ok((n, _)) = s.recv_from(&mut buf) {
                    return Some(buf[..n].to_vec());
                }
            }
            None
        })
        .unwrap()
}

#[test]
fn classifier_hands_a_flow_to_an_afxdp_endpoint_in_another_process() {
    let tb = Testbed::up(TestbedConfig::unique("xsk")).expect("testbed up");
    let state = std::env::temp_dir().join(format!("detpath-xsk-{}.json", std::process::id()));
    let api_path = std::env::temp_dir().join(format!("detpath-xsk-{}.sock", std::process::id()));
    let api = api_path.to_str().unwrap();
    let mut daemon = Proc(
        Command::new(BIN)
            .args(["classify", "serve", "--iface", &tb.b().iface, "--netns", &tb.b().netns, "--socket", api, "--state"])
            .arg(&state)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t = Instant::now();
    while !classify(api, &["ls"]).0 {
        assert!(t.elapsed() < Duration::from_secs(15), "the classify daemon did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }
    let intent = r#"{"Resources": [{"dstPort": 7400, "protocol": "udp"}], "Action": {"actionType": "INSERT", "actionName": "XSK", "queue": 0, "flow_hash": "echo7400"}}"#;
    let intent_file = std::env::temp_dir().join(format!("detpath-xsk-intent-{}.json", std::process::id()));
    std::fs::write(&intent_file, intent).unwrap();
    let (ok, out) = classify(api, &["add", intent_file.to_str().unwrap()]);
    assert!(ok, "adding the intent: {out}");

    // Before the endpoint joins, the XSK slot is empty: the flow is passed to
    // the kernel, where nothing listens on 7400.
    assert_eq!(round_trip(&tb, 7400, b"early"), None);

    let spec = format!("afxdp://{}?port=7400&xdp=shared", tb.b().iface);
    let mut echo = Proc(Command::new(BIN).args(["echo", &spec, "--netns", &tb.b().netns]).stdout(Stdio::piped()).spawn().unwrap());
    std::thread::sleep(Duration::from_millis(800));
    assert!(echo.0.try_wait().unwrap().is_none(), "detpath echo exited early");

    // The prioritised flow reaches the AF_XDP endpoint and comes back.
    for i in 0..20u8 {
        let msg = [b'x', i, 7, 4, 0, 0];
        assert_eq!(round_trip(&tb, 7400, &msg).as_deref(), Some(&msg[..]), "datagram {i} to the AF_XDP endpoint");
    }
    // Other traffic still goes to the kernel stack: a kernel socket on 7401 answers.
    let kernel = tb.b().run(|| UdpSocket::bind(SocketAddrV4::new(tb.b().addr, 7401)).unwrap()).unwrap();
    let kthread = std::thread::spawn(move || {
        kernel.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut buf = [0u8; 64];
        let (n, from) = kernel.recv_from(&mut buf).unwrap();
        kernel.send_to(&buf[..n], from).unwrap();
    });
    assert_eq!(round_trip(&tb, 7401, b"kernel").as_deref(), Some(&b"kernel"[..]));
    kthread.join().unwrap();

    let (ok, stats) = classify(api, &["stats"]);
    assert!(ok, "{stats}");
    let v: serde_json::Value =
        serde_json::from_str(stats.lines().take_while(|l| !l.starts_with("detpath")).collect::<Vec<_>>().join("\n").as_str()).unwrap_or_default();
    let xsk = v["totals"]["xsk"]["packets"].as_u64().or_else(|| v["totals"]["xsk"].as_u64());
    assert!(xsk.is_some_and(|n| n >= 20), "classifier xsk total: {stats}");

    // The endpoint stops cleanly; its slot is emptied, the daemon's program stays.
    let st = echo.stop();
    assert!(st.success(), "echo exit {st}");
    let mut out = String::new();
    std::io::Read::read_to_string(echo.0.stdout.as_mut().unwrap(), &mut out).unwrap();
    let echoed: u64 =
        out.split("echoed ").nth(1).and_then(|r| r.split(';').next()).and_then(|n| n.trim().parse().ok()).unwrap_or_else(|| panic!("no echo count in: {out}"));
    assert_eq!(echoed, 20, "the endpoint echoed exactly the prioritised flow: {out}");
    assert_eq!(round_trip(&tb, 7400, b"after"), None, "no socket in the slot any more");

    let st = daemon.stop();
    assert!(st.success(), "daemon exit {st}");
    let ifindex = tb.b().run(|| detpath::sys::netdev::ifindex(&tb.b().iface)).unwrap().unwrap();
    assert_eq!(tb.b().run(|| detpath::sys::xdp::query(ifindex)).unwrap().unwrap().any(), None, "XDP program left");
    let _ = std::fs::remove_file(&state);
    let _ = std::fs::remove_file(&intent_file);
}
