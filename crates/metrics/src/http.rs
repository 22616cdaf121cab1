//! The listener: `GET /metrics` on its own thread (tiny_http), with the
//! intent API's rule: a listener beyond loopback needs a bearer token.

use crate::Error;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The content type of OpenMetrics text (what prometheus-client writes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A running listener; stops (and joins its thread) on drop.
pub struct Listener {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

fn text(status: u16, body: String, content_type: &str) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut r = tiny_http::Response::from_data(body.into_bytes()).with_status_code(status);
    if let Ok(h) = tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes()) {
        r.add_header(h);
    }
    r
}

impl Listener {
    /// Binds `addr` in the calling thread's network namespace and serves
    /// `render()` at /metrics until dropped.
    pub fn start(addr: SocketAddr, token: Option<String>, render: impl Fn() -> String + Send + 'static) -> Result<Listener, Error> {
        if !addr.ip().is_loopback() && token.is_none() {
            return Err(Error::NeedToken(addr.to_string()));
        }
        let server = tiny_http::Server::http(addr).map_err(|e| Error::Listen { addr: addr.to_string(), why: e.to_string() })?;
        let bound = server.server_addr().to_ip().unwrap_or(addr);
        let stop = Arc::new(AtomicBool::new(false));
        let stop_t = stop.clone();
        let expected = token.map(|t| format!("Bearer {t}"));
        let thread = std::thread::Builder::new()
            .name("detpath-metrics".into())
            .spawn(move || {
                while !stop_t.load(Ordering::Relaxed) {
                    let req = match server.recv_timeout(Duration::from_millis(100)) {
                        Ok(Some(r)) => r,
                        Ok(None) | Err(_) => continue,
                    };
                    let authorised =
                        expected.as_ref().is_none_or(|want| req.headers().iter().any(|h| h.field.equiv("Authorization") && h.value.as_str() == want.as_str()));
                    let path = req.url().split('?').next().unwrap_or("").to_string();
                    let response = if !authorised {
                        text(401, "send `Authorization: Bearer <token>` with the --metrics-token value\n".into(), "text/plain")
                    } else if path != "/metrics" {
                        text(404, format!("no {path} here: metrics are at /metrics\n"), "text/plain")
                    } else if *req.method() != tiny_http::Method::Get {
                        text(405, "use GET /metrics\n".into(), "text/plain")
                    } else {
                        text(200, render(), CONTENT_TYPE)
                    };
                    let _ = req.respond(response);
                }
            })
            .map_err(|e| Error::Listen { addr: addr.to_string(), why: format!("starting its thread: {e}") })?;
        Ok(Listener { addr: bound, stop, thread: Some(thread) })
    }

    /// The address actually bound (port 0 resolved).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What one GET returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The Content-Type header, lower-cased ("" when absent).
    pub content_type: String,
    pub body: String,
}

/// One blocking `GET path` (HTTP/1.1, connection closed after), with a bearer
/// token when given: a scrape from a script or a test, of this listener or of
/// the classifier daemon's, without a Prometheus server.
pub fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> std::io::Result<Response> {
    use std::io::{Read, Write};
    let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("GET {path} from {addr}: {why}"));
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}\r\n")?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let (head, body) = resp.split_once("\r\n\r\n").ok_or_else(|| bad("no end of headers"))?;
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or_else(|| bad("no status code"))?;
    let content_type = head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-type: ").map(String::from)).unwrap_or_default();
    Ok(Response { status, content_type, body: body.to_string() })
}
