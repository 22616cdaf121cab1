//! `--metrics ADDR [--metrics-token-file FILE]` of `detpath echo`,
//! `detpath bench server` and `detpath pubsub pub|sub|ping|pong` (the flags
//! live here so the metrics crate needs no command-line parser).

use detpath_metrics::http::Token;
use detpath_metrics::Metrics;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The command-line options (flatten into a command's arguments).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9460
    /// (echo, bench server: endpoint counters and capability labels; pubsub:
    /// each reader's samples, lost, budget within/over by cause and the
    /// latency histogram). The listener is made in the namespace the command
    /// starts in (before --netns).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Bearer token scrapers must send (`Authorization: Bearer TOKEN`);
    /// required when ADDR is not a loopback address. Prefer
    /// --metrics-token-file: a command line is visible to every local user.
    #[arg(long, value_name = "TOKEN", requires = "metrics", conflicts_with = "metrics_token_file")]
    pub metrics_token: Option<String>,
    /// File holding the bearer token (a trailing newline is ignored).
    #[arg(long, value_name = "FILE", requires = "metrics")]
    pub metrics_token_file: Option<PathBuf>,
}

impl MetricsArgs {
    /// Starts the listener when `--metrics` was given (otherwise a no-op [`Metrics`]).
    pub fn start(&self) -> Result<Metrics, detpath_metrics::Error> {
        let token = match (&self.metrics_token, &self.metrics_token_file) {
            (_, Some(f)) => Some(Token::from_file(f)?),
            (Some(t), None) => Some(Token::new(t, "--metrics-token")?),
            (None, None) => None,
        };
        Metrics::start(self.metrics, token)
    }
}
