//! /metrics scraped over HTTP while an endpoint is busy in its own thread:
//! counters match the traffic, capability labels match `capabilities()`,
//! the token rule holds; parsed with a Prometheus text parser. The afxdp
//! case runs in the testbed (root), the listener staying in the host namespace.

use detpath::testbed::{Testbed, TestbedConfig};
use detpath::{Endpoint, RecvMode};
use detpath_metrics::http::Token;
use detpath_metrics::Metrics;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One HTTP GET: status, content type, body.
fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, String, String) {
    let r = detpath_metrics::http::get(addr, path, token).unwrap();
    (r.status, r.content_type, r.body)
}

fn parse(body: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("Prometheus text format")
}

fn value(scrape: &prometheus_parse::Scrape, metric: &str, local: &str) -> f64 {
    let s = scrape
        .samples
        .iter()
        .find(|s| s.metric == metric && s.labels.get("local") == Some(local))
        .unwrap_or_else(|| panic!("no {metric}{{local={local}}} in the scrape"));
    match s.value {
        prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
        ref other => panic!("{metric}: unexpected {other:?}"),
    }
}

/// Echoes on `ep` in a thread until `stop`; returns the thread.
fn echo(mut ep: Box<dyn Endpoint>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            if let Ok(Some(rx)) = ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(20)) }) {
                ep.send_to(&buf[..rx.len], rx.peer).unwrap();
            }
        }
    })
}

fn exchange(client: &mut dyn Endpoint, server: SocketAddrV4, n: usize, size: usize) {
    let mut back = [0u8; 2048];
    for i in 0..n {
        client.send_to(&vec![i as u8; size], server).unwrap();
        let rx = client.recv(&mut back, RecvMode::BusyPoll { timeout: Some(Duration::from_secs(2)) }).unwrap().expect("echo");
        assert_eq!(rx.len, size);
    }
}

#[test]
fn loopback_scrape_counts_and_labels() {
    let metrics = Metrics::start(Some("127.0.0.1:0".parse().unwrap()), None).unwrap();
    let addr = metrics.addr().unwrap();
    let spec: detpath::EndpointSpec = "udp://127.0.0.1:0".parse().unwrap();
    let ep = detpath::open_spec(&spec.with_layer(metrics.layer())).unwrap();
    let server = ep.local_addr();
    let local = server.to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let t = echo(ep, stop.clone());
    let mut client = detpath_open::open("udp://127.0.0.1:0").unwrap();

    exchange(client.as_mut(), server, 25, 100);
    let (status, ctype, body) = get(addr, "/metrics", None);
    assert_eq!(status, 200, "{body}");
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    let s = parse(&body);
    assert_eq!(value(&s, "detpath_endpoint_rx_packets_total", &local), 25.0, "{body}");
    assert_eq!(value(&s, "detpath_endpoint_tx_bytes_total", &local), 2500.0);
    assert_eq!(value(&s, "detpath_endpoint_open", &local), 1.0);
    assert!(value(&s, "detpath_endpoint_counters_age_seconds", &local) < 0.25);
    let info = s.samples.iter().find(|x| x.metric == "detpath_endpoint_info").expect("info");
    assert_eq!(info.labels.get("datapath"), Some("udp"));
    assert_eq!(info.labels.get("busy_poll"), Some("true"));

    // More traffic shows on the next scrape: the counters are live, not cached.
    exchange(client.as_mut(), server, 5, 10);
    let s = parse(&get(addr, "/metrics", None).2);
    assert_eq!(value(&s, "detpath_endpoint_rx_packets_total", &local), 30.0);
    assert_eq!(value(&s, "detpath_endpoint_rx_bytes_total", &local), 2550.0);

    assert_eq!(get(addr, "/other", None).0, 404);
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
    // Closed: the final counters stay, marked closed.
    let s = parse(&get(addr, "/metrics", None).2);
    assert_eq!(value(&s, "detpath_endpoint_open", &local), 0.0);
    assert_eq!(value(&s, "detpath_endpoint_tx_packets_total", &local), 30.0);
}

/// A free TCP port on loopback (bound, then released for the listener).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `metrics=ADDR` in the spec text alone serves the endpoint (the C and
/// Python bindings open specs this way); a second endpoint naming the same
/// address joins the same listener; bad values are refused at open with
/// the key named, and beyond loopback a token is required.
#[test]
fn the_metrics_key_serves_endpoints_from_their_spec() {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let spec = format!("udp://127.0.0.1:0?metrics={addr}");
    let (a, b) = (detpath_open::open(&spec).unwrap(), detpath_open::open(&spec).unwrap());
    let (sa, sb) = (a.local_addr(), b.local_addr());
    let stop = Arc::new(AtomicBool::new(false));
    let threads = [echo(a, stop.clone()), echo(b, stop.clone())];
    let mut client = detpath_open::open("udp://127.0.0.1:0").unwrap();
    exchange(client.as_mut(), sa, 7, 100);
    exchange(client.as_mut(), sb, 3, 10);
    let (status, _, body) = get(addr, "/metrics", None);
    assert_eq!(status, 200, "{body}");
    let s = parse(&body);
    assert_eq!(value(&s, "detpath_endpoint_rx_packets_total", &sa.to_string()), 7.0, "{body}");
    assert_eq!(value(&s, "detpath_endpoint_rx_bytes_total", &sb.to_string()), 30.0, "{body}");
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }

    let e = detpath_open::open("udp://127.0.0.1:0?metrics=nowhere").err().expect("refused").to_string();
    assert!(e.contains("`metrics` takes ADDR:PORT"), "{e}");
    let e = detpath_open::open("udp://127.0.0.1:0?metrics=0.0.0.0:0").err().expect("refused").to_string();
    assert!(e.contains("without a token"), "{e}");
    let e = detpath_open::open("udp://127.0.0.1:0?metrics=0.0.0.0:0&metrics_token_file=/nonexistent/token").err().expect("refused").to_string();
    assert!(e.contains("/nonexistent/token"), "{e}");
}

/// The connection limit's work shows on /metrics: more half-open
/// connections than slots (64) are evicted, counted, and a scrape still
/// gets its answer.
#[test]
fn half_open_connections_are_counted_as_evicted() {
    use std::io::Write;
    let metrics = Metrics::start(Some("127.0.0.1:0".parse().unwrap()), None).unwrap();
    let addr = metrics.addr().unwrap();
    let held: Vec<std::net::TcpStream> = (0..80)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
            s
        })
        .collect();
    let (status, _, body) = get(addr, "/metrics", None);
    assert_eq!(status, 200, "{body}");
    let s = parse(&body);
    let count = |metric: &str| {
        s.samples
            .iter()
            .find(|x| x.metric == metric)
            .map(|x| match x.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                ref other => panic!("{metric}: unexpected {other:?}"),
            })
            .unwrap_or_else(|| panic!("no {metric} in:\n{body}"))
    };
    // 80 half-open + the scrape on 64 slots: at least 17 evicted.
    assert!(count("detpath_metrics_http_connections_evicted_total") >= 17.0, "{body}");
    assert_eq!(count("detpath_metrics_http_connections_refused_total"), 0.0, "{body}");
    drop(held);
}

#[test]
fn token_rule() {
    let err = Metrics::start(Some("0.0.0.0:0".parse().unwrap()), None).err().expect("refused");
    assert!(err.to_string().contains("--metrics-token"), "{err}");
    let m = Metrics::start(Some("127.0.0.1:0".parse().unwrap()), Some(Token::new("s3cret", "test").unwrap())).unwrap();
    let addr = m.addr().unwrap();
    let (status, _, body) = get(addr, "/metrics", None);
    assert_eq!(status, 401);
    assert!(body.contains("Bearer"));
    assert_eq!(get(addr, "/metrics", Some("wrong")).0, 401);
    assert_eq!(get(addr, "/metrics", Some("s3cret")).0, 200);
    // Beyond loopback with a token: allowed.
    let wide = Metrics::start(Some("0.0.0.0:0".parse().unwrap()), Some(Token::new("t", "test").unwrap())).unwrap();
    assert_eq!(get(SocketAddr::from(([127, 0, 0, 1], wide.addr().unwrap().port())), "/metrics", Some("t")).0, 200);
    // Without --metrics nothing listens and endpoints pass through unchanged.
    let none = Metrics::start(None, None).unwrap();
    assert!(none.addr().is_none());
}

#[test]
fn afxdp_endpoint_in_a_namespace() {
    let tb = Testbed::up(TestbedConfig::unique("mx")).expect("testbed up (needs root)");
    let metrics = Metrics::start(Some("127.0.0.1:0".parse().unwrap()), None).unwrap();
    let spec: detpath::EndpointSpec = tb.b().uri("afxdp", 7500).parse().unwrap();
    let spec = spec.with_layer(metrics.layer());
    let ep = tb.b().run(|| detpath::open_spec(&spec)).unwrap().expect("afxdp endpoint");
    let caps = ep.capabilities().clone();
    let server = ep.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let t = echo(ep, stop.clone());
    let client_spec = tb.a().uri("udp", 7501);
    let mut client = tb.a().run(|| detpath_open::open(&client_spec)).unwrap().unwrap();
    exchange(client.as_mut(), server, 40, 200);

    let s = parse(&get(metrics.addr().unwrap(), "/metrics", None).2);
    let local = server.to_string();
    assert_eq!(value(&s, "detpath_endpoint_rx_packets_total", &local), 40.0);
    assert_eq!(value(&s, "detpath_endpoint_tx_packets_total", &local), 40.0);
    assert_eq!(value(&s, "detpath_endpoint_max_payload_bytes", &local), caps.max_payload as f64);
    let info = s.samples.iter().find(|x| x.metric == "detpath_endpoint_info").expect("info");
    assert_eq!(info.labels.get("datapath"), Some("afxdp"));
    assert_eq!(info.labels.get("iface"), Some("dpb"));
    assert_eq!(info.labels.get("xdp_mode"), caps.xdp_mode.map(|m| m.as_str()));
    assert_eq!(info.labels.get("zero_copy"), Some("false"));
    assert_eq!(info.labels.get("summary"), Some(caps.summary().as_str()));
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
}
