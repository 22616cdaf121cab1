//! The `metrics` spec key: `metrics=ADDR` on any datagram endpoint serves
//! its counters at `http://ADDR/metrics`, so a program in any language
//! (the C and Python bindings open specs through `detpath-open`, which
//! registers this layer) gets Prometheus metrics from its spec text alone:
//!
//! ```text
//! udp://10.77.0.1:7000?metrics=127.0.0.1:9460
//! afxdp://dpa?port=7000&metrics=10.0.0.5:9460&metrics_token_file=/etc/detpath/token
//! ```
//!
//! One listener per address and process: the first endpoint that names an
//! address starts it, later ones join it (one scrape shows them all), and
//! it serves until the process exits. Beyond loopback a token is required,
//! as for `--metrics` (`metrics_token_file=FILE`, read when the listener
//! starts). Port 0 picks a free port; the listener says where on stderr,
//! as `--metrics` does. The listener binds in the network namespace of the
//! thread that opens the first endpoint naming it.

use crate::http::Token;
use crate::Metrics;
use detpath::layer::{Layer, LayerKeys, Prepared};
use detpath::Error;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// The keys of the layer (read by docs/gen_reference.py for the book's spec keys page).
const KEYS: &[&str] = &["metrics", "metrics_token_file"];

/// The layer of the `metrics` key.
pub static LAYER: MetricsKey = MetricsKey;

/// The layer of the `metrics` key (see the module's text).
pub struct MetricsKey;

/// The listeners this process started from spec keys, by the address asked for.
fn served() -> &'static Mutex<Vec<(SocketAddr, Metrics)>> {
    static SERVED: OnceLock<Mutex<Vec<(SocketAddr, Metrics)>>> = OnceLock::new();
    SERVED.get_or_init(Mutex::default)
}

fn addr(keys: &LayerKeys) -> Result<SocketAddr, String> {
    let text = keys.get("metrics").map(String::as_str).unwrap_or_default();
    text.parse().map_err(|_| format!("`metrics` takes ADDR:PORT to serve /metrics on, e.g. metrics=127.0.0.1:9460 (got {text:?})"))
}

impl Layer for MetricsKey {
    fn name(&self) -> &'static str {
        "metrics"
    }
    fn summary(&self) -> &'static str {
        "serves the endpoint's counters as Prometheus metrics at http://ADDR/metrics (metrics=ADDR, metrics_token_file=FILE beyond loopback)"
    }
    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }
    fn check(&self, keys: &LayerKeys) -> Result<(), String> {
        addr(keys)?;
        match keys.get("metrics_token_file") {
            Some(f) if f.is_empty() => Err("`metrics_token_file` takes a file name".into()),
            _ => Ok(()),
        }
    }
    fn prepare(&self, keys: &LayerKeys, spec: &str) -> detpath::Result<Box<dyn Prepared>> {
        let bad = |why: String| Error::BadSpec { spec: spec.to_string(), why };
        let at = addr(keys).map_err(bad)?;
        let mut served = served().lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, m)) = served.iter().find(|(a, _)| *a == at && at.port() != 0) {
            return m.layer().layer.prepare(&LayerKeys::new(), spec);
        }
        let token = match keys.get("metrics_token_file") {
            Some(f) => Some(Token::from_file(Path::new(f)).map_err(|e| bad(e.to_string()))?),
            None => None,
        };
        let m = Metrics::start(Some(at), token).map_err(|e| bad(e.to_string()))?;
        let prepared = m.layer().layer.prepare(&LayerKeys::new(), spec);
        served.push((at, m));
        prepared
    }
}
