//! The receiving host's classifier steers a topic's traffic by its class:
//! `detpath classify serve` owns the XDP program on the testbed's b
//! interface; three intents on the same UDP port tell the classes apart by
//! the DSCP their senders marked: the control topic by its TRANSPORT_PRIORITY
//! (`"topic": "Control", "priority": 40`: EF by the default map) steered to
//! a CPU, a mid class by a priority range with a map of its own, and best
//! effort by `"dscp": "CS0"`. From namespace a, the control datagrams go
//! through `detpath_open::open` + `Endpoint::send_marked` (EF; on the udp and
//! the afxdp datapath, one after the other), the mid class
//! through a kernel socket with IP_TOS, best effort unmarked; each class's
//! counter in `classify stats` counts exactly its own datagrams, and every
//! datagram still reaches the socket on b. A bad class intent is refused
//! with its reason, and the daemon keeps serving.
//!
//! Needs root (namespaces, XDP).

use detpath::testbed::{Testbed, TestbedConfig};
use detpath::{Mark, RecvMode};
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");
const PORT: u16 = 7410;
/// Datagrams per class.
const N: u64 = 40;

/// A child process we started, stopped by its PID at the end of the test.
use detpath_testkit::ChildProcess as Proc;

/// Files of this test, removed on drop.
struct Scratch(Vec<std::path::PathBuf>);

impl Scratch {
    fn path(&mut self, what: &str) -> String {
        let p = std::env::temp_dir().join(format!("detpath-cdscp-{}-{what}", std::process::id()));
        self.0.push(p.clone());
        p.to_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// `detpath classify <args> --socket api --json`: success, stdout, stderr.
fn classify(api: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN).arg("classify").args(args).args(["--socket", api, "--json"]).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn add(api: &str, scratch: &mut Scratch, name: &str, intent: &str) -> (bool, String) {
    let file = scratch.path(&format!("{name}.json"));
    std::fs::write(&file, intent).unwrap();
    let (ok, out, err) = classify(api, &["add", &file]);
    (ok, format!("{out}{err}"))
}

/// A kernel UDP socket in the calling namespace whose datagrams carry `tos`.
fn tos_socket(from: std::net::Ipv4Addr, tos: u8) -> UdpSocket {
    let s = UdpSocket::bind(SocketAddrV4::new(from, 0)).unwrap();
    let v: libc::c_int = tos as libc::c_int;
    // SAFETY: setsockopt reads an int of the given size from a live local.
    let rc = unsafe {
        libc::setsockopt(s.as_raw_fd(), libc::IPPROTO_IP, libc::IP_TOS, &v as *const libc::c_int as *const libc::c_void, std::mem::size_of::<libc::c_int>() as libc::socklen_t)
    };
    assert_eq!(rc, 0, "IP_TOS: {}", std::io::Error::last_os_error());
    s
}

#[test]
fn the_classifier_steers_each_topic_class_by_its_dscp() {
    if !detpath_testkit::need_root("the_classifier_steers_each_topic_class_by_its_dscp", "namespaces and XDP") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("cdscp")).expect("testbed up");
    let mut scratch = Scratch(Vec::new());
    let api = scratch.path("api.sock");
    let state = scratch.path("state.json");
    let mut daemon = Proc(
        Command::new(BIN)
            .args(["classify", "serve", "--iface", &tb.b().iface, "--netns", &tb.b().netns, "--socket", &api, "--state", &state])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t = Instant::now();
    while !classify(&api, &["ls"]).0 {
        assert!(t.elapsed() < Duration::from_secs(15), "the classify daemon did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Bad class intents: refused with the reason; the daemon serves on.
    for (bad, why) in [
        (r#"{"dscp": "EX"}"#, "not a DSCP"),
        (r#"{"priority": 5, "priority_map": "0=CS0,5=0"}"#, "above 0"),
        (r#"{"topic": "Control"}"#, "cannot read a topic name"),
    ] {
        let intent = format!(r#"{{"Resources": [{bad}], "Action": {{"actionType": "INSERT", "actionName": "PASS"}}}}"#);
        let (ok, out) = add(&api, &mut scratch, "bad", &intent);
        assert!(!ok && out.contains(why), "{bad}: {out}");
    }

    // The three classes, on one port.
    let cpu = *detpath::sys::cpu::online().iter().collect::<Vec<_>>().last().unwrap();
    let intents = [
        (
            "control",
            format!(r#"{{"Resources": [{{"topic": "Control", "priority": 40}}, {{"dstPort": {PORT}, "protocol": "udp"}}], "Action": {{"actionType": "INSERT", "actionName": "STEER_CPU", "cpu": {cpu}, "flow_hash": "control"}}}}"#),
        ),
        (
            "mid",
            format!(r#"{{"Resources": [{{"topic": "Telemetry", "priority": "1..49", "priority_map": "0=CS0,1=AF21,50=EF", "dstPort": {PORT}}}], "Action": {{"actionType": "INSERT", "actionName": "PASS", "flow_hash": "mid"}}}}"#),
        ),
        ("best_effort", format!(r#"{{"Resources": [{{"dscp": "CS0", "dstPort": {PORT}}}], "Action": {{"actionType": "INSERT", "actionName": "PASS", "flow_hash": "best_effort"}}}}"#)),
    ];
    for (name, intent) in &intents {
        let (ok, out) = add(&api, &mut scratch, name, intent);
        assert!(ok, "adding {name}: {out}");
    }
    let (ok, ls, err) = classify(&api, &["ls"]);
    assert!(ok, "{err}");
    let ls: serde_json::Value = serde_json::from_str(&ls).unwrap();
    let listed = |id: &str| ls["intents"].as_array().unwrap().iter().find(|e| e["id"] == id).cloned().unwrap_or_else(|| panic!("{id} not listed: {ls}"));
    assert_eq!(listed("control")["rule"]["matches"]["dscp"], serde_json::json!([46]), "Control's priority 40 is EF by the default map");
    assert_eq!(listed("mid")["rule"]["matches"]["dscp"], serde_json::json!([18]), "1..49 is AF21 by the given map");

    // The receiver: a kernel socket on b takes every class, counted by the tag each datagram starts with.
    let sink = tb.b().run(|| UdpSocket::bind(SocketAddrV4::new(tb.b().addr, PORT))).unwrap().unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let got: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (got, stop) = (got.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            while !stop.load(Ordering::Relaxed) {
                if let Ok(n) = sink.recv(&mut buf) {
                    if let Some(i) = buf[..n].first().and_then(|t| b"cmb".iter().position(|c| c == t)) {
                        got[i].fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        })
    };
    let counts = |got: &[AtomicU64; 3]| got.each_ref().map(|c| c.load(Ordering::Relaxed));

    // The control topic's datagrams from a detpath endpoint marking them EF:
    // the kernel's (udp: IP_TOS) and detpath's own headers (afxdp); the other
    // two classes from kernel sockets, one with IP_TOS, one unmarked.
    let peer = SocketAddrV4::new(tb.b().addr, PORT);
    let a = tb.a().clone();
    for (round, dp) in ["udp", "afxdp"].into_iter().enumerate() {
        let want = [N * (round as u64 + 1); 3];
        let got = got.clone();
        tb.a()
            .run(|| {
                let spec = a.uri(dp, PORT + 1 + round as u16);
                let mut control = detpath_open::open(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
                let mid = tos_socket(a.addr, 18 << 2);
                let best_effort = UdpSocket::bind(SocketAddrV4::new(a.addr, 0)).unwrap();
                for i in 0..N {
                    let msg = i.to_be_bytes();
                    control.send_marked(&[b"c".as_slice(), &msg].concat(), peer, Mark::dscp(46).unwrap()).unwrap();
                    mid.send_to(&[b"m".as_slice(), &msg].concat(), peer).unwrap();
                    best_effort.send_to(&[b"b".as_slice(), &msg].concat(), peer).unwrap();
                }
                // Receiving drives what afxdp parked while the peer's MAC resolved.
                let t = Instant::now();
                let mut buf = [0u8; 2048];
                while counts(&got) != want && t.elapsed() < Duration::from_secs(5) {
                    let _ = control.recv(&mut buf, RecvMode::NonBlocking);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .unwrap();
        assert_eq!(counts(&got), want, "{dp}: every class's datagrams reach the socket on b (control through the cpumap)");
    }
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();

    // Each class's counter counts exactly its own datagrams.
    let (ok, stats, err) = classify(&api, &["stats"]);
    assert!(ok, "{err}");
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    let rule = |id: &str| stats["rules"].as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap_or_else(|| panic!("no {id}: {stats}"));
    assert_eq!(rule("control")["packets"], 2 * N, "{stats}");
    assert_eq!(rule("control")["topic"], "Control");
    assert_eq!(rule("control")["dscp"], serde_json::json!([46]));
    assert_eq!(rule("mid")["packets"], 2 * N, "{stats}");
    assert_eq!(rule("best_effort")["packets"], 2 * N, "{stats}");
    assert_eq!(stats["totals"]["steer"]["packets"], 2 * N, "the control class, and only it, was steered to CPU {cpu}: {stats}");
    // The table names each intent's class.
    let out = Command::new(BIN).args(["classify", "stats", "--socket", &api]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    let line = |id: &str| table.lines().find(|l| l.starts_with(id)).unwrap_or_else(|| panic!("no {id} in {table}")).to_string();
    assert!(line("control").ends_with("Control EF"), "{table}");
    assert!(line("mid").ends_with("Telemetry AF21"), "{table}");
    assert!(line("best_effort").ends_with(" CS0"), "{table}");

    let st = daemon.stop();
    assert!(st.success(), "daemon exit {st}");
    let ifindex = tb.b().run(|| detpath::sys::netdev::ifindex(&tb.b().iface)).unwrap().unwrap();
    assert_eq!(tb.b().run(|| detpath::sys::xdp::query(ifindex)).unwrap().unwrap().any(), None, "XDP program left");
}
