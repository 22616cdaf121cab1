//! `GET /metrics` of the daemon: per-rule and per-action counters after
//! real frames through the attached classifier, the overload state after
//! `PUT /v1/config`, and the bearer token. Parsed with a Prometheus text
//! parser. Needs root (namespaces, XDP).
mod common;

use common::*;
use detpath_classify::frames::{build, Layer};
use detpath_classify::server::ServeConfig;
use detpath_sys::packet::PacketSocket;
use std::net::SocketAddr;
use std::time::Duration;

fn scrape(addr: SocketAddr, token: Option<&str>) -> (u16, String, String) {
    let r = detpath_metrics::http::get(addr, "/metrics", token).unwrap();
    (r.status, r.content_type, r.body)
}

fn value(body: &str, metric: &str, label: Option<(&str, &str)>) -> f64 {
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("Prometheus text format");
    let s = scrape
        .samples
        .iter()
        .find(|s| s.metric == metric && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
        .unwrap_or_else(|| panic!("no {metric} {label:?} in:\n{body}"));
    match s.value {
        prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
        ref other => panic!("{metric}: unexpected {other:?}"),
    }
}

fn gtp_frame(teid: u32) -> Vec<u8> {
    build(
        &[
            Layer::eth([0x02, 0x64, 0x63, 0, 2, 0x0e], [0x02, 0x64, 0x63, 0, 2, 1]),
            Layer::Ip { src: "10.98.0.1".parse().unwrap(), dst: "10.98.0.2".parse().unwrap() },
            Layer::Udp { sport: 2152, dport: 2152 },
            Layer::Gtpu { teid, exts: vec![], msg_type: 0xff },
            Layer::Ip { src: "172.16.0.1".parse().unwrap(), dst: "172.17.0.1".parse().unwrap() },
            Layer::Udp { sport: 1, dport: 2 },
        ],
        b"metrics",
    )
}

fn intent(teid: u32, action: &str, id: &str) -> String {
    format!(
        r#"{{"Resources": [{{"encapsulationID1": "{teid:08X}", "encapsulationType1": "gtp"}}], "Action": {{"actionType": "INSERT", "actionName": "{action}", "flow_hash": "{id}"}}}}"#
    )
}

#[test]
fn metrics_follow_rules_actions_and_overload() {
    let mut ns = Namespaces::new();
    let g = ns.add("g");
    let e = ns.add("e");
    let (ge, ee) = (ns.ifname("ge"), ns.ifname("ee"));
    veth(&g, &ge, "02:64:63:00:02:01", &e, &ee, "02:64:63:00:02:0e");
    let mut cfg = ServeConfig::new(&ee);
    // TCP only (a scraper elsewhere), behind the token.
    cfg.socket = None;
    cfg.listen = Some("127.0.0.1:0".parse().unwrap());
    cfg.netns = Some(e.clone());
    cfg.token = Some(detpath_metrics::http::Token::new("tok", "test").unwrap());
    let d = Daemon::start(cfg).expect("daemon");
    let addr = d.at.tcp.unwrap();
    let post = |body: String| detpath_classify::client::request(&d.tcp(), Some("tok"), "POST", "/v1/intents", Some(body.as_bytes())).unwrap().0;
    assert_eq!(post(intent(0x201, "DROP", "D1")), 201);
    assert_eq!(post(intent(0x202, "PASS", "P1")), 201);

    // The token guards /metrics as it guards the API.
    assert_eq!(scrape(addr, None).0, 401);
    assert_eq!(scrape(addr, Some("wrong")).0, 401);
    let (status, ctype, body) = scrape(addr, Some("tok"));
    assert_eq!(status, 200);
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert_eq!(value(&body, "detpath_classify_rule_packets_total", Some(("id", "D1"))), 0.0);
    assert_eq!(value(&body, "detpath_classify_rules", None), 2.0);
    assert_eq!(value(&body, "detpath_classify_load_flag", None), 0.0);

    in_ns(&g, || {
        let p = PacketSocket::open(&ge).unwrap();
        for _ in 0..4 {
            p.send(&gtp_frame(0x201)).unwrap();
        }
        for _ in 0..2 {
            p.send(&gtp_frame(0x202)).unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(200));
    let put =
        detpath_classify::client::request(&d.tcp(), Some("tok"), "PUT", "/v1/config", Some(br#"{"load_flag": true, "rate_threshold_pps": 5000}"#)).unwrap();
    assert_eq!(put.0, 200, "{}", put.1);

    let body = scrape(addr, Some("tok")).2;
    let frame_len = gtp_frame(0x201).len() as f64;
    assert_eq!(value(&body, "detpath_classify_rule_packets_total", Some(("id", "D1"))), 4.0, "{body}");
    assert_eq!(value(&body, "detpath_classify_rule_bytes_total", Some(("id", "D1"))), 4.0 * frame_len);
    assert_eq!(value(&body, "detpath_classify_rule_packets_total", Some(("id", "P1"))), 2.0);
    assert_eq!(value(&body, "detpath_classify_rule_packets_total", Some(("action", "pass"))), 2.0);
    assert_eq!(value(&body, "detpath_classify_action_packets_total", Some(("action", "drop"))), 4.0);
    assert_eq!(value(&body, "detpath_classify_action_packets_total", Some(("action", "pass_rule"))), 2.0);
    assert_eq!(value(&body, "detpath_classify_load_flag", None), 1.0);
    assert_eq!(value(&body, "detpath_classify_rate_threshold_pps", None), 5000.0);
    assert_eq!(value(&body, "detpath_classify_info", Some(("iface", ee.as_str()))), 1.0);

    // The overload flag makes the classifier count overloaded packets.
    in_ns(&g, || PacketSocket::open(&ge).unwrap().send(&gtp_frame(0x201)).unwrap());
    std::thread::sleep(Duration::from_millis(200));
    let body = scrape(addr, Some("tok")).2;
    assert_eq!(value(&body, "detpath_classify_action_packets_total", Some(("action", "overloaded"))), 1.0, "{body}");
    assert_eq!(value(&body, "detpath_classify_rule_packets_total", Some(("id", "D1"))), 5.0);

    // A class intent's series name its class: the topic and its DSCPs (the frames are unmarked: CS0).
    let class = r#"{"Resources": [{"encapsulationID1": "00000203", "encapsulationType1": "gtp"}, {"topic": "Bulk", "priority": 0}], "Action": {"actionType": "INSERT", "actionName": "PASS", "flow_hash": "C1"}}"#;
    assert_eq!(post(class.to_string()), 201);
    in_ns(&g, || {
        let p = PacketSocket::open(&ge).unwrap();
        for _ in 0..3 {
            p.send(&gtp_frame(0x203)).unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(200));
    let body = scrape(addr, Some("tok")).2;
    assert_eq!(value(&body, "detpath_classify_rule_packets_total", Some(("topic", "Bulk"))), 3.0, "{body}");
    assert_eq!(value(&body, "detpath_classify_rule_packets_total", Some(("dscp", "CS0"))), 3.0, "{body}");
    assert_eq!(value(&body, "detpath_classify_rule_packets_total", Some(("id", "D1"))), 5.0, "other intents keep their series");
    d.stop();
    remove_and_check(ns);
}
