//! Prometheus metrics of running endpoints: `detpath echo --metrics ADDR`
//! and `detpath bench server --metrics ADDR` serve `GET /metrics` with each
//! endpoint's counters (`detpath_endpoint_*_total`) and what it obtained
//! (`detpath_endpoint_info{datapath,iface,queue,xdp_mode,zero_copy,...}`),
//! in OpenMetrics text made by prometheus-client.
//!
//! An endpoint on loopback, watched, and one scrape of it (runs as a doc test):
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use detpath::RecvMode;
//! use std::time::Duration;
//! let metrics = detpath_metrics::Metrics::start(Some("127.0.0.1:0".parse()?), None)?; // before entering a netns: scraped from here
//! let spec: detpath::EndpointSpec = "udp://127.0.0.1:0".parse()?;
//! let mut ep = detpath::open_spec(&spec.with_layer(metrics.layer()))?;
//! let to = ep.local_addr();
//! std::thread::spawn(move || {
//!     // The endpoint's own thread: scrapes are answered between its calls.
//!     let mut buf = [0u8; 64];
//!     loop {
//!         let _ = ep.recv(&mut buf, RecvMode::Blocking { timeout: Some(Duration::from_millis(10)) });
//!     }
//! });
//! std::net::UdpSocket::bind("127.0.0.1:0")?.send_to(b"hello", to)?;
//! let received = |body: &str| {
//!     let line = body.lines().find(|l| l.starts_with("detpath_endpoint_rx_packets_total") && l.contains(&to.to_string()));
//!     line.and_then(|l| l.rsplit(' ').next()).map(str::to_string)
//! };
//! for _ in 0..500 {
//!     let page = detpath_metrics::http::get(metrics.addr().unwrap(), "/metrics", None)?;
//!     if received(&page.body).as_deref() == Some("1") {
//!         return Ok(()); // the scrape counted the datagram
//!     }
//!     std::thread::sleep(Duration::from_millis(10));
//! }
//! panic!("the datagram never showed on /metrics");
//! # Ok(()) }
//! ```
//!
//! The same from spec text alone, in any language that opens specs through
//! `detpath-open`: `udp://127.0.0.1:7000?metrics=127.0.0.1:9460` ([`spec_key`]).
//!
//! The endpoint keeps its one polling thread: the metrics thread asks for a
//! snapshot and the polling thread answers between calls (the crate's
//! `watch` module), so serving metrics adds one relaxed atomic load per call.
//!
//! The listener ([`http`]) is hyper with limits (header timeout, no request
//! body, bounded connections, cross-origin requests refused): no scraper or
//! stray client can end or stall the command it serves. The command-line
//! flags (`--metrics`, `--metrics-token`, `--metrics-token-file`) live in the
//! CLI crate; the spec key `metrics=ADDR` ([`spec_key`], registered in
//! `detpath-open`) serves an endpoint named by its spec text alone.

#![warn(missing_docs)]

pub mod encode;
pub mod http;
pub mod pubsub;
pub mod spec_key;
pub(crate) mod watch;

use detpath::layer::{Layer, LayerKeys, LayerUse, Prepared};
use detpath::{Endpoint, FrameEndpoint};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use watch::Watch;

/// How long a scrape waits for the polling thread to answer (its receive
/// timeouts are shorter: 100 ms in `detpath echo`, 10 ms in `bench server`).
pub(crate) const SCRAPE_WAIT: Duration = Duration::from_millis(250);

/// Why metrics could not be served.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "refusing to serve metrics on {0} (not a loopback address) without a token: pass --metrics-token SECRET (scrapers send `Authorization: Bearer SECRET`)"
    )]
    /// A non-loopback address without a token (the address).
    NeedToken(String),
    /// The listening socket could not be made.
    #[error("cannot serve metrics on {addr}: {why}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// Why.
        why: String,
    },
    /// The token file is unusable.
    #[error(transparent)]
    Token(#[from] http::TokenError),
}

/// The metrics of a command: endpoints are added by opening them with
/// [`Metrics::layer`] in their spec (a layer of detpath's open pipeline).
pub struct Metrics {
    watches: Arc<Mutex<Vec<Arc<Watch>>>>,
    sources: Arc<Mutex<Vec<pubsub::Source>>>,
    listener: Option<http::Listener>,
}

impl Metrics {
    /// Starts the listener on `addr` when given (otherwise a no-op
    /// [`Metrics`]); beyond loopback a token is required.
    pub fn start(addr: Option<SocketAddr>, token: Option<http::Token>) -> Result<Metrics, Error> {
        let Some(addr) = addr else {
            return Ok(Metrics { watches: Arc::default(), sources: Arc::default(), listener: None });
        };
        let watches: Arc<Mutex<Vec<Arc<Watch>>>> = Arc::default();
        let sources: Arc<Mutex<Vec<pubsub::Source>>> = Arc::default();
        let (w, s) = (watches.clone(), sources.clone());
        let listener = http::Listener::start(addr, token, move |conns: &http::ConnCounts| {
            let list: Vec<Arc<Watch>> = w.lock().map(|l| l.clone()).unwrap_or_default();
            let readings: Vec<_> = list.iter().map(|w| (w.as_ref(), w.read(SCRAPE_WAIT))).collect();
            let sources: Vec<pubsub::Source> = s.lock().map(|l| l.clone()).unwrap_or_default();
            let mut node = pubsub::NodeFigures::default();
            for f in &sources {
                let n = f();
                node.readers.extend(n.readers);
                node.writers.extend(n.writers);
            }
            encode::render_with(&readings, conns, &node)
        })?;
        eprintln!("metrics on http://{}/metrics", listener.addr());
        Ok(Metrics { watches, sources, listener: Some(listener) })
    }

    /// Adds a pub-sub node's readers and writers to what a scrape shows
    /// ([`pubsub::ReaderFigures`], [`pubsub::WriterFigures`]); a no-op when
    /// metrics are not served.
    pub fn add_pubsub_source(&self, source: pubsub::Source) {
        if self.listener.is_some() {
            if let Ok(mut l) = self.sources.lock() {
                l.push(source);
            }
        }
    }

    /// The metrics layer: an endpoint opened with it in its spec
    /// (`spec.with_layer(metrics.layer())`) is watched when metrics are
    /// served, and left as it is otherwise.
    pub fn layer(&self) -> LayerUse {
        LayerUse::shared(Arc::new(MetricsLayer { watches: self.watches.clone(), serving: self.listener.is_some() }))
    }

    /// Where metrics are served, if they are.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.listener.as_ref().map(|l| l.addr())
    }
}

/// The metrics layer ([`Metrics::layer`]): no spec keys; a program adds it.
struct MetricsLayer {
    watches: Arc<Mutex<Vec<Arc<Watch>>>>,
    serving: bool,
}

impl Layer for MetricsLayer {
    fn name(&self) -> &'static str {
        "metrics"
    }
    fn summary(&self) -> &'static str {
        "the endpoint's counters served as Prometheus metrics (added by `--metrics`)"
    }
    fn keys(&self) -> &'static [&'static str] {
        &[]
    }
    fn prepare(&self, _: &LayerKeys, _: &str) -> detpath::Result<Box<dyn Prepared>> {
        Ok(Box::new(MetricsLayer { watches: self.watches.clone(), serving: self.serving }))
    }
}

impl Prepared for MetricsLayer {
    fn wrap(self: Box<Self>, ep: Box<dyn Endpoint>) -> detpath::Result<Box<dyn Endpoint>> {
        if !self.serving {
            return Ok(ep);
        }
        let (watched, watch) = watch::watched(ep);
        if let Ok(mut l) = self.watches.lock() {
            l.push(watch);
        }
        Ok(Box::new(watched))
    }
    fn wrap_frames(self: Box<Self>, ep: Box<dyn FrameEndpoint>) -> detpath::Result<Box<dyn FrameEndpoint>> {
        if !self.serving {
            return Ok(ep);
        }
        Err(detpath::layer::unsupported("metrics", "frame endpoints"))
    }
}
