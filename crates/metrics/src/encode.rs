//! Endpoint readings as OpenMetrics text (prometheus-client's encoder).
//!
//! ```text
//! detpath_endpoint_info{local="10.77.0.2:7000",datapath="afxdp",iface="dpb",queue="0",xdp_mode="native",zero_copy="false",need_wakeup="true",busy_poll="true",summary="..."} 1
//! detpath_endpoint_rx_packets_total{local="10.77.0.2:7000",datapath="afxdp"} 1234
//! detpath_endpoint_max_payload_bytes{...} 1472
//! detpath_endpoint_counters_age_seconds{...} 0.003
//! detpath_endpoint_open{...} 1
//! ```

use crate::http::ConnCounts;
use crate::watch::{Reading, Watch};
use detpath::Counters;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

type Labels = Vec<(String, String)>;

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn key(w: &Watch) -> Labels {
    vec![("local".into(), w.local.to_string()), ("datapath".into(), w.caps.datapath.to_string())]
}

fn info_labels(w: &Watch) -> Labels {
    let c = &w.caps;
    let mut l = key(w);
    l.extend([
        ("iface".into(), opt(c.iface.as_deref())),
        ("queue".into(), opt(c.queue)),
        ("xdp_mode".into(), opt(c.xdp_mode.map(|m| m.as_str()))),
        ("zero_copy".into(), opt(c.zero_copy)),
        ("need_wakeup".into(), opt(c.need_wakeup)),
        ("busy_poll".into(), c.busy_poll.to_string()),
        ("summary".into(), c.summary()),
    ]);
    l
}

/// Registers what the HTTP listener's connection limit did
/// (`<prefix>_http_connections_refused_total`, `..._evicted_total`): a
/// flood of half-open connections shows here, not as a dead listener.
pub fn register_conn_counts(reg: &mut Registry, prefix: &str, c: &ConnCounts) {
    let refused = Counter::<u64>::default();
    refused.inc_by(c.refused());
    reg.register(format!("{prefix}_http_connections_refused"), "Connections closed at once: every slot was serving a request", refused);
    let evicted = Counter::<u64>::default();
    evicted.inc_by(c.evicted());
    reg.register(format!("{prefix}_http_connections_evicted"), "Connections closed to make room: no complete request head yet", evicted);
}

/// The text of one scrape over every watched endpoint, with the listener's
/// connection counts and a pub-sub node's readers and writers (none when
/// the command is no pub-sub node).
pub(crate) fn render_with(readings: &[(&Watch, Reading)], conns: &ConnCounts, node: &crate::pubsub::NodeFigures) -> String {
    let mut reg = Registry::default();
    if !node.readers.is_empty() {
        crate::pubsub::register(&mut reg, &node.readers);
    }
    if !node.writers.is_empty() {
        crate::pubsub::register_writers(&mut reg, &node.writers);
    }
    register_conn_counts(&mut reg, "detpath_metrics", conns);
    // An info metric as a gauge family at 1 (one series per endpoint; an
    // OpenMetrics Info is one series per family).
    let info = Family::<Labels, Gauge>::default();
    for (w, _) in readings {
        info.get_or_create(&info_labels(w)).set(1);
    }
    reg.register("detpath_endpoint_info", "What the endpoint obtained (datapath, XDP mode, copy or zero-copy, queue)", info);
    // One family per entry of detpath's counters table.
    for (i, f) in Counters::FIELDS.iter().enumerate() {
        let fam = Family::<Labels, Counter>::default();
        for (w, r) in readings {
            fam.get_or_create(&key(w)).inc_by(r.counters[i]);
        }
        reg.register(format!("detpath_endpoint_{}", f.name), f.help, fam);
    }
    let payload = Family::<Labels, Gauge>::default();
    let batch = Family::<Labels, Gauge>::default();
    let age = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    let open = Family::<Labels, Gauge>::default();
    for (w, r) in readings {
        payload.get_or_create(&key(w)).set(w.caps.max_payload as i64);
        batch.get_or_create(&key(w)).set(w.caps.max_batch as i64);
        age.get_or_create(&key(w)).set(r.age.as_secs_f64());
        open.get_or_create(&key(w)).set(i64::from(!r.closed));
    }
    reg.register("detpath_endpoint_max_payload_bytes", "Largest payload one datagram can carry", payload);
    reg.register("detpath_endpoint_max_batch", "Largest batch one call moves", batch);
    reg.register("detpath_endpoint_counters_age_seconds", "Age of the counters (the polling thread answers between its calls)", age);
    reg.register("detpath_endpoint_open", "1 while the endpoint is open, 0 once closed (its counters are final)", open);
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut out, &reg);
    out
}
