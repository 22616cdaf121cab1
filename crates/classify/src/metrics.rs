//! `GET /metrics` of `detpath classify serve`: the classifier's statistics
//! in OpenMetrics text (prometheus-client), read from the BPF maps at each
//! scrape. Served by the daemon next to the intent API, behind the same
//! access rules (the Unix socket's mode, or the bearer token on TCP).
//!
//! | metric | labels | what |
//! |--------|--------|------|
//! | `detpath_classify_rule_packets_total`, `_rule_bytes_total`, `_rule_forwarded_total` | `id`, `action` | per installed intent |
//! | `detpath_classify_action_packets_total`, `_action_bytes_total` | `action` (the `/v1/stats` totals: pass_rule, steer, drop, forward, overloaded, ...) | per action |
//! | `detpath_classify_load_flag` | | the user-space overload flag (1 = overloaded) |
//! | `detpath_classify_rate_threshold_pps`, `_saturation_pps` | | the per-CPU overload and saturation rates (0 = off) |
//! | `detpath_classify_forwarded_ratio` | | forwarded / classified packets |
//! | `detpath_classify_rules` | | intents installed |
//! | `detpath_classify_info` | `iface`, `xdp_mode`, `default_action` | 1 |
//! | `detpath_classify_http_connections_refused_total`, `_evicted_total` | | API connections closed at once (every slot serving a request) or to make room (no complete request head yet: half-open) |

use crate::api::Service;
use crate::intent::Action;
use crate::maps;
use detpath_metrics::http::ConnCounts;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

type Labels = Vec<(String, String)>;

fn action_name(a: &Action) -> &'static str {
    match a {
        Action::Pass => "pass",
        Action::SteerCpu { .. } => "steer_cpu",
        Action::Xsk { .. } => "xsk",
        Action::Drop => "drop",
        Action::ForwardWhenOverloaded { .. } => "forward_when_overloaded",
    }
}

fn gauge(reg: &mut Registry, name: &str, help: &str, v: i64) {
    let g = Gauge::<i64>::default();
    g.set(v);
    reg.register(name, help, g);
}

/// The text of one scrape (`conns`: what the API listener's connection
/// limit did).
pub fn render(svc: &Service, conns: &ConnCounts) -> String {
    let mut reg = Registry::default();
    detpath_metrics::encode::register_conn_counts(&mut reg, "detpath_classify", conns);
    let (packets, bytes, forwarded) = (Family::<Labels, Counter>::default(), Family::<Labels, Counter>::default(), Family::<Labels, Counter>::default());
    let slots: Vec<u32> = svc.entries.iter().map(|e| e.installed.slot).collect();
    let (totals, rule_stats) = svc.cls.counts(&slots);
    for (e, s) in svc.entries.iter().zip(rule_stats) {
        // A class intent's series name its class (empty for other intents: one label set for all).
        let m = &e.rule.matches;
        let l = vec![
            ("id".to_string(), e.id.clone()),
            ("action".to_string(), action_name(&e.rule.action).to_string()),
            ("dscp".to_string(), m.dscp.as_deref().map(crate::intent::class::dscp_names).unwrap_or_default()),
            ("topic".to_string(), m.class.as_ref().and_then(|c| c.topic.clone()).unwrap_or_default()),
        ];
        packets.get_or_create(&l).inc_by(s.packets);
        bytes.get_or_create(&l).inc_by(s.bytes);
        forwarded.get_or_create(&l).inc_by(s.forwarded);
    }
    reg.register("detpath_classify_rule_packets", "Packets that matched the intent", packets);
    reg.register("detpath_classify_rule_bytes", "Bytes that matched the intent", bytes);
    reg.register("detpath_classify_rule_forwarded", "Packets of the intent forwarded to an alternative node", forwarded);

    let (t_packets, t_bytes) = (Family::<Labels, Counter>::default(), Family::<Labels, Counter>::default());
    for (name, c) in maps::TOTAL_NAMES.iter().zip(&totals) {
        let l = vec![("action".to_string(), name.to_string())];
        t_packets.get_or_create(&l).inc_by(c.packets);
        t_bytes.get_or_create(&l).inc_by(c.bytes);
    }
    reg.register("detpath_classify_action_packets", "Packets per action taken (as /v1/stats totals)", t_packets);
    reg.register("detpath_classify_action_bytes", "Bytes per action taken (as /v1/stats totals)", t_bytes);

    let st = svc.cls.settings();
    gauge(&mut reg, "detpath_classify_load_flag", "The user-space overload flag: 1 while the host counts as overloaded", i64::from(st.load_flag));
    gauge(&mut reg, "detpath_classify_rate_threshold_pps", "Per-CPU packet rate above which a CPU is overloaded (0 = off)", st.rate_threshold_pps as i64);
    gauge(
        &mut reg,
        "detpath_classify_saturation_pps",
        "Per-CPU packet rate above which even prioritised flows are forwarded (0 = never)",
        st.saturation_pps as i64,
    );
    gauge(&mut reg, "detpath_classify_alt_nodes", "Alternative nodes configured for forwarding", st.alt_nodes.len() as i64);
    gauge(&mut reg, "detpath_classify_rules", "Intents installed", svc.entries.len() as i64);
    let classified: u64 = totals.iter().take(9).map(|c| c.packets).sum();
    let fwd = maps::total_index("forward").and_then(|i| totals.get(i)).map_or(0, |c| c.packets);
    let ratio = Gauge::<f64, AtomicU64>::default();
    ratio.set(if classified == 0 { 0.0 } else { fwd as f64 / classified as f64 });
    reg.register("detpath_classify_forwarded_ratio", "Forwarded packets over classified packets", ratio);
    let info = Family::<Labels, Gauge>::default();
    let default_action = serde_json::to_value(st.default_action).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    info.get_or_create(&vec![
        ("iface".to_string(), svc.iface.clone()),
        ("xdp_mode".to_string(), svc.cls.link().map(|l| l.mode().as_str()).unwrap_or("detached").to_string()),
        ("default_action".to_string(), default_action),
    ])
    .set(1);
    reg.register("detpath_classify_info", "The interface, XDP mode and default action of the classifier", info);
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut out, &reg);
    out
}
