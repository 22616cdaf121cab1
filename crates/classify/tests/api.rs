//! The northbound API over HTTP against a daemon attached to a veth in a
//! namespace: every bad input gets a 4xx that says what is wrong and leaves
//! nothing half-installed; the token; a restart keeps the rules. Needs root.
mod common;

use common::*;
use detpath_classify::client::request;
use detpath_classify::frames::{build, Layer};
use detpath_classify::server::ServeConfig;
use detpath_sys::packet::PacketSocket;
use std::path::PathBuf;

fn intent(teid: u32, action: &str) -> String {
    format!(r#"{{"Resources": [{{"encapsulationID1": "{teid:08X}", "encapsulationType1": "gtp"}}], "Action": {{"actionType": "INSERT", {action}}}}}"#)
}

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
    cfg.listen = "127.0.0.1:0".parse().unwrap();
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
    let dir = TempDir(std::env::temp_dir().join(format!("{}-state", ns.prefix)));
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

    // A state file that cannot be read is an error that names it.
    std::fs::write(&state, b"{ not json").unwrap();
    let err = Daemon::start(config(&e, &ee, state.clone(), 4)).err().expect("refused").to_string();
    assert!(err.contains("classify.json"), "{err}");
    assert!(!has_xdp(&e, &ee), "a daemon that failed to start leaves nothing attached");
    remove_and_check(ns);
}

#[test]
fn token_and_listen_address() {
    let mut ns = Namespaces::new();
    let (_g, e, _ge, ee) = setup(&mut ns);
    let dir = TempDir(std::env::temp_dir().join(format!("{}-state", ns.prefix)));
    let mut cfg = config(&e, &ee, dir.0.join("s.json"), 16);
    cfg.listen = "0.0.0.0:0".parse().unwrap();
    let err = Daemon::start(cfg.clone()).err().expect("no token, not loopback").to_string();
    assert!(err.contains("--token"), "{err}");
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.token = Some("s3cret".into());
    let d = Daemon::start(cfg).unwrap();
    let (st, v) = request(d.addr, None, "GET", "/v1/intents", None).unwrap();
    assert_eq!((st, v["error"]["code"].as_str()), (401, Some("unauthorized")));
    assert_eq!(request(d.addr, Some("wrong"), "GET", "/v1/intents", None).unwrap().0, 401);
    assert_eq!(request(d.addr, Some("s3cret"), "GET", "/v1/intents", None).unwrap().0, 200);
    d.stop();
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
    let dir = TempDir(std::env::temp_dir().join(format!("{}-state", ns.prefix)));
    let err = Daemon::start(config(&e, &ee, dir.0.join("s.json"), 16)).err().expect("EBUSY").to_string();
    // The one XDP layer (detpath-sys) names the program that holds the interface and how to remove it.
    assert!(err.contains("already has XDP program id") && err.contains("xdp off"), "{err}");
    drop(other);
    let err = Daemon::start(config(&e, "nosuchif0", dir.0.join("t.json"), 16)).err().expect("no interface").to_string();
    assert!(err.contains("no network interface `nosuchif0`"), "{err}");
    remove_and_check(ns);
}
