//! Prometheus metrics of running endpoints: `detpath echo --metrics ADDR`
//! and `detpath bench server --metrics ADDR` serve `GET /metrics` with each
//! endpoint's counters (`detpath_endpoint_*_total`) and what it obtained
//! (`detpath_endpoint_info{datapath,iface,queue,xdp_mode,zero_copy,...}`),
//! in OpenMetrics text made by prometheus-client.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let metrics = detpath_metrics::Metrics::start(Some("127.0.0.1:9460".parse()?), None)?; // before entering a netns: scraped from here
//! let mut ep = metrics.wrap(detpath::open("udp://127.0.0.1:7000")?);
//! // ... use `ep` as before; scrapes are answered between its calls.
//! # Ok(()) }
//! ```
//!
//! The endpoint keeps its one polling thread: the metrics thread asks for a
//! snapshot and the polling thread answers between calls ([`watch`]), so
//! serving metrics adds one relaxed atomic load per call.
//!
//! The listener ([`http`]) is hyper with limits (header timeout, no request
//! body, bounded connections, cross-origin requests refused): no scraper or
//! stray client can end or stall the command it serves. The command-line
//! flags (`--metrics`, `--metrics-token`, `--metrics-token-file`) live in the
//! CLI crate.

#![warn(missing_docs)]

pub mod encode;
pub mod http;
pub mod watch;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use watch::{Watch, WatchedEndpoint};

/// How long a scrape waits for the polling thread to answer (its receive
/// timeouts are shorter: 100 ms in `detpath echo`, 10 ms in `bench server`).
pub const SCRAPE_WAIT: Duration = Duration::from_millis(250);

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

/// The metrics of a command: endpoints are added with [`Metrics::wrap`].
pub struct Metrics {
    watches: Arc<Mutex<Vec<Arc<Watch>>>>,
    listener: Option<http::Listener>,
}

impl Metrics {
    /// Starts the listener on `addr` when given (otherwise a no-op
    /// [`Metrics`]); beyond loopback a token is required.
    pub fn start(addr: Option<SocketAddr>, token: Option<http::Token>) -> Result<Metrics, Error> {
        let Some(addr) = addr else {
            return Ok(Metrics { watches: Arc::default(), listener: None });
        };
        let watches: Arc<Mutex<Vec<Arc<Watch>>>> = Arc::default();
        let w = watches.clone();
        let listener = http::Listener::start(addr, token, move || {
            let list: Vec<Arc<Watch>> = w.lock().map(|l| l.clone()).unwrap_or_default();
            let readings: Vec<_> = list.iter().map(|w| (w.as_ref(), w.read(SCRAPE_WAIT))).collect();
            encode::render(&readings)
        })?;
        eprintln!("metrics on http://{}/metrics", listener.addr());
        Ok(Metrics { watches, listener: Some(listener) })
    }

    /// Returns `ep` watched (when metrics are served) or unchanged.
    pub fn wrap(&self, ep: Box<dyn detpath::Endpoint>) -> Box<dyn detpath::Endpoint> {
        if self.listener.is_none() {
            return ep;
        }
        let (watched, watch) = WatchedEndpoint::new(ep);
        if let Ok(mut l) = self.watches.lock() {
            l.push(watch);
        }
        Box::new(watched)
    }

    /// Where metrics are served, if they are.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.listener.as_ref().map(|l| l.addr())
    }
}
