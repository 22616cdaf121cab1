//! The northbound API over HTTP against a daemon attached to a veth in a
//! namespace: every bad input gets a 4xx that says what is wrong and leaves
//! nothing half-installed; the token; a restart keeps the rules. Needs root.
mod common;

use common::*;
use detpath_classify::client::request;
use detpath_classify::frames::{build, Layer};
use detpath_classify::server::ServeConfig;
use detpath_sys::packet::PacketSocket;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;

fn intent(teid: u32, action: &str) -> String {
    format!(r#"{{"Resources": [{{"encapsulationID1": "{teid:08X}", "encapsulationType1": "gtp"}}], "Action": {{"actionType": "INSERT", {action}}}}}"#)
}

fn setup(ns: &mut Namespaces) -> (String, String, String, String) {
    let g = ns.add("g");
    let e = ns.add("e");
    let (ge, ee) = (ns.ifname("ge"), ns.ifname("ee"));
    veth(&g, &ge, "02:64:63:00:01:01", &e, &ee, "02:64:63:00:01:0e");
    (g, e, ge, ee)
}

fn config(e: &str, ee: &str, state: PathBuf, max_rules: u32) -> ServeConfig {
    let mut cfg = ServeConfig::new(ee);
    cfg.socket = Some(state.with_extension("sock"));
    cfg.netns = Some(e.to_string());
    cfg.state = Some(state);
    cfg.max_rules = max_rules;
    cfg
}

fn gtp_frame(teid: u32) -> Vec<u8> {
    build(
        &[
            Layer::eth([0x02, 0x64, 0x63, 0, 1, 0x0e], [0x02, 0x64, 0x63, 0, 1, 1]),
            Layer::Ip { src: "10.98.0.1".parse().unwrap(), dst: "10.98.0.2".parse().unwrap() },
            Layer::Udp { sport: 2152, dport: 2152 },
            Layer::Gtpu { teid, exts: vec![], msg_type: 0xff },
            Layer::Ip { src: "172.16.0.1".parse().unwrap(), dst: "172.17.0.1".parse().unwrap() },
            Layer::Udp { sport: 1, dport: 2 },
        ],
        b"x",
    )
}

#[test]
fn bad_inputs_full_table_and_restart() {
    let mut ns = Namespaces::new();
    let (g, e, ge, ee) = setup(&mut ns);
    let dir = TempDir::new(&ns, "state");
    let state = dir.0.join("classify.json");
    let d = Daemon::start(config(&e, &ee, state.clone(), 4)).expect("daemon");
    let health = |d: &Daemon| d.req("GET", "/v1/health", None).1;

    let bad: Vec<(&str, String, u16, &str)> = vec![
        ("malformed json", r#"{"Resources": ["#.into(), 400, "bad_json"),
        ("not an object", "[1,2]".into(), 400, "bad_json"),
        ("unknown top-level field", r#"{"Resources": [{"dstPort": 1}], "Action": {"actionType": "INSERT", "actionName": "PASS"}, "Colour": 1}"#.into(), 400, "unknown_field"),
        ("unknown resource field", r#"{"Resources": [{"dstPort": 1, "tos": 3}], "Action": {"actionType": "INSERT", "actionName": "PASS"}}"#.into(), 400, "unknown_field"),
        ("unknown action field", r#"{"Resources": [{"dstPort": 1}], "Action": {"actionType": "INSERT", "actionName": "PASS", "speed": 9}}"#.into(), 400, "unknown_field"),
        ("contradictory ports", r#"{"Resources": [{"dstPort": 1}, {"dstPort": "2"}], "Action": {"actionType": "INSERT", "actionName": "PASS"}}"#.into(), 400, "contradictory"),
        ("contradictory families", r#"{"Resources": [{"srcIP": "10.0.0.1", "dstIP": "fd00::1"}], "Action": {"actionType": "INSERT", "actionName": "PASS"}}"#.into(), 400, "contradictory"),
        ("parameter of another action", r#"{"Resources": [{"dstPort": 1}], "Action": {"actionType": "INSERT", "actionName": "DROP", "cpu": 0}}"#.into(), 400, "contradictory"),
        ("vxlan inside gtp", r#"{"Resources": [{"encapsulationType1": "gtp"}, {"encapsulationType2": "vxlan"}], "Action": {"actionType": "INSERT", "actionName": "PASS"}}"#.into(), 400, "impossible"),
        ("matches everything", r#"{"Resources": [{"resourceId": "X"}], "Action": {"actionType": "INSERT", "actionName": "PASS"}}"#.into(), 400, "impossible"),
        ("cpu that does not exist", intent(1, r#""actionName": "STEER_CPU", "cpu": 63"#), 400, "no_such_cpu"),
        ("queue that does not exist", intent(1, r#""actionName": "XSK", "queue": 5"#), 400, "no_such_queue"),
        ("alt node not configured", intent(1, r#""actionName": "FORWARD_WHEN_OVERLOADED", "alt_node": 3"#), 400, "no_such_alt_node"),
        (
            "another interface",
            r#"{"Resources": [{"dstPort": 1}], "Action": {"actionType": "INSERT", "actionName": "PASS"}, "Params": [{"paramName": "interfaceName", "paramValue": "eth9"}]}"#.into(),
            400,
            "wrong_interface",
        ),
        ("too large", format!(r#"{{"pad": "{}"}}"#, "x".repeat(70_000)), 413, "too_large"),
    ];
    for (name, body, status, code) in &bad {
        let (st, v) = d.req("POST", "/v1/intents", Some(body));
        assert_eq!(st, *status, "{name}: {v}");
        assert_eq!(v["error"]["code"], *code, "{name}: {v}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| m.len() > 10), "{name}: a message that says what is wrong: {v}");
        let h = health(&d);
        assert_eq!(h["kernel_rules"], 0, "{name}: nothing installed");
    }

    // Fill the table (4 rules), then one more.
    for t in 0..4 {
        let (st, v) = d.req("POST", "/v1/intents", Some(&intent(0x100 + t, &format!(r#""actionName": "DROP", "flow_hash": "R{t}""#))));
        assert_eq!(st, 201, "{v}");
    }
    let (st, v) = d.req("POST", "/v1/intents", Some(&intent(0x200, r#""actionName": "DROP""#)));
    assert_eq!((st, v["error"]["code"].as_str()), (409, Some("table_full")), "{v}");
    assert_eq!(health(&d)["kernel_rules"], 4);
    let (st, v) = d.req("POST", "/v1/intents", Some(&intent(0x100, r#""actionName": "PASS", "flow_hash": "R0""#)));
    assert_eq!((st, v["error"]["code"].as_str()), (409, Some("duplicate_id")), "{v}");
    // Free one slot: a rule with the same match as an installed one is refused.
    let (st, _) = d.req("DELETE", "/v1/intents/R3", None);
    assert_eq!(st, 200);
    let (st, v) = d.req("POST", "/v1/intents", Some(&intent(0x100, r#""actionName": "PASS""#)));
    assert_eq!((st, v["error"]["code"].as_str()), (409, Some("duplicate")), "{v}");
    assert_eq!(health(&d)["kernel_rules"], 3);
    let (st, _) = d.req("POST", "/v1/intents", Some(&intent(0x103, r#""actionName": "DROP", "flow_hash": "R3""#)));
    assert_eq!(st, 201);

    // Other endpoints.
    assert_eq!(d.req("DELETE", "/v1/intents/NOPE", None).0, 404);
    assert_eq!(d.req("GET", "/v1/nothing", None).0, 404);
    assert_eq!(d.req("PATCH", "/v1/intents", None).0, 405);
    let (st, v) = d.req("PUT", "/v1/config", Some(r#"{"load_flag": true, "turbo": 1}"#));
    assert_eq!((st, v["error"]["code"].as_str()), (400, Some("unknown_field")));
    let (st, v) = d.req("PUT", "/v1/config", Some(r#"{"load_flag": "maybe"}"#));
    assert_eq!(st, 400, "{v}");
    let (st, v) = d.req("PUT", "/v1/config", Some(r#"{"load_flag": true, "alt_nodes": [{"mac": "02:00:00:00:00:09", "ip": "10.98.0.9"}]}"#));
    assert_eq!(st, 200, "{v}");
    let (_, list) = d.req("GET", "/v1/intents", None);
    let ids: Vec<String> = list["intents"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_string()).collect();

    // Restart: the rules and settings come back and are really in the kernel.
    d.stop();
    assert!(!has_xdp(&e, &ee), "stopping detaches");
    let d = Daemon::start(config(&e, &ee, state.clone(), 4)).expect("daemon again");
    let (_, list2) = d.req("GET", "/v1/intents", None);
    let ids2: Vec<String> = list2["intents"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids, ids2);
    assert_eq!(health(&d)["kernel_rules"], 4);
    assert_eq!(d.req("GET", "/v1/config", None).1["load_flag"], true);
    in_ns(&g, || {
        let p = PacketSocket::open(&ge).unwrap();
        for _ in 0..3 {
            p.send(&gtp_frame(0x101)).unwrap();
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (_, st) = d.req("GET", "/v1/stats", None);
    let r1 = st["rules"].as_array().unwrap().iter().find(|r| r["id"] == "R1").unwrap().clone();
    assert_eq!(r1["packets"], 3, "the reinstalled rule classifies: {st}");
    assert_eq!(st["totals"]["drop"]["packets"], 3);
    d.stop();

    // A state file that cannot be used is an error that names it and the fix,
    // and nothing is left attached.
    let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    let with_intents = |f: &dyn Fn(&mut Vec<serde_json::Value>)| {
        let mut v = stored.clone();
        f(v["intents"].as_array_mut().unwrap());
        serde_json::to_vec(&v).unwrap()
    };
    let with_field = |k: &str, x: serde_json::Value| {
        let mut v = stored.clone();
        v[k] = x;
        serde_json::to_vec(&v).unwrap()
    };
    let one = stored["intents"][0].clone();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("not json", b"{ not json".to_vec(), "not a detpath classify state file"),
        ("empty (a power cut before an atomic write)", Vec::new(), "empty"),
        ("duplicate id", with_intents(&|v| v[1]["id"] = v[0]["id"].clone()), "twice"),
        ("bad id", with_intents(&|v| v[0]["id"] = "no spaces allowed".into()), "has the id"),
        ("more intents than --max-rules", with_intents(&|v| v.push(serde_json::json!({"id": "R9", "intent": one["intent"].clone()}))), "--max-rules"),
        ("unknown version", with_field("version", 7.into()), "version 7"),
        ("unknown field", with_field("extra", 1.into()), "unknown field"),
    ];
    for (name, bytes, why) in cases {
        std::fs::write(&state, &bytes).unwrap();
        let err = Daemon::start(config(&e, &ee, state.clone(), 4)).err().unwrap_or_else(|| panic!("{name}: refused")).to_string();
        assert!(err.contains("classify.json") && err.contains("remove or repair"), "{name}: {err}");
        assert!(err.contains(why), "{name}: `{why}` in: {err}");
        assert!(!has_xdp(&e, &ee), "{name}: a daemon that failed to start leaves nothing attached");
    }
    // The daemon writes it atomically: no temporary file is left beside it.
    std::fs::write(&state, serde_json::to_vec(&stored).unwrap()).unwrap();
    let d = Daemon::start(config(&e, &ee, state.clone(), 4)).expect("the repaired file loads");
    assert_eq!(d.req("DELETE", "/v1/intents/R0", None).0, 200);
    d.stop();
    let names: Vec<String> = std::fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, vec!["classify.json".to_string()], "only the state file (the socket is removed on stop)");
    let after: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(after["intents"].as_array().unwrap().len(), 3);
    remove_and_check(ns);
}

/// A start that cannot reinstall a stored intent fails and leaves the state
/// file as it was (nothing in it lost to the failed start); settings given
/// on the command line win field by field, the others keep what `PUT
/// /v1/config` stored; a rate threshold too large to count in is refused.
#[test]
fn a_failed_start_keeps_the_state_file_and_command_line_settings_keep_the_stored_ones() {
    let mut ns = Namespaces::new();
    let (_g, e, _ge, ee) = setup(&mut ns);
    let dir = TempDir::new(&ns, "state");
    let state = dir.0.join("classify.json");
    let d = Daemon::start(config(&e, &ee, state.clone(), 4)).expect("daemon");
    let (st, v) = d.req("PUT", "/v1/config", Some(r#"{"gtpu_port": 2153, "window_us": 5000}"#));
    assert_eq!(st, 200, "{v}");
    for t in 0..3 {
        let (st, v) = d.req("POST", "/v1/intents", Some(&intent(0x300 + t, &format!(r#""actionName": "DROP", "flow_hash": "S{t}""#))));
        assert_eq!(st, 201, "{v}");
    }
    let (st, v) = d.req("PUT", "/v1/config", Some(r#"{"rate_threshold_pps": 1844674407370955162}"#));
    assert_eq!((st, v["error"]["code"].as_str()), (400, Some("bad_value")), "a threshold that would wrap: {v}");
    d.stop();
    let good = std::fs::read(&state).unwrap();

    // S1 given the match of S0: refused at start, after S0 went in.
    let mut v: serde_json::Value = serde_json::from_slice(&good).unwrap();
    v["intents"][1]["intent"] = v["intents"][0]["intent"].clone();
    let bad = serde_json::to_vec_pretty(&v).unwrap();
    std::fs::write(&state, &bad).unwrap();
    let err = Daemon::start(config(&e, &ee, state.clone(), 4)).err().expect("refused").to_string();
    assert!(err.contains("stored intent S1 cannot be reinstalled"), "{err}");
    assert_eq!(std::fs::read(&state).unwrap(), bad, "the failed start left the file as it was: S2 is still in it");
    assert!(!has_xdp(&e, &ee), "nothing left attached");

    std::fs::write(&state, &good).unwrap();
    let mut cfg = config(&e, &ee, state.clone(), 4);
    cfg.settings.insert("load_flag".into(), true.into());
    let d = Daemon::start(cfg).expect("daemon with a command-line setting");
    let (_, c) = d.req("GET", "/v1/config", None);
    assert_eq!(c["load_flag"], true, "the command line's field: {c}");
    assert_eq!((c["gtpu_port"].as_u64(), c["window_us"].as_u64()), (Some(2153), Some(5000)), "the stored fields stay: {c}");
    assert_eq!(d.req("GET", "/v1/health", None).1["kernel_rules"], 3);
    d.stop();
    remove_and_check(ns);
}

/// A raw request over TCP (headers as given): the status and the whole answer.
fn raw(addr: std::net::SocketAddr, head: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, text)
}

#[test]
fn transports_token_host_and_origin() {
    let mut ns = Namespaces::new();
    let (_g, e, _ge, ee) = setup(&mut ns);
    let dir = TempDir::new(&ns, "state");
    let mut cfg = config(&e, &ee, dir.0.join("s.json"), 16);
    // TCP always needs a token, loopback or not; the error names the fix.
    for listen in ["0.0.0.0:0", "127.0.0.1:0"] {
        cfg.listen = Some(listen.parse().unwrap());
        let err = Daemon::start(cfg.clone()).err().expect("TCP without a token").to_string();
        assert!(err.contains("--token-file"), "{err}");
        assert!(!has_xdp(&e, &ee));
    }
    // A token file's trailing newline is ignored.
    let tf = dir.0.join("token");
    std::fs::write(&tf, "s3cret\n").unwrap();
    cfg.token = Some(detpath_metrics::http::Token::from_file(&tf).unwrap());
    cfg.listen = Some("127.0.0.1:0".parse().unwrap());
    let d = Daemon::start(cfg).unwrap();

    // The Unix socket: root only (0600), no token needed.
    let sock = d.at.socket.clone().unwrap();
    let meta = std::fs::metadata(&sock).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.uid(), 0);
    assert_eq!(d.req("GET", "/v1/intents", None).0, 200);

    let tcp = d.tcp();
    let (st, v) = request(&tcp, None, "GET", "/v1/intents", None).unwrap();
    assert_eq!((st, v["error"]["code"].as_str()), (401, Some("unauthorized")));
    assert_eq!(request(&tcp, Some("wrong"), "GET", "/v1/intents", None).unwrap().0, 401);
    assert_eq!(request(&tcp, Some("s3cre"), "GET", "/v1/intents", None).unwrap().0, 401);
    assert_eq!(request(&tcp, Some("s3cret"), "GET", "/v1/intents", None).unwrap().0, 200);
    let addr = d.at.tcp.unwrap();
    let intent = r#"{"Resources": [{"dstPort": 9}], "Action": {"actionType": "INSERT", "actionName": "DROP"}}"#;
    let post = |host: &str, extra: &str| {
        raw(
            addr,
            &format!(
                "POST /v1/intents HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer s3cret\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n{intent}",
                intent.len()
            ),
        )
    };
    // A web page's cross-origin POST (even one that somehow had the token) is refused.
    let (st, body) = post(&addr.to_string(), "Origin: http://evil.example\r\n");
    assert_eq!(st, 403, "{body}");
    assert!(body.contains("cross_origin"), "{body}");
    let (st, body) = post(&addr.to_string(), "Origin: null\r\n");
    assert_eq!(st, 403, "{body}");
    // DNS rebinding: a Host that is neither this address nor localhost.
    let (st, body) = post(&format!("evil.example:{}", addr.port()), "");
    assert_eq!(st, 403, "{body}");
    assert!(body.contains("bad_host"), "{body}");
    assert_eq!(d.req("GET", "/v1/health", None).1["kernel_rules"], 0, "nothing refused was installed");
    // Same origin, localhost name: accepted.
    let (st, body) = post(&format!("localhost:{}", addr.port()), &format!("Origin: http://localhost:{}\r\n", addr.port()));
    assert_eq!(st, 201, "{body}");
    assert_eq!(d.req("GET", "/v1/health", None).1["kernel_rules"], 1);
    d.stop();
    assert!(!sock.exists(), "the socket file is removed on stop");
    remove_and_check(ns);
}

#[test]
fn attach_refuses_an_interface_with_another_program() {
    let mut ns = Namespaces::new();
    let (_g, e, _ge, ee) = setup(&mut ns);
    let other = in_ns(&e, || {
        let c = detpath_classify::Classifier::load(1).unwrap();
        let l = c.attach_helper("cls_pass", &ee, detpath_classify::XdpMode::Native).unwrap();
        (c, l)
    });
    let dir = TempDir::new(&ns, "state");
    let err = Daemon::start(config(&e, &ee, dir.0.join("s.json"), 16)).err().expect("EBUSY").to_string();
    // The one XDP layer (detpath-sys) names the program that holds the interface and how to remove it.
    assert!(err.contains("already has XDP program id") && err.contains("xdp off"), "{err}");
    drop(other);
    let err = Daemon::start(config(&e, "nosuchif0", dir.0.join("t.json"), 16)).err().expect("no interface").to_string();
    assert!(err.contains("no network interface `nosuchif0`"), "{err}");
    remove_and_check(ns);
}
